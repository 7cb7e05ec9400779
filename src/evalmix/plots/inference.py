"""Figures for accuracy, model selection, odds ratios and marginal means.

They draw the AI4Math paper's Figures 1-5 and Supplementary Figures 1-2 from evalmix results:
accuracy with intervals (:func:`accuracy_intervals`), ΔBIC bars of a model comparison
(:func:`delta_bic_bars`), the odds-ratio forest plot of contrasts, optionally one panel per slice
level (:func:`odds_ratio_forest`), marginal means with intervals (:func:`marginal_means`) and the
accuracy heatmap (:func:`accuracy_heatmap`).  Every function returns a matplotlib Figure drawn in
:func:`evalmix.plots.style.paper_style`.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from .style import (
    COLUMN_WIDTH, PAGE_WIDTH, colour, colours, figure_text, first_column, hide_unused, log_ticks, p_value_label,
    panel_columns, panel_figure_width, panel_title_width, shared_xlabel, styled, text_width, wrap,
)

if TYPE_CHECKING:
    from ..core.result import Result
    from ..inference.emmeans import Contrasts, EMMeans
    from ..inference.selection import ModelComparison
    from matplotlib.figure import Figure

__all__ = ["accuracy_heatmap", "accuracy_intervals", "delta_bic_bars", "marginal_means",
           "odds_ratio_forest"]


def _plt() -> Any:  # matplotlib.pyplot, imported on first use
    import matplotlib.pyplot as plt

    return plt


def _frame(result: Result | pd.DataFrame) -> pd.DataFrame:
    if isinstance(result, pd.DataFrame) or not hasattr(result, "to_frame"):
        return pd.DataFrame(result)  # a frame, or records a frame can be built from
    return result.to_frame()


def _interval(table: pd.DataFrame, prefix: str = "") -> tuple[np.ndarray, np.ndarray]:
    lo = first_column(table, f"{prefix}conf_low", f"{prefix}lower")
    hi = first_column(table, f"{prefix}conf_high", f"{prefix}upper")
    return table[lo].to_numpy(float), table[hi].to_numpy(float)


def _levels(values: pd.Series) -> list[Any]:
    if isinstance(values.dtype, pd.CategoricalDtype):
        present = set(values)
        return [c for c in values.cat.categories if c in present]
    return list(dict.fromkeys(values))


def _grid(plt: Any, n: int, ncol: int, panel_w: float, panel_h: float, **kw: Any
          ) -> tuple[Figure, Any]:
    nrow = -(-n // ncol)
    fig, axes = plt.subplots(nrow, ncol, squeeze=False, figsize=(panel_w * ncol, panel_h * nrow), **kw)
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)
    return fig, axes


@styled
def accuracy_intervals(table: pd.DataFrame | Result, *, y: str = "model", hue: str | None = None,
                       col: str | None = None, figsize: tuple[float, float] | None = None) -> Figure:
    """Accuracy with its confidence interval per group (the paper's Figure 1).

    One row per level of ``y`` (best on top), points dodged by ``hue``, one panel per level of
    ``col``.

    Parameters
    ----------
    table : DataFrame or result
        From :func:`evalmix.accuracy`: the grouping columns, ``estimate`` and the interval.
    y, hue, col : str
        Columns for the rows, the colours and the panels (``hue`` and ``col`` optional).
    figsize : (float, float), optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import evalmix
    >>> df = evalmix.simulate.glmm_runs(3, 30, 2, slices={"language": ["EN", "ES"]}, rng=1)
    >>> fig = accuracy_intervals(evalmix.accuracy(df, ["model", "language"]), hue="language")
    >>> fig.axes[0].get_xlabel()
    'accuracy (%, 95% CI)'
    """
    plt = _plt()
    tab = _frame(table)
    lo, hi = _interval(tab)
    tab = tab.assign(_lo=lo, _hi=hi)
    ys = list(tab.groupby(y, observed=True, sort=False)["estimate"].mean().sort_values().index)
    hues = _levels(tab[hue]) if hue else [None]
    panels = [(None, tab)] if col is None else [(k, tab[tab[col] == k]) for k in _levels(tab[col])]
    pal = colours(hues)
    width = figsize[0] if figsize else COLUMN_WIDTH if len(panels) == 1 and text_width(ys) < 1.0 else PAGE_WIDTH
    fig, axes = plt.subplots(1, len(panels), sharey=True, squeeze=False,
                             figsize=figsize or (width, 0.25 * len(ys) * max(1, len(hues)) ** 0.5 + 1.1))
    step = 0.7 / max(1, len(hues))
    for ax, (key, g) in zip(axes[0], panels):
        for j, h in enumerate(hues):
            sub = (g if h is None else g[g[hue] == h]).set_index(y).reindex(ys)
            pos = np.arange(len(ys)) + (j - (len(hues) - 1) / 2) * step
            c = pal[h] if h is not None else colour(0)
            ax.hlines(pos, sub["_lo"].to_numpy(float) * 100, sub["_hi"].to_numpy(float) * 100,
                      color=c, lw=1)
            ax.plot(sub["estimate"].to_numpy(float) * 100, pos, "o", ms=3.5, color=c,
                    label=None if h is None else figure_text(h))
        ax.set_yticks(np.arange(len(ys)), [figure_text(v) for v in ys])
        ax.set_xlabel("accuracy (%, 95% CI)")
        ax.set_xlim(0, 100)
        ax.grid(axis="x", lw=0.4, alpha=0.4)
        if key is not None:
            ax.set_title(figure_text(wrap(f"{col} = {key}", (width - text_width(ys)) / len(panels) - 0.3)))
    if hue:
        fig.legend(*axes[0, 0].get_legend_handles_labels(), title=figure_text(hue), loc="outside lower center",
                   ncol=min(len(hues), 6))
    return fig


@styled
def delta_bic_bars(comparison: ModelComparison | pd.DataFrame, *, figsize: tuple[float, float] | None = None) -> Figure:
    """ΔBIC of each candidate model against the best one (the paper's Figure 2, Supp. Figure 1).

    Bars are labelled with ΔBIC and the BIC weight (Kass & Raftery read ΔBIC > 2 as positive, > 6 as
    strong and > 10 as very strong evidence against a model).

    Parameters
    ----------
    comparison : ModelComparison or DataFrame
        From :func:`evalmix.compare_models` (columns ``name``, ``delta_bic``, ``bic_weight``).
    figsize : (float, float), optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> tab = pd.DataFrame({"name": ["a", "b"], "delta_bic": [0.0, 9.0], "bic_weight": [0.99, 0.01]})
    >>> fig = delta_bic_bars(tab)
    >>> [t.get_text() for t in fig.axes[0].texts][:2]
    ['0.0 (w = 0.99)', '9.0 (w = 0.01)']
    """
    plt = _plt()
    tab = _frame(comparison).sort_values("delta_bic", kind="stable").reset_index(drop=True)
    n = len(tab)
    # the bars keep about 3 inches whatever the length of the formulas beside them
    width = min(PAGE_WIDTH, max(COLUMN_WIDTH * 1.3, text_width(tab["name"].astype(str).tolist()) + 3.2))
    fig, ax = plt.subplots(figsize=figsize or (width, 0.3 * n + 1.0))
    pos = np.arange(n)[::-1]
    d = tab["delta_bic"].to_numpy(float)
    ax.barh(pos, d, color=[colour(0) if v == 0 else "#9ECAE1" for v in d], height=0.6,
            edgecolor=colour(0), lw=0.6)
    top = max(float(d.max()), 12.0)
    for p, v, w in zip(pos, d, tab["bic_weight"].to_numpy(float)):
        ax.text(v + top * 0.01, p, f"{v:.1f} (w = {w:.2f})", va="center", fontsize=7)
    ax.set_xlim(0, top * 1.3)
    ax.set_yticks(pos, [figure_text(v) for v in tab["name"]])
    ax.set_xlabel("ΔBIC against the best model (BIC units; lower is better)")
    return fig


def _contrast_label(text: str) -> str:
    m = re.fullmatch(r"\((.*)\) - \((.*)\)", str(text))
    if m:
        return f"{m.group(1)} vs {m.group(2)}"
    return str(text).replace(" - ", " vs ")


@styled
def odds_ratio_forest(contrasts: Contrasts | pd.DataFrame, *, by: str | None = None, alpha: float = 0.05,
                      max_cols: int = 4, figsize: tuple[float, float] | None = None) -> Figure:
    """Forest plot of odds ratios with their intervals (the paper's Figure 3, Supp. Figure 2).

    Odds ratios on a log axis (at least three labelled ticks) with a reference line at 1;
    contrasts whose (adjusted) p-value is below ``alpha`` are drawn in blue, the others in orange,
    and the legend says whether, and by which method, the p-values were adjusted.  With ``by`` one panel per level.

    Parameters
    ----------
    contrasts : Contrasts or DataFrame
        From :func:`evalmix.contrast` on a logit fit (``odds_ratio`` and its interval).
    by : str, optional
        Column whose levels get a panel each (a ``by`` variable of the contrasts).
    alpha : float
        Significance level for the colouring.
    max_cols : int
        Panels per row.
    figsize : (float, float), optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> tab = pd.DataFrame({"contrast": ["(b) - (a)", "(c) - (a)"], "odds_ratio": [0.5, 1.1],
    ...                     "or_conf_low": [0.3, 0.7], "or_conf_high": [0.8, 1.7], "p_adjusted": [0.004, 0.6]})
    >>> fig = odds_ratio_forest(tab)
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ['b vs a', 'c vs a']
    """
    plt = _plt()
    tab = _frame(contrasts)
    lo, hi = _interval(tab, "or_")
    pcol = first_column(tab, "p_adjusted", "p_value", "p")
    adjust = getattr(contrasts, "adjust", None) if not isinstance(contrasts, pd.DataFrame) else None
    tab = tab.assign(_lo=lo, _hi=hi, _sig=tab[pcol].to_numpy(float) < alpha)
    labels = list(dict.fromkeys(tab["contrast"]))
    panels = [(None, tab)] if by is None else [(k, tab[tab[by] == k]) for k in _levels(tab[by])]
    n = len(panels)
    shown = [_contrast_label(v) for v in labels]
    ncol, label_w = panel_columns(n, shown, max_cols=max_cols)
    nrow = -(-n // ncol)
    width = figsize[0] if figsize else panel_figure_width(ncol, label_w)
    h = figsize[1] / nrow if figsize else 0.18 * len(labels) + 0.7
    fig, axes = _grid(plt, n, ncol, width / ncol, h, sharex=True, sharey=True)
    pos = np.arange(len(labels))[::-1]
    where = dict(zip(labels, pos))
    for ax, (key, g) in zip(axes.ravel(), panels):
        y = g["contrast"].map(where).to_numpy(float)
        for sig, c, name in ((True, colour(0), p_value_label(pcol, alpha, True, adjust)),
                             (False, colour(1), p_value_label(pcol, alpha, False, adjust))):
            m = g["_sig"].to_numpy() == sig
            if m.any():
                ax.hlines(y[m], g["_lo"].to_numpy(float)[m], g["_hi"].to_numpy(float)[m], color=c, lw=1)
                ax.plot(g["odds_ratio"].to_numpy(float)[m], y[m], "o", ms=3.5, color=c, label=name)
        ax.axvline(1, color="black", lw=0.7, ls="--")
        ax.set_xscale("log")
        if key is not None:
            ax.set_title(figure_text(wrap(str(key), panel_title_width(ncol, label_w) if not figsize else width / ncol - 0.3)))
    axes[0, 0].set_yticks(pos, [figure_text(v) for v in shown])
    for ax in axes.ravel():  # at least three plain numbers (0.5, 1, 2), not powers of ten
        log_ticks(ax.xaxis)
    hide_unused(axes, n)
    shared_xlabel(fig, axes, n, "odds ratio (log scale, 95% CI)")
    handles, names = [], []
    for ax in axes.ravel():
        for hd, nm in zip(*ax.get_legend_handles_labels()):
            if nm not in names:
                handles.append(hd)
                names.append(nm)
    if handles:
        fig.legend(handles, names, loc="outside upper center", ncol=len(handles))
    return fig


@styled
def marginal_means(emm: EMMeans | pd.DataFrame, *, sort: bool = True, percent: bool = True,
                   figsize: tuple[float, float] | None = None, scale: str | None = None) -> Figure:
    """Estimated marginal means with their intervals as horizontal bars (the paper's Figure 4).

    Parameters
    ----------
    emm : EMMeans or DataFrame
        From :func:`evalmix.inference.emmeans` with ``type="response"`` (probabilities); one spec column.
    sort : bool
        Order the levels by their mean (highest on top).
    percent : bool
        Show probabilities as percentages (ignored with ``scale``).
    figsize : (float, float), optional
    scale : str, optional
        Means on another scale than a probability (a mean rating, a score): the axis label, e.g.
        ``"mean rating (1-5, 95% CI)"``.  The means are then dots with their intervals on an axis fitted to
        them, not bars from 0 (a bar's length means nothing on a rating scale).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> tab = pd.DataFrame({"domain": ["x", "y"], "estimate": [0.3, 0.8], "conf_low": [0.1, 0.6],
    ...                     "conf_high": [0.6, 0.9]})
    >>> fig = marginal_means(tab)
    >>> [t.get_text() for t in fig.axes[0].get_yticklabels()]
    ['x', 'y']
    """
    plt = _plt()
    tab = _frame(emm)
    lo, hi = _interval(tab)
    specs = list(getattr(emm, "specs", ())) or [c for c in tab.columns if not pd.api.types.is_numeric_dtype(tab[c])][:1]
    name = specs[0]
    tab = tab.assign(_lo=lo, _hi=hi)
    if sort:
        tab = tab.sort_values("estimate", kind="stable")
    k = 100.0 if percent and scale is None else 1.0  # a rating or score is shown as it is
    est = tab["estimate"].to_numpy(float) * k
    width = min(PAGE_WIDTH, max(COLUMN_WIDTH, text_width(tab[name].astype(str).tolist()) + 2.6))
    fig, ax = plt.subplots(figsize=figsize or (width, 0.25 * len(tab) + 0.9))
    pos = np.arange(len(tab))
    err = [est - tab["_lo"].to_numpy(float) * k, tab["_hi"].to_numpy(float) * k - est]
    if scale is not None:
        ax.errorbar(est, pos, xerr=err, fmt="o", color=colour(0), ecolor="black", lw=0.9, capsize=2, ms=4)
        ax.set_yticks(pos, [figure_text(v) for v in tab[name]])
        ax.set_xlabel(scale)
        ax.set_ylabel(figure_text(name))
        return fig
    ax.barh(pos, est, color="#9ECAE1", edgecolor=colour(0), lw=0.6, height=0.6)
    ax.errorbar(est, pos, xerr=err, fmt="none", ecolor="black", lw=0.9, capsize=2)
    ax.set_yticks(pos, [figure_text(v) for v in tab[name]])
    ax.set_xlim(0, k)
    ax.set_xlabel(f"marginal mean {'(%' if percent else '(probability'}, 95% CI)")
    ax.set_ylabel(figure_text(name))
    return fig


@styled
def accuracy_heatmap(table: pd.DataFrame | Result, *, row: str = "model", col: str = "domain",
                     value: str = "estimate", figsize: tuple[float, float] | None = None) -> Figure:
    """Accuracy of each ``row`` level in each ``col`` level as an annotated heatmap (Figure 5).

    Rows are ordered by their mean (best on top), columns by theirs (easiest on the left); the
    colour scale is cividis (readable in grey and under colour-vision deficiencies).

    Parameters
    ----------
    table : DataFrame or result
        From :func:`evalmix.accuracy` grouped by ``[row, col]``.
    row, col : str
        Columns for the heatmap's rows and columns.
    value : str
        Column with the accuracy (0-1).
    figsize : (float, float), optional

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> tab = pd.DataFrame({"model": ["a", "a", "b", "b"], "domain": ["x", "y", "x", "y"],
    ...                     "estimate": [0.9, 0.5, 0.4, 0.2]})
    >>> fig = accuracy_heatmap(tab)
    >>> [t.get_text() for t in fig.axes[0].texts]
    ['90', '50', '40', '20']
    """
    plt = _plt()
    tab = _frame(table)
    wide = tab.pivot_table(index=row, columns=col, values=value, observed=True, aggfunc="mean")
    wide = wide.loc[wide.mean(axis=1).sort_values(ascending=False).index,
                    wide.mean(axis=0).sort_values(ascending=False).index]
    nr, nc = wide.shape
    row_w = text_width([str(r) for r in wide.index])
    col_w = text_width([str(c) for c in wide.columns])
    # column names at 35 degrees while they are short; upright beyond (slanted long names would
    # run into each other's boxes), the figure growing by their length
    slant = col_w <= 0.9
    fig, ax = plt.subplots(figsize=figsize or (min(PAGE_WIDTH, 0.55 * nc + 1.6 + row_w),
                                               0.2 * nr + 1.0 + (0.6 * col_w if slant else col_w)))
    vals = wide.to_numpy(float) * 100
    im = ax.imshow(vals, cmap="cividis", vmin=0, vmax=100, aspect="auto")
    for i in range(nr):
        for j in range(nc):
            v = vals[i, j]
            if np.isfinite(v):
                ax.text(j, i, f"{v:.0f}", ha="center", va="center", fontsize=6.5,
                        color="black" if v > 55 else "white")
    ax.set_xticks(np.arange(nc), [figure_text(c) for c in wide.columns], rotation=35 if slant else 90,
                  ha="right" if slant else "center", rotation_mode="anchor" if slant else "default")
    ax.set_yticks(np.arange(nr), [figure_text(r) for r in wide.index])
    ax.set_xlabel(figure_text(col))
    ax.spines[:].set_visible(False)
    bar = fig.colorbar(im, ax=ax, shrink=0.9, pad=0.02)
    bar.set_label("accuracy (%)")
    return fig

