"""Every lazy source (a Parquet file, folder and glob; DuckDB; a polars LazyFrame; Dask) reduced in
its own engine gives glmer, accuracy, pass@k, rank sets and ``evalmix describe`` the numbers of the
pandas path (fixed effects, theta, log-likelihood and standard errors to 1e-6; counts exactly), the
same result objects, and the same errors for a bad column (missing, wrong type, NaN outcome)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import polars as pl
import pytest

import evalmix
from evalmix.cli import main
from evalmix.core.errors import DataError, FormulaError
from evalmix.data import pushdown
from evalmix.simulate import glmm_runs

duckdb = pytest.importorskip("duckdb")  # the test extra installs it
dd = pytest.importorskip("dask.dataframe")  # the cluster extra (and the test extra) install it

FORMULA = "correct ~ model + (1|item)"


def _runs() -> pd.DataFrame:
    """3 models x 30 items x 2 runs, with a slice column."""
    runs = glmm_runs(3, 30, 2, rng=1)
    return runs.assign(language=np.where(runs["item"] < "q16", "EN", "ES"))


def _duckdb(df: pd.DataFrame, tmp: Path) -> Any:
    con = duckdb.connect()
    con.register("runs", df)
    return con.table("runs")


def _parquet_file(df: pd.DataFrame, tmp: Path) -> str:
    df.to_parquet(tmp / "runs.parquet", index=False)
    return str(tmp / "runs.parquet")


def _parquet_parts(df: pd.DataFrame, tmp: Path) -> Path:
    (tmp / "parts").mkdir()
    half = len(df) // 2
    df.iloc[:half].to_parquet(tmp / "parts" / "part-0.parquet", index=False)
    df.iloc[half:].to_parquet(tmp / "parts" / "part-1.parquet", index=False)
    return tmp / "parts"


SOURCES: dict[str, Callable[[pd.DataFrame, Path], Any]] = {
    "polars_lazy": lambda df, tmp: pl.from_pandas(df).lazy(),
    "duckdb": _duckdb,
    "parquet_file": _parquet_file,
    "parquet_folder": _parquet_parts,
    "parquet_glob": lambda df, tmp: str(_parquet_parts(df, tmp) / "part-*.parquet"),
    "dask": lambda df, tmp: dd.from_pandas(df, npartitions=2),
}


def _kinds(default: set[str], kinds: list[str] | None = None) -> list[Any]:
    """The sources, those outside ``default`` in the second test step (Dask's scheduler costs
    seconds; the Parquet layouts share one reader)."""
    return [k if k in default else pytest.param(k, marks=pytest.mark.slow) for k in (kinds or sorted(SOURCES))]


def _same_fit(got: Any, want: Any) -> None:
    assert type(got) is type(want)
    np.testing.assert_allclose(got.fixef.to_numpy(), want.fixef.to_numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(got.theta.to_numpy(), want.theta.to_numpy(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(got.vcov.to_numpy(), want.vcov.to_numpy(), rtol=0, atol=1e-6)
    # the row fit's log-likelihood (0/1 rows: no binomial coefficient) and number of rows
    assert got.loglik == pytest.approx(want.loglik, abs=1e-6)
    assert got.nobs == want.nobs and got.df == want.df
    assert list(got.fixef.index) == list(want.fixef.index)


@pytest.mark.parametrize("kind", _kinds({"polars_lazy"}))
def test_glmer_on_every_source_equals_the_row_fit(kind: str, tmp_path: Path) -> None:
    runs = _runs()
    want = evalmix.glmer(FORMULA, runs)
    _same_fit(evalmix.glmer(FORMULA, SOURCES[kind](runs, tmp_path)), want)


def test_the_counts_reach_glmer_per_cell_of_the_formula(monkeypatch: pytest.MonkeyPatch) -> None:
    runs = _runs()
    seen: list[pd.DataFrame] = []
    real = pushdown.formula_counts

    def spy(*args: Any, **kwargs: Any) -> Any:
        out = real(*args, **kwargs)
        seen.append(out)
        return out

    monkeypatch.setattr("evalmix.glmm.formula_counts", spy)
    evalmix.glmer("correct ~ language + (1|model)", pl.from_pandas(runs).lazy())
    # 3 models x 2 languages, each cell the sum of its rows
    (counts,) = seen
    assert counts.shape == (6, 4) and counts["_trials"].sum() == len(runs)
    want = runs.groupby(["language", "model"])["correct"].agg(["sum", "size"]).reset_index()
    got = counts.sort_values(["language", "model"]).reset_index(drop=True)
    assert got["correct"].tolist() == want["sum"].tolist() and got["_trials"].tolist() == want["size"].tolist()


@pytest.mark.parametrize("kind", _kinds(set(), ["dask", "parquet_glob"]))
def test_accuracy_pass_k_and_rank_sets_on_dask_and_parquet(kind: str, tmp_path: Path) -> None:
    runs = _runs()
    source = SOURCES[kind](runs, tmp_path)
    for fn, kw in ((evalmix.accuracy, {"by": ["model", "language"]}), (evalmix.pass_k, {"k": 2}),
                   (evalmix.rank_sets, {"n_boot": 100, "rng": 1})):
        want, got = fn(runs, **kw), fn(source, **kw)
        assert type(got) is type(want) and repr(got) == repr(want)
        pd.testing.assert_frame_equal(got.to_frame(), want.to_frame(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", _kinds({"polars_lazy"}, ["polars_lazy", "duckdb", "dask"]))
def test_accuracy_groups_are_summed_in_the_engine(kind: str, tmp_path: Path) -> None:
    runs = _runs()
    counts = pushdown.counts_in_engine(SOURCES[kind](runs, tmp_path), by=["language"])
    assert isinstance(counts, pd.DataFrame)
    assert counts.values.tolist() == [["EN", int(runs.loc[runs["language"] == "EN", "correct"].sum()), 90],
                                      ["ES", int(runs.loc[runs["language"] == "ES", "correct"].sum()), 90]]
    # the item-clustered interval reads per-item counts, summed over runs in the engine
    want = evalmix.accuracy(runs, "model", ci="cluster")
    got = evalmix.accuracy(SOURCES[kind](runs, tmp_path), "model", ci="cluster")
    pd.testing.assert_frame_equal(got.to_frame(), want.to_frame(), rtol=1e-12, atol=1e-12)


def _error(fn: Callable[[Any], Any], data: Any) -> tuple[type, str]:
    with pytest.raises((DataError, FormulaError)) as caught:
        fn(data)
    return type(caught.value), str(caught.value)


BAD = {
    "missing column": lambda runs: runs.drop(columns="item"),
    "wrong type": lambda runs: runs.assign(correct=runs["correct"].map({0: "no", 1: "yes"}).where(
        runs.index != 3, "maybe")),
    "NaN outcome": lambda runs: runs.assign(correct=runs["correct"].astype(float).where(runs.index != 5)),
    "duplicated run": lambda runs: pd.concat([runs, runs.iloc[[7]]], ignore_index=True),
}


@pytest.mark.parametrize("kind", _kinds({"polars_lazy"}, ["polars_lazy", "duckdb", "parquet_glob", "dask"]))
def test_a_bad_column_gives_the_pandas_error_from_every_source(kind: str, tmp_path: Path) -> None:
    for name, make in BAD.items():
        bad = make(_runs())
        for i, fn in enumerate((lambda d: evalmix.glmer(FORMULA, d), lambda d: evalmix.accuracy(d, "model"))):
            folder = tmp_path / f"{name.replace(' ', '_')}{i}"
            folder.mkdir()
            assert _error(fn, SOURCES[kind](bad, folder)) == _error(fn, bad), (name, kind)


def test_a_large_table_sends_only_the_offending_rows_to_the_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pushdown, "WHOLE_MAX", 0)  # every table counts as large
    runs = _runs()
    nan = runs.assign(correct=runs["correct"].astype(float).where(runs.index != 5))
    for fn in (lambda d: evalmix.glmer(FORMULA, d), lambda d: evalmix.accuracy(d, "model")):
        with pytest.raises(DataError, match=r"outcome column 'correct' has 1 missing value.*item='q06', run=1"):
            fn(pl.from_pandas(nan).lazy())
    repeated = pd.concat([runs, runs.iloc[[7]]], ignore_index=True)
    with pytest.raises(DataError, match=r"share a key .*item='q08', run=1"):
        evalmix.glmer(FORMULA, duckdb.from_df(repeated))


def test_describe_reads_a_parquet_source_in_the_engine(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    runs = _runs()
    runs.to_csv(tmp_path / "runs.csv", index=False)
    folder = _parquet_parts(runs, tmp_path)
    out = []
    for source in (tmp_path / "runs.csv", folder, folder / "part-*.parquet"):
        assert main(["describe", str(source), "--json"]) == 0
        out.append(json.loads(capsys.readouterr().out))
    assert out[1] == out[0] and out[2] == out[0]
    assert [row["language"] for row in out[0]["table"]][:2] == ["EN", "ES"]  # model x slice by default
    # a bad column: exit 2, the error names the file and the column
    runs.assign(correct=runs["correct"].astype(float).where(runs.index != 5)).to_parquet(
        tmp_path / "bad.parquet", index=False)
    assert main(["describe", str(tmp_path / "bad.parquet")]) == 2
    assert "bad.parquet: outcome column 'correct' has 1 missing value" in capsys.readouterr().err


@pytest.mark.slow
def test_the_duplicate_check_with_run_bits_and_with_distinct_counts() -> None:
    runs = _runs()
    # runs 1 and 7 (not consecutive) are distinct: counted; text run labels take COUNT(DISTINCT)
    spread = runs.assign(run=runs["run"].map({1: 1, 2: 7}))
    labels = runs.assign(run="r" + runs["run"].astype(str))
    # runs past 0-99 (their span found by a second query), and runs too far apart for bits
    late, apart = runs.assign(run=runs["run"] + 1000), runs.assign(run=runs["run"].map({1: 1, 2: 5000}))
    for table in (spread, labels, late, apart):
        counts = pushdown.counts_in_engine(pl.from_pandas(table).lazy())
        assert isinstance(counts, pd.DataFrame) and set(counts["n"]) == {2}
        repeated = pd.concat([table, table.iloc[[7]]], ignore_index=True)
        want = _error(lambda d: evalmix.accuracy(d, "model"), repeated)
        assert _error(lambda d: evalmix.accuracy(d, "model"), duckdb.from_df(repeated)) == want
    # a run repeated so often that its bits would carry into the next run's: still a duplicate
    many = pd.concat([runs.iloc[[0]].assign(run=1)] * 2 + [runs.iloc[[0]].assign(run=2)], ignore_index=True)
    with pytest.raises(DataError, match="share a key"):
        evalmix.accuracy(pl.from_pandas(many).lazy(), "model")


def test_a_progress_line_on_a_terminal_only(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    lazy = pl.from_pandas(_runs()).lazy()
    pushdown.counts_in_engine(lazy)
    assert capsys.readouterr().err == ""  # not a terminal: nothing
    import io
    import sys

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    pushdown.counts_in_engine(lazy)
    assert re.fullmatch(r"evalmix: polars: GROUP BY model, item, language \.\.\. \d+\.\d s\n", terminal.getvalue())


def test_a_hive_partitioned_folder_keeps_its_partition_columns(tmp_path: Path) -> None:
    runs = _runs()
    runs.to_parquet(tmp_path / "hive", partition_cols=["language"], index=False)
    assert pushdown.scan_columns(tmp_path / "hive") == ["model", "item", "run", "correct", "language"]
    got = evalmix.accuracy(tmp_path / "hive", ["model", "language"]).to_frame()
    want = evalmix.accuracy(runs, ["model", "language"]).to_frame()
    assert got.astype(str).values.tolist() == want.astype(str).values.tolist()
