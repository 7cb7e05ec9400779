"""Drift between two waves (evalmix.drift): parity with statsmodels' TOST, the judge/system split,
anchors, anytime-valid sequences, bad input; (slow step) error rates at the margin, power and the
recovery of a planted judge leniency."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import ArgumentError, DataError, DataWarning
from evalmix.simulate import canary_waves
from evalmix.studies.drift import drift

REF = json.loads((Path(__file__).parents[1] / "reference" / "drift_tost.json").read_text())
SCENARIOS = {s["name"]: s for s in REF["scenarios"]}


def _wave(scores: list[float], model: str = "m") -> pd.DataFrame:
    """One row per item holding its mean over runs (a score in [0, 1])."""
    return pd.DataFrame({"model": model, "item": [f"i{k}" for k in range(len(scores))], "correct": scores})


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_tost_equals_statsmodels_ttost_paired(name):
    s = SCENARIOS[name]
    row = drift(_wave(s["before"]), _wave(s["after"]), margin=s["margin"]).to_frame().iloc[0]
    assert row["estimate"] == pytest.approx(s["estimate"], abs=1e-12)
    assert row["se"] == pytest.approx(s["se"], rel=1e-10)
    assert row["conf_low"] == pytest.approx(s["conf_low"], rel=1e-10)
    assert row["conf_high"] == pytest.approx(s["conf_high"], rel=1e-10)
    assert row["p_tost"] == pytest.approx(s["p_tost"], rel=1e-8)
    assert row["p_value"] == pytest.approx(s["ttest_rel_p"], rel=1e-8)
    assert bool(row["equivalent"]) == (s["p_tost"] < 0.05)
    assert bool(row["changed"]) == (s["ttest_rel_p"] < 0.05)


def test_item_means_of_runs_are_the_unit():
    # three runs of one item count once: the t interval has n_items - 1 df, not n_rows - 1
    before, after, _ = canary_waves(1, 40, 3, change=0.05, rng=2)
    res = drift(before, after).to_frame().iloc[0]
    d = (after.groupby("item")["correct"].mean() - before.groupby("item")["correct"].mean()).to_numpy()
    assert res["n_items"] == 40
    assert res["estimate"] == pytest.approx(d.mean())
    assert res["se"] == pytest.approx(d.std(ddof=1) / math.sqrt(40))


def test_judge_split_adds_up_and_finds_the_lenient_judge():
    before, after, rejudged = canary_waves(2, 600, 2, change=0.0, leniency=0.15, rng=5)
    res = drift(before, after, margin=0.03, judge=rejudged)
    t = res.to_frame()
    assert np.allclose(t["judge_drift"] + t["system_change"], t["estimate"])
    # the planted judge drift is 0.15 * E(1 - p) = 0.075 (p uniform on 0.2-0.8); no system change
    assert ((t["judge_conf_low"] < 0.075) & (0.075 < t["judge_conf_high"])).all()
    assert t["changed"].all() and not t["system_changed"].any()
    assert "judge drift" in res.summary().title


def test_anchors_restrict_the_items_and_unknown_anchors_warn():
    before, after, _ = canary_waves(1, 30, 1, rng=1)
    anchors = [f"q{i:04d}" for i in range(1, 11)]
    assert drift(before, after, anchors=anchors).to_frame()["n_items"].item() == 10
    with pytest.warns(DataWarning, match="1 anchor item"):
        drift(before, after, anchors=[*anchors, "nope"])
    with pytest.raises(DataError, match="no anchor item"):
        drift(before, after, anchors=["nope"])


def test_anytime_sequence_is_wider_and_its_verdicts_match_its_interval():
    before, after, _ = canary_waves(2, 500, 3, change=0.0, rng=4)
    fixed = drift(before, after, margin=0.05).to_frame()
    seq = drift(before, after, margin=0.05, anytime=True).to_frame()
    assert (seq["conf_high"] - seq["conf_low"] > fixed["conf_high"] - fixed["conf_low"]).all()
    assert (seq["changed"] == ((seq["conf_low"] > 0) | (seq["conf_high"] < 0))).all()
    assert ((seq["p_value"] < 0.05) == seq["changed"]).all()
    assert ((seq["p_tost"] < 0.05) == seq["equivalent"]).all()


def test_models_missing_from_a_wave_are_named_and_bad_input_is_refused():
    before, after, _ = canary_waves(2, 20, 1, rng=1)
    with pytest.warns(DataWarning, match="model-2"):
        out = drift(before, after[after.model == "model-1"])
    assert out.to_frame()["model"].tolist() == ["model-1"]
    with pytest.raises(DataError, match="no model is scored in both"):
        drift(before, after.assign(model=after.model + "-new"))
    with pytest.raises(ArgumentError, match="margin"):
        drift(before, after, margin=0)
    with pytest.raises(DataError, match="after:"):
        drift(before, after.drop(columns="correct"))
    with pytest.raises(DataError, match=r"before: outcome column 'correct' must lie in \[0, 1\]"):
        drift(before.assign(correct=before.correct * 5), after.assign(correct=after.correct * 5), anytime=True)


def test_renders_as_tables():
    before, after, rejudged = canary_waves(1, 50, 1, rng=1)
    res = drift(before, after, judge=rejudged)
    assert "| model" in res.to_markdown()
    assert "\\begin{table}" in res.to_latex()
    assert res.to_dict()["margin"] == 0.02
    assert "TOST at margin +-0.02" in repr(res)
    assert evalmix.drift is drift


# ---------------------------------------------------------------------------------------------
# simulations (second step)


def _verdicts(n_sims: int, change: float, margin: float, n_items: int, **kw) -> pd.DataFrame:
    rows = []
    for r in range(n_sims):
        before, after, _ = canary_waves(1, n_items, 2, change=change, rng=1000 + r)
        rows.append(drift(before, after, margin=margin, **kw).to_frame().iloc[0])
    return pd.DataFrame(rows)


@pytest.mark.slow
def test_equivalence_at_the_margin_is_declared_at_most_alpha_of_the_time():
    # the planted change equals the margin: "equivalent" is a type-I error.  On 1000 items the SE of
    # a change is 0.015, so equivalence at margin 0.05 can be declared (its power at no change is
    # about 92%, below): the test at the boundary is not empty
    n = 200
    for anytime in (False, True):
        eq = _verdicts(n, 0.05, 0.05, 1000, anytime=anytime)["equivalent"].mean()
        mc = math.sqrt(0.05 * 0.95 / n)  # 0.015
        assert eq <= 0.05 + 2 * mc, (anytime, eq)


@pytest.mark.slow
def test_no_change_is_called_changed_at_most_alpha_and_power_is_stated():
    n = 200
    null = _verdicts(n, 0.0, 0.05, 300)
    assert null["changed"].mean() <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / n)
    # power.  An item's change over 2 runs has variance E p(1 - p) = 0.22, so the SE of the change is
    # 0.027 on 300 items and 0.015 on 1000: a change of 0.08 is found on 300 items about 85% of the
    # time, and no change is declared equivalent at margin 0.05 on 1000 items about 92% of the time
    assert _verdicts(100, 0.08, 0.05, 300)["changed"].mean() > 0.7
    assert _verdicts(100, 0.0, 0.05, 1000)["equivalent"].mean() > 0.8


@pytest.mark.slow
def test_repeated_looks_keep_the_anytime_error_rate():
    # periodic canary runs: 5 looks as 100 items arrive each time; an error is "changed" at any look.
    # The anytime sequence is intersected over every item, so "changed" at the last look is "changed"
    # at any earlier look (and at every item between them): one call covers the five looks
    n_sims, errors_fixed, errors_anytime = 100, 0, 0
    for r in range(n_sims):
        before, after, _ = canary_waves(1, 500, 2, change=0.0, rng=5000 + r)
        errors_anytime += bool(drift(before, after, anytime=True).to_frame()["changed"].item())
        errors_fixed += any(bool(drift(before, after, anchors=[f"q{i:04d}" for i in range(1, 100 * k + 1)])
                                 .to_frame()["changed"].item()) for k in range(1, 6))
    mc = math.sqrt(0.05 * 0.95 / n_sims)  # 0.022
    assert errors_anytime / n_sims <= 0.05 + 2 * mc
    assert errors_fixed / n_sims > errors_anytime / n_sims  # the fixed-n interval inflates with looks (to about 0.14)


@pytest.mark.slow
def test_planted_judge_leniency_is_recovered_with_nominal_coverage():
    n_sims, leniency = 200, 0.1
    cover, found = 0, 0
    for r in range(n_sims):
        before, after, rejudged = canary_waves(1, 300, 2, change=0.03, leniency=leniency, rng=9000 + r)
        row = drift(before, after, judge=rejudged).to_frame().iloc[0]
        cover += row["judge_conf_low"] < leniency * 0.5 < row["judge_conf_high"]
        found += row["judge_p_value"] < 0.05
    mc = math.sqrt(0.05 * 0.95 / n_sims)
    assert cover / n_sims >= 0.95 - 2 * mc
    assert found / n_sims > 0.95  # power for a judge drift of 0.05 on 300 items
