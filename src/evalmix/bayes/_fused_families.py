"""Row passes of the compiled kernel for the likelihoods of the other twins, for numba.

:func:`evalmix.bayes._fused_kernel.log_density` evaluates the linear predictor's parts (the
fixed cells ``fx``, the effects ``u`` of the random terms) and their priors; for a model of
:func:`evalmix.bayes.families.build_family_model` (or any model with a correlated term, whose
effects :mod:`evalmix.bayes._fused_terms` adds to each row's eta) it then calls
:func:`family_loglik`, the kernel's one dispatch of row-by-row likelihoods, which adds the
likelihood of the rows and the family's own parameters, with the parameterisation, priors and
transforms of the PyMC model:

==================  ===================================================  ==========================
family (code)       rows                                                 own parameters (sampled)
==================  ===================================================  ==========================
binomial (0)        ``k eta - m log(1 + e^eta)`` (constants left out)    none
gaussian (1)        ``Normal(y_s | eta, sigma)`` (standardised y)        ``log sigma``
beta (2)            ``Beta(y | mu phi, (1 - mu) phi)``, ``mu = plogis(eta)``  ``log phi``
betabinomial (3)    ``BetaBinomial(k | n, mu phi, (1 - mu) phi)``        ``log phi``
cumulative (4, 5)   ``P(Y <= j) = F(theta_c_j - eta)``, F logistic (4)   ``thresholds_c`` under
                    or normal (5)                                        PyMC's ordered transform
==================  ===================================================  ==========================

``sigma`` and ``phi`` carry their prior and the log transform's Jacobian; the thresholds carry
PyMC's ordered transform (``theta_0 = x_0``, ``theta_j = theta_{j-1} + e^{x_j}``, Jacobian
``sum x_{1:}``) and their prior at the reported thresholds ``theta_c + xbar b`` (whose gradient
reaches the fixed effects).  The stable forms: the cumulative logit as
``log(F(b) - F(a)) = -softplus(-b) - softplus(a) + log1p(-e^(a - b))``; the probit as PyMC's
``normal_lcdf`` / ``log_diff_normal_cdf`` (``erfcx`` in the tails).

numba caches the kernel's callbacks on :mod:`evalmix.bayes._fused_cabi`'s source: a change here
needs ``_fused_cabi.KERNEL_REVISION`` raised too.
"""

from __future__ import annotations

import math

import numpy as np

from ._fused_priors import log_scale_prior, njit, prior_logp

BINOMIAL_LOGIT, GAUSSIAN, BETA, BETABINOMIAL, CUMULATIVE_LOGIT, CUMULATIVE_PROBIT = 0, 1, 2, 3, 4, 5
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)
_SQRT1_2 = math.sqrt(0.5)
_LOG_HALF = math.log(0.5)
_INV_SQRT_PI = 1.0 / math.sqrt(math.pi)


@njit(cache=True, nogil=True)
def digamma(x):
    """psi(x) for x > 0: the recurrence up to 10, then the asymptotic series (error < 1e-14)."""
    r = 0.0
    while x < 10.0:
        r -= 1.0 / x
        x += 1.0
    f = 1.0 / (x * x)
    return r + math.log(x) - 0.5 / x - f * (1.0 / 12 - f * (1.0 / 120 - f * (1.0 / 252 - f * (
        1.0 / 240 - f * (1.0 / 132 - f * 691.0 / 32760)))))


@njit(cache=True, nogil=True)
def erfcx(t):
    """``e^(t^2) erfc(t)`` for t >= 0 (the asymptotic series past 25, where erfc underflows)."""
    if t < 25.0:
        return math.exp(t * t) * math.erfc(t)
    f = 1.0 / (2.0 * t * t)
    return _INV_SQRT_PI / t * (1.0 - f * (1.0 - 3.0 * f * (1.0 - 5.0 * f * (1.0 - 7.0 * f * (
        1.0 - 9.0 * f * (1.0 - 11.0 * f))))))


@njit(cache=True, nogil=True)
def log_ndtr(z):
    """``log Phi(z)``, as PyMC's ``normal_lcdf``."""
    if z < -1.0:
        return math.log(erfcx(-z * _SQRT1_2) / 2.0) - z * z / 2.0
    return math.log1p(-math.erfc(z * _SQRT1_2) / 2.0)


@njit(cache=True, nogil=True)
def log_diff_ndtr(x, y):
    """``log(Phi(x) - Phi(y))`` for x > y, as PyMC's ``log_diff_normal_cdf``."""
    xs, ys = x * _SQRT1_2, y * _SQRT1_2
    if ys > 0.0:
        return _LOG_HALF - ys * ys + math.log(erfcx(ys) - math.exp(ys * ys - xs * xs) * erfcx(xs))
    if xs < 0.0:
        return _LOG_HALF - xs * xs + math.log(erfcx(-xs) - math.exp(xs * xs - ys * ys) * erfcx(-ys))
    return _LOG_HALF + math.log(math.erf(xs) - math.erf(ys))


@njit(cache=True, nogil=True, inline="always")
def _softplus(v):
    return max(v, 0.0) + math.log1p(math.exp(-abs(v)))


@njit(cache=True, nogil=True, inline="always")
def _plogis(v):
    """``(F(v), 1 - F(v))`` of the logistic, each without cancellation."""
    e = math.exp(-abs(v))
    q = 1.0 / (1.0 + e)
    if v >= 0.0:
        return q, e * q
    return e * q, q


# _eta and _scatter are left to LLVM's inliner: numba's own inlining (inline="always") of these
# array-taking helpers cost about 60 ns a row (12 us against 0.6 us a Gaussian pass of 180 rows)
@njit(cache=True, nogil=True)
def _eta(i, cell, idx, Z, fx, u, start, ce):
    v = fx[cell[i]]
    for t in range(start.shape[0]):
        v += u[start[t] + idx[t, i]] * Z[t, i]
    if ce.shape[0] > 0:  # the correlated terms' part
        v += ce[i]
    return v


@njit(cache=True, nogil=True)
def _scatter(i, d, cell, idx, Z, start, gcell, gu, gce):
    gcell[cell[i]] += d
    for t in range(start.shape[0]):
        gu[start[t] + idx[t, i]] += d * Z[t, i]
    if gce.shape[0] > 0:
        gce[i] += d


@njit(cache=True, nogil=True)
def family_loglik(fam, x, g, o_f, nf, fpri, fc, o_th, p, y, m, cell, idx, Z, fx, u, start, gcell, gu, ce,
                  gce):
    """The rows' log-likelihood and the family parameters' priors (module notes); adds the
    derivative in eta to the cells (``gcell``) and levels (``gu``), and writes the family
    parameters' (and, through the thresholds' prior, the fixed effects') gradient into ``g``.

    ``y``: the response (standardised scores, scores, successes or rating codes); ``m``: the
    trials; ``fpri[0]``: the prior of sigma, phi or each threshold; ``fc[0]``: a constant of the
    rows (the beta-binomial's log binomial coefficients), ``fc[1:1 + p]``: ``T' xbar``, the
    thresholds' shift per fixed coordinate.  ``ce``: each row's part of eta from the correlated
    terms (empty: none), ``gce``: the derivative in it (added to, empty with ``ce``).
    ``fam == 0``: the binomial-logit rows (the kernel's own passes cover the models without
    correlated terms).
    """
    n = y.shape[0]
    lp = fc[0]
    if fam == BINOMIAL_LOGIT:
        for i in range(n):
            eta = _eta(i, cell, idx, Z, fx, u, start, ce)
            e = math.exp(-abs(eta))
            q = 1.0 / (1.0 + e)
            lp += y[i] * eta - m[i] * (max(eta, 0.0) + math.log1p(e))
            _scatter(i, y[i] - m[i] * (q if eta > 0.0 else e * q), cell, idx, Z, start, gcell, gu, gce)
        return lp
    if fam == GAUSSIAN:
        v = x[o_f]
        sig, lv, dv = log_scale_prior(fpri[0], v)
        lp += lv
        inv = 1.0 / sig
        ss = 0.0
        for i in range(n):
            r = (y[i] - _eta(i, cell, idx, Z, fx, u, start, ce)) * inv
            ss += r * r
            _scatter(i, r * inv, cell, idx, Z, start, gcell, gu, gce)
        lp -= 0.5 * ss + n * (v + _HALF_LOG_2PI)
        g[o_f] += dv * sig + 1.0 + ss - n
        return lp
    if fam == BETA or fam == BETABINOMIAL:
        phi, lv, dv = log_scale_prior(fpri[0], x[o_f])
        lp += lv
        lg_phi, psi_phi = math.lgamma(phi), digamma(phi)
        gphi = 0.0
        for i in range(n):
            mu, q = _plogis(_eta(i, cell, idx, Z, fx, u, start, ce))
            a, b = mu * phi, q * phi
            if fam == BETA:
                ly, l1y = math.log(y[i]), math.log1p(-y[i])
                lp += (a - 1.0) * ly + (b - 1.0) * l1y - math.lgamma(a) - math.lgamma(b) + lg_phi
                da = ly - digamma(a) + psi_phi
                db = l1y - digamma(b) + psi_phi
            else:
                k, nk = y[i], m[i] - y[i]
                lp += (math.lgamma(k + a) + math.lgamma(nk + b) - math.lgamma(m[i] + phi)
                       - math.lgamma(a) - math.lgamma(b) + lg_phi)
                psi_n = digamma(m[i] + phi)
                da = digamma(k + a) - digamma(a) - psi_n + psi_phi
                db = digamma(nk + b) - digamma(b) - psi_n + psi_phi
            _scatter(i, phi * mu * q * (da - db), cell, idx, Z, start, gcell, gu, gce)
            gphi += mu * da + q * db
        g[o_f] += (dv + gphi) * phi + 1.0
        return lp
    # cumulative: the thresholds from the ordered transform
    K = nf
    cut = np.empty(K)
    cut[0] = x[o_f]
    for j in range(1, K):
        cut[j] = cut[j - 1] + math.exp(x[o_f + j])
        lp += x[o_f + j]  # log-Jacobian
    shift = 0.0
    for j in range(p):
        shift += fc[1 + j] * x[o_th + j]
    gc = np.zeros(K)
    gpr = 0.0
    for j in range(K):
        lv, dv = prior_logp(fpri[0], cut[j] + shift)
        lp += lv
        gc[j] += dv
        gpr += dv
    for j in range(p):
        g[o_th + j] += fc[1 + j] * gpr
    for i in range(n):
        eta = _eta(i, cell, idx, Z, fx, u, start, ce)
        c = int(y[i])
        if fam == CUMULATIVE_LOGIT:
            if c == 0:
                hi = cut[0] - eta
                lp -= _softplus(-hi)
                db, da = _plogis(hi)[1], 0.0
            elif c == K:
                lo = cut[K - 1] - eta
                lp -= _softplus(lo)
                db, da = 0.0, -_plogis(lo)[0]
            else:
                hi, lo = cut[c] - eta, cut[c - 1] - eta
                d = hi - lo
                if d <= 0.0:  # thresholds equal in floating point: probability zero
                    return -np.inf
                # log(1 - e^-d), accurate for small and large d; its derivative 1 / (e^d - 1)
                lp += -_softplus(-hi) - _softplus(lo) + (
                    math.log(-math.expm1(-d)) if d < 0.6931471805599453 else math.log1p(-math.exp(-d)))
                w = 1.0 / math.expm1(d) if d < 700.0 else 0.0
                db = _plogis(hi)[1] + w
                da = -_plogis(lo)[0] - w
        else:
            if c == 0:
                hi = cut[0] - eta
                lv = log_ndtr(hi)
                db, da = math.exp(-0.5 * hi * hi - _HALF_LOG_2PI - lv), 0.0
            elif c == K:
                lo = cut[K - 1] - eta
                lv = log_ndtr(-lo)
                db, da = 0.0, -math.exp(-0.5 * lo * lo - _HALF_LOG_2PI - lv)
            else:
                hi, lo = cut[c] - eta, cut[c - 1] - eta
                if hi <= lo:
                    return -np.inf
                lv = log_diff_ndtr(hi, lo)
                db = math.exp(-0.5 * hi * hi - _HALF_LOG_2PI - lv)
                da = -math.exp(-0.5 * lo * lo - _HALF_LOG_2PI - lv)
            lp += lv
        if c < K:
            gc[c] += db
        if c > 0:
            gc[c - 1] += da
        _scatter(i, -(db + da), cell, idx, Z, start, gcell, gu, gce)
    # back through the ordered transform: d theta_j / d x_0 = 1, d theta_j / d x_i = e^{x_i} (j >= i)
    tail = 0.0
    for j in range(K - 1, 0, -1):
        tail += gc[j]
        g[o_f + j] += tail * math.exp(x[o_f + j]) + 1.0
    g[o_f] += tail + gc[0]
    return lp
