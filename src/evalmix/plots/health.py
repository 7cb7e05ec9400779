"""Figures of benchmark health: the item map with its dead items and the run noise per model, and
the per-item version shifts with the equated scores."""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .style import PAGE_WIDTH, colour, figure_text, styled

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from ..studies.health import ItemHealth, VersionShift

__all__ = ["item_health_plot", "version_shift_plot"]

_REASONS = ("all solve", "none solve", "flat")


@styled
def item_health_plot(result: ItemHealth) -> Figure:
    """Item map (accuracy against discrimination among the top-k, dead items by reason) and the
    run noise per model (the SD of a response between runs, best model first).

    Parameters
    ----------
    result : ItemHealth
        Output of :func:`evalmix.item_health`.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import evalmix
    >>> fig = item_health_plot(evalmix.item_health("data/example_runs.csv", top_k=4))
    >>> [ax.get_xlabel() for ax in fig.axes]
    ['accuracy among the top 4 models', 'run-to-run SD of a response']
    """
    import matplotlib.pyplot as plt

    items, models = result.items, result.models
    height = max(2.6, 0.16 * len(models) + 0.8)
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(PAGE_WIDTH, height), gridspec_kw={"width_ratios": [1.4, 1]})
    live = ~items["dead"].to_numpy()
    y = np.nan_to_num(items["top_discrimination"].to_numpy(dtype=float))
    x = items["top_accuracy"].to_numpy(dtype=float)
    ax.scatter(x[live], y[live], s=10, color=colour(0), alpha=0.7, lw=0, label=f"live ({int(live.sum())})")
    for j, reason in enumerate(_REASONS):
        m = (items["reason"] == reason).to_numpy()
        if m.any():
            ax.scatter(x[m], y[m], s=14, color=colour(j + 1), marker="x" if reason != "flat" else "^", lw=0.9,
                       label=f"{reason} ({int(m.sum())})")
    ax.axhline(result.min_discrimination, color="grey", ls="--", lw=0.8)
    ax.set_xlim(-0.03, 1.03)
    ax.set_xlabel(f"accuracy among the top {result.top_k} models")
    ax.set_ylabel("discrimination among the top-k")
    # headroom above the points for a one-row legend, so that it covers no item
    low, high = float(min(y.min(initial=0.0), result.min_discrimination)), float(y.max(initial=1.0))
    span = max(high - low, 0.5)
    ax.set_ylim(low - 0.06 * span, high + 0.3 * span)
    ax.legend(fontsize=7, loc="upper center", ncol=4, frameon=False, handletextpad=0.2, columnspacing=0.9)
    b = result.benchmark.iloc[0]
    ax.set_title(f"dead {b['dead_share']:.0%}, effective items {b['effective_items']:.0f}, "
                 f"SNR {b['snr']:.3g}", fontsize=8)
    pos = np.arange(len(models))[::-1]
    sd = models["run_sd"].to_numpy(dtype=float)
    bx.scatter(np.nan_to_num(sd), pos, s=14,
               color=[colour(0) if t else colour(7) for t in models["top"]], zorder=3)
    bx.set_yticks(pos)
    bx.set_yticklabels([figure_text(m) for m in models["model"]], fontsize=7)
    bx.set_xlabel("run-to-run SD of a response")
    bx.grid(axis="x", lw=0.4, alpha=0.5)
    return fig


@styled
def version_shift_plot(result: VersionShift) -> Figure:
    """Each item's shift under the other version(s) beyond the systematic one (log-odds, with a
    1.96-SE bar; flagged items highlighted), and each model's accuracy before and after equating.

    Parameters
    ----------
    result : VersionShift
        Output of :func:`evalmix.version_shift`.

    Returns
    -------
    matplotlib.figure.Figure

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import evalmix
    >>> runs, _ = evalmix.simulate.simulate_versions(n_items=20, n_models=6, n_runs=1, rng=2)
    >>> fig = version_shift_plot(evalmix.version_shift(runs))
    >>> fig.axes[1].get_xlabel()
    'accuracy'
    """
    import matplotlib.pyplot as plt

    items, models = result.items, result.models
    fig, (ax, bx) = plt.subplots(1, 2, figsize=(PAGE_WIDTH, max(2.6, 0.16 * len(models) + 0.8)))
    est = items["estimate"].to_numpy(dtype=float)
    se = items["se"].to_numpy(dtype=float)
    ok = np.isfinite(est) & np.isfinite(se) & (se < 10)  # separated items have no usable interval
    keep = np.flatnonzero(ok)
    order = keep[np.argsort(est[keep], kind="stable")]
    flag = items["flagged"].to_numpy()[order]
    xs = np.arange(len(order))
    e, s = est[order], se[order]
    good = np.ones(len(order), dtype=bool)
    ax.errorbar(xs[good & ~flag], e[good & ~flag], yerr=1.96 * s[good & ~flag], fmt="o", ms=2.5, lw=0.6,
                color=colour(0), label="items")
    if (good & flag).any():
        ax.errorbar(xs[good & flag], e[good & flag], yerr=1.96 * s[good & flag], fmt="o", ms=3.5, lw=0.9,
                    color=colour(5), label=f"flagged (BH {result.alpha:g})")
    ax.axhline(0.0, color="grey", lw=0.8)
    ax.set_xlabel("items, by estimated shift" + (f" ({len(est) - len(keep)} separated left out)"
                                                  if len(keep) < len(est) else ""))
    ax.set_ylabel(f"item shift vs {figure_text(result.reference)} (log-odds)")
    ax.legend(fontsize=7, loc="upper left")
    labels = [figure_text(f"{m} ({v})") for m, v in zip(models["model"], models["version"])]
    pos = np.arange(len(models))[::-1]
    bx.scatter(models["accuracy"], pos, s=14, color=colour(0), label="observed", zorder=3)
    bx.scatter(models["equated"], pos, s=14, color=colour(1), marker="D", label="equated", zorder=3)
    bx.set_yticks(pos)
    bx.set_yticklabels(labels, fontsize=7)
    bx.set_xlabel("accuracy")
    bx.legend(fontsize=7, loc="lower right")
    bx.grid(axis="x", lw=0.4, alpha=0.5)
    return fig
