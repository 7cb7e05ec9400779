"""What inference needs from a fitted model, declared once: the fitted-model protocol and the Wald
algebra of linear functions of the coefficients.

Every engine (:func:`evalmix.glmer`, :func:`evalmix.bayes.glmer`, and any future one) satisfies
:class:`FittedModel`; marginal means, contrasts, type-III tests and rank intervals read a fit only
through it.  :func:`linear_functions` and :func:`wald_test` are the one place where ``L beta``,
``L V L'`` and the Wald chi-square are computed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from .model import FixedDesign

__all__ = ["Coefficients", "DfMethod", "FittedModel", "MixedFit", "PosteriorFit", "SeparationLimit",
           "VarCorrFit", "coefficients", "df_method", "linear_functions", "wald_test",
           "warn_divergent"]


@runtime_checkable
class FittedModel(Protocol):
    """A fit by maximum likelihood, as inference reads it.

    Attributes
    ----------
    fixef : pandas.Series
        Fixed-effect estimates, indexed by coefficient name (the columns of the fixed design).
    vcov : pandas.DataFrame
        Their covariance matrix, rows and columns named as ``fixef``.
    link : str
        The link function (``"logit"``, ``"probit"``, ``"cloglog"`` or ``"identity"``).
    fixed_design : object
        The fixed-effects design: ``columns``, ``column_terms``, ``factors``, ``covariates`` and
        ``model_matrix(frame)`` rebuilding X for a reference grid
        (:class:`evalmix.model.FixedDesign`).
    """

    @property
    def fixef(self) -> pd.Series: ...

    @property
    def vcov(self) -> pd.DataFrame: ...

    @property
    def link(self) -> str: ...

    @property
    def fixed_design(self) -> FixedDesign: ...


@runtime_checkable
class PosteriorFit(Protocol):
    """A Bayesian fit: posterior draws of the fixed effects instead of ``vcov``."""

    @property
    def fixef_draws(self) -> pd.DataFrame: ...

    @property
    def link(self) -> str: ...

    @property
    def fixed_design(self) -> FixedDesign: ...


@runtime_checkable
class VarCorrFit(Protocol):
    """A fit that reports its variance components (``group``, ``var1``, ``var2``, ``variance``,
    ``sd``): :class:`evalmix.GlmerResult`, :class:`evalmix.bayes.BayesGlmerResult`."""

    @property
    def varcorr(self) -> pd.DataFrame: ...


@runtime_checkable
class MixedFit(FittedModel, VarCorrFit, Protocol):
    """A mixed model as the study functions read it: fixed effects and variance components."""


class SeparationLimit(Protocol):
    """The limit of a separated fit, as inference reads it (:class:`evalmix.glmm.separation.Separation`):
    the finite parametrisation of the limit and which linear functions diverge."""

    @property
    def beta_limit(self) -> np.ndarray | None: ...

    @property
    def vcov_limit(self) -> np.ndarray | None: ...

    def classify(self, L: np.ndarray, tol: float = ...) -> np.ndarray: ...

    def combine(self, L: np.ndarray, beta: np.ndarray | None = ..., V: np.ndarray | None = ...
                ) -> tuple[np.ndarray, np.ndarray]: ...


class DfMethod(Protocol):
    """Finite denominator degrees of freedom of a fit's Wald tests (linear mixed models:
    Satterthwaite, Kenward-Roger), as inference reads them.

    ``vcov`` is the covariance the tests use (Kenward-Roger adjusts it); ``df(L)`` gives the df
    of each row of ``L`` (a t test of ``L beta``); ``f_test(L, beta)`` the F statistic, numerator
    and denominator df and p-value of ``L beta = 0``.
    """

    @property
    def name(self) -> str: ...

    @property
    def vcov(self) -> np.ndarray: ...

    def df(self, L: np.ndarray) -> np.ndarray: ...

    def f_test(self, L: np.ndarray, beta: np.ndarray) -> tuple[float, int, float, float]: ...


def df_method(fit: object, ddf: str | None = None) -> DfMethod | None:
    """The denominator-df method of a fit (its ``df_method(ddf)``), or None for a fit whose tests
    are asymptotic (z and chi-square, df = Inf: binomial GLMMs).

    ``ddf`` names the method (``"Satterthwaite"``, the default, or ``"Kenward-Roger"``); giving it
    for a fit without finite df is a ValueError.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> df_method(SimpleNamespace(fixef=None)) is None
    True
    """
    getter = getattr(fit, "df_method", None)
    if getter is None:
        if ddf is not None:
            raise ValueError(f"ddf={ddf!r} applies to linear mixed models (evalmix.lmer); this "
                             f"{type(fit).__name__} is tested with asymptotic z statistics "
                             "(df = Inf)")
        return None
    return getter(ddf)


@dataclass(frozen=True, repr=False)
class Coefficients:
    """The coefficients of a fit: ``beta`` and ``vcov`` (maximum likelihood) or ``draws``."""

    names: tuple[str, ...]
    beta: np.ndarray | None
    vcov: np.ndarray | None
    draws: np.ndarray | None
    # a separated fit (its ``separation``): beta and vcov are then the finite parametrisation of
    # its limit, and ``separation.combine`` maps a linear function to +-inf where it diverges
    separation: SeparationLimit | None = None

    @property
    def is_posterior(self) -> bool:
        return self.draws is not None

    @property
    def normal(self) -> tuple[np.ndarray, np.ndarray]:
        """``(beta, vcov)``; a TypeError for coefficients read as posterior draws only."""
        if self.beta is None or self.vcov is None:
            raise TypeError("these coefficients are posterior draws: no beta and vcov; read the fit "
                            "with coefficients(fit, posterior=False)")
        return self.beta, self.vcov


def coefficients(fit: FittedModel | PosteriorFit, posterior: bool = True) -> Coefficients:
    """The coefficients of any fit that satisfies :class:`FittedModel` or :class:`PosteriorFit`.

    ``posterior=False`` reads ``fixef`` and ``vcov`` even from a fit that has draws (its normal
    approximation: posterior means and covariance).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> fit = SimpleNamespace(fixef=pd.Series([0.5, 1.0], index=["(Intercept)", "x"]),
    ...                       vcov=pd.DataFrame(np.eye(2), index=["(Intercept)", "x"],
    ...                                         columns=["(Intercept)", "x"]))
    >>> coefficients(fit).names
    ('(Intercept)', 'x')
    """
    draws = getattr(fit, "fixef_draws", None) if posterior else None
    if draws is not None:
        draws = pd.DataFrame(draws)
        return Coefficients(tuple(map(str, draws.columns)), None, None, draws.to_numpy(dtype=float))
    fixef = getattr(fit, "fixef", None)
    vcov = getattr(fit, "vcov", None)
    if fixef is None or vcov is None:
        raise TypeError(f"{type(fit).__name__} is not a fitted model: it has neither fixef and vcov "
                        "(maximum likelihood) nor fixef_draws (posterior)")
    names = tuple(map(str, fixef.index))
    sep = getattr(fit, "separation", None)
    if sep is not None and getattr(sep, "beta_limit", None) is not None:
        return Coefficients(names, sep.beta_limit, sep.vcov_limit, None, sep)
    v = pd.DataFrame(vcov).loc[list(names), list(names)].to_numpy(dtype=float)
    return Coefficients(names, fixef.to_numpy(dtype=float), v, None)


def linear_functions(L: np.ndarray, beta: np.ndarray, vcov: np.ndarray, separation: SeparationLimit | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Estimates ``L beta``, their standard errors and covariance ``L V L'``.

    With the ``separation`` of a separated fit (``beta``, ``vcov`` its finite limit), rows of
    ``L`` along a divergent direction are ``+-inf`` (NaN when undetermined) with NaN covariances.

    Examples
    --------
    >>> est, se, cov = linear_functions(np.array([[1.0, 1.0]]), np.array([0.5, 1.0]), np.eye(2))
    >>> est.tolist(), se.round(4).tolist()
    ([1.5], [1.4142])
    """
    L = np.atleast_2d(np.asarray(L, dtype=float))
    if separation is not None:
        missing = np.isnan(L).any(axis=1)
        est, cov = separation.combine(np.nan_to_num(L), beta, vcov)
        est = np.where(missing, np.nan, est)
        cov[missing, :] = np.nan
        cov[:, missing] = np.nan
    else:
        est = L @ beta
        cov = L @ vcov @ L.T
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return est, se, cov


def warn_divergent(L: np.ndarray, separation: SeparationLimit | None, labels: Sequence[str], what: str,
                   stacklevel: int = 3) -> list[str]:
    """Warn (:class:`~evalmix.errors.SeparationWarning`) naming the rows of ``L`` that diverge in
    a separated fit; returns their labels."""
    if separation is None:
        return []
    cls = separation.classify(np.nan_to_num(np.atleast_2d(L)))
    bad = [f"{lab} ({'+inf' if c > 0 else '-inf' if c < 0 else 'not determined'})"
           for lab, c in zip(labels, cls) if c != 0]
    if bad:
        import warnings

        from .errors import SeparationWarning

        warnings.warn(f"{what} {', '.join(bad)} diverge{'s' if len(bad) == 1 else ''} in this "
                      "separated fit (see fit.separation): reported as +-inf or NaN with NaN "
                      "standard errors; refit with fixef_prior='normal(0, 2.5)' for finite values",
                      SeparationWarning, stacklevel=stacklevel)
    return bad


def wald_test(L: np.ndarray, beta: np.ndarray, vcov: np.ndarray,
              rhs: Sequence[float] | np.ndarray | None = None, separation: SeparationLimit | None = None
              ) -> tuple[float, int, float]:
    """Joint Wald test of ``L beta = rhs``: chi-square, degrees of freedom and p-value.

    With the ``separation`` of a separated fit, a hypothesis involving a divergent direction
    has no Wald test: chi-square and p are NaN.

    The degrees of freedom are the rank of ``L V L'`` and its pseudo-inverse is used, so aliased
    rows do not inflate the test (as ``car::linearHypothesis``).

    Examples
    --------
    >>> chisq, df, p = wald_test(np.eye(2), np.array([1.0, 2.0]), np.eye(2))
    >>> round(chisq, 3), df, round(p, 4)
    (5.0, 2, 0.0821)
    """
    from scipy import stats

    if separation is not None and np.any(separation.classify(np.atleast_2d(L)) != 0):
        return float("nan"), int(np.atleast_2d(L).shape[0]), float("nan")
    est, _, cov = linear_functions(L, beta, vcov, separation)
    d = est - (np.zeros_like(est) if rhs is None else np.asarray(rhs, dtype=float))
    df = int(np.linalg.matrix_rank(cov))
    chisq = float(d @ np.linalg.pinv(cov) @ d)
    return chisq, df, float(stats.chi2.sf(chisq, df)) if df > 0 else float("nan")
