"""Error-message parity across engines: text in a numeric response names its row in every engine, a
random term without its bar says so, and an outcome given to an engine that cannot fit it points to
the one that can (in Python and on the command line)."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import evalmix as em
from evalmix.cli import main
from evalmix.core.errors import DataError, FormulaError
from evalmix.model.response import engine_hint, non_numeric_message


def _data(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n = 120
    d = pd.DataFrame({"model": np.tile(["a", "b", "c"], 40), "item": np.repeat(np.arange(40), 3)})
    d["rating"] = rng.integers(1, 6, n)
    d["correct"] = rng.integers(0, 2, n)
    d["score"] = rng.uniform(0.05, 0.95, n)
    d["wide"] = rng.normal(50, 10, n)
    return d


ENGINES = {
    "lmer": lambda f, d: em.lmer(f, d),
    "glmer": lambda f, d: em.glmer(f, d),
    "clmm": lambda f, d: em.clmm(f, d),
    "glmmtmb": lambda f, d: em.glmmtmb(f, d, family="beta"),
}


@pytest.mark.parametrize("engine", ENGINES)
@pytest.mark.parametrize("column", ["rating", "score"])
def test_text_in_the_response_names_its_row(engine: str, column: str) -> None:
    d = _data().astype({column: object})
    d.loc[7, column] = "good"
    with pytest.raises(DataError) as exc:
        ENGINES[engine](f"{column} ~ model + (1|item)", d)
    msg = str(exc.value)
    assert repr(column) in msg
    # the row and its value, as lmer has always said it
    assert re.search(r"row 7(:| has)", msg) and "good" in msg, msg


def test_non_numeric_message_counts_the_rest() -> None:
    s = pd.Series([1, "good", 3, "bad", "worse"], index=[10, 11, 12, 13, 14])
    assert non_numeric_message(s, "rating") == \
        "response column 'rating' must be numeric (row 11 has 'good'; 2 more rows hold text)"
    assert non_numeric_message(pd.Series(["1", "2"]), "rating") is None


@pytest.mark.parametrize("engine", [*ENGINES, "bayes.glmer"])
@pytest.mark.parametrize("term, fixed", [("(1 item)", "(1 | item)"), ("(1 + model item)", "(1 + model | item)"),
                                         ("(1 item:model)", "(1 | item:model)")])
def test_a_random_term_without_its_bar(engine: str, term: str, fixed: str) -> None:
    fit = em.bayes.glmer if engine == "bayes.glmer" else ENGINES[engine]
    y = {"lmer": "score", "glmer": "correct", "clmm": "rating", "glmmtmb": "score", "bayes.glmer": "correct"}[engine]
    with pytest.raises(FormulaError, match=re.escape(f"missing the bar of a random term: write {fixed}")):
        fit(f"{y} ~ model + {term}", _data())


@pytest.mark.parametrize("engine", list(ENGINES))
def test_a_random_term_without_its_parentheses(engine: str) -> None:
    y = {"lmer": "score", "glmer": "correct", "clmm": "rating", "glmmtmb": "score"}[engine]
    with pytest.raises(FormulaError, match=re.escape("without its parentheses: write (1|item)")):
        ENGINES[engine](f"{y} ~ model + 1|item", _data())


def test_parenthesised_fixed_terms_are_not_taken_for_bars() -> None:
    from evalmix.model.parse import parse_formula

    assert parse_formula("y ~ (a + b) + (1|g)").fixed == "(a + b)"
    assert parse_formula("y ~ (x)").fixed == "(x)"
    assert parse_formula("y ~ I(a | b) + (1|g)").fixed == "I(a | b)"  # R's 'or' inside a call


# --- the wrong engine points to the right one ------------------------------------------------------

@pytest.mark.parametrize("engine, column, pointer", [
    ("glmer", "rating", "evalmix.clmm"),  # a 1-5 rating in a binomial GLMM
    ("glmer", "score", "evalmix.lmer"),  # a continuous score in a binomial GLMM
    ("glmer", "wide", "evalmix.lmer"),
    ("clmm", "correct", "evalmix.glmer"),  # a 0/1 outcome in a cumulative-link model
    ("clmm", "score", "evalmix.lmer"),  # a continuous score in a cumulative-link model
    ("clmm", "wide", "evalmix.lmer"),
    ("glmmtmb", "rating", "evalmix.clmm"),  # ratings in the beta family
    ("glmmtmb", "correct", "evalmix.glmer"),  # a 0/1 outcome in the beta family
    ("glmmtmb", "wide", "evalmix.lmer"),
])
def test_wrong_engine_points_to_the_right_one(engine: str, column: str, pointer: str) -> None:
    with pytest.raises(DataError) as exc:
        ENGINES[engine](f"{column} ~ model + (1|item)", _data())
    msg = str(exc.value)
    assert pointer in msg, msg
    # and its command-line spelling
    family = {"evalmix.clmm": "--family ordinal", "evalmix.lmer": "--family gaussian",
              "evalmix.glmer": "--family binomial"}[pointer]
    assert family in msg, msg


def test_engine_hint_kinds() -> None:
    assert engine_hint([0, 1, 1, 0], "glmer") == ""
    assert engine_hint([1, 2, 3, 4, 5], "clmm") == ""
    assert engine_hint([0.2, 0.5], "glmmtmb") == ""
    assert "integer ratings (1 to 5)" in engine_hint([1, 5, 3], "glmer")
    assert "continuous scores in [0, 1]" in engine_hint([0.2, 0.5], "clmm")
    assert engine_hint([0.2, 0.5], "clmm").count("family='beta'") == 1
    assert engine_hint(["a", "b"], "glmer") == ""


@pytest.mark.parametrize("column, family, pointer", [
    ("rating", "binomial", "--family ordinal"),
    ("score", "binomial", "--family gaussian"),
    ("correct", "ordinal", "--family binomial"),
    ("score", "ordinal", "--family gaussian"),
])
def test_cli_fit_points_to_the_family(tmp_path: Path, capsys: pytest.CaptureFixture[str], column: str,
                                      family: str, pointer: str) -> None:
    path = tmp_path / "d.csv"
    _data().assign(run=1).to_csv(path, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        code = main(["fit", str(path), "--formula", f"{column} ~ model + (1|item)", "--family", family])
    assert code != 0
    assert pointer in capsys.readouterr().err


@pytest.mark.parametrize("engine", ["lmer", "clmm", "glmer", "glmmtmb"])
def test_bayesian_twins_name_the_row_too(engine: str) -> None:
    d = _data().astype({"rating": object})
    d.loc[7, "rating"] = "good"
    fit = getattr(em.bayes, engine)
    extra = {"family": "beta"} if engine == "glmmtmb" else {}
    with pytest.raises(DataError) as exc:
        fit("rating ~ model + (1|item)", d, **extra)
    msg = str(exc.value)
    assert re.search(r"row 7(:| has)", msg) and "good" in msg, msg
    if engine != "glmer":
        assert msg.startswith("response column 'rating' must be numeric (row 7 has 'good')"), msg
