"""Descriptive accuracy with binomial confidence intervals.

:func:`binom_ci` holds the interval formulas (vectorised over arrays of counts);
:func:`accuracy` applies them to the groups of a runs table.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from .data import RunsData, ensure_runs
from .errors import DataError

__all__ = ["CI_METHODS", "accuracy", "binom_ci"]

CI_METHODS = ("wilson", "wilson_cc", "clopper_pearson", "jeffreys", "agresti_coull", "wald", "cluster")


def binom_ci(k, n, method: str = "wilson", conf_level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
    """Confidence interval for a binomial proportion k/n.

    Parameters
    ----------
    k, n : array_like
        Successes and trials (broadcast together).
    method : str
        ``"wilson"`` (score interval without continuity correction, as DescTools::BinomCI,
        ``binom.test``'s companion ``prop.test(correct=FALSE)`` and statsmodels),
        ``"wilson_cc"`` (with continuity correction, as ``prop.test(correct=TRUE)``),
        ``"clopper_pearson"`` (exact, ``binom.test``), ``"jeffreys"`` (equal-tailed Beta(1/2, 1/2)
        posterior interval), ``"agresti_coull"`` (add z^2/2 successes and failures) or ``"wald"``.
        Wald and Agresti-Coull intervals are clipped to [0, 1], as statsmodels does.
    conf_level : float
        Coverage, e.g. 0.95.

    Returns
    -------
    lower, upper : numpy.ndarray

    Examples
    --------
    >>> lo, hi = binom_ci(190, 315)
    >>> round(float(lo), 6), round(float(hi), 6)
    (0.548216, 0.655647)
    """
    if not 0 < conf_level < 1:
        raise ValueError(f"conf_level must be in (0, 1), got {conf_level}")
    k = np.asarray(k, dtype=float)
    n = np.asarray(n, dtype=float)
    k, n = np.broadcast_arrays(k, n)
    if np.any(n <= 0):
        raise DataError("binomial intervals need n > 0 trials in every group")
    if np.any((k < 0) | (k > n)):
        raise DataError("binomial intervals need 0 <= k <= n")
    alpha = 1.0 - conf_level
    z = stats.norm.ppf(1 - alpha / 2)
    p = k / n
    with np.errstate(divide="ignore", invalid="ignore"):
        if method == "wilson":
            denom = 1 + z**2 / n
            centre = (p + z**2 / (2 * n)) / denom
            half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / denom
            # exact end points at the boundary (the formula leaves rounding noise there)
            lo = np.where(k == 0, 0.0, centre - half)
            hi = np.where(k == n, 1.0, centre + half)
        elif method == "wilson_cc":
            # Newcombe (1998) method 4: the score interval with continuity correction.
            q = 1 - p
            e = 2 * n * p + z**2
            d = 2 * (n + z**2)
            lo = (e - 1 - z * np.sqrt(z**2 - 2 - 1 / n + 4 * p * (n * q + 1))) / d
            hi = (e + 1 + z * np.sqrt(z**2 + 2 - 1 / n + 4 * p * (n * q - 1))) / d
            lo = np.where(k == 0, 0.0, np.maximum(lo, 0.0))
            hi = np.where(k == n, 1.0, np.minimum(hi, 1.0))
        elif method == "clopper_pearson":
            lo = np.where(k == 0, 0.0, stats.beta.ppf(alpha / 2, k, n - k + 1))
            hi = np.where(k == n, 1.0, stats.beta.ppf(1 - alpha / 2, k + 1, n - k))
        elif method == "jeffreys":
            lo = stats.beta.ppf(alpha / 2, k + 0.5, n - k + 0.5)
            hi = stats.beta.ppf(1 - alpha / 2, k + 0.5, n - k + 0.5)
        elif method == "agresti_coull":
            n_t = n + z**2
            p_t = (k + z**2 / 2) / n_t
            half = z * np.sqrt(p_t * (1 - p_t) / n_t)
            lo, hi = np.clip(p_t - half, 0, 1), np.clip(p_t + half, 0, 1)
        elif method == "wald":
            half = z * np.sqrt(p * (1 - p) / n)
            lo, hi = np.clip(p - half, 0, 1), np.clip(p + half, 0, 1)
        else:
            raise ValueError(f"unknown interval method {method!r}; choose one of "
                             f"{', '.join(m for m in CI_METHODS if m != 'cluster')}")
    return np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)


def accuracy(
    data: RunsData,
    by: str | Sequence[str] | None = None,
    *,
    ci: str = "wilson",
    conf_level: float = 0.95,
    outcome: str | None = None,
    item: str | None = None,
    missing: str = "raise",
) -> pd.DataFrame:
    """Accuracy per group with a confidence interval.

    Parameters
    ----------
    data : DataFrame or path
        A runs table (from :func:`evalmix.read_runs`, any DataFrame with the outcome column, or a
        file), validated by :func:`evalmix.ensure_runs`: outcomes 0/1 or scores in [0, 1] (or
        k-of-n counts), no missing values, no duplicated (model, item, run, slices) key.
    by : str or list of str, optional
        Grouping columns, e.g. ``["model", "language", "prompt"]``.  None for one overall row.
    ci : str
        Interval method: one of :func:`binom_ci`'s, or ``"cluster"`` for the item-clustered CLT
        interval, which treats items, not rows, as the sampling unit: runs (and any other rows of
        the same item in the group) are averaged within item first, and the interval is
        ``mean +/- z * sd(item means) / sqrt(n_items)``.  Repeated runs of an item are not
        independent draws, so the row-level intervals are too narrow when items vary in difficulty.
    conf_level : float
        Coverage of the interval.
    outcome : str, optional
        The 0/1 outcome column; defaults to the one recorded by ``read_runs`` (k-of-n counts are
        used when the table has them), else ``"correct"``.
    item : str, optional
        Item column (needed for ``ci="cluster"``); defaults to the one recorded by ``read_runs``,
        else ``"item"``.
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    DataFrame
        The ``by`` columns and ``n`` (trials), ``k`` (successes), ``estimate``, ``lower``,
        ``upper``; with ``ci="cluster"`` also ``n_items`` and ``se``.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 4, "correct": [1, 1, 0, 1, 0, 0, 1, 0]})
    >>> accuracy(df, "model")[["model", "n", "k", "estimate"]]
      model  n  k  estimate
    0     a  4  3      0.75
    1     b  4  1      0.25
    """
    by_cols = [by] if isinstance(by, str) else list(by or [])
    frame, schema = ensure_runs(data, outcome=outcome, item=item, by=by_cols, need_item=ci == "cluster",
                                allow_fractional=True, missing=missing)
    if schema.counts:
        frame = frame.assign(_k=frame[schema.successes].astype(float),
                             _n=frame[schema.trials].astype(float))
    else:
        frame = frame.assign(_k=frame[schema.outcome].astype(float), _n=1.0)
    if by_cols:
        grouped = frame.groupby(by_cols, observed=True, sort=True)
        table = grouped[["_n", "_k"]].sum().reset_index()
    else:
        table = pd.DataFrame({"_n": [frame["_n"].sum()], "_k": [frame["_k"].sum()]})
    table["n"] = table.pop("_n").round().astype("int64")
    k_vals = table.pop("_k")
    table["k"] = k_vals.round().astype("int64") if np.allclose(k_vals, np.round(k_vals)) else k_vals
    table["estimate"] = k_vals / table["n"]

    if ci == "cluster":
        item_col = schema.item
        per_item = frame.groupby(by_cols + [item_col], observed=True, sort=True)[["_k", "_n"]].sum()
        per_item["mean"] = per_item["_k"] / per_item["_n"]
        level = list(range(len(by_cols))) if by_cols else None
        if by_cols:
            g = per_item["mean"].groupby(level=level, observed=True)
            stats_df = pd.DataFrame({"estimate": g.mean(), "sd": g.std(ddof=1), "n_items": g.size()})
            stats_df = stats_df.reset_index()
            table = table.drop(columns="estimate").merge(stats_df, on=by_cols, how="left")
        else:
            m = per_item["mean"]
            table["estimate"] = m.mean()
            table["sd"] = m.std(ddof=1)
            table["n_items"] = len(m)
        z = stats.norm.ppf(1 - (1 - conf_level) / 2)
        table["se"] = table.pop("sd") / np.sqrt(table["n_items"])
        table["lower"] = table["estimate"] - z * table["se"]
        table["upper"] = table["estimate"] + z * table["se"]
        cols = by_cols + ["n", "k", "n_items", "estimate", "se", "lower", "upper"]
        return table[cols]

    lo, hi = binom_ci(k_vals.to_numpy(), table["n"].to_numpy(), method=ci, conf_level=conf_level)
    table["lower"], table["upper"] = lo, hi
    return table[by_cols + ["n", "k", "estimate", "lower", "upper"]]
