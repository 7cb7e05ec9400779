"""The paper's figures (evalmix.plots): each returns a Figure in the shared style, draws the numbers
it is given, and keeps legends off the data."""

from __future__ import annotations

import warnings

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402

import evalmix  # noqa: E402
from evalmix import plots  # noqa: E402
from evalmix.plots.style import COLUMN_WIDTH, OKABE_ITO, PAGE_WIDTH  # noqa: E402


@pytest.fixture(scope="module")
def sim():
    return evalmix.simulate.glmm_runs(4, 40, 3, slices={"language": ["EN", "ES"], "prompt": ["ZS", "COT"]},
                                      rng=3)


@pytest.fixture(scope="module")
def fits(sim):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {f: evalmix.glmer(f"correct ~ {f} + (1|item) + (1|item:run)", sim)
                for f in ("model + language", "model * language * prompt")}


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _renderer(fig):
    fig.canvas.draw()
    return fig.canvas.get_renderer()


def _legend_off_data(fig) -> None:
    """No legend box overlaps the data area of any visible axes."""
    r = _renderer(fig)
    legends = list(fig.legends) + [a.get_legend() for a in fig.axes if a.get_legend()]
    for leg in legends:
        lb = leg.get_window_extent(r)
        for ax in fig.axes:
            if ax.get_visible() and ax.get_navigate():
                ab = ax.get_window_extent(r)
                assert not lb.overlaps(ab), "legend covers an axes"


def _title(ax) -> str:
    return ax.get_title(loc="left") or ax.get_title()


def _colours(ax) -> set[str]:
    out = set()
    for line in ax.lines:
        out.add(to_hex(line.get_color()))
    return out


def test_accuracy_intervals(sim):
    tab = evalmix.accuracy(sim, ["model", "language", "prompt"]).table
    fig = plots.accuracy_intervals(tab, hue="language", col="prompt")
    assert isinstance(fig, Figure)
    assert fig.get_figwidth() == PAGE_WIDTH
    axes = [a for a in fig.axes if a.get_visible()]
    assert [_title(a) for a in axes] == ["prompt = COT", "prompt = ZS"]
    # the points are the accuracies, in percent
    pts = np.sort(np.concatenate([ln.get_xdata() for a in axes for ln in a.lines]))
    np.testing.assert_allclose(pts, np.sort(tab["estimate"].to_numpy() * 100))
    assert _colours(axes[0]) == {OKABE_ITO[0].lower(), OKABE_ITO[1].lower()}
    assert "%" in axes[0].get_xlabel()
    _legend_off_data(fig)


def test_delta_bic_bars(fits):
    comp = evalmix.compare_models(fits)
    fig = plots.delta_bic_bars(comp)
    ax = fig.axes[0]
    widths = sorted(p.get_width() for p in ax.patches)
    np.testing.assert_allclose(widths, np.sort(comp.to_frame()["delta_bic"]))
    assert "ΔBIC" in ax.get_xlabel()
    assert fig.get_figwidth() <= PAGE_WIDTH


def test_odds_ratio_forest_single_and_by(fits):
    fit = fits["model * language * prompt"]
    ctr = evalmix.contrast(evalmix.emmeans(fit, "model"), "trt.vs.ctrl", ref="M1", adjust="dunnettx")
    fig = plots.odds_ratio_forest(ctr)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    xs = np.sort(np.concatenate([ln.get_xdata() for ln in ax.lines if len(ln.get_xdata()) != 2
                                 or ln.get_linestyle() != "--"]))
    np.testing.assert_allclose(xs, np.sort(ctr.to_frame()["odds_ratio"]))
    assert any(ln.get_linestyle() == "--" and list(ln.get_xdata()) == [1, 1] for ln in ax.lines)
    _legend_off_data(fig)
    by = evalmix.contrast(evalmix.emmeans(fit, "model", by="language"), "trt.vs.ctrl", ref="M1",
                          adjust="holm")
    fig = plots.odds_ratio_forest(by, by="language")
    assert [_title(a) for a in fig.axes if a.get_visible()] == ["EN", "ES"]
    _legend_off_data(fig)


def test_marginal_means_and_heatmap(sim, fits):
    emm = evalmix.emmeans(fits["model + language"], "language", type="response")
    fig = plots.marginal_means(emm)
    ax = fig.axes[0]
    np.testing.assert_allclose(sorted(p.get_width() for p in ax.patches),
                               np.sort(emm.to_frame()["estimate"]) * 100)
    assert ax.get_ylabel() == "language"
    acc = evalmix.accuracy(sim, ["model", "language"]).table
    fig = plots.accuracy_heatmap(acc, col="language")
    img = fig.axes[0].images[0].get_array()
    assert img.shape == (4, 2)
    assert np.nanmax(img) == pytest.approx(acc["estimate"].max() * 100)
    assert fig.axes[1].get_ylabel() == "accuracy (%)"  # the colour bar


def test_every_figure_fits_a_page(sim):
    figs = [plots.flip_rate_bars(evalmix.flip_rate(sim, ["model", "language", "prompt"])),
            plots.icc_dots(evalmix.icc(sim, ["model", "language", "prompt"])),
            plots.rank_bump(evalmix.rank_instability(sim, ["language", "prompt"])),
            plots.rank_intervals(evalmix.rank_uncertainty(sim, "language", n_boot=100, rng=1)),
            plots.se_curves(evalmix.repetitions.se_vs_runs(sim, ["model", "language", "prompt"]),
                            show_projection=True)]
    for fig in figs:
        assert isinstance(fig, Figure)
        assert COLUMN_WIDTH <= fig.get_figwidth() <= PAGE_WIDTH
        assert all(a.get_xlabel() or a.get_ylabel() or not a.get_visible() or _title(a)
                   for a in fig.axes)
        _legend_off_data(fig)


def test_se_curves_legend_and_projection_colour(sim):
    res = evalmix.repetitions.se_vs_runs(sim, ["model", "language", "prompt"], max_runs=6)
    fig = plots.se_curves(res, show_projection=True)
    ax = fig.axes[0]
    r = _renderer(fig)
    # the legends sit above and below the axes and leave it most of the width
    assert ax.get_window_extent(r).width > 0.7 * fig.bbox.width
    model_colours = {to_hex(ln.get_color()) for ln in ax.lines if ln.get_label() in {"M1", "M2", "M3", "M4"}}
    proj = [ln for ln in ax.lines if ln.get_label() == "items random (projection)"][0]
    assert to_hex(proj.get_color()) not in model_colours
    assert to_hex(proj.get_color()) == "#000000"


def test_rank_bump_shows_tied_markers():
    # two models with identical accuracy in every run: both markers must be visible
    rows = []
    for run in (1, 2):
        for item in range(10):
            for m, p in (("a", 0.8), ("b", 0.8), ("c", 0.3)):
                rows.append({"model": m, "item": item, "run": run, "correct": int(item < p * 10)})
    res = evalmix.rank_instability(pd.DataFrame(rows))
    fig = plots.rank_bump(res)
    ax = fig.axes[0]
    lines = {ln.get_label(): ln for ln in ax.lines}
    ya, yb = lines["a"].get_ydata(), lines["b"].get_ydata()
    np.testing.assert_array_equal(ya, yb)  # tied: the same rank
    assert (np.abs(lines["a"].get_xdata() - lines["b"].get_xdata()) > 0.1).all()  # side by side
    assert np.allclose(lines["c"].get_xdata(), np.round(lines["c"].get_xdata()))  # untied: centred


def test_critical_difference_plot_returns_a_cropped_figure():
    from evalmix import friedman

    rng = np.random.default_rng(0)
    wide = pd.DataFrame(rng.random((40, 6)) + np.linspace(0, 0.6, 6),
                        columns=[f"model-{c}" for c in "abcdef"])
    fig = plots.critical_difference_plot(friedman(wide))
    assert isinstance(fig, Figure)
    r = _renderer(fig)
    # the drawing (texts, lines) spans most of the canvas in both directions
    boxes = [t.get_window_extent(r) for t in fig.axes[0].texts]
    x0, x1 = min(b.x0 for b in boxes), max(b.x1 for b in boxes)
    assert (x1 - x0) > 0.8 * fig.bbox.width
    ys = [b.y0 for b in boxes] + [b.y1 for b in boxes]
    assert (max(ys) - min(ys)) > 0.6 * fig.bbox.height
