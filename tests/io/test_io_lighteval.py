"""read_lighteval and read_logs on details files written by lighteval's own EvaluationTracker.

tests/fixtures/lighteval/ holds two models x two runs x two tasks (multiple choice scored by
``acc``; short answers scored by ``em`` and a partial ``f1``), saved by lighteval 0.13's
``EvaluationTracker.save``; expected.csv holds every sample as lighteval's own
``load_details_datasets`` reads it.  tests/fixtures/gen_lighteval.py (run by make_fixtures.sh)
regenerates them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from evalmix import DataError, DataWarning, read_lighteval, read_logs
from evalmix.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "lighteval"
EXPECTED = pd.read_csv(FIXTURES / "expected.csv")
MC, QA = "lighteval|arc:easy|0", "lighteval|squad|0"


@pytest.mark.parametrize(("metric", "task"), [("acc", MC), ("em", QA), ("f1", QA)])
def test_every_sample_matches_lightevals_reader(metric, task):
    df = read_lighteval(FIXTURES, {MC: "acc", QA: "em", task: metric}, allow_partial=True)
    assert len(df) == len(EXPECTED) == 2 * 2 * (6 + 5)
    part = df[df["task"] == task]
    got = {(str(r.model), str(r.run), str(r.item).removeprefix(task + ":")): r.correct for r in part.itertuples()}
    want = EXPECTED[EXPECTED["task"].str.startswith(task.rsplit("|", 1)[0])]
    assert len(got) == len(want) > 0
    for w in want.itertuples():
        assert got[(w.model, w.run, w.id)] == pytest.approx(float(getattr(w, metric)), abs=1e-12)


def test_defaults_folder_models_runs_and_kind():
    df = read_logs(FIXTURES)
    source = df.attrs["evalmix_source"]
    assert source == {"format": "lighteval", "metrics": {MC: "acc", QA: "em"}, "outcome_kind": "binary"}
    assert df["model"].cat.categories.tolist() == ["org/tiny-a", "tiny-b"]  # config_general.model_name
    assert df.groupby("model", observed=True)["run"].nunique().tolist() == [2, 2]
    assert set(df["correct"]) == {0, 1}
    df = read_lighteval(FIXTURES, {QA: "f1"}, allow_partial=True)
    assert df.attrs["evalmix_source"]["outcome_kind"] == "fraction"


def test_partial_credit_is_refused_unless_asked():
    with pytest.raises(DataError, match=r"score 0\.\d+ is partial credit.*allow_partial=True.*metric\.f1"):
        read_lighteval(FIXTURES, {QA: "f1"})


def test_missing_metric_is_named_with_the_metrics_logged():
    with pytest.raises(DataError, match=r"\[0\]\.metric\.bleu is missing \(metrics logged: (acc|em, f1)\)"):
        read_lighteval(FIXTURES, "bleu")


def test_cli_reads_the_details(capsys):
    assert main(["describe", str(FIXTURES), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["table"]
    assert sorted((r["model"], r["task"], r["n"]) for r in rows) == [
        ("org/tiny-a", MC, 12), ("org/tiny-a", QA, 10), ("tiny-b", MC, 12), ("tiny-b", QA, 10)]
    assert main(["describe", str(FIXTURES), "--score", "nope"]) == 2
    assert "nope is missing" in capsys.readouterr().err


def _copy(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURES / "details", tmp_path / "details")
    return next((tmp_path / "details").rglob(f"details_{MC}_*.parquet"))


def test_null_metric_values_are_counted(tmp_path):
    path = _copy(tmp_path)
    frame = pd.read_parquet(path)
    frame["metric"] = [{"acc": None} if i == 2 else m for i, m in enumerate(frame["metric"])]
    frame.to_parquet(path)
    with pytest.warns(DataWarning, match=r"left out 1 sample\(s\) without a score \(1 unscored"):
        df = read_lighteval(tmp_path, allow_partial=True)
    assert len(df) == len(EXPECTED) - 1
    keep = read_lighteval(path, errors="keep")
    assert keep["status"].tolist().count("unscored") == 1


@pytest.mark.parametrize(("edit", "message"), [
    (lambda f: f.drop(columns=["metric"]), r"metric is missing \(columns: "),
    (lambda f: f.assign(metric=[json.dumps(m) for m in f["metric"]]), r"\[0\]\.metric is a string"),
    (lambda f: f.assign(metric=[{"acc": 3.0}] * len(f)), r"score 3\.0 is not a number in \[0, 1\]"),
])
def test_damaged_details_name_file_and_field(tmp_path, edit, message):
    path = _copy(tmp_path)
    edit(pd.read_parquet(path)).to_parquet(path)
    with pytest.raises(DataError, match=message) as info:
        read_lighteval(path)
    assert str(path) in str(info.value)


def test_truncated_parquet_in_a_folder_is_left_out(tmp_path):
    path = _copy(tmp_path)
    path.write_bytes(path.read_bytes()[:200])
    with pytest.warns(DataWarning, match=r"left out 1 of 8 file\(s\)"):
        df = read_lighteval(tmp_path)
    assert len(df) == len(EXPECTED) - 6
    with pytest.raises(DataError, match=r"does not follow the layout|cannot read|damaged"):
        read_lighteval(path)
