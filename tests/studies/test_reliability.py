"""Flip rates, ICCs (against irr::icc and psych::ICC) and the latent-scale ICC."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalmix
from evalmix.core.errors import DataError, DataWarning
from evalmix.studies.reliability import flip_rate, icc, icc_matrix, latent_icc, quality_band

from pathlib import Path

REFERENCE = Path(__file__).resolve().parents[1] / "reference"

SLICE = ["model", "language", "prompt"]
AI4MATH_COLS = dict(item="problem_id", run="run", outcome="correct")


@pytest.fixture(scope="module")
def icc_ref() -> dict:
    with open(REFERENCE / "icc_reference.json") as fh:
        return json.load(fh)


def _frame(mat: np.ndarray) -> pd.DataFrame:
    ns, nr = mat.shape
    return pd.DataFrame({"item": np.repeat(np.arange(ns), nr), "run": np.tile(np.arange(nr), ns),
                         "correct": mat.ravel()})


# ---------------------------------------------------------------- ICC against R

# evalmix's column -> the reference's (irr's names)
IRR_KEYS = (("icc", "icc"), ("statistic", "f"), ("df1", "df1"), ("df2", "df2"), ("p_value", "p"),
            ("conf_low", "lower"), ("conf_high", "upper"))


@pytest.mark.parametrize("name", ["shrout_fleiss", "binary", "shifted"])
def test_icc_matches_irr_all_forms(icc_ref, name):
    mat = np.array(icc_ref["matrices"][name], dtype=float)
    for ref in icc_ref["irr"][name]:
        got = icc_matrix(mat, model=ref["model"], type=ref["type"], unit=ref["unit"], r0=ref["r0"],
                         conf_level=ref["conf_level"])
        assert got["form"] == ref["form"]
        for key, rkey in IRR_KEYS:
            assert got[key] == pytest.approx(ref[rkey], rel=1e-9, abs=1e-12), (ref, key)


PSYCH_FORMS = {"ICC1": ("oneway", "consistency", "single"), "ICC2": ("twoway", "agreement", "single"),
               "ICC3": ("twoway", "consistency", "single"), "ICC1k": ("oneway", "consistency", "average"),
               "ICC2k": ("twoway", "agreement", "average"), "ICC3k": ("twoway", "consistency", "average")}


@pytest.mark.parametrize("name", ["shrout_fleiss", "binary", "shifted"])
def test_icc_matches_psych_shrout_fleiss(icc_ref, name):
    mat = np.array(icc_ref["matrices"][name], dtype=float)
    for ref in icc_ref["psych"][name]:
        model, type_, unit = PSYCH_FORMS[ref["type"]]
        got = icc_matrix(mat, model=model, type=type_, unit=unit, convention="psych")
        for key, rkey in IRR_KEYS:
            assert got[key] == pytest.approx(ref[rkey], rel=1e-9, abs=1e-12), (ref["type"], key)


def test_agreement_df_at_r0_closed_form():
    # McGraw & Wong: F = MSR / (a MSC + b MSE), a = k r0 / (n (1 - r0)), b = 1 + k r0 (n-1) / (n (1 - r0)),
    # Satterthwaite df = (a MSC + b MSE)^2 / ((a MSC)^2/(k-1) + (b MSE)^2/((n-1)(k-1)))
    mat = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]],
                   dtype=float)
    got = icc_matrix(mat, type="agreement", r0=0.2, convention="psych")
    n, k, r0 = 6, 4, 0.2
    msr, msc, mse = got["ms_rows"], got["ms_cols"], got["ms_error"]
    a, b = k * r0 / (n * (1 - r0)), 1 + k * r0 * (n - 1) / (n * (1 - r0))
    v = (a * msc + b * mse) ** 2 / ((a * msc) ** 2 / (k - 1) + (b * mse) ** 2 / ((n - 1) * (k - 1)))
    assert got["statistic"] == pytest.approx(msr / (a * msc + b * mse), rel=1e-12)
    assert got["df2"] == pytest.approx(v, rel=1e-12)
    from scipy import stats
    assert got["p_value"] == pytest.approx(stats.f.sf(got["statistic"], n - 1, v), rel=1e-10)


def test_mean_squares_closed_form():
    # Shrout & Fleiss (1979) Table 2: BMS 11.24, WMS 6.26, JMS 32.49, EMS 1.02
    mat = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9], [6, 2, 4, 7]],
                   dtype=float)
    got = icc_matrix(mat)
    assert [round(got[k], 2) for k in ("ms_rows", "ms_within", "ms_cols", "ms_error")] == \
        [11.24, 6.26, 32.49, 1.02]


@settings(max_examples=40, deadline=None)
@given(st.integers(3, 12), st.integers(2, 5), st.integers(0, 10_000))
def test_icc_properties(ns, nr, seed):
    rng = np.random.default_rng(seed)
    mat = rng.normal(size=(ns, 1)) * 2 + rng.normal(size=(ns, nr))
    c1 = icc_matrix(mat)
    ck = icc_matrix(mat, unit="average")
    # Spearman-Brown links the single and average consistency forms
    assert ck["icc"] == pytest.approx(nr * c1["icc"] / (1 + (nr - 1) * c1["icc"]), rel=1e-9, abs=1e-12)
    assert c1["conf_low"] <= c1["icc"] <= c1["conf_high"]
    # consistency ignores run shifts; adding a constant to one run leaves ICC(C,1) unchanged
    shifted = mat.copy()
    shifted[:, 0] += 3.0
    assert icc_matrix(shifted)["icc"] == pytest.approx(c1["icc"], rel=1e-9, abs=1e-12)
    # a monotone-affine rescaling of all scores leaves every form unchanged
    for kw in ({"type": "agreement"}, {"model": "oneway"}):
        assert icc_matrix(2.5 * mat - 1, **kw)["icc"] == pytest.approx(icc_matrix(mat, **kw)["icc"],
                                                                       rel=1e-9, abs=1e-12)


def test_icc_matrix_errors():
    with pytest.raises(DataError, match="at least 2"):
        icc_matrix(np.ones((1, 3)))
    with pytest.raises(ValueError, match="model"):
        icc_matrix(np.ones((3, 3)), model="threeway")


# ---------------------------------------------------------------- ICC and flip rate on AI4Math

def test_ai4math_icc_matches_published(ai4math_raw, published):
    pub = published("TableS2_ICC_full")
    got = icc(ai4math_raw, SLICE, **AI4MATH_COLS, bands=(0.6, 0.75, 0.9),
              labels=("Poor", "Moderate", "Good", "Excellent")).table
    merged = pub.merge(got, on=SLICE, validate="1:1")
    assert len(merged) == 32
    np.testing.assert_allclose(merged["icc"], merged["ICC"], rtol=0, atol=1e-9)
    assert (merged["quality"] == merged["Quality"]).all()
    assert set(got["form"]) == {"ICC(C,1)"} and set(got["n_items"]) == {105}
    # the paper: 10 good, 14 moderate, 8 poor; mean 0.68, median 0.70
    assert got["quality"].value_counts().to_dict() == {"Moderate": 14, "Good": 10, "Poor": 8}
    assert round(got["icc"].mean(), 2) == 0.68 and round(got["icc"].median(), 2) == 0.70


def test_ai4math_flip_rate_matches_published(ai4math_raw, published):
    pub = published("flip_summary_entropy")
    got = flip_rate(ai4math_raw, SLICE, **AI4MATH_COLS).table
    merged = pub.merge(got, on=SLICE, validate="1:1")
    assert len(merged) == 32
    np.testing.assert_allclose(merged["flip_rate"], merged["p_flip"], atol=1e-9)
    # with three binary runs an item is 3-0 (entropy 0) or 2-1 (entropy H(1/3)): mean = rate * H(1/3)
    h = -(1 / 3 * math.log2(1 / 3) + 2 / 3 * math.log2(2 / 3))
    np.testing.assert_allclose(merged["entropy"], merged["flip_rate"] * h, atol=1e-12)


def test_flip_rate_counts_and_missing():
    df = pd.DataFrame({"item": [1, 1, 1, 2, 2, 2, 3], "run": [1, 2, 3, 1, 2, 3, 1],
                       "correct": [1, 1, 0, 0, 0, 0, 1]})
    with pytest.warns(DataWarning, match="fewer than two runs"):
        r = flip_rate(df)
    row = r.table.iloc[0]
    assert (row["n_items"], row["n_flip"], row["n_runs"]) == (2, 1, 3)
    assert row["entropy"] == pytest.approx(0.5 * 0.9182958340544896)
    with pytest.raises(DataError, match=r"rows share a key \('item', 'run'\)"):
        flip_rate(pd.concat([df, df]))
    with pytest.raises(DataError, match="missing column"):
        flip_rate(df, "model")


def test_icc_uses_read_runs_roles():
    sim = evalmix.simulate.glmm_runs(2, 30, 3, rng=3)
    runs = evalmix.read_runs(sim.rename(columns={"item": "q", "correct": "ok"}), item="q", outcome="ok")
    a = icc(runs, "model").table
    b = icc(sim, "model").table
    np.testing.assert_allclose(a["icc"], b["icc"])
    assert a["quality"].tolist() == quality_band(a["icc"].to_numpy())
    assert "ICC(C,1)" in icc(sim, "model").to_markdown()


def test_quality_band_cut_points():
    assert quality_band([0.5, 0.50001, 0.75, 0.9, 0.95, float("nan")]) == \
        ["poor", "moderate", "moderate", "good", "excellent", None]
    with pytest.raises(ValueError, match="labels"):
        quality_band(0.3, labels=("a", "b"))


# ---------------------------------------------------------------- latent ICC

def test_latent_icc_closed_form():
    vc = pd.DataFrame({"group": ["item:run", "item"], "var1": ["(Intercept)"] * 2, "var2": [None] * 2,
                       "variance": [0.36, 1.44], "sd": [0.6, 1.2]})
    r = latent_icc(vc, n_runs=3)
    total = 1.44 + 0.36 + math.pi**2 / 3
    assert r.icc_runs == pytest.approx(1.44 / total, rel=1e-12)
    assert r.run_share == pytest.approx(0.2, rel=1e-12)
    assert r.icc_runs_average == pytest.approx(3 * r.icc_runs / (1 + 2 * r.icc_runs), rel=1e-12)
    assert r.table["share"].sum() == pytest.approx(1.0)
    with pytest.raises(DataError, match="no random intercept"):
        latent_icc(vc, item="problem")


def test_latent_icc_from_fit_recovers_truth():
    import warnings

    from evalmix.glmm import glmer

    df = evalmix.simulate.glmm_runs(4, 150, 3, sd_item=1.5, sd_item_run=0.8, rng=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = glmer("correct ~ model + (1|item) + (1|item:run)", df)
    r = latent_icc(fit, n_runs=3)
    truth = 1.5**2 / (1.5**2 + 0.8**2 + math.pi**2 / 3)
    assert r.icc_runs == pytest.approx(truth, abs=0.06)
    assert r.run_share == pytest.approx(0.8**2 / (1.5**2 + 0.8**2), abs=0.12)
    assert list(r.table["component"]) == ["item", "item:run", "residual"]


@settings(max_examples=30, deadline=None)
@given(st.integers(2, 6), st.integers(0, 10_000))
def test_flip_rate_properties(n_runs, seed):
    rng = np.random.default_rng(seed)
    mat = (rng.random((25, n_runs)) < rng.random((25, 1))).astype(float)
    row = flip_rate(_frame(mat)).table.iloc[0]
    flips = np.array([len(set(r)) > 1 for r in mat])
    assert row["n_flip"] == flips.sum() and 0 <= row["flip_rate"] <= 1
    # entropy is positive exactly for flipping items and at most 1 bit for binary outcomes
    assert (row["entropy"] > 0) == flips.any()
    assert row["entropy"] <= row["flip_rate"] + 1e-12


def _vc(s_item: float, s_item_run: float, residual: float | None = None) -> pd.DataFrame:
    rows = [("item:run", s_item_run), ("item", s_item)] + ([("Residual", residual)] if residual else [])
    return pd.DataFrame({"group": [g for g, _ in rows], "var1": ["(Intercept)"] * len(rows),
                         "var2": [None] * len(rows), "variance": [v for _, v in rows],
                         "sd": [math.sqrt(v) for _, v in rows]})


class _Fit:
    """A fit as latent_icc reads it: varcorr, and the family and link when they are not binomial/logit."""

    def __init__(self, vc: pd.DataFrame, family: str = "binomial", link: str = "logit") -> None:
        self.varcorr, self.family, self.link = vc, family, link


@pytest.mark.parametrize("link, residual", [("logit", math.pi ** 2 / 3), ("probit", 1.0),
                                            ("cloglog", math.pi ** 2 / 6)])
def test_latent_icc_uses_the_latent_residual_of_the_link(link, residual):
    # closed form: s2_item / (s2_item + s2_item:run + residual of the link's latent scale)
    r = evalmix.latent_icc(_Fit(_vc(2.25, 0.25), link=link))
    assert r.icc_runs == pytest.approx(2.25 / (2.5 + residual), rel=1e-12)
    assert r.table["variance"].iloc[-1] == pytest.approx(residual, rel=1e-12)


def test_latent_icc_of_a_linear_mixed_fit_uses_its_residual_variance():
    r = evalmix.latent_icc(_vc(2.0, 0.5, residual=1.5))
    assert r.icc_runs == pytest.approx(2.0 / 4.0, rel=1e-12)


def test_latent_icc_refuses_a_beta_fit():
    # beta scores are not a thresholded latent variable: no residual of the link's scale exists
    with pytest.raises(DataError, match="a beta fit has no fixed latent residual"):
        evalmix.latent_icc(_Fit(_vc(1.0, 0.1), family="beta"))
