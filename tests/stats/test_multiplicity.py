"""adjust_pvalues equals statsmodels' multipletests (and R's p.adjust) for every method."""

from __future__ import annotations

import gc

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.multitest import multipletests

from evalmix import adjust_pvalues

SM_NAMES = {"holm": "holm", "bonferroni": "bonferroni", "sidak": "sidak",
            "hochberg": "simes-hochberg", "BH": "fdr_bh", "BY": "fdr_by"}


@pytest.mark.parametrize("method", list(SM_NAMES))
def test_equals_statsmodels(method, monkeypatch):
    # statsmodels' holm ends with gc.collect(), which takes ~0.4 s per call late in a test
    # process (a large heap) and changes no number: skipped during this test
    monkeypatch.setattr(gc, "collect", lambda *args: 0)
    rng = np.random.default_rng(1)
    for trial in range(12):
        p = rng.random(int(rng.integers(1, 40))) ** 3
        if trial % 4 == 0:
            p[: p.size // 2] = p[0]  # ties
        ref = multipletests(p, method=SM_NAMES[method])[1]
        assert np.allclose(adjust_pvalues(p, method), ref, rtol=1e-12, atol=1e-15)


def test_aliases_nan_and_series():
    p = pd.Series([0.01, np.nan, 0.04, 0.03], index=list("abcd"))
    out = adjust_pvalues(p, "fdr_bh")
    assert list(out.index) == list("abcd") and np.isnan(out["b"])
    ref = multipletests([0.01, 0.04, 0.03], method="fdr_bh")[1]
    assert np.allclose(out.dropna().to_numpy(), ref)
    with pytest.raises(ValueError, match="method"):
        adjust_pvalues([0.1], "magic")
    with pytest.raises(ValueError, match="0, 1"):
        adjust_pvalues([1.5], "holm")


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(0, 1), min_size=1, max_size=30),
       st.sampled_from(["holm", "bonferroni", "sidak", "hochberg", "BH", "BY"]))
def test_adjusted_invariants(p, method):
    p = np.array(p)
    adj = adjust_pvalues(p, method)
    assert np.all(adj >= p - 1e-12) and np.all(adj <= 1)
    order = np.argsort(p, kind="mergesort")
    assert np.all(np.diff(adj[order]) >= -1e-12)  # monotone in the raw p-values


def _r_reference():
    """Values written by tests/reference/comparisons_reference.R (base R stats, psych)."""
    import json
    from pathlib import Path
    path = Path(__file__).parents[1] / "reference" / "comparisons_reference.json"
    return json.loads(path.read_text())


@pytest.mark.parametrize("method", ["holm", "bonferroni", "hochberg", "BH", "BY"])
def test_equals_r_p_adjust(method):
    ref = _r_reference()["p_adjust"]
    p = np.array([np.nan if v is None else v for v in ref["p"]])
    expected = np.array([np.nan if v is None else v for v in ref[method]])
    assert np.allclose(adjust_pvalues(p, method), expected, rtol=1e-12, equal_nan=True)


def test_family_methods_follow_emmeans_rules():
    from evalmix.stats.multiplicity import family_methods

    assert family_methods("fdr_bh", 4, True) == ("BH", "bonferroni")  # step-wise: Bonferroni intervals
    assert family_methods("tukey", 4, True) == ("tukey", "tukey")
    assert family_methods("tukey", 4, False) == ("sidak", "sidak")  # not one set of pairwise comparisons
    assert family_methods("mvt", 1, False) == ("none", "none")  # a single test is never adjusted


def test_p_adjust_critical_on_normal_and_t_scales():
    from scipy import stats

    from evalmix.stats.multiplicity import p_adjust_critical

    assert p_adjust_critical("none", 0.95, 3, stats.norm.isf) == pytest.approx(1.959963984540054, rel=1e-15)
    # Sidak: 1 - 0.95^(1/3) = 0.016952... two-sided; Bonferroni (also for holm): 0.05 / 3
    assert p_adjust_critical("sidak", 0.95, 3, stats.norm.isf) == pytest.approx(2.387738, abs=1e-6)
    assert p_adjust_critical("holm", 0.95, 3, stats.norm.isf) == pytest.approx(2.393980, abs=1e-6)
    df = np.array([4.0, 30.0])
    crit = p_adjust_critical("bonferroni", 0.95, 3, lambda q: stats.t.isf(q, df))
    np.testing.assert_allclose(crit, [3.960786, 2.535742], atol=1e-6)  # R: qt(1 - 0.05 / 6, c(4, 30))
