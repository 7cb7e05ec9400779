"""fit_many: one GLMM per benchmark, against lme4 fitted per benchmark (fit_many_reference.R)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix import DataError, FitWarning, FormulaError, fit_many, glmer

REF = Path(__file__).parents[1] / "reference"
FORMULA = "correct ~ model + (1|item) + (1|item:run)"


@pytest.fixture(scope="module")
def bench() -> pd.DataFrame:
    return pd.read_csv(REF / "fit_many_benchmarks.csv")


@pytest.fixture(scope="module")
def result(bench: pd.DataFrame) -> evalmix.FitManyResult:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        return fit_many(FORMULA, bench, by="benchmark")


def _lme4_term(term: str) -> str:
    return term  # evalmix names the coefficients as lme4 does


def test_matches_lme4_fitted_per_benchmark(bench: pd.DataFrame, result: evalmix.FitManyResult) -> None:
    ref = json.loads((REF / "fit_many_reference.json").read_text())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        exact = fit_many(FORMULA, bench, by="benchmark", vcov_method="hessian_exact", keep_fits=False)
    tab = result.table
    for rec in ref["fits"]:
        rows = tab[tab["benchmark"] == rec["benchmark"]]
        if rec["error"]:
            continue
        assert [_lme4_term(t) for t in rows["term"]] == rec["term"]  # delta dropped from chem
        # the optimiser stops where lme4 does or higher (on math 0.004 higher in log-likelihood,
        # which moves the estimates by up to 3e-3)
        fit = result.fits[(rec["benchmark"],)]
        assert fit.loglik == pytest.approx(rec["loglik"], abs=5e-3) and fit.loglik >= rec["loglik"] - 1e-5
        np.testing.assert_allclose(rows["estimate"], rec["estimate"], atol=5e-3, rtol=0)
        # Default SEs: lme4's finite-difference Hessian of its early-stopped deviance.  lme4's
        # PIRLS takes two iterations from its first-stage start on chem and math (one Newton step
        # short of the mode) but three on code (its Hessian is then the exact one); the engine
        # follows it to 0.1% on all three.
        np.testing.assert_allclose(rows["se"], rec["se"], rtol=1e-3)
        np.testing.assert_allclose(rows["p_value"], rec["p_value"], atol=5e-3, rtol=0.05)
        if rec["benchmark"] == "code":
            rows_x = exact.table[exact.table["benchmark"] == "code"]
            np.testing.assert_allclose(rows_x["se"], rec["se"], rtol=1e-4)
        assert (rows["nobs"] == rec["nobs"]).all()
        assert (rows["singular"] == rec["singular"]).all() and (rows["error"] == "").all()


def test_a_failing_group_is_a_row_not_an_exception(bench: pd.DataFrame,
                                                   result: evalmix.FitManyResult) -> None:
    ref = {r["benchmark"]: r for r in json.loads((REF / "fit_many_reference.json").read_text())["fits"]}
    assert "> 1 sampled level" in ref["tiny"]["error"]  # lme4 refuses it too
    tiny = result.table[result.table["benchmark"] == "tiny"]
    assert len(tiny) == 1 and tiny["term"].isna().all() and tiny["estimate"].isna().all()
    assert "DataError" in tiny["error"].iloc[0] and "one level" in tiny["error"].iloc[0]
    assert list(result.failed["benchmark"]) == ["tiny"]
    assert list(result.groups["benchmark"]) == ["chem", "code", "math", "tiny"]
    with pytest.warns(FitWarning, match=r"1 of 4 group fit\(s\) failed \(benchmark='tiny'\)"):
        fit_many(FORMULA, bench, by="benchmark", keep_fits=False)


def test_same_numbers_as_glmer_on_each_subset(bench: pd.DataFrame, result: evalmix.FitManyResult) -> None:
    sub = bench[bench["benchmark"] == "code"]
    own = glmer(FORMULA, sub).coef_table().to_frame()
    mine = result.table[result.table["benchmark"] == "code"].reset_index(drop=True)
    pd.testing.assert_frame_equal(mine[own.columns], own, check_dtype=False)  # term: object vs str
    assert mine["converged"].all()


def test_results_do_not_depend_on_n_jobs(bench: pd.DataFrame, result: evalmix.FitManyResult) -> None:
    d = bench[bench["benchmark"].isin(["chem", "tiny"])]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        two = fit_many(FORMULA, d, by="benchmark", n_jobs=2, keep_fits=False)
    want = result.table[result.table["benchmark"].isin(["chem", "tiny"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(two.table, want)
    assert two.fits == {}


def test_several_by_columns_and_categorical_order(bench: pd.DataFrame) -> None:
    d = bench[bench["benchmark"].isin(["math", "code"])].copy()
    d["split"] = np.where(d["item"].str[-1].astype(int) % 2 == 0, "even", "odd")
    d["benchmark"] = pd.Categorical(d["benchmark"], categories=["math", "code"])
    res = fit_many("correct ~ model + (1|item)", d, by=["benchmark", "split"], keep_fits=False)
    keys = res.groups[["benchmark", "split"]].astype(str).values.tolist()
    assert keys == [["math", "even"], ["math", "odd"], ["code", "even"], ["code", "odd"]]
    assert list(res.groups["benchmark"].cat.categories) == ["math", "code"]
    assert (res.table.groupby(["benchmark", "split"], observed=True).size() == 4).all()


def test_bad_input_is_named_once(bench: pd.DataFrame) -> None:
    with pytest.raises(FormulaError, match="'score'"):
        fit_many("score ~ model + (1|item)", bench, by="benchmark")
    with pytest.raises(FormulaError, match="'prompt'"):
        fit_many("correct ~ model + (1|prompt)", bench, by="benchmark")
    with pytest.raises(DataError, match="'suite'"):
        fit_many(FORMULA, bench, by="suite")
    holes = bench.copy()
    holes.loc[5, "benchmark"] = np.nan
    with pytest.raises(DataError, match=r"by column 'benchmark' has 1 missing value\(s\) \(rows \[5\]\)"):
        fit_many(FORMULA, holes, by="benchmark")


def test_result_renders(result: evalmix.FitManyResult) -> None:
    text = repr(result)
    assert "4 groups: 3 fitted, 1 failed" in text
    assert result.to_frame().columns[:3].tolist() == ["benchmark", "term", "estimate"]
    assert "benchmark" in result.to_markdown()


def test_other_warnings_are_recorded_per_group(bench: pd.DataFrame) -> None:
    d = bench[bench["benchmark"].isin(["chem", "code"])].copy()
    d.loc[d.index[d["benchmark"] == "code"][:3], "correct"] = np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing escapes to the caller
        res = fit_many(FORMULA, d, by="benchmark", keep_fits=False, missing="drop")
    w = dict(zip(res.groups["benchmark"], res.groups["warnings"]))
    assert w["chem"] == "" and w["code"].startswith("DataWarning") and "3" in w["code"]
    assert res.groups.loc[res.groups["benchmark"] == "code", "nobs"].item() == 477


@pytest.mark.parametrize("backend", ["threading", "loky"])
def test_warnings_land_in_the_group_row_whatever_the_backend(bench: pd.DataFrame, backend: str) -> None:
    """Each group's warnings (rows dropped, fit messages) are its own with threads and processes."""
    import joblib

    d = bench[bench["benchmark"].isin(["chem", "code"])].copy()
    d.loc[d.index[d["benchmark"] == "code"][:3], "correct"] = np.nan
    d.loc[d.index[d["benchmark"] == "chem"][:5], "correct"] = np.nan
    kw = dict(by="benchmark", keep_fits=False, missing="drop")
    local = fit_many(FORMULA, d, **kw)
    with warnings.catch_warnings(), joblib.parallel_config(backend=backend, n_jobs=2):
        warnings.simplefilter("error")  # nothing escapes to the caller from a worker either
        par = fit_many(FORMULA, d, **kw)
    pd.testing.assert_frame_equal(par.groups, local.groups)
    w = dict(zip(par.groups["benchmark"], par.groups["warnings"]))
    assert "dropped 5 of" in w["chem"] and "dropped 3 of" in w["code"], w


@pytest.mark.parametrize("backend", ["sequential", "threading"])
def test_singular_and_separated_groups_are_flagged_in_their_rows(backend: str) -> None:
    import joblib

    flat = evalmix.simulate.glmm_runs(2, 12, 2, model_effects=[0, 0.5], sd_item=0.0, rng=0)
    sep = evalmix.simulate.glmm_runs(2, 30, 2, model_effects=[0, 0.5], sd_item=1.0, rng=4)
    sep.loc[sep["model"] == "M2", "correct"] = 1
    d = pd.concat([flat.assign(benchmark="flat"), sep.assign(benchmark="sep")], ignore_index=True)
    with warnings.catch_warnings(), joblib.parallel_config(backend=backend, n_jobs=2):
        warnings.simplefilter("error")
        res = fit_many("correct ~ model + (1|item)", d, by="benchmark", keep_fits=False)
    g = res.groups.set_index("benchmark")
    assert bool(g.loc["flat", "singular"]) and "boundary (singular) fit" in g.loc["flat", "messages"]
    assert "quasi-complete separation" in g.loc["sep", "messages"]
    assert not bool(g.loc["sep", "singular"])
    assert (g["warnings"] == "").all()  # said once, in messages, not repeated as a warning
