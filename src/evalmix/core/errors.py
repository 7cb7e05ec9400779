"""Exceptions and warnings raised by evalmix.

Every error names the column, row or term at fault so that a user can fix the input without
reading the source.
"""

from __future__ import annotations


class DataError(ValueError):
    """The input table cannot be analysed as given (missing column, bad value, duplicate key...)."""


class ArgumentError(ValueError):
    """An argument of a public function has a value it cannot take (``conf_level=95``, ``k=2.5``,
    ``seed=-1``...); the message names the argument and the value."""


class ArgumentTypeError(ArgumentError, TypeError):
    """An argument has the wrong type (``n_boot="1000"``); also an :class:`ArgumentError`."""


class DataWarning(UserWarning):
    """The input is valid but unusual in a way that affects the analysis (unbalanced design...)."""


class FormulaError(ValueError):
    """A model formula names an unknown column or has a term evalmix cannot build."""


class FitWarning(UserWarning):
    """Base class for warnings about a model fit."""


class SingularFitWarning(FitWarning):
    """A variance parameter sits on its boundary: lme4's "boundary (singular) fit"."""


class ConvergenceWarning(FitWarning):
    """The optimiser stopped without meeting the convergence checks."""


class SeparationWarning(FitWarning):
    """Complete or quasi-complete separation: some fixed-effect estimates are infinite."""


class SeparationError(DataError):
    """Separation makes some maximum-likelihood estimates infinite and the method cannot drop the
    culprits (too few would remain); the message names them.  Also a :class:`DataError`."""


class SamplingWarning(UserWarning):
    """MCMC diagnostics (divergences, r_hat, ESS) say the posterior draws are not trustworthy."""


# Tracebacks and reprs name the public path (``evalmix.DataError``), where users import them from.
for _cls in (DataError, ArgumentError, ArgumentTypeError, DataWarning, FormulaError, FitWarning,
             SingularFitWarning, ConvergenceWarning, SeparationWarning, SamplingWarning):
    _cls.__module__ = "evalmix"
del _cls
