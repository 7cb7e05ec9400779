"""read_inspect on logs written by inspect_ai itself, compared row by row with inspect_ai's reader.

The logs under tests/fixtures/inspect/ were written by inspect_ai 0.3.285 (.eval with Zstandard
members, and .json) and 0.3.170 (.eval with deflate members) running its mockllm model offline:
tests/fixtures/make_fixtures.sh regenerates them.  Beside them, reader.csv holds what
inspect_ai.log.read_eval_log reads from every log (one row per sample and scorer), and
samples_df*.csv what inspect_ai.analysis.samples_df returns.
"""

from __future__ import annotations

import json
import shutil
import warnings
import zipfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix import DataError, DataWarning, read_inspect

FIXTURES = Path(__file__).parents[1] / "fixtures" / "inspect"
VERSIONS = ["v0.3.285", "v0.3.170"]
LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}


def reader(version: str) -> pd.DataFrame:
    return pd.read_csv(FIXTURES / version / "reader.csv", dtype={"id": object})


def log_path(version: str, task: str, model: str | None = None) -> list[Path]:
    rows = reader(version)
    rows = rows[(rows["task"] == task) & ((rows["model"] == model) if model else True)]
    return [FIXTURES / version / name for name in sorted(set(rows["log"]))]


def expected(rows: pd.DataFrame, scorer: str, key: str | None = None) -> dict[tuple[int, int], float]:
    """(sample id, epoch) -> outcome, from inspect_ai's own reading of the scores."""
    out = {}
    for row in rows[rows["scorer"] == scorer].itertuples():
        value = json.loads(row.value)
        value = value[key] if isinstance(value, dict) else value
        out[int(row.id), int(row.epoch)] = LETTERS[value] if isinstance(value, str) else float(value)
    return out


def got(df: pd.DataFrame) -> dict[tuple[int, int], float]:
    return {(int(i), int(r)): float(c) for i, r, c in zip(df["item"], df["run"], df["correct"])}


def quiet_read(*args, **kwargs) -> pd.DataFrame:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        return read_inspect(*args, **kwargs)


def test_fixture_compression_methods():
    """The fixtures cover both archive flavours: Zstandard (method 93) and deflate (method 8)."""
    for version, method in (("v0.3.285", 93), ("v0.3.170", zipfile.ZIP_DEFLATED)):
        for path in (FIXTURES / version).glob("*.eval"):
            with zipfile.ZipFile(path) as zf:
                assert {i.compress_type for i in zf.infolist()} == {method}, path


@pytest.mark.parametrize("version", VERSIONS + ["v0.3.285-json"])
@pytest.mark.parametrize("scorer,key", [("match", None), ("includes", None), ("partial", None),
                                        ("rubric", "correct"), ("rubric", "concise")])
def test_every_scorer_matches_inspect_reader(version, scorer, key):
    rows = reader(version)
    for model in ("mockllm/alpha", "mockllm/beta"):
        paths = log_path(version, "arith", model)
        if not paths:
            assert version.endswith("json") and model == "mockllm/beta"
            continue
        (path,) = paths
        df = quiet_read(path, scorer=scorer, score_key=key, allow_partial=True)
        want = expected(rows[rows["log"] == path.name], scorer, key)
        assert len(want) == 12  # 4 samples x 3 epochs
        assert got(df) == want
        assert df["model"].astype(str).unique().tolist() == [model]
        assert df.attrs["evalmix"]["run"] == "run"


@pytest.mark.parametrize("version", VERSIONS)
def test_two_models_in_one_call(version):
    paths = log_path(version, "arith")
    df = quiet_read(paths, scorer="match")
    rows = reader(version)
    assert df["model"].cat.categories.tolist() == ["mockllm/alpha", "mockllm/beta"]
    for model, part in df.groupby("model", observed=True):
        assert got(part) == expected(rows[(rows["task"] == "arith") & (rows["model"] == model)], "match")
    fit_input = evalmix.accuracy(df, by=["model"]).table
    assert fit_input["n"].tolist() == [12, 12]


@pytest.mark.parametrize("version", VERSIONS)
def test_choices_are_required_and_explained(version):
    (path,) = log_path(version, "arith", "mockllm/alpha")
    with pytest.raises(DataError, match=r"several scores \['includes', 'match', 'partial', 'rubric'\]"):
        read_inspect(path)
    with pytest.raises(DataError, match=r"sample 1, epoch 1: score 'rubric' holds several values "
                                        r"\['concise', 'correct'\]: choose one with score_key="):
        read_inspect(path, scorer="rubric")
    with pytest.raises(DataError, match=r"score 'rubric' has no key 'style'; its keys"):
        read_inspect(path, scorer="rubric", score_key="style")
    with pytest.raises(DataError, match=r"score 0\.5 is partial credit.*allow_partial=True"):
        read_inspect(path, scorer="partial")


@pytest.mark.parametrize("version", VERSIONS)
def test_retry_and_original_counted_once(version):
    rows = reader(version)
    original, retry = log_path(version, "retried")
    with pytest.warns(DataWarning, match=r"merged an evaluation and its retry.*2 logs of "
                                         r"mockllm/alpha on retried.*each counted once") as record:
        df = read_inspect([retry, original])
    assert len(df) == 8  # 4 samples x 2 epochs, not the 8 + the original's finished ones
    assert got(df) == expected(rows[rows["log"] == retry.name], "includes")
    # the original's finished samples agree with the retry's copies
    first = expected(rows[rows["log"] == original.name], "includes")
    assert first and all(got(df)[k] == v for k, v in first.items())
    assert not any("has status 'error'" in str(w.message) for w in record)
    # also when read with runs='log': one evaluation, one set of runs
    assert sorted(set(quiet_read([original, retry], runs="log")["run"])) == [1, 2]
    # the original alone: its unfinished samples are left out and counted
    failed = rows[(rows["log"] == original.name) & rows["error"].notna()]["error"]
    cancelled = int(failed.str.startswith("CancelledError").sum())
    counts = ", ".join(f"{n} {s}" for s, n in (("cancelled", cancelled), ("error", len(failed) - cancelled))
                       if n)
    with pytest.warns(DataWarning, match=rf"left out {len(failed)} sample\(s\) without a score "
                                         rf"\({counts};"):
        alone = read_inspect(original)
    assert got(alone) == first


@pytest.mark.parametrize("version", VERSIONS)
def test_errored_samples_status(version):
    rows = reader(version)
    (path,) = log_path(version, "tolerant")
    kept = quiet_read(path, errors="keep")
    errored = rows[(rows["log"] == path.name) & rows["error"].notna()]
    assert len(errored) == 1
    status = dict(zip(zip(kept["item"].astype(int), kept["run"].astype(int)), kept["status"]))
    assert status[int(errored["id"].iloc[0]), int(errored["epoch"].iloc[0])] == "error"
    assert sum(s == "ok" for s in status.values()) == 7
    ok = kept[kept["status"] == "ok"]
    assert got(ok) == expected(rows[rows["log"] == path.name], "match")
    with pytest.raises(DataError, match=r"tolerant.*: item 2, run 1 has no score \(status 'error': "
                                        r"RuntimeError\('simulated provider failure"):
        read_inspect(path, errors="raise")
    with pytest.raises(DataError, match="errors must be one of 'drop', 'keep', 'raise'"):
        read_inspect(path, errors="ignore")


@pytest.mark.parametrize("version", VERSIONS)
@pytest.mark.parametrize("task,n", [("interrupted", 2), ("killed", 3)])
def test_unfinished_logs(version, task, n):
    rows = reader(version)
    (path,) = log_path(version, task)
    with pytest.warns(DataWarning, match=r"has status 'started': reading the samples it logged"):
        df = read_inspect(path)
    assert got(df) == expected(rows[rows["log"] == path.name], "match")
    assert len(df) == n


@pytest.mark.parametrize("version", VERSIONS)
def test_whole_folder_with_renamed_logs(version, tmp_path):
    """Folder scans recognise logs by content: renamed logs are read, other JSON files are not."""
    folder = tmp_path / "logs"
    shutil.copytree(FIXTURES / version, folder)
    (folder / "notes.json").write_text(json.dumps({"results": 1}))
    (folder / "logs.json").write_text("{}")  # Inspect's listing file
    everything = quiet_read(FIXTURES / version, scorer="match", errors="keep")
    assert set(everything["task"]) == {"arith", "interrupted", "killed", "retried", "tolerant"}
    next(folder.glob("*tolerant*.eval")).rename(folder / "baseline.eval")
    (folder / "sub").mkdir()
    next(folder.glob("*killed*.eval")).rename(folder / "sub" / "run3.zip.eval")
    renamed = quiet_read(folder, scorer="match", errors="keep")
    pd.testing.assert_frame_equal(renamed, everything)
    # a .json log under any name
    json_dir = tmp_path / "json"
    json_dir.mkdir()
    shutil.copy(next((FIXTURES / "v0.3.285-json").glob("*.json")), json_dir / "alpha-run.json")
    (json_dir / "config.json").write_text(json.dumps({"version": 2, "model": "x"}))
    direct = quiet_read(json_dir / "alpha-run.json", scorer="match")
    pd.testing.assert_frame_equal(quiet_read(json_dir, scorer="match"), direct)
    assert len(direct) == 12


@pytest.mark.parametrize("version", VERSIONS)
def test_samples_df_frames(version):
    """inspect_ai.analysis.samples_df frames: C/I letters, empty error cells, no model column."""
    folder = FIXTURES / version
    from_logs = quiet_read(sorted(folder.glob("*arith*.eval")), scorer="match")
    with_model = pd.read_csv(folder / "samples_df_model.csv")
    arith = with_model[with_model["task_name"] == "arith"]
    from_frame = quiet_read(arith, scorer="match")
    pd.testing.assert_frame_equal(from_frame, from_logs)
    # the default frame has no model column: the model comes from the header of each row's log
    plain = pd.read_csv(folder / "samples_df.csv")
    plain["log"] = [str(folder / name) for name in plain["log"]]
    whole = quiet_read(plain, scorer="match", errors="keep")
    assert set(whole["model"]) == {"mockllm/alpha", "mockllm/beta"}
    from_plain = quiet_read(plain[plain["log"].str.contains("arith")], scorer="match")
    pd.testing.assert_frame_equal(from_plain, from_logs)
    # the retry and its original in one frame are merged there too
    retried = plain[plain["log"].str.contains("retried")]
    assert len(quiet_read(retried)) == 8
    plain["log"] = "elsewhere/" + plain["log"].str.rsplit("/", n=1).str[-1]
    with pytest.raises(DataError, match=r"no 'model' column.*columns=SampleSummary \+ EvalModel"):
        read_inspect(plain, scorer="match")


def test_unreadable_files_name_the_file(tmp_path):
    src = next((FIXTURES / "v0.3.285").glob("*arith*.eval"))
    data = bytearray(src.read_bytes())
    with zipfile.ZipFile(src) as zf:
        info = zf.getinfo("header.json")
    # flip bytes inside the compressed header: a damaged member
    start = info.header_offset + 30 + len(info.filename) + 20
    data[start:start + 8] = b"\x00" * 8
    bad = tmp_path / "damaged.eval"
    bad.write_bytes(bytes(data))
    with pytest.raises(DataError, match=r"damaged\.eval"):
        read_inspect(bad, scorer="match")
    truncated = tmp_path / "cut.eval"
    truncated.write_bytes(src.read_bytes()[:2000])
    with pytest.raises(DataError, match=r"cut\.eval"):
        read_inspect(truncated)


def test_log_without_scores_says_so(tmp_path):
    rows = reader("v0.3.285")
    original, _ = log_path("v0.3.285", "retried")
    # keep only the unscored samples of the errored log
    out = tmp_path / "unscored.eval"
    with zipfile.ZipFile(original) as src, zipfile.ZipFile(out, "w") as dst:
        unscored = rows[(rows["log"] == original.name) & rows["scorer"].isna()]
        keep = {f"samples/{i}_epoch_{e}.json" for i, e in zip(unscored["id"], unscored["epoch"])}
        for info in src.infolist():
            if not info.filename.startswith("samples/") or info.filename in keep:
                dst.writestr(info.filename, evalmix.io._common.read_zip_member(src, info, original))
    with pytest.raises(DataError, match=r"none of the 2 sample\(s\) in .*unscored\.eval has a score"):
        quiet_read(out)
    kept = quiet_read(out, errors="keep")
    assert sorted(kept["status"]) == ["cancelled", "error"] or sorted(kept["status"]) == ["error", "error"]
    assert np.isnan(kept["correct"]).all()


def test_cli_reads_log_folders(capsys):
    from evalmix.cli import main

    folder = FIXTURES / "v0.3.285"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        assert main(["describe", str(folder), "--score", "match", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    want = quiet_read(folder, scorer="match").groupby(["model", "task"], observed=True)["correct"].agg(
        ["size", "sum"])
    assert [(r["model"], r["task"], r["n"], r["k"]) for r in doc["table"]] == [
        (m, t, int(n), int(k)) for (m, t), (n, k) in want.iterrows()]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        assert main(["describe", str(folder)]) == 2
    err = capsys.readouterr().err
    assert "several scores" in err and "--score NAME" in err and "Traceback" not in err
    # one log file works as DATA too
    (log,) = log_path("v0.3.285", "arith", "mockllm/beta")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        assert main(["describe", str(log), "--score", "includes", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["table"]
    assert row["n"] == 12 and row["k"] == sum(expected(reader("v0.3.285").query(f"log == '{log.name}'"),
                                                         "includes").values())
