"""Damaged and malformed harness logs: every loader names the file and the field, never a foreign error.

Each case starts from a real log under tests/fixtures (written by inspect_ai, lm-evaluation-harness,
HELM and oaieval; see tests/fixtures/make_fixtures.sh), damages a copy in tmp_path the way logs
get damaged in practice (a copy cut short, a byte-order mark added by an editor, a value of the
wrong type written by a patched harness), and checks the exact evalmix error or warning.  Read
from a folder, a damaged file is left out with a DataWarning naming it, and the others still load.
"""

from __future__ import annotations

import json
import re
import shutil
import warnings
import zipfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from evalmix import DataError, DataWarning, read_helm, read_inspect, read_lm_eval, read_logs, read_openai_evals
from evalmix.cli import main
from evalmix.integrations.inspect_hooks import leaderboard_report

FIXTURES = Path(__file__).parents[1] / "fixtures"
INSPECT_ZSTD = FIXTURES / "inspect" / "v0.3.285"  # inspect_ai 0.3.285: Zstandard members
INSPECT_DEFLATE = FIXTURES / "inspect" / "v0.3.170"  # inspect_ai 0.3.170: deflate members
INSPECT_JSON = next((FIXTURES / "inspect" / "v0.3.285-json").glob("*.json"))
LM_EVAL = FIXTURES / "lm_eval" / "out"
HELM = FIXTURES / "helm"
OPENAI = FIXTURES / "openai_evals"
BOM = b"\xef\xbb\xbf"


# --- helpers ---------------------------------------------------------------------------------


def arith_logs(folder: Path) -> list[Path]:
    """The two arith logs of a fixture folder (models alpha and beta), alpha first."""
    logs = sorted(folder.glob("*_arith_*.eval"))
    models = [str(quiet(read_inspect, p, scorer="match")["model"].iloc[0]) for p in logs]
    assert sorted(models) == ["mockllm/alpha", "mockllm/beta"]
    return [p for _, p in sorted(zip(models, logs))]


def quiet(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Call a loader with the notes on unscored samples and single-model tables silenced."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return fn(*args, **kwargs)


def error_of(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> str:
    """The message of the DataError ``fn`` raises (exactly DataError, no other class)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        with pytest.raises(DataError) as info:
            fn(*args, **kwargs)
    assert type(info.value) is DataError
    return str(info.value)


def assert_names(message: str, *parts: str) -> None:
    for part in parts:
        assert part in message, f"{part!r} not in {message!r}"


def left_out(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> tuple[Any, str]:
    """(result, the one warning about files left out) of a loader reading a folder."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args, **kwargs)
    notes = [w for w in caught if "cannot be read as" in str(w.message)]
    assert len(notes) == 1, [str(w.message) for w in caught]
    assert notes[0].category is DataWarning
    return result, str(notes[0].message)


def no_files_left_out(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = fn(*args, **kwargs)
    assert not [w for w in caught if "cannot be read as" in str(w.message)]
    return result


def members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as zf:
        return {info.filename: zf.read(info) for info in zf.infolist()}


def write_eval(path: Path, content: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in content.items():
            zf.writestr(name, data)
    return path


def edit_sample(src: Path, dst: Path, edit: Callable[[dict[str, Any]], None]) -> tuple[Path, str]:
    """A copy of a deflate .eval log whose first sample member is edited; (copy, member name)."""
    content = members(src)
    name = sorted(n for n in content if n.startswith("samples/"))[0]
    sample = json.loads(content[name])
    edit(sample)
    content[name] = json.dumps(sample).encode()
    return write_eval(dst, content), name


def edit_json(src: Path, dst: Path, edit: Callable[[Any], Any]) -> Path:
    data = json.loads(src.read_text(encoding="utf-8"))
    dst.write_text(json.dumps(edit(data)), encoding="utf-8")
    return dst


def edit_lines(src: Path, dst: Path, edit: Callable[[int, Any], Any]) -> Path:
    """A copy of a JSON-lines file with ``edit(line number, record)`` applied to each line."""
    lines = [json.loads(line) for line in src.read_text(encoding="utf-8").splitlines() if line.strip()]
    dst.write_text("".join(json.dumps(edit(i, rec)) + "\n" for i, rec in enumerate(lines, start=1)),
                   encoding="utf-8")
    return dst


def member_span(path: Path, name: str) -> tuple[int, int]:
    """(start, length) of a member's compressed bytes in the archive."""
    data = path.read_bytes()
    with zipfile.ZipFile(path) as zf:
        info = zf.getinfo(name)
    name_len = int.from_bytes(data[info.header_offset + 26:info.header_offset + 28], "little")
    extra_len = int.from_bytes(data[info.header_offset + 28:info.header_offset + 30], "little")
    return info.header_offset + 30 + name_len + extra_len, info.compress_size


def damage_member(src: Path, dst: Path, name: str) -> Path:
    data = bytearray(src.read_bytes())
    start, length = member_span(src, name)
    middle = start + length // 2
    data[middle:middle + 16] = bytes(range(200, 216))
    dst.write_bytes(bytes(data))
    return dst


def first_sample_member(path: Path) -> str:
    with zipfile.ZipFile(path) as zf:
        return sorted(n for n in zf.namelist() if n.startswith("samples/"))[0]


def lm_copy(tmp_path: Path, model: str = "org__tiny-a") -> Path:
    """A copy of one model folder of the lm-eval fixture (its three runs of three tasks)."""
    out = tmp_path / "out"
    shutil.copytree(LM_EVAL / model, out / model)
    return out


def helm_copy(tmp_path: Path) -> Path:
    out = tmp_path / "runs"
    shutil.copytree(HELM, out, ignore=shutil.ignore_patterns("VERSION"))
    return out


HELM_A = "simple_mcqa_model=tiny_model-a"
OPENAI_A = OPENAI / "tiny-a_arith_seed1.jsonl"


def cli_error(argv: list[str], capsys: pytest.CaptureFixture[str]) -> str:
    """The CLI's one-line error: exit status 2 and no traceback."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert re.match(r"evalmix \w+: error: ", lines[0])
    return lines[0]


# --- Inspect .eval archives ------------------------------------------------------------------


def test_truncated_eval_archive(tmp_path):
    src = arith_logs(INSPECT_ZSTD)[1]
    cut = tmp_path / "cut.eval"
    cut.write_bytes(src.read_bytes()[: len(src.read_bytes()) // 2])
    msg = error_of(read_inspect, cut, scorer="match")
    assert_names(msg, str(cut), "damaged or truncated archive")


def test_eval_with_corrupt_central_directory(tmp_path):
    src = arith_logs(INSPECT_ZSTD)[0]
    data = bytearray(src.read_bytes())
    end = data.rfind(b"PK\x05\x06")
    directory = int.from_bytes(data[end + 16:end + 20], "little")
    data[directory:directory + 4] = b"XXXX"
    bad = tmp_path / "dir.eval"
    bad.write_bytes(bytes(data))
    assert_names(error_of(read_inspect, bad, scorer="match"), str(bad), "central directory")


def test_eval_with_damaged_deflate_member(tmp_path):
    src = arith_logs(INSPECT_DEFLATE)[0]
    name = first_sample_member(src)
    bad = damage_member(src, tmp_path / "deflate.eval", name)
    assert_names(error_of(read_inspect, bad, scorer="match"), str(bad), f"member {name!r}", "damaged")


def test_eval_with_damaged_zstandard_member(tmp_path):
    src = arith_logs(INSPECT_ZSTD)[0]
    name = first_sample_member(src)
    bad = damage_member(src, tmp_path / "zstd.eval", name)
    assert_names(error_of(read_inspect, bad, scorer="match"), str(bad), f"member {name!r}")


def test_empty_eval_file(tmp_path):
    empty = tmp_path / "empty.eval"
    empty.write_bytes(b"")
    assert_names(error_of(read_inspect, empty), str(empty), "is empty")


def test_eval_sample_epoch_null(tmp_path):
    bad, name = edit_sample(arith_logs(INSPECT_DEFLATE)[0], tmp_path / "e.eval",
                            lambda s: s.update(epoch=None))
    assert_names(error_of(read_inspect, bad, scorer="match"), str(bad), f"member {name}: epoch is null",
                 "expected an integer")


def test_eval_sample_id_is_a_list(tmp_path):
    bad, name = edit_sample(arith_logs(INSPECT_DEFLATE)[0], tmp_path / "i.eval",
                            lambda s: s.update(id=[1, 2]))
    assert_names(error_of(read_inspect, bad, scorer="match"), str(bad), f"member {name}: id is an array",
                 "expected an integer or a string")


def test_eval_sample_without_id(tmp_path):
    bad, name = edit_sample(arith_logs(INSPECT_DEFLATE)[0], tmp_path / "n.eval", lambda s: s.pop("id"))
    assert_names(error_of(read_inspect, bad, scorer="match"), str(bad), f"member {name}: id is missing")


def test_eval_scores_as_a_list(tmp_path):
    bad, name = edit_sample(arith_logs(INSPECT_DEFLATE)[0], tmp_path / "s.eval",
                            lambda s: s.update(scores=list(s["scores"].values())))
    assert_names(error_of(read_inspect, bad, scorer="match"), str(bad), f"{name}: scores is an array",
                 "expected an object")


def test_eval_score_is_a_string_not_a_score_object(tmp_path):
    bad, name = edit_sample(arith_logs(INSPECT_DEFLATE)[0], tmp_path / "o.eval",
                            lambda s: s["scores"].update(match="C"))
    assert_names(error_of(read_inspect, bad, scorer="match"), str(bad), f"{name}: scores.match is a string")


def test_eval_score_value_is_a_list(tmp_path):
    bad, name = edit_sample(arith_logs(INSPECT_DEFLATE)[0], tmp_path / "v.eval",
                            lambda s: s["scores"]["match"].update(value=[1, 0]))
    msg = error_of(read_inspect, bad, scorer="match")
    assert_names(msg, str(bad), "score is list", f"{name}: scores.match.value")


def test_eval_header_not_an_object(tmp_path):
    content = members(arith_logs(INSPECT_DEFLATE)[0])
    key = "header.json" if "header.json" in content else "_journal/start.json"
    content[key] = b"[1, 2, 3]"
    bad = write_eval(tmp_path / "h.eval", content)
    assert_names(error_of(read_inspect, bad), str(bad), f"member {key}", "not an Inspect log")


def test_eval_model_is_a_number(tmp_path):
    content = members(arith_logs(INSPECT_DEFLATE)[0])
    key = "header.json" if "header.json" in content else "_journal/start.json"
    header = json.loads(content[key])
    header["eval"]["model"] = 7
    content[key] = json.dumps(header).encode()
    bad = write_eval(tmp_path / "m.eval", content)
    assert_names(error_of(read_inspect, bad), str(bad), "eval.model is an integer", "expected a string")


def test_eval_member_cut_short(tmp_path):
    src = arith_logs(INSPECT_DEFLATE)[0]
    content = members(src)
    name = first_sample_member(src)
    content[name] = content[name][:100]
    bad = write_eval(tmp_path / "j.eval", content)
    assert_names(error_of(read_inspect, bad, scorer="match"), str(bad), f"member {name}",
                 "not valid JSON")


# --- Inspect .json logs ----------------------------------------------------------------------


def test_json_log_with_bom_reads_as_utf8(tmp_path):
    bom = tmp_path / "bom.json"
    bom.write_bytes(BOM + INSPECT_JSON.read_bytes())
    want = quiet(read_inspect, INSPECT_JSON, scorer="match")
    pd.testing.assert_frame_equal(quiet(read_inspect, bom, scorer="match"), want)
    # recognised by content in a folder, as the unmarked log is
    assert len(no_files_left_out(read_logs, tmp_path, scorer="match")) == len(want) == 12


def test_json_log_named_eval_reads_as_json(tmp_path):
    renamed = tmp_path / "renamed.eval"
    renamed.write_bytes(BOM + INSPECT_JSON.read_bytes())
    pd.testing.assert_frame_equal(quiet(read_inspect, renamed, scorer="match"),
                                  quiet(read_inspect, INSPECT_JSON, scorer="match"))


def test_json_log_samples_as_an_object(tmp_path):
    bad = edit_json(INSPECT_JSON, tmp_path / "o.json",
                    lambda d: {**d, "samples": {str(i): s for i, s in enumerate(d["samples"])}})
    assert_names(error_of(read_inspect, bad), str(bad), "samples is an object", "expected an array")


def test_json_log_truncated(tmp_path):
    cut = tmp_path / "cut.json"
    cut.write_bytes(INSPECT_JSON.read_bytes()[:5000])
    assert_names(error_of(read_inspect, cut), str(cut), "not valid JSON", "truncated")


def test_json_log_score_value_path(tmp_path):
    def edit(d):
        d["samples"][3]["scores"]["match"]["value"] = ["C", "I"]
        return d
    bad = edit_json(INSPECT_JSON, tmp_path / "v.json", edit)
    assert_names(error_of(read_inspect, bad, scorer="match"), str(bad), "samples[3].scores.match.value",
                 "score is list")


def test_json_log_epoch_null(tmp_path):
    def edit(d):
        d["samples"][3]["epoch"] = None
        return d
    bad = edit_json(INSPECT_JSON, tmp_path / "e.json", edit)
    assert_names(error_of(read_inspect, bad, scorer="match"), str(bad), "samples[3].epoch is null")


def test_json_log_sample_not_an_object(tmp_path):
    def edit(d):
        d["samples"][5] = "sample 6"
        return d
    bad = edit_json(INSPECT_JSON, tmp_path / "x.json", edit)
    assert_names(error_of(read_inspect, bad, scorer="match"), str(bad), "samples[5] is a string")


def test_json_log_top_level_array(tmp_path):
    bad = tmp_path / "a.json"
    bad.write_text(json.dumps([json.loads(INSPECT_JSON.read_text())]))
    assert_names(error_of(read_inspect, bad), str(bad), "is not an Inspect log")


def test_empty_json_log(tmp_path):
    empty = tmp_path / "empty.json"
    empty.write_text("")
    assert_names(error_of(read_inspect, empty), str(empty), "is empty")


# --- inspect_ai.analysis.samples_df frames --------------------------------------------------


def samples_df_arith() -> pd.DataFrame:
    frame = pd.read_csv(INSPECT_ZSTD / "samples_df_model.csv")
    return frame[frame["task_name"] == "arith"].reset_index(drop=True)


def test_samples_df_missing_id_is_not_an_item_nan():
    frame = samples_df_arith()
    frame.loc[4, "id"] = float("nan")
    assert_names(error_of(read_inspect, frame, scorer="match"), "samples_df frame, row 4: id is nan")


def test_samples_df_epoch_missing():
    frame = samples_df_arith()
    frame.loc[2, "epoch"] = float("nan")
    assert_names(error_of(read_inspect, frame, scorer="match"), "samples_df frame, row 2: epoch is a number",
                 "expected an integer")


def test_samples_df_score_json_cut_short():
    frame = samples_df_arith()
    frame["score_rubric"] = frame["score_rubric"].astype(object)
    frame.loc[1, "score_rubric"] = '{"correct": 1, "conc'
    assert_names(error_of(read_inspect, frame, scorer="rubric", score_key="correct"),
                 "samples_df frame, row 1: score_rubric is not valid JSON")


# --- Inspect: folders mixing good and damaged logs -------------------------------------------


def inspect_folder(tmp_path: Path) -> tuple[Path, Path, list[Path]]:
    """A folder with alpha's log intact and three damaged copies of beta's log."""
    alpha, beta = arith_logs(INSPECT_DEFLATE)
    folder = tmp_path / "logs"
    folder.mkdir()
    good = folder / alpha.name
    shutil.copy(alpha, good)
    cut = folder / "beta-cut.eval"
    cut.write_bytes(beta.read_bytes()[:3000])
    member = damage_member(beta, folder / "beta-member.eval", first_sample_member(beta))
    typed, _ = edit_sample(beta, folder / "beta-epoch.eval", lambda s: s.update(epoch=None))
    return folder, good, [cut, member, typed]


def test_inspect_folder_leaves_out_each_damaged_log(tmp_path):
    folder, good, bad = inspect_folder(tmp_path)
    df, note = left_out(read_inspect, folder, scorer="match")
    assert_names(note, "left out 3 of 4 file(s)", *map(str, bad), "epoch is null")
    assert str(good) not in note
    pd.testing.assert_frame_equal(df, quiet(read_inspect, good, scorer="match"))
    assert set(df["model"]) == {"mockllm/alpha"}


def test_read_logs_folder_names_the_model_it_could_not_read(tmp_path):
    folder, good, bad = inspect_folder(tmp_path)
    df, note = left_out(read_logs, folder, scorer="match")
    assert_names(note, *map(str, bad))
    assert df.attrs["evalmix_source"]["format"] == "inspect" and len(df) == 12


def test_inspect_folder_of_damaged_logs_only(tmp_path):
    folder, good, bad = inspect_folder(tmp_path)
    good.unlink()
    msg = error_of(read_inspect, folder, scorer="match")
    assert_names(msg, "none of the 3 file(s)", *map(str, bad))


def test_inspect_list_of_files_raises_for_the_damaged_one(tmp_path):
    """Files named one by one are the caller's choice: a damaged one is an error, not a warning."""
    folder, good, bad = inspect_folder(tmp_path)
    assert_names(error_of(read_inspect, [good, bad[0]], scorer="match"), str(bad[0]))


# --- lm-evaluation-harness -------------------------------------------------------------------


def samples_file(out: Path, task: str = "mc_local") -> Path:
    return sorted(out.rglob(f"samples_{task}_*.jsonl"))[0]


def test_lm_eval_doc_id_is_a_list(tmp_path):
    out = lm_copy(tmp_path)
    path = samples_file(out)
    edit_lines(path, path, lambda i, r: {**r, "doc_id": [r["doc_id"]]} if i == 2 else r)
    assert_names(error_of(read_lm_eval, path), str(path), "line 2: doc_id is an array",
                 "expected an integer or a string")


def test_lm_eval_results_config_is_a_list(tmp_path):
    out = lm_copy(tmp_path)
    path = samples_file(out)
    stamp = path.name.split("_")[-1].removesuffix(".jsonl")
    results = path.parent / f"results_{stamp}.json"
    edit_json(results, results, lambda d: {**d, "config": [d["config"]]})
    assert_names(error_of(read_lm_eval, path), str(results), "config is an array", "expected an object")


def test_lm_eval_results_not_an_object(tmp_path):
    out = lm_copy(tmp_path)
    path = samples_file(out)
    stamp = path.name.split("_")[-1].removesuffix(".jsonl")
    results = path.parent / f"results_{stamp}.json"
    results.write_text("[]")
    assert_names(error_of(read_lm_eval, path), str(results), "not a JSON object")


def test_lm_eval_bom_reads_as_utf8(tmp_path):
    out = lm_copy(tmp_path)
    path = samples_file(out)
    want = read_lm_eval(out)
    path.write_bytes(BOM + path.read_bytes())
    pd.testing.assert_frame_equal(no_files_left_out(read_lm_eval, out), want)
    pd.testing.assert_frame_equal(no_files_left_out(read_logs, out), want)


def test_lm_eval_truncated_samples_file(tmp_path):
    out = lm_copy(tmp_path)
    path = samples_file(out)
    text = path.read_bytes()
    path.write_bytes(text[: text.index(b"\n", len(text) // 2) + 40])
    assert_names(error_of(read_lm_eval, path), str(path), "not valid JSON", "truncated")


def test_lm_eval_empty_samples_file(tmp_path):
    out = lm_copy(tmp_path)
    path = samples_file(out)
    path.write_text("")
    assert_names(error_of(read_lm_eval, path), str(path), "holds no logged samples")


def test_lm_eval_metric_value_is_a_list(tmp_path):
    out = lm_copy(tmp_path)
    path = samples_file(out)
    edit_lines(path, path, lambda i, r: {**r, "acc": [r["acc"]]} if i == 3 else r)
    msg = error_of(read_lm_eval, path, "acc")
    assert_names(msg, str(path), "metric 'acc': score is list", "line 3: acc")


def test_lm_eval_line_not_an_object(tmp_path):
    out = lm_copy(tmp_path)
    path = samples_file(out)
    edit_lines(path, path, lambda i, r: [r] if i == 4 else r)
    assert_names(error_of(read_lm_eval, path), str(path), "line 4: no 'doc_id' field")


def test_lm_eval_folder_leaves_out_the_damaged_run(tmp_path):
    out = lm_copy(tmp_path)
    shutil.copytree(LM_EVAL / "org__tiny-b", out / "org__tiny-b")
    want = read_lm_eval(out)
    bad = samples_file(out / "org__tiny-b", "gen_local")  # the first of its three runs
    edit_lines(bad, bad, lambda i, r: {**r, "doc_id": None} if i == 1 else r)
    df, note = left_out(read_lm_eval, out)
    assert_names(note, "left out 1 of 18 file(s)", str(bad), "line 1: doc_id is null")
    # what the folder reads without that file: tiny-b's other two gen_local runs, all else as before
    bad.unlink()
    pd.testing.assert_frame_equal(df, read_lm_eval(out))
    assert len(df) == len(want) - (want["model"].eq("org/tiny-b") & want["task"].eq("gen_local")
                                   & want["run"].eq(1)).sum()


# --- HELM ------------------------------------------------------------------------------------


def helm_stats(out: Path, run: str = HELM_A) -> Path:
    return out / run / "per_instance_stats.json"


def test_helm_train_trial_index_null(tmp_path):
    path = helm_stats(helm_copy(tmp_path))
    edit_json(path, path, lambda d: [{**e, "train_trial_index": None} if i == 2 else e
                                      for i, e in enumerate(d)])
    assert_names(error_of(read_helm, path), str(path), "[2].train_trial_index is null",
                 "expected an integer")


def test_helm_string_where_a_stat_belongs(tmp_path):
    path = helm_stats(helm_copy(tmp_path))

    def edit(d):
        d[1]["stats"][0] = "exact_match"
        return d
    edit_json(path, path, edit)
    assert_names(error_of(read_helm, path), str(path), "[1].stats[0] is a string", "expected an object")


def test_helm_stats_not_a_list(tmp_path):
    path = helm_stats(helm_copy(tmp_path))
    edit_json(path, path, lambda d: [{**e, "stats": {"n": 1}} if i == 0 else e for i, e in enumerate(d)])
    assert_names(error_of(read_helm, path), str(path), "[0].stats is an object", "expected an array")


def test_helm_instance_without_id(tmp_path):
    path = helm_stats(helm_copy(tmp_path))
    edit_json(path, path, lambda d: [{k: v for k, v in e.items() if k != "instance_id"} if i == 4 else e
                                      for i, e in enumerate(d)])
    assert_names(error_of(read_helm, path), str(path), "[4].instance_id is missing")


def test_helm_top_level_object(tmp_path):
    path = helm_stats(helm_copy(tmp_path))
    edit_json(path, path, lambda d: {"entries": d})
    assert_names(error_of(read_helm, path), str(path), "not a list of HELM per-instance statistics",
                 "the file is an object")


def test_helm_truncated(tmp_path):
    path = helm_stats(helm_copy(tmp_path))
    path.write_bytes(path.read_bytes()[:777])
    assert_names(error_of(read_helm, path), str(path), "not valid JSON")


def test_helm_bom_reads_as_utf8(tmp_path):
    out = helm_copy(tmp_path)
    want = read_helm(HELM)
    for run in (HELM_A, "simple_mcqa_model=tiny_model-b"):
        for name in ("per_instance_stats.json", "run_spec.json"):
            path = out / run / name
            path.write_bytes(BOM + path.read_bytes())
    pd.testing.assert_frame_equal(no_files_left_out(read_helm, out), want)


def test_helm_run_spec_model_is_a_number(tmp_path):
    out = helm_copy(tmp_path)
    spec = out / HELM_A / "run_spec.json"
    edit_json(spec, spec, lambda d: {**d, "adapter_spec": {**d["adapter_spec"], "model": 3}})
    assert_names(error_of(read_helm, helm_stats(out)), str(spec), "adapter_spec.model is an integer")


def test_helm_folder_leaves_out_the_damaged_run(tmp_path):
    out = helm_copy(tmp_path)
    path = helm_stats(out)
    edit_json(path, path, lambda d: [{**e, "train_trial_index": "0"} for e in d])
    df, note = left_out(read_helm, out)
    assert_names(note, "left out 1 of 2 file(s)", str(path), "[0].train_trial_index is a string")
    pd.testing.assert_frame_equal(df, read_helm(HELM / "simple_mcqa_model=tiny_model-b"))


# --- OpenAI evals ----------------------------------------------------------------------------


def test_openai_evals_record_without_sample_id(tmp_path):
    bad = edit_lines(OPENAI_A, tmp_path / "a.jsonl",
                     lambda i, r: {k: v for k, v in r.items() if k != "sample_id"} if i == 4 else r)
    assert_names(error_of(read_openai_evals, bad), str(bad), "line 4: sample_id is missing")


def test_openai_evals_folder_never_makes_an_item_none(tmp_path):
    folder = tmp_path / "records"
    folder.mkdir()
    good = shutil.copy(OPENAI_A, folder / OPENAI_A.name)
    bad = edit_lines(OPENAI / "tiny-b_arith_seed1.jsonl", folder / "tiny-b_arith_seed1.jsonl",
                     lambda i, r: {**r, "sample_id": None} if i == 3 else r)
    df, note = left_out(read_openai_evals, folder)
    assert_names(note, str(bad), "line 3: sample_id is null")
    assert "None" not in set(df["item"])
    pd.testing.assert_frame_equal(df, read_openai_evals(good))


def test_openai_evals_type_is_a_number(tmp_path):
    bad = edit_lines(OPENAI_A, tmp_path / "t.jsonl", lambda i, r: {**r, "type": 1} if i == 5 else r)
    assert_names(error_of(read_openai_evals, bad), str(bad), "line 5: type is an integer",
                 "expected a string")


def test_openai_evals_bom_reads_as_utf8(tmp_path):
    bom = tmp_path / OPENAI_A.name
    bom.write_bytes(BOM + OPENAI_A.read_bytes())
    want = read_openai_evals(OPENAI_A)
    pd.testing.assert_frame_equal(read_openai_evals(bom), want)
    pd.testing.assert_frame_equal(no_files_left_out(read_logs, tmp_path), want)


def test_openai_evals_truncated(tmp_path):
    cut = tmp_path / "cut.jsonl"
    data = OPENAI_A.read_bytes()
    cut.write_bytes(data[: data.rindex(b"\n", 0, len(data) - 1) + 30])
    assert_names(error_of(read_openai_evals, cut), str(cut), "not valid JSON", "truncated")


def test_openai_evals_first_line_cut_short_in_a_folder(tmp_path):
    """A record file cut inside its spec line is still recognised, and reported as left out."""
    folder = tmp_path / "records"
    folder.mkdir()
    shutil.copy(OPENAI_A, folder / OPENAI_A.name)
    cut = folder / "cut.jsonl"
    cut.write_bytes(OPENAI_A.read_bytes()[:120])
    df, note = left_out(read_logs, folder)
    assert_names(note, str(cut), "not valid JSON")
    pd.testing.assert_frame_equal(df.drop_duplicates(), read_logs(OPENAI_A))


def test_openai_evals_completion_fns_is_a_string(tmp_path):
    bad = edit_lines(OPENAI_A, tmp_path / "c.jsonl",
                     lambda i, r: {"spec": {**r["spec"], "completion_fns": 7}} if i == 1 else r)
    assert_names(error_of(read_openai_evals, bad), str(bad), "line 1: spec.completion_fns is an integer")


def test_openai_evals_line_is_an_array(tmp_path):
    bad = edit_lines(OPENAI_A, tmp_path / "l.jsonl", lambda i, r: [r] if i == 6 else r)
    assert_names(error_of(read_openai_evals, bad), str(bad), "line 6 is an array", "expected an object")


def test_openai_evals_outcome_is_a_list(tmp_path):
    bad = edit_lines(OPENAI_A, tmp_path / "d.jsonl",
                     lambda i, r: {**r, "data": {**r["data"], "correct": [True]}} if i == 3 else r)
    assert_names(error_of(read_openai_evals, bad), str(bad), "score is list", "line 3: data.correct")


def test_openai_evals_top_level_not_a_record(tmp_path):
    bad = tmp_path / "x.jsonl"
    bad.write_text("[1, 2]\n")
    assert_names(error_of(read_openai_evals, bad), str(bad), "not an OpenAI evals record file")


# --- the Inspect run-end hook ----------------------------------------------------------------


def test_hook_misspelt_baseline_is_named():
    logs = sorted((FIXTURES / "inspect-hook").glob("*.eval"))
    msg = error_of(leaderboard_report, logs, baseline="mockllm/betta", n_boot=50)
    assert_names(msg, "'mockllm/betta'", "['mockllm/alpha', 'mockllm/beta', 'mockllm/gamma']",
                 "did you mean 'mockllm/beta'?")


def test_hook_baseline_not_run_on_a_task():
    """A baseline run on one task (arith8: alpha, beta, gamma) but not the other (arith: alpha,
    beta): that task is skipped, saying why, and the other compares with it."""
    logs = sorted((FIXTURES / "inspect-hook").glob("*.eval")) + arith_logs(INSPECT_DEFLATE)
    with pytest.warns(DataWarning, match=r"task 'arith' left out.*'mockllm/gamma' was not run on this "
                                         r"task; its models: \['mockllm/alpha', 'mockllm/beta'\]"):
        report = leaderboard_report(logs, scorer="match", baseline="mockllm/gamma", n_boot=50)
    assert set(report["tasks"]) == {"arith8"} and set(report["skipped"]) == {"arith"}
    assert report["tasks"]["arith8"]["baseline"] == "mockllm/gamma"
    assert sorted(row["model"] for row in report["tasks"]["arith8"]["versus_baseline"]) == [
        "mockllm/alpha", "mockllm/beta"]


def test_hook_passes_on_damaged_logs(tmp_path):
    folder = tmp_path / "run"
    shutil.copytree(FIXTURES / "inspect-hook", folder)
    victim = sorted(folder.glob("*.eval"))[0]
    victim.write_bytes(victim.read_bytes()[:1000])
    with pytest.warns(DataWarning, match=re.escape(str(victim))):
        report = leaderboard_report(folder, n_boot=50)
    assert len(report["tasks"]["all"]["leaderboard"]) == 2


# --- the command line ------------------------------------------------------------------------


def test_cli_truncated_eval(tmp_path, capsys):
    cut = tmp_path / "cut.eval"
    data = arith_logs(INSPECT_ZSTD)[0].read_bytes()
    cut.write_bytes(data[: len(data) // 3])
    assert_names(cli_error(["describe", str(cut)], capsys), str(cut), "truncated")


def test_cli_helm_null_trial(tmp_path, capsys):
    path = helm_stats(helm_copy(tmp_path))
    edit_json(path, path, lambda d: [{**e, "train_trial_index": None} for e in d])
    assert_names(cli_error(["describe", str(path)], capsys), str(path), "[0].train_trial_index is null")


def test_cli_lm_eval_config_list(tmp_path, capsys):
    out = lm_copy(tmp_path)
    for results in out.rglob("results_*.json"):
        edit_json(results, results, lambda d: {**d, "config": []})
    line = cli_error(["describe", str(out)], capsys)
    assert_names(line, "none of the 9 file(s)", "config is an array")


def test_cli_openai_type_number(tmp_path, capsys):
    bad = edit_lines(OPENAI_A, tmp_path / "t.jsonl", lambda i, r: {**r, "type": 3} if i == 3 else r)
    assert_names(cli_error(["describe", str(bad)], capsys), str(bad), "line 3: type is an integer")


def test_cli_inspect_samples_object(tmp_path, capsys):
    bad = edit_json(INSPECT_JSON, tmp_path / "o.json", lambda d: {**d, "samples": {"0": d["samples"][0]}})
    assert_names(cli_error(["describe", str(bad)], capsys), str(bad), "samples is an object")


def test_cli_damaged_deflate_member(tmp_path, capsys):
    src = arith_logs(INSPECT_DEFLATE)[1]
    name = first_sample_member(src)
    bad = damage_member(src, tmp_path / "m.eval", name)
    assert_names(cli_error(["describe", str(bad), "--score", "match"], capsys), str(bad), f"member {name!r}")


def test_cli_epoch_null(tmp_path, capsys):
    bad, name = edit_sample(arith_logs(INSPECT_DEFLATE)[0], tmp_path / "e.eval",
                            lambda s: s.update(epoch=None))
    assert_names(cli_error(["describe", str(bad), "--score", "match"], capsys), str(bad),
                 f"member {name}: epoch is null")


def test_cli_openai_without_sample_id(tmp_path, capsys):
    bad = edit_lines(OPENAI_A, tmp_path / "s.jsonl",
                     lambda i, r: {k: v for k, v in r.items() if k != "sample_id"} if i == 7 else r)
    assert_names(cli_error(["describe", str(bad)], capsys), str(bad), "line 7: sample_id is missing")


def test_cli_lm_eval_doc_id_list(tmp_path, capsys):
    out = lm_copy(tmp_path)
    path = samples_file(out)
    edit_lines(path, path, lambda i, r: {**r, "doc_id": [0]} if i == 5 else r)
    assert_names(cli_error(["leaderboard", str(path), "--logs", "lm-eval", "--metric", "acc"], capsys),
                 str(path), "line 5: doc_id is an array")


def test_cli_folder_warns_and_reads_the_rest(tmp_path, capsys):
    folder, good, bad = inspect_folder(tmp_path)
    assert main(["describe", str(folder), "--score", "match", "--json"]) == 0
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err
    warned = [line for line in captured.err.splitlines() if "cannot be read as" in line]
    assert len(warned) == 1
    assert_names(warned[0], "evalmix describe: warning: DataWarning: left out 3 of 4", *map(str, bad))


# --- the good fixtures read as before --------------------------------------------------------


@pytest.mark.parametrize("folder,options", [
    (INSPECT_ZSTD, {"scorer": "match"}), (INSPECT_DEFLATE, {"scorer": "match"}),
    (INSPECT_JSON.parent, {"scorer": "match"}), (FIXTURES / "inspect-hook", {}),
    (LM_EVAL, {}), (HELM, {}), (OPENAI, {}),
])
def test_good_fixture_folders_leave_nothing_out(folder, options):
    df = no_files_left_out(read_logs, folder, **options)
    assert len(df) > 0 and df["correct"].isin([0, 1]).all()


# --- every field read, set to each wrong kind: an evalmix error naming the file, or a table ---

WRONG_KINDS = [None, [1, 2], {"a": 1}, "x", 2.5, True]


def field_paths(obj: Any, depth: int, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    out = [prefix] if prefix else []
    if depth and isinstance(obj, dict):
        for key, value in obj.items():
            out += field_paths(value, depth - 1, prefix + (key,))
    elif depth and isinstance(obj, list) and obj:
        out += field_paths(obj[0], depth - 1, prefix + (0,))
    return out


def set_path(obj: Any, path: tuple[Any, ...], value: Any) -> Any:
    for key in path[:-1]:
        obj = obj[key]
    obj[path[-1]] = value


def check_every_kind(write: Callable[[Any], Path], original: Any, paths: list[tuple[Any, ...]],
                     read: Callable[[Path], Any]) -> set[tuple[tuple[Any, ...], str]]:
    """Set each path to each wrong kind in turn: every read either returns a table or raises a
    DataError naming the file.  Returns the (path, repr of the value) that were read."""
    accepted = set()
    for path in paths:
        for value in WRONG_KINDS:
            data = json.loads(json.dumps(original))
            set_path(data, path, value)
            target = write(data)
            try:
                quiet(read, target)
            except DataError as exc:
                assert type(exc) is DataError
                assert str(target) in str(exc), (path, value, str(exc))
            else:
                accepted.add((path, repr(value)))
    return accepted


def test_inspect_sample_fields_of_every_kind(tmp_path):
    log = json.loads(INSPECT_JSON.read_text())
    s0 = ("samples", 0)
    paths = [s0 + ("id",), s0 + ("epoch",), s0 + ("scores",), s0 + ("scores", "match"),
             s0 + ("scores", "match", "value"), ("eval", "model"), ("eval", "task"), ("samples",),
             ("status",)]
    target = tmp_path / "log.json"

    def write(data: Any) -> Path:
        target.write_text(json.dumps(data))
        return target
    # evalmix's reader checks each field's kind; inspect_ai's (reader="auto" where it is installed)
    # coerces as its pydantic models do (an id true reads as 1)
    accepted = check_every_kind(write, log, paths, lambda p: read_inspect(p, scorer="match", reader="evalmix"))
    # what the schema allows: a string id or task, a sample without scores or without a value
    # (unscored, left out with a warning), True as a score, any status word
    assert accepted == {(s0 + ("id",), "'x'"), (s0 + ("scores",), "None"),
                        (s0 + ("scores", "match", "value"), "None"),
                        (s0 + ("scores", "match", "value"), "True"), (("eval", "task"), "None"),
                        (("eval", "task"), "'x'"), (("status",), "'x'"), (("eval", "model"), "'x'")}


def test_helm_fields_of_every_kind(tmp_path):
    out = helm_copy(tmp_path)
    path = helm_stats(out)
    # the first three of the 30 instances: the wrong kinds go into the first one, and each of the
    # 90 reads then parses a 13 kB file instead of 130 kB (the same reads accepted as with all 30)
    entries = json.loads(path.read_text())[:3]
    paths = [(0,) + p for p in field_paths(entries[0], 4)]
    target_read = out / HELM_A

    def write(data: Any) -> Path:
        path.write_text(json.dumps(data))
        return path
    write(entries)
    assert len(read_helm(target_read)) == 3  # the shortened file reads as it is
    accepted = check_every_kind(write, entries, paths, lambda p: read_helm(target_read))
    # the fields read refuse every wrong kind (instance_id takes a string; an unread statistic
    # such as num_references may hold anything)
    read_fields = {(0, "instance_id"), (0, "train_trial_index"), (0, "stats")}
    assert {(p, v) for p, v in accepted if p in read_fields} == {((0, "instance_id"), "'x'")}


def test_openai_evals_fields_of_every_kind(tmp_path):
    lines = [json.loads(line) for line in OPENAI_A.read_text().splitlines()]
    paths = [(0,) + p for p in field_paths(lines[0], 2)] + [(2,) + p for p in field_paths(lines[2], 3)]
    target = tmp_path / "r.jsonl"

    def write(data: Any) -> Path:
        target.write_text("".join(json.dumps(line) + "\n" for line in data))
        return target
    accepted = check_every_kind(write, lines, paths, read_openai_evals)
    read_fields = {(0, "spec"), (0, "spec", "eval_name"), (0, "spec", "completion_fns"), (2, "type"),
                   (2, "sample_id"), (2, "data"), (2, "data", "correct")}
    # another string as the event type or sample id is a valid record; a missing outcome is an
    # unscored sample (left out with a warning), True is a score; without completion functions
    # the model is named after the file
    assert {(p, v) for p, v in accepted if p in read_fields} == {
        ((0, "spec", "eval_name"), "'x'"), ((0, "spec", "completion_fns"), "None"),
        ((2, "type"), "'x'"), ((2, "sample_id"), "'x'"), ((2, "data"), "None"),
        ((2, "data"), "{'a': 1}"), ((2, "data", "correct"), "None"), ((2, "data", "correct"), "True")}


def test_lm_eval_fields_of_every_kind(tmp_path):
    out = lm_copy(tmp_path)
    path = samples_file(out)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    paths = [(0, key) for key in ("doc_id", "filter", "metrics", "acc", "acc_norm")]

    def write(data: Any) -> Path:
        path.write_text("".join(json.dumps(line) + "\n" for line in data))
        return path
    accepted = check_every_kind(write, lines, paths, read_lm_eval)
    # a string doc_id or filter, a list of metric names and True as a score are valid; acc_norm
    # is not the metric read
    assert {(p, v) for p, v in accepted if p[1] != "acc_norm"} == {
        ((0, "doc_id"), "'x'"), ((0, "filter"), "'x'"), ((0, "metrics"), "[1, 2]"), ((0, "acc"), "True")}
