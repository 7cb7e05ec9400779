"""Separation in glmer: detection (against detectseparation's linear program), the limit fit
(against lme4 on the rows that remain), and the blme remedy (against blme::bglmer).

References: tests/reference/separation_reference.R -> separation_reference.json, on
separation_runs.csv / separation_counts.csv (make_separation_data.py) and brglm2's endometrial.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from evalmix import glmer
from evalmix.core.errors import FitWarning, FormulaError, SeparationWarning
from evalmix.mixed.separation import detect_separation

REF = Path(__file__).parents[1] / "reference"
R = json.loads((REF / "separation_reference.json").read_text())
RUNS = pd.read_csv(REF / "separation_runs.csv")
COUNTS = pd.read_csv(REF / "separation_counts.csv")
SEPARATED = [k for k in R["cases"] if k != "none"]


def _data(case: dict) -> pd.DataFrame:
    return RUNS if case["data"] == "runs" else COUNTS


def _verdicts(case: dict) -> np.ndarray:
    return np.array([{"Inf": np.inf, "-Inf": -np.inf, "0": 0.0}[v] for v in case["verdict"].values()])


_FITS: dict[str, object] = {}


def _fit(case_id: str, vcov_method: str = "hessian"):
    key = f"{case_id}/{vcov_method}"
    if key not in _FITS:
        case = R["cases"][case_id]
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fit = glmer(case["formula"], _data(case), vcov_method=vcov_method)
        _FITS[key] = (fit, [x for x in w if issubclass(x.category, SeparationWarning)])
    return _FITS[key]


@pytest.mark.parametrize("case_id", SEPARATED)
def test_separation_is_named_recorded_and_does_not_crash(case_id):
    fit, warns = _fit(case_id)
    case = R["cases"][case_id]
    assert len(warns) == 1
    msg = str(warns[0].message)
    sep = fit.separation
    assert sep is not None and msg in fit.messages
    # the terms with infinite estimates and the remedies are named
    for name in sep.infinite:
        assert repr(name) in msg
    assert "fixef_prior='normal(0, 2.5)'" in msg and "evalmix.bayes.glmer" in msg
    assert sep.n_rows == case["n_dropped"]
    if case_id in ("nonref", "counts"):
        assert "every response is a success where model = 'model-B'" in msg
    if case_id == "level0":
        assert "every response is a failure where model = 'model-C'" in msg
    if case_id == "slice":
        assert "model = 'model-B', language = 'ES'" in msg
    assert sep.kind == ("complete" if case_id in ("intercept", "all1_model") else "quasi-complete")


@pytest.mark.parametrize("case_id", list(R["cases"]))
def test_verdicts_match_detectseparation(case_id):
    """Infinite directions as detectseparation's linear program reports them, and as the
    divergence of glm standard errors (check_infinite_estimates) confirms."""
    fit, _ = _fit(case_id)
    case = R["cases"][case_id]
    expected = _verdicts(case)
    growth = np.array(list(case["se_growth"].values()))
    assert np.array_equal(np.isinf(expected), growth > 1e3)  # the two R checks agree
    got = fit.separation.verdicts.to_numpy() if fit.separation is not None else np.zeros(len(expected))
    np.testing.assert_array_equal(got, expected)
    # the reported estimates carry the verdicts; SE, z, p and CI are NaN there
    ct = fit.coef_table()
    inf = np.isinf(expected)
    np.testing.assert_array_equal(ct["estimate"].to_numpy()[inf], expected[inf])
    assert ct.loc[inf, ["se", "statistic", "p_value", "conf_low", "conf_high"]].isna().all().all()
    assert np.isfinite(ct.loc[~inf, ["estimate", "se", "p_value"]].to_numpy()).all()


@pytest.mark.parametrize("case_id", [k for k in R["cases"] if "limit" in R["cases"][k]])
def test_limit_fit_matches_lme4_on_remaining_rows(case_id):
    """Finite parts = lme4 on the rows not fitted perfectly (which add 0 to the likelihood).

    lme4 ran with tolPwrss = 1e-12, so its SEs are those of the exact Hessian."""
    fit, _ = _fit(case_id, "hessian_exact")
    lim = R["cases"][case_id]["limit"]
    assert fit.loglik >= lim["loglik"] - 1e-4
    assert fit.loglik == pytest.approx(lim["loglik"], abs=1e-3)
    np.testing.assert_allclose(fit.theta.to_numpy(), lim["theta"], rtol=1e-3)
    X = fit.fixed_design.model_matrix(pd.DataFrame(lim["patterns"]))
    if fit.separation is not None:
        est, cov = fit.separation.combine(X)
    else:
        est, cov = X @ fit.fixef.to_numpy(), X @ fit.vcov.to_numpy() @ X.T
    np.testing.assert_allclose(est, lim["eta"], atol=2e-3)
    np.testing.assert_allclose(np.sqrt(np.diag(cov)), lim["se"], rtol=2e-3)


def test_complete_separation_reports_no_finite_estimate():
    fit, _ = _fit("intercept")
    assert fit.fixef["(Intercept)"] == np.inf
    assert np.isnan(fit.theta).all() and fit.loglik == 0.0 and not fit.converged
    assert np.isnan(fit.ranef()["mode"]).all()
    text = str(fit.summary())
    assert "inf" in text and "complete separation" in text and "no standard errors" in text
    np.testing.assert_array_equal(fit.predict(RUNS.head(3), type="response"), [1.0, 1.0, 1.0])


def test_predictions_and_residuals_in_the_limit():
    fit, _ = _fit("nonref")
    p = fit.predict(RUNS, type="response", re=False)
    b = RUNS["model"] == "model-B"
    assert (p[b] == 1.0).all() and (p[~b] < 1).all()
    r = fit._model.pearson_residuals()
    assert np.isfinite(r).all() and (r[b.to_numpy()] == 0).all()
    assert "inf" in str(fit.summary())


def test_endometrial_verdicts():
    """Heinze & Schemper's endometrial data: NV is quasi-separated (detectseparation: Inf)."""
    d = pd.read_csv(REF / "endometrial.csv")
    X = np.column_stack([np.ones(len(d)), d["NV"], d["PI"], d["EH"]])
    got = detect_separation(X, d["HG"].to_numpy(), np.ones(len(d)), R["endometrial"]["columns"])
    expected = [{"Inf": np.inf, "-Inf": -np.inf, "0": 0.0}[v] for v in R["endometrial"]["verdict"].values()]
    np.testing.assert_array_equal(got.to_numpy(), expected)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 2), st.integers(0, 3), st.integers(0, 1)),
                min_size=4, max_size=30),
       st.integers(1, 3))
def test_verdicts_do_not_depend_on_row_order_or_replication(rows, rep):
    """Infinite or finite is a property of the set of (x, y) pairs: permuting or replicating the
    rows never changes which coefficients diverge."""
    from evalmix.mixed.separation import independent_columns
    lev = np.array([r[0] for r in rows])
    x = np.array([r[1] for r in rows], dtype=float)
    y = np.array([r[2] for r in rows], dtype=float)
    X = np.column_stack([np.ones(len(rows)), lev == 1, lev == 2, x])
    X = X[:, independent_columns(X)]
    base = detect_separation(X, y, np.ones(len(y)))
    perm = np.random.default_rng(len(rows)).permutation(len(rows))
    Xr, yr = np.repeat(X[perm], rep, axis=0), np.repeat(y[perm], rep)
    again = detect_separation(Xr, yr, np.ones(len(yr)))
    assert np.isinf(base.to_numpy()).any() == np.isinf(again.to_numpy()).any()
    # a table with both outcomes in every distinct row is never separated
    if all(((X == r).all(axis=1) & (y == 1)).any() and ((X == r).all(axis=1) & (y == 0)).any()
           for r in X):
        assert not np.isinf(base.to_numpy()).any()


# --------------------------------------------------------------------------- the blme remedy
@pytest.mark.parametrize("case_id", list(R["blme_fits"]))
def test_fixef_prior_matches_blme(case_id):
    case = R["blme_fits"][case_id]
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeparationWarning)
        fit = glmer(case["formula"], _data(case), fixef_prior=case["prior"])
    np.testing.assert_allclose(fit.fixef.to_numpy(), list(case["fixef"].values()), atol=3e-3)
    np.testing.assert_allclose(np.sqrt(np.diag(fit.vcov.to_numpy())), list(case["se"].values()),
                               rtol=0.01)
    np.testing.assert_allclose(fit.theta.to_numpy(), case["theta"], rtol=1e-3)
    np.testing.assert_allclose(fit.fixef_prior.sd[:len(case["sd"])], case["sd"])
    # the penalised objective is minimised at least as well as blme does it
    objective = -2 * fit.loglik + fit.prior_deviance
    assert objective <= case["objective"] + 1e-4
    assert objective == pytest.approx(case["objective"], abs=1e-2)
    assert fit.loglik == pytest.approx(case["loglik"], abs=1e-3)
    assert fit.prior_deviance == pytest.approx(case["prior_dev"], abs=1e-2)
    assert "Prior dev" in str(fit.summary())


def test_fixef_prior_in_the_intercept_direction():
    """All responses 1 (blme refuses a constant response): the prior alone fixes the intercept,
    whose estimate solves the penalised score equation sum(1 - mu) = beta / sd^2."""
    fit = glmer("y_all1 ~ 1 + (1|item)", RUNS, fixef_prior="normal")
    assert fit.fixef_prior.sd.tolist() == [10.0]
    assert fit.separation is None and np.isfinite(fit.fixef["(Intercept)"])
    assert any("complete separation" in m for m in fit.messages)
    b = fit.fixef["(Intercept)"]  # the item SD is 0 here (singular), so the score is exact
    assert fit.theta.iloc[0] == 0.0
    assert len(RUNS) / (1 + np.exp(b)) == pytest.approx(b / 10.0**2, rel=1e-4)
    with pytest.warns(FitWarning, match="3 sds for 1 fixed effect"):
        glmer("y_all1 ~ 1 + (1|item)", RUNS, fixef_prior=[10, 2, 1])


def test_fixef_prior_on_separated_data_notes_the_separation():
    case = R["blme_fits"]["nonref_default"]
    fit = glmer(case["formula"], _data(case), fixef_prior="normal(0, 2.5)")
    assert fit.separation is None and np.isfinite(fit.fixef).all()
    assert any("prior keeps the estimates finite" in m for m in fit.messages)


@pytest.mark.parametrize("spec, sd", [
    ("normal(0, 2.5)", [2.5, 2.5, 2.5]),
    ("normal", [10, 2.5, 2.5]),
    ("normal(sd = c(10, 2.5))", [10, 2.5, 2.5]),
    ("normal(sd = [1, 2, 3])", [1, 2, 3]),
    (2.0, [2, 2, 2]),
    ([4, 1], [4, 1, 1]),
    ({"Intercept": 10, "": 1}, [10, 1, 1]),
])
def test_fixef_prior_specifications(spec, sd):
    from evalmix.glmm.prior import parse_fixef_prior
    names = ["Intercept", "model[T.b]", "model[T.c]"]
    np.testing.assert_allclose(parse_fixef_prior(spec, names).sd, sd)


@pytest.mark.parametrize("spec, match", [
    ("cauchy(0, 2.5)", "not understood"),
    ("normal(0, -1)", "positive"),
    ({"modell[T.b]": 1, "": 2}, "unknown fixed effect"),
    ({"Intercept": 1}, "no sd for"),
])
def test_fixef_prior_bad_specifications(spec, match):
    with pytest.raises(FormulaError, match=match):
        glmer("y_none ~ model + (1|item)", RUNS, fixef_prior=spec)


# ------------------------------------------------------------------ downstream: emmeans, anova, CLI
def test_emmeans_contrast_anova_name_the_divergent_rows():
    from evalmix import anova, contrast, emmeans

    fit, _ = _fit("ref")
    with pytest.warns(SeparationWarning, match=r"marginal mean of model-A \(\+inf\)"):
        emm = emmeans(fit, "model")
    t = emm.to_frame().set_index("model")
    assert t.loc["model-A", "estimate"] == np.inf and np.isnan(t.loc["model-A", "se"])
    # the finite means are lme4's fit on the rows that remain (there model-B is the reference)
    lim = R["cases"]["ref"]["limit"]
    eta = dict(zip(pd.DataFrame(lim["patterns"])["model"], lim["eta"]))
    assert t.loc["model-B", "estimate"] == pytest.approx(eta["model-B"], abs=2e-3)
    assert t.loc["model-C", "estimate"] == pytest.approx(eta["model-C"], abs=2e-3)
    with pytest.warns(SeparationWarning):
        resp = emmeans(fit, "model", type="response").to_frame().set_index("model")
    assert resp.loc["model-A", "estimate"] == 1.0 and np.isnan(resp.loc["model-A", "se"])
    with pytest.warns(SeparationWarning, match=r"contrast \(model-A\) - \(model-B\) \(\+inf\)"):
        con = contrast(emm, "pairwise").to_frame().set_index("contrast")
    finite = con.loc["(model-B) - (model-C)"]
    assert np.isfinite(finite[["estimate", "se", "p_value"]].astype(float)).all()
    assert finite["estimate"] == pytest.approx(eta["model-B"] - eta["model-C"], abs=3e-3)
    assert con.loc["(model-A) - (model-B)", "estimate"] == np.inf
    with pytest.warns(SeparationWarning, match=r"no Wald test for \['\(Intercept\)', 'model'\]"):
        tab = anova(fit).to_frame()
    assert tab[["statistic", "p_value"]].isna().all().all()


def test_anova_keeps_the_finite_terms():
    from evalmix import anova

    fit, _ = _fit("slice")
    with pytest.warns(SeparationWarning, match="model:language"):
        tab = anova(fit).to_frame().set_index("term")
    assert np.isnan(tab.loc["model:language", "statistic"])
    assert np.isfinite(tab.loc[["(Intercept)", "model", "language"], "statistic"]).all()


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_cli_fit_on_separated_data(tmp_path, capsys):
    import os
    import subprocess
    import sys

    from evalmix.cli import main

    path = tmp_path / "sep.csv"
    RUNS.assign(correct=RUNS["y_nonref"]).to_csv(path, index=False)
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[2] / "src")}
    args = ["fit", str(path), "--formula", "correct ~ model + (1|item)", "--emmeans", "model",
            "--anova"]
    # the installed entry point once, in its own process; the other answers in this one (the
    # CLI prints the warnings it records itself, so stderr reads the same)
    res = subprocess.run([sys.executable, "-m", "evalmix", *args], capture_output=True, text=True,
                         env=env)
    assert res.returncode == 0, res.stderr
    assert "SeparationWarning" in res.stderr and "'modelmodel-B' (+inf)" in res.stderr
    assert "Traceback" not in res.stderr

    def run(*extra: str) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([*args, *extra])
        out = capsys.readouterr()
        return code, out.out, out.err

    code, stdout, _ = run("--json")
    assert code == 0

    def strict(token):
        raise ValueError(f"non-standard JSON constant {token}")

    doc = json.loads(stdout, parse_constant=strict)
    sep = doc["fit"]["separation"]
    assert sep["infinite"] == ["modelmodel-B"] and sep["kind"] == "quasi-complete"
    verdicts = {r["term"]: r["verdict"] for r in sep["table"]}
    assert verdicts == {"(Intercept)": "finite", "modelmodel-B": "+inf",
                        "modelmodel-C": "finite"}
    coef = {r["term"]: r for r in doc["fit"]["coefficients"]}
    code, stdout, stderr = run("--json", "--fixef-prior", "normal(0, 2.5)")
    assert code == 0 and "SeparationWarning" not in stderr
    pcoef = {r["term"]: r for r in json.loads(stdout)["fit"]["coefficients"]}
    assert np.isfinite(pcoef["modelmodel-B"]["estimate"])
    code, _, stderr = run("--fixef-prior", "cauchy(0, 2.5)")
    assert code == 2 and "fixef_prior" in stderr and "Traceback" not in stderr
    assert coef["modelmodel-B"]["estimate"] is None
    assert coef["(Intercept)"]["estimate"] == pytest.approx(R["cases"]["nonref"]["limit"]["fixef"]["(Intercept)"], abs=2e-3)
