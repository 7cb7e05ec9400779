"""glmm_runs draws from the stated model: design, reproducibility and recovered parameters."""

from __future__ import annotations

import copy
import io
import json
import pickle

import numpy as np
import pandas as pd
import pytest

from evalmix import read_runs
from evalmix.simulate import glmm_runs


def test_design_and_reproducibility():
    a = glmm_runs(4, 30, 3, slices={"language": ["EN", "ES"], "prompt": ["COT", "ZS"]}, rng=7)
    b = glmm_runs(4, 30, 3, slices={"language": ["EN", "ES"], "prompt": ["COT", "ZS"]}, rng=7)
    pd.testing.assert_frame_equal(a, b)
    assert len(a) == 4 * 30 * 3 * 2 * 2
    assert list(a.columns) == ["model", "item", "run", "language", "prompt", "correct"]
    runs = read_runs(a)  # a valid, balanced runs table: no warning, no error
    assert len(runs) == len(a)
    assert not a.equals(glmm_runs(4, 30, 3, slices={"language": ["EN", "ES"], "prompt": ["COT", "ZS"]}, rng=8))


def test_marginal_accuracy_matches_truth():
    # With sd_item = sd_item_run = 0 the rows are independent Bernoulli(logit^-1(effect)).
    df = glmm_runs(2, 4000, 2, model_effects=[-1.0, 0.5], sd_item=0.0, sd_item_run=0.0, rng=3)
    acc = df.groupby("model")["correct"].mean()
    expected = 1 / (1 + np.exp(-np.array([-1.0, 0.5])))
    np.testing.assert_allclose(acc.to_numpy(), expected, atol=4 * np.sqrt(0.25 / 8000))


def test_random_effects_have_the_stated_spread():
    df = glmm_runs(2, 3000, 4, sd_item=1.2, sd_item_run=0.4, rng=11)
    truth = df.attrs["truth"]
    items = np.array(list(truth["item_effects"].values()))
    item_runs = np.array(list(truth["item_run_effects"].values()))
    assert items.std() == pytest.approx(1.2, rel=0.05)
    assert item_runs.std() == pytest.approx(0.4, rel=0.05)
    assert truth["formula"] == "correct ~ model + (1 | item) + (1 | item:run)"


def test_slice_effects_and_slope():
    df = glmm_runs(1, 6000, 1, slices={"language": {"EN": 0.0, "ES": 1.0}}, model_effects=[0.0],
                   sd_item=0.0, sd_item_run=0.0, sd_slope=0.0, rng=5)
    acc = df.groupby("language", observed=True)["correct"].mean()
    assert acc["ES"] == pytest.approx(1 / (1 + np.exp(-1.0)), abs=0.03)
    assert acc["EN"] == pytest.approx(0.5, abs=0.03)
    sl = glmm_runs(2, 50, 2, slices={"language": ["EN", "ES"]}, sd_slope=0.8, rng=1).attrs["truth"]["slope"]
    assert sl["factor"] == "language" and sl["reference"] == "EN" and len(sl["effects"]) == 50


def test_truth_is_read_only_and_shared_by_copies():
    # pandas deep-copies attrs on every operation: the large maps are immutable and shared
    df = glmm_runs(2, 30, 3, slices={"language": ["EN", "ES"]}, sd_slope=0.5, rng=2)
    truth = df.attrs["truth"]
    maps = [truth["item_effects"], truth["item_run_effects"], truth["slope"]["effects"]]
    assert [len(m) for m in maps] == [30, 90, 30]
    sub = df[df["model"] == df["model"].iloc[0]][["item", "correct"]]
    for name in ("item_effects", "item_run_effects"):
        assert sub.attrs["truth"][name] is truth[name]
    for m in maps:
        assert copy.deepcopy(m) is m and copy.copy(m) is m
        with pytest.raises(TypeError, match="read-only"):
            m["x"] = 1.0
        for change in (lambda m: m.update(x=1.0), lambda m: m.pop("x", None), lambda m: m.clear(),
                       lambda m: m.setdefault("x", 1.0), lambda m: m.popitem()):
            with pytest.raises(TypeError, match="read-only"):
                change(m)
        again = pickle.loads(pickle.dumps(m))
        assert again == m and type(again) is type(m)
    # the values are what the rows were drawn with, as plain numbers, and json writes them
    assert all(isinstance(v, float) for v in truth["item_run_effects"].values())
    assert json.loads(json.dumps(truth))["item_effects"] == dict(truth["item_effects"])
    buf = io.BytesIO()
    df.to_parquet(buf)
    back = pd.read_parquet(io.BytesIO(buf.getvalue())).attrs["truth"]
    assert back["item_run_effects"] == dict(truth["item_run_effects"])
    mutable = dict(truth["item_effects"])
    mutable["x"] = 1.0
    assert len(mutable) == 31 and len(truth["item_effects"]) == 30


@pytest.mark.parametrize("kwargs, msg", [
    ({"n_models": 0}, "n_models"), ({"sd_item": -1}, "sd_item"),
    ({"model_effects": [0.0]}, "model_effects has 1"),
    ({"slices": {"language": ["EN"]}}, "at least two levels"),
])
def test_bad_arguments(kwargs, msg):
    args = {"n_models": 2, "n_items": 5, "n_runs": 2} | kwargs
    with pytest.raises(ValueError, match=msg):
        glmm_runs(**args)


def test_bundled_example_is_reproducible():
    from pathlib import Path
    import importlib.util

    root = Path(__file__).resolve().parents[2]
    spec = importlib.util.spec_from_file_location("make_example", root / "data" / "make_example.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    bundled = pd.read_csv(root / "data" / "example_runs.csv")
    made = mod.make()
    pd.testing.assert_frame_equal(bundled, made.astype({"correct": "int64"}), check_dtype=False)
