"""evalmix: trustworthy statistics for repeated LLM evaluation runs."""

from __future__ import annotations

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

__version__ = "0.1.0"

__all__ = [
    "ConvergenceWarning", "DataError", "DataWarning", "FitWarning", "FormulaError",
    "SamplingWarning", "SingularFitWarning", "format_p", "to_latex", "to_markdown",
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
