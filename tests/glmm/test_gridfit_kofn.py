"""k-of-n grids on the low-memory grid path (glmer_grid(y, trials=n)): against
glmer("cbind(k, n - k) ~ ...") on the same cells, lme4, the 0/1 path, and the input checks."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import special

import evalmix
from evalmix.core.errors import ArgumentError, DataError
from evalmix.glmm import gridfit as gf

REF = Path(__file__).resolve().parents[1] / "reference"
CROSSED = "correct ~ 1 + (1|model) + (1|item)"
FIXED = "correct ~ 0 + model + (1|item)"


def _grid(seed: int = 1, ns: int = 15, nb: int = 80) -> tuple[np.ndarray, np.ndarray]:
    """k of n in 1..5 runs a cell, about one cell in ten empty (n = 0)."""
    g = np.random.default_rng(seed)
    n = g.integers(1, 6, size=(ns, nb))
    n[g.random(n.shape) < 0.1] = 0
    k, _ = gf.simulate_grid(ns, nb, trials=n, rng=g, intercept=0.3)
    return k, n


def _frame(k: np.ndarray, n: np.ndarray) -> pd.DataFrame:
    """The non-empty cells as rows (glmer refuses rows with no trials)."""
    ns, nb = k.shape
    d = pd.DataFrame({"model": pd.Categorical(np.repeat([f"m{s:02d}" for s in range(ns)], nb)),
                      "item": pd.Categorical(np.tile([f"i{b:03d}" for b in range(nb)], ns)),
                      "k": k.ravel().astype(int), "n": n.ravel().astype(int)})
    return d[d["n"] > 0]


def test_crossed_kofn_matches_glmer_cbind():
    k, n = _grid()
    assert k.dtype == np.uint8 and (n == 0).sum() > 50
    ref = evalmix.glmer("cbind(k, n - k) ~ 1 + (1|model) + (1|item)", _frame(k, n),
                        vcov_method="hessian_exact")
    fit = gf.glmer_grid(k, CROSSED, trials=n)
    # observed: log-likelihood 2.7e-8, theta 1.6e-8 relative, beta 2.7e-8, SE 2.9e-7 relative
    assert fit.loglik == pytest.approx(ref.loglik, abs=1e-6)  # binomial constant included
    assert fit.theta["model.(Intercept)"] == pytest.approx(ref.theta["model.(Intercept)"], rel=1e-6)
    assert fit.theta["item.(Intercept)"] == pytest.approx(ref.theta["item.(Intercept)"], rel=1e-6)
    assert fit.fixef.iloc[0] == pytest.approx(ref.fixef.iloc[0], abs=1e-6)
    # both sides take the Hessian by finite differences (as in test_crossed_scale.py)
    assert np.sqrt(fit.vcov.iloc[0, 0]) == pytest.approx(np.sqrt(ref.vcov.iloc[0, 0]), rel=1e-5)
    assert fit.nobs == int((n > 0).sum()) == ref.nobs  # the non-empty cells, as lme4 counts them
    rows = gf.glmer_grid(k, CROSSED, trials=n, as_rows=True)  # cells that count 0/1 rows
    assert rows.nobs == int(n.sum())
    assert rows.loglik - fit.loglik == pytest.approx(-float(np.sum(special.gammaln(n + 1.0) - special.gammaln(k + 1.0) - special.gammaln(n - k + 1.0))), abs=1e-6)
    assert fit.converged


def test_fixed_kofn_matches_glmer_cbind():
    k, n = _grid()
    ref = evalmix.glmer("cbind(k, n - k) ~ 0 + model + (1|item)", _frame(k, n), vcov_method="rx")
    fit = gf.glmer_grid(k, FIXED, trials=n, models=[f"m{s:02d}" for s in range(15)])
    # observed: log-likelihood 4.6e-8, theta 3.3e-8 relative, betas 2.7e-7, SEs 3.8e-8 relative
    assert fit.loglik == pytest.approx(ref.loglik, abs=1e-6)
    assert fit.theta["item.(Intercept)"] == pytest.approx(float(ref.theta.iloc[0]), rel=1e-6)
    np.testing.assert_allclose(fit.fixef.to_numpy(), ref.fixef.to_numpy(), atol=1e-6)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.vcov)), np.sqrt(np.diag(ref.vcov)), rtol=1e-6)


def test_kofn_matches_lme4():
    # lme4 1.1-31, exact Laplace deviance (tolPwrss = 1e-12), bobyqa with rhoend = 1e-10
    # (tests/reference/grid_kofn_reference.R); 20 x 150 cells, 300 of them empty
    ref = json.loads((REF / "grid_kofn_reference.json").read_text())
    d = pd.read_csv(REF / "grid_kofn.csv")
    k = d.pivot(index="model", columns="item", values="k").to_numpy()
    n = d.pivot(index="model", columns="item", values="n").to_numpy()
    lme4 = {f["formula"].split("~ ")[1]: f for f in ref["fits"]}
    fit = gf.glmer_grid(k, CROSSED, trials=n)
    r = lme4["1 + (1|model) + (1|item)"]
    # observed: log-likelihood +3.3e-8 (lme4 stops a little short), theta 1.0e-6 relative,
    # intercept 2.3e-6; the SE 1.9e-4 relative (lme4's Hessian is its own finite-difference one)
    assert fit.loglik == pytest.approx(r["loglik"], abs=1e-6)
    assert fit.theta["item.(Intercept)"] == pytest.approx(r["theta"][0], rel=1e-5)
    assert fit.theta["model.(Intercept)"] == pytest.approx(r["theta"][1], rel=1e-5)
    assert fit.fixef.iloc[0] == pytest.approx(r["fixef"], abs=1e-5)
    assert np.sqrt(fit.vcov.iloc[0, 0]) == pytest.approx(r["se"], rel=1e-3)
    fit = gf.glmer_grid(k, FIXED, trials=n)
    r = lme4["0 + model + (1|item)"]
    # observed: log-likelihood +2.6e-8, theta 6e-8 relative, betas 1.1e-6, SEs (RX) 8e-8 relative
    assert fit.loglik == pytest.approx(r["loglik"], abs=1e-6)
    assert fit.theta["item.(Intercept)"] == pytest.approx(r["theta"], rel=1e-6)
    np.testing.assert_allclose(fit.fixef.to_numpy(), r["fixef"], atol=5e-6)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.vcov)), r["se"], rtol=1e-6)


@pytest.mark.slow  # compiles the kernels for the counts' dtypes on a cold numba cache
def test_compiled_and_numpy_passes_agree_on_kofn():
    k, n = _grid(seed=3)
    for form in (CROSSED, FIXED):
        a = gf.glmer_grid(k, form, trials=n, compiled=False)
        b = gf.glmer_grid(k, form, trials=n, compiled=True)
        assert a.loglik == pytest.approx(b.loglik, abs=1e-8)
        np.testing.assert_allclose(a.fixef.to_numpy(), b.fixef.to_numpy(), atol=1e-8)
        np.testing.assert_allclose(a.theta, b.theta, rtol=1e-8)
    # one pass at a fixed point: the deviance and the sums per model and item, to rounding
    outs = []
    for compiled in (False, True):
        grid = gf._Grid(k, compiled, n)
        g = np.random.default_rng(0)
        outs.append(grid.sweep(g.normal(size=15), g.normal(size=80), schur=(0.8, 1.3)))
    for key in ("dev", "rr", "rc", "wr", "wc", "S"):
        np.testing.assert_allclose(outs[0][key], outs[1][key], rtol=1e-12, atol=1e-12)
    # every branch of a compiled cell: n = 1 and 2..64 (running products, logged before they
    # overflow: rows of 3,000 cells), n > 64 (n log1p), n = 0; and a constant n
    g = np.random.default_rng(9)
    for n in (g.choice(np.array([0, 1, 1, 2, 5, 64, 65, 200], dtype=np.uint8), size=(6, 3000)),
              np.full((6, 3000), 60, dtype=np.uint8)):
        k = g.binomial(n, 0.4).astype(np.uint8)
        a, c = g.normal(size=6), 3 * g.normal(size=3000)
        for kind in ("sweep", "fixed"):
            res = []
            for compiled in (False, True):
                grid = gf._Grid(k, compiled, n if n.min() == 0 else 60)
                if kind == "sweep":
                    out = grid.sweep(a, c)
                    res.append([out["dev"], out["rr"], out["wc"]])
                else:
                    res.append(gf._Fixed(grid).evaluate(0.9, a)[:2])
            for x, y in zip(*res):
                np.testing.assert_allclose(x, y, rtol=1e-12, atol=1e-9)


def test_one_trial_a_cell_is_the_01_path_and_a_scalar_is_a_constant_array():
    y, _ = gf.simulate_grid(12, 40, rng=5, intercept=0.2)
    a = gf.glmer_grid(y)
    b = gf.glmer_grid(y, trials=np.ones_like(y))
    assert b.loglik == pytest.approx(a.loglik, abs=1e-9)
    np.testing.assert_allclose(b.theta, a.theta, rtol=1e-8)
    k, truth = gf.simulate_grid(12, 40, trials=3, rng=6, intercept=0.2)
    assert k.dtype == np.uint8 and k.max() <= 3
    c = gf.glmer_grid(k, trials=3)
    d = gf.glmer_grid(k, trials=np.full(k.shape, 3, dtype=np.int64))
    assert c.loglik == pytest.approx(d.loglik, abs=1e-9)
    np.testing.assert_allclose(c.theta, d.theta, rtol=1e-8)
    assert c.nobs == k.size  # the cells, as lme4 counts the rows of a cbind() fit
    assert gf.glmer_grid(k, trials=3, as_rows=True).nobs == 3 * k.size
    # the binomial constant: the same fit as the long 0/1 runs, the log-likelihood shifted by
    # sum log C(n, k) (the runs' order within a cell is not seen)
    const = float((special.gammaln(4.0) - special.gammaln(k + 1.0) - special.gammaln(4.0 - k)).sum())
    assert c.deviance == pytest.approx(-2 * c.loglik, abs=1e-9)
    assert const > 0
    grid = gf._Grid(np.ascontiguousarray(k, dtype=np.uint8), False, 3)
    assert grid.dconst == pytest.approx(-2 * const, rel=1e-12)


def test_more_models_than_items_and_wide_counts():
    # the Schur complement onto the items, the trials transposed with the answers
    k, n = _grid(seed=4, ns=30, nb=12)
    a = gf.glmer_grid(k, trials=n, compiled=False)
    b = gf.glmer_grid(np.ascontiguousarray(k.T), trials=np.ascontiguousarray(n.T), compiled=False)
    assert a.theta["model.(Intercept)"] == pytest.approx(b.theta["item.(Intercept)"], rel=1e-9)
    assert a.loglik == pytest.approx(b.loglik, abs=1e-8)
    # more than 255 trials a cell: uint16 counts, n log1p(e) per cell
    g = np.random.default_rng(8)
    n = g.integers(200, 400, size=(6, 10))
    k, _ = gf.simulate_grid(6, 10, trials=n, rng=g, item_sd=0.8, model_sd=0.5)
    assert k.dtype == np.uint16
    yk, nk = gf._counts(k, n)
    assert yk.dtype == nk.dtype == np.uint16
    fit = gf.glmer_grid(k, FIXED, trials=n)
    ref = evalmix.glmer("cbind(k, n - k) ~ 0 + model + (1|item)", _frame(k, n), vcov_method="rx")
    assert fit.loglik == pytest.approx(ref.loglik, abs=1e-6)
    np.testing.assert_allclose(fit.fixef.to_numpy(), ref.fixef.to_numpy(), atol=1e-6)


def test_kofn_input_errors_are_named():
    k, n = _grid(ns=4, nb=6)
    with pytest.raises(DataError, match=r"shape \(4, 6\); got shape \(4, 5\)"):
        gf.glmer_grid(k, trials=n[:, :5])
    bad = n.copy()
    bad[2, 3] = 1
    kk = k.copy()
    kk[2, 3] = 2
    with pytest.raises(DataError, match="model row 2, item column 3 holds k = 2 of n = 1"):
        gf.glmer_grid(kk, trials=bad)
    neg = n.astype(np.int64)
    neg[1, 4] = -1
    with pytest.raises(DataError, match="model row 1, item column 4"):
        gf.glmer_grid(k, trials=neg)
    with pytest.raises(DataError, match="k = 3 of n = 2"):
        gf.glmer_grid(np.full((3, 3), 3), trials=2)
    with pytest.raises(DataError, match="trials must hold integer counts; got dtype float64"):
        gf.glmer_grid(k, trials=n.astype(float))
    with pytest.raises(DataError, match="y must hold integer counts"):
        gf.glmer_grid(k.astype(float), trials=n)
    for t in (0, 2.5, True):
        with pytest.raises(ArgumentError, match="trials must be"):
            gf.glmer_grid(k, trials=t)
    empty = n.copy()
    empty[1, :] = 0
    kk = np.minimum(k, empty)
    with pytest.raises(DataError, match="model\\(s\\) m1 have no trials at all"):
        gf.glmer_grid(kk, trials=empty, models=[f"m{s}" for s in range(4)])
    empty = n.copy()
    empty[:, 5] = 0
    with pytest.raises(DataError, match="item\\(s\\) 5 have no trials at all"):
        gf.glmer_grid(np.minimum(k, empty), trials=empty)
    # complete separation counts successes against trials, empty cells left out
    sep = k.copy()
    sep[3] = n[3]
    with pytest.raises(DataError, match=r"model\(s\) 3 \(100%\).*complete separation"):
        gf.glmer_grid(sep, FIXED, trials=n)


@pytest.mark.slow
def test_kofn_variance_components_near_truth():
    # 100 models x 2,000 items, 3 runs a cell, a tenth of the cells empty: SDs within 5% of the
    # simulated effects' sample SDs (the item SD from 2,000 items, the model SD from 100 models)
    g = np.random.default_rng(2026)
    n = np.full((100, 2000), 3, dtype=np.uint8)
    n[g.random(n.shape) < 0.1] = 0
    k, truth = gf.simulate_grid(100, 2000, trials=n, rng=g, intercept=0.5)
    fit = gf.glmer_grid(k, CROSSED, trials=n)
    assert fit.theta["model.(Intercept)"] == pytest.approx(truth["model_sd"], rel=0.05)
    assert fit.theta["item.(Intercept)"] == pytest.approx(truth["item_sd"], rel=0.05)
    mean = truth["intercept"] + truth["ability"].mean()
    assert abs(fit.fixef.iloc[0] - mean) < 2.5 * np.sqrt(fit.vcov.iloc[0, 0])
    numpy = gf.glmer_grid(k, CROSSED, trials=n, compiled=False)
    assert numpy.loglik == pytest.approx(fit.loglik, abs=1e-7)


@pytest.mark.slow
def test_warm_modes_after_a_far_theta_give_the_fresh_deviance():
    # 100 x 10,000 cells of 100 runs (the push-down benchmark's leaderboard): weights up to 25 a
    # cell make a chord step (the factorisation of a theta far from this one) overshoot; the
    # iteration then returned after 300 steps with that other theta's log-determinant, 5.7 off
    # (the fit stopped at a wrong theta, max|gradient| 1.9e10). Now it refactors where the chord
    # step started, and a deviance never carries another point's log-determinant.
    rng = np.random.default_rng(1)
    ability, easiness = rng.normal(0.0, 1.0, 100), rng.normal(0.5, 1.5, 10_000)
    k = rng.binomial(100, special.expit(ability[:, None] + easiness[None, :])).astype(np.uint8)
    path = [(1.0, 1.0, 0.277), (1.0, 2.0, 0.278), (0.998, 1.85, 0.2788), (0.9775, 1.0205, 0.2887)]
    warm = gf._Crossed(gf._Grid(k, True, 100))
    for point in path:
        f = warm.deviance(*point)
        assert warm.mode_converged
    fresh = gf._Crossed(gf._Grid(k, True, 100)).deviance(*path[-1])
    assert f == pytest.approx(fresh, abs=1e-6)
