"""Multiple-comparison adjustment of p-values (R's ``p.adjust``)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

__all__ = ["adjust_pvalues"]

_ALIASES = {
    "bonferroni": "bonferroni", "sidak": "sidak", "holm": "holm", "hochberg": "hochberg",
    "bh": "BH", "fdr_bh": "BH", "fdr": "BH", "benjamini-hochberg": "BH",
    "by": "BY", "fdr_by": "BY", "benjamini-yekutieli": "BY",
}


def adjust_pvalues(p: Any, method: str = "holm") -> Any:
    """Adjust p-values for multiple comparisons.

    Parameters
    ----------
    p : array_like or Series
        Raw p-values; NaN entries are left as NaN and not counted (as R's ``p.adjust``).
    method : {"holm", "bonferroni", "sidak", "hochberg", "BH", "BY"}
        Family-wise error control (``bonferroni``, ``sidak``, ``holm``, ``hochberg``) or false
        discovery rate control (``BH`` = Benjamini-Hochberg, ``BY`` = Benjamini-Yekutieli).
        statsmodels' names ``fdr_bh`` and ``fdr_by`` are accepted too.

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
    """
    key = _ALIASES.get(str(method).lower())
    if key is None:
        raise ValueError(f"method must be one of holm, bonferroni, sidak, hochberg, BH, BY; got {method!r}")
    index = p.index if isinstance(p, pd.Series) else None
    arr = np.asarray(p, dtype=float)
    shape = arr.shape
    flat = arr.ravel()
    if np.any((flat < 0) | (flat > 1)):
        raise ValueError("p-values must lie in [0, 1]")
    out = np.full(flat.shape, np.nan)
    ok = ~np.isnan(flat)
    out[ok] = _adjust(flat[ok], key)
    out = out.reshape(shape)
    return pd.Series(out, index=index, name=getattr(p, "name", None)) if index is not None else out


def _adjust(p: np.ndarray, method: str) -> np.ndarray:
    m = p.size
    if m == 0:
        return p
    if method == "bonferroni":
        return np.minimum(1.0, p * m)
    if method == "sidak":
        with np.errstate(divide="ignore"):  # p = 1 -> log1p(-1) = -inf -> adjusted 1
            return -np.expm1(m * np.log1p(-p))
    order = np.argsort(p, kind="mergesort")
    ps = p[order]
    rank = np.arange(1, m + 1)
    if method == "holm":
        adj = np.minimum(1.0, np.maximum.accumulate((m - rank + 1) * ps))
    elif method == "hochberg":
        adj = np.minimum(1.0, np.minimum.accumulate(((m - rank + 1) * ps)[::-1])[::-1])
    else:
        c = np.sum(1.0 / rank) if method == "BY" else 1.0
        adj = np.minimum(1.0, np.minimum.accumulate((ps * m * c / rank)[::-1])[::-1])
    out = np.empty(m)
    out[order] = adj
    return out
