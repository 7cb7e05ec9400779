"""Reference values of girth's marginal maximum-likelihood IRT fits, read by tests/studies/test_irt.py.

Run with a Python that has girth (kept out of evalmix's environment):

    python -m venv /tmp/venv-irt && /tmp/venv-irt/bin/pip install girth numpy scipy
    /tmp/venv-irt/bin/python tests/reference/irt_girth.py

Two data sets, simulated here with fixed seeds and stored in the JSON with girth's estimates:

- ``onepl``: 10 models x 300 items, one run.  evalmix's 1PL (items random, abilities fixed) on
  this table is the same likelihood as girth's ``onepl_mml`` on the transposed table (items as
  girth's persons, models as girth's items): girth's common discrimination is evalmix's SD of the
  item intercepts, and girth's difficulty of model m is ``-(alpha theta_m + mu_c) / sd_c``.
- ``twopl``: 30 items x 400 models, one run, fitted by girth's ``twopl_mml`` (abilities N(0, 1),
  items fixed); evalmix fits the same responses with items random and abilities fixed, so the two
  agree up to the choice of ability scale (compared after a linear map of the scale).
"""

from __future__ import annotations

import json
import platform
from importlib.metadata import version
from pathlib import Path

import girth
import numpy as np


def simulate(n_items: int, n_models: int, seed: int, disc_sd: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    a = rng.normal(1.0, disc_sd, n_items)
    b = rng.normal(0.0, 1.0, n_items)
    theta = rng.normal(0.0, 1.0, n_models)
    p = 1.0 / (1.0 + np.exp(-a[:, None] * (theta[None, :] - b[:, None])))
    y = (rng.random(p.shape) < p).astype(int)   # items x models
    return y, a, b, theta


def rows(y: np.ndarray) -> list[str]:
    """A 0/1 matrix as one string per item (row)."""
    return ["".join(str(int(v)) for v in row) for row in y]


def main() -> None:
    out: dict[str, object] = {"tools": {"girth": version("girth"), "numpy": np.__version__,
                                        "python": platform.python_version()}}
    y1, a1, b1, t1 = simulate(300, 10, seed=11, disc_sd=0.0)
    one = girth.onepl_mml(y1.T)   # girth's items are evalmix's models
    out["onepl"] = {"correct": rows(y1), "girth_discrimination": float(one["Discrimination"]),
                    "girth_difficulty": np.asarray(one["Difficulty"]).tolist()}
    y2, a2, b2, t2 = simulate(30, 400, seed=12, disc_sd=0.3)
    two = girth.twopl_mml(y2)
    out["twopl"] = {"correct": rows(y2), "true_discrimination": a2.tolist(), "true_difficulty": b2.tolist(),
                    "girth_discrimination": np.asarray(two["Discrimination"]).tolist(),
                    "girth_difficulty": np.asarray(two["Difficulty"]).tolist()}
    path = Path(__file__).with_name("irt_girth.json")
    path.write_text(json.dumps(out, indent=1) + "\n")


if __name__ == "__main__":
    main()
