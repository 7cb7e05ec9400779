"""The low-memory grid path (evalmix.glmm.gridfit.glmer_grid) against the general glmer path,
lme4, dense linear algebra and a simulation's truth."""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import scipy.linalg as sla

import evalmix
from evalmix.core.errors import ArgumentError, DataError
from evalmix.core.parallel import single_thread_blas
from evalmix.glmm import gridfit as gf

REF = Path(__file__).resolve().parents[1] / "reference"
CROSSED = "correct ~ 1 + (1|model) + (1|item)"
FIXED = "correct ~ 0 + model + (1|item)"


def _frame(y: np.ndarray) -> pd.DataFrame:
    ns, nb = y.shape
    return pd.DataFrame({
        "model": pd.Categorical(np.repeat([f"m{s:03d}" for s in range(ns)], nb)),
        "item": pd.Categorical(np.tile([f"i{b:04d}" for b in range(nb)], ns)),
        "correct": y.ravel()})


def _se(fit) -> np.ndarray:
    return np.sqrt(np.diag(fit.vcov.to_numpy()))


def _factorizations(fit) -> int:
    return int(re.search(r"\((\d+) factorisations\)", fit.optimizer.message).group(1))


def test_crossed_matches_glmer():
    y, _ = gf.simulate_grid(30, 200, rng=1, intercept=0.3)
    ref = evalmix.glmer(CROSSED, _frame(y), vcov_method="hessian_exact")
    fit = gf.glmer_grid(y, CROSSED)
    assert fit.loglik == pytest.approx(ref.loglik, abs=1e-6)
    assert float(fit.theta["model.(Intercept)"]) == pytest.approx(ref.theta["model.(Intercept)"], rel=1e-6)
    assert float(fit.theta["item.(Intercept)"]) == pytest.approx(ref.theta["item.(Intercept)"], rel=1e-6)
    assert fit.fixef.iloc[0] == pytest.approx(ref.fixef.iloc[0], abs=1e-6)
    assert _se(fit)[0] == pytest.approx(np.sqrt(ref.vcov.iloc[0, 0]), rel=1e-5)
    assert fit.vcov_method == "hessian_exact" and fit.converged


def test_fixed_model_effects_match_glmer():
    y, _ = gf.simulate_grid(20, 300, rng=2, intercept=0.3)
    ref = evalmix.glmer(FIXED, _frame(y), vcov_method="rx")
    fit = gf.glmer_grid(y, FIXED, models=[f"m{s:03d}" for s in range(20)])
    assert fit.loglik == pytest.approx(ref.loglik, abs=1e-6)
    assert float(fit.theta["item.(Intercept)"]) == pytest.approx(float(ref.theta.iloc[0]), rel=1e-6)
    np.testing.assert_allclose(fit.fixef, ref.fixef.to_numpy(), atol=1e-6)
    np.testing.assert_allclose(_se(fit), np.sqrt(np.diag(ref.vcov)), rtol=1e-6)
    assert list(fit.fixef.index[:2]) == ["modelm000", "modelm001"]


def test_orientation_and_compiled_passes_agree():
    # more models than items: the Schur complement goes onto the items; same fit either way
    y, _ = gf.simulate_grid(40, 25, rng=4, intercept=0.2)
    a = gf.glmer_grid(y, compiled=False)
    b = gf.glmer_grid(np.ascontiguousarray(y.T), compiled=False)
    assert float(a.theta["model.(Intercept)"]) == pytest.approx(float(b.theta["item.(Intercept)"]), rel=1e-12)
    assert a.loglik == pytest.approx(b.loglik, abs=1e-9)


def test_logdet_is_float64_where_float32_would_not_do():
    # large variances, many items: the Schur complement is a difference of nearly equal sums,
    # so float32 accumulation would move log det H by more than the fit's resolution
    y, _ = gf.simulate_grid(12, 800, model_sd=0.3, item_sd=0.3, rng=7)
    ts, tb = 10.0, 10.0
    grid = gf._Grid(y, compiled=False)
    dev = gf._Crossed(grid)
    dev.deviance(ts, tb, 0.1)
    fac = dev.fac
    # dense H = A'WA + I at the same modes (float64, q x q)
    a, c = 0.1 + ts * dev.us, tb * dev.ub
    mu = 1 / (1 + np.exp(-(a[:, None] + c[None, :])))
    W = mu * (1 - mu)
    ns, nb = W.shape
    H = np.zeros((ns + nb, ns + nb))
    H[:ns, :ns] = np.diag(1 + ts**2 * W.sum(axis=1))
    H[ns:, ns:] = np.diag(1 + tb**2 * W.sum(axis=0))
    H[:ns, ns:] = ts * tb * W
    H[ns:, :ns] = ts * tb * W.T
    with single_thread_blas():
        exact = 2 * np.log(np.diag(sla.cholesky(H))).sum()
    assert fac["logdet"] == pytest.approx(exact, abs=1e-9)
    # the same Schur complement accumulated in float32
    W32 = W.astype(np.float32)
    Db = (1 + tb**2 * W32.sum(axis=0, dtype=np.float32)).astype(np.float32)
    X = W32 * (np.float32(ts * tb) / np.sqrt(Db))[None, :]
    S32 = np.diag((1 + ts**2 * W32.sum(axis=1, dtype=np.float32)).astype(np.float32)) - X @ X.T
    ld32 = float(np.log(Db.astype(float)).sum() + 2 * np.log(np.diag(sla.cholesky(S32.astype(float)))).sum())
    # float32: off by 2.7e-5 here, more than the 1e-6 to which the fits match glmer's log-likelihood
    assert abs(ld32 - exact) > 1e-5


def test_float32_chord_weights_do_not_move_the_fit(monkeypatch):
    # the float32 weights only give the Newton directions between factorisations; the modes,
    # log det and gradient are float64, so the optimum is that of exact Newton steps
    y, _ = gf.simulate_grid(15, 120, rng=11, intercept=-0.4)
    chord = gf.glmer_grid(y, compiled=False)
    monkeypatch.setattr(gf._Crossed, "chord", False)
    newton = gf.glmer_grid(y, compiled=False)
    assert _factorizations(newton) > _factorizations(chord)
    np.testing.assert_allclose(chord.theta, newton.theta, rtol=1e-8)
    assert chord.loglik == pytest.approx(newton.loglik, abs=1e-9)
    assert _se(chord)[0] == pytest.approx(_se(newton)[0], rel=1e-6)


def test_bad_input_is_named():
    y = np.zeros((3, 4), dtype=np.int8)
    with pytest.raises(ArgumentError, match="formula"):
        gf.glmer_grid(y, "correct ~ x + (1|model)")
    y[1, 2] = 3
    with pytest.raises(DataError, match="model row 1, item column 2"):
        gf.glmer_grid(y)
    with pytest.raises(DataError, match="shape"):
        gf.glmer_grid(np.zeros(5, dtype=np.int8))
    with pytest.raises(ArgumentError, match="names"):
        gf.glmer_grid(np.zeros((3, 4), dtype=np.int8), models=["a", "b"])


@pytest.mark.slow
def test_compiled_passes_match_numpy():
    y, _ = gf.simulate_grid(25, 300, rng=2, intercept=0.3)
    for form in (CROSSED, FIXED):
        a = gf.glmer_grid(y, form, compiled=False)
        b = gf.glmer_grid(y, form, compiled=True)
        assert a.loglik == pytest.approx(b.loglik, abs=1e-8)
        np.testing.assert_allclose(a.fixef, b.fixef, atol=1e-8)
        np.testing.assert_allclose(a.theta, b.theta, rtol=1e-8)


@pytest.mark.slow
def test_fixed_model_effects_match_lme4():
    # lme4 1.1-31, nAGQ = 1 with tolPwrss = 1e-12 (the exact Laplace deviance), bobyqa over the
    # 21 parameters (tests/reference/grid_fixed_reference.R)
    ref = json.loads((REF / "grid_fixed_reference_20.json").read_text())
    lme4 = {f["nAGQ"]: f for f in ref["fits"]}[1]
    y, _ = gf.simulate_grid(20, 2000, rng=20261205, intercept=0.5)
    fit = gf.glmer_grid(y, FIXED)
    assert fit.loglik >= lme4["loglik"] - 1e-6  # never below lme4's optimum
    # observed: log-likelihood +7.6e-6 (bobyqa stops a little short), theta 2.8e-7 relative,
    # betas 4.6e-6, standard errors 4.4e-7 relative
    assert fit.loglik == pytest.approx(lme4["loglik"], abs=1e-4)
    assert float(fit.theta["item.(Intercept)"]) == pytest.approx(lme4["theta"], rel=1e-5)
    np.testing.assert_allclose(fit.fixef, lme4["fixef"], atol=2e-5)
    np.testing.assert_allclose(_se(fit), lme4["se_rx"], rtol=1e-5)
    # nAGQ = 0 (beta within PIRLS) is another objective: 5 log-likelihood units lower here
    assert fit.loglik - {f["nAGQ"]: f for f in ref["fits"]}[0]["loglik"] > 4.0


@pytest.mark.slow
def test_variance_components_near_truth_at_a_million_rows():
    # 200 models x 5,000 items: the SDs within 3% of the simulated effects' sample SDs
    y, truth = gf.simulate_grid(200, 5000, rng=2026, intercept=0.5)
    fit = gf.glmer_grid(y, CROSSED)
    assert float(fit.theta["model.(Intercept)"]) == pytest.approx(truth["model_sd"], rel=0.03)
    assert float(fit.theta["item.(Intercept)"]) == pytest.approx(truth["item_sd"], rel=0.03)
    # the intercept within 2.5 standard errors of the simulated abilities' mean
    mean = truth["intercept"] + truth["ability"].mean()
    assert abs(fit.fixef.iloc[0] - mean) < 2.5 * _se(fit)[0]
    fixed = gf.glmer_grid(y, FIXED)
    assert float(fixed.theta["item.(Intercept)"]) == pytest.approx(truth["item_sd"], rel=0.03)
    rmse = np.sqrt(np.mean((fixed.fixef - truth["intercept"] - truth["ability"]) ** 2))
    assert rmse < 1.5 * _se(fixed).mean()


def test_a_model_at_0_or_100_percent_is_named_for_fixed_model_effects():
    y, _ = gf.simulate_grid(6, 40, rng=1)
    y[2, :] = 1
    y[4, :] = 0
    with pytest.raises(DataError, match=r"model\(s\) m2 \(100%\), m4 \(0%\).*complete separation"):
        gf.glmer_grid(y, "correct ~ 0 + model + (1|item)", models=[f"m{i}" for i in range(6)])
    # with model random effects the fit is defined (shrunk towards the mean) and runs
    fit = gf.glmer_grid(y, "correct ~ 1 + (1|model) + (1|item)")
    assert np.isfinite(fit.loglik)
