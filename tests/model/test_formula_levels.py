"""Level orders stated in the formula (``factor(x, levels = ...)``, ``relevel``) and factor()
calls inside random terms; the lme4 parity of these fits is in tests/model/test_formula_sweep.py."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalmix
from evalmix.core.errors import DataError, DataWarning, FitWarning, FormulaError
from evalmix.model import LevelSpec, build_fixed, parse_formula, r_deparse, r_factor, translate_terms


def data(seed: int = 5, n_items: int = 40) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(n_items), 9)
    model = np.tile(np.repeat(["a", "b", "c"], 3), n_items)
    run = np.tile([1, 2, 3], 3 * n_items)
    eta = rng.normal(0, 1, n_items)[item] + np.select([model == "b", model == "c"], [0.5, -0.4], 0)
    y = (rng.random(item.size) < 1 / (1 + np.exp(-eta))).astype(int)
    return pd.DataFrame({"item": item, "model": model, "run": run, "y": y,
                         "site": rng.integers(1, 4, item.size)})


def quiet_fit(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return evalmix.glmer(*args, **kw)


@pytest.mark.parametrize("expr, name, spec", [
    ('factor(m, levels = c("b", "a"))', "m", LevelSpec(("b", "a"))),
    ("factor(m, c('b', 'a'))", "m", LevelSpec(("b", "a"))),
    ("factor(m, levels = ['b', 'a'])", "m", LevelSpec(("b", "a"))),
    ("factor(s, levels = 3:1)", "s", LevelSpec((3, 2, 1))),
    ("factor(s, levels = c(2, 1.5))", "s", LevelSpec((2, 1.5))),
    ('relevel(m, ref = "b")', "m", LevelSpec(None, "b")),
    ("relevel(factor(s), 2)", "s", LevelSpec(None, 2)),
    ('relevel(factor(m, levels = c("c", "b", "a")), ref = "a")', "m", LevelSpec(("c", "b", "a"), "a")),
])
def test_level_specs_are_read(expr, name, spec):
    text, coded, levels = translate_terms(f"{expr} + x")
    assert text == f"{name} + x" and coded == {name: None} and levels == {name: spec}


def test_ordered_with_levels_gets_contr_poly():
    text, coded, levels = translate_terms("ordered(lv, levels = c('lo', 'mid', 'hi'))")
    assert coded == {"lv": "poly"} and levels["lv"].levels == ("lo", "mid", "hi")
    assert translate_terms("factor(lv, levels = c('b', 'a'), ordered = TRUE)")[1] == {"lv": "poly"}


@pytest.mark.parametrize("expr, match", [
    ("factor(m, labels = c('x', 'y'))", "labels"),
    ("relevel(m)", "ref ="),
    ("relevel(ordered(m), ref = 'a')", "unordered"),
    ("factor(m + 1)", "column name"),
    ("factor(m, levels = c('a', 'a'))", "repeated"),
    ("factor(m, levels = c('a', 'b')) + factor(m)", "two different level orders"),
    ("factor(m, levels = c(a, b))", "cannot read 'a'"),
])
def test_unsupported_factor_calls_are_named(expr, match):
    with pytest.raises(FormulaError, match=match):
        translate_terms(expr)


def test_r_factor_matches_values_as_r_does():
    s = pd.Series([1, 2, 3, 2], name="site")
    assert list(r_factor(s, LevelSpec(("3", "1", "2"))).categories) == [3, 1, 2]  # R compares text
    assert list(r_factor(pd.Series([1.0, 2.0]), LevelSpec((2, 1))).categories) == [2.0, 1.0]
    assert list(r_factor(pd.Series([True, False]), LevelSpec((True, False))).categories) == [True, False]
    with pytest.raises(DataError, match=r"value\(s\) \[3\]"):
        r_factor(s, LevelSpec((1, 2)))
    with pytest.warns(DataWarning, match=r"level\(s\) \[4\]"):
        assert list(r_factor(s, LevelSpec((4, 3, 2, 1))).categories) == [3, 2, 1]
    with pytest.raises(FormulaError, match="reference level 5"):
        r_factor(s, LevelSpec(ref=5))


def test_level_order_sets_reference_and_coding_but_not_the_fit():
    d = data()
    base = quiet_fit("y ~ model + (1|item)", d)
    for f, r in (("y ~ relevel(model, ref = 'c') + (1|item)", 'relevel(model, ref = "c")'),
                 ("y ~ factor(model, levels = c('c', 'a', 'b')) + (1|item)",
                  'factor(model, levels = c("c", "a", "b"))')):
        fit = quiet_fit(f, d)
        # R names the coefficients by the call that codes the factor
        assert list(fit.fixef.index) == ["(Intercept)", r + "a", r + "b"]
        assert fit.loglik == pytest.approx(base.loglik, abs=1e-6)
        b = base.fixef
        np.testing.assert_allclose(fit.fixef.to_numpy(),
                                   [b.iloc[0] + b.iloc[2], -b.iloc[2], b.iloc[1] - b.iloc[2]],
                                   atol=2e-4)
        e = evalmix.emmeans(fit, "model").to_frame()
        assert list(e["model"]) == ["c", "a", "b"]
        e0 = evalmix.emmeans(base, "model").to_frame().set_index("model")
        np.testing.assert_allclose(e["estimate"], e0.loc[["c", "a", "b"], "estimate"], atol=2e-4)


def test_level_order_of_an_integer_column_and_new_data():
    d = data()
    fd, X = build_fixed("factor(site, levels = c(3, 1, 2))", d)
    assert fd.factors["site"] == [3, 1, 2] and fd.columns == ["(Intercept)", "factor(site, levels = c(3, 1, 2))1", "factor(site, levels = c(3, 1, 2))2"]
    np.testing.assert_array_equal(X[:, 1], (d["site"] == 1).to_numpy())
    assert fd.model_matrix(pd.DataFrame({"site": [3, 2]})).tolist() == [[1, 0, 0], [1, 0, 1]]


def test_factor_calls_on_grouping_factors_change_nothing():
    d = data()
    p = parse_formula("y ~ 1 + (1|factor(item)) + (1|item:as.factor(run)) + (1|item/factor(run))")
    assert [r.group for r in p.random] == [("item",), ("item", "run"), ("item",), ("run", "item")]
    a = quiet_fit("y ~ model + (1|item) + (1|item:run)", d)
    b = quiet_fit("y ~ model + (1|factor(item)) + (1|item:factor(run))", d)
    c = quiet_fit("y ~ model + (1|item/factor(run))", d)
    assert a.loglik == pytest.approx(b.loglik, abs=1e-8) == pytest.approx(c.loglik, abs=1e-8)
    with pytest.raises(FormulaError, match=r"'log\(run\)' in .* is not a column name"):
        parse_formula("y ~ 1 + (1|log(run))")


def test_factor_slopes_in_random_terms():
    d = data()
    d["runc"] = pd.Categorical(d["run"])
    a = quiet_fit("y ~ model + (1|item) + (0 + factor(run)|model)", d)
    b = quiet_fit("y ~ model + (1|item) + (0 + runc|model)", d)
    assert a.loglik == pytest.approx(b.loglik, abs=1e-6)
    vc = a.varcorr
    assert list(vc.loc[vc["var2"] == "", "var1"])[1:] == ["factor(run)1", "factor(run)2", "factor(run)3"]
    r = quiet_fit("y ~ model + (1|item) + (0 + relevel(factor(run), ref = 3)|model)", d)
    vc = r.varcorr
    assert list(vc.loc[vc["var2"] == "", "var1"])[1:] == ["relevel(factor(run), ref = 3)3", "relevel(factor(run), ref = 3)1",
                                                               "relevel(factor(run), ref = 3)2"]
    assert r.loglik == pytest.approx(a.loglik, abs=1e-4)


def test_unknown_functions_and_operators_read_plainly():
    d = data()
    with pytest.raises(FormulaError, match=r"the function lowess\(\) is not allowed in a formula") as exc:
        quiet_fit("y ~ lowess(site) + (1|item)", d)
    with pytest.raises(FormulaError, match="Unknown operator") as exc2:
        quiet_fit("y ~ model + (site == 2) + (1|item)", d)
    for e in (exc, exc2):
        assert "\x1b[" not in str(e.value) and "\u29da" not in str(e.value)


def test_minus_one_after_a_random_term():
    p = parse_formula("y ~ model + (1|item) - 1")
    assert p.fixed == "model - 1" and [r.group for r in p.random] == [("item",)]
    with pytest.raises(FormulaError, match="added with '\\+'"):
        parse_formula("y ~ model + (1|item) * x")


def test_ratio_response_and_relevel_of_an_ordered_column_are_named():
    d = data()
    with pytest.raises(FormulaError, match=r"write cbind\(k, n - k\)"):
        parse_formula("k/n ~ model + (1|item)")
    d["lv"] = pd.Categorical(d["model"], categories=["c", "b", "a"], ordered=True)
    with pytest.raises(FormulaError, match="unordered factors only"):
        build_fixed("relevel(lv, ref = 'a')", d)


_FIT0: dict = {}


@settings(max_examples=6, deadline=None)
@given(order=st.permutations(["a", "b", "c"]), ref=st.sampled_from(["a", "b", "c", None]))
def test_any_level_order_fits_the_same_model(order, ref):
    """Invariant: a stated level order changes the coding, not the likelihood or the means."""
    d = data()
    if "base" not in _FIT0:
        _FIT0["base"] = quiet_fit("y ~ model + (1|item)", d)
    base = _FIT0["base"]
    lv = "c(" + ", ".join(f"'{v}'" for v in order) + ")"
    term = f"factor(model, levels = {lv})"
    if ref is not None:
        term = f"relevel({term}, ref = '{ref}')"
    fit = quiet_fit(f"y ~ {term} + (1|item)", d)
    first = ref if ref is not None else order[0]
    assert fit.fixef.index[1:].tolist() == [r_deparse(term) + v for v in order if v != first]
    assert fit.loglik == pytest.approx(base.loglik, abs=1e-6)
    e = evalmix.emmeans(fit, "model").to_frame().set_index("model")
    e0 = evalmix.emmeans(base, "model").to_frame().set_index("model")
    np.testing.assert_allclose(e.loc[["a", "b", "c"], "estimate"], e0["estimate"], atol=2e-4)


def test_type_conversions_are_named():
    with pytest.raises(FormulaError, match=r"as.numeric\(\) is not understood"):
        translate_terms("model + as.numeric(level == 'high')")


def test_a_factor_compared_with_a_level_is_a_zero_one_column():
    d = data()
    fd, X = build_fixed("I(model == 'b') + I(2 != factor(site))", d)
    np.testing.assert_array_equal(X[:, 1], (d["model"] == "b").to_numpy())
    np.testing.assert_array_equal(X[:, 2], (d["site"] != 2).to_numpy())
    assert fd.model_matrix(pd.DataFrame({"model": ["a", "b"], "site": [2, 3]})).tolist() == \
        [[1, 0, 0], [1, 1, 1]]
    with pytest.raises(FormulaError, match="compared with a level"):
        build_fixed("I(model > 'a')", d)
