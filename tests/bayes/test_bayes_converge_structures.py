"""The Bayesian twins converge by default on crossed and nested random terms, and say so when not.

Crossed: lme4's VerbAgg (316 respondents crossed with 24 items, 7,584 binary answers),
``r2 ~ Anger + Gender + btype + situ + (1|id) + (1|item)``.  Nested: lme4's cbpp with an
observation-level term inside each herd, ``cbind(incidence, size - incidence) ~ period + (1|herd/obs)``
(lme4's overdispersion model).  Both with the DEFAULT settings (4 chains x 1000 draws): r_hat <=
1.01, bulk ESS >= 400, no divergences, and posterior means of the fixed effects within 0.5 ML
standard errors of evalmix's ML fits (which match lme4 in their own tests).

A fit that does not converge (here: 30 draws after 30 tuning steps) warns with a
:class:`~evalmix.core.errors.SamplingWarning` that gives the diagnostics, names the parameters at
fault and says what to change.  Marked slow: each test samples.
"""

from __future__ import annotations

import importlib.util
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = [pytest.mark.skipif(importlib.util.find_spec("pymc") is None, reason="needs pymc (the bayes extra)"),
              pytest.mark.slow]

import evalmix  # noqa: E402
from evalmix import bayes  # noqa: E402
from evalmix.core.errors import SamplingWarning  # noqa: E402

REF = Path(__file__).parents[1] / "reference"


def _check(fit, ml, names: list[str]) -> pd.DataFrame:
    tab = fit.posterior_table()
    assert tab["r_hat"].max() <= 1.01, tab
    assert tab["ess_bulk"].min() >= 400, tab
    assert fit.divergences == 0
    assert not fit.diagnostics()
    se = pd.Series(np.sqrt(np.diag(ml.vcov)), index=ml.fixef.index)
    for n in names:
        assert abs(fit.fixef[n] - ml.fixef[n]) <= 0.5 * se[n], (n, fit.fixef[n], ml.fixef[n], se[n])
    return tab


def test_glmer_twin_converges_on_crossed_terms_verbagg():
    d = pd.read_csv(REF / "bayes_verbagg.csv", dtype={"id": str})
    f = "r2 ~ Anger + Gender + btype + situ + (1|id) + (1|item)"
    with warnings.catch_warnings():
        warnings.simplefilter("error", SamplingWarning)
        fit = bayes.glmer(f, d, rng=1, progressbar=False)
    ml = evalmix.glmer(f, d)
    tab = _check(fit, ml, list(ml.fixef.index))
    sds = tab[tab["parameter"].str.startswith("sd(")].set_index("parameter")["estimate"]
    # lme4: SD 1.34 (id) and 0.50 (item); the posterior of 24 items' SD is right-skewed
    assert len(sds) == 2 and 1.2 < sds.iloc[0] < 1.5 and 0.4 < sds.iloc[1] < 0.8, sds


def test_glmer_twin_converges_on_nested_terms_cbpp():
    d = pd.read_csv(REF / "engine_cbpp.csv", dtype={"herd": str, "period": str})
    d["obs"] = [f"o{i}" for i in range(len(d))]
    f = "cbind(incidence, size - incidence) ~ period + (1|herd/obs)"
    with warnings.catch_warnings():
        warnings.simplefilter("error", SamplingWarning)
        fit = bayes.glmer(f, d, rng=2, progressbar=False)
    ml = evalmix.glmer(f, d)
    _check(fit, ml, list(ml.fixef.index))
    assert sorted(fit.ngroups.values()) == [15, 56]
    # an observation-level term (one row per level) raises the default target acceptance to 0.8
    assert max(fit.ngroups.values()) == len(d)


def test_a_fit_that_does_not_converge_warns_with_diagnostics_and_remedy():
    # a model of the compiled kernel (no per-process compilation): the test costs its sampling only
    d = pd.read_csv(REF / "glmm_slope.csv")
    with pytest.warns(SamplingWarning) as rec:
        fit = bayes.glmer("correct ~ x + (1|g)", d, draws=30, tune=30, chains=2, rng=3, progressbar=False)
    msgs = [str(w.message) for w in rec if issubclass(w.category, SamplingWarning)]
    assert msgs == fit.diagnostics() and msgs
    tab = fit.posterior_table()
    low = tab[(tab["ess_bulk"] < 400) | (tab["ess_tail"] < 400)]["parameter"].tolist()
    ess = next(m for m in msgs if m.startswith("effective sample size < 400"))
    # every parameter short of draws is named, with the smallest ESS and the remedy
    assert low and all(p in ess for p in low) and any(p.startswith("sd(") for p in low), (low, ess)
    assert re.search(r"min bulk \d+, tail \d+", ess) and "draws=" in ess
    bad = tab[tab["r_hat"] > 1.01]["parameter"].tolist()
    if bad:
        rh = next(m for m in msgs if m.startswith("r_hat > 1.01"))
        assert all(p in rh for p in bad) and "tune=" in rh and re.search(r"max \d\.\d{3}", rh)
