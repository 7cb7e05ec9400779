"""The report's contamination and drift sections: present when the table has a post_cutoff column or
a wave column of two levels, said to be left out when they cannot be computed, and never read as a
condition the models are compared across."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

import evalmix
from evalmix.reporting import DRIFT_COLUMNS, _roles, drift_sections


def _waves() -> pd.DataFrame:
    before, after, _ = evalmix.simulate.canary_waves(3, 60, 2, change=[0.0, 0.1, 0.0], rng=2)
    return pd.concat([before.assign(wave="2026-01"), after.assign(wave="2026-02")], ignore_index=True)


@pytest.mark.slow  # a GLMM fit and a figure: the drift section below stands for the pair in the first step
def test_contamination_section_when_the_table_has_post_cutoff():
    df = evalmix.read_runs(evalmix.simulate.contaminated_runs(100, 1, contamination={2: 2.0}, rng=7))
    (sec,) = drift_sections(df)
    assert sec.key == "contamination" and sec.skipped is None
    table = dict((n, t) for n, _, t in sec.tables)["contamination"]
    assert table.set_index("model").loc["model-3", "contaminated"]
    assert [n for n, _, _ in sec.figures] == ["contamination"]
    assert "post_cutoff" not in _roles(df)["conditions"]


def test_drift_section_reads_the_wave_column():
    df = evalmix.read_runs(_waves())
    (sec,) = drift_sections(df)
    table = sec.tables[0][2]
    assert sec.key == "drift" and "'2026-01' to wave '2026-02'" in sec.note
    assert table["model"].tolist() == ["model-1", "model-2", "model-3"]
    assert table["n_items"].eq(60).all()
    assert "wave" not in _roles(df)["conditions"] and "wave" in DRIFT_COLUMNS


def test_sections_left_out_with_the_reason():
    waves = _waves()
    three = pd.concat([waves, waves[waves["wave"] == "2026-02"].assign(wave="2026-03")], ignore_index=True)
    (sec,) = drift_sections(evalmix.read_runs(three))
    assert sec.skipped.startswith("Left out: column 'wave' has 3 levels")
    one_cutoff = evalmix.simulate.contaminated_runs(40, 1, cutoffs=(0.5, 0.5), rng=1)
    (sec,) = drift_sections(evalmix.read_runs(one_cutoff))
    assert "cannot be told from the difficulty" in sec.skipped
    assert drift_sections(evalmix.read_runs(waves[waves["wave"] == "2026-01"].drop(columns="wave"))) == []


@pytest.mark.slow
def test_the_report_has_the_sections():
    df = evalmix.simulate.contaminated_runs(60, 2, contamination={2: 1.5}, rng=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = evalmix.report(df, n_boot=50)
    keys = [s.key for s in rep.sections]
    assert "contamination" in keys
    assert rep.options["conditions"] == []
