"""OpenAI evals: the JSON-lines record files ``oaieval --record_path`` writes.

A record file starts with ``{"spec": {...}}`` (the completion functions, ``eval_name``,
``base_eval``, ``run_id``, ``created_at``) and ``{"final_report": {...}}``, followed by one line
per event: ``{"run_id", "event_id", "sample_id", "type", "data", ...}``.  Basic evals (``Match``,
``Includes``, ``FuzzyMatch``) log one ``"match"`` event per sample with ``data.correct``;
model-graded evals log ``"metrics"`` events with ``data.score``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import DataError
from ._common import (
    At,
    PathLike,
    check_errors,
    find_sources,
    outcome,
    read_each,
    read_jsonl,
    runs_table,
)

__all__ = ["is_openai_evals_record", "read_openai_evals"]

# event type -> the field of its data that holds the outcome
_OUTCOME_FIELDS = {"match": "correct", "metrics": "score"}
# The start of the spec line oaieval writes first (json.dumps of {"spec": {"completion_fns": ...}}).
_SPEC_START = re.compile(r'^\s*\{\s*"spec"\s*:\s*\{\s*"completion_fns"\s*:')


def is_openai_evals_record(path: Path) -> bool:
    """Whether a file is an ``oaieval`` record file, judged by its first line."""
    if not path.name.endswith((".jsonl", ".log")):
        return False
    try:
        with open(path, encoding="utf-8-sig") as fh:
            line = fh.readline()
    except (OSError, ValueError):
        return False
    try:
        first = json.loads(line or "{}")
    except ValueError:
        # a first line cut short still shows the spec oaieval writes first: a damaged record file,
        # reported when read rather than passed over
        return _SPEC_START.match(line) is not None
    spec = first.get("spec") if isinstance(first, dict) else None
    return isinstance(spec, dict) and "eval_name" in spec and "completion_fns" in spec


def read_openai_evals(
    paths: PathLike | Iterable[PathLike],
    event: str | None = None,
    *,
    field: str | None = None,
    model: str | None = None,
    allow_partial: bool = False,
    errors: str = "drop",
) -> pd.DataFrame:
    """Read OpenAI evals record files into a runs table.

    Parameters
    ----------
    paths : path, folder, glob pattern, or a list of them
        Record files (``oaieval ... --record_path run.jsonl``; by default ``oaieval`` writes them
        to ``/tmp/evallogs/``), or folders searched recursively for them (recognised by their first
        line, whatever their name).
    event : str, optional
        The event type holding the outcome: ``"match"`` (basic evals) or ``"metrics"`` (model-graded
        evals).  By default ``"match"`` when logged, else ``"metrics"``.
    field : str, optional
        The field of the event's data used as the outcome; ``correct`` for ``match`` events and
        ``score`` for ``metrics`` events by default.
    model : str, optional
        Model label for every file; by default the completion function(s) of the spec.
    allow_partial : bool
        Keep values strictly between 0 and 1 (a graded score) as fractional outcomes.
    errors : {"drop", "keep", "raise"}
        Events without the outcome field: left out with a warning, kept with status
        ``"unscored"``, or an error.

    Returns
    -------
    pandas.DataFrame
        The :func:`evalmix.read_runs` table: ``model``, ``item`` (the sample index within the eval:
        ``sample_id`` without its ``<eval_name>.`` prefix), ``run`` (each record file is one run;
        the files of one model and eval are numbered in order of creation), ``correct`` and, when
        several evals are read, ``task`` (the ``base_eval``; items become ``"<task>:<index>"``).

    Raises
    ------
    DataError
        A file without a spec line, no event of the chosen type, a missing or non-0/1 value, the
        same sample twice in one file, an outcome event without its ``sample_id``, a field of the
        wrong kind (a number as ``type``).  Messages name the file, the line and the field.

    Warns
    -----
    DataWarning
        Events without the outcome field left out (``errors="drop"``); record files found in a
        folder that cannot be read (each is named with the reason and left out).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "run.jsonl"
    >>> lines = [{"spec": {"completion_fns": ["gpt-4o"], "eval_name": "arith.dev.v0",
    ...                    "base_eval": "arith", "run_id": "r1", "created_at": "2024-05-01"}},
    ...          {"final_report": {"accuracy": 0.5}, "run_id": "r1"}]
    >>> lines += [{"run_id": "r1", "event_id": i, "sample_id": f"arith.dev.{i}", "type": "match",
    ...            "data": {"correct": i == 0}} for i in range(2)]
    >>> _ = path.write_text("".join(json.dumps(x) + "\\n" for x in lines))
    >>> read_openai_evals(path)[["model", "item", "run", "correct"]].values.tolist()
    [['gpt-4o', '0', 1, 1], ['gpt-4o', '1', 1, 0]]
    """
    check_errors(errors)
    # the event types whose events must name their sample (the outcome is read from them)
    outcome_types = {event} if event is not None else set(_OUTCOME_FIELDS)

    def read_record(path: Path) -> tuple[Path, dict[str, Any], list[tuple[int, dict[str, Any]]]]:
        lines = read_jsonl(path, "an OpenAI evals record file")
        spec = lines[0][1].get("spec") if lines and isinstance(lines[0][1], dict) else None
        if not isinstance(spec, dict) or "eval_name" not in spec:
            raise DataError(f"{path} is not an OpenAI evals record file: its first line has no "
                            f"'spec' with an 'eval_name'")
        at = At(f"{path}, line {lines[0][0]}").key("spec")
        at.get(spec, "eval_name", str)
        for fn_no, fn in enumerate(at.get(spec, "completion_fns", (list, type(None)), default=None) or []):
            at.key("completion_fns").index(fn_no).check(fn, str)
        for name in ("base_eval", "created_at"):
            at.get(spec, name, (str, type(None)), default=None)
        events = []
        for line_no, e in lines[1:]:
            where = At(f"{path}, line {line_no}")
            where.check(e, dict)
            if "type" not in e:
                continue  # the final report and other lines that are not events
            if where.get(e, "type", str) in outcome_types:
                # without its sample an outcome cannot be placed: never an item called 'None'
                where.get(e, "sample_id", str)
                where.get(e, "data", (dict, type(None)), default=None)
            events.append((line_no, e))
        return path, spec, events

    read = read_each(find_sources(paths, is_openai_evals_record, "OpenAI evals record (.jsonl)"),
                     read_record, "OpenAI evals record files")
    runs = [r for _, r in read]
    files = [src.path for src, _ in read]

    types = sorted({e["type"] for _, _, events in runs for _, e in events})
    if event is None:
        event = next((t for t in _OUTCOME_FIELDS if t in types), None)
        if event is None:
            raise DataError(f"no 'match' or 'metrics' events in {', '.join(map(str, files))}; event "
                            f"types logged: {types}; choose one with event= (and field=)")
    elif event not in types:
        raise DataError(f"no {event!r} events; event types logged: {types}")
    field = field or _OUTCOME_FIELDS.get(event)
    if field is None:
        raise DataError(f"name the field of the {event!r} events' data that holds the outcome (field=)")

    counter: dict[tuple[str, str], int] = {}
    records: list[dict[str, Any]] = []
    for path, spec, events in sorted(runs, key=lambda r: (str(r[1].get("created_at", "")), str(r[0]))):
        who = model or ",".join(map(str, spec.get("completion_fns") or [])) or path.stem
        eval_name = str(spec["eval_name"])
        task = str(spec.get("base_eval") or eval_name.split(".")[0])
        counter[who, task] = counter.get((who, task), 0) + 1
        seen: set[str] = set()
        for line_no, e in events:
            if e["type"] != event:
                continue
            sid = At(f"{path}, line {line_no}").get(e, "sample_id", str)
            item = sid.removeprefix(eval_name.rsplit(".", 1)[0] + ".")
            where = f"{path}, line {line_no}: sample {sid!r}"
            if sid in seen:
                raise DataError(f"{where} has a second {event!r} event; one per sample expected")
            seen.add(sid)
            data = At(f"{path}, line {line_no}").get(e, "data", (dict, type(None)), default=None) or {}
            value = data.get(field)
            scored = value is not None
            at = At(f"{path}, line {line_no}").key("data").key(field)
            records.append({"model": who, "task": task, "item": item, "run": counter[who, task],
                            "correct": outcome(value, allow_partial, f"{where}, {field!r}", at)
                            if scored else None, "status": "ok" if scored else "unscored",
                            "source": str(path)})
    df = runs_table(records, errors=errors, allow_partial=allow_partial,
                    what=", ".join(map(str, files)), hint="one sample appears in two record files "
                    "of one run")
    df.attrs["evalmix_source"] = {"format": "openai-evals", "event": event, "field": field}
    return df
