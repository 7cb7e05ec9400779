"""Parquet files and partitioned Parquet folders as pyarrow datasets.

:func:`open_dataset` opens a ``.parquet`` file, a folder of them (hive partitions such as
``benchmark=math/part-0.parquet`` become columns) or a list of files, reading text columns as
dictionaries (codes, not strings).  :func:`read_parquet` turns a dataset into a DataFrame reading
only the named columns and only the row groups a filter can match.  Filters are pyarrow
expressions, DNF lists ``[("benchmark", "==", "math"), ("run", "<", 3)]`` or a dict
``{"benchmark": ["math", "code"]}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias, cast

import numpy as np
import pandas as pd

from ..core.errors import DataError

__all__ = ["as_filter", "open_dataset", "read_parquet"]

if TYPE_CHECKING:  # pyarrow is imported on first use (an optional dependency)
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.dataset as pads

# a pyarrow expression, (column, op, value) tuples ANDed (a list of such lists is ORed), or
# {column: value or values}
Filters: TypeAlias = ("pc.Expression | list[tuple[str, str, Any]] | list[list[tuple[str, str, Any]]]"
                      " | Mapping[str, Any] | None")


def _pyarrow() -> Any:
    try:
        import pyarrow  # noqa: F401
        import pyarrow.dataset as ds
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise DataError("reading Parquet needs pyarrow: pip install 'evalmix[parquet]'") from exc
    return ds


def open_dataset(source: str | Path | Sequence[str | Path]) -> pads.Dataset:
    """A ``pyarrow.dataset.Dataset`` over a Parquet file, a (hive-partitioned) folder or a list of files.

    Text columns are read dictionary-encoded.  Raises DataError naming the path when it does not
    exist, holds no Parquet file or cannot be read.

    Examples
    --------
    >>> import pandas as pd, tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> pd.DataFrame({"model": ["a", "b"], "correct": [1, 0]}).to_parquet(folder / "p0.parquet")
    >>> open_dataset(folder).schema.names
    ['model', 'correct']
    """
    ds = _pyarrow()
    import pyarrow as pa

    paths = [Path(source)] if isinstance(source, (str, Path)) else [Path(p) for p in source]
    for p in paths:
        if not p.exists():
            raise DataError(f"{p}: no such file or folder")
    where = ", ".join(map(str, paths[:3])) + (" ..." if len(paths) > 3 else "")
    args = [str(p) for p in paths] if len(paths) > 1 or paths[0].is_file() else str(paths[0])
    try:
        probe = ds.dataset(args, format="parquet", partitioning="hive", exclude_invalid_files=True)
        text = [f.name for f in probe.schema if pa.types.is_string(f.type) or pa.types.is_large_string(f.type)]
        fmt = ds.ParquetFileFormat(read_options={"dictionary_columns": text}) if text else "parquet"
        data = ds.dataset(args, format=fmt, partitioning="hive", exclude_invalid_files=True)
    except (OSError, ValueError, TypeError) as exc:  # ArrowInvalid is a ValueError
        raise DataError(f"{where}: cannot be read as Parquet ({type(exc).__name__}: {exc})") from exc
    if not data.files:
        raise DataError(f"{where}: holds no Parquet file")
    return data


def as_filter(filters: Filters, schema: pa.Schema | None = None) -> pc.Expression | None:
    """A pyarrow expression from an expression, a DNF list of tuples or a ``{column: values}`` dict.

    Columns are checked against ``schema`` when given (DataError naming the column).

    Examples
    --------
    >>> import pyarrow as pa
    >>> t = pa.table({"benchmark": ["math", "code", "chem"], "run": [1, 1, 2]})
    >>> t.filter(as_filter({"benchmark": ["math", "chem"], "run": 1}))["benchmark"].to_pylist()
    ['math']
    >>> t.filter(as_filter([("run", ">", 1)]))["benchmark"].to_pylist()
    ['chem']
    """
    _pyarrow()
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    if filters is None:
        return None
    if isinstance(filters, pc.Expression):
        expr = filters
        names: list[str] = []
    elif isinstance(filters, Mapping):
        names = list(filters)
        expr = None
        for col, val in filters.items():
            if isinstance(val, (list, tuple, set, frozenset, np.ndarray, pd.Index, pd.Series)):
                e = pc.field(col).isin(list(val))
            else:
                e = pc.field(col) == val
            expr = e if expr is None else expr & e
    elif isinstance(filters, list):
        # a list of tuples is one AND group; mypy cannot narrow the list's element type by [0]
        groups = cast(list[list[tuple[str, str, Any]]],
                      filters if filters and isinstance(filters[0], list) else [filters])
        names = [t[0] for g in groups for t in g]
        try:
            expr = pq.filters_to_expression(filters)
        except (TypeError, ValueError) as exc:
            raise DataError(f"filters must be (column, op, value) tuples, e.g. [('run', '==', 1)]: {exc}") from exc
    else:
        raise DataError("filters must be a pyarrow expression, a list of (column, op, value) tuples or a "
                        f"{{column: values}} dict, got {type(filters).__name__}")
    if schema is not None:
        absent = [n for n in dict.fromkeys(names) if n not in schema.names]
        if absent:
            raise DataError(f"filter column(s) {', '.join(map(repr, absent))} not in the data; columns: "
                            f"{', '.join(map(repr, schema.names))}")
    return expr


def read_parquet(source: str | Path | Sequence[str | Path], *, columns: Sequence[str] | None = None,
                 filters: Filters = None) -> pd.DataFrame:
    """Read a Parquet file or folder into a DataFrame: only ``columns``, only rows matching ``filters``.

    Text columns come back as categoricals (from the Parquet dictionaries, never as millions of
    Python strings).

    Examples
    --------
    >>> import pandas as pd, tempfile, pathlib
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> for b in ["math", "code"]:
    ...     (folder / f"benchmark={b}").mkdir()
    ...     pd.DataFrame({"model": ["a", "b"], "correct": [1, 0]}).to_parquet(folder / f"benchmark={b}" / "p.parquet")
    >>> read_parquet(folder, columns=["benchmark", "model", "correct"], filters={"benchmark": "math"})
      benchmark model  correct
    0      math     a        1
    1      math     b        0
    """
    data = open_dataset(source)
    if columns is not None:
        columns = list(columns)
        absent = [c for c in columns if c not in data.schema.names]
        if absent:
            raise DataError(f"{_label(source)}: column(s) {', '.join(map(repr, absent))} not in the data; "
                            f"columns: {', '.join(map(repr, data.schema.names))}")
    expr = as_filter(filters, data.schema)
    try:
        table = data.to_table(columns=columns, filter=expr)
    except (OSError, ValueError, TypeError) as exc:
        raise DataError(f"{_label(source)}: cannot be read as Parquet ({type(exc).__name__}: {exc})") from exc
    df = table.to_pandas()
    for c in df.columns:  # a hive partition read as dictionary<string> keeps its categories' order
        if isinstance(df[c].dtype, pd.CategoricalDtype):
            df[c] = df[c].cat.remove_unused_categories()
    return df


def _label(source: Any) -> str:
    if isinstance(source, (list, tuple)):
        return ", ".join(map(str, source[:3])) + (" ..." if len(source) > 3 else "")
    return str(source)
