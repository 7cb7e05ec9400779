"""Plots for model comparisons: the critical-difference diagram of a Friedman/Nemenyi analysis."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

import math

from .style import COLUMN_WIDTH, colour, figure_text, styled, text_width

if TYPE_CHECKING:
    from matplotlib.axes import Axes

    from ..stats.comparisons import FriedmanResult
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
    different), and the CD is drawn as a scale bar above the axis, labelled as the family-wise
    (multiplicity-adjusted) threshold it is.  The canvas is cropped to what is
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
    labels = [f"{name} ({r:.2f})" for name, r in zip(names, ranks)]
    label_w = text_width(labels, 7)
    if ax is None:  # the rank axis keeps its length whatever the names: they get their own margins
        axis_len = max(COLUMN_WIDTH * 1.6 - 2.4, 0.12 * k)
        _, ax = plt.subplots(figsize=(axis_len + 2 * (label_w + 0.3), 0.75 + 0.17 * max(n_left, k - n_left)))
    fig = ax.figure
    fig.canvas.draw()  # the axes' final width, which sets the x-range below
    ax_w = ax.get_window_extent().width / fig.dpi
    margin = label_w + 0.25  # inches beside the axis: the label, its leader line and a gap
    span = (k - 1) / max(ax_w - 2 * margin, 0.2 * ax_w)  # ranks per inch along the axis
    lo, hi = 1, k
    step = 0.3  # vertical spacing of labels and clique bars, in data units
    every = max(1, math.ceil(0.22 * span))  # a rank number every 0.22 in at least
    ax.hlines(0, lo, hi, color="black", lw=1)
    for r in range(lo, hi + 1):
        ax.vlines(r, 0, 0.1 if (r - 1) % every == 0 else 0.05, color="black", lw=1)
        if (r - 1) % every == 0:
            ax.text(r, 0.15, str(r), ha="center", va="bottom", fontsize=7)
    # CD scale bar
    ax.hlines(0.75, lo, lo + cd, color="black", lw=1.2)
    ax.vlines([lo, lo + cd], 0.68, 0.82, color="black", lw=1.2)
    # the CD is a family-wise (Nemenyi, Tukey-type) threshold: the label says so
    ax.text(lo + cd / 2, 0.85, f"Nemenyi CD = {cd:.2f} (family-wise α = {result.alpha:g})", ha="center",
            va="bottom", fontsize=7)
    # bars joining models that are not significantly different, just under the axis
    for j, (a, b) in enumerate(cliques):
        y = -0.2 - step * 0.6 * j
        ax.hlines(y, ranks[a] - 0.03, ranks[b] + 0.03, color=colour(3), lw=3)
    top = -0.2 - step * 0.6 * max(len(cliques), 1)
    # model labels: best half to the left, the rest to the right, below the clique bars
    for i, (label, r) in enumerate(zip(labels, ranks)):
        if i < n_left:
            y, x_text, ha = top - step * (i + 0.5), lo - 0.15, "right"
        else:
            y, x_text, ha = top - step * (k - i - 0.5), hi + 0.15, "left"
        ax.plot([r, r, x_text], [0, y, y], color="black", lw=0.7)
        ax.text(x_text, y, figure_text(label), ha=ha, va="center", fontsize=7)
    ax.set_ylim(top - step * (max(n_left, k - n_left) + 0.2), 1.25)
    ax.set_axis_off()
    if title:
        ax.set_title(title)
    # the x-range holds the labels beside the axis ends, so the saved figure is cropped to them
    ax.set_xlim(lo - 0.15 - (label_w + 0.05) * span, hi + 0.15 + (label_w + 0.05) * span)
    return fig
