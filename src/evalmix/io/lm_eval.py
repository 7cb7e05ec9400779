"""lm-evaluation-harness: a whole ``--output_path`` folder of ``--log_samples`` runs.

The harness writes ``<output_path>/<model_name_sanitized>/samples_<task>_<stamp>.jsonl`` (one JSON
object per document and filter: ``doc_id``, ``doc``, ``target``, ``arguments``, ``resps``,
``filtered_resps``, ``filter``, ``metrics`` and one value per metric) beside
``results_<stamp>.json`` (the run's configuration: model name and arguments, seeds, every task's
metric list and filter list, and the aggregated scores).  A run of several tasks shares one stamp.
"""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import DataError, DataWarning
from ._common import (
    At,
    PathLike,
    Source,
    as_list,
    expand,
    load_json,
    outcome,
    read_each,
    read_jsonl,
    runs_table,
)

__all__ = ["SAMPLES_FILE", "is_lm_eval_samples", "read_lm_eval"]

# Fields lm-evaluation-harness writes beside the metrics of each logged document.
_FIELDS = frozenset({
    "doc_id", "doc", "target", "arguments", "resps", "filtered_resps", "filter", "metrics",
    "doc_hash", "prompt_hash", "target_hash",
})
# samples_<task>_<datetime.now().isoformat() with ":" replaced by "-">.jsonl
SAMPLES_FILE = re.compile(
    r"^samples_(?P<task>.+)_(?P<stamp>\d{4}-\d{2}-\d{2}T\d{2}-\d{2}-\d{2}(?:\.\d+)?)\.jsonl(?:\.gz)?$")
# The keys of model_args the harness names a model by, in its order (an adapter before its base).
_NAME_KEYS = ("peft", "delta", "pretrained", "model", "path", "engine")
# lm_eval.utils.random_name_id: what the harness calls a model whose model_args name none
_RANDOM_NAME = re.compile(r"^[a-z0-9]{8}$")
# lm_eval.utils.sanitize_model_name replaces these runs of characters by "__"
_SANITIZED = re.compile(r"[\"<>:/|\\?*\[\]]+")


def is_lm_eval_samples(path: Path) -> bool:
    """Whether a file is named like a harness samples file (``samples_*.jsonl[.gz]``)."""
    return path.name.startswith("samples_") and (path.name.endswith(".jsonl")
                                                 or path.name.endswith(".jsonl.gz"))


@dataclass
class _Run:
    """What the results file of one harness run says (empty when there is none)."""

    path: Path | None = None
    model: str | None = None
    invented: bool = False
    configs: dict[str, Any] = field(default_factory=dict)
    scores: dict[str, Any] = field(default_factory=dict)


def _name_in_args(args: Any) -> str | None:
    if isinstance(args, dict):
        for key in _NAME_KEYS:
            if args.get(key):
                return str(args[key])
    elif isinstance(args, str):
        pairs = dict(p.split("=", 1) for p in args.split(",") if "=" in p)
        for key in _NAME_KEYS:
            if pairs.get(key):
                return pairs[key]
    return None


def _read_results(path: Path) -> _Run:
    """The fields of a results file evalmix reads, checked against the harness's layout."""
    results = load_json(path, "an lm-evaluation-harness results file")
    if not isinstance(results, dict):
        raise DataError(f"{path} is not an lm-evaluation-harness results file (not a JSON object)")
    at = At(str(path))
    config = at.get(results, "config", (dict, type(None)), default=None) or {}
    args = at.key("config").get(config, "model_args", (dict, str, type(None)), default=None)
    from_args = _name_in_args(args)
    name = at.get(results, "model_name", (str, type(None)), default=None) or from_args
    configs = at.get(results, "configs", (dict, type(None)), default=None) or {}
    for task, task_config in configs.items():
        where = at.key("configs").key(task)
        where.check(task_config, dict)
        for key in ("metric_list", "filter_list"):
            where.get(task_config, key, (list, type(None)), default=None)
    scores = at.get(results, "results", (dict, type(None)), default=None) or {}
    invented = bool(name) and from_args is None and bool(_RANDOM_NAME.match(str(name)))
    return _Run(path, str(name) if name else None, invented, configs, scores)


class _Folder:
    """The results files of one model folder, read once."""

    def __init__(self) -> None:
        self._cache: dict[Path, _Run] = {}

    def run(self, samples: Path, stamp: str) -> _Run:
        """The results of the run that wrote a samples file (same folder, same stamp)."""
        folder = samples.parent
        candidates = [folder / f"results_{stamp}.json"] + sorted(folder.glob(f"*_{stamp}.json"))
        for candidate in candidates if stamp else []:
            if candidate.is_file() and not candidate.name.startswith("samples_"):
                if candidate not in self._cache:
                    self._cache[candidate] = _read_results(candidate)
                return self._cache[candidate]
        return _Run()

    def model_without_results(self, samples: Path) -> str:
        """The model of a samples file whose results file is missing.

        Another run's results file in the same folder names it; else the folder name
        (``model_name_sanitized``) is read back, ``org__name`` as ``org/name``.
        """
        folder = samples.parent
        names: set[str] = set()
        for candidate in sorted(folder.glob("results_*.json")):
            if candidate not in self._cache:
                self._cache[candidate] = _read_results(candidate)
            found = self._cache[candidate].model
            if found:
                names.add(found)
        if len(names) == 1:
            return names.pop()
        return folder.name.replace("__", "/")


def _per_task(value: str | Mapping[str, str] | None, task: str) -> str | None:
    if isinstance(value, Mapping):
        return value.get(task)
    return value


def _defaults(run: _Run, task: str) -> tuple[str | None, str | None]:
    """The task's first metric and first filter, as its configuration in the results file lists."""
    config = run.configs.get(task) or {}
    metrics = config.get("metric_list") or []
    metric = metrics[0].get("metric") if metrics and isinstance(metrics[0], dict) else None
    filters = config.get("filter_list") or []
    first = filters[0].get("name") if filters and isinstance(filters[0], dict) else None
    return (str(metric) if isinstance(metric, str) else None,
            str(first) if first else ("none" if config else None))


def _records(path: Path) -> list[tuple[At, dict[str, Any]]]:
    """(place, record) of every logged document, its ``doc_id``, ``filter`` and ``metrics`` checked."""
    records = []
    for line_no, record in read_jsonl(path, "an lm-evaluation-harness samples file"):
        at = At(f"{path}, line {line_no}")
        if not isinstance(record, dict) or "doc_id" not in record:
            raise DataError(f"{at}: no 'doc_id' field; expected an lm-evaluation-harness "
                            f"--log_samples file (samples_<task>_*.jsonl)")
        at.get(record, "doc_id", (int, str))
        at.get(record, "filter", str, default=None)
        at.get(record, "metrics", list, default=None)
        records.append((at, record))
    if not records:
        raise DataError(f"{path} holds no logged samples")
    return records


def _metric_names(record: dict[str, Any]) -> list[str]:
    if isinstance(record.get("metrics"), list):
        return [str(m) for m in record["metrics"]]
    return sorted(k for k in record if k not in _FIELDS)


def _choose(path: Path, task: str, records: list[tuple[At, dict[str, Any]]], metric: str | None,
            filter_name: str | None, run: _Run) -> tuple[str, str | None, list[tuple[At, dict[str, Any]]]]:
    """(metric, filter, records of that filter) for one samples file."""
    if metric is not None and "," in metric:
        metric, from_metric = metric.split(",", 1)
        if filter_name is not None and filter_name != from_metric:
            raise DataError(f"task {task!r}: metric names filter {from_metric!r} but filter_name="
                            f"{filter_name!r}")
        filter_name = from_metric
    default_metric, default_filter = _defaults(run, task)
    filters = sorted({str(r["filter"]) for _, r in records if "filter" in r})
    if metric is None:
        metric = default_metric
        if metric is None:
            names = _metric_names(records[0][1])
            if len(names) != 1:
                raise DataError(f"{path}: task {task!r} logs the metrics {names} and no results file "
                                f"says which is its own; choose with metric= (a name, or a dict "
                                f"task -> name)")
            metric = names[0]
    if filter_name is None:
        if default_filter in filters or (not filters and default_filter in (None, "none")):
            filter_name = default_filter
        elif len(filters) > 1:
            raise DataError(f"{path} logs each document under several filters {filters}: choose "
                            f"one with filter_name= (or metric='<metric>,<filter>')")
        else:
            filter_name = filters[0] if filters else None
    if not filters:
        return metric, filter_name, records  # harness versions without a 'filter' field
    chosen = [(at, r) for at, r in records if str(r.get("filter")) == filter_name]
    if not chosen:
        raise DataError(f"{path} has no samples for filter {filter_name!r}; its filters: {filters}")
    return metric, filter_name, chosen


def read_lm_eval(
    paths: PathLike | Iterable[PathLike],
    metric: str | Mapping[str, str] | None = None,
    model: str | Mapping[str, str] | None = None,
    *,
    runs: Sequence[Hashable] | Callable[[Path], Hashable] | None = None,
    filter_name: str | Mapping[str, str] | None = None,
    allow_partial: bool = False,
) -> pd.DataFrame:
    """Read lm-evaluation-harness ``--log_samples`` output into a runs table.

    Parameters
    ----------
    paths : path, folder, glob pattern, or a list of them
        An ``--output_path`` folder (searched recursively for ``samples_<task>_<stamp>.jsonl``
        files: every model, task and run in it), single samples files, or a list of these.
    metric : str or dict, optional
        The per-document metric used as the outcome.  By default each task's own first metric as
        its configuration in the results file lists it (``acc`` for a multiple-choice task,
        ``exact_match`` for gsm8k).  A string applies to every task; a dict ``{task: metric}``
        overrides the default for the tasks it names.  ``"exact_match,flexible-extract"`` (the
        harness's ``metric,filter`` key) also names the filter.
    model : str or dict, optional
        Model labels.  By default the ``model_name`` of the run's ``results_<stamp>.json`` (else
        the name key of its ``model_args``), or, without a results file, the folder name read back
        (``org__name`` is ``org/name``).  A string labels every file; a dict renames models
        (``{"k3xq9a1b": "tiny"}``), e.g. the random names the harness invents for runs whose
        ``model_args`` have no ``pretrained=``/``model=`` key.
    runs : sequence or callable, optional
        Run labels.  A sequence gives one label per entry of ``paths``; a callable maps each
        samples file's path to its label.  By default each harness run (seed) is one run: the
        files of one (model, task) are numbered 1, 2, ... in the order they were written.
    filter_name : str or dict, optional
        The harness filter, for tasks that log each document once per filter (``strict-match``
        and ``flexible-extract``).  By default each task's first filter in its configuration; a
        dict ``{task: filter}`` overrides it per task.
    allow_partial : bool
        Keep metric values strictly between 0 and 1 as fractional outcomes instead of raising.

    Returns
    -------
    pandas.DataFrame
        The :func:`evalmix.read_runs` table with columns ``model``, ``item`` (the ``doc_id``),
        ``run``, ``correct`` and, when several tasks are read, ``task`` (a slice; items are then
        ``"<task>:<doc_id>"``, nested in their task).  ``df.attrs["evalmix_source"]["metrics"]``
        records the ``metric,filter`` used for each task.

    Raises
    ------
    DataError
        A file that is not a samples file, a missing metric (the metrics present are listed), a
        fractional or non-numeric value, several filters and no way to choose, two files with the
        same (model, task, run).  Messages name the file and the ``doc_id``.  A samples or results
        file named in ``paths`` that cannot be read or has a field of the wrong kind (a list as
        ``doc_id`` or as ``config``) is an error naming the file, the line and the field.

    Warns
    -----
    DataWarning
        Model names the harness invented at random (each seed of one model would otherwise load
        as a different model), with the fix; samples files found in a folder that cannot be read
        (each is named with the reason and left out; the others are read).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "org__tiny-lm"
    >>> out.mkdir()
    >>> lines = [{"doc_id": i, "filter": "none", "metrics": ["acc"], "acc": float(i % 2)}
    ...          for i in range(4)]
    >>> _ = (out / "samples_arc_easy_2024-05-01T10-00-00.000001.jsonl").write_text(
    ...     "".join(json.dumps(x) + "\\n" for x in lines))
    >>> df = read_lm_eval(out.parent, "acc")
    >>> df[["model", "item", "run", "correct"]].values.tolist()
    [['org/tiny-lm', 0, 1, 0], ['org/tiny-lm', 1, 1, 1], ['org/tiny-lm', 2, 1, 0], ['org/tiny-lm', 3, 1, 1]]
    """
    entries = as_list(paths)
    if runs is not None and not callable(runs):
        runs = list(runs)
        if len(runs) != len(entries):
            raise DataError(f"runs= gives {len(runs)} labels for {len(entries)} paths: give one per "
                            f"path (or a function of the file path)")
    folders = _Folder()
    sources: list[Source] = []
    labels: dict[Path, Hashable] = {}
    for i, entry in enumerate(entries):
        for src in expand(entry, is_lm_eval_samples, "lm-evaluation-harness samples_*.jsonl"):
            sources.append(src)
            labels[src.path] = runs(src.path) if callable(runs) else (runs[i] if runs is not None else None)

    def load(path: Path) -> dict[str, Any]:
        m = SAMPLES_FILE.match(path.name)
        task, stamp = (m["task"], m["stamp"]) if m else (path.name.split(".")[0]
                                                         .removeprefix("samples_"), "")
        run = folders.run(path, stamp)
        who = run.model or folders.model_without_results(path)
        return {"path": path, "task": task, "stamp": stamp, "run": run, "model": who,
                "label": labels[path], "records": _records(path)}

    loaded = [f for _, f in read_each(sources, load, "lm-evaluation-harness samples files")]

    invented = sorted({f["model"] for f in loaded if f["run"].invented})
    if isinstance(model, str):
        for f in loaded:
            f["model"] = model
    elif isinstance(model, Mapping):
        for f in loaded:
            f["model"] = model.get(f["model"], f["model"])
    left = [name for name in invented if not isinstance(model, str)
            and not (isinstance(model, Mapping) and name in model)]
    if left:
        warnings.warn(
            f"the harness invented the model name(s) {left} (the runs' model_args have no "
            f"pretrained=/model= key), so each run loads as a different model; label them with "
            f"model='<name>' or model={{{left[0]!r}: '<name>', ...}}, or name the model in "
            f"--model_args (pretrained=<name>) when running the harness", DataWarning, stacklevel=2)

    if runs is None:
        # each harness run is one run: number the files of a (model, task) in the order written
        counter: dict[tuple[str, str], int] = {}
        for f in sorted(loaded, key=lambda f: (f["stamp"], str(f["path"]))):
            counter[f["model"], f["task"]] = counter.get((f["model"], f["task"]), 0) + 1
            f["label"] = counter[f["model"], f["task"]]

    rows: list[dict[str, Any]] = []
    used: dict[str, set[str]] = {}
    for f in loaded:
        path, task = f["path"], f["task"]
        name, filt, records = _choose(path, task, f["records"], _per_task(metric, task),
                                      _per_task(filter_name, task), f["run"])
        used.setdefault(task, set()).add(f"{name},{filt}" if filt else name)
        seen: set[Any] = set()
        for at, record in records:
            doc_id = record["doc_id"]
            if doc_id in seen:
                raise DataError(f"{path}: doc_id {doc_id!r} is logged twice; one line per document "
                                f"(and filter) expected")
            seen.add(doc_id)
            if name not in record:
                raise DataError(f"{path}: doc_id {doc_id!r} has no metric {name!r}; metrics logged: "
                                f"{_metric_names(record)}")
            where = f"{path}: doc_id {doc_id!r}, metric {name!r}"
            rows.append({"model": f["model"], "task": task, "item": doc_id, "run": f["label"],
                         "correct": outcome(record[name], allow_partial, where, at.key(name)),
                         "status": "ok",
                         "source": str(path)})
    for task, keys in used.items():
        if len(keys) > 1:
            raise DataError(f"task {task!r} would be scored by different metrics in different runs "
                            f"({sorted(keys)}): name one with metric= / filter_name=")
    df = runs_table(rows, errors="raise", allow_partial=allow_partial, what="the samples files",
                    hint="files of one (model, task) must be different runs: give their run labels "
                         "with runs=")
    df.attrs["evalmix_source"] = {"format": "lm-eval",
                                  "metrics": {t: next(iter(k)) for t, k in sorted(used.items())}}
    return df
