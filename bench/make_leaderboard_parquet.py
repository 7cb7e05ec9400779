"""Write a leaderboard-scale runs table as a partitioned Parquet folder (for bench_scale.py and
bench_pushdown.py).

5,000 models x 20,000 items x 1 run = 100M rows by default, one file per block of models (about 5M
rows a file), with model and item as dictionary-encoded strings (as pandas categoricals and most
harness exports write them).  Correctness follows a crossed logistic model: logit p =
ability[model] + easiness[item], the same for every run of a (model, item) cell.

    nice python bench/make_leaderboard_parquet.py /tmp/evalmix_leaderboard [n_models] [n_items] [n_runs]

Writes under the given folder (never inside the repository); takes about a minute and < 2 GB.
"""

from __future__ import annotations

import shutil
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq


def main(out: Path, n_models: int = 5000, n_items: int = 20000, n_runs: int = 1,
         models_per_file: int | None = None, seed: int = 1) -> None:
    if models_per_file is None:  # about 5M rows a file
        models_per_file = max(1, 5_000_000 // (n_items * n_runs))
    rng = np.random.default_rng(seed)
    ability = rng.normal(0.0, 1.0, n_models)
    easiness = rng.normal(0.5, 1.5, n_items)
    models = pa.array([f"m{m:05d}" for m in range(n_models)])
    items = pa.array([f"i{i:06d}" for i in range(n_items)])
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    t0 = time.perf_counter()
    for f, start in enumerate(range(0, n_models, models_per_file)):
        m_idx = np.arange(start, min(start + models_per_file, n_models))
        mm = np.repeat(m_idx, n_items * n_runs).astype(np.int32)
        ii = np.tile(np.repeat(np.arange(n_items, dtype=np.int32), n_runs), len(m_idx))
        eta = ability[mm] + easiness[ii]
        correct = (rng.random(mm.size) < 1.0 / (1.0 + np.exp(-eta))).astype(np.int8)
        table = pa.table({
            "model": pa.DictionaryArray.from_arrays(pa.array(mm), models),
            "item": pa.DictionaryArray.from_arrays(pa.array(ii), items),
            "run": pa.array(np.tile(np.arange(1, n_runs + 1, dtype=np.int16), len(m_idx) * n_items)),
            "correct": pa.array(correct),
        })
        pq.write_table(table, out / f"part-{f:03d}.parquet", row_group_size=1 << 20)
    rows = n_models * n_items * n_runs
    size = sum(p.stat().st_size for p in out.iterdir()) / 2**20
    print(f"wrote {rows:,} rows in {len(list(out.iterdir()))} files ({size:.0f} MiB) to {out} "
          f"in {time.perf_counter() - t0:.0f} s (pyarrow {pa.__version__}, numpy {np.__version__})")


if __name__ == "__main__":
    args = sys.argv[1:]
    main(Path(args[0]) if args else Path("/tmp/evalmix_leaderboard"), *map(int, args[1:4]))
