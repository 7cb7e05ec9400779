"""judge_study on ordinal ratings (cumulative-link mixed models) and latent-scale contrasts of clmm
fits, against ordinal::clmm and emmeans.

The reference values come from tests/reference/clmm_judges_reference.R: ratings 1-5 of 3 models x
24 items x 2 runs, each response rated by 3 judges. Tolerances are the GLMM parity ones: logLik at
least R's - 1e-3, estimates 2e-3, SEs 1 %, random-effect SDs 2e-3; adjusted p-values 2 % relative
(they inherit the SEs' tolerance).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import DataError, FitWarning, SeparationError
from evalmix.ordinal import clmm_ref_grid, convergence_check

REF_DIR = Path(__file__).parents[1] / "reference"
REF = json.loads((REF_DIR / "clmm_judges_reference.json").read_text())
RATINGS = pd.read_csv(REF_DIR / "clmm_judges_ratings.csv")

# three clmm fits with 120 response intercepts take minutes of CPU (numerical Hessians): second step
SLOW = pytest.mark.slow


@pytest.fixture(scope="module")
def study() -> evalmix.JudgeStudy:
    with warnings.catch_warnings():
        warnings.simplefilter("error", FitWarning)  # R's Hessians are positive definite: so are these
        return evalmix.judge_study(RATINGS, outcome="rating")


def _check_fit(fit: evalmix.ClmmResult, ref: dict, se: bool = True) -> None:
    assert fit.loglik >= ref["loglik"] - 1e-3
    assert fit.loglik == pytest.approx(ref["loglik"], abs=1e-3)
    assert fit.df == ref["df"] and fit.nobs == ref["nobs"]
    assert list(fit.coef.index) == ref["coef_names"]
    np.testing.assert_allclose(fit.coef.to_numpy(), ref["estimate"], atol=2e-3)
    if se:
        np.testing.assert_allclose(fit.coef_table()["se"].to_numpy(), ref["se"], rtol=0.01)
    sd = dict(zip(fit.varcorr["group"], fit.varcorr["sd"]))
    for group, value in zip(ref["sd_groups"], ref["sd"]):
        assert sd[group] == pytest.approx(value, abs=2e-3), group


@SLOW
@pytest.mark.parametrize("name", ["additive", "interaction", "random_judge"])
def test_fits_match_ordinal(study, name):
    _check_fit(study.fits[name], REF[name], se=REF[name]["hessian_pd"])


@SLOW
def test_interaction_test_and_variance(study):
    it = study.interaction
    stat = 2 * (REF["interaction"]["loglik"] - REF["additive"]["loglik"])
    assert it["statistic"] == pytest.approx(stat, abs=2e-3)
    assert it["df"] == REF["interaction"]["df"] - REF["additive"]["df"] == 4
    sd = dict(zip(REF["random_judge"]["sd_groups"], REF["random_judge"]["sd"]))
    latent = sum(v**2 for v in sd.values()) + np.pi**2 / 3
    assert study.judge_share == pytest.approx(sd["judge"] ** 2 / latent, abs=2e-3)
    assert study.scale == "ordinal" and study.agreement.level == "ordinal"


@SLOW
def test_judge_bias_and_means_match_emmeans(study):
    ref = REF["judge_eff"]
    labels = [c.replace(" effect", " - mean") for c in ref["contrast"]]
    bias = study.bias.set_index("contrast").loc[labels]
    np.testing.assert_allclose(bias["estimate"], ref["estimate"], atol=2e-3)
    np.testing.assert_allclose(bias["se"], ref["se"], rtol=0.01)
    np.testing.assert_allclose(bias["p_value"], ref["p_value"], rtol=0.02, atol=1e-12)
    # the lenient judge rates higher, the strict one lower (simulated +0.7 and -0.8)
    assert bias.loc["lenient - mean", "difference"] > 0.3 > -0.3 > bias.loc["strict - mean", "difference"]
    mc = REF["judge_mean_class"]
    means = study.means.set_index("judge").loc[mc["level"]]
    np.testing.assert_allclose(means["estimate"], mc["estimate"], atol=2e-3)
    np.testing.assert_allclose(means["se"], mc["se"], rtol=0.01)
    # difference: the contrast of the mean ratings
    np.testing.assert_allclose(bias.loc["lenient - mean", "difference"],
                               means.loc["lenient", "estimate"] - means["estimate"].mean(), atol=1e-12)


@SLOW
@pytest.mark.parametrize("adjust", ["tukey", "holm"])
def test_pairwise_contrasts_of_a_clmm_fit_match_emmeans(study, adjust):
    ref = REF[f"model_{adjust}"]
    emm = evalmix.emmeans(clmm_ref_grid(study.fits["additive"]), "model")
    con = evalmix.contrast(emm, "pairwise", adjust=adjust).to_frame()
    assert con["contrast"].tolist() == ref["contrast"]
    np.testing.assert_allclose(con["estimate"], ref["estimate"], atol=2e-3)
    np.testing.assert_allclose(con["se"], ref["se"], rtol=0.01)
    np.testing.assert_allclose(con["p_adjusted"], ref["p_value"], rtol=0.02, atol=1e-12)
    if adjust == "tukey":  # Tukey intervals; emmeans gives Bonferroni-free Holm intervals unadjusted
        np.testing.assert_allclose(con["conf_low"], ref["conf_low"], atol=5e-3)
        np.testing.assert_allclose(con["conf_high"], ref["conf_high"], atol=5e-3)


@SLOW
def test_ordinal_study_summary_and_planner(study):
    assert "Judge study of ordinal ratings" in repr(study)
    text = str(study.summary())
    assert "Judge bias (latent scale; difference: mean rating)" in text and "Mean rating by model and judge" in text
    assert study.to_dict()["scale"] == "ordinal"
    # the planning parts are those of the mean rating, from the random-judge clmm
    fit = study.fits["random_judge"]
    sd = dict(zip(fit.varcorr["group"], fit.varcorr["sd"]))
    row = study.components.iloc[0]
    theta = fit.thresholds.to_numpy(float)
    again = evalmix.judge_components(float(row["eta"]), sd_item=sd["item"], sd_response=sd["response"],
                                     sd_judge=sd["judge"], thresholds=theta - theta.mean())
    assert row["estimate"] == pytest.approx(again["accuracy"], rel=1e-12)
    # the judge variance floors the SE of a mean rating at sqrt(judge / n_j) (about 0.1 with 10 judges)
    plan = evalmix.plan_judges(study, se=0.2)
    assert plan.se <= 0.2 and plan.n_judges >= 1
    assert evalmix.judge_se(study.components.iloc[0].to_dict(), plan.n_items, plan.n_runs,
                            plan.n_judges) <= plan.se + 1e-12


@pytest.mark.parametrize("values, match", [
    ([2, 7], "only 2 distinct values"),
    ([1.5, 2, 3], "fractional values"),
])
def test_scores_that_are_not_ratings_are_refused(values, match):
    d = RATINGS.head(48).copy()
    d["rating"] = np.resize(values, len(d))
    with pytest.raises(DataError, match=match):
        evalmix.judge_study(d, outcome="rating")


@pytest.mark.parametrize("hessian, gradient, increasing, code, words", [
    (np.diag([4.0, 2.0]), [0.0, 0.0], True, (0,), "successful convergence"),
    (np.diag([4.0, -2.0, -1.0]), [0.0] * 3, True, (-2,), "degenerate Hessian with 2 negative eigenvalues"),
    (np.diag([4.0, 2.0]), [0.0, 0.01], True, (-1,), "max|grad| = 0.01 (tol = 0.001)"),
    (np.diag([4.0, 2.0]), [0.0, 0.0], False, (-3,), "not all thresholds are increasing"),
    (np.diag([4.0, 1e-12]), [0.0, 0.0], True, (1,), "Hessian is numerically singular"),
    (np.diag([4.0, 2.0]), [0.0, 2e-4], True, (1,), "only 4 correct decimals"),
    (np.diag([1e9, 2.0]), [0.0, 0.0], True, (2, 3), "very large eigenvalue"),
])
def test_convergence_check_codes_are_ordinals(hessian, gradient, increasing, code, words):
    got_code, messages = convergence_check(hessian, np.asarray(gradient), increasing)
    assert got_code == code
    assert words in "; ".join(messages)


@SLOW
def test_a_separated_fit_is_refused_naming_the_level():
    # model b always gets the top rating: its effect is infinite (ordinal fits it anyway and says
    # "(1) Hessian is numerically singular"); evalmix names the level and the category instead
    rng = np.random.default_rng(3)
    item = np.repeat(np.arange(30), 4)
    model = np.tile(["a", "b"], 60)
    rating = np.digitize(rng.normal(0, 1, 30)[item] + rng.logistic(size=120), [-1.5, 0, 1.5]) + 1
    rating[model == "b"] = 4
    with pytest.raises(SeparationError, match=r"model = 'b': every rating is '4' \(60 rows\).*'modelb' \(\+inf\)"):
        evalmix.clmm("rating ~ model + (1|item)", pd.DataFrame({"item": item, "model": model, "rating": rating}))
