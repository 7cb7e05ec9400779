"""The report on scores beyond 0/1: judge ratings (clmm), continuous scores (lmer) and overdispersed
k-of-n counts (beta-binomial), each table checked against the engine's own numbers."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.cli import main
from evalmix.inference.emmeans import contrast, emmeans
from evalmix.lmm import lmer
from evalmix.ordinal import clmm, clmm_emmeans, clmm_ref_grid
from evalmix.reporting import outcome_kind
from evalmix.tmb import glmmtmb

RATINGS = Path(__file__).resolve().parents[2] / "data" / "example_ratings.csv"
BINARY_ONLY = ("accuracy", "selection", "odds_ratios", "slice_means", "slice_models", "reliability", "ranks",
               "repetitions", "robustness")


def quiet_report(runs, out=None, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evalmix.report(runs, out, n_boot=20, **kw)


@pytest.fixture(scope="module")
def ratings_report():
    return quiet_report(RATINGS, outcome="rating")


def test_outcome_kinds():
    base = pd.DataFrame({"model": np.repeat(["a", "b"], 6), "item": np.tile(np.arange(6), 2), "run": 1})

    def kind(values, **kw):
        return outcome_kind(evalmix.read_runs(base.assign(y=values), outcome="y", allow_fractional="any", **kw))

    assert kind(np.tile([0, 1, 1], 4)) == "binary"
    assert kind(np.tile([1, 2, 3, 4, 5, 5], 2)) == "ordinal"
    assert kind(np.tile([0.0, 0.5, 1.0], 4)) == "continuous"  # partial credit
    assert kind(np.arange(12)) == "continuous"  # 12 integer values: wider than a rating scale
    counts = base.assign(k=np.arange(12) % 5, n=5)
    assert outcome_kind(evalmix.read_runs(counts, successes="k", trials="n")) == "counts"


def test_ratings_report_is_clmm(ratings_report):
    rep = ratings_report
    assert rep.options["outcome_kind"] == "ordinal" and rep.options["engine"] == "clmm"
    formula = rep.options["contrast_model"]
    # two runs: the ordinal model has the nested item:run intercepts too, as the lmer path
    assert formula == "rating ~ model * judge + (1 | item) + (1 | item:run)"
    assert "Random intercepts of items and of runs within items" in rep.section("score_model").note
    d = pd.read_csv(RATINGS)
    fit = clmm(formula, d)
    means = rep.tables["score_means"]
    direct = clmm_emmeans(fit, "model", mode="mean.class").to_frame()
    assert means["model"].tolist() == ["model-A", "model-B", "model-C", "model-D"]
    np.testing.assert_allclose(means["estimate"], direct["estimate"], rtol=1e-8)
    np.testing.assert_allclose(means["se"], direct["se"], rtol=1e-6)
    # simulated model effects A 0.8 > B 0.4 > C 0 > D -0.5: the mean ratings keep that order
    assert means["estimate"].is_monotonic_decreasing
    pairs = rep.tables["score_pairwise"]
    con = contrast(emmeans(clmm_ref_grid(fit), "model"), "pairwise", adjust="holm").to_frame()
    assert pairs["contrast"].tolist() == con["contrast"].tolist()
    np.testing.assert_allclose(pairs["estimate"], con["estimate"], rtol=1e-8)
    np.testing.assert_allclose(pairs["p_adjusted"], con["p_adjusted"], rtol=1e-6)
    # latent A - D: the simulated 1.3 within two standard errors
    a_d = pairs.set_index("contrast").loc["(model-A) - (model-D)"]
    assert abs(a_d["estimate"] - 1.3) < 2 * a_d["se"]
    vs_ref = rep.tables["score_vs_reference"]
    assert rep.options["reference"] == "model-A" and len(vs_ref) == 3
    assert (vs_ref["p_adjusted"] >= vs_ref["p_value"]).all()
    var = rep.tables["score_variance"].set_index("component")
    vc = fit.varcorr.set_index("group")["variance"]
    assert var.index.tolist() == ["item:run", "item", "Residual (latent)"]
    total = vc.sum() + np.pi ** 2 / 3
    np.testing.assert_allclose(var.loc[["item:run", "item"], "share"], vc[["item:run", "item"]] / total,
                               rtol=1e-10)
    # sd(item) 1.0 and sd(item:run) 0.4 were simulated (data/make_scores.py)
    assert 0.6 < var.loc["item", "sd"] < 1.5 and 0.1 < var.loc["item:run", "sd"] < 0.7
    fig = rep.figures["fig_score_means"]
    ax = fig.axes[0]
    assert ax.get_xlabel() == "mean rating (1-5, 95% CI)"
    assert [t.get_text() for t in ax.get_yticklabels()][-1] == "model-A"  # the best on top
    # the dots are the mean ratings themselves (sorted upwards), not percentages
    dots = ax.lines[0].get_xdata()
    np.testing.assert_allclose(dots, np.sort(means["estimate"].to_numpy()), rtol=1e-12)
    dist = rep.tables["rating_distribution"]
    np.testing.assert_allclose(dist[["1", "2", "3", "4", "5"]].sum(axis=1), 100.0, rtol=1e-12)


def small_ratings(n_runs: int, seed: int = 4) -> pd.DataFrame:
    """3 models x 24 items x n_runs runs of 1-4 ratings from a cumulative logit with item and
    item:run intercepts (SDs 1.0 and 0.5)."""
    rng = np.random.default_rng(seed)
    n_items = 24
    item_eff, run_eff = rng.normal(0, 1.0, n_items), rng.normal(0, 0.5, (n_items, n_runs))
    rows = []
    for m, b in {"m1": 1.0, "m2": 0.3, "m3": -0.5}.items():
        for r in range(n_runs):
            latent = b + item_eff + run_eff[:, r] + rng.logistic(size=n_items)
            rows.append(pd.DataFrame({"model": m, "item": np.arange(n_items), "run": r + 1,
                                      "rating": np.digitize(latent, [-1.0, 0.5, 2.0]) + 1}))
    return pd.concat(rows, ignore_index=True)


@pytest.mark.parametrize("n_runs", [1, 3])
def test_ratings_report_fits_run_intercepts_when_there_are_runs(n_runs):
    d = small_ratings(n_runs)
    rep = quiet_report(evalmix.read_runs(d, outcome="rating", allow_fractional="any"))
    formula = rep.options["contrast_model"]
    nested = n_runs > 1
    assert formula == "rating ~ model + (1 | item)" + (" + (1 | item:run)" if nested else "")
    note = rep.section("score_model").note
    assert ("and of runs within items" in note) == nested and "item intercepts only" not in note
    fit = clmm(formula, d)
    assert fit.varcorr["group"].tolist() == (["item:run", "item"] if nested else ["item"])
    direct = clmm_emmeans(fit, "model", mode="mean.class").to_frame()
    np.testing.assert_allclose(rep.tables["score_means"]["estimate"], direct["estimate"], rtol=1e-8)
    var = rep.tables["score_variance"]
    assert var["component"].tolist()[:-1] == fit.varcorr["group"].tolist()


def test_ratings_report_leaves_binary_sections_out_with_a_reason(ratings_report):
    rep = ratings_report
    for key in BINARY_ONLY:
        line = rep.section(key).skipped
        assert line is not None and "computed for 0/1 outcomes" in line and "'rating'" in line, key
    assert rep.section("judges").skipped.startswith("Left out: the judges section reads 0/1 verdicts")
    assert "accuracy_overall" not in rep.tables and "odds_ratios" not in rep.tables
    html = rep.to_html()
    assert html.count("computed for 0/1 outcomes") == len(BINARY_ONLY)
    assert "fitted by clmm" in html and "model selected by BIC" not in html


def test_continuous_score_report_is_lmer(tmp_path):
    d = pd.read_csv(RATINGS)
    rng = np.random.default_rng(11)
    d["score"] = ((d["rating"] - 1) / 4 * 0.9 + rng.uniform(0, 0.1, len(d))).round(4)  # partial credit
    d = d.drop(columns="rating")
    rep = quiet_report(d, tmp_path / "out", outcome="score")
    assert rep.options["outcome_kind"] == "continuous" and rep.options["engine"] == "lmer"
    formula = rep.options["contrast_model"]
    assert formula == "score ~ model * judge + (1 | item) + (1 | item:run)"
    fit = lmer(formula, d)
    emm = emmeans(fit, "model").to_frame()
    means = rep.tables["score_means"]
    np.testing.assert_allclose(means["estimate"], emm["estimate"], rtol=1e-8)
    np.testing.assert_allclose(means["df"], emm["df"], rtol=1e-6)
    observed = d.groupby("model")["score"].mean().to_numpy()
    np.testing.assert_allclose(means["estimate"], observed, atol=1e-8)  # balanced: the raw means
    var = rep.tables["score_variance"]
    vc = fit.varcorr
    np.testing.assert_allclose(var["variance"], vc["variance"], rtol=1e-10)
    np.testing.assert_allclose(var["share"], vc["variance"] / vc["variance"].sum(), rtol=1e-10)
    assert var["component"].tolist() == vc["group"].tolist()
    assert set(var["component"]) == {"item:run", "item", "Residual"}
    pairs = rep.tables["score_pairwise"]
    con = contrast(emmeans(fit, "model"), "pairwise", adjust="holm").to_frame()
    np.testing.assert_allclose(pairs["p_adjusted"], con["p_adjusted"], rtol=1e-6)
    assert "df" in pairs.columns  # t tests with Satterthwaite df
    for name in ("score_means", "score_pairwise", "score_variance", "scores"):
        assert (tmp_path / "out" / "tables" / f"{name}.tex").exists()


def test_overdispersed_counts_report_is_betabinomial():
    rng = np.random.default_rng(5)
    effect = {"m1": 0.8, "m2": 0.2, "m3": -0.4}
    rows = []
    item_eff = rng.normal(0, 1, 50)
    for m, b in effect.items():
        mu = 1 / (1 + np.exp(-(b + item_eff)))
        p = rng.beta(mu * 3, (1 - mu) * 3)  # phi = 3: far more spread than a binomial
        rows.append(pd.DataFrame({"model": m, "item": np.arange(50), "k": rng.binomial(10, p), "n": 10}))
    d = pd.concat(rows, ignore_index=True)
    runs = evalmix.read_runs(d, successes="k", trials="n", run=None)
    rep = quiet_report(runs)
    assert rep.options["outcome_kind"] == "counts" and rep.options["engine"] == "glmmtmb"
    assert "overdispersion detected" in rep.section("scores").tables[-1][1]
    formula = rep.options["contrast_model"]
    fit = glmmtmb(formula, runs, family="betabinomial")
    means = rep.tables["score_means"]
    direct = emmeans(fit, "model", type="response").to_frame()
    np.testing.assert_allclose(means["estimate"], direct["estimate"], rtol=1e-6)
    assert means["estimate"].between(0, 1).all()
    assert means.set_index("model")["estimate"].idxmax() == "m1"
    # the latent item share uses the logistic residual pi^2/3
    var = rep.tables["score_variance"]
    v = float(fit.varcorr["variance"].iloc[0])
    np.testing.assert_allclose(var["share"].iloc[0], v / (v + np.pi ** 2 / 3), rtol=1e-10)


def test_binary_outcome_read_as_numbers_keeps_the_binary_report():
    runs = evalmix.simulate.glmm_runs(3, 20, 2, rng=3)
    as_numbers = evalmix.read_runs(runs.astype({"correct": float}), allow_fractional="any")
    rep = quiet_report(as_numbers)
    assert [s.key for s in rep.sections][:4] == ["data", "accuracy", "selection", "odds_ratios"]
    acc = evalmix.accuracy(evalmix.read_runs(runs), "model", ci="wilson").to_frame()
    got = rep.tables["accuracy_overall"].set_index("model").loc[acc["model"]]
    np.testing.assert_allclose(got["estimate"], acc["estimate"], rtol=1e-12)


def test_cli_report_on_ratings_escapes_names(tmp_path, capsys):
    d = pd.read_csv(RATINGS)
    d = d[d["item"].isin(sorted(d["item"].unique())[:25])]
    d["model"] = d["model"].replace({"model-A": "<script>alert(1)</script>", "model-B": "a & b"})
    path = tmp_path / "ratings.csv"
    d.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["report", str(path), "--outcome", "rating", "-o", str(tmp_path / "out"), "--n-boot", "20"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "computed for 0/1 outcomes" in out
    html = (tmp_path / "out" / "index.html").read_text(encoding="utf-8")
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "a &amp; b" in html
    tex = (tmp_path / "out" / "tables" / "score_means.tex").read_text(encoding="utf-8")
    assert r"\textless{}script\textgreater{}" in tex and r"a \& b" in tex
    png = (tmp_path / "out" / "figures" / "fig_score_means.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and 'id="fig-fig_score_means"' in html
    md = (tmp_path / "out" / "tables" / "score_pairwise.md").read_text(encoding="utf-8")
    assert "<script>" not in md.replace("\\<script>", "")  # only backslash-escaped: literal text


def test_counts_without_overdispersion_keep_the_binomial_report():
    rng = np.random.default_rng(8)
    item_eff = rng.normal(0, 1, 30)
    rows = [pd.DataFrame({"model": m, "item": np.arange(30), "n": 8,
                          "k": rng.binomial(8, 1 / (1 + np.exp(-(b + item_eff))))})
            for m, b in {"m1": 0.5, "m2": 0.0, "m3": -0.5}.items()]
    runs = evalmix.read_runs(pd.concat(rows, ignore_index=True), successes="k", trials="n", run=None)
    rep = quiet_report(runs)
    assert rep.options["outcome_kind"] == "counts" and rep.options["engine"] == "glmer"
    assert "odds_ratios" in rep.tables and "score_means" not in rep.tables
    note = rep.section("fits").note
    assert "checked for overdispersion first: no overdispersion detected" in note
    assert "model selected by BIC" in rep.to_html()


@pytest.mark.parametrize("long", [False, True], ids=["short", "long"])
def test_score_means_figure_is_laid_out(long):
    from test_figure_layout import layout_problems

    from evalmix import plots

    names = [f"model {'with a long descriptive name ' if long else ''}{k}" for k in range(8)]
    tab = pd.DataFrame({"model": names, "estimate": np.linspace(2.1, 4.4, 8)})
    tab = tab.assign(conf_low=tab["estimate"] - 0.3, conf_high=tab["estimate"] + 0.3)
    fig = plots.marginal_means(tab, scale="mean rating (1-5, 95% CI)")
    assert not layout_problems(fig)
    np.testing.assert_allclose(fig.axes[0].lines[0].get_xdata(), tab["estimate"], rtol=1e-12)
