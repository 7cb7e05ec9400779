"""The heavy jobs on a real dask.distributed cluster give the local run's numbers for a given seed."""

from __future__ import annotations

import threading
from functools import partial
import time
from pathlib import Path

import joblib
import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.core.parallel import parallel_map

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def client():
    # Two in-process workers: a real scheduler, real task graph and serialisation boundaries,
    # without paying for worker processes in CI.
    cluster = distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                       dashboard_address=None)
    with distributed.Client(cluster) as c:
        yield c
    cluster.close()


def _where(task: int, seq: np.random.SeedSequence) -> tuple[str, float]:
    time.sleep(0.05)  # long enough that both workers take tasks
    return threading.current_thread().name, float(np.random.default_rng(seq).random())


def test_parallel_map_runs_on_the_workers(client) -> None:
    local = parallel_map(_where, range(8), seed=2)
    with joblib.parallel_config(backend="dask"):
        remote = parallel_map(_where, range(8), seed=2, progress=True, desc="on dask")
    assert [v for _, v in remote] == [v for _, v in local]
    workers = {name for name, _ in remote}
    assert threading.current_thread().name not in workers
    assert len(workers) == 2  # both workers took tasks


def test_calibration_on_the_cluster_equals_the_local_run(client) -> None:
    kw = dict(methods=["paired_t_runs", "run_bootstrap_sqrt_b", "mcnemar_single_run"], n_sims=24, rng=9,
              n_questions=300, n_runs=3, uplift=0.04)
    local = evalmix.calibrate("mixture", **kw)
    with joblib.parallel_config(backend="dask"):
        remote = evalmix.calibrate("mixture", **kw)
    pd.testing.assert_frame_equal(remote.sims, local.sims)
    pd.testing.assert_frame_equal(remote.table, local.table)


def test_rank_bootstrap_on_the_cluster_equals_the_local_run(client) -> None:
    df = evalmix.simulate.glmm_runs(4, 60, 2, model_effects=[-0.5, 0, 0.1, 0.6], rng=4)
    local = evalmix.rank_uncertainty(df, n_boot=400, chunk_size=50, rng=3)
    with joblib.parallel_config(backend="dask"):
        remote = evalmix.rank_uncertainty(df, n_boot=400, chunk_size=50, rng=3)
    pd.testing.assert_frame_equal(remote.table, local.table)
    pd.testing.assert_frame_equal(remote.distribution, local.distribution)


def test_fit_many_on_the_cluster_equals_the_local_run(client) -> None:
    bench = pd.read_csv(Path(__file__).parents[1] / "reference" / "fit_many_benchmarks.csv")
    bench = bench[bench["benchmark"].isin(["chem", "code", "tiny"])]
    formula = "correct ~ model + (1|item) + (1|item:run)"
    with pytest.warns(evalmix.FitWarning, match="1 of 3"):
        local = evalmix.fit_many(formula, bench, by="benchmark")
    with joblib.parallel_config(backend="dask"), pytest.warns(evalmix.FitWarning, match="1 of 3"):
        remote = evalmix.fit_many(formula, bench, by="benchmark", progress=True)
    pd.testing.assert_frame_equal(remote.table, local.table)
    assert remote.fits[("code",)].loglik == local.fits[("code",)].loglik


def test_fit_many_warnings_on_the_cluster_land_in_the_group_rows(client) -> None:
    bench = pd.read_csv(Path(__file__).parents[1] / "reference" / "fit_many_benchmarks.csv")
    d = bench[bench["benchmark"].isin(["chem", "code"])].copy()
    d.loc[d.index[d["benchmark"] == "code"][:3], "correct"] = np.nan
    kw = dict(by="benchmark", keep_fits=False, missing="drop")
    local = evalmix.fit_many("correct ~ model + (1|item)", d, **kw)
    with joblib.parallel_config(backend="dask"):
        remote = evalmix.fit_many("correct ~ model + (1|item)", d, **kw)
    pd.testing.assert_frame_equal(remote.groups, local.groups)
    assert "dropped 3 of" in remote.groups.set_index("benchmark").loc["code", "warnings"]


def _bayes_fit(data: pd.DataFrame, seq: np.random.SeedSequence) -> np.ndarray:
    from evalmix import bayes

    # the fits are the tasks: their chains run one after the other inside each
    fit = bayes.glmer("correct ~ model + (1|item)", data, draws=40, tune=40, chains=2, rng=seq,
                      progressbar=False, cores=1)
    return fit.fixef_draws.to_numpy()


@pytest.mark.slow  # a simulation or a large fit: the second test step
def test_bayesian_chains_and_fits_on_the_cluster_equal_the_local_run(client) -> None:
    """Each chain is a task on the workers; several fits through parallel_map nest their chains."""
    pytest.importorskip("pymc")
    import warnings

    from evalmix import bayes
    from evalmix.core.errors import SamplingWarning

    d = evalmix.simulate.glmm_runs(2, 12, 2, model_effects=[0.0, 0.8], sd_item=1.0, rng=6)
    kw = dict(draws=40, tune=40, chains=2, rng=5, progressbar=False)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        local = bayes.glmer("correct ~ model + (1|item)", d, cores=1, **kw)
        with joblib.parallel_config(backend="dask"), distributed.get_task_stream(client) as ts:
            remote = bayes.glmer("correct ~ model + (1|item)", d, **kw)
        np.testing.assert_array_equal(remote.fixef_draws.to_numpy(), local.fixef_draws.to_numpy())
        assert remote.idata.posterior["chain"].values.tolist() == [0, 1]
        assert len({t["worker"] for t in ts.data}) == 2  # one chain on each worker
        halves = [d[d["item"].isin(d["item"].unique()[i::2])] for i in range(2)]
        here = parallel_map(partial(_bayes_fit), halves, seed=11)
        with joblib.parallel_config(backend="dask"):
            there = parallel_map(partial(_bayes_fit), halves, seed=11)
    for a, b in zip(here, there):
        np.testing.assert_array_equal(a, b)
