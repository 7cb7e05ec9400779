"""The distributed engines: a PySpark DataFrame (Spark in local mode) and a Dask DataFrame computed on
a dask.distributed LocalCluster are reduced in their engine to k-of-n counts; glmer, accuracy,
pass@k and rank sets on them equal the pandas path (fixed effects, theta, log-likelihood and
standard errors to 1e-6, tables to 1e-12), and a bad column gives the pandas path's error."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import DataError
from evalmix.simulate import glmm_runs

pytestmark = pytest.mark.slow

FORMULAS = ("correct ~ model + (1|item)", "correct ~ 1 + (1|model) + (1|item)")


def _runs() -> pd.DataFrame:
    runs = glmm_runs(4, 40, 2, rng=2)
    return runs.assign(language=np.where(runs["item"] < "q21", "EN", "ES"))


def _same(runs: pd.DataFrame, source: Any) -> None:
    for formula in FORMULAS:
        want, got = evalmix.glmer(formula, runs), evalmix.glmer(formula, source)
        assert type(got) is type(want) and got.nobs == want.nobs == len(runs)
        for a, b in ((got.fixef, want.fixef), (got.theta, want.theta), (got.vcov, want.vcov)):
            np.testing.assert_allclose(np.asarray(a), np.asarray(b), rtol=0, atol=1e-6)
        assert got.loglik == pytest.approx(want.loglik, abs=1e-6)
    for fn, kw in ((evalmix.accuracy, {"by": ["model", "language"]}), (evalmix.accuracy, {"by": "model", "ci": "cluster"}),
                   (evalmix.pass_k, {"k": 2}), (evalmix.rank_sets, {"n_boot": 100, "rng": 1})):
        want_t, got_t = fn(runs, **kw), fn(source, **kw)
        assert type(got_t) is type(want_t) and repr(got_t) == repr(want_t)
        pd.testing.assert_frame_equal(got_t.to_frame(), want_t.to_frame(), rtol=1e-12, atol=1e-12)


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    pytest.importorskip("pyspark", reason="the spark extra: pip install 'evalmix[spark]' (and a Java runtime)")
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[1]").appName("evalmix-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.shuffle.partitions", "2")
               .config("spark.sql.execution.arrow.pyspark.enabled", "true").getOrCreate())
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def test_spark_local_mode_equals_the_pandas_path(spark: Any) -> None:
    runs = _runs()
    _same(runs, spark.createDataFrame(runs))


def test_spark_ansi_overflow_of_the_run_bits_gives_the_duplicate_error(spark: Any) -> None:
    # 20,000 rows of one cell all at run 49: their 2^49 bits overflow Spark's checked int64 sum
    # (ANSI mode, Spark 4's default); the table is checked by counting distinct runs instead
    runs = _runs()
    cell = runs.iloc[[0]]
    bad = pd.concat([runs, pd.concat([cell.assign(run=49)] * 20_000)], ignore_index=True)
    spark.conf.set("spark.sql.ansi.enabled", "true")
    with pytest.raises(DataError) as want:
        evalmix.accuracy(bad, "model")
    with pytest.raises(DataError) as got:
        evalmix.accuracy(spark.createDataFrame(bad), "model")
    assert "duplicate" in str(want.value).lower()
    assert str(got.value) == str(want.value)


def test_spark_bad_column_gives_the_pandas_error(spark: Any) -> None:
    runs = _runs()
    nan = runs.assign(correct=runs["correct"].astype(float).where(runs.index != 5))
    for fn in (lambda d: evalmix.glmer(FORMULAS[0], d), lambda d: evalmix.accuracy(d, "model")):
        with pytest.raises(DataError) as want:
            fn(nan)
        with pytest.raises(DataError) as got:
            fn(spark.createDataFrame(nan))
        assert "outcome column 'correct' has 1 missing value" in str(want.value)
        assert str(got.value) == str(want.value)


def test_dask_local_cluster_equals_the_pandas_path() -> None:
    dd = pytest.importorskip("dask.dataframe")
    distributed = pytest.importorskip("distributed", reason="the cluster extra: pip install 'evalmix[cluster]'")
    runs = _runs()
    with distributed.LocalCluster(n_workers=1, threads_per_worker=2, processes=False,
                                  dashboard_address=None) as cluster, distributed.Client(cluster) as client:
        with distributed.get_task_stream(client) as stream:
            _same(runs, dd.from_pandas(runs, npartitions=3))
        assert len(stream.data) > 0  # the counts were computed on the cluster's worker
