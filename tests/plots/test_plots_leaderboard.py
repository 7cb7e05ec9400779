"""The leaderboard figure builds (Agg backend) and shows what the result says."""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import evalmix  # noqa: E402
from evalmix.core.errors import DataError  # noqa: E402
from evalmix.studies.leaderboard import rank_sets, rank_sets_normal  # noqa: E402
from evalmix.plots.leaderboard import leaderboard_plot  # noqa: E402


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_hand_example_figure():
    rs = rank_sets_normal([0.80, 0.78, 0.75, 0.70], se=[0.01] * 4, labels=list("ABCD"))
    fig = leaderboard_plot(rs)
    left, right = fig.axes[:2]
    assert [t.get_text() for t in left.get_yticklabels()] == list("ABCD")
    # thick bars: the simultaneous rank sets [1, 2], [1, 3], [2, 3], [4, 4] (+-0.35)
    bars = right.collections[0].get_segments()
    spans = [(round(s[0][0] + 0.35), round(s[1][0] - 0.35)) for s in bars]
    assert spans == [(1, 2), (1, 3), (2, 3), (4, 4)]
    letters = [t.get_text() for t in right.texts]
    assert letters == ["a", "ab", "b", "c"]
    # dots at the estimates
    xs = left.lines[0].get_xdata()
    assert np.allclose(xs, [0.80, 0.78, 0.75, 0.70])


def test_sliced_result_needs_where():
    df = evalmix.simulate.glmm_runs(3, 30, 2, slices={"language": ["EN", "ES"]}, rng=1)
    rs = rank_sets(df, "language", n_boot=100, rng=1)
    with pytest.raises(DataError, match="where="):
        leaderboard_plot(rs)
    fig = leaderboard_plot(rs, where={"language": "ES"})
    assert "language=ES" in fig._suptitle.get_text()
    with pytest.raises(DataError, match="no leaderboard"):
        leaderboard_plot(rs, where={"language": "FR"})
