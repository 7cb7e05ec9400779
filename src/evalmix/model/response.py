"""The checks every engine applies to a response column, with the column and rows named: numbers
(not booleans or text), integer ratings coded for a cumulative-link model."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.errors import DataError
from .parse import ParsedFormula

__all__ = ["count_columns", "engine_hint", "non_numeric_message", "numeric_column", "ordinal_codes",
           "rows_text"]

#: The engine of each kind of outcome, as the Python call and the command line's --family.
_ENGINES = {
    "binary": ("glmer", "a 0/1 outcome", "evalmix.glmer (a binomial GLMM; on the command line: --family binomial)"),
    "ordinal": ("clmm", "integer ratings", "evalmix.clmm (a cumulative-link mixed model; on the command line: "
                "--family ordinal), or evalmix.lmer as numeric scores (--family gaussian)"),
    "unit": ("lmer", "continuous scores in [0, 1]", "evalmix.lmer (--family gaussian), or "
             "evalmix.glmmtmb(family='beta') for scores strictly between 0 and 1 (--family beta)"),
    "continuous": ("lmer", "continuous scores", "evalmix.lmer (a linear mixed model; on the command line: "
                   "--family gaussian)"),
}


def engine_hint(values: pd.Series | np.ndarray, engine: str) -> str:
    """A sentence naming the engine that fits an outcome like ``values``, for the error of an
    engine that cannot (``engine``: ``"glmer"``, ``"clmm"``, ``"glmmtmb"``, ``"lmer"``); empty when
    the values are not numbers or ``engine`` is already the right one.

    Examples
    --------
    >>> engine_hint(pd.Series([1, 3, 5, 2]), "glmer")
    'these are integer ratings (1 to 5): fit them with evalmix.clmm (a cumulative-link mixed model; on \
the command line: --family ordinal), or evalmix.lmer as numeric scores (--family gaussian)'
    """
    x = pd.to_numeric(pd.Series(np.asarray(values, dtype=object).ravel()), errors="coerce").to_numpy(dtype=float)
    x = x[np.isfinite(x)]
    if len(x) == 0:
        return ""
    uniq = np.unique(x)
    if np.isin(uniq, (0.0, 1.0)).all():
        kind = "binary"
    elif (uniq == np.round(uniq)).all() and len(uniq) >= 3:
        kind = "ordinal"
    elif uniq.min() >= 0 and uniq.max() <= 1:
        kind = "unit"
    else:
        kind = "continuous"
    right, what, how = _ENGINES[kind]
    if right == engine or (engine == "glmmtmb" and kind == "unit"):
        return ""
    span = f" ({uniq[0]:g} to {uniq[-1]:g})" if kind == "ordinal" else ""
    if kind == "binary":
        return f"this is {what}: fit it with {how}"
    return f"these are {what}{span}: fit them with {how}"


def non_numeric_message(col: pd.Series, name: str, what: str = "response column") -> str | None:
    """The message every engine gives for text in a numeric response, naming the first row (and
    how many more), or None when every value is a number.

    Examples
    --------
    >>> non_numeric_message(pd.Series([1, "good", 3, "bad"]), "rating")
    "response column 'rating' must be numeric (row 1 has 'good'; 1 more row holds text)"
    """
    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
        return None
    num = pd.to_numeric(col, errors="coerce")
    bad = (num.isna() & col.notna()).to_numpy()
    if not bad.any():
        return None
    i = int(np.flatnonzero(bad)[0])
    more = int(bad.sum()) - 1
    tail = f"; {more} more row{'s' if more > 1 else ''} hold{'' if more > 1 else 's'} text" if more else ""
    row = col.index[i]
    row = row.item() if hasattr(row, "item") else row  # 11, not np.int64(11)
    return f"{what} {name!r} must be numeric (row {row!r} has {col.iloc[i]!r}{tail})"


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


def numeric_column(col: pd.Series, name: str, what: str = "column") -> np.ndarray:
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
        message = non_numeric_message(col, name, what)
        if message:
            raise DataError(message)
        col = pd.to_numeric(col, errors="coerce")
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
        if pd.api.types.is_bool_dtype(values):
            raise DataError(f"response {column!r} holds booleans: a cumulative-link model needs integer "
                            f"ratings or an ordered categorical; {engine_hint(values.astype(int), 'clmm')}")
        if not pd.api.types.is_numeric_dtype(values):
            message = non_numeric_message(values, column)
            if message:  # text that is not a rating, named by its row as every engine does
                raise DataError(f"{message}: a cumulative-link model needs integer ratings or an "
                                "ordered categorical (pd.Categorical(..., ordered=True))")
            raise DataError(f"response {column!r} must be integer scores or an ordered "
                            f"categorical, not {values.dtype} (numbers written as text: convert them "
                            f"with pd.to_numeric, or order them with pd.Categorical(..., ordered=True))")
        x = values.to_numpy(dtype=float)
        bad = ~np.isfinite(x) | (x != np.round(x))
        if bad.any():
            hint = engine_hint(x, "clmm")
            raise DataError(f"response {column!r} has a non-integer score {x[bad][0]:g} in rows "
                            f"{rows_text(values.index, bad)}; a cumulative-link model needs integer "
                            "ratings or an ordered categorical" + (f"; {hint}" if hint else ""))
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
                        "model needs at least 3: fit a binary response with a binomial GLMM, "
                        "evalmix.glmer (on the command line: --family binomial) or evalmix.bayes.glmer")
    return codes, levels
