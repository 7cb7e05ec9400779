"""R formula features of glmer beyond the lme4 parity cases: errors that name the term, the
reference grid of transformed covariates, offsets, weights, responses, links and nAGQ."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalmix
from evalmix.core.errors import DataError, DataWarning, FitWarning, FormulaError
from evalmix.model import build_fixed, fixed_variables, parse_formula, translate_fixed


def data(seed: int = 3, n_items: int = 40, per: int = 6) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(n_items), per)
    n = item.size
    age = rng.uniform(2, 7, n)
    site = rng.integers(1, 4, n)
    grp = rng.choice(["a", "b"], n)
    eta = rng.normal(0, 0.8, n_items)[item] + 0.5 * (age - 4.5) - 0.2 * (age - 4.5) ** 2 \
        + 0.4 * (grp == "b")
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    return pd.DataFrame({"item": item, "age": age, "site": site, "grp": grp, "y": y,
                         "expo": rng.uniform(0.5, 2, n)})


def quiet_fit(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return evalmix.glmer(*args, **kw)


# --- translation --------------------------------------------------------------------------------

def test_translation_of_r_syntax():
    assert translate_fixed("I(age^2) + as.factor(site):grp") == ("I(age**2) + site:grp",
                                                                 {"site": None})
    assert translate_fixed("C(g, sum) + ordered(lv)")[1] == {"g": "sum", "lv": "poly"}
    assert translate_fixed("poly(x, 2, raw = TRUE)")[0] == "poly(x, 2, raw = True)"
    p = parse_formula("y ~ x + offset(log(n)) - 1 + (1|g)")
    assert p.offsets == ("log(n)",) and p.fixed == "x - 1"
    assert fixed_variables("I(a^2) + log(b) + sqrt(c) + C(d, contr.sum)") == ["a", "b", "c", "d"]


def test_integer_column_is_numeric_unless_factor():
    d = data()
    fd, X = build_fixed("site", d)
    assert fd.columns == ["(Intercept)", "site"] and "site" in fd.covariates
    fd, X = build_fixed("factor(site)", d)
    assert fd.columns == ["(Intercept)", "factor(site)2", "factor(site)3"] and fd.factors["site"] == [1, 2, 3]


def test_ordered_categorical_gets_contr_poly_and_contrasts_override():
    d = data()
    d["lv"] = pd.Categorical(np.where(d.age < 3.5, "lo", np.where(d.age < 5.5, "mid", "hi")),
                             categories=["lo", "mid", "hi"], ordered=True)
    fd, X = build_fixed("lv", d)
    assert fd.columns == ["(Intercept)", "lv.L", "lv.Q"] and fd.contrasts == {"lv": "poly"}
    row = fd.model_matrix(pd.DataFrame({"lv": ["lo"]}))[0]
    np.testing.assert_allclose(row, [1, -np.sqrt(0.5), np.sqrt(1 / 6)], rtol=1e-12)
    fd, _ = build_fixed("lv", d, contrasts={"lv": "contr.treatment"})
    assert fd.columns == ["(Intercept)", "lvmid", "lvhi"]
    fd, _ = build_fixed("lv", d, contrasts={"lv": "contr.helmert"})
    np.testing.assert_array_equal(fd.model_matrix(pd.DataFrame({"lv": ["lo", "mid", "hi"]}))[:, 1:],
                                  [[-1, -1], [1, -1], [0, 2]])  # R's contr.helmert(3)


@pytest.mark.parametrize("fixed, kw, match", [
    ("site", {"contrasts": {"site": "contr.sum"}}, "numeric column 'site'"),
    ("grp", {"contrasts": {"grp": "contr.foo"}}, "unknown contrasts 'contr.foo'"),
    ("grp", {"contrasts": {"nope": "contr.sum"}}, "contrasts names 'nope'"),
    ("grp", {"contrasts": {"grp": np.ones((3, 1))}}, "contrasts matrix for 'grp' is 3 x 1"),
    ("factor(site) + I(site^2)", {}, "term 'I\\(site \\*\\* 2\\)' uses it as a number"),
    ("factor(site, labels = c('x', 'y', 'z'))", {}, "argument \"labels = c\\('x'"),
    ("site %in% grp", {}, "%in%"),
    ("I(foo(age))", {}, "the function foo\\(\\) is not allowed in a formula"),
    ("I(agee^2)", {}, "\\['agee'\\] absent from the data"),
])
def test_unsupported_or_wrong_terms_are_named(fixed, kw, match):
    with pytest.raises(FormulaError, match=match):
        build_fixed(fixed, data(), **kw)


# --- reference grids follow the transformations ---------------------------------------------------

def test_grid_evaluates_transformations_at_the_mean():
    d = data()
    fit = quiet_fit("y ~ grp + I(age^2) + scale(age) + (1|item)", d)
    grid, X = evalmix.reference_grid(fit)
    m = d.age.mean()
    assert list(grid.columns) == ["grp", "age"] and np.allclose(grid["age"], m)
    np.testing.assert_allclose(X[:, 2], m**2, rtol=1e-12)
    np.testing.assert_allclose(X[:, 3], 0.0, atol=1e-12)  # scale(mean) = 0
    # a precomputed square would be held at mean(age^2): a different, wrong grid
    assert abs(m**2 - (d.age**2).mean()) > 0.1


def test_poly_grid_uses_the_stored_coefficients():
    d = data()
    fit = quiet_fit("y ~ poly(age, 2) + (1|item)", d)
    X = fit.fixed_design.model_matrix(pd.DataFrame({"age": d.age.iloc[:5]}))
    Xfit = fit.fixed_design.model_matrix(d)[:5]
    np.testing.assert_allclose(X, Xfit, rtol=1e-12)  # five rows alone, same basis as the fit


# --- offsets, weights, responses ------------------------------------------------------------------

@pytest.fixture(scope="module")
def no_offset():
    """The fit without an offset, which reads no column of a constant (read only)."""
    return quiet_fit("y ~ grp + (1|item)", data())


@settings(max_examples=6, deadline=None)
@given(c=st.floats(-2.0, 2.0))
def test_constant_offset_moves_only_the_intercept(no_offset, c):
    d = data().assign(c=c)
    base = no_offset
    off = quiet_fit("y ~ grp + offset(c) + (1|item)", d)
    arg = quiet_fit("y ~ grp + (1|item)", d, offset="c")
    for f in (off, arg):
        assert abs(f.loglik - base.loglik) < 1e-6
        np.testing.assert_allclose(f.fixef.to_numpy(), base.fixef.to_numpy() - [c, 0], atol=2e-5)
    np.testing.assert_allclose(off.predict(d.head(), re=False), base.predict(d.head(), re=False),
                               atol=2e-5)


def test_integer_weights_equal_repeated_rows():
    d = data()
    w = np.random.default_rng(1).integers(1, 4, len(d))
    fw = quiet_fit("y ~ grp + age + (1|item)", d, weights=w)
    rep = d.loc[d.index.repeat(w)].reset_index(drop=True)
    fr = quiet_fit("y ~ grp + age + (1|item)", rep)
    assert abs(fw.loglik - fr.loglik) < 1e-6
    np.testing.assert_allclose(fw.fixef, fr.fixef, atol=1e-5)


def test_factor_and_boolean_responses_follow_r():
    d = data()
    ref = quiet_fit("y ~ grp + (1|item)", d)
    for resp in (np.where(d.y == 1, "Y", "N"), d.y == 1,
                 pd.Categorical(np.where(d.y == 1, "pass", "fail"), categories=["fail", "pass"])):
        f = quiet_fit("r ~ grp + (1|item)", d.assign(r=resp))
        assert abs(f.loglik - ref.loglik) < 1e-8
    with pytest.raises(DataError, match="has 3 values"):
        evalmix.glmer("r ~ grp + (1|item)", d.assign(r=np.resize(["a", "b", "c"], len(d))))


def test_bad_weights_and_proportions():
    d = data()
    with pytest.raises(DataError, match="weights must be >= 0"):
        evalmix.glmer("y ~ grp + (1|item)", d, weights=-np.ones(len(d)))
    with pytest.raises(DataError, match="weights has 3 values"):
        evalmix.glmer("y ~ grp + (1|item)", d, weights=[1, 2, 3])
    with pytest.raises(FormulaError, match="weights='nope'"):
        evalmix.glmer("y ~ grp + (1|item)", d, weights="nope")
    with pytest.raises(DataError, match="weights= the trials"):
        evalmix.glmer("p ~ grp + (1|item)", d.assign(p=d.y * 0.5))
    with pytest.warns(DataWarning, match="non-integer number of successes"):
        quiet_fit("p ~ grp + (1|item)", d.assign(p=0.3), weights=np.full(len(d), 2.0))


# --- links and quadrature ----------------------------------------------------------------------

def test_links_and_family_spelling():
    d = data()
    a = quiet_fit("y ~ grp + (1|item)", d, link="probit")
    b = quiet_fit("y ~ grp + (1|item)", d, family="binomial(link = 'probit')")
    assert a.link == b.link == "probit" and abs(a.loglik - b.loglik) < 1e-9
    assert a.coef_table()["odds_ratio"].isna().all()  # exp(beta) is no odds ratio here
    p = a.predict(d.head(), type="response")
    from scipy.stats import norm
    np.testing.assert_allclose(p, norm.cdf(a.predict(d.head())), rtol=1e-12)
    with pytest.raises(ValueError, match="link must be one of"):
        evalmix.glmer("y ~ grp + (1|item)", d, link="log")
    with pytest.raises(ValueError, match="family must be 'binomial'"):
        evalmix.glmer("y ~ grp + (1|item)", d, family="poisson")


def test_nagq_needs_one_scalar_term():
    d = data().assign(run=lambda x: np.tile(np.arange(3), len(x) // 3))
    with pytest.raises(FormulaError, match=r"nAGQ = 5 needs a single scalar.*\(1 \| item:run\)"):
        evalmix.glmer("y ~ grp + (1|item) + (1|item:run)", d, nAGQ=5)
    with pytest.raises(FormulaError, match=r"\(1 \+ age \| item\)"):
        evalmix.glmer("y ~ grp + (1 + age|item)", d, nAGQ=3)
    with pytest.raises(ValueError, match="nAGQ must be an integer"):
        evalmix.glmer("y ~ grp + (1|item)", d, nAGQ=-1)


def test_agq_converges_to_the_integral():
    # more quadrature points change the deviance less and less (lme4's nAGQ = 25 is near exact)
    d = data(seed=5, n_items=30, per=4)
    ll = [quiet_fit("y ~ grp + (1|item)", d, nAGQ=q).loglik for q in (1, 3, 9, 25)]
    steps = np.abs(np.diff(ll))
    assert steps[-1] < 1e-4 and steps[-1] < steps[0]
    one = quiet_fit("y ~ grp + (1|item)", d, nAGQ=1)
    assert one.nagq == 1 and "nAGQ = 25" in quiet_fit("y ~ grp + (1|item)", d, nAGQ=25).summary().title


def test_random_terms_read_r_syntax_too():
    d = data()
    a = quiet_fit("y ~ grp + (0 + I(age^2)|item)", d)
    b = quiet_fit("y ~ grp + (0 + a2|item)", d.assign(a2=d.age**2))
    assert abs(a.loglik - b.loglik) < 1e-8
    np.testing.assert_allclose(a.predict(d.head()), b.predict(d.assign(a2=d.age**2).head()),
                               rtol=1e-8)
    # factor() in a random term codes the integer column as a factor, also on new data
    a = quiet_fit("y ~ grp + (1|item) + (0 + factor(site)|grp)", d)
    b = quiet_fit("y ~ grp + (1|item) + (0 + s|grp)", d.assign(s=pd.Categorical(d.site)))
    assert abs(a.loglik - b.loglik) < 1e-6
    np.testing.assert_allclose(a.predict(d.head()), b.predict(d.assign(s=pd.Categorical(d.site)).head()),
                               rtol=1e-5)
    with pytest.raises(FormulaError, match="'.' shorthand"):
        evalmix.glmer("y ~ . + (1|item)", d)
