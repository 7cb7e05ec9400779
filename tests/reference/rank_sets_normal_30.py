"""Reference output of ``evalmix.rank_sets_normal`` on a seeded 30-model case.

Written by the implementation that computed the per-model critical values one model row at a time
(before they were vectorised over models); tests/studies/test_leaderboard.py checks the current code
against it to 1e-10.  Regenerate only on purpose:

    PYTHONPATH=src python tests/reference/rank_sets_normal_30.py > tests/reference/rank_sets_normal_30.json
"""

from __future__ import annotations

import json

import numpy as np

from evalmix import leaderboard
from evalmix.studies.leaderboard import rank_sets_normal


def case() -> tuple[np.ndarray, np.ndarray]:
    """30 estimates with a correlated covariance (a shared item component plus unequal noise)."""
    rng = np.random.default_rng(2026)
    k = 30
    est = np.sort(rng.normal(0.0, 0.15, k))[::-1]
    load = rng.uniform(0.2, 1.0, k)
    cov = 0.002 * np.outer(load, load) + np.diag(rng.uniform(0.001, 0.004, k))
    return est, cov


def reference() -> dict:
    est, cov = case()
    rs = rank_sets_normal(est, cov, labels=[f"m{j:02d}" for j in range(len(est))])
    t, p = rs.table, rs.pairs
    return {"table": {c: t[c].tolist() for c in ["model", "rank_low", "rank_high", "marginal_rank_low",
                                                 "marginal_rank_high", "tie_group"]},
            "pairs": {c: p[c].tolist() for c in ["model_a", "model_b", "p_adjusted", "separated"]},
            "critical_value": float(p["critical_value"].iloc[0]),
            "marginal_critical_values": marginal_critical_values(est, cov).tolist()}


def marginal_critical_values(est: np.ndarray, cov: np.ndarray) -> np.ndarray:
    """Each model's own critical value (not in the result; it sets the marginal rank intervals)."""
    a, b = np.triu_indices(len(est), 1)
    d_se = np.sqrt(cov[a, a] + cov[b, b] - 2 * cov[a, b])
    z = np.abs((est[a] - est[b]) / d_se)
    return leaderboard._normal_critical_draws(cov, d_se, z, 0.95)[1]


if __name__ == "__main__":
    print(json.dumps(reference(), indent=1))
