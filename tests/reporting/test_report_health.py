"""The report's benchmark-health section (evalmix.reporting.health_section): item health on every
0/1 table, the version-shift tables when the table has a version column."""

import warnings

import pytest

import evalmix
from evalmix.core.errors import DataError
from evalmix.reporting import health_section


@pytest.mark.slow
def test_section_with_a_version_column():
    runs, _ = evalmix.simulate.simulate_versions(n_items=20, n_models=6, n_runs=1, rng=5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sec = health_section(evalmix.read_runs(runs))
    names = [n for n, _, _ in sec.tables]
    assert names == ["health_benchmark", "health_items", "health_models", "version_overall", "version_items",
                     "version_models"]
    assert [n for n, _, _ in sec.figures] == ["health_map", "version_shift"]
    tabs = {n: t for n, _, t in sec.tables}
    assert len(tabs["health_items"]) == 20 and tabs["health_items"]["dead"].iloc[0] == tabs["health_items"][
        "dead"].max()   # dead items first
    assert "'harness_version', against 'v1'" in sec.note
    assert set(tabs["version_models"]["version"]) == {"v1", "v2"}


def test_section_without_versions_and_errors():
    runs = evalmix.read_runs("data/example_runs.csv")
    sec = health_section(runs, top_k=4)
    assert [n for n, _, _ in sec.tables] == ["health_benchmark", "health_items", "health_models"]
    b = dict(zip(sec.tables[0][2].columns, sec.tables[0][2].iloc[0]))
    assert b["top_k"] == 4 and f"{int(b['dead'])} of 105" in sec.note
    with pytest.raises(DataError, match="read_runs"):
        health_section(runs.copy().pipe(lambda d: d.__class__(d.to_dict())))


def test_section_left_out_with_two_models():
    runs = evalmix.read_runs("data/example_runs.csv")
    two = evalmix.read_runs(runs[runs["model"].isin(["model-A", "model-B"])].reset_index(drop=True))
    sec = health_section(two)
    assert sec.skipped.startswith("Left out: item health compares at least 3 models") and not sec.tables
