"""evalmix's Inspect hook: its report from a real ``eval()`` run equals evalmix's own numbers.

The fixture (tests/fixtures/inspect-hook/) is written by make_inspect_hook_fixture.sh: inspect_ai
loads evalmix's run-end hook through the ``inspect_ai`` entry point, runs three mockllm models on
one task and the hook writes evalmix-leaderboard.json beside the logs.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.integrations.inspect_hooks import leaderboard_report
from evalmix.studies.leaderboard import rank_sets

HOOK = Path(__file__).parents[1] / "fixtures" / "inspect-hook"


@pytest.fixture(scope="module")
def written():
    return json.loads((HOOK / "evalmix-leaderboard.json").read_text())


@pytest.fixture(scope="module")
def logs():
    return sorted(HOOK.glob("*.eval"))


def test_the_run_produced_one_log_per_model(written, logs):
    assert len(logs) == 3 and sorted(written["logs"]) == sorted(p.name for p in logs)
    assert "inspect_ai 0.3.285" in (HOOK / "VERSION").read_text()


def test_hook_numbers_equal_evalmix(written, logs):
    mine = leaderboard_report(logs, baseline="mockllm/beta", n_boot=1000, rng=7, task="arith8")
    assert set(mine["tasks"]) == set(written["tasks"]) == {"arith8"}
    for key in ("leaderboard", "versus_baseline"):
        a = pd.DataFrame(written["tasks"]["arith8"][key])
        b = pd.DataFrame(mine["tasks"]["arith8"][key])
        pd.testing.assert_frame_equal(a, b, check_exact=False, rtol=1e-12)
    assert written["tasks"]["arith8"]["tie_groups"] == mine["tasks"]["arith8"]["tie_groups"]


def test_report_is_rank_sets_on_the_logs(written, logs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        data = evalmix.read_inspect(logs, errors="keep")
    rs = rank_sets(data, n_boot=1000, rng=7)
    board = pd.DataFrame(written["tasks"]["arith8"]["leaderboard"])
    assert board["model"].tolist() == rs.table["model"].tolist()
    np.testing.assert_allclose(board["estimate"], rs.table["estimate"], rtol=1e-12)
    assert board["tie_group"].tolist() == rs.table["tie_group"].tolist()
    # 8 items x 3 epochs per model; the one errored sample shows as coverage 23/24
    assert board["n_attempted"].tolist() == [24, 24, 24]
    assert sorted(board["coverage"].tolist()) == pytest.approx([23 / 24, 1.0, 1.0])
    ok = data[data["status"] == "ok"]
    acc = ok.groupby("model", observed=True)["correct"].mean()
    np.testing.assert_allclose(board.set_index("model")["estimate"], acc.loc[board["model"]], rtol=1e-12)
    # versus the baseline: (other model) - (baseline), from the all-pairs simultaneous intervals
    vs = pd.DataFrame(written["tasks"]["arith8"]["versus_baseline"]).set_index("model")
    assert set(vs.index) == {"mockllm/alpha", "mockllm/gamma"}
    for m in vs.index:
        assert vs.loc[m, "estimate"] == pytest.approx(acc[m] - acc["mockllm/beta"], abs=1e-12)
        assert vs.loc[m, "conf_low"] <= vs.loc[m, "estimate"] <= vs.loc[m, "conf_high"]
