"""Every Bayesian twin reaches the inference verbs: emmeans, contrast and rank sets.

One fit per twin (glmer, lmer, clmm, glmmtmb beta and beta-binomial) on R's reference data, with
the maximum-likelihood fit of the same formula beside it (evalmix's engines match lme4, ordinal
and glmmTMB in their own tests).  With weakly informative priors and these sample sizes the
posterior of a marginal mean or a contrast is close to the ML estimate's normal approximation, so
the posterior means must lie within 0.5 ML standard errors of the ML estimates (the issue's
criterion; all but the cumulative model's latent means, whose origin is the mean threshold, lie
within 0.25) and the posterior SDs within 15% of the ML standard errors (40% for those latent
means, which carry the thresholds' and the judge SD's uncertainty: about 1.2 ML SEs, and the SD of
2 x 600 draws of this heavy-tailed posterior moves by about 0.1 ML SE between seeds; seeds 11-13
gave 0.57-0.70 for warm's against an ML SE of 0.53, with the compiled kernel as with PyMC's graph).
Monte-Carlo error:
2 chains x 600 draws give an effective sample size of about 500 or more for each mean, so the Monte-Carlo SE of a posterior
mean is under 0.05 posterior SD, a fifth of the tolerance.  The rank sets of the posterior draws
must order the levels as the ML marginal means do and, on these well-separated levels, give the
same rank intervals as the ML rank sets (rank_sets_glmm).  Marked slow: each fit samples.
"""

from __future__ import annotations

import importlib.util
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

pytestmark = [pytest.mark.skipif(importlib.util.find_spec("pymc") is None, reason="needs pymc (the bayes extra)"),
              pytest.mark.slow]

import evalmix  # noqa: E402
from evalmix import bayes  # noqa: E402
from evalmix.core.errors import SamplingWarning  # noqa: E402
from evalmix.studies.leaderboard import rank_sets_glmm, rank_sets_posterior  # noqa: E402

REF = Path(__file__).parents[1] / "reference"
SIM = "glmmtmb_sim.csv"  # 4 models x 50 items x 3 runs: a score in (0, 1) and k successes of n = 10
CASES = {
    "glmer": ("glmer", "glmer", "cbind(k, n - k) ~ model + (1|item)", SIM, {}, "model"),
    "lmer": ("lmer", "lmer", "score ~ model + (1|item)", SIM, {}, "model"),
    "beta": ("glmmtmb", "glmmtmb", "score ~ model + (1|item)", SIM, {"family": "beta"}, "model"),
    "betabinomial": ("glmmtmb", "glmmtmb", "cbind(k, n - k) ~ model + (1|item)", SIM,
                     {"family": "betabinomial"}, "model"),
    "clmm": ("clmm", "clmm", "rating ~ temp + contact + (1|judge)", "clmm_wine.csv", {}, "temp"),
}


@pytest.fixture(scope="module", params=sorted(CASES))
def pair(request):
    bfn, mfn, formula, data, kw, term = CASES[request.param]
    d = pd.read_csv(REF / data, dtype={"judge": str})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        fit = getattr(bayes, bfn)(formula, d, draws=600, tune=600, chains=2, rng=11, progressbar=False, **kw)
    ml = getattr(evalmix, mfn)(formula, d, **kw)
    return request.param, fit, ml, term


def _close(post: pd.DataFrame, ref: pd.DataFrame, key: str, se_rtol: float = 0.15) -> None:
    post, ref = post.set_index(key), ref.set_index(key)
    assert list(post.index) == list(ref.index)
    gap = (post["estimate"] - ref["estimate"]).abs() / ref["se"]
    assert gap.max() <= 0.5, pd.DataFrame({"posterior": post["estimate"], "ml": ref["estimate"], "gap": gap})
    np.testing.assert_allclose(post["se"], ref["se"], rtol=se_rtol)


def test_emmeans_of_every_twin_match_the_ml_fit(pair):
    name, fit, ml, term = pair
    assert fit.draws == 600 and fit.chains == 2
    # the cumulative model's latent means carry the thresholds' and the judges' SD's posterior
    # uncertainty, which the ML SE (at the estimated SD) leaves out: 0.57-0.70 against 0.53 for warm
    _close(evalmix.emmeans(fit, term).to_frame(), evalmix.emmeans(ml, term).to_frame(), term,
           se_rtol=0.4 if name == "clmm" else 0.15)


def test_pairwise_contrasts_of_every_twin_match_the_ml_fit(pair):
    name, fit, ml, term = pair
    post = evalmix.contrast(evalmix.emmeans(fit, term), "pairwise").to_frame()
    ref = evalmix.contrast(evalmix.emmeans(ml, term), "pairwise").to_frame()
    _close(post, ref, "contrast")
    # the posterior's own summaries: the probability that a contrast is positive agrees with its sign
    for _, row in post.iterrows():
        if abs(row["estimate"]) > 3 * row["se"]:
            assert row["prob_positive"] == (1.0 if row["estimate"] > 0 else 0.0) or \
                abs(row["prob_positive"] - (row["estimate"] > 0)) < 0.01


def test_rank_sets_of_every_twin_match_the_ml_ranking(pair):
    name, fit, ml, term = pair
    post = rank_sets_posterior(fit, term).table.set_index("model")  # the ranked factor's column
    emm = evalmix.emmeans(ml, term).to_frame().set_index(term)
    # each level's estimate is its own marginal mean (the labels follow the draws' columns)
    gap = (post["estimate"] - emm.loc[post.index, "estimate"]).abs() / emm.loc[post.index, "se"]
    assert gap.max() <= 0.5, (post["estimate"], emm["estimate"])
    assert list(post.index) == list(emm["estimate"].sort_values(ascending=False).index)
    if name != "clmm":  # rank_sets_glmm takes fits whose fixed effects include an intercept column
        ref = rank_sets_glmm(ml, term).table.set_index("model")
        pd.testing.assert_frame_equal(post[["rank_low", "rank_high"]], ref.loc[post.index, ["rank_low", "rank_high"]],
                                      check_dtype=False)
    ranks = fit.ranks(term)
    # the rank table's draws follow its rows: the row best on average has the largest mean draw
    np.testing.assert_allclose(ranks.draws.mean(axis=0), ranks.table.iloc[:, 1], rtol=1e-12)
