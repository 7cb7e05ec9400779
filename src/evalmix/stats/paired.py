"""The common ground of paired comparisons of two models: per-item scores and the result type.

:mod:`evalmix.stats.comparisons` (tests) and :mod:`evalmix.stats.resampling` (bootstraps) both return a
:class:`ComparisonResult` and both start from :func:`item_means`.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..core.result import Result
from ..core.errors import DataError

__all__ = ["ComparisonResult", "item_means"]


@dataclass(frozen=True, eq=False, repr=False)
class ComparisonResult(Result):
    """Outcome of a paired comparison of two models (``estimate = b - a``).

    Attributes
    ----------
    method : str
        Name of the test.
    estimate : float
        Difference in mean score, ``b - a`` (for accuracy: in proportion points).
    se : float
        Standard error of ``estimate`` (NaN when the method has none).
    conf_low, conf_high : float
        Confidence interval for the difference (NaN when the method gives none).
    statistic, df : float
        Test statistic and its degrees of freedom (NaN when not applicable).
    p_value : float
        Two-sided p-value of "no difference".
    conf_level : float
        Level of the interval.
    n : int
        Number of paired items.
    details : dict
        Method-specific extras (discordant counts, effect sizes, correlation...).
    """

    method: str
    estimate: float
    se: float
    conf_low: float
    conf_high: float
    statistic: float
    df: float
    p_value: float
    conf_level: float
    n: int
    details: dict[str, Any] = field(default_factory=dict)

    def _title(self) -> str:
        return f"Paired comparison ({self.method})"

    def _header(self) -> list[str]:
        what = self.details.get("contrast", "b - a")
        return [f"estimate: {what}, difference in mean score (accuracy points); "
                f"{self.conf_level:.0%} interval"]

    def to_frame(self) -> pd.DataFrame:
        details = self.details
        # a labelled comparison (compare_pair) leads with its "B - A" label
        row = {"contrast": details["contrast"]} if "contrast" in details else {}
        row |= {"method": self.method, "estimate": self.estimate, "se": self.se,
               "conf_low": self.conf_low, "conf_high": self.conf_high, "statistic": self.statistic,
               "df": self.df, "p_value": self.p_value, "n": self.n}
        row.update({k: v for k, v in details.items() if np.isscalar(v) and k != "contrast"})
        return pd.DataFrame([row])

    @property
    def half_width(self) -> float:
        """Half the width of the confidence interval."""
        return (self.conf_high - self.conf_low) / 2


def _as_scores(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(x, dtype=float)
    if arr.ndim not in (1, 2):
        raise DataError(f"`{name}` must be 1-D (items) or 2-D (runs x items), got shape {arr.shape}")
    if arr.size == 0:
        raise DataError(f"`{name}` is empty")
    return arr


def item_means(a: ArrayLike, b: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """Per-item mean scores of two models: 1-D inputs are taken as is, 2-D as (runs, items).

    Missing runs may be NaN; an item must have at least one run for both models.
    """
    xa, xb = _as_scores(a, "a"), _as_scores(b, "b")
    ma = xa if xa.ndim == 1 else _nanmean0(xa, "a")
    mb = xb if xb.ndim == 1 else _nanmean0(xb, "b")
    if ma.shape != mb.shape:
        raise DataError(f"`a` and `b` must cover the same items: {ma.shape[0]} vs {mb.shape[0]} items")
    bad = np.flatnonzero(np.isnan(ma) | np.isnan(mb))
    if bad.size:
        raise DataError(f"items at positions {bad[:5].tolist()} have no score for one of the models")
    return ma, mb


def _nanmean0(x: np.ndarray, name: str) -> np.ndarray:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        return np.nanmean(x, axis=0)
