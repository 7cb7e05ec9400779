"""From formula and data to the arrays an engine works on (lme4's ``lFormula`` / ``glFormula``).

The model frame is engine-neutral: :func:`model_columns` names the columns a formula reads (the
data's columns found first, as R's lookup order has it), :func:`complete_rows` drops rows with a
missing value, :func:`fixed_on_patterns` builds X once per distinct pattern of the fixed-part
columns. The binomial design (:func:`build_design`, a :class:`GlmmDesign`) stands on them for the
binomial engines, maximum likelihood (:mod:`evalmix.glmm`) and Bayesian (:mod:`evalmix.bayes`)
alike: rows whose fixed covariates, grouping levels and random-slope covariates are all identical
are pooled into binomial counts; the binomial likelihood of the pooled counts equals the product of
the row likelihoods up to the log binomial coefficients, which are tracked separately so that the
reported log-likelihood is the one of the rows as given.
"""

from __future__ import annotations

import copy
import dataclasses
import re
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy.special import gammaln

from ..data.runs import RunsData, at_the_door, check_weights, ensure_runs, load_table, schema_of
from ..core.errors import DataError, DataWarning, FormulaError
from .fixed import FixedDesign, build_fixed, independent_columns
from .functions import as_r_factor, fixed_variables
from .parse import ParsedFormula, parse_formula
from .random import RandomTerm, ThetaLayout, build_random_terms, random_columns
from .response import engine_hint, rows_text

__all__ = ["STATEFUL", "FixedMatrix", "GlmmDesign", "build_design", "check_data", "complete_rows", "drop_rank_deficient",
           "fitted_offset", "fixed_on_patterns", "fixed_patterns", "model_columns", "read_data", "stateful"]


@dataclass
class GlmmDesign(ThetaLayout):
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
    offset: np.ndarray | None = None  # per pooled row (formula offsets plus ``offset=``)
    offset_rows: np.ndarray | None = None  # per given row
    weights_rows: np.ndarray | None = None  # prior weights of the given rows (None: all 1)
    log_binom_rows: np.ndarray | None = None  # each given row's share of ``log_binom``
    binary_rows: bool = False  # k-of-n counts standing for 0/1 rows (a table counted in its engine)


def _binary_response(col: pd.Series, name: str) -> np.ndarray:
    """0/1 successes of a one-column response, with R's rule for factors: the first level is a
    failure, every other level a success (booleans: ``False`` fails)."""
    if isinstance(col.dtype, pd.CategoricalDtype) or pd.api.types.is_bool_dtype(col) \
            or not pd.api.types.is_numeric_dtype(col):
        cat = as_r_factor(col)
        if len(cat.categories) > 2 and not isinstance(col.dtype, pd.CategoricalDtype):
            raise DataError(f"response column {name!r} has {len(cat.categories)} values "
                            f"{list(cat.categories)[:5]}; R would treat all but the first as "
                            "successes: pass a categorical to mean that, or a 0/1 column")
        return (np.asarray(cat.codes) > 0).astype(float)
    return pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)


def _response(parsed: ParsedFormula, data: pd.DataFrame,
              weights: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Successes and trials per given row (prior weights applied) and the log-likelihood constant
    of each row, as R's ``binomial()$aic`` counts it."""
    name = parsed.successes
    if parsed.trials is not None or parsed.failures is not None:
        k = pd.to_numeric(data[name], errors="coerce").to_numpy(dtype=float)
        if parsed.trials is not None:
            m = pd.to_numeric(data[parsed.trials], errors="coerce").to_numpy(dtype=float)
        else:
            m = k + pd.to_numeric(data[parsed.failures], errors="coerce").to_numpy(dtype=float)
        bad = (k < 0) | (m < k) | (k != np.round(k)) | (m != np.round(m))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"counts in row {data.index[i]!r} are not 0 <= {name} <= trials "
                            f"integers ({k[i]!r} of {m[i]!r})")
        const = gammaln(m + 1) - gammaln(k + 1) - gammaln(m - k + 1)
        if weights is None:
            return k, m, const
        return weights * k, weights * m, weights * const
    y = _binary_response(data[name], name)
    if weights is None:
        bad = ~np.isin(y, (0.0, 1.0))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise DataError(f"response column {name!r} must be 0/1 (row {data.index[i]!r} has "
                            f"{data[name].iloc[i]!r}); write cbind(k, n - k) for counts, or give "
                            "proportions with weights= the trials")
        return y, np.ones_like(y), np.zeros_like(y)
    # lme4's proportion response: y in [0, 1] with weights = trials
    bad = (y < 0) | (y > 1) | ~np.isfinite(y)
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise DataError(f"response column {name!r} must lie in [0, 1] with weights= (row "
                        f"{data.index[i]!r} has {data[name].iloc[i]!r})")
    k, m = weights * y, weights
    if np.any(np.abs(k - np.round(k)) > 1e-3):
        i = int(np.flatnonzero(np.abs(k - np.round(k)) > 1e-3)[0])
        warnings.warn(f"non-integer number of successes (row {data.index[i]!r}: {name} x weight "
                      f"= {k[i]:.4g}), as R warns 'non-integer #successes in a binomial glm'",
                      DataWarning, stacklevel=4)
    kr, mr = np.round(k), np.round(m)
    const = gammaln(mr + 1) - gammaln(kr + 1) - gammaln(mr - kr + 1)
    return k, m, const


def _row_values(value: str | ArrayLike | None, data: pd.DataFrame, what: str) -> np.ndarray | None:
    """A per-row numeric argument given as a column name or an array (None when not given)."""
    if value is None:
        return None
    if isinstance(value, str):
        if value not in data.columns:
            raise FormulaError(f"{what}={value!r} is not a column of the data "
                               f"(columns: {list(data.columns)})")
        arr = pd.to_numeric(data[value], errors="coerce").to_numpy(dtype=float)
    else:
        arr = np.asarray(value, dtype=float).ravel()
        if arr.size != len(data):
            raise DataError(f"{what} has {arr.size} values for {len(data)} rows of data")
    return arr


def _parse(formula: str, trials: str | None) -> ParsedFormula:
    parsed = parse_formula(formula)
    if trials is not None:
        if parsed.trials is not None or parsed.failures is not None:
            raise FormulaError("give the trials either in cbind() or as trials=, not both")
        parsed = dataclasses.replace(parsed, trials=trials)
    return parsed


def _drop_unused_incomplete(data: pd.DataFrame, parsed: ParsedFormula, weights: Any,
                            offset: Any) -> pd.DataFrame:
    """Leave out columns the model never reads that hold missing values.

    The runs-table rules treat every other column as a slice, where a missing value is an error
    (and ``missing="drop"`` drops the row); a model, like R's ``model.frame``, only reads its own
    variables, so a half-empty notes column must neither stop the fit nor thin its rows.  The
    item, model and run roles stay: they key the table.
    """
    used = set(parsed.columns) | set(fixed_variables(parsed.fixed, parsed.offsets))
    used |= set(random_columns(parsed.random, data))
    used |= {v for v in (weights, offset) if isinstance(v, str)}
    recorded = schema_of(data)
    keys = {"item", "model", "run"} if recorded is None else \
        {c for c in (recorded.item, recorded.model, recorded.run) if c is not None}
    drop = [c for c in data.columns if c not in used and c not in keys and data[c].isna().any()]
    return data.drop(columns=drop) if drop else data


def read_data(data: RunsData, groups: tuple[Any, ...] = ()) -> pd.DataFrame:
    """The table of a model: a DataFrame as given, a path read with :func:`evalmix.data.runs.load_table`.

    ``groups``: the random terms of the formula (:class:`~evalmix.model.parse.RandomSpec`); their
    grouping columns, with ``model``, ``item`` and ``run``, are identifiers read from a file as
    written (``1`` and ``1.0`` stay two levels).

    Examples
    --------
    >>> read_data(pd.DataFrame({"y": [1]})).shape
    (1, 1)
    """
    if isinstance(data, (str, Path)):
        ids = ["model", "item", "run", *(g for spec in groups for g in getattr(spec, "group", ()))]
        return load_table(data, ids=ids)
    data = at_the_door(data)  # polars, Arrow, DuckDB... tables, converted at the door as everywhere
    if not isinstance(data, pd.DataFrame):
        raise DataError(f"data must be a DataFrame or a path (pandas, polars, Arrow, DuckDB tables), got "
                        f"{type(data).__module__}.{type(data).__name__}")
    return data


def model_columns(parsed: ParsedFormula, data: pd.DataFrame) -> list[str]:
    """The columns of ``data`` a formula reads, in order: the response's, the fixed part's and
    offsets' variables, the grouping factors and random-slope covariates. A variable is a data
    column first (R's lookup order: a column named ``I`` or ``log`` is the column).

    Raises
    ------
    FormulaError
        Naming the columns of the fixed part, or of a random term, absent from ``data``.

    Examples
    --------
    >>> d = pd.DataFrame({"y": [0, 1], "I": [1, 2], "N": [2, 4], "item": [1, 2]})
    >>> model_columns(parse_formula("y ~ 1 + offset(log(I/N)) + (1|item)"), d)
    ['y', 'I', 'N', 'item']
    """
    fixed_cols = fixed_variables(parsed.fixed, parsed.offsets)
    absent = [c for c in fixed_cols if c not in data.columns]
    if absent:
        raise FormulaError(f"fixed-effect term(s) name column(s) {absent} absent from the data "
                           f"(columns: {list(data.columns)})")
    return list(dict.fromkeys(parsed.columns + fixed_cols + random_columns(parsed.random, data)))


def fitted_offset(fixed: FixedDesign, rows: pd.DataFrame, labels: pd.Index) -> tuple[np.ndarray, FixedDesign]:
    """The formula's ``offset()`` terms on the fitted rows, checked finite, and the fixed design
    fitted on those rows with their mean offset (what a reference grid adds to its means).

    Parameters
    ----------
    fixed : FixedDesign
        The fixed design, built with the formula's offsets.
    rows : DataFrame
        The fitted rows (complete, with a fresh index).
    labels : Index
        The rows' labels in the user's table (for the error).

    Returns
    -------
    offset : ndarray
        The offset of each row.
    fixed : FixedDesign
        ``fixed.fitted_on(rows, offset.mean())``.

    Raises
    ------
    DataError
        An offset is not finite, naming the rows.

    Examples
    --------
    >>> d = pd.DataFrame({"m": ["a", "b", "b"], "t": [1.0, 2.0, 4.0]})
    >>> fixed, _ = build_fixed("m", d, None, ("log(t)",))
    >>> off, fitted = fitted_offset(fixed, d, d.index)
    >>> off.round(4).tolist(), round(fitted.offset_mean, 4)
    ([0.0, 0.6931, 1.3863], 0.6931)
    """
    offset = np.asarray(fixed.offset(rows), dtype=float)
    if not np.all(np.isfinite(offset)):
        raise DataError(f"the offset is not finite in rows {rows_text(labels, ~np.isfinite(offset))}")
    return offset, fixed.fitted_on(rows, float(offset.mean()))


def complete_rows(frame: pd.DataFrame, *values: np.ndarray | None) -> np.ndarray:
    """Which rows of ``frame`` a model keeps: those without a missing value in its columns and
    with finite ``values`` (per-row weights, offsets); the rows dropped are announced with a
    :class:`~evalmix.core.errors.DataWarning`, as R's ``na.omit`` drops them silently.

    Raises
    ------
    DataError
        When no row is left.

    Examples
    --------
    >>> import warnings
    >>> with warnings.catch_warnings(record=True):
    ...     complete_rows(pd.DataFrame({"y": [1.0, None, 3.0]})).tolist()
    [True, False, True]
    """
    na = frame.isna().any(axis=1).to_numpy()
    for arr in values:
        if arr is not None:
            na = na | ~np.isfinite(arr)
    if na.any():
        warnings.warn(f"dropping {int(na.sum())} row(s) with missing values in {list(frame.columns)}",
                      DataWarning, stacklevel=4)
    if na.all():
        raise DataError("no rows left to fit")
    return ~na


# transforms whose coefficients depend on all the rows (centre, scale, knots): X is then built on
# the rows themselves, not on their distinct patterns
STATEFUL = re.compile(r"(?<![\w.])(scale|poly|center|ns|bs)\s*\(")


def stateful(parsed: ParsedFormula) -> bool:
    """Whether the fixed part or an offset calls a transform fitted to every row (``scale``,
    ``poly``, ``ns``, ``bs``, ``center``).

    Examples
    --------
    >>> stateful(parse_formula("y ~ scale(x) + (1|g)")), stateful(parse_formula("y ~ log(x) + (1|g)"))
    (True, False)
    """
    return bool(STATEFUL.search(parsed.fixed) or any(STATEFUL.search(o) for o in parsed.offsets))


def _pattern_codes(frame: pd.DataFrame, columns: list[str]) -> np.ndarray | None:
    """The number of each row's distinct combination of values of ``columns``, in order of first
    appearance (``groupby(sort=False).ngroup()``), from each column's integer codes (a
    categorical's own codes, or one hashing pass); None when a value is missing or the codes'
    product would overflow (``groupby`` then decides)."""
    combined = np.zeros(len(frame), dtype=np.int64)
    radix = 1
    for c in columns:
        s = frame[c]
        if isinstance(s.dtype, pd.CategoricalDtype):
            codes, k = np.asarray(s.cat.codes, dtype=np.int64), len(s.cat.categories)
        else:
            codes, uniques = pd.factorize(s)
            k = len(uniques)
        radix *= max(k, 1)
        if radix > 2 ** 62 or (codes < 0).any():
            return None
        combined = combined * max(k, 1) + codes
    return np.asarray(pd.factorize(combined)[0], dtype=np.int64)


def fixed_patterns(parsed: ParsedFormula, rows: pd.DataFrame, contrasts: dict[str, Any] | None = None
                   ) -> tuple[FixedDesign, np.ndarray, np.ndarray | None]:
    """The fixed design, X of each distinct pattern of the fixed-part columns and each row's
    pattern: X of the rows is ``Xu[pattern]``.  ``pattern`` is None (``Xu`` is X of the rows)
    when there is nothing to save: no fixed-part column, a stateful transform (built on the rows
    themselves) or more than a quarter as many patterns as rows.

    Examples
    --------
    >>> d = pd.DataFrame({"m": ["a", "b", "b", "a"] * 2, "x": [1.0, 2.0, 2.0, 1.0] * 2})
    >>> fd, Xu, pattern = fixed_patterns(parse_formula("y ~ m + x + (1|g)"), d)
    >>> Xu.tolist(), pattern.tolist()
    ([[1.0, 0.0, 1.0], [1.0, 1.0, 2.0]], [0, 1, 1, 0, 0, 1, 1, 0])
    """
    fixed_cols = fixed_variables(parsed.fixed, parsed.offsets)
    if not fixed_cols or stateful(parsed):
        return (*build_fixed(parsed.fixed, rows, contrasts, parsed.offsets), None)
    pat = _pattern_codes(rows, fixed_cols)
    if pat is None:
        pat = rows[fixed_cols].groupby(fixed_cols, sort=False, observed=True).ngroup().to_numpy()
    if pat.max() + 1 > len(rows) // 4:  # many patterns: nothing to save
        return (*build_fixed(parsed.fixed, rows, contrasts, parsed.offsets), None)
    first = np.zeros(int(pat.max()) + 1, dtype=np.int64)
    first[pat[::-1]] = np.arange(len(pat))[::-1]
    fixed, Xu = build_fixed(parsed.fixed, rows.iloc[first].reset_index(drop=True), contrasts,
                            parsed.offsets)
    return fixed.fitted_on(rows), Xu, pat


def fixed_on_patterns(parsed: ParsedFormula, rows: pd.DataFrame,
                      contrasts: dict[str, Any] | None = None) -> tuple[FixedDesign, np.ndarray]:
    """The fixed design and X on ``rows`` (index 0..n-1).

    X is a function of the fixed-part columns, so it is built once per distinct combination of
    them (evaluation designs have a handful: models x languages) and spread to the rows; the
    covariate means and factor data of the design are those of the rows
    (:meth:`FixedDesign.fitted_on`), as :func:`build_fixed` on the rows would give. Stateful
    transforms are built on the rows themselves.

    Examples
    --------
    >>> d = pd.DataFrame({"m": ["a", "b"] * 4, "x": [1.0, 2.0] * 4})
    >>> fd, X = fixed_on_patterns(parse_formula("y ~ m + x + (1|g)"), d)
    >>> X.shape, fd.covariates
    ((8, 3), {'x': 1.5})
    """
    fixed, Xu, pat = fixed_patterns(parsed, rows, contrasts)
    return fixed, Xu if pat is None else np.ascontiguousarray(Xu[pat])


def check_data(formula: str, data: RunsData, *, trials: str | None = None, missing: str = "raise",
               weights: str | ArrayLike | None = None, offset: str | ArrayLike | None = None) -> pd.DataFrame:
    """Validate the data of a GLMM with the runs-table rules of :func:`evalmix.data.runs.ensure_runs`.

    The response is the formula's: 0/1 (proportions in [0, 1] with ``weights``), k-of-n counts, or
    a factor/string/boolean column, which :func:`build_design` codes by R's rule.  The item, model
    and run roles are the recorded or conventional ones when the table has them (a duplicated
    (model, item, run, slices) key is refused); a factor of the fixed part with a single level is a
    FormulaError naming the term (lme4 stops there too: "contrasts can be applied only to factors
    with 2 or more levels").  A path is read with :func:`evalmix.data.runs.load_table`.  Returns the
    validated table.

    Examples
    --------
    >>> import pandas as pd
    >>> d = pd.DataFrame({"item": [1, 1, 2, 2], "model": ["a", "b", "a", "b"],
    ...                   "lang": ["EN"] * 4, "correct": [1, 0, 1, 1]})
    >>> try:
    ...     check_data("correct ~ model + lang + (1|item)", d)
    ... except FormulaError as exc:
    ...     print(exc)  # doctest: +ELLIPSIS
    fixed-effect term 'lang' is a factor with a single level ('EN'): it has no contrast to estimate...
    """
    check_weights(data, weights, missing=missing)  # named by its own column, not the model's
    parsed = _parse(formula, trials)
    data = read_data(data, parsed.random)
    for c in parsed.columns:
        if c not in data.columns:
            raise FormulaError(f"response column {c!r} is absent from the data "
                               f"(columns: {list(data.columns)})")
    arrays = [name for name, v in (("weights", weights), ("offset", offset))
              if v is not None and not isinstance(v, str)]
    if missing == "drop" and arrays:
        raise ValueError(f"missing='drop' cannot drop rows of {' and '.join(arrays)} given as arrays: "
                         "give them as column names")
    data = _drop_unused_incomplete(data, parsed, weights, offset)
    y = data[parsed.successes]
    if parsed.failures is not None:
        roles: dict = {"check_outcome": False}  # cbind(k, f): build_design checks the counts
    elif parsed.trials is not None:
        roles = {"successes": parsed.successes, "trials": parsed.trials}
    elif (pd.api.types.is_numeric_dtype(y) and not pd.api.types.is_bool_dtype(y)) or (
            not isinstance(y.dtype, pd.CategoricalDtype) and not pd.api.types.is_bool_dtype(y)
            and pd.to_numeric(y, errors="coerce").notna().any()):
        # numbers (or text holding numbers, where a stray "yes" is a data error, not a level)
        roles = {"outcome": parsed.successes, "allow_fractional": weights is not None}
    else:  # a factor, text labels or a boolean response: R's rule (first level = failure)
        roles = {"check_outcome": False}
    try:
        df, _ = ensure_runs(data, missing=missing, formula=True, **roles)
    except DataError as exc:
        if "must be 0/1" not in str(exc):
            raise
        hint = engine_hint(y, "glmer") if not str(exc).count("non-numeric") else ""
        raise DataError(f"{exc}; in a GLMM write cbind(k, n - k) for counts, or give proportions "
                        "with weights= the trials" + (f"; {hint}" if hint else "")) from None
    for c in fixed_variables(parsed.fixed, parsed.offsets):
        if c not in df.columns:
            continue
        s = df[c]
        is_factor = (pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s)
                     or isinstance(s.dtype, pd.CategoricalDtype))
        if is_factor and s.nunique() < 2:
            first = s.iloc[0].item() if hasattr(s.iloc[0], "item") else s.iloc[0]
            raise FormulaError(f"fixed-effect term {c!r} is a factor with a single level ({first!r}): "
                               "it has no contrast to estimate; drop it from the formula")
    return df


def build_design(formula: str, data: RunsData, *, pool: bool = True, trials: str | None = None,
                 weights: str | ArrayLike | None = None, offset: str | ArrayLike | None = None,
                 contrasts: dict[str, Any] | None = None, missing: str = "raise") -> GlmmDesign:
    """Parse ``formula`` and build the pooled design on ``data`` (rows with missing values dropped).

    The first step of :func:`evalmix.glmer` (lme4's ``glFormula``). ``trials`` names a column of
    trials for a response of success counts (``k ~ ...`` with ``trials="n"`` is
    ``cbind(k, n - k) ~ ...``). ``weights`` (prior weights) and ``offset`` are a column name or
    one value per row of ``data``; ``contrasts`` maps factors to their coding. The data are
    validated first (:func:`check_data`; ``missing`` as there). The random terms, in lme4's
    order, own the theta layout (:class:`~evalmix.model.RandomTerm`); ``theta_lower``,
    ``theta_start`` and ``theta_names`` join theirs.

    Examples
    --------
    >>> from evalmix.simulate import glmm_runs
    >>> design = build_design("correct ~ model + (1|item) + (1|item:run)", glmm_runs(3, 50, 2, rng=1))
    >>> design.X.shape, design.nobs, [t.group for t in design.terms]
    ((300, 3), 300, ['item:run', 'item'])
    >>> design.theta_names, design.theta_lower.tolist()
    (['item:run.(Intercept)', 'item.(Intercept)'], [0.0, 0.0])
    """
    parsed = _parse(formula, trials)
    if not parsed.random:
        raise FormulaError(f"formula {formula!r} has no random term such as (1|item); "
                           "fit a plain logistic regression instead")
    if isinstance(data, pd.DataFrame):
        fixed_cols = fixed_variables(parsed.fixed, parsed.offsets)
        missing_fixed = [c for c in fixed_cols if c not in data.columns]
        if missing_fixed:
            raise FormulaError(f"fixed-effect term(s) name column(s) {missing_fixed} absent from the "
                               f"data (columns: {list(data.columns)})")
    data = check_data(formula, data, trials=trials, missing=missing, weights=weights, offset=offset)
    used = model_columns(parsed, data)
    fixed_cols = fixed_variables(parsed.fixed, parsed.offsets)
    w_all = _row_values(weights, data, "weights")
    o_all = _row_values(offset, data, "offset")
    d = data[used]
    keep_rows = complete_rows(d, w_all, o_all)
    if not keep_rows.all():
        d = d.loc[keep_rows]
        w_all = None if w_all is None else w_all[keep_rows]
        o_all = None if o_all is None else o_all[keep_rows]
    if w_all is not None and (w_all < 0).any():
        i = int(np.flatnonzero(w_all < 0)[0])
        raise DataError(f"weights must be >= 0 (row {d.index[i]!r} has {w_all[i]!r})")
    k, m, const = _response(parsed, d, w_all)
    if (m == 0).any():
        keep = m > 0
        d, k, m, const = d.loc[keep], k[keep], m[keep], const[keep]
        w_all = None if w_all is None else w_all[keep]
        o_all = None if o_all is None else o_all[keep]
    nobs = len(d)
    counts = parsed.trials is not None or parsed.failures is not None or w_all is not None
    log_binom = float(np.sum(const))

    # stateful transforms (scale, poly, ns, bs) take their centre, coefficients and knots from every
    # fitted row (the distinct patterns would move quantile knots)
    if stateful(parsed):
        fixed, _ = build_fixed(parsed.fixed, d.reset_index(drop=True), contrasts, parsed.offsets)
    else:
        fixed = None
    off_rows = None
    if parsed.offsets:
        if fixed is None:
            fixed, _ = build_fixed(parsed.fixed, d.reset_index(drop=True), contrasts,
                                   parsed.offsets)
        off_rows = fixed.offset(d.reset_index(drop=True))
    if o_all is not None:
        off_rows = o_all if off_rows is None else off_rows + o_all
    if off_rows is not None and not np.all(np.isfinite(off_rows)):
        i = int(np.flatnonzero(~np.isfinite(off_rows))[0])
        raise DataError(f"the offset is not finite in row {d.index[i]!r}")

    key_cols = [c for c in used if c not in parsed.columns]
    kd = d[key_cols]
    if off_rows is not None:  # rows pool only when their offsets agree too
        kd = kd.assign(_offset_=off_rows)
    if pool and kd.shape[1]:
        key = kd.groupby(list(kd.columns), sort=False, observed=True,
                         dropna=False).ngroup().to_numpy()
        ng = int(key.max()) + 1
    else:
        ng = nobs
    k_rows, m_rows = k, m
    off = off_rows
    if ng < nobs:
        first = np.full(ng, -1, dtype=np.int64)
        order = np.arange(nobs)[::-1]
        first[key[order]] = order  # earliest row of each pattern
        k = np.bincount(key, k, ng)
        m = np.bincount(key, m, ng)
        dp = d.iloc[first]
        row_index = key
        off = None if off_rows is None else off_rows[first]
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
    patterns = dp.iloc[firsts].reset_index(drop=True)
    if fixed is None:
        fixed, Xu = build_fixed(parsed.fixed, patterns, contrasts, parsed.offsets)
    else:
        Xu = np.ascontiguousarray(fixed.model_matrix(patterns))
    # emmeans holds the covariates and the offset at their means over the fitted rows
    fixed = fixed.fitted_on(d, None if off_rows is None else float(off_rows.mean()))
    terms = build_random_terms(parsed.random, dp, nobs)
    return GlmmDesign(parsed, fixed, FixedMatrix(Xu, pat), k, m, terms, nobs, log_binom, counts,
                      row_index, k_rows, m_rows, d, off, off_rows, w_all, const)


class FixedMatrix:
    """X stored as its distinct rows ``Xu`` and each row's pattern ``pat`` (X = Xu[pat]).

    Evaluation designs have few fixed-effect patterns (model x language x prompt), so products
    with X cost O(n + patterns x p) instead of O(n p). With many patterns X is kept dense.
    """

    # either X (dense) or Xu and pat (compressed) are set, never both
    X: np.ndarray | None
    Xu: np.ndarray | None
    pat: np.ndarray | None

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

    def _compressed(self) -> tuple[np.ndarray, np.ndarray]:
        """``(Xu, pat)`` of a matrix not kept dense."""
        assert self.Xu is not None and self.pat is not None
        return self.Xu, self.pat

    @property
    def unique_rows(self) -> np.ndarray:
        return self.X if self.X is not None else self._compressed()[0]

    def dense(self) -> np.ndarray:
        if self.X is not None:
            return self.X
        Xu, pat = self._compressed()
        return Xu[pat]

    def with_columns(self, keep: list[int]) -> FixedMatrix:
        """A new matrix of the columns ``keep`` (this one is left as it is)."""
        out = copy.copy(self)
        if self.X is not None:
            out.X = np.ascontiguousarray(self.X[:, keep])
        else:
            out.Xu = np.ascontiguousarray(self._compressed()[0][:, keep])
        out.p = len(keep)
        return out

    def dot(self, beta: np.ndarray) -> np.ndarray:
        if self.X is not None:
            return self.X @ beta
        Xu, pat = self._compressed()
        if self.npat == 1:  # one pattern (an intercept-only model): no gather over the rows
            return np.full(self.n, float(Xu[0] @ beta))
        return (Xu @ beta)[pat]

    def tdot(self, v: np.ndarray) -> np.ndarray:
        if self.X is not None:
            return self.X.T @ v
        Xu, pat = self._compressed()
        if self.npat == 1:
            return Xu[0] * float(np.sum(v))
        return Xu.T @ np.bincount(pat, v, self.npat)

    def gram(self, w: np.ndarray) -> np.ndarray:
        """X' diag(w) X."""
        if self.X is not None:
            return self.X.T @ (w[:, None] * self.X)
        Xu, pat = self._compressed()
        s = np.array([np.sum(w)]) if self.npat == 1 else np.bincount(pat, w, self.npat)
        return Xu.T @ (s[:, None] * Xu)

    def group_wsum(self, idx: np.ndarray, ng: int, w: np.ndarray,
                   max_table: float = 5e7) -> np.ndarray:
        """``sum_{i in g} w_i x_i`` for each group ``g`` of ``idx`` (ng x p); a groups x patterns
        table larger than ``max_table`` cells goes through a sparse product instead."""
        if self.X is not None or ng * self.npat > max_table:
            import scipy.sparse as sp

            E = sp.csr_matrix((w, (idx, np.arange(self.n))), shape=(ng, self.n))
            return np.asarray(E @ self.dense())
        Xu, pat = self._compressed()
        if self.npat == 1:
            return np.bincount(idx, w, ng)[:, None] * Xu[0][None, :]
        tab = np.bincount(idx * self.npat + pat, w, ng * self.npat).reshape(ng, self.npat)
        return tab @ Xu


def drop_rank_deficient(design: GlmmDesign, rank_tol: float = 1e-7) -> tuple[GlmmDesign, list[str]]:
    """The design without the columns of X that are linear combinations of earlier ones (lme4
    drops them too), and their names; ``design`` itself is left as it was.

    Examples
    --------
    >>> from evalmix.simulate import glmm_runs
    >>> runs = glmm_runs(2, 20, 2, rng=1).assign(copy=lambda d: d["model"])
    >>> design, dropped = drop_rank_deficient(build_design("correct ~ model + copy + (1|item)", runs))
    >>> dropped, design.fixed.columns
    (['copyM2'], ['(Intercept)', 'modelM2'])
    """
    Xu = design.X.unique_rows  # same column space as X, usually far fewer rows
    keep = independent_columns(Xu, rank_tol)
    dropped = [design.fixed.columns[j] for j in range(Xu.shape[1]) if j not in keep]
    if not dropped:
        return design, dropped
    return dataclasses.replace(design, X=design.X.with_columns(keep), fixed=design.fixed.with_columns(keep)), dropped
