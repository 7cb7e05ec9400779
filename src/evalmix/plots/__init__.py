"""Matplotlib figures for evalmix results, one module per method area.

Every function returns a :class:`matplotlib.figure.Figure` drawn in one style
(:mod:`evalmix.plots.style`: the Okabe-Ito palette, labelled axes with units, legends outside the
data, paper-column sizes).  The AI4Math paper's figures map to them as follows: Figure 1
:func:`accuracy_intervals`, Figure 2 and Supplementary Figure 1 :func:`delta_bic_bars`, Figure 3 and
Supplementary Figure 2 :func:`odds_ratio_forest`, Figure 4 :func:`marginal_means`, Figure 5
:func:`accuracy_heatmap`, Figure 6 :func:`flip_rate_bars`, Figure 7 :func:`icc_dots`, Figure 8
:func:`rank_bump` (and :func:`rank_intervals`), Figure 9 :func:`se_curves`.
"""

from __future__ import annotations

from .comparison import critical_difference_plot
from .drift import contamination_plot, drift_plot
from .inference import (
    accuracy_heatmap, accuracy_intervals, delta_bic_bars, marginal_means, odds_ratio_forest,
)
from .reliability import flip_rate_bars, icc_dots, rank_bump, rank_intervals, se_curves
from .sequential import sequence_plot
from .gate import gate_plot
from .health import item_health_plot, version_shift_plot
from .style import paper_style

__all__ = ["accuracy_heatmap", "accuracy_intervals", "contamination_plot", "critical_difference_plot",
           "delta_bic_bars", "drift_plot",
           "flip_rate_bars", "icc_dots", "marginal_means", "odds_ratio_forest", "paper_style",
           "rank_bump", "rank_intervals", "se_curves", "sequence_plot",
           "gate_plot", "item_health_plot", "version_shift_plot"]
