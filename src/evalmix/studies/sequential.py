"""Anytime-valid inference: confidence sequences for an accuracy and a paired difference, and a
stopping rule.

A confidence sequence (CS) is a sequence of intervals ``C_1, C_2, ...`` that covers the mean at
*every* step at once with probability ``conf_level``: an evaluation may be watched after every item
and stopped whenever the interval is narrow enough or excludes a value, and the interval at the stop
keeps its coverage.  A fixed-n interval (or p-value) looked at after every batch does not: its
false-positive rate grows with the number of looks (``docs/sequential.md`` shows how much).

The unit of the sequence is the **item**: with repeated runs each item contributes the mean of its
runs (a number in [0, 1]; for a paired difference the difference of the two models' item means, in
[-1, 1]).  Items are the independent draws, so runs of an item never count as separate
observations, and the CS covers the accuracy over the population of items at the number of runs
used.  The items must arrive in a random order (a benchmark file sorted by difficulty is not a
random order: pass ``rng=`` to shuffle it).

Methods (all for means of bounded outcomes, no variance assumption):

``"betting"``
    The hedged-capital CS of Waudby-Smith & Ramdas (2023, JRSS-B, Theorem 3): for each candidate
    mean ``m`` two capital processes bet on the next observation being above or below ``m`` with
    predictable-plug-in bets; ``m`` leaves the CS when ``max(K+ / 2, K- / 2) >= 1 / alpha``.
    Computed on a grid of ``m`` (``grid`` cells over the range, widened by one cell), as
    ``confseq.betting.hedged_cs``; the tightest of the three for outcomes with small variance.
``"empirical_bernstein"``
    The predictable-plug-in empirical-Bernstein CS of the same paper (Theorem 2), in closed form:
    variance-adaptive, a little wider than betting.
``"normal_mixture"``
    Robbins' two-sided normal-mixture boundary for a sub-Gaussian sum (Howard et al. 2021): with
    outcomes in a range of length ``L`` the variance proxy is ``(L / 2)^2``; the mixture is tuned
    to be tightest at ``n_opt`` items.  Ignores the variance (it is Hoeffding's CS), so it is wide
    when the outcomes are far from 50/50; its width does not depend on the data, which makes it the
    planner's closed form.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..core.seeds import accepts_seed, as_generator
from ..core.result import Result, contrast_label
from ..core.arguments import check_choice, check_count, check_level, check_number, check_seed
from ..stats.comparisons import resolve_columns, runs_matrices, sole_model
from ..data.runs import RunsData
from ..core.errors import DataError
from ..core.methods import CS_METHODS, CsMethod

__all__ = ["METHODS", "SequenceResult", "confidence_sequence", "expected_stop", "normal_mixture_radius",
           "sequential_accuracy", "sequential_difference", "simulate_stopping", "stopping_time"]

#: The confidence-sequence methods (see the module notes).
METHODS = CS_METHODS

Method = CsMethod

# The predictable plug-in bets start from a prior observation at the centre of the range with the
# largest variance a [0, 1] outcome can have, as in Waudby-Smith & Ramdas (2023), eq. (26).
_PRIOR_MEAN, _PRIOR_VAR = 0.5, 0.25
# hedged capital: bets are truncated at half the largest bet that keeps the capital positive
# (their c = 1/2), and the two directions are weighted equally (theta = 1/2)
_TRUNCATION = 0.5
_THETA = 0.5


# ----------------------------------------------------------------------------------------------
# the sequences on [0, 1]


def _plugin_bets(x: np.ndarray, alpha: float, truncation: float = math.inf) -> np.ndarray:
    """Predictable plug-in bets lambda_t = sqrt(2 log(1/alpha) / (sigma2_{t-1} t log(1 + t))).

    sigma2_{t-1} is the regularised running variance of the observations before t (one prior
    observation of mean 1/2 and variance 1/4), so lambda_t uses only the past.
    """
    t = np.arange(1, len(x) + 1)
    mu = np.minimum((_PRIOR_MEAN + np.cumsum(x)) / (t + 1), 1.0)
    sigma2 = (_PRIOR_VAR + np.cumsum((x - mu) ** 2)) / (t + 1)
    sigma2_before = np.concatenate(([_PRIOR_VAR], sigma2[:-1]))
    with np.errstate(divide="ignore"):
        lam = np.sqrt(2 * math.log(1 / alpha) / (t * np.log1p(t) * sigma2_before))
    return np.minimum(np.nan_to_num(lam, nan=0.0, posinf=truncation), truncation)


def _betting(x: np.ndarray, alpha: float, grid: int) -> tuple[np.ndarray, np.ndarray]:
    """Hedged-capital CS of observations in [0, 1] (Waudby-Smith & Ramdas 2023, Theorem 3)."""
    m = np.arange(grid + 1) / grid  # candidate means, one row each
    lam = _plugin_bets(x, alpha)[None, :]
    mm = m[:, None]
    with np.errstate(divide="ignore", invalid="ignore"):
        up = np.clip(lam, -_TRUNCATION / (1 - mm), _TRUNCATION / mm)  # bets that the mean is above m
        down = np.clip(lam, -_TRUNCATION / mm, _TRUNCATION / (1 - mm))  # ... below m
    dev = x[None, :] - mm
    # log capital, so that thousands of items neither overflow nor underflow; at m = 0 or 1 a bet
    # of 1/0 on an observation equal to m multiplies the capital by 1 (0 * inf := 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        f_up = np.where(dev == 0, 0.0, np.log(np.maximum(1 + up * dev, 0.0)))
        f_down = np.where(dev == 0, 0.0, np.log(np.maximum(1 - down * dev, 0.0)))
    log_k = np.maximum(math.log(_THETA) + np.cumsum(f_up, axis=1),
                       math.log(1 - _THETA) + np.cumsum(f_down, axis=1))
    inside = log_k < math.log(1 / alpha)
    any_in = inside.any(axis=0)
    first = np.argmax(inside, axis=0)
    last = grid - np.argmax(inside[::-1], axis=0)
    # the CS is the set of grid means kept, widened by one cell (the true mean may lie between two
    # grid points); a step where every grid point is rejected (possible only with a data error, as
    # the capital is a martingale at the true mean) falls back to the whole range
    lo = np.where(any_in, np.maximum(m[first] - 1 / grid, 0.0), 0.0)
    hi = np.where(any_in, np.minimum(m[last] + 1 / grid, 1.0), 1.0)
    return lo, hi


def _eb_lower(x: np.ndarray, alpha: float) -> np.ndarray:
    """Lower predictable-plug-in empirical-Bernstein CS at level 1 - alpha (one-sided)."""
    t = np.arange(1, len(x) + 1)
    lam = _plugin_bets(x, alpha, truncation=_TRUNCATION)
    mean_before = np.concatenate(([0.0], np.cumsum(x)[:-1] / t[:-1]))
    v = (x - mean_before) ** 2
    psi = -np.log1p(-lam) - lam
    s_lam = np.cumsum(lam)
    centre = np.cumsum(lam * x) / s_lam
    margin = (math.log(1 / alpha) + np.cumsum(v * psi)) / s_lam
    return np.minimum(centre - margin, 1.0)


def _empirical_bernstein(x: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
    """Two-sided PrPl-EB CS (Waudby-Smith & Ramdas 2023, Theorem 2): alpha/2 on each side."""
    return np.maximum(_eb_lower(x, alpha / 2), 0.0), np.minimum(1 - _eb_lower(1 - x, alpha / 2), 1.0)


def normal_mixture_radius(n: ArrayLike, *, conf_level: float = 0.95, n_opt: float = 100,
                          scale: float = 0.5) -> np.ndarray:
    """Half-width of the two-sided normal-mixture CS of a mean after ``n`` observations.

    For observations whose centred sum is sub-Gaussian with variance proxy ``scale^2`` per
    observation (``scale = (b - a) / 2`` for outcomes in ``[a, b]``, Hoeffding), the sum ``S_n``
    stays within ``sqrt((V + rho) (log(1 + V / rho) + 2 log(1 / alpha)))`` of ``n mu`` for all
    ``n`` at once with probability ``1 - alpha``, ``V = scale^2 n`` (Robbins' normal mixture;
    Howard et al. 2021, eq. (14)).  ``rho = V_opt / (2 log(1/alpha) + log(1 + 2 log(1/alpha)))``
    makes the boundary tightest near ``n_opt`` observations.  The half-width of the CS is that
    bound divided by ``n``; it does not depend on the data.

    Parameters
    ----------
    n : array_like
        Numbers of observations (positive).
    conf_level : float
        Coverage of the whole sequence.
    n_opt : float
        Number of observations at which the boundary is tightest.
    scale : float
        Sub-Gaussian scale of one observation (0.5 for outcomes in [0, 1], 1 for differences in
        [-1, 1]).

    Returns
    -------
    ndarray
        Half-widths.

    Examples
    --------
    >>> import numpy as np
    >>> np.round(normal_mixture_radius([100, 400, 1600], n_opt=400), 4)
    array([0.1632, 0.0759, 0.0391])
    """
    level = check_level(conf_level)
    check_number(n_opt, "n_opt", minimum=0, strict=True)
    check_number(scale, "scale", minimum=0, strict=True)
    nn = np.asarray(n, dtype=float)
    if np.any(~np.isfinite(nn)) or np.any(nn <= 0):
        raise DataError("n must hold positive numbers of observations")
    alpha = 1 - level
    log_a = math.log(1 / alpha)
    rho = scale**2 * n_opt / (2 * log_a + math.log(1 + 2 * log_a))
    v = scale**2 * nn
    return np.sqrt((v + rho) * (np.log1p(v / rho) + 2 * log_a)) / nn


def _sequence(z: np.ndarray, method: str, alpha: float, grid: int, n_opt: float,
              running_intersection: bool) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) CS of the mean of observations z in [0, 1]."""
    if method == "betting":
        lo, hi = _betting(z, alpha, grid)
    elif method == "empirical_bernstein":
        lo, hi = _empirical_bernstein(z, alpha)
    else:
        t = np.arange(1, len(z) + 1)
        r = normal_mixture_radius(t, conf_level=1 - alpha, n_opt=n_opt, scale=0.5)
        mean = np.cumsum(z) / t
        lo, hi = np.maximum(mean - r, 0.0), np.minimum(mean + r, 1.0)
    if running_intersection:  # the intersection of CSs is a CS, and never wider
        lo, hi = np.maximum.accumulate(lo), np.minimum.accumulate(hi)
        hi = np.maximum(hi, lo)  # an empty intersection (an alpha event) keeps one point
    return lo, hi


# ----------------------------------------------------------------------------------------------
# the stopping rule


def _check_stop(target_width: float | None, null: float | None, max_n: int | None) -> None:
    """The stopping rule's arguments: a width > 0, a finite null, a budget of whole items >= 1."""
    if target_width is not None:
        check_number(target_width, "target_width", minimum=0, strict=True)
    if null is not None:
        check_number(null, "null")
    if max_n is not None:
        check_count(max_n, "max_n")


def stopping_time(conf_low: ArrayLike, conf_high: ArrayLike, *, null: float | None = None,
                  target_width: float | None = None, max_n: int | None = None) -> tuple[int | None, str]:
    """The first step at which the stopping rule holds, and why.

    The rule stops at the first step where the interval excludes ``null`` (the comparison is
    decided: ``"above"`` or ``"below"``), or is at most ``target_width`` wide (``"width"``), or
    at step ``max_n`` (the budget: ``"budget"``); without any of these before the sequence ends
    it has not stopped (``None, "continue"``).  Steps are counted from 1.

    Parameters
    ----------
    conf_low, conf_high : array_like
        The confidence sequence, one value per step.
    null : float, optional
        The value whose exclusion decides the comparison (0 for a difference).
    target_width : float, optional
        Stop once the interval is this narrow.
    max_n : int, optional
        Stop at this step at the latest.

    Returns
    -------
    (int or None, str)

    Examples
    --------
    >>> stopping_time([-0.3, -0.1, 0.02], [0.5, 0.3, 0.2], null=0.0)
    (3, 'above')
    >>> stopping_time([0.1, 0.2], [0.9, 0.4], target_width=0.25)
    (2, 'width')
    """
    lo, hi = np.asarray(conf_low, dtype=float), np.asarray(conf_high, dtype=float)
    if lo.shape != hi.shape or lo.ndim != 1:
        raise DataError(f"conf_low and conf_high must be 1-D of one length, got {lo.shape} and {hi.shape}")
    _check_stop(target_width, null, max_n)
    n = len(lo) if max_n is None else min(len(lo), max_n)
    for t in range(n):
        if null is not None and lo[t] > null:
            return t + 1, "above"
        if null is not None and hi[t] < null:
            return t + 1, "below"
        if target_width is not None and hi[t] - lo[t] <= target_width:
            return t + 1, "width"
    if max_n is not None and len(lo) >= max_n:
        return max_n, "budget"
    return None, "continue"


# ----------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True, eq=False, repr=False)
class SequenceResult(Result):
    """A confidence sequence and where the stopping rule stopped it.

    ``table`` has one row per step (``n``: items so far; ``n_answers``: scored answers so far, the
    cost; ``estimate``: the running mean; ``conf_low``, ``conf_high``, ``width``).  ``stopped_at``
    is the step where the rule stopped (None if it did not), ``decision`` why (``"above"`` /
    ``"below"``: the interval excludes ``null``; ``"width"``; ``"budget"``; ``"continue"``).
    ``estimate``, ``conf_low`` and ``conf_high`` are the values at the stop (at the last step when
    the rule did not stop).
    """

    table: pd.DataFrame
    method: str
    conf_level: float
    label: str
    null: float | None
    target_width: float | None
    max_n: int | None
    stopped_at: int | None
    decision: str

    @property
    def _row(self) -> pd.Series:
        table = object.__getattribute__(self, "table")
        i = (self.stopped_at or len(table)) - 1
        return table.iloc[i]

    @property
    def estimate(self) -> float:
        """The running mean at the stop."""
        return float(self._row["estimate"])

    @property
    def conf_low(self) -> float:
        """Lower end of the interval at the stop."""
        return float(self._row["conf_low"])

    @property
    def conf_high(self) -> float:
        """Upper end of the interval at the stop."""
        return float(self._row["conf_high"])

    @property
    def n_answers(self) -> int:
        """Scored answers used up to the stop."""
        return int(self._row["n_answers"])

    def _title(self) -> str:
        return f"Confidence sequence ({self.method}): {self.label}"

    def _header(self) -> list[str]:
        row = self._row
        where = (f"stopped after {self.stopped_at} items ({self.n_answers} answers)"
                 if self.stopped_at else f"not stopped after {len(object.__getattribute__(self, 'table'))} items")
        why = {"above": f"the sequence lies above {self.null:g}" if self.null is not None else "",
               "below": f"the sequence lies below {self.null:g}" if self.null is not None else "",
               "width": f"the interval is at most {self.target_width:g} wide" if self.target_width else "",
               "budget": "the budget is spent", "continue": "the rule has not been met"}[self.decision]
        return [f"{where}: {why}",
                f"estimate {row['estimate']:.4g}, {self.conf_level:.0%} anytime-valid interval "
                f"[{row['conf_low']:.4g}, {row['conf_high']:.4g}]"]

    def _notes(self) -> list[str]:
        return ["valid at every step at once: the interval at a data-dependent stop keeps its coverage; "
                "items must arrive in a random order"]

    def stop_frame(self) -> pd.DataFrame:
        """One row: the stop (``n``, ``n_answers``, ``estimate``, ``conf_low``, ``conf_high``,
        ``width``, ``decision``)."""
        row = self._row
        return pd.DataFrame([{"n": int(row["n"]), "n_answers": int(row["n_answers"]),
                              "estimate": float(row["estimate"]), "conf_low": float(row["conf_low"]),
                              "conf_high": float(row["conf_high"]), "width": float(row["width"]),
                              "decision": self.decision}])

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"method": self.method, "conf_level": self.conf_level,
                                    "label": self.label, "null": self.null,
                                    "target_width": self.target_width, "max_n": self.max_n,
                                    "stopped_at": self.stopped_at, "decision": self.decision,
                                    "estimate": self.estimate, "conf_low": self.conf_low,
                                    "conf_high": self.conf_high}


def _check_common(method: str, conf_level: float, grid: int, n_opt: float | None,
                  target_width: float | None, null: float | None, max_n: int | None) -> float:
    check_choice(method, "method", METHODS)
    level = check_level(conf_level)
    check_count(grid, "grid", minimum=10)
    if n_opt is not None:
        check_number(n_opt, "n_opt", minimum=0, strict=True)
    _check_stop(target_width, null, max_n)
    return 1 - level


def confidence_sequence(x: ArrayLike, *, method: Method = "betting", conf_level: float = 0.95,
                        bounds: tuple[float, float] = (0.0, 1.0), null: float | None = None,
                        target_width: float | None = None, max_n: int | None = None,
                        weights: ArrayLike | None = None, running_intersection: bool = True,
                        grid: int = 1000, n_opt: float | None = None,
                        label: str = "mean") -> SequenceResult:
    """Anytime-valid confidence sequence for the mean of bounded observations, with a stopping rule.

    Parameters
    ----------
    x : array_like
        Observations in arrival order, each within ``bounds`` (e.g. item mean accuracies).
    method : {"betting", "empirical_bernstein", "normal_mixture"}
        See the module notes.
    conf_level : float
        Probability that the whole sequence covers the mean.
    bounds : (float, float)
        The range the observations are known to lie in ((0, 1) for accuracies, (-1, 1) for paired
        differences).  The sequences are computed for ``(x - a) / (b - a)``.
    null : float, optional
        Stop when the sequence excludes this value.
    target_width : float, optional
        Stop when the interval is at most this wide.
    max_n : int, optional
        Stop at this many observations at the latest (the budget).
    weights : array_like, optional
        Cost of each observation (e.g. runs of the item), summed into ``n_answers``; default 1.
    running_intersection : bool
        Intersect each interval with the earlier ones (still a CS, never wider).
    grid : int
        Grid cells over the range for ``"betting"`` (resolution ``(b - a) / grid``).
    n_opt : float, optional
        Observations at which the normal mixture is tightest (default ``max_n``, else ``len(x)``).
    label : str
        What the mean is, for the printed title.

    Returns
    -------
    SequenceResult

    Raises
    ------
    DataError
        An observation outside ``bounds``, or a missing one.

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(1).binomial(1, 0.7, size=400)
    >>> cs = confidence_sequence(x, target_width=0.2)
    >>> cs.stopped_at, cs.decision
    (233, 'width')
    >>> bool(cs.conf_low < 0.7 < cs.conf_high)
    True
    """
    alpha = _check_common(method, conf_level, grid, n_opt, target_width, null, max_n)
    a, b = (check_number(v, "bounds") for v in bounds)
    if not b > a:
        raise DataError(f"bounds must be (low, high) with low < high, got {tuple(bounds)}")
    xs = np.asarray(x, dtype=float)
    if xs.ndim != 1 or xs.size == 0:
        raise DataError(f"x must be a non-empty 1-D sequence, got shape {xs.shape}")
    bad = np.flatnonzero(~np.isfinite(xs) | (xs < a) | (xs > b))
    if bad.size:
        raise DataError(f"x must lie within bounds {(a, b)}: observation {int(bad[0])} is {float(xs[bad[0]])!r}"
                        f" ({bad.size} outside)")
    w = np.ones_like(xs) if weights is None else np.asarray(weights, dtype=float)
    if w.shape != xs.shape:
        raise DataError(f"weights must have one value per observation: {w.shape} vs {xs.shape}")
    if max_n is not None:
        xs, w = xs[:max_n], w[:max_n]
    z = (xs - a) / (b - a)
    n_opt_ = float(n_opt if n_opt is not None else (max_n if max_n is not None else len(xs)))
    lo, hi = _sequence(z, method, alpha, grid, n_opt_, running_intersection)
    t = np.arange(1, len(xs) + 1)
    lo, hi = a + (b - a) * lo, a + (b - a) * hi
    table = pd.DataFrame({"n": t, "n_answers": np.cumsum(w), "estimate": np.cumsum(xs) / t,
                          "conf_low": lo, "conf_high": hi, "width": hi - lo})
    stop, decision = stopping_time(lo, hi, null=null, target_width=target_width, max_n=max_n)
    return SequenceResult(table=table, method=method, conf_level=1 - alpha, label=label, null=null,
                          target_width=target_width, max_n=max_n, stopped_at=stop, decision=decision)


# ----------------------------------------------------------------------------------------------
# from a runs table: the unit is the item


def _arrival(order_source: pd.DataFrame, item: str, items: pd.Index, order: str | None,
             seed: int | np.random.Generator | None) -> np.ndarray:
    """Positions of ``items`` in arrival order: first appearance in the table, or by ``order``,
    or shuffled with ``seed``."""
    if order is not None:
        if order not in order_source.columns:
            raise DataError(f"order column {order!r} is not in the data (columns: "
                            f"{', '.join(map(str, order_source.columns))})")
        first = order_source.groupby(item, sort=False, observed=True)[order].min().sort_values(kind="stable")
        seq = list(first.index)
    else:
        seq = list(pd.unique(order_source[item]))
    pos = pd.Index(items).get_indexer(seq)
    pos = pos[pos >= 0]
    if seed is not None:
        pos = as_generator(seed).permutation(pos)
    return pos


@accepts_seed
def sequential_accuracy(data: RunsData, model: str | None = None, *, method: Method = "betting",
                        conf_level: float = 0.95, null: float | None = None,
                        target_width: float | None = None, max_items: int | None = None,
                        order: str | None = None, rng: int | np.random.Generator | None = None,
                        model_column: str | None = None, item: str | None = None,
                        run: str | None = None, outcome: str | None = None,
                        grid: int = 1000, missing: str = "raise") -> SequenceResult:
    """Confidence sequence of one model's accuracy over items, with the stopping rule.

    Each item's observation is the mean of its runs (scores in [0, 1]; k-of-n counts as
    ``successes / trials``), so repeated runs sharpen each observation without being counted as
    independent items.  ``n_answers`` counts the scored runs, the cost.

    Parameters
    ----------
    data : DataFrame or path
        Long runs table.
    model : str, optional
        The model to follow (required when the table has a model column with several models).
    method, conf_level, null, target_width, grid
        As in :func:`confidence_sequence`.
    max_items : int, optional
        The budget in items.
    order : str, optional
        Column giving the arrival order (e.g. a timestamp or sample index); default the order in
        which items first appear in the table.
    rng : int or numpy.random.Generator, optional
        Shuffle the items into a random order first (for a table sorted by anything related to
        difficulty).
    model_column, item, run, outcome : str, optional
        Column names (default: the roles of :func:`evalmix.read_runs`).
    missing : {"raise", "drop"}
        Rows with a missing value (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    SequenceResult

    Examples
    --------
    >>> import evalmix
    >>> df = evalmix.simulate.glmm_runs(2, 300, 3, rng=1)
    >>> model = sorted(df["model"].unique())[0]
    >>> cs = sequential_accuracy(df, model, target_width=0.15)
    >>> cs.decision, cs.stopped_at is not None
    ('width', True)
    """
    check_seed(rng, "rng")
    df, model_col, item_col, run_col, score = _resolve(data, model_column, item, run, outcome, missing)
    model = sole_model(df, model_col, model)
    mats, _, items = runs_matrices(df, model, model, model=model_col, item=item_col, run=run_col,
                                   outcome=score)
    sub = df[df[model_col].astype(str) == str(model)]
    pos = _arrival(sub, item_col, items, order, rng)
    with np.errstate(invalid="ignore"):
        obs = ~np.isnan(mats)
        means = np.nansum(mats, axis=0) / obs.sum(axis=0)
    return confidence_sequence(means[pos], method=method, conf_level=conf_level, bounds=(0.0, 1.0),
                               null=null, target_width=target_width, max_n=max_items,
                               weights=obs.sum(axis=0)[pos], grid=grid, label=f"accuracy of {model}")


def _resolve(data: RunsData, model: str | None, item: str | None, run: str | None, outcome: str | None,
             missing: str) -> tuple[pd.DataFrame, str, str, str | None, str]:
    df, roles = resolve_columns(data, model, item, run, outcome, missing=missing)
    model_col, item_col, run_col, score = roles.role("model"), roles.role("item"), roles.run, roles.scores
    lo, hi = df[score].min(), df[score].max()
    if lo < 0 or hi > 1:
        raise DataError(f"scores in column {score!r} must lie in [0, 1] for a confidence sequence of bounded "
                        f"outcomes, found [{lo:g}, {hi:g}]")
    return df, model_col, item_col, run_col, score


@accepts_seed
def sequential_difference(data: RunsData, a: str, b: str, *, method: Method = "betting",
                          conf_level: float = 0.95, null: float = 0.0,
                          target_width: float | None = None, max_items: int | None = None,
                          order: str | None = None, rng: int | np.random.Generator | None = None,
                          model: str | None = None, item: str | None = None, run: str | None = None,
                          outcome: str | None = None, grid: int = 1000,
                          missing: str = "raise") -> SequenceResult:
    """Confidence sequence of the paired accuracy difference ``b - a`` over shared items.

    Each item's observation is ``mean_b(item) - mean_a(item)``, the difference of the two models'
    means over their runs, in [-1, 1]: the comparison is paired by item (the item's difficulty
    cancels) and clustered by item (runs are not independent items).  The rule stops when the
    sequence excludes ``null`` (decided: ``"above"`` means b is better), when the interval is at
    most ``target_width`` wide, or after ``max_items`` items.

    Parameters
    ----------
    data : DataFrame or path
        Long runs table; both models must score the same items.
    a, b : str
        The two models (``estimate = b - a``).
    method, conf_level, target_width, grid
        As in :func:`confidence_sequence`.
    null : float
        The difference whose exclusion decides the comparison (0).
    max_items : int, optional
        The budget in items.
    order : str, optional
        Column giving the arrival order; default the order of first appearance.
    rng : int or numpy.random.Generator, optional
        Shuffle the items into a random order first.
    model, item, run, outcome : str, optional
        Column names.
    missing : {"raise", "drop"}
        Rows with a missing value.

    Returns
    -------
    SequenceResult
        ``n_answers`` counts the scored answers of both models.

    Examples
    --------
    >>> from evalmix.simulate import mixture_benchmark
    >>> df = mixture_benchmark(2000, 4, rng=3)
    >>> cs = sequential_difference(df, "base", "finetune", target_width=0.05)
    >>> cs.decision, cs.stopped_at, round(cs.estimate, 4)
    ('width', 938, 0.0067)
    """
    check_seed(rng, "rng")
    df, model_col, item_col, run_col, score = _resolve(data, model, item, run, outcome, missing)
    xa, xb, items = runs_matrices(df, a, b, model=model_col, item=item_col, run=run_col, outcome=score)
    ka, kb = (~np.isnan(xa)).sum(axis=0), (~np.isnan(xb)).sum(axis=0)
    empty = np.flatnonzero((ka == 0) | (kb == 0))
    if empty.size:
        raise DataError(f"item {items[empty[0]]!r} has no scored run for one of the models")
    d = np.nansum(xb, axis=0) / kb - np.nansum(xa, axis=0) / ka
    sub = df[df[model_col].astype(str).isin([str(a), str(b)])]
    pos = _arrival(sub, item_col, items, order, rng)
    return confidence_sequence(d[pos], method=method, conf_level=conf_level, bounds=(-1.0, 1.0), null=null,
                               target_width=target_width, max_n=max_items, weights=(ka + kb)[pos],
                               grid=grid, label=contrast_label(b, a, scale="accuracy"))


def _sequences_many(x: np.ndarray, bounds: tuple[float, float], method: str, conf_level: float,
                    grid: int, n_opt: float) -> tuple[np.ndarray, np.ndarray]:
    """CS of each row of ``x`` (reps x steps): the simulation studies' helper."""
    a, b = bounds
    lows, highs = [], []
    for row in x:
        lo, hi = _sequence((row - a) / (b - a), method, 1 - conf_level, grid, n_opt, True)
        lows.append(a + (b - a) * lo)
        highs.append(a + (b - a) * hi)
    return np.array(lows), np.array(highs)


def simulate_stopping(observations: Sequence[ArrayLike] | np.ndarray, *, bounds: tuple[float, float],
                      method: Method = "betting", conf_level: float = 0.95, null: float | None = None,
                      target_width: float | None = None, max_n: int | None = None,
                      grid: int = 1000) -> pd.DataFrame:
    """Apply the stopping rule to many sequences of observations (simulation replicates).

    Parameters
    ----------
    observations : sequence of array_like
        One sequence per replicate (all of one length).
    bounds, method, conf_level, null, target_width, max_n, grid
        As in :func:`confidence_sequence`.

    Returns
    -------
    DataFrame
        One row per replicate: ``stopped_at`` (NaN where the rule did not stop), ``decision``,
        ``estimate``, ``conf_low``, ``conf_high`` at the stop (at the end when not stopped).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.random.default_rng(0).binomial(1, 0.5, size=(3, 200))
    >>> simulate_stopping(x, bounds=(0, 1), target_width=0.3)["decision"].tolist()
    ['width', 'width', 'width']
    """
    alpha = _check_common(method, conf_level, grid, None, target_width, null, max_n)
    xs = np.asarray(observations, dtype=float)
    if xs.ndim != 2 or xs.shape[1] == 0:
        raise DataError(f"observations must be replicates x steps, got shape {xs.shape}")
    if max_n is not None:
        xs = xs[:, :max_n]
    n_opt = float(max_n if max_n is not None else xs.shape[1])
    lows, highs = _sequences_many(xs, (float(bounds[0]), float(bounds[1])), method, 1 - alpha, grid, n_opt)
    means = np.cumsum(xs, axis=1) / np.arange(1, xs.shape[1] + 1)
    rows = []
    for r in range(xs.shape[0]):
        stop, decision = stopping_time(lows[r], highs[r], null=null, target_width=target_width, max_n=max_n)
        i = (stop or xs.shape[1]) - 1
        rows.append({"stopped_at": float(stop) if stop else np.nan, "decision": decision,
                     "estimate": means[r, i], "conf_low": lows[r, i], "conf_high": highs[r, i]})
    return pd.DataFrame(rows)


@accepts_seed
def expected_stop(pilot: ArrayLike, *, bounds: tuple[float, float], max_n: int,
                  method: Method = "betting", conf_level: float = 0.95, null: float | None = None,
                  target_width: float | None = None, n_sims: int = 200, rng: int | np.random.Generator = 0,
                  grid: int = 250) -> pd.DataFrame:
    """Where the stopping rule is expected to stop, from a pilot's item observations.

    Items are drawn with replacement from the pilot (its item means, or paired item differences,
    which carry the pilot's between-item and run-to-run variance at its number of runs) into
    ``n_sims`` sequences of ``max_n`` items, and the rule is applied to each.  This plans a study
    whose items resemble the pilot's; it cannot foresee a population unlike it.

    Parameters
    ----------
    pilot : array_like
        One observation per pilot item, within ``bounds``.
    bounds, method, conf_level, null, target_width
        As in :func:`confidence_sequence`.
    max_n : int
        The budget in items.
    n_sims : int
        Simulated studies.
    rng : int or numpy.random.Generator
        Seed of the resampling.
    grid : int
        Grid of the betting CS (coarser than the default: only widens it by a cell).

    Returns
    -------
    DataFrame
        One row: ``mean_items`` (with its Monte-Carlo ``mean_items_mc_se``), ``median_items``,
        ``q90_items`` (the budget counts where the rule did not stop earlier), and the shares of
        studies that stopped ``decided``, on the ``width`` and on the ``budget``.

    Examples
    --------
    >>> import numpy as np
    >>> pilot = np.random.default_rng(0).binomial(3, 0.7, 60) / 3
    >>> e = expected_stop(pilot, bounds=(0, 1), target_width=0.15, max_n=1000, n_sims=20)
    >>> e["width"].item()
    1.0
    """
    check_count(n_sims, "n_sims")
    check_count(max_n, "max_n")
    check_seed(rng, "rng")
    x = np.asarray(pilot, dtype=float)
    if x.ndim != 1 or x.size < 2:
        raise DataError(f"pilot must hold one observation per item (at least 2), got shape {x.shape}")
    rng = as_generator(rng)
    draws = x[rng.integers(0, x.size, size=(n_sims, max_n))]
    sims = simulate_stopping(draws, bounds=bounds, method=method, conf_level=conf_level, null=null,
                             target_width=target_width, max_n=max_n, grid=grid)
    stop = sims["stopped_at"].fillna(max_n).to_numpy()
    decided = sims["decision"].isin(["above", "below"])
    return pd.DataFrame([{"n_sims": n_sims, "mean_items": float(stop.mean()),
                          "mean_items_mc_se": float(stop.std(ddof=1) / np.sqrt(n_sims)) if n_sims > 1 else np.nan,
                          "median_items": float(np.median(stop)), "q90_items": float(np.quantile(stop, 0.9)),
                          "decided": float(decided.mean()), "width": float((sims["decision"] == "width").mean()),
                          "budget": float((sims["decision"] == "budget").mean())}])
