"""The Bayesian fits' base (evalmix.bayes.base.PosteriorResult): the maximum-likelihood vocabulary
where its meaning carries over (ngroups, confint, coef_table, predict).

The checks are identities of the draws (to 1e-10): predictions are posterior means of the linear
predictor (population-level: the fixed part at the posterior mean; with the random effects, plus
each level's posterior-mean deviation, ``ranef()``), and on the response scale the mean of the
inverse link over the draws. One small fit (about 8 s with compilation): the second test step.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import special

import evalmix
from evalmix import bayes
from evalmix.bayes.base import PosteriorResult
from evalmix.core.errors import ArgumentError, DataError
from evalmix.mixed.result import CoefTable

pytestmark = pytest.mark.slow

RUNS = evalmix.simulate.glmm_runs(3, 30, 2, rng=1)


@pytest.fixture(scope="module")
def post():
    return bayes.glmer("correct ~ model + (1|item)", RUNS, draws=200, tune=200, chains=2, rng=1,
                       progressbar=False, cores=1)


def test_vocabulary_of_the_base(post):
    assert isinstance(post, PosteriorResult)
    ml = evalmix.glmer("correct ~ model + (1|item)", RUNS)
    assert post.ngroups == ml.ngroups == {"item": 30}
    ct = post.coef_table(0.9)
    assert isinstance(ct, CoefTable) and ct.test == "posterior" and type(ct) is type(ml.coef_table())
    tab = ct.to_frame()
    np.testing.assert_allclose(tab["estimate"], post.fixef.to_numpy(), rtol=1e-12)
    np.testing.assert_allclose(tab["se"], np.sqrt(np.diag(post.vcov.to_numpy())), rtol=1e-10)
    ci = post.confint(0.9).to_frame()
    np.testing.assert_allclose(ci[["conf_low", "conf_high"]], tab[["conf_low", "conf_high"]], rtol=1e-12)
    text = repr(ct)
    assert "Est.Error" in text and "l-90% CI" in text and "modelM2" in text


def test_predictions_are_posterior_means(post):
    rows = RUNS.head(6)
    X = np.asarray(post.fixed_design.model_matrix(rows), dtype=float)
    pop = post.predict(rows, re_form="NA")
    np.testing.assert_allclose(pop, X @ post.fixef.to_numpy(), rtol=1e-10)
    re = post.ranef().set_index("level")["estimate"]
    np.testing.assert_allclose(post.predict(rows) - pop, re.loc[rows["item"].astype(str)].to_numpy(),
                               rtol=1e-8, atol=1e-10)
    draws = post.fixef_draws.to_numpy() @ X.T + post.ranef_draws("item")[rows["item"].astype(str)].to_numpy()
    np.testing.assert_allclose(post.predict(rows, type="response"), special.expit(draws).mean(0), rtol=1e-10)
    np.testing.assert_allclose(post.predict()[:6], post.predict(rows), rtol=1e-12)


def test_prediction_errors(post):
    with pytest.raises(ArgumentError, match="'link' or 'response'"):
        post.predict(RUNS.head(2), type="odds")
    new = RUNS.head(2).assign(item="unseen")
    with pytest.raises(evalmix.errors.FormulaError, match="allow_new_levels"):
        post.predict(new)
    np.testing.assert_allclose(post.predict(new, allow_new_levels=True), post.predict(new, re_form="NA"))
    with pytest.raises(DataError, match="remove_data"):
        post.remove_data().predict()
