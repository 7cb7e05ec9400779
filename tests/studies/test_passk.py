"""pass@k and pass^k: closed forms, exact unbiasedness, interval coverage with known truth."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special, stats

from evalmix.core.errors import DataError, SingularFitWarning
from evalmix.studies.passk import item_counts, pass_at_k_item, pass_hat_k_item, pass_k, pass_k_model


def test_closed_forms_small():
    # n = 5 attempts, c = 2 successes, k = 2: 1 - C(3,2)/C(5,2) = 0.7 and C(2,2)/C(5,2) = 0.1
    assert pass_at_k_item(5, 2, 2) == pytest.approx(0.7, abs=1e-15)
    assert pass_hat_k_item(5, 2, 2) == pytest.approx(0.1, abs=1e-15)
    # k = 1 is the item's accuracy; all successes; fewer failures than k
    assert pass_at_k_item(8, 3, 1) == pytest.approx(3 / 8)
    assert pass_hat_k_item(8, 3, 1) == pytest.approx(3 / 8)
    assert pass_hat_k_item(4, 4, 4) == 1.0 and pass_hat_k_item(4, 3, 4) == 0.0
    assert pass_at_k_item(10, 9, 2) == 1.0
    for n in range(1, 12):
        for c in range(n + 1):
            for k in range(1, n + 1):
                assert pass_at_k_item(n, c, k) == pytest.approx(1 - math.comb(n - c, k) / math.comb(n, k), abs=1e-13)
                assert pass_hat_k_item(n, c, k) == pytest.approx(math.comb(c, k) / math.comb(n, k), abs=1e-13)


@settings(max_examples=80, deadline=None)
@given(st.integers(1, 25), st.floats(0, 1, allow_subnormal=False).map(lambda v: 0.0 if v < 1e-12 else v), st.data())
def test_estimators_are_exactly_unbiased(n, p, data):
    k = data.draw(st.integers(1, n))
    c = np.arange(n + 1)
    pmf = stats.binom.pmf(c, n, p)
    assert float(pmf @ pass_hat_k_item(n, c, k)) == pytest.approx(p**k, abs=1e-10)
    assert float(pmf @ pass_at_k_item(n, c, k)) == pytest.approx(1 - (1 - p) ** k, abs=1e-10)


def _runs(rng, p, n_attempts, model="m"):
    y = (rng.random((len(p), n_attempts)) < p[:, None]).astype(int)
    return pd.DataFrame({"model": model, "item": np.repeat(np.arange(len(p)), n_attempts),
                         "run": np.tile(np.arange(n_attempts), len(p)), "correct": y.ravel()})


def _truth(a, b, k):
    return {"pass^k": np.exp(special.betaln(a + k, b) - special.betaln(a, b)),
            "pass@k": -np.expm1(special.betaln(a, b + k) - special.betaln(a, b))}


def test_table_and_bootstrap():
    rng = np.random.default_rng(3)
    df = pd.concat([_runs(rng, rng.beta(2, 1, 60), 5, "a"), _runs(rng, rng.beta(1, 1, 60), 5, "b")])
    r = pass_k(df, [1, 3], by="model")
    assert r.table[["model", "metric", "k"]].values.tolist() == [
        ["a", "pass@k", 1], ["a", "pass@k", 3], ["a", "pass^k", 1], ["a", "pass^k", 3],
        ["b", "pass@k", 1], ["b", "pass@k", 3], ["b", "pass^k", 1], ["b", "pass^k", 3]]
    # k = 1: both are the accuracy with the cluster SE
    a = df[df["model"] == "a"].groupby("item")["correct"].mean()
    t = r.table.set_index(["model", "metric", "k"])
    assert t.loc[("a", "pass^k", 1), "estimate"] == pytest.approx(a.mean())
    assert t.loc[("a", "pass@k", 1), "se"] == pytest.approx(a.std(ddof=1) / np.sqrt(len(a)))
    b1 = pass_k(df, 3, ci="bootstrap", rng=5, n_boot=4000)
    b2 = pass_k(df, 3, ci="bootstrap", rng=5, n_boot=4000)
    pd.testing.assert_frame_equal(b1.table, b2.table)
    c = pass_k(df, 3).table
    # the percentile bootstrap and the CLT interval agree to a fraction of an SE on 60 items
    assert np.allclose(b1.table["conf_low"], c["conf_low"], atol=0.4 * c["se"].max())
    assert np.allclose(b1.table["conf_high"], c["conf_high"], atol=0.4 * c["se"].max())


@pytest.mark.slow  # a simulation or a large fit: the second test step
def test_cluster_interval_coverage_simulation():
    a, b, k, n_items, n_att = 2.0, 1.5, 3, 100, 6
    truth = _truth(a, b, k)
    rng = np.random.default_rng(2026)
    n_sims, level = 500, 0.95
    hits = {"pass@k": 0, "pass^k": 0}
    for _ in range(n_sims):
        t = pass_k(_runs(rng, rng.beta(a, b, n_items), n_att), k).table.set_index("metric")
        for m in hits:
            hits[m] += t.loc[m, "conf_low"] <= truth[m] <= t.loc[m, "conf_high"]
    mcse = np.sqrt(level * (1 - level) / n_sims)
    for m, h in hits.items():
        assert abs(h / n_sims - level) <= 2 * mcse, (m, h / n_sims)


@pytest.mark.slow  # sampling or a simulation: the second test step
def test_model_based_extrapolates_with_coverage():
    """k = 12 from 4 attempts per item: the beta-binomial interval covers the known truth."""
    a, b, k, n_items, n_att = 3.0, 1.2, 12, 200, 4
    truth = _truth(a, b, k)
    rng = np.random.default_rng(77)
    n_sims, level = 300, 0.95
    hits = {"pass@k": 0, "pass^k": 0}
    for _ in range(n_sims):
        t = pass_k_model(_runs(rng, rng.beta(a, b, n_items), n_att), k).table.set_index("metric")
        for m in hits:
            hits[m] += t.loc[m, "conf_low"] <= truth[m] <= t.loc[m, "conf_high"]
    mcse = np.sqrt(level * (1 - level) / n_sims)
    for m, h in hits.items():
        assert abs(h / n_sims - level) <= 2 * mcse, (m, h / n_sims)


def test_model_based_recovers_parameters_and_agrees_within_attempts():
    rng = np.random.default_rng(8)
    df = _runs(rng, rng.beta(2, 3, 3000), 5)
    t = pass_k_model(df, [1, 3]).table.set_index(["metric", "k"])
    assert t.loc[("pass^k", 1), "alpha"] == pytest.approx(2, rel=0.15)
    assert t.loc[("pass^k", 1), "beta"] == pytest.approx(3, rel=0.15)
    assert t.loc[("pass^k", 1), "icc"] == pytest.approx(1 / 6, rel=0.15)
    e = pass_k(df, 3).table.set_index("metric")
    for m in ("pass@k", "pass^k"):
        assert t.loc[(m, 3), "estimate"] == pytest.approx(e.loc[m, "estimate"], abs=2 * e.loc[m, "se"])


def test_model_boundary_warns():
    df = pd.DataFrame({"model": "m", "item": np.repeat(np.arange(20), 3), "correct": 1})
    with pytest.warns(SingularFitWarning, match="boundary"):
        pass_k_model(df, 2)


def test_inputs():
    df = pd.DataFrame({"model": "m", "item": [1, 1, 1, 2, 2], "correct": [1, 0, 1, 1, 1]})
    with pytest.raises(DataError, match="item 2 has 2 scored attempts, fewer than k=3"):
        pass_k(df, 3)
    with pytest.raises(DataError, match="0/1 outcomes"):
        pass_k(df.assign(correct=[0.5, 1, 1, 1, 0]), 1)
    with pytest.raises(ValueError, match="metric"):
        pass_k(df, 1, metric="pass@1")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        st_df = pd.concat([df.assign(status="ok"),
                           pd.DataFrame({"model": "m", "item": [2], "correct": [np.nan], "status": ["error"]})])
    counts = item_counts(st_df)
    assert counts[["n", "c"]].values.tolist() == [[3, 2], [2, 2]]
    # k-of-n counts in
    from evalmix import read_runs

    cnt = read_runs(pd.DataFrame({"model": "m", "item": [1, 2], "k": [2, 1], "n": [3, 4]}), run=None,
                    successes="k", trials="n")
    t = pass_k(cnt, 2, metric="pass^k").table
    assert t["estimate"].iloc[0] == pytest.approx((1 / 3 + 0) / 2)
