"""The leaderboard figure: estimates with intervals beside simultaneous rank sets and tie groups."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import numpy as np

from .style import figure_text, styled

if TYPE_CHECKING:
    from ..studies.leaderboard import RankSets
    from matplotlib.figure import Figure

__all__ = ["leaderboard_plot"]


def _plt() -> Any:  # matplotlib.pyplot, imported on first use
    import matplotlib.pyplot as plt

    return plt


@styled
def leaderboard_plot(result: RankSets, *, where: Mapping[str, Any] | None = None, figsize: tuple[float, float] | None = None,
                     title: str | None = None) -> Figure:
    """Draw a leaderboard: each model's estimate and interval, its rank set and its tie groups.

    The left panel shows the estimate (accuracy for GLMM and posterior sets) with its marginal
    interval; the right panel the simultaneous rank set (thick bar), the marginal rank interval
    (thin line) and the observed rank (dot), with the tie-group letters at the right margin.
    Models are listed best first.

    Parameters
    ----------
    result : RankSets
        From :func:`evalmix.rank_sets`, :func:`evalmix.rank_sets_glmm`,
        :func:`evalmix.rank_sets_normal` or :func:`evalmix.rank_sets_posterior`.
    where : mapping, optional
        The slice to draw when the result has ``by`` columns, e.g. ``{"language": "EN"}``.
    figsize : tuple, optional
        Figure size in inches.
    title : str, optional
        Figure title.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> from evalmix.studies.leaderboard import rank_sets_normal
    >>> rs = rank_sets_normal([0.80, 0.78, 0.75, 0.70], se=[0.01] * 4, labels=list("ABCD"))
    >>> fig = leaderboard_plot(rs)
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ['A', 'B', 'C', 'D']
    """
    from ..core.errors import DataError

    plt = _plt()
    table = result.table
    by = list(result.by)
    if by:
        if not where or set(where) != set(by):
            raise DataError(f"the result has one leaderboard per {by}; choose one with where={{...}} "
                            f"naming {by}")
        mask = np.ones(len(table), bool)
        for col, val in where.items():
            mask &= (table[col] == val).to_numpy()
        table = table[mask]
        if table.empty:
            raise DataError(f"no leaderboard for {dict(where)}")
    k = len(table)
    value = "accuracy" if "accuracy" in table.columns else "estimate"
    y = np.arange(k)
    fig, (left, right) = plt.subplots(1, 2, sharey=True, figsize=figsize or (9, (0.45 if k <= 12 else 0.25) * k + 1.6),
                                      gridspec_kw={"width_ratios": [3, 2]})
    est = table[value].to_numpy(float)
    lo, hi = table["conf_low"].to_numpy(float), table["conf_high"].to_numpy(float)
    if value == "accuracy":  # intervals are on the logit scale: map them with the estimate
        lo, hi = 1 / (1 + np.exp(-lo)), 1 / (1 + np.exp(-hi))
    left.hlines(y, lo, hi, color="0.3", lw=1.5)
    left.plot(est, y, "o", color="C0")
    left.set_yticks(y, [figure_text(m) for m in table["model"]])
    left.set_xlabel(f"{value} ({100 * result.conf_level:g}% interval)")
    left.invert_yaxis()
    left.grid(axis="x", alpha=0.3)
    right.hlines(y, table["rank_low"] - 0.35, table["rank_high"] + 0.35, color="C1", lw=7, alpha=0.45,
                 label=f"simultaneous {100 * result.conf_level:g}% rank set")
    right.hlines(y, table["marginal_rank_low"] - 0.15, table["marginal_rank_high"] + 0.15, color="C1", lw=1.5,
                 label="marginal rank interval")
    right.plot(table["rank"], y, "o", color="black", ms=4, label="observed rank")
    right.set_xlim(0.4, k + 0.6)
    # whole ranks, as many as the panel's width holds (every rank of 40 models would collide)
    right.xaxis.set_major_locator(plt.matplotlib.ticker.MaxNLocator(integer=True, min_n_ticks=1))
    right.set_xlabel("rank (1 = best)")
    for yi, letters in zip(y, table["tie_group"]):
        right.annotate(letters, (1.01, yi), xycoords=("axes fraction", "data"), va="center", fontsize=9)
    right.legend(fontsize="x-small", loc="lower left", bbox_to_anchor=(0, 1.0), ncol=1, frameon=False)
    fig.suptitle(title or figure_text("Leaderboard" + (": " + ", ".join(f"{a}={b}" for a, b in where.items())
                                            if where else "")))
    return fig  # laid out by the style's constrained layout, tie letters and legend included
