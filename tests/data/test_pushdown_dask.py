"""A Dask DataFrame is reduced partition by partition (numpy per partition, Dask's tree reduction
across them): the counts equal those of the rows for every key, outcome and run type, every
partitioning and both ways of numbering a partition's cells; a repeated run is found within a
partition, across partitions and at the edges of the run bits' words; the errors are those of the
pandas path; and a Parquet source is read once."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import DataError
from evalmix.data import pushdown
from evalmix.simulate import glmm_runs

dd = pytest.importorskip("dask.dataframe")  # the cluster extra (and the test extra) install it

pytestmark = pytest.mark.slow  # Dask's scheduler costs a fraction of a second a call


def _runs() -> pd.DataFrame:
    """3 models x 30 items x 2 runs, with a slice column."""
    runs = glmm_runs(3, 30, 2, rng=1)
    return runs.assign(language=np.where(runs["item"] < "q16", "EN", "ES"))


def _want(table: pd.DataFrame, keys: list[str]) -> list[list[Any]]:
    """The k-of-n counts of the rows, per ``keys``, sorted."""
    got = table.assign(correct=table["correct"].astype(float)).groupby(keys, observed=True)["correct"]
    out = got.agg(["sum", "size"]).reset_index()
    return [[*(str(v) for v in row[:-2]), int(row[-2]), int(row[-1])] for row in out.itertuples(index=False)]


def _got(counts: Any, keys: list[str]) -> list[list[Any]]:
    assert isinstance(counts, pd.DataFrame) and list(counts.columns) == [*keys, "k", "n"]
    counts = counts.sort_values(keys).astype({c: str for c in keys})
    return [[*row[:-2], int(row[-2]), int(row[-1])] for row in counts.itertuples(index=False)]


VARIANTS: dict[str, Callable[[pd.DataFrame], pd.DataFrame]] = {
    "text keys": lambda r: r,
    "categorical keys": lambda r: r.astype({"model": "category", "item": "category"}),
    "integer item": lambda r: r.assign(item=r["item"].str[1:].astype(int)),
    "boolean outcome": lambda r: r.assign(correct=r["correct"].astype(bool)),
    "float outcome": lambda r: r.assign(correct=r["correct"].astype(float)),
    "nullable outcome and run": lambda r: r.assign(correct=r["correct"].astype("Int64"), run=r["run"].astype("Int64")),
    "shuffled rows": lambda r: r.sample(frac=1.0, random_state=3),
    "runs 104 and 105 (the last bits of the words)": lambda r: r.assign(run=r["run"] + 103),
    "runs 52 and 53 (either side of a word's edge)": lambda r: r.assign(run=r["run"] + 51),
    "runs past the guess (a second pass)": lambda r: r.assign(run=r["run"] + 1000),
    "runs too far apart for bits": lambda r: r.assign(run=r["run"].map({1: 1, 2: 5000})),
    "text runs": lambda r: r.assign(run="r" + r["run"].astype(str)),
}


@pytest.mark.parametrize("npartitions", [1, 4])
def test_the_counts_equal_those_of_the_rows(npartitions: int) -> None:
    for name, make in VARIANTS.items():
        table = make(_runs())
        cells = ["model", "item", "language"]
        got = pushdown.counts_in_engine(dd.from_pandas(table, npartitions=npartitions))
        assert _got(got, cells) == _want(table, cells), name
        # summed further per group in Dask
        by = pushdown.counts_in_engine(dd.from_pandas(table, npartitions=npartitions), by=["language"])
        assert _got(by, ["language"]) == _want(table, ["language"]), name


def test_sparse_and_renumbered_cells_give_the_same_counts(monkeypatch: pytest.MonkeyPatch) -> None:
    table = _runs().astype({"item": "category"})
    cells = ["model", "item", "language"]
    want = _want(table, cells)
    # the cells seen numbered first (as when the keys' codes span more numbers than rows) ...
    monkeypatch.setattr(pushdown, "_DASK_DENSE", 0)
    assert _got(pushdown.counts_in_engine(dd.from_pandas(table, npartitions=3)), cells) == want
    # ... and renumbered as the keys are read (as when their product would pass 2^61)
    monkeypatch.setattr(pushdown, "_DASK_RADIX", 2)
    assert _got(pushdown.counts_in_engine(dd.from_pandas(table, npartitions=3)), cells) == want


def test_a_hundred_distinct_runs_fill_the_words_and_a_repeat_is_found() -> None:
    # one cell with runs 0-105: every bit of both words, no carry
    full = pd.DataFrame({"model": "a", "item": "q1", "run": np.arange(106), "correct": np.arange(106) % 2})
    counts = pushdown.counts_in_engine(dd.from_pandas(full, npartitions=3))
    assert _got(counts, ["model", "item"]) == [["a", "q1", 53, 106]]
    for repeated in (np.r_[np.arange(105), 7], np.r_[np.arange(53), 52], np.r_[np.arange(53), 0]):
        table = pd.DataFrame({"model": "a", "item": "q1", "run": repeated, "correct": 1})
        for npartitions in (1, 2, 5):  # the repeat in one partition or in two
            with pytest.raises(DataError, match="share a key"):
                evalmix.accuracy(dd.from_pandas(table, npartitions=npartitions), "model")


def test_a_run_repeated_so_often_that_its_bits_carry_is_a_repeat() -> None:
    # 60 rows of run 1 (bit 2^1) sum to 120: four ones, not 60 (a repeated run carries)
    rows = pd.DataFrame({"model": "a", "item": "q1", "run": [1] * 60 + [2], "correct": 1})
    for npartitions in (1, 7):
        with pytest.raises(DataError, match="share a key"):
            evalmix.accuracy(dd.from_pandas(rows, npartitions=npartitions), "model")


def _error(fn: Callable[[Any], Any], data: Any) -> tuple[type, str]:
    with pytest.raises(DataError) as caught:
        fn(data)
    return type(caught.value), str(caught.value)


BAD: dict[str, Callable[[pd.DataFrame], pd.DataFrame]] = {
    "repeated run across partitions": lambda r: pd.concat([r, r.iloc[[7]]], ignore_index=True),
    "repeated run past the guess": lambda r: pd.concat([r, r.iloc[[7]]], ignore_index=True).assign(
        run=lambda d: d["run"] + 1000),
    "missing run": lambda r: r.assign(run=r["run"].astype("Int64").where(r.index != 4)),
    "missing outcome": lambda r: r.assign(correct=r["correct"].astype("Int64").where(r.index != 4)),
    "outcome 2": lambda r: r.assign(correct=r["correct"].where(r.index != 4, 2)),
}


def test_a_broken_rule_gives_the_pandas_error() -> None:
    for name, make in BAD.items():
        bad = make(_runs())
        for fn in (lambda d: evalmix.glmer("correct ~ model + (1|item)", d), lambda d: evalmix.accuracy(d, "model")):
            want = _error(fn, bad)
            for npartitions in (1, 3):
                assert _error(fn, dd.from_pandas(bad, npartitions=npartitions)) == want, name


def test_a_large_table_sends_only_the_offending_rows_to_the_checks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pushdown, "WHOLE_MAX", 0)  # every table counts as large
    runs = _runs()
    nan = runs.assign(correct=runs["correct"].astype(float).where(runs.index != 5))
    with pytest.raises(DataError, match=r"outcome column 'correct' has 1 missing value.*item='q06', run=1"):
        evalmix.accuracy(dd.from_pandas(nan, npartitions=3), "model")
    repeated = pd.concat([runs, runs.iloc[[7]]], ignore_index=True)
    with pytest.raises(DataError, match=r"share a key .*item='q08', run=1"):
        evalmix.glmer("correct ~ model + (1|item)", dd.from_pandas(repeated, npartitions=3))


def test_a_run_among_the_formula_keys_makes_each_cell_one_row() -> None:
    runs = _runs()
    keys = ["model", "item", "run"]
    counts = pushdown.formula_counts(dd.from_pandas(runs, npartitions=3), "correct", keys, check=print)
    assert counts is not None and counts["_trials"].tolist() == [1] * len(runs)
    assert counts["correct"].tolist() == runs.sort_values(keys)["correct"].tolist()
    twice = pd.concat([runs, runs.iloc[[7]]], ignore_index=True)
    seen: list[int] = []
    assert pushdown.formula_counts(dd.from_pandas(twice, npartitions=3), "correct", keys,
                                   check=lambda rows: seen.append(len(rows))) is None  # the row path's checks


def test_a_parquet_source_is_read_once(tmp_path: Path) -> None:
    from dask.callbacks import Callback

    runs = _runs()
    half = len(runs) // 2
    runs.iloc[:half].to_parquet(tmp_path / "part-0.parquet", index=False)
    runs.iloc[half:].to_parquet(tmp_path / "part-1.parquet", index=False)
    reads: list[str] = []

    class Reads(Callback):
        def _pretask(self, key: Any, dask: Any, state: Any) -> None:
            name = key[0] if isinstance(key, tuple) else key
            if "read_parquet" in str(name) or "readparquet" in str(name).lower():
                reads.append(str(key))

    with Reads():
        counts = pushdown.counts_in_engine(dd.read_parquet(tmp_path))
    cells = ["model", "item", "language"]
    assert _got(counts, cells) == _want(runs, cells)
    assert len(reads) == 2, reads  # each file once: the counts and the checks in one compute
