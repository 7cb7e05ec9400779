"""``evalmix sequential``: the stop of the confidence sequence on the command line, errors as one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evalmix.cli import main
from evalmix.studies.sequential import sequential_accuracy, sequential_difference

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example_runs.csv"
WHERE = ["--where", "language=EN", "--where", "prompt=ZS"]


def _one():
    import evalmix

    d = evalmix.read_runs(EXAMPLE)
    return d[(d["language"] == "EN") & (d["prompt"] == "ZS")]


def test_difference_stop_equals_library(capsys):
    assert main(["sequential", str(EXAMPLE), "model-A", "model-B", *WHERE, "--width", "0.3", "--seed", "2",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    lib = sequential_difference(_one(), "model-A", "model-B", target_width=0.3, rng=2)
    assert doc["stopped_at"] == lib.stopped_at and doc["decision"] == lib.decision == "width"
    assert doc["conf_low"] == pytest.approx(lib.conf_low, abs=1e-12)
    assert doc["table"][0]["n"] == lib.stopped_at and doc["table"][0]["n_answers"] == lib.n_answers


def test_accuracy_text_output(capsys):
    assert main(["sequential", str(EXAMPLE), "model-A", *WHERE, "--width", "0.3",
                 "--method", "empirical_bernstein"]) == 0
    out = capsys.readouterr().out
    lib = sequential_accuracy(_one(), "model-A", target_width=0.3, method="empirical_bernstein")
    assert f"stopped after {lib.stopped_at} items" in out and "anytime-valid interval" in out


def test_steps_prints_the_sequence(capsys):
    assert main(["sequential", str(EXAMPLE), "model-A", *WHERE, "--steps", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["table"]) == _one()["item"].nunique()


@pytest.mark.parametrize("argv, message", [
    (["model-Z", "model-A", *WHERE], "model 'model-Z' has no rows"),
    (["model-A", *WHERE, "--width", "-1"], "--width: expected a positive number"),
    (["model-A", *WHERE, "--null", "nan"], "--null: expected a finite number"),
    (["model-A", *WHERE, "--order", "when"], "order column 'when'"),
    (["model-A"], "duplicate rows"),
    (["model-A", *WHERE, "--method", "wald"], "invalid choice"),
])
def test_user_errors_exit_2_in_one_line(capsys, argv, message):
    assert main(["sequential", str(EXAMPLE), *argv]) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_expect_plans_from_the_pilot(capsys):
    from evalmix.studies.sequential import expected_stop

    assert main(["sequential", str(EXAMPLE), "model-A", "model-C", *WHERE, "--width", "0.1", "--expect", "500",
                 "--sims", "20", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    one = _one()
    ma = one[one.model == "model-A"].groupby("item", sort=False)["correct"].mean()
    mc = one[one.model == "model-C"].groupby("item", sort=False)["correct"].mean()
    lib = expected_stop((mc - ma.loc[mc.index]).to_numpy(), bounds=(-1, 1), null=0.0, target_width=0.1,
                        max_n=500, n_sims=20, rng=0)
    assert doc["table"][0]["mean_items"] == pytest.approx(lib["mean_items"].item())
    assert doc["table"][0]["decided"] == pytest.approx(lib["decided"].item())
