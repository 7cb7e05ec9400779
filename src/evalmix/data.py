"""The runs table: reading and validating the long-format input every analysis starts from.

A runs table has one row per (model, item, run, slices...) with a binary outcome, or one row per
(model, item, slices...) with k-of-n counts.  :func:`read_runs` checks it and returns a pandas
DataFrame whose factor columns are categoricals (levels sorted as R sorts them in the C locale) and
whose column roles are recorded in ``df.attrs["evalmix"]``, so later functions know which column is
the item, the model, the run and the outcome without being told again.
"""

from __future__ import annotations

import json
import warnings
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .errors import DataError, DataWarning

__all__ = ["RunsSchema", "load_table", "read_runs", "schema_of"]

_MAX_SHOWN = 5


@dataclass(frozen=True)
class RunsSchema:
    """Which column plays which role in a runs table."""

    item: str
    model: str
    run: str | None
    outcome: str | None
    successes: str | None = None
    trials: str | None = None
    slices: tuple[str, ...] = field(default_factory=tuple)

    @property
    def keys(self) -> list[str]:
        """Columns that identify a row: model, item, run (if any) and the slices."""
        return [c for c in (self.model, self.item, self.run) if c is not None] + list(self.slices)

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


def load_table(source: str | Path | pd.DataFrame) -> pd.DataFrame:
    """Load a table from a path (.csv, .parquet, .jsonl, .json) or copy a DataFrame; no validation."""
    if isinstance(source, pd.DataFrame):
        return source.copy()
    path = Path(source)
    if not path.exists():
        raise DataError(f"no such file: {path}")
    suffix = "".join(path.suffixes[-2:]).lower() if path.suffix.lower() == ".gz" else path.suffix.lower()
    if suffix in (".csv", ".csv.gz"):
        return pd.read_csv(path)
    if suffix == ".parquet":
        try:
            return pd.read_parquet(path)
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise DataError("reading .parquet needs pyarrow: pip install 'evalmix[parquet]'") from exc
    if suffix in (".jsonl", ".jsonl.gz", ".ndjson"):
        return pd.read_json(path, lines=True)
    if suffix == ".json":
        with open(path) as fh:
            return pd.DataFrame(json.load(fh))
    raise DataError(f"unsupported file type {path.suffix!r} for {path}: use .csv, .parquet or .jsonl")


def _show_rows(df: pd.DataFrame, mask: np.ndarray | pd.Series, cols: Sequence[str]) -> str:
    bad = df.loc[np.asarray(mask), list(cols)]
    shown = bad.head(_MAX_SHOWN).to_string()
    more = f"\n... and {len(bad) - _MAX_SHOWN} more" if len(bad) > _MAX_SHOWN else ""
    return f"{shown}{more}"


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


def _check_binary(df: pd.DataFrame, col: str, allow_fractional: bool) -> pd.Series:
    values = df[col]
    if values.dtype == bool or str(values.dtype) == "boolean":
        return values.astype("int8")
    numeric = pd.to_numeric(values, errors="coerce")
    not_numeric = numeric.isna() & values.notna()
    if not_numeric.any():
        raise DataError(
            f"outcome column {col!r} must be 0/1 or True/False; non-numeric values in rows:\n"
            + _show_rows(df, not_numeric, [col]))
    if allow_fractional:
        bad = (numeric < 0) | (numeric > 1)
        if bad.any():
            raise DataError(f"outcome column {col!r} must lie in [0, 1]; offending rows:\n"
                            + _show_rows(df, bad, [col]))
        return numeric.astype(float)
    bad = ~numeric.isin([0, 1])
    if bad.any():
        raise DataError(
            f"outcome column {col!r} must be 0/1 or True/False; offending rows:\n"
            + _show_rows(df, bad, [col])
            + "\n(for partial credit pass allow_fractional=True; for k-of-n counts use successes=/trials=)")
    return numeric.astype("int8")


def _check_counts(df: pd.DataFrame, successes: str, trials: str) -> tuple[pd.Series, pd.Series]:
    out = []
    for col in (successes, trials):
        numeric = pd.to_numeric(df[col], errors="coerce")
        bad = (numeric.isna() & df[col].notna()) | (numeric != np.round(numeric))
        if bad.any():
            raise DataError(f"count column {col!r} must hold whole numbers; offending rows:\n"
                            + _show_rows(df, bad, [col]))
        neg = numeric < 0
        if neg.any():
            raise DataError(f"count column {col!r} has negative counts in rows:\n"
                            + _show_rows(df, neg, [col]))
        out.append(numeric.astype("int64"))
    k, n = out
    over = k > n
    if over.any():
        raise DataError(f"successes {successes!r} exceed trials {trials!r} in rows:\n"
                        + _show_rows(df, over, [successes, trials]))
    zero = n == 0
    if zero.any():
        raise DataError(f"trials column {trials!r} is 0 in rows (a row with no trials carries no "
                        f"information; drop it explicitly):\n" + _show_rows(df, zero, [trials]))
    return k, n


def _design_warnings(df: pd.DataFrame, schema: RunsSchema) -> None:
    item, model, run = schema.item, schema.model, schema.run
    for col in [model, item] + list(schema.slices):
        if isinstance(df[col].dtype, pd.CategoricalDtype) and df[col].nunique() == 1:
            warnings.warn(f"factor {col!r} has a single level ({_plain(df[col].iloc[0])!r}); it cannot be "
                          f"used as a predictor", DataWarning, stacklevel=3)
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
    allow_fractional: bool = False,
) -> pd.DataFrame:
    """Read and validate a long-format table of evaluation runs.

    Parameters
    ----------
    source : path or DataFrame
        A ``.csv``, ``.parquet`` or ``.jsonl`` file, or a DataFrame (which is copied, never modified).
    item, model, run : str
        Names of the item, model and run columns.  ``run=None`` for a table with a single run (or
        with k-of-n counts that already pool the runs).
    outcome : str
        Name of the binary outcome column (0/1 or True/False).  Ignored when counts are given.
    successes, trials : str, optional
        Names of k-of-n count columns, given together instead of a binary ``outcome``.
    allow_fractional : bool
        Accept outcomes anywhere in [0, 1] (partial credit).  Binomial models need 0/1 or counts.

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
        single level, an item answered by one model only.  No row is ever dropped.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"model": ["a", "a", "b", "b"], "item": [1, 2, 1, 2],
    ...                    "run": [1, 1, 1, 1], "correct": [1, 0, 1, 1]})
    >>> runs = read_runs(df)
    >>> runs.attrs["evalmix"]["item"], runs["correct"].tolist()
    ('item', [1, 0, 1, 1])
    """
    df = load_table(source)
    if (successes is None) != (trials is None):
        raise DataError("give both successes= and trials= for k-of-n counts, or neither")
    counts = successes is not None
    outcome_cols = [successes, trials] if counts else [outcome]
    if not counts and outcome is None:
        raise DataError("name the outcome column (outcome=) or the count columns (successes=, trials=)")
    required = [c for c in (model, item, run) if c is not None] + outcome_cols
    missing = [c for c in required if c not in df.columns]
    if missing:
        raise DataError(f"missing column(s) {', '.join(map(repr, missing))}; the table has columns: "
                        f"{', '.join(map(repr, map(str, df.columns)))}")
    if len(df) == 0:
        raise DataError("the runs table is empty")
    roles = set(required)
    if counts and outcome in df.columns and outcome not in roles:
        roles.add(outcome)  # a stale binary column beside counts is not a slice
    slices = tuple(str(c) for c in df.columns if c not in roles)

    key_cols = [c for c in (model, item, run) if c is not None] + list(slices)
    for col in key_cols + outcome_cols:
        na = df[col].isna()
        if na.any():
            role = "outcome" if col in outcome_cols else "key"
            raise DataError(f"{role} column {col!r} has {int(na.sum())} missing value(s) (NaN/None) "
                            f"in rows:\n" + _show_rows(df, na, key_cols[:3] + [col]))

    if counts:
        df[successes], df[trials] = _check_counts(df, successes, trials)
    else:
        df[outcome] = _check_binary(df, outcome, allow_fractional)

    dup = df.duplicated(subset=key_cols, keep=False)
    if dup.any():
        first = df.loc[dup, key_cols].head(2)
        raise DataError(
            f"{int(dup.sum())} rows share a (model, item, run, slices) key {tuple(key_cols)}; each key "
            f"must appear once. First duplicate:\n{first.to_string()}")

    for col in (model, item, run):
        if col is not None:
            df[col] = _as_factor(df[col])
    for col in slices:
        if not pd.api.types.is_numeric_dtype(df[col]) or pd.api.types.is_bool_dtype(df[col]):
            df[col] = _as_factor(df[col])

    schema = RunsSchema(item=item, model=model, run=run, outcome=None if counts else outcome,
                        successes=successes, trials=trials, slices=slices)
    df.attrs["evalmix"] = schema.to_dict()
    _design_warnings(df, schema)
    return df
