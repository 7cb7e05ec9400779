"""Parity of evalmix.glmer with lme4::glmer 1.1-31 (tests/reference/lme4_reference.R -> .json).

Tolerances (issue 3): log-likelihood never worse than lme4's by more than 1e-3; fixed effects within
2e-3 where lme4 converged without warnings; SEs within 1% relative; variance components within 2%
relative. The deviance function itself is checked at lme4's optimum and at a perturbed point,
where both implementations evaluate the same (theta, beta), to 1e-6 relative.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalmix import glmer
from evalmix.glmm.design import build_design
from evalmix.glmm.deviance import DenseSolver, LaplaceDeviance

REF = Path(__file__).resolve().parent / "reference"
FITS = {f["id"]: f for f in json.loads((REF / "lme4_reference.json").read_text())["fits"]}
SIM = [k for k, v in FITS.items() if v["data"] != "ai4math"]
AI4MATH = [k for k, v in FITS.items() if v["data"] == "ai4math"]


def r_name(name: str) -> str:
    """formulaic column name -> R's (``model[T.b]:lang[T.ES]`` -> ``modelb:langES``)."""
    return "(Intercept)" if name == "Intercept" else re.sub(r"([\w.]+)\[T\.(.*?)\]", r"\1\2", name)


def load(case: dict, ai4math_dir: Path | None) -> pd.DataFrame:
    if case["data"] == "ai4math":
        return pd.read_csv(ai4math_dir / "ai4math_runs.csv")
    return pd.read_csv(REF / case["data"])


_cache: dict[str, object] = {}


def fitted(case_id: str, data: pd.DataFrame):
    if case_id not in _cache:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            _cache[case_id] = glmer(FITS[case_id]["formula"], data)
    return _cache[case_id]


def check_fit(case_id: str, data: pd.DataFrame) -> None:
    ref = FITS[case_id]
    fit = fitted(case_id, data)
    assert fit.nobs == ref["nobs"]
    assert fit.df == ref["df"]
    # at least lme4's likelihood (lme4 stops early; a higher value is an improvement)
    assert fit.loglik >= ref["loglik"] - 1e-3, (fit.loglik, ref["loglik"])
    assert fit.bic == pytest.approx(-2 * fit.loglik + fit.df * np.log(fit.nobs))
    names = [r_name(n) for n in fit.fixef.index]
    assert names == ref["fixef_names"]
    lme4_ok = not ref["messages"] or all("singular" in m for m in ref["messages"])
    if lme4_ok:
        np.testing.assert_allclose(fit.fixef.to_numpy(), ref["fixef"], atol=2e-3, rtol=0)
    else:  # lme4 stopped early: same optimum region only
        np.testing.assert_allclose(fit.fixef.to_numpy(), ref["fixef"], atol=5e-2, rtol=0)
    se = np.sqrt(np.diag(fit.vcov.to_numpy()))
    np.testing.assert_allclose(se, ref["se"], rtol=0.01)
    vc = pd.DataFrame(ref["varcorr"])
    np.testing.assert_allclose(fit.varcorr["variance"].to_numpy(), vc["vcov"].to_numpy(),
                               rtol=0.02, atol=1e-3)
    assert list(fit.varcorr["var1"]) == list(vc["var1"])
    assert fit.singular == ref["singular"]
    assert list(fit.theta.index) == ref["theta_names"]


def check_deviance(case_id: str, data: pd.DataFrame) -> None:
    """Our Laplace deviance at lme4's parameter vectors equals lme4's devfun."""
    ref = FITS[case_id]
    design = build_design(ref["formula"], data)
    ld = LaplaceDeviance(design.X, design.k, design.m, design.terms)
    nt = len(ref["theta"])
    const = -2.0 * design.log_binom
    for vec, target in ((ref["theta"] + ref["fixef"], ref["dev_at_opt"]),
                        (ref["point"], ref["dev_at_point"])):
        vec = np.asarray(vec, dtype=float)
        dev = ld.dev(vec[:nt], vec[nt:]) + const
        assert dev == pytest.approx(target, rel=1e-6, abs=1e-6), (case_id, dev, target)


@pytest.mark.parametrize("case_id", SIM)
def test_simulated_fit_matches_lme4(case_id):
    check_fit(case_id, load(FITS[case_id], None))


@pytest.mark.parametrize("case_id", SIM)
def test_simulated_deviance_matches_lme4(case_id):
    check_deviance(case_id, load(FITS[case_id], None))


@pytest.mark.shared
@pytest.mark.parametrize("case_id", AI4MATH)
def test_ai4math_fit_matches_lme4(case_id, ai4math_dir):
    check_fit(case_id, load(FITS[case_id], ai4math_dir))


@pytest.mark.shared
@pytest.mark.parametrize("case_id", AI4MATH[:2])
def test_ai4math_deviance_matches_lme4(case_id, ai4math_dir):
    check_deviance(case_id, load(FITS[case_id], ai4math_dir))


def test_dense_solver_gives_the_nested_deviance():
    """The O(n) nested factorisation and the general dense Cholesky agree."""
    ref = FITS["item_run"]
    design = build_design(ref["formula"], load(ref, None))
    vec = np.asarray(ref["point"], dtype=float)
    nested = LaplaceDeviance(design.X, design.k, design.m, design.terms)
    dense = LaplaceDeviance(design.X, design.k, design.m, design.terms, DenseSolver(design.terms))
    assert type(nested.solver).__name__ == "NestedSolver"
    e1, e2 = nested.pirls(vec[:2], vec[2:]), dense.pirls(vec[:2], vec[2:])
    assert e1.dev == pytest.approx(e2.dev, rel=1e-12)
    np.testing.assert_allclose(nested.grad_beta(e1), dense.grad_beta(e2), rtol=1e-8, atol=1e-10)


def test_rx_standard_errors_match_lme4():
    ref = FITS["item_run"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = glmer(ref["formula"], load(ref, None), vcov_method="rx")
    assert fit.vcov_method == "rx"
    np.testing.assert_allclose(np.sqrt(np.diag(fit.vcov.to_numpy())), ref["se_rx"], rtol=0.01)


def test_ranef_and_predict_match_lme4():
    ref = FITS["item_run"]
    d = load(ref, None)
    fit = fitted("item_run", d)
    re_ = fit.ranef()
    for block in ref["ranef"]:
        sub = re_[re_["group"] == block["group"]].set_index("level").loc[block["levels"]]
        np.testing.assert_allclose(sub["mode"], np.asarray(block["mode"]).ravel(), atol=0.01)
        np.testing.assert_allclose(sub["sd"], np.asarray(block["sd"]).ravel(), rtol=0.01)
    np.testing.assert_allclose(fit.predict(d.head(6), type="response"), ref["predict_response"],
                               atol=2e-3)
    np.testing.assert_allclose(fit.predict(d.head(6), re=False), ref["predict_link_fixed"],
                               atol=2e-3)
