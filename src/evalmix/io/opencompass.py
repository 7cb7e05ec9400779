"""OpenCompass evaluation results with per-sample details (``--dump-eval-details``).

``OpenICLEvalTask`` (opencompass 0.5) saves each model and data set's evaluation to
``<work_dir>/<timestamp>/results/<model abbr>/<dataset abbr>.json``: the aggregate metrics
(``accuracy``, ``accuracy (3 runs average)``...) and, with details dumped, ``details``.  Since 0.4
``BaseEvaluator.evaluate`` scores a data set repeated ``n`` times replica by replica and writes one
entry per example, ``{"example_abbr", <field>: [one value per replica]...}``; older versions wrote
``details`` as an object ``{"0": {"pred", "answer", "correct"}, ...}``.  The per-sample outcome is
the field OpenCompass itself counts: ``correct``, else ``is_correct``, else ``cascade_correct``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pandas as pd

from ._common import file_head, At, PathLike, check_errors, find_sources, load_json, outcome, read_each, runs_table

__all__ = ["is_opencompass_result", "read_opencompass"]

_WHAT = "OpenCompass results (results/<model abbr>/<dataset abbr>.json, with --dump-eval-details)"
_FIELDS = ("correct", "is_correct", "cascade_correct")
_START = re.compile(rb'\s*\{\s*"[^"]*"\s*:\s*(-?[\d.]|NaN|"|\[|\{|true|false|null)')


def is_opencompass_result(path: Path) -> bool:
    """Whether a file sits where OpenCompass writes results (``results/<model>/<dataset>.json``) and
    holds a JSON object."""
    if path.suffix != ".json" or path.parent.parent.name != "results" or path.name.startswith("results_"):
        return False  # results_<stamp>.json: lm-evaluation-harness and lighteval aggregates
    head = file_head(path)
    if head is None:
        return False
    return bool(_START.match(head)) and b'"details"' in head


def _read(path: Path) -> list[dict[str, Any]]:
    at = At(str(path))
    data = at.check(load_json(path, _WHAT), dict)
    if "details" not in data:
        raise at.key("details").error("is missing: run OpenCompass with --dump-eval-details to keep the "
                                      "per-sample outcomes")
    details = at.get(data, "details", (list, dict))
    entries = list(details.items()) if isinstance(details, dict) else list(enumerate(details))
    rows = []
    for key, entry in entries:
        here = at.key("details").key(str(key)) if isinstance(details, dict) else at.key("details").index(key)
        if isinstance(details, dict) and key == "type":
            continue  # format_details' marker ("GEN" / "PPL"), not a sample
        here.check(entry, dict)
        field = next((f for f in _FIELDS if f in entry), None)
        if field is None:
            raise here.error(f"has no per-sample outcome ({', '.join(_FIELDS)}); fields: "
                             f"{', '.join(map(str, entry))}")
        item = here.get(entry, "example_abbr", (str, int), key)
        values = entry[field]
        values = values if isinstance(values, list) else [values]
        for replica, value in enumerate(values):
            place = here.key(field).index(replica) if isinstance(entry[field], list) else here.key(field)
            rows.append({"model": path.parent.name, "task": path.stem, "item": item, "replica": replica,
                         "workdir": path.parent.parent.parent.name, "value": value, "at": place,
                         "source": str(path)})
    if not rows:
        raise at.key("details").error("is empty")
    return rows


def read_opencompass(paths: PathLike | Iterable[PathLike], *, model: str | dict[str, str] | None = None,
                     errors: str = "drop", allow_partial: bool = False) -> pd.DataFrame:
    """Read OpenCompass results with per-sample details: one row per model, data set, example, replica.

    Parameters
    ----------
    paths : path, folder, glob or list of them
        An OpenCompass work dir (``outputs/default``: every timestamped run in it), a ``results/``
        folder, or result files.
    model : str or dict, optional
        Model labels: a string labels every file; a dict renames models.  By default the model's
        abbreviation (the folder under ``results/``).
    errors : {"drop", "keep", "raise"}
        Samples whose outcome is null: left out with a DataWarning counting them, kept with a
        ``status`` column, or an error.
    allow_partial : bool
        Keep outcomes strictly between 0 and 1 as fractional outcomes.

    Returns
    -------
    pandas.DataFrame
        The :func:`evalmix.read_runs` table ``model``, ``item`` (``example_abbr``, else the
        sample's key), ``run`` (the replica of a data set repeated ``n`` times, from 0; with
        several timestamped runs, ``"<timestamp>#<replica>"``), ``correct`` and, when several data
        sets are read, ``task`` (the dataset abbreviation).

    Raises
    ------
    DataError
        A results file without ``details`` (the fix is named), a detail without an outcome field,
        a field of the wrong kind (named with the file and its path, ``details[3].correct[1]``).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp()) / "20250101_120000" / "results" / "tiny_hf"
    >>> d.mkdir(parents=True)
    >>> result = {"accuracy (2 runs average)": 50.0,
    ...           "details": [{"example_abbr": "mcq_0", "pred": ["A", "B"], "correct": [True, False]}]}
    >>> _ = (d / "mcq.json").write_text(json.dumps(result))
    >>> read_opencompass(d.parent)[["model", "item", "run", "correct"]].values.tolist()
    [['tiny_hf', 'mcq_0', 0, 1], ['tiny_hf', 'mcq_0', 1, 0]]
    """
    check_errors(errors)
    sources = find_sources(paths, is_opencompass_result, "OpenCompass results (results/<model>/<dataset>.json)")
    rows = [r for _, rs in read_each(sources, _read, _WHAT) for r in rs]
    several = len({r["workdir"] for r in rows}) > 1
    fractional = False
    for r in rows:
        r["run"] = f"{r['workdir']}#{r['replica']}" if several else r["replica"]
        if isinstance(model, str):
            r["model"] = model
        elif isinstance(model, dict):
            r["model"] = model.get(r["model"], r["model"])
        if r["value"] is None:
            r["correct"], r["status"], r["detail"] = None, "unscored", "the outcome is null"
        else:
            r["correct"] = outcome(r["value"], allow_partial, f"{r['task']}, example {r['item']!r}", r["at"])
            r["status"] = "ok"
            fractional |= r["correct"] not in (0, 1)
    df = runs_table(rows, errors=errors, allow_partial=allow_partial, what="OpenCompass results",
                    hint="the same results file read twice")
    df.attrs["evalmix_source"] = {"format": "opencompass", "outcome_kind": "fraction" if fractional else "binary"}
    return df
