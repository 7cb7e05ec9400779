"""Contamination by training data (evalmix.contamination_test): the GLMM model:exposed advantage
beyond item difficulty, its guard against harder late items and contaminated neighbours, bad
input; (slow step) error rates under the null, with a contaminated model beside clean ones, and
power."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import ArgumentError, DataError, DataWarning
from evalmix.simulate import contaminated_runs
from evalmix.studies.contamination import contamination_test


@pytest.fixture(scope="module")
def planted():
    # model-3 contaminated (log-odds +1.5 on its pre-cutoff items); later items harder by 0.8
    df = contaminated_runs(300, 2, contamination={2: 1.5}, rng=7)
    return df, contamination_test(df)


def test_finds_the_contaminated_model_and_not_the_confounded_gap(planted):
    df, res = planted
    t = res.to_frame().set_index("model")
    assert t.loc["model-3", "contaminated"]
    assert t.loc["model-3", "conf_low"] < 1.5 < t.loc["model-3", "conf_high"]
    # the clean models show a raw gap of about 0.1 (late items are harder) but no advantage
    clean = t.loc[["model-2", "model-4"]]
    assert (clean["naive_gap"] > 0.08).all()
    assert not clean["contaminated"].any()
    assert (clean["conf_low"] < 0).all() and (clean["conf_high"] > 0).all()
    # model-1 (cutoff 0) saw no item: the reference
    assert np.isnan(t.loc["model-1", "estimate"]) and t.loc["model-1", "n_exposed"] == 0


def test_one_sided_p_and_holm(planted):
    _, res = planted
    t = res.to_frame().dropna(subset=["estimate"])
    from scipy import stats
    assert np.allclose(t["p_value"], stats.norm.sf(t["estimate"] / t["se"]))
    assert np.allclose(t["p_adjusted"], evalmix.adjust_pvalues(t["p_value"].to_numpy(), "holm"))
    assert np.allclose(t["odds_ratio"], np.exp(t["estimate"]))
    assert "model:exposed" in res.formula and "(1 | item)" in res.formula


def test_estimates_equal_the_glmer_fit_they_read(planted):
    # the table is the interaction of the fit it reports (the model formula held in the result)
    _, res = planted
    fixef = res.fit.fixef
    t = res.to_frame().set_index("model")
    assert t.loc["model-3", "estimate"] == pytest.approx(fixef["exposed_1"])
    assert res.n_eras == 4


def test_one_shared_cutoff_is_refused_with_the_reason():
    df = contaminated_runs(60, 1, cutoffs=(0.5, 0.5), rng=1)
    with pytest.raises(DataError, match="cannot be told from the difficulty"):
        contamination_test(df)


def test_bad_control_columns_are_named():
    df = contaminated_runs(40, 2, cutoffs=(0.0, 0.5), rng=2)
    with pytest.raises(DataError, match="post_cutoff"):
        contamination_test(df.drop(columns="post_cutoff"))
    with pytest.raises(DataError, match="must be True/False"):
        contamination_test(df.assign(post_cutoff="maybe"))
    flipped = df.copy()
    flipped.loc[0, "post_cutoff"] = not flipped.loc[0, "post_cutoff"]
    with pytest.raises(DataError, match="differs between the runs of model 'model-1' on item 'q0001'"):
        contamination_test(flipped)
    with pytest.raises(DataError, match="no model has both"):
        contamination_test(df.assign(post_cutoff=True))
    with pytest.raises(ArgumentError, match="adjust"):
        contamination_test(df, adjust="tukey")


@pytest.mark.slow  # a second fit; the first step's fits are the fixture's and the CLI's
def test_words_for_the_control_flag_and_a_model_without_control_items():
    df = contaminated_runs(80, 1, cutoffs=(0.0, 0.5, 2.0), rng=3)
    words = df.assign(post_cutoff=df["post_cutoff"].map({True: "yes", False: "no"}))
    with pytest.warns(DataWarning, match="without control items, not tested.*model-3"):
        res = contamination_test(words)
    t = res.to_frame().set_index("model")
    assert np.isnan(t.loc["model-3", "estimate"]) and not np.isnan(t.loc["model-2", "estimate"])
    assert "| model" in res.to_markdown() and "\\begin{table}" in res.to_latex()
    assert evalmix.contamination_test is contamination_test


# ---------------------------------------------------------------------------------------------
# simulations (second step)


def _study(n_sims: int, contamination: dict, seed: int) -> pd.DataFrame:
    out = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for r in range(n_sims):
            df = contaminated_runs(200, 2, contamination=contamination, rng=seed + r)
            out.append(contamination_test(df).to_frame().assign(rep=r))
    return pd.concat(out, ignore_index=True)


@pytest.mark.slow
def test_error_rate_under_the_null_and_beside_a_contaminated_model():
    # 3 tested models x 60 studies: each flag is a false positive; the one-sided tests at 5%
    n = 60
    null = _study(n, {}, 20_000)
    tested = null.dropna(subset=["estimate"])
    mc = math.sqrt(0.05 * 0.95 / len(tested))  # 0.016 over 180 tests
    assert (tested["p_value"] < 0.05).mean() <= 0.05 + 2 * mc
    assert null.groupby("rep")["contaminated"].any().mean() <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / n)  # FWER
    assert abs(tested["estimate"].mean()) < 0.1  # the raw gap averages about 0.12 here
    assert tested["naive_gap"].mean() > 0.08
    # model-3 contaminated: the clean models beside it keep their error rate (their items'
    # difficulty is not spoiled) and model-3 is found (power)
    mixed = _study(n, {2: 1.0}, 30_000)
    clean = mixed[mixed["model"].isin(["model-2", "model-4"])]
    assert (clean["p_value"] < 0.05).mean() <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / len(clean))
    assert abs(clean["estimate"].mean()) < 0.1
    found = mixed.loc[mixed["model"] == "model-3", "contaminated"].mean()
    assert found > 0.8  # power at log-odds 1.0, 200 items x 2 runs, about 0.9
