"""Arena battle files through read_logs and the command line: FastChat's clean_battle JSON (written by
FastChat's own clean_battle_data.py) and lmarena's human-preference layout, and damaged copies.

tests/fixtures/arena/ is written by tests/fixtures/gen_arena.py (fschat 0.2.36, see VERSION).
"""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix import DataError, DataWarning
from evalmix.cli import main
from evalmix.io import detect_format, read_logs

ARENA = Path(__file__).parents[1] / "fixtures" / "arena"
SIMPLE = ARENA / "fastchat" / "clean_battle_20240531.json"
CONV = ARENA / "fastchat" / "clean_battle_conv_20240531.json"
PARQUET = ARENA / "lmarena" / "arena_human_preference.parquet"
JSONL = ARENA / "lmarena" / "arena_human_preference.jsonl"
FASTCHAT_WINNERS = {"model_a": "model_a", "model_b": "model_b", "tie": "tie", "tie (bothbad)": "tie"}


@pytest.mark.parametrize("path", [SIMPLE, CONV, PARQUET, JSONL])
def test_detected_by_content_and_read_record_by_record(path, tmp_path):
    renamed = tmp_path / ("votes" + path.suffix)  # recognised by content, not by name
    shutil.copy(path, renamed)
    assert detect_format(path) == detect_format(renamed) == "arena"
    got = read_logs(renamed)
    assert got.attrs["evalmix_source"]["format"] == "arena"
    if path.suffix == ".parquet":
        raw = pd.read_parquet(path)
    elif path.suffix == ".jsonl":
        raw = pd.read_json(path, lines=True)
    else:
        raw = pd.DataFrame(json.loads(path.read_text()))
    assert len(got) == len(raw)
    assert got["model_a"].tolist() == raw["model_a"].tolist()
    assert got["model_b"].tolist() == raw["model_b"].tolist()
    expected = raw["winner"].map({**FASTCHAT_WINNERS, "both_bad": "tie"})
    assert got["winner"].tolist() == expected.tolist()
    assert (got["source"] == str(renamed)).all()


def test_fastchat_files_keep_their_fields():
    simple = read_logs(SIMPLE)
    assert len(simple) == 240 and simple["anony"].sum() == 200
    assert simple.columns.tolist() == ["model_a", "model_b", "winner", "judge", "turn", "anony", "language",
                                       "tstamp", "source"]
    assert simple["tstamp"].is_monotonic_increasing  # FastChat sorts its battles by time
    conv = read_logs(CONV)  # conv_release: the anonymous battles, with question_id
    assert len(conv) == 200 and conv["anony"].all() and conv["question_id"].is_unique
    # the two files of one cut hold the same anonymous battles
    anon = simple[simple["anony"]].reset_index(drop=True)
    pd.testing.assert_frame_equal(anon[["model_a", "model_b", "winner", "tstamp"]],
                                  conv[["model_a", "model_b", "winner", "tstamp"]])
    # FastChat writes "tie (bothbad)": a tie, as its ratings count it
    raw = json.loads(SIMPLE.read_text())
    assert sum(r["winner"] == "tie (bothbad)" for r in raw) > 0
    assert (simple["winner"] == "tie").sum() == sum(r["winner"].startswith("tie") for r in raw)


def test_the_same_battles_rate_the_same_from_every_layout():
    """FastChat's conv_release JSON and the lmarena tables hold the same battles: equal ratings."""
    fits = [evalmix.bradley_terry(read_logs(p), rank_sets=False) for p in (CONV, PARQUET, JSONL)]
    for fit in fits[1:]:
        pd.testing.assert_frame_equal(fit.table, fits[0].table, check_exact=False, rtol=1e-12)
    # clustered by conversation: question_id in FastChat's file, id in lmarena's
    by_q = evalmix.bradley_terry(read_logs(CONV), cluster="question_id", rank_sets=False)
    by_id = evalmix.bradley_terry(read_logs(PARQUET), cluster="id", rank_sets=False)
    np.testing.assert_allclose(by_q.table["se"], by_id.table["se"], rtol=1e-12)
    # the seeded strengths of gen_arena.py: delta-70b > gamma-34b > beta-13b > alpha-7b
    assert fits[0].table["model"].iloc[0] == "delta-70b" and fits[0].table["model"].iloc[-1] == "alpha-7b"


@pytest.mark.parametrize("name, match", [
    ("clean_battle_no_winner.json", r"clean_battle_no_winner\.json: \[3\]\.winner is missing"),
    ("arena_unknown_winner.jsonl", r"arena_unknown_winner\.jsonl, line 5: winner is 'draw', expected one of "
                                   r"'model_a'.*'both_bad'"),
    ("arena_self_battle.parquet", r"arena_self_battle\.parquet: row 6: model_a and model_b are both 'delta-70b'"),
    ("arena_no_winner.parquet", r"arena_no_winner\.parquet: no column 'winner'"),
])
def test_damaged_files_name_the_file_and_field(name, match, capsys):
    path = ARENA / "damaged" / name
    assert detect_format(path) == "arena"
    with pytest.raises(DataError, match=match):
        read_logs(path)
    assert main(["arena", str(path)]) == 2
    err = capsys.readouterr().err
    assert name in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_folders_leave_out_damaged_files_and_refuse_votes_read_twice(tmp_path):
    shutil.copy(SIMPLE, tmp_path / "a.json")
    shutil.copy(ARENA / "damaged" / "arena_unknown_winner.jsonl", tmp_path / "b.jsonl")
    (tmp_path / "notes.json").write_text('{"model": "x"}')  # not battles: not read
    with pytest.warns(DataWarning, match=r"left out 1 of 2 file\(s\).*b\.jsonl, line 5: winner is 'draw'"):
        got = read_logs(tmp_path)
    assert len(got) == 240
    shutil.copy(CONV, tmp_path / "c.json")
    with pytest.raises(DataError, match=r"200 battle\(s\) appear in more than one file .*a\.json and .*c\.json"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            read_logs(tmp_path)


def test_cli_arena_reads_battle_files_as_the_library(capsys):
    for path in (SIMPLE, PARQUET, CONV):
        assert main(["arena", str(path), "--json", "--no-rank-sets"]) == 0
        doc = json.loads(capsys.readouterr().out)
        lib = evalmix.bradley_terry(read_logs(path), rank_sets=False)
        got = pd.DataFrame(doc["table"])
        assert got["model"].tolist() == lib.table["model"].tolist()
        np.testing.assert_allclose(got["estimate"], lib.table["estimate"], rtol=1e-12)
    assert main(["arena", str(CONV), "--cluster", "question_id", "--no-rank-sets"]) == 0
    assert "clustered by question_id" in capsys.readouterr().out


def test_cli_arena_reads_mt_bench_pairs_and_refuses_other_logs(capsys, tmp_path):
    pairs = Path(__file__).parents[1] / "fixtures" / "mt_bench" / "gpt-4_pair.jsonl"
    assert main(["arena", str(pairs), "--json", "--no-rank-sets", "--ties", "half", "--no-position"]) == 0
    doc = json.loads(capsys.readouterr().out)
    with pytest.warns(DataWarning, match="no verdict"):
        battles = evalmix.read_mt_bench(pairs)
    lib = evalmix.bradley_terry(battles, ties="half", position=False, rank_sets=False)
    np.testing.assert_allclose(pd.DataFrame(doc["table"])["estimate"], lib.table["estimate"], rtol=1e-12)
    inspect_log = next((Path(__file__).parents[1] / "fixtures" / "inspect" / "v0.3.285").glob("*arith*.eval"))
    assert main(["arena", str(inspect_log)]) == 2
    err = capsys.readouterr().err
    assert "not pairwise battles" in err and len(err.strip().splitlines()) == 1
    # a battle file with other column names is read as a plain table when the columns are named
    table = pd.read_parquet(PARQUET).rename(columns={"winner": "outcome"})
    table.to_parquet(tmp_path / "renamed.parquet")
    assert main(["arena", str(tmp_path / "renamed.parquet"), "--winner", "outcome", "--no-rank-sets"]) == 0
    assert "delta-70b" in capsys.readouterr().out
    shutil.copy(SIMPLE, tmp_path / "x.json")
    (tmp_path / "renamed.parquet").unlink()
    assert main(["arena", str(tmp_path), "--winner", "outcome"]) == 2
    assert "--winner name the columns of one battle table" in capsys.readouterr().err


@pytest.mark.parametrize("command", [["describe"], ["reliability"]])
def test_commands_on_per_sample_outcomes_point_to_arena(command, capsys):
    assert main([*command, str(SIMPLE)]) == 2
    err = capsys.readouterr().err
    assert "holds arena battles" in err and f"evalmix arena {SIMPLE}" in err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_lmarena_both_bad_is_a_tie_in_read_battles():
    raw = pd.DataFrame({"model_a": ["x", "y", "x"], "model_b": ["y", "x", "y"], "winner": ["both_bad", "B", "a"]})
    assert evalmix.read_battles(raw)["winner"].tolist() == ["tie", "model_b", "model_a"]
    assert dict(evalmix.arena.WINNERS)["both_bad"] == "tie"


def test_the_report_reads_battle_files(tmp_path):
    from evalmix.reporting import arena_section

    folder = tmp_path / "cut"
    folder.mkdir()
    shutil.copy(CONV, folder / CONV.name)
    section = arena_section(folder, cluster="question_id")
    ratings = section.tables[0][2]
    lib = evalmix.bradley_terry(read_logs(CONV), cluster="question_id")
    assert ratings["model"].tolist() == lib.table["model"].tolist()
    np.testing.assert_allclose(ratings["estimate"], lib.table["estimate"], rtol=1e-12)


def test_long_first_records_and_missing_values(tmp_path):
    """lmarena's JSON lines carry whole conversations: a first line longer than the part read to
    recognise the file is still recognised; a missing or non-text value names its line or row."""
    rows = pd.read_json(JSONL, lines=True)
    rows["conversation_a"] = "x" * 100_000
    long = tmp_path / "long.jsonl"
    rows.to_json(long, orient="records", lines=True, date_format="iso")
    assert detect_format(long) == "arena" and len(read_logs(long)) == len(rows)
    table = pd.read_parquet(PARQUET)
    table.loc[2, "model_a"] = None
    table.to_parquet(tmp_path / "gap.parquet")
    with pytest.raises(DataError, match=r"gap\.parquet: row 2, column 'model_a' is missing: every battle needs a model_a"):
        read_logs(tmp_path / "gap.parquet")
    records = json.loads(SIMPLE.read_text())
    records[1]["winner"] = 1
    (tmp_path / "num.json").write_text(json.dumps(records))
    with pytest.raises(DataError, match=r"num\.json: \[1\]\.winner is an integer \(1\), expected a string"):
        read_logs(tmp_path / "num.json")
