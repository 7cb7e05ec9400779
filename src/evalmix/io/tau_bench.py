"""Results files of the agent benchmarks tau-bench and tau2-bench (trials per task, rewards).

Layouts read (the repositories sierra-research/tau-bench at commit 59a200c6 and
sierra-research/tau2-bench at commit a2c02472):

- tau-bench (``tau_bench/run.py``): a JSON array of ``EnvRunResult`` objects ``{task_id, reward,
  info, traj, trial}``, one per task and trial, in a file named
  ``<agent strategy>-<model>-<temperature>_range_<start>-<end>_user-<user model>-<user strategy>_<time>.json``.
  A solve that raised is written with ``reward`` 0.0 and ``info = {"error", "traceback"}``.
- tau2-bench (``Results.save``): one JSON object ``{timestamp, info, tasks, simulations}`` (or, in
  its "dir" format, ``results.json`` without ``simulations`` and one file per simulation under
  ``simulations/``);
  ``info.agent_info.llm`` is the agent's model, ``info.environment_info.domain_name`` the domain,
  and each of ``simulations`` has ``task_id``, ``trial``, ``termination_reason`` and
  ``reward_info.reward`` (null when the simulation was not evaluated).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from ._common import (NUMBER, file_head, At, PathLike, check_errors, find_sources, load_json, outcome, read_each,
                      runs_table)

__all__ = ["is_tau_results", "read_tau_bench"]

_WHAT = "tau-bench results (a JSON array of EnvRunResult) or tau2-bench results (Results.save)"
_TAU1_START = re.compile(rb'\s*\[\s*\{\s*"task_id"\s*:')
_TAU2_START = re.compile(rb'\s*\{\s*("timestamp"\s*:\s*("[^"]*"|null)\s*,\s*)?"info"\s*:\s*\{\s*"git_commit"')
# tau_bench/run.py's checkpoint name
_TAU1_NAME = re.compile(r"^(?P<strategy>tool-calling|act|react|few-shot)-(?P<model>.+)-(?P<temperature>[0-9.]+)"
                        r"_range_-?\d+--?\d+_user-.+_\d+\.json$")
# termination reasons of tau2's TerminationReason that are not the agent's doing: no outcome
_TAU2_ERRORS = {"infrastructure_error": "error", "unexpected_error": "error"}


def is_tau_results(path: Path) -> bool:
    """Whether a file is a tau-bench or tau2-bench results file, judged by how it starts."""
    if path.suffix != ".json":
        return False
    head = file_head(path)
    if head is None:
        return False
    return bool(_TAU1_START.match(head) or _TAU2_START.match(head))


def _tau1(path: Path, data: list[Any]) -> list[dict[str, Any]]:
    m = _TAU1_NAME.match(path.name)
    model = m["model"] if m else path.stem
    rows = []
    for i, rec in enumerate(data):
        at = At(str(path), f"[{i}]")
        at.check(rec, dict)
        task = at.get(rec, "task_id", (int, str))
        trial = at.get(rec, "trial", int)
        info = at.get(rec, "info", (dict, type(None)), default=None) or {}
        reward = at.get(rec, "reward", NUMBER)
        error = info.get("error")
        rows.append({"model": model, "task": None, "item": task, "run": trial, "reward": reward,
                     "status": "error" if error is not None else "ok",
                     "detail": str(error) if error is not None else None, "source": str(path),
                     "at": at.key("reward")})
    return rows


def _tau2(path: Path, data: dict[str, Any]) -> list[dict[str, Any]]:
    top = At(str(path))
    info = top.get(data, "info", dict)
    agent = top.key("info").get(info, "agent_info", dict)
    model = (top.key("info.agent_info").get(agent, "llm", (str, type(None)), None)
             or top.key("info.agent_info").get(agent, "implementation", str))
    env = top.key("info").get(info, "environment_info", (dict, type(None)), None) or {}
    domain = top.key("info.environment_info").get(env, "domain_name", (str, type(None)), None)
    rows = []
    for at, sim in _simulations(path, data, top):
        at.check(sim, dict)
        task = at.get(sim, "task_id", (str, int))
        trial = at.get(sim, "trial", (int, type(None)), None)
        if trial is None:
            raise at.key("trial").error("is missing or null: the trials of a task cannot be told apart")
        reason = at.get(sim, "termination_reason", (str, type(None)), None)
        reward_info = at.get(sim, "reward_info", (dict, type(None)), None)
        reward = None if reward_info is None else at.key("reward_info").get(reward_info, "reward", NUMBER)
        status = _TAU2_ERRORS.get(str(reason), "ok")
        if status == "ok" and reward is None:
            status = "unscored"
        rows.append({"model": model, "task": domain, "item": task, "run": trial, "reward": reward,
                     "status": status, "detail": f"termination_reason {reason!r}" if status != "ok" else None,
                     "source": str(path), "at": at.key("reward_info.reward")})
    return rows


def _simulations(path: Path, data: dict[str, Any], top: At) -> list[tuple[At, Any]]:
    """The simulations of a results file: inline, or (tau2's "dir" format) one file each under the
    sibling ``simulations/`` folder, checked against the file's ``simulation_index`` as tau2 does."""
    folder = path.parent / "simulations"
    if "simulations" in data or not folder.is_dir():
        return [(top.key("simulations").index(i), sim)
                for i, sim in enumerate(top.get(data, "simulations", list))]
    files = sorted(folder.glob("*.json"))
    index = top.get(data, "simulation_index", (list, type(None)), None)
    if index is not None:
        ids = {top.key("simulation_index").index(i).get(top.key("simulation_index").index(i).check(e, dict),
                                                          "id", str) for i, e in enumerate(index)}
        missing = sorted(ids - {f.stem for f in files})
        if missing:
            raise top.key("simulation_index").error(f"lists {len(missing)} simulation(s) with no file in "
                                                    f"{folder} (e.g. {missing[0]!r})")
    return [(At(str(f)), load_json(f, "a tau2-bench simulation (SimulationRun JSON)")) for f in files]


def _read(path: Path) -> list[dict[str, Any]]:
    data = load_json(path, _WHAT)
    if isinstance(data, list):
        return _tau1(path, data)
    if isinstance(data, dict):
        return _tau2(path, data)
    raise At(str(path)).error(f"is {type(data).__name__}, expected {_WHAT}")


def read_tau_bench(paths: PathLike | Iterable[PathLike], *, model: str | dict[str, str] | None = None,
                   errors: str = "drop", allow_partial: bool = False) -> pd.DataFrame:
    """Read tau-bench or tau2-bench results files: one row per task and trial, the reward as outcome.

    Parameters
    ----------
    paths : path, folder, glob or list of them
        tau-bench checkpoint files (``results/<strategy>-<model>-...json``) or tau2-bench results
        files (``data/simulations/*.json``), or folders holding them.
    model : str or dict, optional
        Model labels: a string labels every file; a dict renames models.  By default the agent's
        model (tau2: ``info.agent_info.llm``; tau-bench: the model part of the file name).
    errors : {"drop", "keep", "raise"}
        Trials without a reward (tau-bench: the solve raised, ``info.error``; tau2: an
        infrastructure or unexpected error, or no ``reward_info``): left out with a DataWarning
        counting them, kept with a ``status`` column, or an error.
    allow_partial : bool
        Keep rewards strictly between 0 and 1 (tau2's partial rewards) as fractional outcomes.

    Returns
    -------
    pandas.DataFrame
        The :func:`evalmix.read_runs` table ``model``, ``item`` (the task id), ``run`` (the trial,
        numbered from 0 as the benchmarks number them), ``correct`` (the reward) and, when several
        tau2 domains are read, ``task`` (items are then ``"<domain>:<task id>"``).
        ``df.attrs["evalmix_source"]["outcome_kind"]`` is ``"binary"`` or ``"fraction"``.

    Raises
    ------
    DataError
        A file that is not a results file, or a field of the wrong kind (named with the file and
        its path, ``[3].reward`` or ``simulations[3].trial``); a task and trial read twice.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> recs = [{"task_id": t, "reward": float(t == k), "info": {}, "traj": [], "trial": k}
    ...         for k in range(2) for t in range(2)]
    >>> name = "tool-calling-gpt-4o-0.0_range_0-2_user-gpt-4o-llm_0601120000.json"
    >>> _ = (d / name).write_text(json.dumps(recs))
    >>> read_tau_bench(d)[["model", "item", "run", "correct"]].values.tolist()
    [['gpt-4o', 0, 0, 1], ['gpt-4o', 1, 0, 0], ['gpt-4o', 0, 1, 0], ['gpt-4o', 1, 1, 1]]
    """
    check_errors(errors)
    sources = find_sources(paths, is_tau_results, "tau-bench / tau2-bench results (*.json)")
    rows = [r for _, rs in read_each(sources, _read, _WHAT) for r in rs]
    fractional = False
    for r in rows:
        if isinstance(model, str):
            r["model"] = model
        elif isinstance(model, dict):
            r["model"] = model.get(r["model"], r["model"])
        if r["status"] == "ok":
            r["correct"] = outcome(r["reward"], allow_partial, f"task {r['item']!r}, trial {r['run']!r}",
                                   r["at"])
            fractional |= r["correct"] not in (0, 1)
        else:
            r["correct"] = None
    df = runs_table(rows, errors=errors, allow_partial=allow_partial, what="tau-bench results",
                    hint="the same results file read twice, or trials of two runs with the same numbers: "
                         "read them separately and label the runs")
    df.attrs["evalmix_source"] = {"format": "tau-bench", "outcome_kind": "fraction" if fractional else "binary"}
    return df
