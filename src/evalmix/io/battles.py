"""Arena battle files: FastChat's ``clean_battle`` JSON and lmarena's human-preference tables.

Two layouts hold one pairwise battle per record, with the model shown first (``model_a``), the model
shown second (``model_b``) and the outcome (``winner``):

- FastChat's ``fastchat/serve/monitor/clean_battle_data.py`` writes ``clean_battle_<date>.json``
  (``json.dump`` of a list of records): ``model_a``, ``model_b``, ``winner`` (``"model_a"``,
  ``"model_b"``, ``"tie"``, ``"tie (bothbad)"``), ``judge`` (``"arena_user_<id>"``), ``turn``,
  ``anony``, ``language``, ``tstamp``; its ``conv_release`` mode keeps ``question_id`` and the
  two conversations too.
- lmarena's human-preference data sets (``arena-human-preference-*``, ``arena-expert-*``) are
  Parquet or JSON-lines tables with ``id``, ``model_a``, ``model_b``, ``winner`` (``"model_a"``,
  ``"model_b"``, ``"tie"``, and ``"both_bad"`` or ``"tie (bothbad)"``), ``evaluation_order``,
  the conversations, ``language`` and ``timestamp``.

Files are recognised by their content (the first record, or the Parquet schema, has ``model_a``
and ``model_b``), whatever their name.  The outcome spellings are those of
:data:`evalmix.studies.arena.WINNERS`; the rating itself is :func:`evalmix.bradley_terry`'s.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pandas as pd

from ..core.errors import DataError
from ._common import At, PathLike, find_sources, load_json, read_each, read_jsonl

__all__ = ["is_arena_battles", "read_arena_battles"]

_WHAT = ("arena battles (FastChat clean_battle JSON, or a JSON-lines or Parquet table with model_a, model_b "
         "and winner)")
# the scalar fields of either layout kept beside the battle (the conversations are left out)
_EXTRA = ("question_id", "id", "judge", "turn", "anony", "language", "tstamp", "timestamp", "evaluation_order")
_HEAD = 65536
# both keys within one record (no closing brace between them)
_KEY = re.compile(rb'"model_a"\s*:[^}]*?"model_b"\s*:|"model_b"\s*:[^}]*?"model_a"\s*:')
_JSON_LINES = (".jsonl", ".ndjson")


def is_arena_battles(path: Path) -> bool:
    """Whether a file holds arena battles, judged by its content: a JSON array or JSON-lines file
    whose first record has ``model_a`` and ``model_b``, or a Parquet file with those columns."""
    try:
        if not path.is_file():
            return False
        if path.suffix == ".parquet":
            try:
                import pyarrow.parquet as pq
            except ImportError:
                return False
            names = set(pq.read_schema(path).names)
            return {"model_a", "model_b"} <= names
        if path.suffix not in (".json", *_JSON_LINES):
            return False
        with open(path, "rb") as fh:
            head = fh.read(_HEAD).removeprefix(b"\xef\xbb\xbf").lstrip()
        if path.suffix == ".json":
            return head.startswith(b"[") and bool(_KEY.search(head))
        line = head.split(b"\n", 1)[0]
        if not line.startswith(b"{"):
            return False
        try:
            record = json.loads(line)
        except ValueError:
            # a first record longer than the head (lmarena's lines carry whole conversations)
            return len(line) == len(head) and bool(_KEY.search(line))
        return isinstance(record, dict) and "model_a" in record and "model_b" in record
    except (OSError, ValueError):
        return False


def _records(path: Path) -> tuple[list[tuple[At, dict[str, Any]]], str]:
    """(place, record) of every battle of a JSON array or JSON-lines file, each checked to be an
    object with ``model_a``, ``model_b`` (strings) and ``winner`` (a string)."""
    if path.suffix in _JSON_LINES:
        places = [(At(f"{path}, line {n}"), rec) for n, rec in read_jsonl(path, _WHAT)]
        layout = "JSON lines"
    else:
        data = load_json(path, _WHAT)
        at = At(str(path))
        at.check(data, list)
        places = [(at.index(i), rec) for i, rec in enumerate(data)]
        layout = "JSON array"
    out = []
    for at, rec in places:
        at.check(rec, dict)
        for field in ("model_a", "model_b", "winner"):
            at.get(rec, field, str)
        out.append((at, rec))
    return out, layout


def _check(path: Path, frame: pd.DataFrame, places: list[At] | None) -> pd.DataFrame:
    """The battles of one file with the winner spelled as :data:`evalmix.studies.arena.WINNERS` reads it;
    an unknown winner, a blank model or a model battling itself is an error naming the record."""
    from ..studies.arena import WINNERS  # imported when battles are read, not when logs are recognised

    def place(i: int, field: str | None = None) -> str:
        if places is not None:
            return str(places[i].key(field) if field else places[i])
        return f"{path}: row {i}" + (f", column {field!r}" if field else "")

    for field in ("model_a", "model_b", "winner"):
        if field not in frame.columns:
            raise DataError(f"{path}: no column {field!r}; a battle table has model_a, model_b and winner "
                            f"(columns: {', '.join(map(str, list(frame.columns)[:20]))})")
        values = frame[field]
        bad = [i for i, v in enumerate(values.tolist()) if not isinstance(v, str) or not v.strip()]
        if bad:
            value = values.iloc[bad[0]]
            shown = "missing" if value is None or value != value or isinstance(value, str) else f"{value!r}, not text"
            raise DataError(f"{place(bad[0], field)} is {shown}: every battle needs a {field}")
    text = frame["winner"].str.strip().str.lower()
    known = text.isin(list(WINNERS))
    if not known.all():
        i = int((~known).to_numpy().nonzero()[0][0])
        raise DataError(f"{place(i, 'winner')} is {frame['winner'].iloc[i]!r}, expected one of "
                        + ", ".join(repr(w) for w in WINNERS))
    a, b = frame["model_a"].str.strip(), frame["model_b"].str.strip()
    same = (a == b).to_numpy()
    if same.any():
        i = int(same.nonzero()[0][0])
        raise DataError(f"{place(i)}: model_a and model_b are both {a.iloc[i]!r}: a model cannot battle itself")
    out = pd.DataFrame({"model_a": a, "model_b": b, "winner": text.map(WINNERS)})
    for field in _EXTRA:
        if field in frame.columns:
            out[field] = frame[field].to_numpy()
    out["source"] = str(path)
    return out


def _read(path: Path) -> pd.DataFrame:
    if path.suffix == ".parquet":
        from ..data.runs import load_table

        frame = load_table(path)
        return _check(path, frame.reset_index(drop=True), None)
    records, _ = _records(path)
    if not records:
        raise DataError(f"{path} holds no battles; expected {_WHAT}")
    frame = pd.DataFrame([{k: v for k, v in rec.items() if k in ("model_a", "model_b", "winner", *_EXTRA)}
                          for _, rec in records])
    for field in _EXTRA:
        if field in frame.columns:
            kinds = {type(v) for v in frame[field].tolist() if v is not None}
            if kinds & {dict, list}:
                at = records[next(i for i, v in enumerate(frame[field].tolist())
                                  if isinstance(v, (dict, list)))][0]
                raise at.key(field).error("is an object or array, expected a single value")
    return _check(path, frame, [at for at, _ in records])


def _check_repeats(battles: pd.DataFrame) -> None:
    """The same battle (models, outcome and time stamp) in two files is one vote counted twice:
    FastChat's ``simple`` and ``conv_release`` files of one cut, or a file and its copy."""
    stamp = next((c for c in ("tstamp", "timestamp") if c in battles.columns), None)
    if stamp is None or battles["source"].nunique() < 2:
        return
    key = battles[["model_a", "model_b", "winner"]].assign(_stamp=battles[stamp].astype(str))
    repeated = key.duplicated(keep=False).to_numpy()
    if not repeated.any():
        return
    rows = battles.loc[repeated, ["model_a", "model_b", "source", stamp]].assign(
        _key=pd.util.hash_pandas_object(key.loc[repeated], index=False).to_numpy())
    files = rows.groupby("_key")["source"].nunique()
    across = files[files > 1]
    if len(across):
        example = rows[rows["_key"] == across.index[0]]
        first = example.iloc[0]
        raise DataError(f"{len(across)} battle(s) appear in more than one file (e.g. {first['model_a']!r} vs "
                        f"{first['model_b']!r} at {stamp} {first[stamp]} in "
                        f"{' and '.join(example['source'].unique()[:2])}): the same votes read twice; read one "
                        "of the files")


def read_arena_battles(paths: PathLike | list[PathLike]) -> pd.DataFrame:
    """Read arena battle files: FastChat's ``clean_battle`` JSON, lmarena's Parquet or JSON-lines
    human-preference tables.

    Parameters
    ----------
    paths : path, folder, glob pattern or list of them
        Battle files, or folders searched for them (recognised by their content: a JSON array or
        JSON-lines records, or a Parquet table, with ``model_a`` and ``model_b``).

    Returns
    -------
    pandas.DataFrame
        One row per battle, in file order: ``model_a`` (shown first), ``model_b``, ``winner``
        (``"model_a"``, ``"model_b"`` or ``"tie"``: FastChat's ``"tie (bothbad)"`` and lmarena's
        ``"both_bad"`` are ties, as FastChat's ratings count them), whichever of ``question_id``,
        ``id``, ``judge``, ``turn``, ``anony``, ``language``, ``tstamp``, ``timestamp`` and
        ``evaluation_order`` the file has (the conversations are left out), and ``source`` (the
        file).  Every battle is kept: filter on ``anony`` or ``language`` before rating to
        reproduce a published leaderboard.  The table goes to :func:`evalmix.bradley_terry`
        (``cluster="question_id"`` clusters the battles of one conversation).

    Raises
    ------
    DataError
        Naming the file and the record (``battles.json: [3].winner``, ``votes.jsonl, line 4:
        winner``) or the row and column (Parquet): a missing ``model_a``, ``model_b`` or
        ``winner``, a winner that is none of :data:`evalmix.studies.arena.WINNERS`, a model battling
        itself, a file that is not JSON or Parquet; the same battle (models, winner, time stamp) in
        two files (FastChat's ``simple`` and ``conv_release`` files of one cut read together).

    Warns
    -----
    DataWarning
        Battle files found in a folder that cannot be read (each named, with the reason; the
        others are read).

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> f = pathlib.Path(tempfile.mkdtemp()) / "clean_battle_20240101.json"
    >>> _ = f.write_text(json.dumps([
    ...     {"model_a": "vicuna-13b", "model_b": "alpaca-13b", "winner": "model_a", "judge": "arena_user_1",
    ...      "turn": 1, "anony": True, "language": "English", "tstamp": 1700000000.0},
    ...     {"model_a": "alpaca-13b", "model_b": "vicuna-13b", "winner": "tie (bothbad)", "judge": "arena_user_2",
    ...      "turn": 1, "anony": True, "language": "English", "tstamp": 1700000060.0}]))
    >>> read_arena_battles(f)[["model_a", "model_b", "winner"]].values.tolist()
    [['vicuna-13b', 'alpaca-13b', 'model_a'], ['alpaca-13b', 'vicuna-13b', 'tie']]
    """
    sources = find_sources(paths, is_arena_battles, "arena battle (.json, .jsonl, .parquet)")
    done = read_each(sources, _read, _WHAT)
    out = pd.concat([frame for _, frame in done], ignore_index=True)
    _check_repeats(out)
    out.attrs["evalmix_source"] = {"format": "arena", "files": [str(src.path) for src, _ in done]}
    return out
