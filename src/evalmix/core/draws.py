"""Summaries of simulation draws (posterior or bootstrap) shared by every engine and inference step."""

from __future__ import annotations

import numpy as np

__all__ = ["hdi"]


def hdi(samples: np.ndarray, prob: float = 0.95) -> np.ndarray:
    """Highest-density intervals of each column of ``samples`` (draws in rows).

    The narrowest interval spanning ``floor(prob * n)`` consecutive order statistics (ArviZ's
    convention).  Returns an array of shape ``(n_columns, 2)``; a 1-d ``samples`` is one column.

    Examples
    --------
    >>> hdi(np.arange(101.0).reshape(-1, 1), 0.9).tolist()
    [[0.0, 90.0]]
    """
    x = np.sort(np.asarray(samples, dtype=float).reshape(len(samples), -1), axis=0)
    n = x.shape[0]
    inc = int(np.floor(prob * n))
    if inc < 1 or inc >= n:
        raise ValueError(f"prob={prob} leaves no interval among {n} draws")
    widths = x[inc:] - x[: n - inc]
    start = np.argmin(widths, axis=0)
    cols = np.arange(x.shape[1])
    return np.column_stack([x[start, cols], x[start + inc, cols]])
