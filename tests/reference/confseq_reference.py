"""Reference confidence sequences of ``confseq`` for tests/studies/test_sequential.py.

Run from the repository root with an environment that has ``confseq`` (kept out of evalmix's own
environment; confseq 0.0.11 builds against pybind11 >= 2.11 without build isolation and imports
``np.float_``, so it needs numpy < 2)::

    python3 -m venv /work/venv-confseq
    /work/venv-confseq/bin/pip install "pybind11>=2.11" scikit-build cmake ninja setuptools wheel "numpy<2" scipy
    /work/venv-confseq/bin/pip install --no-build-isolation confseq
    /work/venv-confseq/bin/python tests/reference/confseq_reference.py

It draws seeded sequences (0/1 outcomes, item means over three runs, paired differences of item
means in [-1, 1] mapped to [0, 1] as ``(d + 1) / 2``) and records, at every step:

- ``betting_cs`` with the predictable plug-in bets (``lambda_predmix_eb``) on both capital
  processes, hedged (theta = 1/2, truncation 1/2 of 1/m and 1/(1 - m)), running intersection,
  1000 grid breaks: the CS of Waudby-Smith & Ramdas (2023, Theorem 3) that evalmix computes;
- ``hedged_cs``, confseq's shortcut for it, which passes the candidate mean ``m`` positionally
  into ``lambda_predmix_eb``'s ``truncation`` for the negative capital process (its bets are
  also capped at ``m``) and so differs slightly from the paper's CS; kept for comparison;
- ``predmix_empbern_cs`` (predictable-plug-in empirical Bernstein, truncation 1/2, no running
  intersection);
- ``normal_mixture_bound`` (two-sided, ``v = t / 4``, tuned at ``v_opt = n_opt / 4``) divided
  by ``t``: the half-width of the sub-Gaussian normal-mixture CS.
"""

from __future__ import annotations

import importlib.metadata
import json
from pathlib import Path

import numpy as np
from confseq.betting import betting_cs, hedged_cs
from confseq.betting_strategies import lambda_predmix_eb
from confseq.boundaries import normal_mixture_bound
from confseq.predmix import predmix_empbern_cs

OUT = Path(__file__).resolve().parent / "confseq_reference.json"
ALPHA = 0.05
N_OPT = 250


def scenarios() -> list[dict]:
    rng = np.random.default_rng(20260127)
    out = []
    x = (rng.random(300) < 0.7).astype(float)
    out.append({"name": "bernoulli_07", "bounds": [0.0, 1.0],
                "description": "300 items, one 0/1 run each, p = 0.7", "x": x})
    p = rng.beta(2.0, 1.0, size=400)
    x = rng.binomial(3, p) / 3
    out.append({"name": "item_means_3_runs", "bounds": [0.0, 1.0],
                "description": "400 items, accuracy p_i ~ Beta(2, 1), mean of 3 runs", "x": x})
    pa = rng.beta(2.0, 2.0, size=500)
    pb = np.clip(pa + 0.08, 0, 1)
    d = rng.binomial(4, pb) / 4 - rng.binomial(4, pa) / 4
    out.append({"name": "paired_difference_4_runs", "bounds": [-1.0, 1.0],
                "description": "500 items, p_a ~ Beta(2, 2), p_b = p_a + 0.08, 4 runs each; d = mean_b - mean_a",
                "x": d})
    return out


def main() -> None:
    cases = []
    for sc in scenarios():
        a, b = sc["bounds"]
        z = (np.asarray(sc["x"]) - a) / (b - a)
        t = np.arange(1, len(z) + 1, dtype=float)
        bets = [lambda y, m: lambda_predmix_eb(y, alpha=ALPHA)]
        lo_b, hi_b = betting_cs(z, lambdas_fns_positive=bets, lambdas_fns_negative=bets, alpha=ALPHA,
                                breaks=1000, running_intersection=True, theta=0.5, trunc_scale=0.5,
                                m_trunc=True, convex_comb=False)
        lo_h, hi_h = hedged_cs(z, alpha=ALPHA, breaks=1000, running_intersection=True)
        lo_e, hi_e = predmix_empbern_cs(z, alpha=ALPHA, truncation=0.5, running_intersection=False)
        radius = np.array([normal_mixture_bound(v, ALPHA, N_OPT / 4, ALPHA, False) for v in t / 4]) / t
        cases.append(sc | {"x": np.asarray(sc["x"]).tolist(),
                           "betting_low": lo_b.tolist(), "betting_high": hi_b.tolist(),
                           "hedged_low": lo_h.tolist(), "hedged_high": hi_h.tolist(),
                           "eb_low": lo_e.tolist(), "eb_high": hi_e.tolist(),
                           "nm_radius": radius.tolist()})
    doc = {"generator": "tests/reference/confseq_reference.py",
           "confseq_version": importlib.metadata.version("confseq"),
           "numpy_version": np.__version__, "alpha": ALPHA, "n_opt": N_OPT,
           "note": "betting/eb bounds are on the [0, 1] scale of (x - a) / (b - a); nm_radius is the "
                   "[0, 1]-scale half-width of the sub-Gaussian (scale 1/2) normal-mixture CS",
           "cases": cases}
    OUT.write_text(json.dumps(doc, indent=1) + "\n")
    print(f"wrote {OUT} (confseq {doc['confseq_version']})")


if __name__ == "__main__":
    main()
