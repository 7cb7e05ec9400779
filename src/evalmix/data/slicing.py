"""Column resolution and slicing shared by the reliability, ranking and repetition analyses.

Every analysis there works on a long runs table (one row per model x item x run x slices) and needs
the same steps: validate the table and find which column is the item, run, model and outcome (both
owned by :func:`evalmix.data.runs.ensure_runs`), split the table by slice columns, and arrange one slice
as an items x runs matrix.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import pandas as pd

from .runs import RunsData, RunsSchema, ensure_runs
from ..core.errors import DataError


def as_list(by: str | Sequence[str] | None) -> list[str]:
    """``None`` -> [], ``"a"`` -> ["a"], sequences -> list."""
    if by is None:
        return []
    if isinstance(by, str):
        return [by]
    return [str(b) for b in by]


def resolve(data: RunsData, *, item: str | None = None, run: str | None = None,
            outcome: str | None = None, model: str | None = None, need_model: bool = False,
            need_item: bool = True, need_run: bool = True, by: Sequence[str] = (),
            missing: str = "raise", allow_fractional: bool | str = True) -> tuple[pd.DataFrame, RunsSchema]:
    """Validate a runs table (:func:`evalmix.data.runs.ensure_runs`) and name the columns an analysis uses.

    Returns the validated table (a path is read; rows with missing values dropped when
    ``missing="drop"``) and its roles, the one :class:`~evalmix.data.runs.RunsSchema` (the score
    column is ``schema.scores``: the outcome, or the successes of k-of-n counts with ``trials``).
    Outcomes may be scores in [0, 1] (``allow_fractional="any"``: any finite number); a role the
    caller needs is never None.
    """
    return ensure_runs(data, item=item, run=run, outcome=outcome, model=model, need_item=need_item,
                       need_model=need_model, need_run=need_run, by=by,
                       allow_fractional=allow_fractional, missing=missing)


def levels(values: pd.Series) -> list[Any]:
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


def scores(sub: pd.DataFrame, cols: RunsSchema) -> np.ndarray:
    """The outcome of each row as a number: 0/1, a score, or successes/trials for counts."""
    y = sub[cols.scores].to_numpy(dtype=float)
    if cols.trials is not None:
        y = y / sub[cols.trials].to_numpy(dtype=float)
    return y


def item_run_matrix(sub: pd.DataFrame, cols: RunsSchema, where: str = "") -> tuple[np.ndarray, list, list]:
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


def slice_label(by: Sequence[str], key: tuple[object, ...]) -> str:
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
