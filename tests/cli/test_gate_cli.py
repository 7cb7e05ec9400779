"""``evalmix gate``: verdicts as exit codes (0 PASS, 1 FAIL, 3 INCONCLUSIVE, 2 usage or data error),
strict JSON, shadow mode, and harness logs as DATA."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalmix.cli import main
from evalmix.studies.gate import read_rule

FIXTURES = Path(__file__).parents[1] / "fixtures"
RULE = """alpha = 0.05
looks = 100

[[metrics]]
name = "accuracy"
column = "correct"
margin = 0.1

[[metrics]]
name = "cost"
column = "cost"
direction = "lower"
margin = "10%"
"""


def _strict(text: str) -> dict:
    def refuse(name: str) -> None:
        raise ValueError(f"non-JSON literal {name}")
    return json.loads(text, parse_constant=refuse)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gate")
    rng = np.random.default_rng(7)
    n = 800
    p = rng.beta(3, 1.5, n)
    rows = [pd.DataFrame({"model": m, "item": np.arange(n), "correct": rng.binomial(1, np.clip(p + dp, 0, 1)),
                          "cost": c * rng.gamma(4, 0.25, n)})
            for m, dp, c in (("base", 0, 1.0), ("same", 0, 0.7), ("worse", -0.3, 1.0), ("close", -0.1, 0.95))]
    pd.concat(rows).to_csv(folder / "runs.csv", index=False)
    (folder / "rule.toml").write_text(RULE)
    (folder / "acc.toml").write_text("looks = 2\n[[metrics]]\nname = 'accuracy'\ncolumn = 'correct'\nmargin = 0.1\n")
    return folder


def _run(argv, capsys):
    code = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return code, cap.out, cap.err


def test_exit_codes_are_the_verdicts(files, capsys):
    common = [files / "runs.csv", "--baseline", "base", "--rule", files / "rule.toml"]
    code, out, err = _run(["gate", *common, "--candidate", "same"], capsys)
    assert code == 0 and out.startswith("verdict: PASS"), err
    assert f"rule sha256 {read_rule(RULE).hash}" in out and "MDE (80% power" in out
    code, out, _ = _run(["gate", *common, "--candidate", "worse"], capsys)
    assert code == 1 and out.startswith("verdict: FAIL")
    code, out, _ = _run(["gate", *common, "--candidate", "close"], capsys)
    assert code == 3 and out.startswith("verdict: INCONCLUSIVE")


def test_user_errors_exit_2(files, capsys):
    common = [files / "runs.csv", "--baseline", "base", "--candidate", "same"]
    code, _, err = _run(["gate", *common, "--rule", files / "missing.toml"], capsys)
    assert code == 2 and "does not exist" in err and "Traceback" not in err
    bad = files / "bad.toml"
    bad.write_text("[[metrics]]\ncolumn = 'latency'\n")
    code, _, err = _run(["gate", *common, "--rule", bad], capsys)
    assert code == 2 and "column 'latency' is not in the data" in err
    code, _, err = _run(["gate", files / "runs.csv", "--baseline", "base", "--candidate", "gpt",
                         "--rule", files / "rule.toml"], capsys)
    assert code == 2 and "model 'gpt' has no rows" in err
    code, _, err = _run(["gate", *common], capsys)  # --rule is required
    assert code == 2 and "--rule" in err


def test_json_is_strict_and_complete(files, capsys):
    code, out, err = _run(["gate", files / "runs.csv", "--baseline", "base", "--candidate", "worse",
                           "--rule", files / "rule.toml", "--json"], capsys)
    assert code == 1, err
    doc = _strict(out)
    assert doc["command"] == "gate" and doc["verdict"] == "FAIL" and doc["exit_code"] == 1
    assert doc["rule_hash"] == read_rule(RULE).hash and set(doc["mde"]) == {"accuracy", "cost"}
    assert [r["metric"] for r in doc["table"]] == ["accuracy", "cost"]
    assert doc["stopped_at"] == doc["path"][-1]["n_items"] < 800 and not doc["shadow"]


def test_shadow_stops_nothing_and_exits_0(files, capsys, tmp_path):
    argv = ["gate", files / "runs.csv", "--baseline", "base", "--candidate", "worse", "--rule",
            files / "rule.toml", "--shadow"]
    code, out, _ = _run(argv, capsys)
    assert code == 0 and "verdict: FAIL (shadow" in out and "at each look" in out
    # -o keeps the output of a FAIL (exit code 1 is a verdict, not an error)
    target = tmp_path / "verdict.json"
    code, _, _ = _run([*argv[:-1], "--json", "-o", target], capsys)
    assert code == 1 and _strict(target.read_text())["verdict"] == "FAIL"


def test_harness_logs_as_data(capsys):
    code, out, err = _run(["gate", FIXTURES / "inspect-hook", "--baseline", "mockllm/alpha", "--candidate",
                           "mockllm/beta", "--rule", FIXTURES.parent / "cli" / "gate_rule.toml", "--json"], capsys)
    assert code == 3, err  # eight items decide nothing
    doc = _strict(out)
    assert doc["n_items"] == 8 and doc["table"][0]["method"].startswith("betting")
    assert "unbalanced design" in err  # the loader's warnings are passed on


def test_a_crash_is_not_a_fail(files, capsys, monkeypatch):
    import evalmix.studies.gate as gate_module

    def broken(*args, **kwargs):
        raise ZeroDivisionError("a bug")
    monkeypatch.setattr(gate_module, "gate", broken)
    code, _, err = _run(["gate", files / "runs.csv", "--baseline", "base", "--candidate", "same", "--rule",
                         files / "rule.toml"], capsys)
    assert code == 4 and "internal error" in err and "ZeroDivisionError" in err


def test_counts_belong_in_the_rule(files, capsys):
    code, _, err = _run(["gate", files / "runs.csv", "--baseline", "base", "--candidate", "same", "--rule",
                         files / "rule.toml", "--successes", "k", "--trials", "n"], capsys)
    assert code == 2 and "trials = TRIALS" in err
