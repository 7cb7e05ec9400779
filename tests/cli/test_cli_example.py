"""``--example NAME`` in place of DATA on every command that reads a table."""

from __future__ import annotations

import argparse
import json

import pytest

from evalmix.cli import _COMMANDS, build_parser, main
from evalmix.data.examples import example_path


def _subparser(command: str) -> argparse.ArgumentParser:
    parser = build_parser(command)
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices[command]


@pytest.mark.parametrize("command", sorted(_COMMANDS))
def test_every_command_with_data_takes_example(command):
    sub = _subparser(command)
    has_data = any(a.dest == "data" and not a.option_strings for a in sub._actions)
    assert ("--example" in sub._option_string_actions) == has_data, command
    assert has_data or command == "calibrate"


def test_example_gives_the_same_table_as_the_file(capsys):
    assert main(["describe", "--example", "runs", "--by", "model", "--json"]) == 0
    by_example = json.loads(capsys.readouterr().out)
    assert main(["describe", str(example_path("runs")), "--by", "model", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["table"] == by_example["table"]
    assert by_example["table"][0] == {"model": "model-A", "n": 1260, "k": 908, "estimate": pytest.approx(908 / 1260),
                                      "conf_low": pytest.approx(0.6952, abs=5e-5),
                                      "conf_high": pytest.approx(0.7447, abs=5e-5)}


def test_example_before_other_positionals(capsys):
    # compare DATA MODEL_A MODEL_B: the two models still land in their places
    assert main(["compare", "--example", "runs", "model-A", "model-B", "--where", "language=EN",
                 "--where", "prompt=ZS", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["table"][0]["n"] == 105


def test_arena_example(capsys):
    assert main(["arena", "--example", "battles", "--json", "--no-rank-sets"]) == 0
    table = json.loads(capsys.readouterr().out)["table"]
    assert [row["model"] for row in table] == ["model-A", "model-B", "model-C", "model-D"]


@pytest.mark.parametrize("argv, message", [
    (["describe"], "evalmix describe: error: DATA is required (a table or a folder of logs), or --example "
                   "runs|ratings|battles"),
    (["describe", "x.csv", "--example", "runs"], "evalmix describe: error: give DATA or --example, not both"),
    (["describe", "--example", "run"], "argument --example: invalid choice: 'run'"),
])
def test_example_usage_errors(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1
