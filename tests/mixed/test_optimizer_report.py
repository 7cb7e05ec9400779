"""One optimizer report and one owner of the convergence checks for every maximum-likelihood engine.

The Hessian condition numbers are R's (tests/reference/optimizer_report.R: lme4's
``optinfo$derivs$Hessian`` over theta for lmer, over (theta, beta) for glmer, ordinal's
``Hessian`` for clmm) to 1e-3 relative: the finite-difference Hessians agree to that.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.mixed.convergence import (OptimizerReport, check_convergence, convergence_check,
                                       gradient_report, hessian_condition)

REF_DIR = Path(__file__).parents[1] / "reference"
R = json.loads((REF_DIR / "optimizer_report.json").read_text())
SLEEP = pd.read_csv(REF_DIR / "lmer_sleepstudy.csv", dtype={"Subject": str})
CBPP = pd.read_csv(REF_DIR / "engine_cbpp.csv", dtype={"herd": str, "period": str})
WINE = pd.read_csv(REF_DIR / "clmm_wine.csv")
BETA = pd.read_csv(REF_DIR / "verbs_beta.csv")


@pytest.fixture(scope="module")
def fits() -> dict[str, evalmix.MixedResult]:
    return {"lmer": evalmix.lmer("Reaction ~ Days + (Days|Subject)", SLEEP),
            "glmer": evalmix.glmer("cbind(incidence, size - incidence) ~ period + (1|herd)", CBPP),
            "clmm": evalmix.clmm("rating ~ temp + contact + (1|judge)", WINE),
            "glmmtmb": evalmix.glmmtmb("score ~ arm + (1|item)", BETA, "beta")}


def test_every_engine_reports_with_the_same_fields(fits):
    names = [f.name for f in dataclasses.fields(OptimizerReport)]
    for engine, fit in fits.items():
        rep = fit.optimizer
        assert type(rep) is OptimizerReport, engine
        assert [f.name for f in dataclasses.fields(rep)] == names
        assert rep.converged and rep.checks == () and fit.converged, engine
        assert rep.iterations >= 1 and rep.feval >= rep.iterations, engine
        assert 0 <= rep.max_grad < 2e-3 and rep.seconds > 0, engine
        line = rep.describe()
        assert line.startswith(f"optimizer: {rep.optimizer}; ") and "function evaluations" in line
        assert json.loads(json.dumps(rep.to_dict()))["feval"] == rep.feval


@pytest.mark.parametrize("engine", ["lmer", "glmer", "clmm"])
def test_hessian_condition_is_r_s(fits, engine):
    assert fits[engine].optimizer.hessian_cond == pytest.approx(R[engine]["cond_h"], rel=1e-3)


def test_every_fit_keeps_ordinal_s_names(fits):
    for fit in fits.values():  # clmm's and glmmtmb's earlier fields, now every fit's
        assert fit.niter == fit.optimizer.iterations and fit.max_grad == fit.optimizer.max_grad
    assert fits["clmm"].cond_h == fits["clmm"].optimizer.hessian_cond


def test_old_spellings_warn_and_answer(fits):
    glmer, lmer = fits["glmer"].optimizer, fits["lmer"].optimizer
    with pytest.warns(DeprecationWarning, match=r"\.feval"):
        assert glmer.deviance_evaluations == glmer.feval
    with pytest.warns(DeprecationWarning, match=r"\.optimizer"):
        assert glmer.method == glmer.optimizer
    with pytest.warns(DeprecationWarning, match=r"\.iterations"):
        assert glmer.outer_iterations == glmer.iterations
    with pytest.warns(DeprecationWarning, match=r"\.max_grad"):
        assert glmer.max_abs_gradient == glmer.max_grad
    with pytest.warns(DeprecationWarning, match=r"fit\.optimizer\.feval"):
        assert lmer["evaluations"] == lmer.feval
    with pytest.warns(DeprecationWarning):
        assert lmer["converged"] is True
    with pytest.raises(KeyError), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lmer["nothing"]
    with pytest.raises(AttributeError, match="nothing"):
        lmer.nothing  # noqa: B018


def test_lme4_checks_name_the_check_and_the_value():
    # scaled gradient: H = diag(1, 4) scales 0.05 to 0.05 and 0.01 to 0.005, both above 0.002
    msgs = check_convergence(np.array([0.05, 0.01]), np.diag([1.0, 4.0]))
    assert msgs == ("Model failed to converge with max|grad| = 0.05 (tol = 0.002, component 1)",)
    # a looser tolerance passes it; a parameter held at its bound is not checked
    assert check_convergence(np.array([0.05, 0.01]), np.diag([1.0, 4.0]), grad_tol=0.1) == ()
    assert check_convergence(np.array([0.05, 0.0]), np.diag([1.0, 4.0]), np.array([False, True])) == ()
    # min(|scaled|, |raw|): a large curvature scales a raw 0.01 down to 0.001
    assert check_convergence(np.array([0.01]), np.array([[100.0]])) == ()
    (msg,) = check_convergence(np.zeros(2), np.diag([1.0, 1e-8]), hess_tol=1e-6)
    assert "large eigenvalue ratio" in msg and "eigenvalue ratio 1e-08, tol = 1e-06" in msg
    assert check_convergence(np.zeros(2), np.diag([1.0, 1e-8]), hess_tol=1e-9) == ()
    (msg,) = check_convergence(np.zeros(2), np.diag([1.0, -1.0]))
    assert msg == "Model failed to converge: degenerate Hessian with 1 negative eigenvalues"
    assert check_convergence(np.ones(2), None) == ()


def test_ordinal_check_takes_its_tolerances():
    H = np.diag([4.0, 2.0])
    assert convergence_check(H, np.array([0.0, 0.01]))[0] == (-1,)
    assert convergence_check(H, np.array([0.0, 0.01]), grad_tol=0.1)[0] == (1,)  # imprecise, not failed
    code, (msg,) = convergence_check(H, np.array([0.0, 2e-4]))
    assert code == (1,) and msg == "some parameters may have only 4 correct decimals (Newton step 0.0001, tol = 1e-06)"
    assert convergence_check(H, np.array([0.0, 2e-4]), rel_tol=1e-3) == ((0,), ("successful convergence",))


def test_gradient_report_and_condition():
    from scipy.optimize import OptimizeResult

    res = OptimizeResult(nit=4, nfev=6, message=b"CONVERGENCE")
    rep = gradient_report(res, np.array([2e-4, -1e-4]), optimizer="L-BFGS-B", grad_tol=1e-3,
                          extra_iterations=2)
    assert (rep.converged, rep.iterations, rep.feval, rep.message) == (True, 6, 8, "CONVERGENCE")
    assert rep.max_grad == 2e-4 and not rep.gradient.flags.writeable
    bad = gradient_report(res, np.array([np.nan]), optimizer="L-BFGS-B", grad_tol=1e-3)
    assert not bad.converged and bad.checks
    assert hessian_condition(np.diag([8.0, 2.0])) == 4.0
    assert hessian_condition(np.array([[np.inf]])) == np.inf and np.isnan(hessian_condition(None))
