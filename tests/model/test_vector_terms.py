"""Vector-valued random-effect terms with three or four coefficients against lme4 1.1-31
(tests/reference/vector_term_reference.R on vector_terms.csv, make_vector_term_data.py).

Correlated factor slopes by group, ``(0 + factor(run)|group)`` with a rank-one or rank-two
covariance on four to seven groups, numeric slopes: every optimum lies on the boundary of theta
(lme4 calls all of them singular). The reference is the better of lme4's default optimizer and
bobyqa. Tolerances as in tests/model/test_formula_sweep.py: log-likelihood at or above lme4's (to 1e-3),
fixed effects within 2e-3, SEs within 1% where both fits reach the same optimum (within 0.01).
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import FitWarning
from evalmix.model import term_lambdas
from evalmix.glmm import boundary_probes, build_design, build_deviance
from evalmix.glmm.optimize import ProfiledFit

REF_DIR = Path(__file__).parents[1] / "reference"
CASES = json.loads((REF_DIR / "vector_term_reference.json").read_text())["cases"]
DATA = pd.read_csv(REF_DIR / "vector_terms.csv")


def data(cid: str) -> pd.DataFrame:
    # the columns a set does not use are empty there
    return DATA[DATA["set"] == cid].dropna(axis=1, how="all").reset_index(drop=True)


@pytest.mark.parametrize("cid", list(CASES))
def test_vector_term_reaches_lme4s_optimum(cid):
    c = CASES[cid]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        fit = evalmix.glmer(c["formula"], data(cid))
    assert fit.loglik >= c["loglik"] - 1e-3
    assert fit.df == c["df"] and fit.nobs == c["nobs"]
    if fit.loglik > c["loglik"] + 0.01:
        return  # a better optimum than lme4's: its estimates are not lme4's
    np.testing.assert_allclose(fit.fixef.to_numpy(), c["beta"], rtol=2e-3, atol=2e-3)
    se = np.sqrt(np.diag(fit.vcov.to_numpy()))
    np.testing.assert_allclose(se, c["se"], rtol=0.01)
    vc = fit.varcorr
    np.testing.assert_allclose(vc.loc[vc["var2"] == "", "sd"].to_numpy(), c["vc_sd"], atol=0.02)


def test_lme4s_default_optimizer_is_not_always_at_the_optimum():
    # the reference is the better of lme4's two optimizers, and they differ somewhere
    gaps = [c["loglik"] - min(c["loglik_default"], c["loglik_bobyqa"]) for c in CASES.values()]
    assert max(gaps) > 1e-4


def test_mirror_probe_leaves_the_fit_and_reverses_the_boundary_slope():
    # a point on the face L[0, 0] = 0 of the (0 + factor(run)|group) term, where L-BFGS-B
    # stopped for runs4_rank1_mirror before the mirrored probe: column 0 of Lambda is
    # (0, -a, b, -c); its mirror image (0, a, -b, c) gives the same Lambda Lambda'
    d = data("runs4_rank1_mirror")
    design = build_design(CASES["runs4_rank1_mirror"]["formula"], d)
    ld = build_deviance(design)
    pf = ProfiledFit(ld, np.zeros(design.X.shape[1]), design.theta_lower)
    term = design.terms[1]
    L = np.zeros((4, 4))
    L[1:, 0] = [-0.3, 0.3, -0.2]
    theta = np.concatenate([[1.0], term.theta_from_lambda(L)])
    mirror = np.concatenate([[1.0], term.theta_from_lambda(-L)])
    dev, dev_mirror = pf.inner(theta).dev, pf.inner(mirror).dev
    assert dev_mirror == pytest.approx(dev, rel=1e-9, abs=1e-7)
    # one-sided slopes along L[0, 0] from the two equivalent points have opposite signs
    e = np.zeros_like(theta)
    e[1] = 1e-4
    slope = (pf.inner(theta + e).dev - dev) / 1e-4
    slope_mirror = (pf.inner(mirror + e).dev - dev_mirror) / 1e-4
    assert slope * slope_mirror < 0
    assert abs(slope + slope_mirror) < 0.05 * abs(slope)
    # and boundary_probes offers the mirror image with a small diagonal
    probes = boundary_probes(design.terms, theta)
    flipped = [p for p in probes
               if np.allclose(term_lambdas(design.terms, p)[1][1:, 0], -L[1:, 0])]
    assert flipped and all(term_lambdas(design.terms, p)[1][0, 0] > 0 for p in flipped)
