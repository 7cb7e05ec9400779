"""Benchmark of evalmix.lmer on an AI4Math-sized nested design, side by side with its peers.

10,000 rows: 5 models x 500 items x 4 runs, a continuous score (a judge's 1-10 rating), fitted
as ``score ~ model + (1|item) + (1|item:run)`` by REML with

- evalmix.lmer (fit, then fit + Satterthwaite df of the coefficient table);
- statsmodels MixedLM on the same rows (``groups=item``, ``vc_formula`` for run within item,
  REML), in this process;
- the ``mixedlm`` package (1.3.0, Rust core; ``pip install mixedlm==1.3.0``, not a dependency of
  evalmix) on the same rows and formula (REML), in this process, when it is importable;
- lme4 1.1-31's ``lmer`` through Rscript on the same rows (the fit timed inside R with
  ``system.time``, so R's start-up and the CSV read are not counted), when Rscript exists.

The same rows are then fitted as ``score ~ model + (1|item)`` (runs as replicates) by evalmix
and lme4 (``--formula`` adds others).  Times are CPU seconds (``time.process_time`` here; ``user.self + sys.self`` of ``system.time`` in
R): the machine is shared, and CPU time is what the load leaves unchanged.  Each timing is the
median of ``--reps`` fits (default 3).  Usage (from the repository root)::

    python bench/bench_lmer.py
    python bench/bench_lmer.py --reps 5
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from evalmix import lmer  # noqa: E402
from rtime import r_fit_time  # noqa: E402

FORMULA = "score ~ model + (1|item) + (1|item:run)"


def design(n_models: int = 5, n_items: int = 500, n_runs: int = 4, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    g = pd.MultiIndex.from_product([[f"M{m + 1}" for m in range(n_models)],
                                    [f"q{i:04d}" for i in range(n_items)], range(1, n_runs + 1)],
                                   names=["model", "item", "run"]).to_frame(index=False)
    item = rng.normal(0, 1.2, n_items)[g["item"].str[1:].astype(int)]
    ir = rng.normal(0, 0.5, n_items * n_runs)[g["item"].str[1:].astype(int) * n_runs + g["run"] - 1]
    shift = np.linspace(0, 0.8, n_models)[g["model"].str[1:].astype(int) - 1]
    g["score"] = np.clip(np.round(6 + shift + item + ir + rng.normal(0, 1.0, len(g))), 1, 10)
    return g


def median_time(f, reps: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(reps):
        t0 = time.process_time()
        out = f()
        times.append(time.process_time() - t0)
    return float(np.median(times)), out


def statsmodels_fit(d: pd.DataFrame) -> object:
    import statsmodels.formula.api as smf

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        md = smf.mixedlm("score ~ model", d, groups="item", re_formula="1",
                         vc_formula={"run": "0 + C(run)"})
        return md.fit(reml=True)


R_SCRIPT = """
suppressPackageStartupMessages(library(lme4))
d <- read.csv(commandArgs(TRUE)[1], stringsAsFactors = FALSE)
reps <- as.integer(commandArgs(TRUE)[2])
f <- as.formula(commandArgs(TRUE)[3])
fit <- lmer(f, d)  # warm-up
t <- sapply(seq_len(reps), function(i) {
  s <- system.time(fit <<- lmer(f, d))
  s[["user.self"]] + s[["sys.self"]]
})
cat(sprintf("%.6f %.6f\\n", median(t), as.numeric(logLik(fit))))
"""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--formula", action="append", default=[],
                    help="further formulas to fit on the same rows (evalmix and lme4)")
    args = ap.parse_args()
    print("load average at start:", os.getloadavg())
    d = design()
    print(f"{len(d)} rows: {d['model'].nunique()} models x {d['item'].nunique()} items x "
          f"{d['run'].nunique()} runs")
    lmer(FORMULA, d[d["item"] < "q0050"])  # warm imports
    for k, formula in enumerate([FORMULA, "score ~ model + (1|item)", *args.formula]):
        print(f"-- {formula} (REML)")
        t_e, fit = median_time(lambda: lmer(formula, d), args.reps)
        t_s, _ = median_time(lambda: lmer(formula, d).coef_table(), args.reps)
        print(f"{'evalmix.lmer':34s} {t_e:8.3f} s CPU   REML logLik {fit.loglik:.4f}   "
              f"{fit.optimizer.feval} deviance evaluations")
        print(f"{'evalmix.lmer + Satterthwaite table':34s} {t_s:8.3f} s")
        if k == 0:
            t_sm, sm = median_time(lambda: statsmodels_fit(d), args.reps)
            print(f"{'statsmodels MixedLM (REML)':34s} {t_sm:8.3f} s CPU   REML logLik {sm.llf:.4f}")
            try:
                import mixedlm
            except ImportError:
                print("mixedlm: not installed (pip install mixedlm==1.3.0)")
            else:
                t_m, mf = median_time(lambda: mixedlm.lmer(formula, d), args.reps)
                print(f"{'mixedlm 1.3.0 lmer (REML)':34s} {t_m:8.3f} s CPU   REML logLik "
                      f"{float(mf.logLik()):.4f}")
        r = r_fit_time(d, R_SCRIPT, args.reps, formula)
        if r is None:
            print("lme4: Rscript not found")
        else:
            print(f"{'lme4::lmer (inside R)':34s} {r[0]:8.3f} s CPU   REML logLik {r[1]:.4f}")
            print(f"evalmix / lme4 CPU time: {t_e / r[0]:.3f}")
    print("load average at end:", os.getloadavg())


if __name__ == "__main__":
    main()
