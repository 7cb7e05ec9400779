"""Column resolution and slicing shared by the reliability, ranking and repetition analyses.

Every analysis there works on a long runs table (one row per model x item x run x slices) and needs
the same steps: find which column is the item, run, model and outcome (explicit arguments first, then
the roles :func:`evalmix.read_runs` recorded, then the conventional names), split the table by slice
columns, and arrange one slice as an items x runs matrix.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from .data import schema_of
from .errors import DataError

_DEFAULTS = {"item": "item", "model": "model", "run": "run", "outcome": "correct"}


@dataclass(frozen=True)
class Columns:
    """Resolved column names; ``trials`` is set when the outcome is a k-of-n count."""

    item: str
    run: str
    outcome: str
    model: str | None = None
    trials: str | None = None


def as_list(by: str | Sequence[str] | None) -> list[str]:
    """``None`` -> [], ``"a"`` -> ["a"], sequences -> list."""
    if by is None:
        return []
    if isinstance(by, str):
        return [by]
    return [str(b) for b in by]


def resolve(data: pd.DataFrame, *, item: str | None = None, run: str | None = None,
            outcome: str | None = None, model: str | None = None, need_model: bool = False,
            need_item: bool = True, by: Sequence[str] = ()) -> Columns:
    """Resolve column roles and check that every named column exists and the outcome is usable."""
    if not isinstance(data, pd.DataFrame):
        raise DataError(f"expected a pandas DataFrame, got {type(data).__name__}")
    schema = schema_of(data)
    trials = None
    given = {"item": item, "run": run, "outcome": outcome, "model": model}
    names: dict[str, str] = {}
    for role, value in given.items():
        if value is None and schema is not None:
            value = getattr(schema, role)
            if role == "outcome" and value is None and schema.successes is not None:
                value, trials = schema.successes, schema.trials
        names[role] = value if value is not None else _DEFAULTS[role]
    # without need_model only an explicit model= names the model column
    model_col = names["model"] if need_model else model
    roles = (names["item"] if need_item else None, names["run"], names["outcome"], model_col, trials)
    wanted = [c for c in roles if c is not None] + list(by)
    missing = [c for c in dict.fromkeys(wanted) if c not in data.columns]
    if missing:
        raise DataError(f"missing column(s) {', '.join(map(repr, missing))}; the table has columns: "
                        f"{', '.join(map(repr, map(str, data.columns)))}")
    out = names["outcome"]
    values = pd.to_numeric(data[out], errors="coerce")
    if values.isna().any():
        if "status" in data.columns:  # a table of harness samples with unscored ones kept
            n = int(values.isna().sum())
            raise DataError(f"outcome column {out!r} is missing in {n} row(s) and the table has a "
                            f"'status' column: unscored samples (errors, cancellations) cannot be "
                            f"analysed here; pass evalmix.status.scored_rows(data) to use the scored "
                            f"ones, and see evalmix.accuracy_bounds() for what the others could change")
        bad = data.loc[values.isna(), [out]].head(5)
        raise DataError(f"outcome column {out!r} must be numeric without missing values; "
                        f"offending rows:\n{bad.to_string()}")
    return Columns(item=names["item"], run=names["run"], outcome=out, model=model_col,
                   trials=trials)


def levels(values: pd.Series) -> list:
    """Distinct values in factor order (categorical order, else sorted as R's factor() sorts)."""
    if isinstance(values.dtype, pd.CategoricalDtype):
        present = set(values.unique())
        return [c for c in values.cat.categories if c in present]
    uniq = pd.unique(values.dropna())
    try:
        return sorted(uniq)
    except TypeError:
        return sorted(uniq, key=str)


def groups(data: pd.DataFrame, by: Sequence[str]) -> Iterator[tuple[tuple, pd.DataFrame]]:
    """Iterate over the slices of ``data`` (in factor order); one group ``()`` when ``by`` is empty."""
    if not by:
        yield (), data
        return
    for key, sub in data.groupby(list(by), observed=True, sort=True):
        yield (key if isinstance(key, tuple) else (key,)), sub


def scores(sub: pd.DataFrame, cols: Columns) -> np.ndarray:
    """The outcome of each row as a number: 0/1, a score, or successes/trials for counts."""
    y = sub[cols.outcome].to_numpy(dtype=float)
    if cols.trials is not None:
        y = y / sub[cols.trials].to_numpy(dtype=float)
    return y


def item_run_matrix(sub: pd.DataFrame, cols: Columns, where: str = "") -> tuple[np.ndarray, list, list]:
    """Items x runs matrix of one slice (NaN where a run of an item is missing).

    Raises DataError when an (item, run) pair occurs twice: the slice columns do not identify a
    single model/condition.
    """
    dup = sub.duplicated([cols.item, cols.run], keep=False)
    if dup.any():
        first = sub.loc[dup, [cols.item, cols.run]].head(2).to_string()
        raise DataError(f"{where}several rows share an ({cols.item!r}, {cols.run!r}) pair; add the "
                        f"columns that tell them apart (model, language, ...) to the slice "
                        f"argument. First duplicates:\n{first}")
    item_levels, run_levels = levels(sub[cols.item]), levels(sub[cols.run])
    i = pd.Categorical(sub[cols.item], categories=item_levels).codes
    r = pd.Categorical(sub[cols.run], categories=run_levels).codes
    mat = np.full((len(item_levels), len(run_levels)), np.nan)
    mat[i, r] = scores(sub, cols)
    return mat, item_levels, run_levels


def key_frame(by: Sequence[str], keys: Sequence[tuple]) -> pd.DataFrame:
    """DataFrame of slice keys (one column per ``by`` name)."""
    return pd.DataFrame([dict(zip(by, k)) for k in keys], columns=list(by))


def slice_label(by: Sequence[str], key: tuple) -> str:
    """Readable label of a slice for error messages: ``"model='a', language='EN': "``."""
    if not by:
        return ""
    return ", ".join(f"{b}={k!r}" for b, k in zip(by, key)) + ": "


def rng_of(seed: int | np.random.Generator | np.random.SeedSequence | None) -> np.random.SeedSequence:
    """A SeedSequence from an int, Generator or None (children give independent chunk streams)."""
    if isinstance(seed, np.random.SeedSequence):
        return seed
    if isinstance(seed, np.random.Generator):
        return np.random.SeedSequence(int(seed.integers(0, 2**63 - 1)))
    return np.random.SeedSequence(seed)
