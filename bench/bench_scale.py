"""Leaderboard-scale ingestion: a partitioned Parquet runs table aggregated to k-of-n counts.

    nice python bench/make_leaderboard_parquet.py /tmp/evalmix_leaderboard      # 100M rows
    nice python bench/bench_scale.py aggregate /tmp/evalmix_leaderboard
    nice python bench/bench_scale.py duckdb /tmp/evalmix_leaderboard            # the same in DuckDB
    nice python bench/bench_scale.py fit /tmp/evalmix_leaderboard 500           # crossed fit, 500 models

Each mode runs in a fresh process and reports wall time and the process's peak resident memory
(``ru_maxrss``), so imports and the data both count.
"""

from __future__ import annotations

import json
import platform
import resource
import sys
import time
import warnings
from pathlib import Path


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def aggregate(folder: Path) -> dict:
    from evalmix.data.scan import aggregate_runs

    t0 = time.perf_counter()
    counts = aggregate_runs(folder, "correct ~ model + (1|item)")
    wall = time.perf_counter() - t0
    return {"mode": "aggregate", "rows_out": len(counts), "successes": int(counts["correct"].sum()),
            "trials": int(counts["trials"].sum()), "wall_s": round(wall, 1), "peak_gb": round(peak_gb(), 2)}


def duckdb_mode(folder: Path) -> dict:
    import duckdb

    t0 = time.perf_counter()
    con = duckdb.connect()
    con.execute("SET threads TO 2")
    # the same work: k-of-n per (model, item), duplicate keys checked, result as categoricals
    q = (f"SELECT model, item, sum(correct)::BIGINT AS correct, count(*)::BIGINT AS trials, "
         f"count(DISTINCT run) AS runs FROM read_parquet('{folder}/*.parquet') GROUP BY model, item "
         f"ORDER BY model, item")
    df = con.execute(q).df()
    dup = int((df["trials"] > df["runs"]).sum())
    for c in ("model", "item"):
        df[c] = df[c].astype("category")
    wall = time.perf_counter() - t0
    return {"mode": "duckdb", "duckdb": duckdb.__version__, "rows_out": len(df), "duplicates": dup,
            "trials": int(df["trials"].sum()), "wall_s": round(wall, 1), "peak_gb": round(peak_gb(), 2)}


def fit(folder: Path, n_models: int) -> dict:
    import numpy as np

    import evalmix
    from evalmix.data.scan import aggregate_runs

    t0 = time.perf_counter()
    keep = [f"m{m:05d}" for m in range(n_models)]
    counts = aggregate_runs(folder, "correct ~ 1 + (1|model) + (1|item)", filters={"model": keep})
    t_agg = time.perf_counter() - t0
    t1 = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        res = evalmix.glmer("correct ~ 1 + (1|model) + (1|item)", counts, trials="trials")
    t_fit = time.perf_counter() - t1
    return {"mode": "fit", "models": n_models, "rows_in": int(counts["trials"].sum()),
            "rows_out": len(counts), "aggregate_s": round(t_agg, 1), "fit_s": round(t_fit, 1),
            "sd": [round(float(v), 4) for v in np.asarray(res.varcorr["sd"])],
            "groups": list(res.varcorr["group"]), "intercept": round(float(res.fixef.iloc[0]), 4),
            "converged": res.converged, "warnings": [str(w.message)[:120] for w in caught],
            "peak_gb": round(peak_gb(), 2)}


if __name__ == "__main__":
    mode, folder = sys.argv[1], Path(sys.argv[2])
    if mode == "aggregate":
        out = aggregate(folder)
    elif mode == "duckdb":
        out = duckdb_mode(folder)
    else:
        out = fit(folder, int(sys.argv[3]) if len(sys.argv) > 3 else 500)
    out["python"] = platform.python_version()
    print(json.dumps(out))
