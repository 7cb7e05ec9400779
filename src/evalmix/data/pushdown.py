"""Aggregation pushed into the engine a lazy runs table lives in: a Parquet path or glob (scanned by
DuckDB or polars), a DuckDB relation, a polars LazyFrame, a Dask DataFrame or a PySpark DataFrame.

Accuracy and pass@k need, per (model, item, slices) cell, only the number of correct runs ``k`` out
of ``n``; a binomial GLMM needs the same per cell of the variables its formula reads. For a lazy
table, :func:`counts_in_engine` and :func:`formula_counts` have that GROUP BY run by the table's own
engine through narwhals (one code path for every engine), with the checks of
:func:`evalmix.ensure_runs` computed there too (no missing key or outcome, outcomes in {0, 1}, each
run once per cell); only the counts reach pandas, and the results equal those of the rows.

When a check fails, a small table is read whole and goes through the door, so the error names the
rows as it does for pandas; a large one (more than ``WHOLE_MAX`` rows) sends only the offending rows
to the same checks, so the error names the column and shows those rows. A table that is not the
plain case (a status column, an outcome that is not numeric or boolean) is read whole.
"""

from __future__ import annotations

import functools
import glob
import importlib.util
import sys
import time
import warnings
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd

from .runs import as_pandas, ensure_runs, narwhals_frame

if TYPE_CHECKING:
    import narwhals.stable.v2 as nw

__all__ = ["WHOLE_MAX", "counts_in_engine", "formula_counts", "lazy_frame", "parquet_files", "read_source",
           "scan_columns"]

_T = TypeVar("_T")
# written pandas indexes and the count columns: a table holding them takes the whole-table path
_RESERVED = {"Unnamed: 0", "", "k", "n"}
# a table that breaks a rule is read whole (errors name its rows as for pandas) up to this many rows;
# above it only the offending rows reach Python
WHOLE_MAX = 5_000_000
_HEAD = 1000  # rows the checks read to name a missing column
# the duplicate-run check by bits: runs per 64-bit word (a cell of at most _RUN_SPAN rows sums to
# below 2^59 in each), and the widest span of run values it takes
_WORD, _RUN_SPAN = 50, 400
# on Dask the bits are summed as floats per partition (exact below 2^53), then as int64 per cell (at
# most as many partitions as the cell has rows, each clipped to 2^_DASK_WORD): 53 bits a word
_DASK_WORD = 53
# a partition's cells are numbered by their keys' codes in mixed radix while the numbers stay below
# _DASK_RADIX (then renumbered), and counted in an array of all numbers up to _DASK_DENSE of them (or
# as many as the partition has rows); past that, the numbers seen are renumbered first
_DASK_RADIX, _DASK_DENSE = 2**61, 1 << 16


def lazy_frame(data: object) -> nw.LazyFrame[Any] | None:
    """``data`` as a narwhals LazyFrame when it is lazy (a Parquet path, directory or glob; a DuckDB
    relation; a polars LazyFrame; a Dask or PySpark DataFrame), else None.

    Examples
    --------
    >>> import polars as pl
    >>> type(lazy_frame(pl.LazyFrame({"a": [1]}))).__name__, lazy_frame(pl.DataFrame({"a": [1]}))
    ('LazyFrame', None)
    """
    import narwhals.stable.v2 as nw

    scanned = _parquet_scan(data)
    frame = scanned if scanned is not None else narwhals_frame(data)
    return frame if isinstance(frame, nw.LazyFrame) else None


def counts_in_engine(data: _T, *, model: str | None = None, item: str | None = None, run: str | None = None,
                     outcome: str | None = None, by: Sequence[str] | None = None) -> _T | pd.DataFrame:
    """A lazy runs table reduced by its own engine to a k-of-n table (``k``, ``n`` per cell), or
    ``data`` unchanged when it is not lazy or the reduction does not apply. A Parquet file, folder
    or glob (``"runs/*.parquet"``) is scanned lazily by DuckDB or polars, whichever is installed,
    and reduced the same way (read whole when a rule is broken, so the error names the rows).

    The counts table has no run and no outcome column: a caller passes ``run=None`` and
    ``outcome=None`` on with it. With ``by`` (grouping columns) the counts are summed further to
    one row per group in the engine (the checks still per cell): what a binomial interval per
    group needs, with no model or item role unless ``by`` holds them.

    Examples
    --------
    >>> import polars as pl
    >>> lazy = pl.LazyFrame({"model": ["a", "a", "a", "a"], "item": [1, 1, 2, 2],
    ...                      "run": [1, 2, 1, 2], "correct": [1, 0, 1, 1]})
    >>> counts_in_engine(lazy).sort_values("item")[["model", "item", "k", "n"]].values.tolist()
    [['a', 1, 1, 2], ['a', 2, 2, 2]]
    """
    frame = lazy_frame(data)
    if frame is None:  # eager tables go through the door whole
        return data
    import narwhals.stable.v2 as nw

    cols = list(frame.collect_schema().names())
    model_col, item_col, out_col = model or "model", item or "item", outcome or "correct"
    run_col = run or ("run" if "run" in cols else None)
    roles = {model_col, item_col, out_col, run_col} - {None}

    by_cols = None if by is None else list(dict.fromkeys(by))

    def check(rows: pd.DataFrame) -> object:
        return ensure_runs(rows, model=model, item=item, run=run, outcome=outcome, by=by_cols or ())

    if roles - set(cols) or set(by_cols or ()) - set(cols):
        _check_head(frame, check)  # an absent column: the checks name it (or a recorded role makes it right)
        return _whole(data, frame)
    dtype = frame.collect_schema()[out_col]
    if _RESERVED & set(cols) or len(roles) < 3 + (run_col is not None) \
            or not (dtype.is_numeric() or dtype == nw.Boolean):
        return _whole(data, frame)  # text outcomes: the pandas path reads (or refuses) them
    cells = [c for c in cols if c not in (out_col, run_col)]
    keys = cells if by_cols is None else [c for c in cells if c in by_cols]
    counts = _reduce(frame, cells, keys, out_col, run_col, check)
    if counts is None:
        return _whole(data, frame)
    return ensure_runs(counts, model=model_col if model_col in keys else None,
                       item=item_col if item_col in keys else None, successes="k", trials="n")[0]


def formula_counts(data: object, outcome: str, keys: Sequence[str], *,
                   check: Callable[[pd.DataFrame], object], trials: str = "_trials") -> pd.DataFrame | None:
    """A lazy runs table reduced by its own engine to k-of-n counts per cell of ``keys`` (the
    variables a binomial GLMM formula reads: its fixed part, offsets and grouping factors), for
    :func:`evalmix.glmer`: the 0/1 ``outcome`` column then holds the successes ``k`` and
    ``trials`` the trials ``n``. None when ``data`` is not lazy or the outcome is not numeric or
    boolean; ``check`` (the pandas path's validation) raises the error of a broken rule (an absent
    column: on the first rows; a bad value: on the offending rows, or on the whole table when it is
    small).

    The checks are those of the rows: no missing value, a 0/1 outcome, and, when the table has a
    run column, each (model, item, run, slices) key once (slices: every other column).

    Examples
    --------
    >>> import polars as pl
    >>> lazy = pl.LazyFrame({"model": ["a", "a", "b", "b"], "item": [1, 1, 1, 2], "run": [1, 2, 1, 1],
    ...                      "correct": [1, 0, 1, 1]})
    >>> formula_counts(lazy, "correct", ["model", "item"], check=print).values.tolist()
    [['a', 1, 1, 2], ['b', 1, 1, 1], ['b', 2, 1, 1]]
    """
    frame = lazy_frame(data)
    if frame is None:
        return None
    import narwhals.stable.v2 as nw

    schema = frame.collect_schema()
    cols = list(schema.names())
    keys = list(keys)
    if not keys or outcome not in cols or any(c not in cols or c == outcome for c in keys) or trials in cols:
        _check_head(frame, check)
        return None
    dtype = schema[outcome]
    if not (dtype.is_numeric() or dtype == nw.Boolean):
        return None  # text labels: R's factor rule, on the rows
    # a run column (found by its conventional name, as check_data does) makes each key unique
    has_run = "run" in cols
    run_col = "run" if has_run and "run" not in keys else None
    cells = [c for c in cols if c not in (outcome, run_col)]
    counts = _reduce(frame, cells, keys, outcome, run_col, check, unique_cells=has_run and run_col is None)
    if counts is None:
        return None
    counts = counts.rename(columns={"k": outcome, "n": trials})
    return counts[[*keys, outcome, trials]]


def _reduce(frame: Any, cells: list[str], keys: list[str], out_col: str, run_col: str | None,
            check: Callable[[pd.DataFrame], object], *, unique_cells: bool = False,
            span: tuple[int, int] | None | bool = True) -> pd.DataFrame | None:
    """The GROUP BY: checks per ``cells`` (the rows' keys without the run), counts per ``keys`` (a
    subset of ``cells``); the counts sorted by ``keys``, or None when a rule is broken and the
    table is small enough to be read whole (a large one: the offending rows go to ``check``)."""
    import narwhals.stable.v2 as nw

    y = nw.col(out_col).cast(nw.Float64)
    # elementary aggregations only (Dask's rule): the flags are columns first, then summed
    pre = frame.with_columns(
        _y=y,
        _bad=(~y.is_in([0.0, 1.0])).fill_null(False).cast(nw.Int64),
        _ynull=y.is_null().cast(nw.Int64),
        _knull=nw.any_horizontal(*[nw.col(c).is_null() for c in cells], ignore_nulls=True).cast(nw.Int64)
        if cells else nw.lit(0, nw.Int64),
    )
    aggs = [nw.col("_y").sum().alias("k"), nw.len().alias("n"), nw.col("_bad").sum(), nw.col("_ynull").sum(),
            nw.col("_knull").sum()]
    guessed = span is True and run_col is not None and frame.collect_schema()[run_col].is_integer()
    # Dask: each partition reduced by numpy (_dask_counts), unless the runs are not integers in a span
    on_dask = frame.implementation.is_dask() and bool(cells) and bool(keys)
    if guessed:  # runs 0-149 (0-105 on Dask): 0- and 1-based runs up to 100, checked in the same
        span = (0, 2 * _DASK_WORD if on_dask else 3 * _WORD)  # query: no pass over the data to find them
    elif span is True:
        span = None
    if run_col is not None:
        pre = pre.with_columns(_rnull=nw.col(run_col).is_null().cast(nw.Int64))
        aggs.append(nw.col("_rnull").sum().alias("_run_nulls"))
    bit_sums: list[str] = []
    if on_dask and (run_col is None or isinstance(span, tuple)):
        flags = ["_bad", "_run_out", "_dup"]
        with _stage(f"{frame.implementation}: GROUP BY {', '.join(keys)}"):
            counts = _dask_counts(frame.to_native(), cells, keys, out_col, run_col,
                                  span if isinstance(span, tuple) else None, unique_cells=unique_cells)
    else:
        try:
            counts, flags, bit_sums = _collect(frame, pre, aggs, cells, keys, run_col,
                                               span if isinstance(span, tuple) else None, unique_cells)
        except Exception as exc:  # an engine's checked integer sums (Spark's ANSI mode)
            if not (isinstance(span, tuple) and "overflow" in str(exc).lower()):
                raise
            # only a cell of thousands of rows repeating a high run overflows a 64-bit word sum:
            # the check by counting distinct runs names it
            return _reduce(frame, cells, keys, out_col, run_col, check, unique_cells=unique_cells,
                           span=None)
    if guessed and run_col is not None and counts["_run_out"].sum() > 0:  # runs past the guess: their span
        return _reduce(frame, cells, keys, out_col, run_col, check, unique_cells=unique_cells,
                       span=_run_span(frame, run_col))
    if bit_sums and isinstance(span, tuple):
        ones = sum(_popcount(counts[s].fillna(0).to_numpy(dtype=np.int64)) for s in bit_sums)
        counts["_dup"] = ((counts["n"] > span[1]) | (ones != counts["n"] - counts["_run_nulls"])).astype(np.int64)
        flags.append("_dup")
    broken = counts[flags].fillna(0).to_numpy().sum() > 0 if len(counts) else True
    if broken:
        if counts["n"].sum() <= WHOLE_MAX:
            return None
        _check_offending(pre, cells, run_col, check, list(frame.collect_schema().names()))
        return None  # the checks passed the rows (a rule of this function only): the whole path
    counts = counts[[*keys, "k", "n"]].sort_values(keys, kind="stable").reset_index(drop=True)
    for c in keys:  # Dask and Spark give text as pandas' NA-backed strings: pandas' own text dtype
        if isinstance(counts[c].dtype, pd.StringDtype) and getattr(counts[c].dtype, "na_value", None) is pd.NA:
            counts[c] = counts[c].astype(str)
    counts["k"] = counts["k"].round().astype("int64")
    counts["n"] = counts["n"].astype("int64")
    return counts


def _collect(frame: Any, pre: Any, aggs: list[Any], cells: list[str], keys: list[str], run_col: str | None,
             span: tuple[int, int] | None, unique_cells: bool) -> tuple[pd.DataFrame, list[str], list[str]]:
    """The GROUP BY of ``_reduce`` through narwhals, collected: the counts with their flag columns
    (summed per ``keys``), the names of the flags, and those of the run bits' sums per cell (when
    the cells reach Python, their duplicate flag is computed there)."""
    import narwhals.stable.v2 as nw

    bit_sums: list[str] = []
    flags = ["_bad", "_ynull", "_knull"] + (["_dup", "_run_nulls"] if run_col is not None else [])
    if run_col is not None and isinstance(span, tuple):
        # integer runs spanning at most _RUN_SPAN values: run r is a bit, 2^(r - lo), summed in words of
        # _WORD bits; a cell's runs are distinct exactly when its sums hold as many ones as it has
        # runs (a repeated run carries). Sums and counts only: far cheaper than COUNT(DISTINCT)
        lo, width = span
        off = nw.col(run_col).cast(nw.Float64) - lo
        words = range(-(-width // _WORD))
        pre = pre.with_columns(_rout=((off < 0) | (off >= width)).fill_null(False).cast(nw.Int64), **{
            f"_w{w}": nw.when((off >= _WORD * w) & (off < _WORD * (w + 1)))
            .then(nw.lit(2.0) ** (off - _WORD * w).clip(0, _WORD - 1)).otherwise(nw.lit(0.0)).cast(nw.Int64)
            for w in words})
        sums = [f"_s{w}" for w in words]
        grouped = pre.group_by(cells, drop_null_keys=False).agg(
            *aggs, nw.col("_rout").sum().alias("_run_out"),
            *[nw.col(f"_w{w}").sum().alias(s) for w, s in zip(words, sums)]).with_columns(
            *[nw.col(s).cast(nw.Int64) for s in sums])
        flags.append("_run_out")
        if keys == cells:  # the cells reach Python: their ones are counted there (numpy, at once)
            bit_sums = sums
            flags.remove("_dup")
        else:  # summed further in the engine: the ones counted there, digit by digit
            ones = functools.reduce(lambda a, b: a + b, [(nw.col(s) // 2 ** b) % 2
                                                         for s in sums for b in range(min(width, _WORD) + 9)])
            grouped = grouped.with_columns(
                _dup=((nw.col("n") > width) | (ones != nw.col("n") - nw.col("_run_nulls"))).cast(nw.Int64))
    elif run_col is not None and frame.implementation.is_dask():
        # Dask's grouped n_unique counts each partition's values: count the rows per run instead
        per_run = pre.group_by([*cells, run_col], drop_null_keys=False).agg(
            nw.col("_y").sum(), nw.len().alias("_n"),
            *[nw.col(c).sum() for c in ("_bad", "_ynull", "_knull", "_rnull")])
        grouped = per_run.with_columns(_d=(nw.col("_n") > 1).cast(nw.Int64)).group_by(
            cells, drop_null_keys=False).agg(
            nw.col("_y").sum().alias("k"), nw.col("_n").sum().alias("n"), nw.col("_bad").sum(),
            nw.col("_ynull").sum(), nw.col("_knull").sum(), nw.col("_rnull").sum().alias("_run_nulls"),
            nw.col("_d").sum().alias("_dup"))
    elif run_col is not None:
        aggs.append(nw.col(run_col).n_unique().alias("_runs"))
        grouped = pre.group_by(cells, drop_null_keys=False).agg(*aggs).with_columns(
            _dup=(nw.col("_runs") != nw.col("n")).cast(nw.Int64))
    else:
        grouped = pre.group_by(cells, drop_null_keys=False).agg(*aggs) if cells else pre.select(*aggs)
    if run_col is None and unique_cells:  # the run is a key of the cells: each cell is one row
        grouped = grouped.with_columns(_dup=(nw.col("n") > 1).cast(nw.Int64))
        flags.append("_dup")
    if keys != cells:
        totals = [nw.col(c).sum() for c in ("k", "n", *flags)]
        grouped = grouped.group_by(keys, drop_null_keys=False).agg(*totals) if keys else grouped.select(*totals)
    with _stage(f"{frame.implementation}: GROUP BY {', '.join(keys) or '()'}"):
        # DuckDB sums integers as HUGEINT, which reaches pandas as Python Decimal objects (5 s
        # for 2 x 10^6 cells and five flags): counts and flags are int64 in the engine
        wide = [c for c, t in grouped.collect_schema().items() if t in (nw.Decimal, nw.Int128, nw.UInt128)]
        if wide:
            grouped = grouped.with_columns(*[nw.col(c).cast(nw.Int64) for c in wide])
        counts = grouped.collect().to_pandas()
    return counts, flags, bit_sums


def _dask_counts(data: Any, cells: list[str], keys: list[str], out_col: str, run_col: str | None,
                 span: tuple[int, int] | None, *, unique_cells: bool = False) -> pd.DataFrame:
    """The GROUP BY of ``_reduce`` on a Dask DataFrame, in one ``compute`` (the data read once): each
    partition is reduced by numpy to per-cell sums (``k``, ``n`` and the run bits of ``span``, words
    of ``_DASK_WORD`` bits) and a count of its broken rows, so that no flag column as long as the
    partition is built; Dask's tree reduction sums those small frames per cell, the duplicate flag is
    set per cell and the cells summed per ``keys``. Columns: ``keys``, ``k``, ``n``, ``_bad`` (rows
    with a missing value or an outcome outside {0, 1}), ``_run_out`` (partitions with runs outside
    ``span``), ``_dup`` (cells whose runs repeat)."""
    lo, width = span if span is not None else (0, 0)
    sums = [f"_s{w}" for w in range(-(-width // _DASK_WORD))]
    # run r is the bit 2^(r - lo) of word (r - lo) // _DASK_WORD: one look-up per row, not a power
    j = np.arange(width)
    bits = np.zeros((len(sums), width))
    bits[j // _DASK_WORD, j] = 2.0 ** (j % _DASK_WORD)
    full = 2.0**_DASK_WORD
    totals = ["k", "n", "_bad", "_run_out", "_dup"]

    def per_cell(part: pd.DataFrame) -> pd.DataFrame:
        rows = len(part)
        col = part[out_col]
        y = col.to_numpy() if isinstance(col.dtype, np.dtype) else col.to_numpy(dtype=np.float64, na_value=np.nan)
        one = y == 1
        bad = rows - int(np.count_nonzero(one)) - int(np.count_nonzero(y == 0))  # missing, or not 0/1
        # the cell of each row: its keys' codes (category codes or factorised values) in mixed radix
        cell, size = np.zeros(rows, dtype=np.int64), 1
        radix: list[tuple[str, Any, Any]] | None = []
        levels: Any
        for i, c in enumerate(cells):
            col = part[c]
            if isinstance(col.dtype, pd.CategoricalDtype):
                codes, levels = col.cat.codes.to_numpy(), col.cat.categories
            else:
                codes, levels = col.factorize(use_na_sentinel=True)
            missing = int(np.count_nonzero(codes < 0))
            if missing:  # a broken rule: the counts are not used
                bad += missing
                codes = np.maximum(codes, 0)
            if radix is not None and size * max(len(levels), 1) >= _DASK_RADIX:  # renumbered: a row of each cell
                cell, seen_cells = pd.factorize(cell)
                size, radix = len(seen_cells), None
            if i:
                cell *= max(len(levels), 1)
                cell += codes
            else:
                cell = codes.astype(np.int64)
            size *= max(len(levels), 1)
            if radix is not None:
                radix.append((c, col.dtype, levels))
        gid, keys_of = (pd.factorize(cell) if size > max(rows, _DASK_DENSE) else (cell, None))  # sparse: the seen
        size = size if keys_of is None else len(keys_of)
        # rows with outcome 0 and 1 of cell g are bins 2g and 2g + 1: n and k in one count
        pair = gid * 2
        pair += one
        both = np.bincount(pair, minlength=2 * size)
        n = both[0::2] + both[1::2]
        seen = np.flatnonzero(n)
        if radix is None:  # a row of each cell gives its keys (the last written is the first)
            first = np.empty(size, dtype=np.intp)
            first[gid[::-1]] = np.arange(rows - 1, -1, -1)
            out = part[cells].iloc[first[seen]].reset_index(drop=True)
        else:  # the keys decoded from the cell numbers
            code, columns = (seen if keys_of is None else np.asarray(keys_of)[seen]).astype(np.int64), {}
            for c, dtype, levels in reversed(radix):
                code, at = np.divmod(code, max(len(levels), 1))
                columns[c] = (pd.Categorical.from_codes(at, dtype=dtype) if isinstance(dtype, pd.CategoricalDtype)
                              else levels.take(at))
            out = pd.DataFrame({c: columns[c] for c in cells})
        out["k"] = both[1::2][seen].astype(np.int64)
        run_out = 0
        if run_col is not None:
            r = part[run_col]
            if isinstance(r.dtype, np.dtype) and r.dtype.kind in "iu":
                off = r.to_numpy()
            else:  # nullable or Arrow integers: missing runs are broken rows
                bad += int(r.isna().sum())
                off = np.nan_to_num(r.to_numpy(dtype=np.float64, na_value=np.nan)).astype(np.int64)
            off = off.astype(np.intp) - lo if lo else off.astype(np.intp, copy=False)
            run_out = int(rows > 0 and (off.min() < 0 or off.max() >= width))
            for w, name in enumerate(sums):
                # float sums are exact below 2^53, so a word's distinct bits are; a word at or past
                # 2^_DASK_WORD (clipped there, to stay an int64) can only come of a repeated run
                word = np.bincount(pair, weights=np.take(bits[w], off, mode="clip"), minlength=2 * size)
                out[name] = np.minimum((word[0::2] + word[1::2])[seen], full).astype(np.int64)
        out["n"] = n[seen].astype(np.int64)
        # the partition's counts of broken rows ride on its first cell (summed with the cells)
        out["_bad"] = out["_run_out"] = np.zeros(len(out), dtype=np.int64)
        if len(out):
            out.loc[0, "_bad"], out.loc[0, "_run_out"] = bad, run_out
        return out

    def flagged(cell: pd.DataFrame) -> pd.DataFrame:
        cell = cell.reset_index()
        if sums:  # distinct runs: as many ones in the bits' sums as rows (a repeated run carries)
            words = [cell[s].to_numpy(dtype=np.int64) for s in sums]
            ones = sum(_popcount(w) for w in words)
            carried = functools.reduce(np.logical_or, [w >= full for w in words])
            cell["_dup"] = ((cell["n"] > width) | (ones != cell["n"]) | carried).astype(np.int64)
        else:  # a run among the cells' keys: each cell one row
            cell["_dup"] = (cell["n"] > 1).astype(np.int64) if unique_cells else np.zeros(len(cell), np.int64)
        return cell[[*cells, *totals]]

    parts = data[[*cells, out_col, *([run_col] if run_col else [])]]
    parts = parts.map_partitions(per_cell, meta=per_cell(parts._meta))
    cell_sums = parts.groupby(cells, observed=True, sort=False, dropna=False).sum()
    counts = cell_sums.map_partitions(flagged, meta=flagged(cell_sums._meta))
    if keys != cells:
        counts = counts[[*keys, *totals]].groupby(keys, observed=True, sort=False, dropna=False).sum()
    out = counts.compute()
    return out.reset_index() if keys != cells else out


def _popcount(x: np.ndarray) -> np.ndarray:
    """The number of one bits of each (non-negative) int64."""
    if hasattr(np, "bitwise_count"):  # numpy >= 2.0
        return np.bitwise_count(x).astype(np.int64)
    out = np.zeros(x.shape, dtype=np.int64)
    for b in range(63):
        out += (x >> b) & 1
    return out


def _run_span(frame: Any, run_col: str) -> tuple[int, int] | None:
    """``(lowest run, number of run values it spans)`` of an integer run column spanning at most
    ``_RUN_SPAN`` values, read by one cheap query (Parquet statistics where the engine has them);
    None otherwise (the duplicate check then counts distinct runs)."""
    import narwhals.stable.v2 as nw

    if not frame.collect_schema()[run_col].is_integer():
        return None
    lo, hi = frame.select(nw.col(run_col).min().alias("lo"), nw.col(run_col).max().alias("hi")).collect().row(0)
    if lo is None or hi is None or hi - lo >= _RUN_SPAN:
        return None
    return int(lo), int(hi - lo + 1)


def _check_head(frame: Any, check: Callable[[pd.DataFrame], object]) -> None:
    """The checks on a large table's first rows, which name an absent column as they would for the
    whole table (a small table: nothing here, the caller's whole-table path names it)."""
    import narwhals.stable.v2 as nw

    if int(frame.select(nw.len()).collect().item()) > WHOLE_MAX:
        check(as_pandas(frame.head(_HEAD).collect().to_native()))


def _check_offending(pre: Any, cells: list[str], run_col: str | None,
                     check: Callable[[pd.DataFrame], object], cols: list[str]) -> None:
    """The rows that break a rule (a missing value, an outcome outside {0, 1}, or the rows of the
    cells whose runs repeat), at most ``_HEAD`` of them, through ``check``."""
    import narwhals.stable.v2 as nw

    flag = (nw.col("_bad") + nw.col("_ynull") + nw.col("_knull")) > 0
    if run_col is not None:
        flag = flag | (nw.col("_rnull") > 0)
    rows = pre.filter(flag).select(*cols).head(_HEAD).collect().to_pandas()
    if not len(rows) and run_col is not None:
        dup = (pre.group_by([*cells, run_col]).agg(nw.len().alias("_len")).filter(nw.col("_len") > 1)
               .select(*cells).head(5).collect().to_pandas())
        # the rows of those cells, by a filter (joins of lazy frames differ between engines)
        in_cells = nw.any_horizontal(*[nw.all_horizontal(*[nw.col(c) == v for c, v in zip(cells, key)],
                                                         ignore_nulls=True)
                                       for key in dup.itertuples(index=False)], ignore_nulls=True)
        rows = pre.filter(in_cells).select(*cols).head(_HEAD).collect().to_pandas()
    check(rows)


def read_source(data: _T) -> _T | pd.DataFrame:
    """A folder or glob of Parquet files read whole (through DuckDB or polars) as a pandas frame,
    which the file readers cannot open; anything else unchanged.

    Examples
    --------
    >>> read_source("runs.csv")
    'runs.csv'
    """
    if not isinstance(data, (str, Path)) or Path(data).is_file():
        return data
    frame = _parquet_scan(data)
    return data if frame is None else as_pandas(frame.collect().to_native())


def _whole(data: Any, frame: Any) -> Any:
    """What the reduction falls back to: the table, through the door (a glob of Parquet files read
    whole; a file or folder is left to the pandas path's reader)."""
    if not isinstance(data, (str, Path)) or Path(data).exists():
        return data  # a file or folder is read by the pandas path itself (with the roles it records)
    return as_pandas(frame.collect().to_native())


@contextmanager
def _stage(what: str) -> Iterator[None]:
    """A progress line on a terminal (stderr): the stage, then its time; nothing otherwise."""
    isatty = getattr(sys.stderr, "isatty", None)
    show = bool(isatty and isatty())
    t0 = time.perf_counter()
    if show:
        print(f"evalmix: {what} ...", end="", file=sys.stderr, flush=True)
    try:
        yield
    finally:
        if show:
            print(f" {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)


def parquet_files(data: object) -> str | None:
    """The Parquet source ``data`` names as a pattern DuckDB and polars scan: a ``.parquet`` file, a
    glob of them, or a folder holding them (``folder/**/*.parquet``); None otherwise.

    Examples
    --------
    >>> parquet_files("runs.csv") is None
    True
    """
    if not isinstance(data, (str, Path)):
        return None
    text = str(data)
    if any(ch in text for ch in "*?["):
        return text if text.lower().endswith(".parquet") and glob.glob(text, recursive=True) else None
    path = Path(text)
    if path.is_dir():
        return str(path / "**" / "*.parquet") if any(path.rglob("*.parquet")) else None
    return text if path.is_file() and text.lower().endswith(".parquet") else None


def _parquet_scan(data: object) -> Any:
    """A Parquet source scanned lazily by DuckDB or polars, whichever is installed, or None (not
    Parquet, nothing matches, or neither engine installed)."""
    pattern = parquet_files(data)
    if pattern is None:
        return None
    import narwhals.stable.v2 as nw

    if importlib.util.find_spec("duckdb") is not None:
        import duckdb

        # a connection of its own, without DuckDB's progress bar (stdout is the command's output)
        con = duckdb.connect()
        con.execute("SET enable_progress_bar = false")
        # a folder's key=value subfolders are columns, as read_runs reads them
        return nw.from_native(con.read_parquet(pattern, hive_partitioning=Path(str(data)).is_dir()))
    if importlib.util.find_spec("polars") is not None:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            return nw.scan_parquet(pattern, backend="polars")
    return None


def scan_columns(data: object) -> list[str] | None:
    """The column names of a lazy source (read from its schema, no rows), or None when not lazy."""
    frame = lazy_frame(data)
    return None if frame is None else list(frame.collect_schema().names())
