"""Crossed terms each hold their own group-level predictors (hierarchical centring).

On lme4's VerbAgg the respondents' Anger and Gender are constant within each respondent and the
items' btype and situ within each item: each centred term regresses its effects on its own
attributes (``a_l ~ Normal(x_l b, sigma)``), so neither set of coefficients forms a ridge with
the effects of the levels that share it (with only the items holding theirs, Anger's bulk ESS
was 166 of 4,000 draws).  The compiled kernel reads each holder's rows of its stacked level
matrix; its log density and gradient must equal PyMC's (the slow check).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = pytest.mark.skipif(importlib.util.find_spec("pymc") is None, reason="needs pymc (the bayes extra)")

from evalmix.bayes.model import build_model  # noqa: E402

REF = Path(__file__).parents[1] / "reference"
FORMULA = "r2 ~ Anger + Gender + btype + situ + (1|id) + (1|item)"


@pytest.fixture(scope="module")
def model():
    d = pd.read_csv(REF / "bayes_verbagg.csv", dtype={"id": str})
    d = d[d["id"].astype(int) <= 40]  # 40 respondents x 24 items
    return build_model(FORMULA, d, likelihood="fused", parameterization={"id": "centered", "item": "centered"})


def test_each_crossed_term_holds_its_own_attributes(model):
    coef = [c for j, c in enumerate(model.fixed_names) if j != model.intercept_col]
    held = {p.term.group: [coef[j] for j in np.flatnonzero(np.any(p.level_x != 0, axis=0))]
            for p in model.plans if p.level_x is not None}
    assert held == {"id": ["Anger", "GenderM"], "item": ["btypescold", "btypeshout", "situself"]}
    # the held columns are out of the rows' linear predictor
    assert np.all(model.fixed_basis["Xt"] == 0)
    # the kernel's level matrix: the holders' rows stacked in the order of the terms
    assert model.fixed_basis["WT"].shape == (40 + 24, len(coef))


@pytest.mark.slow
def test_kernel_with_two_holders_matches_pymc(model):
    from evalmix.bayes.fused import FusedDensity

    density = FusedDensity.from_model(model)
    terms = density.arrays["terms"]
    assert terms[:, 6].tolist() == [1, 41]  # 1 + each holder's first row of WT
    fn = model.model.compile_fn([model.model.logp(), model.model.dlogp()])
    rng = np.random.default_rng(4)
    for scale in (0.3, 1.0, 3.0):
        x = rng.normal(size=density.n_dim) * scale
        lp, g = density.logp_dlogp(x)
        point = density.point(x)
        lp_ref, g_ref = fn(point)
        sizes = [point[v.name].size for v in model.model.value_vars]
        parts = dict(zip([v.name for v in model.model.value_vars], np.split(g_ref, np.cumsum(sizes)[:-1])))
        g_ref = np.concatenate([parts[v] for _, v, _, _ in density.blocks])
        assert lp == pytest.approx(float(lp_ref), rel=1e-8)
        np.testing.assert_allclose(g, g_ref, rtol=1e-8, atol=1e-8 * np.abs(g_ref).max())
