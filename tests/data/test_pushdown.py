"""Aggregation in the engine: a lazy runs table (polars LazyFrame, DuckDB relation) is reduced by its own
engine to k-of-n counts per (model, item, slices) cell; accuracy and pass@k on it equal the pandas path,
and a table that breaks a rule gives the pandas path's error, naming the rows."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import pandas as pd
import polars as pl
import pytest

import evalmix
from evalmix.core.errors import DataError
from evalmix.data.pushdown import counts_in_engine

ROOT = Path(__file__).resolve().parents[2]

try:
    import duckdb
except ImportError:  # in the test extra (CI installs it); without it the DuckDB cases are not collected
    duckdb = None


def _duckdb(df: pd.DataFrame) -> Any:
    con = duckdb.connect()
    con.register("runs", df)
    return con.table("runs")


LAZY: dict[str, Callable[[pd.DataFrame], Any]] = {"polars_lazy": lambda df: pl.from_pandas(df).lazy()}
if duckdb is not None:
    LAZY["duckdb"] = _duckdb


def _runs() -> pd.DataFrame:
    """The bundled example on its first 20 items: 8 models x 20 items x 2 x 2 slices x 3 runs."""
    runs = pd.read_csv(ROOT / "data" / "example_runs.csv")
    return runs[runs["item"] <= "q020"].reset_index(drop=True)


def _numbers(result: Any) -> pd.DataFrame:
    return result.to_frame().select_dtypes("number")


@pytest.mark.parametrize("kind", sorted(LAZY))
def test_only_the_counts_reach_pandas(kind: str) -> None:
    runs = _runs()
    counts = counts_in_engine(LAZY[kind](runs))
    assert isinstance(counts, pd.DataFrame)
    # one row per model x item x language x prompt cell, k correct of n = 3 runs
    assert len(counts) == len(runs) // 3 and set(counts["n"]) == {3}
    assert counts["k"].sum() == runs["correct"].sum()
    assert counts.attrs["evalmix"]["successes"] == "k" and counts.attrs["evalmix"]["trials"] == "n"


def _same(runs: pd.DataFrame, lazy: Any, accuracy: dict[str, Any], pass_k: dict[str, Any]) -> None:
    want, got = evalmix.accuracy(runs, **accuracy), evalmix.accuracy(lazy, **accuracy)
    pd.testing.assert_frame_equal(_numbers(got), _numbers(want), rtol=1e-12, atol=1e-12)
    want, got = evalmix.pass_k(runs, **pass_k), evalmix.pass_k(lazy, **pass_k)
    pd.testing.assert_frame_equal(_numbers(got), _numbers(want), rtol=1e-12, atol=1e-12)
    assert repr(got) == repr(want)


@pytest.mark.parametrize("kind", sorted(LAZY))
def test_accuracy_and_pass_k_equal_the_pandas_path(kind: str) -> None:
    runs = _runs()
    _same(runs, LAZY[kind](runs), {"by": ["model", "language"]}, {"k": 2, "outcome": "correct"})


@pytest.mark.parametrize("kind", sorted(LAZY))
def test_rank_sets_equal_the_pandas_path(kind: str) -> None:
    runs = _runs()
    for kw in ({"n_boot": 200, "rng": 1}, {"by": "language", "n_boot": 100, "rng": 2, "run": "run", "outcome": "correct"}):
        want, got = evalmix.rank_sets(runs, **kw), evalmix.rank_sets(LAZY[kind](runs), **kw)
        pd.testing.assert_frame_equal(got.to_frame(), want.to_frame())
        assert repr(got) == repr(want)


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(LAZY))
def test_accuracy_and_pass_k_equal_the_pandas_path_in_every_mode(kind: str) -> None:
    runs = pd.read_csv(ROOT / "data" / "example_runs.csv")
    lazy = LAZY[kind](runs)
    _same(runs, lazy, {"by": ["model", "language"], "ci": "cluster"}, {"k": [1, 3], "by": ["model", "prompt"]})
    _same(runs, lazy, {"by": "model", "ci": "clopper_pearson"}, {"k": 2, "ci": "bootstrap", "rng": 1, "n_boot": 200})


@pytest.mark.parametrize("kind", sorted(LAZY))
def test_a_broken_rule_gives_the_pandas_error(kind: str) -> None:
    runs = _runs().head(60)
    outside = runs.assign(correct=runs["correct"].where(runs.index != 4, 2))
    repeated = pd.concat([runs, runs.head(3)], ignore_index=True)  # three rows twice: duplicated keys
    for bad in (outside, repeated):
        with pytest.raises(DataError) as want:
            evalmix.accuracy(bad, "model")
        with pytest.raises(DataError) as got:
            evalmix.accuracy(LAZY[kind](bad), "model")
        assert str(got.value) == str(want.value)


def test_eager_and_other_tables_pass_through_unchanged() -> None:
    runs = _runs().head(12)
    eager = pl.from_pandas(runs)
    assert counts_in_engine(eager) is eager and counts_in_engine(runs) is runs
    ratings = pl.from_pandas(runs.assign(correct=runs["correct"] + 3)).lazy()  # not 0/1: a mean, not counts
    assert counts_in_engine(ratings) is ratings


def test_a_parquet_glob_is_scanned_and_reduced_in_the_engine(tmp_path: Path) -> None:
    runs = _runs()
    half = len(runs) // 2
    runs.iloc[:half].to_parquet(tmp_path / "part-1.parquet")
    runs.iloc[half:].to_parquet(tmp_path / "part-2.parquet")
    files = str(tmp_path / "part-*.parquet")
    counts = counts_in_engine(files)
    assert isinstance(counts, pd.DataFrame) and len(counts) == len(runs) // 3
    _same(runs, files, {"by": ["model", "language"]}, {"k": 2})
    # a broken rule: the files are read whole and the rules name the row
    runs.assign(correct=runs["correct"].where(runs.index != 4, 2)).iloc[:half].to_parquet(tmp_path / "part-1.parquet")
    with pytest.raises(DataError, match=r"outcome column 'correct' .*row 4: correct=2"):
        evalmix.accuracy(files, "model")
    assert counts_in_engine(str(tmp_path / "none-*.parquet")) == str(tmp_path / "none-*.parquet")
