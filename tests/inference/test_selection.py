"""evalmix.anova / evalmix.compare_models against car::Anova and lme4's anova()."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from evalmix.inference.selection import anova, bic_evidence, compare_models
from glm_standin import PosteriorStandIn, categorical, fit_from_reference, glm_fit

from conftest import REFERENCE

REF = json.loads((REFERENCE / "inference_reference.json").read_text())
GLM = REF["glm"]


@pytest.fixture(scope="module")
def sim() -> pd.DataFrame:
    return categorical(pd.read_csv(REFERENCE / "inference_sim.csv"), GLM["fit"]["levels"])


@pytest.fixture(scope="module")
def glmer_fits():
    data = pd.read_csv(REFERENCE / "inference_glmer_sim.csv")
    return {k: fit_from_reference(v, data) for k, v in REF["glmer_sim"]["fits"].items()}


def assert_anova(mine, ref):
    ref = pd.DataFrame(ref)
    tab = mine.to_frame()
    assert tab["term"].tolist() == ref["term"].tolist()
    assert tab["df"].tolist() == ref["df"].tolist()
    np.testing.assert_allclose(tab["statistic"], ref["chisq"], rtol=1e-5)
    np.testing.assert_allclose(tab["p_value"], ref["p"], atol=1e-8, rtol=1e-4)


@pytest.mark.parametrize("name,formula", [("anova3", "correct ~ model * lang + prompt + x"),
                                          ("anova3_small", "correct ~ model + lang")])
def test_type3_wald_matches_car_on_glm(sim, name, formula):
    assert_anova(anova(glm_fit(formula, sim), type=3), GLM[name])


@pytest.mark.parametrize("name", ["g2", "g3"])
def test_type3_wald_matches_car_on_glmer(glmer_fits, name):
    assert_anova(anova(glmer_fits[name]), REF["glmer_sim"][f"anova3_{name}"])


def test_information_criteria_match_r_on_glm(sim):
    fits = {k: glm_fit(GLM[k]["formula"], sim) for k in ("fit_small", "fit_mid", "fit")}
    res = compare_models(fits).to_frame().set_index("name")
    for k in fits:
        assert res.loc[k, "aic"] == pytest.approx(GLM[k]["aic"], abs=1e-6)
        assert res.loc[k, "bic"] == pytest.approx(GLM[k]["bic"], abs=1e-6)
        assert res.loc[k, "df"] == GLM[k]["df"]


@pytest.mark.parametrize("key,order", [("anova", ["g1", "g2", "g3"]),
                                       ("anova_reordered", ["g3", "g1", "g2"])])
def test_lrt_matches_lme4_anova(glmer_fits, key, order):
    """lme4 sorts by number of parameters and tests each model against the one before it."""
    res = compare_models({k: glmer_fits[k] for k in order})
    ref = pd.DataFrame(REF["glmer_sim"][key])
    lrt = res.lrt
    assert lrt["name"].tolist() == ref["name"].tolist()
    for col in ("npar", "aic", "bic", "loglik", "deviance", "statistic", "df_diff", "p_value"):
        rcol = {"statistic": "chisq", "p_value": "p"}.get(col, col)
        np.testing.assert_allclose(lrt[col].astype(float), ref[rcol].astype(float), rtol=1e-9,
                                   atol=1e-12, err_msg=col)
    assert lrt["nested"].tolist()[1:] == [True, True]


def test_table_sorted_by_bic_with_weights(glmer_fits):
    res = compare_models(list(glmer_fits.values()))
    tab = res.to_frame()
    assert (np.diff(tab["bic"]) >= 0).all()
    assert tab["delta_bic"].iloc[0] == 0 and tab["bic_weight"].sum() == pytest.approx(1)
    assert tab["aic_weight"].sum() == pytest.approx(1)
    d = tab["delta_bic"].to_numpy()
    np.testing.assert_allclose(tab["bic_weight"], np.exp(-d / 2) / np.exp(-d / 2).sum())
    # a list is named by the formulas
    assert tab["name"].iloc[0].startswith("correct ~ model + lang")
    assert "positive evidence for" in res.verdict() and "ΔBIC = 3.0" in res.verdict()
    json.dumps(res.to_dict())


def test_non_nested_pairs_are_flagged(sim):
    a = glm_fit("correct ~ model + prompt", sim)
    b = glm_fit("correct ~ model + lang + x", sim)
    lrt = compare_models({"a": a, "b": b}).lrt
    flag = lrt["nested"].iloc[1]
    assert flag is not None and not flag


@pytest.mark.parametrize("delta,label", [(0.5, "weak"), (2.0, "weak"), (3.0, "positive"),
                                         (9.05, "strong"), (10.5, "very strong"),
                                         (-7.0, "strong")])
def test_kass_raftery_bands(delta, label):
    assert bic_evidence(delta) == label


def test_errors(glmer_fits, sim):
    with pytest.raises(ValueError, match="same number of rows"):
        compare_models({"a": glmer_fits["g1"], "b": glm_fit("correct ~ model", sim)})
    with pytest.raises(ValueError, match="type-III"):
        anova(glmer_fits["g1"], type=2)
    post = PosteriorStandIn(pd.DataFrame([[0.0] * 3]), None, "f")
    with pytest.raises(TypeError):
        anova(post)
    with pytest.raises(TypeError, match="maximum-likelihood"):
        compare_models({"a": glmer_fits["g1"], "p": post})


def test_posterior_fits_are_compared_by_elpd():
    az = pytest.importorskip("arviz")
    arviz_1 = int(az.__version__.split(".")[0]) >= 1
    rng = np.random.default_rng(0)

    class Post:
        def __init__(self, mean):
            self.fixef_draws = pd.DataFrame(rng.normal(size=(400, 2)))
            self.nobs = 50
            groups = {"posterior": {"b": rng.normal(size=(2, 200))},
                      "log_likelihood": {"y": rng.normal(mean, 0.05, (2, 200, 50))}}
            # ArviZ 1 takes the groups as one dict; ArviZ 0.x as keyword arguments
            self.idata = az.from_dict(groups) if arviz_1 else az.from_dict(**groups)

    fits = {"good": Post(-0.70), "worse": Post(-0.75)}
    res = compare_models(fits)
    with warnings.catch_warnings():  # arviz's own pandas deprecation notes
        warnings.simplefilter("ignore")
        ref = az.compare({k: v.idata for k, v in fits.items()}, **({} if arviz_1 else {"ic": "loo"}))
    tab = res.to_frame()
    assert tab["name"].tolist() == list(ref.index) == ["good", "worse"]
    np.testing.assert_allclose(tab["elpd_loo"], ref["elpd" if arviz_1 else "elpd_loo"])  # ArviZ 1 names it elpd
    assert {"elpd_loo", "p_loo", "elpd_diff", "weight"} <= set(tab.columns)  # one vocabulary on both
    assert res.criterion == "loo" and res.verdict().startswith("good has the higher expected")


def _fake_fit(formula: str, terms: list[str], df: int, loglik: float):
    """What compare_models reads of a fit: criteria, the formula and the fixed terms."""
    from types import SimpleNamespace

    return SimpleNamespace(formula=formula, fixed_design=SimpleNamespace(terms=terms), df=df, nobs=100,
                           loglik=loglik, aic=-2 * loglik + 2 * df, bic=-2 * loglik + df * np.log(100))


@pytest.mark.parametrize("small,large,nested", [
    # a random term added is still nested (the old check wanted the same random part)
    (("correct ~ model + (1|item)", ["model"]),
     ("correct ~ model + language + (1|item) + (1|item:run)", ["model", "language"]), True),
    # interaction grouping factors in either order are one term
    (("correct ~ model + (1 | run:item)", ["model"]), ("correct ~ model + lang + (1|item:run)", ["model", "lang"]),
     True),
    # a fixed term of the smaller model missing from the larger one
    (("correct ~ prompt + (1|item)", ["prompt"]), ("correct ~ model + lang + (1|item)", ["model", "lang"]), False),
    # a random term of the smaller model missing from the larger one
    (("correct ~ model + (1|run)", ["model"]), ("correct ~ model + lang + (1|item)", ["model", "lang"]), False),
    # another response is never nested
    (("y ~ model + (1|item)", ["model"]), ("correct ~ model + lang + (1|item)", ["model", "lang"]), False),
])
def test_nested_reads_fixed_and_random_terms(small, large, nested):
    fits = {"small": _fake_fit(*small, df=3, loglik=-60.0), "large": _fake_fit(*large, df=5, loglik=-50.0)}
    lrt = compare_models(fits).lrt.set_index("name")
    assert lrt.loc["large", "lrt_vs"] == "small"
    assert lrt.loc["large", "nested"] is nested
    assert lrt.loc["large", "statistic"] == pytest.approx(20.0, abs=1e-12)
