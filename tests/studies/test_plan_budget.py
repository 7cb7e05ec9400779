"""The planner's budget and interval-width modes, its closed form, and ``evalmix plan`` with costs,
a budget and the expected stop of the sequential rule."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

from evalmix.cli import main
from evalmix.core.errors import ArgumentError, DataError
from evalmix.studies.repetitions import plan, variance_components
from evalmix.studies.sequential import expected_stop

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example_runs.csv"
Z975 = 1.959963984540054
Z80 = 0.8416212335729143


def _brute_force(s2_i: float, s2_r: float, budget: float, c_item: float, c_sample: float,
                 max_runs: int) -> tuple[float, int, int]:
    """Smallest SE over every (items, runs) the budget buys, then the cheapest (exhaustive grid)."""
    best: tuple[float, float, int, int] | None = None
    for r in range(1, max_runs + 1):
        for n in range(2, int(budget / (c_item + r * c_sample)) + 1):
            cost = n * c_item + n * r * c_sample
            se = math.sqrt((s2_i + s2_r / r) / n)
            if best is None or (se, cost) < best[:2]:
                best = (se, cost, n, r)
    assert best is not None
    return best[0], best[2], best[3]


def test_se_is_the_two_level_closed_form_exactly():
    s2_i, s2_r = 0.04, 0.18
    p = plan(var_between=s2_i, var_within=s2_r, se=0.02, cost_item=3, cost_run=1, max_runs=12)
    for row in p.table.itertuples():
        assert row.se == pytest.approx(math.sqrt((s2_i + s2_r / row.n_runs) / row.n_items), rel=1e-14)
        # the fewest items: one fewer misses the target
        assert math.sqrt((s2_i + s2_r / row.n_runs) / (row.n_items - 1)) > 0.02
    assert p.cost == p.n_items * 3 + p.n_items * p.n_runs * 1


@pytest.mark.parametrize(("s2_i", "s2_r", "budget", "c_item", "c_sample"), [
    (0.04, 0.18, 3000.0, 5.0, 1.0),
    (0.15, 0.05, 2000.0, 10.0, 1.0),
    (0.01, 0.20, 1500.0, 20.0, 0.5),
    (0.08, 0.10, 800.0, 0.0, 2.0),
])
def test_budget_optimum_matches_brute_force(s2_i, s2_r, budget, c_item, c_sample):
    p = plan(var_between=s2_i, var_within=s2_r, budget=budget, cost_item=c_item, cost_run=c_sample,
             max_runs=15)
    se, n, r = _brute_force(s2_i, s2_r, budget, c_item, c_sample, 15)
    assert (p.n_items, p.n_runs) == (n, r)
    assert p.target == "mdd" and math.isnan(p.value) and p.cost <= budget
    assert p.achieved == pytest.approx((Z975 + Z80) * se, rel=1e-12)
    if c_item == 0:  # no cost per item: one run each, as many items as the budget buys
        assert (p.n_items, p.n_runs) == (int(budget / c_sample), 1)


def test_width_target_is_the_full_wald_width():
    p = plan(var_between=0.04, var_within=0.18, width=0.1, cost_item=5, cost_run=1, max_runs=10)
    se = math.sqrt((0.04 + 0.18 / p.n_runs) / p.n_items)
    assert p.achieved == pytest.approx(2 * Z975 * se, rel=1e-12) and p.achieved <= 0.1
    assert 2 * Z975 * math.sqrt((0.04 + 0.18 / p.n_runs) / (p.n_items - 1)) > 0.1
    # the same design as the equivalent SE target
    q = plan(var_between=0.04, var_within=0.18, se=0.1 / (2 * Z975), cost_item=5, cost_run=1, max_runs=10)
    assert (q.n_items, q.n_runs) == (p.n_items, p.n_runs)


def test_a_target_within_a_budget():
    free = plan(var_between=0.04, var_within=0.18, mdd=0.08, cost_item=5, cost_run=1)
    same = plan(var_between=0.04, var_within=0.18, mdd=0.08, cost_item=5, cost_run=1, budget=free.cost)
    assert (same.n_items, same.n_runs, same.budget) == (free.n_items, free.n_runs, free.cost)
    with pytest.raises(DataError, match=rf"no design within the budget 100 reaches mdd <= 0.08: the "
                                        rf"cheapest that does costs {free.cost:g}"):
        plan(var_between=0.04, var_within=0.18, mdd=0.08, cost_item=5, cost_run=1, budget=100)


def test_planner_argument_errors_name_the_argument():
    with pytest.raises(ArgumentError, match="exactly one target.*got mdd=, width="):
        plan(var_between=0.04, var_within=0.18, mdd=0.08, width=0.1)
    with pytest.raises(ArgumentError, match="exactly one target.*got none"):
        plan(var_between=0.04, var_within=0.18)
    with pytest.raises(ArgumentError, match="cost_item"):
        plan(var_between=0.04, var_within=0.18, se=0.02, cost_item=-1)
    with pytest.raises(ArgumentError, match="budget"):
        plan(var_between=0.04, var_within=0.18, budget=-5)
    with pytest.raises(DataError, match="the budget 2 buys no design"):
        plan(var_between=0.04, var_within=0.18, budget=2, cost_item=5)


# ---- evalmix plan -------------------------------------------------------------------------------


def _strict(text: str) -> dict:
    def refuse(name: str) -> None:
        raise AssertionError(f"non-standard JSON constant {name}")
    return json.loads(text, parse_constant=refuse)


def test_cli_budget_gives_the_library_design(capsys):
    args = ["plan", str(EXAMPLE), "--budget", "3000", "--cost-per-item", "5", "--cost-per-sample", "1"]
    assert main(args + ["--json"]) == 0
    doc = _strict(capsys.readouterr().out)
    runs = pd.read_csv(EXAMPLE)
    comps = variance_components(runs, ["model", "language", "prompt"])
    want = plan(comps, budget=3000, cost_item=5, cost_run=1)
    assert (doc["n_items"], doc["n_runs"], doc["cost"]) == (want.n_items, want.n_runs, want.cost) == (428, 2, 2996)
    assert doc["target"] == "mdd" and doc["budget"] == 3000
    assert doc["achieved"] == pytest.approx(want.achieved, rel=1e-12)
    assert all(row["cost"] <= 3000 for row in doc["table"])
    # the old spellings of the costs are the same options
    assert main(["plan", str(EXAMPLE), "--budget", "3000", "--cost-item", "5", "--cost-run", "1", "--json"]) == 0
    assert _strict(capsys.readouterr().out)["n_items"] == 428
    assert main(args) == 0
    assert capsys.readouterr().out.splitlines()[0] == (
        "428 items x 2 runs, cost 2996: mdd 0.05877 (the smallest within the budget 3000)")


def test_cli_sequential_reuses_expected_stop(capsys, tmp_path):
    runs = pd.read_csv(EXAMPLE)
    one = runs[(runs["model"] == "model-A") & (runs["language"] == "EN") & (runs["prompt"] == "COT")]
    path = tmp_path / "pilot.csv"
    one.to_csv(path, index=False)
    args = ["plan", str(path), "--width", "0.25", "--cost-per-item", "5", "--sequential", "--sims", "20",
            "--seed", "3"]
    assert main(args + ["--json"]) == 0
    doc = _strict(capsys.readouterr().out)
    assert doc["target"] == "width" and doc["achieved"] <= 0.25
    (stop,) = doc["expected_stop"]
    # the pilot's item means, the planned width, four times the planned items: the library's answer exactly
    obs = one.groupby("item")["correct"].mean().to_numpy(float)
    want = expected_stop(obs, bounds=(0.0, 1.0), max_n=4 * doc["n_items"], target_width=doc["achieved"],
                         n_sims=20, rng=3).iloc[0]
    assert stop["max_items"] == 4 * doc["n_items"] and stop["target_width"] == pytest.approx(doc["achieved"])
    for col in ("mean_items", "median_items", "q90_items", "width", "budget"):
        assert stop[col] == pytest.approx(float(want[col]), rel=1e-12), col
    assert stop["mean_items"] > doc["n_items"]  # the price of looking after every item
    assert stop["n_sims"] == 20 and isinstance(stop["n_sims"], int)
    # k-of-n counts per (item, run) give the same item means, hence the same answer
    counts = one.assign(k=one["correct"], n=1).drop(columns="correct")
    counts.to_csv(tmp_path / "counts.csv", index=False)
    assert main(["plan", str(tmp_path / "counts.csv"), "--successes", "k", "--trials", "n", *args[2:], "--json"]) == 0
    assert _strict(capsys.readouterr().out)["expected_stop"] == doc["expected_stop"]
    assert main(args + ["--max-items", "60"]) == 0
    out = capsys.readouterr().out
    assert "narrower than 0.2486, at most 60 items" in out and "mean_items" in out


@pytest.mark.parametrize(("extra", "message"), [
    (["--se", "0.05", "--mdd", "0.1"], "give one target, --se, --mdd or --width, not --se and --mdd"),
    ([], "give a target (--se, --mdd or --width), or --budget"),
    (["--budget", "100", "--cost-per-sample", "-1"], "--cost-per-sample must be > 0, got -1"),
    (["--se", "0.05", "--cost-per-item", "-2"], "--cost-per-item must be >= 0, got -2"),
    (["--budget", "0"], "--budget must be > 0, got 0"),
    (["--width", "-0.1"], "--width must be > 0, got -0.1"),
    (["--se", "0.05", "--max-items", "9"], "--max-items sets the budget in items of --sequential"),
    (["--budget", "10", "--cost-per-item", "20"], "the budget 10 buys no design"),
    (["--mdd", "0.01", "--budget", "500"], "no design within the budget 500 reaches mdd <= 0.01"),
    (["--budget", "nan"], "expected a finite number"),
])
def test_cli_user_errors_exit_2_with_one_line(capsys, extra, message):
    assert main(["plan", str(EXAMPLE), *extra]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) in (1, 2)
    if "finite" not in message:  # argparse adds its usage line; the handler's errors are one line
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
