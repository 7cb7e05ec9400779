"""k-of-n counts wherever the method allows them: the same responses as 0/1 rows and as counts
give the same numbers."""

from __future__ import annotations

import pandas as pd
import pytest

import evalmix
from evalmix.cli import main
from evalmix.studies.irt import fit_irt
from evalmix.simulate import simulate_irt


def _binary_and_counts():
    runs = simulate_irt(n_items=40, n_models=6, n_runs=3, rng=4)
    counts = runs.groupby(["model", "item"], as_index=False).agg(k=("correct", "sum"), n=("correct", "size"))
    return runs, counts


def test_fit_irt_takes_counts_named_or_recorded():
    runs, counts = _binary_and_counts()
    pooled = fit_irt(runs)   # without run=, the runs of an (item, model) pair are repeated attempts
    named = fit_irt(counts, successes="k", trials="n")
    recorded = fit_irt(evalmix.read_runs(counts, successes="k", trials="n", run=None))
    for fit in (named, recorded):
        pd.testing.assert_frame_equal(fit.abilities, pooled.abilities, rtol=1e-6)
        assert fit.loglik == pytest.approx(pooled.loglik, abs=1e-6)   # the same cells: k of n per pair
        assert fit.n_obs == pooled.n_obs == len(runs)


def test_irt_cli_takes_counts(tmp_path, capsys):
    runs, counts = _binary_and_counts()
    path = tmp_path / "counts.csv"
    counts.to_csv(path, index=False)
    assert main(["irt", str(path), "--successes", "k", "--trials", "n", "--json"]) == 0
    assert "table" in capsys.readouterr().out


def test_item_bootstraps_take_counts_without_a_run_column():
    runs = evalmix.read_runs("data/example_runs.csv")
    sub = runs[(runs["language"] == "EN") & (runs["prompt"] == "ZS")]
    counts = sub.groupby(["model", "item"], as_index=False).agg(k=("correct", "sum"), n=("correct", "size"))
    counts = evalmix.read_runs(counts, successes="k", trials="n", run=None)
    for fn in (evalmix.rank_sets, evalmix.rank_uncertainty):
        from_runs = fn(sub, n_boot=300, rng=2)
        from_counts = fn(counts, n_boot=300, rng=2)
        pd.testing.assert_frame_equal(from_counts.table, from_runs.table)
