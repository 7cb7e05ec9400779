"""read_helm and read_logs on HELM output written by crfm-helm itself.

tests/fixtures/helm/ holds two run folders of HELM's bundled simple_mcqa scenario (parity of
two-digit numbers) run by helm-run with two tiny local models and three training trials, plus
helm-summarize's per-instance view (tests/fixtures/make_fixtures.sh regenerates them).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import evalmix
from evalmix import DataError, read_helm, read_logs

FIXTURES = Path(__file__).parents[1] / "fixtures" / "helm"
RUNS = sorted(p for p in FIXTURES.iterdir() if p.is_dir())


def helm_view(run: Path) -> dict[tuple[str, int], int]:
    """(instance, trial) -> 1 when HELM's mapped prediction is the reference tagged correct."""
    correct = {}
    for inst in json.loads((run / "instances.json").read_text()):
        (right,) = [r["output"]["text"] for r in inst["references"] if "correct" in r["tags"]]
        correct[inst["id"]] = right
    return {(p["instance_id"], p["train_trial_index"] + 1): int(p["mapped_output"] == correct[p["instance_id"]])
            for p in json.loads((run / "display_predictions.json").read_text())}


@pytest.mark.filterwarnings("ignore::evalmix.DataWarning")
@pytest.mark.parametrize("run", RUNS, ids=lambda p: p.name)
def test_rows_match_helm_predictions(run):
    df = read_helm(run)
    got = {(str(i), int(r)): int(c) for i, r, c in zip(df["item"], df["run"], df["correct"])}
    assert got == helm_view(run)
    assert len(got) == 30  # 10 instances x 3 training trials
    spec = json.loads((run / "run_spec.json").read_text())
    assert df["model"].astype(str).unique().tolist() == [spec["adapter_spec"]["model"]]
    # HELM's own aggregate: the mean over instances and trials
    (stat,) = [s for s in json.loads((run / "stats.json").read_text())
               if s["name"] == {"name": "exact_match", "split": "test"}]
    assert df["correct"].mean() == pytest.approx(stat["mean"], abs=1e-12)


def test_both_models_through_read_logs():
    df = read_logs(FIXTURES)
    assert df.attrs["evalmix_source"] == {"format": "helm", "metric": "exact_match", "split": "test"}
    assert df["model"].cat.categories.tolist() == ["tiny/model-a", "tiny/model-b"]
    assert sorted(set(df["run"])) == [1, 2, 3]
    assert "task" not in df.columns  # one scenario
    table = evalmix.accuracy(df, by=["model"]).table
    assert table["n"].tolist() == [30, 30]
    assert table["k"].tolist() == [sum(helm_view(r).values()) for r in RUNS]


def test_other_metrics_and_errors(tmp_path):
    df = read_helm(RUNS[0], metric="quasi_exact_match")
    assert len(df) == 30
    with pytest.raises(DataError, match=r"no per-instance statistic 'f1_score' on split 'test'; "
                                        r"logged: \[.*'exact_match'"):
        read_helm(RUNS[0], metric="f1_score")
    with pytest.raises(DataError, match="split 'valid'"):
        read_helm(RUNS[0], split="valid")
    # num_prompt_tokens is a count, not an outcome
    with pytest.raises(DataError, match=r"instance 'id\d+', trial 0, metric 'num_prompt_tokens'.*not a "
                                        r"number in \[0, 1\]"):
        read_helm(RUNS[0], metric="num_prompt_tokens")
    lonely = tmp_path / "run"
    lonely.mkdir()
    shutil.copy(RUNS[0] / "per_instance_stats.json", lonely)
    with pytest.raises(DataError, match=r"per_instance_stats\.json: no run_spec\.json beside it"):
        read_helm(lonely)
    (lonely / "run_spec.json").write_text(json.dumps({"name": "x"}))
    with pytest.raises(DataError, match="not a HELM run spec"):
        read_helm(lonely)


def test_task_names_drop_the_model_argument(tmp_path):
    for run in RUNS:
        shutil.copytree(run, tmp_path / run.name)
    spec_path = tmp_path / RUNS[1].name / "run_spec.json"
    spec = json.loads(spec_path.read_text())
    spec["name"] = "mmlu:subject=anatomy,model=tiny_model-b"
    spec_path.write_text(json.dumps(spec))
    df = read_helm(tmp_path)
    assert sorted(df["task"].cat.categories) == ["mmlu:subject=anatomy", "simple_mcqa"]
    assert df["item"].astype(str).str.startswith(("mmlu:subject=anatomy:id", "simple_mcqa:id")).all()


@pytest.mark.filterwarnings("ignore::evalmix.DataWarning")
def test_cli_fits_a_model_on_the_logs(capsys):
    from evalmix.cli import main

    assert main(["fit", str(FIXTURES), "--formula", "correct ~ model + (1|item)", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["fit"]["nobs"] == 60
    direct = evalmix.glmer("correct ~ model + (1|item)", read_helm(FIXTURES))
    assert [r["estimate"] for r in doc["fit"]["coefficients"]] == pytest.approx(
        list(direct.fixef), rel=1e-9)
