"""evalmix inside Inspect AI: a leaderboard at the end of every ``inspect eval`` run.

Installed beside ``inspect_ai``, evalmix registers a hook through Inspect's extension mechanism (the
``inspect_ai`` entry point in evalmix's ``pyproject.toml``).  When the environment variable
``EVALMIX_LEADERBOARD`` is set, the hook reads the logs of the run that just ended (all models and
tasks of one ``inspect eval --model a,b,c`` or ``eval(task, model=[...])``) and, per task with at
least two models, computes what Inspect's per-log metrics cannot: simultaneous rank sets and tie
groups (:func:`evalmix.rank_sets`, an item bootstrap: epochs of a sample stay together), paired
comparisons of every model against a baseline with family-wise error control (the max-type
adjusted p-values of the same bootstrap), and the coverage of errored samples.  It prints the
leaderboard and writes it as JSON.

Settings (environment variables):

``EVALMIX_LEADERBOARD``
    Any value but ``0`` turns the hook on.
``EVALMIX_SCORER``
    The scorer to rank on when the samples carry several.
``EVALMIX_BASELINE``
    The baseline model of the paired comparisons (default: the first model in the table).
``EVALMIX_CONF_LEVEL``, ``EVALMIX_N_BOOT``, ``EVALMIX_SEED``
    Joint coverage (0.95), bootstrap replicates (2000) and seed (1).
``EVALMIX_OUT``
    Where to write the JSON report (default ``evalmix-leaderboard.json`` beside the logs).

The numbers are those of :func:`leaderboard_report` on the same logs, which runs without Inspect.
"""

from __future__ import annotations

import difflib
import json
import os
import sys
import warnings
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from ..core.files import write_text
from ..core.result import frame_records
from ..stats.descriptive import accuracy
from ..core.errors import DataError, DataWarning
from ..core.seeds import accepts_seed
from ..io import read_inspect
from ..studies.leaderboard import rank_sets

__all__ = ["leaderboard_report"]


@accepts_seed
def leaderboard_report(logs: str | Path | Iterable[str | Path], *, scorer: str | None = None, baseline: str | None = None,
                       conf_level: float = 0.95, n_boot: int = 2000, rng: int = 1,
                       task: str = "all") -> dict[str, Any]:
    """Rank sets, tie groups, comparisons against a baseline and coverage per task of Inspect logs.

    Parameters
    ----------
    logs : iterable of paths
        Inspect ``.eval``/``.json`` logs (or folders of them).
    scorer : str, optional
        Scorer to rank on when samples carry several.
    baseline : str, optional
        Model compared with every other one (default: the first model of each task).  A name
        that is none of the logs' models is an error; a task the baseline did not run is listed
        under ``"skipped"``.
    conf_level, n_boot, rng
        As in :func:`evalmix.rank_sets`.
    task : str
        Label of the task when the logs hold a single one (several tasks are labelled by name).

    Returns
    -------
    dict
        ``{"tasks": {task: {"leaderboard": [...], "versus_baseline": [...], "tie_groups": {...},
        "baseline": ...}}, "conf_level": ..., "n_boot": ..., "seed": ...}``; a task with fewer than
        two models is listed under ``"skipped"`` with the reason.

    Raises
    ------
    DataError
        A baseline that is none of the models (the message lists them and the closest name), or
        any error of :func:`evalmix.read_inspect`.

    Warns
    -----
    DataWarning
        A task left out because the baseline did not run on it; a log file found in a folder that
        cannot be read (it is left out).
    """
    paths = [logs] if isinstance(logs, (str, os.PathLike)) else list(logs)  # one path is not its letters
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", DataWarning)
        data = read_inspect(paths, scorer=scorer, errors="keep")
    for w in caught:
        # the notes on samples (status, retries) are the report's coverage; a log file left out
        # is not, and is passed on so that no model disappears from the leaderboard unsaid
        if issubclass(w.category, DataWarning) and "cannot be read as" in str(w.message):
            warnings.warn(str(w.message), DataWarning, stacklevel=2)
    if "task" not in data.columns:
        data = data.assign(task=task)
    if baseline is not None:
        _check_baseline(baseline, sorted(map(str, data["model"].unique())))
    out: dict[str, Any] = {"conf_level": conf_level, "n_boot": n_boot, "seed": rng, "tasks": {},
                           "skipped": {}}
    for label, sub in data.groupby("task", sort=True):
        if sub["model"].nunique() < 2:
            out["skipped"][str(label)] = "fewer than two models"
            continue
        if baseline is not None and baseline not in set(sub["model"]):
            models = sorted(map(str, sub["model"].unique()))
            out["skipped"][str(label)] = (f"the baseline {baseline!r} was not run on this task; "
                                          f"its models: {models}")
            warnings.warn(f"task {label!r} left out of the leaderboard report: "
                          f"{out['skipped'][str(label)]}", DataWarning, stacklevel=2)
            continue
        try:
            rs = rank_sets(sub, n_boot=n_boot, conf_level=conf_level, rng=rng)
        except DataError as exc:
            out["skipped"][str(label)] = str(exc)
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DataWarning)
            cov = accuracy(sub, "model").table[["model", "n_attempted", "coverage"]]
        table = rs.table.merge(cov, on="model", how="left")
        base = baseline if baseline is not None else str(sub["model"].iloc[0])
        pairs = rs.pairs
        vs = pairs[(pairs["model_a"] == base) | (pairs["model_b"] == base)].copy()
        flip = vs["model_a"] == base  # report every row as (other model) - (baseline)
        vs["model"] = vs["model_b"].where(flip, vs["model_a"])
        for col in ("estimate", "statistic"):
            vs[col] = vs[col].where(~flip, -vs[col])
        lo, hi = vs["conf_low"].copy(), vs["conf_high"].copy()
        vs["conf_low"], vs["conf_high"] = (-hi).where(flip, lo), (-lo).where(flip, hi)
        vs = vs[["model", "estimate", "se", "conf_low", "conf_high", "statistic", "p_adjusted", "separated"]]
        out["tasks"][str(label)] = {
            "baseline": base, "leaderboard": frame_records(table), "versus_baseline": frame_records(vs),
            "tie_groups": {g: list(m) for g, m in zip(rs.groups["group"], rs.groups["models"])}}
    return out


def _check_baseline(baseline: str, models: list[str]) -> None:
    """A baseline that is none of the models is an error, never an empty comparison."""
    if baseline in models:
        return
    close = difflib.get_close_matches(baseline, models, n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    raise DataError(f"baseline model {baseline!r} is not among the models of the logs {models}"
                    f"{hint}")


try:  # the hook exists only where Inspect is installed; the report above works without it
    from inspect_ai.hooks import Hooks, RunEnd, hooks
    _HAVE_INSPECT = True
except ImportError:  # pragma: no cover - depends on the environment
    _HAVE_INSPECT = False

if _HAVE_INSPECT:  # pragma: no cover - exercised inside a real Inspect run (tests/integrations/test_inspect_live.py)

    @hooks(name="evalmix_leaderboard", description="evalmix: rank sets, tie groups and paired "
                                                   "comparisons at the end of a run")
    class EvalmixLeaderboard(Hooks):
        """Run-end hook: the leaderboard of the run's logs (see the module notes)."""

        def enabled(self) -> bool:
            return os.environ.get("EVALMIX_LEADERBOARD", "0") not in ("", "0")

        async def on_run_end(self, data: RunEnd) -> None:
            locations = [log.location for log in data.logs if getattr(log, "location", None)]
            if not locations:
                return
            names = {log.eval.task for log in data.logs}
            try:
                report = leaderboard_report(
                    locations, scorer=os.environ.get("EVALMIX_SCORER") or None,
                    baseline=os.environ.get("EVALMIX_BASELINE") or None,
                    conf_level=float(os.environ.get("EVALMIX_CONF_LEVEL", "0.95")),
                    n_boot=int(os.environ.get("EVALMIX_N_BOOT", "2000")),
                    rng=int(os.environ.get("EVALMIX_SEED", "1")),
                    task=names.pop() if len(names) == 1 else "all")
            except ValueError as exc:  # DataError, or a setting that is not a number
                # one line in the run's output, as the command line does, not a traceback
                print(f"evalmix leaderboard: error: {exc}", file=sys.stderr)
                return
            report["logs"] = [Path(p).name for p in locations]
            target = Path(os.environ.get("EVALMIX_OUT") or Path(locations[0]).parent / "evalmix-leaderboard.json")
            write_text(target, json.dumps(report, indent=2) + "\n")
            for task, rep in report["tasks"].items():
                print(f"evalmix leaderboard: {task} (joint {report['conf_level']:.0%} rank sets)")
                for row in rep["leaderboard"]:
                    print(f"  {row['model']:<30} {row['estimate']:.4g}  rank {row['rank_low']}-"
                          f"{row['rank_high']}  group {row['tie_group']}  coverage {row['coverage']:.2f}")
            print(f"evalmix leaderboard written to {target}")
