"""LaTeX / Markdown rendering of result tables."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalmix import format_p, to_latex, to_markdown
from evalmix.core.tables import format_table
from evalmix.core.result import Result


def test_format_p():
    # R: format.pval(c(0.0004, 0.001, 0.98765, 0.0312, 1), digits = 3, eps = 0.001), value by value
    assert format_p(0.0004) == "<0.001"
    assert format_p(0.001) == "0.001"
    assert format_p(0.98765) == "0.988"
    assert format_p(0.0312) == "0.0312"
    assert format_p(1.0) == "1"
    assert format_p(2.03e-150) == "<0.001"
    assert format_p(float("nan")) == ""
    assert format_p(1e-5, eps=1e-4) == "<0.0001"


def test_latex_table():
    df = pd.DataFrame({"model": ["a_b", "c&d"], "estimate": [0.123456, 1.0], "n": [10, 20],
                       "p": [0.5, 1e-9]})
    tex = to_latex(df, caption="Accuracy 95%", label="tab:acc")
    assert r"\caption{Accuracy 95\%}" in tex and r"\label{tab:acc}" in tex
    assert r"\begin{tabular}{lrrr}" in tex
    assert r"Model & Estimate & $n$ & $p$ \\" in tex
    assert r"a\_b & 0.123 & 10 & 0.5 \\" in tex
    assert r"c\&d & 1.000 & 20 & $<$0.001 \\" in tex


def test_markdown_table_alignment_and_missing():
    df = pd.DataFrame({"term": ["x", "y"], "estimate": [1.23456, np.nan]})
    md = to_markdown(df, digits=3).splitlines()
    assert md[0] == "| term | estimate |"
    assert md[1] == "|:-----|---------:|"
    assert md[2] == "| x    |     1.23 |"
    assert md[3] == "| y    |          |"


def test_result_base_renders():
    @dataclass(frozen=True)
    class Toy(Result):
        value: float

        def to_frame(self):
            return pd.DataFrame({"value": [self.value]})

    toy = Toy(0.5)
    assert "\n0.5 \\\\\n" in toy.to_latex() and "|   0.5 |" in toy.to_markdown()
    assert toy.to_dict() == {"table": [{"value": 0.5}]}
    assert "Toy" in repr(toy) and "<table" in toy._repr_html_()


def test_one_number_policy():
    df = pd.DataFrame({"df1": [104.0, 3.0], "cost": [3080.0, 12.0], "n_runs": [3.0, 1.0],
                       "df2": [12.5, 3.25], "estimate": [0.51234, -12.3456], "tiny": [2.03e-150, 0.5],
                       "p_value": [2.03e-150, 0.04567], "p_best": [0.97, 0.0004], "rank_1": [0.97, 0.0004],
                       "n": pd.array([5, None], dtype="Int64")})
    got = format_table(df)
    assert got["df1"].tolist() == ["104", "3"] and got["cost"].tolist() == ["3080", "12"]
    assert got["n_runs"].tolist() == ["3", "1"] and got["df2"].tolist() == ["12.50", "3.25"]
    # R: format(c(0.51234, -12.3456), digits = 4)
    assert got["estimate"].tolist() == ["0.5123", "-12.3456"]
    # R: format(c(2.03e-150, 0.5), digits = 4): scientific for the column, never 0.000
    assert got["tiny"].tolist() == ["2.03e-150", "5.00e-01"]
    assert got["p_value"].tolist() == ["<0.001", "0.0457"]
    # a probability that is not a p-value prints as every other number, the same in both columns
    assert got["p_best"].tolist() == got["rank_1"].tolist() == ["0.9700", "0.0004"]
    assert got["n"].tolist() == ["5", ""]


def test_repr_uses_the_policy():
    @dataclass(frozen=True, eq=False, repr=False)
    class Toy(Result):
        def to_frame(self):
            return pd.DataFrame({"term": ["x"], "statistic": [700.6], "df1": [104.0], "p_value": [2.03e-150]})

    text = repr(Toy())
    assert text.splitlines()[1:] == ["term  statistic  df1  p_value", "x         700.6  104   <0.001"]
    assert "e-150" not in text and "104.0" not in text


def test_repeated_column_names_are_kept_by_position():
    df = pd.DataFrame([[1, 2.5, "a"]], columns=["x", "x", "y"])
    assert format_table(df).values.tolist() == [["1", "2.5", "a"]]
    assert to_markdown(df).splitlines()[2] == "| 1 | 2.5 | a |"


def test_significance_stars_at_r_cut_points():
    from evalmix.core.tables import significance_stars

    # printCoefmat's cut points 0.001, 0.01, 0.05, 0.1 are open above
    got = [significance_stars(p) for p in (0.0, 0.000999, 0.001, 0.00999, 0.01, 0.0499, 0.05, 0.0999, 0.1, 1.0)]
    assert got == ["***", "***", "**", "**", "*", "*", ".", ".", "", ""]
    assert significance_stars(float("nan")) == "" and significance_stars(float("inf")) == ""


def test_aligned_columns_left_and_right():
    from evalmix.core.tables import aligned_columns

    rows = [["a", "1.5", "*"], ["long", "10", "***"]]
    assert aligned_columns(rows, ["", "x", ""]) == ["       x", "a    1.5   *", "long  10 ***"]
    # stars left-justified as lmerTest prints them, trailing blanks dropped
    assert aligned_columns(rows, ["", "x", ""], left=(0, 2)) == ["       x", "a    1.5 *", "long  10 ***"]
