"""What every subcommand shares: the DATA argument, column roles, and printing (text or --json)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

import pandas as pd

from .._result import frame_records
from ..data import load_table, read_runs
from ..errors import DataError
from ..io import detect_format, is_log_source, read_logs

__all__ = ["add_data_arguments", "emit", "load_data", "split_list"]


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """The DATA argument and the column-role options every command shares."""
    parser.add_argument("data", metavar="DATA", help="runs table (.csv, .parquet or .jsonl), or harness logs "
                        "(a folder or log file of Inspect, lm-evaluation-harness, HELM or OpenAI evals)")
    parser.add_argument("--item", default=None, help="item column (default: item, or problem_id if present)")
    parser.add_argument("--model", default="model", help="model column (default: model)")
    parser.add_argument("--run", default="run", help="run column (default: run; 'none' for a single run)")
    parser.add_argument("--outcome", default="correct", help="0/1 outcome column (default: correct)")
    parser.add_argument("--successes", default=None, help="k-of-n successes column (with --trials)")
    parser.add_argument("--trials", default=None, help="k-of-n trials column (with --successes)")
    parser.add_argument("--score", default=None,
                        help="when DATA is logs: the Inspect scorer, the lm-eval/HELM metric or the "
                             "OpenAI evals event field to use")
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")


def load_data(args: argparse.Namespace) -> pd.DataFrame:
    """Read DATA with the column roles given on the command line (or as harness logs)."""
    if is_log_source(args.data):
        key = {"inspect": "scorer", "openai-evals": "field"}.get(detect_format(args.data), "metric")
        try:
            return read_logs(args.data, **({key: args.score} if args.score else {}))
        except DataError as exc:
            if f"with {key}=" in str(exc):
                raise DataError(f"{exc} (on the command line: --score NAME)") from None
            raise
    raw = load_table(args.data)
    item = args.item or ("item" if "item" in raw.columns or "problem_id" not in raw.columns else "problem_id")
    run = None if str(args.run).lower() == "none" else args.run
    return read_runs(raw, item=item, model=args.model, run=run, outcome=args.outcome,
                     successes=args.successes, trials=args.trials)


def split_list(value: str | None) -> list[str]:
    """``"a,b"`` -> ``["a", "b"]``; None -> ``[]``."""
    return [v.strip() for v in value.split(",") if v.strip()] if value else []


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
        if hasattr(table, "summary") and not isinstance(table, pd.DataFrame):
            for line in table.summary().header:  # the scale and interval the numbers are on
                print(line)
        with pd.option_context("display.width", 200, "display.max_columns", 50, "display.max_rows", 500):
            print(frame.to_string(index=False, float_format=lambda v: f"{v:.4f}"))
        for key, value in (extra or {}).items():
            print(f"{key}: {value}")
