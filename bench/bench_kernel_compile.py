"""Benchmark: the cold compile of the Bayesian kernel and its C callbacks (what a fresh clone's test
run and a new installation's first Bayesian fit pay once; numba caches the result on disk).

Each round runs a fresh process with an empty numba cache directory (``NUMBA_CACHE_DIR``) that
imports :mod:`evalmix.bayes._fused_cabi` (the import compiles the kernel and the callbacks) and
prints its CPU seconds, and the same again with the cache it just filled (loading only).
``--baseline-src DIR`` times another source tree as well, in alternation (e.g. an earlier commit
exported with ``git archive COMMIT src | tar -x -C /tmp/before``)::

    python bench/bench_kernel_compile.py [--rounds 3] [--baseline-src /tmp/before/src]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src"
CHILD = ("import time; t = time.process_time(); import evalmix.bayes._fused_cabi; "
         "print(time.process_time() - t)")


def _time(src: Path, cache: str) -> float:
    env = dict(os.environ, PYTHONPATH=str(src), NUMBA_CACHE_DIR=cache)
    out = subprocess.run([sys.executable, "-c", CHILD], env=env, capture_output=True, text=True, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--baseline-src", type=Path, default=None)
    args = ap.parse_args()
    trees = {"this checkout": SRC} | ({"baseline": args.baseline_src} if args.baseline_src else {})
    cold: dict[str, list[float]] = {k: [] for k in trees}
    warm: dict[str, list[float]] = {k: [] for k in trees}
    print(f"load average at start: {os.getloadavg()}")
    for r in range(args.rounds):
        for name, src in trees.items():
            with tempfile.TemporaryDirectory() as cache:
                cold[name].append(_time(src, cache))
                warm[name].append(_time(src, cache))
            print(f"round {r + 1} {name:14s} cold {cold[name][-1]:5.2f} s   cached {warm[name][-1]:5.2f} s CPU")
    for name in trees:
        print(f"{name:14s} median cold {statistics.median(cold[name]):5.2f} s, "
              f"cached {statistics.median(warm[name]):5.2f} s (import and load included)")
    print(f"load average at end: {os.getloadavg()}")


if __name__ == "__main__":
    main()
