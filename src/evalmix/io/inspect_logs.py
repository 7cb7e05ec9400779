"""Inspect AI logs: ``.eval`` archives (deflate or Zstandard members), ``.json`` logs, and the
frames of ``inspect_ai.analysis.samples_df`` (per sample) and ``evals_df`` (per evaluation).

Where inspect_ai is installed, logs are read with ``inspect_ai.log.read_eval_log``: Inspect's
maintainers call the ``.eval`` layout versioned but not frozen, and their reader follows it (and
migrates old logs).  Without inspect_ai, or when its reader fails on a file, evalmix reads the
logs itself with :mod:`zipfile` and :mod:`json` (``reader="evalmix"`` forces it): an ``.eval``
file is a zip archive (``header.json``, or only ``_journal/start.json`` for a log still being
written or whose process died; ``samples/<id>_epoch_<n>.json``), and evalmix needs only the model,
the task and each sample's scores, so inspect_ai is not a dependency.  Both give the same table
(``tests/io/test_io_inspect_readers.py``).  inspect_ai 0.3.2xx compresses the members with
Zstandard (zip method 93), which :mod:`zipfile` decodes only from Python 3.14 on; such members are
decoded with the ``zstandard`` package (see :func:`evalmix.io._common.read_zip_member`).
"""

from __future__ import annotations

import importlib.util
import math
import re
import warnings
import zipfile
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import DataError, DataWarning
from ._common import (
    At,
    PathLike,
    check_errors,
    find_sources,
    load_json,
    outcome,
    parse_json,
    read_each,
    read_zip_member,
    reading,
    runs_table,
)

__all__ = ["READERS", "is_evals_df", "is_inspect_log", "read_inspect", "read_inspect_evals"]

# A .json log starts with its version, then its status (inspect_ai's EvalLog field order).
_JSON_LOG_START = re.compile(rb'^\s*\{\s*"version"\s*:\s*\d+\s*,\s*"status"\s*:')
_BOM = b"\xef\xbb\xbf"
# The JSON kinds of a score's value (inspect_ai.scorer.Value: a scalar, a list or a dict of them).
_VALUES = (str, int, float, bool, list, dict, type(None))


def is_inspect_log(path: Path) -> bool:
    """Whether a file is an Inspect log, judged by its content (a renamed log still counts)."""
    try:
        if zipfile.is_zipfile(path):
            with zipfile.ZipFile(path) as zf:
                names = set(zf.namelist())
            return "header.json" in names or "_journal/start.json" in names
        with open(path, "rb") as fh:
            return bool(_JSON_LOG_START.match(fh.read(4096).removeprefix(_BOM)))
    except (OSError, zipfile.BadZipFile, ValueError):
        return False


def _is_log_file(path: Path) -> bool:
    """Whether a file found in a folder is read as an Inspect log: every ``.eval`` file (a damaged
    one is then reported, not passed over), and any file whose content is an Inspect log."""
    return path.suffix == ".eval" or is_inspect_log(path)


def _is_archive(path: Path) -> bool:
    """Whether to read a log as a zip archive: it starts like one, or it is an ``.eval`` file that
    is not a JSON log (a truncated or damaged archive is then reported as such)."""
    with open(path, "rb") as fh:
        start = fh.read(64)
    if start.startswith(b"PK\x03\x04"):
        return True
    if start.removeprefix(_BOM).lstrip().startswith(b"{"):
        return False
    return path.suffix == ".eval" or zipfile.is_zipfile(path)


def _check_header(header: Any, at: At) -> dict[str, Any]:
    """The log header with the fields evalmix reads checked against Inspect's EvalLog."""
    if not isinstance(header, dict) or not isinstance(header.get("eval"), dict) \
            or "model" not in header["eval"]:
        raise at.error("is not an Inspect log: no 'eval' header with a 'model' field")
    spec = header["eval"]
    where = at.key("eval")
    where.get(spec, "model", str)
    for name in ("task", "task_id", "eval_id", "created"):
        where.get(spec, name, (str, type(None)), default=None)
    at.get(header, "status", str, default="success")
    results = at.get(header, "results", (dict, type(None)), default=None) or {}
    scores = at.key("results").get(results, "scores", (list, type(None)), default=None) or []
    if scores:
        first = at.key("results").key("scores").index(0)
        first.get(first.check(scores[0], dict), "name", (str, type(None)), default=None)
    return header


def _sample(raw: Any, at: At, header: dict[str, Any]) -> dict[str, Any]:
    """One logged sample (Inspect's EvalSample), checked field by field, as
    ``{"id", "epoch", "values": {scorer: value}, "error", "value_at": {scorer: place}}``."""
    sample = at.check(raw, dict)
    sid = at.get(sample, "id", (int, str))
    epoch = at.get(sample, "epoch", int, default=1)
    scores = at.get(sample, "scores", (dict, type(None)), default=None) or {}
    places = {name: at.key("scores").key(name) for name in scores}
    old = None if scores else at.get(sample, "score", (dict, type(None)), default=None)
    if old is not None:
        # logs before the scores dict had a single unnamed 'score': name it after the log's scorer
        listed = (header.get("results") or {}).get("scores") or []
        name = (listed[0].get("name") if listed else None) or "score"
        scores, places = {name: old}, {name: at.key("score")}
    values: dict[str, Any] = {}
    for name, score in scores.items():
        values[name] = places[name].get(places[name].check(score, dict), "value", _VALUES)
    error = at.get(sample, "error", (dict, str, type(None)), default=None)
    if isinstance(error, dict):
        error = at.key("error").get(error, "message", (str, type(None)), default=None) or str(error)
    return {"id": sid, "epoch": epoch, "values": values, "error": error or None,
            "value_at": {name: place.key("value") for name, place in places.items()}}


def _read_log(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, checked samples) of one Inspect log, from a .eval archive or a .json log."""
    if path.stat().st_size == 0:
        raise DataError(f"{path} is empty: not an Inspect log")
    if _is_archive(path):
        with zipfile.ZipFile(path) as zf:
            # a re-logged sample repeats its member name: the last member counts, as in Inspect
            members = {info.filename: info for info in zf.infolist()}

            def member(name: str) -> Any:
                return parse_json(read_zip_member(zf, members[name], path), At(f"{path}, member {name}"))

            if "header.json" in members:
                header = _check_header(member("header.json"), At(f"{path}, member header.json"))
            elif "_journal/start.json" in members:
                # running, or its process died: the header is written when the eval ends
                start = member("_journal/start.json")
                header = _check_header({"status": "started", **start} if isinstance(start, dict)
                                       else start, At(f"{path}, member _journal/start.json"))
            else:
                raise DataError(f"{path} is a zip archive without header.json or "
                                f"_journal/start.json: not an Inspect .eval log")
            samples = [_sample(member(n), At(f"{path}, member {n}"), header) for n in members
                       if n.startswith("samples/") and n.endswith(".json")]
        return header, samples
    at = At(str(path))
    header = _check_header(load_json(path, "an Inspect log (.eval archive or .json log)"), at)
    listed = at.get(header, "samples", (list, type(None)), default=None) or []
    return header, [_sample(s, at.key("samples").index(i), header) for i, s in enumerate(listed)]


#: How logs are read: ``"auto"`` (inspect_ai's reader where installed, evalmix's otherwise or when
#: inspect_ai's fails on a file), ``"inspect_ai"`` (only inspect_ai's), ``"evalmix"`` (only evalmix's).
READERS = ("auto", "inspect_ai", "evalmix")
# the fields of a sample evalmix reads (the rest of an EvalSample, messages and events, is not copied)
_SAMPLE_FIELDS = {"id", "epoch", "scores", "error"}


def _read_log_inspect_ai(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, checked samples) of one log read by ``inspect_ai.log.read_eval_log``, in the form
    of :func:`_read_log`'s (the header is the log without its samples, as ``header.json``)."""
    from inspect_ai.log import read_eval_log

    log = read_eval_log(str(path))
    header = _check_header(log.model_dump(mode="json", exclude={"samples"}), At(str(path)))
    archive = _is_archive(path)

    def place(i: int, sample: Any) -> At:
        # where evalmix's own reader finds the sample, so that errors name the same place
        if archive:
            return At(f"{path}, member samples/{sample.id}_epoch_{sample.epoch}.json")
        return At(str(path)).key("samples").index(i)

    return header, [_sample(s.model_dump(mode="json", include=_SAMPLE_FIELDS), place(i, s), header)
                    for i, s in enumerate(log.samples or [])]


def _read_log_with(reader: str) -> Callable[[Path], tuple[dict[str, Any], list[dict[str, Any]]]]:
    """The function that reads one log for ``reader`` (see :data:`READERS`)."""
    if reader not in READERS:
        raise DataError(f"reader must be one of {', '.join(map(repr, READERS))}, not {reader!r}")
    if reader == "evalmix" or (reader == "auto" and importlib.util.find_spec("inspect_ai") is None):
        return _read_log
    if reader == "inspect_ai":
        return _read_inspect_ai_only
    return _read_log_auto


def _read_inspect_ai_only(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        return _read_log_inspect_ai(path)
    except ImportError as exc:
        raise DataError("reader='inspect_ai' needs inspect_ai: pip install inspect_ai "
                        "(or reader='auto')") from exc
    except DataError:
        raise
    except Exception as exc:  # noqa: BLE001 - inspect_ai's own errors (validation, I/O), in one line
        raise DataError(f"{path}: inspect_ai.log.read_eval_log failed: {type(exc).__name__}: "
                        f"{' '.join(str(exc).split())[:300]}") from exc


def _read_log_auto(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    try:
        return _read_log_inspect_ai(path)
    except Exception:  # noqa: BLE001 - any failure of inspect_ai's reader: evalmix's own reads the
        # file, and its errors name the file and the field at fault
        return _read_log(path)


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value)) or value == ""


# columns every inspect_ai.analysis.evals_df frame has (EvalInfo, EvalModel, EvalResults) and a
# samples_df frame lacks: its rows are evaluations, not samples
_EVALS_DF_COLUMNS = ("eval_id", "task_name", "model", "status", "completed_samples")
_NEEDS_SAMPLES = ("per-sample outcomes (an item and a run per row), which an evals_df frame does not "
                  "hold: it has one row per evaluation with scores already averaged over samples and "
                  "epochs; read the logs themselves, or samples_df(logs), instead")


def is_evals_df(frame: pd.DataFrame) -> bool:
    """Whether a frame is ``inspect_ai.analysis.evals_df`` output (one row per evaluation) rather
    than a per-sample table.

    Examples
    --------
    >>> is_evals_df(pd.DataFrame({"eval_id": ["a"], "task_name": ["arith"], "model": ["m"],
    ...                           "status": ["success"], "completed_samples": [12],
    ...                           "score_match_accuracy": [0.5]}))
    True
    """
    return (all(c in frame.columns for c in _EVALS_DF_COLUMNS) and "id" not in frame.columns
            and "epoch" not in frame.columns)


def read_inspect_evals(frame: pd.DataFrame | PathLike) -> pd.DataFrame:
    """Read an ``inspect_ai.analysis.evals_df`` frame: one row per evaluation, aggregated scores.

    ``evals_df`` keeps what Inspect computed over a whole evaluation: per scorer and metric, the
    value over the samples (each sample's epochs reduced first, by the task's reducer, ``mean`` by
    default) and Inspect's own standard error.  That is all it holds: no sample ids, no per-epoch
    outcomes.  So it can give a table of reported scores per (model, task, evaluation), and nothing
    that needs the runs table (intervals clustered by item, mixed models, run-to-run reliability,
    paired comparisons, rank sets): those need the logs or ``samples_df`` frames
    (:func:`read_inspect`), and :func:`read_inspect` given an ``evals_df`` frame says so.

    Parameters
    ----------
    frame : DataFrame or path
        The frame ``evals_df(logs)`` returned, or a ``.csv``/``.parquet`` file it was saved to.

    Returns
    -------
    pandas.DataFrame
        One row per evaluation, oldest first: ``model``, ``task``, ``evaluation`` (1, 2, ... per
        (model, task), in order of creation; a log and its ``eval-retry`` are one evaluation, read
        from the retry, which holds every sample), ``status``, ``epochs``, ``total_samples``,
        ``completed_samples``, ``eval_id``, ``task_id``, ``log``, then every ``score_*`` column of
        the frame as Inspect named it (``score_<scorer>_<metric>``, ``score_headline_value``...),
        values as floats and missing where the evaluation has no such score.  A plain table, not
        a runs table.

    Raises
    ------
    DataError
        A frame that is not ``evals_df`` output: a ``samples_df`` frame (read it with
        :func:`read_inspect`), or one without Inspect's columns (naming those missing); a
        non-numeric score value (naming the column and row).

    Warns
    -----
    DataWarning
        Evaluations that did not end with status ``success`` (their scores are missing or cover
        the samples that finished), and logs replaced by their retry.

    Examples
    --------
    >>> evals = pd.DataFrame({"eval_id": ["e1", "e2"], "task_id": ["t1", "t2"],
    ...     "log": ["a.eval", "b.eval"], "created": ["2025-01-01T10:00", "2025-01-01T10:05"],
    ...     "task_name": ["arith", "arith"], "model": ["mockllm/a", "mockllm/b"],
    ...     "status": ["success", "success"], "epochs": [3, 3], "total_samples": [12, 12],
    ...     "completed_samples": [12, 12], "score_match_accuracy": [0.75, 0.5],
    ...     "score_match_stderr": [0.1, 0.12]})
    >>> read_inspect_evals(evals)[["model", "task", "evaluation", "score_match_accuracy"]].values.tolist()
    [['mockllm/a', 'arith', 1, 0.75], ['mockllm/b', 'arith', 1, 0.5]]
    """
    from ..data.runs import as_pandas, load_table

    source = "the evals_df frame"
    if isinstance(frame, (str, Path)):
        source = str(frame)
        frame = load_table(frame)
    frame = as_pandas(frame)
    if "id" in frame.columns and "epoch" in frame.columns:
        raise DataError(f"{source} is a samples_df frame (one row per sample and epoch): read it with "
                        "evalmix.read_inspect, which gives the runs table")
    missing = [c for c in _EVALS_DF_COLUMNS if c not in frame.columns]
    if missing:
        raise DataError(f"{source} has no {missing} column(s): expected inspect_ai.analysis.evals_df output "
                        "(columns eval_id, task_name, model, status, completed_samples, score_...)")
    keep = ["eval_id", "task_id", "log", "created", "task_name", "model", "status", "epochs",
            "total_samples", "completed_samples"]
    scores = [str(c) for c in frame.columns if str(c).startswith("score_")]
    out = pd.DataFrame({c: frame[c].astype(object).where(frame[c].notna(), None) if c in frame.columns else None
                        for c in keep})
    for col in scores:
        values = frame[col]
        if col in ("score_headline_name", "score_headline_score", "score_headline_metric"):
            out[col] = values.astype(object).where(values.notna(), None)  # names, not numbers
            continue
        num = pd.to_numeric(values, errors="coerce")
        bad = num.isna() & values.notna()
        if bad.any():
            row = int(bad.to_numpy().nonzero()[0][0])
            raise DataError(f"{source}: column {col!r} holds {values.iloc[row]!r} in row {row}, not a number")
        out[col] = num.astype("float64")
    for name in ("model", "task_name"):
        absent = out[name].isna()
        if absent.any():
            raise DataError(f"{source}: column {name!r} is missing in row {int(absent.to_numpy().nonzero()[0][0])}")
    for col in ("epochs", "total_samples", "completed_samples"):
        out[col] = pd.to_numeric(out[col], errors="coerce").astype("Int64")
    out["created"] = out["created"].map(lambda v: "" if v is None else str(v))
    # a log and its eval-retry share task_id: the retry (created later) holds every finished sample
    out["_key"] = [str(t) if t is not None else f"eval {e}" for t, e in zip(out["task_id"], out["eval_id"])]
    out = out.sort_values(["created", "log"], kind="stable", na_position="first")
    replaced = out[out.duplicated("_key", keep="last")]
    if len(replaced):
        warnings.warn(f"{len(replaced)} log(s) replaced by their eval-retry (same task_id): "
                      + ", ".join(str(v) for v in replaced["log"].fillna(replaced["eval_id"])), DataWarning,
                      stacklevel=2)
    out = out.drop_duplicates("_key", keep="last").reset_index(drop=True)
    unfinished = out[out["status"] != "success"]
    if len(unfinished):
        warnings.warn(f"{len(unfinished)} evaluation(s) did not end with status 'success' (their scores are "
                      "missing or cover the samples that finished): "
                      + ", ".join(f"{lg} ({st})" for lg, st in zip(unfinished["log"].fillna(unfinished["eval_id"]),
                                                                   unfinished["status"])),
                      DataWarning, stacklevel=2)
    out = out.rename(columns={"task_name": "task"})
    out["evaluation"] = out.groupby(["model", "task"], sort=False).cumcount() + 1
    cols = ["model", "task", "evaluation", "status", "epochs", "total_samples", "completed_samples", "eval_id",
            "task_id", "log", *scores]
    return out[cols]


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
                    if str(path) not in headers:
                        with reading(path, "an Inspect log"):
                            headers[str(path)] = _read_log(path)[0]
                    header = headers[str(path)]
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
        at = At(f"the samples_df frame, row {row_no}")
        values = {}
        for col in score_cols:
            value = row[col]
            if _missing(value):
                continue
            if isinstance(value, str) and value.strip().startswith("{"):
                value = parse_json(value, at.key(str(col)))
            values[str(col)[len("score_"):]] = value
        sid, epoch, error = row["id"], row["epoch"], row.get("error")
        if _missing(sid) or isinstance(sid, (list, dict)):
            raise at.key("id").error(f"is {sid!r}: every sample needs an id")
        if isinstance(epoch, float) and epoch.is_integer():
            epoch = int(epoch)
        at.key("epoch").check(epoch, int)
        logs[key][2].append({"id": sid, "epoch": epoch, "values": values,
                             "value_at": {name: at.key(f"score_{name}") for name in values},
                             "error": None if _missing(error) else str(error)})
    return list(logs.values())


def _status(sample: dict[str, Any], scored: bool) -> str:
    if scored:
        return "ok"
    message = sample["error"]
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
    judges: bool | Sequence[str] = False,
    reader: str = "auto",
) -> pd.DataFrame:
    """Read Inspect AI evaluation logs into a runs table.

    Parameters
    ----------
    paths : path, folder, glob pattern, list of them, or DataFrame
        ``.eval`` logs (of any inspect_ai version: deflate or Zstandard members) or ``.json`` logs,
        or folders searched recursively for them (recognised by their content, whatever their
        name), or the frame returned by ``inspect_ai.analysis.samples_df``.  An ``evals_df``
        frame (one row per evaluation) holds no per-sample outcomes and is refused with a
        :class:`~evalmix.DataError` pointing to :func:`read_inspect_evals`.
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
    judges : bool or list of str
        Read every scorer (``True``) or the named scorers as judges of the same samples, e.g.
        two ``model_graded_qa`` scorers with different grader models: one row per sample, epoch
        and scorer, with a ``judge`` column (the scorer's name, ``model_graded_qa``,
        ``model_graded_qa1``...) and a ``grader`` column (the grader model from the log header's
        scorer options, missing where the header does not name one).  The result is a plain long
        table for :func:`evalmix.judge_study` (``judge="judge"``, or ``judge="grader"``) rather
        than a runs table; ``scorer=`` is then not used.
    reader : {"auto", "inspect_ai", "evalmix"}
        How log files are read. ``"auto"``: with ``inspect_ai.log.read_eval_log`` where inspect_ai
        is installed (Inspect's own reader of its versioned layout), and with evalmix's reader where
        it is not or where inspect_ai's fails on a file; ``"inspect_ai"``: only inspect_ai's (an
        error if it is not installed); ``"evalmix"``: only evalmix's, which needs no inspect_ai
        and reads every log version evalmix was tested on. Both readers give the same table.

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
        not a log and its retry.  Messages name the file, the sample and the epoch.  A log named
        in ``paths`` that cannot be read (a truncated or damaged archive, not JSON) or whose
        fields have the wrong kind is an error naming the file and the field's path in it
        (``samples[3].epoch``, ``member samples/7_epoch_1.json: scores.match``).

    Warns
    -----
    DataWarning
        An unfinished or failed log (only its logged samples are read), samples left out for
        want of a score, a log and its retry merged (saying how many samples were in both), logs
        found in a folder that cannot be read (each is named with the reason and left out; the
        others are read).

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
        if is_evals_df(paths):
            raise DataError("the frame is an inspect_ai.analysis.evals_df frame, and a runs table needs "
                            + _NEEDS_SAMPLES + "; evalmix.read_inspect_evals(frame) reads its scores")
        logs = _from_samples_df(paths, None)
        what = "the samples_df frame"
    else:
        sources = find_sources(paths, _is_log_file, "Inspect .eval/.json log")
        read = read_each(sources, _read_log_with(reader), "Inspect logs (.eval archives or .json logs)")
        logs = [(str(src.path), header, samples) for src, (header, samples) in read]
        what = ", ".join(str(src.path) for src, _ in read)

    if judges:
        return _judged(logs, what, judges, score_key=score_key, allow_partial=allow_partial, runs=runs,
                       errors=errors)
    return _runs(logs, what, scorer, score_key=score_key, allow_partial=allow_partial, runs=runs, errors=errors)


def _model_of(options: Any) -> str | None:
    model = options.get("model") if isinstance(options, dict) else None
    if isinstance(model, dict):
        model = model.get("model")
    return model if isinstance(model, str) else None


def _grader(header: dict[str, Any], scorer: str) -> str | None:
    """The grader model a model-graded scorer was given, from the log header, if it names one.

    ``results.scores`` carries each scorer's unique name (a second ``model_graded_qa`` becomes
    ``model_graded_qa1``) with its ``params``; ``eval.scorers`` repeats the undeduplicated name.
    """
    results = header.get("results")
    for entry in (results.get("scores") if isinstance(results, dict) else None) or []:
        if isinstance(entry, dict) and entry.get("name") == scorer:
            found = _model_of(entry.get("params"))
            if found is not None:
                return found
    listed = [e for e in (header["eval"].get("scorers") or []) if isinstance(e, dict) and e.get("name") == scorer]
    return _model_of(listed[0].get("options")) if len(listed) == 1 else None


def _judged(logs: list[tuple[str, dict, list[dict]]], what: str, judges: bool | Sequence[str], *,
            score_key: str | None, allow_partial: bool, runs: str, errors: str) -> pd.DataFrame:
    names = sorted({name for _, _, ss in logs for s in ss for name in s["values"]})
    if isinstance(judges, str) or not isinstance(judges, (bool, Sequence)):
        raise DataError(f"judges= must be True or a list of scorer names, got {judges!r}")
    chosen = names if isinstance(judges, bool) else list(judges)
    unknown = [j for j in chosen if j not in names]
    if unknown:
        raise DataError(f"no sample has a score {unknown[0]!r}; scores present: {names} (reading {what})")
    if len(chosen) < 2:
        raise DataError(f"judges= needs two or more scorers, the samples carry {names} (reading {what}); "
                        "with one scorer read the log without judges=")
    graders: dict[str, set[str]] = {}
    for _, header, _ in logs:
        for name in chosen:
            g = _grader(header, name)
            if g is not None:
                graders.setdefault(name, set()).add(g)
    frames = []
    for name in chosen:
        one = _runs(logs, what, name, score_key=score_key, allow_partial=allow_partial, runs=runs, errors=errors)
        one = pd.DataFrame(one)  # a long table now: the runs table's key is (model, item, run) per judge
        one["judge"] = name
        found = graders.get(name, set())
        one["grader"] = next(iter(found)) if len(found) == 1 else (", ".join(sorted(found)) or None)
        frames.append(one)
    out = pd.concat(frames, ignore_index=True)
    out.attrs = {}
    return out


def _runs(logs: list[tuple[str, dict, list[dict]]], what: str, scorer: str | None, *, score_key: str | None,
          allow_partial: bool, runs: str, errors: str) -> pd.DataFrame:
    # a log and its eval-retry share eval.task_id: they are one evaluation
    groups: dict[tuple[str, str, str], list[tuple[str, dict, list[dict]]]] = {}
    for source, header, samples in logs:
        spec = header["eval"]
        key = (str(spec["model"]), str(spec.get("task") or Path(source).stem),
               str(spec.get("task_id") or spec.get("eval_id") or source))
        groups.setdefault(key, []).append((source, header, samples))

    names = sorted({name for _, _, ss in logs for s in ss for name in s["values"]})
    if scorer is None:
        if len(names) > 1:
            raise DataError(f"the samples carry several scores {names}: choose one with scorer= "
                            f"(reading {what})")
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
        raise DataError(f"no sample has a score {scorer!r}; scores present: {names} (reading {what})")

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
                sid, epoch = sample["id"], sample["epoch"]
                where = f"{source}: sample {sid!r}, epoch {epoch}"
                value = sample["values"].get(scorer) if scorer is not None else None
                at = sample["value_at"].get(scorer)
                if isinstance(value, dict):
                    if score_key is None:
                        raise DataError(f"{where}: score {scorer!r} holds several values "
                                        f"{sorted(value)}: choose one with score_key=")
                    if score_key not in value:
                        raise DataError(f"{where}: score {scorer!r} has no key {score_key!r}; its "
                                        f"keys: {sorted(value)}")
                    value, at = value[score_key], at.key(score_key)
                scored = not _missing(value)
                record = {"model": who, "task": task, "item": sid, "run": epoch,
                          "correct": (outcome(value, allow_partial, f"{where}, scorer {scorer!r}", at)
                                      if scored else None),
                          "status": _status(sample, scored), "source": source,
                          "detail": sample["error"]}
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
