"""From formula and data to the arrays the deviance works on (lme4's ``glFormula``).

Rows whose fixed covariates, grouping levels and random-slope covariates are all identical are
pooled into binomial counts: the binomial likelihood of the pooled counts equals the product of the
row likelihoods up to the log binomial coefficients, which are tracked separately so that the
reported log-likelihood is the one of the rows as given.
"""

from __future__ import annotations

import dataclasses
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import gammaln

from ..data import RunsData, ensure_runs, load_table
from ..errors import DataError, DataWarning, FormulaError
from ..formula import (FixedDesign, ParsedFormula, RandomTerm, build_fixed, build_random_terms,
                       parse_formula, random_columns, factor_columns)


@dataclass
class GlmmDesign:
    """Pooled response, fixed design and random-effects terms of a binomial GLMM."""

    parsed: ParsedFormula
    fixed: FixedDesign
    X: "FixedMatrix"  # pooled rows x p
    k: np.ndarray  # successes per pooled row
    m: np.ndarray  # trials per pooled row
    terms: list[RandomTerm]
    nobs: int  # rows as given (after dropping missing values)
    log_binom: float  # sum over the given rows of log C(n, k) (0 for 0/1 rows)
    counts: bool  # response given as k-of-n
    row_index: np.ndarray  # pooled row of each given row
    k_rows: np.ndarray
    m_rows: np.ndarray
    data: pd.DataFrame  # the given rows used (missing values dropped)

    @property
    def theta_lower(self) -> np.ndarray:
        lb = []
        for t in self.terms:
            for j in range(t.nc):
                for i in range(j, t.nc):
                    lb.append(0.0 if i == j else -np.inf)
        return np.array(lb)

    @property
    def theta_start(self) -> np.ndarray:
        return np.where(self.theta_lower == 0.0, 1.0, 0.0)

    @property
    def theta_names(self) -> list[str]:
        return [n for t in self.terms for n in t.theta_names]


def _response(parsed: ParsedFormula, data: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    k = pd.to_numeric(data[parsed.successes], errors="coerce").to_numpy(dtype=float)
    if parsed.trials is not None:
        m = pd.to_numeric(data[parsed.trials], errors="coerce").to_numpy(dtype=float)
    elif parsed.failures is not None:
        m = k + pd.to_numeric(data[parsed.failures], errors="coerce").to_numpy(dtype=float)
    else:
        col = data[parsed.successes]
        if pd.api.types.is_bool_dtype(col):
            k = col.to_numpy(dtype=float)
        bad = ~np.isin(k, (0.0, 1.0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"response column {parsed.successes!r} must be 0/1 (row {data.index[i]!r} "
                            f"has {data[parsed.successes].iloc[i]!r}); write cbind(k, n - k) for counts")
        return k, np.ones_like(k)
    bad = (k < 0) | (m < k) | (k != np.round(k)) | (m != np.round(m))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"counts in row {data.index[i]!r} are not 0 <= {parsed.successes} <= trials "
                        f"integers ({k[i]!r} of {m[i]!r})")
    return k, m


def _parse(formula: str, trials: str | None) -> ParsedFormula:
    parsed = parse_formula(formula)
    if trials is not None:
        if parsed.trials is not None or parsed.failures is not None:
            raise FormulaError("give the trials either in cbind() or as trials=, not both")
        parsed = dataclasses.replace(parsed, trials=trials)
    return parsed


def check_data(formula: str, data: RunsData, *, trials: str | None = None,
               missing: str = "raise") -> pd.DataFrame:
    """Validate the data of a GLMM with the runs-table rules of :func:`evalmix.data.ensure_runs`.

    The response is the formula's (0/1, or k-of-n counts); the item, model and run roles are the
    recorded or conventional ones when the table has them (duplicated (model, item, run, slices)
    keys are refused); a factor of the fixed part with a single level is a FormulaError naming the
    term (lme4 fails on it as "contrasts can be applied only to factors with 2 or more levels").
    A path is read with :func:`evalmix.data.load_table`.  Returns the validated table.

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"item": [1, 1, 2, 2], "model": ["a", "b", "a", "b"],
    ...                   "lang": ["EN"] * 4, "correct": [1, 0, 1, 1]})
    >>> try:
    ...     check_data("correct ~ model + lang + (1|item)", d)
    ... except FormulaError as exc:
    ...     print(exc)
    fixed-effect term 'lang' is a factor with a single level ('EN'): it has no contrast to estimate; drop it from the formula
    """
    parsed = _parse(formula, trials)
    if isinstance(data, (str, Path)):
        data = load_table(data)
    elif not isinstance(data, pd.DataFrame):
        raise DataError(f"data must be a pandas DataFrame or a path, got {type(data).__name__}")
    for c in parsed.columns:
        if c not in data.columns:
            raise FormulaError(f"response column {c!r} is absent from the data "
                               f"(columns: {list(data.columns)})")
    if parsed.failures is not None:
        roles: dict = {"check_outcome": False}
    elif parsed.trials is not None:
        roles = {"successes": parsed.successes, "trials": parsed.trials}
    else:
        roles = {"outcome": parsed.successes}
    df, _ = ensure_runs(data, missing=missing, **roles)
    for c in factor_columns(parsed.fixed, df):
        if c not in df.columns:
            continue
        s = df[c]
        is_factor = (pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s)
                     or isinstance(s.dtype, pd.CategoricalDtype))
        if is_factor and s.nunique() < 2:
            raise FormulaError(f"fixed-effect term {c!r} is a factor with a single level "
                               f"({s.iloc[0].item() if hasattr(s.iloc[0], 'item') else s.iloc[0]!r}): "
                               "it has no contrast to estimate; drop it from the formula")
    return df


def build_design(formula: str, data: pd.DataFrame, *, pool: bool = True,
                 trials: str | None = None, missing: str = "raise") -> GlmmDesign:
    """Parse ``formula`` and build the pooled design on ``data`` (rows with missing values dropped).

    ``trials`` names a column of trials for a response of success counts (``k ~ ...`` with
    ``trials="n"`` is ``cbind(k, n - k) ~ ...``).
    """
    parsed = _parse(formula, trials)
    if not parsed.random:
        raise FormulaError(f"formula {formula!r} has no random term such as (1|item); "
                           "fit a plain logistic regression instead")
    data = check_data(formula, data, trials=trials, missing=missing)
    fixed_cols = [c for c in factor_columns(parsed.fixed, data) if c in data.columns]
    rand_cols = random_columns(parsed.random, data)
    used = list(dict.fromkeys(parsed.columns + fixed_cols + rand_cols))
    missing_fixed = [c for c in factor_columns(parsed.fixed, data) if c not in data.columns]
    if missing_fixed:
        raise FormulaError(f"fixed-effect term(s) name column(s) {missing_fixed} absent from the data "
                           f"(columns: {list(data.columns)})")
    d = data[used]
    na = d.isna().any(axis=1).to_numpy()
    if na.any():
        warnings.warn(f"dropping {int(na.sum())} row(s) with missing values in {used}", DataWarning,
                      stacklevel=3)
        d = d.loc[~na]
    if len(d) == 0:
        raise DataError("no rows left to fit")
    k, m = _response(parsed, d)
    if (m == 0).any():
        keep = m > 0
        d, k, m = d.loc[keep], k[keep], m[keep]
    nobs = len(d)
    counts = parsed.trials is not None or parsed.failures is not None
    log_binom = float(np.sum(gammaln(m + 1) - gammaln(k + 1) - gammaln(m - k + 1))) if counts else 0.0

    key_cols = [c for c in used if c not in parsed.columns]
    if pool and key_cols:
        key = d[key_cols].groupby(key_cols, sort=False, observed=True, dropna=False).ngroup().to_numpy()
        ng = int(key.max()) + 1
    else:
        ng = nobs
    k_rows, m_rows = k, m
    if ng < nobs:
        first = np.full(ng, -1, dtype=np.int64)
        order = np.arange(nobs)[::-1]
        first[key[order]] = order  # earliest row of each pattern
        k = np.bincount(key, k, ng)
        m = np.bincount(key, m, ng)
        dp = d.iloc[first]
        row_index = key
    else:
        dp = d
        row_index = np.arange(nobs)
    dp = dp.reset_index(drop=True)
    # X is a function of the fixed-part columns: build it once per distinct pattern
    if fixed_cols:
        pat = dp[fixed_cols].groupby(fixed_cols, sort=False, observed=True).ngroup().to_numpy()
        order = np.arange(len(pat))[::-1]
        firsts = np.zeros(int(pat.max()) + 1, dtype=np.int64)
        firsts[pat[order]] = order
    else:
        pat, firsts = np.zeros(len(dp), dtype=np.int64), np.zeros(1, dtype=np.int64)
    fixed, Xu = build_fixed(parsed.fixed, dp.iloc[firsts].reset_index(drop=True))
    for c in fixed.covariates:
        fixed.covariates[c] = float(d[c].mean())
    fixed.weights_data = d[list(fixed.factors)].reset_index(drop=True) if fixed.factors else None
    terms = build_random_terms(parsed.random, dp, nobs)
    return GlmmDesign(parsed, fixed, FixedMatrix(Xu, pat), k, m, terms, nobs, log_binom, counts,
                      row_index, k_rows, m_rows, d)


class FixedMatrix:
    """X stored as its distinct rows ``Xu`` and each row's pattern ``pat`` (X = Xu[pat]).

    Evaluation designs have few fixed-effect patterns (model x language x prompt), so products
    with X cost O(n + patterns x p) instead of O(n p). With many patterns X is kept dense.
    """

    def __init__(self, Xu: np.ndarray, pat: np.ndarray):
        self.n = pat.size
        self.p = Xu.shape[1]
        if Xu.shape[0] * 4 > self.n:
            self.Xu, self.pat, self.X = None, None, np.ascontiguousarray(Xu[pat])
        else:
            self.Xu, self.pat, self.X = Xu, pat, None
        self.npat = Xu.shape[0]

    @property
    def shape(self) -> tuple[int, int]:
        return (self.n, self.p)

    @property
    def unique_rows(self) -> np.ndarray:
        return self.X if self.X is not None else self.Xu

    def dense(self) -> np.ndarray:
        return self.X if self.X is not None else self.Xu[self.pat]

    def take_columns(self, keep: list[int]) -> None:
        if self.X is not None:
            self.X = np.ascontiguousarray(self.X[:, keep])
        else:
            self.Xu = np.ascontiguousarray(self.Xu[:, keep])
        self.p = len(keep)

    def dot(self, beta: np.ndarray) -> np.ndarray:
        if self.X is not None:
            return self.X @ beta
        return (self.Xu @ beta)[self.pat]

    def tdot(self, v: np.ndarray) -> np.ndarray:
        if self.X is not None:
            return self.X.T @ v
        return self.Xu.T @ np.bincount(self.pat, v, self.npat)

    def gram(self, w: np.ndarray) -> np.ndarray:
        """X' diag(w) X."""
        if self.X is not None:
            return self.X.T @ (w[:, None] * self.X)
        s = np.bincount(self.pat, w, self.npat)
        return self.Xu.T @ (s[:, None] * self.Xu)

    def group_wsum(self, idx: np.ndarray, ng: int, w: np.ndarray) -> np.ndarray:
        """``sum_{i in g} w_i x_i`` for each group ``g`` of ``idx`` (ng x p)."""
        if self.X is not None or ng * self.npat > 5e7:
            import scipy.sparse as sp

            E = sp.csr_matrix((w, (idx, np.arange(self.n))), shape=(ng, self.n))
            return np.asarray(E @ self.dense())
        tab = np.bincount(idx * self.npat + self.pat, w, ng * self.npat).reshape(ng, self.npat)
        return tab @ self.Xu
