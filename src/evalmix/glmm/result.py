"""The fitted GLMM: :class:`GlmerResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats
from scipy.special import expit

from .._result import Result, frame_records
from ..errors import FormulaError
from ..formula import FixedDesign, RandomTerm
from .optimize import OptimizerReport


@dataclass(frozen=True, eq=False)  # holds DataFrames: identity equality, hashable
class GlmerResult(Result):
    """A binomial-logit GLMM fitted by maximum likelihood (Laplace), as ``lme4::glmer``.

    Attributes
    ----------
    formula : str
    fixef : Series
        Fixed effects by column name (formulaic names, ``Intercept``, ``model[T.b]``...).
    vcov : DataFrame
        Covariance of the fixed effects (``vcov_method`` says how it was computed).
    theta : Series
        Relative covariance factors, lme4's ``getME(fit, "theta")`` with its names.
    loglik, aic, bic, deviance : float
        ``deviance`` is ``-2 loglik``.
    df : int
        ``len(fixef) + len(theta)``.
    nobs : int
        Rows as given (before pooling identical rows).
    varcorr : DataFrame
        ``group``, ``var1``, ``var2``, ``variance`` (covariance when ``var2`` is set), ``sd``
        (correlation when ``var2`` is set): lme4's ``as.data.frame(VarCorr(fit))``.
    converged, singular : bool
    messages : tuple of str
        The convergence and boundary messages (also raised as warnings by :func:`glmer`).
    optimizer : OptimizerReport
    vcov_method : str
        ``"hessian"`` (lme4 1.1-31's default), ``"hessian_exact"`` or ``"rx"``.
    fixed_design : FixedDesign
    fixef_prior : NormalPrior or None
        The prior of a ``fixef_prior=`` fit (``blme::bglmer``); ``loglik`` is then the
        likelihood at the penalised estimates, and ``prior_deviance`` blme's "Prior dev"
        (minus twice the log prior density at the estimates).
    separation : Separation or None
        Set when the fixed effects are separated (some estimates are ``+-inf``): which
        coefficients diverge, the rows fitted perfectly, and the finite limit fit
        (see :mod:`evalmix.glmm.separation`).

    Examples
    --------
    >>> from evalmix import glmer
    >>> from evalmix.simulate import glmm_runs
    >>> runs = glmm_runs(3, 60, 3, seed=2)
    >>> fit = glmer("correct ~ model + (1|item) + (1|item:run)", runs)
    >>> fit.df, fit.nobs, list(fit.varcorr["group"])
    (5, 540, ['item:run', 'item'])
    >>> fit.coef_table()["term"].tolist()
    ['Intercept', 'model[T.M2]', 'model[T.M3]']
    """

    formula: str
    fixef: pd.Series
    vcov: pd.DataFrame
    theta: pd.Series
    loglik: float
    aic: float
    bic: float
    deviance: float
    df: int
    nobs: int
    varcorr: pd.DataFrame
    converged: bool
    singular: bool
    messages: tuple[str, ...]
    optimizer: OptimizerReport
    vcov_method: str
    fixed_design: FixedDesign = field(repr=False)
    hessian: np.ndarray | None = field(repr=False, default=None)
    _model: Any = field(repr=False, default=None, compare=False)
    family: str = "binomial"
    link: str = "logit"
    separation: Any = field(repr=False, default=None)  # Separation when estimates diverge
    fixef_prior: Any = field(repr=False, default=None)  # NormalPrior of a penalised fit
    prior_deviance: float | None = None  # blme's "Prior dev" (penalty + normalising constant)

    # ------------------------------------------------------------------ tables
    def coef_table(self, conf_level: float = 0.95) -> pd.DataFrame:
        """Fixed effects with Wald SE, z, p, CI and odds ratios (``summary(fit)$coefficients``).

        Examples
        --------
        >>> fit.coef_table().columns.tolist()  # doctest: +SKIP
        ['term', 'estimate', 'se', 'z', 'p', 'ci_low', 'ci_high', 'odds_ratio', 'or_low', 'or_high']
        """
        est = self.fixef.to_numpy()
        se = np.sqrt(np.diag(self.vcov.to_numpy()))
        z = est / se
        q = stats.norm.ppf(0.5 + conf_level / 2)
        lo, hi = est - q * se, est + q * se
        return pd.DataFrame({
            "term": self.fixef.index, "estimate": est, "se": se, "z": z,
            "p": 2 * stats.norm.sf(np.abs(z)), "ci_low": lo, "ci_high": hi,
            "odds_ratio": np.exp(est), "or_low": np.exp(lo), "or_high": np.exp(hi)})

    def to_frame(self) -> pd.DataFrame:
        return self.coef_table()

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update({"formula": self.formula, "loglik": self.loglik, "aic": self.aic,
                    "bic": self.bic, "df": self.df, "nobs": self.nobs,
                    "theta": {k: (float(v) if np.isfinite(v) else None)
                              for k, v in self.theta.items()},
                    "varcorr": frame_records(self.varcorr), "converged": self.converged,
                    "singular": self.singular, "messages": list(self.messages),
                    "vcov_method": self.vcov_method, "optimizer": self.optimizer.to_dict(),
                    "separation": None if self.separation is None else self.separation.to_dict(),
                    "prior_deviance": self.prior_deviance})
        return out

    @property
    def ngroups(self) -> dict[str, int]:
        """Number of levels of each grouping factor."""
        out: dict[str, int] = {}
        for t in self._model.terms:
            out.setdefault(t.group, t.nl)
        return out

    # --------------------------------------------------------------- random effects
    def ranef(self) -> pd.DataFrame:
        """Conditional modes of the random effects with their conditional SDs.

        As ``as.data.frame(ranef(fit, condVar = TRUE))``: columns ``group``, ``term``, ``level``,
        ``mode``, ``sd``.

        Examples
        --------
        >>> fit.ranef().query("group == 'item'").nsmallest(3, "mode")  # doctest: +SKIP
        """
        return self._model.ranef_frame()

    # ------------------------------------------------------------------ prediction
    def predict(self, newdata: pd.DataFrame | None = None, re: bool = True,
                type: str = "link", allow_new_levels: bool = False) -> np.ndarray:
        """Predictions on the link (log-odds) or response (probability) scale.

        Parameters
        ----------
        newdata : DataFrame, optional
            Defaults to the fitted data (rows as given).
        re : bool
            Include the conditional modes of the random effects (lme4's ``re.form = NULL``);
            ``False`` is ``re.form = NA``.
        type : {"link", "response"}
        allow_new_levels : bool
            Levels of a grouping factor not seen in the fit contribute 0 (else an error).

        Examples
        --------
        >>> fit.predict(runs.head(), type="response")  # doctest: +SKIP
        >>> fit.predict(runs.head(), re=False)  # population-level log-odds  # doctest: +SKIP
        """
        if type not in ("link", "response"):
            raise ValueError("type must be 'link' or 'response'")
        nd = self._model.data if newdata is None else newdata
        Xn = self.fixed_design.model_matrix(nd)
        if self.separation is not None:  # rows on a divergent direction predict 0 or 1
            eta = self.separation.combine(Xn)[0]
        else:
            eta = Xn @ self.fixef.to_numpy()
        if re and self._model.ev is not None:
            eta = eta + self._model.random_part(nd, allow_new_levels)
        return expit(eta) if type == "response" else eta

    # ------------------------------------------------------------------- summary
    def summary(self, digits: int = 4) -> str:
        """Text like ``print(summary(fit))`` in lme4.

        Examples
        --------
        >>> print(fit.summary())  # doctest: +SKIP
        """
        return _summary_text(self, digits)


def _fmt(v: float, digits: int) -> str:
    return f"{v:.{digits}g}" if abs(v) < 1e-3 or abs(v) >= 1e5 else f"{v:.{digits}f}"


def _summary_text(res: GlmerResult, digits: int) -> str:
    m = res._model
    lines = []
    if res.fixef_prior is not None:
        lines += [f"Fixef prior: {res.fixef_prior.describe()}",
                  f"Prior dev  : {res.prior_deviance:.4f}", ""]
    lines += ["Generalized linear mixed model fit by maximum likelihood (Laplace Approximation) "
              "['glmerMod']", " Family: binomial  ( logit )", f"Formula: {res.formula}", ""]
    resid = m.pearson_residuals()
    ab = pd.DataFrame({"AIC": [res.aic], "BIC": [res.bic], "logLik": [res.loglik],
                       "deviance": [res.deviance], "df.resid": [res.nobs - res.df]})
    lines += [ab.to_string(index=False, float_format=lambda v: f"{v:.1f}"), ""]
    lines.append("Scaled residuals: ")
    qs = np.quantile(resid, [0, 0.25, 0.5, 0.75, 1])
    lines += [pd.DataFrame([qs], columns=["Min", "1Q", "Median", "3Q", "Max"]).to_string(
        index=False, float_format=lambda v: f"{v:.4f}"), ""]
    lines.append("Random effects:")
    vc = res.varcorr
    rows = []
    for g, grp in vc.groupby("group", sort=False):
        var = grp[grp["var2"] == ""]
        cors = grp[grp["var2"] != ""]
        for i, (_, r) in enumerate(var.iterrows()):
            corr_vals = []
            for _, c in cors.iterrows():
                if c["var1"] == r["var1"] or c["var2"] == r["var1"]:
                    other = c["var2"] if c["var1"] == r["var1"] else c["var1"]
                    if list(var["var1"]).index(other) < i:
                        corr_vals.append(f"{c['sd']:.2f}")
            rows.append([g if i == 0 else "", r["var1"], f"{r['variance']:.4f}", f"{r['sd']:.4f}",
                         " ".join(corr_vals)])
    heads = ["Groups", "Name", "Variance", "Std.Dev.", "Corr"]
    if all(r[4] == "" for r in rows):
        heads, rows = heads[:4], [r[:4] for r in rows]
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(heads)]
    for r in [heads] + rows:  # left-aligned columns, as lme4 prints them
        lines.append(" " + " ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip())
    groups = "; ".join(f"{g}, {n}" for g, n in res.ngroups.items())
    lines += [f"Number of obs: {res.nobs}, groups:  {groups}", "", "Fixed effects:"]
    ct = res.coef_table()
    ft = pd.DataFrame({"Estimate": ct["estimate"].map(lambda v: _num(v, f"{v:.{digits}f}")),
                       "Std. Error": ct["se"].map(lambda v: _num(v, f"{v:.{digits}f}")),
                       "z value": ct["z"].map(lambda v: _num(v, f"{v:.3f}")),
                       "Pr(>|z|)": ct["p"].map(lambda v: _num(v, f"{v:.3g}" if v >= 2e-16
                                                              else "<2e-16")),
                       "": ct["p"].map(_stars)})
    ft.index = [("(Intercept)" if t == "Intercept" else t) for t in ct["term"]]
    lines += [ft.to_string(), "---",
              "Signif. codes:  0 '***' 0.001 '**' 0.01 '*' 0.05 '.' 0.1 ' ' 1"]
    if res.vcov_method == "hessian":
        lines.append("(standard errors from the finite-difference Hessian of the deviance, "
                     "as lme4 1.1-31 computes it)")
    elif res.vcov_method == "hessian_exact":
        lines.append("(standard errors from the finite-difference Hessian of the exact deviance)")
    elif res.vcov_method == "rx":
        lines.append("(standard errors from the final penalised least-squares step, RX)")
    for msg in res.messages:
        lines.append(msg)
    return "\n".join(lines)


def _num(v: float, text: str) -> str:
    """R's spelling of non-finite numbers (NA, Inf, -Inf)."""
    if np.isnan(v):
        return "NA"
    if np.isinf(v):
        return "Inf" if v > 0 else "-Inf"
    return text


def _stars(p: float) -> str:
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else "." if p < 0.1 else ""


class FittedModel:
    """What a result needs to compute random effects, residuals and predictions."""

    def __init__(self, design: Any, ld: Any, ev: Any, data: pd.DataFrame, row_index: np.ndarray,
                 separation: Any = None):
        self.design = design
        self.separation = separation
        self.terms: list[RandomTerm] = design.terms
        self.ld = ld
        self.ev = ev
        self.data = data
        self.row_index = row_index

    def _blocks(self) -> list[tuple[RandomTerm, int, int, np.ndarray]]:
        from .deviance import DenseSolver

        out, uoff, toff = [], 0, 0
        lams = DenseSolver.lambdas_for(self.terms, self.ev.theta)
        for t, L in zip(self.terms, lams):
            out.append((t, uoff, toff, L))
            uoff += t.nl * t.nc
            toff += t.ntheta
        return out

    def ranef_frame(self) -> pd.DataFrame:
        ld, ev = self.ld, self.ev
        if ev is None:  # complete separation: no rows left to determine the random effects
            return pd.concat([pd.DataFrame({"group": t.group, "term": t.cnames[c],
                                            "level": t.levels, "mode": np.nan, "sd": np.nan})
                              for t in self.terms for c in range(t.nc)], ignore_index=True)
        ld._refresh(ev)
        solver = ld.solver
        frames = []
        for t, uoff, _, L in self._blocks():
            U = ev.u[uoff: uoff + t.nl * t.nc].reshape(t.nl, t.nc)
            B = U @ L.T  # b_g = L u_g
            idx = uoff + np.arange(t.nl)[:, None] * t.nc + np.arange(t.nc)[None, :]
            blocks = solver.hinv_blocks(idx)  # nl x nc x nc blocks of H^-1
            for c in range(t.nc):
                var = np.einsum("j,gjk,k->g", L[c], blocks, L[c])
                frames.append(pd.DataFrame({"group": t.group, "term": t.cnames[c],
                                            "level": t.levels, "mode": B[:, c],
                                            "sd": np.sqrt(var)}))
        return pd.concat(frames, ignore_index=True)

    def random_part(self, nd: pd.DataFrame, allow_new_levels: bool) -> np.ndarray:
        from ..formula import _group_codes_for

        ev = self.ev
        out = np.zeros(len(nd))
        for t, uoff, _, L in self._blocks():
            code = _group_codes_for(t, nd)
            new = code < 0
            if new.any() and not allow_new_levels:
                raise FormulaError(f"grouping factor {t.group!r} has level(s) not in the fit, e.g. "
                                   f"row {nd.index[np.flatnonzero(new)[0]]!r}; "
                                   "pass allow_new_levels=True to predict them with zero effect")
            U = ev.u[uoff: uoff + t.nl * t.nc].reshape(t.nl, t.nc)
            B = U @ L.T
            Z = t.model_rows(nd)
            contrib = np.einsum("nc,nc->n", Z, B[np.maximum(code, 0)])
            out += np.where(new, 0.0, contrib)
        return out

    def pearson_residuals(self) -> np.ndarray:
        d = self.design
        k, m = d.k_rows, d.m_rows
        if self.separation is None:
            mu = self.ev.mu[self.row_index]
            return (k - m * mu) / np.sqrt(m * mu * (1 - mu))
        # rows fitted perfectly in the limit have residual 0; the others come from the limit fit
        sep_rows = self.separation.pooled_rows
        out = np.zeros(k.size)
        if self.ev is not None:
            mu_pooled = np.full(sep_rows.size, np.nan)
            mu_pooled[~sep_rows] = self.ev.mu
            mu = mu_pooled[self.row_index]
            ok = ~sep_rows[self.row_index]
            out[ok] = (k[ok] - m[ok] * mu[ok]) / np.sqrt(m[ok] * mu[ok] * (1 - mu[ok]))
        return out
