"""Cost of lme4-compatible default standard errors in evalmix.glmer.

``vcov_method="hessian"`` (the default) also solves lme4's first (``nAGQ = 0``) stage, to know
where lme4's deviance function restarts PIRLS, and counts lme4's PIRLS iterations at the points of
its Hessian stencil; ``"hessian_exact"`` does neither. This times the whole ``glmer`` call both
ways on the five AI4Math models and on the three ``fit_many`` benchmarks (best of three).

Usage (from the repository root)::

    python bench/bench_lme4_se.py
"""

from __future__ import annotations

import os
import time
import warnings
from pathlib import Path

import pandas as pd

import evalmix
from evalmix.model import make_formula

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("EVALMIX_SHARED", ROOT.parent / "shared"))
AI4MATH = SHARED / "data" / "ai4math" / "ai4math_runs.csv"
FIVE = ["model * language * prompt", "model * language + prompt", "model + language * prompt",
        "model + language + prompt", "model + language"]


def best(formula: str, data: pd.DataFrame, method: str, reps: int = 3) -> float:
    out = []
    for _ in range(reps):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            t = time.perf_counter()
            evalmix.glmer(formula, data, vcov_method=method)
            out.append(time.perf_counter() - t)
    return min(out)


def main() -> None:
    cases = []
    if AI4MATH.exists():
        d = pd.read_csv(AI4MATH)
        cases += [(f, make_formula("correct", f, ["problem_id", "problem_id:run"]).text, d) for f in FIVE]
    bench = pd.read_csv(ROOT / "tests" / "reference" / "fit_many_benchmarks.csv")
    for b in ["chem", "code", "math"]:
        cases.append((b, "correct ~ model + (1 | item) + (1 | item:run)",
                      bench[bench["benchmark"] == b]))
    print("| fit | hessian_exact s | hessian (default) s | ratio |")
    print("|---|---:|---:|---:|")
    tot = [0.0, 0.0]
    for name, formula, data in cases:
        te, td = best(formula, data, "hessian_exact"), best(formula, data, "hessian")
        tot[0] += te
        tot[1] += td
        print(f"| {name} | {te:.3f} | {td:.3f} | {td / te:.2f} |")
    print(f"| total | {tot[0]:.3f} | {tot[1]:.3f} | {tot[1] / tot[0]:.2f} |")


if __name__ == "__main__":
    main()
