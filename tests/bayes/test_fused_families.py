"""The compiled kernel's row passes for the other twins (evalmix.bayes._fused_families): Gaussian,
beta, beta-binomial and cumulative logit / probit models with one-column random terms.

Fast checks (no PyTensor compilation): the kernel's log density equals an independent
scipy-written density of the same model (its layout, priors, transforms and likelihood) at
random points, its gradient equals central differences, and the scalar helpers (digamma, log
Phi, log of a difference of Phis) equal scipy's.  Slow checks: the log density and gradient
equal PyMC's compiled ones (relative 1e-8; 1e-6 for the probit, whose PyTensor ``erf`` and
``erfc`` are accurate to about 1e-8 where the kernel's are to 1e-16), and the twins sample on the
kernel and agree with the maximum-likelihood fits.
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import special, stats

pytestmark = pytest.mark.skipif(
    any(importlib.util.find_spec(n) is None for n in ("pymc", "numba")),
    reason="needs the bayes extra (pymc, numba)")

import evalmix  # noqa: E402
from evalmix import bayes  # noqa: E402
from evalmix.bayes import _fused_families as ff  # noqa: E402
from evalmix.bayes.families import build_family_model, standardized_priors  # noqa: E402
from evalmix.bayes.fused import FusedDensity, fused_reason  # noqa: E402
from evalmix.core.errors import SamplingWarning  # noqa: E402

REF = Path(__file__).parents[1] / "reference"


def _data(name: str) -> pd.DataFrame:
    if name == "sleep":
        return pd.read_csv(REF / "lmer_sleepstudy.csv")
    if name == "wine":
        return pd.read_csv(REF / "clmm_wine.csv")
    if name == "cbpp":
        return pd.read_csv(REF / "engine_cbpp.csv", dtype={"herd": str, "period": str})
    d = pd.read_csv(REF / "glmmtmb_sim.csv")
    if name == "crossed":  # a Gaussian response on a crossed model x item design
        rng = np.random.default_rng(5)
        d = d.assign(y=d["score"] * 10 + rng.normal(size=len(d)))
    return d


CBPP = "cbind(incidence, size - incidence) ~ period + (1|herd)"
WINE = "rating ~ temp + contact + (1|judge)"
# name: (formula, data, family, keyword arguments)
CASES = {
    "gaussian": ("Reaction ~ Days + (1|Subject)", "sleep", "gaussian", {}),
    "gaussian_noncentred_priors": ("Reaction ~ Days + (1|Subject)", "sleep", "gaussian",
                                   dict(parameterization="noncentered",
                                        priors={"sigma": ("exponential", 0.05), "sd": ("half_cauchy", 20)})),
    "gaussian_crossed": ("y ~ 1 + (1|model) + (1|item)", "crossed", "gaussian", {}),
    "gaussian_slope_column": ("Reaction ~ Days + (1|Subject) + (0 + Days|Subject)", "sleep", "gaussian", {}),
    "beta_nested": ("score ~ model + (1|item) + (1|item:run)", "sim", "beta",
                    dict(parameterization={"item": "centered", "item:run": "noncentered"})),
    "betabinomial": (CBPP, "cbpp", "betabinomial", {}),
    "betabinomial_phi_prior": (CBPP, "cbpp", "betabinomial",
                               dict(priors={"phi": ("half_normal", 20)}, parameterization="noncentered")),
    "cumulative_logit": (WINE, "wine", "cumulative", dict(link="logit")),
    "cumulative_probit": (WINE, "wine", "cumulative", dict(link="probit", parameterization="noncentered")),
    "cumulative_student_t": (WINE, "wine", "cumulative",
                             dict(link="logit", priors={"threshold": ("student_t", 4, 0, 3)})),
}
FAST = ["gaussian", "beta_nested", "betabinomial", "cumulative_logit", "cumulative_probit"]

_MODELS: dict[str, object] = {}


def _density(case: str) -> FusedDensity:
    if case not in _MODELS:
        formula, data, family, kw = CASES[case]
        bm = build_family_model(formula, _data(data), family, **kw)
        assert fused_reason(bm) is None, case
        _MODELS[case] = FusedDensity.from_model(bm)
    return _MODELS[case]  # type: ignore[return-value]


def _points(density: FusedDensity, n: int = 2, scale: float = 0.3) -> list[np.ndarray]:
    rng = np.random.default_rng(1)
    return [density.initial_point(i) + rng.normal(size=density.n_dim) * scale for i in range(n)]


# ------------------------------------------------------------------ an independent density

def _prior_logpdf(prior, v):
    kw = prior.kwargs
    fam = prior.family
    if fam == "normal":
        return stats.norm.logpdf(v, kw.get("mu", 0.0), kw["sigma"])
    if fam == "student_t":
        return stats.t.logpdf(v, kw["nu"], kw.get("mu", 0.0), kw["sigma"])
    if fam == "cauchy":
        return stats.cauchy.logpdf(v, kw.get("alpha", 0.0), kw["beta"])
    if fam == "laplace":
        return stats.laplace.logpdf(v, kw["mu"], kw["b"])
    if fam == "half_normal":
        return stats.halfnorm.logpdf(v, scale=kw["sigma"])
    if fam == "half_student_t":
        return math.log(2.0) + stats.t.logpdf(v, kw["nu"], 0.0, kw["sigma"])
    if fam == "half_cauchy":
        return stats.halfcauchy.logpdf(v, scale=kw["beta"])
    assert fam == "exponential"
    return stats.expon.logpdf(v, scale=1.0 / kw["lam"])


def reference_logp(density: FusedDensity, x: np.ndarray) -> float:
    """The model's log density on the kernel's unconstrained vector, from its description
    (families.py, model.linear_predictor) with scipy's distributions."""
    bm = density.bm
    design, basis = bm.design, bm.fixed_basis
    priors = standardized_priors(bm.priors, design) if bm.family == "gaussian" else bm.priors
    v = {name: x[o:o + s] for name, _, o, s in density.blocks}
    lp = 0.0
    coef = [c for j, c in enumerate(bm.fixed_names) if j != bm.intercept_col]
    eta = np.zeros(design.nobs)
    ic = 0.0
    if bm.intercept_col is not None:
        ic = float(v["Intercept_c"][0])
        lp += _prior_logpdf(priors[bm.intercept_name], ic)
    if coef:
        theta = v["b_qr"] if "b_qr" in v else v["b"]
        b = basis["T"] @ theta
        lp += sum(_prior_logpdf(priors[c], bj) for c, bj in zip(coef, b))
        eta += basis["Xt"] @ theta
    if bm.intercept_col is not None and not any(pl.absorbs_intercept for pl in bm.plans):
        eta += ic
    for pl in bm.plans:
        t = pl.term
        sd_prior = priors[f"sd|{t.group}|{t.cnames[0]}"]
        if pl.centered:
            ls = float(v[f"sd({pl.label})"][0])
            lp += _prior_logpdf(sd_prior, math.exp(ls)) + ls
            u = v[f"({pl.label})"]
            lp += stats.norm.logpdf(u, ic if pl.absorbs_intercept else 0.0, math.exp(ls)).sum()
        else:
            s = float(v[f"s({pl.label})"][0])
            lp += _prior_logpdf(sd_prior.symmetric(), s)
            z = v[f"z({pl.label})"]
            lp += stats.norm.logpdf(z).sum()
            u = s * z
        eta += u[t.index] * t.Z[:, 0]
    y = design.y
    if bm.family == "gaussian":
        ls = float(v["sigma"][0])
        lp += _prior_logpdf(priors["sigma"], math.exp(ls)) + ls
        ys = (y - design.y_loc) / design.y_scale
        return lp + stats.norm.logpdf(ys, eta, math.exp(ls)).sum()
    if bm.family in ("beta", "betabinomial"):
        lphi = float(v["phi"][0])
        phi = math.exp(lphi)
        lp += _prior_logpdf(priors["phi"], phi) + lphi
        mu = special.expit(eta)
        if bm.family == "beta":
            return lp + stats.beta.logpdf(y, mu * phi, (1 - mu) * phi).sum()
        return lp + stats.betabinom.logpmf(y, design.m, mu * phi, (1 - mu) * phi).sum()
    xo = v["thresholds_c"]
    cut = np.cumsum(np.concatenate([xo[:1], np.exp(xo[1:])]))
    lp += xo[1:].sum()  # the ordered transform's Jacobian
    shift = basis["xbar"] @ (basis["T"] @ v["b_qr"]) if "b_qr" in v else basis["xbar"] @ v["b"]
    lp += sum(_prior_logpdf(priors["threshold"], c + shift) for c in cut)
    edges = np.concatenate([[-np.inf], cut, [np.inf]])
    codes = y.astype(int)
    cdf = special.expit if bm.link == "logit" else special.ndtr
    return lp + np.log(cdf(edges[codes + 1] - eta) - cdf(edges[codes] - eta)).sum()


@pytest.mark.parametrize("case", FAST)
def test_kernel_density_is_the_models(case):
    """Log density equal to the scipy-written one (relative 1e-9), gradient to central differences."""
    density = _density(case)
    for x in _points(density):
        lp, g = density.logp_dlogp(x)
        assert lp == pytest.approx(reference_logp(density, x), rel=1e-9), case
        h = 1e-5
        fd = np.array([(density.logp_dlogp(x + h * e)[0] - density.logp_dlogp(x - h * e)[0]) / (2 * h)
                       for e in np.eye(density.n_dim)])
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-5 * np.abs(g).max())


def test_the_families_layout_and_coverage():
    wine = _density("cumulative_logit")
    assert [b[0] for b in wine.blocks][-1] == "thresholds_c"
    assert wine.blocks[-1][1] == "thresholds_c_ordered__" and wine.blocks[-1][3] == 4  # 5 ratings
    start = wine.initial_point(3)
    assert np.all(np.isfinite(wine.logp_dlogp(start)[1]))
    # the start is the model's (cumulative frequencies) within the jitter of U(-1, 1)
    cut = np.cumsum(np.concatenate([start[-4:-3], np.exp(start[-3:])]))
    cut0 = np.asarray(wine.bm.initial_points()["thresholds_c"])
    assert np.all(np.abs(cut[0] - cut0[0]) <= 1.0)
    assert wine.row_pass == "rows"
    d = _data("sleep")
    corr = build_family_model("Reaction ~ Days + (Days|Subject)", d, "gaussian")
    assert fused_reason(corr) is None  # correlated terms feed every family's row pass
    off = build_family_model("Reaction ~ Days + offset(Days) + (1|Subject)", d, "gaussian")
    assert fused_reason(off) == "an offset"


def test_scalar_helpers_match_scipy():
    x = np.array([1e-6, 0.01, 0.5, 1.0, 3.7, 9.99, 10.0, 55.0, 1e4])
    np.testing.assert_allclose([ff.digamma.py_func(v) for v in x], special.digamma(x), rtol=1e-13, atol=1e-13)
    z = np.array([-40.0, -30.0, -8.0, -1.5, -1.0, -0.3, 0.0, 0.7, 1.0, 5.0, 9.0])
    np.testing.assert_allclose([ff.log_ndtr.py_func(v) for v in z], special.log_ndtr(z), rtol=1e-13)
    t = np.array([0.0, 0.3, 2.0, 24.9, 25.0, 30.0, 300.0])
    np.testing.assert_allclose([ff.erfcx.py_func(v) for v in t], special.erfcx(t), rtol=1e-13)
    pairs = [(0.5, -0.2), (-0.3, -1.0), (2.0, 1.0), (-2.5, -4.0), (3.0, 0.5), (0.9, 0.8), (-30.0, -31.0),
             (12.0, 11.0), (1e-3, -1e-3)]
    for hi, lo in pairs:
        if hi > 0 and lo > 0:  # the upper tail: by the survival functions
            ref = special.log_ndtr(-lo) + np.log1p(-np.exp(special.log_ndtr(-hi) - special.log_ndtr(-lo)))
        else:
            ref = special.log_ndtr(hi) + np.log1p(-np.exp(special.log_ndtr(lo) - special.log_ndtr(hi)))
        assert ff.log_diff_ndtr.py_func(hi, lo) == pytest.approx(ref, rel=1e-12), (hi, lo)


# ------------------------------------------------------------------ against PyMC (slow)

def _pymc_logp_dlogp(density: FusedDensity, x: np.ndarray) -> tuple[float, np.ndarray]:
    bm = density.bm
    model = bm.model
    fn = getattr(density, "_pymc_fn", None)
    if fn is None:
        fn = model.compile_fn([model.logp(), model.dlogp()])
        object.__setattr__(density, "_pymc_fn", fn)
    point = density.point(x)
    lp, g = fn(point)
    sizes = [point[v.name].size for v in model.value_vars]
    parts = dict(zip([v.name for v in model.value_vars], np.split(g, np.cumsum(sizes)[:-1])))
    return float(lp), np.concatenate([parts[vname] for _, vname, _, _ in density.blocks])


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_kernel_density_matches_pymc(case):
    density = _density(case)
    rel = 1e-6 if "probit" in case else 1e-8
    for x in _points(density, 3, 0.5):
        lp, g = density.logp_dlogp(x)
        lp_ref, g_ref = _pymc_logp_dlogp(density, x)
        assert lp == pytest.approx(lp_ref, rel=rel), case
        np.testing.assert_allclose(g, g_ref, rtol=rel, atol=rel * np.abs(g_ref).max())


@pytest.mark.slow
def test_lmer_random_intercept_samples_on_the_kernel_and_agrees_with_ml():
    """sleepstudy (1|Subject): the compiled kernel (named in summary()), converged, fixed effects
    within 0.5 posterior SD of lme4's and the SDs near the ML ones."""
    d = _data("sleep")
    f = "Reaction ~ Days + (1|Subject)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        fit = bayes.lmer(f, d, rng=1, progressbar=False)
    assert "compiled numba kernel" in fit.sampler
    assert "compiled numba kernel" in str(fit.summary())
    tab = fit.posterior_table().set_index("parameter")
    assert tab["r_hat"].max() <= 1.01 and tab["ess_bulk"].min() >= 400 and fit.divergences == 0
    ml = evalmix.lmer(f, d)
    for name, est in ml.fixef.items():
        assert abs(tab.loc[name, "estimate"] - est) < 0.5 * tab.loc[name, "se"], name
    # lme4: sigma 30.99, sd(Subject) 37.12 (REML); the posterior means sit within a posterior SD
    assert abs(tab.loc["sigma", "estimate"] - 30.99) < tab.loc["sigma", "se"]
    sd = tab.loc["sd((Intercept)|Subject)"]
    assert abs(sd["estimate"] - 37.12) < sd["se"]


@pytest.mark.slow
@pytest.mark.parametrize("link", ["logit", "probit"])
def test_clmm_samples_on_the_kernel_and_agrees_with_ml(link):
    d = _data("wine")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        fit = bayes.clmm(WINE, d, link=link, rng=2, progressbar=False)
    assert "compiled numba kernel" in fit.sampler
    tab = fit.posterior_table().set_index("parameter")
    assert tab["r_hat"].max() <= 1.01 and tab["ess_bulk"].min() >= 400 and fit.divergences == 0
    ml = evalmix.clmm(WINE, d, link=link).to_frame().set_index("term")
    for name in ("tempwarm", "contactyes", "1|2", "2|3", "3|4", "4|5"):
        assert abs(tab.loc[name, "estimate"] - ml.loc[name, "estimate"]) < 0.5 * tab.loc[name, "se"], name
