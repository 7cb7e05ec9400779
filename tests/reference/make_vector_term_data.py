"""Write the simulated data sets of vector-valued random-effect terms with three or four
coefficients (tests/model/test_vector_terms.py, vector_term_reference.R).

Run from the repository root: ``python tests/reference/make_vector_term_data.py``. Seeded, so the
CSV is reproducible; it is committed so that R and Python read identical rows. Several sets put a
rank-one or rank-two covariance on few groups, where the optimum lies on the boundary of theta.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent


def expit(x: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-x))


def runs_by_model(rng: np.random.Generator, name: str, n_models: int, n_items: int,
                  L: np.ndarray) -> pd.DataFrame:
    """Binary outcomes of models x items x runs; run r of model m shifts the logit by (L z_m)_r."""
    n_runs = L.shape[0]
    eff = rng.normal(0.0, 0.5, n_models)
    a = rng.normal(0.0, 1.2, n_items)
    b = rng.normal(size=(n_models, L.shape[1])) @ L.T
    rows = []
    for m in range(n_models):
        for i in range(n_items):
            for r in range(n_runs):
                eta = 0.3 + eff[m] + a[i] + b[m, r]
                rows.append((name, f"m{m + 1}", f"q{i + 1:03d}", r + 1, "", 0.0, 0.0,
                             int(rng.random() < expit(eta))))
    return pd.DataFrame(rows, columns=COLS)


def subjects_by_condition(rng: np.random.Generator, name: str, n_subj: int, n_items: int,
                          levels: list[str], fixed: np.ndarray, L: np.ndarray) -> pd.DataFrame:
    """Binary outcomes of subjects x condition levels x items, ``(1 + cond|subject)``."""
    a = rng.normal(0.0, 0.8, n_items)
    b = rng.normal(size=(n_subj, L.shape[1])) @ L.T
    rows = []
    for s in range(n_subj):
        for j, lev in enumerate(levels):
            for i in range(n_items):
                eta = fixed[0] + a[i] + b[s, 0] + (fixed[j] + b[s, j] if j else 0.0)
                rows.append((name, f"s{s + 1:02d}", f"q{i + 1:03d}", 0, lev, 0.0, 0.0,
                             int(rng.random() < expit(eta))))
    return pd.DataFrame(rows, columns=COLS)


def numeric_slopes(rng: np.random.Generator, name: str, n_groups: int, n_per: int,
                   L: np.ndarray) -> pd.DataFrame:
    """Binary outcomes with two numeric covariates and ``(1 + x1 + x2|g)``."""
    b = rng.normal(size=(n_groups, 3)) @ L.T
    rows = []
    for g in range(n_groups):
        x1 = rng.normal(size=n_per)
        x2 = rng.uniform(-1.0, 1.0, n_per)
        eta = 0.2 + 0.5 * x1 - 0.4 * x2 + b[g, 0] + b[g, 1] * x1 + b[g, 2] * x2
        y = (rng.random(n_per) < expit(eta)).astype(int)
        for k in range(n_per):
            rows.append((name, f"g{g + 1:02d}", "", 0, "", round(float(x1[k]), 6),
                         round(float(x2[k]), 6), int(y[k])))
    return pd.DataFrame(rows, columns=COLS)


COLS = ["set", "group", "item", "run", "cond", "x1", "x2", "y"]


def main() -> None:
    rng = np.random.default_rng(20261123)
    rank1 = np.array([[0.15], [0.25], [-0.35]])
    rank1b = np.array([[0.0], [-0.3], [0.4]])
    rank2 = np.array([[0.3, 0.0], [0.1, 0.2], [-0.2, 0.3], [0.25, -0.1]])
    full3 = np.array([[0.8, 0.0, 0.0], [-0.3, 0.5, 0.0], [0.2, 0.1, 0.4]])
    sing4 = np.array([[0.7, 0.0, 0.0, 0.0], [-0.2, 0.4, 0.0, 0.0], [0.1, -0.3, 0.0, 0.0],
                      [0.3, 0.2, 0.0, 0.0]])
    slopes3 = np.array([[0.7, 0.0, 0.0], [0.3, 0.4, 0.0], [-0.2, 0.0, 0.3]])
    sets = [
        runs_by_model(rng, "runs_rank1", 5, 60, rank1),
        runs_by_model(rng, "runs_rank1_zero_first", 5, 60, rank1b),
        runs_by_model(rng, "runs_rank1_seven", 7, 40, rank1),
        runs_by_model(rng, "runs4_rank2", 6, 50, rank2),
        subjects_by_condition(rng, "cond3_full", 40, 12, ["a", "b", "c"],
                              np.array([0.2, 0.5, -0.4]), full3),
        subjects_by_condition(rng, "cond4_rank2", 30, 10, ["a", "b", "c", "d"],
                              np.array([0.1, 0.4, -0.3, 0.8]), sing4),
        numeric_slopes(rng, "slopes3", 25, 40, slopes3),
        # four groups, nc = 4: a start from which L-BFGS-B stops on the face L[1, 1] = 0 with the
        # column's signs flipped (0.107 below the optimum) unless its mirror image is probed
        runs_by_model(np.random.default_rng(2), "runs4_rank1_mirror", 4, 40,
                      np.array([[0.1], [0.3], [-0.3], [0.2]])),
    ]
    pd.concat(sets, ignore_index=True).to_csv(HERE / "vector_terms.csv", index=False)


if __name__ == "__main__":
    main()
