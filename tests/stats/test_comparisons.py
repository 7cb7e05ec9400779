"""Paired comparison tests: parity with statsmodels/scipy, the published numbers of the mixture
method document (seed 20260504), closed forms and invariants."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from statsmodels.stats.contingency_tables import mcnemar as sm_mcnemar

from evalmix import (cohens_d, compare_pair, friedman, mcnemar, paired_t_runs, permutation_test,
                     wilcoxon)
from evalmix.core.errors import DataError, DataWarning
from evalmix.simulate import mixture_benchmark
from evalmix.stats.comparisons import nemenyi_critical_difference, runs_matrices


@pytest.fixture(scope="module")
def seed_benchmark():
    """The display benchmark of the mixture document: 4,000 questions, 8 runs, seed 20260504."""
    return mixture_benchmark(4000, 8, easy=0.42, hard=0.28, uplift=0.01, rng=20260504)


def _scores(df, model):
    return df[df["model"] == model].pivot(index="run", columns="item", values="correct").to_numpy()


# ----------------------------------------------------------------------------- McNemar

@pytest.mark.parametrize("exact,correction", [(False, False), (False, True), (True, False)])
def test_mcnemar_equals_statsmodels(exact, correction):
    rng = np.random.default_rng(5)
    for _ in range(30):
        n = int(rng.integers(5, 400))
        a = rng.integers(0, 2, n)
        b = np.where(rng.random(n) < 0.7, a, rng.integers(0, 2, n))
        r = mcnemar(a, b, exact=exact, correction=correction)
        d = r.details
        if d["n01"] + d["n10"] == 0:
            continue
        sm = sm_mcnemar([[d["n00"], d["n01"]], [d["n10"], d["n11"]]], exact=exact, correction=correction)
        assert r.statistic == pytest.approx(sm.statistic, rel=1e-12)
        assert r.p_value == pytest.approx(sm.pvalue, rel=1e-10)
        assert d["n00"] + d["n01"] + d["n10"] + d["n11"] == n


def test_mcnemar_reproduces_published_single_run_table(seed_benchmark):
    # Published (run 0): A vs B +0.92pp, CI +/-1.11pp, z 1.64, chi2 2.6896, p 0.101006;
    #                    A vs C +2.05pp, CI +/-1.16pp, z 3.47, chi2 12.0071, p 0.000530.
    a0 = _scores(seed_benchmark, "base")[0]
    for other, diff, half, z, chi2, p in [("clone", 0.92, 1.11, 1.64, 2.6896, 0.101006),
                                          ("finetune", 2.05, 1.16, 3.47, 12.0071, 0.000530)]:
        r = mcnemar(a0, _scores(seed_benchmark, other)[0])
        assert round(r.estimate * 100, 2) == diff
        assert round(1.96 * r.se * 100, 2) == half
        assert round(r.details["z"], 2) == z
        assert round(r.statistic, 4) == chi2
        assert round(r.p_value, 6) == p
        assert r.details["z"] ** 2 == pytest.approx(r.statistic)


def test_mcnemar_interval_matches_test():
    rng = np.random.default_rng(2)
    for _ in range(50):
        n = int(rng.integers(20, 300))
        a = rng.integers(0, 2, n)
        b = np.where(rng.random(n) < 0.8, a, rng.integers(0, 2, n))
        r = mcnemar(a, b)
        if r.se == 0:
            continue
        excludes_zero = r.conf_low > 0 or r.conf_high < 0
        assert excludes_zero == (r.p_value < 0.05)


def test_mcnemar_rejects_bad_input():
    with pytest.raises(DataError, match="0/1"):
        mcnemar([0, 1, 2], [0, 1, 1])
    with pytest.raises(DataError, match="same length"):
        mcnemar([0, 1, 1], [0, 1])
    with pytest.raises(DataError, match="one run"):
        mcnemar(np.zeros((2, 3)), np.zeros((2, 3)))


def test_mcnemar_no_discordant_pairs():
    r = mcnemar([1, 0, 1], [1, 0, 1])
    assert r.p_value == 1.0 and r.estimate == 0.0


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1), st.integers(0, 1)), min_size=2, max_size=60))
def test_mcnemar_antisymmetric(pairs):
    a = np.array([p[0] for p in pairs])
    b = np.array([p[1] for p in pairs])
    r1, r2 = mcnemar(a, b), mcnemar(b, a)
    assert r1.estimate == pytest.approx(-r2.estimate)
    assert r1.p_value == pytest.approx(r2.p_value)
    assert 0 <= r1.p_value <= 1


# ----------------------------------------------------------------------------- paired t

def test_paired_t_equals_scipy():
    rng = np.random.default_rng(1)
    a = rng.integers(0, 2, (5, 120))
    b = np.where(rng.random((5, 120)) < 0.8, a, 1)
    r = paired_t_runs(a, b)
    ref = stats.ttest_rel(b.mean(axis=0), a.mean(axis=0))
    assert r.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-10)
    ci = ref.confidence_interval(0.95)
    assert (r.conf_low, r.conf_high) == pytest.approx((ci.low, ci.high), rel=1e-10)
    assert r.details["correlation"] == pytest.approx(np.corrcoef(a.mean(0), b.mean(0))[0, 1])


def test_paired_t_reproduces_published_table(seed_benchmark):
    # Published: A vs B -0.01pp +/-0.40pp z -0.05; A vs C +1.17pp +/-0.52pp z 4.43.
    a = _scores(seed_benchmark, "base")
    for other, diff, half, z in [("clone", -0.01, 0.40, -0.05), ("finetune", 1.17, 0.52, 4.43)]:
        r = paired_t_runs(a, _scores(seed_benchmark, other))
        assert round(r.estimate * 100, 2) == diff
        assert round(1.96 * r.se * 100, 2) == half
        assert round(r.statistic, 2) == z


def test_paired_t_handles_missing_runs():
    a = np.array([[1, 0, 1, 1], [np.nan, 0, 1, 0]])
    b = np.array([[1, 1, 1, 1], [1, 1, np.nan, 1]])
    r = paired_t_runs(a, b)
    d = np.array([1 - 1, 1 - 0, 1 - 1, 1 - 0.5])
    assert r.estimate == pytest.approx(d.mean())
    with pytest.raises(DataError, match="no score"):
        paired_t_runs(np.array([[np.nan, 1.0]]), np.array([[1.0, 1.0]]))


def test_cohens_d_closed_form():
    a = np.array([0.1, 0.5, 0.4, 0.8, 0.3])
    b = np.array([0.3, 0.6, 0.6, 0.9, 0.2])
    d = b - a
    assert cohens_d(a, b) == pytest.approx(d.mean() / d.std(ddof=1))
    pooled = np.sqrt((a.var(ddof=1) + b.var(ddof=1)) / 2)
    assert cohens_d(a, b, paired=False) == pytest.approx((b.mean() - a.mean()) / pooled)


# ----------------------------------------------------------------------------- permutation

def test_permutation_exact_equals_scipy():
    rng = np.random.default_rng(3)
    a = rng.random(11)
    b = a + rng.normal(0.2, 0.3, 11)
    r = permutation_test(a, b, exact=True)
    ref = stats.permutation_test((b, a), lambda x, y, axis: np.mean(x - y, axis=axis),
                                 permutation_type="samples", n_resamples=np.inf)
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-12)


def test_permutation_monte_carlo_close_to_exact():
    rng = np.random.default_rng(4)
    a = rng.random(14)
    b = a + rng.normal(0.15, 0.3, 14)
    exact = permutation_test(a, b, exact=True).p_value
    mc = permutation_test(a, b, exact=False, n_resamples=40_000, rng=1).p_value
    assert abs(mc - exact) < 4 * np.sqrt(exact * (1 - exact) / 40_000) + 1e-4


def test_permutation_null_is_calibrated():
    rng = np.random.default_rng(8)
    ps = [permutation_test(rng.random(40), rng.random(40), n_resamples=499, rng=rng).p_value
          for _ in range(300)]
    assert 0.02 < np.mean(np.array(ps) < 0.05) < 0.09  # 5% +/- 3 MC SE


# ----------------------------------------------------------------------------- Wilcoxon

def test_wilcoxon_exact_equals_scipy():
    rng = np.random.default_rng(6)
    a = rng.random(20)
    b = a + rng.normal(0.1, 0.3, 20)
    r = wilcoxon(a, b, method="exact")
    ref = stats.wilcoxon(b, a, method="exact")
    assert r.statistic == ref.statistic
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-12)


@pytest.mark.parametrize("correction", [False, True])
def test_wilcoxon_approx_with_ties_and_zeros_equals_scipy(correction):
    rng = np.random.default_rng(7)
    a = rng.integers(0, 5, 80) / 4
    b = np.clip(a + rng.integers(-1, 3, 80) / 4, 0, 1)
    r = wilcoxon(a, b, method="approx", correction=correction)
    ref = stats.wilcoxon(b, a, method="asymptotic", correction=correction, zero_method="wilcox")
    assert r.statistic == ref.statistic
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-10)


def test_wilcoxon_all_zero_raises():
    with pytest.raises(DataError, match="zero"):
        wilcoxon([1, 2, 3], [1, 2, 3])


# ----------------------------------------------------------------------------- Friedman / Nemenyi

def test_friedman_equals_scipy_with_ties():
    rng = np.random.default_rng(9)
    x = rng.integers(0, 4, (25, 4)) / 3  # many ties
    r = friedman(x)
    ref = stats.friedmanchisquare(*x.T)
    assert r.statistic == pytest.approx(ref.statistic, rel=1e-12)
    assert r.p_value == pytest.approx(ref.pvalue, rel=1e-10)


@pytest.mark.parametrize("k,q", [(2, 1.960), (3, 2.343), (4, 2.569), (5, 2.728), (6, 2.850),
                                 (7, 2.949), (8, 3.031), (9, 3.102), (10, 3.164)])
def test_nemenyi_critical_values_match_demsar_table(k, q):
    # Demšar (2006), Table 5(a): q_0.05 of the Nemenyi test
    n = 50
    assert nemenyi_critical_difference(k, n) == pytest.approx(q * np.sqrt(k * (k + 1) / (6 * n)), abs=2e-3)


def test_nemenyi_pairwise_p_equals_alpha_at_critical_difference():
    rng = np.random.default_rng(10)
    r = friedman(rng.random((40, 5)))
    row = r.pairwise.iloc[0]
    from scipy.stats import studentized_range
    q = row["rank_difference"] / np.sqrt(5 * 6 / (12 * 40))
    assert row["p_value"] == pytest.approx(studentized_range.sf(q, 5, np.inf))
    assert (r.pairwise["significant"] == (r.pairwise["rank_difference"] > r.critical_difference)).all()


def test_friedman_from_long_table_and_plot():
    import matplotlib
    matplotlib.use("Agg")
    from evalmix.plots.comparison import critical_difference_plot
    df = mixture_benchmark(300, 2, rng=1)
    r = friedman(df)
    assert set(r.mean_ranks.index) == {"base", "clone", "finetune"}
    assert r.mean_ranks.iloc[0] == r.mean_ranks.min()
    fig = critical_difference_plot(r)
    labels = [t.get_text() for t in fig.axes[0].texts]
    assert any(lbl.startswith("finetune") for lbl in labels)
    assert r.to_frame().shape == (3, 2)


# ----------------------------------------------------------------------------- compare_pair

def test_compare_pair_dispatches(seed_benchmark):
    a, c = _scores(seed_benchmark, "base"), _scores(seed_benchmark, "finetune")
    r = compare_pair(seed_benchmark, "base", "finetune", method="paired_t")
    assert r.estimate == pytest.approx(paired_t_runs(a, c).estimate)
    r = compare_pair(seed_benchmark, "base", "finetune", method="wilcoxon")
    assert r.p_value == pytest.approx(wilcoxon(a, c).p_value)
    r = compare_pair(seed_benchmark, "base", "finetune", method="bootstrap", n_boot=500, rng=1)
    assert r.conf_low < r.estimate < r.conf_high
    with pytest.warns(DataWarning, match="one run"):
        r = compare_pair(seed_benchmark, "base", "finetune", method="mcnemar")
    assert r.estimate == pytest.approx(mcnemar(a[0], c[0]).estimate)
    r = compare_pair(seed_benchmark, "base", "finetune", method="mcnemar", mcnemar_run=3)
    assert r.estimate == pytest.approx(mcnemar(a[3], c[3]).estimate)


def test_compare_pair_filters_and_errors():
    df = mixture_benchmark(200, 2, rng=2)
    df["half"] = np.where(df["item"] < 100, "first", "second")
    r = compare_pair(df, "base", "clone", where={"half": "first"})
    assert r.n == 100
    with pytest.raises(DataError, match="missing column"):
        compare_pair(df.drop(columns="run"), "base", "clone", run="run")
    with pytest.raises(DataError, match="duplicate"):  # no run column: one row per model x item
        compare_pair(df.drop(columns="run"), "base", "clone")
    with pytest.raises(DataError, match="no rows"):
        compare_pair(df, "base", "nope")
    with pytest.raises(DataError, match="duplicate"):
        compare_pair(pd.concat([df, df.iloc[:1]]), "base", "clone")
    with pytest.raises(DataError, match="scored by both"):
        compare_pair(df[~((df["model"] == "clone") & (df["item"] == 5))], "base", "clone")
    with pytest.raises(ValueError, match="method"):
        compare_pair(df, "base", "clone", method="magic")


def test_runs_matrices_shape():
    df = mixture_benchmark(50, 3, rng=3)
    a, b, items = runs_matrices(df, "base", "finetune")
    assert a.shape == b.shape == (3, 50) and len(items) == 50


def test_result_rendering():
    r = paired_t_runs([0.1, 0.4, 0.3], [0.2, 0.6, 0.3])
    frame = r.to_frame()
    assert {"estimate", "se", "conf_low", "conf_high", "p_value", "cohens_d"} <= set(frame.columns)
    assert "p_value" in r.to_markdown()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert r.to_dict()["table"][0]["n"] == 3


def test_compare_pair_reads_the_runs_schema():
    from evalmix import read_runs
    df = mixture_benchmark(300, 3, rng=4)
    direct = compare_pair(df, "base", "finetune")
    runs = read_runs(df.rename(columns={"correct": "ok", "item": "q"}), item="q", outcome="ok")
    assert compare_pair(runs, "base", "finetune").estimate == pytest.approx(direct.estimate)
    counts = (df.groupby(["model", "item"], observed=True)["correct"].agg(k="sum", n="count")
              .reset_index())
    kn = read_runs(counts, run=None, successes="k", trials="n")
    r = compare_pair(kn, "base", "finetune")
    assert r.estimate == pytest.approx(direct.estimate) and r.se == pytest.approx(direct.se)
    assert friedman(runs).statistic == pytest.approx(friedman(df).statistic)


def _r_reference():
    """Values written by tests/reference/comparisons_reference.R (base R stats, psych)."""
    import json
    from pathlib import Path
    path = Path(__file__).parents[1] / "reference" / "comparisons_reference.json"
    return json.loads(path.read_text())


def test_tests_equal_r():
    ref = _r_reference()
    m = ref["mcnemar"]
    r0, r1 = mcnemar(m["a"], m["b"]), mcnemar(m["a"], m["b"], correction=True)
    assert (r0.statistic, r0.p_value) == pytest.approx((m["chisq"], m["p"]), rel=1e-10)
    assert (r1.statistic, r1.p_value) == pytest.approx((m["chisq_cc"], m["p_cc"]), rel=1e-10)
    t = ref["paired_t"]
    r = paired_t_runs(np.array(t["a"]), np.array(t["b"]))
    assert (r.statistic, r.df, r.p_value) == pytest.approx((t["t"], t["df"], t["p"]), rel=1e-10)
    assert (r.conf_low, r.conf_high) == pytest.approx(tuple(t["conf_int"]), rel=1e-10)
    w = ref["wilcoxon"]
    r = wilcoxon(w["x"], w["y"], method="exact")
    assert r.details["T_plus"] == w["V"] and r.p_value == pytest.approx(w["p"], rel=1e-10)
    r = wilcoxon(w["xt"], w["yt"], method="approx")
    assert r.details["T_plus"] == w["V_tied"] and r.p_value == pytest.approx(w["p_tied"], rel=1e-10)
    r = wilcoxon(w["xt"], w["yt"], method="approx", correction=True)
    assert r.p_value == pytest.approx(w["p_tied_cc"], rel=1e-10)
    f = ref["friedman"]
    r = friedman(np.array(f["scores"]))
    assert (r.statistic, r.p_value) == pytest.approx((f["chisq"], f["p"]), rel=1e-10)


def test_old_module_name_still_imports_with_a_deprecation_warning():
    import importlib
    import sys

    import pytest

    sys.modules.pop("evalmix.tests", None)
    with pytest.warns(DeprecationWarning, match="evalmix.stats.comparisons"):
        old = importlib.import_module("evalmix.tests")
    from evalmix import comparisons
    assert old.compare_pair is comparisons.compare_pair
