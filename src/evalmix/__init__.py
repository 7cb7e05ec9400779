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

from .glmm import GlmerResult, glmer

__version__ = "0.1.0"

__all__ = [
    "GlmerResult", "glmer",
    "ConvergenceWarning", "DataError", "DataWarning", "FitWarning", "FormulaError",
    "SamplingWarning", "SingularFitWarning", "format_p", "to_latex", "to_markdown",
]
