"""``evalmix leaderboard``: the same numbers as the library, from a runs table and from Inspect logs."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.cli import main
from evalmix.studies.leaderboard import rank_sets, rank_sets_glmm

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "data" / "example_runs.csv"
INSPECT = ROOT / "tests" / "fixtures" / "inspect" / "v0.3.285"


def _quiet(fn, *a, **k):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return fn(*a, **k)


def test_runs_table_json_equals_library(capsys):
    assert main(["leaderboard", str(EXAMPLE), "--n-boot", "300", "--seed", "4", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    runs = _quiet(evalmix.read_runs, EXAMPLE)
    lib = rank_sets(runs, n_boot=300, rng=4)
    got = pd.DataFrame(doc["table"])
    assert got["model"].tolist() == lib.table["model"].tolist()
    for col in ("estimate", "se", "conf_low", "conf_high"):
        np.testing.assert_allclose(got[col], lib.table[col], rtol=1e-12)
    for col in ("rank", "rank_low", "rank_high", "marginal_rank_low", "marginal_rank_high", "tie_group"):
        assert got[col].tolist() == lib.table[col].tolist()
    assert doc["tie_groups"] == {g: list(m) for g, m in zip(lib.groups["group"], lib.groups["models"])}
    assert doc["method"] == "bootstrap" and doc["conf_level"] == 0.95


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_glmm_latex_and_plot(capsys, tmp_path):
    png = tmp_path / "lb.png"
    assert main(["leaderboard", str(EXAMPLE), "--method", "glmm", "--plot", str(png), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    runs = _quiet(evalmix.read_runs, EXAMPLE)
    fit = _quiet(evalmix.glmer, "correct ~ model + (1|item) + (1|item:run)", runs)
    lib = rank_sets_glmm(fit, "model")
    np.testing.assert_allclose(pd.DataFrame(doc["table"])["estimate"], lib.table["estimate"], rtol=1e-10)
    assert pd.DataFrame(doc["table"])["tie_group"].tolist() == lib.table["tie_group"].tolist()
    assert png.stat().st_size > 1000
    assert main(["leaderboard", str(EXAMPLE), "--n-boot", "200", "--latex"]) == 0
    tex = capsys.readouterr().out
    assert tex.startswith("\\begin{table}") and "rank set" in tex and "model-A" in tex


def test_inspect_logs_equal_library_numbers(capsys, tmp_path):
    for log in INSPECT.glob("*_arith_*.eval"):
        shutil.copy(log, tmp_path / log.name)
    assert main(["leaderboard", str(tmp_path), "--logs", "inspect", "--scorer", "match", "--n-boot", "400",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    logs = _quiet(evalmix.read_inspect, tmp_path, scorer="match", errors="keep")
    lib = rank_sets(logs, n_boot=400, rng=1)
    got = pd.DataFrame(doc["table"])
    assert set(got["model"]) == {"mockllm/alpha", "mockllm/beta"}
    np.testing.assert_allclose(got["estimate"], lib.table["estimate"], rtol=1e-12)
    assert got["rank_low"].tolist() == lib.table["rank_low"].tolist()
    # every sample of these logs was scored
    assert got["coverage"].tolist() == [1.0, 1.0] and got["n_attempted"].tolist() == [12, 12]


def test_user_errors_exit_2(capsys, tmp_path):
    assert main(["leaderboard", str(INSPECT), "--logs", "inspect", "--scorer", "match", "--by", "task"]) == 2
    assert "needs at least two models" in capsys.readouterr().err
    assert main(["leaderboard", str(tmp_path), "--logs", "lm-eval"]) == 2
    assert "--metric" in capsys.readouterr().err
    assert main(["leaderboard", str(EXAMPLE), "--method", "nope"]) == 2
    assert "--method: invalid choice: 'nope'" in capsys.readouterr().err


LM_EVAL = ROOT / "tests" / "fixtures" / "lm_eval" / "out"


@pytest.mark.parametrize("task,metric", [("mc_local", "acc"), ("gen_local", "exact_match")])
def test_lm_eval_output_folder_equals_library(capsys, task, metric):
    """Post-processing a real lm-evaluation-harness output folder (two models, three runs each)."""
    pattern = str(LM_EVAL / "*" / f"samples_{task}_*.jsonl")
    assert main(["leaderboard", pattern, "--logs", "lm-eval", "--metric", metric, "--n-boot", "500",
                 "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    runs = _quiet(evalmix.read_lm_eval, pattern, metric)
    assert runs["run"].nunique() == 3 and set(runs["model"]) == {"org/tiny-a", "org/tiny-b"}
    lib = rank_sets(runs, n_boot=500, rng=1)
    got = pd.DataFrame(doc["table"])
    np.testing.assert_allclose(got["estimate"], lib.table["estimate"], rtol=1e-12)
    np.testing.assert_allclose(got["conf_low"], lib.table["conf_low"], rtol=1e-12)
    assert got["tie_group"].tolist() == lib.table["tie_group"].tolist()
    acc = runs.groupby("model", observed=True)["correct"].mean()
    np.testing.assert_allclose(got.set_index("model")["estimate"], acc.loc[got["model"]], rtol=1e-12)
