"""A crossed GLMM fitted on a Parquet runs table whose rows are counted in the engine they live in.

    nice python bench/make_leaderboard_parquet.py /tmp/evalmix_push_1e7 50 2000 100    # 10^7 rows
    nice python bench/bench_pushdown.py /tmp/evalmix_push_1e7 duckdb polars spark dask [--rounds=2]

For each source, in fresh processes (peak RSS is the Python process's ``ru_maxrss``, imports and
data included; Spark's JVM is a process of its own and not counted):

- ``wall``: ``evalmix.glmer(FORMULA, source)`` end to end (the engine counts k-of-n per (model,
  item) cell with the checks of the rows, then the fit on the counts);
- ``group_by``: the engine's own plain ``GROUP BY model, item`` (sum and count, no checks) collected
  to pandas, in its native API;
- ``fit``: ``evalmix.glmer`` on that aggregate (``trials=``);
- ``ratio``: wall / (group_by + fit), the overhead of the checks and the path through narwhals.

Sources: ``duckdb`` (the folder as a path: DuckDB scans it), ``polars`` (``pl.scan_parquet``),
``spark`` (``spark.read.parquet`` in local mode, 2 cores), ``dask`` (``dd.read_parquet``, threads),
``dask_cluster`` (``dd.read_parquet`` computed by a ``distributed.LocalCluster`` of 2 worker processes
with a thread each, started before the timings; the workers' memory is not in the peak).
"""

from __future__ import annotations

import json
import os
import platform
import resource
import subprocess
import sys
import time
import warnings
from pathlib import Path
from typing import Any

FORMULA = "correct ~ 1 + (1|model) + (1|item)"


def peak_gb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20  # KiB on Linux


def _spark() -> Any:
    from pyspark.sql import SparkSession

    spark = (SparkSession.builder.master("local[2]").config("spark.ui.enabled", "false")
             .config("spark.driver.memory", "4g").config("spark.sql.shuffle.partitions", "8")
             .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    return spark


def source(kind: str, folder: Path) -> Any:
    """The lazy table of ``folder`` in the engine ``kind``."""
    glob = str(folder / "*.parquet")
    if kind == "duckdb":
        return str(folder)  # evalmix scans a Parquet folder with DuckDB
    if kind == "polars":
        import polars as pl

        return pl.scan_parquet(glob)
    if kind == "spark":
        return _spark().read.parquet(str(folder))
    if kind in ("dask", "dask_cluster"):
        import dask.dataframe as dd

        return dd.read_parquet(str(folder))
    raise SystemExit(f"unknown source {kind!r}")


def group_by(kind: str, folder: Path) -> Any:
    """The engine's own GROUP BY, collected to pandas."""
    if kind == "duckdb":
        import duckdb

        return duckdb.sql(f"SELECT model, item, sum(correct)::BIGINT AS k, count(*) AS n FROM "
                          f"read_parquet('{folder}/*.parquet') GROUP BY model, item").df()
    if kind == "polars":
        import polars as pl

        return (pl.scan_parquet(str(folder / "*.parquet")).group_by("model", "item")
                .agg(pl.col("correct").cast(pl.Int64).sum().alias("k"), pl.len().alias("n")).collect().to_pandas())
    if kind == "spark":
        from pyspark.sql import functions as F

        return (source(kind, folder).groupBy("model", "item")
                .agg(F.sum("correct").alias("k"), F.count("*").alias("n")).toPandas())
    import dask.dataframe as dd

    d = dd.read_parquet(str(folder))
    return d.groupby(["model", "item"], observed=True).agg(k=("correct", "sum"), n=("correct", "size")) \
        .compute().reset_index()


def one(kind: str, folder: Path, mode: str) -> dict:
    import evalmix

    warnings.simplefilter("ignore")
    if kind == "spark":
        _spark()  # the session starts outside the timings (as a user's session is already up)
    if kind == "dask_cluster":  # so does the cluster, which the client makes the default scheduler
        import distributed

        cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, dashboard_address=None)
        client = distributed.Client(cluster)  # noqa: F841 (kept alive for the timings)
    out: dict[str, Any] = {"source": kind, "mode": mode}
    t0 = time.perf_counter()
    if mode == "wall":
        fit = evalmix.glmer(FORMULA, source(kind, folder))
        out["wall_s"] = round(time.perf_counter() - t0, 2)
        out["nobs"] = int(fit.nobs)
    else:
        counts = group_by(kind, folder)
        out["group_by_s"] = round(time.perf_counter() - t0, 2)
        out["cells"] = len(counts)
        t1 = time.perf_counter()
        fit = evalmix.glmer("k ~ 1 + (1|model) + (1|item)", counts, trials="n")
        out["fit_s"] = round(time.perf_counter() - t1, 2)
    out["sd"] = [round(float(v), 4) for v in fit.varcorr["sd"]]
    out["intercept"] = round(float(fit.fixef.iloc[0]), 6)
    out["peak_gb"] = round(peak_gb(), 3)
    return out


def main(folder: Path, kinds: list[str], rounds: int = 2) -> None:
    """Each source: ``rounds`` rounds of (parts, wall), alternating; the fastest of each is kept
    (the machine is shared: the minimum is the least disturbed), the largest peak RSS."""
    for kind in kinds:
        res: dict[str, Any] = {"source": kind}
        for _ in range(rounds):
            for mode in ("parts", "wall"):
                proc = subprocess.run([sys.executable, __file__, "--one", kind, str(folder), mode],
                                      capture_output=True, text=True, env=os.environ)
                if proc.returncode != 0:
                    print(json.dumps({"source": kind, "mode": mode, "error": proc.stderr.strip()[-600:]}))
                    return
                got = json.loads(proc.stdout.strip().splitlines()[-1])
                for key in ("wall_s", "group_by_s", "fit_s"):
                    if key in got:
                        res[key] = min(res.get(key, float("inf")), got[key])
                peak = f"peak_gb_{mode}"
                res[peak] = max(res.get(peak, 0.0), got["peak_gb"])
                res.update({f"{k}_{mode}": got[k] for k in ("sd", "intercept")})
                res.update({k: got[k] for k in ("nobs", "cells") if k in got})
        parts = res["group_by_s"] + res["fit_s"]
        res["ratio"] = round(res["wall_s"] / parts, 2) if parts else None
        res["python"] = platform.python_version()
        print(json.dumps(res), flush=True)


if __name__ == "__main__":
    if sys.argv[1] == "--one":
        print(json.dumps(one(sys.argv[2], Path(sys.argv[3]), sys.argv[4])))
    else:
        rounds = [int(a.split("=")[1]) for a in sys.argv[2:] if a.startswith("--rounds=")]
        kinds = [a for a in sys.argv[2:] if not a.startswith("--")]
        main(Path(sys.argv[1]), kinds or ["duckdb", "polars"], *rounds[:1])
