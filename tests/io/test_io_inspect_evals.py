"""Inspect's evals_df frames: per-evaluation scores read as such, refused where per-sample outcomes are needed.

tests/fixtures/inspect/v0.3.285*/evals_df.{csv,parquet} were written by
inspect_ai.analysis.evals_df (inspect_ai 0.3.285) from the fixture logs beside them
(tests/fixtures/gen_inspect.py, run by make_fixtures.sh).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix import DataError, DataWarning
from evalmix.cli import main
from evalmix.io.inspect_logs import is_evals_df

FIXTURES = Path(__file__).parents[1] / "fixtures" / "inspect"

FOLDER = FIXTURES / "v0.3.285"


def quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return func(*args, **kwargs)


@pytest.mark.parametrize("name", ["evals_df.csv", "evals_df.parquet"])
def test_one_row_per_evaluation_with_inspect_scores(name):
    with pytest.warns(DataWarning) as caught:
        got = evalmix.read_inspect_evals(FOLDER / name)
    messages = " ".join(str(w.message) for w in caught)
    # the errored log and its eval-retry share a task_id: one evaluation, read from the retry
    assert "1 log(s) replaced by their eval-retry" in messages and "retried" in messages
    assert "interrupted" in messages and "killed" in messages and "(started)" in messages
    raw = pd.read_csv(FOLDER / "evals_df.csv")
    assert len(raw) == 7 and len(got) == 6
    assert got.columns[:10].tolist() == ["model", "task", "evaluation", "status", "epochs", "total_samples",
                                         "completed_samples", "eval_id", "task_id", "log"]
    assert {c for c in raw.columns if c.startswith("score_")} == {c for c in got.columns if c.startswith("score_")}
    arith = got[got["task"] == "arith"].set_index("model")
    assert arith["epochs"].tolist() == [3, 3] and arith["completed_samples"].tolist() == [12, 12]
    # Inspect's own aggregates, as written by inspect_ai 0.3.285
    assert arith.loc["mockllm/alpha", "score_match_accuracy"] == pytest.approx(7 / 12, abs=1e-12)
    assert arith.loc["mockllm/beta", "score_match_accuracy"] == pytest.approx(4 / 12, abs=1e-12)
    assert arith.loc["mockllm/alpha", "score_headline_name"] == "match"
    retried = got[got["task"] == "retried"].iloc[0]
    assert retried["status"] == "success" and retried["score_includes_accuracy"] == pytest.approx(0.5, abs=1e-12)
    killed = got[got["task"] == "killed"].iloc[0]
    assert killed["status"] == "started" and np.isnan(killed["score_headline_value"])
    assert (got["evaluation"] == 1).all()


def test_evals_df_accuracy_equals_the_per_sample_table():
    """The mean of a scorer over samples and epochs in evals_df is the mean of the runs table of the same logs."""
    evals = quiet(evalmix.read_inspect_evals, FOLDER / "evals_df.parquet")
    for scorer, metric in [("match", "accuracy"), ("includes", "accuracy")]:
        runs = quiet(evalmix.read_inspect, sorted(FOLDER.glob("*arith*.eval")), scorer=scorer)
        per_model = runs.groupby("model", observed=True)["correct"].mean()
        arith = evals[evals["task"] == "arith"].set_index("model")[f"score_{scorer}_{metric}"]
        for model, value in per_model.items():
            assert arith[model] == pytest.approx(value, abs=1e-12)


def test_csv_and_parquet_agree():
    a = quiet(evalmix.read_inspect_evals, FOLDER / "evals_df.csv")
    b = quiet(evalmix.read_inspect_evals, FOLDER / "evals_df.parquet")
    pd.testing.assert_frame_equal(a, b, check_dtype=False)


def test_json_log_frame_has_one_evaluation():
    one = evalmix.read_inspect_evals(FIXTURES / "v0.3.285-json" / "evals_df.csv")
    assert one[["model", "task", "evaluation", "status"]].values.tolist() == [["mockllm/alpha", "arith", 1, "success"]]
    assert one["score_match_accuracy"].iloc[0] == pytest.approx(7 / 12, abs=1e-12)


def test_repeated_evaluations_are_numbered_in_order_of_creation():
    raw = pd.read_parquet(FOLDER / "evals_df.parquet")
    arith = raw[raw["task_name"] == "arith"]
    again = arith.assign(eval_id=arith["eval_id"] + "x", task_id=arith["task_id"] + "x",
                         created=arith["created"] + pd.Timedelta(hours=1), log="later_" + arith["log"])
    got = evalmix.read_inspect_evals(pd.concat([arith, again], ignore_index=True))
    assert got.groupby("model")["evaluation"].apply(list).to_dict() == {"mockllm/alpha": [1, 2],
                                                                       "mockllm/beta": [1, 2]}
    assert got[got["evaluation"] == 2]["log"].str.startswith("later_").all()


def test_per_sample_analyses_refuse_an_evals_df_frame(tmp_path, capsys):
    frame = pd.read_csv(FOLDER / "evals_df.csv")
    assert is_evals_df(frame)
    assert not is_evals_df(pd.read_csv(FOLDER / "samples_df_model.csv"))
    for read in (evalmix.read_inspect, evalmix.read_logs):
        with pytest.raises(DataError, match=r"evals_df frame.*per-sample outcomes.*samples_df\(logs\).*"
                                            r"read_inspect_evals"):
            read(frame)
    with pytest.raises(DataError, match=r"samples_df frame .*read it with evalmix.read_inspect"):
        evalmix.read_inspect_evals(pd.read_csv(FOLDER / "samples_df_model.csv"))
    with pytest.raises(DataError, match=r"no \['completed_samples'\] column"):
        evalmix.read_inspect_evals(frame.drop(columns="completed_samples"))
    with pytest.raises(DataError, match=r"column 'score_match_accuracy' holds 'high' in row 2, not a number"):
        evalmix.read_inspect_evals(frame.assign(score_match_accuracy=frame["score_match_accuracy"].astype(object)
                                                .where(frame.index != 2, "high")))
    # the command line: one line naming the file and what to give instead
    assert main(["describe", str(FOLDER / "evals_df.csv")]) == 2
    err = capsys.readouterr().err
    assert "evals_df.csv is an Inspect evals_df table" in err and "samples_df" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1
