"""Two crossed random intercepts on a grid (``evalmix.glmm.crossed.CrossedGridSolver``).

References: lme4 1.1-31 fits of the same rows (tests/reference/crossed_grid_reference.R -> .json;
data from make_crossed_grid_data.py), the general sparse Schur solver (the path these designs took
before) and the dense Cholesky of H. Tolerances: log-likelihood at least lme4's - 1e-3, fixed
effects within 2e-3, standard errors within 1% relative, variance parameters within 2%; against
the other solvers, the fit to 1e-6 and the deviance to 1e-12 relative.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalmix import glmer
from evalmix.model import RandomTerm
from evalmix.glmm import GlmerControl
from evalmix.glmm.crossed import CrossedGridSolver
from evalmix.model import build_design
from evalmix.glmm.deviance import DenseSolver, LaplaceDeviance, SchurSolver, make_solver

REF = Path(__file__).resolve().parents[1] / "reference"
FITS = {f["id"]: f for f in json.loads((REF / "crossed_grid_reference.json").read_text())["fits"]}
LAYOUT = {"grid_rasch": "sb", "grid_format": "sb", "grid_incomplete": "cells", "grid_counts": "bs"}


GRID = GlmerControl(grid_min_cells=1)  # the reference designs are small: let the grid take them
NO_GRID = GlmerControl(grid_min_cells=10**12)


def _fit(case: dict, control: GlmerControl = GRID):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return glmer(case["formula"], pd.read_csv(REF / case["data"]), control=control)


@pytest.mark.parametrize("case_id", sorted(FITS))
def test_grid_solver_matches_lme4(case_id):
    ref = FITS[case_id]
    assert not ref["messages"]  # lme4 converged cleanly: the tight tolerances apply
    design = build_design(ref["formula"], pd.read_csv(REF / ref["data"]))
    solver = make_solver(design.terms, GRID)
    assert isinstance(solver, CrossedGridSolver) and solver.layout == LAYOUT[case_id]
    fit = _fit(ref)
    assert fit.nobs == ref["nobs"]
    assert fit.loglik >= ref["loglik"] - 1e-3
    assert fit.loglik == pytest.approx(ref["loglik"], abs=1e-2)
    np.testing.assert_allclose(fit.fixef.to_numpy(), ref["fixef"], atol=2e-3)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.vcov.to_numpy())), ref["se"], rtol=0.01)
    np.testing.assert_allclose(fit.theta.to_numpy(), ref["theta"], rtol=0.02)
    re = fit.ranef()
    for row in ref["ranef"]:
        got = re[(re.group == row["group"]) & (re.level == row["level"])].iloc[0]
        assert got["mode"] == pytest.approx(row["mode"], abs=5e-3)
        assert got["sd"] == pytest.approx(row["sd"], rel=0.01)


@pytest.mark.parametrize("case_id", sorted(FITS))
def test_grid_solver_gives_the_sparse_schur_fit(case_id):
    """The same optimum as the path these designs took before (sparse Schur solver), to 1e-6."""
    ref = FITS[case_id]
    grid = _fit(ref)
    design = build_design(ref["formula"], pd.read_csv(REF / ref["data"]))
    assert isinstance(make_solver(design.terms, NO_GRID), SchurSolver)
    old = _fit(ref, NO_GRID)
    assert grid.loglik == pytest.approx(old.loglik, abs=1e-6)
    np.testing.assert_allclose(grid.theta.to_numpy(), old.theta.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(grid.fixef.to_numpy(), old.fixef.to_numpy(), atol=1e-6)
    np.testing.assert_allclose(grid.vcov.to_numpy(), old.vcov.to_numpy(), rtol=1e-6, atol=1e-10)
    a, b = grid.ranef(), old.ranef()
    np.testing.assert_allclose(a["mode"], b["mode"], atol=1e-6)
    np.testing.assert_allclose(a["sd"], b["sd"], rtol=1e-6)


def _terms(a: np.ndarray, b: np.ndarray, na: int, nb: int) -> list[RandomTerm]:
    one = np.ones((a.size, 1))
    return [RandomTerm("a", "1", ["(Intercept)"], [f"a{j}" for j in range(na)], a, one, ("a",)),
            RandomTerm("b", "1", ["(Intercept)"], [f"b{j}" for j in range(nb)], b, one, ("b",))]


@settings(max_examples=40, deadline=None)
@given(na=st.integers(2, 9), nb=st.integers(2, 9), order=st.sampled_from(["sb", "bs", "shuffled"]),
       drop=st.floats(0.0, 0.5), seed=st.integers(0, 10**6))
def test_grid_algebra_equals_the_dense_cholesky(na, nb, order, drop, seed):
    """For any grid (complete or not, any row order, repeated cells) log det H, solves, leverages,
    conditional variances and the exact theta gradient equal those of the dense factor of H."""
    rng = np.random.default_rng(seed)
    a, b = (x.ravel() for x in np.meshgrid(np.arange(na), np.arange(nb), indexing="ij"))
    if order == "bs":
        a, b = (x.ravel() for x in np.meshgrid(np.arange(na), np.arange(nb), indexing="xy"))
    if order == "shuffled":
        keep = rng.random(a.size) >= drop
        keep[:2] = True
        a, b = a[keep], b[keep]
        extra = rng.integers(0, a.size, 3)  # some cells twice
        a, b = np.concatenate([a, a[extra]]), np.concatenate([b, b[extra]])
        p = rng.permutation(a.size)
        a, b = a[p], b[p]
    terms = _terms(a, b, na, nb)  # na < nb too: the first term is then the smaller factor
    grid, dense = CrossedGridSolver(terms), DenseSolver(terms)
    if order != "shuffled":
        assert grid.layout in ("sb", "bs")
    theta = rng.uniform(0.05, 2.0, 2)
    w = rng.uniform(0.01, 0.25, a.size)
    for s in (grid, dense):
        s.set_theta(theta)
    assert grid.factor(w) == pytest.approx(dense.factor(w), rel=1e-12, abs=1e-12)
    r = rng.normal(size=grid.q)
    np.testing.assert_allclose(grid.solve(r), dense.solve(r), rtol=1e-9, atol=1e-12)
    R = rng.normal(size=(grid.q, 2))
    np.testing.assert_allclose(grid.solve(R), dense.solve(R), rtol=1e-9, atol=1e-12)
    u = rng.normal(size=grid.q)
    np.testing.assert_allclose(grid.zl(u), dense.zl(u), rtol=1e-12, atol=1e-14)
    y = rng.normal(size=a.size)
    np.testing.assert_allclose(grid.zlt(y), dense.zlt(y), rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grid.leverage(), dense.leverage(), rtol=1e-9, atol=1e-14)
    np.testing.assert_allclose(grid.cond_var(), np.diag(dense.hinv()), rtol=1e-9)
    rho, res, v = (rng.normal(size=n) for n in (a.size, a.size, grid.q))
    np.testing.assert_allclose(grid.grad_theta(rho, res, u, v), dense.grad_theta(rho, res, u, v),
                               rtol=1e-9, atol=1e-10)


def test_grid_deviance_and_gradients_equal_the_dense_solver():
    ref = FITS["grid_incomplete"]
    design = build_design(ref["formula"], pd.read_csv(REF / ref["data"]))
    fast = LaplaceDeviance(design.X, design.k, design.m, design.terms, control=GRID)
    dense = LaplaceDeviance(design.X, design.k, design.m, design.terms, DenseSolver(design.terms))
    assert isinstance(fast.solver, CrossedGridSolver)
    theta, beta = np.array([1.3, 0.7]), np.array([0.2, -0.4])
    e1, e2 = fast.pirls(theta, beta), dense.pirls(theta, beta)
    assert e1.dev == pytest.approx(e2.dev, rel=1e-12)
    g1, g2 = fast.grads(e1), dense.grads(e2)
    np.testing.assert_allclose(g1[0], g2[0], rtol=1e-8)
    np.testing.assert_allclose(g1[1], g2[1], rtol=1e-8, atol=1e-10)


def test_grid_solver_is_chosen_only_for_dense_crossings():
    rng = np.random.default_rng(0)
    na, nb = 400, 300
    a, b = (x.ravel() for x in np.meshgrid(np.arange(na), np.arange(nb), indexing="ij"))
    assert CrossedGridSolver.applies(_terms(a, b, na, nb))
    keep = rng.random(a.size) < 0.2  # 20% of the cells observed: the sparse Schur path
    assert not CrossedGridSolver.applies(_terms(a[keep], b[keep], na, nb))
    a, b = (x.ravel() for x in np.meshgrid(np.arange(20), np.arange(10), indexing="ij"))
    assert not CrossedGridSolver.applies(_terms(a, b, 20, 10))  # small: the sparse path is as fast


def test_compiled_row_passes_give_the_numpy_fit():
    """The compiled (numba) deviance, score and weight passes of large logit fits, forced on a
    small design, give the NumPy fit (to rounding); with numba absent both runs are NumPy."""
    from evalmix.glmm import _logit_rows

    ref = FITS["grid_counts"]
    rows = GlmerControl(grid_min_cells=1, compiled_rows_min=1)
    design = build_design(ref["formula"], pd.read_csv(REF / ref["data"]))
    ld = LaplaceDeviance(design.X, design.k, design.m, design.terms, control=rows)
    assert ld.rows.compiled == _logit_rows.available()
    eta = np.linspace(-40.0, 40.0, design.k.size)
    dev, mu = ld.kernel_mu(eta)
    plain = LaplaceDeviance(design.X, design.k, design.m, design.terms, control=GRID)
    assert not plain.rows.compiled
    dev0, mu0 = plain.kernel_mu(eta)
    assert dev == pytest.approx(dev0, rel=1e-13)
    np.testing.assert_allclose(mu, mu0, rtol=1e-14, atol=0)
    for a, b in zip(ld.working(eta, mu), plain.working(eta, mu0)):  # fused multiply-adds
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-15)
    fast, slow = _fit(ref, rows), _fit(ref)
    assert fast.loglik == pytest.approx(slow.loglik, abs=1e-8)
    np.testing.assert_allclose(fast.fixef.to_numpy(), slow.fixef.to_numpy(), atol=1e-8)
    np.testing.assert_allclose(fast.vcov.to_numpy(), slow.vcov.to_numpy(), rtol=1e-6)


def _rasch_grid(models: int, items: int, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.normal(0.0, 0.9, models)
    b = rng.normal(0.3, 1.4, items)
    eta = a[:, None] + b[None, :]
    y = (rng.random(eta.shape) < 1.0 / (1.0 + np.exp(-eta))).astype(int).ravel()
    mi, ii = (x.ravel() for x in np.meshgrid(np.arange(models), np.arange(items), indexing="ij"))
    return pd.DataFrame({"model": [f"m{j:03d}" for j in mi], "item": [f"i{j:04d}" for j in ii],
                         "correct": y})


@pytest.mark.slow  # a simulation or a large fit: the second test step
@pytest.mark.parametrize("order", ["sb", "bs", "cells"])
def test_buffered_pirls_gives_the_numpy_path(order, monkeypatch):
    """PIRLS (and lme4's second-stage PIRLS) with the compiled passes into per-call buffers
    (in-place eta/mu/w, trial deviances without a trial eta) and the blocked syrk give the NumPy path's modes, deviance and fit on
    a 60 x 1,500 grid (90,000 rows; rows in either grid order or shuffled): each evaluation to
    1e-12 relative; the fitted log-likelihood to 1e-10 relative, beta to 1e-8."""
    from evalmix.glmm import _logit_rows

    if not _logit_rows.available():
        pytest.skip("numba is not installed: there is no compiled path to compare")
    from evalmix.glmm import crossed

    monkeypatch.setattr(crossed, "_SYRK_BLOCK", 60 * 400)  # the Schur complement in 4 blocks
    df = _rasch_grid(60, 1500, seed=3)
    if order == "bs":
        df = df.sort_values(["item", "model"], kind="stable").reset_index(drop=True)
    elif order == "cells":
        df = df.sample(frac=1.0, random_state=4).reset_index(drop=True)
    fast_c = GlmerControl(compiled_rows_min=1)
    slow_c = GlmerControl(compiled_rows_min=10**12)
    design = build_design("correct ~ 1 + (1|model) + (1|item)", df)
    fast = LaplaceDeviance(design.X, design.k, design.m, design.terms, control=fast_c)
    slow = LaplaceDeviance(design.X, design.k, design.m, design.terms, control=slow_c)
    assert fast.rows.compiled and not slow.rows.compiled
    assert isinstance(fast.solver, CrossedGridSolver) and fast.solver.layout == order
    for theta, beta in [(np.array([0.9, 1.4]), np.array([0.3])),
                        (np.array([3.0, 0.05]), np.array([-2.0]))]:
        a, b = fast.pirls(theta, beta), slow.pirls(theta, beta)
        assert a.iterations == b.iterations
        assert a.dev == pytest.approx(b.dev, rel=1e-12)
        for x, y in [(a.u, b.u), (a.eta, b.eta), (a.mu, b.mu), (a.w, b.w)]:
            np.testing.assert_allclose(x, y, rtol=1e-9, atol=1e-12)
        start = b.eta * 0.9 + 0.1  # lme4's second-stage deviance from a nearby start
        la, lb = fast.lme4_pirls(theta, beta, start), slow.lme4_pirls(theta, beta, start)
        assert la[1] == lb[1] and la[0] == pytest.approx(lb[0], rel=1e-12)
        ga, gb = fast.grads(a), slow.grads(b)
        np.testing.assert_allclose(ga[0], gb[0], rtol=1e-8)
        np.testing.assert_allclose(ga[1], gb[1], rtol=1e-8, atol=1e-9)
    f1 = glmer("correct ~ 1 + (1|model) + (1|item)", df, control=fast_c)
    f0 = glmer("correct ~ 1 + (1|model) + (1|item)", df, control=slow_c)
    # the optimiser stops where rounding moves it on a flat optimum: the two summation orders of
    # the deviance (parallel reduction against NumPy's pairwise sum) and the blocked syrk move
    # theta by up to 7e-6 relative and the log-likelihood by 4e-6 (one syrk block: the compiled
    # path before the buffers stopped at the same theta, to the bit)
    assert f1.loglik == pytest.approx(f0.loglik, rel=1e-10)  # 5e-6 at this size
    np.testing.assert_allclose(f1.theta.to_numpy(), f0.theta.to_numpy(), rtol=2e-5)
    np.testing.assert_allclose(f1.fixef.to_numpy(), f0.fixef.to_numpy(), atol=1e-8)
    np.testing.assert_allclose(f1.vcov.to_numpy(), f0.vcov.to_numpy(), rtol=5e-5)
