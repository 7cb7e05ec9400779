"""Anytime-valid confidence sequences (evalmix.sequential): parity with confseq, the stopping rule,
item clustering of repeated runs, and (slow step) false-positive rate, coverage and savings."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import ArgumentError, DataError
from evalmix.studies.sequential import (
    METHODS,
    confidence_sequence,
    normal_mixture_radius,
    sequential_accuracy,
    sequential_difference,
    simulate_stopping,
    stopping_time,
)

REF = json.loads((Path(__file__).parents[1] / "reference" / "confseq_reference.json").read_text())
CASES = {c["name"]: c for c in REF["cases"]}


# ---------------------------------------------------------------------------------------------
# parity with confseq (tests/reference/confseq_reference.py)


def _scaled(case: dict) -> tuple[np.ndarray, float, float]:
    a, b = case["bounds"]
    return np.asarray(case["x"]), a, b


@pytest.mark.parametrize("name", sorted(CASES))
def test_betting_equals_confseq_betting_cs(name):
    case = CASES[name]
    x, a, b = _scaled(case)
    cs = confidence_sequence(x, method="betting", bounds=(a, b), conf_level=1 - REF["alpha"]).to_frame()
    # same grid of candidate means (1000 breaks), same bets: equal up to rounding
    np.testing.assert_allclose((cs["conf_low"] - a) / (b - a), case["betting_low"], atol=1e-12)
    np.testing.assert_allclose((cs["conf_high"] - a) / (b - a), case["betting_high"], atol=1e-12)


@pytest.mark.parametrize("name", sorted(CASES))
def test_betting_is_close_to_confseq_hedged_cs(name):
    # hedged_cs also caps the bets against the mean at m (see the reference script): the two
    # CSs differ by a few grid cells, not more, once the sequence has left the whole range
    case = CASES[name]
    x, a, b = _scaled(case)
    cs = confidence_sequence(x, method="betting", bounds=(a, b)).to_frame().iloc[30:]
    low = (cs["conf_low"] - a) / (b - a)
    high = (cs["conf_high"] - a) / (b - a)
    assert np.max(np.abs(low - np.asarray(case["hedged_low"])[30:])) <= 0.04
    assert np.max(np.abs(high - np.asarray(case["hedged_high"])[30:])) <= 0.04


@pytest.mark.parametrize("name", sorted(CASES))
def test_empirical_bernstein_equals_confseq(name):
    case = CASES[name]
    x, a, b = _scaled(case)
    cs = confidence_sequence(x, method="empirical_bernstein", bounds=(a, b), running_intersection=False).to_frame()
    np.testing.assert_allclose((cs["conf_low"] - a) / (b - a), case["eb_low"], atol=1e-12)
    np.testing.assert_allclose((cs["conf_high"] - a) / (b - a), case["eb_high"], atol=1e-12)


def test_normal_mixture_radius_equals_confseq():
    case = CASES["bernoulli_07"]
    t = np.arange(1, len(case["x"]) + 1)
    r = normal_mixture_radius(t, conf_level=1 - REF["alpha"], n_opt=REF["n_opt"])
    np.testing.assert_allclose(r, case["nm_radius"], rtol=1e-12)
    # the CS is the running mean plus or minus the radius (scale (b - a) / 2 on other ranges)
    x, a, b = _scaled(CASES["paired_difference_4_runs"])
    cs = confidence_sequence(x, method="normal_mixture", bounds=(a, b), n_opt=REF["n_opt"],
                             running_intersection=False).to_frame()
    rr = np.asarray(CASES["paired_difference_4_runs"]["nm_radius"]) * (b - a)
    mean = np.cumsum(x) / np.arange(1, len(x) + 1)
    np.testing.assert_allclose(cs["conf_low"], np.maximum(mean - rr, a), atol=1e-12)
    np.testing.assert_allclose(cs["conf_high"], np.minimum(mean + rr, b), atol=1e-12)


def test_reference_records_the_confseq_version():
    assert REF["confseq_version"] == "0.0.11"
    assert REF["generator"] == "tests/reference/confseq_reference.py"


# ---------------------------------------------------------------------------------------------
# the sequences


@pytest.mark.parametrize("method", METHODS)
def test_sequences_narrow_and_contain_the_mean(method):
    x = np.random.default_rng(5).binomial(1, 0.3, size=2000)
    cs = confidence_sequence(x, method=method).to_frame()
    assert (cs["conf_low"] <= cs["estimate"] + 1e-12).all() and (cs["estimate"] <= cs["conf_high"] + 1e-12).all()
    # running intersection: never wider than before
    assert (np.diff(cs["width"]) <= 1e-12).all()
    assert cs["width"].iloc[-1] < 0.1
    assert cs["conf_low"].iloc[-1] < 0.3 < cs["conf_high"].iloc[-1]


def test_betting_adapts_to_small_variance():
    # a 95%-accurate model: the betting CS uses the small variance, Hoeffding's mixture cannot
    x = np.random.default_rng(2).binomial(1, 0.95, size=1000)
    w = {m: confidence_sequence(x, method=m).to_frame()["width"].iloc[-1] for m in METHODS}
    assert w["betting"] < w["empirical_bernstein"] < w["normal_mixture"]
    assert w["betting"] < 0.6 * w["normal_mixture"]


def test_confidence_sequence_is_wider_than_fixed_n_interval():
    # the price of looking at every step: wider than the Wald interval at the same n
    x = np.random.default_rng(3).binomial(1, 0.5, size=500)
    cs = confidence_sequence(x, method="betting")
    wald = 2 * 1.959964 * np.sqrt(x.mean() * (1 - x.mean()) / 500)
    assert cs.to_frame()["width"].iloc[-1] > wald


def test_bounds_are_checked():
    with pytest.raises(DataError, match="observation 2 is 1.5"):
        confidence_sequence([0.1, 0.2, 1.5])
    with pytest.raises(DataError, match="low < high"):
        confidence_sequence([0.1], bounds=(1.0, 0.0))
    with pytest.raises(DataError, match="non-empty"):
        confidence_sequence([])
    with pytest.raises(ArgumentError, match="method"):
        confidence_sequence([0.1], method="bonferroni")  # type: ignore[arg-type]
    with pytest.raises(ArgumentError, match="target_width"):
        confidence_sequence([0.1], target_width=-1)
    with pytest.raises(ArgumentError, match="conf_level"):
        confidence_sequence([0.1], conf_level=1.5)


# ---------------------------------------------------------------------------------------------
# the stopping rule


def test_stopping_time_rules():
    lo = np.array([-0.5, -0.2, -0.1, 0.01, 0.05])
    hi = np.array([0.5, 0.4, 0.3, 0.2, 0.15])
    assert stopping_time(lo, hi, null=0.0) == (4, "above")
    assert stopping_time(-hi, -lo, null=0.0) == (4, "below")
    assert stopping_time(lo, hi, target_width=0.4) == (3, "width")
    assert stopping_time(lo, hi, null=0.0, target_width=0.4) == (3, "width")  # whichever comes first
    assert stopping_time(lo, hi, null=0.0, max_n=2) == (2, "budget")
    assert stopping_time(lo, hi, target_width=0.01) == (None, "continue")
    with pytest.raises(DataError, match="one length"):
        stopping_time([0.0], [1.0, 2.0])


def test_result_reports_the_stop():
    x = np.random.default_rng(1).binomial(1, 0.7, size=400)
    cs = confidence_sequence(x, target_width=0.2)
    table = cs.to_frame()
    k = cs.stopped_at
    assert cs.decision == "width" and table["width"].iloc[k - 1] <= 0.2 < table["width"].iloc[k - 2]
    assert cs.estimate == pytest.approx(x[:k].mean(), abs=1e-12)
    assert cs.conf_low == table["conf_low"].iloc[k - 1] and cs.n_answers == k
    assert cs.stop_frame()["decision"].item() == "width"
    assert "stopped after" in repr(cs) and "anytime-valid" in repr(cs)
    d = cs.to_dict()
    assert d["stopped_at"] == k and d["decision"] == "width" and len(d["table"]) == 400
    assert "CI low" in cs.to_latex() and "conf_low" in cs.to_markdown()


def test_budget_truncates_the_sequence():
    x = np.random.default_rng(1).binomial(1, 0.5, size=400)
    cs = confidence_sequence(x, null=0.5, max_n=100)
    assert cs.stopped_at == 100 and cs.decision == "budget" and len(cs.to_frame()) == 100


# ---------------------------------------------------------------------------------------------
# from a runs table: items are the unit


def _runs(n_items: int, n_runs: int, pa: np.ndarray, pb: np.ndarray, seed: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for model, p in (("A", pa), ("B", pb)):
        y = rng.random((n_items, n_runs)) < p[:, None]
        for i in range(n_items):
            for r in range(n_runs):
                rows.append({"model": model, "item": f"q{i:04d}", "run": r, "correct": int(y[i, r])})
    return pd.DataFrame(rows)


def test_accuracy_sequence_uses_item_means():
    rng = np.random.default_rng(11)
    p = rng.beta(3, 2, 150)
    df = _runs(150, 3, p, p, seed=12)
    cs = sequential_accuracy(df, "A", method="empirical_bernstein")
    sub = df[df["model"] == "A"]
    means = sub.groupby("item", sort=False)["correct"].mean().to_numpy()
    direct = confidence_sequence(means, method="empirical_bernstein", weights=np.full(150, 3))
    pd.testing.assert_frame_equal(cs.to_frame(), direct.to_frame())
    assert cs.to_frame()["n_answers"].iloc[-1] == 450
    assert cs.label == "accuracy of A"


def test_accuracy_arrival_order_and_shuffle():
    rng = np.random.default_rng(1)
    p = np.sort(rng.beta(2, 2, 120))  # items sorted by difficulty: a biased arrival order
    df = _runs(120, 2, p, p, seed=2)
    df["t"] = -df.index  # the reverse of the table's order
    a = sequential_accuracy(df, "A", method="normal_mixture").to_frame()
    b = sequential_accuracy(df, "A", method="normal_mixture", order="t").to_frame()
    means = df[df["model"] == "A"].groupby("item", sort=False)["correct"].mean().to_numpy()
    assert a["estimate"].iloc[0] == pytest.approx(means[0])
    assert b["estimate"].iloc[0] == pytest.approx(means[-1])
    c = sequential_accuracy(df, "A", method="normal_mixture", rng=3).to_frame()
    d = sequential_accuracy(df, "A", method="normal_mixture", rng=3).to_frame()
    pd.testing.assert_frame_equal(c, d)
    # every order ends at the same overall mean
    for f in (a, b, c):
        assert f["estimate"].iloc[-1] == pytest.approx(means.mean(), abs=1e-12)
    with pytest.raises(DataError, match="order column 'when'"):
        sequential_accuracy(df, "A", order="when")


def test_accuracy_needs_a_model_when_there_are_several():
    p = np.full(20, 0.5)
    df = _runs(20, 1, p, p, seed=1)
    with pytest.raises(DataError, match="2 models"):
        sequential_accuracy(df)
    one = df[df["model"] == "B"]
    assert sequential_accuracy(one).label == "accuracy of B"
    with pytest.raises(DataError, match="'C'"):
        sequential_accuracy(df, "C")


def test_difference_decides_a_real_gap_and_is_paired():
    rng = np.random.default_rng(21)
    pa = rng.beta(2, 2, 800)
    pb = np.clip(pa + 0.12, 0, 1)
    df = _runs(800, 3, pa, pb, seed=22)
    cs = sequential_difference(df, "A", "B")
    assert cs.decision == "above" and cs.conf_low > 0
    assert cs.label == "B - A"
    k = cs.stopped_at
    ma = df[df.model == "A"].groupby("item", sort=False)["correct"].mean().to_numpy()
    mb = df[df.model == "B"].groupby("item", sort=False)["correct"].mean().to_numpy()
    assert cs.estimate == pytest.approx((mb - ma)[:k].mean(), abs=1e-12)
    assert cs.n_answers == 6 * k
    rev = sequential_difference(df, "B", "A")
    assert rev.decision == "below" and rev.stopped_at == k


def test_difference_rejects_scores_outside_unit_range():
    p = np.full(10, 0.5)
    df = _runs(10, 1, p, p, seed=1)
    df["correct"] = df["correct"] * 2.0
    with pytest.raises(DataError):
        sequential_difference(df, "A", "B")


def test_exports():
    assert evalmix.sequential_difference is sequential_difference
    assert evalmix.confidence_sequence is confidence_sequence


# ---------------------------------------------------------------------------------------------
# simulations of the rule (fast versions; the slow step runs the documented study)


def test_simulate_stopping_matches_single_runs():
    x = np.random.default_rng(4).binomial(1, 0.6, size=(5, 300))
    sims = simulate_stopping(x, bounds=(0, 1), target_width=0.25)
    for r in range(5):
        cs = confidence_sequence(x[r], target_width=0.25)
        assert sims["stopped_at"].iloc[r] == cs.stopped_at
        assert sims["conf_low"].iloc[r] == pytest.approx(cs.conf_low)


@pytest.mark.slow
def test_false_positive_rate_under_continuous_monitoring():
    # 400 null replicates, 500 items each, looked at after every item: the CS rejects at most
    # alpha of them (Monte-Carlo SE of a 5% rate with 400 replicates: 1.1 points), the naive
    # z-test looked at after every batch of 10 items rejects far more often
    rng = np.random.default_rng(2026)
    reps, n = 400, 500
    p = rng.beta(2, 2, size=(reps, n))
    d = rng.binomial(3, p) / 3 - rng.binomial(3, p) / 3  # two equal models, 3 runs each
    # a coarser grid of candidate means keeps the study quick and only widens the CS (by a cell)
    sims = simulate_stopping(d, bounds=(-1, 1), null=0.0, grid=250)
    fpr = (sims["decision"] != "continue").mean()
    assert fpr <= 0.05
    t = np.arange(1, n + 1)
    mean = np.cumsum(d, axis=1) / t
    sd = np.sqrt(np.maximum(np.cumsum(d**2, axis=1) / t - mean**2, 1e-12) * t / np.maximum(t - 1, 1))
    z = np.abs(mean) / (sd / np.sqrt(t))
    looks = np.arange(9, n, 10)
    naive = (z[:, looks] > 1.959964).any(axis=1).mean()
    assert naive > 0.2


def test_sequence_plot_draws_the_band_and_the_stop():
    import matplotlib

    matplotlib.use("Agg")
    from evalmix.plots import sequence_plot

    x = np.random.default_rng(9).binomial(1, 0.8, size=(400,)) - np.random.default_rng(10).binomial(1, 0.5, size=400)
    cs = confidence_sequence(x, bounds=(-1, 1), null=0.0)
    fig = sequence_plot(cs)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"stop at {cs.stopped_at} (above)" in labels and "null 0" in labels
    line = ax.get_lines()[0]
    np.testing.assert_allclose(line.get_ydata(), cs.to_frame()["estimate"])


def test_expected_stop_from_a_pilot():
    from evalmix.studies.sequential import expected_stop

    rng = np.random.default_rng(8)
    pilot = rng.binomial(3, rng.beta(2, 2, 80) + 0.0) / 3 - rng.binomial(3, rng.beta(2, 2, 80)) / 3
    pilot = np.clip(pilot + 0.3, -1, 1)  # a clear difference: the rule decides early
    e = expected_stop(pilot, bounds=(-1, 1), null=0.0, max_n=400, n_sims=30, rng=2)
    again = expected_stop(pilot, bounds=(-1, 1), null=0.0, max_n=400, n_sims=30, rng=2)
    pd.testing.assert_frame_equal(e, again)
    assert e["decided"].item() == 1.0 and e["budget"].item() == 0.0
    # the same draws, stopped one by one
    draws = pilot[np.random.default_rng(2).integers(0, 80, size=(30, 400))]
    stops = [confidence_sequence(d, bounds=(-1, 1), null=0.0, grid=250).stopped_at for d in draws[:5]]
    sims = simulate_stopping(draws[:5], bounds=(-1, 1), null=0.0, grid=250, max_n=400)
    assert sims["stopped_at"].tolist() == stops
    assert e["median_items"].item() < 100 and e["mean_items_mc_se"].item() > 0
    with pytest.raises(DataError, match="at least 2"):
        expected_stop([0.5], bounds=(0, 1), max_n=10)


# ----------------------------------------------------------------------------------------------
# several runs per item or one, at equal cost (docs/img/make_sequential_runs_figure.py)


def _runs_study():
    import importlib.util

    path = Path(__file__).resolve().parents[2] / "docs" / "img" / "make_sequential_runs_figure.py"
    spec = importlib.util.spec_from_file_location("make_sequential_runs_figure", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_repeated_runs_numbers_of_the_docs():
    # docs/sequential.md quotes docs/img/sequential_runs.json: keep both true
    root = Path(__file__).resolve().parents[2]
    res = json.loads((root / "docs" / "img" / "sequential_runs.json").read_text())
    page = (root / "docs" / "sequential.md").read_text()
    width = {(d["cost_item"], d["runs"]): d["final_width"] for d in res["designs"]}
    for d in res["designs"]:
        # every design spends the budget on whole items
        assert d["n_items"] == int(res["budget"] // (d["cost_item"] + d["runs"]))
        # time-uniform coverage: at least nominal, to 3 Monte-Carlo SEs
        assert d["coverage_uniform"] >= 0.95 - 3 * d["coverage_uniform_mc_se"]
        assert d["coverage_end"] >= d["coverage_uniform"]
        row = (f"| {d['cost_item']:g} | {d['runs']} | {d['n_items']} | {d['final_width']:.3f} | "
               f"{100 * d['coverage_uniform']:.1f}% |")
        assert row in page, row
    assert res["optimal_runs"] == {"0.0": 1, "4.0": 4}
    assert width[(0.0, 8)] / width[(0.0, 1)] == pytest.approx(1.11, abs=0.005)
    assert 1 - width[(4.0, 4)] / width[(4.0, 1)] == pytest.approx(0.32, abs=0.005)


@pytest.mark.slow  # 40 replicates of six designs of up to 1,200 items
def test_repeated_runs_at_equal_cost():
    res = _runs_study().study(reps=40, budget=1200.0, seed=7, runs=(1, 4, 8))
    d = {(x["cost_item"], x["runs"]): x for x in res["designs"]}
    for x in d.values():
        # 40 replicates: the Monte-Carlo SE of a coverage of 0.95 is 0.034
        assert x["coverage_uniform"] >= 0.95 - 3 * x["coverage_uniform_mc_se"], x
    # no item cost: eight runs on an eighth of the items is wider than one run on all of them
    assert d[(0.0, 8)]["final_width"] > d[(0.0, 1)]["final_width"] + 3 * d[(0.0, 8)]["final_width_mc_se"]
    # an item costing four answers: optimal_runs' R = 4 beats one run per item by far
    assert res["optimal_runs"]["4.0"] == 4
    assert d[(4.0, 4)]["final_width"] < 0.8 * d[(4.0, 1)]["final_width"]
