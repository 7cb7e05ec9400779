"""Prediction-powered inference: parity with ppi-python, item clustering, differences, validation,
rendering and coverage by simulation."""

from __future__ import annotations

import json
import re
import math
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import integrate, special, stats

import evalmix
from evalmix.core.errors import DataError, DataWarning
from evalmix.studies.ppi import METHODS, PPIEstimates, ppi_coverage_study, ppi_difference, ppi_mean, simulate_judged

REF = json.loads((Path(__file__).parents[1] / "reference" / "ppi_reference.json").read_text())
CASES = {c["name"]: c for c in REF["cases"]}


def _tables(case: dict) -> tuple[pd.DataFrame, pd.DataFrame]:
    """ppi-python's arrays as evalmix tables: one row per item, labelled items first."""
    y, yhat, yu = (np.asarray(case[k], float) for k in ("Y", "Yhat", "Yhat_unlabeled"))
    n = len(y)
    labelled = pd.DataFrame({"item": np.arange(n), "judge_score": yhat, "human_score": y})
    judged = pd.DataFrame({"item": np.arange(n, n + len(yu)), "judge_score": yu})
    return judged, labelled


def _one(res: PPIEstimates, method: str) -> pd.Series:
    t = res.to_frame()
    return t.loc[t["method"] == method].iloc[0]


# ------------------------------------------------------------------------------ ppi-python parity

@pytest.mark.parametrize("name", sorted(CASES))
@pytest.mark.parametrize("alpha", [0.05, 0.1])
def test_matches_ppi_python(name, alpha):
    case, ref = CASES[name], CASES[name]["ppi_py"]
    judged, labelled = _tables(case)
    res = ppi_mean(judged, labelled, by=None, method=["ppi++", "ppi", "classical"], conf_level=1 - alpha)
    for method, key, point in (("ppi++", "tuned", "point_tuned"), ("ppi", "ppi", "point_ppi"),
                               ("classical", "classical", None)):
        row = _one(res, method)
        lo, hi = ref[f"ci_{key}_{alpha}"]
        assert row["conf_low"] == pytest.approx(lo, abs=1e-8)
        assert row["conf_high"] == pytest.approx(hi, abs=1e-8)
        if point is not None:
            assert row["estimate"] == pytest.approx(ref[point], abs=1e-8)
    assert _one(res, "ppi++")["lambda"] == pytest.approx(ref["lambda_tuned"], abs=1e-8)
    fixed = ppi_mean(judged, labelled, by=None, lam=0.5, conf_level=1 - alpha).to_frame().iloc[0]
    assert fixed["estimate"] == pytest.approx(ref["point_fixed_0.5"], abs=1e-8)
    assert [fixed["conf_low"], fixed["conf_high"]] == pytest.approx(ref[f"ci_fixed_0.5_{alpha}"], abs=1e-8)


def test_one_table_with_sparse_human_scores_equals_two_tables():
    judged, labelled = _tables(CASES["binary_lenient_judge"])
    one = pd.concat([labelled, judged.assign(human_score=np.nan)], ignore_index=True)
    a = ppi_mean(one, by=None, method=list(METHODS)).to_frame()
    b = ppi_mean(judged, labelled, by=None, method=list(METHODS)).to_frame()
    pd.testing.assert_frame_equal(a, b, rtol=0, atol=1e-14)


def test_clipped_lambda_of_an_anticorrelated_judge_is_the_classical_interval():
    judged, labelled = _tables(CASES["anticorrelated_judge"])
    res = ppi_mean(judged, labelled, by=None, method=["ppi++", "classical"]).to_frame()
    assert res["lambda"].tolist() == [0.0, 0.0]
    assert res["conf_low"].iloc[0] == pytest.approx(res["conf_low"].iloc[1], abs=1e-15)
    assert res["ess_gain"].tolist() == pytest.approx([1.0, 1.0], abs=1e-12)


def test_truescore_readme_uncorrected_intervals_are_row_level_wilson():
    # truescore's README (0.7.4): 4000 items judged, 600 labelled; judge-only 0.8383 [0.8265, 0.8493]
    # and gold-only 0.7183 [0.6810, 0.7528], printed to 4 decimals.  Its data are not distributed, so
    # only these two (functions of the counts 3353/4000 and 431/600) can be recomputed.
    for k, n, published in ((3353, 4000, (0.8265, 0.8493)), (431, 600, (0.6810, 0.7528))):
        lo, hi = evalmix.binom_ci(k, n, "wilson", 0.95)
        assert (round(float(lo), 4), round(float(hi), 4)) == published


# ------------------------------------------------------------------------------ clustering

def _clustered(seed: int = 3, n_items: int = 80, n_lab: int = 25, runs: int = 4, item_sd: float = 1.0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for model, shift in (("m-A", 0.3), ("m-B", -0.2)):
        for i in range(n_items):
            u = rng.normal(0, item_sd)
            for r in range(runs):
                h = float(rng.random() < special.expit(0.5 + shift + u))
                judge = float(rng.random() < (0.95 if h else 0.3))
                rows.append({"model": model, "item": f"q{i}", "run": r, "judge_score": judge,
                             "human_score": h if i < n_lab else np.nan})
    return pd.DataFrame(rows)


def _by_hand(y: np.ndarray, fl: np.ndarray, fu: np.ndarray, lam: float) -> tuple[float, float]:
    est = lam * fu.mean() + np.mean(y - lam * fl)
    se = math.sqrt(np.var(lam * fu) / len(fu) + np.var(y - lam * fl) / len(y))
    return est, se


def test_repeated_runs_are_averaged_into_item_means():
    df = _clustered()
    res = ppi_mean(df, method=["ppi", "classical", "judge_only"], lam=None).to_frame()
    for model in ("m-A", "m-B"):
        sub = df[df["model"] == model]
        means = sub.groupby("item", sort=True)[["judge_score", "human_score"]].mean()
        lab = means["human_score"].notna()
        y, fl, fu = means.loc[lab, "human_score"].to_numpy(), means.loc[lab, "judge_score"].to_numpy(), \
            means.loc[~lab, "judge_score"].to_numpy()
        est, se = _by_hand(y, fl, fu, 1.0)
        row = res[(res["model"] == model) & (res["method"] == "ppi")].iloc[0]
        assert row["estimate"] == pytest.approx(est, abs=1e-12)
        assert row["se"] == pytest.approx(se, abs=1e-12)
        assert (row["n_labelled"], row["n_unlabelled"]) == (25, 55)
        cl = res[(res["model"] == model) & (res["method"] == "classical")].iloc[0]
        assert cl["se"] == pytest.approx(np.std(y) / math.sqrt(25), abs=1e-12)
        jo = res[(res["model"] == model) & (res["method"] == "judge_only")].iloc[0]
        assert jo["estimate"] == pytest.approx(means["judge_score"].mean(), abs=1e-12)
        assert jo["se"] == pytest.approx(np.std(means["judge_score"]) / math.sqrt(80), abs=1e-12)


def test_clustered_se_is_wider_than_treating_runs_as_items():
    # four runs of one item are not four items: the row-level (naive) SE understates the spread
    df = _clustered(seed=8, n_items=120, n_lab=40, item_sd=2.5)
    sub = df[df["model"] == "m-A"]
    clustered = ppi_mean(sub, by=None, method="ppi").to_frame().iloc[0]
    naive = sub.assign(item=[f"{i}/{r}" for i, r in zip(sub["item"], sub["run"])]).drop(columns="run")
    rows = ppi_mean(naive, by=None, method="ppi").to_frame().iloc[0]
    assert rows["estimate"] == pytest.approx(clustered["estimate"], abs=1e-12)  # equal runs per item
    assert clustered["se"] > 1.2 * rows["se"]


def test_groups_equal_separate_calls():
    df = _clustered()
    both = ppi_mean(df, method=["ppi++", "classical"]).to_frame()
    for model in ("m-A", "m-B"):
        alone = ppi_mean(df[df["model"] == model].drop(columns="model"), by=None,
                         method=["ppi++", "classical"]).to_frame()
        got = both[both["model"] == model].drop(columns="model").reset_index(drop=True)
        pd.testing.assert_frame_equal(got, alone, rtol=0, atol=1e-14)


# ------------------------------------------------------------------------------ differences

def test_difference_is_ppi_on_item_differences():
    df = _clustered(seed=5)
    res = ppi_difference(df, a="m-A", b="m-B", method=["ppi++", "ppi", "classical", "judge_only"]).to_frame()
    means = df.groupby(["model", "item"])[["judge_score", "human_score"]].mean()
    d = means.loc["m-A"] - means.loc["m-B"]
    lab = d["human_score"].notna()
    y, fl, fu = d.loc[lab, "human_score"].to_numpy(), d.loc[lab, "judge_score"].to_numpy(), \
        d.loc[~lab, "judge_score"].to_numpy()
    items = pd.concat([pd.DataFrame({"item": d.index[lab], "judge_score": fl, "human_score": y}),
                       pd.DataFrame({"item": d.index[~lab], "judge_score": fu})])
    via_mean = ppi_mean(items, by=None, method=["ppi++", "ppi", "classical", "judge_only"]).to_frame()
    cols = ["estimate", "se", "conf_low", "conf_high", "lambda", "n_labelled", "n_unlabelled", "n_effective"]
    pd.testing.assert_frame_equal(res[cols], via_mean[cols], rtol=0, atol=1e-14)
    assert res["contrast"].unique().tolist() == ["(m-A) - (m-B)"]
    z = res["estimate"] / res["se"]
    np.testing.assert_allclose(res["statistic"], z, rtol=1e-14)
    np.testing.assert_allclose(res["p_value"], 2 * stats.norm.sf(np.abs(z)), rtol=1e-12)
    est, se = _by_hand(y, fl, fu, 1.0)
    ppi_row = res[res["method"] == "ppi"].iloc[0]
    assert (ppi_row["estimate"], ppi_row["se"]) == pytest.approx((est, se), abs=1e-12)


def test_difference_pairs_items_so_shared_item_effects_cancel():
    df = _clustered(seed=11, n_items=150, n_lab=50)
    diff = ppi_difference(df, a="m-A", b="m-B", method="classical").to_frame().iloc[0]
    means = ppi_mean(df, method="classical").to_frame().set_index("model")
    unpaired = math.hypot(means.loc["m-A", "se"], means.loc["m-B", "se"])
    assert diff["estimate"] == pytest.approx(means.loc["m-A", "estimate"] - means.loc["m-B", "estimate"], abs=1e-12)
    assert diff["se"] < unpaired


def test_difference_leaves_out_items_of_one_model_with_a_warning():
    df = _clustered(seed=5)
    dropped = df[~((df["model"] == "m-B") & df["item"].isin(["q60", "q61", "q62"]))]
    with pytest.warns(DataWarning, match="3 item"):
        res = ppi_difference(dropped, a="m-A", b="m-B").to_frame().iloc[0]
    assert (res["n_labelled"], res["n_unlabelled"]) == (25, 52)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ppi_difference(df, a="m-A", b="m-B")


# ------------------------------------------------------------------------------ validation

def test_errors_name_the_column_and_rows():
    df = _clustered()
    with pytest.raises(DataError, match="'judge'"):
        ppi_mean(df, judge="judge")
    with pytest.raises(DataError, match="'human'"):
        ppi_mean(df, human="human")
    bad = df.astype({"judge_score": object})
    bad.loc[3, "judge_score"] = "yes"
    with pytest.raises(DataError, match="judge_score"):
        ppi_mean(bad)
    lab = df[df["human_score"].notna()].copy()
    judged = df.drop(columns="human_score")
    lab_bad = lab.astype({"judge_score": object})
    lab_bad.iloc[2, lab_bad.columns.get_loc("judge_score")] = "pass"
    with pytest.raises(DataError, match=r"labelled rows: judge column 'judge_score'.*row 2"):
        ppi_mean(judged, lab_bad)
    lab_nan = lab.copy()
    lab_nan.iloc[0, lab_nan.columns.get_loc("judge_score")] = np.nan
    with pytest.raises(DataError, match="labelled rows: .*'judge_score'"):
        ppi_mean(judged, lab_nan)
    with pytest.raises(DataError, match="no row has a human score"):
        ppi_mean(df.assign(human_score=np.nan))
    text = df.astype({"human_score": object})
    text.loc[0, "human_score"] = "pass"
    with pytest.raises(DataError, match=r"labelled rows: human score column 'human_score' must hold numbers.*"
                                        r"row 0: human_score='pass'"):
        ppi_mean(text)
    with pytest.raises(DataError, match="pass the human scores one way"):
        ppi_mean(df, lab)
    dup = pd.concat([df, df.iloc[[0]]])
    with pytest.raises(DataError, match="share a key"):
        ppi_mean(dup)


def test_too_few_items_and_unknown_levels():
    df = _clustered()
    few = df.assign(human_score=np.where(df["item"] == "q0", df["human_score"], np.nan))
    with pytest.raises(DataError, match=r"model='m-A': 1 labelled item\(s\)"):
        ppi_mean(few)
    every = _clustered(n_items=30, n_lab=29)
    with pytest.raises(DataError, match="1 unlabelled item"):
        ppi_mean(every)
    assert len(ppi_mean(every, method="classical").to_frame()) == 2  # human-only needs no unlabelled item
    with pytest.raises(DataError, match="'m-C' is not a level of column 'model'"):
        ppi_difference(df, a="m-A", b="m-C")
    with pytest.raises(TypeError, match="a= is one level of column 'model'"):
        ppi_difference(df, a=["m-A"], b="m-B")
    with pytest.raises(ValueError, match="same model"):
        ppi_difference(df, a="m-A", b="m-A")


def test_paths_categoricals_and_bools_give_the_same_numbers(tmp_path):
    df = simulate_judged(n_items=60, n_labelled=15, n_runs=2, rng=1)
    want = ppi_mean(df, method=list(METHODS)).to_frame()
    path = tmp_path / "judged.csv"
    df.to_csv(path, index=False)
    cat = df.assign(model=df["model"].astype("category"), item=df["item"].astype(str).astype("category"),
                    judge_score=df["judge_score"].astype(bool))
    for data in (path, cat):
        got = ppi_mean(data, method=list(METHODS)).to_frame()
        assert got["model"].astype(str).tolist() == want["model"].tolist()
        np.testing.assert_allclose(got[["estimate", "se", "lambda"]].to_numpy(float),
                                   want[["estimate", "se", "lambda"]].to_numpy(float), rtol=0, atol=1e-14)
    lab = df[df["human_score"].notna()]
    two = ppi_mean(df.drop(columns="human_score"), lab, method=list(METHODS)).to_frame()
    pd.testing.assert_frame_equal(two, want, rtol=0, atol=1e-15)


def test_levels_of_mixed_types():
    df = _clustered()
    mixed = df.assign(model=df["model"].map({"m-A": 1, "m-B": "m-B"}))
    res = ppi_mean(mixed, method="ppi").to_frame()
    assert res["model"].tolist() == [1, "m-B"]
    want = ppi_mean(df, method="ppi").to_frame()
    np.testing.assert_allclose(res["estimate"], want["estimate"], rtol=0, atol=1e-15)


def test_argument_errors():
    df = _clustered()
    with pytest.raises(ValueError, match="method must be"):
        ppi_mean(df, method="bayes")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="lam= fixes the lambda"):
        ppi_mean(df, method="ppi", lam=0.5)
    with pytest.raises(ValueError, match="lam must be a finite number"):
        ppi_mean(df, lam=float("nan"))
    with pytest.raises(ValueError, match="conf_level"):
        ppi_mean(df, conf_level=95)
    with pytest.raises(ValueError, match="same column"):
        ppi_mean(df, judge="judge_score", human="judge_score")


# ------------------------------------------------------------------------------ results

def test_result_renders_and_is_immutable():
    res = ppi_difference(_clustered(), a="m-A", b="m-B", method=["ppi++", "judge_only"])
    assert "Prediction-powered difference of 'human_score'" in repr(res)
    assert "judge_only ignores the human labels" in repr(res)
    latex = res.to_latex(caption="Judge-corrected difference")
    assert "\\begin{table}" in latex and "ppi++" in latex and "(m-A) - (m-B)" in latex
    assert re.match(r"\| contrast +\| method +\| estimate", res.to_markdown())
    assert res.to_dict()["table"][1]["lambda"] is None  # NaN -> null in JSON
    t = res.table
    t.loc[0, "estimate"] = 99.0
    assert res.table.loc[0, "estimate"] != 99.0
    with pytest.raises(AttributeError):
        res.conf_level = 0.5  # type: ignore[misc]


def test_latex_escapes_model_names():
    df = _clustered().replace({"model": {"m-A": "gpt_4&co", "m-B": "50%"}})
    latex = ppi_mean(df).to_latex()
    assert r"gpt\_4\&co" in latex and r"50\%" in latex


def test_public_names():
    for name in ("ppi_mean", "ppi_difference", "ppi_coverage_study", "simulate_judged", "PPIEstimates",
                 "PPICoverage"):
        assert getattr(evalmix, name) is getattr(evalmix.ppi, name)


# ------------------------------------------------------------------------------ simulation

def test_simulated_truth_is_the_item_averaged_probability():
    df = simulate_judged(n_items=10, n_labelled=3, n_runs=1, accuracy=(0.8, 0.35), item_sd=1.3, rng=0)
    assert sorted(df["model"].unique()) == ["a", "b"]
    from evalmix.studies.ppi import _intercepts
    alpha = _intercepts((0.8, 0.35), 1.3)
    for a, target in zip(alpha, (0.8, 0.35)):
        value, _ = integrate.quad(lambda u: special.expit(a + 1.3 * u) * stats.norm.pdf(u), -12, 12,
                                  epsabs=1e-13)
        assert value == pytest.approx(target, abs=1e-10)


def test_study_replicate_equals_the_public_functions():
    # one replicate of the study is simulate_judged with the same seed, run through ppi_mean
    study = ppi_coverage_study(n_items=120, n_labelled=30, n_runs=3, n_sims=1, rng=42).to_frame()
    df = simulate_judged(n_items=120, n_labelled=30, n_runs=3, rng=42)
    means = ppi_mean(df, method=list(METHODS)).to_frame()
    diffs = ppi_difference(df, a="a", b="b", method=list(METHODS)).to_frame()
    for m in METHODS:
        got = study[(study["target"] == "mean a") & (study["method"] == m)].iloc[0]
        want = means[(means["model"] == "a") & (means["method"] == m)].iloc[0]
        assert got["bias"] + 0.7 == pytest.approx(want["estimate"], abs=1e-12)
        assert got["mean_width"] == pytest.approx(want["conf_high"] - want["conf_low"], abs=1e-12)
        got = study[(study["target"] == "a - b") & (study["method"] == m)].iloc[0]
        want = diffs[diffs["method"] == m].iloc[0]
        assert got["bias"] + 0.1 == pytest.approx(want["estimate"], abs=1e-12)


def _check_coverage(res: pd.DataFrame, n_sims: int) -> None:
    # Monte-Carlo error of a coverage at the nominal 95%; 3 of them either side
    tol = 3 * math.sqrt(0.95 * 0.05 / n_sims)
    for target in ("mean a", "a - b"):
        sub = res[res["target"] == target].set_index("method")
        for m in ("ppi++", "ppi", "classical"):
            assert abs(sub.loc[m, "coverage"] - 0.95) <= tol, (target, m, sub.loc[m, "coverage"], tol)
        # the lenient judge's own interval misses the truth most of the time
        assert sub.loc["judge_only", "coverage"] < 0.75
        # prediction power: PPI++ is narrower than the human labels alone, and than PPI
        assert sub.loc["ppi++", "mean_width"] < sub.loc["ppi", "mean_width"] < sub.loc["classical", "mean_width"]
        assert 0 < sub.loc["ppi++", "mean_lambda"] < 1


def test_coverage_by_simulation_fast():
    n_sims = 300
    res = ppi_coverage_study(n_items=600, n_labelled=150, n_runs=2, n_sims=n_sims, rng=7).to_frame()
    _check_coverage(res, n_sims)  # tolerance 0.038 on coverage
    judge = res[(res["target"] == "mean a") & (res["method"] == "judge_only")].iloc[0]
    # its bias is the judge's: 0.25 * (1 - 0.7) - 0.05 * 0.7 = 0.04
    assert judge["bias"] == pytest.approx(0.04, abs=3 * 0.02 / math.sqrt(n_sims))
    assert judge["coverage"] < 0.3


@pytest.mark.slow
def test_coverage_by_simulation_slow():
    n_sims = 4000
    res = ppi_coverage_study(n_items=600, n_labelled=150, n_runs=2, n_sims=n_sims, rng=2024).to_frame()
    _check_coverage(res, n_sims)  # tolerance 0.0103 on coverage
    for target in ("mean a", "a - b"):
        sub = res[res["target"] == target].set_index("method")
        for m in ("ppi", "classical"):  # unbiased for every fixed lambda
            assert abs(sub.loc[m, "bias"]) < 0.002


def test_study_arguments():
    with pytest.raises(ValueError, match="n_labelled"):
        ppi_coverage_study(n_items=10, n_labelled=9)
    with pytest.raises(ValueError, match="two models"):
        ppi_coverage_study(accuracy=(0.7,))
    with pytest.raises(ValueError, match="judge_fpr"):
        simulate_judged(judge_fpr=0.6, judge_fnr=0.5)
