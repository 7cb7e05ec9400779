"""emmeans of lmer fits by maximum likelihood with Kenward-Roger and Satterthwaite df, against
R's emmeans (tests/reference/emmeans_kr_ml.R, sleepstudy and nlme's Machines).

emmeans keeps an ML fit's own fixed effects; for Kenward-Roger its covariance is pbkrtest's
``vcovAdj`` (the REML refit's, adjusted) and its df ``Lb_ddf(L, vcov(ML fit), adjusted V)``: the
ML covariance with the refit's ``P`` and ``W``.  The R fits run to the optimum (bobyqa, rhoend
1e-12), so the tolerances are those of the two optimisers' agreement: estimates 1e-6 relative,
SEs 1e-6, df 1e-5 (finite differences in Satterthwaite's Hessian), p-values 1e-5 relative.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix

REF_DIR = Path(__file__).parents[1] / "reference"
R = json.loads((REF_DIR / "emmeans_kr_ml.json").read_text())
SLEEP = pd.read_csv(REF_DIR / "lmer_sleepstudy.csv", dtype={"Subject": str}).assign(
    Dayf=lambda d: np.minimum(d["Days"], 3).astype(str))
MACHINES = pd.read_csv(REF_DIR / "lmer_machines.csv", dtype={"Worker": str})
CASES = {"sleepstudy": (SLEEP, "Reaction ~ Dayf + (Days | Subject)", "Dayf"),
         "machines": (MACHINES, "score ~ Machine + (1 | Worker) + (1 | Worker:Machine)", "Machine")}
# the REML fits' numbers are checked in tests/lmm/test_lmer.py too: here in the second test step
REML = [pytest.param(False, id="ml"), pytest.param(True, id="reml", marks=pytest.mark.slow)]
MODES = {"kenward-roger": "Kenward-Roger", "satterthwaite": "Satterthwaite"}


class _Fits(dict):
    """Each fit on first use (the REML ones run in the second test step only)."""

    def __missing__(self, key):
        data, formula, _ = CASES[key[0]]
        self[key] = evalmix.lmer(formula, data, REML=key[1])
        return self[key]


@pytest.fixture(scope="module")
def fits():
    return _Fits()


def close(mine, ref, rtol):
    np.testing.assert_allclose(np.asarray(mine, dtype=float), np.asarray(ref, dtype=float), rtol=rtol)


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("reml", REML)
@pytest.mark.parametrize("name", sorted(CASES))
def test_emmeans_and_pairs_are_r_s(fits, name, reml, mode):
    fit, spec = fits[(name, reml)], CASES[name][2]
    ref = R[f"{name}_{'reml' if reml else 'ml'}"][mode]
    em = evalmix.emmeans(fit, spec, ddf=MODES[mode])
    tab, r = em.to_frame(), ref["emmeans"]
    assert tab[spec].astype(str).tolist() == r["level"]
    close(tab["estimate"], r["estimate"], 1e-6)
    close(tab["se"], r["se"], 1e-6)
    close(tab["df"], r["df"], 1e-5)
    close(tab["conf_low"], r["conf_low"], 1e-6)
    close(tab["conf_high"], r["conf_high"], 1e-6)
    pw, r = evalmix.contrast(em, "pairwise", adjust="tukey").to_frame(), ref["pairs"]
    assert pw["contrast"].tolist() == r["contrast"]
    close(pw["estimate"], r["estimate"], 1e-6)
    close(pw["se"], r["se"], 1e-6)
    close(pw["df"], r["df"], 1e-5)
    close(pw["statistic"], r["statistic"], 1e-6)
    close(pw["p_value"], r["p_none"], 1e-5)
    close(pw["p_adjusted"], r["p_tukey"], 1e-5)
    # interval ends relative to their size (an end near 0 has no relative precision)
    scale = np.maximum(np.abs(r["conf_low"]), np.abs(r["conf_high"]))
    np.testing.assert_allclose(pw["conf_low"], r["conf_low"], rtol=0, atol=1e-6 * scale.max())
    np.testing.assert_allclose(pw["conf_high"], r["conf_high"], rtol=0, atol=1e-6 * scale.max())


def test_ml_kenward_roger_keeps_the_ml_estimates(fits):
    # emmeans' estimates are the ML fit's, not its REML refit's (which anova's KRmodcomp tests)
    fit = fits[("sleepstudy", False)]
    dfm = fit.df_method("Kenward-Roger")
    assert dfm.emmeans is not None and dfm.beta is not None
    assert not np.allclose(dfm.beta, fit.fixef.to_numpy(), rtol=1e-6)
    close(list(R["sleepstudy_ml"]["fixef"].values()), fit.fixef, 1e-6)
    grid = evalmix.ref_grid(fit, ddf="Kenward-Roger")
    close(grid.beta, fit.fixef, 0)
    close(grid.vcov, dfm.vcov, 0)  # the REML refit's adjusted covariance, as vcovAdj


@pytest.mark.parametrize("reml", REML)
@pytest.mark.parametrize("name", sorted(CASES))
def test_anova_satterthwaite_is_lmertest_s(fits, name, reml):
    # one term: lmerTest's rows are the Doolittle factor's, on which the F test's df depend
    tab = evalmix.anova(fits[(name, reml)], ddf="Satterthwaite").to_frame()
    r = R[f"{name}_{'reml' if reml else 'ml'}"]["anova_satterthwaite"]
    assert tab["term"].tolist() == [r["term"]]
    assert tab["df1"].tolist() == [r["df1"]]
    close(tab["statistic"], [r["statistic"]], 1e-6)
    close(tab["df2"], [r["df2"]], 1e-5)
    close(tab["p_value"], [r["p_value"]], 1e-5)


@pytest.mark.parametrize("reml", REML)
@pytest.mark.parametrize("name", sorted(CASES))
def test_kenward_roger_f_test_is_krmodcomp(fits, name, reml):
    # an ML fit's F test is its REML refit's, as pbkrtest's KRmodcomp refits it
    fit = fits[(name, reml)]
    a, b = fit.fixef.index[-2:]
    res = evalmix.linear_hypothesis(fit, f"{a} = {b}", test="F", ddf="Kenward-Roger")
    r = R[f"{name}_{'reml' if reml else 'ml'}"]["krmodcomp_last_two"]
    assert res.df == r["df1"]
    close(res.statistic, r["statistic"], 1e-6)
    close(res.df_denominator, r["df2"], 1e-5)
    close(res.p_value, r["p_value"], 1e-5)
