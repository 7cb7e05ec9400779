"""The fitted GLMM: :class:`GlmerResult`."""

from __future__ import annotations

import dataclasses
import textwrap
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..core import tables
from ..core.result import REPR_MAX_ROWS, frame_records
from ..core.arguments import check_arguments
from ..core.errors import DataError
from ..core.seeds import accepts_seed
from ..mixed.fitted import wald_z_table
from ..model import FixedDesign, RandomTerm, r_formula, term_lambdas
from ..mixed.result import CoefTable, ConfidenceIntervals, MixedResult, ModelRows
from ..mixed.summary import correlation_lines
from .control import DEFAULT_CONTROL, GlmerControl
from ..mixed.convergence import OptimizerReport

if TYPE_CHECKING:


    from .deviance import Evaluation, LaplaceDeviance
    from ..model import GlmmDesign
    from .prior import NormalPrior
    from ..mixed.separation import Separation


def varcorr_table(design: GlmmDesign, theta: np.ndarray) -> pd.DataFrame:
    """lme4's ``as.data.frame(VarCorr(fit))`` of a design's random terms at ``theta``: ``group``,
    ``var1``, ``var2``, ``variance`` (covariance where ``var2`` is set), ``sd`` (correlation there).

    Examples
    --------
    >>> from evalmix.simulate import glmm_runs
    >>> from evalmix.model import build_design
    >>> d = build_design("correct ~ model + (1|item)", glmm_runs(2, 5, 1, rng=1))
    >>> varcorr_table(d, np.array([2.0]))[["group", "variance", "sd"]].values.tolist()
    [['item', 4.0, 2.0]]
    """
    rows = []
    seen: dict[str, int] = {}
    for t, L in zip(design.terms, term_lambdas(design.terms, theta)):
        # a factor named twice (from ``||``) is labelled g, g.1, ... as R's make.unique does
        n = seen.get(t.group, 0)
        seen[t.group] = n + 1
        group = t.group if n == 0 else f"{t.group}.{n}"
        S = L @ L.T
        sd = np.sqrt(np.diag(S))
        for i in range(t.nc):
            rows.append((group, t.cnames[i], "", S[i, i], sd[i]))
        for i, j in t.cor_pairs:
            cor = S[i, j] / (sd[i] * sd[j]) if sd[i] > 0 and sd[j] > 0 else np.nan
            rows.append((group, t.cnames[j], t.cnames[i], S[i, j], cor))
    return pd.DataFrame(rows, columns=["group", "var1", "var2", "variance", "sd"])


@dataclass(frozen=True, eq=False, repr=False)  # holds DataFrames: identity equality, hashable
class GlmerResult(MixedResult):
    """A binomial-logit GLMM fitted by maximum likelihood (Laplace), as ``lme4::glmer``.

    Attributes
    ----------
    formula : str
    fixef : Series
        Fixed effects by column name, as R names them (``(Intercept)``, ``modelb``, ``I(age^2)``).
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
        How the optimiser ran: evaluations, final gradient, how it ended (and a log of the outer
        iterations when ``control.log``).
    control : GlmerControl
        The tolerances, limits and thresholds the fit ran with (lme4's ``glmerControl``).
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
        (see :mod:`evalmix.mixed.separation`).

    Examples
    --------
    >>> from evalmix import glmer
    >>> from evalmix.simulate import glmm_runs
    >>> runs = glmm_runs(3, 60, 3, rng=2)
    >>> fit = glmer("correct ~ model + (1|item) + (1|item:run)", runs)
    >>> fit.df, fit.nobs, list(fit.varcorr["group"])
    (5, 540, ['item:run', 'item'])
    >>> fit.coef_table()["term"].tolist()
    ['(Intercept)', 'modelM2', 'modelM3']
    """

    formula: str
    fixef: pd.Series
    vcov: pd.DataFrame
    theta: pd.Series
    loglik: float
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
    separation: Separation | None = field(repr=False, default=None)  # when estimates diverge
    fixef_prior: NormalPrior | None = field(repr=False, default=None)  # of a penalised fit
    prior_deviance: float | None = None  # blme's "Prior dev" (penalty + normalising constant)
    nagq: int = 1  # points of adaptive Gauss-Hermite quadrature (1: Laplace)
    control: GlmerControl = field(repr=False, default=DEFAULT_CONTROL)

    # ------------------------------------------------------------------ tables
    def coef_table(self, conf_level: float = 0.95) -> CoefTable:
        """Fixed effects with Wald SE, z, p, CI and odds ratios (``summary(fit)$coefficients``).

        ``estimate``, ``conf_low`` and ``conf_high`` are on the log-odds scale; ``statistic`` is
        the Wald z; ``odds_ratio``, ``or_conf_low`` and ``or_conf_high`` are their exponentials.

        Examples
        --------
        >>> fit.coef_table().columns.tolist()  # doctest: +SKIP
        ['term', 'estimate', 'se', 'statistic', 'p_value', 'conf_low', 'conf_high', 'odds_ratio', 'or_conf_low', 'or_conf_high']
        """
        check_arguments(conf_level=conf_level)
        tab = wald_z_table(self.fixef.index, self.fixef.to_numpy(), np.sqrt(np.diag(self.vcov.to_numpy())),
                           conf_level)
        # exp(beta) is an odds ratio only on the logit scale
        ex = np.exp if self.link == "logit" else (lambda v: np.full_like(v, np.nan))
        tab = tab.assign(odds_ratio=ex(tab["estimate"].to_numpy()), or_conf_low=ex(tab["conf_low"].to_numpy()),
                         or_conf_high=ex(tab["conf_high"].to_numpy()))
        return CoefTable(table=tab, test="z", conf_level=conf_level)

    @property
    def scale(self) -> str:
        """Scale of ``estimate``: log-odds for the logit link, else the link's own scale."""
        return "log-odds" if self.link == "logit" else f"{self.link} scale"

    def _header(self) -> list[str]:
        groups = "; ".join(f"{g}, {n}" for g, n in self.ngroups.items())
        state = "singular; " if self.singular else ""
        state += "converged" if self.converged else "NOT converged"
        approx = {0: "nAGQ = 0 (beta inside PIRLS)", 1: "Laplace"}.get(
            self.nagq, f"adaptive Gauss-Hermite (nAGQ = {self.nagq})")
        return [f"binomial ({self.link}), {approx} ML; {self.nobs} obs, groups: {groups}; "
                f"AIC {self.aic:.1f}, BIC {self.bic:.1f}, logLik {self.loglik:.1f} ({state})",
                ("scale: log-odds (odds_ratio = exp(estimate)); statistic: Wald z"
                 if self.link == "logit" else f"scale: {self.link} link; statistic: Wald z")]

    def _notes(self) -> list[str]:
        return list(self.messages)

    @property
    def approximation(self) -> str:
        """How the likelihood is computed, as lme4 names it in its title (lme4 calls its
        ``nAGQ = 0`` fit "Adaptive Gauss-Hermite Quadrature, nAGQ = 0" too)."""
        if self.nagq == 1:
            return "Laplace Approximation"
        return f"Adaptive Gauss-Hermite Quadrature, nAGQ = {self.nagq}"

    def lme4_text(self, width: int = 80) -> str:
        """The fit as lme4's ``print(fit)`` shows a ``merMod``: title, family and link, formula,
        the AIC/BIC/logLik/deviance/df.resid line, the random effects (Groups, Name, Variance,
        Std.Dev., Corr), the numbers of observations and groups, the fixed effects, and the
        optimizer's convergence line with lme4's messages (singular fit, failed checks) when
        there are any. ``repr(fit)`` and ``evalmix fit`` print it, then the Wald table
        (:meth:`wald_text`).

        Examples
        --------
        >>> import evalmix
        >>> runs = evalmix.simulate.glmm_runs(2, 40, 2, rng=1)
        >>> print(evalmix.glmer("correct ~ model + (1|item)", runs).lme4_text())
        Generalized linear mixed model fit by maximum likelihood (Laplace
          Approximation) [glmerMod]
         Family: binomial  ( logit )
        Formula: correct ~ model + (1 | item)
             AIC      BIC   logLik deviance df.resid
        185.8741 195.0997 -89.9371 179.8741      157
        Random effects:
         Groups Name        Variance Std.Dev.
         item   (Intercept) 1.892    1.376
        Number of obs: 160, groups:  item, 40
        Fixed Effects:
        (Intercept)      modelM2
             -1.186        2.589
        """
        title = f"Generalized linear mixed model fit by maximum likelihood ({self.approximation})"
        if len(title) + 5 + len("glmerMod") > width:  # wrapped as lme4 wraps it
            lines = textwrap.wrap(title, width=width - 2, subsequent_indent="  ",
                                  break_on_hyphens=False)
            lines[-1] += " [glmerMod]"
        else:
            lines = [f"{title} [glmerMod]"]
        lines += [f" Family: binomial  ( {self.link} )", f"Formula: {r_formula(self.formula)}"]
        if self.fixef_prior is not None:
            lines += [f"Fixef prior: {self.fixef_prior.describe()}"]
        head = ["AIC", "BIC", "logLik", "deviance", "df.resid"]
        vals = [f"{round(v, 4):.4f}" for v in (self.aic, self.bic, self.loglik, self.deviance)]
        vals.append(str(self.nobs - self.df))
        w = max(len(t) for t in head + vals)
        lines += ["".join(h.rjust(w) + " " for h in head), "".join(v.rjust(w) + " " for v in vals)]
        lines += ["Random effects:", *tables.varcorr_lines(self.varcorr)]
        groups = "; ".join(f"{g}, {n}" for g, n in self.ngroups.items())
        lines += [f"Number of obs: {self.nobs}, groups:  {groups}", "Fixed Effects:"]
        lines += tables.named_values(list(map(str, self.fixef.index)), tables.r_format(self.fixef.to_numpy()),
                                     width)
        msgs = list(self.messages)
        if msgs or not self.converged:
            code = 0 if self.optimizer.converged else 1
            lines += [f"optimizer ({self.optimizer.optimizer}) convergence code: {code} "
                      f"({'OK' if code == 0 else 'see fit.optimizer'}) ; "
                      f"0 optimizer warnings; {len(msgs)} lme4 warnings ", *tables.wrap_lines(msgs, width)]
        return "\n".join(lines)

    def wald_text(self, max_rows: int | None = REPR_MAX_ROWS) -> str:
        """The Wald table (:meth:`coef_table`) under its heading, as ``print(fit)`` and
        ``evalmix fit`` show it after the lme4 block (long tables cut to ``max_rows``)."""
        text = tables.to_text(self.coef_table().to_frame(), max_rows=max_rows, more="; coef_table() has them all")
        return f"Fixed effects (Wald z; {self.scale}):\n{text}"

    def __repr__(self) -> str:
        return f"{self.lme4_text()}\n\n{self.wald_text()}"

    __str__ = __repr__

    def _repr_html_(self) -> str:
        import html

        return (f"<pre>{html.escape(self.lme4_text())}</pre>\n"
                f"<p><i>Fixed effects (Wald z; {html.escape(self.scale)})</i></p>\n"
                + self.coef_table().to_frame().to_html(index=False))

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update({"formula": self.formula, "scale": self.scale, "loglik": self.loglik,
                    "aic": self.aic,
                    "bic": self.bic, "df": self.df, "nobs": self.nobs,
                    "theta": {k: (float(v) if np.isfinite(v) else None)
                              for k, v in self.theta.items()},
                    "varcorr": frame_records(self.varcorr), "converged": self.converged,
                    "singular": self.singular, "messages": list(self.messages),
                    "vcov_method": self.vcov_method, "optimizer": self.optimizer.to_dict(),
                    "control": self.control.to_dict(),
                    "separation": None if self.separation is None else self.separation.to_dict(),
                    "prior_deviance": self.prior_deviance})
        return out

    def _model_rows(self) -> ModelRows:
        m = self._model
        return ModelRows(data=m.data if self.has_data else None, terms=m.terms, offset=m.offset_rows)

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
    def _fixed_part(self, X: np.ndarray) -> np.ndarray:
        if self.separation is not None:  # rows on a divergent direction predict 0 or 1
            return np.asarray(self.separation.combine(X)[0], dtype=float)
        return super()._fixed_part(X)

    def _random_part(self, nd: pd.DataFrame, allow_new_levels: bool) -> np.ndarray:
        if self._model.u is None:  # complete separation: no random effects were estimated
            return np.zeros(len(nd))
        return super()._random_part(nd, allow_new_levels)

    def _term_modes(self, k: int, term: RandomTerm) -> np.ndarray:
        return self._model.term_modes(k)

    # --------------------------------------------------------------------- intervals
    @accepts_seed
    def confint(self, method: str = "wald", level: float = 0.95, parm: str = "all", *,
                nsim: int = 200, rng: int | None = None, n_jobs: int | None = None,
                progress: bool = False) -> ConfidenceIntervals:
        """Confidence intervals of the fixed effects and random-effect SDs (lme4's ``confint``).

        Parameters
        ----------
        method : {"wald", "profile", "boot"}
            ``"wald"``: estimate -+ z SE (``method = "Wald"``; no interval for the SDs).
            ``"profile"``: profile likelihood (``method = "profile"``): each end solves
            ``zeta = -+z`` for the signed root of the profile deviance; SDs on their own scale.
            ``"boot"``: percentile intervals of a parametric bootstrap (``bootMer`` with new
            random effects per replicate; ``method = "boot"``), ``nsim`` refits with ``rng``,
            on ``n_jobs`` joblib workers, with a progress bar if ``progress``.
        level : float
        parm : {"all", "beta_", "theta_"}
            All parameters, the fixed effects only, or the SDs only (lme4's shortcuts).

        Returns
        -------
        ConfidenceIntervals
            ``term``, ``estimate``, ``conf_low``, ``conf_high``, ``method``.

        Examples
        --------
        >>> fit.confint("profile", parm="beta_").to_frame().columns.tolist()  # doctest: +SKIP
        ['term', 'estimate', 'conf_low', 'conf_high', 'method']
        """
        from .intervals import confint

        return confint(self, method, level, parm, nsim=nsim, seed=rng, n_jobs=n_jobs,
                       progress=progress)

    # ---------------------------------------------------------------- the snapshot
    @property
    def has_data(self) -> bool:
        """Whether the fit still holds its per-row data (False after :meth:`remove_data`)."""
        return self._model.design is not None

    def remove_data(self) -> GlmerResult:
        """A copy of the fit without its per-row data (lme4 keeps it in the ``merMod`` too).

        The design arrays (fixed-effect matrix, response, random-effect indices), the fitted
        rows and the residuals are dropped; the estimates, ``vcov``, ``varcorr``, ``ranef()``,
        ``summary()`` (its residual quantiles are kept), printing, ``emmeans`` and ``contrast``
        with equal weights, and ``predict(newdata)`` keep working. What needs the rows raises a
        DataError saying so: ``predict()`` without ``newdata``, ``confint(method="profile" or
        "boot")``, ``bootmer``, and marginal means weighted by the data (``weights=
        "proportional"`` etc.). A rank-deficient fit keeps its factor table, which decides
        which marginal means are estimable.

        Examples
        --------
        >>> from evalmix import glmer
        >>> from evalmix.simulate import glmm_runs
        >>> runs = glmm_runs(2, 30, 2, rng=1)
        >>> fit = glmer("correct ~ model + (1|item)", runs)
        >>> small = fit.remove_data()
        >>> small.fixef.equals(fit.fixef), small.has_data, fit.has_data
        (True, False, True)
        >>> bool((small.predict(runs.head(3)) == fit.predict(runs.head(3))).all())
        True
        """
        if not self.has_data:
            return self
        fd = self.fixed_design
        if fd.weights_data is not None and getattr(fd, "keep", None) is None:
            fd = dataclasses.replace(fd, weights_data=None)
        return dataclasses.replace(self, fixed_design=fd, _model=self._model.without_data())

    # ------------------------------------------------------------------- summary
    # summary() is MixedResult's (lme4's layout); these hooks say what glmer prints differently
    def _summary_title(self, ct: CoefTable) -> list[str]:
        return [f"Generalized linear mixed model fit by maximum likelihood ({self.approximation}) "
                "[glmerMod]", f" Family: binomial  ( {self.link} )"]

    def _summary_criteria(self) -> list[str]:
        prior = [] if self.fixef_prior is None else [
            f"Fixef prior: {self.fixef_prior.describe()}", f"Prior dev  : {self.prior_deviance:.4f}", ""]
        return prior + super()._summary_criteria()

    def _summary_correlation(self) -> list[str]:
        return correlation_lines(self.vcov)

    def _scaled_residuals(self) -> list[float]:
        return list(self._model.residual_quantiles)

    def _summary_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return [("Scaled residuals", pd.DataFrame([self._model.residual_quantiles],
                                                  columns=["min", "q1", "median", "q3", "max"]))]

    def _summary_messages(self) -> list[str]:
        out = [_VCOV_NOTES[self.vcov_method]]
        changed = self.control.changed()
        if changed:
            out.append("control: " + ", ".join(f"{k} = {v!r}" for k, v in changed.items()))
        return out + list(self.messages)


_VCOV_NOTES = {
    "hessian": "standard errors from the finite-difference Hessian of the deviance, as lme4 "
               "1.1-31 computes it",
    "hessian_exact": "standard errors from the finite-difference Hessian of the exact deviance",
    "rx": "standard errors from the final penalised least-squares step (RX)",
    "none": "no standard errors: every row is fitted perfectly (complete separation)",
}


class FittedModel:
    """What a result needs for random effects, residuals and predictions.

    Everything is computed once from the final evaluation when the fit ends; no solver is kept,
    so nothing a result method does refactors shared state.
    """

    def __init__(self, design: GlmmDesign, ld: LaplaceDeviance | None, ev: Evaluation | None, data: pd.DataFrame,
                 row_index: np.ndarray, separation: Separation | None = None):
        self.terms: list[RandomTerm] = list(design.terms)
        self.data: pd.DataFrame | None = data
        # arrays only (no solver): profiles and the bootstrap refit from it; read-only from here
        self.design: Any = _freeze_arrays(design)
        self.offset_rows: np.ndarray | None = None
        self._resid: np.ndarray | None = None
        k, m = design.k_rows, design.m_rows
        if ev is None:  # complete separation: nothing left to determine the random effects
            self.u, self.lambdas = None, []
            self._ranef = pd.concat([pd.DataFrame({"group": t.group, "term": t.cnames[c],
                                                   "level": t.levels, "mode": np.nan,
                                                   "sd": np.nan})
                                     for t in self.terms for c in range(t.nc)], ignore_index=True)
            self._resid = _frozen(np.zeros(k.size))
            self.residual_quantiles = _quantiles(self._resid)
            return
        self.u = _frozen(ev.u)
        self.lambdas = [_frozen(L) for L in term_lambdas(self.terms, ev.theta)]
        assert ld is not None  # the deviance comes with its final evaluation
        self._ranef = self._ranef_frame(ld, ev)
        if separation is None:
            mu = ev.mu[row_index]
            self._resid = _frozen((k - m * mu) / np.sqrt(m * mu * (1 - mu)))
        else:
            # rows fitted perfectly in the limit have residual 0; the rest come from the limit fit
            sep_rows = separation.pooled_rows
            mu_pooled = np.full(sep_rows.size, np.nan)
            mu_pooled[~sep_rows] = ev.mu
            mu = mu_pooled[row_index]
            ok = ~sep_rows[row_index]
            resid = np.zeros(k.size)
            resid[ok] = (k[ok] - m[ok] * mu[ok]) / np.sqrt(m[ok] * mu[ok] * (1 - mu[ok]))
            self._resid = _frozen(resid)
        self.residual_quantiles = _quantiles(self._resid)
        off = getattr(design, "offset_rows", None)
        self.offset_rows = None if off is None else _frozen(off)

    @classmethod
    def from_modes(cls, terms: list[RandomTerm], theta: np.ndarray, u: np.ndarray, hinv: np.ndarray,
                   residual_quantiles: tuple[float, ...]) -> FittedModel:
        """The model part of a fit made without rows (the grid path), in the state
        :meth:`without_data` leaves: scalar ``terms`` in lme4's order, ``theta``, the spherical
        modes ``u`` and the diagonal of ``H^-1`` for them (the conditional variances over
        ``theta^2``), and the quantiles of the Pearson residuals."""
        out = object.__new__(cls)
        out.terms = [dataclasses.replace(t, index=np.zeros(0, dtype=np.int64), Z=np.zeros((0, t.nc)))
                     for t in terms]
        out.data, out.design, out._resid, out.offset_rows = None, None, None, None
        out.u = _frozen(u)
        out.lambdas = [_frozen(L) for L in term_lambdas(out.terms, theta)]
        frames = []
        for t, uoff, L in out._blocks():
            if t.nc != 1:
                raise ValueError(f"from_modes: term {t.group!r} is not a scalar intercept")
            lam = float(L[0, 0])
            frames.append(pd.DataFrame({"group": t.group, "term": t.cnames[0], "level": t.levels,
                                        "mode": lam * out.u[uoff: uoff + t.nl],
                                        "sd": lam * np.sqrt(hinv[uoff: uoff + t.nl])}))
        out._ranef = pd.concat(frames, ignore_index=True)
        out.residual_quantiles = tuple(float(v) for v in residual_quantiles)
        return out

    def require_data(self, what: str, hint: str = "use the fit before remove_data()"
                     ) -> pd.DataFrame:
        """The fitted rows, or a DataError saying ``what`` needs them after ``remove_data()``."""
        if self.data is None:
            raise DataError(f"{what}: the fitted rows are needed, and remove_data() dropped them "
                            f"from this fit; {hint}")
        return self.data

    def without_data(self) -> FittedModel:
        """A copy holding only per-level and per-parameter values (see ``remove_data``)."""
        out = object.__new__(FittedModel)
        out.__dict__.update(self.__dict__)
        # terms keep their levels and covariate specs (to predict new rows), not the row arrays
        out.terms = [dataclasses.replace(t, index=np.zeros(0, dtype=np.int64),
                                         Z=np.zeros((0, t.nc))) for t in self.terms]
        out.data, out.design, out._resid, out.offset_rows = None, None, None, None
        return out

    def _modes(self) -> np.ndarray:
        """The spherical modes ``u``; a completely separated fit has none (and no blocks to read)."""
        if self.u is None:
            raise ValueError("a completely separated fit has no random-effect modes")
        return self.u

    def _blocks(self) -> list[tuple[RandomTerm, int, np.ndarray]]:
        out, uoff = [], 0
        for t, L in zip(self.terms, self.lambdas):
            out.append((t, uoff, L))
            uoff += t.nl * t.nc
        return out

    def _ranef_frame(self, ld: LaplaceDeviance, ev: Evaluation) -> pd.DataFrame:
        ld._refresh(ev)
        solver = ld.solver
        frames = []
        for t, uoff, L in self._blocks():
            U = self._modes()[uoff: uoff + t.nl * t.nc].reshape(t.nl, t.nc)
            B = U @ L.T  # b_g = L u_g
            idx = uoff + np.arange(t.nl)[:, None] * t.nc + np.arange(t.nc)[None, :]
            blocks = solver.hinv_blocks(idx)  # nl x nc x nc blocks of H^-1
            for c in range(t.nc):
                var = np.einsum("j,gjk,k->g", L[c], blocks, L[c])
                frames.append(pd.DataFrame({"group": t.group, "term": t.cnames[c],
                                            "level": t.levels, "mode": B[:, c],
                                            "sd": np.sqrt(var)}))
        return pd.concat(frames, ignore_index=True)

    def ranef_frame(self) -> pd.DataFrame:
        return self._ranef.copy()

    def term_modes(self, k: int) -> np.ndarray:
        """The modes ``b = L u`` of random term ``k``: its levels x its coefficients."""
        t, uoff, L = self._blocks()[k]
        return self._modes()[uoff: uoff + t.nl * t.nc].reshape(t.nl, t.nc) @ L.T

    def pearson_residuals(self) -> np.ndarray:
        if self._resid is None:
            self.require_data("the residuals")
        assert self._resid is not None
        return self._resid


def _quantiles(resid: np.ndarray) -> tuple[float, ...]:
    """Min, quartiles and max of the Pearson residuals (``summary()``'s "Scaled residuals")."""
    return tuple(float(v) for v in np.quantile(resid, [0, 0.25, 0.5, 0.75, 1]))


def _freeze_arrays(design: Any) -> Any:
    """Make the arrays of a fitted design read-only (the fit is a snapshot): the pooled X, the
    response, the row maps, offsets, weights and each random term's index and covariates."""
    X = design.X
    arrays = [getattr(X, a, None) for a in ("X", "Xu", "pat")]
    arrays += [getattr(design, a, None) for a in ("k", "m", "row_index", "k_rows", "m_rows",
                                                  "offset", "offset_rows", "weights_rows")]
    for t in design.terms:
        arrays += [t.index, t.Z]
    for a in arrays:
        if isinstance(a, np.ndarray):
            a.flags.writeable = False
    return design


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.array(a, dtype=float, copy=True)
    a.flags.writeable = False
    return a
