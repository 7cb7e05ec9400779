"""Hierarchical Bayesian GLMM (evalmix.bayes): recovery of known truth, interval coverage, priors,
parameterisation, diagnostics, leaderboards and LOO comparison.  Small seeded designs, few draws."""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pandas as pd
import pytest

# skipped without the bayes extra; pymc itself is imported by the tests that sample, not at
# collection (every test process collects every file)
pytestmark = pytest.mark.skipif(importlib.util.find_spec("pymc") is None, reason="needs pymc (the bayes extra)")

import evalmix  # noqa: E402
from evalmix import bayes  # noqa: E402
from evalmix.bayes.model import build_model  # noqa: E402
from evalmix.bayes._arviz import elpd  # noqa: E402
from evalmix.core.errors import SamplingWarning  # noqa: E402
from evalmix.simulate import glmm_runs  # noqa: E402

# chains one after the other in this process with PyMC's sampler (no worker processes to start
# per fit); nutpie runs them in threads of this process anyway
FAST = dict(draws=300, tune=300, chains=2, progressbar=False,
            cores=None if "nutpie" in bayes.available_samplers() else 1)


def quiet_fit(formula, data, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        return bayes.glmer(formula, data, **{**FAST, **kw})


@pytest.fixture(scope="module")
def sim():
    return glmm_runs(3, 40, 3, model_effects=[-0.5, 0.3, 1.2], sd_item=1.2, sd_item_run=0.3, rng=11)


@pytest.fixture(scope="module")
def fit(sim):
    return quiet_fit("correct ~ model + (1|item) + (1|item:run)", sim, rng=3)


def test_posterior_means_near_truth(fit, sim):
    truth = sim.attrs["truth"]
    eff = truth["model_effects"]
    true = {"(Intercept)": eff["M1"], "modelM2": eff["M2"] - eff["M1"],
            "modelM3": eff["M3"] - eff["M1"], "sd((Intercept)|item)": truth["sd_item"]}
    s = fit.posterior_table().set_index("parameter")
    for name, value in true.items():
        # within 3 posterior SDs (a 99.7% band for a well-calibrated posterior)
        assert abs(s.loc[name, "estimate"] - value) < 3 * s.loc[name, "se"], name
        assert s.loc[name, "conf_low"] < s.loc[name, "estimate"] < s.loc[name, "conf_high"]
    assert list(s.columns) == ["estimate", "se", "conf_low", "conf_high", "r_hat", "ess_bulk",
                               "ess_tail", "divergences"]
    summ = fit.summary()
    assert list(summ.tables) == ["Parameters", "Random effects"]
    diag = ["r_hat", "ess_bulk", "ess_tail"]
    assert summ.to_frame().drop(columns=diag).equals(fit.posterior_table().drop(columns=diag))
    assert summ.to_frame()["r_hat"].tolist() == [f"{v:.3f}" for v in fit.posterior_table()["r_hat"]]
    assert "highest-density interval" in str(summ)
    assert fit.fixef.index.tolist() == ["(Intercept)", "modelM2", "modelM3"]
    assert fit.fixef_draws.shape == (600, 3)
    np.testing.assert_allclose(fit.fixef.to_numpy(), fit.fixef_draws.mean().to_numpy())
    vc = fit.varcorr.set_index("group")
    assert set(vc.index) == {"item", "item:run"}
    realised = np.std(list(truth["item_effects"].values()), ddof=1)
    assert vc.loc["item", "sd_conf_low"] < realised < vc.loc["item", "sd_conf_high"]


def test_idata_has_rowwise_log_likelihood(fit, sim):
    idata = fit.idata
    from evalmix.bayes._arviz import group_names

    assert "log_likelihood" in group_names(idata)
    ll = idata.log_likelihood["y"]
    assert ll.shape == (2, 300, len(sim))
    # each 0/1 row's likelihood is p or 1 - p: log values are negative
    assert float(ll.max()) < 0
    loo = fit.loo()
    assert np.isfinite(elpd(loo))


def test_rank_probabilities(fit):
    r = fit.ranks("model").to_frame()
    ranks = r[[f"rank_{k}" for k in (1, 2, 3)]].to_numpy()
    np.testing.assert_allclose(ranks.sum(axis=0), 1.0)
    np.testing.assert_allclose(ranks.sum(axis=1), 1.0)
    np.testing.assert_allclose(r["expected_rank"], ranks @ np.array([1, 2, 3]))
    assert r["model"].iloc[0] == "M3" and r["p_best"].iloc[0] > 0.9
    assert r["p_best"].sum() == pytest.approx(1.0)


def test_posterior_predictive_check(fit, sim):
    ppc = fit.posterior_predictive(by="model", spread="item", rng=1).to_frame()
    acc = ppc[ppc["check"] == "accuracy"].set_index("model")
    obs = sim.groupby("model")["correct"].mean()
    np.testing.assert_allclose(acc.loc[obs.index, "observed"], obs.to_numpy())
    assert ((acc["conf_low"] <= acc["observed"]) & (acc["observed"] <= acc["conf_high"])).all()
    # the model reproduces each model's accuracy: replicated means sit on the observed ones
    assert (acc["pred_mean"] - acc["observed"]).abs().max() < 0.03
    # random effects are deviations: the item effects average near zero
    re = fit.ranef()
    assert abs(re[re["group"] == "item"]["estimate"].mean()) < 0.15
    assert ppc["ppp"].between(0.01, 0.99).all()


@pytest.mark.slow
def test_interval_coverage_over_repeated_simulations():
    """90% HDIs of the model effects and the item SD cover the truth at about the nominal rate."""
    hits = []
    for rep in range(12):
        d = glmm_runs(2, 25, 2, model_effects=[-0.4, 0.6], sd_item=1.0, sd_item_run=0.0, rng=100 + rep)
        f = quiet_fit("correct ~ model + (1|item)", d, rng=rep, draws=250, tune=250)
        s = f.posterior_table(hdi_prob=0.9).set_index("parameter")
        for name, value in (("(Intercept)", -0.4), ("modelM2", 1.0), ("sd((Intercept)|item)", 1.0)):
            hits.append(s.loc[name, "conf_low"] <= value <= s.loc[name, "conf_high"])
    rate = np.mean(hits)
    # 36 intervals at 90%: a binomial 99% band is about 0.72-1.0
    assert 0.72 <= rate <= 1.0, rate


def test_prior_override_and_table(sim):
    res = bayes.default_priors("correct ~ model + (1|item)", sim, priors={"item": ("half_normal", 1)})
    assert isinstance(res, bayes.PriorTable) and "formula: correct ~ model + (1|item)" in repr(res)
    tab = res.table
    assert tab.set_index("parameter").loc["sd((Intercept)|item)", "prior"] == "HalfNormal(sigma=1)"
    assert tab.set_index("parameter").loc["sd((Intercept)|item)", "source"] == "user"
    assert tab.set_index("parameter").loc["modelM2", "prior"] == "Normal(mu=0, sigma=2.5)"
    # a very tight prior on the model effects pulls them to zero
    f = quiet_fit("correct ~ model + (1|item)", sim, rng=2, priors={"fixed": ("normal", 0, 0.01)})
    assert abs(f.fixef["modelM3"]) < 0.05
    assert (f.priors["source"] == "user").sum() == 2
    with pytest.raises(ValueError, match="unknown parameter"):
        bayes.default_priors("correct ~ model + (1|item)", sim, priors={"nosuch": ("normal", 0, 1)})
    with pytest.raises(ValueError, match="must be positive"):
        bayes.default_priors("correct ~ model + (1|item)", sim, priors={"sd": ("normal", 0, 1)})


def test_sampling_warning_on_short_chains(sim):
    with pytest.warns(SamplingWarning, match="effective sample size"):
        bayes.glmer("correct ~ model + (1|item)", sim, draws=30, tune=30, chains=2, rng=1,
                    progressbar=False, cores=FAST["cores"])


@pytest.mark.slow  # sampling or a simulation: the second test step
def test_counts_give_the_same_posterior_as_rows(sim):
    rows = quiet_fit("correct ~ model + (1|item)", sim, rng=5)
    agg = sim.groupby(["model", "item"], observed=True)["correct"].agg(["sum", "count"]).reset_index()
    agg = agg.rename(columns={"sum": "k", "count": "n"})
    counts = quiet_fit("cbind(k, n - k) ~ model + (1|item)", agg, rng=5)
    # identical pooled counts: the same posterior up to Monte Carlo error
    se = np.sqrt(rows.fixef_draws.var() / 150 + counts.fixef_draws.var() / 150)
    assert (np.abs(rows.fixef - counts.fixef) < 4 * se).all()
    assert rows.nobs == len(sim) and counts.nobs == len(agg)


@pytest.mark.slow
def test_correlated_slope_and_nested_terms():
    d = glmm_runs(2, 30, 2, slices={"language": ["EN", "ES"]}, sd_item=1.0, sd_slope=0.8, rng=4)
    f = quiet_fit("correct ~ model + language + (1 + language|item)", d, rng=1)
    names = f.posterior_table()["parameter"].tolist()
    assert "cor(languageES,(Intercept)|item)" in names
    vc = f.varcorr
    cor = vc[vc["var2"] != ""]["sd"].iloc[0]
    assert -1 < cor < 1
    f2 = quiet_fit("correct ~ model + (1|item/run)", d, rng=1)
    assert set(f2.varcorr["group"]) == {"item", "run:item"}  # lme4 names the nested term run:item


@pytest.mark.slow
def test_loo_comparison_prefers_the_true_model():
    d = glmm_runs(3, 30, 2, model_effects=[-1.5, 0.0, 1.5], sd_item=1.0, sd_item_run=0.0, rng=8)
    a = quiet_fit("correct ~ model + (1|item)", d, rng=1)
    b = quiet_fit("correct ~ 1 + (1|item)", d, rng=1)
    cmp = evalmix.compare_models({"model": a, "null": b})
    tab = cmp.to_frame()
    assert cmp.criterion == "loo"
    assert tab["name"].iloc[0] == "model"
    assert tab["elpd_diff"].iloc[1] > 2 * tab["dse"].iloc[1]
    # the ELPD is a sum over the rows as given (pooled cells are split back)
    assert a.loo().n_data_points == len(d)
    assert "higher expected log predictive density" in cmp.verdict()


def _deep_nbytes(obj, seen=None) -> int:
    """Bytes of the arrays and frames an evalmix object holds (through its fields, lists and
    dicts; PyMC and ArviZ objects are not entered)."""
    import dataclasses

    import pandas as pd

    seen = set() if seen is None else seen
    if id(obj) in seen:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        return obj.nbytes
    if isinstance(obj, (pd.DataFrame, pd.Series)):
        return int(np.sum(obj.memory_usage(deep=True)))
    if isinstance(obj, dict):
        return sum(_deep_nbytes(v, seen) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return sum(_deep_nbytes(v, seen) for v in obj)
    if type(obj).__module__.startswith("evalmix") and hasattr(obj, "__dict__"):
        names = ([f.name for f in dataclasses.fields(obj)] if dataclasses.is_dataclass(obj)
                 else list(vars(obj)))
        return sum(_deep_nbytes(object.__getattribute__(obj, n), seen) for n in names
                   if hasattr(obj, n))
    return 0


def test_remove_data_keeps_what_does_not_need_the_rows(fit):
    """A posterior fit without its rows: draws, summaries, emmeans/contrast and ranks unchanged;
    what needs the rows raises a DataError saying so; the per-row arrays are gone."""
    from evalmix.core.errors import DataError

    fit.loo()  # caches the per-row linear predictors and log-likelihoods
    small = fit.remove_data()
    assert fit.has_data and not small.has_data and small.remove_data() is small
    assert small._bm is None and not {"eta", "loglik", "idata"} & set(small._cache)
    assert all(p.term.index.size == 0 for p in small._plans)
    # the fit with its rows holds more than twice the bytes (rows x draws dominate)
    assert 2 * _deep_nbytes(small) < _deep_nbytes(fit)
    pd.testing.assert_frame_equal(small.fixef_draws, fit.fixef_draws)
    pd.testing.assert_frame_equal(small.posterior_table(), fit.posterior_table())
    pd.testing.assert_frame_equal(small.posterior_table(random_effects=True),
                                  fit.posterior_table(random_effects=True))
    pd.testing.assert_frame_equal(small.varcorr, fit.varcorr)
    pd.testing.assert_frame_equal(small.ranef(), fit.ranef())
    pd.testing.assert_frame_equal(small.ranef_draws("item"), fit.ranef_draws("item"))
    assert str(small) == str(fit) and small.diagnostics() == fit.diagnostics()
    for name, tab in fit.summary().tables.items():
        pd.testing.assert_frame_equal(small.summary().tables[name], tab)
    emm, emm_small = evalmix.emmeans(fit, "model"), evalmix.emmeans(small, "model")
    pd.testing.assert_frame_equal(emm_small.to_frame(), emm.to_frame())
    pd.testing.assert_frame_equal(evalmix.contrast(emm_small, "pairwise").to_frame(),
                                  evalmix.contrast(emm, "pairwise").to_frame())
    pd.testing.assert_frame_equal(small.ranks("model").to_frame(), fit.ranks("model").to_frame())
    for call, says in ((lambda f: f.log_likelihood(), "log_likelihood"),
                       (lambda f: f.loo(), "log_likelihood"), (lambda f: f.waic(), "waic"),
                       (lambda f: f.idata, "log_likelihood"),
                       (lambda f: f.posterior_predictive(by="model", rng=1),
                        "posterior_predictive")):
        with pytest.raises(DataError, match=f"{says}.*remove_data"):
            call(small)
    with pytest.raises(ValueError, match="weights"):
        evalmix.emmeans(small, "model", weights="proportional")


def test_the_ml_vocabulary_where_it_carries_over(fit, sim):
    # ngroups and confint() as every maximum-likelihood fit answers them; confint's intervals are
    # the posterior's highest-density intervals of the fixed effects
    ml = evalmix.glmer("correct ~ model + (1|item) + (1|item:run)", sim)
    assert fit.ngroups == dict(ml.ngroups)
    ci = fit.confint(0.9).to_frame().set_index("term")
    assert ci.index.tolist() == ml.fixef.index.tolist() and (ci["method"] == "hdi").all()
    draws = fit.fixef_draws["modelM3"].to_numpy()
    assert ci.loc["modelM3", "estimate"] == pytest.approx(draws.mean())
    inside = ((draws >= ci.loc["modelM3", "conf_low"]) & (draws <= ci.loc["modelM3", "conf_high"])).mean()
    assert inside == pytest.approx(0.9, abs=0.01)
    with pytest.raises(evalmix.ArgumentError, match="level"):
        fit.confint(95)


def test_emmeans_and_contrasts_from_draws(fit):
    emm = evalmix.emmeans(fit, "model")
    draws = fit.fixef_draws
    # the M2 marginal mean is (Intercept) + modelM2 in each draw
    m2 = (draws["(Intercept)"] + draws["modelM2"]).to_numpy()
    row = emm.to_frame().set_index("model").loc["M2"]
    assert row["estimate"] == pytest.approx(m2.mean())
    assert row["se"] == pytest.approx(m2.std(ddof=1), rel=1e-6)
    assert row["conf_low"] < row["estimate"] < row["conf_high"]
    con = evalmix.contrast(emm, method="pairwise").to_frame().set_index("contrast")
    d13 = -draws["modelM3"].to_numpy()  # M1 - M3
    assert con.loc["M1 - M3", "estimate"] == pytest.approx(d13.mean())
    assert con.loc["M1 - M3", "prob_positive"] == pytest.approx((d13 > 0).mean())
    assert con.loc["M1 - M3", "odds_ratio"] == pytest.approx(np.exp(d13.mean()))
    # the contrasts agree with the rank probabilities: M3 beats M1 in (almost) every draw
    assert con.loc["M1 - M3", "prob_positive"] < 0.01


def test_parameterization_choice_and_validation(sim):
    bm = build_model("correct ~ model + (1|item) + (1|item:run)", sim,
                     parameterization={"item": "noncentered", "item:run": "centered"})
    forms = dict(zip(bm.parameterization_table()["term"], bm.parameterization_table()["form"]))
    assert forms == {"1|item": "noncentered", "1|item:run": "centered"}
    with pytest.raises(ValueError, match="unknown grouping factor"):
        build_model("correct ~ model + (1|item)", sim, parameterization={"nosuch": "centered"})
    with pytest.raises(ValueError, match="sampler"):
        bayes.glmer("correct ~ model + (1|item)", sim, sampler="gibbs")


@pytest.mark.shared
def test_ai4math_parameterization(ai4math_raw):
    bm = build_model("correct ~ model + language + (1|problem_id) + (1|problem_id:run)", ai4math_raw)
    t = bm.parameterization_table().set_index("term")
    # 96 rows per item and an item SD near 3: centred, holding the intercept
    assert t.loc["1|problem_id", "form"] == "centered" and t.loc["1|problem_id", "holds_intercept"]
    assert t.loc["1|problem_id:run", "form"] == "noncentered"


@pytest.mark.shared
@pytest.mark.slow
def test_ai4math_posterior_means_match_ml(ai4math_raw):
    from evalmix.glmm import glmer as ml_glmer

    formula = "correct ~ model + language + (1|problem_id) + (1|problem_id:run)"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ml = ml_glmer(formula, ai4math_raw)
    f = quiet_fit(formula, ai4math_raw, rng=7)
    diff = (f.fixef - ml.fixef).abs()
    assert diff.max() < 0.1, diff
    # and lme4's own ML estimates (tests/reference/lme4_reference.R), R's column order
    import json

    from conftest import REFERENCE

    ref = next(c for c in json.loads((REFERENCE / "lme4_reference.json").read_text())["fits"]
               if c["id"] == "ai4math_m_l")
    assert ref["formula"] == formula
    assert np.abs(f.fixef.to_numpy() - np.asarray(ref["fixef"])).max() < 0.1


# ---------------------------------------------------------------------------------------------
# the compiled log density (evalmix.bayes.fused) against PyMC's, and the sampler that uses it

_PYMC_FNS: dict = {}


def _pymc_logp_dlogp(bm, density, x):
    point = density.point(x)
    if id(bm) not in _PYMC_FNS:  # compile PyMC's log density and its gradient once per model
        # the model is kept with its function: a freed model's id can be reused by another.  One
        # function of both (the graphs of compile_logp and compile_dlogp) compiles their shared
        # part once
        _PYMC_FNS[id(bm)] = (bm, bm.model.compile_fn([bm.model.logp(), bm.model.dlogp()]))
    _, logp_dlogp_fn = _PYMC_FNS[id(bm)]
    lp, g = logp_dlogp_fn(point)
    lp = float(lp)
    sizes = [point[v.name].size for v in bm.model.value_vars]
    parts = dict(zip([v.name for v in bm.model.value_vars], np.split(g, np.cumsum(sizes)[:-1])))
    return lp, np.concatenate([parts[vname] for _, vname, _, _ in density.blocks])


@pytest.fixture(scope="module")
def sim_x(sim):
    d = sim.copy()
    rng = np.random.default_rng(0)
    d["x"] = rng.normal(size=len(d))
    # item attributes: a numeric feature and a three-level domain, constant within each item
    items = sorted(d["item"].unique())
    w = dict(zip(items, rng.normal(size=len(items))))
    d["w"] = d["item"].map(w)
    d["dom"] = d["item"].map({q: f"d{i % 3}" for i, q in enumerate(items)})
    return d


def _counts(sim, trials):
    agg = sim.groupby(["model", "item"], observed=True)["correct"].agg(["sum", "count"]).reset_index()
    agg["n"] = agg["count"] * trials
    agg["k"] = agg["sum"] * trials - agg["count"]
    agg["k"] = agg["k"].clip(lower=0)
    return agg


FUSED_CASES = {
    "auto": ("correct ~ model + (1|item) + (1|item:run)", {}),
    "centred_items_noncentred_runs": ("correct ~ model + (1|item) + (1|item:run)",
                                      dict(parameterization={"item": "centered", "item:run": "noncentered"})),
    "all_noncentred": ("correct ~ model + (1|item) + (1|item:run)", dict(parameterization="noncentered")),
    "all_centred": ("correct ~ model + (1|item) + (1|item:run)", dict(parameterization="centered")),
    "intercept_only": ("correct ~ 1 + (1|item)", {}),
    "no_intercept": ("correct ~ 0 + model + (1|item)", dict(parameterization="centered")),
    "slope_column": ("correct ~ model + x + (1|item) + (0 + x|item)", {}),
    "heavy_tailed_priors": ("correct ~ model + (1|item) + (1|item:run)",
                            dict(priors={"Intercept": ("student_t", 3, 0.5, 2), "fixed": ("cauchy", 0, 1),
                                         "item": ("half_student_t", 3, 1), "item:run": ("exponential", 2)},
                                 parameterization={"item": "centered", "item:run": "noncentered"})),
    "laplace_half_cauchy": ("correct ~ model + (1|item) + (1|item:run)",
                            dict(priors={"fixed": ("laplace", 0, 1), "sd": ("half_cauchy", 1)},
                                 parameterization={"item": "noncentered", "item:run": "centered"})),
    "item_level_columns": ("correct ~ model + x + w + dom + (1|item) + (1|item:run)",
                           dict(parameterization={"item": "centered", "item:run": "noncentered"})),
    "item_level_columns_no_qr": ("correct ~ model + w + dom + (1|item)", dict(qr=False)),
    "mixed_families_no_qr": ("correct ~ model + (1|item)",
                             dict(qr=False, priors={"model[T.M2]": ("normal", 0, 1),
                                                    "model[T.M3]": ("student_t", 4, 0, 1)})),
}


# Each case compiles its own PyMC log density (a few CPU seconds): the default step checks one
# case of each kind of term and prior, the second step the other parameterisations and priors.
SLOW_FUSED = {"all_centred", "all_noncentred", "centred_items_noncentred_runs", "heavy_tailed_priors",
              "laplace_half_cauchy", "mixed_families_no_qr", "item_level_columns_no_qr", "slope_column"}


@pytest.mark.parametrize("case", [pytest.param(c, marks=pytest.mark.slow) if c in SLOW_FUSED else c
                                  for c in sorted(FUSED_CASES)])
def test_fused_density_matches_pymc(case, sim_x):
    """The kernel's log density and gradient equal PyMC's (relative 1e-8) at random points, near
    the posterior and far from it (|eta| > 600, where the kernel switches to row-wise exp/log1p)."""
    from evalmix.bayes.fused import FusedDensity, fused_reason

    formula, kw = FUSED_CASES[case]
    bm = build_model(formula, sim_x, likelihood="fused", **kw)
    assert fused_reason(bm) is None
    density = FusedDensity.from_model(bm)
    rng = np.random.default_rng(1)
    for scale in (0.3, 1.0, 60.0):
        x = rng.normal(size=density.n_dim) * scale
        lp, g = density.logp_dlogp(x)
        lp_ref, g_ref = _pymc_logp_dlogp(bm, density, x)
        assert lp == pytest.approx(lp_ref, rel=1e-8), (case, scale)
        np.testing.assert_allclose(g, g_ref, rtol=1e-8, atol=1e-8 * np.abs(g_ref).max())


def test_item_attributes_are_held_by_the_item_term(sim_x):
    """Hierarchical centring of group-level predictors: the columns constant within each item
    (w and the domain contrasts) enter the mean of the centred item effects, not the rows."""
    bm = build_model("correct ~ model + x + w + dom + (1|item) + (1|item:run)", sim_x, likelihood="fused",
                     parameterization={"item": "centered", "item:run": "centered"})
    holder = [p for p in bm.plans if p.level_x is not None]
    assert [p.term.group for p in holder] == ["item"]  # the coarsest grouping (constant in item:run too)
    coef = [c for j, c in enumerate(bm.fixed_names) if j != bm.intercept_col]
    held = [coef[j] for j in np.flatnonzero(np.any(holder[0].level_x != 0, axis=0))]
    assert held == ["w", "domd1", "domd2"]
    # the held columns are out of the rows' linear predictor; x and model stay in it
    Xt = bm.fixed_basis["Xt"] @ np.linalg.inv(bm.fixed_basis["T"])
    assert np.all(Xt[:, [coef.index(c) for c in held]] == 0)
    assert np.any(Xt[:, coef.index("x")] != 0)


def test_held_item_attributes_give_the_ml_estimates(sim_x):
    """Sampled with the item attributes held, the coefficients and the item effects (deviations
    from their regression mean) agree with glmer's within a fraction of their posterior SD."""
    formula = "correct ~ model + w + dom + (1|item)"
    post = quiet_fit(formula, sim_x, rng=2, draws=400, tune=400, chains=2)
    ml = evalmix.glmer(formula, sim_x)
    tab = post.posterior_table().set_index("parameter")
    for name, est in ml.fixef.items():
        assert abs(tab.loc[name, "estimate"] - est) < 0.5 * tab.loc[name, "se"], name
    draws = post.ranef_draws("item")
    re = ml.ranef()
    u_ml = re[re["group"] == "item"].set_index("level")["mode"]
    u = draws.mean(axis=0).rename(index=lambda c: str(c).split(":")[0]).loc[u_ml.index.astype(str)].to_numpy()
    assert np.corrcoef(u, u_ml)[0, 1] > 0.98
    assert abs(u.mean()) < 0.1  # deviations, not the regression mean


@pytest.mark.parametrize("trials", [3, 100])
def test_fused_density_matches_pymc_on_counts(trials, sim):
    """k-of-n rows: integer trials up to 64 take the product form, more take the row-wise form."""
    from evalmix.bayes.fused import FusedDensity

    bm = build_model("cbind(k, n - k) ~ model + (1|item)", _counts(sim, trials), likelihood="fused")
    density = FusedDensity.from_model(bm)
    assert (density.arrays["mi"][0] >= 0) == (trials <= 64)
    x = np.random.default_rng(2).normal(size=density.n_dim) * 0.5
    lp, g = density.logp_dlogp(x)
    lp_ref, g_ref = _pymc_logp_dlogp(bm, density, x)
    assert lp == pytest.approx(lp_ref, rel=1e-8)
    np.testing.assert_allclose(g, g_ref, rtol=1e-8, atol=1e-8 * np.abs(g_ref).max())


def test_fused_initial_point_and_coverage(sim):
    from evalmix.bayes.fused import FusedDensity, fused_reason

    bm = build_model("correct ~ model + (1|item) + (1|item:run)", sim, likelihood="fused")
    density = FusedDensity.from_model(bm)
    a, b = density.initial_point(5), density.initial_point(5)
    np.testing.assert_array_equal(a, b)
    assert np.isfinite(density.logp_dlogp(a)[0])
    assert len(a) == sum(v.size for v in bm.model.initial_point().values())
    d = glmm_runs(2, 20, 2, slices={"language": ["EN", "ES"]}, sd_slope=0.5, rng=1)
    corr = build_model("correct ~ model + language + (1 + language|item)", d)
    assert fused_reason(corr) is None  # correlated terms too (tests/bayes/test_fused_correlated.py)
    probit = build_model("correct ~ model + language + (1 + language|item)", d, link="probit")
    assert "probit" in fused_reason(probit)
    with pytest.raises(ValueError, match="does not cover"):
        FusedDensity.from_model(probit)


@pytest.mark.slow
def test_default_sampler_matches_pymc_sampler(sim):
    """The default sampler (the compiled kernel under nutpie when nutpie and numba are installed)
    gives the posterior of PyMC's own sampler, with the same stored variables."""
    from evalmix.bayes.fused import fused_available

    formula = "correct ~ model + (1|item) + (1|item:run)"
    auto = quiet_fit(formula, sim, rng=4, draws=500, tune=500)
    ref = quiet_fit(formula, sim, rng=4, draws=500, tune=500, sampler="pymc")
    assert ("compiled numba kernel" in auto.sampler) == fused_available()
    se = np.sqrt(auto.fixef_draws.var() / 250 + ref.fixef_draws.var() / 250)
    assert (np.abs(auto.fixef - ref.fixef) < 4 * se).all()
    sd_a, sd_r = auto.varcorr.set_index("group")["sd"], ref.varcorr.set_index("group")["sd"]
    assert abs(sd_a["item"] - sd_r["item"]) < 0.15
    stored = {"b", "Intercept", "Intercept_c", "(1|item)", "(1|item:run)", "sd(1|item)", "sd(1|item:run)"}
    assert stored <= set(auto.idata.posterior.data_vars)
    assert stored <= set(ref.idata.posterior.data_vars)
    assert auto.idata.log_likelihood["y"].shape == (2, 500, len(sim))


def test_ranks_leave_out_a_non_estimable_level():
    """A rank-deficient fit (model C never ran in ES): C's mean averaged over languages involves
    the empty cell, so it is not ranked (a warning names it) instead of getting a silent number;
    the other means are the posterior means of the shared reference grid."""
    from evalmix.core.errors import DataWarning, FitWarning

    data = glmm_runs(3, 30, 2, rng=5)
    data["lang"] = np.where(data["item"].astype(str).str[-1].isin(list("02468")), "ES", "EN")
    data = data[~((data["model"] == "M3") & (data["lang"] == "ES"))]
    with pytest.warns(FitWarning, match="rank deficient"):
        fit = quiet_fit("correct ~ model * lang + (1|item)", data, rng=4)
    with pytest.warns(DataWarning, match="model=M3"):
        r = fit.ranks("model")
    assert sorted(r.table["model"]) == ["M1", "M2"] and r.draws.shape[1] == 2
    emm = evalmix.emmeans(fit, "model").to_frame().set_index("model")
    assert np.isnan(emm.loc["M3", "estimate"])
    got = r.table.set_index("model")["mean_logit"]
    np.testing.assert_allclose(got, emm.loc[got.index, "estimate"], rtol=1e-10)


# ---------------------------------------------------------------------------------------------
# chains as tasks of evalmix.parallel.parallel_map: one seed stream per chain


def _tiny_fit(**kw):
    d = glmm_runs(2, 15, 2, model_effects=[0.0, 0.8], sd_item=1.0, sd_item_run=0.0, rng=21)
    return quiet_fit("correct ~ model + (1|item)", d, **{"draws": 60, "tune": 60, "rng": 8, "target_accept": 0.65, **kw})


@pytest.mark.slow  # sampling or a simulation: the second test step
def test_chains_give_the_same_draws_whatever_runs_them() -> None:
    """A seed fixes every chain's draws: in this process, in threads, and where the model is
    rebuilt from its recipe (a worker process or a cluster)."""
    import pickle

    import joblib

    from evalmix.bayes.sampling import ChainJob, _run_chain

    one = _tiny_fit(cores=1)
    two = _tiny_fit(cores=2)
    with joblib.parallel_config(backend="threading", n_jobs=2):
        threads = _tiny_fit()
    post = one.idata.posterior
    assert post["chain"].values.tolist() == [0, 1] and post.sizes["draw"] == 60
    assert one.idata.sample_stats["diverging"].shape == (2, 60)
    for other in (two, threads):
        np.testing.assert_array_equal(other.fixef_draws.values, one.fixef_draws.values)
        np.testing.assert_array_equal(other.idata.sample_stats["diverging"], one.idata.sample_stats["diverging"])
    assert not np.array_equal(post["Intercept"][0], post["Intercept"][1])  # chains are distinct
    assert not np.array_equal(_tiny_fit(cores=1, rng=9, chains=1).fixef_draws.values,
                              one.fixef_draws.values[:60])
    # chain 1 is the sampler run with the second child of SeedSequence(8), on a model rebuilt
    # from the pickled job
    from functools import partial

    d = glmm_runs(2, 15, 2, model_effects=[0.0, 0.8], sd_item=1.0, sd_item_run=0.0, rng=21)
    from evalmix.bayes.sampling import choose_sampler, likelihood_for
    from evalmix.model import check_data

    name = choose_sampler("auto")
    recipe = partial(build_model, "correct ~ model + (1|item)", check_data("correct ~ model + (1|item)", d),
                     priors=None, parameterization="auto", likelihood=likelihood_for(name))
    job = pickle.loads(pickle.dumps(ChainJob(recipe, sampler=name, draws=60, tune=60, target_accept=0.65,
                                             max_treedepth=10)))
    chain1 = _run_chain(job, np.random.SeedSequence(8).spawn(2)[1])
    var = "Intercept_c"
    np.testing.assert_array_equal(np.asarray(chain1.posterior[var])[0], np.asarray(post[var])[1])


def test_ranef_keys_are_the_ml_fits(fit, sim):
    # one layout for every fit's random effects: group, term, level first, as glmer's ranef()
    ml = evalmix.glmer("correct ~ model + (1|item) + (1|item:run)", sim)
    post = fit.ranef()
    assert list(post.columns[:3]) == list(ml.ranef().columns[:3]) == ["group", "term", "level"]
    assert post[["group", "term"]].drop_duplicates().values.tolist() == \
        ml.ranef()[["group", "term"]].drop_duplicates().values.tolist()
