"""Did the system or the judge change between two waves of the same items?  Per-model drift on
anchor items with an equivalence (TOST) verdict, split into judge drift and system change.

The unit is the **item**: each model's score on an item is the mean of its runs in a wave, and
the change of a model is the mean over the shared (or anchor) items of ``after - before``.  The
items are paired, so item difficulty cancels, and runs are never counted as independent items.

Two kinds of interval:

``anytime=False`` (default)
    The paired t interval over items and Schuirmann's two one-sided tests (TOST) at the margin,
    as ``statsmodels.stats.weightstats.ttost_paired``: ``p_tost`` is the larger of the two
    one-sided p-values of ``change <= -margin`` and ``change >= margin``; the change is
    ``equivalent`` when ``p_tost < alpha`` (the ``1 - 2 alpha`` interval lies inside the margin)
    and ``changed`` when the two-sided p-value of no change is below ``alpha``
    (``alpha = 1 - conf_level``).  Valid for one look at the data.
``anytime=True``
    The anytime-valid confidence sequence of :func:`evalmix.confidence_sequence` over the item
    differences in arrival order, the order in which items first appear in the second wave's
    table (scores in [0, 1]).  Valid when the call is repeated as periodic
    canary runs add items, and the verdict taken at any of those looks: ``equivalent`` when the
    sequence at level ``1 - 2 alpha`` lies inside the margin, ``changed`` when the sequence at
    ``1 - alpha`` excludes 0; the p-values are the smallest levels at which those verdicts hold
    (anytime-valid p-values, found by bisection; 1 when a verdict fails even at alpha 0.5, or 0.25
    for ``p_tost``).  Items must arrive in a random order.

With ``judge=`` (the first wave's transcripts re-scored by the new judge) the change
``after - before`` is the sum of the judge's drift ``rejudged - before`` (same answers, other
judge) and the system's change ``after - rejudged`` (same judge, other answers), each with its
interval and p-value.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from ..core.arguments import check_choice, check_level, check_number
from ..core.errors import DataError, DataWarning
from ..core.methods import CS_METHODS
from ..core.result import Result
from ..data.runs import RunsData, ensure_runs
from .sequential import confidence_sequence

__all__ = ["DriftResult", "drift"]

# anytime-valid p-values: bisection over log(alpha) down to this level, in this many steps (to about
# 0.02% of the p-value)
_P_FLOOR, _P_STEPS = 1e-6, 16


@dataclass(frozen=True, eq=False, repr=False)
class DriftResult(Result):
    """Per-model change between two waves, with its equivalence verdict.

    ``table`` has one row per model: ``model``, ``n_items`` (items compared), ``before`` and
    ``after`` (mean scores on them), ``estimate`` (``after - before``), ``se`` (NaN for anytime
    intervals), ``conf_low``, ``conf_high``, ``p_value`` (no change), ``p_tost`` (not
    equivalent), ``equivalent`` and ``changed``; with a rejudged wave also ``judge_drift``,
    ``judge_conf_low``, ``judge_conf_high``, ``judge_p_value``, ``system_change``,
    ``system_conf_low``, ``system_conf_high``, ``system_p_value`` and ``system_changed``.
    """

    table: pd.DataFrame
    margin: float
    conf_level: float
    anytime: bool
    method: str
    anchors: int | None
    judged: bool

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def _title(self) -> str:
        return "Drift between two waves" + (": judge drift and system change" if self.judged else "")

    def _header(self) -> list[str]:
        on = f"{self.anchors} anchor items" if self.anchors is not None else "the items both waves share"
        kind = (f"anytime-valid {self.method} confidence sequence" if self.anytime
                else "paired t interval over items")
        return [f"estimate: after - before on {on} (mean over items of each item's mean over runs); "
                f"{self.conf_level:.0%} {kind}",
                f"equivalent: TOST at margin +-{self.margin:g}, alpha {1 - self.conf_level:.3g}; "
                f"changed: the change differs from 0 at alpha {1 - self.conf_level:.3g}"]

    def _notes(self) -> list[str]:
        notes = []
        if self.judged:
            notes.append("judge_drift = rejudged - before (the same answers, the new judge); "
                         "system_change = after - rejudged (the same judge, the new answers)")
        if self.anytime:
            notes.append("valid at every look as canary items accumulate, when items arrive in a random order")
        notes.append("neither equivalent nor changed: the data cannot tell yet (more anchor items narrow the "
                     "interval)")
        return notes

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"margin": self.margin, "conf_level": self.conf_level,
                                    "anytime": self.anytime, "method": self.method, "anchors": self.anchors}


def _item_means(data: RunsData, name: str, model: str | None, item: str | None, run: str | None,
                outcome: str | None, missing: str, bounded: bool) -> pd.Series:
    """Each (model, item)'s mean score over its runs (index: model, item as text)."""
    try:
        df, roles = ensure_runs(data, model=model, item=item, run=run, outcome=outcome, need_model=True,
                                need_item=True, allow_fractional=True if bounded else "any", missing=missing)
    except DataError as exc:
        raise DataError(f"{name}: {exc}") from exc
    if roles.counts:
        succ, tri = roles.count_columns
        score = df[succ].astype(float) / df[tri].astype(float)
    else:
        score = df[roles.scores].astype(float)
    keys = [df[roles.role("model")].astype(str).rename("model"), df[roles.role("item")].astype(str).rename("item")]
    return score.groupby(keys, sort=False).mean()


def _t_interval(d: np.ndarray, margin: float, alpha: float) -> dict[str, Any]:
    """Paired t interval, the two-sided p of no change and the TOST p at +-margin."""
    n = d.size
    est = float(d.mean())
    se = float(d.std(ddof=1) / math.sqrt(n))
    df = n - 1
    q = stats.t.ppf(1 - alpha / 2, df)
    if se > 0:
        p = float(2 * stats.t.sf(abs(est) / se, df))
        p_low = float(stats.t.sf((est + margin) / se, df))  # H0: change <= -margin
        p_high = float(stats.t.cdf((est - margin) / se, df))  # H0: change >= margin
    else:  # every item changed by the same amount: no sampling spread left
        p = 1.0 if est == 0 else 0.0
        p_low, p_high = float(est <= -margin), float(est >= margin)
    p_tost = max(p_low, p_high)
    return {"estimate": est, "se": se, "conf_low": est - q * se, "conf_high": est + q * se,
            "p_value": p, "p_tost": p_tost, "equivalent": p_tost < alpha, "changed": p < alpha}


def _cs_end(d: np.ndarray, level: float, method: str) -> tuple[float, float]:
    """The confidence sequence of the item differences at its last step."""
    cs = confidence_sequence(d, method=method, conf_level=level, bounds=(-1.0, 1.0))  # type: ignore[arg-type]
    return cs.conf_low, cs.conf_high


def _anytime_p(holds: Any, top: float) -> float:
    """The smallest alpha (to bisection accuracy) at which ``holds(alpha)`` is true; 1 when it fails
    at ``top`` (a sequence at a level near 0 bets nothing and keeps the whole range, so levels are
    searched below ``top`` only)."""
    if not holds(top):
        return 1.0
    if holds(_P_FLOOR):
        return _P_FLOOR
    lo, hi = math.log(_P_FLOOR), math.log(top)  # holds at exp(hi), not at exp(lo)
    for _ in range(_P_STEPS):
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if holds(math.exp(mid)) else (mid, hi)
    return math.exp(hi)


def _anytime_interval(d: np.ndarray, margin: float, alpha: float, method: str) -> dict[str, Any]:
    """Anytime-valid interval, verdict p-values as the smallest levels at which they hold."""
    low, high = _cs_end(d, 1 - alpha, method)

    def excludes_zero(a: float) -> bool:
        lo, hi = _cs_end(d, 1 - a, method)
        return bool(lo > 0 or hi < 0)

    def inside_margin(a: float) -> bool:
        lo, hi = _cs_end(d, 1 - 2 * a, method)
        return bool(-margin < lo and hi < margin)

    return {"estimate": float(d.mean()), "se": math.nan, "conf_low": low, "conf_high": high,
            "p_value": _anytime_p(excludes_zero, 0.5), "p_tost": _anytime_p(inside_margin, 0.25),
            "equivalent": inside_margin(alpha), "changed": bool(low > 0 or high < 0)}


def drift(before: RunsData, after: RunsData, anchors: Sequence[object] | None = None, margin: float = 0.02,
          judge: RunsData | None = None, *, conf_level: float = 0.95, anytime: bool = False,
          method: str = "empirical_bernstein", model: str | None = None,
          item: str | None = None, run: str | None = None, outcome: str | None = None,
          missing: str = "raise") -> DriftResult:
    """Per-model change between two waves on anchor items, with an equivalence (TOST) verdict.

    Parameters
    ----------
    before, after : DataFrame or path
        Runs tables of the two waves (model, item, optional run, 0/1 or [0, 1] score, or
        ``successes``/``trials``); the same column names in both.
    anchors : sequence, optional
        Item ids to compare on (re-run canary items); default every item both waves share per model.
    margin : float
        Equivalence margin on the score scale (0.02: two accuracy points).
    judge : DataFrame or path, optional
        The first wave's transcripts re-scored by the new judge (same models, items and runs as
        ``before``): splits the change into ``judge_drift`` and ``system_change``.
    conf_level : float
        Interval level; ``alpha = 1 - conf_level`` is the level of each verdict.
    anytime : bool
        Anytime-valid confidence sequences instead of t intervals (see the module notes).
    method : {"empirical_bernstein", "betting", "normal_mixture"}
        The confidence sequence when ``anytime`` (see :func:`evalmix.confidence_sequence`);
        empirical Bernstein is in closed form, betting a little tighter and slower.
    model, item, run, outcome : str, optional
        Column names (default: the roles of :func:`evalmix.read_runs`).
    missing : {"raise", "drop"}
        Rows with a missing value.

    Returns
    -------
    DriftResult

    Raises
    ------
    DataError
        No model in both waves, an anchor in neither wave, a model with fewer than two shared
        items, a bad table (the message names the wave).

    Examples
    --------
    >>> import evalmix
    >>> before, after, rejudged = evalmix.simulate.canary_waves(2, 300, 3, change=0.0, leniency=0.15, rng=3)
    >>> res = drift(before, after, margin=0.05, judge=rejudged)
    >>> res.to_frame()[["model", "changed", "system_changed"]]
         model  changed  system_changed
    0  model-1     True           False
    1  model-2     True           False
    """
    level = check_level(conf_level)
    alpha = 1 - level
    check_number(margin, "margin", minimum=0, strict=True)
    check_choice(method, "method", CS_METHODS)
    roles = (model, item, run, outcome, missing, anytime)
    waves = {"before": _item_means(before, "before", *roles), "after": _item_means(after, "after", *roles)}
    if judge is not None:
        waves["rejudged"] = _item_means(judge, "judge", *roles)
    models = [m for m in pd.unique(waves["before"].index.get_level_values(0))
              if all(m in w.index.get_level_values(0) for w in waves.values())]
    if not models:
        raise DataError("no model is scored in both waves" + (" and the rejudged wave" if judge is not None else "")
                        + f": before has {sorted(set(waves['before'].index.get_level_values(0)))[:10]}, after "
                        f"{sorted(set(waves['after'].index.get_level_values(0)))[:10]}")
    only = {name: sorted(set(w.index.get_level_values(0)) - set(models)) for name, w in waves.items()}
    if any(only.values()):
        warnings.warn("models left out (not in every wave): " + "; ".join(
            f"{name}: {', '.join(v[:10])}" for name, v in only.items() if v), DataWarning, stacklevel=2)
    anchor_set = None if anchors is None else [str(a) for a in anchors]
    if anchor_set is not None:
        if not anchor_set:
            raise DataError("anchors is empty: give the ids of the anchor items, or None for every shared item")
        seen = set().union(*(w.index.get_level_values(1) for w in waves.values()))
        unknown = [a for a in anchor_set if a not in seen]
        if len(unknown) == len(anchor_set):
            raise DataError(f"no anchor item is in the data: {unknown[:10]}")
        if unknown:
            warnings.warn(f"{len(unknown)} anchor item(s) are in no wave: {', '.join(unknown[:10])}", DataWarning,
                          stacklevel=2)
    rows = []
    for m in models:
        per = {name: w.xs(m, level=0) for name, w in waves.items()}
        shared = per["after"].index  # in the order the items first appear in the second wave
        for s in per.values():
            shared = shared.intersection(s.index, sort=False)
        if anchor_set is not None:
            shared = pd.Index([a for a in anchor_set if a in shared])
        if len(shared) < 2:
            raise DataError(f"model {m!r}: {len(shared)} item(s) scored in every wave"
                            + (" among the anchors" if anchor_set is not None else "") + "; at least 2 are needed")
        x = {name: s.reindex(shared).to_numpy(dtype=float) for name, s in per.items()}

        def interval(d: np.ndarray) -> dict[str, Any]:
            return _anytime_interval(d, margin, alpha, method) if anytime else _t_interval(d, margin, alpha)

        total = interval(x["after"] - x["before"])
        row: dict[str, Any] = {"model": m, "n_items": len(shared), "before": float(x["before"].mean()),
                               "after": float(x["after"].mean()), **total}
        if judge is not None:
            jd, sc = interval(x["rejudged"] - x["before"]), interval(x["after"] - x["rejudged"])
            row |= {"judge_drift": jd["estimate"], "judge_conf_low": jd["conf_low"],
                    "judge_conf_high": jd["conf_high"], "judge_p_value": jd["p_value"],
                    "system_change": sc["estimate"], "system_conf_low": sc["conf_low"],
                    "system_conf_high": sc["conf_high"], "system_p_value": sc["p_value"],
                    "system_changed": sc["changed"]}
        rows.append(row)
    return DriftResult(table=pd.DataFrame(rows), margin=float(margin), conf_level=level, anytime=bool(anytime),
                       method=method, anchors=None if anchor_set is None else len(anchor_set),
                       judged=judge is not None)
