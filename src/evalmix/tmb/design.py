"""From formula and data to the arrays of :func:`evalmix.glmmtmb` (glmmTMB's ``glmmTMB`` up to
``MakeADFun``): the response of the family, the fixed design and the random intercepts.

The model frame is the floor's (:mod:`evalmix.model`: :func:`~evalmix.model.read_data`,
:func:`~evalmix.model.model_columns` with R's lookup order, :func:`~evalmix.model.complete_rows`,
:func:`~evalmix.model.build_fixed`, :func:`~evalmix.model.build_random_terms`); what is this
engine's own is the response of each family.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..data.runs import RunsData
from ..core.errors import ArgumentError, DataError, FormulaError
from ..model import (FixedDesign, ParsedFormula, RandomTerm, build_fixed, build_random_terms, complete_rows,
                     count_columns, fitted_offset, model_columns, numeric_column, parse_mixed_formula, read_data, rows_text)
from ..model.response import engine_hint
from .family import Response

__all__ = ["TmbDesign", "build_tmb_design", "squeeze_scores"]


@dataclass(frozen=True)
class TmbDesign:
    """Response, fixed design and random intercepts of one fit; ``data`` the rows fitted (the
    columns the model reads, a weight column included) and ``weights`` their prior weights."""

    parsed: ParsedFormula
    fixed: FixedDesign
    X: np.ndarray
    offset: np.ndarray
    response: Response
    terms: list[RandomTerm]
    data: pd.DataFrame
    weights: np.ndarray | None = None


def squeeze_scores(y: ArrayLike) -> np.ndarray:
    """Smithson and Verkuilen's (2006) squeeze of scores in [0, 1] into (0, 1):
    ``(y (N - 1) + 1/2) / N`` with ``N`` the number of scores.

    Examples
    --------
    >>> squeeze_scores([0.0, 0.5, 1.0]).round(4).tolist()
    [0.1667, 0.5, 0.8333]
    """
    y = np.asarray(y, dtype=float)
    return (y * (len(y) - 1) + 0.5) / len(y)


def _beta_response(col: pd.Series, name: str, squeeze: bool) -> Response:
    y = numeric_column(col, name, "response column")
    outside = (y < 0) | (y > 1) | ~np.isfinite(y)
    if outside.any():
        raise DataError(f"response column {name!r} must hold scores between 0 and 1 for the beta "
                        f"family; rows {rows_text(col.index, outside)} are outside "
                        f"(e.g. {float(y[outside][0]):g}): rescale it, e.g. (rating - min) / (max - min)"
                        + (f"; {hint}" if (hint := engine_hint(y, "glmmtmb")) else ""))
    ends = (y == 0) | (y == 1)
    if ends.any() and not squeeze:
        if ends.all():  # every score is 0 or 1: an outcome, not a proportion
            raise DataError(f"response column {name!r} holds only 0 and 1: the beta family needs "
                            f"0 < y < 1; {engine_hint(y, 'glmmtmb')}")
        raise DataError(f"response column {name!r} is exactly 0 or 1 in rows "
                        f"{rows_text(col.index, ends)}: the beta family needs 0 < y < 1; pass "
                        "squeeze=True for Smithson and Verkuilen's (y (N - 1) + 1/2) / N, or fit "
                        "k-of-n counts with family='betabinomial'")
    return Response.beta(squeeze_scores(y) if squeeze else y)


def _count_response(parsed: ParsedFormula, d: pd.DataFrame, family: str,
                    weights: np.ndarray | None) -> Response:
    name = parsed.successes
    if parsed.trials is not None or parsed.failures is not None:
        if weights is not None:
            raise ArgumentError("weights= gives the trials of a proportion response; with "
                                "cbind(k, n - k) the trials are in the formula already")
        k, n, _ = count_columns(parsed, d)
        what = f"cbind({name}, {parsed.trials} - {name})" if parsed.trials is not None \
            else f"cbind({name}, {parsed.failures})"
    else:
        # booleans are 0/1 outcomes, as glmer reads them (FALSE a failure)
        col = d[name].astype(float) if pd.api.types.is_bool_dtype(d[name]) else d[name]
        y = numeric_column(col, name)
        if weights is None:
            bad = ~np.isin(y, (0.0, 1.0))
            if bad.any():
                raise DataError(f"response column {name!r} must be 0/1 (rows "
                                f"{rows_text(d.index, bad)}; e.g. {float(y[bad][0]):g}); write cbind(k, "
                                "n - k) for counts, give proportions with weights= the trials, or "
                                "use family='beta' for continuous scores")
            k, n = y, np.ones_like(y)
        else:
            bad = (y < 0) | (y > 1) | ~np.isfinite(y)
            if bad.any():
                raise DataError(f"response column {name!r} must lie in [0, 1] with weights= (rows "
                                f"{rows_text(d.index, bad)})")
            k, n = y * weights, weights
        what = name
    bad = ~np.isfinite(k) | ~np.isfinite(n) | (k < 0) | (n < k) \
        | (np.abs(k - np.round(k)) > 1e-6) | (np.abs(n - np.round(n)) > 1e-6)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"{what} must be whole counts 0 <= k <= n; rows {rows_text(d.index, bad)} "
                        f"are not (k = {float(k[i]):g} of n = {float(n[i]):g})")
    k, n = np.round(k), np.round(n)
    if family == "betabinomial" and not np.any(n > 1):
        raise DataError(f"{what} has one trial per row: the beta-binomial precision is not "
                        "identified from 0/1 outcomes; aggregate to k of n per item:model or fit "
                        "family='binomial'")
    return Response.counts(family, k, n)


def build_tmb_design(formula: str, data: RunsData, *, family: str,
                     weights: str | ArrayLike | None = None, contrasts: dict[str, Any] | None = None,
                     squeeze: bool = False) -> TmbDesign:
    """Parse ``formula`` and build the design of a glmmTMB-style fit on ``data``.

    Random terms are scalar intercepts, nested or crossed.  Rows with a missing value in a
    column the model reads are dropped with a :class:`~evalmix.core.errors.DataWarning`, as R's
    ``na.omit``.

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"score": [0.2, 0.4, 0.5, 0.7, 0.3, 0.6], "g": list("aabbcc"),
    ...                   "x": [0, 1, 0, 1, 0, 1]})
    >>> design = build_tmb_design("score ~ x + (1|g)", d, family="beta")
    >>> design.X.shape, [t.group for t in design.terms]
    ((6, 2), ['g'])
    """
    parsed = parse_mixed_formula(formula, "glmmtmb")
    for sp in parsed.random:
        if sp.expr.strip() != "1":
            raise FormulaError(f"random term {sp} is not supported: "
                               "glmmtmb fits random intercepts (1|group), nested or crossed")
    if family == "beta" and (parsed.trials is not None or parsed.failures is not None):
        raise FormulaError(f"formula {formula!r} has a cbind() response: the beta family fits "
                           "one column of scores in (0, 1); use family='betabinomial' for k of n")
    if family == "beta" and weights is not None:
        raise ArgumentError("weights= are the trials of a proportion response (binomial "
                            "families); the beta family takes none")
    frame = read_data(data, parsed.random)
    response_cols = [c for c in (parsed.successes, parsed.trials, parsed.failures) if c is not None]
    for c in response_cols:
        if c not in frame.columns:
            raise FormulaError(f"response column {c!r} is absent from the data "
                               f"(columns: {list(frame.columns)})")
    used = list(dict.fromkeys([*response_cols, *model_columns(parsed, frame)]))
    d = frame[used + [weights] if isinstance(weights, str) and weights not in used else used]
    w = None
    if weights is not None:
        if isinstance(weights, str):
            if weights not in frame.columns:
                raise FormulaError(f"weights={weights!r} is not a column of the data "
                                   f"(columns: {list(frame.columns)})")
            w = numeric_column(frame[weights], weights)
        else:
            w = np.asarray(weights, dtype=float).ravel()
            if w.size != len(frame):
                raise DataError(f"weights has {w.size} values for {len(frame)} rows of data")
    keep = complete_rows(d[used], w)
    if not keep.all():
        d = d.loc[keep]
        w = None if w is None else w[keep]
    if w is not None and np.any(w < 0):
        raise DataError(f"weights must be >= 0 (rows {rows_text(d.index, w < 0)})")
    if family == "beta":
        response = _beta_response(d[parsed.successes], parsed.successes, squeeze)
    else:
        if squeeze:
            raise ArgumentError("squeeze=True applies to the beta family's scores, not to counts")
        response = _count_response(parsed, d, family, w)
    rows = d.reset_index(drop=True)
    fixed, X = build_fixed(parsed.fixed, rows, contrasts, parsed.offsets)
    X = np.ascontiguousarray(X, dtype=float)
    if np.linalg.matrix_rank(X) < X.shape[1]:
        raise DataError(f"the fixed-effect columns of {formula!r} are aliased (linearly "
                        f"dependent): {', '.join(fixed.columns)}; drop a term or a level that "
                        "another determines")
    offset = np.zeros(len(rows))
    if parsed.offsets:
        offset, fixed = fitted_offset(fixed, rows, d.index)
    terms = build_random_terms(parsed.random, rows, len(rows))
    return TmbDesign(parsed, fixed, X, offset, response, terms, d, w)
