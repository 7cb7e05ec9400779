"""Benchmark of evalmix.clmm beside ordinal::clmm on an AI4Math-sized nested judge-rating design.

10,000 rows: 5 models x 500 items x 4 runs, a judge's rating 1-5 drawn from a cumulative-logit
model (item SD 1, item x run SD 0.5, seed 1), fitted as

    rating ~ model + (1|item) + (1|item:run)

by evalmix.clmm in this process and by ``ordinal::clmm`` through Rscript on the same rows.  Times
are CPU seconds of the fit alone (``time.process_time`` here; ``user.self + sys.self`` of
``system.time`` in R, R's start-up and the CSV read not counted), the median of ``--reps`` fits
(default 3).  Usage (from the repository root)::

    python bench/bench_clmm.py
    python bench/bench_clmm.py --reps 1
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from evalmix import clmm  # noqa: E402
from rtime import r_fit_time  # noqa: E402

FORMULA = "rating ~ model + (1|item) + (1|item:run)"

R_SCRIPT = """
suppressPackageStartupMessages(library(ordinal))
a <- commandArgs(TRUE)
d <- read.csv(a[1], stringsAsFactors = FALSE)
d$rating <- factor(d$rating, ordered = TRUE)
d$item <- factor(d$item)
d$run <- factor(d$run)
reps <- as.integer(a[2])
t <- sapply(seq_len(reps), function(i) {
  s <- system.time(fit <<- clmm(rating ~ model + (1|item) + (1|item:run), data = d))
  s[["user.self"]] + s[["sys.self"]]
})
cat(sprintf("%.6f %.6f\\n", median(t), as.numeric(logLik(fit))))
"""


def design(n_models: int = 5, n_items: int = 500, n_runs: int = 4, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = pd.MultiIndex.from_product([[f"M{m + 1}" for m in range(n_models)],
                                    [f"q{i:04d}" for i in range(n_items)], range(1, n_runs + 1)],
                                   names=["model", "item", "run"]).to_frame(index=False)
    item = g["item"].str[1:].astype(int).to_numpy()
    ir = item * n_runs + g["run"].to_numpy() - 1
    lp = (np.linspace(0, 0.8, n_models)[g["model"].str[1:].astype(int).to_numpy() - 1]
          + rng.normal(0, 1.0, n_items)[item] + rng.normal(0, 0.5, n_items * n_runs)[ir])
    cuts = np.array([-2.0, -0.7, 0.5, 1.8])
    # P(Y <= j) = expit(cut_j - lp): the rating is 1 + the number of cut points below the latent
    latent = lp + special.logit(rng.uniform(size=len(g)))
    g["rating"] = 1 + np.searchsorted(cuts, latent)
    return g


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--no-r", action="store_true", help="time evalmix.clmm only")
    args = ap.parse_args()
    print("load average at start:", os.getloadavg())
    d = design()
    print(f"{len(d)} rows; {FORMULA}; ratings {np.bincount(d['rating'])[1:].tolist()}")
    times, fit = [], None
    for _ in range(args.reps):
        t0 = time.process_time()
        fit = clmm(FORMULA, d)
        times.append(time.process_time() - t0)
    assert fit is not None
    t_e = float(np.median(times))
    print(f"{'evalmix.clmm':24s} {t_e:8.3f} s CPU   logLik {fit.loglik:.4f}   "
          f"({', '.join(f'{t:.3f}' for t in times)})")
    r = None if args.no_r else r_fit_time(d, R_SCRIPT, args.reps)
    if r is not None:
        print(f"{'ordinal::clmm (inside R)':24s} {r[0]:8.3f} s CPU   logLik {r[1]:.4f}")
        print(f"evalmix / ordinal CPU time: {t_e / r[0]:.3f}")
    print("load average at end:", os.getloadavg())


if __name__ == "__main__":
    main()
