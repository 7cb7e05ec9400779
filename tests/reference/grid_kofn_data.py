"""Data of tests/reference/grid_kofn_reference.R: a 20 models x 150 items grid of k-of-n answers.

Each cell holds ``k`` successes of ``n`` runs, ``n`` drawn from 1..5 and set to 0 (an empty cell)
in about one cell of ten. Run from the repository root:
``python tests/reference/grid_kofn_data.py`` (writes tests/reference/grid_kofn.csv, every cell,
the empty ones included; the R script and tests/glmm/test_gridfit_kofn.py read it).
"""

from pathlib import Path

import numpy as np
import pandas as pd

from evalmix.glmm.gridfit import simulate_grid

ns, nb = 20, 150
g = np.random.default_rng(20261205)
n = g.integers(1, 6, size=(ns, nb))
n[g.random((ns, nb)) < 0.1] = 0
k, _ = simulate_grid(ns, nb, trials=n, model_sd=1.0, item_sd=1.5, intercept=0.4, rng=g)
pd.DataFrame({"model": [f"m{s:02d}" for s in range(ns) for _ in range(nb)],
              "item": [f"i{b:03d}" for _ in range(ns) for b in range(nb)],
              "k": k.ravel(), "n": n.ravel()}).to_csv(Path(__file__).with_name("grid_kofn.csv"),
                                                       index=False)
