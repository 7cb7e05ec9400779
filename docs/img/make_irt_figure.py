"""The subset-selection study of docs/irt.md: error and coverage of the full-benchmark accuracy
estimated from n items, on a simulated 5,000-item benchmark and on the AI4Math table.

    PYTHONPATH=src python docs/img/make_irt_figure.py [AI4MATH_CSV] [--plot-only]

Writes docs/img/irt_subsets.csv (the table docs/irt.md quotes) and docs/img/irt_subsets.png.
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

from evalmix.irt import adaptive_accuracy, estimate_accuracy, fit_irt, select_items
from evalmix.simulate import simulate_irt, simulate_irt_parameters

SIZES = (10, 25, 50, 100, 200, 400)
METHODS = ("random", "stratified", "adaptive")


def simulated_study(n_items: int = 5000, n_calib: int = 20, n_test: int = 100, sizes=SIZES,
                    seed: int = 2024) -> pd.DataFrame:
    """Calibrate on ``n_calib`` models (one run), then estimate ``n_test`` new models' expected
    full-benchmark accuracy (true item parameters, mean over items of P(correct)) from subsets."""
    rng = np.random.default_rng(seed)
    items, theta = simulate_irt_parameters(n_items, n_calib, seed=rng)
    fit = fit_irt(simulate_irt(items=items, theta=theta, seed=rng))
    new_theta = rng.normal(0.0, 1.0, n_test)
    a = items["discrimination"].to_numpy()[:, None]
    b = items["difficulty"].to_numpy()[:, None]
    truth = (1.0 / (1.0 + np.exp(-a * (new_theta[None, :] - b)))).mean(axis=0)
    new = simulate_irt(items=items, theta=new_theta, seed=rng)
    rows = []
    for n in sizes:
        for method in METHODS:
            if method == "adaptive":
                est = adaptive_accuracy(fit, new, n_items=n).table
            else:
                chosen = select_items(fit, n, method=method, seed=rng)
                est = estimate_accuracy(fit, new[new["item"].isin(chosen)]).table
            order = np.argsort(est["model"].to_numpy())   # m000, m001... in the order of new_theta
            e = est["estimate"].to_numpy()[order]
            covered = (est["conf_low"].to_numpy()[order] <= truth) & (truth <= est["conf_high"].to_numpy()[order])
            rows.append({"data": "simulated", "n_items": n, "method": method,
                         "rmse": float(np.sqrt(np.mean((e - truth) ** 2))),
                         "coverage": float(covered.mean()),
                         "coverage_mc_se": float(np.sqrt(covered.mean() * (1 - covered.mean()) / n_test)),
                         "mean_width": float((est["conf_high"] - est["conf_low"]).mean())})
    return pd.DataFrame(rows)


def ai4math_study(path: Path, sizes=(5, 10, 20, 40), seed: int = 7) -> pd.DataFrame:
    """Leave one model out: calibrate on the other seven (12 runs per item), estimate the held-out
    model's accuracy from n items (all 12 responses of each), against its accuracy on all 105."""
    runs = pd.read_csv(path)
    rng = np.random.default_rng(seed)
    rows = []
    for held in sorted(runs["model"].unique()):
        fit = fit_irt(runs[runs["model"] != held], item="problem_id", run=["language", "prompt", "run"])
        new = runs[runs["model"] == held]
        observed = float(new["correct"].mean())
        for n in sizes:
            for method in METHODS:
                if method == "adaptive":
                    est = adaptive_accuracy(fit, new, item="problem_id", n_items=n).table.iloc[0]
                else:
                    chosen = select_items(fit, n, method=method, seed=rng)
                    est = estimate_accuracy(fit, new[new["problem_id"].isin(chosen)], item="problem_id").table.iloc[0]
                rows.append({"model": held, "n_items": n, "method": method, "error": est["estimate"] - observed,
                             "covered": est["conf_low"] <= observed <= est["conf_high"]})
    per = pd.DataFrame(rows)
    return (per.groupby(["n_items", "method"])
            .agg(rmse=("error", lambda e: float(np.sqrt(np.mean(np.square(e))))), coverage=("covered", "mean"))
            .reset_index().assign(data="ai4math"))


def plot(table: pd.DataFrame, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    sim = table[table["data"] == "simulated"]
    real = table[table["data"] == "ai4math"]
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for method, style in zip(METHODS, ("o:", "s--", "^-")):
        s = sim[sim["method"] == method]
        axes[0].plot(s["n_items"], s["rmse"], style, label=method)
        axes[1].errorbar(s["n_items"], s["coverage"], yerr=2 * s["coverage_mc_se"], fmt=style, label=method,
                         capsize=2)
        r = real[real["method"] == method]
        axes[2].plot(r["n_items"], r["rmse"], style, label=method)
    axes[0].set(yscale="log", ylabel="RMSE of accuracy", title="simulated 5,000 items: error")
    axes[1].axhline(0.95, color="grey", lw=1)
    axes[1].set(ylim=(0.7, 1.0), ylabel="coverage of 95% interval", title="simulated: coverage (±2 MC SE)")
    axes[2].set(ylabel="RMSE vs accuracy on all 105", title="AI4Math, one model left out (8)")
    for ax, sizes in zip(axes, (sim, sim, real)):
        ticks = sorted(sizes["n_items"].unique())
        ax.set_xscale("log")
        ax.set_xticks(ticks)
        ax.xaxis.set_major_formatter(ScalarFormatter())
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("items used")
    axes[0].yaxis.set_major_formatter(ScalarFormatter())
    axes[0].yaxis.set_minor_formatter(NullFormatter())
    axes[0].set_yticks([0.02, 0.03, 0.05, 0.1])
    axes[0].legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)


def main() -> None:
    """Run both studies (about 20 minutes on two cores), write the table and the figure;
    ``--plot-only`` redraws the figure from the table."""
    here = Path(__file__).resolve().parent
    table_path = here / "irt_subsets.csv"
    args = [a for a in sys.argv[1:] if a != "--plot-only"]
    if "--plot-only" not in sys.argv:
        warnings.simplefilter("ignore")
        csv = Path(args[0]) if args else here.parents[2] / "shared" / "data" / "ai4math" / "ai4math_runs.csv"
        table = pd.concat([simulated_study(), ai4math_study(csv)], ignore_index=True)
        table.to_csv(table_path, index=False, float_format="%.6g")
    table = pd.read_csv(table_path)
    print(table.to_string(index=False))
    plot(table, here / "irt_subsets.png")


if __name__ == "__main__":
    main()
