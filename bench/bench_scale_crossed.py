"""Crossed logit GLMMs on a models x items grid from 10^6 to 10^8 rows: time, CPU and peak memory.

Each size runs in a fresh subprocess (so ``ru_maxrss`` is that size's peak, the data included):
the grid of 0/1 answers is generated (seeded, a block of models at a time, ``int8``), then
``evalmix.glmm.gridfit.glmer_grid`` fits it. Printed per size: wall and CPU (user + system, every
thread) of the fit, the process's peak RSS and bytes per row, CPU seconds per million rows, and
the estimates against the simulation's truth (the sample SDs of the simulated effects); then
the log-log slope of CPU against rows.

    nice python bench/bench_scale_crossed.py --sizes 1e6,1e7 --formula crossed
    nice python bench/bench_scale_crossed.py --sizes 1e8 --formula fixed --json /tmp/f.json
    nice python bench/bench_scale_crossed.py --sizes 1e7 --trials 3     # k of 3 runs a cell
    nice python bench/bench_scale_crossed.py --sizes 1e7 --trials 3 --empty 0.1   # n an array, 10% empty

The number of models is fixed (``--models``, default 2,000) and the items are rows / models, so
the ``syrk`` of the Schur complement (models^2 x items) grows linearly with the rows.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import resource
import subprocess
import sys
import time

FORMULAS = {"crossed": "correct ~ 1 + (1|model) + (1|item)",
            "fixed": "correct ~ 0 + model + (1|item)"}


def _trials(models: int, items: int, trials: int, empty: float, seed: int):
    """``trials`` runs a cell: one number, or with ``empty`` a uint8 array with that fraction of
    the cells empty (n = 0), made a block of models at a time."""
    import numpy as np

    if not empty:
        return trials or None
    g = np.random.default_rng(seed + 1)
    n = np.full((models, items), trials or 1, dtype=np.uint8)
    for i in range(0, models, 64):
        blk = n[i:i + 64]
        blk[g.random(blk.shape, dtype=np.float32) < empty] = 0
    return n


def _cpu() -> float:
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def one(rows: int, models: int, formula: str, seed: int, trials: int = 0, empty: float = 0.0) -> dict:
    import numpy as np

    from evalmix.glmm.gridfit import glmer_grid, simulate_grid

    items = rows // models
    t0, c0 = time.perf_counter(), _cpu()
    n = _trials(models, items, trials, empty, seed)
    y, truth = simulate_grid(models, items, rng=seed, intercept=0.5, trials=n)
    t1, c1 = time.perf_counter(), _cpu()
    fit = glmer_grid(y, FORMULAS[formula], trials=n)
    t2, c2 = time.perf_counter(), _cpu()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    out = {"rows": models * items, "models": models, "items": items, "trials": trials or 1,
           "empty": empty, "formula": FORMULAS[formula],
           "simulate_wall": t1 - t0, "simulate_cpu": c1 - c0, "wall": t2 - t1, "cpu": c2 - c1,
           "user": ru.ru_utime, "system": ru.ru_stime, "peak_rss": ru.ru_maxrss * 1024,
           "loglik": fit.loglik, "evaluations": fit.optimizer.feval,
           "factorizations": int(re.search(r"\((\d+) factorisations\)", fit.optimizer.message).group(1)),
           "converged": fit.converged, "item_sd": float(fit.theta["item.(Intercept)"]), "item_sd_truth": truth["item_sd"],
           "load": os.getloadavg()[0]}
    if formula == "crossed":
        out.update(model_sd=float(fit.theta["model.(Intercept)"]), model_sd_truth=truth["model_sd"],
                   intercept=float(fit.fixef.iloc[0]),
                   intercept_se=float(np.sqrt(fit.vcov.iloc[0, 0])),
                   intercept_truth=truth["intercept"] + float(np.mean(truth["ability"])))
    else:
        b = fit.fixef.to_numpy()
        true = truth["intercept"] + truth["ability"]
        out.update(beta_rmse=float(np.sqrt(np.mean((b - true) ** 2))),
                   beta_se_mean=float(np.sqrt(np.diag(fit.vcov.to_numpy())).mean()))
    return out


def evals(rows: int, models: int, formula: str, seed: int, k: int, trials: int = 0,
          empty: float = 0.0) -> dict:
    """Cost per evaluation: ``k`` evaluations of the deviance and its exact gradient (crossed) or
    ``k`` profiled evaluations over theta (fixed) along a fixed path of parameters, warm-started
    as in a fit, for sizes a whole fit does not reach on a shared machine in the time at hand."""
    import numpy as np

    from evalmix.core.parallel import single_thread_blas
    from evalmix.glmm import gridfit as gf

    items = rows // models
    n = _trials(models, items, trials, empty, seed)
    y, truth = gf.simulate_grid(models, items, rng=seed, intercept=0.5, trials=n)
    t1, c1 = time.perf_counter(), _cpu()
    grid = gf._Grid(y, True, n)
    with single_thread_blas():
        if formula == "crossed":
            dv = gf._Crossed(grid)
            for i in range(k):  # towards the truth, as the optimiser's first steps go
                f = i / max(k - 1, 1)
                dv.fun(np.array([1.0 + f * (truth["model_sd"] - 1.0),
                                 1.0 + f * (truth["item_sd"] - 1.0), 0.5]))
        else:
            fx = gf._Fixed(grid)
            beta = np.zeros(models)
            for i in range(k):
                f = i / max(k - 1, 1)
                _, _, beta = fx.profile(1.0 + f * (truth["item_sd"] - 1.0), beta)
    t2, c2 = time.perf_counter(), _cpu()
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return {"rows": models * items, "models": models, "items": items, "trials": trials or 1,
            "empty": empty, "formula": FORMULAS[formula],
            "evals": k, "wall": t2 - t1, "cpu": c2 - c1, "peak_rss": ru.ru_maxrss * 1024,
            "factorizations": grid.factorizations, "load": os.getloadavg()[0]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1e6,1e7", help="rows, comma-separated (1e6,1e7,1e8)")
    ap.add_argument("--models", type=int, default=2000)
    ap.add_argument("--formula", choices=[*FORMULAS, "both"], default="crossed")
    ap.add_argument("--seed", type=int, default=2026)
    ap.add_argument("--json", help="write the records here as well")
    ap.add_argument("--evals", type=int, default=0,
                    help="time this many evaluations instead of a whole fit (cost per evaluation)")
    ap.add_argument("--trials", type=int, default=0,
                    help="k-of-n grids: this many runs a cell (default: one 0/1 answer a cell)")
    ap.add_argument("--empty", type=float, default=0.0,
                    help="this fraction of the cells empty (n = 0): the trials become an array")
    ap.add_argument("--one", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.one:
        rec = (evals(args.one, args.models, args.formula, args.seed, args.evals, args.trials, args.empty)
               if args.evals else one(args.one, args.models, args.formula, args.seed, args.trials, args.empty))
        print(json.dumps(rec))
        return
    forms = list(FORMULAS) if args.formula == "both" else [args.formula]
    sizes = [int(float(s)) for s in args.sizes.split(",")]
    records = []
    for form in forms:
        for rows in sizes:
            cmd = [sys.executable, __file__, "--one", str(rows), "--models", str(args.models),
                   "--formula", form, "--seed", str(args.seed), "--evals", str(args.evals),
                   "--trials", str(args.trials), "--empty", str(args.empty)]
            done = subprocess.run(cmd, check=True, capture_output=True, text=True)
            rec = json.loads(done.stdout.strip().splitlines()[-1])
            records.append(rec)
            if args.evals:
                print(f"{form} {rec['models']} x {rec['items']} = {rec['rows']:,} rows, {args.evals} "
                      f"evaluations: wall {rec['wall']:.1f} s, CPU {rec['cpu']:.1f} s "
                      f"({1e6 * rec['cpu'] / rec['rows']:.3f} s per M rows), {rec['factorizations']} "
                      f"factorizations, peak RSS {rec['peak_rss'] / 2**30:.2f} GiB "
                      f"({rec['peak_rss'] / rec['rows']:.1f} B/row); load {rec['load']:.1f}", flush=True)
                continue
            est = (f"model SD {rec['model_sd']:.4f} (truth {rec['model_sd_truth']:.4f}), "
                   f"intercept {rec['intercept']:.4f} (truth {rec['intercept_truth']:.4f}), "
                   if form == "crossed" else f"beta RMSE {rec['beta_rmse']:.4f}, ")
            print(f"{form} {rec['models']} x {rec['items']} = {rec['rows']:,} rows: "
                  f"fit wall {rec['wall']:.1f} s, CPU {rec['cpu']:.1f} s "
                  f"({1e6 * rec['cpu'] / rec['rows']:.3f} s per M rows), "
                  f"peak RSS {rec['peak_rss'] / 2**30:.2f} GiB "
                  f"({rec['peak_rss'] / rec['rows']:.1f} B/row), {rec['evaluations']} evaluations, "
                  f"{rec['factorizations']} factorizations; {est}"
                  f"item SD {rec['item_sd']:.4f} (truth {rec['item_sd_truth']:.4f}); "
                  f"logLik {rec['loglik']:.4f}; load {rec['load']:.1f}", flush=True)
        recs = [r for r in records if r["formula"] == FORMULAS[form]]
        if len(recs) >= 2:
            xs = [math.log(r["rows"]) for r in recs]
            ys = [math.log(r["cpu"]) for r in recs]
            mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
            slope = sum((x - mx) * (v - my) for x, v in zip(xs, ys)) \
                / sum((x - mx) ** 2 for x in xs)
            per = [1e6 * r["cpu"] / r["rows"] for r in recs]
            print(f"{form}: log-log slope of CPU against rows {slope:.3f}; CPU per M rows "
                  + ", ".join(f"{p:.3f}" for p in per)
                  + f" (last / first {per[-1] / per[0]:.2f})", flush=True)
    if args.json:
        with open(args.json, "w") as fh:
            json.dump(records, fh, indent=1)


if __name__ == "__main__":
    main()
