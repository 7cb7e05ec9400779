"""LaTeX / Markdown rendering of result tables."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from evalmix import format_p, to_latex, to_markdown
from evalmix._result import Result


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
