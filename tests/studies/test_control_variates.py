"""Control variates (evalmix.control_variates) and the runs-per-item allocation for a budget
(evalmix.repetitions.optimal_runs): closed forms, edge cases, errors and a seeded coverage study."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from scipy import stats

import evalmix
from evalmix.studies.control_variates import (
    control_variate_accuracy,
    control_variate_difference,
    control_variate_mean,
)
from evalmix.core.errors import DataError
from evalmix.studies.repetitions import optimal_runs, variance_components


def _runs(n_items: int, n_runs: int, seed: int, *, proxy_sd: float = 0.1, shift: float = 0.0,
          model: str = "m") -> pd.DataFrame:
    """Items with true accuracy p ~ Beta(3, 2) (mean 0.6); per answer a proxy p + N(0, proxy_sd)."""
    rng = np.random.default_rng(seed)
    p = np.clip(rng.beta(3, 2, n_items) + shift, 0, 1)
    item = np.repeat(np.arange(n_items), n_runs)
    return pd.DataFrame({"model": model, "item": item, "run": np.tile(np.arange(1, n_runs + 1), n_items),
                         "correct": rng.binomial(1, p[item]),
                         "prob": p[item] + rng.normal(0, proxy_sd, len(item))})


# ----------------------------------------------------------------------------------------------
# closed forms


def test_estimate_is_the_ols_adjusted_mean_by_hand():
    rng = np.random.default_rng(0)
    x = rng.normal(size=50)
    y = 0.3 + 0.8 * x + rng.normal(scale=0.5, size=50)
    mu = 0.2
    r = control_variate_mean(y, x, proxy_mean=mu)
    beta = np.cov(x, y)[0, 1] / np.var(x, ddof=1)
    expected = y.mean() - beta * (x.mean() - mu)
    assert r.estimate == pytest.approx(expected, abs=1e-12)
    # the same number is the intercept of lm(y ~ I(x - mu))
    slope, intercept = np.polyfit(x - mu, y, 1)
    assert r.estimate == pytest.approx(intercept, abs=1e-12)
    row = r.to_frame().iloc[0]
    assert row["coefficient"] == pytest.approx(slope, abs=1e-12)
    resid = y - intercept - slope * (x - mu)
    se = math.sqrt(resid @ resid / 48 / 50)
    assert r.se == pytest.approx(se, rel=1e-12)
    t = stats.t.ppf(0.975, 48)
    assert (r.conf_low, r.conf_high) == pytest.approx((expected - t * se, expected + t * se), abs=1e-12)
    assert row["plain_estimate"] == pytest.approx(y.mean(), abs=1e-12)
    assert row["plain_se"] == pytest.approx(y.std(ddof=1) / math.sqrt(50), rel=1e-12)
    # the gain: plain variance over residual variance, i.e. (n - 2) / (n - 1) / (1 - rho^2)
    rho = np.corrcoef(x, y)[0, 1]
    assert row["variance_ratio"] == pytest.approx(48 / 49 / (1 - rho**2), rel=1e-10)
    assert row["n_effective"] == pytest.approx(50 * row["variance_ratio"], rel=1e-12)
    assert row["correlation"] == pytest.approx(rho, abs=1e-12)


def test_a_useless_proxy_gains_nothing():
    rng = np.random.default_rng(1)
    y = rng.binomial(1, 0.6, 20_000).astype(float)
    x = rng.normal(size=20_000)  # independent of y: rho^2 ~ 1/n
    r = control_variate_mean(y, x, proxy_mean=0.0)
    assert r.variance_ratio == pytest.approx(1.0, abs=0.002)
    assert r.estimate == pytest.approx(y.mean(), abs=3 * r.se / 10)


def test_proxy_equal_to_outcome_leaves_no_variance():
    y = np.array([0.0, 1.0, 1.0, 0.5, 0.25, 1.0])
    r = control_variate_mean(y, y, proxy_mean=0.7)
    assert r.estimate == pytest.approx(0.7, abs=1e-12)  # the known mean is the answer
    assert r.se == pytest.approx(0.0, abs=1e-8)
    assert r.conf_high - r.conf_low == pytest.approx(0.0, abs=1e-7)


def test_accuracy_uses_item_means_of_the_runs():
    df = _runs(200, 3, seed=2)
    r = control_variate_accuracy(df, proxy="prob", proxy_mean=0.6)
    means = df.groupby("item")[["correct", "prob"]].mean()
    by_hand = control_variate_mean(means["correct"], means["prob"], proxy_mean=0.6)
    for col in ("estimate", "se", "conf_low", "conf_high", "variance_ratio"):
        assert r.to_frame()[col].iloc[0] == pytest.approx(by_hand.to_frame()[col].iloc[0], rel=1e-12)
    row = r.to_frame().iloc[0]
    assert row["model"] == "m" and row["n_items"] == 200 and row["n_answers"] == 600
    assert r.variance_ratio > 1.5  # a proxy that tracks the items' accuracy pays off


def test_difference_is_paired_by_item_and_takes_a_mean_per_model():
    a = _runs(150, 2, seed=3, model="a")
    b = _runs(150, 2, seed=3, shift=0.05, model="b")
    b["correct"] = np.random.default_rng(4).binomial(1, np.clip(b["prob"], 0, 1))
    df = pd.concat([a, b], ignore_index=True)
    r = control_variate_difference(df, "a", "b", proxy="prob", proxy_mean={"a": 0.6, "b": 0.65})
    ma = a.groupby("item")[["correct", "prob"]].mean()
    mb = b.groupby("item")[["correct", "prob"]].mean()
    by_hand = control_variate_mean(mb["correct"] - ma["correct"], mb["prob"] - ma["prob"], proxy_mean=0.05)
    assert r.estimate == pytest.approx(by_hand.estimate, abs=1e-12)
    assert r.se == pytest.approx(by_hand.se, rel=1e-12)
    same = control_variate_difference(df, "a", "b", proxy="prob", proxy_mean=0.05)
    assert same.estimate == pytest.approx(r.estimate, abs=1e-12)
    assert r.to_frame()["contrast"].iloc[0] == "b - a"
    assert r.to_frame()["n_answers"].iloc[0] == 600


def test_result_renders_in_the_package_vocabulary():
    r = control_variate_accuracy(_runs(30, 2, seed=5), proxy="prob", proxy_mean=0.6)
    frame = r.to_frame()
    assert list(frame.columns[:5]) == ["model", "estimate", "se", "conf_low", "conf_high"]
    assert "variance_ratio" in r.to_markdown() and "\\begin{tabular}" in r.to_latex()
    assert r.to_dict()["proxy"] == "prob"
    assert evalmix.control_variate_accuracy is control_variate_accuracy


# ----------------------------------------------------------------------------------------------
# errors name what is at fault


def test_errors_name_the_column_row_or_argument():
    df = _runs(20, 2, seed=6)
    with pytest.raises(DataError, match="proxy column 'conf' is not in the data"):
        control_variate_accuracy(df, proxy="conf", proxy_mean=0.5)
    bad = df.assign(prob=df["prob"].where(df.index != 7))
    with pytest.raises(DataError, match="column 'prob' has 1 missing value.*row 7"):
        control_variate_accuracy(bad, proxy="prob", proxy_mean=0.5)
    inf = df.assign(prob=df["prob"].where(df.index != 9, np.inf))
    with pytest.raises(DataError, match="'prob' has a missing or infinite value at row 9"):
        control_variate_accuracy(inf, proxy="prob", proxy_mean=0.5)
    with pytest.raises(DataError, match="must be numeric"):
        control_variate_accuracy(df.assign(prob="high"), proxy="prob", proxy_mean=0.5)
    with pytest.raises(DataError, match="same on every item"):
        control_variate_accuracy(df.assign(prob=0.3), proxy="prob", proxy_mean=0.5)
    with pytest.raises(DataError, match="at least 3 items"):
        control_variate_mean([1.0, 0.0], [0.2, 0.1], proxy_mean=0.1)
    with pytest.raises(ValueError, match="proxy_mean"):
        control_variate_mean([1.0, 0.0, 1.0], [0.2, 0.1, 0.3], proxy_mean=float("nan"))
    two = pd.concat([df, df.assign(model="n")])
    with pytest.raises(DataError, match="holds 2 models"):
        control_variate_accuracy(two, proxy="prob", proxy_mean=0.5)
    with pytest.raises(DataError, match="no mean for model"):
        control_variate_difference(two, "m", "n", proxy="prob", proxy_mean={"m": 0.5})


# ----------------------------------------------------------------------------------------------
# coverage by seeded simulation


def _coverage(n_sims: int, n_items: int, seed: int) -> tuple[float, float, float]:
    """Coverage of the 95% interval of the accuracy (true 0.6), 3 runs per item, and the mean gain."""
    rng = np.random.default_rng(seed)
    hits, ratios = 0, []
    for _ in range(n_sims):
        p = rng.beta(3, 2, n_items)
        k = rng.binomial(3, p)
        x = p + rng.normal(0, 0.1, (3, n_items)).mean(axis=0)  # the item mean of per-answer proxies
        r = control_variate_mean(k / 3, x, proxy_mean=0.6)
        hits += r.conf_low <= 0.6 <= r.conf_high
        ratios.append(r.variance_ratio)
    cov = hits / n_sims
    return cov, math.sqrt(0.95 * 0.05 / n_sims), float(np.mean(ratios))


def test_coverage_small():
    # 400 studies of 60 items: Monte-Carlo SE of the coverage sqrt(.95 * .05 / 400) = 0.011
    cov, mc_se, gain = _coverage(400, 60, seed=11)
    assert abs(cov - 0.95) <= 3 * mc_se
    assert gain > 1.5


@pytest.mark.slow
def test_coverage_large():
    # 5,000 studies of 40 items: Monte-Carlo SE 0.0031
    cov, mc_se, _ = _coverage(5000, 40, seed=12)
    assert abs(cov - 0.95) <= 3 * mc_se


# ----------------------------------------------------------------------------------------------
# runs per item for a budget


def test_optimal_runs_matches_the_closed_form():
    vb, vw, ci, cr, budget = 0.02, 0.18, 4.0, 1.0, 10_000.0
    r = optimal_runs(var_between=vb, var_within=vw, budget=budget, cost_item=ci, cost_run=cr)
    row = r.to_frame().iloc[0]
    r_star = math.sqrt(vw * ci / (vb * cr))  # = 6
    assert row["n_runs_continuous"] == pytest.approx(r_star, rel=1e-12)
    assert (row["n_runs"], row["n_items"]) == (6, 1000)
    # at the optimum the variance is (sqrt(vb ci) + sqrt(vw cr))^2 / B
    assert row["se"] ** 2 == pytest.approx((math.sqrt(vb * ci) + math.sqrt(vw * cr)) ** 2 / budget, rel=1e-12)
    assert row["se_one_run"] == pytest.approx(math.sqrt(vb / 2000 + vw / 2000), rel=1e-12)
    assert row["cost"] == pytest.approx(budget)


@pytest.mark.parametrize(("vb", "vw", "ci", "cr", "budget"),
                         [(0.05, 0.2, 10.0, 1.0, 5000.0), (0.1, 0.05, 2.0, 1.0, 777.0),
                          (0.01, 0.24, 30.0, 2.0, 20_000.0)])
def test_optimal_runs_is_the_best_whole_design(vb, vw, ci, cr, budget):
    r = optimal_runs(var_between=vb, var_within=vw, budget=budget, cost_item=ci, cost_run=cr)
    row = r.to_frame().iloc[0]
    best = min(math.sqrt(vb / n + vw / (n * k)) for k in range(1, 51)
               if (n := math.floor(budget / (ci + k * cr))) >= 1)
    assert row["se"] == pytest.approx(best, rel=1e-12)
    # the whole-number optimum is next to the continuous one
    assert abs(row["n_runs"] - row["n_runs_continuous"]) < 1.5


def test_optimal_runs_reads_the_estimated_components():
    df = evalmix.simulate.glmm_runs(2, 80, 4, rng=1)
    comp = variance_components(df, "model")
    r = optimal_runs(comp, budget=3000, cost_item=5)
    frame = r.to_frame()
    assert list(frame["model"]) == list(comp.table["model"])
    t = comp.table
    r_star = np.sqrt(t["var_within"] * 5 / t["var_between"])
    assert frame["n_runs_continuous"].to_numpy() == pytest.approx(r_star.to_numpy(), rel=1e-12)


def test_optimal_runs_edges_and_errors():
    one = optimal_runs(var_between=0.05, var_within=0.2, budget=100)  # no item cost: one run each
    assert one.to_frame()["n_runs"].iloc[0] == 1 and one.to_frame()["n_items"].iloc[0] == 100
    capped = optimal_runs(var_between=0.0, var_within=0.2, budget=1000, cost_item=1, max_runs=8)
    assert capped.to_frame()["n_runs"].iloc[0] == 8  # no item variance: runs are as good as items
    with pytest.raises(DataError, match="does not buy one item"):
        optimal_runs(var_between=0.05, var_within=0.2, budget=3, cost_item=3)
    with pytest.raises(ValueError, match="budget"):
        optimal_runs(var_between=0.05, var_within=0.2, budget=-1)
    with pytest.raises(DataError, match="lack column"):
        optimal_runs(pd.DataFrame({"var_between": [0.1]}), budget=10)


def test_the_worked_example_of_the_docs():
    # docs/control_variates.md prints these tables: keep its numbers true
    rng = np.random.default_rng(1)
    p = rng.beta(3, 2, 300)
    df = pd.DataFrame({"model": "m", "item": np.repeat(np.arange(300), 3), "run": np.tile([1, 2, 3], 300)})
    df["correct"] = rng.binomial(1, p[df["item"]])
    df["prob"] = p[df["item"]] + rng.normal(0, 0.1, len(df))
    row = control_variate_accuracy(df, "m", proxy="prob", proxy_mean=0.6).to_frame().iloc[0]
    # the tables show three significant digits
    assert row[["estimate", "plain_estimate"]].to_numpy(float) == pytest.approx([0.611, 0.636], abs=6e-4)
    assert row[["se", "plain_se"]].to_numpy(float) == pytest.approx([0.0151, 0.0188], abs=6e-5)
    assert row["variance_ratio"] == pytest.approx(1.55, abs=5e-3)
    assert round(row["n_effective"]) == 465
    plan = optimal_runs(variance_components(df, "model"), budget=3000, cost_item=5).to_frame().iloc[0]
    assert (plan["n_runs"], plan["n_items"]) == (5, 300)
    assert plan["n_runs_continuous"] == pytest.approx(4.68, abs=5e-3)
    assert plan[["se", "se_one_run"]].to_numpy(float) == pytest.approx([0.0164, 0.0215], abs=6e-5)


# ----------------------------------------------------------------------------------------------
# the paired difference: coverage and variance gain by seeded simulation with a known truth
# (docs/img/make_control_variates_figure.py, one implementation for the page and the tests)


def _paired_study():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "docs" / "img" / "make_control_variates_figure.py"
    spec = importlib.util.spec_from_file_location("make_control_variates_figure", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_paired_study_truth_is_the_population_value():
    # the exact estimand and proxy means of the study against one very large simulated study
    study = _paired_study()
    truth = study.truth()
    runs = study.one_study(np.random.default_rng(5), 20_000)
    means = runs.groupby(["model", "item"])[["correct", "informative", "useless"]].mean()
    d = means.loc["b"] - means.loc["a"]
    se = d.std(ddof=1) / math.sqrt(len(d))   # items are independent: about 0.002
    assert abs(d["correct"].mean() - truth["difference"]) < 4 * se["correct"]
    assert abs(d["informative"].mean() - truth["informative"]) < 4 * se["informative"]
    assert abs(d["useless"].mean() - truth["useless"]) < 4 * se["useless"]
    # the informative proxy tracks the outcome's difference item by item; the useless one does not
    assert d["correct"].corr(d["informative"]) > 0.4
    assert abs(d["correct"].corr(d["useless"])) < 0.03


def test_the_paired_study_numbers_of_the_docs():
    # docs/control_variates.md quotes docs/img/control_variates_study.json: keep both true
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    studies = json.loads((root / "docs" / "img" / "control_variates_study.json").read_text())
    page = (root / "docs" / "control_variates.md").read_text()
    for st in studies:
        for key in ("plain", "informative", "useless"):
            assert abs(st[key]["coverage"] - 0.95) <= 3 * st["nominal_mc_se"], (st["n_items"], key)
            assert f"{st[key]['coverage']:.3f}" in page
        assert st["informative"]["gain"] > 3 * st["informative"]["gain_mc_se"]
        assert abs(st["useless"]["gain"]) <= 3 * st["useless"]["gain_mc_se"] + 2 / st["n_items"]
        assert f"{st['informative']['gain']:.2f}" in page and f"{st['useless']['gain']:.3f}" in page


@pytest.mark.slow  # 600 simulated studies, two control-variate fits each
def test_paired_difference_coverage_and_gain():
    # 600 studies of 40 items x 3 runs x 2 models: Monte-Carlo SE of a coverage near 0.95 is 0.009
    st = _paired_study().paired_study(600, 40, seed=31)
    for key in ("plain", "informative", "useless"):
        assert abs(st[key]["coverage"] - 0.95) <= 3 * st["nominal_mc_se"], (key, st[key])
        assert abs(st[key]["bias"]) < 3 * st[key]["sd"] / math.sqrt(600)   # unbiased
    inf, use = st["informative"], st["useless"]
    # a correlated proxy removes a share of the plain difference's variance ...
    assert inf["gain"] > 0.1 and inf["gain"] > 3 * inf["gain_mc_se"]
    # ... and each result's own variance_ratio estimates it (to the Monte-Carlo error of the gain)
    assert abs(math.log(inf["mean_variance_ratio"] * (1 - inf["gain"]))) < 0.15
    # a useless proxy changes nothing but the price of estimating beta (of order 1 / n_items)
    assert -2 / 40 - 3 * use["gain_mc_se"] <= use["gain"] <= 3 * use["gain_mc_se"]
    assert use["mean_variance_ratio"] == pytest.approx(1.0, abs=0.03)
