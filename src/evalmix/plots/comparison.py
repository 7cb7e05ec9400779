"""Plots for model comparisons: the critical-difference diagram of a Friedman/Nemenyi analysis."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .style import COLUMN_WIDTH, colour, figure_text, styled

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..comparisons import FriedmanResult
    from matplotlib.figure import Figure, SubFigure

__all__ = ["critical_difference_plot"]


def _cliques(ranks: np.ndarray, cd: float) -> list[tuple[int, int]]:
    """Maximal runs of consecutive (sorted) models whose rank range is below ``cd``."""
    k = ranks.size
    spans: list[tuple[int, int]] = []
    for i in range(k):
        j = i
        while j + 1 < k and ranks[j + 1] - ranks[i] < cd:
            j += 1
        if j > i and not any(a <= i and j <= b for a, b in spans):
            spans.append((i, j))
    return spans


@styled
def critical_difference_plot(result: FriedmanResult, *, ax: Axes | None = None, title: str | None = None
                             ) -> Figure | SubFigure:
    """Demšar's critical-difference diagram of a :func:`evalmix.friedman` result.

    Models are placed on the mean-rank axis (rank 1 = best, on the left); a thick bar joins
    models whose mean ranks differ by less than the Nemenyi critical difference (not significantly
    different), and the CD is drawn as a scale bar above the axis.  The canvas is cropped to what is
    drawn.

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
    matplotlib.figure.Figure or SubFigure
        The figure drawn on (that of ``ax`` when given: a SubFigure when ``ax`` lies in one).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np, pandas as pd
    >>> from evalmix import friedman
    >>> from evalmix.plots.comparison import critical_difference_plot
    >>> rng = np.random.default_rng(0)
    >>> wide = pd.DataFrame(rng.random((30, 4)) + [0, 0.1, 0.3, 0.6], columns=list("abcd"))
    >>> fig = critical_difference_plot(friedman(wide))
    >>> sorted(t.get_text() for t in fig.axes[0].texts)[-1]
    'd (1.60)'
    """
    import matplotlib.pyplot as plt

    ranks = result.mean_ranks.to_numpy(dtype=float)
    names = list(result.mean_ranks.index)
    k = ranks.size
    cd = float(result.critical_difference)
    n_left = (k + 1) // 2
    cliques = _cliques(ranks, cd)
    if ax is None:
        _, ax = plt.subplots(figsize=(COLUMN_WIDTH * 1.6, 0.75 + 0.17 * max(n_left, k - n_left)))
    fig = ax.figure
    lo, hi = 1, k
    step = 0.3  # vertical spacing of labels and clique bars, in data units
    ax.hlines(0, lo, hi, color="black", lw=1)
    for r in range(lo, hi + 1):
        ax.vlines(r, 0, 0.1, color="black", lw=1)
        ax.text(r, 0.15, str(r), ha="center", va="bottom", fontsize=7)
    # CD scale bar
    ax.hlines(0.75, lo, lo + cd, color="black", lw=1.2)
    ax.vlines([lo, lo + cd], 0.68, 0.82, color="black", lw=1.2)
    ax.text(lo + cd / 2, 0.85, f"CD = {cd:.2f}", ha="center", va="bottom", fontsize=7)
    # bars joining models that are not significantly different, just under the axis
    for j, (a, b) in enumerate(cliques):
        y = -0.2 - step * 0.6 * j
        ax.hlines(y, ranks[a] - 0.03, ranks[b] + 0.03, color=colour(3), lw=3)
    top = -0.2 - step * 0.6 * max(len(cliques), 1)
    # model labels: best half to the left, the rest to the right, below the clique bars
    for i, (name, r) in enumerate(zip(names, ranks)):
        if i < n_left:
            y, x_text, ha = top - step * (i + 0.5), lo - 0.15, "right"
        else:
            y, x_text, ha = top - step * (k - i - 0.5), hi + 0.15, "left"
        ax.plot([r, r, x_text], [0, y, y], color="black", lw=0.7)
        ax.text(x_text, y, f"{figure_text(name)} ({r:.2f})", ha=ha, va="center", fontsize=7)
    ax.set_ylim(top - step * (max(n_left, k - n_left) + 0.2), 1.25)
    ax.set_axis_off()
    if title:
        ax.set_title(title)
    # widen the x-range to the labels so the saved figure is cropped to the drawing
    fig.canvas.draw()
    inv = ax.transData.inverted()
    xs = [inv.transform(t.get_window_extent())[:, 0] for t in ax.texts]
    x_lo = min(min(v) for v in xs) - 0.05
    x_hi = max(max(v) for v in xs) + 0.05
    ax.set_xlim(x_lo, x_hi)
    return fig
