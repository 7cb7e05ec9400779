"""The evalmix command line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path


from evalmix.cli import main

EXAMPLE = Path(__file__).resolve().parents[1] / "data" / "example_runs.csv"


def test_describe_json(capsys):
    assert main(["describe", str(EXAMPLE), "--by", "model", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["command"] == "describe" and doc["ci"] == "wilson"
    assert len(doc["table"]) == 8
    row = doc["table"][0]
    assert set(row) == {"model", "n", "k", "estimate", "conf_low", "conf_high"} and row["n"] == 1260


def test_describe_text_defaults_to_model_and_slices(capsys):
    assert main(["describe", str(EXAMPLE), "--all"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split()[:3] == ["model", "language", "prompt"]
    assert len(out) == 1 + 32 + 2
    # without --all: the first 20 of the 32 rows and a count of the rest
    assert main(["describe", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 + 20 + 1 + 2
    assert out[21] == "... 12 more rows (--all prints every row)"


def test_bad_column_is_a_clear_error(capsys, tmp_path):
    assert main(["describe", str(EXAMPLE), "--outcome", "score"]) == 2
    assert "missing column(s) 'score'" in capsys.readouterr().err


def test_console_script_entry_point():
    proc = subprocess.run([sys.executable, "-m", "evalmix", "describe", str(EXAMPLE), "--by", "model",
                           "--ci", "cluster", "--item", "item"], capture_output=True, text=True,
                          env={"PYTHONPATH": str(EXAMPLE.parents[1] / "src"), "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    assert "n_items" in proc.stdout.splitlines()[0]


def test_reliability_command(capsys):
    assert main(["reliability", str(EXAMPLE), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc["table"]) == 32 and doc["icc_form"] == "ICC(C,1)"
    row = doc["table"][0]
    assert {"flip_rate", "entropy", "icc", "conf_low", "conf_high", "quality"} <= set(row)


def test_reliability_needs_distinguishing_slices(capsys):
    assert main(["reliability", str(EXAMPLE), "--by", "model"]) == 2
    assert "several rows share an ('item', 'run') pair" in capsys.readouterr().err


def test_ranks_and_plan_commands(capsys):
    assert main(["ranks", str(EXAMPLE), "--slice-by", "language,prompt", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["n_leaderboards"] == 12 and 0 <= doc["n_unstable"] <= 12
    assert main(["plan", str(EXAMPLE), "--se", "0.05", "--cost-item", "5", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["n_items"] >= 2 and doc["n_runs"] >= 1 and doc["achieved"] <= 0.05
    assert main(["se-runs", str(EXAMPLE), "--max-runs", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["table"]


def test_compare_command(capsys):
    args = ["compare", str(EXAMPLE), "model-A", "model-B", "--where", "language=EN", "--where", "prompt=ZS"]
    assert main(args + ["--json"]) == 0
    row = json.loads(capsys.readouterr().out)["table"][0]
    assert row["n"] == 105 and row["conf_low"] < row["estimate"] < row["conf_high"]
    assert main(args[:-2] + ["--json"]) == 2
    assert "duplicate rows for (item, run)" in capsys.readouterr().err


def test_calibrate_command(capsys):
    assert main(["calibrate", "--n-sims", "10", "--methods", "paired_t_runs,mcnemar_single_run", "--json"]) == 0
    table = json.loads(capsys.readouterr().out)["table"]
    assert [r["method"] for r in table] == ["paired_t_runs", "mcnemar_single_run"]
    assert all(0 <= r["power"] <= 1 for r in table)
