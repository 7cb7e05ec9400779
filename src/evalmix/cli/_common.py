"""What every subcommand shares: loading DATA and printing (text, or strict JSON with ``--json``).

The argument types and the shared options are in :mod:`evalmix.cli._args` (which loads no heavy
module, so that a command's parser builds quickly) and are importable from here too."""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Mapping, Sequence
from typing import Any, TextIO

import pandas as pd

from ..core import tables
from ..core.result import Result
from ..data.runs import load_table, read_runs
from ..core.errors import DataError
from ..io import detect_format, is_log_source, read_logs
from ..io.inspect_logs import is_evals_df
from ._args import (MAX_ROWS, WHERE_HELP, WIDTH, add_data_arguments, add_output_arguments, conf_level, n_jobs,
                    positive_int, run_role, seed, split_list)

__all__ = ["MAX_ROWS", "WHERE_HELP", "WIDTH", "add_data_arguments", "add_output_arguments", "conf_level",
           "dump_json", "emit", "id_columns", "load_data", "n_jobs", "parse_where", "positive_int", "print_table",
           "records", "require_runs", "result_doc", "run_handler", "seed", "show_progress", "split_list",
           "strict_json"]

#: Warnings recorded while a command runs (set by :func:`evalmix.cli.main`); listed in --json output.
RECORDED_WARNINGS: list[Any] = []


def run_handler(args: argparse.Namespace) -> int:
    """Run the command's handler; with ``-o/--output FILE`` what it prints goes to FILE, written
    atomically once the handler has succeeded (an error or an interruption leaves FILE as it was)."""
    target = getattr(args, "output", None)
    if not target:
        return int(args.handler(args) or 0)
    import contextlib
    import io

    from ..core.files import write_text

    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        code = int(args.handler(args) or 0)
    if code == 0 or code in getattr(args, "output_codes", ()):  # gate: a FAIL verdict is a result too
        write_text(target, buffer.getvalue())
    return code


def show_progress() -> bool:
    """Whether a command draws progress bars: only on a terminal (they go to stderr, so that
    stdout stays the table or the JSON document)."""
    isatty = getattr(sys.stderr, "isatty", None)
    return bool(isatty and isatty())


def warning_lines() -> list[str]:
    """The recorded warnings as one-line texts ``"SingularFitWarning: boundary (singular) fit"``."""
    return [" ".join(f"{w.category.__name__}: {w.message}".split()) for w in RECORDED_WARNINGS]


def parse_where(items: Sequence[str], data: pd.DataFrame, command: str) -> dict[str, list[Any]] | None:
    """``--where`` options as the ``where=`` filter of the library: column -> values to keep.

    Options on different columns all apply (AND); repeated on one column they are alternatives
    (OR: ``--where language=EN --where language=ES`` keeps both languages).  A value is matched by
    its text against the column's values (so ``--where prompt_id=3`` finds the number 3); a
    column or value absent from DATA is an error naming it, never an empty selection.

    Examples
    --------
    >>> d = pd.DataFrame({"language": ["EN", "ES", "FR"], "prompt": [1, 2, 1]})
    >>> parse_where(["language=EN", "language=ES", "prompt=1"], d, "compare")
    {'language': ['EN', 'ES'], 'prompt': [1]}
    """
    wanted: dict[str, list[str]] = {}
    for text in items:
        col, sep, value = text.partition("=")
        col, value = col.strip(), value.strip()
        if not sep or not col:
            raise SystemExit(f"evalmix {command}: --where expects COLUMN=VALUE, got {text!r}")
        wanted.setdefault(col, [])
        if value not in wanted[col]:
            wanted[col].append(value)
    out: dict[str, list[Any]] = {}
    for col, values in wanted.items():
        if col not in data.columns:
            raise SystemExit(f"evalmix {command}: --where column {col!r} is not in DATA (columns: "
                             f"{', '.join(map(str, data.columns))})")
        levels = pd.unique(data[col].dropna())
        plain = [v.item() if hasattr(v, "item") else v for v in levels]  # 3, not np.int64(3)
        by_text = {str(v): v for v in plain}
        absent = [v for v in values if v not in by_text]
        if absent:
            shown = ", ".join(repr(t) for t in sorted(by_text)[:20])
            raise SystemExit(f"evalmix {command}: --where {col}={absent[0]}: no row has that value "
                             f"(values of {col!r}: {shown})")
        out[col] = [by_text[v] for v in values]
    return out or None


# formats whose logs hold a single outcome, so that --score has nothing to choose
SCORE_FIXED = {"tau-bench": "the reward", "swebench": "resolved", "opencompass": "the correct field of its details"}


def id_columns(args: argparse.Namespace) -> list[str]:
    """The identifier columns a command names (model, item, run, judge, the grouping factors of
    its formula), read from a file as written: models ``1`` and ``1.0`` stay two models."""
    cols = ["model", "item", "problem_id", "run", "judge"]
    for name in ("model", "item", "run", "judge", "judges", "cluster", "by"):
        value = getattr(args, name, None)
        if isinstance(value, str):
            cols += [v.strip() for v in value.split(",") if v.strip()]
    formulas = getattr(args, "formula", None)
    for formula in [formulas] if isinstance(formulas, str) else list(formulas or []):
        # grouping factors of (expr | g1:g2) terms (select takes several formulas)
        for group in re.findall(r"\|\s*([^()|]+)\)", str(formula)):
            cols += [g.strip(" `") for g in re.split(r"[:/*+]", group) if g.strip()]
    return cols


def load_data(args: argparse.Namespace, *, scores: bool = False, any_outcome: bool = False,
              raw: pd.DataFrame | None = None) -> pd.DataFrame:
    """Read DATA with the column roles given on the command line (or as harness logs); errors name
    the file.

    ``scores=True`` (a model whose formula names its columns and whose engine checks its response:
    ``fit --family gaussian`` and the like) reads a table as it is, with no 0/1 outcome role, and
    keeps the continuous scores of harness logs.  ``any_outcome=True`` reads the roles but accepts any
    numeric outcome (``read_runs(allow_fractional="any")``: the report fits ratings and scores as
    what they are)."""
    if is_log_source(args.data):
        fmt = detect_format(args.data)
        if fmt == "arena":
            # pairwise preferences have no per-sample outcome for these commands to analyse
            raise DataError(f"{args.data} holds arena battles (model_a, model_b, winner), not per-sample "
                            f"outcomes; rate them with: evalmix arena {args.data}")
        key = {"inspect": "scorer", "openai-evals": "field"}.get(fmt, "metric")
        if args.score and fmt in SCORE_FIXED:
            raise DataError(f"{args.data}: {fmt} logs have one score ({SCORE_FIXED[fmt]}); --score does not apply")
        try:
            logs = read_logs(args.data, **({key: args.score} if args.score else {}))
        except DataError as exc:
            if f"with {key}=" in str(exc):
                raise DataError(f"{exc} (on the command line: --score NAME)") from None
            raise
        source = logs.attrs.get("evalmix_source", {})
        if source.get("outcome_kind") == "continuous" and not (scores or any_outcome):
            # the commands read outcomes as 0/1 (or partial credit): a Wilson interval or a binomial
            # fit of an embedding score would be a wrong number, not an answer
            raise DataError(f"{args.data}: {fmt} scores ({source.get('metric', 'score')}) are continuous, and "
                            f"this command analyses 0/1 outcomes; fit them with evalmix fit --family gaussian "
                            f"(evalmix.lmer('score ~ model + (1|item)', evalmix.read_logs(path)) in Python) or "
                            f"evalmix report")
        return logs
    if raw is None:  # (a caller that already read the table to look at its columns passes it)
        raw = load_table(args.data, encoding=getattr(args, "encoding", None), sep=getattr(args, "sep", None),
                         ids=id_columns(args))
    if is_evals_df(raw):
        raise DataError(f"{args.data} is an Inspect evals_df table: one row per evaluation with scores averaged "
                        "over samples and epochs, and this command needs per-sample outcomes; give it the logs "
                        "(or a samples_df table) instead, or read the scores with evalmix.read_inspect_evals")
    if scores:
        return raw
    item = args.item or ("item" if "item" in raw.columns or "problem_id" not in raw.columns else "problem_id")
    run = run_role(args.run, raw.columns)
    try:
        return read_runs(raw, item=item, model=args.model, run=run, outcome=args.outcome,
                         successes=args.successes, trials=args.trials,
                         missing=getattr(args, "missing", "raise"),
                         allow_fractional="any" if any_outcome else False)
    except DataError as exc:
        raise DataError(f"{args.data}: {exc}") from exc


def require_runs(args: argparse.Namespace, data: pd.DataFrame, what: str) -> None:
    """A one-line error when DATA was read with no run column (``--run none``, or a table without
    one) for a command that compares the runs of each item."""
    schema = data.attrs.get("evalmix") or {}
    if schema.get("run") is None and "run" in schema:
        how = ("--run none reads one run per item" if args.run is not None
               else "DATA has no run column (name it with --run COLUMN)")
        raise SystemExit(f"evalmix {args.command} needs several runs of each item ({what}), and {how}")


def _non_finite(value: float) -> str:
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


_REASONS = {
    "NaN": "not defined for this row (e.g. a slice with one item, or no variation to estimate from)",
    "Infinity": "infinite (e.g. a separated or boundary fit: an estimate or bound at 0% or 100%)",
    "-Infinity": "infinite (e.g. a separated or boundary fit: an estimate or bound at 0% or 100%)",
}


_SEPARATED = ("not finite: the fit is separated (a group with every response a success or a failure), "
              "so this estimate or its standard error diverges")


def strict_json(doc: Any) -> Any:
    """``doc`` with every NaN/Infinity replaced by null, and a ``notes`` list saying where and why.

    JSON has no NaN or Infinity (RFC 8259); ``json.dumps`` would write them anyway.  Each replaced
    value gets a note ``{"field": "table[2].conf_high", "value": "Infinity", "reason": ...}``.

    Examples
    --------
    >>> strict_json({"table": [{"estimate": 0.5, "se": float("nan")}]})["notes"][0]["field"]
    'table[0].se'
    """
    notes: list[dict[str, str]] = []
    separated = any(getattr(w.category, "__name__", "") == "SeparationWarning" for w in RECORDED_WARNINGS)

    def walk(obj: Any, path: str) -> Any:
        if isinstance(obj, dict):
            return {str(k): walk(v, f"{path}.{k}" if path else str(k)) for k, v in obj.items()}
        if isinstance(obj, (list, tuple)):
            return [walk(v, f"{path}[{i}]") for i, v in enumerate(obj)]
        if hasattr(obj, "item") and not isinstance(obj, (str, bytes)):
            try:
                obj = obj.item()
            except (ValueError, TypeError):
                return obj
        if isinstance(obj, float) and not math.isfinite(obj):
            label = _non_finite(obj)
            reason = (_SEPARATED if separated else _REASONS[label]) + ('; see "warnings"' if RECORDED_WARNINGS else "")
            notes.append({"field": path, "value": label, "reason": reason})
            return None
        return obj

    out = walk(doc, "")
    if notes and isinstance(out, dict):
        out["notes"] = list(out.get("notes") or []) + notes
    return out


def records(frame: pd.DataFrame) -> list[dict[str, Any]]:
    """A table as JSON records with its non-finite numbers kept, for :func:`strict_json` to note."""
    return [{str(k): v for k, v in rec.items()} for rec in frame.to_dict(orient="records")]


def result_doc(result: Any) -> dict[str, Any]:
    """``result.to_dict()`` with its ``table`` rebuilt by :func:`records`, so that a NaN or infinite
    value becomes null *with* a note rather than a bare null."""
    doc = dict(result.to_dict())
    if "table" in doc and hasattr(result, "to_frame"):
        doc["table"] = records(result.to_frame())
    return doc


def dump_json(doc: Any, out: Any = None) -> None:
    """Print ``doc`` as strict JSON (no NaN/Infinity) with the warnings the command raised."""
    doc = dict(doc) if isinstance(doc, dict) else {"result": doc}
    if RECORDED_WARNINGS:
        doc["warnings"] = list(dict.fromkeys(warning_lines()))
    text = json.dumps(strict_json(doc), indent=2, default=str, allow_nan=False, ensure_ascii=False)
    print(text, file=out or sys.stdout)


def print_table(args: argparse.Namespace, table: pd.DataFrame, out: TextIO | None = None,
                title: str | None = None) -> None:
    """Print a table as text: the package's number formats, at most :data:`WIDTH` characters wide,
    long tables cut after :data:`MAX_ROWS` rows unless ``--all``."""
    max_rows = None if getattr(args, "all_rows", False) else MAX_ROWS
    if title:
        print(f"\n{title}", file=out or sys.stdout)
    print(tables.to_text(table, width=WIDTH, max_rows=max_rows, more=" (--all prints every row)"),
          file=out or sys.stdout)


def _extra_line(key: str, value: Any) -> str:
    if isinstance(value, float):  # one value formatted as its column would be
        value = tables.format_table(pd.DataFrame({key: [value]})).iloc[0, 0]
    return f"{key}: {value}"


def emit(args: argparse.Namespace, table: pd.DataFrame | Result, extra: dict[str, Any] | None = None) -> None:
    """Print a result as text, or as JSON with ``--json``.

    In text, each ``extra`` value prints as a line ``key: value``, or, when it is a mapping
    (e.g. tie groups, group -> models), as a two-column table under ``key``.
    """
    frame = table.to_frame() if isinstance(table, Result) else table
    if args.json:
        doc = {"command": args.command, "table": records(frame)}
        if extra:
            doc.update(extra)
        dump_json(doc)
        return
    if isinstance(table, Result):
        for line in table.summary().header:  # the scale and interval the numbers are on
            print(line)
    print_table(args, frame)
    for key, value in (extra or {}).items():
        if value is None:
            continue
        if isinstance(value, Mapping):
            name = key.replace("_", " ")
            rows = pd.DataFrame({name.split()[-1].rstrip("s") or key: [str(k) for k in value],
                                 "members": [", ".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)
                                             for v in value.values()]})
            print_table(args, rows, title=f"{name[:1].upper()}{name[1:]}:")
        else:
            print(_extra_line(key, value))
