"""Plot of a release gate: each metric's anytime-valid sequence over the looks, its margin, the stop."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from .style import COLUMN_WIDTH, colour, figure_text, styled

if TYPE_CHECKING:
    from matplotlib.figure import Figure, SubFigure

    from ..studies.gate import GateResult

__all__ = ["gate_plot"]


@styled
def gate_plot(result: GateResult) -> Figure | SubFigure:
    """One panel per metric: the estimate and its anytime-valid interval at each look, the margin
    boundary the interval must clear, and the look where the gate stopped with its verdict.

    Ends of an interval that are still unbounded (a look before ``min_items``, or a quantile
    without enough items) are drawn at the edge of the panel.

    Parameters
    ----------
    result : GateResult
        Output of :func:`evalmix.gate` (``shadow=True`` draws every look).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np, pandas as pd
    >>> from evalmix import gate
    >>> rng = np.random.default_rng(0)
    >>> df = pd.concat([pd.DataFrame({"model": m, "item": range(400), "correct": rng.binomial(1, 0.7, 400)})
    ...                 for m in ("a", "b")])
    >>> res = gate(df, "a", "b", {"looks": 100, "metrics": [{"column": "correct", "margin": 0.1}]}, shadow=True)
    >>> [ax.get_xlabel() for ax in gate_plot(res).axes]
    ['items']
    """
    import matplotlib.pyplot as plt

    metrics = result.to_frame()
    path = result.path
    k = len(metrics)
    cols = min(k, 3)
    rows = math.ceil(k / cols)
    fig, axes = plt.subplots(rows, cols, figsize=(COLUMN_WIDTH * 1.1 * cols, 2.4 * rows), squeeze=False)
    for i, (_, row) in enumerate(metrics.iterrows()):
        ax = axes[i // cols][i % cols]
        sub = path[path["metric"] == row["metric"]]
        n = sub["n_items"].to_numpy()
        est = sub["estimate"].to_numpy(dtype=float)
        lo, hi = sub["conf_low"].to_numpy(dtype=float), sub["conf_high"].to_numpy(dtype=float)
        finite = np.concatenate([est, lo[np.isfinite(lo)], hi[np.isfinite(hi)]])
        span = float(np.ptp(finite)) or 1.0
        bottom, top = float(finite.min()) - 0.1 * span, float(finite.max()) + 0.1 * span
        bound = str(row["boundary"])
        values = [float(v) for v in bound.replace("in (", "").replace(")", "").replace(">", "")
                  .replace("<", "").split(",")]
        bottom, top = min([bottom, *values]) - 0.05 * span, max([top, *values]) + 0.05 * span
        ax.fill_between(n, np.clip(lo, bottom, top), np.clip(hi, bottom, top), color=colour(0), alpha=0.25, lw=0,
                        step="post", label=f"{1 - row['alpha']:.1%} confidence sequence")
        ax.plot(n, est, color=colour(0), lw=1.2, marker="o", ms=2.5, label="estimate")
        for j, v in enumerate(values):
            ax.axhline(v, color="grey", ls="--", lw=0.9, label=f"margin ({bound})" if j == 0 else None)
        if result.stopped_at is not None:
            ax.axvline(result.stopped_at, color=colour(3), lw=1,
                       label=f"stop at {result.stopped_at}: {result.verdict}")
        ax.set_ylim(bottom, top)
        ax.set_xlabel("items")
        scale = "ratio" if row["scale"] == "ratio" else "difference"
        ax.set_ylabel(f"candidate {'/' if scale == 'ratio' else '-'} baseline")
        ax.set_title(figure_text(f"{row['metric']}: {row['decision']}"), fontsize=9)
        ax.legend(fontsize=6, loc="best")
    for j in range(k, rows * cols):
        axes[j // cols][j % cols].set_visible(False)
    return fig
