"""Benchmark of evalmix.glmmtmb beside glmmTMB on an AI4Math-sized beta-binomial design.

AI4Math (``../shared/data/ai4math/ai4math_runs.csv``, 10,080 rows) aggregated to k of 3 per
problem x model x language x prompt (3,360 rows), fitted as

    cbind(k, n - k) ~ model + language + prompt + (1|problem_id) + (1|problem_id:model)

with ``family = "betabinomial"`` by

- evalmix.glmmtmb, in this process;
- glmmTMB through Rscript on the same rows (the fit timed inside R with ``system.time``, so R's
  start-up and the CSV read are not counted), when Rscript exists.

Each timing is the median of ``--reps`` fits (default 1: a fit takes tens of seconds).  Usage
(from the repository root)::

    python bench/bench_glmmtmb.py
    python bench/bench_glmmtmb.py --reps 3
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from evalmix import glmmtmb  # noqa: E402

SHARED = Path(os.environ.get("EVALMIX_SHARED", ROOT.parent / "shared"))
FORMULA = "cbind(k, n - k) ~ model + language + prompt + (1|problem_id) + (1|problem_id:model)"

R_SCRIPT = """
suppressPackageStartupMessages(library(glmmTMB))
d <- read.csv(commandArgs(TRUE)[1], stringsAsFactors = FALSE)
d$problem_id <- factor(d$problem_id)
reps <- as.integer(commandArgs(TRUE)[2])
f <- cbind(k, n - k) ~ model + language + prompt + (1|problem_id) + (1|problem_id:model)
t <- sapply(seq_len(reps), function(i)
  system.time(fit <<- glmmTMB(f, d, family = betabinomial()))[["elapsed"]])
cat(sprintf("%.6f %.6f\\n", median(t), as.numeric(logLik(fit))))
"""


def rows() -> pd.DataFrame:
    ai = pd.read_csv(SHARED / "data" / "ai4math" / "ai4math_runs.csv")
    agg = ai.groupby(["problem_id", "model", "language", "prompt"], as_index=False).agg(
        k=("correct", "sum"), n=("correct", "size"))
    return agg.assign(problem_id=agg["problem_id"].astype(str))


def glmmtmb_time(d: pd.DataFrame, reps: int) -> tuple[float, float] | None:
    if shutil.which("Rscript") is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        csv = Path(tmp) / "rows.csv"
        script = Path(tmp) / "fit.R"
        d.to_csv(csv, index=False)
        script.write_text(R_SCRIPT)
        out = subprocess.run(["Rscript", str(script), str(csv), str(reps)], capture_output=True,
                             text=True, check=True)
    t, ll = out.stdout.split()
    return float(t), float(ll)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=1)
    args = ap.parse_args()
    d = rows()
    print(f"{len(d)} rows (k of 3); {FORMULA} (beta-binomial)")
    times, fit = [], None
    for _ in range(args.reps):
        t0 = time.perf_counter()
        fit = glmmtmb(FORMULA, d, "betabinomial")
        times.append(time.perf_counter() - t0)
    assert fit is not None
    t_e = float(np.median(times))
    print(f"{'evalmix.glmmtmb':24s} {t_e:8.3f} s   logLik {fit.loglik:.4f}")
    r = glmmtmb_time(d, args.reps)
    if r is None:
        print("glmmTMB: Rscript not found")
    else:
        print(f"{'glmmTMB (inside R)':24s} {r[0]:8.3f} s   logLik {r[1]:.4f}")
        print(f"evalmix / glmmTMB time: {t_e / r[0]:.2f}")


if __name__ == "__main__":
    main()
