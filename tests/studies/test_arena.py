"""Bradley-Terry ratings of arena battles: parity with BradleyTerry2 (R) and FastChat, invariances,
bad input, the bootstrap, sandwich coverage and the ``evalmix arena`` command."""

from __future__ import annotations

import functools
import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import evalmix
from evalmix.studies.arena import ELO_PER_LOGIT, BradleyTerryResult, bradley_terry, read_battles
from evalmix.cli import main
from evalmix.core.errors import DataError

REF = Path(__file__).resolve().parents[1] / "reference"
BATTLES = REF / "arena_battles.csv"
R_REF = json.loads((REF / "arena_reference.json").read_text())
FASTCHAT = json.loads((REF / "arena_fastchat.json").read_text())
OTHERS = ["m02", "m03", "m04", "m05", "m06"]  # BTm's abilities are against m01


def _simulate(n: int, k: int, rng: np.random.Generator, h: float = 0.0, nu: float = 0.5,
              repeat: int = 1) -> pd.DataFrame:
    """Davidson battles; each drawn battle is recorded ``repeat`` times on one prompt (the same
    judgement counted again: battles of a prompt are perfectly correlated)."""
    theta = np.linspace(-1.0, 1.0, k)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    d = theta[a] - theta[b] + h
    pa, pb = np.exp(d / 2), np.exp(-d / 2)
    u = rng.random(n) * (pa + pb + nu)
    won = np.where(u < pa, "model_a", np.where(u < pa + pb, "model_b", "tie"))
    names = np.array([f"m{i}" for i in range(k)])
    df = pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": won, "prompt": np.arange(n)})
    return df.loc[df.index.repeat(repeat)].reset_index(drop=True)


@functools.cache
def _clustered() -> BradleyTerryResult:
    """The bundled battles clustered by prompt, with rank sets: one fit (a quarter of a second,
    most of it the rank sets) for the tests that read it (a result cannot be changed)."""
    return bradley_terry(BATTLES, cluster="prompt")


def _by_model(fit: BradleyTerryResult, col: str, models: list[str]) -> np.ndarray:
    return fit.table.set_index("model").loc[models, col].to_numpy(float)


# ---------------------------------------------------------------------------------------------
# parity


def test_btm_without_ties_and_position():
    fit = bradley_terry(BATTLES, ties="drop", position=False, ci="hessian", reference="m01", scale="logit")
    ref = R_REF["btm"]
    assert fit.n_battles == R_REF["n_decisive"]
    np.testing.assert_allclose(_by_model(fit, "estimate", OTHERS), ref["estimate"], atol=1e-8)
    # BTm's glm stops at a deviance change of 1e-8, which moves its SEs in the 8th digit
    np.testing.assert_allclose(_by_model(fit, "se", OTHERS), ref["se"], rtol=1e-6)
    assert fit.loglik == pytest.approx(ref["loglik"], abs=1e-6)
    assert _by_model(fit, "estimate", ["m01"])[0] == 0.0 and _by_model(fit, "se", ["m01"])[0] == 0.0


def test_btm_home_advantage_is_the_position_effect():
    fit = bradley_terry(BATTLES, ties="drop", position=True, ci="hessian", reference="m01", scale="logit")
    ref = R_REF["btm_home"]
    np.testing.assert_allclose(_by_model(fit, "estimate", OTHERS), ref["estimate"][:5], atol=1e-8)
    np.testing.assert_allclose(_by_model(fit, "se", OTHERS), ref["se"][:5], rtol=1e-6)
    pos = fit.params.set_index("term").loc["first_position"]
    assert pos["estimate"] == pytest.approx(ref["estimate"][5], abs=1e-8)
    assert pos["se"] == pytest.approx(ref["se"][5], rel=1e-6)
    assert fit.loglik == pytest.approx(ref["loglik"], abs=1e-6)


def test_clustered_sandwich_equals_vcovCL():
    fit = bradley_terry(BATTLES, ties="drop", position=True, cluster="prompt", reference="m01", scale="logit")
    ref = R_REF["btm_home_cl"]
    np.testing.assert_allclose(_by_model(fit, "se", OTHERS), ref["se"][:5], rtol=1e-7)
    assert fit.params.set_index("term").loc["first_position", "se"] == pytest.approx(ref["se"][5], rel=1e-7)
    assert fit.n_clusters == pd.read_csv(BATTLES).query("winner != 'tie'")["prompt"].nunique()


def test_davidson_ties_equal_the_log_linear_fit_in_r():
    fit = bradley_terry(BATTLES, ties="davidson", position=True, ci="hessian", reference="m01", scale="logit")
    ref = R_REF["davidson"]
    np.testing.assert_allclose(_by_model(fit, "estimate", OTHERS), ref["estimate"][:5], atol=1e-8)
    np.testing.assert_allclose(_by_model(fit, "se", OTHERS), ref["se"][:5], rtol=1e-7)
    par = fit.params.set_index("term")
    assert par.loc["first_position", "estimate"] == pytest.approx(ref["estimate"][5], abs=1e-8)
    assert par.loc["first_position", "se"] == pytest.approx(ref["se"][5], rel=1e-7)
    assert math.log(par.loc["tie_nu", "estimate"]) == pytest.approx(ref["estimate"][6], abs=1e-8)
    # the SE of nu is the delta method on log nu's SE
    assert par.loc["tie_nu", "se"] == pytest.approx(par.loc["tie_nu", "estimate"] * ref["se"][6], rel=1e-7)
    assert fit.loglik == pytest.approx(ref["loglik"], abs=1e-6)


def test_half_ties_equal_fastchat_compute_mle_elo():
    fit = bradley_terry(BATTLES, ties="half", position=False, rank_sets=False)
    np.testing.assert_allclose(_by_model(fit, "estimate", FASTCHAT["model"]), FASTCHAT["rating"], atol=1e-6)
    np.testing.assert_allclose(_by_model(fit, "estimate", FASTCHAT["model"]), FASTCHAT["rating_with_tie"], atol=1e-6)
    assert fit.table["model"].tolist() == FASTCHAT["model"]


def test_elo_scale_and_reference_anchor():
    logit = bradley_terry(BATTLES, scale="logit", rank_sets=False)
    elo = bradley_terry(BATTLES, rank_sets=False)
    assert logit.table["estimate"].mean() == pytest.approx(0.0, abs=1e-12)
    np.testing.assert_allclose(elo.table["estimate"], 1000 + ELO_PER_LOGIT * logit.table["estimate"], atol=1e-9)
    np.testing.assert_allclose(elo.table["se"], ELO_PER_LOGIT * logit.table["se"], rtol=1e-10)
    ref = bradley_terry(BATTLES, reference="m03", anchor=1114.0)
    # the rank sets read differences only: the same with either anchor
    mean_anchored = bradley_terry(BATTLES)
    for col in ("rank_low", "rank_high", "tie_group"):
        assert ref.table[col].tolist() == mean_anchored.table[col].tolist()
    assert _by_model(ref, "estimate", ["m03"])[0] == pytest.approx(1114.0, abs=1e-9)
    shift = _by_model(ref, "estimate", OTHERS) - _by_model(elo, "estimate", OTHERS)
    np.testing.assert_allclose(shift, shift[0], atol=1e-8)  # only the anchor moves
    # differences have the same variance whatever the anchor
    v1, v2 = elo.vcov, ref.vcov
    c = np.zeros(6)
    c[0], c[3] = 1.0, -1.0
    assert c @ v1 @ c == pytest.approx(c @ v2 @ c, rel=1e-9)


def test_rank_sets_come_from_the_rating_covariance():
    fit = _clustered()
    again = evalmix.rank_sets_normal(fit.table["estimate"].to_numpy(), fit.vcov, labels=fit.table["model"].tolist())
    assert fit.table["rank_low"].tolist() == again.table["rank_low"].tolist()
    assert fit.table["tie_group"].tolist() == again.table["tie_group"].tolist()
    # m01 and m02 are 30 points apart with SEs near 11: not separable; the top four are
    assert fit.table["tie_group"].tolist() == ["a", "b", "c", "d", "e", "e"]
    assert fit.to_dict()["tie_groups"] == {"a": ["m06"], "b": ["m05"], "c": ["m04"], "d": ["m03"],
                                           "e": ["m02", "m01"]}


# ---------------------------------------------------------------------------------------------
# invariances


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), ties=st.sampled_from(["davidson", "half", "drop"]))
def test_swapping_sides_without_position_leaves_ratings(seed, ties):
    df = _simulate(300, 4, np.random.default_rng(seed), h=0.0)
    swapped = df.assign(model_a=df["model_b"], model_b=df["model_a"],
                        winner=df["winner"].map({"model_a": "model_b", "model_b": "model_a", "tie": "tie"}))
    try:
        one = bradley_terry(df, ties=ties, position=False, rank_sets=False)
    except DataError:  # an unlucky draw where a model never loses: both refuse
        with pytest.raises(DataError):
            bradley_terry(swapped, ties=ties, position=False, rank_sets=False)
        return
    two = bradley_terry(swapped, ties=ties, position=False, rank_sets=False)
    models = one.table["model"].tolist()
    np.testing.assert_allclose(_by_model(two, "estimate", models), one.table["estimate"], atol=1e-8)
    np.testing.assert_allclose(_by_model(two, "se", models), one.table["se"], rtol=1e-8)


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**16), perm=st.permutations(range(5)))
def test_relabelling_models_permutes_ratings(seed, perm):
    df = _simulate(400, 5, np.random.default_rng(seed), h=0.2)
    rename = {f"m{i}": f"x{p}" for i, p in enumerate(perm)}
    relab = df.assign(model_a=df["model_a"].map(rename), model_b=df["model_b"].map(rename))
    try:
        one = bradley_terry(df, cluster="prompt", rank_sets=False)
    except DataError:
        return
    two = bradley_terry(relab, cluster="prompt", rank_sets=False)
    new = [rename[m] for m in one.table["model"]]
    np.testing.assert_allclose(_by_model(two, "estimate", new), one.table["estimate"], atol=1e-8)
    np.testing.assert_allclose(_by_model(two, "se", new), one.table["se"], rtol=1e-8)
    np.testing.assert_allclose(two.params["estimate"], one.params["estimate"], rtol=1e-8)


# ---------------------------------------------------------------------------------------------
# reading and bad input


def test_read_battles_spellings():
    raw = pd.DataFrame({"a": ["x", "y", "x", "y"], "b": ["y", "x", "y", "x"],
                        "w": [" A", "model_b", "Tie (bothbad)", "tie"]})
    out = read_battles(raw, model_a="a", model_b="b", winner="w")
    assert out["winner"].tolist() == ["model_a", "model_b", "tie", "tie"]
    assert out.columns.tolist() == ["model_a", "model_b", "winner"]


@pytest.mark.parametrize("edit, match", [
    (lambda d: d.drop(columns="winner"), "no column 'winner'"),
    (lambda d: d.assign(winner=d["winner"].where(d.index != 7)), "column 'winner' has a missing value in row 7"),
    (lambda d: d.assign(model_b=d["model_b"].where(d.index != 3, "")), "column 'model_b' has a missing value in row 3"),
    (lambda d: d.assign(winner=d["winner"].where(d.index != 5, "draw")), "unknown winner value 'draw' in row 5"),
    (lambda d: d.assign(model_b=d["model_b"].where(d.index != 2, d["model_a"])), "row 2 has model .* battling itself"),
    (lambda d: d.assign(model_a="m0", model_b="m0"), "battling itself"),
])
def test_bad_tables_are_named(edit, match):
    df = _simulate(200, 4, np.random.default_rng(1))
    with pytest.raises(DataError, match=match):
        bradley_terry(edit(df))


def test_ratings_that_do_not_exist_are_refused():
    two = pd.DataFrame({"model_a": ["x", "y"], "model_b": ["y", "z"], "winner": ["model_a", "tie"]})
    with pytest.raises(DataError, match=r"\['x'\] never lose"):
        bradley_terry(two, position=False)
    apart = pd.DataFrame({"model_a": ["x", "y", "p", "q"], "model_b": ["y", "x", "q", "p"],
                          "winner": ["model_a", "tie", "model_a", "tie"]})
    with pytest.raises(DataError, match="never meet"):
        bradley_terry(apart, position=False)
    no_ties = _simulate(300, 3, np.random.default_rng(2), nu=1e-9)
    with pytest.raises(DataError, match="no ties"):
        bradley_terry(no_ties)
    assert bradley_terry(no_ties, ties="drop", rank_sets=False).params["term"].tolist() == ["first_position"]
    chain = pd.DataFrame({"model_a": ["x", "x", "y", "y"], "model_b": ["y", "y", "z", "z"],
                          "winner": ["model_a", "model_b", "tie", "model_b"]})
    with pytest.raises(DataError, match="first-shown advantage cannot be told apart"):
        bradley_terry(chain)
    only_ties = pd.concat([_simulate(200, 3, np.random.default_rng(3)),
                           pd.DataFrame({"model_a": ["m9"], "model_b": ["m0"], "winner": ["tie"]})])
    with pytest.raises(DataError, match=r"\['m9'\] have only ties"):
        bradley_terry(only_ties, ties="drop")
    with pytest.raises(DataError, match="reference model 'nobody'"):
        bradley_terry(BATTLES, reference="nobody")
    with pytest.raises(DataError, match="no cluster column 'judge'"):
        bradley_terry(BATTLES, cluster="judge")


@pytest.mark.parametrize("kwargs, match", [
    ({"ties": "elo"}, "ties must be one of"), ({"ci": "profile"}, "ci must be one of"),
    ({"scale": "glicko"}, "scale must be"), ({"conf_level": 95}, "conf_level"),
    ({"ci": "bootstrap", "n_boot": 10}, "n_boot must be"),
])
def test_bad_arguments(kwargs, match):
    with pytest.raises(ValueError, match=match):
        bradley_terry(BATTLES, **kwargs)


# ---------------------------------------------------------------------------------------------
# the bootstrap


def test_bootstrap_is_reproducible_and_agrees_with_the_sandwich():
    kw = dict(ci="bootstrap", n_boot=200, cluster="prompt", rank_sets=False)
    one = bradley_terry(BATTLES, rng=5, **kw)
    two = bradley_terry(BATTLES, rng=5, **kw)
    other = bradley_terry(BATTLES, rng=6, **kw)
    np.testing.assert_array_equal(one.boot, two.boot)
    assert not np.array_equal(one.boot, other.boot)
    assert one.boot.shape == (200, 6) and one.n_boot == 200
    sandwich = bradley_terry(BATTLES, cluster="prompt", rank_sets=False)
    np.testing.assert_array_equal(one.table["estimate"], sandwich.table["estimate"])
    # 200 replicates estimate an SE to about 5%: agree with the sandwich within 25%
    np.testing.assert_allclose(one.table["se"], sandwich.table["se"], rtol=0.25)
    assert (one.table["conf_low"] < one.table["estimate"]).all()
    assert (one.table["conf_high"] > one.table["estimate"]).all()


@pytest.mark.slow  # the second test step: keeps the first under 2 minutes
def test_bootstrap_does_not_depend_on_workers():
    kw = dict(ci="bootstrap", n_boot=100, rng=3, rank_sets=False, position=False, ties="half")
    np.testing.assert_array_equal(bradley_terry(BATTLES, n_jobs=1, **kw).boot,
                                  bradley_terry(BATTLES, n_jobs=2, **kw).boot)


# ---------------------------------------------------------------------------------------------
# coverage of the clustered sandwich


def _coverage(n_sims: int, seed: int) -> dict[str, float]:
    """Share of simulations whose 95% interval of m3 - m0 covers the truth (Elo points); each battle
    is recorded on its prompt three times, so the per-battle intervals are too short by sqrt(3)."""
    rng = np.random.default_rng(seed)
    truth = ELO_PER_LOGIT * 2.0  # theta = linspace(-1, 1, 4): m3 - m0 = 2 logits
    hit = {"sandwich": 0, "hessian": 0}
    for _ in range(n_sims):
        df = _simulate(150, 4, rng, h=0.2, repeat=3)
        for ci in hit:
            fit = bradley_terry(df, ci=ci, cluster="prompt" if ci == "sandwich" else None, rank_sets=False)
            est = fit.table.set_index("model")["estimate"]
            order = fit.table["model"].tolist()
            i, j = order.index("m3"), order.index("m0")
            se = math.sqrt(fit.vcov[i, i] + fit.vcov[j, j] - 2 * fit.vcov[i, j])
            hit[ci] += abs(est["m3"] - est["m0"] - truth) <= 1.959964 * se
    return {k: v / n_sims for k, v in hit.items()}


@pytest.mark.slow  # 40 simulated arenas: a coverage check, the second test step
def test_clustered_sandwich_covers():
    cov = _coverage(40, 11)
    # 40 simulations: Monte-Carlo SE of a 95% coverage is 0.034; 0.85 is three SEs below
    assert cov["sandwich"] >= 0.85


@pytest.mark.slow
def test_clustered_sandwich_coverage_large():
    cov = _coverage(400, 12)
    # Monte-Carlo SE 0.011 at 0.95: within 3 SEs; the per-battle (information) interval, too short
    # by sqrt(3), covers about 2 * Phi(1.96 / sqrt(3)) - 1 = 0.74
    assert abs(cov["sandwich"] - 0.95) <= 0.033
    assert abs(cov["hessian"] - 0.74) <= 0.07


# ---------------------------------------------------------------------------------------------
# the result and the command


def test_result_renders_and_is_immutable():
    fit = _clustered()
    text = repr(fit)
    assert "Bradley-Terry" in text and "clustered by prompt" in text and "tie_nu" in text
    latex = fit.to_latex()
    assert "rank set" in latex and "m06" in latex and "95\\%" in latex
    assert "| model |" in fit.to_markdown()
    json.dumps(fit.to_dict(), allow_nan=False)
    assert fit.summary().tables["parameters"]["term"].tolist() == ["first_position", "tie_nu"]
    with pytest.raises(ValueError):
        fit.vcov[0, 0] = 1.0
    copy = fit.table
    copy.loc[0, "estimate"] = 0.0
    assert fit.table.loc[0, "estimate"] > 1000


def test_model_names_are_escaped_in_html_and_latex():
    df = _simulate(300, 3, np.random.default_rng(4))
    df = df.replace({"m0": "<b>m0</b>", "m1": "m_1 & 50%"})
    fit = bradley_terry(df, rank_sets=False)
    assert "<b>m0</b>" not in fit._repr_html_() and "&lt;b&gt;m0&lt;/b&gt;" in fit._repr_html_()
    assert "m\\_1 \\& 50\\%" in fit.to_latex()
    named = bradley_terry(df.rename(columns={"prompt": "<i>p</i>"}), cluster="<i>p</i>", reference="<b>m0</b>",
                          rank_sets=False)
    page = named._repr_html_()
    assert "<i>p</i>" not in page and "&lt;i&gt;p&lt;/i&gt;" in page and "<b>m0</b>" not in page
    assert "clustered by <i>p</i>" in repr(named)


def test_cli_table_and_json_equal_the_library(capsys):
    assert main(["arena", str(BATTLES), "--cluster", "prompt", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    lib = _clustered()
    got = pd.DataFrame(doc["table"])
    assert got["model"].tolist() == lib.table["model"].tolist()
    np.testing.assert_allclose(got["estimate"], lib.table["estimate"], rtol=1e-12)
    np.testing.assert_allclose(got["se"], lib.table["se"], rtol=1e-12)
    assert got["tie_group"].tolist() == lib.table["tie_group"].tolist()
    assert [p["term"] for p in doc["params"]] == ["first_position", "tie_nu"]
    assert main(["arena", str(BATTLES), "--ties", "half", "--no-position", "--no-rank-sets"]) == 0
    out = capsys.readouterr().out
    assert "m06" in out and "ties: half" in out


@pytest.mark.parametrize("argv, match", [
    (["--cluster", "judge"], "no cluster column 'judge'"),
    (["--n-boot", "50"], "--n-boot is used with --ci bootstrap only"),
    (["--ties", "elo"], "invalid choice"),
    (["--reference", "zz"], "reference model 'zz'"),
])
def test_cli_user_errors_exit_2(capsys, argv, match):
    assert main(["arena", str(BATTLES), *argv]) == 2
    err = capsys.readouterr().err
    assert match in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_cli_missing_file_and_bad_winner(capsys, tmp_path):
    assert main(["arena", str(tmp_path / "none.csv")]) == 2
    assert "none.csv" in capsys.readouterr().err
    bad = tmp_path / "bad.csv"
    bad.write_text("model_a,model_b,winner\nx,y,model_a\nx,y,draw\n")
    assert main(["arena", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "bad.csv" in err and "'draw' in row 1" in err
