"""The compiled kernel's fast row passes (rows sorted by the term with the most levels): the same
log density and gradient as its row-wise pass (which tests/bayes/test_bayes.py checks against PyMC), the
pass each layout gets, and what a fit reports.  Small seeded designs."""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("pymc") is None, reason="needs pymc (the bayes extra)")

from evalmix import bayes  # noqa: E402
from evalmix.bayes.fused import ROW_PASSES, FusedDensity, fused_available  # noqa: E402
from evalmix.bayes.model import build_model  # noqa: E402
from evalmix.core.errors import SamplingWarning  # noqa: E402

CROSSED = "correct ~ model + difficulty + domain + (1|item) + (1|prompt)"


def crossed(seed: int = 3, n_models: int = 3, n_items: int = 30, n_prompts: int = 4) -> pd.DataFrame:
    """Models x items x prompts, every combination once, item-level predictors (as the bench)."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(size=n_items)
    domain = rng.integers(0, 3, n_items)
    item_eff = rng.normal(0, 1.0, n_items) - 0.8 * difficulty + 0.3 * (domain - 1)
    prompt_eff = rng.normal(0, 0.4, n_prompts)
    m, i, p = (a.ravel() for a in np.meshgrid(np.arange(n_models), np.arange(n_items), np.arange(n_prompts),
                                              indexing="ij"))
    eta = 0.2 + np.linspace(-0.8, 0.8, n_models)[m] + item_eff[i] + prompt_eff[p]
    return pd.DataFrame({"model": [f"M{k}" for k in m], "item": [f"q{k:02d}" for k in i],
                         "prompt": [f"P{k}" for k in p], "difficulty": difficulty[i],
                         "domain": [f"D{k}" for k in domain[i]],
                         "correct": (rng.random(len(m)) < 1 / (1 + np.exp(-eta))).astype(int)})


def nested_counts(seed: int = 4, trials=2) -> pd.DataFrame:
    """Models x items x runs, ``trials`` attempts per row (AI4Math's layout: runs nested in items)."""
    rng = np.random.default_rng(seed)
    m, i, r = (a.ravel() for a in np.meshgrid(np.arange(3), np.arange(25), np.arange(3), indexing="ij"))
    n = np.broadcast_to(trials, m.shape) if np.isscalar(trials) else np.asarray(trials)
    eta = np.linspace(-0.5, 0.5, 3)[m] + rng.normal(0, 1.2, 25)[i] + rng.normal(0, 0.3, m.size)
    k = rng.binomial(n, 1 / (1 + np.exp(-eta)))
    return pd.DataFrame({"model": [f"M{j}" for j in m], "item": [f"q{j:02d}" for j in i],
                         "run": r.astype(str), "k": k, "n": n})


def density(formula: str, data: pd.DataFrame, **kw) -> FusedDensity:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return FusedDensity.from_model(build_model(formula, data, likelihood="fused", **kw))


def layouts() -> dict[str, tuple[str, pd.DataFrame, str, dict]]:
    d = crossed()
    ragged = nested_counts(trials=np.random.default_rng(5).integers(1, 6, 225))
    x = np.random.default_rng(6).normal(size=len(d))
    nested = "cbind(k, n - k) ~ model + (1|item) + (1|item:run)"
    return {
        "complete crossed, binary": (CROSSED, d, "blocked", {}),
        # the effects as s * z: the passes read the effects, whatever their parameterisation (item
        # attributes only move into a centred term, so none here: they would make 90 cells)
        "complete crossed, non-centred": ("correct ~ model + (1|item) + (1|prompt)", d, "blocked",
                                          {"parameterization": "noncentered"}),
        # a tenth of the rows missing: levels no longer runs of consecutive combinations
        "crossed with missing rows": (CROSSED, d.drop(index=np.arange(0, len(d), 10)), "grouped", {}),
        "runs nested in items, 2 trials a row": (nested, nested_counts(), "blocked", {}),
        "runs nested in items, 1-5 trials": (nested, ragged, "grouped", {}),
        # a row-level numeric column: as many cells as rows, so no grouping pays
        "row-level covariate": ("correct ~ x + (1|item)", d.assign(x=x), "factored", {}),
        # a slope column is not 1: exp/log1p in every row
        "random slope": ("correct ~ model + (0 + x|item)", d.assign(x=x), "rows", {}),
    }


@pytest.mark.parametrize("case", sorted(layouts()))
def test_fast_row_passes_equal_the_row_wise_pass(case):
    formula, data, expected, kw = layouts()[case]
    dens = density(formula, data, **kw)
    assert dens.row_pass == expected
    rng = np.random.default_rng(1)
    for scale in (0.3, 1.0, 3.0):
        x = rng.normal(size=dens.n_dim) * scale
        lp_ref, g_ref = dens.logp_dlogp(x, row_pass="rows")
        for name in ROW_PASSES[ROW_PASSES.index(expected):]:
            lp, g = dens.logp_dlogp(x, row_pass=name)
            # sums in another order (and on SIMD lanes): rounding only
            assert lp == pytest.approx(lp_ref, rel=1e-11, abs=1e-9), (case, name, scale)
            np.testing.assert_allclose(g, g_ref, rtol=1e-9, atol=1e-9, err_msg=f"{case} {name} {scale}")
        assert dens.logp_dlogp(x) == (pytest.approx(lp_ref, rel=1e-11), pytest.approx(g_ref, rel=1e-9, abs=1e-9))


def test_a_faster_pass_than_the_rows_allow_is_refused():
    formula, data, _, _ = layouts()["crossed with missing rows"]
    dens = density(formula, data)
    with pytest.raises(ValueError, match="does not fit this model's rows"):
        dens.logp_dlogp(np.zeros(dens.n_dim), row_pass="blocked")
    with pytest.raises(ValueError, match="row_pass must be one of"):
        dens.logp_dlogp(np.zeros(dens.n_dim), row_pass="fast")


def test_large_linear_predictors_fall_back_to_the_row_wise_form():
    """Far from the posterior (|eta| > 600) every pass takes exp/log1p row by row: still finite."""
    dens = density(CROSSED, crossed())
    x = np.random.default_rng(2).normal(size=dens.n_dim) * 200.0
    lp, g = dens.logp_dlogp(x)
    lp_ref, g_ref = dens.logp_dlogp(x, row_pass="rows")
    assert np.isfinite(lp) and lp == lp_ref
    np.testing.assert_array_equal(g, g_ref)


@pytest.mark.skipif(not fused_available(), reason="needs nutpie and numba")
def test_a_fit_reports_the_row_pass():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        fit = bayes.glmer(CROSSED, crossed(), draws=20, tune=20, chains=1, rng=1, progressbar=False,
                          parameterization="centered")  # no maximum-likelihood fit to choose forms
    assert fit.sampler.endswith("(compiled numba kernel, blocked row pass)")


@pytest.mark.slow
@pytest.mark.skipif(not fused_available(), reason="needs nutpie and numba")
def test_crossed_design_with_item_predictors_converges_by_default():
    """The bench's crossed layout, smaller: default settings give r_hat <= 1.01 and bulk ESS >= 400
    for every fixed effect and SD (the convergence goal of issue 22)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        fit = bayes.glmer(CROSSED, crossed(seed=7, n_models=4, n_items=80, n_prompts=6), rng=11,
                          progressbar=False)
    table = fit.posterior_table()
    assert "blocked row pass" in fit.sampler
    assert table["r_hat"].max() <= 1.01
    assert table["ess_bulk"].min() >= 400
