"""Control variates: a sharper accuracy from a cheap proxy score whose mean is known.

Many evaluations record, beside the graded outcome, a number that tracks it and costs nothing
extra: the model's own probability of its answer, a small judge's score, the length of the
answer.  When the proxy's mean over the whole item population is known (it was computed on every
item of the benchmark, graded or not), the graded items' mean can be corrected by how far their
proxy mean strays from it::

    estimate = mean(y) - beta * (mean(x) - proxy_mean),   beta = cov(x, y) / var(x)

the regression (optimal-coefficient) control-variate estimator (Glynn & Szechtman 2002; Owen,
*Monte Carlo theory, methods and examples*, ch. 8): it is the intercept of the least-squares line
of ``y`` on ``x - proxy_mean``.  Its variance is the residual variance of that line over ``n``:
the fraction ``1 - rho^2`` of the plain mean's, where ``rho`` is the item-level correlation of
proxy and outcome.  The estimate is consistent for any proxy; a useless proxy costs one degree of
freedom, a good one is worth ``1 / (1 - rho^2)`` times as many items (``variance_ratio``,
``n_effective``).

**Items are the unit**, as in :mod:`evalmix.studies.sequential` and :mod:`evalmix.studies.ppi`: the outcome
``y`` and the proxy ``x`` of an item are the means over its runs, so runs of an item are never
counted as independent draws.  For a paired difference ``b - a`` both are the item-wise
differences of the two models' means (the proxy's difference is the control).

Standard error: the influence function of the estimator, ``sqrt(s_e^2 / n)`` with ``s_e^2`` the
residual variance of the line (divisor ``n - 2``); the interval uses Student's t with ``n - 2``
degrees of freedom, as the intercept of ``lm(y ~ I(x - proxy_mean))`` in R.  The error of the
estimated ``beta`` is of order ``1 / n`` and left out, as in the classical treatment.

When the proxy's mean is *not* known but the proxy was scored on many more items than the
outcome, the estimator that uses those unlabelled items is prediction-powered inference:
:func:`evalmix.ppi_mean` and :func:`evalmix.ppi_difference` (their PPI++ ``lambda`` is this
module's ``beta``, clipped to [0, 1], and their intervals count the unlabelled items' noise).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats

from ..core.result import Result, contrast_label
from ..core.arguments import check_level, check_number
from ..stats.comparisons import resolve_columns, runs_matrices, sole_model
from ..data.runs import RunsData, RunsSchema
from ..core.errors import DataError

__all__ = ["ControlVariateResult", "control_variate_accuracy", "control_variate_difference",
           "control_variate_mean"]

_MIN_ITEMS = 3  # the line has two parameters; the residual variance needs one more item


@dataclass(frozen=True, eq=False, repr=False)
class ControlVariateResult(Result):
    """A mean (an accuracy, or a paired difference) adjusted by a control variate.

    ``table`` has one row: the label column (``label_column``), ``estimate``, ``se``,
    ``conf_low``, ``conf_high``, ``df`` (of the t interval, ``n_items - 2``), ``plain_estimate``
    and ``plain_se`` (the unadjusted mean of the item means and its SE), ``coefficient`` (the
    estimated ``beta``), ``correlation`` (item-level, proxy with outcome), ``variance_ratio``
    (plain variance over adjusted variance: above 1 is a gain), ``n_effective`` (items the plain
    mean would need for the same SE, ``n_items * variance_ratio``), ``n_items`` and ``n_answers``
    (scored answers).
    """

    table: pd.DataFrame
    label_column: str
    proxy: str
    proxy_mean: float
    conf_level: float

    def _value(self, column: str) -> float:
        return float(object.__getattribute__(self, "table")[column].iloc[0])

    @property
    def estimate(self) -> float:
        """The adjusted mean."""
        return self._value("estimate")

    @property
    def se(self) -> float:
        """Its standard error."""
        return self._value("se")

    @property
    def conf_low(self) -> float:
        """Lower end of the interval."""
        return self._value("conf_low")

    @property
    def conf_high(self) -> float:
        """Upper end of the interval."""
        return self._value("conf_high")

    @property
    def variance_ratio(self) -> float:
        """Variance of the plain mean over that of the adjusted mean (the gain; 1 = none)."""
        return self._value("variance_ratio")

    def _title(self) -> str:
        return f"Control-variate estimate with proxy {self.proxy!r} (known mean {self.proxy_mean:g})"

    def _header(self) -> list[str]:
        return [f"conf_low/conf_high: {self.conf_level:.0%} t interval; items are the unit (runs of an "
                "item averaged)"]

    def _notes(self) -> list[str]:
        return ["variance_ratio: plain-mean variance / adjusted variance; n_effective: items the plain "
                "mean would need for the same se"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"proxy": self.proxy, "proxy_mean": self.proxy_mean,
                                    "conf_level": self.conf_level}


def _adjust(y: np.ndarray, x: np.ndarray, proxy_mean: float, conf_level: float,
            where: str) -> dict[str, float]:
    """The regression control-variate estimate of ``mean(y)`` and its gain, one item per entry."""
    n = len(y)
    if n < _MIN_ITEMS:
        raise DataError(f"{where}: a control-variate estimate needs at least {_MIN_ITEMS} items, got {n}")
    xc, yc = x - x.mean(), y - y.mean()
    sxx = float(xc @ xc)
    # the spread, not sum((x - mean)^2), which rounding leaves at ~1e-30 for a constant proxy
    if not np.ptp(x) > 1e-12 * max(1.0, float(np.abs(x).max())):
        raise DataError(f"{where}: the proxy is the same on every item, so it carries no information "
                        "about the outcome")
    beta = float(xc @ yc) / sxx
    resid = yc - beta * xc
    s2_e = max(float(resid @ resid), 0.0) / (n - 2)
    s2_y = float(yc @ yc) / (n - 1)
    estimate = float(y.mean()) - beta * (float(x.mean()) - proxy_mean)
    se = math.sqrt(s2_e / n)
    half = float(stats.t.ppf(0.5 + conf_level / 2, n - 2)) * se
    syy = float(yc @ yc)
    ratio = s2_y / s2_e if s2_e > 0 else math.inf
    return {"estimate": estimate, "se": se, "conf_low": estimate - half, "conf_high": estimate + half,
            "df": float(n - 2), "plain_estimate": float(y.mean()), "plain_se": math.sqrt(s2_y / n),
            "coefficient": beta,
            "correlation": float(xc @ yc) / math.sqrt(sxx * syy) if syy > 0 else math.nan,
            "variance_ratio": ratio, "n_effective": n * ratio, "n_items": n}


def _result(stats_: dict[str, float], label_column: str, label: str, n_answers: int, proxy: str,
            proxy_mean: float, conf_level: float) -> ControlVariateResult:
    row = {label_column: label} | stats_ | {"n_answers": int(n_answers)}
    return ControlVariateResult(pd.DataFrame([row]), label_column, proxy, float(proxy_mean), conf_level)


def control_variate_mean(outcome: ArrayLike, proxy: ArrayLike, *, proxy_mean: float,
                         conf_level: float = 0.95, label: str = "mean") -> ControlVariateResult:
    """Mean of ``outcome`` adjusted by the control variate ``proxy`` with known mean ``proxy_mean``.

    One entry per independent unit (for a runs table use :func:`control_variate_accuracy`, which
    averages the runs of each item first).  See the module notes for the estimator and its SE.

    Parameters
    ----------
    outcome, proxy : array-like
        The outcome and the proxy of each unit (same length, finite).
    proxy_mean : float
        The proxy's mean over the population the units were drawn from.
    conf_level : float
        Confidence level of the t interval.
    label : str
        The row's label (column ``name``).

    Returns
    -------
    ControlVariateResult

    Examples
    --------
    >>> y = [0.0, 1.0, 1.0, 0.0, 1.0, 1.0]
    >>> x = [0.2, 0.9, 0.7, 0.1, 0.8, 0.6]
    >>> r = control_variate_mean(y, x, proxy_mean=0.5)
    >>> row = r.to_frame().iloc[0]
    >>> round(r.estimate, 4), round(float(row["plain_estimate"]), 4), round(r.variance_ratio, 2)
    (0.5919, 0.6667, 7.78)
    """
    level = check_level(conf_level)
    mu = check_number(proxy_mean, "proxy_mean")
    y = np.asarray(outcome, dtype=float).ravel()
    x = np.asarray(proxy, dtype=float).ravel()
    if y.shape != x.shape:
        raise DataError(f"outcome and proxy differ in length ({len(y)} and {len(x)})")
    bad = np.flatnonzero(~(np.isfinite(y) & np.isfinite(x)))
    if bad.size:
        raise DataError(f"outcome and proxy must be finite; entry {int(bad[0])} is not")
    return _result(_adjust(y, x, mu, level, "control_variate_mean"), "name", label, len(y),
                   "proxy", mu, level)


def _check_proxy(df: pd.DataFrame, proxy: str) -> None:
    if proxy not in df.columns:
        raise DataError(f"proxy column {proxy!r} is not in the data (columns: "
                        f"{', '.join(map(str, df.columns))})")
    col = df[proxy]
    if not (pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col)):
        raise DataError(f"proxy column {proxy!r} must be numeric, found {col.dtype} values such as "
                        f"{col.dropna().iloc[0]!r}" if col.notna().any() else
                        f"proxy column {proxy!r} holds no values")
    values = col.to_numpy(dtype=float, na_value=np.nan)
    bad = np.flatnonzero(~np.isfinite(values))
    if bad.size:
        raise DataError(f"proxy column {proxy!r} has a missing or infinite value at row {df.index[bad[0]]!r}; "
                        "every scored answer needs its proxy")


def _item_means(df: pd.DataFrame, a: str, b: str, proxy: str,
               cols: RunsSchema) -> tuple[tuple[np.ndarray, np.ndarray, int], tuple[np.ndarray, np.ndarray, int]]:
    """Per-item means of outcome and proxy over the runs of models ``a`` and ``b`` (aligned on the
    shared items; a DataError names unshared ones), and the answers counted."""
    model, item = cols.role("model"), cols.role("item")
    ya, yb, _ = runs_matrices(df, a, b, model=model, item=item, run=cols.run, outcome=cols.scores)
    xa, xb, _ = runs_matrices(df, a, b, model=model, item=item, run=cols.run, outcome=proxy)
    out = []
    for y, x in ((ya, xa), (yb, xb)):
        k = (~np.isnan(y)).sum(axis=0)
        out.append((np.nansum(y, axis=0) / k, np.nansum(x, axis=0) / k, int(k.sum())))
    return out[0], out[1]


def _prepare(data: RunsData, proxy: str, model: str | None, item: str | None, run: str | None,
             outcome: str | None, missing: str) -> tuple[pd.DataFrame, RunsSchema]:
    df, cols = resolve_columns(data, model, item, run, outcome, missing=missing)
    _check_proxy(df, proxy)
    return df, cols


def control_variate_accuracy(data: RunsData, model: str | None = None, *, proxy: str, proxy_mean: float,
                             conf_level: float = 0.95, model_column: str | None = None,
                             item: str | None = None, run: str | None = None, outcome: str | None = None,
                             missing: str = "raise") -> ControlVariateResult:
    """One model's accuracy with a per-answer proxy score as a control variate.

    Each item contributes the mean of its runs' outcomes and of their proxy scores; the accuracy
    is the regression control-variate estimate (see the module notes) with the item as the unit.

    Parameters
    ----------
    data : DataFrame or path
        Long runs table with a proxy column.
    model : str, optional
        The model (required when the table holds several).
    proxy : str
        Column of the per-answer proxy score (any real scale: a probability, a judge's score).
    proxy_mean : float
        The proxy's mean over the whole item population (each item weighing the same, as the
        accuracy does), e.g. computed on every item of the benchmark.  Without it, use
        :func:`evalmix.ppi_mean` with the proxy scored on the ungraded items.
    conf_level : float
        Confidence level.
    model_column, item, run, outcome : str, optional
        Column names (default: the roles of :func:`evalmix.read_runs`).
    missing : {"raise", "drop"}
        Rows with a missing value in a role column (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    ControlVariateResult

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> p = rng.beta(3, 2, 300)                      # the items' true accuracies, mean 0.6
    >>> df = pd.DataFrame({"model": "m", "item": np.repeat(np.arange(300), 3),
    ...                    "run": np.tile([1, 2, 3], 300)})
    >>> df["correct"] = rng.binomial(1, p[df["item"]])
    >>> df["prob"] = p[df["item"]] + rng.normal(0, 0.1, len(df))   # the model's own confidence
    >>> r = control_variate_accuracy(df, "m", proxy="prob", proxy_mean=0.6)
    >>> round(r.estimate, 3), round(r.variance_ratio, 2)
    (0.611, 1.55)
    """
    level = check_level(conf_level)
    mu = check_number(proxy_mean, "proxy_mean")
    df, cols = _prepare(data, proxy, model_column, item, run, outcome, missing)
    model_col = cols.role("model")
    model = sole_model(df, model_col, model)
    (y, x, answers), _ = _item_means(df, model, model, proxy, cols)
    return _result(_adjust(y, x, mu, level, f"model {model!r}"), str(model_col), str(model), answers,
                   proxy, mu, level)


def control_variate_difference(data: RunsData, a: str, b: str, *, proxy: str,
                               proxy_mean: float | Mapping[str, float], conf_level: float = 0.95,
                               model: str | None = None, item: str | None = None, run: str | None = None,
                               outcome: str | None = None, missing: str = "raise") -> ControlVariateResult:
    """Paired accuracy difference ``b - a`` on shared items, with the proxy's difference as control.

    Each item contributes ``mean_b - mean_a`` of the outcomes and of the proxy scores over each
    model's runs; the difference is the regression control-variate estimate of the module notes
    (paired by item, clustered by item).

    Parameters
    ----------
    data : DataFrame or path
        Long runs table with a proxy column; both models score the same items.
    a, b : str
        The two models (``estimate = b - a``).
    proxy : str
        Column of the per-answer proxy score.
    proxy_mean : float or mapping
        The population mean of the proxy's difference ``b - a``, or ``{a: mean_a, b: mean_b}``,
        each model's proxy mean over the whole item population.
    conf_level : float
        Confidence level.
    model, item, run, outcome : str, optional
        Column names.
    missing : {"raise", "drop"}
        Rows with a missing value in a role column.

    Returns
    -------
    ControlVariateResult
        Labelled by ``contrast``; ``n_answers`` counts both models' answers.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(2)
    >>> p = rng.beta(3, 2, 400)
    >>> rows = []
    >>> for name, shift in (("a", 0.0), ("b", 0.05)):
    ...     q = np.clip(p + shift, 0, 1)
    ...     rows.append(pd.DataFrame({"model": name, "item": np.arange(400), "run": 1,
    ...                               "correct": rng.binomial(1, q), "prob": q + rng.normal(0, 0.1, 400)}))
    >>> df = pd.concat(rows)
    >>> mean_prob = {"a": 0.6, "b": float(np.clip(rng.beta(3, 2, 10**6) + 0.05, 0, 1).mean())}
    >>> r = control_variate_difference(df, "a", "b", proxy="prob", proxy_mean=mean_prob)
    >>> r.to_frame()["contrast"].iloc[0], r.conf_low < 0.05 < r.conf_high
    ('b - a', True)
    """
    level = check_level(conf_level)
    if isinstance(proxy_mean, Mapping):
        missing_keys = [m for m in (a, b) if m not in proxy_mean]
        if missing_keys:
            raise DataError(f"proxy_mean has no mean for model(s) {missing_keys}; give {{{a!r}: ..., {b!r}: ...}} "
                            "or the mean of the difference as one number")
        mu = (check_number(proxy_mean[b], f"proxy_mean[{b!r}]")
              - check_number(proxy_mean[a], f"proxy_mean[{a!r}]"))
    else:
        mu = check_number(proxy_mean, "proxy_mean")
    df, cols = _prepare(data, proxy, model, item, run, outcome, missing)
    (ya, xa, na), (yb, xb, nb) = _item_means(df, a, b, proxy, cols)
    label = contrast_label(b, a, scale="accuracy")
    return _result(_adjust(yb - ya, xb - xa, mu, level, label), "contrast", label, na + nb, proxy, mu, level)
