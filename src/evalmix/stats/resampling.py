"""Bootstrap intervals: plain, clustered by item, paired, instance-level and run-level.

All resampling here is vectorised.  Statistics that are ratios of sums over resampled units
(means, accuracies, cluster accuracies, mean differences) never materialise the resampled data:
when the units take few distinct values (0/1 outcomes, run means of k runs) the bootstrap draws
multinomial counts over the distinct values, which has exactly the distribution of resampling
units with replacement; otherwise it gathers unit sums in chunks.  Confusion-matrix metrics
(accuracy, F1, precision, recall, macro F1) are resampled the same way over confusion cells.

What each interval covers (see ``docs/choosing-a-method.md``):

- :func:`bootstrap_ci`, :func:`cluster_bootstrap`, :func:`paired_bootstrap`: the expected score
  (or difference) over the population of items that the benchmark samples.
- :func:`instance_bootstrap`: the spread of a *single run's* score on a comparable test set,
  i.e. a range for one future run, not a confidence interval for the mean.
- :func:`run_level_ci`: the mean of per-run scores on these same items; it shrinks like
  ``1/sqrt(runs)`` and says nothing about other items.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats
from scipy.special import ndtr, ndtri

from ..core.arguments import check_arguments, check_choice, check_level
from ..core.seeds import accepts_seed, as_generator
from ..core.result import Result
from ..data.runs import RunsData, ensure_runs
from ..core.errors import DataError
from .paired import ComparisonResult, item_means

__all__ = ["BootstrapResult", "BootstrapTable", "bootstrap_ci", "cluster_bootstrap",
           "instance_bootstrap", "paired_bootstrap", "plausible_run_scores", "run_level_ci",
           "resample_sums"]

_METHODS = ("percentile", "basic", "bca", "t")
_CHUNK_CELLS = 250_000  # elements per gathered chunk: stays in cache, ~2 MB of indices


@dataclass(frozen=True, eq=False, repr=False)
class BootstrapResult(Result):
    """A bootstrap estimate with its interval.

    Attributes
    ----------
    estimate : float
        The statistic on the original data.
    se : float
        Standard deviation of the bootstrap distribution.
    conf_low, conf_high : float
        Interval bounds.
    method : str
        Interval method (``percentile``, ``basic``, ``bca``, ``t``; ``student`` for run-level t).
    conf_level : float
        Interval level.
    n_boot : int
        Number of resamples (0 for closed-form intervals).
    distribution : ndarray
        The bootstrap replicates (empty for closed-form intervals).
    details : dict
        Extras (bias, number of units, acceleration...).
    """

    estimate: float
    se: float
    conf_low: float
    conf_high: float
    method: str
    conf_level: float
    n_boot: int
    distribution: np.ndarray = field(default_factory=lambda: np.empty(0), repr=False)
    details: dict[str, Any] = field(default_factory=dict)

    def _title(self) -> str:
        return f"Bootstrap interval ({self.method}, {self.conf_level:.0%})"

    def to_frame(self) -> pd.DataFrame:
        row = {"estimate": self.estimate, "se": self.se, "conf_low": self.conf_low,
               "conf_high": self.conf_high, "method": self.method, "conf_level": self.conf_level,
               "n_boot": self.n_boot}
        row.update({k: v for k, v in self.details.items() if np.isscalar(v)})
        return pd.DataFrame([row])

    @property
    def half_width(self) -> float:
        """Half the width of the interval."""
        return (self.conf_high - self.conf_low) / 2


@dataclass(frozen=True, eq=False, repr=False)
class BootstrapTable(Result):
    """Bootstrap intervals for several groups resampled together (same items in every group).

    Attributes
    ----------
    table : DataFrame
        One row per group: ``group``, ``estimate``, ``se``, ``conf_low``, ``conf_high``.
    distributions : DataFrame
        Replicates, one column per group (rows are shared resamples, so differences between
        columns are paired bootstrap replicates).
    """

    table: pd.DataFrame
    distributions: pd.DataFrame = field(repr=False)

    def _title(self) -> str:
        return "Bootstrap intervals by group (shared resamples)"

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()


# ----------------------------------------------------------------------------- engine

def resample_sums(units: np.ndarray, n_boot: int, rng: np.random.Generator,
                  size: int | None = None, key: np.ndarray | None = None) -> np.ndarray:
    """Column sums of ``units`` rows resampled with replacement, ``n_boot`` times.

    Parameters
    ----------
    units : ndarray, shape (n, p)
        One row of sufficient statistics per resampling unit.
    n_boot : int
        Number of resamples.
    rng : Generator
        Random generator.
    size : int, optional
        Units drawn per resample (default ``n``).
    key : ndarray, shape (n,), optional
        A 1-D value that determines each row (e.g. ``x`` for rows ``[x, x**2]``); finding the
        distinct rows through it is faster.

    Returns
    -------
    ndarray, shape (n_boot, p)

    Examples
    --------
    >>> import numpy as np
    >>> from evalmix.stats.resampling import resample_sums
    >>> units = np.column_stack([[1, 0, 1, 1], [1, 1, 1, 1]])  # (successes, trials) per item
    >>> sums = resample_sums(units, 5, np.random.default_rng(0))
    >>> sums.shape, bool((sums[:, 1] == 4).all())
    ((5, 2), True)
    """
    check_arguments(n_boot=n_boot)
    u = np.asarray(units, dtype=float)
    if u.ndim == 1:
        u = u[:, None]
    n = u.shape[0]
    size = n if size is None else int(size)
    if key is not None:
        _, first, counts = np.unique(key, return_index=True, return_counts=True)
        uniq = u[first]
    else:
        uniq, counts = np.unique(u, axis=0, return_counts=True)
    if uniq.shape[0] <= max(64, n // 16):
        # few distinct units: multinomial counts over them (exactly the bootstrap distribution)
        w = rng.multinomial(size, counts / n, size=n_boot)
        return w @ uniq
    out = np.empty((n_boot, u.shape[1]))
    cols = [np.ascontiguousarray(u[:, j]) for j in range(u.shape[1])]
    chunk = max(1, _CHUNK_CELLS // size)
    for start in range(0, n_boot, chunk):
        m = min(chunk, n_boot - start)
        idx = rng.integers(0, n, (m, size))
        for j, col in enumerate(cols):
            out[start:start + m, j] = np.take(col, idx).sum(axis=1)
    return out


def _alpha(conf_level: float) -> float:
    return (1 - check_level(conf_level)) / 2


def _bca_levels(boot: np.ndarray, theta: float, jack: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """BCa percentile levels (Efron & Tibshirani 1993, eq. 14.10), as scipy computes them."""
    pct = (np.count_nonzero(boot < theta) + np.count_nonzero(boot <= theta)) / (2 * boot.size)
    z0 = ndtri(pct)
    dev = jack.mean() - jack
    den = np.sum(dev ** 2) ** 1.5
    a = float(np.sum(dev ** 3) / (6 * den)) if den > 0 else 0.0
    za = ndtri(alpha)
    lo = ndtr(z0 + (z0 + za) / (1 - a * (z0 + za)))
    hi = ndtr(z0 + (z0 - za) / (1 - a * (z0 - za)))
    return float(lo), float(hi), a


def _interval(boot: np.ndarray, theta: float, method: str, conf_level: float,
              jack: np.ndarray | None = None, t_boot: np.ndarray | None = None,
              se_hat: float | None = None) -> tuple[float, float, dict]:
    alpha = _alpha(conf_level)
    extra: dict = {}
    if method == "percentile":
        lo, hi = np.quantile(boot, [alpha, 1 - alpha])
    elif method == "basic":
        qlo, qhi = np.quantile(boot, [alpha, 1 - alpha])
        lo, hi = 2 * theta - qhi, 2 * theta - qlo
    elif method == "bca":
        if jack is None:
            raise ValueError("BCa needs jackknife values")
        la, ua, a = _bca_levels(boot, theta, jack, alpha)
        if not (np.isfinite(la) and np.isfinite(ua)):
            lo = hi = math.nan
        else:
            lo, hi = np.quantile(boot, [la, ua])
        extra["acceleration"] = a
    elif method == "t":
        t = t_boot[np.isfinite(t_boot)] if t_boot is not None else np.empty(0)
        if t.size == 0 or se_hat is None:
            lo = hi = math.nan
        else:
            tlo, thi = np.quantile(t, [alpha, 1 - alpha])
            lo, hi = theta - thi * se_hat, theta - tlo * se_hat
        extra["n_valid_t"] = int(t.size)
    else:
        raise ValueError(f"method must be one of {_METHODS}, got {method!r}")
    return float(lo), float(hi), extra


def _is_mean(stat: Any) -> bool:
    return stat == "mean" or stat is np.mean or stat is np.average


def _apply_stat(stat: Callable, samples: np.ndarray) -> np.ndarray:
    """Evaluate ``stat`` row-wise: vectorised through ``axis=-1`` when it accepts it."""
    try:
        out = np.asarray(stat(samples, axis=-1), dtype=float)
        if out.shape == (samples.shape[0],):
            return out
    except TypeError:
        pass
    return np.array([float(stat(row)) for row in samples])


# ----------------------------------------------------------------------------- bootstrap_ci

@accepts_seed
def bootstrap_ci(values: ArrayLike, stat: str | Callable[..., float] = "mean", *, method: str = "percentile",
                 n_boot: int = 10_000, conf_level: float = 0.95,
                 rng: int | np.random.Generator | None = None) -> BootstrapResult:
    """Bootstrap confidence interval of a statistic of one sample.

    Parameters
    ----------
    values : array_like, 1-D
        The observations (e.g. per-item scores).
    stat : "mean" or callable
        The statistic.  A callable receives a 1-D array; if it also accepts ``axis=-1`` it is
        evaluated on a whole block of resamples at once.
    method : {"percentile", "basic", "bca", "t"}
        Percentile, basic (reverse percentile), bias-corrected and accelerated (jackknife
        acceleration), or bootstrap-t (studentized; for the mean, using ``sd / sqrt(n)`` of each
        resample).
    n_boot : int
        Number of resamples.
    conf_level : float
        Interval level.
    rng : int or Generator, optional
        Random numbers: a seed or a numpy Generator.

    Returns
    -------
    BootstrapResult

    Notes
    -----
    The percentile, basic and BCa intervals follow ``scipy.stats.bootstrap`` (same quantile rule,
    bias correction and acceleration); given the same resamples they are equal.  For the mean
    the replicates are drawn as multinomial counts over the distinct values when there are few of
    them, so 10,000 resamples of 0/1 data of any size take milliseconds.  In R:
    ``boot::boot.ci(boot(x, function(x, i) mean(x[i]), R), type = c("perc", "basic", "bca", "stud"))``.

    Examples
    --------
    >>> import numpy as np
    >>> from evalmix import bootstrap_ci
    >>> x = np.r_[np.ones(70), np.zeros(30)]
    >>> r = bootstrap_ci(x, method="bca", n_boot=2000, rng=1)
    >>> r.estimate, r.conf_low < 0.7 < r.conf_high
    (0.7, True)
    """
    check_arguments(n_boot=n_boot, conf_level=conf_level, rng=rng)
    x = np.asarray(values, dtype=float)
    if x.ndim != 1:
        raise DataError(f"`values` must be 1-D, got shape {x.shape}")
    if x.size < 2:
        raise DataError("bootstrap needs at least 2 observations")
    if np.isnan(x).any():
        raise DataError("`values` contains NaN")
    check_choice(method, "method", _METHODS)
    rng = as_generator(rng)
    n = x.size
    jack = t_boot = se_hat = None
    if _is_mean(stat):
        theta = float(x.mean())
        # the sum of squares is only needed for the studentized (bootstrap-t) interval
        units = np.column_stack([x, x * x]) if method == "t" else x[:, None]
        sums = resample_sums(units, n_boot, rng, key=x)
        boot = sums[:, 0] / n
        if method == "bca":
            jack = (x.sum() - x) / (n - 1)
        if method == "t":
            var_b = np.maximum(sums[:, 1] - sums[:, 0] ** 2 / n, 0) / (n - 1)
            se_b = np.sqrt(var_b / n)
            with np.errstate(divide="ignore", invalid="ignore"):
                t_boot = (boot - theta) / se_b
            se_hat = float(x.std(ddof=1) / math.sqrt(n))
    else:
        if not callable(stat):
            raise ValueError(f"stat must be 'mean' or a callable, got {stat!r}")
        theta = float(stat(x))
        boot = np.empty(n_boot)
        chunk = max(1, _CHUNK_CELLS // n)
        for start in range(0, n_boot, chunk):
            m = min(chunk, n_boot - start)
            boot[start:start + m] = _apply_stat(stat, x[rng.integers(0, n, (m, n))])
        if method == "bca":
            jack = np.empty(n)
            keep = ~np.eye(n, dtype=bool) if n <= 2000 else None
            if keep is not None:
                jack[:] = _apply_stat(stat, np.broadcast_to(x, (n, n))[keep].reshape(n, n - 1))
            else:
                for i in range(n):
                    jack[i] = stat(np.delete(x, i))
        if method == "t":
            raise ValueError("method='t' (bootstrap-t) needs a standard error per resample and is "
                             "available for stat='mean'; use 'bca' or 'percentile' for other statistics")
    lo, hi, extra = _interval(boot, theta, method, conf_level, jack=jack, t_boot=t_boot, se_hat=se_hat)
    details = {"bias": float(boot.mean() - theta), "n": n, **extra}
    se = float(boot.std(ddof=1)) if n_boot > 1 else math.nan  # one replicate has no spread
    return BootstrapResult(estimate=theta, se=se, conf_low=lo, conf_high=hi,
                           method=method, conf_level=conf_level, n_boot=n_boot, distribution=boot,
                           details=details)


# ----------------------------------------------------------------------------- cluster bootstrap

@accepts_seed
def cluster_bootstrap(data: RunsData, *, item: str | None = None, outcome: str | None = None,
                      by: str | list[str] | None = None, method: str = "percentile",
                      n_boot: int = 10_000, conf_level: float = 0.95,
                      rng: int | np.random.Generator | None = None, missing: str = "raise") -> BootstrapResult | BootstrapTable:
    """Item (cluster) bootstrap of accuracy from a long runs table.

    Items, not rows, are resampled: each resample draws ``n_items`` items with replacement and
    keeps all their rows (every run, every model), so the correlation of runs within an item is
    respected and groups (``by``) are compared on the same resampled items.

    Parameters
    ----------
    data : DataFrame or path
        Long table with one row per observation.
    item, outcome : str, optional
        Cluster column and 0/1 (or fractional) outcome column (default: the roles recorded by
        :func:`evalmix.read_runs`, else ``item`` and ``correct``; k-of-n tables are weighted by
        their trials).
    by : str or list of str, optional
        Grouping columns (e.g. ``"model"``); one interval per group from shared resamples.
    method : {"percentile", "basic", "bca"}
        Interval method (BCa uses the leave-one-item-out jackknife).
    n_boot, conf_level, rng
        As in :func:`bootstrap_ci`.
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    BootstrapResult (no ``by``) or BootstrapTable (one row per group)

    Notes
    -----
    The statistic is the ratio estimator ``sum(outcome) / rows`` over the resampled items, which
    is the plain accuracy when the design is balanced.  In R: ``boot::boot`` with a statistic that
    indexes items, or ``lme4::bootMer`` for model-based resampling.

    Examples
    --------
    >>> from evalmix import cluster_bootstrap
    >>> from evalmix.simulate import mixture_benchmark
    >>> df = mixture_benchmark(500, 3, rng=2)
    >>> tab = cluster_bootstrap(df, by="model", n_boot=500, rng=1)
    >>> list(tab.table["group"])
    ['base', 'clone', 'finetune']
    """
    check_arguments(n_boot=n_boot, conf_level=conf_level, rng=rng, missing=missing)
    by_cols = [by] if isinstance(by, str) else list(by or [])
    data, schema = ensure_runs(data, item=item, outcome=outcome, need_item=True, by=by_cols,
                               allow_fractional=True, missing=missing)
    item = schema.item
    outcome, trials = (schema.successes, schema.trials) if schema.counts else (schema.outcome, None)
    if method == "t":
        raise ValueError("cluster_bootstrap supports 'percentile', 'basic' and 'bca'")
    y = data[outcome].astype(float)
    if by is None:
        keys = pd.Series("all", index=data.index)
    elif isinstance(by, str):
        keys = data[by].astype(str)
    else:
        keys = data[list(by)].astype(str).agg(" | ".join, axis=1)
    w = data[trials].astype(float).to_numpy() if trials else np.ones(len(data))
    frame = pd.DataFrame({"item": data[item].to_numpy(), "g": keys.to_numpy(), "sum": y.to_numpy(),
                          "count": w})
    agg = frame.groupby(["item", "g"], observed=True)[["sum", "count"]].sum().unstack("g", fill_value=0)
    groups = list(pd.unique(keys)) if by is not None else ["all"]
    s = agg["sum"][groups].to_numpy(dtype=float)
    c = agg["count"][groups].to_numpy(dtype=float)
    n_items = s.shape[0]
    if n_items < 2:
        raise DataError("cluster bootstrap needs at least 2 items")
    rng = as_generator(rng)
    sums = resample_sums(np.hstack([s, c]), n_boot, rng)
    g = len(groups)
    with np.errstate(divide="ignore", invalid="ignore"):
        boot = sums[:, :g] / sums[:, g:]
        theta = s.sum(axis=0) / c.sum(axis=0)
        jack = (s.sum(axis=0) - s) / (c.sum(axis=0) - c)
    rows: list[dict[str, Any]] = []
    dists = {}
    for j, name in enumerate(groups):
        bj = boot[:, j]
        bj = bj[np.isfinite(bj)]
        lo, hi, extra = _interval(bj, float(theta[j]), method, conf_level, jack=jack[:, j])
        rows.append({"group": name, "estimate": float(theta[j]), "se": float(bj.std(ddof=1)),
                     "conf_low": lo, "conf_high": hi, "n_items": int((c[:, j] > 0).sum()),
                     "n_rows": int(c[:, j].sum())})
        dists[name] = boot[:, j]
    if by is None:
        r = rows[0]
        return BootstrapResult(estimate=r["estimate"], se=r["se"], conf_low=r["conf_low"],
                               conf_high=r["conf_high"], method=method, conf_level=conf_level,
                               n_boot=n_boot, distribution=boot[:, 0],
                               details={"n_items": n_items, "n_rows": r["n_rows"]})
    table = pd.DataFrame(rows)
    table.insert(5, "method", method)
    return BootstrapTable(table=table, distributions=pd.DataFrame(dists))


# ----------------------------------------------------------------------------- paired bootstrap

@accepts_seed
def paired_bootstrap(a: ArrayLike, b: ArrayLike, *, method: str = "percentile", n_boot: int = 10_000,
                     conf_level: float = 0.95,
                     rng: int | np.random.Generator | None = None) -> ComparisonResult:
    """Paired item bootstrap of the mean difference ``b - a``.

    Runs are averaged within item first; the per-item differences are then resampled with
    replacement (the same items for both models), which keeps the pairing.

    Parameters
    ----------
    a, b : array_like
        Scores, ``(runs, items)`` or per-item ``(items,)``.
    method : {"percentile", "basic", "bca", "t"}
        Interval method (see :func:`bootstrap_ci`).
    n_boot, conf_level, rng
        As in :func:`bootstrap_ci`.

    Returns
    -------
    ComparisonResult
        ``p_value`` is the shifted-null bootstrap p-value
        ``(1 + #{|d*_b - mean(d)| >= |mean(d)|}) / (1 + n_boot)``; ``se`` the bootstrap SD.

    Examples
    --------
    >>> import numpy as np
    >>> from evalmix import paired_bootstrap
    >>> rng = np.random.default_rng(0)
    >>> a = rng.integers(0, 2, (3, 200)); b = np.maximum(a, rng.integers(0, 2, (3, 200)))
    >>> r = paired_bootstrap(a, b, n_boot=2000, rng=1)
    >>> r.conf_low > 0
    True
    """
    check_arguments(n_boot=n_boot, conf_level=conf_level, rng=rng)
    ma, mb = item_means(a, b)
    d = mb - ma
    res = bootstrap_ci(d, "mean", method=method, n_boot=n_boot, conf_level=conf_level, rng=rng)
    est = res.estimate
    tol = 1e-12 * max(1.0, abs(est))
    hits = int(np.sum(np.abs(res.distribution - est) >= abs(est) - tol))
    p = (1 + hits) / (1 + n_boot) if est != 0 else 1.0
    sd = d.std(ddof=1)
    corr = float(np.corrcoef(ma, mb)[0, 1]) if ma.std() > 0 and mb.std() > 0 else math.nan
    return ComparisonResult(method=f"paired_bootstrap_{method}", estimate=est, se=res.se,
                            conf_low=res.conf_low, conf_high=res.conf_high, statistic=est,
                            df=math.nan, p_value=float(p), conf_level=conf_level, n=d.size,
                            details={"cohens_d": est / sd if sd > 0 else math.nan,
                                     "correlation": corr, "n_boot": n_boot})


# ----------------------------------------------------------------------------- confusion metrics

_CONFUSION_METRICS = ("accuracy", "f1", "precision", "recall", "macro_f1")


def encode_labels(preds: np.ndarray, gold: np.ndarray, pos_label: str | int | float) -> tuple[np.ndarray, int, int]:
    """Cell codes ``gold * K + pred`` of every prediction, K and the index of ``pos_label``."""
    classes = np.unique(np.concatenate([np.asarray(gold).ravel(), np.asarray(preds).ravel()]))
    k = classes.size
    g = np.searchsorted(classes, gold)
    p = np.searchsorted(classes, preds)
    pos = np.searchsorted(classes, pos_label)
    pos_idx = int(pos) if pos < k and classes[pos] == pos_label else -1
    return g * k + p, k, pos_idx


def metric_from_cells(cells: np.ndarray, k: int, metric: str, pos: int) -> np.ndarray:
    """Metric from confusion counts ``cells`` of shape (B, K*K) (rows gold, columns pred)."""
    cm = cells.reshape(-1, k, k).astype(float)
    total = cm.sum(axis=(1, 2))
    diag = np.diagonal(cm, axis1=1, axis2=2)
    with np.errstate(divide="ignore", invalid="ignore"):
        if metric == "accuracy":
            return diag.sum(axis=1) / total
        pred_tot = cm.sum(axis=1)  # per predicted class
        gold_tot = cm.sum(axis=2)  # per gold class
        f1_all = np.where(pred_tot + gold_tot > 0, 2 * diag / (pred_tot + gold_tot), 0.0)
        if metric == "macro_f1":
            return f1_all.mean(axis=1)
        if pos < 0:
            raise DataError("pos_label does not occur among the labels")
        tp = diag[:, pos]
        if metric == "f1":
            return f1_all[:, pos]
        if metric == "precision":
            return np.where(pred_tot[:, pos] > 0, tp / pred_tot[:, pos], 0.0)
        if metric == "recall":
            return np.where(gold_tot[:, pos] > 0, tp / gold_tot[:, pos], 0.0)
    raise ValueError(f"metric must be one of {_CONFUSION_METRICS} or a callable, got {metric!r}")


def preds_gold(preds: ArrayLike, gold: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    p = np.asarray(preds)
    g = np.asarray(gold)
    if p.ndim == 1:
        p = p[None, :]
    if p.ndim != 2 or g.ndim != 1 or p.shape[1] != g.size:
        raise DataError(f"`preds` must be (runs, instances) and `gold` (instances,), got "
                        f"{p.shape} and {g.shape}")
    return p, g


@accepts_seed
def instance_bootstrap(preds: ArrayLike, gold: ArrayLike, *, metric: str | Callable[[np.ndarray, np.ndarray], float] = "f1",
                       n_boot: int = 5000, conf_level: float = 0.95, pos_label: str | int | float = 1,
                       resample_size: str = "instances",
                       rng: int | np.random.Generator | None = None) -> BootstrapResult:
    """Instance-level bootstrap over the pooled predictions of several runs.

    The prediction/label pairs of all ``m`` runs are concatenated into one set of ``l * m`` pairs;
    each resample draws ``l`` pairs (the size of one test set) with replacement and computes the
    metric; the interval is the percentile interval of those replicates.

    Parameters
    ----------
    preds : array_like, shape (n_runs, n_instances) or (n_instances,)
        Predicted labels of each run.
    gold : array_like, shape (n_instances,)
        Gold labels.
    metric : {"f1", "accuracy", "precision", "recall", "macro_f1"} or callable
        Built-ins are computed from resampled confusion counts (fast); a callable
        ``metric(pred, gold) -> float`` is evaluated on each resample.
    n_boot : int
        Number of resamples.
    conf_level : float
        Interval level.
    pos_label : label
        Positive class of ``f1``, ``precision`` and ``recall``.
    resample_size : {"instances", "pooled"}
        Draw ``l`` pairs (one test set's worth; the default) or all ``l * m``.
    rng : int or Generator, optional
        Random numbers: a seed or a numpy Generator.

    Returns
    -------
    BootstrapResult
        ``estimate`` is the metric on the pooled pairs; ``details["boot_mean"]`` the mean of the
        replicates (the point estimate the method's authors report).

    Notes
    -----
    The interval mixes instance sampling and run-to-run variation: it describes where the score
    of one run on a comparable test set is expected to fall, which is wider than a confidence
    interval for the expected score (see :func:`cluster_bootstrap`).  With ``resample_size=
    "instances"`` it does not narrow as runs are added.

    Examples
    --------
    >>> from evalmix import instance_bootstrap
    >>> from evalmix.simulate.mixture import mixture_predictions
    >>> preds, gold = mixture_predictions(400, 3, rng=0)
    >>> r = instance_bootstrap(preds, gold, metric="f1", n_boot=1000, rng=1)
    >>> r.conf_low < r.estimate < r.conf_high
    True
    """
    check_arguments(n_boot=n_boot, conf_level=conf_level, rng=rng)
    p, g = preds_gold(preds, gold)
    m, l_ = p.shape
    check_choice(resample_size, "resample_size", ("instances", "pooled"))
    size = l_ if resample_size == "instances" else l_ * m
    rng = as_generator(rng)
    gold_pooled = np.tile(g, m)
    pred_pooled = p.ravel()
    if callable(metric):
        theta = float(metric(pred_pooled, gold_pooled))
        boot = np.empty(n_boot)
        for i in range(n_boot):
            idx = rng.integers(0, l_ * m, size)
            boot[i] = metric(pred_pooled[idx], gold_pooled[idx])
        name = getattr(metric, "__name__", "metric")
    else:
        codes, k, pos = encode_labels(pred_pooled, gold_pooled, pos_label)
        counts = np.bincount(codes, minlength=k * k)
        theta = float(metric_from_cells(counts[None, :], k, metric, pos)[0])
        cells = rng.multinomial(size, counts / counts.sum(), size=n_boot)
        boot = metric_from_cells(cells, k, metric, pos)
        name = metric
    lo, hi, _ = _interval(boot, theta, "percentile", conf_level)
    se = float(boot.std(ddof=1)) if n_boot > 1 else math.nan  # one replicate has no spread
    return BootstrapResult(estimate=theta, se=se, conf_low=lo, conf_high=hi,
                           method="instance", conf_level=conf_level, n_boot=n_boot,
                           distribution=boot, details={"metric": name, "n_runs": m,
                                                       "n_instances": l_,
                                                       "boot_mean": float(boot.mean())})


@accepts_seed
def plausible_run_scores(preds: ArrayLike, gold: ArrayLike, *, metric: str = "f1", n_sims: int = 25_000,
                         pos_label: str | int | float = 1,
                         rng: int | np.random.Generator | None = None) -> np.ndarray:
    """Scores of hypothetical runs built by picking, for every instance, one observed run's answer.

    This is the reference distribution of "plausible single-run scores on this test set" used
    to judge interval coverage: each hypothetical prediction set takes, for each instance
    independently, the prediction of a uniformly chosen run.

    Parameters
    ----------
    preds : array_like, shape (n_runs, n_instances)
    gold : array_like, shape (n_instances,)
    metric : {"f1", "accuracy", "precision", "recall", "macro_f1"}
    n_sims : int
        Number of hypothetical runs.
    pos_label : label
        Positive class.
    rng : int or Generator, optional

    Returns
    -------
    ndarray, shape (n_sims,)

    Examples
    --------
    >>> from evalmix.stats.resampling import plausible_run_scores
    >>> from evalmix.simulate.mixture import mixture_predictions
    >>> preds, gold = mixture_predictions(200, 5, rng=0)
    >>> plausible_run_scores(preds, gold, metric="accuracy", n_sims=10, rng=1).shape
    (10,)
    """
    check_arguments(n_sims=n_sims, rng=rng)
    p, g = preds_gold(preds, gold)
    m, l_ = p.shape
    codes, k, pos = encode_labels(p, np.broadcast_to(g, p.shape), pos_label)
    rng = as_generator(rng)
    out = np.empty(n_sims)
    chunk = max(1, _CHUNK_CELLS // l_)
    cols = np.arange(l_)
    for start in range(0, n_sims, chunk):
        c = min(chunk, n_sims - start)
        picks = codes[rng.integers(0, m, (c, l_)), cols]
        flat = (picks + (np.arange(c) * k * k)[:, None]).ravel()
        cells = np.bincount(flat, minlength=c * k * k).reshape(c, k * k)
        out[start:start + c] = metric_from_cells(cells, k, metric, pos)
    return out


# ----------------------------------------------------------------------------- run-level intervals

@accepts_seed
def run_level_ci(scores: ArrayLike, *, method: str = "t", conf_level: float = 0.95, n_boot: int = 5000,
                 rng: int | np.random.Generator | None = None) -> BootstrapResult:
    """Interval for the mean of per-run aggregate scores (one number per run).

    Parameters
    ----------
    scores : array_like, 1-D
        The metric of each run (at least 2 runs).
    method : {"t", "percentile", "bca", "t_boot"}
        Student t interval ``mean +/- t_{m-1} sd / sqrt(m)``, or the percentile, BCa or
        bootstrap-t interval of the mean of the run scores.
    conf_level, n_boot, rng
        As in :func:`bootstrap_ci`.

    Returns
    -------
    BootstrapResult

    Notes
    -----
    These intervals estimate the mean score over runs *on these items*: they narrow as runs are
    added and do not cover where another single run will land, nor the score on other items.

    Examples
    --------
    >>> from evalmix import run_level_ci
    >>> r = run_level_ci([0.61, 0.63, 0.60, 0.62], method="t")
    >>> round(r.estimate, 3), round(r.conf_low, 3), round(r.conf_high, 3)
    (0.615, 0.594, 0.636)
    """
    check_arguments(n_boot=n_boot, conf_level=conf_level, rng=rng)
    x = np.asarray(scores, dtype=float)
    if x.ndim != 1 or x.size < 2:
        raise DataError(f"run_level_ci needs at least 2 run scores, got shape {x.shape}")
    if method == "t":
        m = x.size
        se = float(x.std(ddof=1) / math.sqrt(m))
        q = float(stats.t.ppf(0.5 + conf_level / 2, m - 1))
        est = float(x.mean())
        return BootstrapResult(estimate=est, se=se, conf_low=est - q * se, conf_high=est + q * se,
                               method="student", conf_level=conf_level, n_boot=0,
                               details={"n_runs": m})
    boot_method = {"percentile": "percentile", "bca": "bca", "t_boot": "t"}.get(method)
    if boot_method is None:
        raise ValueError(f"method must be 't', 'percentile', 'bca' or 't_boot', got {method!r}")
    r = bootstrap_ci(x, "mean", method=boot_method, n_boot=n_boot, conf_level=conf_level, rng=rng)
    return BootstrapResult(estimate=r.estimate, se=r.se, conf_low=r.conf_low, conf_high=r.conf_high,
                           method=method, conf_level=conf_level, n_boot=n_boot,
                           distribution=r.distribution, details={**r.details, "n_runs": x.size})
