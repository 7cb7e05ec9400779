"""Prediction-powered inference (PPI, PPI++) for LLM-as-judge scores, clustered by item.

An LLM judge scores every response; people score a few.  The judge is cheap but biased, the human
labels are unbiased but few.  Prediction-powered inference (Angelopoulos et al. 2023, *Science*)
combines them: the judge's mean over the unlabelled items, corrected by the judge's average error
on the labelled items (the *rectifier*)::

    theta_hat = lambda * mean_U(f) + mean_L(y - lambda * f)

``lambda = 1`` is PPI, ``lambda = 0`` the classical human-only mean, and PPI++ (Angelopoulos,
Duchi & Zrnic 2023, "PPI++: Efficient prediction-powered inference") picks the ``lambda`` that
minimises the variance, estimated from the data and clipped to [0, 1] as ``ppi-python`` does.  The
estimate is unbiased for every ``lambda``: a biased judge widens the interval, it does not move it.

**Items are the sampling unit.**  Repeated runs of a model on an item, and the rows of several
models on a shared item, are not independent, so every row of an item is first averaged into one
item mean (the judge's mean ``f`` over the item's rows, the human mean ``y`` over its labelled
rows) and the variances are between-item variances: a cluster-robust interval.  Differences
between two models are formed item by item, so the items both models share cancel out of the
variance as in a paired test.

Assumptions (the interval is valid when they hold):

- the labelled items are a uniform random subset of the items (chosen without looking at the
  scores), and within a labelled item the labelled rows are a random subset of its rows;
- the target is the item-average of the human score: each item weighs the same, however many runs
  it has.

With one row per item the estimates, standard errors and ``lambda`` equal ``ppi-python``'s
``ppi_mean_pointestimate``, ``ppi_mean_ci`` and ``classical_mean_ci`` (standard deviations with
divisor ``n``, as there); ``tests/reference/ppi_reference.py`` checks that to 1e-8.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import pandas as pd
from scipy import optimize, special, stats

from ..data import slicing as sl
from ..core.seeds import accepts_seed, as_generator
from ..core.result import Result, contrast_label
from ..data.runs import RunsData, ensure_runs, load_table, require_columns, show_rows
from ..core.errors import DataError, DataWarning
from ..core.methods import PPI_METHODS, PpiMethod

__all__ = ["METHODS", "PPICoverage", "PPIEstimates", "ppi_coverage_study", "ppi_difference", "ppi_mean",
           "simulate_judged"]

Method = PpiMethod
#: The estimators: prediction-powered with tuned and with unit ``lambda``, human labels only, judge only.
METHODS = PPI_METHODS
_MIN_ITEMS = 2
_Frame = TypeVar("_Frame", pd.Series, pd.DataFrame)


# ------------------------------------------------------------------------------ the estimator

@dataclass(frozen=True)
class _Estimate:
    estimate: float
    se: float
    lam: float
    n_labelled: int
    n_unlabelled: int
    n_effective: float


def _tuned_lambda(y: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray) -> float:
    """PPI++'s variance-minimising lambda for a mean, clipped to [0, 1].

    As ``ppi-python`` (``_calc_lam_glm`` for the mean): the covariance of human and judge scores on
    the labelled items (divisor n) over ``(1 + n/N)`` times the judge's variance on all items
    (divisor n + N - 1).  A judge that gives every item the same score carries no information:
    lambda is then 0 (the human-only mean)."""
    n, big_n = len(y), len(f_unl)
    cov = float(np.mean((y - y.mean()) * (f_lab - f_lab.mean())))
    var = float(np.var(np.concatenate([f_lab, f_unl]), ddof=1))
    if not var > 0:
        return 0.0
    return float(np.clip(cov / ((1.0 + n / big_n) * var), 0.0, 1.0))


def _estimate(y: np.ndarray, f_lab: np.ndarray, f_unl: np.ndarray, method: str,
              lam: float | None) -> _Estimate:
    """One estimator on item means: human ``y`` and judge ``f_lab`` of the labelled items, judge
    ``f_unl`` of the unlabelled ones."""
    n, big_n = len(y), len(f_unl)
    var_y = float(np.var(y)) if n else math.nan
    if method == "judge_only":
        f = np.concatenate([f_lab, f_unl])
        return _Estimate(float(f.mean()), float(np.std(f) / math.sqrt(len(f))), math.nan, n, big_n, math.nan)
    if method == "classical":
        lam_ = 0.0
    elif method == "ppi":
        lam_ = 1.0
    else:
        lam_ = _tuned_lambda(y, f_lab, f_unl) if lam is None else float(lam)
    if lam_ == 0.0:
        est = float(y.mean())
        se = math.sqrt(var_y / n)
    else:
        est = float(lam_ * f_unl.mean() + np.mean(y - lam_ * f_lab))
        se = math.sqrt(float(np.var(lam_ * f_unl)) / big_n + float(np.var(y - lam_ * f_lab)) / n)
    # the human labels a classical interval of the same width would need
    n_eff = var_y / se**2 if se > 0 else math.nan
    return _Estimate(est, se, lam_, n, big_n, n_eff)


def _check_counts(method: str, n: int, big_n: int, where: str) -> None:
    if method == "judge_only":
        if n + big_n < _MIN_ITEMS:
            raise DataError(f"{where}the judge scored {n + big_n} item(s); an interval needs at least {_MIN_ITEMS}")
        return
    if n < _MIN_ITEMS:
        raise DataError(f"{where}{n} labelled item(s): method {method!r} needs human scores on at least "
                        f"{_MIN_ITEMS} items")
    if method != "classical" and big_n < _MIN_ITEMS:
        raise DataError(f"{where}{big_n} unlabelled item(s): method {method!r} needs judge scores on at least "
                        f"{_MIN_ITEMS} items without human scores (use method='classical' when every "
                        "item is labelled)")


def _methods(method: Method | Sequence[Method], lam: float | None) -> list[str]:
    ms: list[str] = [method] if isinstance(method, str) else list(method)
    bad = [m for m in ms if m not in METHODS]
    if bad or not ms:
        raise ValueError(f"method must be one or more of {', '.join(map(repr, METHODS))}, got {bad[0] if bad else ms!r}")
    if lam is not None:
        if "ppi++" not in ms:
            raise ValueError("lam= fixes the lambda of method 'ppi++'; it has no effect on "
                             f"{', '.join(map(repr, ms))}")
        if isinstance(lam, bool) or not isinstance(lam, (int, float)) or not math.isfinite(lam):
            raise ValueError(f"lam must be a finite number (1 = PPI, 0 = human labels only), got {lam!r}")
    return list(dict.fromkeys(ms))


def _z(conf_level: float) -> float:
    if isinstance(conf_level, bool) or not isinstance(conf_level, (int, float)) or not 0 < conf_level < 1:
        raise ValueError(f"conf_level must be a number in (0, 1), got {conf_level!r}")
    return float(stats.norm.ppf(0.5 + conf_level / 2))


# ------------------------------------------------------------------------------ the tables

def _numeric_scores(df: pd.DataFrame, col: str, what: str, where: str) -> np.ndarray:
    """A score column as floats; text, missing or infinite values are a DataError naming rows."""
    values = df[col]
    if pd.api.types.is_bool_dtype(values):
        return values.to_numpy(float)
    num = pd.to_numeric(values, errors="coerce")
    bad = num.isna().to_numpy() | ~np.isfinite(num.to_numpy(float, na_value=np.nan))
    if bad.any():
        raise DataError(f"{where}{what} column {col!r} must hold finite numbers; offending rows: "
                        + show_rows(df, bad, [col]))
    return num.to_numpy(float)


def _check_numeric(df: pd.DataFrame, col: str, what: str, where: str) -> None:
    """Text in a score column is a DataError naming it (missing values are ensure_runs' to report)."""
    if col not in df.columns:
        return
    values = df[col]
    if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        return
    bad = (pd.to_numeric(values, errors="coerce").isna() & values.notna()).to_numpy()
    if bad.any():
        raise DataError(f"{where}{what} column {col!r} must hold numbers (0/1 verdicts, ratings); "
                        "non-numeric values in rows: " + show_rows(df, bad, [col]))


@dataclass(frozen=True)
class _Tables:
    """Validated rows: ``judged`` (group, item, judge score) and ``labelled`` (group, item, judge
    and human scores), with the resolved item column and the ``by`` columns."""

    judged: pd.DataFrame
    labelled: pd.DataFrame
    by: list[str]
    item: str


def _read_tables(judged: RunsData, labelled: RunsData | None, *, by: list[str], judge: str, human: str,
                 item: str | None, run: str | None, missing: str) -> _Tables:
    if not isinstance(judge, str) or not isinstance(human, str):
        raise TypeError(f"judge= and human= name columns (str), got {judge!r} and {human!r}")
    if judge == human:
        raise ValueError(f"judge= and human= name the same column {judge!r}")
    table = load_table(judged, ids=(item or "item", run or "run", "model", *by))
    judged_df: pd.DataFrame
    labelled_df: RunsData
    if labelled is None:
        # one table: the rows with a human score are the labelled rows
        require_columns(table, [human], None,
                        " (the human scores: a column of the judged table, empty where no person "
                        "scored the row, or a separate table passed as labelled=)")
        judged_df = table.drop(columns=[human])
        labelled_df = table.loc[table[human].notna().to_numpy()]
        if len(labelled_df) == 0:
            raise DataError(f"human score column {human!r} is empty: no row has a human score")
    else:
        if human in table.columns:
            raise DataError(f"the judged table has a human score column {human!r} and labelled= is given "
                            "too: pass the human scores one way (leave out labelled=, or drop the column)")
        judged_df, labelled_df = table, labelled
    _check_numeric(judged_df, judge, "judge score", "")
    if isinstance(labelled_df, pd.DataFrame):
        _check_numeric(labelled_df, human, "human score", "labelled rows: ")
    j, js = ensure_runs(judged_df, item=item, run=run, outcome=judge, need_item=True, by=by,
                        allow_fractional="any", missing=missing)
    try:
        lab, ls = ensure_runs(labelled_df, item=item, run=run, outcome=human, need_item=True, by=[*by, judge],
                              allow_fractional="any", missing=missing)
    except DataError as exc:
        raise DataError(f"labelled rows: {exc}") from exc
    item_col = str(js.item)
    if ls.item != item_col:
        raise DataError(f"the judged table's item column is {item_col!r} but the labelled table's is "
                        f"{ls.item!r}: name it with item=")
    jf = pd.DataFrame({c: j[c] for c in [*by, item_col]})
    jf["_f"] = j[judge].to_numpy(float)
    lf = pd.DataFrame({c: lab[c] for c in [*by, item_col]})
    lf["_f"] = _numeric_scores(lab, judge, "labelled rows: judge", "")
    lf["_y"] = lab[human].to_numpy(float)
    return _Tables(jf, lf, by, item_col)


def _item_means(df: pd.DataFrame, keys: list[str], cols: list[str]) -> pd.DataFrame:
    return df.groupby(keys, observed=True, sort=True)[cols].mean()


def _group_keys(t: _Tables) -> list[tuple]:
    if not t.by:
        return [()]
    keys: dict[tuple, None] = {}
    for frame in (t.judged, t.labelled):
        for k in frame[t.by].drop_duplicates().itertuples(index=False, name=None):
            keys[tuple(k)] = None
    try:
        return sorted(keys)
    except TypeError:  # levels of mixed types (1 and "b"): sorted as text
        return sorted(keys, key=lambda k: tuple(map(str, k)))


def _select(frame: pd.DataFrame, by: list[str], key: tuple) -> pd.DataFrame:
    mask = np.ones(len(frame), bool)
    for b, k in zip(by, key):
        mask &= (frame[b] == k).to_numpy()
    return frame.loc[mask]


def _split(judged: pd.Series, lab: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Item means -> (human, judge) of the labelled items and judge of the other judged items."""
    unl = judged.loc[~judged.index.isin(lab.index)]
    return lab["_y"].to_numpy(float), lab["_f"].to_numpy(float), unl.to_numpy(float)


# ------------------------------------------------------------------------------ results

_COLUMNS = ["method", "estimate", "se", "conf_low", "conf_high", "lambda", "n_labelled", "n_unlabelled",
            "n_effective", "ess_gain"]


@dataclass(frozen=True, eq=False, repr=False)
class PPIEstimates(Result):
    """Prediction-powered means or differences, one row per group (or contrast) and method.

    ``table`` columns: the ``by`` columns (means) or ``contrast`` (differences), ``method``,
    ``estimate``, ``se``, ``conf_low``, ``conf_high`` (differences also ``statistic``, the z value,
    and ``p_value``, two-sided, of no difference), ``lambda`` (1 = PPI, 0 = human labels only; NaN
    for the judge-only mean), ``n_labelled`` and ``n_unlabelled`` (items, the sampling unit),
    ``n_effective`` (the number of labelled items a human-only interval would need to be as narrow)
    and ``ess_gain`` (``n_effective / n_labelled``).
    """

    table: pd.DataFrame
    by: tuple[str, ...]
    target: str
    judge: str
    human: str
    conf_level: float

    def _title(self) -> str:
        what = "difference" if self.target == "difference" else "mean"
        return f"Prediction-powered {what} of {self.human!r} (judge: {self.judge!r})"

    def _header(self) -> list[str]:
        return [f"conf_low/conf_high: {self.conf_level:.0%} interval; items are the sampling unit "
                "(rows of an item averaged: runs and models share items)"]

    def _notes(self) -> list[str]:
        notes = ["lambda: weight of the judge (1 = PPI, 0 = human labels only); n_effective: labelled "
                 "items a human-only interval would need for the same width"]
        if "judge_only" in set(self.table["method"]):
            notes.append("judge_only ignores the human labels: it carries the judge's bias, which its "
                         "interval does not account for")
        return notes

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()


def _row(e: _Estimate, method: str, z: float) -> dict[str, float | int | str]:
    gain = e.n_effective / e.n_labelled if e.n_labelled and math.isfinite(e.n_effective) else math.nan
    return {"method": method, "estimate": e.estimate, "se": e.se, "conf_low": e.estimate - z * e.se,
            "conf_high": e.estimate + z * e.se, "lambda": e.lam, "n_labelled": e.n_labelled,
            "n_unlabelled": e.n_unlabelled, "n_effective": e.n_effective, "ess_gain": gain}


def ppi_mean(judged: RunsData, labelled: RunsData | None = None, *, by: str | Sequence[str] | None = "model",
             judge: str = "judge_score", human: str = "human_score", item: str | None = None,
             run: str | None = None, method: Method | Sequence[Method] = "ppi++", conf_level: float = 0.95,
             lam: float | None = None, missing: str = "raise") -> PPIEstimates:
    """Prediction-powered mean of a human score from judge scores and a few human labels, per group.

    Parameters
    ----------
    judged : DataFrame or path
        One row per judged response: the item, the ``by`` columns (model...), an optional run
        column and the judge's score (any finite number: 0/1 verdicts, 1-10 ratings).  It is
        validated as a runs table (:func:`evalmix.ensure_runs`).
    labelled : DataFrame or path, optional
        The human-scored rows: item, ``by`` columns, the human score and the judge's score of the
        same responses.  Items of a group that appear here are *labelled* (their rows in ``judged``
        are not used again); the others are *unlabelled*.  Without it, ``judged`` holds the
        ``human`` column, empty (NaN) where no person scored the row.
    by : str or list of str, optional
        Grouping columns (default ``"model"``); None for one mean over the whole table.
    judge, human : str
        Columns of the judge's and the people's scores.
    item, run : str, optional
        Item and run columns (defaults: the roles :func:`evalmix.read_runs` recorded, else
        ``item`` and ``run``).  Rows of an item (runs, repeated judgements) are averaged.
    method : str or sequence of str
        ``"ppi++"`` (tuned lambda, the default), ``"ppi"`` (lambda = 1), ``"classical"`` (human
        labels only) and ``"judge_only"`` (the naive judge mean, biased); several give one row each.
    conf_level : float
        Coverage of the normal (CLT) intervals.
    lam : float, optional
        A fixed lambda for ``"ppi++"`` instead of the tuned one.
    missing : {"raise", "drop"}
        A missing value in a key or score column: a DataError naming the rows, or the row is dropped
        with a DataWarning.

    Returns
    -------
    PPIEstimates
        One row per group and method (see :class:`PPIEstimates`).

    Raises
    ------
    DataError
        A missing column, a non-numeric or missing score (naming the rows), fewer than 2 labelled
        or 2 unlabelled items in a group.

    Notes
    -----
    Each group's estimate is ``lambda * mean_U(f) + mean_L(y - lambda * f)`` over item means, with
    standard error ``sqrt(var_U(lambda f) / N + var_L(y - lambda f) / n)`` (between-item
    variances).  It assumes the labelled items are a uniform random subset of the items.
    R has no peer; Python's ``ppi_py.ppi_mean_ci`` gives the same numbers for one row per item.

    Examples
    --------
    >>> import evalmix
    >>> judged = evalmix.simulate_judged(n_items=300, n_labelled=60, n_runs=2, rng=1)
    >>> res = evalmix.ppi_mean(judged, method=["ppi++", "judge_only"])
    >>> res.to_frame()[["model", "method", "n_labelled", "n_unlabelled"]].values.tolist()
    [['a', 'ppi++', 60, 240], ['a', 'judge_only', 60, 240], ['b', 'ppi++', 60, 240], ['b', 'judge_only', 60, 240]]
    >>> bool(res.to_frame()["lambda"].iloc[0] > 0)
    True
    """
    methods = _methods(method, lam)
    z = _z(conf_level)
    by_ = sl.as_list(by)
    t = _read_tables(judged, labelled, by=by_, judge=judge, human=human, item=item, run=run, missing=missing)
    j_means = _item_means(t.judged, [*by_, t.item], ["_f"])["_f"]
    l_means = _item_means(t.labelled, [*by_, t.item], ["_y", "_f"])
    rows = []
    for key in _group_keys(t):
        where = sl.slice_label(by_, key)
        y, f_lab, f_unl = _split(_part(j_means, key), _part(l_means, key))
        for m in methods:
            _check_counts(m, len(y), len(f_unl), where)
            rows.append({**dict(zip(by_, key)), **_row(_estimate(y, f_lab, f_unl, m, lam), m, z)})
    table = pd.DataFrame(rows, columns=[*by_, *_COLUMNS])
    return PPIEstimates(table=table, by=tuple(by_), target="mean", judge=judge, human=human,
                        conf_level=float(conf_level))


def _part(frame: _Frame, key: tuple) -> _Frame:
    """The rows of one group of a frame indexed by (by..., item), indexed by item (none when the
    group has no rows there)."""
    if not key:
        return frame
    mask = np.ones(len(frame), bool)
    for level, value in enumerate(key):
        mask &= np.asarray(frame.index.get_level_values(level) == value)
    return frame.loc[mask].droplevel(list(range(len(key))))


def ppi_difference(judged: RunsData, labelled: RunsData | None = None, *, a: object, b: object,
                   by: str = "model", judge: str = "judge_score", human: str = "human_score",
                   item: str | None = None, run: str | None = None,
                   method: Method | Sequence[Method] = "ppi++", conf_level: float = 0.95,
                   lam: float | None = None, missing: str = "raise") -> PPIEstimates:
    """Prediction-powered difference ``a - b`` of the mean human score of two models, paired by item.

    Each item's judge mean of ``b`` is subtracted from that of ``a`` (and the human means likewise),
    and PPI runs on these item differences: items shared by both models are the sampling unit, so
    the item-to-item spread both models share cancels as in a paired test.  An item counts as
    labelled when people scored both models' responses to it.

    Parameters
    ----------
    judged, labelled : DataFrame or path
        As in :func:`ppi_mean`.
    a, b : level of ``by``
        The two models (levels of the ``by`` column); the estimate is ``a - b``.
    by : str
        The column holding the models (default ``"model"``).
    judge, human, item, run, method, conf_level, lam, missing
        As in :func:`ppi_mean`.

    Returns
    -------
    PPIEstimates
        One row per method: ``contrast`` (``"a - b"``), the estimate and interval, ``statistic``
        (z) and ``p_value`` (two-sided, of no difference), ``lambda``, the numbers of labelled and
        unlabelled items, ``n_effective`` and ``ess_gain``.

    Raises
    ------
    DataError
        ``a`` or ``b`` not a level of ``by``, too few labelled or unlabelled items, bad scores.

    Warns
    -----
    DataWarning
        Items judged for only one of the two models are left out, and the warning says how many.

    Examples
    --------
    >>> import evalmix
    >>> judged = evalmix.simulate_judged(n_items=300, n_labelled=60, n_runs=2, rng=1)
    >>> res = evalmix.ppi_difference(judged, a="a", b="b")
    >>> res.to_frame()[["contrast", "method", "n_labelled", "n_unlabelled"]].values.tolist()
    [['a - b', 'ppi++', 60, 240]]
    """
    methods = _methods(method, lam)
    z = _z(conf_level)
    if not isinstance(by, str):
        raise TypeError(f"by= names the one column holding the models (str), got {by!r}")
    t = _read_tables(judged, labelled, by=[by], judge=judge, human=human, item=item, run=run, missing=missing)
    levels = set(t.judged[by].tolist()) | set(t.labelled[by].tolist())
    for name, level in (("a", a), ("b", b)):
        if not isinstance(level, Hashable) or isinstance(level, tuple):
            raise TypeError(f"{name}= is one level of column {by!r}, got {level!r}")
        if level not in levels:
            raise DataError(f"{name}={level!r} is not a level of column {by!r}; levels: "
                            f"{', '.join(sorted(map(repr, levels)))}")
    if a == b:
        raise ValueError(f"a and b are the same model {a!r}")
    j_means = _item_means(t.judged, [by, t.item], ["_f"])["_f"]
    l_means = _item_means(t.labelled, [by, t.item], ["_y", "_f"])

    ja, jb = _part(j_means, (a,)), _part(j_means, (b,))
    la, lb = _part(l_means, (a,)), _part(l_means, (b,))
    lab_items = la.index.intersection(lb.index)
    d_lab = la.loc[lab_items] - lb.loc[lab_items]
    both = ja.index.intersection(jb.index)
    unl_items = both.difference(lab_items)
    all_items = ja.index.union(jb.index).union(la.index).union(lb.index)
    left_out = len(all_items) - len(lab_items) - len(unl_items)
    if left_out:
        warnings.warn(f"{left_out} item(s) are not scored for both {a!r} and {b!r} (judge scores of both, or "
                      "human scores of both) and are left out of the difference", DataWarning, stacklevel=2)
    y, f_lab = d_lab["_y"].to_numpy(float), d_lab["_f"].to_numpy(float)
    f_unl = (ja.loc[unl_items] - jb.loc[unl_items]).to_numpy(float)
    label = contrast_label(a, b, scale="difference")
    rows = []
    for m in methods:
        _check_counts(m, len(y), len(f_unl), f"{label}: ")
        e = _estimate(y, f_lab, f_unl, m, lam)
        stat = e.estimate / e.se if e.se > 0 else math.nan
        p = float(2 * stats.norm.sf(abs(stat))) if math.isfinite(stat) else math.nan
        rows.append({"contrast": label, **_row(e, m, z), "statistic": stat, "p_value": p})
    cols = ["contrast", *_COLUMNS[:5], "statistic", "p_value", *_COLUMNS[5:]]
    table = pd.DataFrame(rows, columns=cols)
    return PPIEstimates(table=table, by=(by,), target="difference", judge=judge, human=human,
                        conf_level=float(conf_level))


# ------------------------------------------------------------------------------ simulation

def _intercepts(accuracy: Sequence[float], item_sd: float) -> np.ndarray:
    """Logit intercepts whose item-averaged success probability is ``accuracy`` exactly (Gauss-Hermite)."""
    x, w = np.polynomial.hermite_e.hermegauss(80)
    w = w / w.sum()

    def mean_p(alpha: float) -> float:
        return float(np.sum(w * special.expit(alpha + item_sd * x)))

    return np.array([optimize.brentq(lambda al: mean_p(al) - p, -40, 40, xtol=1e-14) for p in accuracy])


def _check_design(n_items: int, n_labelled: int, n_runs: int, accuracy: Sequence[float], item_sd: float,
                  judge_fpr: float, judge_fnr: float) -> None:
    for name, v in (("n_items", n_items), ("n_labelled", n_labelled), ("n_runs", n_runs)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1:
            raise ValueError(f"{name} must be a positive integer, got {v!r}")
    if not _MIN_ITEMS <= n_labelled <= n_items - _MIN_ITEMS:
        raise ValueError(f"n_labelled must be between {_MIN_ITEMS} and n_items - {_MIN_ITEMS} "
                         f"({n_items - _MIN_ITEMS}), got {n_labelled}")
    if len(accuracy) < 1 or not all(0 < p < 1 for p in accuracy):
        raise ValueError(f"accuracy must be one or more probabilities in (0, 1), got {accuracy!r}")
    for name, rate in (("judge_fpr", judge_fpr), ("judge_fnr", judge_fnr)):
        if not 0 <= rate < 1:
            raise ValueError(f"{name} must be in [0, 1), got {rate!r}")
    if judge_fpr + judge_fnr >= 1:
        raise ValueError("judge_fpr + judge_fnr must be below 1 (else the judge is no better than chance)")
    if not item_sd >= 0:
        raise ValueError(f"item_sd must be >= 0, got {item_sd!r}")


def _draw(rng: np.random.Generator, alpha: np.ndarray, n_items: int, n_labelled: int, n_runs: int,
          item_sd: float, judge_fpr: float, judge_fnr: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Human (models x items x runs, 0/1), judge (same shape) and the labelled-item mask."""
    u = rng.normal(0.0, item_sd, n_items)  # item difficulty, shared by every model
    p = special.expit(alpha[:, None] + u[None, :])
    human = (rng.random((len(alpha), n_items, n_runs)) < p[:, :, None]).astype(float)
    flip = rng.random(human.shape)
    judge = np.where(human == 1, flip >= judge_fnr, flip < judge_fpr).astype(float)
    labelled = np.zeros(n_items, bool)
    labelled[rng.choice(n_items, n_labelled, replace=False)] = True
    return human, judge, labelled


@accepts_seed
def simulate_judged(n_items: int = 500, n_labelled: int = 50, n_runs: int = 3, *,
                    accuracy: Sequence[float] = (0.7, 0.6), item_sd: float = 1.0, judge_fpr: float = 0.25,
                    judge_fnr: float = 0.05, rng: int | np.random.Generator | None = None) -> pd.DataFrame:
    """A judged benchmark with known truth: models answer shared items in repeated runs, a lenient
    judge scores every response and people score every run of a random subset of items.

    Item ``i`` is answered correctly by model ``m`` with probability ``expit(alpha_m + u_i)``,
    ``u_i ~ N(0, item_sd^2)`` shared by the models; ``alpha_m`` is set so that the item-averaged
    probability is exactly ``accuracy[m]`` (the true mean human score).  The judge passes a wrong
    answer with probability ``judge_fpr`` and fails a right one with probability ``judge_fnr``, so
    the judge-only mean is biased by ``judge_fpr * (1 - accuracy) - judge_fnr * accuracy``.

    Parameters
    ----------
    n_items, n_labelled, n_runs : int
        Items, human-labelled items (a uniform random subset), runs per model and item.
    accuracy : sequence of float
        True mean human score of each model (models ``"a"``, ``"b"``, ...).
    item_sd : float
        Spread of item difficulty on the logit scale.
    judge_fpr, judge_fnr : float
        The judge's false-pass and false-fail rates.
    rng : int or Generator, optional
        Random numbers: a seed or a numpy Generator.

    Returns
    -------
    DataFrame
        Columns ``model``, ``item``, ``run``, ``judge_score`` (0/1) and ``human_score`` (0/1, NaN
        on unlabelled items).

    Examples
    --------
    >>> df = simulate_judged(n_items=20, n_labelled=5, n_runs=2, rng=0)
    >>> len(df), int(df["human_score"].notna().sum())
    (80, 20)
    """
    _check_design(n_items, n_labelled, n_runs, accuracy, item_sd, judge_fpr, judge_fnr)
    rng = as_generator(rng)
    alpha = _intercepts(accuracy, item_sd)
    human, judge, labelled = _draw(rng, alpha, n_items, n_labelled, n_runs, item_sd, judge_fpr, judge_fnr)
    n_models = len(alpha)
    models = [chr(ord("a") + m) if m < 26 else f"m{m + 1}" for m in range(n_models)]
    mi, ii, ri = np.meshgrid(np.arange(n_models), np.arange(n_items), np.arange(n_runs), indexing="ij")
    return pd.DataFrame({
        "model": np.asarray(models)[mi.ravel()],
        "item": ii.ravel() + 1,
        "run": ri.ravel() + 1,
        "judge_score": judge.ravel(),
        "human_score": np.where(labelled[ii.ravel()], human.ravel(), np.nan),
    })


@dataclass(frozen=True, eq=False, repr=False)
class PPICoverage(Result):
    """Coverage and width of judge-only, human-only, PPI and PPI++ intervals on simulated benchmarks.

    ``table`` columns: ``target`` (``"mean a"``, the first model's mean, and ``"a - b"``, the
    difference of the first two), ``method``, ``coverage`` (share of intervals containing the
    truth), ``coverage_mc_se`` (its Monte-Carlo standard error, ``sqrt(c (1 - c) / n_sims)``),
    ``mean_width``, ``bias`` (mean estimate minus truth) and ``mean_lambda``.
    """

    table: pd.DataFrame
    n_sims: int
    conf_level: float
    truth: dict[str, float]

    def _title(self) -> str:
        return "Coverage of prediction-powered intervals (simulation)"

    def _header(self) -> list[str]:
        truth = ", ".join(f"{k} = {v:.4f}" for k, v in self.truth.items())
        return [f"{self.n_sims} simulated benchmarks; nominal coverage {self.conf_level:.0%}; truth: {truth}"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()


@accepts_seed
def ppi_coverage_study(n_items: int = 500, n_labelled: int = 50, n_runs: int = 3, *,
                       accuracy: Sequence[float] = (0.7, 0.6), item_sd: float = 1.0, judge_fpr: float = 0.25,
                       judge_fnr: float = 0.05, n_sims: int = 500,
                       method: Method | Sequence[Method] = METHODS, conf_level: float = 0.95,
                       rng: int | np.random.Generator | None = None) -> PPICoverage:
    """How often judge-only, human-only, PPI and PPI++ intervals cover the true mean human score.

    Each replicate draws a benchmark as :func:`simulate_judged` does (shared items, repeated runs,
    a biased judge, a random labelled subset of items), computes every method's interval for the
    first model's mean and for the difference of the first two models exactly as :func:`ppi_mean`
    and :func:`ppi_difference` do, and checks it against the known truth.

    Parameters
    ----------
    n_items, n_labelled, n_runs, accuracy, item_sd, judge_fpr, judge_fnr
        The design, as in :func:`simulate_judged` (``accuracy`` needs two models).
    n_sims : int
        Simulated benchmarks.
    method : str or sequence of str
        Methods to compare (default: all four).
    conf_level : float
        Nominal coverage.
    rng : int or Generator, optional
        Random numbers: a seed or a numpy Generator.

    Returns
    -------
    PPICoverage
        Coverage with its Monte-Carlo error, mean width, bias and mean lambda per target and method.

    Examples
    --------
    >>> res = ppi_coverage_study(n_items=200, n_labelled=40, n_runs=2, n_sims=20, rng=3)
    >>> res.to_frame()[["target", "method"]].values.tolist()[:4]
    [['mean a', 'ppi++'], ['mean a', 'ppi'], ['mean a', 'classical'], ['mean a', 'judge_only']]
    """
    _check_design(n_items, n_labelled, n_runs, accuracy, item_sd, judge_fpr, judge_fnr)
    if len(accuracy) < 2:
        raise ValueError("accuracy needs two models (the study also covers their difference)")
    if isinstance(n_sims, bool) or not isinstance(n_sims, (int, np.integer)) or n_sims < 1:
        raise ValueError(f"n_sims must be a positive integer, got {n_sims!r}")
    methods = _methods(method, None)
    z = _z(conf_level)
    rng = as_generator(rng)
    alpha = _intercepts(accuracy, item_sd)
    truth = {"mean a": float(accuracy[0]), "a - b": float(accuracy[0] - accuracy[1])}
    out: dict[tuple[str, str], list[tuple[float, float, float]]] = {(t, m): [] for t in truth for m in methods}
    for _ in range(n_sims):
        human, judge, lab = _draw(rng, alpha, n_items, n_labelled, n_runs, item_sd, judge_fpr, judge_fnr)
        y_items, f_items = human.mean(axis=2), judge.mean(axis=2)  # models x items
        arrays = {"mean a": (y_items[0], f_items[0]), "a - b": (y_items[0] - y_items[1], f_items[0] - f_items[1])}
        for target, (y, f) in arrays.items():
            for m in methods:
                e = _estimate(y[lab], f[lab], f[~lab], m, None)
                out[target, m].append((e.estimate, e.se, e.lam))
    rows = []
    for (target, m), values in out.items():
        arr = np.asarray(values)
        est, se = arr[:, 0], arr[:, 1]
        cover = np.abs(est - truth[target]) <= z * se
        c = float(cover.mean())
        rows.append({"target": target, "method": m, "coverage": c, "coverage_mc_se": math.sqrt(c * (1 - c) / n_sims),
                     "mean_width": float(np.mean(2 * z * se)), "bias": float(est.mean() - truth[target]),
                     "mean_lambda": float(np.mean(arr[:, 2])) if m != "judge_only" else math.nan})
    return PPICoverage(table=pd.DataFrame(rows), n_sims=int(n_sims), conf_level=float(conf_level), truth=truth)
