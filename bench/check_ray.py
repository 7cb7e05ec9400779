"""Check the Ray recipe of docs/scale.md: the same numbers through Ray's joblib backend as locally.

Ray is not a dependency of evalmix; install it beside evalmix first (``pip install "ray[default]"``):

    python bench/check_ray.py

Last run: Ray 2.60.0, joblib 1.6.0, a local Ray instance with 2 CPUs: both checks True.
"""

import joblib
import numpy as np
import ray
from ray.util.joblib import register_ray

import evalmix
from evalmix.parallel import parallel_map


def draw(t, seq):
    return float(np.random.default_rng(seq).random())


ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
register_ray()
local = parallel_map(draw, range(10), seed=4)
with joblib.parallel_config(backend="ray"):
    remote = parallel_map(draw, range(10), seed=4, progress=True, desc="ray")
print("parallel_map equal:", local == remote)
df = evalmix.simulate.glmm_runs(4, 60, 2, model_effects=[-0.5, 0, 0.1, 0.6], seed=4)
a = evalmix.rank_uncertainty(df, n_boot=400, chunk_size=50, seed=3)
with joblib.parallel_config(backend="ray"):
    b = evalmix.rank_uncertainty(df, n_boot=400, chunk_size=50, seed=3)
print("rank_uncertainty equal:", a.table.equals(b.table))
print("ray", ray.__version__, "joblib", joblib.__version__)
