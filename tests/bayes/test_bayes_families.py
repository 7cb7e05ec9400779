"""The Bayesian twins of lmer, clmm and glmmtmb (evalmix.bayes.lmer, .clmm, .glmmtmb).

Fast checks build the models without sampling: priors (printed, overridden, refused), the
validation of each family's response, the moment pilot that picks the parameterisation, and the
model's log density against scipy.  The sampling checks (marked slow) fit the reference data sets
with the DEFAULT settings and compare with the maximum-likelihood fits of R (lme4, ordinal,
glmmTMB) in posterior-SD units: with weakly informative priors and these sample sizes the
posterior mean of a fixed effect sits within a fraction of a posterior SD of the ML estimate.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

# skipped without the bayes extra; pymc itself is imported by the tests that sample, not at
# collection (every test process collects every file)
pytestmark = pytest.mark.skipif(importlib.util.find_spec("pymc") is None, reason="needs pymc (the bayes extra)")

import evalmix  # noqa: E402
from evalmix import bayes  # noqa: E402
from evalmix.bayes.families import build_family_design, build_family_model, pilot  # noqa: E402
from evalmix.bayes._arviz import elpd  # noqa: E402
from evalmix.core.errors import DataError, FormulaError  # noqa: E402

REF = Path(__file__).parents[1] / "reference"


@pytest.fixture(scope="module")
def sleep():
    return pd.read_csv(REF / "lmer_sleepstudy.csv")


@pytest.fixture(scope="module")
def wine():
    return pd.read_csv(REF / "clmm_wine.csv")


@pytest.fixture(scope="module")
def tmb_sim():
    return pd.read_csv(REF / "glmmtmb_sim.csv")


def ref(name: str) -> dict:
    return json.loads((REF / name).read_text())


# ------------------------------------------------------------------------- priors

def test_default_priors_of_each_family(sleep, wine, tmb_sim):
    g = bayes.default_priors("Reaction ~ Days + (Days|Subject)", sleep, family="gaussian").to_frame()
    sd_y = float(np.std(sleep["Reaction"]))
    assert g["parameter"].tolist() == ["(Intercept)", "Days", "sd((Intercept)|Subject)", "sd(Days|Subject)",
                                       "cor((Intercept)+Days|Subject)", "sigma"]
    # rstanarm's autoscaling: Normal(mean(y), 2.5 sd(y)); 2.5 sd(y) / sd(x) for a covariate
    assert g["prior"][0] == f"Normal(mu={sleep['Reaction'].mean():g}, sigma={2.5 * sd_y:g})"
    assert g["prior"][1] == f"Normal(mu=0, sigma={2.5 * sd_y / np.std(sleep['Days']):g})"
    assert g["prior"].iloc[-1] == f"HalfStudentT(nu=3, sigma={sd_y:g})"
    c = bayes.default_priors("rating ~ temp + contact + (1|judge)", wine, family="cumulative").to_frame()
    assert c["parameter"].tolist() == ["1|2", "2|3", "3|4", "4|5", "tempwarm", "contactyes",
                                       "sd((Intercept)|judge)"]
    assert set(c["prior"][:4]) == {"Normal(mu=0, sigma=5)"}
    b = bayes.default_priors("cbind(k, n - k) ~ model + (1|item)", tmb_sim, family="betabinomial").to_frame()
    assert b["parameter"].iloc[-1] == "phi" and b["prior"].iloc[-1] == "HalfStudentT(nu=3, sigma=10)"


def test_priors_are_overridable_and_checked(sleep, wine):
    g = bayes.default_priors("Reaction ~ Days + (1|Subject)", sleep, family="gaussian",
                             priors={"sigma": ("half_normal", 30), "Days": ("normal", 0, 20)}).to_frame()
    row = g.set_index("parameter")
    assert row.loc["sigma", "prior"] == "HalfNormal(sigma=30)" and row.loc["sigma", "source"] == "user"
    assert row.loc["Days", "prior"] == "Normal(mu=0, sigma=20)" and row.loc["Days", "source"] == "user"
    c = bayes.default_priors("rating ~ temp + (1|judge)", wine, family="cumulative",
                             priors={"threshold": ("student_t", 3, 0, 2.5)}).to_frame()
    assert (c["prior"][:4] == "StudentT(nu=3, mu=0, sigma=2.5)").all() and (c["source"][:4] == "user").all()
    with pytest.raises(ValueError, match="sigma.*must be positive"):
        bayes.default_priors("Reaction ~ Days + (1|Subject)", sleep, family="gaussian",
                             priors={"sigma": ("normal", 0, 1)})
    with pytest.raises(ValueError, match="unknown parameter"):
        bayes.default_priors("Reaction ~ Days + (1|Subject)", sleep, family="gaussian",
                             priors={"phi": ("half_normal", 1)})
    with pytest.raises(ValueError, match="family must be"):
        bayes.default_priors("Reaction ~ Days + (1|Subject)", sleep, family="poisson")


# ------------------------------------------------------------------------- bad input

def test_bad_responses_name_the_column(wine, tmb_sim):
    w = wine.assign(rating=wine["rating"].astype(float))
    w.loc[5, "rating"] = 2.5
    with pytest.raises(DataError, match=r"'rating' has a non-integer score 2.5 in rows 5"):
        bayes.clmm("rating ~ temp + (1|judge)", w)
    with pytest.raises(DataError, match="'rating' is an unordered categorical"):
        bayes.clmm("rating ~ temp + (1|judge)", wine.assign(rating=wine["rating"].astype("category")))
    with pytest.raises(DataError, match="'rating' has a gap: no rating 3"):
        bayes.clmm("rating ~ temp + (1|judge)", wine[wine["rating"] != 3])
    s = tmb_sim.copy()
    s.loc[[3, 7], "score"] = [1.0, -0.2]
    with pytest.raises(DataError, match=r"'score' must hold scores strictly between 0 and 1.*rows 3, 7"):
        bayes.glmmtmb("score ~ model + (1|item)", s)
    s = tmb_sim.copy()
    s.loc[4, "k"] = 11
    with pytest.raises(DataError, match=r"columns 'k' and 'n' must be whole counts.*rows 4 .*k = 11 of n = 10"):
        bayes.glmmtmb("cbind(k, n - k) ~ model + (1|item)", s, family="betabinomial")
    with pytest.raises(FormulaError, match="k of n: write cbind"):
        bayes.glmmtmb("k ~ model + (1|item)", tmb_sim, family="betabinomial")
    with pytest.raises(FormulaError, match="one response column"):
        bayes.glmmtmb("cbind(k, n - k) ~ model + (1|item)", tmb_sim, family="beta")
    with pytest.raises(FormulaError, match="response column 'nope' is absent"):
        bayes.lmer("nope ~ 1 + (1|item)", tmb_sim)
    with pytest.raises(DataError, match="column 'model' must be numeric|'model' holds"):
        bayes.lmer("model ~ 1 + (1|item)", tmb_sim)
    with pytest.raises(ValueError, match="family must be 'beta' or 'betabinomial'"):
        bayes.glmmtmb("score ~ model + (1|item)", tmb_sim, family="binomial")
    with pytest.raises(ValueError, match="link must be one of"):
        bayes.clmm("rating ~ temp + (1|judge)", wine, link="cloglog")
    with pytest.raises(FormulaError, match="removes the intercept"):
        bayes.clmm("rating ~ 0 + temp + (1|judge)", wine)


def test_weights_are_taken_where_the_ml_engine_takes_them(sleep, wine, tmb_sim):
    from evalmix.core.errors import ArgumentError

    # evalmix.lmer and evalmix.clmm fit no weights, glmmtmb's beta family none: refused, named
    with pytest.raises(ArgumentError, match=r"weights= is not taken: evalmix.lmer fits no prior weights"):
        bayes.lmer("Reaction ~ Days + (1|Subject)", sleep, weights=np.ones(len(sleep)))
    with pytest.raises(ArgumentError, match=r"weights= is not taken: evalmix.clmm fits no case weights"):
        bayes.clmm("rating ~ temp + (1|judge)", wine, weights="bottle")
    with pytest.raises(ArgumentError, match="the beta family takes none"):
        bayes.glmmtmb("score ~ model + (1|item)", tmb_sim, weights="n")
    with pytest.raises(ArgumentError, match="weights= gives the trials of a proportion response"):
        bayes.glmmtmb("cbind(k, n - k) ~ model + (1|item)", tmb_sim, family="betabinomial", weights="n")
    with pytest.raises(FormulaError, match="weights='nope' is not a column"):
        bayes.glmmtmb("p ~ model + (1|item)", tmb_sim.assign(p=0.5), family="betabinomial", weights="nope")
    with pytest.raises(DataError, match=r"'p' must lie in \[0, 1\] with weights=.*rows 2"):
        bayes.glmmtmb("p ~ model + (1|item)", tmb_sim.assign(p=[0.5, 0.5, 1.5] + [0.5] * (len(tmb_sim) - 3)),
                      family="betabinomial", weights="n")
    # a proportion with weights= the trials is the k-of-n model, as glmmtmb reads it
    props = tmb_sim.assign(p=tmb_sim["k"] / tmb_sim["n"])
    a = build_family_design("p ~ model + (1|item)", props, "betabinomial", weights="n")
    b = build_family_design("cbind(k, n - k) ~ model + (1|item)", tmb_sim, "betabinomial")
    np.testing.assert_array_equal(a.y, b.y)
    np.testing.assert_array_equal(a.m, b.m)
    np.testing.assert_array_equal(a.X, b.X)
    np.testing.assert_allclose(a.log_binom_rows, b.log_binom_rows, rtol=1e-12)
    assert bayes.default_priors("p ~ model + (1|item)", props, family="betabinomial", weights="n").to_frame().equals(
        bayes.default_priors("cbind(k, n - k) ~ model + (1|item)", tmb_sim, family="betabinomial").to_frame())
    ml = evalmix.glmmtmb("p ~ model + (1|item)", props, family="betabinomial", weights=tmb_sim["n"].to_numpy())
    assert ml.nobs == a.nobs
    # offset() terms: evaluated per row for every family, their mean is where emmeans puts them
    for family, formula, data, off in [
            ("gaussian", "Reaction ~ Days + offset(3 * Days) + (1|Subject)", sleep, 3 * sleep["Days"]),
            ("cumulative", "rating ~ temp + offset(0.5 * (contact == 'yes')) + (1|judge)", wine,
             0.5 * (wine["contact"] == "yes")),
            ("betabinomial", "p ~ model + offset(log(n)) + (1|item)", props, np.log(props["n"]))]:
        d = build_family_design(formula, data, family, weights="n" if family == "betabinomial" else None)
        np.testing.assert_allclose(d.offset, off, rtol=1e-12)
        assert d.grid_fixed.offset_mean == pytest.approx(float(np.mean(off)), rel=1e-12)


# ------------------------------------------------------------------------- the model without sampling

def test_pilot_moments_recover_the_sleepstudy_sds(sleep):
    # the per-subject least-squares moments that choose the parameterisation land on lme4's REML
    # SDs (24.74 and 5.92) within 1%: this design is balanced
    _, sds = pilot(build_family_design("Reaction ~ Days + (Days|Subject)", sleep, "gaussian"))
    vc = {r["var1"]: r["sd"] for r in ref("lmer_reference.json")["sleepstudy_reml"]["varcorr"]
          if r["group"] == "Subject" and r["var2"] == ""}
    np.testing.assert_allclose(sds[0], [vc["(Intercept)"], vc["Days"]], rtol=0.01)


# the cumulative-link graphs take 7-11 s to compile on a cold PyTensor cache: they run in the slow
# step, where the wine fit also samples the logit one
@pytest.mark.parametrize("family, formula", [
    ("gaussian", "Reaction ~ Days + (1|Subject)"),
    pytest.param("cumulative", "rating ~ temp + contact + (1|judge)", marks=pytest.mark.slow),
    pytest.param("probit", "rating ~ temp + contact + (1|judge)", marks=pytest.mark.slow),
    ("beta", "score ~ model + (1|item)"),
    ("betabinomial", "cbind(k, n - k) ~ model + (1|item)"),
    # an offset() term enters the linear predictor of every family (standardised with y when
    # Gaussian); 2 s each to compile, in the slow step (the design's offset is checked fast below)
    pytest.param("gaussian", "Reaction ~ Days + offset(3 * Days) + (1|Subject)", marks=pytest.mark.slow),
    pytest.param("beta", "score ~ model + offset(0.5 * run) + (1|item)", marks=pytest.mark.slow),
])
def test_log_density_of_the_response_matches_scipy(family, formula, sleep, wine, tmb_sim):
    from scipy import special, stats

    data = {"gaussian": sleep, "cumulative": wine, "probit": wine}.get(family, tmb_sim)
    link = "probit" if family == "probit" else None
    family = "cumulative" if family == "probit" else family
    bm = build_family_model(formula, data, family, link=link)
    d = bm.design
    point = bm.model.initial_point()
    rng = np.random.default_rng(3)
    point = {k: v + 0.1 * rng.standard_normal(np.shape(v)) for k, v in point.items()}

    def value(out):
        out = bm.model.replace_rvs_by_values([out])[0]
        return bm.model.compile_fn(out, inputs=bm.model.value_vars, on_unused_input="ignore")(point)

    logp = value(bm.model.logp(vars=[bm.model["y"]], sum=True))
    vals = [value(bm.model[n]) for n in ("b",) + (("Intercept_c",) if "Intercept_c" in bm.model
                                                  else ("thresholds",))]
    b = np.asarray(vals[0])
    u = {p.label: np.asarray(value(bm.model[f"({p.label})"])) for p in bm.plans}
    plan = bm.plans[0]
    offset = 0.0 if d.offset is None else d.offset / d.y_scale
    if "offset(" in formula:
        data_off = 3 * data["Days"] if family == "gaussian" else 0.5 * data["run"]
        np.testing.assert_allclose(d.offset, data_off, rtol=1e-12)
        assert d.grid_fixed.offset_mean == pytest.approx(float(np.mean(data_off)))
    if family == "cumulative":
        eta = d.X @ b + u[plan.label][plan.term.index]
        cuts = np.concatenate([[-np.inf], np.asarray(vals[1]), [np.inf]])
        code = d.y.astype(int)
        F = stats.norm.cdf if link == "probit" else special.expit
        expect = np.log(F(cuts[code + 1] - eta) - F(cuts[code] - eta)).sum()
    else:
        # columns centred; the term holding the intercept is centred on it
        eta = (d.X[:, 1:] - bm.fixed_basis["xbar"]) @ b + u[plan.label][plan.term.index] + offset
        if not plan.absorbs_intercept:
            eta = eta + float(np.asarray(vals[1]))
        if family == "gaussian":
            # sampled standardised: (y - mean) / sd
            sigma = float(np.exp(point["sigma_log__"]))
            expect = stats.norm.logpdf((d.y - d.y_loc) / d.y_scale, eta, sigma).sum()
            assert (d.y_loc, d.y_scale) == (pytest.approx(np.mean(d.y)), pytest.approx(np.std(d.y)))
        else:
            phi = float(np.exp(point["phi_log__"]))
            mu = special.expit(eta)
            expect = (stats.beta.logpdf(d.y, mu * phi, (1 - mu) * phi).sum() if family == "beta" else
                      stats.betabinom.logpmf(d.y, d.m, mu * phi, (1 - mu) * phi).sum())
    assert float(logp) == pytest.approx(float(expect), rel=1e-8)


# ------------------------------------------------------------------------- sampling (default settings)

def in_sd_units(fit, name: str, value: float) -> float:
    """|posterior mean - value| in posterior SDs."""
    row = fit.posterior_table().set_index("parameter").loc[name]
    return abs(row["estimate"] - value) / row["se"]


def converged(fit) -> None:
    tab = fit.posterior_table()
    assert fit.divergences == 0
    assert tab["r_hat"].max() <= 1.01, tab[["parameter", "r_hat"]]
    assert not fit.diagnostics(), fit.diagnostics()


@pytest.fixture(scope="module")
def lmer_fit(sleep):
    return bayes.lmer("Reaction ~ Days + (1|Subject)", sleep, rng=20261126, progressbar=False)


@pytest.mark.slow
def test_lmer_twin_matches_lmer_on_sleepstudy(lmer_fit, sleep):
    fit = lmer_fit
    ml = evalmix.lmer("Reaction ~ Days + (1|Subject)", sleep)  # lme4's REML fit (tests/lmm/test_lmer.py)
    converged(fit)
    assert fit.family == "gaussian" and fit.link == "identity"
    # fixed effects within 0.3 posterior SD of REML; the SDs, whose posteriors are right-skewed
    # with 18 subjects, within 1 posterior SD
    for name, value in ml.fixef.items():
        assert in_sd_units(fit, name, value) < 0.3, name
    vc = ml.varcorr.set_index("group")["sd"]
    assert in_sd_units(fit, "sigma", vc["Residual"]) < 1.0
    assert in_sd_units(fit, "sd((Intercept)|Subject)", vc["Subject"]) < 1.0
    # emmeans on the mean scale: the fixed line at the mean of Days (4.5)
    em = evalmix.emmeans(fit, "Days").to_frame()
    expect = ml.fixef["(Intercept)"] + 4.5 * ml.fixef["Days"]
    assert abs(em["estimate"][0] - expect) < 0.3 * em["se"][0]
    ll = fit.log_likelihood()
    assert ll.shape == (fit.chains, fit.draws, 180)
    assert np.isfinite(elpd(fit.loo()))
    ppc = fit.posterior_predictive(rng=1).to_frame()
    assert 0.05 < ppc["ppp"][0] < 0.95


@pytest.fixture(scope="module")
def clmm_fit(wine):
    return bayes.clmm("rating ~ temp + contact + (1|judge)", wine, rng=20261126, progressbar=False)


@pytest.mark.slow
def test_clmm_twin_matches_ordinal_on_wine(clmm_fit):
    fit, r = clmm_fit, ref("clmm_reference.json")
    converged(fit)
    ml = r["wine_logit"]
    tab = fit.posterior_table()
    assert tab["parameter"].tolist()[:6] == ml["coef_names"]
    # 72 ratings: the posterior is wider than the Wald interval and a little skewed; every
    # threshold and coefficient within 0.5 posterior SD of ordinal's estimate, same sign convention
    for name, value in zip(ml["coef_names"], ml["estimate"]):
        assert in_sd_units(fit, name, value) < 0.5, name
    assert in_sd_units(fit, "sd((Intercept)|judge)", ml["sd"]) < 1.0
    em = evalmix.emmeans(fit, "temp").to_frame()
    lat = r["emmeans"]["wine_latent"]
    assert em["temp"].tolist() == lat["level"]
    assert np.all(np.abs(em["estimate"] - lat["estimate"]) < 0.5 * em["se"])
    assert set(fit.ranks("temp").to_frame().columns) >= {"temp", "mean_latent", "p_best"}
    ppc = fit.posterior_predictive(by="temp", rng=1).to_frame()
    assert ((ppc["ppp"] > 0.02) & (ppc["ppp"] < 0.98)).all()


@pytest.fixture(scope="module")
def beta_fit(tmb_sim):
    return bayes.glmmtmb("score ~ model + (1|item)", tmb_sim, rng=20261126, progressbar=False)


@pytest.mark.slow
def test_beta_twin_matches_glmmtmb(beta_fit):
    fit, r = beta_fit, ref("glmmtmb_reference.json")
    converged(fit)
    ml = r["fits"]["sim_beta"]
    for name, value in zip(ml["coef_names"], ml["estimate"]):
        assert in_sd_units(fit, name, value) < 0.3, name
    assert in_sd_units(fit, "phi", ml["dispersion"]) < 1.0
    assert in_sd_units(fit, "sd((Intercept)|item)", ml["sd"]) < 1.0
    em = evalmix.emmeans(fit, "model", type="response").to_frame()
    np.testing.assert_allclose(em["estimate"], r["emmeans_sim_beta"]["response"], atol=0.01)


@pytest.fixture(scope="module")
def bb_fit(tmb_sim):
    return bayes.glmmtmb("cbind(k, n - k) ~ model + (1|item)", tmb_sim, family="betabinomial",
                         rng=20261126, progressbar=False)


@pytest.mark.slow
def test_betabinomial_twin_matches_glmmtmb(bb_fit, tmb_sim):
    fit, ml = bb_fit, ref("glmmtmb_reference.json")["fits"]["sim_bb"]
    converged(fit)
    for name, value in zip(ml["coef_names"], ml["estimate"]):
        assert in_sd_units(fit, name, value) < 0.3, name
    assert in_sd_units(fit, "phi", ml["dispersion"]) < 1.0
    # the row log-likelihoods count lchoose(n, k), as glmmTMB's logLik; given the item effects
    # they sum to more than the marginal ML log-likelihood (-1276.9), by at most a few dozen
    assert ml["loglik"] < fit.log_likelihood().sum(axis=2).max() < ml["loglik"] + 100
    assert np.isfinite(elpd(fit.loo()))


@pytest.mark.slow
def test_clmm_twin_emmeans_of_every_mode_match_ordinal_on_wine(clmm_fit):
    # emmeans(fit, ~temp, mode = "latent" / "mean.class" / "prob") of ordinal's ML fit (R) against
    # the posterior means of the twin (default priors, weak against 72 ratings), in posterior SDs.
    # Not closer than the coefficients themselves: with 9 judges the posterior averages over a
    # right-skewed judge SD, which widens it (posterior SDs 12-18 % above the Wald SEs) and puts
    # the thresholds and slopes 0.16-0.34 posterior SD from ordinal's (Monte Carlo error 0.03).
    # The latent and mean-rating means are close to linear in them: within 0.4 posterior SD
    # (seen: 0.27 and 0.31 for cold).  A small category probability is skewed (P(5 | cold) =
    # 0.008), so its posterior mean sits off the ML plug-in value (0.5 SD for the normal
    # approximation itself, tests/ordinal/test_clmm.py): within 0.5 SD (seen: 0.42); and the ML value
    # inside every 95% credible interval.
    fit, r = clmm_fit, ref("clmm_reference.json")["emmeans"]
    for mode, key, tol in [("latent", "wine_latent", 0.4), ("mean.class", "wine_mean", 0.4),
                           ("prob", "wine_prob", 0.5)]:
        em = evalmix.ordinal.clmm_emmeans(fit, "temp", mode=mode)
        tab = em.to_frame()
        assert em.is_posterior and em.n_draws == fit.chains * fit.draws
        assert tab["temp"].tolist() == r[key]["level"]
        diff = np.abs(tab["estimate"] - r[key]["estimate"]) / tab["se"]
        assert diff.max() < tol, (mode, diff.round(2).tolist())
        assert ((tab["conf_low"] < r[key]["estimate"]) & (r[key]["estimate"] < tab["conf_high"])).all()
    # contrasts of the mean ratings on the posterior draws: warm rates higher in every draw
    con = evalmix.contrast(evalmix.emmeans(evalmix.ordinal.clmm_ref_grid(fit, mode="mean.class"), "temp"),
                           "revpairwise").to_frame()
    assert con["contrast"][0] == "warm - cold" and con["prob_positive"][0] > 0.99
    ml = r["wine_mean"]["estimate"]
    assert abs(con["estimate"][0] - (ml[1] - ml[0])) < 0.4 * con["se"][0]


@pytest.mark.slow
def test_probit_clmm_twin_matches_ordinal_on_wine(wine):
    # the ordered-probit likelihood: every output of the logit twin, against ordinal's probit fit
    fit = bayes.clmm("rating ~ temp + contact + (1|judge)", wine, link="probit", rng=20261126,
                     progressbar=False)
    ml = ref("clmm_reference.json")["wine_probit"]
    converged(fit)
    assert fit.cumulative_link == "probit" and fit.scale == "latent (probit)"
    assert "cumulative link (probit;" in str(fit)
    for name, value in zip(ml["coef_names"], ml["estimate"]):
        assert in_sd_units(fit, name, value) < 0.5, name
    assert in_sd_units(fit, "sd((Intercept)|judge)", ml["sd"]) < 1.0
    # the row log-likelihoods are normal-CDF differences; at the ML estimates and random effects
    # near zero they sum to about ordinal's logLik (-80.93, the marginal one, a little below)
    ll = fit.log_likelihood()
    assert ll.shape == (fit.chains, fit.draws, 72) and np.isfinite(ll).all()
    assert ml["loglik"] - 15 < ll.sum(axis=2).mean() < ml["loglik"] + 15
    assert np.isfinite(elpd(fit.loo()))
    ppc = fit.posterior_predictive(by="temp", rng=1).to_frame()
    assert ((ppc["ppp"] > 0.02) & (ppc["ppp"] < 0.98)).all()
    ml_fit = evalmix.clmm("rating ~ temp + contact + (1|judge)", wine, link="probit")
    # within 0.5 posterior SD: the posterior's wider judge SD moves the latent means by 0.35-0.41 SD
    # from the ML ones (0.41 with PyMC 6's draws, 0.36 with PyMC 5's)
    for mode in ("latent", "mean.class"):
        em = evalmix.ordinal.clmm_emmeans(fit, "temp", mode=mode).to_frame()
        ref_em = evalmix.ordinal.clmm_emmeans(ml_fit, "temp", mode=mode).to_frame()
        assert (np.abs(em["estimate"] - ref_em["estimate"]) < 0.5 * em["se"]).all(), mode
    assert fit.ranks("temp").to_frame()["temp"].tolist() == ["warm", "cold"]
    # the ICC of judges on the probit latent scale: residual 1, as latent_icc of the ML probit fit
    icc = evalmix.latent_icc(fit, item="judge")
    v = float(fit.varcorr["variance"].iloc[0])
    assert icc.icc_runs == pytest.approx(v / (v + 1.0), rel=1e-12)
    assert icc.icc_runs == pytest.approx(evalmix.latent_icc(ml_fit, item="judge").icc_runs, abs=0.15)


@pytest.mark.slow
def test_offsets_and_weights_move_the_twins_as_they_move_the_ml_fits(sleep, wine, tmb_sim):
    # each twin with an offset() (or a proportion with weights= the trials) against its ML engine
    # with the same formula: the posterior means move with the ML estimates, within the tolerances
    # of the fits without them above
    kw = {"rng": 20261126, "progressbar": False}
    fit = bayes.lmer("Reaction ~ Days + offset(5 * Days) + (1|Subject)", sleep, **kw)
    ml = evalmix.lmer("Reaction ~ Days + offset(5 * Days) + (1|Subject)", sleep)
    converged(fit)
    assert ml.fixef["Days"] == pytest.approx(evalmix.lmer("Reaction ~ Days + (1|Subject)", sleep).fixef["Days"] - 5,
                                             abs=1e-6)
    for name, value in ml.fixef.items():
        assert in_sd_units(fit, name, value) < 0.3, name
    assert abs(evalmix.emmeans(fit, "Days").to_frame()["estimate"][0]
               - evalmix.emmeans(ml, "Days").to_frame()["estimate"][0]) < 0.3 * fit.posterior_table().set_index(
                   "parameter").loc["(Intercept)", "se"]

    d = wine.assign(o=(wine["temp"] == "warm") + 0.3 * (wine["contact"] == "yes"))
    fit = bayes.clmm("rating ~ temp + contact + offset(o) + (1|judge)", d, **kw)
    ml = evalmix.clmm("rating ~ temp + contact + offset(o) + (1|judge)", d)
    converged(fit)
    for name, value in ml.coef.items():
        assert in_sd_units(fit, name, value) < 0.5, name

    fit = bayes.glmmtmb("p ~ model + (1|item)", tmb_sim.assign(p=tmb_sim["k"] / tmb_sim["n"]),
                        family="betabinomial", weights="n", **kw)
    bb = ref("glmmtmb_reference.json")["fits"]["sim_bb"]  # the cbind(k, n - k) fit
    converged(fit)
    for name, value in zip(bb["coef_names"], bb["estimate"]):
        assert in_sd_units(fit, name, value) < 0.3, name
    assert in_sd_units(fit, "phi", bb["dispersion"]) < 1.0

    off = tmb_sim.assign(o=0.5 * (tmb_sim["model"] == "m2"))
    fit = bayes.glmmtmb("score ~ model + offset(o) + (1|item)", off, **kw)
    ml = evalmix.glmmtmb("score ~ model + offset(o) + (1|item)", off)
    converged(fit)
    assert ml.fixef["modelm2"] < 0.1  # the offset took 0.5 of m2's effect (0.56 without it)
    for name, value in ml.fixef.items():
        assert in_sd_units(fit, name, value) < 0.3, name
