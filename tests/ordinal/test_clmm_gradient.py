"""The exact gradient of evalmix.clmm's Laplace objective against central differences.

On ordinal's wine data (one term, two crossed terms; logit and probit; flexible and equidistant
thresholds) and the simulated judge design of tests/reference (nested item and item:run), at the
start values with the SDs moved: the gradient over ordinal's parameters and over the unconstrained
ones the optimiser sees, against central differences of the objective (step 1e-6).  Tolerance:
1e-6 absolute plus 1e-6 relative, about the accuracy of the differences.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.mixed.numdiff import central_gradient
from evalmix.ordinal.model import OrdinalModel

REF_DIR = Path(__file__).parents[1] / "reference"
WINE = pd.read_csv(REF_DIR / "clmm_wine.csv")
JUDGE = pd.read_csv(REF_DIR / "clmm_judge.csv")
CASES = {
    "wine_logit": ("rating ~ temp + contact + (1|judge)", WINE, "logit", "flexible"),
    "wine_probit": ("rating ~ temp + contact + (1|judge)", WINE, "probit", "flexible"),
    "wine_equidistant": ("rating ~ temp + contact + (1|judge)", WINE, "logit", "equidistant"),
    "wine_crossed": ("rating ~ temp + contact + (1|judge) + (1|bottle)", WINE, "logit", "flexible"),
    "judge_nested": ("rating ~ model + (1|item) + (1|item:run)", JUDGE, "logit", "flexible"),
    "judge_nested_probit": ("rating ~ model + (1|item) + (1|item:run)", JUDGE, "probit", "equidistant"),
}


class _Built(Exception):
    pass


def _model(name: str, monkeypatch: pytest.MonkeyPatch) -> OrdinalModel:
    """The OrdinalModel that evalmix.clmm builds for the case (stopped before the fit)."""
    formula, data, link, threshold = CASES[name]
    built: list[OrdinalModel] = []

    def capture(self: OrdinalModel, maxiter: int = 1000) -> None:
        built.append(self)
        raise _Built

    with monkeypatch.context() as m:
        m.setattr(OrdinalModel, "fit", capture)
        with pytest.raises(_Built):
            evalmix.clmm(formula, data, link=link, threshold=threshold)
    return built[0]


@pytest.mark.parametrize("name", list(CASES))
def test_exact_gradient_against_differences(name, monkeypatch):
    model = _model(name, monkeypatch)
    rng = np.random.default_rng(2)
    x = model.start()
    x[model.n_theta:] += rng.normal(0.0, 0.3, len(x) - model.n_theta)
    model.nla(x)
    u0 = model.u.copy()

    def restarted(f):
        def g(z):
            model.u = u0.copy()
            return f(z)
        return g

    value, g = model.nla_grad(x)
    assert value == pytest.approx(restarted(model.nla)(x), rel=1e-12)
    np.testing.assert_allclose(g, central_gradient(restarted(model.nla), x, 1e-6), rtol=1e-6, atol=1e-6)
    free = model.to_free(x)
    model.u = u0.copy()
    _, g_free = model._free_objective_grad(free)
    np.testing.assert_allclose(g_free, central_gradient(restarted(model._free_objective), free, 1e-6),
                               rtol=1e-6, atol=1e-6)


def test_hessian_by_gradient_differences(monkeypatch):
    """The Hessian from differences of the exact gradient against ordinal's second differences
    of the objective (what the SEs used before): equal to the accuracy of the latter."""
    from evalmix import intercepts

    model = _model("judge_nested", monkeypatch)
    par, *_ = model.fit()
    which = model.interior(par)
    H = model.hessian(par, which)
    # the sparse LU: no selected inverse, so the second differences of the objective
    monkeypatch.setattr(intercepts, "NESTED_FAST", False)
    monkeypatch.setattr(intercepts, "DENSE_MAX", 1)
    lu = _model("judge_nested", monkeypatch)
    lu.u = model.u.copy()
    H_fd = lu.hessian(par, which)
    assert lu._mode is not None and lu._mode.rows_inv is None
    np.testing.assert_allclose(H, H_fd, rtol=1e-3, atol=1e-2)
