"""The posterior fit: :class:`BayesGlmerResult`, its summaries, checks and leaderboards."""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..core.result import Result, Summary, frame_records
from ..core.draws import hdi
from ..core.errors import DataError
from ..core.seeds import accepts_seed
from ..mixed.grid import level_means
from ..mixed.links import inverse_link, log_probabilities
from .base import PosteriorResult
from .model import BayesModel, TermPlan, dense_x
from ._arviz import plain_numpy

if TYPE_CHECKING:
    from collections.abc import Sequence

    import arviz as az
    from numpy.typing import ArrayLike

    from ..mixed.fitted import LinearHypothesis
    from ..model import FixedDesign
    from .families import FamilyDesign

__all__ = ["BayesFamilyResult", "BayesGlmerResult", "RankResult", "PPCResult", "RHAT_MAX", "ESS_MIN"]

_SCALES = {"logit": "log-odds", "probit": "probit (normal quantile)", "cloglog": "complementary log-log"}
def _diagnostics_shown(table: pd.DataFrame) -> pd.DataFrame:
    """The posterior table as printed: r_hat with 3 decimals (1.004 and 1.009 differ, and both
    differ from the 1.01 limit), effective sample sizes as whole draws."""
    out = table.copy()
    out["r_hat"] = [f"{v:.3f}" if np.isfinite(v) else "NA" for v in out["r_hat"]]
    for c in ("ess_bulk", "ess_tail"):
        out[c] = np.floor(out[c].fillna(0)).astype("int64")
    return out


RHAT_MAX = 1.01  # Vehtari et al. (2021): split-rank r_hat above 1.01 means the chains disagree
ESS_MIN = 400  # bulk and tail ESS of at least 100 per chain for 4 chains


def flatten_chains(a: np.ndarray) -> np.ndarray:
    """(chain, draw, ...) -> (chain * draw, ...)."""
    return a.reshape((-1,) + a.shape[2:])


@dataclass(frozen=True, eq=False, repr=False)
class RankResult(Result):
    """Posterior rank distribution of the levels of a factor (rank 1 = highest accuracy).

    ``table`` columns: the factor, ``mean_logit`` (posterior mean of the marginal mean on the link
    scale), ``mean_prob`` (its inverse logit), ``expected_rank``, ``p_best`` (posterior probability
    of rank 1) and ``rank_1`` ... ``rank_K`` (probability of each rank).
    """

    table: pd.DataFrame
    factor: str
    draws: np.ndarray = field(repr=False)  # (n_draws, K) marginal means on the link scale, columns as rows

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def _title(self) -> str:
        return f"Posterior ranks of {self.factor} (rank 1 = best)"


@dataclass(frozen=True, eq=False, repr=False)
class PPCResult(Result):
    """Posterior predictive check of accuracy (and optionally its spread across groups).

    ``table`` columns: ``check`` (the statistic checked), the ``by`` column (when given),
    ``observed``, ``pred_mean``, ``conf_low``, ``conf_high`` (central predictive interval of the
    replicated statistic) and ``ppp`` (posterior predictive p-value, P(replicated >= observed));
    values of ``ppp`` near 0 or 1 flag a misfit.
    """

    table: pd.DataFrame
    prob: float

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def _title(self) -> str:
        return "Posterior predictive check"

    def _header(self) -> list[str]:
        return [f"conf_low/conf_high: {self.prob:.0%} central interval of the replicated "
                "statistic; ppp = P(replicated >= observed)"]


@dataclass(frozen=True, eq=False, repr=False)
class BayesGlmerResult(PosteriorResult):
    """A hierarchical Bayesian binomial GLMM fitted by MCMC (:func:`evalmix.bayes.glmer`).

    Attributes
    ----------
    formula : str
    fixef : Series
        Posterior means of the fixed effects (formulaic column names, as :func:`evalmix.glmer`).
    fixef_draws : DataFrame
        One row per posterior draw (chains stacked), one column per fixed effect; this is what
        :func:`evalmix.inference.emmeans` and :func:`evalmix.contrast` use.
    vcov : DataFrame
        Posterior covariance of the fixed effects.
    varcorr : DataFrame
        ``group``, ``var1``, ``var2``, ``variance``, ``sd`` (posterior means; correlations in ``sd``
        where ``var2`` is set) and the 95% HDI of the SD or correlation (``sd_conf_low``,
        ``sd_conf_high``).
    nobs : int
        Rows as given.
    priors : DataFrame
        The prior of every parameter (``parameter``, ``prior``, ``source``).
    parameterization : DataFrame
        The centred/non-centred choice of each random term and the information ratio behind it.
    sampler : str
    seconds : float
        Sampling wall time, compilation included.
    divergences : int
    chains, draws : int
    """

    formula: str
    fixef: pd.Series
    fixef_draws: pd.DataFrame = field(repr=False)
    vcov: pd.DataFrame = field(repr=False)
    varcorr: pd.DataFrame = field(repr=False)
    nobs: int = 0
    priors: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    parameterization: pd.DataFrame = field(repr=False, default_factory=pd.DataFrame)
    sampler: str = ""
    seconds: float = 0.0
    divergences: int = 0
    chains: int = 0
    draws: int = 0
    # required (keyword-only): inference reads the fit through it (evalmix.fitted.PosteriorFit)
    fixed_design: FixedDesign = field(repr=False, kw_only=True)
    _posterior: Any = field(repr=False, default=None, compare=False)  # raw InferenceData
    _bm: BayesModel | None = field(repr=False, default=None, compare=False)
    _cache: dict = field(repr=False, default_factory=dict, compare=False)
    family: str = "binomial"
    link: str = "logit"
    # the random terms' sampling plans without their row arrays, once remove_data() dropped _bm
    _plans: list[TermPlan] | None = field(repr=False, default=None, compare=False)

    @property
    def _model(self) -> BayesModel:
        return self._rows("this")

    def _rows(self, what: str) -> BayesModel:
        """The model with the fit's rows; ``what`` names the caller in the error when the rows
        were dropped."""
        if self._bm is None:
            if self._plans is not None:
                raise DataError(f"{what} needs the rows the fit was made from, which "
                                "remove_data() dropped; keep the fit with its data (or refit)")
            raise ValueError("this result holds no model: only evalmix.bayes.glmer() results do")
        return self._bm

    @property
    def _term_plans(self) -> list[TermPlan]:
        """How each random term was sampled (kept by :meth:`remove_data`)."""
        return self._plans if self._bm is None and self._plans is not None else self._model.plans

    @property
    def has_data(self) -> bool:
        """Whether the fit still holds its per-row data (False after :meth:`remove_data`)."""
        return self._bm is not None

    def remove_data(self) -> BayesGlmerResult:
        """A copy of the fit without its per-row data, like :meth:`GlmerResult.remove_data`.

        The PyMC model, the design (fixed-effect rows, outcomes, random-effect indices), the
        maximum-likelihood pilot fit and the per-row linear predictors and log-likelihoods are
        dropped; the posterior draws (fixed effects, SDs, correlations, random effects), the
        summaries (``posterior_table``, ``summary()``, ``varcorr``, ``ranef()``, diagnostics),
        printing, ``emmeans`` and ``contrast`` with equal weights and ``ranks()`` keep working.
        What needs the rows raises a DataError saying so: ``log_likelihood()``, ``idata``,
        ``loo()``, ``waic()``, ``posterior_predictive()``, and marginal means weighted by the
        data (``weights="proportional"`` etc.).  A rank-deficient fit keeps its factor table,
        which decides which marginal means are estimable.

        Examples
        --------
        >>> small = fit.remove_data()  # doctest: +SKIP
        >>> small.has_data, small.fixef.equals(fit.fixef)  # doctest: +SKIP
        (False, True)
        """
        if self._bm is None:
            return self
        plans = [dataclasses.replace(p, term=dataclasses.replace(
                     p.term, index=np.zeros(0, dtype=np.int64), Z=np.zeros((0, p.term.nc))))
                 for p in self._bm.plans]
        fd = self.fixed_design
        if fd.weights_data is not None and getattr(fd, "keep", None) is None:
            fd = dataclasses.replace(fd, weights_data=None)
        # summaries of the draws stay cached; what was computed per row goes
        cache = {k: v for k, v in self._cache.items() if k not in ("eta", "loglik", "idata")}
        return dataclasses.replace(self, fixed_design=fd, _bm=None, _plans=plans, _cache=cache)

    # ------------------------------------------------------------------ draws
    def _param_draws(self) -> dict[str, np.ndarray]:
        """Reported parameters -> (chain, draw) arrays: fixed effects, SDs, correlations."""
        if "params" in self._cache:
            return self._cache["params"]
        post = self._posterior.posterior
        out: dict[str, np.ndarray] = {}
        names = list(self.fixef_draws.columns)
        fd = self.fixef_draws.to_numpy().reshape(self.chains, self.draws, -1)
        for j, n in enumerate(names):
            out[n] = fd[:, :, j]
        for p in self._term_plans:
            t = p.term
            sd = np.asarray(post[f"sd({p.label})"])
            sd = sd[..., None] if sd.ndim == 2 else sd
            for i, c in enumerate(t.cnames):
                out[f"sd({c}|{t.group})"] = sd[:, :, i]
            if t.nc > 1:
                cor = np.asarray(post[f"cor({p.label})"])
                for i, j in t.cor_pairs:
                    out[f"cor({t.cnames[i]},{t.cnames[j]}|{t.group})"] = cor[:, :, i, j]
        self._cache["params"] = out
        return out

    def _eta_cells(self) -> np.ndarray:
        """Linear predictor of each pooled row for each draw: (n_draws, n_cells)."""
        if "eta" in self._cache:
            return self._cache["eta"]
        model = self._rows("the linear predictor of each row")
        design = model.design
        # the design's fixed columns: a cumulative model's thresholds (in fixef_draws too) hold its
        # intercept, outside X
        eta = self.fixef_draws[list(design.fixed.columns)].to_numpy() @ dense_x(design).T
        if design.offset is not None:
            eta += design.offset
        for p in model.plans:
            t = p.term
            u = self._deviations(p)
            if t.nc == 1:
                eta += u[:, t.index] * t.Z[:, 0]
            else:
                eta += np.einsum("dnc,nc->dn", u[:, t.index, :], t.Z)
        self._cache["eta"] = eta
        return eta

    def _deviations(self, p: TermPlan) -> np.ndarray:
        """Draws of a term's random effects as deviations from zero: (n_draws, levels[, columns]).

        A term that holds the intercept is sampled as ``a_l ~ Normal(Intercept_c, sigma)``; its
        deviations are ``a_l - Intercept_c`` (the intercept is in the fixed effects); one that holds
        level-constant fixed columns, less ``x_l b``.
        """
        u = flatten_chains(np.asarray(self._posterior.posterior[f"({p.label})"]))
        if p.absorbs_intercept:
            mu = flatten_chains(np.asarray(self._posterior.posterior["Intercept_c"]))
            if u.ndim == 2:
                u = u - mu[:, None]
            else:
                u = u.copy()
                u[:, :, p.term.cnames.index("(Intercept)")] -= mu[:, None]
        if p.slope_cols:  # the fixed slopes of its own columns it holds
            b = flatten_chains(np.asarray(self._posterior.posterior["b"]))
            xbar = self._model.fixed_basis["xbar"]
            for j, c in p.slope_cols:
                u[:, :, c] -= b[:, j, None]
                u[:, :, p.term.cnames.index("(Intercept)")] += xbar[j] * b[:, j, None]
        if p.level_x is not None:  # the item-level columns it holds
            b = flatten_chains(np.asarray(self._posterior.posterior["b"]))
            u = u - b @ p.level_x.T
        return u

    def ranef_draws(self, group: str) -> pd.DataFrame:
        """Posterior draws of the random effects of ``group`` (columns ``level`` or ``level:column``)."""
        for p in self._term_plans:
            if p.term.group == group:
                u = self._deviations(p)
                t = p.term
                if t.nc == 1:
                    return pd.DataFrame(u, columns=t.levels)
                cols = [f"{lv}:{c}" for lv in t.levels for c in t.cnames]
                return pd.DataFrame(u.reshape(len(u), -1), columns=cols)
        raise KeyError(f"no random term with grouping factor {group!r}; "
                       f"groups: {[p.term.group for p in self._term_plans]}")

    def ranef(self, hdi_prob: float = 0.95) -> pd.DataFrame:
        """Every random effect (``group``, ``term``, ``level``, in the order of the maximum-likelihood
        fits' ``ranef()``): posterior mean ``estimate``, posterior SD ``se`` and HDI ``conf_low``,
        ``conf_high`` (where those have the conditional ``mode``)."""
        rows = []
        for p in self._term_plans:
            t = p.term
            u = self._deviations(p)
            u = u[..., None] if u.ndim == 2 else u
            for c_i, c in enumerate(t.cnames):
                v = u[:, :, c_i]
                lo, hi = hdi(v, hdi_prob).T
                rows += [(t.group, c, lv, m, s, a, b) for lv, m, s, a, b in
                         zip(t.levels, v.mean(0), v.std(0, ddof=1), lo, hi)]
        return pd.DataFrame(rows, columns=["group", "term", "level", "estimate", "se", "conf_low",
                                           "conf_high"])

    # ------------------------------------------------------------------ likelihood
    def log_likelihood(self) -> np.ndarray:
        """Pointwise log-likelihood of the rows as given: (chain, draw, row).

        Rows pooled for sampling are split back, so that fits of different formulas to the same
        rows have comparable pointwise values (for LOO and WAIC).  For k-of-n rows the log binomial
        coefficient is included.
        """
        if "loglik" in self._cache:
            return self._cache["loglik"]
        design = self._rows("log_likelihood() (and so loo(), waic() and idata)").design
        eta = self._eta_cells()
        lp, lq = log_probabilities(self.link, eta)
        ri, k, m = design.row_index, design.k_rows, design.m_rows
        ll = k * lp[:, ri] + (m - k) * lq[:, ri]
        if getattr(design, "log_binom_rows", None) is not None:  # R's constants (prior weights)
            ll += design.log_binom_rows
        elif design.counts:
            from scipy.special import gammaln
            ll += gammaln(m + 1) - gammaln(k + 1) - gammaln(m - k + 1)
        ll = ll.reshape(self.chains, self.draws, -1)
        self._cache["loglik"] = ll
        return ll

    @property
    def posterior(self) -> Any:
        """The draws as the sampler returned them: ArviZ 1's ``xarray.DataTree`` on PyMC 6 /
        ArviZ 1, ``arviz.InferenceData`` on PyMC 5 / ArviZ 0.x (groups ``posterior`` and
        ``sample_stats``; :attr:`idata` adds the per-row log-likelihood and observed data)."""
        return self._posterior

    @property
    def idata(self) -> az.InferenceData:
        """ArviZ InferenceData: posterior, sample_stats, log_likelihood (per row) and observed data."""
        if "idata" in self._cache:
            return self._cache["idata"]
        import arviz as az
        import xarray as xr

        from ._arviz import group_names, with_groups

        have = group_names(self._posterior)
        ll = self.log_likelihood()
        add: dict[str, Any] = {}
        if "log_likelihood" not in have:
            add["log_likelihood"] = xr.Dataset(
                {"y": (("chain", "draw", "row"), ll)},
                coords={"chain": np.arange(self.chains), "draw": np.arange(self.draws),
                        "row": np.arange(ll.shape[-1])})
        if "observed_data" not in have:
            d = self._rows("idata").design
            add["observed_data"] = xr.Dataset({"y": (("row",), d.k_rows)})
        idata = with_groups(self._posterior, **add)
        self._cache["idata"] = idata
        _ = az  # arviz is the reader of this object
        return idata

    def loo(self, pointwise: bool = False) -> az.ELPDData:
        """PSIS-LOO (``arviz.loo``) on the rows as given."""
        import arviz as az

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return az.loo(self.idata, pointwise=pointwise)

    def waic(self, pointwise: bool = False) -> az.ELPDData:
        """WAIC (``arviz.waic``) on the rows as given (ArviZ 0.x; ArviZ 1 has only :meth:`loo`)."""
        import arviz as az

        idata = self.idata  # a fit without its rows says so first
        if not hasattr(az, "waic"):
            raise NotImplementedError(f"ArviZ {az.__version__} has no WAIC (ArviZ 1 dropped it); "
                                      "use loo(), PSIS-LOO, which estimates the same quantity more reliably")

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            return az.waic(idata, pointwise=pointwise)

    # ------------------------------------------------------------------ summaries
    def posterior_table(self, hdi_prob: float = 0.95, random_effects: bool = False) -> pd.DataFrame:
        """Per parameter (fixed effects, random-effect SDs and correlations; the random effects
        themselves with ``random_effects=True``): the posterior mean ``estimate``, posterior SD
        ``se``, highest-density interval ``conf_low``, ``conf_high``, and the diagnostics
        ``r_hat``, ``ess_bulk``, ``ess_tail``.  ``divergences`` (whole fit) is in
        ``.attrs["divergences"]`` and in the last column.  Fixed effects are on the log-odds scale.

        Examples
        --------
        >>> fit.posterior_table().columns.tolist()  # doctest: +SKIP
        ['parameter', 'estimate', 'se', 'conf_low', 'conf_high', 'r_hat', 'ess_bulk', 'ess_tail', 'divergences']
        """
        key = ("summary", hdi_prob, random_effects)
        if key in self._cache:
            return self._cache[key].copy()
        import arviz as az

        params = dict(self._param_draws())
        if random_effects:
            for p in self._term_plans:
                t = p.term
                u = self._deviations(p).reshape((self.chains, self.draws) + (t.nl, t.nc))
                for li, lv in enumerate(t.levels):
                    for ci, c in enumerate(t.cnames):
                        params[f"({c}|{t.group})[{lv}]"] = u[:, :, li, ci]
        names = list(params)
        arr = np.stack([params[n] for n in names], axis=-1)  # (chain, draw, parameter)
        ds = az.convert_to_dataset({"x": arr}, coords={"p": names}, dims={"x": ["p"]})
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # arviz's rank-normalised split r_hat and bulk/tail ESS (Vehtari et al. 2021); the
            # full az.summary adds MCSE columns and costs ~20x more
            with plain_numpy():
                rhat = az.rhat(ds)["x"].values
                ess_bulk = az.ess(ds, method="bulk")["x"].values
                ess_tail = az.ess(ds, method="tail")["x"].values
        flat = arr.reshape(-1, len(names))
        lo, hi = hdi(flat, hdi_prob).T
        out = pd.DataFrame({"parameter": names, "estimate": flat.mean(0),
                            "se": flat.std(0, ddof=1), "conf_low": lo, "conf_high": hi,
                            "r_hat": rhat,
                            "ess_bulk": ess_bulk, "ess_tail": ess_tail})
        out["divergences"] = self.divergences
        out.attrs["divergences"] = self.divergences
        out.attrs["hdi_prob"] = hdi_prob
        self._cache[key] = out
        return out.copy()

    def summary(self, hdi_prob: float = 0.95, random_effects: bool = False) -> Summary:
        """The posterior as one :class:`~evalmix.core.result.Summary`, like :meth:`GlmerResult.summary`.

        Tables: ``Parameters`` (:meth:`posterior_table`) and ``Random effects`` (``varcorr``);
        the header has the sampler, chains and draws; the notes list what the convergence checks
        found (:meth:`diagnostics`).

        Examples
        --------
        >>> print(fit.summary())  # doctest: +SKIP
        """
        return Summary(self._title(), self._header(hdi_prob),
                       [("Parameters", _diagnostics_shown(self.posterior_table(hdi_prob, random_effects))),
                        ("Random effects", self.varcorr)], self._notes())

    scale = "log-odds"

    def to_frame(self) -> pd.DataFrame:
        return self.posterior_table()

    def _title(self) -> str:
        return f"BayesGlmerResult: {self.formula}"

    def _header(self, hdi_prob: float = 0.95) -> list[str]:
        # the sampler's name is long: the divergence count opens a line of its own (a wrapped
        # line never splits it from its number)
        return [f"binomial ({self.link}), {self.chains} chains x {self.draws} draws, sampler {self.sampler}",
                f"{self.divergences} divergences, {self.seconds:.1f} s; {self.nobs} obs",
                f"scale: {_SCALES.get(self.link, self.link)}; estimate = posterior mean, se = posterior SD, "
                f"conf_low/conf_high = {hdi_prob:.0%} highest-density interval"]

    def _notes(self) -> list[str]:
        return self.diagnostics()

    def to_dict(self) -> dict[str, Any]:
        return {"table": frame_records(self.posterior_table()), "formula": self.formula,
                "scale": self.scale,
                "sampler": self.sampler, "seconds": self.seconds, "divergences": self.divergences,
                "priors": frame_records(self.priors),
                "parameterization": frame_records(self.parameterization)}

    def diagnostics(self) -> list[str]:
        """Problems the convergence checks found (empty when the draws look trustworthy)."""
        s = self.posterior_table()
        msgs = []
        if self.divergences:
            msgs.append(f"{self.divergences} divergent transitions: the sampler missed part of the "
                        "posterior; raise target_accept (e.g. 0.9) or reparameterise")
        bad = s[s["r_hat"] > RHAT_MAX]
        if len(bad):
            msgs.append(f"r_hat > {RHAT_MAX} for {', '.join(bad['parameter'])} "
                        f"(max {bad['r_hat'].max():.3f}): the chains disagree; run longer (e.g. tune=2000, "
                        "draws=2000) or change the form of the term at fault (parameterization=)")
        low = s[(s["ess_bulk"] < ESS_MIN) | (s["ess_tail"] < ESS_MIN)]
        if len(low):
            msgs.append(f"effective sample size < {ESS_MIN} for {', '.join(low['parameter'])} "
                        f"(min bulk {low['ess_bulk'].min():.0f}, tail {low['ess_tail'].min():.0f}); "
                        "draw more (draws=, chains=)")
        return msgs

    def wald_test(self, hypotheses: str | Sequence[str] | ArrayLike | pd.DataFrame,
                  rhs: ArrayLike | None = None) -> LinearHypothesis:
        """Wald chi-square test of linear hypotheses about the fixed effects on the posterior's
        normal approximation (posterior means ``fixef`` and covariance ``vcov``); see
        :func:`evalmix.linear_hypothesis`.  The posterior of ``L beta`` itself is
        :func:`evalmix.contrast` on :func:`evalmix.inference.emmeans` of this fit.

        Examples
        --------
        >>> post.wald_test("modelM2 = modelM3").df  # doctest: +SKIP
        1
        """
        from ..mixed.fitted import linear_hypothesis

        return linear_hypothesis(self, hypotheses, rhs)

    # ------------------------------------------------------------------ leaderboards
    def ranks(self, factor: str = "model", higher_is_better: bool = True) -> RankResult:
        """Posterior rank distribution of the levels of ``factor`` (P(best), expected rank).

        Each level's marginal mean on the logit scale (fixed effects averaged over the other
        factors with equal weights, covariates at their means: the grid of
        :func:`evalmix.inference.emmeans`) is computed for every draw and the levels are ranked within the
        draw.  A level whose mean is not estimable (an empty cell of a rank-deficient fit) is
        left out, with a :class:`~evalmix.core.errors.DataWarning` naming it.

        Examples
        --------
        >>> fit.ranks("model").to_frame()[["model", "p_best", "expected_rank"]]  # doctest: +SKIP
        """
        means = level_means(self, factor)
        # a level whose mean is not estimable (an empty cell of a rank-deficient fit) is not ranked
        ok = means.check_estimable(f"the marginal mean of {factor}")
        draws = means.linear_predictor()[:, ok]
        levels = means.frame[factor][ok].tolist()
        order = -draws if higher_is_better else draws
        rk = order.argsort(axis=1).argsort(axis=1) + 1  # rank 1 = best
        K = len(levels)
        probs = np.stack([(rk == r).mean(axis=0) for r in range(1, K + 1)], axis=1)
        tab = pd.DataFrame({factor: levels, "mean_logit": draws.mean(0),
                            "mean_prob": inverse_link(self.link, draws).mean(0), "expected_rank": rk.mean(0),
                            "p_best": probs[:, 0]})
        for r in range(K):
            tab[f"rank_{r + 1}"] = probs[:, r]
        # rows best first; the draws' columns follow the rows (rank_sets_posterior labels them so)
        order = np.argsort(tab["expected_rank"].to_numpy(), kind="stable")
        return RankResult(tab.iloc[order].reset_index(drop=True), factor, draws[:, order])

    # ------------------------------------------------------------------ checks
    @accepts_seed
    def posterior_predictive(self, by: str | None = None, spread: str | None = None,
                             prob: float = 0.9, n_draws: int = 1000,
                             rng: int | np.random.Generator | None = None) -> PPCResult:
        """Posterior predictive check: replicate the outcomes and compare statistics.

        Parameters
        ----------
        by : str, optional
            Column of the data: check the accuracy within each of its levels (default: overall).
        spread : str, optional
            Column of the data (e.g. the item): also check the SD across its levels of their
            accuracy, which a model with too little random variation underestimates.
        prob : float
            Probability of the central predictive interval.
        n_draws : int
            Posterior draws used (a random subset).
        rng : int or Generator, optional
            Random numbers: a seed or a numpy Generator.

        Examples
        --------
        >>> fit.posterior_predictive(by="model").to_frame()  # doctest: +SKIP
        """
        rng = np.random.default_rng(rng)
        design = self._rows("posterior_predictive()").design
        idx, eta = self._predictive_draws(design.data, by, spread, n_draws, rng)
        p = inverse_link(self.link, eta)[:, design.row_index]
        yrep = rng.binomial(design.m_rows.astype(np.int64), p).astype(float)
        return _ppc_table(design.data, by, spread, prob, design.k_rows, design.m_rows, yrep, "accuracy")

    def _predictive_draws(self, data: pd.DataFrame, by: str | None, spread: str | None, n_draws: int,
                          rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The checked ``by``/``spread`` columns' draws: a random subset of the posterior draws
        (their indices) and their linear predictors."""
        for col in (by, spread):
            if col is not None and col not in data.columns:
                raise DataError(f"column {col!r} is not one the fit used; columns: {list(data.columns)}")
        eta = self._eta_cells()
        idx = rng.choice(len(eta), size=min(n_draws, len(eta)), replace=False)
        return idx, eta[idx]


def _ppc_table(data: pd.DataFrame, by: str | None, spread: str | None, prob: float, observed: np.ndarray,
               denom: np.ndarray, yrep: np.ndarray, check: str) -> PPCResult:
    """Observed against replicated ``sum(observed) / sum(denom)``, overall or within each level of
    ``by``, and its SD across the levels of ``spread``."""
    a = (1 - prob) / 2
    rows = []
    groups = [("all", np.ones(len(observed), dtype=bool))] if by is None else \
        [(lv, (data[by] == lv).to_numpy()) for lv in pd.unique(data[by])]
    for lv, sel in groups:
        obs = observed[sel].sum() / denom[sel].sum()
        rep = yrep[:, sel].sum(1) / denom[sel].sum()
        rows.append((check, lv, obs, rep.mean(), *np.quantile(rep, [a, 1 - a]), (rep >= obs).mean()))
        if spread is not None:
            codes, uniq = pd.factorize(data.loc[sel, spread])
            dg = np.bincount(codes, denom[sel], len(uniq))
            obs_s = np.std(np.bincount(codes, observed[sel], len(uniq)) / dg, ddof=1)
            rep_s = np.array([np.std(np.bincount(codes, r[sel], len(uniq)) / dg, ddof=1) for r in yrep])
            rows.append((f"sd of {check} across {spread}", lv, obs_s, rep_s.mean(),
                         *np.quantile(rep_s, [a, 1 - a]), (rep_s >= obs_s).mean()))
    tab = pd.DataFrame(rows, columns=["check", by or "group", "observed", "pred_mean", "conf_low",
                                      "conf_high", "ppp"])
    return PPCResult(tab, prob)


_FAMILY_TEXT = {"gaussian": "Gaussian (identity link)", "cumulative": "cumulative link",
                "beta": "beta (logit link; glmmTMB's precision phi)",
                "betabinomial": "beta-binomial (logit link; glmmTMB's precision phi)"}


@dataclass(frozen=True, eq=False, repr=False)
class BayesFamilyResult(BayesGlmerResult):
    """A Bayesian mixed model with a Gaussian, cumulative-link, beta or beta-binomial likelihood
    (:func:`evalmix.bayes.lmer`, :func:`evalmix.bayes.clmm`, :func:`evalmix.bayes.glmmtmb`).

    Everything of :class:`BayesGlmerResult` applies; the family's own parameters are rows of
    :meth:`posterior_table`: ``sigma`` (the Gaussian residual SD), ``phi`` (the precision of the
    beta families, glmmTMB's ``sigma(fit)``) or the thresholds ``1|2``, ``2|3``... of a
    cumulative model (whose ``link`` is ``"identity"``, the latent scale, and ``cumulative_link``
    the logit or probit).  For a cumulative model ``fixef`` has an ``(Intercept)`` equal to minus
    the mean threshold, the origin of emmeans' latent scale, so that :func:`evalmix.inference.emmeans` gives
    ``x beta - mean(theta)`` as emmeans' ``mode = "latent"`` does; the posterior table lists the
    thresholds and the slopes instead.
    """

    cumulative_link: str = ""
    response_scale: str = "mean"
    levels: tuple[str, ...] = ()  # the categories of a cumulative model, in order

    @property
    def scale(self) -> str:  # type: ignore[override]
        if self.family == "gaussian":
            return "response"
        if self.family == "cumulative":
            return f"latent ({self.cumulative_link})"
        return "log-odds of the mean score"

    def _param_draws(self) -> dict[str, np.ndarray]:
        if "params" in self._cache:
            return self._cache["params"]
        base = dict(super()._param_draws())
        post = self._posterior.posterior
        out: dict[str, np.ndarray] = {}
        if self.family == "cumulative":
            cuts = np.asarray(post["thresholds"])
            for j, name in enumerate(self.threshold_names):
                out[name] = cuts[:, :, j]
            base.pop("(Intercept)", None)
        out.update(base)
        for extra in ("sigma", "phi"):
            if extra in post:
                out[extra] = np.asarray(post[extra])
        self._cache["params"] = out
        return out

    @property
    def threshold_names(self) -> list[str]:
        """``1|2``, ``2|3``... of a cumulative model (ordinal's names); empty otherwise."""
        lv = self.levels
        return [f"{a}|{b}" for a, b in zip(lv[:-1], lv[1:])]

    @property
    def threshold_draws(self) -> pd.DataFrame:
        """Posterior draws of the thresholds of a cumulative model: one row per draw (chains
        stacked, as ``fixef_draws``), one column per threshold (``1|2``, ``2|3``...); with
        ``fixef_draws`` this is what :func:`evalmix.ordinal.clmm_emmeans` reads.

        Examples
        --------
        >>> fit.threshold_draws.columns.tolist()  # doctest: +SKIP
        ['1|2', '2|3', '3|4', '4|5']
        """
        if self.family != "cumulative":
            raise ValueError(f"a {self.family} model has no thresholds; only evalmix.bayes.clmm() fits do")
        return pd.DataFrame(self._flat("thresholds"), columns=self.threshold_names)

    def _family_design(self, what: str) -> FamilyDesign:
        from .families import FamilyDesign

        design = self._rows(what).design
        if not isinstance(design, FamilyDesign):
            raise ValueError("this result holds no family model: only evalmix.bayes.lmer(), clmm() "
                             "and glmmtmb() results do")
        return design

    def _flat(self, name: str) -> np.ndarray:
        return flatten_chains(np.asarray(self._posterior.posterior[name]))

    def log_likelihood(self) -> np.ndarray:
        """Pointwise log-likelihood of each row: (chain, draw, row), every constant included
        (the binomial coefficient of k of n too), as ``logLik`` of lme4, ordinal and glmmTMB."""
        if "loglik" in self._cache:
            return self._cache["loglik"]
        from scipy import special, stats

        design = self._family_design("log_likelihood() (and so loo(), waic() and idata)")
        eta = self._eta_cells()
        y = design.y
        if self.family == "gaussian":
            ll = stats.norm.logpdf(y, eta, self._flat("sigma")[:, None])
        elif self.family in ("beta", "betabinomial"):
            phi = self._flat("phi")[:, None]
            mu = special.expit(eta)
            a, b = mu * phi, (1 - mu) * phi
            if self.family == "beta":
                ll = stats.beta.logpdf(y, a, b)
            else:
                ll = stats.betabinom.logpmf(y, design.m, a, b)
        else:
            cuts = self._flat("thresholds")  # as reported: eta here is on the uncentred columns
            ext = np.concatenate([np.full((len(cuts), 1), -np.inf), cuts, np.full((len(cuts), 1), np.inf)], axis=1)
            code = y.astype(np.int64)
            hi, lo = ext[:, code + 1] - eta, ext[:, code] - eta
            cdf = stats.logistic.cdf if self.cumulative_link == "logit" else stats.norm.cdf
            sf = stats.logistic.sf if self.cumulative_link == "logit" else stats.norm.sf
            # P(lo < e <= hi) from whichever tail keeps the difference accurate
            upper = lo > 0
            p = np.where(upper, sf(lo) - sf(hi), cdf(hi) - cdf(lo))
            ll = np.log(np.clip(p, 1e-300, None))
        ll = ll.reshape(self.chains, self.draws, -1)
        self._cache["loglik"] = ll
        return ll

    def summary(self, hdi_prob: float = 0.95, random_effects: bool = False) -> Summary:
        """The posterior as one :class:`~evalmix.core.result.Summary` (see
        :meth:`BayesGlmerResult.summary`), the family's parameters among the ``Parameters``.

        Examples
        --------
        >>> print(fit.summary())  # doctest: +SKIP
        """
        return super().summary(hdi_prob, random_effects)

    def _title(self) -> str:
        return f"BayesFamilyResult: {self.formula}"

    def _header(self, hdi_prob: float = 0.95) -> list[str]:
        fam = _FAMILY_TEXT.get(self.family, self.family)
        if self.family == "cumulative":
            fam = f"cumulative link ({self.cumulative_link}; P(Y <= j) = F(theta_j - eta))"
        return [f"{fam}, {self.chains} chains x {self.draws} draws, sampler {self.sampler}",
                f"{self.divergences} divergences, {self.seconds:.1f} s; {self.nobs} obs",
                f"scale: {self.scale}; estimate = posterior mean, se = posterior SD, "
                f"conf_low/conf_high = {hdi_prob:.0%} highest-density interval"]

    def ranks(self, factor: str = "model", higher_is_better: bool = True) -> RankResult:
        """Posterior rank distribution of the levels of ``factor``, as
        :meth:`BayesGlmerResult.ranks`: on the mean score (Gaussian), the latent scale
        (cumulative: ``mean_latent``) or the logit of the mean score (beta families, with
        ``mean_prob`` the mean score)."""
        res = super().ranks(factor, higher_is_better)
        if self.link != "identity":
            return res
        name = "mean" if self.family == "gaussian" else "mean_latent"
        tab = res.table.drop(columns="mean_prob").rename(columns={"mean_logit": name})
        return RankResult(tab, res.factor, res.draws)

    @accepts_seed
    def posterior_predictive(self, by: str | None = None, spread: str | None = None,
                             prob: float = 0.9, n_draws: int = 1000,
                             rng: int | np.random.Generator | None = None) -> PPCResult:
        """Posterior predictive check of the mean response (and of its SD across the levels of
        ``spread``): the mean score (Gaussian, beta), the proportion of successes (beta-binomial)
        or the mean rating code 1..J (cumulative), observed against replicated.

        Parameters are those of :meth:`BayesGlmerResult.posterior_predictive`.
        """
        from scipy import special

        rng = np.random.default_rng(rng)
        design = self._family_design("posterior_predictive()")
        idx, eta = self._predictive_draws(design.data, by, spread, n_draws, rng)
        y, m = design.y, design.m
        if self.family == "gaussian":
            yrep = rng.normal(eta, self._flat("sigma")[idx][:, None])
            obs_y, check = y, "mean"
        elif self.family in ("beta", "betabinomial"):
            phi = self._flat("phi")[idx][:, None]
            mu = special.expit(eta)
            p = rng.beta(np.maximum(mu * phi, 1e-12), np.maximum((1 - mu) * phi, 1e-12))
            if self.family == "beta":
                yrep, obs_y, check = p, y, "mean score"
            else:
                yrep, obs_y, check = rng.binomial(m.astype(np.int64), p).astype(float), y, "proportion"
        else:
            cuts = self._flat("thresholds")[idx]
            e = rng.logistic(size=eta.shape) if self.cumulative_link == "logit" else rng.normal(size=eta.shape)
            # Y = 1 + number of thresholds below the latent value eta + e
            yrep = 1.0 + (cuts[:, None, :] < (eta + e)[:, :, None]).sum(axis=2)
            obs_y, check = y + 1.0, "mean rating (1..J)"
        denom = m if self.family == "betabinomial" else np.ones(len(y))
        return _ppc_table(design.data, by, spread, prob, obs_y, denom, yrep, check)
