"""Every command of README's command-line tour runs as written on the bundled example."""

from __future__ import annotations

import contextlib
import io
import json
import shlex
from pathlib import Path

import pytest

from evalmix.cli import main

from conftest import readme_tour_commands

ROOT = Path(__file__).resolve().parents[2]


COMMANDS = readme_tour_commands()
# the calibration runs 200 simulations: the second test step runs it; the report command runs once
# per test process as the example_report fixture of conftest.py (test_reporting.py checks it)
CASES = [pytest.param(c, id=c.split()[1], marks=pytest.mark.slow if c.split()[1] in {"calibrate", "irt"} else ())
         for c in COMMANDS if c.split()[1] != "report"]


def test_the_tour_has_every_command():
    assert {c.split()[1] for c in COMMANDS} >= {"describe", "fit", "select", "reliability", "ranks",
                                                 "plan", "compare", "calibrate", "leaderboard",
                                                 "report"}


@pytest.mark.parametrize("command", CASES)
def test_tour_command_runs(command, monkeypatch, tmp_path):
    # run where the user would, but write outputs (the report folder) into a temporary folder
    monkeypatch.chdir(tmp_path)
    (tmp_path / "data").symlink_to(ROOT / "data")
    (tmp_path / "tests").symlink_to(ROOT / "tests")
    argv = shlex.split(command)[1:]
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(argv)
    # the gate's exit code is its verdict (0 PASS, 1 FAIL, 3 INCONCLUSIVE); 2 would be a usage error
    assert code in ({0, 1, 3} if argv[0] == "gate" else {0})
    text = out.getvalue()
    assert text.strip()
    if "--json" in argv:
        json.loads(text, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))
