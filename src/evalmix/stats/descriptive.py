"""Descriptive accuracy with binomial confidence intervals.

:func:`binom_ci` holds the interval formulas (vectorised over arrays of counts);
:func:`accuracy` applies them to the groups of a runs table.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats

from ..core.arguments import check_arguments
from ..core.result import Result
from ..data.pushdown import counts_in_engine
from ..data.runs import RunsData, at_the_door, ensure_runs, load_table, require_columns, schema_of, show_rows
from ..core.errors import DataError, DataWarning
from ..core.methods import CI_METHODS
from ..data.status import OK, is_scored, scored_rows, status_column

__all__ = ["CI_METHODS", "AccuracyTable", "ErroredAccuracy", "accuracy", "accuracy_bounds", "binom_ci"]



def binom_ci(k: ArrayLike, n: ArrayLike, method: str = "wilson", conf_level: float = 0.95) -> tuple[np.ndarray, np.ndarray]:
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
    check_arguments(conf_level=conf_level)
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


_CI_NAMES = {"wilson": "Wilson", "wilson_cc": "Wilson (continuity-corrected)",
             "clopper_pearson": "Clopper-Pearson (exact)", "jeffreys": "Jeffreys",
             "agresti_coull": "Agresti-Coull", "wald": "Wald", "cluster": "item-clustered CLT"}


@dataclass(frozen=True, eq=False, repr=False)
class AccuracyTable(Result):
    """Accuracy per group with its interval (:func:`accuracy`).

    ``table`` columns: the ``by`` columns, ``n`` (trials), ``k`` (successes), ``estimate`` (the
    accuracy, a proportion), ``conf_low``, ``conf_high``; with ``ci="cluster"`` also ``n_items``
    and ``se``; with a status column ``n_attempted`` and ``coverage``.  ``by``, ``ci`` and
    ``conf_level`` say how it was computed.
    """

    table: pd.DataFrame
    by: tuple[str, ...]
    ci: str
    conf_level: float
    #: "binary" (0/1 outcomes or k-of-n counts: proportions) or "mean" (ordinal ratings and
    #: continuous scores: means with item-clustered t intervals)
    kind: str = "binary"

    def _title(self) -> str:
        what = "Accuracy" if self.kind == "binary" else "Mean score"
        return what + (f" by {', '.join(self.by)}" if self.by else "")

    def _header(self) -> list[str]:
        if self.kind == "mean":
            return [f"scale: mean score (the outcome's own units); conf_low/conf_high: {self.conf_level:.0%} "
                    "item-clustered t interval (item means, n_items - 1 df)"]
        return [f"scale: probability; conf_low/conf_high: {self.conf_level:.0%} "
                f"{_CI_NAMES.get(self.ci, self.ci)} interval"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()


def accuracy(
    data: RunsData,
    by: str | Sequence[str] | None = None,
    *,
    ci: str = "wilson",
    conf_level: float = 0.95,
    outcome: str | None = None,
    item: str | None = None,
    status: str | None = None,
    missing: str = "raise",
) -> AccuracyTable:
    """Accuracy per group with a confidence interval.

    Parameters
    ----------
    data : DataFrame or path
        A runs table (from :func:`evalmix.read_runs`, any DataFrame with the outcome column, or a
        file), validated by :func:`evalmix.ensure_runs`: outcomes 0/1 (or k-of-n counts), or any
        numeric score (partial credit, judge ratings, similarity scores), no missing values, no
        duplicated (model, item, run, slices) key.  A lazy table (Parquet file, folder or glob,
        DuckDB, polars LazyFrame, Dask, Spark) is summed per group in its own engine.  Outcomes
        other than 0/1 are described by
        their mean with an item-clustered t interval whatever ``ci`` says: a binomial interval
        of a score would be a wrong number, not an answer.  A column named ``correct`` must hold
        0/1 or partial credit in [0, 1] (a 2 there is reported as an error); ratings and scores
        on other scales are read from any other outcome column (``outcome="rating"``).
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
    status : str, optional
        Sample status column (default ``"status"`` when the table has one): only rows with status
        ``"ok"`` are scored, the others (errored, cancelled, unscored samples, outcome missing) are
        counted as attempted.  See :func:`accuracy_bounds` for bounds and estimates under explicit
        assumptions about the unscored samples.
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    AccuracyTable
        ``table``: the ``by`` columns and ``n`` (trials), ``k`` (successes), ``estimate`` (the
        accuracy, a proportion), ``conf_low``, ``conf_high``; with ``ci="cluster"`` also
        ``n_items`` and ``se``.  With a status column also
        ``n_attempted`` and ``coverage`` (``n / n_attempted``): the estimate and interval are those
        of the scored samples.  Scores other than 0/1 (``kind="mean"``): ``n`` (rows),
        ``n_items``, ``estimate`` (the mean of the item means, which is the row mean when every
        item has as many rows), ``se`` (their SD over ``sqrt(n_items)``), ``conf_low`` and
        ``conf_high`` (t quantile with ``n_items - 1`` df, as R's ``t.test`` of the item means).

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"model": ["a"] * 4 + ["b"] * 4, "correct": [1, 1, 0, 1, 0, 0, 1, 0]})
    >>> accuracy(df, "model").table[["model", "n", "k", "estimate"]]
      model  n  k  estimate
    0     a  4  3      0.75
    1     b  4  1      0.25
    >>> ratings = pd.DataFrame({"model": ["a"] * 4, "item": [1, 1, 2, 2], "run": [1, 2] * 2,
    ...                         "rating": [4, 5, 2, 3]})
    >>> accuracy(ratings, "model", outcome="rating").table[["model", "n_items", "estimate", "se"]]
      model  n_items  estimate   se
    0     a        2       3.5  1.0
    """
    check_arguments(conf_level=conf_level, missing=missing)
    by_cols = [by] if isinstance(by, str) else list(by or [])
    if status is None:  # a lazy table is reduced to k-of-n counts by its own engine: per group, or per
        # (group, item) for the item-clustered interval
        keys = by_cols + [item or "item"] if ci == "cluster" else by_cols
        pushed = counts_in_engine(data, item=item, outcome=outcome, by=keys)
        data, outcome = (pushed, None) if pushed is not data else (data, outcome)
    table = _accuracy_table(data, by_cols, ci, conf_level, outcome, item, status, missing)
    kind = str(table.attrs.pop("kind", "binary"))
    return AccuracyTable(table, tuple(by_cols), "t" if kind == "mean" else ci, conf_level, kind)


def _accuracy_table(data: RunsData, by_cols: list[str], ci: str, conf_level: float,
                    outcome: str | None, item: str | None, status: str | None, missing: str
                    ) -> pd.DataFrame:
    """The table of :func:`accuracy`."""
    if isinstance(data, (str, Path)):
        data = load_table(data, ids=(item or "item", "model", "run", *by_cols))
    scol = status_column(data, status) if isinstance(data, pd.DataFrame) else None
    attempted = None
    if scol is not None:
        # unscored samples (errored, cancelled...) are counted as attempted, then left out
        recorded = schema_of(data)
        if recorded is not None and recorded.counts and outcome is None:
            raise DataError("a status column needs one row per sample (0/1 outcome), not k-of-n counts")
        out_col = _outcome_name(data, outcome)
        require_columns(data, by_cols)
        ok = is_scored(data[scol])
        bad = ok & pd.to_numeric(data[out_col], errors="coerce").isna().to_numpy()
        if bad.any():
            raise DataError(f"outcome column {out_col!r} is missing in rows whose status is 'ok' (give "
                            f"those rows another status, e.g. 'unscored'): "
                            + show_rows(data, bad, by_cols + [out_col, scol]))
        if by_cols:
            attempted = data.groupby(by_cols, observed=True, sort=True).size().rename("n_attempted")
        else:
            attempted = pd.Series([len(data)], name="n_attempted")
        data = scored_rows(data, scol)
        if by_cols and len(data) and len(data.groupby(by_cols, observed=True)) < len(attempted):
            empty = attempted.index.difference(data.groupby(by_cols, observed=True).size().index)
            warnings.warn(f"{len(empty)} group(s) of {by_cols} have no scored sample (e.g. "
                          f"{empty[0]!r}): their accuracy is missing; accuracy_bounds() gives its "
                          f"bounds", DataWarning, stacklevel=3)
        if not len(data):
            raise DataError("no sample is scored (every status differs from 'ok'); accuracy_bounds() "
                            "gives the bounds")
    recorded = schema_of(data) if isinstance(data, pd.DataFrame) else None
    name = outcome or (recorded.outcome if recorded is not None else None) or "correct"
    # a column named 'correct' holds 0/1 (or partial credit): a 2 there is a typo to report, not a
    # rating to average; any other outcome column (rating, score, reward) may hold any number
    frame, schema = ensure_runs(data, outcome=outcome, item=item, by=by_cols, need_item=ci == "cluster",
                                allow_fractional=True if name == "correct" else "any", missing=missing)
    if not schema.counts:
        y = frame[schema.outcome].to_numpy(dtype=float)
        if not np.isin(y, (0.0, 1.0)).all():
            means = _with_coverage(_mean_table(frame, str(schema.outcome), schema.item, by_cols, conf_level),
                                   attempted, by_cols)
            means.attrs["kind"] = "mean"
            return means
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
        table["conf_low"] = table["estimate"] - z * table["se"]
        table["conf_high"] = table["estimate"] + z * table["se"]
        cols = by_cols + ["n", "k", "n_items", "estimate", "se", "conf_low", "conf_high"]
        return _with_coverage(table[cols], attempted, by_cols)

    lo, hi = binom_ci(k_vals.to_numpy(), table["n"].to_numpy(), method=ci, conf_level=conf_level)
    table["conf_low"], table["conf_high"] = lo, hi
    return _with_coverage(table[by_cols + ["n", "k", "estimate", "conf_low", "conf_high"]],
                          attempted, by_cols)


def _mean_table(frame: pd.DataFrame, outcome: str, item: str | None, by_cols: list[str],
                conf_level: float) -> pd.DataFrame:
    """Means of a score that is not 0/1 (ratings, partial credit, similarity scores), with the
    item-clustered t interval: the runs of an item are averaged first, then the item means are
    the sample (R: ``t.test(item_means)``)."""
    if item is None or item not in frame.columns:
        raise DataError(f"outcome column {outcome!r} holds scores other than 0/1, described by their mean "
                        "over items with an item-clustered interval: name the item column (item=)")
    y = frame[outcome].astype(float)
    per_item = y.groupby([frame[c] for c in [*by_cols, item]], observed=True, sort=True).mean()
    rows = y.groupby([frame[c] for c in by_cols], observed=True, sort=True).size() if by_cols \
        else pd.Series([len(y)])
    if by_cols:
        g = per_item.groupby(level=list(range(len(by_cols))), observed=True)
        table = pd.DataFrame({"estimate": g.mean(), "sd": g.std(ddof=1), "n_items": g.size()})
        table.insert(0, "n", rows.reindex(table.index).to_numpy())
        table = table.reset_index()
    else:
        table = pd.DataFrame({"n": [len(y)], "estimate": [per_item.mean()], "sd": [per_item.std(ddof=1)],
                              "n_items": [len(per_item)]})
    table["n"] = table["n"].astype("int64")
    table["n_items"] = table["n_items"].astype("int64")
    table["se"] = table.pop("sd") / np.sqrt(table["n_items"])
    # one item has no spread to estimate: the interval is missing, as t.test refuses it
    q = stats.t.ppf(1 - (1 - conf_level) / 2, np.where(table["n_items"] > 1, table["n_items"] - 1, np.nan))
    table["conf_low"] = table["estimate"] - q * table["se"]
    table["conf_high"] = table["estimate"] + q * table["se"]
    out = table[[*by_cols, "n", "n_items", "estimate", "se", "conf_low", "conf_high"]]
    out.attrs["kind"] = "mean"
    return out


def _with_coverage(table: pd.DataFrame, attempted: pd.Series | None, by_cols: list[str]) -> pd.DataFrame:
    """Add ``n_attempted`` and ``coverage`` after ``n`` when the table had a status column."""
    if attempted is None:
        return table
    if by_cols:
        # every attempted group appears; one without a scored sample has n = 0 and no estimate
        att = attempted.reset_index()
        table = att.merge(table, on=by_cols, how="left", sort=False)
        table["n"] = table["n"].fillna(0).astype("int64")
        if "k" in table:  # (means of scores have no count of successes)
            k = table["k"].fillna(0)
            table["k"] = k.round().astype("int64") if np.allclose(k, np.round(k)) else k
    else:
        table = table.assign(n_attempted=int(attempted.iloc[0]))
    table["n_attempted"] = table["n_attempted"].astype("int64")
    table["coverage"] = table["n"] / table["n_attempted"]
    cols = list(table.columns)
    for c in ("n_attempted", "coverage"):
        cols.remove(c)
    at = cols.index("n") + 1
    return table[cols[:at] + ["n_attempted", "coverage"] + cols[at:]]


# ----------------------------------------------------------------------------------------------
# errored and unscored samples


@dataclass(frozen=True, eq=False, repr=False)
class ErroredAccuracy(Result):
    """Accuracy with coverage, bounds and estimates under stated missingness assumptions.

    ``table`` columns: the ``by`` columns, ``n_attempted``, ``n_scored``, ``n_<status>`` for each
    other status present, ``coverage``, ``k``, ``estimate`` (scored samples), ``conf_low`` and
    ``conf_high`` (Wilson, scored samples), ``estimate_mar_item``, ``n_items_unscored``,
    ``worst_case``, ``best_case``, ``bounds_low`` and ``bounds_high`` (see the module notes).
    """

    table: pd.DataFrame
    by: tuple[str, ...]
    conf_level: float

    def _title(self) -> str:
        return "Accuracy with unscored samples"

    def _header(self) -> list[str]:
        return [f"scale: probability; conf_low/conf_high: {self.conf_level:.0%} Wilson interval "
                "of the scored samples"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()


def _outcome_name(data: pd.DataFrame, outcome: str | None) -> str:
    schema = schema_of(data)
    if schema is not None and schema.counts:
        raise DataError("a status column needs one row per sample (0/1 outcome), not k-of-n counts")
    name = outcome if outcome is not None else (schema.outcome if schema and schema.outcome else "correct")
    if name not in data.columns:
        raise DataError(f"outcome column {name!r} not found; the table has columns: "
                        f"{', '.join(map(repr, map(str, data.columns)))}")
    return name


def accuracy_bounds(data: pd.DataFrame, by: str | Sequence[str] | None = None, *,
                    status: str | None = None, outcome: str | None = None, item: str | None = None,
                    conf_level: float = 0.95) -> ErroredAccuracy:
    """Accuracy per group with its coverage, worst/best-case bounds and a missing-at-random estimate.

    Parameters
    ----------
    data : DataFrame
        Runs table with one row per attempted sample, a 0/1 (or [0, 1] score) outcome that is
        missing where the sample was not scored, and a status column.
    by : str or list of str, optional
        Grouping columns (e.g. ``"model"``).
    status : str, optional
        Status column (default ``"status"``); without one every row counts as scored.
    outcome, item : str, optional
        Outcome and item columns (defaults from :func:`evalmix.read_runs` roles, else
        ``"correct"`` and ``"item"``); the item column is needed for ``estimate_mar_item``.
    conf_level : float
        Level of the Wilson intervals and of the bounds' confidence region.

    Returns
    -------
    ErroredAccuracy

    Notes
    -----
    For a group with ``n_attempted`` samples of which ``n_scored`` were scored with ``k`` successes:

    - ``coverage = n_scored / n_attempted``;
    - ``estimate = k / n_scored``: the accuracy of the scored samples, unbiased when samples are
      missing completely at random;
    - ``estimate_mar_item``: missing at random *within item* (of the group): every unscored sample of
      an item takes the mean of that item's scored samples in the group, so
      ``sum_items n_attempted_i * mean_scored_i / n_attempted`` (items without any scored sample take
      the group's scored accuracy; ``n_items_unscored`` counts them);
    - ``worst_case = k / n_attempted`` (every unscored sample a failure; also the estimate under the
      assumption "errors are failures") and ``best_case = (k + n_attempted - n_scored) / n_attempted``
      (every unscored sample a success): the accuracy of all attempted samples lies between them
      whatever caused the missingness (Manski's bounds).  ``bounds_low``/``bounds_high`` widen them to
      a confidence region: the Wilson lower limit of the worst case and upper limit of the best case.

    Examples
    --------
    >>> df = pd.DataFrame({"item": [1, 1, 2, 2], "correct": [1, 1, 0, None],
    ...                    "status": ["ok", "ok", "ok", "error"]})
    >>> t = accuracy_bounds(df).table
    >>> t[["coverage", "estimate", "worst_case", "best_case"]].round(4).values.tolist()
    [[0.75, 0.6667, 0.5, 0.75]]
    """
    check_arguments(conf_level=conf_level)
    data = at_the_door(data)
    by_ = [by] if isinstance(by, str) else list(by or [])
    missing = [c for c in by_ if c not in data.columns]
    if missing:
        raise DataError(f"grouping column(s) {', '.join(map(repr, missing))} not found; the table has "
                        f"columns: {', '.join(map(repr, map(str, data.columns)))}")
    out = _outcome_name(data, outcome)
    scol = status_column(data, status)
    schema = schema_of(data)
    item_col = item or (schema.item if schema else None) or ("item" if "item" in data.columns else None)
    if item is not None and item not in data.columns:
        raise DataError(f"item column {item!r} not found")
    ok = is_scored(data[scol]) if scol else np.ones(len(data), bool)
    y = pd.to_numeric(data[out], errors="coerce")
    bad = ok & y.isna().to_numpy()
    if bad.any():
        rows = data.loc[bad].head(5)
        raise DataError(f"outcome column {out!r} is missing in rows whose status is 'ok' (give those "
                        f"rows another status, e.g. 'unscored'):\n{rows.to_string()}")
    yv = y.to_numpy(float)
    if np.any((yv[ok] < 0) | (yv[ok] > 1)):
        raise DataError(f"outcome column {out!r} must lie in [0, 1] for bounds")
    frame = pd.DataFrame({c: data[c].to_numpy() for c in by_})
    frame["_ok"] = ok.astype(float)
    frame["_k"] = np.where(ok, yv, 0.0)
    frame["_att"] = 1.0
    if scol:
        st = data[scol].astype("string").str.strip().str.lower().fillna("missing")
        others = [s for s in pd.unique(st[~ok]) if s != OK]
        for s in others:
            frame[f"n_{s}"] = (st == s).to_numpy(float)
    else:
        others = []
    keys = by_ if by_ else None
    sums_cols = ["_att", "_ok", "_k"] + [f"n_{s}" for s in others]
    g = frame.groupby(by_, observed=True, sort=True)[sums_cols].sum().reset_index() if keys \
        else frame[sums_cols].sum().to_frame().T
    n_att, n_ok, k = g["_att"].to_numpy(), g["_ok"].to_numpy(), g["_k"].to_numpy()
    table = g[by_].copy() if by_ else pd.DataFrame(index=[0])
    table["n_attempted"] = n_att.astype("int64")
    table["n_scored"] = n_ok.astype("int64")
    for s in others:
        table[f"n_{s}"] = g[f"n_{s}"].to_numpy().astype("int64")
    table["coverage"] = n_ok / n_att
    table["k"] = k
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.where(n_ok > 0, k / np.where(n_ok > 0, n_ok, 1), np.nan)
    table["estimate"] = est
    lo = np.full(len(g), np.nan)
    hi = np.full(len(g), np.nan)
    has = n_ok > 0
    if has.any():
        lo[has], hi[has] = binom_ci(k[has], n_ok[has], "wilson", conf_level)
    table["conf_low"], table["conf_high"] = lo, hi
    # missing at random within item: unscored samples take their item's scored mean in the group
    if item_col is not None:
        frame["_item"] = data[item_col].to_numpy()
        cell = frame.groupby(by_ + ["_item"], observed=True, sort=True)[["_att", "_ok", "_k"]].sum()
        cell = cell.reset_index()
        if by_:
            cell = cell.merge(g[by_].assign(_gest=est), on=by_, how="left", sort=False)
        else:
            cell["_gest"] = est[0]
        fallback = cell["_gest"].to_numpy(float)
        cell_ok = cell["_ok"].to_numpy()
        with np.errstate(divide="ignore", invalid="ignore"):
            cmean = np.where(cell_ok > 0, cell["_k"].to_numpy() / np.where(cell_ok > 0, cell_ok, 1), fallback)
        cell["_imp"] = cmean * cell["_att"].to_numpy()
        cell["_none"] = (cell_ok == 0).astype(float)
        agg = cell.groupby(by_, observed=True, sort=True)[["_imp", "_att", "_none"]].sum().reset_index() \
            if by_ else cell[["_imp", "_att", "_none"]].sum().to_frame().T
        # a group without any scored sample has no estimate under any missing-at-random assumption
        table["estimate_mar_item"] = np.where(n_ok > 0, (agg["_imp"] / agg["_att"]).to_numpy(), np.nan)
        table["n_items_unscored"] = agg["_none"].to_numpy().astype("int64")
    else:
        table["estimate_mar_item"] = np.nan
        table["n_items_unscored"] = pd.NA
    worst = k / n_att
    best = (k + n_att - n_ok) / n_att
    table["worst_case"], table["best_case"] = worst, best
    table["bounds_low"] = binom_ci(k, n_att, "wilson", conf_level)[0]
    table["bounds_high"] = binom_ci(k + n_att - n_ok, n_att, "wilson", conf_level)[1]
    if np.allclose(k, np.round(k)):
        table["k"] = np.round(k).astype("int64")
    return ErroredAccuracy(table=table.reset_index(drop=True), by=tuple(by_), conf_level=conf_level)
