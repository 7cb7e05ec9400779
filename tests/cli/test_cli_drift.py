"""``evalmix drift`` and ``evalmix contamination``: the tables of evalmix.drift and
evalmix.contamination_test, anchors from a list or a file, the rejudged wave, strict JSON and
one-line errors."""

from __future__ import annotations

import json

import numpy as np
import pytest

import evalmix
from evalmix.cli import main


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("drift")
    before, after, rejudged = evalmix.simulate.canary_waves(2, 120, 2, change=0.0, leniency=0.15, rng=4)
    paths = {name: folder / f"{name}.csv" for name in ("before", "after", "rejudged", "cutoffs", "anchors")}
    before.to_csv(paths["before"], index=False)
    after.to_csv(paths["after"], index=False)
    rejudged.to_csv(paths["rejudged"], index=False)
    evalmix.simulate.contaminated_runs(120, 1, contamination={2: 2.0}, rng=3).to_csv(paths["cutoffs"], index=False)
    paths["anchors"].write_text("q0001\nq0002\nq0003\nq0004\n", encoding="utf-8")
    return paths, before, after, rejudged


def _json(argv, capsys):
    code = main([*argv, "--json"])
    cap = capsys.readouterr()
    assert code == 0, cap.err
    return json.loads(cap.out, parse_constant=lambda c: pytest.fail(f"non-JSON constant {c}"))


def test_drift_command_equals_the_function(files, capsys):
    paths, before, after, rejudged = files
    doc = _json(["drift", str(paths["before"]), str(paths["after"]), "--rejudged", str(paths["rejudged"]),
                 "--margin", "0.05"], capsys)
    want = evalmix.drift(before, after, margin=0.05, judge=rejudged).to_frame()
    got = doc["table"]
    assert [r["model"] for r in got] == want["model"].tolist()
    assert np.allclose([r["judge_drift"] for r in got], want["judge_drift"])
    assert np.allclose([r["p_tost"] for r in got], want["p_tost"])
    assert doc["margin"] == 0.05


def test_drift_anchors_from_a_list_or_a_file(files, capsys):
    paths, *_ = files
    common = ["drift", str(paths["before"]), str(paths["after"])]
    listed = _json([*common, "--anchors", "q0001,q0002,q0003,q0004"], capsys)
    from_file = _json([*common, "--anchors", str(paths["anchors"])], capsys)
    assert [r["n_items"] for r in listed["table"]] == [4, 4]
    assert listed["table"] == from_file["table"]


def test_drift_text_and_anytime(files, capsys):
    paths, *_ = files
    assert main(["drift", str(paths["before"]), str(paths["after"]), "--anytime"]) == 0
    out = capsys.readouterr().out
    assert "anytime-valid empirical_bernstein confidence sequence" in out
    assert "valid at every look" in out


def test_contamination_command(files, capsys):
    paths, *_ = files
    doc = _json(["contamination", str(paths["cutoffs"]), "--control", "post_cutoff"], capsys)
    flags = {r["model"]: r["contaminated"] for r in doc["table"]}
    assert flags["model-3"] and not flags["model-2"]
    assert doc["table"][0]["estimate"] is None  # the reference model, NaN in Python
    assert "model:exposed" in doc["formula"]


def test_user_errors_are_one_line(files, capsys):
    paths, *_ = files
    assert main(["contamination", str(paths["cutoffs"]), "--control", "nope"]) == 2
    err = capsys.readouterr().err
    assert "missing column(s) 'nope'" in err and "Traceback" not in err
    assert main(["contamination", str(paths["cutoffs"]), "--adjust", "tukey"]) == 2
    assert "adjust" in capsys.readouterr().err
    assert main(["drift", str(paths["before"]), str(paths["after"]), "--anchors", "zzz"]) == 2
    assert "no anchor item is in the data" in capsys.readouterr().err
