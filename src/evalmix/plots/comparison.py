"""Plots for model comparisons: the critical-difference diagram of a Friedman/Nemenyi analysis."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["critical_difference_plot"]


def _cliques(ranks: np.ndarray, cd: float) -> list[tuple[int, int]]:
    """Maximal runs of consecutive (sorted) models whose rank range is below ``cd``."""
    k = ranks.size
    spans = []
    for i in range(k):
        j = i
        while j + 1 < k and ranks[j + 1] - ranks[i] < cd:
            j += 1
        if j > i and not any(a <= i and j <= b for a, b in spans):
            spans.append((i, j))
    return spans


def critical_difference_plot(result: Any, *, ax: Any = None, title: str | None = None) -> Any:
    """Demšar's critical-difference diagram of a :func:`evalmix.friedman` result.

    Models are placed on the mean-rank axis (rank 1 = best, on the left); a thick bar joins
    models whose mean ranks differ by less than the Nemenyi critical difference (not significantly
    different), and the CD is drawn as a scale bar above the axis.

    Parameters
    ----------
    result : FriedmanResult
        Output of :func:`evalmix.friedman`.
    ax : matplotlib Axes, optional
        Axes to draw on (a new figure otherwise).
    title : str, optional
        Axes title.

    Returns
    -------
    matplotlib Axes

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np, pandas as pd
    >>> from evalmix import friedman
    >>> from evalmix.plots.comparison import critical_difference_plot
    >>> rng = np.random.default_rng(0)
    >>> wide = pd.DataFrame(rng.random((30, 4)) + [0, 0.1, 0.3, 0.6], columns=list("abcd"))
    >>> ax = critical_difference_plot(friedman(wide))
    """
    import matplotlib.pyplot as plt

    ranks = result.mean_ranks.to_numpy(dtype=float)
    names = list(result.mean_ranks.index)
    k = ranks.size
    cd = float(result.critical_difference)
    if ax is None:
        _, ax = plt.subplots(figsize=(max(6.0, 1.2 * k), 1.6 + 0.35 * k))
    lo, hi = 1, k
    ax.set_xlim(lo - 0.3, hi + 0.3)
    n_left = (k + 1) // 2
    ax.set_ylim(-(max(n_left, k - n_left) + 1.5), 2.0)
    ax.hlines(0, lo, hi, color="black", lw=1)
    for r in range(lo, hi + 1):
        ax.vlines(r, 0, 0.15, color="black", lw=1)
        ax.text(r, 0.3, str(r), ha="center", va="bottom", fontsize=9)
    # CD scale bar
    ax.hlines(1.3, lo, lo + cd, color="black", lw=1.5)
    ax.vlines([lo, lo + cd], 1.2, 1.4, color="black", lw=1.5)
    ax.text(lo + cd / 2, 1.5, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=9)
    # model labels: best half to the left, the rest to the right
    for i, (name, r) in enumerate(zip(names, ranks)):
        if i < n_left:
            y, x_text, ha = -(i + 1), lo - 0.25, "right"
        else:
            y, x_text, ha = -(k - i), hi + 0.25, "left"
        ax.plot([r, r, x_text], [0, y, y], color="black", lw=0.8)
        ax.text(x_text, y, f"{name} ({r:.2f})", ha=ha, va="center", fontsize=9)
    # bars joining models that are not significantly different
    for j, (a, b) in enumerate(_cliques(ranks, cd)):
        y = -0.35 - 0.25 * j
        ax.hlines(y, ranks[a] - 0.03, ranks[b] + 0.03, color="tab:red", lw=3.5)
    ax.set_axis_off()
    if title:
        ax.set_title(title)
    return ax
