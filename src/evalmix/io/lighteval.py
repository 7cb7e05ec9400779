"""lighteval details: the per-sample metrics of each task and run.

``lighteval`` (0.13, ``lighteval.logging.evaluation_tracker.EvaluationTracker.save``) writes, for a
run started at ``<date_id>`` (an ISO time with ``:`` as ``-``):

- ``<output_dir>/results/<model_name>/results_<date_id>.json``: ``config_general`` (with
  ``model_name``), the aggregated ``results`` per task, ``versions``, ``config_tasks``...;
- ``<output_dir>/details/<model_name>/<date_id>/details_<task>_<date_id>.parquet`` (with
  ``--save-details``): one row per sample with the struct columns ``doc`` (``query``,
  ``choices``, ``gold_index``, ``id``, ``task_name``...), ``model_response`` and ``metric`` (the
  sample's score under each of the task's metrics).  The task is named as lighteval names it,
  ``suite|task|few-shot`` (``lighteval|arc:easy|0``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from ._common import (NUMBER, At, PathLike, check_errors, find_sources, outcome, read_each,
                      runs_table)

__all__ = ["is_lighteval_details", "read_lighteval"]

_WHAT = "lighteval details (details/<model>/<date_id>/details_<task>_<date_id>.parquet)"
_NAME = re.compile(r"^details_(?P<task>.+)_(?P<date>\d{4}-\d{2}-\d{2}T[\d\-.]+)\.parquet$")


def is_lighteval_details(path: Path) -> bool:
    """Whether a file is named as lighteval names its details files."""
    return path.is_file() and bool(_NAME.match(path.name))


def _model(path: Path) -> str:
    """``config_general.model_name`` of the run's results file, else the folders below ``details/``."""
    date = path.parent.name
    parts = path.parent.parent.parts
    if "details" in parts:
        i = len(parts) - 1 - parts[::-1].index("details")
        name = "/".join(parts[i + 1:])
        results = Path(*parts[:i], "results", *parts[i + 1:], f"results_{date}.json")
        if results.is_file():
            try:
                config = json.loads(results.read_text(encoding="utf-8-sig")).get("config_general", {})
                if isinstance(config, dict) and isinstance(config.get("model_name"), str):
                    return str(config["model_name"])
            except (OSError, ValueError, AttributeError):
                pass  # the details are what is read; a damaged results file only loses the name
        if name:
            return name
    return path.parent.parent.name


def _read(path: Path) -> dict[str, Any]:
    m = _NAME.match(path.name)
    task, date = (m["task"], m["date"]) if m else (path.stem.removeprefix("details_"), path.parent.name)
    frame = pd.read_parquet(path)
    at = At(str(path))
    if "metric" not in frame.columns:
        raise at.key("metric").error(f"is missing (columns: {', '.join(map(str, frame.columns))})")
    records = []
    for i, (doc, metric) in enumerate(zip(frame["doc"] if "doc" in frame.columns else [None] * len(frame),
                                          frame["metric"])):
        here = at.index(i)
        here.key("metric").check(metric, dict)
        item: Any = i
        if doc is not None:
            here.key("doc").check(doc, dict)
            ident = doc.get("id")
            if ident not in (None, ""):
                item = here.key("doc").key("id").check(ident, (str, int))
        records.append((item, metric, here))
    return {"task": task, "date": date, "model": _model(path), "records": records}


def read_lighteval(paths: PathLike | Iterable[PathLike], metric: str | dict[str, str] | None = None, *,
                   model: str | dict[str, str] | None = None, errors: str = "drop",
                   allow_partial: bool = False) -> pd.DataFrame:
    """Read lighteval details files: one row per model, task, sample and run.

    Parameters
    ----------
    paths : path, folder, glob or list of them
        An ``--output-dir`` folder (its ``details/`` are searched), details folders or files.
    metric : str or dict, optional
        The per-sample metric used as the outcome; by default each task's first metric (the order
        lighteval logs them in).  A string applies to every task; a dict ``{task: metric}``
        overrides the default for the tasks it names.  Values strictly between 0 and 1 (``f1``)
        need ``allow_partial=True``.
    model : str or dict, optional
        Model labels: a string labels every file; a dict renames models.  By default
        ``config_general.model_name`` of the run's results file, else the folders between
        ``details/`` and the run's date folder.
    errors : {"drop", "keep", "raise"}
        Samples whose metric value is missing (null): left out with a DataWarning counting them,
        kept with a ``status`` column, or an error.
    allow_partial : bool
        Keep metric values strictly between 0 and 1 (F1, partial matches) as fractional outcomes.

    Returns
    -------
    pandas.DataFrame
        The :func:`evalmix.read_runs` table ``model``, ``item`` (the sample's ``doc.id``, else
        its position), ``run`` (the run's ``date_id``), ``correct`` and, when several tasks are
        read, ``task``.  ``df.attrs["evalmix_source"]`` records ``metrics`` (per task) and
        ``outcome_kind`` (``"binary"`` or ``"fraction"``).

    Raises
    ------
    DataError
        A file that is not a details file (named with the file and the field, ``[3].metric``), a
        metric absent from a sample (the metrics present are listed), a value outside [0, 1].

    Examples
    --------
    >>> import tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "details" / "org" / "tiny" / "2025-01-01T10-00-00.000001"
    >>> d.mkdir(parents=True)
    >>> rows = pd.DataFrame({"doc": [{"id": "q1", "query": "2+2?"}, {"id": "q2", "query": "3+3?"}],
    ...                      "metric": [{"acc": 1.0}, {"acc": 0.0}]})
    >>> rows.to_parquet(d / "details_lighteval|arith|0_2025-01-01T10-00-00.000001.parquet")
    >>> read_lighteval(d.parent.parent.parent)[["model", "item", "correct"]].values.tolist()
    [['org/tiny', 'q1', 1], ['org/tiny', 'q2', 0]]
    """
    check_errors(errors)
    sources = find_sources(paths, is_lighteval_details, "lighteval details (details_<task>_<date_id>.parquet)")
    loaded = [f for _, f in read_each(sources, _read, _WHAT)]
    rows: list[dict[str, Any]] = []
    chosen: dict[str, str] = {}
    fractional = False
    for f in loaded:
        label = f["model"]
        if isinstance(model, str):
            label = model
        elif isinstance(model, dict):
            label = model.get(label, label)
        for item, values, here in f["records"]:
            wanted = metric.get(f["task"]) if isinstance(metric, dict) else metric
            name = wanted or chosen.get(f["task"]) or next(iter(values), None)
            if name is None:
                raise here.key("metric").error("holds no metric")
            chosen.setdefault(f["task"], name)
            if name not in values:
                raise here.key("metric").key(name).error(
                    f"is missing (metrics logged: {', '.join(map(str, values))}); choose one with metric=")
            value = values[name]
            status, correct = "ok", None
            if value is None or (isinstance(value, float) and value != value):
                status = "unscored"
            else:
                here.key("metric").key(name).check(value, NUMBER + (bool,))
                correct = outcome(value, allow_partial, f"task {f['task']!r}, sample {item!r}",
                                  here.key("metric").key(name))
                fractional |= correct not in (0, 1)
            rows.append({"model": label, "task": f["task"], "item": item, "run": f["date"], "correct": correct,
                         "status": status, "detail": f"metric {name!r} is null" if status != "ok" else None,
                         "source": str(here.file)})
    df = runs_table(rows, errors=errors, allow_partial=allow_partial, what="lighteval details",
                    hint="the same details file read twice, or two samples with one doc id")
    df.attrs["evalmix_source"] = {"format": "lighteval", "metrics": chosen,
                                  "outcome_kind": "fraction" if fractional else "binary"}
    return df
