"""The response distributions of :func:`evalmix.glmmtmb`: log-densities and their first two
derivatives over the linear predictor (logit link), as glmmTMB writes them.

- ``beta`` (glmmTMB's ``beta_family()``): ``y ~ Beta(mu phi, (1 - mu) phi)``, ``0 < y < 1``;
- ``betabinomial`` (``betabinomial()``): ``k | p ~ Binomial(n, p)``, ``p ~ Beta(mu phi, (1 - mu) phi)``;
- ``binomial``: ``k ~ Binomial(n, mu)``.

The log-likelihood counts every constant (``lchoose(n, k)`` included), as ``logLik`` of glmmTMB
does, so AIC and likelihood-ratio tests compare across these fits.  The second derivative is the
observed one (the Laplace approximation of TMB differentiates the log-density itself, not its
expectation).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
from scipy import special

__all__ = ["FAMILIES", "Response", "RowDerivatives", "row_derivatives", "row_terms", "variance"]

#: the families and whether each has a precision parameter phi
FAMILIES: dict[str, bool] = {"beta": True, "betabinomial": True, "binomial": False}


@dataclass(frozen=True)
class Response:
    """The response of one fit: ``y`` (scores in (0, 1)) for the beta family, ``k`` of ``n``
    for the binomial families, and the constant part of each row's log-density."""

    family: str
    y: np.ndarray  # beta: the scores; binomial families: the proportions k / n
    k: np.ndarray
    n: np.ndarray
    const: np.ndarray

    @classmethod
    def beta(cls, y: np.ndarray) -> Response:
        y = np.asarray(y, dtype=float)
        return cls("beta", y, np.zeros_like(y), np.ones_like(y), np.zeros_like(y))

    @classmethod
    def counts(cls, family: str, k: np.ndarray, n: np.ndarray) -> Response:
        k, n = np.asarray(k, dtype=float), np.asarray(n, dtype=float)
        const = special.gammaln(n + 1) - special.gammaln(k + 1) - special.gammaln(n - k + 1)
        with np.errstate(invalid="ignore", divide="ignore"):
            y = np.where(n > 0, k / np.where(n > 0, n, 1.0), 0.0)
        return cls(family, y, k, n, const)


#: below it the trigamma and tetragamma functions are shifted up by the recurrence before the
#: asymptotic series (whose first omitted term is then under 1e-13 of the value)
POLYGAMMA_SHIFT = 10


def _polygamma12(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The trigamma and tetragamma functions of ``x > 0`` (``polygamma(1, x)``, ``polygamma(2,
    x)``) to about 1e-13 relative: SciPy computes them through the Hurwitz zeta function, ten times
    slower, and they are most of the cost of a beta row's derivatives."""
    z = np.array(x, dtype=float)
    s1, s2 = np.zeros_like(z), np.zeros_like(z)
    low = np.flatnonzero(z < POLYGAMMA_SHIFT)
    if low.size:
        # psi1(x) = psi1(x + 1) + 1 / x^2, psi2(x) = psi2(x + 1) - 2 / x^3
        zl = z[low]
        a1, a2 = np.zeros_like(zl), np.zeros_like(zl)
        for _ in range(POLYGAMMA_SHIFT):
            inv = 1.0 / zl
            inv2 = inv * inv
            a1 += inv2
            a2 += inv2 * inv
            zl += 1.0
        z[low], s1[low], s2[low] = zl, a1, a2
    r = 1.0 / z
    r2 = r * r
    # the asymptotic series with the Bernoulli numbers B2..B16
    t1 = r + r2 * (0.5 + r * (1 / 6 + r2 * (-1 / 30 + r2 * (1 / 42 + r2 * (-1 / 30 + r2 * (
        5 / 66 + r2 * (-691 / 2730 + r2 * 7 / 6)))))))
    t2 = -r2 * (1.0 + r * (1.0 + r * (0.5 + r2 * (-1 / 6 + r2 * (1 / 6 + r2 * (-3 / 10 + r2 * (
        5 / 6 + r2 * (-691 / 210))))))))
    return s1 + t1, t2 - 2.0 * s2


def _logit_slopes(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``mu`` and its first two derivatives over ``eta`` (the logit link)."""
    mu = special.expit(eta)
    m1 = mu * (1.0 - mu)  # d mu / d eta
    m2 = m1 * (1.0 - 2.0 * mu)  # d2 mu / d eta2
    return mu, m1, m2


def _binomial_loglik(resp: Response, eta: np.ndarray) -> np.ndarray:
    """``k eta - n log(1 + e^eta)`` (with the constant), written with log_expit so that a large
    ``|eta|`` stays finite."""
    return resp.const + resp.k * special.log_expit(eta) + (resp.n - resp.k) * special.log_expit(-eta)


def _shapes(eta: np.ndarray, log_phi: float) -> tuple[float, np.ndarray, np.ndarray]:
    """``phi`` and the beta shapes ``mu phi`` and ``(1 - mu) phi``, from expit(+-eta) so that
    neither rounds to 0 for a large ``|eta|``."""
    phi = float(np.exp(log_phi))
    return phi, special.expit(eta) * phi, special.expit(-eta) * phi


def _beta_loglik(phi: float, a: np.ndarray, b: np.ndarray, ly: np.ndarray, l1y: np.ndarray) -> np.ndarray:
    """The beta log-density of ``y`` (``ly = log y``, ``l1y = log(1 - y)``) at shapes ``a``, ``b``."""
    return special.gammaln(phi) - special.gammaln(a) - special.gammaln(b) + (a - 1.0) * ly + (b - 1.0) * l1y


def row_terms(resp: Response, eta: np.ndarray, log_phi: float
              ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Each row's log-density, its derivative and its second derivative over ``eta``.

    Examples
    --------
    >>> r = Response.counts("binomial", np.array([3.0]), np.array([10.0]))
    >>> ll, d1, d2 = row_terms(r, np.array([0.0]), 0.0)
    >>> round(float(ll[0]), 4), float(d1[0]), float(d2[0])
    (-2.144, -2.0, -2.5)
    """
    mu, m1, m2 = _logit_slopes(eta)
    if resp.family == "binomial":
        return _binomial_loglik(resp, eta), resp.k - resp.n * mu, -resp.n * m1
    phi, a, b = _shapes(eta, log_phi)
    if resp.family == "beta":
        ly, l1y = np.log(resp.y), np.log1p(-resp.y)
        ll = _beta_loglik(phi, a, b, ly, l1y)
        g = phi * (ly - l1y - special.digamma(a) + special.digamma(b))  # d ll / d mu
        h = -phi * phi * (_polygamma12(a)[0] + _polygamma12(b)[0])  # d2 ll / d mu2
    else:  # betabinomial
        ll, g, h = _betabinomial(resp, eta, a, b, phi)
    return ll, g * m1, h * m1 * m1 + g * m2


#: the largest number of trials summed term by term (beyond it, log-gamma differences)
SUM_TRIALS_MAX = 500


def _betabinomial_gammaln(resp: Response, a: np.ndarray, b: np.ndarray, phi: float) -> np.ndarray:
    """The beta-binomial log-density through log-gamma differences (counts beyond
    :data:`SUM_TRIALS_MAX`)."""
    k, n = resp.k, resp.n
    return (resp.const + special.gammaln(k + a) + special.gammaln(n - k + b) - special.gammaln(n + phi)
            - special.gammaln(a) - special.gammaln(b) + special.gammaln(phi))


def _ratio_logs(j: int, on_a: np.ndarray, on_b: np.ndarray, on_n: np.ndarray, a: np.ndarray, b: np.ndarray,
                phi: float) -> np.ndarray:
    """Term ``j`` of the beta-binomial log-density's sums beyond the binomial limit:
    ``log1p(j / a)`` for rows with more than ``j`` successes, ``log1p(j / b)`` for failures, less
    ``log1p(j / phi)`` for trials."""
    return (np.where(on_a, np.log1p(j / a), 0.0) + np.where(on_b, np.log1p(j / b), 0.0)
            - np.where(on_n, np.log1p(j / phi), 0.0))


def _betabinomial(resp: Response, eta: np.ndarray, a: np.ndarray, b: np.ndarray, phi: float
                  ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The beta-binomial log-density and its derivatives over ``mu``.

    ``lgamma(k + a) - lgamma(a)`` loses every digit when ``a`` is large (a precision that goes to
    the binomial limit), so with whole counts it is summed as ``sum_{j<k} log(a + j)``, written
    ``k log(a) + sum log1p(j / a)``: the ``k log mu + (n - k) log(1 - mu)`` of the binomial limit
    then stands apart from small corrections.
    """
    k, n = resp.k, resp.n
    big = int(n.max()) if n.size else 0
    if big > SUM_TRIALS_MAX:
        ll = _betabinomial_gammaln(resp, a, b, phi)
        g = phi * (special.digamma(k + a) - special.digamma(n - k + b)
                   - special.digamma(a) + special.digamma(b))
        h = phi * phi * (_polygamma12(k + a)[0] + _polygamma12(n - k + b)[0]
                         - _polygamma12(a)[0] - _polygamma12(b)[0])
        return ll, g, h
    ll = _binomial_loglik(resp, eta)
    sa, sb = np.zeros_like(a), np.zeros_like(b)  # sum 1 / (a + j), sum 1 / (b + j)
    qa, qb = np.zeros_like(a), np.zeros_like(b)  # sum 1 / (a + j)^2, ...
    fail = n - k
    for j in range(1, big):
        on_a, on_b, on_n = k > j, fail > j, n > j
        ll += _ratio_logs(j, on_a, on_b, on_n, a, b, phi)
    for j in range(big):
        on_a, on_b = k > j, fail > j
        ra, rb = np.where(on_a, 1.0 / (a + j), 0.0), np.where(on_b, 1.0 / (b + j), 0.0)
        sa += ra
        sb += rb
        qa += ra * ra
        qb += rb * rb
    return ll, phi * (sa - sb), -phi * phi * (qa + qb)


class RowDerivatives(NamedTuple):
    """Each row's log-density ``ll`` with its first three derivatives over ``eta`` (``d1``, ``d2``,
    ``d3``) and the derivatives of ``ll``, ``d1`` and ``d2`` over ``log phi`` (zero for the binomial):
    what the exact gradient of the Laplace objective needs."""

    ll: np.ndarray
    d1: np.ndarray
    d2: np.ndarray
    d3: np.ndarray
    ll_phi: np.ndarray
    d1_phi: np.ndarray
    d2_phi: np.ndarray


def row_derivatives(resp: Response, eta: np.ndarray, log_phi: float) -> RowDerivatives:
    """The derivatives of each row's log-density that the exact Laplace gradient needs.

    The family gives the derivatives over ``mu`` (``g``, ``h``, ``t``: first to third; ``g_phi``,
    ``h_phi``: those of ``g`` and ``h`` over ``log phi``) and the chain rule through the logit link
    gives them over ``eta``.

    Examples
    --------
    >>> r = Response.counts("binomial", np.array([3.0]), np.array([10.0]))
    >>> d = row_derivatives(r, np.array([0.0]), 0.0)
    >>> float(d.d1[0]), float(d.d2[0]), float(d.d3[0])
    (-2.0, -2.5, -0.0)
    """
    mu, m1, m2 = _logit_slopes(eta)
    m3 = m1 * (1.0 - 6.0 * m1)  # d3 mu / d eta3
    zero = np.zeros_like(eta)
    if resp.family == "binomial":
        return RowDerivatives(_binomial_loglik(resp, eta), resp.k - resp.n * mu, -resp.n * m1, -resp.n * m2,
                              zero, zero, zero)
    phi, a, b = _shapes(eta, log_phi)
    if resp.family == "beta":
        ly, l1y = np.log(resp.y), np.log1p(-resp.y)
        dg_a, dg_b = special.digamma(a), special.digamma(b)
        (p1a, p2a), (p1b, p2b) = _polygamma12(a), _polygamma12(b)
        ll = _beta_loglik(phi, a, b, ly, l1y)
        g = phi * (ly - l1y - dg_a + dg_b)
        h = -phi * phi * (p1a + p1b)
        t = -phi**3 * (p2a - p2b)
        ll_phi = phi * special.digamma(phi) - a * dg_a - b * dg_b + a * ly + b * l1y
        g_phi = g - phi * (a * p1a - b * p1b)
        h_phi = 2.0 * h - phi * phi * (a * p2a + b * p2b)
    else:
        ll, g, h, t, ll_phi, g_phi, h_phi = _betabinomial_derivatives(resp, eta, a, b, phi)
    return RowDerivatives(ll, g * m1, h * m1 * m1 + g * m2, t * m1**3 + 3.0 * h * m1 * m2 + g * m3,
                          ll_phi, g_phi * m1, h_phi * m1 * m1 + g_phi * m2)


def _betabinomial_derivatives(resp: Response, eta: np.ndarray, a: np.ndarray, b: np.ndarray,
                              phi: float) -> tuple[np.ndarray, ...]:
    """:func:`_betabinomial` with the third derivative over ``mu`` and the ``log phi``
    derivatives, summed term by term for whole counts as it is (same reason)."""
    k, n = resp.k, resp.n
    fail = n - k
    big = int(n.max()) if n.size else 0
    if big > SUM_TRIALS_MAX:
        ka, fb = k + a, fail + b
        ll = _betabinomial_gammaln(resp, a, b, phi)
        d0 = [special.digamma(x) for x in (ka, fb, a, b)]
        d1, d2 = zip(*(_polygamma12(x) for x in (ka, fb, a, b)))
        g = phi * (d0[0] - d0[1] - d0[2] + d0[3])
        h = phi * phi * (d1[0] + d1[1] - d1[2] - d1[3])
        t = phi**3 * (d2[0] - d2[1] - d2[2] + d2[3])
        ll_phi = (a * d0[0] + b * d0[1] - phi * special.digamma(n + phi) - a * d0[2] - b * d0[3]
                  + phi * special.digamma(phi))
        g_phi = g + phi * (a * d1[0] - b * d1[1] - a * d1[2] + b * d1[3])
        h_phi = 2.0 * h + phi * phi * (a * d2[0] + b * d2[1] - a * d2[2] - b * d2[3])
        return ll, g, h, t, ll_phi, g_phi, h_phi
    ll = _binomial_loglik(resp, eta)
    # power sums over j < k of 1 / (a + j)^p (p = 1, 2, 3), the same over the failures with b,
    # and over j < n of 1 / (phi + j)
    sa, qa, ca = np.zeros_like(a), np.zeros_like(a), np.zeros_like(a)
    sb, qb, cb = np.zeros_like(b), np.zeros_like(b), np.zeros_like(b)
    s_phi = np.zeros_like(a)
    for j in range(big):
        on_a, on_b, on_n = k > j, fail > j, n > j
        if j:
            ll += _ratio_logs(j, on_a, on_b, on_n, a, b, phi)
        ra, rb = np.where(on_a, 1.0 / (a + j), 0.0), np.where(on_b, 1.0 / (b + j), 0.0)
        sa += ra
        sb += rb
        qa += ra * ra
        qb += rb * rb
        ca += ra**3
        cb += rb**3
        s_phi += np.where(on_n, 1.0 / (phi + j), 0.0)
    g = phi * (sa - sb)
    h = -phi * phi * (qa + qb)
    t = 2.0 * phi**3 * (ca - cb)
    ll_phi = a * sa + b * sb - phi * s_phi
    g_phi = g + phi * (b * qb - a * qa)
    h_phi = 2.0 * h + 2.0 * phi * phi * (a * ca + b * cb)
    return ll, g, h, t, ll_phi, g_phi, h_phi


def variance(family: str, mu: np.ndarray, phi: float, n: np.ndarray) -> np.ndarray:
    """Variance of the response on the proportion scale (``y`` or ``k / n``) at mean ``mu``:
    glmmTMB's ``family$variance`` divided by the trials for the binomial families.

    Examples
    --------
    >>> variance("beta", np.array([0.5]), 3.0, np.array([1.0])).tolist()
    [0.0625]
    """
    base = mu * (1.0 - mu)
    if family == "beta":
        return base / (1.0 + phi)
    if family == "binomial":
        return base / n
    return base / n * (1.0 + (n - 1.0) / (phi + 1.0))
