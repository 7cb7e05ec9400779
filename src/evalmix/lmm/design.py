"""From formula and data to the arrays of a linear mixed model (lme4's ``lFormula``).

The glue is thin: :func:`evalmix.formula.parse_formula`, :func:`~evalmix.formula.build_fixed` and
:func:`~evalmix.formula.build_random_terms` do the work.  The random terms own the theta layout
(:class:`~evalmix.formula.RandomTerm`); this module only lays their columns side by side into the
sparse ``Z`` and the index map of ``Lambda``.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from scipy import sparse

from ..data import RunsData, load_table
from ..errors import DataError, DataWarning, FormulaError
from ..formula import (FixedDesign, ParsedFormula, RandomTerm, build_fixed, build_random_terms,
                       fixed_variables, parse_formula, random_columns)

__all__ = ["LmmDesign", "build_lmm_design"]


@dataclass
class LmmDesign:
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

    @property
    def theta_lower(self) -> np.ndarray:
        return np.concatenate([t.theta_lower for t in self.terms])

    @property
    def theta_start(self) -> np.ndarray:
        return np.concatenate([t.theta_start for t in self.terms])

    @property
    def theta_names(self) -> list[str]:
        return [n for t in self.terms for n in t.theta_names]

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


def _independent_columns(X: np.ndarray, tol: float = 1e-7) -> list[int]:
    """Columns of X kept when the later of aliased columns are dropped (as lme4's
    ``chkRank.drop.cols``: a pivoted QR that keeps the earliest independent columns)."""
    keep: list[int] = []
    Q = np.zeros((X.shape[0], 0))
    for j in range(X.shape[1]):
        v = X[:, j]
        r = v - Q @ (Q.T @ v)
        nv = np.linalg.norm(v)
        if nv > 0 and np.linalg.norm(r) > tol * nv:
            keep.append(j)
            Q = np.column_stack([Q, r / np.linalg.norm(r)])
    return keep


# transforms whose coefficients depend on all the rows (centre, scale, knots): X is then built on
# the rows themselves, not on their distinct patterns
_STATEFUL = re.compile(r"(?<![\w.])(scale|poly|center|ns|bs)\s*\(")


def _fixed_matrix(parsed: ParsedFormula, rows: pd.DataFrame, fixed_cols: list[str],
                  contrasts: dict[str, Any] | None) -> tuple[FixedDesign, np.ndarray]:
    """The fixed design and X.  X is a function of the fixed-part columns, so it is built once
    per distinct combination of them (evaluation designs have a handful: models x languages)
    and spread to the rows; the covariate means and the factor data of the design are those
    of the rows, as :func:`~evalmix.formula.build_fixed` on the rows would give."""
    if not fixed_cols or _STATEFUL.search(parsed.fixed) \
            or any(_STATEFUL.search(o) for o in parsed.offsets):
        return build_fixed(parsed.fixed, rows, contrasts, parsed.offsets)
    pat = rows[fixed_cols].groupby(fixed_cols, sort=False, observed=True).ngroup().to_numpy()
    if pat.max() + 1 > len(rows) // 4:  # many patterns: nothing to save
        return build_fixed(parsed.fixed, rows, contrasts, parsed.offsets)
    first = np.zeros(int(pat.max()) + 1, dtype=np.int64)
    first[pat[::-1]] = np.arange(len(pat))[::-1]
    fixed, Xu = build_fixed(parsed.fixed, rows.iloc[first].reset_index(drop=True), contrasts,
                            parsed.offsets)
    for c in fixed.covariates:
        fixed.covariates[c] = float(rows[c].mean())
    fixed.weights_data = rows[list(fixed.factors)].reset_index(drop=True) if fixed.factors else None
    return fixed, np.ascontiguousarray(Xu[pat])


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
        out[c] = pd.Categorical.from_codes(codes, categories=pd.Index([str(v) for v in levels]))
    return frame.assign(**out) if out else frame


def build_lmm_design(formula: str, data: RunsData, *, contrasts: dict[str, Any] | None = None
                     ) -> LmmDesign:
    """Parse an lme4 formula and build the design of a linear mixed model on ``data``.

    The response must be numeric; rows with a missing value in a column the formula uses are
    dropped with a :class:`~evalmix.errors.DataWarning`.  A fixed-effect column aliased with
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
    if not isinstance(formula, str):
        raise FormulaError(f"formula must be a string such as 'score ~ model + (1|item)', got "
                           f"{type(formula).__name__}")
    parsed = parse_formula(formula)
    if parsed.trials is not None or parsed.failures is not None:
        raise FormulaError(f"formula {formula!r} has a cbind() response: lmer fits a numeric "
                           "response; use evalmix.glmer for counts")
    if not parsed.random:
        raise FormulaError(f"formula {formula!r} has no random term such as (1|item); lmer needs "
                           "at least one")
    if isinstance(data, (str, Path)):
        data = load_table(data)
    elif not isinstance(data, pd.DataFrame):
        raise DataError(f"data must be a pandas DataFrame or a path, got {type(data).__name__}")
    yname = parsed.successes
    if yname not in data.columns:
        raise FormulaError(f"response column {yname!r} is absent from the data "
                           f"(columns: {list(data.columns)})")
    fixed_cols = fixed_variables(parsed.fixed, parsed.offsets)
    absent = [c for c in fixed_cols if c not in data.columns]
    if absent:
        raise FormulaError(f"fixed-effect term(s) name column(s) {absent} absent from the data "
                           f"(columns: {list(data.columns)})")
    rand_cols = random_columns(parsed.random, data)
    used = list(dict.fromkeys([yname, *fixed_cols, *rand_cols]))
    d = data[used]
    ycol = d[yname]
    if pd.api.types.is_bool_dtype(ycol):
        raise DataError(f"response column {yname!r} must be numeric, it holds booleans: give "
                        "0/1 numbers, or fit a binary response with evalmix.glmer")
    if not pd.api.types.is_numeric_dtype(ycol):
        num = pd.to_numeric(ycol, errors="coerce")
        bad = num.isna() & ycol.notna()
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise DataError(f"response column {yname!r} must be numeric (row {d.index[i]!r} has "
                            f"{ycol.iloc[i]!r})")
        d = d.assign(**{yname: num})
    yv = d[yname].to_numpy(dtype=float)
    if np.isinf(yv).any():
        i = int(np.flatnonzero(np.isinf(yv))[0])
        raise DataError(f"response column {yname!r} is infinite in row {d.index[i]!r}")
    na = d.isna().any(axis=1).to_numpy()
    if na.any():
        warnings.warn(f"dropping {int(na.sum())} row(s) with missing values in {used}", DataWarning,
                      stacklevel=3)
        d = d.loc[~na]
    if len(d) == 0:
        raise DataError("no rows left to fit")
    rows = _text_as_factors(d.reset_index(drop=True))
    fixed, X = _fixed_matrix(parsed, rows, fixed_cols, contrasts)
    dropped: tuple[str, ...] = ()
    keep = _independent_columns(X)
    if len(keep) < X.shape[1]:
        dropped = tuple(fixed.columns[j] for j in range(X.shape[1]) if j not in keep)
        warnings.warn(f"fixed-effect model matrix is rank deficient so dropping {len(dropped)} "
                      f"column(s): {list(dropped)}", DataWarning, stacklevel=3)
        fixed.drop_columns(keep)
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
        fixed.offset_mean = float(offset.mean())
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
