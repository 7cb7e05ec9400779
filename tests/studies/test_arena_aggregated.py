"""Bradley-Terry from aggregated battles: BradleyTerry2's wins-per-pair format (``counts=``) and
battle rows with a count (``weights=``), against BTm (tests/reference/bt_aggregated_reference.R)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalmix.studies.arena import bradley_terry
from evalmix.cli import main
from evalmix.core.errors import DataError, SeparationError

REF = json.loads((Path(__file__).parents[1] / "reference" / "bt_aggregated_reference.json").read_text())
BTM = dict(ties="drop", ci="hessian", scale="logit", anchor=0.0, rank_sets=False)


def _check(fit, ref):
    table = fit.table.set_index("model").loc[ref["model"]]
    np.testing.assert_allclose(table["estimate"], ref["ability"], atol=1e-8)
    # glm's IRLS stops on the deviance (epsilon 1e-8): its SEs carry about 1e-6 of that
    np.testing.assert_allclose(table["se"], ref["se"], rtol=1e-5, atol=1e-10)
    assert fit.loglik == pytest.approx(ref["loglik"], abs=1e-8)  # binomial coefficients included, as BTm


def test_citations_counts_give_btm():
    ref = REF["citations"]
    data = pd.DataFrame(ref["data"])
    fit = bradley_terry(data, model_a="player1", model_b="player2", counts=["win1", "win2"], position=False,
                        reference="Biometrika", **BTM)
    _check(fit, ref)
    assert fit.n_battles == int(data[["win1", "win2"]].to_numpy().sum())


@pytest.mark.parametrize("home", [False, True])
def test_baseball_counts_give_btm_with_and_without_home_advantage(home):
    ref = REF["baseball_home" if home else "baseball"]
    data = pd.DataFrame(REF["baseball"]["data"])
    fit = bradley_terry(data, model_a="home", model_b="away", counts=("home_wins", "away_wins"), position=home,
                        reference="Baltimore", **BTM)
    _check(fit, ref)
    if home:
        row = fit.params.set_index("term").loc["first_position"]
        assert row["estimate"] == pytest.approx(ref["at_home"], abs=1e-8)
        assert row["se"] == pytest.approx(ref["at_home_se"], rel=1e-6)


def _battles(data):
    """The baseball counts as one row per game."""
    rows = []
    for r in data.itertuples():
        rows += [(r.home, r.away, "model_a")] * r.home_wins + [(r.home, r.away, "model_b")] * r.away_wins
    return pd.DataFrame(rows, columns=["model_a", "model_b", "winner"])


def test_counts_and_weights_equal_the_battles_listed_one_per_row():
    data = pd.DataFrame(REF["baseball"]["data"])
    battles = _battles(data)
    listed = bradley_terry(battles, ties="drop", rank_sets=False)   # sandwich, Elo scale
    counted = bradley_terry(data, model_a="home", model_b="away", counts=["home_wins", "away_wins"], ties="drop",
                            rank_sets=False)
    weighted_rows = battles.value_counts().rename("n").reset_index()
    weighted = bradley_terry(weighted_rows, weights="n", ties="drop", rank_sets=False)
    for fit in (counted, weighted):
        pd.testing.assert_frame_equal(fit.table, listed.table, rtol=1e-10)
        assert fit.n_battles == listed.n_battles == len(battles)


def test_a_ties_column_feeds_davidson():
    rng = np.random.default_rng(5)
    models = np.array(["a", "b", "c", "d"])
    pairs = [(i, j) for i in range(4) for j in range(4) if i != j]
    data = pd.DataFrame({"p1": [models[i] for i, _ in pairs], "p2": [models[j] for _, j in pairs],
                         "w1": rng.integers(5, 30, len(pairs)), "w2": rng.integers(5, 30, len(pairs)),
                         "tie": rng.integers(1, 10, len(pairs))})
    rows = []
    for r in data.itertuples():
        rows += ([(r.p1, r.p2, "model_a")] * r.w1 + [(r.p1, r.p2, "model_b")] * r.w2
                 + [(r.p1, r.p2, "tie")] * r.tie)
    listed = bradley_terry(pd.DataFrame(rows, columns=["model_a", "model_b", "winner"]), rank_sets=False)
    counted = bradley_terry(data, model_a="p1", model_b="p2", counts=["w1", "w2", "tie"], rank_sets=False)
    pd.testing.assert_frame_equal(counted.table, listed.table, rtol=1e-10)
    pd.testing.assert_frame_equal(counted.params, listed.params, rtol=1e-10)


@pytest.mark.parametrize("edit, match", [
    (lambda d: d.assign(home_wins=d.home_wins.astype(float).where(d.index != 3, 2.5)), r"'home_wins'.*2\.5.*row 3"),
    (lambda d: d.assign(away_wins=d.away_wins.where(d.index != 5, -1)), r"'away_wins'.*-1.*row 5"),
    (lambda d: d.drop(columns="away_wins"), r"no column 'away_wins'"),
])
def test_bad_counts_are_named(edit, match):
    data = pd.DataFrame(REF["baseball"]["data"])
    with pytest.raises(DataError, match=match):
        bradley_terry(edit(data), model_a="home", model_b="away", counts=["home_wins", "away_wins"], ties="drop")


def test_counts_without_ties_under_davidson_say_so():
    data = pd.DataFrame(REF["baseball"]["data"])
    with pytest.raises(DataError, match="the counts have no ties"):
        bradley_terry(data, model_a="home", model_b="away", counts=["home_wins", "away_wins"])


def test_a_model_that_never_loses_or_never_wins_is_named_in_counts():
    data = pd.DataFrame({"p1": ["x", "y", "y", "z"], "p2": ["y", "z", "w", "w"], "w1": [5, 3, 4, 2],
                         "w2": [0, 2, 0, 0]})
    with pytest.raises(SeparationError, match=r"\['x'\] never lose.*\['w'\] never win"):
        bradley_terry(data, model_a="p1", model_b="p2", counts=["w1", "w2"], ties="drop", position=False)


def test_cli_reads_counts(tmp_path, capsys):
    path = tmp_path / "baseball.csv"
    pd.DataFrame(REF["baseball"]["data"]).to_csv(path, index=False)
    code = main(["arena", str(path), "--model-a", "home", "--model-b", "away", "--counts", "home_wins,away_wins",
                 "--ties", "drop", "--no-position", "--ci", "hessian", "--scale", "logit", "--reference", "Baltimore",
                 "--no-rank-sets", "--json"])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    got = {r["model"]: (r["estimate"], r["se"]) for r in doc["table"]}
    for m, a, s in zip(REF["baseball"]["model"], REF["baseball"]["ability"], REF["baseball"]["se"]):
        assert got[m][0] == pytest.approx(a, abs=1e-8)
        assert got[m][1] == pytest.approx(s, rel=1e-6, abs=1e-12)
    assert main(["arena", str(path), "--model-a", "home", "--model-b", "away", "--counts", "home_wins"]) == 2
    assert "--counts takes 2 or 3" in capsys.readouterr().err
