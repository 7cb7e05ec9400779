"""Leaderboards at scale, degenerate statistics and the corrected analyses as defaults.

- the leaderboard functions give the numbers of the implementation they replaced (values below
  were computed by ``main``'s ``leaderboard.py`` and ``ranking.py`` before the rewrite, and are
  hard-coded here);
- the pair statistics computed one model row at a time equal those of the full pair matrix;
- degenerate inputs give exact answers or a named error, never a rounding residue;
- strict rank inversions and the items-random SE curve are the defaults, the paper's conventions
  one argument away;
- one ICC banding (Koo & Li 2016) in ``icc``, the CLI and the report.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.cli import main
from evalmix.core.errors import DataError, DataWarning
from evalmix.studies.leaderboard import rank_sets, tie_groups
from evalmix.studies.ranking import rank_instability, rank_uncertainty
from evalmix.studies.reliability import KOO_LI_BANDS, icc, icc_matrix, quality_band
from evalmix.reporting import PAPER_ICC_BANDS
from evalmix.studies.repetitions import se_vs_runs


@pytest.fixture(scope="module")
def small() -> pd.DataFrame:
    return evalmix.simulate.glmm_runs(6, 40, 3, model_effects=[-0.8, -0.2, 0.0, 0.1, 0.5, 1.2],
                                      slices={"language": ["EN", "ES"]}, rng=11)


# ----------------------------------------------------------------------------------------------
# the same numbers as the implementation on main (hard-coded from its output on `small`)

OLD_TABLE = [
    ["EN", "M6", 1, 1, 1, 1, 1, "a"], ["EN", "M5", 2, 2, 4, 2, 4, "b"], ["EN", "M3", 3, 2, 5, 2, 4, "bc"],
    ["EN", "M4", 4, 2, 6, 2, 6, "bcd"], ["EN", "M2", 5, 3, 6, 4, 6, "cd"], ["EN", "M1", 6, 4, 6, 4, 6, "d"],
    ["ES", "M6", 1, 1, 2, 1, 2, "a"], ["ES", "M5", 2, 1, 5, 1, 5, "ab"], ["ES", "M2", 3, 2, 5, 2, 5, "b"],
    ["ES", "M3", 3, 2, 5, 2, 5, "b"], ["ES", "M4", 5, 2, 6, 2, 6, "bc"], ["ES", "M1", 6, 5, 6, 5, 6, "c"]]
OLD_SE = [0.04756146316501556, 0.051588742317996844, 0.055256235660226964, 0.05010421290049169,
          0.05200143877417638, 0.052544058477229566, 0.042699426816000266, 0.04692234334479869,
          0.05226802074706442, 0.053902709920301176, 0.057356522612847405, 0.05233145838998608]
OLD_CONF_LOW = [0.6583333333333333, 0.4622916666666667, 0.4, 0.37062500000000004, 0.2789583333333334, 0.25,
                0.6456250000000001, 0.5083333333333333, 0.4122916666666667, 0.4083333333333333,
                0.3789583333333334, 0.24166666666666667]
OLD_CRIT = [2.804383175845475, 2.758235607864262]
OLD_P_ADJ = [0.9601328903654485, 0.0033222591362126247, 0.15946843853820597, 0.0033222591362126247,
             0.0033222591362126247, 0.07973421926910298, 0.6411960132890365, 0.0033222591362126247,
             0.0033222591362126247, 0.9568106312292359, 0.9102990033222591, 0.0033222591362126247,
             0.5415282392026578, 0.0033222591362126247, 0.0033222591362126247, 0.019933554817275746,
             0.036544850498338874, 0.21926910299003322, 0.0033222591362126247, 0.0033222591362126247, 1.0,
             0.9700996677740864, 0.5282392026578073, 0.0033222591362126247, 0.9800664451827242,
             0.38205980066445183, 0.0033222591362126247, 0.28903654485049834, 0.0033222591362126247,
             0.1893687707641196]
OLD_PAIR_SE = [0.04753833523831344, 0.04771097377392945, 0.05307216106112279, 0.059641565318476114,
               0.04711031453317144, 0.04719802864621245, 0.05300819317136226, 0.053487697862392665,
               0.0474664373854061, 0.047224618493423264, 0.05553403754589515, 0.05135507389263039,
               0.05798924369649527, 0.04792933807217314, 0.04763607803840188, 0.04917197283185199,
               0.05572514990976916, 0.059339937377514126, 0.05288185527069802, 0.05116664306282796,
               0.056024537136000585, 0.04436271110129156, 0.054382591382810395, 0.04830494175027884,
               0.05174120442981481, 0.04845867696266205, 0.04761410015042961, 0.06015002379316936,
               0.050173819939863654, 0.053135782399786474]
OLD_GROUPS = [["EN", "a", ("M6",)], ["EN", "b", ("M5", "M3", "M4")], ["EN", "c", ("M3", "M4", "M2")],
              ["EN", "d", ("M4", "M2", "M1")], ["ES", "a", ("M6", "M5")], ["ES", "b", ("M5", "M2", "M3", "M4")],
              ["ES", "c", ("M4", "M1")]]


def test_rank_sets_match_the_previous_implementation(small):
    rs = rank_sets(small, "language", n_boot=300, rng=5)
    t = rs.table
    cols = ["language", "model", "rank", "rank_low", "rank_high", "marginal_rank_low", "marginal_rank_high",
            "tie_group"]
    assert t[cols].values.tolist() == OLD_TABLE
    assert rs.groups[["language", "group", "models"]].values.tolist() == OLD_GROUPS
    # the model SEs and intervals are the same arithmetic: equal to the last bit
    assert t["se"].tolist() == OLD_SE and t["conf_low"].tolist() == OLD_CONF_LOW
    # pair SEs are sums over replicates taken in another order (numpy sums the columns of a
    # narrower matrix pairwise): equal to rounding
    np.testing.assert_allclose(rs.pairs["se"], OLD_PAIR_SE, rtol=1e-13, atol=0)
    np.testing.assert_allclose(rs.pairs.groupby("language")["critical_value"].first(), OLD_CRIT,
                               rtol=1e-13, atol=0)
    np.testing.assert_allclose(rs.pairs["p_adjusted"], OLD_P_ADJ, rtol=1e-13, atol=0)


def test_rank_instability_matches_the_previous_implementation(small):
    old = [["EN", "1", 2, True, 3], ["EN", "2", 2, True, 0], ["EN", "3", 3, True, 2],
           ["EN", "1+2", 0, False, 0], ["EN", "1+3", 2, True, 0], ["EN", "2+3", 0, False, 0],
           ["ES", "1", 3, True, 2], ["ES", "2", 0, False, 0], ["ES", "3", 3, True, 0],
           ["ES", "1+2", 2, True, 1], ["ES", "1+3", 2, True, 0], ["ES", "2+3", 2, True, 0]]
    tau = [0.6, 0.9660917830792959, 0.7333333333333333, 0.9999999999999999, 0.9309493362512627,
           0.9999999999999999, 0.6900655593423543, 0.9285714285714286, 0.9285714285714286,
           0.8280786712108251, 0.9660917830792959, 0.9660917830792959]
    # the previous implementation counted the paper's way; that is now ties="paper"
    paper = rank_instability(small, "language", runs_per_leaderboard=[1, 2], ties="paper")
    cols = ["language", "runs", "n_moved", "unstable", "n_discordant"]
    assert paper.table[cols].values.tolist() == old
    assert paper.table["kendall_tau"].tolist() == tau
    assert (paper.n_unstable, paper.n_leaderboards, paper.rate) == (5, 6, 0.8333333333333334)
    # strict (the default): unstable only where a pair is inverted
    strict = rank_instability(small, "language", runs_per_leaderboard=[1, 2])
    assert strict.table["unstable"].tolist() == [r[4] > 0 for r in old]
    assert (strict.n_unstable, strict.n_unstable_paper, strict.rate) == (3, 5, 0.5)
    assert strict.ranks.equals(paper.ranks)


def test_rank_uncertainty_matches_the_previous_implementation(small):
    ru = rank_uncertainty(small, "language", n_boot=300, rng=5).table
    assert ru[["rank_low", "rank_high"]].values.tolist() == [
        [5, 6], [4, 6], [2, 4], [3, 5], [2, 3], [1, 1], [6, 6], [2, 5], [2, 5], [3, 5], [2, 3], [1, 1]]
    assert ru["mean_rank"].tolist() == [
        5.81, 5.1033333333333335, 2.9633333333333334, 3.8233333333333333, 2.15, 1.0, 5.99,
        3.6466666666666665, 3.6766666666666667, 4.446666666666666, 2.05, 1.0033333333333334]
    assert ru["p_best"].tolist()[-2:] == [0.0033333333333333335, 0.9966666666666667]


# ----------------------------------------------------------------------------------------------
# the row-at-a-time pair statistics equal the full pair matrix


def _full_matrix(draws, centre):
    k = draws.shape[1]
    a, b = np.triu_indices(k, 1)
    diff = draws[:, a] - draws[:, b]
    se = diff.std(axis=0, ddof=1)
    live = se > 1e-12
    t = np.zeros_like(diff)
    t[:, live] = np.abs(diff[:, live] - (centre[a] - centre[b])[live]) / se[live]
    own = np.zeros((len(draws), k))
    for j in range(k):
        mask = (a == j) | (b == j)
        own[:, j] = t[:, mask].max(axis=1)
    return np.where(live, se, 0.0), t.max(axis=1), own


def test_pair_maxima_equal_the_full_pair_matrix():
    from evalmix import leaderboard

    rng = np.random.default_rng(3)
    draws = rng.normal(size=(400, 9))
    draws[:, 4] = draws[:, 2]          # a pair that never differs: no deviation
    draws[:, 7] = draws[:, 1] + 0.25   # a constant difference: zero SE
    centre = draws.mean(axis=0)
    se, t_max, own = leaderboard._pair_maxima(draws, centre)
    want_se, want_max, want_own = _full_matrix(draws, centre)
    np.testing.assert_allclose(se, want_se, rtol=1e-13, atol=0)
    np.testing.assert_allclose(t_max, want_max, rtol=1e-12)
    np.testing.assert_allclose(own, want_own, rtol=1e-12)
    assert se[leaderboard._pair_index(9)[0].tolist().index(1) + 5] == 0.0  # pair (1, 7)


def _leaderboard(k: int, n_items: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    ability = np.linspace(3, -3, k)
    p = 1 / (1 + np.exp(-(ability[:, None] + rng.normal(0, 1, n_items)[None, :])))
    return pd.DataFrame({"model": np.repeat([f"m{j:03d}" for j in range(k)], n_items),
                         "item": np.tile(np.arange(n_items), k), "run": 1,
                         "correct": (rng.random(p.shape) < p).astype(int).ravel()})


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_many_models_rank_sets_are_consistent():
    k = 300
    rs = rank_sets(_leaderboard(k, 400), n_boot=100, rng=1)
    t = rs.table
    assert len(rs.pairs) == k * (k - 1) // 2
    assert ((t["rank_low"] <= t["rank"]) & (t["rank"] <= t["rank_high"])).all()
    assert ((t["rank_low"] <= t["marginal_rank_low"]) & (t["marginal_rank_high"] <= t["rank_high"])).all()
    # every model is in a tie group, and a group's members are pairwise not separated
    assert set(m for g in rs.groups["models"] for m in g) == set(t["model"])
    sep = rs.pairs.set_index(["model_a", "model_b"])["separated"]
    for members in rs.groups["models"].head(20):
        for i, a in enumerate(members):
            for b in members[i + 1:]:
                assert not sep.get((a, b), sep.get((b, a)))


def test_too_many_tie_groups_are_left_out_with_a_warning():
    # 300 models on 30 items: the not-separated graph has ~10^5 maximal cliques
    with pytest.warns(DataWarning, match="more than 3000 tie groups"):
        rs = rank_sets(_leaderboard(300, 30), n_boot=100, rng=1)
    assert len(rs.groups) == 0 and (rs.table["tie_group"] == "").all()
    assert len(rs.pairs) == 300 * 299 // 2 and rs.to_dict()["groups"] == []
    with pytest.raises(DataError, match="more than max_groups=2 tie groups"):
        tie_groups(np.eye(4, dtype=bool) == 0, np.arange(4), max_groups=2)


def test_tie_groups_of_a_leaderboard_nobody_can_separate():
    # one clique of 1,100 models: deeper than Python's default recursion limit (1,000) if found
    # recursively (the search costs the square of the models)
    groups, letters = tie_groups(np.zeros((1100, 1100), bool), np.arange(1100))
    assert len(groups) == 1 and len(groups[0]) == 1100 and set(letters) == {"a"}


def _recursive_cliques(adj):
    """The previous implementation's clique search, verbatim: the order the letters follow."""
    nbrs = [{int(v) for v in np.flatnonzero(adj[i])} - {i} for i in range(len(adj))]
    out = []

    def expand(r, p, x):
        if not p and not x:
            out.append(frozenset(r))
            return
        pivot = max(p | x, key=lambda u: len(nbrs[u] & p))
        for v in list(p - nbrs[pivot]):
            expand(r | {v}, p & nbrs[v], x & nbrs[v])
            p = p - {v}
            x = x | {v}

    expand(set(), set(range(len(adj))), set())
    return out


def test_cliques_come_in_the_previous_order():
    # tie groups with the same best and worst member keep the order the cliques are found in, so the
    # search must find them in the previous order to give the same letters
    from evalmix import leaderboard

    rng = np.random.default_rng(7)
    for _ in range(150):
        k = int(rng.integers(2, 40))
        adj = rng.random((k, k)) < rng.random()
        adj = adj | adj.T
        assert leaderboard._maximal_cliques(adj) == _recursive_cliques(adj)


# ----------------------------------------------------------------------------------------------
# degenerate inputs: exact, or refused with a named error


def test_rank_sets_refuse_a_single_item():
    df = pd.DataFrame({"model": ["a", "b", "a", "b"], "item": [1, 1, 1, 1], "run": [1, 1, 2, 2],
                       "correct": [1, 0, 1, 1]})
    with pytest.raises(DataError, match="'item' has 1 item; the item bootstrap needs at least two"):
        rank_sets(df, n_boot=50, rng=1)
    with pytest.raises(DataError, match="'item' has 1 item"):
        rank_uncertainty(df, n_boot=50, rng=1)
    lang = df.assign(language=["EN"] * 4)
    with pytest.raises(DataError, match="language='EN': column 'item' has 1 item"):
        rank_sets(lang, "language", n_boot=50, rng=1)


def test_rank_sets_refuse_one_model():
    df = pd.DataFrame({"model": ["a"] * 4, "item": [1, 2, 1, 2], "run": [1, 1, 2, 2], "correct": [1, 0, 1, 1]})
    with pytest.raises(DataError, match="at least two models"):
        rank_sets(df, n_boot=50, rng=1)


def test_equal_accuracies_are_one_tie_group():
    rng = np.random.default_rng(2)
    answers = rng.integers(0, 2, 40)
    df = pd.DataFrame({"model": np.repeat(list("abcd"), 40), "item": np.tile(np.arange(40), 4), "run": 1,
                       "correct": np.tile(answers, 4)})
    rs = rank_sets(df, n_boot=100, rng=1)
    t = rs.table
    assert t["rank"].tolist() == [1, 1, 1, 1]
    assert t["rank_low"].tolist() == [1] * 4 and t["rank_high"].tolist() == [4] * 4
    assert rs.groups["models"].tolist() == [("a", "b", "c", "d")]
    # identical answers: every difference is exactly 0 in every replicate
    assert (rs.pairs["se"] == 0).all() and (rs.pairs["statistic"] == 0).all()
    assert (rs.pairs["p_adjusted"] == 1).all() and not rs.pairs["separated"].any()
    ri = rank_instability(df.assign(run=1))
    assert (ri.n_unstable, ri.n_unstable_paper) == (0, 0)


def test_a_constant_accuracy_has_an_exact_zero_se():
    # model a answers 2 of 3 runs right on every item: (w * 2) / (w * 3) rounds differently for
    # different weights w, but its bootstrap SE is exactly 0, not 1e-17
    n = 30
    rng = np.random.default_rng(5)
    rows = []
    for i in range(n):
        for r in range(3):
            rows.append({"model": "a", "item": i, "run": r, "correct": int(r < 2)})
            rows.append({"model": "b", "item": i, "run": r, "correct": int(rng.random() < 0.5)})
    df = pd.DataFrame(rows)
    t = rank_sets(df, n_boot=200, rng=1).table.set_index("model")
    assert t.loc["a", "se"] == 0.0 and t.loc["b", "se"] > 0.01
    assert t.loc["a", "estimate"] == pytest.approx(2 / 3, abs=1e-15)


@pytest.mark.parametrize("model, type_, unit", [("oneway", "consistency", "single"),
                                                ("oneway", "consistency", "average"),
                                                ("twoway", "consistency", "single"),
                                                ("twoway", "consistency", "average"),
                                                ("twoway", "agreement", "single"),
                                                ("twoway", "agreement", "average")])
@pytest.mark.parametrize("rows", [[1.0, 0.0, 1.0, 1.0, 0.0], [0.1, 0.7, 0.3]])
def test_icc_at_perfect_agreement_is_exact(model, type_, unit, rows):
    mat = np.repeat(np.array(rows)[:, None], 3, axis=1)  # every run gives every item the same outcome
    r = icc_matrix(mat, model=model, type=type_, unit=unit)
    assert r["icc"] == 1.0 and r["statistic"] == np.inf and r["p_value"] == 0.0
    assert (r["conf_low"], r["conf_high"]) == (1.0, 1.0)
    assert r["ms_error"] == 0.0 and r["ms_within"] == 0.0 and r["ms_cols"] == 0.0


def test_icc_one_flip_is_finite():
    mat = np.repeat(np.array([1.0, 0.0, 1.0, 1.0, 0.0, 0.0])[:, None], 3, axis=1)
    mat[0, 2] = 0.0
    r = icc_matrix(mat)
    # by hand: MSr = 34/45, MSe = 1/18, so ICC(C,1) = (MSr - MSe) / (MSr + 2 MSe) = 63/78 = 21/26
    assert r["ms_rows"] == pytest.approx(34 / 45, rel=1e-12) and r["ms_error"] == pytest.approx(1 / 18, rel=1e-12)
    assert r["icc"] == pytest.approx(21 / 26, rel=1e-12)
    assert np.isfinite(r["statistic"]) and 0 < r["p_value"] < 1e-3 and r["conf_high"] < 1


def test_icc_without_any_variation_is_undefined():
    df = pd.DataFrame({"item": np.repeat([1, 2, 3], 2), "run": [1, 2] * 3, "correct": 1})
    with pytest.warns(DataWarning, match="ICC is undefined"):
        t = icc(df).table
    assert np.isnan(t["icc"].iloc[0]) and np.isnan(t["p_value"].iloc[0]) and t["quality"].iloc[0] is None


# ----------------------------------------------------------------------------------------------
# the corrected analyses are the defaults


def test_se_vs_runs_returns_the_items_random_projection_by_default(small):
    r = se_vs_runs(small, ["model", "language"], max_runs=4)
    assert r.curves == "corrected" and r.to_frame().equals(r.projection)
    assert "items random" in str(r) and 'curves="paper"' in str(r)
    # the projection: sqrt(var_between / N + var_within / (N R)) of each slice
    c = r.components.iloc[0]
    row = r.projection[(r.projection["model"] == c["model"]) & (r.projection["language"] == c["language"])
                       & (r.projection["n_runs"] == 2)].iloc[0]
    want = np.sqrt(c["var_between"] / c["n_items"] + c["var_within"] / (c["n_items"] * 2))
    assert row["se"] == pytest.approx(want, rel=1e-12)
    paper = se_vs_runs(small, ["model", "language"], max_runs=4, curves="paper")
    assert paper.to_frame().equals(paper.paper) and paper.paper.equals(r.paper)
    with pytest.raises(ValueError, match="curves must be"):
        se_vs_runs(small, "model", curves="printed")  # type: ignore[arg-type]


def test_cli_defaults_are_the_corrected_analyses(tmp_path, small, capsys):
    path = tmp_path / "runs.csv"
    small.to_csv(path, index=False)
    assert main(["ranks", str(path), "--slice-by", "language", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["ties"], doc["n_unstable"], doc["n_unstable_paper"]) == ("strict", 3, 5)
    assert main(["ranks", str(path), "--slice-by", "language", "--ties", "paper", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["ties"], doc["n_unstable"]) == ("paper", 5)
    assert main(["se-runs", str(path), "--by", "model,language", "--max-runs", "3", "--json"]) == 0
    assert {"se", "se_runs"} <= set(json.loads(capsys.readouterr().out)["table"][0])
    assert main(["se-runs", str(path), "--by", "model,language", "--curves", "paper", "--json"]) == 0
    assert {"curve", "kind"} <= set(json.loads(capsys.readouterr().out)["table"][0])


@pytest.mark.shared
def test_ai4math_strict_and_paper_counts(ai4math_dir, capsys):
    path = str(ai4math_dir / "ai4math_runs.csv")
    assert main(["ranks", path, "--slice-by", "language,prompt", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert (doc["n_unstable"], doc["n_leaderboards"], doc["n_unstable_paper"]) == (5, 12, 10)
    assert main(["ranks", path, "--slice-by", "language,prompt", "--ties", "paper"]) == 0
    out = capsys.readouterr().out
    assert "10 of 12 leaderboards have a model at another position" in out and "n_unstable: 10" in out


# ----------------------------------------------------------------------------------------------
# one ICC banding


def test_koo_li_bands():
    # Koo & Li (2016): poor < 0.5 <= moderate < 0.75 <= good < 0.9 <= excellent (closed on the
    # right, as R's cut); the paper's 0.60 calls 0.55 poor
    assert KOO_LI_BANDS == (0.5, 0.75, 0.9)
    assert quality_band([0.3, 0.55, 0.8, 0.95]) == ["poor", "moderate", "good", "excellent"]
    assert quality_band(0.55, PAPER_ICC_BANDS) == "poor"


def test_one_banding_in_icc_cli_and_report(tmp_path, capsys):
    df = evalmix.simulate.glmm_runs(3, 30, 3, slices={"language": ["EN", "ES"]}, sd_item_run=0.9, rng=1)
    ic = icc(df, ["model", "language"]).to_frame()
    assert ic["quality"].tolist() == quality_band(ic["icc"].to_numpy(), KOO_LI_BANDS)
    path = tmp_path / "runs.csv"
    df.to_csv(path, index=False)
    assert main(["reliability", str(path), "--by", "model,language", "--json"]) == 0
    cli = pd.DataFrame(json.loads(capsys.readouterr().out)["table"])
    merged = ic.merge(cli, on=["model", "language"], suffixes=("", "_cli"))
    assert len(merged) == 6 and (merged["quality"] == merged["quality_cli"]).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = evalmix.report(df, n_boot=50)
    tab = rep.tables["icc"]
    merged = ic.merge(tab, on=["model", "language"], suffixes=("", "_report"))
    assert len(merged) == 6 and (merged["quality"] == merged["quality_report"]).all()
    assert (tab["quality_paper"] == quality_band(tab["icc"].to_numpy(), PAPER_ICC_BANDS)).all()
    corr = rep.tables["corrections"].set_index("quantity")
    assert corr.loc["ICC quality bands", "corrected_method"].startswith("Koo & Li (2016): 0.50 / 0.75 / 0.90")
