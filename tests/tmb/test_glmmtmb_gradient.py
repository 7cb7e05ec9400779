"""The exact gradient of evalmix.glmmtmb's Laplace objective against central differences.

``row_derivatives`` (the third derivative over the linear predictor and the derivatives over
log phi) is checked against differences of the lower derivatives; the gradient of minus the
Laplace log-likelihood against ``gradient_fd`` (central differences of the objective, step 1e-6)
for the beta, beta-binomial and binomial families on one term, two nested terms (the diagonal
Schur complement and, with it switched off, the dense one) and crossed terms.  Tolerance: 1e-6
absolute plus 1e-6 relative, about the accuracy of the differences themselves.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalmix import intercepts
from evalmix.tmb import model as tmb_model
from evalmix.tmb.design import build_tmb_design
from evalmix.tmb.family import Response, row_derivatives, row_terms

SIM = pd.read_csv(Path(__file__).parents[1] / "reference" / "glmmtmb_sim.csv")
BB = "cbind(k, n - k)"
CASES = {
    "beta": ("score ~ model + (1|item)", "beta"),
    "beta_nested": ("score ~ model + (1|item) + (1|item:run)", "beta"),
    "bb": (f"{BB} ~ model + (1|item)", "betabinomial"),
    "bb_nested": (f"{BB} ~ model + (1|item) + (1|item:run)", "betabinomial"),
    "bb_crossed": (f"{BB} ~ 1 + (1|model) + (1|item)", "betabinomial"),
    "beta_three": ("score ~ 1 + (1|model) + (1|item) + (1|item:run)", "beta"),
    "binomial": (f"{BB} ~ model + (1|item)", "binomial"),
}


def _model(name: str) -> tmb_model.LaplaceModel:
    formula, family = CASES[name]
    d = build_tmb_design(formula, SIM, family=family)
    return tmb_model.LaplaceModel(d.response, d.X, d.offset,
                                  [np.asarray(t.index, dtype=np.int64) for t in d.terms],
                                  [t.nl for t in d.terms])


def _responses() -> list[Response]:
    rng = np.random.default_rng(3)
    return [Response.beta(rng.uniform(0.02, 0.98, 40)),
            Response.counts("betabinomial", rng.integers(0, 11, 40).astype(float), np.full(40, 10.0)),
            # past SUM_TRIALS_MAX trials: the log-gamma form
            Response.counts("betabinomial", rng.integers(0, 601, 40).astype(float), np.full(40, 600.0)),
            Response.counts("binomial", rng.integers(0, 4, 40).astype(float), np.full(40, 3.0))]


@pytest.mark.parametrize("resp", _responses(), ids=["beta", "bb", "bb_large_n", "binomial"])
@pytest.mark.parametrize("log_phi", [-1.0, 0.7, 3.0])
def test_row_derivatives_against_differences(resp, log_phi):
    eta = np.random.default_rng(4).normal(0.0, 1.5, 40)
    d = row_derivatives(resp, eta, log_phi)
    ll, d1, d2 = row_terms(resp, eta, log_phi)
    np.testing.assert_allclose(d.ll, ll, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(d.d1, d1, rtol=1e-13, atol=1e-12)
    np.testing.assert_allclose(d.d2, d2, rtol=1e-13, atol=1e-12)
    h = 1e-5
    up, down = row_derivatives(resp, eta + h, log_phi), row_derivatives(resp, eta - h, log_phi)
    np.testing.assert_allclose(d.d3, (up.d2 - down.d2) / (2 * h), rtol=1e-6, atol=1e-6)
    up, down = row_derivatives(resp, eta, log_phi + h), row_derivatives(resp, eta, log_phi - h)
    for name in ("ll", "d1", "d2"):
        fd = (getattr(up, name) - getattr(down, name)) / (2 * h)
        # ll of 600 trials is in the hundreds: its difference keeps about 1e-8 of it
        np.testing.assert_allclose(getattr(d, name + "_phi"), fd, rtol=1e-6, atol=1e-6 * max(1.0, np.abs(ll).max()))


@pytest.mark.parametrize("nested_fast", [True, False])
@pytest.mark.parametrize("name", list(CASES))
def test_exact_gradient_against_differences(name, nested_fast, monkeypatch):
    monkeypatch.setattr(intercepts, "NESTED_FAST", nested_fast)
    m = _model(name)
    rng = np.random.default_rng(5)
    for shift in (0.3, 1.0):  # near the start and farther out (a small phi, large SDs)
        x = m.start() + rng.normal(0.0, shift, m.n_par)
        m.nll(x)
        value, g = m.nll_grad(x)
        assert value == pytest.approx(m.nll(x), rel=1e-12)
        fd = m.gradient_fd(x)
        np.testing.assert_allclose(g, fd, rtol=1e-6, atol=1e-6)


def test_exact_gradient_at_the_estimates():
    """At the optimum every component is ~0: the absolute agreement is what counts there."""
    m = _model("bb_nested")
    par, *_ = m.fit()
    _, g = m.nll_grad(par)
    np.testing.assert_allclose(g, m.gradient_fd(par), atol=1e-6)
    assert np.max(np.abs(g)) < 1e-5


def test_factorisations_give_the_same_gradient(monkeypatch):
    """Nested terms: the diagonal Schur complement, the dense one and SciPy's sparse LU (whose
    gradient is central differences) agree on the objective, the modes and the gradient; the
    Hessians by differences of the exact gradient and by second differences of the objective agree."""
    start = _model("bb_nested").start()
    x = start + np.random.default_rng(6).normal(0.0, 0.3, len(start))
    nested = _model("bb_nested")
    monkeypatch.setattr(intercepts, "NESTED_FAST", False)
    dense = _model("bb_nested")
    monkeypatch.setattr(intercepts, "DENSE_MAX", 10)
    lu = _model("bb_nested")
    out = [m.nll_grad(x) for m in (nested, dense, lu)]
    for v, g in out[1:]:
        assert v == pytest.approx(out[0][0], abs=1e-8)
        np.testing.assert_allclose(g, out[0][1], rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(dense.u, nested.u, atol=1e-8)
    np.testing.assert_allclose(lu.u, nested.u, atol=1e-8)
    interior = np.ones(len(x), dtype=bool)
    np.testing.assert_allclose(nested.hessian(x, interior), lu.hessian(x, interior), rtol=1e-4, atol=1e-3)


def test_polygamma_against_scipy():
    """The trigamma and tetragamma of the beta rows against SciPy's (Hurwitz zeta), from 1e-8 to 1e8."""
    from scipy import special

    from evalmix.tmb import family

    x = np.concatenate([np.logspace(-8, 8, 2001), np.random.default_rng(7).uniform(0.0, 12.0, 2000)])
    p1, p2 = family._polygamma12(x)
    np.testing.assert_allclose(p1, special.polygamma(1, x), rtol=1e-12)
    np.testing.assert_allclose(p2, special.polygamma(2, x), rtol=1e-12)
