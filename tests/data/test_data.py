"""read_runs: validation errors name the culprit; valid input keeps every row."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix import DataError, DataWarning, read_runs


def balanced(n_models=2, n_items=3, n_runs=2) -> pd.DataFrame:
    rows = [(f"m{m}", f"q{i}", r, (m + i + r) % 2) for m in range(n_models) for i in range(n_items)
            for r in range(1, n_runs + 1)]
    return pd.DataFrame(rows, columns=["model", "item", "run", "correct"])


def test_valid_table_keeps_rows_and_records_roles():
    df = balanced()
    df["language"] = "EN"
    df.loc[df.index % 2 == 0, "language"] = "ES"
    df = pd.concat([df, df.assign(language=np.where(df.language == "EN", "ES", "EN"))], ignore_index=True)
    out = read_runs(df)
    assert len(out) == len(df)
    assert out["correct"].tolist() == df["correct"].tolist()
    assert isinstance(out["model"].dtype, pd.CategoricalDtype)
    assert isinstance(out["language"].dtype, pd.CategoricalDtype)
    assert out.attrs["evalmix"]["slices"] == ["language"]
    assert evalmix.schema_of(out).keys == ["model", "item", "run", "language"]


def test_input_frame_is_not_modified():
    df = balanced()
    before = df.copy()
    read_runs(df)
    pd.testing.assert_frame_equal(df, before)


def test_levels_sorted_like_r():
    df = balanced()
    df["model"] = df["model"].map({"m0": "o3-mini", "m1": "Grok-4"})
    out = read_runs(df)
    assert list(out["model"].cat.categories) == ["Grok-4", "o3-mini"]
    df["item"] = df["item"].map({"q0": 10, "q1": 9, "q2": 100})
    assert list(read_runs(df)["item"].cat.categories) == [9, 10, 100]


def test_bool_outcome_and_custom_names():
    df = balanced().rename(columns={"item": "problem_id", "correct": "ok"})
    df["ok"] = df["ok"].astype(bool)
    out = read_runs(df, item="problem_id", outcome="ok")
    assert out["ok"].dtype == np.int8
    assert out.attrs["evalmix"]["item"] == "problem_id"


def test_missing_column_lists_present_columns():
    with pytest.raises(DataError, match=r"missing column\(s\) 'correct'.*'model', 'item', 'run'"):
        read_runs(balanced().drop(columns="correct"))


def test_outcome_outside_binary_shows_rows():
    df = balanced()
    df.loc[4, "correct"] = 2
    with pytest.raises(DataError) as err:
        read_runs(df)
    assert "'correct'" in str(err.value) and "4" in str(err.value) and "2" in str(err.value)


def test_text_outcome_rejected():
    df = balanced().astype({"correct": object})
    df.loc[1, "correct"] = "yes"
    with pytest.raises(DataError, match="(?s)non-numeric.*yes"):
        read_runs(df)


def test_fractional_outcome_needs_opt_in():
    df = balanced().astype({"correct": float})
    df.loc[0, "correct"] = 0.5
    with pytest.raises(DataError, match="allow_fractional"):
        read_runs(df)
    assert read_runs(df, allow_fractional=True)["correct"].iloc[0] == 0.5


@pytest.mark.parametrize("col", ["model", "item", "run", "correct"])
def test_missing_values_named(col):
    df = balanced().astype({col: object})
    df.loc[3, col] = None
    with pytest.raises(DataError, match=f"column '{col}' has 1 missing value"):
        read_runs(df)


def test_duplicate_key_shown():
    df = pd.concat([balanced(), balanced().iloc[[2]]], ignore_index=True)
    with pytest.raises(DataError, match="share a key") as err:
        read_runs(df)
    assert "m0" in str(err.value)


def test_empty_table():
    with pytest.raises(DataError, match="empty"):
        read_runs(balanced().iloc[:0])


def test_counts_validation():
    df = pd.DataFrame({"model": ["a", "a", "b", "b"], "item": [1, 2, 1, 2], "k": [1, 2, 0, 3],
                       "n": [3, 3, 3, 3]})
    out = read_runs(df, run=None, successes="k", trials="n")
    assert out.attrs["evalmix"]["successes"] == "k"
    bad = df.copy()
    bad.loc[3, "k"] = 4
    with pytest.raises(DataError, match="successes 'k' exceed trials 'n'"):
        read_runs(bad, run=None, successes="k", trials="n")
    bad = df.copy()
    bad.loc[0, "k"] = -1
    with pytest.raises(DataError, match="count column 'k' has negative"):
        read_runs(bad, run=None, successes="k", trials="n")
    bad = df.astype({"k": float})
    bad.loc[0, "k"] = 1.5
    with pytest.raises(DataError, match="whole numbers"):
        read_runs(bad, run=None, successes="k", trials="n")
    with pytest.raises(DataError, match="both successes= and trials="):
        read_runs(df, run=None, successes="k")


def test_unbalanced_design_warns_without_dropping_rows():
    df = balanced(n_models=3)
    df = df[~((df.model == "m2") & (df["item"] == "q0"))]
    with pytest.warns(DataWarning, match="'m2' \\(2 items\\)"):
        out = read_runs(df)
    assert len(out) == len(df)


def test_runs_vary_per_item_warns():
    df = balanced()
    df = df[~((df["item"] == "q1") & (df.run == 2))]
    with pytest.warns(DataWarning, match="number of runs"):
        read_runs(df)


def test_single_level_factor_reads_silently_and_lonely_item_warns():
    df = balanced()
    df["language"] = "EN"
    with warnings.catch_warnings():  # a single level only matters to a fit, which refuses it there
        warnings.simplefilter("error")
        read_runs(df)
    df = pd.concat([balanced(), pd.DataFrame({"model": ["m0"], "item": ["q9"], "run": [1], "correct": [1]})])
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        read_runs(df)
    assert any("only one model" in str(w.message) for w in rec)


def test_file_formats(tmp_path):
    df = balanced()
    df.to_csv(tmp_path / "r.csv", index=False)
    df.to_json(tmp_path / "r.jsonl", orient="records", lines=True)
    df.to_parquet(tmp_path / "r.parquet")
    for name in ("r.csv", "r.jsonl", "r.parquet"):
        out = read_runs(tmp_path / name)
        assert out["correct"].tolist() == df["correct"].tolist()
    (tmp_path / "r.txt").write_text("model,item,run,correct\n")
    with pytest.raises(DataError, match="unsupported file type '.txt'"):
        read_runs(tmp_path / "r.txt")
    with pytest.raises(DataError, match="no such file"):
        read_runs(tmp_path / "absent.csv")


def test_ai4math_validates(ai4math_raw):
    out = read_runs(ai4math_raw, item="problem_id")
    assert len(out) == 10080
    assert out.attrs["evalmix"]["slices"] == ["domain", "language", "prompt"]


def test_roles_travel_as_one_schema_object():
    # the slicing helpers and the paired comparisons name their columns with the same RunsSchema
    # that read_runs records, not with a shape of their own
    import evalmix.data.slicing as sl
    from evalmix.stats.comparisons import resolve_columns
    from evalmix.data.runs import RunsSchema

    assert not hasattr(sl, "Columns")
    counts = pd.DataFrame({"model": ["a", "a", "b", "b"], "item": ["q1", "q2", "q1", "q2"],
                           "k": [1, 2, 0, 3], "n": [3, 3, 3, 3]})
    runs = evalmix.read_runs(counts, run=None, successes="k", trials="n")
    _, roles = sl.resolve(runs, need_run=False)
    assert isinstance(roles, RunsSchema)
    assert (roles.item, roles.model, roles.scores, roles.trials) == ("item", "model", "k", "n")
    np.testing.assert_allclose(sl.scores(runs, roles), [1 / 3, 2 / 3, 0.0, 1.0])
    table, roles = resolve_columns(runs)
    assert isinstance(roles, RunsSchema) and not roles.counts and roles.scores == "_score"
    np.testing.assert_allclose(table[roles.scores], [1 / 3, 2 / 3, 0.0, 1.0])
    assert roles.role("model") == "model"
    with pytest.raises(DataError, match="no run column"):
        roles.role("run")
