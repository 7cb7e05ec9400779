"""Leaderboard-scale runs tables: stream Parquet, validate, and aggregate to k-of-n counts.

A binomial GLMM needs only, for every distinct combination of the columns its formula uses (the
fixed-effect pattern and the grouping levels), the number of correct answers ``k`` out of ``n``.
:func:`aggregate_runs` computes exactly that table from Parquet files in record batches, never
holding the raw rows as a DataFrame: each batch's key columns become integer codes (from the
Parquet dictionaries), and the counts are summed over the codes with numpy (a dense ``bincount``
over the product of the levels when that is not much larger than the data, a sort otherwise).

The rows are held to :func:`evalmix.read_runs`'s rules on the way: a missing key or outcome, an
outcome outside {0, 1}, bad counts and a duplicated (model, item, run, slices) key are errors that
name the file, the column and the offending rows.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import numpy as np
import pandas as pd

from .runs import RunsSchema
from ..core.errors import DataError, DataWarning
from ..model import factor_columns, parse_formula, random_columns
from .parquet import Filters, as_filter, open_dataset

__all__ = ["aggregate_runs", "formula_columns"]

_SHOWN = 5
# dense accumulation when the product of the levels is at most this many times the rows read
_DENSE_FACTOR = 4
_DENSE_MAX = 1 << 31


def formula_columns(formula: str, columns: Sequence[str]) -> list[str]:
    """The data columns an lme4 formula's right-hand side reads (fixed part, then grouping factors).

    Examples
    --------
    >>> formula_columns("correct ~ model * language + (1|item) + (1|item:run)",
    ...                 ["model", "language", "item", "run", "correct"])
    ['model', 'language', 'item', 'run']
    """
    parsed = parse_formula(formula)
    empty = pd.DataFrame(columns=list(columns))
    out = [c for c in factor_columns(parsed.fixed, empty)]
    out += random_columns(parsed.random, empty)
    absent = [c for c in out if c not in columns]
    if absent:
        raise DataError(f"formula {formula!r} names column(s) {', '.join(map(repr, absent))} absent from "
                        f"the data; columns: {', '.join(map(repr, columns))}")
    return list(dict.fromkeys(out))


def _sorted_levels(values: list) -> list:
    """Levels in the order R's factor() gives them (sorted; numbers numerically), as read_runs does."""
    try:
        return sorted(values)
    except TypeError:
        return sorted(values, key=str)


class _Codes:
    """Global integer codes of one key column, built batch by batch from the batch dictionaries."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.levels: list[Any] = []
        self.index = pd.Index([])
        self.parts: list[np.ndarray] = []

    def add(self, arr: Any) -> None:
        import pyarrow as pa
        import pyarrow.compute as pc

        if isinstance(arr, pa.ChunkedArray):
            arr = arr.combine_chunks()
        if not pa.types.is_dictionary(arr.type):
            arr = pc.dictionary_encode(arr)
        idx = arr.indices.to_numpy(zero_copy_only=False)
        # a file's dictionary may hold values its rows never use: only used values become levels
        used = np.flatnonzero(np.bincount(idx, minlength=len(arr.dictionary)))
        values = arr.dictionary.take(pa.array(used)).to_pylist()
        pos = self.index.get_indexer(values) if len(self.index) else np.full(len(values), -1)
        new = [v for v, p in zip(values, pos) if p < 0]
        if new:
            self.levels.extend(dict.fromkeys(new))
            self.index = pd.Index(self.levels)
            pos = self.index.get_indexer(values)
        lookup = np.full(len(arr.dictionary), -1, dtype=_code_dtype(len(self.levels)))
        lookup[used] = pos
        self.parts.append(lookup[idx])

    def finish(self) -> tuple[np.ndarray, list[Any]]:
        """Codes of every row read (renumbered so that codes follow the sorted levels) and the levels."""
        levels = _sorted_levels(self.levels)
        dtype = _code_dtype(len(levels))
        rank = np.empty(len(self.levels), dtype=dtype)
        rank[pd.Index(self.levels).get_indexer(levels)] = np.arange(len(levels), dtype=dtype)
        codes = np.empty(sum(len(p) for p in self.parts), dtype=dtype)
        at = 0
        self.parts.reverse()
        while self.parts:  # part by part, so the raw parts are freed as the codes fill
            part = self.parts.pop()
            codes[at:at + len(part)] = rank[part]
            at += len(part)
        return codes, levels


def _code_dtype(n_levels: int) -> type[np.signedinteger[Any]]:
    return np.int16 if n_levels < 2**15 else np.int32


def _combined(codes: list[np.ndarray], sizes: list[int]) -> np.ndarray:
    """One int64 cell id per row, lexicographic in the key columns."""
    cell = np.zeros(len(codes[0]) if codes else 0, dtype=np.int64)
    for c, s in zip(codes, sizes):
        cell *= s
        cell += c
    return cell


def _group(codes: list[np.ndarray], sizes: list[int], weights: list[np.ndarray]
           ) -> tuple[list[np.ndarray], np.ndarray, list[np.ndarray]]:
    """Distinct cells (codes per key column), rows per cell and the sum of each weight per cell.

    ``codes`` is emptied (its arrays are freed as soon as the cell ids are built).  Counts and
    sums come back as int64 (weights are whole numbers).
    """
    n_rows = len(codes[0])
    total = math.prod(sizes)
    cell = _combined(codes, sizes)
    codes.clear()
    if total <= max(_DENSE_FACTOR * n_rows, 1 << 20) and total <= _DENSE_MAX:
        count = np.bincount(cell, minlength=total)
        sums = []
        for w in weights:
            if w.dtype == np.int8:  # a 0/1 outcome: count the ones (no float copy of the weights)
                sums.append(np.bincount(cell[w.astype(bool)], minlength=total))
            else:
                sums.append(np.rint(np.bincount(cell, weights=w, minlength=total)).astype(np.int64))
        del cell
        if (count > 0).all():  # a full grid: no compaction copy
            cells = None
        else:
            cells = np.flatnonzero(count)
            count = count[cells]
            sums = [s[cells] for s in sums]
    else:
        order = np.argsort(cell, kind="stable")
        cell = cell[order]
        starts = np.flatnonzero(np.r_[True, cell[1:] != cell[:-1]])
        cells = cell[starts]
        del cell
        count = np.diff(np.r_[starts, n_rows])
        sums = [np.rint(np.add.reduceat(w[order], starts)).astype(np.int64) if len(starts)
                else np.zeros(0, np.int64) for w in weights]
        del order
    if cells is None:
        cells = np.arange(total, dtype=np.int64)
    out_codes: list[np.ndarray] = []
    for s in reversed(sizes):
        out_codes.append((cells % s).astype(_code_dtype(s)))
        cells //= s
    return out_codes[::-1], count, sums


def _bad_rows(batch: Any, mask: Any, cols: list[str]) -> str:
    shown = batch.filter(mask).select(cols).slice(0, _SHOWN).to_pandas().to_string(index=False)
    return shown


def aggregate_runs(
    source: str | Path | Sequence[str | Path],
    formula: str | None = None,
    *,
    keys: Sequence[str] | None = None,
    item: str = "item",
    model: str = "model",
    run: str | None = "run",
    outcome: str | None = "correct",
    successes: str | None = None,
    trials: str | None = None,
    slices: Sequence[str] | None = None,
    filters: Filters = None,
    batch_rows: int = 1 << 21,
) -> pd.DataFrame:
    """Read a Parquet runs table in batches and return k-of-n counts per combination of ``keys``.

    The result is what :func:`evalmix.read_runs` with ``successes=``/``trials=`` returns for the
    counts, so it goes straight into :func:`evalmix.glmer` (``glmer("correct ~ model + (1|item)",
    counts, trials="trials")``) and the other analyses.  Only the key, run, slice and outcome
    columns are read, and only the row groups ``filters`` can match.

    Parameters
    ----------
    source : path or list of paths
        A Parquet file, a folder of Parquet files (hive partitions ``benchmark=math/`` become
        columns) or a list of files.
    formula : str, optional
        lme4 formula of the model to fit: the keys are the columns it reads (e.g.
        ``"correct ~ model + language + (1|item)"`` gives model, language, item).
    keys : list of str, optional
        The columns to keep instead of (or besides) the formula's.  Model and item are always
        kept.
    item, model, run, outcome : str
        Column roles, as in :func:`evalmix.read_runs`.  ``run=None`` for a table without a run
        column.
    successes, trials : str, optional
        For an input that already holds k-of-n counts: they are summed.
    slices : list of str, optional
        The other columns that, with model, item and run, identify a row (default: every column
        of the data that plays no role, as in :func:`evalmix.read_runs`).  They are read for the
        duplicate-key check only, unless they are keys.
    filters : optional
        Row filter pushed down to the Parquet reader (see :func:`evalmix.data.parquet.as_filter`).
    batch_rows : int
        Rows per record batch.

    Returns
    -------
    DataFrame
        One row per distinct combination of the keys, sorted by them: the keys (model, item, run
        and text columns as categoricals with R-sorted levels, numeric columns as numbers), the
        outcome column holding the successes and ``trials`` (or the given ``successes`` and
        ``trials`` names).  ``df.attrs["evalmix"]`` records the roles as for a counts table.

    Raises
    ------
    DataError
        Naming the file, column and rows: a missing key or outcome value, an outcome outside
        {0, 1}, non-integer, negative or inconsistent counts, a duplicated (model, item, run,
        slices) key, an absent column, an empty selection.

    Examples
    --------
    >>> import tempfile, pathlib
    >>> from evalmix.simulate import glmm_runs
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> glmm_runs(3, 50, 4, rng=1).to_parquet(folder / "runs.parquet")
    >>> counts = aggregate_runs(folder, "correct ~ model + (1|item)")
    >>> counts.shape, int(counts["trials"].sum()), counts.columns.tolist()
    ((150, 4), 600, ['model', 'item', 'correct', 'trials'])
    """
    import pyarrow as pa
    import pyarrow.compute as pc

    if (successes is None) != (trials is None):
        raise DataError("give both successes= and trials= for k-of-n counts, or neither")
    counts_in = successes is not None
    if not counts_in and outcome is None:
        raise DataError("name the outcome column (outcome=) or the count columns (successes=, trials=)")
    data = open_dataset(source)
    names = data.schema.names
    where_src = ", ".join(map(str, source[:3])) if isinstance(source, (list, tuple)) else str(source)
    # the role checks above guarantee these names; the narrowing below states it for the type checker
    if successes is not None and trials is not None:
        value_cols = [successes, trials]
    else:
        assert outcome is not None
        value_cols = [outcome]
    roles = [c for c in (model, item, run) if c is not None]
    absent = [c for c in roles + value_cols if c not in names]
    if absent:
        raise DataError(f"{where_src}: missing column(s) {', '.join(map(repr, absent))}; the data has "
                        f"columns: {', '.join(map(repr, names))}")
    want = list(keys or [])
    if formula is not None:
        want += formula_columns(formula, names)
    want = list(dict.fromkeys([model, item] + [c for c in want if c not in value_cols]))
    absent = [c for c in want if c not in names]
    if absent:
        raise DataError(f"{where_src}: key column(s) {', '.join(map(repr, absent))} not in the data; "
                        f"columns: {', '.join(map(repr, names))}")
    role_set = set(roles + value_cols) | ({outcome} if counts_in and outcome in names else set())
    if slices is None:
        slices = [c for c in names if c not in role_set]
    full = list(dict.fromkeys(roles + list(slices) + want))  # identifies a raw row
    expr = as_filter(filters, data.schema)

    coders = {c: _Codes(c) for c in full}
    values: list[list[np.ndarray]] = [[] for _ in value_cols]
    scanner = data.scanner(columns=full + value_cols, filter=expr, batch_size=batch_rows)
    n_read = 0
    for tagged in scanner.scan_batches():
        batch = tagged.record_batch
        if batch.num_rows == 0:
            continue
        path = getattr(tagged.fragment, "path", where_src)
        for col in full + value_cols:
            arr = batch.column(col)
            if arr.null_count:
                role = "outcome" if col in value_cols else "key"
                raise DataError(f"{path}: {role} column {col!r} has {arr.null_count} missing value(s) "
                                f"in this file's batch; first rows:\n"
                                + _bad_rows(batch, pc.is_null(arr), [c for c in roles if c != col][:2] + [col]))
        if counts_in:
            k, n = (_whole(batch, c, path, roles) for c in value_cols)
            for bad, msg in ((k < 0, f"count column {successes!r} has negative counts"),
                             (n <= 0, f"trials column {trials!r} is 0 or negative (a row with no trials "
                                      f"carries no information; drop it)"),
                             (k > n, f"successes {successes!r} exceed trials {trials!r}")):
                if bad.any():
                    raise DataError(f"{path}: {msg} in rows:\n"
                                    + _bad_rows(batch, pa.array(bad), roles[:2] + value_cols))
            values[0].append(k)
            values[1].append(n)
        else:
            values[0].append(_binary(batch, value_cols[0], path, roles))
        for col in full:
            coders[col].add(batch.column(col))
        n_read += batch.num_rows
    if n_read == 0:
        raise DataError(f"{where_src}: no rows" + (" match the filters" if expr is not None else ""))

    codes, levels = {}, {}
    for col in full:
        codes[col], levels[col] = coders[col].finish()
        del coders[col]
    weights = [np.concatenate(v) for v in values]
    del values

    # Duplicated raw keys: columns with a single level do not split cells, so when the requested
    # keys cover every other column one grouping serves both the check and the counts.
    split = [c for c in full if len(levels[c]) > 1]
    one_pass = set(split) <= set(want)
    if not one_pass:
        dcodes, dcount, _ = _group([codes[c] for c in split], [len(levels[c]) for c in split], [])
        _no_duplicates(dcount, dcodes, split, levels, where_src, full)
        del dcodes, dcount
    for c in [c for c in full if c not in want]:
        del codes[c]
    key_codes = [codes.pop(c) for c in want]
    out_codes, n_rows, sums = _group(key_codes, [len(levels[c]) for c in want], weights)
    if one_pass:
        _no_duplicates(n_rows, out_codes, want, levels, where_src, full)
    del weights
    _design_warnings(out_codes, want, levels, n_rows, model, item, counts_in)

    out: dict[str, Any] = {}
    for col, col_codes in zip(want, out_codes):
        lev = levels[col]
        numeric = all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)
                      for v in lev)
        if col in roles or not numeric:
            # pandas takes any list-like as categories; pandas-stubs declares an Index only
            out[col] = pd.Categorical.from_codes(col_codes, categories=cast("pd.Index[Any]", lev))
        else:
            out[col] = np.asarray(lev)[col_codes]
    k_name = successes if counts_in else outcome
    n_name = trials if counts_in else "trials"
    if n_name in out or k_name in out:
        raise DataError(f"the count columns {k_name!r}, {n_name!r} clash with a key column")
    # the two count columns share one int64 block, so building the frame copies nothing large
    block = np.empty((2, len(n_rows)), dtype=np.int64)
    block[0] = sums[0]
    block[1] = sums[1] if counts_in else n_rows
    del sums, n_rows, out_codes
    df = pd.DataFrame(block.T, columns=[k_name, n_name], copy=False)
    for i, (col, values) in enumerate(out.items()):
        df.insert(i, col, values)
    schema = RunsSchema(item=item, model=model, run=run if run in want else None, outcome=None,
                        successes=k_name, trials=n_name,
                        slices=tuple(c for c in want if c not in (model, item, run)))
    df.attrs["evalmix"] = schema.to_dict()
    return df


def _binary(batch: Any, col: str, path: str, roles: list[str]) -> np.ndarray:
    import pyarrow as pa

    arr = batch.column(col)
    if pa.types.is_boolean(arr.type):
        return arr.to_numpy(zero_copy_only=False).astype(np.int8)
    if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
        raise DataError(f"{path}: outcome column {col!r} must be 0/1 or True/False; it holds "
                        f"{arr.type} values, e.g.:\n" + _bad_rows(batch, pa.array(np.arange(batch.num_rows) < _SHOWN),
                                                                  roles[:2] + [col]))
    y = arr.to_numpy(zero_copy_only=False)
    bad = (y != 0) & (y != 1)
    if bad.any():
        raise DataError(f"{path}: outcome column {col!r} must be 0/1 or True/False; offending rows:\n"
                        + _bad_rows(batch, pa.array(bad), roles[:2] + [col])
                        + "\n(for k-of-n counts use successes=/trials=)")
    return y.astype(np.int8)


def _whole(batch: Any, col: str, path: str, roles: list[str]) -> np.ndarray:
    import pyarrow as pa

    arr = batch.column(col)
    if not (pa.types.is_integer(arr.type) or pa.types.is_floating(arr.type)):
        raise DataError(f"{path}: count column {col!r} must hold whole numbers; it holds {arr.type}")
    y = arr.to_numpy(zero_copy_only=False).astype(float)
    bad = y != np.round(y)
    if bad.any():
        raise DataError(f"{path}: count column {col!r} must hold whole numbers; offending rows:\n"
                        + _bad_rows(batch, pa.array(bad), roles[:2] + [col]))
    return y


def _no_duplicates(count: np.ndarray, codes: list[np.ndarray], cols: list[str], levels: dict,
                   where: str, full: list[str]) -> None:
    dup = np.flatnonzero(count > 1)
    if len(dup):
        first = {c: levels[c][codes[j][dup[0]]] for j, c in enumerate(cols)}
        raise DataError(f"{where}: {int(count[dup].sum())} rows share a (model, item, run, slices) key "
                        f"{tuple(full)} in {len(dup)} cell(s); each key must appear once. First "
                        f"duplicate: {first} ({int(count[dup[0]])} rows)")


def _design_warnings(codes: list[np.ndarray], cols: list[str], levels: dict, n_rows: np.ndarray,
                     model: str, item: str, counts_in: bool) -> None:
    """read_runs's design warnings, computed on the cells' codes (model and item lead ``cols``)."""
    # no single-level warning: as in read_runs, a fit refuses such a factor where it is a predictor
    n_models, n_items = len(levels[model]), len(levels[item])
    if n_models > 1:
        m, i = codes[0], codes[1]
        if len(cols) > 2:  # several cells per (model, item): keep one
            pair = m.astype(np.int64) * n_items + i
            if n_models * n_items <= _DENSE_MAX:
                seen = np.zeros(n_models * n_items, dtype=bool)
                seen[pair] = True
                pair = np.flatnonzero(seen)
                del seen
            else:
                pair = np.unique(pair)
            m, i = pair // n_items, pair % n_items
        per_item = np.bincount(i, minlength=n_items)
        missing = np.flatnonzero(per_item < n_models)
        if len(missing):
            per_model = np.bincount(m, minlength=n_models)
            short = np.flatnonzero(per_model < n_items)
            shown = ", ".join(f"{levels[model][j]!r} ({per_model[j]} items)" for j in short[:10])
            more = f" and {len(short) - 10} more" if len(short) > 10 else ""
            warnings.warn(f"unbalanced design: {len(missing)} item(s) in {item!r} were not answered by every "
                          f"model (e.g. {levels[item][missing[0]]!r}); models missing items: {shown}{more}",
                          DataWarning, stacklevel=3)
        single = np.flatnonzero(per_item == 1)
        if len(single):
            warnings.warn(f"{len(single)} item(s) in {item!r} were answered by only one model (e.g. "
                          f"{levels[item][single[0]]!r}): they carry no information on model differences",
                          DataWarning, stacklevel=3)
    if not counts_in and len(n_rows) and n_rows.min() != n_rows.max():
        warnings.warn(f"unbalanced design: the number of rows (runs) per {tuple(cols)} cell varies between "
                      f"{int(n_rows.min())} and {int(n_rows.max())}", DataWarning, stacklevel=3)
