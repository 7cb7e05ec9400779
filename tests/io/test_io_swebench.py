"""read_swebench and read_logs on run reports written by SWE-bench's own make_run_report.

tests/fixtures/swebench/ holds two models x three evaluation runs of eight SWE-bench Lite
instances (swebench 5.0.2): one run with an empty patch, one with an instance whose evaluation
left no report (an error).  tests/fixtures/gen_swebench.py (run by make_fixtures.sh) regenerates
them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import evalmix
from evalmix import DataError, DataWarning, read_logs, read_swebench
from evalmix.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "swebench"
REPORTS = sorted(FIXTURES.glob("*.json"))


@pytest.mark.parametrize("path", REPORTS, ids=lambda p: p.stem)
def test_each_report_instance_by_instance(path):
    report = json.loads(path.read_text())
    df = read_swebench(path, errors="keep")
    assert len(df) == report["total_instances"] == 8
    got = dict(zip(df["item"].astype(str), zip(df["correct"], df["status"])))
    for iid in report["resolved_ids"]:
        assert got[iid] == (1, "ok")
    for iid in report["unresolved_ids"] + report["empty_patch_ids"]:
        assert got[iid] == (0, "ok")
    for iid in report["error_ids"]:
        assert got[iid][1] == "error"
    model, run = path.stem.rsplit(".", 1)
    assert set(df["model"]) == {model.replace("__", "/")} and set(df["run"]) == {run}
    assert df.loc[df["status"] == "ok", "correct"].sum() == report["resolved_instances"]


def test_folder_of_runs():
    with pytest.warns(DataWarning, match=r"left out 1 sample\(s\) without a score \(1 error; e\.g\. .*"
                                         r"org__agent-large\.run3\.json: item 'sympy__sympy-20590'"):
        df = read_logs(FIXTURES)
    assert df.attrs["evalmix_source"] == {"format": "swebench", "outcome_kind": "binary"}
    assert len(df) == 2 * 3 * 8 - 1
    assert df["model"].cat.categories.tolist() == ["agent-small", "org/agent-large"]
    assert df["run"].cat.categories.tolist() == ["run1", "run2", "run3"]
    # SWE-bench's % resolved of each run, from the reports themselves
    for (model, run), part in df.groupby(["model", "run"], observed=True):
        report = json.loads((FIXTURES / f"{model.replace('/', '__')}.{run}.json").read_text())
        assert part["correct"].sum() == report["resolved_instances"]
    table = evalmix.accuracy(df, by="model").table
    assert table["n"].tolist() == [24, 23]


def test_infrastructure_failures_and_missing_predictions_have_no_outcome(tmp_path):
    report = json.loads((FIXTURES / "agent-small.run1.json").read_text())
    victim = report["unresolved_ids"][0] if report["unresolved_ids"] else report["resolved_ids"][0]
    report["infra_failure_ids"] = [victim]
    report["incomplete_ids"] = ["new__instance-1"]
    path = tmp_path / "agent-small.run1.json"
    path.write_text(json.dumps(report))
    df = read_swebench(path, errors="keep")
    status = dict(zip(df["item"].astype(str), df["status"]))
    assert status["new__instance-1"] == "unscored"
    if victim in report["unresolved_ids"]:
        assert status[victim] == "error"
    with pytest.raises(DataError, match=r"has no score \(status '(error|unscored)': "):
        read_swebench(path, errors="raise")


def test_cli_reads_the_reports(capsys):
    assert main(["describe", str(FIXTURES), "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["table"]
    assert [(r["model"], r["n"]) for r in rows] == [("agent-small", 24), ("org/agent-large", 23)]
    assert main(["describe", str(FIXTURES), "--score", "resolved"]) == 2
    assert "--score does not apply" in capsys.readouterr().err


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.update(resolved_ids="a"), r"resolved_ids is a string \('a'\), expected an array"),
    (lambda d: d.pop("unresolved_ids"), r"unresolved_ids is missing"),
    (lambda d: d["error_ids"].append(3), r"error_ids\[\d\] is an integer \(3\), expected a string"),
    (lambda d: d["error_ids"].append(d["resolved_ids"][0]), r"error_ids lists '.*', which resolved_ids lists too"),
])
def test_damaged_reports_name_file_and_field(tmp_path, edit, message):
    data = json.loads((FIXTURES / "agent-small.run1.json").read_text())
    edit(data)
    path = tmp_path / "agent-small.run1.json"
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=message) as info:
        read_swebench(path)
    assert str(path) in str(info.value)


def test_truncated_report_in_a_folder_is_left_out_with_a_warning(tmp_path):
    for p in REPORTS[:2]:
        (tmp_path / p.name).write_bytes(p.read_bytes())
    (tmp_path / REPORTS[1].name).write_bytes(REPORTS[1].read_bytes()[:300])
    with pytest.warns(DataWarning, match=rf"left out 1 of 2 file\(s\).*{REPORTS[1].name}.*not valid JSON"):
        df = read_swebench(tmp_path)
    assert set(df["run"]) == {"run1"}
    with pytest.raises(DataError, match=r"not valid JSON"):
        read_swebench(tmp_path / REPORTS[1].name)
