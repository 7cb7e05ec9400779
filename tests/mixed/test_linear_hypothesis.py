"""Wald tests of hypotheses written over coefficient names: ``evalmix.linear_hypothesis`` and every
fit's ``wald_test``, against ``car::linearHypothesis`` on a glmer and an lmer fit.

Reference: tests/reference/linear_hypothesis_reference.R -> linear_hypothesis_reference.json.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import ArgumentError
from evalmix.mixed.fitted import LinearHypothesis, hypothesis_matrix, linear_hypothesis

REF = Path(__file__).parents[1] / "reference"
R = json.loads((REF / "linear_hypothesis_reference.json").read_text())

# the hypotheses as evalmix writes them; car's text for the same rows is in the JSON (car refuses
# a chain "a = b = c", which the R script writes as the pair c("a = b", "b = c"))
GLMER_TEXT = {
    "pair": "modelm2 = modelm3",
    "joint": ["modelm2 = 0", "modelm3 = 0"],
    "shifted": "modelm2 - modelm3 = 0.5",
    "weighted": "2*modelm2 + modelm3 = 1",
    "interaction": "modelm2:langES = modelm3:langES",
    "chain": "(Intercept) = modelm2 = modelm3",
}
LMER_TEXT = {
    "pair": "`modeljudge-B` = `modeljudge-C`",
    "chain": "modeljudge-B = modeljudge-C = modeljudge-D",
    "shifted": "modeljudge-B - modeljudge-D = 0.5",
}


def _r_fit(ref: dict) -> SimpleNamespace:
    """A fit holding R's own estimates: the algebra is checked on the same numbers car used."""
    names = ref["coef_names"]
    return SimpleNamespace(fixef=pd.Series(ref["beta"], index=names),
                           vcov=pd.DataFrame(np.array(ref["vcov"]), index=names, columns=names))


@pytest.fixture(scope="module")
def fits():
    g = pd.read_csv(REF / "inference_glmer_sim.csv")
    j = pd.read_csv(REF / "lmer_judges.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {"glmer": evalmix.glmer("correct ~ model * lang + (1 | item)", g),
                "lmer": evalmix.lmer("rating ~ model + (1 | item)", j)}


CASES = [("glmer", k, v) for k, v in GLMER_TEXT.items()] + [("lmer", k, v) for k, v in LMER_TEXT.items()]


@pytest.mark.parametrize(("engine", "case", "text"), CASES)
def test_matrix_and_rhs_match_car(engine, case, text):
    ref = R[engine]
    car = ref["tests"][case]
    L, rhs, _ = hypothesis_matrix(ref["coef_names"], text)
    np.testing.assert_array_equal(L, np.array(car["L"], dtype=float).reshape(L.shape))
    np.testing.assert_array_equal(rhs, np.atleast_1d(car["rhs"]))


@pytest.mark.parametrize(("engine", "case", "text"), CASES)
def test_chisq_on_r_estimates_matches_car(engine, case, text):
    ref = R[engine]
    car = ref["tests"][case]
    res = linear_hypothesis(_r_fit(ref), text)
    assert res.df == car["df"]
    assert res.statistic == pytest.approx(car["chisq"], rel=1e-9)
    assert res.p_value == pytest.approx(car["p"], rel=1e-7)


@pytest.mark.parametrize(("engine", "case", "text"), CASES)
def test_wald_test_on_evalmix_fits_matches_car(fits, engine, case, text):
    # evalmix's own fit: on this glmer its estimates sit within 5e-4 of lme4's (the Laplace
    # optimisers stop at slightly different points; SEs within 3e-4 relative), which moves a
    # chi-square of 0.73 by 0.6% and one of 3e-4 by 5e-5: the glmer tests agree to 1e-2
    # relative or 1e-4 absolute; the lmer fit (a profiled REML criterion) to 1e-5. The algebra
    # itself is exact on R's estimates (test_chisq_on_r_estimates_matches_car).
    car = R[engine]["tests"][case]
    res = fits[engine].wald_test(text)
    assert isinstance(res, LinearHypothesis)
    assert res.df == car["df"]
    rel, tol = (1e-2, 1e-4) if engine == "glmer" else (1e-5, 1e-8)
    assert res.statistic == pytest.approx(car["chisq"], rel=rel, abs=tol)
    assert res.p_value == pytest.approx(car["p"], rel=rel, abs=tol)
    # the same test through the public function and with the hypothesis matrix itself
    same = evalmix.linear_hypothesis(fits[engine], text)
    assert same.statistic == pytest.approx(res.statistic, rel=1e-12)
    by_matrix = linear_hypothesis(fits[engine], res.hypothesis_matrix, rhs=res.rhs)
    assert by_matrix.statistic == pytest.approx(res.statistic, rel=1e-12)


def test_result_table_and_hypothesis_matrix(fits):
    res = fits["glmer"].wald_test("(Intercept) = modelm2 = modelm3")
    assert res.to_frame().columns.tolist() == ["statistic", "df", "p_value"]
    assert res.hypotheses == ("(Intercept) - modelm2 = 0", "modelm2 - modelm3 = 0")
    H = res.hypothesis_matrix
    assert H.columns.tolist() == list(fits["glmer"].fixef.index)
    assert H.index.tolist() == list(res.hypotheses)
    beta = fits["glmer"].fixef.to_numpy()
    np.testing.assert_allclose(res.estimate, H.to_numpy() @ beta, rtol=1e-12)
    rows = res.rows()
    assert rows.columns.tolist() == ["term", "estimate", "rhs", "se"]
    text = repr(res)
    assert "hypothesis: modelm2 - modelm3 = 0" in text and "p_value" in text
    assert set(res.summary().tables) == {"Test", "Hypotheses"}


def test_lmer_f_test_is_lmertest_contest(fits):
    fit = fits["lmer"]
    res = fit.wald_test("modeljudge-B = modeljudge-C = modeljudge-D", test="F")
    # against the df method's own F test (lmerTest's contest), not through linear_hypothesis
    F, _, den, p = fit.df_method().f_test(res.hypothesis_matrix.to_numpy(), fit.fixef.to_numpy())
    assert res.to_frame().columns.tolist() == ["statistic", "df1", "df2", "p_value"]
    assert res.statistic == pytest.approx(F, rel=1e-10)
    assert res.df_denominator == pytest.approx(den, rel=1e-10)
    assert res.p_value == pytest.approx(p, rel=1e-10)
    assert fit.contest(res.hypothesis_matrix.to_numpy()).statistic == pytest.approx(F, rel=1e-10)
    # a right-hand side moves the estimate: F of (L beta - r) equals contest on the shifted beta,
    # and with one row F is the chi-square (df 1) when the df go to infinity
    one = fit.wald_test("modeljudge-B - modeljudge-D = 0.5", test="F")
    chisq = fit.wald_test("modeljudge-B - modeljudge-D = 0.5")
    assert one.statistic == pytest.approx(chisq.statistic, rel=1e-8)  # Satterthwaite keeps vcov
    kr = fit.wald_test("modeljudge-B = modeljudge-C = modeljudge-D", test="F", ddf="Kenward-Roger")
    F, _, den, _ = fit.df_method("Kenward-Roger").f_test(kr.hypothesis_matrix.to_numpy(), fit.fixef.to_numpy())
    assert kr.ddf == "Kenward-Roger" and "Kenward-Roger" in repr(kr)
    assert kr.statistic == pytest.approx(F, rel=1e-10)
    assert kr.df_denominator == pytest.approx(den, rel=1e-10)
    with pytest.raises(ArgumentError, match="ddf applies to test='F'"):
        fit.wald_test("modeljudge-B = 0", ddf="Kenward-Roger")
    with pytest.raises(ArgumentError, match="finite denominator df"):
        evalmix.linear_hypothesis(SimpleNamespace(fixef=fit.fixef, vcov=fit.vcov), "modeljudge-B = 0",
                                  test="F")


@pytest.mark.parametrize(("text", "match"), [
    ("modelm4 = 0", r"names 'modelm4'.*did you mean 'modelm3' or 'modelm2'"),
    ("m2 = m3", r"names 'm2'.*did you mean.*'modelm2'"),
    ("modelm2 * modelm3 = 0", "a product of two coefficients"),
    ("modelm2 = modelm2", "involves no coefficient"),
    ("modelm2 = ", "a side of '=' is empty"),
    ("(modelm2 = 1", r"a '\(' is not closed"),
    ("modelm2 = 1/0", "divide only by a non-zero number"),
    ("`modelm2 = 0", "backtick at position 0 is not closed"),
    ("modelm2 $ 1", r"unexpected '\$'"),
])
def test_bad_hypotheses_name_the_fault(text, match):
    names = R["glmer"]["coef_names"]
    with pytest.raises(ArgumentError, match=match):
        hypothesis_matrix(names, text)


def test_matrix_forms_are_checked():
    names = ["(Intercept)", "b", "c"]
    L, rhs, labels = hypothesis_matrix(names, pd.DataFrame({"c": [1.0], "b": [-1.0]}), rhs=0.25)
    assert L.tolist() == [[0.0, -1.0, 1.0]] and rhs.tolist() == [0.25] and labels == ["-b + c = 0.25"]
    with pytest.raises(ArgumentError, match="one column per coefficient"):
        hypothesis_matrix(names, np.eye(2))
    with pytest.raises(ArgumentError, match="names 'd'"):
        hypothesis_matrix(names, pd.DataFrame({"d": [1.0]}))
    with pytest.raises(ArgumentError, match="rhs goes with a hypothesis matrix"):
        hypothesis_matrix(names, "b = c", rhs=1)


def test_plain_names_read_longest_first():
    # a name that is the prefix of another is read only when the text does not run on
    names = ["(Intercept)", "x", "x2", "x:z"]
    L, _, labels = hypothesis_matrix(names, "x2 - x = x:z")
    assert L.tolist() == [[0.0, -1.0, 1.0, -1.0]] and labels == ["-x + x2 - x:z = 0"]
    with pytest.raises(ArgumentError, match="names 'x3'"):
        hypothesis_matrix(names, "x3 = 0")


def test_separated_fit_has_no_wald_test_along_a_divergent_direction():
    d = pd.read_csv(REF / "separation_runs.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = evalmix.glmer("y_nonref ~ model + (1|item)", d)
    assert fit.separation is not None
    div = fit.wald_test("`modelmodel-B` = `modelmodel-C`")
    assert np.isnan(div.statistic) and np.isnan(div.p_value)
    assert np.isinf(div.estimate[0])
    finite = fit.wald_test("`modelmodel-C` = 0")
    assert np.isfinite(finite.statistic) and 0 < finite.p_value <= 1


def test_posterior_fit_is_tested_on_its_normal_approximation():
    names = ["(Intercept)", "modelB"]
    rng = np.random.default_rng(3)
    draws = pd.DataFrame(rng.normal([0.1, 0.6], [0.2, 0.3], size=(4000, 2)), columns=names)
    post = SimpleNamespace(fixef_draws=draws, fixef=draws.mean(), vcov=draws.cov())
    res = linear_hypothesis(post, "modelB = 0")
    expected = draws["modelB"].mean() ** 2 / draws["modelB"].var()
    assert res.statistic == pytest.approx(expected, rel=1e-12)
    assert res.posterior and "normal approximation" in repr(res)


def test_wald_z_table_matches_normal_theory():
    from scipy import stats

    from evalmix.mixed.fitted import wald_z_table

    est, se = np.array([0.8, -1.2, 0.0]), np.array([0.4, 0.3, 2.0])
    tab = wald_z_table(["a", "b", "c"], est, se, conf_level=0.9)
    assert tab.columns.tolist() == ["term", "estimate", "se", "statistic", "p_value", "conf_low", "conf_high"]
    np.testing.assert_allclose(tab["statistic"], [2.0, -4.0, 0.0], rtol=1e-15)
    np.testing.assert_allclose(tab["p_value"], [0.04550026389635842, 6.334248366623996e-05, 1.0], rtol=1e-12)
    q = stats.norm.ppf(0.95)  # 1.6448536...
    np.testing.assert_allclose(tab["conf_low"], est - q * se, rtol=1e-15)
    np.testing.assert_allclose(tab["conf_high"] - tab["conf_low"], 2 * 1.6448536269514722 * se, rtol=1e-12)
