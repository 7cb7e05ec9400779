"""read_openai_evals and read_logs on record files written by OpenAI evals' oaieval itself.

tests/fixtures/openai_evals/ holds twelve records (evals 3.0.1.post1): two tiny local completion
functions x two basic evals (Match and Includes on the same six arithmetic samples) x three seeds.
reader.csv holds what evals' own evals.utils.log_utils reads from each file.
tests/fixtures/make_fixtures.sh regenerates them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import evalmix
from evalmix import DataError, read_logs, read_openai_evals
from evalmix.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "openai_evals"
READER = pd.read_csv(FIXTURES / "reader.csv") if (FIXTURES / "reader.csv").exists() else None
FILES = sorted(FIXTURES.glob("*.jsonl"))


@pytest.mark.filterwarnings("ignore::evalmix.DataWarning")
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_each_record_matches_the_evals_reader(path):
    df = read_openai_evals(path)
    want = READER[READER["file"] == path.name].sort_values("position")
    assert len(df) == len(want) == 6
    # in file order, as evals' extract_individual_results returns them
    assert df["correct"].tolist() == want["correct"].astype(int).tolist()
    assert df["correct"].mean() == pytest.approx(want["accuracy"].iloc[0], abs=1e-12)
    assert df["model"].astype(str).unique().tolist() == [want["completion_fns"].iloc[0]]
    assert df.attrs["evalmix_source"] == {"format": "openai-evals", "event": "match", "field": "correct"}


def test_folder_in_one_call():
    df = read_logs(FIXTURES)
    assert df.attrs["evalmix_source"]["format"] == "openai-evals"
    assert df["model"].cat.categories.tolist() == ["tiny-a", "tiny-b"]
    assert df["task"].cat.categories.tolist() == ["arith", "arith-includes"]
    assert len(df) == 2 * 2 * 3 * 6
    for (model, task), part in df.groupby(["model", "task"], observed=True):
        assert sorted(set(part["run"])) == [1, 2, 3]
        assert sorted(set(part["item"].astype(str))) == [f"{task}:{i}" for i in range(6)]
    # the three seeds are the runs, in order of creation
    for (model, task), part in df.groupby(["model", "task"], observed=True):
        for run, rows in part.groupby("run", observed=True):
            name = f"{model}_{task}_seed{run}.jsonl"
            want = READER[READER["file"] == name]
            assert rows["correct"].sum() == want["correct"].astype(int).sum()
    table = evalmix.accuracy(df, by=["model", "task"]).table
    assert table["n"].tolist() == [18] * 4


def test_includes_is_more_lenient_than_match():
    """Same completions under both evals: Includes accepts every answer Match accepts, per sample."""
    df = read_logs(FIXTURES)
    df["index"] = df["item"].astype(str).str.split(":").str[1]
    wide = df.pivot_table(index=["model", "index", "run"], columns="task", values="correct",
                          observed=True)
    assert len(wide) == 2 * 6 * 3
    assert (wide["arith-includes"] >= wide["arith"]).all()
    assert (wide["arith-includes"] > wide["arith"]).any()


def test_recognised_by_content_and_errors(tmp_path):
    shutil.copy(FILES[0], tmp_path / "run.log")
    (tmp_path / "notes.jsonl").write_text(json.dumps({"a": 1}) + "\n")
    assert len(read_openai_evals(tmp_path)) == 6
    with pytest.raises(DataError, match=r"no 'metrics' events; event types logged: \['match'\]"):
        read_openai_evals(FILES[0], event="metrics")
    with pytest.raises(DataError, match=r"notes\.jsonl is not an OpenAI evals record file"):
        read_openai_evals(tmp_path / "notes.jsonl")
    lines = FILES[0].read_text().splitlines()
    (tmp_path / "twice.jsonl").write_text("\n".join(lines + lines[-1:]) + "\n")
    with pytest.raises(DataError, match=r"twice\.jsonl, line 9: sample 'arith(-includes)?\.dev\.\d' has a second "
                                        r"'match' event"):
        read_openai_evals(tmp_path / "twice.jsonl")


def test_cli(capsys):
    assert main(["describe", str(FIXTURES), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["table"]
    assert [(r["model"], r["task"], r["n"]) for r in rows] == [
        ("tiny-a", "arith", 18), ("tiny-a", "arith-includes", 18),
        ("tiny-b", "arith", 18), ("tiny-b", "arith-includes", 18)]
