"""glmer_grid's GlmerResult against the general path's on the same rows, and glmer's routing of
large complete grids to it (GlmerControl.grid_rows)."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import DataError
from evalmix.glmm import GlmerControl
from evalmix.glmm import gridfit as gf

CROSSED = "correct ~ 1 + (1|model) + (1|item)"
FIXED = "correct ~ 0 + model + (1|item)"
NS, NB = 12, 60
MODELS = [f"m{s:03d}" for s in range(NS)]
ITEMS = [f"i{b:04d}" for b in range(NB)]
ON = GlmerControl(grid_rows=100)


@pytest.fixture(scope="module")
def grid() -> tuple[np.ndarray, pd.DataFrame]:
    y, _ = gf.simulate_grid(NS, NB, rng=1, intercept=0.3)
    d = pd.DataFrame({"model": np.repeat(MODELS, NB), "item": np.tile(ITEMS, NS), "correct": y.ravel()})
    return y, d.sample(frac=1.0, random_state=3).reset_index(drop=True)  # row order is no matter


def _same(fit, ref, vcov_rtol: float = 1e-6) -> None:
    assert list(fit.fixef.index) == list(ref.fixef.index)
    np.testing.assert_allclose(fit.fixef, ref.fixef, atol=1e-6)
    np.testing.assert_allclose(fit.vcov, ref.vcov, rtol=vcov_rtol, atol=1e-9)
    assert list(fit.theta.index) == list(ref.theta.index)
    np.testing.assert_allclose(fit.theta, ref.theta, rtol=1e-6)
    pd.testing.assert_frame_equal(fit.varcorr, ref.varcorr, rtol=1e-6)
    for attr in ("loglik", "aic", "bic", "deviance"):
        assert getattr(fit, attr) == pytest.approx(getattr(ref, attr), abs=1e-6)
    assert (fit.nobs, fit.df, fit.ngroups) == (ref.nobs, ref.df, ref.ngroups)
    a, b = fit.ranef(), ref.ranef()
    assert a[["group", "term", "level"]].astype(str).equals(b[["group", "term", "level"]].astype(str))
    np.testing.assert_allclose(a["mode"], b["mode"], atol=1e-6)
    np.testing.assert_allclose(a["sd"], b["sd"], rtol=1e-6)  # condVar
    np.testing.assert_allclose(fit._model.residual_quantiles, ref._model.residual_quantiles, atol=1e-6)
    # lme4's printout up to the optimiser's line (the optimisers differ)
    assert str(fit.summary()).split("Fixed effects:")[0] == str(ref.summary()).split("Fixed effects:")[0]
    assert fit.lme4_text() == ref.lme4_text() or fit.messages
    assert not fit.has_data and fit.vcov_method == ref.vcov_method


# the Hessians are central differences of gradients on either side (observed 1.1e-5 relative
# apart in the variance); RX is a closed form (observed 1e-7)
@pytest.mark.parametrize("formula, method, rtol", [(CROSSED, "hessian_exact", 5e-5), (CROSSED, "rx", 1e-6),
                                                   (FIXED, "rx", 1e-6)])
def test_grid_result_equals_the_general_path(grid, formula, method, rtol):
    y, d = grid
    ref = evalmix.glmer(formula, d, vcov_method=method)
    fit = gf.glmer_grid(y, formula, models=MODELS, items=ITEMS, vcov_method=method)
    _same(fit, ref, vcov_rtol=rtol)
    assert evalmix.anova(fit).to_frame().equals(evalmix.anova(ref).to_frame()) or np.allclose(
        evalmix.anova(fit).to_frame()["statistic"], evalmix.anova(ref).to_frame()["statistic"], rtol=1e-5)
    new = d.head(7)
    np.testing.assert_allclose(fit.predict(new, type="response"), ref.predict(new, type="response"), atol=1e-6)
    a, b = fit.confint("wald", parm="beta_").to_frame(), ref.confint("wald", parm="beta_").to_frame()
    np.testing.assert_allclose(a[["conf_low", "conf_high"]], b[["conf_low", "conf_high"]], atol=1e-5)
    out = json.loads(json.dumps(fit.to_dict(), allow_nan=False))
    assert out["vcov_method"] == method and out["nobs"] == NS * NB


@pytest.mark.slow
def test_fixed_model_effects_hessian_exact_and_emmeans(grid):
    y, d = grid
    ref = evalmix.glmer(FIXED, d, vcov_method="hessian_exact")
    fit = gf.glmer_grid(y, FIXED, models=MODELS, items=ITEMS, vcov_method="hessian_exact")
    # the rows' path's H is 2.8e-4 from the closed form here in the beta block (0.024 in theta's;
    # the closed form matches central differences of the exact gradient to 1e-7): 3e-5 apart
    _same(fit, ref, vcov_rtol=2e-4)
    a, b = evalmix.emmeans(fit, "model").to_frame(), evalmix.emmeans(ref, "model").to_frame()
    assert a["model"].astype(str).tolist() == MODELS
    np.testing.assert_allclose(a["estimate"], b["estimate"], atol=1e-6)
    np.testing.assert_allclose(a["se"], b["se"], rtol=1e-4)


def test_closed_form_hessian_of_fixed_model_effects(grid):
    # the beta block in closed form against central differences of the exact gradient
    y, _ = grid
    fit = gf.glmer_grid(y, FIXED, vcov_method="rx")
    fx = gf._Fixed(gf._Grid(y, compiled=False))
    t, beta = float(fit.theta.iloc[0]), fit.fixef.to_numpy()
    fx.evaluate(t, beta)
    ub = fx.ub.copy()
    H = gf._fixed_hessian(fx, t, beta, ub)

    def grad(z: np.ndarray) -> np.ndarray:
        _, gb, gt = fx.evaluate(float(z[0]), z[1:])
        return np.concatenate([[gt], gb])

    fd = gf._fd_hessian(grad, np.concatenate([[t], beta]))
    # observed 2.2e-6 in the beta block (entries up to 63): the differences' own error
    np.testing.assert_allclose(H, fd, atol=2e-5)
    assert np.abs(H[1:, 1:] - H[1:, 1:].T).max() == 0.0


def test_what_needs_the_rows_says_so(grid):
    y, _ = grid
    fit = gf.glmer_grid(y, CROSSED)
    with pytest.raises(DataError, match="newdata"):
        fit.predict()
    with pytest.raises(DataError, match="remove_data"):
        fit.confint("profile")
    assert fit.remove_data() is fit


def test_glmer_routes_large_complete_grids(grid):
    y, d = grid
    d = d.rename(columns={"model": "llm", "item": "q", "correct": "ok"})
    for formula in ("ok ~ 1 + (1|llm) + (1|q)", "ok ~ 0 + llm + (1|q)"):
        ref = evalmix.glmer(formula, d, vcov_method="hessian_exact")
        fit = evalmix.glmer(formula, d, control=ON)
        assert not fit.has_data and ref.has_data
        # the default 'hessian' is not replayed on the grid: said in the fit and its summary
        assert fit.vcov_method == "hessian_exact"
        assert "grid of cells" in fit.messages[-1] and "'hessian'" in fit.messages[-1]
        assert "grid_rows" in str(fit.summary())
        assert list(fit.fixef.index) == list(ref.fixef.index) and list(fit.theta.index) == list(ref.theta.index)
        np.testing.assert_allclose(fit.fixef, ref.fixef, atol=1e-6)
        np.testing.assert_allclose(fit.vcov, ref.vcov, rtol=2e-4)
        assert fit.loglik == pytest.approx(ref.loglik, abs=1e-6)
    fit = evalmix.glmer("ok ~ 1 + (1|llm) + (1|q)", d, control=ON, vcov_method="rx")
    assert fit.vcov_method == "rx" and "'hessian'" not in fit.messages[-1]


def test_glmer_keeps_the_rows_path_when_it_should(grid):
    _, d = grid
    small = evalmix.glmer(CROSSED, d)  # below the default grid_rows
    assert small.has_data and small.vcov_method == "hessian"
    assert evalmix.glmer(CROSSED, d, control=GlmerControl(grid_rows=0)).has_data  # 0: never
    assert evalmix.glmer(CROSSED, d.iloc[1:], control=ON).has_data  # an empty cell
    with pytest.raises(ValueError, match="grid_rows"):
        GlmerControl(grid_rows=-1)


@pytest.mark.slow
def test_glmer_keeps_the_rows_path_for_what_the_grid_does_not_fit(grid):
    _, d = grid
    two = pd.concat([d.assign(run=1), d.assign(run=2)], ignore_index=True)
    assert evalmix.glmer(CROSSED, two, control=ON).has_data  # two runs a cell: k-of-n cells
    assert evalmix.glmer(CROSSED, d, control=ON, nAGQ=0).has_data
    assert evalmix.glmer("correct ~ 1 + (1|model) + (1|item)", d, control=ON, link="probit").has_data
    sep = d.assign(correct=np.where(d["model"] == "m003", 1, d["correct"]))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = evalmix.glmer(FIXED, sep, control=ON)  # separation: reported by the rows' path
    assert fit.has_data and np.isinf(fit.fixef["modelm003"])


@pytest.mark.slow
def test_a_table_counted_in_its_engine_routes(grid, tmp_path):
    _, d = grid
    path = tmp_path / "runs.parquet"
    d.to_parquet(path)
    ref = evalmix.glmer(CROSSED, d, vcov_method="hessian_exact")
    fit = evalmix.glmer(CROSSED, str(path), control=ON)
    assert not fit.has_data and fit.nobs == ref.nobs
    assert fit.loglik == pytest.approx(ref.loglik, abs=1e-6)
    np.testing.assert_allclose(fit.fixef, ref.fixef, atol=1e-6)


def test_bad_names_are_named():
    y = np.zeros((3, 4), dtype=np.int8)
    y[0, 0] = y[1, 1] = y[2, 2] = 1
    with pytest.raises(DataError, match="model names repeat"):
        gf.glmer_grid(y, models=["a", "a", "b"])
    with pytest.raises(evalmix.core.errors.ArgumentError, match="vcov_method"):
        gf.glmer_grid(y, vcov_method="hessian")


@pytest.mark.slow
def test_grid_result_at_a_million_cells_routes_by_default():
    y, truth = gf.simulate_grid(200, 5000, rng=5, intercept=0.2)
    ns, nb = y.shape
    d = pd.DataFrame({"model": pd.Categorical.from_codes(np.repeat(np.arange(ns), nb), [f"m{i}" for i in range(ns)]),
                      "item": pd.Categorical.from_codes(np.tile(np.arange(nb), ns), [f"i{i}" for i in range(nb)]),
                      "correct": y.ravel()})
    fit = evalmix.glmer(CROSSED, d)
    assert not fit.has_data and fit.nobs == 10**6
    direct = gf.glmer_grid(y, CROSSED, models=[f"m{i}" for i in range(ns)], items=[f"i{i}" for i in range(nb)])
    np.testing.assert_allclose(fit.theta, direct.theta, rtol=1e-9)
    assert float(fit.theta["item.(Intercept)"]) == pytest.approx(truth["item_sd"], rel=0.05)
    q = fit._model.residual_quantiles
    assert q[0] < q[1] < q[2] < q[3] < q[4]


@pytest.mark.slow
def test_cli_fit_of_a_routed_grid_is_strict_json(grid, tmp_path, capsys):
    from evalmix.cli import main

    _, d = grid
    path = tmp_path / "runs.csv"
    d.to_csv(path, index=False)
    code = main(["fit", str(path), "--formula", FIXED, "--control", "grid_rows=100", "--emmeans", "model",
                 "--json"])
    assert code == 0
    out = capsys.readouterr().out
    doc = json.loads(out, parse_constant=lambda c: pytest.fail(f"{c} in --json output"))
    text = json.dumps(doc)
    assert "hessian_exact" in text and "grid_rows" in text


@pytest.mark.slow
@pytest.mark.parametrize("formula", [CROSSED, FIXED])
def test_kofn_cells_counted_in_an_engine_route_and_equal_the_rows_path(tmp_path, formula):
    # three runs a cell, 10% of the cells never run: the engine's k-of-n cells become a grid with
    # empty cells, fitted as the rows (their log-likelihood, nobs and residuals as the rows' path)
    k, truth = gf.simulate_grid(NS, NB, trials=3, rng=7, intercept=0.3)
    rng = np.random.default_rng(8)
    keep = rng.random(k.shape) > 0.1
    rows = []
    for run in range(3):
        right = (k > run).astype(np.int8)  # k of the three runs right, in any order
        rows.append(pd.DataFrame({"model": np.repeat(MODELS, NB), "item": np.tile(ITEMS, NS),
                                  "run": run, "correct": right.ravel()})[keep.ravel()])
    path = tmp_path / "runs.parquet"
    pd.concat(rows, ignore_index=True).to_parquet(path)
    ref = evalmix.glmer(formula, str(path), vcov_method="rx", control=GlmerControl(grid_rows=0))
    fit = evalmix.glmer(formula, str(path), vcov_method="rx", control=ON)
    assert ref.has_data and ref.nobs == 3 * int(keep.sum())
    _same(fit, ref)


@pytest.mark.parametrize("formula", ["k ~ 1 + (1|model) + (1|item)", "k ~ 0 + model + (1|item)"])
def test_a_frame_of_kofn_rows_routes_as_the_cbind_fit(formula):
    # one row of k successes of n trials a cell (trials="n"), some cells absent
    k, n = gf.simulate_grid(NS, NB, trials=4, rng=9, intercept=0.2)[0], None
    n = np.random.default_rng(10).integers(1, 5, size=k.shape)
    k = np.minimum(k, n)
    d = pd.DataFrame({"model": np.repeat(MODELS, NB), "item": np.tile(ITEMS, NS), "k": k.ravel(),
                      "n": n.ravel()}).sample(frac=0.9, random_state=4)
    ref = evalmix.glmer(formula, d, trials="n", vcov_method="rx")
    fit = evalmix.glmer(formula, d, trials="n", vcov_method="rx", control=ON)
    assert ref.has_data and ref.nobs == len(d)
    _same(fit, ref)


@pytest.mark.parametrize("formula, solver", [(CROSSED, gf._Crossed), (FIXED, gf._Fixed)])
def test_modes_that_do_not_converge_are_reported(grid, monkeypatch, formula, solver):
    y, _ = grid
    monkeypatch.setattr(solver, "maxit", 1)
    with pytest.warns(evalmix.errors.ConvergenceWarning, match="conditional modes"):
        fit = gf.glmer_grid(y, formula)
    assert not fit.converged and any("conditional modes" in m for m in fit.messages)
