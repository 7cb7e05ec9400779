"""The GLMM pipeline as a public API: GlmerControl, devfun_only, the solver protocol."""

from __future__ import annotations

import dataclasses
import inspect
import json
import pickle
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalmix
from evalmix import GlmerControl, glmer
from evalmix.glmm import (DevianceFunction, LaplaceDeviance, Solver, build_design, build_deviance,
                          deviance, make_solver, optimize)
from evalmix.glmm.control import DEFAULT_CONTROL

REF = Path(__file__).resolve().parents[1] / "reference"
FITS = {f["id"]: f for f in json.loads((REF / "lme4_reference.json").read_text())["fits"]}


def quiet(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return glmer(*args, **kw)


def crossed(n_models=8, n_items=120, seed=4, runs=1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    mi, ii, ri = (a.ravel() for a in np.meshgrid(np.arange(n_models), np.arange(n_items),
                                                 np.arange(runs), indexing="ij"))
    eta = rng.normal(0, 0.8, n_models)[mi] + rng.normal(0, 1.2, n_items)[ii]
    return pd.DataFrame({"model": [f"m{j}" for j in mi], "item": [f"i{j:03d}" for j in ii],
                         "run": ri,
                         "x": rng.normal(size=mi.size).round(2),
                         "correct": (rng.random(mi.size) < 1 / (1 + np.exp(-eta))).astype(int)})


# ------------------------------------------------------------------------------- GlmerControl
def test_control_defaults_are_the_documented_values():
    c = GlmerControl()
    # lme4's glmerControl defaults where evalmix follows lme4
    assert (c.singular_tol, c.grad_tol, c.hess_tol, c.tol_pwrss, c.hessian_step) == (
        1e-4, 2e-3, 1e-6, 1e-7, 1e-4)
    assert (c.maxiter, c.ftol, c.gtol, c.maxcor, c.pirls_tol, c.pirls_maxit) == (
        500, 1e-15, 1e-7, 20, 1e-15, 60)
    assert (c.dense_h_max, c.schur_max_rest, c.schur_dense_fill, c.schur_max_dense) == (
        1500, 4000, 0.25, 60_000_000)
    assert (c.separation_tol, c.rank_tol, c.profile_xtol, c.theta_fd_step) == (
        1e-4, 1e-7, 1e-7, 1e-5)
    assert (c.hessian_chunk_rows, c.step_slack) == (65536, 1e-12)
    assert (c.pirls_halvings, c.inner_halvings, c.inner_gain_tol) == (30, 40, 1e-14)
    assert c == DEFAULT_CONTROL and c.changed() == {}
    assert evalmix.GlmerControl is GlmerControl is evalmix.glmm.GlmerControl
    # every field documented by a comment in the class source
    src = inspect.getsource(GlmerControl)
    for f in dataclasses.fields(GlmerControl):
        line = next(i for i, ln in enumerate(src.splitlines()) if ln.strip().startswith(f"{f.name}:"))
        assert src.splitlines()[line - 1].strip().startswith(("#:", f"{f.name}", "stage1_")) or \
            f.name.startswith("stage1_"), f.name


@pytest.mark.parametrize("field, value", [
    ("grad_tol", 0), ("grad_tol", -1e-3), ("ftol", float("nan")), ("gtol", float("inf")),
    ("maxiter", 0), ("maxiter", 2.5), ("pirls_maxit", True), ("schur_max_rest", "10"),
    ("boundary_restarts", -1), ("log", 1)])
def test_invalid_control_values_name_the_field(field, value):
    with pytest.raises(ValueError, match=f"GlmerControl.{field} must be"):
        GlmerControl(**{field: value})


def test_control_is_frozen_hashable_and_picklable():
    c = GlmerControl(grad_tol=0.01, maxiter=40, boundary_restarts=0)
    with pytest.raises(dataclasses.FrozenInstanceError):
        c.grad_tol = 1.0  # type: ignore[misc]
    assert pickle.loads(pickle.dumps(c)) == c and hash(c) == hash(GlmerControl(
        grad_tol=0.01, maxiter=40, boundary_restarts=0))
    assert c.replace(maxiter=41).maxiter == 41 and c.maxiter == 40
    with pytest.raises(ValueError, match="no field"):
        c.replace(tolerance=1)
    with pytest.raises(TypeError, match="GlmerControl"):
        glmer("correct ~ model + (1|item)", crossed(), control={"maxiter": 5})


def test_fit_stores_its_control_and_the_optimizer_outcome():
    d = crossed()
    fit = quiet("correct ~ model + (1|item)", d, control=GlmerControl(grad_tol=0.01), maxiter=300)
    assert fit.control.grad_tol == 0.01 and fit.control.maxiter == 300  # maxiter= wins
    rep = fit.optimizer
    assert rep.feval > 0 and rep.iterations > 0
    assert rep.gradient.shape == (1 + 8,) and not rep.gradient.flags.writeable
    assert rep.max_grad < 0.01 and rep.log == ()
    with pytest.raises(dataclasses.FrozenInstanceError):
        rep.converged = False  # type: ignore[misc]
    notes = fit.summary().notes
    assert any(n.startswith("optimizer: profiled L-BFGS-B") for n in notes)
    assert "control: grad_tol = 0.01, maxiter = 300" in notes
    out = fit.to_dict()
    assert out["control"]["grad_tol"] == 0.01 and out["optimizer"]["feval"] > 0
    json.dumps(out, allow_nan=False, default=str)


def test_fit_log_records_every_outer_evaluation():
    d = crossed()
    fit = quiet("correct ~ model + (1|item)", d, control=GlmerControl(log=True))
    plain = quiet("correct ~ model + (1|item)", d)
    log = fit.optimizer.log
    assert len(log) >= fit.optimizer.iterations >= 1
    assert [s.evaluation for s in log] == list(range(1, len(log) + 1))
    # the best logged deviance is the fit's (up to the binomial constant, 0 for 0/1 rows)
    assert min(s.deviance for s in log) == pytest.approx(fit.deviance, abs=1e-8)
    assert fit.loglik == plain.loglik  # logging changes nothing


def test_loose_tolerances_change_the_evaluations_not_the_answer():
    d = crossed()
    tight = quiet("correct ~ model + (1|item)", d)
    loose = quiet("correct ~ model + (1|item)", d, control=GlmerControl(ftol=1e-6, gtol=1e-3))
    assert loose.optimizer.feval < tight.optimizer.feval
    assert loose.loglik == pytest.approx(tight.loglik, abs=1e-3)
    assert loose.loglik <= tight.loglik + 1e-9


def test_tiny_schur_limit_forces_the_dense_solver_and_gives_the_same_fit():
    d = crossed()
    f = "correct ~ x + (1|item) + (1|model)"
    design = build_design(f, d)
    tiny = GlmerControl(schur_max_rest=1)
    assert type(make_solver(design.terms)) is deviance.SchurSolver
    assert type(make_solver(design.terms, tiny)) is deviance.DenseSolver
    a, b = quiet(f, d), quiet(f, d, control=tiny)
    assert b.loglik == pytest.approx(a.loglik, abs=1e-6)
    np.testing.assert_allclose(b.theta.to_numpy(), a.theta.to_numpy(), rtol=1e-5)
    np.testing.assert_allclose(b.fixef.to_numpy(), a.fixef.to_numpy(), atol=1e-6)
    np.testing.assert_allclose(b.vcov.to_numpy(), a.vcov.to_numpy(), rtol=1e-4)


def test_dense_h_limit_switches_the_assembly_of_h_only():
    design = build_design("correct ~ x + (1 + x|model) + (1|item)", crossed())
    th = np.array([0.8, 0.1, 0.3, 1.1])
    beta = np.array([0.1, -0.2])
    ld1 = LaplaceDeviance(design.X, design.k, design.m, design.terms,
                          deviance.DenseSolver(design.terms))
    ld2 = LaplaceDeviance(design.X, design.k, design.m, design.terms,
                          deviance.DenseSolver(design.terms, GlmerControl(dense_h_max=1)))
    assert ld1.pirls(th, beta).dev == pytest.approx(ld2.pirls(th, beta).dev, rel=1e-12)


def test_pirls_iteration_limit_is_read_from_the_control():
    design = build_design("correct ~ x + (1|item)", crossed())
    ld = build_deviance(design, control=GlmerControl(pirls_maxit=1))
    ev = ld.pirls(np.array([1.5]), np.zeros(2))
    assert ev.iterations == 1
    full = build_deviance(design).pirls(np.array([1.5]), np.zeros(2))
    assert full.iterations > 1 and full.dev < ev.dev


def test_hessian_row_chunks_change_the_blocks_not_the_standard_errors():
    """lme4's early-stop term J' W J summed in blocks of 7 rows or of 65,536: the same Hessian."""
    d = crossed()
    f = "correct ~ x + (1|item)"
    a, b = quiet(f, d), quiet(f, d, control=GlmerControl(hessian_chunk_rows=7))
    assert len(d) > 7 and b.control.hessian_chunk_rows == 7
    np.testing.assert_allclose(b.vcov.to_numpy(), a.vcov.to_numpy(), rtol=1e-9)
    assert b.loglik == a.loglik


def test_step_slack_is_read_from_the_control():
    """Without slack PIRLS reaches the same mode (the slack only keeps rounding from halving
    the last steps away); a huge slack accepts a first full Newton step that overshoots."""
    design = build_design("correct ~ x + (1|item)", crossed())
    th, beta = np.array([1.5]), np.zeros(2)
    full = build_deviance(design).pirls(th, beta)
    strict = build_deviance(design, control=GlmerControl(step_slack=1e-300)).pirls(th, beta)
    assert strict.dev == pytest.approx(full.dev, rel=1e-12)
    one = build_deviance(design, control=GlmerControl(step_slack=1e6, pirls_maxit=1))
    assert one.pirls(th, beta).dev >= full.dev
    # one halving allowed: the same mode (full Newton steps suffice from this start)
    few = build_deviance(design, control=GlmerControl(pirls_halvings=1)).pirls(th, beta)
    assert few.dev == pytest.approx(full.dev, rel=1e-12)


def test_singular_tolerance_is_read_from_the_control():
    d = pd.read_csv(REF / "glmm_item_run.csv")
    fit = quiet("correct ~ model + (1|item) + (1|item:run)", d)
    th = float(fit.theta.min())
    assert not fit.singular and th > 1e-4
    strict = quiet("correct ~ model + (1|item) + (1|item:run)", d,
                   control=GlmerControl(singular_tol=2 * th))
    assert strict.singular and strict.loglik == pytest.approx(fit.loglik, abs=1e-9)


# ------------------------------------------------------------------------------- devfun_only
@pytest.mark.parametrize("case_id", [k for k, v in FITS.items() if "dev_at_point_tight" in v
                                     and v["data"] != "ai4math"])
def test_devfun_matches_lme4s_devfunonly(case_id):
    """glmer(devfun_only=True) at lme4's points equals lme4's devFunOnly objective run to
    tolPwrss = 1e-12 (lme4_reference.R), to 1e-7 relative."""
    ref = FITS[case_id]
    data = pd.read_csv(REF / ref["data"])
    f = quiet(ref["formula"], data, devfun_only=True)
    assert isinstance(f, DevianceFunction)
    assert f.theta_names == list(np.atleast_1d(ref["theta_names"]))
    assert f(ref["point"]) == pytest.approx(ref["dev_at_point_tight"], rel=1e-7)


@pytest.mark.parametrize("formula, kw", [
    ("correct ~ model + (1|item) + (1|item:run)", {}),
    ("correct ~ model + (1|item)", {"nAGQ": 5}),
    ("correct ~ model + (1|item)", {"fixef_prior": "normal(0, 2.5)"}),
])
def test_devfun_at_the_optimum_is_minus_twice_the_loglik(formula, kw):
    d = pd.read_csv(REF / "glmm_item_run.csv")
    fit = quiet(formula, d, **kw)
    f = quiet(formula, d, devfun_only=True, **kw)
    x = np.concatenate([fit.theta.to_numpy(), fit.fixef.to_numpy()])
    pen = 0.0 if fit.fixef_prior is None else fit.fixef_prior.penalty(fit.fixef.to_numpy())
    assert f(x) == pytest.approx(-2 * fit.loglik + pen, abs=1e-6)
    assert f.nagq == kw.get("nAGQ", 1) and f.lower.size == x.size and f.start.size == x.size
    if f.nagq == 1:  # the profiled objective is minimised by the fit's beta
        assert f.profiled(fit.theta.to_numpy()) == pytest.approx(f(x), abs=1e-6)
        np.testing.assert_allclose(f.last_beta, fit.fixef.to_numpy(), atol=1e-5)
        # lme4's nAGQ = 0 deviance (beta inside PIRLS) approximates the Laplace one
        assert f.joint(fit.theta.to_numpy()) == pytest.approx(f(x), rel=0.01)
    with pytest.raises(ValueError, match="takes"):
        f(x[:-1])


def test_pipeline_steps_reproduce_glmer():
    """build_design -> build_deviance -> optimize gives glmer's estimates (lme4's glFormula ->
    mkGlmerDevfun -> optimizeGlmer)."""
    d = crossed()
    formula = "correct ~ x + (1|item) + (1|model)"
    design = build_design(formula, d)
    ld = build_deviance(design)
    ev, rep = optimize(ld, design.theta_start, design.theta_lower, np.zeros(2))
    fit = quiet(formula, d)
    assert ev.dev - 2 * design.log_binom == pytest.approx(fit.deviance, abs=1e-8)
    np.testing.assert_allclose(ev.theta, fit.theta.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(ev.beta, fit.fixef.to_numpy(), atol=1e-7)
    assert rep.converged


# ------------------------------------------------------------------------------- solver protocol
def _solver_classes() -> list[type]:
    import evalmix.glmm as g
    import importlib
    import pkgutil

    out = set()
    for m in pkgutil.iter_modules(g.__path__, "evalmix.glmm."):
        mod = importlib.import_module(m.name)
        out |= {c for _, c in inspect.getmembers(mod, inspect.isclass)
                if c.__name__.endswith("Solver") and c is not Solver
                and c.__module__.startswith("evalmix.glmm")}
    return sorted(out, key=lambda c: c.__name__)


def test_every_solver_class_declares_the_protocol():
    classes = _solver_classes()
    assert len(classes) >= 6
    members = [n for n in dir(Solver) if not n.startswith("_")] + ["q", "control"]
    for cls in classes:
        for name in members:
            if name in ("q", "control"):
                continue  # instance attributes, checked on instances below
            assert callable(getattr(cls, name, None)), f"{cls.__name__}.{name}"
            got = inspect.signature(getattr(cls, name))
            want = inspect.signature(getattr(Solver, name))
            assert list(got.parameters) == list(want.parameters), f"{cls.__name__}.{name}"


@pytest.mark.parametrize("formula, solver", [
    ("correct ~ x + (1|item)", "NestedSolver"),
    ("correct ~ x + (1|item) + (1|item:model)", "NestedSolver"),
    ("correct ~ x + (1|item) + (1|model)", "SchurSolver"),
    ("correct ~ x + (1 + x|model)", "BlockDiagSolver"),
    ("correct ~ x + (1 + x|item) + (1|model)", "BlockSchurSolver"),
    ("correct ~ x + (1|item) + (1|item:model) + (1|model)", "NestedSchurSolver"),
    ("correct ~ x + (1 + x|model) + (1 + x|item)", "DenseSolver")])
def test_every_chosen_solver_is_a_solver_and_agrees_with_the_dense_one(formula, solver):
    design = build_design(formula, crossed(6, 40, runs=2))
    ctl = GlmerControl(block_schur_max_rest=1) if solver == "DenseSolver" else DEFAULT_CONTROL
    s = make_solver(design.terms, ctl)
    assert type(s).__name__ == solver
    assert isinstance(s, Solver) and s.control is ctl and s.q == sum(
        t.nl * t.nc for t in design.terms)
    theta = np.where(design.theta_lower == 0, 0.9, 0.2)
    beta = np.array([0.1, -0.3])
    a = LaplaceDeviance(design.X, design.k, design.m, design.terms, s)
    b = LaplaceDeviance(design.X, design.k, design.m, design.terms,
                        deviance.DenseSolver(design.terms))
    ea, eb = a.pirls(theta, beta), b.pirls(theta, beta)
    assert ea.dev == pytest.approx(eb.dev, rel=1e-11)
    np.testing.assert_allclose(s.cond_var(), b.solver.cond_var(), rtol=1e-8)
    np.testing.assert_allclose(s.leverage(), b.solver.leverage(), rtol=1e-8, atol=1e-14)


# ------------------------------------------------------------------------------- theta layout
def _term(nc: int):
    from evalmix.model import RandomTerm

    return RandomTerm("g", "1 + x", [f"c{i}" for i in range(nc)], ["a", "b"],
                      np.zeros(2, dtype=np.int64), np.ones((2, nc)))


def test_terms_own_the_theta_layout_as_lme4_orders_it():
    t = _term(3)
    # lme4's Lind: the lower triangle column by column
    assert t.theta_pairs == [(0, 0), (1, 0), (2, 0), (1, 1), (2, 1), (2, 2)]
    assert t.cor_pairs == [(1, 0), (2, 0), (2, 1)]
    np.testing.assert_array_equal(t.theta_lower, [0, -np.inf, -np.inf, 0, -np.inf, 0])
    np.testing.assert_array_equal(t.theta_start, [1, 0, 0, 1, 0, 1])
    assert t.theta_names == ["g.c0", "g.c1.c0", "g.c2.c0", "g.c1", "g.c2.c1", "g.c2"]
    assert t.lambda_row_slots(1) == [1, 3] and t.lambda_row_slots(2) == [2, 4, 5]
    np.testing.assert_array_equal(t.lambda_(np.arange(1, 7)),
                                  [[1, 0, 0], [2, 4, 0], [3, 5, 6]])
    with pytest.raises(ValueError, match="takes 6 theta"):
        t.lambda_([1.0, 2.0])


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 4), st.integers(0, 2**31 - 1))
def test_theta_from_cov_inverts_lambda(nc, seed):
    t = _term(nc)
    rng = np.random.default_rng(seed)
    th = rng.normal(size=t.theta_size)
    th[t.theta_lower == 0] = np.abs(th[t.theta_lower == 0]) + 0.1
    L = t.lambda_(th)
    np.testing.assert_allclose(t.theta_from_lambda(L), th)
    np.testing.assert_allclose(t.theta_from_cov(L @ L.T), th, rtol=1e-8, atol=1e-10)
    # a singular covariance (one direction of zero variance) still has a factor
    L[:, -1] = 0.0
    got = t.lambda_(t.theta_from_cov(L @ L.T))
    np.testing.assert_allclose(got @ got.T, L @ L.T, atol=1e-10)
    assert np.all(np.diag(got) >= 0)


def test_the_design_and_the_fit_read_the_layout_from_the_terms():
    from evalmix.model import split_theta, term_lambdas

    d = crossed(6, 40, runs=2)
    fit = quiet("correct ~ x + (1 + x|item) + (1|model)", d)
    design = build_design("correct ~ x + (1 + x|item) + (1|model)", d)
    np.testing.assert_array_equal(design.theta_lower,
                                  np.concatenate([t.theta_lower for t in design.terms]))
    th = fit.theta.to_numpy()
    parts = split_theta(design.terms, th)
    assert [p.size for p in parts] == [3, 1]
    L = term_lambdas(design.terms, th)[0]
    S = L @ L.T
    vc = fit.varcorr
    item = vc[vc["group"] == "item"]
    np.testing.assert_allclose(item["variance"].to_numpy(), [S[0, 0], S[1, 1], S[1, 0]],
                               rtol=1e-12)


def test_no_module_but_the_term_codes_the_lower_triangle():
    import re

    src = Path(evalmix.__file__).parent
    pattern = re.compile(r"range\(j(?: \+ 1)?, |nc \* \(.*nc \+ 1\)|np\.tril_indices")
    offenders = [str(p.relative_to(src)) for p in src.rglob("*.py")
                 if p.relative_to(src).as_posix() != "model/random.py" and pattern.search(p.read_text())]
    assert offenders == []


# ------------------------------------------------------------------------------- the snapshot
def test_the_fit_holds_no_solver_and_read_only_arrays():
    fit = quiet("correct ~ x + (1|item) + (1|model)", crossed())
    model = fit._model
    held = list(vars(model).values()) + list(vars(model.design).values())
    assert not any(isinstance(v, (Solver, LaplaceDeviance)) for v in held)
    design = model.design
    for a in (design.k, design.m, design.row_index, design.X.unique_rows, model.u,
              *[t.index for t in design.terms], *[t.Z for t in design.terms]):
        assert not a.flags.writeable
    with pytest.raises(ValueError):
        design.k[0] = 5.0
    assert not fit.optimizer.gradient.flags.writeable and not fit.hessian.flags.writeable


def test_remove_data_keeps_what_does_not_need_the_rows():
    import evalmix.core.errors as err

    d = crossed(8, 400, runs=3)
    formula = "correct ~ model + (1|item) + (1|item:run)"
    fit = quiet(formula, d)
    small = fit.remove_data()
    assert fit.has_data and not small.has_data and small.remove_data() is small
    # the per-row arrays are gone: the pickled fit shrinks by a factor of more than 3
    assert len(pickle.dumps(small)) * 3 < len(pickle.dumps(fit))
    assert small._model.design is None and small._model.data is None
    assert all(t.index.size == 0 for t in small._model.terms)
    pd.testing.assert_series_equal(small.fixef, fit.fixef)
    pd.testing.assert_frame_equal(small.vcov, fit.vcov)
    pd.testing.assert_frame_equal(small.varcorr, fit.varcorr)
    pd.testing.assert_frame_equal(small.ranef(), fit.ranef())
    assert str(small) == str(fit) and small.ngroups == fit.ngroups
    for name, tab in fit.summary().tables.items():
        pd.testing.assert_frame_equal(small.summary().tables[name], tab)
    pd.testing.assert_frame_equal(evalmix.emmeans(small, "model").to_frame(),
                                  evalmix.emmeans(fit, "model").to_frame())
    pd.testing.assert_frame_equal(
        evalmix.contrast(evalmix.emmeans(small, "model"), "pairwise").to_frame(),
        evalmix.contrast(evalmix.emmeans(fit, "model"), "pairwise").to_frame())
    np.testing.assert_array_equal(small.predict(d.head(20)), fit.predict(d.head(20)))
    pd.testing.assert_frame_equal(small.confint().to_frame(), fit.confint().to_frame())
    # what needs the rows says so
    with pytest.raises(err.DataError, match="predict\\(\\) without newdata.*remove_data"):
        small.predict()
    with pytest.raises(err.DataError, match="profile.*remove_data"):
        small.confint("profile")
    with pytest.raises(err.DataError, match="bootmer.*remove_data"):
        small.confint("boot", nsim=2, rng=1)
    with pytest.raises(ValueError, match="weights"):
        evalmix.emmeans(small, "model", weights="proportional")


def test_dropping_rank_deficient_columns_leaves_the_built_design_alone():
    from evalmix.glmm import drop_rank_deficient

    d = crossed(4, 30, runs=2)
    d["x2"] = 2 * d["x"]  # a copy of x: dropped as lme4 drops it
    design = build_design("correct ~ x + x2 + (1|item)", d)
    before = (list(design.fixed.columns), design.X.unique_rows.copy())
    new, dropped = drop_rank_deficient(design)
    assert dropped == ["x2"] and new.fixed.columns == ["(Intercept)", "x"]
    assert new.X.shape == (design.X.shape[0], 2)
    assert list(design.fixed.columns) == before[0]
    np.testing.assert_array_equal(design.X.unique_rows, before[1])
    with pytest.warns(evalmix.FitWarning, match="rank deficient"):
        fit = glmer("correct ~ x + x2 + (1|item)", d)
    assert list(fit.fixef.index) == ["(Intercept)", "x"]


def test_remove_data_on_a_completely_separated_fit():
    d = pd.DataFrame({"item": np.repeat(np.arange(10), 4), "model": np.tile(["a", "b"], 20)})
    d["correct"] = (d["model"] == "b").astype(int)
    fit = quiet("correct ~ model + (1|item)", d)
    small = fit.remove_data()
    assert fit.separation is not None and not small.has_data
    assert str(small) == str(fit)
    notes = small.summary().notes
    assert "optimizer: none (complete separation); not run" in notes
    assert small.fixef["modelb"] == np.inf
