"""Recognise the harness that wrote a log file or folder, and read it with its loader."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import DataError
from ._common import PathLike
from .battles import is_arena_battles, read_arena_battles
from .helm import is_helm_stats, read_helm
from .inspect_logs import is_inspect_log, read_inspect
from .lighteval import is_lighteval_details, read_lighteval
from .lm_eval import SAMPLES_FILE, is_lm_eval_samples, read_lm_eval
from .mt_bench import is_mt_bench_judgment, read_mt_bench
from .mteb import is_mteb_result, read_mteb
from .openai_evals import is_openai_evals_record, read_openai_evals
from .opencompass import is_opencompass_result, read_opencompass
from .swebench import is_swebench_report, read_swebench
from .tau_bench import is_tau_results, read_tau_bench

__all__ = ["FORMATS", "detect_format", "is_log_source", "read_logs"]

# format name -> (loader, what the files look like)
FORMATS: dict[str, tuple[Callable[..., pd.DataFrame], str]] = {
    "inspect": (read_inspect, "Inspect AI .eval/.json logs"),
    "lm-eval": (read_lm_eval, "lm-evaluation-harness samples_<task>_<stamp>.jsonl"),
    "helm": (read_helm, "HELM per_instance_stats.json"),
    "openai-evals": (read_openai_evals, "OpenAI evals record files (oaieval --record_path)"),
    "mt-bench": (read_mt_bench, "FastChat MT-bench judgments *_single.jsonl / *_pair.jsonl"),
    "tau-bench": (read_tau_bench, "tau-bench / tau2-bench results *.json"),
    "swebench": (read_swebench, "SWE-bench run reports <model>.<run_id>.json"),
    "lighteval": (read_lighteval, "lighteval details details_<task>_<date_id>.parquet"),
    "opencompass": (read_opencompass, "OpenCompass results/<model>/<dataset>.json with details"),
    "mteb": (read_mteb, "MTEB results folders results/<model>/<revision>/<TaskName>.json"),
    "arena": (read_arena_battles, "arena battles: FastChat clean_battle JSON, lmarena Parquet/JSON lines "
                                  "(model_a, model_b, winner)"),
}


def _is_lm_eval(path: Path) -> bool:
    if not is_lm_eval_samples(path):
        return False
    if path.suffix == ".gz" or SAMPLES_FILE.match(path.name):
        # the harness's own name (task and time stamp): a damaged file is reported when read
        return True
    try:
        with open(path, encoding="utf-8-sig") as fh:
            first = json.loads(fh.readline() or "{}")
    except (OSError, ValueError):
        return False
    return isinstance(first, dict) and "doc_id" in first


def _format_of(path: Path) -> str | None:
    if is_helm_stats(path):
        return "helm"
    if path.name.startswith("samples_") and ".jsonl" in path.name:
        return "lm-eval" if _is_lm_eval(path) else None
    if path.suffix == ".eval" or (path.suffix == ".json" and is_inspect_log(path)):
        return "inspect"  # every .eval file, so that a damaged archive is reported, not passed over
    if is_mt_bench_judgment(path):
        return "mt-bench"  # before OpenAI evals: both are JSON lines, this one by FastChat's file names
    if is_arena_battles(path):
        return "arena"  # by content: the first record (or the Parquet schema) has model_a and model_b
    if is_openai_evals_record(path):
        return "openai-evals"
    if is_tau_results(path):
        return "tau-bench"
    if is_swebench_report(path):
        return "swebench"
    if is_mteb_result(path):
        return "mteb"
    if is_lighteval_details(path):
        return "lighteval"
    if is_opencompass_result(path):
        return "opencompass"
    return None


def detect_format(path: PathLike) -> str:
    """The harness that wrote a log file, or the only one whose logs a folder holds.

    Returns one of the keys of :data:`FORMATS`; a :class:`~evalmix.DataError` names the path when
    no log, or logs of several harnesses, are found.
    """
    path = Path(path)
    if path.is_file():
        found = _format_of(path)
        if found is None:
            raise DataError(f"{path} is not a log evalmix recognises ({_known()})")
        return found
    if not path.is_dir():
        raise DataError(f"no such file or folder: {path}")
    formats: dict[str, Path] = {}
    for p in sorted(path.rglob("*")):
        if p.is_file() and (fmt := _format_of(p)) is not None:
            formats.setdefault(fmt, p)
    if not formats:
        raise DataError(f"no evaluation logs under {path} ({_known()})")
    if len(formats) > 1:
        listed = "; ".join(f"{fmt} (e.g. {p})" for fmt, p in sorted(formats.items()))
        raise DataError(f"{path} holds logs of several harnesses: {listed}; read each with its own "
                        f"loader (" + ", ".join(f"evalmix.{FORMATS[f][0].__name__}" for f in sorted(formats))
                        + ") and concatenate the tables")
    return next(iter(formats))


def _known() -> str:
    return "known formats: " + ", ".join(what for _, what in FORMATS.values())


def is_log_source(path: PathLike) -> bool:
    """Whether a path should be read as harness logs rather than as a table: a folder, or a log file."""
    path = Path(path)
    return path.is_dir() or (path.is_file() and _format_of(path) is not None)


def read_logs(path: PathLike | pd.DataFrame, **options: Any) -> pd.DataFrame:
    """Read the logs of any supported harness into a runs table, recognising the format.

    Parameters
    ----------
    path : path or DataFrame
        A log file or a folder of logs of one harness: Inspect AI ``.eval``/``.json`` logs,
        lm-evaluation-harness ``--output_path`` folders, HELM run folders, OpenAI evals record
        files, and the other formats of :data:`FORMATS`, among them arena battle files (FastChat's
        ``clean_battle`` JSON, lmarena's tables: battle rows for :func:`evalmix.bradley_terry`,
        not a runs table).  A DataFrame from ``inspect_ai.analysis.samples_df`` is read with
        :func:`read_inspect`; an ``evals_df`` frame, which holds no per-sample outcomes, is an
        error pointing to :func:`evalmix.read_inspect_evals`.
    **options
        Passed to the loader: ``scorer=``/``score_key=`` (Inspect), ``metric=``/``filter_name=``
        (lm-eval, HELM), ``errors=``, ``allow_partial=``, ``model=``, ``runs=``...

    Returns
    -------
    pandas.DataFrame
        What the format's loader returns (:func:`read_inspect`, :func:`read_lm_eval`,
        :func:`read_helm`, :func:`read_openai_evals`); ``df.attrs["evalmix_source"]["format"]``
        names the format.

    Raises
    ------
    DataError
        No log found, logs of several harnesses in one folder, or any error of the loader.

    Warns
    -----
    DataWarning
        The loader's warnings, among them every log file of the folder that cannot be read and is
        left out (named, with the reason).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> out = pathlib.Path(tempfile.mkdtemp()) / "org__tiny-lm"
    >>> out.mkdir()
    >>> lines = [{"doc_id": i, "filter": "none", "metrics": ["acc"], "acc": float(i % 2)}
    ...          for i in range(3)]
    >>> _ = (out / "samples_arc_easy_2024-05-01T10-00-00.000001.jsonl").write_text(
    ...     "".join(json.dumps(x) + "\\n" for x in lines))
    >>> df = read_logs(out.parent, metric="acc")
    >>> df.attrs["evalmix_source"]["format"], df["correct"].tolist()
    ('lm-eval', [0, 1, 0])
    """
    if isinstance(path, pd.DataFrame):
        fmt = "inspect"
    else:
        fmt = detect_format(path)
    df = FORMATS[fmt][0](path, **options)
    df.attrs["evalmix_source"] = {"format": fmt, **df.attrs.get("evalmix_source", {})}
    return df
