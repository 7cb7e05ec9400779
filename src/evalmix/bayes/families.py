"""The Bayesian twins of the other mixed-model engines: Gaussian (``lmer``), cumulative link
(``clmm``), beta and beta-binomial (``glmmtmb``) likelihoods on the shared linear predictor.

The design comes from the model floor (:mod:`evalmix.model`: the formula, the fixed design built
once per pattern, the random terms); the linear predictor, its priors, its centring and QR basis
are those of the binomial model (:func:`evalmix.bayes.model.linear_predictor`), so every family
reads a formula, names its parameters and reports its draws the same way.  Each family adds its
own parameters:

==============  ==========================================================  =======================
family          likelihood                                                  extra parameter
==============  ==========================================================  =======================
gaussian        ``y ~ Normal(eta, sigma)``                                  ``sigma`` (residual SD)
cumulative      ``P(Y <= j) = F(theta_j - eta)`` (``F`` logistic or normal)  ``theta_j`` (ordered)
beta            ``y ~ Beta(mu phi, (1 - mu) phi)``, ``mu = plogis(eta)``    ``phi`` (precision)
betabinomial    ``k ~ BetaBinomial(n, mu phi, (1 - mu) phi)``               ``phi`` (precision)
==============  ==========================================================  =======================

The beta families use glmmTMB's parameterisation (``sigma(fit)`` of ``beta_family()`` and
``betabinomial()`` is ``phi``), the cumulative model ordinal's sign convention (``eta`` is
subtracted from the thresholds, so a positive coefficient moves ratings up).

Which random terms are sampled centred is chosen as for the binomial model (the median of
``I_l sigma^2`` over levels above 1), from moment estimates instead of a maximum-likelihood fit
(the Bayesian engine does not call the other engines): the residuals of a least-squares fit of a
working response (the scores; the empirical logit of beta scores and of k of n; the rating codes)
give, per term, the within-level variance ``s^2`` (``I_l = n_l / s^2``) and the between-level
variance of the level means (or of per-level regression coefficients for slopes).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..data.runs import RunsData
from ..core.errors import ArgumentError, DataError, FormulaError
from ..model import (FixedDesign, ParsedFormula, RandomTerm, build_random_terms, complete_rows, count_columns,
                     fitted_offset, fixed_on_patterns, independent_columns, model_columns, numeric_column, ordinal_codes, parse_mixed_formula,
                     read_data, rows_text)
from .model import BayesModel, choose_forms, linear_predictor, model_coords, start_values
from .priors import FAMILIES as PRIOR_FAMILIES
from .priors import Prior, PriorSpec, resolve_priors

__all__ = ["FAMILIES", "FamilyDesign", "build_family_design", "build_family_model", "family_defaults"]

#: family -> the engine whose model it mirrors
FAMILIES = {"gaussian": "evalmix.lmer", "cumulative": "evalmix.clmm", "beta": "evalmix.glmmtmb",
            "betabinomial": "evalmix.glmmtmb"}
#: the link of the linear predictor of each family
CUMULATIVE_LINKS = ("logit", "probit")


@dataclass
class FamilyDesign:
    """Response, fixed design and random terms of one of the families (one row per given row).

    ``y`` holds the scores (gaussian, beta), the rating codes ``0..J-1`` (cumulative) or the
    successes ``k`` (betabinomial, with the trials in ``m``; ``m`` is 1 otherwise).  For the
    cumulative family ``fixed`` and ``X`` leave the intercept out (the thresholds hold it) and
    ``grid_fixed`` is the design with it, which the reference grid reads.
    """

    family: str
    parsed: ParsedFormula
    fixed: FixedDesign
    grid_fixed: FixedDesign
    X: np.ndarray
    y: np.ndarray
    m: np.ndarray
    terms: list[RandomTerm]
    data: pd.DataFrame
    offset: np.ndarray | None = None
    levels: tuple[str, ...] = ()  # categories of a cumulative model, in order
    counts: bool = False
    log_binom_rows: np.ndarray | None = None
    # the Gaussian model samples (y - y_loc) / y_scale (every parameter of order one, which the
    # sampler's diagonal mass matrix adapts to quickly); draws are reported on the scale of y
    y_loc: float = 0.0
    y_scale: float = 1.0

    @property
    def nobs(self) -> int:
        return len(self.y)

    @property
    def k(self) -> np.ndarray:
        return self.y

    @property
    def k_rows(self) -> np.ndarray:
        return self.y

    @property
    def m_rows(self) -> np.ndarray:
        return self.m

    @property
    def row_index(self) -> np.ndarray:
        return np.arange(len(self.y))


def _response(family: str, parsed: ParsedFormula, d: pd.DataFrame, weights: np.ndarray | None = None
              ) -> tuple[np.ndarray, np.ndarray, tuple[str, ...]]:
    """(y, m, categories) of the family, every value checked, the column named in errors;
    ``weights`` are the trials of a beta-binomial proportion response (glmmTMB's meaning)."""
    name = parsed.successes
    if family == "betabinomial":
        if weights is not None:
            if parsed.trials is not None or parsed.failures is not None:
                raise ArgumentError("weights= gives the trials of a proportion response; with "
                                    "cbind(k, n - k) the trials are in the formula already")
            p = numeric_column(d[name], name, "response column")
            bad = ~np.isfinite(p) | (p < 0) | (p > 1)
            if bad.any():
                raise DataError(f"response column {name!r} must lie in [0, 1] with weights= (rows "
                                f"{rows_text(d.index, bad)})")
            k, n, other = p * weights, weights, "weights"
        elif parsed.trials is None and parsed.failures is None:
            raise FormulaError(f"the beta-binomial response is k of n: write cbind({name}, n - {name}) "
                               "~ ..., with n the column of trials, or a proportion with weights= the trials")
        else:
            k, n, other = count_columns(parsed, d)
        bad = (k < 0) | (n < k) | (np.abs(k - np.round(k)) > 1e-6) | (np.abs(n - np.round(n)) > 1e-6)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"columns {name!r} and {other!r} must be whole counts 0 <= k <= n; rows "
                            f"{rows_text(d.index, bad)} are not (k = {k[i]:g} of n = {n[i]:g})")
        if not np.any(n > 1):
            raise DataError(f"column {other!r} gives one trial per row: the beta-binomial precision "
                            "is not identified from 0/1 outcomes; aggregate to k of n")
        return np.round(k), np.round(n), ()
    if parsed.trials is not None or parsed.failures is not None:
        raise FormulaError(f"the {family} family fits one response column, not cbind({name}, ...); "
                           "use family='betabinomial' for k of n")
    if family == "cumulative":
        codes, levels = ordinal_codes(d[name], name)
        return codes.astype(float), np.ones(len(codes)), tuple(levels)
    y = numeric_column(d[name], name, "response column")
    if not np.all(np.isfinite(y)):
        bad = ~np.isfinite(y)
        raise DataError(f"response column {name!r} is not finite in rows {rows_text(d.index, bad)}")
    if family == "beta":
        bad = (y <= 0) | (y >= 1)
        if bad.any():
            raise DataError(f"response column {name!r} must hold scores strictly between 0 and 1 for "
                            f"the beta family; rows {rows_text(d.index, bad)} are not (e.g. "
                            f"{y[bad][0]:g}): rescale it, or fit k of n with family='betabinomial'")
    elif np.ptp(y) == 0:
        raise DataError(f"response column {name!r} is constant ({y[0]:g} in every row): there is "
                        "no variance to model")
    return y, np.ones(len(y)), ()


def build_family_design(formula: str, data: RunsData, family: str, *,
                        contrasts: dict[str, Any] | None = None,
                        weights: str | ArrayLike | None = None) -> FamilyDesign:
    """Parse ``formula`` and build the design of ``family`` on ``data``.

    Rows with a missing value in a column the model reads are dropped with a
    :class:`~evalmix.core.errors.DataWarning`; the response is checked for the family (numbers; integer
    ratings with at least three categories; scores in (0, 1); whole counts ``0 <= k <= n``) with
    the column and rows named.  ``weights`` (a column or one value per row) are what the
    maximum-likelihood engine takes: the trials of a beta-binomial proportion response, as
    :func:`evalmix.glmmtmb`; the other families refuse them, as :func:`evalmix.lmer`,
    :func:`evalmix.clmm` and the beta family of :func:`evalmix.glmmtmb` do.  ``offset()`` terms
    of the formula are added to the linear predictor of every family.

    Examples
    --------
    >>> d = pd.DataFrame({"y": [1.0, 2.0, 3.0, 2.5, 4.0, 3.5], "g": list("aabbcc"), "x": [0, 1] * 3})
    >>> design = build_family_design("y ~ x + (1|g)", d, "gaussian")
    >>> design.X.shape, [t.group for t in design.terms]
    ((6, 2), ['g'])
    """
    if family not in FAMILIES:
        raise ValueError(f"family must be one of {sorted(FAMILIES)}, not {family!r}")
    if weights is not None and family != "betabinomial":
        raise ArgumentError(f"weights= {_NO_WEIGHTS[family]}; the Bayesian twin takes none either "
                            "(it would have no maximum-likelihood fit to agree with)")
    parsed = parse_mixed_formula(formula, f"the Bayesian {family} model")
    frame = read_data(data, parsed.random)
    for c in parsed.columns:
        if c not in frame.columns:
            raise FormulaError(f"response column {c!r} is absent from the data "
                               f"(columns: {list(frame.columns)})")
    used = model_columns(parsed, frame)
    d = frame[used]
    w = None if weights is None else _weights(weights, frame)
    keep = complete_rows(d, w)
    if not keep.all():
        d = d.loc[keep]
        w = None if w is None else w[keep]
    if w is not None and np.any(w < 0):
        raise DataError(f"weights must be >= 0 (rows {rows_text(d.index, w < 0)})")
    y, m, levels = _response(family, parsed, d, w)
    rows = d.reset_index(drop=True)
    fixed, X = fixed_on_patterns(parsed, rows, contrasts)
    X = np.ascontiguousarray(X, dtype=float)
    grid_fixed = fixed
    if family == "cumulative":
        # the thresholds take the intercept's place: a fixed part aliased with them is refused
        slopes = [j for j, t in enumerate(fixed.column_terms) if t != "(Intercept)"]
        if len(slopes) == X.shape[1]:
            raise FormulaError(f"formula {formula!r} removes the intercept; a cumulative-link "
                               "model keeps it (the thresholds are its intercepts)")
        full = np.column_stack([np.ones(len(rows)), X[:, slopes]])
        if len(independent_columns(full)) < full.shape[1]:
            raise DataError(f"fixed-effect columns of {formula!r} are aliased (linearly dependent, "
                            f"with the thresholds too): {', '.join(fixed.columns[j] for j in slopes)}")
        fixed, X = fixed.with_columns(slopes), np.ascontiguousarray(X[:, slopes])
    elif len(independent_columns(X)) < X.shape[1]:
        raise DataError(f"the fixed-effect columns of {formula!r} are aliased (linearly dependent): "
                        f"{', '.join(fixed.columns)}; drop a term or a level that another determines")
    offset = None
    if parsed.offsets:
        offset, grid_fixed = fitted_offset(grid_fixed, rows, d.index)
        fixed = fixed.fitted_on(rows, float(offset.mean()))
    terms = build_random_terms(parsed.random, rows, len(rows))
    if family == "gaussian":
        for t in terms:
            if t.nl >= len(rows):  # lme4's check: the residual would be confounded with the term
                raise DataError(f"grouping factor {t.group!r} has {t.nl} levels for {len(rows)} "
                                "observations: a linear mixed model needs fewer levels than rows")
    log_binom = None
    if family == "betabinomial":
        from scipy.special import gammaln

        log_binom = gammaln(m + 1) - gammaln(y + 1) - gammaln(m - y + 1)
    loc, scale = (float(np.mean(y)), float(np.std(y))) if family == "gaussian" else (0.0, 1.0)
    return FamilyDesign(family, parsed, fixed, grid_fixed, X, y, m, terms, d, offset, levels,
                        family == "betabinomial", log_binom, loc, scale)


#: why each family's maximum-likelihood engine takes no weights
_NO_WEIGHTS = {"gaussian": "is not taken: evalmix.lmer fits no prior weights",
               "cumulative": "is not taken: evalmix.clmm fits no case weights",
               "beta": "are the trials of a proportion response (binomial families, "
                       "family='betabinomial'); the beta family takes none, as evalmix.glmmtmb"}


def _weights(weights: str | ArrayLike, frame: pd.DataFrame) -> np.ndarray:
    """The weights of every row of ``frame``: a column's values or the given ones."""
    if isinstance(weights, str):
        if weights not in frame.columns:
            raise FormulaError(f"weights={weights!r} is not a column of the data "
                               f"(columns: {list(frame.columns)})")
        return numeric_column(frame[weights], weights)
    w = np.asarray(weights, dtype=float).ravel()
    if w.size != len(frame):
        raise DataError(f"weights has {w.size} values for {len(frame)} rows of data")
    return w


# ---------------------------------------------------------------------------------- priors

def family_defaults(design: FamilyDesign, link: str = "logit") -> tuple[dict[str, Prior], dict[str, Prior]]:
    """Default priors of a family's design: (those of the linear predictor, the family's own).

    Gaussian: rstanarm's autoscaled defaults, ``Intercept ~ Normal(mean(y), 2.5 sd(y))`` and
    ``Normal(0, 2.5 sd(y))`` per coefficient (divided by ``sd(x)`` for a covariate), and brms's
    half-Student-t(3) for the residual SD and the random-effect SDs, scaled by ``sd(y)``.  The
    other families keep the logit-scale defaults of :data:`evalmix.bayes.DEFAULT_PRIORS`; the
    precision ``phi`` of the beta families is half-Student-t(3, 0, 10) (precisions of 1-100 are
    usual), the thresholds of a cumulative model Normal(0, 5) each (2.5 on the probit scale).

    Examples
    --------
    >>> d = pd.DataFrame({"y": [1.0, 3.0] * 6, "g": list("aabbccddeeff")})
    >>> base, extra = family_defaults(build_family_design("y ~ 1 + (1|g)", d, "gaussian"))
    >>> str(base["Intercept"]), str(extra["sigma"])
    ('Normal(mu=2, sigma=2.5)', 'HalfStudentT(nu=3, sigma=1)')
    """
    from .priors import DEFAULT_PRIORS

    if design.family == "gaussian":
        mean, sd = float(np.mean(design.y)), float(np.std(design.y))
        sd = sd if sd > 0 else 1.0
        base = {"Intercept": Prior("normal", (mean, 2.5 * sd)), "fixed": Prior("normal", (0.0, 2.5 * sd)),
                "sd": Prior("half_student_t", (3.0, sd)), "cor": DEFAULT_PRIORS["cor"]}
        return base, {"sigma": Prior("half_student_t", (3.0, sd))}
    base = dict(DEFAULT_PRIORS)
    if design.family == "cumulative":
        scale = 5.0 if link == "logit" else 2.5
        if link == "probit":  # the probit scale is about 1/1.6-1/1.8 of the logit one
            base["fixed"], base["sd"] = Prior("normal", (0.0, 1.5)), Prior("half_normal", (1.5,))
        return base, {"threshold": Prior("normal", (0.0, scale))}
    return base, {"phi": Prior("half_student_t", (3.0, 10.0))}


def family_priors(design: FamilyDesign, priors: Mapping[str, PriorSpec] | None, link: str = "logit"
                  ) -> tuple[dict[str, Prior], pd.DataFrame]:
    """Every prior of the model (after ``priors``) and the printable table (see
    :func:`evalmix.bayes.priors.resolve_priors`); the family's own parameters are keyed
    ``"sigma"``, ``"phi"`` or ``"threshold"``."""
    base, extra = family_defaults(design, link)
    user = dict(priors or {})
    own = {k: Prior.coerce(user.pop(k)) for k in list(user) if k in extra}
    prior_map, table = resolve_priors(design, user, defaults=base)
    rows = []
    for key, default in extra.items():
        p, src = own.get(key, default), "user" if key in own else "default"
        if key == "threshold":
            if p.positive or p.family == "lkj":
                raise ValueError(f"prior {p} for the thresholds must be defined on the real line")
            prior_map["threshold"] = p
            names = [f"{a}|{b}" for a, b in zip(design.levels[:-1], design.levels[1:])]
            rows = [(n, str(p), src) for n in names]
            table = pd.DataFrame(rows, columns=table.columns).pipe(
                lambda t: pd.concat([t, table], ignore_index=True))
        else:
            if not p.positive:
                raise ValueError(f"prior {p} for {key!r} must be positive (half_normal, "
                                 "half_student_t, half_cauchy, exponential)")
            prior_map[key] = p
            table = pd.concat([table, pd.DataFrame([(key, str(p), src)], columns=table.columns)],
                              ignore_index=True)
    return prior_map, table


def _location_scale(prior: Prior, loc: float, scale: float) -> Prior:
    """The prior of ``(p - loc) / scale`` when ``p`` has ``prior`` (a location-scale family)."""
    kw = prior.kwargs
    for key in ("mu", "alpha"):  # the location parameters (Cauchy's is alpha)
        if key in kw:
            kw[key] = (kw[key] - loc) / scale
    for key in ("sigma", "beta", "b"):
        if key in kw:
            kw[key] = kw[key] / scale
    if "lam" in kw:
        kw["lam"] = kw["lam"] * scale
    return Prior(prior.family, tuple(kw.values()))


def standardized_priors(prior_map: Mapping[str, Prior], design: FamilyDesign) -> dict[str, Prior]:
    """The priors of the parameters of the standardised Gaussian model (module notes): the
    intercept is ``loc + scale * Intercept_s``, every other parameter but a correlation is
    ``scale`` times its standardised value."""
    loc, scale = design.y_loc, design.y_scale
    icols = {c for c, t in zip(design.fixed.columns, design.fixed.column_terms) if t == "(Intercept)"}
    out = {}
    for key, p in prior_map.items():
        if key.startswith("cor|"):
            out[key] = p
        else:
            out[key] = _location_scale(p, loc if key in icols else 0.0, scale)
    return out


def unstandardize(posterior: Any, bm: BayesModel) -> None:
    """Move the draws of a standardised Gaussian model to the scale of y, in place."""
    design = bm.design
    if not isinstance(design, FamilyDesign) or (design.y_loc == 0.0 and design.y_scale == 1.0):
        return
    loc, scale = design.y_loc, design.y_scale
    absorbing = {f"({p.label})": p for p in bm.plans if p.absorbs_intercept}
    for name in list(posterior.data_vars):
        v = posterior[name]
        if name in ("Intercept", "Intercept_c"):
            posterior[name] = loc + scale * v
        elif name in absorbing:  # levels centred on the intercept: a_l = Intercept_c + u_l
            p = absorbing[name]
            if p.term.nc == 1:
                posterior[name] = loc + scale * v
            else:
                shift = np.zeros(p.term.nc)
                shift[p.term.cnames.index("(Intercept)")] = loc
                posterior[name] = shift + scale * v
        elif name in ("b", "b_qr", "sigma") or name.startswith(("sd(", "s(", "(")):
            posterior[name] = scale * v


# ---------------------------------------------------------------------------------- pilot

def _working_response(design: FamilyDesign) -> np.ndarray:
    y, m = design.y, design.m
    if design.family == "beta":
        return np.log(y / (1 - y))
    if design.family == "betabinomial":
        return np.log((y + 0.5) / (m - y + 0.5))
    return y


def pilot(design: FamilyDesign) -> tuple[np.ndarray, list[np.ndarray]]:
    """Information weight of each row and a moment estimate of each term's SDs (module notes)."""
    r = _working_response(design)
    X = design.X if design.family != "cumulative" else np.column_stack([np.ones(len(r)), design.X])
    if X.shape[1]:
        r = r - X @ np.linalg.lstsq(X, r, rcond=None)[0]
    sds, s2s = [], []
    for t in design.terms:
        Z = np.asarray(t.Z, dtype=float)
        coefs, svars, rss, dof = [], [], 0.0, 0
        for lv in range(t.nl):
            sel = t.index == lv
            Zl, rl = Z[sel], r[sel]
            if len(rl) <= t.nc:
                continue
            c, res, rank, _ = np.linalg.lstsq(Zl, rl, rcond=None)
            if rank < t.nc:
                continue
            coefs.append(c)
            svars.append(np.diag(np.linalg.inv(Zl.T @ Zl)))
            rss += float(np.sum((rl - Zl @ c) ** 2))
            dof += len(rl) - t.nc
        s2 = rss / dof if dof > 0 else float(np.var(r)) or 1.0
        s2 = s2 if s2 > 0 else 1.0
        if len(coefs) >= 2:
            cv = np.var(np.array(coefs), axis=0, ddof=1) - s2 * np.mean(np.array(svars), axis=0)
            sd = np.sqrt(np.clip(cv, 0.0, None))
        else:
            sd = np.zeros(t.nc)
        sds.append(sd)
        s2s.append(s2)
    w = np.full(len(r), 1.0 / (min(s2s) if s2s else 1.0))
    return w, sds


# ---------------------------------------------------------------------------------- the model

def ordered_probit_logp(value: Any, eta: Any, cuts: Any) -> Any:
    """``log P(Y = y) = log(Phi(theta_y - eta) - Phi(theta_{y-1} - eta))`` of the ordered probit,
    one term per row, in log space from the start.

    PyMC's ``OrderedProbit`` computes every category's log-probability stably, then exponentiates
    them into a ``Categorical``, which takes the log again after checking that they sum to 1: far
    in a tail a probability underflows to 0 and the row's log density is minus infinity (a
    divergence, a rejected step).  Here only the observed category's term is formed: the lowest
    and highest categories by ``normal_lcdf`` / ``normal_lccdf``, the others by
    ``log_diff_normal_cdf`` (``erfcx`` in the tails).  Each branch of the switch gets finite,
    ordered arguments in the rows where it is not taken, so its gradient there is zero, not NaN.
    """
    import pytensor.tensor as pt
    from pymc.distributions.dist_math import log_diff_normal_cdf, normal_lccdf, normal_lcdf

    k = cuts.shape[-1]
    hi = cuts[..., pt.clip(value, 0, k - 1)] - eta  # theta_y - eta (a placeholder for y = J - 1)
    lo = cuts[..., pt.clip(value - 1, 0, k - 1)] - eta  # theta_{y-1} - eta (placeholder for y = 0)
    first, last = pt.eq(value, 0), pt.eq(value, k)
    inner = log_diff_normal_cdf(0.0, 1.0, pt.switch(last, lo + 1.0, hi), pt.switch(first, hi - 1.0, lo))
    return pt.switch(first, normal_lcdf(0.0, 1.0, hi), pt.switch(last, normal_lccdf(0.0, 1.0, lo), inner))


def build_family_model(formula: str, data: RunsData, family: str, *,
                       priors: Mapping[str, PriorSpec] | None = None,
                       parameterization: str | Mapping[str, str] = "auto", link: str | None = None,
                       contrasts: dict[str, Any] | None = None,
                       weights: str | ArrayLike | None = None) -> BayesModel:
    """Build the PyMC model of ``formula`` on ``data`` with the ``family`` likelihood.

    ``link`` is the cumulative model's (``"logit"`` or ``"probit"``); the beta families use the
    logit link, the Gaussian the identity.  ``weights`` as :func:`build_family_design`.

    Examples
    --------
    >>> d = pd.DataFrame({"y": [1.0, 2.0, 3.0, 2.5, 4.0, 3.5], "g": list("aabbcc"), "x": [0, 1] * 3})
    >>> bm = build_family_model("y ~ x + (1|g)", d, "gaussian")
    >>> sorted(v.name for v in bm.model.free_RVs)
    ['(1|g)', 'Intercept_c', 'b', 'sd(1|g)', 'sigma']
    """
    import pymc as pm
    import pytensor.tensor as pt
    from pymc.distributions.transforms import ordered

    design = build_family_design(formula, data, family, contrasts=contrasts, weights=weights)
    if family == "cumulative":
        link = "logit" if link is None else link
        if link not in CUMULATIVE_LINKS:
            raise ValueError(f"link must be one of {CUMULATIVE_LINKS}, not {link!r}")
    else:
        link = "identity" if family == "gaussian" else "logit"
    prior_map, prior_table = family_priors(design, priors, link)
    w_info, sds = pilot(design)
    plans = choose_forms(design.terms, w_info, sds, parameterization)
    X = design.X
    names = list(design.fixed.columns)
    icol = next((j for j, t in enumerate(design.fixed.column_terms) if t == "(Intercept)"), None)
    y = design.y
    sampled = standardized_priors(prior_map, design) if family == "gaussian" else prior_map
    with pm.Model(coords=model_coords(names, icol, plans)) as model:
        eta, basis = linear_predictor(X, names, icol, plans, sampled, weights=design.m,
                                      w_info=w_info * design.y_scale ** 2, center=family == "cumulative")
        if design.offset is not None:
            eta = eta + design.offset / design.y_scale
        if family == "gaussian":
            sigma = sampled["sigma"].dist("sigma")
            pm.Normal("y", mu=eta, sigma=sigma, observed=(y - design.y_loc) / design.y_scale)
        elif family in ("beta", "betabinomial"):
            phi = prior_map["phi"].dist("phi")
            mu = pm.math.invlogit(eta)
            if family == "beta":
                pm.Beta("y", alpha=mu * phi, beta=(1 - mu) * phi, observed=y)
            else:
                pm.BetaBinomial("y", alpha=mu * phi, beta=(1 - mu) * phi, n=design.m.astype("int64"),
                                observed=y.astype("int64"))
        else:
            J = len(design.levels)
            cum = np.cumsum(np.bincount(y.astype(np.int64), minlength=J))[:-1] / len(y)
            from scipy import stats

            start = stats.logistic.ppf(cum) if link == "logit" else stats.norm.ppf(cum)
            # thresholds at the centred columns (the sampled ones, ordered), and as reported:
            # theta_j = theta_c_j + xbar b, a shift with unit Jacobian, so the prior is on theta
            # no initval (nutpie's JAX path refuses models with one): the start is passed to the
            # samplers with the model's other starting values (BayesModel.initial_points)
            cut_c = pm.Flat("thresholds_c", shape=J - 1, transform=ordered)
            cut_start = np.asarray(start, float)
            xbar = basis["xbar"]
            shift = pt.dot(xbar, model["b"]) if len(xbar) else 0.0
            cuts = pm.Deterministic("thresholds", cut_c + shift)
            pr = prior_map["threshold"]
            pm.Potential("threshold_prior", pt.sum(pm.logp(getattr(pm, PRIOR_FAMILIES[pr.family][0]).dist(**pr.kwargs), cuts)))
            if link == "logit":
                pm.OrderedLogistic("y", eta=eta, cutpoints=cut_c, observed=y.astype("int64"))
            else:
                pm.CustomDist("y", eta, cut_c, logp=ordered_probit_logp, signature="(),(k)->()",
                              observed=y.astype("int64"), dtype="int64")
    bm = BayesModel(model, design, plans, prior_map, prior_table, icol, None, basis, link, family)
    bm.start = start_values(bm, design.y_scale if family == "gaussian" else 1.0)
    if family == "cumulative":
        bm.start["thresholds_c"] = cut_start
    return bm
