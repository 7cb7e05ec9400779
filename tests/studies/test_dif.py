"""Logistic-regression DIF (Swaminathan-Rogers) against R's glm, item by item
(tests/reference/dif_reference.R on dif_responses.csv)."""

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalmix.core.errors import DataError
from evalmix.studies.dif import logistic_dif

REF = Path(__file__).resolve().parents[1] / "reference"


@pytest.fixture(scope="module")
def data():
    return pd.read_csv(REF / "dif_responses.csv")


@pytest.fixture(scope="module")
def ref():
    return json.loads((REF / "dif_reference.json").read_text())


@pytest.mark.parametrize("kind", ["uniform", "both"])
def test_likelihood_ratio_tests_match_glm(data, ref, kind):
    res = logistic_dif(data, group="version", matching="ability", kind=kind).to_frame()
    assert res["item"].tolist() == ref["items"]
    stat = np.array([ref[kind][i]["statistic"] for i in ref["items"]])
    p = np.array([ref[kind][i]["p_value"] for i in ref["items"]])
    np.testing.assert_allclose(res["statistic"], stat, rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(res["p_value"], p, rtol=1e-7, atol=1e-12)
    np.testing.assert_allclose(res["p_adjusted"], ref[f"{kind}_bh"], rtol=1e-7, atol=1e-12)
    assert set(res["df"]) == {1 if kind == "uniform" else 2}


def test_uniform_shift_and_se_match_glm(data, ref):
    res = logistic_dif(data, group="version", matching="ability").to_frame()
    est = np.array([ref["uniform"][i]["estimate"] for i in ref["items"]])
    se = np.array([ref["uniform"][i]["se"] for i in ref["items"]])
    np.testing.assert_allclose(res["estimate"], est, atol=1e-6)
    np.testing.assert_allclose(res["se"], se, atol=1e-4)   # glm's vcov is taken at its IRLS stopping point
    assert (res["level"] == "v2").all()


def test_counts_give_the_same_tests(data):
    counts = (data.groupby(["item", "examinee", "version", "ability"], as_index=False)
              .agg(k=("correct", "sum"), n=("correct", "size")))
    a = logistic_dif(data, group="version", matching="ability").to_frame()
    b = logistic_dif(counts, group="version", matching="ability", outcome="k", trials="n").to_frame()
    np.testing.assert_allclose(a["statistic"], b["statistic"], rtol=1e-8, atol=1e-10)


def test_dispersion_divides_the_statistic(data):
    a = logistic_dif(data, group="version", matching="ability").to_frame()
    b = logistic_dif(data, group="version", matching="ability", dispersion=np.full(30, 2.0)).to_frame()
    np.testing.assert_allclose(b["statistic"], a["statistic"] / 2.0)


def test_bad_input_names_the_culprit(data):
    with pytest.raises(DataError, match="'score'"):
        logistic_dif(data, group="version", matching="score")
    with pytest.raises(DataError, match="one level"):
        logistic_dif(data.assign(version="v1"), group="version", matching="ability")
    with pytest.raises(DataError, match="row 5"):
        logistic_dif(data.assign(ability=data["ability"].where(data.index != 5)), group="version",
                     matching="ability")


@pytest.mark.parametrize("kind", ["uniform", "both"])
def test_score_tests_match_glms_rao(data, ref, kind):
    res = logistic_dif(data, group="version", matching="ability", kind=kind, test="score").to_frame()
    stat = np.array([ref[f"score_{kind}"][i]["statistic"] for i in ref["items"]])
    p = np.array([ref[f"score_{kind}"][i]["p_value"] for i in ref["items"]])
    np.testing.assert_allclose(res["statistic"], stat, rtol=1e-6)
    np.testing.assert_allclose(res["p_value"], p, rtol=1e-6, atol=1e-12)
