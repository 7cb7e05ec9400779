"""`evalmix report`: the page, tables and figures, checked against the AI4Math paper's published
tables at the tolerances of test_inference_ai4math.py, and on tables without a slice or with one run.
"""

from __future__ import annotations

import base64
import json
import re
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import evalmix  # noqa: E402
from evalmix.cli import main  # noqa: E402
from evalmix.studies.reliability import KOO_LI_BANDS, quality_band  # noqa: E402
from evalmix.reporting import candidate_formulas  # noqa: E402

from conftest import REFERENCE, ROOT  # noqa: E402
from test_figure_layout import layout_problems  # noqa: E402
from test_inference_ai4math import (  # noqa: E402
    DOMAIN_EN, EST_TOL, FIVE, P_TOL, SE_RTOL, check, check_grok4_table,
)

EXAMPLE = ROOT / "data" / "example_runs.csv"
# the paper's Table 1 (problems per domain), in the data's Spanish labels
TABLE1 = {"Álgebra": 15, "Cálculo": 15, "Combinatoria": 14, "Geometría": 15, "Lógica Matemática": 15,
          "Teoria de Números": 16, "Probabilidad": 15}


def _tab(out: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(out / "tables" / f"{name}.csv")


def _lo_hi(tab: pd.DataFrame, prefix: str = "") -> tuple[str, str]:
    lo = f"{prefix}conf_low" if f"{prefix}conf_low" in tab.columns else f"{prefix}lower"
    hi = f"{prefix}conf_high" if f"{prefix}conf_high" in tab.columns else f"{prefix}upper"
    return lo, hi


def _p(tab: pd.DataFrame) -> str:
    return next(c for c in ("p_adjusted", "p_value", "p") if c in tab.columns)


# --- AI4Math: `evalmix report ../shared/data/ai4math/ai4math_runs.csv -o out/` -------------------
# The full-size report (1,000 bootstrap resamples, 12 figures as PNG and PDF) runs in the second
# step; the default step checks the AI4Math numbers through the functions the report calls
# (test_inference_ai4math.py, test_ranking.py, test_reliability.py, test_repetitions.py ...).

@pytest.fixture(scope="module")
def ai4math_out(ai4math_dir, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("report_ai4math")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["report", str(ai4math_dir / "ai4math_runs.csv"), "-o", str(out)]) == 0
    return out


@pytest.mark.shared
@pytest.mark.slow
def test_ai4math_writes_every_output(ai4math_out):
    html = (ai4math_out / "index.html").read_text(encoding="utf-8")
    figs = sorted(p.stem for p in (ai4math_out / "figures").glob("*.png"))
    assert figs == sorted(p.stem for p in (ai4math_out / "figures").glob("*.pdf"))
    # Figures 1-9 and Supplementary Figures 1-2, plus the rank intervals
    assert {"fig1_accuracy", "fig2_delta_bic", "fig3_odds_ratios", "fig4_slice_means", "fig5_heatmap",
            "fig6_flip_rate", "fig7_icc", "fig8_rank_bump", "fig9_se_curves", "supp_fig1_slice_fit",
            "supp_fig2_conditional_contrasts", "rank_intervals", "health_map"} == set(figs)
    # every figure embedded as a PNG that decodes to the file written
    embedded = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html)
    assert len(embedded) == len(figs)
    files = {(ai4math_out / "figures" / f"{f}.png").read_bytes() for f in figs}
    assert {base64.b64decode(e) for e in embedded} == files
    assert all((ai4math_out / "figures" / f"{f}.pdf").read_bytes().startswith(b"%PDF") for f in figs)
    for name in ("accuracy", "model_selection", "odds_ratios", "domain_means", "robustness",
                 "corrections", "table1"):
        assert f'id="tab-{name}"' in html
        assert (ai4math_out / "tables" / f"{name}.tex").read_text().startswith("\\begin{table}")
        assert (ai4math_out / "tables" / f"{name}.md").read_text().startswith("| ")
    assert "Left out" not in html  # every section applies to AI4Math
    assert "lme4" in html and "matplotlib" in html and "(1 | problem_id:run)" in html
    # every model fitted is listed with its checks: 5 candidates, 4 sign-flip fits, 2 domain fits
    fits = _tab(ai4math_out, "fits")
    assert len(fits) == 11 and fits["converged"].all()
    # the item:run variance is at zero in the all-runs fits: boundary fits, reported as such
    assert fits.loc[fits["use"].str.startswith("candidate"), "singular"].all()
    assert fits.loc[fits["singular"], "warnings"].str.contains("boundary").sum() >= 7


@pytest.mark.shared
@pytest.mark.slow
def test_ai4math_table1_and_accuracy(ai4math_out, published):
    t1 = _tab(ai4math_out, "table1").set_index("domain")
    assert t1["items"].drop("Total").to_dict() == TABLE1
    assert t1.loc["Total", "items"] == 105
    np.testing.assert_allclose(t1.loc["Geometría", "percent"], 100 * 15 / 105, rtol=1e-12)
    acc = _tab(ai4math_out, "accuracy")
    pub = published("accuracy")
    assert acc[["model", "language", "prompt"]].values.tolist() == \
        pub[["model", "language", "prompt"]].values.tolist()
    assert (acc["n"] == pub["n"]).all() and (acc["k"] == pub["hits"]).all()
    lo, hi = _lo_hi(acc)
    np.testing.assert_allclose(acc["estimate"], pub["prop"], atol=1e-12)
    np.testing.assert_allclose(acc[lo], pub["ci_lwr.ci"], atol=1e-9)
    np.testing.assert_allclose(acc[hi], pub["ci_upr.ci"], atol=1e-9)
    assert _tab(ai4math_out, "accuracy_overall")["model"].iloc[0] == "Grok-4"
    # the paper's per-problem counts: 13 problems neither Grok-4 nor o3-mini solves in any setting,
    # 2 problems only Grok-4 solves in any of its runs
    pair = _tab(ai4math_out, "reference_vs_runner_up").set_index("comparison")["n_items"]
    assert pair["items neither Grok-4 nor o3-mini ever solves"] == 13
    per = _tab(ai4math_out, "per_item").set_index("model")
    assert per.loc["Grok-4", "only_model_solving"] == 2
    assert (per["n_items"] == 105).all()


@pytest.mark.shared
@pytest.mark.slow
def test_ai4math_model_selection(ai4math_out, published):
    tab = _tab(ai4math_out, "model_selection").set_index("name")
    pub = published("mixed_model_BIC")
    assert sorted(tab.index) == sorted(FIVE)  # the paper's candidate set by default
    tab = tab.loc[pub["model"]]
    np.testing.assert_allclose(tab["bic"], pub["BIC"], atol=5e-3)
    np.testing.assert_allclose(tab["delta_bic"], pub["deltaBIC"], atol=5e-3)
    np.testing.assert_allclose(tab["bic_weight"], pub["wBIC"], atol=P_TOL)
    assert tab["df"].tolist() == pub["df"].tolist()
    html = (ai4math_out / "index.html").read_text(encoding="utf-8")
    assert "strong evidence for model + language over model + language + prompt (ΔBIC = 9.0" in html


@pytest.mark.shared
@pytest.mark.slow
def test_ai4math_odds_ratios_and_pairwise(ai4math_out, published):
    res = _tab(ai4math_out, "odds_ratios")
    check_grok4_table(res, published("pairwise_contrasts_grok4"))
    pw = _tab(ai4math_out, "pairwise_by_condition")
    pub = published("pairwise_contrasts")
    assert pw["contrast"].tolist() == pub["contrast"].tolist()
    assert pw["prompt"].tolist() == pub["prompt"].tolist()
    # as test_pairwise_holm_from_own_fit: the published fit stopped early
    check(pw, pub, est_tol=5e-3, se_rtol=SE_RTOL, ci_rtol=0.02, p_tol=0.015, se="SE",
          lower="asymp.LCL", upper="asymp.UCL", p="p.value")


@pytest.mark.shared
@pytest.mark.slow
def test_ai4math_domain_sections(ai4math_out, published):
    res = _tab(ai4math_out, "domain_means")
    res["domain"] = res["domain"].map(DOMAIN_EN)
    pub = published("Domain_marginal_means").set_index("domain")
    res = res.set_index("domain").loc[pub.index]
    check(res, pub, est_tol=EST_TOL, se_rtol=SE_RTOL, ci_rtol=SE_RTOL, p_tol=0, est="prob", se="SE",
          lower="asymp.LCL", upper="asymp.UCL", p=None)
    comp = _tab(ai4math_out, "slice_fit_comparison")
    pub = published("Mixed_Effects_Domain_fit_comparison")
    assert comp["name"].tolist() == pub["model"].tolist()
    np.testing.assert_allclose(comp["bic"], pub["BIC"], atol=5e-3)
    np.testing.assert_allclose(comp["delta_bic"], pub["deltaBIC"], atol=5e-3)
    np.testing.assert_allclose(comp["bic_weight"], pub["wBIC"], atol=P_TOL)
    # the paper's domain test: chi-square 13.5 on 6 df, whose p is 0.036 (the paper printed 0.005)
    t3 = _tab(ai4math_out, "type3_slice").set_index("term")
    assert t3.loc["domain", "statistic"] == pytest.approx(13.47, abs=0.01)  # chi-square
    assert t3.loc["domain", "df"] == 6
    assert t3.loc["domain", _p(t3.reset_index())] == pytest.approx(0.0362, abs=5e-4)
    # conditional contrasts: 7 competitors x 7 domains, equal across domains under the additive model
    cc = _tab(ai4math_out, "slice_conditional_contrasts")
    assert len(cc) == 49
    spread = cc.groupby("contrast")["estimate"].agg(lambda s: s.max() - s.min())
    assert (spread < 1e-8).all()
    robust = _tab(ai4math_out, "robustness")
    pub = published("Model_robustness_across_domains")
    assert robust["model"].tolist() == pub["model"].tolist()
    for col in ("mean_acc", "sd_acc", "iqr_acc", "min_acc", "max_acc"):
        np.testing.assert_allclose(robust[col], pub[col], atol=1e-12, err_msg=col)


@pytest.mark.shared
@pytest.mark.slow
def test_ai4math_reliability(ai4math_out, published, ai4math_dir):
    fl = _tab(ai4math_out, "flip_rates")
    pub = published("flip_summary_entropy")
    merged = fl.merge(pub, on=["model", "language", "prompt"])
    assert len(merged) == 32
    np.testing.assert_allclose(merged["flip_rate"], merged["p_flip"], atol=1e-8)
    ic = _tab(ai4math_out, "icc")
    pub = published("TableS2_ICC_full")
    merged = ic.merge(pub, on=["model", "language", "prompt"])
    assert len(merged) == 32
    np.testing.assert_allclose(merged["icc"], merged["ICC"], atol=1e-10)
    # the paper's bands (0.60 / 0.75 / 0.90) in quality_paper: 10 good, 14 moderate, 8 poor
    assert (merged["quality_paper"] == merged["Quality"].str.lower()).all()
    assert ic["quality_paper"].value_counts().to_dict() == {"moderate": 14, "good": 10, "poor": 8}
    # quality: Koo & Li (2016), the one banding of evalmix.icc and the CLI
    runs = evalmix.read_runs(ai4math_dir / "ai4math_runs.csv", item="problem_id")
    direct = evalmix.icc(runs, ["model", "language", "prompt"])
    both = ic.merge(direct.to_frame(), on=["model", "language", "prompt"], suffixes=("", "_icc"))
    assert (both["quality"] == both["quality_icc"]).all()
    assert (ic["quality"] == quality_band(ic["icc"].to_numpy(), KOO_LI_BANDS)).all()


@pytest.mark.shared
@pytest.mark.slow
def test_ai4math_corrections(ai4math_out):
    """The paper's numbers and the corrected ones, side by side."""
    corr = _tab(ai4math_out, "corrections").set_index("quantity")
    rank = corr.loc["single-run leaderboards with a rank inversion"]
    assert rank["paper_value"] == "10 of 12 (83%)" and rank["corrected_value"] == "5 of 12 (42%)"
    two = corr.loc["share of single-run inversions removed by pooling two runs"]
    # leaderboards with an inverted pair: 5 of 12 single runs, 2 of 12 pairs of runs (60% fewer);
    # inverted pairs: 9 -> 2 per 12 leaderboards (78% fewer)
    assert two["paper_value"] == "83%" and two["corrected_value"] == "60% / 78%"
    # the domain test: the paper's printed p beside the p its chi-square gives
    dom = corr.loc["domain effect (type-III Wald χ², additive model)"]
    assert dom["paper_value"] == "χ² = 13.5 on 6 df, p = 0.005"
    assert dom["corrected_value"] == "χ² = 13.5 on 6 df, p = 0.036"
    bands = corr.loc["ICC quality bands"]
    assert bands["paper_value"] == "8 poor, 14 moderate, 10 good"
    # SE: the paper's 0.0288, 0.0285, 0.0273
    for r, value in ((1, "0.0288"), (2, "0.0285"), (3, "0.0273")):
        assert corr.loc[f"SE of slice accuracy at R = {r}", "paper_value"] == value
    # sign flips: refitting each run as lme4 does (tests/reference/sign_flip_reference.json)
    ref = pd.DataFrame(json.loads((REFERENCE / "sign_flip_reference.json").read_text())["rows"])
    sig = ref.assign(sig=ref["p"] < 0.05).pivot(index="term", columns="run", values="sig")
    n_flip = int((sig.drop(columns="all").ne(sig["all"], axis=0)).any(axis=1).sum())
    flips = corr.loc["contrasts against Grok-4 whose significance changes in a single run"]
    assert flips["paper_value"] == "0 of 7 (0%, by construction)"
    assert flips["corrected_value"] == f"{n_flip} of 7 ({100 * n_flip / 7:.0f}%)"
    assert n_flip == 1


@pytest.mark.shared
@pytest.mark.slow
def test_ai4math_rank_and_se_tables(ai4math_out):
    ri = _tab(ai4math_out, "rank_instability").set_index("n_runs")
    assert ri.loc[1, "n_unstable"] == 5 and ri.loc[1, "n_leaderboards"] == 12
    assert ri.loc[1, "n_unstable_paper"] == 10
    se = _tab(ai4math_out, "se_vs_runs").set_index("n_runs")
    np.testing.assert_allclose(se.loc[[1, 2, 3], "paper_se"], [0.0288, 0.0285, 0.0273], atol=5e-5)
    # runs shrink only the within-item part: the items-random SE stays above the items-fixed one
    assert (se["se_items_random"] > se["se_items_fixed"]).all()
    ru = _tab(ai4math_out, "rank_intervals")
    assert not {"conf_low", "conf_high"} & set(ru.columns)  # a rank interval is named as one
    assert (ru["rank_low"] <= ru["rank"]).all() and (ru["rank"] <= ru["rank_high"]).all()


# --- any runs table -------------------------------------------------------------------------------

def test_readme_report_command_runs(example_report):
    # README's tour command `evalmix report data/example_runs.csv -o report/`, run as written by
    # the fixture (the other tour commands: test_readme_cli.py)
    assert example_report.code == 0
    assert example_report.stdout.startswith(f"wrote {Path('report', 'index.html')} (")
    assert (example_report.folder / "index.html").exists()
    assert example_report.report.options["n_boot"] == 1000  # the command line's default


def test_example_runs_report(example_report):
    # the report README's command saved (conftest.py; the command line runs below on other tables)
    example_out = example_report.folder
    html = (example_out / "index.html").read_text(encoding="utf-8")
    runs = evalmix.read_runs(EXAMPLE)
    acc = _tab(example_out, "accuracy")
    direct = evalmix.accuracy(runs, ["model", "language", "prompt"]).table
    np.testing.assert_allclose(acc["estimate"], direct["estimate"], atol=1e-12)
    sel = _tab(example_out, "model_selection")
    assert sorted(sel["name"]) == sorted(candidate_formulas(["language", "prompt"]))
    # no item attribute: the slice sections are left out with a line saying so
    assert html.count("Left out: the table has no item attribute") == 2
    assert "Left out: no item attribute" in html
    assert not (example_out / "figures" / "fig5_heatmap.png").exists()
    assert (example_out / "figures" / "fig9_se_curves.pdf").exists()
    # the most accurate model is the default reference
    best = evalmix.accuracy(runs, "model").table.sort_values("estimate").iloc[-1]["model"]
    assert _tab(example_out, "odds_ratios")["contrast"].str.endswith(f"({best})").all()


def test_example_report_figures_are_laid_out(example_report):
    # the layout check of test_figure_layout.py on the report's own figures
    figs = example_report.report.figures
    assert len(figs) >= 5
    bad = {n: layout_problems(f) for n, f in figs.items()}
    assert not {n: p for n, p in bad.items() if p}


def test_report_saves_300_dpi_png_and_truetype_pdf(example_report):
    # a saved report: 300 dpi PNGs, PDFs with TrueType fonts (no Type 3)
    rep, paths = example_report.report, example_report.paths
    fig = rep.figures["fig3_odds_ratios"]
    png = paths["fig3_odds_ratios.png"].read_bytes()
    assert int.from_bytes(png[16:20], "big") == pytest.approx(fig.get_figwidth() * 300, abs=1)
    for name in rep.figures:
        pdf = paths[f"{name}.pdf"].read_bytes()
        assert b"/Subtype /Type3" not in pdf, name


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_example_with_a_condition_as_slice():
    full = pd.read_csv(EXAMPLE)
    some = full[full["item"].isin(sorted(full["item"].unique())[:30])]  # 30 of the 105 items
    rep = evalmix.report(evalmix.read_runs(some), slice="language", reference="model-A", n_boot=50)
    means = rep.tables["language_means"]
    assert means["language"].tolist() == ["EN", "ES"] or means["language"].tolist() == ["ES", "EN"]
    # a condition used as the slice stays in the candidate models
    assert sorted(rep.tables["model_selection"]["name"]) == sorted(candidate_formulas(["language", "prompt"]))
    assert rep.options["reference"] == "model-A"
    assert rep.section("robustness").tables[0][2]["model"].nunique() == 8


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_table_without_slices_or_runs(tmp_path, capsys):
    full = pd.read_csv(EXAMPLE)
    bare = full[(full["run"] == 1) & (full["language"] == "EN") & (full["prompt"] == "ZS")]
    bare = bare.drop(columns=["language", "prompt"])
    path = tmp_path / "bare.csv"
    bare.to_csv(path, index=False)
    out = tmp_path / "out"
    assert main(["report", str(path), "-o", str(out), "--json"]) == 0
    # --json prints strict JSON: the page, the options, one record per table, figure or left-out line
    doc = json.loads(capsys.readouterr().out, parse_constant=lambda c: pytest.fail(f"non-JSON {c}"))
    assert doc["html"].endswith("index.html") and doc["options"]["reference"]
    kinds = {(r["section"], r["kind"]) for r in doc["contents"]}
    assert ("reliability", "left out") in kinds and ("selection", "figure") in kinds
    html = (out / "index.html").read_text(encoding="utf-8")
    assert html.count("Left out: the table has a single run.") == 3
    assert _tab(out, "model_selection")["name"].tolist() == ["model"]
    assert sorted(p.stem for p in (out / "figures").glob("*.png")) == \
        ["fig1_accuracy", "fig2_delta_bic", "fig3_odds_ratios", "health_map"]


def test_user_errors_exit_2(tmp_path, capsys):
    assert main(["report", str(EXAMPLE), "-o", str(tmp_path), "--reference", "nope"]) == 2
    assert "reference='nope' is not a model" in capsys.readouterr().err
    assert main(["report", str(EXAMPLE), "-o", str(tmp_path), "--slice", "domain"]) == 2
    assert "slice='domain' is not a slice column" in capsys.readouterr().err
    assert main(["report", str(tmp_path / "missing.csv"), "-o", str(tmp_path)]) == 2


def test_report_object_renders(example_report):
    import dataclasses

    rep = dataclasses.replace(example_report.report, title="Simulated <study>")
    assert {"table", "figure"} <= set(rep.to_frame()["kind"])
    # the page from the PNGs already written (to_html() alone draws them again)
    images = {n: example_report.paths[f"{n}.png"].read_bytes() for n in rep.figures}
    page = rep.to_html(images)
    assert page.startswith("<!DOCTYPE html>") and "Simulated &lt;study&gt;" in page
    assert "<b>Simulated &lt;study&gt;</b>" in rep._repr_html_()
    assert rep.section("selection").figures[0][2].axes  # a matplotlib Figure


@given(st.lists(st.sampled_from(["language", "prompt", "temperature", "shots"]), min_size=0,
                max_size=4, unique=True))
@settings(max_examples=30, deadline=None)
def test_candidate_formulas_invariants(conditions):
    cands = candidate_formulas(conditions)
    assert len(cands) == len(set(cands)) >= 1
    assert cands[0] == " * ".join(["model"] + conditions)  # the saturated model first
    assert all(c.startswith("model") for c in cands)
    assert (" + ".join(["model"] + conditions)) in cands  # the additive model always
    for c in cands:  # every term is model or a condition
        assert set(re.split(r"\s*[*+]\s*", c)) <= {"model", *conditions}


def test_bayes_section_off_by_default_and_without_pymc(example_report, monkeypatch):
    assert "bayes" not in [s.key for s in example_report.report.sections]
    df = evalmix.simulate.glmm_runs(3, 20, 2, rng=5)
    monkeypatch.setitem(__import__("sys").modules, "pymc", None)  # as if the extra were missing
    rep = evalmix.report(df, n_boot=50, bayes=True)
    assert rep.section("bayes").skipped.startswith("Left out: the Bayesian section needs the bayes extra")


@pytest.mark.slow
def test_bayes_section_rank_probabilities():
    pytest.importorskip("pymc")
    df = evalmix.simulate.glmm_runs(3, 30, 2, model_effects=[-1.0, 0.0, 1.0], rng=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = evalmix.report(df, n_boot=50, bayes=True, rng=3)
    ranks = rep.tables["bayes_ranks"]
    probs = ranks[[f"rank_{r}" for r in (1, 2, 3)]].to_numpy()
    np.testing.assert_allclose(probs.sum(axis=1), 1.0)
    np.testing.assert_allclose(probs.sum(axis=0), 1.0)
    # the posterior ranks follow the maximum-likelihood order of the models
    ml = rep.tables["accuracy_overall"]["model"].tolist()
    assert ranks.sort_values("expected_rank")["model"].tolist() == ml


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_report_from_inspect_logs(tmp_path):
    """RUNS_OR_LOGS: Inspect .eval logs (auto-detected)."""
    import shutil

    logs = tmp_path / "logs"
    logs.mkdir()
    for f in (ROOT / "tests" / "fixtures" / "inspect" / "v0.3.285").glob("*_arith_*.eval"):
        shutil.copy(f, logs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["report", str(logs), "-o", str(tmp_path / "a"), "--scorer", "match",
                     "--n-boot", "50"]) == 0
        expected = evalmix.accuracy(evalmix.read_inspect(logs, "match"), "model").table
    got = _tab(tmp_path / "a", "accuracy_overall").set_index("model").loc[expected["model"]]
    np.testing.assert_allclose(got["estimate"], expected["estimate"], atol=1e-12)


@pytest.mark.slow  # a second whole report from logs (the loader itself: test_io_lm_eval_logs.py)
def test_report_from_lm_eval_samples(tmp_path):
    """RUNS_OR_LOGS: lm-evaluation-harness samples files, named by a glob and --logs."""
    samples = str(ROOT / "tests" / "fixtures" / "lm_eval" / "out" / "*" / "samples_mc_local*.jsonl")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["report", samples, "--logs", "lm-eval", "--metric", "acc", "-o",
                     str(tmp_path / "b"), "--n-boot", "50"]) == 0
    acc = _tab(tmp_path / "b", "accuracy_overall")
    assert sorted(acc["model"]) == ["org/tiny-a", "org/tiny-b"] and (acc["n"] == 18).all()
