"""``to_gt()``: a result as a great_tables table (optional dependency; the second test step
installs the ``gt`` extra)."""

from __future__ import annotations

import sys

import pandas as pd
import pytest

import evalmix
from evalmix.core.tables import to_gt


@pytest.mark.slow  # needs great_tables (the gt extra, installed for the second test step)
def test_result_to_gt_reads_as_the_result_prints():
    import great_tables

    acc = evalmix.accuracy(evalmix.load_example("runs"), "model")
    gt = acc.to_gt()
    assert isinstance(gt, great_tables.GT)
    # the same numbers as every other form of the result (4 significant digits, as R prints them)
    assert gt._tbl_data.iloc[0].tolist() == ["model-A", "1260", "908", "0.7206", "0.6952", "0.7447"]
    assert gt._heading.title == "Accuracy by model"
    assert gt._heading.subtitle == "scale: probability; conf_low/conf_high: 95% Wilson interval"
    html = gt.as_raw_html()
    assert "0.7206" in html and "Accuracy by model" in html
    # a Summary: its main table, titled with the summary's title
    summary = evalmix.glmer("correct ~ model + (1|item)", evalmix.load_example("runs")).summary()
    sgt = summary.to_gt()
    assert sgt._heading.title == summary.title and len(sgt._tbl_data) == len(summary.to_frame())


@pytest.mark.slow
def test_to_gt_escapes_text_and_formats_p_values():
    frame = pd.DataFrame({"model": ["<b>x</b>"], "estimate": [0.51234], "p_value": [1e-9]})
    html = to_gt(frame, title="T <i>", notes=["a note"]).as_raw_html()
    assert "&lt;b&gt;x&lt;/b&gt;" in html and "<b>x</b>" not in html and "T &lt;i&gt;" in html
    assert "&lt;0.001" in html and "0.5123" in html and "a note" in html


def test_to_gt_without_great_tables_says_how_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "great_tables", None)
    with pytest.raises(ImportError, match=r"to_gt\(\) needs great_tables: pip install great_tables "
                                          r"\(or pip install 'evalmix\[gt\]'\)"):
        evalmix.accuracy(evalmix.load_example("runs"), "model").to_gt()
