"""Cost hidden in inference: a family of contrasts on an lmer fit, each contrast with its own
Satterthwaite df, pays for one vectorised pass of R's ptukey and one quantile per distinct df
(within a tolerance), not one SciPy integration per row, with R's numbers (emmeans + lmerTest:
tests/reference/tukey20_reference.R); bench/bench_tukey20.py times the families."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import importlib

import evalmix as em
from evalmix import multiplicity

emmeans_module = importlib.import_module("evalmix.emmeans")

REF = Path(__file__).parents[1] / "reference"
R = json.loads((REF / "tukey20_reference.json").read_text())


def _df(values: list) -> np.ndarray:
    return np.array([np.inf if v == "Inf" else float(v) for v in values])


def test_ptukey_and_qtukey_are_rs() -> None:
    p = R["ptukey"]
    got = multiplicity.studentized_range_cdf(p["q"], 20, _df(p["df"]))
    np.testing.assert_allclose(got, p["p"], rtol=1e-10, atol=1e-13)
    q = R["qtukey"]
    np.testing.assert_allclose(multiplicity.studentized_range_quantile(0.95, 20, _df(q["df"])), q["q"],
                               rtol=1e-10)
    assert multiplicity.qtukey(0.95, 20) == pytest.approx(q["q"][-1], rel=1e-12)
    np.testing.assert_allclose(multiplicity.ptukey_upper([2.0, 3.5, 5.0], 20), 1 - np.array(p["p"][-3:]),
                               rtol=1e-10)


def test_unique_within_a_tolerance() -> None:
    reps, where = multiplicity.unique_within([12.0, 10.0, 10.0 * (1 + 1e-10), 12.0 + 1e-3, np.inf, np.inf])
    assert reps.tolist() == [10.0, 12.0, 12.001, np.inf]
    assert where.tolist() == [1, 0, 0, 2, 3, 3]


@pytest.mark.parametrize("method", ["tukey", "dunnettx"])
def test_one_quantile_per_distinct_df(monkeypatch: pytest.MonkeyPatch, method: str) -> None:
    """Satterthwaite df that differ at 1e-9 share one quantile; the p-values take one pass."""
    calls: dict[str, list[int]] = {"quantile": [], "cdf": []}
    quantile, cdf = multiplicity.studentized_range_quantile, multiplicity.studentized_range_cdf

    def spy_quantile(p: float, nmeans: float, df: np.ndarray) -> np.ndarray:
        calls["quantile"].append(np.atleast_1d(df).size)
        return quantile(p, nmeans, df)

    def spy_cdf(q: np.ndarray, nmeans: float, df: np.ndarray) -> np.ndarray:
        calls["cdf"].append(np.atleast_1d(q).size)
        return cdf(q, nmeans, df)

    monkeypatch.setattr(multiplicity, "studentized_range_quantile", spy_quantile)
    monkeypatch.setattr(multiplicity, "studentized_range_cdf", spy_cdf)
    k = 45  # the pairs of 10 means
    rng = np.random.default_rng(0)
    t = rng.normal(0, 2, k)
    df = 30.0 * (1 + 1e-9 * rng.random(k))
    p, crit, *_ = emmeans_module._adjust_family_t(t, df, method, conf_level=0.95, n_means=10, pairwise=True)
    assert calls["quantile"] == [1]  # one df, within the tolerance
    assert np.ptp(crit) == 0.0
    if method == "tukey":
        assert calls["cdf"][0] == k  # every row's p-value in one call
        expected = 1 - cdf(np.sqrt(2) * np.abs(t), 10, df)
        np.testing.assert_allclose(p, expected, rtol=1e-12)


@pytest.fixture(scope="module")
def fit20():
    d = pd.read_csv(REF / "tukey20.csv")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return em.lmer("score ~ model + (1|item)", d)


@pytest.mark.parametrize("method, family, adjust", [
    ("tukey", "pairwise", "tukey"), ("holm", "pairwise", "holm"), ("dunnettx", "trt.vs.ctrl", "dunnettx"),
])
def test_twenty_level_family_is_rs(fit20, method: str, family: str, adjust: str) -> None:
    # its time is measured by bench/bench_tukey20.py (docs/performance.md), not asserted here; the
    # one-quantile-per-df tests above pin what makes it fast
    means = em.emmeans(fit20, "model")
    con = em.contrast(means, family, adjust=adjust)
    ref = R[method]
    tab = con.table
    assert tab["contrast"].tolist() == ref["contrast"]
    # Satterthwaite df agree with lmerTest to about 1e-6, so the numbers that follow them do too
    np.testing.assert_allclose(tab["df"], ref["df"], rtol=1e-5)
    np.testing.assert_allclose(tab["estimate"], ref["estimate"], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(tab["se"], ref["se"], rtol=1e-5)
    np.testing.assert_allclose(tab["p_adjusted"], ref["p_value"], rtol=1e-4, atol=1e-9)
    np.testing.assert_allclose(tab["conf_low"], ref["lower"], rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(tab["conf_high"], ref["upper"], rtol=1e-5, atol=1e-6)


def test_tukey_pvalues_are_rs_given_the_df() -> None:
    """With R's own df and t ratios, the Tukey p-values and intervals are R's to 1e-8 (1e-11 absolute)."""
    ref = R["tukey"]
    t, df = np.array(ref["t_ratio"]), np.array(ref["df"])
    p, crit, *_ = emmeans_module._adjust_family_t(t, df, "tukey", conf_level=0.95, n_means=20, pairwise=True)
    # 1 - ptukey near 1: R sums in long double, so tiny p-values agree to 1e-11 absolute
    np.testing.assert_allclose(p, ref["p_value"], rtol=1e-8, atol=1e-11)
    se = np.array(ref["se"])
    np.testing.assert_allclose(np.array(ref["estimate"]) - crit * se, ref["lower"], rtol=1e-9, atol=1e-10)


def test_families_share_their_quantiles(monkeypatch: pytest.MonkeyPatch) -> None:
    """The families of a by= grid with the same df pay for one quantile between them."""
    solved: list[int] = []
    secant = multiplicity._qtukey_secant

    def spy(p: float, nmeans: float, df: np.ndarray) -> np.ndarray:
        solved.append(len(df))
        return secant(p, nmeans, df)

    monkeypatch.setattr(multiplicity, "_qtukey_secant", spy)
    monkeypatch.setattr(multiplicity, "_QTUKEY_CACHE", {})
    t = np.array([0.5, -1.5, 2.5])
    for _ in range(5):  # five by= families of three contrasts among three means, df 17.25
        emmeans_module._adjust_family_t(t, np.full(3, 17.25), "tukey", conf_level=0.95, n_means=3, pairwise=True)
    assert solved == [1]
    multiplicity.qdunnx.cache_clear()
    first = multiplicity.qdunnx(0.95, 7)
    assert multiplicity.qdunnx(0.95, 7) == first and multiplicity.qdunnx.cache_info().hits == 1
