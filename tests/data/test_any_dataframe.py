"""Any dataframe at the front door: a runs table from pandas, polars (eager and lazy), PyArrow or DuckDB
gives the same numbers.

Every public function that takes a runs table is found by walking the public API (a parameter typed
``RunsData``, or a table parameter typed as a DataFrame); each has a recipe here, and the slow step
calls every recipe on every table type and compares the results with pandas'. The default step checks
the door itself (``as_pandas``, through narwhals) and a few entry points.
"""

from __future__ import annotations

import functools
import inspect
import warnings
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import evalmix
from evalmix import bayes, repetitions
from evalmix.core.errors import DataError
from evalmix.data.runs import as_pandas, is_foreign_table, narwhals_frame

import polars as pl

try:
    import duckdb
except ImportError:  # in the test extra (CI installs it); without it the DuckDB cases are not collected
    duckdb = None

ROOT = Path(__file__).resolve().parents[2]
REF = ROOT / "tests" / "reference"

# -------------------------------------------------------------------------------------- the types


def _duckdb(df: pd.DataFrame) -> Any:
    con = duckdb.connect()
    con.register("runs", df)
    return con.table("runs")


CONVERT: dict[str, Callable[[pd.DataFrame], Any]] = {
    "polars": pl.from_pandas,
    "polars_lazy": lambda df: pl.from_pandas(df).lazy(),
    "pyarrow": lambda df: pa.Table.from_pandas(df, preserve_index=False),
}
if duckdb is not None:
    CONVERT["duckdb"] = _duckdb

# ------------------------------------------------------------------------------------------ data


@functools.cache
def _example() -> pd.DataFrame:
    return pd.read_csv(ROOT / "data" / "example_runs.csv")


def _one() -> pd.DataFrame:
    """Three models on one slice (315 items x runs rows per model)."""
    df = _example()
    keep = df["model"].isin(["model-A", "model-B", "model-C"]) & (df["language"] == "EN") & (df["prompt"] == "ZS")
    return df[keep].drop(columns=["language", "prompt"]).reset_index(drop=True)


def _two_slices() -> pd.DataFrame:
    df = _example()
    keep = df["model"].isin(["model-A", "model-B"]) & (df["prompt"] == "ZS") & (df["item"] <= "q040")
    return df[keep].drop(columns="prompt").reset_index(drop=True)


@functools.cache
def _verdicts() -> pd.DataFrame:
    rng = np.random.default_rng(2)
    rows = [(m, f"i{i}", r, j) for m in ("A", "B") for i in range(20) for r in (1, 2) for j in ("x", "y", "z")]
    df = pd.DataFrame(rows, columns=["model", "item", "run", "judge"])
    p = 0.3 + 0.3 * (df["model"] == "B") + 0.2 * (df["judge"] == "y")
    return df.assign(correct=(rng.random(len(df)) < p).astype(int))


def _with_proxy(df: pd.DataFrame) -> pd.DataFrame:
    rng = np.random.default_rng(7)
    return df.assign(proxy=df["correct"] * 0.5 + rng.uniform(0, 0.5, len(df)))


@functools.cache
def _irt_runs() -> pd.DataFrame:
    return evalmix.simulate.simulate_irt(n_items=30, n_models=4, rng=1)


@functools.cache
def _irt_fit() -> Any:
    return evalmix.fit_irt(_irt_runs())


def _judged() -> pd.DataFrame:
    return evalmix.simulate_judged(n_items=60, n_labelled=15, n_runs=2, rng=1)


def _scores() -> pd.DataFrame:
    df = _one().query("item <= 'q030'")
    return df.assign(score=(df["correct"] + np.random.default_rng(1).uniform(0.1, 0.9, len(df))) / 2)


def _ratings() -> pd.DataFrame:
    df = _one().query("item <= 'q030'")
    return df.assign(rating=np.random.default_rng(1).integers(1, 4, len(df)))


def _dif_table() -> pd.DataFrame:
    rng = np.random.default_rng(1)
    theta = rng.normal(size=40)
    df = pd.DataFrame({"item": np.repeat(["q1", "q2", "q3"], 40), "ability": np.tile(theta, 3),
                       "version": np.tile(np.repeat(["v1", "v2"], 20), 3)})
    return df.assign(correct=(rng.random(len(df)) < 1 / (1 + np.exp(-df["ability"]))).astype(int))


TINY = dict(draws=30, tune=30, chains=1, rng=1, progressbar=False, cores=1)

# ------------------------------------------------------------------ recipes: (make data, call on it)
# name -> (the pandas table, how to call the function on the table in any of the types)
RECIPES: dict[str, tuple[Callable[[], pd.DataFrame], Callable[[Any], Any]]] = {
    "accuracy": (_one, lambda t: evalmix.accuracy(t, "model")),
    "accuracy_bounds": (_one, lambda t: evalmix.accuracy_bounds(t, "model")),
    "bradley_terry": (lambda: pd.read_csv(ROOT / "data" / "example_battles.csv"),
                      lambda t: evalmix.bradley_terry(t)),
    "clmm": (lambda: pd.read_csv(REF / "clmm_judge.csv"), lambda t: evalmix.clmm("rating ~ model + (1|item)", t)),
    "cluster_bootstrap": (_one, lambda t: evalmix.cluster_bootstrap(t, by="model", n_boot=100, rng=1)),
    "compare_pair": (_one, lambda t: evalmix.compare_pair(t, "model-A", "model-B")),
    "control_variate_accuracy": (lambda: _with_proxy(_one()), lambda t: evalmix.control_variate_accuracy(
        t, "model-A", proxy="proxy", proxy_mean=0.5)),
    "control_variate_difference": (lambda: _with_proxy(_one()), lambda t: evalmix.control_variate_difference(
        t, "model-A", "model-B", proxy="proxy", proxy_mean=0.0)),
    "ensure_runs": (_one, lambda t: evalmix.ensure_runs(t)[0]),
    "estimate_accuracy": (lambda: _irt_runs().head(30), lambda t: evalmix.estimate_accuracy(_irt_fit(), t)),
    "fit_irt": (_irt_runs, lambda t: evalmix.fit_irt(t)),
    "fit_irt_bayes": (lambda: _irt_runs().head(120), lambda t: evalmix.fit_irt_bayes(
        t, draws=20, tune=20, chains=1)),
    "fit_many": (_two_slices, lambda t: evalmix.fit_many("correct ~ model + (1|item)", t, by="language",
                                                         n_jobs=1)),
    "flip_rate": (_one, lambda t: evalmix.flip_rate(t, "model")),
    "friedman": (_one, lambda t: evalmix.friedman(t)),
    "glmer": (_two_slices, lambda t: evalmix.glmer("correct ~ model + language + (1|item)", t)),
    "glmmtmb": (lambda: pd.read_csv(REF / "glmmtmb_sim.csv"),
                lambda t: evalmix.glmmtmb("score ~ model + (1|item)", t, "beta")),
    "icc": (_one, lambda t: evalmix.icc(t, "model")),
    "judge_agreement": (_verdicts, lambda t: evalmix.judge_agreement(t)),
    "judge_plan_components": (_verdicts, lambda t: evalmix.judge_plan_components(t)),
    "judge_study": (_verdicts, lambda t: evalmix.judge_study(t)),
    "lmer": (_scores, lambda t: evalmix.lmer("score ~ model + (1|item)", t)),
    "load_table": (_one, lambda t: evalmix.load_table(t)),
    "pass_k": (_one, lambda t: evalmix.pass_k(t, 2)),
    "pass_k_model": (_one, lambda t: evalmix.pass_k_model(t, 5)),
    "ppi_difference": (_judged, lambda t: evalmix.ppi_difference(t, a="a", b="b", method=["ppi", "judge_only"])),
    "ppi_mean": (_judged, lambda t: evalmix.ppi_mean(t, method=["ppi++", "judge_only"])),
    "rank_instability": (_two_slices, lambda t: evalmix.rank_instability(t, ["language"])),
    "rank_sets": (_one, lambda t: evalmix.rank_sets(t, n_boot=200, rng=1)),
    "rank_uncertainty": (_one, lambda t: evalmix.rank_uncertainty(t, n_boot=50, rng=1)),
    "read_battles": (lambda: pd.read_csv(ROOT / "data" / "example_battles.csv"), lambda t: evalmix.read_battles(t)),
    "read_runs": (_one, lambda t: evalmix.read_runs(t)),
    "report": (_one, lambda t: evalmix.report(t, n_boot=50).to_frame()),
    "sequential_accuracy": (_one, lambda t: evalmix.sequential_accuracy(t, "model-A")),
    "sequential_difference": (_one, lambda t: evalmix.sequential_difference(t, "model-A", "model-B")),
    "variance_sources": (_one, lambda t: evalmix.variance_sources(t, "model", run="run")),
    "repetitions.se_vs_runs": (_one, lambda t: repetitions.se_vs_runs(t, "model", max_runs=3)),
    "repetitions.sign_flip_rate": (lambda: _one().query("model != 'model-C'"), lambda t: repetitions.sign_flip_rate(
        t, "correct ~ model + (1|item)", ref="model-A")),
    "repetitions.slice_se_by_runs": (_one, lambda t: repetitions.slice_se_by_runs(t, "model")),
    "repetitions.variance_components": (_one, lambda t: repetitions.variance_components(t, "model")),
    "bayes.default_priors": (_one, lambda t: bayes.default_priors("correct ~ model + (1|item)", t)),
    "bayes.glmer": (lambda: _one().query("item <= 'q020'"),
                    lambda t: bayes.glmer("correct ~ model + (1|item)", t, **TINY)),
    "bayes.lmer": (_scores, lambda t: bayes.lmer("score ~ model + (1|item)", t, **TINY)),
    "bayes.clmm": (_ratings, lambda t: bayes.clmm("rating ~ model + (1|item)", t, **TINY)),
    "bayes.glmmtmb": (_scores, lambda t: bayes.glmmtmb("score ~ model + (1|item)", t, **TINY)),
    "gate": (_one, lambda t: evalmix.gate(t, "model-A", "model-B", {
        "looks": 3, "metrics": [{"name": "accuracy", "column": "correct", "margin": 0.1}]}).metrics),
    "drift": (_one, lambda t: evalmix.drift(t, t)),
    "contamination_test": (lambda: evalmix.simulate.contaminated_runs(60, 1, rng=1),
                           lambda t: evalmix.contamination_test(t)),
    "item_health": (_one, lambda t: evalmix.item_health(t, method="point_biserial")),
    "version_shift": (lambda: evalmix.simulate.simulate_versions(n_items=30, n_models=10, rng=1)[0],
                      lambda t: evalmix.version_shift(t)),
    "logistic_dif": (_dif_table, lambda t: evalmix.logistic_dif(t, group="version", matching="ability")),
}

# table parameters that are not a runs table, and entry points whose table is not one of this kind
NOT_RUNS_TABLES = {
    "schema_of",  # reads the roles recorded in a pandas frame's attrs: no table goes in
    "read_inspect", "read_inspect_evals", "read_logs",  # a log reader's own frame of samples
    "adaptive_accuracy",  # a callable or a table of answers to look up, not the runs table
    "fleiss_kappa", "krippendorff_alpha",  # a ratings matrix (items x raters), not a runs table
}
TABLE_NAMES = {"data", "runs", "battles", "responses", "judged", "labelled", "source", "scores"}


def _entry_points() -> set[str]:
    """Public functions with a runs-table parameter (typed RunsData, or a DataFrame named as a table)."""
    found = set()
    for prefix, mod in (("", evalmix), ("repetitions.", repetitions), ("bayes.", bayes)):
        for name in mod.__all__:
            obj = getattr(mod, name)
            if not inspect.isfunction(obj):
                continue
            for p in inspect.signature(obj).parameters.values():
                ann = str(p.annotation)
                if "RunsData" in ann or ("DataFrame" in ann and p.name in TABLE_NAMES):
                    found.add(prefix + name)
    return found


def _table(result: Any) -> pd.DataFrame:
    """What is compared: the result's table (a fit's coefficients, variance components and loglik)."""
    if isinstance(result, pd.DataFrame):
        return result.reset_index(drop=True)
    if hasattr(result, "fixef_draws"):  # a posterior: the draws themselves
        return pd.DataFrame(np.asarray(result.fixef_draws.values).reshape(-1, result.fixef_draws.shape[-1]))
    if hasattr(result, "to_frame"):
        out = result.to_frame().reset_index(drop=True)
        loglik = getattr(result, "loglik", None)  # a fit: its log-likelihood beside its coefficients
        if isinstance(loglik, (float, np.floating)):
            out["loglik"] = float(loglik)
        return out
    if isinstance(result, list):
        return pd.concat([_table(r) for r in result], ignore_index=True)
    return pd.DataFrame({"value": [result]})


def _call(fn: Callable[[Any], Any], table: Any) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # convergence and design notes: the same for every type
        return _table(fn(table))


# ------------------------------------------------------------------------------- the default step


def test_every_runs_table_entry_point_has_a_recipe() -> None:
    entry = _entry_points()
    assert {"accuracy", "glmer", "rank_sets", "pass_k", "read_runs", "bayes.glmer"} <= entry
    missing = entry - set(RECIPES) - NOT_RUNS_TABLES
    assert not missing, f"add a recipe for {sorted(missing)}"
    assert set(RECIPES) <= entry | {"ensure_runs", "load_table"}


@pytest.mark.parametrize("kind", sorted(CONVERT))
def test_the_door_gives_the_pandas_frame(kind: str) -> None:
    want = _example()
    native = CONVERT[kind](want)
    assert is_foreign_table(native) and narwhals_frame(native) is not None
    got = as_pandas(native)
    pd.testing.assert_frame_equal(got, want)
    # nulls arrive as missing values, which the runs-table rules report by row
    with pytest.raises(DataError, match=r"missing value.*row 2"):
        evalmix.read_runs(CONVERT[kind](_one().astype({"correct": "Int64"}).assign(
            correct=lambda d: d["correct"].mask(d.index == 2))))


@pytest.mark.parametrize("kind", [k for k in ("duckdb", "polars_lazy") if k in CONVERT])
def test_quick_entry_points_give_identical_numbers(kind: str) -> None:
    for name in ("accuracy", "pass_k", "read_runs"):
        make, fn = RECIPES[name]
        pd.testing.assert_frame_equal(_call(fn, CONVERT[kind](make())), _call(fn, make()), check_exact=True)


def test_objects_that_are_not_tables_are_refused() -> None:
    assert not is_foreign_table(np) and narwhals_frame([1, 2]) is None
    with pytest.raises(DataError, match=r"expected a runs table .* got module"):
        evalmix.accuracy(np, "model")


# ---------------------------------------------------------------------------------- the slow step


# the MCMC fits that compile a model of their own for each call (tens of seconds each): the walk checks
# that each type reaches them through the door, by the error a column absent from the data gives
# (it names the columns the fit saw); the door's output equals pandas' (test_the_door_gives_the_pandas_frame)
SAMPLED: dict[str, Callable[[Any], Any]] = {
    "bayes.lmer": lambda t: bayes.lmer("score ~ nope + (1|item)", t, **TINY),
    "bayes.clmm": lambda t: bayes.clmm("rating ~ nope + (1|item)", t, **TINY),
    "bayes.glmmtmb": lambda t: bayes.glmmtmb("score ~ nope + (1|item)", t, **TINY),
    "fit_irt_bayes": lambda t: evalmix.fit_irt_bayes(t, model="nope", draws=20, tune=20, chains=1),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(RECIPES))
def test_every_entry_point_gives_the_pandas_numbers_for_every_type(name: str) -> None:
    make, fn = RECIPES[name]
    if name in SAMPLED:
        with pytest.raises((DataError, evalmix.FormulaError)) as want:
            SAMPLED[name](make())
        for kind, convert in CONVERT.items():
            with pytest.raises(type(want.value)) as got:
                SAMPLED[name](convert(make()))
            assert str(got.value) == str(want.value), kind
        return
    want = _call(fn, make())
    for kind, convert in CONVERT.items():
        got = _call(fn, convert(make()))
        pd.testing.assert_frame_equal(got, want, check_exact=False, rtol=1e-10, atol=1e-12,
                                      obj=f"{name} on a {kind} table")
