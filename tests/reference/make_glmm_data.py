"""Write the simulated datasets that the lme4 reference (lme4_reference.R) and the tests both fit.

Run from the repository root: ``python tests/reference/make_glmm_data.py``.  Seeded, so the CSVs
are reproducible; they are committed so that R and Python read identical rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent


def expit(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def item_run(rng: np.random.Generator, sd_run: float, n_items: int, n_runs: int) -> pd.DataFrame:
    models = np.array(["alpha", "beta", "gamma", "delta"])
    eff = {"alpha": 0.0, "beta": 0.6, "gamma": -0.4, "delta": 1.1}
    a = rng.normal(0, 1.3, n_items)
    ar = rng.normal(0, sd_run, (n_items, n_runs))
    rows = []
    for m in models:
        for i in range(n_items):
            for r in range(n_runs):
                eta = 0.2 + eff[m] + a[i] + ar[i, r]
                rows.append((m, f"q{i + 1:03d}", r + 1, int(rng.random() < expit(eta))))
    return pd.DataFrame(rows, columns=["model", "item", "run", "correct"])


def main() -> None:
    rng = np.random.default_rng(20240611)
    item_run(rng, 0.7, 60, 4).to_csv(HERE / "glmm_item_run.csv", index=False)
    item_run(rng, 0.0, 40, 3).to_csv(HERE / "glmm_singular.csv", index=False)

    # correlated random slope: (1 + x | g)
    g = np.repeat(np.arange(40), 25)
    x = rng.normal(0, 1, g.size).round(3)
    cov = np.array([[1.0, 0.3], [0.3, 0.36]])
    b = rng.multivariate_normal([0, 0], cov, 40)
    eta = -0.3 + 0.8 * x + b[g, 0] + b[g, 1] * x
    pd.DataFrame({"g": [f"g{v:02d}" for v in g], "x": x,
                  "correct": (rng.random(g.size) < expit(eta)).astype(int)}
                 ).to_csv(HERE / "glmm_slope.csv", index=False)

    # crossed item and template effects
    n_items, n_tmpl = 60, 12
    a = rng.normal(0, 1.0, n_items)
    t = rng.normal(0, 0.6, n_tmpl)
    rows = []
    for m, eff in (("A", 0.0), ("B", 0.5), ("C", -0.5)):
        for i in range(n_items):
            for tp in rng.choice(n_tmpl, 3, replace=False):
                eta = 0.3 + eff + a[i] + t[tp]
                rows.append((m, f"i{i:02d}", f"t{tp:02d}", int(rng.random() < expit(eta))))
    pd.DataFrame(rows, columns=["model", "item", "template", "correct"]
                 ).to_csv(HERE / "glmm_crossed.csv", index=False)

    # unbalanced: two factors, runs missing at random, one model x language cell thin
    d = item_run(rng, 0.5, 50, 3)
    d["language"] = np.where(rng.random(len(d)) < 0.5, "EN", "ES")
    keep = rng.random(len(d)) < 0.7
    thin = (d["model"] == "delta") & (d["language"] == "ES")
    keep &= ~thin | (rng.random(len(d)) < 0.15)
    d[keep].to_csv(HERE / "glmm_unbalanced.csv", index=False)

    # k-of-n counts
    n_items = 70
    a = rng.normal(0, 1.1, n_items)
    rows = []
    for m, eff in (("A", 0.0), ("B", 0.7), ("C", -0.3)):
        for i in range(n_items):
            n = int(rng.integers(1, 9))
            k = int(rng.binomial(n, expit(0.1 + eff + a[i])))
            rows.append((m, f"i{i:02d}", k, n))
    pd.DataFrame(rows, columns=["model", "item", "k", "n"]).to_csv(HERE / "glmm_counts.csv", index=False)


if __name__ == "__main__":
    main()
