"""Crossed random effects: evalmix.glmer against lme4::glmer on the same machine, in one run.

Designs (seeded; the data are written to a temporary folder for R):

- ``rasch``: a leaderboard of M models x I items, one run, ``correct ~ 1 + (1|model) + (1|item)``
  (default 500 x 4,000 = 2M rows);
- ``slope``: S subjects x I items with a three-level factor ``x`` varying within subject,
  ``correct ~ x + (1|item) + (1 + x|subject)`` (default 300 x 40 x 3 = 36,000 rows).

Usage (from the repository root)::

    python bench/bench_crossed.py rasch --models 500 --items 4000
    python bench/bench_crossed.py slope --subjects 300 --items 40
    python bench/bench_crossed.py rasch --no-r          # evalmix only

Prints each library's seconds and log-likelihood and the ratio evalmix / lme4.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from evalmix import glmer  # noqa: E402


def rasch(models: int, items: int, seed: int = 1) -> tuple[pd.DataFrame, str]:
    rng = np.random.default_rng(seed)
    mi, ii = np.meshgrid(np.arange(models), np.arange(items), indexing="ij")
    eta = rng.normal(0, 1, models)[mi.ravel()] + rng.normal(0, 1.5, items)[ii.ravel()]
    df = pd.DataFrame({"model": [f"m{j:05d}" for j in mi.ravel()],
                       "item": [f"i{j:06d}" for j in ii.ravel()],
                       "correct": (rng.random(eta.size) < 1 / (1 + np.exp(-eta))).astype(int)})
    return df, "correct ~ 1 + (1|model) + (1|item)"


def slope(subjects: int, items: int, seed: int = 1) -> tuple[pd.DataFrame, str]:
    rng = np.random.default_rng(seed)
    levels = np.array(["a", "b", "c"])
    s, i, x = (a.ravel() for a in np.meshgrid(np.arange(subjects), np.arange(items), np.arange(3),
                                                 indexing="ij"))
    L = np.array([[0.8, 0.0, 0.0], [0.3, 0.5, 0.0], [-0.2, 0.2, 0.4]])
    u = rng.normal(size=(subjects, 3)) @ L.T  # correlated intercept and two slope deviations
    beta = np.array([0.2, 0.5, -0.4])
    eta = beta[0] + np.where(x > 0, beta[x], 0.0) + u[s, 0] + np.where(x > 0, u[s, np.maximum(x, 1)], 0.0)
    eta += rng.normal(0, 1.0, items)[i]
    df = pd.DataFrame({"subject": [f"s{j:04d}" for j in s], "item": [f"i{j:03d}" for j in i],
                       "x": levels[x], "correct": (rng.random(eta.size) < 1 / (1 + np.exp(-eta))).astype(int)})
    return df, "correct ~ x + (1|item) + (1 + x|subject)"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("design", choices=["rasch", "slope"])
    ap.add_argument("--models", type=int, default=500)
    ap.add_argument("--items", type=int, default=None)
    ap.add_argument("--subjects", type=int, default=300)
    ap.add_argument("--no-r", action="store_true", help="time evalmix only")
    args = ap.parse_args()
    if args.design == "rasch":
        df, formula = rasch(args.models, args.items or 4000)
    else:
        df, formula = slope(args.subjects, args.items or 40)
    print(f"{args.design}: {len(df):,} rows, {formula}")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0 = time.perf_counter()
        fit = glmer(formula, df)
        t_em = time.perf_counter() - t0
    print(f"evalmix {t_em:8.2f} s   logLik {fit.loglik:.4f}   ({fit.optimizer.method}, "
          f"{fit.optimizer.deviance_evaluations} deviance evaluations)")
    if args.no_r:
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "data.csv"
        df.to_csv(path, index=False)
        out = subprocess.run(["Rscript", str(ROOT / "bench" / "bench_crossed.R"), str(path), formula],
                             capture_output=True, text=True, check=True)
    r = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"lme4 {r['lme4']} {r['seconds']:8.2f} s   logLik {r['loglik']:.4f}")
    print(f"ratio evalmix / lme4: {t_em / r['seconds']:.3f}   "
          f"logLik difference (evalmix - lme4): {fit.loglik - r['loglik']:+.2e}")


if __name__ == "__main__":
    main()
