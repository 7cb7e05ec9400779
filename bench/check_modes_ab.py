"""The conditional-mode paths of every engine in two source trees, compared to the last bit.

Runs one worker process per tree (``--old`` and ``--new`` src folders) that evaluates glmer's
PIRLS paths directly and through fits: the Laplace modes from near and far starts with the NumPy
and the compiled row passes, the probit and cloglog links, lme4's ``pwrssUpdate`` replay (its
iteration count and relative changes), the joint mode of ``nAGQ = 0``, controls that run out of
halvings, whole glmer fits of each solver, ``laplace_modes`` from far starts, and glmmtmb and
clmm fits. Prints each check that differs (with its largest relative difference) and the count;
exits 1 when any differs. Usage (from the repository root; the old tree is e.g.
``git archive <commit> src | tar -x -C /tmp/old``)::

    python bench/check_modes_ab.py --old /tmp/old/src --new src
"""

from __future__ import annotations

import argparse
import os
import pickle
import subprocess
import sys
import tempfile
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _checks() -> dict[str, object]:
    import pandas as pd

    from evalmix import clmm, glmer, glmmtmb
    from evalmix.glmm import GlmerControl, build_design
    from evalmix.glmm.deviance import LaplaceDeviance
    from evalmix.mixed.intercepts import InterceptHessian
    from evalmix.mixed.modes import laplace_modes
    from evalmix.simulate import glmm_runs

    out: dict[str, object] = {}
    d = glmm_runs(4, 60, 3, rng=3)
    rng = np.random.default_rng(5)
    d["x"] = rng.normal(size=len(d))
    d["judge"] = rng.integers(0, 6, len(d)).astype(str)
    comp = GlmerControl(compiled_rows_min=1)

    def fitted(fit) -> np.ndarray:
        est = fit.fixef if getattr(fit, "fixef", None) is not None else fit.coef
        return np.concatenate([np.asarray(est, float), np.asarray(fit.vcov, float).ravel(),
                               [float(fit.loglik)], np.asarray(getattr(fit, "theta", []), float).ravel()])

    nested = "correct ~ model + (1|item) + (1|item:run)"
    fits = {"nested": (nested, {}), "nested compiled": (nested, {"control": comp}),
            "nested nAGQ=0": (nested, {"nAGQ": 0}), "nested nAGQ=0 compiled": (nested, {"nAGQ": 0, "control": comp}),
            "probit": ("correct ~ model + (1|item)", {"link": "probit"}),
            "cloglog": ("correct ~ model + (1|item)", {"link": "cloglog"}),
            "crossed": ("correct ~ model + (1|item) + (1|judge)", {}),
            "slope": ("correct ~ model + x + (1 + x|item)", {}),
            "slope crossed": ("correct ~ model + x + (1|item) + (1 + x|judge)", {}),
            "nAGQ=5": ("correct ~ model + (1|item)", {"nAGQ": 5}),
            "dense X nAGQ=0 compiled": ("correct ~ x + (1|item) + (1|item:run)", {"control": comp, "nAGQ": 0})}
    for name, (formula, kw) in fits.items():
        out[f"glmer {name}"] = fitted(glmer(formula, d, **kw))

    design = build_design(nested, d)
    n = len(design.k)
    beta = np.array([0.3, -0.2, 0.1, 0.5])
    far = np.random.default_rng(11)
    for tag, ctl in (("numpy", None), ("compiled", comp)):
        ld = LaplaceDeviance(design.X, design.k, design.m, design.terms, control=ctl)
        for th in ([0.5, 1.0], [2.0, 0.1], [0.0, 3.0], [3.0, 3.0], [6.0, 0.5], [0.2, 8.0]):
            t = np.array(th)
            ev = ld.pirls(t, beta)
            out[f"pirls {tag} {th}"] = np.concatenate([[ev.dev, ev.iterations], ev.u, ev.mu, ev.w])
            u0 = far.normal(0, 6, ld.q)
            ev = ld.pirls(t, np.array([2.0, -3.0, 1.0, 0.5]), u0.copy())
            out[f"pirls far {tag} {th}"] = np.concatenate([[ev.dev, ev.iterations], ev.u, ev.mu])
            for start in ("zeros", "far"):
                eta = np.zeros(n) if start == "zeros" else far.normal(0, 8, n)
                st = ld.lme4_pirls_state(t, beta, eta)
                out[f"lme4 {start} {tag} {th}"] = np.concatenate([[st.pdev, st.logdet, st.iterations],
                                                                   st.changes, st.u])
            for b0, u in ((np.zeros(4), None), (np.array([4.0, -4.0, 3.0, 2.0]), u0)):
                dev, b, u, eta = ld.joint_mode(t, b0, None if u is None else u.copy())
                out[f"joint {tag} {th} {b0[0]}"] = np.concatenate([[dev], b, u, eta])
    for ctag, ctl in (("pirls_halvings=1", GlmerControl(pirls_halvings=1, pwrss_halvings=1)),
                      ("pirls_halvings=3", GlmerControl(pirls_halvings=3, pwrss_halvings=2)),
                      ("pirls_halvings=3 compiled", GlmerControl(pirls_halvings=3, compiled_rows_min=1))):
        for link in ("logit", "probit", "cloglog"):
            ld = LaplaceDeviance(design.X, design.k, design.m, design.terms, link=link, control=ctl)
            for th in ([1.5, 0.7], [3.0, 3.0], [6.0, 0.5]):
                t, u0 = np.array(th), far.normal(0, 6, ld.q)
                ev = ld.pirls(t, np.array([2.0, -3.0, 1.0, 0.5]), u0.copy())
                out[f"pirls {ctag} {link} {th}"] = np.concatenate([[ev.dev, ev.iterations], ev.u, ev.mu])
                st = ld.lme4_pirls_state(t, np.zeros(4), far.normal(0, 8, n))
                out[f"lme4 {ctag} {link} {th}"] = np.concatenate([[st.pdev, st.logdet, st.iterations],
                                                                   st.changes])
                if link == "logit":
                    dev, b, u, eta = ld.joint_mode(t, np.array([4.0, -4.0, 3.0, 2.0]), u0.copy())
                    out[f"joint {ctag} {th}"] = np.concatenate([[dev], b, u, eta])

    g = far.integers(0, 20, 400)
    h = InterceptHessian([g], [20])
    y = far.poisson(np.exp(far.normal(0, 2, 20))[g])
    sd = np.full(20, 3.0)

    def joint(u: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
        lp = h.z_times(sd * u)
        mu = np.exp(lp)
        return float(np.sum(y * lp - mu) - 0.5 * u @ u), y - mu, -mu

    for j in range(3):
        m = laplace_modes(joint, far.normal(0, 3, 20), sd, h.zt_times, h.factor, maxit=50, tol=1e-10)
        assert m is not None and m.factor is not None
        out[f"laplace_modes far {j}"] = np.concatenate([[m.value, m.factor.logdet], m.u])

    agg = d.groupby(["model", "item"], as_index=False)["correct"].agg(["sum", "count"]).reset_index()
    out["glmmtmb betabinomial"] = fitted(glmmtmb("cbind(sum, count - sum) ~ model + (1|item)", agg,
                                                 family="betabinomial"))
    out["glmmtmb binomial crossed"] = fitted(glmmtmb("correct ~ model + (1|item) + (1|judge)", d,
                                                     family="binomial"))
    c = d.copy()
    c["rating"] = pd.Categorical(c["correct"] + rng.integers(0, 3, len(c)), ordered=True)
    for formula in ("rating ~ model + (1|item)", "rating ~ model + (1|item) + (1|judge)"):
        out[f"clmm {formula}"] = fitted(clmm(formula, c))
    return out


def _run(src: str) -> dict[str, object]:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out.pkl"
        env = dict(os.environ, PYTHONPATH=src)
        subprocess.run([sys.executable, __file__, "--worker", str(path)], env=env, check=True)
        with open(path, "rb") as f:
            return pickle.load(f)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--old", help="the old tree's src folder")
    ap.add_argument("--new", default=str(ROOT / "src"), help="the new tree's src folder")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out = _checks()
        with open(args.worker, "wb") as f:
            pickle.dump(out, f)
        return 0
    if not args.old:
        ap.error("--old is required")
    old, new = _run(args.old), _run(args.new)
    differ = 0
    for key, a in old.items():
        b = new.get(key)
        a, b = np.asarray(a), np.asarray(b)
        if a.shape == b.shape and np.array_equal(a, b, equal_nan=True):
            continue
        differ += 1
        rel = (np.nanmax(np.abs(a - b) / np.maximum(np.abs(a), 1e-300)) if a.shape == b.shape
               else "different shapes")
        print(f"differs: {key}: {rel}")
    print(f"{len(old)} checks, {differ} differ")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
