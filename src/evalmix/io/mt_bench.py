"""MT-bench judgment files of FastChat's ``llm_judge`` (``data/mt_bench/model_judgment/*.jsonl``).

FastChat's ``gen_judgment.py`` appends one JSON object per judgment to ``<judge>_single.jsonl``
(single-answer grading, ``play_a_match_single``) or ``<judge>_pair.jsonl`` (pairwise comparison,
``play_a_match_pair``); the layout read here is that of FastChat's ``fastchat/llm_judge/common.py``
at commit 007ecd07da27132136c707eef92bf9841fd167f2:

- single: ``question_id``, ``model``, ``judge`` (``[judge model, prompt name]``, e.g.
  ``["gpt-4", "single-v1"]``), ``user_prompt``, ``judgment``, ``score`` (the 1-10 rating, ``-1``
  when the judge's answer had no parsable rating), ``turn``, ``tstamp``;
- pair: ``question_id``, ``model_1``, ``model_2``, ``g1_winner`` and ``g2_winner`` (game 1 shows
  model 1 first, game 2 swaps the order; each ``model_1``, ``model_2``, ``tie`` or ``error``),
  ``judge``, ``g1_user_prompt``, ``g1_judgment``, ``g2_user_prompt``, ``g2_judgment``, ``turn``
  and ``tstamp`` (a pairwise run with a single-answer prompt writes ``m1_score``/``m2_score`` and
  no ``turn``).
"""

from __future__ import annotations

import math
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Literal

import pandas as pd

from ..core.errors import DataError, DataWarning
from ._common import NUMBER, At, PathLike, find_sources, read_each, read_jsonl

__all__ = ["is_mt_bench_judgment", "read_mt_bench"]

_WHAT = "FastChat MT-bench judgment lines (data/mt_bench/model_judgment/*_single.jsonl or *_pair.jsonl)"
_WINNERS = ("model_1", "model_2", "tie", "error")


def is_mt_bench_judgment(path: Path) -> bool:
    """Whether a file is named as FastChat names judgment files (``*_single.jsonl``, ``*_pair.jsonl``)."""
    return path.is_file() and (path.name.endswith("_single.jsonl") or path.name.endswith("_pair.jsonl"))


def _judge(rec: dict[str, Any], at: At) -> tuple[str, str]:
    value = at.get(rec, "judge", (list, str))
    if isinstance(value, str):
        return value, ""
    if not value or not all(isinstance(v, str) for v in value):
        raise at.key("judge").error(f"is {value!r}, expected [judge model, prompt name]")
    return value[0], (value[1] if len(value) > 1 else "")


def _key(rec: dict[str, Any], at: At, name: str) -> str:
    value = at.get(rec, name, (str, int))
    return str(value)


def _single(path: Path, lines: list[tuple[int, Any]]) -> list[dict[str, Any]]:
    rows = []
    for line_no, rec in lines:
        at = At(f"{path}, line {line_no}")
        at.check(rec, dict)
        if "model_1" in rec:
            raise at.error("is a pairwise judgment (model_1, model_2) in a single-answer file")
        judge, prompt = _judge(rec, at)
        score = at.get(rec, "score", NUMBER)
        if not math.isfinite(score):
            raise at.key("score").error(f"is {score!r}, expected a rating")
        turn = at.get(rec, "turn", int, 1)
        qid = _key(rec, at, "question_id")
        rows.append({"model": at.get(rec, "model", str), "question_id": qid, "turn": turn,
                     "item": f"{qid}:{turn}", "run": 1, "judge": judge, "judge_prompt": prompt,
                     "score": float(score), "source": str(path)})
    return rows


def _pair(path: Path, lines: list[tuple[int, Any]]) -> list[dict[str, Any]]:
    rows = []
    for line_no, rec in lines:
        at = At(f"{path}, line {line_no}")
        at.check(rec, dict)
        judge, prompt = _judge(rec, at)
        qid = _key(rec, at, "question_id")
        turn = at.get(rec, "turn", int, 1)
        winners = []
        for g in ("g1_winner", "g2_winner"):
            w = at.get(rec, g, str)
            if w not in _WINNERS:
                raise at.key(g).error(f"is {w!r}, expected one of {', '.join(_WINNERS)}")
            winners.append(w)
        rows.append({"model_a": at.get(rec, "model_1", str), "model_b": at.get(rec, "model_2", str),
                     "g1": winners[0], "g2": winners[1], "question_id": qid, "turn": turn,
                     "item": f"{qid}:{turn}", "judge": judge, "judge_prompt": prompt, "source": str(path)})
    return rows


def _read(path: Path) -> tuple[str, list[dict[str, Any]]]:
    lines = read_jsonl(path, _WHAT)
    if not lines:
        raise DataError(f"{path} holds no judgment lines; expected {_WHAT}")
    first = lines[0][1]
    kind = "pair" if path.name.endswith("_pair.jsonl") or (isinstance(first, dict) and "model_1" in first) else "single"
    return kind, (_pair if kind == "pair" else _single)(path, lines)


_MAP = {"model_1": "model_a", "model_2": "model_b", "tie": "tie"}


def _battles(rows: list[dict[str, Any]], games: str) -> pd.DataFrame:
    out = []
    errors = 0
    for r in rows:
        base = {k: r[k] for k in ("model_a", "model_b", "judge", "judge_prompt", "question_id", "turn", "item")}
        if games == "both":
            # game 2 shows model_b first: position bias is then a term of the arena model
            for g, first in (("g1", "model_a"), ("g2", "model_b")):
                if r[g] == "error":
                    errors += 1
                    continue
                out.append({**base, "winner": _MAP[r[g]], "game": int(g[1]), "shown_first": first})
        else:
            if "error" in (r["g1"], r["g2"]):
                errors += 1
                continue
            # FastChat's own rule: a win counts when both orders agree; disagreement is a tie
            winner = _MAP[r["g1"]] if r["g1"] == r["g2"] else "tie"
            out.append({**base, "winner": winner, "consistent": r["g1"] == r["g2"]})
    if errors:
        warnings.warn(f"left out {errors} pairwise judgment(s) whose judge gave no verdict (winner 'error')",
                      DataWarning, stacklevel=3)
    return pd.DataFrame(out)


def read_mt_bench(paths: PathLike | list[PathLike], *, threshold: float | None = None,
                  games: Literal["consistent", "both"] = "consistent",
                  kind: Literal["auto", "single", "pair"] = "auto") -> pd.DataFrame:
    """Read FastChat MT-bench judgment files: single-answer ratings or pairwise battles.

    Parameters
    ----------
    paths : path, folder, glob or list of them
        ``*_single.jsonl`` / ``*_pair.jsonl`` files or folders holding them (``model_judgment/``).
    threshold : float, optional
        Single-answer files: add a 0/1 ``correct`` column, ``score >= threshold`` (a verdict for
        :func:`evalmix.judge_study`).
    games : {"consistent", "both"}
        Pairwise files: one battle per judgment, won only when both presentation orders agree and
        a tie otherwise (FastChat's rule; column ``consistent``), or one battle per game (column
        ``game`` 1/2 and ``shown_first``), to model position bias.
    kind : {"auto", "single", "pair"}
        Which files to read; ``auto`` reads what is there but refuses a mix of both kinds.

    Returns
    -------
    pandas.DataFrame
        Single: ``model``, ``item`` (``"<question_id>:<turn>"``: the two turns of an MT-bench
        question are graded separately), ``run`` (1), ``judge`` (the judge model),
        ``judge_prompt``, ``score`` (1-10), ``question_id``, ``turn`` (and ``correct``).  Pairs:
        battle rows ``model_a``, ``model_b``, ``winner`` (``model_a``, ``model_b`` or ``tie``),
        ``judge``, ``judge_prompt``, ``question_id``, ``turn``, ``item``.  Ratings of -1 (no
        parsable rating) and games with winner ``error`` are left out with a DataWarning.

    Raises
    ------
    DataError
        A file that is not JSON lines or lacks a field (named with its file, line and field), or
        a mix of single and pairwise files with ``kind="auto"``.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> d = pathlib.Path(tempfile.mkdtemp())
    >>> recs = [{"question_id": 81, "model": m, "judge": ["gpt-4", "single-v1"], "user_prompt": "...",
    ...          "judgment": "Rating: [[%d]]" % s, "score": s, "turn": 1, "tstamp": 1.0}
    ...         for m, s in [("vicuna-13b", 7), ("llama-13b", 3)]]
    >>> _ = (d / "gpt-4_single.jsonl").write_text("".join(json.dumps(r) + "\\n" for r in recs))
    >>> read_mt_bench(d, threshold=6)[["model", "item", "judge", "score", "correct"]].values.tolist()
    [['vicuna-13b', '81:1', 'gpt-4', 7.0, 1], ['llama-13b', '81:1', 'gpt-4', 3.0, 0]]
    """
    if games not in ("consistent", "both"):
        raise ValueError(f"games must be 'consistent' or 'both', got {games!r}")
    if kind not in ("auto", "single", "pair"):
        raise ValueError(f"kind must be 'auto', 'single' or 'pair', got {kind!r}")
    sources = find_sources(paths, is_mt_bench_judgment, "MT-bench judgment (*_single.jsonl, *_pair.jsonl)")
    if kind != "auto":
        sources = [s for s in sources if not s.found or s.path.name.endswith(f"_{kind}.jsonl")]
    done = read_each(sources, _read, _WHAT)
    kinds = {k for _, (k, _) in done}
    if len(kinds) > 1:
        raise DataError("the paths hold both single-answer (*_single.jsonl) and pairwise (*_pair.jsonl) "
                        "judgments; read them separately with kind='single' or kind='pair'")
    found = kinds.pop()
    if kind != "auto" and found != kind:
        raise DataError(f"asked for kind={kind!r} but the file(s) hold {found} judgments")
    rows = [r for _, (_, rs) in done for r in rs]
    if found == "pair":
        keys = [(r["model_a"], r["model_b"], r["item"], r["judge"], r["judge_prompt"]) for r in rows]
        if len(set(keys)) < len(keys):
            counts = Counter(keys)
            rep = next(k for k in keys if counts[k] > 1)
            raise DataError(f"{len(keys) - len(set(keys))} pairwise judgments repeat a model pair, question, turn "
                            f"and judge (e.g. {rep[0]!r} vs {rep[1]!r} on {rep[2]!r} by {rep[3]!r}): the same "
                            "file read twice, or a judgment file appended to twice")
        return _battles(rows, games)
    df = pd.DataFrame(rows)
    unscored = (df["score"] < 0).to_numpy()
    if unscored.any():
        warnings.warn(f"left out {int(unscored.sum())} single-answer judgment(s) without a parsable rating "
                      "(score -1)", DataWarning, stacklevel=2)
        df = df.loc[~unscored].reset_index(drop=True)
    dup = df.duplicated(["model", "item", "judge", "judge_prompt"], keep=False).to_numpy()
    if dup.any():
        first = df.loc[dup].iloc[0]
        raise DataError(f"{int(dup.sum())} judgments share model, question, turn and judge (e.g. model "
                        f"{first['model']!r}, question {first['question_id']!r}, judge {first['judge']!r} in "
                        f"{first['source']}): the same file read twice, or a judgment file appended to twice")
    if threshold is not None:
        df["correct"] = (df["score"] >= float(threshold)).astype("int64")
    return df.drop(columns=["source"])
