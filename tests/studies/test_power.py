"""Power and sample size: statsmodels parity, the closed forms of the mixture method document,
Miller's clustered formula, and agreement with simulation."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.power import NormalIndPower
from statsmodels.stats.proportion import proportion_effectsize

from evalmix import power as pw
from evalmix.simulate.mixture import mixture_arrays

# The mixture design of the method document: easy 0.42, hard 0.28, middle U(0.2, 0.8).
E_U = 0.5 - 0.28  # E[U (1 - U)] for U ~ Uniform(0.2, 0.8)
SIGMA2 = 0.30 * E_U  # E[p (1 - p)] = 0.066
OMEGA2 = 0.01 * 0.99  # variance of the true per-item difference with a 1pp promotion


@pytest.mark.parametrize("p1,p2,ratio", [(0.7, 0.75, 1), (0.5, 0.45, 2), (0.9, 0.95, 0.5), (0.3, 0.31, 1)])
def test_two_proportions_equal_statsmodels(p1, p2, ratio):
    h = proportion_effectsize(p2, p1)
    ref_n = NormalIndPower().solve_power(h, alpha=0.05, power=0.8, ratio=ratio)
    assert pw.sample_size_two_proportions(p1, p2, ratio=ratio) == pytest.approx(ref_n, rel=1e-7)
    for n in (50, 500, 5000):
        ref = NormalIndPower().power(h, nobs1=n, alpha=0.05, ratio=ratio)
        assert pw.power_two_proportions(p1, p2, n, ratio=ratio) == pytest.approx(ref, rel=1e-12)
    ref1 = NormalIndPower().power(h, nobs1=800, alpha=0.05, ratio=ratio, alternative="larger")
    assert pw.power_two_proportions(p1, p2, 800, ratio=ratio, alternative="larger") == pytest.approx(ref1)
    assert pw.cohens_h(p2, p1) == pytest.approx(h)


def test_mde_inverts_power():
    d = pw.mde_two_proportions(0.6, 900)
    assert pw.power_two_proportions(0.6, 0.6 + d, 900) == pytest.approx(0.8, abs=1e-9)
    d = pw.mde_paired_proportions(0.142, 4000)
    assert pw.power_paired_proportions((0.142 + d) / 2, (0.142 - d) / 2, 4000) == pytest.approx(0.8, abs=1e-9)
    n = pw.sample_size_paired_proportions(0.08, 0.05, method="connor")
    assert pw.power_paired_proportions(0.08, 0.05, n, method="connor") == pytest.approx(0.8, abs=1e-9)


def test_mcnemar_power_reproduces_method_document():
    # Published: pi_D = 14.2%, delta = +1.00pp, z = 1.68, analytical power 38.9%.
    p_noise = 0.30 * E_U
    p01, p10 = p_noise + 0.01, p_noise
    assert round((p01 + p10) * 100, 1) == 14.2
    assert round(pw.power_paired_proportions(p01, p10, 4000) * 100, 1) == 38.9


def test_clustered_power_reproduces_method_document():
    # Published: SE of the 8-run paired t 0.257pp, z = 3.89, analytical power 97.3%.
    se = np.sqrt((OMEGA2 + 2 * SIGMA2 / 8) / 4000)
    assert round(se * 100, 3) == 0.257
    p = pw.power_clustered(0.01, 4000, omega2=OMEGA2, sigma2_a=SIGMA2, sigma2_b=SIGMA2, k_a=8)
    assert round(p * 100, 1) == 97.3


def test_miller_sample_size_closed_form():
    n = pw.sample_size_clustered(0.02, omega2=0.05, sigma2_a=0.2, sigma2_b=0.1, k_a=4, k_b=2)
    z = 1.959963984540054 + 0.8416212335729143
    assert n == pytest.approx(z ** 2 * (0.05 + 0.2 / 4 + 0.1 / 2) / 0.02 ** 2, rel=1e-12)
    mde = pw.mde_clustered(n, omega2=0.05, sigma2_a=0.2, sigma2_b=0.1, k_a=4, k_b=2)
    assert mde == pytest.approx(0.02, rel=1e-12)
    with pytest.raises(ValueError):
        pw.sample_size_clustered(0.02, omega2=-1, sigma2_a=0.2, sigma2_b=0.1)


def test_variance_components_recover_mixture_truth():
    scores, _ = mixture_arrays(20_000, 8, rng=np.random.default_rng(1))
    vc = pw.clustered_variance_components(scores["base"], scores["finetune"])
    assert vc["sigma2_a"] == pytest.approx(SIGMA2, rel=0.03)
    assert vc["omega2"] == pytest.approx(OMEGA2, rel=0.15)
    assert vc["k_a"] == 8


def test_simulated_power_agrees_with_closed_form():
    # 2,000 questions, 4 runs, +2pp: analytic paired-t power from Miller's formula
    omega2 = 0.02 * 0.98
    analytic = pw.power_clustered(0.02, 2000, omega2=omega2, sigma2_a=SIGMA2, sigma2_b=SIGMA2, k_a=4)
    sim = pw.simulated_power("paired_t_runs", n_sims=150, rng=3, n_questions=2000, n_runs=4,
                             uplift=0.02)
    assert abs(sim - analytic) < 3 * np.sqrt(analytic * (1 - analytic) / 150) + 0.01
