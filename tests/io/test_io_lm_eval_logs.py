"""read_lm_eval and read_logs on an output folder written by lm-evaluation-harness itself.

tests/fixtures/lm_eval/out/ holds six runs of ``lm_eval --log_samples`` (0.4.13; two models x
seeds 1, 2, 3) on three local tasks: mc_local (multiple choice: acc, acc_norm), gen_local
(generation scored under two filters, strict-match and flexible-extract) and rep_local (three
sampled repeats reduced by a majority vote, filter maj@3).  tests/fixtures/lm_eval/unnamed/ holds
two runs whose model_args name no model, so the harness invented a name for each.
tests/fixtures/make_fixtures.sh regenerates them.  The harness's own aggregates
(results_<stamp>.json) and its per-document lines are the references.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import evalmix
from evalmix import DataError, DataWarning, read_lm_eval, read_logs
from evalmix.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "lm_eval"
OUT = FIXTURES / "out"
TASKS = ["gen_local", "mc_local", "rep_local"]
DEFAULT = {"gen_local": "exact_match,strict-match", "mc_local": "acc,none", "rep_local": "exact_match,maj@3"}


def results_files(folder: Path = OUT) -> list[Path]:
    return sorted(folder.glob("*/results_*.json"))


def harness_lines(model_folder: Path, task: str, key: str) -> dict[tuple[int, str], float]:
    """(doc_id, stamp) -> metric value, straight from the harness's samples files."""
    metric, filt = key.split(",")
    out = {}
    for path in model_folder.glob(f"samples_{task}_*.jsonl"):
        stamp = path.name.rsplit("_", 1)[1].removesuffix(".jsonl")
        for line in path.read_text().splitlines():
            doc = json.loads(line)
            if doc["filter"] == filt:
                out[doc["doc_id"], stamp] = float(doc[metric])
    return out


def test_whole_folder_in_one_call():
    df = read_lm_eval(OUT)
    assert df.attrs["evalmix_source"]["metrics"] == DEFAULT
    assert df.attrs["evalmix"]["slices"] == ["task"]
    assert df["model"].cat.categories.tolist() == ["org/tiny-a", "org/tiny-b"]
    assert df["task"].cat.categories.tolist() == TASKS
    sizes = {"gen_local": 5, "mc_local": 6, "rep_local": 5}
    assert len(df) == 2 * 3 * sum(sizes.values())
    for (model, task), part in df.groupby(["model", "task"], observed=True):
        assert sorted(set(part["run"])) == [1, 2, 3]
        assert part["item"].astype(str).str.startswith(f"{task}:").all()  # items nested in tasks
        assert len(part) == 3 * sizes[task]


@pytest.mark.parametrize("override", [{}, {"gen_local": "exact_match,flexible-extract"},
                                      {"mc_local": "acc_norm"}])
def test_every_run_matches_the_harness(override):
    df = read_lm_eval(OUT, metric=override or None)
    used = {**DEFAULT, **{t: m if "," in m else f"{m},none" for t, m in override.items()}}
    assert df.attrs["evalmix_source"]["metrics"] == used
    for results_path in results_files():
        results = json.loads(results_path.read_text())
        stamp = results_path.stem.removeprefix("results_")
        model = results["model_name"]
        # runs are numbered in the order the harness wrote them
        stamps = sorted(p.stem.removeprefix("results_") for p in results_path.parent.glob("results_*.json"))
        run = stamps.index(stamp) + 1
        for task in TASKS:
            part = df[(df["model"] == model) & (df["task"] == task) & (df["run"] == run)]
            # the harness's own aggregate of the same metric and filter
            assert part["correct"].mean() == pytest.approx(results["results"][task][used[task]], abs=1e-12)
            # and line by line
            lines = harness_lines(results_path.parent, task, used[task])
            got = {(int(str(i).split(":")[1]), stamp): float(c) for i, c in zip(part["item"], part["correct"])}
            assert got == {k: v for k, v in lines.items() if k[1] == stamp}


def test_seeds_are_runs_of_one_model():
    for path in results_files():
        results = json.loads(path.read_text())
        assert results["config"]["random_seed"] in (1, 2, 3)
    df = read_logs(OUT)
    assert df.attrs["evalmix_source"]["format"] == "lm-eval"
    table = evalmix.accuracy(df, by=["model", "task"]).table
    assert table["n"].tolist() == [15, 18, 15, 15, 18, 15]


def test_invented_model_names_warn_with_the_fix():
    names = sorted(json.loads(p.read_text())["model_name"] for p in results_files(FIXTURES / "unnamed"))
    assert len(names) == 2
    with pytest.warns(DataWarning, match=r"the harness invented the model name\(s\) \[.*\].*model_args "
                                         r"have no pretrained=/model= key.*model='<name>'.*pretrained=<name>"):
        df = read_lm_eval(FIXTURES / "unnamed")
    assert sorted(df["model"].cat.categories) == names  # two seeds look like two models
    labelled = read_lm_eval(FIXTURES / "unnamed", model="tiny")
    assert labelled["model"].cat.categories.tolist() == ["tiny"]
    assert sorted(set(labelled["run"])) == [1, 2]
    renamed = read_lm_eval(FIXTURES / "unnamed", model={names[0]: "tiny", names[1]: "tiny"})
    assert renamed["model"].cat.categories.tolist() == ["tiny"]


def test_samples_without_results_keep_the_real_name(tmp_path):
    # the folder alone: org__tiny-a is read back as org/tiny-a, the name in the results files
    folder = tmp_path / "org__tiny-a"
    folder.mkdir()
    for path in (OUT / "org__tiny-a").glob("samples_mc_local_*.jsonl"):
        shutil.copy(path, folder)
    df = read_lm_eval(tmp_path, metric="acc")
    assert df["model"].cat.categories.tolist() == ["org/tiny-a"]
    with pytest.raises(DataError, match=r"logs the metrics \['acc', 'acc_norm'\] and no results file"):
        read_lm_eval(tmp_path)
    # one results file of another run in the folder names the model too
    shutil.copy(results_files()[0], folder / "results_2020-01-01T00-00-00.000000.json")
    assert read_lm_eval(tmp_path, metric="acc")["model"].cat.categories.tolist() == ["org/tiny-a"]


def test_filter_choice_and_errors():
    with pytest.raises(DataError, match=r"metric names filter 'flexible-extract' but filter_name='strict-match'"):
        read_lm_eval(OUT, metric={"gen_local": "exact_match,flexible-extract"},
                     filter_name={"gen_local": "strict-match"})
    with pytest.raises(DataError, match=r"has no samples for filter 'nope'; its filters: "
                                        r"\['flexible-extract', 'strict-match'\]"):
        read_lm_eval(OUT, filter_name={"gen_local": "nope"})
    with pytest.raises(DataError, match=r"samples_mc_local.*doc_id 0 has no metric 'exact_match'; "
                                        r"metrics logged: \['acc', 'acc_norm'\]"):
        read_lm_eval(OUT, metric="exact_match")
    flexible = read_lm_eval(OUT, filter_name={"gen_local": "flexible-extract"})
    assert flexible.attrs["evalmix_source"]["metrics"]["gen_local"] == "exact_match,flexible-extract"


def test_cli_reads_the_folder(capsys):
    assert main(["describe", str(OUT), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [(r["model"], r["task"], r["n"]) for r in doc["table"]] == [
        ("org/tiny-a", "gen_local", 15), ("org/tiny-a", "mc_local", 18), ("org/tiny-a", "rep_local", 15),
        ("org/tiny-b", "gen_local", 15), ("org/tiny-b", "mc_local", 18), ("org/tiny-b", "rep_local", 15)]
    assert main(["describe", str(OUT), "--score", "acc_norm"]) == 2
    assert "no metric 'acc_norm'" in capsys.readouterr().err
    assert main(["describe", str(FIXTURES.parent)]) == 2
    assert "holds logs of several harnesses" in capsys.readouterr().err
