"""Regenerate the bundled example_ratings.csv and example_battles.csv (src/evalmix/data/examples/, which
data/example_*.csv link to): `python data/make_scores.py`.

Both are simulated with a known truth (see data/README.md): judge ratings on a 1-5 scale of four
models by two judges (a cumulative-logit model with item and item:run effects and a lenient second
judge), and arena battles between the same four models (Bradley-Terry with Davidson ties).
"""

from pathlib import Path

import numpy as np
import pandas as pd

MODELS = {"model-A": 0.8, "model-B": 0.4, "model-C": 0.0, "model-D": -0.5}  # latent scale (logit)
JUDGES = {"judge-1": 0.0, "judge-2": 0.5}  # judge-2 rates higher (lenient)
THRESHOLDS = [-2.0, -0.7, 0.6, 2.0]  # cut points of the 1-5 scale
SD_ITEM, SD_ITEM_RUN = 1.0, 0.4
N_ITEMS, N_RUNS = 60, 2
N_BATTLES, TIE_NU = 2000, 0.3  # Davidson tie parameter


def ratings(rng: np.random.Generator) -> pd.DataFrame:
    item = rng.normal(0, SD_ITEM, N_ITEMS)
    item_run = rng.normal(0, SD_ITEM_RUN, (N_ITEMS, N_RUNS))
    rows = []
    for i in range(N_ITEMS):
        for r in range(N_RUNS):
            for m, effect in MODELS.items():
                for j, bias in JUDGES.items():
                    latent = effect + bias + item[i] + item_run[i, r] + rng.logistic()
                    rows.append((m, f"q{i + 1:02d}", r + 1, j, 1 + int(np.sum(latent > np.array(THRESHOLDS)))))
    return pd.DataFrame(rows, columns=["model", "item", "run", "judge", "rating"])


def battles(rng: np.random.Generator) -> pd.DataFrame:
    names = list(MODELS)
    strength = np.exp(np.array(list(MODELS.values())))
    rows = []
    for b in range(N_BATTLES):
        a, c = rng.choice(len(names), 2, replace=False)
        pa, pc = strength[a], strength[c]
        tie = TIE_NU * np.sqrt(pa * pc)
        u = rng.random() * (pa + pc + tie)
        winner = "model_a" if u < pa else ("model_b" if u < pa + pc else "tie")
        rows.append((names[a], names[c], winner, f"p{rng.integers(1, 301):03d}"))
    return pd.DataFrame(rows, columns=["model_a", "model_b", "winner", "prompt"])


if __name__ == "__main__":
    rng = np.random.default_rng(2026)
    here = Path(__file__).parents[1] / "src" / "evalmix" / "data" / "examples"  # the package data
    ratings(rng).to_csv(here / "example_ratings.csv", index=False)
    battles(rng).to_csv(here / "example_battles.csv", index=False)
    print(f"wrote {here / 'example_ratings.csv'} and {here / 'example_battles.csv'}")
