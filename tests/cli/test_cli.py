"""The evalmix command line."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path


from evalmix.cli import main
from evalmix.glmm import GlmerControl

EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example_runs.csv"


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
    # the result's header names the scale and the interval, then the table
    assert out[0] == "scale: probability; conf_low/conf_high: 95% Wilson interval"
    assert out[1].split()[:3] == ["model", "language", "prompt"]
    assert len(out) == 1 + 1 + 32 + 2
    # without --all: the first 20 of the 32 rows and a count of the rest
    assert main(["describe", str(EXAMPLE)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 1 + 1 + 20 + 1 + 2
    assert out[22] == "... 12 more rows (--all prints every row)"


def test_bad_column_is_a_clear_error(capsys, tmp_path):
    assert main(["describe", str(EXAMPLE), "--outcome", "score"]) == 2
    assert "missing column(s) 'score'" in capsys.readouterr().err


def test_console_script_entry_point():
    proc = subprocess.run([sys.executable, "-m", "evalmix", "describe", str(EXAMPLE), "--by", "model",
                           "--ci", "cluster", "--item", "item"], capture_output=True, text=True,
                          env={"PYTHONPATH": str(EXAMPLE.parents[1] / "src"), "PATH": ""})
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # a fresh interpreter warns of nothing
    lines = proc.stdout.splitlines()
    assert lines[0] == "scale: probability; conf_low/conf_high: 95% item-clustered CLT interval"
    assert "n_items" in lines[1]


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


# ---- how tables print: one number format, 100 columns, long tables cut with a count --------------


def _lines(capsys) -> list[str]:
    return capsys.readouterr().out.splitlines()


def test_plan_prints_counts_as_integers_and_cuts_long_tables(capsys):
    args = ["plan", str(EXAMPLE), "--se", "0.05", "--cost-item", "5"]
    assert main(args) == 0
    out = _lines(capsys)
    assert out[1].split() == ["n_runs", "n_items", "cost", "se"]
    assert out[2].split() == ["1", "101", "606", "0.04990"]  # not 1.0000 101.0000 606.0000
    assert out[22] == "... 30 more rows (--all prints every row)"
    assert out[23:] == ["n_items: 76", "n_runs: 2", "cost: 532", "achieved: 0.04978"]
    assert main(args + ["--all"]) == 0
    out = _lines(capsys)
    assert len(out) == 1 + 1 + 50 + 4 and not any(line.startswith("...") for line in out)


def test_leaderboard_prints_tie_groups_as_a_table(capsys):
    assert main(["leaderboard", str(EXAMPLE), "--n-boot", "200"]) == 0
    out = _lines(capsys)
    assert max(map(len, out)) <= 100
    at = out.index("Tie groups:")
    assert out[at + 1:] == ["group  members", "a      model-A, model-B", "b      model-C, model-D",
                            "c      model-D, model-E", "d      model-E, model-F", "e      model-G, model-H"]
    assert not any("{" in line for line in out)  # no Python dict


def test_select_fits_100_columns_and_tells_nested_from_non_nested(capsys):
    f1 = "correct ~ model + (1|item)"
    f2 = "correct ~ model + language + prompt + (1|item) + (1|item:run)"
    f3 = "correct ~ language + prompt + (1|item)"
    assert main(["select", str(EXAMPLE), "--formula", f1, "--formula", f2, "--formula", f3]) == 0
    out = _lines(capsys)
    assert max(map(len, out)) <= 100
    assert out[:4] == ["Models compared (each fitted to the same 10080 rows):", f"  m1  {f1}", f"  m2  {f2}",
                       f"  m3  {f3}"]
    lrt = out[out.index("Likelihood-ratio tests (lme4 order: each model against the one before it)") + 1:][:4]
    assert lrt[0].split() == ["model", "npar", "loglik", "deviance", "against", "nested", "statistic",
                              "df_diff", "p_value"]
    assert lrt[2].split()[0] == "m1" and lrt[2].split()[4:6] == ["m3", "no"]
    assert lrt[3].split()[0] == "m2" and lrt[3].split()[4:6] == ["m1", "yes"]
    assert lrt[3].split()[-2:] == ["3", "<0.001"]  # df_diff an integer; p as format.pval
    text = " ".join(out)
    assert "m1 against m3: not nested" in text and "does not apply; compare them by BIC" in text
    assert "m2 against m1: nested" in text and "the likelihood-ratio test applies" in text
    assert "Very strong evidence for m2 over m1" in text


def test_unknown_control_setting_suggests_the_closest(capsys):
    args = ["fit", str(EXAMPLE), "--formula", "correct ~ model + (1|item)", "--control"]
    assert main(args + ["maxiterr=10"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("evalmix fit: error: --control maxiterr=...: GlmerControl has no field 'maxiterr'; "
                   "did you mean 'maxiter' or 'stage1_maxiter'?")
    assert main(args + ["zzz=1"]) == 2
    err = capsys.readouterr().err.strip()
    n = len(dataclasses.fields(GlmerControl))
    assert err.endswith(f"GlmerControl has no field 'zzz'; help(evalmix.GlmerControl) lists its {n} settings")


def test_wide_tables_split_into_blocks_that_repeat_the_labels(capsys):
    assert main(["reliability", str(EXAMPLE), "--all"]) == 0
    out = _lines(capsys)
    assert max(map(len, out)) <= 100
    heads = [line for line in out if line.startswith("model  ")]
    assert len(heads) >= 2 and all(h.split()[:3] == ["model", "language", "prompt"] for h in heads)
