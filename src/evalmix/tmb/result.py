"""The fitted model of :func:`evalmix.glmmtmb` (glmmTMB's ``glmmTMB`` object)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..core import tables
from ..core.arguments import check_arguments, check_choice
from ..mixed.convergence import OptimizerReport
from ..mixed.fitted import ResidualDf, wald_z_table
from ..mixed.result import CoefTable, MixedResult, ModelRows
from ..mixed.summary import CoefBlock

if TYPE_CHECKING:
    from ..model import FixedDesign

__all__ = ["GlmmTMBResult"]

#: how glmmTMB names each family in ``summary()`` (``Family: beta  ( logit )``)
FAMILY_LABEL = {"beta": "beta", "betabinomial": "betabinomial", "binomial": "binomial"}


@dataclass(frozen=True, eq=False, repr=False)
class GlmmTMBResult(MixedResult):
    """A GLMM fitted by the Laplace approximation with all parameters optimised jointly, as
    ``glmmTMB``: beta, beta-binomial or binomial response, logit link, random intercepts.

    It satisfies :class:`evalmix.mixed.fitted.MixedFit`, so :func:`evalmix.inference.emmeans`,
    :func:`evalmix.contrast`, :func:`evalmix.anova` and :func:`evalmix.compare_models` (fits of one
    family) read it.

    Attributes
    ----------
    formula : str
    family : str
        ``"beta"``, ``"betabinomial"`` or ``"binomial"``.
    link : str
        ``"logit"``.
    fixef : Series
        Fixed effects of the conditional model (``fixef(fit)$cond``), log-odds of the mean.
    vcov : DataFrame
        Their covariance (``vcov(fit)$cond``): the fixed-effect block of the inverse Hessian of
        minus the Laplace log-likelihood over all parameters (glmmTMB's ``sdreport``).
    vcov_full : DataFrame
        The whole inverse Hessian: fixed effects, ``log_sd(group)`` (glmmTMB's ``theta``) and
        ``log_phi`` (glmmTMB's ``betadisp``); a random-effect SD on the boundary (below 1e-4)
        has no row.
    varcorr : DataFrame
        ``group``, ``var1``, ``var2``, ``variance``, ``sd`` per random term (``VarCorr``).
    dispersion : float
        The precision ``phi`` (``sigma(fit)``) of the beta and beta-binomial families: the
        variance of a score is ``mu (1 - mu) / (1 + phi)``, of ``k / n``
        ``mu (1 - mu) / n (1 + (n - 1) / (phi + 1))``.  1 for the binomial family, as glmmTMB.
    loglik, aic, bic : float
        ``logLik`` (every constant counted, ``lchoose(n, k)`` included), AIC, BIC.
    df : int
        Number of parameters: fixed effects, SDs and ``phi``.
    nobs : int
    ngrps : Series
        Levels per grouping factor.
    converged : bool
    optimizer : OptimizerReport
        How the optimiser ran: iterations, evaluations, ``max_grad`` (the largest absolute
        gradient of minus the log-likelihood at the estimates, also :attr:`max_grad`) and the
        Hessian's condition number.
    random_effects : DataFrame
        The conditional modes of the random effects, as ``ranef()`` gives them (``group``,
        ``term``, ``level``, ``mode``).
    fitted : ndarray
        Conditional means per row (random effects at their modes), on the response's scale
        (scores, or the proportion ``k / n``).
    pearson_residuals : ndarray
        ``(y - mu) / sqrt(V(mu))`` per row (``residuals(fit, type = "pearson")``).
    observed : ndarray
        The response per row: the score, or the proportion ``k / n``.
    trials : ndarray
        ``n`` per row (ones for the beta family).
    fixed_design : FixedDesign

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import evalmix
    >>> rng = np.random.default_rng(1)
    >>> item = np.repeat(np.arange(30), 4)
    >>> model = np.tile(["a", "b"], 60)
    >>> mu = 1 / (1 + np.exp(-(0.5 * (model == "b") + rng.normal(0, 0.7, 30)[item])))
    >>> runs = pd.DataFrame({"item": item, "model": model, "score": rng.beta(mu * 10, (1 - mu) * 10)})
    >>> fit = evalmix.glmmtmb("score ~ model + (1|item)", runs, family="beta")
    >>> fit.family, fit.df, fit.fixef.index.tolist()
    ('beta', 4, ['(Intercept)', 'modelb'])
    """

    formula: str
    family: str
    fixef: pd.Series
    vcov: pd.DataFrame
    vcov_full: pd.DataFrame
    varcorr: pd.DataFrame
    dispersion: float
    loglik: float
    df: int
    nobs: int
    ngrps: pd.Series
    converged: bool
    optimizer: OptimizerReport
    random_effects: pd.DataFrame = field(repr=False)
    fitted: np.ndarray = field(repr=False)
    pearson_residuals: np.ndarray = field(repr=False)
    observed: np.ndarray = field(repr=False)
    trials: np.ndarray = field(repr=False)
    fixed_design: FixedDesign = field(repr=False)
    link: str = "logit"
    # what a refit of another family needs (formula, data, weights, contrasts)
    call: dict[str, Any] = field(repr=False, default_factory=dict)
    _rows: ModelRows | None = field(default=None, repr=False, compare=False)

    @property
    def response_scale(self) -> str:
        """What the inverse link gives, as :func:`evalmix.inference.emmeans` labels it: a mean score for the
        beta family, a probability for the binomial families."""
        return "mean score" if self.family == "beta" else "probability"

    @property
    def df_residual(self) -> int:
        """``nobs - df`` (R's ``df.residual``; :attr:`df_resid`, as every fit names it)."""
        return self.df_resid

    def emmeans_df(self) -> ResidualDf:
        """The df of the fit's marginal means and contrasts: ``df.residual``, as emmeans gives a
        glmmTMB fit t intervals and tests (car's type-III tests stay chi-square)."""
        return ResidualDf(self.df_resid, self.vcov.to_numpy(dtype=float))

    def ranef(self) -> pd.DataFrame:
        """Conditional modes of the random effects (``ranef(fit)``): ``group``, ``term``,
        ``level``, ``mode``."""
        return self.random_effects

    def _model_rows(self) -> ModelRows:
        if self._rows is None:
            from ..core.errors import ArgumentError

            raise ArgumentError("this glmmtmb fit was made without its rows; refit it with evalmix.glmmtmb")
        return self._rows

    @property
    def deviance(self) -> float:
        """``-2 loglik``."""
        return -2.0 * self.loglik

    def residuals(self, type: str = "pearson") -> np.ndarray:
        """Pearson (default) or response residuals per row (``residuals(fit, type=)``).

        Examples
        --------
        >>> fit.residuals("response").shape  # doctest: +SKIP
        (120,)
        """
        check_choice(type, "type", ("pearson", "response"))
        if type == "pearson":
            return self.pearson_residuals.copy()
        return self.observed - self.fitted

    def coef_table(self, conf_level: float = 0.95) -> CoefTable:
        """Fixed effects with Wald SE, z, p and CI (``summary(fit)$coefficients$cond``).

        Examples
        --------
        >>> fit.coef_table().columns.tolist()  # doctest: +SKIP
        ['term', 'estimate', 'se', 'statistic', 'p_value', 'conf_low', 'conf_high']
        """
        check_arguments(conf_level=conf_level)
        tab = wald_z_table(self.fixef.index, self.fixef.to_numpy(), np.sqrt(np.diag(self.vcov.to_numpy())),
                           conf_level)
        return CoefTable(table=tab, test="z", conf_level=conf_level)

    def _header(self) -> list[str]:
        groups = "; ".join(f"{g}, {n}" for g, n in self.ngrps.items())
        phi = "" if self.family == "binomial" else f", phi {self.dispersion:.4g}"
        return [f"{self.family} (logit), Laplace ML; {self.nobs} obs, groups: {groups}{phi}; "
                f"AIC {self.aic:.2f}, logLik {self.loglik:.2f} "
                f"({'converged' if self.converged else 'NOT converged'})",
                "scale: log-odds of the mean; statistic: Wald z"]

    def glmmtmb_text(self) -> str:
        """The fit as ``summary(glmmTMB)`` prints it.

        Examples
        --------
        >>> print(fit.glmmtmb_text())  # doctest: +SKIP
         Family: beta  ( logit )
        ...
        """
        lines = [f" Family: {FAMILY_LABEL[self.family]}  ( {self.link} )",
                 f"Formula:          {self.formula}", ""]
        head = ["AIC", "BIC", "logLik", "-2*log(L)", "df.resid"]
        vals = [f"{self.aic:.1f}", f"{self.bic:.1f}", f"{self.loglik:.1f}", f"{self.deviance:.1f}",
                str(self.df_residual)]
        w = [max(len(h), len(v)) + 2 for h, v in zip(head, vals)]
        lines += ["".join(h.rjust(k) for h, k in zip(head, w)),
                  "".join(v.rjust(k) for v, k in zip(vals, w)), "", "Random effects:", "",
                  "Conditional model:"]
        vc = self.varcorr
        if "var1" not in vc:
            vc = vc.assign(var1="(Intercept)", var2="")
        lines += tables.varcorr_lines(vc)
        lines.append(f"Number of obs: {self.nobs}, groups:  "
                     + "; ".join(f"{g}, {n}" for g, n in self.ngrps.items()))
        if self.family != "binomial":
            lines += ["", f"Dispersion parameter for {self.family} family (): {tables.r_format([self.dispersion], 3)[0]}"]
        tab = self.coef_table().to_frame()
        lines += ["", "Conditional model:",
                  *tables.coefmat_lines(tab[["term", "estimate", "se", "statistic", "p_value"]],
                                        ["Estimate", "Std. Error", "z value", "Pr(>|z|)"])]
        if not self.converged:
            lines.append(f"The optimiser did not converge: the largest gradient is {self.max_grad:.2e}.")
        return "\n".join(lines)

    def __repr__(self) -> str:
        return (f"{self.glmmtmb_text()}\n\nCoefficients (Wald z; log-odds of the mean):\n"
                f"{tables.to_text(self.coef_table().to_frame())}")

    __str__ = __repr__

    # summary() is MixedResult's (lme4's layout); these hooks print what glmmTMB's summary prints
    def _summary_title(self, ct: CoefTable) -> list[str]:
        return [f" Family: {FAMILY_LABEL[self.family]}  ( {self.link} )"]

    def _summary_formula(self) -> str:
        from ..model import r_formula

        return f"Formula:          {r_formula(self.formula)}"

    def _random_heading(self) -> list[str]:
        return ["Random effects:", "", "Conditional model:"]

    def _summary_extra(self) -> list[str]:
        if self.family == "binomial":
            return []
        return [f"Dispersion parameter for {self.family} family (): "
                f"{tables.r_format([self.dispersion], 3)[0]}"]

    def _coef_blocks(self, ct: CoefTable) -> list[CoefBlock]:
        return [CoefBlock("Conditional model:", ct.to_frame(), ("Estimate", "Std. Error", "z value", "Pr(>|z|)"))]

    def _summary_messages(self) -> list[str]:
        return [] if self.converged else [f"The optimiser did not converge: the largest gradient is "
                                          f"{self.max_grad:.2e}."]
