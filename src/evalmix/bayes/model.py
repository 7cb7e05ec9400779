"""The PyMC model of a binomial GLMM (logit, probit or cloglog link), built from the shared formula design.

The design (response pooled into binomial counts, fixed-effects matrix, random-effects terms) comes
from :func:`evalmix.model.build_design`, the same code that builds :func:`evalmix.glmer`'s
model, so both fits read a formula the same way.

Parameterisation
----------------
A random term is sampled *centred* (``u ~ Normal(mu, sigma)``) or *non-centred*
(``u = mu + sigma * z``, ``z ~ Normal(0, 1)``).  Which one mixes depends on how much the data say
about each level compared with the spread of the levels: with ``I_l`` the Fisher information of
level ``l`` (``sum m p (1 - p) z^2`` over its rows) and ``sigma`` the maximum-likelihood SD, the
ratio ``I_l sigma^2`` is the prior-to-posterior variance ratio of the level's effect.  A ratio above
1 (the data dominate) makes the non-centred form a narrow funnel in ``(sigma, z)`` and the centred
form nearly independent; below 1 the reverse holds.  Each term gets the form its median ratio
favours.  AI4Math's items (96 rows each, SD near 3) have a ratio near 200 and are sampled centred;
its item:run effects (32 rows each, SD near 0) are non-centred.

When a centred term has an intercept column and the fixed part has an intercept, the intercept
becomes the mean of that term's effects (hierarchical centring, Gelfand, Sahu & Carlin 1995):
``a_l ~ Normal(Intercept, sigma)`` and ``eta = a[l] + X_(-1) b``.  The likelihood then pins each
``a_l`` and the prior pins the intercept to their mean, which removes the ridge between the
intercept and the effects that makes bambi's default sample the intercept slowly.  Fixed columns
constant within the levels of a centred term (an item's domain or difficulty) move into the mean of
its effects the same way: ``a_l ~ Normal(x_l b, sigma)`` (plus the intercept if the term holds it).
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..core.errors import FitWarning
from ..model import RandomTerm
from .priors import Prior, PriorSpec, resolve_priors

if TYPE_CHECKING:
    import pymc as pm
    from numpy.typing import ArrayLike
    from pytensor.tensor.variable import TensorVariable

    from ..mixed.fitted import MixedFit
    from ..model import GlmmDesign
    from .families import FamilyDesign

__all__ = ["TermPlan", "BayesModel", "binomial_loglik", "build_model", "plan_terms"]

PARAMETERIZATIONS = ("centered", "noncentered")

def dense_x(design: Any) -> np.ndarray:
    """The fixed-effects matrix of the pooled rows as a dense array."""
    X = design.X
    return X.dense() if hasattr(X, "dense") else np.asarray(X)


def term_label(t: RandomTerm) -> str:
    """lme4-style label of a random term: ``1|item``, ``1 + x|g``, ``0 + x|g``."""
    expr = " + ".join(("1" if c == "(Intercept)" else c) for c in t.cnames)
    if "(Intercept)" not in t.cnames:
        expr = "0 + " + expr
    return f"{expr}|{t.group}"


@dataclass
class TermPlan:
    """How one random term is sampled."""

    term: RandomTerm
    label: str
    centered: bool
    ratio: float  # median over levels of I_l * sigma_ML^2 (information ratio)
    sigma_ml: np.ndarray
    absorbs_intercept: bool = False
    # The fixed columns constant within each level of this term (item-level predictors) moved
    # into the mean of its effects: (levels x coefficients) centred values, zero in the other
    # columns (None: no column moved)
    level_x: np.ndarray | None = None
    # (coefficient, column) pairs of the fixed slopes a centred correlated term holds as the means
    # of its columns (index into the coefficients without the intercept, and into term.cnames)
    slope_cols: list[tuple[int, int]] = field(default_factory=list)

    @property
    def form(self) -> str:
        return "centered" if self.centered else "noncentered"


@dataclass
class BayesModel:
    """A PyMC model with the pieces needed to read its draws back."""

    model: pm.Model
    design: GlmmDesign | FamilyDesign
    plans: list[TermPlan]
    priors: dict[str, Prior]
    prior_table: pd.DataFrame
    intercept_col: int | None  # column of X holding the intercept, if any
    ml: MixedFit | None = None  # the maximum-likelihood fit used to choose the parameterisation
    # the fixed part as sampled: eta gets ``Xt @ theta``, ``b = T @ theta`` (QR basis or identity),
    # the intercept of the user's coding is ``Intercept_c - xbar @ b``
    basis: dict[str, np.ndarray] | None = None
    link: str = "logit"  # binomial link (logit, probit or cloglog)
    family: str = "binomial"  # the likelihood (evalmix.bayes.families builds the others)
    # starting values (value-variable names of the free variables, on their constrained scale)
    # that replace PyMC's support points where those fail: see :func:`start_values`
    start: dict[str, np.ndarray] | None = None

    def initial_points(self) -> dict[str, np.ndarray]:
        """The starting values the samplers get (``nutpie``'s ``initial_points``, PyMC's ``initvals``)."""
        if self.start is None:
            self.start = start_values(self)
        return dict(self.start)

    @property
    def fixed_names(self) -> list[str]:
        return list(self.design.fixed.columns)

    @property
    def fixed_basis(self) -> dict[str, np.ndarray]:
        """``basis``, which every built model has (None only while it is being built)."""
        if self.basis is None:
            raise ValueError("the model's fixed-effects basis has not been set")
        return self.basis

    @property
    def intercept_name(self) -> str:
        """Name of the intercept column (a model without one has none to name)."""
        if self.intercept_col is None:
            raise ValueError("the model has no intercept")
        return self.fixed_names[self.intercept_col]

    def parameterization_table(self) -> pd.DataFrame:
        return pd.DataFrame({
            "term": [p.label for p in self.plans],
            "levels": [p.term.nl for p in self.plans],
            "rows_per_level": [float(np.bincount(p.term.index, weights=self.design.m).mean())
                               for p in self.plans],
            "sd_ml": [", ".join(f"{v:.4g}" for v in p.sigma_ml) for p in self.plans],
            "info_ratio": [p.ratio for p in self.plans],
            "form": [p.form for p in self.plans],
            "holds_intercept": [p.absorbs_intercept for p in self.plans],
        })


def _ml_fit(formula: str, data: pd.DataFrame, **model_args: Any) -> MixedFit | None:
    """Maximum-likelihood fit (shared GLMM engine) used for the parameterisation; None on failure.

    ``model_args`` are the model's ``weights``, ``offset``, ``link``, ``contrasts`` and ``trials``."""
    # the one engine-to-engine call, allowed by tests/project/test_architecture.py: the ML fit picks the
    # parameterisation and the scale of the start
    from ..glmm import glmer as ml_glmer

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return ml_glmer(formula, data, **model_args)
    except Exception:  # the Bayesian fit must not depend on the ML fit succeeding
        return None


def _ml_sds(ml: MixedFit | None, plans_terms: list[RandomTerm]) -> list[np.ndarray]:
    out = []
    for t in plans_terms:
        sd = np.ones(t.nc)
        if ml is not None:
            vc = ml.varcorr
            for i, c in enumerate(t.cnames):
                hit = vc[(vc["group"] == t.group) & (vc["var1"] == c) & (vc["var2"] == "")]
                if len(hit):
                    sd[i] = float(hit["sd"].iloc[0])
        out.append(sd)
    return out


def _info_weights(design: GlmmDesign, ml: MixedFit | None, link: str = "logit") -> np.ndarray:
    """Fisher information weight of each pooled row at the ML fixed effects: ``m mu'(eta)^2 /
    (mu (1 - mu))`` (``m p (1 - p)`` for the logit link)."""
    from ..mixed.links import inverse_link, mu_eta

    X, m = dense_x(design), design.m
    if ml is not None and len(ml.fixef) == X.shape[1]:
        eta = X @ ml.fixef.to_numpy() + (0.0 if design.offset is None else design.offset)
        p = np.clip(inverse_link(link, eta), 1e-6, 1 - 1e-6)
        d = mu_eta(link, eta)
    else:
        p = np.full(len(m), float(np.clip(design.k.sum() / m.sum(), 0.05, 0.95)))
        d = p * (1 - p) if link == "logit" else np.full(len(m), 0.25)
    return m * np.clip(d ** 2 / (p * (1 - p)), 1e-4, None)


def plan_terms(design: GlmmDesign, parameterization: str | Mapping[str, str] = "auto",
               ml: MixedFit | None = None, link: str = "logit") -> list[TermPlan]:
    """Choose the centred or non-centred form of every random term (see the module notes)."""
    return choose_forms(design.terms, _info_weights(design, ml, link), _ml_sds(ml, design.terms),
                        parameterization)


def choose_forms(terms: list[RandomTerm], w: np.ndarray, sds: list[np.ndarray],
                 parameterization: str | Mapping[str, str] = "auto") -> list[TermPlan]:
    """The sampling plan of each term from the information weight ``w`` of each row and a pilot
    SD of each term's columns: centred where the median ``I_l sigma^2`` exceeds 1."""
    user = {} if isinstance(parameterization, str) else dict(parameterization)
    if isinstance(parameterization, str) and parameterization not in ("auto",) + PARAMETERIZATIONS:
        raise ValueError(f"parameterization must be 'auto', 'centered', 'noncentered' or a dict "
                         f"group -> form, got {parameterization!r}")
    groups = {t.group for t in terms}
    bad = [g for g in user if g not in groups]
    if bad:
        raise ValueError(f"parameterization names unknown grouping factor(s) {bad}; terms: {sorted(groups)}")
    for g, f in user.items():
        if f not in PARAMETERIZATIONS:
            raise ValueError(f"parameterization of {g!r} must be 'centered' or 'noncentered', got {f!r}")
    plans = []
    for t, sd in zip(terms, sds):
        info = np.zeros((t.nl, t.nc))
        for c in range(t.nc):
            info[:, c] = np.bincount(t.index, weights=w * t.Z[:, c] ** 2, minlength=t.nl)
        ratio = float(np.median(info * sd ** 2, axis=0).min())
        if t.group in user:
            centered = user[t.group] == "centered"
        elif isinstance(parameterization, str) and parameterization != "auto":
            centered = parameterization == "centered"
        else:
            centered = ratio > 1.0
        plans.append(TermPlan(t, term_label(t), centered, ratio, sd))
    return plans


def model_coords(names: list[str], icol: int | None, plans: list[TermPlan]) -> dict[str, list[str]]:
    """The PyMC coordinates of the fixed effects (all but the intercept) and the random terms."""
    coords: dict[str, list[str]] = {"coef": [n for j, n in enumerate(names) if j != icol]}
    for p in plans:
        coords[f"{p.term.group}__level"] = list(p.term.levels)
        if p.term.nc > 1:
            coords[f"{p.label}__column"] = list(p.term.cnames)
    return coords


def level_constant(Xc: np.ndarray, term: RandomTerm) -> list[int]:
    """Columns of ``Xc`` that take one value within each level of ``term`` (its group's
    attributes, such as an item's domain or difficulty), the all-zero ones left out."""
    out = []
    for j in range(Xc.shape[1]):
        col = Xc[:, j]
        first = np.zeros(term.nl)
        first[term.index] = col  # any row of the level: equal to all of them when constant
        if np.any(col != 0.0) and np.array_equal(first[term.index], col):
            out.append(j)
    return out


def linear_predictor(X: np.ndarray, names: list[str], icol: int | None, plans: list[TermPlan],
                     prior_map: Mapping[str, Prior], *, weights: np.ndarray, w_info: np.ndarray,
                     qr: bool = True, center: bool = False,
                     hold_columns: bool = False) -> tuple[Any, dict[str, np.ndarray]]:
    """The linear predictor of every row (inside a PyMC model context) and the fixed basis.

    Shared by every likelihood of the package: the intercept ``Intercept_c`` at the centred
    columns, the coefficients ``b`` (sampled in a QR basis), the random terms (centred or not,
    one of them holding the intercept), with the names the result reads back.  ``weights``
    weight the column means, ``w_info`` the QR decomposition; ``center`` centres the columns of a
    model without an intercept too (the cumulative-link model, whose thresholds take the shift).
    ``hold_columns``: a centred term holds the fixed columns constant within its levels
    (``a_l ~ Normal(x_l b, sigma)``, plus the intercept when it holds that too: hierarchical
    centring of group-level predictors): the likelihood then pins each ``a_l`` and the regression
    of the ``a_l`` on ``x_l`` pins those coefficients, instead of a ridge between the coefficient
    of an item attribute and the effects of every item that shares it.
    """
    import pymc as pm
    import pytensor.tensor as pt

    if icol is not None:
        cands = [p for p in plans if p.centered and "(Intercept)" in p.term.cnames]
        if cands:
            max(cands, key=lambda p: p.ratio).absorbs_intercept = True
    coef = [j for j in range(X.shape[1]) if j != icol]
    qr = qr and len(coef) >= 2
    xbar = np.zeros(len(coef))
    eta: Any = 0.0
    intercept = None
    b: Any = None
    Xc = np.ascontiguousarray(X[:, coef])
    if (icol is not None or center) and coef:
        # With an intercept, the other columns are centred (weighted by trials) so that the
        # intercept and the effects of the centred term are nearly uncorrelated with the slopes;
        # the intercept of the user's coding is recovered as a deterministic.
        xbar = np.average(Xc, axis=0, weights=weights)
        Xc = Xc - xbar
    if icol is not None:
        intercept = prior_map[names[icol]].dist("Intercept_c")
    holders: list[tuple[TermPlan, list[int]]] = []
    held: list[int] = []
    if hold_columns and coef:
        # the centred scalar term whose levels carry the most fixed columns (the coarsest grouping
        # on a tie: an item's attributes are constant within item:run too) holds them, when it
        # has more levels than columns to regress its effects on; then the next term holds those
        # of the remaining columns constant within its own levels (crossed terms: the items hold
        # the item attributes, the respondents theirs, such as VerbAgg's Anger and Gender)
        options = [(level_constant(Xc, p.term), p) for p in plans
                   if p.centered and p.term.nc == 1 and np.all(p.term.Z == 1.0)]
        while options:
            options = [([j for j in cols if j not in held], p) for cols, p in options]
            options = [(cols, p) for cols, p in options if cols and p.term.nl > len(cols) + 1]
            if not options:
                break
            cols, holder = max(options, key=lambda c: (len(c[0]), -c[1].term.nl))
            holders.append((holder, cols))
            held += cols
            options = [(c, p) for c, p in options if p is not holder]
    # A centred correlated term that holds the intercept holds the fixed slopes of its own columns
    # too (``u_l ~ MvNormal((Intercept_c - xbar b_x, b_x), S)`` and no ``x b_x`` in the rows):
    # on sleepstudy the ridge between the fixed Days slope and the subjects' slopes otherwise
    # leaves its bulk ESS near 700 of 4,000 draws.
    for p in plans:
        if p.centered and p.absorbs_intercept and p.term.nc > 1:
            for c, cname in enumerate(p.term.cnames):
                j = next((j for j in range(len(coef)) if names[coef[j]] == cname and j not in held
                          and np.array_equal(X[:, coef[j]], p.term.Z[:, c])), None)
                if j is not None:
                    p.slope_cols.append((j, c))
                    held.append(j)
    rowcols = [j for j in range(len(coef)) if j not in held]
    Xr = Xc.copy()
    Xr[:, held] = 0.0  # the held columns enter through the holder's mean, not the rows
    if coef and qr and len(rowcols) >= 2:
        # Sample theta = R b where Q R is the QR decomposition of the information-weighted
        # centred design: the likelihood is then close to isotropic in theta (treatment
        # contrasts sharing a reference level are otherwise correlated, which slows a sampler
        # with a diagonal mass matrix).  The prior stays the one stated for b.  Held columns
        # keep their own coordinates (b_j = theta_j).
        sw = np.sqrt(w_info)[:, None]
        R = np.linalg.qr(sw * Xc[:, rowcols], mode="r")
        R = R * np.sign(np.diag(R))[:, None]
        Rinv = np.eye(len(coef))
        Rinv[np.ix_(rowcols, rowcols)] = np.linalg.solve(R, np.eye(len(rowcols)))
        theta = pm.Flat("b_qr", dims="coef")
        b = pm.Deterministic("b", pt.dot(Rinv, theta), dims="coef")
        pm.Potential("b_prior", _vector_logp([prior_map[names[j]] for j in coef], b))
        eta = pt.dot(Xr @ Rinv, theta)
        basis = {"Xt": Xr @ Rinv, "T": Rinv, "xbar": xbar}
    else:
        if coef:
            b = _vector_prior("b", [prior_map[names[j]] for j in coef], dims="coef")
            eta = pt.dot(Xr, b)
        basis = {"Xt": Xr, "T": np.eye(len(coef)), "xbar": xbar}
    for holder, cols in holders:
        W = np.zeros((holder.term.nl, len(coef)))
        W[holder.term.index[:, None], np.array(cols)[None, :]] = Xc[:, cols]
        holder.level_x = W
    if holders:
        # the holders' levels' rows, in the order of the plans (the kernel's row offsets)
        basis["WT"] = np.vstack([p.level_x @ basis["T"] for p in plans if p.level_x is not None])
    if icol is not None:
        pm.Deterministic("Intercept", intercept - pt.dot(xbar, b) if coef else intercept)
    absorbed = False
    for p in plans:
        t = p.term
        mu = intercept if p.absorbs_intercept else 0.0
        if p.level_x is not None:
            mu = mu + pt.dot(p.level_x, b)
        absorbed |= p.absorbs_intercept
        sds = [prior_map[f"sd|{t.group}|{c}"] for c in t.cnames]
        lev = f"{t.group}__level"
        if t.nc == 1:
            if p.centered:
                sigma = sds[0].dist(f"sd({p.label})")
                u = pm.Normal(f"({p.label})", mu=mu, sigma=sigma, dims=lev)
            else:
                # Non-centred terms carry a signed scale s whose prior is the symmetric
                # extension of the SD prior, with sd = |s|: (s, z) and (-s, -z) give the same
                # effects, so |s| has exactly the SD prior, and a posterior SD near zero is
                # sampled through s = 0 instead of down a log-scale tail (which needs long
                # trajectories).
                s_signed = sds[0].symmetric().dist(f"s({p.label})")
                pm.Deterministic(f"sd({p.label})", pt.abs(s_signed))
                z = pm.Normal(f"z({p.label})", 0.0, 1.0, dims=lev)
                u = pm.Deterministic(f"({p.label})", mu + s_signed * z, dims=lev)
            # the index as one constant: PyTensor otherwise checks each of its entries for a bool
            index = pt.as_tensor_variable(t.index)
            contrib = u[index] if np.all(t.Z == 1.0) else u[index] * t.Z[:, 0]
        else:
            mean = pt.zeros(t.nc)
            if p.absorbs_intercept:
                shift = sum((xbar[j] * b[j] for j, _ in p.slope_cols), pt.as_tensor_variable(0.0))
                mean = pt.set_subtensor(mean[t.cnames.index("(Intercept)")], intercept - shift)
            for j, c in p.slope_cols:
                mean = pt.set_subtensor(mean[c], b[j])
            eta_lkj = prior_map[f"cor|{t.group}"].params[0]
            u = correlated_term(p, sds, eta_lkj, mean)
            contrib = pt.sum(u[t.index] * t.Z, axis=1)
        eta = eta + contrib
    if intercept is not None and not absorbed:
        eta = eta + intercept
    return eta, basis


def build_model(formula: str, data: pd.DataFrame, *, priors: Mapping[str, PriorSpec] | None = None,
                parameterization: str | Mapping[str, str] = "auto",
                likelihood: str = "fused", qr: bool = True, weights: str | ArrayLike | None = None,
                offset: str | ArrayLike | None = None, link: str = "logit", contrasts: dict[str, Any] | None = None,
                trials: str | None = None) -> BayesModel:
    """Build the PyMC model of ``formula`` on ``data`` (identical rows pooled into counts).

    ``weights``, ``offset``, ``link``, ``contrasts`` and ``trials`` are those of
    :func:`evalmix.glmer` (prior weights, a known term of the linear predictor besides the
    formula's ``offset()`` terms, the binomial link, factor codings, a column of trials).

    Examples
    --------
    >>> from evalmix.simulate import glmm_runs
    >>> d = glmm_runs(2, 20, 2, rng=1)
    >>> bm = build_model("correct ~ model + (1|item) + (1|item:run)", d)
    >>> sorted(bm.model.named_vars)[:3]
    ['(1|item)', '(1|item:run)', 'Intercept']
    """
    import pymc as pm

    from ..model import drop_rank_deficient
    from ..model import build_design

    from ..mixed.links import LINKS

    if link not in LINKS:
        raise ValueError(f"link must be one of {LINKS}, not {link!r}")
    model_args: dict[str, Any] = {k: v for k, v in (("weights", weights), ("offset", offset),
                                                    ("contrasts", contrasts), ("trials", trials))
                                  if v is not None}
    design = build_design(formula, data, **model_args)
    if link != "logit" and likelihood in ("fused", "fused32", "binomial"):
        likelihood = "softplus"  # the link-specific form below; the fused forms are logit only
    if likelihood == "binomial" and not (np.array_equal(design.k, np.round(design.k))
                                         and np.array_equal(design.m, np.round(design.m))):
        likelihood = "softplus"  # fractional counts (prior weights) have no Binomial variable
    design, dropped = drop_rank_deficient(design)
    if dropped:
        warnings.warn(f"fixed-effect model matrix is rank deficient so dropping {len(dropped)} "
                      f"column(s): {dropped}", FitWarning, stacklevel=3)
    prior_map, prior_table = resolve_priors(design, priors)
    needs_ml = parameterization == "auto" or (
        not isinstance(parameterization, str) and len(parameterization) < len(design.terms))
    ml = _ml_fit(formula, data, link=link, **model_args) if needs_ml else None
    plans = plan_terms(design, parameterization, ml, link)

    X = dense_x(design)
    names = list(design.fixed.columns)
    icol = next((j for j, t in enumerate(design.fixed.column_terms) if t == "(Intercept)"), None)
    w_info = _info_weights(design, ml, link)
    coords = model_coords(names, icol, plans)

    with pm.Model(coords=coords) as model:
        eta, basis = linear_predictor(X, names, icol, plans, prior_map, weights=design.m,
                                      w_info=w_info, qr=qr, hold_columns=True)
        if design.offset is not None:
            eta = eta + design.offset
        if link != "logit":
            pm.Potential("loglik", binomial_loglik(eta, design.k, design.m, link))
        elif likelihood == "binomial":
            pm.Binomial("y", n=design.m.astype("int64"), logit_p=eta,
                        observed=design.k.astype("int64"))
        else:
            pm.Potential("loglik", _binomial_logit_loglik(eta, design.k, design.m, likelihood))
    return BayesModel(model, design, plans, prior_map, prior_table, icol, ml, basis, link)


def start_values(bm: BayesModel, scale: float = 1.0) -> dict[str, np.ndarray]:
    """Starting values of the SDs of the correlated terms (the samplers jitter every start).

    Their SDs start at the pilot SDs (the ML SDs of a binomial model, moment estimates for the
    other families; on the sampled scale, ``scale`` being the Gaussian model's ``sd(y)``) kept
    within ``[0.1, 10]``, and their correlations at zero, instead of the prior's typical value:
    the log density is then moderate at the start whatever the scale of the response.  The other
    variables keep PyMC's support points.
    """
    start: dict[str, np.ndarray] = {}
    for p in bm.plans:
        if p.term.nc > 1:
            sd = np.asarray(p.sigma_ml, float) / scale
            sd = np.clip(np.where(np.isfinite(sd), sd, 1.0), 0.1, 10.0)
            start[f"sd({p.label})"] = sd
            start[f"cpc({p.label})"] = np.zeros(p.term.nc * (p.term.nc - 1) // 2)
    return start


def _vector_prior(name: str, priors: list[Prior], dims: str) -> Any:
    """One vector variable when all priors share a family (faster gradients), else one per entry."""
    import pymc as pm
    import pytensor.tensor as pt

    fams = {p.family for p in priors}
    if len(fams) == 1:
        kw = {k: np.array([p.kwargs[k] for p in priors]) for k in priors[0].kwargs}
        return _dist_vector(name, priors[0].family, kw, dims)
    parts = [p.dist(f"{name}[{i}]") for i, p in enumerate(priors)]
    return pm.Deterministic(name, pt.stack(parts), dims=dims)


LIKELIHOODS = ("fused", "fused32", "softplus", "binomial")


def _binomial_logit_loglik(eta: Any, k: np.ndarray, m: np.ndarray, form: str) -> Any:
    """Binomial log-likelihood of k of m with logit ``eta``, without the constant binomial terms.

    ``softplus``: ``k eta - m softplus(eta)`` (fastest with PyMC's C backend); ``fused``:
    ``log(1 + e^eta) = max(eta, 0) + log1p(e^-|eta|)``, one exp and one log1p per row whose
    gradient reuses ``e^-|eta|`` (fastest with JAX and numba); ``fused32``: the same in single
    precision, which halves the cost of the row-wise work under JAX (the log density moves by
    ~1e-4 on 10,000 rows, far below what changes a NUTS acceptance decision).
    """
    import pytensor.tensor as pt

    if form not in LIKELIHOODS:
        raise ValueError(f"likelihood must be one of {LIKELIHOODS}, got {form!r}")
    if form == "softplus":
        return pt.sum(k * eta - m * pt.softplus(eta))
    if form == "fused32":
        x = pt.cast(eta, "float32")
        k, m = k.astype("float32"), m.astype("float32")
        e = pt.exp(-pt.abs(x))
        return pt.cast(pt.sum(k * x - m * (pt.maximum(x, np.float32(0.0)) + pt.log1p(e))), "float64")
    e = pt.exp(-pt.abs(eta))
    return pt.sum(k * eta - m * (pt.maximum(eta, 0.0) + pt.log1p(e)))


def binomial_loglik(eta: TensorVariable, k: np.ndarray, m: np.ndarray, link: str) -> TensorVariable:
    """``sum k log mu + (m - k) log(1 - mu)`` with ``mu = g^-1(eta)`` for a probit or cloglog link,
    in forms that stay finite in the tails (the logit forms are :func:`_binomial_logit_loglik`).

    probit: ``log Phi(eta)`` by PyMC's ``normal_lcdf`` (``erfcx`` in the lower tail);
    cloglog: ``log(1 - mu) = -e^eta`` and ``log mu = log(-expm1(-e^eta))``.
    """
    import pytensor.tensor as pt
    from pymc.distributions.dist_math import normal_lcdf

    if link == "probit":
        lp, lq = normal_lcdf(0.0, 1.0, eta), normal_lcdf(0.0, 1.0, -eta)
    elif link == "cloglog":
        e = pt.exp(pt.minimum(eta, 700.0))
        lp, lq = pt.log(-pt.expm1(-e)), -e
    else:
        raise ValueError(f"binomial_loglik takes link 'probit' or 'cloglog', not {link!r}")
    return pt.sum(k * lp + (m - k) * lq)


def _vector_logp(priors: list[Prior], b: Any) -> Any:
    """Sum of the prior log densities of the entries of ``b``."""
    import pymc as pm
    import pytensor.tensor as pt

    from .priors import FAMILIES

    total = 0.0
    fams = {p.family for p in priors}
    if len(fams) == 1:
        kw = {k: np.array([p.kwargs[k] for p in priors]) for k in priors[0].kwargs}
        return pt.sum(pm.logp(getattr(pm, FAMILIES[priors[0].family][0]).dist(**kw), b))
    for i, p in enumerate(priors):
        total = total + pm.logp(getattr(pm, FAMILIES[p.family][0]).dist(**p.kwargs), b[i])
    return total


def _dist_vector(name: str, family: str, kw: dict[str, np.ndarray], dims: str) -> Any:
    import pymc as pm

    from .priors import FAMILIES

    return getattr(pm, FAMILIES[family][0])(name, **kw, dims=dims)


def correlated_term(p: TermPlan, sds: list[Prior], eta_lkj: float, mean: Any) -> Any:
    """The effects of a correlated term ``(1 + x|g)`` (levels x columns), inside a model context.

    The covariance is ``S L L' S``: the SDs ``S`` with their priors (``sd(...)``, one vector
    variable) and the Cholesky factor ``L`` of the correlation matrix built from canonical
    partial correlations ``tanh(y)`` (Stan's ``cholesky_factor_corr``), with the LKJ(``eta``)
    density of ``L`` and the Jacobian of the map added as a potential.  Every operation is
    elementwise on the few columns (no Cholesky decomposition, triangular solve or
    ``LKJCholeskyCov``): PyMC's ``LKJCholeskyCov`` + ``MvNormal`` evaluate about 100 times
    slower on sleepstudy (1.3 ms a gradient with the numba backend, 12 ms with the C backend)
    and their start is drawn from the SD prior, which fails under nutpie.  Centred:
    ``u_l ~ MvNormal(mean, S L L' S)`` written out by forward substitution; non-centred:
    ``u_l = mean + S L z_l``, ``z ~ Normal(0, 1)``.
    """
    import pymc as pm
    import pytensor.tensor as pt

    t = p.term
    K = t.nc
    col, lev = f"{p.label}__column", f"{t.group}__level"
    sd = _vector_prior(f"sd({p.label})", sds, dims=col)
    y = pm.Flat(f"cpc({p.label})", shape=K * (K - 1) // 2)
    z = pt.tanh(y)
    zero = pt.as_tensor_variable(np.float64(0.0))
    one = pt.as_tensor_variable(np.float64(1.0))
    L: list[list[Any]] = [[zero] * K for _ in range(K)]
    L[0][0] = one
    log_jac: Any = pt.sum(pt.log1p(-z ** 2))  # d tanh(y) / dy = 1 - tanh(y)^2
    k = 0
    for i in range(1, K):
        ss: Any = zero
        for j in range(i):
            if j == 0:
                lij = z[k]
            else:
                lij = z[k] * pt.sqrt(1.0 - ss)
                log_jac = log_jac + 0.5 * pt.log1p(-ss)
            L[i][j] = lij
            ss = ss + lij ** 2
            k += 1
        L[i][i] = pt.sqrt(1.0 - ss)
    # LKJ density of the Cholesky factor (Stan's lkj_corr_cholesky): L_ii^(K - i - 1 + 2 eta - 2)
    lkj = sum(((K - i - 1) + 2.0 * (eta_lkj - 1.0)) * pt.log(L[i][i]) for i in range(1, K))
    pm.Potential(f"cor_prior({p.label})", lkj + log_jac)
    Lm = pt.stack([pt.stack(row) for row in L])
    pm.Deterministic(f"cor({p.label})", Lm @ Lm.T)
    if p.centered:
        u = pm.Flat(f"({p.label})", dims=(lev, col))
        e = [(u[:, c] - mean[c]) / sd[c] for c in range(K)]
        w: list[Any] = []
        for i in range(K):  # w = L^-1 e, row by row
            acc = e[i]
            for j in range(i):
                acc = acc - L[i][j] * w[j]
            w.append(acc / L[i][i])
        log_det = pt.sum(pt.log(sd)) + sum(pt.log(L[i][i]) for i in range(1, K))
        quad = sum(pt.sum(wi ** 2) for wi in w)
        pm.Potential(f"({p.label})_prior", -t.nl * log_det - 0.5 * quad
                     - 0.5 * t.nl * K * np.log(2 * np.pi))
        return u
    zz = pm.Normal(f"z({p.label})", 0.0, 1.0, dims=(lev, col))
    cols = [mean[i] + sd[i] * sum(L[i][j] * zz[:, j] for j in range(i + 1)) for i in range(K)]
    return pm.Deterministic(f"({p.label})", pt.stack(cols, axis=1), dims=(lev, col))
