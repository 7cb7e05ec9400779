"""The fitted GLMM: :class:`GlmerResult`."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from .._result import Result, frame_records
from ..errors import FormulaError
from ..formula import FixedDesign, RandomTerm
from .deviance import inverse_link
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
    nagq: int = 1  # points of adaptive Gauss-Hermite quadrature (1: Laplace)

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
        # exp(beta) is an odds ratio only on the logit scale
        ex = np.exp if self.link == "logit" else (lambda v: np.full_like(v, np.nan))
        return pd.DataFrame({
            "term": self.fixef.index, "estimate": est, "se": se, "z": z,
            "p": 2 * stats.norm.sf(np.abs(z)), "ci_low": lo, "ci_high": hi,
            "odds_ratio": ex(est), "or_low": ex(lo), "or_high": ex(hi)})

    def to_frame(self) -> pd.DataFrame:
        return self.coef_table()

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update({"formula": self.formula, "loglik": self.loglik, "aic": self.aic,
                    "bic": self.bic, "df": self.df, "nobs": self.nobs,
                    "theta": {k: float(v) for k, v in self.theta.items()},
                    "varcorr": frame_records(self.varcorr), "converged": self.converged,
                    "singular": self.singular, "messages": list(self.messages),
                    "vcov_method": self.vcov_method, "optimizer": self.optimizer.to_dict()})
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
        eta = self.fixed_design.model_matrix(nd) @ self.fixef.to_numpy()
        if newdata is None:
            off = self._model.design.offset_rows
            if off is not None:
                eta = eta + off
        elif self.fixed_design.offsets:  # new rows: the formula's offset() terms, as lme4
            eta = eta + self.fixed_design.offset(nd)
        if re:
            eta = eta + self._model.random_part(nd, allow_new_levels)
        return inverse_link(self.link, eta) if type == "response" else eta

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
    approx = ("Laplace Approximation" if res.nagq == 1
              else f"Adaptive Gauss-Hermite Quadrature, nAGQ = {res.nagq}")
    lines = [f"Generalized linear mixed model fit by maximum likelihood ({approx}) "
             "['glmerMod']", f" Family: binomial  ( {res.link} )", f"Formula: {res.formula}", ""]
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
    ft = pd.DataFrame({"Estimate": ct["estimate"].map(lambda v: f"{v:.{digits}f}"),
                       "Std. Error": ct["se"].map(lambda v: f"{v:.{digits}f}"),
                       "z value": ct["z"].map(lambda v: f"{v:.3f}"),
                       "Pr(>|z|)": ct["p"].map(lambda v: f"{v:.3g}" if v >= 2e-16 else "<2e-16"),
                       "": ct["p"].map(_stars)})
    ft.index = [("(Intercept)" if t == "Intercept" else t) for t in ct["term"]]
    lines += [ft.to_string(), "---",
              "Signif. codes:  0 '***' 0.001 '**' 0.01 '*' 0.05 '.' 0.1 ' ' 1"]
    if res.vcov_method == "hessian":
        lines.append("(standard errors from the finite-difference Hessian of the deviance, "
                     "as lme4 1.1-31 computes it)")
    elif res.vcov_method == "hessian_exact":
        lines.append("(standard errors from the finite-difference Hessian of the exact deviance)")
    else:
        lines.append("(standard errors from the final penalised least-squares step, RX)")
    for msg in res.messages:
        lines.append(msg)
    return "\n".join(lines)


def _stars(p: float) -> str:
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else "." if p < 0.1 else ""


class FittedModel:
    """What a result needs to compute random effects, residuals and predictions."""

    def __init__(self, design: Any, ld: Any, ev: Any, data: pd.DataFrame, row_index: np.ndarray):
        self.design = design
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
        mu = self.ev.mu[self.row_index]
        k, m = d.k_rows, d.m_rows
        return (k - m * mu) / np.sqrt(m * mu * (1 - mu))
