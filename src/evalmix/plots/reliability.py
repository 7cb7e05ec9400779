"""Figures for run-to-run reliability, rank stability and SE against runs.

They redraw the AI4Math paper's Figures 6-9 from evalmix results: flip-rate bars
(:func:`flip_rate_bars`), the ICC dot plot with quality bands (:func:`icc_dots`), the rank bump chart
of single runs against the pooled leaderboard (:func:`rank_bump`) and the SE-against-runs curves
(:func:`se_curves`).  Every function returns the matplotlib Figure and draws nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from .style import (
    COLUMN_WIDTH, PAGE_WIDTH, colour, colours, figure_text, first_column, fit_label, hide_unused, legend_columns, marker,
    panel_columns, panel_figure_width, panel_title_width, shared_xlabel, styled, text_width, wrap,
)

if TYPE_CHECKING:
    from ..studies.ranking import RankInstabilityResult, RankUncertaintyResult
    from ..studies.reliability import FlipRateResult, ICCResult
    from ..studies.repetitions import SEvsRunsResult
    from matplotlib.figure import Figure

__all__ = ["flip_rate_bars", "icc_dots", "rank_bump", "rank_intervals", "se_curves"]

# quality bands from poor to excellent: vermillion, orange, blue, bluish green (Okabe-Ito)
_BAND_COLOURS = ("#D55E00", "#E69F00", "#0072B2", "#009E73")


def _plt() -> Any:  # matplotlib.pyplot, imported on first use
    import matplotlib.pyplot as plt

    return plt


def _panels(table: pd.DataFrame, col: str | None) -> list[tuple[Any, pd.DataFrame]]:
    if col is None:
        return [(None, table)]
    return [(k, g) for k, g in table.groupby(col, observed=True, sort=True)]


@styled
def flip_rate_bars(result: FlipRateResult | pd.DataFrame, *, x: str = "model", hue: str | None = "language",
                   col: str | None = "prompt", value: str = "flip_rate", figsize: tuple[float, float] | None = None
                   ) -> Figure:
    """Grouped bars of the share of items that flip across runs (the paper's Figure 6).

    Parameters
    ----------
    result : FlipRateResult or DataFrame
        From :func:`evalmix.flip_rate` (or its table).
    x, hue, col : str
        Columns for the bar positions, the bar colours within a group and the panels.
    value : str
        Column to plot (``"flip_rate"`` or ``"entropy"``).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import evalmix, matplotlib
    >>> matplotlib.use("Agg")
    >>> df = evalmix.simulate.glmm_runs(3, 20, 3, slices={"language": ["EN", "ES"]}, rng=1)
    >>> fig = flip_rate_bars(evalmix.flip_rate(df, ["model", "language"]), col=None)
    """
    plt = _plt()
    table = result if isinstance(result, pd.DataFrame) else result.table
    panels = _panels(table, col)
    xs = list(dict.fromkeys(table[x]))
    hues = list(dict.fromkeys(table[hue])) if hue else [None]
    pal = colours(hues)
    # horizontal bars: model names of any length and any number of models read level, one per row
    n = len(panels)
    ncol, label_w = panel_columns(n, xs)
    nrow = -(-n // ncol)
    per_row = 0.1 + 0.07 * len(hues)
    fig, axes = plt.subplots(nrow, ncol, sharex=True, sharey=True, squeeze=False,
                             figsize=figsize or (panel_figure_width(ncol, label_w), nrow * (len(xs) * per_row + 0.5) + 0.9))
    height = 0.8 / len(hues)
    pos = np.arange(len(xs))[::-1]  # the first level on top
    for ax, (key, g) in zip(axes.ravel(), panels):
        for j, h in enumerate(hues):
            sub = g if h is None else g[g[hue] == h]
            vals = sub.set_index(x)[value].reindex(xs)
            ax.barh(pos - (j - (len(hues) - 1) / 2) * height, vals.to_numpy(float),
                    height, color=pal[h], label=None if h is None else figure_text(h))
        ax.set_yticks(pos, [figure_text(v) for v in xs])
        if key is not None:
            ax.set_title(figure_text(wrap(f"{col} = {key}", panel_title_width(ncol, label_w))))
        if value == "flip_rate":
            ax.xaxis.set_major_formatter(plt.matplotlib.ticker.PercentFormatter(1.0, decimals=0))
        ax.grid(axis="x", lw=0.4, alpha=0.4)
    hide_unused(axes, n)
    xlabel = ("items whose outcome changes across runs (%)" if value == "flip_rate"
              else "mean outcome entropy (bits)" if value == "entropy" else value)
    shared_xlabel(fig, axes, n, xlabel)
    if hue:
        # above the panels: constrained layout stacks an outside legend below on the shared label
        fig.legend(*axes[0, 0].get_legend_handles_labels(), title=figure_text(hue), loc="outside upper center",
                   ncol=legend_columns([str(h) for h in hues], PAGE_WIDTH))
    return fig


@styled
def icc_dots(result: ICCResult, *, label: Sequence[str] | None = None, bands: Sequence[float] | None = None,
             show_ci: bool = True, figsize: tuple[float, float] | None = None) -> Figure:
    """ICC per slice as sorted dots coloured by quality band (the paper's Figure 7).

    Parameters
    ----------
    result : ICCResult
        From :func:`evalmix.icc`.
    label : list of str, optional
        Columns joined into the slice label (default: the result's slice columns).
    bands : sequence of float, optional
        Cut points drawn as guides (default: those the result was computed with).
    show_ci : bool
        Draw the confidence interval of each ICC.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import evalmix, matplotlib
    >>> matplotlib.use("Agg")
    >>> df = evalmix.simulate.glmm_runs(3, 30, 3, rng=1)
    >>> fig = icc_dots(evalmix.icc(df, "model"))
    """
    plt = _plt()
    table = result.table.sort_values("icc")
    cols = list(label) if label is not None else list(result.by)
    names = [" / ".join(str(v) for v in row) for row in table[cols].itertuples(index=False)] \
        if cols else ["all"] * len(table)
    cuts = list(bands) if bands is not None else list(result.bands)
    # labels are user-defined: order them from low to high as they occur along the sorted ICCs
    order = list(dict.fromkeys(table["quality"].dropna()))
    band_colour = {q: _BAND_COLOURS[i % len(_BAND_COLOURS)] for i, q in enumerate(order)}
    label_w = text_width(names, 6 if len(table) > 24 else None)
    fig, ax = plt.subplots(figsize=figsize or (min(PAGE_WIDTH, max(COLUMN_WIDTH * 1.3, label_w + 3.2)),
                                               0.16 * len(table) + 1.2))
    y = np.arange(len(table))
    lo_col, hi_col = first_column(table, "conf_low", "lower"), first_column(table, "conf_high", "upper")
    if show_ci:
        ax.hlines(y, table[lo_col], table[hi_col], color="grey", lw=1, alpha=0.6)
    for q in order:
        m = (table["quality"] == q).to_numpy()
        ax.scatter(table["icc"].to_numpy()[m], y[m], color=band_colour[q], s=14, label=str(q), zorder=3)
    for c in cuts:
        ax.axvline(c, ls="--", lw=0.7, color="grey", alpha=0.7)
    ax.set_yticks(y, [figure_text(v) for v in names], fontsize=6 if len(table) > 24 else None)
    ax.set_xlabel(f"{table['form'].iloc[0]} (intraclass correlation, 95% CI)" if len(table) else "ICC")
    fig.legend(*ax.get_legend_handles_labels(), title="reliability", loc="outside lower center",
               ncol=legend_columns([str(q) for q in order], fig.get_figwidth()))
    return fig


@styled
def rank_bump(result: RankInstabilityResult, *, n_runs: int = 1, figsize: tuple[float, float] | None = None) -> Figure:
    """Leaderboard ranks of single runs (or run subsets) next to the pooled ranks (the paper's Figure 8).

    One panel per slice; each model is a line through its rank in the pooled leaderboard ("all")
    and in each leaderboard of ``n_runs`` runs.  Sloped segments are rank changes.

    Parameters
    ----------
    result : RankInstabilityResult
        From :func:`evalmix.rank_instability`.
    n_runs : int
        Which pooled-run leaderboards to show next to the reference.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import evalmix, matplotlib
    >>> matplotlib.use("Agg")
    >>> df = evalmix.simulate.glmm_runs(4, 30, 3, slices={"language": ["EN", "ES"]}, rng=2)
    >>> fig = rank_bump(evalmix.rank_instability(df, "language"))
    """
    plt = _plt()
    ranks = result.ranks
    ranks = ranks[(ranks["leaderboard"] == "all") | (ranks["n_runs"] == n_runs)]
    by = list(result.by)
    panels = [((), ranks)] if not by else [(k if isinstance(k, tuple) else (k,), g)
                                           for k, g in ranks.groupby(by, observed=True, sort=True)]
    models = list(dict.fromkeys(ranks["model"]))
    ncol = min(len(panels), 2)
    nrow = -(-len(panels) // ncol)
    width = figsize[0] if figsize else COLUMN_WIDTH if ncol == 1 else PAGE_WIDTH * 0.8
    fig, axes = plt.subplots(nrow, ncol, squeeze=False, sharey=True,
                             figsize=figsize or (width, 0.22 * len(models) * nrow + 1.2))
    for ax, (key, g) in zip(axes.ravel(), panels):
        boards = ["all"] + [b for b in dict.fromkeys(g["leaderboard"]) if b != "all"]
        wide = g.pivot_table(index="model", columns="leaderboard", values="rank", observed=True)
        wide = wide.reindex(index=models, columns=boards)
        # models sharing a rank (tied accuracy) are spread sideways so every marker stays visible
        offset = np.zeros(wide.shape)
        for j in range(wide.shape[1]):
            col = wide.iloc[:, j]
            for _, idx in col.groupby(col).groups.items():
                # the models are unique labels, so get_loc gives one position each
                rows = [cast(int, wide.index.get_loc(i)) for i in idx]
                if len(rows) > 1:
                    offset[rows, j] = np.linspace(-0.12, 0.12, len(rows))
        for i, m in enumerate(models):
            xs = np.arange(len(boards)) + offset[i]
            ax.plot(xs, wide.iloc[i].to_numpy(float), "-", marker=marker(i), ms=4, color=colour(i),
                    mec="white", mew=0.5, alpha=0.9, label=figure_text(m))
        ax.set_xticks(np.arange(len(boards)), ["all runs"] + [f"run {b}" for b in boards[1:]])
        ax.set_xlim(-0.4, len(boards) - 0.6)
        ax.set_title(figure_text(wrap(", ".join(f"{b} = {k}" for b, k in zip(by, key)), width / ncol - 0.45)) if by else "")
    hide_unused(axes, len(panels))
    axes[0, 0].invert_yaxis()  # shared: flips every panel
    axes[0, 0].set_ylim(len(models) + 0.5, 0.5)
    axes[0, 0].yaxis.set_major_locator(plt.matplotlib.ticker.MaxNLocator(integer=True, min_n_ticks=1))
    # a label no longer than a row of panels: under the legend and the titles, what is left of the height
    fig_h = fig.get_figheight()
    legend_rows = -(-len(models) // legend_columns([str(m) for m in models], width, max_cols=4))
    room = (fig_h - 0.17 * legend_rows - 0.6) / nrow - (0.2 if by else 0.0)
    for row in axes:
        row[0].set_ylabel(fit_label("rank (1 = best; ties side by side)", room, short="rank (1 = best)"))
    # below the panels, in as many columns as the names allow: a legend beside them would squeeze
    # the panels to nothing with long names
    fig.legend(*axes[0, 0].get_legend_handles_labels(), loc="outside lower center", title="model",
               ncol=legend_columns([str(m) for m in models], width, max_cols=4))
    return fig


@styled
def se_curves(result: SEvsRunsResult, *, show_projection: bool = False, figsize: tuple[float, float] | None = None) -> Figure:
    """SE of slice accuracy against runs averaged (the paper's Figure 9).

    Per-curve predicted lines (solid, sd_all / sqrt(R)), empirical lines over run subsets (dashed)
    and the model-averaged lines (thick black).  With ``show_projection`` the mean projected SE on
    the population of items (``se``, between- and within-item variance) is added in grey, showing
    the floor that more runs cannot remove.

    Parameters
    ----------
    result : SEvsRunsResult
        From :func:`evalmix.studies.repetitions.se_vs_runs`.
    show_projection : bool
        Add the decomposition-based curves.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import evalmix, matplotlib
    >>> matplotlib.use("Agg")
    >>> from evalmix.studies.repetitions import se_vs_runs
    >>> df = evalmix.simulate.glmm_runs(3, 40, 3, rng=1)
    >>> fig = se_curves(se_vs_runs(df, "model", max_runs=3))
    """
    plt = _plt()
    from matplotlib.lines import Line2D

    paper = result.paper
    curves = [c for c in dict.fromkeys(paper["curve"]) if c != "average"]
    # a legend entry per curve under the axes, in the columns the names allow; the figure grows
    # by its rows so the axes keep their height
    width = figsize[0] if figsize else min(PAGE_WIDTH, max(COLUMN_WIDTH * 1.3, 2 * text_width(curves) + 1.2))
    ncol = legend_columns([str(c) for c in curves], width, max_cols=4)
    fig, ax = plt.subplots(figsize=figsize or (width, 3.2 + 0.17 * (-(-len(curves) // ncol) - 1)))
    for i, c in enumerate(curves):
        for kind, ls in (("predicted", "-"), ("empirical", "--")):
            g = paper[(paper["curve"] == c) & (paper["kind"] == kind)]
            ax.plot(g["n_runs"], g["se"], ls=ls, marker=marker(i), ms=3, lw=1, color=colour(i),
                    mfc="none" if kind == "empirical" else None,
                    label=figure_text(c) if kind == "predicted" else None)
    for kind, ls in (("predicted", "-"), ("empirical", "--")):
        g = paper[(paper["curve"] == "average") & (paper["kind"] == kind)]
        ax.plot(g["n_runs"], g["se"], ls=ls, color="black", lw=2.2, label=f"average ({kind})")
    styles = [Line2D([], [], color="black", lw=1, ls="-", label="predicted, sd / √R"),
              Line2D([], [], color="black", lw=1, ls="--", label="empirical, run subsets"),
              Line2D([], [], color="black", lw=2.2, label="model average")]
    if show_projection:
        proj = result.projection.groupby("n_runs")[["se", "se_runs"]].mean().reset_index()
        proj = proj[proj["n_runs"] <= paper["n_runs"].max() * 3]
        # black and dash-dot: no category colour, so it cannot be read as one more model
        ax.plot(proj["n_runs"], proj["se"], color="black", lw=1.5, ls="-.",
                label="items random (projection)")
        ax.plot(proj["n_runs"], proj["se_runs"], color="black", lw=1.5, ls=":", label="run noise only")
        styles += [Line2D([], [], color="black", lw=1.5, ls="-.", label="projection, items random"),
                   Line2D([], [], color="black", lw=1.5, ls=":", label="projection, run noise only")]
    ax.set_xlabel("runs averaged (R)")
    # no longer than the axes: the figure's height less both legends and the x axis
    rows = -(-len(curves) // ncol) + -(-len(styles) // (2 if len(styles) > 3 else 3))
    ax.set_ylabel(fit_label("standard error of slice accuracy (proportion)",
                            fig.get_figheight() - 0.17 * rows - 0.75))
    ax.xaxis.set_major_locator(plt.matplotlib.ticker.MaxNLocator(integer=True))
    handles = [h for h in ax.get_lines() if h.get_label() in {str(c) for c in curves}]
    fig.legend(handles, [h.get_label() for h in handles], loc="outside lower center", ncol=ncol)
    fig.legend(handles=styles, loc="outside upper center", ncol=2 if len(styles) > 3 else 3)
    return fig


@styled
def rank_intervals(result: RankUncertaintyResult | pd.DataFrame, *, figsize: tuple[float, float] | None = None) -> Figure:
    """Each model's rank with its interval, one panel per slice (rank uncertainty).

    Parameters
    ----------
    result : RankUncertaintyResult or DataFrame
        From :func:`evalmix.rank_uncertainty` (columns ``model``, ``mean_rank`` and the rank
        interval ``rank_low``, ``rank_high``) or :func:`evalmix.rank_uncertainty_glmm`.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import evalmix, matplotlib
    >>> matplotlib.use("Agg")
    >>> df = evalmix.simulate.glmm_runs(4, 30, 2, rng=2)
    >>> fig = rank_intervals(evalmix.rank_uncertainty(df, n_boot=200, rng=1))
    >>> fig.axes[0].get_xlabel()
    'rank (1 = best; 95% interval)'
    """
    plt = _plt()
    table = result if isinstance(result, pd.DataFrame) else result.to_frame()
    by = list(getattr(result, "by", ()) or [])
    model = "model" if "model" in table.columns else table.columns[0]
    panels = _panels(table, by[0] if len(by) == 1 else None) if len(by) <= 1 else \
        [(k, g) for k, g in table.groupby(by, observed=True, sort=True)]
    lo_col, hi_col = first_column(table, "rank_low"), first_column(table, "rank_high")
    models = list(table.groupby(model, observed=True)["mean_rank"].mean().sort_values().index)
    n = len(panels)
    ncol, label_w = panel_columns(n, models)
    nrow = -(-n // ncol)
    fig, axes = plt.subplots(nrow, ncol, squeeze=False, sharex=True, sharey=True,
                             figsize=figsize or (panel_figure_width(ncol, label_w), (0.16 * len(models) + 0.6) * nrow + 0.5))
    pos = {m: i for i, m in enumerate(models[::-1])}
    for ax, (key, g) in zip(axes.ravel(), panels):
        y = g[model].map(pos).to_numpy(float)
        ax.hlines(y, g[lo_col].to_numpy(float), g[hi_col].to_numpy(float), color=colour(0), lw=2,
                  alpha=0.5)
        ax.plot(g["mean_rank"].to_numpy(float), y, "o", color=colour(0), ms=3.5)
        if key is not None:
            keys = key if isinstance(key, tuple) else (key,)
            ax.set_title(figure_text(wrap(", ".join(f"{b} = {k}" for b, k in zip(by, keys)), panel_title_width(ncol, label_w))))
    hide_unused(axes, n)
    axes[0, 0].set_yticks(list(pos.values()), [figure_text(m) for m in pos])
    axes[0, 0].set_xlim(0.5, len(models) + 0.5)
    # whole ranks, as many as the panel's width holds
    axes[0, 0].xaxis.set_major_locator(plt.matplotlib.ticker.MaxNLocator(integer=True, min_n_ticks=1))
    shared_xlabel(fig, axes, n, "rank (1 = best; 95% interval)")
    return fig
