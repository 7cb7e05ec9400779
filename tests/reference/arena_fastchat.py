"""Reference ratings of FastChat's ``compute_mle_elo`` on ``arena_battles.csv``.

    PYTHONPATH=src python tests/reference/arena_fastchat.py

Reproduces the algorithm of ``compute_mle_elo`` in FastChat's
``fastchat/serve/monitor/elo_analysis.py`` (Chatbot Arena's published notebook version, SCALE=400,
BASE=10, INIT_RATING=1000) without scikit-learn:

1. every battle is duplicated;
2. the design row of a battle has ``+log(BASE)`` in the column of ``model_a`` and ``-log(BASE)`` in
   that of ``model_b``; the response is 1 when ``model_a`` won, 0 when ``model_b`` won, and for a
   tie (``"tie"`` or ``"tie (bothbad)"``) 1 in the first copy and 0 in the second;
3. a logistic regression without intercept or penalty is fitted;
4. ratings are ``SCALE * coef + INIT_RATING``.

The design's columns sum to zero in every row, so the coefficients are determined up to a common
shift.  scikit-learn's solver starts at zero and its gradient steps stay in the row space of the
design, so it returns the minimum-norm solution: the coefficients sum to zero and the mean rating
is INIT_RATING.  Here the same logistic regression is fitted by statsmodels' IRLS to a deviance
tolerance of 1e-14 with the first model's coefficient fixed at zero (a full-rank design), and the
coefficients are then shifted to mean zero: the same minimum-norm solution.

``compute_mle_elo_with_tie`` is FastChat's later form of the same estimator (pivot tables of the
pooled battles and a weighted logistic regression); it gives the same ratings.  Writes ``arena_fastchat.json``.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
import statsmodels.api as sm

HERE = Path(__file__).resolve().parent


def compute_mle_elo(df: pd.DataFrame, scale: float = 400.0, base: float = 10.0,
                    init_rating: float = 1000.0) -> pd.Series:
    """FastChat's duplicated-battle logistic regression (see the module notes)."""
    models = pd.concat([df["model_a"], df["model_b"]]).unique()
    models = pd.Series(np.arange(len(models)), index=models)
    df = pd.concat([df, df], ignore_index=True)
    p, n = len(models), len(df)
    x = np.zeros((n, p))
    x[np.arange(n), models[df["model_a"]].to_numpy()] = +math.log(base)
    x[np.arange(n), models[df["model_b"]].to_numpy()] = -math.log(base)
    y = np.zeros(n)
    y[(df["winner"] == "model_a").to_numpy()] = 1.0
    tie = ((df["winner"] == "tie") | (df["winner"] == "tie (bothbad)")).to_numpy().copy()
    tie[n // 2:] = False  # one tie = one win for model_a (first copy) + one win for model_b
    y[tie] = 1.0
    # the first model's column is dropped (its coefficient fixed at 0) to make the design full rank;
    # shifting all coefficients to mean zero then gives scikit-learn's minimum-norm solution
    fit = sm.GLM(y, x[:, 1:], family=sm.families.Binomial()).fit(method="irls", tol=1e-14, maxiter=200)
    coef = np.concatenate([[0.0], np.asarray(fit.params)])
    coef -= coef.mean()
    return pd.Series(scale * coef + init_rating, index=models.index).sort_values(ascending=False)


def compute_mle_elo_with_tie(df: pd.DataFrame, scale: float = 400.0, base: float = 10.0,
                             init_rating: float = 1000.0) -> pd.Series:
    """FastChat's current form of the same fit: battles pooled into pivot tables, ``2 x (A wins) +
    (ties, both orders)`` weighting the row "first beats second" of each ordered pair, one weighted
    logistic regression on 2 K (K - 1) rows.  As in FastChat, a pair whose pooled count is missing
    (NaN after the tables' alignment) is skipped; FastChat's shift of the ratings to put
    mixtral-8x7b-instruct-v0.1 at 1114 does not apply (no such model here)."""
    wins_a = pd.pivot_table(df[df["winner"] == "model_a"], index="model_a", columns="model_b", aggfunc="size",
                            fill_value=0)
    is_tie = df["winner"].isin(["tie", "tie (bothbad)"])
    if not is_tie.any():
        ties = pd.DataFrame(0, index=wins_a.index, columns=wins_a.columns)
    else:
        ties = pd.pivot_table(df[is_tie], index="model_a", columns="model_b", aggfunc="size", fill_value=0)
        ties = ties + ties.T
    wins_b = pd.pivot_table(df[df["winner"] == "model_b"], index="model_a", columns="model_b", aggfunc="size",
                            fill_value=0)
    wins = wins_a * 2 + wins_b.T * 2 + ties
    models = pd.Series(np.arange(len(wins.index)), index=wins.index)
    rows, ys, weights = [], [], []
    for m_a in wins.index:
        for m_b in wins.columns:
            if m_a == m_b or math.isnan(wins.loc[m_a, m_b]) or math.isnan(wins.loc[m_b, m_a]):
                continue
            rows += [(models[m_a], models[m_b])] * 2
            ys += [1.0, 0.0]
            weights += [wins.loc[m_a, m_b], wins.loc[m_b, m_a]]
    idx = np.asarray(rows)
    x = np.zeros((len(idx), len(models)))
    x[np.arange(len(idx)), idx[:, 0]] = math.log(base)
    x[np.arange(len(idx)), idx[:, 1]] = -math.log(base)
    fit = sm.GLM(np.asarray(ys), x[:, 1:], family=sm.families.Binomial(),
                 freq_weights=np.asarray(weights, float)).fit(method="irls", tol=1e-14, maxiter=200)
    coef = np.concatenate([[0.0], np.asarray(fit.params)])
    coef -= coef.mean()
    return pd.Series(scale * coef + init_rating, index=models.index).sort_values(ascending=False)


def main() -> None:
    battles = pd.read_csv(HERE / "arena_battles.csv")
    elo = compute_mle_elo(battles)
    doc = {"source": "arena_battles.csv", "algorithm": "FastChat compute_mle_elo (duplicated battles, "
           "logistic regression without intercept, SCALE=400, BASE=10, INIT_RATING=1000)",
           "model": elo.index.tolist(), "rating": elo.to_numpy().tolist(),
           "rating_with_tie": compute_mle_elo_with_tie(battles).loc[elo.index].to_numpy().tolist()}
    (HERE / "arena_fastchat.json").write_text(json.dumps(doc, indent=2) + "\n")


if __name__ == "__main__":
    main()
