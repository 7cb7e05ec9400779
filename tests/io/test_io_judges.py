"""Judge loaders (MT-bench judgment files, Inspect logs with several graders) and the judges/ppi CLI."""

from __future__ import annotations

import csv
import json
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

import evalmix
from evalmix import DataError, DataWarning
from evalmix.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures"
MT = FIXTURES / "mt_bench"
INSPECT = FIXTURES / "inspect_judges"


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


# ---------------------------------------------------------------------------------------------- MT-bench


def test_single_judgments_match_the_file_line_by_line():
    with pytest.warns(DataWarning, match="left out 1 single-answer judgment"):
        df = evalmix.read_mt_bench(MT, kind="single", threshold=7)
    raw = _lines(MT / "gpt-4_single.jsonl") + _lines(MT / "claude-v1_single.jsonl")
    kept = [r for r in raw if r["score"] != -1]
    assert len(df) == len(kept) == 143
    got = {(r.model, r.item, r.judge): r.score for r in df.itertuples()}
    want = {(r["model"], f"{r['question_id']}:{r['turn']}", r["judge"][0]): float(r["score"]) for r in kept}
    assert got == want
    assert set(df["judge_prompt"]) == {"single-v1", "single-v1-multi-turn"}
    assert (df["correct"] == (df["score"] >= 7)).all()
    assert df["run"].eq(1).all()


def test_pairwise_battles_follow_fastchats_consistency_rule():
    with pytest.warns(DataWarning, match="left out 1 pairwise judgment"):
        b = evalmix.read_mt_bench(MT / "gpt-4_pair.jsonl")
    raw = [r for r in _lines(MT / "gpt-4_pair.jsonl") if "error" not in (r["g1_winner"], r["g2_winner"])]
    assert len(b) == len(raw) == 35
    for row, r in zip(b.itertuples(), raw):
        expected = {"model_1": "model_a", "model_2": "model_b"}.get(r["g1_winner"], "tie") \
            if r["g1_winner"] == r["g2_winner"] else "tie"
        assert (row.model_a, row.model_b, row.winner) == (r["model_1"], r["model_2"], expected)
    with pytest.warns(DataWarning):
        games = evalmix.read_mt_bench(MT / "gpt-4_pair.jsonl", games="both")
    assert len(games) == 2 * 36 - 1
    assert set(games["shown_first"]) == {"model_a", "model_b"}


def test_read_logs_detects_mt_bench_files():
    with pytest.warns(DataWarning):
        df = evalmix.read_logs(MT / "claude-v1_single.jsonl")
    assert df.attrs["evalmix_source"]["format"] == "mt-bench"
    assert set(df["judge"]) == {"claude-v1"}


def _damaged(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


GOOD = _lines(MT / "gpt-4_single.jsonl")[0]


@pytest.mark.parametrize("name, text, match", [
    ("j_single.jsonl", json.dumps(GOOD) + "\n{\"question_id\": 81, \"mod", r"line 2: not valid JSON"),
    ("j_single.jsonl", json.dumps({k: v for k, v in GOOD.items() if k != "score"}) + "\n", r"line 1: score is missing"),
    ("j_single.jsonl", json.dumps(GOOD | {"score": "7"}) + "\n", r"line 1: score is a string"),
    ("j_single.jsonl", json.dumps(GOOD | {"judge": 3}) + "\n", r"line 1: judge is an integer"),
    ("j_single.jsonl", json.dumps(GOOD | {"judge": []}) + "\n", r"judge is \[\], expected \[judge model"),
    ("j_single.jsonl", "[1, 2]\n", r"line 1 is an array"),
    ("j_single.jsonl", "\n\n", r"holds no judgment lines"),
    ("j_pair.jsonl", json.dumps(_lines(MT / "gpt-4_pair.jsonl")[0] | {"g1_winner": "A"}) + "\n",
     r"g1_winner is 'A', expected one of model_1"),
    ("j_single.jsonl", json.dumps(GOOD) + "\n" + json.dumps(GOOD) + "\n", r"share model, question, turn and judge"),
])
def test_damaged_files_are_data_errors_naming_file_line_and_field(tmp_path, name, text, match):
    path = _damaged(tmp_path, name, text)
    with pytest.raises(DataError, match=match) as err:
        evalmix.read_mt_bench(path)
    assert str(path) in str(err.value) or "share model" in str(err.value)


def test_repeated_pairwise_judgments_and_read_logs_options(tmp_path):
    line = (MT / "gpt-4_pair.jsonl").read_text().splitlines()[1]
    path = _damaged(tmp_path, "x_pair.jsonl", line + "\n" + line + "\n")
    with pytest.raises(DataError, match="repeat a model pair"):
        evalmix.read_mt_bench(path)
    df = evalmix.read_logs(INSPECT, judges=True)
    assert df.attrs["evalmix_source"]["format"] == "inspect" and df["judge"].nunique() == 2


def test_found_damaged_file_is_left_out_with_a_warning(tmp_path):
    shutil.copy(MT / "gpt-4_single.jsonl", tmp_path)
    _damaged(tmp_path, "broken_single.jsonl", "{not json\n")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        df = evalmix.read_mt_bench(tmp_path)
    assert set(df["judge"]) == {"gpt-4"}
    assert any("broken_single.jsonl" in str(w.message) for w in caught)


def test_a_mix_of_single_and_pair_files_needs_kind(tmp_path):
    shutil.copy(MT / "gpt-4_single.jsonl", tmp_path)
    shutil.copy(MT / "gpt-4_pair.jsonl", tmp_path)
    with pytest.raises(DataError, match="both single-answer"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        evalmix.read_mt_bench(tmp_path)
    with pytest.warns(DataWarning):
        assert "winner" in evalmix.read_mt_bench(tmp_path, kind="pair").columns


# ---------------------------------------------------------------------------------------------- Inspect


def test_inspect_scorers_as_judges_match_inspects_own_reader():
    df = evalmix.read_inspect(INSPECT, judges=True)
    with open(INSPECT / "reader.csv") as fh:
        ref = list(csv.DictReader(fh))
    assert len(df) == len(ref) == 48
    want = {(r["model"], int(r["item"]), int(r["epoch"]), r["scorer"]): int(r["value"] == "C") for r in ref}
    got = {(r.model, int(r.item), int(r.run), r.judge): int(r.correct) for r in df.itertuples()}
    assert got == want
    graders = df.groupby("judge")["grader"].first().to_dict()
    assert graders == {"model_graded_qa": "mockllm/grader-lenient", "model_graded_qa1": "mockllm/grader-strict"}
    one = evalmix.read_inspect(INSPECT, judges=["model_graded_qa1", "model_graded_qa"])
    assert len(one) == 48


def test_inspect_judges_errors():
    with pytest.raises(DataError, match="no sample has a score 'nope'"):
        evalmix.read_inspect(INSPECT, judges=["model_graded_qa", "nope"])
    with pytest.raises(DataError, match="two or more scorers"):
        evalmix.read_inspect(INSPECT, judges=["model_graded_qa"])
    with pytest.raises(DataError, match="several scores"):
        evalmix.read_inspect(INSPECT)


def test_inspect_judges_feed_the_agreement():
    df = evalmix.read_inspect(INSPECT, judges=True)
    r = evalmix.judge_agreement(df, judge="grader")
    wide = df.pivot_table(index=["model", "item", "run"], columns="grader", values="correct")
    k = evalmix.cohen_kappa(wide.iloc[:, 0], wide.iloc[:, 1])
    assert r.pairs["estimate"].iloc[0] == pytest.approx(k.estimate, abs=1e-12)
    assert r.n_responses == 24


# ---------------------------------------------------------------------------------------------- CLI


@pytest.fixture(scope="module")
def verdicts(tmp_path_factory) -> Path:
    from test_judges import simulate

    path = tmp_path_factory.mktemp("cli") / "verdicts.csv"
    simulate(n_items=25).to_csv(path, index=False)
    return path


def test_cli_judges_json_is_strict_and_complete(verdicts, capsys):
    assert main(["judges", str(verdicts), "--json", "--se", "0.05", "--cost-item", "2"]) == 0
    doc = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"non-strict JSON {c}"))
    assert {"bias", "means", "by_judge", "agreement", "variance", "interaction", "plan"} <= set(doc)
    study = evalmix.judge_study(pd.read_csv(verdicts))
    assert doc["interaction"]["statistic"] == pytest.approx(study.interaction["statistic"], abs=1e-9)
    assert doc["plan"]["se"] <= 0.05


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_cli_judges_text_and_mt_bench_agreement(verdicts, capsys):
    assert main(["judges", str(verdicts)]) == 0
    out = capsys.readouterr().out
    assert "model:judge LRT" in out and "Random effects" in out
    assert main(["judges", str(MT), "--agreement", "--level", "ordinal"]) == 0
    assert "krippendorff_alpha" in capsys.readouterr().out
    assert main(["judges", str(MT), "--threshold", "7", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["bias"]
    assert main(["judges", str(INSPECT), "--judge", "grader", "--agreement", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    ref = evalmix.judge_agreement(evalmix.read_inspect(INSPECT, judges=True), judge="grader").table
    assert doc["table"][0]["estimate"] == pytest.approx(ref["estimate"].iloc[0], abs=1e-12)


@pytest.mark.parametrize("argv, match", [
    (["judges", "{data}", "--judge", "nope"], "missing column(s) 'nope'"),
    (["judges", "{data}", "--ref", "gemini"], "not a level"),
    (["judges", "/no/such/file.csv"], "no such file"),
    (["judges", "{data}", "--se", "0.001", "--max-judges", "2"], "judge variance alone"),
    (["ppi", "{data}"], "human_score"),
    (["ppi", "{data}", "--a", "m1"], "both --a and --b"),
    (["ppi", "{data}", "--method", "magic"], "unknown value"),
])
def test_cli_user_errors_exit_2_with_one_line(verdicts, capsys, argv, match):
    argv = [a.format(data=verdicts, mt=MT) for a in argv]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    errors = [line for line in err if ": error: " in line]
    assert len(errors) == 1 and match.lower() in errors[0].lower()
    assert "Traceback" not in "\n".join(err)


def test_cli_ppi_matches_the_library(tmp_path, capsys):
    judged = evalmix.simulate_judged(n_items=60, n_labelled=15, n_runs=2, rng=1)
    path = tmp_path / "judged.csv"
    judged.to_csv(path, index=False)
    assert main(["ppi", str(path), "--method", "ppi++,classical", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    lib = evalmix.ppi_mean(judged, method=["ppi++", "classical"]).to_frame()
    assert [r["estimate"] for r in doc["table"]] == pytest.approx(lib["estimate"].tolist(), abs=1e-12)
    assert main(["ppi", str(path), "--a", "a", "--b", "b", "--json"]) == 0
    diff = json.loads(capsys.readouterr().out)["table"][0]
    ref = evalmix.ppi_difference(judged, a="a", b="b").to_frame().iloc[0]
    assert diff["estimate"] == pytest.approx(ref["estimate"], abs=1e-12)
    assert diff["se"] == pytest.approx(ref["se"], abs=1e-12)
