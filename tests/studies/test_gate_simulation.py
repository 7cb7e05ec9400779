"""Seeded simulations of the release gate's claims (docs/gate.md): the error at the margin boundary
with 25 looks, per metric and jointly, wrong FAILs counted with wrong PASSes; PASS within the budget
for an equal candidate; items used by a candidate better by the margin against a one-look test at
80% power; a clearly worse candidate FAILed.

Accuracy: items of difficulty p ~ Beta(2, 1), three runs per item and model, the candidate's item
probability p + delta; the paired item difference has variance 2 E[p(1 - p)] / 3 = 1/9.  The one-look
non-inferiority z test (one-sided alpha 0.05, power 0.8) at margin 0.02 needs
n_fix = (z_0.95 + z_0.8)^2 (1/9) / 0.02^2 = 1717 items; the budget is 2 n_fix = 3434 items, looked at
every 137 items (25 looks).  Monte-Carlo standard errors are sqrt(p (1 - p) / streams).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from evalmix.studies.gate import gate_streams

pytestmark = pytest.mark.slow

ALPHA, MARGIN, RUNS = 0.05, 0.02, 3
SIGMA2 = 2 * (2 / 3 - 1 / 2) / RUNS
N_FIX = (stats.norm.ppf(1 - ALPHA) + stats.norm.ppf(0.8)) ** 2 * SIGMA2 / MARGIN**2
BUDGET = int(2 * N_FIX)
LOOKS = BUDGET // 25
ACC = {"name": "accuracy", "column": "correct", "bounds": [0, 1], "margin": MARGIN}
RULE = {"alpha": ALPHA, "looks": LOOKS, "max_items": BUDGET, "metrics": [ACC]}


def mc_se(p: float, n: int) -> float:
    return math.sqrt(max(p * (1 - p), 1e-4) / n)


def accuracy_streams(rng, streams, n, delta):
    p = rng.beta(2, 1, size=(streams, n))
    base = rng.binomial(RUNS, p) / RUNS
    cand = rng.binomial(RUNS, np.clip(p + delta, 0, 1)) / RUNS
    return cand, base


def test_design():
    assert round(N_FIX) == 1717 and BUDGET == 3434 and len(range(LOOKS, BUDGET + 1, LOOKS)) == 25


def test_accuracy_at_the_boundary_errs_at_most_alpha():
    # candidate exactly at the margin: a PASS and a FAIL ("worse than the margin") are both wrong
    rng = np.random.default_rng(20261205)
    streams = 3000
    cand, base = accuracy_streams(rng, streams, BUDGET, -MARGIN)
    out = gate_streams(RULE, {"accuracy": cand}, {"accuracy": base})
    wrong_pass = (out["verdict"] == "PASS").mean()
    wrong_any = (out["verdict"] != "INCONCLUSIVE").mean()
    # observed: P(PASS) 0.015, P(PASS or FAIL) 0.029 (MC s.e. 0.003)
    assert wrong_pass <= ALPHA / 2 + 2 * mc_se(ALPHA / 2, streams)
    assert wrong_any <= ALPHA, (wrong_pass, wrong_any, mc_se(wrong_any, streams))


def test_equal_candidate_passes_within_the_budget():
    rng = np.random.default_rng(7)
    streams = 2000
    cand, base = accuracy_streams(rng, streams, BUDGET, 0.0)
    out = gate_streams(RULE, {"accuracy": cand}, {"accuracy": base})
    passed = (out["verdict"] == "PASS").mean()
    # observed 0.84 (MC s.e. 0.008); never FAIL
    assert passed - 2 * mc_se(passed, streams) >= 0.8 - 2 * mc_se(0.8, streams) and passed >= 0.8
    assert (out["verdict"] == "FAIL").mean() == 0


def test_better_candidate_uses_few_items():
    # truly better by the margin (delta = +0.02): items used against the one-look test's n_fix
    rng = np.random.default_rng(11)
    streams = 2000
    cand, base = accuracy_streams(rng, streams, BUDGET, MARGIN)
    out = gate_streams(RULE, {"accuracy": cand}, {"accuracy": base})
    ratio = out["stopped_at"].mean() / N_FIX
    se = out["stopped_at"].std(ddof=1) / math.sqrt(streams) / N_FIX
    # observed 0.47 (MC s.e. 0.004)
    assert ratio + 2 * se <= 0.7, (ratio, se)
    assert (out["verdict"] == "PASS").mean() >= 0.99


def test_clearly_worse_candidate_fails():
    rng = np.random.default_rng(13)
    streams = 1000
    cand, base = accuracy_streams(rng, streams, BUDGET, -0.1)
    out = gate_streams(RULE, {"accuracy": cand}, {"accuracy": base})
    assert (out["verdict"] == "FAIL").all()
    assert out["stopped_at"].mean() <= 0.3 * N_FIX  # observed 0.24 n_fix


def test_three_metrics_at_their_boundaries_per_metric_and_jointly():
    """Accuracy (betting), mean cost with a 10% relative margin (asymptotic CS, Fieller) and p95
    latency with a 0.5 s margin (quantile CS), every one exactly at its margin, 25 looks: each
    metric's wrong decisions (PASS or FAIL) at most its share alpha / 3, any wrong decision at most
    alpha."""
    rng = np.random.default_rng(5)
    streams, n = 1000, 1500
    rule = {"alpha": ALPHA, "looks": n // 25, "metrics": [
        ACC,
        {"name": "cost", "column": "cost", "direction": "lower", "margin": "10%"},
        {"name": "p95", "column": "latency", "statistic": "p95", "direction": "lower", "margin": 0.5}]}
    acc_c, acc_b = accuracy_streams(rng, streams, n, -MARGIN)
    size = rng.gamma(2, 1, size=(streams, n))  # an item's cost scale, shared by both models (paired)
    cost_b = size * rng.gamma(4, 0.25, size=(streams, n))
    cost_c = 1.1 * size * rng.gamma(4, 0.25, size=(streams, n))  # mean ratio exactly 1.1
    lat_b = rng.lognormal(0.0, 0.5, size=(streams, n, 1))
    lat_c = rng.lognormal(0.0, 0.5, size=(streams, n, 1)) + 0.5  # p95 exactly 0.5 s higher
    out = gate_streams(rule, {"accuracy": acc_c, "cost": cost_c, "p95": lat_c},
                       {"accuracy": acc_b, "cost": cost_b, "p95": lat_b})
    share = ALPHA / 3
    wrong = {}
    for name in ("accuracy", "cost", "p95"):
        wrong[name] = (out[f"pass_{name}"] | out[f"fail_{name}"]).mean()
        assert wrong[name] <= share + 2 * mc_se(share, streams), (name, wrong[name])
    joint = (out["verdict"] != "INCONCLUSIVE").mean()
    # observed: wrong decisions 0.003 (accuracy), 0.006 (cost), 0 (p95); any 0.005 (MC s.e. 0.002)
    assert joint <= ALPHA, (joint, wrong)
