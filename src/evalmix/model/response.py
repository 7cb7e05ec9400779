"""The checks every engine applies to a response column, with the column and rows named: numbers
(not booleans or text), integer ratings coded for a cumulative-link model."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.errors import DataError
from .parse import ParsedFormula

__all__ = ["count_columns", "numeric_column", "ordinal_codes", "rows_text"]


def rows_text(index: pd.Index, mask: np.ndarray, limit: int = 5) -> str:
    """The first ``limit`` row labels where ``mask`` holds, and how many more.

    Examples
    --------
    >>> rows_text(pd.RangeIndex(10), np.arange(10) > 2)
    '3, 4, 5, 6, 7 and 2 more'
    """
    rows = [repr(v) for v in index[mask][:limit]]
    more = int(mask.sum()) - len(rows)
    return ", ".join(rows) + (f" and {more} more" if more > 0 else "")


def numeric_column(col: pd.Series, name: str) -> np.ndarray:
    """A column as float numbers; booleans and text that is not a number are a DataError naming
    the column and the rows.

    Examples
    --------
    >>> numeric_column(pd.Series(["1", "2.5"]), "score").tolist()
    [1.0, 2.5]
    """
    if pd.api.types.is_bool_dtype(col):
        raise DataError(f"column {name!r} holds booleans, not numbers")
    if not pd.api.types.is_numeric_dtype(col):
        num = pd.to_numeric(col, errors="coerce")
        bad = (num.isna() & col.notna()).to_numpy()
        if bad.any():
            raise DataError(f"column {name!r} must be numeric (rows {rows_text(col.index, bad)} hold "
                            f"{col[bad].iloc[0]!r})")
        col = num
    return col.to_numpy(dtype=float)


def count_columns(parsed: ParsedFormula, data: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, str]:
    """Successes and trials of a ``cbind(k, n - k)`` or ``cbind(k, failures)`` response, as numbers,
    and the name of the second column (``n`` or the failures); the caller checks the counts.

    Examples
    --------
    >>> from evalmix.model import parse_formula
    >>> d = pd.DataFrame({"k": [1, 3], "f": [2, 0], "g": ["a", "b"]})
    >>> k, n, other = count_columns(parse_formula("cbind(k, f) ~ 1 + (1|g)"), d)
    >>> k.tolist(), n.tolist(), other
    ([1.0, 3.0], [3.0, 3.0], 'f')
    """
    name = parsed.successes
    other = parsed.trials if parsed.trials is not None else parsed.failures
    if other is None:
        raise ValueError(f"the response {name!r} is one column, not cbind(k, n - k)")
    k = numeric_column(data[name], name)
    second = numeric_column(data[other], other)
    return k, (second if parsed.trials is not None else k + second), other


def ordinal_codes(values: pd.Series, column: str) -> tuple[np.ndarray, list[str]]:
    """Code an ordinal response as 0..J-1 and return the category labels in order (as
    ``ordinal::clmm`` reads a response).

    An ordered categorical keeps its order; integers (or integer-valued floats) are sorted
    numerically and must have no gap.  Fewer than three categories is a DataError (a binary
    response is a GLMM's).

    Examples
    --------
    >>> codes, levels = ordinal_codes(pd.Series([3, 1, 2, 3]), "rating")
    >>> codes.tolist(), levels
    ([2, 0, 1, 2], ['1', '2', '3'])
    """
    if values.isna().any():
        raise DataError(f"response {column!r} has a missing value in rows "
                        f"{rows_text(values.index, values.isna().to_numpy())}")
    if isinstance(values.dtype, pd.CategoricalDtype):
        if not values.cat.ordered:
            raise DataError(f"response {column!r} is an unordered categorical: make it ordered "
                            "(pd.Categorical(..., ordered=True)) or give integer scores")
        cats = list(values.cat.categories)
        used = set(values.cat.codes.tolist())
        unused = [str(c) for k, c in enumerate(cats) if k not in used]
        if unused:
            raise DataError(f"response {column!r} has categories with no observation: "
                            f"{', '.join(unused)}; remove them (cat.remove_unused_categories())")
        codes = values.cat.codes.to_numpy().astype(np.int64)
        levels = [str(c) for c in cats]
    else:
        if pd.api.types.is_bool_dtype(values) or not pd.api.types.is_numeric_dtype(values):
            raise DataError(f"response {column!r} must be integer scores or an ordered "
                            f"categorical, not {values.dtype}")
        x = values.to_numpy(dtype=float)
        bad = ~np.isfinite(x) | (x != np.round(x))
        if bad.any():
            raise DataError(f"response {column!r} has a non-integer score {x[bad][0]:g} in rows "
                            f"{rows_text(values.index, bad)}; a cumulative-link model needs integer "
                            "ratings or an ordered categorical")
        uniq = np.unique(x).astype(np.int64)
        missing = sorted(set(range(int(uniq[0]), int(uniq[-1]) + 1)) - set(uniq.tolist()))
        if missing:
            raise DataError(f"response {column!r} has a gap: no rating "
                            f"{', '.join(map(str, missing))} between {uniq[0]} and {uniq[-1]}; "
                            "give an ordered categorical with the observed categories instead")
        codes = np.searchsorted(uniq, x.astype(np.int64))
        levels = [str(v) for v in uniq]
    if len(levels) < 3:
        raise DataError(f"response {column!r} has {len(levels)} categories; a cumulative-link "
                        "model needs at least 3 (fit a binary response with a binomial GLMM, "
                        "evalmix.glmer or evalmix.bayes.glmer)")
    return codes, levels
