"""evalmix's Inspect early-stopping manager: a real ``eval()`` run stopped by the anytime-valid rule.

The fixture (tests/fixtures/inspect-stopping/) is written by make_inspect_stopping_fixture.sh:
inspect_ai 0.3.285 runs 80 items x 2 epochs of a mock model with
``early_stopping=SequentialStopping(target_width=0.4)``; the manager's summary is in the log.
"""

from __future__ import annotations

import asyncio
import json
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pytest

import evalmix
from evalmix.core.errors import ArgumentError, DataError
from evalmix.integrations.inspect_stopping import SequentialStopping, score_value
from evalmix.io._common import read_zip_member  # Inspect compresses log members with Zstandard
from evalmix.studies.sequential import confidence_sequence

FIXTURE = Path(__file__).parents[1] / "fixtures" / "inspect-stopping"


@pytest.fixture(scope="module")
def log():
    (path,) = sorted(FIXTURE.glob("*.eval"))
    with zipfile.ZipFile(path) as z:
        header = json.loads(read_zip_member(z, z.getinfo("header.json"), path))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unbalanced design is the point: epochs were skipped
        runs = evalmix.read_inspect(path)
    return header, runs


def test_the_run_was_stopped_by_the_rule(log):
    header, runs = log
    assert "inspect_ai 0.3.285" in (FIXTURE / "VERSION").read_text()
    es = header["results"]["early_stopping"]
    assert es["manager"] == "evalmix_sequential"
    meta = es["metadata"]
    assert meta["decision"] == "width" and meta["stopped_at"] == 18 and meta["epochs"] == 2
    # 80 items x 2 epochs; every sample not started at the stop was skipped, and logged as such
    assert meta["skipped"] == len(es["early_stops"]) == 160 - len(runs) == 62
    assert meta["conf_high"] - meta["conf_low"] <= 0.4


def test_the_stop_is_evalmix_sequence_on_the_logged_scores(log):
    header, runs = log
    meta = header["results"]["early_stopping"]["metadata"]
    by_item = runs.groupby("item")["correct"].agg(["mean", "size"])
    done = [int(i) for i in meta["items"]]
    assert (by_item.loc[done, "size"] == 2).all()
    means = by_item.loc[done, "mean"].to_numpy()
    cs = confidence_sequence(means, target_width=0.4)
    assert cs.stopped_at == meta["stopped_at"] and cs.decision == meta["decision"]
    assert cs.estimate == pytest.approx(meta["estimate"], abs=1e-12)
    assert cs.conf_low == pytest.approx(meta["conf_low"], abs=1e-12)
    assert cs.conf_high == pytest.approx(meta["conf_high"], abs=1e-12)
    # the items not completed had only their first epoch run
    rest = by_item.drop(index=done)
    assert len(rest) == 80 - len(done) and (rest["size"] == 1).all()


def test_manager_without_inspect():
    stop = SequentialStopping(target_width=0.5, method="empirical_bernstein")
    asyncio.run(stop.start_task(None, [], epochs=2))
    rng = np.random.default_rng(3)
    y = rng.random((200, 2)) < 0.8
    for i in range(200):
        for e in range(2):
            stop.record(i, float(y[i, e]))
        if stop.stopped_at:
            break
    cs = confidence_sequence(y.mean(axis=1), method="empirical_bernstein", target_width=0.5)
    assert stop.stopped_at == cs.stopped_at and stop.decision == "width"
    summary = asyncio.run(stop.complete_task())
    assert summary["conf_low"] == pytest.approx(cs.conf_low) and summary["n_items"] == cs.stopped_at
    # a new task starts afresh
    asyncio.run(stop.start_task(None, [], epochs=1))
    assert stop.stopped_at is None and stop.means == []


def test_budget_and_scores():
    stop = SequentialStopping(max_items=3)
    for i in range(5):
        stop.record(i, 1.0)
    assert stop.stopped_at == 3 and stop.decision == "budget"
    assert [score_value(v) for v in ("C", "I", "P", True, 0.25)] == [1.0, 0.0, 0.5, 1.0, 0.25]
    for bad in ("maybe", 2.0, None):
        with pytest.raises(DataError, match="neither C, I, P"):
            score_value(bad)
    with pytest.raises(DataError, match="stopping rule"):
        SequentialStopping()
    with pytest.raises(ArgumentError, match="target_width"):
        SequentialStopping(target_width=-0.1)
