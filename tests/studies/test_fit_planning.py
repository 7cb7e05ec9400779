"""ICC, SE-vs-runs and the planner from fitted lmer, clmm and glmmtmb models (scores beyond 0/1)."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import special

import evalmix
from evalmix.core.errors import DataError
from evalmix.studies.repetitions import VarianceComponents, components_from_fit, plan, se_vs_runs

MODELS = {"A": 0.5, "B": 0.0, "C": -0.3}


def _gaussian(n_items: int, n_runs: int, *, sd_item: float, sd_own: float, sd_run: float, sd_e: float,
              seed: int) -> pd.DataFrame:
    """Scores = model effect + item + model:item + item:run (shared by the models) + residual."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0, sd_item, n_items)
    c = rng.normal(0, sd_run, (n_items, n_runs))
    rows = []
    for m, effect in MODELS.items():
        d = rng.normal(0, sd_own, n_items)
        for i in range(n_items):
            for r in range(n_runs):
                rows.append((m, f"q{i}", r, effect + a[i] + d[i] + c[i, r] + rng.normal(0, sd_e)))
    return pd.DataFrame(rows, columns=["model", "item", "run", "score"])


def _ordinal(n_items: int, n_runs: int, *, sd_item: float, seed: int, link: str = "logit") -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.normal(0, sd_item, n_items)
    rows = []
    for m, effect in MODELS.items():
        for i in range(n_items):
            for r in range(n_runs):
                e = rng.logistic() if link == "logit" else rng.normal()
                rows.append((m, f"q{i}", r, 1 + int(np.sum(effect + a[i] + e > np.array([-1.5, 0.0, 1.5])))))
    return pd.DataFrame(rows, columns=["model", "item", "run", "rating"])


class _Fit:
    """A fit as latent_icc reads it: varcorr, family, link and the beta-binomial precision."""

    def __init__(self, vc: pd.DataFrame, family: str, link: str = "logit", dispersion: float = 1.0) -> None:
        self.varcorr, self.family, self.link, self.dispersion = vc, family, link, dispersion


def _vc(**variances: float) -> pd.DataFrame:
    return pd.DataFrame({"group": list(variances), "var1": ["(Intercept)"] * len(variances),
                         "var2": [None] * len(variances), "variance": list(variances.values()),
                         "sd": [math.sqrt(v) for v in variances.values()]})


# ---------------------------------------------------------------- ICC of every family

def test_latent_icc_of_an_lmer_fit_is_on_the_observed_scale_and_recovers_the_truth():
    df = _gaussian(150, 3, sd_item=1.0, sd_own=0.0, sd_run=0.5, sd_e=0.8, seed=1)
    fit = evalmix.lmer("score ~ model + (1|item) + (1|item:run)", df)
    r = evalmix.latent_icc(fit, n_runs=3)
    assert r.scale == "observed"
    assert list(r.table["component"]) == ["item", "item:run", "residual"]
    # closed form of the fit's own variances ...
    var = dict(zip(fit.varcorr["group"], fit.varcorr["variance"]))
    assert r.icc_runs == pytest.approx(var["item"] / (var["item"] + var["item:run"] + var["Residual"]), rel=1e-12)
    # ... and the truth 1 / (1 + 0.25 + 0.64) within the sampling error of 150 items
    assert r.icc_runs == pytest.approx(1 / 1.89, abs=0.07)


@pytest.mark.parametrize("link, residual", [("logit", math.pi**2 / 3), ("probit", 1.0)])
def test_latent_icc_of_a_clmm_uses_the_latent_residual_of_its_link(link, residual):
    df = _ordinal(120, 2, sd_item=1.2, seed=2, link=link)
    fit = evalmix.clmm("rating ~ model + (1|item)", df, link=link)
    r = evalmix.latent_icc(fit)
    s2 = float(fit.varcorr["variance"].iloc[0])
    assert r.scale == "latent" and r.table["variance"].iloc[-1] == pytest.approx(residual, rel=1e-12)
    assert r.icc_runs == pytest.approx(s2 / (s2 + residual), rel=1e-12)
    # no run term: the ICC is the item share and no run share is invented
    assert r.run_share == 0.0 and list(r.table["component"]) == ["item", "residual"]
    assert r.icc_runs == pytest.approx(1.44 / (1.44 + residual), abs=0.08)


@pytest.mark.parametrize("link, residual", [("logit", math.pi**2 / 3), ("probit", 1.0)])
def test_latent_icc_of_the_bayesian_clmm_twin_uses_its_cumulative_link(link, residual):
    # evalmix.bayes.clmm: family "cumulative", link "identity" (its emmeans scale), the CDF in
    # cumulative_link; the residual is that CDF's variance, as for the ML clmm
    twin = _Fit(_vc(**{"item:run": 0.25, "item": 1.0}), "cumulative", link="identity")
    twin.cumulative_link = link
    r = evalmix.latent_icc(twin)
    assert r.scale == "latent" and r.table["variance"].iloc[-1] == pytest.approx(residual, rel=1e-12)
    assert r.icc_runs == pytest.approx(1.0 / (1.25 + residual), rel=1e-12)


def test_latent_icc_of_a_betabinomial_fit_adds_the_overdispersion_at_the_mean():
    vc = _vc(**{"item:run": 0.25, "item": 1.0})
    r = evalmix.latent_icc(_Fit(vc, "betabinomial", dispersion=4.0), mean=0.3)
    over = special.polygamma(1, 0.3 * 4.0) + special.polygamma(1, 0.7 * 4.0)
    assert list(r.table["component"]) == ["item", "item:run", "overdispersion", "residual"]
    assert r.table["variance"].iloc[2] == pytest.approx(over, rel=1e-12)
    assert r.icc_runs == pytest.approx(1.0 / (1.25 + over + math.pi**2 / 3), rel=1e-12)
    # a precise Beta (phi -> infinity) is the binomial latent ICC
    big = evalmix.latent_icc(_Fit(vc, "betabinomial", dispersion=1e9), mean=0.3)
    assert big.icc_runs == pytest.approx(evalmix.latent_icc(vc).icc_runs, rel=1e-6)


def test_the_overdispersion_is_the_variance_of_the_logit_of_the_beta_probability():
    # the identity the beta-binomial latent scale rests on: Var(logit p) = trigamma(a) + trigamma(b)
    rng = np.random.default_rng(3)
    a, b = 0.3 * 6.0, 0.7 * 6.0
    draws = special.logit(rng.beta(a, b, 400_000))
    expected = special.polygamma(1, a) + special.polygamma(1, b)
    # the SE of a sample variance of n draws is about var * sqrt(2 / n) (more with heavy tails)
    assert draws.var() == pytest.approx(expected, rel=0.02)


def test_latent_icc_of_a_betabinomial_glmmtmb_fit_reads_its_mean_and_precision():
    rng = np.random.default_rng(4)
    n_items = 80
    a = rng.normal(0, 0.8, n_items)
    rows = []
    for m, effect in (("A", 0.4), ("B", -0.2)):
        mu = special.expit(effect + a)
        p = rng.beta(mu * 5, (1 - mu) * 5)
        k = rng.binomial(10, p)
        rows += [(m, f"q{i}", int(k[i]), 10) for i in range(n_items)]
    df = pd.DataFrame(rows, columns=["model", "item", "k", "n"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = evalmix.glmmtmb("cbind(k, n - k) ~ model + (1|item)", df, family="betabinomial")
    r = evalmix.latent_icc(fit)
    mu = special.expit(float(fit.fixef.iloc[0]) + float(fit.fixef.iloc[1]) / 2)  # the grid's average
    phi = fit.dispersion
    over = special.polygamma(1, mu * phi) + special.polygamma(1, (1 - mu) * phi)
    s2 = float(fit.varcorr["variance"].iloc[0])
    assert r.icc_runs == pytest.approx(s2 / (s2 + over + math.pi**2 / 3), rel=1e-9)
    assert "phi" in r.residual and r.table["share"].sum() == pytest.approx(1.0)


# ---------------------------------------------------------------- components and SE projection

@pytest.fixture(scope="module")
def gaussian_fit():
    """80 items x 2 runs of two models and the lmer fit of their sources (read only)."""
    df = _gaussian(80, 2, sd_item=1.0, sd_own=0.5, sd_run=0.5, sd_e=0.7, seed=12)
    return df, evalmix.lmer("score ~ model + (1|item) + (1|model:item) + (1|item:run)", df)


def test_lmer_components_are_the_fit_variances_exactly(gaussian_fit):
    df, fit = gaussian_fit
    var = dict(zip(fit.varcorr["group"], fit.varcorr["variance"]))
    one = components_from_fit(fit).table
    assert one["var_between"].to_numpy() == pytest.approx(var["item"] + var["model:item"], rel=1e-10)
    assert one["var_within"].to_numpy() == pytest.approx(var["item:run"] + var["Residual"], rel=1e-10)
    assert one["estimate"].to_numpy() == pytest.approx(df.groupby("model")["score"].mean().to_numpy(), abs=1e-8)
    pairs = components_from_fit(fit, paired=True)
    # the shared item and item:run effects cancel in a difference, each model's own do not
    assert pairs.table["var_between"].to_numpy() == pytest.approx(2 * var["model:item"], rel=1e-10)
    assert pairs.table["var_within"].to_numpy() == pytest.approx(2 * var["Residual"], rel=1e-10)
    assert pairs.scale.startswith("the score")


def test_se_projection_matches_simulated_means_of_the_gaussian_model():
    truth = {"sd_item": 1.0, "sd_own": 0.5, "sd_run": 0.4, "sd_e": 0.9}
    n_items, n_runs, reps = 40, 2, 4000
    rng = np.random.default_rng(6)
    # the mean of model A and the difference A - B over n_items x n_runs, simulated
    a = rng.normal(0, truth["sd_item"], (reps, n_items, 1))
    c = rng.normal(0, truth["sd_run"], (reps, n_items, n_runs))
    y = {m: a + rng.normal(0, truth["sd_own"], (reps, n_items, 1)) + c
         + rng.normal(0, truth["sd_e"], (reps, n_items, n_runs)) for m in "AB"}
    sd_mean = y["A"].mean(axis=(1, 2)).std(ddof=1)
    sd_diff = (y["A"] - y["B"]).mean(axis=(1, 2)).std(ddof=1)
    # the projection from the true components (the SD of an SD estimate from 4000 draws is ~1.1%)
    one = VarianceComponents(pd.DataFrame({"model": ["A"], "var_between": [1.0 + 0.25], "var_within": [0.16 + 0.81],
                                           "n_items": [n_items]}))
    proj = se_vs_runs(one, "model", max_runs=3).projection
    assert proj.loc[proj["n_runs"] == n_runs, "se"].iloc[0] == pytest.approx(sd_mean, rel=0.04)
    # and from a fit of a larger pilot: estimated components, so a wider tolerance
    pilot = _gaussian(300, 3, seed=7, **truth)
    fit = evalmix.lmer("score ~ model + (1|item) + (1|model:item) + (1|item:run)", pilot)
    res = se_vs_runs(fit, "model", paired="model", n_items=[n_items, 4 * n_items], max_runs=3)
    got = res.projection.query("model == 'A' and n_runs == @n_runs and n_items == @n_items")["se"].iloc[0]
    assert got == pytest.approx(sd_mean, rel=0.12)
    pair = res.pair_projection.query("model_a == 'A' and model_b == 'B' and n_runs == @n_runs "
                                     "and n_items == @n_items")["se"].iloc[0]
    assert pair == pytest.approx(sd_diff, rel=0.12)
    # four times the items halve the SE exactly
    four = res.projection.query("model == 'A' and n_runs == @n_runs and n_items == @n_items * 4")["se"].iloc[0]
    assert four == pytest.approx(got / 2, rel=1e-12)
    assert res.scale.startswith("the score") and res.paper.empty


def test_clmm_components_match_simulated_mean_ratings():
    fit = evalmix.clmm("rating ~ model + (1|item)", _ordinal(100, 2, sd_item=1.0, seed=8))
    comp = components_from_fit(fit).table.set_index("model")
    # simulate the fitted model: ratings 1..4 from its thresholds, model effects and item SD
    theta = fit.thresholds.to_numpy(float)
    beta = {"A": 0.0} | {m: float(fit.coef[f"model{m}"]) for m in "BC"}
    sd = float(fit.varcorr["sd"].iloc[0])
    rng = np.random.default_rng(9)
    n_items, n_runs, reps = 30, 3, 4000
    for m in "AC":
        latent = beta[m] + rng.normal(0, sd, (reps, n_items, 1)) + rng.logistic(size=(reps, n_items, n_runs))
        ratings = 1 + (latent[..., None] > theta).sum(axis=-1)
        means = ratings.mean(axis=(1, 2))
        row = comp.loc[m]
        assert row["estimate"] == pytest.approx(means.mean(), abs=0.01)
        se = math.sqrt(row["var_between"] / n_items + row["var_within"] / (n_items * n_runs))
        assert se == pytest.approx(means.std(ddof=1), rel=0.04)


def test_the_planner_takes_a_fit(gaussian_fit):
    _, fit = gaussian_fit
    direct = plan(fit, se=0.1, cost_item=4)
    via = plan(components_from_fit(fit), se=0.1, cost_item=4)
    assert (direct.n_items, direct.n_runs, direct.cost) == (via.n_items, via.n_runs, via.cost)
    # a minimum detectable difference plans the pairs
    mdd = plan(fit, mdd=0.5, cost_item=4)
    pairs = plan(components_from_fit(fit, paired=True), mdd=0.5, cost_item=4)
    assert (mdd.n_items, mdd.n_runs) == (pairs.n_items, pairs.n_runs)


def test_components_from_fit_names_what_it_cannot_project():
    df = _gaussian(30, 2, sd_item=1.0, sd_own=0.0, sd_run=0.3, sd_e=0.7, seed=11)
    df["judge"] = np.where(np.arange(len(df)) % 2 == 0, "j1", "j2")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # two judges without a bias: a judge variance of 0
        fit = evalmix.lmer("score ~ model + (1|judge) + (1|item) + (1|item:run)", df)
    with pytest.raises(DataError, match=r"random intercepts for \['judge'\].*plan_judges"):
        components_from_fit(fit)
    with pytest.raises(DataError, match="paper's curves need the runs table"):
        se_vs_runs(evalmix.lmer("score ~ model + (1|item)", df), "model", curves="paper")


# ---------------------------------------------------------------- judges in the planner

def test_ordinal_judge_components_with_one_threshold_are_the_binary_ones():
    # a 0/1 verdict is a rating with one cut point at 0 and the values 0 and 1
    kw = {"sd_item": 1.1, "sd_response": 0.4, "sd_judge": 0.5, "sd_model_item": 0.3}
    binary = evalmix.judge_components(0.4, **kw)
    rating = evalmix.judge_components(0.4, thresholds=[0.0], values=[0, 1], **kw)
    assert rating == pytest.approx(binary, rel=1e-10, abs=1e-14)


def _judged(n_items: int, n_runs: int, n_judges: int, truth: dict[str, float], seed: int) -> pd.DataFrame:
    """Scores of two models: judge + item + response (a model's answer in a run) + residual."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0, truth["item"], n_items)
    b = rng.normal(0, truth["judge"], n_judges)
    rows = []
    for m, effect in (("A", 0.3), ("B", 0.0)):
        for i in range(n_items):
            for r in range(n_runs):
                c = rng.normal(0, truth["response"])
                for j in range(n_judges):
                    rows.append((m, f"q{i}", r, f"j{j}", f"{m}.{i}.{r}",
                                 effect + a[i] + b[j] + c + rng.normal(0, truth["residual"])))
    return pd.DataFrame(rows, columns=["model", "item", "run", "judge", "response", "score"])


def test_judge_parts_of_an_lmer_fit_are_its_variances_and_plan_the_se_of_the_simulated_mean():
    truth = {"judge": 0.3, "item": 1.0, "response": 0.5, "residual": 0.6}
    df = _judged(120, 2, 6, truth, seed=12)
    fit = evalmix.lmer("score ~ model + (1|judge) + (1|item) + (1|response)", df)
    parts = evalmix.judge_components_from_fit(fit)
    assert parts.scale.startswith("the score")
    var = dict(zip(fit.varcorr["group"], fit.varcorr["variance"]))
    row = parts.table.iloc[0]
    assert (row["judge"], row["item"], row["response"], row["residual"]) == pytest.approx(
        (var["judge"], var["item"], var["response"], var["Residual"]), rel=1e-12)
    assert row["item:judge"] == 0.0
    # judge_se of the true parts against the SD of the simulated mean of n_i x n_r x n_j (judges random)
    n_i, n_r, n_j, reps = 25, 2, 3, 4000
    rng = np.random.default_rng(13)
    y = (rng.normal(0, truth["judge"], (reps, 1, 1, n_j)) + rng.normal(0, truth["item"], (reps, n_i, 1, 1))
         + rng.normal(0, truth["response"], (reps, n_i, n_r, 1)) + rng.normal(0, truth["residual"], (reps, n_i, n_r, n_j)))
    sd = y.mean(axis=(1, 2, 3)).std(ddof=1)
    se = evalmix.judge_se({k: v**2 for k, v in truth.items()}, n_i, n_r, n_j)
    assert se == pytest.approx(sd, rel=0.04)
    # the planner reads the fit's parts: its design meets the target at the planned sizes
    plan = evalmix.plan_judges(parts, se=0.3, cost_item=2, cost_run=1, cost_judge=0.5)
    assert plan.se <= 0.3
    assert evalmix.judge_se(row.to_dict(), plan.n_items, plan.n_runs, plan.n_judges) == pytest.approx(plan.se)


def test_plan_judges_within_a_budget_and_for_a_width():
    comp = {"judge": 0.0005, "item": 0.05, "item:judge": 0.01, "response": 0.02, "residual": 0.15}
    costs = {"cost_item": 5.0, "cost_run": 1.0, "cost_judge": 0.5}
    best = evalmix.plan_judges(comp, budget=1000, **costs)
    assert best.cost <= 1000 and math.isnan(best.target)
    # brute force over the same grid: the smallest SE a budget of 1000 buys
    found = []
    for r in range(1, 21):
        for j in range(1, 11):
            n = math.floor(1000 / (5 + r + 0.5 * r * j))
            found.append((evalmix.judge_se(comp, n, r, j), n, r, j))
    se, n, r, j = min(found)
    assert (best.n_items, best.n_runs, best.n_judges) == (n, r, j) and best.se == pytest.approx(se, rel=1e-12)
    # a width is the SE target 2 z SE
    by_width = evalmix.plan_judges(comp, width=2 * 1.959963984540054 * 0.03, **costs)
    by_se = evalmix.plan_judges(comp, se=0.03, **costs)
    assert (by_width.n_items, by_width.n_runs, by_width.n_judges) == (by_se.n_items, by_se.n_runs, by_se.n_judges)
    with pytest.raises(DataError, match="no design within the budget 100"):
        evalmix.plan_judges(comp, se=0.03, budget=100, **costs)
    with pytest.raises(ValueError, match="give a target"):
        evalmix.plan_judges(comp)


def test_cli_plan_judges_gives_the_library_design(capsys, tmp_path):
    import json

    from evalmix.cli import main

    truth = {"judge": 0.3, "item": 1.0, "response": 0.5, "residual": 0.6}
    df = _judged(40, 2, 4, truth, seed=14).drop(columns="response")
    path = tmp_path / "ratings.csv"
    df.to_csv(path, index=False)
    args = ["plan", str(path), "--judge", "judge", "--outcome", "score", "--width", "0.8", "--cost-per-item", "2",
            "--cost-judge", "0.5"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(args + ["--json"]) == 0
        doc = json.loads(capsys.readouterr().out)
        parts = evalmix.judge_plan_components(df, outcome="score")
    want = evalmix.plan_judges(parts, width=0.8, cost_item=2, cost_run=1, cost_judge=0.5)
    assert (doc["n_items"], doc["n_runs"], doc["n_judges"]) == (want.n_items, want.n_runs, want.n_judges)
    assert doc["se"] == pytest.approx(want.se, rel=1e-12) and doc["scale"] == "the score (observed scale)"
    assert 2 * 1.959963984540054 * doc["se"] <= 0.8
    # user errors: one line, exit 2
    for bad, words in ((["--mdd", "0.3"], "with --judge give one target"),
                       (["--judge", "nope", "--budget", "100"], "missing column(s) 'nope'")):
        extra = [a for a in args[1:] if a not in ("--width", "0.8")] if "--mdd" in bad else [str(path), "--outcome", "score"]
        assert main(["plan", *extra, *bad]) == 2
        err = capsys.readouterr().err
        assert words in err and "Traceback" not in err


def test_judge_parts_of_a_clmm_fit_give_the_se_of_simulated_mean_ratings():
    rng = np.random.default_rng(15)
    a = rng.normal(0, 1, 30)
    bias = {"x": -0.4, "y": 0.0, "z": 0.5}
    rows = [(m, f"q{i}", j, 1 + int(np.sum(e + a[i] + b + rng.logistic() > np.array([-1.5, 0.0, 1.5]))))
            for m, e in (("A", 0.5), ("B", 0.0)) for i in range(30) for j, b in bias.items()]
    df = pd.DataFrame(rows, columns=["model", "item", "judge", "rating"])
    fit = evalmix.clmm("rating ~ model + (1|judge) + (1|item)", df)
    parts = evalmix.judge_components_from_fit(fit)
    assert parts.scale == "the mean rating"
    theta = fit.thresholds.to_numpy(float)
    sd = dict(zip(fit.varcorr["group"], fit.varcorr["sd"]))
    row = parts.table.set_index("model").loc["A"]
    by_hand = evalmix.judge_components(float(row["eta"]), sd_item=sd["item"], sd_judge=sd["judge"],
                                       thresholds=theta - theta.mean())
    assert row["estimate"] == pytest.approx(by_hand["accuracy"], rel=1e-12)
    # simulate the fitted model (model A, the reference: its latent location is 0) and compare the SD of the mean
    # rating of n_i items x n_j judges with judge_se of the parts (judges random)
    n_i, n_j, reps = 20, 3, 4000
    latent = (rng.normal(0, sd["item"], (reps, n_i, 1)) + rng.normal(0, sd["judge"], (reps, 1, n_j))
              + rng.logistic(size=(reps, n_i, n_j)))
    means = (1 + (latent[..., None] > theta).sum(axis=-1)).mean(axis=(1, 2))
    assert row["estimate"] == pytest.approx(means.mean(), abs=0.02)
    assert evalmix.judge_se(row.to_dict(), n_i, 1, n_j) == pytest.approx(means.std(ddof=1), rel=0.05)


def test_betabinomial_components_match_simulated_proportions():
    rng = np.random.default_rng(16)
    n_items = 120
    a = rng.normal(0, 0.7, n_items)
    rows = []
    for m, effect in (("A", 0.5), ("B", -0.3)):
        for run in range(2):
            mu = special.expit(effect + a)
            k = rng.binomial(8, rng.beta(mu * 6, (1 - mu) * 6))
            rows += [(m, f"q{i}", run, int(k[i]), 8) for i in range(n_items)]
    df = pd.DataFrame(rows, columns=["model", "item", "run", "k", "n"])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = evalmix.glmmtmb("cbind(k, n - k) ~ model + (1|item)", df, family="betabinomial")
    comp = components_from_fit(fit)
    assert comp.method == "glmmtmb" and comp.scale == "the mean proportion k/n"
    row = comp.table.set_index("model").loc["A"]
    # simulate the fitted model: the proportion k/8 of n_i items x n_r runs
    phi, sd = fit.dispersion, float(fit.varcorr["sd"].iloc[0])
    eta = float(fit.fixef.iloc[0])
    n_i, n_r, reps = 30, 2, 4000
    mu = special.expit(eta + rng.normal(0, sd, (reps, n_i, 1)) + np.zeros((1, 1, n_r)))
    means = (rng.binomial(8, rng.beta(mu * phi, (1 - mu) * phi)) / 8).mean(axis=(1, 2))
    assert row["estimate"] == pytest.approx(means.mean(), abs=0.005)
    se = math.sqrt(row["var_between"] / n_i + row["var_within"] / (n_i * n_r))
    assert se == pytest.approx(means.std(ddof=1), rel=0.04)
