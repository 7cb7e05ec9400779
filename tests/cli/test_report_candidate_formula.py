"""``evalmix report --candidate-formula`` names a candidate formula; ``--candidate`` names the
candidate model of ``gate`` and is on ``report`` only as the formula's deprecated old spelling."""

from __future__ import annotations

import argparse

from evalmix.cli import build_parser, main


def _report_action(flag: str) -> argparse.Action:
    parser = build_parser("report")
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices["report"]
    return next(a for a in sub._actions if flag in a.option_strings)


def test_candidate_formula_repeats_and_the_old_spelling_adds_to_it_with_a_note():
    parser = build_parser("report")
    new = parser.parse_args(["report", "runs.csv", "-o", "out", "--candidate-formula", "model",
                             "--candidate-formula", "model + language"])
    assert new.candidate_formula == ["model", "model + language"]
    assert not getattr(new, "deprecations", None)
    old = parser.parse_args(["report", "runs.csv", "-o", "out", "--candidate", "model",
                             "--candidate-formula", "model + language"])
    assert old.candidate_formula == ["model", "model + language"]
    assert old.deprecations == ["--candidate is deprecated; use --candidate-formula F"]
    assert parser.parse_args(["report", "runs.csv", "-o", "out"]).candidate_formula is None
    # --help lists the new spelling only
    assert _report_action("--candidate").help is argparse.SUPPRESS
    assert _report_action("--candidate-formula").help is not argparse.SUPPRESS


def test_the_old_spelling_warns_on_stderr(tmp_path, capsys):
    # a missing table: the run stops at once, after the deprecation note is on stderr
    code = main(["report", str(tmp_path / "none.csv"), "-o", str(tmp_path / "out"), "--candidate", "model"])
    err = capsys.readouterr().err
    assert code == 2
    assert "--candidate is deprecated; use --candidate-formula F" in err and err.startswith("evalmix report: warning:")
