"""The release gate inside Inspect: GateStopping, fed the scored samples of real Inspect logs
(tests/fixtures), stops a candidate's task when the verdict is decided, by task, or only watches."""

from __future__ import annotations

import asyncio
import warnings
from pathlib import Path
from types import SimpleNamespace

import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import DataError
from evalmix.integrations.inspect_stopping import GateStopping

FIXTURES = Path(__file__).parents[1] / "fixtures"
RULE = {"alpha": 0.05, "looks": 10, "metrics": [{"name": "accuracy", "column": "correct", "margin": 0.25}]}


@pytest.fixture(scope="module")
def arith80():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the log's second epoch was stopped early on purpose
        return evalmix.read_logs(FIXTURES / "inspect-stopping")


def _first_epoch(runs: pd.DataFrame) -> list[tuple[int, float]]:
    first = runs[runs["run"].astype(int) == 1]
    return [(int(i), float(c)) for i, c in zip(first["item"], first["correct"])]


def _replay(stop: GateStopping, samples, epochs=1, task="arith80"):
    async def go():
        await stop.start_task(task, [], epochs)
        for item, value in samples:
            if await stop.schedule_sample(item, 1) is None:
                await stop.complete_sample(item, 1, {"match": SimpleNamespace(value="C" if value else "I")})
        return await stop.complete_task()
    return asyncio.run(go())


def test_the_same_answers_pass_and_match_the_gate(arith80):
    stop = GateStopping(arith80, RULE)
    asyncio.run(stop.start_task("arith80", [], 1))
    for item, value in _first_epoch(arith80):
        if stop.stopped_at is None:  # Inspect skips the rest (EarlyStop)
            stop.record(item, value)
    summary = asyncio.run(stop.complete_task())
    assert summary["verdict"] == "PASS" and summary["rule_hash"] == evalmix.read_rule(RULE).hash
    assert [look["n_items"] for look in summary["looks"]] == list(range(10, summary["stopped_at"] + 1, 10))
    # the gate on the paired items seen up to the stop decides there, and not before
    n = summary["stopped_at"]
    items = stop.items[:n]
    base = arith80[(arith80["run"].astype(int) == 1)]
    data = pd.concat([base.assign(model="candidate"), arith80.assign(model="baseline")])
    data = data[data["item"].astype(str).isin(items)].astype({"model": str})
    res = evalmix.gate(data, "baseline", "candidate", RULE, item="item", run="run", order=None)
    assert res.verdict == "PASS" and res.stopped_at == n


def test_a_worse_candidate_is_stopped_with_fail(arith80):
    stop = GateStopping(arith80, RULE)
    wrong = [(item, 0.0) for item, _ in _first_epoch(arith80)]
    calls = []

    async def go():
        await stop.start_task(SimpleNamespace(name="arith80"), [], 1)
        for item, value in wrong:
            if stop.stopped_at is not None:
                calls.append(item)  # Inspect would be told to skip these samples (EarlyStop)
                continue
            stop.record(item, value)
        return await stop.complete_task()
    summary = asyncio.run(go())
    assert summary["verdict"] == "FAIL" and summary["stopped_at"] <= 30
    assert len(calls) == 80 - summary["stopped_at"]
    assert summary["metrics"][0]["decision"] == "FAIL" and summary["metrics"][0]["conf_high"] < -0.25 + 0.01


@pytest.mark.slow
def test_shadow_never_skips(arith80):
    stop = GateStopping(arith80, RULE, shadow=True)
    wrong = [(item, 0.0) for item, _ in _first_epoch(arith80)]
    summary = _replay(stop, wrong)
    assert summary["verdict"] == "FAIL" and summary["n_items"] == 80 and summary["skipped"] == 0
    assert len(summary["looks"]) == 8 and summary["looks"][-1]["verdict"] == "FAIL"


def test_by_task_pairs_items_of_the_same_task():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = evalmix.read_logs(FIXTURES / "inspect" / "v0.3.285", scorer="match")
    base = base[base["model"] == "mockllm/alpha"]
    rule = {"looks": [4], "min_items": 1, "metrics": [{"name": "accuracy", "column": "correct", "margin": 0.5}]}
    stop = GateStopping(base, rule)
    summary = _replay(stop, [(1, 1.0), (2, 1.0), (3, 0.0), (4, 1.0), (99, 1.0)], task="arith")
    assert summary["task"] == "arith" and summary["n_items"] == 4 and summary["unpaired"] == ["99"]
    assert [look["n_items"] for look in summary["looks"]] == [4]
    assert stop.items == ["arith:1", "arith:2", "arith:3", "arith:4"]
    with pytest.raises(DataError, match="no rows of task 'nope'"):
        _replay(GateStopping(base, rule), [], task="nope")


def test_scores_and_columns_are_checked(arith80):
    with pytest.raises(DataError, match="baseline has no column 'cost'"):
        GateStopping(arith80, {"metrics": [{"column": "cost"}]})
    stop = GateStopping(arith80, RULE, scorer="match")

    async def go():
        await stop.start_task("arith80", [], 1)
        await stop.complete_sample(1, 1, {"includes": SimpleNamespace(value="C")})
    with pytest.raises(DataError, match="scorer 'match' is not among"):
        asyncio.run(go())
