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
from .report import format_p, to_latex, to_markdown

# mixed models
from .glmm import GlmerResult, glmer

# log loaders (lm-evaluation-harness, Inspect AI)
from .io import read_inspect, read_lm_eval

# run-to-run reliability, leaderboard stability, repetition planning
from . import repetitions
from .ranking import rank_instability, rank_uncertainty, rank_uncertainty_glmm
from .reliability import flip_rate, icc, latent_icc

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
