"""Figures of benchmark drift and contamination: per-model intervals against a margin or zero."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from .style import colour, figure_text, legend_columns, panel_columns, panel_figure_width, styled

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

    from ..studies.contamination import ContaminationResult
    from ..studies.drift import DriftResult

__all__ = ["contamination_plot", "drift_plot"]


def _forest(table: pd.DataFrame, parts: list[tuple[str, str, str, str, str]], flags: pd.Series,
            flag_names: tuple[str, str], xlabel: str) -> tuple[Figure, Axes, np.ndarray]:
    """Models down the left, one interval per part (estimate, low, high columns, colour, legend
    name) offset within each model's row; the first part's markers are filled where ``flags``."""
    import matplotlib.pyplot as plt

    labels = [figure_text(m) for m in table["model"]]
    _, label_w = panel_columns(1, labels)
    width = panel_figure_width(1, label_w)
    fig, ax = plt.subplots(figsize=(width, 0.22 * len(table) * max(1, len(parts) // 2 + 1) + 1.1),
                           layout="constrained")
    pos = np.arange(len(table))[::-1].astype(float)
    step = 0.22 if len(parts) > 1 else 0.0
    for k, (est, lo, hi, col, name) in enumerate(parts):
        y = pos + step * ((len(parts) - 1) / 2 - k)
        ok = table[est].notna().to_numpy()
        ax.hlines(y[ok], table[lo].to_numpy(float)[ok], table[hi].to_numpy(float)[ok], color=col, lw=1)
        if k == 0:
            filled = ok & flags.to_numpy(bool)
            ax.plot(table[est].to_numpy(float)[filled], y[filled], "o", ms=4, color=col,
                    label=f"{name}: {flag_names[0]}")
            ax.plot(table[est].to_numpy(float)[ok & ~filled], y[ok & ~filled], "o", ms=4, mfc="white",
                    color=col, label=f"{name}: {flag_names[1]}")
        else:
            ax.plot(table[est].to_numpy(float)[ok], y[ok], "s", ms=3, color=col, label=name)
    ax.axvline(0, color="black", lw=0.7, ls="--")
    ax.set_yticks(pos, labels)
    ax.set_ylim(-0.7, len(table) - 0.3)
    ax.set_xlabel(xlabel)
    return fig, ax, pos


def _legend(fig: Figure, ax: Axes) -> None:
    handles, names = ax.get_legend_handles_labels()
    keep = [(h, n) for h, n in zip(handles, names) if not n.startswith("_")]
    if keep:
        fig.legend(*zip(*keep), loc="outside upper center", fontsize=7,
                   ncol=legend_columns([n for _, n in keep], fig.get_figwidth() - 0.2, max_cols=2))


@styled
def drift_plot(result: DriftResult | pd.DataFrame, *, margin: float | None = None) -> Figure:
    """Each model's change between two waves with its interval, inside or outside the margin band.

    The grey band is the equivalence margin; a filled marker is a change declared equivalent, an
    open one is not.  With a rejudged wave the judge's drift and the system's change are drawn
    under each model's total change.

    Parameters
    ----------
    result : DriftResult or DataFrame
        From :func:`evalmix.drift` (or its ``to_frame()``, with ``margin=``).
    margin : float, optional
        The margin (default: the result's).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import evalmix
    >>> before, after, rejudged = evalmix.simulate.canary_waves(3, 200, 2, leniency=0.1, rng=1)
    >>> fig = drift_plot(evalmix.drift(before, after, judge=rejudged, margin=0.05))
    >>> fig.axes[0].get_xlabel()
    'change after - before (score points, interval)'
    """
    table = result if isinstance(result, pd.DataFrame) else result.to_frame()
    m = margin if margin is not None else getattr(result, "margin", None)
    parts = [("estimate", "conf_low", "conf_high", colour(0), "change")]
    if "judge_drift" in table.columns:
        parts += [("judge_drift", "judge_conf_low", "judge_conf_high", colour(1), "judge drift"),
                  ("system_change", "system_conf_low", "system_conf_high", colour(2), "system change")]
    fig, ax, _ = _forest(table, parts, table["equivalent"], ("equivalent", "not shown equivalent"),
                         "change after - before (score points, interval)")
    if m is not None:
        ax.axvspan(-m, m, color="0.85", lw=0, zorder=0, label=f"margin +-{m:g}")
    _legend(fig, ax)
    return fig


@styled
def contamination_plot(result: ContaminationResult | pd.DataFrame) -> Figure:
    """Each model's log-odds advantage on its pre-cutoff items with its interval; filled markers
    are the models flagged as contaminated (adjusted one-sided p below alpha).

    Parameters
    ----------
    result : ContaminationResult or DataFrame
        From :func:`evalmix.contamination_test` (or its ``to_frame()``).

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import evalmix
    >>> df = evalmix.simulate.contaminated_runs(150, 1, contamination={2: 1.5}, rng=7)
    >>> fig = contamination_plot(evalmix.contamination_test(df))
    >>> fig.axes[0].get_xlabel()
    'advantage on pre-cutoff items (log-odds, interval)'
    """
    table = result if isinstance(result, pd.DataFrame) else result.to_frame()
    flags = table["contaminated"].fillna(False).astype(bool)
    fig, ax, _ = _forest(table, [("estimate", "conf_low", "conf_high", colour(5), "advantage")], flags,
                         ("contaminated", "not flagged"), "advantage on pre-cutoff items (log-odds, interval)")
    _legend(fig, ax)
    return fig
