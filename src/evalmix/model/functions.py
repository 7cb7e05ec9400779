"""R's functions, factor codings and contrasts, and R's names for formulaic's columns.

The fixed part is written in R and built by formulaic. R syntax formulaic reads differently is
translated first (:func:`translate_terms`): ``^`` inside I() is a power (``**``), ``factor(x)`` /
``C(x, contr.sum)`` become a factor-coded ``x`` with its contrasts, R's math functions come from a
context dictionary (:func:`r_context`), and calls are aliased (:func:`alias_calls`) so that a
column named like a function is read as the column, as R reads it. formulaic's ``scale``, ``poly``
(orthogonal, as R's), ``contr.sum`` and ``contr.poly`` compute what R computes; their state (centre,
scale, polynomial coefficients) is kept in the model spec, so new data (predictions, reference
grids) are transformed with the fitted values. Columns and terms are named as R names them
(:func:`r_names`, :func:`r_deparse`).
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd

from ..core.errors import DataError, FormulaError
from .parse import NAME, closing_paren, expression_names, formula_functions, split_args, split_outside

if TYPE_CHECKING:
    from formulaic import ModelSpec
    from numpy.typing import ArrayLike

__all__ = ["CONTRASTS", "LevelSpec", "R_FUNCTIONS", "alias_calls", "apply_contrasts", "as_r_factor",
           "contrast_kind", "factor_columns", "fixed_variables", "formula_factor_parts", "formula_factors",
           "formulaic_message", "level_test", "level_where", "r_context", "r_deparse", "r_factor", "r_formula", "r_names",
           "split_term", "strip_contrasts", "translate_fixed", "translate_terms", "unalias"]


def as_r_factor(s: pd.Series) -> pd.Categorical:
    """Categorical with R's ``factor()`` level order (sorted; categoricals keep their order)."""
    if isinstance(s.dtype, pd.CategoricalDtype):
        # a categorical Series holds a Categorical (pandas-stubs types .values as any array)
        return cast(pd.Categorical, s.cat.remove_unused_categories().values)
    # one hashing pass (factorize, on the column's own storage: no object array of a million
    # strings), then the few levels sorted and the codes renumbered
    codes, uniques = pd.factorize(s)
    if (codes < 0).any():  # a missing value: the Categorical constructor says what is wrong
        vals = s.to_numpy()
        return pd.Categorical(vals, categories=sorted(pd.unique(vals).tolist(),
                                                      key=lambda v: (str(type(v)), v)))
    found = list(uniques.tolist())
    order = sorted(range(len(found)), key=lambda i: (str(type(found[i])), found[i]))
    rank = np.empty(len(found), dtype=np.int64)
    rank[order] = np.arange(len(found))
    return pd.Categorical.from_codes(rank[codes], categories=pd.Index([found[i] for i in order]))


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

    from ..core.errors import DataWarning

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


def strip_contrasts(label: str) -> str:
    """A formulaic term label without the ``C(x, ...)`` wrappers :func:`apply_contrasts` added.

    Examples
    --------
    >>> strip_contrasts("C(g, contr.sum):x")
    'g:x'
    """
    return _C_WRAPPED.sub(r"\1", label)


def formulaic_message(exc: Exception) -> str:
    """formulaic's message without its terminal colour codes, with a hint for an unknown function."""
    msg = re.sub(r"\x1b\[[0-9;]*m|[\u29da\u29db]", "", str(exc))
    m = re.search(r"NameError: name '([\w.]+)' is not defined", msg)
    if m:
        msg += (f"; evalmix does not know the function {m.group(1)}() (it knows R's log, exp, "
                "sqrt, scale, poly, bs, ns and the others listed in docs/glmm.md)")
    return msg


def contrast_kind(value: str | ArrayLike, where: str) -> str | np.ndarray:
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
        return [_r_scalar(a, where) for a in split_args(m.group(1))]
    if t[:1] in "[(" and t[-1:] in "])":
        return [_r_scalar(a, where) for a in split_args(t[1:-1])]
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
    close = closing_paren(text, m.end() - 1)
    call = text[m.start():close + 1]
    args = split_args(text[m.end():close])
    if not args:
        raise FormulaError(f"term {call!r}: {fn}() needs a column")
    first = args[0]
    inner = _FACTOR_FUNC.match(first)
    if inner:
        name, spec, ordered, end = _factor_call(first, 0, inner)
        if first[end + 1:].strip():
            raise FormulaError(f"term {call!r}: {fn}() takes a column or factor(column)")
    elif NAME.match(first):
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
            factors[name] = contrast_kind(arg, f"C({name}, {arg})")
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
    # quoted text (a level compared with, I(g == "log(x)")) and backticked names (`I(x)`, a
    # column) are left as written
    pieces = re.split(r"""('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|`[^`]*`)""", text)
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


def unalias(label: str, aliases: dict[str, str]) -> str:
    for alias, name in aliases.items():
        label = label.replace(alias + "(", name + "(")
    return label


@lru_cache(maxsize=256)
def formula_factors(rhs: str) -> tuple[str, ...]:
    """Names of the variables a formulaic right-hand side reads, in order of appearance."""
    return tuple(v for v, _ in formula_factor_parts(rhs))


@lru_cache(maxsize=256)
def formula_factor_parts(rhs: str) -> tuple[tuple[str, str], ...]:
    """(variable, formulaic factor it appears in) pairs, in order of appearance."""
    from formulaic import Formula

    if re.search(r"(?<![\w.])\.(?![\w.])", rhs):
        raise FormulaError(f"{rhs!r}: the '.' shorthand (all other columns) is not supported; "
                           "name the columns")
    try:
        parsed = Formula(rhs)
    except Exception as exc:
        raise FormulaError(f"cannot parse the fixed part {rhs!r}: {formulaic_message(exc)}") from exc
    out: list[tuple[str, str]] = []
    for term in parsed:
        for f in term.factors:
            s = str(f)
            if s in ("1", "0"):
                continue
            if f.eval_method.name == "LOOKUP" and s.startswith("__"):
                raise FormulaError(f"term {s!r}: the name {s} is not allowed in a formula")
            # formulaic keeps the backticks of a name it must quote to print (`a:b`); the
            # column is the name inside them, as R's backticks mean
            look = s[1:-1] if len(s) > 1 and s[0] == s[-1] == "`" else s
            names = [look] if f.eval_method.name == "LOOKUP" else expression_names(s)
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
    names = list(dict.fromkeys(formula_factors(text)))
    for o in offsets:
        for v in expression_names(translate_fixed(o)[0]):
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


def r_formula(formula: str) -> str:
    """A formula as R's deparse shows it: ``(1 | item)``, ``cbind(k, n - k)``, the rest with its
    spaces collapsed.

    Examples
    --------
    >>> r_formula("cbind(k,n-k) ~ model + (1|item) + (x||g)")
    'cbind(k, n - k) ~ model + (1 | item) + (x || g)'
    """
    lhs, _, rhs = formula.partition("~")
    rhs = re.sub(r"\s*\|\|\s*", " || ", rhs.strip())
    rhs = re.sub(r"(?<!\|)\s*\|(?!\|)\s*", " | ", rhs)
    return f"{r_deparse(lhs.strip())} ~ {' '.join(rhs.split())}"


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


def _column_parts(column: str, quoted: list[str]) -> list[str]:
    """The parts of a model-matrix column name split on ``:``, a backticked column's name
    (formulaic writes `` `a:b` `` as ``a:b`` in column names) kept whole."""
    if not quoted or not any(":" in q for q in quoted):
        return split_term(column)
    parts: list[str] = []
    rest = column
    while rest:
        name = next((q for q in sorted(quoted, key=len, reverse=True) if rest.startswith(q)), None)
        head = split_term(rest)[0] if name is None else name + split_term(rest[len(name):])[0]
        parts.append(head)
        rest = rest[len(head) + 1:]
    return parts


def split_term(term: str) -> list[str]:
    """The factors of an interaction term (or the parts of a column name) split on ``:`` outside
    brackets, parentheses and quotes.

    Examples
    --------
    >>> split_term("model:I(lang == 'a:b')")
    ['model', "I(lang == 'a:b')"]
    """
    return split_outside(term, ":")


def _r_level(text: str, levels: Any = ()) -> str:
    """A level as R prints it in a name (``TRUE``, ``2`` for a float 2.0); a level that is text
    among ``levels`` (a model named ``1.0``) is kept as written."""
    if any(isinstance(v, str) and v == text for v in levels):
        return text
    if text in ("True", "False"):
        return text.upper()
    if re.fullmatch(r"-?\d+\.0", text):
        return text[:-2]
    return text


#: R's syntactic names (``make.names`` leaves them as they are); others print in backticks.
_R_SYNTACTIC = re.compile(r"(?:[A-Za-z]|\.(?![0-9]))[A-Za-z0-9._]*|\.")


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
            ux = unalias(str(f), aliases)
            if f.eval_method.name == "LOOKUP" and not _R_SYNTACTIC.fullmatch(ux.strip("`")):
                # a non-syntactic column (`lang name`, `I(x)`): R writes its name in backticks
                name = ux.strip("`")
                var = name if name in factors else None
                r_factor_labels.append(f"`{name}`")
                kinds.append((var, f"`{name}`", False))
                continue
            m = _C_WRAPPED.fullmatch(ux) or re.fullmatch(r"C\(([A-Za-z_.][\w.]*)\)", ux)
            var = m.group(1) if m else (ux if ux in factors else None)
            lab = labels.get(var, var) if var is not None else r_deparse(ux)
            r_factor_labels.append(lab)
            kinds.append((var, lab, var is None and _is_logical(ux)))
        term_labels[strip_contrasts(unalias(raw_term, aliases))] = ":".join(r_factor_labels)
        # formulaic numbers the columns of poly(raw = TRUE) from 0, R from 1
        zero_based = {str(f) for f in fs if any(
            p.startswith(str(f) + "[0]") for col in st.columns for p in split_term(str(col)))}
        quoted = [str(f)[1:-1] if str(f)[:1] == str(f)[-1:] == "`" and len(str(f)) > 1 else None for f in fs]
        for col in st.columns:
            out = []
            for part in _column_parts(str(col), [q for q in quoted if q is not None]):
                part = next((str(f) + part[len(q):] for f, q in zip(fs, quoted)
                             if q is not None and part.startswith(q)), part)
                # the factor the part names (a column of a term may span a subset of its
                # factors: formulaic's scoped terms under a missing main effect)
                hits = [k for k, f in enumerate(fs) if part.startswith(str(f))]
                if not hits:  # not expected: keep formulaic's name, readable
                    out.append(unalias(part, aliases))
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
                levels = factors.get(var, ())
                if inner.startswith("T."):
                    suffix = _r_level(inner[2:], levels)
                elif inner.startswith("S."):  # contr.sum columns are numbered
                    lv = [_r_level(str(v), levels) for v in levels]
                    key = _r_level(inner[2:], levels)
                    suffix = str(lv.index(key) + 1) if key in lv else key
                else:
                    suffix = _r_level(inner, levels)
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


def level_where(expr: str, name: str) -> str:
    """The call that states the levels of ``name`` in ``expr`` (for messages)."""
    m = re.search(rf"(?:factor|ordered|relevel)\s*\(\s*(?:factor\s*\()?\s*{re.escape(name)}\b[^)]*\)+",
                  expr)
    return m.group(0) if m else f"factor({name})"


def level_test(term: str, name: str) -> bool:
    """Whether ``term`` is ``I(name == level)`` or ``I(name != level)``: a 0/1 column, as R codes
    the logical (its ``TRUE`` column)."""
    lit = r"""(?:'[^']*'|"[^"]*"|-?\d+(?:\.\d*)?)"""
    v = re.escape(name)
    return re.fullmatch(rf"I\(\s*(?:{v}\s*[!=]=\s*{lit}|{lit}\s*[!=]=\s*{v})\s*\)", term) is not None


def apply_contrasts(text: str, coding: dict[str, Any], factors: dict[str, list[Any]],
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

