"""Cumulative-link mixed models (``evalmix.clmm``) against ``ordinal::clmm``.

The reference values come from tests/reference/clmm_reference.R (ordinal 2022.11.16), on ordinal's
wine data and a simulated judge-rating design (6 models x 60 items x 3 runs, ratings 1-5). The
tolerances are the GLMM parity ones: logLik at least R's - 1e-3, estimates (thresholds and
location effects) 2e-3, SEs 1 %, random-effect SDs 2e-3.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import ArgumentError, DataError, FormulaError

REF_DIR = Path(__file__).parents[1] / "reference"
REF = json.loads((REF_DIR / "clmm_reference.json").read_text())
WINE = pd.read_csv(REF_DIR / "clmm_wine.csv")
JUDGE = pd.read_csv(REF_DIR / "clmm_judge.csv")

CASES = {
    "wine_logit": ("rating ~ temp + contact + (1|judge)", "wine", "logit", "flexible"),
    "wine_probit": ("rating ~ temp + contact + (1|judge)", "wine", "probit", "flexible"),
    "wine_equidistant": ("rating ~ temp + contact + (1|judge)", "wine", "logit", "equidistant"),
    "wine_crossed": ("rating ~ temp + contact + (1|judge) + (1|bottle)", "wine", "logit", "flexible"),
    "judge_nested": ("rating ~ model + (1|item) + (1|item:run)", "judge", "logit", "flexible"),
}


@pytest.fixture(scope="module")
def fits() -> dict[str, evalmix.ClmmResult]:
    out = {}
    for name, (formula, data, link, threshold) in CASES.items():
        out[name] = evalmix.clmm(formula, WINE if data == "wine" else JUDGE, link=link,
                                 threshold=threshold)
    return out


@pytest.mark.parametrize("name", list(CASES))
def test_parity_with_ordinal(fits, name):
    fit, ref = fits[name], REF[name]
    assert fit.converged
    assert fit.loglik >= ref["loglik"] - 1e-3
    assert fit.loglik == pytest.approx(ref["loglik"], abs=1e-3)
    assert list(fit.coef.index) == ref["coef_names"]
    np.testing.assert_allclose(fit.coef.to_numpy(), ref["estimate"], atol=2e-3)
    tab = fit.coef_table()
    np.testing.assert_allclose(tab["se"].to_numpy(), ref["se"], rtol=0.01)
    sd = np.atleast_1d(ref["sd"])
    assert list(fit.varcorr["group"]) == list(np.atleast_1d(ref["sd_groups"]))
    np.testing.assert_allclose(fit.varcorr["sd"].to_numpy(), sd, atol=2e-3)
    # vcov's random-effect rows: log SD (one term) or SD (several), boundary SDs left out
    st = fit.vcov.loc[[n for n in fit.vcov.index if n.startswith("ST")]]
    np.testing.assert_allclose(np.sqrt(np.diag(st[st.index])), np.atleast_1d(ref["se_log_sd"]),
                               rtol=0.01)
    assert fit.df == ref["df"] and fit.nobs == ref["nobs"]
    assert fit.aic == pytest.approx(ref["aic"], abs=2e-3)
    assert fit.bic == pytest.approx(ref["bic"], abs=2e-3)


def test_result_tables_and_print(fits):
    fit = fits["wine_logit"]
    tab = fit.to_frame()
    assert list(tab.columns) == ["term", "kind", "estimate", "se", "statistic", "p_value",
                                 "conf_low", "conf_high"]
    assert tab["kind"].tolist() == ["threshold"] * 4 + ["location"] * 2
    row = tab.set_index("term").loc["tempwarm"]
    # R: z value 5.145, Pr(>|z|) 2.68e-07
    assert row["statistic"] == pytest.approx(5.145, abs=2e-3)
    assert row["p_value"] == pytest.approx(2.68e-07, rel=0.02)
    assert row["conf_low"] == pytest.approx(row["estimate"] - 1.959964 * row["se"], abs=1e-6)
    text = str(fit)
    assert text.startswith("Cumulative Link Mixed Model fitted with the Laplace approximation")
    for piece in ("judge  (Intercept) 1.279    1.131", "Threshold coefficients:",
                  "1|2  -1.6237     0.6824  -2.379", "Number of groups:  judge 9"):
        assert piece in text
    assert fit.thresholds.index.tolist() == ["1|2", "2|3", "3|4", "4|5"]
    assert fit.beta.index.tolist() == ["tempwarm", "contactyes"]
    assert 10 < fit.cond_h < 100  # R: cond.H 2.8e+01
    assert fit.cond_h == pytest.approx(28, abs=0.5)
    assert "tempwarm" in fit.to_latex()
    assert "1\\|2" in fit.to_markdown()
    assert set(fit.summary().tables) == {"Fixed effects", "Random effects"}
    ranef = fit.ranef()
    assert ranef["group"].eq("judge").all() and len(ranef) == 9
    coef = fit.coef
    coef.iloc[0] = 99.0  # a copy: the fit is unchanged
    assert fit.coef.iloc[0] == pytest.approx(REF["wine_logit"]["estimate"][0], abs=2e-3)
    with pytest.raises(AttributeError):
        fit.loglik = 0.0


def test_equidistant_thresholds_are_equally_spaced(fits):
    fit = fits["wine_equidistant"]
    assert fit.thresholds.index.tolist() == ["threshold.1", "spacing"]
    assert fit.df == 5


def test_ordered_categorical_response_matches_integer_scores():
    d = WINE.copy()
    d["rating"] = pd.Categorical(d["rating"].map({1: "awful", 2: "poor", 3: "ok", 4: "good",
                                                   5: "great"}),
                                 categories=["awful", "poor", "ok", "good", "great"], ordered=True)
    fit = evalmix.clmm("rating ~ temp + contact + (1|judge)", d)
    assert fit.thresholds.index.tolist() == ["awful|poor", "poor|ok", "ok|good", "good|great"]
    np.testing.assert_allclose(fit.coef.to_numpy(), REF["wine_logit"]["estimate"], atol=2e-3)


def _small():
    return WINE[["rating", "temp", "contact", "judge"]].copy()


@pytest.mark.parametrize("change, error, words", [
    (lambda d: d.assign(rating=np.where(d["rating"] > 2, 2, d["rating"])), DataError,
     "2 categories"),
    (lambda d: d.assign(rating=np.where(d["rating"] == 3, 4, d["rating"])), DataError,
     "gap: no rating 3"),
    (lambda d: d.assign(rating=d["rating"] + 0.5 * (d.index == 7)), DataError,
     "non-integer score 5.5 in rows 7"),
    (lambda d: d.assign(rating=d["rating"].where(d.index != 5)), DataError,
     "missing value in row 5"),
    (lambda d: d.assign(temp=d["temp"].where(d.index != 11)), DataError,
     "column 'temp' has a missing value in row 11"),
    (lambda d: d.assign(rating=d["rating"].astype(str)), DataError, "integer scores or an ordered"),
    (lambda d: d.assign(rating=pd.Categorical(d["rating"])), DataError, "unordered categorical"),
    (lambda d: d.assign(rating=pd.Categorical(d["rating"], categories=[1, 2, 3, 4, 5, 6],
                                              ordered=True)), DataError, "no observation: 6"),
])
def test_bad_responses_are_named(change, error, words):
    with pytest.raises(error, match=words):
        evalmix.clmm("rating ~ temp + contact + (1|judge)", change(_small()))


def test_bad_formulas_and_arguments():
    d = _small()
    with pytest.raises(FormulaError, match="no random term"):
        evalmix.clmm("rating ~ temp + contact", d)
    with pytest.raises(FormulaError, match="scalar random intercepts"):
        evalmix.clmm("rating ~ temp + (1 + contact|judge)", d)
    with pytest.raises(DataError, match="'score' is not in the data"):
        evalmix.clmm("score ~ temp + (1|judge)", d)
    with pytest.raises(FormulaError, match="'panel'"):
        evalmix.clmm("rating ~ temp + (1|panel)", d)
    with pytest.raises(DataError, match="aliased"):
        evalmix.clmm("rating ~ temp + hot + (1|judge)", d.assign(hot=d["temp"] == "warm"))
    with pytest.raises(ArgumentError, match="link"):
        evalmix.clmm("rating ~ temp + (1|judge)", d, link="cauchit")
    with pytest.raises(ArgumentError, match="threshold"):
        evalmix.clmm("rating ~ temp + (1|judge)", d, threshold="symmetric")


EMM_CASES = {
    "wine_latent": ("wine_logit", "temp", "latent"), "wine_mean": ("wine_logit", "temp", "mean.class"),
    "wine_prob": ("wine_logit", "temp", "prob"), "judge_latent": ("judge_nested", "model", "latent"),
    "judge_mean": ("judge_nested", "model", "mean.class"), "judge_prob": ("judge_nested", "model", "prob"),
}


@pytest.mark.parametrize("name", list(EMM_CASES))
def test_emmeans_match_r(fits, name):
    fit_name, spec, mode = EMM_CASES[name]
    ref = REF["emmeans"][name]
    em = evalmix.clmm_emmeans(fits[fit_name], spec, mode=mode)
    tab = em.to_frame()
    if mode == "prob":  # R lists categories within each level; so does the table
        assert tab["category"].tolist() == ref["category"]
    assert tab[spec].astype(str).tolist() == ref["level"]
    # estimates within the parity tolerance of the coefficients (2e-3), SEs 1 %
    np.testing.assert_allclose(tab["estimate"].to_numpy(), ref["estimate"], atol=2e-3)
    np.testing.assert_allclose(tab["se"].to_numpy(), ref["se"], rtol=0.01, atol=1e-5)
    q = 1.959964
    np.testing.assert_allclose(tab["conf_high"] - tab["estimate"], q * tab["se"], rtol=1e-5)
    if mode == "prob":
        assert tab.groupby(spec)["estimate"].sum().to_numpy() == pytest.approx(1.0, abs=1e-12)


def test_emmeans_bad_arguments(fits):
    with pytest.raises(ArgumentError, match="'judge'"):
        evalmix.clmm_emmeans(fits["wine_logit"], "judge")
    with pytest.raises(ArgumentError, match="mode"):
        evalmix.clmm_emmeans(fits["wine_logit"], "temp", mode="cumulative")
    em = evalmix.clmm_emmeans(fits["wine_equidistant"], "temp", mode="mean.class")
    assert em.averaged_over == ("contact",) and "averaged over contact" in repr(em)


@pytest.mark.slow  # the sparse path refits the crossed wine model (about 5 CPU seconds)
def test_sparse_factorisation_gives_the_dense_answer(fits, monkeypatch):
    # beyond DENSE_MAX random effects the Hessian of the conditional modes is factored by sparse
    # LU: forcing it on the crossed wine fit must change the algorithm, not the answer
    from evalmix import intercepts

    monkeypatch.setattr(intercepts, "DENSE_MAX", 1)
    fit = evalmix.clmm(CASES["wine_crossed"][0], WINE)
    dense = fits["wine_crossed"]
    assert fit.loglik == pytest.approx(dense.loglik, abs=1e-6)
    np.testing.assert_allclose(fit.coef.to_numpy(), dense.coef.to_numpy(), atol=1e-4)
    np.testing.assert_allclose(fit.coef_table()["se"], dense.coef_table()["se"], rtol=1e-3)


# ------------------------------------------------------------------ grids of every mode, posterior draws

@pytest.mark.parametrize("mode", ["prob", "mean.class"])
def test_ref_grid_of_each_mode_gives_the_emmeans_table(fits, mode):
    # the grid's rows are the cell values with their delta-method covariance: averaging them is
    # clmm_emmeans exactly (estimates and SEs), and contrasts are differences of those
    fit = fits["wine_logit"]
    direct = evalmix.clmm_emmeans(fit, "temp", mode=mode).to_frame()
    grid = evalmix.ordinal.clmm_ref_grid(fit, mode=mode)
    by = "category" if mode == "prob" else None
    em = evalmix.emmeans(grid, "temp", by=by).to_frame()
    if mode == "prob":
        em = em.sort_values(["temp", "category"], kind="stable").reset_index(drop=True)
    np.testing.assert_allclose(em["estimate"], direct["estimate"], rtol=1e-10)
    np.testing.assert_allclose(em["se"], direct["se"], rtol=1e-8)
    con = evalmix.contrast(evalmix.emmeans(grid, "temp", by=by), "pairwise").to_frame()
    diff = direct.groupby("temp", sort=False)["estimate"].apply(list)
    np.testing.assert_allclose(con["estimate"], np.subtract(diff["cold"], diff["warm"]), rtol=1e-10)
    if mode == "mean.class":  # R: emmeans(fit, pairwise ~ temp, mode = "mean.class"): -1.140
        ref = REF["emmeans"]["wine_mean"]["estimate"]
        assert con["estimate"][0] == pytest.approx(ref[0] - ref[1], abs=2e-3)


class _Draws:
    """A posterior stand-in: draws of the thresholds and location effects from the normal
    approximation of the ML fit, N(coef, vcov), read through evalmix.ordinal.CumulativePosterior."""

    family = "cumulative"

    def __init__(self, fit, n, seed):
        rng = np.random.default_rng(seed)
        nt = fit.n_thresholds
        coef = fit.coef.to_numpy()
        d = rng.multivariate_normal(coef, fit.vcov.to_numpy()[: len(coef), : len(coef)], size=n)
        self.levels, self.cumulative_link, self.fixed_design = fit.levels, fit.link, fit.fixed_design
        self.threshold_draws = pd.DataFrame(d[:, :nt], columns=fit.coef.index[:nt])
        self.fixef_draws = pd.DataFrame(d[:, nt:], columns=fit.coef.index[nt:])


@pytest.mark.parametrize("mode", ["latent", "prob", "mean.class"])
def test_posterior_emmeans_of_normal_draws_match_the_delta_method(fits, mode):
    # 20,000 draws of the asymptotic normal of the wine fit: their summaries must be the delta
    # method's values where it is exact.  Latent means are linear (Monte Carlo error only,
    # se / 141); the mean rating is nearly linear here (curvature moves its mean by 0.02 se).  The
    # probability of a rare category (P = 0.005, se 0.005) is skewed, far from the delta method's
    # normal: its draws are checked against the model's formula evaluated draw by draw instead,
    # and their median (the function of the median draw, up to curvature) against the ML value.
    fit = fits["wine_logit"]
    ml = evalmix.clmm_emmeans(fit, "temp", mode=mode).to_frame()
    post = _Draws(fit, 20_000, seed=7)
    em = evalmix.clmm_emmeans(post, "temp", mode=mode)
    tab = em.to_frame()
    assert em.is_posterior and em.n_draws == 20_000 and "equal-tailed 0.95 credible" in repr(em)
    assert list(tab.columns) == list(ml.columns)
    if mode == "prob":
        from scipy.special import expit

        theta = post.threshold_draws.to_numpy()
        b = post.fixef_draws
        for i, temp in enumerate(["cold", "warm"]):
            cells = []
            for contact in (0.0, 1.0):  # averaged over contact with equal weights
                eta = b["tempwarm"].to_numpy() * (temp == "warm") + b["contactyes"].to_numpy() * contact
                cum = expit(theta - eta[:, None])
                cells.append(np.diff(np.column_stack([np.zeros(len(eta)), cum, np.ones(len(eta))]), axis=1))
            p = (cells[0] + cells[1]) / 2
            rows = tab.iloc[5 * i: 5 * i + 5]
            np.testing.assert_allclose(rows["estimate"], p.mean(axis=0), rtol=1e-9)
            np.testing.assert_allclose(rows["se"], p.std(axis=0, ddof=1), rtol=1e-9)
            np.testing.assert_allclose(rows["conf_high"], np.quantile(p, 0.975, axis=0), rtol=1e-9)
            median = np.median(p, axis=0)
            assert np.all(np.abs(median - ml["estimate"][5 * i: 5 * i + 5]) < 0.2 * ml["se"][5 * i: 5 * i + 5])
        # a credible interval of a probability stays inside [0, 1], unlike Wald's
        assert (tab["conf_low"] > 0).all() and (ml["conf_low"] < 0).any()
    else:
        tol = 0.02 if mode == "latent" else 0.05
        assert np.all(np.abs(tab["estimate"] - ml["estimate"]) < tol * ml["se"])
        np.testing.assert_allclose(tab["se"], ml["se"], rtol=0.05)
    if mode == "latent":  # the equal-tailed interval of a normal is the Wald interval, up to the
        # Monte Carlo error of a 2.5 % quantile of 20,000 draws (0.019 SD): within 3 of those
        np.testing.assert_allclose(tab[["conf_low", "conf_high"]], ml[["conf_low", "conf_high"]],
                                   atol=0.06 * ml["se"].max())
    grid = evalmix.ordinal.clmm_ref_grid(post, mode=mode)
    assert grid.is_posterior
    by = "category" if mode == "prob" else None
    means = evalmix.emmeans(grid, "temp", by=by).to_frame()
    if mode == "prob":
        means = means.sort_values(["temp", "category"], kind="stable").reset_index(drop=True)
    np.testing.assert_allclose(means["estimate"], tab["estimate"], rtol=1e-10)
    con = evalmix.contrast(evalmix.emmeans(grid, "temp", by=by), "revpairwise").to_frame()
    assert con["contrast"].unique().tolist() == ["warm - cold"]
    assert "prob_positive" in con.columns
    if mode != "prob":  # warm raises the ratings: every draw of the difference is positive
        assert con["prob_positive"][0] > 0.999


def test_emmeans_refuse_a_fit_that_is_not_cumulative(fits):
    post = _Draws(fits["wine_logit"], 10, seed=1)
    post.family = "gaussian"
    with pytest.raises(ArgumentError, match="clmm fit .* or its Bayesian twin"):
        evalmix.clmm_emmeans(post, "temp")
    with pytest.raises(ArgumentError, match="not str"):
        evalmix.ordinal.clmm_ref_grid("rating ~ temp")


def test_offset_enters_the_location_as_ordinal_adds_it(reference):
    # ordinal::clmm adds offset() terms to x beta.  An offset of 1 for warm and 0.3 for contact is
    # absorbed by the two coefficients exactly: they drop by 1 and 0.3, the thresholds and logLik
    # stay (R's fit: tests/reference/clmm_offset_reference.R).
    ref = reference("clmm_offset_reference")
    d = WINE.assign(o=(WINE["temp"] == "warm") + 0.3 * (WINE["contact"] == "yes"))
    plain = evalmix.clmm("rating ~ temp + contact + (1|judge)", d)
    fit = evalmix.clmm("rating ~ temp + contact + offset(o) + (1|judge)", d)
    shift = pd.Series(0.0, index=plain.coef.index)
    shift[["tempwarm", "contactyes"]] = [1.0, 0.3]
    np.testing.assert_allclose(fit.coef, plain.coef - shift, atol=1e-4)
    assert fit.coef.index.tolist() == ref["coef_names"]
    np.testing.assert_allclose(fit.coef, ref["estimate"], atol=2e-3)
    assert fit.loglik == pytest.approx(ref["loglik"], abs=1e-3)
    # the means put the offset at its mean over the rows (0.65), where evalmix's ref_grid puts a
    # GLMM's and emmeans a glm's (R's emmeans 1.8.4 reports a clmm with an offset nonEst): the latent means
    # move by 0.65 less the coefficients' drop (1 for warm, 0.3 / 2 averaged over contact)
    em, em0 = (evalmix.clmm_emmeans(f, "temp").to_frame() for f in (fit, plain))
    np.testing.assert_allclose(em["estimate"] - em0["estimate"], 0.65 - 0.15 - np.array([0.0, 1.0]), atol=1e-4)
    with pytest.raises(DataError, match="offset is not finite in rows 3"), np.errstate(divide="ignore"):
        evalmix.clmm("rating ~ temp + offset(log(o)) + (1|judge)", d.assign(o=[1.0, 1.0, 1.0, 0.0] + [1.0] * 68))
