"""Chance-corrected agreement between raters (or judges, or runs): Cohen, Fleiss, Krippendorff.

Every function takes an ``(items, raters)`` table: one row per rated item, one column per rater,
missing ratings as NaN/None (Krippendorff's alpha only).  Coefficients come with a verbal band:
Landis & Koch (1977) for the kappas, Krippendorff's (2004) 0.667/0.8 thresholds for alpha.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats

from ..core.arguments import check_arguments, check_choice
from ..core.result import Result
from ..core.errors import DataError

__all__ = ["AgreementResult", "cohen_kappa", "fleiss_kappa", "krippendorff_alpha",
           "krippendorff_band", "landis_koch"]


@dataclass(frozen=True, eq=False, repr=False)
class AgreementResult(Result):
    """An agreement coefficient with its standard error, interval and verbal band.

    Attributes
    ----------
    coefficient : str
        ``cohen_kappa``, ``weighted_kappa``, ``fleiss_kappa`` or ``krippendorff_alpha``.
    estimate : float
        The coefficient.
    se : float
        Asymptotic standard error (NaN where none is available).
    conf_low, conf_high : float
        Wald interval ``estimate +/- z se`` (NaN without ``se``).
    statistic, p_value : float
        z test of "agreement no better than chance" (using the SE under that null).
    band : str
        Verbal label of the estimate.
    n_items, n_raters : int
        Items used and raters.
    """

    coefficient: str
    estimate: float
    se: float
    conf_low: float
    conf_high: float
    statistic: float
    p_value: float
    band: str
    n_items: int
    n_raters: int

    def _title(self) -> str:
        return f"Agreement: {self.coefficient}"

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame([{"coefficient": self.coefficient, "estimate": self.estimate,
                              "se": self.se, "conf_low": self.conf_low,
                              "conf_high": self.conf_high, "statistic": self.statistic, "p_value": self.p_value, "band": self.band,
                              "n_items": self.n_items, "n_raters": self.n_raters}])


def landis_koch(kappa: float) -> str:
    """Landis & Koch (1977) label of a kappa.

    ``< 0`` poor, ``0-0.20`` slight, ``0.21-0.40`` fair, ``0.41-0.60`` moderate,
    ``0.61-0.80`` substantial, ``0.81-1`` almost perfect.

    Examples
    --------
    >>> from evalmix.stats.agreement import landis_koch
    >>> landis_koch(0.65)
    'substantial'
    """
    if kappa is None or math.isnan(kappa):
        return ""
    for upper, label in ((0.0, "poor"), (0.2, "slight"), (0.4, "fair"), (0.6, "moderate"),
                         (0.8, "substantial")):
        if kappa < upper or (upper > 0 and kappa <= upper):
            return label
    return "almost perfect"


def krippendorff_band(alpha: float) -> str:
    """Krippendorff's reading of alpha: ``>= 0.8`` reliable, ``>= 0.667`` tentative, else unreliable.

    Examples
    --------
    >>> from evalmix.stats.agreement import krippendorff_band
    >>> krippendorff_band(0.7)
    'tentative'
    """
    if alpha is None or math.isnan(alpha):
        return ""
    if alpha >= 0.8:
        return "reliable"
    if alpha >= 0.667:
        return "tentative"
    return "unreliable"


def _table(data: Any, name: str = "data") -> np.ndarray:
    arr = data.to_numpy(dtype=object) if isinstance(data, pd.DataFrame) else np.asarray(data, dtype=object)
    if arr.ndim != 2:
        raise DataError(f"`{name}` must be an (items, raters) table, got shape {arr.shape}")
    return arr


def _is_missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and math.isnan(v)) or v is pd.NA


def _categories(values: np.ndarray, categories: Iterable[Hashable] | None) -> list[Any]:
    if categories is not None:
        return list(categories)
    present = [v for v in values.ravel() if not _is_missing(v)]
    try:
        return sorted(set(present))
    except TypeError:
        return list(dict.fromkeys(present))


def _codes(arr: np.ndarray, cats: list) -> np.ndarray:
    index = {c: i for i, c in enumerate(cats)}
    out = np.full(arr.shape, -1, dtype=np.int64)
    for pos, v in np.ndenumerate(arr):
        if _is_missing(v):
            continue
        if v not in index:
            raise DataError(f"rating {v!r} at (item {pos[0]}, rater {pos[1]}) is not among the "
                            f"categories {cats}")
        out[pos] = index[v]
    return out


def _wald(estimate: float, se: float, conf_level: float) -> tuple[float, float]:
    z = stats.norm.ppf(0.5 + conf_level / 2)
    return (estimate - z * se, estimate + z * se) if np.isfinite(se) else (math.nan, math.nan)


def cohen_kappa(a: ArrayLike | pd.DataFrame, b: ArrayLike | None = None, *, weights: str | None = None,
                categories: Iterable[Hashable] | None = None, conf_level: float = 0.95) -> AgreementResult:
    """Cohen's kappa of two raters, optionally weighted, with its asymptotic standard error.

    Parameters
    ----------
    a, b : array_like
        Ratings of the two raters on the same items; or ``a`` an ``(items, 2)`` table and ``b``
        omitted.
    weights : {None, "linear", "quadratic"}
        Unweighted kappa, or disagreement weights ``|i - j| / (K - 1)`` (linear) or
        ``((i - j) / (K - 1))^2`` (quadratic) over the ordered categories.
    categories : sequence, optional
        The categories in order (default: the sorted values seen).
    conf_level : float
        Level of the Wald interval.

    Returns
    -------
    AgreementResult
        ``se`` is the Fleiss-Cohen-Everitt (1969) asymptotic SE; ``z`` and ``p_value`` use the SE
        under "chance agreement".

    Notes
    -----
    Equal to ``statsmodels.stats.inter_rater.cohens_kappa(table, wt=weights)``; in R
    ``psych::cohen.kappa`` or ``irr::kappa2(cbind(a, b), weight = "equal"/"squared")``.

    Examples
    --------
    >>> from evalmix import cohen_kappa
    >>> r = cohen_kappa([1, 1, 0, 1, 0, 0, 1, 1], [1, 1, 0, 0, 0, 1, 1, 1])
    >>> round(r.estimate, 3), r.band
    (0.467, 'moderate')
    """
    check_arguments(conf_level=conf_level)
    if b is None:
        tab = _table(a, "a")
        if tab.shape[1] != 2:
            raise DataError(f"cohen_kappa compares 2 raters; the table has {tab.shape[1]} columns "
                            "(use fleiss_kappa or krippendorff_alpha)")
    else:
        xa, xb = np.asarray(a, dtype=object), np.asarray(b, dtype=object)
        if xa.shape != xb.shape or xa.ndim != 1:
            raise DataError(f"`a` and `b` must be 1-D and of equal length, got {xa.shape} and {xb.shape}")
        tab = np.column_stack([xa, xb])
    cats = _categories(tab, categories)
    codes = _codes(tab, cats)
    if (codes < 0).any():
        raise DataError("cohen_kappa needs complete ratings; drop items with a missing rating "
                        "or use krippendorff_alpha")
    k = len(cats)
    n = codes.shape[0]
    table = np.zeros((k, k))
    np.add.at(table, (codes[:, 0], codes[:, 1]), 1)
    freqs = table / n
    row, col = freqs.sum(axis=1), freqs.sum(axis=0)
    idx = np.arange(k)
    if weights is None:
        w = np.eye(k)  # agreement weights
    elif weights in ("linear", "quadratic"):
        dist = np.abs(idx[:, None] - idx[None, :]) / max(k - 1, 1)
        w = 1 - (dist if weights == "linear" else dist ** 2)
    else:
        raise ValueError(f"weights must be None, 'linear' or 'quadratic', got {weights!r}")
    expected = np.outer(row, col)
    po = float((w * freqs).sum())
    pe = float((w * expected).sum())
    if pe == 1:
        raise DataError("both raters used a single category: kappa is undefined")
    kappa = (po - pe) / (1 - pe)
    # Fleiss, Cohen & Everitt (1969) large-sample variances (general agreement weights)
    w_row = w @ col  # wbar_i. = sum_j p_.j w_ij
    w_col = row @ w  # wbar_.j = sum_i p_i. w_ij
    cross = w_row[:, None] + w_col[None, :]
    var = ((freqs * (w - cross * (1 - kappa)) ** 2).sum() - (kappa - pe * (1 - kappa)) ** 2) / ((1 - pe) ** 2 * n)
    var0 = ((expected * (w - cross) ** 2).sum() - pe ** 2) / ((1 - pe) ** 2 * n)
    se = math.sqrt(max(var, 0.0))
    se0 = math.sqrt(max(var0, 0.0))
    z = kappa / se0 if se0 > 0 else math.nan
    lo, hi = _wald(kappa, se, conf_level)
    return AgreementResult(coefficient="cohen_kappa" if weights is None else f"weighted_kappa_{weights}",
                           estimate=float(kappa), se=se, conf_low=lo, conf_high=hi, statistic=float(z),
                           p_value=float(2 * stats.norm.sf(abs(z))) if np.isfinite(z) else math.nan,
                           band=landis_koch(kappa), n_items=n, n_raters=2)


def fleiss_kappa(data: ArrayLike | pd.DataFrame, *, counts: bool = False, method: str = "fleiss",
                 categories: Iterable[Hashable] | None = None) -> AgreementResult:
    """Fleiss' kappa for several raters (the same number of ratings per item).

    Parameters
    ----------
    data : array_like or DataFrame
        ``(items, raters)`` ratings, or with ``counts=True`` an ``(items, categories)`` table of
        how many raters chose each category.
    counts : bool
        Whether ``data`` is already a count table.
    method : {"fleiss", "randolph"}
        Chance agreement from the pooled category shares (Fleiss) or uniform ``1/K`` (Randolph's
        free-marginal kappa).
    categories : sequence, optional
        All possible categories (matters for ``randolph`` when some were never used).

    Returns
    -------
    AgreementResult
        ``se`` is the standard error under "no agreement beyond chance" (Fleiss, Nee & Landis
        1979, as ``irr::kappam.fleiss``); it drives ``z`` and ``p_value``, not the interval, which
        is left NaN.

    Notes
    -----
    Equal to ``statsmodels.stats.inter_rater.fleiss_kappa``; in R ``irr::kappam.fleiss``.

    Examples
    --------
    >>> from evalmix import fleiss_kappa
    >>> r = fleiss_kappa([[1, 1, 1], [0, 0, 1], [1, 1, 0], [0, 0, 0], [1, 1, 1]])
    >>> round(r.estimate, 3)
    0.444
    """
    if counts:
        table = np.asarray(data, dtype=float)
        if table.ndim != 2:
            raise DataError(f"the count table must be (items, categories), got shape {table.shape}")
        n_cat = table.shape[1]
    else:
        tab = _table(data)
        cats = _categories(tab, categories)
        codes = _codes(tab, cats)
        if (codes < 0).any():
            raise DataError("fleiss_kappa needs every item rated by every rater; "
                            "use krippendorff_alpha for missing ratings")
        n_cat = len(cats)
        table = np.zeros((codes.shape[0], n_cat))
        for j in range(codes.shape[1]):
            np.add.at(table, (np.arange(codes.shape[0]), codes[:, j]), 1)
    raters = table.sum(axis=1)
    if not np.allclose(raters, raters[0]):
        raise DataError("every item must have the same number of ratings for Fleiss' kappa")
    n_items, r = table.shape[0], float(raters[0])
    if r < 2:
        raise DataError("Fleiss' kappa needs at least 2 ratings per item")
    p_cat = table.sum(axis=0) / (n_items * r)
    p_item = ((table ** 2).sum(axis=1) - r) / (r * (r - 1))
    p_bar = p_item.mean()
    if method == "fleiss":
        p_e = float((p_cat ** 2).sum())
    elif method == "randolph":
        p_e = 1.0 / n_cat
    else:
        raise ValueError(f"method must be 'fleiss' or 'randolph', got {method!r}")
    kappa = (p_bar - p_e) / (1 - p_e)
    pq = p_cat * (1 - p_cat)
    spq = pq.sum()
    se0 = (math.sqrt(2) / (spq * math.sqrt(n_items * r * (r - 1)))
           * math.sqrt(max(spq ** 2 - np.sum(pq * (1 - 2 * p_cat)), 0.0))) if spq > 0 else math.nan
    z = kappa / se0 if method == "fleiss" and se0 and np.isfinite(se0) else math.nan
    return AgreementResult(coefficient="fleiss_kappa" if method == "fleiss" else "randolph_kappa",
                           estimate=float(kappa), se=float(se0) if method == "fleiss" else math.nan,
                           conf_low=math.nan, conf_high=math.nan, statistic=float(z),
                           p_value=float(2 * stats.norm.sf(abs(z))) if np.isfinite(z) else math.nan,
                           band=landis_koch(kappa), n_items=n_items, n_raters=int(r))


_LEVELS = ("nominal", "ordinal", "interval", "ratio")


def krippendorff_alpha(data: ArrayLike | pd.DataFrame, *, level: str = "nominal",
                       categories: Iterable[Hashable] | None = None) -> AgreementResult:
    """Krippendorff's alpha for any number of raters, missing ratings and four measurement levels.

    Parameters
    ----------
    data : array_like or DataFrame
        ``(items, raters)`` ratings with NaN/None for missing.  (The ``krippendorff`` package takes
        the transpose, ``(raters, items)``.)
    level : {"nominal", "ordinal", "interval", "ratio"}
        Measurement level, which sets the disagreement metric.
    categories : sequence, optional
        Ordered categories (ordinal data given as labels); default: the sorted values seen.

    Returns
    -------
    AgreementResult
        ``band`` follows Krippendorff: reliable (``>= 0.8``), tentative (``>= 0.667``),
        unreliable.  No analytic SE exists; ``se``, interval, ``z`` and ``p_value`` are NaN.

    Notes
    -----
    Computed from the coincidence matrix (Krippendorff 2011): items with fewer than two ratings
    are not pairable and are dropped.  Equal to ``krippendorff.alpha(data.T,
    level_of_measurement=level)``; in R ``irr::kripp.alpha(t(data), method = level)``.

    Examples
    --------
    >>> import numpy as np
    >>> from evalmix import krippendorff_alpha
    >>> data = [[1, 1, np.nan], [2, 2, 2], [3, 3, 2], [1, 2, 1], [4, 4, 4]]
    >>> r = krippendorff_alpha(data, level="ordinal")
    >>> round(r.estimate, 3), r.band
    (0.856, 'reliable')
    """
    check_choice(level, "level", _LEVELS)
    tab = _table(data)
    if level in ("interval", "ratio"):
        try:
            vals = np.array([[np.nan if _is_missing(v) else float(v) for v in row] for row in tab])
        except (TypeError, ValueError) as exc:
            raise DataError(f"{level} alpha needs numeric ratings: {exc}") from None
        cats = sorted(set(vals[~np.isnan(vals)].tolist())) if categories is None else list(categories)
        as_obj = vals.astype(object)
        as_obj[np.isnan(vals)] = None
        codes = _codes(as_obj, cats)
    else:
        cats = _categories(tab, categories)
        codes = _codes(tab, cats)
    k = len(cats)
    # per-item counts of each value; only items with >= 2 ratings are pairable
    counts = np.zeros((codes.shape[0], k))
    for j in range(codes.shape[1]):
        ok = codes[:, j] >= 0
        np.add.at(counts, (np.flatnonzero(ok), codes[ok, j]), 1)
    m = counts.sum(axis=1)
    keep = m >= 2
    counts, m = counts[keep], m[keep]
    if counts.shape[0] == 0:
        raise DataError("no item has two or more ratings: alpha is undefined")
    coinc = (counts / (m - 1)[:, None]).T @ counts - np.diag((counts / (m - 1)[:, None]).sum(axis=0))
    n_c = coinc.sum(axis=0)
    n = n_c.sum()
    if level == "nominal":
        delta = 1.0 - np.eye(k)
    elif level == "ordinal":
        cum = np.cumsum(n_c)
        gi, gj = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
        lo, hi = np.minimum(gi, gj), np.maximum(gi, gj)
        between = cum[hi] - cum[lo] + n_c[lo]  # sum of n_g for g = lo..hi
        delta = (between - (n_c[gi] + n_c[gj]) / 2) ** 2
    else:
        v = np.asarray(cats, dtype=float)
        diff = v[:, None] - v[None, :]
        if level == "interval":
            delta = diff ** 2
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                delta = np.where(v[:, None] + v[None, :] == 0, 0.0, (diff / (v[:, None] + v[None, :])) ** 2)
    d_o = float((coinc * delta).sum())
    d_e = float((np.outer(n_c, n_c) * delta).sum())
    if d_e == 0:
        raise DataError("all ratings are identical: alpha is undefined")
    alpha = 1 - (n - 1) * d_o / d_e
    return AgreementResult(coefficient="krippendorff_alpha", estimate=float(alpha), se=math.nan,
                           conf_low=math.nan, conf_high=math.nan, statistic=math.nan, p_value=math.nan,
                           band=krippendorff_band(alpha), n_items=int(keep.sum()),
                           n_raters=int(tab.shape[1]))
