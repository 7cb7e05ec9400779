"""accuracy / binom_ci: the paper's Wilson table, statsmodels parity, and invariants."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from statsmodels.stats.proportion import proportion_confint

from evalmix import DataError, accuracy, binom_ci, read_runs
from evalmix.stats.descriptive import CI_METHODS

# evalmix method -> statsmodels method
STATSMODELS = {"wilson": "wilson", "clopper_pearson": "beta", "jeffreys": "jeffreys",
               "agresti_coull": "agresti_coull", "wald": "normal"}


def test_ai4math_wilson_equals_published(ai4math_raw, published):
    runs = read_runs(ai4math_raw, item="problem_id")
    ours = accuracy(runs, ["model", "language", "prompt"], ci="wilson").table
    pub = published("accuracy")
    merged = pub.merge(ours.astype({c: str for c in ["model", "language", "prompt"]}),
                       on=["model", "language", "prompt"], validate="one_to_one")
    assert len(merged) == 32
    assert (merged["n_x"] == merged["n_y"]).all() and (merged["hits"] == merged["k"]).all()
    np.testing.assert_allclose(merged["estimate"], merged["prop"], atol=1e-9, rtol=0)
    np.testing.assert_allclose(merged["conf_low"], merged["ci_lwr.ci"], atol=1e-9, rtol=0)
    np.testing.assert_allclose(merged["conf_high"], merged["ci_upr.ci"], atol=1e-9, rtol=0)


@pytest.mark.parametrize("method", sorted(STATSMODELS))
@pytest.mark.parametrize("conf_level", [0.9, 0.95, 0.99])
def test_matches_statsmodels(method, conf_level):
    n = np.array([1, 5, 10, 30, 100, 315, 1000, 10, 10, 50])
    k = np.array([0, 2, 10, 7, 50, 190, 3, 0, 1, 49])
    lo, hi = binom_ci(k, n, method=method, conf_level=conf_level)
    slo, shi = proportion_confint(k, n, alpha=1 - conf_level, method=STATSMODELS[method])
    if method == "jeffreys":
        # statsmodels clips the Jeffreys interval at the boundary (k = 0 or k = n); the
        # equal-tailed Beta quantile is what DescTools and binom report away from it
        inside = (k > 0) & (k < n)
        np.testing.assert_allclose(lo[inside], np.asarray(slo)[inside], atol=1e-12)
        np.testing.assert_allclose(hi[inside], np.asarray(shi)[inside], atol=1e-12)
    else:
        np.testing.assert_allclose(lo, slo, atol=1e-12)
        np.testing.assert_allclose(hi, shi, atol=1e-12)


@pytest.mark.parametrize("method", ["wilson", "wilson_cc", "clopper_pearson"])
def test_matches_r_prop_test_and_binom_test(method, reference):
    """prop.test(correct = FALSE / TRUE) and binom.test in R (tests/reference/binom_reference.R)."""
    ref = reference("binom_reference")["intervals"]
    for case in ref:
        if method == "wilson_cc" and abs(case["k"] - case["n"] / 2) < 0.5:
            # prop.test shrinks Yates' correction to |k - n p0| with p0 = 1/2 (its null), so at
            # k = n/2 it reports the uncorrected interval; DescTools' "wilsoncc" and Newcombe do not
            continue
        lo, hi = binom_ci(case["k"], case["n"], method, case["conf_level"])
        assert [float(lo), float(hi)] == pytest.approx(case[method], abs=1e-10), case


@settings(max_examples=200, deadline=None)
@given(n=st.integers(1, 5000), frac=st.floats(0, 1), conf=st.floats(0.5, 0.999))
def test_intervals_contain_estimate_and_nest(n, frac, conf):
    k = round(frac * n)
    p = k / n
    for method in ("wilson", "wilson_cc", "clopper_pearson", "jeffreys"):
        lo, hi = binom_ci(k, n, method, conf)
        assert 0 <= lo <= hi <= 1
        if method != "jeffreys":  # Jeffreys is equal-tailed around the posterior, not around k/n
            assert lo - 1e-12 <= p <= hi + 1e-12
        wlo, whi = binom_ci(k, n, method, min(conf + 0.0005, 0.9995))
        assert wlo <= lo + 1e-12 and whi >= hi - 1e-12


def test_bad_arguments():
    with pytest.raises(ValueError, match="unknown interval method 'exact'"):
        binom_ci(1, 2, "exact")
    with pytest.raises(DataError, match="0 <= k <= n"):
        binom_ci(3, 2)
    with pytest.raises(ValueError, match="conf_level"):
        binom_ci(1, 2, conf_level=95)
    df = pd.DataFrame({"model": ["a", "b"], "correct": [1, 0]})
    with pytest.raises(DataError, match="missing column\\(s\\) 'lang'; the table has columns: 'model', 'correct'"):
        accuracy(df, ["model", "lang"])
    with pytest.raises(DataError, match="missing column\\(s\\) 'ok'"):
        accuracy(df, "model", outcome="ok")


def test_counts_and_overall_row():
    df = pd.DataFrame({"model": ["a", "a", "b"], "item": [1, 2, 1], "k": [2, 3, 0], "n": [3, 3, 3]})
    runs = read_runs(df, run=None, successes="k", trials="n")
    out = accuracy(runs, "model").table
    assert out["n"].tolist() == [6, 3] and out["k"].tolist() == [5, 0]
    overall = accuracy(runs).table
    assert overall["n"].item() == 9 and overall["estimate"].item() == pytest.approx(5 / 9)


def test_cluster_interval_by_hand():
    # two models, three items, two runs; item means computed first
    df = pd.DataFrame({
        "model": ["a"] * 6 + ["b"] * 6,
        "item": [1, 1, 2, 2, 3, 3] * 2,
        "run": [1, 2] * 6,
        "correct": [1, 1, 1, 0, 0, 0, 1, 0, 1, 0, 1, 1],
    })
    out = accuracy(read_runs(df), "model", ci="cluster", conf_level=0.95).table
    means_a = np.array([1.0, 0.5, 0.0])
    se_a = means_a.std(ddof=1) / np.sqrt(3)
    row = out.iloc[0]
    assert row["estimate"] == pytest.approx(0.5)
    assert row["se"] == pytest.approx(se_a)
    assert row["conf_low"] == pytest.approx(0.5 - 1.959963984540054 * se_a)
    assert row["n_items"] == 3
    with pytest.raises(DataError, match="item="):
        accuracy(df.drop(columns="item"), "model", ci="cluster")


def test_cluster_wider_than_wilson_when_items_vary(ai4math_raw):
    runs = read_runs(ai4math_raw, item="problem_id")
    wil = accuracy(runs, "model").table
    clu = accuracy(runs, "model", ci="cluster").table
    assert ((clu["conf_high"] - clu["conf_low"]) > 1.5 * (wil["conf_high"] - wil["conf_low"])).all()


def test_every_method_runs():
    df = pd.DataFrame({"model": ["a"] * 4, "item": [1, 2, 3, 4], "correct": [1, 0, 1, 1]})
    for method in CI_METHODS:
        out = accuracy(df, "model", ci=method, item="item").table
        assert out["conf_low"].item() < 0.75 < out["conf_high"].item()


def test_accuracy_is_a_result_naming_its_interval():
    import evalmix
    from evalmix.core.result import Result

    df = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 4, "item": [1, 2, 3, 4] * 2,
                       "correct": [1, 1, 0, 1, 0, 0, 1, 0]})
    res = evalmix.accuracy(df, "model", ci="clopper_pearson", conf_level=0.9)
    assert isinstance(res, evalmix.AccuracyTable) and isinstance(res, Result)
    assert (res.by, res.ci, res.conf_level) == (("model",), "clopper_pearson", 0.9)
    pd.testing.assert_frame_equal(res.to_frame(), res.table)
    assert res.table["estimate"].tolist() == [0.75, 0.25]
    text = repr(res)
    assert text.startswith("Accuracy by model")
    assert "90% Clopper-Pearson (exact) interval" in text and "conf_low" in text
    assert "\\begin{tabular}" in res.to_latex() and "| model |" in res.to_markdown().replace("  ", " ")
    overall = evalmix.accuracy(df, ci="cluster")
    assert overall.by == () and repr(overall).startswith("Accuracy\n")
    assert "item-clustered CLT interval" in repr(overall)
