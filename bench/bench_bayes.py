"""Benchmark: Bayesian GLMM on AI4Math, evalmix.bayes against bambi (nutpie and PyMC samplers).

Model ``correct ~ model + language + (1|problem_id) + (1|problem_id:run)``, 4 chains x 1000 draws
after 1000 tuning steps, wall time from model construction to draws (compilation included).  Goal:
evalmix converges (r_hat <= 1.01, bulk ESS >= 400 for every fixed effect and SD) in at most a tenth
of bambi + nutpie's time (issue 22), on a process's first fit and on repeat fits in the same process,
on what the README installs (``pip install -e ".[test,bayes]"``: nutpie and numba included).

Each round starts one fresh process for evalmix and one for bambi + nutpie (alternating, so that
changes in the machine's load hit both); each process fits the model ``--fits`` times, so its
first fit pays every import-time and compilation cost and the later ones show what a process
reuses.  ``--cold-cache`` gives evalmix's processes an empty numba cache directory (the first fit
after installation compiles the kernel).

Run (bambi 0.17.2 needs arviz-plots, which needs matplotlib < 3.11: give an interpreter with them)::

    python bench/bench_bayes.py [--data ../shared/data/ai4math/ai4math_runs.csv] [--rounds 2]
        [--fits 2] [--bambi-python /tmp/bambi-venv/bin/python] [--bambi-pymc] [--cold-cache]

``--baseline-src DIR`` times another evalmix source tree (e.g. an earlier commit exported with
``git archive COMMIT src | tar -x -C /tmp/before``, then ``--baseline-src /tmp/before/src``) in
bambi's place, in alternation with this one::

    python bench/bench_bayes.py --baseline-src /tmp/before/src --rounds 2 --fits 2 [--sampler pymc]

``--design crossed`` times the second design the issue names instead: a simulated benchmark whose
items are crossed with prompt templates and carry item-level predictors (8 models x 200 items x 6
prompts, 9,600 rows; a numeric item feature and a five-level domain),
``correct ~ model + difficulty + domain + (1|item) + (1|prompt)``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import warnings

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src")
FORMULA = "correct ~ model + language + (1|problem_id) + (1|problem_id:run)"
FORMULAS = {"ai4math": FORMULA, "crossed": "correct ~ model + difficulty + domain + (1|item) + (1|prompt)"}
SIGMAS = {"ai4math": ["1|problem_id_sigma", "1|problem_id:run_sigma"],
          "crossed": ["1|item_sigma", "1|prompt_sigma"]}
FACTORS = {"ai4math": ["problem_id", "run", "model", "language"], "crossed": ["item", "prompt", "model", "domain"]}


def crossed_table(seed: int = 20261126):
    """8 models x 200 items x 6 prompt templates: items crossed with prompts, an item-level numeric
    feature (``difficulty``, standardised) and a five-level ``domain`` of the items."""
    import numpy as np
    import pandas as pd

    rng = np.random.default_rng(seed)
    n_models, n_items, n_prompts = 8, 200, 6
    difficulty = rng.normal(size=n_items)
    domain = rng.integers(0, 5, n_items)
    item_eff = rng.normal(0, 1.2, n_items) - 0.8 * difficulty + 0.3 * (domain - 2)
    prompt_eff = rng.normal(0, 0.4, n_prompts)
    model_eff = np.linspace(-1.0, 1.0, n_models)
    m, i, p = (a.ravel() for a in np.meshgrid(np.arange(n_models), np.arange(n_items), np.arange(n_prompts),
                                              indexing="ij"))
    eta = 0.3 + model_eff[m] + item_eff[i] + prompt_eff[p]
    return pd.DataFrame({"model": [f"M{k}" for k in m], "item": [f"q{k:03d}" for k in i],
                         "prompt": [f"P{k}" for k in p], "difficulty": difficulty[i],
                         "domain": [f"D{k}" for k in domain[i]],
                         "correct": (rng.random(len(m)) < 1 / (1 + np.exp(-eta))).astype(int)})


def convergence(summary) -> dict:
    return {"r_hat": float(summary["r_hat"].max()), "ess_bulk": float(summary["ess_bulk"].min()),
            "ess_tail": float(summary["ess_tail"].min())}


def fit_evalmix(d, seed: int, sampler: str = "auto", design: str = "ai4math") -> dict:
    from evalmix import bayes

    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = bayes.glmer(FORMULAS[design], d, rng=seed, progressbar=False, sampler=sampler)
    el = time.perf_counter() - t
    return {"seconds": el, "sampling": fit.seconds, "sampler": fit.sampler,
            "divergences": fit.divergences, **convergence(fit.posterior_table())}


def fit_bambi(d, seed: int, method: str, design: str = "ai4math") -> dict:
    import arviz as az
    import bambi as bmb

    dd = d.copy()
    for c in FACTORS[design]:
        dd[c] = dd[c].astype(str)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = bmb.Model(FORMULAS[design], dd, family="bernoulli")
        idata = m.fit(draws=1000, tune=1000, chains=4, inference_method=method, random_seed=seed,
                      progressbar=False)
    el = time.perf_counter() - t
    fixed = ["Intercept", "model", "language"] if design == "ai4math" else ["Intercept", "model", "difficulty", "domain"]
    names = fixed + SIGMAS[design]
    return {"seconds": el, "sampler": f"bambi {bmb.__version__} + {method}",
            "divergences": int(idata.sample_stats["diverging"].sum()),
            **convergence(az.summary(idata, var_names=names))}


def child(args: argparse.Namespace) -> None:
    """One process: ``--fits`` fits of one library, one JSON line per fit."""
    import numpy as np
    import pandas as pd

    sys.path.insert(0, args.src)
    np.seterr(all="ignore")
    d = pd.read_csv(args.data) if args.design == "ai4math" else crossed_table()
    import pymc  # noqa: F401  (imported before timing, as each library needs it)

    for i in range(args.fits):
        seed = args.seed + i
        out = (fit_evalmix(d, seed, args.sampler, args.design) if args.child == "evalmix"
               else fit_bambi(d, seed, args.child, args.design))
        if args.src != SRC:
            out["sampler"] += " [baseline]"
        print("RESULT " + json.dumps({"lib": args.child, "fit": i + 1, **out}), flush=True)


def run_child(python: str, lib: str, args: argparse.Namespace, env: dict | None = None,
              src: str = SRC) -> list[dict]:
    cmd = [python, os.path.abspath(__file__), "--child", lib, "--data", args.data,
           "--fits", str(args.fits), "--seed", str(args.seed), "--src", src, "--sampler", args.sampler,
           "--design", args.design]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    rows = [json.loads(line[7:]) for line in res.stdout.splitlines() if line.startswith("RESULT ")]
    if not rows:
        raise RuntimeError(f"{lib} process failed:\n{res.stderr[-3000:]}")
    for r in rows:
        conv = "converged" if r["r_hat"] <= 1.01 and r["ess_bulk"] >= 400 else "NOT converged"
        print(f"  {r['sampler']:<45} fit {r['fit']}: {r['seconds']:6.1f} s  max r_hat {r['r_hat']:.3f}, "
              f"min bulk ESS {r['ess_bulk']:.0f}, min tail ESS {r['ess_tail']:.0f}, "
              f"{r['divergences']} divergences -> {conv}", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                                                   "shared", "data", "ai4math", "ai4math_runs.csv"))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=2, help="alternating evalmix / bambi+nutpie processes")
    ap.add_argument("--fits", type=int, default=2, help="fits per process (first, then repeats)")
    ap.add_argument("--bambi-python", default=sys.executable, help="interpreter with bambi installed")
    ap.add_argument("--bambi-pymc", action="store_true", help="also time bambi with PyMC's sampler")
    ap.add_argument("--cold-cache", action="store_true",
                    help="evalmix processes start with an empty numba cache")
    ap.add_argument("--baseline-src", help="time this evalmix source tree instead of bambi")
    ap.add_argument("--sampler", default="auto", help="evalmix's sampler (auto, nutpie, pymc...)")
    ap.add_argument("--design", default="ai4math", choices=sorted(FORMULAS),
                    help="AI4Math (nested item:run) or the simulated crossed design with item predictors")
    ap.add_argument("--src", default=SRC, help=argparse.SUPPRESS)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    print(f"design: {args.design} ({FORMULAS[args.design]}); cores: {os.cpu_count()}, "
          f"load average at start: {os.getloadavg()}")
    ev, nut = [], []
    for rnd in range(args.rounds):
        env = None
        if args.cold_cache:
            env = {**os.environ, "NUMBA_CACHE_DIR": tempfile.mkdtemp(prefix="numba-cold-")}
        print(f"round {rnd + 1}")
        ev += run_child(sys.executable, "evalmix", args, env)
        if args.baseline_src:
            nut += run_child(sys.executable, "evalmix", args, env, src=os.path.abspath(args.baseline_src))
        else:
            nut += run_child(args.bambi_python, "nutpie", args)
    other = "baseline" if args.baseline_src else "bambi+nutpie"
    print("\nwall time (s), mean over rounds:")
    for fit in range(1, args.fits + 1):
        e = [r["seconds"] for r in ev if r["fit"] == fit]
        b = [r["seconds"] for r in nut if r["fit"] == fit]
        label = "first fit of a process" if fit == 1 else f"fit {fit} of a process"
        print(f"  {label:<24} evalmix {sum(e) / len(e):5.1f} (range {min(e):.1f}-{max(e):.1f}), "
              f"{other} {sum(b) / len(b):5.1f} (range {min(b):.1f}-{max(b):.1f}), "
              f"ratio {sum(e) / sum(b):.2f}" + ("" if args.baseline_src else " (goal <= 0.1)"))
    if args.bambi_pymc:
        pm_rows = run_child(args.bambi_python, "pymc", argparse.Namespace(**{**vars(args), "fits": 1}))
        print(f"ratio evalmix first fit / bambi+pymc: "
              f"{[r['seconds'] for r in ev if r['fit'] == 1][0] / pm_rows[0]['seconds']:.2f}")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
