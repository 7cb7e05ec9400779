"""Hierarchical Bayesian mixed models from lme4 formulas (PyMC + ArviZ).

:func:`glmer` takes the formula :func:`evalmix.glmer` takes and returns posterior draws instead of
maximum-likelihood estimates: honest uncertainty with few items, variance components away from the
boundary artefacts of ML, and rank probabilities for leaderboards.  Its twins do the same for the
other engines: :func:`lmer` (Gaussian, :func:`evalmix.lmer`), :func:`clmm` (cumulative link,
:func:`evalmix.clmm`) and :func:`glmmtmb` (beta and beta-binomial, :func:`evalmix.glmmtmb`).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..core.arguments import check_arguments
from ..data.runs import RunsData
from ..core.errors import SamplingWarning
from ..core.seeds import accepts_seed
from .model import BayesModel, build_model
from .priors import DEFAULT_PRIORS, Prior, PriorSpec, PriorTable, resolve_priors
from .result import BayesFamilyResult, BayesGlmerResult, PPCResult, RankResult, flatten_chains
from .sampling import available_samplers, choose_sampler, likelihood_for, run_sampler

__all__ = ["BayesFamilyResult", "BayesGlmerResult", "DEFAULT_PRIORS", "PPCResult", "Prior", "PriorTable",
           "RankResult", "available_samplers", "clmm", "default_priors", "glmer", "glmmtmb", "lmer"]


def default_priors(formula: str, data: RunsData, priors: Mapping[str, PriorSpec] | None = None, *,
                   missing: str = "raise", family: str = "binomial", link: str = "logit",
                   weights: str | ArrayLike | None = None) -> PriorTable:
    """The prior of every parameter of ``formula`` on ``data`` (after the ``priors`` overrides).

    ``data`` (a DataFrame or a path) is validated as by :func:`evalmix.glmer`; ``missing`` as there.
    ``family`` ``"gaussian"`` (:func:`lmer`), ``"cumulative"`` (:func:`clmm`, with its ``link``),
    ``"beta"`` or ``"betabinomial"`` (:func:`glmmtmb`) gives the priors of those models instead.
    ``weights`` as the fitting function takes them (the trials of a proportion response).

    Examples
    --------
    >>> from evalmix.simulate import glmm_runs
    >>> d = glmm_runs(2, 10, 2, rng=1)
    >>> default_priors("correct ~ model + (1|item)", d).table["prior"].tolist()
    ['Normal(mu=0, sigma=5)', 'Normal(mu=0, sigma=2.5)', 'HalfNormal(sigma=2.5)']
    """
    if family != "binomial":
        from .families import build_family_design, family_priors

        design = build_family_design(formula, data, _check_family(family), weights=weights)
        return PriorTable(family_priors(design, priors, link)[1], formula)
    from ..model import build_design, check_data

    table = resolve_priors(build_design(formula, check_data(formula, data, missing=missing, weights=weights),
                                        weights=weights), priors)[1]
    return PriorTable(table, formula)


@accepts_seed
def glmer(formula: str, data: RunsData, *, priors: Mapping[str, PriorSpec] | None = None,
          draws: int = 1000, tune: int = 1000, chains: int = 4, sampler: str = "auto",
          rng: int | np.random.Generator | np.random.SeedSequence | None = None, progressbar: bool = True,
          parameterization: str | Mapping[str, str] = "auto", target_accept: float | None = None,
          max_treedepth: int = 10, cores: int | None = None, missing: str = "raise",
          weights: str | ArrayLike | None = None, offset: str | ArrayLike | None = None, link: str = "logit",
          contrasts: dict[str, Any] | None = None, trials: str | None = None) -> BayesGlmerResult:
    """Fit a hierarchical Bayesian binomial GLMM by MCMC (NUTS).

    Same formulas as :func:`evalmix.glmer` (lme4 syntax, R's fixed-part functions, factor level
    orders and contrasts; random terms ``(1|g)``, ``(1|a:b)``, ``(1|a/b)``, ``(1 + x|g)`` with an
    LKJ prior on the correlation, ``(1 + x||g)``; ``cbind(k, n - k)``, factor and proportion
    responses; ``offset()`` terms), and the same ``weights``, ``offset``, ``link``, ``contrasts``
    and ``trials`` arguments.  Identical rows are pooled into binomial counts before sampling;
    log-likelihoods are reported for the rows as given.

    Parameters
    ----------
    formula : str
    data : DataFrame or path
        Validated as by :func:`evalmix.glmer`.
    priors : dict, optional
        Overrides of the default priors (see :mod:`evalmix.bayes.priors` and
        :func:`default_priors`), e.g. ``{"fixed": ("normal", 0, 1), "item": ("half_normal", 1)}``.
    draws, tune, chains : int
        Posterior draws per chain after ``tune`` adaptation steps.
    sampler : {"auto", "nutpie", "numpyro", "pymc"}
        ``"auto"`` takes the fastest installed (nutpie, then numpyro, then PyMC's NUTS).
    rng : int, numpy.random.Generator or numpy.random.SeedSequence, optional
        Chain ``i`` samples with the stream ``np.random.SeedSequence(rng).spawn(chains)[i]``, so
        a seed gives the same draws whatever ``cores`` and wherever the chains run.
    progressbar : bool
        A bar advanced as chains finish.
    parameterization : "auto", "centered", "noncentered" or dict group -> form
        How random terms are sampled; ``"auto"`` chooses per term from the information each level
        carries (see :mod:`evalmix.bayes.model`).
    target_accept : float, optional
        NUTS target acceptance rate.  The default, 0.65, is the efficiency-optimal rate of HMC in
        high dimension (Beskos et al. 2013, 0.651), which the reparameterisations above make
        attainable: on AI4Math it takes 8-9 leapfrog steps per draw instead of 15 at Stan's 0.8,
        with no divergences.  Raise it (0.9, 0.95) if divergences are reported.  A model with an
        observation-level term (at most 2 rows per level, e.g. lme4's ``(1|herd/obs)`` for
        overdispersion) gets 0.8 by default: on cbpp 0.65 left a divergence in 2 of 4 seeds.
    max_treedepth : int
        Longest NUTS trajectory, ``2**max_treedepth - 1`` steps (Stan's default 10).  Lower values
        trade effective sample size for time: on AI4Math a depth of 3 still gives bulk ESS above 600
        for every parameter from 4 x 1000 draws in about half the time.
    cores : int, optional
        Chains run at once (default: all cores, up to ``chains``): nutpie's in threads of this
        process, PyMC's and numpyro's in worker processes (``cores=1``: one after the other here).
        Inside ``joblib.parallel_config(backend="dask")`` (or ``"ray"``, ``"loky"``) each chain
        is a task on that backend's workers instead (see :func:`evalmix.core.parallel.parallel_map`
        and ``docs/scale.md``).
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).
    weights, offset, link, contrasts, trials
        As in :func:`evalmix.glmer`: prior weights (a proportion response with ``weights`` = the
        trials is the k-of-n model), a known term added to the linear predictor, the binomial
        link (``"logit"``, ``"probit"``, ``"cloglog"``), factor codings, a column of trials.
        Logit models without an offset run on the compiled kernel where nutpie is installed;
        offsets and the other links run on PyMC's own graph.

    Returns
    -------
    BayesGlmerResult

    Warns
    -----
    SamplingWarning
        Divergent transitions, r_hat > 1.01, or bulk or tail ESS < 400 for a fixed effect, SD or
        correlation.

    Examples
    --------
    >>> from evalmix.simulate import glmm_runs
    >>> d = glmm_runs(3, 30, 2, rng=1)
    >>> fit = glmer("correct ~ model + (1|item)", d, draws=200, tune=200, chains=2, rng=1,
    ...             progressbar=False)  # doctest: +SKIP
    >>> fit.to_frame()[["parameter", "estimate", "conf_low", "conf_high", "r_hat"]]  # doctest: +SKIP
    """
    check_arguments(draws=draws, tune=tune, chains=chains, rng=rng, cores=cores, missing=missing)
    from ..model import check_data

    data = check_data(formula, data, missing=missing, weights=weights, offset=offset, trials=trials)
    sampler = choose_sampler(sampler)
    # the recipe travels to the workers that run chains elsewhere (processes, a cluster)
    recipe = partial(build_model, formula, data, priors=priors, parameterization=parameterization,
                     likelihood=likelihood_for(sampler), weights=weights, offset=offset, link=link,
                     contrasts=contrasts, trials=trials)
    bm = recipe()
    if target_accept is None:
        n_rows = len(bm.design.k)  # the pooled binomial rows
        target_accept = 0.8 if any(p.term.nl * 2 >= n_rows for p in bm.plans) else 0.65
    idata, seconds, desc = run_sampler(recipe, sampler=sampler, draws=int(draws), tune=int(tune),
                                       chains=int(chains), seed=rng, progressbar=progressbar,
                                       target_accept=target_accept, cores=cores,
                                       max_treedepth=max_treedepth, built=bm)
    return _result(formula, bm, idata, seconds, desc)


def _result(formula: str, bm: BayesModel, idata: Any, seconds: float, desc: str) -> BayesGlmerResult:
    post = idata.posterior
    chains, draws = post.sizes["chain"], post.sizes["draw"]
    names = bm.fixed_names
    cols = []
    for j, n in enumerate(names):
        if j == bm.intercept_col:
            cols.append(flatten_chains(np.asarray(post["Intercept"])))
        else:
            k = list(post["b"].coords["coef"].values).index(n)
            cols.append(flatten_chains(np.asarray(post["b"]))[:, k])
    fd = pd.DataFrame(np.column_stack(cols) if cols else np.zeros((chains * draws, 0)), columns=names)
    div = int(np.asarray(idata.sample_stats["diverging"]).sum()) if "diverging" in idata.sample_stats else 0
    fit = BayesGlmerResult(
        formula=formula, fixef=fd.mean().rename("estimate"), fixef_draws=fd,
        vcov=fd.cov(), varcorr=pd.DataFrame(), nobs=bm.design.nobs, priors=bm.prior_table,
        parameterization=bm.parameterization_table(), sampler=desc, seconds=seconds,
        divergences=div, chains=chains, draws=draws, fixed_design=bm.design.fixed, link=bm.link,
        _posterior=idata, _bm=bm)
    object.__setattr__(fit, "varcorr", _varcorr(fit))
    for msg in fit.diagnostics():
        warnings.warn(msg, SamplingWarning, stacklevel=3)
    return fit


def _varcorr(fit: BayesGlmerResult) -> pd.DataFrame:
    from ..core.draws import hdi

    params = fit._param_draws()
    rows = []
    for p in fit._model.plans:
        t = p.term
        for c in t.cnames:
            sd = flatten_chains(params[f"sd({c}|{t.group})"])
            lo, hi = hdi(sd[:, None], 0.95).T
            rows.append((t.group, c, "", float((sd ** 2).mean()), float(sd.mean()), lo[0], hi[0]))
        for i, j in t.cor_pairs:
            cor = flatten_chains(params[f"cor({t.cnames[i]},{t.cnames[j]}|{t.group})"])
            sdi = flatten_chains(params[f"sd({t.cnames[i]}|{t.group})"])
            sdj = flatten_chains(params[f"sd({t.cnames[j]}|{t.group})"])
            lo, hi = hdi(cor[:, None], 0.95).T
            rows.append((t.group, t.cnames[j], t.cnames[i], float((cor * sdi * sdj).mean()),
                         float(cor.mean()), lo[0], hi[0]))
    return pd.DataFrame(rows, columns=["group", "var1", "var2", "variance", "sd", "sd_conf_low",
                                 "sd_conf_high"])


def _check_family(family: str) -> str:
    from .families import FAMILIES

    if family not in FAMILIES:
        raise ValueError(f"family must be 'binomial' or one of {sorted(FAMILIES)}, not {family!r}")
    return family


@accepts_seed
def lmer(formula: str, data: RunsData, *, priors: Mapping[str, PriorSpec] | None = None,
         draws: int = 1000, tune: int = 1000, chains: int = 4, sampler: str = "auto",
         rng: int | np.random.Generator | np.random.SeedSequence | None = None, progressbar: bool = True,
         parameterization: str | Mapping[str, str] = "auto", target_accept: float = 0.9,
         max_treedepth: int = 10, cores: int | None = None,
         contrasts: dict[str, Any] | None = None, weights: str | ArrayLike | None = None) -> BayesFamilyResult:
    """Fit a Bayesian linear mixed model by MCMC (NUTS): the twin of :func:`evalmix.lmer`.

    ``y ~ Normal(X beta + Z u, sigma)`` with lme4 formulas (random intercepts, ``(1 + x|g)`` with
    an LKJ prior, ``(1 + x||g)``, nesting, crossing).  The default priors are scaled on the
    response as rstanarm scales them: ``Intercept ~ Normal(mean(y), 2.5 sd(y))`` (at the centred
    columns), ``Normal(0, 2.5 sd(y))`` per coefficient (``/ sd(x)`` for a covariate); the residual
    SD ``sigma`` and the random-effect SDs have brms's half-Student-t prior with 3 degrees of
    freedom, scaled by ``sd(y)`` (brms uses ``mad(y)``).  :func:`default_priors` with
    ``family="gaussian"`` prints them; ``priors={"sigma": ("half_normal", 10)}`` overrides one.

    Parameters
    ----------
    formula : str
    data : DataFrame or path
        Rows with a missing value in a column the model reads are dropped with a DataWarning.
    priors, draws, tune, chains, sampler, rng, progressbar, parameterization, max_treedepth, cores
        As in :func:`glmer` (``priors`` also takes ``"sigma"``).
    target_accept : float
        NUTS target acceptance.  0.9 rather than Stan's 0.8: on sleepstudy's ``(Days|Subject)``
        0.8 leaves an occasional divergent transition (1-3 in 4,000 draws for some seeds) and 0.9
        none, for about 25% more gradient evaluations.
    contrasts : dict, optional
        Factor codings, as in :func:`evalmix.lmer`.
    weights : None
        Refused with an :class:`~evalmix.core.errors.ArgumentError`: :func:`evalmix.lmer` fits no
        prior weights, so neither does its twin.  ``offset()`` terms of the formula are fitted.

    Returns
    -------
    BayesFamilyResult
        ``emmeans`` gives posterior mean scores (identity link).

    Warns
    -----
    SamplingWarning
        Divergent transitions, r_hat > 1.01, or bulk or tail ESS < 400.

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"y": [1.0, 2.0, 3.0, 2.5, 4.0, 3.5] * 2, "g": list("aabbcc") * 2})
    >>> str(default_priors("y ~ 1 + (1|g)", d, family="gaussian").table["prior"].iloc[-1])
    'HalfStudentT(nu=3, sigma=0.986013)'
    >>> fit = lmer("y ~ 1 + (1|g)", d, draws=100, tune=100, chains=1, rng=1,
    ...            progressbar=False)  # doctest: +SKIP
    """
    return _fit_family(formula, data, "gaussian", None, priors=priors, draws=draws, tune=tune,
                       chains=chains, sampler=sampler, seed=rng, progressbar=progressbar,
                       parameterization=parameterization, target_accept=target_accept,
                       max_treedepth=max_treedepth, cores=cores, contrasts=contrasts, weights=weights)


@accepts_seed
def clmm(formula: str, data: RunsData, *, link: str = "logit", priors: Mapping[str, PriorSpec] | None = None,
         draws: int = 1000, tune: int = 1000, chains: int = 4, sampler: str = "auto",
         rng: int | np.random.Generator | np.random.SeedSequence | None = None, progressbar: bool = True,
         parameterization: str | Mapping[str, str] = "auto", target_accept: float | None = None,
         max_treedepth: int = 10, cores: int | None = None,
         contrasts: dict[str, Any] | None = None, weights: str | ArrayLike | None = None) -> BayesFamilyResult:
    """Fit a Bayesian cumulative-link mixed model by MCMC (NUTS): the twin of :func:`evalmix.clmm`.

    ``P(Y <= j) = F(theta_j - x beta - z u)`` with ordinal's sign convention (a positive
    coefficient moves ratings up), ``F`` the logistic (``link="logit"``) or normal
    (``"probit"``) distribution function; the thresholds ``theta_1 < ... < theta_{J-1}`` are
    sampled through an ordered transform.  The response is integer ratings without gaps or an
    ordered categorical, at least three categories.  Default priors: Normal(0, 5) per threshold
    (``"threshold"``; 2.5 with the probit link), the logit-scale defaults of :func:`glmer` for
    the coefficients and SDs (Normal(0, 1.5) and HalfNormal(1.5) with the probit link).

    Parameters
    ----------
    formula : str
        Random terms as in :func:`glmer` (intercepts, slopes, nested, crossed).
    data : DataFrame or path
    link : {"logit", "probit"}
    priors, draws, tune, chains, sampler, rng, progressbar, parameterization, max_treedepth, cores
        As in :func:`glmer` (``priors`` also takes ``"threshold"``).
    target_accept : float, optional
        NUTS target acceptance; by default 0.9 with the logit link, 0.95 with the probit.  With a
        handful of raters or items the posterior of their SD has a narrow neck near zero (on
        ordinal's wine data, 9 judges, Stan's 0.8 leaves a few divergent transitions with the
        logit link, and 0.9 an occasional one with the probit link: 1 in 4,000 draws).
    contrasts : dict, optional
    weights : None
        Refused with an :class:`~evalmix.core.errors.ArgumentError`: :func:`evalmix.clmm` fits no case
        weights.  ``offset()`` terms of the formula are fitted, added to ``x beta`` as ordinal
        adds them.

    Returns
    -------
    BayesFamilyResult
        The thresholds are rows ``1|2``, ``2|3``... of the posterior table; ``emmeans`` is on the
        latent scale, ``x beta - mean(theta)`` as emmeans' ``mode = "latent"``, and
        :func:`evalmix.ordinal.clmm_emmeans` gives every mode (``"latent"``, ``"prob"``,
        ``"mean.class"``) as posterior means with equal-tailed credible intervals;
        :func:`evalmix.ordinal.clmm_ref_grid` their grids, for :func:`evalmix.contrast`.

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"rating": [1, 2, 3, 2, 3, 1] * 3, "judge": list("aabbcc") * 3})
    >>> default_priors("rating ~ 1 + (1|judge)", d, family="cumulative").table["parameter"].tolist()
    ['1|2', '2|3', 'sd((Intercept)|judge)']
    >>> fit = clmm("rating ~ 1 + (1|judge)", d, draws=100, tune=100, chains=1, rng=1,
    ...            progressbar=False)  # doctest: +SKIP
    """
    from .families import CUMULATIVE_LINKS

    if link not in CUMULATIVE_LINKS:
        raise ValueError(f"link must be one of {CUMULATIVE_LINKS}, not {link!r}")
    if target_accept is None:
        target_accept = 0.95 if link == "probit" else 0.9
    return _fit_family(formula, data, "cumulative", link, priors=priors, draws=draws, tune=tune,
                       chains=chains, sampler=sampler, seed=rng, progressbar=progressbar,
                       parameterization=parameterization, target_accept=target_accept,
                       max_treedepth=max_treedepth, cores=cores, contrasts=contrasts, weights=weights)


@accepts_seed
def glmmtmb(formula: str, data: RunsData, *, family: str = "beta", priors: Mapping[str, PriorSpec] | None = None,
            draws: int = 1000, tune: int = 1000, chains: int = 4, sampler: str = "auto",
            rng: int | np.random.Generator | np.random.SeedSequence | None = None, progressbar: bool = True,
            parameterization: str | Mapping[str, str] = "auto", target_accept: float = 0.9,
            max_treedepth: int = 10, cores: int | None = None,
            contrasts: dict[str, Any] | None = None, weights: str | ArrayLike | None = None) -> BayesFamilyResult:
    """Fit a Bayesian beta or beta-binomial mixed model by MCMC: the twin of :func:`evalmix.glmmtmb`.

    glmmTMB's parameterisation, logit link: ``family="beta"``, scores ``0 < y < 1`` with
    ``y ~ Beta(mu phi, (1 - mu) phi)``; ``family="betabinomial"``, ``cbind(k, n - k) ~ ...`` with
    ``k ~ BetaBinomial(n, mu phi, (1 - mu) phi)``; ``mu = plogis(eta)`` and the precision ``phi``
    is glmmTMB's ``sigma(fit)``.  Default priors: those of :func:`glmer` on the logit scale and
    a half-Student-t(3, 0, 10) on ``phi`` (``priors={"phi": ...}``).

    Parameters
    ----------
    formula : str
    data : DataFrame or path
    family : {"beta", "betabinomial"}
    priors, draws, tune, chains, sampler, rng, progressbar, parameterization, max_treedepth, cores
        As in :func:`glmer` (``priors`` also takes ``"phi"``).
    target_accept : float
        NUTS target acceptance.  0.9 rather than Stan's 0.8: on glmmTMB's cbpp beta-binomial model
        (15 herds, an SD near its boundary) 0.8 left one divergent transition in 4,000 draws for one
        seed in eight on PyMC 6, 0.9 none in eight, for about 20% more gradient evaluations.
    contrasts : dict, optional
    weights : str or array, optional
        As in :func:`evalmix.glmmtmb`: the trials of a proportion response
        (``family="betabinomial"``, ``p ~ ...`` with ``weights="n"`` is ``cbind(p n, n - p n)``);
        the beta family refuses them.  ``offset()`` terms of the formula are fitted.

    Returns
    -------
    BayesFamilyResult
        ``emmeans`` on the logit of the mean score; ``regrid`` or ``type="response"`` gives the
        mean score.

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"score": [0.2, 0.4, 0.5, 0.7, 0.3, 0.6], "g": list("aabbcc")})
    >>> default_priors("score ~ 1 + (1|g)", d, family="beta").table["parameter"].tolist()
    ['(Intercept)', 'sd((Intercept)|g)', 'phi']
    >>> fit = glmmtmb("score ~ 1 + (1|g)", d, draws=100, tune=100, chains=1, rng=1,
    ...               progressbar=False)  # doctest: +SKIP
    """
    if family not in ("beta", "betabinomial"):
        raise ValueError(f"family must be 'beta' or 'betabinomial', not {family!r}")
    return _fit_family(formula, data, family, None, priors=priors, draws=draws, tune=tune,
                       chains=chains, sampler=sampler, seed=rng, progressbar=progressbar,
                       parameterization=parameterization, target_accept=target_accept,
                       max_treedepth=max_treedepth, cores=cores, contrasts=contrasts, weights=weights)


def _fit_family(formula: str, data: RunsData, family: str, link: str | None, *,
                priors: Mapping[str, PriorSpec] | None, draws: int, tune: int, chains: int, sampler: str,
                seed: int | np.random.Generator | np.random.SeedSequence | None, progressbar: bool,
                parameterization: str | Mapping[str, str], target_accept: float, max_treedepth: int,
                cores: int | None, contrasts: dict[str, Any] | None,
                weights: str | ArrayLike | None) -> BayesFamilyResult:
    from .families import build_family_model, unstandardize

    check_arguments(draws=draws, tune=tune, chains=chains, seed=seed, cores=cores)
    sampler = choose_sampler(sampler)
    recipe = partial(build_family_model, formula, data, family, priors=priors,
                     parameterization=parameterization, link=link, contrasts=contrasts, weights=weights)
    bm = recipe()
    idata: Any
    idata, seconds, desc = run_sampler(recipe, sampler=sampler, draws=int(draws), tune=int(tune),
                                       chains=int(chains), seed=seed, progressbar=progressbar,
                                       target_accept=target_accept, cores=cores,
                                       max_treedepth=max_treedepth, built=bm)
    post = idata.posterior
    unstandardize(post, bm)
    nc, nd = post.sizes["chain"], post.sizes["draw"]
    design = bm.design
    cols = {}
    if family == "cumulative":
        # the origin of emmeans' latent scale: minus the mean threshold
        cols["(Intercept)"] = -flatten_chains(np.asarray(post["thresholds"])).mean(axis=1)
    b = flatten_chains(np.asarray(post["b"])) if "b" in post else None
    coef_names = list(post["b"].coords["coef"].values) if "b" in post else []
    for j, n in enumerate(bm.fixed_names):
        if j == bm.intercept_col:
            cols[n] = flatten_chains(np.asarray(post["Intercept"]))
        else:
            assert b is not None
            cols[n] = b[:, coef_names.index(n)]
    grid_fixed = getattr(design, "grid_fixed", design.fixed)
    fd = pd.DataFrame(cols, columns=list(grid_fixed.columns)) if cols else \
        pd.DataFrame(np.zeros((nc * nd, 0)))
    div = int(np.asarray(idata.sample_stats["diverging"]).sum()) if "diverging" in idata.sample_stats else 0
    fit = BayesFamilyResult(
        formula=formula, fixef=fd.mean().rename("estimate"), fixef_draws=fd, vcov=fd.cov(),
        varcorr=pd.DataFrame(), nobs=design.nobs, priors=bm.prior_table,
        parameterization=bm.parameterization_table(), sampler=desc, seconds=seconds,
        divergences=div, chains=nc, draws=nd, fixed_design=grid_fixed,
        link="identity" if family in ("gaussian", "cumulative") else "logit", family=family,
        cumulative_link=link or "", response_scale="mean" if family != "cumulative" else "latent",
        levels=tuple(getattr(design, "levels", ())), _posterior=idata, _bm=bm)
    object.__setattr__(fit, "varcorr", _varcorr(fit))
    for msg in fit.diagnostics():
        warnings.warn(msg, SamplingWarning, stacklevel=3)
    return fit
