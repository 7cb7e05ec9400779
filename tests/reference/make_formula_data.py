"""Simulate the two data sets of formula_reference.R (run once; the CSVs are committed).

    python tests/reference/make_formula_data.py

formula_binary.csv: 0/1 answers of 80 items x 8 rows with a curved effect of age (in decades), an integer-coded
site (a factor only when wrapped in factor()), an ordered difficulty level, a Y/N copy of the
response, integer prior weights and a positive exposure for offsets.
formula_counts.csv: k of n successes for 60 items x 4 conditions with a dose covariate, an
ordered level and integer prior weights.
"""

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent


def binary(rng: np.random.Generator) -> pd.DataFrame:
    n_items, per = 80, 8
    item = np.repeat(np.arange(n_items), per)
    n = item.size
    age = np.round(rng.uniform(2.0, 7.0, n), 2)  # in decades: lme4 needs well-scaled columns
    site = rng.integers(1, 4, n)
    grp = rng.choice(["ctrl", "trt"], n)
    level = rng.choice(["low", "mid", "high"], n)
    expo = np.round(rng.uniform(0.5, 3.0, n), 2)
    eff_level = {"low": 0.4, "mid": 0.0, "high": -0.6}
    eta = (rng.normal(0, 0.9, n_items)[item] + 0.8 * (age - 4.5) - 0.3 * (age - 4.5) ** 2
           + 0.5 * (grp == "trt") + np.array([0.0, 0.3, -0.3])[site - 1]
           + np.vectorize(eff_level.get)(level) + 0.3 * np.log(expo))
    y = (rng.random(n) < 1 / (1 + np.exp(-eta))).astype(int)
    return pd.DataFrame({
        "item": [f"i{j:02d}" for j in item], "age": age, "site": site, "grp": grp,
        "level": level, "expo": expo, "w": rng.integers(1, 4, n), "y": y,
        "resp": np.where(y == 1, "Y", "N")})


def counts(rng: np.random.Generator) -> pd.DataFrame:
    n_items = 60
    item = np.repeat(np.arange(n_items), 4)
    cond = np.tile(["a", "b", "c", "d"], n_items)
    n = item.size
    dose = np.round(rng.uniform(0.5, 4.0, n), 2)
    level = rng.choice(["low", "mid", "high"], n)
    trials = rng.integers(5, 21, n)
    eta = (rng.normal(0, 0.7, n_items)[item] - 0.5 + 0.6 * dose - 0.1 * dose**2
           + np.array([0.0, 0.4, -0.2, 0.7])[np.searchsorted(["a", "b", "c", "d"], cond)]
           + np.vectorize({"low": 0.3, "mid": 0.0, "high": -0.4}.get)(level))
    k = rng.binomial(trials, 1 / (1 + np.exp(-eta)))
    return pd.DataFrame({"item": [f"i{j:02d}" for j in item], "cond": cond, "dose": dose,
                         "level": level, "k": k, "n": trials, "w": rng.integers(1, 4, n)})


if __name__ == "__main__":
    rng = np.random.default_rng(20261123)
    binary(rng).to_csv(HERE / "formula_binary.csv", index=False)
    counts(rng).to_csv(HERE / "formula_counts.csv", index=False)
