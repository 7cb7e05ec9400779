"""lme4-style model formulas: response, fixed part (via formulaic) and random-effects terms.

A formula such as ``cbind(k, n - k) ~ model * language + (1|item) + (1 + x||g)`` is split into

- the response: a 0/1 column, or k-of-n counts written ``cbind(k, n - k)`` (or ``cbind(k, f)`` with a
  column of failures);
- the fixed part, built by formulaic with treatment coding and factor levels sorted like R's
  ``factor()`` (a pandas categorical keeps its own level order);
- random terms ``(expr | g)``: ``g`` may be a column, an interaction ``a:b`` or a nesting ``a/b``
  (``= (expr|a) + (expr|a:b)``); ``(expr || g)`` gives uncorrelated terms as lme4's
  ``expandDoubleVerts`` does.

The random-effects design follows lme4's ``mkReTrms``: terms sorted by decreasing number of levels,
columns level-major within a term, one lower-triangular relative covariance factor per term.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

import numpy as np
import pandas as pd

from .errors import DataError, FormulaError

__all__ = ["FixedDesign", "ParsedFormula", "RandomTerm", "parse_formula", "build_random_terms"]

_NAME = re.compile(r"^[A-Za-z_.][A-Za-z0-9_.]*$")


def _split_top(text: str, sep: str) -> list[str]:
    """Split ``text`` on ``sep`` outside parentheses."""
    parts, depth, cur = [], 0, []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise FormulaError(f"unbalanced ')' in formula part {text!r}")
        if depth == 0 and text.startswith(sep, i):
            parts.append("".join(cur))
            cur = []
            i += len(sep)
            continue
        cur.append(ch)
        i += 1
    if depth != 0:
        raise FormulaError(f"unbalanced '(' in formula part {text!r}")
    parts.append("".join(cur))
    return [p.strip() for p in parts]


@dataclass(frozen=True)
class RandomSpec:
    """One parsed random term ``(expr | group)`` before it meets the data."""

    expr: str
    group: tuple[str, ...]  # columns whose interaction is the grouping factor

    @property
    def group_label(self) -> str:
        return ":".join(self.group)


@dataclass(frozen=True)
class ParsedFormula:
    """The parts of an lme4 formula."""

    formula: str
    successes: str
    failures: str | None  # column of failures, or None for a 0/1 response
    trials: str | None  # column of trials when written ``cbind(k, n - k)``
    fixed: str
    random: tuple[RandomSpec, ...]

    @property
    def columns(self) -> list[str]:
        cols = [self.successes]
        for c in (self.failures, self.trials):
            if c is not None:
                cols.append(c)
        return cols


def _parse_response(lhs: str) -> tuple[str, str | None, str | None]:
    lhs = lhs.strip()
    m = re.fullmatch(r"cbind\s*\((.*)\)", lhs)
    if not m:
        if not _NAME.match(lhs):
            raise FormulaError(f"response {lhs!r} must be a column name or cbind(k, n - k)")
        return lhs, None, None
    args = _split_top(m.group(1), ",")
    if len(args) != 2:
        raise FormulaError(f"cbind() in the response needs two arguments, got {lhs!r}")
    k, second = args
    if not _NAME.match(k):
        raise FormulaError(f"first argument of cbind() must be a column name, got {k!r}")
    m2 = re.fullmatch(r"([A-Za-z_.][A-Za-z0-9_.]*)\s*-\s*([A-Za-z_.][A-Za-z0-9_.]*)", second)
    if m2:
        if m2.group(2) != k:
            raise FormulaError(f"cbind({k}, {second}): the second argument must be 'n - {k}'")
        return k, None, m2.group(1)
    if not _NAME.match(second):
        raise FormulaError(f"second argument of cbind() must be 'n - {k}' or a column, got {second!r}")
    return k, second, None


def _parse_random(term: str) -> list[RandomSpec]:
    inner = term.strip()[1:-1]
    double = "||" in inner
    parts = _split_top(inner, "||" if double else "|")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        raise FormulaError(f"random term {term!r} must read (expr | group)")
    expr, grp = parts
    nest = [p.strip() for p in grp.split("/")]
    groups: list[tuple[str, ...]] = []
    for i in range(len(nest)):
        cols: list[str] = []
        for p in nest[: i + 1]:
            cols += [c.strip() for c in p.split(":")]
        for c in cols:
            if not _NAME.match(c):
                raise FormulaError(f"grouping factor {c!r} in {term!r} is not a column name")
        # lme4 names the nested term inner-first: (1|item/run) -> (1|item) + (1|run:item)
        groups.append(tuple(cols) if i == 0 else tuple(reversed(cols)))
    exprs = [expr]
    if double:
        pieces = [p for p in _split_top(expr, "+") if p]
        has_int = not any(p in ("0", "-1") for p in pieces)
        slopes = [p for p in pieces if p not in ("0", "1", "-1")]
        exprs = (["1"] if has_int else []) + [f"0 + {p}" for p in slopes]
    return [RandomSpec(e, g) for g in groups for e in exprs]


def parse_formula(formula: str) -> ParsedFormula:
    """Split an lme4 formula into response, fixed part and random terms.

    Examples
    --------
    >>> p = parse_formula("cbind(k, n - k) ~ model + (1|item/run)")
    >>> p.successes, p.trials, p.fixed, [r.group_label for r in p.random]
    ('k', 'n', 'model', ['item', 'run:item'])
    """
    if not isinstance(formula, str) or formula.count("~") != 1:
        raise FormulaError(f"formula must be a string 'response ~ terms', got {formula!r}")
    lhs, rhs = formula.split("~")
    k, fail, trials = _parse_response(lhs)
    fixed, random = [], []
    for term in _split_top(rhs, "+"):
        if not term:
            continue
        if term.startswith("(") and term.endswith(")") and "|" in term:
            random.extend(_parse_random(term))
        else:
            fixed.append(term)
    fixed_s = " + ".join(fixed) if fixed else "1"
    return ParsedFormula(formula, k, fail, trials, fixed_s, tuple(random))


def as_r_factor(s: pd.Series) -> pd.Categorical:
    """Categorical with R's ``factor()`` level order (sorted; categoricals keep their order)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        return s.cat.remove_unused_categories().values
    vals = s.to_numpy()
    levels = sorted(pd.unique(vals).tolist(), key=lambda v: (str(type(v)), v))
    return pd.Categorical(vals, categories=levels)


# --------------------------------------------------------------------------------------- fixed part


@dataclass
class FixedDesign:
    """The fixed-effects design of a fit, able to rebuild X for new data with the same coding.

    Attributes
    ----------
    terms : list of str
        Term labels of the fixed part in R order, without the intercept.
    factors : dict
        Factor name -> levels in coding order (reference level first).
    covariates : dict
        Numeric covariate name -> its mean in the fitted data.
    column_terms : list of str
        For each column of X, the term it belongs to (``"(Intercept)"`` for the intercept).
    columns : list of str
        Column names of X (formulaic names, e.g. ``model[T.GPT-4o]``).
    weights_data : DataFrame or None
        The factor columns of the fitted rows.
    """

    formula: str
    terms: list[str]
    factors: dict[str, list[Any]]
    covariates: dict[str, float]
    column_terms: list[str]
    columns: list[str]
    spec: Any = field(repr=False)
    weights_data: pd.DataFrame | None = field(default=None, repr=False)
    keep: list[int] | None = field(default=None, repr=False)  # columns kept (rank deficiency)

    def drop_columns(self, keep: list[int]) -> None:
        """Keep only the columns ``keep`` of X (used when X is rank deficient)."""
        self.columns = [self.columns[j] for j in keep]
        self.column_terms = [self.column_terms[j] for j in keep]
        base = self.keep if self.keep is not None else list(range(len(self.spec.column_names)))
        self.keep = [base[j] for j in keep]

    def _coerce(self, newdata: pd.DataFrame) -> pd.DataFrame:
        nd = newdata.copy()
        needed = list(self.factors) + list(self.covariates)
        missing = [c for c in needed if c not in nd.columns]
        if missing:
            raise FormulaError(f"new data lacks column(s) {missing} used by the fixed part")
        for name, levels in self.factors.items():
            vals = nd[name]
            if isinstance(vals.dtype, pd.CategoricalDtype):
                vals = vals.astype(object)
            bad = ~pd.Series(vals).isin(levels).to_numpy()
            if bad.any():
                raise FormulaError(f"column {name!r} has level {pd.Series(vals)[bad].iloc[0]!r} "
                                   f"not seen in the fitted data (levels: {levels})")
            nd[name] = pd.Categorical(vals, categories=levels)
        return nd

    def model_matrix(self, newdata: pd.DataFrame) -> np.ndarray:
        """Rows of X for ``newdata`` with the fitted coding.

        Examples
        --------
        >>> import pandas as pd
        >>> d = pd.DataFrame({"m": ["a", "b", "a", "b"], "y": [0, 1, 1, 1]})
        >>> fd = build_fixed("m", d)[0]
        >>> fd.model_matrix(pd.DataFrame({"m": ["b"]})).tolist()
        [[1.0, 1.0]]
        """
        nd = self._coerce(newdata)
        X = np.asarray(self.spec.get_model_matrix(nd, na_action="ignore"), dtype=float)
        return X if self.keep is None else X[:, self.keep]


@lru_cache(maxsize=256)
def _formula_factors(rhs: str) -> tuple[str, ...]:
    """Names of the variables a formulaic right-hand side reads, in order of appearance."""
    from formulaic import Formula

    names: list[str] = []
    for term in Formula(rhs):
        for f in term.factors:
            s = str(f)
            if s not in ("1", "0") and s not in names:
                names.append(s)
    return tuple(names)


def factor_columns(fixed: str, data: pd.DataFrame) -> list[str]:
    return list(_formula_factors(fixed))


def build_fixed(fixed: str, data: pd.DataFrame) -> tuple[FixedDesign, np.ndarray]:
    """Build the fixed-effects matrix with formulaic: treatment coding, R level order.

    Returns the :class:`FixedDesign` and X (float array, rows of ``data``).
    """
    from formulaic import model_matrix

    used = factor_columns(fixed, data)
    missing = [c for c in used if c not in data.columns and _NAME.match(c)]
    if missing:
        raise FormulaError(f"fixed-effect term(s) name column(s) {missing} absent from the data "
                           f"(columns: {list(data.columns)})")
    d = data[[c for c in used if c in data.columns]].copy()
    factors: dict[str, list[Any]] = {}
    covariates: dict[str, float] = {}
    for c in d.columns:
        s = d[c]
        if pd.api.types.is_bool_dtype(s) or not pd.api.types.is_numeric_dtype(s) or \
                isinstance(s.dtype, pd.CategoricalDtype):
            cat = as_r_factor(s)
            d[c] = cat
            factors[c] = list(cat.categories)
        else:
            covariates[c] = float(s.mean())
    try:
        mm = model_matrix(fixed, d, na_action="raise")
    except Exception as exc:  # formulaic's errors name the failing factor
        raise FormulaError(f"cannot build the fixed part {fixed!r}: {exc}") from exc
    spec = mm.model_spec
    column_terms: list[str] = []
    terms: list[str] = []
    for st in spec.structure:
        label = str(st.term)
        lab = "(Intercept)" if label == "1" else label
        if label != "1":
            terms.append(label)
        column_terms += [lab] * len(st.columns)
    X = np.ascontiguousarray(np.asarray(mm, dtype=float))
    wd = d[list(factors)].reset_index(drop=True) if factors else None
    fd = FixedDesign(fixed, terms, factors, covariates, column_terms, list(spec.column_names),
                     spec, wd)
    return fd, X


# ------------------------------------------------------------------------------------- random part


@dataclass
class RandomTerm:
    """One random-effects term after meeting the data (lme4's ``reTrms`` piece).

    ``index`` holds each row's level (0-based), ``Z`` the row covariates (n x nc), ``levels`` the
    level labels, ``cnames`` the column names (``(Intercept)``, ``x``...).
    """

    group: str
    expr: str
    cnames: list[str]
    levels: list[str]
    index: np.ndarray
    Z: np.ndarray
    columns: tuple[str, ...] = ()
    spec: Any = None  # formulaic spec of ``expr`` (None for an intercept)

    def model_rows(self, newdata: pd.DataFrame) -> np.ndarray:
        """Random-effect covariates of new rows (ones for an intercept-only term)."""
        if self.spec is None:
            return np.ones((len(newdata), 1))
        return np.asarray(self.spec.get_model_matrix(newdata), dtype=float)

    @property
    def nc(self) -> int:
        return self.Z.shape[1]

    @property
    def nl(self) -> int:
        return len(self.levels)

    @property
    def ntheta(self) -> int:
        return self.nc * (self.nc + 1) // 2

    @property
    def theta_names(self) -> list[str]:
        out = []
        for j in range(self.nc):
            for i in range(j, self.nc):
                out.append(f"{self.group}.{self.cnames[i]}" if i == j
                           else f"{self.group}.{self.cnames[i]}.{self.cnames[j]}")
        return out


def _group_index(cols: tuple[str, ...], data: pd.DataFrame, label: str) -> tuple[np.ndarray, list[str]]:
    codes = []
    labels = []
    for c in cols:
        cat = as_r_factor(data[c])
        codes.append(np.asarray(cat.codes, dtype=np.int64))
        labels.append([str(v) for v in cat.categories])
    if len(cols) == 1:
        code = codes[0]
    else:
        # interaction a:b: levels ordered with the first factor slowest, unused combinations dropped
        code = np.zeros(len(data), dtype=np.int64)
        for cd, lab in zip(codes, labels):
            code = code * len(lab) + cd
    uniq, inv = np.unique(code, return_inverse=True)
    if len(cols) == 1:
        names = [labels[0][u] for u in uniq]
    else:
        names = []
        for u in uniq:
            parts = []
            for lab in reversed(labels):
                parts.append(lab[u % len(lab)])
                u //= len(lab)
            names.append(":".join(reversed(parts)))
    return inv.astype(np.int64), names


def group_codes_for(term: RandomTerm, newdata: pd.DataFrame) -> np.ndarray:
    """Index of each new row's level of ``term``'s grouping factor (-1 when unseen)."""
    for c in term.columns:
        if c not in newdata.columns:
            raise FormulaError(f"new data lacks grouping column {c!r} of {term.group!r}")
    labels = newdata[list(term.columns)].astype(str).agg(":".join, axis=1) \
        if len(term.columns) > 1 else newdata[term.columns[0]].astype(str)
    lookup = pd.Series(np.arange(term.nl), index=pd.Index(term.levels))
    return lookup.reindex(labels.to_numpy()).fillna(-1).to_numpy(dtype=np.int64)


def build_random_terms(specs: tuple[RandomSpec, ...], data: pd.DataFrame,
                       nobs: int | None = None) -> list[RandomTerm]:
    """Random-effects terms in lme4 order (decreasing number of levels, as ``mkReTrms``).

    ``nobs`` is the number of observations (rows before pooling; defaults to ``len(data)``).
    """
    nobs = len(data) if nobs is None else nobs
    from formulaic import model_matrix

    terms = []
    for sp in specs:
        for c in sp.group:
            if c not in data.columns:
                raise FormulaError(f"grouping factor {c!r} of random term ({sp.expr} | "
                                   f"{sp.group_label}) is not a column of the data")
        idx, levels = _group_index(sp.group, data, sp.group_label)
        if len(levels) < 2:
            raise DataError(f"grouping factor {sp.group_label!r} of random term ({sp.expr} | "
                            f"{sp.group_label}) has only one level; it must have > 1 sampled level")
        if len(levels) >= nobs:
            raise DataError(f"grouping factor {sp.group_label!r} has {len(levels)} levels for "
                            f"{nobs} observations; it must have fewer levels than observations")
        spec = None
        if sp.expr.strip() == "1":
            Z = np.ones((len(data), 1))
            cn = ["(Intercept)"]
        else:
            try:
                mm = model_matrix(sp.expr, data, na_action="raise")
            except Exception as exc:
                raise FormulaError(f"cannot build random term ({sp.expr} | {sp.group_label}): "
                                   f"{exc}") from exc
            Z = np.asarray(mm, dtype=float)
            spec = mm.model_spec
            cn = ["(Intercept)" if c == "Intercept" else c for c in mm.columns]
            if Z.shape[1] == 0:
                raise FormulaError(f"random term ({sp.expr} | {sp.group_label}) has no columns")
        terms.append(RandomTerm(sp.group_label, sp.expr, cn, levels, idx, Z, sp.group, spec))
    nl = [t.nl for t in terms]
    if any(b > a for a, b in zip(nl, nl[1:])):
        # lme4: ord <- rev(order(nl)) (stable ascending order, reversed)
        order = list(reversed(sorted(range(len(nl)), key=lambda i: nl[i])))
        terms = [terms[i] for i in order]
    return terms


def random_columns(specs: tuple[RandomSpec, ...], data: pd.DataFrame) -> list[str]:
    """Data columns a set of random terms reads (grouping factors and slope covariates)."""
    cols: list[str] = []
    for sp in specs:
        for c in sp.group:
            if c not in data.columns:
                raise FormulaError(f"grouping factor {c!r} of random term ({sp.expr} | "
                                   f"{sp.group_label}) is not a column of the data")
            if c not in cols:
                cols.append(c)
        if sp.expr.strip() not in ("1", "0", "-1"):
            for s in _formula_factors(sp.expr):
                if s not in cols:
                    if s not in data.columns:
                        raise FormulaError(f"random term ({sp.expr} | {sp.group_label}) names "
                                           f"column {s!r} absent from the data")
                    cols.append(s)
    return cols
