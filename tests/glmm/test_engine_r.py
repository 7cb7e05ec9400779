"""The GLMM engine against lme4 (tests/reference/engine_reference.R, which wrote
engine_reference.json and the CSV files it names):

- a shallow interior minimum of the profiled deviance close to the boundary (theta = 0.0103,
  the deviance 4e-3 below theta = 0 and 10 above it at theta = 0.1): lme4 finds the interior
  point, and so must evalmix (not a singular fit at theta = 0);
- ``nAGQ = 0`` (lme4's first stage) on lme4's cbpp, data/example_runs.csv and glmm_item_run.csv;
- data columns named like R functions (``I``, ``N``, ``log``, ``C``, ``exp``), which R reads as
  columns where a value is read and as functions where one is called.

Tolerances as the other lme4 parity tests: log-likelihood at or above lme4's less 1e-3 (and not
more than 0.02 above: the same model), fixed effects within 2e-3, SEs within 1%.
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

REF_DIR = Path(__file__).parents[1] / "reference"
ROOT = Path(__file__).resolve().parents[2]
REF = json.loads((REF_DIR / "engine_reference.json").read_text())
DATA = {"engine_cbpp.csv": REF_DIR / "engine_cbpp.csv",
        "example_runs.csv": ROOT / "data" / "example_runs.csv",
        "glmm_item_run.csv": REF_DIR / "glmm_item_run.csv",
        "glmm_crossed.csv": REF_DIR / "glmm_crossed.csv", "glmm_slope.csv": REF_DIR / "glmm_slope.csv"}


def read(path: Path) -> pd.DataFrame:
    # cbpp's herd and period are factors in R (integer codes in the CSV)
    return pd.read_csv(path, dtype={"herd": str, "period": str})


def check(fit: evalmix.GlmerResult, ref: dict, beta_tol: float = 2e-3) -> None:
    # R's names, verbatim (I(log^2), exp(exp), Cv, period2, modelmodel-B)
    assert list(fit.fixef.index) == [str(n) for n in np.atleast_1d(ref["coef_names"])]
    assert fit.loglik >= ref["loglik"] - 1e-3
    assert fit.loglik <= ref["loglik"] + 0.02
    assert fit.df == ref["df"] and fit.nobs == ref["nobs"]
    np.testing.assert_allclose(fit.fixef.to_numpy(), np.atleast_1d(ref["beta"]), rtol=beta_tol,
                               atol=beta_tol)
    se = np.sqrt(np.diag(fit.vcov.to_numpy()))
    np.testing.assert_allclose(se, np.atleast_1d(ref["se"]), rtol=0.01)


# --- a shallow interior minimum near the boundary --------------------------------------------------

def shallow_fit(**kw) -> evalmix.GlmerResult:
    with warnings.catch_warnings():
        warnings.simplefilter("error", evalmix.SingularFitWarning)
        return evalmix.glmer(REF["shallow"]["formula"], read(REF_DIR / "engine_shallow.csv"), **kw)


def test_the_reference_has_a_shallow_interior_minimum():
    r = REF["shallow"]
    dev = dict(zip(r["profile_theta"], r["profile_deviance"]))
    # 4e-3 below theta = 0 at theta = 0.0103, but 10 above at the old single probe (0.1)
    assert 1e-3 < r["minus2loglik_theta0"] - r["minus2loglik"] < 1e-2
    assert dev[0.1] - dev[0] > 5 and dev[0.0103] < dev[0]
    assert 0.005 < r["theta"] < 0.02 and not r["singular"]


def test_shallow_interior_minimum_is_found_as_lme4_finds_it():
    r = REF["shallow"]
    fit = shallow_fit()
    assert not fit.singular
    assert fit.theta.iloc[0] == pytest.approx(r["theta"], rel=0.02)
    assert fit.deviance == pytest.approx(r["minus2loglik"], abs=1e-4)
    check(fit, r, beta_tol=1e-4)


def test_shallow_minimum_from_a_start_on_either_side():
    """From theta = 1 L-BFGS-B steps onto the bound; from the bound the gradient is 0: both
    must end at the interior minimum."""
    r = REF["shallow"]
    for theta0 in (0.0, 1.0, 3.0):
        fit = shallow_fit(start={"theta": [theta0]})
        assert fit.theta.iloc[0] == pytest.approx(r["theta"], rel=0.02), theta0
        assert fit.loglik >= r["loglik"] - 1e-6


def test_a_truly_singular_fit_stays_singular():
    """Where lme4's optimum is on the boundary the probes find nothing lower: the fit is
    reported singular, as lme4 reports it."""
    r = REF["singular"]
    d = read(REF_DIR / "engine_shallow.csv")
    d["k"] = r["k"]
    with pytest.warns(evalmix.SingularFitWarning):
        fit = evalmix.glmer(r["formula"], d)
    assert r["singular"] and r["theta"] == 0.0
    assert fit.singular and fit.theta.iloc[0] < 1e-4
    check(fit, r, beta_tol=1e-4)


# --- nAGQ = 0 ----------------------------------------------------------------------------------------

NAGQ0 = REF["nagq0"]


@pytest.mark.parametrize("cid", list(NAGQ0))
def test_nagq0_matches_lme4_first_stage(cid):
    c = NAGQ0[cid]
    fit = evalmix.glmer(c["formula"], read(DATA[c["data"]]), nAGQ=0)
    check(fit, c)
    np.testing.assert_allclose(fit.theta.to_numpy(), np.atleast_1d(c["theta"]), rtol=0.01, atol=1e-3)
    assert fit.nagq == 0 and fit.vcov_method == "rx"
    assert fit.deviance == pytest.approx(c["minus2loglik"], abs=5e-3)


def test_nagq0_is_below_the_laplace_fit_and_cheaper():
    c = NAGQ0["cbpp"]
    d = read(DATA[c["data"]])
    fast = evalmix.glmer(c["formula"], d, nAGQ=0)
    full = evalmix.glmer(c["formula"], d)
    # lme4's first stage maximises a different objective: its Laplace likelihood is lower
    assert fast.loglik < full.loglik
    assert fast.optimizer.pirls_iterations < full.optimizer.pirls_iterations


def test_nagq0_deviance_function_is_a_function_of_theta():
    c = NAGQ0["cbpp"]
    f = evalmix.glmer(c["formula"], read(DATA[c["data"]]), nAGQ=0, devfun_only=True)
    assert f.lower.tolist() == [0.0] and f.start.tolist() == [1.0]
    # lme4's PIRLS stops at tolPwrss = 1e-7, short of the joint mode evalmix reaches: lme4's
    # value is 1e-4 higher at its own theta
    assert f(np.atleast_1d(c["theta"])) == pytest.approx(c["minus2loglik"], abs=2e-4)
    assert f(np.atleast_1d(c["theta"])) <= c["minus2loglik"]
    assert "nAGQ = 0" in repr(f)


@pytest.mark.parametrize("bad", [-1, 1.5, True, "0"])
def test_nagq_must_be_a_non_negative_integer(bad):
    with pytest.raises(ValueError, match="nAGQ must be an integer >= 0"):
        evalmix.glmer("correct ~ model + (1|item)", read(DATA["glmm_item_run.csv"]), nAGQ=bad)


def test_nagq0_with_a_prior_is_refused():
    with pytest.raises(ValueError, match="nAGQ = 0 is not available with fixef_prior"):
        evalmix.glmer("correct ~ model + (1|item)", read(DATA["glmm_item_run.csv"]), nAGQ=0,
                      fixef_prior="normal")


def test_cli_fit_takes_nagq0(capsys):
    from evalmix.cli import main

    c = NAGQ0["item_run"]
    assert main(["fit", str(DATA[c["data"]]), "--formula", c["formula"], "--nagq", "0"]) == 0
    out = capsys.readouterr().out
    assert "Gauss-Hermite Quadrature, nAGQ = 0) [glmerMod]" in out  # lme4's title
    assert "-587.0050" in out  # logLik (lme4: -587.0067)
    assert "Fixed effects (Wald z; log-odds):" in out


# --- R's lookup order: columns named like functions -----------------------------------------------

LOOKUP = REF["lookup"]


@pytest.mark.parametrize("cid", list(LOOKUP))
def test_columns_named_like_functions_are_columns(cid):
    c = LOOKUP[cid]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        fit = evalmix.glmer(c["formula"], pd.read_csv(REF_DIR / "engine_lookup.csv"))
    check(fit, c)


def test_offset_reads_the_column_i_not_the_function():
    d = pd.read_csv(REF_DIR / "engine_lookup.csv")
    a = evalmix.glmer("y ~ grp + offset(log(I/N)) + (1|item)", d)
    b = evalmix.glmer("y ~ grp + (1|item)", d, offset=np.log(d["I"] / d["N"]))
    assert a.loglik == pytest.approx(b.loglik, abs=1e-8)
    np.testing.assert_allclose(a.fixef.to_numpy(), b.fixef.to_numpy(), atol=1e-7)
    # predictions on new rows evaluate the formula's offset with the same lookup (an offset
    # given as an argument is not part of predictions on new rows, as in lme4)
    new = d.head(5)
    np.testing.assert_allclose(a.predict(new, re=False),
                               b.predict(new, re=False) + np.log(new["I"] / new["N"]), atol=1e-6)


# --- printing as lme4 prints a merMod ------------------------------------------------------------

# lme4's print(fit) of this model (R 4.2.2, lme4 1.1-31), with the Variance column added and
# without R's "Data:" line; each line ends at its "$" (trailing spaces as R prints them)
SINGULAR_TEXT = "\n".join(line[:-1] for line in """\
Generalized linear mixed model fit by maximum likelihood (Laplace$
  Approximation) [glmerMod]$
 Family: binomial  ( logit )$
Formula: cbind(k, n - k) ~ x + (1 | item)$
      AIC       BIC    logLik  deviance  df.resid $
 303.1335  308.2002 -148.5668  297.1335        37 $
Random effects:$
 Groups Name        Variance Std.Dev.$
 item   (Intercept) 0        0       $
Number of obs: 40, groups:  item, 40$
Fixed Effects:$
(Intercept)            x  $
    -0.3115       0.3975  $
optimizer (profiled L-BFGS-B (theta) + Newton (beta)) convergence code: 0 (OK) ; 0 optimizer \
warnings; 1 lme4 warnings $
boundary (singular) fit: see help('isSingular')$""".splitlines())


def test_print_is_lme4s_merMod_layout_with_the_singular_line():
    r = REF["singular"]
    d = read(REF_DIR / "engine_shallow.csv")
    d["k"] = r["k"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = evalmix.glmer(r["formula"], d)
    assert fit.lme4_text() == SINGULAR_TEXT
    assert repr(fit) == str(fit) == SINGULAR_TEXT + "\n\n" + fit.wald_text()
    assert fit.wald_text().splitlines()[0] == "Fixed effects (Wald z; log-odds):"
    # the numbers printed are lme4's (R: logLik -148.5668, beta -0.3115 0.3975)
    assert f"{r['loglik']:.4f}" in SINGULAR_TEXT
    assert [f"{b:.4f}" for b in r["beta"]] == ["-0.3115", "0.3975"]
    html = fit._repr_html_()
    assert html.startswith("<pre>") and "[glmerMod]" in html and "<table" in html
    # the formula and names are escaped in HTML (a comparison reads ">")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        gt = evalmix.glmer("cbind(k, n - k) ~ I(x > 0.5) + (1|item)", d)
    assert "I(x &gt; 0.5)TRUE" in gt._repr_html_() and "I(x > 0.5)TRUE" not in gt._repr_html_()


def test_print_shows_correlations_and_no_convergence_line_when_clean():
    lme4 = json.loads((REF_DIR / "lme4_reference.json").read_text())
    ref = next(f for f in lme4["fits"] if f["formula"] == "correct ~ x + (1 + x|g)")
    fit = evalmix.glmer(ref["formula"], pd.read_csv(REF_DIR / "glmm_slope.csv"))
    lines = repr(fit).splitlines()
    start = lines.index("Random effects:")
    assert lines[start + 1].split() == ["Groups", "Name", "Variance", "Std.Dev.", "Corr"]
    first, second = lines[start + 2].split(), lines[start + 3].split()
    assert first[:2] == ["g", "(Intercept)"] and second[0] == "x" and len(second) == 4
    assert lines[start + 4] == "Number of obs: 1000, groups:  g, 40"
    assert lines[start + 5] == "Fixed Effects:" and lines[start + 6].split() == ["(Intercept)", "x"]
    # the column layout: each value starts under its header
    head = lines[start + 1]
    assert lines[start + 3].index(second[3]) == head.index("Corr")
    assert lines[start + 3].index(second[1]) == head.index("Variance")
    aic = lines.index(next(x for x in lines if x.split()[:1] == ["AIC"]))
    assert lines[aic].split() == ["AIC", "BIC", "logLik", "deviance", "df.resid"]
    assert lines[aic + 1].split()[-1] == "995" and lines[aic + 1].endswith("995 ")
    assert not any(line.startswith("optimizer (") for line in lines)
