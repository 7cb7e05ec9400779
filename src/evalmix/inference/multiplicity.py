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
    "ptukey_upper", "qdunnx", "qtukey",
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


# --- distributions with df = Inf ------------------------------------------------------------------
def ptukey_upper(q: np.ndarray | float, nmeans: float) -> np.ndarray:
    """Upper tail of the studentized range with infinite df (``ptukey(q, nmeans, Inf, FALSE)``)."""
    q = np.atleast_1d(np.asarray(q, dtype=float))
    return np.array([stats.studentized_range.sf(v, nmeans, np.inf) if v > 0 else 1.0 for v in q])


def _quantile(cdf: Callable[[float], float], level: float, hi: float) -> float:
    """The ``level`` quantile of a distribution on (0, inf) from its CDF: ``hi`` doubled until it
    brackets the quantile, then Brent's method."""
    f = lambda x: cdf(x) - level  # noqa: E731
    while f(hi) < 0:
        hi *= 2
    return optimize.brentq(f, 1e-8, hi, xtol=1e-10)


def qtukey(level: float, nmeans: float) -> float:
    """Quantile of the studentized range with infinite df."""
    return _quantile(lambda x: 1.0 - ptukey_upper(x, nmeans)[0], level, 2.0)


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
