"""The report as a reader sees it: headless Chromium renders the page; a blank page, an image that
does not decode or a console message fails.  Part of the second test step (``-m slow``), which
installs Debian's ``chromium``; without it these tests fail rather than skip."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")

import pytest  # noqa: E402

from evalmix.cli import main  # noqa: E402

from browser import check_page  # noqa: E402
from conftest import ROOT  # noqa: E402

pytestmark = pytest.mark.slow

# a page that shows something: white background, text and figures
MAX_DOMINANT = 0.97


def test_report_page_in_chromium(tmp_path):
    out = tmp_path / "report"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["report", str(ROOT / "data" / "example_runs.csv"), "-o", str(out),
                     "--n-boot", "200"]) == 0
    n_figures = len(list((out / "figures").glob("*.png")))
    res = check_page(out / "index.html", tmp_path / "chromium")
    assert res.n_images == n_figures >= 8
    assert res.n_broken == 0
    assert res.console == []
    assert res.dominant_share < MAX_DOMINANT, res.dominant_share



def test_ratings_report_page_in_chromium(tmp_path):
    """The report on judge ratings (clmm): its figure decodes and the page shows."""
    out = tmp_path / "report"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["report", str(ROOT / "data" / "example_ratings.csv"), "--outcome", "rating",
                     "-o", str(out)]) == 0
    res = check_page(out / "index.html", tmp_path / "chromium")
    assert res.n_images == len(list((out / "figures").glob("*.png"))) == 1
    assert res.n_broken == 0
    assert res.console == []
    assert res.dominant_share < MAX_DOMINANT, res.dominant_share

@pytest.mark.shared
def test_ai4math_report_page_in_chromium(ai4math_dir, tmp_path):
    out = tmp_path / "report"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["report", str(ai4math_dir / "ai4math_runs.csv"), "-o", str(out)]) == 0
    res = check_page(out / "index.html", tmp_path / "chromium")
    assert res.n_images == 13 and res.n_broken == 0  # 12 figures of the paper and the health map
    assert res.console == []
    assert res.dominant_share < MAX_DOMINANT, res.dominant_share


def test_the_check_catches_broken_pages(tmp_path):
    """The checks are not vacuous: a broken image, a console error and a blank page are caught."""
    broken = tmp_path / "broken.html"
    broken.write_text('<!DOCTYPE html><html><body><h1>Report</h1><img src="data:image/png;base64,AAAA">'
                      '<img src="missing.png"><script>console.error("failed")</script></body></html>')
    res = check_page(broken, tmp_path / "c1")
    assert res.n_images == 2 and res.n_broken == 2
    assert any("failed" in line for line in res.console)
    blank = tmp_path / "blank.html"
    blank.write_text("<!DOCTYPE html><html><body></body></html>")
    res = check_page(blank, tmp_path / "c2")
    assert res.dominant_share == 1.0
