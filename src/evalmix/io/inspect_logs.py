"""Inspect AI logs: ``.eval`` archives (deflate or Zstandard members), ``.json`` logs, and the
frames of ``inspect_ai.analysis.samples_df``.

The logs are read with :mod:`zipfile` and :mod:`json` rather than with
``inspect_ai.log.read_eval_log``.  An ``.eval`` file is a zip archive with a stable, simple layout
(``header.json``, or only ``_journal/start.json`` for a log still being written or whose process
died; ``samples/<id>_epoch_<n>.json``), and evalmix needs only the model, the task and each
sample's scores.  Depending on inspect_ai would pull in its whole runtime to read a few fields and
tie evalmix to its release cycle.  inspect_ai 0.3.2xx compresses the members with Zstandard (zip
method 93), which :mod:`zipfile` decodes only from Python 3.14 on; such members are decoded with
the ``zstandard`` package (see :func:`evalmix.io._common.read_zip_member`).
"""

from __future__ import annotations

import json
import math
import re
import warnings
import zipfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import DataError, DataWarning
from ._common import (
    PathLike,
    as_list,
    check_errors,
    expand,
    load_json,
    outcome,
    read_zip_member,
    runs_table,
)

__all__ = ["is_inspect_log", "read_inspect"]

# A .json log starts with its version, then its status (inspect_ai's EvalLog field order).
_JSON_LOG_START = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')


def is_inspect_log(path: Path) -> bool:
    """Whether a file is an Inspect log, judged by its content (a renamed log still counts)."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                names = set(zf.namelist())
            return "header.json" in names or "_journal/start.json" in names
        with open(path, "rb") as fh:
            return bool(_JSON_LOG_START.match(fh.read(4096)))
    except OSError:
        return False


def _read_log(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, samples) of one Inspect log, from a .eval archive or a .json log."""
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as zf:
                # a re-logged sample repeats its member name: the last member counts, as in Inspect
                members = {info.filename: info for info in zf.infolist()}

                def member(name: str) -> Any:
                    return json.loads(read_zip_member(zf, members[name], path))

                if "header.json" in members:
                    header = member("header.json")
                elif "_journal/start.json" in members:
                    # running, or its process died: the header is written when the eval ends
                    header = {"status": "started", **member("_journal/start.json")}
                else:
                    raise DataError(f"{path} is a zip archive without header.json or "
                                    f"_journal/start.json: not an Inspect .eval log")
                samples = [member(n) for n in members
                           if n.startswith("samples/") and n.endswith(".json")]
        except (zipfile.BadZipFile, json.JSONDecodeError, UnicodeDecodeError, EOFError) as exc:
            raise DataError(f"{path} is a damaged Inspect .eval archive ({exc})") from None
        except OSError as exc:
            raise DataError(f"cannot read {path}: {exc}") from None
    else:
        header = load_json(path, "an Inspect log (.eval archive or .json log)")
        if not isinstance(header, dict):
            header = {}
        samples = header.get("samples") or []
    if not isinstance(header.get("eval"), dict) or "model" not in header["eval"]:
        raise DataError(f"{path} is not an Inspect log: no 'eval' header with a 'model' field")
    return header, samples


def _sample_scores(sample: dict[str, Any], header: dict[str, Any]) -> dict[str, Any]:
    if sample.get("scores"):
        return sample["scores"]
    if sample.get("score") is not None:
        # logs before the scores dict had a single unnamed 'score': name it after the log's scorer
        scores = (header.get("results") or {}).get("scores") or []
        name = scores[0].get("name") if scores else None
        return {name or "score": sample["score"]}
    return {}


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


def _from_samples_df(frame: pd.DataFrame, base: Path | None) -> list[tuple[str, dict, list[dict]]]:
    """Rebuild (source, header, samples) from an ``inspect_ai.analysis.samples_df`` frame."""
    need = [c for c in ("id", "epoch") if c not in frame.columns]
    if need:
        raise DataError(f"the frame has no {need} column(s): expected inspect_ai.analysis.samples_df "
                        f"output (columns id, epoch, score_<scorer>, ...)")
    score_cols = [c for c in frame.columns if str(c).startswith("score_")]
    logs: dict[str, tuple[str, dict, list[dict]]] = {}
    headers: dict[str, dict] = {}
    for row_no, row in enumerate(frame.to_dict("records")):
        log = row.get("log")
        key = str(row.get("eval_id", log))
        if key not in logs:
            header: dict[str, Any] = {"status": "success", "eval": {}}
            if not _missing(log):
                path = Path(str(log))
                if base is not None and not path.is_absolute():
                    path = base / path
                if path.is_file():
                    header = headers.setdefault(str(path), _read_log(path)[0])
            spec = dict(header.get("eval") or {})
            if not _missing(row.get("model")):
                spec["model"] = row["model"]
            if not _missing(row.get("task_name")):
                spec["task"] = row["task_name"]
            if "model" not in spec:
                raise DataError(
                    f"row {row_no} of the samples_df frame has no model: the frame has no 'model' "
                    f"column and its log {log!r} cannot be opened; build the frame with "
                    f"samples_df(logs, columns=SampleSummary + EvalModel + EvalTask)")
            spec.setdefault("task", "task")
            spec.setdefault("task_id", key)
            logs[key] = (str(log) if not _missing(log) else f"samples_df eval {key}",
                         {**header, "eval": spec}, [])
        scores = {}
        for col in score_cols:
            value = row[col]
            if _missing(value):
                continue
            if isinstance(value, str) and value.strip().startswith("{"):
                value = json.loads(value)
            scores[str(col)[len("score_"):]] = {"value": value}
        error = row.get("error")
        sample = {"id": row["id"], "epoch": int(row["epoch"]), "scores": scores}
        if not _missing(error):
            sample["error"] = {"message": str(error)}
        logs[key][2].append(sample)
    return list(logs.values())


def _error_text(sample: dict[str, Any]) -> str | None:
    err = sample.get("error")
    if not err:
        return None
    return str(err.get("message", err) if isinstance(err, dict) else err)


def _status(sample: dict[str, Any], scored: bool) -> str:
    if scored:
        return "ok"
    message = _error_text(sample)
    if message is not None:
        # a sample stopped because the eval was cancelled around it, not by its own failure
        return "cancelled" if message.startswith("CancelledError") else "error"
    return "unscored"


def read_inspect(
    paths: PathLike | Iterable[PathLike] | pd.DataFrame,
    scorer: str | None = None,
    *,
    score_key: str | None = None,
    allow_partial: bool = False,
    runs: str = "epoch",
    errors: str = "drop",
    drop_unscored: bool | None = None,
) -> pd.DataFrame:
    """Read Inspect AI evaluation logs into a runs table.

    Parameters
    ----------
    paths : path, folder, glob pattern, list of them, or DataFrame
        ``.eval`` logs (of any inspect_ai version: deflate or Zstandard members) or ``.json`` logs,
        or folders searched recursively for them (recognised by their content, whatever their
        name), or the frame returned by ``inspect_ai.analysis.samples_df``.
    scorer : str, optional
        The scorer whose value is the outcome; required when the samples carry several scores
        (the error lists them).
    score_key : str, optional
        For a scorer whose value is a dict (``{"correct": 1, "concise": 0}``), the key to use.
    allow_partial : bool
        Keep partial credit (``"P"`` = 0.5, numeric values strictly between 0 and 1) as a fractional
        outcome.  Without it such a value raises a :class:`~evalmix.DataError`.
    runs : {"epoch", "log"}
        ``"epoch"``: the run is the sample's epoch.  ``"log"``: several evaluations of one (model,
        task) are repeated runs; runs are numbered 1, 2, ... over the evaluations (in order of
        creation) and their epochs.  A log and its ``eval-retry`` are one evaluation either way.
    errors : {"drop", "keep", "raise"}
        What to do with samples that have no score (status ``"error"``, ``"cancelled"`` or
        ``"unscored"``): leave them out with a :class:`~evalmix.DataWarning` counting them
        (default), keep them with a ``status`` column and a missing outcome, or raise.
    drop_unscored : bool, optional
        Deprecated spelling of ``errors="drop"`` (True) / ``errors="raise"`` (False).

    Returns
    -------
    pandas.DataFrame
        The :func:`evalmix.read_runs` table with columns ``model`` (the log's ``eval.model``),
        ``item`` (the sample id), ``run``, ``correct`` and, when several tasks are read, ``task``
        (then items are labelled ``"<task>:<id>"``).  Score values map as Inspect maps them:
        ``C`` = 1, ``I`` = 0, ``N`` (no answer) = 0, ``P`` = 0.5, booleans and 0/1 numbers as such.
        With ``errors="keep"``: a plain DataFrame with a ``status`` column
        (``ok``/``error``/``cancelled``/``unscored``) and ``correct`` missing where not ``ok``.

    Raises
    ------
    DataError
        A file that is not an Inspect log or cannot be read, several scorers without ``scorer=``,
        an unknown scorer, a dict score without ``score_key=``, a partial or unrecognised score,
        no scored sample at all, the same (model, task, sample, epoch) in two evaluations that are
        not a log and its retry.  Messages name the file, the sample and the epoch.

    Warns
    -----
    DataWarning
        An unfinished or failed log (only its logged samples are read), samples left out for
        want of a score, a log and its retry merged (saying how many samples were in both).

    Examples
    --------
    >>> import json, tempfile, zipfile, pathlib
    >>> log = pathlib.Path(tempfile.mkdtemp()) / "2024-05-01T10-00-00+00-00_arith_abc.eval"
    >>> with zipfile.ZipFile(log, "w") as zf:
    ...     zf.writestr("header.json", json.dumps({"version": 2, "status": "success",
    ...         "eval": {"task": "arith", "model": "openai/gpt-4o", "config": {"epochs": 2}}}))
    ...     for epoch, value in [(1, "C"), (2, "I")]:
    ...         zf.writestr(f"samples/7_epoch_{epoch}.json", json.dumps(
    ...             {"id": 7, "epoch": epoch, "scores": {"match": {"value": value}}}))
    >>> read_inspect(log)[["model", "item", "run", "correct"]].values.tolist()
    [['openai/gpt-4o', 7, 1, 1], ['openai/gpt-4o', 7, 2, 0]]
    """
    if runs not in ("epoch", "log"):
        raise DataError(f"runs must be 'epoch' or 'log', not {runs!r}")
    if drop_unscored is not None:
        warnings.warn("drop_unscored= is deprecated: use errors='drop' (or errors='raise')",
                      FutureWarning, stacklevel=2)
        errors = "drop" if drop_unscored else "raise"
    check_errors(errors)

    if isinstance(paths, pd.DataFrame):
        logs = _from_samples_df(paths, None)
        what = "the samples_df frame"
    else:
        files = [p for entry in as_list(paths)
                 for p in expand(entry, is_inspect_log, "Inspect .eval/.json log")]
        logs = [(str(path), *_read_log(path)) for path in files]
        what = ", ".join(str(p) for p in files)

    # a log and its eval-retry share eval.task_id: they are one evaluation
    groups: dict[tuple[str, str, str], list[tuple[str, dict, list[dict]]]] = {}
    for source, header, samples in logs:
        spec = header["eval"]
        key = (str(spec["model"]), str(spec.get("task", Path(source).stem)),
               str(spec.get("task_id") or spec.get("eval_id") or source))
        groups.setdefault(key, []).append((source, header, samples))

    names = sorted({name for _, h, ss in logs for s in ss for name in _sample_scores(s, h)})
    if scorer is None:
        if len(names) > 1:
            raise DataError(f"the samples carry several scores {names}: choose one with scorer=")
        scorer = names[0] if names else None
        if scorer is None and errors != "keep":
            n = sum(len(ss) for _, _, ss in logs)
            if n == 0:
                raise DataError(f"no samples in {what} (was the eval run with log_samples=False, or "
                                f"stopped before any sample finished?)")
            raise DataError(f"none of the {n} sample(s) in {what} has a score (the samples ended "
                            f"in errors, or the eval ran with --no-score: score it with "
                            f"'inspect score <log>')")
    elif scorer not in names:
        raise DataError(f"no sample has a score {scorer!r}; scores present: {names}")

    records: list[dict[str, Any]] = []
    offsets: dict[tuple[str, str], int] = {}
    order = sorted(groups.items(), key=lambda kv: (min(str(h["eval"].get("created", ""))
                                                       for _, h, _ in kv[1]), kv[1][0][0]))
    merged: list[str] = []
    for (who, task, _), members in order:
        members.sort(key=lambda lg: (str(lg[1]["eval"].get("created", "")), lg[0]))
        chosen: dict[tuple[Any, int], dict[str, Any]] = {}
        in_several = 0
        for source, header, samples in members:
            for sample in samples:
                sid, epoch = sample.get("id"), int(sample.get("epoch", 1))
                where = f"{source}: sample {sid!r}, epoch {epoch}"
                score = _sample_scores(sample, header).get(scorer) if scorer is not None else None
                value = score.get("value") if isinstance(score, dict) else score
                if isinstance(value, dict):
                    if score_key is None:
                        raise DataError(f"{where}: score {scorer!r} holds several values "
                                        f"{sorted(value)}: choose one with score_key=")
                    if score_key not in value:
                        raise DataError(f"{where}: score {scorer!r} has no key {score_key!r}; its "
                                        f"keys: {sorted(value)}")
                    value = value[score_key]
                scored = score is not None and not _missing(value)
                record = {"model": who, "task": task, "item": sid, "run": epoch,
                          "correct": (outcome(value, allow_partial, f"{where}, scorer {scorer!r}")
                                      if scored else None),
                          "status": _status(sample, scored), "source": source,
                          "detail": _error_text(sample)}
                previous = chosen.get((sid, epoch))
                if previous is not None:
                    in_several += 1
                    if previous["status"] == "ok" and record["status"] != "ok":
                        continue  # a retry never replaces a finished sample by a failed one
                chosen[sid, epoch] = record
        if len(members) > 1:
            merged.append(f"{len(members)} logs of {who} on {task} "
                          f"({', '.join(Path(m[0]).name for m in members)}): {in_several} sample "
                          f"epoch(s) logged more than once, each counted once")
        last = members[-1][1]
        status = last.get("status", "success")
        if status != "success":
            warnings.warn(f"{members[-1][0]} has status {status!r}: reading the samples it logged",
                          DataWarning, stacklevel=2)
        offset = offsets.get((who, task), 0)
        for record in chosen.values():
            if runs == "log":
                record["run"] += offset
            records.append(record)
        if runs == "log" and chosen:
            offsets[who, task] = offset + max(e for _, e in chosen)
    if merged:
        warnings.warn("merged an evaluation and its retry (same task_id): " + "; ".join(merged),
                      DataWarning, stacklevel=2)
    return runs_table(records, errors=errors, allow_partial=allow_partial, what=what,
                      hint="if these logs are repeated runs of one (model, task), pass runs='log' "
                           "to number runs across logs")
