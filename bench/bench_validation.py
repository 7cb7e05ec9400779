"""Cost of validating a runs table on every call (evalmix.data.ensure_runs).

Run: ``nice python bench/bench_validation.py``.  Prints the median time of one validation of a
raw DataFrame and of a read_runs table, for 10k and 100k rows.
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from evalmix.data.runs import ensure_runs, read_runs


def table(n_rows: int, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    n_models, n_runs = 4, 5
    n_items = n_rows // (n_models * n_runs)
    grid = pd.MultiIndex.from_product([[f"m{i}" for i in range(n_models)], range(n_items),
                                       range(1, n_runs + 1)], names=["model", "item", "run"])
    df = grid.to_frame(index=False)
    df["language"] = np.where(df["item"] % 2 == 0, "EN", "ES")
    df["correct"] = (rng.random(len(df)) < 0.6).astype(int)
    return df


def median_ms(fn, repeat: int = 21) -> float:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return 1e3 * float(np.median(times))


if __name__ == "__main__":
    import warnings
    warnings.simplefilter("ignore")
    for n in (10_000, 100_000):
        raw = table(n)
        validated = read_runs(raw)
        print(f"{len(raw):>7} rows  raw DataFrame: {median_ms(lambda: ensure_runs(raw, need_item=True)):6.2f} ms"
              f"   read_runs table: {median_ms(lambda: ensure_runs(validated, need_item=True)):6.2f} ms")
