"""Benchmark of evalmix.glmmtmb beside glmmTMB on AI4Math-sized nested designs.

Two fits, on ``../shared/data/ai4math/ai4math_runs.csv`` (10,080 rows: 105 problems x 8 models x
2 languages x 2 prompts x 3 runs):

- ``bb``: AI4Math aggregated to k of 3 per problem x model x language x prompt (3,360 rows),
  ``cbind(k, n - k) ~ model + language + prompt + (1|problem_id) + (1|problem_id:model)``,
  ``family = "betabinomial"``;
- ``beta``: all 10,080 rows with a simulated 0-1 score (seed 1; a judge's partial credit: the
  problem's and the problem x run's effects on the logit scale, precision 8),
  ``score ~ model + language + prompt + (1|problem_id) + (1|problem_id:run)``,
  ``family = "beta"``.

Each is fitted by evalmix.glmmtmb in this process and by glmmTMB through Rscript on the same rows.
Times are CPU seconds of the fit alone (``time.process_time`` here; ``user.self + sys.self`` of
``system.time`` in R, so R's start-up and the CSV read are not counted): the machine these ran on
is shared, and CPU time is what the load leaves unchanged.  Each is the median of ``--reps`` fits
(default 3).  Usage (from the repository root)::

    python bench/bench_glmmtmb.py
    python bench/bench_glmmtmb.py --case bb --reps 1
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from evalmix import glmmtmb  # noqa: E402
from rtime import r_fit_time  # noqa: E402

SHARED = Path(os.environ.get("EVALMIX_SHARED", ROOT.parent / "shared"))
CASES = {
    "bb": ("cbind(k, n - k) ~ model + language + prompt + (1|problem_id) + (1|problem_id:model)",
           "betabinomial"),
    "beta": ("score ~ model + language + prompt + (1|problem_id) + (1|problem_id:run)", "beta"),
}
R_FAMILY = {"betabinomial": "betabinomial()", "beta": "beta_family()"}

R_SCRIPT = """
suppressPackageStartupMessages(library(glmmTMB))
a <- commandArgs(TRUE)
d <- read.csv(a[1], stringsAsFactors = FALSE)
d$problem_id <- factor(d$problem_id)
reps <- as.integer(a[2])
f <- as.formula(a[3])
fam <- eval(parse(text = a[4]))
t <- sapply(seq_len(reps), function(i) {
  s <- system.time(fit <<- glmmTMB(f, d, family = fam))
  s[["user.self"]] + s[["sys.self"]]
})
cat(sprintf("%.6f %.6f\\n", median(t), as.numeric(logLik(fit))))
"""


def rows(case: str) -> pd.DataFrame:
    ai = pd.read_csv(SHARED / "data" / "ai4math" / "ai4math_runs.csv")
    if case == "bb":
        agg = ai.groupby(["problem_id", "model", "language", "prompt"], as_index=False).agg(
            k=("correct", "sum"), n=("correct", "size"))
        return agg.assign(problem_id=agg["problem_id"].astype(str))
    rng = np.random.default_rng(1)
    problem = pd.factorize(ai["problem_id"])[0]
    pr = pd.factorize(ai["problem_id"].astype(str) + ":" + ai["run"].astype(str))[0]
    model = pd.factorize(ai["model"])[0]
    eta = (0.1 * model - 0.3 + rng.normal(0, 1.0, problem.max() + 1)[problem]
           + rng.normal(0, 0.4, pr.max() + 1)[pr])
    mu = 1 / (1 + np.exp(-eta))
    score = rng.beta(mu * 8, (1 - mu) * 8)
    return ai.assign(problem_id=ai["problem_id"].astype(str), score=np.clip(score, 1e-6, 1 - 1e-6))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--case", nargs="+", choices=list(CASES), default=list(CASES))
    args = ap.parse_args()
    print("load average at start:", os.getloadavg())
    for case in args.case:
        formula, family = CASES[case]
        d = rows(case)
        print(f"\n{case}: {len(d)} rows; {formula} ({family})")
        times, fit = [], None
        for _ in range(args.reps):
            t0 = time.process_time()
            fit = glmmtmb(formula, d, family)
            times.append(time.process_time() - t0)
        assert fit is not None
        t_e = float(np.median(times))
        print(f"{'evalmix.glmmtmb':24s} {t_e:8.3f} s CPU   logLik {fit.loglik:.4f}   "
              f"({', '.join(f'{t:.3f}' for t in times)})")
        r = r_fit_time(d, R_SCRIPT, args.reps, formula, R_FAMILY[family])
        if r is None:
            print("glmmTMB: Rscript not found")
        else:
            print(f"{'glmmTMB (inside R)':24s} {r[0]:8.3f} s CPU   logLik {r[1]:.4f}")
            print(f"evalmix / glmmTMB CPU time: {t_e / r[0]:.3f}")
    print("\nload average at end:", os.getloadavg())


if __name__ == "__main__":
    main()
