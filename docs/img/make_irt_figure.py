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

from evalmix.studies.irt import adaptive_accuracy, estimate_accuracy, fit_irt, select_items
from evalmix.simulate import simulate_irt, simulate_irt_parameters

SIZES = (10, 25, 50, 100, 200, 400)
METHODS = ("random", "stratified", "adaptive")


def simulated_study(n_items: int = 5000, n_calib: int = 20, n_test: int = 100, sizes=SIZES,
                    seed: int = 2024) -> pd.DataFrame:
    """Calibrate on ``n_calib`` models (one run), then estimate ``n_test`` new models' expected
    full-benchmark accuracy (true item parameters, mean over items of P(correct)) from subsets."""
    rng = np.random.default_rng(seed)
    items, theta = simulate_irt_parameters(n_items, n_calib, rng=rng)
    fit = fit_irt(simulate_irt(items=items, theta=theta, rng=rng))
    new_theta = rng.normal(0.0, 1.0, n_test)
    a = items["discrimination"].to_numpy()[:, None]
    b = items["difficulty"].to_numpy()[:, None]
    truth = (1.0 / (1.0 + np.exp(-a * (new_theta[None, :] - b)))).mean(axis=0)
    new = simulate_irt(items=items, theta=new_theta, rng=rng)
    rows = []
    for n in sizes:
        for method in METHODS:
            # the truth is the expected accuracy under the true parameters, not one run's
            if method == "adaptive":
                est = adaptive_accuracy(fit, new, n_items=n, target="expected").table
            else:
                chosen = select_items(fit, n, method=method, rng=rng)
                est = estimate_accuracy(fit, new[new["item"].isin(chosen)], target="expected").table
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
                    chosen = select_items(fit, n, method=method, rng=rng)
                    est = estimate_accuracy(fit, new[new["problem_id"].isin(chosen)], item="problem_id").table.iloc[0]
                rows.append({"model": held, "n_items": n, "method": method, "error": est["estimate"] - observed,
                             "covered": est["conf_low"] <= observed <= est["conf_high"],
                             "width": est["conf_high"] - est["conf_low"]})
    per = pd.DataFrame(rows)
    out = (per.groupby(["n_items", "method"])
           .agg(rmse=("error", lambda e: float(np.sqrt(np.mean(np.square(e))))), coverage=("covered", "mean"),
                mean_width=("width", "mean"))
           .reset_index().assign(data="ai4math"))
    # 8 held-out models per cell: a binomial Monte-Carlo SE at the observed coverage
    out["coverage_mc_se"] = np.sqrt(out["coverage"] * (1 - out["coverage"]) / runs["model"].nunique())
    return out


def ai4math_coverage(path: Path, sizes=(10, 20, 40), reps: int = 25, seed: int = 3,
                     leave_one_out: bool = False) -> pd.DataFrame:
    """Random subsets of AI4Math: each model's accuracy on all 105 items (observed, 12 runs per
    item) estimated from ``reps`` random subsets of n items (all 12 responses of each), with the
    items calibrated on all eight models (in sample) or on the other seven (``leave_one_out``).
    Per size: coverage of the 95% intervals, its Monte-Carlo SE (binomial, over ``8 * reps``
    intervals; the subsets of one model share its truth, so take it as a lower bound), the RMSE,
    the mean SE and the SD of the z-scores ``(estimate - observed) / se``."""
    runs = pd.read_csv(path)
    run = ["language", "prompt", "run"]
    observed = runs.groupby("model")["correct"].mean()
    items = runs["problem_id"].unique()
    rng = np.random.default_rng(seed)
    fits = ({m: fit_irt(runs[runs["model"] != m], item="problem_id", run=run) for m in observed.index}
            if leave_one_out else dict.fromkeys(observed.index, fit_irt(runs, item="problem_id", run=run)))
    rows = []
    for n in sizes:
        for _ in range(reps):
            chosen = runs["problem_id"].isin(rng.choice(items, n, replace=False))
            for m, fit in fits.items():
                est = estimate_accuracy(fit, runs[chosen & (runs["model"] == m)], item="problem_id").table.iloc[0]
                rows.append({"n_items": n, "model": m, "error": est["estimate"] - observed[m], "se": est["se"],
                             "covered": est["conf_low"] <= observed[m] <= est["conf_high"]})
    per = pd.DataFrame(rows)
    out = per.groupby("n_items").agg(coverage=("covered", "mean"), intervals=("covered", "size"),
                                     rmse=("error", lambda e: float(np.sqrt(np.mean(np.square(e))))),
                                     mean_se=("se", "mean"))
    out["coverage_mc_se"] = np.sqrt(out["coverage"] * (1 - out["coverage"]) / out["intervals"])
    out["z_sd"] = (per["error"] / per["se"]).groupby(per["n_items"]).std()
    return out.reset_index()


def plot(table: pd.DataFrame, out: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter, ScalarFormatter

    sim = table[table["data"] == "simulated"]
    real = table[table["data"] == "ai4math"]
    fig, axes = plt.subplots(1, 4, figsize=(17, 3.6))
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
    for data, style, color, label in (("ai4math_in_sample", "D-", "black", "calibrated on all 8"),
                                      ("ai4math_loo", "v--", "tab:purple", "model left out (7)")):
        c = table[table["data"] == data]
        axes[3].errorbar(c["n_items"], c["coverage"], yerr=2 * c["coverage_mc_se"], fmt=style, color=color,
                         label=label, capsize=2)
    axes[3].axhline(0.95, color="grey", lw=1)
    axes[3].set(ylim=(0.7, 1.0), ylabel="coverage of 95% interval (±2 MC SE)",
                title="AI4Math, random items: coverage")
    axes[3].legend(loc="lower right")
    cov = table[table["data"] == "ai4math_in_sample"]
    for ax, sizes in zip(axes, (sim, sim, real, cov)):
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
    """Run the studies (about 20 minutes on two cores), write the table and the figure;
    ``--plot-only`` redraws the figure from the table."""
    here = Path(__file__).resolve().parent
    table_path = here / "irt_subsets.csv"
    args = [a for a in sys.argv[1:] if a != "--plot-only"]
    if "--plot-only" not in sys.argv:
        warnings.simplefilter("ignore")
        csv = Path(args[0]) if args else here.parents[2] / "shared" / "data" / "ai4math" / "ai4math_runs.csv"
        table = pd.concat([simulated_study(), ai4math_study(csv),
                           ai4math_coverage(csv).assign(data="ai4math_in_sample", method="random"),
                           ai4math_coverage(csv, leave_one_out=True).assign(data="ai4math_loo", method="random")],
                          ignore_index=True)
        table.to_csv(table_path, index=False, float_format="%.6g")
    table = pd.read_csv(table_path)
    print(table.to_string(index=False))
    plot(table, here / "irt_subsets.png")


if __name__ == "__main__":
    main()
