"""What every log loader shares: path expansion, score values, sample status, the final runs table.

Every loader builds one record per logged sample with the keys of :data:`COLUMNS` plus ``status``
and ``source`` (the file it came from), then hands them to :func:`runs_table`, which applies the
caller's ``errors=`` policy and validates the scored rows through :func:`evalmix.read_runs`.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import reprlib
import struct
import warnings
import zipfile
import zlib
from collections import Counter
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from ..data.runs import read_runs
from ..core.errors import DataError, DataWarning

__all__ = [
    "file_head",
    "COLUMNS",
    "ERRORS",
    "NUMBER",
    "STATUSES",
    "At",
    "PathLike",
    "Source",
    "as_list",
    "check_errors",
    "expand",
    "find_sources",
    "json_kind",
    "load_json",
    "outcome",
    "parse_json",
    "read_each",
    "read_jsonl",
    "read_zip_member",
    "reading",
    "runs_table",
]

T = TypeVar("T")

PathLike = str | os.PathLike[str]
COLUMNS = ["model", "task", "item", "run", "correct"]
# Status of one logged sample: scored, ended in an error, cut short by a cancelled run, or
# finished without the chosen score.
STATUSES = ("ok", "error", "cancelled", "unscored")
ERRORS = ("drop", "keep", "raise")
# Score letters of inspect_ai.scorer (CORRECT, INCORRECT, PARTIAL, NOANSWER) and the boolean words
# its value_to_float accepts.
_SCORE_WORDS = {"C": 1, "I": 0, "P": 0.5, "N": 0, "yes": 1, "true": 1, "no": 0, "false": 0}
# Zip compression method 93 (Zstandard), which zipfile reads only from Python 3.14 on.
_ZIP_ZSTD = 93


def as_list(paths: PathLike | Iterable[PathLike]) -> list[PathLike]:
    """One path or several, as a non-empty list."""
    if isinstance(paths, (str, os.PathLike)):
        return [paths]
    out = list(paths)
    if not out:
        raise DataError("no paths given")
    return out


@dataclass(frozen=True)
class Source:
    """A log file to read, and whether it was found in a folder or by a pattern rather than named.

    A damaged file that was found is left out with a warning (the others are still read); one the
    caller named is an error.
    """

    path: Path
    found: bool


def expand(entry: PathLike, wanted: Callable[[Path], bool], what: str) -> list[Source]:
    """Files named by one path entry: the file itself, the wanted files under a folder, or a glob."""
    path = Path(entry)
    if path.is_dir():
        found = sorted(p for p in path.rglob("*") if p.is_file() and wanted(p))
        if not found:
            raise DataError(f"no {what} files under {path}")
        return [Source(p, True) for p in found]
    if path.is_file():
        return [Source(path, False)]
    if any(ch in str(entry) for ch in "*?["):
        anchor = Path(path.anchor) if path.is_absolute() else Path()
        found = sorted(p for p in anchor.glob(str(path.relative_to(anchor))) if p.is_file())
        if not found:
            raise DataError(f"no files match {str(entry)!r}")
        return [Source(p, True) for p in found]
    raise DataError(f"no such file or folder: {path}")


def find_sources(paths: PathLike | Iterable[PathLike], wanted: Callable[[Path], bool],
                 what: str) -> list[Source]:
    """Every file of one path, folder or pattern or of a list of them (see :func:`expand`)."""
    return [src for entry in as_list(paths) for src in expand(entry, wanted, what)]


# Python types of the JSON kinds a log schema names; a boolean never counts as an integer.
NUMBER = (int, float)
_KIND_NAMES: dict[type, str] = {dict: "an object", list: "an array", str: "a string",
                                bool: "a boolean", int: "an integer", float: "a number",
                                type(None): "null"}
_SHORT = reprlib.Repr()
_SHORT.maxstring, _SHORT.maxother, _SHORT.maxlist, _SHORT.maxdict, _SHORT.maxlevel = 40, 40, 4, 3, 2
_REQUIRED: Any = object()


def file_head(path: Path, size: int = 4096) -> bytes | None:
    """The first ``size`` bytes of a file without a UTF-8 byte-order mark (how a format's sniffer
    tells its files from others), or None when the file cannot be read."""
    try:
        with open(path, "rb") as fh:
            return fh.read(size).removeprefix(b"\xef\xbb\xbf")
    except OSError:
        return None


def json_kind(value: Any) -> str:
    """The JSON kind of a parsed value in words: "an object", "an array", "null"..."""
    return _KIND_NAMES.get(type(value), type(value).__name__)


def _expected(kinds: tuple[type, ...]) -> str:
    if set(NUMBER) <= set(kinds):
        kinds = tuple(k for k in kinds if k is not int)
    return " or ".join(_KIND_NAMES.get(k, k.__name__) for k in kinds)


@dataclass(frozen=True)
class At:
    """A place in a log file: the file and the path of a value in it (``samples[3].scores``).

    The typed accessors :meth:`get` and :meth:`check` return a value of the kind the harness's
    schema gives it, or raise a :class:`~evalmix.DataError` naming the file and the path.
    """

    file: str
    path: str = ""

    def key(self, name: str) -> At:
        return At(self.file, f"{self.path}.{name}" if self.path else str(name))

    def index(self, i: int) -> At:
        return At(self.file, f"{self.path}[{i}]")

    def __str__(self) -> str:
        return f"{self.file}: {self.path}" if self.path else self.file

    def error(self, message: str) -> DataError:
        return DataError(f"{self.file}: {self.path} {message}" if self.path else f"{self.file} {message}")

    def check(self, value: Any, kinds: type | tuple[type, ...]) -> Any:
        """``value`` if it has one of the JSON kinds ``kinds``, else a DataError naming this place."""
        kinds = kinds if isinstance(kinds, tuple) else (kinds,)
        if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
            raise self.error(f"is {json_kind(value)} ({_SHORT.repr(value)}), expected "
                             f"{_expected(kinds)}")
        return value

    def get(self, obj: dict[str, Any], name: str, kinds: type | tuple[type, ...],
            default: Any = _REQUIRED) -> Any:
        """``obj[name]`` (``obj`` being the object at this place), checked against ``kinds``.

        An absent field gives ``default``, or a DataError when the field is required; a field
        that is present is checked even when it is null (list ``type(None)`` in ``kinds`` where
        the schema allows null).
        """
        if name not in obj:
            if default is _REQUIRED:
                raise self.key(name).error("is missing")
            return default
        return self.key(name).check(obj[name], kinds)


@contextmanager
def reading(file: Path | str, what: str) -> Iterator[None]:
    """The one guard around the reading of a log file: any failure is a DataError naming the file.

    The loaders check fields with :class:`At`, so a schema error names its path; this turns what
    the libraries raise on damaged input (a truncated archive, a damaged deflate stream, bytes that
    are not UTF-8) into a DataError, and stands behind the field checks for whatever they miss.
    """
    try:
        yield
    except DataError:
        raise
    except OSError as exc:
        raise DataError(f"cannot read {file}: {exc.strerror or exc}") from None
    except (zipfile.BadZipFile, zlib.error, EOFError, struct.error) as exc:
        raise DataError(f"{file} is a damaged or truncated archive ({exc}); expected {what}") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{file} is not UTF-8 text ({exc}); expected {what}") from None
    except (KeyError, TypeError, AttributeError, IndexError, ValueError, RuntimeError) as exc:
        raise DataError(f"{file} does not follow the layout of {what} "
                        f"({type(exc).__name__}: {exc})") from None


def read_each(sources: Iterable[Source], read: Callable[[Path], T], what: str) -> list[tuple[Source, T]]:
    """``read`` every file inside :func:`reading`.

    A file named by the caller that fails raises its DataError.  Files found in a folder (or by a
    pattern) that fail are left out with one DataWarning naming each and why, so that a damaged log
    never removes a model silently; when none of them can be read, that is an error.
    """
    done: list[tuple[Source, T]] = []
    left: list[str] = []
    for src in sources:
        try:
            with reading(src.path, what):
                done.append((src, read(src.path)))
        except DataError as exc:
            if not src.found:
                raise
            message = str(exc)
            left.append(message if str(src.path) in message else f"{src.path}: {message}")
    if left and not done:
        raise DataError(f"none of the {len(left)} file(s) found can be read as {what}: "
                        + "; ".join(left))
    if left:
        warnings.warn(f"left out {len(left)} of {len(left) + len(done)} file(s) that cannot be read "
                      f"as {what}: " + "; ".join(left), DataWarning, stacklevel=3)
    return done


def check_errors(errors: str) -> None:
    if errors not in ERRORS:
        raise DataError(f"errors must be one of {', '.join(map(repr, ERRORS))}, not {errors!r}")


def outcome(value: Any, allow_partial: bool, where: str, at: At | None = None) -> int | float:
    """One logged score as 0/1 (or a fraction in [0, 1] where partial credit is allowed).

    ``where`` says which sample it is; ``at``, the place of the value in its log, is named at the
    end of the message.
    """
    try:
        return _outcome(value, allow_partial, where)
    except DataError as exc:
        if at is None:
            raise
        raise DataError(f"{exc} (at {at})") from None


def _outcome(value: Any, allow_partial: bool, where: str) -> int | float:
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
    if hasattr(value, "item") and not isinstance(value, (list, dict)):
        value = value.item()  # numpy scalars from parquet files
    if not isinstance(value, (int, float)):
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


def parse_json(data: bytes | str, at: At) -> Any:
    """JSON text (a byte-order mark is read as UTF-8), or a DataError naming the place."""
    try:
        text = data.decode("utf-8-sig") if isinstance(data, bytes) else data.removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise at.error(f"is not UTF-8 text ({exc})") from None
    if not text.strip():
        raise at.error("is empty")
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise at.error(f"is not valid JSON ({exc}; truncated?)") from None
    except RecursionError:
        raise at.error("is nested too deeply to be a log") from None


def load_json(path: Path, what: str) -> Any:
    """A JSON file (UTF-8, with or without a byte-order mark), or a DataError naming it."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise DataError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return parse_json(data, At(str(path)))
    except DataError as exc:
        raise DataError(f"{exc}; expected {what}") from None


def read_jsonl(path: Path, what: str) -> list[tuple[int, Any]]:
    """(line number, record) of every non-blank line of a (gzipped) JSON-lines file.

    A byte-order mark before the first line is read as UTF-8.
    """
    opener = gzip.open if path.suffix == ".gz" else open
    records = []
    try:
        with opener(path, "rt", encoding="utf-8-sig") as fh:
            for line_no, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    records.append((line_no, json.loads(line)))
                except json.JSONDecodeError as exc:
                    raise DataError(f"{path}, line {line_no}: not valid JSON ({exc}; truncated?); "
                                    f"expected {what}") from None
                except RecursionError:
                    raise DataError(f"{path}, line {line_no}: nested too deeply; expected "
                                    f"{what}") from None
    except (OSError, UnicodeDecodeError, EOFError, zlib.error) as exc:
        raise DataError(f"cannot read {path} as {what}: {exc}") from None
    return records


def _zstd_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path) -> bytes:
    """A Zstandard-compressed member, decoded from its raw bytes (zipfile cannot before 3.14)."""
    try:
        import zstandard
    except ImportError:  # pragma: no cover - zstandard is a dependency
        raise DataError(f"{path} compresses its members with Zstandard: install the 'zstandard' "
                        f"package (pip install zstandard) to read it") from None
    fp = zf.fp
    assert fp is not None
    fp.seek(info.header_offset)
    local = fp.read(30)
    if len(local) != 30 or local[:4] != b"PK\x03\x04":
        raise DataError(f"{path}: bad local header for member {info.filename!r}")
    name_len = int.from_bytes(local[26:28], "little")
    extra_len = int.from_bytes(local[28:30], "little")
    fp.seek(info.header_offset + 30 + name_len + extra_len)
    raw = fp.read(info.compress_size)
    try:
        # frames written in streaming mode carry no content size: decode as a stream
        data = zstandard.ZstdDecompressor().decompressobj().decompress(raw)
    except zstandard.ZstdError as exc:
        raise DataError(f"{path}: member {info.filename!r} is not valid Zstandard data ({exc})") from None
    if len(data) != info.file_size or zlib.crc32(data) != info.CRC:
        raise DataError(f"{path}: member {info.filename!r} fails its size/CRC check (damaged archive)")
    return data


def _damage_errors() -> tuple[type[Exception], ...]:
    """What reading a damaged member raises.  Another library may have taught zipfile to read
    Zstandard (Inspect AI does, on import): its decompressor's errors then come from ``zf.read``."""
    try:
        import zstandard
    except ImportError:  # pragma: no cover - zstandard is a dependency
        return (zipfile.BadZipFile, zlib.error, EOFError)
    return (zipfile.BadZipFile, zlib.error, EOFError, zstandard.ZstdError)


def read_zip_member(zf: zipfile.ZipFile, info: zipfile.ZipInfo, path: Path) -> bytes:
    """The bytes of one archive member, whatever its compression (stored, deflate, Zstandard)."""
    if info.flag_bits & 0x1:
        raise DataError(f"{path}: member {info.filename!r} is encrypted")
    try:
        return zf.read(info)
    except _damage_errors() as exc:
        raise DataError(f"{path}: member {info.filename!r} is damaged ({exc})") from None
    except NotImplementedError:
        if info.compress_type != _ZIP_ZSTD:
            raise DataError(f"{path}: member {info.filename!r} uses zip compression method "
                            f"{info.compress_type}, which cannot be read") from None
        return _zstd_member(zf, info, path)


def _py(value: Any) -> Any:
    """numpy scalars as Python values, so messages read 7 rather than np.int64(7)."""
    return value.item() if hasattr(value, "item") else value


def runs_table(records: list[dict[str, Any]], *, errors: str, allow_partial: bool, hint: str,
               what: str) -> pd.DataFrame:
    """The loaded records as a validated runs table, applying the ``errors=`` policy.

    ``records`` hold ``model, task, item, run, correct, status, source`` and optionally ``detail``
    (an error message quoted when ``errors="raise"`` stops at the row).  With ``errors="drop"``
    only scored rows are kept (a DataWarning counts the rest by status); ``"raise"`` stops at the
    first unscored row; ``"keep"`` returns every row with its ``status`` and a missing outcome for
    the unscored ones, as a plain DataFrame (analyses then refuse it until the rows are resolved).
    """
    if not records:
        raise DataError(f"no samples in {what}")
    df = pd.DataFrame(records, columns=COLUMNS + ["status", "source", "detail"])
    key = ["model", "task", "item", "run"]
    dup = df.duplicated(subset=key, keep=False)
    if dup.any():
        first = df.loc[dup].iloc[0]
        same = dup & (df[key] == first[key]).all(axis=1)
        files = sorted(set(df.loc[same, "source"]))
        raise DataError(
            f"model {first['model']!r}, task {first['task']!r}, item {_py(first['item'])!r}, run "
            f"{_py(first['run'])!r} appears {int(same.sum())} times, in: {', '.join(files)}; {hint}")
    ok = df["status"] == "ok"
    if not ok.all():
        bad = df.loc[~ok]
        if errors == "raise":
            row = bad.iloc[0]
            why = f": {row['detail']}" if isinstance(row["detail"], str) and row["detail"] else ""
            raise DataError(f"{row['source']}: item {_py(row['item'])!r}, run {_py(row['run'])!r} has no score "
                            f"(status {row['status']!r}{why}); pass errors='drop' to leave such "
                            f"samples out or errors='keep' to keep them with their status")
        if errors == "drop":
            counts = Counter(bad["status"])
            warnings.warn(
                f"left out {len(bad)} sample(s) without a score ("
                + ", ".join(f"{n} {s}" for s, n in sorted(counts.items()))
                + f"; e.g. {bad.iloc[0]['source']}: item {_py(bad.iloc[0]['item'])!r}, run "
                f"{_py(bad.iloc[0]['run'])!r}); pass errors='keep' to see them with their status",
                DataWarning, stacklevel=3)
    scored = df.loc[ok]
    if scored.empty and errors != "keep":
        counts = Counter(df["status"])
        raise DataError(f"no scored samples in {what}: "
                        + ", ".join(f"{n} {s}" for s, n in sorted(counts.items())))
    several_tasks = df["task"].nunique() > 1
    if several_tasks:
        # ids restart in every task: qualify them so items of different tasks stay distinct
        df["item"] = df["task"].astype(str) + ":" + df["item"].astype(str)
    columns = COLUMNS if several_tasks else [c for c in COLUMNS if c != "task"]
    if errors == "keep":
        out = df[columns + ["status"]].copy()
        if not out["status"].eq("ok").all():
            out["correct"] = out["correct"].astype(float)
        if not scored.empty:
            read_runs(out.loc[ok, columns], item="item", model="model", run="run", outcome="correct",
                      allow_fractional=allow_partial)  # validates the scored values
        out.attrs.pop("evalmix", None)
        return out.reset_index(drop=True)
    return read_runs(df.loc[ok, columns].reset_index(drop=True), item="item", model="model",
                     run="run", outcome="correct", allow_fractional=allow_partial)
