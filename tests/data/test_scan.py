"""Parquet input at scale: read_runs on files and partitioned folders, aggregate_runs to k-of-n."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalmix
from evalmix import DataError, glmer, read_runs
from evalmix import scan as scan_module
from evalmix.data.scan import aggregate_runs


def _runs(seed: int = 1) -> pd.DataFrame:
    d = evalmix.simulate.glmm_runs(3, 40, 3, model_effects=[-0.5, 0.0, 0.7], rng=seed)
    d["language"] = np.where(d["item"].str[-1].astype(int) % 2 == 0, "EN", "FR")
    d["benchmark"] = np.where(d["item"] < "q21", "math", "code")
    return d


def _partitioned(d: pd.DataFrame, folder: Path) -> Path:
    """One hive partition per benchmark, two files per partition with different dictionaries."""
    for b, sub in d.groupby("benchmark"):
        part = folder / f"benchmark={b}"
        part.mkdir(parents=True)
        sub = sub.drop(columns="benchmark")
        for i, half in enumerate([sub.iloc[: len(sub) // 2], sub.iloc[len(sub) // 2:]]):
            half.to_parquet(part / f"part-{i}.parquet", index=False)
    return folder


def _expected(d: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    g = d.groupby(keys, observed=True)["correct"].agg(["sum", "count"]).reset_index()
    return g.rename(columns={"sum": "correct", "count": "trials"})


def _compare(got: pd.DataFrame, want: pd.DataFrame, keys: list[str]) -> None:
    assert len(got) == len(want)
    m = got.astype({k: str for k in keys}).merge(want.astype({k: str for k in keys}), on=keys,
                                                  suffixes=("", "_want"))
    assert len(m) == len(want)
    assert (m["correct"] == m["correct_want"]).all() and (m["trials"] == m["trials_want"]).all()


@pytest.mark.parametrize("formula,keys", [
    ("correct ~ model + (1|item)", ["model", "item"]),
    ("correct ~ model * language + (1|item)", ["model", "language", "item"]),
    ("correct ~ model + benchmark + (1|item) + (1|item:run)", ["model", "benchmark", "item", "run"]),
])
def test_counts_equal_a_groupby_of_the_rows(tmp_path: Path, formula: str, keys: list[str]) -> None:
    d = _runs()
    counts = aggregate_runs(_partitioned(d, tmp_path), formula)
    _compare(counts, _expected(d, keys), keys)
    assert set(counts.columns) == set(keys) | {"correct", "trials"}
    # sorted by the keys, levels in R order, roles recorded as for a counts table
    assert list(counts["model"].cat.categories) == ["M1", "M2", "M3"]
    assert counts.attrs["evalmix"]["successes"] == "correct" and counts.attrs["evalmix"]["trials"] == "trials"
    order = counts[["model", "item"]].apply(lambda c: c.cat.codes).to_numpy()
    assert (np.diff(order[:, 0]) >= 0).all()


def test_the_glmm_on_the_counts_is_the_glmm_on_the_rows(tmp_path: Path) -> None:
    d = _runs()
    formula = "correct ~ model + language + (1|item)"
    counts = aggregate_runs(_partitioned(d, tmp_path), formula)
    a = glmer(formula, counts, trials="trials")
    b = glmer(formula, d)
    np.testing.assert_allclose(a.fixef.to_numpy(), b.fixef.to_numpy(), atol=1e-6)
    np.testing.assert_allclose(a.theta.to_numpy(), b.theta.to_numpy(), atol=1e-5)
    np.testing.assert_allclose(np.diag(a.vcov), np.diag(b.vcov), rtol=1e-4)


def test_dense_and_sorted_grouping_agree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = _partitioned(_runs(), tmp_path)
    dense = aggregate_runs(folder, "correct ~ model + language + (1|item) + (1|item:run)")
    monkeypatch.setattr(scan_module, "_DENSE_MAX", 0)
    sorted_ = aggregate_runs(folder, "correct ~ model + language + (1|item) + (1|item:run)")
    pd.testing.assert_frame_equal(dense, sorted_)


def test_filters_and_columns_are_pushed_down(tmp_path: Path) -> None:
    d = _runs()
    folder = _partitioned(d, tmp_path)
    got = aggregate_runs(folder, "correct ~ model + (1|item)",
                         filters={"benchmark": "math", "run": np.array([1, 2])})
    want = d[(d["benchmark"] == "math") & d["run"].isin([1, 2])]
    _compare(got, _expected(want, ["model", "item"]), ["model", "item"])
    # only used values become levels: items of the other benchmark are not categories
    assert set(got["item"].cat.categories) == set(want["item"])
    runs = read_runs(folder, columns=["model", "item", "run", "correct", "benchmark"],
                     filters=[("benchmark", "==", "code"), ("model", "in", ["M1", "M3"])])
    assert runs.columns.tolist() == ["model", "item", "run", "correct", "benchmark"]
    assert set(runs["benchmark"]) == {"code"} and list(runs["model"].cat.categories) == ["M1", "M3"]
    assert len(runs) == len(d[(d["benchmark"] == "code") & d["model"].isin(["M1", "M3"])])
    assert runs.attrs["evalmix"]["slices"] == ["benchmark"]


def test_read_runs_on_a_folder_equals_read_runs_on_the_rows(tmp_path: Path) -> None:
    d = _runs()
    a = read_runs(_partitioned(d, tmp_path))
    b = read_runs(d)
    key = ["model", "item", "run", "language", "benchmark"]
    a = a.astype({k: str for k in key}).sort_values(key).reset_index(drop=True)
    b = b.astype({k: str for k in key}).sort_values(key).reset_index(drop=True)
    pd.testing.assert_frame_equal(a[b.columns], b, check_dtype=False)


def test_counts_input_is_summed_and_numeric_keys_stay_numbers(tmp_path: Path) -> None:
    d = pd.DataFrame({"model": ["a", "a", "b", "b"], "item": ["x", "y", "x", "y"],
                      "temperature": [0.0, 0.7, 0.0, 0.7], "k": [3, 1, 2, 0], "n": [4, 4, 4, 4]})
    d.to_parquet(tmp_path / "c.parquet")
    got = aggregate_runs(tmp_path / "c.parquet", "k ~ model + temperature + (1|item)", successes="k",
                         trials="n", run=None)
    assert got["temperature"].dtype == float
    assert got[["k", "n"]].to_numpy().tolist() == [[3, 4], [1, 4], [2, 4], [0, 4]]


@pytest.mark.parametrize("change,match", [
    (lambda d: d.assign(correct=d["correct"].where(d.index != 7)), r"outcome column 'correct' has 1 missing"),
    (lambda d: d.assign(correct=np.where(d.index == 3, 2, d["correct"])), r"must be 0/1 or True/False"),
    (lambda d: d.assign(correct=d["correct"].map({0: "no", 1: "yes"})), r"must be 0/1 or True/False"),
    (lambda d: d.assign(item=d["item"].where(d.index != 5)), r"key column 'item' has 1 missing"),
    (lambda d: pd.concat([d, d.iloc[[4]]]), r"2 rows share a \(model, item, run, slices\) key"),
    (lambda d: d.drop(columns="run"), r"missing column\(s\) 'run'"),
])
def test_bad_rows_are_named(tmp_path: Path, change, match: str) -> None:
    path = tmp_path / "runs.parquet"
    change(_runs().drop(columns=["benchmark", "language"])).to_parquet(path, index=False)
    with pytest.raises(DataError, match=match) as err:
        aggregate_runs(path, "correct ~ model + (1|item)")
    assert str(path) in str(err.value)


def test_duplicates_across_unused_slices_are_not_duplicates(tmp_path: Path) -> None:
    # the same (model, item, run) in two languages is two rows, as read_runs sees it
    base = _runs().drop(columns="language")
    d = pd.concat([base.assign(language="EN"), base.assign(language="FR")], ignore_index=True)
    d.to_parquet(tmp_path / "r.parquet", index=False)
    got = aggregate_runs(tmp_path / "r.parquet", "correct ~ model + (1|item)")
    assert (got["trials"] == 6).all()
    _compare(got, _expected(d, ["model", "item"]), ["model", "item"])
    with pytest.raises(DataError, match="share a"):
        aggregate_runs(tmp_path / "r.parquet", "correct ~ model + (1|item)", slices=[])
    # a duplicate hidden by a slice the formula does not use is still found
    dup = pd.concat([d, d.iloc[[0]]])
    dup.to_parquet(tmp_path / "dup.parquet", index=False)
    with pytest.raises(DataError, match="2 rows share a"):
        aggregate_runs(tmp_path / "dup.parquet", "correct ~ model + (1|item)")


def test_bad_arguments_are_named(tmp_path: Path) -> None:
    folder = _partitioned(_runs(), tmp_path)
    with pytest.raises(DataError, match="'suite'"):
        aggregate_runs(folder, "correct ~ model + (1|item)", filters={"suite": "x"})
    with pytest.raises(DataError, match="'prompt'"):
        aggregate_runs(folder, "correct ~ model + prompt + (1|item)")
    with pytest.raises(DataError, match="no rows match the filters"):
        aggregate_runs(folder, "correct ~ model + (1|item)", filters={"benchmark": "chem"})
    with pytest.raises(DataError, match="no such file"):
        aggregate_runs(tmp_path / "absent", "correct ~ model + (1|item)")
    with pytest.raises(DataError, match="holds no Parquet file"):
        (tmp_path / "empty").mkdir()
        aggregate_runs(tmp_path / "empty", "correct ~ model + (1|item)")
    with pytest.raises(DataError, match="apply to Parquet"):
        _runs().to_csv(tmp_path / "r.csv", index=False)
        read_runs(tmp_path / "r.csv", filters={"run": 1})
    with pytest.raises(DataError, match=r"column\(s\) 'score' not in the data"):
        read_runs(folder, columns=["model", "score"])


@pytest.mark.filterwarnings("ignore:factor:evalmix.DataWarning")  # one-level draws warn, by design
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(n_models=st.integers(1, 4), n_items=st.integers(1, 6), n_runs=st.integers(1, 3),
       seed=st.integers(0, 10_000), files=st.integers(1, 3), batch=st.sampled_from([3, 7, 1 << 20]))
def test_any_split_into_files_and_batches_gives_the_same_counts(tmp_path_factory, n_models: int, n_items: int,
                                                                n_runs: int, seed: int, files: int,
                                                                batch: int) -> None:
    rng = np.random.default_rng(seed)
    grid = pd.MultiIndex.from_product([[f"m{i}" for i in range(n_models)], [f"q{i}" for i in range(n_items)],
                                       range(1, n_runs + 1)], names=["model", "item", "run"]).to_frame(index=False)
    grid["correct"] = rng.integers(0, 2, len(grid)).astype(bool)
    grid = grid.sample(frac=1.0, random_state=seed).reset_index(drop=True)
    folder = tmp_path_factory.mktemp("split")
    cuts = np.linspace(0, len(grid), files + 1).astype(int)
    for i, (a, b) in enumerate(zip(cuts[:-1], cuts[1:])):
        part = grid.iloc[a:b]
        if len(part):
            pq.write_table(pa.Table.from_pandas(part, preserve_index=False), folder / f"p{i}.parquet")
    got = aggregate_runs(folder, "correct ~ model + (1|item)", batch_rows=batch)
    _compare(got, _expected(grid.assign(correct=grid["correct"].astype(int)), ["model", "item"]),
             ["model", "item"])


def test_design_warnings_as_read_runs_gives_them(tmp_path: Path) -> None:
    d = _runs().drop(columns=["benchmark", "language"])
    gappy = d[~((d["model"] == "M2") & d["item"].isin(["q01", "q02"])) & ~((d["model"] == "M3") & (d["run"] == 3)
                                                                        & (d["item"] == "q05"))]
    gappy.to_parquet(tmp_path / "g.parquet", index=False)
    with pytest.warns(evalmix.DataWarning) as got:
        aggregate_runs(tmp_path / "g.parquet", "correct ~ model + (1|item)")
    text = [str(w.message) for w in got]
    assert any("2 item(s) in 'item' were not answered by every model (e.g. 'q01')" in t
               and "'M2' (38 items)" in t for t in text)
    assert any("number of rows (runs) per ('model', 'item') cell varies between 2 and 3" in t for t in text)
    with pytest.warns(evalmix.DataWarning) as want:
        read_runs(gappy)
    assert any("2 item(s) in 'item' were not answered by every model" in str(w.message) for w in want)
    # a balanced table warns nothing
    d.to_parquet(tmp_path / "b.parquet", index=False)
    import warnings as w_

    with w_.catch_warnings():
        w_.simplefilter("error")
        aggregate_runs(tmp_path / "b.parquet", "correct ~ model + (1|item) + (1|item:run)")
