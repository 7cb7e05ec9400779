"""evalmix: trustworthy statistics for repeated LLM evaluation runs."""

from __future__ import annotations

from . import simulate
from .data import RunsSchema, load_table, read_runs, schema_of
from .descriptive import accuracy, binom_ci
from .errors import (
    ConvergenceWarning,
    DataError,
    DataWarning,
    FitWarning,
    FormulaError,
    SamplingWarning,
    SingularFitWarning,
)
from .tables import format_p, to_latex, to_markdown

# mixed models
from .glmm import GlmerResult, glmer

# log loaders (lm-evaluation-harness, Inspect AI)
from .io import read_inspect, read_lm_eval

# run-to-run reliability, leaderboard stability, repetition planning
from . import repetitions
from .ranking import rank_instability, rank_uncertainty, rank_uncertainty_glmm
from .reliability import flip_rate, icc, latent_icc

# Comparisons, resampling, multiplicity, agreement, power and calibration.
from .comparisons import (
    cohens_d, compare_pair, friedman, mcnemar, paired_t_runs, permutation_test, wilcoxon,
)
from .resampling import (
    bootstrap_ci, cluster_bootstrap, instance_bootstrap, paired_bootstrap, run_level_ci,
)
from .multiplicity import adjust_pvalues
from .agreement import cohen_kappa, fleiss_kappa, krippendorff_alpha
from .power import (
    power_clustered, power_paired_proportions, power_two_proportions, sample_size_clustered,
    sample_size_paired_proportions, sample_size_two_proportions,
)
from .calibration import calibrate, coverage_study
from . import power

__version__ = "0.1.0"

__all__ = [
    "ConvergenceWarning", "DataError", "DataWarning", "FitWarning", "FormulaError", "GlmerResult",
    "RunsSchema", "SamplingWarning", "SingularFitWarning", "accuracy", "binom_ci", "format_p", "glmer",
    "load_table", "read_inspect", "read_lm_eval", "read_runs", "schema_of", "simulate", "to_latex",
    "to_markdown",
    # reliability, ranking, repetitions
    "flip_rate", "icc", "latent_icc", "rank_instability", "rank_uncertainty", "rank_uncertainty_glmm",
    "repetitions",
]
__all__ += [
    "adjust_pvalues", "bootstrap_ci", "calibrate", "cluster_bootstrap", "cohen_kappa", "cohens_d",
    "compare_pair", "coverage_study", "fleiss_kappa", "friedman", "instance_bootstrap",
    "krippendorff_alpha", "mcnemar", "paired_bootstrap", "paired_t_runs", "permutation_test",
    "power", "power_clustered", "power_paired_proportions", "power_two_proportions",
    "run_level_ci", "sample_size_clustered", "sample_size_paired_proportions",
    "sample_size_two_proportions", "wilcoxon",
]

# Inference on fitted models: marginal means, contrasts, Wald tests, model selection
from .emmeans import Contrasts, EMMeans, contrast, emmeans, reference_grid  # noqa: E402
from .selection import (  # noqa: E402
    AnovaTable,
    ModelComparison,
    anova,
    bic_evidence,
    compare_models,
)

__all__ += [
    "AnovaTable", "Contrasts", "EMMeans", "ModelComparison", "anova", "bic_evidence",
    "compare_models", "contrast", "emmeans", "reference_grid",
]

# Hierarchical Bayesian GLMMs (PyMC is imported only when a model is fitted)
from . import bayes  # noqa: E402

__all__ += ["bayes"]

# Leaderboards: simultaneous rank sets, tie groups; errored samples
from .descriptive import ErroredAccuracy, accuracy_bounds  # noqa: E402
from .leaderboard import (  # noqa: E402
    RankSets, rank_sets, rank_sets_glmm, rank_sets_normal, rank_sets_posterior, tie_groups,
)

__all__ += ["ErroredAccuracy", "RankSets", "accuracy_bounds", "rank_sets", "rank_sets_glmm",
            "rank_sets_normal", "rank_sets_posterior", "tie_groups"]
