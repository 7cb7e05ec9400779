"""Loaders for the per-sample logs of evaluation harnesses.

:func:`read_lm_eval` reads the ``samples_<task>_<timestamp>.jsonl`` files that lm-evaluation-harness
writes with ``--log_samples``; :func:`read_inspect` reads Inspect AI logs (``.eval`` archives and
the older single-file ``.json`` logs).  Both return the validated runs table of
:func:`evalmix.read_runs`, with the columns ``model``, ``item``, ``run``, ``correct`` and, when
several tasks are read together, ``task`` (a slice).

Items of different tasks are different questions even when their ids coincide (``doc_id`` 0 of
one task is not ``doc_id`` 0 of another), so when several tasks are read the item labels become
``"<task>:<id>"``: each item is then nested in its task, as a crossed ``(1 | item)`` term requires.

Inspect logs are read with :mod:`zipfile` and :mod:`json` from the standard library rather than
with ``inspect_ai.log.read_eval_log``.  An ``.eval`` file is a zip archive whose layout is stable
and simple (``header.json``, or ``_journal/start.json`` for a log still being written;
``samples/<id>_epoch_<n>.json``; ``reductions.json``; ``summaries.json``), and evalmix needs only
the model, the task and each sample's scores.  Depending on inspect_ai would pull in its whole
runtime (model providers, pydantic models of every event type) to read a few fields, and would tie
evalmix to inspect_ai's release cycle; reading the files directly keeps the loader dependency-free
and lets it read logs written by any inspect_ai version, including the legacy ``score`` field.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
import warnings
import zipfile
from collections.abc import Callable, Hashable, Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from .data import read_runs
from .errors import DataError, DataWarning

__all__ = ["read_inspect", "read_lm_eval"]

PathLike = str | os.PathLike[str]

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
# Inspect names its log files <timestamp>_<task>_<id>.(eval|json).
_INSPECT_LOG_NAME = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}[:-]\d{2}[:-]\d{2}.*\.(eval|json)$")
# Inspect's score letters (inspect_ai.scorer: CORRECT, INCORRECT, PARTIAL, NOANSWER) and the
# boolean words its value_to_float accepts.
_SCORE_WORDS = {"C": 1, "I": 0, "P": 0.5, "N": 0, "yes": 1, "true": 1, "no": 0, "false": 0}
_COLUMNS = ["model", "task", "item", "run", "correct"]


# --------------------------------------------------------------------------------------- shared


def _as_list(paths: PathLike | Iterable[PathLike]) -> list[PathLike]:
    if isinstance(paths, (str, os.PathLike)):
        return [paths]
    out = list(paths)
    if not out:
        raise DataError("no paths given")
    return out


def _expand(entry: PathLike, wanted: Callable[[Path], bool], what: str) -> list[Path]:
    """Files named by one path entry: the file itself, the matching files under a folder, or a glob."""
    path = Path(entry)
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and wanted(p))
        if not found:
            raise DataError(f"no {what} files under {path}")
        return found
    if path.is_file():
        return [path]
    if any(ch in str(entry) for ch in "*?["):
        anchor = Path(path.anchor) if path.is_absolute() else Path()
        found = sorted(p for p in anchor.glob(str(path.relative_to(anchor))) if p.is_file())
        if not found:
            raise DataError(f"no files match {str(entry)!r}")
        return found
    raise DataError(f"no such file or folder: {path}")


def _outcome(value: Any, allow_partial: bool, where: str) -> int | float:
    """One logged score as 0/1 (or a fraction in [0, 1] where partial credit is allowed)."""
    if isinstance(value, str):
        text = value.strip()
        word = _SCORE_WORDS.get(text, _SCORE_WORDS.get(text.lower()))
        if word is None:
            try:
                word = float(text)
            except ValueError:
                raise DataError(f"{where}: score {value!r} is not a recognised value (C, I, P, N, "
                                f"yes/no, true/false or a number in [0, 1])") from None
        value = word
    if isinstance(value, bool):
        return int(value)
    if not isinstance(value, (int, float)) or value is None:
        kind = type(value).__name__ if value is not None else "missing (null)"
        raise DataError(f"{where}: score is {kind} ({value!r}), not a number: evalmix needs one "
                        f"0/1 value per sample")
    if math.isnan(value) or not 0 <= value <= 1:
        raise DataError(f"{where}: score {value!r} is not a number in [0, 1]")
    if value in (0, 1):
        return int(value)
    if not allow_partial:
        raise DataError(f"{where}: score {value!r} is partial credit, but the outcome must be 0/1; "
                        f"pass allow_partial=True to keep fractional outcomes (binomial models then "
                        f"do not apply)")
    return float(value)


def _runs_table(rows: list[dict[str, Any]], sources: list[str], allow_partial: bool,
                hint: str) -> pd.DataFrame:
    """Assemble the loaded rows, check keys across files, and validate through read_runs."""
    df = pd.DataFrame(rows, columns=_COLUMNS)
    key = ["model", "task", "item", "run"]
    dup = df.duplicated(subset=key, keep=False)
    if dup.any():
        first = df.loc[dup].iloc[0]
        same = dup & (df[key] == first[key]).all(axis=1)
        files = sorted({sources[i] for i in df.index[same]})
        raise DataError(
            f"model {first['model']!r}, task {first['task']!r}, item {first['item']!r}, run "
            f"{first['run']!r} appears {int(same.sum())} times, in: {', '.join(files)}; {hint}")
    if df["task"].nunique() > 1:
        # ids restart in every task: qualify them so items of different tasks stay distinct
        df["item"] = df["task"].astype(str) + ":" + df["item"].astype(str)
    else:
        df = df.drop(columns="task")
    return read_runs(df, item="item", model="model", run="run", outcome="correct",
                     allow_fractional=allow_partial)


def _load_json(path: Path, what: str) -> Any:
    try:
        with open(path, encoding="utf-8") as fh:
            return json.load(fh)
    except json.JSONDecodeError as exc:
        raise DataError(f"{path} is not valid JSON ({exc}); expected {what}") from None


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
            results = _load_json(candidate, "an lm-evaluation-harness results file")
            if isinstance(results, dict) and (name := _model_from_results(results)):
                return name
    names = set()
    for candidate in folder.glob("results_*.json"):
        results = _load_json(candidate, "an lm-evaluation-harness results file")
        if isinstance(results, dict) and (name := _model_from_results(results)):
            names.add(name)
    if len(names) == 1:
        return names.pop()
    # <output_path>/<model_name_sanitized>/samples_*.jsonl
    return folder.name


def _read_jsonl(path: Path) -> list[dict[str, Any]]:
    opener = gzip.open if path.suffix == ".gz" else open
    records = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for line_no, line in enumerate(fh, start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as exc:
                raise DataError(f"{path}, line {line_no}: not valid JSON ({exc})") from None
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
    entries = _as_list(paths)
    if runs is not None and not callable(runs):
        runs = list(runs)
        if len(runs) != len(entries):
            raise DataError(f"runs= gives {len(runs)} labels for {len(entries)} paths: give one per "
                            f"path (or a function of the file path)")

    def is_samples(p: Path) -> bool:
        return p.name.startswith("samples_") and (p.name.endswith(".jsonl") or p.name.endswith(".jsonl.gz"))

    files: list[tuple[Path, Hashable | None]] = []
    for i, entry in enumerate(entries):
        for path in _expand(entry, is_samples, "lm-evaluation-harness samples_*.jsonl"):
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
    sources: list[str] = []
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
                         "correct": _outcome(record[metric], allow_partial, where)})
            sources.append(str(path))
    return _runs_table(rows, sources, allow_partial, hint="files of one (model, task) must be "
                       "different runs: give their run labels with runs=")


# ------------------------------------------------------------------------------------- Inspect AI


def _read_inspect_log(path: Path) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """(header, samples) of one Inspect log, from a .eval archive or a legacy .json log."""
    if zipfile.is_zipfile(path):
        try:
            with zipfile.ZipFile(path) as zf:
                names = list(dict.fromkeys(zf.namelist()))  # a re-logged sample repeats its name
                if "header.json" in names:
                    header = json.loads(zf.read("header.json"))
                elif "_journal/start.json" in names:
                    # still running or interrupted: the header is only written when the eval ends
                    header = {"status": "started", **json.loads(zf.read("_journal/start.json"))}
                else:
                    raise DataError(f"{path} is a zip archive without header.json or "
                                    f"_journal/start.json: not an Inspect .eval log")
                # ZipFile.read(name) resolves to the last member of that name, as Inspect does
                samples = [json.loads(zf.read(n)) for n in names
                           if n.startswith("samples/") and n.endswith(".json")]
        except (zipfile.BadZipFile, json.JSONDecodeError) as exc:
            raise DataError(f"{path} is a damaged Inspect .eval archive ({exc})") from None
    else:
        header = _load_json(path, "an Inspect log (.eval archive or .json log)")
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


def read_inspect(
    paths: PathLike | Iterable[PathLike],
    scorer: str | None = None,
    *,
    allow_partial: bool = False,
    runs: str = "epoch",
    drop_unscored: bool = False,
) -> pd.DataFrame:
    """Read Inspect AI evaluation logs into a runs table.

    Parameters
    ----------
    paths : path, folder, glob pattern, or a list of them
        ``.eval`` logs (or legacy ``.json`` logs), or folders searched recursively for them.
    scorer : str, optional
        The scorer whose value is the outcome; required when the samples carry several scores
        (the error lists them).
    allow_partial : bool
        Keep partial credit (``"P"`` = 0.5, numeric values strictly between 0 and 1) as a fractional
        outcome.  Without it such a value raises a :class:`~evalmix.DataError`.
    runs : {"epoch", "log"}
        ``"epoch"``: the run is the sample's epoch.  ``"log"``: several logs of one (model, task) are
        repeated runs of it; runs are numbered 1, 2, ... over the logs (ordered by creation time)
        and their epochs.
    drop_unscored : bool
        Drop samples without the chosen score (for instance samples that ended in an error), with a
        :class:`~evalmix.DataWarning` saying how many; by default they raise an error.

    Returns
    -------
    pandas.DataFrame
        The :func:`evalmix.read_runs` table with columns ``model`` (the log's ``eval.model``),
        ``item`` (the sample id), ``run``, ``correct`` and, when several tasks are read, ``task``
        (then items are labelled ``"<task>:<id>"``).  Score values map as Inspect maps them:
        ``C`` = 1, ``I`` = 0, ``N`` (no answer) = 0, ``P`` = 0.5, booleans and 0/1 numbers as such.

    Raises
    ------
    DataError
        A file that is not an Inspect log, several scorers without ``scorer=``, an unknown scorer,
        a partial or unrecognised score value, an unscored sample, the same (model, task, sample,
        epoch) in two logs.  Messages name the file, the sample and the epoch.

    Warns
    -----
    DataWarning
        A log whose status is not ``"success"`` (only its logged samples are read).

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

    def is_log(p: Path) -> bool:
        return p.suffix == ".eval" or bool(_INSPECT_LOG_NAME.match(p.name))

    files = [p for entry in _as_list(paths) for p in _expand(entry, is_log, "Inspect .eval/.json log")]
    logs = []
    for path in files:
        header, samples = _read_inspect_log(path)
        status = header.get("status", "success")
        if status != "success":
            warnings.warn(f"{path} has status {status!r}: reading the {len(samples)} sample(s) it "
                          f"logged", DataWarning, stacklevel=2)
        if not samples:
            raise DataError(f"{path} holds no samples (was the eval run with log_samples=False?)")
        logs.append((path, header, samples))

    names = sorted({name for _, h, ss in logs for s in ss for name in _sample_scores(s, h)})
    if scorer is None:
        if len(names) > 1:
            raise DataError(f"the samples carry several scores {names}: choose one with scorer=")
        scorer = names[0] if names else None
    elif scorer not in names:
        raise DataError(f"no sample has a score {scorer!r}; scores present: {names}")

    offsets: dict[tuple[str, str], int] = {}
    if runs == "log":
        logs.sort(key=lambda lg: (str(lg[1]["eval"].get("created", "")), str(lg[0])))
    rows: list[dict[str, Any]] = []
    sources: list[str] = []
    dropped: list[str] = []
    for path, header, samples in logs:
        who, task = str(header["eval"]["model"]), str(header["eval"].get("task", path.stem))
        offset = offsets.get((who, task), 0)
        for sample in samples:
            sid, epoch = sample.get("id"), sample.get("epoch", 1)
            where = f"{path}: sample {sid!r}, epoch {epoch}"
            score = _sample_scores(sample, header).get(scorer)
            if score is None:
                if not drop_unscored:
                    err = sample.get("error") or {}
                    why = f" (the sample ended in an error: {err.get('message', err)})" if err else ""
                    raise DataError(f"{where}: no {scorer!r} score{why}; pass drop_unscored=True to "
                                    f"drop unscored samples")
                dropped.append(where)
                continue
            value = score.get("value") if isinstance(score, dict) else score
            if isinstance(value, dict):
                raise DataError(f"{where}: score {scorer!r} holds several values {sorted(value)}; "
                                f"evalmix needs one 0/1 value per sample")
            rows.append({"model": who, "task": task, "item": sid, "run": offset + int(epoch),
                         "correct": _outcome(value, allow_partial, f"{where}, scorer {scorer!r}")})
            sources.append(str(path))
        if runs == "log":
            offsets[who, task] = offset + max(int(s.get("epoch", 1)) for s in samples)
    if dropped:
        warnings.warn(f"dropped {len(dropped)} sample(s) without a {scorer!r} score, e.g. {dropped[0]}",
                      DataWarning, stacklevel=2)
    if not rows:
        raise DataError(f"no scored samples in {', '.join(map(str, files))}")
    return _runs_table(rows, sources, allow_partial, hint="if these logs are repeated runs of one "
                       "(model, task), pass runs='log' to number runs across logs; if one is a "
                       "retry of the other, read only the retry")
