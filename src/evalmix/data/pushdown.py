"""Aggregation pushed into the engine a lazy runs table lives in (a polars LazyFrame, a DuckDB relation...).

Accuracy and pass@k need, per (model, item, slices) cell, only the number of correct runs ``k`` out
of ``n``. For a lazy table, :func:`counts_in_engine` has that GROUP BY run by the table's own engine
through narwhals, with the checks of :func:`evalmix.ensure_runs` computed there too (no missing key
or outcome, outcomes in {0, 1}, each run once per cell); only the counts reach pandas, as a k-of-n
runs table, whose results equal those of the rows. When a check fails, or the table is not the
plain case (a recorded role, a status column, an outcome that is not integer or boolean), the table
is returned as it is and goes through the door whole, so the error names the rows as it does for
pandas.
"""

from __future__ import annotations

import glob
import importlib.util
from pathlib import Path
from typing import Any, TypeVar

import pandas as pd

from .runs import as_pandas, ensure_runs, narwhals_frame

__all__ = ["counts_in_engine"]

_T = TypeVar("_T")
# written pandas indexes and the count columns: a table holding them takes the whole-table path
_RESERVED = {"Unnamed: 0", "", "k", "n"}


def counts_in_engine(data: _T, *, model: str | None = None, item: str | None = None, run: str | None = None,
                     outcome: str | None = None) -> _T | pd.DataFrame:
    """A lazy runs table reduced by its own engine to a k-of-n table (``k``, ``n`` per cell), or
    ``data`` unchanged when it is not lazy or the reduction does not apply. A glob of Parquet files
    (``"runs/*.parquet"``) is scanned lazily by DuckDB or polars, whichever is installed, and reduced
    the same way (read whole when a rule is broken, so the error names the rows).

    The counts table has no run and no outcome column: a caller passes ``run=None`` and
    ``outcome=None`` on with it.

    Examples
    --------
    >>> import polars as pl
    >>> lazy = pl.LazyFrame({"model": ["a", "a", "a", "a"], "item": [1, 1, 2, 2],
    ...                      "run": [1, 2, 1, 2], "correct": [1, 0, 1, 1]})
    >>> counts_in_engine(lazy).sort_values("item")[["model", "item", "k", "n"]].values.tolist()
    [['a', 1, 1, 2], ['a', 2, 2, 2]]
    """
    scanned = _parquet_glob(data)
    frame = scanned if scanned is not None else narwhals_frame(data)
    if frame is None or not hasattr(frame, "collect"):  # eager tables go through the door whole
        return data
    import narwhals.stable.v2 as nw

    def whole() -> Any:  # what the reduction falls back to: the table, through the door
        return data if scanned is None else as_pandas(scanned.to_native())

    schema = frame.collect_schema()
    cols = list(schema.names())
    model_col, item_col, out_col = model or "model", item or "item", outcome or "correct"
    run_col = run or ("run" if "run" in cols else None)
    roles = {model_col, item_col, out_col, run_col} - {None}
    if roles - set(cols) or _RESERVED & set(cols) or len(roles) < 3 + (run_col is not None):
        return whole()
    dtype = schema[out_col]
    if not (dtype.is_integer() or dtype == nw.Boolean):
        return whole()
    keys = [c for c in cols if c not in (out_col, run_col)]
    y = nw.col(out_col).cast(nw.Int64)
    aggs = [y.sum().alias("k"), nw.len().alias("n"), y.min().alias("_lo"), y.max().alias("_hi"),
            nw.col(out_col).null_count().alias("_nulls")]
    if run_col is not None:
        aggs += [nw.col(run_col).n_unique().alias("_runs"), nw.col(run_col).null_count().alias("_run_nulls")]
    counts = frame.group_by(keys).agg(*aggs).collect().to_pandas()
    bad = (counts[keys].isna().any(axis=1) | (counts["_nulls"] > 0) | (counts["_lo"] < 0) | (counts["_hi"] > 1))
    if run_col is not None:
        bad |= (counts["_run_nulls"] > 0) | (counts["_runs"] != counts["n"])
    if len(counts) == 0 or bad.any():
        return whole()  # the whole table goes through the door, and the rules name the offending rows
    counts = counts[[*keys, "k", "n"]].sort_values(keys, kind="stable").reset_index(drop=True)
    return ensure_runs(counts, model=model_col, item=item_col, successes="k", trials="n")[0]


def _parquet_glob(data: object) -> Any:
    """A glob of Parquet files (``"runs/*.parquet"``) scanned lazily by DuckDB or polars, whichever is
    installed, or None (not a glob, nothing matches, or neither engine installed)."""
    if not isinstance(data, (str, Path)):
        return None
    text = str(data)
    if not any(ch in text for ch in "*?[") or not text.lower().endswith(".parquet") or not glob.glob(text):
        return None
    import narwhals.stable.v2 as nw

    for backend in ("duckdb", "polars"):
        if importlib.util.find_spec(backend) is not None:
            return nw.scan_parquet(text, backend=backend)
    return None
