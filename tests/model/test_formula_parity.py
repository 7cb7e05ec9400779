"""R formulas read verbatim by glmer, against lme4 / emmeans / car (tests/reference/formula_reference.R).

Each case fits the formula as R's user wrote it, on formula_binary.csv (0/1 answers) or
formula_counts.csv (k of n), with the same weights, offset, contrasts, link and nAGQ, and compares
with lme4 1.1-31: log-likelihood at or above lme4's (to 1e-3), fixed effects within 2e-3, SEs within
1%, emmeans within 2e-3 and 1% (link and response scale), car::Anova type-III chi-squares within 1%.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from r_checks import check_emmeans, check_type3
from evalmix.core.errors import FitWarning

REF_DIR = Path(__file__).parents[1] / "reference"
REF = json.loads((REF_DIR / "formula_reference.json").read_text())
CASES = REF["cases"]
POLY3 = np.array([[-3, 1, -1], [-1, -1, 3], [1, -1, -3], [3, 1, 1]], dtype=float)


def load(name: str, ordered: bool = False) -> pd.DataFrame:
    d = pd.read_csv(REF_DIR / f"formula_{name}.csv")
    if ordered:
        d["level"] = pd.Categorical(d["level"], categories=["low", "mid", "high"], ordered=True)
    if name == "counts":
        d["p"] = d["k"] / d["n"]
    else:
        d["log_expo"] = np.log(d["expo"])
    return d


_FITS: dict[str, evalmix.GlmerResult] = {}


def fit_case(cid: str):
    if cid not in _FITS:
        c = CASES[cid]
        kw = {}
        if c.get("weights"):
            kw["weights"] = c["weights"]
        if c.get("offset"):
            kw["offset"] = c["offset"]
        if c.get("contrasts"):
            kw["contrasts"] = {k: (POLY3 if v == "poly3" else v) for k, v in c["contrasts"].items()}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            _FITS[cid] = evalmix.glmer(c["formula"], load(c["data"], c["ordered"]), link=c["link"],
                                       nAGQ=c["nAGQ"], **kw)
    return _FITS[cid]


@pytest.mark.parametrize("cid", list(CASES))
def test_fit_matches_lme4(cid):
    c = CASES[cid]
    fit = fit_case(cid)
    assert len(fit.fixef) == len(c["beta"]), (list(fit.fixef.index), c["coef_names"])
    assert fit.loglik >= c["loglik"] - 1e-3
    assert fit.loglik <= c["loglik"] + 0.02  # the same objective, not a different one
    assert fit.df == c["df"] and fit.nobs == c["nobs"]
    np.testing.assert_allclose(fit.fixef.to_numpy(), c["beta"], rtol=2e-3, atol=2e-3)
    se = np.sqrt(np.diag(fit.vcov.to_numpy()))
    np.testing.assert_allclose(se, c["se"], rtol=0.01)


EMM = [cid for cid, c in CASES.items() if c.get("emmeans")]


@pytest.mark.parametrize("cid", EMM)
def test_emmeans_match(cid):
    c = CASES[cid]
    check_emmeans(fit_case(cid), c["emmeans"])
    r = evalmix.emmeans(fit_case(cid), c["emmeans"]["spec"], type="response").to_frame()
    np.testing.assert_allclose(r["estimate"], c["emmeans"]["response"], rtol=2e-3, atol=5e-4)
    np.testing.assert_allclose(r["se"], c["emmeans"]["response_se"], rtol=0.01)


ANOVA = [cid for cid, c in CASES.items() if c.get("anova")]


@pytest.mark.parametrize("cid", ANOVA)
def test_type3_matches_car(cid):
    check_type3(fit_case(cid), CASES[cid]["anova"])
