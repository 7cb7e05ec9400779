"""Command-line interface: ``evalmix <command> DATA [options]``.

Each command reads a runs table with :func:`evalmix.read_runs`, runs one job and prints a table
(``--json`` prints a strict JSON document instead, for scripts).  A command lives in its own module
with an ``add_parser(subparsers)`` function that sets ``handler``; :data:`COMMANDS` lists them.

Exit codes: 0 success; 2 a user error (bad file, column, value, option or formula), reported as
one line on stderr, never a traceback.  Warnings are printed one per line on stderr (and listed
under ``"warnings"`` in ``--json`` output).
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import NoReturn

from ..errors import DataError, FormulaError
from . import _common, arena, comparisons, describe, inference, judges, leaderboard, reliability, report
from ._common import add_data_arguments, emit, load_data

__all__ = ["COMMANDS", "add_data_arguments", "build_parser", "emit", "load_data", "main"]

COMMANDS: list[Callable[[argparse._SubParsersAction], object]] = [
    describe.add_parser,
    *inference.PARSERS,
    *reliability.PARSERS,
    *comparisons.PARSERS,
    leaderboard.add_parser,
    arena.add_parser,
    report.add_parser,
    *judges.PARSERS,
]

#: Errors that user input causes: reported in one line with exit code 2.
USER_ERRORS = (DataError, FormulaError, ValueError, OSError)


def _one_line(text: object) -> str:
    return " ".join(" ".join(str(text).split("\n")).split())


class _Parser(argparse.ArgumentParser):
    """argparse with a one-line error (usage is one ``--help`` away) and exit code 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {_one_line(message)} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The ``evalmix`` argument parser with every registered subcommand."""
    from .. import __version__

    parser = _Parser(prog="evalmix", description="Statistics for repeated LLM evaluation runs.")
    parser.add_argument("--version", action="version", version=f"evalmix {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``evalmix`` command; returns the exit code (0 ok, 2 user error).

    Examples
    --------
    >>> main(["--version"])  # doctest: +ELLIPSIS
    evalmix ...
    0
    """
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:  # --help, --version, or a usage error argparse already printed
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    prefix = f"evalmix {args.command}"
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", PendingDeprecationWarning)
            warnings.simplefilter("ignore", RuntimeWarning)  # numpy overflow noise; evalmix warns in words
            _common.RECORDED_WARNINGS = caught  # the JSON writer lists the warnings raised so far
            try:
                return int(args.handler(args) or 0)
            finally:
                for line in dict.fromkeys(_common.warning_lines()):
                    print(f"{prefix}: warning: {line}", file=sys.stderr)
    except SystemExit as exc:  # a handler's own usage check: raise SystemExit("message")
        if isinstance(exc.code, str):
            print(f"{prefix}: error: {_one_line(exc.code.removeprefix(prefix + ': '))}", file=sys.stderr)
            return 2
        return int(exc.code or 0)
    except USER_ERRORS as exc:
        print(f"{prefix}: error: {_one_line(exc)}", file=sys.stderr)
        return 2
    finally:
        _common.RECORDED_WARNINGS = []
