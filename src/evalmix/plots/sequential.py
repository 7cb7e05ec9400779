"""Plot of an anytime-valid confidence sequence: the running estimate, the band, and the stop."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .style import COLUMN_WIDTH, colour, figure_text, styled, wrap

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure, SubFigure

    from ..studies.sequential import SequenceResult

__all__ = ["sequence_plot"]


@styled
def sequence_plot(result: SequenceResult, *, ax: Axes | None = None, title: str | None = None
                  ) -> Figure | SubFigure:
    """The confidence sequence against the number of items, with the null, the target width and
    the stop.

    The shaded band is the anytime-valid interval at each item, the line the running estimate;
    a dashed line marks ``null`` and a vertical line the item where the rule stopped, labelled
    with the decision.

    Parameters
    ----------
    result : SequenceResult
        Output of :func:`evalmix.confidence_sequence`, :func:`evalmix.sequential_accuracy` or
        :func:`evalmix.sequential_difference`.
    ax : matplotlib Axes, optional
        Axes to draw on (a new figure otherwise).
    title : str, optional
        Axes title (default: what the sequence follows).

    Returns
    -------
    matplotlib.figure.Figure or SubFigure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import numpy as np
    >>> from evalmix import confidence_sequence
    >>> cs = confidence_sequence(np.random.default_rng(1).binomial(1, 0.7, 300), target_width=0.25)
    >>> fig = sequence_plot(cs)
    >>> fig.axes[0].get_xlabel()
    'items'
    """
    import matplotlib.pyplot as plt

    table = result.to_frame()
    if ax is None:
        _, ax = plt.subplots(figsize=(COLUMN_WIDTH * 1.4, 2.6))
    fig = ax.figure
    n = table["n"].to_numpy()
    ax.fill_between(n, table["conf_low"], table["conf_high"], color=colour(0), alpha=0.25, lw=0,
                    label=f"{result.conf_level:.0%} confidence sequence")
    ax.plot(n, table["estimate"], color=colour(0), lw=1.2, label="running estimate")
    if result.null is not None:
        ax.axhline(result.null, color="grey", ls="--", lw=0.8, label=f"null {result.null:g}")
    if result.stopped_at is not None:
        ax.axvline(result.stopped_at, color=colour(3), lw=1,
                   label=figure_text(f"stop at {result.stopped_at} ({result.decision})"))
    ax.set_xlabel("items")
    ax.set_ylabel("estimate")
    # long model names: the title breaks at spaces rather than leave the canvas
    width = ax.get_window_extent().width / ax.figure.dpi  # inches, in a figure or a subfigure
    ax.set_title(wrap(figure_text(title if title is not None else result.label), width))
    ax.legend(fontsize=7, loc="best")
    return fig
