"""A formula evaluates only the data's columns, numeric and string literals, arithmetic and
comparison operators and the documented R functions: formulaic evaluates terms as Python, so
everything else is refused with a FormulaError naming it, before anything runs."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import FormulaError
from evalmix.model import alias_calls, build_fixed, check_expression, formula_functions, r_context

REF_DIR = Path(__file__).parents[1] / "reference"


@pytest.fixture(scope="module")
def data() -> pd.DataFrame:
    return pd.read_csv(REF_DIR / "formula_binary.csv")


ATTACKS = [
    ("I(__import__('pathlib').Path(TARGET).write_text('x'))", "the call of"),
    ("I(open(TARGET, 'w').write('x'))", "the call of"),
    ("exec('import os')", r"the function exec\(\)"),
    ("eval('1')", r"the function eval\(\)"),
    ("__import__('os')", r"the function __import__\(\)"),
    ("I(age.__class__)", "the attribute access"),
    ("I(age[0])", "the subscript"),
    ("I((lambda: 1)())", "the call of"),
    ("I([a for a in age])", "the expression"),
    ("I({1: age})", "the expression"),
    ("I(age if age else 1)", "the expression"),
    ("I(age & 1)", "the operator '&'"),
    ("I(not age)", "the operator '!'"),
    ("log(*age)", "the unpacking"),
    ("poly(age, **{'degree': 2})", r"the argument unpacking"),
    ("I(__builtins__)", "the name __builtins__"),
    ("np.log(age)", "the call of 'np.log'"),
    ("getattr(age, 'sum')", r"the function getattr\(\)"),
    ("I(1j)", "the literal 1j"),
]


@pytest.mark.parametrize("term, match", ATTACKS)
def test_fixed_part_refuses_python(term, match, data, tmp_path):
    target = tmp_path / "written"
    t = term.replace("TARGET", repr(str(target)))
    with pytest.raises(FormulaError, match=match):
        evalmix.glmer(f"y ~ grp + {t} + (1|item)", data)
    assert not target.exists()


@pytest.mark.parametrize("where", [
    "y ~ grp + (I(__import__('os').getcwd())|item)",
    "y ~ grp + (0 + I(age.real)|item)",
    "y ~ grp + offset(__import__('os').getcwd()) + (1|item)",
    "y ~ grp + offset(log(age).real) + (1|item)",
    "y ~ grp + offset(I(age[0])) + (1|item)",
    "y ~ grp + `__class__` + (1|item)",
    "y ~ grp + {__import__('os')} + (1|item)",
])
def test_random_terms_offsets_and_quoted_names_refuse_python(where, data):
    with pytest.raises(FormulaError, match="not allowed in a formula|cannot parse"):
        evalmix.glmer(where, data)


def test_error_names_the_term_and_lists_what_is_allowed(data):
    with pytest.raises(FormulaError) as exc:
        build_fixed("grp + I(age.real)", data)
    msg = str(exc.value)
    assert "term 'I(age.real)'" in msg and "'age.real'" in msg
    for fn in ("log", "poly", "ns", "factor", "offset"):
        assert fn in msg


def test_what_r_formulas_use_is_allowed(data):
    for term in ["log(age + 1)", "I(age^2)", "I(-age / 2 + 3 * age)", "sqrt(age)", "exp(-age)",
                 "poly(age, degree = 2)", "scale(age, scale = FALSE)", "ns(age, knots = c(3, 5))",
                 "bs(age, df = 3)", 'I(level == "high")', "I(age > 4)", "I(age * pi)",
                 "log(age, 2)", "abs(age - 4)"]:
        fd, X = build_fixed(f"grp + {term}", data)
        assert np.all(np.isfinite(X)), term


def test_check_expression_allows_the_documented_functions_only():
    assert {"I", "log", "exp", "sqrt", "poly", "ns", "bs", "scale"} <= set(formula_functions())
    assert "eval" not in formula_functions() and "np" not in formula_functions()
    check_expression("poly(x, 2) + log1p(y) * 3 ** 2")
    for bad in ["x.y", "x[1]", "f(x)", "__x__", "(lambda: 0)", "x @ y"]:
        with pytest.raises(FormulaError, match="not allowed in a formula"):
            check_expression(bad)


def test_calls_are_aliased_whatever_the_columns():
    text, aliases = alias_calls("I(log(I / N)) + poly(x, 2)", ctx := r_context())
    assert text == "_fn_I(_fn_log(I / N)) + _fn_poly(x, 2)"
    assert aliases == {"_fn_I": "I", "_fn_log": "log", "_fn_poly": "poly"}
    assert ctx["_fn_log"] is ctx["log"]
    # quoted levels are left as written
    assert alias_calls('I(g == "log(x)")', r_context())[0] == '_fn_I(g == "log(x)")'


def test_a_level_that_reads_like_a_call_is_compared_as_written():
    d = pd.DataFrame({"g": ["log(x)", "b", "log(x)", "c"], "y": [1.0, 2.0, 3.0, 4.0]})
    fd, X = build_fixed('I(g == "log(x)") + log(y)', d)
    assert fd.columns == ["(Intercept)", 'I(g == "log(x)")TRUE', "log(y)"]
    np.testing.assert_array_equal(X[:, 1], [1, 0, 1, 0])
    np.testing.assert_allclose(X[:, 2], np.log(d["y"]))


def test_columns_named_like_functions_are_read_as_columns(data):
    """R evaluates a value from the data before any function of that name: a column named
    ``log`` is the column inside ``I(log^2)``, while ``log(...)`` still calls the function."""
    d = data.assign(log=data["age"], exp=data["expo"])
    fd, X = build_fixed("log + I(log^2) + exp(exp) + log(exp)", d)
    np.testing.assert_allclose(X[:, 1], d["age"])
    np.testing.assert_allclose(X[:, 2], d["age"] ** 2)
    np.testing.assert_allclose(X[:, 3], np.exp(d["expo"]))
    np.testing.assert_allclose(X[:, 4], np.log(d["expo"]))
    # new data with the same columns: the same lookup
    np.testing.assert_allclose(fd.model_matrix(d.head(3)), X[:3])
    # the labels are the formula's, not the aliases
    assert not any("_fn_" in c for c in fd.columns + fd.column_terms + fd.terms)


def test_a_dotted_column_inside_a_function_is_named_with_a_way_out(data):
    d = data.assign(**{"dose.mg": data["expo"]})
    with pytest.raises(FormulaError, match=r"attribute access 'dose.mg' \(if 'dose.mg' is a column.*'dose_mg'"):
        build_fixed("grp + log(dose.mg)", d)
