"""``LmerResult.coef_table`` and ``LmerResult.contest`` return immutable result objects that render
as every evalmix result does and print as lmerTest does."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from evalmix.mixed.fitted import LinearHypothesis
from evalmix.lmm import LmerCoefTable, lmer

RATINGS = Path(__file__).resolve().parents[2] / "data" / "example_ratings.csv"


@pytest.fixture(scope="module")
def fit():
    return lmer("rating ~ model + judge + (1|item) + (1|item:run)", pd.read_csv(RATINGS))


def test_coef_table_is_a_result(fit):
    ct = fit.coef_table()
    assert isinstance(ct, LmerCoefTable) and ct.ddf == "Satterthwaite" and ct.conf_level == 0.95
    frame = ct.to_frame()
    assert frame.columns.tolist() == ["term", "estimate", "se", "df", "statistic", "p_value", "conf_low",
                                      "conf_high"]
    # the numbers: t = estimate / se, p from t on the Satterthwaite df, t intervals
    np.testing.assert_allclose(frame["estimate"], fit.fixef.to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(frame["se"], np.sqrt(np.diag(fit.vcov.to_numpy())), rtol=1e-10)
    np.testing.assert_allclose(frame["statistic"], frame["estimate"] / frame["se"], rtol=1e-12)
    np.testing.assert_allclose(frame["p_value"], 2 * stats.t.sf(frame["statistic"].abs(), frame["df"]), rtol=1e-10)
    half = stats.t.isf(0.025, frame["df"]) * frame["se"]
    np.testing.assert_allclose(frame["conf_high"] - frame["estimate"], half, rtol=1e-10)
    # a column as callers read it before (a DataFrame's column)
    pd.testing.assert_series_equal(ct["se"], frame["se"])
    assert list(ct.columns) == frame.columns.tolist()
    with pytest.raises(dataclasses.FrozenInstanceError):
        ct.ddf = "Kenward-Roger"
    table = ct.table
    table.iloc[0, 1] = 99.0  # a copy: the result does not change
    assert ct.to_frame()["estimate"].iloc[0] == pytest.approx(fit.fixef.iloc[0], rel=1e-12)


def test_coef_table_prints_as_lmertest(fit):
    text = repr(fit.coef_table(ddf="Kenward-Roger"))
    lines = text.splitlines()
    assert lines[0] == "Fixed effects (t tests with Kenward-Roger's df, lmerTest):"
    assert lines[1].split() == ["Estimate", "Std.", "Error", "df", "t", "value", "Pr(>|t|)"]
    assert lines[2].startswith("(Intercept)") and lines[2].endswith("***")
    assert lines[-1] == "Signif. codes:  0 '***' 0.001 '**' 0.01 '*' 0.05 '.' 0.1 ' ' 1"
    assert "judgejudge-2" in text
    latex = fit.coef_table().to_latex(caption="Fixed effects")
    assert "\\begin{tabular}" in latex and "judgejudge-2" in latex
    assert "| term" in fit.coef_table().to_markdown()
    summ = fit.summary()
    assert "Fixed effects" in summ.tables


def test_contest_is_a_linear_hypothesis(fit):
    L = np.zeros((3, len(fit.fixef)))
    L[[0, 1, 2], [1, 2, 3]] = 1.0  # the three model effects
    res = fit.contest(L)
    assert isinstance(res, LinearHypothesis) and res.test == "F" and res.ddf == "Satterthwaite"
    F, ndf, den, p = fit.df_method().f_test(L, fit.fixef.to_numpy())
    assert res.statistic == pytest.approx(F, rel=1e-10) and res.df == ndf == 3
    assert res.df_denominator == pytest.approx(den, rel=1e-10) and res.p_value == pytest.approx(p, rel=1e-10)
    assert res.to_frame().columns.tolist() == ["statistic", "df1", "df2", "p_value"]
    kr = fit.contest(L, ddf="kenward-roger")
    assert kr.ddf == "Kenward-Roger"
    with pytest.raises(ValueError, match="column"):
        fit.contest([[1.0, 0.0]])
