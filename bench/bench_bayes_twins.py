"""Benchmark: every Bayesian twin against bambi + nutpie on R's textbook models.

Models (4 chains x 1000 draws after 1000 tuning steps, the same for both libraries):

- ``sleepstudy``: ``Reaction ~ Days + (Days|Subject)``, :func:`evalmix.bayes.lmer` (correlated slopes);
- ``cbpp``: ``cbind(incidence, size - incidence) ~ period + (1|herd)``, :func:`evalmix.bayes.glmmtmb`
  with ``family="betabinomial"`` (bambi: ``p(incidence, size)``, ``family="beta_binomial"``);
- ``wine``: ``rating ~ temp + contact + (1|judge)``, :func:`evalmix.bayes.clmm` (bambi:
  ``family="cumulative"``);
- ``verbagg``: ``r2 ~ Anger + Gender + btype + situ + (1|id) + (1|item)`` on lme4's VerbAgg (7,584
  rows, crossed), :func:`evalmix.bayes.glmer` (bambi: ``family="bernoulli"``).

Each round starts one fresh process for evalmix and one for bambi + nutpie (alternating, so that
changes in the machine's load hit both); each process fits the model ``--fits`` times, so its first
fit pays every import-time and compilation cost (evalmix's numba disk cache included, unless
``--cold-cache``) and the later ones show what a process reuses.  Wall time runs from the call
that builds the model to the draws.  The libraries' priors differ (each its own defaults), so the
comparison is one of time to a converged posterior; each fit's largest r_hat, smallest bulk ESS and
divergence count are printed beside its time.

Run (on Python 3.11 pip picks bambi 0.17, whose arviz-plots needs matplotlib < 3.11: give an
interpreter that has them, e.g. a ``python -m venv --system-site-packages`` with ``pip install bambi
"matplotlib<3.11"``; on Python >= 3.12 bambi 0.21 runs on PyMC 6 and ArviZ 1 unchanged)::

    python bench/bench_bayes_twins.py --bambi-python VENV/bin/python [--models sleepstudy,wine]
        [--rounds 1] [--fits 2] [--cold-cache]
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

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, "..", "src")
REF = os.path.join(HERE, "..", "tests", "reference")

# name: (evalmix function, its keyword arguments, formula, bambi formula, bambi family, data file)
MODELS = {
    "sleepstudy": ("lmer", {}, "Reaction ~ Days + (Days|Subject)", "Reaction ~ Days + (Days|Subject)",
                   "gaussian", "lmer_sleepstudy.csv"),
    "cbpp": ("glmmtmb", {"family": "betabinomial"}, "cbind(incidence, size - incidence) ~ period + (1|herd)",
             "p(incidence, size) ~ period + (1|herd)", "beta_binomial", "engine_cbpp.csv"),
    "wine": ("clmm", {}, "rating ~ temp + contact + (1|judge)", "rating ~ temp + contact + (1|judge)",
             "cumulative", "clmm_wine.csv"),
    "verbagg": ("glmer", {}, "r2 ~ Anger + Gender + btype + situ + (1|id) + (1|item)",
                "r2 ~ Anger + Gender + btype + situ + (1|id) + (1|item)", "bernoulli", "bayes_verbagg.csv"),
}
FACTORS = {"sleepstudy": ["Subject"], "cbpp": ["herd", "period"], "wine": ["judge", "temp", "contact"],
           "verbagg": ["id", "item", "Gender", "btype", "situ"]}


def load(name: str):
    import pandas as pd

    d = pd.read_csv(os.path.join(REF, MODELS[name][5]))
    for c in FACTORS[name]:
        d[c] = d[c].astype(str)
    return d


def fit_evalmix(name: str, d, seed: int) -> dict:
    from evalmix import bayes

    fn, kw, formula = MODELS[name][:3]
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = getattr(bayes, fn)(formula, d, rng=seed, progressbar=False, **kw)
    el = time.perf_counter() - t
    tab = fit.posterior_table()
    return {"seconds": el, "sampling": fit.seconds, "sampler": f"evalmix {fn} ({fit.sampler})",
            "divergences": fit.divergences, "r_hat": float(tab["r_hat"].max()),
            "ess_bulk": float(tab["ess_bulk"].min())}


def fit_bambi(name: str, d, seed: int) -> dict:
    import arviz as az
    import bambi as bmb
    import pandas as pd

    formula, family = MODELS[name][3:5]
    dd = d.copy()
    if name == "wine":
        dd["rating"] = pd.Categorical(dd["rating"], categories=sorted(dd["rating"].unique()), ordered=True)
    t = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = bmb.Model(formula, dd, family=family)
        idata = m.fit(draws=1000, tune=1000, chains=4, inference_method="nutpie", random_seed=seed,
                      progressbar=False)
    el = time.perf_counter() - t
    names = [v for v in idata.posterior.data_vars if not v.endswith("_offset") and "mean" not in v
             and "|" not in v or v.endswith("_sigma")]
    s = az.summary(idata, var_names=names)
    return {"seconds": el, "sampler": f"bambi {bmb.__version__} + nutpie",
            "divergences": int(idata.sample_stats["diverging"].sum()), "r_hat": float(s["r_hat"].max()),
            "ess_bulk": float(s["ess_bulk"].min())}


def child(args: argparse.Namespace) -> None:
    """One process: ``--fits`` fits of one library on one model, one JSON line per fit."""
    import numpy as np

    sys.path.insert(0, args.src)
    np.seterr(all="ignore")
    d = load(args.model)
    import pymc  # noqa: F401  (imported before timing, as each library needs it)
    # ArviZ too: `import bambi` imports it (before timing), while PyMC 6 leaves it to nutpie, which
    # evalmix imports at its first fit (2-5 s on the 3.12 stack otherwise counted against evalmix only)
    import arviz  # noqa: F401

    for i in range(args.fits):
        seed = args.seed + i
        out = fit_evalmix(args.model, d, seed) if args.child == "evalmix" else fit_bambi(args.model, d, seed)
        print("RESULT " + json.dumps({"lib": args.child, "fit": i + 1, **out}), flush=True)


def run_child(python: str, lib: str, model: str, args: argparse.Namespace, env: dict | None = None) -> list[dict]:
    cmd = [python, os.path.abspath(__file__), "--child", lib, "--model", model, "--fits", str(args.fits),
           "--seed", str(args.seed), "--src", SRC]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env)
    rows = [json.loads(line[7:]) for line in res.stdout.splitlines() if line.startswith("RESULT ")]
    if not rows:
        print(f"  {lib} process failed on {model}:\n{res.stderr[-3000:]}", flush=True)
        return []
    for r in rows:
        conv = "converged" if r["r_hat"] <= 1.01 and r["ess_bulk"] >= 400 and r["divergences"] == 0 \
            else "NOT converged"
        print(f"  {r['sampler']:<48} fit {r['fit']}: {r['seconds']:6.1f} s  max r_hat {r['r_hat']:.3f}, "
              f"min bulk ESS {r['ess_bulk']:.0f}, {r['divergences']} divergences -> {conv}", flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", default=",".join(MODELS), help="comma-separated, from " + ", ".join(MODELS))
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=1, help="alternating evalmix / bambi+nutpie processes")
    ap.add_argument("--fits", type=int, default=2, help="fits per process (first, then repeats)")
    ap.add_argument("--bambi-python", default=sys.executable, help="interpreter with bambi installed")
    ap.add_argument("--cold-cache", action="store_true", help="evalmix processes start with an empty numba cache")
    ap.add_argument("--src", default=SRC, help=argparse.SUPPRESS)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--model", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args)
        return
    print(f"cores: {os.cpu_count()}, load average at start: {os.getloadavg()}")
    summary = []
    for model in args.models.split(","):
        print(f"{model}: {MODELS[model][2]}")
        ev, bb = [], []
        for rnd in range(args.rounds):
            env = None
            if args.cold_cache:
                env = {**os.environ, "NUMBA_CACHE_DIR": tempfile.mkdtemp(prefix="numba-cold-")}
            ev += run_child(sys.executable, "evalmix", model, args, env)
            bb += run_child(args.bambi_python, "bambi", model, args)
        for fit in range(1, args.fits + 1):
            e = [r["seconds"] for r in ev if r["fit"] == fit]
            b = [r["seconds"] for r in bb if r["fit"] == fit]
            if e and b:
                summary.append((model, fit, sum(e) / len(e), sum(b) / len(b)))
    print("\nwall time (s), mean over rounds; ratio evalmix / bambi+nutpie (goal <= 0.5):")
    for model, fit, e, b in summary:
        label = "first fit" if fit == 1 else f"fit {fit}"
        print(f"  {model:<11} {label:<10} evalmix {e:6.1f}  bambi+nutpie {b:6.1f}  ratio {e / b:.2f}")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
