"""Crossed random effects: evalmix.glmer against lme4::glmer on the same machine, in one run.

Designs (seeded; the data are written to a temporary folder for R):

- ``rasch``: a leaderboard of M models x I items, one run, ``correct ~ 1 + (1|model) + (1|item)``
  (default 500 x 4,000 = 2M rows);
- ``slope``: S subjects x I items with a three-level factor ``x`` varying within subject,
  ``correct ~ x + (1|item) + (1 + x|subject)`` (default 300 x 40 x 3 = 36,000 rows).

Usage (from the repository root)::

    python bench/bench_crossed.py rasch --models 500 --items 4000
    python bench/bench_crossed.py slope --subjects 300 --items 40
    python bench/bench_crossed.py slope --uncorrelated     # (1 + x||subject)
    python bench/bench_crossed.py rasch --no-r          # evalmix only
    python bench/bench_crossed.py rasch --models 2000 --items 20000 --no-r   # 40M rows

Prints each library's seconds and log-likelihood and the ratio evalmix / lme4, and evalmix's CPU
time (all threads: the compiled row passes use both cores) and the peak RSS of the process (the
data included).
"""

from __future__ import annotations

import argparse
import json
import os
import resource
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
from evalmix.model import make_formula  # noqa: E402


def rasch(models: int, items: int, seed: int = 1) -> tuple[pd.DataFrame, str]:
    rng = np.random.default_rng(seed)
    ability, easiness = rng.normal(0, 1, models), rng.normal(0, 1.5, items)
    # one row per (model, item), model-major; labels as categoricals (40M Python strings would
    # not fit in memory), int8 answers; drawn a block of models at a time (the same numbers)
    mi = np.repeat(np.arange(models, dtype=np.int32), items)
    ii = np.tile(np.arange(items, dtype=np.int32), models)
    correct = np.empty(models * items, dtype=np.int8)
    step = max(1, 4_000_000 // items)
    for m0 in range(0, models, step):
        m1 = min(models, m0 + step)
        eta = ability[m0:m1, None] + easiness[None, :]
        correct[m0 * items:m1 * items] = (rng.random(eta.shape) < 1 / (1 + np.exp(-eta))).ravel()
    df = pd.DataFrame({"model": pd.Categorical.from_codes(mi, [f"m{j:05d}" for j in range(models)]),
                       "item": pd.Categorical.from_codes(ii, [f"i{j:06d}" for j in range(items)]),
                       "correct": correct})
    return df, "correct ~ 1 + (1|model) + (1|item)"


def slope(subjects: int, items: int, seed: int = 1, uncorrelated: bool = False) -> tuple[pd.DataFrame, str]:
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
    base = make_formula("correct", "x", ["item"])
    # (1 + x || subject) is lme4's (1 | subject) + (0 + x | subject)
    f = base.with_random("subject").with_random("subject", "0 + x") if uncorrelated \
        else base.with_random("subject", "1 + x")
    return df, f.text


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("design", choices=["rasch", "slope"])
    ap.add_argument("--models", type=int, default=500)
    ap.add_argument("--items", type=int, default=None)
    ap.add_argument("--subjects", type=int, default=300)
    ap.add_argument("--uncorrelated", action="store_true", help="slope: (1 + x||subject)")
    ap.add_argument("--no-r", action="store_true", help="time evalmix only")
    args = ap.parse_args()
    if args.design == "rasch":
        df, formula = rasch(args.models, args.items or 4000)
    else:
        df, formula = slope(args.subjects, args.items or 40, uncorrelated=args.uncorrelated)
    print(f"{args.design}: {len(df):,} rows, {formula}")
    load0 = os.getloadavg()[0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        t0, c0 = time.perf_counter(), time.process_time()
        fit = glmer(formula, df)
        t_em, c_em = time.perf_counter() - t0, time.process_time() - c0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB -> GiB
    print(f"evalmix {t_em:8.2f} s   logLik {fit.loglik:.4f}   ({fit.optimizer.optimizer}, "
          f"{fit.optimizer.feval} deviance evaluations)")
    print(f"evalmix CPU {c_em:.2f} s (all threads), peak RSS of the process {rss:.2f} GiB, "
          f"load average before/after {load0:.2f}/{os.getloadavg()[0]:.2f}")
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
