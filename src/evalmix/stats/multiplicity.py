"""Multiple-comparison adjustment: R's ``p.adjust`` and emmeans' families of z statistics.

This module owns every multiplicity adjustment in evalmix.  :func:`adjust_pvalues` adjusts a vector
of p-values as R's ``p.adjust`` does; :func:`adjust_family` adjusts one family of z statistics (one
``by`` group of contrasts) and gives the matching interval critical value, as emmeans does with
df = Inf.  Every method is available in both places where it makes sense:

- ``holm``, ``hochberg``, ``BH``, ``BY``, ``bonferroni``, ``sidak``: p-value adjustments; intervals of
  the step-wise methods fall back to Bonferroni critical values, since no interval matches them
  (emmeans does the same and says so);
- ``tukey``: studentized range with as many means as levels, for pairwise families only;
- ``dunnettx``: emmeans' approximation of Dunnett's distribution, a (k - 1)/k : 1/k mixture of the
  Tukey distribution (with ``(1 + sqrt(1 + 8 k)) / 2`` means) and the Sidak bound, k = number of
  contrasts;
- ``mvt``: the exact simultaneous probability under the contrasts' joint normal distribution.

The last three need the z statistics and their correlation, so only :func:`adjust_family` (and
:func:`evalmix.contrast`) offers them.

The multivariate normal probability of the symmetric box ``max_i |Z_i| <= t`` is computed with a
spherical-radial decomposition: with ``Z = A u`` (``u`` standard normal of the covariance's rank
``r``), ``P(t) = E_v[F_chi2(r)((t / max_i |(A v)_i|)^2)]`` over uniformly distributed directions
``v``.  The integrand is continuous in ``v``, so a scrambled Sobol set of directions converges fast,
and singular correlation matrices (all pairwise differences of k means have rank k - 1) need no
special care.  The direction set is seeded, so results are deterministic.  A multivariate t with
``df`` degrees of freedom (emmeans' ``mvt`` with finite df) divides ``Z`` by an independent
``sqrt(chi2_df / df)``: the squared radius over ``r`` is then F(r, df) distributed, so the same
directions give its box probability exactly, with the F CDF in place of the chi-square one.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import lru_cache
from typing import overload

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import optimize, special, stats
from scipy.stats import qmc

from ..core.methods import ADJUST_METHODS, P_ADJUST_METHODS

__all__ = [
    "ADJUST_METHODS", "P_ADJUST_METHODS", "adjust_family", "adjust_pvalues", "family_methods",
    "mvn_box_probability", "mvn_box_quantile", "normalise_method", "p_adjust_critical", "pdunnx",
    "ptukey_upper", "qdunnx", "qtukey", "studentized_range_cdf", "studentized_range_quantile", "unique_within",
]


_ALIASES = {
    "fdr": "BH", "fdr_bh": "BH", "benjamini-hochberg": "BH", "fdr_by": "BY",
    "benjamini-yekutieli": "BY", "simes-hochberg": "hochberg",
}

# 2^14 scrambled Sobol directions: absolute error of the box probability about 1e-4 in 7
# dimensions (R's mvtnorm integrates to 1e-3).
_N_DIRECTIONS = 2**14
_SEED = 20240601


def normalise_method(adjust: str) -> str:
    """Canonical name of an adjustment method; raises ValueError naming the valid ones.

    Examples
    --------
    >>> normalise_method("fdr_bh"), normalise_method("Holm")
    ('BH', 'holm')
    """
    name = _ALIASES.get(str(adjust).lower(), str(adjust))
    for meth in ADJUST_METHODS:
        if name.lower() == meth.lower():
            return meth
    raise ValueError(f"adjust={adjust!r} is not one of {', '.join(ADJUST_METHODS)}")


@overload
def adjust_pvalues(p: pd.Series, method: str = "holm", n: int | None = None) -> pd.Series: ...
@overload
def adjust_pvalues(p: ArrayLike, method: str = "holm", n: int | None = None) -> np.ndarray: ...
def adjust_pvalues(p: ArrayLike | pd.Series, method: str = "holm", n: int | None = None
                   ) -> np.ndarray | pd.Series:
    """Adjust p-values for multiple comparisons.

    Parameters
    ----------
    p : array_like or Series
        Raw p-values; NaN entries are left as NaN and not counted (as R's ``p.adjust``).
    method : {"holm", "hochberg", "BH", "BY", "bonferroni", "sidak", "none"}
        Family-wise error control (``bonferroni``, ``sidak``, ``holm``, ``hochberg``) or false
        discovery rate control (``BH`` = Benjamini-Hochberg, ``BY`` = Benjamini-Yekutieli).
        statsmodels' names ``fdr_bh``, ``fdr_by`` and ``simes-hochberg`` are accepted too.
        ``tukey``, ``dunnettx`` and ``mvt`` need z statistics: use :func:`evalmix.contrast`.
    n : int, optional
        Size of the family when it holds more tests than the non-missing ``p`` (R's ``n``
        argument); default: the number of non-missing p-values.

    Returns
    -------
    ndarray or Series
        Adjusted p-values in the input order (a Series keeps its index).

    Notes
    -----
    Equal to ``statsmodels.stats.multitest.multipletests(p, method=...)[1]`` and to R's
    ``p.adjust(p, method)`` (R has no Šidák).  Holm and Hochberg are step-down and step-up
    versions of Bonferroni; BH controls the expected share of false discoveries and is valid under
    independence or positive dependence, BY under any dependence.

    Examples
    --------
    >>> from evalmix import adjust_pvalues
    >>> adjust_pvalues([0.01, 0.02, 0.03, 0.04], "holm").round(3).tolist()
    [0.04, 0.06, 0.06, 0.06]
    >>> adjust_pvalues([0.01, 0.02, 0.03, 0.04], "BH").round(3).tolist()
    [0.04, 0.04, 0.04, 0.04]
    >>> adjust_pvalues([0.01, 0.04], "holm", n=3).round(3).tolist()
    [0.03, 0.08]
    """
    try:
        key = normalise_method(method)
    except ValueError:
        raise ValueError(f"method={method!r} is not one of {', '.join(P_ADJUST_METHODS)}") from None
    if key not in P_ADJUST_METHODS:
        raise ValueError(f"adjust={method!r} needs z statistics and their correlation, not p-values "
                         f"alone: use evalmix.contrast(..., adjust={key!r}); for p-values use one of "
                         f"{', '.join(P_ADJUST_METHODS)}")
    index = p.index if isinstance(p, pd.Series) else None
    arr = np.asarray(p, dtype=float)
    shape = arr.shape
    flat = arr.ravel()
    if np.any((flat < 0) | (flat > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    out = np.full(flat.shape, np.nan)
    ok = ~np.isnan(flat)
    m = int(ok.sum())
    if n is not None and n < m:
        raise ValueError(f"n={n} is smaller than the number of p-values ({m})")
    out[ok] = _adjust(flat[ok], key, m if n is None else int(n))
    adjusted = out.reshape(shape)
    return (pd.Series(adjusted, index=index, name=getattr(p, "name", None)) if index is not None
            else adjusted)


def _adjust(p: np.ndarray, method: str, n: int) -> np.ndarray:
    """``p.adjust(p, method, n)`` for the non-missing p-values of a family of ``n`` tests."""
    m = p.size
    if m == 0 or method == "none":
        return p.copy()
    if method == "bonferroni":
        return np.minimum(1.0, p * n)
    if method == "sidak":
        with np.errstate(divide="ignore"):  # p = 1 -> log1p(-1) = -inf -> adjusted 1
            return -np.expm1(n * np.log1p(-p))
    order = np.argsort(p, kind="mergesort")
    ps = p[order]
    rank = np.arange(1, m + 1)
    if method == "holm":
        adj = np.minimum(1.0, np.maximum.accumulate((n - rank + 1) * ps))
    elif method == "hochberg":
        adj = np.minimum(1.0, np.minimum.accumulate(((n - rank + 1) * ps)[::-1])[::-1])
    else:  # BH, BY: step-up from the largest p
        c = np.sum(1.0 / np.arange(1, n + 1)) if method == "BY" else 1.0
        adj = np.minimum(1.0, np.minimum.accumulate((ps * n * c / rank)[::-1])[::-1])
    out = np.empty(m)
    out[order] = adj
    return out


# --- the studentized range with finite df, as R computes it ---------------------------------------
# R's ptukey (Copenhaver and Holland 1988: Gauss-Legendre quadrature over the range, then over the
# chi distribution of the df) and qtukey (secant iterations to 1e-4), vectorised over q and df so
# that a family of contrasts, each with its own Satterthwaite df, costs one pass instead of one
# SciPy integration per row (seconds each).  The nodes are the positive Gauss-Legendre nodes,
# largest first, as R stores them.
_LEG12 = np.polynomial.legendre.leggauss(12)
_LEG16 = np.polynomial.legendre.leggauss(16)


def _wprob(w: np.ndarray, cc: float) -> np.ndarray:
    """R's ``wprob(w, rr = 1, cc)``: P(range of cc standard normals < w), elementwise."""
    nodes, weights = _LEG12
    w = np.asarray(w, dtype=float)
    qsqz = w * 0.5
    pr_w = 2 * special.ndtr(qsqz) - 1.0
    pr_w = np.where(pr_w >= np.exp(-50.0 / cc), pr_w ** cc, 0.0)
    wincr = np.where(w > 3.0, 2, 3)
    binc = (8.0 - qsqz) / wincr
    einsum = np.zeros_like(w)
    for wi in range(3):
        active = wi < wincr
        blb = qsqz + wi * binc
        a = blb + 0.5 * binc
        b = 0.5 * binc
        ac = a[..., None] + b[..., None] * nodes  # every node of the interval
        qexpo = ac * ac
        rinsum = special.ndtr(ac) - special.ndtr(ac - w[..., None])
        use = (qexpo <= 60.0) & (rinsum >= np.exp(-30.0 / (cc - 1.0)))
        terms = np.where(use, weights * np.exp(-0.5 * np.minimum(qexpo, 60.0)) * np.abs(rinsum) ** (cc - 1.0), 0.0)
        elsum = terms.sum(axis=-1) * (2.0 * b * cc) / np.sqrt(2 * np.pi)
        einsum += np.where(active, elsum, 0.0)
    pr_w = pr_w + einsum
    out = np.where(pr_w <= np.exp(-30.0), 0.0, np.minimum(pr_w, 1.0))
    return np.where(qsqz >= 8.0, 1.0, out)


def studentized_range_cdf(q: ArrayLike, nmeans: float, df: ArrayLike) -> np.ndarray:
    """P(studentized range of ``nmeans`` means with ``df`` df < q), R's ``ptukey(q, nmeans, df)``
    by R's algorithm, elementwise over ``q`` and ``df`` (broadcast); ``df = inf`` is allowed.

    Examples
    --------
    >>> round(float(studentized_range_cdf(3.5, 4, 20)[0]), 8)  # R: ptukey(3.5, 4, 20)
    0.90504155
    """
    q, df = np.broadcast_arrays(np.atleast_1d(np.asarray(q, dtype=float)),
                                np.atleast_1d(np.asarray(df, dtype=float)))
    out = np.empty(q.shape)
    pos = q > 0
    out[~pos] = 0.0
    large = pos & (df > 25000.0)
    out[large] = _wprob(q[large], nmeans)
    tiny = pos & (df < 2)  # R has no value below 2 df (NaN); SciPy's integration has one
    out[tiny] = stats.studentized_range.cdf(q[tiny], nmeans, df[tiny])
    rest = pos & ~large & ~tiny
    if rest.any():
        out[rest] = _ptukey_df(q[rest], nmeans, df[rest])
    return out


def _ptukey_df(q: np.ndarray, cc: float, df: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln

    nodes, weights = _LEG16
    f2 = df * 0.5
    f2lf = f2 * np.log(df) - df * np.log(2.0) - gammaln(f2)
    f21 = f2 - 1.0
    ff4 = df * 0.25
    ulen = np.select([df <= 100.0, df <= 800.0, df <= 5000.0], [1.0, 0.5, 0.25], 0.125)
    f2lf = f2lf + np.log(ulen)
    ans = np.zeros_like(q)
    running = np.arange(len(q))  # R stops at the first negligible interval
    for i in range(1, 51):
        r = running
        twa1 = (2 * i - 1) * ulen[r]
        u = twa1[:, None] + nodes * ulen[r, None]
        t1 = f2lf[r, None] + f21[r, None] * np.log(u) - u * ff4[r, None]
        use = t1 >= -30.0  # exp(t1) < 9e-14 adds nothing: only the nodes that count are evaluated
        terms = np.zeros(u.shape)
        terms[use] = _wprob((q[r, None] * np.sqrt(u * 0.5))[use], cc) * np.broadcast_to(weights, u.shape)[use] \
            * np.exp(t1[use])
        otsum = terms.sum(axis=1)
        stop = (i * ulen[r] >= 1.0) & (otsum <= 1e-14)
        ans[r[~stop]] += otsum[~stop]
        running = r[~stop]
        if not len(running):
            break
    return np.minimum(ans, 1.0)


def _qinv(p: float, c: float, v: np.ndarray) -> np.ndarray:
    """R's starting value of qtukey (Odeh and Evans' normal quantile, then Gleason's form)."""
    ps = 0.5 - 0.5 * p
    yi = np.sqrt(np.log(1.0 / (ps * ps)))
    t = yi + ((((yi * -0.453642210148e-04 - 0.204231210125) * yi - 0.342242088547) * yi - 1.0) * yi
              + 0.322232421088) / ((((yi * 0.38560700634e-02 + 0.103537752850) * yi + 0.531103462366) * yi
                                    + 0.588581570495) * yi + 0.993484626060e-01)
    small = v < 120.0
    t = np.where(small, t + (t ** 3 + t) / v / 4.0, t)
    qq = 0.8832 - 0.2368 * t
    qq = np.where(small, qq - 1.214 / v + 1.208 * t / v, qq)
    return t * (qq * np.log(c - 1.0) + 1.4142)


def studentized_range_quantile(p: float, nmeans: float, df: ArrayLike) -> np.ndarray:
    """R's ``qtukey(p, nmeans, df)`` by R's secant iterations (stopping when an iterate moves
    less than 1e-4), elementwise over ``df``.

    Examples
    --------
    >>> round(float(studentized_range_quantile(0.95, 4, 20)[0]), 4)  # R: qtukey(0.95, 4, 20)
    3.9583
    """
    df = np.atleast_1d(np.asarray(df, dtype=float))
    # each (level, means, df) once per process: the families of a by= grid share their df
    keys = [(float(p), float(nmeans), float(f"{d:.10g}")) for d in df.ravel()]
    todo = sorted({k for k in keys if k not in _QTUKEY_CACHE})
    if todo:
        values = _qtukey_secant(float(p), float(nmeans), np.array([k[2] for k in todo]))
        for k, v in zip(todo, values):
            _QTUKEY_CACHE[k] = float(v)
        while len(_QTUKEY_CACHE) > 4096:
            _QTUKEY_CACHE.pop(next(iter(_QTUKEY_CACHE)))
    return np.array([_QTUKEY_CACHE[k] for k in keys]).reshape(df.shape)


_QTUKEY_CACHE: dict[tuple[float, float, float], float] = {}


def _qtukey_secant(p: float, nmeans: float, df: np.ndarray) -> np.ndarray:
    x0 = _qinv(p, nmeans, df)
    v0 = studentized_range_cdf(x0, nmeans, df) - p
    x1 = np.where(v0 > 0, np.maximum(0.0, x0 - 1.0), x0 + 1.0)
    v1 = studentized_range_cdf(x1, nmeans, df) - p
    ans = x1.copy()
    todo = np.ones(df.shape, dtype=bool)
    for _ in range(1, 50):
        idx = np.flatnonzero(todo)
        if not len(idx):
            break
        new = x1[idx] - v1[idx] * (x1[idx] - x0[idx]) / (v1[idx] - v0[idx])
        new = np.maximum(new, 0.0)
        v0[idx], x0[idx] = v1[idx], x1[idx]
        v1[idx] = studentized_range_cdf(new, nmeans, df[idx]) - p
        x1[idx] = new
        ans[idx] = new
        todo[idx[np.abs(x1[idx] - x0[idx]) < 1e-4]] = False
    return ans


def unique_within(values: ArrayLike, rtol: float = 1e-9) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``values`` up to a relative tolerance, and for each value the index of
    its representative (as ``np.unique(..., return_inverse=True)``): Satterthwaite df that differ
    in the ninth digit share one quantile rather than pay for one each.

    Examples
    --------
    >>> reps, where = unique_within([10.0, 10.0 + 1e-12, 12.0, np.inf])
    >>> reps.tolist(), where.tolist()
    ([10.0, 12.0, inf], [0, 0, 1, 2])
    """
    x = np.asarray(values, dtype=float).ravel()
    order = np.argsort(x, kind="stable")
    xs = x[order]
    new_group = np.ones(len(xs), dtype=bool)
    if len(xs) > 1:
        with np.errstate(invalid="ignore"):
            gap = np.abs(np.diff(xs))
            close = np.isfinite(gap) & (gap <= rtol * np.abs(xs[1:]))
        close |= (xs[1:] == xs[:-1])  # equal infinities
        new_group[1:] = ~close
    group = np.cumsum(new_group) - 1
    where = np.empty(len(x), dtype=np.int64)
    where[order] = group
    return xs[new_group], where


# --- distributions with df = Inf ------------------------------------------------------------------
def ptukey_upper(q: np.ndarray | float, nmeans: float) -> np.ndarray:
    """Upper tail of the studentized range with infinite df (``ptukey(q, nmeans, Inf, FALSE)``, by
    R's algorithm, vectorised)."""
    q = np.atleast_1d(np.asarray(q, dtype=float))
    return 1.0 - studentized_range_cdf(q, nmeans, np.inf)


def _quantile(cdf: Callable[[float], float], level: float, hi: float) -> float:
    """The ``level`` quantile of a distribution on (0, inf) from its CDF: ``hi`` doubled until it
    brackets the quantile, then Brent's method."""
    f = lambda x: cdf(x) - level  # noqa: E731
    while f(hi) < 0:
        hi *= 2
    return optimize.brentq(f, 1e-8, hi, xtol=1e-10)


def qtukey(level: float, nmeans: float) -> float:
    """Quantile of the studentized range with infinite df (R's ``qtukey(level, nmeans, Inf)``)."""
    return float(studentized_range_quantile(level, nmeans, np.inf)[0])


def pdunnx(x: np.ndarray | float, k: int) -> np.ndarray:
    """emmeans' approximate Dunnett CDF of ``max |Z_i|`` over k contrasts (df = Inf)."""
    x = np.atleast_1d(np.asarray(x, dtype=float))
    nmeans = (1 + np.sqrt(1 + 8 * k)) / 2
    tukey = 1.0 - ptukey_upper(np.sqrt(2) * x, nmeans)
    sidak = (stats.chi2.cdf(x**2, 1)) ** k
    twt = (k - 1) / k
    return twt * tukey + (1 - twt) * sidak


@lru_cache(maxsize=256)  # one root-finding per (level, k): every by= family shares it
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
    """``P(max_i |Z_i| <= t)`` for one correlation matrix, its directions drawn once; ``df``
    finite: the multivariate t of that correlation."""

    def __init__(self, corr: np.ndarray, seed: int = _SEED, df: float = np.inf):
        self.g, self.r = _box_radii(np.asarray(corr, dtype=float), seed)
        self.df = float(df)

    def probability(self, t: np.ndarray | float) -> np.ndarray:
        t = np.atleast_1d(np.asarray(t, dtype=float))
        radius2 = np.outer(t, self.g) ** 2  # squared radius to the box boundary, per direction
        if np.isfinite(self.df):  # r F(r, df): exact, no quadrature over the chi-square divisor
            return special.fdtr(self.r, self.df, radius2 / self.r).mean(axis=1)
        return special.gammainc(self.r / 2, radius2 / 2).mean(axis=1)

    def quantile(self, level: float) -> float:
        return _quantile(lambda t: self.probability(t)[0], level, 4.0)


def mvn_box_probability(t: np.ndarray | float, corr: np.ndarray, seed: int = _SEED,
                        df: float = np.inf) -> np.ndarray:
    """``P(max_i |Z_i| <= t)`` for ``Z ~ N(0, corr)`` (corr may be singular); with finite ``df``,
    for the multivariate t ``Z / sqrt(chi2_df / df)`` (mvtnorm's ``pmvt``).

    Examples
    --------
    >>> round(float(mvn_box_probability(1.959964, np.eye(1))[0]), 4)
    0.95
    >>> round(float(mvn_box_probability(12.7062, np.eye(1), df=1)[0]), 4)  # qt(0.975, 1)
    0.95
    """
    return _Box(corr, seed, df).probability(t)


def mvn_box_quantile(level: float, corr: np.ndarray, seed: int = _SEED, df: float = np.inf) -> float:
    """The equicoordinate two-sided quantile: t with ``P(max_i |Z_i| <= t) = level`` (``df``
    finite: of the multivariate t)."""
    return _Box(corr, seed, df).quantile(level)


# --- one family -----------------------------------------------------------------------------------

# --- one family -----------------------------------------------------------------------------------

def family_methods(method: str, k: int, pairwise: bool) -> tuple[str, str]:
    """The adjustment one family of ``k`` tests gets, for its p-values and for its intervals, as
    emmeans chooses them.

    A single test is never adjusted; ``tukey`` applies to one set of pairwise comparisons only
    (otherwise ``sidak``); the step-wise methods (``holm``, ``hochberg``, ``BH``, ``BY``) have no
    intervals of their own, which are Bonferroni's.

    Parameters
    ----------
    method : str
        One of :data:`ADJUST_METHODS` (or an alias).
    k : int
        Tests in the family (non-estimable ones included).
    pairwise : bool
        Whether the family is one set of pairwise comparisons.

    Returns
    -------
    p_method, ci_method : str

    Examples
    --------
    >>> family_methods("Holm", 3, False), family_methods("tukey", 3, False), family_methods("tukey", 1, True)
    (('holm', 'bonferroni'), ('sidak', 'sidak'), ('none', 'none'))
    """
    method = normalise_method(method)
    if k == 1:  # a single test is never adjusted (emmeans does the same)
        method = "none"
    if method == "tukey" and not pairwise:
        method = "sidak"
    return method, "bonferroni" if method in ("holm", "hochberg", "BH", "BY") else method


def p_adjust_critical(method: str, conf_level: float, k: int,
                      isf: Callable[[float], np.ndarray | float]) -> np.ndarray | float:
    """The interval critical value of a family of ``k`` tests adjusted by one of
    :data:`P_ADJUST_METHODS`: unadjusted, Sidak's, or Bonferroni's (for Bonferroni and the
    step-wise methods).

    Parameters
    ----------
    method : str
        A canonical name of :data:`P_ADJUST_METHODS`.
    conf_level : float
        The family-wise confidence level.
    k : int
        Tests in the family.
    isf : callable
        The inverse survival function of the statistic (``stats.norm.isf``, or ``stats.t.isf``
        with each row's df).

    Returns
    -------
    float or ndarray
        What ``isf`` returns at the two-sided tail probability.

    Examples
    --------
    >>> from scipy import stats
    >>> round(float(p_adjust_critical("bonferroni", 0.95, 2, stats.norm.isf)), 4)
    2.2414
    """
    if method == "none":
        return isf((1 - conf_level) / 2)
    if method == "sidak":
        return isf((1 - conf_level ** (1 / k)) / 2)
    return isf((1 - conf_level) / k / 2)  # Bonferroni intervals for Bonferroni and the step-wise methods


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

    Examples
    --------
    >>> p, crit, p_method, ci_method = adjust_family(np.array([2.5, 1.0]), "holm", conf_level=0.95,
    ...                                              n_means=None, pairwise=False)
    >>> p.round(4).tolist(), round(crit, 4), ci_method
    ([0.0248, 0.3173], 2.2414, 'bonferroni')
    """
    z_all = np.asarray(z, dtype=float)
    # Non-estimable contrasts (NaN) still count in the family size, as in emmeans 1.8
    k = len(z_all)
    method, ci_method = family_methods(method, k, pairwise)
    finite = np.isfinite(z_all)
    z = z_all[finite]
    absz = np.abs(z)
    p_raw = 2 * stats.norm.sf(absz)
    if method in P_ADJUST_METHODS:
        p = _adjust(p_raw, method, k)
        crit = p_adjust_critical(method, conf_level, k, stats.norm.isf)
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
    return p_all, float(crit), method, ci_method
