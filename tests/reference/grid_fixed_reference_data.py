"""Data of tests/reference/grid_fixed_reference.R: 100 models x 2,000 items, one 0/1 answer each.

Run from the repository root:
``python tests/reference/grid_fixed_reference_data.py [out.csv [models]]`` (default
/tmp/evalmix_grid_fixed.csv and 100 models). The tests rebuild the same grid with
``simulate_grid(models, 2000, rng=20261205, intercept=0.5)``.
"""

import sys

import pandas as pd

from evalmix.glmm.gridfit import simulate_grid

out = sys.argv[1] if len(sys.argv) > 1 else "/tmp/evalmix_grid_fixed.csv"
models = int(sys.argv[2]) if len(sys.argv) > 2 else 100
y, _ = simulate_grid(models, 2000, rng=20261205, intercept=0.5)
ns, nb = y.shape
pd.DataFrame({"model": [f"m{s:03d}" for s in range(ns) for _ in range(nb)],
              "item": [f"i{b:04d}" for _ in range(ns) for b in range(nb)],
              "correct": y.ravel()}).to_csv(out, index=False)
