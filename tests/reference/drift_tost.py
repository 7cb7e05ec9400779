"""Reference numbers of statsmodels' TOST for tests/studies/test_drift.py.

Run from the repository root (statsmodels is in evalmix's test environment)::

    python tests/reference/drift_tost.py

Seeded scenarios of per-item mean scores of one model in two waves (the mean of its runs on each
item): no change, a change inside the margin, a change at the margin and a change beyond it.  For
each it records ``statsmodels.stats.weightstats.ttost_paired(after, before, -margin, margin)``
(the p-value and both one-sided tests), ``scipy.stats.ttest_rel`` (the two-sided p of no change)
and ``DescrStatsW(after - before).tconfint_mean`` (the 95% paired t interval).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import scipy
import statsmodels
from scipy import stats
from statsmodels.stats.weightstats import DescrStatsW, ttost_paired

OUT = Path(__file__).resolve().parent / "drift_tost.json"


def scenario(name: str, seed: int, n_items: int, n_runs: int, change: float, margin: float) -> dict:
    rng = np.random.default_rng(seed)
    p = rng.uniform(0.2, 0.8, n_items)
    before = rng.binomial(n_runs, p) / n_runs
    after = rng.binomial(n_runs, p + change) / n_runs
    p_tost, low, high = ttost_paired(after, before, -margin, margin)
    diff = DescrStatsW(after - before)
    ci = diff.tconfint_mean(alpha=0.05)
    return {"name": name, "seed": seed, "n_runs": n_runs, "change": change, "margin": margin,
            "before": before.tolist(), "after": after.tolist(),
            "p_tost": float(p_tost), "lower_test": [float(v) for v in low], "upper_test": [float(v) for v in high],
            "ttest_rel_p": float(stats.ttest_rel(after, before).pvalue), "estimate": float(diff.mean),
            "se": float(diff.std_mean), "conf_low": float(ci[0]), "conf_high": float(ci[1])}


def main() -> None:
    doc = {"statsmodels": statsmodels.__version__, "scipy": scipy.__version__,
           "scenarios": [scenario("no_change", 107, 1500, 3, 0.0, 0.03),
                         scenario("inside_margin", 102, 500, 4, 0.01, 0.04),
                         scenario("at_margin", 103, 400, 2, 0.03, 0.03),
                         scenario("beyond_margin", 104, 250, 5, 0.08, 0.02)]}
    OUT.write_text(json.dumps(doc, indent=1) + "\n")


if __name__ == "__main__":
    main()
