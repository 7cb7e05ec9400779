"""lme4 formula parsing and design construction."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalmix.core.errors import DataError, FormulaError
from evalmix.model import build_fixed, build_random_terms, parse_formula


def frame() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    n = 60
    return pd.DataFrame({"model": np.tile(["b", "a", "c"], 20), "item": np.repeat(np.arange(12), 5),
                         "run": np.tile(np.arange(1, 6), 12), "x": rng.normal(size=n),
                         "k": rng.integers(0, 4, n), "n": np.full(n, 4), "correct": rng.integers(0, 2, n)})


def test_response_forms():
    p = parse_formula("cbind(k, n - k) ~ model + (1|item)")
    assert (p.successes, p.trials, p.failures) == ("k", "n", None)
    p = parse_formula("cbind(k, fails) ~ model + (1|item)")
    assert (p.successes, p.trials, p.failures) == ("k", None, "fails")
    p = parse_formula("correct ~ 1 + (1|item)")
    assert (p.successes, p.trials, p.fixed) == ("correct", None, "1")


def test_random_term_expansions():
    p = parse_formula("y ~ model + (1|item/run) + (1 + x||g) + (x|h) + (1|a:b)")
    got = [(r.expr, r.group_label) for r in p.random]
    assert got == [("1", "item"), ("1", "run:item"), ("1", "g"), ("0 + x", "g"), ("x", "h"),
                   ("1", "a:b")]
    assert p.fixed == "model"


@pytest.mark.parametrize("bad", ["y ~ model + (1|item", "y model", "cbind(k) ~ (1|g)",
                                 "cbind(k, n - j) ~ (1|g)", "y ~ (1|)"])
def test_malformed_formulas_raise(bad):
    with pytest.raises(FormulaError):
        parse_formula(bad)


def test_fixed_design_r_coding_and_new_data():
    d = frame()
    fd, X = build_fixed("model * x", d)
    assert fd.factors == {"model": ["a", "b", "c"]}
    assert fd.terms == ["model", "x", "model:x"]
    assert fd.column_terms == ["(Intercept)", "model", "model", "x", "model:x", "model:x"]
    assert fd.covariates["x"] == pytest.approx(d["x"].mean())
    np.testing.assert_array_equal(fd.model_matrix(d.head(4)), X[:4])
    with pytest.raises(FormulaError, match="'model'.*'zzz'"):
        fd.model_matrix(pd.DataFrame({"model": ["zzz"], "x": [0.0]}))


def test_categorical_keeps_its_level_order():
    d = frame()
    d["model"] = pd.Categorical(d["model"], categories=["c", "b", "a"])
    fd, _ = build_fixed("model", d)
    assert fd.factors["model"] == ["c", "b", "a"]
    assert fd.columns == ["(Intercept)", "modelb", "modela"]


def test_random_terms_sorted_like_lme4():
    d = frame()
    terms = build_random_terms(parse_formula("y ~ (1|run) + (1|item) + (1|item:model)").random, d)
    assert [t.group for t in terms] == ["item:model", "item", "run"]
    assert terms[0].levels[:4] == ["0:a", "0:b", "0:c", "1:a"]
    slope = build_random_terms(parse_formula("y ~ (1 + x|item)").random, d)[0]
    assert slope.cnames == ["(Intercept)", "x"]
    assert slope.theta_names == ["item.(Intercept)", "item.x.(Intercept)", "item.x"]


def test_absent_columns_and_one_level_factor_are_named():
    d = frame()
    with pytest.raises(FormulaError, match="'nope'"):
        build_random_terms(parse_formula("y ~ (1|nope)").random, d)
    with pytest.raises(FormulaError, match="nope"):
        build_fixed("model + nope", d)
    d["one"] = "only"
    with pytest.raises(DataError, match="'one'.*one level"):
        build_random_terms(parse_formula("y ~ (1|one)").random, d)


def test_missing_grouping_column_is_named_by_both_readers_of_random_terms():
    from evalmix.model import random_columns

    specs = parse_formula("y ~ x + (1|item) + (x|judge)").random
    d = pd.DataFrame({"y": [0, 1], "x": [0.5, 1.5], "item": ["a", "b"]})
    for read in (random_columns, build_random_terms):
        with pytest.raises(FormulaError, match=r"grouping factor 'judge' of random term \(x \| judge\) "
                                               "is not a column of the data"):
            read(specs, d)

