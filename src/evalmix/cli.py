"""Command-line interface: ``evalmix <command> DATA [options]``.

Each command reads a runs table with :func:`evalmix.read_runs`, runs one job and prints a table
(``--json`` prints a JSON document instead, for scripts).
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import pandas as pd

from ._result import frame_records
from .data import load_table, read_runs
from .descriptive import CI_METHODS, accuracy
from .errors import DataError, FormulaError

__all__ = ["main", "build_parser", "add_data_arguments", "load_data", "emit"]


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """The DATA argument and the column-role options every command shares."""
    parser.add_argument("data", metavar="DATA", help="runs table (.csv, .parquet or .jsonl)")
    parser.add_argument("--item", default=None, help="item column (default: item, or problem_id if present)")
    parser.add_argument("--model", default="model", help="model column (default: model)")
    parser.add_argument("--run", default="run", help="run column (default: run; 'none' for a single run)")
    parser.add_argument("--outcome", default="correct", help="0/1 outcome column (default: correct)")
    parser.add_argument("--successes", default=None, help="k-of-n successes column (with --trials)")
    parser.add_argument("--trials", default=None, help="k-of-n trials column (with --successes)")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def load_data(args: argparse.Namespace) -> pd.DataFrame:
    """Read DATA with the column roles given on the command line."""
    raw = load_table(args.data)
    item = args.item or ("item" if "item" in raw.columns or "problem_id" not in raw.columns else "problem_id")
    run = None if str(args.run).lower() == "none" else args.run
    return read_runs(raw, item=item, model=args.model, run=run, outcome=args.outcome,
                     successes=args.successes, trials=args.trials)


def emit(args: argparse.Namespace, table: pd.DataFrame | Any, extra: dict[str, Any] | None = None) -> None:
    """Print a result as text, or as JSON with ``--json``."""
    frame = table.to_frame() if hasattr(table, "to_frame") else table
    if args.json:
        doc = {"command": args.command, "table": frame_records(frame)}
        if extra:
            doc.update(extra)
        json.dump(doc, sys.stdout, indent=2, default=str)
        sys.stdout.write("\n")
    else:
        with pd.option_context("display.width", 200, "display.max_columns", 50, "display.max_rows", 500):
            print(frame.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        for key, value in (extra or {}).items():
            print(f"{key}: {value}")


def _split(value: str | None) -> list[str]:
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


def _cmd_describe(args: argparse.Namespace) -> int:
    data = load_data(args)
    by = _split(args.by)
    if not by:
        schema = data.attrs["evalmix"]
        by = [schema["model"]] + list(schema["slices"])
    table = accuracy(data, by, ci=args.ci, conf_level=args.conf_level)
    emit(args, table, {"ci": args.ci, "conf_level": args.conf_level})
    return 0


def _add_describe(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("describe", help="accuracy with confidence intervals per model and slice",
                       description="Accuracy per group with a binomial (or item-clustered) interval.")
    add_data_arguments(p)
    p.add_argument("--by", default=None,
                   help="comma-separated grouping columns (default: model and every slice column)")
    p.add_argument("--ci", default="wilson", choices=CI_METHODS, help="interval method (default: wilson)")
    p.add_argument("--conf-level", type=float, default=0.95, help="interval coverage (default: 0.95)")
    p.set_defaults(handler=_cmd_describe)


# Each entry adds one subcommand; modules with their own commands register here.
COMMANDS: list[Callable[[argparse._SubParsersAction], None]] = [_add_describe]


def build_parser() -> argparse.ArgumentParser:
    """The ``evalmix`` argument parser with every registered subcommand."""
    parser = argparse.ArgumentParser(
        prog="evalmix", description="Statistics for repeated LLM evaluation runs.")
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


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
