"""Benchmark: Bayesian GLMM on AI4Math, evalmix.bayes against bambi (nutpie and PyMC samplers).

Model ``correct ~ model + language + (1|problem_id) + (1|problem_id:run)``, 4 chains x 1000 draws
after 1000 tuning steps, all fits in this one process, wall time from model construction to draws
(compilation included).  Goal: evalmix converges (r_hat <= 1.01, bulk ESS >= 400 for every fixed
effect and SD) in at most a third of bambi + nutpie's time.

Run (bambi 0.17.2 needs arviz-plots, which needs matplotlib < 3.11; use an environment with them)::

    python bench/bench_bayes.py [--data ../shared/data/ai4math/ai4math_runs.csv] [--repeat 2]
        [--no-bambi-pymc] [--max-treedepth 10]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
import warnings

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))

import arviz as az  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

FORMULA = "correct ~ model + language + (1|problem_id) + (1|problem_id:run)"


def check(summary: pd.DataFrame) -> str:
    ok = (summary["r_hat"] <= 1.01).all() and (summary["ess_bulk"] >= 400).all()
    return (f"max r_hat {summary['r_hat'].max():.3f}, min bulk ESS {summary['ess_bulk'].min():.0f}, "
            f"min tail ESS {summary['ess_tail'].min():.0f} -> {'converged' if ok else 'NOT converged'}")


def run_evalmix(d: pd.DataFrame, seed: int, max_treedepth: int = 10):
    from evalmix import bayes

    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = bayes.glmer(FORMULA, d, seed=seed, progressbar=False, max_treedepth=max_treedepth)
    el = time.perf_counter() - t
    s = fit.summary()
    print(f"evalmix.bayes ({fit.sampler}): {el:.1f} s, {fit.divergences} divergences; {check(s)}")
    print(fit.parameterization.to_string(index=False))
    return el, fit


def run_bambi(d: pd.DataFrame, method: str, seed: int):
    import bambi as bmb

    dd = d.copy()
    for c in ["problem_id", "run", "model", "language"]:
        dd[c] = dd[c].astype(str)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = bmb.Model(FORMULA, dd, family="bernoulli")
        idata = m.fit(draws=1000, tune=1000, chains=4, inference_method=method, random_seed=seed,
                      progressbar=False)
    el = time.perf_counter() - t
    names = ["Intercept", "model", "language", "1|problem_id_sigma", "1|problem_id:run_sigma"]
    s = az.summary(idata, var_names=names)
    div = int(idata.sample_stats["diverging"].sum())
    print(f"bambi {bmb.__version__} ({method}): {el:.1f} s, {div} divergences; {check(s)}")
    return el, s


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "..", "shared",
                                                   "data", "ai4math", "ai4math_runs.csv"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--no-bambi-pymc", action="store_true", help="skip bambi with PyMC's sampler")
    ap.add_argument("--repeat", type=int, default=2, help="alternating evalmix / bambi+nutpie pairs")
    ap.add_argument("--max-treedepth", type=int, default=10, help="evalmix's NUTS depth limit")
    args = ap.parse_args()
    d = pd.read_csv(args.data)
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()}")
    import pymc  # noqa: F401  (imported before timing, as each library needs it)

    # evalmix and bambi + nutpie alternate, so that a change in the machine's load hits both
    ev, nut = [], []
    for rep in range(args.repeat):
        t_ev, fit = run_evalmix(d, args.seed + rep, args.max_treedepth)
        if rep == 0:
            fx = fit.summary().set_index("parameter")
            print(fx[["mean", "sd", "hdi_low", "hdi_high", "r_hat", "ess_bulk", "ess_tail"]]
                  .round(3).to_string())
        t_nut, _ = run_bambi(d, "nutpie", args.seed + rep)
        ev.append(t_ev)
        nut.append(t_nut)
        print(f"pair {rep + 1}: ratio evalmix / bambi+nutpie = {t_ev / t_nut:.2f} (goal <= 0.33)")
    print(f"total over {args.repeat} pair(s): evalmix {sum(ev):.1f} s, bambi+nutpie {sum(nut):.1f} s, "
          f"ratio {sum(ev) / sum(nut):.2f}")
    if not args.no_bambi_pymc:
        t_pm, _ = run_bambi(d, "pymc", args.seed)
        print(f"ratio evalmix (mean) / bambi+pymc: {np.mean(ev) / t_pm:.2f}")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    np.seterr(all="ignore")
    main()
