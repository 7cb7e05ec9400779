"""The repeated-runs study of docs/sequential.md: width and coverage of the betting confidence
sequence when each item is sampled with several runs or with one, at equal cost.  Seeded; writes
sequential_runs.png and sequential_runs.json (the numbers quoted in the page) beside this script.

    PYTHONPATH=src python docs/img/make_sequential_runs_figure.py [--plot-only]

Design: item accuracies ``p_i ~ Beta(2, 2)`` (mean 0.5, between-item variance 0.05, within-item
variance ``E[p (1 - p)] = 0.2``); an item with ``R`` runs is observed as ``Binomial(R, p_i) / R``
and costs ``cost_item + R`` (an answer costs 1).  Each design spends the same budget; the sequence
is followed item by item, and its width is read at every 100 units of cost spent.  Coverage is
time-uniform: the share of replicates whose sequence contains 0.5 at every item.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import numpy as np

from evalmix.studies.repetitions import optimal_runs
from evalmix.studies.sequential import confidence_sequence

HERE = Path(__file__).resolve().parent
RUNS = (1, 2, 4, 8)
COST_ITEMS = (0.0, 4.0)
VAR_BETWEEN, VAR_WITHIN = 0.05, 0.2   # of Beta(2, 2): 1/20 and 1/4 - 1/20
GRID = 500   # candidate means of the betting CS: a coarser grid only widens it by a cell


def study(reps: int = 150, budget: float = 2000.0, step: float = 100.0, seed: int = 20260401,
          runs: tuple[int, ...] = RUNS, cost_items: tuple[float, ...] = COST_ITEMS) -> dict:
    """Width and coverage of each design (runs per item, cost per item) at equal cost."""
    rng = np.random.default_rng(seed)
    costs = np.arange(step, budget + step / 2, step)
    out: dict = {"reps": reps, "budget": budget, "step": step, "seed": seed, "grid": GRID, "true_mean": 0.5,
                 "var_between": VAR_BETWEEN, "var_within": VAR_WITHIN, "costs": costs.tolist(), "designs": []}
    for ci in cost_items:
        for r in runs:
            per_item = ci + r
            n = int(budget // per_item)
            at = np.floor(costs / per_item).astype(int)   # items bought by each cost checkpoint
            widths = np.full((reps, len(costs)), np.nan)
            covered_always, covered_end = np.empty(reps, dtype=bool), np.empty(reps, dtype=bool)
            for k in range(reps):
                x = rng.binomial(r, rng.beta(2, 2, n)) / r
                t = confidence_sequence(x, grid=GRID).table
                lo, hi = t["conf_low"].to_numpy(), t["conf_high"].to_numpy()
                ok = at >= 1
                widths[k, ok] = (hi - lo)[at[ok] - 1]
                covered_always[k] = bool(((lo <= 0.5) & (0.5 <= hi)).all())
                covered_end[k] = bool(lo[-1] <= 0.5 <= hi[-1])
            cov = float(covered_always.mean())
            out["designs"].append({
                "cost_item": ci, "runs": r, "n_items": n, "n_answers": n * r,
                "variance_per_cost": (VAR_BETWEEN + VAR_WITHIN / r) * per_item,
                "mean_width": np.nanmean(widths, axis=0).tolist(),
                "final_width": float(np.mean(widths[:, -1])),
                "final_width_mc_se": float(np.std(widths[:, -1], ddof=1) / math.sqrt(reps)),
                "coverage_uniform": cov, "coverage_uniform_mc_se": math.sqrt(max(cov * (1 - cov), 0.05 * 0.95) / reps),
                "coverage_end": float(covered_end.mean())})
    out["optimal_runs"] = {str(ci): int(optimal_runs(var_between=VAR_BETWEEN, var_within=VAR_WITHIN, budget=budget,
                                                     cost_item=ci).to_frame()["n_runs"].iloc[0])
                           for ci in cost_items}
    return out


def plot(res: dict, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    costs = np.asarray(res["costs"])
    cost_items = sorted({d["cost_item"] for d in res["designs"]})
    fig, axes = plt.subplots(1, len(cost_items), figsize=(5.2 * len(cost_items), 3.6), sharey=True)
    for ax, ci in zip(np.atleast_1d(axes), cost_items):
        for d in (d for d in res["designs"] if d["cost_item"] == ci):
            ax.plot(costs, d["mean_width"], label=f"{d['runs']} run{'s' if d['runs'] > 1 else ''} per item "
                    f"({d['n_items']} items; covered {d['coverage_uniform']:.0%})")
        ax.set_yscale("log")
        ax.set_xlabel("cost spent (one answer = 1)")
        ax.set_title(f"an item costs {ci:g} + its answers (optimal_runs: R = {res['optimal_runs'][str(ci)]})",
                     fontsize=9)
        ax.legend(fontsize=7)
    np.atleast_1d(axes)[0].set_ylabel("mean width of the 95% betting CS")
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)


def main() -> None:
    """Run the study (about 5 minutes on one core) and draw the figure; ``--plot-only`` redraws it
    from the JSON."""
    path = HERE / "sequential_runs.json"
    if "--plot-only" in sys.argv:
        plot(json.loads(path.read_text()), HERE / "sequential_runs.png")
        return
    res = study()
    path.write_text(json.dumps(res, indent=1) + "\n")
    for d in res["designs"]:
        print({k: v for k, v in d.items() if k != "mean_width"})
    print(res["optimal_runs"])
    plot(res, HERE / "sequential_runs.png")


if __name__ == "__main__":
    main()
