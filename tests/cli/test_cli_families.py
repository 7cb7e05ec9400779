"""``evalmix fit --family`` and ``evalmix select --family``: lmer, clmm and glmmtmb from the command
line, each number checked against the Python API on the same data."""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from evalmix.cli import main
from evalmix.inference.emmeans import ContrastRow, contrast, contrast_families, emmeans, register_contrast
from evalmix.lmm import lmer
from evalmix.ordinal import clmm, clmm_emmeans, clmm_ref_grid
from evalmix.inference.selection import anova, compare_models
from evalmix.tmb import glmmtmb

RATINGS = Path(__file__).resolve().parents[2] / "data" / "example_ratings.csv"
GAUSS = "rating ~ model + judge + (1|item)"


def cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def cli_json(argv: list[str], capsys: pytest.CaptureFixture[str]) -> dict:
    code, out, err = cli(argv + ["--json"], capsys)
    assert code == 0, err
    # strict JSON: no NaN or Infinity anywhere
    return json.loads(out, parse_constant=lambda c: pytest.fail(f"non-strict JSON constant {c}"))


@pytest.fixture(scope="module")
def ratings() -> pd.DataFrame:
    return pd.read_csv(RATINGS)


@pytest.fixture(scope="module")
def scores_csv(tmp_path_factory, ratings) -> Path:
    """The ratings as a 0-1 score (beta) and as k of 4 points (beta-binomial)."""
    d = ratings.assign(score=(ratings["rating"] - 0.5) / 5, k=ratings["rating"] - 1, n=4)
    path = tmp_path_factory.mktemp("scores") / "scores.csv"
    d.to_csv(path, index=False)
    return path


def test_gaussian_matches_lmer(capsys, ratings):
    doc = cli_json(["fit", str(RATINGS), "--formula", GAUSS, "--family", "gaussian", "--emmeans", "model",
                    "--contrast", "pairwise", "--adjust", "tukey", "--anova"], capsys)
    fit = lmer(GAUSS, ratings)
    assert doc["fit"]["family"] == "gaussian" and doc["fit"]["reml"] is True
    assert doc["fit"]["loglik"] == pytest.approx(fit.loglik, rel=1e-10)
    coef = pd.DataFrame(doc["fit"]["coefficients"])
    direct = fit.coef_table().to_frame()
    assert coef["term"].tolist() == direct["term"].tolist()
    for col in ("estimate", "se", "df", "p_value", "conf_low"):
        np.testing.assert_allclose(coef[col], direct[col], rtol=1e-8)
    assert doc["fit"]["ddf"] == "Satterthwaite"
    vc = pd.DataFrame(doc["fit"]["varcorr"])
    np.testing.assert_allclose(vc["sd"], fit.varcorr["sd"], rtol=1e-10)
    emm = emmeans(fit, "model")
    got = pd.DataFrame(doc["emmeans"]["table"])
    np.testing.assert_allclose(got["estimate"], emm.to_frame()["estimate"], rtol=1e-10)
    np.testing.assert_allclose(got["df"], emm.to_frame()["df"], rtol=1e-8)
    con = contrast(emm, "pairwise", adjust="tukey").to_frame()
    got = pd.DataFrame(doc["contrasts"]["table"])
    assert got["contrast"].tolist() == con["contrast"].tolist()
    np.testing.assert_allclose(got["p_adjusted"], con["p_adjusted"], rtol=1e-6)
    aov = anova(fit).to_frame()
    got = pd.DataFrame(doc["anova"]["table"])
    assert got["term"].tolist() == ["model", "judge"]
    np.testing.assert_allclose(got["statistic"], aov["statistic"], rtol=1e-8)
    np.testing.assert_allclose(got["df2"], aov["df2"], rtol=1e-8)
    # the bundled ratings were drawn with model effects A > B > C > D and judge-2 more lenient
    assert coef.set_index("term").loc["judgejudge-2", "estimate"] > 0


def test_gaussian_ml_and_kenward_roger(capsys, ratings):
    doc = cli_json(["fit", str(RATINGS), "--formula", GAUSS, "--family", "gaussian", "--ml"], capsys)
    ml = lmer(GAUSS, ratings, REML=False)
    assert doc["fit"]["reml"] is False
    assert doc["fit"]["loglik"] == pytest.approx(ml.loglik, rel=1e-10)
    doc = cli_json(["fit", str(RATINGS), "--formula", GAUSS, "--family", "gaussian", "--ddf", "kenward-roger",
                    "--emmeans", "model", "--anova"], capsys)
    fit = lmer(GAUSS, ratings)
    kr = fit.coef_table(ddf="Kenward-Roger").to_frame()
    coef = pd.DataFrame(doc["fit"]["coefficients"])
    np.testing.assert_allclose(coef["df"], kr["df"], rtol=1e-8)
    np.testing.assert_allclose(coef["se"], kr["se"], rtol=1e-8)
    assert doc["fit"]["ddf"] == "Kenward-Roger"
    emm = emmeans(fit, "model", ddf="Kenward-Roger").to_frame()
    np.testing.assert_allclose(pd.DataFrame(doc["emmeans"]["table"])["df"], emm["df"], rtol=1e-8)
    aov = anova(fit, ddf="Kenward-Roger").to_frame()
    np.testing.assert_allclose(pd.DataFrame(doc["anova"]["table"])["df2"], aov["df2"], rtol=1e-8)


def test_gaussian_text_output(capsys):
    code, out, err = cli(["fit", str(RATINGS), "--formula", GAUSS, "--family", "gaussian", "--emmeans",
                          "model", "--contrast", "trt.vs.ctrl", "--ref", "model-D"], capsys)
    assert code == 0, err
    assert "Linear mixed model fit by REML" in out
    assert "Fixed effects (t tests with Satterthwaite df, lmerTest)" in out
    assert "Marginal means (link scale)" in out and "(model-A) - (model-D)" in out


ORDINAL = "rating ~ model + judge + (1|item)"


@pytest.fixture(scope="module")
def ordinal_fit(ratings):
    return clmm(ORDINAL, ratings)


def test_ordinal_matches_clmm(capsys, ordinal_fit):
    doc = cli_json(["fit", str(RATINGS), "--formula", ORDINAL, "--family", "ordinal", "--emmeans", "model",
                    "--contrast", "pairwise", "--adjust", "holm"], capsys)
    fit = ordinal_fit
    assert doc["fit"]["engine"] == "clmm" and doc["fit"]["levels"] == ["1", "2", "3", "4", "5"]
    assert doc["fit"]["loglik"] == pytest.approx(fit.loglik, rel=1e-8)
    coef = pd.DataFrame(doc["fit"]["coefficients"])
    direct = fit.coef_table()
    assert coef["term"].tolist() == direct["term"].tolist()
    np.testing.assert_allclose(coef["estimate"], direct["estimate"], rtol=1e-8)
    np.testing.assert_allclose(coef["se"], direct["se"], rtol=1e-6)
    emm = emmeans(clmm_ref_grid(fit), "model")
    got = pd.DataFrame(doc["emmeans"]["table"])
    np.testing.assert_allclose(got["estimate"], emm.to_frame()["estimate"], rtol=1e-8)
    con = contrast(emm, "pairwise", adjust="holm").to_frame()
    got = pd.DataFrame(doc["contrasts"]["table"])
    np.testing.assert_allclose(got["estimate"], con["estimate"], rtol=1e-8)
    np.testing.assert_allclose(got["p_adjusted"], con["p_adjusted"], rtol=1e-6)
    # latent-scale model effects: A above D by about the simulated 0.8 - (-0.5) = 1.3
    a_d = got.set_index("contrast").loc["(model-A) - (model-D)", "estimate"]
    assert 0.8 < a_d < 1.8


def test_ordinal_mean_rating_and_probit(capsys, ordinal_fit, ratings):
    doc = cli_json(["fit", str(RATINGS), "--formula", ORDINAL, "--family", "ordinal", "--emmeans", "model",
                    "--type", "response"], capsys)
    mean = clmm_emmeans(ordinal_fit, "model", mode="mean.class").to_frame()
    got = pd.DataFrame(doc["emmeans"]["table"])
    np.testing.assert_allclose(got["estimate"], mean["estimate"], rtol=1e-8)
    np.testing.assert_allclose(got["se"], mean["se"], rtol=1e-6)
    # the mean rating lies on the 1-5 scale and near the observed mean of each model
    observed = ratings.groupby("model")["rating"].mean().to_numpy()
    np.testing.assert_allclose(got["estimate"], observed, atol=0.15)
    doc = cli_json(["fit", str(RATINGS), "--formula", "rating ~ model + (1|item)", "--family", "ordinal",
                    "--link", "probit", "--threshold", "equidistant"], capsys)
    probit = clmm("rating ~ model + (1|item)", ratings, link="probit", threshold="equidistant")
    assert doc["fit"]["link"] == "probit" and doc["fit"]["threshold"] == "equidistant"
    np.testing.assert_allclose(pd.DataFrame(doc["fit"]["coefficients"])["estimate"],
                               probit.coef_table()["estimate"], rtol=1e-8)


def test_beta_and_betabinomial_match_glmmtmb(capsys, scores_csv):
    d = pd.read_csv(scores_csv)
    formula = "score ~ model + (1|item)"
    doc = cli_json(["fit", str(scores_csv), "--formula", formula, "--family", "beta", "--emmeans", "model",
                    "--type", "response", "--contrast", "pairwise"], capsys)
    fit = glmmtmb(formula, d, family="beta")
    coef = pd.DataFrame(doc["fit"]["coefficients"])
    np.testing.assert_allclose(coef["estimate"], fit.coef_table()["estimate"], rtol=1e-8)
    assert doc["fit"]["dispersion"] == pytest.approx(fit.dispersion, rel=1e-8)
    emm = emmeans(fit, "model", type="response").to_frame()
    np.testing.assert_allclose(pd.DataFrame(doc["emmeans"]["table"])["estimate"], emm["estimate"], rtol=1e-8)
    # the mean score of each model on the 0-1 scale is near its observed mean
    observed = d.groupby("model")["score"].mean().to_numpy()
    np.testing.assert_allclose(emm["estimate"], observed, atol=0.03)
    bb = "cbind(k, n - k) ~ model + (1|item)"
    doc = cli_json(["fit", str(scores_csv), "--formula", bb, "--family", "betabinomial", "--anova"], capsys)
    fit = glmmtmb(bb, d, family="betabinomial")
    assert doc["fit"]["engine"] == "glmmtmb"
    np.testing.assert_allclose(pd.DataFrame(doc["fit"]["coefficients"])["se"], fit.coef_table()["se"],
                               rtol=1e-6)
    np.testing.assert_allclose(pd.DataFrame(doc["anova"]["table"])["statistic"],
                               anova(fit).to_frame()["statistic"], rtol=1e-6)


def test_select_gaussian_matches_compare_models(capsys, ratings):
    f1, f2 = "rating ~ model + (1|item)", GAUSS
    doc = cli_json(["select", str(RATINGS), "--formula", f1, "--formula", f2, "--family", "gaussian"], capsys)
    direct = compare_models({f1: lmer(f1, ratings), f2: lmer(f2, ratings)}).to_frame()
    got = pd.DataFrame(doc["table"])
    assert got["name"].tolist() == direct["name"].tolist()
    np.testing.assert_allclose(got["bic"], direct["bic"], rtol=1e-10)
    np.testing.assert_allclose(got["loglik"], direct["loglik"], rtol=1e-10)


@pytest.mark.parametrize("family,option", [
    ("gaussian", ["--vcov", "rx"]), ("gaussian", ["--nagq", "0"]), ("gaussian", ["--link", "probit"]),
    ("gaussian", ["--threshold", "flexible"]), ("ordinal", ["--ddf", "kenward-roger"]),
    ("ordinal", ["--ml"]), ("ordinal", ["--contrasts", "model=contr.sum"]), ("beta", ["--link", "probit"]),
    ("beta", ["--reml"]), ("betabinomial", ["--squeeze"]), ("binomial", ["--ddf", "satterthwaite"]),
    ("binomial", ["--threshold", "equidistant"]), ("gaussian", ["--control", "maxiter=10"]),
    ("gaussian", ["--outcome", "rating"]), ("ordinal", ["--link", "cloglog"]),
])
def test_option_of_another_family_is_one_line_error(capsys, family, option):
    code, out, err = cli(["fit", str(RATINGS), "--formula", GAUSS, "--family", family, *option], capsys)
    assert code == 2 and out == ""
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("evalmix fit: error: ")
    assert option[0] in lines[0] and f"--family {family}" in lines[0]


def test_family_errors_are_one_line(capsys):
    # ratings are no 0-1 scores; an ordinal fit takes no type-III table
    code, _, err = cli(["fit", str(RATINGS), "--formula", GAUSS, "--family", "beta"], capsys)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "'rating'" in err
    code, _, err = cli(["fit", str(RATINGS), "--formula", GAUSS, "--family", "ordinal", "--anova"], capsys)
    assert code == 2 and "--anova does not apply to --family ordinal" in err
    code, _, err = cli(["fit", str(RATINGS), "--formula", GAUSS, "--family", "poisson"], capsys)
    assert code == 2 and "binomial, gaussian, ordinal, beta, betabinomial" in err.replace("'", "")


def test_contrast_lists_the_registered_families(capsys):
    def consecutive(levels, ref):
        return [ContrastRow(np.eye(len(levels))[i + 1] - np.eye(len(levels))[i], (i + 1,), (i,))
                for i in range(len(levels) - 1)]

    register_contrast("cli_consec", consecutive)
    try:
        assert "cli_consec" in contrast_families()
        code, out, _ = cli(["fit", "--help"], capsys)
        assert code == 0
        listed = " ".join(out.split())
        for name in contrast_families():
            assert name in listed
        code, _, err = cli(["fit", str(RATINGS), "--formula", GAUSS, "--family", "gaussian", "--emmeans",
                            "model", "--contrast", "bogus"], capsys)
        assert code == 2 and "cli_consec" in err and "pairwise" in err
        doc = cli_json(["fit", str(RATINGS), "--formula", GAUSS, "--family", "gaussian", "--emmeans", "model",
                        "--contrast", "cli_consec"], capsys)
        assert len(doc["contrasts"]["table"]) == 3
    finally:  # leave the registry as the other tests expect it
        getattr(sys.modules["evalmix.inference.emmeans"], "_FAMILIES").pop("cli_consec", None)
    assert "cli_consec" not in contrast_families()


def test_missing_drop_leaves_rows_out(capsys, tmp_path, ratings):
    d = ratings.copy()
    d.loc[[3, 10], "rating"] = np.nan
    path = tmp_path / "gaps.csv"
    d.to_csv(path, index=False)
    code, out, err = cli(["fit", str(path), "--formula", "rating ~ model + (1|item)", "--family", "gaussian",
                          "--missing", "drop", "--json"], capsys)
    assert code == 0, err
    doc = json.loads(out)
    assert doc["fit"]["nobs"] == len(d) - 2
    assert any("2 row(s) with a missing value in rating, model, item left out" in w for w in doc["warnings"])
    fit = lmer("rating ~ model + (1|item)", d.dropna())
    assert doc["fit"]["loglik"] == pytest.approx(fit.loglik, rel=1e-10)
    # clmm refuses a missing rating, naming the row, in one line
    code, _, err = cli(["fit", str(path), "--formula", "rating ~ model + (1|item)", "--family", "ordinal"], capsys)
    assert code == 2 and "row 3" in err and len(err.strip().splitlines()) == 1


def test_continuous_harness_scores_fit_with_gaussian(capsys):
    runs = Path(__file__).parents[1] / "fixtures" / "mteb" / "run1"
    formula = "score ~ 1 + (1|task)"  # items (task, split, language) nested in 8 tasks
    code, _, err = cli(["fit", str(runs), "--formula", formula, "--score", "main_score"], capsys)
    assert code == 2 and "--family gaussian" in err and len(err.strip().splitlines()) == 1
    doc = cli_json(["fit", str(runs), "--formula", formula, "--family", "gaussian", "--score", "main_score"],
                   capsys)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        from evalmix import read_logs

        direct = lmer(formula, read_logs(runs, metric="main_score"))
    assert doc["fit"]["nobs"] == direct.nobs == 30  # two encoders x 15 task:split:subset items
    assert doc["fit"]["coefficients"][0]["estimate"] == pytest.approx(direct.fixef.iloc[0], rel=1e-10)
    np.testing.assert_allclose(pd.DataFrame(doc["fit"]["varcorr"])["sd"], direct.varcorr["sd"], rtol=1e-10)
    # the intercept lies within the range of the task means it weighs
    means = read_logs(runs).groupby("task", observed=True)["score"].mean()
    assert means.min() <= direct.fixef.iloc[0] <= means.max()


def test_select_ordinal_matches_compare_models(capsys, ratings, ordinal_fit):
    f1 = "rating ~ model + (1|item)"
    doc = cli_json(["select", str(RATINGS), "--formula", f1, "--formula", ORDINAL, "--family", "ordinal"], capsys)
    direct = compare_models({f1: clmm(f1, ratings), ORDINAL: ordinal_fit}).to_frame()
    got = pd.DataFrame(doc["table"])
    assert got["name"].tolist() == direct["name"].tolist() == [ORDINAL, f1]  # the judge effect is real
    np.testing.assert_allclose(got["bic"], direct["bic"], rtol=1e-8)
    code, _, err = cli(["select", str(RATINGS), "--formula", f1, "--formula", ORDINAL, "--family", "ordinal",
                        "--outcome", "rating"], capsys)
    assert code == 2 and "--outcome does not apply to --family ordinal" in err
