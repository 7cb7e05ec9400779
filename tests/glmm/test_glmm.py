"""Behaviour of evalmix.glmer: warnings, errors, pooling, the result object and its contract."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import gammaln

from evalmix import GlmerResult, glmer
from evalmix.core.errors import (ConvergenceWarning, DataError, DataWarning, FitWarning, FormulaError,
                            SingularFitWarning)

REF = Path(__file__).resolve().parents[1] / "reference"


def quiet_fit(*args, **kw) -> GlmerResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return glmer(*args, **kw)


@pytest.fixture(scope="module")
def item_run() -> pd.DataFrame:
    return pd.read_csv(REF / "glmm_item_run.csv")


@pytest.fixture(scope="module")
def fit(item_run) -> GlmerResult:
    return quiet_fit("correct ~ model + (1|item) + (1|item:run)", item_run)


def small(seed: int = 3, n_items: int = 25) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(n_items), 6)
    model = np.tile(["a", "b", "c"], 2 * n_items)
    eta = rng.normal(0, 1.0, n_items)[item] + (model == "b") * 0.7
    return pd.DataFrame({"item": item, "model": model,
                         "correct": (rng.random(item.size) < 1 / (1 + np.exp(-eta))).astype(int)})


def test_singular_fit_warns_and_flags():
    d = pd.read_csv(REF / "glmm_singular.csv")
    with pytest.warns(SingularFitWarning, match="singular"):
        f = glmer("correct ~ model + (1|item) + (1|item:run)", d)
    assert f.singular
    assert f.theta["item:run.(Intercept)"] < 1e-4
    assert any("singular" in m for m in f.messages)


def test_failed_convergence_warns():
    with pytest.warns(ConvergenceWarning):
        f = glmer("correct ~ model + (1|item)", small(), maxiter=1)
    assert not f.converged
    assert f.optimizer.iterations <= 1


def test_perfect_separation_names_the_column():
    d = small()
    d.loc[d["model"] == "c", "correct"] = 0
    with pytest.warns(FitWarning, match=r"separation.*model = 'c'.*'modelc' \(-inf\)"):
        f = glmer("correct ~ model + (1|item)", d)
    assert f.fixef["modelc"] == -np.inf


def test_grouping_factor_with_one_level():
    d = small()
    d["lab"] = "only"
    with pytest.raises(DataError, match="'lab'.*one level"):
        glmer("correct ~ model + (1|lab)", d)


@pytest.mark.parametrize("formula, column", [
    ("correct ~ modell + (1|item)", "modell"),
    ("correct ~ model + (1|itm)", "itm"),
    ("correct ~ model + (1 + z|item)", "z"),
    ("right ~ model + (1|item)", "right"),
    ("cbind(k, n - k) ~ model + (1|item)", "k"),
])
def test_absent_columns_are_named(formula, column):
    with pytest.raises(FormulaError, match=f"'{column}'"):
        glmer(formula, small())


def test_no_random_term_and_bad_response():
    with pytest.raises(FormulaError, match="random term"):
        glmer("correct ~ model", small())
    d = small()
    d.loc[0, "correct"] = 2
    with pytest.raises(DataError, match="0/1"):
        glmer("correct ~ model + (1|item)", d)


def test_missing_values_refused_or_dropped_with_warning():
    d = small().astype({"correct": float})
    d.loc[[0, 5], "correct"] = np.nan
    with pytest.raises(DataError, match="outcome column 'correct' has 2 missing value"):
        glmer("correct ~ model + (1|item)", d)
    with pytest.warns(DataWarning, match="dropped 2 of"):
        f = glmer("correct ~ model + (1|item)", d, missing="drop")
    assert f.nobs == len(d) - 2


def test_rank_deficient_columns_dropped():
    d = small()
    d["model2"] = d["model"].map({"a": "x", "b": "y", "c": "y"})
    d["m3"] = d["model"]
    with pytest.warns(FitWarning, match="rank deficient"):
        f = glmer("correct ~ model + m3 + (1|item)", d)
    assert list(f.fixef.index) == ["(Intercept)", "modelb", "modelc"]
    assert f.fixed_design.model_matrix(d.head(2)).shape == (2, 3)


def test_pooling_is_exact(item_run):
    # language-free formula on a table with duplicated patterns: pooled and row-wise fits agree
    d = pd.concat([item_run.assign(prompt="p1"), item_run.assign(prompt="p2")], ignore_index=True)
    a = quiet_fit("correct ~ model + (1|item) + (1|item:run)", d)
    b = quiet_fit("correct ~ model + (1|item) + (1|item:run)", d, pool=False)
    assert a.loglik == pytest.approx(b.loglik, abs=1e-6)
    np.testing.assert_allclose(a.fixef, b.fixef, atol=1e-5)
    assert a.nobs == b.nobs == len(d)


def test_trials_argument_is_cbind():
    c = pd.read_csv(REF / "glmm_counts.csv")
    a = quiet_fit("cbind(k, n - k) ~ model + (1|item)", c)
    b = quiet_fit("k ~ model + (1|item)", c, trials="n")
    c["fails"] = c["n"] - c["k"]
    f = quiet_fit("cbind(k, fails) ~ model + (1|item)", c)
    assert a.loglik == b.loglik == f.loglik
    with pytest.raises(FormulaError, match="not both"):
        glmer("cbind(k, n - k) ~ model + (1|item)", c, trials="n")
    with pytest.raises(FormulaError, match="'nn'"):
        glmer("k ~ model + (1|item)", c, trials="nn")


def test_counts_and_rows_differ_by_binomial_coefficients():
    c = pd.read_csv(REF / "glmm_counts.csv")
    rows = c.loc[c.index.repeat(c["n"])].copy()
    rows["correct"] = np.concatenate([[1] * k + [0] * (n - k) for k, n in zip(c["k"], c["n"])])
    fc = quiet_fit("cbind(k, n - k) ~ model + (1|item)", c)
    fr = quiet_fit("correct ~ model + (1|item)", rows)
    logc = float(np.sum(gammaln(c["n"] + 1) - gammaln(c["k"] + 1) - gammaln(c["n"] - c["k"] + 1)))
    assert fc.loglik == pytest.approx(fr.loglik + logc, abs=1e-6)
    np.testing.assert_allclose(fc.fixef, fr.fixef, atol=1e-5)
    assert fc.nobs == len(c) and fr.nobs == len(rows)


@settings(max_examples=4, deadline=None)
@given(st.integers(min_value=0, max_value=10_000))
def test_row_order_does_not_matter(seed):
    d = small(seed=1, n_items=15)
    perm = d.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    a = quiet_fit("correct ~ model + (1|item)", d)
    b = quiet_fit("correct ~ model + (1|item)", perm)
    assert a.loglik == pytest.approx(b.loglik, abs=1e-7)
    np.testing.assert_allclose(a.fixef, b.fixef, atol=1e-5)


def test_result_contract(fit, item_run):
    assert fit.family == "binomial" and fit.link == "logit"
    assert isinstance(fit.df, int) and fit.df == len(fit.fixef) + len(fit.theta)
    assert fit.aic == pytest.approx(-2 * fit.loglik + 2 * fit.df)
    assert list(fit.vcov.index) == list(fit.fixef.index) == list(fit.vcov.columns)
    fd = fit.fixed_design
    assert fd.terms == ["model"]
    assert fd.factors == {"model": ["alpha", "beta", "delta", "gamma"]}
    assert fd.column_terms == ["(Intercept)", "model", "model", "model"]
    assert fd.model_matrix(item_run.head(3)).shape == (3, 4)
    assert len(fd.weights_data) == len(item_run)
    ct = fit.coef_table(conf_level=0.9)
    z = ct["estimate"] / ct["se"]
    np.testing.assert_allclose(ct["statistic"], z)
    np.testing.assert_allclose(ct["conf_high"] - ct["estimate"], 1.6448536 * ct["se"], rtol=1e-6)
    np.testing.assert_allclose(ct["odds_ratio"], np.exp(ct["estimate"]))
    json.dumps(fit.to_dict())
    assert fit.to_frame().shape[0] == 4


def test_summary_reads_like_lme4(fit):
    summ = fit.summary()
    text = str(summ)
    for piece in ("Laplace Approximation", "Random effects:", "item:run", "Number of obs: 960",
                  "groups:  item:run, 240; item, 60", "Fixed effects:", "Correlation of Fixed Effects:"):
        assert piece in text
    assert "scale: log-odds" in summ.header[1]  # lme4's layout prints no scale line; the header has it
    assert summ.to_frame().equals(fit.coef_table().to_frame())
    assert list(summ.tables) == ["Fixed effects", "Random effects", "Scaled residuals"]


def test_ranef_and_predict(fit, item_run):
    re_ = fit.ranef()
    assert set(re_["group"]) == {"item", "item:run"}
    assert (re_["sd"] > 0).all()
    p = fit.predict(item_run.head(5), type="response")
    assert ((p > 0) & (p < 1)).all()
    new = item_run.head(2).assign(item="unseen")
    with pytest.raises(FormulaError, match="grouping factor 'item"):
        fit.predict(new)
    p0 = fit.predict(new, allow_new_levels=True, re=True)
    np.testing.assert_allclose(p0[:1], fit.predict(new.head(1).assign(item="unseen"),
                                                    allow_new_levels=True))
    assert fit.predict().shape == (len(item_run),)


def test_optimizer_report(fit):
    r = fit.optimizer
    assert r.converged and r.max_grad < 1e-3
    assert r.feval > 0 and r.gradient.size == fit.df


def test_recovers_simulated_truth_at_scale():
    """A scaled-down version of the 1M-row benchmark design: truth sd_item 1.5, sd_item_run 0.5."""
    from evalmix.simulate import glmm_runs

    d = glmm_runs(10, 400, 4, rng=11)
    truth = d.attrs["truth"]
    f = quiet_fit(truth["formula"], d)
    assert f.converged and not f.singular
    sd = f.varcorr.set_index("group")["sd"]
    assert abs(sd["item"] - truth["sd_item"]) < 0.15
    assert abs(sd["item:run"] - truth["sd_item_run"]) < 0.12
    eff = truth["model_effects"]
    levels = f.fixed_design.factors["model"]  # sorted as R sorts them: M1, M10, M2, ...
    expected = np.array([eff[m] - eff[levels[0]] for m in levels[1:]])
    z = (f.fixef.iloc[1:].to_numpy() - expected) / np.sqrt(np.diag(f.vcov.to_numpy())[1:])
    assert np.all(np.abs(z) < 3.5)


def test_result_is_immutable_and_hashable(fit):
    import dataclasses

    with pytest.raises(dataclasses.FrozenInstanceError):
        fit.loglik = 0.0
    assert fit == fit and hash(fit) == hash(fit)
    assert "Fixed Effects:" in repr(fit) and "Random effects:" in repr(fit)


def test_vector_term_leaves_a_degenerate_boundary():
    """With a zero diagonal in Lambda the boundary is a family of equivalent points; the fit must
    not stop on one where the gradient points outwards (a start away from it finds the optimum)."""
    from evalmix.simulate import glmm_runs

    rng = np.random.default_rng(0)
    n_models, n_items, n_runs = (int(rng.integers(2, 5)), int(rng.integers(15, 60)),
                                 int(rng.integers(2, 4)))
    d = glmm_runs(n_models, n_items, n_runs, slices={"lang": ["EN", "ES"]},
                  sd_item=float(rng.uniform(0, 2)), sd_item_run=float(rng.uniform(0, 1)),
                  sd_slope=float(rng.uniform(0, 1)), rng=0)
    a = quiet_fit("correct ~ model + (1 + lang|item)", d)
    b = quiet_fit("correct ~ model + (1 + lang|item)", d, start={"theta": [0.5, 0.5, 0.5]})
    assert a.loglik >= b.loglik - 1e-6


def test_crossed_schur_solver_dense_and_sparse_storage_agree(monkeypatch):
    # a fully crossed design (every model on every item) stores the item-by-model block dense;
    # the sparse storage must give the same fit
    from evalmix.glmm import GlmerControl, deviance

    rng = np.random.default_rng(2)
    mi, ii = np.meshgrid(np.arange(30), np.arange(200), indexing="ij")
    eta = rng.normal(0, 1, 30)[mi.ravel()] + rng.normal(0, 1.5, 200)[ii.ravel()]
    df = pd.DataFrame({"model": [f"m{j:02d}" for j in mi.ravel()],
                       "item": [f"i{j:03d}" for j in ii.ravel()],
                       "correct": (rng.random(eta.size) < 1 / (1 + np.exp(-eta))).astype(int)})
    fits = {}
    for fill in (0.25, 2.0):  # 2.0: never dense
        ctl = GlmerControl(schur_dense_fill=fill)
        ld = deviance.LaplaceDeviance(*_xkmt("correct ~ 1 + (1|model) + (1|item)", df), control=ctl)
        assert isinstance(ld.solver, deviance.SchurSolver) and ld.solver.dense == (fill < 1)
        fits[fill] = glmer("correct ~ 1 + (1|model) + (1|item)", df, control=ctl)
        assert fits[fill].control.schur_dense_fill == fill
    dense, sparse = fits[0.25], fits[2.0]
    assert dense.loglik == pytest.approx(sparse.loglik, abs=1e-6)
    np.testing.assert_allclose(dense.theta.to_numpy(), sparse.theta.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(dense.fixef.to_numpy(), sparse.fixef.to_numpy(), atol=1e-7)
    np.testing.assert_allclose(dense.vcov.to_numpy(), sparse.vcov.to_numpy(), rtol=1e-5)


def _xkmt(formula, data):
    from evalmix.glmm import build_design

    design = build_design(formula, data)
    return design.X, design.k, design.m, design.terms


def _slope_design(subjects=40, items=12, seed=5):
    rng = np.random.default_rng(seed)
    s, i, x = (a.ravel() for a in np.meshgrid(np.arange(subjects), np.arange(items), np.arange(3),
                                                 indexing="ij"))
    u = rng.normal(size=(subjects, 3)) @ np.array([[0.8, 0, 0], [0.3, 0.5, 0], [-0.2, 0.2, 0.4]]).T
    eta = 0.2 + np.array([0.0, 0.5, -0.4])[x] + u[s, 0] + np.where(x > 0, u[s, np.maximum(x, 1)], 0.0)
    eta += rng.normal(0, 1.0, items)[i]
    return pd.DataFrame({"subject": [f"s{j:03d}" for j in s], "item": [f"i{j:02d}" for j in i],
                         "x": np.array(["a", "b", "c"])[x],
                         "correct": (rng.random(eta.size) < 1 / (1 + np.exp(-eta))).astype(int)})


@pytest.mark.parametrize("formula", ["correct ~ x + (1|item) + (1 + x|subject)",
                                     "correct ~ x + (1|item) + (1 + x||subject)"])
def test_block_schur_solver_matches_the_dense_solver(formula):
    # (1 + x|subject) crossed with (1|item): the subject blocks are eliminated first; the general
    # dense solver (forced by a remainder limit of 1 column in the control) must reach the same fit
    from evalmix.glmm import GlmerControl, deviance

    df = _slope_design(20, 8)  # 480 rows: the solvers agree to 1e-12 at this size as at 1,440 rows
    tiny = GlmerControl(block_schur_max_rest=1)
    assert isinstance(deviance.LaplaceDeviance(*_xkmt(formula, df)).solver,
                      deviance.BlockSchurSolver)
    assert type(deviance.LaplaceDeviance(*_xkmt(formula, df), control=tiny).solver) \
        is deviance.DenseSolver
    fast = glmer(formula, df)
    dense = glmer(formula, df, control=tiny)
    assert fast.loglik == pytest.approx(dense.loglik, abs=1e-6)
    np.testing.assert_allclose(fast.fixef.to_numpy(), dense.fixef.to_numpy(), atol=1e-5)
    np.testing.assert_allclose(np.sqrt(np.diag(fast.vcov)), np.sqrt(np.diag(dense.vcov)), rtol=1e-3)


def test_exact_theta_gradient_matches_finite_differences():
    # the closed-form theta gradient of every solver against central differences of the deviance
    from evalmix.glmm import deviance
    from evalmix.model import build_design

    small, square = _slope_design(20, 8), _slope_design(20, 20)
    for formula, df, kind in [
            ("correct ~ x + (1|item) + (1 + x|subject)", small, deviance.BlockSchurSolver),
            ("correct ~ x + (1 + x|subject)", small, deviance.BlockDiagSolver),
            ("correct ~ x + (1|item) + (1|subject)", small, deviance.SchurSolver),
            ("correct ~ x + (1|item) + (1|subject)", square, deviance.DenseSolver)]:
        design = build_design(formula, df)
        ld = deviance.LaplaceDeviance(design.X, design.k, design.m, design.terms)
        assert type(ld.solver) is kind, (formula, type(ld.solver))
        lower = design.theta_lower
        theta = np.linspace(0.6, 0.9, lower.size) * np.where(lower == 0, 1.0, 0.3)
        beta = np.zeros(design.X.shape[1])
        ev = ld.pirls(theta, beta, None)
        exact = ld.grads(ev)[0]
        h = 1e-5
        fd = np.array([(ld.pirls(theta + h * e, beta, ev.u).dev - ld.pirls(theta - h * e, beta, ev.u).dev)
                       / (2 * h) for e in np.eye(theta.size)])
        np.testing.assert_allclose(exact, fd, rtol=1e-4, atol=1e-4)
