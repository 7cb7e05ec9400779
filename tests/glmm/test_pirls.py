"""The PIRLS of the GLMM engine (``LaplaceDeviance.run_pirls``, on the shared mode-finding loop)
and its row kernels.

The lme4-parity contract of the loop (Laplace deviance, lme4's second-stage deviance function and
iteration counts, ``nAGQ = 0``) is tested against R in test_glmm_parity.py, test_glmm.py and
test_glmm_control.py; here: the kernels agree with each other and with the closed forms, each
stopping rule stops where it says, and the limits come from the control.
"""

from __future__ import annotations

import inspect
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

from evalmix.glmm import GlmerControl, build_design, build_deviance
from evalmix.glmm.deviance import LaplaceDeviance, NumpyRows, RowKernel, row_kernel, saturated_deviance
from evalmix.simulate import glmm_runs

REF = Path(__file__).parents[1] / "reference"


def _rows(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    m = rng.integers(1, 6, n).astype(float)
    k = np.floor(rng.random(n) * (m + 1))
    eta = rng.normal(0.0, 3.0, n)
    eta[:4] = [-40.0, 40.0, 0.0, -1e-9]  # the tails and both sides of 0
    zd = rng.normal(0.0, 0.5, n)
    return k, m, eta, zd


def test_numpy_kernel_is_the_closed_form_for_every_link():
    k, m, eta, zd = _rows(500, 1)
    mu = np.empty_like(eta)
    logit = NumpyRows(k, m, "logit")
    dev = logit.deviance_mu_into(eta, mu)
    assert dev == pytest.approx(2.0 * np.sum(m * np.logaddexp(0.0, eta) - k * eta), rel=1e-13)
    np.testing.assert_allclose(mu, 1.0 / (1.0 + np.exp(-eta)), rtol=1e-14)
    score, w = np.empty_like(eta), np.empty_like(eta)
    logit.score_weights_into(eta, mu, score, w)
    np.testing.assert_allclose(score, k - m * mu, rtol=1e-14)
    np.testing.assert_allclose(w, m * mu * (1 - mu), rtol=1e-14)
    e = np.clip(eta, -5.0, 5.0)  # probit: the tails are computed asymptotically (links.py)
    probit = NumpyRows(k, m, "probit")
    dev = probit.deviance_mu_into(e, mu)
    expect = -2.0 * np.sum(k * norm.logcdf(e) + (m - k) * norm.logsf(e))
    assert dev == pytest.approx(expect, rel=1e-12)
    probit.score_weights_into(e, mu, score, w)
    d, p = norm.pdf(e), norm.cdf(e)
    np.testing.assert_allclose(w, m * d**2 / (p * (1 - p)), rtol=1e-8)
    np.testing.assert_allclose(score, (k - m * p) * d / (p * (1 - p)), rtol=1e-8, atol=1e-12)


@pytest.mark.parametrize("link", ["logit", "cloglog"])
def test_a_step_taken_in_place_is_the_trial(link):
    """``advance`` moves eta in place to ``eta + step zd`` and returns the deviance the trial
    summed there, to the bit (the step halving compares the two)."""
    k, m, eta, zd = _rows(300, 2)
    rows = NumpyRows(k, m, link)
    trial = rows.trial_deviance(eta, zd, 0.25)
    moved, mu, score, w = eta.copy(), np.empty_like(eta), np.empty_like(eta), np.empty_like(eta)
    assert rows.advance(moved, zd, 0.25, mu, score, w) == trial
    np.testing.assert_array_equal(moved, eta + 0.25 * zd)
    mu0, s0, w0 = np.empty_like(eta), np.empty_like(eta), np.empty_like(eta)
    assert rows.deviance_mu_into(eta + 0.25 * zd, mu0) == trial
    rows.score_weights_into(moved, mu0, s0, w0)  # the next iteration's, from the same pass
    for a, b in [(mu, mu0), (score, s0), (w, w0)]:
        np.testing.assert_array_equal(a, b)


def test_compiled_kernel_gives_the_numpy_kernel():
    from evalmix.glmm import _logit_rows

    k, m, eta, zd = _rows(2000, 3)
    plain = row_kernel(k, m, "logit")
    assert isinstance(plain, NumpyRows) and not plain.compiled
    fast = row_kernel(k, m, "logit", GlmerControl(compiled_rows_min=1))
    assert isinstance(fast, RowKernel) and fast.compiled == _logit_rows.available()
    assert isinstance(row_kernel(k, m, "probit", GlmerControl(compiled_rows_min=1)), NumpyRows)
    mu0, mu1 = np.empty_like(eta), np.empty_like(eta)
    assert fast.deviance_mu_into(eta, mu1) == pytest.approx(plain.deviance_mu_into(eta, mu0),
                                                            rel=1e-13)
    np.testing.assert_allclose(mu1, mu0, rtol=1e-14, atol=0)
    s0, w0, s1, w1 = (np.empty_like(eta) for _ in range(4))
    plain.score_weights_into(eta, mu0, s0, w0)
    fast.score_weights_into(eta, mu1, s1, w1)
    np.testing.assert_allclose(s1, s0, rtol=1e-12, atol=1e-15)  # fused multiply-adds
    np.testing.assert_allclose(w1, w0, rtol=1e-12, atol=1e-15)
    assert fast.trial_deviance(eta, zd, 0.5) == pytest.approx(plain.trial_deviance(eta, zd, 0.5),
                                                              rel=1e-13)
    e0, e1 = eta.copy(), eta.copy()
    assert fast.advance(e1, zd, 0.5, mu1, s1, w1) == pytest.approx(
        plain.advance(e0, zd, 0.5, mu0, s0, w0), rel=1e-13)
    np.testing.assert_array_equal(e1, e0)
    np.testing.assert_allclose(mu1, mu0, rtol=1e-14, atol=0)
    np.testing.assert_allclose(s1, s0, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(w1, w0, rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("n", [999, 1000, 5001, 200_000])
def test_compiled_kernel_on_one_trial_rows(n):
    """One-trial rows sum their ``log(1 + e^-|eta|)`` as logs of products of BLOCK rows: the
    deviance agrees with the closed form to rounding, over partial and whole blocks, with the
    tails (|eta| = 40, 700) and several-trial rows mixed in."""
    from evalmix.glmm import _logit_rows

    if not _logit_rows.available():
        pytest.skip("numba is not installed: there is no compiled kernel to compare")
    rng = np.random.default_rng(n)
    eta = rng.normal(0.0, 2.5, n)
    eta[:6] = [-40.0, 40.0, 700.0, -700.0, 0.0, -1e-9]
    m = np.ones(n)
    m[7::97] = 4.0  # pooled rows between the one-trial rows
    k = np.floor(rng.random(n) * (m + 1))
    zd = rng.normal(0.0, 0.5, n)
    plain, fast = NumpyRows(k, m), row_kernel(k, m, "logit", GlmerControl(compiled_rows_min=1))
    mu0, mu1 = np.empty(n), np.empty(n)
    # the closed form with math.fsum: the exact sum of the rounded terms
    sp_ = np.maximum(eta, 0.0) + np.log1p(np.exp(-np.abs(eta)))
    exact = 2.0 * math.fsum(np.concatenate([m * sp_, -k * eta]))
    assert fast.deviance_mu_into(eta, mu1) == pytest.approx(exact, rel=1e-13)
    assert plain.deviance_mu_into(eta, mu0) == pytest.approx(exact, rel=1e-13)
    np.testing.assert_allclose(mu1, mu0, rtol=1e-14, atol=0)
    # the step halving compares the trial with what advance then takes: the same bits
    trial = fast.trial_deviance(eta, zd, 0.25)
    moved, s1, w1 = eta.copy(), np.empty(n), np.empty(n)
    assert fast.advance(moved, zd, 0.25, mu1, s1, w1) == trial
    assert trial == pytest.approx(plain.trial_deviance(eta, zd, 0.25), rel=1e-13)


def test_there_is_one_pirls_loop():
    """PIRLS iterates on the mode-finding loop every engine shares: ``run_pirls`` hands its
    rules to ``evalmix.mixed.modes.find_modes`` (no loop of its own), and the Laplace modes,
    lme4's replay and the joint mode of nAGQ = 0 call it."""
    from evalmix.glmm import deviance

    methods = {name: inspect.getsource(f) for name, f in vars(LaplaceDeviance).items()
               if inspect.isfunction(f)}
    assert not [name for name, src in methods.items() if "for it in range" in src]
    assert "find_modes(problem, maxit)" in methods["run_pirls"]
    for rule in (deviance._NewtonPirls, deviance._Lme4Pirls):
        assert "for it in range" not in inspect.getsource(rule)
    for caller in ("pirls", "lme4_pirls_state", "joint_mode"):
        assert "self.run_pirls(" in methods[caller]


@pytest.fixture(scope="module")
def nested():
    design = build_design("correct ~ model + (1|item) + (1|item:run)", glmm_runs(4, 60, 3, rng=5))
    return design, build_deviance(design)


def test_newton_rule_stops_at_the_mode(nested):
    """At the returned modes the gradient of the penalised deviance over u, ``A' score - u``,
    is zero to rounding, and the weights and mu are the final linear predictor's."""
    design, ld = nested
    theta, beta = np.array([0.7, 1.3]), np.array([0.2, -0.3, 0.1, 0.4])
    ev = ld.pirls(theta, beta)
    s = ld.solver
    score, w = ld.working(ev.eta, ev.mu)
    # pirls_tol (1e-15 relative Newton decrement) leaves gradients of about 1e-6 here
    np.testing.assert_allclose(s.zlt(score) - ev.u, 0.0, atol=1e-5)
    np.testing.assert_allclose(ev.w, w, rtol=1e-15)
    np.testing.assert_allclose(ev.eta, design.X.dot(beta) + s.zl(ev.u), rtol=1e-12, atol=1e-12)
    assert ev.iterations <= ld.control.pirls_maxit


def test_joint_rule_stops_at_the_joint_mode(nested):
    """With beta in PIRLS (nAGQ = 0) both gradients vanish: over u and over beta (``X' score``)."""
    design, ld = nested
    dev, beta, u, eta = ld.joint_mode(np.array([0.7, 1.3]), np.zeros(4))
    score, _ = ld.working(eta, ld.kernel_mu(eta)[1])
    # joint_tol (1e-12 relative Newton decrement) leaves gradients of about 1e-6 here
    np.testing.assert_allclose(ld.solver.zlt(score) - u, 0.0, atol=1e-5)
    np.testing.assert_allclose(design.X.tdot(score), 0.0, atol=1e-5)
    assert np.isfinite(dev)


def test_lme4_rule_records_what_it_stopped_on(nested):
    """lme4's rule never stops at the first iteration, and stops at the first relative change
    below tolPwrss; a tighter tolerance or a lower iteration limit from the control is obeyed."""
    design, ld = nested
    theta, beta = np.array([0.7, 1.3]), np.array([0.2, -0.3, 0.1, 0.4])
    start = design.X.dot(beta) * 0.8
    st = ld.lme4_pirls_state(theta, beta, start)
    assert st.converged and len(st.changes) == st.iterations >= 2
    assert st.changes[0] == np.inf and st.changes[-1] < ld.control.tol_pwrss
    assert all(c >= ld.control.tol_pwrss for c in st.changes[:-1])
    assert ld.lme4_pirls(theta, beta, start) == (st.pdev + st.logdet, st.iterations)
    short = LaplaceDeviance(design.X, design.k, design.m, design.terms,
                            control=GlmerControl(pwrss_maxit=1))
    one = short.lme4_pirls_state(theta, beta, start)
    assert one.iterations == 1 and not one.converged


def test_saturated_deviance_is_computed_once_by_build_deviance():
    c = pd.read_csv(REF / "glmm_counts.csv")
    design = build_design("cbind(k, n - k) ~ model + (1|item)", c)
    ld = build_deviance(design)
    assert ld.saturated < 0  # 2 log L of the saturated model
    assert ld.saturated == saturated_deviance(design.k_rows, design.m_rows)
    k, m = design.k_rows, design.m_rows
    p = k / m
    closed = 2.0 * np.sum(np.where(k > 0, k * np.log(np.where(k > 0, p, 1.0)), 0.0)
                          + np.where(k < m, (m - k) * np.log(np.where(k < m, 1.0 - p, 1.0)), 0.0))
    assert ld.saturated == pytest.approx(closed, rel=1e-12)


@pytest.mark.parametrize("field", ["pwrss_halvings", "lme4_count_margin", "inner_refresh",
                                   "stall_evals", "stall_tol"])
def test_new_limits_are_validated_control_fields(field):
    with pytest.raises(ValueError, match=f"GlmerControl.{field}"):
        GlmerControl(**{field: 0})


def test_quadrature_devfun_on_counts_is_the_fits_deviance():
    """``devfun_only`` with nAGQ > 1 on k-of-n rows: ``f`` at the estimates is ``fit.deviance``
    (the saturated model's term added with the sign glmer adds it; it was subtracted before,
    1,574 too high on these counts)."""
    from evalmix import glmer

    c = pd.read_csv(REF / "glmm_counts.csv")
    fit = glmer("cbind(k, n - k) ~ model + (1|item)", c, nAGQ=5)
    f = glmer("cbind(k, n - k) ~ model + (1|item)", c, nAGQ=5, devfun_only=True)
    x = np.concatenate([fit.theta.to_numpy(), fit.fixef.to_numpy()])
    assert f(x) == pytest.approx(fit.deviance, rel=1e-10)
    assert fit.deviance == pytest.approx(-2.0 * fit.loglik, rel=1e-12)


def test_lbfgsb_stops_at_the_best_point_once_the_objective_stalls():
    """An objective whose values carry noise of 1e-9 and its gradient noise of 1e-5 (as the
    deviance carries its rounding and the profiled beta its stopping point): near the minimum the line search cannot find a
    decrease, and the best point is returned once ``stall_evals`` evaluations in a row have not
    improved it."""
    from evalmix.glmm.optimize import lbfgsb

    calls = []

    def value(x):
        return float(np.sum((x - 1.0) ** 2) + 1e-9 * np.sin(1e7 * x).sum())

    def fg(x):
        calls.append(x.copy())
        return value(x), 2.0 * (x - 1.0) + 1e-5 * np.cos(1e6 * x)

    ctl = GlmerControl(stall_evals=4)
    res = lbfgsb(fg, np.array([3.0, -2.0]), bounds=[(None, None)] * 2,
                 options={"maxiter": 500, "ftol": 1e-15, "gtol": 1e-12}, control=ctl)
    assert res.success and "stopped decreasing" in res.message
    np.testing.assert_allclose(res.x, 1.0, atol=1e-4)  # the gradient's noise / curvature
    assert res.fun == value(res.x) == min(value(x) for x in calls)
    assert len(calls) < 14  # scipy's L-BFGS-B alone: 14 evaluations on this function


def test_stopping_at_a_stall_gives_the_fit_of_a_search_to_the_end():
    """On 9,000 rows L-BFGS-B's line search reaches the deviance's noise floor: stopping after
    five evaluations without progress gives the fit of the search run until scipy gives up, to
    1e-10 in the log-likelihood and 1e-6 in theta and the standard errors, in fewer
    evaluations."""
    from evalmix import glmer

    d = glmm_runs(10, 300, 3, rng=6)
    formula = "correct ~ model + (1|item) + (1|item:run)"
    fast = glmer(formula, d)
    slow = glmer(formula, d, control=GlmerControl(stall_evals=10**9))
    assert fast.loglik == pytest.approx(slow.loglik, rel=1e-10)
    np.testing.assert_allclose(fast.theta.to_numpy(), slow.theta.to_numpy(), rtol=1e-6)
    np.testing.assert_allclose(np.sqrt(np.diag(fast.vcov.to_numpy())),
                               np.sqrt(np.diag(slow.vcov.to_numpy())), rtol=1e-6)
    assert fast.optimizer.feval < slow.optimizer.feval
    assert fast.converged and slow.converged


@pytest.mark.parametrize("formula", ["correct ~ model + (1|item) + (1|item:run)",
                                     "correct ~ model + (1|item:run)"])
def test_early_stop_term_from_level_sums_is_the_row_sum(formula):
    """lme4's early-stop term of the Hessian, ``J' diag(c) J`` with ``J = d eta~ / d(theta, beta)``
    by forward differences, formed from sums per fine level and per pattern (nested solver) is
    the sum over rows of the n x P Jacobian."""
    from evalmix.glmm.deviance import NestedSolver
    from evalmix.glmm.optimize import hessian

    design = build_design(formula, glmm_runs(4, 60, 3, rng=5))
    ld = build_deviance(design)
    assert isinstance(ld.solver, NestedSolver)
    nt = design.theta_start.size
    ev = ld.pirls(np.array([0.7, 1.3])[:nt], np.array([0.2, -0.3, 0.1, 0.4]))
    h = ld.control.hessian_step
    term = hessian(ld, ev) - hessian(ld, ev, lme4_pirls=False)
    cols = []
    for j in range(nt + 4):
        th, be, u0 = ev.theta.copy(), ev.beta.copy(), ev.u
        if j < nt:
            th[j] += h
        else:
            e = np.zeros(4)
            e[j - nt] = h
            be, u0 = be + e, ev.u + ld.du_dbeta_columns(ev)[:, j - nt] * h
        cols.append((ld.pirls(th, be, u0).eta - ev.eta) / h)
    J = np.column_stack(cols)
    c = ld.one_step_weights(ev)
    np.testing.assert_allclose(term, J.T @ (c[:, None] * J), rtol=1e-7, atol=1e-9 * np.abs(term).max())


@pytest.mark.parametrize("formula", ["correct ~ model + (1|item) + (1|item:run)",
                                     "correct ~ 1 + (1|item:run)",
                                     "correct ~ model + x + (1|item) + (1|item:run)"])
def test_compiled_gradient_sums_give_the_numpy_gradients(formula):
    """With compiled rows and nested intercepts the exact gradients come from two fused passes
    (sums per fine level and per pattern, or the rows of ``rho`` for a dense X): the same
    gradients as the NumPy passes, also when theta's is asked for after beta's."""
    runs = glmm_runs(4, 60, 3, rng=5)
    runs["x"] = np.random.default_rng(1).normal(size=len(runs))  # X kept dense
    design = build_design(formula, runs)
    nt = design.theta_start.size
    theta, beta = np.array([0.7, 1.3])[:nt], np.linspace(0.2, -0.3, design.X.shape[1])
    out = []
    for ctl in (GlmerControl(), GlmerControl(compiled_rows_min=1)):
        ld = LaplaceDeviance(design.X, design.k, design.m, design.terms, control=ctl)
        ev = ld.pirls(theta, beta)
        gb = ld.grad_beta(ev)
        gt, gb2 = ld.grads(ev)  # theta's from the cached sums
        np.testing.assert_array_equal(gb2, gb)
        assert gt is not None
        out.append((gt, gb))
    (gt0, gb0), (gt1, gb1) = out
    np.testing.assert_allclose(gt1, gt0, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(gb1, gb0, rtol=1e-9, atol=1e-9)


@pytest.mark.parametrize("formula", ["correct ~ model + (1|item) + (1|item:run)",
                                     "correct ~ model + (1|item:run)"])
def test_compiled_level_sums_pirls_gives_the_numpy_modes(formula):
    """With compiled rows and nested intercepts each PIRLS pass also sums the weights and scores
    per fine level and steps along one value per level: the modes, deviance and iterations of
    the NumPy loop, also where a far start makes PIRLS halve its steps, and with beta joining
    the modes."""
    from evalmix.glmm import _logit_rows

    design = build_design(formula, glmm_runs(4, 60, 3, rng=5))
    nt = design.theta_start.size
    theta, beta = np.array([0.7, 1.3])[:nt], np.array([0.2, -0.3, 0.1, 0.4])
    plain = LaplaceDeviance(design.X, design.k, design.m, design.terms)
    fast = LaplaceDeviance(design.X, design.k, design.m, design.terms,
                           control=GlmerControl(compiled_rows_min=1))
    trials = []
    if _logit_rows.available():
        real = fast.rows.trial_levels  # type: ignore[attr-defined]
        fast.rows.trial_levels = lambda *a: trials.append(a[3]) or real(*a)  # type: ignore[attr-defined]
    for u0 in (None, np.full(plain.q, 12.0)):  # the far start halves steps with two terms
        e0, e1 = plain.pirls(theta, beta, u0), fast.pirls(theta, beta, u0)
        assert e1.iterations == e0.iterations
        assert e1.dev == pytest.approx(e0.dev, rel=1e-13)
        np.testing.assert_allclose(e1.u, e0.u, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(e1.w, e0.w, rtol=1e-10, atol=1e-15)
        np.testing.assert_allclose(plain.grads(e0)[0], fast.grads(e1)[0], rtol=1e-9)
    assert len(trials) == (2 if nt == 2 and _logit_rows.available() else 0)
    # beta joining the modes (nAGQ = 0): the per-pattern sums give NumPy's joint mode
    d0, b0, u0, eta0 = plain.joint_mode(theta, np.zeros(4))
    d1, b1, u1, eta1 = fast.joint_mode(theta, np.zeros(4))
    assert d1 == pytest.approx(d0, rel=1e-13)
    np.testing.assert_allclose(b1, b0, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(u1, u0, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(eta1, eta0, rtol=1e-10, atol=1e-12)
    # and its theta gradient from the fused sums
    np.testing.assert_allclose(fast.joint_grad_theta(), plain.joint_grad_theta(), rtol=1e-9)


@pytest.mark.parametrize("formula", ["correct ~ model + (1|item) + (1|item:run)",
                                     "correct ~ model + (1|item) + (1|run)"])
def test_mode_derivatives_of_all_columns_are_those_of_each(formula):
    """``du_dbeta_columns`` (one ``A'WX`` for every column, the Hessian's warm starts) is
    ``du_dbeta`` along each unit vector, for the nested and the general solvers."""
    design = build_design(formula, glmm_runs(4, 30, 3, rng=5))
    ld = build_deviance(design)
    ev = ld.pirls(np.array([0.7, 1.3]), np.array([0.2, -0.3, 0.1, 0.4]))
    each = np.column_stack([ld.du_dbeta(ev, e) for e in np.eye(4)])
    np.testing.assert_allclose(ld.du_dbeta_columns(ev), each, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("order", [["model", "item", "run"], ["item", "run", "model"]])
def test_joint_mode_sums_in_either_row_order(order):
    """The joint mode's table of weights per fine level and pattern is laid out along the order
    of the rows (pattern-major for a table sorted by model, level-major for one sorted by item):
    either gives NumPy's joint mode and its theta gradient."""
    runs = glmm_runs(4, 60, 3, rng=5).sort_values(order).reset_index(drop=True)
    design = build_design("correct ~ model + (1|item) + (1|item:run)", runs)
    theta = np.array([0.7, 1.3])
    plain = LaplaceDeviance(design.X, design.k, design.m, design.terms)
    fast = LaplaceDeviance(design.X, design.k, design.m, design.terms,
                           control=GlmerControl(compiled_rows_min=1))
    d0, b0, u0, _ = plain.joint_mode(theta, np.zeros(4))
    d1, b1, u1, _ = fast.joint_mode(theta, np.zeros(4))
    assert d1 == pytest.approx(d0, rel=1e-13)
    np.testing.assert_allclose(b1, b0, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(u1, u0, rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(fast.joint_grad_theta(), plain.joint_grad_theta(), rtol=1e-9)
