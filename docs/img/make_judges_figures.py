"""The figures of docs/judges.md and docs/ppi.md.

    PYTHONPATH=src python docs/img/make_judges_figures.py

Writes docs/img/judges_by_judge.png (every model's pass rate under each MT-bench judge, from
``judge_study`` on tests/fixtures/mt_bench) and docs/img/ppi_methods.png (judge-only, PPI++ and
human-only pass rates of the two models of docs/ppi.md's worked example, whose true pass rates are
0.72 and 0.64).
"""

from __future__ import annotations

import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import evalmix  # noqa: E402
from evalmix.plots.inference import accuracy_intervals  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
OUT = Path(__file__).resolve().parent


def main() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the boundary fits are discussed in docs/judges.md
        runs = evalmix.read_mt_bench(ROOT / "tests" / "fixtures" / "mt_bench", kind="single", threshold=7)
        study = evalmix.judge_study(runs)
    fig = accuracy_intervals(study.by_judge, y="model", hue="judge")
    fig.axes[0].set_xlabel("answers rated 7 or more (%, 95% CI)")
    fig.savefig(OUT / "judges_by_judge.png", dpi=150)

    judged = evalmix.simulate_judged(n_items=400, n_labelled=80, n_runs=3, accuracy=(0.72, 0.64), rng=2026)
    res = evalmix.ppi_mean(judged, method=["judge_only", "ppi++", "classical"])
    fig = accuracy_intervals(res, y="model", hue="method")
    for ax in fig.axes[:1]:
        for pos, truth in enumerate(sorted((0.72, 0.64))):  # rows run from the lowest estimate up
            ax.plot([truth * 100] * 2, [pos - 0.4, pos + 0.4], color="0.3", lw=0.8, ls="--")
    fig.axes[0].set_xlabel("pass rate by human standard (%, 95% CI)")
    fig.savefig(OUT / "ppi_methods.png", dpi=150)


if __name__ == "__main__":
    main()
