"""Agreement coefficients: parity with statsmodels and the krippendorff package, bands."""

from __future__ import annotations

import krippendorff
import numpy as np
import pandas as pd
import pytest
from statsmodels.stats import inter_rater as ir

from evalmix import cohen_kappa, fleiss_kappa, krippendorff_alpha
from evalmix.stats.agreement import krippendorff_band, landis_koch
from evalmix.core.errors import DataError


def _two_raters(rng, n, k):
    a = rng.integers(0, k, n)
    b = np.where(rng.random(n) < 0.6, a, rng.integers(0, k, n))
    return a, b


@pytest.mark.parametrize("weights", [None, "linear", "quadratic"])
def test_cohen_kappa_equals_statsmodels(weights):
    rng = np.random.default_rng(1)
    for _ in range(40):
        k = int(rng.integers(2, 6))
        a, b = _two_raters(rng, int(rng.integers(15, 200)), k)
        table = np.zeros((k, k))
        np.add.at(table, (a, b), 1)
        ref = ir.cohens_kappa(table, wt=weights)
        r = cohen_kappa(a, b, weights=weights, categories=range(k))
        assert r.estimate == pytest.approx(ref.kappa, rel=1e-12, abs=1e-14)
        assert r.se == pytest.approx(ref.std_kappa, rel=1e-10)
        assert r.statistic == pytest.approx(ref.z_value, rel=1e-10)
        assert r.p_value == pytest.approx(ref.pvalue_two_sided, rel=1e-8, abs=1e-300)
        assert r.conf_low == pytest.approx(ref.kappa_low, rel=1e-10)


def test_cohen_kappa_labels_and_table_input():
    df = pd.DataFrame({"r1": ["yes", "no", "yes", "yes"], "r2": ["yes", "no", "no", "yes"]})
    r = cohen_kappa(df)
    assert r.estimate == pytest.approx(0.5)  # po = 0.75, pe = 0.5
    with pytest.raises(DataError, match="2 raters"):
        cohen_kappa(np.zeros((3, 3)))
    with pytest.raises(DataError, match="complete"):
        cohen_kappa([1, None, 1], [1, 0, 1])


def test_fleiss_kappa_equals_statsmodels_and_wikipedia():
    # Wikipedia's worked example (Fleiss' kappa): 10 subjects, 14 raters, 5 categories, kappa = 0.210
    counts = np.array([[0, 0, 0, 0, 14], [0, 2, 6, 4, 2], [0, 0, 3, 5, 6], [0, 3, 9, 2, 0],
                       [2, 2, 8, 1, 1], [7, 7, 0, 0, 0], [3, 2, 6, 3, 0], [2, 5, 3, 2, 2],
                       [6, 5, 2, 1, 0], [0, 2, 2, 3, 7]])
    r = fleiss_kappa(counts, counts=True)
    assert round(r.estimate, 3) == 0.210
    assert r.estimate == pytest.approx(ir.fleiss_kappa(counts))
    rng = np.random.default_rng(2)
    for _ in range(30):
        truth = rng.integers(0, 4, 50)
        ratings = np.where(rng.random((50, 5)) < 0.5, truth[:, None], rng.integers(0, 4, (50, 5)))
        table, _ = ir.aggregate_raters(ratings)
        assert fleiss_kappa(ratings).estimate == pytest.approx(ir.fleiss_kappa(table), rel=1e-12)
        assert fleiss_kappa(ratings, method="randolph").estimate == pytest.approx(
            ir.fleiss_kappa(table, method="randolph"), rel=1e-12)


def test_fleiss_null_z_is_standard_normal():
    # Under independent random ratings the null SE must make z ~ N(0, 1).
    rng = np.random.default_rng(3)
    z = np.array([fleiss_kappa(rng.integers(0, 3, (80, 4))).statistic for _ in range(400)])
    assert abs(z.mean()) < 0.2 and 0.85 < z.std() < 1.15


def test_fleiss_errors():
    with pytest.raises(DataError, match="same number"):
        fleiss_kappa([[2, 1], [1, 1]], counts=True)
    with pytest.raises(DataError, match="every item"):
        fleiss_kappa([[1, None], [1, 1]])


@pytest.mark.parametrize("level", ["nominal", "ordinal", "interval", "ratio"])
def test_krippendorff_equals_package(level):
    rng = np.random.default_rng(4)
    for _ in range(20):
        truth = rng.integers(1, 6, 60)
        data = np.where(rng.random((60, 4)) < 0.6, truth[:, None], rng.integers(1, 6, (60, 4))).astype(float)
        data[rng.random(data.shape) < 0.25] = np.nan
        ref = krippendorff.alpha(reliability_data=data.T, level_of_measurement=level)
        assert krippendorff_alpha(data, level=level).estimate == pytest.approx(ref, rel=1e-10)


def test_krippendorff_labels_and_ordering():
    data = pd.DataFrame({"a": ["low", "mid", "high", "mid"], "b": ["low", "high", "high", None],
                         "c": ["mid", "mid", "high", "mid"]})
    r = krippendorff_alpha(data, level="ordinal", categories=["low", "mid", "high"])
    coded = data.replace({"low": 1, "mid": 2, "high": 3}).astype(float).to_numpy()
    ref = krippendorff.alpha(reliability_data=coded.T, level_of_measurement="ordinal")
    assert r.estimate == pytest.approx(ref)
    with pytest.raises(DataError, match="two or more"):
        krippendorff_alpha([[1, np.nan], [np.nan, 2]])
    with pytest.raises(ValueError, match="level"):
        krippendorff_alpha([[1, 1]], level="fuzzy")


def test_bands():
    assert [landis_koch(k) for k in (-0.1, 0.0, 0.2, 0.21, 0.4, 0.5, 0.8, 0.81, 1.0)] == [
        "poor", "slight", "slight", "fair", "fair", "moderate", "substantial", "almost perfect",
        "almost perfect"]
    assert [krippendorff_band(a) for a in (0.5, 0.667, 0.79, 0.8)] == [
        "unreliable", "tentative", "tentative", "reliable"]


def _r_reference():
    """Values written by tests/reference/comparisons_reference.R (base R stats, psych)."""
    import json
    from pathlib import Path
    path = Path(__file__).parents[1] / "reference" / "comparisons_reference.json"
    return json.loads(path.read_text())


def test_cohen_kappa_equals_psych():
    k = _r_reference()["kappa"]
    assert cohen_kappa(k["r1"], k["r2"]).estimate == pytest.approx(k["kappa"], rel=1e-12)
    assert cohen_kappa(k["r1"], k["r2"], weights="quadratic").estimate == pytest.approx(
        k["weighted_kappa"], rel=1e-12)
