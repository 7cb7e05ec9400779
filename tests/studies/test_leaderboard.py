"""Simultaneous rank sets and tie groups: a hand-worked example, R parity, coverage by simulation."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalmix
from evalmix.core.errors import DataError
from evalmix.studies.leaderboard import (
    rank_sets,
    rank_sets_glmm,
    rank_sets_normal,
    rank_sets_posterior,
    tie_groups,
)

REF = json.loads((Path(__file__).parents[1] / "reference" / "leaderboard_reference.json").read_text())


# ----------------------------------------------------------------------------------------------
# hand-worked example


def test_hand_worked_example():
    """Four independent estimates with SE 0.01 each.

    Pair SE = 0.01 * sqrt(2); the 95% Tukey critical value is qtukey(0.95, 4, Inf) / sqrt(2) =
    2.5690, so a pair is separated when its difference exceeds 0.036331.  Differences: A-B 0.02
    (no), A-C 0.05, A-D 0.10, B-C 0.03 (no), B-D 0.08, C-D 0.05.  Hence A is above C, D; B above D;
    C above D: rank sets A [1, 2], B [1, 3], C [2, 3], D [4, 4]; the not-separated graph has edges
    A-B and B-C, whose maximal cliques are {A, B}, {B, C}, {D}: letters a, ab, b, c.
    """
    rs = rank_sets_normal([0.80, 0.78, 0.75, 0.70], se=[0.01] * 4, labels=list("ABCD"))
    t = rs.table.set_index("model")
    assert t.loc[["A", "B", "C", "D"], "rank_low"].tolist() == [1, 1, 2, 4]
    assert t.loc[["A", "B", "C", "D"], "rank_high"].tolist() == [2, 3, 3, 4]
    assert t.loc[["A", "B", "C", "D"], "tie_group"].tolist() == ["a", "ab", "b", "c"]
    assert rs.groups["models"].tolist() == [("A", "B"), ("B", "C"), ("D",)]
    crit = next(r["crit"] for r in REF["tukey"] if r["k"] == 4 and r["level"] == 0.95)
    assert rs.pairs["critical_value"].iloc[0] == pytest.approx(crit, abs=2e-3)
    assert crit == pytest.approx(2.5690, abs=1e-4)
    sep = rs.pairs.set_index(["model_a", "model_b"])["separated"]
    assert not sep[("A", "B")] and not sep[("B", "C")]
    assert sep[("A", "C")] and sep[("C", "D")]
    # the marginal interval of one model is never wider than its simultaneous set
    assert (t["marginal_rank_low"] >= t["rank_low"]).all()
    assert (t["marginal_rank_high"] <= t["rank_high"]).all()
    # printed forms
    md = rs.to_markdown()
    # R's format(c(0.80, 0.78, 0.75, 0.70), digits = 4) and of the interval ends
    assert "| B     | 0.78 " in md and "[0.7604, 0.7996]" in md.replace("\\", "") and "1-3" in md and "ab" in md
    tex = rs.to_latex()
    assert "\\begin{table}" in tex and "1-3" in tex
    d = rs.to_dict()
    assert d["groups"][0]["models"] == ["A", "B"] and d["method"] == "normal"


@pytest.mark.parametrize("level", [0.9, 0.95])
@pytest.mark.parametrize("k", [2, 3, 5, 8, 10])
def test_independent_equal_se_is_tukey(k, level):
    ref = next(r["crit"] for r in REF["tukey"] if r["k"] == k and r["level"] == level)
    rs = rank_sets_normal(np.linspace(0, 1, k), se=np.full(k, 0.3), conf_level=level)
    assert rs.pairs["critical_value"].iloc[0] == pytest.approx(ref, abs=2e-3)


@pytest.mark.parametrize("k", [15, 20, 30])
def test_many_models_use_seeded_normal_draws(k):
    """Beyond 12 models the critical values come from 50,000 fixed draws (MC error about 0.01)."""
    ref = next(r["crit"] for r in REF["tukey"] if r["k"] == k and r["level"] == 0.95)
    est = np.linspace(0, 3, k)
    rs = rank_sets_normal(est, se=np.full(k, 0.3))
    assert rs.pairs["critical_value"].iloc[0] == pytest.approx(ref, abs=0.03)
    again = rank_sets_normal(est, se=np.full(k, 0.3))
    pd.testing.assert_frame_equal(rs.table, again.table)  # deterministic
    t = rs.table
    assert (t["marginal_rank_low"] >= t["rank_low"]).all() and (t["marginal_rank_high"] <= t["rank_high"]).all()
    # the adjusted p-value and the separation agree: separated pairs have p_adjusted < 0.05
    p = rs.pairs
    assert (p.loc[p["separated"], "p_adjusted"] <= 0.05).all()
    assert (p.loc[~p["separated"], "p_adjusted"] >= 0.05 - 1e-3).all()


def test_normal_draws_match_the_row_at_a_time_reference():
    """The models-first, single-precision critical values give the draws-first implementation's numbers.

    tests/reference/rank_sets_normal_30.json was written by tests/reference/rank_sets_normal_30.py
    before the per-model maxima were computed models-first in float32: 30 correlated estimates, 435
    pairs.  Rank sets and separations are equal; the pair statistics now carry float32 rounding
    (~1e-7 relative), so a draw lying that close to a pair's z may change sides: the adjusted
    p-values (counts over 50,000 draws) may move by a draw or two (2e-5 each), the critical values
    by the rounding.  Both are far below the Monte-Carlo error (~1e-2).
    """
    import importlib.util

    from evalmix import leaderboard

    here = Path(__file__).parents[1] / "reference"
    spec = importlib.util.spec_from_file_location("rank_sets_normal_30", here / "rank_sets_normal_30.py")
    assert spec is not None and spec.loader is not None
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    ref = json.loads((here / "rank_sets_normal_30.json").read_text())
    est, cov = script.case()
    rs = rank_sets_normal(est, cov, labels=[f"m{j:02d}" for j in range(30)])
    for col, values in ref["table"].items():
        assert rs.table[col].tolist() == values, col
    assert rs.pairs[["model_a", "model_b"]].values.tolist() == [
        list(p) for p in zip(ref["pairs"]["model_a"], ref["pairs"]["model_b"])]
    assert rs.pairs["separated"].tolist() == ref["pairs"]["separated"]
    np.testing.assert_allclose(rs.pairs["p_adjusted"], ref["pairs"]["p_adjusted"], rtol=0, atol=2.5 * 2e-5)
    assert rs.pairs["critical_value"].iloc[0] == pytest.approx(ref["critical_value"], rel=1e-6)
    np.testing.assert_allclose(script.marginal_critical_values(est, cov), ref["marginal_critical_values"],
                               rtol=1e-6, atol=0)
    assert leaderboard._EXACT_MAX_MODELS < 30  # the draws path, not the exact one, is checked


# estimates and SEs of 2 to 9 models; each case solves several multivariate-normal quantiles
# (~0.17 CPU s), so the default step draws 12 cases and the slow step 40
RANK_CASES = st.integers(2, 9).flatmap(lambda k: st.tuples(
    st.lists(st.floats(-3, 3), min_size=k, max_size=k),
    st.lists(st.floats(0.05, 1.0), min_size=k, max_size=k)))


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
@settings(max_examples=12, deadline=None)
@given(RANK_CASES)
def test_rank_set_invariants(case):
    _check_rank_set_invariants(case)


@pytest.mark.slow
@settings(max_examples=40, deadline=None)
@given(RANK_CASES)
def test_rank_set_invariants_more_cases(case):
    _check_rank_set_invariants(case)


def _check_rank_set_invariants(case):
    est, se = case
    rs = rank_sets_normal(est, se=se)
    t = rs.table
    assert (t["rank_low"] <= t["rank"]).all() and (t["rank"] <= t["rank_high"]).all()
    assert (t["rank_low"] <= t["marginal_rank_low"]).all()
    assert (t["marginal_rank_high"] <= t["rank_high"]).all()
    assert (t["marginal_rank_low"] <= t["rank"]).all() and (t["rank"] <= t["marginal_rank_high"]).all()
    # a model's set has room for every model not separated from it
    k = len(est)
    for _, row in t.iterrows():
        assert 1 <= row["rank_low"] <= row["rank_high"] <= k


def test_tie_groups_hand_example():
    # the chain A - B - C - D (each adjacent pair inseparable, all others separated)
    sep = np.ones((4, 4), bool)
    for i in range(3):
        sep[i, i + 1] = sep[i + 1, i] = False
    groups, letters = tie_groups(sep, [0, 1, 2, 3])
    assert groups == [(0, 1), (1, 2), (2, 3)]
    assert letters == ["a", "ab", "bc", "c"]
    # nothing separated: one group
    groups, letters = tie_groups(np.zeros((3, 3), bool), [2, 0, 1])
    assert groups == [(2, 0, 1)] and letters == ["a", "a", "a"]


@settings(max_examples=60, deadline=None)
@given(st.integers(2, 7).flatmap(lambda k: st.tuples(
    st.just(k), st.lists(st.booleans(), min_size=k * (k - 1) // 2, max_size=k * (k - 1) // 2))))
def test_tie_groups_are_maximal_cliques(case):
    k, flags = case
    sep = np.zeros((k, k), bool)
    a, b = np.triu_indices(k, 1)
    sep[a, b] = flags
    sep = sep | sep.T
    groups, letters = tie_groups(sep, list(range(k)))
    covered = set()
    for g in groups:
        covered |= set(g)
        for i in g:
            for j in g:
                assert i == j or not sep[i, j]  # pairwise not separated
        outside = [m for m in range(k) if m not in g]
        for m in outside:  # maximal: no outsider joins the whole group
            assert any(sep[m, i] for i in g)
    assert covered == set(range(k))
    assert all(letters)


# ----------------------------------------------------------------------------------------------
# parity with emmeans' mvt-adjusted pairwise intervals


def _glmer_data():
    g = pd.read_csv(Path(__file__).parents[1] / "reference" / "inference_glmer_sim.csv")
    return g


def test_normal_matches_emmeans_mvt_on_lme4_estimates():
    """lme4's marginal means and covariance in, emmeans' mvt-adjusted pairwise intervals out."""
    emm = REF["g2_emm"]
    rs = rank_sets_normal(emm["estimate"], np.array(emm["vcov"]), labels=emm["model"])
    for r in REF["g2_model"]:
        a, b = [s.strip().strip("()") for s in r["contrast"].split(" - ")]
        row = rs.pairs[(rs.pairs["model_a"] == a) & (rs.pairs["model_b"] == b)].iloc[0]
        assert row["estimate"] == pytest.approx(r["estimate"], abs=1e-10)
        assert row["se"] == pytest.approx(r["se"], rel=1e-8)
        # mvtnorm's quantile is itself a randomised integration (error about 1e-3)
        assert row["critical_value"] == pytest.approx(r["crit"], abs=2e-3)
        assert row["conf_low"] == pytest.approx(r["conf_low"], abs=1e-3)
        assert row["conf_high"] == pytest.approx(r["conf_high"], abs=1e-3)
        assert row["p_adjusted"] == pytest.approx(r["p_adjusted"], abs=1e-3)
        assert row["separated"] == (r["conf_low"] > 0 or r["conf_high"] < 0)


@pytest.mark.parametrize("formula,by,key", [
    ("correct ~ model + lang + (1|item) + (1|item:run)", None, "g2_model"),
    ("correct ~ model * lang + (1|item) + (1|item:run)", "lang", "g3_model_by_lang"),
])
def test_glmm_matches_emmeans_mvt(formula, by, key):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = evalmix.glmer(formula, _glmer_data())
    rs = rank_sets_glmm(fit, "model", by=by)
    ref = pd.DataFrame(REF[key])
    for _, r in ref.iterrows():
        a, b = [s.strip().strip("()") for s in r["contrast"].split(" - ")]
        sub = rs.pairs
        if by:
            sub = sub[sub[by] == r[by]]
        row = sub[(sub["model_a"] == a) & (sub["model_b"] == b)].iloc[0]
        # our own fit of the same data: estimates agree with lme4's to well within 1% of an SE
        assert row["estimate"] == pytest.approx(r["estimate"], abs=0.01 * r["se"])
        assert row["se"] == pytest.approx(r["se"], rel=5e-3)
        assert row["critical_value"] == pytest.approx(r["crit"], abs=3e-3)
        assert row["conf_low"] == pytest.approx(r["conf_low"], abs=0.02 * r["se"])
        assert row["conf_high"] == pytest.approx(r["conf_high"], abs=0.02 * r["se"])
        assert row["p_adjusted"] == pytest.approx(r["p_adjusted"], abs=5e-3)
        assert row["separated"] == (r["conf_low"] > 0 or r["conf_high"] < 0)
    assert set(rs.table.columns) >= {"accuracy", "rank_low", "rank_high", "tie_group"}


# ----------------------------------------------------------------------------------------------
# posterior draws


def test_posterior_independent_normals_give_tukey():
    rng = np.random.default_rng(7)
    k = 5
    draws = rng.normal(np.arange(k) * 5.0, 1.0, size=(40_000, k))
    rs = rank_sets_posterior(draws, labels=list("abcde"))
    ref = next(r["crit"] for r in REF["tukey"] if r["k"] == k and r["level"] == 0.95)
    # the 95% quantile of 40,000 draws has a Monte-Carlo SE of about 0.01
    assert rs.pairs["critical_value"].iloc[0] == pytest.approx(ref, abs=0.04)
    assert rs.table["model"].tolist() == list("edcba")
    assert (rs.table["rank_low"] == rs.table["rank_high"]).all()


def test_posterior_from_bayes_fit_like_object():
    class Fake:
        fixef_draws = None

        def ranks(self, term):
            rng = np.random.default_rng(1)
            draws = rng.normal([0.0, 0.05, 1.5], 0.1, size=(2000, 3))
            res = type("R", (), {})()
            res.draws = draws
            res.table = pd.DataFrame({term: ["x", "y", "z"]})
            return res

    rs = rank_sets_posterior(Fake())
    assert rs.table["model"].tolist() == ["z", "y", "x"]
    assert rs.table["tie_group"].tolist() == ["a", "b", "b"]
    assert "accuracy" in rs.table


# ----------------------------------------------------------------------------------------------
# item bootstrap: joint coverage by seeded simulation with known truth


def _simulate(rng, theta, n_items, n_runs, spread=0.15):
    """Item accuracy theta_m + delta_i, delta_i ~ U(-spread, spread): model m's population
    accuracy over items is exactly theta_m."""
    delta = rng.uniform(-spread, spread, n_items)
    p = np.clip(theta[:, None] + delta[None, :], 0, 1)  # models x items
    y = rng.random((n_runs,) + p.shape) < p
    r, m, i = np.meshgrid(np.arange(n_runs), np.arange(len(theta)), np.arange(n_items), indexing="ij")
    return pd.DataFrame({"model": np.array([f"m{j}" for j in range(len(theta))])[m.ravel()],
                         "item": i.ravel(), "run": r.ravel(), "correct": y.ravel().astype(int)})


@pytest.mark.slow  # a simulation or a large fit: the second test step
def test_bootstrap_joint_coverage_simulation():
    theta = np.array([0.50, 0.53, 0.56, 0.62, 0.70])
    labels = [f"m{j}" for j in range(len(theta))]
    true_rank = pd.Series(len(theta) - np.argsort(np.argsort(theta)), index=labels)
    a, b = np.triu_indices(len(theta), 1)
    true_diff = {(labels[i], labels[j]): theta[i] - theta[j] for i, j in zip(a, b)}
    rng = np.random.default_rng(20261123)
    n_sims, level = 400, 0.95
    pairs_cover, ranks_cover, marg_cover = 0, 0, np.zeros(len(theta))
    for s in range(n_sims):
        df = _simulate(rng, theta, n_items=150, n_runs=2)
        rs = rank_sets(df, n_boot=400, rng=s, conf_level=level)
        p = rs.pairs
        d = np.array([true_diff[(x, y)] for x, y in zip(p["model_a"], p["model_b"])])
        pairs_cover += bool(((p["conf_low"] <= d) & (d <= p["conf_high"])).all())
        t = rs.table.set_index("model").loc[labels]
        tr = true_rank.loc[labels].to_numpy()
        ranks_cover += bool(((t["rank_low"] <= tr) & (tr <= t["rank_high"])).all())
        marg_cover += (t["marginal_rank_low"] <= tr) & (tr <= t["marginal_rank_high"])
    mcse = np.sqrt(level * (1 - level) / n_sims)
    # the simultaneous intervals of the differences hold jointly at the nominal level
    assert abs(pairs_cover / n_sims - level) <= 2 * mcse, pairs_cover / n_sims
    # the rank sets hold jointly at least at the nominal level (they follow from that event)
    assert ranks_cover / n_sims >= level - 2 * mcse
    assert (marg_cover / n_sims >= level - 2 * mcse).all()


def test_bootstrap_is_seeded_and_sliced():
    df = evalmix.simulate.glmm_runs(3, 40, 2, slices={"language": ["EN", "ES"]}, rng=5)
    r1 = rank_sets(df, "language", n_boot=200, rng=3)
    r2 = rank_sets(df, "language", n_boot=200, rng=3)
    pd.testing.assert_frame_equal(r1.table, r2.table)
    assert r1.table["language"].tolist() == ["EN"] * 3 + ["ES"] * 3
    assert set(r1.groups.columns) >= {"language", "group", "models", "size"}


def test_status_rows_are_left_out():
    df = evalmix.simulate.glmm_runs(3, 40, 2, rng=5)
    df["status"] = "ok"
    extra = df.iloc[:5].copy()
    extra["run"] = 99
    extra["correct"] = np.nan
    extra["status"] = "error"
    both = pd.concat([df, extra], ignore_index=True)
    r1 = rank_sets(df, n_boot=200, rng=3)
    r2 = rank_sets(both, n_boot=200, rng=3)
    pd.testing.assert_frame_equal(r1.table, r2.table)


def test_bad_inputs():
    df = evalmix.simulate.glmm_runs(3, 20, 2, rng=5)
    with pytest.raises(DataError, match="has no scored answer to item"):
        rank_sets(df[~((df["model"] == "M2") & (df["item"] == df["item"].iloc[0]))], n_boot=50)
    with pytest.raises(DataError, match="at least two models"):
        rank_sets(df[df["model"] == "M1"], n_boot=50)
    with pytest.raises(ValueError, match="conf_level"):
        rank_sets(df, conf_level=1.5)
    with pytest.raises(ValueError, match="exactly one"):
        rank_sets_normal([1, 2], cov=np.eye(2), se=[1, 1])
    with pytest.raises(DataError, match="2 x 2"):
        rank_sets_normal([1, 2], cov=np.eye(3))
    with pytest.raises(DataError, match="too few"):
        rank_sets_posterior(np.zeros((10, 3)))


# ----------------------------------------------------------------------------------------------
# rank sets from a draws matrix (max-t): joint coverage by seeded simulation with known truth

_MU = np.array([0.0, 0.05, 0.1, 0.3, 0.6])  # true model means: close neighbours, so ranks are at stake
_SD = np.array([0.05, 0.08, 0.05, 0.1, 0.05])  # the SEs of their estimates


def _draws_coverage(n_sims: int, n_draws: int, seed: int, n_obs: int | None = None) -> tuple[float, float]:
    """Share of simulations whose pairwise intervals all cover, and whose rank sets all cover.

    ``n_obs=None``: posterior-style draws, ``estimate + SE * N(0, 1)`` around an estimate that is
    ``N(mu, SE^2)`` (flat prior, known SE: the draws' max-t is the exact normal one up to the
    quantile's Monte-Carlo error).  ``n_obs``: ``n_obs`` normal observations per model, bootstrap
    replicates of their means, centred at the full-sample means (``estimate=``).
    """
    k = len(_MU)
    labels = [f"m{j}" for j in range(k)]
    true_rank = k - np.argsort(np.argsort(_MU))
    a, b = np.triu_indices(k, 1)
    rng = np.random.default_rng(seed)
    pairs_cover = ranks_cover = 0
    for _ in range(n_sims):
        if n_obs is None:
            est = _MU + _SD * rng.standard_normal(k)
            rs = evalmix.rank_sets_draws(est + _SD * rng.standard_normal((n_draws, k)), labels=labels)
        else:
            obs = _MU + _SD * np.sqrt(n_obs) * rng.standard_normal((n_obs, k))
            boot = obs[rng.integers(0, n_obs, (n_draws, n_obs))].mean(axis=1)
            rs = evalmix.rank_sets_draws(boot, labels=labels, estimate=obs.mean(axis=0))
        p = rs.pairs
        d = _MU[a] - _MU[b]  # pairs in triu order, model_a = the earlier label
        assert p["model_a"].tolist() == [labels[i] for i in a]
        pairs_cover += bool(((p["conf_low"] <= d) & (d <= p["conf_high"])).all())
        t = rs.table.set_index("model").loc[labels]
        ranks_cover += bool(((t["rank_low"] <= true_rank) & (true_rank <= t["rank_high"])).all())
    return pairs_cover / n_sims, ranks_cover / n_sims


@pytest.mark.slow  # a coverage simulation: the second test step
def test_draws_joint_coverage_simulation():
    """150 simulations: Monte-Carlo SE of a 95% coverage sqrt(0.95 * 0.05 / 150) = 0.018; 3 SE."""
    n_sims, level = 150, 0.95
    pairs, ranks = _draws_coverage(n_sims, 400, seed=20261126)
    mcse = np.sqrt(level * (1 - level) / n_sims)
    assert abs(pairs - level) <= 3 * mcse, pairs
    # on the event that all pairwise intervals cover, every rank set covers
    assert ranks >= pairs


@pytest.mark.slow  # a simulation: the second test step
def test_draws_joint_coverage_simulation_bootstrap():
    """2,000 simulations of 100 observations per model and 1,000 bootstrap replicates each.

    Monte-Carlo SE sqrt(0.95 * 0.05 / 2000) = 0.0049; the bootstrap's SD of a mean is
    sqrt(99 / 100) of the true one, which costs well under 0.01 of coverage at this size, so the
    pairwise coverage is checked to 3 SE plus 0.01 and the posterior-style draws to 3 SE.
    """
    n_sims, level = 2000, 0.95
    mcse = np.sqrt(level * (1 - level) / n_sims)
    pairs, ranks = _draws_coverage(n_sims, 1000, seed=7, n_obs=100)
    assert abs(pairs - level) <= 3 * mcse + 0.01, pairs
    assert ranks >= pairs
    pairs, ranks = _draws_coverage(n_sims, 1000, seed=8)
    assert abs(pairs - level) <= 3 * mcse, pairs
    assert ranks >= pairs


def test_draws_max_t_matches_posterior_and_hand_values():
    """The draws' critical value is the quantile of the per-draw max-t; a frame supplies labels."""
    rng = np.random.default_rng(3)
    d = pd.DataFrame(rng.normal([0.0, 0.1, 0.9], [0.1, 0.2, 0.1], size=(3000, 3)), columns=list("ABC"))
    rs = evalmix.rank_sets_draws(d)
    mat = d.to_numpy()
    a, b = np.triu_indices(3, 1)
    diff = mat[:, a] - mat[:, b]
    dhat = mat.mean(0)[a] - mat.mean(0)[b]
    se = diff.std(axis=0, ddof=1)
    t_max = np.abs((diff - dhat) / se).max(axis=1)
    crit = np.sort(t_max)[int(np.ceil(0.95 * (len(t_max) - 1)))]  # the next order statistic up
    assert rs.pairs["critical_value"].iloc[0] == pytest.approx(crit, rel=1e-12)
    np.testing.assert_allclose(rs.pairs["se"], se, rtol=1e-12)
    np.testing.assert_allclose(rs.table.set_index("model").loc[list("ABC"), "estimate"], mat.mean(0), rtol=1e-12)
    assert rs.method == "max-t"
    assert rs.table["model"].tolist() == ["C", "B", "A"]
    assert rs.table[["rank_low", "rank_high"]].values.tolist() == [[1, 1], [2, 3], [2, 3]]
    # the posterior path is the same computation under another name
    post = rank_sets_posterior(d)
    pd.testing.assert_frame_equal(post.table, rs.table)
    pd.testing.assert_frame_equal(post.pairs, rs.pairs)
    # bootstrap replicates centred at the full-sample estimates: the statistics move with the centre
    centre = np.array([0.01, 0.1, 0.9])
    rb = evalmix.rank_sets_draws(mat, estimate=centre, labels=list("ABC"))
    assert rb.table.set_index("model").loc["A", "estimate"] == 0.01
    t_c = np.abs((diff - (centre[a] - centre[b])) / se).max(axis=1)
    assert rb.pairs["critical_value"].iloc[0] == pytest.approx(
        np.sort(t_c)[int(np.ceil(0.95 * (len(t_c) - 1)))], rel=1e-12)


def test_draws_bad_inputs_name_the_argument():
    ok = np.random.default_rng(0).normal(size=(200, 3))
    with pytest.raises(evalmix.ArgumentError, match="method"):
        evalmix.rank_sets_draws(ok, method="bonferroni")
    with pytest.raises(DataError, match="too few"):
        evalmix.rank_sets_draws(ok[:50])
    with pytest.raises(DataError, match=r"estimate has 2 values for 3"):
        evalmix.rank_sets_draws(ok, estimate=[0.0, 1.0])
    bad = ok.copy()
    bad[17, 1] = np.nan
    with pytest.raises(DataError, match=r"row\) 17 of column 'b'"):
        evalmix.rank_sets_draws(bad, labels=list("abc"))
    with pytest.raises(DataError, match="shape"):
        evalmix.rank_sets_draws(np.zeros(300))
    with pytest.raises(DataError, match="3 columns for 2 labels"):
        evalmix.rank_sets_draws(ok, labels=["a", "b"])
    with pytest.raises(DataError, match="numeric"):
        evalmix.rank_sets_draws([["x", "y"]] * 200)
