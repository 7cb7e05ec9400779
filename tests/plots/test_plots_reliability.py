"""The reliability figures build (Agg backend) and show what they should."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import evalmix  # noqa: E402
from evalmix.plots.reliability import flip_rate_bars, icc_dots, rank_bump, se_curves  # noqa: E402
from evalmix.studies.ranking import rank_instability  # noqa: E402
from evalmix.studies.reliability import flip_rate, icc  # noqa: E402
from evalmix.studies.repetitions import se_vs_runs  # noqa: E402


@pytest.fixture(scope="module")
def sim():
    return evalmix.simulate.glmm_runs(4, 40, 3, slices={"language": ["EN", "ES"], "prompt": ["ZS", "COT"]},
                                      rng=3)


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_flip_rate_bars(sim):
    fig = flip_rate_bars(flip_rate(sim, ["model", "language", "prompt"]))
    axes = [a for a in fig.axes if a.get_visible()]
    assert len(axes) == 2  # one panel per prompt
    heights = sorted(p.get_width() for p in axes[0].patches)  # horizontal bars: the length
    assert len(heights) == 8  # 4 models x 2 languages
    assert 0 <= heights[0] <= heights[-1] <= 1


def test_icc_dots(sim):
    res = icc(sim, ["model", "language", "prompt"], bands=(0.6, 0.75, 0.9))
    fig = icc_dots(res)
    ax = fig.axes[0]
    assert len(ax.get_yticklabels()) == 16
    xs = np.concatenate([c.get_offsets()[:, 0] for c in ax.collections if hasattr(c, "get_offsets")
                         and len(c.get_offsets()) and c.get_offsets().shape[1] == 2
                         and type(c).__name__ == "PathCollection"])
    np.testing.assert_allclose(np.sort(xs), np.sort(res.table["icc"].to_numpy()))
    assert sorted(line.get_xdata()[0] for line in ax.lines) == [0.6, 0.75, 0.9]


def test_rank_bump(sim):
    res = rank_instability(sim, ["language", "prompt"])
    fig = rank_bump(res)
    axes = [a for a in fig.axes if a.get_visible()]
    assert len(axes) == 4
    assert len(axes[0].lines) == 4  # one line per model
    assert axes[0].yaxis_inverted()


def test_se_curves(sim):
    res = se_vs_runs(sim, ["model", "language", "prompt"], max_runs=6)
    fig = se_curves(res, show_projection=True)
    ax = fig.axes[0]
    labels = [line.get_label() for line in ax.lines]
    assert "average (predicted)" in labels and "items random (projection)" in labels
    # 4 models x 2 kinds + 2 averages + 2 projections
    assert len(ax.lines) == 12


def test_ai4math_figures(ai4math_raw):
    cols = dict(item="problem_id")
    slices = ["model", "language", "prompt"]
    figs = [flip_rate_bars(flip_rate(ai4math_raw, slices, **cols)),
            icc_dots(icc(ai4math_raw, slices, bands=(0.6, 0.75, 0.9), **cols)),
            rank_bump(rank_instability(ai4math_raw, ["language", "prompt"], **cols)),
            se_curves(se_vs_runs(ai4math_raw, slices, max_runs=3, **cols))]
    assert all(f.axes for f in figs)
