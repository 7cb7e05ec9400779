"""Calibration harness: a seeded, smaller reproduction of the mixture document's calibration
table, the instance-versus-run coverage finding of the inferential-statistics document, and the
registries."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from evalmix import calibrate, coverage_study
from evalmix.studies.calibration import METHODS, SCENARIOS, MethodOutput, SimPair, register_method
from evalmix.simulate.mixture import mixture_predictions

N_SIMS = 100


def _band(p: float, n: int = N_SIMS, k: float = 3.0) -> tuple[float, float]:
    """p +/- k Monte-Carlo standard errors."""
    se = np.sqrt(p * (1 - p) / n)
    return p - k * se, p + k * se


# Full benchmark size of the document (4,000 questions, 8 runs, +1pp), 100 instead of 500 sims.
SEED001 = dict(n_sims=N_SIMS, rng=20260504)


@pytest.fixture(scope="module")
def seed001():
    # the paired bootstrap (1,000 resamples a study) is checked in the second step (paired001)
    return calibrate("mixture", ["mcnemar_single_run", "paired_t_runs", "question_bootstrap", "run_bootstrap",
                                 "run_bootstrap_sqrt_b"], **SEED001).table.set_index("method")


@pytest.fixture(scope="module")
def paired001():
    # the same simulated studies as seed001 (each study's data has its own stream)
    return calibrate("mixture", ["paired_t_runs", "paired_bootstrap"], **SEED001,
                     method_options={"paired_bootstrap": {"n_boot": 1000}}).table.set_index("method")


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_paired_t_is_honest_and_powerful(paired001):
    # Document: paired t 5.8% false positives, 99.4% power (analytic 97.3%).
    row = paired001.loc["paired_t_runs"]
    assert row["false_positive_rate"] <= _band(0.05)[1]
    assert row["power"] >= _band(0.973)[0]
    assert row["median_ci_halfwidth"] == pytest.approx(0.0050, abs=0.0004)  # document: +/-0.50pp
    assert paired001.loc["paired_bootstrap", "power"] >= _band(0.973)[0]


def test_single_run_mcnemar_power(seed001):
    # Document: 35.8% empirical (2,000 sims: 37.8%), 38.9% analytic.
    lo, hi = _band(0.389)
    assert lo <= seed001.loc["mcnemar_single_run", "power"] <= hi
    assert seed001.loc["mcnemar_single_run", "false_positive_rate"] <= _band(0.05)[1]


def test_sqrt_b_run_bootstrap_fabricates_significance(seed001):
    # Document: 42.0% false positives, 100% power, +/-0.19pp intervals.
    row = seed001.loc["run_bootstrap_sqrt_b"]
    lo, hi = _band(0.42)
    assert lo <= row["false_positive_rate"] <= hi
    assert row["power"] >= 0.97
    assert row["coverage_null"] < 0.8


def test_unpaired_question_bootstrap_has_no_power(seed001):
    # Document: 0.4% power, 0.0% false positives, +/-1.89pp.
    row = seed001.loc["question_bootstrap"]
    assert row["power"] <= 0.05
    assert row["false_positive_rate"] <= 0.03
    assert row["median_ci_halfwidth"] > 0.015
    assert not row["honest"] and seed001.loc["paired_t_runs", "honest"]


def test_run_bootstrap_is_conservative(seed001):
    # Document: 42.8% power and 0.0% false positives.
    row = seed001.loc["run_bootstrap"]
    assert row["false_positive_rate"] <= 0.03
    assert _band(0.43)[0] <= row["power"] <= _band(0.43)[1]


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_results_do_not_depend_on_n_jobs():
    kw = dict(n_sims=6, rng=7, n_questions=300, n_runs=3, uplift=0.03,
              methods=["paired_t_runs", "run_bootstrap"])
    one = calibrate("mixture", n_jobs=1, **kw).sims
    two = calibrate("mixture", n_jobs=2, **kw).sims
    pd.testing.assert_frame_equal(one.sort_values(["sim", "method", "hypothesis"]).reset_index(drop=True),
                                  two.sort_values(["sim", "method", "hypothesis"]).reset_index(drop=True))


def test_seed_accepts_a_generator():
    kw = dict(methods=["paired_t_runs"], n_sims=3, n_questions=200, n_runs=2)
    a = calibrate("mixture", rng=np.random.default_rng(5), **kw).sims
    b = calibrate("mixture", rng=np.random.default_rng(5), **kw).sims
    pd.testing.assert_frame_equal(a, b)


def test_custom_method_and_errors():
    @register_method("always_reject", honest=False, description="rejects everything")
    def _always(pair, rng, conf_level):
        return MethodOutput(1.0, 0.0, 0.0, 1.0, 1.0)

    try:
        res = calibrate("mixture", ["always_reject"], n_sims=3, rng=1, n_questions=200, n_runs=2,
                        uplift=0.02)
        row = res.table.iloc[0]
        assert row["false_positive_rate"] == 1.0 and row["power"] == 1.0
        assert row["coverage_null"] == 0.0
        assert "false_positive_rate" in res.to_markdown()
    finally:
        METHODS.pop("always_reject")
    @register_method("flaky", description="fails on the null")
    def _flaky(pair, rng, conf_level):
        if pair.true_diff == 0:
            raise RuntimeError("no fit")
        return MethodOutput(0.1, 0.01, 0.0, 0.08, 0.12)

    try:
        with pytest.raises(RuntimeError, match="no fit"):
            calibrate("mixture", ["flaky"], n_sims=2, rng=1, n_questions=200, n_runs=2)
        res = calibrate("mixture", ["flaky"], n_sims=3, rng=1, n_questions=200, n_runs=2,
                        on_error="record")
        row = res.table.iloc[0]
        assert row["n_failed"] == 3 and np.isnan(row["false_positive_rate"]) and row["power"] == 1.0
        assert res.sims["error"].str.contains("no fit").sum() == 3
    finally:
        METHODS.pop("flaky")
    with pytest.raises(ValueError, match="unknown method"):
        calibrate("mixture", ["nope"], n_sims=1)
    with pytest.raises(ValueError, match="scenario must be one of"):
        calibrate("nope", n_sims=1)


# 40 simulated studies of 300 items x 3 runs: the second test step.  The default step runs the glmm
# scenario's simulation in test_glmm_contrast_registers_when_glmer_is_available (6 studies) and
# both methods on the mixture scenario (seed001)
@pytest.mark.slow
def test_glmm_scenario():
    res = calibrate("glmm", ["paired_t_runs", "mcnemar_single_run"], n_sims=40, rng=3,
                    n_items=300, n_runs=3, effect=0.4)
    tab = res.table.set_index("method")
    assert res.design["true_diff"] > 0.03  # a 0.4 logit shift near p = 0.5 moves accuracy ~6pp
    assert tab.loc["paired_t_runs", "power"] > tab.loc["mcnemar_single_run", "power"]
    assert tab.loc["paired_t_runs", "false_positive_rate"] <= _band(0.05, 40)[1]
    assert tab.loc["paired_t_runs", "coverage_alt"] >= _band(0.95, 40)[0]


def test_registries_hold_the_builtins():
    assert {"mixture", "glmm"} <= set(SCENARIOS)
    assert {"mcnemar_single_run", "paired_t_runs", "paired_bootstrap", "independent_runs",
            "question_bootstrap", "run_bootstrap", "run_bootstrap_sqrt_b"} <= set(METHODS)
    pair = SimPair(np.zeros((2, 3)), np.ones((2, 3)), 1.0)
    assert pair.long_table().shape == (12, 4)


# ----------------------------------------------------------------------------- coverage (seed 000)

@pytest.fixture(scope="module")
def coverage():
    preds, gold = mixture_predictions(800, 12, rng=2025)
    return coverage_study(preds, gold, metric="f1", runs=[1, 2, 3, 8, 12], n_plausible=5000,
                          n_boot=2000, rng=1)


def test_instance_bootstrap_covers_plausible_runs(coverage):
    # Document: full coverage with as few as three runs.
    wide = coverage.wide()
    assert (wide.loc[[3, 8, 12], "instance"] >= 0.99).all()
    assert wide.loc[1, "instance"] > 0.5


def test_run_level_intervals_undercover_and_shrink(coverage):
    # Document: 36-63% coverage at eight runs, falling as runs are added.
    wide = coverage.wide()
    for m in ("t", "percentile", "bca", "t_boot"):
        assert wide.loc[8, m] < 0.9
        assert wide.loc[12, m] <= wide.loc[3, m] + 0.05
    width = coverage.wide("width")
    assert width.loc[12, "t"] < width.loc[3, "t"]
    assert width.loc[12, "instance"] == pytest.approx(width.loc[3, "instance"], rel=0.15)


def _standin_glmer(formula, data):
    """A fit with the GLMM result contract (fixef, vcov) from a plain logistic regression."""
    import statsmodels.api as sm

    from types import SimpleNamespace
    x = pd.DataFrame({"Intercept": 1.0, "model[T.b]": (data["model"] == "b").astype(float)})
    fit = sm.Logit(data["correct"].astype(float), x).fit(disp=0)
    return SimpleNamespace(fixef=fit.params, vcov=fit.cov_params())


def test_glmm_contrast_registers_when_glmer_is_available(monkeypatch):
    from evalmix import calibration
    monkeypatch.setattr(calibration, "_glmer_function", lambda: _standin_glmer)
    try:
        res = calibrate("glmm", ["glmm_contrast"], n_sims=6, rng=2, n_items=150, n_runs=2, effect=0.8)
        row = res.table.iloc[0]
        assert METHODS["glmm_contrast"].scale == "logit"
        assert row["power"] > 0.5 and np.isfinite(row["coverage_alt"])
        assert (res.sims["truth"][res.sims["hypothesis"] == "alt"] == 0.8).all()
    finally:
        METHODS.pop("glmm_contrast", None)


@pytest.mark.slow  # 30 simulated studies, each a glmer fit
def test_glmm_contrast_with_glmer_on_the_glmm_scenario():
    res = calibrate("glmm", ["glmm_contrast", "paired_t_runs"], n_sims=30, rng=11, n_items=120,
                    n_runs=2, effect=0.5)
    tab = res.table.set_index("method")
    row = tab.loc["glmm_contrast"]
    assert row["scale"] == "logit"
    assert row["false_positive_rate"] <= _band(0.05, 30)[1]
    assert row["coverage_alt"] >= _band(0.95, 30)[0]  # covers the true logit effect 0.5
    assert row["power"] >= tab.loc["paired_t_runs", "power"] - 0.15
