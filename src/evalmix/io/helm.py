"""HELM: the ``per_instance_stats.json`` of each run folder written by ``helm-run``.

``helm-run`` writes ``<output>/runs/<suite>/<run name>/`` with ``run_spec.json`` (the scenario,
the adapter with its ``model`` and ``num_train_trials``, the metrics) and
``per_instance_stats.json``: one entry per (instance, training trial, perturbation) with a list of
statistics ``{"name": {"name": "exact_match", "split": "test"}, "count": 1, "mean": 1.0, ...}``.
Training trials draw other in-context examples for the same instances: they are HELM's repeated
runs, so each becomes one run.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import DataError
from ._common import NUMBER, At, json_kind, PathLike, find_sources, load_json, outcome, read_each, runs_table

__all__ = ["is_helm_stats", "read_helm"]


def is_helm_stats(path: Path) -> bool:
    """Whether a file is a HELM ``per_instance_stats.json`` (by name; checked when read)."""
    return path.name == "per_instance_stats.json"


def _task(run_name: str) -> str:
    """The run name without its model argument: ``mmlu:subject=anatomy,model=x`` -> ``mmlu:subject=anatomy``."""
    scenario, _, args = run_name.partition(":")
    kept = [a for a in args.split(",") if a and not re.match(r"^model(_deployment)?=", a)]
    return scenario + (":" + ",".join(kept) if kept else "")


def _read_run(path: Path) -> tuple[str, str, list[tuple[At, dict[str, Any]]]]:
    """(model, task, unperturbed entries) of one run folder, every field read checked."""
    spec_path = path.parent / "run_spec.json"
    if not spec_path.is_file():
        raise DataError(f"{path}: no run_spec.json beside it (HELM writes both into each run "
                        f"folder); it names the model and the scenario")
    spec = load_json(spec_path, "a HELM run_spec.json")
    adapter = spec.get("adapter_spec") if isinstance(spec, dict) else None
    if not isinstance(adapter, dict):
        raise DataError(f"{spec_path} is not a HELM run spec: no 'adapter_spec'")
    at = At(str(spec_path))
    who = (at.key("adapter_spec").get(adapter, "model", (str, type(None)), default=None)
           or at.key("adapter_spec").get(adapter, "model_deployment", (str, type(None)), default=None)
           or path.parent.name)
    task = _task(at.get(spec, "name", (str, type(None)), default=None) or path.parent.name)
    entries = load_json(path, "HELM per-instance statistics")
    if not isinstance(entries, list):
        raise DataError(f"{path} is not a list of HELM per-instance statistics (instance_id, "
                        f"train_trial_index, stats): the file is {json_kind(entries)}")
    kept = []
    for i, entry in enumerate(entries):
        where = At(str(path)).index(i)
        where.check(entry, dict)
        if where.get(entry, "perturbation", (dict, type(None)), default=None):
            continue
        where.get(entry, "instance_id", (str, int))
        entry = {**entry, "train_trial_index": where.get(entry, "train_trial_index", int, default=0)}
        for j, stat in enumerate(where.get(entry, "stats", list)):
            place = where.key("stats").index(j)
            place.check(stat, dict)
            name = place.get(stat, "name", dict)
            place.key("name").get(name, "name", str)
            place.key("name").get(name, "split", (str, type(None)), default=None)
            place.get(stat, "count", NUMBER, default=0)
            for key in ("mean", "sum"):
                place.get(stat, key, (*NUMBER, type(None)), default=None)
        kept.append((where, entry))
    return str(who), task, kept


def read_helm(
    paths: PathLike | Iterable[PathLike],
    metric: str = "exact_match",
    *,
    split: str = "test",
    model: str | None = None,
    allow_partial: bool = False,
    errors: str = "drop",
) -> pd.DataFrame:
    """Read HELM per-instance statistics into a runs table.

    Parameters
    ----------
    paths : path, folder, glob pattern, or a list of them
        HELM run folders, a suite folder (``benchmark_output/runs/v1``, searched recursively for
        ``per_instance_stats.json``), or the files themselves.
    metric : str
        The per-instance statistic used as the outcome (``exact_match``, ``quasi_exact_match``,
        ``prefix_exact_match``...); the error lists those logged.
    split : str
        The split whose statistics are read (``"test"``, or ``"valid"``).
    model : str, optional
        Model label for every run; by default the adapter's ``model`` in ``run_spec.json``.
    allow_partial : bool
        Keep statistics strictly between 0 and 1 (an F1, a ROUGE score) as fractional outcomes.
    errors : {"drop", "keep", "raise"}
        Instances whose statistic was not computed (count 0): left out with a warning, kept with
        ``status="unscored"`` and a missing outcome, or an error.

    Returns
    -------
    pandas.DataFrame
        The :func:`evalmix.read_runs` table: ``model``, ``item`` (the ``instance_id``), ``run``
        (training trial + 1), ``correct`` and, when several runs of different scenarios are read,
        ``task`` (the run name without its ``model=`` argument; items become ``"<task>:<id>"``).
        Perturbed copies of instances (HELM's robustness and fairness variants) are not read.

    Raises
    ------
    DataError
        A folder without ``run_spec.json``, a file that is not a list of per-instance statistics,
        a metric that is not logged, a value outside [0, 1] or fractional without
        ``allow_partial``.  Messages name the file, the instance and the trial.  A file named in
        ``paths`` that cannot be read or has a field of the wrong kind is an error naming the
        file and the field's path (``[3].train_trial_index``, ``[1].stats[0]``).

    Warns
    -----
    DataWarning
        Instances without the statistic left out (``errors="drop"``); run folders found in a
        folder that cannot be read (each is named with the reason and left out).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> run = pathlib.Path(tempfile.mkdtemp()) / "mmlu_subject=anatomy,model=org_m"
    >>> run.mkdir()
    >>> _ = (run / "run_spec.json").write_text(json.dumps({"name": "mmlu:subject=anatomy,model=org_m",
    ...     "adapter_spec": {"model": "org/m", "num_train_trials": 1}}))
    >>> stat = lambda v: [{"name": {"name": "exact_match", "split": "test"}, "count": 1, "mean": v}]
    >>> _ = (run / "per_instance_stats.json").write_text(json.dumps(
    ...     [{"instance_id": f"id{i}", "train_trial_index": 0, "stats": stat(i % 2)} for i in range(3)]))
    >>> read_helm(run)[["model", "item", "run", "correct"]].values.tolist()
    [['org/m', 'id0', 1, 0], ['org/m', 'id1', 1, 1], ['org/m', 'id2', 1, 0]]
    """
    sources = find_sources(paths, is_helm_stats, "HELM per_instance_stats.json")
    read = read_each(sources, _read_run, "HELM run folders (per_instance_stats.json and run_spec.json)")
    records: list[dict[str, Any]] = []
    for src, (spec_model, task, entries) in read:
        path = src.path
        who = model or spec_model
        logged: set[str] = set()
        for at, entry in entries:
            iid, trial = entry["instance_id"], entry["train_trial_index"]
            where = f"{path}: instance {iid!r}, trial {trial}"
            stat, stat_at = None, at
            for j, s in enumerate(entry["stats"]):
                name = s["name"]
                if name.get("split") == split and not name.get("perturbation"):
                    logged.add(name["name"])
                    if name["name"] == metric:
                        stat, stat_at = s, at.key("stats").index(j)
            scored = stat is not None and stat.get("count", 0) > 0
            if stat is None or not scored:
                stat = {}
            elif stat.get("count") != 1:
                raise DataError(f"{where}: statistic {metric!r} pools {stat.get('count')} values; "
                                f"expected one per instance and trial ({stat_at.path}.count)")
            value_key = "mean" if "mean" in stat else "sum"
            records.append({"model": who, "task": task, "item": iid, "run": trial + 1,
                            "correct": (outcome(stat.get(value_key), allow_partial,
                                                f"{where}, metric {metric!r}", stat_at.key(value_key))
                                        if scored else None),
                            "status": "ok" if scored else "unscored", "source": str(path)})
        if metric not in logged:
            raise DataError(f"{path}: no per-instance statistic {metric!r} on split {split!r}; "
                            f"logged: {sorted(logged)}")
    df = runs_table(records, errors=errors, allow_partial=allow_partial,
                    what=", ".join(str(src.path) for src, _ in read),
                    hint="two run folders hold the same model, scenario and trial")
    df.attrs["evalmix_source"] = {"format": "helm", "metric": metric, "split": split}
    return df
