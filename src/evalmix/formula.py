"""lme4-style model formulas: response, fixed part (via formulaic) and random-effects terms.

A formula such as ``cbind(k, n - k) ~ model * language + (1|item) + (1 + x||g)`` is split into

- the response: a 0/1 column, or k-of-n counts written ``cbind(k, n - k)`` (or ``cbind(k, f)`` with a
  column of failures);
- the fixed part, built by formulaic with R's codings and factor levels sorted like R's
  ``factor()`` (a pandas categorical keeps its own level order; ``factor(x, levels = ...)`` and
  ``relevel(x, ref = ...)`` state another), R's functions (``I()``, ``poly``, ``ns``, ...);
- random terms ``(expr | g)``: ``g`` may be a column, an interaction ``a:b`` or a nesting ``a/b``
  (``= (expr|a) + (expr|a:b)``); ``(expr || g)`` gives uncorrelated terms as lme4's
  ``expandDoubleVerts`` does.

The random-effects design follows lme4's ``mkReTrms``: terms sorted by decreasing number of levels,
columns level-major within a term, one lower-triangular relative covariance factor per term.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from .errors import DataError, FormulaError

if TYPE_CHECKING:
    from formulaic import ModelSpec
    from numpy.typing import ArrayLike

__all__ = ["FixedDesign", "LevelSpec", "ParsedFormula", "RandomTerm", "alias_calls", "build_fixed",
           "build_random_terms", "check_expression", "fixed_variables", "formula_functions",
           "parse_formula", "r_context", "r_deparse", "r_factor", "r_names", "split_theta",
           "term_lambdas", "translate_fixed", "translate_terms"]

_NAME = re.compile(r"^[A-Za-z_.][A-Za-z0-9_.]*$")


def _split_top(text: str, sep: str) -> list[str]:
    """Split ``text`` on ``sep`` outside parentheses."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
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
    offsets: tuple[str, ...] = ()  # expressions of ``offset(...)`` terms

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
        ratio = re.fullmatch(r"([A-Za-z_.][\w.]*)\s*/\s*([A-Za-z_.][\w.]*)", lhs)
        if ratio:
            k, n = ratio.groups()
            raise FormulaError(f"response {lhs!r}: write cbind({k}, {n} - {k}), the model R fits "
                               f"for {lhs} with weights = {n} (or give a column of proportions "
                               "with weights=)")
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


_GROUP_CALL = re.compile(r"(?:as\.factor|factor|as\.character)\s*\(\s*([A-Za-z_.][\w.]*)\s*\)")


def _grouping_column(text: str, term: str) -> str:
    """The column of a grouping factor: ``g``, or ``factor(g)`` / ``as.factor(g)`` (a grouping
    factor is always a factor, so the call changes nothing: an integer-coded ``run`` is a factor
    either way)."""
    c = text.strip()
    m = _GROUP_CALL.fullmatch(c)
    if m:
        return m.group(1)
    if not _NAME.match(c):
        raise FormulaError(f"grouping factor {c!r} in {term!r} is not a column name (or "
                           "factor(column))")
    return c


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
            cols += [_grouping_column(c, term) for c in p.split(":")]
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
    fixed, random, offsets, tail = [], [], [], []
    for term in _split_top(rhs, "+"):
        if not term:
            continue
        head = term[:_closing_paren(term, 0) + 1] if term.startswith("(") else ""
        if "|" in head:
            random.extend(_parse_random(head))
            rest = term[len(head):].strip()  # ``(1|g) - 1`` splits as one term
            if rest:
                if not rest.startswith("-"):
                    raise FormulaError(f"cannot read {term!r}: a random term is added with '+'")
                tail.append(rest)
        elif re.match(r"offset\s*\(", term):
            end = _closing_paren(term, term.index("("))
            offsets.append(term[term.index("(") + 1:end].strip())
            rest = term[end + 1:].strip()  # ``offset(o) - 1`` splits as one term
            if rest:
                tail.append(rest)
        else:
            fixed.append(term)
    fixed_s = " + ".join(fixed) if fixed else "1"
    if tail:
        fixed_s = " ".join([fixed_s, *tail])
    return ParsedFormula(formula, k, fail, trials, fixed_s, tuple(random), tuple(offsets))


def _closing_paren(text: str, start: int) -> int:
    """Index of the parenthesis closing the one at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    raise FormulaError(f"unbalanced '(' in {text!r}")


def as_r_factor(s: pd.Series) -> pd.Categorical:
    """Categorical with R's ``factor()`` level order (sorted; categoricals keep their order)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        # a categorical Series holds a Categorical (pandas-stubs types .values as any array)
        return cast(pd.Categorical, s.cat.remove_unused_categories().values)
    vals = s.to_numpy()
    levels = sorted(pd.unique(vals).tolist(), key=lambda v: (str(type(v)), v))
    return pd.Categorical(vals, categories=levels)


def _same_level(value: Any, level: Any) -> bool:
    """Whether a data value is the level R's ``factor(levels = ...)`` names (R compares the
    values as text; numbers are compared as numbers so that 3 and 3.0 agree)."""
    num = (int, float, np.integer, np.floating)
    if isinstance(value, num) and isinstance(level, num) and not isinstance(value, (bool, np.bool_)) \
            and not isinstance(level, bool):
        return float(value) == float(level)
    if isinstance(value, (bool, np.bool_)) or isinstance(level, bool):
        return bool(value) == level if isinstance(level, bool) and isinstance(value, (bool, np.bool_)) \
            else str(value).upper() == str(level).upper()
    return str(value) == str(level)


def r_factor(s: pd.Series, spec: LevelSpec | None = None, where: str = "") -> pd.Categorical:
    """:func:`as_r_factor` with the level order the formula states (see :class:`LevelSpec`).

    Values not among the stated levels are refused (R would turn them into NA and drop their
    rows); stated levels absent from the data are dropped with a DataWarning (R keeps them and
    drops their all-zero columns).

    Examples
    --------
    >>> s = pd.Series([1, 2, 3, 2])
    >>> list(r_factor(s, LevelSpec((3, 1, 2))).categories), list(r_factor(s, LevelSpec(ref=2)).categories)
    ([3, 1, 2], [2, 1, 3])
    """
    import warnings

    from .errors import DataWarning

    base = as_r_factor(s)
    if spec is None or spec == LevelSpec():
        return base
    if spec.ref is not None and isinstance(s.dtype, pd.CategoricalDtype) and s.dtype.ordered:
        raise FormulaError(f"{where or s.name}: relevel() applies to unordered factors only, as in "
                           f"R; column {s.name!r} is an ordered categorical")
    where = where or str(s.name)
    cats = list(base.categories)
    if spec.levels is not None:
        order: list[Any] = []
        absent = []
        for lv in spec.levels:
            hit = [v for v in cats if _same_level(v, lv) and v not in order]
            if hit:
                order.append(hit[0])
            else:
                absent.append(lv)
        extra = [v for v in cats if v not in order]
        if extra:
            raise DataError(f"column {s.name!r} has value(s) {extra[:5]} that are not among the "
                            f"levels {list(spec.levels)} of {where}; R would make them missing "
                            "and drop their rows: filter the data first")
        if absent:
            warnings.warn(f"level(s) {absent} of {where} do not occur in the data and are "
                          "dropped (lme4 drops their all-zero columns)", DataWarning, stacklevel=4)
        cats = order
    if spec.ref is not None:
        hit = [v for v in cats if _same_level(v, spec.ref)]
        if not hit:
            raise FormulaError(f"{where}: the reference level {spec.ref!r} is not a level of "
                               f"column {s.name!r} (levels: {cats})")
        i = cats.index(hit[0])
        cats = [cats[i]] + cats[:i] + cats[i + 1:]
    vals = s.astype(object).to_numpy() if isinstance(s.dtype, pd.CategoricalDtype) else s.to_numpy()
    return pd.Categorical(vals, categories=cats)


# --------------------------------------------------------------------------------------- fixed part
# The fixed part is written in R and built by formulaic. R syntax formulaic reads differently is
# translated first: ``^`` inside I() is a power (``**``), ``factor(x)``/``C(x, contr.sum)`` become
# a factor-coded ``x`` with its contrasts, R's math functions come from a context dictionary.
# formulaic's ``scale``, ``poly`` (orthogonal, as R's), ``contr.sum`` and ``contr.poly`` compute
# what R computes; their state (centre, scale, polynomial coefficients) is kept in the model spec,
# so new data (predictions, reference grids) are transformed with the fitted values.


def _r_log(x: Any, base: float = math.e) -> np.ndarray:
    """R's ``log(x, base = exp(1))``."""
    x = np.asarray(x, dtype=float)
    return np.log(x) if base == math.e else np.log(x) / np.log(base)


def _spline_rows(t: np.ndarray, x: np.ndarray, deriv: int = 0) -> np.ndarray:
    """R's ``splineDesign(t, x, 4, derivs)``: cubic B-spline basis (or a derivative) at ``x``."""
    from scipy.interpolate import BSpline

    nb = len(t) - 4
    if deriv == 0:
        return BSpline.design_matrix(x, t, 3).toarray()
    out = np.empty((len(x), nb))
    for j in range(nb):
        out[:, j] = BSpline(t, np.eye(nb)[j], 3).derivative(deriv)(x)
    return out


def _r_ns(x: Any, df: int | None = None, knots: Any = None, intercept: bool = False,
          _state: dict = {}) -> Any:  # noqa: B006 (formulaic replaces the state dict)
    """R's ``splines::ns``: the natural cubic spline basis (knots at quantiles for ``df``;
    boundary knots at the range of the fitted rows; linear beyond them), with R's coefficients."""
    from formulaic.materializers.types import FactorValues

    x = np.asarray(x, dtype=float)
    if "knots" not in _state:
        fin = x[np.isfinite(x)]
        lo, hi = float(fin.min()), float(fin.max())
        if knots is None:
            nik = (1 if df is None else int(df)) - 1 - int(bool(intercept))
            if nik < 0:
                raise FormulaError(f"ns(df = {df}): df must be at least {1 + int(bool(intercept))}")
            # R's quantile(type = 7), numpy's default
            inner = np.quantile(fin, np.linspace(0.0, 1.0, nik + 2)[1:-1]) if nik else np.zeros(0)
        else:
            inner = np.sort(np.atleast_1d(np.asarray(knots, dtype=float)))
        _state.update(knots=inner.tolist(), bounds=[lo, hi])
    lo, hi = _state["bounds"]
    t = np.sort(np.concatenate([[lo] * 4, _state["knots"], [hi] * 4]))
    nb = len(t) - 4
    B = np.full((len(x), nb), np.nan)
    inside = np.isfinite(x) & (x >= lo) & (x <= hi)
    if inside.any():
        B[inside] = _spline_rows(t, x[inside])
    for side, k in ((x < lo, lo), (x > hi, hi)):  # linear beyond the boundary, as R
        if side.any():
            at = np.array([k])
            B[side] = _spline_rows(t, at) + np.outer(x[side] - k, _spline_rows(t, at, 1)[0])
    const = _spline_rows(t, np.array([lo, hi]), 2)
    if not intercept:
        B, const = B[:, 1:], const[:, 1:]
    Q = np.linalg.qr(const.T, mode="complete")[0]  # the Householder Q of R's qr(t(const))
    out = (B @ Q)[:, 2:]
    return FactorValues(out, column_names=tuple(str(i) for i in range(1, out.shape[1] + 1)))


@lru_cache(maxsize=1)
def _ns_transform() -> Any:
    from formulaic.transforms import stateful_transform

    wrapped = stateful_transform(_r_ns)
    # pickle finds functions by module and name: the wrapper gets a name of its own (served by
    # the module's __getattr__), so that designs and fits holding it pickle
    wrapped.__name__ = wrapped.__qualname__ = "_ns_stateful"
    return wrapped


def __getattr__(name: str) -> Any:
    if name == "_ns_stateful":
        return _ns_transform()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def r_context() -> dict[str, Any]:
    """The functions an R formula may call (:data:`R_FUNCTIONS` and ``ns``), for formulaic."""
    return {**R_FUNCTIONS, "ns": _ns_transform(), "_r_c": _r_c}


R_FUNCTIONS: dict[str, Any] = {
    "log": _r_log, "exp": np.exp, "sqrt": np.sqrt, "log2": np.log2, "log10": np.log10,
    "log1p": np.log1p, "expm1": np.expm1, "abs": np.abs, "sin": np.sin, "cos": np.cos,
    "tan": np.tan, "pi": np.pi,
}


def _r_c(*values: Any) -> np.ndarray:
    """R's ``c()`` of numbers, as in ``ns(x, knots = c(3, 5))`` (written ``_r_c`` in formulaic text,
    so that a column named ``c`` stays a column)."""
    return np.concatenate([np.atleast_1d(np.asarray(v, dtype=float)) for v in values])
CONTRASTS = ("treatment", "sum", "poly", "helmert")
_CONTRAST_NAMES = {**{c: c for c in CONTRASTS}, **{f"contr.{c}": c for c in CONTRASTS}}
_C_CALL = re.compile(r"(?<![\w.])C\s*\(\s*([A-Za-z_.][\w.]*)\s*(?:,\s*([^()]*?))?\s*\)")
_C_WRAPPED = re.compile(r"C\(([A-Za-z_.][\w.]*), [^()]*\)")


def _plain(exc: Exception) -> str:
    """formulaic's message without its terminal colour codes, with a hint for an unknown function."""
    msg = re.sub(r"\x1b\[[0-9;]*m|[\u29da\u29db]", "", str(exc))
    m = re.search(r"NameError: name '([\w.]+)' is not defined", msg)
    if m:
        msg += (f"; evalmix does not know the function {m.group(1)}() (it knows R's log, exp, "
                "sqrt, scale, poly, bs, ns and the others listed in docs/glmm.md)")
    return msg


def _contrast_kind(value: Any, where: str) -> Any:
    """Normalise a contrasts value: a name in :data:`CONTRASTS` or a 2-d float array."""
    if isinstance(value, str):
        key = value.strip().strip("'\"")
        if key not in _CONTRAST_NAMES:
            raise FormulaError(f"{where}: unknown contrasts {value!r}; use one of "
                               f"{['contr.' + c for c in CONTRASTS]} or a matrix")
        return _CONTRAST_NAMES[key]
    M = np.asarray(value, dtype=float)
    if M.ndim != 2:
        raise FormulaError(f"{where}: a contrasts matrix must be 2-d (levels x columns)")
    return M


def _split_outside(text: str, sep: str) -> list[str]:
    """Split ``text`` on ``sep`` where it stands outside brackets, parentheses and quotes."""
    parts: list[str] = []
    cur: list[str] = []
    depth, quote = 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        elif ch == sep and depth == 0:
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return parts


def _split_args(text: str) -> list[str]:
    """Split call arguments on commas outside brackets and quotes."""
    return [p for p in (part.strip() for part in _split_outside(text, ",")) if p]


Level = str | int | float | bool  # a factor level written in a formula


def _r_scalar(text: str, where: str) -> Level:
    """An R (or Python) literal: a quoted string, a number, TRUE/FALSE."""
    t = text.strip()
    if len(t) >= 2 and t[0] == t[-1] and t[0] in "'\"":
        return t[1:-1]
    if t in ("TRUE", "True", "T"):
        return True
    if t in ("FALSE", "False", "F"):
        return False
    try:
        v = float(t.rstrip("L"))
    except ValueError:
        raise FormulaError(f"{where}: cannot read {t!r} as a level (write quoted strings, "
                           "numbers or TRUE/FALSE)") from None
    return int(v) if v.is_integer() else v


def _r_values(text: str, where: str) -> list[Level]:
    """An R vector literal: ``c("b", "a")``, ``c(3, 1)``, ``3:1``, ``"b"`` or a Python list."""
    t = text.strip()
    m = re.fullmatch(r"c\s*\((.*)\)", t, re.S)
    if m:
        return [_r_scalar(a, where) for a in _split_args(m.group(1))]
    if t[:1] in "[(" and t[-1:] in "])":
        return [_r_scalar(a, where) for a in _split_args(t[1:-1])]
    m = re.fullmatch(r"(-?\d+)\s*:\s*(-?\d+)", t)
    if m:
        a, b = int(m.group(1)), int(m.group(2))
        return list(range(a, b + 1) if a <= b else range(a, b - 1, -1))
    return [_r_scalar(t, where)]


@dataclass(frozen=True)
class LevelSpec:
    """A factor's level order as the formula states it: ``factor(x, levels = ...)``, ``relevel``."""

    levels: tuple[Level, ...] | None = None  # the order given (None: R's sorted order)
    ref: Level | None = None  # the reference level moved first by relevel() (None: none)


_FACTOR_FUNC = re.compile(r"(?<![\w.])(as\.factor|factor|as\.ordered|ordered|relevel)\s*\(")
_FACTOR_KEYS = {"factor": ("levels", "ordered"), "as.factor": (), "ordered": ("levels",),
                "as.ordered": (), "relevel": ("ref",)}


def _factor_call(text: str, start: int, m: re.Match) -> tuple[str, LevelSpec, bool, int]:
    """Read the factor call matched at ``m``: (column, level spec, ordered, end index)."""
    fn = m.group(1)
    close = _closing_paren(text, m.end() - 1)
    call = text[m.start():close + 1]
    args = _split_args(text[m.end():close])
    if not args:
        raise FormulaError(f"term {call!r}: {fn}() needs a column")
    first = args[0]
    inner = _FACTOR_FUNC.match(first)
    if inner:
        name, spec, ordered, end = _factor_call(first, 0, inner)
        if first[end + 1:].strip():
            raise FormulaError(f"term {call!r}: {fn}() takes a column or factor(column)")
    elif _NAME.match(first):
        name, spec, ordered = first, LevelSpec(), fn in ("ordered", "as.ordered")
    else:
        raise FormulaError(f"term {call!r}: {fn}() takes a column name, got {first!r}")
    keys = _FACTOR_KEYS[fn]
    given: dict[str, str] = {}
    for i, a in enumerate(args[1:]):
        km = re.match(r"([A-Za-z_.][\w.]*)\s*=(?!=)\s*(.*)$", a, re.S)
        key, val = (km.group(1), km.group(2)) if km else (keys[i] if i < len(keys) else "", a)
        if key not in keys:
            raise FormulaError(f"term {call!r}: argument {a!r} of {fn}() is not understood "
                               f"(understood: {', '.join(keys) or 'none'}); recode the column "
                               "in the data instead")
        given[key] = val
    if "levels" in given:
        lev = _r_values(given["levels"], call)
        if len(set(map(repr, lev))) != len(lev):
            raise FormulaError(f"term {call!r}: levels are repeated")
        spec = LevelSpec(tuple(lev), None)
    if "ordered" in given:
        ordered = bool(_r_scalar(given["ordered"], call))
    if fn in ("ordered", "as.ordered"):
        ordered = True
    if fn == "relevel":
        if "ref" not in given:
            raise FormulaError(f"term {call!r}: relevel() needs ref = the reference level")
        if ordered:
            raise FormulaError(f"term {call!r}: relevel() applies to unordered factors only, as "
                               "in R")
        spec = LevelSpec(spec.levels, _r_scalar(given["ref"], call))
    return name, spec, ordered, close


def translate_terms(expr: str, labels: dict[str, str] | None = None
                    ) -> tuple[str, dict[str, Any], dict[str, LevelSpec]]:
    """R terms -> formulaic terms, the variables coded as factors and their stated level orders.

    Like :func:`translate_fixed`, and also returns ``{variable: LevelSpec}`` for the variables
    whose levels the formula orders: ``factor(x, levels = c("b", "a"))`` (also ``levels = 3:1``,
    a Python list, or the levels as the second argument), ``ordered(x, levels = ...)``,
    ``relevel(x, ref = "b")``, ``relevel(factor(x), "b")``. ``labels``, when given, receives
    ``{variable: the R call that codes it}`` (``factor(g, levels = c("b", "a"))``): R names the
    variable's columns by that call.

    Examples
    --------
    >>> text, coded, levels = translate_terms('factor(g, levels = c("b", "a")) + relevel(h, ref = 2)')
    >>> text, coded, levels["g"].levels, levels["h"].ref
    ('g + h', {'g': None, 'h': None}, ('b', 'a'), 2)
    """
    factors: dict[str, Any] = {}
    levels: dict[str, LevelSpec] = {}
    pos = 0
    text = expr
    while True:
        m = _FACTOR_FUNC.search(text, pos)
        if not m:
            break
        name, spec, ordered, close = _factor_call(text, m.start(), m)
        if levels.get(name, spec) != spec:
            raise FormulaError(f"column {name!r} is coded as a factor with two different level "
                               f"orders in {expr!r}; code it once (or copy the column)")
        if spec != LevelSpec():
            levels[name] = spec
        elif name in levels:
            raise FormulaError(f"column {name!r} is coded as a factor with two different level "
                               f"orders in {expr!r}; code it once (or copy the column)")
        factors.setdefault(name, "poly" if ordered else None)
        if labels is not None:
            labels[name] = r_deparse(text[m.start():close + 1])
        text = text[:m.start()] + name + text[close + 1:]
        pos = m.start() + len(name)

    def c_call(m: re.Match) -> str:
        name, arg = m.group(1), m.group(2)
        if labels is not None:
            inner = labels.get(name, name)
            labels[name] = r_deparse(f"C({inner}, {arg})" if arg else f"C({inner})")
        if arg:
            factors[name] = _contrast_kind(arg, f"C({name}, {arg})")
        else:
            factors.setdefault(name, None)
        return name

    text = _C_CALL.sub(c_call, text)
    left = re.search(r"(?<![\w.])C\s*\([^)]*\)", text)
    if left:
        raise FormulaError(f"term {left.group(0)!r}: only C(column, contrasts) is understood; "
                           "give the contrasts with contrasts= instead")
    if "%" in text:
        raise FormulaError(f"{expr!r}: R operators such as %in% are not supported")
    conv = re.search(r"(?<![\w.])as\.(numeric|integer|double|character|logical)\s*\(", text)
    if conv:
        raise FormulaError(f"{expr!r}: as.{conv.group(1)}() is not understood in a formula; "
                           "convert the column in the data (factor(), ordered() and relevel() "
                           "are understood)")
    text = text.replace("^", "**")
    text = re.sub(r"(?<![\w.])c\s*\(", "_r_c(", text)
    text = re.sub(r"(?<![\w.])TRUE(?![\w.])", "True", text)
    text = re.sub(r"(?<![\w.])FALSE(?![\w.])", "False", text)
    return text, factors, levels


def translate_fixed(fixed: str) -> tuple[str, dict[str, Any]]:
    """R fixed-effects formula -> formulaic formula, and the variables R codes as factors.

    Returns the translated formula (factor calls removed) and ``{variable: contrasts}`` for
    variables wrapped in ``factor()``, ``as.factor()``, ``ordered()``, ``relevel()`` or ``C()``
    (``None`` for the default coding); :func:`translate_terms` also returns the level orders.

    Examples
    --------
    >>> translate_fixed("I(age^2) + factor(n) + C(g, contr.sum)")
    ('I(age**2) + n + g', {'n': None, 'g': 'sum'})
    """
    text, factors, _ = translate_terms(fixed)
    return text, factors


def _expression_names(expr: str) -> list[str]:
    """Variables an R expression reads: every name used as a value (R looks a value up in the
    data first, so a column named ``I``, ``log`` or ``C`` is the column), not the functions
    called, nor the constant ``pi``. The expression is checked first (:func:`check_expression`)."""

    tree = check_expression(expr)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and id(node) not in called and node.id not in names \
                and node.id not in _CONSTANTS:
            names.append(node.id)
    return names


# What a formula may evaluate: the data's columns, numbers, strings and logicals, arithmetic and
# comparisons, and the documented R functions. formulaic evaluates a term as Python (``eval``),
# so everything else (attributes, subscripts, lambdas, comprehensions, dunder names, calls of
# anything else) is refused before formulaic sees the text.
_CONSTANTS = frozenset({"pi"})
_ALLOWED_NODES = ("Expression", "Load", "BinOp", "UnaryOp", "Compare", "Constant", "Name", "Call",
                  "keyword", "Add", "Sub", "Mult", "Div", "Pow", "UAdd", "USub", "Eq", "NotEq",
                  "Lt", "LtE", "Gt", "GtE")
_OPERATOR_WORDS = {"BitAnd": "'&'", "BitOr": "'|'", "BitXor": "'^' as bitwise", "Not": "'!'",
                   "And": "'&&'", "Or": "'||'", "Mod": "'%%'", "FloorDiv": "'%/%'",
                   "MatMult": "'@'", "Invert": "'~'", "LShift": "'<<'", "RShift": "'>>'",
                   "In": "'in'", "NotIn": "'not in'", "Is": "'is'", "IsNot": "'is not'"}


def formula_functions() -> list[str]:
    """The functions a formula term may call (besides ``factor()``, ``C()``, ``relevel()``,
    ``ordered()`` and ``offset()``, which the parser reads itself).

    Examples
    --------
    >>> "log" in formula_functions(), "eval" in formula_functions()
    (True, False)
    """
    return sorted((set(R_FUNCTIONS) - _CONSTANTS) | {"I", "scale", "poly", "bs", "ns"})


def check_expression(expr: str) -> ast.Expression:
    """Parse one term (translated to formulaic's syntax) and refuse anything but the data's
    columns, numeric and string literals, arithmetic and comparison operators and calls of the
    documented R functions (:func:`formula_functions`); returns the parsed tree.

    Raises
    ------
    FormulaError
        Naming the construct refused (an attribute, a subscript, a lambda, an unknown
        function, a dunder name, ...).

    Examples
    --------
    >>> check_expression("log(age + 1)").body.func.id
    'log'
    >>> check_expression("__import__('os')")
    Traceback (most recent call last):
    ...
    evalmix.errors.FormulaError: term "__import__('os')": the function __import__() is not allowed in a formula ...
    """

    try:
        tree = ast.parse(expr, mode="eval")
    except SyntaxError as exc:
        raise FormulaError(f"cannot read the term {expr!r}: {exc.msg}") from exc
    allowed_calls = set(formula_functions()) | {"_r_c"}
    hint = (f"a formula may use the data's columns, numbers, arithmetic and comparisons, and the "
            f"functions {', '.join(formula_functions())}, factor, C, relevel, ordered, offset")

    def refuse(what: str) -> FormulaError:
        return FormulaError(f"term {expr!r}: {what} is not allowed in a formula ({hint})")

    for node in ast.walk(tree):
        kind = type(node).__name__
        if kind not in _ALLOWED_NODES:
            if kind in _OPERATOR_WORDS:
                raise refuse(f"the operator {_OPERATOR_WORDS[kind]}")
            text = ast.unparse(node) if isinstance(node, ast.expr) else kind
            what = {"Attribute": "the attribute access", "Subscript": "the subscript",
                    "Lambda": "the lambda", "Starred": "the unpacking"}.get(kind, "the expression")
            if kind == "Attribute" and re.fullmatch(r"[A-Za-z][\w.]*", text) and "__" not in text:
                # an R column name with a dot, read by Python as an attribute
                raise refuse(f"the attribute access {text!r} (if {text!r} is a column: inside a "
                             "function or I() a column name may not contain a dot; rename it, "
                             f"e.g. to {text.replace('.', '_')!r})")
            raise refuse(f"{what} {text!r}")
        if isinstance(node, ast.Name) and node.id.startswith("__"):
            raise refuse(f"the name {node.id}")
        if isinstance(node, ast.Constant) and not isinstance(node.value, (int, float, str, bool)) \
                and node.value is not None:
            raise refuse(f"the literal {node.value!r}")
        if isinstance(node, ast.Constant) and isinstance(node.value, complex):
            raise refuse(f"the literal {node.value!r}")
        if isinstance(node, ast.keyword) and node.arg is None:
            raise refuse(f"the argument unpacking **{ast.unparse(node.value)}")
        if isinstance(node, ast.Call):
            if not isinstance(node.func, ast.Name):
                raise refuse(f"the call of {ast.unparse(node.func)!r}")
            if node.func.id not in allowed_calls:
                raise refuse(f"the function {node.func.id}()")
    return tree


def alias_calls(text: str, context: dict[str, Any]) -> tuple[str, dict[str, str]]:
    """R's lookup order for formulaic: a call ``f(...)`` calls the function ``f`` even where the
    data has a column ``f`` (R looks a called name up among functions only), while a value ``f``
    is the column. formulaic looks every name up in the data first, so each call of a formula
    function is renamed to an alias bound (in ``context``) to the same function: whatever the
    columns of the data the formula is evaluated on (the fitted rows, new data, a grid), a call
    reaches the function and a value the column.

    Returns the text to evaluate and ``{alias: name}`` to turn formulaic's labels back into the
    formula's.

    Examples
    --------
    >>> alias_calls("I(log(I / N))", r_context())[0]
    '_fn_I(_fn_log(I / N))'
    """
    from formulaic.transforms import TRANSFORMS

    aliases: dict[str, str] = {}
    # quoted text (a level compared with, I(g == "log(x)")) is left as written
    pieces = re.split(r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*")""", text)
    for name in sorted(set(formula_functions()) | {"C"}):
        pattern = re.compile(rf"(?<![\w.]){re.escape(name)}(\s*\()")
        alias = f"_fn_{name}"
        hit = False
        for k in range(0, len(pieces), 2):  # the even pieces are outside quotes
            if pattern.search(pieces[k]):
                pieces[k] = pattern.sub(alias + r"\1", pieces[k])
                hit = True
        if hit:
            context[alias] = context[name] if name in context else TRANSFORMS[name]
            aliases[alias] = name
    return "".join(pieces), aliases


def _unalias(label: str, aliases: dict[str, str]) -> str:
    for alias, name in aliases.items():
        label = label.replace(alias + "(", name + "(")
    return label


@lru_cache(maxsize=256)
def _formula_factors(rhs: str) -> tuple[str, ...]:
    """Names of the variables a formulaic right-hand side reads, in order of appearance."""
    return tuple(v for v, _ in _formula_factor_parts(rhs))


@lru_cache(maxsize=256)
def _formula_factor_parts(rhs: str) -> tuple[tuple[str, str], ...]:
    """(variable, formulaic factor it appears in) pairs, in order of appearance."""
    from formulaic import Formula

    if re.search(r"(?<![\w.])\.(?![\w.])", rhs):
        raise FormulaError(f"{rhs!r}: the '.' shorthand (all other columns) is not supported; "
                           "name the columns")
    try:
        parsed = Formula(rhs)
    except Exception as exc:
        raise FormulaError(f"cannot parse the fixed part {rhs!r}: {_plain(exc)}") from exc
    out: list[tuple[str, str]] = []
    for term in parsed:
        for f in term.factors:
            s = str(f)
            if s in ("1", "0"):
                continue
            if f.eval_method.name == "LOOKUP" and s.startswith("__"):
                raise FormulaError(f"term {s!r}: the name {s} is not allowed in a formula")
            names = [s] if f.eval_method.name == "LOOKUP" else _expression_names(s)
            for v in names:
                if (v, s) not in out:
                    out.append((v, s))
    return tuple(out)


def fixed_variables(fixed: str, offsets: tuple[str, ...] = ()) -> list[str]:
    """Data columns the R fixed part and offsets read, in order of appearance.

    Examples
    --------
    >>> fixed_variables("poly(age, 2) + log(dose) + factor(site)", ("log(n)",))
    ['age', 'dose', 'site', 'n']
    """
    text, _ = translate_fixed(fixed)
    names = list(dict.fromkeys(_formula_factors(text)))
    for o in offsets:
        for v in _expression_names(translate_fixed(o)[0]):
            if v not in names:
                names.append(v)
    return names


def factor_columns(fixed: str, data: pd.DataFrame) -> list[str]:
    """Data columns the fixed part reads (see :func:`fixed_variables`)."""
    return fixed_variables(fixed)


# ------------------------------------------------------------------------------- R's names
# R names a coefficient by the term's text as deparse() writes it (``I(age^2)``, ``log(age + 1)``,
# ``factor(site, levels = c(3, 1, 2))``) followed by the column's label within the term (a level
# ``trt``, a contrast column ``1`` or ``.L``, a basis column ``2``, ``TRUE`` for a logical).
# formulaic's names (``grp[T.trt]``, ``I(age ** 2)``, ``poly(age, 2)[1]``) are translated.

_R_PRECEDENCE = {"Pow": 14, "USub": 13, "UAdd": 13, "Mult": 11, "Div": 11, "Add": 10, "Sub": 10,
                 "Compare": 8}
_R_OPS = {"Add": "+", "Sub": "-", "Mult": "*", "Div": "/", "Pow": "^", "Eq": "==", "NotEq": "!=",
          "Lt": "<", "LtE": "<=", "Gt": ">", "GtE": ">=", "USub": "-", "UAdd": "+"}


def _r_number(v: float | int) -> str:
    """A number as R's deparse writes it (15 significant digits, no trailing ``.0``)."""
    if isinstance(v, bool):
        return "TRUE" if v else "FALSE"
    if isinstance(v, int):
        return str(v)
    if float(v).is_integer() and abs(v) < 1e15:
        return str(int(v))
    return f"{v:.15g}"


def _deparse_node(node: Any, aliases: dict[str, str] | None = None) -> str:

    def prec(n: Any) -> int:
        if isinstance(n, ast.BinOp):
            return _R_PRECEDENCE[type(n.op).__name__]
        if isinstance(n, ast.UnaryOp):
            return _R_PRECEDENCE[type(n.op).__name__]
        if isinstance(n, ast.Compare):
            return _R_PRECEDENCE["Compare"]
        return 100

    def wrap(n: Any, need: bool) -> str:
        t = go(n)
        return f"({t})" if need else t

    def go(n: Any) -> str:
        if isinstance(n, ast.Constant):
            if isinstance(n.value, str):
                return '"' + n.value.replace("\\", "\\\\").replace('"', '\\"') + '"'
            if isinstance(n.value, (int, float)):
                return _r_number(n.value)
            return "NULL" if n.value is None else repr(n.value)
        if isinstance(n, ast.Name):
            name = (aliases or {}).get(n.id, n.id)
            return {"_r_c": "c", "True": "TRUE", "False": "FALSE"}.get(name, name)
        if isinstance(n, ast.Attribute):  # contr.sum
            return f"{go(n.value)}.{n.attr}"
        if isinstance(n, ast.BinOp):
            op = type(n.op).__name__
            p = prec(n)
            if op == "Pow":  # right-associative, written without spaces
                right = wrap(n.right, prec(n.right) < p and not isinstance(n.right, ast.UnaryOp))
                return f"{wrap(n.left, prec(n.left) <= p)}^{right}"
            sep = "" if op == "Div" else " "  # R's deparse: a * b, a/b
            return (f"{wrap(n.left, prec(n.left) < p)}{sep}{_R_OPS[op]}{sep}"
                    f"{wrap(n.right, prec(n.right) <= p)}")
        if isinstance(n, ast.UnaryOp):
            return f"{_R_OPS[type(n.op).__name__]}{wrap(n.operand, prec(n.operand) < prec(n))}"
        if isinstance(n, ast.Compare):
            parts = [wrap(n.left, prec(n.left) <= prec(n))]
            for cmp, rhs in zip(n.ops, n.comparators):
                parts += [_R_OPS[type(cmp).__name__], wrap(rhs, prec(rhs) <= prec(n))]
            return " ".join(parts)
        if isinstance(n, ast.Call):
            args = [go(a) for a in n.args]
            args += [f"{k.arg} = {go(k.value)}" for k in n.keywords]
            return f"{go(n.func)}({', '.join(args)})"
        if isinstance(n, (ast.List, ast.Tuple)):
            return f"c({', '.join(go(e) for e in n.elts)})"
        return ast.unparse(n)

    return go(node)


def r_deparse(text: str, aliases: dict[str, str] | None = None) -> str:
    """An R (or formulaic) expression as R's ``deparse()`` writes it: spaces around ``+ - *``
    and comparisons, none around ``/`` and ``^``, ``name = value`` arguments, double-quoted strings,
    ``TRUE``/``FALSE``; text that is not an expression is returned with its spaces collapsed.

    Examples
    --------
    >>> r_deparse("I(age ** 2)"), r_deparse("bs(age, df=3)"), r_deparse("I(level == 'high')")
    ('I(age^2)', 'bs(age, df = 3)', 'I(level == "high")')
    >>> r_deparse("log(I / N)"), r_deparse("I(2 * (age + 1) ** -1)")
    ('log(I/N)', 'I(2 * (age + 1)^-1)')
    >>> r_deparse('factor(site, levels=c(3,1,2))'), r_deparse("scale(age, scale=False)")
    ('factor(site, levels = c(3, 1, 2))', 'scale(age, scale = FALSE)')
    """

    py = re.sub(r"(?<![\w.])TRUE(?![\w.])", "True", text.replace("^", "**"))
    py = re.sub(r"(?<![\w.])FALSE(?![\w.])", "False", py)
    try:
        tree = ast.parse(py.strip(), mode="eval")
    except SyntaxError:
        return " ".join(text.split())
    return _deparse_node(tree.body, aliases)


def _is_logical(expr: str) -> bool:
    """Whether a term is a comparison (``I(age > 4)``): R codes the logical as a factor whose
    column is ``TRUE``."""

    try:
        node = ast.parse(expr, mode="eval").body
    except SyntaxError:
        return False
    while isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
            node.func.id in ("I", "_fn_I") and len(node.args) == 1:
        node = node.args[0]
    return isinstance(node, ast.Compare)


def _split_top_colon(name: str) -> list[str]:
    """Split a formulaic column name on ``:`` outside brackets, parentheses and quotes."""
    return _split_outside(name, ":")


def _r_level(text: str) -> str:
    """A level as R prints it in a name (``TRUE``, ``2`` for a float 2.0)."""
    if text in ("True", "False"):
        return text.upper()
    if re.fullmatch(r"-?\d+\.0", text):
        return text[:-2]
    return text


def r_names(spec: ModelSpec, factors: dict[str, list[Any]], labels: dict[str, str],
            aliases: dict[str, str]) -> tuple[list[str], dict[str, str]]:
    """R's names of the columns of a formulaic model matrix, and R's label of each term.

    ``factors`` are the factor variables (levels in coding order), ``labels`` the R call coding
    each (:func:`translate_terms`), ``aliases`` the call aliases (:func:`alias_calls`). Returns
    the column names (``(Intercept)``, ``grptrt``, ``I(age^2)``, ``poly(age, 2)1``,
    ``factor(site)2:age``, ``I(age > 4)TRUE``) and ``{formulaic term: R term label}``.
    """
    columns: list[str] = []
    term_labels: dict[str, str] = {}
    for st in spec.structure:
        fs = list(st.term.factors)
        raw_term = str(st.term)
        if raw_term == "1":
            columns += ["(Intercept)"] * len(st.columns)
            continue
        r_factor_labels = []
        kinds = []  # (variable or None, R label, logical)
        for f in fs:
            ux = _unalias(str(f), aliases)
            m = _C_WRAPPED.fullmatch(ux) or re.fullmatch(r"C\(([A-Za-z_.][\w.]*)\)", ux)
            var = m.group(1) if m else (ux if ux in factors else None)
            lab = labels.get(var, var) if var is not None else r_deparse(ux)
            r_factor_labels.append(lab)
            kinds.append((var, lab, var is None and _is_logical(ux)))
        term_labels[_C_WRAPPED.sub(r"\1", _unalias(raw_term, aliases))] = ":".join(r_factor_labels)
        # formulaic numbers the columns of poly(raw = TRUE) from 0, R from 1
        zero_based = {str(f) for f in fs if any(
            p.startswith(str(f) + "[0]") for col in st.columns for p in _split_top_colon(str(col)))}
        for col in st.columns:
            out = []
            for part in _split_top_colon(str(col)):
                # the factor the part names (a column of a term may span a subset of its
                # factors: formulaic's scoped terms under a missing main effect)
                hits = [k for k, f in enumerate(fs) if part.startswith(str(f))]
                if not hits:  # not expected: keep formulaic's name, readable
                    out.append(_unalias(part, aliases))
                    continue
                k = max(hits, key=lambda h: len(str(fs[h])))
                f, (var, lab, logical) = fs[k], kinds[k]
                rest = part[len(str(f)):]
                inner = rest[1:-1] if rest.startswith("[") and rest.endswith("]") else ""
                if var is None:
                    if str(f) in zero_based and inner.isdigit():
                        inner = str(int(inner) + 1)
                    out.append(lab + inner + ("TRUE" if logical and not inner else ""))
                    continue
                if inner.startswith("T."):
                    suffix = _r_level(inner[2:])
                elif inner.startswith("S."):  # contr.sum columns are numbered
                    lv = [_r_level(str(v)) for v in factors[var]]
                    key = _r_level(inner[2:])
                    suffix = str(lv.index(key) + 1) if key in lv else key
                else:
                    suffix = _r_level(inner)
                out.append(lab + suffix)
            columns.append(":".join(out))
    return columns, term_labels


def _helmert(n: int) -> np.ndarray:
    """R's ``contr.helmert(n)``."""
    M = np.zeros((n, n - 1))
    for j in range(n - 1):
        M[: j + 1, j] = -1.0
        M[j + 1, j] = j + 1.0
    return M


@dataclass
class FixedDesign:
    """The fixed-effects design of a fit, able to rebuild X for new data with the same coding.

    Attributes
    ----------
    terms : list of str
        Term labels of the fixed part in R order, without the intercept (a factor coded with
        non-default contrasts is labelled by its name: ``g``, ``g:x``).
    factors : dict
        Factor name -> levels in coding order (reference level first).
    covariates : dict
        Numeric variable name -> its mean in the fitted data (the variable itself, ``age``, also
        when the formula uses ``I(age^2)`` or ``poly(age, 2)``: grids hold the variable at its
        mean and evaluate the transformation there, as emmeans does).
    column_terms : list of str
        For each column of X, the term it belongs to (``"(Intercept)"`` for the intercept).
    columns : list of str
        Column names of X as R names the coefficients (``(Intercept)``, ``modelGPT-4o``,
        ``C(g, contr.sum)1``, ``o.L``, ``poly(age, 2)1``, ``I(age^2)``, ``factor(site)2:age``).
    contrasts : dict
        Factor name -> its coding (``"treatment"``, ``"sum"``, ``"poly"``, ``"helmert"`` or
        the matrix given).
    offsets : list of str
        Expressions of the formula's ``offset()`` terms.
    weights_data : DataFrame or None
        The factor columns of the fitted rows.
    """

    formula: str
    terms: list[str]
    factors: dict[str, list[Any]]
    covariates: dict[str, float]
    column_terms: list[str]
    columns: list[str]
    spec: ModelSpec = field(repr=False)
    weights_data: pd.DataFrame | None = field(default=None, repr=False)
    keep: list[int] | None = field(default=None, repr=False)  # columns kept (rank deficiency)
    contrasts: dict[str, Any] = field(default_factory=dict)
    offsets: list[str] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict, repr=False)
    offset_spec: ModelSpec | None = field(default=None, repr=False)
    offset_mean: float = 0.0  # mean of the offset (formula and argument) over the fitted rows
    #: each term's label as R prints it (``I(age^2)``, ``factor(site, levels = c(3, 1, 2))``),
    #: by the term's name in ``terms`` / ``column_terms``
    term_labels: dict[str, str] = field(default_factory=dict)
    #: formulaic's names of the columns (``model[T.b]``, ``I(age ** 2)``), parallel to ``columns``
    formulaic_columns: list[str] = field(default_factory=list)

    def term_label(self, term: str) -> str:
        """The label R prints for ``term`` (an entry of ``terms`` or ``column_terms``)."""
        return self.term_labels.get(term, term)

    def drop_columns(self, keep: list[int]) -> None:
        """Keep only the columns ``keep`` of X (used when X is rank deficient)."""
        self.columns = [self.columns[j] for j in keep]
        self.column_terms = [self.column_terms[j] for j in keep]
        if self.formulaic_columns:
            self.formulaic_columns = [self.formulaic_columns[j] for j in keep]
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

    def _matrix(self, spec: ModelSpec, nd: pd.DataFrame) -> np.ndarray:
        try:
            return np.asarray(spec.get_model_matrix(nd, na_action="ignore", context=self.context),
                              dtype=float)
        except Exception as exc:
            raise FormulaError(f"cannot evaluate the fixed part {self.formula!r} on new data: "
                               f"{exc}") from exc

    def full_model_matrix(self, newdata: pd.DataFrame) -> np.ndarray:
        """Rows of X for ``newdata`` with every column, before any aliased one was dropped."""
        return self._matrix(self.spec, self._coerce(newdata))

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
        X = self.full_model_matrix(newdata)
        return X if self.keep is None else X[:, self.keep]

    def offset(self, newdata: pd.DataFrame) -> np.ndarray:
        """The formula's ``offset()`` terms evaluated on ``newdata`` (zeros without any)."""
        if self.offset_spec is None:
            return np.zeros(len(newdata))
        return self._matrix(self.offset_spec, self._coerce(newdata)).sum(axis=1)


def _level_where(expr: str, name: str) -> str:
    """The call that states the levels of ``name`` in ``expr`` (for messages)."""
    m = re.search(rf"(?:factor|ordered|relevel)\s*\(\s*(?:factor\s*\()?\s*{re.escape(name)}\b[^)]*\)+",
                  expr)
    return m.group(0) if m else f"factor({name})"


def _level_test(term: str, name: str) -> bool:
    """Whether ``term`` is ``I(name == level)`` or ``I(name != level)``: a 0/1 column, as R codes
    the logical (its ``TRUE`` column)."""
    lit = r"""(?:'[^']*'|"[^"]*"|-?\d+(?:\.\d*)?)"""
    v = re.escape(name)
    return re.fullmatch(rf"I\(\s*(?:{v}\s*[!=]=\s*{lit}|{lit}\s*[!=]=\s*{v})\s*\)", term) is not None


def _apply_contrasts(text: str, coding: dict[str, Any], factors: dict[str, list[Any]],
                     context: dict[str, Any]) -> str:
    """Wrap each factor not treatment-coded in ``C(x, ...)`` (matrices go into ``context``)."""
    for c, kind in coding.items():
        if isinstance(kind, str) and kind == "treatment":
            continue
        nlev = len(factors[c])
        if isinstance(kind, str) and kind == "helmert":
            kind = _helmert(nlev)
        if isinstance(kind, np.ndarray):
            if kind.shape[0] != nlev or not 1 <= kind.shape[1] <= nlev:
                raise FormulaError(f"contrasts matrix for {c!r} is {kind.shape[0]} x "
                                   f"{kind.shape[1]}; {c!r} has {nlev} levels {factors[c]}")
            key = f"_contrasts_{len(context)}"
            context[key] = kind
            repl = f"C({c}, {key})"
        else:
            repl = f"C({c}, contr.{kind})"
        text = re.sub(rf"(?<![\w.]){re.escape(c)}(?![\w.(])", repl, text)
    return text


def build_fixed(fixed: str, data: pd.DataFrame, contrasts: dict[str, Any] | None = None,
                offsets: tuple[str, ...] = ()) -> tuple[FixedDesign, np.ndarray]:
    """Build the fixed-effects matrix of an R formula's fixed part with R's codings.

    String, boolean and categorical columns, and columns wrapped in ``factor()``, are factors
    (levels as R's ``factor()`` sorts them; a categorical keeps its order); every other numeric
    column is a covariate, as in R. Factors get treatment contrasts, ordered categoricals
    ``contr.poly``, unless ``contrasts`` (``{"x": "contr.sum"}``, or a levels x k matrix) or
    ``C(x, ...)`` in the formula says otherwise.

    Returns the :class:`FixedDesign` and X (float array, rows of ``data``).
    """
    from formulaic import model_matrix

    labels: dict[str, str] = {}
    text, coded, specs = translate_terms(fixed, labels)
    parts = _formula_factor_parts(text)
    variables = fixed_variables(fixed, offsets)
    missing = [c for c in variables if c not in data.columns]
    if missing:
        raise FormulaError(f"fixed-effect term(s) name column(s) {missing} absent from the data "
                           f"(columns: {list(data.columns)})")
    contrasts = {k: _contrast_kind(v, f"contrasts[{k!r}]") for k, v in (contrasts or {}).items()}
    for c in contrasts:
        if c not in variables:
            raise FormulaError(f"contrasts names {c!r}, which is not a variable of the fixed part "
                               f"(variables: {variables})")
    d = data[variables].copy()
    factors: dict[str, list[Any]] = {}
    covariates: dict[str, float] = {}
    coding: dict[str, Any] = {}
    context: dict[str, Any] = r_context()
    for c in variables:
        s = d[c]
        categorical = isinstance(s.dtype, pd.CategoricalDtype)
        numeric = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) \
            and not categorical
        if c in coded or c in contrasts or not numeric:
            if c not in coded and numeric:
                raise FormulaError(f"contrasts given for numeric column {c!r}; write factor({c}) "
                                   "in the formula to code it as a factor")
            inside = [f for v, f in parts if v == c and f != c and not _level_test(f, c)]
            if inside:
                raise FormulaError(f"{c!r} is a factor but the term {inside[0]!r} uses it as a "
                                   "number; a factor can only appear on its own, in C() or "
                                   f"compared with a level (I({c} == 'b'))")
            cat = r_factor(s, specs.get(c), _level_where(fixed, c))
            d[c] = cat
            factors[c] = list(cat.categories)
            ordered = isinstance(s.dtype, pd.CategoricalDtype) and bool(s.dtype.ordered)
            kind = contrasts.get(c, coded.get(c))
            if kind is None:
                kind = "poly" if ordered else "treatment"
            coding[c] = kind
        else:
            covariates[c] = float(s.mean())
    text = _apply_contrasts(text, coding, factors, context)
    text, aliases = alias_calls(text, context)
    try:
        mm = model_matrix(text, d, na_action="raise", context=context)
    except Exception as exc:  # formulaic's errors name the failing factor
        raise FormulaError(f"cannot build the fixed part {fixed!r}: {_plain(exc)}") from exc
    spec = mm.model_spec
    column_terms: list[str] = []
    terms: list[str] = []
    for st in spec.structure:
        label = _C_WRAPPED.sub(r"\1", _unalias(str(st.term), aliases))
        lab = "(Intercept)" if label == "1" else label
        if label != "1":
            terms.append(label)
        column_terms += [lab] * len(st.columns)
    X = np.ascontiguousarray(np.asarray(mm, dtype=float))
    columns, term_labels = r_names(spec, factors, labels, aliases)
    formulaic_columns = [_C_WRAPPED.sub(r"\1", _unalias(str(c), aliases)) for c in spec.column_names]
    wd = d[list(factors)].reset_index(drop=True) if factors else None
    fd = FixedDesign(fixed, terms, factors, covariates, column_terms, columns, spec, wd,
                     contrasts=coding, offsets=list(offsets), context=context,
                     term_labels=term_labels, formulaic_columns=formulaic_columns)
    if offsets:
        otext = " + ".join(f"I({translate_fixed(o)[0]})" for o in offsets)
        otext = alias_calls(otext, context)[0]
        try:
            om = model_matrix(f"0 + {otext}", d, na_action="raise", context=context)
        except Exception as exc:
            raise FormulaError(f"cannot evaluate offset({', '.join(offsets)}): {exc}") from exc
        if om.shape[1] != len(offsets):
            raise FormulaError(f"offset({', '.join(offsets)}) must be numeric, one value per row")
        fd.offset_spec = om.model_spec
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
    spec: ModelSpec | None = None  # formulaic spec of ``expr`` (None for an intercept)
    factors: dict[str, list[Any]] = field(default_factory=dict)  # factor() columns -> levels
    context: dict[str, Any] = field(default_factory=dict, repr=False)

    def model_rows(self, newdata: pd.DataFrame) -> np.ndarray:
        """Random-effect covariates of new rows (ones for an intercept-only term)."""
        if self.spec is None:
            return np.ones((len(newdata), 1))
        nd = newdata
        if self.factors:
            nd = newdata.copy()
            for name, levels in self.factors.items():
                vals = nd[name].astype(object) if isinstance(nd[name].dtype, pd.CategoricalDtype) \
                    else nd[name]
                nd[name] = pd.Categorical(vals, categories=levels)
        return np.asarray(self.spec.get_model_matrix(nd, context=self.context or r_context()),
                          dtype=float)

    @property
    def nc(self) -> int:
        return self.Z.shape[1]

    @property
    def nl(self) -> int:
        return len(self.levels)

    # -- the theta layout (lme4's ``Lind``; MixedModels.jl's ``ReMat``): this term owns it ---------
    # theta holds the lower triangle of the term's Cholesky factor Lambda (nc x nc) column by
    # column, as lme4 does; every user (deviance, solvers, profiles, variance components, the
    # boundary probes) reads the layout from here.

    @property
    def theta_pairs(self) -> list[tuple[int, int]]:
        """``(row, column)`` of Lambda for each theta of this term, in theta's order.

        Examples
        --------
        >>> t = RandomTerm("g", "1 + x", ["(Intercept)", "x"], ["a", "b"], np.zeros(2, int),
        ...                np.ones((2, 2)))
        >>> t.theta_pairs, t.theta_size
        ([(0, 0), (1, 0), (1, 1)], 3)
        """
        return [(i, j) for j in range(self.nc) for i in range(j, self.nc)]

    @property
    def cor_pairs(self) -> list[tuple[int, int]]:
        """``(i, j)``, ``i > j``, of each correlation of the term, in lme4's ``VarCorr`` order."""
        return [(i, j) for j in range(self.nc) for i in range(j + 1, self.nc)]

    @property
    def theta_size(self) -> int:
        """Number of theta of this term: ``nc (nc + 1) / 2``."""
        return self.nc * (self.nc + 1) // 2

    @property
    def ntheta(self) -> int:
        return self.theta_size

    @property
    def theta_lower(self) -> np.ndarray:
        """lme4's lower bounds: 0 for a diagonal element of Lambda, ``-inf`` below it."""
        return np.array([0.0 if i == j else -np.inf for i, j in self.theta_pairs])

    @property
    def theta_start(self) -> np.ndarray:
        """lme4's starting theta: Lambda = I."""
        return np.array([1.0 if i == j else 0.0 for i, j in self.theta_pairs])

    def lambda_(self, theta: ArrayLike) -> np.ndarray:
        """Lambda (nc x nc, lower triangular) from this term's ``theta_size`` values.

        Examples
        --------
        >>> t = RandomTerm("g", "1 + x", ["(Intercept)", "x"], ["a", "b"], np.zeros(2, int),
        ...                np.ones((2, 2)))
        >>> t.lambda_([1.0, 0.5, 2.0]).tolist()
        [[1.0, 0.0], [0.5, 2.0]]
        >>> t.theta_from_cov(t.lambda_([1.0, 0.5, 2.0]) @ t.lambda_([1.0, 0.5, 2.0]).T).tolist()
        [1.0, 0.5, 2.0]
        """
        th = np.asarray(theta, dtype=float).ravel()
        if th.size != self.theta_size:
            raise ValueError(f"term ({self.expr} | {self.group}) takes {self.theta_size} theta "
                             f"values, got {th.size}")
        L = np.zeros((self.nc, self.nc))
        rows, cols = zip(*self.theta_pairs)
        L[list(rows), list(cols)] = th
        return L

    def theta_from_lambda(self, L: np.ndarray) -> np.ndarray:
        """This term's theta from a lower-triangular Lambda (the inverse of :meth:`lambda_`)."""
        L = np.asarray(L, dtype=float)
        return np.array([L[i, j] for i, j in self.theta_pairs])

    def theta_from_cov(self, cov: ArrayLike) -> np.ndarray:
        """Theta of a covariance matrix of the random effects (binomial: no residual scale):
        its Cholesky factor, diagonal made non-negative; a singular matrix gives the factor of
        the nearest positive semi-definite one along its zero directions."""
        S = np.atleast_2d(np.asarray(cov, dtype=float))
        if S.shape != (self.nc, self.nc):
            raise ValueError(f"term ({self.expr} | {self.group}) has a {self.nc} x {self.nc} "
                             f"covariance, got shape {S.shape}")
        try:
            L = np.linalg.cholesky(S)
        except np.linalg.LinAlgError:
            w, V = np.linalg.eigh((S + S.T) / 2)
            _, R = np.linalg.qr((V * np.sqrt(np.clip(w, 0, None))).T)
            L = R.T
            L = L * np.where(np.diag(L) < 0, -1.0, 1.0)  # flip columns to a non-negative diagonal
        return self.theta_from_lambda(L)

    def lambda_row_slots(self, row: int) -> list[int]:
        """Positions (in this term's theta) of row ``row`` of Lambda: the row whose length is
        the standard deviation of random effect ``row``."""
        return [k for k, (i, _) in enumerate(self.theta_pairs) if i == row]

    @property
    def theta_names(self) -> list[str]:
        return [f"{self.group}.{self.cnames[i]}" if i == j
                else f"{self.group}.{self.cnames[i]}.{self.cnames[j]}"
                for i, j in self.theta_pairs]


def split_theta(terms: list[RandomTerm], theta: ArrayLike) -> list[np.ndarray]:
    """Each term's slice of the model's theta (terms in lme4's order)."""
    th = np.asarray(theta, dtype=float).ravel()
    want = sum(t.theta_size for t in terms)
    if th.size != want:
        raise ValueError(f"the random terms take {want} theta values, got {th.size}")
    out, pos = [], 0
    for t in terms:
        out.append(th[pos:pos + t.theta_size])
        pos += t.theta_size
    return out


def term_lambdas(terms: list[RandomTerm], theta: ArrayLike) -> list[np.ndarray]:
    """Lambda of each term from the model's theta (:meth:`RandomTerm.lambda_`)."""
    return [t.lambda_(th) for t, th in zip(terms, split_theta(terms, theta))]


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
        if len(levels) > nobs:  # glmer allows one level per observation (checkNlevels, allow.n)
            raise DataError(f"grouping factor {sp.group_label!r} has {len(levels)} levels for "
                            f"{nobs} observations; it must have at most one level per observation")
        spec = None
        if sp.expr.strip() == "1":
            # a column of ones; on large designs a read-only view of one value (8 bytes, not 8
            # per row: 320 MB at 40M rows)
            Z = np.ones((len(data), 1)) if len(data) < 1_000_000 else \
                np.broadcast_to(np.ones((1, 1)), (len(data), 1))
            cn = ["(Intercept)"]
        else:
            labels: dict[str, str] = {}
            text, frame, rfactors, context = _random_design(sp, data, labels)
            # the factors R names by level: those coded in the term and the other non-numeric
            # columns it reads (formulaic codes them with R's sorted levels)
            named = dict(rfactors)
            for v in _formula_factors(text):  # also refuses what a formula may not evaluate
                if v in frame.columns and v not in named and (
                        not pd.api.types.is_numeric_dtype(frame[v])
                        or pd.api.types.is_bool_dtype(frame[v])):
                    named[v] = list(as_r_factor(frame[v]).categories)
            text, aliases = alias_calls(text, context)
            try:
                mm = model_matrix(text, frame, na_action="raise", context=context)
            except Exception as exc:
                raise FormulaError(f"cannot build random term ({sp.expr} | {sp.group_label}): "
                                   f"{exc}") from exc
            Z = np.asarray(mm, dtype=float)
            spec = mm.model_spec
            cn = r_names(spec, named, labels, aliases)[0]
            if Z.shape[1] == 0:
                raise FormulaError(f"random term ({sp.expr} | {sp.group_label}) has no columns")
        term = RandomTerm(sp.group_label, sp.expr, cn, levels, idx, Z, sp.group, spec)
        if spec is not None:
            term.factors, term.context = rfactors, context
        terms.append(term)
    nl = [t.nl for t in terms]
    if any(b > a for a, b in zip(nl, nl[1:])):
        # lme4: ord <- rev(order(nl)) (stable ascending order, reversed)
        order = list(reversed(sorted(range(len(nl)), key=lambda i: nl[i])))
        terms = [terms[i] for i in order]
    return terms


def random_expression(sp: RandomSpec) -> str:
    """The left side of a random term in formulaic syntax (``I(x^2)`` -> ``I(x**2)``, factor
    calls replaced by their column, which :func:`build_random_terms` codes as a factor)."""
    return translate_terms(sp.expr)[0]


def _random_design(sp: RandomSpec, data: pd.DataFrame, labels: dict[str, str] | None = None
                   ) -> tuple[str, pd.DataFrame, dict[str, list[Any]], dict[str, Any]]:
    """Formulaic text, data frame, factor levels and context of a random term's left side:
    ``factor(x)``, ``relevel()``, ``ordered()`` and ``C(x, ...)`` code ``x`` as R does
    (``labels`` receives the R call coding each variable, see :func:`translate_terms`)."""
    text, coded, specs = translate_terms(sp.expr, labels)
    context: dict[str, Any] = r_context()
    if not coded:
        return text, data, {}, context
    where = f"({sp.expr} | {sp.group_label})"
    parts = _formula_factor_parts(text)
    frame = data.copy()
    factors: dict[str, list[Any]] = {}
    coding: dict[str, Any] = {}
    for c, kind in coded.items():
        if c not in data.columns:
            raise FormulaError(f"random term {where} names column {c!r} absent from the data")
        inside = [f for v, f in parts if v == c and f != c]
        if inside:
            raise FormulaError(f"{c!r} is a factor but the term {inside[0]!r} of {where} uses it "
                               "as a number")
        cat = r_factor(data[c], specs.get(c), _level_where(sp.expr, c))
        frame[c] = cat
        factors[c] = list(cat.categories)
        coding[c] = "treatment" if kind is None else kind
    return _apply_contrasts(text, coding, factors, context), frame, factors, context


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
            for s in _formula_factors(random_expression(sp)):
                if s not in cols:
                    if s not in data.columns:
                        raise FormulaError(f"random term ({sp.expr} | {sp.group_label}) names "
                                           f"column {s!r} absent from the data")
                    cols.append(s)
    return cols
