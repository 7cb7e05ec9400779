"""evalmix.lmer against lme4, lmerTest, pbkrtest and emmeans (tests/reference/lmer_reference.R).

Tolerances are the GLMM parity ones: log-likelihood >= R's - 1e-3, fixed effects 2e-3 relative
(absolute for |beta| < 1e-2), standard errors and degrees of freedom 1% relative; p-values and
interval ends follow from those and are checked at 1% relative (or 1e-6 absolute for tiny p).
"""

from __future__ import annotations

import functools
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import DataError, FormulaError
from evalmix.lmm import build_lmm_design

REF = Path(__file__).parents[1] / "reference"
R = json.loads((REF / "lmer_reference.json").read_text())

CASES = {
    "sleepstudy_reml": ("Reaction ~ Days + (Days|Subject)", "lmer_sleepstudy.csv", True),
    "sleepstudy_ml": ("Reaction ~ Days + (Days|Subject)", "lmer_sleepstudy.csv", False),
    "sleepstudy_uncorrelated": ("Reaction ~ Days + (Days||Subject)", "lmer_sleepstudy.csv", True),
    "insteval": ("y ~ service + (1|s) + (1|d)", "lmer_insteval.csv", True),
    "judges": ("rating ~ model + (1|item) + (1|item:run)", "lmer_judges.csv", True),
}
SE_TOL = DF_TOL = 0.01


def _data(csv: str) -> pd.DataFrame:
    return pd.read_csv(REF / csv, dtype={"s": str, "d": str, "service": str})


@pytest.fixture(scope="module")
def fits() -> dict:
    out = {}
    for key, (formula, csv, reml) in CASES.items():
        out[key] = evalmix.lmer(formula, _data(csv), REML=reml)
    return out


def _close_beta(ours: np.ndarray, ref: np.ndarray) -> None:
    ref = np.asarray(ref, dtype=float)
    tol = np.where(np.abs(ref) < 1e-2, 2e-3, 2e-3 * np.abs(ref))
    assert np.all(np.abs(ours - ref) <= tol), (ours, ref)


def _labels(ref: pd.DataFrame, spec: str) -> list[str]:
    # emmeans prefixes levels that look like numbers with the factor's name ("service1"), as evalmix
    return list(ref["contrast"])


def _close_p(ours: np.ndarray, ref: np.ndarray) -> None:
    np.testing.assert_allclose(ours, np.asarray(ref, dtype=float), rtol=0.01, atol=1e-6)


@pytest.mark.parametrize("key", list(CASES))
def test_fit_matches_lme4(fits, key):
    fit, r = fits[key], R[key]
    assert fit.loglik >= r["loglik"] - 1e-3
    assert abs(fit.loglik - r["loglik"]) < 1e-3
    _close_beta(fit.fixef.to_numpy(), list(r["fixef"].values()))
    np.testing.assert_allclose(np.sqrt(np.diag(fit.vcov.to_numpy())), list(r["se"].values()),
                               rtol=SE_TOL)
    np.testing.assert_allclose(fit.theta.to_numpy(), r["theta"], rtol=2e-3, atol=2e-4)
    np.testing.assert_allclose(fit.sigma, r["sigma"], rtol=1e-3)
    np.testing.assert_allclose([fit.aic, fit.bic], [r["aic"], r["bic"]], rtol=0, atol=2e-3)
    if r["reml"]:
        np.testing.assert_allclose(fit.remlcrit, r["remlcrit"], rtol=0, atol=2e-3)
    else:
        np.testing.assert_allclose(fit.deviance, r["deviance"], rtol=0, atol=2e-3)
    assert fit.nobs == r["nobs"]
    assert fit.ngroups == {k: int(v) for k, v in r["ngrps"].items()}
    vc = pd.DataFrame(r["varcorr"])
    # lme4 names the second term of (x||g) "g.1"; evalmix keeps the grouping factor's name
    vc["group"] = vc["group"].str.replace(r"\.\d+$", "", regex=True)
    assert fit.varcorr[["group", "var1", "var2"]].values.tolist() == \
        vc[["group", "var1", "var2"]].values.tolist()
    np.testing.assert_allclose(fit.varcorr["sd"], vc["sd"], rtol=2e-3, atol=1e-4)
    np.testing.assert_allclose(fit.fitted()[:5], r["fitted_head"], rtol=1e-4)
    modes = fit.ranef()
    for group, head in r["ranef_head"].items():
        ours = modes[(modes["group"] == group)]["mode"].to_numpy()[:5]
        np.testing.assert_allclose(ours, head, rtol=2e-3, atol=1e-3 * np.abs(head).max())


@pytest.mark.parametrize("key", list(CASES))
def test_satterthwaite_matches_lmertest(fits, key):
    fit, r = fits[key], R[key]
    ours = fit.coef_table()
    ref = pd.DataFrame(r["satterthwaite"])
    np.testing.assert_allclose(ours["df"], ref["df"], rtol=DF_TOL)
    np.testing.assert_allclose(ours["se"], ref["se"], rtol=SE_TOL)
    np.testing.assert_allclose(ours["statistic"], ref["statistic"], rtol=SE_TOL)
    _close_p(ours["p_value"], ref["p_value"])
    a = evalmix.anova(fit).to_frame()
    ra = pd.DataFrame(r["anova_satterthwaite"])
    assert a["term"].tolist() == ra["term"].tolist()
    np.testing.assert_allclose(a["statistic"], ra["statistic"], rtol=SE_TOL)
    np.testing.assert_array_equal(a["df1"], ra["num_df"])
    np.testing.assert_allclose(a["df2"], ra["den_df"], rtol=DF_TOL)
    _close_p(a["p_value"], ra["p_value"])


@pytest.mark.parametrize("key", [k for k, (_, _, reml) in CASES.items() if reml])
def test_kenward_roger_matches_pbkrtest(fits, key):
    fit, r = fits[key], R[key]
    ours = fit.coef_table(ddf="Kenward-Roger")
    ref = pd.DataFrame(r["kenward_roger"])
    np.testing.assert_allclose(ours["df"], ref["df"], rtol=DF_TOL)
    np.testing.assert_allclose(ours["se"], ref["se"], rtol=SE_TOL)
    _close_p(ours["p_value"], ref["p_value"])
    np.testing.assert_allclose(fit.df_method("KR").vcov, np.array(r["vcov_kr"]), rtol=0.01)
    a = evalmix.anova(fit, ddf="Kenward-Roger").to_frame()
    ra = pd.DataFrame(r["anova_kenward_roger"])
    np.testing.assert_allclose(a["statistic"], ra["statistic"], rtol=SE_TOL)
    np.testing.assert_allclose(a["df2"], ra["den_df"], rtol=DF_TOL)
    _close_p(a["p_value"], ra["p_value"])


def test_anova_tests_lmertest_s_hypotheses_in_any_coding():
    # lmerTest's type III hypotheses (evalmix.lmm.hypotheses) do not depend on the coding; terms
    # that are not plain variables keep car's rows with a warning:
    # tests/lmm/test_lmer_type3_hypotheses.py
    d = _data("lmer_judges.csv").assign(half=lambda x: np.where(x["item"] < "q21", "a", "b"))
    fit = evalmix.lmer("rating ~ model * half + (1|item)", d)
    summed = evalmix.lmer("rating ~ model * half + (1|item)", d,
                          contrasts={"model": "sum", "half": "sum"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        treated, table = evalmix.anova(fit).to_frame(), evalmix.anova(summed).to_frame()
    assert table["term"].tolist() == ["model", "half", "model:half"]
    assert table["df1"].tolist() == [3, 1, 3]
    pd.testing.assert_frame_equal(treated, table, rtol=1e-5)


def test_kenward_roger_of_an_ml_fit_is_its_reml_refit_s(fits):
    # pbkrtest refits an ML fit by REML (lmerTest refuses it): tests/lmm/test_lmer_anova_tests.py
    ml = fits["sleepstudy_ml"].coef_table(ddf="Kenward-Roger").to_frame()
    reml = fits["sleepstudy_reml"].coef_table(ddf="Kenward-Roger").to_frame()
    pd.testing.assert_frame_equal(ml, reml, rtol=1e-6)
    with pytest.raises(ValueError, match="ddf='bogus'"):
        fits["sleepstudy_reml"].coef_table(ddf="bogus")


def test_contest_matches_lmertest(fits):
    ref = R["sleepstudy_reml"]["contest_days"][0]
    out = fits["sleepstudy_reml"].contest([[0.0, 1.0]]).to_frame().iloc[0]
    np.testing.assert_allclose(out["statistic"], ref["F value"], rtol=SE_TOL)
    np.testing.assert_allclose(out["df2"], ref["DenDF"], rtol=DF_TOL)
    _close_p(out["p_value"], ref["Pr(>F)"])


_EMM = [(key, spec, ddf) for key, spec in (("judges", "model"), ("insteval", "service"))
        for ddf in ("satterthwaite", "kenward_roger")]


@pytest.mark.parametrize("key,spec,ddf", _EMM)
def test_emmeans_match_r(fits, key, spec, ddf):
    fit = fits[key]
    ref = R[key][f"emm_{ddf}"]
    emm = evalmix.emmeans(fit, spec, ddf=ddf.replace("_", "-"))
    t = emm.to_frame()
    re_ = pd.DataFrame(ref["emmeans"])
    assert t[spec].astype(str).tolist() == re_[spec].tolist()
    _close_beta(t["estimate"].to_numpy(), re_["emmean"])
    np.testing.assert_allclose(t["se"], re_["SE"], rtol=SE_TOL)
    np.testing.assert_allclose(t["df"], re_["df"], rtol=DF_TOL)
    np.testing.assert_allclose(t["conf_low"], re_["lower.CL"], rtol=2e-3)
    np.testing.assert_allclose(t["conf_high"], re_["upper.CL"], rtol=2e-3)


@pytest.fixture(scope="module")
def pairwise(fits):
    """``pairwise(key, spec, ddf, adjust)``: the pairwise contrasts' table, made once per module
    (a Tukey adjustment with finite df takes most of a second: the studentized range quantile)."""

    @functools.cache
    def table(key: str, spec: str, ddf: str, adjust: str) -> pd.DataFrame:
        emm = evalmix.emmeans(fits[key], spec, ddf=ddf.replace("_", "-"))
        return evalmix.contrast(emm, "pairwise", adjust=adjust).to_frame()

    return table


@pytest.mark.parametrize("adjust", ["tukey", "holm", "none", "bonferroni", "sidak"])
@pytest.mark.parametrize("key,spec,ddf", _EMM)
def test_pairwise_contrasts_match_emmeans(pairwise, key, spec, ddf, adjust):
    ref = pd.DataFrame(R[key][f"emm_{ddf}"][f"pairs_{adjust}"])
    con = pairwise(key, spec, ddf, adjust).copy()
    assert con["contrast"].tolist() == _labels(ref, spec)
    _close_beta(con["estimate"].to_numpy(), ref["estimate"])
    np.testing.assert_allclose(con["se"], ref["SE"], rtol=SE_TOL)
    np.testing.assert_allclose(con["df"], ref["df"], rtol=DF_TOL)
    np.testing.assert_allclose(con["statistic"], ref["t.ratio"], rtol=SE_TOL)
    _close_p(con["p_adjusted"], ref["p.value"])
    width = (ref["upper.CL"] - ref["lower.CL"]).to_numpy()
    np.testing.assert_allclose(con["conf_high"] - con["conf_low"], width, rtol=2e-3)


@pytest.mark.parametrize("key,spec,ddf", _EMM)
def test_dunnettx_matches_emmeans(fits, key, spec, ddf):
    emm = evalmix.emmeans(fits[key], spec, ddf=ddf.replace("_", "-"))
    ref = pd.DataFrame(R[key][f"emm_{ddf}"]["trt_vs_ctrl_dunnettx"])
    con = evalmix.contrast(emm, "trt.vs.ctrl", adjust="dunnettx").to_frame()
    assert con["contrast"].tolist() == _labels(ref, spec)
    _close_p(con["p_adjusted"], ref["p.value"])
    # emmeans finds the Dunnett quantile to 5e-4 (uniroot's tolerance)
    np.testing.assert_allclose(con["conf_low"], ref["lower.CL"], rtol=0, atol=2e-3)


@pytest.mark.parametrize("key,spec,ddf", _EMM)
def test_mvt_matches_emmeans(fits, key, spec, ddf):
    emm = evalmix.emmeans(fits[key], spec, ddf=ddf.replace("_", "-"))
    ref = pd.DataFrame(R[key][f"emm_{ddf}"]["trt_vs_ctrl_mvt"])
    con = evalmix.contrast(emm, "trt.vs.ctrl", adjust="mvt").to_frame()
    assert con["contrast"].tolist() == _labels(ref, spec)
    # mvtnorm integrates by randomised quasi-Monte Carlo to an absolute error of 1e-3
    np.testing.assert_allclose(con["p_adjusted"], ref["p.value"], rtol=0, atol=2e-3)
    np.testing.assert_allclose(con["conf_low"], ref["lower.CL"], rtol=0,
                               atol=5e-3 * float(np.max(ref["SE"])))


def test_mvt_with_finite_df_is_between_bonferroni_and_none(fits, pairwise):
    emm = evalmix.emmeans(fits["judges"], "model")
    # an lmer's marginal means take Satterthwaite's df by default: the contrasts of the tests above
    pd.testing.assert_frame_equal(emm.to_frame(), evalmix.emmeans(fits["judges"], "model",
                                                                  ddf="satterthwaite").to_frame())
    p = {a: pairwise("judges", "model", "satterthwaite", a)["p_adjusted"].to_numpy()
         for a in ("tukey", "bonferroni", "none")}
    p["mvt"] = evalmix.contrast(emm, "pairwise", adjust="mvt").to_frame()["p_adjusted"].to_numpy()
    # all pairwise differences: the exact multivariate t equals Tukey's studentized range
    np.testing.assert_allclose(p["mvt"], p["tukey"], rtol=0.02, atol=2e-4)
    assert np.all(p["mvt"] <= p["bonferroni"] + 1e-9) and np.all(p["mvt"] >= p["none"] - 1e-9)


def test_compare_models_refits_reml_with_ml():
    d = _data("lmer_judges.csv")
    full = evalmix.lmer("rating ~ model + (1|item) + (1|item:run)", d)
    null = evalmix.lmer("rating ~ 1 + (1|item) + (1|item:run)", d)
    ref = pd.DataFrame(R["judges"]["lrt"])
    lrt = evalmix.compare_models({"null": null, "full": full}).lrt
    np.testing.assert_allclose(lrt["loglik"], ref["loglik"], rtol=0, atol=1e-3)
    np.testing.assert_allclose(lrt["aic"], ref["aic"], rtol=0, atol=2e-3)
    np.testing.assert_allclose(lrt["statistic"].iloc[1], ref["statistic"].iloc[1], rtol=1e-4)
    assert lrt["df_diff"].iloc[1] == 3


def test_compare_models_refuses_lmer_against_glmer():
    d = _data("lmer_judges.csv").assign(good=lambda x: (x["rating"] >= 7).astype(int))
    lin = evalmix.lmer("rating ~ model + (1|item)", d)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        bin_ = evalmix.glmer("good ~ model + (1|item)", d)
    with pytest.raises(ValueError, match="different likelihoods"):
        evalmix.compare_models({"lmer": lin, "glmer": bin_})


def test_binomial_inference_keeps_z():
    runs = evalmix.simulate.glmm_runs(3, 40, 3, rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", evalmix.SingularFitWarning)
        fit = evalmix.glmer("correct ~ model + (1|item) + (1|item:run)", runs)
    emm = evalmix.emmeans(fit, "model")
    assert "df" not in emm.to_frame().columns
    con = evalmix.contrast(emm, "pairwise").to_frame()
    assert "df" not in con.columns
    assert evalmix.anova(fit).to_frame().columns.tolist() == ["term", "statistic", "df", "p_value"]
    with pytest.raises(ValueError, match="asymptotic z"):
        evalmix.emmeans(fit, "model", ddf="Kenward-Roger")


def test_print_and_summary_read_like_lme4(fits):
    fit = fits["sleepstudy_reml"]
    text = repr(fit)
    assert text.startswith("Linear mixed model fit by REML")
    assert "REML criterion at convergence: 1743.628" in text
    assert "Number of obs: 180, groups:  Subject, 18" in text
    s = fit.summary()
    assert list(s.tables) == ["Fixed effects", "Random effects"]
    assert s.to_frame()["df"].round(2).tolist() == [17.0, 17.0]
    ml = repr(fits["sleepstudy_ml"])
    assert "maximum likelihood" in ml and "1763.939" in ml
    json.dumps(fit.to_dict())


def test_residuals_add_up(fits):
    fit = fits["judges"]
    d = _data("lmer_judges.csv")
    np.testing.assert_allclose(fit.fitted() + fit.residuals(), d["rating"].to_numpy(), atol=1e-10)


def test_refit_ml_matches_ml_fit(fits):
    ml = fits["sleepstudy_reml"].refit_ml()
    assert not ml.reml
    np.testing.assert_allclose(ml.loglik, R["sleepstudy_ml"]["loglik"], atol=1e-3)


def test_nested_sparse_and_dense_paths_agree(monkeypatch):
    """(1|item) + (1|item:run) takes the O(q) nested path; the scalar-intercept factorisation of
    evalmix.intercepts and the general dense and sparse ones give the same fit."""
    import evalmix.lmm.deviance as dv

    d = _data("lmer_judges.csv")
    formula = "rating ~ model + (1|item) + (1|item:run)"
    nested = evalmix.lmer(formula, d)
    assert nested._model.dev.nested is not None
    monkeypatch.setattr(dv, "_nested_intercepts", lambda design: None)
    scalar = evalmix.lmer(formula, d)
    assert scalar._model.dev.nested is None and scalar._model.dev.intercepts is not None
    monkeypatch.setattr(dv, "SCALAR_INTERCEPTS", False)
    dense = evalmix.lmer(formula, d)
    assert dense._model.dev.intercepts is None and dense._model.dev.dense
    monkeypatch.setattr(dv, "DENSE_Q_MAX", 1)
    sparse_fit = evalmix.lmer(formula, d)
    assert not sparse_fit._model.dev.dense and not sparse_fit._model.dev.has_gradient
    for other in (scalar, dense, sparse_fit):
        assert abs(other.loglik - nested.loglik) < 1e-6
        np.testing.assert_allclose(other.fixef, nested.fixef, rtol=1e-6)
        np.testing.assert_allclose(other.coef_table()["df"], nested.coef_table()["df"], rtol=1e-4)


def test_bad_input_names_the_fault():
    d = _data("lmer_judges.csv")
    with pytest.raises(FormulaError, match="'score'"):
        evalmix.lmer("score ~ model + (1|item)", d)
    with pytest.raises(FormulaError, match="no random term"):
        evalmix.lmer("rating ~ model", d)
    with pytest.raises(DataError, match="'rating' must be numeric"):
        evalmix.lmer("rating ~ model + (1|item)", d.assign(rating=d["rating"].astype(str) + "x"))
    with pytest.raises(DataError, match="'rating' is constant"):
        evalmix.lmer("rating ~ model + (1|item)", d.assign(rating=5.0))
    with pytest.raises(DataError, match="it holds booleans"):
        evalmix.lmer("rating ~ model + (1|item)", d.assign(rating=d["rating"] > 5))
    with pytest.raises(DataError, match="fewer levels than rows"):
        evalmix.lmer("rating ~ 1 + (1|row)", d.assign(row=np.arange(len(d))))
    with pytest.raises(FormulaError, match="cbind"):
        evalmix.lmer("cbind(rating, run) ~ 1 + (1|item)", d)
    with pytest.raises(DataError, match="DataFrame or a path"):
        evalmix.lmer("rating ~ 1 + (1|item)", [1, 2, 3])
    with pytest.warns(evalmix.DataWarning, match="dropping 1 row"):
        build_lmm_design("rating ~ model + (1|item)", d.assign(
            rating=d["rating"].where(d.index != 3)))


def _central(dev, theta: np.ndarray, reml: bool, h: float = 1e-5) -> np.ndarray:
    return np.array([(dev(theta + h * e, reml) - dev(theta - h * e, reml)) / (2 * h)
                     for e in np.eye(theta.size)])


EXTRA = {"judges_item": "rating ~ model + (1|item)", "judges_crossed": "rating ~ 1 + (1|item) + (1|model)"}


@pytest.mark.parametrize("key", ["sleepstudy_reml", "sleepstudy_uncorrelated", "judges", "insteval",
                                 "judges_item", "judges_crossed"])
@pytest.mark.parametrize("reml", [True, False])
def test_exact_gradient_matches_central_differences(key, reml):
    """The analytic gradient of the profiled criterion against central differences (h = 1e-5,
    truncation and rounding about 1e-7 relative): sleepstudy's correlated and uncorrelated slopes
    (dense Cholesky path), the nested judges design (O(q) nested path, and the dense path with
    the nesting ignored), InstEval's crossed intercepts and the judges' items crossed with their
    models (evalmix.intercepts' Schur complement, on rows and on replicated cells) and the
    judges' items alone (a diagonal A), at a theta away from the optimum, at lme4's optimum and with the first diagonal
    of Lambda at 0."""
    import evalmix.lmm.deviance as dv

    formula, csv, _ = CASES[key] if key in CASES else (EXTRA[key], "lmer_judges.csv", True)
    design = build_lmm_design(formula, _data(csv))
    devs = [dv.ProfiledDeviance(design)]
    if devs[0].nested is not None:
        dense = dv.ProfiledDeviance(design)
        dense.nested = None
        devs.append(dense)
    rng = np.random.default_rng(3)
    at = [design.theta_start + rng.uniform(0.1, 0.5, design.theta_start.size),
          np.asarray(R[key]["theta"], dtype=float) if key in R else design.theta_start * 0.8]
    at.append(np.where(np.arange(at[0].size) == 0, 0.0, at[0]))  # a variance at its bound
    for dev in devs:
        assert dev.has_gradient
        for theta in at:
            value, grad = dev.value_and_gradient(theta, reml)
            assert value == pytest.approx(dev(theta, reml), rel=1e-14)
            np.testing.assert_allclose(grad, _central(dev, theta, reml), rtol=1e-6, atol=2e-5)


def test_zero_variance_start_is_left_when_the_criterion_falls():
    """The criterion is even in a diagonal theta (a column of Lambda turned over leaves Lambda
    Lambda'), so theta = 0 has a zero gradient; with a bound at 0 the ML null model of the judges
    data stopped there on the first L-BFGS-B step.  The fit reaches lme4's interior optimum."""
    d = _data("lmer_judges.csv")
    null = evalmix.lmer("rating ~ 1 + (1|item) + (1|item:run)", d, REML=False)
    assert not null.singular and null.theta.iloc[0] > 0.1
    ref = pd.DataFrame(R["judges"]["lrt"])
    assert null.loglik == pytest.approx(ref["loglik"].iloc[0], abs=1e-6)
    # the symmetry the optimiser relies on, on a correlated term: turning over the first column
    # of sleepstudy's 2 x 2 Lambda (theta 1 and 2) leaves the criterion
    design = build_lmm_design(*CASES["sleepstudy_reml"][:1], _data("lmer_sleepstudy.csv"))
    dev = evalmix.lmm.ProfiledDeviance(design)
    theta = np.array([0.9, 0.2, 0.3])
    assert dev(theta * [-1, -1, 1]) == pytest.approx(dev(theta), rel=1e-12)
    assert dev(theta * [1, 1, -1]) == pytest.approx(dev(theta), rel=1e-12)
    assert dev(theta * [1, -1, 1]) != pytest.approx(dev(theta), rel=1e-6)


def test_exact_gradient_takes_few_evaluations():
    fit = evalmix.lmer("rating ~ model + (1|item) + (1|item:run)", _data("lmer_judges.csv"))
    assert fit.optimizer.feval <= 20


def test_singular_fit_lands_on_the_boundary():
    """No group variance in the data: the REML optimum is theta = 0 (lme4's bobyqa lands there
    exactly), reported as singular; the criterion there is below its values off the boundary."""
    rng = np.random.default_rng(5)
    d = pd.DataFrame({"g": np.repeat(np.arange(30), 5), "x": rng.normal(size=150)})
    d["y"] = 1 + 0.5 * d["x"] + rng.normal(size=150)
    with pytest.warns(evalmix.SingularFitWarning):
        fit = evalmix.lmer("y ~ x + (1|g)", d)
    assert fit.singular and fit.theta.iloc[0] == 0.0 and fit.optimizer.converged
    dev = fit._model.dev
    assert fit.remlcrit == pytest.approx(dev(np.array([0.0])), abs=1e-9)
    assert all(dev(np.array([h])) > fit.remlcrit for h in (1e-3, 0.05, 0.2, 1.0))
    with pytest.warns(evalmix.SingularFitWarning):
        slope = evalmix.lmer("y ~ x + (x|g)", d)
    assert slope.singular and slope.theta.iloc[2] == 0.0


def test_crossed_intercepts_on_cells_match_the_dense_factorisation(monkeypatch):
    """(1|item) + (1|model) on the judges' data (3 runs of each item-model cell): evalmix.intercepts
    on the 160 cells weighted by their rows gives the fit of the dense Cholesky path on the rows."""
    import evalmix.lmm.deviance as dv

    d = _data("lmer_judges.csv")
    formula = "rating ~ 1 + (1|item) + (1|model)"
    cells = evalmix.lmer(formula, d)
    dev = cells._model.dev
    assert dev.intercepts is not None and dev._cell_rows.size == 160 and dev._cell_rows.sum() == len(d)
    monkeypatch.setattr(dv, "SCALAR_INTERCEPTS", False)
    dense = evalmix.lmer(formula, d)
    assert dense._model.dev.intercepts is None and dense._model.dev.dense
    theta = np.array([0.7, 0.4])
    assert dev(theta) == pytest.approx(dense._model.dev(theta), rel=1e-12)
    assert abs(cells.loglik - dense.loglik) < 1e-7
    np.testing.assert_allclose(cells.theta, dense.theta, rtol=1e-5)
    np.testing.assert_allclose(cells.coef_table()["df"], dense.coef_table()["df"], rtol=1e-4)
