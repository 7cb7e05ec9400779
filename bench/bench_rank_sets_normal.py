"""CPU seconds of ``evalmix.rank_sets_normal`` on 200 independent estimates, for one source tree.

    python bench/bench_rank_sets_normal.py /path/to/tree-a /path/to/tree-b ...

Each tree's ``src`` is imported in a fresh process (one per tree, alternating over ``--rounds``), so
two commits can be compared side by side on the same machine.  CPU time (``time.process_time``) is
printed beside wall-clock time, because on a shared machine only the former measures the work.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

CHILD = """
import sys, time
import numpy as np
sys.path.insert(0, {src!r})
from evalmix import rank_sets_normal
rng = np.random.default_rng(1)
est = np.sort(rng.normal(0, 0.1, 200))
se = rng.uniform(0.01, 0.03, 200)
t0, w0 = time.process_time(), time.perf_counter()
rs = rank_sets_normal(est, se=se)
cpu, wall = time.process_time() - t0, time.perf_counter() - w0
print(f"cpu {{cpu:.2f}} s  wall {{wall:.2f}} s  sum(rank_low) {{rs.table.rank_low.sum()}}  "
      f"sum(rank_high) {{rs.table.rank_high.sum()}}  critical value {{rs.pairs.critical_value.iloc[0]:.5f}}")
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trees", nargs="+", help="repository roots whose src/ is imported")
    ap.add_argument("--rounds", type=int, default=2)
    args = ap.parse_args()
    print(subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    for r in range(args.rounds):
        for tree in args.trees:
            out = subprocess.run([sys.executable, "-c", CHILD.format(src=f"{tree}/src")], capture_output=True,
                                 text=True, check=True, env={"OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin"})
            print(f"round {r + 1}  {tree}: {out.stdout.strip()}")


if __name__ == "__main__":
    main()
