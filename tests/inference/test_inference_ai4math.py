"""The AI4Math paper's inference tables: published CSVs, R's emmeans/car/lme4 on R's glmer fits, and
evalmix's own glmer fits.

Two layers are checked separately:

- the inference functions on R's fits (R's fixed effects and covariance on the same design), against
  the R reference (tight) and against the published tables (the issue's tolerances);
- the whole pipeline on evalmix's own GLMM fits, against the published tables.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

from evalmix.inference.emmeans import contrast, emmeans
from evalmix.glmm import glmer
from evalmix.inference.selection import anova, compare_models
from glm_standin import fit_from_reference

from conftest import REFERENCE

pytestmark = pytest.mark.shared

R_AI = json.loads((REFERENCE / "inference_reference_ai4math.json").read_text())
RANDOM = " + (1|problem_id) + (1|problem_id:run)"
FIVE = ["model * language * prompt", "model * language + prompt", "model + language * prompt",
        "model + language + prompt", "model + language"]
# the paper labels domains in English, the data in Spanish
DOMAIN_EN = {"Álgebra": "Algebra", "Cálculo": "Calculus", "Combinatoria": "Combinatorics",
             "Geometría": "Geometry", "Lógica Matemática": "Mathematical Logic",
             "Probabilidad": "Probability", "Teoria de Números": "Theory of Numbers"}
# the tolerances for the published tables
EST_TOL, SE_RTOL, P_TOL = 2e-3, 0.01, 2e-3


def check_grok4_table(res: pd.DataFrame, pub: pd.DataFrame) -> None:
    """Odds ratios against Grok-4 vs pairwise_contrasts_grok4.csv at the issue's tolerances."""
    assert res["contrast"].tolist() == pub["model"].tolist()
    np.testing.assert_allclose(res["estimate"], np.log(pub["odds_ratio"]), atol=EST_TOL)
    np.testing.assert_allclose(res["or_conf_low"], pub["lower"], rtol=SE_RTOL)
    np.testing.assert_allclose(res["or_conf_high"], pub["upper"], rtol=SE_RTOL)
    np.testing.assert_allclose(res["p_adjusted"], pub["p.value"], atol=P_TOL)


@pytest.fixture(scope="module")
def r_fits(ai4math_raw):
    return {k: fit_from_reference(v, ai4math_raw) for k, v in R_AI["fits"].items()}


@pytest.fixture(scope="module")
def own_fits(ai4math_raw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # boundary fits (item:run variance at 0) are expected
        fits = {f: glmer(f"correct ~ {f}{RANDOM}", ai4math_raw) for f in FIVE}
        fits["model + domain"] = glmer(f"correct ~ model + domain{RANDOM}", ai4math_raw)
        fits["model * domain"] = glmer(f"correct ~ model * domain{RANDOM}", ai4math_raw)
    return fits


def check(mine: pd.DataFrame, ref: pd.DataFrame, *, est_tol, se_rtol, ci_rtol, p_tol,
          est="estimate", se="se", lower="lower", upper="upper", p="p"):
    np.testing.assert_allclose(mine["estimate"], ref[est], atol=est_tol, rtol=0)
    np.testing.assert_allclose(mine["se"], ref[se], rtol=se_rtol)
    scale = np.maximum(ref[lower].abs().to_numpy(), ref[upper].abs().to_numpy())
    for a, b in ((lower, "conf_low"), (upper, "conf_high")):  # relative to the interval's size
        err = np.abs(mine[b].to_numpy() - ref[a].to_numpy())
        assert (err <= ci_rtol * scale).all(), (b, float(np.max(err / scale)))
    if p is not None:
        np.testing.assert_allclose(mine["p_adjusted"], ref[p].astype(float), atol=p_tol, rtol=0)


# --- the inference layer on R's fits --------------------------------------------------------------

def test_pairwise_holm_on_r_fit(r_fits, published):
    """pairwise_contrasts.csv: pairs(emmeans(fit, ~ model | language * prompt), adjust = "holm")."""
    res = contrast(emmeans(r_fits["model * language * prompt"], "model",
                           by=["language", "prompt"]), "pairwise", adjust="holm").to_frame()
    ref = pd.DataFrame(R_AI["pairwise_holm"])
    assert res["contrast"].tolist() == ref["contrast"].tolist()
    assert res["language"].tolist() == ref["language"].tolist()
    check(res, ref, est_tol=1e-6, se_rtol=1e-5, ci_rtol=1e-5, p_tol=1e-6)
    # The source fit is the paper's first (default-control) model * language * prompt fit.
    # lme4 stops that 34-parameter fit early (max|grad| = 0.05), and lme4 1.1-31's refit lands
    # 0.0027 away from the published estimates (0.004 in Holm p-values): the published table can
    # be matched only to that precision, by R itself as well.
    pub = published("pairwise_contrasts")
    assert res["contrast"].tolist() == pub["contrast"].tolist()
    assert res["prompt"].tolist() == pub["prompt"].tolist()
    check(res, pub, est_tol=3e-3, se_rtol=SE_RTOL, ci_rtol=SE_RTOL, p_tol=5e-3, se="SE",
          lower="asymp.LCL", upper="asymp.UCL", p="p.value")


def test_odds_ratios_vs_grok4_on_r_fit(r_fits, published):
    """pairwise_contrasts_grok4.csv: trt.vs.ctrl against Grok-4, dunnettx, over language and prompt."""
    res = contrast(emmeans(r_fits["grok_full"], "model"), "trt.vs.ctrl", ref="Grok-4",
                   adjust="dunnettx").to_frame()
    ref = pd.DataFrame(R_AI["grok_dunnettx"])
    assert res["contrast"].tolist() == ref["contrast"].tolist()
    check(res, ref, est_tol=1e-6, se_rtol=1e-5, ci_rtol=1e-4, p_tol=1e-6)
    # the source fit (Grok-4 as reference level, bobyqa) is reproduced: the table matches to 1e-5
    check_grok4_table(res, published("pairwise_contrasts_grok4"))
    # the same contrasts on the default-coded fit: emmeans does not depend on the coding
    res = contrast(emmeans(r_fits["model * language * prompt"], "model"), "trt.vs.ctrl",
                   ref="Grok-4", adjust="dunnettx").to_frame()
    check(res, pd.DataFrame(R_AI["grok_dunnettx_default_fit"]), est_tol=1e-6, se_rtol=1e-5,
          ci_rtol=1e-4, p_tol=1e-6)


def test_domain_means_on_r_fit(r_fits, published):
    """Domain_marginal_means.csv: emmeans(model + domain fit, ~ domain, type = "response")."""
    res = emmeans(r_fits["domain_additive"], "domain", type="response").to_frame()
    ref = pd.DataFrame(R_AI["domain_means"])
    assert res["domain"].tolist() == ref["domain"].tolist()
    check(res, ref, est_tol=1e-8, se_rtol=1e-6, ci_rtol=1e-6, p_tol=0, p=None)
    res["domain"] = res["domain"].map(DOMAIN_EN)
    pub = published("Domain_marginal_means").set_index("domain")
    res = res.set_index("domain").loc[pub.index]
    check(res, pub, est_tol=EST_TOL, se_rtol=SE_RTOL, ci_rtol=SE_RTOL, p_tol=0, est="prob",
          se="SE", lower="asymp.LCL", upper="asymp.UCL", p=None)


@pytest.mark.parametrize("name,fit", [("anova3_domain_additive", "domain_additive"),
                                      ("anova3_full", "model * language * prompt")])
def test_type3_on_r_fit(r_fits, name, fit):
    res = anova(r_fits[fit]).to_frame()
    ref = pd.DataFrame(R_AI[name])
    assert res["term"].tolist() == ref["term"].tolist()
    np.testing.assert_allclose(res["statistic"], ref["chisq"], rtol=1e-6)
    np.testing.assert_allclose(res["p_value"], ref["p"], rtol=1e-5, atol=1e-12)


def test_bic_table_on_r_fits(r_fits, published):
    res = compare_models({f: r_fits[f] for f in FIVE})
    ref = pd.DataFrame(R_AI["anova_five"])
    lrt = res.lrt.set_index("name").loc[ref["name"]]
    for col, rcol in (("npar", "npar"), ("bic", "bic"), ("loglik", "loglik"),
                      ("statistic", "chisq"), ("df_diff", "df_diff"), ("p_value", "p")):
        np.testing.assert_allclose(lrt[col].astype(float), ref[rcol].astype(float), rtol=1e-9,
                                   err_msg=col)
    # lme4 1.1-31 refits three of the five (max|grad| up to 0.05, a convergence warning) to BICs
    # 0.0024 away from the published ones, so BIC and ΔBIC are compared at 5e-3
    pub = published("mixed_model_BIC")
    tab = res.to_frame().set_index("name").loc[pub["model"]]
    np.testing.assert_allclose(tab["bic"], pub["BIC"], atol=5e-3)
    np.testing.assert_allclose(tab["delta_bic"], pub["deltaBIC"], atol=5e-3)
    np.testing.assert_allclose(tab["bic_weight"], pub["wBIC"], atol=P_TOL)
    assert tab["df"].tolist() == pub["df"].tolist()


# --- the whole pipeline on evalmix's own fits -----------------------------------------------------

def test_bic_table_from_own_fits(own_fits, published):
    """mixed_model_BIC.csv from evalmix.glmer fits.

    evalmix's optimum is at least as good as lme4's: the BICs are lower by up to 0.004 (the
    34-parameter fit, where lme4 stops early), so ΔBIC is compared at 5e-3.
    """
    res = compare_models({f: own_fits[f] for f in FIVE})
    pub = published("mixed_model_BIC")
    tab = res.to_frame().set_index("name").loc[pub["model"]]
    assert (tab["bic"] <= pub["BIC"].to_numpy() + 1e-3).all()
    np.testing.assert_allclose(tab["bic"], pub["BIC"], atol=5e-3)
    np.testing.assert_allclose(tab["delta_bic"], pub["deltaBIC"], atol=5e-3)
    np.testing.assert_allclose(tab["bic_weight"], pub["wBIC"], atol=P_TOL)
    assert res.to_frame()["name"].iloc[0] == "model + language"
    assert res.verdict().startswith("strong evidence for model + language over model + "
                                    "language + prompt (ΔBIC = 9.0")


# The whole pipeline on evalmix's own fits. Its default SEs reproduce lme4 1.1-31's (to 0.4% on these
# fits, see tests/glmm/test_glmm_parity.py), so the published tables are met at the tolerances,
# except where the published numbers come from a fit lme4 stopped early (pairwise_contrasts.csv).


def test_odds_ratios_vs_grok4_from_own_fit(own_fits, published):
    res = contrast(emmeans(own_fits["model * language * prompt"], "model"), "trt.vs.ctrl",
                   ref="Grok-4", adjust="dunnettx").to_frame()
    check_grok4_table(res, published("pairwise_contrasts_grok4"))
    assert (res["p_adjusted"].iloc[:6] < 1e-12).all() and res["p_adjusted"].iloc[6] > 0.4  # o3-mini ~ Grok-4


def test_domain_means_from_own_fit(own_fits, published):
    res = emmeans(own_fits["model + domain"], "domain", type="response").to_frame()
    res["domain"] = res["domain"].map(DOMAIN_EN)
    pub = published("Domain_marginal_means").set_index("domain")
    res = res.set_index("domain").loc[pub.index]
    check(res, pub, est_tol=EST_TOL, se_rtol=SE_RTOL, ci_rtol=SE_RTOL, p_tol=0, est="prob", se="SE",
          lower="asymp.LCL", upper="asymp.UCL", p=None)


def test_pairwise_holm_from_own_fit(own_fits, published):
    res = contrast(emmeans(own_fits["model * language * prompt"], "model",
                           by=["language", "prompt"]), "pairwise", adjust="holm").to_frame()
    pub = published("pairwise_contrasts")
    assert res["contrast"].tolist() == pub["contrast"].tolist()
    # the source fit stopped early (see test_pairwise_holm_on_r_fit): estimates and Holm p-values
    # can only be matched to the distance between that fit and a converged one
    check(res, pub, est_tol=5e-3, se_rtol=SE_RTOL, ci_rtol=0.02, p_tol=0.015, se="SE",
          lower="asymp.LCL", upper="asymp.UCL", p="p.value")
    # the decisions the paper draws do not move
    assert ((res["p_adjusted"] < 0.05) == (pub["p.value"] < 0.05)).all()


@pytest.mark.parametrize("source", ["r", "own"])
def test_domain_fit_comparison(r_fits, own_fits, published, source):
    """Mixed_Effects_Domain_fit_comparison.csv: additive against interaction, by BIC."""
    if source == "r":
        fits = {"additive: model + domain": r_fits["domain_additive"],
                "interaction: model × domain": r_fits["domain_interaction"]}
    else:
        fits = {"additive: model + domain": own_fits["model + domain"],
                "interaction: model × domain": own_fits["model * domain"]}
    res = compare_models(fits)
    pub = published("Mixed_Effects_Domain_fit_comparison")
    tab = res.to_frame()
    assert tab["name"].tolist() == pub["model"].tolist()
    np.testing.assert_allclose(tab["bic"], pub["BIC"], atol=5e-3)
    np.testing.assert_allclose(tab["delta_bic"], pub["deltaBIC"], atol=5e-3)
    np.testing.assert_allclose(tab["bic_weight"], pub["wBIC"], atol=P_TOL)
    assert res.verdict().startswith("very strong evidence for additive: model + domain")
    if source == "r":
        ref = pd.DataFrame(R_AI["anova_domain"]).set_index("name")
        lrt = res.lrt.set_index("name")
        assert lrt.loc["interaction: model × domain", "statistic"] == pytest.approx(
            ref.loc["domain_interaction", "chisq"], rel=1e-9)
