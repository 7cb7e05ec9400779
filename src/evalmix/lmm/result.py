"""The fitted linear mixed model: :func:`lmer` and :class:`LmerResult`."""

from __future__ import annotations

import time
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import optimize, stats

from ..core import tables
from ..core.result import REPR_MAX_ROWS, frame_records
from ..core.arguments import check_level
from ..data.runs import RunsData
from ..core.errors import ConvergenceWarning, SingularFitWarning
from ..mixed.convergence import OptimizerReport, check_convergence, hessian_condition
from ..mixed.numdiff import central_gradient, central_hessian
from ..mixed.result import CoefTable, MixedResult, ModelRows
from ..mixed.summary import MixedSummary, correlation_lines
from ..model import FixedDesign, term_lambdas
from .ddf import KenwardRoger, Satterthwaite, normalise_ddf
from .design import LmmDesign, build_lmm_design
from .hypotheses import type3_hypotheses
from ..core.parallel import single_thread_blas
from .deviance import PlsState, ProfiledDeviance

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import ArrayLike

    from ..mixed.fitted import LinearHypothesis

__all__ = ["LmerCoefTable", "LmerResult", "lmer"]

#: lme4's ``lmerControl(boundary.tol = 1e-5)`` and its singularity check ``check.conv.singular``
#: (``1e-4`` on the relative scale of theta).
_BOUNDARY_TOL = 1e-5
_SINGULAR_TOL = 1e-4
#: Largest decrease of the criterion a further quasi-Newton step may promise where the optimiser
#: stops (1e-5 in the deviance, far inside the 1e-3 parity with lme4): at the end of the
#: forward-difference stage (above it the central-difference stage runs), and where L-BFGS-B's
#: line search finds no decrease on the exact gradient (below it the optimum is reached).
_DECREASE_TOL = 1e-5
#: Step off a zero diagonal of Lambda that tells whether the criterion falls away from it, and
#: the most restarts from such probes.  Near 0 the criterion is ``f0 + a t^2 + b t^4``, so the
#: probe is lower exactly when the optimum ``t*`` exceeds ``probe / sqrt(2)``; a nearer optimum
#: is lower than ``f0`` by only ``|a| t*^2 / 2 < 2.5e-7 |a|``.
_BOUNDARY_PROBE = 1e-3
_RESTARTS = 4


class _LmerModel:
    """What a fit keeps besides its reported numbers: the design, the deviance, the final state
    and the df methods, computed on first use."""

    def __init__(self, design: LmmDesign, dev: ProfiledDeviance, state: PlsState, reml: bool,
                 sigma: float, vcov: np.ndarray, contrasts: dict[str, Any] | None = None):
        self.design, self.dev, self.state, self.reml = design, dev, state, reml
        self.contrasts = contrasts
        self.sigma, self.vcov = sigma, vcov
        self._ddf: dict[str, Satterthwaite | KenwardRoger] = {}

    def ddf(self, method: str) -> Satterthwaite | KenwardRoger:
        if method not in self._ddf:
            with single_thread_blas():
                self._compute(method)
        return self._ddf[method]

    def _compute(self, method: str) -> None:
        if method == "Kenward-Roger":
            self._ddf[method] = KenwardRoger(self.dev, self.state.theta, self.sigma, self.vcov)
            return
        with warnings.catch_warnings():
            # probes of the Hessian may step where the criterion is undefined (inf)
            warnings.simplefilter("ignore", RuntimeWarning)
            self._ddf[method] = Satterthwaite(self.dev, self.state.theta, self.sigma, self.reml,
                                              self.vcov)


@dataclass(frozen=True)
class LmerDf:
    """An lmer fit's denominator degrees of freedom for Wald tests of linear functions of its fixed
    effects (it satisfies :class:`evalmix.mixed.fitted.DfMethod`): the covariance the tests use (``vcov``,
    adjusted for Kenward-Roger), the df of single linear functions (``df``) and F tests
    (``f_test``)."""

    name: str
    vcov: np.ndarray
    _impl: Satterthwaite | KenwardRoger = field(repr=False)
    #: the fixed effects the tests use when they are not the fit's: an ML fit's Kenward-Roger
    #: tests are those of its REML refit, as pbkrtest (``vcovAdj``, ``KRmodcomp``) refits it
    beta: np.ndarray | None = field(default=None, repr=False)
    #: the tests emmeans makes where they differ from these (an ML fit's Kenward-Roger): the
    #: fit's own fixed effects, the REML refit's adjusted covariance, and df from the fit's
    #: unadjusted covariance (``emmeans:::emm_basis.merMod`` with ``pbkrtest::Lb_ddf``)
    emmeans: LmerDf | None = field(default=None, repr=False)

    def df(self, L: np.ndarray) -> np.ndarray:
        return self._impl.df(L)

    def f_test(self, L: np.ndarray, beta: np.ndarray) -> tuple[float, int, float, float]:
        return self._impl.f_test(L, beta)


#: the coefficient table of an lmer fit: the one class of every engine (t tests with their df)
LmerCoefTable = CoefTable


@dataclass(frozen=True, eq=False, repr=False)
class LmerResult(MixedResult):
    """A linear mixed model fitted by REML or ML, as ``lme4::lmer`` (with lmerTest's tests).

    Attributes
    ----------
    formula : str
    reml : bool
        Whether the fit maximised the REML criterion.
    fixef : Series
        Fixed effects by column name.
    vcov : DataFrame
        Their covariance, ``sigma^2 (RX' RX)^-1`` (lme4's ``vcov``).
    theta : Series
        Relative covariance factors (lme4's ``getME(fit, "theta")``).
    sigma : float
        Residual standard deviation.
    loglik : float
        The REML log-likelihood (``-REMLcrit / 2``) of a REML fit, the log-likelihood of an ML fit.
    remlcrit : float or None
        lme4's ``REMLcrit`` (REML fits).
    deviance : float
        ``-2 loglik`` (lme4's ``deviance`` of an ML fit; for a REML fit the REML criterion).
    aic, bic : float
    df : int
        Number of parameters: fixed effects, theta and sigma.
    nobs : int
    varcorr : DataFrame
        ``group``, ``var1``, ``var2``, ``variance``, ``sd`` as ``as.data.frame(VarCorr(fit))``,
        the residual last.
    converged, singular : bool
    messages : tuple of str
    fixed_design : FixedDesign
    link : str
        ``"identity"``.

    Examples
    --------
    >>> import pandas as pd
    >>> import evalmix
    >>> d = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3, 4, 4], "model": list("ABABABAB"),
    ...                   "rating": [6.0, 7.0, 4.0, 6.0, 8.0, 8.0, 5.0, 7.0]})
    >>> fit = evalmix.lmer("rating ~ model + (1|item)", d)
    >>> fit.varcorr[["group", "sd"]].round(3)
          group     sd
    0      item  1.155
    1  Residual  0.677
    """

    formula: str
    reml: bool
    fixef: pd.Series
    vcov: pd.DataFrame
    theta: pd.Series
    sigma: float
    loglik: float
    remlcrit: float | None
    deviance: float
    df: int
    nobs: int
    varcorr: pd.DataFrame
    converged: bool
    singular: bool
    messages: tuple[str, ...]
    fixed_design: FixedDesign = field(repr=False)
    optimizer: OptimizerReport = field(repr=False, default=OptimizerReport("none", False))
    _model: Any = field(repr=False, default=None, compare=False)
    family: str = "gaussian"
    link: str = "identity"

    # ------------------------------------------------------------------ inference
    def df_method(self, ddf: str | None = None) -> LmerDf:
        """The fit's denominator df: ``"Satterthwaite"`` (default, lmerTest) or
        ``"Kenward-Roger"`` (pbkrtest), with the covariance its tests use.

        Kenward-Roger's method is defined for REML estimates: for an ML fit it is computed on
        the REML refit (its fixed effects, adjusted covariance and df), as pbkrtest's
        ``vcovAdj`` and ``KRmodcomp`` refit an ML fit (lmerTest and car refuse one).  emmeans
        keeps the ML fixed effects and takes the df from the ML covariance (the result's
        ``emmeans``), and :func:`evalmix.emmeans` follows it.
        """
        name = normalise_ddf(ddf)
        if name == "Kenward-Roger" and not self.reml:
            m = self._model
            if "reml_refit" not in m.__dict__:
                m.reml_refit = lmer(self.formula, m.design.data, REML=True, contrasts=m.contrasts)
            refit: LmerResult = m.reml_refit
            kr = refit.df_method(name)
            impl = kr._impl
            assert isinstance(impl, KenwardRoger)
            grid = LmerDf(name, kr.vcov, impl.with_unadjusted(self.vcov.to_numpy(dtype=float)))
            return LmerDf(name, kr.vcov, impl, beta=refit.fixef.to_numpy(dtype=float), emmeans=grid)
        impl = self._model.ddf(name)
        return LmerDf(name, np.array(impl.vcov), impl)

    def type3_hypotheses(self) -> dict[str, np.ndarray] | None:
        """lmerTest's hypothesis rows of each fixed term's type III F test (``anova(fit)``), by
        term; None for a design they are not built for (see :mod:`evalmix.lmm.hypotheses`).

        Examples
        --------
        >>> import pandas as pd, evalmix
        >>> d = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3, 4, 4], "model": list("ABABABAB"),
        ...                   "rating": [6.0, 7.0, 4.0, 6.0, 8.0, 8.0, 5.0, 7.0]})
        >>> evalmix.lmer("rating ~ model + (1|item)", d).type3_hypotheses()["model"].tolist()
        [[0.0, 1.0]]
        """
        m = self._model
        if "type3" not in m.__dict__:
            m.type3 = type3_hypotheses(self.fixed_design, m.design.data, m.design.X)
        return m.type3

    def coef_table(self, ddf: str | None = "Satterthwaite", conf_level: float = 0.95
                   ) -> CoefTable:
        """Fixed effects with SE, df, t, p and t intervals (lmerTest's ``summary(fit, ddf=)``).

        ``ddf="Kenward-Roger"`` uses the adjusted covariance for the SEs, as lmerTest does.  The
        table is a :class:`~evalmix.mixed.result.CoefTable` (``to_frame()``; a column is also ``table["se"]``).
        """
        check_level(conf_level)
        m = self.df_method(ddf)
        est = self.fixef.to_numpy() if m.beta is None else m.beta
        se = np.sqrt(np.diag(m.vcov))
        dfs = m.df(np.eye(len(est)))
        t = est / se
        crit = stats.t.isf((1 - conf_level) / 2, dfs)
        table = pd.DataFrame({"term": self.fixef.index, "estimate": est, "se": se, "df": dfs,
                              "statistic": t, "p_value": 2 * stats.t.sf(np.abs(t), dfs),
                              "conf_low": est - crit * se, "conf_high": est + crit * se})
        return CoefTable(table=table, test="t", ddf=m.name, conf_level=conf_level)

    def contest(self, L: ArrayLike, ddf: str | None = "Satterthwaite") -> LinearHypothesis:
        """F test of ``L beta = 0`` (lmerTest's ``contest``): a
        :class:`~evalmix.mixed.fitted.LinearHypothesis` whose table has ``statistic`` (F), ``df1`` and
        ``df2`` (numerator and denominator df) and ``p_value``."""
        from ..mixed.fitted import linear_hypothesis

        return linear_hypothesis(self, np.atleast_2d(np.asarray(L, dtype=float)), test="F",
                                 ddf=normalise_ddf(ddf))

    def wald_test(self, hypotheses: str | Sequence[str] | ArrayLike | pd.DataFrame,
                  rhs: ArrayLike | None = None, test: str = "chisq", ddf: str | None = None
                  ) -> LinearHypothesis:
        """Wald test of linear hypotheses about the fixed effects: the chi-square of
        ``car::linearHypothesis`` (default) or, ``test="F"``, the F test with ``ddf``
        (``"Satterthwaite"`` or ``"Kenward-Roger"``) denominator df of lmerTest's ``contest``;
        see :func:`evalmix.linear_hypothesis`.

        Examples
        --------
        >>> import numpy as np, pandas as pd
        >>> from evalmix import lmer
        >>> rng = np.random.default_rng(1)
        >>> runs = pd.DataFrame({"judge": np.tile(["a", "b", "c"], 40),
        ...                      "item": np.repeat([f"q{i}" for i in range(40)], 3)})
        >>> runs["score"] = (rng.normal(size=120) + (runs["judge"] == "c")
        ...                  + np.repeat(rng.normal(size=40), 3))
        >>> fit = lmer("score ~ judge + (1|item)", runs)
        >>> fit.wald_test("judgeb = judgec").df, fit.wald_test("judgeb = judgec", test="F").test
        (1, 'F')
        """
        from ..mixed.fitted import linear_hypothesis

        return linear_hypothesis(self, hypotheses, rhs, test=test, ddf=ddf)

    def refit_ml(self) -> LmerResult:
        """The same model fitted by maximum likelihood (this fit when it is one), as lme4's
        ``anova()`` refits REML fits before comparing likelihoods."""
        if not self.reml:
            return self
        m = self._model
        return lmer(self.formula, m.design.data, REML=False, contrasts=m.contrasts)

    # ------------------------------------------------------------------ tables
    def _model_rows(self) -> ModelRows:
        d = self._model.design
        return ModelRows(data=d.data, terms=d.terms, offset=d.offset)

    def ranef(self) -> pd.DataFrame:
        """Conditional modes of the random effects (``as.data.frame(ranef(fit))``): ``group``,
        ``term``, ``level``, ``mode``."""
        design = self._model.design
        b = design.lambda_(self._model.state.theta) @ self._model.state.u
        rows = []
        for t, off in zip(design.terms, design.term_offsets()):
            block = b[off:off + t.nl * t.nc].reshape(t.nl, t.nc)
            for c, name in enumerate(t.cnames):
                rows.append(pd.DataFrame({"group": t.group, "term": name, "level": t.levels,
                                          "mode": block[:, c]}))
        return pd.concat(rows, ignore_index=True)

    def fitted(self) -> np.ndarray:
        """Fitted values ``X beta + Z b`` (plus any offset) of the rows fitted."""
        design = self._model.design
        st = self._model.state
        out = design.X @ st.beta + design.Z @ (design.lambda_(st.theta) @ st.u)
        return out if design.offset is None else out + design.offset

    def residuals(self) -> np.ndarray:
        """Response minus fitted values (lme4's ``residuals``, type "response")."""
        design = self._model.design
        y = design.y if design.offset is None else design.y + design.offset
        return y - self.fitted()

    @property
    def scale(self) -> str:
        return "response (identity link)"

    def _header(self) -> list[str]:
        crit = (f"REML criterion {self.remlcrit:.1f}" if self.reml
                else f"AIC {self.aic:.1f}, BIC {self.bic:.1f}, logLik {self.loglik:.1f}")
        groups = "; ".join(f"{g}, {n}" for g, n in self.ngroups.items())
        state = ("singular; " if self.singular else "") + \
            ("converged" if self.converged else "NOT converged")
        return [f"linear mixed model fit by {'REML' if self.reml else 'maximum likelihood'}; "
                f"{self.nobs} obs, groups: {groups}; {crit}; sigma {self.sigma:.4g} ({state})",
                "statistic: t with Satterthwaite df (lmerTest)"]

    def _notes(self) -> list[str]:
        return list(self.messages)

    def summary(self, ddf: str | None = "Satterthwaite",  # type: ignore[override]  # ddf first, as lmerTest
                conf_level: float = 0.95) -> MixedSummary:
        """The fit as lmerTest's ``print(summary(fit, ddf=))`` shows it (lme4's layout, as every
        fit's :meth:`~evalmix.MixedResult.summary`): t tests with ``ddf`` degrees of freedom.

        Examples
        --------
        >>> import pandas as pd
        >>> import evalmix
        >>> d = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3, 4, 4], "model": list("ABABABAB"),
        ...                   "rating": [6.0, 7.0, 4.0, 6.0, 8.0, 8.0, 5.0, 7.0]})
        >>> str(evalmix.lmer("rating ~ model + (1|item)", d).summary()).splitlines()[3]
        'REML criterion at convergence: 20.9'
        """
        return self._mixed_summary(self.coef_table(ddf, conf_level))

    def _summary_title(self, ct: CoefTable) -> list[str]:
        fit = "REML" if self.reml else "maximum likelihood"
        return [f"Linear mixed model fit by {fit}. t-tests use {ct.ddf}'s method [lmerModLmerTest]"]

    def _summary_criteria(self) -> list[str]:
        if self.reml:
            return [f"REML criterion at convergence: {round(float(self.remlcrit or 0.0), 1):.1f}"]
        return super()._summary_criteria()

    def _summary_correlation(self) -> list[str]:
        return correlation_lines(self.vcov)

    def _scaled_residuals(self) -> list[float]:
        return np.quantile(self.residuals() / self.sigma, [0, 0.25, 0.5, 0.75, 1]).tolist()

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update({"formula": self.formula, "reml": self.reml, "loglik": self.loglik,
                    "remlcrit": self.remlcrit, "aic": self.aic, "bic": self.bic, "df": self.df,
                    "nobs": self.nobs, "sigma": self.sigma,
                    "theta": {k: float(v) for k, v in self.theta.items()},
                    "varcorr": frame_records(self.varcorr), "converged": self.converged,
                    "singular": self.singular, "messages": list(self.messages)})
        return out

    def __repr__(self) -> str:
        """lme4's print of the fit (:meth:`lme4_text`), then the table of :meth:`coef_table`."""
        table = tables.to_text(self.coef_table().to_frame(), max_rows=REPR_MAX_ROWS,
                               more="; coef_table() has them all")
        return f"{self.lme4_text()}\n\nFixed effects (t tests with Satterthwaite df, lmerTest):\n{table}"

    def lme4_text(self) -> str:
        """The fit as lme4's ``print(fit)`` shows an ``lmerMod``, with R's digits: formula, REML
        criterion (or AIC, BIC, logLik, deviance), random effects (``VarCorr``), numbers of
        observations and groups, the fixed effects as a named vector.

        Examples
        --------
        >>> import pandas as pd
        >>> import evalmix
        >>> d = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3, 4, 4], "model": list("ABABABAB"),
        ...                   "rating": [6.0, 7.0, 4.0, 6.0, 8.0, 8.0, 5.0, 7.0]})
        >>> print(evalmix.lmer("rating ~ model + (1|item)", d).lme4_text())  # doctest: +ELLIPSIS
        Linear mixed model fit by REML
        ...
        Fixed Effects:
        (Intercept)       modelB
               5.75         1.25
        """
        how = "REML" if self.reml else "maximum likelihood"
        lines = [f"Linear mixed model fit by {how}", f"Formula: {self.formula}"]
        if self.reml:
            crit = float(self.remlcrit) if self.remlcrit is not None else float("nan")
            lines.append(f"REML criterion at convergence: {tables.r_format([round(crit, 4)], 7)[0]}")
        else:
            head = ["AIC", "BIC", "logLik", "deviance", "df.resid"]
            vals = [tables.r_format([round(v, 4)], 7)[0] for v in (self.aic, self.bic, self.loglik, self.deviance)]
            vals.append(str(self.nobs - self.df))
            w = max(len(t) for t in head + vals)
            lines += [" ".join(h.rjust(w) for h in head), " ".join(v.rjust(w) for v in vals)]
        lines.append("Random effects:")
        lines += tables.varcorr_lines(self.varcorr, comp=("Std.Dev.",))
        groups = ", ".join(f"{g}, {n}" for g, n in self.ngroups.items())
        lines.append(f"Number of obs: {self.nobs}, groups:  {groups}")
        lines.append("Fixed Effects:")
        lines += tables.named_values(list(map(str, self.fixef.index)), tables.r_format(self.fixef.to_numpy()))
        lines += tables.wrap_lines(self.messages)
        return "\n".join(lines)


def _varcorr(design: LmmDesign, theta: np.ndarray, sigma: float) -> pd.DataFrame:
    rows = []
    for t, Lam in zip(design.terms, term_lambdas(design.terms, theta)):
        S = sigma ** 2 * Lam @ Lam.T
        sd = np.sqrt(np.clip(np.diag(S), 0, None))
        for i in range(t.nc):
            rows.append((t.group, t.cnames[i], "", float(S[i, i]), float(sd[i])))
        for i, j in t.cor_pairs:
            cor = S[i, j] / (sd[i] * sd[j]) if sd[i] > 0 and sd[j] > 0 else np.nan
            rows.append((t.group, t.cnames[j], t.cnames[i], float(S[i, j]), float(cor)))
    rows.append(("Residual", "", "", sigma ** 2, sigma))
    return pd.DataFrame(rows, columns=["group", "var1", "var2", "variance", "sd"])


def _gradient(f: Any, x: np.ndarray, f0: float, lower: np.ndarray, central: bool) -> np.ndarray:
    """Finite differences of the criterion: forward (one evaluation per theta) or central
    (two; one-sided at a lower bound)."""
    g = np.zeros_like(x)
    for i in range(x.size):
        h = (1e-6 if central else 1e-7) * max(1.0, abs(x[i]))
        e = np.zeros_like(x)
        e[i] = h
        if central and x[i] - h >= lower[i]:
            g[i] = (f(x + e) - f(x - e)) / (2 * h)
        else:
            g[i] = (f(x + e) - f0) / h
    return g


def _diagonal_positive(design: LmmDesign, theta: np.ndarray) -> np.ndarray:
    """``theta`` with each column of each term's Lambda whose diagonal is negative turned over
    (Lambda Lambda', hence the criterion, is unchanged): lme4's diagonal >= 0."""
    out = np.array(theta, dtype=float)
    pos = 0
    for t in design.terms:
        pairs = t.theta_pairs
        for k, (i, j) in enumerate(pairs):
            if i == j and out[pos + k] < 0:
                for k2, (_, j2) in enumerate(pairs):
                    if j2 == j:
                        out[pos + k2] = -out[pos + k2]
        pos += t.theta_size
    return out


def _optimize(dev: ProfiledDeviance, design: LmmDesign, reml: bool
              ) -> tuple[np.ndarray, float, OptimizerReport]:
    """Minimise the profiled criterion over theta, returned within lme4's bounds (0 for a
    diagonal element of Lambda): L-BFGS-B from lme4's start on the exact gradient, theta free
    and columns of Lambda turned over at the end, restarted off any zero diagonal the criterion
    falls away from (on the sparse-LU path, which has no exact gradient: bounded, on forward
    differences, then central ones unless the central gradient is already flat); then a probe
    of each near-zero diagonal at its bound, and Nelder-Mead from there when L-BFGS-B reports no
    convergence."""
    lower = design.theta_lower
    bounds = [(lo if np.isfinite(lo) else None, None) for lo in lower]
    t0 = time.perf_counter()
    nit = 0

    def f(th: np.ndarray) -> float:
        return dev(th, reml)

    def fg(th: np.ndarray, central: bool) -> tuple[float, np.ndarray]:
        v = f(th)
        return v, _gradient(f, th, v, lower, central)

    if dev.has_gradient:
        def fge(th: np.ndarray) -> tuple[float, np.ndarray]:
            v, g = dev.value_and_gradient(th, reml)
            assert g is not None
            return v, g

        # the exact gradient runs the optimiser to a tighter optimum than lme4's bobyqa in a third
        # of the evaluations: ftol 1e-11 relative stops a step that gains < 3e-7 in a criterion
        # of 3e4, after which < 1e-8 remains (a tighter ftol reaches the rounding of the
        # criterion, ~1e-13 relative, and its line searches only spend evaluations).  The
        # criterion depends on Lambda Lambda' only, which is unchanged when a column of Lambda
        # changes sign: theta is free (no bound at 0, where a step of L-BFGS-B would stop on a
        # diagonal at which the gradient is zero by that symmetry) and each column whose diagonal
        # ends negative is turned over, giving lme4's theta (diagonal >= 0) at the same criterion
        opts = {"ftol": 1e-11, "gtol": 1e-6, "maxiter": 1000}
        start = design.theta_start
        for _ in range(_RESTARTS):
            res = optimize.minimize(fge, start, jac=True, method="L-BFGS-B", options=opts)
            nit += int(res.nit)
            x, fx = _diagonal_positive(design, res.x), float(res.fun)
            if not res.success and res.status == 2:
                # ABNORMAL: no line-search step decreased the criterion, which at the optimum
                # means rounding; accepted when a quasi-Newton step promises < _DECREASE_TOL
                left = 0.5 * float(res.jac @ (res.hess_inv @ res.jac))
                res.success = bool(np.isfinite(fx) and 0.0 <= left < _DECREASE_TOL)
            # a diagonal exactly at 0 is stationary (zero gradient) even where the criterion falls
            # away from it: probe each one and restart from the probes that are lower
            start = x.copy()
            for i in np.flatnonzero(np.isfinite(lower) & (x <= lower)):
                y = x.copy()
                y[i] = lower[i] + _BOUNDARY_PROBE
                if f(y) < fx:
                    start[i] = y[i]
            if np.array_equal(start, x):
                break
    else:
        # forward differences take the optimiser near the optimum at half the cost; central ones
        # then finish (forward-difference gradients can stop a line search short of it).  ftol
        # 1e-10 relative is ~1e-6 in the criterion, far inside the 1e-3 parity with lme4's optimum
        opts = {"ftol": 1e-10, "gtol": 1e-6, "maxiter": 1000}
        res = optimize.minimize(fg, design.theta_start, args=(False,), jac=True, method="L-BFGS-B",
                                bounds=bounds, options=opts)
        nit += int(res.nit)
        x, fx = np.maximum(res.x, lower), float(res.fun)
        f1, g1 = fg(x, True)
        # the decrease a quasi-Newton step would still give (L-BFGS's inverse Hessian times the
        # central gradient; a component pushing against its bound does not count)
        g1 = np.where((x <= lower) & (g1 > 0), 0.0, g1)
        left = 0.5 * float(g1 @ (res.hess_inv @ g1)) if res.success else np.inf
        if 0.0 <= left < _DECREASE_TOL:
            fx = f1
        else:
            res = optimize.minimize(fg, x, args=(True,), jac=True, method="L-BFGS-B", bounds=bounds,
                                    options=opts)
            nit += int(res.nit)
            x, fx = np.maximum(res.x, lower), float(res.fun)
    # a probe at the boundary: lme4's bobyqa lands on theta = 0 exactly when the optimum is there
    diag = np.isfinite(lower)
    for i in np.flatnonzero(diag & (x < 1e-3)):
        y = x.copy()
        y[i] = 0.0
        fy = f(y)
        if fy <= fx:
            x, fx = y, fy
    method = "L-BFGS-B"
    converged = bool(res.success)
    if not converged:  # a derivative-free restart from where L-BFGS-B stopped
        polish = optimize.minimize(f, x, method="Nelder-Mead", bounds=bounds,
                                   options={"xatol": 1e-8, "fatol": 1e-10, "maxfev": 400 * x.size})
        method += " + Nelder-Mead"
        nit += int(polish.nit)
        converged = bool(polish.success)
        if polish.fun < fx:
            x, fx = np.maximum(polish.x, lower), float(polish.fun)
    report = OptimizerReport(method, converged, str(res.message), iterations=nit, feval=dev.evaluations,
                             seconds=time.perf_counter() - t0)
    return x, fx, report


#: lme4 computes the derivatives of its convergence checks only below this many rows
#: (``lmerControl(calc.derivs = NULL)``); the checks are skipped above it, as in lme4
_DERIVS_MAX_ROWS = 10_000
#: step of lme4's ``deriv12`` finite differences
_DERIV_STEP = 1e-4


def _check(dev: ProfiledDeviance, design: LmmDesign, theta: np.ndarray, reml: bool,
           report: OptimizerReport) -> OptimizerReport:
    """lme4's ``checkConv`` of an lmer fit: the gradient and Hessian of the profiled criterion
    over the theta off their bounds (lme4's ``deriv12``), checked by
    :func:`evalmix.mixed.convergence.check_convergence`."""
    import dataclasses

    if design.X.shape[0] >= _DERIVS_MAX_ROWS or theta.size == 0:
        return report
    lower = design.theta_lower
    free = ~(np.isfinite(lower) & (theta <= lower + _BOUNDARY_TOL))
    if not free.any():
        return report

    def f(th: np.ndarray) -> float:
        return dev(th, reml)

    # lme4's deriv12: central differences of the criterion (a solve each; the exact gradient
    # costs ten to a hundred solves)
    g = central_gradient(f, theta, _DERIV_STEP)
    H = central_hessian(f, theta, free, _DERIV_STEP)
    dev(theta, reml)  # leave the solver's state at the estimates
    checks = check_convergence(g[free], H)
    return dataclasses.replace(report, max_grad=float(np.max(np.abs(g[free]))), gradient=g,
                               hessian_cond=hessian_condition(H), checks=checks)


def lmer(formula: str, data: RunsData, REML: bool = True, *,
         contrasts: dict[str, Any] | None = None) -> LmerResult:
    """Fit a linear mixed model by REML or ML (R: ``lme4::lmer``, tests as ``lmerTest``).

    The profiled deviance of lme4 (Bates et al. 2015) is minimised over the relative covariance
    factors theta; fixed effects, sigma and the conditional modes follow from the penalised least
    squares solution at the optimum.  Fixed-effect tests (``coef_table``, ``summary``,
    :func:`evalmix.anova`, :func:`evalmix.inference.emmeans`, :func:`evalmix.contrast`) use t and F
    reference distributions with Satterthwaite degrees of freedom by default, Kenward-Roger with
    ``ddf="Kenward-Roger"``.

    Parameters
    ----------
    formula : str
        lme4 syntax: ``"rating ~ model + (1|item) + (1|item:run)"``, ``"y ~ x + (x|g)"``,
        ``(x||g)`` for uncorrelated effects.
    data : DataFrame or path
        One row per observation; the response column must be numeric.
    REML : bool
        REML (default, as lme4) or maximum likelihood.
    contrasts : dict, optional
        Coding of factors of the fixed part (``{"model": "sum"}``), as ``lmer(contrasts=)``.

    Returns
    -------
    LmerResult

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import evalmix
    >>> rng = np.random.default_rng(1)
    >>> d = pd.DataFrame({"item": np.repeat(np.arange(30), 4), "model": np.tile(list("ABAB"), 30),
    ...                   "run": np.tile([0, 0, 1, 1], 30)})
    >>> d["rating"] = (6 + 0.5 * (d["model"] == "B") + rng.normal(0, 1, 30)[d["item"]]
    ...                + rng.normal(0, 0.8, len(d))).round()
    >>> fit = evalmix.lmer("rating ~ model + (1|item)", d)
    >>> fit.fixef.round(3).to_dict()
    {'(Intercept)': 5.933, 'modelB': 0.35}
    >>> fit.coef_table().to_frame()[["term", "df"]].round(1)
             term    df
    0  (Intercept)  41.5
    1       modelB  89.0
    >>> evalmix.emmeans(fit, "model").to_frame().round(3)
      model  estimate    se      df  conf_low  conf_high
    0     A     5.933  0.18  41.507      5.57      6.296
    1     B     6.283  0.18  41.507      5.92      6.646
    """
    design = build_lmm_design(formula, data, contrasts=contrasts)
    n, p = design.X.shape
    if REML and n <= p:
        from ..core.errors import DataError

        raise DataError(f"{n} rows for {p} fixed effects: REML needs more rows than fixed effects")
    dev = ProfiledDeviance(design)
    with single_thread_blas():
        theta, crit, report = _optimize(dev, design, bool(REML))
        state = dev.solve(theta)
    reml = bool(REML)
    sigma = dev.sigma(state, reml)
    names = list(design.fixed.columns)
    V = sigma ** 2 * np.linalg.inv(state.XtVX)
    V = (V + V.T) / 2
    ntheta = theta.size
    npar = p + ntheta + 1
    loglik = -crit / 2
    # singular: a diagonal element of Lambda at (or within 1e-4 of) its bound, as lme4's isSingular
    lower = design.theta_lower
    singular = bool(np.any(np.isfinite(lower) & (theta < _SINGULAR_TOL)))
    messages: list[str] = []
    if singular:
        messages.append("boundary (singular) fit: see help('isSingular')")
        warnings.warn("boundary (singular) fit: a random-effect variance is estimated as 0",
                      SingularFitWarning, stacklevel=2)
    report = _check(dev, design, theta, reml, report)
    if not report.converged:
        messages.append(f"the optimiser did not report convergence: {report.message}")
        warnings.warn(messages[-1], ConvergenceWarning, stacklevel=2)
    for msg in report.checks:  # lme4's checkConv
        messages.append(msg)
        warnings.warn(msg, ConvergenceWarning, stacklevel=2)
    model = _LmerModel(design, dev, state, reml, sigma, V, contrasts)
    return LmerResult(
        formula=formula, reml=reml,
        fixef=pd.Series(state.beta, index=names, name="estimate"),
        vcov=pd.DataFrame(V, index=names, columns=names),
        theta=pd.Series(theta, index=design.theta_names, name="theta"),
        sigma=sigma, loglik=float(loglik), remlcrit=float(crit) if reml else None,
        deviance=float(crit), df=int(npar), nobs=int(n),
        varcorr=_varcorr(design, theta, sigma), converged=report.converged and not report.checks,
        singular=singular, messages=tuple(messages), fixed_design=design.fixed,
        optimizer=report, _model=model)
