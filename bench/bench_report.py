"""Time of the whole AI4Math report: ``evalmix report ai4math_runs.csv -o DIR`` in a fresh process.

Each repeat starts a new Python process (imports included, as a user runs the command) and
records its wall-clock time and the CPU time it used (user + system, all threads).  On a machine
shared with other work the wall-clock time is inflated by waiting for a core; the CPU time is not.
The load average is printed alongside.

Usage (from the repository root, with ../shared beside the checkout):
    python bench/bench_report.py [path/to/ai4math_runs.csv] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_run(data: Path, extra: list[str]) -> tuple[float, float]:
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    with tempfile.TemporaryDirectory() as out:
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        t = time.perf_counter()
        subprocess.run([sys.executable, "-W", "ignore", "-m", "evalmix", "report", str(data), "-o", out,
                        *extra], check=True, env=env, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    default = ROOT.parent / "shared" / "data" / "ai4math" / "ai4math_runs.csv"
    ap = argparse.ArgumentParser()
    ap.add_argument("data", nargs="?", default=str(default))
    ap.add_argument("--repeat", type=int, default=3)
    args, extra = ap.parse_known_args()
    print(f"cores: {os.cpu_count()}, load average before: {os.getloadavg()[0]:.1f}")
    rows = [one_run(Path(args.data), extra) for _ in range(args.repeat)]
    for i, (wall, cpu) in enumerate(rows, 1):
        print(f"run {i}: wall {wall:6.2f} s   cpu {cpu:6.2f} s")
    print(f"best: wall {min(r[0] for r in rows):.2f} s, cpu {min(r[1] for r in rows):.2f} s; "
          f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
