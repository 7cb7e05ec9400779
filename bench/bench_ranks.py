"""Leaderboard scale: rank sets and rank instability against the number of models.

    nice python bench/bench_ranks.py                 # old against new side by side, then the target
    nice python bench/bench_ranks.py compare         # only the side-by-side comparison
    nice python bench/bench_ranks.py target          # only 1,000 models x 500 items x 5 runs
    nice python bench/bench_ranks.py normal          # rank_sets_normal on 200 models, old against new

``compare`` loads the previous implementation (``git show d472864:src/evalmix/leaderboard.py`` and
``ranking.py``: ``main`` before the rewrite, whose cost grew with models x rows; another commit with
``EVALMIX_BENCH_BASE=<commit>``) into temporary modules beside the package and times it against the
working tree on the same tables, checking that both give the same numbers.  ``target`` times the working tree on
1,000 models x 500 items x 5 runs (2.5M rows) with 1,000 bootstrap replicates, the size a public
leaderboard reaches.  ``normal`` times :func:`evalmix.rank_sets_normal` on 200 independent estimates
(50,000 seeded normal draws for the critical values) in the working tree and at ``de59ebd`` (before
the per-model maxima were computed models-first; another commit with ``EVALMIX_BENCH_NORMAL_BASE``),
checking that both give the same numbers.  Timings are wall-clock seconds; the machine's load is printed first (a shared
machine gives noisy numbers).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np
import pandas as pd

ROOT = Path(__file__).resolve().parents[1]
BASE = os.environ.get("EVALMIX_BENCH_BASE", "d472864")  # main before leaderboards became linear in rows
# main before the normal critical values were computed models-first
NORMAL_BASE = os.environ.get("EVALMIX_BENCH_NORMAL_BASE", "de59ebd")


def runs_table(n_models: int, n_items: int, n_runs: int, seed: int = 0) -> pd.DataFrame:
    """A logistic leaderboard: model ability + item easiness, 0/1 answers, every model on every item."""
    rng = np.random.default_rng(seed)
    ability = np.sort(rng.normal(0, 1, n_models))[::-1]
    easiness = rng.normal(0, 1.5, n_items)
    eta = ability[:, None, None] + easiness[None, :, None] + np.zeros((1, 1, n_runs))
    correct = (rng.random(eta.shape) < 1 / (1 + np.exp(-eta))).astype(np.int8)
    m, i, r = np.meshgrid(np.arange(n_models), np.arange(n_items), np.arange(n_runs), indexing="ij")
    width = len(str(n_models))
    labels = np.array([f"m{j:0{width}d}" for j in range(n_models)], dtype=object)
    return pd.DataFrame({"model": labels[m.ravel()], "item": i.ravel() + 1, "run": r.ravel() + 1,
                         "correct": correct.ravel()})


def old_modules(base: str = BASE) -> types.SimpleNamespace:
    """The previous leaderboard and ranking modules (commit ``base``), importable beside the package."""
    tmp = Path(tempfile.mkdtemp(prefix="evalmix_old_"))
    mods = {}
    for name in ("ranking", "leaderboard"):
        text = subprocess.run(["git", "show", f"{base}:src/evalmix/{name}.py"], cwd=ROOT, check=True,
                              capture_output=True, text=True).stdout
        # relative imports point at the installed package, except between the two old modules
        text = text.replace("from .ranking import", "from old_ranking import")
        text = text.replace("from . import", "from evalmix import").replace("from .", "from evalmix.")
        path = tmp / f"old_{name}.py"
        path.write_text(text)
        sys.path.insert(0, str(tmp))
        spec = importlib.util.spec_from_file_location(f"old_{name}", path)
        assert spec is not None and spec.loader is not None
        mod = importlib.util.module_from_spec(spec)
        sys.modules[f"old_{name}"] = mod
        spec.loader.exec_module(mod)
        mods[name] = mod
    return types.SimpleNamespace(**mods)


def timed(fn, *args, **kwargs):
    t0 = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - t0


def compare() -> None:
    from evalmix import leaderboard, ranking

    old = old_modules()
    print(f"size (models x items x runs, replicates) | function | {BASE} s | this tree s | same numbers")
    for n_models, n_items, n_runs, n_boot in ((50, 100, 3, 200), (200, 250, 10, 50)):
        df = runs_table(n_models, n_items, n_runs)
        size = f"{n_models} x {n_items} x {n_runs}, {n_boot}"
        a, t_old = timed(old.leaderboard.rank_sets, df, n_boot=n_boot, seed=1)
        b, t_new = timed(leaderboard.rank_sets, df, n_boot=n_boot, rng=1)
        same = a.table.equals(b.table) and a.groups.equals(b.groups) and (
            a.pairs[["model_a", "model_b", "separated"]].equals(b.pairs[["model_a", "model_b", "separated"]]))
        num = ["se", "conf_low", "conf_high", "statistic", "p_adjusted", "critical_value"]
        x, y = a.pairs[num].to_numpy(), b.pairs[num].to_numpy()
        rel = float(np.nanmax(np.abs(x - y) / np.maximum(np.abs(x), 1e-300)))
        print(f"{size} | rank_sets | {t_old:.1f} | {t_new:.1f} | {same} (pair statistics to {rel:.0e} "
              f"relative: numpy sums a narrower matrix's columns in another order)")
        a, t_old = timed(old.ranking.rank_instability, df, runs_per_leaderboard=[1, 2])
        b, t_new = timed(ranking.rank_instability, df, runs_per_leaderboard=[1, 2], ties="paper")
        same = (a.table.equals(b.table) and a.ranks.equals(b.ranks))
        print(f"{n_models} x {n_items} x {n_runs} | rank_instability | {t_old:.1f} | {t_new:.1f} | {same}")


def target() -> None:
    from evalmix import leaderboard, ranking

    df, t_make = timed(runs_table, 1000, 500, 5)
    print(f"1,000 models x 500 items x 5 runs: {len(df):,} rows (built in {t_make:.1f} s)")
    rs, t = timed(leaderboard.rank_sets, df, n_boot=1000, rng=1)
    print(f"rank_sets, 1,000 replicates: {t:.1f} s ({len(rs.pairs):,} pairs, {len(rs.groups)} tie groups)")
    ri, t = timed(ranking.rank_instability, df, runs_per_leaderboard=[1, 2])
    print(f"rank_instability, single runs and pairs of runs: {t:.1f} s ({ri.n_unstable} of "
          f"{ri.n_leaderboards} single-run leaderboards invert a pair)")
    ru, t = timed(ranking.rank_uncertainty, df, n_boot=1000, rng=1)
    print(f"rank_uncertainty, 1,000 replicates: {t:.1f} s")


def normal() -> None:
    from evalmix import leaderboard

    old = old_modules(NORMAL_BASE)
    rng = np.random.default_rng(0)
    est, se = rng.normal(0, 0.1, 200), rng.uniform(0.01, 0.03, 200)
    a, t_old = timed(old.leaderboard.rank_sets_normal, est, se=se)
    b, t_new = timed(leaderboard.rank_sets_normal, est, se=se)
    same = a.table.equals(b.table) and a.pairs.equals(b.pairs)
    print(f"rank_sets_normal, 200 models ({len(b.pairs):,} pairs): {NORMAL_BASE} {t_old:.1f} s | "
          f"this tree {t_new:.1f} s | same numbers: {same}")


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "all"
    print("load:", os.getloadavg(), "cores:", os.cpu_count())
    if mode in ("all", "compare"):
        compare()
    if mode in ("all", "target"):
        target()
    if mode in ("all", "normal"):
        normal()
