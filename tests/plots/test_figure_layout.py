"""Every figure a journal accepts: no two texts overlap, none leaves the canvas, PDFs embed TrueType.

Each public plot function of :mod:`evalmix.plots` (found by its ``Figure`` return annotation, so a new
one cannot be forgotten) is drawn with short and long labels (model names of 40 characters, slice
levels such as ``chain-of-thought-long``) for 8 and 40 models, and so is every figure of the study
report (the bundled example's report in test_reporting.py, which shares it with other tests).  The drawing records the window extent of every Text artist that is drawn (titles,
suptitles, tick labels, axis labels, legend texts, annotations); two extents may not overlap by
more than a pixel, and none may leave the canvas.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import io
import pkgutil
import warnings
from collections.abc import Callable
from typing import Any
from unittest import mock

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.figure import Figure  # noqa: E402
from matplotlib.text import Text  # noqa: E402

import evalmix  # noqa: E402
from evalmix import plots  # noqa: E402

SLACK = 1.0  # pixels two texts may share (anti-aliasing of neighbouring glyph boxes)


# ----------------------------------------------------------------------------------------------
# what was drawn


def drawn_texts(fig: Figure) -> list[tuple[Text, Any]]:
    """(Text, window extent) of every non-empty Text the canvas draws, in drawing order.

    The figure is drawn as the canvas draws it (the layout engine, ticks and texts at the figure's
    dpi) without painting pixels: the same extents as ``fig.canvas.draw()``, measured on every
    figure of this file, in about 60% of the time."""
    seen: list[tuple[Text, Any]] = []
    plain = Text.draw

    def draw(self: Text, renderer: Any) -> None:
        plain(self, renderer)
        if self.get_visible() and self.get_text().strip() and renderer is not None:
            seen.append((self, self.get_window_extent(renderer)))

    with mock.patch.object(Text, "draw", draw):
        fig.draw_without_rendering()
    return seen


def layout_problems(fig: Figure) -> list[str]:
    """Pairs of overlapping texts and texts outside the canvas, described for a failure message."""
    texts = drawn_texts(fig)
    width, height = fig.canvas.get_width_height()
    problems = []
    for t, b in texts:
        if b.x0 < -SLACK or b.y0 < -SLACK or b.x1 > width + SLACK or b.y1 > height + SLACK:
            problems.append(f"{t.get_text()!r} leaves the {width}x{height} canvas: {np.round(b.extents)}")
    for i, (t, b) in enumerate(texts):
        for u, c in texts[i + 1:]:
            dx = min(b.x1, c.x1) - max(b.x0, c.x0)
            dy = min(b.y1, c.y1) - max(b.y0, c.y0)
            if dx > SLACK and dy > SLACK:
                problems.append(f"{t.get_text()!r} overlaps {u.get_text()!r} ({dx:.0f} x {dy:.0f} px)")
    return problems


def pdf_bytes(fig: Figure) -> bytes:
    buf = io.BytesIO()
    fig.savefig(buf, format="pdf")
    return buf.getvalue()


def png_width(fig: Figure) -> int:
    """Width in pixels of the PNG ``fig.savefig`` writes (its IHDR width).  The width is the
    figure's width at the dpi the save resolves, whatever is drawn: the figure is hidden while it
    is saved, so that the 300 dpi canvas is not painted (a third of a second per figure; the same
    width and height as the painted PNG for every figure here, and the figure was drawn and saved
    as PDF already)."""
    buf = io.BytesIO()
    fig.set_visible(False)
    try:
        fig.savefig(buf, format="png")
    finally:
        fig.set_visible(True)
    return int.from_bytes(buf.getvalue()[16:20], "big")


# ----------------------------------------------------------------------------------------------
# inputs: short and long labels, 8 and 40 models

LONG_MODEL = "provider-name/model-family-70b-instruct-{:02d}"  # 42 characters
SHORT = {"language": ["EN", "ES"], "prompt": ["ZS", "COT"]}
LONG = {"language": ["EN", "ES"], "prompt": ["zero-shot-direct-answer", "chain-of-thought-long"]}


@functools.lru_cache(maxsize=None)
def runs(n_models: int, long: bool) -> pd.DataFrame:
    df = evalmix.simulate.glmm_runs(n_models, 24, 3, slices=LONG if long else SHORT,
                                    model_effects=list(np.linspace(-1.5, 1.5, n_models)), rng=7)
    df = df.copy()
    df.attrs = {}  # without the simulation's record of the truth
    if long:
        names = {m: LONG_MODEL.format(i) for i, m in enumerate(dict.fromkeys(df["model"]))}
        df["model"] = df["model"].map(names)
    # an item attribute for the heatmap and the marginal means: four domains of six items
    df["domain"] = df["item"].map({q: f"domain {int(q[1:]) % 4}" if not long else
                                   f"algebra-and-number-theory-{int(q[1:]) % 4}" for q in set(df["item"])})
    return df


def _quiet(func: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


def _contrasts(df: pd.DataFrame, by: str | None) -> pd.DataFrame:
    """Odds ratios of every model against the first, per level of ``by`` (the shape of a
    :class:`evalmix.Contrasts` table), computed from the observed accuracies."""
    groups = ["model"] + ([by] if by else [])
    acc = df.groupby(groups, sort=False)["correct"].mean().clip(0.02, 0.98).reset_index()
    rows = []
    for key, g in acc.groupby(by, sort=False) if by else [(None, acc)]:
        ref = g.iloc[0]
        odds_ref = ref["correct"] / (1 - ref["correct"])
        for _, r in g.iloc[1:].iterrows():
            or_ = r["correct"] / (1 - r["correct"]) / odds_ref
            rows.append({"contrast": f"({r['model']}) - ({ref['model']})", "odds_ratio": or_,
                         "or_conf_low": or_ / 1.8, "or_conf_high": or_ * 1.8,
                         "p_adjusted": 0.01 if abs(np.log(or_)) > 0.6 else 0.4, **({by: key} if by else {})})
    return pd.DataFrame(rows)


def _english(df: pd.DataFrame) -> pd.DataFrame:
    return df[df["language"] == "EN"].drop(columns="language")


def _accuracy(df: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    return _quiet(evalmix.accuracy, df, by).table


BUILDERS: dict[str, Callable[[pd.DataFrame], Figure]] = {
    "accuracy_intervals": lambda df: plots.accuracy_intervals(
        _accuracy(df, ["model", "language", "prompt"]), hue="language", col="prompt"),
    "delta_bic_bars": lambda df: plots.delta_bic_bars(pd.DataFrame({
        "name": [f"model * {' * '.join(LONG)}", "model + language + prompt", "model + language",
                 "model", "language * prompt"],
        "delta_bic": [0.0, 3.2, 9.8, 25.0, 140.0], "bic_weight": [0.82, 0.16, 0.01, 0.0, 0.0]})),
    "odds_ratio_forest": lambda df: plots.odds_ratio_forest(_contrasts(df, "prompt"), by="prompt"),
    "marginal_means": lambda df: plots.marginal_means(
        _accuracy(df, ["domain"]).assign(domain=lambda t: t["domain"].astype(str))),
    "accuracy_heatmap": lambda df: plots.accuracy_heatmap(_accuracy(df, ["model", "domain"])),
    "flip_rate_bars": lambda df: plots.flip_rate_bars(_quiet(evalmix.flip_rate, df,
                                                              ["model", "language", "prompt"])),
    "icc_dots": lambda df: plots.icc_dots(_quiet(evalmix.icc, _english(df), ["model", "prompt"])),
    "rank_bump": lambda df: plots.rank_bump(_quiet(evalmix.rank_instability, df, ["language", "prompt"])),
    "rank_intervals": lambda df: plots.rank_intervals(
        _quiet(evalmix.rank_uncertainty, df, ["language", "prompt"], n_boot=50, rng=1)),
    "se_curves": lambda df: plots.se_curves(
        _quiet(evalmix.repetitions.se_vs_runs, _english(df), ["model", "prompt"], max_runs=3), show_projection=True),
    "critical_difference_plot": lambda df: plots.critical_difference_plot(
        _quiet(evalmix.friedman, df.groupby(["model", "item"], sort=False)["correct"].mean().reset_index(),
               outcome="correct")),
    "leaderboard_plot": lambda df: _leaderboard(df),
    "sequence_plot": lambda df: _sequence(df),
    "drift_plot": lambda df: _drift(df),
    "contamination_plot": lambda df: _contamination(df),
    "gate_plot": lambda df: _gate(df),
    "item_health_plot": lambda df: plots.item_health_plot(
        _quiet(evalmix.item_health, df, method="point_biserial")),
    "version_shift_plot": lambda df: _version_shift(df),
}


def _gate(df: pd.DataFrame) -> Figure:
    one = df[(df["language"] == df["language"].iloc[0]) & (df["prompt"] == df["prompt"].iloc[0])]
    a, b = list(pd.unique(one["model"]))[:2]
    rule = {"alpha": 0.05, "looks": 4, "metrics": [{"name": "accuracy", "column": "correct", "margin": 0.1}]}
    return plots.gate_plot(_quiet(evalmix.gate, one, a, b, rule, shadow=True))


def _version_shift(df: pd.DataFrame) -> Figure:
    # the model names (long ones included) of the table, under two simulated harness versions
    models = list(pd.unique(df["model"]))
    sim, _ = evalmix.simulate.simulate_versions(n_items=40, n_models=len(models), dif_items=3, rng=1)
    sim["model"] = sim["model"].map(dict(zip(pd.unique(sim["model"]), models)))
    return plots.version_shift_plot(_quiet(evalmix.version_shift, sim))


def _drift(df: pd.DataFrame) -> Figure:
    one = df[(df["language"] == df["language"].iloc[0]) & (df["prompt"] == df["prompt"].iloc[0])]
    one = one.drop(columns=["language", "prompt", "domain"])
    flip = np.random.default_rng(1).random(len(one)) < 0.1
    after = one.assign(correct=np.where(flip, 1 - one["correct"], one["correct"]))
    rejudged = one.assign(correct=np.where(flip[::-1], 1, one["correct"]))
    return plots.drift_plot(_quiet(evalmix.drift, one, after, judge=rejudged, margin=0.05))


def _contamination(df: pd.DataFrame) -> Figure:
    # the table a contamination_test result holds (fitting 40 models here would take seconds)
    models = list(dict.fromkeys(df["model"]))
    est = np.linspace(-0.3, 1.2, len(models))
    return plots.contamination_plot(pd.DataFrame({
        "model": models, "estimate": est, "conf_low": est - 0.4, "conf_high": est + 0.4,
        "contaminated": est - 0.4 > 0}))


def _sequence(df: pd.DataFrame) -> Figure:
    one = df[(df["language"] == df["language"].iloc[0]) & (df["prompt"] == df["prompt"].iloc[0])]
    a, b = list(pd.unique(one["model"]))[:2]
    return plots.sequence_plot(evalmix.sequential_difference(one, a, b, rng=1))


def _leaderboard(df: pd.DataFrame) -> Figure:
    from evalmix.studies.leaderboard import rank_sets_normal
    from evalmix.plots.leaderboard import leaderboard_plot

    acc = df.groupby("model", sort=False)["correct"].mean().sort_values(ascending=False)
    rs = rank_sets_normal(acc, se=np.full(len(acc), 0.02), labels=list(acc.index))
    return leaderboard_plot(rs)


def plot_functions() -> dict[str, Callable[..., Any]]:
    """Every public function of evalmix.plots' modules that returns a Figure."""
    found = {}
    for info in pkgutil.iter_modules(plots.__path__):
        module = importlib.import_module(f"evalmix.plots.{info.name}")
        for name in getattr(module, "__all__", ()):
            func = getattr(module, name)
            if inspect.isfunction(func) and "Figure" in str(inspect.signature(func).return_annotation):
                found[name] = func
    return found


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def test_every_plot_function_is_laid_out_here():
    assert set(plot_functions()) == set(BUILDERS)


# 40 models draw for seconds each: the second test step (-m slow) runs them
MODELS = [8, pytest.param(40, marks=pytest.mark.slow)]


# long labels are the stress case; short ones run in the second step with the 40-model layouts
@pytest.mark.parametrize("long", [pytest.param(False, marks=pytest.mark.slow), True], ids=["short", "long"])
@pytest.mark.parametrize("n_models", MODELS)
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_no_text_overlaps_or_leaves_the_canvas(name, n_models, long):
    fig = BUILDERS[name](runs(n_models, long))
    assert isinstance(fig, Figure)
    assert not layout_problems(fig), f"{name} ({n_models} models, {'long' if long else 'short'} labels)"
    if n_models == 8 and long:  # saved outside the plotting style, as a user would
        pdf = pdf_bytes(fig)
        assert pdf.startswith(b"%PDF") and b"/Subtype /Type3" not in pdf and b"/FontFile2" in pdf
        assert png_width(fig) == pytest.approx(fig.get_figwidth() * 300, abs=1)


def test_the_check_sees_overlaps_and_clipping():
    fig, ax = plt.subplots(figsize=(2, 1))
    ax.set_title("a title")
    ax.text(0.5, 0.5, "one"), ax.text(0.5, 0.5, "one")  # the same label twice is still checked
    ax.set_xlabel("a label much longer than the figure is wide, so it is cut at both sides")
    problems = layout_problems(fig)
    assert any("'one' overlaps 'one'" in p for p in problems)
    assert any("leaves the 200x100 canvas" in p for p in problems)


# the bundled example's report is checked in test_reporting.py (test_example_report_figures_are_laid_out),
# beside the other tests that read the one report conftest.py builds per test process
@functools.lru_cache(maxsize=None)
def long_report(n_models: int) -> Any:
    df = runs(n_models, True)
    return _quiet(evalmix.report, df, slice="domain", n_boot=50, rng=1)


@pytest.mark.slow
@pytest.mark.parametrize("n_models", [8, 40])
def test_report_figures_long_labels(n_models):
    figs = long_report(n_models).figures
    assert {"fig1_accuracy", "fig3_odds_ratios", "fig6_flip_rate", "rank_intervals"} <= set(figs)
    bad = {n: layout_problems(f) for n, f in figs.items()}
    assert not {n: p for n, p in bad.items() if p}


def _judged_and_battles(n_models: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Verdicts of two judges with long names on long-named models, and battles among the models."""
    rng = np.random.default_rng(11)
    names = [LONG_MODEL.format(i) for i in range(n_models)]
    skill = np.linspace(-1.2, 1.2, n_models)
    judges = {"provider-name/judge-model-large-2026-01": 0.6, "a-second-grader-with-a-long-name": -0.4}
    rows = [(names[m], f"q{i:02d}", r, j, int(rng.random() < 1 / (1 + np.exp(-(skill[m] + b)))))
            for m in range(n_models) for i in range(10) for r in (1, 2) for j, b in judges.items()]
    judged = pd.DataFrame(rows, columns=["model", "item", "run", "judge", "correct"])
    n = 250 * n_models
    a = rng.integers(0, n_models, n)
    b = (a + rng.integers(1, n_models, n)) % n_models
    p_a = 1 / (1 + np.exp(skill[b] - skill[a]))
    u = rng.random(n)
    won = np.where(u < p_a - 0.1, "model_a", np.where(u < p_a + 0.1, "tie", "model_b"))
    lab = np.array(names, dtype=object)
    return judged, pd.DataFrame({"model_a": lab[a], "model_b": lab[b], "winner": won})


@pytest.mark.parametrize("n_models", [4, pytest.param(40, marks=pytest.mark.slow)])
def test_report_judge_and_arena_figures_long_labels(n_models):
    from evalmix.reporting import arena_section, judges_section

    judged, battles = _judged_and_battles(n_models)
    figs = dict((n, f) for n, _, f in _quiet(judges_section, _quiet(evalmix.read_runs, judged)).figures)
    figs |= {n: f for n, _, f in arena_section(battles).figures}
    assert set(figs) == {"judge_accuracy", "arena_leaderboard"}
    bad = {n: layout_problems(f) for n, f in figs.items()}
    assert not {n: p for n, p in bad.items() if p}
