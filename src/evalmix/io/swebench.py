"""SWE-bench run reports: resolved, unresolved and errored instances of each evaluation run.

``python -m swebench.harness.run_evaluation`` ends by writing ``<model>.<run_id>.json``
(``swebench.harness.reporting.make_run_report``, swebench 5.0.2; the model's ``/`` written as
``__``), which lists the instance ids by outcome: ``resolved_ids``, ``unresolved_ids``,
``empty_patch_ids`` (the model submitted no patch), ``error_ids`` (the evaluation crashed or left
no report), ``incomplete_ids`` (no prediction), and since schema 2 ``infra_failure_ids`` (a subset
of the unresolved and errored ids whose logs show an environment fault).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from ._common import file_head, At, PathLike, check_errors, find_sources, load_json, read_each, runs_table

__all__ = ["is_swebench_report", "read_swebench"]

_WHAT = "SWE-bench run reports (<model>.<run_id>.json written by run_evaluation)"
_START = re.compile(rb'\s*\{\s*"total_instances"\s*:')
# outcome of each list of ids: (correct, status)
_LISTS = {"resolved_ids": (1, "ok"), "unresolved_ids": (0, "ok"), "empty_patch_ids": (0, "ok"),
          "error_ids": (None, "error"), "incomplete_ids": (None, "unscored")}


def is_swebench_report(path: Path) -> bool:
    """Whether a file is a SWE-bench run report, judged by how it starts (``{"total_instances":``)."""
    if path.suffix != ".json":
        return False
    head = file_head(path, 256)
    return head is not None and bool(_START.match(head))


def _ids(data: dict[str, Any], at: At, name: str) -> list[str]:
    ids = at.get(data, name, list, default=[])
    for i, v in enumerate(ids):
        at.key(name).index(i).check(v, str)
    return ids


def _read(path: Path) -> list[dict[str, Any]]:
    at = At(str(path))
    data = at.check(load_json(path, _WHAT), dict)
    for name in ("resolved_ids", "unresolved_ids"):
        at.get(data, name, list)  # present in every schema version
    model, _, run = path.name.removesuffix(".json").rpartition(".")
    model = model.replace("__", "/") if model else path.stem
    infra = set(_ids(data, at, "infra_failure_ids"))
    seen: dict[str, str] = {}
    rows = []
    for name, (correct, status) in _LISTS.items():
        for iid in _ids(data, at, name):
            if iid in seen:
                raise at.key(name).error(f"lists {iid!r}, which {seen[iid]} lists too")
            seen[iid] = name
            detail = None
            if iid in infra and name != "resolved_ids":
                # the harness's environment failed: not an answer of the model
                correct, status, detail = None, "error", "an infrastructure failure (infra_failure_ids)"
            elif status != "ok":
                detail = {"error_ids": "the evaluation failed (error_ids)",
                          "incomplete_ids": "no prediction (incomplete_ids)"}[name]
            rows.append({"model": model, "task": None, "item": iid, "run": run, "correct": correct,
                         "status": status, "detail": detail, "source": str(path)})
            correct, status = _LISTS[name]
    return rows


def read_swebench(paths: PathLike | Iterable[PathLike], *, model: str | dict[str, str] | None = None,
                  errors: str = "drop") -> pd.DataFrame:
    """Read SWE-bench run reports: one row per instance and run, resolved (1) or not (0).

    Parameters
    ----------
    paths : path, folder, glob or list of them
        Run reports ``<model>.<run_id>.json`` (one per model and evaluation run), or folders of them.
    model : str or dict, optional
        Model labels: a string labels every file; a dict renames models.  By default the part of
        the file name before the last dot (``__`` read back as ``/``); the run is the part after it.
    errors : {"drop", "keep", "raise"}
        Instances without an outcome: ``error_ids`` (the evaluation failed), ``incomplete_ids``
        (no prediction) and unresolved ids the harness marks as infrastructure failures
        (``infra_failure_ids``).  Left out with a DataWarning counting them, kept with a
        ``status`` column (``error`` / ``unscored``), or an error.  An empty patch is unresolved
        (0), as SWE-bench counts it.

    Returns
    -------
    pandas.DataFrame
        The :func:`evalmix.read_runs` table ``model``, ``item`` (the instance id), ``run`` (the
        run id), ``correct``; ``df.attrs["evalmix_source"]["outcome_kind"]`` is ``"binary"``.

    Raises
    ------
    DataError
        A file that is not a run report or a field of the wrong kind (named with the file and the
        field), an instance listed under two outcomes, one run read twice.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> report = {"total_instances": 3, "resolved_ids": ["a__a-1"], "unresolved_ids": ["b__b-2"],
    ...           "error_ids": ["c__c-3"], "schema_version": 2}
    >>> _ = (d / "org__agent.run1.json").write_text(json.dumps(report))
    >>> read_swebench(d, errors="keep")[["model", "item", "run", "correct", "status"]].values.tolist()
    [['org/agent', 'a__a-1', 'run1', 1.0, 'ok'], ['org/agent', 'b__b-2', 'run1', 0.0, 'ok'], ['org/agent', 'c__c-3', 'run1', nan, 'error']]
    """
    check_errors(errors)
    sources = find_sources(paths, is_swebench_report, "SWE-bench run report (<model>.<run_id>.json)")
    rows = [r for _, rs in read_each(sources, _read, _WHAT) for r in rs]
    for r in rows:
        if isinstance(model, str):
            r["model"] = model
        elif isinstance(model, dict):
            r["model"] = model.get(r["model"], r["model"])
    df = runs_table(rows, errors=errors, allow_partial=False, what="SWE-bench run reports",
                    hint="the same run report read twice, or two reports with the same model and run id")
    df.attrs["evalmix_source"] = {"format": "swebench", "outcome_kind": "binary"}
    return df
