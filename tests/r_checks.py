"""Comparisons of a fit with the emmeans and car numbers an R reference script stored.

Shared by the formula parity tests (tests/model/test_formula_parity.py, tests/model/test_formula_sweep.py),
whose JSON cases hold ``emmeans`` (spec, level, estimate, se) and ``anova`` (term, df, chisq).
"""

from __future__ import annotations

from typing import Any

import numpy as np

import evalmix


def check_emmeans(fit: Any, ref: dict) -> None:
    """Means on the link scale: levels in R's order, estimates 2e-3, SEs 1%."""
    e = evalmix.emmeans(fit, ref["spec"]).to_frame()
    assert [str(v) for v in e[ref["spec"]]] == ref["level"]
    np.testing.assert_allclose(e["estimate"], ref["estimate"], rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(e["se"], ref["se"], rtol=0.01)


def check_type3(fit: Any, ref: dict) -> None:
    """car::Anova(type = 3): the same terms and df, chi-square within 1%."""
    a = evalmix.anova(fit).to_frame()
    assert len(a) == len(ref["term"])
    np.testing.assert_array_equal(a["df"], ref["df"])
    np.testing.assert_allclose(a["statistic"], ref["chisq"], rtol=0.01, atol=1e-6)
