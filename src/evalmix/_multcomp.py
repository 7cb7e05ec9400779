"""Multiplicity adjustments for families of z statistics, as emmeans computes them with df = Inf.

Each family (one ``by`` group of contrasts) is adjusted on its own.  The methods and their
critical values follow emmeans:

- ``holm``, ``BH``, ``bonferroni``, ``sidak``: the usual p-value adjustments; intervals of the
  step-wise methods (Holm, BH) fall back to Bonferroni critical values, since no interval matches them.
- ``tukey``: studentized range with as many means as levels, for pairwise families only;
- ``dunnettx``: emmeans' approximation of Dunnett's distribution, a (k - 1)/k : 1/k mixture of the
  Tukey distribution (with ``(1 + sqrt(1 + 8 k)) / 2`` means) and the Sidak bound, k = number of
  contrasts;
- ``mvt``: the exact simultaneous probability under the contrasts' joint normal distribution.

The multivariate normal probability of the symmetric box ``max_i |Z_i| <= t`` is computed with a
spherical-radial decomposition: with ``Z = A u`` (``u`` standard normal of the covariance's rank
``r``), ``P(t) = E_v[F_chi2(r)((t / max_i |(A v)_i|)^2)]`` over uniformly distributed directions
``v``.  The integrand is continuous in ``v``, so a scrambled Sobol set of directions converges fast,
and singular correlation matrices (all pairwise differences of k means have rank k - 1) need no
special care.  The direction set is seeded, so results are deterministic.
"""

from __future__ import annotations

import numpy as np
from scipy import optimize, special, stats
from scipy.stats import qmc

__all__ = ["ADJUST_METHODS", "adjust_family", "mvn_box_probability", "mvn_box_quantile"]

ADJUST_METHODS = ("holm", "bonferroni", "sidak", "BH", "tukey", "dunnettx", "mvt", "none")
_P_ADJUST = {"holm", "bonferroni", "BH", "none"}
_ALIASES = {"fdr": "BH", "bh": "BH"}

# 2^14 scrambled Sobol directions: absolute error of the box probability about 1e-4 in 7
# dimensions (R's mvtnorm integrates to 1e-3).
_N_DIRECTIONS = 2**14
_SEED = 20240601


def normalise_method(adjust: str) -> str:
    """Canonical name of an adjustment method; raises ValueError naming the valid ones."""
    name = _ALIASES.get(str(adjust).lower(), str(adjust))
    for meth in ADJUST_METHODS:
        if name.lower() == meth.lower():
            return meth
    raise ValueError(f"adjust={adjust!r} is not one of {', '.join(ADJUST_METHODS)}")


# --- p-value adjustments of stats::p.adjust -------------------------------------------------------

def _holm(p: np.ndarray, n: int | None = None) -> np.ndarray:
    """Holm's step-down adjustment of ``p`` for a family of ``n >= len(p)`` tests."""
    m = len(p)
    n = m if n is None else n
    order = np.argsort(p, kind="stable")
    adj = np.minimum(1.0, np.maximum.accumulate((n - np.arange(m)) * p[order]))
    out = np.empty(m)
    out[order] = adj
    return out


def _bh(p: np.ndarray, n: int | None = None) -> np.ndarray:
    """Benjamini-Hochberg adjustment of ``p`` for a family of ``n >= len(p)`` tests."""
    m = len(p)
    n = m if n is None else n
    order = np.argsort(p, kind="stable")[::-1]
    ranks = m - np.arange(m)  # rank of each p in decreasing order
    adj = np.minimum(1.0, np.minimum.accumulate(n / ranks * p[order]))
    out = np.empty(m)
    out[order] = adj
    return out


# --- distributions with df = Inf ------------------------------------------------------------------

def ptukey_upper(q: np.ndarray | float, nmeans: float) -> np.ndarray:
    """Upper tail of the studentized range with infinite df (``ptukey(q, nmeans, Inf, FALSE)``)."""
    q = np.atleast_1d(np.asarray(q, dtype=float))
    return np.array([stats.studentized_range.sf(v, nmeans, np.inf) if v > 0 else 1.0 for v in q])


def qtukey(level: float, nmeans: float) -> float:
    """Quantile of the studentized range with infinite df."""
    f = lambda x: 1.0 - ptukey_upper(x, nmeans)[0] - level  # noqa: E731
    hi = 2.0
    while f(hi) < 0:
        hi *= 2
    return optimize.brentq(f, 1e-8, hi, xtol=1e-10)


def pdunnx(x: np.ndarray | float, k: int) -> np.ndarray:
    """emmeans' approximate Dunnett CDF of ``max |Z_i|`` over k contrasts (df = Inf)."""
    x = np.atleast_1d(np.asarray(x, dtype=float))
    nmeans = (1 + np.sqrt(1 + 8 * k)) / 2
    tukey = 1.0 - ptukey_upper(np.sqrt(2) * x, nmeans)
    sidak = (stats.chi2.cdf(x**2, 1)) ** k
    twt = (k - 1) / k
    return twt * tukey + (1 - twt) * sidak


def qdunnx(level: float, k: int) -> float:
    """Quantile of emmeans' approximate Dunnett distribution (df = Inf)."""
    if k < 1.005:
        return float(stats.norm.ppf(1 - 0.5 * (1 - level)))
    xtuk = qtukey(level, (1 + np.sqrt(1 + 8 * k)) / 2) / np.sqrt(2)
    xsid = float(np.sqrt(stats.chi2.ppf(level ** (1 / k), 1)))
    lo, hi = min(xtuk, xsid), max(xtuk, xsid)
    if hi - lo < 1e-12:
        return lo
    f = lambda x: pdunnx(x, k)[0] - level  # noqa: E731
    return optimize.brentq(f, lo, hi, xtol=1e-10)


def _box_factor(corr: np.ndarray) -> np.ndarray:
    """A with ``corr = A A'`` and as many columns as the rank of ``corr``."""
    vals, vecs = np.linalg.eigh((corr + corr.T) / 2)
    keep = vals > 1e-10 * max(vals.max(), 1.0)
    return vecs[:, keep] * np.sqrt(vals[keep])


def _box_radii(corr: np.ndarray, seed: int) -> tuple[np.ndarray, int]:
    """For each direction v of a Sobol set, ``1 / max_i |(A v)_i|`` and the rank r."""
    a = _box_factor(corr)
    r = a.shape[1]
    pts = qmc.Sobol(r, scramble=True, rng=np.random.default_rng(seed)).random(_N_DIRECTIONS)
    u = special.ndtri(np.clip(pts, 1e-15, 1 - 1e-15))
    u /= np.linalg.norm(u, axis=1, keepdims=True)
    return 1.0 / np.abs(u @ a.T).max(axis=1), r


class _Box:
    """``P(max_i |Z_i| <= t)`` for one correlation matrix, its directions drawn once."""

    def __init__(self, corr: np.ndarray, seed: int = _SEED):
        self.g, self.r = _box_radii(np.asarray(corr, dtype=float), seed)

    def probability(self, t: np.ndarray | float) -> np.ndarray:
        t = np.atleast_1d(np.asarray(t, dtype=float))
        # chi-square(r) CDF of the squared radius to the box boundary, averaged over directions
        return special.gammainc(self.r / 2, (np.outer(t, self.g) ** 2) / 2).mean(axis=1)

    def quantile(self, level: float) -> float:
        f = lambda t: self.probability(t)[0] - level  # noqa: E731
        hi = 4.0
        while f(hi) < 0:
            hi *= 2
        return optimize.brentq(f, 1e-8, hi, xtol=1e-10)


def mvn_box_probability(t: np.ndarray | float, corr: np.ndarray, seed: int = _SEED) -> np.ndarray:
    """``P(max_i |Z_i| <= t)`` for ``Z ~ N(0, corr)`` (corr may be singular).

    Examples
    --------
    >>> round(float(mvn_box_probability(1.959964, np.eye(1))[0]), 4)
    0.95
    """
    return _Box(corr, seed).probability(t)


def mvn_box_quantile(level: float, corr: np.ndarray, seed: int = _SEED) -> float:
    """The equicoordinate two-sided quantile: t with ``P(max_i |Z_i| <= t) = level``."""
    return _Box(corr, seed).quantile(level)


# --- one family -----------------------------------------------------------------------------------

def adjust_family(z: np.ndarray, method: str, *, conf_level: float, n_means: int | None,
                  pairwise: bool, corr: np.ndarray | None = None
                  ) -> tuple[np.ndarray, float, str, str]:
    """Adjusted two-sided p-values and the interval critical value for one family of z statistics.

    Parameters
    ----------
    z : array
        The family's z statistics.
    method : str
        One of :data:`ADJUST_METHODS`.
    conf_level : float
        Family-wise confidence level of the intervals.
    n_means : int, optional
        Number of means compared (the Tukey family size).
    pairwise : bool
        Whether the family is one set of pairwise comparisons (``tukey`` needs it; otherwise it
        becomes ``sidak``, as in emmeans).
    corr : array, optional
        Correlation matrix of the contrasts (``mvt`` needs it).

    Returns
    -------
    p, crit, p_method, ci_method : adjusted p-values, the critical value, and the methods used for
    the p-values and the intervals.
    """
    method = normalise_method(method)
    z_all = np.asarray(z, dtype=float)
    # Non-estimable contrasts (NaN) still count in the family size, as in emmeans 1.8
    k = len(z_all)
    finite = np.isfinite(z_all)
    z = z_all[finite]
    if k == 1:  # a single test is never adjusted (emmeans does the same)
        method = "none"
    if method == "tukey" and not pairwise:
        method = "sidak"
    absz = np.abs(z)
    p_raw = 2 * stats.norm.sf(absz)
    alpha = 1 - conf_level
    if method == "none":
        p, crit = p_raw, stats.norm.isf(alpha / 2)
    elif method == "holm":
        p, crit = _holm(p_raw, k), stats.norm.isf(alpha / k / 2)
    elif method == "BH":
        p, crit = _bh(p_raw, k), stats.norm.isf(alpha / k / 2)
    elif method == "bonferroni":
        p, crit = np.minimum(1.0, k * p_raw), stats.norm.isf(alpha / k / 2)
    elif method == "sidak":
        p = -np.expm1(k * np.log1p(-p_raw))
        crit = stats.norm.isf((1 - conf_level ** (1 / k)) / 2)
    elif method == "tukey":
        if n_means is None:
            raise ValueError("the Tukey adjustment needs the number of means compared")
        p = ptukey_upper(np.sqrt(2) * absz, n_means)
        crit = qtukey(conf_level, n_means) / np.sqrt(2)
    elif method == "dunnettx":
        p = 1.0 - pdunnx(absz, k)
        crit = qdunnx(conf_level, k)
    else:  # mvt
        if corr is None:
            raise ValueError("the mvt adjustment needs the contrasts' correlation matrix")
        corr = np.asarray(corr, dtype=float)[np.ix_(finite, finite)]
        box = _Box(corr) if len(z) else None
        p = 1.0 - box.probability(absz) if box else np.array([])
        crit = box.quantile(conf_level) if box else np.nan
    p_all = np.full(k, np.nan)
    p_all[finite] = np.clip(p, 0.0, 1.0)
    ci_method = "bonferroni" if method in ("holm", "BH") else method
    return p_all, float(crit), method, ci_method
