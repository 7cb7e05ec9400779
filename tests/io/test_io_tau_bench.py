"""read_tau_bench and read_logs on results files written by tau-bench's and tau2-bench's own classes.

tests/fixtures/tau/ holds two agents x six tasks x three trials in each format (tau_bench's
``EnvRunResult.model_dump`` list, tau2's ``Results.save``); expected.csv holds every trial as the
tools' own readers (``EnvRunResult.model_validate``, ``Results.load``) see it.
tests/fixtures/gen_tau.py (run by make_fixtures.sh) regenerates them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

import evalmix
from evalmix import DataError, DataWarning, read_logs, read_tau_bench
from evalmix.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "tau"
EXPECTED = pd.read_csv(FIXTURES / "expected.csv", keep_default_na=False)
TAU1 = FIXTURES / "tau-bench"
TAU2 = FIXTURES / "tau2-bench"


def _model(file: str) -> str:
    if file.startswith("tool-calling-"):
        return file.removeprefix("tool-calling-").split("-0.0_range")[0]
    return file.split("_retail_")[0]


@pytest.mark.parametrize("folder", [TAU1, TAU2], ids=["tau-bench", "tau2-bench"])
def test_every_trial_matches_the_tools_reader(folder):
    df = read_tau_bench(folder, errors="keep")
    want = EXPECTED[EXPECTED["file"].isin([p.name for p in folder.glob("*.json")])]
    assert len(df) == len(want) == 2 * 6 * 3
    got = {(str(r.model), str(r.item), int(r.run)): (r.correct, r.status) for r in df.itertuples()}
    for w in want.itertuples():
        failed = w.error != "" or w.termination_reason == "infrastructure_error"
        correct, status = got[(_model(w.file), str(w.task_id), int(w.trial))]
        if failed:
            assert status == "error" and pd.isna(correct)
        else:
            assert status == "ok" and correct == float(w.reward)


def test_tau_bench_drops_the_failed_solve_with_a_warning():
    with pytest.warns(DataWarning, match=r"left out 1 sample\(s\) without a score \(1 error"):
        df = read_tau_bench(TAU1)
    assert len(df) == 35
    assert df["model"].cat.categories.tolist() == ["claude-3-5-sonnet", "gpt-4o"]
    assert sorted(df["run"].unique()) == [0, 1, 2]
    assert df.attrs["evalmix_source"] == {"format": "tau-bench", "outcome_kind": "binary"}
    # the reward a model earned per trial, as tau-bench's own average reward
    want = EXPECTED[EXPECTED["file"].str.contains("gpt-4o-0.0")]
    mean = df[df["model"] == "gpt-4o"]["correct"].mean()
    assert mean == pytest.approx(want["reward"].astype(float).mean(), abs=1e-12)


def test_tau2_scores_premature_ends_and_leaves_out_infrastructure_errors():
    with pytest.warns(DataWarning, match=r"1 error"):
        df = read_tau_bench(TAU2)
    assert len(df) == 35
    row = df[(df["model"] == "claude-3-5-sonnet") & (df["item"] == "3") & (df["run"] == 0)]
    assert row["correct"].tolist() == [0]  # too_many_errors: tau2's own reward 0, kept
    with pytest.raises(DataError, match=r"gpt-4o_retail.*item '5', run 2 has no score \(status 'error': "
                                        r"termination_reason 'infrastructure_error'\)"):
        read_tau_bench(TAU2, errors="raise")


def test_read_logs_detects_both_formats_and_models_can_be_renamed():
    for folder in (TAU1, TAU2):
        with pytest.warns(DataWarning):
            df = read_logs(folder, model={"gpt-4o": "4o"})
        assert df.attrs["evalmix_source"]["format"] == "tau-bench"
        assert "4o" in df["model"].cat.categories


def test_several_domains_nest_tasks(tmp_path):
    data = json.loads(next(TAU2.glob("gpt-4o*")).read_text())
    data["info"]["environment_info"]["domain_name"] = "airline"
    shutil.copy(next(TAU2.glob("gpt-4o*")), tmp_path / "retail.json")
    (tmp_path / "airline.json").write_text(json.dumps(data))
    with pytest.warns(DataWarning):
        df = read_tau_bench(tmp_path)
    assert df["task"].cat.categories.tolist() == ["airline", "retail"]
    assert "airline:0" in df["item"].cat.categories


def test_cli_reads_the_results(capsys):
    assert main(["describe", str(TAU2), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["table"]
    assert [(r["model"], r["n"]) for r in rows] == [("claude-3-5-sonnet", 18), ("gpt-4o", 17)]
    assert main(["describe", str(TAU2), "--score", "acc"]) == 2
    assert "--score does not apply" in capsys.readouterr().err


def _damaged(tmp_path: Path, folder: Path, edit) -> Path:
    src = next(folder.glob("*.json"))
    data = json.loads(src.read_text())
    edit(data)
    out = tmp_path / src.name
    out.write_text(json.dumps(data))
    return out


@pytest.mark.parametrize(("folder", "edit", "message"), [
    (TAU1, lambda d: d[3].update(reward="1"), r"\[3\]\.reward is a string \('1'\), expected a number"),
    (TAU1, lambda d: d[0].pop("trial"), r"\[0\]\.trial is missing"),
    (TAU1, lambda d: d[2].update(reward=2.0), r"score 2\.0 is not a number in \[0, 1\] \(at .*\[2\]\.reward\)"),
    (TAU2, lambda d: d["simulations"][4].update(trial=None), r"simulations\[4\]\.trial is missing or null"),
    (TAU2, lambda d: d["simulations"][1]["reward_info"].update(reward=None),
     r"simulations\[1\]\.reward_info\.reward is null"),
    (TAU2, lambda d: d["info"].pop("agent_info"), r"info\.agent_info is missing"),
    (TAU2, lambda d: d["simulations"][0]["reward_info"].update(reward=0.5),
     r"score 0\.5 is partial credit.*allow_partial=True"),
])
def test_damaged_files_name_file_and_field(tmp_path, folder, edit, message):
    path = _damaged(tmp_path, folder, edit)
    with pytest.raises(DataError, match=message) as info:
        read_tau_bench(path, errors="keep")
    assert str(path) in str(info.value)


def test_truncated_file_and_partial_rewards(tmp_path):
    src = next(TAU2.glob("*.json"))
    cut = tmp_path / src.name
    cut.write_bytes(src.read_bytes()[:5000])
    with pytest.raises(DataError, match=rf"{cut.name}.*is not valid JSON"):
        read_logs(cut)
    path = _damaged(tmp_path, TAU2, lambda d: d["simulations"][0]["reward_info"].update(reward=0.5))
    with pytest.warns(DataWarning):
        df = read_tau_bench(path, allow_partial=True)
    assert df.attrs["evalmix_source"]["outcome_kind"] == "fraction"
    assert 0.5 in df["correct"].tolist()
    assert evalmix.accuracy(df).table["n"].sum() == len(df)


def test_tau2_dir_format_reads_as_the_single_file(tmp_path):
    cols = ["model", "item", "run", "correct", "status"]
    one = read_tau_bench(next(TAU2.glob("gpt-4o*")), errors="keep")[cols]
    folder = read_tau_bench(FIXTURES / "tau2-bench-dir", errors="keep")[cols]
    key = ["item", "run"]
    pd.testing.assert_frame_equal(folder.sort_values(key).reset_index(drop=True).astype(str),
                                  one.sort_values(key).reset_index(drop=True).astype(str))
    shutil.copytree(FIXTURES / "tau2-bench-dir", tmp_path / "dir")
    (tmp_path / "dir" / "simulations" / "gpt-4o-3-1.json").unlink()
    with pytest.raises(DataError, match=r"results\.json: simulation_index lists 1 simulation\(s\) with no file "
                                        r"in .*simulations \(e\.g\. 'gpt-4o-3-1'\)"):
        read_tau_bench(tmp_path / "dir" / "results.json")
    bad = tmp_path / "dir" / "simulations" / "gpt-4o-0-0.json"
    bad.write_text(bad.read_text().replace('"trial": 0', '"trial": "0"'))
    (tmp_path / "dir" / "results.json").write_text(
        (FIXTURES / "tau2-bench-dir" / "results.json").read_text().replace('"simulation_index"', '"index_gone"'))
    with pytest.raises(DataError, match=r"gpt-4o-0-0\.json: trial is a string \('0'\), expected an integer or null"):
        read_tau_bench(tmp_path / "dir" / "results.json")
