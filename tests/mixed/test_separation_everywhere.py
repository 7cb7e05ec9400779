"""Separation in every engine: an outcome that one model (item, person, level) never varies on makes
a maximum-likelihood estimate infinite.  Each engine either refuses, naming the culprits
(:class:`~evalmix.core.errors.SeparationError`, exit code 2 in the CLI), or leaves them out with a
:class:`~evalmix.core.errors.SeparationWarning` that names them and estimates the rest as if they were
not there.  Also the IRT abilities' standard errors against glmer (tests/reference/irt_verbagg_reference.R)."""

from __future__ import annotations

import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.studies.arena import bradley_terry
from evalmix.cli import main
from evalmix.core.errors import DataError, SeparationError, SeparationWarning
from evalmix.studies.irt import fit_irt
from evalmix.simulate import simulate_irt

REFERENCE = Path(__file__).parents[1] / "reference" / "irt_verbagg_reference.json"


def _runs(top=(), bottom=()):
    """8 models x 60 items x 3 runs; the models in ``top`` answer everything right, in ``bottom`` nothing."""
    runs = simulate_irt(n_items=60, n_models=8, n_runs=3, rng=3)
    for m in top:
        runs.loc[runs["model"] == m, "correct"] = 1
    for m in bottom:
        runs.loc[runs["model"] == m, "correct"] = 0
    return runs


def _caught(fn):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = fn()
    return out, [w for w in caught if issubclass(w.category, SeparationWarning)]


# ------------------------------------------------------------------------------------------- IRT

@pytest.mark.parametrize("model_type", ["2pl", "1pl"])
def test_irt_leaves_out_a_model_at_100_or_0_percent_and_names_it(model_type):
    runs = _runs(top=["m0"], bottom=["m5"])
    fit, sep = _caught(lambda: fit_irt(runs, run="run", model_type=model_type))
    assert len(sep) == 1
    msg = str(sep[0].message)
    assert "'m0' (100% correct)" in msg and "'m5' (0% correct)" in msg
    assert fit.separated == ("m0", "m5")
    ab = fit.abilities.set_index("model")
    assert ab.loc["m0", "estimate"] == np.inf and ab.loc["m5", "estimate"] == -np.inf
    assert np.isnan(ab.loc[["m0", "m5"], "se"]).all()
    # the rest is the fit without them: not collapsed onto one value, sane SEs and discriminations
    rest = fit_irt(runs[~runs["model"].isin(["m0", "m5"])], run="run", model_type=model_type)
    pd.testing.assert_frame_equal(ab.drop(index=["m0", "m5"]).reset_index(), rest.abilities)
    est = rest.abilities["estimate"]
    assert est.std(ddof=0) == pytest.approx(1.0) and est.nunique() == 6
    assert (rest.abilities["se"] > 0.05).all() and (rest.abilities["se"] < 1).all()
    pop = rest.population.set_index("parameter")["estimate"]
    assert abs(pop.get("discrimination_mean", pop.get("discrimination"))) < 5
    assert any(n.startswith("separation: 2 model(s)") for n in fit.summary().notes)


def test_irt_refuses_when_fewer_than_three_models_remain():
    runs = _runs(top=["m0", "m1", "m2"], bottom=["m3", "m4", "m5"])
    with pytest.raises(SeparationError, match=r"'m0' \(100% correct\).*'m5' \(0% correct\).*only 2 model"):
        fit_irt(runs, run="run")


def test_irt_items_at_0_or_100_percent_are_random_effects_and_stay_finite():
    runs = _runs()
    items = sorted(runs["item"].unique())
    runs.loc[runs["item"].isin(items[:5]), "correct"] = 1
    runs.loc[runs["item"].isin(items[5:8]), "correct"] = 0
    fit, sep = _caught(lambda: fit_irt(runs, run="run"))
    assert sep == [] and fit.separated == ()  # one more item was at 100% already
    assert "6 item(s) at 100% and 3 at 0%: random effects, kept with finite shrunken estimates" in fit.summary().notes
    assert np.isfinite(fit.items[["discrimination", "intercept"]].to_numpy()).all()
    # the extreme items barely move the abilities (they carry almost no information about them)
    rest = fit_irt(runs[~runs["item"].isin(items[:8])], run="run")
    np.testing.assert_allclose(fit.abilities["estimate"], rest.abilities["estimate"], atol=0.1)


def test_irt_cli_surfaces_separation_and_exits_2_on_refusal(tmp_path, capsys):
    path = tmp_path / "runs.csv"
    _runs(top=["m0"]).to_csv(path, index=False)
    assert main(["irt", str(path), "--run", "run"]) == 0
    out, err = capsys.readouterr()
    assert "separation: left out of the fit (ability +-Inf, no SE): m0" in out
    assert "warning: SeparationWarning: fit_irt: separation: model(s) 'm0' (100% correct)" in err
    assert main(["irt", str(path), "--run", "run", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["separated"] == ["m0"] and any("'m0' (100% correct)" in w for w in doc["warnings"])
    bad = tmp_path / "bad.csv"
    _runs(top=["m0", "m1", "m2"], bottom=["m3", "m4", "m5"]).to_csv(bad, index=False)
    assert main(["irt", str(bad), "--run", "run"]) == 2
    assert "error: " in (err := capsys.readouterr().err) and "'m0' (100% correct)" in err


def _verbagg() -> tuple[pd.DataFrame, dict]:
    """lme4's VerbAgg (id, item, r2 as 0/1) and the reference values."""
    ref = json.loads(REFERENCE.read_text())
    rows = [(p, it, int(ch)) for p, resp in zip(ref["persons"], ref["responses"]) for it, ch in zip(ref["items"], resp)]
    return pd.DataFrame(rows, columns=["id", "item", "r2"]), ref


def test_irt_ability_ses_match_glmer_items_fixed():
    # glmer(r2 ~ 0 + item + (1|id), nAGQ = 7) is fit_irt's 1PL with VerbAgg's items as the fixed units
    data, ref = _verbagg()
    ref = ref["items_fixed"]
    fit = fit_irt(data, model="item", item="id", correct="r2", model_type="1pl")
    ab = fit.abilities.set_index("model").loc[ref["levels"]]
    # 7-node adaptive quadrature on both sides; the SEs agree to 2e-5 (the cross-product gave 1.2 to 1.3x)
    np.testing.assert_allclose(ab["estimate"], ref["theta"], atol=1e-4)
    np.testing.assert_allclose(ab["se"], ref["se"], rtol=5e-4)
    pop = fit.population.set_index("parameter")["estimate"]
    assert pop["intercept_sd"] == pytest.approx(ref["sd_person"], rel=0.01)


def test_irt_persons_as_models_drop_the_all_0_and_all_1_persons_and_match_glmm_ses():
    # persons as the fixed units: 9 persons answer all 0 or all 1 (named, left out); the others'
    # SEs are those of r2 ~ 0 + id + (1|item) (the cross-product of 24 item scores had rank 24 for
    # 307 abilities: SEs about 0.08 of these)
    data, ref = _verbagg()
    ref = ref["persons_fixed"]
    fit, sep = _caught(lambda: fit_irt(data, model="id", item="item", correct="r2", model_type="1pl"))
    assert len(sep) == 1 and sorted(fit.separated) == sorted(ref["extreme"])
    for p in ref["extreme"]:
        assert f"'{p}' (" in str(sep[0].message)
    ab = fit.abilities.set_index("model")
    assert np.isinf(ab.loc[ref["extreme"], "estimate"]).all()
    ab = ab.loc[ref["levels"]]
    # Laplace in glmmTMB, 7-node adaptive quadrature here (24 items of ~300 responses): 1e-4 apart
    np.testing.assert_allclose(ab["estimate"], ref["theta"], atol=5e-4)
    np.testing.assert_allclose(ab["se"], ref["se"], rtol=1e-3)


# ------------------------------------------------------------------------------------------- glmer

def test_glmer_names_the_model_at_100_percent():
    # the model to follow: the culprit named, its coefficient +inf with no SE, the rest finite
    runs = _runs(top=["m3"])
    fit, sep = _caught(lambda: evalmix.glmer("correct ~ model + (1|item)", runs))
    assert len(sep) == 1 and "every response is a success where model = 'm3'" in str(sep[0].message)
    coef = fit.coef_table().set_index("term")
    assert coef.loc["modelm3", "estimate"] == np.inf and np.isnan(coef.loc["modelm3", "se"])
    assert np.isfinite(coef.drop(index="modelm3")[["estimate", "se"]].to_numpy()).all()


# ------------------------------------------------------------------------------------------- clmm

def _ratings(seed=3):
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(30), 4)
    model = np.tile(["a", "b"], 60)
    rating = np.digitize(rng.normal(0, 1, 30)[item] + rng.logistic(size=120), [-1.5, 0, 1.5]) + 1
    return pd.DataFrame({"item": item, "model": model, "rating": rating})


@pytest.mark.parametrize("where, value, sign", [("b", 4, r"\+inf"), ("b", 1, "-inf")])
def test_clmm_refuses_a_level_that_stays_in_an_end_category(where, value, sign):
    d = _ratings()
    d.loc[d["model"] == where, "rating"] = value
    with pytest.raises(SeparationError, match=rf"model = 'b': every rating is '{value}' \(60 rows\).*'modelb' \({sign}\)"):
        evalmix.clmm("rating ~ model + (1|item)", d)


def test_clmm_refuses_levels_split_across_the_categories():
    d = _ratings()
    d.loc[d["model"] == "a", "rating"] = np.where(d.loc[d["model"] == "a", "rating"] > 2, 2, 1)
    d.loc[d["model"] == "b", "rating"] = np.where(d.loc[d["model"] == "b", "rating"] > 2, 4, 3)
    with pytest.raises(SeparationError, match=r"model = 'a': every rating is in \['1', '2'\].*model = 'b'"):
        evalmix.clmm("rating ~ model + (1|item)", d)


def test_clmm_a_category_a_level_never_reaches_inside_the_scale_is_not_separation():
    d = _ratings()
    d.loc[(d["model"] == "b") & (d["rating"] == 1), "rating"] = 2
    with warnings.catch_warnings():
        warnings.simplefilter("error", SeparationWarning)
        fit = evalmix.clmm("rating ~ model + (1|item)", d)
    assert np.isfinite(fit.coef).all() and abs(fit.coef["modelb"]) < 3


# ------------------------------------------------------------------------------------ Bradley-Terry

def test_bradley_terry_names_who_never_loses_and_who_never_wins(tmp_path, capsys):
    battles = pd.DataFrame({"model_a": ["x", "x", "y", "z", "y", "w"], "model_b": ["y", "z", "z", "y", "w", "z"],
                            "winner": ["model_a", "model_a", "model_a", "model_a", "model_a", "model_b"]})
    with pytest.raises(SeparationError, match=r"\['x'\] never lose.*\['w'\] never win"):
        bradley_terry(battles, ties="drop", position=False)
    path = tmp_path / "battles.csv"
    battles.to_csv(path, index=False)
    assert main(["arena", str(path), "--ties", "drop", "--no-position"]) == 2
    err = capsys.readouterr().err
    assert "error: separation: model(s) ['x'] never lose" in err and "['w'] never win" in err


def test_separation_error_is_a_data_error():
    assert issubclass(SeparationError, DataError)


# ------------------------------------------------------------------------------------------- glmmtmb

@pytest.mark.parametrize("family", ["binomial", "betabinomial"])
def test_glmmtmb_refuses_k_of_n_separation_naming_the_coefficient(family):
    runs = _runs(top=["m3"])
    counts = runs.groupby(["model", "item"], as_index=False).agg(k=("correct", "sum"), n=("correct", "size"))
    with pytest.raises(SeparationError, match=r"'modelm3' \(\+inf\)"):
        evalmix.glmmtmb("cbind(k, n - k) ~ model + (1|item)", counts, family=family)
