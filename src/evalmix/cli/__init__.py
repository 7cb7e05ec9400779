"""Command-line interface: ``evalmix <command> DATA [options]``.

Each command reads a runs table with :func:`evalmix.read_runs`, runs one job and prints a table
(``--json`` prints a JSON document instead, for scripts).  A command lives in its own module with an
``add_parser(subparsers)`` function that sets ``handler``; :data:`COMMANDS` lists them.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from collections.abc import Callable, Sequence

from ..errors import DataError, FormulaError
from . import comparisons, describe, inference, leaderboard, reliability, report
from ._common import add_data_arguments, emit, load_data

__all__ = ["COMMANDS", "add_data_arguments", "build_parser", "emit", "load_data", "main"]

COMMANDS: list[Callable[[argparse._SubParsersAction], object]] = [
    describe.add_parser,
    *inference.PARSERS,
    *reliability.PARSERS,
    *comparisons.PARSERS,
    leaderboard.add_parser,
    report.add_parser,
]


def build_parser() -> argparse.ArgumentParser:
    """The ``evalmix`` argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(prog="evalmix", description="Statistics for repeated LLM evaluation runs.")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for add in COMMANDS:
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``evalmix`` command."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("default")
            return int(args.handler(args) or 0)
    except (DataError, FormulaError) as exc:
        print(f"evalmix {args.command}: error: {exc}", file=sys.stderr)
        return 2
