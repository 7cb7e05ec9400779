"""Write the multi-benchmark table that fit_many_reference.R and tests/studies/test_fit_many.py both fit.

Run from the repository root: ``python tests/reference/make_fit_many_data.py``.  Seeded; the CSV is
committed so that R and Python read identical rows.  Benchmarks: ``math`` and ``code`` (four models,
item and item-by-run effects), ``chem`` (model ``delta`` absent: its level must be dropped) and
``tiny`` (a single item: its fit fails, in lme4 as in evalmix).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
EFFECTS = {"alpha": 0.0, "beta": 0.6, "delta": 1.1, "gamma": -0.4}


def benchmark(rng: np.random.Generator, name: str, n_items: int, n_runs: int, shift: float,
              models: list[str]) -> pd.DataFrame:
    a = rng.normal(0, 1.2, n_items)
    ar = rng.normal(0, 0.5, (n_items, n_runs))
    rows = []
    for m in models:
        for i in range(n_items):
            for r in range(n_runs):
                eta = shift + EFFECTS[m] + a[i] + ar[i, r]
                rows.append((name, m, f"{name}{i + 1:03d}", r + 1, int(rng.random() < 1 / (1 + np.exp(-eta)))))
    return pd.DataFrame(rows, columns=["benchmark", "model", "item", "run", "correct"])


def main() -> None:
    rng = np.random.default_rng(20261123)
    all_models = sorted(EFFECTS)
    d = pd.concat([benchmark(rng, "math", 50, 3, -0.3, all_models),
                   benchmark(rng, "code", 40, 3, 0.4, all_models),
                   benchmark(rng, "chem", 45, 2, 0.0, ["alpha", "beta", "gamma"]),
                   benchmark(rng, "tiny", 1, 3, 0.0, all_models)], ignore_index=True)
    d.to_csv(HERE / "fit_many_benchmarks.csv", index=False)


if __name__ == "__main__":
    main()
