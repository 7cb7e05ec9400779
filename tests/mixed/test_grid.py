"""The reference grid (evalmix.grid.RefGrid): contrasts of contrasts and regrid against R's emmeans
(tests/reference/grid_reference.R), estimability through chains, and posterior draws through the
same object."""

from __future__ import annotations

import json
import warnings
from dataclasses import replace
from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.special import expit

import evalmix
from evalmix.inference.emmeans import contrast, emmeans, regrid
from evalmix.mixed.grid import RefGrid, ref_grid
from evalmix.core.tables import format_table
from glm_standin import PosteriorStandIn, fit_from_reference, r_name

from conftest import REFERENCE

REF = json.loads((REFERENCE / "grid_reference.json").read_text())
# the same beta and V as R: estimates, SEs and interval ends agree to rounding (1e-6 relative);
# p-values of the single-step and step-wise adjustments used here are exact functions of z
EST_RTOL, P_TOL = 1e-6, 1e-7


def assert_matches(mine: pd.DataFrame, ref: list[dict], labels: list[str],
                   ci_rtol: float = EST_RTOL, p_tol: float = P_TOL) -> None:
    """Compare a result table with R's rows: labels exactly, numbers to 1e-6 relative (interval
    ends to ``ci_rtol`` and p-values to ``p_tol`` where R's critical values are approximate)."""
    theirs = pd.DataFrame(ref)
    assert len(mine) == len(theirs)
    for col in labels:
        assert mine[col].astype(str).tolist() == theirs[col].astype(str).tolist(), col
    est_col = "odds_ratio" if "odds_ratio" in mine and "estimate" not in mine else "estimate"
    pairs = [(est_col, "estimate"), ("se", "se"), ("statistic", "z"), ("p_adjusted", "p")]
    low, high = (("or_conf_low", "or_conf_high") if est_col == "odds_ratio"
                 else ("conf_low", "conf_high"))
    pairs += [(low, "lower"), (high, "upper")]
    for mcol, rcol in pairs:
        if rcol not in theirs:
            continue
        r = theirs[rcol].astype(float).to_numpy()
        m = mine[mcol].to_numpy(dtype=float)
        assert (np.isnan(m) == np.isnan(r)).all(), mcol
        ok = ~np.isnan(r)
        if rcol == "p":
            np.testing.assert_allclose(m[ok], r[ok], atol=p_tol, rtol=0, err_msg=mcol)
        else:
            rtol = ci_rtol if rcol in ("lower", "upper") else EST_RTOL
            np.testing.assert_allclose(m[ok], r[ok], rtol=rtol, atol=1e-12, err_msg=mcol)


# --- simulated data: R's glm fit ------------------------------------------------------------------

@pytest.fixture(scope="module")
def fit():
    return fit_from_reference(REF["sim"]["fit"], pd.read_csv(REFERENCE / "inference_sim.csv"))


@pytest.fixture(scope="module")
def e_by(fit):
    return emmeans(fit, "model", by="lang")


def test_standin_is_rs_fit(fit):
    np.testing.assert_allclose(fit.fixef.to_numpy(), REF["sim"]["fit"]["beta"], rtol=1e-12)


SIM_CASES = {
    # contrast(contrast(e_by, "pairwise"), "pairwise", by = NULL): all pairs of (pair, language)
    "chain_by_none": (lambda e: contrast(contrast(e, "pairwise"), "pairwise", by=None,
                                         adjust="bonferroni"), ["contrast"]),
    # interaction contrasts: within each model pair, ES minus EN
    "chain_by_contrast": (lambda e: contrast(contrast(e, "pairwise"), "revpairwise",
                                             by="contrast", adjust="none"),
                          ["contrast1", "contrast"]),
    "chain_trt_by_contrast": (lambda e: contrast(contrast(e, "trt.vs.ctrl", ref="beta-2"),
                                                 "pairwise", by="contrast", adjust="holm"),
                              ["contrast1", "contrast"]),
    "regrid_emm": (lambda e: regrid(e), ["model", "lang"]),
    "regrid_pairwise_holm": (lambda e: contrast(regrid(e), "pairwise", adjust="holm"),
                             ["contrast", "lang"]),
    "regrid_trt_sidak": (lambda e: contrast(regrid(e), "trt.vs.ctrl", ref="delta",
                                            adjust="sidak"), ["contrast", "lang"]),
    "regrid_chain": (lambda e: contrast(contrast(regrid(e), "pairwise", adjust="none"),
                                        "pairwise", by="contrast", adjust="none"),
                     ["contrast1", "contrast"]),
    "regrid_chain_by_none": (lambda e: contrast(contrast(regrid(e), "trt.vs.ctrl"), "pairwise",
                                                by=None, adjust="holm"), ["contrast"]),
}


@pytest.mark.parametrize("case", sorted(SIM_CASES))
def test_chains_and_regrid_match_r(e_by, case):
    make, labels = SIM_CASES[case]
    assert_matches(make(e_by).to_frame(), REF["sim"][case], labels)


REGRID_CONTRAST_CASES = {
    # regrid(contrast(...)): odds ratios, delta-method SEs, Wald intervals on that scale adjusted
    # as the contrasts were, tests of odds ratio = 1; labels A/B
    "regrid_contrast_holm": (lambda e, f: regrid(contrast(e, "pairwise", adjust="holm")),
                             ["contrast", "lang"]),
    "regrid_contrast_tukey": (
        lambda e, f: regrid(contrast(emmeans(f, "model", by="lang", type="response"),
                                     "pairwise", adjust="tukey")), ["contrast", "lang"]),
    "regrid_contrast_dunnettx": (
        lambda e, f: regrid(contrast(e, "trt.vs.ctrl", ref="beta-2", adjust="dunnettx")),
        ["contrast", "lang"]),
    "regrid_contrast_mvt": (
        lambda e, f: regrid(contrast(e, "trt.vs.ctrl", ref="beta-2", adjust="mvt")),
        ["contrast", "lang"]),
    # ratios of odds ratios; a by variable keeps its labels, as in emmeans
    "regrid_contrast_chain_by_none": (
        lambda e, f: regrid(contrast(contrast(e, "pairwise"), "pairwise", by=None,
                                     adjust="none")), ["contrast"]),
    "regrid_contrast_chain_by_contrast": (
        lambda e, f: regrid(contrast(contrast(e, "pairwise"), "revpairwise", by="contrast",
                                     adjust="none")), ["contrast1", "contrast"]),
    "regrid_contrast_interaction": (
        lambda e, f: regrid(contrast(emmeans(f, ["model", "lang"]), interaction="pairwise")),
        ["model_pairwise", "lang_pairwise"]),
    # differences of odds ratios
    "regrid_contrast_then_contrast": (
        lambda e, f: contrast(regrid(contrast(e, "pairwise")), "revpairwise", by="contrast",
                              adjust="none"), ["contrast1", "contrast"]),
}


# R's Tukey and Dunnett quantiles come from root finders (tolerances 1e-4 and 5e-4), mvt from
# mvtnorm's randomised integration (abseps 1e-3): (interval ends relative, p-values absolute)
REGRID_TOL = {"regrid_contrast_tukey": (1e-4, P_TOL), "regrid_contrast_dunnettx": (1e-3, P_TOL),
              "regrid_contrast_mvt": (2e-3, 2e-3)}


@pytest.mark.parametrize("case", sorted(REGRID_CONTRAST_CASES))
def test_regrid_of_contrasts_matches_r(fit, e_by, case):
    make, labels = REGRID_CONTRAST_CASES[case]
    res = make(e_by, fit)
    assert_matches(res.to_frame(), REF["sim"][case], labels,
                   *REGRID_TOL.get(case, (EST_RTOL, P_TOL)))
    if case == "regrid_contrast_then_contrast":
        assert res.scale == "odds ratio difference"
        assert "difference of odds ratios" in str(res)
    else:
        assert res.scale == "odds ratio" and res.grid.tran == "log odds ratio"
        assert "odds_ratio" in res.to_frame() and "estimate" not in res.to_frame()
        assert "tests of odds ratio = 1" in str(res)


def test_regridded_contrasts_are_exp_with_delta_method_se(e_by):
    """Closed form: odds ratio exp(l'b), SE exp(l'b) sqrt(l'Vl), interval OR -/+ z SE, z = (OR-1)/SE."""
    con = contrast(e_by, "pairwise", adjust="none")
    res = regrid(con).to_frame()
    L, beta, V = con.L, con.beta, con.vcov
    orr = np.exp(L @ beta)
    se = orr * np.sqrt(np.einsum("ij,jk,ik->i", L, V, L))
    np.testing.assert_allclose(res["odds_ratio"], orr, rtol=1e-12)
    np.testing.assert_allclose(res["se"], se, rtol=1e-12)
    np.testing.assert_allclose(res["statistic"], (orr - 1) / se, rtol=1e-12)
    np.testing.assert_allclose(res["or_conf_low"], orr - 1.959963984540054 * se, rtol=1e-12)
    # regridding twice changes nothing; the chain continues on the odds-ratio scale
    once = regrid(con)
    assert regrid(once) is once
    assert once.grid.link == "identity" and once.grid.contrasts
    # the posterior twin: exp of each draw, P(odds ratio > 1) = P(log odds ratio > 0)


def test_regridded_contrasts_of_posterior_draws(posterior):
    e = emmeans(posterior, "model", by="lang")
    eta = posterior.fixef_draws.to_numpy() @ e.L.T
    res = regrid(contrast(e, "pairwise")).to_frame()
    vals = np.exp(eta[:, 0] - eta[:, 1])
    assert res["odds_ratio"].iloc[0] == pytest.approx(vals.mean(), rel=1e-12)
    assert res["se"].iloc[0] == pytest.approx(vals.std(ddof=1), rel=1e-12)
    assert res["prob_positive"].iloc[0] == pytest.approx((vals > 1).mean())
    assert res["contrast"].iloc[0] == "alpha/(beta-2)"


def test_grid_summary_uses_its_conf_level(fit):
    """The printed grid, its frame, Markdown and LaTeX show the intervals at the grid's level."""
    rg = ref_grid(fit, conf_level=0.9)
    assert rg.conf_level == 0.9
    est = rg.estimates()
    np.testing.assert_allclose(est["conf_high"] - est["estimate"],
                               1.6448536269514722 * est["se"], rtol=1e-12)
    pd.testing.assert_frame_equal(rg.to_frame()[["conf_low", "conf_high"]],
                                  est[["conf_low", "conf_high"]])
    for text in (str(rg), rg._repr_html_(), rg.summary().to_markdown()):
        assert "90% Wald intervals" in text and "95%" not in text
    # the table forms carry the 90% interval ends, formatted by the one number policy
    shown = format_table(rg.to_frame())
    assert shown["conf_low"].iloc[0] in rg.to_markdown()
    assert format_table(rg.to_frame(), digits=3)["conf_high"].iloc[0] in rg.to_latex()  # LaTeX: 3 digits
    # emmeans and contrast pass their level to the grids they hold
    e = emmeans(fit, "model", conf_level=0.8)
    assert e.grid.conf_level == 0.8 and "80% Wald" in str(e.grid)
    pd.testing.assert_frame_equal(e.grid.to_frame(), e.to_frame())
    assert contrast(e, conf_level=0.8).grid.conf_level == 0.8
    with pytest.raises(ValueError, match="conf_level"):
        ref_grid(fit, conf_level=95)


INTERACTION_CASES = {
    "interaction_pairwise": (dict(specs=["model", "lang"]), dict(interaction="pairwise")),
    "interaction_trt_holm": (dict(specs=["model", "lang"]),
                             dict(interaction=["trt.vs.ctrl", "revpairwise"], adjust="holm")),
    "interaction_by_prompt": (dict(specs=["model", "lang"], by="prompt"),
                              dict(interaction="pairwise", adjust="bonferroni")),
}


@pytest.mark.parametrize("case", sorted(INTERACTION_CASES))
def test_interaction_contrasts_match_r(fit, case):
    """contrast(emm, interaction = ...): one column per variable, unadjusted by default."""
    emm_kw, con_kw = INTERACTION_CASES[case]
    res = contrast(emmeans(fit, **emm_kw), **con_kw)
    ref = REF["sim"][case]
    labels = [c for c in ref[0] if c.endswith(("_pairwise", "_trt.vs.ctrl", "_revpairwise"))
              or c == "prompt"]
    assert_matches(res.to_frame(), ref, labels)
    assert res.to_frame().columns.tolist()[:len(labels)] == labels


def test_interaction_contrasts_equal_the_chain(fit):
    """interaction= is the chain contrast(contrast(emm, m, by=lang), m, by=contrast), reordered."""
    one = contrast(emmeans(fit, ["model", "lang"]), interaction="pairwise").to_frame()
    two = contrast(contrast(emmeans(fit, "model", by="lang"), "pairwise"), "pairwise",
                   by="contrast", adjust="none").to_frame()
    np.testing.assert_allclose(one["estimate"], two["estimate"], rtol=1e-13)
    np.testing.assert_allclose(one["p_adjusted"], two["p_adjusted"], rtol=1e-13)
    assert one["model_pairwise"].tolist() == two["contrast"].tolist()
    assert set(one["lang_pairwise"]) == set(two["contrast1"]) == {"EN - ES"}


def test_interaction_contrasts_of_regridded_means_match_r(fit):
    res = contrast(regrid(emmeans(fit, ["model", "lang"])), interaction="pairwise")
    assert res.scale == "probability"
    assert_matches(res.to_frame(), REF["sim"]["interaction_regrid"],
                   ["model_pairwise", "lang_pairwise"])


weights = st.lists(st.floats(-2, 2, allow_nan=False), min_size=4, max_size=4)


@settings(max_examples=25, deadline=None)
@given(k1=st.lists(weights, min_size=1, max_size=3), k2=weights)
def test_a_chain_is_the_product_of_its_weights(e_by, k1, k2):
    """Invariant: contrasting contrasts with weights K2 (over the (contrast, lang) rows) equals one
    contrast of the means with the product weights, estimate and SE."""
    K1 = np.array(k1)
    first = contrast(e_by, {f"c{i}": row for i, row in enumerate(K1)}, adjust="none")
    rows = len(first.grid.frame)  # K1 within each of the 2 languages
    w2 = (k2 * rows)[:rows]
    chained = contrast(first, {"k": w2}, by=None, adjust="none").to_frame()
    # the same function of the 8 means directly: block-diagonal K1 per language, then w2
    K = np.zeros((rows, 8))
    K[: len(K1), :4], K[len(K1):, 4:] = K1, K1
    direct = contrast(e_by, {"k": np.asarray(w2) @ K}, by=None, adjust="none").to_frame()
    np.testing.assert_allclose(chained["estimate"], direct["estimate"], rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(chained["se"], direct["se"], rtol=1e-9, atol=1e-12)


def test_chain_on_the_odds_ratio_scale_matches_r(fit):
    """Ratios of odds ratios, labelled as emmeans labels them."""
    e = emmeans(fit, "model", by="lang", type="response")
    res = contrast(contrast(e, "pairwise"), "revpairwise", by="contrast", adjust="none")
    assert res.scale == "odds ratio"
    assert_matches(res.to_frame(), REF["sim"]["chain_ratio"], ["contrast1", "contrast"])


def test_regrid_of_means_over_a_factor_matches_r(fit):
    assert_matches(regrid(emmeans(fit, "model")).to_frame(), REF["sim"]["regrid_model"], ["model"])


def test_regridded_contrasts_are_differences_of_probabilities(e_by):
    """Closed form: the difference of the two inverse-logit means, and its delta-method SE
    sqrt(g' V g) with g the derivatives p(1 - p) times the mean rows."""
    res = contrast(regrid(e_by), "pairwise", adjust="none").to_frame()
    L, beta, V = e_by.L[:2], e_by.beta, e_by.vcov
    eta = L @ beta
    p = expit(eta)
    grad = (p * (1 - p)) @ (np.array([[1.0], [-1.0]]) * L)
    assert res["estimate"].iloc[0] == pytest.approx(p[0] - p[1], rel=1e-12)
    assert res["se"].iloc[0] == pytest.approx(np.sqrt(grad @ V @ grad), rel=1e-12)
    assert res.columns.tolist()[:2] == ["contrast", "lang"]
    assert "odds_ratio" not in res


def test_grid_object_holds_what_emmeans_needs(fit, e_by):
    rg = ref_grid(fit)
    assert isinstance(rg, RefGrid) and rg.link == "logit" and rg.type == "link"
    assert rg.L.shape == (len(rg.frame), len(fit.fixef))
    assert rg.variables == ["model", "lang", "prompt", "x"]
    # emmeans on the grid object is emmeans on the fit; the alias still returns (frame, X)
    pd.testing.assert_frame_equal(emmeans(rg, "model", by="lang").to_frame(), e_by.to_frame())
    frame, X = evalmix.reference_grid(fit)
    pd.testing.assert_frame_equal(frame, rg.frame)
    np.testing.assert_array_equal(X, rg.L)
    # the means carry their grid: by, link, estimability, family
    g = e_by.grid
    assert g.by == ("lang",) and g.estimable.all() and g.adjust == "none"
    c = contrast(e_by, "pairwise", adjust="tukey")
    assert c.grid.by == ("lang",) and c.grid.adjust == "tukey"
    assert c.grid.variables == ["contrast", "lang"]
    np.testing.assert_allclose(c.grid.L, c.L)


def test_contrast_rejects_what_it_cannot_contrast(e_by):
    with pytest.raises(evalmix.FormulaError, match="not variables of the grid"):
        contrast(e_by, by="language")
    with pytest.raises(ValueError, match="nothing to contrast"):
        contrast(e_by, by=["model", "lang"])
    # differences of probits have no response scale (only log odds ratios do)
    probit = replace(contrast(e_by).grid, link="probit")
    with pytest.raises(ValueError, match="regrid the means"):
        probit.regrid()
    with pytest.raises(TypeError, match="emmeans"):
        regrid(pd.DataFrame())
    with pytest.raises(TypeError, match="emmeans"):
        contrast(pd.DataFrame())
    with pytest.raises(ValueError, match="one per variable"):
        contrast(e_by, interaction=["pairwise", "pairwise"])  # one non-by variable


# --- a missing cell: estimability through chains and regrid ---------------------------------------

@pytest.fixture(scope="module")
def missing_fit():
    """evalmix's design of the rank-deficient fit (the aliased column dropped) with R's
    beta and V."""
    from evalmix.glmm import glmer

    info = REF["missing_cell"]["fit"]
    data = pd.read_csv(REFERENCE / "inference_glmer_sim.csv")
    data = data[~((data["model"] == "m3") & (data["lang"] == "ES"))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        own = glmer("correct ~ model * lang + (1|item) + (1|item:run)", data)
    names = list(own.fixef.index)
    assert [r_name(n) for n in names] == info["coef_names"]
    return SimpleNamespace(fixef=pd.Series(info["beta"], index=names),
                           vcov=pd.DataFrame(np.array(info["vcov"]), index=names, columns=names),
                           link="logit", fixed_design=own.fixed_design)


MISSING_CASES = {
    "chain_by_none": (lambda e: contrast(contrast(e, "pairwise", adjust="none"), "pairwise",
                                         by=None, adjust="none"), ["contrast"]),
    "chain_by_contrast": (lambda e: contrast(contrast(e, "pairwise"), "pairwise",
                                             by="contrast", adjust="none"),
                          ["contrast1", "contrast"]),
    "regrid_emm": (lambda e: regrid(e), ["model", "lang"]),
    "regrid_pairwise": (lambda e: contrast(regrid(e), "pairwise", adjust="none"),
                        ["contrast", "lang"]),
    "regrid_contrast": (lambda e: regrid(contrast(e, "pairwise", adjust="none")),
                        ["contrast", "lang"]),
}


@pytest.mark.parametrize("case", sorted(MISSING_CASES))
def test_non_estimable_rows_stay_nan_through_chains(missing_fit, case):
    """m3 never ran in ES: every mean or contrast that touches that cell is NaN, as emmeans'
    nonEst, however many contrasts and regrids lie between."""
    make, labels = MISSING_CASES[case]
    res = make(emmeans(missing_fit, "model", by="lang"))
    ref = REF["missing_cell"][case]
    assert_matches(res.to_frame(), ref, labels)
    est = res.to_frame()["odds_ratio" if case == "regrid_contrast" else "estimate"]
    assert est.isna().any()  # the case does exercise the empty cell
    assert pd.DataFrame(ref)["estimate"].isna().any()
    np.testing.assert_array_equal(res.grid.estimable,
                                  pd.DataFrame(ref)["estimate"].notna().to_numpy())


# --- posterior draws flow through the same object -------------------------------------------------

@pytest.fixture(scope="module")
def posterior(fit):
    rng = np.random.default_rng(11)
    draws = rng.multivariate_normal(fit.fixef.to_numpy(), fit.vcov.to_numpy(), size=3000)
    return PosteriorStandIn(pd.DataFrame(draws, columns=fit.fixef.index), fit.fixed_design,
                            fit.formula)


def test_posterior_chains_and_regrid_are_functions_of_each_draw(posterior):
    e = emmeans(posterior, "model", by="lang")
    D = posterior.fixef_draws.to_numpy()
    eta = D @ e.L.T  # draws x 8 means (model fastest, then lang)
    # interaction contrast (alpha - beta-2) ES - (alpha - beta-2) EN on each draw
    res = contrast(contrast(e, "pairwise"), "revpairwise", by="contrast").to_frame()
    vals = (eta[:, 4] - eta[:, 5]) - (eta[:, 0] - eta[:, 1])
    assert res["estimate"].iloc[0] == pytest.approx(vals.mean(), rel=1e-12)
    assert res["prob_positive"].iloc[0] == pytest.approx((vals > 0).mean())
    # regrid: differences of the inverse logit of each draw
    rd = contrast(regrid(e), "pairwise").to_frame()
    p = expit(eta)
    assert rd["estimate"].iloc[0] == pytest.approx((p[:, 0] - p[:, 1]).mean(), rel=1e-12)
    assert rd["se"].iloc[0] == pytest.approx((p[:, 0] - p[:, 1]).std(ddof=1), rel=1e-12)
    assert regrid(e).is_posterior and regrid(e).scale == "probability"


# --- AI4Math: R's glmer fits ----------------------------------------------------------------------

R_AI = json.loads((REFERENCE / "inference_reference_ai4math.json").read_text())


@pytest.fixture(scope="module")
def ai_fits(ai4math_raw):
    return {k: fit_from_reference(R_AI["fits"][k], ai4math_raw)
            for k in ("domain_interaction", "model * language * prompt")}


AI_CASES = {
    "chain_domain_vs_algebra": (
        "domain_interaction", lambda f: contrast(
            contrast(emmeans(f, "model", by="domain"), "trt.vs.ctrl", ref="Grok-4",
                     adjust="none"), "trt.vs.ctrl", by="contrast", adjust="holm"),
        ["contrast1", "contrast"]),
    "chain_language_gap": (
        "model * language * prompt", lambda f: contrast(
            contrast(emmeans(f, "language", by="model"), "revpairwise"), "pairwise", by=None,
            adjust="holm"), ["contrast"]),
    "regrid_domain": ("domain_interaction",
                      lambda f: regrid(emmeans(f, "model", by="domain")), ["model", "domain"]),
    "regrid_domain_pairwise": (
        "domain_interaction", lambda f: contrast(regrid(emmeans(f, "model", by="domain")),
                                                 "pairwise", adjust="holm"),
        ["contrast", "domain"]),
    "interaction_domain": (
        "domain_interaction", lambda f: contrast(emmeans(f, ["model", "domain"]),
                                                 interaction="trt.vs.ctrl", adjust="holm"),
        ["model_trt.vs.ctrl", "domain_trt.vs.ctrl"]),
    "interaction_language_by_prompt": (
        "model * language * prompt", lambda f: contrast(
            emmeans(f, ["model", "language"], by="prompt"), interaction="pairwise",
            adjust="bonferroni"), ["model_pairwise", "language_pairwise", "prompt"]),
    "regrid_language_gap": (
        "model * language * prompt", lambda f: contrast(
            contrast(regrid(emmeans(f, "language", by="model")), "revpairwise"), "pairwise",
            by=None, adjust="bonferroni"), ["contrast"]),
}


@pytest.mark.shared
@pytest.mark.parametrize("case", sorted(AI_CASES))
def test_ai4math_chains_and_regrid_match_r(ai_fits, case):
    key, make, labels = AI_CASES[case]
    assert_matches(make(ai_fits[key]).to_frame(), REF["ai4math"][case], labels)


# --- offsets ----------------------------------------------------------------------------------------

def test_offsets_ride_on_the_grid_rows():
    """A constant offset c moves only the intercept (by -c); the grid adds the mean offset back, so
    means, regridded means, rank estimates and a contrast that keeps one mean are those of the fit
    without the offset, while differences are unchanged (the offsets cancel), as in emmeans."""
    from evalmix.glmm import glmer
    from evalmix.studies.ranking import rank_uncertainty_glmm

    runs = evalmix.simulate.glmm_runs(3, 40, 2, rng=3).assign(c=0.7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = glmer("correct ~ model + (1|item)", runs)
        off = glmer("correct ~ model + offset(c) + (1|item)", runs)
    tol = dict(atol=5e-5, rtol=0)  # the two fits agree to the optimiser's tolerance
    e0, e1 = emmeans(base, "model"), emmeans(off, "model")
    np.testing.assert_allclose(e1.to_frame()["estimate"], e0.to_frame()["estimate"], **tol)
    np.testing.assert_allclose(regrid(e1).to_frame()["estimate"],
                               regrid(e0).to_frame()["estimate"], **tol)
    keep = contrast(e1, {"M1 alone": [1, 0, 0]}, adjust="none").to_frame()
    assert keep["estimate"].iloc[0] == pytest.approx(e1.to_frame()["estimate"].iloc[0], rel=1e-12)
    np.testing.assert_allclose(contrast(e1).to_frame()["estimate"],
                               contrast(e0).to_frame()["estimate"], **tol)
    ranks = rank_uncertainty_glmm(off, n_draws=200, rng=1).table
    np.testing.assert_allclose(ranks["estimate"], e0.to_frame()["estimate"], **tol)
