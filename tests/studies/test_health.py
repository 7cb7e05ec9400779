"""Benchmark health (evalmix.item_health) and version shifts (evalmix.version_shift): definitions
checked against direct computations on small tables, and errors.  The 2PL path, the seeded
simulations (recall, error rates) and the confounded design are in test_health_simulations.py (slow)."""

import math

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import ArgumentError, DataError
from evalmix.simulate import simulate_versions
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# model x item accuracies over two runs: i0 all solve among the top 3, i1 none solve, i2 flat
# (the top models' accuracies do not follow their strength), i3-i5 live
RUN1 = {"A": [1, 0, 0, 1, 1, 1], "B": [1, 0, 1, 1, 1, 0], "C": [1, 0, 0, 0, 1, 1], "D": [0, 1, 1, 0, 0, 0],
        "E": [0, 0, 0, 0, 0, 1]}
RUN2 = {"A": [1, 0, 0, 1, 1, 1], "B": [1, 0, 0, 1, 0, 1], "C": [1, 0, 1, 0, 1, 0], "D": [0, 0, 1, 0, 1, 0],
        "E": [1, 0, 0, 0, 0, 0]}


@pytest.fixture(scope="module")
def table():
    rows = [{"model": m, "item": f"i{j}", "run": r, "correct": y}
            for r, run in ((1, RUN1), (2, RUN2)) for m, ys in run.items() for j, y in enumerate(ys)]
    return pd.DataFrame(rows)


def test_item_health_definitions(table):
    h = evalmix.item_health(table, top_k=3)
    p = table.groupby(["model", "item"])["correct"].mean().unstack()      # models x items
    score = p.mean(axis=1).sort_values(ascending=False, kind="stable")
    top = list(score.index[:3])
    assert top == ["A", "B", "C"]
    assert h.models["model"].tolist()[:3] == top and h.models["top"].sum() == 3
    items = h.items.set_index("item")
    assert items.loc["i0", "reason"] == "all solve" and items.loc["i1", "reason"] == "none solve"
    # discrimination among the top: the corrected item-rest correlation over the top models
    for it in p.columns:
        x = p.loc[top, it].to_numpy()
        rest = (p.loc[top].sum(axis=1) - p.loc[top, it]).to_numpy() / (p.shape[1] - 1)
        want = np.corrcoef(x, rest)[0, 1] if x.std() > 0 and rest.std() > 0 else np.nan
        got = items.loc[it, "top_discrimination"]
        assert (math.isnan(want) and math.isnan(got)) or got == pytest.approx(want, abs=1e-12)
    assert items.loc["i2", "reason"] == "flat" and items.loc["i2", "top_discrimination"] < 0.1
    live = items[items["reason"] == ""]
    assert set(live.index) == set(p.columns) - {"i0", "i1", "i2"} - set(items.index[items["dead"]])
    b = h.benchmark.iloc[0]
    assert b["dead"] == items["dead"].sum() and b["dead_share"] == pytest.approx(items["dead"].mean())
    w = np.where(items["dead"], 0.0, np.clip(items["top_discrimination"].fillna(0), 0, None))
    assert b["effective_items"] == pytest.approx(w.sum() ** 2 / (w ** 2).sum())
    # signal: variance of the top scores; noise: item sampling of the scores relative to the others
    assert b["signal_var"] == pytest.approx(score[top].var(ddof=1))
    d = p.loc[top] - p.loc[top].mean(axis=0)
    noise = (d.var(axis=1, ddof=1) * 3 / 2 / p.shape[1]).mean()
    assert b["snr"] == pytest.approx(score[top].var(ddof=1) / noise)
    # run noise per model: within-cell variance over the two runs (unbiased), averaged over items
    within = table.groupby(["model", "item"])["correct"].var(ddof=1).groupby("model").mean()
    got = h.models.set_index("model")["run_sd"]
    np.testing.assert_allclose(got[within.index], np.sqrt(within), atol=1e-12)
    cell = table.groupby(["model", "item"])["correct"].var(ddof=1) / 2
    se_run = np.sqrt(cell.groupby("model").sum()) / p.shape[1]
    np.testing.assert_allclose(h.models.set_index("model").loc[se_run.index, "score_se_run"], se_run, atol=1e-12)
    assert b["noise_run"] == pytest.approx((se_run[top] ** 2).mean())
    assert h.method == "point_biserial"


def test_item_health_outputs_and_errors(table):
    h = evalmix.item_health(table)
    assert h.top_k == 5 and h.benchmark["top_k"].iloc[0] == 5
    assert "Item health" in repr(h) and "dead among the top 5" in str(h.summary())
    assert set(h.to_dict()) >= {"table", "models", "benchmark"}
    assert "|" in h.to_markdown() and "tabular" in h.to_latex()
    assert h.dead_items() == h.items.loc[h.items["dead"], "item"].tolist()
    with pytest.raises(ArgumentError, match="top_k=2"):
        evalmix.item_health(table, top_k=2)
    with pytest.raises(ArgumentError, match="top_k=9"):
        evalmix.item_health(table, top_k=9)
    with pytest.raises(DataError, match="'grade'"):
        evalmix.item_health(table, outcome="grade")


def test_version_shift_without_bridge_models_is_not_identified():
    runs, _ = simulate_versions(n_items=20, n_models=6, n_runs=1, n_bridge=0, rng=3)
    res = evalmix.version_shift(runs)
    assert not res.identified
    assert res.overall.set_index("test").loc["systematic", "estimate"] != res.overall.set_index(
        "test").loc["systematic", "estimate"]   # NaN: a shift cannot be told from model strength
    assert "not linked" in res.summary().header[0]
    with pytest.raises(DataError, match="'release'"):
        evalmix.version_shift(runs, version="release")
    with pytest.raises(DataError, match="one level"):
        evalmix.version_shift(runs.assign(harness_version="v1"))


def test_the_roles_read_runs_recorded_are_the_defaults() -> None:
    # a table read with its own column names needs no item=/model= again, as for evalmix.accuracy
    plain = pd.read_csv(ROOT / "data" / "example_runs.csv")
    renamed = evalmix.read_runs(plain.rename(columns={"item": "problem_id", "model": "llm"}),
                                item="problem_id", model="llm")
    a = evalmix.item_health(plain, top_k=4, method="point_biserial")
    b = evalmix.item_health(renamed, top_k=4, method="point_biserial")
    pd.testing.assert_frame_equal(a.benchmark, b.benchmark)
    np.testing.assert_array_equal(a.items["dead"].to_numpy(), b.items["dead"].to_numpy())
