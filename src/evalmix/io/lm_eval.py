"""lm-evaluation-harness: the ``samples_<task>_<timestamp>.jsonl`` files of ``--log_samples``."""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError
from ._common import (
    PathLike,
    as_list,
    expand,
    load_json,
    outcome,
    read_jsonl,
    runs_table,
)

__all__ = ["read_lm_eval"]

# Fields lm-evaluation-harness writes beside the metrics of each logged document.
_LM_EVAL_FIELDS = frozenset({
    "doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
    "doc_hash", "prompt_hash", "target_hash",
})
# samples_<task>_<datetime.now().isoformat() with ":" replaced by "-">.jsonl
_LM_EVAL_SAMPLES = re.compile(
    r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl(?:\.gz)?$")
# Order matters: the harness names a model by its adapter (peft/delta) before its base weights.
_LM_EVAL_MODEL_KEYS = ("peft", "delta", "pretrained", "model", "path", "engine")


# ------------------------------------------------------------------------- lm-evaluation-harness


def _lm_eval_name(path: Path) -> tuple[str, str]:
    """(task, timestamp) from a samples file name; the stem when it does not follow the harness."""
    m = _LM_EVAL_SAMPLES.match(path.name)
    if m:
        return m["task"], m["stamp"]
    stem = path.name.split(".")[0]
    return stem.removeprefix("samples_"), ""


def _model_from_results(results: dict[str, Any]) -> str | None:
    name = results.get("model_name")
    if name:
        return str(name)
    args = (results.get("config") or {}).get("model_args")
    if isinstance(args, dict):
        for key in _LM_EVAL_MODEL_KEYS:
            if args.get(key):
                return str(args[key])
    elif isinstance(args, str):
        pairs = dict(p.split("=", 1) for p in args.split(",") if "=" in p)
        for key in _LM_EVAL_MODEL_KEYS:
            if pairs.get(key):
                return pairs[key]
    return None


def _lm_eval_model(path: Path, stamp: str) -> str:
    """The model of a samples file, from the results file of the same run, else from its folder.

    The harness writes ``results_<stamp>.json`` (or ``<name>_<stamp>.json`` when ``--output_path``
    ends in ``.json``) beside ``samples_<task>_<stamp>.jsonl``, with the same stamp.
    """
    folder = path.parent
    same_run = [folder / f"results_{stamp}.json"] + sorted(folder.glob(f"*_{stamp}.json")) if stamp else []
    for candidate in same_run:
        if candidate.is_file():
            results = load_json(candidate, "an lm-evaluation-harness results file")
            if isinstance(results, dict) and (name := _model_from_results(results)):
                return name
    names = set()
    for candidate in folder.glob("results_*.json"):
        results = load_json(candidate, "an lm-evaluation-harness results file")
        if isinstance(results, dict) and (name := _model_from_results(results)):
            names.add(name)
    if len(names) == 1:
        return names.pop()
    # <output_path>/<model_name_sanitized>/samples_*.jsonl
    return folder.name


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    records = []
    for line_no, record in read_jsonl(path, "an lm-evaluation-harness samples file"):
        if not isinstance(record, dict) or "doc_id" not in record:
            raise DataError(f"{path}, line {line_no}: no 'doc_id' field; expected an "
                            f"lm-evaluation-harness --log_samples file (samples_<task>_*.jsonl)")
        records.append(record)
    if not records:
        raise DataError(f"{path} holds no logged samples")
    return records


def _choose_filter(path: Path, records: list[dict[str, Any]], filter_name: str | None) -> list[dict]:
    filters = sorted({str(r["filter"]) for r in records if "filter" in r})
    if filter_name is None:
        if len(filters) > 1:
            raise DataError(f"{path} logs each document under several filters {filters}: choose one "
                            f"with filter_name= (or metric='<metric>,<filter>')")
        return records
    if not filters:
        return records  # logs from harness versions without a 'filter' field hold one filter
    chosen = [r for r in records if str(r.get("filter")) == filter_name]
    if not chosen:
        raise DataError(f"{path} has no samples for filter {filter_name!r}; its filters: {filters}")
    return chosen


def _metric_names(record: dict[str, Any]) -> list[str]:
    if isinstance(record.get("metrics"), list):
        return [str(m) for m in record["metrics"]]
    return sorted(k for k in record if k not in _LM_EVAL_FIELDS)


def read_lm_eval(
    paths: PathLike | Iterable[PathLike],
    metric: str,
    model: str | None = None,
    *,
    runs: Sequence[Hashable] | Callable[[Path], Hashable] | None = None,
    filter_name: str | None = None,
    allow_partial: bool = False,
) -> pd.DataFrame:
    """Read lm-evaluation-harness ``--log_samples`` files into a runs table.

    Parameters
    ----------
    paths : path, folder, glob pattern, or a list of them
        ``samples_<task>_<timestamp>.jsonl`` files, or folders searched recursively for them (the
        harness writes them to ``<output_path>/<model_name_sanitized>/``).
    metric : str
        The per-document metric to use as the outcome, e.g. ``"acc"`` or ``"exact_match"``.
        ``"exact_match,strict-match"`` (the harness's ``metric,filter`` key) also names the filter.
    model : str, optional
        Model label for every file.  By default it is read from the ``results_<timestamp>.json``
        file of the same run (``model_name``, else the ``pretrained=``/``model=`` entry of
        ``config.model_args``), else taken from the name of the folder holding the samples file.
    runs : sequence or callable, optional
        Run labels.  A sequence gives one label per entry of ``paths`` (all files found under that
        entry share it); a callable maps each file's path to its label.  By default every file is
        one run, and the files of one (model, task) are numbered 1, 2, ... in timestamp order.
    filter_name : str, optional
        The harness filter to use when a task logs each document under several filters (e.g.
        ``"strict-match"`` and ``"flexible-extract"``); required then.
    allow_partial : bool
        Keep metric values strictly between 0 and 1 as fractional outcomes instead of raising.

    Returns
    -------
    pandas.DataFrame
        The :func:`evalmix.read_runs` table with columns ``model``, ``item`` (the ``doc_id``),
        ``run``, ``correct`` and, when several tasks are read, ``task`` (then items are labelled
        ``"<task>:<doc_id>"``).

    Raises
    ------
    DataError
        A file that is not a samples file, a missing metric (the metrics present are listed), a
        fractional or non-numeric value, several filters without ``filter_name``, two files with
        the same (model, task, run).  Messages name the file and the ``doc_id``.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "org__tiny-lm"
    >>> out.mkdir()
    >>> lines = [{"doc_id": i, "filter": "none", "metrics": ["acc"], "acc": float(i % 2)}
    ...          for i in range(4)]
    >>> _ = (out / "samples_arc_easy_2024-05-01T10-00-00.000001.jsonl").write_text(
    ...     "".join(json.dumps(x) + "\\n" for x in lines))
    >>> df = read_lm_eval(out, "acc", model="tiny-lm")
    >>> df[["model", "item", "run", "correct"]].values.tolist()
    [['tiny-lm', 0, 1, 0], ['tiny-lm', 1, 1, 1], ['tiny-lm', 2, 1, 0], ['tiny-lm', 3, 1, 1]]
    """
    if "," in metric:
        metric, from_metric = metric.split(",", 1)
        if filter_name is not None and filter_name != from_metric:
            raise DataError(f"metric names filter {from_metric!r} but filter_name={filter_name!r}")
        filter_name = from_metric
    entries = as_list(paths)
    if runs is not None and not callable(runs):
        runs = list(runs)
        if len(runs) != len(entries):
            raise DataError(f"runs= gives {len(runs)} labels for {len(entries)} paths: give one per "
                            f"path (or a function of the file path)")

    def is_samples(p: Path) -> bool:
        return p.name.startswith("samples_") and (p.name.endswith(".jsonl") or p.name.endswith(".jsonl.gz"))

    files: list[tuple[Path, Hashable | None]] = []
    for i, entry in enumerate(entries):
        for path in expand(entry, is_samples, "lm-evaluation-harness samples_*.jsonl"):
            label = runs(path) if callable(runs) else (runs[i] if runs is not None else None)
            files.append((path, label))

    loaded = []
    for path, label in files:
        task, stamp = _lm_eval_name(path)
        who = model if model is not None else _lm_eval_model(path, stamp)
        loaded.append((path, who, task, stamp, label))
    if runs is None:
        # each file is one run: number the files of a (model, task) in the order they were written
        order = sorted(range(len(loaded)), key=lambda j: (loaded[j][3], str(loaded[j][0])))
        counter: dict[tuple[str, str], int] = {}
        for j in order:
            path, who, task, stamp, _ = loaded[j]
            counter[who, task] = counter.get((who, task), 0) + 1
            loaded[j] = (path, who, task, stamp, counter[who, task])

    rows: list[dict[str, Any]] = []
    for path, who, task, _, label in loaded:
        records = _choose_filter(path, _read_jsonl(path), filter_name)
        seen: set[Any] = set()
        for record in records:
            doc_id = record["doc_id"]
            if doc_id in seen:
                raise DataError(f"{path}: doc_id {doc_id!r} is logged twice; one line per document "
                                f"(and filter) expected")
            seen.add(doc_id)
            if metric not in record:
                raise DataError(f"{path}: doc_id {doc_id!r} has no metric {metric!r}; metrics logged: "
                                f"{_metric_names(record)}")
            where = f"{path}: doc_id {doc_id!r}, metric {metric!r}"
            rows.append({"model": who, "task": task, "item": doc_id, "run": label,
                         "correct": outcome(record[metric], allow_partial, where),
                         "status": "ok", "source": str(path)})
    return runs_table(rows, errors="raise", allow_partial=allow_partial, what="the samples files",
                      hint="files of one (model, task) must be different runs: give their run "
                           "labels with runs=")


