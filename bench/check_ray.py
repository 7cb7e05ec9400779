"""Check the Ray recipe of docs/scale.md: the same numbers through Ray's joblib backend as locally.

Ray is not a dependency of evalmix; install it beside evalmix first (``pip install "ray[default]"``):

    python bench/check_ray.py

Last run: Ray 2.60.0, joblib 1.6.0, a local Ray instance with 2 CPUs: all three checks True, the
Bayesian one both with nutpie 0.16.8 (compiled kernel) and with PyMC 5.28.5's sampler.
"""

import joblib
import numpy as np
import ray
from ray.util.joblib import register_ray

import evalmix
from evalmix.core.parallel import parallel_map


def draw(t, seq):
    return float(np.random.default_rng(seq).random())


ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
register_ray()
local = parallel_map(draw, range(10), seed=4)
with joblib.parallel_config(backend="ray"):
    remote = parallel_map(draw, range(10), seed=4, progress=True, desc="ray")
print("parallel_map equal:", local == remote)
df = evalmix.simulate.glmm_runs(4, 60, 2, model_effects=[-0.5, 0, 0.1, 0.6], rng=4)
a = evalmix.rank_uncertainty(df, n_boot=400, chunk_size=50, rng=3)
with joblib.parallel_config(backend="ray"):
    b = evalmix.rank_uncertainty(df, n_boot=400, chunk_size=50, rng=3)
print("rank_uncertainty equal:", a.table.equals(b.table))
# Bayesian chains: one Ray task per chain, the model rebuilt from its recipe on the workers
small = evalmix.simulate.glmm_runs(2, 12, 2, model_effects=[0.0, 0.8], rng=6)
kw = dict(draws=100, tune=100, chains=2, rng=5, progressbar=False)
f1 = evalmix.bayes.glmer("correct ~ model + (1|item)", small, cores=1, **kw)
with joblib.parallel_config(backend="ray"):
    f2 = evalmix.bayes.glmer("correct ~ model + (1|item)", small, **kw)
print("bayes.glmer chains equal:", np.array_equal(f1.fixef_draws.to_numpy(), f2.fixef_draws.to_numpy()),
      f"({f1.sampler})")
print("ray", ray.__version__, "joblib", joblib.__version__)
