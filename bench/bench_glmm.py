"""Benchmark of evalmix.glmer.

1. The five GLMMs of the AI4Math paper (``correct ~ <fixed> + (1|problem_id) + (1|problem_id:run)``)
   with evalmix and with the ``mixedlm`` package (1.3.0, Rust core), in this process, with each
   log-likelihood next to lme4 1.1-31's (from tests/reference/lme4_reference.json).
2. A synthetic table of 1,000,000 rows (40 models x 5,000 items x 5 runs,
   ``correct ~ model + (1|item) + (1|item:run)``) against one plain logistic GLM on the same rows
   and fixed effects (statsmodels GLM), in the same process, one fresh process per repeat (3 by
   default): CPU seconds (``time.process_time``, every thread) and wall seconds of each, their
   ratios and the median ratio, the load average before and after, and the peak memory of the
   process after the glmer fit (before the GLM).

Usage (from the repository root)::

    python bench/bench_glmm.py            # both parts
    python bench/bench_glmm.py five       # AI4Math only
    python bench/bench_glmm.py big        # 1M rows only
    python bench/bench_glmm.py big --items 1000   # the same design with 1,000 items (200k rows)
    python bench/bench_glmm.py big --repeat 5     # five process pairs instead of three
    python bench/bench_glmm.py five --no-mixedlm   # evalmix timings only

On a shared machine, one core per process (BLAS and numba on one thread, for both fits)::

    OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 NUMBA_NUM_THREADS=1 python bench/bench_glmm.py big
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time
import warnings
from multiprocessing import get_context
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from evalmix import glmer  # noqa: E402
from evalmix.model import make_formula  # noqa: E402

SHARED = Path(os.environ.get("EVALMIX_SHARED", ROOT.parent / "shared"))
FORMULAS = ["model * language * prompt", "model * language + prompt", "model + language * prompt",
            "model + language + prompt", "model + language"]
RANDOM = ["problem_id", "problem_id:run"]  # random intercepts


def lme4_logliks() -> dict[str, float]:
    ref = json.loads((ROOT / "tests" / "reference" / "lme4_reference.json").read_text())
    return {f["formula"]: f["loglik"] for f in ref["fits"] if f["data"] == "ai4math"}


def five(with_mixedlm: bool = True) -> None:
    data = pd.read_csv(SHARED / "data" / "ai4math" / "ai4math_runs.csv")
    ref = lme4_logliks()
    glmer("correct ~ model + (1|problem_id)", data.head(2000))  # warm imports
    print("AI4Math: five fits (evalmix vs mixedlm 1.3.0); loglik minus lme4 1.1-31's")
    print(f"{'fixed part':28s} {'evalmix s':>9s} {'d loglik':>9s} {'mixedlm s':>9s} {'d loglik':>9s}")
    tot_e = tot_m = 0.0
    try:
        import mixedlm
    except ImportError:
        mixedlm = None
        print("(mixedlm is not installed: pip install mixedlm==1.3.0)")
    if not with_mixedlm:
        mixedlm = None
    for f in FORMULAS:
        formula = make_formula("correct", f, RANDOM).text
        t0 = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            fit = glmer(formula, data)
        te = time.perf_counter() - t0
        tot_e += te
        r = ref.get(formula.replace(" + (1|", " + (1|"), np.nan)
        tm, dm = np.nan, np.nan
        if mixedlm is not None:
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                mfit = mixedlm.glmer(formula, data, family=mixedlm.families.Binomial())
            tm = time.perf_counter() - t0
            tot_m += tm
            dm = float(mfit.logLik().value) - r
        print(f"{f:28s} {te:9.3f} {fit.loglik - r:+9.4f} {tm:9.3f} {dm:+9.4f}")
    print(f"{'total':28s} {tot_e:9.3f} {'':9s} {tot_m:9.3f}")
    if mixedlm is not None:
        print(f"speed-up over mixedlm: {tot_m / tot_e:.1f}x")


def simulate_big(items: int = 5000) -> pd.DataFrame:
    """40 models x ``items`` items x 5 runs, item SD 1.5, item:run SD 0.5 (evalmix's simulator)."""
    from evalmix.simulate import glmm_runs

    return glmm_runs(40, items, 5, rng=1)


def _fit_big(q, items: int) -> None:
    import statsmodels.api as sm
    from formulaic import model_matrix

    d = simulate_big(items)
    formula = "correct ~ model + (1|item) + (1|item:run)"
    X = np.asarray(model_matrix("model", d), dtype=float)
    y = d["correct"].to_numpy(dtype=float)
    # load (or compile into numba's cache) the row kernels first: 200,000 rows of the same design
    # take the compiled path; a one-time cost per process, as statsmodels' imports are
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        glmer(formula, d.head(200_000))
    sm.GLM(y[::251], X[::251], family=sm.families.Binomial()).fit()  # rows of every model
    t0, c0 = time.perf_counter(), time.process_time()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = glmer(formula, d)
    t_glmer, c_glmer = time.perf_counter() - t0, time.process_time() - c0
    peak_gb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024**2
    t0, c0 = time.perf_counter(), time.process_time()
    glm = sm.GLM(y, X, family=sm.families.Binomial()).fit()
    t_glm, c_glm = time.perf_counter() - t0, time.process_time() - c0
    q.put({"glmer_wall": t_glmer, "glmer_cpu": c_glmer, "optimizer": fit.optimizer.seconds,
           "loglik": fit.loglik, "theta": {k: round(float(v), 4) for k, v in fit.theta.items()},
           "peak_gb": peak_gb, "evaluations": fit.optimizer.feval,
           "se": float(np.sqrt(fit.vcov.to_numpy()[1, 1])), "glm_wall": t_glm, "glm_cpu": c_glm,
           "glm_loglik": float(glm.llf)})


def big(items: int = 5000, repeat: int = 3) -> None:
    ctx = get_context("spawn")
    print(f"{40 * items * 5:,} rows (40 models x {items} items x 5 runs); glmer, then statsmodels "
          f"GLM on the same rows, in one fresh process per line")
    print(f"{'load':>5s} {'glmer CPU':>9s} {'GLM CPU':>8s} {'ratio':>6s} {'glmer wall':>10s} "
          f"{'GLM wall':>8s} {'ratio':>6s}")
    cpu_ratios, wall_ratios = [], []
    for _ in range(repeat):
        load0 = os.getloadavg()[0]
        q = ctx.Queue()
        p = ctx.Process(target=_fit_big, args=(q, items))
        p.start()
        r = q.get()
        p.join()
        cpu_ratios.append(r["glmer_cpu"] / r["glm_cpu"])
        wall_ratios.append(r["glmer_wall"] / r["glm_wall"])
        # on a shared machine the wall-clock ratio moves with the load; CPU seconds far less
        print(f"{load0:5.1f} {r['glmer_cpu']:9.2f} {r['glm_cpu']:8.2f} {cpu_ratios[-1]:6.2f} "
              f"{r['glmer_wall']:10.2f} {r['glm_wall']:8.2f} {wall_ratios[-1]:6.2f}")
    print(f"load average at the end {os.getloadavg()[0]:.1f}")
    print(f"median ratio glmer / GLM: CPU {np.median(cpu_ratios):.2f}, wall "
          f"{np.median(wall_ratios):.2f}")
    print(f"glmer: loglik {r['loglik']:.2f}, theta {r['theta']}, {r['evaluations']} deviance "
          f"evaluations, optimiser {r['optimizer']:.2f} s, peak RSS {r['peak_gb']:.2f} GB, "
          f"SE of modelM2 {r['se']:.6f}; GLM loglik {r['glm_loglik']:.2f}")


if __name__ == "__main__":
    what = sys.argv[1:]
    if not [w for w in what if w in ("five", "big")]:
        what += ["five", "big"]
    if "five" in what:
        five(with_mixedlm="--no-mixedlm" not in what)
    if "big" in what:
        big(int(what[what.index("--items") + 1]) if "--items" in what else 5000,
            int(what[what.index("--repeat") + 1]) if "--repeat" in what else 3)
