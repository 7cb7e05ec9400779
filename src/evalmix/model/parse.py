"""lme4 formula text: the parser and the allow-list of what a term may evaluate.

A formula such as ``cbind(k, n - k) ~ model * language + (1|item) + (1 + x||g)`` is split into

- the response: a 0/1 column, or k-of-n counts written ``cbind(k, n - k)`` (or ``cbind(k, f)`` with a
  column of failures);
- the fixed part, kept as R text (:mod:`evalmix.model.functions` translates it for formulaic);
- random terms ``(expr | g)``: ``g`` may be a column, an interaction ``a:b`` or a nesting ``a/b``
  (``= (expr|a) + (expr|a:b)``); ``(expr || g)`` gives uncorrelated terms as lme4's
  ``expandDoubleVerts`` does.

Every term formulaic will evaluate is first checked by :func:`check_expression`.
"""

from __future__ import annotations

import ast
import dataclasses
import re
from collections.abc import Sequence
from dataclasses import dataclass

from ..core.errors import FormulaError

__all__ = ["CONSTANTS", "NAME", "ParsedFormula", "R_MATH_FUNCTIONS", "RandomSpec", "check_expression",
           "closing_paren", "make_formula", "expression_names", "formula_functions", "parse_formula", "parse_specs", "split_args",
           "split_outside", "split_top"]

# R's math functions a term may call (their implementations: evalmix.model.functions.R_FUNCTIONS)
R_MATH_FUNCTIONS = ("abs", "cos", "exp", "expm1", "log", "log10", "log1p", "log2", "sin", "sqrt", "tan")

NAME = re.compile(r"^[A-Za-z_.][A-Za-z0-9_.]*$")


def split_top(text: str, sep: str) -> list[str]:
    """Split ``text`` on ``sep`` outside parentheses and backticked names (`` `a:b` ``)."""
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
    i = 0
    while i < len(text):
        ch = text[i]
        if ch == "`" and "`" in text[i + 1:]:  # a backticked name is one token, whatever it holds
            end = text.index("`", i + 1)
            cur.append(text[i:end + 1])
            i = end + 1
            continue
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

    def __str__(self) -> str:
        """The term as lme4 prints it: ``(1 | item)``, ``(0 + x | g)``."""
        return f"({' '.join(self.expr.split())} | {self.group_label})"


@dataclass(frozen=True)
class ParsedFormula:
    """The parts of an lme4 formula, with the operations of the reformulas package.

    Operations return new formulas (the object is frozen) whose :attr:`formula` is the R text of
    the result (:attr:`text`): :meth:`find_random` (``findbars``), :meth:`without_random`
    (``nobars``), :meth:`with_random`, :meth:`subbars`, :meth:`with_fixed` / :meth:`without_fixed`
    (``update(f, . ~ . + x)``, ``. ~ . - x``), :meth:`with_response`.

    Examples
    --------
    >>> f = parse_formula("correct ~ model + (1|item) + (1|item:run)")
    >>> str(f.without_random("run").with_fixed("lang"))
    'correct ~ model + lang + (1 | item)'
    >>> f.subbars()
    'correct ~ model + (1 + item) + (1 + item:run)'
    """

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

    # -- back to text ---------------------------------------------------------------------------
    @property
    def response(self) -> str:
        """The left-hand side as R writes it: ``correct``, ``cbind(k, n - k)``, ``cbind(k, f)``."""
        if self.trials is not None:
            return f"cbind({self.successes}, {self.trials} - {self.successes})"
        if self.failures is not None:
            return f"cbind({self.successes}, {self.failures})"
        return self.successes if NAME.match(self.successes) else f"`{self.successes}`"

    @property
    def fixed_terms(self) -> list[str]:
        """The fixed part's top-level terms (split on ``+``), as written, spaces collapsed."""
        return [" ".join(p.split()) for p in split_top(self.fixed, "+") if p.strip()]

    def _rhs(self, bars: bool = True) -> str:
        parts = [" + ".join(self.fixed_terms) or "1"]
        parts += [f"offset({o})" for o in self.offsets]
        for r in self.random:
            parts.append(str(r) if bars else f"({' '.join(r.expr.split())} + {r.group_label})")
        return " + ".join(parts)

    @property
    def text(self) -> str:
        """The formula as R text: the response, the fixed part, offsets, then the random terms
        (nested and ``||`` terms written out as lme4 expands them)."""
        return f"{self.response} ~ {self._rhs()}"

    def __str__(self) -> str:
        return self.text

    def _new(self, **changes: object) -> ParsedFormula:
        out = dataclasses.replace(self, **changes)  # type: ignore[arg-type]
        return dataclasses.replace(out, formula=out.text)

    # -- random terms (findbars, nobars, subbars) ------------------------------------------------
    def find_random(self, column: str | None = None) -> tuple[RandomSpec, ...]:
        """The random terms (lme4's ``findbars``); with ``column``, those grouped by it (alone or
        in an interaction)."""
        return tuple(r for r in self.random if column is None or column in r.group)

    def without_random(self, column: str | None = None) -> ParsedFormula:
        """The formula without its random terms (``nobars``), or without those grouped by
        ``column``."""
        return self._new(random=tuple(r for r in self.random if column is not None and column not in r.group))

    def with_random(self, group: str, expr: str = "1") -> ParsedFormula:
        """The formula with the random term ``(expr | group)`` added (``group`` may be ``a:b``
        or ``a/b``; ``expr`` of ``||`` terms is not taken: give each term); a term already there
        is not repeated."""
        new = [r for r in _parse_random(f"({expr} | {group})") if r not in self.random]
        return self._new(random=self.random + tuple(new))

    def subbars(self) -> str:
        """R text with each ``|`` of a random term replaced by ``+`` (lme4's ``subbars``: the
        formula whose variables the model frame reads)."""
        return f"{self.response} ~ {self._rhs(bars=False)}"

    # -- fixed terms and the response -----------------------------------------------------------
    def with_fixed(self, term: str) -> ParsedFormula:
        """The formula with the fixed term ``term`` added (``update(f, . ~ . + term)``); a
        formula whose fixed part is only the intercept gets ``term`` in its place."""
        term = " ".join(term.split())
        terms = self.fixed_terms
        if term in terms:
            return self
        terms = [term] if terms == ["1"] else terms + [term]
        return self._new(fixed=" + ".join(terms))

    def without_fixed(self, term: str) -> ParsedFormula:
        """The formula without the top-level fixed term ``term`` (``update(f, . ~ . - term)``).

        Raises
        ------
        FormulaError
            When ``term`` is not a top-level term of the fixed part.
        """
        term = " ".join(term.split())
        terms = self.fixed_terms
        if term not in terms:
            raise FormulaError(f"term {term!r} is not a top-level term of the fixed part "
                               f"{self.fixed!r} (terms: {terms})")
        rest = [t for t in terms if t != term]
        return self._new(fixed=" + ".join(rest) or "1")

    def with_response(self, response: str) -> ParsedFormula:
        """The formula with another left-hand side (a column, ``cbind(k, n - k)`` or
        ``cbind(k, f)``)."""
        k, fail, trials = _parse_response(response)
        return self._new(successes=k, failures=fail, trials=trials)


def make_formula(response: str, fixed: str | Sequence[str] = (), random: Sequence[str] = (), *,
                 trials: str | None = None) -> ParsedFormula:
    """A formula from its parts, never from pasted text: the response column (with ``trials``, the
    k-of-n response ``cbind(response, trials - response)``), the fixed terms (text such as
    ``"model * lang"`` or a list of terms; none: the intercept) and the grouping factors of random
    intercepts (``"item"``, ``"item:run"``).

    Examples
    --------
    >>> str(make_formula("correct", ["model", "lang"], ["item", "item:run"]))
    'correct ~ model + lang + (1 | item) + (1 | item:run)'
    >>> make_formula("k", "model", ["item"], trials="n").text
    'cbind(k, n - k) ~ model + (1 | item)'
    """
    k, fail, tr = _parse_response(response)
    if trials is not None:
        if tr is not None or fail is not None:
            raise FormulaError("give the trials either in cbind() or as trials=, not both")
        if not NAME.match(trials):
            raise FormulaError(f"trials={trials!r} must be a column name")
        tr = trials
    terms = [fixed] if isinstance(fixed, str) else list(fixed)
    for term in terms:
        if "~" in term or "|" in term:
            raise FormulaError(f"fixed term {term!r} may not hold '~' or a random term")
    base = ParsedFormula("", k, fail, tr, " + ".join(" ".join(t.split()) for t in terms) or "1", ())
    out = base._new()
    for g in random:
        out = out.with_random(g)
    return out


def parse_specs(specs: str) -> tuple[list[str], list[str]]:
    """The variables of an emmeans specs formula and of its conditioning part:
    ``"~ model * lang | task"`` -> (``["model", "lang"]``, ``["task"]``).

    Examples
    --------
    >>> parse_specs("~ model | lang + task"), parse_specs("model:lang")
    ((['model'], ['lang', 'task']), (['model', 'lang'], []))
    """
    text = specs.strip()
    if text.startswith("~"):
        text = text[1:]
    if "~" in text:
        raise FormulaError(f"specs {specs!r} has a left-hand side; write '~ a | b' or 'a'")
    parts = split_top(text, "|")
    if len(parts) > 2:
        raise FormulaError(f"specs {specs!r} has more than one '|'")

    def variables(part: str) -> list[str]:
        out: list[str] = []
        for plus in split_top(part, "+"):
            for star in split_top(plus, "*"):
                # a backticked name (`lang name`) is the column inside the backticks, as in R
                out += [v.strip().strip("`") if v.strip()[:1] == "`" else v.strip()
                        for v in split_outside(star, ":") if v.strip()]
        return out

    return variables(parts[0]), variables(parts[1]) if len(parts) == 2 else []


def _parse_response(lhs: str) -> tuple[str, str | None, str | None]:
    lhs = lhs.strip()
    if len(lhs) > 2 and lhs[0] == lhs[-1] == "`" and "`" not in lhs[1:-1]:
        return lhs[1:-1], None, None  # a non-syntactic column name, as R writes it
    m = re.fullmatch(r"cbind\s*\((.*)\)", lhs)
    if not m:
        ratio = re.fullmatch(r"([A-Za-z_.][\w.]*)\s*/\s*([A-Za-z_.][\w.]*)", lhs)
        if ratio:
            k, n = ratio.groups()
            raise FormulaError(f"response {lhs!r}: write cbind({k}, {n} - {k}), the model R fits "
                               f"for {lhs} with weights = {n} (or give a column of proportions "
                               "with weights=)")
        if not NAME.match(lhs):
            raise FormulaError(f"response {lhs!r} must be a column name or cbind(k, n - k)")
        return lhs, None, None
    args = split_top(m.group(1), ",")
    if len(args) != 2:
        raise FormulaError(f"cbind() in the response needs two arguments, got {lhs!r}")
    k, second = args
    if not NAME.match(k):
        raise FormulaError(f"first argument of cbind() must be a column name, got {k!r}")
    m2 = re.fullmatch(r"([A-Za-z_.][A-Za-z0-9_.]*)\s*-\s*([A-Za-z_.][A-Za-z0-9_.]*)", second)
    if m2:
        if m2.group(2) != k:
            raise FormulaError(f"cbind({k}, {second}): the second argument must be 'n - {k}'")
        return k, None, m2.group(1)
    if not NAME.match(second):
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
    if len(c) > 2 and c[0] == c[-1] == "`":  # a non-syntactic column name, as R writes it
        return c[1:-1]
    if not NAME.match(c):
        raise FormulaError(f"grouping factor {c!r} in {term!r} is not a column name (or "
                           "factor(column))")
    return c


def _parse_random(term: str) -> list[RandomSpec]:
    inner = term.strip()[1:-1]
    double = "||" in inner
    parts = split_top(inner, "||" if double else "|")
    if len(parts) != 2 or not parts[0] or not parts[1]:
        raise FormulaError(f"random term {term!r} must read (expr | group)")
    expr, grp = parts
    nest = [p.strip() for p in split_top(grp, "/")]
    groups: list[tuple[str, ...]] = []
    for i in range(len(nest)):
        cols: list[str] = []
        for p in nest[: i + 1]:
            cols += [_grouping_column(c, term) for c in split_top(p, ":")]
        # lme4 names the nested term inner-first: (1|item/run) -> (1|item) + (1|run:item)
        groups.append(tuple(cols) if i == 0 else tuple(reversed(cols)))
    exprs = [expr]
    if double:
        pieces = [p for p in split_top(expr, "+") if p]
        has_int = not any(p in ("0", "-1") for p in pieces)
        slopes = [p for p in pieces if p not in ("0", "1", "-1")]
        exprs = (["1"] if has_int else []) + [f"0 + {p}" for p in slopes]
    return [RandomSpec(e, g) for g in groups for e in exprs]


#: A parenthesised term of an expression and a grouping name with only a space between them.
_MISSING_BAR = re.compile(r"(.*[\w.)`])\s+([A-Za-z_.][\w.]*(?:\s*[:/]\s*[A-Za-z_.][\w.]*)*|`[^`]+`)")


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
    for term in split_top(rhs, "+"):
        if not term:
            continue
        head = term[:closing_paren(term, 0) + 1] if term.startswith("(") else ""
        if head and "|" not in head and _MISSING_BAR.fullmatch(head[1:-1].strip()):
            # (1 item), (1 + x g): R would fail on the syntax; the bar is what is missing
            expr, group = _MISSING_BAR.fullmatch(head[1:-1].strip()).groups()  # type: ignore[union-attr]
            raise FormulaError(f"term {head!r} in {formula!r} is missing the bar of a random term: "
                               f"write ({expr} | {group})")
        if not head and len(split_top(term, "|")) > 1:
            # 1|item: R would read the bar as 'or' of the whole formula
            raise FormulaError(f"term {term.strip()!r} in {formula!r} is a random term without its "
                               f"parentheses: write ({term.strip()})")
        if "|" in head:
            random.extend(_parse_random(head))
            rest = term[len(head):].strip()  # ``(1|g) - 1`` splits as one term
            if rest:
                if not rest.startswith("-"):
                    raise FormulaError(f"cannot read {term!r}: a random term is added with '+'")
                tail.append(rest)
        elif re.match(r"offset\s*\(", term):
            end = closing_paren(term, term.index("("))
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


def parse_mixed_formula(formula: object, engine: str) -> ParsedFormula:
    """:func:`parse_formula` for an engine that needs at least one random term, whose name the
    errors give.

    Examples
    --------
    >>> parse_mixed_formula("score ~ model + (1|item)", "lmer").fixed
    'model'
    >>> parse_mixed_formula("score ~ model", "lmer")
    Traceback (most recent call last):
    ...
    evalmix.FormulaError: formula 'score ~ model' has no random term such as (1|item); lmer needs at least one
    """
    if not isinstance(formula, str):
        raise FormulaError(f"formula must be a string such as 'score ~ model + (1|item)', got "
                           f"{type(formula).__name__}")
    parsed = parse_formula(formula)
    if not parsed.random:
        raise FormulaError(f"formula {formula!r} has no random term such as (1|item); {engine} needs "
                           "at least one")
    return parsed


def closing_paren(text: str, start: int) -> int:
    """Index of the parenthesis closing the one at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        depth += {"(": 1, ")": -1}.get(text[i], 0)
        if depth == 0:
            return i
    raise FormulaError(f"unbalanced '(' in {text!r}")



def split_outside(text: str, sep: str) -> list[str]:
    """Split ``text`` on ``sep`` where it stands outside brackets, parentheses and quotes."""
    parts: list[str] = []
    cur: list[str] = []
    depth, quote = 0, ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "'\"`":
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


def split_args(text: str) -> list[str]:
    """Split call arguments on commas outside brackets and quotes."""
    return [p for p in (part.strip() for part in split_outside(text, ",")) if p]


def expression_names(expr: str) -> list[str]:
    """Variables an R expression reads: every name used as a value (R looks a value up in the
    data first, so a column named ``I``, ``log`` or ``C`` is the column), not the functions
    called, nor the constant ``pi``. The expression is checked first (:func:`check_expression`)."""

    tree = check_expression(expr)
    called = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call)}
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and id(node) not in called and node.id not in names \
                and node.id not in CONSTANTS:
            names.append(node.id)
    return names


# What a formula may evaluate: the data's columns, numbers, strings and logicals, arithmetic and
# comparisons, and the documented R functions. formulaic evaluates a term as Python (``eval``),
# so everything else (attributes, subscripts, lambdas, comprehensions, dunder names, calls of
# anything else) is refused before formulaic sees the text.
CONSTANTS = frozenset({"pi"})
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
    return sorted(set(R_MATH_FUNCTIONS) | {"I", "scale", "poly", "bs", "ns"})


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
    evalmix.FormulaError: term "__import__('os')": the function __import__() is not allowed in a formula ...
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

