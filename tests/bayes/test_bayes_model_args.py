"""The Bayesian fit takes the ML fit's model arguments: offsets (formula ``offset()`` and
``offset=``), prior weights (also the proportion + weights response), probit and cloglog links.

The model's log-likelihood is checked against an independent NumPy/SciPy computation (the link's
log-probabilities from :mod:`evalmix.mixed.links`) at random points, weights against repeated rows, the
compiled kernel against PyMC where it covers the model (weights) and its refusal where it does not
(offsets, other links: those sample on PyMC's graph); the posterior against the ML fit and the
simulation truth on data sets of 1,800-2,400 rows.
"""

from __future__ import annotations

import importlib.util
import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.stats import norm

# skipped without the bayes extra; pymc itself is imported by the tests that sample, not at
# collection (every test process collects every file)
pytestmark = pytest.mark.skipif(importlib.util.find_spec("pymc") is None, reason="needs pymc (the bayes extra)")

import evalmix  # noqa: E402
from evalmix import bayes  # noqa: E402
from evalmix.bayes.model import build_model  # noqa: E402
from evalmix.core.errors import FitWarning, SamplingWarning  # noqa: E402
from evalmix.mixed.links import log_probabilities  # noqa: E402


def simulate(link: str, seed: int = 1, n_items: int = 150, per: int = 12) -> pd.DataFrame:
    """Items with a random intercept, a two-level factor and an exposure entering as log(expo)."""
    rng = np.random.default_rng(seed)
    item = np.repeat(np.arange(n_items), per)
    n = item.size
    grp = rng.choice(["a", "b"], n)
    expo = rng.uniform(0.5, 2.0, n)
    eta = -0.3 + rng.normal(0, 0.8, n_items)[item] + 0.6 * (grp == "b") + 0.5 * np.log(expo)
    mu = norm.cdf(eta) if link == "probit" else (1 - np.exp(-np.exp(eta)) if link == "cloglog"
                                                 else 1 / (1 + np.exp(-eta)))
    trials = rng.integers(1, 5, n)
    k = rng.binomial(trials, mu)
    y = (rng.random(n) < mu).astype(int)
    return pd.DataFrame({"item": item, "grp": grp, "expo": expo, "half_log_expo": 0.5 * np.log(expo),
                         "y": y, "k": k, "n": trials, "p": k / trials})


CASES = {
    "offset_formula": ("y ~ grp + offset(0.5 * log(expo)) + (1|item)", {}),
    "offset_argument": ("y ~ grp + (1|item)", {"offset": "half_log_expo"}),
    "offset_both": ("cbind(k, n - k) ~ grp + offset(0.25 * log(expo)) + (1|item)",
                    {"offset": np.full(1800, 0.1)}),
    "weights_binary": ("y ~ grp + (1|item)", {"weights": "n"}),
    "proportion_weights": ("p ~ grp + (1|item)", {"weights": "n"}),
    "probit": ("y ~ grp + (1|item)", {"link": "probit"}),
    "cloglog_counts": ("cbind(k, n - k) ~ grp + (1|item)", {"link": "cloglog"}),
    "probit_offset_weights": ("p ~ grp + offset(0.5 * log(expo)) + (1|item)",
                              {"link": "probit", "weights": "n"}),
}


def _numpy_loglik(bm, values: dict) -> float:
    """sum k log mu + (m - k) log(1 - mu) of the pooled rows, eta built in NumPy."""
    d = bm.design
    X = d.X.dense()
    coef = [j for j in range(X.shape[1]) if j != bm.intercept_col]
    eta = X[:, coef] @ np.atleast_1d(values["b"]) + float(values["Intercept"])
    for p in bm.plans:
        eta = eta + np.asarray(values[f"({p.label})"])[p.term.index] * p.term.Z[:, 0]
    if d.offset is not None:
        eta = eta + d.offset
    lp, lq = log_probabilities(bm.link, eta)
    return float(np.sum(d.k * lp + (d.m - d.k) * lq))


@pytest.mark.parametrize("case", sorted(CASES))
def test_log_likelihood_matches_an_independent_computation(case):
    formula, kw = CASES[case]
    link = kw.get("link", "logit")
    data = simulate(link)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FitWarning)
        bm = build_model(formula, data, parameterization="noncentered", likelihood="softplus", **kw)
    model = bm.model
    names = ["b", "Intercept"] + [f"({p.label})" for p in bm.plans]
    fn = model.compile_fn([model["loglik"]] + [model[n] for n in names], inputs=model.value_vars,
                          on_unused_input="ignore")
    rng = np.random.default_rng(3)
    for scale in (0.2, 1.0, 3.0):
        point = {k: v + rng.normal(size=np.shape(v)) * scale for k, v in model.initial_point().items()}
        out = fn(point)
        ll = float(out[0])
        assert np.isfinite(ll)
        assert ll == pytest.approx(_numpy_loglik(bm, dict(zip(names, out[1:]))), rel=1e-8)
    # the log-likelihood constants of the rows as given add up to R's (lme4's logLik)
    d = bm.design
    assert d.log_binom_rows.sum() == pytest.approx(d.log_binom, abs=1e-9)


def test_prior_weights_equal_repeated_rows():
    data = simulate("logit").head(240)
    rep = data.loc[data.index.repeat(data["n"])].reset_index(drop=True)
    a = build_model("y ~ grp + (1|item)", data, weights="n", parameterization="centered",
                    likelihood="softplus")
    b = build_model("y ~ grp + (1|item)", rep, parameterization="centered", likelihood="softplus")
    pa, pb = a.model.initial_point(), b.model.initial_point()
    assert set(pa) == set(pb)
    fa, fb = a.model.compile_logp(), b.model.compile_logp()
    rng = np.random.default_rng(0)
    for _ in range(3):
        pt = {k: v + rng.normal(size=np.shape(v)) * 0.5 for k, v in pa.items()}
        assert float(fa(pt)) == pytest.approx(float(fb(pt)), rel=1e-10)


def test_the_kernel_covers_weights_and_refuses_offsets_and_other_links():
    from evalmix.bayes.fused import FusedDensity, fused_reason

    data = simulate("logit")
    bm = build_model("p ~ grp + (1|item) + (1|grp:item)", data, weights="n", likelihood="fused")
    assert fused_reason(bm) is None
    density = FusedDensity.from_model(bm)
    # PyMC's log density and gradient in one function (compile_logp's and compile_dlogp's graphs)
    logp_dlogp_fn = bm.model.compile_fn([bm.model.logp(), bm.model.dlogp()])
    x = np.random.default_rng(2).normal(size=density.n_dim) * 0.5
    lp, g = density.logp_dlogp(x)
    point = density.point(x)
    lp_ref, g_ref = logp_dlogp_fn(point)
    sizes = [point[v.name].size for v in bm.model.value_vars]
    gref = dict(zip([v.name for v in bm.model.value_vars], np.split(g_ref, np.cumsum(sizes)[:-1])))
    assert lp == pytest.approx(float(lp_ref), rel=1e-8)
    np.testing.assert_allclose(g, np.concatenate([gref[v] for _, v, _, _ in density.blocks]),
                               rtol=1e-8, atol=1e-8)
    off = build_model("y ~ grp + offset(log(expo)) + (1|item)", data, likelihood="fused")
    assert fused_reason(off) == "an offset"
    pro = build_model("y ~ grp + (1|item)", data, link="cloglog", likelihood="fused")
    assert "cloglog" in fused_reason(pro)  # a stated reason: the sampler takes PyMC's graph
    with pytest.raises(ValueError, match="does not cover this model: an offset"):
        FusedDensity.from_model(off)


def test_bad_link_is_refused():
    with pytest.raises(ValueError, match="link must be one of"):
        bayes.glmer("y ~ grp + (1|item)", simulate("logit"), link="log")


@pytest.mark.slow  # a simulation or a large fit: the second test step
@pytest.mark.parametrize("formula, kw, link", [
    ("y ~ grp + offset(0.5 * log(expo)) + (1|item)", {}, "probit"),
    ("p ~ grp + (1|item)", {"weights": "n", "offset": "half_log_expo"}, "cloglog"),
])
def test_posterior_matches_ml_and_truth_on_a_large_data_set(formula, kw, link):
    """Flat-ish priors and 1,800 rows: posterior means within 0.35 posterior SD of the ML estimates,
    the ML SE within 20% of the posterior SD, and the truth inside the 95% intervals."""
    data = simulate(link, seed=7)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", SamplingWarning)
        warnings.simplefilter("ignore", FitWarning)
        ml = evalmix.glmer(formula, data, link=link, **kw)
        fit = bayes.glmer(formula, data, link=link, draws=400, tune=400, chains=2, rng=5,
                          progressbar=False, **kw)
    assert fit.link == link and f"binomial ({link})" in repr(fit)
    sd = fit.fixef_draws.std()
    np.testing.assert_array_less(np.abs(fit.fixef - ml.fixef), 0.35 * sd)
    np.testing.assert_allclose(np.sqrt(np.diag(ml.vcov)), sd, rtol=0.2)
    tab = fit.to_frame().set_index("parameter")
    for name, truth in (("(Intercept)", -0.3), ("grpb", 0.6), ("sd((Intercept)|item)", 0.8)):
        assert tab.loc[name, "conf_low"] < truth < tab.loc[name, "conf_high"], name
    assert abs(fit.varcorr["sd"].iloc[0] - ml.varcorr["sd"].iloc[0]) < 0.1
    # marginal means on the response scale (offset at its mean, the link inverted) agree too
    e_ml = evalmix.emmeans(ml, "grp", type="response").to_frame()
    e_b = evalmix.emmeans(fit, "grp", type="response").to_frame()
    np.testing.assert_array_less(np.abs(e_b["estimate"] - e_ml["estimate"]), 0.35 * e_b["se"])
    np.testing.assert_allclose(e_b["se"], e_ml["se"], rtol=0.2)
    ll = fit.log_likelihood()
    assert ll.shape == (2, 400, len(data)) and np.isfinite(ll).all()
    ppc = fit.posterior_predictive(rng=1).to_frame()
    assert 0.05 < ppc["ppp"].iloc[0] < 0.95


def test_r_formula_features_reach_the_bayesian_model():
    """Level orders, factor() grouping and slope terms, contrasts: the design is the ML fit's."""
    d = simulate("logit").assign(site=lambda x: x["item"] % 3 + 1)
    bm = build_model("y ~ relevel(grp, ref = 'b') + (1|factor(item)) + (0 + factor(site)|grp)", d,
                     contrasts=None, likelihood="softplus")
    assert bm.fixed_names == ["(Intercept)", 'relevel(grp, ref = "b")a']
    assert [p.label for p in bm.plans] == ["1|item",
                                           "0 + factor(site)1 + factor(site)2 + factor(site)3|grp"]
    s = build_model("y ~ C(grp, contr.sum) + (1|item)", d, likelihood="softplus")
    assert s.fixed_names == ["(Intercept)", "C(grp, contr.sum)1"]
    assert build_model("y ~ grp + (1|item)", d, contrasts={"grp": "contr.sum"},
                       likelihood="softplus").fixed_names == ["(Intercept)", "grp1"]
