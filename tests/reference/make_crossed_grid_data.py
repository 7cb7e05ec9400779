"""Write the crossed-grid datasets that crossed_grid_reference.R and tests/glmm/test_crossed.py fit.

Run from the repository root: ``python tests/reference/make_crossed_grid_data.py``. Seeded; the
CSVs are committed so that R and Python read identical rows.

- ``crossed_grid.csv``: 40 models x 250 items, one 0/1 answer each, sorted by model then item
  (every per-row vector is the models x items grid), with an item-level ``format`` (a/b);
- ``crossed_grid_incomplete.csv``: the same rows with 10% of the cells dropped and the rest
  shuffled (rows looked up cell by cell);
- ``crossed_grid_counts.csv``: 30 models x 200 items x 3 runs as k-of-3 counts, sorted by item
  then model (the transposed grid).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent


def grid(rng: np.random.Generator, models: int, items: int, runs: int) -> pd.DataFrame:
    mi, ii = (a.ravel() for a in np.meshgrid(np.arange(models), np.arange(items), indexing="ij"))
    fmt = rng.random(items) < 0.4
    eta = (0.3 + rng.normal(0, 0.8, models)[mi] + rng.normal(0, 1.4, items)[ii]
           - 0.5 * fmt[ii])
    k = rng.binomial(runs, 1.0 / (1.0 + np.exp(-eta)))
    return pd.DataFrame({"model": [f"m{j:02d}" for j in mi], "item": [f"i{j:03d}" for j in ii],
                         "format": np.where(fmt[ii], "b", "a"), "k": k})


def main() -> None:
    rng = np.random.default_rng(20261123)
    d = grid(rng, 40, 250, 1).rename(columns={"k": "correct"})
    d.to_csv(HERE / "crossed_grid.csv", index=False)
    keep = rng.random(len(d)) >= 0.1
    d[keep].sample(frac=1.0, random_state=3).to_csv(HERE / "crossed_grid_incomplete.csv",
                                                     index=False)
    c = grid(rng, 30, 200, 3).assign(n=3).sort_values(["item", "model"])
    c.to_csv(HERE / "crossed_grid_counts.csv", index=False)


if __name__ == "__main__":
    main()
