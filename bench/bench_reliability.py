"""Timings of the reliability, ranking and repetition analyses on the AI4Math table.

Usage (from the repository root, with ../shared beside the checkout):
    python bench/bench_reliability.py [path/to/ai4math_runs.csv]
"""

from __future__ import annotations

import sys
import time
import warnings
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import evalmix  # noqa: E402
from evalmix.studies.repetitions import se_vs_runs, sign_flip_rate  # noqa: E402

SLICE = ["model", "language", "prompt"]


def timed(label: str, fn, repeat: int = 3) -> None:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    print(f"{label:<55s} {best:8.3f} s (best of {repeat})")


def main() -> None:
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "ai4math" / "ai4math_runs.csv"
    df = pd.read_csv(sys.argv[1] if len(sys.argv) > 1 else default)
    cols = dict(item="problem_id")
    warnings.simplefilter("ignore")
    timed("flip_rate, 32 slices", lambda: evalmix.flip_rate(df, SLICE, **cols))
    timed("icc ICC(C,1), 32 slices", lambda: evalmix.icc(df, SLICE, **cols))
    timed("rank_instability, R = 1, 2, 3", lambda: evalmix.rank_instability(
        df, ["language", "prompt"], runs_per_leaderboard=[1, 2, 3], **cols))
    for jobs in (1, 2):
        timed(f"rank_uncertainty, 4 slices x 2000 replicates, n_jobs={jobs}",
              lambda: evalmix.rank_uncertainty(df, ["language", "prompt"], n_boot=2000, rng=1,
                                               n_jobs=jobs, **cols))
    timed("se_vs_runs with pairs, 32 slices, 112 pairs", lambda: se_vs_runs(
        df, SLICE, max_runs=10, paired="model", **cols))
    timed("sign_flip_rate, 4 GLMM fits", lambda: sign_flip_rate(
        df, "correct ~ model + language + (1|problem_id) + (1|problem_id:run)", ref="Grok-4"), repeat=1)


if __name__ == "__main__":
    main()
