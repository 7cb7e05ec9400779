"""One way out: every public function's result speaks one vocabulary and behaves the same.

Each public function of ``evalmix`` (and of ``evalmix.repetitions``, ``evalmix.power`` and
``evalmix.bayes``) is called on the bundled example (small formulas, a tiny posterior).  Every table
it returns — the result's ``to_frame()`` and every table of its ``summary()`` — may only use the
shared vocabulary, the data's own columns and an allow-list of domain names; the spellings the
vocabulary replaced must never come back.  Every result prints as a short table, renders to
LaTeX, Markdown and HTML, serialises to strict JSON, is hashable (by identity) and cannot be
changed through its attributes.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalmix
from evalmix import bayes, power, repetitions
from evalmix.core.result import VOCABULARY, Result, Summary, contrast_label

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "data" / "example_runs.csv"

# spellings the vocabulary replaced: none may name a column of any result table
FORBIDDEN = {"lower", "upper", "low", "high", "ci_low", "ci_high", "ci_lower", "ci_upper",
             "conf_lower", "conf_upper", "or_low", "or_high", "or_lower", "or_upper", "p", "pval",
             "pvalue", "p.value", "p_val", "p_adj", "padj", "p_adj_value", "hdi_low", "hdi_high",
             "lcl", "ucl", "asymp.lcl", "asymp.ucl", "std_err", "stderr", "std.error", "z_value",
             "z.ratio", "chisq", "f", "pred_lower", "pred_upper", "sd_lower", "sd_upper", "mean",
             "sd"}
# ... except where the column is not an estimate's spread: variance components report an SD
FORBIDDEN_EXCEPT = {"sd": {"Random effects"}}

# domain names beside the vocabulary (one meaning each, documented with the result)
DOMAIN = {
    # design and counts
    "term", "contrast", "group", "level", "method", "metric", "n", "k", "n_items", "n_runs",
    "n_rows", "n_instances", "n_boot", "n_resamples", "n_nonzero", "n_attempted", "coverage",
    "n_scored", "n_items_unscored", "n_slices", "n_leaderboards", "n_unstable", "n_discordant",
    "n_sims", "n_failed", "n_flip", "n_raters", "n00", "n01", "n10", "n11", "nobs", "df1", "df2",
    "df_diff", "npar", "conf_level", "scale", "form", "quality", "band", "coefficient", "kind",
    "category",  # a response category of an ordinal model (clmm_emmeans, mode="prob")
    "curve", "name", "parameter", "prior", "source", "check", "observed", "pred_mean", "ppp",
    "verdict", "flipped", "significant", "run", "runs", "component", "share", "width",
    # accuracies and reliability
    "accuracy", "accuracy_a", "accuracy_b", "mean_a", "mean_b", "mean_accuracy", "sd_accuracy",
    "flip_rate", "entropy", "icc", "estimate_mar_item", "worst_case", "best_case", "bounds_low",
    "bounds_high", "bias", "boot_mean", "min_attempts", "alpha", "beta",
    # effect sizes and secondary statistics of a test
    "cohens_d", "correlation", "rank_biserial", "T_plus", "T_minus", "z", "p_chisq", "p_exact",
    "prob_positive",
    # ranks
    "rank", "mean_rank", "expected_rank", "p_best", "mean_logit", "mean_prob", "rate",
    "mean_discordant", "inversions_removed", "position", "rank_set", "rank_low", "rank_high",
    "tie_group", "better_than", "worse_than", "n_better", "n_worse", "mean_rank_1", "mean_rank_2",
    "marginal_rank_low", "marginal_rank_high", "n_unstable_paper", "rate_paper", "quality_paper",
    # variance components and fits
    "var1", "var2", "variance", "sd", "sd_conf_low", "sd_conf_high", "var_between", "var_within", "se_runs",
    "var_between_raw", "eta", "r_hat", "ess_bulk", "ess_tail", "divergences", "loglik", "aic", "bic",
    "deviance", "delta_bic", "bic_weight", "delta_aic", "aic_weight", "lrt_vs", "nested",
    "converged", "singular", "messages", "warnings", "error", "formula", "min", "q1", "median", "q3",
    "max",
    # drift between waves (before/after means, TOST, the judge/system split) and contamination
    "before", "after", "p_tost", "equivalent", "changed", "judge_drift", "judge_conf_low", "judge_conf_high",
    "judge_p_value", "system_change", "system_conf_low", "system_conf_high", "system_p_value", "system_changed",
    "naive_gap", "contaminated",
    # the release gate: a metric's column, summary (mean or a quantile), test, direction, margin, the
    # boundary the interval must clear, and the metric's decision
    "column", "summary", "test", "direction", "margin", "boundary", "decision",
    # calibration and planning
    "honest", "false_positive_rate", "power", "median_ci_halfwidth", "coverage_null",
    "coverage_alt", "fpr_mc_se", "power_mc_se", "cost", "n_prompts", "n_judges",
    # variance by source; the report's contents
    "source", "includes", "mean_square", "variance_raw", "section", "caption",
    # prediction-powered inference: the judge's weight, labels saved, simulated intervals
    "lambda", "ess_gain", "target", "mean_lambda", "mean_width", "coverage_mc_se",
    # item response theory: item parameters, abilities, information
    "discrimination", "discrimination_sd", "intercept", "intercept_sd", "difficulty", "theta", "theta_se",
    "probability", "information",
    # arena battles
    "n_battles", "wins", "losses", "ties",
    # a linear hypothesis: the right-hand side of each row (term holds the row's text)
    "rhs",
    # several judges: the judge factor, pairs of judges, probability-scale contrasts, the planner's
    # accuracy-scale parts of a verdict
    "judge", "judge_a", "judge_b", "difference", "item:judge", "response", "residual",
    # control variates: the unadjusted mean beside the adjusted one, and the gain; runs for a budget
    "plain_estimate", "plain_se", "variance_ratio", "se_one_run",
    # benchmark health: items among the top-k, the dead flag, the benchmark's noise, run noise per model
    "top_accuracy", "top_discrimination", "dead", "reason", "top", "run_sd", "score_se_run", "score_se_item",
    "top_k", "dead_share", "all_solve", "none_solve", "flat", "effective_items", "signal_var", "noise_item",
    "noise_run", "snr", "reliability", "difficulty", "discrimination",
    # version shifts and logistic-regression DIF: the test, the shifted level, the flag, the equating
    "test", "version", "level", "dispersion", "flagged", "pearson", "resid_df", "models", "shift_systematic",
    "shift_items", "equated", "affected",
}


def _judged() -> pd.DataFrame:
    return evalmix.simulate_judged(n_items=60, n_labelled=15, n_runs=2, rng=1)


@functools.cache
def _irt_runs() -> pd.DataFrame:
    return evalmix.simulate.simulate_irt(n_items=40, n_models=5, rng=1)


@functools.cache
def _irt():
    return evalmix.fit_irt(_irt_runs())


def _scored() -> pd.DataFrame:
    """Ratings of two models by three judges (a judge model for the planner's parts)."""
    df = _verdicts()
    rng = np.random.default_rng(3)
    df["y"] = np.clip(np.round(3 + rng.normal(0, 1, len(df))), 1, 5)
    return df


def _verdicts() -> pd.DataFrame:
    rng = np.random.default_rng(2)
    rows = [(m, f"i{i}", r, j) for m in ("A", "B") for i in range(20) for r in (1, 2) for j in ("x", "y", "z")]
    df = pd.DataFrame(rows, columns=["model", "item", "run", "judge"])
    p = 0.3 + 0.3 * (df["model"] == "B") + 0.2 * (df["judge"] == "y")
    return df.assign(correct=(rng.random(len(df)) < p).astype(int))


def _runs() -> pd.DataFrame:
    return evalmix.read_runs(EXAMPLE)


@pytest.fixture(scope="module")
def ctx():
    runs = _runs()
    one = runs[(runs["language"] == "EN") & (runs["prompt"] == "ZS")]
    three = one[one["model"].isin(["model-A", "model-B", "model-C"])]
    rng = np.random.default_rng(1)
    a = rng.random(40)
    b = a + 0.2 * rng.random(40)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = evalmix.glmer("correct ~ model + (1|item) + (1|item:run)", three)
        small = evalmix.glmer("correct ~ model + (1|item)", three)
        lin = evalmix.lmer("correct ~ model + (1|item)", three)
        post = bayes.glmer("correct ~ model + (1|item)", three, draws=50, tune=50, chains=2,
                           rng=1, progressbar=False)
    return {"runs": runs, "one": one, "three": three, "fit": fit, "small": small, "post": post,
            "lin": lin,
            "a": a, "b": b, "ya": (a > 0.5).astype(int), "yb": (b > 0.5).astype(int)}


TINY = dict(draws=50, tune=50, chains=2, rng=1, progressbar=False, cores=1)


def _with_proxy(df: pd.DataFrame) -> pd.DataFrame:
    # a proxy score that tracks the outcome with noise, as a model's own confidence would
    rng = np.random.default_rng(7)
    return df.assign(proxy=df["correct"] * 0.5 + rng.uniform(0, 0.5, len(df)))


def _emm(c, **kw):
    return evalmix.emmeans(c["fit"], "model", **kw)


# name -> how to call it on the example; every public function is either here or in NOT_RESULTS
CALLS = {
    "accuracy": lambda c: evalmix.accuracy(c["runs"], ["model", "language"]),
    "accuracy_bounds": lambda c: evalmix.accuracy_bounds(c["one"], "model"),
    "anova": lambda c: evalmix.anova(c["fit"]),
    "bootstrap_ci": lambda c: evalmix.bootstrap_ci(c["a"], n_boot=200, rng=1),
    "calibrate": lambda c: evalmix.calibrate("mixture", n_sims=4, rng=1, n_questions=100,
                                             n_runs=3),
    "cluster_bootstrap": lambda c: evalmix.cluster_bootstrap(c["one"], by="model", n_boot=100,
                                                             rng=1),
    "cohen_kappa": lambda c: evalmix.cohen_kappa(c["ya"], c["yb"]),
    "compare_models": lambda c: evalmix.compare_models({"full": c["fit"], "small": c["small"]}),
    "compare_pair": lambda c: evalmix.compare_pair(c["one"], "model-A", "model-B"),
    "contrast": lambda c: evalmix.contrast(_emm(c), "trt.vs.ctrl", ref="model-A"),
    "coverage_study": lambda c: evalmix.coverage_study(c["ya"], c["yb"], n_plausible=100,
                                                       n_boot=100, rng=1),
    "emmeans": lambda c: _emm(c, type="response"),
    "ref_grid": lambda c: evalmix.ref_grid(c["fit"]),
    "regrid": lambda c: evalmix.regrid(_emm(c)),
    "contrast (regridded)": lambda c: evalmix.contrast(evalmix.regrid(_emm(c)), "pairwise"),
    "fit_many": lambda c: evalmix.fit_many("correct ~ model + (1|item)",
                                           c["runs"][c["runs"]["model"].isin(["model-A", "model-B"])],
                                           by="language", n_jobs=1),
    "fleiss_kappa": lambda c: evalmix.fleiss_kappa(np.c_[c["ya"], c["yb"], c["ya"]]),
    "flip_rate": lambda c: evalmix.flip_rate(c["runs"], ["model", "language", "prompt"]),
    "friedman": lambda c: evalmix.friedman(c["one"]),
    "glmer": lambda c: c["fit"],
    "lmer": lambda c: c["lin"],
    "LmerResult.summary": lambda c: c["lin"].summary(ddf="Kenward-Roger"),
    "anova (lmer)": lambda c: evalmix.anova(c["lin"]),
    "emmeans (lmer)": lambda c: evalmix.emmeans(c["lin"], "model"),
    "contrast (lmer)": lambda c: evalmix.contrast(evalmix.emmeans(c["lin"], "model"), "pairwise",
                                                  adjust="tukey"),
    "clmm": lambda c: evalmix.clmm("rating ~ temp + contact + (1|judge)",
                                   ROOT / "tests" / "reference" / "clmm_wine.csv"),
    "glmmtmb": lambda c: evalmix.glmmtmb("score ~ model + (1|item)",
                                         ROOT / "tests" / "reference" / "glmmtmb_sim.csv", "beta"),
    "check_overdispersion": lambda c: evalmix.check_overdispersion(evalmix.glmmtmb(
        "cbind(k, n - k) ~ model + (1|item)", ROOT / "tests" / "reference" / "glmmtmb_sim.csv",
        "binomial")),
    "icc": lambda c: evalmix.icc(c["runs"], ["model", "language", "prompt"]),
    "instance_bootstrap": lambda c: evalmix.instance_bootstrap(c["ya"], c["yb"], n_boot=100,
                                                               rng=1),
    "krippendorff_alpha": lambda c: evalmix.krippendorff_alpha(np.c_[c["ya"], c["yb"]].T),
    "latent_icc": lambda c: evalmix.latent_icc(c["fit"]),
    "mcnemar": lambda c: evalmix.mcnemar(c["ya"], c["yb"]),
    "paired_bootstrap": lambda c: evalmix.paired_bootstrap(c["a"], c["b"], n_boot=200, rng=1),
    "paired_t_runs": lambda c: evalmix.paired_t_runs(c["a"][:6], c["b"][:6]),
    "pass_k": lambda c: evalmix.pass_k(c["one"], 2),
    "pass_k_model": lambda c: evalmix.pass_k_model(c["one"], 5),
    "permutation_test": lambda c: evalmix.permutation_test(c["a"], c["b"], n_resamples=200,
                                                           rng=1),
    "rank_instability": lambda c: evalmix.rank_instability(c["runs"], ["language", "prompt"]),
    "rank_sets": lambda c: evalmix.rank_sets(c["one"]),
    "rank_sets_draws": lambda c: evalmix.rank_sets_draws(pd.DataFrame(
        np.random.default_rng(1).normal([0.0, 0.2, 1.0], 0.1, size=(400, 3)), columns=["x", "y", "z"])),
    "rank_sets_glmm": lambda c: evalmix.rank_sets_glmm(c["fit"]),
    "rank_sets_normal": lambda c: evalmix.rank_sets_normal([0.1, 0.5, 0.6], se=[0.1, 0.1, 0.1],
                                                           labels=["x", "y", "z"]),
    "rank_sets_posterior": lambda c: evalmix.rank_sets_posterior(c["post"]),
    "rank_uncertainty": lambda c: evalmix.rank_uncertainty(c["one"], n_boot=50, rng=1),
    "rank_uncertainty_glmm": lambda c: evalmix.rank_uncertainty_glmm(c["fit"], n_draws=200,
                                                                     rng=1),
    "run_level_ci": lambda c: evalmix.run_level_ci(c["a"][:5]),
    "variance_sources": lambda c: evalmix.variance_sources(c["runs"], ["model", "language"],
                                                           prompt="prompt"),
    "plan_sources": lambda c: evalmix.plan_sources(evalmix.variance_sources(
        c["runs"][(c["runs"]["model"] == "model-A") & (c["runs"]["language"] == "EN")],
        prompt="prompt"), se=0.03),
    "report": lambda c: evalmix.report(c["three"], n_boot=100),
    "wilcoxon": lambda c: evalmix.wilcoxon(c["a"], c["b"]),
    "ppi_mean": lambda c: evalmix.ppi_mean(_judged(), method=["ppi++", "judge_only"]),
    "ppi_difference": lambda c: evalmix.ppi_difference(_judged(), a="a", b="b", method=["ppi", "judge_only"]),
    "ppi_coverage_study": lambda c: evalmix.ppi_coverage_study(n_items=60, n_labelled=15, n_runs=2,
                                                               n_sims=5, rng=1),
    "bradley_terry": lambda c: evalmix.bradley_terry(ROOT / "tests" / "reference" / "arena_battles.csv"),
    "judge_study": lambda c: evalmix.judge_study(_verdicts()),
    "fit_irt": lambda c: _irt(),
    "fit_irt_bayes": lambda c: evalmix.fit_irt_bayes(_irt_runs().head(120), draws=20, tune=20, chains=1),
    "estimate_accuracy": lambda c: evalmix.estimate_accuracy(_irt(), _irt_runs().head(30)),
    "adaptive_accuracy": lambda c: evalmix.adaptive_accuracy(_irt(), _irt_runs(), ["m0"], n_items=5),
    "judge_agreement": lambda c: evalmix.judge_agreement(_verdicts()),
    "judge_components_from_fit": lambda c: evalmix.judge_components_from_fit(
        evalmix.lmer("y ~ model + (1|judge) + (1|item)", _scored())),
    "judge_plan_components": lambda c: evalmix.judge_plan_components(_scored(), outcome="y"),
    "plan_judges": lambda c: evalmix.plan_judges(
        evalmix.judge_components(0.3, sd_item=1.0, sd_response=0.5, sd_judge=0.3), se=0.04),
    # evalmix.repetitions
    "repetitions.se_vs_runs": lambda c: repetitions.se_vs_runs(
        c["runs"], ["model", "language", "prompt"], max_runs=3),
    "repetitions.slice_se_by_runs": lambda c: repetitions.slice_se_by_runs(
        c["runs"], ["model", "language", "prompt"]),
    "repetitions.variance_components": lambda c: repetitions.variance_components(
        c["runs"], ["model", "language", "prompt"]),
    "repetitions.components_from_fit": lambda c: repetitions.components_from_fit(c["fit"]),
    "repetitions.accuracy_components": lambda c: repetitions.accuracy_components(0.5, 1.0, 0.3),
    "repetitions.plan": lambda c: repetitions.plan(repetitions.components_from_fit(c["fit"]),
                                                   se=0.03),
    "repetitions.sign_flip_rate": lambda c: repetitions.sign_flip_rate(
        c["three"], "correct ~ model + (1|item)", ref="model-A"),
    # evalmix.bayes
    "bayes.glmer": lambda c: c["post"],
    # the twins, on scores made from the same rows (few draws: the tables are what is checked)
    "bayes.lmer": lambda c: bayes.lmer("correct ~ model + (1|item)", c["three"], **TINY),
    "bayes.clmm": lambda c: bayes.clmm("rating ~ model + (1|item)", c["three"].assign(
        rating=np.random.default_rng(1).integers(1, 4, len(c["three"]))), **TINY),
    "bayes.glmmtmb": lambda c: bayes.glmmtmb("score ~ model + (1|item)", c["three"].assign(
        score=(c["three"]["correct"] + np.random.default_rng(1).uniform(0.1, 0.9, len(c["three"]))) / 2),
        **TINY),
    "bayes.default_priors": lambda c: bayes.default_priors("correct ~ model + (1|item)",
                                                           c["three"]),
    # results of methods
    "GlmerResult.summary": lambda c: c["fit"].summary(),
    "clmm_emmeans": lambda c: evalmix.clmm_emmeans(evalmix.clmm(
        "rating ~ model + (1|item)", ROOT / "tests" / "reference" / "clmm_judge.csv"),
        "model", mode="prob"),
    "ClmmResult.summary": lambda c: evalmix.clmm("rating ~ temp + contact + (1|judge)",
                                                 ROOT / "tests" / "reference" / "clmm_wine.csv").summary(),
    "BayesGlmerResult.ranks": lambda c: c["post"].ranks("model"),
    "BayesGlmerResult.posterior_predictive": lambda c: c["post"].posterior_predictive(
        by="model", rng=1),
    "BayesGlmerResult.summary": lambda c: c["post"].summary(),
    "contrast (odds ratio)": lambda c: evalmix.contrast(_emm(c, type="response"), "pairwise"),
    "contrast (posterior)": lambda c: evalmix.contrast(evalmix.emmeans(c["post"], "model")),
    "linear_hypothesis": lambda c: evalmix.linear_hypothesis(c["fit"], "modelmodel-B = modelmodel-C"),
    "GlmerResult.wald_test": lambda c: c["fit"].wald_test(["modelmodel-B = 0", "modelmodel-C = 0"]),
    "LmerResult.wald_test": lambda c: c["lin"].wald_test("modelmodel-B = modelmodel-C", test="F"),
    "BayesGlmerResult.wald_test": lambda c: c["post"].wald_test("modelmodel-B = modelmodel-C"),
    # anytime-valid confidence sequences
    "confidence_sequence": lambda c: evalmix.confidence_sequence(c["a"], target_width=0.5),
    "sequential_accuracy": lambda c: evalmix.sequential_accuracy(c["one"], "model-A", rng=1),
    "sequential_difference": lambda c: evalmix.sequential_difference(c["one"], "model-A", "model-B"),
    # the release gate
    "gate": lambda c: evalmix.gate(c["one"], "model-A", "model-B",
                                   {"looks": 20, "metrics": [{"column": "correct", "margin": 0.1}]}),
    # control variates and the runs-per-item allocation
    "control_variate_mean": lambda c: evalmix.control_variate_mean(c["b"], c["a"], proxy_mean=0.5),
    "control_variate_accuracy": lambda c: evalmix.control_variate_accuracy(
        _with_proxy(c["one"]), "model-A", proxy="proxy", proxy_mean=0.5),
    "control_variate_difference": lambda c: evalmix.control_variate_difference(
        _with_proxy(c["one"]), "model-A", "model-B", proxy="proxy", proxy_mean=0.0),
    # benchmark health and version shifts
    "item_health": lambda c: evalmix.item_health(c["runs"], top_k=4),
    "version_shift": lambda c: evalmix.version_shift(
        evalmix.simulate.simulate_versions(n_items=20, n_models=6, n_runs=1, rng=1)[0]),
    "logistic_dif": lambda c: evalmix.logistic_dif(
        pd.read_csv(Path(__file__).resolve().parents[1] / "reference" / "dif_responses.csv"),
        group="version", matching="ability"),
    "repetitions.optimal_runs": lambda c: repetitions.optimal_runs(
        repetitions.variance_components(c["one"], "model"), budget=2000, cost_item=3),
    # drift between waves, contamination by training data
    "drift": lambda c: evalmix.drift(c["one"], c["one"], judge=c["one"]),
    "contamination_test": lambda c: evalmix.contamination_test(evalmix.simulate.contaminated_runs(60, 1, rng=1)),
}

# public functions that return no table: readers, formatters, scalars, arrays
NOT_RESULTS = {
    "load_table", "read_battles", "read_runs", "read_inspect", "read_lm_eval", "read_helm", "read_logs", "read_openai_evals", "read_tau_bench",
    "read_swebench", "read_mteb", "read_lighteval", "read_opencompass", "read_inspect_evals", "read_arena_battles",
    "aggregate_runs", "ensure_runs", "schema_of", "format_p", "to_latex",
    "to_markdown", "binom_ci", "cohens_d", "bic_evidence", "adjust_pvalues", "reference_grid",
    "tie_groups", "power_clustered", "power_paired_proportions", "power_two_proportions",
    "sample_size_clustered", "sample_size_paired_proportions", "sample_size_two_proportions",
    "bayes.available_samplers", "select_items", "item_information", "simulate_judged", "read_mt_bench", "judge_components", "judge_se",
    "register_contrast", "contrast_families",  # the contrast-family registry: no table
    "load_example", "example_path",  # the bundled example tables: data, as read_runs
    "read_rule",  # the gate's rule, parsed
}


def _public_functions() -> set[str]:
    names = {n for n in evalmix.__all__ if inspect.isfunction(getattr(evalmix, n))}
    for prefix, mod in (("repetitions", repetitions), ("bayes", bayes)):
        names |= {f"{prefix}.{n}" for n in mod.__all__ if inspect.isfunction(getattr(mod, n))}
    return names


def _power_functions() -> set[str]:
    return {n for n in power.__all__ if inspect.isfunction(getattr(power, n))}


def test_every_public_function_is_walked():
    missing = _public_functions() - set(CALLS) - NOT_RESULTS
    assert not missing, f"add these to CALLS (or NOT_RESULTS if they return no table): {missing}"


def test_no_public_function_returns_a_bare_frame():
    # a table of results is a Result (to_frame, to_latex, repr with its scale); only readers and
    # formatters in NOT_RESULTS hand back plain data
    modules = {"": evalmix, "repetitions.": repetitions, "bayes.": bayes}
    bare = []
    for name in sorted(_public_functions() - NOT_RESULTS):
        prefix, _, short = name.rpartition(".")
        func = getattr(modules[f"{prefix}." if prefix else ""], short)
        if "DataFrame" in str(inspect.signature(func).return_annotation):
            bare.append(name)
    assert not bare, f"these return a bare DataFrame; return a Result: {bare}"


def test_power_functions_return_numbers_not_tables():
    # evalmix.power answers with numbers (a power, a sample size, an effect): nothing to name
    from scipy import stats

    h = 2 * np.arcsin(np.sqrt(0.6)) - 2 * np.arcsin(np.sqrt(0.5))  # Cohen's h, as pwr.2p.test
    z = stats.norm.isf(0.025)
    closed = stats.norm.cdf(h * np.sqrt(200) - z) + stats.norm.cdf(-h * np.sqrt(200) - z)
    assert power.power_two_proportions(0.5, 0.6, 400) == pytest.approx(closed, rel=1e-6)
    assert isinstance(power.sample_size_two_proportions(0.5, 0.6), float)
    assert isinstance(power.clustered_variance_components(np.ones((3, 5)), np.zeros((3, 5))), dict)
    for name in _power_functions():
        doc = inspect.getdoc(getattr(power, name)) or ""
        assert "DataFrame" not in inspect.signature(getattr(power, name)).return_annotation, name
        assert doc, name


def _check_columns(where: str, df: pd.DataFrame, data_columns: set[str], table: str = "") -> None:
    cols = [str(c) for c in df.columns]
    for c in cols:
        if c.lower() in FORBIDDEN and table not in FORBIDDEN_EXCEPT.get(c.lower(), ()):
            pytest.fail(f"{where}{' / ' + table if table else ''}: column {c!r} is a spelling the "
                        f"vocabulary replaced")
    allowed = set(VOCABULARY) | DOMAIN | data_columns
    unknown = [c for c in cols if c not in allowed and not c.startswith(("rank_", "n_", "model_"))]
    assert not unknown, f"{where}: columns outside the vocabulary and the domain list: {unknown}"


def _data_columns(c) -> set[str]:
    return {str(x) for x in c["runs"].columns}


# Fits that compile a sampler's model of their own (5-15 CPU seconds each: PyTensor's numba
# backend): the Bayesian twins (one result class, BayesFamilyResult, a BayesGlmerResult, whose
# vocabulary the default step checks through bayes.glmer's compiled kernel) and the Bayesian IRT
# fit run in the slow step.
SLOW_CALLS = {"bayes.clmm", "bayes.glmmtmb", "bayes.lmer", "fit_irt_bayes"}


def _names(names) -> list:
    return [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_CALLS else n for n in names]


class _Outputs(dict):
    """Each call's result, made on first use: a run that leaves out the slow names never pays
    for their fits."""

    def __init__(self, ctx):
        super().__init__()
        self._ctx = ctx

    def __missing__(self, name: str):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            self[name] = CALLS[name](self._ctx)
        return self[name]


@pytest.fixture(scope="module")
def outputs(ctx):
    return _Outputs(ctx)


def test_slow_calls_are_walked():
    assert SLOW_CALLS <= set(CALLS)


@pytest.mark.parametrize("name", _names(CALLS))
def test_tables_use_the_vocabulary(outputs, ctx, name):
    obj = outputs[name]
    data_cols = _data_columns(ctx)
    if isinstance(obj, pd.DataFrame):
        _check_columns(name, obj, data_cols)
        return
    assert isinstance(obj, (Result, Summary)), f"{name} returned {type(obj).__name__}"
    _check_columns(name, obj.to_frame(), data_cols)
    summ = obj if isinstance(obj, Summary) else obj.summary()
    assert isinstance(summ, Summary), f"{name}.summary() is {type(summ).__name__}, not Summary"
    for table, df in summ.tables.items():
        _check_columns(name, df, data_cols, table)


# one meaning per interval name: conf_low/conf_high bound an estimate (they bracket a column that
# holds it), rank_low/rank_high bound a rank (1 = best); a rank interval never takes conf_ names
ESTIMATE_COLUMNS = ("estimate", "accuracy", "icc", "pred_mean", "observed", "odds_ratio", "sd",
                    "mean_accuracy", "variance", "rate", "alpha", "correlation")
RANK_COLUMNS = ("rank", "mean_rank", "expected_rank")


def _brackets(df: pd.DataFrame, low: str, high: str, candidates: tuple[str, ...]) -> list[str]:
    """The candidate columns lying within [low, high] on every row where all three are finite."""
    out = []
    for c in candidates:
        if c not in df.columns or not pd.api.types.is_numeric_dtype(df[c]):
            continue
        lo, hi, v = (pd.to_numeric(df[x], errors="coerce").to_numpy(float) for x in (low, high, c))
        ok = np.isfinite(lo) & np.isfinite(hi) & np.isfinite(v)
        slack = 1e-9 * np.maximum(1.0, np.abs(v))
        if ok.any() and np.all((lo[ok] - slack[ok] <= v[ok]) & (v[ok] <= hi[ok] + slack[ok])):
            out.append(c)
    return out


def _bounded(df: pd.DataFrame, low: str, high: str) -> bool:
    """Whether some row has both bounds finite (an interval that is all NaN says nothing)."""
    lo, hi = (pd.to_numeric(df[x], errors="coerce").to_numpy(float) for x in (low, high))
    return bool((np.isfinite(lo) & np.isfinite(hi)).any())


def _check_intervals(where: str, df: pd.DataFrame) -> None:
    cols = set(map(str, df.columns))
    if {"conf_low", "conf_high"} <= cols and _bounded(df, "conf_low", "conf_high"):
        assert _brackets(df, "conf_low", "conf_high", ESTIMATE_COLUMNS), (
            f"{where}: conf_low/conf_high bracket no estimate column; a rank interval is "
            "rank_low/rank_high")
        assert not _brackets(df, "conf_low", "conf_high", ("rank",)) or "estimate" in cols, (
            f"{where}: conf_low/conf_high is a rank interval; name it rank_low/rank_high")
    if {"rank_low", "rank_high"} <= cols and _bounded(df, "rank_low", "rank_high"):
        assert _brackets(df, "rank_low", "rank_high", RANK_COLUMNS), (
            f"{where}: rank_low/rank_high bracket no rank column")


def test_interval_check_catches_a_rank_interval_named_conf():
    old = pd.DataFrame({"model": ["a", "b"], "accuracy": [0.8, 0.6], "rank": [1, 2],
                        "mean_rank": [1.1, 1.9], "conf_low": [1, 1], "conf_high": [2, 2]})
    with pytest.raises(AssertionError, match="rank_low/rank_high"):
        _check_intervals("old rank table", old)
    _check_intervals("new rank table", old.rename(columns={"conf_low": "rank_low",
                                                           "conf_high": "rank_high"}))
    estimate = pd.DataFrame({"estimate": [0.5], "conf_low": [0.4], "conf_high": [0.6]})
    _check_intervals("estimate table", estimate)


@pytest.mark.parametrize("name", _names(CALLS))
def test_interval_names_have_one_meaning(outputs, name):
    obj = outputs[name]
    if isinstance(obj, pd.DataFrame):
        _check_intervals(name, obj)
        return
    _check_intervals(name, obj.to_frame())
    summ = obj if isinstance(obj, Summary) else obj.summary()
    for table, df in summ.tables.items():
        _check_intervals(f"{name} / {table}", df)


def test_rank_intervals_are_named_as_ranks(outputs):
    for name in ("rank_uncertainty", "rank_uncertainty_glmm", "rank_sets", "rank_sets_draws",
                 "rank_sets_glmm", "bradley_terry"):
        tab = outputs[name].to_frame()
        assert {"rank_low", "rank_high"} <= set(tab.columns), name
        assert (tab["rank_low"].dropna() >= 1).all() and (tab["rank_low"] <= tab["rank_high"]).all()
    for name in ("rank_uncertainty", "rank_uncertainty_glmm"):
        assert not {"conf_low", "conf_high"} & set(outputs[name].to_frame().columns), name


RESULTS = list(CALLS)  # every public function returns a result object


@pytest.mark.parametrize("name", _names(RESULTS))
def test_results_print_short_tables(outputs, name):
    obj = outputs[name]
    if isinstance(obj, pd.DataFrame):
        pytest.fail(f"{name} is listed as a result but returned a DataFrame")
    text = repr(obj)
    lines = text.splitlines()
    assert len(lines) <= 45, f"{name}: repr has {len(lines)} lines"
    assert "array(" not in text and "DataFrame(" not in text, f"{name}: repr dumps its fields"
    assert not text.startswith(f"{type(obj).__name__}("), f"{name}: dataclass repr"
    # the table is there (a fit's summary prints it as R does: the terms without a column name)
    assert str(obj.to_frame().columns[0]) in text or (isinstance(obj, Summary)
                                                       and str(obj.to_frame().iloc[0, 0]) in text)
    html = obj._repr_html_()
    assert "<table" in html
    latex = obj.to_latex()
    assert isinstance(latex, str) and "\\begin{tabular}" in latex
    assert "|" in obj.to_markdown()
    summ = obj if isinstance(obj, Summary) else obj.summary()
    assert str(summ).strip() and "<table" in summ._repr_html_()
    assert "\\begin{tabular}" in summ.to_latex() and "|" in summ.to_markdown()
    json.dumps(obj.to_dict(), allow_nan=False, default=str)


@pytest.mark.parametrize("name", _names(n for n in RESULTS if not n.endswith(".summary")))
def test_results_are_immutable_and_hashable(outputs, name):
    res = outputs[name]
    assert isinstance(res, Result)
    assert hash(res) == hash(res) and res == res  # identity: hashing never raises
    params = type(res).__dataclass_params__
    assert params.frozen and not params.eq and not params.repr, type(res).__name__
    before = res.to_frame()
    for f in dataclasses.fields(res):
        value = getattr(res, f.name)
        if isinstance(value, np.ndarray) and value.size:
            assert not value.flags.writeable, f"{name}.{f.name} is a writeable array"
            with pytest.raises(ValueError):
                value.flat[0] = 99
        elif isinstance(value, (pd.DataFrame, pd.Series)) and value.size:
            frame = value.to_frame() if isinstance(value, pd.Series) else value
            numeric = [i for i, t in enumerate(frame.dtypes) if pd.api.types.is_float_dtype(t)]
            if numeric:
                snapshot = value.copy()
                if isinstance(value, pd.Series):
                    value.iloc[0] = 99.0  # edits a copy: the result does not see it
                else:
                    value.iloc[0, numeric[0]] = 99.0
                assert getattr(res, f.name).equals(snapshot), f"{name}.{f.name} changed"
        with pytest.raises(dataclasses.FrozenInstanceError):
            setattr(res, f.name, None)
    pd.testing.assert_frame_equal(res.to_frame(), before)


def test_fixef_edit_cannot_change_the_fit(ctx):
    fit = ctx["fit"]
    before = fit.coef_table()
    fixef, vcov = fit.fixef, fit.vcov  # the caller's copies, edited
    fixef.iloc[0] = 99
    vcov.iloc[0, 0] = 99
    pd.testing.assert_frame_equal(fit.coef_table().to_frame(), before.to_frame())
    assert not fit.hessian.flags.writeable
    # random effects come from values computed when the fit ended, not from a live solver
    r1 = fit.ranef()
    fit.predict(ctx["three"].head(5))
    pd.testing.assert_frame_equal(fit.ranef(), r1)
    assert not hasattr(fit._model, "ld") and not hasattr(fit._model, "ev")


def test_flip_rate_result_is_hashable(outputs):
    res = outputs["flip_rate"]
    assert len({res, res}) == 1
    assert res != evalmix.flip_rate(_runs(), ["model", "language", "prompt"])  # identity


def test_glmer_and_bayes_summaries_are_one_type(outputs):
    ml, post = outputs["GlmerResult.summary"], outputs["BayesGlmerResult.summary"]
    assert isinstance(ml, Summary) and type(post) is Summary  # a fit's prints in lme4's layout
    assert "Fixed effects" in ml.tables and "Parameters" in post.tables
    for s in (ml, post):
        assert "scale: log-odds" in "\n".join(s.header)


def test_contrast_labels_state_the_scale(outputs, ctx):
    link = outputs["contrast"]
    assert link.scale == "log-odds"
    assert link.to_frame()["contrast"].tolist()[0] == "(model-B) - (model-A)"
    assert "scale: log-odds" in repr(link)
    ratio = outputs["contrast (odds ratio)"]
    tab = ratio.to_frame()
    assert ratio.scale == "odds ratio" and tab["contrast"].iloc[0] == "(model-A) / (model-B)"
    assert "estimate" not in tab.columns and "odds_ratio" in tab.columns
    # the same contrast on both scales: one the exponential of the other
    lo = evalmix.contrast(_emm(ctx), "pairwise").to_frame()
    np.testing.assert_allclose(tab["odds_ratio"], np.exp(lo["estimate"]), rtol=1e-12)
    np.testing.assert_allclose(tab["p_adjusted"], lo["p_adjusted"], rtol=1e-12)
    # paired comparisons, sign-flip tables and the shared helper use the same convention
    assert outputs["compare_pair"].to_frame()["contrast"].item() == "(model-B) - (model-A)"
    assert set(outputs["repetitions.sign_flip_rate"].to_frame()["contrast"]) == {
        "(model-B) - (model-A)", "(model-C) - (model-A)"}
    assert contrast_label("b", "a", scale="odds ratio") == "b / a"


def test_cli_contrasts_use_the_python_labels(ctx, tmp_path):
    from evalmix.cli import main

    path = tmp_path / "three.csv"
    ctx["three"].to_csv(path, index=False)
    import contextlib
    import io

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["fit", str(path), "--formula", "correct ~ model + (1|item)", "--emmeans",
                     "model", "--contrast", "trt.vs.ctrl", "--ref", "model-A", "--json"]) == 0
    res = json.loads(out.getvalue())
    direct = evalmix.contrast(evalmix.emmeans(ctx["small"], "model"), "trt.vs.ctrl",
                              ref="model-A").to_frame()
    assert [r["contrast"] for r in res["contrasts"]["table"]] == direct["contrast"].tolist()
    assert res["contrasts"]["scale"] == "log-odds"


def _all_result_classes() -> list[type]:
    import importlib
    import pkgutil

    # _fused_cabi holds nutpie's numba callbacks and no result: importing it compiles them (about
    # 8 CPU seconds without numba's cache); the slow step's doctest run imports it
    skip = {"evalmix.tests", "evalmix.__main__", "evalmix.bayes._nutpie_model",
            "evalmix.bayes._fused_cabi"}
    for m in pkgutil.walk_packages(evalmix.__path__, "evalmix."):
        if m.name not in skip:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                importlib.import_module(m.name)
    out, todo = [], list(Result.__subclasses__())
    while todo:
        cls = todo.pop()
        out.append(cls)
        todo += cls.__subclasses__()
    return sorted(set(out), key=lambda c: f"{c.__module__}.{c.__qualname__}")


def test_every_result_class_is_frozen_with_identity_hash_and_the_shared_repr():
    classes = [c for c in _all_result_classes() if c.__module__.startswith("evalmix.")]
    assert len(classes) >= 30
    for cls in classes:
        params = cls.__dataclass_params__
        where = f"{cls.__module__}.{cls.__qualname__}"
        assert params.frozen, f"{where} is not frozen"
        assert not params.eq, f"{where}: declare @dataclass(frozen=True, eq=False, repr=False)"
        assert not params.repr, f"{where} prints a dataclass dump"
        assert cls.__hash__ is object.__hash__, f"{where} is not hashable by identity"
        assert (cls.summary is Result.summary or cls.summary is evalmix.MixedResult.summary
                or "summary" in cls.__dict__), where


# Level names from printable ASCII (the operators among it), non-ASCII letters, a combining mark,
# invisible and right-to-left characters, an emoji, and look-alikes of the operators (minus sign,
# full-width hyphen, division slash, asterisk operator) that are not operators.  An explicit
# alphabet: st.text() of any character builds hypothesis' Unicode table first (about 3 CPU s in a
# fresh clone, where .hypothesis/ is empty).
LABEL_CHARS = [chr(c) for c in range(32, 127)] + list("\t\néüßχΔ²×≤中文\u0301\u200b\u200f\u00a0😀"
                                                       "\u2212\uff0d\u2215\u2217")
LABELS = st.text(alphabet=st.sampled_from(LABEL_CHARS), min_size=1, max_size=12)


@settings(max_examples=60, deadline=None)
@given(LABELS, LABELS, st.sampled_from(["log-odds", "odds ratio", "probability", "accuracy"]))
def test_contrast_labels_parenthesise_and_name_the_scale(a, b, scale):
    label = contrast_label(a, b, scale=scale)
    sep = " / " if scale == "odds ratio" else " - "
    wrap = [f"({x})" if any(ch in x for ch in "-+/*") else x for x in (a, b)]
    assert label == f"{wrap[0]}{sep}{wrap[1]}"


@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(-1e6, 1e6), min_size=1, max_size=20))
def test_arrays_and_frames_of_a_result_cannot_be_changed(values):
    from evalmix.stats.resampling import BootstrapResult

    dist = np.array(values)
    res = BootstrapResult(estimate=float(dist.mean()), se=0.0, conf_low=0.0, conf_high=0.0,
                          method="percentile", conf_level=0.95, n_boot=dist.size,
                          distribution=dist, details={"n": dist.size})
    got = res.distribution
    assert not got.flags.writeable
    with pytest.raises(ValueError):
        got[0] = 1.0
    with pytest.raises(TypeError):
        res.details["n"] = 0  # a read-only mapping
    dist[:] = 0.0  # the caller's array: the result holds its own copy
    np.testing.assert_array_equal(res.distribution, values)
