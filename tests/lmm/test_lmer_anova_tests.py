"""lmer anova: car's type-III Wald chi-square (test="Chisq") and Kenward-Roger on an ML fit
(tests/reference/lmer_anova_tests.R).

Statistics within 1e-4 relative of R's (the ML optimum is a little tighter than lme4's), -log p
1e-3 relative; KR df 1e-6. pbkrtest refits an ML fit by REML for Kenward-Roger (KRmodcomp,
vcovAdj); evalmix does the same, where lmerTest and car refuse the ML fit.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import ArgumentError

REF_DIR = Path(__file__).parents[1] / "reference"
R = json.loads((REF_DIR / "lmer_anova_tests.json").read_text())
SLEEP = pd.read_csv(REF_DIR / "lmer_sleepstudy.csv", dtype={"Subject": str}).assign(
    Dayf=lambda d: np.minimum(d["Days"], 3).astype(str))
FORMULAS = {"slope": "Reaction ~ Days + (Days|Subject)", "factor": "Reaction ~ Dayf + (1|Subject)"}


@pytest.fixture(scope="module")
def fits():
    return {f"{k}_{'reml' if reml else 'ml'}": evalmix.lmer(f, SLEEP, REML=reml)
            for k, f in FORMULAS.items() for reml in (True, False)}


@pytest.mark.parametrize("key", ["slope_reml", "slope_ml", "factor_reml", "factor_ml"])
def test_chisq_is_car_anova(fits, key):
    tab, ref = evalmix.anova(fits[key], test="Chisq").to_frame(), R[key]["chisq"]
    assert tab["term"].tolist() == ref["term"] and tab["df"].tolist() == ref["df"]
    np.testing.assert_allclose(tab["statistic"], ref["statistic"], rtol=1e-4)
    # p-values by their logs (-log p within 1e-3), where R's is not a denormal (below 1e-290
    # R keeps 1e-314, SciPy's chi-square tail gives 0)
    keep = np.asarray(ref["p_value"]) > 1e-290
    np.testing.assert_allclose(np.log(tab["p_value"].to_numpy()[keep]), np.log(np.asarray(ref["p_value"])[keep]),
                               rtol=1e-3)


@pytest.mark.parametrize("key", ["slope_ml", "factor_ml"])
def test_kenward_roger_on_an_ml_fit_is_pbkrtest_s(fits, key):
    fit, ref = fits[key], R[key]
    assert not fit.reml
    tab = evalmix.anova(fit, ddf="Kenward-Roger")
    assert tab.ddf == "Kenward-Roger"
    t = tab.to_frame()
    assert t["term"].tolist() == [r["term"] for r in ref["kr_ml"]]
    np.testing.assert_allclose(t["statistic"], [r["statistic"] for r in ref["kr_ml"]], rtol=1e-4)
    np.testing.assert_allclose(t["df2"], [r["df2"] for r in ref["kr_ml"]], rtol=1e-6)
    assert t["df1"].tolist() == [r["df1"] for r in ref["kr_ml"]]
    ct = fit.coef_table(ddf="Kenward-Roger").to_frame()
    np.testing.assert_allclose(ct["estimate"], ref["kr_coef"]["estimate"], rtol=1e-5)
    np.testing.assert_allclose(ct["se"], ref["kr_coef"]["se"], rtol=1e-4)
    np.testing.assert_allclose(ct["df"], ref["kr_coef"]["df"], rtol=1e-5)
    assert "only available for REML" in ref["lmerTest_ml"]  # what lmerTest says instead


def test_f_is_the_lmer_default_and_chisq_has_no_ddf(fits):
    fit = fits["slope_reml"]
    assert evalmix.anova(fit).ddf == evalmix.anova(fit, test="F").ddf == "Satterthwaite"
    with pytest.raises(ArgumentError, match="test='F' with ddf="):
        evalmix.anova(fit, test="Chisq", ddf="Kenward-Roger")
    with pytest.raises(ArgumentError, match="'F'.*'Chisq'"):
        evalmix.anova(fit, test="LR")


def test_f_needs_finite_df():
    fit = evalmix.glmer("correct ~ model + (1|item)", evalmix.simulate.glmm_runs(3, 30, 2, rng=1))
    with pytest.raises(ArgumentError, match=r"GlmerResult has no finite denominator df.*test='Chisq'"):
        evalmix.anova(fit, test="F")
    assert evalmix.anova(fit, test="Chisq").to_frame().equals(evalmix.anova(fit).to_frame())
