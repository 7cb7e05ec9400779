"""The Bayesian twins start, converge and agree with the ML engines on R's textbook data sets.

Fast checks: the correlated term's hand-written LKJ / Cholesky density against the LKJ density
of the correlation matrix (with a numerical Jacobian) and against scipy's multivariate normal, the
starting values every sampler gets, and the diagnostics as printed.  The sampling checks (marked
slow) fit sleepstudy ``(Days|Subject)``, a binomial ``(1 + x|g)``, ordinal's wine and cbpp with
the DEFAULT settings and assert convergence (r_hat <= 1.01, bulk ESS >= 400, no divergences) and
posterior means of the fixed effects within 0.5 ML standard errors of evalmix's ML fits (which
match lme4, ordinal and glmmTMB in their own tests).
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("pymc") is None, reason="needs pymc (the bayes extra)")

import evalmix  # noqa: E402
from evalmix import bayes  # noqa: E402
from evalmix.bayes.families import build_family_model  # noqa: E402

REF = Path(__file__).parents[1] / "reference"


def _three_column_data(seed: int = 3) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n_g, per = 6, 8
    g = np.repeat([f"g{i}" for i in range(n_g)], per)
    x1, x2 = rng.normal(size=n_g * per), rng.normal(size=n_g * per)
    y = 1.0 + 0.5 * x1 - 0.3 * x2 + rng.normal(size=n_g * per)
    return pd.DataFrame({"y": y, "x1": x1, "x2": x2, "g": g})


def _potential(bm, name: str, point: dict) -> float:
    model = bm.model
    pot = model.replace_rvs_by_values([next(p for p in model.potentials if p.name == name)])[0]
    fn = model.compile_fn(pot, inputs=model.value_vars, on_unused_input="ignore", mode="FAST_COMPILE")
    return float(fn(point))


def _cholesky_from_cpc(y: np.ndarray, K: int) -> np.ndarray:
    """Stan's cholesky_factor_corr transform, written independently of the model's graph."""
    z = np.tanh(y)
    L = np.zeros((K, K))
    L[0, 0] = 1.0
    k = 0
    for i in range(1, K):
        for j in range(i):
            L[i, j] = z[k] * math.sqrt(1.0 - np.sum(L[i, :j] ** 2))
            k += 1
        L[i, i] = math.sqrt(1.0 - np.sum(L[i, :i] ** 2))
    return L


@pytest.mark.parametrize("form", ["centered", "noncentered"])
def test_correlation_prior_is_lkj_with_its_jacobian(form):
    d = _three_column_data()
    bm = build_family_model("y ~ x1 + x2 + (1 + x1 + x2|g)", d, "gaussian", parameterization=form,
                            priors={"cor": 1.7})
    label = "1 + x1 + x2|g"
    point = bm.model.initial_point()
    K, eta = 3, 1.7
    ys = [np.array([0.3, -0.4, 0.2]), np.array([-1.1, 0.6, 0.9]), np.zeros(3)]
    vals = []
    for y in ys:
        point[f"cpc({label})"] = y
        vals.append(_potential(bm, f"cor_prior({label})", point))

    def reference(y: np.ndarray) -> float:
        # LKJ(eta) density of the correlation matrix, det(C)^(eta - 1), times |d r / d y| of the
        # map from the free parameters to the 3 correlations (central differences)
        def corr(v):
            L = _cholesky_from_cpc(v, K)
            C = L @ L.T
            return C[np.tril_indices(K, -1)], C

        r, C = corr(y)
        J = np.zeros((3, 3))
        h = 1e-6
        for i in range(3):
            e = np.zeros(3)
            e[i] = h
            J[:, i] = (corr(y + e)[0] - corr(y - e)[0]) / (2 * h)
        return (eta - 1) * math.log(np.linalg.det(C)) + math.log(abs(np.linalg.det(J)))

    refs = [reference(y) for y in ys]
    # equal up to the LKJ normalising constant, which does not depend on the point
    np.testing.assert_allclose(np.array(vals) - vals[-1], np.array(refs) - refs[-1], atol=1e-6)


def test_centred_correlated_term_is_multivariate_normal():
    from scipy import stats

    d = _three_column_data()
    bm = build_family_model("y ~ x1 + x2 + (1 + x1 + x2|g)", d, "gaussian", parameterization="centered")
    label = "1 + x1 + x2|g"
    plan = bm.plans[0]
    assert plan.absorbs_intercept and len(plan.slope_cols) == 2  # it holds the intercept and both slopes
    rng = np.random.default_rng(5)
    point = bm.model.initial_point()
    y = np.array([0.4, -0.2, 0.7])
    sd = np.array([0.8, 0.5, 1.3])
    u = rng.normal(size=(6, 3))
    point.update({f"cpc({label})": y, f"sd({label})_log__": np.log(sd), f"({label})": u,
                  "Intercept_c": np.array(0.3), "b": np.zeros(2)})
    got = _potential(bm, f"({label})_prior", point)
    L = _cholesky_from_cpc(y, 3)
    cov = np.diag(sd) @ L @ L.T @ np.diag(sd)
    # the means: the intercept at the centred columns less xbar b (b = 0 here), the slopes b = 0
    mean = np.array([0.3, 0.0, 0.0])
    want = stats.multivariate_normal(mean, cov).logpdf(u).sum()
    assert got == pytest.approx(want, abs=1e-8)


def test_every_twin_gets_starting_values_that_evaluate():
    sleep = pd.read_csv(REF / "lmer_sleepstudy.csv")
    wine = pd.read_csv(REF / "clmm_wine.csv")
    bm = build_family_model("Reaction ~ Days + (Days|Subject)", sleep, "gaussian")
    start = bm.initial_points()
    # the SDs start at the moment estimates on the standardised scale, the correlation at zero
    assert set(start) == {"sd(1 + Days|Subject)", "cpc(1 + Days|Subject)"}
    np.testing.assert_allclose(start["sd(1 + Days|Subject)"] * bm.design.y_scale, bm.plans[0].sigma_ml)
    assert start["cpc(1 + Days|Subject)"].tolist() == [0.0]
    cm = build_family_model("rating ~ temp + contact + (1|judge)", wine, "cumulative", link="logit")
    th = cm.initial_points()["thresholds_c"]
    assert np.all(np.diff(th) > 0) and len(th) == 4
    # no variable carries an initval: nutpie's JAX path refuses models that do
    assert all(v is None for v in cm.model.rvs_to_initial_values.values())
    from pymc.initial_point import make_initial_point_fn

    for m in (bm, cm):
        fn = make_initial_point_fn(model=m.model, overrides=m.initial_points(),
                                   jitter_rvs=set(m.model.free_RVs), return_transformed=True)
        logp = m.model.compile_logp(mode="FAST_COMPILE")
        assert all(np.isfinite(logp(fn(seed))) for seed in range(10))


def test_printed_diagnostics_keep_three_decimals():
    from evalmix.bayes.result import _diagnostics_shown

    t = pd.DataFrame({"parameter": ["a", "b"], "r_hat": [1.004, 1.0093], "ess_bulk": [812.7, 401.2],
                      "ess_tail": [1003.9, np.nan]})
    shown = _diagnostics_shown(t)
    assert shown["r_hat"].tolist() == ["1.004", "1.009"]
    assert shown["ess_bulk"].tolist() == [812, 401] and shown["ess_tail"].tolist() == [1003, 0]


# ------------------------------------------------------------------ sampling (slow)

def _converged(fit) -> pd.DataFrame:
    tab = fit.posterior_table()
    assert tab["r_hat"].max() <= 1.01, tab
    assert tab["ess_bulk"].min() >= 400, tab
    assert fit.divergences == 0
    assert "r_hat" in str(fit.summary()) and f"{fit.divergences} divergences" in str(fit.summary())
    return tab


def _near_ml(fit, ml_coef: pd.Series, ml_se: pd.Series, names: list[str]) -> None:
    for n in names:
        assert abs(fit.fixef[n] - ml_coef[n]) <= 0.5 * ml_se[n], (n, fit.fixef[n], ml_coef[n], ml_se[n])


@pytest.mark.slow
def test_lmer_twin_converges_on_sleepstudy_correlated_slopes():
    sleep = pd.read_csv(REF / "lmer_sleepstudy.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("error", evalmix.errors.SamplingWarning)
        fit = bayes.lmer("Reaction ~ Days + (Days|Subject)", sleep, rng=1, progressbar=False)
    assert fit.sampler.startswith(("nutpie", "pymc"))
    _converged(fit)
    ml = evalmix.lmer("Reaction ~ Days + (Days|Subject)", sleep)
    _near_ml(fit, ml.fixef, pd.Series(np.sqrt(np.diag(ml.vcov)), index=ml.fixef.index),
             ["(Intercept)", "Days"])
    vc = fit.varcorr
    cor = vc[vc["var2"] != ""]["sd"].iloc[0]
    assert -0.5 < cor < 0.6  # lme4: 0.066, with a wide posterior over 18 subjects


@pytest.mark.slow
def test_glmer_twin_converges_on_a_correlated_binomial_slope():
    d = pd.read_csv(REF / "glmm_slope.csv")
    fit = bayes.glmer("correct ~ x + (1 + x|g)", d, rng=2, progressbar=False)
    _converged(fit)
    ml = evalmix.glmer("correct ~ x + (1 + x|g)", d)
    _near_ml(fit, ml.fixef, pd.Series(np.sqrt(np.diag(ml.vcov)), index=ml.fixef.index), ["(Intercept)", "x"])


@pytest.mark.slow
def test_clmm_twin_converges_on_wine():
    wine = pd.read_csv(REF / "clmm_wine.csv")
    fit = bayes.clmm("rating ~ temp + contact + (1|judge)", wine, rng=3, progressbar=False)
    _converged(fit)
    ml = evalmix.clmm("rating ~ temp + contact + (1|judge)", wine)
    coef = ml.coef if hasattr(ml, "coef") else ml.fixef
    tab = ml.to_frame().set_index("term") if "term" in ml.to_frame().columns else None
    assert tab is not None
    for n in ("tempwarm", "contactyes"):
        assert abs(fit.fixef[n] - tab.loc[n, "estimate"]) <= 0.5 * tab.loc[n, "se"], (n, coef)


@pytest.mark.slow
def test_glmmtmb_betabinomial_twin_converges_on_cbpp():
    cbpp = pd.read_csv(REF / "engine_cbpp.csv", dtype={"herd": str, "period": str})
    f = "cbind(incidence, size - incidence) ~ period + (1|herd)"
    fit = bayes.glmmtmb(f, cbpp, family="betabinomial", rng=4, progressbar=False)
    _converged(fit)
    ml = evalmix.glmmtmb(f, cbpp, family="betabinomial")
    tab = ml.to_frame().set_index("term")
    for n in ("(Intercept)", "period2", "period3", "period4"):
        assert abs(fit.fixef[n] - tab.loc[n, "estimate"]) <= 0.5 * tab.loc[n, "se"], n


@pytest.mark.slow
def test_glmmtmb_beta_twin_converges_on_scores():
    d = pd.read_csv(REF / "glmmtmb_sim.csv")
    f = "score ~ model + (1|item)"
    fit = bayes.glmmtmb(f, d, family="beta", rng=5, progressbar=False)
    _converged(fit)
    ml = evalmix.glmmtmb(f, d, family="beta")
    tab = ml.to_frame().set_index("term")
    for n in fit.fixef.index:
        assert abs(fit.fixef[n] - tab.loc[n, "estimate"]) <= 0.5 * tab.loc[n, "se"], n
