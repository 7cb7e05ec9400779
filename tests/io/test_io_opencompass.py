"""read_opencompass and read_logs on results scored and saved by OpenCompass's own evaluator.

tests/fixtures/opencompass/ holds two models x two data sets x eight examples, each data set
repeated three times (OpenCompass's ``n``), scored by ``AccwithDetailsEvaluator.evaluate`` and saved
where ``OpenICLEvalTask`` saves them (opencompass 0.5.4).  tests/fixtures/gen_opencompass.py (run by
make_fixtures.sh) regenerates them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from evalmix import DataError, DataWarning, read_logs, read_opencompass
from evalmix.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "opencompass"
FILES = sorted((FIXTURES / "results").rglob("*.json"))


@pytest.mark.parametrize("path", FILES, ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_each_result_matches_opencompass_accuracy(path):
    data = json.loads(path.read_text())
    df = read_opencompass(path)
    assert len(df) == 8 * 3
    assert set(df["run"]) == {0, 1, 2}
    # OpenCompass's own aggregate: the mean over replicas of each replica's accuracy, in percent
    assert 100 * df["correct"].mean() == pytest.approx(data["accuracy (3 runs average)"], abs=1e-9)
    for entry in data["details"]:
        got = df[df["item"] == entry["example_abbr"]].sort_values("run")["correct"].tolist()
        assert got == [int(v) for v in entry["is_correct"]]


def test_folder_models_tasks_and_the_cli(capsys):
    df = read_logs(FIXTURES)
    assert df.attrs["evalmix_source"] == {"format": "opencompass", "outcome_kind": "binary"}
    assert df["model"].cat.categories.tolist() == ["tiny-a_hf", "tiny-b_hf"]
    assert df["task"].cat.categories.tolist() == ["demo_math", "demo_mcq"]
    assert "demo_mcq:demo_mcq_3" in df["item"].cat.categories
    assert main(["describe", str(FIXTURES), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["table"]
    assert [r["n"] for r in rows] == [24] * 4


def test_two_timestamped_runs_are_told_apart(tmp_path):
    for stamp in ("20250101_100000", "20250102_100000"):
        shutil.copytree(FIXTURES / "results", tmp_path / stamp / "results")
    df = read_opencompass(tmp_path)
    assert len(df) == 2 * 96
    assert "20250102_100000#2" in df["run"].cat.categories


def _edit(tmp_path: Path, edit) -> Path:
    data = json.loads(FILES[0].read_text())
    edit(data)
    path = tmp_path / "results" / FILES[0].parent.name / FILES[0].name
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(data, indent=4))
    return path


def test_null_outcomes_are_counted(tmp_path):
    path = _edit(tmp_path, lambda d: d["details"][2]["is_correct"].__setitem__(1, None))
    with pytest.warns(DataWarning, match=r"left out 1 sample\(s\) without a score \(1 unscored"):
        df = read_opencompass(path)
    assert len(df) == 23


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.pop("details"), r"details is missing: run OpenCompass with --dump-eval-details"),
    (lambda d: d["details"][1].pop("is_correct"), r"details\[1\] has no per-sample outcome \(correct, is_correct"),
    (lambda d: d["details"][0]["is_correct"].__setitem__(2, "maybe"),
     r"score 'maybe' is not a recognised value.*details\[0\]\.is_correct\[2\]"),
    (lambda d: d.update(details="none"), r"details is a string \('none'\), expected an array or an object"),
])
def test_damaged_results_name_file_and_field(tmp_path, edit, message):
    path = _edit(tmp_path, edit)
    with pytest.raises(DataError, match=message) as info:
        read_opencompass(path)
    assert str(path) in str(info.value)


def test_old_layout_details_keyed_by_index(tmp_path):
    old = {"accuracy": 50.0, "details": {"type": "GEN", "0": {"pred": "A", "answer": "A", "correct": True},
                                          "1": {"pred": "B", "answer": "C", "correct": False}}}
    path = tmp_path / "results" / "m_hf" / "ds.json"
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps(old))
    df = read_opencompass(tmp_path)
    assert df[["item", "run", "correct"]].values.tolist() == [["0", 0, 1], ["1", 0, 0]]
