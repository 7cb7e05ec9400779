"""Beta, beta-binomial and binomial GLMMs (``evalmix.glmmtmb``) against R's glmmTMB.

The reference values come from tests/reference/glmmtmb_reference.R (glmmTMB 1.1.5) on a simulated
design (glmmtmb_sim.csv: 4 models x 50 items x 3 runs, a beta score and k of 10), AI4Math
aggregated to k of 12 per problem:model, and data/example_ratings.csv rescaled to (0, 1).
Tolerances: logLik 1e-4 relative (and not below R's), fixed effects 1e-3 absolute, SEs, SDs and
the precision 1e-3 relative, the Pearson chi-square 1e-4 relative.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import evalmix
from evalmix.core.errors import ArgumentError, DataError, DataWarning, FormulaError

REF_DIR = Path(__file__).parents[1] / "reference"
REF = json.loads((REF_DIR / "glmmtmb_reference.json").read_text())
SIM = pd.read_csv(REF_DIR / "glmmtmb_sim.csv")
RATINGS = pd.read_csv(Path(__file__).parents[2] / "data" / "example_ratings.csv").assign(
    score=lambda d: (d["rating"] - 0.5) / 5)

BB = "cbind(k, n - k)"
CASES = {
    "sim_beta": ("score ~ model + (1|item)", "sim", "beta"),
    "sim_beta_nested": ("score ~ model + (1|item) + (1|item:run)", "sim", "beta"),
    "sim_bb": (f"{BB} ~ model + (1|item)", "sim", "betabinomial"),
    "sim_bb_nested": (f"{BB} ~ model + (1|item) + (1|item:run)", "sim", "betabinomial"),
    "sim_binom": (f"{BB} ~ model + (1|item)", "sim", "binomial"),
    "ratings_beta": ("score ~ model + judge + (1|item)", "ratings", "beta"),
}
AI_CASES = {
    "ai_bb": (f"{BB} ~ model + (1|problem_id)", "betabinomial"),
    "ai_binom": (f"{BB} ~ model + (1|problem_id)", "binomial"),
    "ai_bb_crossed": (f"{BB} ~ 1 + (1|model) + (1|problem_id)", "betabinomial"),
}


@pytest.fixture(scope="module")
def fits() -> dict[str, evalmix.GlmmTMBResult]:
    data = {"sim": SIM, "ratings": RATINGS}
    return {name: evalmix.glmmtmb(f, data[d], fam) for name, (f, d, fam) in CASES.items()}


@pytest.fixture(scope="module")
def ai_agg(ai4math_raw: pd.DataFrame) -> pd.DataFrame:
    # k of n per problem:model, as the R script aggregates it
    agg = ai4math_raw.groupby(["problem_id", "model"], as_index=False).agg(
        k=("correct", "sum"), n=("correct", "size"))
    return agg.assign(problem_id=agg["problem_id"].astype(str))


@pytest.fixture(scope="module")
def ai_fits(ai_agg: pd.DataFrame) -> dict[str, evalmix.GlmmTMBResult]:
    return {name: evalmix.glmmtmb(f, ai_agg, fam) for name, (f, fam) in AI_CASES.items()}


def _check_parity(fit: evalmix.GlmmTMBResult, ref: dict) -> None:
    assert fit.converged
    assert fit.loglik == pytest.approx(ref["loglik"], rel=1e-4)
    assert fit.loglik >= ref["loglik"] - 1e-4 * abs(ref["loglik"])
    assert list(fit.fixef.index) == list(np.atleast_1d(ref["coef_names"]))
    np.testing.assert_allclose(fit.fixef.to_numpy(), np.atleast_1d(ref["estimate"]), atol=1e-3)
    np.testing.assert_allclose(fit.coef_table()["se"].to_numpy(), np.atleast_1d(ref["se"]), rtol=1e-3)
    sd = dict(zip(np.atleast_1d(ref["sd_groups"]), np.atleast_1d(ref["sd"])))
    got = dict(zip(fit.varcorr["group"], fit.varcorr["sd"]))
    assert set(got) == set(sd)
    for g in sd:
        assert got[g] == pytest.approx(sd[g], rel=1e-3), g
    assert fit.dispersion == pytest.approx(ref["dispersion"], rel=1e-3)
    assert fit.df == ref["df"] and fit.nobs == ref["nobs"]
    assert fit.aic == pytest.approx(ref["aic"], rel=1e-4)
    assert fit.bic == pytest.approx(ref["bic"], rel=1e-4)


@pytest.mark.parametrize("name", list(CASES))
def test_parity_with_glmmtmb(fits, name):
    _check_parity(fits[name], REF["fits"][name])


@pytest.mark.shared
@pytest.mark.parametrize("name", list(AI_CASES))
def test_parity_with_glmmtmb_ai4math(ai_fits, name):
    _check_parity(ai_fits[name], REF["fits"][name])


@pytest.mark.shared
@pytest.mark.slow
def test_parity_nested_small_precision(ai4math_raw):
    """k of 3 with a small precision: away from the mode the observed information of some rows is
    negative, and the inner Newton steps along the clipped one (the fit still reaches R's)."""
    agg = ai4math_raw.groupby(["problem_id", "model", "language", "prompt"], as_index=False).agg(
        k=("correct", "sum"), n=("correct", "size"))
    fit = evalmix.glmmtmb(f"{BB} ~ model + language + prompt + (1|problem_id) + (1|problem_id:model)",
                          agg.assign(problem_id=agg["problem_id"].astype(str)), "betabinomial")
    _check_parity(fit, REF["fits"]["ai_bb_nested"])


def test_overdispersion_matches_performance(fits):
    ref = REF["fits"]
    check = evalmix.check_overdispersion(fits["sim_binom"])
    # performance::check_overdispersion: sum of squared Pearson residuals on df.residual
    assert check.chisq == pytest.approx(ref["sim_binom"]["pearson_chisq"], rel=1e-4)
    assert check.df_residual == ref["sim_binom"]["rdf"] == 595
    assert check.ratio == pytest.approx(ref["sim_binom"]["pearson_chisq"] / 595, rel=1e-4)
    assert check.p_value == pytest.approx(stats.chi2.sf(ref["sim_binom"]["pearson_chisq"], 595),
                                          rel=1e-3)
    lrt = 2 * (ref["sim_bb"]["loglik"] - ref["sim_binom"]["loglik"])
    assert check.lrt_statistic == pytest.approx(lrt, abs=1e-3)
    assert check.lrt_p_value == pytest.approx(0.5 * stats.chi2.sf(lrt, 1), rel=1e-3, abs=1e-300)
    assert check.phi == pytest.approx(ref["sim_bb"]["dispersion"], rel=1e-3)
    assert check.verdict().startswith("overdispersion detected (ratio 2.18")
    frame = check.to_frame()
    assert frame["check"].tolist() == ["Pearson dispersion", "LRT binomial vs beta-binomial"]
    # from the beta-binomial fit, the binomial one is refitted: the same check
    again = evalmix.check_overdispersion(fits["sim_bb"])
    assert again.chisq == pytest.approx(check.chisq, rel=1e-8)
    assert again.lrt_statistic == pytest.approx(check.lrt_statistic, abs=1e-6)


@pytest.mark.shared
def test_overdispersion_ai4math(ai_fits):
    ref = REF["fits"]["ai_binom"]
    check = evalmix.check_overdispersion(ai_fits["ai_binom"])
    assert check.chisq == pytest.approx(ref["pearson_chisq"], rel=1e-4)
    assert check.df_residual == ref["rdf"]
    lrt = 2 * (REF["fits"]["ai_bb"]["loglik"] - ref["loglik"])
    assert check.lrt_statistic == pytest.approx(lrt, abs=1e-3)
    assert check.p_value < 1e-10 and check.lrt_p_value < 1e-10


def test_no_overdispersion_in_binomial_data():
    rng = np.random.default_rng(11)
    item = np.repeat(np.arange(60), 2)
    model = np.tile(["a", "b"], 60)
    mu = 1 / (1 + np.exp(-(0.5 * (model == "b") + rng.normal(0, 0.8, 60)[item])))
    d = pd.DataFrame({"item": item, "model": model, "n": 12, "k": rng.binomial(12, mu)})
    check = evalmix.check_overdispersion(evalmix.glmmtmb(f"{BB} ~ model + (1|item)", d, "binomial"))
    # conditional Pearson residuals with two rows per item: the random intercepts take up part
    # of the binomial spread, so the ratio is below 1, far from overdispersion
    assert check.ratio < 1.0
    assert check.p_value > 0.05 and check.lrt_p_value > 0.05
    assert check.verdict().startswith("no overdispersion detected")


def test_emmeans_and_contrasts_match_r(fits):
    fit = fits["sim_beta"]
    ref = REF["emmeans_sim_beta"]
    means = evalmix.emmeans(fit, "model", type="response")
    # a beta fit's inverse link is a mean score, not a probability, and is labelled so
    assert means.scale == "mean score" and "scale: mean score" in str(means)
    assert evalmix.emmeans(fits["sim_bb"], "model", type="response").scale == "probability"
    em = means.to_frame()
    assert em["model"].astype(str).tolist() == ref["model"]
    np.testing.assert_allclose(em["estimate"], ref["response"], rtol=1e-4)
    np.testing.assert_allclose(em["se"], ref["se"], rtol=1e-3)
    pw = REF["pairwise_sim_beta"]
    ct = evalmix.contrast(evalmix.emmeans(fit, "model"), "pairwise", adjust="none").to_frame()
    assert ct["contrast"].tolist() == pw["contrast"]
    np.testing.assert_allclose(ct["estimate"], pw["estimate"], atol=1e-3)
    np.testing.assert_allclose(ct["se"], pw["se"], rtol=1e-3)
    # emmeans tests a glmmTMB fit with t on df.residual (594 df here), and so does evalmix
    # (summary(glmmTMB)'s coefficient table keeps z, as fit.coef_table() does)
    assert (ct["df"] == fit.df_resid).all()
    np.testing.assert_allclose(ct["p_value"], pw["p_value"], rtol=1e-2)


def test_anova_and_compare_models(fits):
    fit = fits["sim_beta"]
    tab = evalmix.anova(fit).to_frame().set_index("term")
    b = fit.fixef.to_numpy()[1:]
    V = fit.vcov.to_numpy()[1:, 1:]
    assert tab.loc["model", "statistic"] == pytest.approx(float(b @ np.linalg.solve(V, b)), rel=1e-10)
    assert tab.loc["model", "df"] == 3
    cmp = evalmix.compare_models({"item": fit, "item + item:run": fits["sim_beta_nested"]})
    lrt = cmp.lrt.set_index("name").loc["item + item:run"]
    ref = REF["fits"]
    assert lrt["statistic"] == pytest.approx(
        2 * (ref["sim_beta_nested"]["loglik"] - ref["sim_beta"]["loglik"]), abs=1e-3)
    assert lrt["df_diff"] == 1 and bool(lrt["nested"])
    with pytest.raises(ValueError, match="different likelihoods"):
        evalmix.compare_models([fit, fits["sim_bb"]])


def test_binomial_family_matches_glmer(fits):
    """The binomial family's Laplace likelihood is glmer's (nAGQ = 1)."""
    glmer = evalmix.glmer(f"{BB} ~ model + (1|item)", SIM)
    fit = fits["sim_binom"]
    assert fit.loglik == pytest.approx(glmer.loglik, abs=1e-5)
    np.testing.assert_allclose(fit.fixef.to_numpy(), glmer.fixef.to_numpy(), atol=1e-4)
    # lme4's finite-difference Hessian differs from glmmTMB's by a few parts in a thousand
    np.testing.assert_allclose(np.sqrt(np.diag(fit.vcov)), np.sqrt(np.diag(glmer.vcov)), rtol=5e-3)


def test_response_forms_agree(fits):
    ref = fits["sim_bb"]
    failures = SIM.assign(f=SIM["n"] - SIM["k"])
    by_failures = evalmix.glmmtmb("cbind(k, f) ~ model + (1|item)", failures, "betabinomial")
    prop = SIM.assign(p=SIM["k"] / SIM["n"])
    by_weights = evalmix.glmmtmb("p ~ model + (1|item)", prop, "betabinomial", weights="n")
    for other in (by_failures, by_weights):
        assert other.loglik == pytest.approx(ref.loglik, abs=1e-8)
        np.testing.assert_allclose(other.fixef.to_numpy(), ref.fixef.to_numpy(), atol=1e-6)
    # the refit of check_overdispersion reads the rows fitted, not later edits of the frame
    prop["p"] = 0.5
    check = evalmix.check_overdispersion(by_weights)
    assert check.chisq == pytest.approx(REF["fits"]["sim_binom"]["pearson_chisq"], rel=1e-4)


def test_scores_at_zero_or_one_are_refused_or_squeezed():
    d = SIM.copy()
    d.loc[[3, 17], "score"] = [0.0, 1.0]
    with pytest.raises(DataError, match=r"'score' is exactly 0 or 1 in rows 3, 17.*squeeze=True"):
        evalmix.glmmtmb("score ~ model + (1|item)", d, "beta")
    fit = evalmix.glmmtmb("score ~ model + (1|item)", d, "beta", squeeze=True)
    n = len(d)
    manual = evalmix.glmmtmb("s ~ model + (1|item)", d.assign(s=(d["score"] * (n - 1) + 0.5) / n), "beta")
    assert fit.loglik == pytest.approx(manual.loglik, abs=1e-8)
    assert evalmix.tmb.squeeze_scores([0.0, 1.0]).tolist() == [0.25, 0.75]
    with pytest.raises(DataError, match=r"rows 5 are outside"):
        evalmix.glmmtmb("score ~ model + (1|item)", d.assign(score=d["score"].where(d.index != 5, 1.5)),
                        "beta", squeeze=True)


def test_factorisations_agree(fits, monkeypatch):
    """The diagonal Schur complement of the nested fit, the dense one, and SciPy's sparse LU of H
    (past DENSE_MAX) give the same Laplace objective and modes at the estimates."""
    from evalmix import intercepts
    from evalmix.tmb import model as tmb_model
    from evalmix.tmb.design import build_tmb_design

    fit = fits["sim_beta_nested"]
    design = build_tmb_design("score ~ model + (1|item) + (1|item:run)", SIM, family="beta")
    groups = [t.index for t in design.terms]
    nl = [t.nl for t in design.terms]
    par = np.concatenate([fit.fixef.to_numpy(),
                          np.log(fit.varcorr.set_index("group").loc[[t.group for t in design.terms], "sd"]),
                          [np.log(fit.dispersion)]])
    nested = tmb_model.LaplaceModel(design.response, design.X, design.offset, groups, nl)
    monkeypatch.setattr(intercepts, "NESTED_FAST", False)
    schur = tmb_model.LaplaceModel(design.response, design.X, design.offset, groups, nl)
    monkeypatch.setattr(intercepts, "DENSE_MAX", 10)
    lu = tmb_model.LaplaceModel(design.response, design.X, design.offset, groups, nl)
    assert schur.qr == 50 and lu.qr > intercepts.DENSE_MAX
    for m in (nested, schur, lu):
        assert m.nll(par) == pytest.approx(-fit.loglik, abs=1e-8)
    np.testing.assert_allclose(lu.u, nested.u, atol=1e-8)
    np.testing.assert_allclose(schur.u, nested.u, atol=1e-8)


def test_errors_name_the_fault(fits):
    with pytest.raises(FormulaError, match=r"random term \(model \| item\)"):
        evalmix.glmmtmb("score ~ model + (model|item)", SIM, "beta")
    with pytest.raises(FormulaError, match="cbind"):
        evalmix.glmmtmb(f"{BB} ~ model + (1|item)", SIM, "beta")
    with pytest.raises(FormulaError, match="no random term"):
        evalmix.glmmtmb("score ~ model", SIM, "beta")
    with pytest.raises(FormulaError, match="'nope'"):
        evalmix.glmmtmb("nope ~ model + (1|item)", SIM, "beta")
    with pytest.raises(ArgumentError, match="family"):
        evalmix.glmmtmb("score ~ model + (1|item)", SIM, "gaussian")
    with pytest.raises(ArgumentError, match="weights"):
        evalmix.glmmtmb("score ~ model + (1|item)", SIM, "beta", weights="n")
    with pytest.raises(DataError, match=r"one trial per row"):
        evalmix.glmmtmb("y ~ model + (1|item)", SIM.assign(y=SIM["k"] > 5), "betabinomial")
    with pytest.raises(DataError, match=r"rows 2 are not \(k = 11 of n = 10\)"):
        evalmix.glmmtmb(f"{BB} ~ model + (1|item)", SIM.assign(k=SIM["k"].where(SIM.index != 2, 11)),
                        "betabinomial")
    with pytest.raises(DataError, match="must be numeric"):
        evalmix.glmmtmb("score ~ model + (1|item)", SIM.assign(score="x"), "beta")
    with pytest.raises(ArgumentError, match="binomial GLMM"):
        evalmix.check_overdispersion(fits["sim_beta"])
    binary = SIM.assign(y=(SIM["k"] > 5).astype(int))
    with pytest.raises(DataError, match="one trial per row"):
        evalmix.check_overdispersion(evalmix.glmmtmb("y ~ model + (1|item)", binary, "binomial"))
    with pytest.warns(evalmix.DataWarning, match="dropping 1 row"):
        fit = evalmix.glmmtmb("score ~ model + (1|item)",
                              SIM.assign(score=SIM["score"].where(SIM.index != 0)), "beta")
    assert fit.nobs == 599


def test_print_and_tables(fits):
    fit = fits["sim_beta"]
    text = str(fit)
    assert text.startswith(" Family: beta  ( logit )\nFormula:          score ~ model + (1|item)")
    for piece in ("item   (Intercept) 0.7923   0.8901", "Number of obs: 600, groups:  item, 50",
                  "Dispersion parameter for beta family (): 9.84", "modelm4       1.3326",
                  # glmmTMB's printCoefmat: estimates and SEs to one number of decimals, R's p-values
                  "0.07844  16.988  < 2e-16 ***"):
        assert piece in text, piece
    assert "Dispersion parameter" not in str(fits["sim_binom"])
    tab = fit.to_frame()
    assert list(tab.columns) == ["term", "estimate", "se", "statistic", "p_value", "conf_low", "conf_high"]
    assert "modelm4" in fit.to_latex() and "| modelm4" in fit.to_markdown()
    assert list(fit.summary().tables) == ["Fixed effects", "Random effects"]
    assert fit.ranef().groupby("group").size().to_dict() == {"item": 50}
    assert fit.residuals("response") == pytest.approx(fit.observed - fit.fitted)
    assert isinstance(fit, evalmix.fitted.MixedFit)


def test_offset_names_the_user_rows_and_sits_at_its_mean():
    from evalmix.tmb.design import build_tmb_design

    d = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "model": list("ababab"),
                      "score": [0.2, 0.4, np.nan, 0.5, 0.6, 0.7], "t": [1.0, 2.0, 1.0, 4.0, 0.0, 1.0]},
                     index=[10, 11, 12, 13, 14, 15])
    # row 12 is incomplete and left out; the bad offset is in the user's row 14
    with (pytest.raises(DataError, match=r"offset is not finite in rows 14"), np.errstate(divide="ignore"),
          pytest.warns(DataWarning, match="dropping 1 row")):
        build_tmb_design("score ~ model + offset(log(t)) + (1|item)", d, family="beta")
    with pytest.warns(DataWarning, match="dropping 1 row"):
        design = build_tmb_design("score ~ model + offset(log(t)) + (1|item)", d.assign(t=d["t"] + 1.0),
                                  family="beta")
    np.testing.assert_allclose(design.offset, np.log([2.0, 3.0, 5.0, 1.0, 2.0]), rtol=1e-15)
    assert design.fixed.offset_mean == pytest.approx(np.log([2.0, 3.0, 5.0, 1.0, 2.0]).mean(), rel=1e-15)
