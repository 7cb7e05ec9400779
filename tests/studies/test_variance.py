"""Variance sources: unbiased ANOVA estimators (seeded simulation with known variances), the SE
formula, confounded designs, and the cost-aware planner against brute force."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import DataError
from evalmix.studies.repetitions import variance_components
from evalmix.studies.variance import _anova, _components, mean_se, plan_sources, variance_sources

TRUE = {"item": 0.8, "prompt": 0.3, "item:prompt": 0.2, "run": 0.5, "judge": 0.25}


def _draw(rng, N, T, G, J, comp=TRUE, mu=1.0):
    """Scores of one simulated study as an items x templates x runs x judges array."""
    sd = {k: math.sqrt(v) for k, v in comp.items()}
    return (mu + rng.normal(0, sd["item"], N)[:, None, None, None]
            + rng.normal(0, sd["prompt"], T)[None, :, None, None]
            + rng.normal(0, sd["item:prompt"], (N, T))[:, :, None, None]
            + rng.normal(0, sd["run"], (N, T, G))[..., None]
            + rng.normal(0, sd["judge"], (N, T, G, J)))


def _frame(y):
    i, t, g, j = np.meshgrid(*(range(n) for n in y.shape), indexing="ij")
    return pd.DataFrame({"item": i.ravel(), "prompt": t.ravel(), "run": g.ravel(), "judge": j.ravel(),
                         "score": y.ravel()})


def _simulate(rng, N, T, G, J, comp=TRUE, mu=1.0):
    return _frame(_draw(rng, N, T, G, J, comp, mu))


@pytest.mark.slow  # a simulation or a large fit: the second test step
def test_unbiased_by_simulation():
    rng = np.random.default_rng(20261123)
    n_sims = 300
    est = {k: [] for k in TRUE}
    for _ in range(n_sims):
        df = _simulate(rng, 40, 6, 3, 2)
        t = variance_sources(df, prompt="prompt", run="run", judge="judge", outcome="score").table
        for s, v in zip(t["source"], t["variance_raw"]):
            est[s].append(v)
    for s, truth in TRUE.items():
        vals = np.array(est[s])
        mcse = vals.std(ddof=1) / np.sqrt(n_sims)
        assert abs(vals.mean() - truth) <= 3 * mcse, (s, vals.mean(), truth, mcse)


def test_icc_and_components_table():
    rng = np.random.default_rng(1)
    df = pd.concat([_simulate(rng, 30, 3, 2, 2).assign(model=m) for m in ("a", "b")])
    vs = variance_sources(df, "model", prompt="prompt", run="run", judge="judge", outcome="score")
    t = vs.table
    assert t.groupby("model")["icc"].sum().round(12).tolist() == [1.0, 1.0]
    assert list(t["source"].iloc[:5]) == ["item", "prompt", "item:prompt", "run", "judge"]
    assert t.loc[0, "df"] == 29 and t.loc[1, "df"] == 2 and t.loc[2, "df"] == 58
    assert t.loc[3, "df"] == 30 * 3 * 1 and t.loc[4, "df"] == 30 * 3 * 2
    wide = vs.components()
    assert list(wide.columns) == ["model", "item", "prompt", "item:prompt", "run", "judge"]
    assert vs.design[["n_items", "n_prompts", "n_runs", "n_judges"]].iloc[0].tolist() == [30, 3, 2, 2]


def test_matches_repetitions_variance_components_on_binary_runs():
    runs = evalmix.simulate.glmm_runs(3, 60, 4, rng=2)
    vs = variance_sources(runs, "model").table
    vc = variance_components(runs, "model").table
    for m in ("M1", "M2", "M3"):
        mine = vs[vs["model"] == m].set_index("source")["variance_raw"]
        theirs = vc[vc["model"] == m].iloc[0]
        assert mine["item"] == pytest.approx(theirs["var_between_raw"], rel=1e-12)
        assert mine["run"] == pytest.approx(theirs["var_within"], rel=1e-12)


def test_confounded_designs_are_labelled():
    rng = np.random.default_rng(3)
    one_judge = _simulate(rng, 50, 3, 3, 1)
    t = variance_sources(one_judge, prompt="prompt", run="run", judge="judge", outcome="score").table
    assert t.set_index("source")["includes"].to_dict() == {"item": "", "prompt": "", "item:prompt": "",
                                                          "run": "judge"}
    one_prompt = _simulate(rng, 50, 1, 3, 2)
    t = variance_sources(one_prompt, prompt="prompt", run="run", judge="judge", outcome="score").table
    assert t.set_index("source")["includes"].to_dict() == {"item": "item:prompt", "run": "", "judge": ""}
    one_run = _simulate(rng, 50, 2, 1, 3)
    t = variance_sources(one_run, prompt="prompt", run="run", judge="judge", outcome="score").table
    assert t.set_index("source")["includes"].to_dict() == {"item": "", "prompt": "", "item:prompt": "run",
                                                          "judge": ""}
    # the merged variance estimates the sum of its parts (unbiased on average).  The replicates go
    # through variance_sources' estimator on the score array (the data-frame checks above cost
    # ~20 times the arithmetic); the first is checked against variance_sources itself
    ys = [_draw(rng, 30, 1, 3, 1) for _ in range(200)]
    s = variance_sources(_frame(ys[0]), prompt="prompt", run="run", judge="judge", outcome="score").table
    vals = np.array([[r["variance_raw"] for r in _components(_anova(y), y.shape)] for y in ys])
    assert s["variance_raw"].to_list() == vals[0].tolist()
    assert s["source"].to_list() == ["item", "run"]
    mcse = vals.std(0, ddof=1) / np.sqrt(len(vals))
    assert abs(vals[:, 0].mean() - (TRUE["item"] + TRUE["item:prompt"])) <= 3 * mcse[0]
    assert abs(vals[:, 1].mean() - (TRUE["run"] + TRUE["judge"])) <= 3 * mcse[1]


def test_mean_se_formula_by_simulation():
    """The SD of the grand mean over replicated studies (new items, templates, runs, judges)."""
    rng = np.random.default_rng(5)
    N, T, G, J = 20, 3, 2, 2
    means = np.array([_draw(rng, N, T, G, J).mean() for _ in range(2000)])
    se = mean_se(TRUE, N, T, G, J)
    # the SD of 2,000 draws is within 3.2% of the truth with 95% probability
    assert means.std(ddof=1) == pytest.approx(se, rel=0.05)
    fixed = mean_se(TRUE, N, T, G, J, prompts="fixed")
    assert fixed == pytest.approx(math.sqrt(se**2 - TRUE["prompt"] / T))


def test_planner_is_the_brute_force_optimum():
    comp = {"item": 0.03, "prompt": 0.0004, "item:prompt": 0.01, "run": 0.12, "judge": 0.06}
    costs = dict(cost_item=5.0, cost_prompt=40.0, cost_run=1.0, cost_judge=0.2)
    target = 0.03
    p = plan_sources(comp, se=target, max_prompts=6, max_runs=8, max_judges=5, **costs)
    best = None
    for t, g, j in itertools.product(range(1, 7), range(1, 9), range(1, 6)):
        room = target**2 - comp["prompt"] / t
        if room <= 0:
            continue
        n = max(2, math.ceil((comp["item"] + comp["item:prompt"] / t + comp["run"] / (t * g)
                              + comp["judge"] / (t * g * j)) / room - 1e-9))
        cost = n * costs["cost_item"] + t * costs["cost_prompt"] + n * t * g * (costs["cost_run"]
                                                                               + j * costs["cost_judge"])
        if best is None or cost < best[0] - 1e-9:
            best = (cost, n, t, g, j)
    assert (p.cost, p.n_items, p.n_prompts, p.n_runs, p.n_judges) == pytest.approx(best)
    assert p.se <= target
    assert p.se == pytest.approx(mean_se(comp, p.n_items, p.n_prompts, p.n_runs, p.n_judges))
    assert p.continuous["n_judges"] == pytest.approx(math.sqrt(0.06 * 1.0 / (0.12 * 0.2)))


def test_planner_from_estimates_and_errors():
    rng = np.random.default_rng(9)
    vs = variance_sources(_simulate(rng, 40, 4, 2, 2), prompt="prompt", run="run", judge="judge",
                          outcome="score")
    p = plan_sources(vs, se=0.5, cost_item=1)
    assert p.se <= 0.5
    with pytest.raises(DataError, match="template variance alone"):
        plan_sources({"item": 0.1, "prompt": 0.3}, se=0.1, max_prompts=5)
    assert plan_sources({"item": 0.1, "prompt": 0.3}, se=0.1, prompts="fixed").n_items == 10
    with pytest.raises(DataError, match="unknown source"):
        plan_sources({"items": 0.1}, se=0.1)


def test_bad_designs():
    rng = np.random.default_rng(4)
    df = _simulate(rng, 10, 2, 2, 2)
    with pytest.raises(DataError, match="unbalanced: 1 combination"):
        variance_sources(df.iloc[1:], prompt="prompt", run="run", judge="judge", outcome="score")
    with pytest.raises(DataError, match="several rows share"):
        variance_sources(df, prompt="prompt", run="run", outcome="score")
    with pytest.raises(DataError, match="one score per item"):
        variance_sources(df[(df.run == 0) & (df.judge == 0) & (df.prompt == 0)], outcome="score")
