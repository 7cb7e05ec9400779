"""read_mteb and read_logs on results folders written by MTEB itself (mteb.evaluate on its mock tasks).

tests/fixtures/mteb/run1 and run2 hold two runs (seeds) of two encoders on mock tasks of four types,
some multilingual: MTEB's random-encoder baseline (deterministic: its runs agree) and the same
encoder with seeded noise on its embeddings (its runs differ); expected.csv holds every main score as MTEB's own
``ResultCache.load_results`` reads it.  tests/fixtures/gen_mteb.py (run by make_fixtures.sh)
regenerates them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

import evalmix
from evalmix import DataError, read_logs, read_mteb
from evalmix.cli import main

FIXTURES = Path(__file__).parents[1] / "fixtures" / "mteb"
EXPECTED = pd.read_csv(FIXTURES / "expected.csv", keep_default_na=False)
RUNS = [FIXTURES / "run1", FIXTURES / "run2"]


def test_every_score_matches_mtebs_reader():
    df = read_mteb(RUNS, runs=["run1", "run2"])
    assert len(df) == len(EXPECTED) > 8
    got = {(str(r.run), str(r.model), str(r.task), str(r.split), str(r.subset)): r.score for r in df.itertuples()}
    for w in EXPECTED.itertuples():
        assert got[(w.run, w.model, w.task, w.split, w.subset)] == pytest.approx(float(w.main_score), abs=1e-15)
    assert df.attrs["evalmix_source"] == {"format": "mteb", "metric": "main_score", "outcome_kind": "continuous"}
    assert df.attrs["evalmix"]["outcome"] == "score"
    # items are nested in their task: one per task, split and language subset
    assert df["item"].nunique() == EXPECTED[["task", "split", "subset"]].drop_duplicates().shape[0]


def test_scores_are_passed_through_not_thresholded():
    df = read_mteb(RUNS[0])
    assert not df["score"].isin([0, 1]).all()
    assert df["score"].dtype == float
    assert set(df["run"]) == {1}


def test_other_metric_and_missing_metric(tmp_path):
    task_file = next(RUNS[0].rglob("*.json"))
    while task_file.name == "model_meta.json":
        task_file = next(p for p in RUNS[0].rglob("*.json") if p.name != "model_meta.json")
    data = json.loads(task_file.read_text())
    split, entries = next(iter(data["scores"].items()))
    other = next(k for k, v in entries[0].items() if isinstance(v, float) and k != "main_score")
    df = read_mteb(task_file, metric=other)
    assert df["score"].iloc[0] == pytest.approx(entries[0][other])
    with pytest.raises(DataError, match=rf"{task_file.name}: scores\.{split}\[0\]\.no_such_metric is missing "
                                        r"\(numeric fields there: .*main_score"):
        read_mteb(task_file, metric="no_such_metric")


def test_read_logs_and_the_cli(capsys):
    df = read_logs(RUNS[0])
    assert df.attrs["evalmix_source"]["format"] == "mteb"
    # continuous scores are not read as 0/1 outcomes by the commands: one line, no interval
    # (describe gives their means: tests/stats/test_trust_scores.py)
    for command in (["fit", "--formula", "score ~ 1 + (1|item)"],):
        assert main([command[0], str(RUNS[0]), *command[1:], "--score", "main_score"]) == 2
        err = capsys.readouterr().err
        assert "mteb scores (main_score) are continuous" in err and "evalmix.lmer" in err
        assert len(err.strip().splitlines()) == 1


def test_two_revisions_of_one_model_are_named(tmp_path):
    for run in RUNS:
        for p in run.rglob("*.json"):
            dest = tmp_path / run.name / p.relative_to(run)
            dest.parent.mkdir(parents=True, exist_ok=True)
            dest.write_bytes(p.read_bytes())
    with pytest.raises(DataError, match=r"is read twice, from: .*run1.*run2.*label them with runs="):
        read_mteb(tmp_path)
    df = read_mteb([tmp_path / "run1", tmp_path / "run2"], runs=[1, 2])
    assert sorted(df["run"].unique()) == [1, 2]
    fit = evalmix.lmer("score ~ 1 + (1|item)", df)
    assert fit is not None


@pytest.mark.parametrize(("edit", "message"), [
    (lambda d: d.update(scores=[]), r"scores is an array \(\[\]\), expected an object"),
    (lambda d: d.pop("task_name"), r"task_name is missing"),
    (lambda d: next(iter(d["scores"].values()))[0].update(main_score="0.5"),
     r"scores\.\w+\[0\]\.main_score is a string \('0\.5'\), expected a number"),
    (lambda d: next(iter(d["scores"].values()))[0].update(main_score=float("nan")),
     r"scores\.\w+\[0\]\.main_score is nan, not a finite score"),
    (lambda d: d.update(scores={}), r"scores holds no scores"),
])
def test_damaged_task_results_name_file_and_field(tmp_path, edit, message):
    src = next(p for p in RUNS[0].rglob("*.json") if p.name != "model_meta.json")
    data = json.loads(src.read_text())
    edit(data)
    path = tmp_path / src.name
    path.write_text(json.dumps(data))
    with pytest.raises(DataError, match=message) as info:
        read_mteb(path)
    assert str(path) in str(info.value)


def test_runs_of_a_stochastic_encoder_differ_and_lmer_reads_their_variance():
    """The noisy encoder's two runs differ (the baseline's, deterministic, do not): the run-to-run
    variance lmer estimates is the balanced one-way ANOVA's (REML's closed form when positive)."""
    df = read_mteb(RUNS, runs=["run1", "run2"])
    wide = {m: sub.pivot_table(index="item", columns="run", values="score", observed=True)
            for m, sub in df.groupby("model", observed=True)}
    base, noisy = wide["mteb/baseline-random-encoder"], wide["evalmix/noisy-random-encoder"]
    assert (base["run1"] == base["run2"]).all()
    differ = EXPECTED[EXPECTED["model"] == "evalmix/noisy-random-encoder"].pivot_table(
        index=["task", "split", "subset"], columns="run", values="main_score")
    n_differ = int((differ["run1"] != differ["run2"]).sum())
    assert int((noisy["run1"] != noisy["run2"]).sum()) == n_differ >= 5
    fit = evalmix.lmer("score ~ 1 + (1|item)", df[df["model"] == "evalmix/noisy-random-encoder"])
    n_items, k = noisy.shape
    means = noisy.mean(axis=1)
    msw = float(((noisy.sub(means, axis=0)) ** 2).to_numpy().sum() / (n_items * (k - 1)))
    msb = float(k * ((means - means.mean()) ** 2).sum() / (n_items - 1))
    assert msb > msw > 0
    vc = fit.varcorr.set_index("group")["variance"]
    assert vc["Residual"] == pytest.approx(msw, rel=1e-6)
    assert vc["item"] == pytest.approx((msb - msw) / k, rel=1e-6)
