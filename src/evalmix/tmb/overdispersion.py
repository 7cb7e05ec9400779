"""Is a binomial GLMM overdispersed?  The Pearson dispersion ratio (``performance::
check_overdispersion``) and the likelihood-ratio test of the binomial against the beta-binomial."""

from __future__ import annotations

from dataclasses import dataclass, field
import warnings
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..core.result import Result
from ..core.arguments import check_arguments
from ..core.errors import ArgumentError, DataError, FitWarning
from .fit import glmmtmb
from .result import GlmmTMBResult

__all__ = ["OverdispersionCheck", "check_overdispersion"]


@dataclass(frozen=True, eq=False, repr=False)
class OverdispersionCheck(Result):
    """The overdispersion checks of a binomial GLMM.

    Attributes
    ----------
    chisq : float
        Pearson's chi-square of the binomial fit, the sum of its squared Pearson residuals.
    df_residual : int
        ``nobs`` minus the binomial fit's parameters (``df.residual``).
    ratio : float
        ``chisq / df_residual``: about 1 without overdispersion.
    p_value : float
        ``P(chi2(df_residual) > chisq)``, as ``performance::check_overdispersion``.
    lrt_statistic : float
        ``2 (logLik(beta-binomial) - logLik(binomial))``.
    lrt_p_value : float
        Its p-value with the boundary taken into account: the binomial is the beta-binomial at
        ``phi = inf``, on the edge of its parameter space, so the null distribution is an equal
        mixture of 0 and chi-square(1) (Self and Liang 1987) and ``p = P(chi2(1) > stat) / 2``.
    phi : float
        The beta-binomial precision; the variance of ``k / n`` is the binomial's times
        ``1 + (n - 1) / (phi + 1)``.
    alpha : float
        The level that :meth:`verdict` uses.
    binomial, betabinomial : GlmmTMBResult
        The two fits.
    """

    chisq: float
    df_residual: int
    ratio: float
    p_value: float
    lrt_statistic: float
    lrt_p_value: float
    phi: float
    alpha: float
    binomial: GlmmTMBResult = field(repr=False)
    betabinomial: GlmmTMBResult = field(repr=False)

    def to_frame(self) -> pd.DataFrame:
        """One row per check: ``check``, ``estimate`` (the dispersion ratio of the Pearson check),
        ``statistic`` (Pearson's chi-square; the likelihood-ratio chi-square), ``df``, ``p_value``."""
        return pd.DataFrame({
            "check": ["Pearson dispersion", "LRT binomial vs beta-binomial"],
            "estimate": [self.ratio, np.nan],
            "statistic": [self.chisq, self.lrt_statistic],
            "df": [float(self.df_residual), 1.0],
            "p_value": [self.p_value, self.lrt_p_value]})

    def _title(self) -> str:
        return "Overdispersion of a binomial GLMM"

    def _header(self) -> list[str]:
        return [f"dispersion ratio {self.ratio:.3f} (Pearson chi-square {self.chisq:.2f} on "
                f"{self.df_residual} df); beta-binomial phi {self.phi:.4g}"]

    def _notes(self) -> list[str]:
        return [self.verdict()]

    def verdict(self) -> str:
        """One sentence: is the binomial model's uncertainty understated?

        Examples
        --------
        >>> check.verdict()  # doctest: +SKIP
        'overdispersion detected (ratio 1.38, p < 0.001; ...)'
        """
        p = self.p_value
        ptxt = "p < 0.001" if p < 0.001 else f"p = {p:.3f}"
        lp = self.lrt_p_value
        ltxt = "p < 0.001" if lp < 0.001 else f"p = {lp:.3f}"
        if p < self.alpha or lp < self.alpha:
            return (f"overdispersion detected (ratio {self.ratio:.2f}, {ptxt}; beta-binomial LRT "
                    f"{ltxt}): the binomial model understates the standard errors; use "
                    "family='betabinomial'")
        return (f"no overdispersion detected (ratio {self.ratio:.2f}, {ptxt}; beta-binomial LRT "
                f"{ltxt})")


def check_overdispersion(fit: GlmmTMBResult, *, alpha: float = 0.05) -> OverdispersionCheck:
    """Check a binomial GLMM of k-of-n counts for overdispersion (R:
    ``performance::check_overdispersion``, and ``anova(binomial_fit, betabinomial_fit)``).

    Parameters
    ----------
    fit : GlmmTMBResult
        A fit of :func:`evalmix.glmmtmb` with ``family="binomial"`` or ``"betabinomial"``; the
        other one is refitted on the same formula and data.
    alpha : float
        The level of :meth:`OverdispersionCheck.verdict`.

    Returns
    -------
    OverdispersionCheck

    Raises
    ------
    ArgumentError
        A fit that is not a binomial-family :class:`GlmmTMBResult`.
    DataError
        A 0/1 response (one trial per row): the Pearson ratio of binary outcomes says nothing
        about overdispersion; aggregate to k of n per item:model first.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import evalmix
    >>> rng = np.random.default_rng(7)
    >>> item = np.repeat(np.arange(40), 4)
    >>> model = np.tile(["a", "b", "c", "d"], 40)
    >>> mu = 1 / (1 + np.exp(-(0.8 * (model == "b") + rng.normal(0, 1, 40)[item])))
    >>> runs = pd.DataFrame({"item": item, "model": model, "n": 10})
    >>> runs["k"] = rng.binomial(10, rng.beta(mu * 2, (1 - mu) * 2))
    >>> fit = evalmix.glmmtmb("cbind(k, n - k) ~ model + (1|item)", runs, family="binomial")
    >>> check = evalmix.check_overdispersion(fit)
    >>> round(check.ratio, 2), check.df_residual
    (3.34, 155)
    >>> print(check.verdict())  # doctest: +ELLIPSIS
    overdispersion detected (ratio 3.34, p < 0.001; beta-binomial LRT p < 0.001): the binomial ...
    """
    check_arguments(alpha=alpha)
    if not isinstance(fit, GlmmTMBResult) or fit.family not in ("binomial", "betabinomial"):
        what = f"a {fit.family} fit" if isinstance(fit, GlmmTMBResult) else type(fit).__name__
        raise ArgumentError(f"check_overdispersion needs a binomial GLMM of k-of-n counts fitted "
                            f"with evalmix.glmmtmb(..., family='binomial'); got {what}")
    call: dict[str, Any] = dict(fit.call)
    formula, data = call.pop("formula"), call.pop("data")
    if fit.family == "binomial":
        if not np.any(fit.trials > 1):
            raise DataError("the response has one trial per row (0/1): a Pearson dispersion ratio "
                            "of binary outcomes does not measure overdispersion; aggregate to k of "
                            "n per item:model and fit cbind(k, n - k)")
        with warnings.catch_warnings():
            # a precision at its upper bound is the answer here (no overdispersion), not a fault
            warnings.filterwarnings("ignore", message=".*precision phi is at its upper bound",
                                    category=FitWarning)
            bb = glmmtmb(formula, data, "betabinomial", **call)
        binom = fit
    else:
        binom, bb = glmmtmb(formula, data, "binomial", **call), fit
    chisq = float(np.sum(binom.pearson_residuals**2))
    rdf = binom.df_residual
    stat = max(0.0, 2.0 * (bb.loglik - binom.loglik))
    return OverdispersionCheck(chisq=chisq, df_residual=rdf, ratio=chisq / rdf,
                               p_value=float(stats.chi2.sf(chisq, rdf)), lrt_statistic=stat,
                               lrt_p_value=float(0.5 * stats.chi2.sf(stat, 1)), phi=bb.dispersion,
                               alpha=alpha, binomial=binom, betabinomial=bb)

