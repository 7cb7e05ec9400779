"""pass@k and pass^k from repeated attempts, with item-clustered intervals and a beta-binomial model.

An item attempted ``n`` times with ``c`` successes gives unbiased estimates of two probabilities
about ``k`` fresh attempts (``k <= n``):

- **pass@k**, at least one of k attempts succeeds (Chen et al. 2021, the HumanEval estimator)::

      pass@k_i = 1 - C(n - c, k) / C(n, k)

- **pass^k**, all k attempts succeed (the reliability metric of tau-bench, Yao et al. 2024)::

      pass^k_i = C(c, k) / C(n, k)

Both are unbiased for the item's ``1 - (1 - p_i)^k`` and ``p_i^k`` (they are U-statistics of the
item's attempts); the benchmark value is their mean over items.  Items are the sampling unit, so the
standard error is the standard deviation of the per-item estimates over ``sqrt(N)`` (this includes
the attempt-to-attempt noise within items; it is the variance of the mean of independent, unbiased
item estimates) or an item bootstrap.

:func:`pass_k_model` fits a beta-binomial model per group (item success probabilities
``p_i ~ Beta(alpha, beta)``) by maximum likelihood and predicts
``pass@k = 1 - B(alpha, beta + k) / B(alpha, beta)`` and ``pass^k = B(alpha + k, beta) / B(alpha, beta)``
for any k, also beyond the number of attempts, with delta-method intervals on the logit scale.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from ..data import slicing as sl
from ..core.seeds import accepts_seed, as_generator
from ..core.arguments import check_choice, check_count, check_counts, check_level, check_seed
from ..core.result import Result
from ..data.pushdown import counts_in_engine
from ..data.runs import RunsData, schema_of
from ..stats.descriptive import binom_ci
from ..core.errors import DataError, SingularFitWarning
from ..data.status import scored_rows

__all__ = ["PassKResult", "item_counts", "pass_at_k_item", "pass_hat_k_item", "pass_k", "pass_k_model"]

Metric = Literal["pass@k", "pass^k"]
_METRICS = ("pass@k", "pass^k")


def _comb_ratio(m: np.ndarray, n: np.ndarray, k: int) -> np.ndarray:
    """``C(m, k) / C(n, k)`` as the product of ``(m - j) / (n - j)`` over j < k (0 when m < k)."""
    out = np.ones(np.broadcast(m, n).shape)
    for j in range(k):
        out = out * np.clip(m - j, 0, None) / (n - j)
    return out


def pass_at_k_item(n: np.ndarray | int, c: np.ndarray | int, k: int) -> np.ndarray:
    """Unbiased pass@k of items with ``n`` attempts and ``c`` successes: ``1 - C(n-c, k) / C(n, k)``.

    Examples
    --------
    >>> float(pass_at_k_item(5, 2, 2))  # 1 - C(3, 2) / C(5, 2) = 1 - 3/10
    0.7
    """
    k = check_count(k, "k")
    n, c = np.asarray(n, float), np.asarray(c, float)
    return 1.0 - _comb_ratio(n - c, n, k)


def pass_hat_k_item(n: np.ndarray | int, c: np.ndarray | int, k: int) -> np.ndarray:
    """Unbiased pass^k of items with ``n`` attempts and ``c`` successes: ``C(c, k) / C(n, k)``.

    Examples
    --------
    >>> float(pass_hat_k_item(5, 2, 2))  # C(2, 2) / C(5, 2) = 1/10
    0.1
    """
    k = check_count(k, "k")
    n, c = np.asarray(n, float), np.asarray(c, float)
    return _comb_ratio(c, n, k)


def item_counts(data: RunsData, by: str | Sequence[str] | None = "model", *, item: str | None = None,
                outcome: str | None = None, status: str | None = None, missing: str = "raise") -> pd.DataFrame:
    """Attempts ``n`` and successes ``c`` per item (and ``by`` group) of a runs table.

    Rows whose status is not ``"ok"`` are left out (see :func:`evalmix.data.status.scored_rows`); k-of-n
    count tables are summed.  Outcomes must be 0/1.
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).

    Examples
    --------
    >>> df = pd.DataFrame({"model": "a", "item": [1, 1, 1, 2, 2, 2], "correct": [1, 0, 1, 0, 0, 0]})
    >>> item_counts(df).values.tolist()
    [['a', 1, 3, 2], ['a', 2, 3, 0]]
    """
    by_ = sl.as_list(by)
    data = scored_rows(data, status=status)
    schema = schema_of(data)
    item_name = item or (schema.item if schema else "item")
    # runs are not needed (attempts are exchangeable within an item)
    data, cols = sl.resolve(data, item=item_name, outcome=outcome, by=by_, need_run=False,
                            missing=missing)
    y = data[cols.scores].to_numpy(float)
    w = data[cols.trials].to_numpy(float) if cols.trials else np.ones(len(data))
    if cols.trials is None and not np.isin(y, (0.0, 1.0)).all():
        raise DataError(f"pass@k needs 0/1 outcomes; column {cols.scores!r} has other values "
                        f"(e.g. {y[~np.isin(y, (0.0, 1.0))][0]!r})")
    frame = data[by_ + [cols.item]].copy()
    frame["n"], frame["c"] = w, y
    out = frame.groupby(by_ + [cols.item], observed=True, sort=True)[["n", "c"]].sum().reset_index()
    out["n"] = out["n"].round().astype("int64")
    out["c"] = out["c"].round().astype("int64")
    return out


@dataclass(frozen=True, eq=False, repr=False)
class PassKResult(Result):
    """pass@k / pass^k per group.

    ``table`` columns: the ``by`` columns, ``metric`` ("pass@k" or "pass^k"), ``k``, ``n_items``,
    ``estimate``, ``se``, ``conf_low``, ``conf_high``; the empirical version also has
    ``min_attempts`` (the fewest attempts of any item), the model-based one ``alpha``, ``beta`` and
    ``icc`` (``1 / (alpha + beta + 1)``, the share of outcome variance between items).
    """

    table: pd.DataFrame
    by: tuple[str, ...]
    conf_level: float
    method: str

    def _title(self) -> str:
        return "pass@k and pass^k"

    def _header(self) -> list[str]:
        return [f"scale: probability; conf_low/conf_high: {self.conf_level:.0%} interval ({self.method})"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()


def _metrics(metric: Metric | Sequence[Metric] | None) -> list[str]:
    ms: list[str] = list(_METRICS) if metric is None else ([metric] if isinstance(metric, str) else list(metric))
    return [check_choice(m, "metric", _METRICS) for m in ms]


def _ks(k: int | Sequence[int]) -> list[int]:
    # k=2.5 must not become pass@2: every k is a whole number >= 1 or the call stops
    return check_counts(k.tolist() if isinstance(k, np.ndarray) else k, "k")


def _logit_interval(est: float, se: float, z: float, n_items: int) -> tuple[float, float]:
    """CLT interval on the logit scale (delta method), which keeps its coverage near 0 and 1.

    An estimate of exactly 0 or 1 has no spread to studentize: the interval is then Wilson's for
    ``n_items`` independent items (every item at the boundary)."""
    if 0 < est < 1 and se > 0:
        half = z * se / (est * (1 - est))
        lg = special.logit(est)
        return float(special.expit(lg - half)), float(special.expit(lg + half))
    lo, hi = binom_ci(round(est * n_items), n_items, "wilson", 2 * stats.norm.cdf(z) - 1)
    return float(lo), float(hi)


@accepts_seed
def pass_k(data: RunsData, k: int | Sequence[int], by: str | Sequence[str] | None = "model", *,
           metric: Metric | Sequence[Metric] | None = None, item: str | None = None,
           outcome: str | None = None, status: str | None = None,
           ci: Literal["cluster", "bootstrap"] = "cluster", conf_level: float = 0.95, n_boot: int = 2000,
           rng: int | np.random.Generator | None = None, missing: str = "raise") -> PassKResult:
    """Unbiased pass@k and pass^k per group, averaged over items, with item-clustered intervals.

    Parameters
    ----------
    data : DataFrame or path
        Runs table with one 0/1 row per attempt (or k-of-n counts per item).
    k : int or sequence of int
        Numbers of attempts; every item needs at least ``k`` attempts (use :func:`pass_k_model`
        beyond that).
    by : str or list of str, optional
        Grouping columns (default ``"model"``).
    metric : "pass@k", "pass^k" or both (default)
        Which estimators to report.
    item, outcome, status : str, optional
        Column names (defaults from :func:`evalmix.read_runs` roles, else conventional names);
        unscored rows (status not ``"ok"``) are left out.
    ci : {"cluster", "bootstrap"}
        ``"cluster"``: the CLT interval with SE = SD(item estimates) / sqrt(N), formed on the
        logit scale (delta method) so that it stays in (0, 1) and keeps its coverage near the
        boundaries (pass@k of a strong model is close to 1);
        ``"bootstrap"``: percentile interval of an item bootstrap.
    conf_level : float
        Interval coverage.
    n_boot : int
        Bootstrap replicates (``ci="bootstrap"``).
    rng : int or numpy.random.Generator, optional
        Random numbers (``ci="bootstrap"``).
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    PassKResult

    Examples
    --------
    >>> df = pd.DataFrame({"model": "a", "item": [1] * 5 + [2] * 5,
    ...                    "correct": [1, 1, 0, 0, 0] + [1, 1, 1, 1, 0]})
    >>> r = pass_k(df, 2)
    >>> r.table["estimate"].round(6).tolist()  # pass@2 (0.7 + 1) / 2, pass^2 (0.1 + 0.6) / 2
    [0.85, 0.35]
    """
    conf_level = check_level(conf_level)
    check_choice(ci, "ci", ("cluster", "bootstrap"))
    n_boot, rng = check_count(n_boot, "n_boot"), check_seed(rng, "rng")
    ks, ms = _ks(k), _metrics(metric)
    by_ = sl.as_list(by)
    if status is None:  # a lazy table is reduced to k-of-n counts by its own engine
        pushed = counts_in_engine(data, item=item, outcome=outcome)
        data, outcome = (pushed, None) if pushed is not data else (data, outcome)
    counts = item_counts(data, by_, item=item, outcome=outcome, status=status, missing=missing)
    item_col = counts.columns[len(by_)]
    z = stats.norm.isf((1 - conf_level) / 2)
    rng = as_generator(rng)
    rows = []
    for key, sub in sl.groups(counts, by_):
        n, c = sub["n"].to_numpy(float), sub["c"].to_numpy(float)
        short = n < max(ks)
        if short.any():
            bad = sub[item_col].iloc[int(np.argmax(short))]
            bad = bad.item() if hasattr(bad, "item") else bad
            raise DataError(f"{sl.slice_label(by_, key)}item {bad!r} has "
                            f"{int(n[short][0])} scored attempts, fewer than k={max(ks)}; use "
                            f"pass_k_model() to extrapolate beyond the attempts")
        boot_idx = rng.integers(0, len(n), size=(n_boot, len(n))) if ci == "bootstrap" else None
        for m in ms:
            for kk in ks:
                vals = pass_at_k_item(n, c, kk) if m == "pass@k" else pass_hat_k_item(n, c, kk)
                est = float(vals.mean())
                se = float(vals.std(ddof=1) / np.sqrt(len(vals))) if len(vals) > 1 else np.nan
                if ci == "cluster":
                    lo, hi = _logit_interval(est, se, z, len(vals))
                else:
                    reps = vals[boot_idx].mean(axis=1)
                    lo, hi = np.quantile(reps, [(1 - conf_level) / 2, (1 + conf_level) / 2])
                rows.append(dict(zip(by_, key)) | {"metric": m, "k": kk, "n_items": len(vals),
                                                    "min_attempts": int(n.min()), "estimate": est, "se": se,
                                                    "conf_low": float(lo), "conf_high": float(hi)})
    return PassKResult(table=pd.DataFrame(rows), by=tuple(by_), conf_level=conf_level, method=ci)


# ----------------------------------------------------------------------------------------------
# beta-binomial model


_BOUND = 18.0  # |logit| limit of the mean and the ICC (ICC = 1.5e-8 is a binomial in practice)


def _bb_negloglik(par: np.ndarray, n: np.ndarray, c: np.ndarray) -> float:
    mu, rho = special.expit(par)
    s = 1.0 / rho - 1.0  # alpha + beta
    a, b = mu * s, (1 - mu) * s
    return -float(np.sum(special.betaln(c + a, n - c + b) - special.betaln(a, b)))


def _bb_fit(n: np.ndarray, c: np.ndarray, where: str) -> tuple[np.ndarray, np.ndarray]:
    """ML estimates of (logit mean, logit ICC) and their covariance (inverse observed information)."""
    p0 = np.clip(c.sum() / n.sum(), 0.02, 0.98)
    res = optimize.minimize(_bb_negloglik, np.array([special.logit(p0), -2.0]), args=(n, c),
                            method="L-BFGS-B", bounds=[(-_BOUND, _BOUND)] * 2)
    par = res.x
    degenerate = np.all(c == 0) or np.all(c == n)
    if degenerate or np.any(np.abs(par) >= _BOUND - 0.5):
        warnings.warn(f"{where}the beta-binomial fit reached a boundary (logit mean, logit ICC) = "
                      f"({par[0]:.1f}, {par[1]:.1f}): all items alike or all outcomes equal; intervals "
                      f"are unreliable", SingularFitWarning, stacklevel=3)
    h = 1e-4
    H = np.empty((2, 2))
    f = lambda p: _bb_negloglik(p, n, c)  # noqa: E731
    for i in range(2):
        for j in range(2):
            ei, ej = np.eye(2)[i] * h, np.eye(2)[j] * h
            H[i, j] = (f(par + ei + ej) - f(par + ei - ej) - f(par - ei + ej) + f(par - ei - ej)) / (4 * h * h)
    try:
        cov = np.linalg.inv(H)
    except np.linalg.LinAlgError:
        cov = np.full((2, 2), np.nan)
    return par, cov


def _bb_metric(par: np.ndarray, metric: str, k: int) -> float:
    mu, rho = special.expit(par)
    s = 1.0 / rho - 1.0
    a, b = mu * s, (1 - mu) * s
    if metric == "pass^k":
        return float(np.exp(special.betaln(a + k, b) - special.betaln(a, b)))
    return float(-np.expm1(special.betaln(a, b + k) - special.betaln(a, b)))


def pass_k_model(data: RunsData, k: int | Sequence[int], by: str | Sequence[str] | None = "model", *,
                 metric: Metric | Sequence[Metric] | None = None, item: str | None = None,
                 outcome: str | None = None, status: str | None = None,
                 conf_level: float = 0.95, missing: str = "raise") -> PassKResult:
    """pass@k and pass^k from a beta-binomial model, for any k (also beyond the attempts made).

    Per group, the items' success probabilities are modelled as ``Beta(alpha, beta)`` and fitted by
    maximum likelihood to the items' (attempts, successes); the predictions are
    ``pass@k = 1 - B(alpha, beta + k) / B(alpha, beta)`` and ``pass^k = B(alpha + k, beta) / B(alpha, beta)``.
    The interval is the delta method on the logit scale (parameters: logit of the mean and of the
    ICC ``1 / (alpha + beta + 1)``, covariance from the observed information), mapped back.
    Extrapolation to k beyond the attempts rests on the Beta shape of the item distribution; compare
    with :func:`pass_k` where both apply.

    Parameters
    ----------
    data : DataFrame or path
        Runs table with one 0/1 row per attempt (or k-of-n counts per item).
    k : int or sequence of int
        Numbers of attempts to predict.
    by : str or list of str, optional
        Grouping columns (default ``"model"``).
    metric : "pass@k", "pass^k" or both (default)
    item, outcome, status : str, optional
        Column names; unscored rows are left out.
    conf_level : float
        Interval coverage.
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    PassKResult

    Warns
    -----
    SingularFitWarning
        The fit reached a boundary (no between-item variation, or all outcomes equal).

    Examples
    --------
    >>> import evalmix
    >>> rng = np.random.default_rng(1)
    >>> p = rng.beta(2, 1, 300)
    >>> df = pd.DataFrame({"model": "a", "item": np.repeat(np.arange(300), 4),
    ...                    "correct": (rng.random((300, 4)) < p[:, None]).astype(int).ravel()})
    >>> t = pass_k_model(df, 8, metric="pass^k").table
    >>> round(float(t["estimate"].iloc[0]), 2)  # truth B(10, 1) / B(2, 1) = 0.2
    0.21
    """
    conf_level = check_level(conf_level)
    ks, ms = _ks(k), _metrics(metric)
    by_ = sl.as_list(by)
    counts = item_counts(data, by_, item=item, outcome=outcome, status=status, missing=missing)
    z = stats.norm.isf((1 - conf_level) / 2)
    rows = []
    for key, sub in sl.groups(counts, by_):
        n, c = sub["n"].to_numpy(float), sub["c"].to_numpy(float)
        if len(n) < 2:
            raise DataError(f"{sl.slice_label(by_, key)}the beta-binomial model needs at least two items")
        par, cov = _bb_fit(n, c, sl.slice_label(by_, key))
        mu, rho = special.expit(par)
        s = 1 / rho - 1
        for m in ms:
            for kk in ks:
                est = _bb_metric(par, m, kk)
                h = 1e-5
                grad = np.array([(special.logit(np.clip(_bb_metric(par + h * e, m, kk), 1e-300, 1 - 1e-16))
                                  - special.logit(np.clip(_bb_metric(par - h * e, m, kk), 1e-300, 1 - 1e-16)))
                                 / (2 * h) for e in np.eye(2)])
                se_logit = float(np.sqrt(max(grad @ cov @ grad, 0.0)))
                lg = special.logit(np.clip(est, 1e-300, 1 - 1e-16))
                rows.append(dict(zip(by_, key)) | {
                    "metric": m, "k": kk, "n_items": len(n), "estimate": est,
                    "se": se_logit * est * (1 - est),  # delta method back to the probability scale
                    "conf_low": float(special.expit(lg - z * se_logit)),
                    "conf_high": float(special.expit(lg + z * se_logit)),
                    "alpha": float(mu * s), "beta": float((1 - mu) * s), "icc": float(rho)})
    return PassKResult(table=pd.DataFrame(rows), by=tuple(by_), conf_level=conf_level, method="beta-binomial")
