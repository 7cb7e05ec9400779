"""Seeded simulations with known truth for evalmix.item_health and evalmix.version_shift (second
test step): planted dead items recovered, the signal-to-noise ratio about 1 when the top models are
equal, version shifts recovered, and error rates at or below alpha when versions are confounded
with model strength and nothing shifted.  Monte-Carlo errors are stated beside each bound."""

import warnings

import numpy as np
import pytest

import evalmix
from evalmix.simulate import simulate_dead_items, simulate_irt, simulate_irt_parameters, simulate_versions

pytestmark = pytest.mark.slow


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")   # singular item:run terms of some simulated tables
        yield


def test_planted_dead_items_are_recovered():
    # 20 models, 10 of them the top-k, 3 runs, 100 items: 5 all solve, 5 none solve, 5 flat (a = 0)
    recall = {"all solve": [], "none solve": [], "flat": []}
    false_mid = []
    for s in range(10):
        runs, truth = simulate_dead_items(n_items=100, n_models=20, n_runs=3, rng=s)
        h = evalmix.item_health(runs, top_k=10, method="point_biserial")
        it = h.items.set_index("item")
        for kind, items in truth.items():
            recall[kind].append(float((it.loc[items, "reason"] == kind).mean() if kind != "flat"
                                      else it.loc[items, "dead"].mean()))
        planted = {i for v in truth.values() for i in v}
        live = it.loc[[i for i in it.index if i not in planted]]
        mid = live[(live["top_accuracy"] > 0.1) & (live["top_accuracy"] < 0.9)]
        false_mid.append(float(mid["dead"].mean()))
    # every item that all (none) of the top solve is found, with its reason
    assert np.mean(recall["all solve"]) == 1.0 and np.mean(recall["none solve"]) == 1.0
    # flat items: measured 62% (50 planted, MC SE 0.07); live items with top-k accuracy in (10%, 90%)
    # flagged: measured 15% (MC SE about 0.015), mostly where the top ten are close
    assert np.mean(recall["flat"]) >= 0.45
    assert np.mean(false_mid) <= 0.2


def test_snr_is_about_one_when_the_top_models_are_equal():
    # every model of the same ability: the between-model variance of the scores is pure noise
    snr = []
    for s in range(40):
        items, _ = simulate_irt_parameters(80, 10, seed=s)
        runs = simulate_irt(n_items=80, n_models=10, n_runs=3, run_sd=0.5, items=items, theta=np.zeros(10),
                            seed=1000 + s)
        snr.append(evalmix.item_health(runs, method="point_biserial").benchmark["snr"].iloc[0])
    # the ratio of two variance estimates: its mean over 40 tables (measured 1.12, SD 0.44) is 1
    # within 0.2 (MC SE 0.07; the mean of a ratio sits a little above 1)
    assert np.mean(snr) == pytest.approx(1.0, abs=0.2)
    # and well above 1 when the models differ (abilities N(0, 1))
    runs = simulate_irt(n_items=80, n_models=10, n_runs=3, seed=7)
    assert evalmix.item_health(runs, method="point_biserial").benchmark["snr"].iloc[0] > 5


def test_two_pl_columns_are_fit_irts():
    runs, _ = simulate_dead_items(n_items=30, n_models=10, n_runs=2, n_all=2, n_none=2, n_flat=2, rng=4)
    h = evalmix.item_health(runs, top_k=5, run="run")
    assert h.method == "2pl"   # 10 models: the 2PL with run noise (fit_irt, checked against girth and py-irt)
    fit = evalmix.fit_irt(runs, run="run")
    got = h.items.set_index("item")
    want = fit.items.set_index("item")
    np.testing.assert_allclose(got["discrimination"], want.loc[got.index, "discrimination"], rtol=1e-10)
    np.testing.assert_allclose(got["difficulty"], want.loc[got.index, "difficulty"], rtol=1e-10)
def test_version_shift_conditions_on_the_model():
    # v2 only for the stronger models, two bridge models, no shift: nothing flagged, the systematic
    # shift estimated near 0 (the naive gap between versions is large)
    runs, truth = simulate_versions(n_items=40, n_models=12, n_runs=2, rng=11)
    naive = runs.groupby("harness_version")["correct"].mean()
    assert naive["v2"] - naive["v1"] > 0.2
    res = evalmix.version_shift(runs, run="run")
    assert res.identified and res.reference == "v1"
    sys_row = res.overall.set_index("test").loc["systematic"]
    assert abs(sys_row["estimate"]) < 2.5 * sys_row["se"]
    assert res.affected_items() == []
    assert set(res.overall["test"]) == {"systematic", "item x version"}
    m = res.models
    assert set(zip(m["model"], m["version"])) == {(k, v) for k, vs in truth["versions"].items() for v in vs}
    # equated = accuracy - shifts; nothing significant here leaves the scores as they are
    np.testing.assert_allclose(m["equated"], m["accuracy"] - m["shift_systematic"] - m["shift_items"])




def test_error_rates_hold_when_versions_are_confounded_with_strength():
    # the stronger half of 24 models ran v2 only, the weaker half v1 only, two bridge models both;
    # no shift, model-by-item misfit 0.5 shared by a model's runs, 2 runs per version
    sys_p, total_p, any_flag = [], [], []
    for s in range(30):
        runs, _ = simulate_versions(n_items=60, n_models=24, n_runs=2, misfit_sd=0.5, rng=500 + s)
        res = evalmix.version_shift(runs, run="run")
        o = res.overall.set_index("test")
        sys_p.append(o.loc["systematic", "p_value"])
        total_p.append(o.loc["item x version", "p_value"])
        any_flag.append(bool(res.affected_items()))
    # measured: 1 of 30 for each (3%); at alpha = 0.05 over 30 tables the MC SE of a rate is 0.04,
    # and each must stay below 0.05 + 2.5 SE
    assert np.mean(np.array(sys_p) < 0.05) <= 0.15
    assert np.mean(np.array(total_p) < 0.05) <= 0.15
    assert np.mean(any_flag) <= 0.15     # under the complete null the FDR is P(any flag)


def test_shifts_are_recovered():
    # 100 models assigned to versions at random, 6 bridge models; a systematic shift of 0.4 and
    # 6 of 60 items shifted by 2 more (log-odds)
    est, recall, fdp = [], [], []
    for s in range(6):
        runs, truth = simulate_versions(n_items=60, n_models=100, n_runs=1, shift=0.4, dif_items=6,
                                        dif_shift=2.0, confounded=False, n_bridge=6, rng=700 + s)
        res = evalmix.version_shift(runs)
        est.append(res.overall.set_index("test").loc["systematic", "estimate"])
        flagged, planted = set(res.affected_items()), set(truth["dif_items"])
        recall.append(len(flagged & planted) / len(planted))
        fdp.append(len(flagged - planted) / max(len(flagged), 1))
        if flagged & planted:   # the flagged items' models are named, and their scores equated
            row = res.items.set_index("item").loc[sorted(flagged & planted)[0]]
            assert row["estimate"] > 0 and row["models"]
            m = res.models
            assert (m.loc[m["version"] == "v2", "shift_items"] > 0).all()
    # the purified systematic shift: mean of 6 estimates (measured 0.44) within 0.15 of 0.4 (MC SE
    # about 0.07)
    assert np.mean(est) == pytest.approx(0.4, abs=0.15)
    # recall measured 64% (36 planted items; MC SE 0.08); false discovery proportion measured 0, at
    # most the FDR level within MC error
    assert np.mean(recall) >= 0.5
    assert np.mean(fdp) <= 0.15
