"""evalmix: trustworthy statistics for repeated LLM evaluation runs.

``import evalmix`` is cheap: the public names below are imported from their modules on first use
(PEP 562), so a script that only reads a table does not pay for SciPy, the GLMM engine or PyMC.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

from .errors import (
    ArgumentError,
    ArgumentTypeError,
    ConvergenceWarning,
    DataError,
    DataWarning,
    FitWarning,
    FormulaError,
    SamplingWarning,
    SingularFitWarning,
)

__version__ = "0.1.0"

# public name -> module that owns it (relative to the package)
_EXPORTS: dict[str, str] = {
    # the runs table and descriptive accuracy
    "RunsSchema": "data", "ensure_runs": "data", "load_table": "data", "read_runs": "data",
    "schema_of": "data",
    "aggregate_runs": "scan",
    "AccuracyTable": "descriptive", "accuracy": "descriptive", "binom_ci": "descriptive",
    # paper-ready tables
    "format_p": "tables", "to_latex": "tables", "to_markdown": "tables",
    # mixed models
    "GlmerControl": "glmm", "GlmerResult": "glmm", "glmer": "glmm",
    "LmerResult": "lmm", "lmer": "lmm",
    "ClmmEMMeans": "ordinal", "ClmmResult": "ordinal", "clmm": "ordinal", "clmm_emmeans": "ordinal", "FitManyResult": "fit_many", "fit_many": "fit_many",
    "GlmmTMBResult": "tmb", "OverdispersionCheck": "tmb", "check_overdispersion": "tmb", "glmmtmb": "tmb",
    # log loaders (Inspect AI, lm-evaluation-harness, HELM) and format detection
    "read_helm": "io", "read_inspect": "io", "read_lm_eval": "io", "read_logs": "io",
    "read_openai_evals": "io", "read_inspect_evals": "io", "read_arena_battles": "io",
    # run-to-run reliability, leaderboard stability
    "rank_instability": "ranking", "rank_uncertainty": "ranking", "rank_uncertainty_glmm": "ranking",
    "flip_rate": "reliability", "icc": "reliability", "latent_icc": "reliability",
    # comparisons, resampling, multiplicity, agreement, power and calibration
    "cohens_d": "comparisons", "compare_pair": "comparisons", "friedman": "comparisons",
    "mcnemar": "comparisons", "paired_t_runs": "comparisons", "permutation_test": "comparisons",
    "wilcoxon": "comparisons",
    "bootstrap_ci": "resampling", "cluster_bootstrap": "resampling",
    "instance_bootstrap": "resampling", "paired_bootstrap": "resampling", "run_level_ci": "resampling",
    "adjust_pvalues": "multiplicity",
    "cohen_kappa": "agreement", "fleiss_kappa": "agreement", "krippendorff_alpha": "agreement",
    "power_clustered": "power", "power_paired_proportions": "power", "power_two_proportions": "power",
    "sample_size_clustered": "power", "sample_size_paired_proportions": "power",
    "sample_size_two_proportions": "power",
    "calibrate": "calibration", "coverage_study": "calibration",
    # inference on fitted models: marginal means, contrasts, Wald tests, model selection
    "Contrasts": "emmeans", "EMMeans": "emmeans", "contrast": "emmeans", "emmeans": "emmeans",
    "ContrastRow": "emmeans", "contrast_families": "emmeans", "register_contrast": "emmeans",
    "reference_grid": "emmeans", "regrid": "emmeans", "ref_grid": "grid", "RefGrid": "grid",
    "LinearHypothesis": "fitted", "linear_hypothesis": "fitted",
    "AnovaTable": "selection", "ModelComparison": "selection", "anova": "selection",
    "bic_evidence": "selection", "compare_models": "selection",
    # leaderboards: simultaneous rank sets and tie groups; errored samples
    "RankSets": "leaderboard", "rank_sets": "leaderboard", "rank_sets_draws": "leaderboard",
    "rank_sets_glmm": "leaderboard",
    "rank_sets_normal": "leaderboard", "rank_sets_posterior": "leaderboard", "tie_groups": "leaderboard",
    # pairwise-preference (arena) leaderboards: Bradley-Terry ratings
    "BradleyTerryResult": "arena", "bradley_terry": "arena", "read_battles": "arena",
    "ErroredAccuracy": "descriptive", "accuracy_bounds": "descriptive",
    # the whole study in one call: tables, figures and the HTML page
    "Report": "reporting", "report": "reporting",
    # pass@k and pass^k
    "PassKResult": "passk", "pass_k": "passk", "pass_k_model": "passk",
    # sources of noise: items, templates, runs, judge passes
    "VarianceSources": "variance", "variance_sources": "variance", "plan_sources": "variance",
    # LLM-as-judge scores corrected by a few human labels (prediction-powered inference)
    "PPICoverage": "ppi", "PPIEstimates": "ppi", "ppi_coverage_study": "ppi", "ppi_difference": "ppi",
    "ppi_mean": "ppi", "simulate_judged": "ppi",
    # several judges in one model: bias, interaction, agreement, variance share and the planner
    "JudgeAgreement": "judges", "JudgeParts": "judges", "JudgePlan": "judges", "JudgeStudy": "judges",
    "judge_agreement": "judges",
    "judge_components": "judges", "judge_components_from_fit": "judges", "judge_plan_components": "judges",
    "judge_se": "judges", "judge_study": "judges", "plan_judges": "judges",
    "read_mt_bench": "io",
    # item response theory with repeated runs: 2PL/1PL fits, item information, subset selection
    "IrtFit": "irt", "SubsetAccuracy": "irt", "adaptive_accuracy": "irt", "estimate_accuracy": "irt",
    "fit_irt": "irt", "item_information": "irt", "select_items": "irt", "IrtPosterior": "irt",
    "fit_irt_bayes": "irt",
    # agent benchmarks and other harnesses
    "read_lighteval": "io", "read_mteb": "io", "read_opencompass": "io", "read_swebench": "io", "read_tau_bench": "io",
    # anytime-valid confidence sequences and the stopping rule
    "SequenceResult": "sequential", "confidence_sequence": "sequential", "sequential_accuracy": "sequential",
    "sequential_difference": "sequential",
    # variance reduction: a proxy score with a known mean as a control variate
    "ControlVariateResult": "control_variates", "control_variate_accuracy": "control_variates",
    "control_variate_difference": "control_variates", "control_variate_mean": "control_variates",
}
# public subpackages and modules reached as attributes, imported on first use like the names above
# (``evalmix.io.read_logs``, ``evalmix.bayes.glmer``); ``emmeans`` and ``fit_many`` stay the functions
# of those names, and ``evalmix.tests`` is a deprecated alias left out
_SUBPACKAGES = {"bayes", "cli", "glmm", "integrations", "io", "lmm", "model", "ordinal", "plots", "simulate", "tmb"}
_SUBMODULES = _SUBPACKAGES | {
    "agreement", "arena", "arguments", "calibration", "comparisons", "control_variates", "data", "descriptive", "draws", "errors",
    "fitted", "grid", "irt", "judges", "leaderboard", "links", "methods", "multiplicity", "paired", "parallel",
    "parquet", "passk", "power", "ppi", "ranking", "reliability", "repetitions", "reporting", "resampling",
    "scan", "selection", "sequential", "status", "tables", "variance"}

__all__ = sorted(
    ["ArgumentError", "ArgumentTypeError", "ConvergenceWarning", "DataError", "DataWarning", "FitWarning",
     "FormulaError", "SamplingWarning", "SingularFitWarning", *_EXPORTS, "bayes", "glmm", "io", "plots", "power",
     "reporting", "repetitions", "simulate"])


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{name}", __name__)
    else:
        raise AttributeError(f"module 'evalmix' has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | _SUBMODULES)


class _Package(types.ModuleType):
    """The package module; importing the submodule ``evalmix.emmeans`` must not hide the function
    ``evalmix.emmeans`` of the same name (the import system binds a loaded submodule on its parent)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and _EXPORTS.get(name) == name:
            return  # the function stays reachable through __getattr__
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


if TYPE_CHECKING:  # static type checkers and IDEs see the eager imports
    from . import (
        agreement, arena, arguments, bayes, calibration, cli, comparisons, control_variates, data, descriptive, draws, errors,
        fitted, glmm, grid, integrations, io, irt, judges, leaderboard, links, lmm, methods, model, multiplicity,
        ordinal, paired, parallel, parquet, passk, plots, power, ppi, ranking, reliability, repetitions, reporting,
        resampling, scan, selection, sequential, simulate, status, tables, tmb, variance,
    )
    from .agreement import cohen_kappa, fleiss_kappa, krippendorff_alpha
    from .arena import BradleyTerryResult, bradley_terry, read_battles
    from .calibration import calibrate, coverage_study
    from .control_variates import (
        ControlVariateResult, control_variate_accuracy, control_variate_difference, control_variate_mean,
    )
    from .irt import (
        IrtFit, IrtPosterior, SubsetAccuracy, adaptive_accuracy, estimate_accuracy, fit_irt, fit_irt_bayes,
        item_information, select_items,
    )
    from .comparisons import (
        cohens_d, compare_pair, friedman, mcnemar, paired_t_runs, permutation_test, wilcoxon,
    )
    from .data import RunsSchema, ensure_runs, load_table, read_runs, schema_of
    from .descriptive import AccuracyTable, ErroredAccuracy, accuracy, accuracy_bounds, binom_ci
    from .emmeans import (
        ContrastRow, Contrasts, EMMeans, contrast, contrast_families, emmeans, reference_grid, regrid,
        register_contrast,
    )
    from .fitted import LinearHypothesis, linear_hypothesis
    from .grid import RefGrid, ref_grid
    from .glmm import GlmerControl, GlmerResult, glmer
    from .lmm import LmerResult, lmer
    from .ordinal import ClmmEMMeans, ClmmResult, clmm, clmm_emmeans
    from .tmb import GlmmTMBResult, OverdispersionCheck, check_overdispersion, glmmtmb
    from .fit_many import FitManyResult, fit_many
    from .scan import aggregate_runs
    from .io import (
        read_arena_battles, read_helm, read_inspect, read_inspect_evals, read_lighteval, read_lm_eval, read_logs,
        read_mt_bench, read_mteb, read_openai_evals, read_opencompass, read_swebench, read_tau_bench,
    )
    from .judges import (
        JudgeAgreement, JudgeParts, JudgePlan, JudgeStudy, judge_agreement, judge_components,
        judge_components_from_fit, judge_plan_components, judge_se, judge_study, plan_judges,
    )
    from .leaderboard import (
        RankSets, rank_sets, rank_sets_draws, rank_sets_glmm, rank_sets_normal, rank_sets_posterior,
        tie_groups,
    )
    from .multiplicity import adjust_pvalues
    from .passk import PassKResult, pass_k, pass_k_model
    from .ppi import (
        PPICoverage, PPIEstimates, ppi_coverage_study, ppi_difference, ppi_mean, simulate_judged,
    )
    from .power import (
        power_clustered, power_paired_proportions, power_two_proportions, sample_size_clustered,
        sample_size_paired_proportions, sample_size_two_proportions,
    )
    from .ranking import rank_instability, rank_uncertainty, rank_uncertainty_glmm
    from .sequential import SequenceResult, confidence_sequence, sequential_accuracy, sequential_difference
    from .reliability import flip_rate, icc, latent_icc
    from .reporting import Report, report
    from .resampling import (
        bootstrap_ci, cluster_bootstrap, instance_bootstrap, paired_bootstrap, run_level_ci,
    )
    from .selection import AnovaTable, ModelComparison, anova, bic_evidence, compare_models
    from .tables import format_p, to_latex, to_markdown
    from .variance import VarianceSources, plan_sources, variance_sources
