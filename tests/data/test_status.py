"""Errored and unscored samples: coverage, Manski bounds and the missing-at-random estimate."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalmix
from evalmix.stats.descriptive import accuracy, accuracy_bounds
from evalmix.core.errors import DataError
from evalmix.data.status import scored_rows


def _table():
    # model a: item 1 scored twice (1, 1); item 2 one 0 and one error; item 3 one 1 and one cancel
    # model b: item 1 (0, 1); item 2 (1, 1); item 3 one unscored and one 0
    return pd.DataFrame({
        "model": ["a"] * 6 + ["b"] * 6, "item": [1, 1, 2, 2, 3, 3] * 2, "run": [1, 2] * 6,
        "correct": [1, 1, 0, None, 1, None, 0, 1, 1, 1, None, 0],
        "status": ["ok", "ok", "ok", "error", "ok", "cancelled", "ok", "ok", "ok", "ok", "unscored", "ok"]})


def test_bounds_hand_worked():
    t = accuracy_bounds(_table(), "model").table.set_index("model")
    # a: 6 attempted, 4 scored, 3 correct
    assert t.loc["a", ["n_attempted", "n_scored", "k"]].tolist() == [6, 4, 3]
    assert t.loc["a", ["n_error", "n_cancelled", "n_unscored"]].tolist() == [1, 1, 0]
    assert t.loc["a", "coverage"] == pytest.approx(4 / 6)
    assert t.loc["a", "estimate"] == pytest.approx(3 / 4)
    assert t.loc["a", "worst_case"] == pytest.approx(3 / 6)
    assert t.loc["a", "best_case"] == pytest.approx(5 / 6)
    # MAR within item: item means 1, 0, 1, each over 2 attempts -> (2 + 0 + 2) / 6
    assert t.loc["a", "estimate_mar_item"] == pytest.approx(4 / 6)
    # b: item means 0.5, 1, 0 -> (1 + 2 + 0) / 6
    assert t.loc["b", "estimate_mar_item"] == pytest.approx(3 / 6)
    assert t.loc["b", ["worst_case", "best_case"]].tolist() == pytest.approx([3 / 6, 4 / 6])
    # Wilson limits of the extremes, as binom_ci computes them
    lo, _ = evalmix.binom_ci(3, 6)
    _, hi = evalmix.binom_ci(5, 6)
    assert t.loc["a", "bounds_low"] == pytest.approx(float(lo))
    assert t.loc["a", "bounds_high"] == pytest.approx(float(hi))
    # pooled over models: items are the cells; item means 3/4, 2/3, 1/2 over 4 attempts each
    pooled = accuracy_bounds(_table()).table.iloc[0]
    assert pooled["estimate_mar_item"] == pytest.approx((3 + 8 / 3 + 2) / 12)


def test_item_without_scored_sample_falls_back_to_group_mean():
    df = pd.DataFrame({"model": "a", "item": [1, 1, 2, 2], "correct": [1, 0, None, None],
                       "status": ["ok", "ok", "error", "error"]})
    t = accuracy_bounds(df, "model").table.iloc[0]
    assert t["n_items_unscored"] == 1
    assert t["estimate_mar_item"] == pytest.approx(0.5)


def test_accuracy_reports_coverage_and_keeps_old_output_without_status():
    df = _table()
    t = accuracy(df, "model").table.set_index("model")
    assert t.loc["a", ["n", "n_attempted"]].tolist() == [4, 6]
    assert t.loc["a", "coverage"] == pytest.approx(4 / 6)
    assert t.loc["a", "estimate"] == pytest.approx(0.75)
    lo, hi = evalmix.binom_ci(3, 4)
    assert t.loc["a", "conf_low"] == pytest.approx(float(lo)) and t.loc["a", "conf_high"] == pytest.approx(float(hi))
    c = accuracy(df, "model", ci="cluster", item="item").table.set_index("model")
    assert c.loc["b", "coverage"] == pytest.approx(5 / 6)
    plain = accuracy(scored_rows(df).drop(columns="status"), "model").table
    assert list(plain.columns) == ["model", "n", "k", "estimate", "conf_low", "conf_high"]
    assert plain["estimate"].tolist() == t["estimate"].tolist()


def test_errors():
    df = _table()
    bad = df.copy()
    bad.loc[0, "correct"] = None
    with pytest.raises(DataError, match="missing in rows whose status is 'ok'"):
        accuracy(bad, "model")
    with pytest.raises(DataError, match="missing in rows whose status is 'ok'"):
        accuracy_bounds(bad, "model")
    with pytest.raises(DataError, match="status column 'state' not found"):
        accuracy(df, "model", status="state")
    none = df.assign(status="error")
    with pytest.raises(DataError, match="no sample is scored"):
        accuracy(none, "model")
    half = df.assign(status=np.where(df["model"] == "b", "error", df["status"]))
    with pytest.warns(evalmix.DataWarning, match="no scored sample"):
        t = accuracy(half, "model").table.set_index("model")
    assert t.loc["b", "n"] == 0 and t.loc["b", "coverage"] == 0 and np.isnan(t.loc["b", "estimate"])
    t = accuracy_bounds(half, "model").table.set_index("model")
    assert np.isnan(t.loc["b", "estimate"]) and t.loc["b", "best_case"] == 1.0


@settings(max_examples=50, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 4), st.sampled_from(["ok", "error", "unscored"]), st.booleans()),
                min_size=1, max_size=40))
def test_bounds_bracket_every_completion(rows):
    """Whatever the unscored samples' true outcomes, the full-data accuracy lies in the bounds."""
    df = pd.DataFrame(rows, columns=["item", "status", "truth"])
    df["correct"] = np.where(df["status"] == "ok", df["truth"].astype(float), np.nan)
    t = accuracy_bounds(df).table.iloc[0]
    full = df["truth"].mean()
    assert t["worst_case"] - 1e-12 <= full <= t["best_case"] + 1e-12
    assert t["bounds_low"] <= t["worst_case"] + 1e-12 and t["bounds_high"] >= t["best_case"] - 1e-12
    assert t["coverage"] == pytest.approx((df["status"] == "ok").mean())
    if (df["status"] == "ok").any():
        assert t["worst_case"] - 1e-12 <= t["estimate_mar_item"] <= t["best_case"] + 1e-12


@pytest.mark.slow  # a simulation or a large fit: the second test step
def test_mar_item_is_unbiased_when_errors_depend_on_item_only():
    """Errors concentrated on hard items bias the scored-only accuracy; MAR within item does not."""
    rng = np.random.default_rng(11)
    n_items, n_runs, reps = 200, 4, 200
    est_scored, est_mar, truth = [], [], []
    for _ in range(reps):
        p = rng.beta(2, 2, n_items)
        p_err = 0.6 * (1 - p)  # hard items error more often
        y = rng.random((n_items, n_runs)) < p[:, None]
        err = rng.random((n_items, n_runs)) < p_err[:, None]
        df = pd.DataFrame({"item": np.repeat(np.arange(n_items), n_runs),
                           "correct": np.where(err, np.nan, y).ravel(),
                           "status": np.where(err, "error", "ok").ravel()})
        t = accuracy_bounds(df).table.iloc[0]
        est_scored.append(t["estimate"])
        est_mar.append(t["estimate_mar_item"])
        truth.append(p.mean())
    bias_scored = np.mean(np.array(est_scored) - truth)
    bias_mar = np.mean(np.array(est_mar) - truth)
    se_mar = np.std(np.array(est_mar) - truth, ddof=1) / np.sqrt(reps)
    assert bias_scored > 0.02  # dropping errors inflates accuracy
    # within-item MAR: bias only from items with no scored run (rare with 4 runs) -> ~0
    assert abs(bias_mar) < max(3 * se_mar, 0.003)


# ----------------------------------------------------------------------------------------------
# real Inspect logs (fixtures written by inspect_ai, see tests/fixtures/make_fixtures.sh)


FIXTURES = __import__("pathlib").Path(__file__).parents[1] / "fixtures" / "inspect"


@pytest.mark.parametrize("version", ["v0.3.285", "v0.3.170"])
def test_bounds_on_real_inspect_logs(version):
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        df = evalmix.read_inspect(FIXTURES / version, scorer="match", errors="keep")
        acc = accuracy(df, ["task", "model"]).table.set_index("task")
    b = accuracy_bounds(df, ["task", "model"]).table.set_index("task")
    tol = df[df["task"] == "tolerant"]
    # the "tolerant" task: 8 samples (4 items x 2 epochs), one failed with an error; the scored
    # ones are right once (item 1, epoch 1)
    assert len(tol) == 8 and (tol["status"] == "error").sum() == 1
    err_item = tol.loc[tol["status"] == "error", "item"].iloc[0]
    k = int(tol["correct"].sum())
    assert b.loc["tolerant", ["n_attempted", "n_scored", "n_error", "k"]].tolist() == [8, 7, 1, k]
    assert b.loc["tolerant", "coverage"] == pytest.approx(7 / 8)
    assert b.loc["tolerant", "estimate"] == pytest.approx(k / 7)
    assert b.loc["tolerant", "worst_case"] == pytest.approx(k / 8)
    assert b.loc["tolerant", "best_case"] == pytest.approx((k + 1) / 8)
    # MAR within item: the errored sample takes the mean of its item's other epoch
    other = tol.loc[(tol["item"] == err_item) & (tol["status"] == "ok"), "correct"].mean()
    assert b.loc["tolerant", "estimate_mar_item"] == pytest.approx((k + other) / 8)
    # accuracy() reports the same coverage; a task with no scored sample has no estimate
    assert acc.loc["tolerant", "coverage"] == pytest.approx(7 / 8)
    assert acc.loc["tolerant", "estimate"] == pytest.approx(k / 7)
    assert (b["worst_case"] <= b["best_case"]).all()
    unscored = b[b["n_scored"] == 0]
    for task, row in unscored.iterrows():
        assert np.isnan(row["estimate"]) and np.isnan(row["estimate_mar_item"])
        assert row["worst_case"] == 0 and row["best_case"] == 1
        assert acc.loc[task, "n"] == 0 and np.isnan(acc.loc[task, "estimate"])
    # fully scored tasks: every estimate equals the plain accuracy
    full = b[b["coverage"] == 1]
    assert np.allclose(full["estimate"], full["worst_case"]) and np.allclose(full["estimate"], full["best_case"])


def test_other_analyses_name_the_unscored_rows():
    df = evalmix.simulate.glmm_runs(2, 10, 2, rng=1)
    df["status"] = "ok"
    df.loc[0, "correct"] = np.nan
    df.loc[0, "status"] = "error"
    with pytest.raises(DataError, match="has a 'status' column: unscored samples"):
        evalmix.flip_rate(df, "model")
    scored = evalmix.status.scored_rows(df)
    assert len(scored) == len(df) - 1
    with pytest.warns(evalmix.DataWarning, match="fewer than two runs"):
        flips = evalmix.flip_rate(scored, "model").to_frame()
    assert flips["n_items"].tolist() == [9, 10]  # the item that lost a run has no flip to count
