"""Output hygiene: what a reader sees is clean in every output.

- Markdown carries ``<0.001``, not ``&lt;0.001``, and still escapes what Markdown would act on;
- result reprs (every engine, inference verb, study and the report) are at most 100 characters wide;
- log axes show at least three labelled ticks;
- legends say when, and how, p-values were adjusted;
- no figure text leaves the canvas, however short the figure (fig9's y label was cut);
- every data series can be seen on white (fig8's eighth colour, Okabe-Ito's yellow, could not).
"""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.collections import LineCollection, PathCollection  # noqa: E402

import evalmix  # noqa: E402
from evalmix import plots, tables  # noqa: E402
from evalmix.core.result import Summary  # noqa: E402
from evalmix.plots.style import MIN_CONTRAST, OKABE_ITO, contrast_on_white, log_ticks  # noqa: E402

sys.path.insert(0, str(Path(__file__).parents[1]))
from test_figure_layout import BUILDERS, layout_problems, runs  # noqa: E402

HERE = Path(__file__).parents[1] / "reference"
EXAMPLE = Path(__file__).resolve().parents[2] / "data" / "example_runs.csv"
#: a band drawn as a thick translucent bar (a rank set) is seen by its area: a lower bar
BAND_CONTRAST = 1.4


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _quiet(func, *args, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return func(*args, **kwargs)


# ---- Markdown ----------------------------------------------------------------------------------------


def test_markdown_carries_less_than_not_an_entity():
    df = pd.DataFrame({"contrast": ["b - a"], "estimate": [0.5], "p_value": [1e-5], "p_adjusted": [3e-4]})
    md = tables.to_markdown(df)
    assert md.split("\n")[2].endswith("|  <0.001 |     <0.001 |") and "&lt;" not in md
    s = Summary("Title <0.05 & more", ["p < 0.001 & x"], df, ["note: p <0.001"])
    text = s.to_markdown()
    assert "&lt;" not in text and "&amp;" not in text and "<0.001" in text and "p < 0.001 & x" in text


def test_markdown_still_escapes_what_markdown_acts_on():
    cells = {"a|b": "a\\|b", "<script>": "\\<script>", "</b>": "\\</b>", "<!-- c -->": "\\<!-- c -->",
             "&amp;": "\\&amp;", "&#60;": "\\&#60;", "*em*": "\\*em\\*", "`code`": "\\`code\\`",
             "[l](u)": "\\[l\\](u)", "$x$": "\\$x\\$", "_x_": "\\_x\\_", "snake_case": "snake_case",
             "a\nb": "a<br>b", "x < 3 & y > 2": "x < 3 & y > 2", "<0.001": "<0.001"}
    for raw, want in cells.items():
        assert tables.markdown_text(raw) == want, raw


def test_every_results_markdown_reads_less_than(tmp_path):
    runs_ = evalmix.simulate.glmm_runs(3, 40, 2, rng=1)
    fit = _quiet(evalmix.glmer, "correct ~ model + (1|item)", runs_)
    con = evalmix.contrast(evalmix.emmeans(fit, "model"), "pairwise")
    for md in (con.to_markdown(), con.summary().to_markdown(), fit.summary().to_markdown()):
        assert "&lt;" not in md
    assert "<0.001" in con.to_markdown()


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_the_reports_markdown_files_read_less_than(example_report):
    files = [p for k, p in example_report.paths.items() if str(k).endswith(".md")]
    assert files
    texts = {p.name: p.read_text(encoding="utf-8") for p in files}
    assert not [n for n, t in texts.items() if "&lt;" in t or "&gt;" in t or "&amp;" in t]
    assert any("<0.001" in t for t in texts.values())


# ---- repr width --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def printed():
    """The reprs and printed summaries of a fit of every engine, the inference verbs and studies."""
    runs_ = evalmix.read_runs(EXAMPLE)
    out: dict[str, str] = {}
    glmer = _quiet(evalmix.glmer, "correct ~ model * language + prompt + (1|item) + (1|item:run)", runs_)
    out["glmer"], out["glmer summary"] = repr(glmer), str(glmer.summary())
    emm = evalmix.emmeans(glmer, "model", by="language")
    con = evalmix.contrast(emm, "pairwise")
    out["emmeans"], out["contrast"], out["contrast summary"] = repr(emm), repr(con), str(con.summary())
    out["anova"] = repr(evalmix.anova(glmer))
    sleep = pd.read_csv(HERE / "lmer_sleepstudy.csv")
    lmer = evalmix.lmer("Reaction ~ Days + (Days|Subject)", sleep)
    out["lmer"], out["lmer summary"], out["lmer coef"] = repr(lmer), str(lmer.summary()), repr(lmer.coef_table())
    wine = pd.read_csv(HERE / "clmm_wine.csv").assign(rating=lambda d: pd.Categorical(d["rating"], ordered=True))
    clmm = evalmix.clmm("rating ~ temp + contact + (1|judge)", wine)
    out["clmm"], out["clmm summary"] = repr(clmm), str(clmm.summary())
    tmb = evalmix.glmmtmb("score ~ model + (1|item)", pd.read_csv(HERE / "glmmtmb_sim.csv"), "beta")
    out["glmmtmb"], out["glmmtmb summary"] = repr(tmb), str(tmb.summary())
    out["icc"] = repr(_quiet(evalmix.icc, runs_, ["model", "language", "prompt"]))
    out["accuracy"] = repr(_quiet(evalmix.accuracy, runs_, ["model", "language", "prompt"]))
    out["flip rate"] = repr(_quiet(evalmix.flip_rate, runs_, ["model", "language", "prompt"]))
    out["rank instability"] = repr(_quiet(evalmix.rank_instability, runs_, ["language", "prompt"]))
    out["se vs runs"] = repr(_quiet(evalmix.repetitions.se_vs_runs, runs_, ["model", "language", "prompt"],
                                    max_runs=3, curve_by="model"))
    return out


@pytest.mark.parametrize("name", ["glmer", "glmer summary", "emmeans", "contrast", "contrast summary", "anova",
                                  "lmer", "lmer summary", "lmer coef", "clmm", "clmm summary", "glmmtmb",
                                  "glmmtmb summary", "icc", "accuracy", "flip rate", "rank instability",
                                  "se vs runs"])
def test_reprs_are_at_most_100_characters_wide(printed, name):
    text = printed[name]
    wide = [ln for ln in text.split("\n") if len(ln) > tables.REPR_WIDTH]
    assert not wide, f"{name}: {len(wide)} lines wider than 100, e.g.\n{wide[0]}"


def test_a_wide_long_table_keeps_its_rows_short_and_its_columns_all():
    df = pd.DataFrame({f"column_{i}": np.arange(60) + 0.123456 * i for i in range(14)}).assign(label="x")

    class Wide(evalmix.core.result.Result):
        def to_frame(self):
            return df

    text = repr(Wide())
    lines = text.split("\n")
    assert max(map(len, lines)) <= 100 and len(lines) <= 40
    assert all(c in text for c in df.columns) and "more rows" in text


def test_long_header_lines_wrap():
    s = Summary("T", ["word " * 40], pd.DataFrame({"estimate": [0.5]}), ["note " * 40])
    assert max(map(len, str(s).split("\n"))) <= 100


# ---- log axes and legends ----------------------------------------------------------------------------


def _forest(or_low, or_high, **kw):
    n = len(or_low)
    tab = pd.DataFrame({"contrast": [f"(m{i}) - (m0)" for i in range(1, n + 1)],
                        "odds_ratio": np.sqrt(np.asarray(or_low) * np.asarray(or_high)),
                        "or_conf_low": or_low, "or_conf_high": or_high, **kw})
    return plots.odds_ratio_forest(tab)


def _labelled_ticks(ax):
    fig = ax.figure
    fig.canvas.draw()
    lo, hi = sorted(ax.get_xlim())
    return [t.get_text() for t in ax.get_xticklabels() if t.get_text() and lo <= t.get_position()[0] <= hi]


@pytest.mark.parametrize("low, high", [([0.8, 0.9], [1.2, 1.3]), ([0.3, 0.7], [1.7, 2.5]), ([0.05, 1.0], [0.5, 30.0]),
                                       ([0.97], [1.04]), ([1e-4, 0.01], [1e3, 1e5])])
def test_log_axes_show_at_least_three_labelled_ticks(low, high):
    fig = _forest(low, high, p_adjusted=[0.01] * len(low))
    labels = _labelled_ticks(fig.axes[0])
    assert len(labels) >= 3, labels
    assert all(re.fullmatch(r"[0-9.e+-]+", t) for t in labels), labels  # plain numbers, not 10^k


def test_log_ticks_on_any_axis():
    fig, ax = plt.subplots()
    ax.set_yscale("log")
    for lo, hi in ((0.3, 3), (1, 1.5), (2, 2000), (1e-6, 1e6)):
        ax.set_ylim(lo, hi)
        log_ticks(ax.yaxis)
        fig.canvas.draw()
        shown = [t for t in ax.get_yticklabels() if t.get_text() and lo <= t.get_position()[1] <= hi]
        assert 3 <= len(shown) <= 12, (lo, hi, [t.get_text() for t in shown])


def test_legends_say_whether_p_values_were_adjusted():
    runs_ = evalmix.simulate.glmm_runs(4, 60, 2, rng=3)
    fit = _quiet(evalmix.glmer, "correct ~ model + (1|item)", runs_)
    for adjust in ("holm", "tukey", "none"):
        con = evalmix.contrast(evalmix.emmeans(fit, "model", type="response"), "pairwise", adjust=adjust)
        fig = plots.odds_ratio_forest(con)
        texts = [t.get_text() for leg in fig.legends for t in leg.get_texts()]
        want = "unadjusted" if adjust == "none" else f"{adjust}-adjusted"
        assert texts and all(want in t for t in texts), texts
        assert not layout_problems(fig)
    tab = con.to_frame().drop(columns="p_adjusted")
    texts = [t.get_text() for leg in plots.odds_ratio_forest(tab).legends for t in leg.get_texts()]
    assert all(t.startswith("unadjusted p") for t in texts), texts
    texts = [t.get_text() for leg in plots.odds_ratio_forest(con.to_frame()).legends for t in leg.get_texts()]
    assert all(t.startswith("adjusted p") for t in texts), texts  # a frame: adjusted, method unknown


def test_the_critical_difference_says_it_is_family_wise():
    rng = np.random.default_rng(0)
    wide = pd.DataFrame(rng.random((40, 4)) + [0, 0.1, 0.3, 0.6], columns=list("abcd"))
    fig = plots.critical_difference_plot(evalmix.friedman(wide, alpha=0.1))
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert any(t.startswith("Nemenyi CD = ") and "family-wise α = 0.1" in t for t in texts), texts


# ---- nothing clipped ---------------------------------------------------------------------------------


@pytest.mark.parametrize("figsize", [None, (3.5, 2.0), (3.5, 2.6), (4.55, 2.4), (7.2, 2.5)])
@pytest.mark.parametrize("n_models", [2, 8])
def test_long_axis_labels_stay_on_short_figures(figsize, n_models):
    df = evalmix.simulate.glmm_runs(n_models, 30, 3, rng=1, slices={"language": ["EN", "ES"]})
    res = _quiet(evalmix.repetitions.se_vs_runs, df, ["model", "language"], max_runs=3, curve_by="model")
    fig = plots.se_curves(res, show_projection=True, figsize=figsize)
    assert not layout_problems(fig), ("se_curves", figsize)
    for dpi in (100, 300):  # the report saves at 300 dpi
        fig.set_dpi(dpi)
        assert not layout_problems(fig), ("se_curves", figsize, dpi)
    fig = plots.rank_bump(_quiet(evalmix.rank_instability, df, "language"), figsize=figsize)
    assert not layout_problems(fig), ("rank_bump", figsize)


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_the_reports_repr_is_at_most_100_characters_wide(example_report):
    text = repr(example_report.report)
    assert max(map(len, text.split("\n"))) <= 100
    assert len(text.split("\n")) == 1 + 1 + len(example_report.report.to_frame())


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_report_figures_keep_every_text_inside_at_300_dpi(example_report):
    for name, fig in example_report.report.figures.items():
        dpi = fig.get_dpi()
        try:
            fig.set_dpi(300)
            assert not layout_problems(fig), name
        finally:
            fig.set_dpi(dpi)


# ---- every series visible on white -------------------------------------------------------------------


def test_the_palette_is_seen_on_white():
    for c in OKABE_ITO:
        assert contrast_on_white(c) >= MIN_CONTRAST, c
    assert contrast_on_white("#F0E442") < MIN_CONTRAST  # the check sees Okabe-Ito's yellow


def _series_contrasts(fig):
    """(description, contrast on white, needed) of every data series: lines and markers, interval
    bars (line collections) and scatter points; bands drawn as thick translucent bars need less."""
    out = []
    for ax in fig.axes:
        for line in ax.get_lines():
            if not line.get_visible() or len(line.get_xdata()) == 0:
                continue
            alpha = line.get_alpha()
            if line.get_linestyle() not in ("None", "none", "", " "):
                out.append((f"line {line.get_label()!r}", contrast_on_white(line.get_color(), alpha), MIN_CONTRAST))
            if line.get_marker() not in (None, "None", "none", "", " "):
                face = line.get_markerfacecolor()
                edge = line.get_markeredgecolor()
                best = max(contrast_on_white(face, alpha) if face not in ("none", "None") else 1.0,
                           contrast_on_white(edge, alpha) if line.get_markeredgewidth() >= 1 else 1.0)
                out.append((f"markers {line.get_label()!r}", best, MIN_CONTRAST))
        for coll in ax.collections:
            if not coll.get_visible() or not isinstance(coll, (LineCollection, PathCollection)):
                continue
            colours = coll.get_edgecolor() if isinstance(coll, LineCollection) else coll.get_facecolor()
            widths = np.atleast_1d(coll.get_linewidth())
            need = BAND_CONTRAST if isinstance(coll, LineCollection) and widths.min() >= 5 else MIN_CONTRAST
            for rgba in colours:
                out.append((f"{type(coll).__name__} {coll.get_label()!r}", contrast_on_white(rgba), need))
    return out


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_every_series_is_seen_on_white(name):
    fig = BUILDERS[name](runs(8, False))
    bad = [(what, round(c, 2)) for what, c, need in _series_contrasts(fig) if c < need]
    assert not bad, f"{name}: {bad}"


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_report_series_are_seen_on_white(example_report):
    for name, fig in example_report.report.figures.items():
        bad = [(what, round(c, 2)) for what, c, need in _series_contrasts(fig) if c < need]
        assert not bad, f"{name}: {bad}"
    # fig8 draws eight models: the eighth colour is a series too
    fig8 = example_report.report.figures["fig8_rank_bump"]
    assert len({ln.get_color() for ln in fig8.axes[0].get_lines()}) == 8
