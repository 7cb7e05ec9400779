"""Continuous and ordinal outcomes in the descriptive layer: `evalmix describe` and
:func:`evalmix.accuracy` give means with item-clustered t intervals (R's ``t.test`` of the item
means) for ratings, partial credit and similarity scores such as MTEB's, and keep proportions with
binomial intervals for 0/1 outcomes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix as em
from evalmix.cli import main
from evalmix.core.errors import DataError

REF = Path(__file__).parents[1] / "reference"
DATA = pd.read_csv(REF / "describe_scores.csv")
EXPECTED = json.loads((REF / "describe_scores_reference.json").read_text())
MTEB = Path(__file__).parents[1] / "fixtures" / "mteb" / "run1"


@pytest.mark.parametrize("column", ["rating", "score"])
def test_means_match_r_t_test(column: str) -> None:
    res = em.accuracy(DATA, "model", outcome=column)
    assert res.kind == "mean" and res.ci == "t"
    table = res.table.set_index("model")
    assert list(table.columns) == ["n", "n_items", "estimate", "se", "conf_low", "conf_high"]
    for model, ref in EXPECTED[column].items():
        row = table.loc[model]
        assert int(row["n"]) == ref["n"] and int(row["n_items"]) == ref["n_items"]
        for key in ("estimate", "se", "conf_low", "conf_high"):
            assert row[key] == pytest.approx(ref[key], rel=1e-10, abs=1e-12), (model, key)


def test_scores_on_any_scale() -> None:
    """Scores out of 100 are described in their own units (no binomial interval is possible)."""
    hundred = DATA.assign(score=DATA["score"] * 100)
    table = em.accuracy(hundred, "model", outcome="score").table.set_index("model")
    for model, ref in EXPECTED["score"].items():
        assert table.loc[model, "estimate"] == pytest.approx(100 * ref["estimate"], rel=1e-10)
        assert table.loc[model, "conf_high"] == pytest.approx(100 * ref["conf_high"], rel=1e-10)


def test_overall_row_and_single_item_groups() -> None:
    overall = em.accuracy(DATA, outcome="rating").table
    item_means = DATA.groupby("item")["rating"].mean()  # the items are the clusters, pooled over models
    assert overall["n_items"].item() == 8 and overall["estimate"].item() == pytest.approx(item_means.mean())
    # a group of one item has no spread: its interval is missing rather than zero-width
    one = em.accuracy(DATA[DATA["item"] == "q1"], "model", outcome="rating").table
    assert one["conf_low"].isna().all() and one["n_items"].eq(1).all()


def test_binary_outcomes_keep_proportions() -> None:
    d = DATA.assign(correct=(DATA["rating"] >= 4).astype(int))
    res = em.accuracy(d, "model", outcome="correct")
    assert res.kind == "binary" and res.ci == "wilson"
    assert {"k", "estimate", "conf_low"} <= set(res.table.columns)
    assert str(res).splitlines()[0].startswith("Accuracy by model")
    assert str(em.accuracy(DATA, "model", outcome="rating")).splitlines()[0].startswith("Mean score by model")


def test_scores_need_an_item_column() -> None:
    with pytest.raises(DataError, match="item="):
        em.accuracy(DATA.drop(columns=["item", "run"]), "model", outcome="rating")


def test_status_column_with_scores() -> None:
    d = DATA.assign(status="ok")
    d.loc[0, "status"] = "error"
    table = em.accuracy(d, "model", outcome="rating").table.set_index("model")
    assert table.loc["a", "n_attempted"] == 24 and table.loc["a", "n"] == 23
    assert table.loc["b", "coverage"] == 1.0


def test_describe_command_on_ratings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "ratings.csv"
    DATA.to_csv(path, index=False)
    assert main(["describe", str(path), "--outcome", "rating", "--by", "model", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["outcome"] == "mean score" and doc["ci"] == "t"
    for row in doc["table"]:
        ref = EXPECTED["rating"][row["model"]]
        assert row["estimate"] == pytest.approx(ref["estimate"], rel=1e-10)
        assert row["conf_low"] == pytest.approx(ref["conf_low"], rel=1e-10)
    assert main(["describe", str(path), "--outcome", "rating", "--by", "model"]) == 0
    text = capsys.readouterr().out
    assert "item-clustered t interval" in text and "mean score" in text


def test_describe_command_on_mteb_scores(capsys: pytest.CaptureFixture[str]) -> None:
    """MTEB's continuous scores describe as 0/1 logs do: one row per model, a mean and its interval."""
    assert main(["describe", str(MTEB), "--by", "model", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    logs = em.read_logs(MTEB)
    expected = logs.groupby("model", observed=True)["score"].mean()
    assert [r["model"] for r in doc["table"]] == list(expected.index)
    for row in doc["table"]:
        assert row["estimate"] == pytest.approx(expected[row["model"]], rel=1e-12)
        assert row["n_items"] == 15 and row["conf_low"] < row["estimate"] < row["conf_high"]
    # the default grouping (model and every slice) runs too
    assert main(["describe", str(MTEB)]) == 0
    assert "item-clustered t interval" in capsys.readouterr().out


def test_describe_binary_unchanged(capsys: pytest.CaptureFixture[str]) -> None:
    example = Path(__file__).resolve().parents[2] / "data" / "example_runs.csv"
    assert main(["describe", str(example), "--by", "model", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "outcome" not in doc and doc["ci"] == "wilson"
    row = doc["table"][0]
    assert set(row) == {"model", "n", "k", "estimate", "conf_low", "conf_high"}
    assert np.isclose(row["estimate"], row["k"] / row["n"])


def test_a_two_in_a_correct_column_is_still_an_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Scores are read from a named outcome column; a 2 among 0/1 'correct' values is a typo."""
    path = tmp_path / "bad.csv"
    path.write_text("model,item,run,correct\na,1,1,1\na,2,1,0\nb,1,1,2\nb,2,1,1\n")
    assert main(["describe", str(path)]) == 2
    assert "outcome column 'correct' must be 0/1" in capsys.readouterr().err
    with pytest.raises(DataError, match=r"'correct' must lie in \[0, 1\]"):
        em.accuracy(pd.read_csv(path), "model")
    # the same numbers as a rating column are means
    rated = pd.read_csv(path).rename(columns={"correct": "rating"})
    assert em.accuracy(rated, "model", outcome="rating").kind == "mean"
