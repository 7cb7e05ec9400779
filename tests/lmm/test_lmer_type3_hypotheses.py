"""anova() of lmer fits tests each term along lmerTest's rows (evalmix.lmm.hypotheses), so the
Satterthwaite F tests are lmerTest's for models with several terms, interactions of
treatment-coded factors included (tests/reference/lmer_type3_hypotheses.R).

F and df within 1e-5 relative (the R fits run to the optimum; Satterthwaite's df come from
finite differences), p within 1e-5 relative.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.lmm.hypotheses import doolittle_rows, zapsmall

REF_DIR = Path(__file__).parents[1] / "reference"
R = json.loads((REF_DIR / "lmer_type3_hypotheses.json").read_text())
_raw = pd.read_csv(REF_DIR / "lmer_sleepstudy.csv")
SLEEP = _raw.assign(g=np.where(_raw["Subject"] % 3 == 0, "a", "b"), x=_raw["Subject"] % 5 + _raw["Days"] ** 2 / 10,
                    Dayf=np.minimum(_raw["Days"], 3).astype(str), Subject=_raw["Subject"].astype(str))
FORMULAS = {"inter": "Reaction ~ Dayf * g + (Days | Subject)",
            "slopes": "Reaction ~ Dayf * g + x + Dayf:x + (Days | Subject)",
            "covar": "Reaction ~ g * x + (Days | Subject)"}


def _check(name: str, coding: str) -> None:
    formula = FORMULAS[name]
    fit = evalmix.lmer(formula, SLEEP, contrasts={f: coding for f in ("Dayf", "g") if f in formula})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # lmerTest's hypotheses: no warning that they are not
        tab = evalmix.anova(fit).to_frame()
    r = R[f"{name}_{coding}"]
    assert tab["term"].tolist() == r["term"] and tab["df1"].tolist() == r["df1"]
    for col in ("statistic", "df2", "p_value"):
        np.testing.assert_allclose(tab[col], r[col], rtol=1e-5, err_msg=col)


@pytest.mark.parametrize("coding", ["treatment", "sum"])
def test_interaction_of_factors_is_lmertest_s_in_either_coding(coding):
    _check("inter", coding)


@pytest.mark.slow
@pytest.mark.parametrize("coding", ["treatment", "sum"])
@pytest.mark.parametrize("name", ["slopes", "covar"])
def test_factor_by_covariate_terms_are_lmertest_s(name, coding):
    _check(name, coding)


def test_terms_that_are_not_plain_variables_keep_the_coefficient_rows():
    fit = evalmix.lmer("Reaction ~ g * I(x^2) + (1 | Subject)", SLEEP)
    assert fit.type3_hypotheses() is None
    with pytest.warns(evalmix.DataWarning, match="not lmerTest's type III"):
        tab = evalmix.anova(fit).to_frame()
    assert tab["df1"].tolist() == [1, 1, 1]


def test_doolittle_rows_and_zapsmall_are_r_s():
    # R: t(lmerTest:::doolittle(crossprod(model.matrix(~ a)))$L), a = c("x","y","z","x","y","z","x","y")
    a = np.array(list("xyzxyzxy"))
    X = np.column_stack([np.ones(8), a == "y", a == "z"]).astype(float)
    np.testing.assert_allclose(doolittle_rows(X.T @ X, [0, 1, 2]),
                               [[1, 0.375, 0.25], [0, 1, -0.4], [0, 0, 1]], atol=1e-15)
    # R: zapsmall(c(123.456789, 1e-9)) keeps 7 significant digits of the largest entry
    np.testing.assert_array_equal(zapsmall(np.array([123.456789, 1e-9])), [123.4568, 0.0])
