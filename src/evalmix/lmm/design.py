"""From formula and data to the arrays of a linear mixed model (lme4's ``lFormula``).

The model frame (:mod:`evalmix.model.frame`) does the work: the columns the formula reads, the
complete rows, X built once per pattern of the fixed-part columns, the random terms.  The random
terms own the theta layout (:class:`~evalmix.model.RandomTerm`); this module checks the numeric
response and lays the terms' columns side by side into the sparse ``Z`` and the index map of
``Lambda``.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from ..data.runs import RunsData
from ..core.errors import DataError, DataWarning, FormulaError
from ..model.response import non_numeric_message
from ..model import (FixedDesign, ParsedFormula, RandomTerm, ThetaLayout, build_random_terms, complete_rows,
                     fixed_patterns, independent_columns, model_columns, parse_mixed_formula, read_data)

__all__ = ["LmmDesign", "build_lmm_design"]


@dataclass
class LmmDesign(ThetaLayout):
    """Response, fixed design, random terms and the sparse ``Z`` of a linear mixed model.

    ``Z`` has one column per (term, level, term column), level-major within each term, the terms
    in lme4's order; ``lambda_index`` maps each stored entry of ``Lambda`` (``lambda_rows``,
    ``lambda_cols``) to its position in theta.
    """

    parsed: ParsedFormula
    fixed: FixedDesign
    X: np.ndarray
    y: np.ndarray  # response minus any offset
    offset: np.ndarray | None
    terms: list[RandomTerm]
    Z: sparse.csc_matrix
    lambda_rows: np.ndarray
    lambda_cols: np.ndarray
    lambda_index: np.ndarray
    data: pd.DataFrame  # the rows fitted
    dropped: tuple[str, ...] = ()  # aliased fixed-effect columns dropped

    @property
    def nobs(self) -> int:
        return int(self.X.shape[0])

    @property
    def q(self) -> int:
        return int(self.Z.shape[1])

    def lambda_(self, theta: np.ndarray) -> sparse.csc_matrix:
        """``Lambda`` (q x q, block diagonal, lower triangular blocks) at ``theta``."""
        th = np.asarray(theta, dtype=float)
        return sparse.csc_matrix((th[self.lambda_index], (self.lambda_rows, self.lambda_cols)),
                                 shape=(self.q, self.q))

    def term_offsets(self) -> list[int]:
        """First column of ``Z`` of each term."""
        out, pos = [], 0
        for t in self.terms:
            out.append(pos)
            pos += t.nl * t.nc
        return out


def _text_as_factors(frame: pd.DataFrame) -> pd.DataFrame:
    """Text columns as categoricals with R's sorted levels, coded once: the fixed and random
    parts then read the codes instead of sorting the strings again (a column such as ``item``
    serves several terms).  Only all-string columns change; numbers, booleans and categoricals
    keep their types and meaning."""
    out = {}
    for c in frame.columns:
        s = frame[c]
        if isinstance(s.dtype, pd.CategoricalDtype) or pd.api.types.is_numeric_dtype(s) \
                or pd.api.types.is_bool_dtype(s):
            continue
        if not pd.api.types.is_string_dtype(s) or (
                s.dtype == object and pd.api.types.infer_dtype(s, skipna=False) != "string"):
            continue
        codes, levels = pd.factorize(s, sort=True)  # code-point order, as sorted() gives
        out[c] = pd.Categorical.from_codes(codes, categories=pd.Index([str(v) for v in levels.tolist()]))
    return frame.assign(**out) if out else frame


def build_lmm_design(formula: str, data: RunsData, *, contrasts: dict[str, Any] | None = None
                     ) -> LmmDesign:
    """Parse an lme4 formula and build the design of a linear mixed model on ``data``.

    The response must be numeric; rows with a missing value in a column the formula uses are
    dropped with a :class:`~evalmix.core.errors.DataWarning`.  A fixed-effect column aliased with
    earlier ones is dropped (with a warning), as lme4 does.

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"y": [1.0, 2.0, 3.0, 2.5, 4.0, 3.5], "g": list("aabbcc"),
    ...                   "x": [0, 1, 0, 1, 0, 1]})
    >>> design = build_lmm_design("y ~ x + (1|g)", d)
    >>> design.X.shape, design.q, design.theta_names
    ((6, 2), 3, ['g.(Intercept)'])
    """
    parsed = parse_mixed_formula(formula, "lmer")
    if parsed.trials is not None or parsed.failures is not None:
        raise FormulaError(f"formula {formula!r} has a cbind() response: lmer fits a numeric "
                           "response; use evalmix.glmer for counts")
    data = read_data(data, parsed.random)
    yname = parsed.successes
    if yname not in data.columns:
        raise FormulaError(f"response column {yname!r} is absent from the data "
                           f"(columns: {list(data.columns)})")
    used = model_columns(parsed, data)
    d = data[used]
    ycol = d[yname]
    if pd.api.types.is_bool_dtype(ycol):
        raise DataError(f"response column {yname!r} must be numeric, it holds booleans: give "
                        "0/1 numbers, or fit a binary response with evalmix.glmer")
    if not pd.api.types.is_numeric_dtype(ycol):
        message = non_numeric_message(ycol, yname)
        if message:
            raise DataError(message)
        d = d.assign(**{yname: pd.to_numeric(ycol, errors="coerce")})
    yv = d[yname].to_numpy(dtype=float)
    if np.isinf(yv).any():
        i = int(np.flatnonzero(np.isinf(yv))[0])
        raise DataError(f"response column {yname!r} is infinite in row {d.index[i]!r}")
    keep_rows = complete_rows(d)
    if not keep_rows.all():
        d = d.loc[keep_rows]
    rows = _text_as_factors(d.reset_index(drop=True))
    fixed, X, pattern = fixed_patterns(parsed, rows, contrasts)
    if pattern is None:
        keep = independent_columns(X)
    else:
        # X'X = Xu' diag(counts) Xu: the columns of sqrt(counts) Xu have X's inner products, so
        # the same independent columns, found on a handful of rows
        counts = np.bincount(pattern, minlength=X.shape[0]).astype(float)
        keep = independent_columns(np.sqrt(counts)[:, None] * X)
        X = np.ascontiguousarray(X[pattern])
    dropped: tuple[str, ...] = ()
    if len(keep) < X.shape[1]:
        dropped = tuple(fixed.columns[j] for j in range(X.shape[1]) if j not in keep)
        warnings.warn(f"fixed-effect model matrix is rank deficient so dropping {len(dropped)} "
                      f"column(s): {list(dropped)}", DataWarning, stacklevel=3)
        fixed = fixed.with_columns(keep)
        X = np.ascontiguousarray(X[:, keep])
    y = rows[yname].to_numpy(dtype=float)
    if np.ptp(y) == 0:
        raise DataError(f"response column {yname!r} is constant ({y[0]!r} in every row): there "
                        "is no variance to model")
    offset = fixed.offset(rows) if parsed.offsets else None
    if offset is not None:
        if not np.all(np.isfinite(offset)):
            i = int(np.flatnonzero(~np.isfinite(offset))[0])
            raise DataError(f"the offset is not finite in row {d.index[i]!r}")
        fixed = dataclasses.replace(fixed, offset_mean=float(offset.mean()))
        y = y - offset
    terms = build_random_terms(parsed.random, rows, len(rows))
    for t in terms:
        if t.nl >= len(rows):  # lme4's checkNlevels for lmer: the residual would be unidentified
            raise DataError(f"grouping factor {t.group!r} has {t.nl} levels for {len(rows)} "
                            "observations: a linear mixed model needs fewer levels than rows (the "
                            "random effects and the residual variance are otherwise confounded)")
    # Z: term blocks side by side, level-major within a term; Lambda's entries and their theta
    zr, zc, zv = [], [], []
    lr, lc, li = [], [], []
    pos, th0 = 0, 0
    n = len(rows)
    for t in terms:
        Zt = np.asarray(t.Z, dtype=float)
        for c in range(t.nc):
            zr.append(np.arange(n))
            zc.append(pos + t.index * t.nc + c)
            zv.append(np.broadcast_to(Zt[:, c], (n,)))
        base = pos + np.arange(t.nl) * t.nc
        for k, (i, j) in enumerate(t.theta_pairs):
            lr.append(base + i)
            lc.append(base + j)
            li.append(np.full(t.nl, th0 + k))
        pos += t.nl * t.nc
        th0 += t.theta_size
    Z = sparse.csc_matrix((np.concatenate(zv), (np.concatenate(zr), np.concatenate(zc))),
                          shape=(n, pos))
    return LmmDesign(parsed, fixed, X, y, offset, terms, Z, np.concatenate(lr), np.concatenate(lc),
                     np.concatenate(li), d, dropped)
