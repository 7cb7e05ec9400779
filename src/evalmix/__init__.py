"""evalmix: trustworthy statistics for repeated LLM evaluation runs.

``import evalmix`` is cheap: the public names below are imported from their modules on first use
(PEP 562), so a script that only reads a table does not pay for SciPy, the GLMM engine or PyMC.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from typing import TYPE_CHECKING, Any

from .core.errors import (
    ArgumentError,
    ArgumentTypeError,
    ConvergenceWarning,
    DataError,
    DataWarning,
    FitWarning,
    FormulaError,
    SamplingWarning,
    SeparationWarning,
    SingularFitWarning,
)

__version__ = "0.1.0"

# public name -> module that owns it (relative to the package)
_EXPORTS: dict[str, str] = {
    # the runs table and descriptive accuracy
    "RunsSchema": "data.runs", "ensure_runs": "data.runs", "load_table": "data.runs", "read_runs": "data.runs",
    "schema_of": "data.runs",
    "aggregate_runs": "data.scan",
    "example_path": "data.examples", "load_example": "data.examples",
    "AccuracyTable": "stats.descriptive", "accuracy": "stats.descriptive", "binom_ci": "stats.descriptive",
    # paper-ready tables
    "format_p": "core.tables", "to_latex": "core.tables", "to_markdown": "core.tables",
    # mixed models
    "MixedResult": "mixed.result", "ConfidenceIntervals": "mixed.result", "CoefTable": "mixed.result",
    "GlmerControl": "glmm", "GlmerResult": "glmm", "glmer": "glmm",
    "LmerResult": "lmm", "lmer": "lmm",
    "ClmmEMMeans": "ordinal", "ClmmResult": "ordinal", "clmm": "ordinal", "clmm_emmeans": "ordinal", "FitManyResult": "studies.fit_many", "fit_many": "studies.fit_many",
    "GlmmTMBResult": "tmb", "OverdispersionCheck": "tmb", "check_overdispersion": "tmb", "glmmtmb": "tmb",
    # log loaders (Inspect AI, lm-evaluation-harness, HELM) and format detection
    "read_helm": "io", "read_inspect": "io", "read_lm_eval": "io", "read_logs": "io",
    "read_openai_evals": "io", "read_inspect_evals": "io", "read_arena_battles": "io",
    # run-to-run reliability, leaderboard stability
    "rank_instability": "studies.ranking", "rank_uncertainty": "studies.ranking", "rank_uncertainty_glmm": "studies.ranking",
    "flip_rate": "studies.reliability", "icc": "studies.reliability", "latent_icc": "studies.reliability",
    # comparisons, resampling, multiplicity, agreement, power and calibration
    "cohens_d": "stats.comparisons", "compare_pair": "stats.comparisons", "friedman": "stats.comparisons",
    "mcnemar": "stats.comparisons", "paired_t_runs": "stats.comparisons", "permutation_test": "stats.comparisons",
    "wilcoxon": "stats.comparisons",
    "bootstrap_ci": "stats.resampling", "cluster_bootstrap": "stats.resampling",
    "instance_bootstrap": "stats.resampling", "paired_bootstrap": "stats.resampling", "run_level_ci": "stats.resampling",
    "adjust_pvalues": "stats.multiplicity",
    "cohen_kappa": "stats.agreement", "fleiss_kappa": "stats.agreement", "krippendorff_alpha": "stats.agreement",
    "power_clustered": "studies.power", "power_paired_proportions": "studies.power", "power_two_proportions": "studies.power",
    "sample_size_clustered": "studies.power", "sample_size_paired_proportions": "studies.power",
    "sample_size_two_proportions": "studies.power",
    "calibrate": "studies.calibration", "coverage_study": "studies.calibration",
    # inference on fitted models: marginal means, contrasts, Wald tests, model selection
    "Contrasts": "inference.emmeans", "EMMeans": "inference.emmeans", "contrast": "inference.emmeans", "emmeans": "inference.emmeans",
    "ContrastRow": "inference.emmeans", "contrast_families": "inference.emmeans", "register_contrast": "inference.emmeans",
    "reference_grid": "inference.emmeans", "regrid": "inference.emmeans", "ref_grid": "inference.emmeans", "RefGrid": "mixed.grid",
    "LinearHypothesis": "mixed.fitted", "linear_hypothesis": "mixed.fitted",
    "AnovaTable": "inference.selection", "ModelComparison": "inference.selection", "anova": "inference.selection",
    "bic_evidence": "inference.selection", "compare_models": "inference.selection",
    # leaderboards: simultaneous rank sets and tie groups; errored samples
    "RankSets": "studies.leaderboard", "rank_sets": "studies.leaderboard", "rank_sets_draws": "studies.leaderboard",
    "rank_sets_glmm": "studies.leaderboard",
    "rank_sets_normal": "studies.leaderboard", "rank_sets_posterior": "studies.leaderboard", "tie_groups": "studies.leaderboard",
    # pairwise-preference (arena) leaderboards: Bradley-Terry ratings
    "BradleyTerryResult": "studies.arena", "bradley_terry": "studies.arena", "read_battles": "studies.arena",
    "ErroredAccuracy": "stats.descriptive", "accuracy_bounds": "stats.descriptive",
    # the whole study in one call: tables, figures and the HTML page
    "Report": "reporting", "report": "reporting",
    # pass@k and pass^k
    "PassKResult": "studies.passk", "pass_k": "studies.passk", "pass_k_model": "studies.passk",
    # sources of noise: items, templates, runs, judge passes
    "VarianceSources": "studies.variance", "variance_sources": "studies.variance", "plan_sources": "studies.variance",
    # LLM-as-judge scores corrected by a few human labels (prediction-powered inference)
    "PPICoverage": "studies.ppi", "PPIEstimates": "studies.ppi", "ppi_coverage_study": "studies.ppi", "ppi_difference": "studies.ppi",
    "ppi_mean": "studies.ppi", "simulate_judged": "studies.ppi",
    # several judges in one model: bias, interaction, agreement, variance share and the planner
    "JudgeAgreement": "studies.judges", "JudgeParts": "studies.judges", "JudgePlan": "studies.judges", "JudgeStudy": "studies.judges",
    "judge_agreement": "studies.judges",
    "judge_components": "studies.judges", "judge_components_from_fit": "studies.judges", "judge_plan_components": "studies.judges",
    "judge_se": "studies.judges", "judge_study": "studies.judges", "plan_judges": "studies.judges",
    "read_mt_bench": "io",
    # item response theory with repeated runs: 2PL/1PL fits, item information, subset selection
    "IrtFit": "studies.irt", "SubsetAccuracy": "studies.irt", "adaptive_accuracy": "studies.irt", "estimate_accuracy": "studies.irt",
    "fit_irt": "studies.irt", "item_information": "studies.irt", "select_items": "studies.irt", "IrtPosterior": "studies.irt",
    "fit_irt_bayes": "studies.irt",
    # agent benchmarks and other harnesses
    "read_lighteval": "io", "read_mteb": "io", "read_opencompass": "io", "read_swebench": "io", "read_tau_bench": "io",
    # anytime-valid confidence sequences and the stopping rule
    "SequenceResult": "studies.sequential", "confidence_sequence": "studies.sequential", "sequential_accuracy": "studies.sequential",
    "sequential_difference": "studies.sequential",
    # variance reduction: a proxy score with a known mean as a control variate
    "ControlVariateResult": "studies.control_variates", "control_variate_accuracy": "studies.control_variates",
    "control_variate_difference": "studies.control_variates", "control_variate_mean": "studies.control_variates",
    # drift between waves, and contamination by training data
    "DriftResult": "studies.drift", "drift": "studies.drift",
    "ContaminationResult": "studies.contamination", "contamination_test": "studies.contamination",
    # the release gate: a pre-registered, multi-metric, anytime-valid PASS/FAIL/INCONCLUSIVE verdict
    "GateResult": "studies.gate", "gate": "studies.gate", "read_rule": "studies.gate",
    # benchmark health: dead items, signal-to-noise, run noise per model; version shifts (DIF)
    "ItemHealth": "studies.health", "VersionShift": "studies.health", "item_health": "studies.health",
    "version_shift": "studies.health", "DifResult": "studies.dif", "logistic_dif": "studies.dif",
}
# public subpackages and modules reached as attributes, imported on first use like the names above
# (``evalmix.io.read_logs``, ``evalmix.bayes.glmer``, ``evalmix.power.sample_size_clustered``); the
# layer folders themselves (``evalmix.core``, ``evalmix.studies``...) are reached the same way
_SUBPACKAGES = {"bayes", "cli", "core", "data", "glmm", "inference", "integrations", "io", "lmm", "mixed", "model",
                "ordinal", "plots", "simulate", "stats", "studies", "tmb"}
# modules that moved into the layer folders: old name -> module (relative to the package). As
# attributes of ``evalmix`` they stay public names (``evalmix.power``); imported by their old path
# (``import evalmix.grid``) they still work for one release, with a DeprecationWarning
_MOVED: dict[str, str] = {
    "errors": "core.errors", "arguments": "core.arguments", "methods": "core.methods",
    "_random": "core.seeds", "_result": "core.result", "tables": "core.tables", "parallel": "core.parallel",
    "draws": "core.draws",
    "_slicing": "data.slicing", "parquet": "data.parquet", "scan": "data.scan", "status": "data.status",
    "fitted": "mixed.fitted", "grid": "mixed.grid", "intercepts": "mixed.intercepts",
    "numdiff": "mixed.numdiff", "links": "mixed.links",
    "descriptive": "stats.descriptive", "comparisons": "stats.comparisons", "resampling": "stats.resampling",
    "paired": "stats.paired", "agreement": "stats.agreement", "tests": "stats.comparisons",
    "emmeans": "inference.emmeans", "selection": "inference.selection", "multiplicity": "stats.multiplicity",
    **{name: f"studies.{name}" for name in (
        "reliability", "ranking", "repetitions", "power", "calibration", "leaderboard", "passk", "variance",
        "fit_many", "ppi", "arena", "judges", "irt", "sequential", "control_variates")},
    "glmm.separation": "mixed.separation",  # separation checks of every engine
}
_SUBMODULES: dict[str, str] = {
    **{name: name for name in _SUBPACKAGES}, "reporting": "reporting",
    **{old: new for old, new in _MOVED.items() if not old.startswith("_") and "." not in old and old != "tests"},
}

__all__ = sorted(
    ["ArgumentError", "ArgumentTypeError", "ConvergenceWarning", "DataError", "DataWarning", "FitWarning",
     "FormulaError", "SamplingWarning", "SeparationWarning", "SingularFitWarning", *_EXPORTS, "bayes", "glmm", "io", "plots", "power",
     "reporting", "repetitions", "simulate"])


def __getattr__(name: str) -> Any:
    if name in _EXPORTS:
        value = getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
    elif name in _SUBMODULES:
        value = importlib.import_module(f".{_SUBMODULES[name]}", __name__)
    else:
        raise AttributeError(f"module 'evalmix' has no attribute {name!r}")
    globals()[name] = value  # later look-ups skip this function
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_SUBMODULES))


class _Package(types.ModuleType):
    """The package module; importing a module by the name of a public function (the old path
    ``evalmix.emmeans``) must not hide the function ``evalmix.emmeans`` (the import system binds a
    loaded submodule on its parent)."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and name in _EXPORTS:
            return  # the function stays reachable through __getattr__
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


class _MovedLoader(importlib.abc.Loader):
    """Loads an old module path as the module that now owns it (the same module object, so that
    patches and ``isinstance`` checks agree), with a DeprecationWarning naming the new path."""

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType | None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        import warnings

        old = module.__name__
        new = f"{__name__}.{_MOVED[old.split('.', 1)[1]]}"
        warnings.warn(f"{old} moved to {new}; import it from there (the old path goes in the next release)",
                      DeprecationWarning, stacklevel=2)
        sys.modules[old] = importlib.import_module(new)  # the import system returns what sys.modules holds


class _MovedFinder(importlib.abc.MetaPathFinder):
    """Finds the old paths of the modules that moved into the layer folders."""

    def find_spec(self, fullname: str, path: Any = None, target: Any = None) -> importlib.machinery.ModuleSpec | None:
        head, _, tail = fullname.partition(".")
        if head != __name__ or tail not in _MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _MovedLoader())


if not any(isinstance(f, _MovedFinder) for f in sys.meta_path):
    sys.meta_path.insert(0, _MovedFinder())


if TYPE_CHECKING:  # static type checkers and IDEs see the eager imports
    from .stats import agreement
    from .studies import arena
    from .core import arguments
    from . import bayes
    from .studies import calibration
    from . import cli
    from .stats import comparisons
    from .studies import control_variates
    from .data import runs as data
    from .stats import descriptive
    from .core import draws
    from .core import errors
    from .mixed import fitted
    from . import glmm
    from .mixed import grid
    from . import integrations
    from . import io
    from .studies import irt
    from .studies import judges
    from .studies import leaderboard
    from .mixed import links
    from . import lmm
    from .core import methods
    from . import model
    from .stats import multiplicity
    from . import ordinal
    from .stats import paired
    from .core import parallel
    from .data import parquet
    from .studies import passk
    from . import plots
    from .studies import power
    from .studies import ppi
    from .studies import ranking
    from .studies import reliability
    from .studies import repetitions
    from . import reporting
    from .stats import resampling
    from .data import scan
    from .inference import selection
    from .studies import sequential
    from . import simulate
    from .data import status
    from .core import tables
    from . import tmb
    from .studies import variance
    from .stats.agreement import cohen_kappa, fleiss_kappa, krippendorff_alpha
    from .studies.arena import BradleyTerryResult, bradley_terry, read_battles
    from .studies.calibration import calibrate, coverage_study
    from .studies.control_variates import (
        ControlVariateResult, control_variate_accuracy, control_variate_difference, control_variate_mean,
    )
    from .studies.irt import (
        IrtFit, IrtPosterior, SubsetAccuracy, adaptive_accuracy, estimate_accuracy, fit_irt, fit_irt_bayes,
        item_information, select_items,
    )
    from .stats.comparisons import (
        cohens_d, compare_pair, friedman, mcnemar, paired_t_runs, permutation_test, wilcoxon,
    )
    from .data.runs import RunsSchema, ensure_runs, load_table, read_runs, schema_of
    from .stats.descriptive import AccuracyTable, ErroredAccuracy, accuracy, accuracy_bounds, binom_ci
    from .inference.emmeans import (
        ContrastRow, Contrasts, EMMeans, contrast, contrast_families, emmeans, reference_grid, regrid,
        register_contrast,
    )
    from .mixed.fitted import LinearHypothesis, linear_hypothesis
    from .mixed.grid import RefGrid
    from .inference.emmeans import ref_grid
    from .glmm import GlmerControl, GlmerResult, glmer
    from .mixed.result import CoefTable, ConfidenceIntervals, MixedResult
    from .lmm import LmerResult, lmer
    from .ordinal import ClmmEMMeans, ClmmResult, clmm, clmm_emmeans
    from .tmb import GlmmTMBResult, OverdispersionCheck, check_overdispersion, glmmtmb
    from .studies.fit_many import FitManyResult, fit_many
    from .data.scan import aggregate_runs
    from .data.examples import example_path, load_example
    from .io import (
        read_arena_battles, read_helm, read_inspect, read_inspect_evals, read_lighteval, read_lm_eval, read_logs,
        read_mt_bench, read_mteb, read_openai_evals, read_opencompass, read_swebench, read_tau_bench,
    )
    from .studies.judges import (
        JudgeAgreement, JudgeParts, JudgePlan, JudgeStudy, judge_agreement, judge_components,
        judge_components_from_fit, judge_plan_components, judge_se, judge_study, plan_judges,
    )
    from .studies.leaderboard import (
        RankSets, rank_sets, rank_sets_draws, rank_sets_glmm, rank_sets_normal, rank_sets_posterior,
        tie_groups,
    )
    from .stats.multiplicity import adjust_pvalues
    from .studies.passk import PassKResult, pass_k, pass_k_model
    from .studies.ppi import (
        PPICoverage, PPIEstimates, ppi_coverage_study, ppi_difference, ppi_mean, simulate_judged,
    )
    from .studies.power import (
        power_clustered, power_paired_proportions, power_two_proportions, sample_size_clustered,
        sample_size_paired_proportions, sample_size_two_proportions,
    )
    from .studies.ranking import rank_instability, rank_uncertainty, rank_uncertainty_glmm
    from .studies.sequential import SequenceResult, confidence_sequence, sequential_accuracy, sequential_difference
    from .studies.drift import DriftResult, drift
    from .studies.contamination import ContaminationResult, contamination_test
    from .studies.gate import GateResult, gate, read_rule
    from .studies.reliability import flip_rate, icc, latent_icc
    from .reporting import Report, report
    from .stats.resampling import (
        bootstrap_ci, cluster_bootstrap, instance_bootstrap, paired_bootstrap, run_level_ci,
    )
    from .inference.selection import AnovaTable, ModelComparison, anova, bic_evidence, compare_models
    from .core.tables import format_p, to_latex, to_markdown
    from .studies.variance import VarianceSources, plan_sources, variance_sources
    from .studies.health import ItemHealth, VersionShift, item_health, version_shift
    from .studies.dif import DifResult, logistic_dif
