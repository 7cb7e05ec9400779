"""The paired-difference study of docs/control_variates.md: coverage of the control-variate
interval of ``b - a`` and its variance gain over the plain paired difference, by seeded simulation
with a known truth.  Writes control_variates_study.json and control_variates_coverage.png beside
this script.

    PYTHONPATH=src python docs/img/make_control_variates_figure.py

Design (two models, the same items, ``N_RUNS`` runs each): item difficulty ``b_i ~ N(0, 1.2^2)``,
run noise ``e_ir ~ N(0, 0.5^2)`` shared by both models on an item and run (the clustering), model
abilities ``theta_a = 0.2`` and ``theta_b = 0.6``; the answer of model ``m`` has the latent
``l = theta_m - b_i + e_ir + v``, ``v ~ N(0, 1)`` of its own, and is correct when ``l > 0``.  Two
proxies per answer:

- ``informative``: the model's confidence ``logistic(l + u)``, ``u ~ N(0, 1)`` (it sees its own
  answer's latent through noise, as a model's probability of its answer does);
- ``useless``: ``Uniform(0, 1)``, independent of everything.

The truth, ``Phi(theta_b / s) - Phi(theta_a / s)`` with ``s^2 = 1 + 1.2^2 + 0.5^2``, is exact, and
the informative proxy's known means are a logistic-normal integral computed by Gauss-Hermite
quadrature (no Monte-Carlo error).  The plain interval is the paired t interval of
the item differences (``n - 1`` df), the one the control variate is measured against.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special, stats

from evalmix.studies.control_variates import control_variate_difference

HERE = Path(__file__).resolve().parent
THETA = {"a": 0.2, "b": 0.6}
ITEM_SD, RUN_SD, ANSWER_SD, PROXY_SD = 1.2, 0.5, 1.0, 1.0
N_RUNS = 3
PROXIES = ("informative", "useless")


def logistic_normal_mean(mean: float, sd: float, nodes: int = 80) -> float:
    """E[logistic(Z)] for Z ~ N(mean, sd^2), by Gauss-Hermite quadrature."""
    x, w = np.polynomial.hermite_e.hermegauss(nodes)
    return float(special.expit(mean + sd * x) @ w / math.sqrt(2 * math.pi))


def truth() -> dict[str, float]:
    """The estimand (accuracy difference over the item population) and each proxy's known mean of
    the difference ``b - a``."""
    sd_l = math.sqrt(ITEM_SD**2 + RUN_SD**2 + ANSWER_SD**2)   # of the latent over items, runs, answers
    sd_x = math.hypot(sd_l, PROXY_SD)
    acc = {m: float(stats.norm.cdf(t / sd_l)) for m, t in THETA.items()}
    conf = {m: logistic_normal_mean(t, sd_x) for m, t in THETA.items()}
    return {"difference": acc["b"] - acc["a"], "informative": conf["b"] - conf["a"], "useless": 0.0}  # Uniform(0, 1) for both models


def one_study(rng: np.random.Generator, n_items: int) -> pd.DataFrame:
    """A runs table of both models with the two proxy columns."""
    b = rng.normal(0.0, ITEM_SD, n_items)
    e = rng.normal(0.0, RUN_SD, (n_items, N_RUNS))   # shared by both models: item:run noise
    frames = []
    for model, theta in THETA.items():
        latent = theta - b[:, None] + e + rng.normal(0.0, ANSWER_SD, e.shape)
        frames.append(pd.DataFrame({
            "model": model, "item": np.repeat(np.arange(n_items), N_RUNS),
            "run": np.tile(np.arange(1, N_RUNS + 1), n_items),
            "correct": (latent > 0).astype(int).ravel(),
            "informative": special.expit(latent + rng.normal(0.0, PROXY_SD, e.shape)).ravel(),
            "useless": rng.random(e.shape).ravel()}))
    return pd.concat(frames, ignore_index=True)


def paired_study(n_sims: int, n_items: int, seed: int, conf_level: float = 0.95) -> dict:
    """Coverage of the control-variate and plain intervals of ``b - a`` and the variance gain.

    ``gain`` is ``1 - var(control-variate estimates) / var(plain estimates)`` over the simulated
    studies (the share of the plain difference's variance removed); its Monte-Carlo SE is the
    bootstrap SE over studies.  ``mean_variance_ratio`` is the mean of the ratio each result
    reports (its own estimate of ``var(plain) / var(adjusted)``).
    """
    rng = np.random.default_rng(seed)
    true = truth()
    est = {p: np.empty(n_sims) for p in PROXIES}
    hit = {p: np.empty(n_sims, dtype=bool) for p in PROXIES}
    ratio = {p: np.empty(n_sims) for p in PROXIES}
    plain, plain_hit = np.empty(n_sims), np.empty(n_sims, dtype=bool)
    tq = float(stats.t.ppf(0.5 + conf_level / 2, n_items - 1))
    for s in range(n_sims):
        runs = one_study(rng, n_items)
        for p in PROXIES:
            row = control_variate_difference(runs, "a", "b", proxy=p, proxy_mean=true[p],
                                             conf_level=conf_level).to_frame().iloc[0]
            est[p][s], ratio[p][s] = row["estimate"], row["variance_ratio"]
            hit[p][s] = row["conf_low"] <= true["difference"] <= row["conf_high"]
        plain[s] = row["plain_estimate"]
        plain_hit[s] = abs(row["plain_estimate"] - true["difference"]) <= tq * row["plain_se"]
    boot = np.random.default_rng(seed + 1).integers(0, n_sims, (400, n_sims))

    def gain(x: np.ndarray) -> tuple[float, float]:
        g = 1.0 - np.var(x, ddof=1) / np.var(plain, ddof=1)
        g_boot = 1.0 - np.var(x[boot], axis=1, ddof=1) / np.var(plain[boot], axis=1, ddof=1)
        return float(g), float(np.std(g_boot, ddof=1))

    def cov(h: np.ndarray) -> dict[str, float]:
        c = float(h.mean())
        return {"coverage": c, "coverage_mc_se": math.sqrt(c * (1 - c) / n_sims)}

    out: dict = {"n_sims": n_sims, "n_items": n_items, "n_runs": N_RUNS, "seed": seed, "conf_level": conf_level,
                 "true_difference": true["difference"], "nominal_mc_se": math.sqrt(conf_level * (1 - conf_level) / n_sims),
                 "plain": cov(plain_hit) | {"bias": float(plain.mean() - true["difference"]),
                                             "sd": float(np.std(plain, ddof=1))}}
    for p in PROXIES:
        g, g_se = gain(est[p])
        out[p] = cov(hit[p]) | {"bias": float(est[p].mean() - true["difference"]), "sd": float(np.std(est[p], ddof=1)),
                                "gain": g, "gain_mc_se": g_se, "mean_variance_ratio": float(ratio[p].mean()),
                                "proxy_mean": true[p]}
    return out


def plot(studies: list[dict], out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = ["plain paired", "informative proxy", "useless proxy"]
    keys = ["plain", "informative", "useless"]
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.4))
    width = 0.8 / len(studies)
    for k, st in enumerate(studies):
        x = np.arange(3) + (k - (len(studies) - 1) / 2) * width
        axes[0].bar(x, [st[c]["coverage"] for c in keys], width, yerr=[2 * st[c]["coverage_mc_se"] for c in keys],
                    capsize=2, label=f"{st['n_items']} items")
        axes[1].bar(x, [st[c]["sd"] for c in keys], width, label=f"{st['n_items']} items")
    axes[0].axhline(studies[0]["conf_level"], color="grey", ls="--", lw=1)
    axes[0].set(xticks=np.arange(3), xticklabels=labels, ylim=(0.85, 1.0),
                ylabel="coverage of the 95% interval", title="coverage of b - a (bars: ±2 MC SE)")
    axes[1].set(xticks=np.arange(3), xticklabels=labels, ylabel="SD of the estimate over studies",
                title="spread of the estimate of b - a")
    axes[0].legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main() -> None:
    studies = [paired_study(1500, 40, seed=20260301), paired_study(1500, 150, seed=20260302)]
    (HERE / "control_variates_study.json").write_text(json.dumps(studies, indent=1) + "\n")
    print(json.dumps(studies, indent=1))
    plot(studies, HERE / "control_variates_coverage.png")


if __name__ == "__main__":
    main()
