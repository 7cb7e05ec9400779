"""The names of the methods that evalmix's functions accept, in a module that imports nothing.

The functions that implement the methods import their lists from here, and the command line reads
them from here too, so that a wrong ``--ci``, ``--adjust`` or ``--vcov`` is answered before NumPy,
pandas or SciPy load.

Examples
--------
>>> from evalmix.core.methods import CI_METHODS
>>> CI_METHODS[0]
'wilson'
"""

from __future__ import annotations

from typing import Literal

__all__ = ["ADJUST_METHODS", "CI_METHODS", "CS_METHODS", "CsMethod", "IRT_MODELS", "IRT_TARGETS", "IrtModel",
           "IrtTarget", "ITEM_SELECTIONS", "ItemSelection", "MISSING_POLICIES", "PPI_METHODS", "P_ADJUST_METHODS", "PpiMethod", "VCOV_METHODS",
           "DIF_KINDS", "DifKind", "HEALTH_METHODS", "HealthMethod"]

#: What to do with a row holding a missing value: ``missing=`` of every function taking a table.
MISSING_POLICIES = ("raise", "drop")
#: Intervals for an accuracy (:func:`evalmix.stats.descriptive.binom_ci`, :func:`evalmix.accuracy`).
CI_METHODS = ("wilson", "wilson_cc", "clopper_pearson", "jeffreys", "agresti_coull", "wald", "cluster")
#: Adjustments of a plain vector of p-values (R's ``p.adjust`` methods, plus Sidak).
P_ADJUST_METHODS = ("holm", "hochberg", "BH", "BY", "bonferroni", "sidak", "none")
#: Every adjustment of a family of contrasts (:func:`evalmix.stats.multiplicity.adjust_family`, :func:`evalmix.contrast`).
ADJUST_METHODS = P_ADJUST_METHODS + ("tukey", "dunnettx", "mvt")
#: Covariance of the fixed effects of a GLMM fit (:func:`evalmix.glmer`'s ``vcov_method``).
VCOV_METHODS = ("hessian", "hessian_exact", "rx")
#: Estimators of :func:`evalmix.ppi_mean` and :func:`evalmix.ppi_difference`.
PpiMethod = Literal["ppi++", "ppi", "classical", "judge_only"]
PPI_METHODS: tuple[PpiMethod, ...] = ("ppi++", "ppi", "classical", "judge_only")
#: Confidence sequences of :func:`evalmix.confidence_sequence` (hedged-capital betting, empirical
#: Bernstein, normal mixture).
CsMethod = Literal["betting", "empirical_bernstein", "normal_mixture"]
CS_METHODS: tuple[CsMethod, ...] = ("betting", "empirical_bernstein", "normal_mixture")
#: Item response models of :func:`evalmix.fit_irt`.
IrtModel = Literal["2pl", "1pl"]
IRT_MODELS: tuple[IrtModel, ...] = ("2pl", "1pl")
#: Item selections of :func:`evalmix.select_items`.
ItemSelection = Literal["information", "stratified", "random"]
ITEM_SELECTIONS: tuple[ItemSelection, ...] = ("information", "stratified", "random")
#: What :func:`evalmix.estimate_accuracy` estimates: the accuracy a full run of the benchmark
#: would observe, or the model's expected accuracy over runs.
IrtTarget = Literal["observed", "expected"]
IRT_TARGETS: tuple[IrtTarget, ...] = ("observed", "expected")
#: How :func:`evalmix.item_health` estimates item difficulty and discrimination.
HealthMethod = Literal["auto", "2pl", "point_biserial"]
HEALTH_METHODS: tuple[HealthMethod, ...] = ("auto", "2pl", "point_biserial")
#: The item shifts a logistic-regression DIF test looks for (:func:`evalmix.logistic_dif`).
DifKind = Literal["uniform", "both"]
DIF_KINDS: tuple[DifKind, ...] = ("uniform", "both")
