"""evalmix's PPI against truescore on truescore's own example data (tests/fixtures/truescore/).

truescore's README prints, from its examples 01 and 02 (written by truescore 0.5.0):

    corrected:  0.7150 [0.6836, 0.7463] (ppi++)
    judge-only: 0.8383 [0.8265, 0.8493] (judge_only (wilson))
    gold-only:  0.7183 [0.6810, 0.7528] (gold_only (wilson))
    v4 minus v3, corrected: +0.0950 [+0.0505, +0.1394]

truescore 0.7.4 tunes lambda as ppi-python does (the judge variance over every judged example, an
n-divided covariance), which evalmix also does, and prints 0.7151 [0.6837, 0.7464] and
+0.0942 [+0.0498, +0.1387].  Both releases' numbers are in tests/reference/truescore_reference.json
(tests/reference/truescore_reference.py).  One convention differs: truescore's variance terms divide
by n - 1, evalmix's (and ppi-python's) by n, so evalmix's interval is narrower by a factor between
sqrt((n - 1) / n) and sqrt((N - 1) / N) (n = 600 labelled, N = 3,400 unlabelled examples).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix

HERE = Path(__file__).parents[1]
DATA = HERE / "fixtures" / "truescore"
REF = json.loads((HERE / "reference" / "truescore_reference.json").read_text())
N_LAB, N_UNL = 600, 3400


@pytest.fixture(scope="module")
def audit() -> pd.DataFrame:
    return pd.read_csv(DATA / "support_eval.csv")


@pytest.fixture(scope="module")
def compare() -> pd.DataFrame:
    wide = pd.read_csv(DATA / "support_compare.csv")
    return pd.concat([pd.DataFrame({"example_id": wide["example_id"], "model": m,
                                    "judge": wide[f"{m}_judge_passed"], "human": wide[f"{m}_human_passed"]})
                      for m in ("v4", "v3")], ignore_index=True)


def _mean(audit: pd.DataFrame, **kw: object) -> pd.Series:
    res = evalmix.ppi_mean(audit, by=None, judge="judge_passed", human="human_passed", item="example_id", **kw)
    return res.to_frame().iloc[0]


def _difference(compare: pd.DataFrame, **kw: object) -> pd.Series:
    res = evalmix.ppi_difference(compare, a="v4", b="v3", judge="judge", human="human", item="example_id", **kw)
    return res.to_frame().iloc[0]


def _printed(values: list[float], printed: list[float], divisor: bool = True) -> None:
    """Values agree with a line printed to 4 decimals: 5e-5 of rounding, plus (for interval limits
    of PPI) the n versus n - 1 divisor, which moves a limit by at most (1 - sqrt(599/600)) times the
    half-width here (< 4e-5)."""
    tol = 5e-5 + (4e-5 if divisor else 0.0) + 1e-12
    for value, target in zip(values, printed, strict=True):
        assert abs(value - target) <= tol, (value, target)


def _check_against_truescore(row: pd.Series, ref: dict) -> None:
    # the same estimator and the same tuned lambda: equal to rounding
    assert row["lambda"] == pytest.approx(ref["lambda"], rel=1e-12)
    assert row["estimate"] == pytest.approx(ref["estimate"], rel=1e-12)
    # the n versus n - 1 divisor of the two variance terms (see the module docstring)
    ratio = (row["conf_high"] - row["conf_low"]) / (ref["conf_high"] - ref["conf_low"])
    assert np.sqrt((N_LAB - 1) / N_LAB) - 1e-12 <= ratio <= np.sqrt((N_UNL - 1) / N_UNL) + 1e-12


def test_ppi_mean_equals_truescore_074(audit):
    row = _mean(audit)
    _check_against_truescore(row, REF["truescore 0.7.4"]["mean"])
    assert (row["n_labelled"], row["n_unlabelled"]) == (N_LAB, N_UNL)
    # what truescore 0.7.4 prints: 0.7151 [0.6837, 0.7464]
    _printed([row["estimate"], row["conf_low"], row["conf_high"]], [0.7151, 0.6837, 0.7464])


def test_ppi_difference_equals_truescore_074(compare):
    row = _difference(compare)
    _check_against_truescore(row, REF["truescore 0.7.4"]["difference"])
    # what truescore 0.7.4 prints: +0.0942 [+0.0498, +0.1387]
    _printed([row["estimate"], row["conf_low"], row["conf_high"]], [0.0942, 0.0498, 0.1387])
    # z is larger by the same divisor factor (about 1.0008), which moves p = 3.2e-5 by about 1.5%
    assert row["p_value"] == pytest.approx(REF["truescore 0.7.4"]["difference"]["p_value"], rel=0.03)


def test_the_readme_lines_with_truescore_050s_lambda(audit, compare):
    """The README's printed PPI++ numbers, reproduced with the lambda truescore 0.5.0 tuned."""
    ref = REF["truescore 0.5.0"]
    row = _mean(audit, lam=ref["mean"]["lambda"])
    _check_against_truescore(row, ref["mean"])
    _printed([row["estimate"], row["conf_low"], row["conf_high"]], [0.7150, 0.6836, 0.7463])
    row = _difference(compare, lam=ref["difference"]["lambda"])
    _check_against_truescore(row, ref["difference"])
    _printed([row["estimate"], row["conf_low"], row["conf_high"]], [0.0950, 0.0505, 0.1394])


def test_the_readme_wilson_lines(audit):
    judged = audit["judge_passed"]
    labelled = audit["human_passed"].dropna()
    low, high = evalmix.binom_ci(int(judged.sum()), len(judged), method="wilson")
    _printed([judged.mean(), float(low), float(high)], [0.8383, 0.8265, 0.8493], divisor=False)
    low, high = evalmix.binom_ci(int(labelled.sum()), len(labelled), method="wilson")
    _printed([labelled.mean(), float(low), float(high)], [0.7183, 0.6810, 0.7528], divisor=False)


def test_the_corrected_interval_covers_the_simulated_truth(audit, compare):
    """The data were simulated with a pass rate of 0.7140 and an improvement of 0.0900."""
    res = evalmix.ppi_mean(audit, by=None, judge="judge_passed", human="human_passed", item="example_id",
                           method=["ppi++", "judge_only"]).to_frame().set_index("method")
    assert res.loc["ppi++", "conf_low"] <= 0.7140 <= res.loc["ppi++", "conf_high"]
    assert not res.loc["judge_only", "conf_low"] <= 0.7140
    diff = _difference(compare)
    assert diff["conf_low"] <= 0.0900 <= diff["conf_high"]
