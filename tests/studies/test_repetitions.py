"""SE against runs: the paper's statistic, the variance decomposition and the planner.

The decomposition and the planner are checked by seeded simulation against the truth implied by the
generating logistic GLMM (accuracy_components, itself checked by Monte Carlo).
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import special

import evalmix
from evalmix.core.errors import DataError
from evalmix.studies.repetitions import (accuracy_components, plan, se_vs_runs, slice_se_by_runs,
                                 variance_components)

SLICE = ["model", "language", "prompt"]
ETA, SD_ITEM, SD_RUN = 0.4, 1.2, 0.7


def _one_model(n_items, n_runs, seed, eta=ETA):
    return evalmix.simulate.glmm_runs(1, n_items, n_runs, model_effects=[eta], sd_item=SD_ITEM,
                                      sd_item_run=SD_RUN, rng=seed)


@pytest.fixture(scope="module")
def truth():
    return accuracy_components(ETA, SD_ITEM, SD_RUN).table.iloc[0]


# ---------------------------------------------------------------- the paper's numbers

def test_ai4math_slice_se_statistic(ai4math_raw):
    t = slice_se_by_runs(ai4math_raw, SLICE).table
    assert t["se"].round(4).tolist() == [0.0288, 0.0285, 0.0273]
    assert t["n_slices"].tolist() == [32, 32, 32]


def test_ai4math_paper_curves(ai4math_raw):
    r = se_vs_runs(ai4math_raw, SLICE, item="problem_id", max_runs=3)
    paper = r.paper.set_index(["curve", "kind", "n_runs"])["se"]
    # independent re-derivation: per slice, per-run accuracy; sd over runs; equal weights (105 items)
    acc = ai4math_raw.groupby(SLICE + ["run"])["correct"].mean().unstack("run")
    sd_all = acc.std(axis=1, ddof=1)
    pairs = np.mean([acc[[a, b]].std(axis=1, ddof=1) / np.sqrt(2)
                     for a, b in itertools.combinations([1, 2, 3], 2)], axis=0)
    pairs = pd.Series(pairs, index=acc.index)
    for m in ai4math_raw["model"].unique():
        assert paper[(m, "predicted", 1)] == pytest.approx(sd_all[m].mean(), rel=1e-12)
        assert paper[(m, "empirical", 2)] == pytest.approx(pairs[m].mean(), rel=1e-12)
        assert paper[(m, "empirical", 3)] == pytest.approx(sd_all[m].mean() / np.sqrt(3), rel=1e-12)
    assert paper[("average", "predicted", 1)] == pytest.approx(sd_all.groupby(level=0).mean().mean())


# ---------------------------------------------------------------- accuracy_components

def test_accuracy_components_monte_carlo(truth):
    rng = np.random.default_rng(1)
    a = rng.normal(0, SD_ITEM, 4000)
    c = rng.normal(0, SD_RUN, (4000, 400))
    p = special.expit(ETA + a[:, None] + c).mean(axis=1)
    assert truth["accuracy"] == pytest.approx(p.mean(), abs=0.01)
    assert truth["var_between"] == pytest.approx(p.var(), rel=0.05)
    assert truth["var_within"] == pytest.approx((p * (1 - p)).mean(), rel=0.03)


def test_accuracy_components_limits():
    c = accuracy_components([0.0, 1.0], 0.0, 0.0).table
    p = special.expit(np.array([0.0, 1.0]))
    np.testing.assert_allclose(c["accuracy"], p, rtol=1e-12)
    np.testing.assert_allclose(c["var_between"], 0.0, atol=1e-14)
    np.testing.assert_allclose(c["var_within"], p * (1 - p), rtol=1e-12)
    # the total variance of a single answer is always p (1 - p)
    c = accuracy_components([-1.0, 0.5], 2.0, 1.0).table
    np.testing.assert_allclose(c["var_between"] + c["var_within"], c["accuracy"] * (1 - c["accuracy"]),
                               rtol=1e-12)


# ---------------------------------------------------------------- decomposition by simulation

def test_variance_components_recover_truth(truth):
    est = pd.concat([variance_components(_one_model(150, 3, seed)).table for seed in range(40)])
    for col in ("var_between", "var_within"):
        mean, se = est[col].mean(), est[col].std(ddof=1) / np.sqrt(len(est))
        assert abs(mean - truth[col]) < 4 * se + 1e-3, (col, mean, truth[col], se)


@pytest.mark.slow  # Monte-Carlo check of the projection
@pytest.mark.parametrize("n_runs", [1, 4])
def test_projected_se_matches_monte_carlo(truth, n_runs):
    n_items = 60
    acc = [_one_model(n_items, n_runs, 1000 + s)["correct"].mean() for s in range(400)]
    predicted = np.sqrt(truth["var_between"] / n_items + truth["var_within"] / (n_items * n_runs))
    assert np.std(acc, ddof=1) == pytest.approx(predicted, rel=0.12)


@pytest.mark.slow  # 30 simulated studies
def test_projection_from_two_runs_predicts_four(truth):
    # estimate the components from R = 2 data, project to R = 4, compare with the truth-based SE
    got = []
    for seed in range(30):
        r = se_vs_runs(_one_model(200, 2, seed), "model", max_runs=4, curve_by=None)
        got.append(r.projection.query("n_runs == 4")[["se", "se_runs"]].iloc[0])
    got = pd.DataFrame(got).mean()
    n = 200
    assert got["se"] == pytest.approx(np.sqrt(truth["var_between"] / n + truth["var_within"] / (4 * n)),
                                      rel=0.05)
    assert got["se_runs"] == pytest.approx(np.sqrt(truth["var_within"] / (4 * n)), rel=0.05)


def _two_models(n_items, n_runs, seed, gap=0.5):
    """Two models on shared items, runs drawn independently per model (as separate API calls)."""
    rng = np.random.default_rng(seed)
    a = rng.normal(0, SD_ITEM, n_items)
    rows = []
    for m, eta in (("A", ETA + gap), ("B", ETA)):
        slope = rng.normal(0, 0.5, n_items)  # item-specific model gap
        p = special.expit(eta + a + slope + rng.normal(0, SD_RUN, (n_runs, n_items)))
        y = (rng.random((n_runs, n_items)) < p).astype(int)
        for r in range(n_runs):
            rows.append(pd.DataFrame({"model": m, "item": np.arange(n_items), "run": r + 1,
                                      "correct": y[r]}))
    return pd.concat(rows, ignore_index=True)


@pytest.mark.slow  # Monte-Carlo check of the paired SE
def test_paired_difference_se_matches_monte_carlo():
    n_items, n_runs = 80, 2
    diffs, proj = [], []
    for s in range(200):
        df = _two_models(n_items, n_runs, s)
        acc = df.groupby("model")["correct"].mean()
        diffs.append(acc["A"] - acc["B"])
        if s < 40:
            r = se_vs_runs(df, "model", paired="model", max_runs=2, curve_by=None)
            proj.append(r.pair_projection.query("n_runs == 2")["se"].iloc[0])
    assert np.mean(proj) == pytest.approx(np.std(diffs, ddof=1), rel=0.12)
    pairs = r.pairs
    assert list(pairs[["model_a", "model_b"]].iloc[0]) == ["A", "B"]


def test_unbalanced_runs_recover_truth(truth):
    # runs missing at random: the ANOVA estimator with n0 stays unbiased
    rng = np.random.default_rng(0)
    est = []
    for seed in range(30):
        df = _one_model(150, 3, 100 + seed)
        drop = (df["run"] > 1) & (rng.random(len(df)) < 0.4)
        est.append(variance_components(df[~drop]).table.iloc[0])
    est = pd.DataFrame(est)
    assert (est["n_runs"] < 3).all()
    for col in ("var_between", "var_within"):
        mean, se = est[col].mean(), est[col].std(ddof=1) / np.sqrt(len(est))
        assert abs(mean - truth[col]) < 4 * se + 1e-3, (col, mean, truth[col], se)


# ---------------------------------------------------------------- planner

def test_plan_matches_brute_force_and_closed_form():
    vb, vw, ci, cr, t = 0.12, 0.06, 8.0, 1.0, 0.025
    p = plan(var_between=vb, var_within=vw, se=t, cost_item=ci, cost_run=cr, max_runs=20)
    best = None
    for r in range(1, 21):
        n = int(np.ceil((vb + vw / r) / t**2 - 1e-9))
        cost = n * ci + n * r * cr
        if best is None or cost < best[0]:
            best = (cost, n, r)
    assert (p.cost, p.n_items, p.n_runs) == best
    r_star = np.sqrt(vw * ci / (vb * cr))
    assert abs(p.n_runs - r_star) < 1.5
    assert p.achieved <= t


@pytest.mark.slow  # simulation of the planned design
def test_plan_design_achieves_target_in_simulation(truth):
    p = plan(pd.DataFrame([truth]), se=0.05, cost_item=4.0, cost_run=1.0)
    acc = [_one_model(p.n_items, p.n_runs, 5000 + s)["correct"].mean() for s in range(300)]
    sd = np.std(acc, ddof=1)
    assert sd == pytest.approx(p.achieved, rel=0.12)
    assert sd < 0.05 * 1.12


def test_plan_mdd_and_inversions():
    comp = pd.DataFrame({"var_between": [0.05, 0.08], "var_within": [0.2, 0.15],
                         "difference": [0.02, 0.10]})
    p = plan(comp, mdd=0.05, cost_item=1, cost_run=1)
    z = 1.959963984540054 + 0.8416212335729143
    assert p.achieved * 1 == pytest.approx(z * np.sqrt(0.08 / p.n_items + 0.15 / (p.n_items * p.n_runs)))
    assert p.achieved <= 0.05
    q = plan(comp, inversions=0.5, items="fixed", n_items=100, max_runs=200)
    assert q.n_items == 100 and q.achieved <= 0.5
    # one run fewer misses the bound
    se = np.sqrt(comp["var_within"] / (100 * (q.n_runs - 1)))
    from scipy.stats import norm
    assert norm.cdf(-comp["difference"].abs() / se).sum() > 0.5
    with pytest.raises(DataError, match="no design"):
        plan(comp, inversions=0.01, items="fixed", n_items=100, max_runs=3)
    with pytest.raises(ValueError, match="exactly one"):
        plan(comp, se=0.1, mdd=0.1)
    with pytest.raises(DataError, match="difference"):
        plan(comp.drop(columns="difference"), inversions=1)


@settings(max_examples=30, deadline=None)
@given(st.floats(0.01, 0.25), st.floats(0.01, 0.25), st.floats(0.0, 20.0), st.floats(0.01, 0.1))
def test_plan_is_feasible_and_minimal(vb, vw, ci, t):
    p = plan(var_between=vb, var_within=vw, se=t, cost_item=ci, cost_run=1.0, max_runs=30)
    assert p.achieved <= t * (1 + 1e-9)
    row = p.table.set_index("n_runs").loc[p.n_runs]
    # one item fewer misses the target
    assert np.sqrt(vb / (row["n_items"] - 1) + vw / ((row["n_items"] - 1) * p.n_runs)) > t \
        or row["n_items"] == 2
    assert p.cost == p.table["cost"].min()


def test_slice_se_errors():
    df = _one_model(10, 2, 1)
    with pytest.raises(DataError, match="max_runs"):
        slice_se_by_runs(df, "model", max_runs=5)
    with pytest.raises(DataError, match="curve_by"):
        se_vs_runs(df, "model", curve_by="language")


# ---------------------------------------------------------------- GLMM-based parts

REFERENCE = __import__("pathlib").Path(__file__).resolve().parents[1] / "reference"


@pytest.fixture(scope="module")
def ai4math_sign_flip(ai4math_raw):
    import warnings

    from evalmix.studies.repetitions import sign_flip_rate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return sign_flip_rate(ai4math_raw, "correct ~ model + language + (1|problem_id) + (1|problem_id:run)",
                              ref="Grok-4")


def test_sign_flip_matches_lme4_refits(ai4math_sign_flip):
    import json

    ref = pd.DataFrame(json.load(open(REFERENCE / "sign_flip_reference.json"))["rows"])
    from evalmix.core.result import contrast_label

    ref["contrast"] = [contrast_label(t, "Grok-4") for t in ref["term"].str.replace("^model", "", regex=True)]
    got = ai4math_sign_flip.details.merge(ref, on=["run", "contrast"], suffixes=("", "_r"), validate="1:1")
    assert len(got) == 28
    # lme4 stops short of the optimum (gradient warnings) and uses a finite-difference Hessian
    np.testing.assert_allclose(got["estimate"], got["estimate_r"], atol=0.01)
    np.testing.assert_allclose(got["se"], got["se_r"], rtol=0.05)
    assert (got["significant"] == (got["p"] < 0.05)).all()


def test_sign_flip_ai4math_refit_flips_one_contrast(ai4math_sign_flip):
    r = ai4math_sign_flip
    # o3-mini vs Grok-4: not significant on all runs, significant on run 1 alone (lme4: p = 0.043)
    flipped = r.details[r.details["flipped"]]
    assert flipped[["run", "contrast"]].values.tolist() == [["1", "(o3-mini) - (Grok-4)"]]
    assert r.rate == pytest.approx(1 / 7) and r.run_rate == pytest.approx(1 / 21)
    assert r.fits["formula"].tolist()[1] == "correct ~ model + language + (1 | problem_id)"


def test_sign_flip_large_effects_never_flip():
    import warnings

    from evalmix.studies.repetitions import sign_flip_rate

    df = evalmix.simulate.glmm_runs(3, 60, 3, model_effects=[-2.5, 0.0, 2.5], sd_item=1.0,
                                    sd_item_run=0.3, rng=9)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = sign_flip_rate(df, "correct ~ model + (1|item) + (1|item:run)", ref="M2")
    assert r.rate == 0 and set(r.details["contrast"]) == {"M1 - M2", "M3 - M2"}
    assert r.details["significant"].all()
    with pytest.raises(DataError, match="reference level"):
        sign_flip_rate(df, "correct ~ model + (1|item)", ref="GPT")


@pytest.fixture(scope="module")
def sim_fit():
    import warnings

    from evalmix.glmm import glmer

    df = evalmix.simulate.glmm_runs(2, 300, 3, model_effects=[ETA, ETA + 1.0], sd_item=SD_ITEM,
                                    sd_item_run=SD_RUN, rng=21)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return df, glmer("correct ~ model + (1|item) + (1|item:run)", df)


def test_components_from_fit_recover_truth(sim_fit):
    from evalmix.studies.repetitions import components_from_fit

    df, fit = sim_fit
    got = components_from_fit(fit).table.set_index("model")
    true = accuracy_components([ETA, ETA + 1.0], SD_ITEM, SD_RUN).table.set_index(pd.Index(["M1", "M2"]))
    np.testing.assert_allclose(got["accuracy"], true["accuracy"], atol=0.04)
    np.testing.assert_allclose(got["var_between"], true["var_between"], rtol=0.2)
    np.testing.assert_allclose(got["var_within"], true["var_within"], rtol=0.15)
    # the model-based and method-of-moments estimates describe the same quantities
    mom = variance_components(df, "model").table.set_index("model")
    np.testing.assert_allclose(got["var_within"], mom["var_within"], rtol=0.15)
    np.testing.assert_allclose(got["var_between"], mom["var_between"], rtol=0.25)


@pytest.mark.slow  # a Monte-Carlo check
def test_components_from_fit_paired_by_monte_carlo(sim_fit):
    from evalmix.studies.reliability import latent_icc
    from evalmix.studies.repetitions import components_from_fit

    _, fit = sim_fit
    pair = components_from_fit(fit, paired=True).table.iloc[0]
    single = components_from_fit(fit).table.set_index("model")
    vc = latent_icc(fit).table["variance"].to_numpy()
    sd_i, sd_r = np.sqrt(vc[0]), np.sqrt(vc[1])
    rng = np.random.default_rng(0)
    a = rng.normal(0, sd_i, 20000)
    c = rng.normal(0, sd_r, (20000, 200))
    p = [special.expit(e + a[:, None] + c).mean(axis=1) for e in single["eta"]]
    d = p[0] - p[1]
    assert (pair["model_a"], pair["model_b"]) == ("M1", "M2")
    assert pair["difference"] == pytest.approx(d.mean(), abs=0.005)
    assert pair["var_between"] == pytest.approx(d.var(), rel=0.05)
    assert pair["var_within"] == pytest.approx(single["var_within"].sum(), rel=1e-9)
    p = plan(components_from_fit(fit, paired=True), mdd=0.08, cost_item=3)
    assert p.achieved <= 0.08


def test_components_are_results_that_plan_reads(sim_fit):
    from evalmix.core.result import Result
    from evalmix.studies.repetitions import VarianceComponents, components_from_fit

    df, fit = sim_fit
    for comp, method in ((variance_components(df, "model"), "moments"),
                         (components_from_fit(fit), "glmm"),
                         (accuracy_components(0.3, 1.0, 0.5), "glmm")):
        assert isinstance(comp, VarianceComponents) and isinstance(comp, Result)
        assert comp.method == method
        pd.testing.assert_frame_equal(comp.to_frame(), comp.table)
        assert "var_between" in repr(comp) and "\\begin{tabular}" in comp.to_latex()
        # plan reads the result and its table alike
        a, b = plan(comp, se=0.03), plan(comp.table, se=0.03)
        assert (a.n_items, a.n_runs, a.achieved) == (b.n_items, b.n_runs, b.achieved)
    assert components_from_fit(fit, paired=True).paired
