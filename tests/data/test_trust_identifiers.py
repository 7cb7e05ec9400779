"""Identifiers stay what the user wrote: model and item names that look like numbers are never
parsed or merged, backticked non-syntactic column names work in formulas as in R, and errors name
the argument or option actually at fault."""

from __future__ import annotations

import inspect
import json
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix as em
from evalmix import power
from evalmix.cli import main
from evalmix.data import load_table
from evalmix.core.errors import ArgumentError

MODELS = ["1", "1.0", "2"]  # three models; numbers they are not
ITEMS = ["01", "1", "2", "10"]  # four items; "01" is not "1"


def _runs(seed: int = 0, n_items: int = 30) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    items = ITEMS + [str(i) for i in range(11, 11 + n_items - len(ITEMS))]
    rows = [(m, i, r, int(rng.random() < p)) for m, p in zip(MODELS, (0.4, 0.6, 0.8))
            for i in items for r in (1, 2, 3)]
    return pd.DataFrame(rows, columns=["model", "item", "run", "correct"])


@pytest.fixture
def runs_csv(tmp_path: Path) -> Path:
    path = tmp_path / "runs.csv"
    _runs().to_csv(path, index=False)
    return path


# --- the loaders -----------------------------------------------------------------------------

def test_read_runs_keeps_numeric_looking_names(runs_csv: Path) -> None:
    runs = em.read_runs(runs_csv)
    assert runs["model"].cat.categories.tolist() == MODELS  # R's numeric order, names as written
    assert runs.groupby("model", observed=True).size().tolist() == [90, 90, 90]
    assert {"01", "1", "2", "10"} <= set(runs["item"].cat.categories)
    assert runs["item"].nunique() == 30


@pytest.mark.parametrize("suffix", [".jsonl", ".json", ".tsv", ".csv.gz"])
def test_every_text_format_keeps_names(tmp_path: Path, suffix: str) -> None:
    df = _runs()
    path = tmp_path / f"runs{suffix}"
    if suffix == ".jsonl":
        # JSON numbers as the user wrote them: 1 and 1.0 are two names
        lines = [json.dumps({"model": {"1": 1, "1.0": 1.0, "2": 2}[m], "item": i, "run": r, "correct": c})
                 for m, i, r, c in df.itertuples(index=False)]
        path.write_text("\n".join(lines) + "\n")
        assert "1.0" in path.read_text()
    elif suffix == ".json":
        path.write_text(df.to_json(orient="records"))
    elif suffix == ".tsv":
        df.to_csv(path, sep="\t", index=False)
    else:
        df.to_csv(path, index=False, compression="gzip")
    runs = em.read_runs(path)
    assert [str(c) for c in runs["model"].cat.categories] == MODELS
    assert runs["model"].value_counts().tolist() == [90, 90, 90]


def test_plain_numbers_stay_numbers(tmp_path: Path) -> None:
    """Ids that print back as written (1, 2, 10) are read as numbers, in numeric order, as before."""
    path = tmp_path / "plain.csv"
    pd.DataFrame({"model": [1, 2, 10] * 2, "item": [1, 1, 1, 2, 2, 2], "run": 1,
                  "correct": [1, 0, 1, 0, 1, 1]}).to_csv(path, index=False)
    runs = em.read_runs(path)
    assert runs["model"].cat.categories.tolist() == [1, 2, 10]
    assert load_table(path, ids=["model"])["model"].dtype.kind == "i"


def test_load_table_ids_keep_leading_zeros_and_missing(tmp_path: Path) -> None:
    path = tmp_path / "t.csv"
    path.write_text("model,item,correct\n007,1,1\n7,,0\n1e3,3,1\n")
    t = load_table(path, ids=["model", "item"])
    assert t["model"].astype(str).tolist() == ["007", "7", "1e3"]
    assert t["item"].isna().tolist() == [False, True, False]


def test_python_loaders_keep_names(runs_csv: Path, tmp_path: Path) -> None:
    acc = em.accuracy(runs_csv, by="model").table
    assert acc["model"].astype(str).tolist() == MODELS and acc["n"].tolist() == [90, 90, 90]
    # a formula fit read from a file: the model factor has three levels, named as R names them
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = em.glmer("correct ~ model + (1|item)", runs_csv)
        lm = em.lmer("correct ~ model + (1|item)", runs_csv)
    assert fit.fixef.index.tolist() == ["(Intercept)", "model1.0", "model2"]
    assert lm.fixef.index.tolist() == ["(Intercept)", "model1.0", "model2"]
    # the grouping factor: items "01" and "1" are two groups
    assert lm.ngroups["item"] == 30


def test_battles_keep_names(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    rows = []
    for _ in range(300):
        a, b = rng.choice(3, 2, replace=False)
        rows.append((MODELS[a], MODELS[b], rng.choice(["model_a", "model_b", "tie"])))
    path = tmp_path / "battles.csv"
    pd.DataFrame(rows, columns=["model_a", "model_b", "winner"]).to_csv(path, index=False)
    assert sorted(set(em.read_battles(path)["model_a"])) == MODELS
    fit = em.bradley_terry(path)
    assert sorted(fit.table["model"].astype(str)) == MODELS
    assert fit.table["n_battles"].sum() == 600


def test_judges_and_ppi_keep_names(tmp_path: Path) -> None:
    ratings = pd.read_csv(Path(__file__).resolve().parents[2] / "data" / "example_ratings.csv")
    names = dict(zip(sorted(ratings["model"].unique()), ["1", "1.0", "2", "2.0"]))
    ratings["model"] = ratings["model"].map(names)
    path = tmp_path / "ratings.csv"
    ratings.to_csv(path, index=False)
    study = em.judge_study(path, judge="judge", outcome="rating")
    assert sorted(map(str, study.by_judge["model"].unique())) == ["1", "1.0", "2", "2.0"]
    labelled = ratings[ratings["judge"] == "judge-1"].rename(columns={"rating": "score"}).assign(
        human=lambda d: d["score"].where(d["item"].isin(d["item"].unique()[:20])))
    lpath = tmp_path / "ppi.csv"
    labelled.to_csv(lpath, index=False)
    res = em.ppi_mean(lpath, judge="score", human="human", by="model")
    assert res.table["model"].astype(str).tolist() == ["1", "1.0", "2", "2.0"]


# --- every command that reads a table ---------------------------------------------------------

@pytest.mark.parametrize("argv, key, column", [
    (["describe", "--json"], "table", "model"),
    (["leaderboard", "--json", "--seed", "1"], "table", "model"),
    (["reliability", "--json"], "table", "model"),
    (["se-runs", "--json"], "table", "model"),
    (["irt", "--json"], "abilities", "model"),
])
def test_commands_keep_names(runs_csv: Path, capsys: pytest.CaptureFixture[str], argv: list[str], key: str,
                             column: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main([argv[0], str(runs_csv), *argv[1:]]) == 0
    doc = json.loads(capsys.readouterr().out)
    table = doc[key] if key in doc else doc["table"]
    assert sorted({str(r[column]) for r in table}) == MODELS


def test_fit_and_compare_commands_keep_names(runs_csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert main(["fit", str(runs_csv), "--formula", "correct ~ model + (1|item)", "--emmeans", "model",
                     "--contrast", "trt.vs.ctrl", "--ref", "1.0", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [c["term"] for c in doc["fit"]["coefficients"]] == ["(Intercept)", "model1.0", "model2"]
    assert [r["model"] for r in doc["emmeans"]["table"]] == MODELS
    # levels that look numeric get the factor's name in contrast labels, as emmeans writes them
    assert [r["contrast"] for r in doc["contrasts"]["table"]] == ["model1 - model1.0", "model2 - model1.0"]
    assert main(["compare", str(runs_csv), "1", "1.0", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["table"][0]["contrast"] == "1.0 - 1" and doc["table"][0]["n"] == 30


def test_arena_command_keeps_names(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "battles.csv"
    pd.DataFrame({"model_a": ["1", "1.0", "2"] * 20, "model_b": ["1.0", "2", "1"] * 20,
                  "winner": ["model_a", "model_b", "tie", "model_b"] * 15}).to_csv(path, index=False)
    assert main(["arena", str(path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert sorted(r["model"] for r in doc["table"]) == MODELS


# --- backticked names in formulas --------------------------------------------------------------

def _odd_names(n: int = 240) -> pd.DataFrame:
    rng = np.random.default_rng(3)
    d = pd.DataFrame({"I(x)": rng.normal(size=n), "a:b": rng.normal(size=n),
                      "lang name": rng.choice(["de", "en", "fr"], n), "g h": np.repeat(np.arange(24), 10)})
    d["y"] = d["I(x)"] + rng.normal(size=n) + np.repeat(rng.normal(size=24), 10)
    d["c"] = (d["y"] > 0).astype(int)
    d["r"] = pd.cut(d["y"], [-9, -1, 0, 1, 9], labels=False) + 1
    return d


# R: coef(lm(y ~ `I(x)` + `a:b` + `lang name`, d)) names the columns in backticks
R_NAMES = ["`I(x)`", "`a:b`", "`lang name`en", "`lang name`fr"]


@pytest.mark.parametrize("engine, response, extra", [
    ("lmer", "y", {}), ("glmer", "c", {}), ("clmm", "r", {}), ("glmmtmb", "c", {"family": "binomial"}),
])
def test_backticked_names_in_every_engine(engine: str, response: str, extra: dict) -> None:
    d = _odd_names()
    plain = d.rename(columns={"I(x)": "ix", "a:b": "ab", "lang name": "lang", "g h": "g"})
    fn = getattr(em, engine)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = fn(f"{response} ~ `I(x)` + `a:b` + `lang name` + (1|`g h`)", d, **extra)
        ref = fn(f"{response} ~ ix + ab + lang + (1|g)", plain, **extra)
    est = fit.fixef if engine != "clmm" else fit.coef
    base = ref.fixef if engine != "clmm" else ref.coef
    assert [n for n in est.index if "|" not in n and n != "(Intercept)"] == R_NAMES
    # the same numbers as with syntactic names
    np.testing.assert_allclose(est.to_numpy(), base.to_numpy(), rtol=1e-6, atol=1e-8)


def test_backticked_grouping_interaction() -> None:
    from evalmix.model.parse import parse_formula

    p = parse_formula("y ~ `a:b` + (1|`g h`:`lang name`) + (1|`g h`/run)")
    assert [s.group for s in p.random] == [("g h", "lang name"), ("g h",), ("run", "g h")]
    assert p.fixed == "`a:b`"


# --- errors name the argument at fault ---------------------------------------------------------

def test_power_two_proportions_blames_p1() -> None:
    with pytest.raises(ArgumentError, match=r"^p1 must be a probability"):
        power.power_two_proportions(p1=1.5, p2=0.5, n=100)
    with pytest.raises(ArgumentError, match=r"^p2 must be a probability"):
        power.power_two_proportions(p1=0.5, p2=1.5, n=100)


_GOOD = {"p1": 0.5, "p2": 0.6, "n": 100, "p01": 0.1, "p10": 0.05, "discordance": 0.2, "alpha": 0.05,
         "power": 0.8, "ratio": 1.0}


@pytest.mark.parametrize("name", ["power_two_proportions", "sample_size_two_proportions", "mde_two_proportions",
                                  "power_paired_proportions", "sample_size_paired_proportions",
                                  "mde_paired_proportions", "cohens_h"])
def test_power_functions_blame_each_argument(name: str) -> None:
    """Each probability-like argument, set out of range alone, is the one the error names."""
    fn = getattr(power, name)
    params = [p for p in inspect.signature(fn).parameters if p in _GOOD]
    for bad in params:
        kwargs = {p: _GOOD[p] for p in params}
        kwargs[bad] = 1.5 if bad not in ("n", "ratio") else -1.0
        with pytest.raises((ArgumentError, ValueError)) as exc:
            fn(**kwargs)
        assert str(exc.value).startswith(bad), (name, bad, str(exc.value))


@pytest.mark.parametrize("value", ["a,b", "0", "1,x", ""])
def test_ranks_runs_blames_the_option(runs_csv: Path, capsys: pytest.CaptureFixture[str], value: str) -> None:
    assert main(["ranks", str(runs_csv), "--runs", value]) == 2
    err = capsys.readouterr().err
    assert "argument --runs" in err and "invalid literal" not in err and "int()" not in err


def test_ranks_runs_list_is_used(runs_csv: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["ranks", str(runs_csv), "--runs", "1,2", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [r["n_runs"] for r in doc["table"]] == [1, 2]


def test_backticked_response_and_specs() -> None:
    d = _odd_names().rename(columns={"y": "my score", "r": "r r"})
    plain = d.rename(columns={"my score": "y", "r r": "r", "lang name": "lang", "g h": "g"})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = em.lmer("`my score` ~ `lang name` + (1|`g h`)", d)
        ref = em.lmer("y ~ lang + (1|g)", plain)
        ordinal = em.clmm("`r r` ~ `lang name` + (1|`g h`)", d)
        ordinal_ref = em.clmm("r ~ lang + (1|g)", plain)
    np.testing.assert_allclose(fit.fixef.to_numpy(), ref.fixef.to_numpy(), rtol=1e-8)
    np.testing.assert_allclose(ordinal.coef.to_numpy(), ordinal_ref.coef.to_numpy(), rtol=1e-6)
    # emmeans specs name the column as the formula does, backticks or not
    for spec in ("`lang name`", "lang name"):
        means = em.emmeans(fit, spec).table
        assert means["lang name"].astype(str).tolist() == ["de", "en", "fr"]
        np.testing.assert_allclose(means["estimate"], em.emmeans(ref, "lang").table["estimate"], rtol=1e-8)
    from evalmix.model.parse import parse_formula

    assert parse_formula("`my score` ~ x + (1|g)").without_random().text == "`my score` ~ x"


def test_anova_names_backticked_terms_as_r() -> None:
    """lmerTest's anova() prints the term `lang name` in backticks; so do the F and Wald tables."""
    d = _odd_names()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        lm = em.lmer("y ~ `I(x)` + `lang name` + (1|`g h`)", d)
        gl = em.glmer("c ~ `I(x)` + `lang name` + (1|`g h`)", d)
    assert em.anova(lm).table["term"].tolist() == ["`I(x)`", "`lang name`"]
    assert em.anova(gl).table["term"].tolist()[-2:] == ["`I(x)`", "`lang name`"]


def test_formula_grouping_columns_keep_names(tmp_path: Path) -> None:
    """A grouping factor named in a formula is an identifier too, in every engine and in the CLI."""
    rng = np.random.default_rng(5)
    groups = np.repeat(["1", "1.0", "2", "01"], 30)
    d = pd.DataFrame({"grp": groups, "x": rng.normal(size=120)})
    d["score"] = d["x"] + rng.normal(size=120) + pd.Series(groups).map({"1": 0, "1.0": 1, "2": -1, "01": 2})
    d["rating"] = pd.cut(d["score"], [-9, -1, 0, 1, 9], labels=False) + 1
    path = tmp_path / "g.csv"
    d.to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert em.lmer("score ~ x + (1|grp)", path).ngroups["grp"] == 4
        assert em.clmm("rating ~ x + (1|grp)", path).ngrps["grp"] == 4
    import argparse

    from evalmix.cli._common import id_columns

    args = argparse.Namespace(model="model", formula=["y ~ (1|grp)", "y ~ x + (1|`g h`:run)"])
    assert {"grp", "g h", "run"} <= set(id_columns(args))
