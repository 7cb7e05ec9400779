"""``evalmix fit`` and ``evalmix select``: argument handling and output, with a plain GLM fitter."""

from __future__ import annotations

import argparse
import io
import json

import numpy as np
import pandas as pd
import pytest

from evalmix.cli import inference as cli_inference
from evalmix.inference.emmeans import contrast, emmeans
from glm_standin import glm_fit

from conftest import REFERENCE

DATA = str(REFERENCE / "inference_glmer_sim.csv")


@pytest.fixture()
def parser(monkeypatch):
    monkeypatch.setattr(cli_inference, "_fitter", lambda: glm_fit)
    p = argparse.ArgumentParser(prog="evalmix")
    sub = p.add_subparsers(dest="command")
    cli_inference.add_fit_parser(sub)
    cli_inference.add_select_parser(sub)
    return p


def run(parser, argv):
    args = parser.parse_args(argv)
    out = io.StringIO()
    assert args.handler(args, out=out) == 0
    return out.getvalue()


def test_fit_json_matches_api(parser):
    formula = "correct ~ model * lang + (1|item) + (1|item:run)"
    text = run(parser, ["fit", DATA, "--formula", formula, "--emmeans", "model", "--by", "lang",
                        "--contrast", "trt.vs.ctrl", "--ref", "m2", "--adjust", "dunnettx",
                        "--anova", "--json"])
    res = json.loads(text)
    fit = glm_fit(formula, pd.read_csv(DATA))
    direct = contrast(emmeans(fit, "model", by="lang"), "trt.vs.ctrl", ref="m2",
                      adjust="dunnettx").to_frame()
    got = pd.DataFrame(res["contrasts"]["table"])
    assert got["contrast"].tolist() == direct["contrast"].tolist()
    np.testing.assert_allclose(got["p_adjusted"], direct["p_adjusted"])
    assert res["contrasts"]["scale"] == "log-odds"
    assert res["contrasts"]["adjust"] == "dunnettx"
    assert [r["term"] for r in res["anova"]["table"]] == ["(Intercept)", "model", "lang",
                                                         "model:lang"]
    assert res["fit"]["nobs"] == 1080


def test_fit_text_output(parser):
    text = run(parser, ["fit", DATA, "--formula", "correct ~ model + (1|item)", "--emmeans",
                        "model", "--type", "response", "--contrast", "pairwise"])
    assert "Marginal means (response scale)" in text and "(m-1) / m2" in text
    assert "P value adjustment: holm method for 3 tests" in text


def test_select(parser):
    text = run(parser, ["select", DATA, "--formula", "correct ~ model + (1|item)",
                        "--formula", "correct ~ model + lang + (1|item)", "--json"])
    res = json.loads(text)
    assert len(res["table"]) == 2 and "evidence for" in res["verdict"]
    assert res["lrt"][1]["df_diff"] == 1
    text = run(parser, ["select", DATA, "--formula", "correct ~ model + (1|item)",
                        "--formula", "correct ~ model + lang + (1|item)"])
    assert "Models by BIC" in text and "Kass & Raftery" in text


def test_usage_errors(parser):
    with pytest.raises(SystemExit):
        run(parser, ["fit", DATA, "--formula", "correct ~ model", "--contrast", "pairwise"])
    with pytest.raises(SystemExit):
        run(parser, ["select", DATA, "--formula", "correct ~ model"])
    with pytest.raises((SystemExit, OSError, ValueError)):
        run(parser, ["fit", "no/such/file.csv", "--formula", "correct ~ model"])


def test_select_with_glmer_matches_lme4_anova():
    """The real fitter: evalmix select on the simulated GLMM against lme4's anova()."""
    ref = json.loads((REFERENCE / "inference_reference.json").read_text())["glmer_sim"]
    p = argparse.ArgumentParser(prog="evalmix")
    cli_inference.add_select_parser(p.add_subparsers(dest="command"))
    formulas = [ref["fits"][k]["formula"] for k in ("g1", "g2", "g3")]
    argv = ["select", DATA] + [a for f in formulas for a in ("--formula", f)] + ["--json"]
    res = json.loads(run(p, argv))
    lrt = pd.DataFrame(res["lrt"])
    r = pd.DataFrame(ref["anova"])
    np.testing.assert_allclose(lrt["loglik"], r["loglik"], atol=2e-3)
    np.testing.assert_allclose(lrt["statistic"].iloc[1:], r["chisq"].iloc[1:], atol=5e-3)
    assert lrt["npar"].tolist() == r["npar"].tolist()


def test_fit_vcov_option_with_glmer():
    """``--vcov`` reaches evalmix.glmer: the JSON standard errors are the API's."""
    import warnings

    from evalmix import glmer

    p = argparse.ArgumentParser(prog="evalmix")
    cli_inference.add_fit_parser(p.add_subparsers(dest="command"))
    formula = "correct ~ model + (1|item)"
    data = pd.read_csv(DATA)
    for method in ("hessian", "hessian_exact", "rx"):
        res = json.loads(run(p, ["fit", DATA, "--formula", formula, "--vcov", method, "--json"]))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = glmer(formula, data, vcov_method=method)
        got = pd.DataFrame(res["fit"]["coefficients"])["se"].to_numpy()
        np.testing.assert_allclose(got, fit.coef_table()["se"].to_numpy(), rtol=1e-10)
        assert res["fit"]["vcov_method"] == method


def test_runs_under_evalmix_main(monkeypatch, capsys):
    """Registered in evalmix.cli's command list, the subcommands run through ``evalmix.cli.main``."""
    from evalmix import cli

    assert cli_inference.add_fit_parser in cli.COMMANDS and cli_inference.add_select_parser in cli.COMMANDS
    code = cli.main(["fit", DATA, "--formula", "correct ~ model + lang + (1|item)",
                     "--emmeans", "model", "--contrast", "trt.vs.ctrl", "--adjust", "dunnettx",
                     "--json"])
    assert code == 0
    res = json.loads(capsys.readouterr().out)
    assert [r["contrast"] for r in res["contrasts"]["table"]] == ["m2 - (m-1)", "m3 - (m-1)"]


def test_fit_r_arguments_reach_glmer():
    """``--link``, ``--nagq``, ``--weights``, ``--offset`` and ``--contrasts`` are glmer's."""
    import warnings

    from evalmix import glmer

    p = argparse.ArgumentParser(prog="evalmix")
    cli_inference.add_fit_parser(p.add_subparsers(dest="command"))
    d = pd.read_csv(DATA)
    rng = np.random.default_rng(4)
    d["w"] = rng.integers(1, 4, len(d))
    d["off"] = rng.uniform(-0.3, 0.3, len(d))
    path = REFERENCE.parent / "_cli_formula_tmp.csv"
    d.to_csv(path, index=False)
    formula = "correct ~ model * lang + (1|item)"
    try:
        res = json.loads(run(p, ["fit", str(path), "--formula", formula, "--link", "probit",
                                 "--nagq", "3", "--weights", "w", "--offset", "off",
                                 "--contrasts", "model=contr.sum", "lang=contr.sum", "--json"]))
    finally:
        path.unlink()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = glmer(formula, d, link="probit", nAGQ=3, weights="w", offset="off",
                    contrasts={"model": "contr.sum", "lang": "contr.sum"})
    assert abs(res["fit"]["loglik"] - fit.loglik) < 1e-9
    got = pd.DataFrame(res["fit"]["coefficients"])
    assert got["term"].tolist() == list(fit.fixef.index)
    assert "model1" in got["term"].tolist()  # contr.sum columns are numbered, as R names them
    from evalmix import cli
    from evalmix.core.errors import FormulaError

    with pytest.raises(FormulaError, match="FACTOR=CODING"):
        run(p, ["fit", DATA, "--formula", "correct ~ model + (1|item)", "--contrasts", "model"])
    assert cli.main(["fit", DATA, "--formula", "correct ~ model + (1|item)", "--contrasts",
                     "model=contr.foo"]) == 2
    assert cli.main(["fit", DATA, "--formula", "correct ~ model + (1|item)", "--nagq", "-1"]) == 2


def test_fit_control_settings_reach_glmer(capsys):
    """``--control KEY=VALUE`` (repeatable) builds a GlmerControl: values parsed to each field's
    type, the fit the API's with the same control; an unknown key or a bad value is a one-line
    error with exit code 2."""
    import warnings

    from evalmix import GlmerControl, cli, glmer

    formula = "correct ~ model + (1|item)"
    code = cli.main(["fit", DATA, "--formula", formula, "--control", "grad_tol=0.01",
                     "--control", "maxiter=1e3", "--control", "dense_h_max=10",
                     "--control", "log=yes", "--json"])
    assert code == 0
    res = json.loads(capsys.readouterr().out)
    control = GlmerControl(grad_tol=0.01, maxiter=1000, dense_h_max=10, log=True)
    assert res["fit"]["control"] == {"grad_tol": 0.01, "maxiter": 1000, "dense_h_max": 10,
                                     "log": True}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = glmer(formula, pd.read_csv(DATA), control=control)
    assert fit.control == control
    assert abs(res["fit"]["loglik"] - fit.loglik) < 1e-9
    got = pd.DataFrame(res["fit"]["coefficients"])
    np.testing.assert_allclose(got["se"], fit.coef_table()["se"], rtol=1e-10)
    for bad, says in (("no_such=1", "no field 'no_such'"), ("maxiter=abc", "maxiter must be a number"),
                      ("maxiter=0", "maxiter must be a positive integer"),
                      ("maxiter=2.5", "maxiter must be a positive integer"),
                      ("log=maybe", "log must be true or false"), ("maxiter", "KEY=VALUE"),
                      ("ftol=-1", "ftol must be positive")):
        assert cli.main(["fit", DATA, "--formula", formula, "--control", bad]) == 2
        err = capsys.readouterr().err
        assert says in err and "Traceback" not in err, (bad, err)
        assert len(err.strip().splitlines()) == 1, err
