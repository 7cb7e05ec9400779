"""evalmix.emmeans / evalmix.contrast against R's emmeans (tests/reference/inference_reference.R)."""

from __future__ import annotations

import json
from itertools import combinations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

from evalmix import multiplicity
from evalmix.inference.emmeans import contrast, emmeans, hdi, reference_grid
from evalmix.core.errors import FormulaError
from glm_standin import PosteriorStandIn, categorical, fit_from_reference, glm_fit

from conftest import REFERENCE

REF = json.loads((REFERENCE / "inference_reference.json").read_text())
GLM = REF["glm"]
FORMULA = "correct ~ model * lang + prompt + x"
CUSTOM = {"c1": [1, -1, 0, 0], "c2": [0.5, 0.5, -0.5, -0.5], "c3": [-1, 0, 0, 1]}


@pytest.fixture(scope="module")
def sim() -> pd.DataFrame:
    return categorical(pd.read_csv(REFERENCE / "inference_sim.csv"), GLM["fit"]["levels"])


@pytest.fixture(scope="module")
def fit(sim):
    return glm_fit(FORMULA, sim)


@pytest.fixture(scope="module")
def glmer_fits():
    data = pd.read_csv(REFERENCE / "inference_glmer_sim.csv")
    return {k: fit_from_reference(v, data) for k, v in REF["glmer_sim"]["fits"].items()}


def assert_matches(mine: pd.DataFrame, ref: list[dict], *, est_tol=1e-6, se_rtol=1e-5,
                   ci_rtol=1e-5, p_tol=1e-6, labels=()):
    """Compare a result table with R's rows: labels exactly, numbers at the given tolerances."""
    ref_df = pd.DataFrame(ref)
    assert len(mine) == len(ref_df)
    for col in labels:
        assert mine[col].astype(str).tolist() == ref_df[col].astype(str).tolist(), col
    np.testing.assert_allclose(mine["estimate"], ref_df["estimate"], atol=est_tol, rtol=0)
    np.testing.assert_allclose(mine["se"], ref_df["se"], rtol=se_rtol)
    scale = ref_df[["lower", "upper"]].abs().max(axis=1) + ref_df["se"]
    for col, mcol in (("lower", "conf_low"), ("upper", "conf_high")):  # relative to the size
        err = np.abs(mine[mcol].to_numpy() - ref_df[col].to_numpy())
        assert (err <= ci_rtol * scale + 1e-7).all(), (col, err.max())
    if "z" in ref_df:
        np.testing.assert_allclose(mine["statistic"], ref_df["z"], atol=est_tol * 10,
                                   rtol=se_rtol)
    if "p" in ref_df:
        np.testing.assert_allclose(mine["p_adjusted"], ref_df["p"].astype(float), atol=p_tol,
                                   rtol=0)


def test_standin_reproduces_r_glm(fit):
    """The statsmodels fit the tests use is R's glm() fit (beta, V, logLik)."""
    np.testing.assert_allclose(fit.fixef.to_numpy(), GLM["fit"]["beta"], atol=1e-8)
    np.testing.assert_allclose(fit.vcov.to_numpy(), np.array(GLM["fit"]["vcov"]), atol=1e-7)
    assert fit.loglik == pytest.approx(GLM["fit"]["loglik"], abs=1e-8)


EMM_CASES = {
    "model_link": dict(specs="model"),
    "model_by_lang_response": dict(specs="model", by="lang", type="response"),
    "lang_link": dict(specs="~ lang"),
    "model_lang_cells": dict(specs=["model", "lang"]),
    "model_at": dict(specs="model", at={"x": 1, "prompt": "ZS"}),
    "model_x_grid": dict(specs="model", at={"x": [-1, 0, 2]}),
    "model_weights_proportional": dict(specs="model", weights="proportional"),
    "model_weights_outer": dict(specs="model", weights="outer"),
    "model_weights_cells": dict(specs="model", weights="cells"),
    "model_weights_flat": dict(specs="model", weights="flat"),
}


@pytest.mark.parametrize("case", sorted(EMM_CASES))
def test_emmeans_matches_r(fit, case):
    kw = dict(EMM_CASES[case])
    specs = kw.pop("specs")
    emm = emmeans(fit, specs, **kw)
    ref = GLM["emmeans"][case]
    level_cols = [c for c in ("model", "lang") if c in ref[0]]
    assert_matches(emm.to_frame(), ref, labels=level_cols)


def test_formula_specs_with_by(fit):
    a = emmeans(fit, "~ model | lang").to_frame()
    b = emmeans(fit, "model", by="lang").to_frame()
    pd.testing.assert_frame_equal(a, b)


# (adjust, tolerance on interval ends, tolerance on p): dunnettx and tukey quantiles come from R's
# root finders (tolerance 5e-4 and 1e-4), mvt from mvtnorm's randomised integration (abseps 1e-3).
ADJUST_TOL = {"holm": (1e-5, 1e-6), "bonferroni": (1e-5, 1e-6), "sidak": (1e-5, 1e-6),
              "fdr": (1e-5, 1e-6), "none": (1e-5, 1e-6), "tukey": (1e-4, 1e-6),
              "dunnettx": (1e-3, 1e-6), "mvt": (2e-3, 2e-3)}


@pytest.mark.parametrize("adjust", sorted(ADJUST_TOL))
def test_pairwise_adjustments_match_r(fit, adjust):
    ci_rtol, p_tol = ADJUST_TOL[adjust]
    res = contrast(emmeans(fit, "model"), "pairwise", adjust=adjust)
    assert_matches(res.to_frame(), GLM["contrasts"][f"pairwise_{adjust}"], ci_rtol=ci_rtol,
                   p_tol=p_tol, labels=["contrast"])


BY_CASES = {
    "by_pairwise_holm": (dict(method="pairwise", adjust="holm"), ADJUST_TOL["holm"]),
    "by_revpairwise_tukey": (dict(method="revpairwise", adjust="tukey"), ADJUST_TOL["tukey"]),
    "by_trt_dunnettx": (dict(method="trt.vs.ctrl", ref="beta-2", adjust="dunnettx"),
                        ADJUST_TOL["dunnettx"]),
    "by_trt_mvt": (dict(method="trt.vs.ctrl", ref=1, adjust="mvt"), ADJUST_TOL["mvt"]),
    "by_trt_sidak_level90": (dict(method="trt.vs.ctrl", ref=1, adjust="sidak", conf_level=0.9),
                             ADJUST_TOL["sidak"]),
}


@pytest.mark.parametrize("case", sorted(BY_CASES))
def test_by_group_families_match_r(fit, case):
    kw, (ci_rtol, p_tol) = BY_CASES[case]
    res = contrast(emmeans(fit, "model", by="lang"), **kw)
    assert_matches(res.to_frame(), GLM["contrasts"][case], ci_rtol=ci_rtol, p_tol=p_tol,
                   labels=["contrast", "lang"])


@pytest.mark.parametrize("adjust", ["bonferroni", "mvt", "tukey"])
def test_custom_contrasts_match_r(fit, adjust):
    """A dict of weight vectors; tukey is not for custom families and becomes sidak, as in R."""
    ci_rtol, p_tol = ADJUST_TOL[adjust]
    res = contrast(emmeans(fit, "model"), CUSTOM, adjust=adjust)
    assert_matches(res.to_frame(), GLM["contrasts"][f"custom_{adjust}"], ci_rtol=ci_rtol,
                   p_tol=p_tol, labels=["contrast"])
    if adjust == "tukey":
        assert res.adjust == "sidak"


def test_odds_ratios_match_r_response_scale(fit):
    res = contrast(emmeans(fit, "model", by="lang", type="response"), adjust="holm").to_frame()
    ref = pd.DataFrame(GLM["contrasts"]["response_pairwise_holm"])
    np.testing.assert_allclose(res["odds_ratio"], ref["estimate"], rtol=1e-6)
    np.testing.assert_allclose(res["se"], ref["se"], rtol=1e-5)  # delta-method SE of the ratio
    np.testing.assert_allclose(res["or_conf_low"], ref["lower"], rtol=1e-5)
    np.testing.assert_allclose(res["or_conf_high"], ref["upper"], rtol=1e-5)
    np.testing.assert_allclose(res["statistic"], ref["z"], rtol=1e-5)
    np.testing.assert_allclose(res["p_adjusted"], ref["p"], atol=1e-6)
    # the odds-ratio scale shows no log-odds columns, and its labels say "A / B"
    assert res["contrast"].tolist() == ref["contrast"].tolist()
    assert all(" / " in c for c in res["contrast"])
    assert not {"estimate", "conf_low", "conf_high"} & set(res.columns)


def test_two_factor_labels_and_tukey_family(fit):
    """Means of model x lang cells: labels 'alpha EN - (beta-2 EN)', a Tukey family of 8."""
    res = contrast(emmeans(fit, ["model", "lang"]), adjust="tukey")
    assert_matches(res.to_frame(), GLM["contrasts"]["cells_pairwise_tukey"],
                   ci_rtol=ADJUST_TOL["tukey"][0], labels=["contrast"])
    assert "for comparing a family of 8 estimates" in " ".join(res.notes)


def test_averaged_control(fit):
    res = contrast(emmeans(fit, "model"), "trt.vs.ctrl", ref=[0, 2], adjust="none")
    assert_matches(res.to_frame(), GLM["contrasts"]["trt_ref_multi"], labels=["contrast"])


def test_holm_note_and_bonferroni_intervals(fit):
    emm = emmeans(fit, "model")
    holm = contrast(emm, adjust="holm")
    bonf = contrast(emm, adjust="bonferroni")
    np.testing.assert_allclose(holm.table["conf_low"], bonf.table["conf_low"])
    assert holm.ci_adjust == "bonferroni"
    assert any("Bonferroni" in n for n in holm.notes)
    assert (holm.table["p_adjusted"] <= bonf.table["p_adjusted"] + 1e-15).all()
    # the unadjusted p-values are the same whatever the adjustment
    np.testing.assert_allclose(holm.table["p_value"], bonf.table["p_value"])
    assert (holm.table["p_value"] <= holm.table["p_adjusted"]).all()


# --- glmer fits (R's fixed effects and covariance on the same design) -----------------------------

def test_glmer_emmeans_response_match_r(glmer_fits):
    emm = emmeans(glmer_fits["g3"], "model", by="lang", type="response")
    assert_matches(emm.to_frame(), REF["glmer_sim"]["emm_g3_response"], labels=["model", "lang"])


def test_glmer_contrasts_match_r(glmer_fits):
    res = contrast(emmeans(glmer_fits["g3"], "model", by="lang"), adjust="tukey")
    assert_matches(res.to_frame(), REF["glmer_sim"]["con_g3_tukey"], ci_rtol=1e-4,
                   labels=["contrast", "lang"])
    res = contrast(emmeans(glmer_fits["g2"], "model"), "trt.vs.ctrl", ref="m2",
                   adjust="dunnettx")
    assert_matches(res.to_frame(), REF["glmer_sim"]["con_g2_trt"], ci_rtol=1e-3,
                   labels=["contrast"])


# --- closed forms and invariants ------------------------------------------------------------------

def _pairwise_corr(k: int) -> np.ndarray:
    rows = []
    for i, j in combinations(range(k), 2):
        c = np.zeros(k)
        c[i], c[j] = 1, -1
        rows.append(c)
    C = np.array(rows)
    S = C @ C.T
    d = np.sqrt(np.diag(S))
    return S / np.outer(d, d)


@pytest.mark.parametrize("k", [3, 5, 8])
def test_mvt_equals_tukey_for_independent_equal_variance_means(k):
    """max |Z_i - Z_j| / sqrt(2) of k iid normals is the studentized range / sqrt(2)."""
    t = np.array([1.5, 2.5, 3.0])
    p_box = multiplicity.mvn_box_probability(t, _pairwise_corr(k))
    p_tukey = 1 - multiplicity.ptukey_upper(np.sqrt(2) * t, k)
    np.testing.assert_allclose(p_box, p_tukey, atol=3e-4)
    q = multiplicity.mvn_box_quantile(0.95, _pairwise_corr(k))
    assert q == pytest.approx(multiplicity.qtukey(0.95, k) / np.sqrt(2), rel=2e-4)


def test_box_probability_independent_is_product():
    t = 2.1
    exact = (1 - 2 * (1 - stats.norm.cdf(t))) ** 4
    assert multiplicity.mvn_box_probability(t, np.eye(4))[0] == pytest.approx(exact, abs=1e-4)


@pytest.mark.parametrize("df", [1, 2, 3, 12])
def test_multivariate_t_box_is_exact_at_small_df(df):
    """One contrast (rank 1): the multivariate t box is Student's t, to rounding, at every df
    (a 60-node quadrature over the chi-square divisor was off by 0.015 at df = 1)."""
    t = np.array([0.5, 1.0, 2.0, 4.0, 12.7])
    got = multiplicity.mvn_box_probability(t, np.ones((2, 2)), df=df)
    np.testing.assert_allclose(got, 2 * stats.t.cdf(t, df) - 1, rtol=0, atol=1e-12)
    q = multiplicity.mvn_box_quantile(0.95, np.ones((2, 2)), df=df)
    assert q == pytest.approx(stats.t.isf(0.025, df), rel=1e-8)
    # independent t's share the divisor, so the box is wider than the product of t probabilities
    two = multiplicity.mvn_box_probability(2.0, np.eye(2), df=df)[0]
    assert (2 * stats.t.cdf(2.0, df) - 1) ** 2 < two < 2 * stats.t.cdf(2.0, df) - 1


def test_single_contrast_is_never_adjusted(fit):
    emm = emmeans(fit, "lang")
    for adjust in ("holm", "tukey", "dunnettx", "mvt", "sidak"):
        res = contrast(emm, adjust=adjust)
        z = res.table["statistic"].iloc[0]
        assert res.table["p_adjusted"].iloc[0] == pytest.approx(2 * stats.norm.sf(abs(z)))
        assert res.table["p_value"].iloc[0] == pytest.approx(2 * stats.norm.sf(abs(z)))


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(1e-12, 1.0), min_size=1, max_size=30))
def test_stepwise_adjustments_are_ordered(p):
    p = np.array(p)
    holm, bh = multiplicity.adjust_pvalues(p, "holm"), multiplicity.adjust_pvalues(p, "BH")
    bonf = np.minimum(1, len(p) * p)
    assert (p <= bh + 1e-15).all() and (bh <= holm + 1e-15).all()
    assert (holm <= bonf + 1e-15).all()
    order = np.argsort(p, kind="stable")
    assert (np.diff(holm[order]) >= -1e-15).all()
    assert (np.diff(bh[order]) >= -1e-15).all()


def test_revpairwise_negates_pairwise(fit):
    emm = emmeans(fit, "model", by="lang")
    fwd = contrast(emm, "pairwise", adjust="none").table
    rev = contrast(emm, "revpairwise", adjust="none").table
    flip = {f"{b} - {a}": v for (a, b), v in
            zip((c.split(" - ") for c in fwd["contrast"]), fwd["estimate"])}
    for name, lang, est in zip(rev["contrast"], rev["lang"], rev["estimate"]):
        match = fwd[(fwd["lang"] == lang)]
        assert est == pytest.approx(-match.set_index("contrast").loc[
            " - ".join(reversed(name.split(" - "))), "estimate"])
    assert set(flip) == set(rev["contrast"])


def test_marginal_mean_is_average_of_cells(fit):
    cells = emmeans(fit, ["model", "lang"]).table
    marg = emmeans(fit, "model").table
    avg = cells.groupby("model", observed=True, sort=False)["estimate"].mean()
    np.testing.assert_allclose(marg["estimate"], avg.loc[marg["model"]].to_numpy(), atol=1e-12)


def test_reference_grid_covariate_mean(fit, sim):
    grid, X = reference_grid(fit)
    assert len(grid) == 4 * 2 * 2
    assert grid["x"].iloc[0] == pytest.approx(sim["x"].mean())
    assert grid["model"].tolist()[:4] == ["alpha", "beta-2", "delta", "gamma"]  # first fastest
    assert X.shape == (16, 10)


# --- posterior draws ------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def posterior(fit):
    rng = np.random.default_rng(11)
    draws = rng.multivariate_normal(fit.fixef.to_numpy(), fit.vcov.to_numpy(), size=4000)
    return PosteriorStandIn(pd.DataFrame(draws, columns=fit.fixef.index), fit.fixed_design,
                            FORMULA)


def test_posterior_emmeans_summarise_draws(fit, posterior):
    post = emmeans(posterior, "model", by="lang", type="response")
    ml = emmeans(fit, "model", by="lang", type="response").table
    assert post.is_posterior
    np.testing.assert_allclose(post.table["estimate"], ml["estimate"], atol=0.01)
    np.testing.assert_allclose(post.table["se"], ml["se"], rtol=0.1)
    # the same numbers computed by hand from the draws
    from scipy.special import expit
    vals = expit(posterior.fixef_draws.to_numpy() @ post.L.T)
    np.testing.assert_allclose(post.table["estimate"], vals.mean(axis=0))
    np.testing.assert_allclose(post.table[["conf_low", "conf_high"]].to_numpy(), hdi(vals, 0.95))


def test_posterior_contrasts_give_prob_positive(fit, posterior):
    res = contrast(emmeans(posterior, "model"), "trt.vs.ctrl", ref="gamma")
    tab = res.table
    assert {"prob_positive", "odds_ratio"} <= set(tab.columns) and "p_value" not in tab.columns
    vals = posterior.fixef_draws.to_numpy() @ res.L.T
    np.testing.assert_allclose(tab["prob_positive"], (vals > 0).mean(axis=0))
    np.testing.assert_allclose(tab["estimate"], vals.mean(axis=0))
    ml = contrast(emmeans(fit, "model"), "trt.vs.ctrl", ref="gamma", adjust="none").table
    np.testing.assert_allclose(tab["estimate"], ml["estimate"], atol=0.02)
    # P(d > 0) under the normal approximation of the ML fit
    np.testing.assert_allclose(tab["prob_positive"], stats.norm.cdf(ml["estimate"] / ml["se"]),
                               atol=0.02)


def test_hdi_matches_arviz():
    az = pytest.importorskip("arviz")
    x = np.random.default_rng(3).gamma(2.0, size=(3001, 3))
    ours = hdi(x, 0.9)
    prob = {"prob": 0.9} if int(az.__version__.split(".")[0]) >= 1 else {"hdi_prob": 0.9}  # ArviZ 1 renamed it
    theirs = np.array([az.hdi(x[:, j], **prob) for j in range(3)])
    np.testing.assert_allclose(ours, theirs)


# --- errors ---------------------------------------------------------------------------------------

def test_errors_name_the_fault(fit):
    with pytest.raises(FormulaError, match="nope"):
        emmeans(fit, "nope")
    with pytest.raises(FormulaError, match="zz"):
        emmeans(fit, "model", at={"model": ["zz"]})
    with pytest.raises(ValueError, match="adjust"):
        contrast(emmeans(fit, "model"), adjust="hochberg-ish")
    with pytest.raises(ValueError, match="3 weights for 4 means"):
        contrast(emmeans(fit, "model"), {"bad": [1, -1, 0]})
    with pytest.raises(ValueError, match="ref"):
        contrast(emmeans(fit, "model"), "trt.vs.ctrl", ref="omega")
    with pytest.raises(ValueError, match="type"):
        emmeans(fit, "model", type="odds")


def test_results_render(fit):
    res = contrast(emmeans(fit, "model"), adjust="holm")
    out = res.to_dict()
    json.dumps(out)
    assert out["adjust"] == "holm" and len(out["table"]) == 6
    assert "| contrast" in res.to_markdown()
    assert "alpha - (beta-2)" in repr(res)
    json.dumps(emmeans(fit, "model").to_dict())


def test_pipeline_on_own_glmer_fit():
    """evalmix.glmer + emmeans + contrast against lme4 + emmeans on the same simulated GLMM.

    The fits agree to the GLMM engine's precision (its optimum is slightly better than lme4's and its
    Hessian SEs are within about 1%), so the comparison is at that precision.
    """
    import warnings

    from evalmix.glmm import glmer

    data = pd.read_csv(REFERENCE / "inference_glmer_sim.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = glmer(REF["glmer_sim"]["fits"]["g3"]["formula"], data)
    emm = emmeans(fit, "model", by="lang", type="response")
    assert_matches(emm.to_frame(), REF["glmer_sim"]["emm_g3_response"], est_tol=1e-3,
                   se_rtol=0.015, ci_rtol=0.01, labels=["model", "lang"])
    res = contrast(emmeans(fit, "model", by="lang"), adjust="tukey")
    assert_matches(res.to_frame(), REF["glmer_sim"]["con_g3_tukey"], est_tol=2e-3,
                   se_rtol=0.015, ci_rtol=0.015, p_tol=0.01, labels=["contrast", "lang"])


def test_missing_cell_is_not_estimable():
    """m3 never run in ES: means and contrasts that involve that cell are NaN, as emmeans' nonEst;
    the family sizes still count them (emmeans 1.8), e.g. Holm over 3 tests."""
    import warnings

    from evalmix.glmm import glmer

    ref = REF["glmer_sim"]["missing_cell"]
    data = pd.read_csv(REFERENCE / "inference_glmer_sim.csv")
    data = data[~((data["model"] == "m3") & (data["lang"] == "ES"))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = glmer("correct ~ model * lang + (1|item) + (1|item:run)", data)
    cases = [(emmeans(fit, "model", by="lang"), "emm_by", ["model", "lang"]),
             (emmeans(fit, "model"), "emm_model", ["model"]),
             (emmeans(fit, "lang"), "emm_lang", ["lang"]),
             (contrast(emmeans(fit, "model", by="lang"), adjust="tukey"), "con_by_tukey",
              ["contrast", "lang"]),
             (contrast(emmeans(fit, "model"), adjust="holm"), "con_model_holm", ["contrast"]),
             (contrast(emmeans(fit, ["model", "lang"]), adjust="tukey"), "con_cells_tukey",
              ["contrast"])]
    for res, key, labels in cases:
        mine, theirs = res.to_frame(), pd.DataFrame(ref[key])
        theirs = theirs.astype({c: float for c in ("estimate", "se") if c in theirs})
        assert mine["estimate"].isna().tolist() == theirs["estimate"].isna().tolist(), key
        ok = theirs["estimate"].notna().to_numpy()
        assert_matches(mine[ok].reset_index(drop=True), theirs[ok].to_dict("records"),
                       est_tol=2e-3, se_rtol=0.015, ci_rtol=0.015, p_tol=0.02, labels=labels)


def test_holm_and_bh_count_the_whole_family():
    p = np.array([0.01, 0.04])
    np.testing.assert_allclose(multiplicity.adjust_pvalues(p, "holm", n=3), [0.03, 0.08])
    np.testing.assert_allclose(multiplicity.adjust_pvalues(p, "BH", n=3), [0.03, 0.06])


@pytest.mark.parametrize("method", ["hochberg", "BY", "BH", "holm", "bonferroni", "sidak"])
def test_every_p_adjust_method_is_available_in_contrast(fit, method):
    # contrast() and adjust_pvalues() share one implementation: the family's adjusted p-values are
    # p.adjust of its unadjusted ones
    raw = contrast(emmeans(fit, "model"), "pairwise", adjust="none").to_frame()
    adj = contrast(emmeans(fit, "model"), "pairwise", adjust=method).to_frame()
    expected = multiplicity.adjust_pvalues(raw["p_value"].to_numpy(), method)
    np.testing.assert_allclose(adj["p_adjusted"].to_numpy(), expected, rtol=1e-12)
    np.testing.assert_allclose(adj["p_value"], raw["p_adjusted"], rtol=1e-12)


def test_tukey_needs_z_statistics():
    with pytest.raises(ValueError, match="evalmix.contrast"):
        multiplicity.adjust_pvalues([0.01, 0.2], "tukey")


# --- contrast families: an open registry ------------------------------------------------------------

def _glmer_three_models():
    import warnings

    import evalmix

    runs = evalmix.simulate.glmm_runs(3, 40, 2, rng=1).replace({"model": {"M2": "M2-b"}})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evalmix.glmer("correct ~ model + (1|item)", runs)


def test_registered_family_is_used_by_contrast():
    from evalmix.inference.emmeans import ContrastRow, contrast_families, register_contrast

    seen = {}

    def consec(levels, ref):
        seen["levels"] = list(levels)  # the levels arrive as tuples, not labels
        eye = np.eye(len(levels))
        return [ContrastRow(eye[i + 1] - eye[i], (i + 1,), (i,)) for i in range(len(levels) - 1)]

    def first_vs_rest(levels, ref):
        k = len(levels)
        w = np.r_[1.0, -np.ones(k - 1) / (k - 1)]
        return [ContrastRow(w, (0,), tuple(range(1, k))), ContrastRow(w * 2, name="twice")]

    register_contrast("test_consec", consec)
    register_contrast("test_first_vs_rest", first_vs_rest)
    assert {"pairwise", "revpairwise", "trt.vs.ctrl", "test_consec"} <= set(contrast_families())
    emm = emmeans(_glmer_three_models(), "model")
    res = contrast(emm, "test_consec", adjust="none").to_frame()
    assert seen["levels"] == [("M1",), ("M2-b",), ("M3",)]
    # labels are written at display: a level with "-" in parentheses, as emmeans writes it
    assert res["contrast"].tolist() == ["(M2-b) - M1", "M3 - (M2-b)"]
    means = emm.to_frame().set_index("model")["estimate"]
    np.testing.assert_allclose(res["estimate"], [means["M2-b"] - means["M1"], means["M3"] - means["M2-b"]],
                               rtol=1e-12)
    # the same numbers as the equivalent dict of weights
    by_dict = contrast(emm, {"a": [-1, 1, 0], "b": [0, -1, 1]}, adjust="none").to_frame()
    np.testing.assert_allclose(res[["estimate", "se", "p_value"]], by_dict[["estimate", "se", "p_value"]],
                               rtol=1e-12)
    other = contrast(emm, "test_first_vs_rest", adjust="none").to_frame()
    assert other["contrast"].tolist() == ["M1 - avg((M2-b),M3)", "twice"]
    np.testing.assert_allclose(other["estimate"].iloc[1], 2 * other["estimate"].iloc[0], rtol=1e-12)


def test_contrast_registry_errors_name_the_fault():
    from evalmix.inference.emmeans import ContrastRow, register_contrast
    from evalmix.core.errors import ArgumentError, ArgumentTypeError

    emm = emmeans(_glmer_three_models(), "model")
    with pytest.raises(ValueError, match=r"method='consec_nosuch' is not one of pairwise, revpairwise, "
                                         r"trt.vs.ctrl.*register_contrast"):
        contrast(emm, "consec_nosuch")
    with pytest.raises(ArgumentTypeError, match="needs a callable"):
        register_contrast("test_bad", "not a function")
    with pytest.raises(ArgumentError, match="non-empty name"):
        register_contrast("", lambda levels, ref: [])
    register_contrast("test_short", lambda levels, ref: [ContrastRow(np.ones(2), (0,), (1,))])
    with pytest.raises(ValueError, match="weights over 2 means for 3"):
        contrast(emm, "test_short")
    register_contrast("test_empty", lambda levels, ref: [])
    with pytest.raises(ValueError, match="needs at least two means"):
        contrast(emm, "test_empty")
    # ref= is checked only by families that read it
    assert len(contrast(emm, "pairwise", ref="not a level").to_frame()) == 3
    with pytest.raises(ValueError, match="ref='not a level' is not one of the levels"):
        contrast(emm, "trt.vs.ctrl", ref="not a level")
    register_contrast("test_vs_ref", lambda levels, ref: [
        ContrastRow(np.eye(len(levels))[i] - np.eye(len(levels))[ref[0]], (i,), (ref[0],))
        for i in range(len(levels)) if i != ref[0]], uses_ref=True)
    got = contrast(emm, "test_vs_ref", ref="M3", adjust="none").to_frame()["contrast"].tolist()
    assert got == ["M1 - M3", "(M2-b) - M3"]


def test_tukey_applies_to_families_registered_as_pairwise():
    from evalmix.inference.emmeans import register_contrast

    emm = emmeans(_glmer_three_models(), "model")
    from evalmix.inference.emmeans import ContrastRow

    def pairs(levels, ref):
        eye = np.eye(len(levels))
        return [ContrastRow(eye[i] - eye[j], (i,), (j,))
                for i in range(len(levels) - 1) for j in range(i + 1, len(levels))]

    register_contrast("test_pairs", pairs, pairwise=True)
    mine = contrast(emm, "test_pairs", adjust="tukey").to_frame()
    builtin = contrast(emm, "pairwise", adjust="tukey").to_frame()
    pd.testing.assert_frame_equal(mine, builtin)


def test_dunnettx_t_family_with_infinite_df_is_the_z_family():
    # a contrast of an lmer fit may carry df = Inf (an asymptotic row); SciPy's studentized range
    # has no infinite df, so those rows take emmeans' df = Inf approximation
    from evalmix.inference.emmeans import _adjust_family_t
    from evalmix.stats.multiplicity import adjust_family

    t = np.array([2.5, 1.0, 0.3])
    p_t, crit_t, _, _ = _adjust_family_t(t, np.full(3, np.inf), "dunnettx", conf_level=0.95,
                                         n_means=None, pairwise=False)
    p_z, crit_z, _, _ = adjust_family(t, "dunnettx", conf_level=0.95, n_means=None, pairwise=False)
    np.testing.assert_allclose(p_t, p_z, rtol=1e-12)
    np.testing.assert_allclose(crit_t, crit_z, rtol=1e-12)
    # and a very large finite df is continuous with it
    p_big, crit_big, _, _ = _adjust_family_t(t, np.array([1e7, np.inf, 40.0]), "dunnettx",
                                             conf_level=0.95, n_means=None, pairwise=False)
    assert abs(p_big[0] - p_z[0]) < 1e-5 and abs(crit_big[0] - crit_z) < 1e-4
    assert crit_big[1] == pytest.approx(crit_z, rel=1e-12) and crit_big[2] > crit_big[1]  # 40 df: wider
