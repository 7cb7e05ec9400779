"""Confidence intervals of glmer fits: profile likelihood and parametric bootstrap against lme4
(tests/reference/intervals_reference.R -> intervals_reference.json), Wald, and coverage by
seeded simulation with known truth."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalmix import glmer
from evalmix.core.errors import FitWarning, SeparationWarning
from evalmix.glmm.bootstrap import bootmer, percentile_interval

REF = Path(__file__).parents[1] / "reference"
R = json.loads((REF / "intervals_reference.json").read_text())

_FITS: dict[str, object] = {}


def _fit(case_id: str):
    if case_id not in _FITS:
        case = R["cases"][case_id]
        d = pd.read_csv(REF / case["data"])
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _FITS[case_id] = glmer(case["formula"], d)
    return _FITS[case_id]


def _r_name(term: str) -> str:
    """lme4's coefficient names are evalmix's (``modelbeta``, ``(Intercept)``)."""
    return term


def _reference(case_id: str, which: str = "profile", lower: str = "lower",
               upper: str = "upper") -> pd.DataFrame:
    ref = R["cases"][case_id][which]
    return pd.DataFrame({"term": [_r_name(t) for t in ref["term"]], "lower": ref[lower],
                         "upper": ref[upper]}).set_index("term")


@pytest.mark.parametrize("case_id", ["item_run", "counts", "slope"])
def test_profile_intervals_match_lme4(case_id):
    """Profile intervals = lme4's confint(profile(fit)) (fine grid) to 5e-4 on the logit/sd scale.

    lme4 interpolates the profile with splines; on its default grid its ends move by up to
    1e-3 (also stored), on a 5 times finer grid they agree with the exact roots found here."""
    fit = _fit(case_id)
    ci = fit.confint("profile").to_frame().set_index("term")
    ref = _reference(case_id)
    ref = ref.loc[[t for t in ref.index if not t.startswith("cor_")]]  # correlations: not profiled
    assert list(ci.index) == list(ref.index)
    np.testing.assert_allclose(ci["conf_low"], ref["lower"], atol=5e-4)
    np.testing.assert_allclose(ci["conf_high"], ref["upper"], atol=5e-4)
    # and lme4's default-grid spline within its own 1.5e-3
    dflt = _reference(case_id, lower="lower_default_grid", upper="upper_default_grid").loc[ref.index]
    np.testing.assert_allclose(ci["conf_low"], dflt["lower"], atol=1.5e-3)
    assert (ci["method"] == "profile").all()


def test_profile_level_and_parm():
    fit = _fit("counts")
    ci = fit.confint("profile", level=0.90, parm="beta_").to_frame().set_index("term")
    ref = _reference("counts", lower="lower90", upper="upper90")
    ref = ref.loc[[t for t in ref.index if not t.startswith("sd_")]]
    assert list(ci.index) == list(ref.index)
    np.testing.assert_allclose(ci[["conf_low", "conf_high"]].to_numpy(),
                               ref[["lower", "upper"]].to_numpy(), atol=5e-4)
    sd = fit.confint("profile", parm="theta_").to_frame()
    assert sd["term"].tolist() == ["sd_(Intercept)|item"]


def test_singular_sd_has_lower_end_zero():
    fit = _fit("item_run")
    ci = fit.confint("profile", parm="theta_").to_frame().set_index("term")
    assert ci.loc["sd_(Intercept)|item:run", "conf_low"] == 0.0


def test_wald_intervals_match_lme4():
    """lme4 ran with tolPwrss = 1e-12: its SEs are those of the exact Hessian."""
    case = R["cases"]["item_run"]
    fit = glmer(case["formula"], pd.read_csv(REF / case["data"]), vcov_method="hessian_exact")
    ci = fit.confint().to_frame().set_index("term")
    ref = _reference("item_run", "wald")
    np.testing.assert_allclose(ci.loc[ref.index, "conf_low"], ref["lower"], atol=2e-3)
    np.testing.assert_allclose(ci.loc[ref.index, "conf_high"], ref["upper"], atol=2e-3)
    assert ci.filter(like="sd_", axis=0)["conf_low"].isna().all()  # lme4: NA for the SDs


@pytest.mark.slow  # a Monte-Carlo comparison: the second test step
def test_bootstrap_matches_bootmer_within_monte_carlo_error():
    """Same seed cannot match across languages: lme4's bootMer (500 replicates) and ours (200)
    are compared within Monte-Carlo error. The SE of a 2.5%/97.5% quantile of a normal-ish
    distribution with SD s from n draws is about 2.1 s / sqrt(n)... here 0.19 s (n = 200) and
    0.12 s (n = 500): ends must agree within 3 x 0.22 s; bootstrap SDs within 25% and means
    within 3 x s (1/sqrt(200) + 1/sqrt(500))."""
    fit = _fit("counts")
    ref = R["cases"]["counts"]["boot"]
    ci = fit.confint("boot", nsim=200, rng=11)
    reps = ci.boot.replicates
    tab = ci.to_frame().set_index("term")
    for t, lo, hi, mean, sd in zip(ref["term"], ref["lower"], ref["upper"], ref["mean"],
                                   ref["sd"]):
        name = _r_name(t)
        tol = 3 * 0.22 * sd
        assert tab.loc[name, "conf_low"] == pytest.approx(lo, abs=tol), name
        assert tab.loc[name, "conf_high"] == pytest.approx(hi, abs=tol), name
        assert reps[name].std(ddof=1) == pytest.approx(sd, rel=0.25), name
        assert reps[name].mean() == pytest.approx(mean, abs=3 * sd * (200**-0.5 + 500**-0.5))
    assert (tab["method"] == "boot").all() and ci.boot.nsim == 200


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_bootstrap_depends_on_the_seed_only():
    fit = _fit("counts")
    a = bootmer(fit, 6, seed=3).replicates
    b = bootmer(fit, 6, seed=3).replicates
    c = bootmer(fit, 6, seed=4).replicates
    pd.testing.assert_frame_equal(a, b)
    assert not np.allclose(a.to_numpy(), c.to_numpy())
    par = bootmer(fit, 6, seed=3, n_jobs=2).replicates
    np.testing.assert_allclose(par.to_numpy(), a.to_numpy(), rtol=1e-10)


def test_percentile_interval_with_infinite_replicates():
    x = np.array([0.0, 1.0, 2.0, 3.0, np.inf])
    assert percentile_interval(x, 0.5) == (1.0, 3.0)
    lo, hi = percentile_interval(np.array([0.0, 1.0, np.inf, np.inf]), 0.9)
    assert lo == pytest.approx(0.15) and hi == np.inf
    np.testing.assert_allclose(percentile_interval(np.arange(101.0), 0.9), (5.0, 95.0))


def test_intervals_of_a_separated_fit():
    d = pd.read_csv(REF / "separation_runs.csv")
    with pytest.warns(SeparationWarning):
        fit = glmer("y_nonref ~ model + (1|item)", d)
    with pytest.warns(FitWarning, match=r"no profile interval for \['modelmodel-B'\]"):
        ci = fit.confint("profile", parm="beta_").to_frame().set_index("term")
    assert np.isnan(ci.loc["modelmodel-B", ["conf_low", "conf_high"]].astype(float)).all()
    assert ci.loc["modelmodel-B", "estimate"] == np.inf
    # the finite coefficients are profiled on the limit fit (lme4 on the remaining rows)
    assert np.isfinite(ci.loc[["(Intercept)", "modelmodel-C"], ["conf_low", "conf_high"]]).all().all()
    lo, hi = ci.loc["(Intercept)", ["conf_low", "conf_high"]]
    assert lo < fit.fixef["(Intercept)"] < hi
    with pytest.raises(ValueError, match="fixef_prior"):
        fit.confint("boot", nsim=5, rng=1)


def test_bad_arguments():
    fit = _fit("counts")
    with pytest.raises(ValueError, match="method"):
        fit.confint("bca")
    with pytest.raises(ValueError, match="parm"):
        fit.confint("wald", parm="sigma")
    with pytest.raises(ValueError, match="level"):
        fit.confint("wald", level=95)


# ---------------------------------------------------------------------- coverage, known truth
def _simulate(rng: np.random.Generator, n_items: int = 30, reps: int = 2) -> pd.DataFrame:
    item = np.repeat(np.arange(n_items), 2 * reps)
    model = np.tile(np.repeat(["a", "b"], reps), n_items)
    eta = -0.3 + 0.8 * (model == "b") + rng.normal(0, 1.0, n_items)[item]
    y = (rng.random(item.size) < 1 / (1 + np.exp(-eta))).astype(int)
    return pd.DataFrame({"item": item, "model": model, "correct": y})


@pytest.mark.slow
def test_profile_and_bootstrap_coverage_with_known_truth():
    """Seeded simulation, truth beta_b = 0.8, sd_item = 1: 95% profile and percentile-bootstrap
    intervals cover the truth near 95% of the time. 60 data sets (profile) and 40 data sets with
    99 replicates (bootstrap): a coverage below 0.85 (profile) or 0.80 (bootstrap) would be
    more than 3 binomial SEs below 0.95."""
    rng = np.random.default_rng(2024)
    hits_p, hits_sd, hits_b = [], [], []
    for i in range(60):
        d = _simulate(rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = glmer("correct ~ model + (1|item)", d)
            if fit.separation is not None:
                continue
            ci = fit.confint("profile").to_frame().set_index("term")
            hits_p.append(ci.loc["modelb", "conf_low"] <= 0.8 <= ci.loc["modelb", "conf_high"])
            hits_sd.append(ci.loc["sd_(Intercept)|item", "conf_low"] <= 1.0
                           <= ci.loc["sd_(Intercept)|item", "conf_high"])
            if i < 40:
                bt = fit.confint("boot", parm="beta_", nsim=99, rng=i).to_frame().set_index("term")
                hits_b.append(bt.loc["modelb", "conf_low"] <= 0.8 <= bt.loc["modelb", "conf_high"])
    assert len(hits_p) >= 55
    assert np.mean(hits_p) >= 0.85 and np.mean(hits_sd) >= 0.85
    assert np.mean(hits_b) >= 0.80
