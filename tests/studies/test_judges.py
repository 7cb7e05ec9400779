"""evalmix.judges: judge bias, model-by-judge interaction, agreement, variance share and the planner."""

from __future__ import annotations

import itertools
import json
import math

import krippendorff
import numpy as np
import pandas as pd
import pytest
from scipy.special import expit

import evalmix
from evalmix import DataError
from evalmix.studies.judges import COMPONENTS, judge_components, judge_se, plan_judges
from evalmix.studies.reliability import icc_matrix

JUDGE_BIAS = {"gpt": 0.0, "claude": 0.5, "llama": -0.6}


def simulate(seed: int = 3, n_items: int = 50, n_runs: int = 2, sd_item: float = 1.2,
             sd_response: float = 0.6, sd_model_item: float = 0.8) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    a = rng.normal(0, sd_item, n_items)
    rows = []
    for m, mb in (("m1", 0.0), ("m2", 0.6), ("m3", 1.1)):
        d = rng.normal(0, sd_model_item, n_items)
        for i in range(n_items):
            for r in range(n_runs):
                c = d[i] + rng.normal(0, sd_response)
                for j, jb in JUDGE_BIAS.items():
                    p = expit(mb + jb + a[i] + c)
                    rows.append((m, f"q{i}", r + 1, j, int(rng.random() < p)))
    return pd.DataFrame(rows, columns=["model", "item", "run", "judge", "correct"])


@pytest.fixture(scope="module")
def runs() -> pd.DataFrame:
    return simulate()


@pytest.fixture(scope="module")
def study(runs):
    return evalmix.judge_study(runs)


def _direct(runs: pd.DataFrame) -> pd.DataFrame:
    df = runs.assign(response=runs["model"] + "|" + runs["item"] + "|" + runs["run"].astype(str),
                     y=runs["correct"], judge=runs["judge"].astype(str))
    return df


def test_bias_equals_direct_glmer_emmeans(runs, study):
    df = _direct(runs)
    fit = evalmix.glmer("y ~ model + judge + (1|item) + (1|response)", df)
    emm = evalmix.emmeans(fit, "judge").to_frame().set_index("judge")
    mean_eta = emm["estimate"].mean()
    bias = study.bias.set_index("contrast")
    for j in JUDGE_BIAS:
        assert bias.loc[f"{j} - mean", "estimate"] == pytest.approx(emm.loc[j, "estimate"] - mean_eta, abs=1e-6)
    # the true biases around their mean (0, 0.5, -0.6) - mean: recovered within 3 SE
    true = {j: b - np.mean(list(JUDGE_BIAS.values())) for j, b in JUDGE_BIAS.items()}
    for j, t in true.items():
        row = bias.loc[f"{j} - mean"]
        assert abs(row["estimate"] - t) < 3 * row["se"]
        assert row["odds_ratio"] == pytest.approx(math.exp(row["estimate"]), rel=1e-9)
    prob = evalmix.regrid(evalmix.emmeans(fit, "judge")).to_frame().set_index("judge")["estimate"]
    assert bias.loc["claude - mean", "difference"] == pytest.approx(prob["claude"] - prob.mean(), abs=1e-6)
    means = study.means.set_index("judge")
    assert means.loc["llama", "estimate"] == pytest.approx(prob["llama"], abs=1e-6)
    # accuracy intervals are the log-odds intervals back-transformed (emmeans type = "response"):
    # inside (0, 1) whatever the SE, unlike regrid's symmetric delta-method intervals
    link = evalmix.emmeans(fit, "judge").to_frame().set_index("judge")
    from scipy.special import expit
    for col in ("conf_low", "conf_high"):
        np.testing.assert_allclose(means.loc[link.index, col], expit(link[col]), rtol=1e-9)
    for table in (study.means, study.by_judge):
        assert ((table["conf_low"] > 0) & (table["conf_high"] < 1)).all()


def test_interaction_lrt_equals_twice_the_loglik_difference(runs, study):
    df = _direct(runs)
    small = evalmix.glmer("y ~ model + judge + (1|item) + (1|response)", df)
    large = evalmix.glmer("y ~ model * judge + (1|item) + (1|response)", df)
    stat = 2 * (large.loglik - small.loglik)
    assert study.interaction["statistic"] == pytest.approx(stat, abs=1e-4)
    assert study.interaction["df"] == 4
    from scipy import stats
    assert study.interaction["p_value"] == pytest.approx(stats.chi2.sf(stat, 4), abs=1e-5)
    # no interaction was simulated: the test should not reject at 1%
    assert study.interaction["p_value"] > 0.01
    assert len(study.by_judge) == 9


def test_variance_components_equal_the_random_judge_fit(runs, study):
    df = _direct(runs)
    df["model_item"] = df["model"] + "|" + df["item"]
    fit = evalmix.glmer("y ~ model + (1|judge) + (1|item) + (1|model_item) + (1|response)", df)
    vc = fit.varcorr.set_index("group")["variance"]
    var = study.variance.set_index("group")
    for g in ("judge", "item", "response", "model_item"):
        assert var.loc[g.replace("_", ":"), "variance"] == pytest.approx(vc[g], rel=1e-6)
    assert var.loc["model:item", "variance"] > 0.1  # simulated with SD 0.8
    latent = vc.sum() + math.pi**2 / 3
    assert study.judge_share == pytest.approx(vc["judge"] / latent, rel=1e-6)
    assert var["share"].sum() == pytest.approx(1.0, abs=1e-12)


def test_agreement_matches_krippendorff_package(runs, study):
    tab = _direct(runs).pivot(index="response", columns="judge", values="y")
    ref = krippendorff.alpha(tab.to_numpy(float).T, level_of_measurement="nominal")
    agree = study.agreement.table.set_index("coefficient")
    assert agree.loc["krippendorff_alpha", "estimate"] == pytest.approx(ref, abs=1e-10)
    assert agree.loc["fleiss_kappa", "estimate"] == pytest.approx(
        evalmix.fleiss_kappa(tab.to_numpy()).estimate, abs=1e-12)
    pairs = study.agreement.pairs
    assert len(pairs) == 3
    row = pairs[(pairs["judge_a"] == "claude") & (pairs["judge_b"] == "gpt")].iloc[0]
    assert row["estimate"] == pytest.approx(evalmix.cohen_kappa(tab["claude"], tab["gpt"]).estimate, abs=1e-12)


def test_ordinal_agreement_with_missing_ratings_matches_krippendorff():
    rng = np.random.default_rng(5)
    quality = rng.integers(1, 11, 40)
    rows = []
    for i, q in enumerate(quality):
        for j, shift in (("a", 0), ("b", 1), ("c", -1)):
            if (i + len(j)) % 7 == 0 and j == "c":
                continue  # judge c skipped some responses
            rows.append((f"i{i}", j, int(np.clip(q + shift + rng.integers(-1, 2), 1, 10))))
    df = pd.DataFrame(rows, columns=["item", "judge", "score"])
    r = evalmix.judge_agreement(df, level="ordinal")
    tab = df.pivot(index="item", columns="judge", values="score")
    ref = krippendorff.alpha(tab.to_numpy(float).T, level_of_measurement="ordinal")
    assert r.table.loc[0, "estimate"] == pytest.approx(ref, abs=1e-10)
    assert r.n_judges == 3 and r.n_responses == 40
    interval = evalmix.judge_agreement(df, level="interval").table.loc[0, "estimate"]
    assert interval == pytest.approx(krippendorff.alpha(tab.to_numpy(float).T, level_of_measurement="interval"),
                                     abs=1e-10)


def test_single_model_and_judge_names_with_dashes(runs):
    one = runs[runs["model"] == "m1"].replace({"judge": {"gpt": "gpt-4"}})
    s = evalmix.judge_study(one)
    assert math.isnan(s.interaction["p_value"]) and "not tested" in repr(s)
    assert "(gpt-4) - mean" in s.bias["contrast"].tolist()
    assert json.loads(json.dumps(s.to_dict(), allow_nan=False))["interaction"]["p_value"] is None
    tab = _direct(one).pivot(index="response", columns="judge", values="y")
    ic = icc_matrix(tab.to_numpy(float), model="twoway", type="agreement", unit="single")
    row = s.agreement.table.set_index("coefficient").loc["icc_a1"]
    assert row["estimate"] == pytest.approx(ic["icc"], abs=1e-12)
    assert (row["conf_low"], row["conf_high"]) == pytest.approx((ic["conf_low"], ic["conf_high"]), abs=1e-12)


def test_reference_judge_contrasts(runs):
    s = evalmix.judge_study(runs[runs["model"] != "m3"], ref="gpt", model_item=False)
    assert "model:item" not in s.variance["group"].tolist()
    assert s.bias["contrast"].tolist() == ["claude - gpt", "llama - gpt"]
    assert s.reference == "gpt"


def test_result_renders_and_serialises(study):
    text = repr(study)
    assert "model:judge LRT" in text and "claude - mean" in text
    doc = json.loads(json.dumps(study.to_dict(), allow_nan=False))
    assert set(doc) >= {"bias", "interaction", "agreement", "variance", "components", "judge_share"}
    assert "\\begin{tabular}" in study.to_latex()
    assert "| contrast" in study.to_markdown()
    with pytest.raises(AttributeError):
        study.bias = None  # type: ignore[misc]


def test_ratings_are_refused_by_the_model_with_a_pointer_to_agreement(runs):
    rated = runs.assign(score=runs["correct"] * 5 + 3).drop(columns="correct")
    with pytest.raises(DataError, match=r"'score'.*judge_agreement"):
        evalmix.judge_study(rated)


@pytest.mark.parametrize("edit, match", [
    (lambda d: d[d["judge"] == "gpt"], "one level"),
    (lambda d: pd.concat([d, d.iloc[:2]]), "several verdicts"),
    (lambda d: d.assign(correct=d["correct"].astype(object).where(d.index != 5, "yes")), "must hold numbers"),
    (lambda d: d.drop(columns="judge"), "judge"),
    (lambda d: d.assign(item=d["item"].where(d.index != 7, None)), "missing values"),
    (lambda d: d.assign(correct=1), "every verdict in 'correct' is 1"),
    (lambda d: d[(d["run"] + d["judge"].map({"gpt": 0, "claude": 1, "llama": 2})) % 3 == 0],
     "no response .* two or more judges"),
])
def test_bad_tables_are_data_errors(runs, edit, match):
    with pytest.raises(DataError, match=match):
        evalmix.judge_study(edit(runs.copy()))


def test_model_item_needs_repeated_runs(runs):
    with pytest.raises(DataError, match="model_item=True needs several models and repeated runs"):
        evalmix.judge_study(runs[runs["run"] == 1], model_item=True)


def test_unknown_reference_judge(runs):
    with pytest.raises(DataError, match="ref='gemini' is not a level"):
        evalmix.judge_study(runs.head(60), ref="gemini")


# ---------------------------------------------------------------------------------------------- planner


def test_components_add_up_to_the_bernoulli_variance():
    c = judge_components(0.7, sd_item=1.1, sd_response=0.5, sd_judge=0.4)
    assert sum(c[k] for k in COMPONENTS) == pytest.approx(c["accuracy"] * (1 - c["accuracy"]), abs=1e-10)
    assert all(c[k] >= 0 for k in COMPONENTS)
    none = judge_components(0.7, sd_item=1.1, sd_response=0.5, sd_judge=0.0)
    assert none["judge"] == pytest.approx(0, abs=1e-14) and none["item:judge"] == pytest.approx(0, abs=1e-12)
    same = judge_components(0.3, eta_b=0.3, sd_item=1.0, sd_response=0.5, sd_judge=0.6)
    assert same["accuracy"] == pytest.approx(0, abs=1e-14)
    assert same["judge"] == pytest.approx(0, abs=1e-14) and same["item"] == pytest.approx(0, abs=1e-14)


def _simulated_means(rng, n_sims, n_i, n_r, n_j, eta, sd, eta_b=None, sd_mi=0.0):
    a = rng.normal(0, sd[0], (n_sims, n_i, 1, 1))
    b = rng.normal(0, sd[2], (n_sims, 1, 1, n_j))
    c = rng.normal(0, sd[1], (n_sims, n_i, n_r, 1)) + rng.normal(0, sd_mi, (n_sims, n_i, 1, 1))
    y = rng.random((n_sims, n_i, n_r, n_j)) < expit(eta + a + b + c)
    out = y.mean(axis=(1, 2, 3))
    if eta_b is not None:
        c2 = rng.normal(0, sd[1], (n_sims, n_i, n_r, 1)) + rng.normal(0, sd_mi, (n_sims, n_i, 1, 1))
        y2 = rng.random((n_sims, n_i, n_r, n_j)) < expit(eta_b + a + b + c2)
        out = out - y2.mean(axis=(1, 2, 3))
    return out


@pytest.mark.parametrize("judges", ["random", "fixed"])
def test_se_formula_against_seeded_simulation(judges):
    """Monte-Carlo SD of the mean over 4000 simulated studies vs judge_se.

    The SD of 4000 draws has a relative Monte-Carlo error of about 1/sqrt(2 * 4000) = 1.1%; the
    tolerance is 4.5%, four Monte-Carlo SEs.  Fixed judges: the SE is E_b[Var(mean | judges)], so
    each simulated judge panel grades two independent studies and half the mean squared difference
    of their means estimates it (the same relative Monte-Carlo error).
    """
    rng = np.random.default_rng(20261126)
    sd = (1.0, 0.6, 0.5)
    eta, n_i, n_r, n_j, n_sims = 0.4, 30, 2, 3, 4000
    comp = judge_components(eta, sd_item=sd[0], sd_response=sd[1], sd_judge=sd[2])
    expected = judge_se(comp, n_i, n_r, n_j, judges=judges)
    if judges == "random":
        observed = _simulated_means(rng, n_sims, n_i, n_r, n_j, eta, sd).std(ddof=1)
    else:
        b = rng.normal(0, sd[2], (n_sims, 1, 1, n_j))
        twice = []
        for _ in range(2):
            a = rng.normal(0, sd[0], (n_sims, n_i, 1, 1))
            c = rng.normal(0, sd[1], (n_sims, n_i, n_r, 1))
            twice.append((rng.random((n_sims, n_i, n_r, n_j)) < expit(eta + a + b + c)).mean(axis=(1, 2, 3)))
        observed = math.sqrt(0.5 * np.mean((twice[0] - twice[1]) ** 2))
    assert observed == pytest.approx(expected, rel=0.045)


@pytest.mark.parametrize("sd_mi", [0.0, 0.9])
def test_difference_se_against_seeded_simulation(sd_mi):
    rng = np.random.default_rng(7)
    sd = (1.2, 0.5, 0.7)
    comp = judge_components(0.2, eta_b=-0.4, sd_item=sd[0], sd_response=sd[1], sd_judge=sd[2], sd_model_item=sd_mi)
    diffs = _simulated_means(rng, 4000, 25, 2, 2, 0.2, sd, eta_b=-0.4, sd_mi=sd_mi)
    assert diffs.std(ddof=1) == pytest.approx(judge_se(comp, 25, 2, 2), rel=0.045)
    assert diffs.mean() == pytest.approx(comp["accuracy"], abs=4 * diffs.std(ddof=1) / math.sqrt(4000))
    # the same judges grade both models: most of the judge variance cancels in the difference
    single = judge_components(0.2, sd_item=sd[0], sd_response=sd[1], sd_judge=sd[2])
    assert comp["judge"] < 0.1 * single["judge"]


def test_model_by_item_variance_adds_to_the_item_part_of_one_model():
    """For one model a model-by-item effect is part of its item effect: SDs add in quadrature."""
    with_mi = judge_components(0.3, sd_item=0.8, sd_model_item=0.6, sd_response=0.4, sd_judge=0.5)
    pooled = judge_components(0.3, sd_item=1.0, sd_response=0.4, sd_judge=0.5)
    for k in ("accuracy", *COMPONENTS):
        assert with_mi[k] == pytest.approx(pooled[k], abs=2e-6)
    rng = np.random.default_rng(11)
    means = _simulated_means(rng, 4000, 30, 2, 3, 0.3, (0.8, 0.4, 0.5), sd_mi=0.6)
    assert means.std(ddof=1) == pytest.approx(judge_se(with_mi, 30, 2, 3), rel=0.045)


def test_plan_is_the_cheapest_design_meeting_the_target():
    comp = judge_components(0.5, sd_item=1.0, sd_response=0.6, sd_judge=0.3)
    costs = {"cost_item": 4.0, "cost_run": 1.0, "cost_judge": 0.5}
    p = plan_judges(comp, se=0.03, max_runs=6, max_judges=6, **costs)
    assert p.se <= 0.03 and judge_se(comp, p.n_items - 1, p.n_runs, p.n_judges) > 0.03
    best = math.inf
    ns = np.arange(2, 5000)
    for r, j in itertools.product(range(1, 7), range(1, 7)):
        # the fewest items meeting the target, searched over every count at once
        meets = judge_se(comp, ns, r, j) <= 0.03
        if meets.any():
            n = int(ns[meets.argmax()])
            best = min(best, n * 4 + n * r + n * r * j * 0.5)
    assert p.cost == pytest.approx(best)
    with pytest.raises(DataError, match="judge variance alone"):
        plan_judges(comp, se=0.005, max_judges=3)
    fixed = plan_judges(comp, se=0.005, max_judges=3, judges="fixed", **costs)
    assert fixed.se <= 0.005


def test_plan_from_a_study_meets_every_model(study):
    p = plan_judges(study, se=0.04, cost_item=3, cost_judge=0.2)
    worst = max(judge_se(row, p.n_items, p.n_runs, p.n_judges)
                for row in study.components[list(COMPONENTS)].to_dict("records"))
    assert worst == pytest.approx(p.se) and worst <= 0.04
    pc = study.pair_components("m1", "m2")
    assert pc["accuracy"] < 0
    with pytest.raises(DataError, match="not a level"):
        study.pair_components("m1", "m9")
