"""The compiled kernel's correlated random terms and Gaussian likelihood (evalmix.bayes._fused_terms).

The kernel's log density and gradient equal PyMC's for the model that
:func:`evalmix.bayes.model.correlated_term` builds (LKJ prior on the Cholesky factor from canonical
partial correlations, log-transformed SDs, centred or non-centred effects, a centred term holding
the intercept and its own fixed slopes) at random points, with the binomial-logit and the
Gaussian (standardised) likelihood: relative 1e-9 on the log density, 1e-8 of the largest
gradient entry.  The default step compares sleepstudy's ``(Days|Subject)`` with PyMC (one PyMC
compilation) and checks the gradient of two three-column binomial terms against central
differences of the kernel's own log density (no compilation); the second step compares the other
structures with PyMC (the beta, beta-binomial and cumulative logit / probit row passes with a
correlated term too), and the posterior of a sampled fit with that of PyMC's graph under nutpie.
"""

from __future__ import annotations

import importlib.util
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("pymc") is None, reason="needs pymc (the bayes extra)")

from evalmix.bayes.families import build_family_model  # noqa: E402
from evalmix.bayes.fused import FusedDensity, cholesky_corr, fused_reason  # noqa: E402
from evalmix.bayes.model import build_model  # noqa: E402

REF = Path(__file__).parents[1] / "reference"


@pytest.fixture(scope="module")
def sleep():
    return pd.read_csv(REF / "lmer_sleepstudy.csv", dtype={"Subject": str})


@pytest.fixture(scope="module")
def runs():
    """Binary answers of 14 groups (three correlated columns: intercept, x1, x2) crossed with 9
    items, and a two-level factor."""
    rng = np.random.default_rng(7)
    n_g, per = 14, 18
    g = np.repeat(np.arange(n_g), per)
    item = np.tile(np.arange(9), n_g * per // 9)
    x1, x2 = rng.normal(size=n_g * per), rng.normal(size=n_g * per)
    f = rng.choice(["a", "b"], size=n_g * per)
    C = np.array([[1.0, 0.4, -0.2], [0.4, 1.0, 0.1], [-0.2, 0.1, 1.0]])
    u = rng.multivariate_normal(np.zeros(3), np.diag([0.8, 0.5, 0.3]) @ C @ np.diag([0.8, 0.5, 0.3]),
                                size=n_g)
    v = rng.normal(scale=0.6, size=9)
    eta = -0.2 + 0.5 * x1 - 0.3 * x2 + 0.4 * (f == "b") + u[g, 0] + u[g, 1] * x1 + u[g, 2] * x2 + v[item]
    y = (rng.uniform(size=len(eta)) < 1 / (1 + np.exp(-eta))).astype(int)
    return pd.DataFrame({"y": y, "x1": x1, "x2": x2, "f": f, "g": [f"g{i}" for i in g],
                         "item": [f"q{i}" for i in item]})


def _pymc_logp_dlogp(bm, density, xs, mode=None):
    """PyMC's log density and gradient at the kernel's flat points ``xs`` (in its layout)."""
    fn = bm.model.compile_fn([bm.model.logp(), bm.model.dlogp()], mode=mode)
    out = []
    for x in xs:
        point = density.point(x)
        lp, g = fn(point)
        sizes = [point[v.name].size for v in bm.model.value_vars]
        parts = dict(zip([v.name for v in bm.model.value_vars], np.split(g, np.cumsum(sizes)[:-1])))
        out.append((float(lp), np.concatenate([parts[vname] for _, vname, _, _ in density.blocks])))
    return out


def _check_against_pymc(bm, scales=(0.3, 1.0, 2.5), mode=None, seed=1):
    assert fused_reason(bm) is None
    density = FusedDensity.from_model(bm)
    assert density.row_pass == "rows"
    rng = np.random.default_rng(seed)
    xs = [rng.normal(size=density.n_dim) * s for s in scales]
    for x, (lp_ref, g_ref) in zip(xs, _pymc_logp_dlogp(bm, density, xs, mode)):
        lp, g = density.logp_dlogp(x)
        assert lp == pytest.approx(lp_ref, rel=1e-9)
        np.testing.assert_allclose(g, g_ref, rtol=1e-8, atol=1e-8 * np.abs(g_ref).max())
    return density


def test_sleepstudy_correlated_gaussian_matches_pymc(sleep):
    """``Reaction ~ Days + (Days|Subject)`` (the twin's default: centred, holding the intercept and
    the Days slope as the means of the subjects' effects; standardised response)."""
    bm = build_family_model("Reaction ~ Days + (Days|Subject)", sleep, "gaussian")
    plan = bm.plans[0]
    assert plan.centered and plan.absorbs_intercept and plan.slope_cols == [(0, 1)]
    density = _check_against_pymc(bm, mode="FAST_COMPILE")
    names = [name for name, *_ in density.blocks]
    assert names == ["Intercept_c", "b", "sd(1 + Days|Subject)", "cpc(1 + Days|Subject)",
                     "(1 + Days|Subject)", "sigma"]
    # the start evaluates (the SDs at their pilot values, jittered)
    assert all(np.isfinite(density.logp_dlogp(density.initial_point(s))[0]) for s in range(5))


@pytest.mark.parametrize("form", ["centered", "noncentered"])
def test_gradient_is_the_derivative_of_the_log_density(runs, form):
    """Three correlated columns beside a crossed scalar term, heavy-tailed SD priors, LKJ(1.5):
    the gradient equals central differences of the log density."""
    bm = build_model("y ~ x1 + x2 + f + (1 + x1 + x2|g) + (1|item)", runs, parameterization=form,
                     priors={"g": ("half_student_t", 3, 1), "cor": 1.5})
    assert fused_reason(bm) is None
    density = FusedDensity.from_model(bm)
    assert density.shapes[f"{'z' if form == 'noncentered' else ''}(1 + x1 + x2|g)"] == (14, 3)
    rng = np.random.default_rng(3)
    h = 1e-5
    for scale in (0.3, 1.0):
        x = rng.normal(size=density.n_dim) * scale
        _, g = density.logp_dlogp(x)
        fd = np.empty_like(g)
        for i in range(len(x)):
            e = np.zeros_like(x)
            e[i] = h
            fd[i] = (density.logp_dlogp(x + e)[0] - density.logp_dlogp(x - e)[0]) / (2 * h)
        np.testing.assert_allclose(g, fd, rtol=1e-5, atol=1e-6 * np.abs(g).max())


def test_cholesky_factor_gives_a_correlation_matrix():
    y = np.random.default_rng(2).normal(size=(4, 6)) * 2
    L = cholesky_corr(y, 4)
    C = L @ np.swapaxes(L, -1, -2)
    np.testing.assert_allclose(np.diagonal(C, axis1=-2, axis2=-1), 1.0, atol=1e-12)
    assert np.all(np.linalg.eigvalsh(C) > 0)
    # the first column's correlations are the first partial correlations themselves
    np.testing.assert_allclose(C[:, 1:, 0], np.tanh(y[:, [0, 1, 3]]), atol=1e-12)


# ------------------------------------------------------------------ second step

SLOW_CASES = {
    "binomial_slope_auto": ("y ~ x1 + (1 + x1|g)", {}),
    "binomial_three_centred_held_qr": ("y ~ x1 + x2 + f + (1 + x1 + x2|g) + (1|item)",
                                       dict(parameterization="centered")),
    "binomial_three_noncentred_other_priors": (
        "y ~ x1 + x2 + f + (1 + x1 + x2|g) + (1|item)",
        dict(parameterization={"g": "noncentered", "item": "centered"},
             priors={"g": ("half_cauchy", 1), "sd": ("exponential", 2), "cor": 3})),
    "binomial_no_intercept_column": ("y ~ x1 + (0 + x1 + x2|g)", dict(parameterization="centered", qr=False)),
}


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(SLOW_CASES))
def test_binomial_correlated_terms_match_pymc(runs, case):
    formula, kw = SLOW_CASES[case]
    bm = build_model(formula, runs, likelihood="fused", **kw)
    _check_against_pymc(bm, scales=(0.3, 1.0, 4.0))


@pytest.mark.slow
def test_noncentred_gaussian_three_columns_matches_pymc():
    rng = np.random.default_rng(3)
    g = np.repeat([f"g{i}" for i in range(8)], 9)
    x1, x2 = rng.normal(size=72), rng.normal(size=72)
    d = pd.DataFrame({"y": 10 + 2 * x1 - x2 + rng.normal(size=72) * 3, "x1": x1, "x2": x2, "g": g})
    bm = build_family_model("y ~ x1 + x2 + (1 + x1 + x2|g)", d, "gaussian", parameterization="noncentered")
    _check_against_pymc(bm)


@pytest.mark.slow
def test_sleepstudy_kernel_posterior_equals_the_pymc_graph(sleep, monkeypatch):
    """Sampled through the kernel and through PyMC's graph (nutpie's compiler), the posterior
    means of the fixed effects, SDs, correlation and sigma agree within 4 Monte-Carlo SEs."""
    from evalmix import bayes
    from evalmix.bayes import sampling
    from evalmix.core.errors import SamplingWarning

    if "nutpie" not in bayes.available_samplers():
        pytest.skip("needs nutpie")
    formula = "Reaction ~ Days + (Days|Subject)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        kernel = bayes.lmer(formula, sleep, rng=5, progressbar=False)
        monkeypatch.setattr(sampling, "_kernel_density", lambda bm: None)
        graph = bayes.lmer(formula, sleep, rng=5, progressbar=False)
    assert "compiled numba kernel" in kernel.sampler and "compiled numba kernel" not in graph.sampler
    a = kernel.posterior_table().set_index("parameter")
    b = graph.posterior_table().set_index("parameter")
    assert list(a.index) == list(b.index)
    mcse = np.sqrt(a["se"] ** 2 / a["ess_bulk"] + b["se"] ** 2 / b["ess_bulk"])
    assert (np.abs(a["estimate"] - b["estimate"]) < 4 * mcse).all(), pd.concat([a, b], axis=1)
    # the stored draws: the effects of every subject, the SDs and correlation matrix, sigma
    post = kernel.idata.posterior
    assert post["(1 + Days|Subject)"].shape[2:] == (18, 2)
    assert post["cor(1 + Days|Subject)"].shape[2:] == (2, 2)
    assert not any(str(v).endswith("_log__") for v in post.data_vars)
    assert math.isclose(float(post["cor(1 + Days|Subject)"][0, 0, 0, 0]), 1.0)


@pytest.mark.slow
@pytest.mark.parametrize("form", [{"g": "centered", "item": "noncentered"}, "noncentered"])
def test_gaussian_scalar_terms_match_pymc(runs, form):
    """``bayes.lmer``'s models without a correlated term take the kernel's Gaussian likelihood too."""
    d = runs.assign(score=runs["x1"] * 3 + runs["y"] * 10 + 50.0)
    bm = build_family_model("score ~ x2 + f + (1|g) + (1|item)", d, "gaussian", parameterization=form)
    _check_against_pymc(bm)


def _family_data(runs, family):
    """The runs' design with a response of ``family``: scores in (0, 1), successes of 6 trials, or
    ratings 0-3."""
    rng = np.random.default_rng(11)
    eta = 0.6 * runs["x1"] - 0.4 * runs["x2"] + rng.normal(scale=0.7, size=len(runs))
    if family == "beta":
        return runs.assign(s=np.clip(1 / (1 + np.exp(-eta)), 0.02, 0.98))
    if family == "betabinomial":
        return runs.assign(s=rng.binomial(6, 1 / (1 + np.exp(-eta))), n=6)
    return runs.assign(s=np.digitize(eta, [-0.8, 0.0, 0.8]))


@pytest.mark.slow
@pytest.mark.parametrize("family,link,form", [("beta", "logit", "centered"),
                                              ("betabinomial", "logit", "noncentered"),
                                              ("cumulative", "logit", "centered"),
                                              ("cumulative", "probit", "noncentered")])
def test_other_families_with_a_correlated_term_match_pymc(runs, family, link, form):
    """The correlated term's part of each row's linear predictor feeds the beta, beta-binomial and
    cumulative row passes too."""
    formula = "s ~ x1 + x2 + (1 + x1|g)" if family != "betabinomial" else "cbind(s, n - s) ~ x1 + x2 + (1 + x1|g)"
    bm = build_family_model(formula, _family_data(runs, family), family,
                            link=link if family == "cumulative" else None, parameterization=form)
    # the probit's PyTensor erf/erfc are accurate to ~1e-8 (tests/bayes/test_fused_families.py)
    if link == "probit":
        density = FusedDensity.from_model(bm)
        xs = [np.random.default_rng(2).normal(size=density.n_dim) * s for s in (0.3, 1.0)]
        for x, (lp_ref, g_ref) in zip(xs, _pymc_logp_dlogp(bm, density, xs)):
            lp, g = density.logp_dlogp(x)
            assert lp == pytest.approx(lp_ref, rel=1e-6)
            np.testing.assert_allclose(g, g_ref, rtol=1e-6, atol=1e-6 * np.abs(g_ref).max())
    else:
        _check_against_pymc(bm, scales=(0.3, 1.0))
