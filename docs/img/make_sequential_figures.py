"""The simulation study of docs/sequential.md: false-positive rate under continuous monitoring,
coverage at the stop, and items saved against a fixed-n design.  Seeded; writes three PNGs and
sequential_study.json (the numbers quoted in the page) beside this script.

    PYTHONPATH=src python docs/img/make_sequential_figures.py

Design: two models scored on the same items, 3 runs each; item accuracies p_i ~ Beta(2, 2) for
model A and p_i + delta (clipped to [0, 1]) for B; the observation of an item is the difference
of the two models' means over their runs.  Each replicate follows up to 1000 items.
"""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
from scipy import stats  # noqa: E402

from evalmix.studies.sequential import simulate_stopping, _sequences_many  # noqa: E402

HERE = Path(__file__).resolve().parent
REPS, N, RUNS, LOOK = 300, 1000, 3, 10
GRID = 500  # candidate means of the betting CS: a coarser grid only widens it by a cell
ALPHA = 0.05


def draws(delta: float, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    pa = rng.beta(2, 2, size=(REPS, N))
    pb = np.clip(pa + delta, 0, 1)
    return rng.binomial(RUNS, pb) / RUNS - rng.binomial(RUNS, pa) / RUNS


def naive_z(d: np.ndarray) -> np.ndarray:
    """|z| of the paired t statistic after every item (the fixed-n test looked at repeatedly)."""
    t = np.arange(1, d.shape[1] + 1)
    mean = np.cumsum(d, axis=1) / t
    var = np.maximum(np.cumsum(d**2, axis=1) / t - mean**2, 1e-12) * t / np.maximum(t - 1, 1)
    return np.abs(mean) / np.sqrt(var / t)


def mc_se(p: float, n: int) -> float:
    return float(np.sqrt(p * (1 - p) / n))


def main() -> None:
    out: dict = {"reps": REPS, "n_items": N, "runs": RUNS, "look_every": LOOK, "alpha": ALPHA, "grid": GRID}
    looks = np.arange(LOOK - 1, N, LOOK)
    crit = stats.norm.isf(ALPHA / 2)

    # 1. false-positive rate under continuous monitoring (delta = 0)
    d0 = draws(0.0, seed=20260101)
    z = naive_z(d0)
    naive_curve = [(z[:, looks[looks <= k]] > crit).any(axis=1).mean() for k in looks]
    curves = {}
    for method in ("betting", "empirical_bernstein"):
        lo, hi = _sequences_many(d0, (-1.0, 1.0), method, 1 - ALPHA, GRID, float(N))
        rejected = (lo > 0) | (hi < 0)
        curves[method] = [rejected[:, : k + 1].any(axis=1).mean() for k in looks]
    out["fpr"] = {"naive_peeking": naive_curve[-1], "betting": curves["betting"][-1],
                  "empirical_bernstein": curves["empirical_bernstein"][-1],
                  "naive_fixed_n_at_1000": float((z[:, -1] > crit).mean()),
                  "mc_se_at_5pct": mc_se(0.05, REPS)}
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.plot(looks + 1, naive_curve, label="fixed-n test, looked at every 10 items")
    ax.plot(looks + 1, curves["betting"], label="betting CS")
    ax.plot(looks + 1, curves["empirical_bernstein"], label="empirical-Bernstein CS")
    ax.axhline(ALPHA, color="grey", ls="--", lw=1, label="alpha = 0.05")
    ax.set_xlabel("items looked at so far")
    ax.set_ylabel("false-positive rate so far")
    ax.set_title(f"Two equal models, {REPS} replicates (MC SE at 5%: {100 * mc_se(0.05, REPS):.1f} points)",
                 fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(HERE / "sequential_fpr.png", dpi=120)
    plt.close(fig)

    # 2. coverage at the stop and 3. items used, for real differences
    rows = []
    for delta in (0.05, 0.10, 0.15):
        d = draws(delta, seed=int(20260200 + 100 * delta))
        true = float(np.mean(d))  # the estimand: the mean difference of item means (clipping included)
        sims = simulate_stopping(d, bounds=(-1, 1), null=0.0, target_width=0.1, max_n=N, grid=GRID)
        stop = sims["stopped_at"].fillna(N).to_numpy()
        covered = float(((sims["conf_low"] <= true) & (true <= sims["conf_high"])).mean())
        # naive: stop at the first look where the z-test is significant, report the Wald interval there
        zz = naive_z(d)
        t = np.arange(1, N + 1)
        mean = np.cumsum(d, axis=1) / t
        sd = np.sqrt(np.maximum(np.cumsum(d**2, axis=1) / t - mean**2, 1e-12) * t / np.maximum(t - 1, 1))
        first = np.array([looks[np.argmax(zz[r, looks] > crit)] if (zz[r, looks] > crit).any() else N - 1
                          for r in range(REPS)])
        lo = mean[np.arange(REPS), first] - crit * sd[np.arange(REPS), first] / np.sqrt(first + 1)
        hi = mean[np.arange(REPS), first] + crit * sd[np.arange(REPS), first] / np.sqrt(first + 1)
        naive_cov = float(((lo <= true) & (true <= hi)).mean())
        var_d = float(np.var(d))
        fixed = float((stats.norm.isf(ALPHA / 2) + stats.norm.isf(0.2)) ** 2 * var_d / true**2)
        rows.append({"delta": delta, "true_difference": true, "coverage_at_stop": covered,
                     "coverage_mc_se": mc_se(covered, REPS), "naive_coverage_at_stop": naive_cov,
                     "decided": float((sims["decision"] == "above").mean()),
                     "mean_items": float(stop.mean()), "median_items": float(np.median(stop)),
                     "q90_items": float(np.quantile(stop, 0.9)), "fixed_n_80_power": fixed,
                     "stops": stop.tolist()})
    out["alternatives"] = [{k: v for k, v in r.items() if k != "stops"} for r in rows]

    fig, ax = plt.subplots(figsize=(6, 3.6))
    x = np.arange(len(rows))
    ax.bar(x - 0.2, [r["coverage_at_stop"] for r in rows], 0.4, label="betting CS at its stop")
    ax.bar(x + 0.2, [r["naive_coverage_at_stop"] for r in rows], 0.4, label="Wald CI at the first significant look")
    ax.errorbar(x - 0.2, [r["coverage_at_stop"] for r in rows], yerr=[2 * r["coverage_mc_se"] for r in rows],
                fmt="none", color="k", lw=1)
    ax.axhline(1 - ALPHA, color="grey", ls="--", lw=1)
    ax.set_xticks(x, [f"delta = {r['delta']:.2f}" for r in rows])
    ax.set_ylim(0.5, 1.0)
    ax.set_ylabel("coverage of the true difference")
    ax.set_title(f"{REPS} replicates per difference; bars: +-2 MC SE", fontsize=9)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(HERE / "sequential_coverage.png", dpi=120)
    plt.close(fig)

    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.boxplot([r["stops"] for r in rows], positions=x, widths=0.5)
    ax.scatter(x, [r["fixed_n_80_power"] for r in rows], marker="D", color="C3", zorder=3,
               label="fixed n for 80% power (known variance)")
    ax.set_xticks(x, [f"delta = {r['delta']:.2f}" for r in rows])
    ax.set_yscale("log")
    ax.set_ylabel("items evaluated")
    ax.set_title("Where the rule stops (decided, or 0.1 wide, or 1000 items)", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(HERE / "sequential_savings.png", dpi=120)
    plt.close(fig)

    (HERE / "sequential_study.json").write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
