"""The release gate inside a real Inspect AI evaluation, run by the test itself (the second test step).

``inspect_ai.eval()`` first runs a baseline ``mockllm`` model on 60 additions (offline: a solver writes
each answer, right or wrong by sample), then a candidate that answers exactly as the baseline does,
with ``early_stopping=GateStopping(<the baseline's log folder>, rule)``.  The gate must PASS at the
look the rule names for those answers, Inspect must skip every later sample, and the log must keep
the verdict.  inspect_ai comes from the ``inspect`` extra (README, Development).
"""

from __future__ import annotations

import json
import warnings
import zipfile

import pandas as pd
import pytest

import evalmix
from evalmix.io._common import read_zip_member  # Inspect compresses log members with Zstandard

pytestmark = pytest.mark.slow

N = 60
RULE = {"alpha": 0.05, "looks": 10, "metrics": [{"name": "accuracy", "column": "correct", "margin": 0.3}]}


def right(sample_id: int) -> bool:
    return (7 * sample_id) % 4 != 0  # three answers in four right


def test_a_real_eval_is_stopped_by_the_gate(tmp_path, monkeypatch):
    import inspect_ai.model._model as model_module
    from inspect_ai import Task, eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ModelOutput, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import Generate, TaskState, solver

    from evalmix.integrations.inspect_stopping import GateStopping

    monkeypatch.setattr(model_module, "count_text_tokens", lambda text: max(1, len(text) // 4))
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "INSPECT_EVAL_MODEL"):
        monkeypatch.delenv(var, raising=False)
    pairs = [(3 + (7 * i) % 23, 5 + (11 * i) % 19) for i in range(N)]

    @solver
    def mock_answer():
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            a, b = pairs[int(state.sample_id) - 1]
            ok = right(int(state.sample_id))
            state.output = ModelOutput.from_content(model="mockllm/model", content=f"ANSWER: {a + b if ok else a + b + 1}")
            return state
        return solve

    dataset = MemoryDataset([Sample(id=i + 1, input=f"What is {a} + {b}?", target=str(a + b))
                             for i, (a, b) in enumerate(pairs)])
    base_dir, cand_dir = tmp_path / "baseline", tmp_path / "candidate"
    (log,) = eval(Task(dataset=dataset, solver=mock_answer(), scorer=match(), name="arith60"),
                  model=get_model("mockllm/base"), log_dir=str(base_dir), max_samples=1, display="none")
    assert log.status == "success"

    stop = GateStopping(base_dir, RULE)
    (log,) = eval(Task(dataset=dataset, solver=mock_answer(), scorer=match(), name="arith60",
                       early_stopping=stop),
                  model=get_model("mockllm/candidate"), log_dir=str(cand_dir), max_samples=1, display="none")
    assert log.status == "success"
    assert stop.verdict == "PASS" and stop.stopped_at is not None and stop.stopped_at < N
    assert stop.skipped == N - stop.stopped_at

    # the verdict is evalmix.gate's on the paired items up to the stop, and no earlier look decided
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        base = evalmix.read_logs(base_dir)
        cand = evalmix.read_logs(cand_dir)
    assert len(cand) == stop.stopped_at
    both = pd.concat([base, cand]).astype({"model": str, "item": str})
    both = both[both["item"].isin(cand["item"].astype(str))]
    res = evalmix.gate(both, "mockllm/base", "mockllm/candidate", RULE)
    assert res.verdict == "PASS" and res.stopped_at == stop.stopped_at

    (path,) = sorted(cand_dir.glob("*.eval"))
    with zipfile.ZipFile(path) as z:
        header = json.loads(read_zip_member(z, z.getinfo("header.json"), path))
    es = header["results"]["early_stopping"]
    assert es["manager"] == "evalmix_gate"
    meta = es["metadata"]
    assert meta["verdict"] == "PASS" and meta["stopped_at"] == stop.stopped_at
    assert meta["rule_hash"] == evalmix.read_rule(RULE).hash
    assert len(es["early_stops"]) == N - stop.stopped_at
