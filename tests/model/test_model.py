"""The model floor (evalmix.model): the parsed formula and its operations (lme4's findbars, nobars,
subbars; update), formulas built from parts, the frozen fixed design, the model frame."""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd
import pytest

from evalmix.core.errors import FormulaError
from evalmix.model import (R_FUNCTIONS, FixedDesign, RandomTerm, build_fixed, build_random_terms,
                           fixed_on_patterns, make_formula, model_columns, parse_formula, parse_specs,
                           split_term)
from evalmix.model.parse import CONSTANTS, R_MATH_FUNCTIONS

ROUND_TRIP = [
    "correct ~ model + (1 | item)",
    "correct ~ model * lang + (1 | item) + (1 | item:run)",
    "cbind(k, n - k) ~ 0 + x + offset(log(N)) + (1 + x | g)",
    "cbind(k, f) ~ I(age^2) + factor(site, levels = c(3, 1, 2)) + (1 | g)",
    "y ~ 1 + (1 | g) + (0 + x | g)",
]


@pytest.mark.parametrize("text", ROUND_TRIP)
def test_text_round_trips(text):
    parsed = parse_formula(text)
    assert parsed.text == text
    again = parse_formula(parsed.text)
    assert (again.successes, again.failures, again.trials, again.fixed, again.random, again.offsets) == \
        (parsed.successes, parsed.failures, parsed.trials, parsed.fixed, parsed.random, parsed.offsets)


def test_text_writes_out_nesting_and_double_bars_as_lme4_expands_them():
    assert parse_formula("y~x+(1|item/run)").text == "y ~ x + (1 | item) + (1 | run:item)"
    assert parse_formula("y ~ x + (1 + x||g)").text == "y ~ x + (1 | g) + (0 + x | g)"
    assert str(parse_formula("cbind(k,n-k)~x+(1|g)")) == "cbind(k, n - k) ~ x + (1 | g)"


def test_random_term_operations():
    f = parse_formula("correct ~ model + (1|item) + (1|item:run) + (1|judge)")
    assert [r.group_label for r in f.find_random()] == ["item", "item:run", "judge"]
    assert [r.group_label for r in f.find_random("run")] == ["item:run"]
    assert f.without_random().text == "correct ~ model"
    assert f.without_random("run").text == "correct ~ model + (1 | item) + (1 | judge)"
    assert f.without_random("item").text == "correct ~ model + (1 | judge)"
    g = f.without_random().with_random("item/run")
    assert g.text == "correct ~ model + (1 | item) + (1 | run:item)"
    assert g.with_random("item").random == g.random  # a term already there is not repeated
    assert f.with_random("g", "1 + x").random[-1].expr == "1 + x"
    assert f.subbars() == "correct ~ model + (1 + item) + (1 + item:run) + (1 + judge)"
    # every operation leaves the formula it was called on as it was, and its text is the result's
    assert f.text == "correct ~ model + (1 | item) + (1 | item:run) + (1 | judge)"
    assert g.formula == g.text


def test_fixed_term_and_response_operations():
    f = parse_formula("correct ~ model + (1|item)")
    assert f.with_fixed("lang").text == "correct ~ model + lang + (1 | item)"
    assert f.with_fixed("model") is f
    assert f.with_fixed("model:lang").fixed_terms == ["model", "model:lang"]
    assert f.without_fixed("model").text == "correct ~ 1 + (1 | item)"
    assert f.without_fixed("model").with_fixed("lang").text == "correct ~ lang + (1 | item)"
    with pytest.raises(FormulaError, match="'lang' is not a top-level term"):
        f.without_fixed("lang")
    assert f.with_response("cbind(k, n - k)").text == "cbind(k, n - k) ~ model + (1 | item)"
    assert f.with_response("cbind(k, n - k)").trials == "n"
    with pytest.raises(FormulaError, match="response"):
        f.with_response("log(y)")


def test_make_formula_builds_from_parts():
    f = make_formula("correct", ["model", "lang"], ["item", "item:run"])
    assert f.text == "correct ~ model + lang + (1 | item) + (1 | item:run)"
    assert parse_formula(f.text).random == f.random
    assert make_formula("k", "model * lang", ["item"], trials="n").text == \
        "cbind(k, n - k) ~ model * lang + (1 | item)"
    assert make_formula("y").text == "y ~ 1"
    with pytest.raises(FormulaError, match="random term"):
        make_formula("y", ["x + (1|g)"])
    with pytest.raises(FormulaError, match="not both"):
        make_formula("cbind(k, n - k)", ["x"], trials="n")


def test_parse_specs_and_split_term():
    assert parse_specs("~ model * lang | task") == (["model", "lang"], ["task"])
    assert parse_specs("model") == (["model"], [])
    assert parse_specs("~ model | lang:task") == (["model"], ["lang", "task"])
    with pytest.raises(FormulaError, match="left-hand side"):
        parse_specs("y ~ model")
    assert split_term("model:I(g == 'a:b')") == ["model", "I(g == 'a:b')"]


def test_r_functions_are_the_allow_list():
    # the parser allows exactly the functions the model frame can evaluate
    assert set(R_FUNCTIONS) == set(R_MATH_FUNCTIONS) | set(CONSTANTS)


def test_fixed_design_is_frozen():
    d = pd.DataFrame({"m": list("abab"), "x": [1.0, 2.0, 1.0, 2.0], "c": list("abab")})
    fd, X = build_fixed("m + x + c", d)
    with pytest.raises(dataclasses.FrozenInstanceError):
        fd.columns = []  # type: ignore[misc]
    reduced = fd.with_columns([0, 1, 2])
    assert isinstance(reduced, FixedDesign)
    assert fd.columns == ["(Intercept)", "mb", "x", "cb"] and reduced.columns == ["(Intercept)", "mb", "x"]
    nd = pd.DataFrame({"m": ["b"], "x": [3.0], "c": ["a"]})
    assert reduced.model_matrix(nd).tolist() == [[1.0, 1.0, 3.0]]
    assert fd.model_matrix(nd).tolist() == [[1.0, 1.0, 3.0, 0.0]]
    refit = fd.fitted_on(d.iloc[:1], offset_mean=0.5)
    assert refit.covariates == {"x": 1.0} and fd.covariates == {"x": 1.5}
    assert refit.offset_mean == 0.5 and fd.offset_mean == 0.0


def test_random_term_is_frozen():
    d = pd.DataFrame({"g": list("aabbcc"), "x": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]})
    slope, = build_random_terms(parse_formula("y ~ 1 + (1 + x | g)").random, d)
    assert isinstance(slope, RandomTerm)
    with pytest.raises(dataclasses.FrozenInstanceError):
        slope.levels = ["z"]  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        slope.context = {}  # type: ignore[misc]
    # the arrays are read-only views: a term cannot drift from the rows it was built from
    for arr in (slope.index, slope.Z):
        with pytest.raises(ValueError, match="read-only"):
            arr[0] = 1
    assert slope.index.tolist() == [0, 0, 1, 1, 2, 2]
    assert slope.Z[:, 1].tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    # ... of the caller's arrays, which stay writable
    idx, Z = np.array([0, 1, 1]), np.ones((3, 1))
    t = RandomTerm("h", "1", ["(Intercept)"], ["p", "q"], idx, Z)
    idx[0] = 1
    assert idx.flags.writeable and t.index.tolist() == [1, 1, 1]
    # a changed copy, the original unchanged; what the factors and context were built with is kept
    moved = dataclasses.replace(slope, index=np.array([2, 2, 1, 1, 0, 0]))
    assert moved.index.tolist() == [2, 2, 1, 1, 0, 0] and not moved.index.flags.writeable
    assert slope.index.tolist() == [0, 0, 1, 1, 2, 2]
    assert moved.cnames == slope.cnames == ["(Intercept)", "x"] and moved.spec is slope.spec
    nd = pd.DataFrame({"x": [10.0]})
    assert moved.model_rows(nd).tolist() == [[1.0, 10.0]]


@pytest.mark.parametrize("values, dtype, levels", [
    (["b", "a", "c", "a"], None, ["a", "b", "c"]),
    (["b", "a", "c", "a"], "string[pyarrow]", ["a", "b", "c"]),
    (["10", "9", "a", "9"], object, ["10", "9", "a"]),  # text sorts as text
    ([3, 1, 2, 1], None, [1, 2, 3]),
    ([1.5, 0.5, 1.5, 0.5], None, [0.5, 1.5]),
    ([True, False, True, True], None, [False, True]),
    (["x", 1, "y", 1], object, [1, "x", "y"]),  # mixed: grouped by type, then sorted
])
def test_as_r_factor_sorts_levels_and_codes_rows(values, dtype, levels):
    from evalmix.model.functions import as_r_factor

    s = pd.Series(values, dtype=dtype)
    cat = as_r_factor(s)
    assert list(cat.categories) == levels
    assert [levels[c] for c in cat.codes] == values
    with pytest.raises(ValueError, match="null"):
        as_r_factor(pd.Series(values[:2] + [None], dtype=dtype))


def test_model_columns_read_the_data_first():
    # R's lookup order: a column named like a function is the column (issue: offset(log(I/N)))
    d = pd.DataFrame({"y": [0, 1, 1, 0], "I": [1, 2, 3, 4], "N": [4, 4, 4, 4], "log": [1, 2, 3, 4],
                      "g": list("aabb")})
    assert model_columns(parse_formula("y ~ log + offset(log(I/N)) + (1|g)"), d) == ["y", "log", "I", "N", "g"]
    with pytest.raises(FormulaError, match=r"\['z'\] absent"):
        model_columns(parse_formula("y ~ z + (1|g)"), d)


def test_fixed_on_patterns_equals_the_design_on_the_rows():
    rng = np.random.default_rng(1)
    rows = pd.DataFrame({"m": rng.choice(list("abc"), 200), "x": rng.choice([0.5, 1.5], 200),
                         "y": rng.normal(size=200)})
    parsed = parse_formula("y ~ m * x + (1|g)")
    fd, X = fixed_on_patterns(parsed, rows)
    fd_rows, X_rows = build_fixed(parsed.fixed, rows)
    np.testing.assert_allclose(X, X_rows, rtol=0, atol=1e-12)
    assert fd.columns == fd_rows.columns
    assert fd.covariates == pytest.approx(fd_rows.covariates, rel=1e-12)
    pd.testing.assert_frame_equal(fd.weights_data.astype(str), fd_rows.weights_data.astype(str))


def test_leaderboard_formula_uses_the_recorded_roles():
    from evalmix.cli.leaderboard import _glmm_formula  # noqa: PLC2701 (the CLI's own builder)
    from evalmix.data.runs import read_runs

    raw = pd.DataFrame({"q": [1, 1, 2, 2] * 2, "sys": ["a", "b"] * 4, "rep": [1] * 4 + [2] * 4,
                        "ok": [1, 0, 1, 1, 0, 0, 1, 0]})
    runs = read_runs(raw, item="q", model="sys", run="rep", outcome="ok")
    assert _glmm_formula(runs, []).text == "ok ~ sys + (1 | q) + (1 | q:rep)"
    plain = raw.rename(columns={"q": "item", "sys": "model", "rep": "run", "ok": "correct"})
    assert _glmm_formula(plain, ["lang"]).text == \
        "correct ~ model + model:lang + lang + (1 | item) + (1 | item:run)"
