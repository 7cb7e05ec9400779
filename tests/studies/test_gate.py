"""evalmix.gate: the rule and its hash, each metric's anytime-valid sequence against its closed form,
the verdict, the result, and bad input."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import evalmix
from evalmix.core.errors import ArgumentError, DataError, DataWarning
from evalmix.studies.gate import gate, gate_streams, look_points, read_rule
from evalmix.studies.sequential import normal_mixture_radius

RULE = {"alpha": 0.05, "looks": 100, "metrics": [
    {"name": "accuracy", "column": "correct", "margin": 0.05},
    {"name": "cost", "column": "cost", "direction": "lower", "margin": "10%"},
    {"name": "latency", "column": "latency", "statistic": "p90", "direction": "lower", "margin": 0.5}]}
TOML = """
looks = 100
alpha = 0.05

[[metrics]]
name = "latency"
column = "latency"
statistic = "quantile(0.9)"
direction = "lower"
margin = 0.5

[[metrics]]
column = "correct"
name = "accuracy"
margin = 0.05

[[metrics]]
name = "cost"
column = "cost"
direction = "lower"
margin = 0.1
relative = true
"""


def _table(n=600, shift=0.0, cost=1.0, seed=0, runs=2):
    rng = np.random.default_rng(seed)
    p = rng.beta(3, 1.5, n)
    rows = []
    for model, dp, c in (("base", 0.0, 1.0), ("new", shift, cost)):
        for r in range(1, runs + 1):
            rows.append(pd.DataFrame({"model": model, "item": np.arange(n), "run": r,
                                      "correct": rng.binomial(1, np.clip(p + dp, 0, 1)),
                                      "cost": c * (1 + p) * rng.gamma(4, 0.25, n),
                                      "latency": rng.lognormal(0.5, 0.4, n)}))
    return pd.concat(rows, ignore_index=True)


@pytest.fixture(scope="module")
def table():
    return _table()


def test_rule_hash_ignores_key_order_and_form():
    a = read_rule(RULE)
    b = read_rule(TOML)
    shuffled = {"metrics": list(reversed([dict(reversed(list(m.items()))) for m in RULE["metrics"]])),
                "looks": 100, "alpha": 0.05}
    assert a.hash == b.hash == read_rule(shuffled).hash
    assert len(a.hash) == 64 and int(a.hash, 16) >= 0
    assert a.hash != read_rule({**RULE, "alpha": 0.1}).hash
    # the canonical rule is what was hashed
    text = json.dumps(a.canonical(), sort_keys=True, separators=(",", ":"))
    import hashlib
    assert hashlib.sha256(text.encode()).hexdigest() == a.hash
    assert a.canonical()["metrics"][1] == {"name": "cost", "column": "cost", "statistic": "mean",
                                          "direction": "lower", "margin": 0.1, "relative": True,
                                          "test": "non-inferiority", "bounds": None, "trials": None, "weight": 1.0}
    assert np.allclose(a.shares(), 0.05 / 3)


def test_rule_file(tmp_path):
    path = tmp_path / "gate.toml"
    path.write_text(TOML)
    assert read_rule(path).hash == read_rule(str(path)).hash == read_rule(RULE).hash


@pytest.mark.parametrize("rule, match", [
    ({"metrics": []}, "non-empty list"),
    ({"alpha": 1.5, "metrics": [{"column": "x"}]}, "alpha must be < 1"),
    ({"metrics": [{"column": "x", "test": "better"}]}, "test must be one of"),
    ({"metrics": [{"column": "x", "statistic": "p100"}]}, "strictly between 0 and 1"),
    ({"metrics": [{"column": "x", "statistic": "mode"}]}, "statistic must be"),
    ({"metrics": [{"column": "x", "test": "equivalence"}]}, "needs a margin > 0"),
    ({"metrics": [{"column": "x", "colour": 1}]}, r"unknown key\(s\) \['colour'\]"),
    ({"metrics": [{"column": "x"}], "peeks": 3}, r"unknown key\(s\) \['peeks'\]"),
    ({"metrics": [{"column": "x"}, {"column": "x"}]}, "unique"),
    ({"looks": 0, "metrics": [{"column": "x"}]}, "looks must be a whole number"),
    ({"metrics": [{"column": "x", "direction": "up"}]}, "direction must be higher or lower"),
    ({"metrics": [{"name": "m"}]}, "'m' needs a column"),
])
def test_bad_rules_are_named(rule, match):
    with pytest.raises(ArgumentError, match=match):
        read_rule(rule)


def test_bad_toml_and_missing_file(tmp_path):
    with pytest.raises(DataError, match="not valid TOML"):
        read_rule("alpha = = 1\n")
    with pytest.raises(DataError, match="does not exist"):
        read_rule(str(tmp_path / "none.toml"))


def test_looks():
    assert look_points(None, 250).tolist() == [250]
    assert look_points(100, 250).tolist() == [100, 200, 250]
    assert look_points((50, 120, 400), 250).tolist() == [50, 120, 250]


def test_asymptotic_mean_and_ratio_are_their_closed_forms(table):
    rule = {"alpha": 0.05, "looks": [200, 400, 600], "min_items": 30, "metrics": [
        {"name": "cost", "column": "cost", "direction": "lower", "margin": 0.3},
        {"name": "ratio", "column": "cost", "direction": "lower", "margin": "10%"}]}
    res = gate(table, "base", "new", rule, shadow=True)
    items = table.groupby(["model", "item"])["cost"].mean().unstack(0)
    for look, n in enumerate([200, 400, 600]):
        c, b = items["new"].to_numpy()[:n], items["base"].to_numpy()[:n]
        d = c - b
        g = normal_mixture_radius(n, conf_level=1 - 0.025, n_opt=600, scale=1.0)
        row = res.path.query("metric == 'cost'").iloc[look]
        assert row["estimate"] == pytest.approx(d.mean(), abs=1e-12)
        # the running intersection can only narrow the sequence
        assert row["conf_low"] >= d.mean() - g * d.std(ddof=1) - 1e-12
        assert row["conf_high"] <= d.mean() + g * d.std(ddof=1) + 1e-12
        if look == 0:
            assert row["conf_low"] == pytest.approx(d.mean() - g * d.std(ddof=1), abs=1e-12)
        # Fieller: at each end R of the ratio interval, |mean(c) - R mean(b)| = g sd(c - R b)
        r = res.path.query("metric == 'ratio'").iloc[look]
        assert r["estimate"] == pytest.approx(c.mean() / b.mean(), rel=1e-12)
        if look == 0:
            for end in (r["conf_low"], r["conf_high"]):
                assert abs(c.mean() - end * b.mean()) == pytest.approx(g * np.std(c - end * b, ddof=1), rel=1e-9)


def test_quantile_sequence_is_the_order_statistics(table):
    rule = {"alpha": 0.1, "looks": [300], "metrics": [
        {"name": "p90", "column": "latency", "statistic": "p90", "direction": "lower", "margin": 0.4}]}
    res = gate(table, "base", "new", rule)
    p = 0.9
    scale = math.sqrt((1 - 2 * p) / (2 * math.log((1 - p) / p)))  # Kearns & Saul
    u = float(normal_mixture_radius(300, conf_level=1 - 0.05, n_opt=600, scale=scale))
    ends = {}
    for model in ("new", "base"):
        sub = table[(table["model"] == model) & (table["item"] < 300)]
        v = np.sort(sub["latency"].to_numpy())  # two runs per item: each run weighs 1/2 of an item
        cdf = np.arange(1, len(v) + 1) / len(v)
        ends[model] = (v[np.argmax(cdf >= p - u - 1e-12)], v[np.argmax(cdf > p + u + 1e-12)],
                       v[np.argmax(cdf >= p - 1e-12)])
    row = res.path.iloc[0]
    assert row["estimate"] == pytest.approx(ends["new"][2] - ends["base"][2])
    assert row["conf_low"] == pytest.approx(ends["new"][0] - ends["base"][1])
    assert row["conf_high"] == pytest.approx(ends["new"][1] - ends["base"][0])


def test_verdicts_and_result(table):
    res = gate(table, "base", "new", RULE)
    assert res.verdict in {"PASS", "INCONCLUSIVE"}
    frame = res.to_frame()
    assert frame["metric"].tolist() == ["accuracy", "cost", "latency"]
    assert {"estimate", "conf_low", "conf_high", "margin", "decision", "n_items", "alpha"} <= set(frame.columns)
    assert set(res.path.columns) >= {"metric", "n_items", "estimate", "conf_low", "conf_high"}
    assert res.rule_hash == read_rule(TOML).hash
    assert "Release gate" in repr(res) and "|" in res.to_markdown() and "tabular" in res.to_latex()
    json.dumps(res.to_dict(), allow_nan=True)
    # a clearly worse candidate fails on accuracy, early
    worse = gate(_table(shift=-0.25), "base", "new", RULE)
    assert worse.verdict == "FAIL" and worse.exit_code == 1
    assert worse.metrics.set_index("metric").loc["accuracy", "decision"] == "FAIL"
    assert worse.stopped_at is not None and worse.stopped_at <= 300


def test_one_look_mde_is_the_fixed_n_z_test(table):
    rule = {"alpha": 0.05, "metrics": [{"name": "acc", "column": "correct", "margin": 0.05},
                                      {"name": "cost", "column": "cost", "direction": "lower", "margin": 0.2}]}
    res = gate(table, "base", "new", rule)
    assert res.stopped_at is None and len(res.path) == 2
    items = table.groupby(["model", "item"])[["correct", "cost"]].mean()
    for metric, col in (("acc", "correct"), ("cost", "cost")):
        d = (items.loc["new", col] - items.loc["base", col]).to_numpy()
        z = stats.norm.ppf(1 - 0.025 / 2) + stats.norm.ppf(0.8)
        assert res.mde[metric] == pytest.approx(z * d.std(ddof=1) / math.sqrt(len(d)), rel=1e-9)
    # sequential looks cost detectable difference
    seq = gate(table, "base", "new", {**rule, "looks": 50})
    assert seq.mde["acc"] > res.mde["acc"]


@pytest.mark.slow
def test_pass_equivalence_and_superiority():
    # a candidate that costs 40% less and is as accurate: every metric passes
    better = gate(_table(cost=0.6, n=2000), "base", "new", {**RULE, "metrics": RULE["metrics"][:2]})
    assert better.verdict == "PASS" and better.exit_code == 0
    assert (better.metrics["decision"] == "PASS").all()
    eq = gate(_table(n=3000, seed=4), "base", "new",
              {"looks": 500, "metrics": [{"name": "acc", "column": "correct", "test": "equivalence", "margin": 0.06}]})
    assert eq.verdict == "PASS"
    assert eq.metrics.loc[0, "boundary"] == "in (-0.06, 0.06)"
    sup = gate(_table(n=2000, shift=0.15, seed=5), "base", "new",
               {"looks": 200, "metrics": [{"name": "acc", "column": "correct", "test": "superiority"}]})
    assert sup.verdict == "PASS" and sup.metrics.loc[0, "conf_low"] > 0
    lower = gate(_table(n=2000, cost=1.5, seed=6), "base", "new",
                 {"looks": 200, "metrics": [{"name": "c", "column": "cost", "direction": "lower", "margin": "5%"}]})
    assert lower.verdict == "FAIL" and lower.metrics.loc[0, "conf_low"] > 1.05


def test_gate_streams_agree_with_gate(table):
    rule = {"looks": 100, "metrics": [{"name": "accuracy", "column": "correct", "margin": 0.05, "bounds": [0, 1]},
                                      {"name": "cost", "column": "cost", "direction": "lower", "margin": 0.2}]}
    res = gate(table, "base", "new", rule)
    items = table.groupby(["model", "item"])[["correct", "cost"]].mean()
    streams = {k: {m: items.loc[name, col].to_numpy()[None, :] for m, col in (("accuracy", "correct"),
                                                                                ("cost", "cost"))}
               for k, name in (("c", "new"), ("b", "base"))}
    out = gate_streams(rule, streams["c"], streams["b"]).iloc[0]
    assert out["verdict"] == res.verdict
    if res.stopped_at is not None:
        assert out["stopped_at"] == res.stopped_at


def test_shadow_reports_every_look(table):
    res = gate(table, "base", "new", {**RULE, "looks": 50}, shadow=True)
    assert res.path["n_items"].max() == 600 and res.path["look"].nunique() == 12
    stopped = gate(table, "base", "new", {**RULE, "looks": 50})
    assert stopped.verdict == res.verdict
    if stopped.stopped_at is not None:
        assert stopped.path["n_items"].max() == stopped.stopped_at


def test_order_and_rng(table):
    rule = {"looks": 100, "metrics": [{"name": "acc", "column": "correct", "margin": 0.05}]}
    t = table.assign(when=600 - table["item"])
    rev = gate(t, "base", "new", rule, order="when", shadow=True)
    first = rev.path.iloc[0]
    items = t[t["item"] >= 500].groupby(["model"])["correct"].mean()
    assert first["estimate"] == pytest.approx(items["new"] - items["base"])
    a = gate(table, "base", "new", rule, rng=1, shadow=True)
    b = gate(table, "base", "new", rule, rng=1, shadow=True)
    assert a.path.equals(b.path)


def test_bad_input_is_named(table):
    rule = {"metrics": [{"name": "acc", "column": "correct"}]}
    with pytest.raises(DataError, match="model 'gpt' has no rows in column 'model'"):
        gate(table, "base", "gpt", rule)
    with pytest.raises(DataError, match="metric 'tok': column 'tokens' is not in the data"):
        gate(table, "base", "new", {"metrics": [{"name": "tok", "column": "tokens"}]})
    bad = table.astype({"cost": object})
    bad.loc[5, "cost"] = "n/a"
    with pytest.raises(DataError, match="column 'cost' has a missing or non-numeric value at row 5"):
        gate(bad, "base", "new", {"metrics": [{"column": "cost"}]})
    apart = table.assign(item=np.where(table["model"] == "new", table["item"] + 10_000, table["item"]))
    with pytest.raises(DataError, match="share no item"):
        gate(apart, "base", "new", rule)
    with pytest.warns(DataWarning, match="answered by only one"):
        gate(table[~((table["model"] == "new") & (table["item"] == 3))], "base", "new", rule)
    with pytest.raises(ArgumentError, match="two different models"):
        gate(table, "base", "base", rule)


def test_public_name():
    assert evalmix.gate is gate and evalmix.read_rule is read_rule


@pytest.mark.parametrize("metric, cost, verdict", [
    ({"test": "equivalence", "margin": 0.1}, 1.0, "PASS"),
    ({"test": "equivalence", "margin": 0.1}, 1.5, "FAIL"),
    ({"test": "superiority", "direction": "lower"}, 0.7, "PASS"),
    ({"test": "superiority", "direction": "lower"}, 1.3, "FAIL"),
    ({"test": "superiority", "direction": "higher", "margin": 0.1}, 1.3, "PASS"),
    ({"direction": "lower", "margin": 0.05}, 1.3, "FAIL"),
    ({"direction": "higher", "margin": 0.05}, 0.7, "FAIL"),
])
def test_each_test_and_direction_decides(metric, cost, verdict):
    # the same items at a constant cost ratio (little noise between the two models): the asymptotic
    # sequence of the difference is a point, decided at the first look
    rng = np.random.default_rng(1)
    base = rng.gamma(4, 0.25, 200)
    df = pd.concat([pd.DataFrame({"model": "base", "item": range(200), "cost": base}),
                    pd.DataFrame({"model": "new", "item": range(200), "cost": base * cost + rng.normal(0, 0.01, 200)})])
    res = gate(df, "base", "new", {"looks": 50, "metrics": [{"column": "cost", "relative": True, **metric}]})
    assert res.verdict == verdict and res.stopped_at == 50


def test_k_of_n_counts_and_weights():
    rng = np.random.default_rng(2)
    n = 300
    p = rng.beta(2, 1, n)
    trials = rng.integers(1, 4, size=(2, n))
    df = pd.concat([pd.DataFrame({"model": m, "item": range(n), "k": rng.binomial(trials[i], p), "n": trials[i]})
                    for i, m in enumerate(("base", "new"))])
    rule = {"metrics": [{"name": "acc", "column": "k", "trials": "n", "margin": 0.1, "weight": 3},
                        {"name": "other", "column": "n", "margin": 5}]}
    res = gate(df, "base", "new", rule)
    row = res.metrics.iloc[0]
    d = df.query("model == 'new'")["k"].to_numpy() / trials[1] - df.query("model == 'base'")["k"].to_numpy() / trials[0]
    assert row["estimate"] == pytest.approx(d.mean()) and row["method"].startswith("betting")
    assert row["alpha"] == pytest.approx(0.05 * 3 / 4) and res.metrics.iloc[1]["alpha"] == pytest.approx(0.0125)
