"""Adjusted families of contrasts on an lmer fit of a 20-level factor (Satterthwaite df, each
contrast its own): evalmix against R's emmeans + lmerTest on the same data, side by side.

The data are tests/reference/tukey20.csv (tests/reference/tukey20_reference.R writes R's numbers,
which tests/inference/test_trust_inference_speed.py compares).  Times are wall seconds of
``contrast(emmeans(fit, "model"), family, adjust=)`` alone (the fit and the means are made once),
the first call (which pays for the studentized-range quantiles, cached per process
after it) and the best of ``--repeat`` runs; R's column times the same call in one Rscript process.

Usage (from the repository root; R with lme4, lmerTest and emmeans on the PATH for the R column):
    nice python bench/bench_tukey20.py [--repeat 3] [--no-r]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import time
import warnings
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

import evalmix  # noqa: E402

DATA = ROOT / "tests" / "reference" / "tukey20.csv"
FAMILIES = [("tukey", "pairwise", "tukey"), ("holm", "pairwise", "holm"),
            ("dunnettx", "trt.vs.ctrl", "dunnettx")]

R_CODE = """
suppressPackageStartupMessages({library(lme4); library(lmerTest); library(emmeans); library(jsonlite)})
emm_options(lmer.df = "satterthwaite")
d <- read.csv("%s"); d$model <- factor(d$model)
fit <- lmerTest::lmer(score ~ model + (1 | item), data = d, REML = TRUE)
em <- emmeans(fit, ~ model)
best <- function(f) min(sapply(seq_len(%d), function(i) system.time(summary(f()))[["elapsed"]]))
cat(toJSON(list(
  tukey = best(function() contrast(em, "pairwise", adjust = "tukey")),
  holm = best(function() contrast(em, "pairwise", adjust = "holm")),
  dunnettx = best(function() contrast(em, "trt.vs.ctrl", adjust = "dunnettx"))), auto_unbox = TRUE))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--no-r", action="store_true", help="time evalmix only")
    args = ap.parse_args()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = evalmix.lmer("score ~ model + (1|item)", pd.read_csv(DATA))
    means = evalmix.emmeans(fit, "model")
    ours: dict[str, float] = {}
    first: dict[str, float] = {}  # a process's first call pays for the studentized-range quantiles
    for name, family, adjust in FAMILIES:
        times = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            evalmix.contrast(means, family, adjust=adjust).to_frame()
            times.append(time.perf_counter() - start)
        ours[name] = min(times)
        first[name] = times[0]
    theirs: dict[str, float] = {}
    if not args.no_r and shutil.which("Rscript"):
        out = subprocess.run(["Rscript", "-e", R_CODE % (DATA, args.repeat)], capture_output=True, text=True,
                             check=True, cwd=ROOT)
        theirs = json.loads(out.stdout.strip().splitlines()[-1])
    print(f"{'family':10} {'contrasts':>9} {'first s':>8} {'evalmix s':>10} {'emmeans s':>10} {'ratio':>6}")
    for name, family, _ in FAMILIES:
        n = 190 if family == "pairwise" else 19
        r = theirs.get(name)
        ratio = f"{ours[name] / r:6.2f}" if r else "     -"
        print(f"{name:10} {n:9d} {first[name]:8.3f} {ours[name]:10.3f} {r if r is not None else float('nan'):10.3f} {ratio}")


if __name__ == "__main__":
    main()
