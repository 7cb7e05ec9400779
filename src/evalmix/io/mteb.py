"""MTEB results folders: the continuous main score of each task, split and language subset.

``mteb`` (2.x, ``mteb.results.TaskResult.to_disk``; 1.x wrote the same fields) saves one JSON
file per task under ``results/<model name, / as __>/<revision>/<TaskName>.json``, beside a
``model_meta.json`` (``name``, ``revision``...).  A task file holds ``dataset_revision``,
``task_name``, ``mteb_version``, ``evaluation_time`` and ``scores``: for each split a list of
score dicts, one per ``hf_subset`` (language subset), each with ``main_score`` and the task's
other metrics (``ndcg_at_10``, ``accuracy``, ``cosine_spearman``...).
"""

from __future__ import annotations

import math
import re
from collections.abc import Hashable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..data.runs import ensure_runs
from ..core.errors import DataError
from ._common import file_head, NUMBER, At, PathLike, as_list, expand, load_json, read_each

__all__ = ["is_mteb_result", "read_mteb"]

_WHAT = "MTEB task results (results/<model>/<revision>/<TaskName>.json)"
_START = re.compile(rb'\s*\{\s*"dataset_revision"\s*:')


def is_mteb_result(path: Path) -> bool:
    """Whether a file is an MTEB task result, judged by how it starts (``{"dataset_revision":``)."""
    if path.suffix != ".json" or path.name == "model_meta.json":
        return False
    head = file_head(path, 256)
    return head is not None and bool(_START.match(head))


def _model_of(path: Path) -> tuple[str, str]:
    """(model name, revision) from the sibling model_meta.json, else from the folder names."""
    meta = path.parent / "model_meta.json"
    if meta.is_file():
        data = load_json(meta, "MTEB model_meta.json")
        at = At(str(meta))
        at.check(data, dict)
        name = at.get(data, "name", (str, type(None)), None)
        revision = at.get(data, "revision", (str, type(None)), None)
        if name:
            return name, revision or path.parent.name
    return path.parent.parent.name.replace("__", "/"), path.parent.name


def _read(path: Path, metric: str) -> list[dict[str, Any]]:
    at = At(str(path))
    data = at.check(load_json(path, _WHAT), dict)
    task = at.get(data, "task_name", str)
    scores = at.get(data, "scores", dict)
    model, revision = _model_of(path)
    rows = []
    for split, entries in scores.items():
        here = at.key("scores").key(split)
        here.check(entries, list)
        for i, entry in enumerate(entries):
            place = here.index(i)
            place.check(entry, dict)
            subset = place.get(entry, "hf_subset", str, "default")
            if metric not in entry:
                shown = ", ".join(sorted(k for k, v in entry.items() if isinstance(v, NUMBER)
                                         and not isinstance(v, bool))[:12])
                raise place.key(metric).error(f"is missing (numeric fields there: {shown}); choose one "
                                              f"with metric=")
            value = place.get(entry, metric, NUMBER)
            if not math.isfinite(value):
                raise place.key(metric).error(f"is {value!r}, not a finite score")
            rows.append({"model": model, "revision": revision, "task": task, "split": split,
                         "subset": subset, "item": f"{task}:{split}:{subset}", "score": float(value),
                         "source": str(path)})
    if not rows:
        raise at.key("scores").error("holds no scores")
    return rows


def read_mteb(paths: PathLike | Iterable[PathLike], metric: str = "main_score", *,
              model: str | dict[str, str] | None = None,
              runs: Sequence[Hashable] | None = None) -> pd.DataFrame:
    """Read MTEB results folders: one continuous score per model, task, split and language subset.

    Parameters
    ----------
    paths : path, folder, glob or list of them
        A ``results/`` folder (every model and revision in it), a model or revision folder, or task
        result files.
    metric : str
        The score read from each split and subset: ``main_score`` (the task's headline metric) or
        any other metric MTEB reports there (``ndcg_at_10``, ``accuracy``...).  Scores are passed
        through as they are (not thresholded; some, such as Spearman correlations, can be negative).
    model : str or dict, optional
        Model labels: a string labels every file; a dict renames models.  By default the ``name``
        of the revision folder's ``model_meta.json``, else the model folder's name (``__`` read back
        as ``/``).
    runs : sequence, optional
        One run label per entry of ``paths``, for repeated evaluations of one model written to
        separate folders; by default every file is run 1.

    Returns
    -------
    pandas.DataFrame
        A runs table (validated as :func:`evalmix.ensure_runs` validates any finite score) with
        ``model``, ``item`` (``"<task>:<split>:<subset>"``), ``run``, ``score`` (the outcome role)
        and the slices ``task``, ``split``, ``subset``, ``revision``.
        ``df.attrs["evalmix_source"]`` records ``metric`` and ``outcome_kind="continuous"``.

    Raises
    ------
    DataError
        A file that is not a task result or a field of the wrong kind (named with the file and the
        field's path, ``scores.test[0].main_score``); a metric absent from a split (the metrics
        present are listed); one model, task, split and subset read twice (two revisions of a
        model: rename them with ``model=`` or label the runs with ``runs=``).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "results" / "org__embedder" / "abc123"
    >>> d.mkdir(parents=True)
    >>> task = {"dataset_revision": "r1", "task_name": "STSBenchmark", "mteb_version": "2.0.0",
    ...         "scores": {"test": [{"main_score": 0.81, "hf_subset": "default", "languages": ["eng-Latn"]}]},
    ...         "evaluation_time": 1.5}
    >>> _ = (d / "STSBenchmark.json").write_text(json.dumps(task))
    >>> read_mteb(d.parent.parent)[["model", "item", "run", "score"]].values.tolist()
    [['org/embedder', 'STSBenchmark:test:default', 1, 0.81]]
    """
    entries = as_list(paths)
    if runs is not None:
        runs = list(runs)
        if len(runs) != len(entries):
            raise DataError(f"runs= gives {len(runs)} labels for {len(entries)} paths: give one per path")
    sources, labels = [], {}
    for i, entry in enumerate(entries):
        for src in expand(entry, is_mteb_result, "MTEB task result (<TaskName>.json)"):
            sources.append(src)
            labels[src.path] = runs[i] if runs is not None else 1
    rows = []
    for src, found in read_each(sources, lambda p: _read(p, metric), _WHAT):
        for r in found:
            r["run"] = labels[src.path]
            if isinstance(model, str):
                r["model"] = model
            elif isinstance(model, dict):
                r["model"] = model.get(r["model"], r["model"])
            rows.append(r)
    df = pd.DataFrame(rows)
    key = ["model", "item", "run"]
    dup = df.duplicated(key, keep=False)
    if dup.any():
        first = df.loc[dup].iloc[0]
        files = sorted(set(df.loc[dup & (df[key] == first[key]).all(axis=1), "source"]))
        raise DataError(f"model {first['model']!r}, task {first['task']!r}, split {first['split']!r}, subset "
                        f"{first['subset']!r} is read twice, from: {', '.join(files)}; two revisions of one "
                        f"model (rename them with model=) or repeated evaluations (label them with runs=)")
    df = df[["model", "item", "run", "score", "task", "split", "subset", "revision"]]
    out, _ = ensure_runs(df, item="item", model="model", run="run", outcome="score", allow_fractional="any")
    out.attrs["evalmix_source"] = {"format": "mteb", "metric": metric, "outcome_kind": "continuous"}
    return out

