"""Loaders for lm-evaluation-harness and Inspect AI logs.

The helpers below write logs the way the harnesses write them: lm-evaluation-harness builds one dict per
document in its evaluator (doc_id, doc, target, arguments, resps, filtered_resps, filter, metrics,
hashes, then the metric values) and its EvaluationTracker rewrites ``arguments`` as
``{"gen_args_i": {"arg_j": ...}}``, stringifies responses and the target, and writes
``<output_path>/<model_name_sanitized>/samples_<task>_<stamp>.jsonl`` beside
``results_<stamp>.json``.  Inspect AI's eval recorder writes a deflated zip with
``_journal/start.json``, ``samples/<id>_epoch_<n>.json``, ``summaries.json``, ``reductions.json``
and, when the eval ends, ``header.json``; its older JSON recorder writes the whole log as one file.
"""

from __future__ import annotations

import hashlib
import json
import re
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import evalmix
from evalmix import DataError, DataWarning, read_inspect, read_lm_eval

# --------------------------------------------------------------------- lm-evaluation-harness writer


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _sanitize(value):
    # the tracker's sanitize_list: every leaf of a (nested) list/tuple becomes a string
    if isinstance(value, list):
        return [_sanitize(v) for v in value]
    if isinstance(value, tuple):
        return tuple(_sanitize(v) for v in value)
    return str(value)


def _mc_sample(doc_id: int, acc: float, acc_norm: float) -> dict:
    """A multiple-choice (loglikelihood) document, as the evaluator logs it."""
    doc = {"id": f"Mercury_{doc_id}", "question": f"Question {doc_id}?",
           "choices": {"text": ["red", "blue", "green"], "label": ["A", "B", "C"]}, "answerKey": "B"}
    ctx = f"Question: {doc['question']}\nAnswer:"
    requests = [(ctx, f" {c}") for c in doc["choices"]["text"]]
    resps = [[(-1.5 - k, False)] for k in range(3)]
    return {"doc_id": doc_id, "doc": doc, "target": 1, "arguments": requests, "resps": resps,
            "filtered_resps": [r[0] for r in resps], "filter": "none", "metrics": ["acc", "acc_norm"],
            "doc_hash": _sha(json.dumps(doc, indent=2)), "prompt_hash": _sha(ctx),
            "target_hash": _sha("1"), "acc": acc, "acc_norm": acc_norm}


def _gen_samples(doc_id: int, strict: float, flexible: float) -> list[dict]:
    """A generative document logged once per filter (gsm8k's strict-match and flexible-extract)."""
    doc = {"question": f"What is {doc_id} + {doc_id}?", "answer": f"#### {2 * doc_id}"}
    ctx = f"Question: {doc['question']}\nAnswer:"
    gen_kwargs = {"until": ["Question:", "</s>"], "do_sample": False, "temperature": 0.0}
    out = []
    for name, value in (("strict-match", strict), ("flexible-extract", flexible)):
        out.append({"doc_id": doc_id, "doc": doc, "target": doc["answer"],
                    "arguments": [(ctx, gen_kwargs)], "resps": [[f"The answer is {2 * doc_id}."]],
                    "filtered_resps": [str(2 * doc_id) if value else "[invalid]"], "filter": name,
                    "metrics": ["exact_match"], "doc_hash": _sha(json.dumps(doc, indent=2)),
                    "prompt_hash": _sha(ctx), "target_hash": _sha(doc["answer"]),
                    "exact_match": value})
    return out


def write_lm_eval(output: Path, model_name: str, stamp: str, tasks: dict[str, list[dict]], *,
                  results: bool = True, model_name_field: bool = True) -> dict[str, Path]:
    """Write one harness run (several tasks) the way EvaluationTracker does; return the samples paths."""
    sanitized = re.sub(r"[\"<>:/|\\?*\[\]]+", "__", model_name)
    folder = output / sanitized
    folder.mkdir(parents=True, exist_ok=True)
    if results:
        head = {
            "results": {t: {"alias": t} | {f"{m},{s[0]['filter']}": 0.5 for m in s[0]["metrics"]}
                        for t, s in tasks.items()},
            "group_subtasks": {t: [] for t in tasks},
            "configs": {t: {"task": t, "output_type": "multiple_choice"} for t in tasks},
            "versions": {t: 1.0 for t in tasks}, "n-shot": {t: 0 for t in tasks},
            "higher_is_better": {t: {m: True for m in s[0]["metrics"]} for t, s in tasks.items()},
            "n-samples": {t: {"original": len(s), "effective": len(s)} for t, s in tasks.items()},
            "config": {"model": "hf", "model_args": f"pretrained={model_name},dtype=bfloat16",
                       "batch_size": "auto", "batch_sizes": [64], "device": "cuda:0",
                       "use_cache": None, "limit": None, "bootstrap_iters": 100000,
                       "gen_kwargs": None, "random_seed": 0, "numpy_seed": 1234},
            "git_hash": "a1b2c3d", "date": 1714557600.0, "task_hashes": {},
            "model_source": "hf", "model_name": model_name, "model_name_sanitized": sanitized,
            "system_instruction": None, "system_instruction_sha": None,
            "fewshot_as_multiturn": False, "chat_template": None, "chat_template_sha": None,
            "start_time": 100.0, "end_time": 160.0, "total_evaluation_time_seconds": "60.0",
        }
        if not model_name_field:
            for key in ("model_name", "model_name_sanitized"):
                head.pop(key)
        (folder / f"results_{stamp}.json").write_text(json.dumps(head, indent=2))
    paths = {}
    for task, samples in tasks.items():
        path = folder / f"samples_{task}_{stamp}.jsonl"
        with open(path, "a", encoding="utf-8") as fh:
            for sample in samples:
                sample = dict(sample)
                sample["arguments"] = {f"gen_args_{i}": {f"arg_{j}": a for j, a in enumerate(arg)}
                                       for i, arg in enumerate(sample["arguments"])}
                sample["resps"] = _sanitize(sample["resps"])
                sample["filtered_resps"] = _sanitize(sample["filtered_resps"])
                sample["target"] = str(sample["target"])
                fh.write(json.dumps(sample, ensure_ascii=False) + "\n")
        paths[task] = path
    return paths


STAMPS = ["2024-05-01T10-00-00.000001", "2024-05-01T11-30-00.000002", "2024-05-02T09-15-00.000003"]


def mc_task(values: list[int]) -> list[dict]:
    return [_mc_sample(i, float(v), float(1 - v)) for i, v in enumerate(values)]


@pytest.fixture
def quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        yield


# ------------------------------------------------------------------------------- lm-eval tests


def test_lm_eval_layout_model_from_results(tmp_path, quiet):
    acc = [1, 0, 1, 1, 0]
    write_lm_eval(tmp_path, "EleutherAI/pythia-160m", STAMPS[0], {"arc_easy": mc_task(acc)})
    df = read_lm_eval(tmp_path, "acc")
    assert list(df.columns) == ["model", "item", "run", "correct"]
    assert df["model"].astype(str).unique().tolist() == ["EleutherAI/pythia-160m"]
    assert df["item"].tolist() == [0, 1, 2, 3, 4]
    assert df["run"].tolist() == [1] * 5
    assert df["correct"].tolist() == acc
    assert df.attrs["evalmix"]["slices"] == []
    # another metric of the same file: acc_norm was written as 1 - acc
    assert read_lm_eval(tmp_path, "acc_norm")["correct"].tolist() == [1 - a for a in acc]


def test_lm_eval_repeated_runs_numbered_by_timestamp(tmp_path, quiet):
    runs = {STAMPS[2]: [0, 0, 0], STAMPS[0]: [1, 1, 1], STAMPS[1]: [1, 0, 1]}
    for stamp, acc in runs.items():
        write_lm_eval(tmp_path, "org/m", stamp, {"arc_easy": mc_task(acc)})
    df = read_lm_eval(tmp_path / "org__m", "acc")
    assert len(df) == 9
    by_run = df.groupby("run", observed=True)["correct"].apply(list).to_dict()
    assert by_run == {1: [1, 1, 1], 2: [1, 0, 1], 3: [0, 0, 0]}


def test_lm_eval_several_tasks_become_a_slice(tmp_path, quiet):
    write_lm_eval(tmp_path, "m", STAMPS[0], {"arc_easy": mc_task([1, 0]),
                                              "hellaswag": mc_task([0, 0, 1])})
    df = read_lm_eval(tmp_path, "acc")
    assert df.attrs["evalmix"]["slices"] == ["task"]
    assert len(df) == 5
    # doc_id 0 of arc_easy and of hellaswag are different items
    assert sorted(df["item"].astype(str)) == ["arc_easy:0", "arc_easy:1", "hellaswag:0",
                                              "hellaswag:1", "hellaswag:2"]
    got = df.set_index("item")["correct"].to_dict()
    assert got["arc_easy:0"] == 1 and got["hellaswag:2"] == 1


def test_lm_eval_models_concatenate(tmp_path, quiet):
    write_lm_eval(tmp_path, "org/a", STAMPS[0], {"arc_easy": mc_task([1, 1, 0])})
    write_lm_eval(tmp_path, "org/b", STAMPS[1], {"arc_easy": mc_task([0, 1, 0])})
    df = read_lm_eval(tmp_path, "acc")
    assert df["model"].cat.categories.tolist() == ["org/a", "org/b"]
    assert df.groupby("model", observed=True)["correct"].sum().tolist() == [2, 1]
    assert set(df["run"]) == {1}


def test_lm_eval_model_sources(tmp_path, quiet):
    # model= overrides; config.model_args when model_name is absent; the folder without results
    write_lm_eval(tmp_path / "x", "org/a", STAMPS[0], {"arc_easy": mc_task([1])})
    assert read_lm_eval(tmp_path / "x", "acc", model="mine")["model"].tolist() == ["mine"]
    write_lm_eval(tmp_path / "y", "org/b", STAMPS[0], {"arc_easy": mc_task([1])},
                  model_name_field=False)
    assert read_lm_eval(tmp_path / "y", "acc")["model"].tolist() == ["org/b"]
    write_lm_eval(tmp_path / "z", "org/c", STAMPS[0], {"arc_easy": mc_task([1])}, results=False)
    # the sanitized folder name is read back: one model, not two spellings of it
    assert read_lm_eval(tmp_path / "z", "acc")["model"].tolist() == ["org/c"]


def test_lm_eval_runs_argument(tmp_path, quiet):
    for seed, stamp in zip((11, 22), STAMPS):
        write_lm_eval(tmp_path / f"seed{seed}", "m", stamp, {"arc_easy": mc_task([1, seed % 2])})
    df = read_lm_eval([tmp_path / "seed22", tmp_path / "seed11"], "acc", runs=["s22", "s11"])
    assert df.groupby("run", observed=True)["correct"].apply(list).to_dict() == {
        "s11": [1, 1], "s22": [1, 0]}
    df = read_lm_eval(tmp_path, "acc", runs=lambda p: p.parent.parent.name)
    assert sorted(df["run"].cat.categories) == ["seed11", "seed22"]
    with pytest.raises(DataError, match="2 labels for 1 paths"):
        read_lm_eval(tmp_path, "acc", runs=[1, 2])
    # the same run label twice for one (model, task): both files named
    with pytest.raises(DataError, match=r"seed11.*seed22|seed22.*seed11"):
        read_lm_eval(tmp_path, "acc", runs=lambda p: 1)


def test_lm_eval_filters(tmp_path, quiet):
    docs = [s for i, (a, b) in enumerate([(1, 1), (0, 1), (0, 0)]) for s in _gen_samples(i, a, b)]
    path = write_lm_eval(tmp_path, "m", STAMPS[0], {"gsm8k": docs})["gsm8k"]
    with pytest.raises(DataError, match=r"samples_gsm8k.*\['flexible-extract', 'strict-match'\]"):
        read_lm_eval(path, "exact_match")
    strict = read_lm_eval(path, "exact_match", filter_name="strict-match")
    assert strict["correct"].tolist() == [1, 0, 0]
    assert read_lm_eval(path, "exact_match,flexible-extract")["correct"].tolist() == [1, 1, 0]
    with pytest.raises(DataError, match="no samples for filter 'nope'"):
        read_lm_eval(path, "exact_match", filter_name="nope")


def test_lm_eval_partial_credit(tmp_path, quiet):
    samples = mc_task([1, 0, 1])
    samples[1]["acc"] = 0.25
    path = write_lm_eval(tmp_path, "m", STAMPS[0], {"arc_easy": samples})["arc_easy"]
    with pytest.raises(DataError, match=r"samples_arc_easy.*doc_id 1, metric 'acc'.*0\.25.*allow_partial"):
        read_lm_eval(path, "acc")
    df = read_lm_eval(path, "acc", allow_partial=True)
    assert df["correct"].tolist() == [1.0, 0.25, 1.0]


def test_lm_eval_bad_input_names_the_culprit(tmp_path, quiet):
    path = write_lm_eval(tmp_path, "m", STAMPS[0], {"arc_easy": mc_task([1, 0])})["arc_easy"]
    with pytest.raises(DataError, match=r"doc_id 0 has no metric 'f1'; metrics logged: \['acc', 'acc_norm'\]"):
        read_lm_eval(path, "f1")
    text = path.read_text()
    path.write_text(text + "{not json\n")
    with pytest.raises(DataError, match=r"samples_arc_easy.*line 3: not valid JSON"):
        read_lm_eval(path, "acc")
    path.write_text(text + json.dumps({"acc": 1.0}) + "\n")
    with pytest.raises(DataError, match=r"line 3: no 'doc_id' field"):
        read_lm_eval(path, "acc")
    path.write_text(text + text.splitlines()[0] + "\n")
    with pytest.raises(DataError, match=r"doc_id 0 is logged twice"):
        read_lm_eval(path, "acc")
    corpus = json.loads(text.splitlines()[0]) | {"bleu": [["ref"], ["pred"]]}
    path.write_text(json.dumps(corpus) + "\n")
    with pytest.raises(DataError, match=r"doc_id 0, metric 'bleu': score is list"):
        read_lm_eval(path, "bleu")
    with pytest.raises(DataError, match="no such file or folder"):
        read_lm_eval(tmp_path / "missing", "acc")
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataError, match="no lm-evaluation-harness samples"):
        read_lm_eval(tmp_path / "empty", "acc")


# ---------------------------------------------------------------------------- Inspect AI writer


def _spec(model: str, task: str, epochs: int, ids: list, created: str, scorers: list[str]) -> dict:
    return {
        "eval_id": _sha(task + model + created)[:22], "run_id": _sha(created)[:22],
        "created": created, "task": task, "task_id": _sha(task + model + created)[:22], "task_version": 0,
        "task_file": f"tasks/{task}.py", "task_registry_name": task, "task_attribs": {},
        "task_args": {}, "task_args_passed": {},
        "dataset": {"name": task, "location": f"data/{task}.jsonl", "samples": len(ids),
                    "sample_ids": ids, "shuffled": False},
        "model": model, "model_generate_config": {}, "model_args": {},
        "config": {"epochs": epochs, "epochs_reducer": ["mean"], "fail_on_error": True,
                   "sandbox_cleanup": True, "log_samples": True, "log_realtime": True,
                   "log_images": True, "score_display": True},
        "revision": {"type": "git", "origin": "https://example.org/evals.git", "commit": "abc1234"},
        "packages": {"inspect_ai": "0.3.99"},
        "scorers": [{"name": s, "options": {}, "metrics": [{"name": "inspect_ai/accuracy",
                     "options": {}}, {"name": "inspect_ai/stderr", "options": {}}], "metadata": {}}
                    for s in scorers],
    }


def _sample(sid, epoch: int, scores: dict | None, model: str, error: str | None = None) -> dict:
    answer = "Yes" if scores and "C" in map(str, scores.values()) else "No"
    out = {
        "id": sid, "epoch": epoch, "input": f"Question {sid}?", "target": "Yes",
        "messages": [{"id": f"m{sid}{epoch}", "content": f"Question {sid}?", "source": "input",
                      "role": "user"},
                     {"id": f"a{sid}{epoch}", "content": answer, "source": "generate",
                      "role": "assistant", "model": model.split("/")[-1]}],
        "output": {"model": model.split("/")[-1], "choices": [{"message": {
            "id": f"a{sid}{epoch}", "content": answer, "source": "generate", "role": "assistant"},
            "stop_reason": "stop"}], "usage": {"input_tokens": 20, "output_tokens": 2,
                                                "total_tokens": 22}, "time": 0.3},
        "metadata": {}, "store": {}, "events": [],
        "model_usage": {model: {"input_tokens": 20, "output_tokens": 2, "total_tokens": 22}},
        "total_time": 0.4, "working_time": 0.3, "uuid": _sha(f"{sid}-{epoch}")[:22],
        "error_retries": [], "attachments": {},
    }
    if scores is not None:
        out["scores"] = {name: {"value": v, "answer": answer, "explanation": answer}
                         for name, v in scores.items()}
    if error is not None:
        out["error"] = {"message": error, "traceback": "Traceback ...", "traceback_ansi": ""}
    return out


def make_log(model: str, task: str, scores: dict, *, created: str = "2024-05-01T10:00:00+00:00",
             status: str = "success", errors: dict | None = None) -> dict:
    """An EvalLog as a dict. ``scores`` maps (id, epoch) -> {scorer: value}."""
    ids = list(dict.fromkeys(sid for sid, _ in scores))
    epochs = max(e for _, e in scores)
    scorers = sorted({s for v in scores.values() if v for s in v})
    samples = [_sample(sid, e, v, model, (errors or {}).get((sid, e))) for (sid, e), v in scores.items()]
    return {
        "version": 2, "status": status, "eval": _spec(model, task, epochs, ids, created, scorers),
        "plan": {"name": "plan", "steps": [{"solver": "generate", "params": {}}], "config": {}},
        "results": {"total_samples": len(samples), "completed_samples": len(samples),
                    "scores": [{"name": s, "scorer": s, "params": {}, "metrics": {
                        "accuracy": {"name": "accuracy", "value": 0.5, "params": {}}}}
                        for s in scorers]},
        "stats": {"started_at": created, "completed_at": created,
                  "model_usage": {model: {"input_tokens": 20, "output_tokens": 2}}},
        "samples": samples,
        "reductions": [{"scorer": s, "reducer": "mean", "samples": [
            {"value": 0.5, "sample_id": sid} for sid in ids]} for s in scorers],
    }


def write_eval(path: Path, log: dict, *, finished: bool = True) -> Path:
    """Write an EvalLog as Inspect's eval recorder lays out a .eval archive."""
    header = {k: v for k, v in log.items() if k not in ("samples", "reductions")}
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=5) as zf:
        zf.writestr("_journal/start.json", json.dumps(
            {"version": log["version"], "eval": log["eval"], "plan": log["plan"]}))
        summaries = []
        for sample in log["samples"]:
            zf.writestr(f"samples/{sample['id']}_epoch_{sample['epoch']}.json", json.dumps(sample))
            summaries.append({k: sample[k] for k in ("id", "epoch", "input", "target", "uuid")}
                             | {"scores": sample.get("scores"), "completed": True})
        zf.writestr("_journal/summaries/1.json", json.dumps(summaries))
        if finished:
            zf.writestr("summaries.json", json.dumps(summaries))
            zf.writestr("reductions.json", json.dumps(log["reductions"]))
            zf.writestr("header.json", json.dumps(header))
    return path


def write_json_log(path: Path, log: dict) -> Path:
    """The older JSON recorder: the whole EvalLog in one file."""
    path.write_text(json.dumps(log, indent=2))
    return path


def grid(values: list[list[str]], scorer: str = "match") -> dict:
    """{(id, epoch): {scorer: value}} from a samples x epochs grid (ids 1..n)."""
    return {(i + 1, e + 1): {scorer: v} for i, row in enumerate(values) for e, v in enumerate(row)}


LOG_NAME = "2024-05-01T10-00-00+00-00_{task}_{tag}.{ext}"

# ----------------------------------------------------------------------------- Inspect AI tests


def test_inspect_eval_archive(tmp_path, quiet):
    values = [["C", "I"], ["I", "I"], ["C", "C"]]
    path = write_eval(tmp_path / LOG_NAME.format(task="popularity", tag="a", ext="eval"),
                      make_log("openai/gpt-4o", "popularity", grid(values)))
    df = read_inspect(path)
    assert list(df.columns) == ["model", "item", "run", "correct"]
    assert df["model"].astype(str).unique().tolist() == ["openai/gpt-4o"]
    got = {(r.item, r.run): r.correct for r in df.itertuples()}
    assert got == {(i + 1, e + 1): int(v == "C") for i, row in enumerate(values) for e, v in enumerate(row)}


def test_inspect_json_log_reads_like_eval(tmp_path, quiet):
    log = make_log("anthropic/claude", "arith", grid([["C", "I", "C"], ["N", "C", "C"]]))
    from_eval = read_inspect(write_eval(tmp_path / "a.eval", log))
    from_json = read_inspect(write_json_log(tmp_path / "a.json", log))
    pd.testing.assert_frame_equal(from_eval.sort_values(["item", "run"]).reset_index(drop=True),
                                  from_json.sort_values(["item", "run"]).reset_index(drop=True))
    assert from_json["correct"].sum() == 4  # N (no answer) scores 0


def test_inspect_scorer_choice(tmp_path, quiet):
    scores = {(1, 1): {"match": "C", "model_graded_qa": "I"}, (2, 1): {"match": "I", "model_graded_qa": "I"}}
    path = write_eval(tmp_path / "s.eval", make_log("m/x", "t", scores))
    with pytest.raises(DataError, match=r"several scores \['match', 'model_graded_qa'\].*scorer="):
        read_inspect(path)
    assert read_inspect(path, scorer="match")["correct"].tolist() == [1, 0]
    assert read_inspect(path, scorer="model_graded_qa")["correct"].tolist() == [0, 0]
    with pytest.raises(DataError, match=r"no sample has a score 'f1'; scores present: \['match'"):
        read_inspect(path, scorer="f1")


def test_inspect_partial_credit(tmp_path, quiet):
    path = write_eval(tmp_path / "p.eval", make_log("m/x", "t", grid([["C"], ["P"], ["I"]])))
    with pytest.raises(DataError, match=r"p\.eval: sample 2, epoch 1, scorer 'match': score 0\.5 is "
                                        r"partial credit.*allow_partial=True"):
        read_inspect(path)
    assert read_inspect(path, allow_partial=True)["correct"].tolist() == [1.0, 0.5, 0.0]


def test_inspect_numeric_and_bad_values(tmp_path, quiet):
    scores = {(1, 1): {"s": True}, (2, 1): {"s": 0}, (3, 1): {"s": 1.0}, (4, 1): {"s": "yes"}}
    assert read_inspect(write_eval(tmp_path / "n.eval", make_log("m", "t", scores)))[
        "correct"].tolist() == [1, 0, 1, 1]
    for bad, msg in [("maybe", "'maybe' is not a recognised value"), (3, "not a number in \\[0, 1\\]"),
                     ({"a": 1, "b": 0}, "several values \\['a', 'b'\\]")]:
        path = write_eval(tmp_path / "b.eval", make_log("m", "t", {(9, 2): {"s": bad}}))
        with pytest.raises(DataError, match=rf"b\.eval: sample 9, epoch 2.*{msg}"):
            read_inspect(path)


def test_inspect_several_logs_models_and_tasks(tmp_path, quiet):
    for model, tag in (("openai/gpt-4o", "a"), ("google/gemini", "b")):
        for task in ("arith", "logic"):
            write_eval(tmp_path / LOG_NAME.format(task=task, tag=tag, ext="eval"),
                       make_log(model, task, grid([["C", "I"], ["I", "C"]])))
    (tmp_path / "logs.json").write_text("{}")  # Inspect's log-folder manifest is not a log
    df = read_inspect(tmp_path)
    assert len(df) == 16
    assert df.attrs["evalmix"]["slices"] == ["task"]
    assert df["item"].cat.categories.tolist() == ["arith:1", "arith:2", "logic:1", "logic:2"]
    assert df.groupby(["model", "task"], observed=True).size().tolist() == [4] * 4


def test_inspect_repeated_logs(tmp_path, quiet):
    first = write_eval(tmp_path / "r1.eval", make_log("m", "t", grid([["C", "C"], ["I", "I"]]),
                                                      created="2024-05-01T10:00:00+00:00"))
    second = write_eval(tmp_path / "r2.eval", make_log("m", "t", grid([["I", "C"], ["I", "C"]]),
                                                       created="2024-05-02T10:00:00+00:00"))
    with pytest.raises(DataError, match=r"r1\.eval, .*r2\.eval.*runs='log'"):
        read_inspect([second, first])
    df = read_inspect([second, first], runs="log")
    got = df.pivot(index="item", columns="run", values="correct")
    assert got.columns.tolist() == [1, 2, 3, 4]  # r1's epochs first: it was created first
    assert got.values.tolist() == [[1, 1, 0, 1], [0, 0, 0, 1]]


@pytest.mark.filterwarnings("ignore:factor .* has a single level")
def test_inspect_unfinished_log_and_relogged_sample(tmp_path):
    log = make_log("m", "t", grid([["C"], ["I"]]), status="started")
    path = write_eval(tmp_path / "u.eval", log, finished=False)
    # a requeued sample appends a second member of the same name; the last one counts
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # zipfile warns about the duplicate name
        with zipfile.ZipFile(path, "a") as zf:
            zf.writestr("samples/2_epoch_1.json", json.dumps(_sample(2, 1, {"match": "C"}, "m")))
    with pytest.warns(DataWarning, match=r"u\.eval has status 'started'"):
        df = read_inspect(path)
    assert df["correct"].tolist() == [1, 1]


@pytest.mark.filterwarnings("ignore:factor .* has a single level")
def test_inspect_unscored_samples(tmp_path):
    scores = {(1, 1): {"match": "C"}, (2, 1): None, (3, 1): {"match": "I"}}
    path = write_eval(tmp_path / "e.eval", make_log("m", "t", scores, status="error",
                                                    errors={(2, 1): "RateLimitError: 429"}))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        with pytest.raises(DataError, match=r"e\.eval: item 2, run 1 has no score \(status 'error': "
                                            r"RateLimitError: 429\).*errors='drop'"):
            read_inspect(path, errors="raise")
    with pytest.warns(DataWarning) as record:
        df = read_inspect(path)
    messages = [str(w.message) for w in record]
    assert any("has status 'error'" in m for m in messages)
    assert any("left out 1 sample(s) without a score (1 error" in m for m in messages)
    assert df["item"].tolist() == [1, 3]
    with pytest.warns(FutureWarning, match="drop_unscored= is deprecated"):
        assert read_inspect(path, drop_unscored=True)["item"].tolist() == [1, 3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        kept = read_inspect(path, errors="keep")
    assert kept["status"].tolist() == ["ok", "error", "ok"]
    assert kept["correct"].isna().tolist() == [False, True, False]
    assert "evalmix" not in kept.attrs  # not a validated table until the errors are resolved


def test_inspect_legacy_score_field(tmp_path, quiet):
    log = make_log("m", "t", grid([["C"], ["I"]]))
    for sample in log["samples"]:
        sample["score"] = sample.pop("scores")["match"]
    assert read_inspect(write_json_log(tmp_path / "old.json", log), scorer="match")[
        "correct"].tolist() == [1, 0]


def test_inspect_not_a_log(tmp_path):
    (tmp_path / "x.json").write_text(json.dumps({"results": {}}))
    with pytest.raises(DataError, match=r"x\.json is not an Inspect log"):
        read_inspect(tmp_path / "x.json")
    with zipfile.ZipFile(tmp_path / "y.eval", "w") as zf:
        zf.writestr("other.txt", "hello")
    with pytest.raises(DataError, match=r"y\.eval is a zip archive without header\.json"):
        read_inspect(tmp_path / "y.eval")
    with pytest.raises(DataError, match="runs must be 'epoch' or 'log'"):
        read_inspect(tmp_path / "y.eval", runs="file")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.lists(st.sampled_from(["C", "I", "N"]), min_size=3, max_size=3),
                min_size=1, max_size=6),
       st.sampled_from(["eval", "json"]))
def test_inspect_round_trip_property(tmp_path, values, ext):
    """Every (sample, epoch) comes back once with C -> 1 and I/N -> 0: no row lost or invented."""
    log = make_log("m", "t", grid(values))
    path = tmp_path / f"prop.{ext}"
    (write_eval if ext == "eval" else write_json_log)(path, log)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        df = read_inspect(path)
    assert len(df) == len(values) * 3
    got = df.sort_values(["item", "run"])["correct"].to_numpy()
    assert np.array_equal(got, [int(v == "C") for row in values for v in row])


def test_loaders_feed_accuracy(tmp_path, quiet):
    write_lm_eval(tmp_path, "org/a", STAMPS[0], {"arc_easy": mc_task([1, 1, 0, 1])})
    table = evalmix.accuracy(read_lm_eval(tmp_path, "acc"), by=["model"]).table
    assert table["k"].tolist() == [3] and table["n"].tolist() == [4]
