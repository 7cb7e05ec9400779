"""Bradley-Terry ratings of 1M arena battles among 200 models: evalmix against FastChat's algorithm.

    PYTHONPATH=src python bench/bench_arena.py [--battles 1000000] [--models 200] [--n-boot 1000]

Times, on the same simulated battles (Davidson ties, a first-shown advantage, 50,000 prompts):

- ``bradley_terry`` with analytic intervals: Davidson ties + position effect with the sandwich
  clustered by prompt; and FastChat's convention (ties as half wins, no position effect) with
  the per-battle sandwich; rank sets left out;
- ``bradley_terry(ci="bootstrap")``: ``--n-boot`` replicates of battles (FastChat's convention),
  on ``--jobs`` workers (default 1, so that the CPU seconds count all the work);
- FastChat's estimator as reimplemented in ``tests/reference/arena_fastchat.py``: its pooled form
  ``compute_mle_elo_with_tie`` (pivot tables, a weighted logistic regression on 2 K (K - 1) rows;
  statsmodels IRLS instead of scikit-learn), once; its bootstrap (``get_bootstrap_result``:
  resample the battle table with replacement and refit, ``--n-boot`` rounds) estimated from
  ``--fastchat-rounds`` timed rounds; and the largest rating difference from evalmix's fit.  (The
  duplicated-battle form ``compute_mle_elo`` needs a dense 2N x K design: 3.2 GB for 1M battles
  and 200 models, so it is not run at this size.)

Prints one JSON document; each time is ``[wall-clock seconds, CPU seconds of this process]``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "reference"))

from arena_fastchat import compute_mle_elo_with_tie  # noqa: E402

from evalmix.studies.arena import bradley_terry  # noqa: E402


def simulate(n: int, k: int, seed: int = 1) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 1.0, k)
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    d = theta[a] - theta[b] + 0.1
    pa, pb, nu = np.exp(d / 2), np.exp(-d / 2), 0.5
    u = rng.random(n) * (pa + pb + nu)
    won = np.where(u < pa, "model_a", np.where(u < pa + pb, "model_b", "tie"))
    names = np.array([f"model-{i:03d}" for i in range(k)])
    return pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": won,
                         "prompt": rng.integers(0, 50_000, n)})


def timed(fn, *args, **kwargs):
    """Result, wall-clock seconds and CPU seconds of this process (on a shared, busy machine the
    CPU seconds are the better measure of the work; worker processes are not counted)."""
    t0, c0 = time.perf_counter(), time.process_time()
    out = fn(*args, **kwargs)
    return out, round(time.perf_counter() - t0, 2), round(time.process_time() - c0, 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--battles", type=int, default=1_000_000)
    ap.add_argument("--models", type=int, default=200)
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--jobs", type=int, default=1)
    ap.add_argument("--fastchat-rounds", type=int, default=3)
    ap.add_argument("--skip-fastchat", action="store_true")
    args = ap.parse_args()
    battles = simulate(args.battles, args.models)
    out: dict[str, object] = {"battles": args.battles, "models": args.models, "n_boot": args.n_boot,
                              "cpus": os.cpu_count(), "load_average": os.getloadavg()}
    _, *out["davidson_position_sandwich_by_prompt_wall_cpu_s"] = timed(
        bradley_terry, battles, cluster="prompt", rank_sets=False)
    # the default call: the same fit with its simultaneous rank sets (50,000 normal draws of the
    # K (K - 1) / 2 pairwise differences)
    _, *out["davidson_position_sandwich_by_prompt_with_rank_sets_wall_cpu_s"] = timed(
        bradley_terry, battles, cluster="prompt")
    half, *out["half_ties_sandwich_wall_cpu_s"] = timed(bradley_terry, battles, ties="half", position=False,
                                                        rank_sets=False)
    boot, *out["half_ties_bootstrap_wall_cpu_s"] = timed(
        bradley_terry, battles, ties="half", position=False, ci="bootstrap", n_boot=args.n_boot, rng=1,
        rank_sets=False, n_jobs=args.jobs)
    out["bootstrap_se_over_sandwich_se_median"] = float(np.median(boot.table["se"] / half.table["se"]))
    if not args.skip_fastchat:
        plain = battles[["model_a", "model_b", "winner"]]
        elo, *out["fastchat_mle_wall_cpu_s"] = timed(compute_mle_elo_with_tie, plain)
        t0, c0 = time.perf_counter(), time.process_time()
        for r in range(args.fastchat_rounds):
            compute_mle_elo_with_tie(plain.sample(frac=1.0, replace=True, random_state=r))
        per_round = [(time.perf_counter() - t0) / args.fastchat_rounds, (time.process_time() - c0) / args.fastchat_rounds]
        out["fastchat_bootstrap_round_wall_cpu_s"] = [round(v, 2) for v in per_round]
        out["fastchat_bootstrap_estimated_wall_cpu_s"] = [round(v * args.n_boot, 1) for v in per_round]
        ours = half.table.set_index("model")["estimate"]
        out["max_abs_rating_difference_vs_fastchat"] = float(np.max(np.abs(ours.loc[elo.index] - elo.to_numpy())))
    print(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
