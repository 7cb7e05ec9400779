"""The runs table: reading and validating the long-format input every analysis starts from.

A runs table has one row per (model, item, run, slices...) with a binary outcome, or one row per
(model, item, slices...) with k-of-n counts.  :func:`read_runs` checks it and returns a pandas
DataFrame whose factor columns are categoricals (levels sorted as R sorts them in the C locale) and
whose column roles are recorded in ``df.attrs["evalmix"]``, so later functions know which column is
the item, the model, the run and the outcome without being told again.
"""

from __future__ import annotations

import csv
import io
import json
import warnings
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar, Union

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..core.arguments import MISSING_POLICIES, check_choice
from ..core.errors import DataError, DataWarning
from .parquet import Filters, read_parquet

if TYPE_CHECKING:
    import narwhals.stable.v2 as nw

__all__ = ["MISSING_POLICIES", "RunsData", "RunsSchema", "as_pandas", "at_the_door", "check_hashable", "check_weights",
           "drop_written_index", "ensure_runs", "is_foreign_table", "load_table", "narwhals_frame", "read_runs",
           "require_columns", "schema_of", "show_rows"]

_MAX_SHOWN = 5

#: What functions taking a runs table accept: a DataFrame or a path :func:`load_table` reads.
RunsData = Union[pd.DataFrame, str, Path]


@dataclass(frozen=True)
class RunsSchema:
    """Which column plays which role in a runs table."""

    item: str | None
    model: str | None
    run: str | None
    outcome: str | None
    successes: str | None = None
    trials: str | None = None
    slices: tuple[str, ...] = field(default_factory=tuple)

    @property
    def keys(self) -> list[str]:
        """Columns that identify a row: model, item, run (if any) and the slices."""
        return [c for c in (self.model, self.item, self.run) if c is not None] + list(self.slices)

    def role(self, name: str) -> str:
        """The column playing role ``name`` (``"item"``, ``"model"``, ``"run"``, ``"outcome"``...);
        a DataError when the table has none.

        Examples
        --------
        >>> RunsSchema(item="question", model="model", run=None, outcome="correct").role("item")
        'question'
        """
        value = getattr(self, name, None)
        if not isinstance(value, str):
            raise DataError(f"the runs table has no {name} column (none was given or found)")
        return value

    @property
    def scores(self) -> str:
        """The column holding the outcome (``successes`` for k-of-n counts)."""
        col = self.successes if self.counts else self.outcome
        if col is None:
            raise DataError("the runs schema names no outcome column")
        return col

    @property
    def count_columns(self) -> tuple[str, str]:
        """``(successes, trials)`` of a k-of-n table."""
        if self.successes is None or self.trials is None:
            raise DataError("the runs schema names no successes and trials columns")
        return self.successes, self.trials

    @property
    def counts(self) -> bool:
        """True when the outcome is given as k-of-n counts."""
        return self.successes is not None

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["slices"] = list(self.slices)
        return d


def schema_of(data: pd.DataFrame) -> RunsSchema | None:
    """The :class:`RunsSchema` recorded by :func:`read_runs`, or None for a plain DataFrame."""
    meta = data.attrs.get("evalmix") if hasattr(data, "attrs") else None
    if not meta:
        return None
    meta = dict(meta)
    meta["slices"] = tuple(meta.get("slices", ()))
    return RunsSchema(**meta)


_SNIFF_DELIMITERS = ",;\t|"
_SUFFIXES = ".csv, .tsv, .parquet, .jsonl or .json (optionally .gz)"


def _file_error(path: Path, what: str) -> DataError:
    return DataError(f"{path}: {what}")


#: Byte-order marks that name their encoding (UTF-32 first: its little-endian mark starts with UTF-16's).
_BOMS = ((b"\xff\xfe\x00\x00", "utf-32"), (b"\x00\x00\xfe\xff", "utf-32"),
         (b"\xff\xfe", "utf-16"), (b"\xfe\xff", "utf-16"))


def _decode(path: Path, raw: bytes, encoding: str | None) -> str:
    """The text of a file: UTF-8 (with or without BOM), UTF-16/32 with a BOM, unless ``encoding``
    says otherwise."""
    if encoding is not None:
        try:
            return raw.decode(encoding)
        except LookupError as exc:
            raise _file_error(path, f"unknown encoding {encoding!r}") from exc
        except UnicodeDecodeError as exc:
            raise _file_error(path, f"cannot be decoded as {encoding!r} (byte {exc.start}); pass the "
                                    f"file's encoding=") from exc
    for bom, name in _BOMS:  # Excel's "Unicode text" and PowerShell write UTF-16 with a BOM
        if raw.startswith(bom):
            try:
                return raw.decode(name)  # the codec reads the BOM for the byte order and drops it
            except UnicodeDecodeError as exc:
                raise _file_error(path, f"starts with a {name.upper()} byte-order mark but cannot be "
                                        f"decoded as {name} (byte {exc.start})") from exc
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[:exc.start].count(b"\n") + 1
        raise _file_error(path, f"is not UTF-8 text (byte {raw[exc.start]:#04x} on line {line}); "
                                f"pass {_encoding_advice(raw)}") from exc


def _encoding_advice(raw: bytes) -> str:
    """The ``encoding=`` most likely to read bytes that are not UTF-8."""
    head = raw[:4096]
    if head.count(0) > len(head) // 4:  # text in UTF-16 has a zero byte beside every ASCII letter
        order = "le" if head[1::2].count(0) > head[::2].count(0) else "be"
        return f"encoding='utf-16-{order}' (the file looks like UTF-16 without a byte-order mark)"
    try:
        raw.decode("cp1252")
    except UnicodeDecodeError:
        # bytes cp1252 leaves undefined: latin-1 reads every byte, but check the accented letters
        return "the file's encoding= (e.g. 'latin-1', which reads any byte; check accented letters)"
    if any(0x80 <= b <= 0x9F for b in raw):  # curly quotes, euro sign: cp1252, not latin-1
        return "encoding='cp1252' (Windows/Excel; its quotes and euro sign are not latin-1)"
    return "encoding='latin-1' (or 'cp1252', as Excel on Windows writes)"


def _sniff_delimiter(text: str) -> str:
    """',' unless the header only splits on another delimiter (';', tab or '|')."""
    lines = text.splitlines()[:20]
    header = lines[0] if lines else ""
    if "," in header:
        return ","
    try:
        found = csv.Sniffer().sniff("\n".join(lines), delimiters=_SNIFF_DELIMITERS).delimiter
    except csv.Error:
        return ","
    return found if found in header else ","


def _read_text(path: Path, compressed: bool) -> bytes:
    if compressed:
        import gzip
        try:
            with gzip.open(path, "rb") as fh:
                return fh.read()
        except (OSError, EOFError) as exc:
            raise _file_error(path, f"is not a valid gzip file ({exc})") from exc
    return path.read_bytes()


_T = TypeVar("_T")

# Dataframe libraries whose tables are converted at the door, by the module that defines the type, with
# the extra that installs what the conversion needs. narwhals (a dependency) is the one route from
# any of them to pandas: a lazy frame (a polars LazyFrame, a DuckDB relation, a Dask or Spark frame)
# runs its query in its own engine first, and only the result reaches pandas.
_FOREIGN_TABLES = {"polars": "polars", "pyarrow": "parquet", "duckdb": "duckdb", "modin": "parquet",
                   "cudf": "parquet", "dask": "parquet", "pyspark": "parquet", "ibis": "parquet",
                   "sqlframe": "parquet"}


def _module_root(obj: object) -> str:
    return type(obj).__module__.partition(".")[0]


def narwhals_frame(obj: object) -> nw.DataFrame[Any] | nw.LazyFrame[Any] | None:
    """``obj`` as a narwhals DataFrame or LazyFrame, or None when narwhals does not take it (a pandas
    frame is not asked: it is the form evalmix works on).

    Only the libraries of ``_FOREIGN_TABLES`` are asked, so narwhals is imported only when such a table
    is passed.
    """
    if isinstance(obj, pd.DataFrame) or _module_root(obj) not in _FOREIGN_TABLES:
        return None
    import narwhals.stable.v2 as nw

    with warnings.catch_warnings():  # narwhals' notice that Dask support moves to a plugin package
        warnings.filterwarnings("ignore", "Dask support is moving", FutureWarning)
        frame = nw.from_native(obj, pass_through=True)
    return frame if isinstance(frame, (nw.DataFrame, nw.LazyFrame)) else None


def is_foreign_table(obj: object) -> bool:
    """Whether ``obj`` is a table of another dataframe library that the door converts: a polars
    DataFrame or LazyFrame, a pyarrow Table or RecordBatch, a DuckDB relation, or any other frame
    narwhals supports (Modin, cuDF, Dask, PySpark, Ibis...). None of these libraries is imported to
    tell."""
    if narwhals_frame(obj) is not None:
        return True
    return _module_root(obj) == "pyarrow" and hasattr(obj, "to_pandas")  # a RecordBatch


def as_pandas(table: object) -> pd.DataFrame:
    """A table of any dataframe library narwhals supports as a pandas DataFrame, the one form
    evalmix works on: the front door of every function that takes a runs table.

    Text columns stay text, integers stay integers, and nulls become missing values, which the
    runs-table rules then report by row as they do for pandas input.  A lazy frame (polars
    LazyFrame, DuckDB relation, Dask, PySpark) is collected by its own engine first.  A pandas
    DataFrame is returned as it is.

    Raises
    ------
    DataError
        Not a table, or the conversion needs a package that is not installed (named, with the extra
        that installs it).

    Examples
    --------
    >>> import pyarrow as pa
    >>> as_pandas(pa.table({"model": ["a", "b"], "correct": [1, 0]})).values.tolist()
    [['a', 1], ['b', 0]]
    """
    if isinstance(table, pd.DataFrame):
        return table
    if not is_foreign_table(table):
        raise DataError("expected a pandas, polars, Arrow or DuckDB table (or another frame narwhals "
                        f"supports), got {type(table).__name__}")
    root = _module_root(table)
    try:
        frame = narwhals_frame(table)
        if frame is None:  # an Arrow record batch or column: pyarrow converts it
            out = table.to_pandas()  # type: ignore[attr-defined]
        else:
            if hasattr(frame, "collect"):  # lazy: the query runs in its own engine
                frame = frame.collect()
            out = frame.to_pandas()
    except ImportError as exc:
        raise DataError(f"converting a {root} table to pandas needs {exc.name or 'pyarrow'}: pip install "
                        f"'evalmix[{_FOREIGN_TABLES[root]}]'") from None
    if not isinstance(out, pd.DataFrame):
        raise DataError(f"a {root} {type(table).__name__} converted to {type(out).__name__}, not a table")
    return out


def at_the_door(data: _T) -> _T | pd.DataFrame:
    """``data`` as evalmix works on it: a table of another dataframe library converted to pandas by
    :func:`as_pandas`; anything else (a pandas frame, a path, an array) returned as it is.

    The one line every function that takes a table starts with (directly or through
    :func:`ensure_runs`, :func:`load_table` or the model frame).

    Examples
    --------
    >>> import pyarrow as pa
    >>> type(at_the_door(pa.table({"a": [1]}))).__name__, at_the_door("runs.csv")
    ('DataFrame', 'runs.csv')
    """
    return as_pandas(data) if is_foreign_table(data) else data


def load_table(source: str | Path | pd.DataFrame, *, encoding: str | None = None,
               sep: str | None = None, columns: Sequence[str] | None = None,
               filters: Filters = None, ids: Sequence[str | None] = ()) -> pd.DataFrame:
    """Load a table from a file, or copy a DataFrame; no validation of its contents.

    Parameters
    ----------
    source : path or DataFrame
        A ``.csv`` (``.tsv``), ``.parquet``, ``.jsonl`` (``.ndjson``) or ``.json`` file, text
        formats optionally gzipped (``.csv.gz``); or a DataFrame, which is copied.
    encoding : str, optional
        Text encoding of a CSV/JSON file.  By default UTF-8 (a byte-order mark is skipped), or
        UTF-16/UTF-32 when the file starts with their byte-order mark (Excel's "Unicode text"); a
        file in another encoding is refused with a message naming the likely one (``"cp1252"``,
        ``"latin-1"``, ``"utf-16-le"``) rather than read with a guess.
    sep : str, optional
        CSV delimiter.  By default ``","``, or ``";"``, tab or ``"|"`` when the header line holds
        no comma but splits on one of those (``csv.Sniffer``).
    columns, filters : optional
        Parquet only (a file or a folder of them): read only these columns, and only the rows
        matching ``filters`` (a pyarrow expression, ``[("benchmark", "==", "math")]`` or
        ``{"benchmark": ["math", "code"]}``), both pushed down to the Parquet reader (see
        :func:`evalmix.data.parquet.read_parquet`).
    ids : sequence of str, optional
        Identifier columns (model, item, run, judge...) of a CSV or JSON file, read as the user
        wrote them: a column whose values would not print back exactly as written once parsed as
        numbers (``1`` beside ``1.0``, ``007``, ``1e3``) stays text, so no two names merge; its
        levels keep the numeric order R's ``read.csv`` would give them.  A column of plain
        numbers (``1, 2, 10``) is read as numbers, as before.

    Raises
    ------
    DataError
        Naming the file: it does not exist, is a directory, is empty (0 bytes), has an unsupported
        suffix, is not UTF-8 (names the ``encoding=`` to pass), cannot be parsed, or is parquet
        without pyarrow installed.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "runs.csv"
    >>> _ = path.write_text("model;item;run;correct\\na;1;1;1\\n")
    >>> load_table(path).columns.tolist()
    ['model', 'item', 'run', 'correct']
    >>> _ = path.write_text("model,correct\\n1,1\\n1.0,0\\n2,1\\n")
    >>> load_table(path, ids=["model"])["model"].tolist()
    ['1', '1.0', '2']
    """
    if is_foreign_table(source):
        return as_pandas(source)
    if isinstance(source, pd.DataFrame):
        return source.copy()
    if not isinstance(source, (str, Path)):
        raise DataError(f"expected a DataFrame or a path to a table file, got {type(source).__name__}")
    path = Path(source)
    if not path.exists():
        raise _file_error(path, "no such file")
    if (columns is not None or filters is not None) and not (
            path.is_dir() or path.suffix.lower() == ".parquet"):
        raise _file_error(path, "columns= and filters= apply to Parquet files and folders only")
    if path.is_dir() and any(path.rglob("*.parquet")):
        return read_parquet(path, columns=columns, filters=filters)
    if path.is_dir():
        raise _file_error(path, f"is a directory, not a table file (give a {_SUFFIXES} file; "
                                "harness log folders are read by read_lm_eval / read_inspect)")
    suffix = "".join(path.suffixes[-2:]).lower() if path.suffix.lower() == ".gz" else path.suffix.lower()
    known = (".csv", ".csv.gz", ".tsv", ".tsv.gz", ".parquet", ".jsonl", ".jsonl.gz", ".ndjson", ".json",
             ".json.gz")
    if suffix not in known:
        raise _file_error(path, f"unsupported file type {suffix or '(no suffix)'!r}: use {_SUFFIXES}")
    if path.stat().st_size == 0:
        raise _file_error(path, "is empty (0 bytes)")
    if suffix == ".parquet":
        try:
            import pyarrow  # noqa: F401
        except ImportError as exc:
            raise _file_error(path, "reading .parquet needs pyarrow: pip install 'evalmix[parquet]'") from exc
        try:
            return read_parquet(path, columns=columns, filters=filters)
        except ImportError as exc:
            raise _file_error(path, "reading .parquet needs pyarrow: pip install 'evalmix[parquet]'") from exc
        except DataError:
            raise
        except Exception as exc:  # pyarrow's ArrowInvalid and friends
            raise _file_error(path, f"cannot be read as parquet ({type(exc).__name__}: {exc})") from exc
    text = _decode(path, _read_text(path, suffix.endswith(".gz")), encoding)
    if not text.strip():
        raise _file_error(path, "holds no data (only blank lines)")
    try:
        if suffix in (".csv", ".csv.gz", ".tsv", ".tsv.gz"):
            delim = sep or ("\t" if suffix.startswith(".tsv") else _sniff_delimiter(text))
            text_ids = {str(c): str for c in ids if c is not None}
            df = pd.read_csv(io.StringIO(text), sep=delim, dtype=text_ids or None)
            for col in text_ids:
                if col in df.columns:
                    df[col] = _as_written(df[col])
            if df.shape[1] == 1 and sep is None and any(d in str(df.columns[0]) for d in ";\t| "):
                raise _file_error(path, f"has a single column {str(df.columns[0])!r}: another delimiter? "
                                        "pass sep=")
            return df
        lines = suffix in (".jsonl", ".jsonl.gz", ".ndjson")
        df = pd.read_json(io.StringIO(text), lines=True) if lines else pd.DataFrame(json.loads(text))
        return _json_ids(df, text, lines, [str(c) for c in ids if c is not None])
    except DataError:
        raise
    except pd.errors.EmptyDataError as exc:
        raise _file_error(path, "holds no columns") from exc
    except pd.errors.ParserError as exc:
        raise _file_error(path, f"cannot be parsed as CSV: {str(exc).strip()}") from exc
    except ValueError as exc:  # json.JSONDecodeError is a ValueError
        raise _file_error(path, f"cannot be parsed as {suffix.lstrip('.')}: {exc}") from exc


def _as_written(text: pd.Series) -> pd.Series:
    """An identifier column read as text: numbers when every value prints back as written (what
    pandas would have read), else the text itself, as a categorical in R's numeric level order
    when every value is a number (``1 < 1.0 < 2 < 10``)."""
    present = text.dropna()
    numbers = pd.to_numeric(present, errors="coerce")
    if present.empty or numbers.isna().any():
        return text  # not all numbers: pandas would have kept the text too
    as_int = numbers.astype("int64") if (numbers == numbers.round()).all() and \
        present.str.fullmatch(r"-?\d+").all() else None
    back = as_int.astype(str) if as_int is not None else numbers.map(str)
    if (back.to_numpy() == present.to_numpy()).all():
        return pd.to_numeric(text)
    order = sorted(pd.unique(present), key=lambda v: (float(v), v))
    return pd.Series(pd.Categorical(text, categories=order), index=text.index, name=text.name)


def _json_ids(df: pd.DataFrame, text: str, lines: bool, ids: list[str]) -> pd.DataFrame:
    """Identifier columns of a JSON file as written: JSON's ``1`` and ``1.0`` are one number to
    pandas, two names to the user, and pandas' JSON Lines reader turns the string ``"01"`` into
    the number 1."""
    numeric = [c for c in ids if c in df.columns and pd.api.types.is_numeric_dtype(df[c])
               and not pd.api.types.is_bool_dtype(df[c])]
    if not numeric:
        return df
    records = [json.loads(line) for line in text.splitlines() if line.strip()] if lines else json.loads(text)
    if not isinstance(records, list) or len(records) != len(df) or not all(isinstance(r, dict) for r in records):
        return df  # not one record per row (a dict of columns): pandas' reading stands
    for col in numeric:
        # each record's own value (a DataFrame of the records would merge 1 and 1.0 again)
        values = [r.get(col) for r in records]
        written = [None if v is None or (isinstance(v, float) and np.isnan(v))
                   else v if isinstance(v, str) else json.dumps(v) for v in values]
        df[col] = _as_written(pd.Series(written, index=df.index, dtype=object, name=col).astype("str")
                              .where(pd.notna(pd.Series(written, index=df.index, dtype=object))))
    return df


#: Names under which pandas reads back an index written with a table: ``df.to_csv(path)`` leaves
#: the index column's header empty, read as "Unnamed: 0"; pyarrow keeps an unnamed one as
#: "__index_level_0__" when it cannot store it as metadata.
_INDEX_NAMES = ("Unnamed: 0", "__index_level_0__", "")


def drop_written_index(df: pd.DataFrame, source: RunsData | None = None,
                       keep: Sequence[str | None] = ()) -> pd.DataFrame:
    """``df`` without a leading column that is a pandas index written with the table.

    ``df.to_csv(path)`` (without ``index=False``) writes the row index as a first column with an
    empty header, which pandas reads back as ``"Unnamed: 0"``.  Left in, it is one more slice
    column whose value differs on every row, so every key is unique and a duplicated row goes
    unnoticed.  Such a column (unnamed, first, whole numbers all different) is dropped with a
    DataWarning naming it; any other column, and a column named in ``keep`` (a role the caller
    was given), is kept.

    Examples
    --------
    >>> import io, warnings
    >>> runs = pd.DataFrame({"model": ["a", "b"], "item": [1, 1], "correct": [1, 0]})
    >>> back = pd.read_csv(io.StringIO(runs.to_csv()))
    >>> back.columns.tolist()
    ['Unnamed: 0', 'model', 'item', 'correct']
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore")
    ...     drop_written_index(back).columns.tolist()
    ['model', 'item', 'correct']
    """
    if df.shape[1] < 2:
        return df
    first = df.columns[0]
    if first in keep or not (first is None or (isinstance(first, str) and first.strip() in _INDEX_NAMES)):
        return df
    values = df.iloc[:, 0]
    if not pd.api.types.is_integer_dtype(values) or pd.api.types.is_bool_dtype(values) or not values.is_unique:
        return df
    rows = "the row numbers 0..{}".format(len(df) - 1) if np.array_equal(
        values.to_numpy(), np.arange(len(df))) else "a different whole number on every row"
    warnings.warn(f"{_where(source)}dropped column {first!r}: it holds {rows}, a pandas index written "
                  "with the table (df.to_csv(path) without index=False), not a slice of the runs",
                  DataWarning, stacklevel=3)
    return df.iloc[:, 1:]


def check_hashable(df: pd.DataFrame, columns: Sequence[str], source: RunsData | None = None) -> None:
    """DataError naming the first of ``columns`` that holds lists, dicts or other unhashable cells.

    Factor and slice columns are grouped and compared, which needs one label per cell; a column of
    JSON objects (a harness's metadata, say) must be dropped or turned into text first.

    Examples
    --------
    >>> df = pd.DataFrame({"model": ["a"], "meta": [{"seed": 1}]})
    >>> try:
    ...     check_hashable(df, ["model", "meta"])
    ... except DataError as exc:
    ...     print(exc)  # doctest: +ELLIPSIS
    column 'meta' holds dict values (row 0: {'seed': 1}), not labels: ...
    """
    for col in columns:
        values = df[col]
        if values.dtype != object:
            continue
        try:
            pd.unique(values)  # a C hash table: cheap for labels, TypeError for dicts and lists
        except TypeError:
            for pos, v in enumerate(values):
                try:
                    hash(v)
                except TypeError:
                    raise DataError(
                        f"{_where(source)}column {str(col)!r} holds {type(v).__name__} values (row "
                        f"{_plain(df.index[pos])!r}: {_short(v)}), not labels: every column other than "
                        "the outcome is grouped on as a slice; drop it or turn it into text "
                        f"(df[{str(col)!r}].astype(str))") from None


def _short(value: Any, width: int = 60) -> str:
    text = repr(value)
    return text if len(text) <= width else text[:width - 3] + "..."


def check_weights(data: RunsData, weights: str | ArrayLike | None, *, name: str = "weights",
                  missing: str = "raise") -> None:
    """Check prior weights given as a column of ``data`` (or one value per row) before a fit.

    Each problem is named by the weight column itself: text that is not a number (a decimal comma
    ``"1,5"`` is named as such), an infinite or negative weight, a missing weight (unless
    ``missing="drop"``, which drops the row), or weights that are all zero.  A column absent from
    ``data``, or a path given as ``data``, is left to the caller, which names it.

    Examples
    --------
    >>> d = pd.DataFrame({"correct": [1, 0], "w": ["1,5", "2"]})
    >>> try:
    ...     check_weights(d, "w")
    ... except DataError as exc:
    ...     print(exc)  # doctest: +ELLIPSIS
    weights column 'w' holds text that is not a number in rows: row 0: w='1,5' (a decimal comma? ...
    """
    if weights is None or not isinstance(data, pd.DataFrame):
        return
    if isinstance(weights, str):
        if weights not in data.columns:
            return
        label, frame, col = f"{name} column {weights!r}", data, weights
        raw = data[weights]
    else:
        arr = np.asarray(weights)
        if arr.ndim != 1 or len(arr) != len(data):
            return  # the fit names a length mismatch
        label, col = name, name
        raw = pd.Series(arr, index=data.index)
        frame = pd.DataFrame({col: raw})
    numeric = raw if pd.api.types.is_numeric_dtype(raw) and not pd.api.types.is_bool_dtype(raw) \
        else pd.to_numeric(raw, errors="coerce")
    text = numeric.isna() & raw.notna()
    if text.any():
        comma = raw[text].astype(str).str.fullmatch(r"\s*-?\d+,\d+\s*").any()
        raise DataError(f"{label} holds text that is not a number in rows: {show_rows(frame, text, [col])}"
                        + (" (a decimal comma? write 1.5, or read the file with sep=';' and convert "
                           "the column with .str.replace(',', '.'))" if comma else ""))
    x = numeric.to_numpy(dtype=float)
    for bad, what in ((np.isinf(x), "must be finite; infinite weights"),
                      (x < 0, "must be >= 0; negative weights"),
                      (np.isnan(x) & (missing != "drop"), "has missing weights (NaN/None)")):
        if bad.any():
            raise DataError(f"{label} {what} in rows: {show_rows(frame, bad, [col])}"
                            + ("; pass missing='drop' to drop such rows" if "missing" in what else ""))
    finite = x[np.isfinite(x)]
    if finite.size and not finite.any():
        raise DataError(f"{label} is 0 in every row: no row carries weight, so there is nothing to fit")


def show_rows(df: pd.DataFrame, mask: np.ndarray | pd.Series, cols: Sequence[str]) -> str:
    """The first offending rows on one line: ``row 4: model='a', correct=2; row 9: ...``."""
    idx = np.flatnonzero(np.asarray(mask))
    cols = list(dict.fromkeys(cols))
    parts = []
    for i in idx[:_MAX_SHOWN]:
        values = ", ".join(f"{c}={_plain(df[c].iloc[i])!r}" for c in cols)
        parts.append(f"row {_plain(df.index[i])!r}: {values}")
    more = f"; ... and {len(idx) - _MAX_SHOWN} more" if len(idx) > _MAX_SHOWN else ""
    return "; ".join(parts) + more


def _plain(value: Any) -> Any:
    """numpy scalars as Python values, so messages read 7 rather than np.int64(7)."""
    return value.item() if hasattr(value, "item") else value


def _r_sorted_levels(values: pd.Series) -> list[Any]:
    """Levels in the order R's factor() gives them (sorted; numbers numerically)."""
    uniq = pd.unique(values.dropna())
    try:
        return sorted(uniq)
    except TypeError:  # mixed types: sort on the string form
        return sorted(uniq, key=str)


def _as_factor(values: pd.Series) -> pd.Series:
    if isinstance(values.dtype, pd.CategoricalDtype):
        # keep the user's level order but drop levels that never occur
        return values.cat.remove_unused_categories()
    return pd.Series(pd.Categorical(values, categories=_r_sorted_levels(values)), index=values.index,
                     name=values.name)


def _check_binary(df: pd.DataFrame, col: str, allow_fractional: bool | str, where: str = "") -> pd.Series:
    values = df[col]
    if values.dtype == bool or str(values.dtype) == "boolean":
        return values.astype("int8")
    numeric = values if pd.api.types.is_numeric_dtype(values) else pd.to_numeric(values, errors="coerce")
    not_numeric = numeric.isna() & values.notna()
    if not_numeric.any():
        raise DataError(
            f"{where}outcome column {col!r} must be 0/1 or True/False; non-numeric values in rows: "
            + show_rows(df, not_numeric, [col]))
    if allow_fractional == "any":
        bad = ~np.isfinite(numeric.to_numpy(dtype=float))
        if bad.any():
            raise DataError(f"{where}outcome column {col!r} must hold finite numbers; offending rows: "
                            + show_rows(df, bad, [col]))
        return numeric.astype(float)
    if allow_fractional:
        bad = (numeric < 0) | (numeric > 1)
        if bad.any():
            raise DataError(f"{where}outcome column {col!r} must lie in [0, 1]; offending rows: "
                            + show_rows(df, bad, [col]))
        return numeric.astype(float)
    bad = ~numeric.isin([0, 1])
    if bad.any():
        raise DataError(
            f"{where}outcome column {col!r} must be 0/1 or True/False; offending rows: "
            + show_rows(df, bad, [col])
            + " (for partial credit pass allow_fractional=True; for k-of-n counts use successes=/trials=)")
    return numeric.astype("int8")


def _check_counts(df: pd.DataFrame, successes: str, trials: str, where: str = "") -> tuple[pd.Series, pd.Series]:
    out = []
    for col in (successes, trials):
        numeric = pd.to_numeric(df[col], errors="coerce")
        bad = (numeric.isna() & df[col].notna()) | (numeric != np.round(numeric))
        if bad.any():
            raise DataError(f"{where}count column {col!r} must hold whole numbers; offending rows: "
                            + show_rows(df, bad, [col]))
        neg = numeric < 0
        if neg.any():
            raise DataError(f"{where}count column {col!r} has negative counts in rows: "
                            + show_rows(df, neg, [col]))
        out.append(numeric.astype("int64"))
    k, n = out
    over = k > n
    if over.any():
        raise DataError(f"{where}successes {successes!r} exceed trials {trials!r} in rows: "
                        + show_rows(df, over, [successes, trials]))
    zero = n == 0
    if zero.any():
        raise DataError(f"{where}trials column {trials!r} is 0 in rows (a row with no trials carries no "
                        f"information; drop it explicitly): " + show_rows(df, zero, [trials]))
    return k, n


def _design_warnings(df: pd.DataFrame, schema: RunsSchema, *, item: str, model: str) -> None:
    run = schema.run  # item and model come from read_runs, where both are required
    # a factor with a single level (one model, one language) is no flaw of the table: the fit that
    # would use it as a predictor refuses it there (evalmix.model.frame), so reading stays silent
    n_models = df[model].nunique()
    if n_models > 1:
        models_per_item = df.groupby(item, observed=True)[model].nunique()
        missing = models_per_item[models_per_item < n_models]
        if len(missing):
            per_model = df.groupby(model, observed=True)[item].nunique()
            short = per_model[per_model < df[item].nunique()]
            warnings.warn(
                f"unbalanced design: {len(missing)} item(s) in {item!r} were not answered by every model"
                f" (e.g. {_plain(missing.index[0])!r}); models missing items: "
                + ", ".join(f"{_plain(m)!r} ({c} items)" for m, c in short.items()),
                DataWarning, stacklevel=3)
        single = models_per_item[models_per_item == 1]
        if len(single):
            warnings.warn(f"{len(single)} item(s) in {item!r} were answered by only one model (e.g. "
                          f"{_plain(single.index[0])!r}): they carry no information on model differences",
                          DataWarning, stacklevel=3)
    if run is not None:
        other = [c for c in schema.keys if c != run]
        runs_per_cell = df.groupby(other, observed=True)[run].nunique()
        if runs_per_cell.nunique() > 1:
            lo = runs_per_cell.idxmin()
            warnings.warn(
                f"unbalanced design: the number of runs ({run!r}) varies between "
                f"{runs_per_cell.min()} and {runs_per_cell.max()} per {tuple(other)} cell "
                f"(fewest at {tuple(map(_plain, lo)) if isinstance(lo, tuple) else _plain(lo)!r})", DataWarning, stacklevel=3)


def read_runs(
    source: str | Path | pd.DataFrame,
    *,
    item: str = "item",
    model: str = "model",
    run: str | None = "run",
    outcome: str | None = "correct",
    successes: str | None = None,
    trials: str | None = None,
    allow_fractional: bool | Literal["any"] = False,
    missing: str = "raise",
    encoding: str | None = None,
    sep: str | None = None,
    columns: Sequence[str] | None = None,
    filters: Filters = None,
) -> pd.DataFrame:
    """Read and validate a long-format table of evaluation runs.

    Parameters
    ----------
    source : path or DataFrame
        A ``.csv``, ``.parquet`` or ``.jsonl`` file, a folder of Parquet files (hive partitions
        such as ``benchmark=math/`` become columns), or a DataFrame (which is copied, never
        modified).  For tables too large to load, :func:`evalmix.data.scan.aggregate_runs` reads
        Parquet in batches and returns k-of-n counts.
    item, model, run : str
        Names of the item, model and run columns.  ``run=None`` for a table with a single run (or
        with k-of-n counts that already pool the runs).
    outcome : str
        Name of the binary outcome column (0/1 or True/False).  Ignored when counts are given.
    successes, trials : str, optional
        Names of k-of-n count columns, given together instead of a binary ``outcome``.
    allow_fractional : bool or "any"
        Accept outcomes anywhere in [0, 1] (partial credit); ``"any"``: any finite number (judge
        ratings, scores on another scale).  Binomial models need 0/1 or counts.
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column is a DataError naming the rows
        (default), or its row is dropped with a DataWarning saying how many rows.
    encoding, sep : str, optional
        Text encoding and CSV delimiter of a file (see :func:`load_table`).
    columns, filters : optional
        Parquet only: the columns to read and a row filter, pushed down to the reader (see
        :func:`load_table`); every column read that plays no role is a slice.

    Returns
    -------
    pandas.DataFrame
        The validated table: the user's column names and rows, in their order; model, item, run
        and text slice columns as categoricals; the outcome as int8 (float when fractional).
        ``df.attrs["evalmix"]`` records the column roles (see :func:`schema_of`).  Every column other
        than the roles above is a *slice* (language, prompt, domain...).

    Raises
    ------
    DataError
        A missing column, an outcome outside {0, 1}, a missing value in a key or outcome column,
        a duplicated (model, item, run, slices) key, bad counts, or an empty table.  The message names
        the column and shows the offending rows.

    Warns
    -----
    DataWarning
        An unbalanced design (a model missing items, runs varying between cells), a factor with a
        single level, an item answered by one model only.  No row is dropped unless
        ``missing="drop"``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"model": ["a", "a", "b", "b"], "item": [1, 2, 1, 2],
    ...                    "run": [1, 1, 1, 1], "correct": [1, 0, 1, 1]})
    >>> runs = read_runs(df)
    >>> runs.attrs["evalmix"]["item"], runs["correct"].tolist()
    ('item', [1, 0, 1, 1])
    """
    df = drop_written_index(load_table(source, encoding=encoding, sep=sep, columns=columns, filters=filters,
                                       ids=(model, item, run)),
                            source, keep=(item, model, run, outcome, successes, trials))
    if (successes is None) != (trials is None):
        raise DataError("give both successes= and trials= for k-of-n counts, or neither")
    counts = successes is not None
    if not counts and outcome is None:
        raise DataError("name the outcome column (outcome=) or the count columns (successes=, trials=)")
    outcome_cols = [successes, trials] if counts else [outcome]
    required = [c for c in (model, item, run) if c is not None] + outcome_cols
    require_columns(df, required, source)
    roles = set(required)
    if counts and outcome in df.columns and outcome not in roles:
        roles.add(outcome)  # a stale binary column beside counts is not a slice
    slices = tuple(str(c) for c in df.columns if c not in roles)
    schema = RunsSchema(item=item, model=model, run=run, outcome=None if counts else outcome,
                        successes=successes, trials=trials, slices=slices)
    check_hashable(df, [c for c in (model, item, run) if c is not None] + list(slices), source)
    df = _validate(df, schema, source=source, allow_fractional=allow_fractional, missing=missing,
                   check_keys=True, copied=True)

    for col in (model, item, run):
        if col is not None:
            df[col] = _as_factor(df[col])
    for col in slices:
        if not pd.api.types.is_numeric_dtype(df[col]) or pd.api.types.is_bool_dtype(df[col]):
            df[col] = _as_factor(df[col])

    df.attrs["evalmix"] = schema.to_dict()
    _remember(schema, df.columns)
    _design_warnings(df, schema, item=item, model=model)
    return df


# ------------------------------------------------------------------------ validation shared by all

_DEFAULT_ROLES = {"item": "item", "model": "model", "run": "run", "outcome": "correct"}
_ROLE_NAMES = ("item", "model", "run", "outcome", "successes", "trials")
# Tables read_runs returned with roles other than the defaults, by their column set.  pandas drops
# df.attrs on merge (and on concat of tables with different attrs); a later table holding all those
# columns but no recorded roles would otherwise be read with the defaults, silently taking another
# column named "correct" as the outcome.  Such a table must name its roles again.
_NON_DEFAULT: OrderedDict[frozenset, RunsSchema] = OrderedDict()
_NON_DEFAULT_MAX = 64


def _remember(schema: RunsSchema, columns: pd.Index) -> None:
    defaults = RunsSchema(item="item", model="model", run="run", outcome="correct")
    if all(getattr(schema, r) == getattr(defaults, r) for r in _ROLE_NAMES):
        return
    key = frozenset(map(str, columns))
    _NON_DEFAULT[key] = schema
    _NON_DEFAULT.move_to_end(key)
    while len(_NON_DEFAULT) > _NON_DEFAULT_MAX:
        _NON_DEFAULT.popitem(last=False)


def _lost_roles(columns: pd.Index, resolved: dict[str, str | None], given: dict[str, str | None]) -> str:
    """A hint when ``columns`` contain a table read_runs read with other roles than ``resolved``."""
    present = set(map(str, columns))
    for key, schema in reversed(_NON_DEFAULT.items()):
        if not key <= present:
            continue
        # a role the defaults filled with another column than the one read_runs was told; a role
        # it was told to leave out (run=None) is not one: remembered, it would refuse every later
        # table with those columns, the same table read afresh included
        differ = [f"{r}={getattr(schema, r)!r}" for r in _ROLE_NAMES
                  if given.get(r) is None and resolved.get(r) is not None
                  and getattr(schema, r) is not None and getattr(schema, r) != resolved.get(r)]
        if differ:
            return ", ".join(differ)
    return ""


def _where(source: RunsData | None) -> str:
    """``"runs.csv: "`` for a file, ``""`` for a DataFrame: the prefix of messages."""
    return f"{source}: " if isinstance(source, (str, Path)) else ""


def require_columns(df: pd.DataFrame, cols: Sequence[str | None], source: RunsData | None = None,
                    hint: str = "") -> None:
    """DataError listing the columns present when any of ``cols`` (None entries skipped) is absent."""
    missing = [c for c in dict.fromkeys(cols) if c is not None and c not in df.columns]
    if missing:
        raise DataError(f"{_where(source)}missing column(s) {', '.join(map(repr, missing))}; the table "
                        f"has columns: {', '.join(map(repr, map(str, df.columns)))}{hint}")


def _validate(df: pd.DataFrame, schema: RunsSchema, *, source: Any, allow_fractional: bool | str,
              missing: str, check_keys: bool, copied: bool) -> pd.DataFrame:
    """The rules of :func:`read_runs`: non-empty, no missing values in keys or outcome, a 0/1 outcome
    (or valid k-of-n counts), unique keys.  Returns ``df`` or a copy with a numeric outcome."""
    check_choice(missing, "missing", MISSING_POLICIES)
    where = _where(source)
    if len(df) == 0:
        raise DataError(f"{where}the runs table is empty (no rows)")
    outcome_cols: list[str] = list(schema.count_columns) if schema.counts else \
        [schema.outcome] if schema.outcome is not None else []
    key_cols = schema.keys
    checked = list(dict.fromkeys(key_cols + outcome_cols))
    na = df[checked].isna()
    if na.to_numpy().any():
        bad = na.any(axis=1)
        if missing == "drop":
            cols = [c for c in checked if na[c].any()]
            warnings.warn(f"{where}dropped {int(bad.sum())} of {len(df)} row(s) with missing values "
                          f"(NaN/None) in column(s) {', '.join(map(repr, cols))}", DataWarning, stacklevel=4)
            df = df.loc[~bad.to_numpy()]
            copied = False
            if len(df) == 0:
                raise DataError(f"{where}no rows left after dropping rows with missing values")
        else:
            col = next(c for c in checked if na[c].any())
            role = "outcome" if col in outcome_cols else \
                "key" if col in (schema.item, schema.model, schema.run) else ""
            if role == "outcome" and "status" in df.columns:  # harness samples, unscored ones kept
                raise DataError(
                    f"{where}outcome column {col!r} is missing in {int(na[col].sum())} row(s) and the "
                    "table has a 'status' column: unscored samples (errors, cancellations) cannot be "
                    "analysed here; pass evalmix.status.scored_rows(data) to use the scored ones, and "
                    "see evalmix.accuracy_bounds() for what the others could change")
            raise DataError(f"{where}{role + ' ' if role else ''}column {col!r} has {int(na[col].sum())} missing value(s) "
                            f"(NaN/None) in rows: " + show_rows(df, na[col], key_cols[:3] + [col])
                            + " (pass missing='drop' to drop such rows with a warning)")
    if schema.counts:
        succ, tri = schema.count_columns
        k, n = _check_counts(df, succ, tri, where)
        if copied or k.dtype != df[succ].dtype or n.dtype != df[tri].dtype:
            df = df if copied else df.copy()
            copied = True
            df[succ], df[tri] = k, n
    elif schema.outcome is not None:
        out = schema.outcome
        y = _check_binary(df, out, allow_fractional, where)
        if copied or not pd.api.types.is_numeric_dtype(df[out]) or pd.api.types.is_bool_dtype(df[out]):
            df = df if copied else df.copy()
            copied = True
            df[out] = y
    if check_keys:
        _check_unique_keys(df, key_cols, where)
        _warn_row_ids(df, schema, where)
    return df


#: Rows looked at first for a repeated value: a real slice repeats within them, so the full
#: uniqueness test runs only for columns that may be row ids.
_ID_PROBE = 1000


def _warn_row_ids(df: pd.DataFrame, schema: RunsSchema, where: str) -> None:
    """Warn when a slice that differs on every row (a row id) is all that keeps keys unique.

    Such a column (a sample id, a timestamp, a written index under another name) makes every key
    unique whatever the other slices, so a duplicated row would pass the key check unnoticed."""
    if len(df) < 2 or not schema.slices:
        return
    ids = []
    for col in schema.slices:
        values = df[col]
        try:
            if values.iloc[:_ID_PROBE].is_unique and values.is_unique:
                ids.append(col)
        except TypeError:  # unhashable cells are named elsewhere
            continue
    if not ids:
        return
    rest = [c for c in schema.keys if c not in ids]
    if not rest:
        return
    try:
        dup = df[rest].duplicated(keep=False)
    except TypeError:
        dup = df[rest].astype(str).duplicated(keep=False)
    if dup.any():
        warnings.warn(
            f"{where}column(s) {', '.join(map(repr, ids))} take a different value on every row, and only "
            f"they tell apart {int(dup.sum())} rows that share a key {tuple(rest)} (first: "
            f"{show_rows(df, dup, rest)}); if they identify rows rather than slice them, these are "
            "duplicated rows counted twice: drop the column(s) or the duplicates",
            DataWarning, stacklevel=5)


def _repeated_keys(df: pd.DataFrame, key_cols: list[str]) -> tuple[pd.DataFrame, pd.Series]:
    """The key columns (as text when a cell is unhashable) and whether each row's key repeats."""
    keys = df[key_cols]
    try:
        return keys, keys.duplicated(keep=False)
    except TypeError:  # unhashable cells (lists from JSON): compare their text
        keys = keys.astype(str)
        return keys, keys.duplicated(keep=False)


def _check_unique_keys(df: pd.DataFrame, key_cols: list[str], where: str) -> None:
    dup = _repeated_keys(df, key_cols)[1]
    if dup.any():
        raise DataError(
            f"{where}{int(dup.sum())} rows share a key {tuple(key_cols)} (the model, item, run and "
            f"slice columns); each key must appear once. First duplicates: "
            + show_rows(df, dup, key_cols))


def _check_repeated_keys(df: pd.DataFrame, key_cols: list[str], where: str) -> None:
    """Without a run column, repeated (model, item, slices) keys are attempts (pass@k data) when
    most keys repeat; when most keys appear once, the few that repeat are duplicated rows."""
    keys, dup = _repeated_keys(df, key_cols)
    if not dup.any():
        return
    single = int((~dup).sum())
    repeated = len(keys.loc[dup.to_numpy()].drop_duplicates())
    if single > repeated:
        raise DataError(
            f"{where}{repeated} key(s) {tuple(key_cols)} appear more than once while {single} appear once: "
            "duplicated rows? A table without a run column holds one row per key, or repeated "
            "attempts of every key; name the run column (run=), aggregate the attempts into "
            "successes=/trials= counts, or drop the duplicates. First repeats: "
            + show_rows(df, dup, key_cols))


def _role(name: str, given: str | None, recorded: RunsSchema | None, columns: pd.Index) -> str | None:
    """Explicit argument > role recorded by read_runs (if its column is still there) > default name
    (if such a column exists) > None."""
    if given is not None:
        return given
    if recorded is not None:
        value = getattr(recorded, name)
        if value is not None and value in columns:
            return value
    default = _DEFAULT_ROLES[name]
    return default if default in columns else None


def ensure_runs(
    data: str | Path | pd.DataFrame,
    *,
    item: str | None = None,
    model: str | None = None,
    run: str | None = None,
    outcome: str | None = None,
    successes: str | None = None,
    trials: str | None = None,
    need_item: bool = False,
    need_model: bool = False,
    need_run: bool = False,
    by: Sequence[str] = (),
    factors: Sequence[str] = (),
    allow_fractional: bool | str = False,
    missing: str = "raise",
    encoding: str | None = None,
    check_outcome: bool = True,
    formula: bool = False,
) -> tuple[pd.DataFrame, RunsSchema]:
    """Resolve the column roles of a runs table and validate it with :func:`read_runs`'s rules.

    Every analysis function that takes a runs table calls this first, so a raw DataFrame, a file
    path and a :func:`read_runs` table are held to the same rules.  It is cheap (a few
    milliseconds for 10,000 rows) and runs on every call: roles recorded in ``df.attrs`` are lost
    by ``merge`` (and by ``concat`` of tables with different roles), so nothing is cached.

    Parameters
    ----------
    data : path or DataFrame
        The runs table, or a file :func:`load_table` reads.
    item, model, run, outcome : str, optional
        Column names.  Each role is the explicit argument, else the role recorded by
        :func:`read_runs` (when that column is still present), else the default name ``item``,
        ``model``, ``run``, ``correct`` when the table has such a column.
    successes, trials : str, optional
        k-of-n count columns, given together (or recorded by :func:`read_runs`) instead of
        ``outcome``.
    need_item, need_model, need_run : bool
        Whether the caller needs that role; a needed role whose column is absent is a DataError.
    by : sequence of str
        Further columns the caller uses (slices, grouping columns); they must exist.
    factors : sequence of str
        Columns the caller uses as factors: each must have at least two distinct values.
    allow_fractional : bool or "any"
        Accept outcomes anywhere in [0, 1] (partial credit), for methods that average scores;
        ``"any"``: any finite number (scores on another scale, for variance decompositions).
    missing : {"raise", "drop"}
        A missing value (NaN/None) in a key, slice or outcome column is a DataError naming the rows
        (``"raise"``), or the row is dropped with a DataWarning saying how many (``"drop"``).
    encoding : str, optional
        Text encoding when ``data`` is a path (see :func:`load_table`).
    check_outcome : bool
        False when the caller checks a response of its own (a model formula's ``cbind(k, f)``):
        no outcome role is resolved and every column but item, model and run is a slice.
    formula : bool
        True for a model fit, whose formula names every column it reads: the roles then serve only
        the duplicated-key check, so a table that looks like one read earlier with other roles
        (whose recorded roles pandas dropped) is not refused for it.

    Returns
    -------
    (DataFrame, RunsSchema)
        The table (the caller's object when nothing had to change, else a copy; never modified in
        place) with the roles recorded in ``attrs``, and the resolved roles.  Every column that
        is not a role is a slice, as in :func:`read_runs`.

    Raises
    ------
    DataError
        A missing column (listing the columns present), an empty table, a missing value, an
        outcome outside {0, 1} (or a string outcome), bad counts, a duplicated (model, item, run,
        slices) key, a one-level factor.  The message names the column and shows the rows.

    Notes
    -----
    Duplicated keys: with a run column, each (model, item, run, slices) key must appear once.
    Without one, rows that repeat a (model, item, slices) key are repeated attempts (pass@k data,
    a binomial GLMM's rows) when most keys repeat; when most keys appear once, the few repeated
    ones are duplicated rows and a DataError names them rather than count them twice (name the
    run column, or give k-of-n counts).  A table without model or item roles is not checked.  A
    pandas index written with the table (``Unnamed: 0``, which would make every key unique) is
    dropped first, with a DataWarning (see :func:`drop_written_index`).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"model": ["a", "a", "b", "b"], "item": [1, 2, 1, 2],
    ...                    "run": [1, 1, 1, 1], "correct": [1, 0, 1, 2]})
    >>> try:
    ...     ensure_runs(df)
    ... except DataError as exc:
    ...     print(exc)  # doctest: +ELLIPSIS
    outcome column 'correct' must be 0/1 or True/False; offending rows: row 3: correct=2 (for ...)
    >>> table, schema = ensure_runs(df.assign(correct=[1, 0, 1, 1]))
    >>> schema.keys, schema.outcome
    (['model', 'item', 'run'], 'correct')
    """
    data = at_the_door(data)
    if isinstance(data, pd.DataFrame):
        df, source = data, None
    elif isinstance(data, (str, Path)):
        df, source = load_table(data, encoding=encoding, ids=(model or "model", item or "item", run or "run", *by, *factors)), data
    else:
        raise DataError(f"expected a runs table (DataFrame) or a path to one, got {type(data).__name__}")
    df = drop_written_index(df, source, keep=(item, model, run, outcome, successes, trials, *by, *factors))
    cols = df.columns
    recorded = schema_of(df)
    outcome_arg, successes_arg = outcome, successes
    if (successes is None) != (trials is None):
        raise DataError("give both successes= and trials= for k-of-n counts, or neither")
    if successes is None and outcome is None and recorded is not None and recorded.counts \
            and recorded.successes in cols and recorded.trials in cols:
        successes, trials = recorded.successes, recorded.trials
    counts = successes is not None
    if not check_outcome:
        outcome = successes = trials = None
        counts = False
    elif not counts:
        outcome = _role("outcome", outcome, recorded, cols) or _DEFAULT_ROLES["outcome"]
    names = {r: _role(r, v, recorded, cols) for r, v in (("item", item), ("model", model), ("run", run))}
    needed = {"item": need_item, "model": need_model, "run": need_run}
    wanted = [names[r] or (_DEFAULT_ROLES[r] if needed[r] else None) for r in names]
    wanted += [successes, trials] if counts else [outcome] if check_outcome else []
    wanted += [str(b) for b in by] + [str(f) for f in factors]
    hint = ""
    stem = outcome if not counts else successes
    merged = [c for c in (f"{stem}_x", f"{stem}_y") if c in cols]
    if merged:
        hint = (f" (columns {merged} look like a merge of two tables that both have {stem!r}: "
                "rename one, or pass outcome=)")
    elif recorded is None and check_outcome and not counts and outcome not in cols:
        hint = (" (name the outcome column with outcome=; roles recorded by read_runs are lost by "
                "pandas merge/concat, so pass them again or re-read the table)")
    absent_roles = [f"{r}=" for r in names if names[r] is None and needed[r] and _DEFAULT_ROLES[r] not in cols]
    if not hint and absent_roles:
        hint = f" (name the {', '.join(r[:-1] for r in absent_roles)} column with {', '.join(absent_roles)})"
    require_columns(df, wanted, source, hint)
    if recorded is None and check_outcome and not formula:
        resolved = dict(names, outcome=outcome, successes=successes, trials=trials)
        given = {"item": item, "model": model, "run": run, "outcome": outcome_arg,
                 "successes": successes_arg, "trials": successes_arg}
        lost = _lost_roles(cols, resolved, given)
        if lost:
            raise DataError(
                f"{_where(source)}this table holds the columns of a table read_runs read with {lost}, "
                "but not its recorded roles (pandas merge and concat drop them): name the roles "
                "again (e.g. " + lost.split(", ")[0] + ") or call read_runs on the result")
    roles = {names["item"], names["model"], names["run"], outcome, successes, trials} - {None}
    if not check_outcome and recorded is not None and recorded.outcome in cols:
        roles.add(recorded.outcome)
    if counts and (outcome_arg or _DEFAULT_ROLES["outcome"]) in cols:
        roles.add(outcome_arg or _DEFAULT_ROLES["outcome"])  # a stale 0/1 column beside counts, as in read_runs
    slices = tuple(str(c) for c in cols if c not in roles)
    schema = RunsSchema(item=names["item"], model=names["model"], run=names["run"],
                        outcome=None if counts else outcome, successes=successes, trials=trials,
                        slices=slices)
    # columns the caller groups on need labels; other slices may hold JSON (a harness's metadata)
    check_hashable(df, [c for c in (names["item"], names["model"], names["run"]) if c is not None]
                   + [str(b) for b in by] + [str(f) for f in factors], source)
    df = _validate(df, schema, source=source, allow_fractional=allow_fractional, missing=missing,
                   check_keys=schema.run is not None, copied=False)
    if schema.run is None and schema.model is not None and schema.item is not None:
        _check_repeated_keys(df, schema.keys, _where(source))
        _warn_row_ids(df, schema, _where(source))
    for f in factors:
        values = df[f]
        n_levels = values.nunique()
        if n_levels < 2:
            raise DataError(f"{_where(source)}factor {str(f)!r} has a single level "
                            f"({_plain(values.iloc[0])!r}): it cannot be used as a predictor or "
                            "compared; drop it from the formula or add rows of another level")
    out = df.copy(deep=False)  # copy-on-write: cheap, and the caller's attrs stay untouched
    out.attrs = {"evalmix": schema.to_dict()}
    return out, schema
