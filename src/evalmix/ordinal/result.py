"""The fitted cumulative-link mixed model (``ordinal::clmm``'s ``clmm`` object).

ordinal's ``conv.check`` (:func:`convergence_check`) lives with the other engines' checks in
:mod:`evalmix.mixed.convergence`; it is re-exported here.
"""

from __future__ import annotations

__all__ = ["ClmmResult", "convergence_check"]

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..core import tables
from ..core.errors import ArgumentError
from ..core.arguments import check_arguments
from ..mixed.convergence import OptimizerReport, convergence_check
from ..mixed.fitted import wald_z_table
from ..mixed.result import CoefTable, MixedResult, ModelRows
from ..mixed.summary import CoefBlock, r_table

if TYPE_CHECKING:
    from ..model import FixedDesign


def _lme4_layout(varcorr: pd.DataFrame) -> pd.DataFrame:
    """Scalar random intercepts in lme4's ``VarCorr`` layout (``var1``, ``var2``) for printing."""
    out = varcorr.copy()
    if "var1" not in out:
        out["var1"] = "(Intercept)"
    if "var2" not in out:
        out["var2"] = ""
    return out


@dataclass(frozen=True, eq=False, repr=False)
class ClmmResult(MixedResult):
    """A cumulative-link mixed model fitted by the Laplace approximation, as ``ordinal::clmm``.

    The model is ``P(Y <= j) = F(theta_j - x beta - u)``: thresholds ``theta_j``, location
    effects ``beta`` (a positive effect moves ratings up) and normal random intercepts.

    Attributes
    ----------
    formula : str
    link : str
        ``"logit"`` or ``"probit"``.
    threshold : str
        ``"flexible"`` (``1|2``, ``2|3``... as R names them) or ``"equidistant"``
        (``threshold.1`` and ``spacing``).
    coef : Series
        Thresholds then location effects, by R's names (``coef(fit)``).
    vcov : DataFrame
        ``vcov(fit)``: the inverse numerical Hessian of minus the Laplace log-likelihood over the
        coefficients and the random-effect parameters ``ST1``, ``ST2``... As ordinal parametrises
        them, these are log SDs for one random term and SDs for several; an SD below 1e-3 of a
        model with several terms is on the boundary and left out, as ordinal leaves it out.
    n_thresholds : int
    fixef : Series
        The location effects (``fit$beta``), as every fit's ``fixef``; the thresholds stand
        beside them (:attr:`thresholds`).
    varcorr : DataFrame
        ``group``, ``var1``, ``var2``, ``variance``, ``sd`` per random term (lme4's layout and
        order: most levels first).
    ngrps : Series
        Levels per grouping factor.
    loglik, aic, bic, deviance : float
        ``deviance`` is ``-2 logLik``.
    df : int
        Coefficients plus random-effect SDs.
    nobs : int
    optimizer : OptimizerReport
        How the optimiser ran (iterations, evaluations, ``max_grad``, ``hessian_cond``: ordinal's
        ``niter``, ``max.grad`` and ``cond.H``, which :attr:`niter`, :attr:`max_grad` and
        :attr:`cond_h` also give).
    converged : bool
    levels : tuple of str
        The response categories, lowest first.
    convergence : dict
        ``code`` and ``messages`` of ordinal's convergence check (:func:`convergence_check`):
        ``(0,)`` and ``("successful convergence",)`` for a sound fit.
    random_effects : DataFrame
        The conditional modes of the random effects, as :meth:`ranef` gives them.
    fixed_design : FixedDesign
        The fixed part's coding (the reference grid of :func:`evalmix.ordinal.clmm_emmeans`).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import evalmix
    >>> rng = np.random.default_rng(3)
    >>> item = np.repeat(np.arange(30), 4)
    >>> model = np.tile(["a", "b"], 60)
    >>> latent = (model == "b") * 1.0 + rng.normal(0, 1, 30)[item] + rng.logistic(size=120)
    >>> runs = pd.DataFrame({"item": item, "model": model,
    ...                      "rating": np.digitize(latent, [-1.5, 0, 1.5]) + 1})
    >>> fit = evalmix.clmm("rating ~ model + (1|item)", runs)
    >>> fit.levels, fit.n_thresholds, fit.df
    (('1', '2', '3', '4'), 3, 5)
    >>> fit.coef_table()["kind"].tolist()
    ['threshold', 'threshold', 'threshold', 'location']
    """

    formula: str
    link: str
    threshold: str
    coef: pd.Series
    vcov: pd.DataFrame
    n_thresholds: int
    varcorr: pd.DataFrame
    ngrps: pd.Series
    loglik: float
    df: int
    nobs: int
    optimizer: OptimizerReport
    converged: bool
    levels: tuple[str, ...]
    random_effects: pd.DataFrame = field(repr=False)
    fixed_design: FixedDesign = field(repr=False)
    convergence: dict[str, tuple] = field(default_factory=dict, repr=False)
    _rows: ModelRows | None = field(default=None, repr=False, compare=False)

    @property
    def cond_h(self) -> float:
        """Condition number of the Hessian (ordinal's ``cond.H``; ``optimizer.hessian_cond``)."""
        return self.optimizer.hessian_cond

    @property
    def thresholds(self) -> pd.Series:
        """The threshold parameters (``fit$alpha``; ``threshold.1`` and ``spacing`` when equidistant)."""
        return self.coef.iloc[: self.n_thresholds]

    @property
    def beta(self) -> pd.Series:
        """The location effects (``fit$beta``)."""
        return self.coef.iloc[self.n_thresholds:]

    @property
    def fixef(self) -> pd.Series:
        """The location effects, by R's names (as every fit's ``fixef``; :attr:`thresholds` beside
        them)."""
        return self.beta

    @property
    def deviance(self) -> float:
        """``-2 logLik``."""
        return -2.0 * self.loglik

    def ranef(self) -> pd.DataFrame:
        """Conditional modes of the random effects (``ranef(fit)``): ``group``, ``term``,
        ``level``, ``mode``."""
        return self.random_effects

    def _model_rows(self) -> ModelRows:
        if self._rows is None:
            raise ArgumentError("this clmm fit was made without its rows; refit it with evalmix.clmm")
        return self._rows

    def _wald_parameters(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        # thresholds and location effects, as confint(clmm) lists them
        names = [str(n) for n in self.coef.index]
        se = np.sqrt(np.diag(self.vcov.to_numpy(dtype=float)))[: len(names)]
        return names, self.coef.to_numpy(dtype=float), se

    def _response(self, eta: np.ndarray) -> np.ndarray:
        raise ArgumentError("a cumulative-link model has no single response-scale prediction: "
                            "predict(type='link') gives the location x beta (+ random effects); "
                            "category probabilities and the mean rating are "
                            "evalmix.emmeans(fit, specs, mode='prob' or 'mean.class')")

    def coef_table(self, conf_level: float = 0.95) -> CoefTable:
        """Coefficients with Wald SE, z, p and CI (``summary(fit)$coefficients``).

        ``kind`` is ``"threshold"`` or ``"location"``; thresholds come first, as R lists them.

        Examples
        --------
        >>> fit.coef_table().columns.tolist()  # doctest: +SKIP
        ['term', 'kind', 'estimate', 'se', 'statistic', 'p_value', 'conf_low', 'conf_high']
        """
        check_arguments(conf_level=conf_level)
        est = self.coef.to_numpy()
        tab = wald_z_table(self.coef.index, est, np.sqrt(np.diag(self.vcov.to_numpy()))[: len(est)], conf_level)
        tab.insert(1, "kind", ["threshold"] * self.n_thresholds + ["location"] * (len(est) - self.n_thresholds))
        return CoefTable(table=tab, test="z", conf_level=conf_level)

    def _header(self) -> list[str]:
        groups = "; ".join(f"{g}, {n}" for g, n in self.ngrps.items())
        return [f"cumulative link ({self.link}, {self.threshold} thresholds), Laplace ML; "
                f"{self.nobs} obs, groups: {groups}; AIC {self.aic:.2f}, logLik {self.loglik:.2f}"
                f" ({'converged' if self.converged else 'NOT converged'})",
                f"scale: latent ({self.link}); statistic: Wald z"]

    def ordinal_text(self) -> str:
        """The fit as ``summary(clmm)`` prints it: the fit line, random effects, the location
        coefficients and the threshold coefficients.

        Examples
        --------
        >>> print(fit.ordinal_text())  # doctest: +SKIP
        Cumulative Link Mixed Model fitted with the Laplace approximation
        ...
        """
        lines = ["Cumulative Link Mixed Model fitted with the Laplace approximation", "",
                 f"formula: {self.formula}", ""]
        head = ["link", "threshold", "nobs", "logLik", "AIC", "niter", "max.grad", "cond.H"]
        vals = [self.link, self.threshold, str(self.nobs), f"{self.loglik:.2f}", f"{self.aic:.2f}",
                str(self.niter), f"{self.max_grad:.2e}", f"{self.cond_h:.1e}"]
        w = [max(len(h), len(v)) for h, v in zip(head, vals)]
        lines += [" " + " ".join(h.ljust(k) for h, k in zip(head, w)),
                  " " + " ".join(v.ljust(k) for v, k in zip(vals, w)), "", "Random effects:"]
        lines += tables.varcorr_lines(_lme4_layout(self.varcorr))
        lines += ["Number of groups:  " + ",  ".join(f"{g} {n}" for g, n in self.ngrps.items()), ""]
        tab = self.coef_table().to_frame()
        for title, part, with_p in (("Coefficients:", tab[tab["kind"] == "location"], True),
                                    ("Threshold coefficients:", tab[tab["kind"] == "threshold"], False)):
            if part.empty:
                lines += ["No Coefficients", ""] if with_p else []
                continue
            head = ["Estimate", "Std. Error", "z value"] + (["Pr(>|z|)"] if with_p else [])
            cols = ["term", "estimate", "se", "statistic"] + (["p_value"] if with_p else [])
            lines += [title, *tables.coefmat_lines(part[cols], head, p="p_value" if with_p else None), ""]
        if not self.converged:
            lines.append("The optimiser did not converge: the largest gradient is "
                         f"{self.max_grad:.2e}.")
        return "\n".join(lines).rstrip()

    def __repr__(self) -> str:
        # ordinal's summary, then the table in evalmix's vocabulary (what to_frame returns)
        return (f"{self.ordinal_text()}\n\nCoefficients (Wald z; latent {self.link} scale):\n"
                f"{tables.to_text(self.coef_table().to_frame())}")

    __str__ = __repr__

    # summary() is MixedResult's (lme4's layout); these hooks print what ordinal's summary prints
    def _summary_title(self, ct: CoefTable) -> list[str]:
        return ["Cumulative Link Mixed Model fitted with the Laplace approximation", ""]

    def _summary_formula(self) -> str:
        from ..model import r_formula

        return f"formula: {r_formula(self.formula)}"

    def _summary_criteria(self) -> list[str]:
        head = ["link", "threshold", "nobs", "logLik", "AIC", "niter", "max.grad", "cond.H"]
        vals = [self.link, self.threshold, str(self.nobs), f"{self.loglik:.2f}", f"{self.aic:.2f}",
                str(self.niter), f"{self.max_grad:.2e}", f"{self.cond_h:.1e}"]
        return r_table(head, vals)

    def _groups_line(self) -> str:
        return "Number of groups:  " + ",  ".join(f"{g} {n}" for g, n in self.ngroups.items())

    def _coef_blocks(self, ct: CoefTable) -> list[CoefBlock]:
        tab = ct.to_frame()
        return [CoefBlock("Coefficients:", tab[tab["kind"] == "location"],
                          ("Estimate", "Std. Error", "z value", "Pr(>|z|)")),
                CoefBlock("Threshold coefficients:", tab[tab["kind"] == "threshold"],
                          ("Estimate", "Std. Error", "z value"))]

    def _summary_messages(self) -> list[str]:
        return [] if self.converged else [f"The optimiser did not converge: the largest gradient is "
                                          f"{self.max_grad:.2e}."]
