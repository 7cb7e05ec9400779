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
