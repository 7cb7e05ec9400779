"""Every engine's factorisation paths, timed in two source trees alternately, with their numbers compared.

Each case is one fit whose random-effects system takes one structure: glmer's solvers (nested,
Schur, nested-Schur, block-diagonal, block-Schur, dense, the crossed grid), lmer's paths (nested,
one intercept, crossed intercepts, dense, sparse LU), glmmtmb's and clmm's (nested, Schur), and
the fits of ``bench_glmm.py five`` (the five AI4Math GLMMs), ``bench_glmm.py big`` (at 200,000
rows), ``bench_lmer.py``, ``bench_glmmtmb.py`` and ``bench_clmm.py``.

The driver runs one worker process per tree and round, alternating ``--old`` and ``--new``; a
worker fits each case once to warm up and then ``--reps`` times, and reports the least CPU time
(``time.process_time``: the machine these ran on is shared, and CPU time is what the load leaves
least changed) and the fit's numbers (log-likelihood, fixed effects, their SEs, the random-effect
SDs, thresholds).  The table shows the least time over all rounds of each tree, their ratio and
the largest relative difference of the numbers.  BLAS runs on one thread in both.  Usage (from
the repository root; the old tree is e.g. ``git archive <commit> src | tar -x -C /tmp/old``)::

    python bench/bench_engines_ab.py --old /tmp/old/src --new src --rounds 3 --reps 3
    python bench/bench_engines_ab.py --old /tmp/old/src --new src --only clmm,glmmtmb
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
import warnings
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("EVALMIX_SHARED", ROOT.parent / "shared"))
FIVE = ["model * language * prompt", "model * language + prompt", "model + language * prompt",
        "model + language + prompt", "model + language"]


def _cases() -> dict:
    import numpy as np
    import pandas as pd
    from scipy import special

    from evalmix import clmm, glmer, glmmtmb, lmer
    from evalmix.simulate import glmm_runs

    ai = pd.read_csv(SHARED / "data" / "ai4math" / "ai4math_runs.csv")
    ai["run"] = ai["run"].astype(str)

    def grid_design(n_models: int, n_items: int, n_runs: int, seed: int = 1):
        g = pd.MultiIndex.from_product([[f"M{m + 1}" for m in range(n_models)],
                                        [f"q{i:04d}" for i in range(n_items)], range(1, n_runs + 1)],
                                       names=["model", "item", "run"]).to_frame(index=False)
        return g, np.random.default_rng(seed)

    # bench_lmer.py's design, with a covariate x for the dense and sparse paths
    ld, rng = grid_design(5, 500, 4)
    item = rng.normal(0, 1.2, 500)[ld["item"].str[1:].astype(int)]
    ir = rng.normal(0, 0.5, 2000)[ld["item"].str[1:].astype(int) * 4 + ld["run"] - 1]
    shift = np.linspace(0, 0.8, 5)[ld["model"].str[1:].astype(int) - 1]
    ld["x"] = rng.normal(size=len(ld))
    ld["score"] = np.clip(np.round(6 + shift + item + ir + 0.3 * ld["x"] + rng.normal(0, 1.0, len(ld))), 1, 10)
    ld["run"] = ld["run"].astype(str)
    # bench_clmm.py's design
    cd, rng = grid_design(5, 500, 4)
    it = cd["item"].str[1:].astype(int).to_numpy()
    lp = (np.linspace(0, 0.8, 5)[cd["model"].str[1:].astype(int).to_numpy() - 1]
          + rng.normal(0, 1.0, 500)[it] + rng.normal(0, 0.5, 2000)[it * 4 + cd["run"].to_numpy() - 1])
    cd["rating"] = 1 + np.searchsorted(np.array([-2.0, -0.7, 0.5, 1.8]),
                                       lp + special.logit(rng.uniform(size=len(cd))))
    cd["run"] = cd["run"].astype(str)
    # bench_glmmtmb.py's two fits (k of 3 per cell; a simulated 0-1 score)
    agg = ai.groupby(["problem_id", "model", "language", "prompt"], as_index=False)["correct"].agg(
        k="sum", n="count")
    rng = np.random.default_rng(1)
    pe = rng.normal(0, 0.8, ai["problem_id"].nunique())[pd.factorize(ai["problem_id"])[0]]
    mu = special.expit(-0.2 + pe + rng.normal(0, 0.3, len(ai)))
    aib = ai.copy()
    aib["score"] = np.clip(rng.beta(mu * 8, (1 - mu) * 8), 1e-4, 1 - 1e-4)
    big = glmm_runs(40, 1000, 5, seed=1)  # bench_glmm.py big at a fifth of its size
    rng = np.random.default_rng(2)
    grid = pd.MultiIndex.from_product([[f"m{i}" for i in range(60)], [f"q{j}" for j in range(2000)]],
                                      names=["model", "item"]).to_frame(index=False)
    grid["correct"] = (rng.normal(size=60)[pd.factorize(grid["model"])[0]]
                       + rng.normal(size=2000)[pd.factorize(grid["item"])[0]]
                       + rng.logistic(size=len(grid)) > 0).astype(int)

    def five():
        return [glmer(f"correct ~ {f} + (1|problem_id) + (1|problem_id:run)", ai) for f in FIVE]

    return {
        "glmer: bench_glmm five (NestedSolver)": five,
        "glmer: bench_glmm big, 200k rows (NestedSolver)": lambda: glmer(
            "correct ~ model + (1|item) + (1|item:run)", big),
        "glmer: crossed grid 60 x 2000 (CrossedGridSolver)": lambda: glmer(
            "correct ~ 1 + (1|item) + (1|model)", grid),
        "glmer: SchurSolver": lambda: glmer("correct ~ language + (1|problem_id) + (1|model)", ai),
        "glmer: NestedSchurSolver": lambda: glmer(
            "correct ~ language + (1|problem_id) + (1|problem_id:run) + (1|model)", ai),
        "glmer: BlockDiagSolver": lambda: glmer("correct ~ language + (1 + language|problem_id)", ai),
        "glmer: BlockSchurSolver": lambda: glmer(
            "correct ~ language + (1 + language|problem_id) + (1|model)", ai),
        "glmer: DenseSolver": lambda: glmer("correct ~ 1 + (1|language) + (1|prompt)", ai),
        "lmer: bench_lmer (nested)": lambda: lmer("score ~ model + (1|item) + (1|item:run)", ld),
        "lmer: one intercept": lambda: lmer("score ~ model + (1|item)", ld),
        "lmer: crossed intercepts (InterceptHessian)": lambda: lmer(
            "score ~ model + (1|item) + (1|model:run)", ld),
        "lmer: dense": lambda: lmer("score ~ x + (1 + x|model) + (1|run)", ld),
        "lmer: sparse LU": lambda: lmer("score ~ x + (1 + x|item)", ld),
        "glmmtmb: bench_glmmtmb bb (nested)": lambda: glmmtmb(
            "cbind(k, n - k) ~ model + language + prompt + (1|problem_id) + (1|problem_id:model)", agg,
            family="betabinomial"),
        "glmmtmb: bench_glmmtmb beta (nested)": lambda: glmmtmb(
            "score ~ model + language + prompt + (1|problem_id) + (1|problem_id:run)", aib, family="beta"),
        "glmmtmb: crossed (Schur)": lambda: glmmtmb("score ~ language + (1|problem_id) + (1|model)", aib,
                                                    family="beta"),
        "clmm: bench_clmm (nested)": lambda: clmm("rating ~ model + (1|item) + (1|item:run)", cd),
        "clmm: crossed (Schur)": lambda: clmm("rating ~ model + (1|item) + (1|run)", cd),
    }


def _numbers(fit) -> dict[str, list[float]]:
    import numpy as np
    import pandas as pd

    if isinstance(fit, list):  # several fits: their numbers one after the other
        parts = [_numbers(f) for f in fit]
        return {k: [x for p in parts for x in p[k]] for k in parts[0]}

    out = {"loglik": [float(fit.loglik)], "fixef": [float(v) for v in fit.fixef.to_numpy()]}
    out["se"] = [float(x) for x in np.sqrt(np.diag(np.asarray(fit.vcov, dtype=float)))]
    if isinstance(getattr(fit, "thresholds", None), pd.Series):
        out["thresholds"] = [float(x) for x in fit.thresholds.to_numpy()]
    vc = fit.varcorr
    if isinstance(vc, pd.DataFrame):
        col = "sd" if "sd" in vc else vc.columns[-1]
        out["sd"] = [float(x) for x in vc[col].to_numpy(dtype=float)]
    return out


def worker(src: str, reps: int, only: list[str] | None) -> None:
    sys.path.insert(0, src)
    warnings.simplefilter("ignore")
    import evalmix

    assert Path(evalmix.__file__).resolve().is_relative_to(Path(src).resolve()), evalmix.__file__
    res = {}
    for name, f in _cases().items():
        if only and not any(o in name for o in only):
            continue
        fit = f()  # warm: imports, compiled kernels
        best = float("inf")
        for _ in range(reps):
            t0 = time.process_time()
            fit = f()
            best = min(best, time.process_time() - t0)
        res[name] = {"cpu": best, **_numbers(fit)}
    print(json.dumps(res))


def _rel(a: list[float], b: list[float]) -> float:
    return max((abs(x - y) / max(abs(x), 1e-3) for x, y in zip(a, b)), default=0.0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--old", required=True, help="the old tree's src folder")
    ap.add_argument("--new", default=str(ROOT / "src"), help="the new tree's src folder")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--only", default="", help="comma-separated parts of case names")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    a = ap.parse_args()
    only = [s for s in a.only.split(",") if s] or None
    if a.worker:
        worker(a.worker, a.reps, only)
        return
    env = dict(os.environ, OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1",
               NUMBA_NUM_THREADS="1")
    runs: dict[str, list[dict]] = {"old": [], "new": []}
    for r in range(a.rounds):
        for side in ("old", "new"):
            cmd = [sys.executable, __file__, "--old", a.old, "--worker", getattr(a, side),
                   "--reps", str(a.reps), "--only", a.only]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
            runs[side].append(json.loads(out))
            print(f"round {r + 1} {side} done ({time.strftime('%H:%M:%S')}, load "
                  f"{os.getloadavg()[0]:.1f})", file=sys.stderr)
    print("| case | old CPU s | new CPU s | new / old | largest relative difference |")
    print("|---|---|---|---|---|")
    for name in runs["old"][0]:
        old = min(r[name]["cpu"] for r in runs["old"])
        new = min(r[name]["cpu"] for r in runs["new"])
        o, n = runs["old"][0][name], runs["new"][0][name]
        diff = max(_rel(o[k], n[k]) for k in o if k != "cpu")
        print(f"| {name} | {old:.3f} | {new:.3f} | {new / old:.2f} | {diff:.1e} |")


if __name__ == "__main__":
    main()
