"""Bootstrap family: parity with scipy.stats.bootstrap, closed forms, speed and the
instance-level versus run-level contrast of the inferential-statistics method document."""

from __future__ import annotations

import time

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evalmix import (bootstrap_ci, cluster_bootstrap, instance_bootstrap, paired_bootstrap,
                     paired_t_runs, run_level_ci)
from evalmix.core.errors import DataError
from evalmix.stats.resampling import plausible_run_scores, resample_sums
from evalmix.simulate import mixture_benchmark
from evalmix.simulate.mixture import mixture_predictions


def _mean(x, axis=-1):
    return np.mean(x, axis=axis)


def _median(x, axis=-1):
    return np.median(x, axis=axis)


@pytest.mark.parametrize("method", ["percentile", "basic", "bca"])
@pytest.mark.parametrize("stat", [_mean, _median])
def test_bootstrap_ci_equals_scipy_given_same_resamples(method, stat):
    # Same generator state -> the same (n_boot, n) index draw as scipy, so the intervals must agree.
    x = np.random.default_rng(11).gamma(2.0, size=60)
    r = bootstrap_ci(x, stat, method=method, n_boot=3000, rng=123)
    ref = stats.bootstrap((x,), stat, method=method, n_resamples=3000, rng=np.random.default_rng(123),
                          vectorized=True)
    assert r.conf_low == pytest.approx(ref.confidence_interval.low, rel=1e-12)
    assert r.conf_high == pytest.approx(ref.confidence_interval.high, rel=1e-12)
    assert r.se == pytest.approx(ref.standard_error, rel=1e-12)


def test_bca_acceleration_of_mean_shortcut_equals_generic_jackknife():
    x = np.random.default_rng(12).exponential(size=80)
    fast = bootstrap_ci(x, "mean", method="bca", n_boot=200, rng=1)
    slow = bootstrap_ci(x, _mean, method="bca", n_boot=200, rng=1)
    assert fast.details["acceleration"] == pytest.approx(slow.details["acceleration"], rel=1e-10)
    # closed form: a = sum(u^3) / (6 (sum u^2)^1.5), u = x_i - mean (jackknife of the mean)
    u = x - x.mean()
    assert fast.details["acceleration"] == pytest.approx(np.sum(u ** 3) / (6 * np.sum(u ** 2) ** 1.5))


def test_mean_bootstrap_se_matches_closed_form():
    # SE of the bootstrap mean = sd(ddof=0) / sqrt(n); the multinomial shortcut must reproduce it.
    x = (np.random.default_rng(13).random(5000) < 0.3).astype(float)
    r = bootstrap_ci(x, "mean", n_boot=20_000, rng=2)
    se = x.std() / np.sqrt(x.size)
    assert r.se == pytest.approx(se, rel=0.03)  # MC rel. error of an SD with B=20,000 is ~0.5%
    assert r.conf_low == pytest.approx(x.mean() - 1.96 * se, abs=4e-4)


def test_resample_sums_gather_path_matches_moments():
    rng = np.random.default_rng(14)
    u = rng.normal(size=(3000, 2))  # all distinct: exercises the gather path
    sums = resample_sums(u, 4000, rng)
    assert sums.mean(axis=0) == pytest.approx(u.sum(axis=0), abs=4 * np.sqrt(3000) * 1.0 / np.sqrt(4000) * 3)
    assert sums[:, 0].std() == pytest.approx(np.sqrt(3000) * u[:, 0].std(), rel=0.05)


def test_bootstrap_t_close_to_student_for_normal_data():
    x = np.random.default_rng(15).normal(10, 2, 400)
    r = bootstrap_ci(x, "mean", method="t", n_boot=5000, rng=3)
    lo, hi = stats.t.interval(0.95, x.size - 1, x.mean(), x.std(ddof=1) / np.sqrt(x.size))
    assert r.conf_low == pytest.approx(lo, abs=0.03) and r.conf_high == pytest.approx(hi, abs=0.03)
    with pytest.raises(ValueError, match="bootstrap-t"):
        bootstrap_ci(x, _median, method="t")


def test_bootstrap_ci_errors():
    with pytest.raises(DataError):
        bootstrap_ci([1.0])
    with pytest.raises(DataError, match="NaN"):
        bootstrap_ci([1.0, np.nan, 2.0])
    with pytest.raises(ValueError, match="method"):
        bootstrap_ci([1.0, 2.0], method="magic")


def test_bootstrap_is_reproducible():
    x = np.arange(20.0)
    assert bootstrap_ci(x, rng=5).conf_low == bootstrap_ci(x, rng=5).conf_low


def test_ten_thousand_resamples_of_ten_thousand_rows_is_fast():
    df = mixture_benchmark(1250, 8, rng=1)
    df = df[df["model"] == "base"]  # 10,000 rows: 1,250 items x 8 runs
    t0 = time.perf_counter()
    cluster_bootstrap(df, n_boot=10_000, rng=1)
    bootstrap_ci(df["correct"].to_numpy(), n_boot=10_000, rng=1)
    assert time.perf_counter() - t0 < 1.0


# ----------------------------------------------------------------------------- cluster / paired

def test_cluster_bootstrap_se_matches_cluster_clt():
    df = mixture_benchmark(2000, 4, rng=3)
    base = df[df["model"] == "base"]
    r = cluster_bootstrap(base, n_boot=20_000, rng=4)
    means = base.groupby("item")["correct"].mean()
    se = means.std(ddof=0) / np.sqrt(means.size)  # balanced: ratio estimator = mean of item means
    assert r.estimate == pytest.approx(base["correct"].mean())
    assert r.se == pytest.approx(se, rel=0.03)


def test_cluster_bootstrap_groups_share_resamples():
    df = mixture_benchmark(1500, 4, rng=5)
    tab = cluster_bootstrap(df, by="model", n_boot=20_000, rng=6)
    assert list(tab.table["group"]) == ["base", "clone", "finetune"]
    diff = tab.distributions["finetune"] - tab.distributions["base"]
    a = df[df["model"] == "base"].pivot(index="run", columns="item", values="correct").to_numpy()
    c = df[df["model"] == "finetune"].pivot(index="run", columns="item", values="correct").to_numpy()
    se_paired = paired_t_runs(a, c).se * np.sqrt((a.shape[1] - 1) / a.shape[1])
    assert diff.std() == pytest.approx(se_paired, rel=0.03)  # paired: far below the unpaired SE
    assert tab.to_frame().shape[0] == 3


def test_cluster_bootstrap_bca_and_errors():
    df = mixture_benchmark(300, 2, rng=7)
    r = cluster_bootstrap(df[df["model"] == "base"], method="bca", n_boot=2000, rng=1)
    assert r.conf_low < r.estimate < r.conf_high
    with pytest.raises(DataError, match="missing column"):
        cluster_bootstrap(df, item="question")


def test_paired_bootstrap_matches_paired_t():
    rng = np.random.default_rng(16)
    a = rng.integers(0, 2, (4, 3000))
    b = np.where(rng.random((4, 3000)) < 0.9, a, 1)
    r = paired_bootstrap(a, b, n_boot=20_000, rng=1)
    t = paired_t_runs(a, b)
    assert r.estimate == pytest.approx(t.estimate)
    assert r.se == pytest.approx(t.se, rel=0.03)
    assert r.p_value == pytest.approx(1 / 20_001)  # effect of ~10 SE: no replicate as extreme


@settings(max_examples=25, deadline=None)
@given(st.lists(st.floats(-1, 1), min_size=3, max_size=40), st.integers(0, 2**31 - 1))
def test_paired_bootstrap_interval_contains_estimate_for_percentile(d, seed):
    d = np.array(d)
    r = paired_bootstrap(np.zeros_like(d), d, n_boot=400, rng=seed)
    assert r.conf_low <= r.conf_high
    assert 0 < r.p_value <= 1


# ----------------------------------------------------------------------------- instance / run level

def _f1(pred, gold):
    tp = np.sum((pred == 1) & (gold == 1))
    fp = np.sum((pred == 1) & (gold == 0))
    fn = np.sum((pred == 0) & (gold == 1))
    return 2 * tp / (2 * tp + fp + fn)


def test_instance_bootstrap_estimate_is_pooled_metric():
    preds, gold = mixture_predictions(500, 4, rng=1)
    r = instance_bootstrap(preds, gold, metric="f1", n_boot=2000, rng=2)
    assert r.estimate == pytest.approx(_f1(preds.ravel(), np.tile(gold, 4)))
    acc = instance_bootstrap(preds, gold, metric="accuracy", n_boot=20_000, rng=3)
    p = (preds == gold).mean()
    # resampling l = 500 pairs: SE is the binomial sqrt(p (1 - p) / l)
    assert acc.se == pytest.approx(np.sqrt(p * (1 - p) / 500), rel=0.03)


def test_instance_bootstrap_builtin_f1_matches_callable():
    preds, gold = mixture_predictions(300, 3, rng=4)
    fast = instance_bootstrap(preds, gold, metric="f1", n_boot=3000, rng=5)
    slow = instance_bootstrap(preds, gold, metric=_f1, n_boot=3000, rng=6)
    assert fast.estimate == pytest.approx(slow.estimate)
    assert fast.se == pytest.approx(slow.se, rel=0.1)
    assert fast.conf_low == pytest.approx(slow.conf_low, abs=0.02)


def test_instance_bootstrap_multiclass_metrics():
    rng = np.random.default_rng(7)
    gold = rng.integers(0, 3, 400)
    preds = np.where(rng.random((2, 400)) < 0.7, gold, rng.integers(0, 3, (2, 400)))
    r = instance_bootstrap(preds, gold, metric="macro_f1", n_boot=500, rng=1)
    pooled_p, pooled_g = preds.ravel(), np.tile(gold, 2)
    f1s = [2 * np.sum((pooled_p == c) & (pooled_g == c)) / (np.sum(pooled_p == c) + np.sum(pooled_g == c))
           for c in range(3)]
    assert r.estimate == pytest.approx(np.mean(f1s))
    for metric in ("precision", "recall", "accuracy"):
        assert 0 <= instance_bootstrap(preds, gold, metric=metric, n_boot=100, rng=1).estimate <= 1
    with pytest.raises(DataError):
        instance_bootstrap(preds, gold[:-1])


def test_plausible_run_scores_match_closed_form_for_accuracy():
    preds, gold = mixture_predictions(400, 6, rng=8)
    s = plausible_run_scores(preds, gold, metric="accuracy", n_sims=20_000, rng=9)
    q = (preds == gold).mean(axis=0)  # per-instance share of runs that are right
    assert s.mean() == pytest.approx(q.mean(), abs=4 * np.sqrt(np.sum(q * (1 - q))) / 400 / np.sqrt(20_000))
    assert s.std() == pytest.approx(np.sqrt(np.sum(q * (1 - q))) / 400, rel=0.03)


def test_run_level_ci_student_equals_scipy():
    x = np.array([0.44, 0.47, 0.45, 0.49, 0.46])
    r = run_level_ci(x, method="t")
    lo, hi = stats.t.interval(0.95, 4, x.mean(), stats.sem(x))
    assert (r.conf_low, r.conf_high) == pytest.approx((lo, hi), rel=1e-12)
    for m in ("percentile", "bca", "t_boot"):
        rr = run_level_ci(x, method=m, n_boot=2000, rng=1)
        assert rr.conf_low <= rr.estimate <= rr.conf_high
    with pytest.raises(DataError):
        run_level_ci([0.5])


def test_result_frames():
    r = bootstrap_ci(np.arange(10.0), n_boot=100, rng=1)
    assert {"estimate", "conf_low", "conf_high", "bias"} <= set(r.to_frame().columns)
    assert isinstance(r.to_frame(), pd.DataFrame)


def test_cluster_bootstrap_reads_counts_schema():
    from evalmix import read_runs
    df = mixture_benchmark(400, 3, rng=9)
    base = df[df["model"] == "base"]
    counts = base.groupby("item")["correct"].agg(k="sum", n="count").reset_index().assign(model="base")
    kn = read_runs(counts, run=None, successes="k", trials="n")
    a = cluster_bootstrap(base, n_boot=3000, rng=1)
    b = cluster_bootstrap(kn, n_boot=3000, rng=1)
    assert b.estimate == pytest.approx(a.estimate)
    assert b.se == pytest.approx(a.se, rel=0.1)
