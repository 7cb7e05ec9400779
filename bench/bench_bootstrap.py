"""Timings of evalmix's vectorised bootstrap against a per-resample loop and scipy.stats.bootstrap.

Run from the repository root:  python bench/bench_bootstrap.py
Each line prints the best of three wall-clock timings.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from evalmix import bootstrap_ci, calibrate, cluster_bootstrap, instance_bootstrap  # noqa: E402
from evalmix.simulate import mixture_benchmark  # noqa: E402
from evalmix.simulate.mixture import mixture_predictions  # noqa: E402

B = 10_000


def best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def loop_bootstrap(x: np.ndarray, n_boot: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return np.array([x[rng.integers(0, x.size, x.size)].mean() for _ in range(n_boot)])


def main() -> None:
    rng = np.random.default_rng(0)
    binary = (rng.random(10_000) < 0.6).astype(float)
    continuous = rng.normal(size=10_000)
    runs = mixture_benchmark(1250, 8, rng=1)
    base = runs[runs["model"] == "base"]  # 10,000 rows: 1,250 items x 8 runs
    preds, gold = mixture_predictions(800, 30, rng=2)

    rows = [
        ("bootstrap_ci mean, 10,000 binary rows, percentile",
         lambda: bootstrap_ci(binary, n_boot=B, rng=1)),
        ("bootstrap_ci mean, 10,000 binary rows, bca",
         lambda: bootstrap_ci(binary, method="bca", n_boot=B, rng=1)),
        ("bootstrap_ci mean, 10,000 continuous rows, percentile",
         lambda: bootstrap_ci(continuous, n_boot=B, rng=1)),
        ("cluster_bootstrap, 10,000-row runs table (1,250 items x 8 runs)",
         lambda: cluster_bootstrap(base, n_boot=B, rng=1)),
        ("cluster_bootstrap by model, 30,000 rows, 3 models",
         lambda: cluster_bootstrap(runs, by="model", n_boot=B, rng=1)),
        ("instance_bootstrap F1, 30 runs x 800 instances",
         lambda: instance_bootstrap(preds, gold, metric="f1", n_boot=B, rng=1)),
        ("reference: python loop, 10,000 continuous rows",
         lambda: loop_bootstrap(continuous, B, 1)),
        ("reference: scipy.stats.bootstrap mean, 10,000 continuous rows, percentile",
         lambda: stats.bootstrap((continuous,), np.mean, n_resamples=B, method="percentile",
                                 rng=np.random.default_rng(1), batch=500)),
    ]
    print(f"{B:,} resamples each (best of 3)")
    for label, fn in rows:
        print(f"{best(fn):8.3f} s  {label}")
    t0 = time.perf_counter()
    calibrate("mixture", n_sims=100, rng=1)
    print(f"{time.perf_counter() - t0:8.3f} s  calibrate('mixture'), 4,000 x 8, 100 sims, 7 methods, n_jobs=1")


if __name__ == "__main__":
    main()
