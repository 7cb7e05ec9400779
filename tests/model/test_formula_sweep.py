"""Formulas lme4 users write for evaluation data, against lme4 / emmeans / car
(tests/reference/formula_sweep_reference.R): level orders stated in the formula (``factor(x, levels
= ...)``, ``relevel``, ``ordered``), ``factor()`` in random terms, and a sweep of common fixed and
random parts (``0 +``, ``- 1``, ``x*y``, ``x:y``, ``a/b``, ``(x|g)``, ``(0 + x|g)``, ``||`` with a
factor, nested and crossed grouping factors, ``ns()`` and ``bs()`` with R's bases, an
observation-level random effect).

Tolerances as in tests/model/test_formula_parity.py: log-likelihood at or above lme4's (to 1e-3), fixed
effects within 2e-3, SEs within 1%, emmeans within 2e-3 and 1%, type-III chi-squares within 1%.
lme4 cannot evaluate ``factor()`` in a grouping factor; there the reference is the same model with
the bare column (``r_formula``), and lme4's error is recorded.  Cases whose fixed part R codes
with a different (equivalent) parameterisation (``x:y`` without main effects, ``a/b``) compare the
log-likelihood and the number of parameters only.
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
from evalmix.core.errors import DataWarning, FitWarning

# R parity of every formula form: the second test step (the first stays under 2 minutes)
pytestmark = pytest.mark.slow

REF_DIR = Path(__file__).parents[1] / "reference"
REF = json.loads((REF_DIR / "formula_sweep_reference.json").read_text())
CASES = REF["cases"]
FILES = {"binary": "formula_binary.csv", "counts": "formula_counts.csv",
         "item_run": "glmm_item_run.csv", "unbalanced": "glmm_unbalanced.csv"}
_FITS: dict[str, evalmix.GlmerResult] = {}


def fit_case(cid: str) -> evalmix.GlmerResult:
    if cid not in _FITS:
        c = CASES[cid]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FitWarning)
            warnings.simplefilter("ignore", DataWarning)
            _FITS[cid] = evalmix.glmer(c["formula"], pd.read_csv(REF_DIR / FILES[c["data"]]))
    return _FITS[cid]


@pytest.mark.parametrize("cid", list(CASES))
def test_fit_matches_lme4(cid):
    c = CASES[cid]
    assert "error" not in c, c.get("error")
    fit = fit_case(cid)
    assert fit.loglik >= c["loglik"] - 1e-3
    assert fit.loglik <= c["loglik"] + 0.02  # the same model, not a different one
    assert fit.df == c["df"] and fit.nobs == c["nobs"]
    if c["compare"] != "full":
        return
    beta = np.atleast_1d(c["beta"])  # jsonlite writes a one-element vector as a scalar
    assert len(fit.fixef) == len(beta), (list(fit.fixef.index), c["coef_names"])
    np.testing.assert_allclose(fit.fixef.to_numpy(), beta, rtol=2e-3, atol=2e-3)
    se = np.sqrt(np.diag(fit.vcov.to_numpy()))
    np.testing.assert_allclose(se, np.atleast_1d(c["se"]), rtol=0.01)
    vc = fit.varcorr
    sd = vc.loc[vc["var2"] == "", "sd"].to_numpy()
    np.testing.assert_allclose(sd, np.atleast_1d(c["vc_sd"]), atol=0.02)


def test_factor_in_a_grouping_factor_is_what_lme4_cannot_evaluate():
    refused = [c for c in CASES.values() if c.get("r_formula")]
    assert len(refused) == 4
    for c in refused:
        assert "couldn't evaluate grouping factor" in c["lme4_error"]


EMM = [cid for cid, c in CASES.items() if c.get("emmeans")]


@pytest.mark.parametrize("cid", EMM)
def test_emmeans_follow_the_level_order(cid):
    c = CASES[cid]
    check_emmeans(fit_case(cid), c["emmeans"])


ANOVA = [cid for cid, c in CASES.items() if c.get("anova")]


@pytest.mark.parametrize("cid", ANOVA)
def test_type3_matches_car(cid):
    check_type3(fit_case(cid), CASES[cid]["anova"])


CON = [(cid, m) for cid in EMM for m in ("pairwise", "trt.vs.ctrl")]


@pytest.mark.parametrize("cid, method", CON)
def test_contrasts_follow_the_level_order(cid, method):
    """Pairwise (earlier minus later level) and each level against the first, unadjusted."""
    c = CASES[cid]
    spec = c["emmeans"]["spec"]
    ref = c["contrast_" + method.replace(".vs.", "_")]
    ct = evalmix.contrast(evalmix.emmeans(fit_case(cid), spec), method, adjust="none").to_frame()
    # emmeans (and evalmix) prefix numeric-looking levels with the variable's name (site1 - site3)
    # (jsonlite writes a one-contrast vector as a scalar)
    assert list(ct["contrast"]) == list(np.atleast_1d(ref["label"]))
    np.testing.assert_allclose(ct["estimate"], ref["estimate"], rtol=2e-3, atol=2e-3)
    np.testing.assert_allclose(ct["se"], ref["se"], rtol=0.01)
    np.testing.assert_allclose(ct["p_value"], ref["p_value"], rtol=0.02, atol=2e-3)


@pytest.mark.parametrize("ref", REF["ns_bases"], ids=lambda r: r["call"])
def test_ns_basis_is_r_s(ref):
    """splines::ns fitted on the age column, evaluated inside and beyond the boundary knots."""
    from evalmix.model import build_fixed

    fd, _ = build_fixed(f"0 + {ref['call']}", pd.read_csv(REF_DIR / FILES["binary"]))
    got = fd.model_matrix(pd.DataFrame({"age": np.asarray(ref["at"], dtype=float)}))
    want = np.asarray(ref["basis"], dtype=float).reshape(got.shape)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


FULL = [cid for cid, c in CASES.items() if c["compare"] == "full"]


@pytest.mark.parametrize("cid", FULL)
def test_names_are_lme4s_verbatim(cid):
    """Coefficient names as ``names(fixef(fit))``, random-effect names as ``VarCorr``, term names
    as ``car::Anova(fit, type = 3)`` prints them (``I(age^2)``, ``poly(age, degree = 2)1``,
    ``factor(site, levels = c(3, 1, 2))1``, ``I(age > 4)TRUE``), in the fit, its tables and
    the printed forms. (Cases R parameterises differently, ``x:y`` without main effects, are
    left out: their columns are not the same columns.)"""
    c = CASES[cid]
    fit = fit_case(cid)
    names = [str(n) for n in np.atleast_1d(c["coef_names"])]
    assert list(fit.fixef.index) == names
    assert list(fit.vcov.index) == names and list(fit.vcov.columns) == names
    assert list(fit.coef_table()["term"]) == names
    assert list(fit.summary().tables["Fixed effects"]["term"]) == names
    text = repr(fit)
    assert all(n in text for n in names)
    vc = fit.varcorr
    vc = vc[vc["var2"] == ""]
    assert list(vc["group"]) == [str(g) for g in np.atleast_1d(c["vc_group"])]
    assert list(vc["var1"]) == [str(v) for v in np.atleast_1d(c["vc_var"])]
    terms = [str(t) for t in np.atleast_1d(c["anova_terms"])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert list(evalmix.anova(fit).to_frame()["term"]) == terms
