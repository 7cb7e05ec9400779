"""Rank instability (the paper's 10 of 12) and bootstrap rank uncertainty."""

from __future__ import annotations

import itertools
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats

import evalmix
from evalmix.core.errors import DataError
from evalmix.studies.ranking import rank_instability, rank_uncertainty


def _ai4math_instability(raw, sizes=1):
    return rank_instability(raw, ["language", "prompt"], item="problem_id", runs_per_leaderboard=sizes)


def test_ai4math_ten_of_twelve(ai4math_raw):
    # the paper's count, one argument away
    r = rank_instability(ai4math_raw, ["language", "prompt"], item="problem_id", ties="paper")
    assert (r.n_unstable, r.n_leaderboards) == (10, 12)
    assert r.rate == pytest.approx(10 / 12)
    assert len(r.table) == 12 and set(r.table["n_runs"]) == {1}


def test_ai4math_strict_is_the_default(ai4math_raw):
    # ties are not inversions: 5 of the 12 single-run leaderboards strictly invert a model pair
    r = _ai4math_instability(ai4math_raw)
    assert (r.ties, r.n_unstable, r.n_leaderboards, r.n_unstable_paper) == ("strict", 5, 12, 10)
    assert r.rate == pytest.approx(5 / 12)
    assert r.table["unstable"].tolist() == (r.table["n_discordant"] > 0).tolist()
    assert int(r.table["n_discordant"].sum()) == 9
    s = r.by_n_runs.iloc[0]
    assert (s["n_unstable"], s["n_unstable_paper"], s["rate_paper"]) == (5, 10, pytest.approx(10 / 12))
    assert "5 of 12" in str(r) and "10 of 12" in str(r)


def test_ai4math_position_count_matches_paper_code(ai4math_raw):
    # independent re-derivation of the R code: per slice, sort models (alphabetical) by descending
    # accuracy with a stable sort, and count positions where the run order differs from the
    # all-runs order
    raw = ai4math_raw
    r = _ai4math_instability(raw).table.set_index(["language", "prompt", "runs"])
    models = sorted(raw["model"].unique())
    for (lang, prompt), sub in raw.groupby(["language", "prompt"]):
        truth = sub.groupby("model")["correct"].mean()
        t_order = sorted(models, key=lambda m: -truth[m])
        for run_id, rsub in sub.groupby("run"):
            acc = rsub.groupby("model")["correct"].mean()
            order = sorted(models, key=lambda m: -acc[m])
            moved = sum(a != b for a, b in zip(order, t_order))
            assert r.loc[(lang, prompt, str(run_id)), "n_moved"] == moved


def test_ai4math_pooled_runs(ai4math_raw):
    r = _ai4math_instability(ai4math_raw, [1, 2, 3])
    s = r.by_n_runs.set_index("n_runs")
    assert s.loc[2, "n_leaderboards"] == 12 and s.loc[3, "n_unstable"] == 0
    # all three runs reproduce the reference exactly
    np.testing.assert_allclose(r.table.loc[r.table["n_runs"] == 3, "kendall_tau"], 1.0)
    assert s.loc[1, "inversions_removed"] == 0
    ranks = r.ranks
    assert set(ranks["leaderboard"]) >= {"all", "1", "2", "3", "1+2"}
    assert ranks.groupby(["language", "prompt", "leaderboard"]).size().eq(8).all()


def test_discordant_pairs_and_tau_by_hand():
    df = pd.DataFrame({
        "model": np.repeat(["a", "b", "c"], 4),
        "item": np.tile([1, 1, 2, 2], 3), "run": np.tile([1, 2, 1, 2], 3),
        # a: run1 2/2, run2 0/2 ; b: 1/2, 1/2 ; c: 0/2, 0/2  -> all: a .5, b .5, c 0
        "correct": [1, 0, 1, 0, 1, 1, 0, 0, 0, 0, 0, 0]})
    r = rank_instability(df)
    t = r.table.set_index("runs")
    # run 1: a 1, b .5, c 0 -> no strict inversion of the reference (a, b tied there)
    assert t.loc["1", "n_discordant"] == 0 and t.loc["1", "n_moved"] == 0
    # run 2: a 0, b .5, c 0 -> b leads (position change), a ties c (reference a > c: not discordant)
    assert t.loc["2", "n_moved"] == 2 and t.loc["2", "n_discordant"] == 0
    assert t.loc["2", "kendall_tau"] == pytest.approx(stats.kendalltau([0, .5, 0], [.5, .5, 0]).statistic)
    # strict (the default): no leaderboard inverts a pair; the paper's count: run 2 is "unstable"
    assert (r.n_unstable, r.n_leaderboards, r.ties, r.n_unstable_paper) == (0, 2, "strict", 1)
    paper = rank_instability(df, ties="paper")
    assert (paper.n_unstable, paper.rate) == (1, 0.5)
    assert paper.table["unstable"].tolist() == [False, True]


# the invariants hold for any runs table, whatever its draws: ten tables of 4 models x 12 items
# x 3 runs (each leaderboard of 1, 2 and 3 runs) exercise them
@settings(max_examples=10, deadline=None)
@given(st.integers(0, 10_000))
def test_instability_invariants(seed):
    df = evalmix.simulate.glmm_runs(4, 12, 3, rng=seed)
    r = rank_instability(df, runs_per_leaderboard=[1, 2, 3])
    t = r.table
    assert (t["n_discordant"] <= t["n_pairs"]).all()
    assert ((t["n_discordant"] > 0) <= (t["n_moved"] > 0)).all()  # an inversion always moves a model
    assert (t.loc[t["n_runs"] == 3, "n_moved"] == 0).all()


def test_instability_errors():
    df = evalmix.simulate.glmm_runs(2, 5, 2, rng=1)
    with pytest.raises(DataError, match="runs_per_leaderboard=3"):
        rank_instability(df, runs_per_leaderboard=3)
    with pytest.raises(DataError, match="every model in every run"):
        rank_instability(df[~((df["model"] == "M1") & (df["run"] == 2))])


# ---------------------------------------------------------------- bootstrap rank uncertainty

@pytest.fixture(scope="module")
def two_models():
    return evalmix.simulate.glmm_runs(2, 80, 2, model_effects=[0.0, 0.25], sd_item=1.0, rng=11)


def test_bootstrap_se_matches_cluster_formula(two_models):
    r = rank_uncertainty(two_models, n_boot=4000, rng=5)
    per_item = two_models.groupby(["model", "item"])["correct"].mean().unstack("item")
    n = per_item.shape[1]
    # ideal bootstrap SE of a mean of n item means: sqrt(sum((x - xbar)^2)) / n
    ideal = np.sqrt(((per_item.sub(per_item.mean(axis=1), axis=0)) ** 2).sum(axis=1)) / n
    got = r.table.set_index("model")["se"]
    np.testing.assert_allclose(got[ideal.index], ideal, rtol=0.05)
    # P(M2 ranks first) against the normal approximation of the paired difference
    diff = per_item.loc["M2"] - per_item.loc["M1"]
    se_d = np.sqrt(((diff - diff.mean()) ** 2).sum()) / n
    p_norm = stats.norm.cdf(diff.mean() / se_d)
    p_tie = r.distribution.set_index("model").loc["M1", "rank_1"] + \
        r.distribution.set_index("model").loc["M2", "rank_1"] - 1  # both rank 1 when tied
    p_m2_strict = r.table.set_index("model").loc["M2", "p_best"] - p_tie
    assert p_m2_strict + p_tie / 2 == pytest.approx(p_norm, abs=0.05)


def test_bootstrap_reproducible_across_jobs(two_models):
    a = rank_uncertainty(two_models, n_boot=600, rng=3, chunk_size=100, n_jobs=1)
    b = rank_uncertainty(two_models, n_boot=600, rng=3, chunk_size=100, n_jobs=2)
    pd.testing.assert_frame_equal(a.table, b.table)
    c = rank_uncertainty(two_models, n_boot=600, rng=np.random.default_rng(3), chunk_size=100)
    assert c.table.shape == a.table.shape


def test_bootstrap_table_consistent():
    df = evalmix.simulate.glmm_runs(4, 50, 2, slices={"language": ["EN", "ES"]},
                                    model_effects=[-2, -0.5, 0.5, 2], rng=8)
    r = rank_uncertainty(df, "language", n_boot=500, rng=2, progress=False)
    t = r.table
    assert len(t) == 8
    assert ((t["rank_low"] <= t["rank"]) | (t["rank_high"] >= t["rank"])).all()
    assert (t["rank_low"] <= t["rank_high"]).all()
    dist = r.distribution.filter(like="rank_")
    np.testing.assert_allclose(dist.sum(axis=1), 1.0)
    for _, g in t.groupby("language"):
        assert g.set_index("model").loc["M4", "p_best"] > 0.99
        # expected ranks of a 4-model leaderboard without ties sum to 1+2+3+4
        assert g["mean_rank"].sum() == pytest.approx(10, abs=0.05)
    assert "mean_rank" in r.to_markdown()


def test_bootstrap_needs_complete_items():
    df = evalmix.simulate.glmm_runs(2, 5, 1, rng=1)
    with pytest.raises(DataError, match="every model on every item"):
        rank_uncertainty(df[~((df["model"] == "M1") & (df["item"] == "q1"))], n_boot=10)


def test_subsets_enumerated():
    df = evalmix.simulate.glmm_runs(3, 10, 4, rng=2)
    r = rank_instability(df, runs_per_leaderboard=2)
    assert sorted(r.table["runs"]) == sorted("+".join(map(str, c))
                                             for c in itertools.combinations([1, 2, 3, 4], 2))


def test_rank_uncertainty_glmm_matches_normal_theory():
    import warnings

    from evalmix.glmm import glmer
    from evalmix.studies.ranking import rank_uncertainty_glmm

    df = evalmix.simulate.glmm_runs(2, 60, 2, model_effects=[0.0, 0.3], sd_item=1.0, rng=12)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = glmer("correct ~ model + (1|item) + (1|item:run)", df)
    r = rank_uncertainty_glmm(fit, n_draws=20000, rng=1)
    b, se = fit.fixef["modelM2"], np.sqrt(fit.vcov.loc["modelM2", "modelM2"])
    p = stats.norm.cdf(b / se)
    mc_se = np.sqrt(p * (1 - p) / 20000)
    assert r.table.set_index("model").loc["M2", "p_best"] == pytest.approx(p, abs=4 * mc_se)
    assert r.method == "glmm"
    np.testing.assert_allclose(r.table["mean_rank"].sum(), 3.0)


def test_rank_uncertainty_glmm_by_slice(ai4math_raw):
    import warnings

    from evalmix.glmm import glmer
    from evalmix.studies.ranking import rank_uncertainty_glmm

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = glmer("correct ~ model * language + (1|problem_id) + (1|problem_id:run)", ai4math_raw)
    r = rank_uncertainty_glmm(fit, by="language", n_draws=2000, rng=3)
    assert len(r.table) == 16
    top = r.table.sort_values("p_best").groupby("language").tail(1)
    assert set(top["model"]) == {"Grok-4"}
    with pytest.raises(DataError, match="not a factor"):
        rank_uncertainty_glmm(fit, "prompt")


def test_counts_input_matches_binary():
    df = evalmix.simulate.glmm_runs(3, 20, 2, rng=6)
    # the same answers given as k-of-n counts (two answers per item and run, duplicated)
    counts = df.assign(k=2 * df["correct"], n=2).drop(columns="correct")
    runs = evalmix.read_runs(counts, successes="k", trials="n")
    a = rank_instability(df).table
    b = rank_instability(runs).table
    pd.testing.assert_frame_equal(a, b)
    u = rank_uncertainty(runs, n_boot=300, rng=4).table
    v = rank_uncertainty(df, n_boot=300, rng=4).table
    np.testing.assert_allclose(u["mean_rank"], v["mean_rank"])


# --- rank-deficient fits: a level mean that is not estimable is never a silent number -------------

@pytest.fixture(scope="module")
def missing_cell_fit():
    """m3 never ran in ES: glmer drops the aliased m3:ES column, and emmeans calls every mean that
    involves that cell not estimable."""
    import warnings

    from conftest import REFERENCE
    from evalmix.glmm import glmer

    data = pd.read_csv(REFERENCE / "inference_glmer_sim.csv")
    data = data[~((data["model"] == "m3") & (data["lang"] == "ES"))]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return glmer("correct ~ model * lang + (1|item) + (1|item:run)", data)


def test_rank_uncertainty_glmm_flags_a_non_estimable_level(missing_cell_fit):
    from evalmix.core.errors import DataWarning
    from evalmix.studies.ranking import rank_uncertainty_glmm

    fit = missing_cell_fit
    with pytest.warns(DataWarning, match=r"not estimable for lang=ES, model=m3"):
        r = rank_uncertainty_glmm(fit, by="lang", n_draws=4000, rng=2)
    tab = r.table.set_index(["lang", "model"])
    assert tab.loc[("ES", "m3")].isna().all()
    # the estimable means are emmeans' (checked against R in test_emmeans), ranked among
    # themselves: 3 levels in EN, 2 in ES
    emm = evalmix.emmeans(fit, "model", by="lang").to_frame().set_index(["lang", "model"])
    ok = emm["estimate"].notna()
    np.testing.assert_allclose(tab.loc[emm.index[ok], "estimate"], emm.loc[ok, "estimate"],
                               rtol=1e-12)
    np.testing.assert_allclose(tab.loc[emm.index[ok], "se"], emm.loc[ok, "se"], rtol=1e-12)
    assert sorted(tab.loc["EN", "rank"].astype(int)) == [1, 2, 3]
    assert sorted(tab.loc["ES", "rank"].dropna().astype(int)) == [1, 2]
    np.testing.assert_allclose(tab.loc["ES", "mean_rank"].sum(), 3.0)  # 1 + 2
    dist = r.distribution.set_index(["lang", "model"])
    assert dist.loc[("ES", "m3")].isna().all()
    # averaged over languages, m3's mean involves the empty cell too
    with pytest.warns(DataWarning, match="model=m3"):
        pooled = rank_uncertainty_glmm(fit, n_draws=500, rng=2).table.set_index("model")
    assert np.isnan(pooled.loc["m3", "estimate"]) and pooled["rank"].notna().sum() == 2


def test_rank_sets_and_components_leave_out_a_non_estimable_level(missing_cell_fit):
    from evalmix.core.errors import DataWarning

    fit = missing_cell_fit
    with pytest.warns(DataWarning, match="lang=ES, model=m3"):
        sets = evalmix.rank_sets_glmm(fit, by="lang").table
    assert set(zip(sets["lang"], sets["model"])) == {("EN", "m-1"), ("EN", "m2"), ("EN", "m3"),
                                                    ("ES", "m-1"), ("ES", "m2")}
    emm = evalmix.emmeans(fit, "model", by="lang").to_frame().set_index(["lang", "model"])
    got = sets.set_index(["lang", "model"])["estimate"]
    np.testing.assert_allclose(got, emm.loc[got.index, "estimate"], rtol=1e-12)
    with pytest.warns(DataWarning, match="lang=ES, model=m3"):
        comp = evalmix.repetitions.components_from_fit(fit, by="lang", item_run="item:run")
    comp = comp.table.set_index(["lang", "model"])
    assert np.isnan(comp.loc[("ES", "m3"), "eta"])
    np.testing.assert_allclose(comp.loc[("EN", "m3"), "eta"], emm.loc[("EN", "m3"), "estimate"],
                               rtol=1e-12)


def test_studies_evaluate_a_separated_fit_through_the_grid():
    # every response of model-B is a success: fixef holds +inf for it, and the finite limit fit
    # holds the rest; the studies read the level means from the reference grid, so model-B is
    # +inf (not tied with the reference level, as L @ beta_limit gave) and the others match
    # emmeans to the last digit
    from evalmix.core.errors import SeparationWarning

    d = pd.read_csv(Path(__file__).parents[1] / "reference" / "separation_runs.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = evalmix.glmer("y_nonref ~ model + (1|item) + (1|item:run)", d)
        emm = evalmix.emmeans(fit, "model").to_frame().set_index("model")
    assert np.isposinf(fit.fixef["modelmodel-B"]) and np.isposinf(emm.loc["model-B", "estimate"])
    finite = ["model-A", "model-C"]

    with pytest.warns(SeparationWarning, match=r"model=model-B \(\+inf\)"):
        ru = evalmix.rank_uncertainty_glmm(fit, n_draws=2000, rng=1).table.set_index("model")
    b = ru.loc["model-B"]
    assert np.isposinf(b["estimate"]) and b["accuracy"] == 1.0 and np.isnan(b["se"])
    assert (b["rank"], b["rank_low"], b["rank_high"], b["p_best"], b["mean_rank"]) == (1, 1, 1, 1.0, 1.0)
    np.testing.assert_allclose(ru.loc[finite, "estimate"], emm.loc[finite, "estimate"], rtol=1e-12)
    np.testing.assert_allclose(ru.loc[finite, "se"], emm.loc[finite, "se"], rtol=1e-12)
    assert ru.loc[finite, "rank"].tolist() == [2, 3] and (ru.loc[finite, "rank_low"] >= 2).all()

    with pytest.warns(SeparationWarning, match=r"model=model-B \(\+inf\)"):
        rs = evalmix.rank_sets_glmm(fit).table.set_index("model")
    assert sorted(rs.index) == finite  # no place for an infinite mean in a normal band
    np.testing.assert_allclose(rs.loc[finite, "estimate"], emm.loc[finite, "estimate"], rtol=1e-12)

    comp = evalmix.repetitions.components_from_fit(fit, item_run="item:run").table.set_index("model")
    # accuracy 1 and no variance, to the rounding of the quadrature weights' sum
    assert comp.loc["model-B", "accuracy"] == pytest.approx(1.0, abs=1e-12)
    np.testing.assert_allclose(comp.loc["model-B", ["var_between", "var_within"]].to_numpy(float),
                               0.0, atol=1e-12)
    # L @ fixef gave NaN here (0 * inf); the grid gives the finite mean
    np.testing.assert_allclose(comp.loc[finite, "eta"], emm.loc[finite, "estimate"], rtol=1e-12)
