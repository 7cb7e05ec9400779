"""Figures for run-to-run reliability, rank stability and SE against runs.

They redraw the AI4Math paper's Figures 6-9 from evalmix results: flip-rate bars
(:func:`flip_rate_bars`), the ICC dot plot with quality bands (:func:`icc_dots`), the rank bump chart
of single runs against the pooled leaderboard (:func:`rank_bump`) and the SE-against-runs curves
(:func:`se_curves`).  Every function returns the matplotlib Figure and draws nothing else.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

__all__ = ["flip_rate_bars", "icc_dots", "rank_bump", "se_curves"]

_BAND_COLOURS = ("#d73027", "#fc8d59", "#4575b4", "#1a9850")


def _plt():
    import matplotlib.pyplot as plt

    return plt


def _panels(table: pd.DataFrame, col: str | None) -> list[tuple[Any, pd.DataFrame]]:
    if col is None:
        return [(None, table)]
    return [(k, g) for k, g in table.groupby(col, observed=True, sort=True)]


def flip_rate_bars(result: Any, *, x: str = "model", hue: str | None = "language",
                   col: str | None = "prompt", value: str = "flip_rate", figsize: tuple | None = None):
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
    >>> df = evalmix.simulate.glmm_runs(3, 20, 3, slices={"language": ["EN", "ES"]}, seed=1)
    >>> fig = flip_rate_bars(evalmix.flip_rate(df, ["model", "language"]), col=None)
    """
    plt = _plt()
    table = result.table if hasattr(result, "table") else result
    panels = _panels(table, col)
    xs = list(dict.fromkeys(table[x]))
    hues = list(dict.fromkeys(table[hue])) if hue else [None]
    fig, axes = plt.subplots(1, len(panels), sharey=True, squeeze=False,
                             figsize=figsize or (4.5 * len(panels), 4))
    width = 0.8 / len(hues)
    for ax, (key, g) in zip(axes[0], panels):
        for j, h in enumerate(hues):
            sub = g if h is None else g[g[hue] == h]
            vals = sub.set_index(x)[value].reindex(xs)
            ax.bar(np.arange(len(xs)) + (j - (len(hues) - 1) / 2) * width, vals.to_numpy(float),
                   width, label=None if h is None else str(h))
        ax.set_xticks(np.arange(len(xs)), [str(v) for v in xs], rotation=45, ha="right")
        if key is not None:
            ax.set_title(str(key))
        if value == "flip_rate":
            ax.yaxis.set_major_formatter(plt.matplotlib.ticker.PercentFormatter(1.0))
    axes[0, 0].set_ylabel("items with inconsistent outcome" if value == "flip_rate" else value)
    if hue:
        axes[0, -1].legend(title=hue)
    fig.tight_layout()
    return fig


def icc_dots(result: Any, *, label: Sequence[str] | None = None, bands: Sequence[float] | None = None,
             show_ci: bool = True, figsize: tuple | None = None):
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
    >>> df = evalmix.simulate.glmm_runs(3, 30, 3, seed=1)
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
    colour = {q: _BAND_COLOURS[i % len(_BAND_COLOURS)] for i, q in enumerate(order)}
    fig, ax = plt.subplots(figsize=figsize or (6, 0.25 * len(table) + 1.5))
    y = np.arange(len(table))
    if show_ci:
        ax.hlines(y, table["conf_low"], table["conf_high"], color="grey", lw=1, alpha=0.6)
    for q in order:
        m = (table["quality"] == q).to_numpy()
        ax.scatter(table["icc"].to_numpy()[m], y[m], color=colour[q], label=str(q), zorder=3)
    for c in cuts:
        ax.axvline(c, ls="--", lw=0.8, color="grey", alpha=0.6)
    ax.set_yticks(y, names)
    ax.set_xlabel(f"{table['form'].iloc[0]} (intraclass correlation)" if len(table) else "ICC")
    ax.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    return fig


def rank_bump(result: Any, *, n_runs: int = 1, figsize: tuple | None = None):
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
    >>> df = evalmix.simulate.glmm_runs(4, 30, 3, slices={"language": ["EN", "ES"]}, seed=2)
    >>> fig = rank_bump(evalmix.rank_instability(df, "language"))
    """
    plt = _plt()
    ranks = result.ranks
    ranks = ranks[(ranks["leaderboard"] == "all") | (ranks["n_runs"] == n_runs)]
    by = list(result.by)
    panels = [((), ranks)] if not by else [(k if isinstance(k, tuple) else (k,), g)
                                           for k, g in ranks.groupby(by, observed=True, sort=True)]
    ncol = min(len(panels), 2)
    nrow = -(-len(panels) // ncol)
    fig, axes = plt.subplots(nrow, ncol, squeeze=False, sharey=True,
                             figsize=figsize or (5.5 * ncol, 3.8 * nrow))
    models = list(dict.fromkeys(ranks["model"]))
    cmap = plt.get_cmap("tab10" if len(models) <= 10 else "tab20")
    for ax, (key, g) in zip(axes.ravel(), panels):
        boards = ["all"] + [b for b in dict.fromkeys(g["leaderboard"]) if b != "all"]
        for i, m in enumerate(models):
            sub = g[g["model"] == m].set_index("leaderboard").reindex(boards)
            ax.plot(np.arange(len(boards)), sub["rank"].to_numpy(float), "-o", color=cmap(i % cmap.N),
                    alpha=0.8, label=str(m))
        ax.set_xticks(np.arange(len(boards)), ["all runs"] + [f"run {b}" for b in boards[1:]])
        ax.set_title(", ".join(f"{b}={k}" for b, k in zip(by, key)) if by else "")
    for ax in axes.ravel()[len(panels):]:
        ax.set_visible(False)
    axes[0, 0].invert_yaxis()  # shared: flips every panel
    axes[0, 0].set_ylabel("rank (1 = best)")
    axes[0, -1].legend(fontsize="small", bbox_to_anchor=(1.02, 1), loc="upper left")
    fig.tight_layout()
    return fig


def se_curves(result: Any, *, show_projection: bool = False, figsize: tuple | None = None):
    """SE of slice accuracy against runs averaged (the paper's Figure 9).

    Per-curve predicted lines (solid, sd_all / sqrt(R)), empirical lines over run subsets (dashed)
    and the model-averaged lines (thick black).  With ``show_projection`` the mean projected SE on
    the population of items (``se``, between- and within-item variance) is added in grey, showing
    the floor that more runs cannot remove.

    Parameters
    ----------
    result : SEvsRunsResult
        From :func:`evalmix.repetitions.se_vs_runs`.
    show_projection : bool
        Add the decomposition-based curves.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import evalmix, matplotlib
    >>> matplotlib.use("Agg")
    >>> from evalmix.repetitions import se_vs_runs
    >>> df = evalmix.simulate.glmm_runs(3, 40, 3, seed=1)
    >>> fig = se_curves(se_vs_runs(df, "model", max_runs=3))
    """
    plt = _plt()
    paper = result.paper
    fig, ax = plt.subplots(figsize=figsize or (6.5, 4.5))
    curves = [c for c in dict.fromkeys(paper["curve"]) if c != "average"]
    cmap = plt.get_cmap("tab10" if len(curves) <= 10 else "tab20")
    for i, c in enumerate(curves):
        for kind, ls, marker in (("predicted", "-", "o"), ("empirical", "--", "o")):
            g = paper[(paper["curve"] == c) & (paper["kind"] == kind)]
            ax.plot(g["n_runs"], g["se"], ls=ls, marker=marker, ms=4, color=cmap(i % cmap.N),
                    mfc="none" if kind == "empirical" else None,
                    label=str(c) if kind == "predicted" else None)
    for kind, ls in (("predicted", "-"), ("empirical", "--")):
        g = paper[(paper["curve"] == "average") & (paper["kind"] == kind)]
        ax.plot(g["n_runs"], g["se"], ls=ls, color="black", lw=2.5, label=f"average ({kind})")
    if show_projection:
        proj = result.projection.groupby("n_runs")[["se", "se_runs"]].mean().reset_index()
        proj = proj[proj["n_runs"] <= paper["n_runs"].max() * 3]
        ax.plot(proj["n_runs"], proj["se"], color="grey", lw=2, label="items random (projection)")
        ax.plot(proj["n_runs"], proj["se_runs"], color="grey", lw=2, ls=":", label="run noise only")
    ax.set_xlabel("runs averaged (R)")
    ax.set_ylabel("standard error of slice accuracy")
    ax.legend(fontsize="small", bbox_to_anchor=(1.02, 1), loc="upper left")
    fig.tight_layout()
    return fig
