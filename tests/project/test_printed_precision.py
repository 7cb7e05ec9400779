"""Printouts carry R's digits: at least four significant digits per estimate and SE, as printCoefmat
and ``format(x, digits = 4)`` give, in every engine's summary, the VarCorr printouts, emmeans and
contrast reprs, the command line and Markdown; r-hat to three decimals.

R's own printouts of sleepstudy (lmer, lmerTest), cbpp (glmer), wine (clmm) and a beta glmmTMB fit,
and R's ``format``/``format.pval`` of test vectors, are in tests/reference/printed_precision_reference.json
(written by printed_precision_reference.R).  Two kinds of check:

- the formatter given R's numbers prints R's text exactly (the rules);
- evalmix's fits print the same layout as R (the same cells, each with R's number of decimals) with
  values that agree to the fit's tolerance (the engines agree with R to about 1e-4, so the last
  printed digit may differ).
"""

from __future__ import annotations

import json
import math
import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix import tables

HERE = Path(__file__).parents[1] / "reference"
R = json.loads((HERE / "printed_precision_reference.json").read_text())
NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?$")
R_NAMES = {"Estimate": "estimate", "Std. Error": "se", "df": "df", "t value": "statistic",
           "z value": "statistic", "Pr(>|t|)": "p_value", "Pr(>|z|)": "p_value"}


def _r_table(block: dict) -> pd.DataFrame:
    df = pd.DataFrame({"term": np.atleast_1d(block["rownames"])})  # one row: JSON scalars
    for name, values in zip(block["colnames"], block["values"]):
        df[R_NAMES[name]] = np.atleast_1d(np.asarray(values, dtype=float))
    return df


def _decimals(token: str) -> tuple[str, int]:
    mant, _, exp = token.lower().partition("e")
    return ("e" if exp else "f"), len(mant.split(".")[1]) if "." in mant else 0


def _significant(token: str) -> int:
    mant = token.lower().partition("e")[0].lstrip("+-").replace(".", "").lstrip("0")
    return len(mant)


def assert_prints_like_r(ours: list[str], theirs: list[str], rel: float = 2e-3) -> None:
    """Line by line: the same words, and each number in R's notation with R's decimals and a value
    within ``rel`` (or one unit in the last printed place) of R's."""
    ours = [ln.rstrip() for ln in ours]
    theirs = [ln.rstrip().replace("‘", "'").replace("’", "'") for ln in theirs]
    assert len(ours) == len(theirs), "\n".join(["ours:", *ours, "R:", *theirs])
    for a, b in zip(ours, theirs):
        ta, tb = a.split(), b.split()
        assert len(ta) == len(tb), f"\nours: {a}\nR:    {b}"
        for x, y in zip(ta, tb):
            if NUMBER.match(y) and NUMBER.match(x):
                assert _decimals(x) == _decimals(y), f"{x} against R's {y}\nours: {a}\nR:    {b}"
                unit = 10.0 ** -_decimals(y)[1] if _decimals(y)[0] == "f" else abs(float(y)) * 10.0 ** -_decimals(y)[1]
                assert abs(float(x) - float(y)) <= max(rel * abs(float(y)), 1.01 * unit), f"{x} against R's {y}"
            else:
                assert x == y, f"{x!r} against R's {y!r}\nours: {a}\nR:    {b}"


def _block(lines: list[str], start: str, stop: str | None = None) -> list[str]:
    """R's lines from the one starting with ``start`` (excluded) to the first blank line or
    ``stop``."""
    i = next(k for k, ln in enumerate(lines) if ln.startswith(start)) + 1
    out = []
    for ln in lines[i:]:
        if not ln.strip() or (stop and ln.startswith(stop)):
            break
        out.append(ln)
    return out


# ---- the rules, given R's numbers ------------------------------------------------------------------


@pytest.mark.parametrize("case", range(len(R["format"])))
def test_r_format_is_rs_format(case):
    x = R["format"][case]
    values = x["x"] if isinstance(x["x"], list) else [x["x"]]
    for digits in (3, 4, 5, 7):
        want = x[f"digits{digits}"]
        want = want if isinstance(want, list) else [want]
        assert [c.strip() for c in tables.r_format(values, digits)] == [w.strip() for w in want], (values, digits)


@pytest.mark.parametrize("case", range(len(R["format_pval"])))
def test_printcoefmat_p_values_are_format_pval(case):
    x = R["format_pval"][case]
    p = pd.DataFrame({"term": [f"t{i}" for i in range(len(x["p"]))], "estimate": 1.0, "se": 0.5,
                      "statistic": 2.0, "p_value": x["p"]})
    assert tables.format_coefmat(p)["p_value"].tolist() == x["text"]


@pytest.mark.parametrize("fit, block, test", [("sleepstudy", "coefmat", "t"), ("cbpp", "coefmat", "z"),
                                              ("wine", "coefmat", "z"), ("wine", "thresholds", "z"),
                                              ("sim_beta", "coefmat", "z")])
def test_coefmat_prints_rs_coefficient_table_exactly(fit, block, test):
    ref = R[fit][block]
    df = _r_table(ref)
    p = "p_value" if "p_value" in df else None
    assert tables.coefmat_lines(df, ref["colnames"], p=p, stars=False) == [ln.rstrip() for ln in ref["text"]]


@pytest.mark.parametrize("case", range(len(R["coefmat_random"])))
def test_coefmat_prints_random_tables_as_r(case):
    # estimates and SEs across eight orders of magnitude, with and without df, tiny p-values
    ref = R["coefmat_random"][case]
    df = _r_table(ref)
    assert tables.coefmat_lines(df, ref["colnames"], stars=False) == [ln.rstrip() for ln in ref["text"]]


def test_the_sleepstudy_slope_prints_10_467_beside_1_546():
    # the example: R's summary prints 10.467 and 1.546, never 10.5 and 1.55
    df = _r_table(R["sleepstudy"]["coefmat"])
    shown = tables.format_table(df)
    assert shown.loc[1, "estimate"] == "10.467" and shown.loc[1, "se"] == "1.546"
    assert shown.loc[0, "estimate"] == "251.405" and shown.loc[0, "se"] == "6.825"


@pytest.mark.parametrize("fit, digits, key", [("sleepstudy", 5, "varcorr"), ("cbpp", 5, "varcorr")])
def test_varcorr_lines_are_lme4s_print(fit, digits, key):
    vc = pd.DataFrame(R[fit]["varcorr_frame"]).rename(columns={"grp": "group", "vcov": "variance", "sdcor": "sd"})
    vc = vc.assign(var1=vc["var1"].fillna(""), var2=vc.get("var2", pd.Series([""] * len(vc))).fillna(""))
    # (R pads every column, the last one too: trailing spaces, compared without them here)
    assert [ln.rstrip() for ln in tables.varcorr_lines(vc, digits=digits)] == [ln.rstrip() for ln in R[fit][key]]
    # summary() prints them with digits = 4
    summary = R[fit]["summary_lme4" if fit == "sleepstudy" else "summary"]
    want = _block(summary, "Random effects:", "Number of obs")
    assert [ln.rstrip() for ln in tables.varcorr_lines(vc)] == [ln.rstrip() for ln in want]


def test_every_estimate_and_se_keeps_four_significant_digits():
    rng = np.random.default_rng(41)
    for _ in range(200):
        n = int(rng.integers(1, 6))
        est = rng.normal(size=n) * 10.0 ** rng.integers(-5, 6)
        se = np.abs(rng.normal(size=n)) * 10.0 ** rng.integers(-5, 4) + 1e-12
        shown = tables.format_table(pd.DataFrame({"estimate": est, "se": se, "conf_low": est - se}))
        for col in shown.columns:
            for cell, v in zip(shown[col], pd.DataFrame({"estimate": est, "se": se, "conf_low": est - se})[col]):
                # four significant digits, fewer only where R drops trailing zeros (format(-52.201, digits = 4))
                assert _significant(cell) >= 4 or float(cell) == float(f"{v:.4g}"), (col, cell, v)
                assert math.isclose(float(cell), v, rel_tol=1e-3, abs_tol=0), (col, cell, v)


def test_rhat_prints_three_decimals_and_ess_whole_numbers():
    df = pd.DataFrame({"parameter": ["a", "b"], "estimate": [0.1234567, 2.5], "r_hat": [1.00012, 1.0],
                       "ess_bulk": [3817.4, 1200.0], "ess_tail": [2950.6, 800.2]})
    shown = tables.format_table(df)
    assert shown["r_hat"].tolist() == ["1.000", "1.000"]
    assert shown["ess_bulk"].tolist() == ["3817", "1200"] and shown["ess_tail"].tolist() == ["2951", "800"]
    assert tables.format_table(df.assign(r_hat=[1.0123, 1.2]))["r_hat"].tolist() == ["1.012", "1.200"]


# ---- evalmix's fits print as R does ------------------------------------------------------------------


@pytest.fixture(scope="module")
def sleepstudy():
    d = pd.read_csv(HERE / "lmer_sleepstudy.csv")
    return evalmix.lmer("Reaction ~ Days + (Days|Subject)", d)


@pytest.fixture(scope="module")
def cbpp():
    d = pd.read_csv(HERE / "engine_cbpp.csv", dtype={"herd": str, "period": str})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return evalmix.glmer("cbind(incidence, size - incidence) ~ period + (1|herd)", d)


@pytest.fixture(scope="module")
def wine():
    d = pd.read_csv(HERE / "clmm_wine.csv")
    d["rating"] = pd.Categorical(d["rating"], ordered=True)
    return evalmix.clmm("rating ~ temp + contact + (1|judge)", d)


@pytest.fixture(scope="module")
def sim_beta():
    d = pd.read_csv(HERE / "glmmtmb_sim.csv")
    return evalmix.glmmtmb("score ~ model + (1|item)", d, "beta")


def test_lmer_summary_prints_rs_digits(sleepstudy):
    text = str(sleepstudy.summary())
    assert re.search(r"^Days +10\.467 +1\.546 ", text, re.M), text  # not 10.5 and 1.55
    assert "10.5 " not in text and "1.55 " not in text
    ours = repr(sleepstudy.coef_table()).split("\n")[1:4]
    assert_prints_like_r(ours, _block(R["sleepstudy"]["summary_lmertest"], "Fixed effects:")[:3])


def test_lmer_print_is_lme4s(sleepstudy):
    lines = repr(sleepstudy).split("\n")
    r = R["sleepstudy"]["print_fit"]
    assert_prints_like_r(lines[lines.index("Random effects:") + 1:lines.index("Random effects:") + 5],
                         _block(r, "Random effects:", "Number of obs"))
    assert_prints_like_r(lines[lines.index("Fixed Effects:") + 1:lines.index("Fixed Effects:") + 3],
                         _block(r, "Fixed Effects:"))
    assert "REML criterion at convergence: 1743.628" in lines


def test_glmer_prints_rs_digits(cbpp):
    lines = cbpp.lme4_text().split("\n")
    i = lines.index("Random effects:")
    assert_prints_like_r(lines[i + 1:i + 3], _block(R["cbpp"]["summary"], "Random effects:", "Number of obs"))
    # the Wald table: estimates and SEs formatted together, as printCoefmat
    ct = cbpp.coef_table()[["term", "estimate", "se", "statistic", "p_value"]]
    ours = tables.coefmat_lines(ct, ["Estimate", "Std. Error", "z value", "Pr(>|z|)"], stars=False)
    assert_prints_like_r(ours, R["cbpp"]["coefmat"]["text"], rel=5e-3)
    shown = tables.format_table(cbpp.coef_table())
    assert shown["estimate"].tolist() == ["-1.3985", "-0.9923", "-1.1287", "-1.5803"]
    assert shown["se"].tolist() == ["0.2313", "0.3031", "0.3228", "0.4221"]


def test_clmm_prints_rs_digits(wine):
    lines = wine.ordinal_text().split("\n")
    r = R["wine"]["summary"]
    for title in ("Coefficients:", "Threshold coefficients:"):
        i = lines.index(title)
        want = [ln for ln in _block(r, title) if not ln.startswith(("---", "Signif"))]
        assert_prints_like_r([ln for ln in lines[i + 1:i + 1 + len(want) + 2] if not ln.startswith(("---", "Signif"))
                              ][:len(want)], want)
    i = lines.index("Random effects:")
    assert_prints_like_r(lines[i + 1:i + 3], _block(r, "Random effects:", "Number of groups"))


def test_glmmtmb_prints_rs_digits(sim_beta):
    lines = sim_beta.glmmtmb_text().split("\n")
    r = R["sim_beta"]["summary"]
    i = max(k for k, ln in enumerate(lines) if ln == "Conditional model:")
    j = max(k for k, ln in enumerate(r) if ln == "Conditional model:")
    assert_prints_like_r(lines[i + 1:i + 6], r[j + 1:j + 6])
    assert "Dispersion parameter for beta family (): 9.84" in lines


def test_emmeans_and_contrast_reprs_keep_four_digits(cbpp):
    emm = evalmix.emmeans(cbpp, "period")
    con = evalmix.contrast(emm, "pairwise")
    for result, r_lines in ((emm, R["cbpp"]["emmeans"]), (con, R["cbpp"]["pairs"])):
        text = repr(result)
        shown = tables.format_table(result.to_frame())
        for col in ("estimate", "se"):
            assert all(_significant(c) >= 4 for c in shown[col]), (col, shown[col].tolist())
            for c in shown[col]:
                assert c in text
        # R's emmeans prints fewer digits; ours round to R's
        r_est = [float(ln.split()[-5]) for ln in r_lines[1:5]]
        ours = result.to_frame()["estimate"].to_numpy()[:4]
        np.testing.assert_allclose(np.abs(ours), np.abs(r_est), atol=6e-3)
        assert max(map(len, text.split("\n"))) <= 100
    assert "<0.001" in con.to_markdown() and "&lt;" not in con.to_markdown()


def test_markdown_and_cli_print_four_digits(sleepstudy, capsys):
    md = sleepstudy.coef_table().to_markdown().split("\n")
    assert re.match(r"\| Days +\| +10\.467 \| 1\.546 \|", md[3]), md
    assert "<0.001" in md[3] and "&lt;" not in md[3]
    from evalmix.cli import main

    main(["fit", str(HERE / "lmer_sleepstudy.csv"), "--formula", "Reaction ~ Days + (Days|Subject)",
          "--family", "gaussian", "--item", "Subject", "--model", "Days", "--run", "none"])
    out = capsys.readouterr().out
    assert re.search(r"^Days +10\.467 +1\.546 ", out, re.M), out
    assert "     251.41        10.47" in out  # lme4's print of fixef: format(digits = 4)


def test_cli_prints_glmer_and_clmm_with_rs_digits(capsys):
    from evalmix.cli import main

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        main(["fit", str(HERE / "engine_cbpp.csv"), "--formula", "cbind(incidence, size - incidence) ~ period + (1|herd)",
              "--successes", "incidence", "--trials", "size", "--item", "herd", "--model", "period", "--run", "none"])
    out = capsys.readouterr().out.split("\n")
    i = out.index("Random effects:")
    assert_prints_like_r(out[i + 1:i + 3], _block(R["cbpp"]["summary"], "Random effects:", "Number of obs"))
    # the Wald table: R's decimals for the estimates and SEs (printCoefmat's -0.9919 0.3032)
    rows: dict[str, list[str]] = {}
    for ln in out:  # the first block of the table (a wide table prints in blocks)
        if ln.startswith("period"):
            rows.setdefault(ln.split()[0], ln.split())
    r_rows = {ln.split()[0]: ln.split() for ln in R["cbpp"]["coefmat"]["text"][1:]}
    for term in ("period2", "period3", "period4"):
        assert_prints_like_r([" ".join(rows[term][:3])], [" ".join(r_rows[term][:3])], rel=5e-3)

    main(["fit", str(HERE / "clmm_wine.csv"), "--formula", "rating ~ temp + contact + (1|judge)",
          "--family", "ordinal", "--item", "judge", "--model", "temp", "--run", "none"])
    out = capsys.readouterr().out.split("\n")
    for title in ("Coefficients:", "Threshold coefficients:"):
        want = [ln for ln in _block(R["wine"]["summary"], title) if not ln.startswith(("---", "Signif"))]
        i = out.index(title)
        assert_prints_like_r(out[i + 1:i + 1 + len(want)], want)
