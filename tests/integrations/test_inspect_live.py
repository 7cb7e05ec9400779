"""evalmix inside a real Inspect AI evaluation, run by the test itself (the second test step).

``inspect_ai.eval()`` runs two ``mockllm`` models (offline: a solver writes each answer, right or
wrong by sample and epoch) on one task, each with its own ``SequentialStopping`` manager, while
evalmix's run-end hook is on.  The stop must come at the item the anytime-valid rule names for
those answers, and the hook must write the leaderboard that ``leaderboard_report`` computes from
the same logs.  inspect_ai comes from the ``inspect`` extra (README, Development).
"""

from __future__ import annotations

import json
import warnings
import zipfile

import numpy as np
import pytest

from evalmix.io._common import read_zip_member  # Inspect compresses log members with Zstandard
from evalmix.studies.sequential import confidence_sequence

pytestmark = pytest.mark.slow

N = 60
EPOCHS = 2
WIDTH = 0.45
MODELS = {"mockllm/alpha": 5, "mockllm/beta": 3}  # one answer in 5 (in 3) wrong


def right(model: str, sample_id: int, epoch: int) -> bool:
    return (7 * sample_id + 3 * epoch) % MODELS[model] != 0


def expected_stop(model: str) -> tuple[int, str]:
    """Where the rule stops for these answers: items complete in sample order during the last epoch
    (one sample at a time, epoch by epoch), each observed as the mean of its epochs."""
    means = [np.mean([right(model, i, e) for e in range(1, EPOCHS + 1)]) for i in range(1, N + 1)]
    cs = confidence_sequence(means, target_width=WIDTH)
    assert cs.stopped_at is not None and cs.stopped_at < N  # the run must end early for the test to mean anything
    return cs.stopped_at, cs.decision


def test_a_real_eval_stops_by_the_rule_and_the_hook_writes_its_leaderboard(tmp_path, monkeypatch):
    import inspect_ai.model._model as model_module
    from inspect_ai import Task, eval
    from inspect_ai.dataset import MemoryDataset, Sample
    from inspect_ai.model import ModelOutput, get_model
    from inspect_ai.scorer import match
    from inspect_ai.solver import Generate, TaskState, solver

    import evalmix.integrations.inspect_hooks  # noqa: F401 - registers the hook (also the entry point's job)
    from evalmix.integrations.inspect_hooks import leaderboard_report
    from evalmix.integrations.inspect_stopping import SequentialStopping

    # offline: Inspect's token counter would download its tiktoken encoding (counts do not enter scores)
    monkeypatch.setattr(model_module, "count_text_tokens", lambda text: max(1, len(text) // 4))
    out = tmp_path / "leaderboard.json"
    for name, value in {"EVALMIX_LEADERBOARD": "1", "EVALMIX_OUT": str(out), "EVALMIX_N_BOOT": "200",
                        "EVALMIX_SEED": "3", "EVALMIX_BASELINE": "mockllm/alpha"}.items():
        monkeypatch.setenv(name, value)
    for var in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "INSPECT_EVAL_MODEL"):
        monkeypatch.delenv(var, raising=False)
    pairs = [(3 + (7 * i) % 23, 5 + (11 * i) % 19) for i in range(N)]

    @solver
    def mock_answer(model: str):
        async def solve(state: TaskState, generate: Generate) -> TaskState:
            a, b = pairs[int(state.sample_id) - 1]
            ok = right(model, int(state.sample_id), state.epoch)
            state.output = ModelOutput.from_content(model=model, content=f"ANSWER: {a + b if ok else a + b + 1}")
            return state
        return solve

    dataset = MemoryDataset([Sample(id=i + 1, input=f"What is {a} + {b}?", target=str(a + b))
                             for i, (a, b) in enumerate(pairs)])
    managers = {m: SequentialStopping(target_width=WIDTH) for m in MODELS}
    tasks = [Task(dataset=dataset, solver=mock_answer(m), scorer=match(), epochs=EPOCHS, name="arith60",
                  model=get_model(m), early_stopping=managers[m]) for m in MODELS]
    logs = eval(tasks, log_dir=str(tmp_path / "logs"), max_samples=1, max_tasks=1, display="none")
    assert [log.status for log in logs] == ["success", "success"]

    for model, stop in managers.items():
        at, decision = expected_stop(model)
        assert (stop.stopped_at, stop.decision) == (at, decision)
        assert stop.items == list(range(1, at + 1))
        # every sample not started by then was skipped: the first epoch ran in full, the last up to the stop
        assert stop.skipped == N * EPOCHS - N - at
    paths = sorted((tmp_path / "logs").glob("*.eval"))
    assert len(paths) == 2
    for path in paths:
        with zipfile.ZipFile(path) as z:
            header = json.loads(read_zip_member(z, z.getinfo("header.json"), path))
        model = header["eval"]["model"]
        meta = header["results"]["early_stopping"]["metadata"]
        assert header["results"]["early_stopping"]["manager"] == "evalmix_sequential"
        assert meta["stopped_at"] == expected_stop(model)[0]
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # unbalanced by design: the last epoch was cut short
            runs = evalmix.read_inspect(path)
        assert len(runs) == N + meta["stopped_at"]
        assert runs["correct"].tolist() == [int(right(model, int(i), int(r))) for i, r in zip(runs["item"], runs["run"])]

    # the run-end hook wrote the leaderboard of the run's two logs, as evalmix computes it from them
    written = json.loads(out.read_text())
    assert sorted(written["logs"]) == sorted(p.name for p in paths)
    again = leaderboard_report(paths, baseline="mockllm/alpha", n_boot=200, rng=3, task="arith60")
    board = written["tasks"]["arith60"]
    assert board["leaderboard"] == again["tasks"]["arith60"]["leaderboard"]
    assert {row["model"] for row in board["leaderboard"]} == set(MODELS)
    assert [row["model"] for row in board["versus_baseline"]] == ["mockllm/beta"]


def test_a_damaged_log_is_a_data_error_with_inspect_loaded(tmp_path):
    """Importing inspect_ai teaches zipfile to read Zstandard members: a damaged member then fails
    inside zipfile with zstandard's error, which must still come out as evalmix's DataError naming
    the file (tests/io/test_io_inspect_logs.py checks the same file without inspect_ai)."""
    from pathlib import Path

    import inspect_ai.log  # noqa: F401  (registers its Zstandard reader with zipfile)

    from evalmix import read_inspect
    from evalmix.core.errors import DataError

    src = next((Path(__file__).parents[1] / "fixtures" / "inspect" / "v0.3.285").glob("*arith*.eval"))
    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as zf:
        info = zf.getinfo("header.json")
    start = info.header_offset + 30 + len(info.filename) + 20
    data[start:start + 8] = b"\x00" * 8
    bad = tmp_path / "damaged.eval"
    bad.write_bytes(bytes(data))
    with pytest.raises(DataError, match=r"damaged\.eval"):
        read_inspect(bad, scorer="match")
