"""A pre-registered release gate: PASS, FAIL or INCONCLUSIVE for a candidate against a baseline,
over several metrics, valid at every look.

The rule is fixed before the data are seen (a dict or a TOML file; its sha256 is the
:attr:`GateResult.rule_hash`).  Each metric gets a share ``alpha_k`` of ``alpha`` (equal shares
unless ``weight`` says otherwise) and an anytime-valid two-sided confidence sequence (CS) at level
``1 - alpha_k`` for its difference (candidate - baseline) or ratio (candidate / baseline):

* a **mean of a bounded column** (0/1 or k-of-n accuracy, a judge score with ``bounds``), absolute
  margin: the hedged-capital betting CS of :mod:`evalmix.studies.sequential` (Waudby-Smith &
  Ramdas 2023) on the item-paired differences; the decision at a margin is the betting test of that
  one value (:func:`~evalmix.studies.sequential.hedged_log_capital`), the interval shown is the CS
  on its grid;
* a **mean of any other column** (cost, latency, a ratio margin): the asymptotic Gaussian-mixture
  CS of Waudby-Smith et al. (2024, Ann. Statist.), ``mean +- sd * r(t)`` with ``r`` Robbins'
  normal-mixture radius (:func:`~evalmix.studies.sequential.normal_mixture_radius` with unit
  scale) and ``sd`` the running standard deviation of the paired item differences; a ratio
  margin inverts it as Fieller's interval.  Valid as the items grow (no bound is known), so no
  decision is taken before ``min_items`` items;
* a **quantile** (``p95``...): the quantile CS of Howard & Ramdas (2022): for the true quantile
  ``q_p`` the share of runs at or below it is a mean of bounded per-item shares with mean ``p``,
  whose centred sum is sub-Gaussian with Kearns & Saul's variance ``(1 - 2p) / (2 log((1 - p) / p))``;
  the normal-mixture boundary on that sum gives, at every look at once, the order statistics that
  bracket ``q_p``.  One CS per model at ``alpha_k / 2``; the difference (or ratio) of the two
  quantiles lies between the ends of the two.  A bootstrap of the quantile is not anytime-valid
  (its level holds at one pre-planned look only), which is why it is not used.

Each item is one observation: its runs are averaged (paired designs: the difference of the two
models' item means), so runs are clustered within items.  A wrong decision on a metric, PASS or
FAIL, needs its CS to miss the truth at some look, which happens with probability at most
``alpha_k``; a wrong verdict needs a wrong metric decision, so the family-wise error over metrics
and looks is at most ``sum(alpha_k) = alpha`` (Bonferroni over metrics; looks are free).
"""

from __future__ import annotations

import hashlib
import json
import math
import tomllib
from statistics import NormalDist
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..core.errors import ArgumentError, DataError, DataWarning
from ..core.result import Result
from ..core.seeds import as_generator
from ..data.runs import at_the_door
from .sequential import normal_mixture_radius

__all__ = ["DIRECTIONS", "GateMetric", "GateResult", "GateRule", "METHODS", "TESTS", "VERDICTS", "gate",
           "gate_streams", "read_rule"]

#: The tests a metric can pre-register.
TESTS = ("non-inferiority", "superiority", "equivalence")
#: Which way a metric is better.
DIRECTIONS = ("higher", "lower")
#: The verdicts, and the CLI's exit codes for them.
VERDICTS = {"PASS": 0, "FAIL": 1, "INCONCLUSIVE": 3}
#: How a mean metric's CS is computed ("auto": betting for a bounded column, else asymptotic).
METHODS = ("auto", "betting", "asymptotic")

_TEST_ALIASES = {"non-inferiority": "non-inferiority", "noninferiority": "non-inferiority", "ni": "non-inferiority",
                 "superiority": "superiority", "equivalence": "equivalence", "tost": "equivalence"}
_POWER_Z = NormalDist().inv_cdf(0.8)
_RULE_KEYS = {"alpha", "looks", "max_items", "min_items", "method", "metrics"}
_METRIC_KEYS = {"name", "column", "statistic", "direction", "margin", "relative", "test", "bounds", "trials",
                "weight"}


# ----------------------------------------------------------------------------------------------
# the rule


@dataclass(frozen=True)
class GateMetric:
    """One metric of a gate rule (see :func:`read_rule` for the keys)."""

    name: str
    column: str
    statistic: str  # "mean" or "quantile"
    quantile: float | None
    direction: str
    margin: float
    relative: bool
    test: str
    bounds: tuple[float, float] | None
    trials: str | None
    weight: float

    def canonical(self) -> dict[str, Any]:
        """The metric as plain JSON values, defaults filled in."""
        return {"name": self.name, "column": self.column,
                "statistic": "mean" if self.quantile is None else f"quantile({self.quantile:g})",
                "direction": self.direction, "margin": float(self.margin), "relative": self.relative,
                "test": self.test, "bounds": None if self.bounds is None else [float(b) for b in self.bounds],
                "trials": self.trials, "weight": float(self.weight)}

    def boundaries(self) -> list[float]:
        """The values of the estimate where the decision changes (one; two for equivalence)."""
        one = 1.0 if self.relative else 0.0
        d = self.margin
        if self.test == "equivalence":
            return [one - d, one + d]
        sign = 1 if self.direction == "higher" else -1
        return [one - sign * d] if self.test == "non-inferiority" else [one + sign * d]


@dataclass(frozen=True)
class GateRule:
    """A parsed gate rule: ``alpha``, ``looks``, the budget and the metrics (see :func:`read_rule`)."""

    alpha: float
    looks: int | tuple[int, ...] | None
    max_items: int | None
    min_items: int
    method: str
    metrics: tuple[GateMetric, ...]

    def canonical(self) -> dict[str, Any]:
        """The rule as plain JSON values, defaults filled in, metrics in name order."""
        looks: Any = (None if self.looks is None else {"every": self.looks} if isinstance(self.looks, int)
                      else list(self.looks))
        return {"alpha": float(self.alpha), "looks": looks, "max_items": self.max_items,
                "min_items": self.min_items, "method": self.method,
                "metrics": [m.canonical() for m in sorted(self.metrics, key=lambda m: m.name)]}

    @property
    def hash(self) -> str:
        """sha256 of the canonical rule as JSON with sorted keys (key order and form do not matter)."""
        text = json.dumps(self.canonical(), sort_keys=True, separators=(",", ":"))
        return hashlib.sha256(text.encode()).hexdigest()

    def shares(self) -> np.ndarray:
        """Each metric's share of alpha (weights normalised to sum to alpha)."""
        w = np.array([m.weight for m in self.metrics], dtype=float)
        return self.alpha * w / w.sum()


def _number(value: Any, what: str, *, low: float | None = None, high: float | None = None,
            strict: bool = True) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ArgumentError(f"rule: {what} must be a finite number, got {value!r}")
    v = float(value)
    if low is not None and (v <= low if strict else v < low):
        raise ArgumentError(f"rule: {what} must be {'>' if strict else '>='} {low:g}, got {value!r}")
    if high is not None and v >= high:
        raise ArgumentError(f"rule: {what} must be < {high:g}, got {value!r}")
    return v


def _count(value: Any, what: str, minimum: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < minimum:
        raise ArgumentError(f"rule: {what} must be a whole number >= {minimum}, got {value!r}")
    return int(value)


def _statistic(text: Any, what: str) -> float | None:
    s = str(text).strip().lower()
    if s == "mean":
        return None
    if s == "median":
        return 0.5
    try:
        if s.startswith("quantile(") and s.endswith(")"):
            q = float(s[9:-1])
        elif s.startswith("quantile:"):
            q = float(s[9:])
        elif s.startswith("p") and s[1:].replace(".", "", 1).isdigit():
            q = float(s[1:]) / 100
        else:
            raise ValueError
    except ValueError:
        raise ArgumentError(f"rule: {what} statistic must be mean, median, pNN (p95) or quantile(0.9), "
                            f"got {text!r}") from None
    if not 0 < q < 1:
        raise ArgumentError(f"rule: {what} statistic {text!r} is not a quantile strictly between 0 and 1")
    return q


def _metric(spec: Any, i: int, default_weight: float) -> GateMetric:
    if not isinstance(spec, Mapping):
        raise ArgumentError(f"rule: metrics[{i}] must be a table of keys, got {spec!r}")
    unknown = sorted(set(spec) - _METRIC_KEYS)
    name = str(spec.get("name", spec.get("column", f"metric{i + 1}")))
    what = f"metric {name!r}"
    if unknown:
        raise ArgumentError(f"rule: {what} has unknown key(s) {unknown} (keys: {sorted(_METRIC_KEYS)})")
    if "column" not in spec:
        raise ArgumentError(f"rule: {what} needs a column")
    direction = str(spec.get("direction", "higher")).lower()
    if direction not in DIRECTIONS:
        raise ArgumentError(f"rule: {what} direction must be higher or lower, got {spec['direction']!r}")
    test = _TEST_ALIASES.get(str(spec.get("test", "non-inferiority")).lower().replace("_", "-"))
    if test is None:
        raise ArgumentError(f"rule: {what} test must be one of {', '.join(TESTS)}, got {spec['test']!r}")
    raw = spec.get("margin", 0.0)
    relative = bool(spec.get("relative", False))
    if isinstance(raw, str) and raw.strip().endswith("%"):
        try:
            raw = float(raw.strip()[:-1]) / 100
        except ValueError:
            raise ArgumentError(f"rule: {what} margin must be a number or a percentage, got {spec['margin']!r}") \
                from None
        relative = True
    margin = _number(raw, f"{what} margin", low=0, strict=False)
    if test == "equivalence" and margin == 0:
        raise ArgumentError(f"rule: {what} is an equivalence test and needs a margin > 0")
    if relative and margin >= 1:
        raise ArgumentError(f"rule: {what} relative margin must be below 100%, got {margin:g}")
    bounds = spec.get("bounds")
    if bounds is not None:
        if not isinstance(bounds, Sequence) or isinstance(bounds, str) or len(bounds) != 2:
            raise ArgumentError(f"rule: {what} bounds must be [low, high], got {bounds!r}")
        lo, hi = (_number(b, f"{what} bounds") for b in bounds)
        if not hi > lo:
            raise ArgumentError(f"rule: {what} bounds must be [low, high] with low < high, got {bounds!r}")
        bounds = (lo, hi)
    quantile = _statistic(spec.get("statistic", "mean"), what)
    return GateMetric(name=name, column=str(spec["column"]), statistic="mean" if quantile is None else "quantile",
                      quantile=quantile, direction=direction, margin=margin, relative=relative, test=test,
                      bounds=bounds, trials=None if spec.get("trials") is None else str(spec["trials"]),
                      weight=_number(spec.get("weight", default_weight), f"{what} weight", low=0))


def read_rule(rule: GateRule | Mapping[str, Any] | str | Path) -> GateRule:
    """Parse a gate rule from a dict, a TOML file or TOML text.

    Keys: ``alpha`` (0.05), ``looks`` (absent: one look at the end; an integer ``k``: every ``k``
    items; a list of item counts), ``max_items`` (the budget; default every item of the data),
    ``min_items`` (no decision before this many items; 30), ``method`` (``auto``, ``betting`` or
    ``asymptotic``) and ``metrics``, a list of tables with ``name``, ``column``, ``statistic``
    (``mean``, ``median``, ``p95``, ``quantile(0.9)``), ``direction`` (``higher``/``lower`` is
    better), ``margin`` (absolute, or relative as ``"5%"`` or with ``relative = true``), ``test``
    (``non-inferiority``, ``superiority``, ``equivalence``), and optionally ``bounds = [low, high]``
    (a bounded score), ``trials`` (the trials column of k-of-n counts in ``column``) and
    ``weight`` (the metric's share of alpha, relative to the others; 1).

    Parameters
    ----------
    rule : dict, path or str
        The rule; a string is a path when it names an existing file, else TOML text.

    Returns
    -------
    GateRule

    Examples
    --------
    >>> r = read_rule({"alpha": 0.05, "looks": 50, "metrics": [{"name": "acc", "column": "correct",
    ...                "margin": 0.02}]})
    >>> r.looks, r.metrics[0].test, r.hash == read_rule('alpha = 0.05\\nlooks = 50\\n'
    ...     '[[metrics]]\\nname = "acc"\\ncolumn = "correct"\\nmargin = 0.02\\n').hash
    (50, 'non-inferiority', True)
    """
    if isinstance(rule, GateRule):
        return rule
    if isinstance(rule, (str, Path)):
        path = Path(rule)
        is_file = "\n" not in str(rule) and "=" not in str(rule)
        try:
            if is_file:
                text = path.read_text(encoding="utf-8")
            else:
                text = str(rule)
            spec: Mapping[str, Any] = tomllib.loads(text)
        except FileNotFoundError:
            raise DataError(f"rule file {str(rule)!r} does not exist") from None
        except tomllib.TOMLDecodeError as exc:
            raise DataError(f"rule {str(path) if is_file else 'text'}: not valid TOML: {exc}") from None
    elif isinstance(rule, Mapping):
        spec = rule
    else:
        raise ArgumentError(f"rule must be a dict, a TOML file or TOML text, got {type(rule).__name__}")
    unknown = sorted(set(spec) - _RULE_KEYS)
    if unknown:
        raise ArgumentError(f"rule: unknown key(s) {unknown} (keys: {sorted(_RULE_KEYS)})")
    alpha = _number(spec.get("alpha", 0.05), "alpha", low=0, high=1)
    looks_raw = spec.get("looks")
    looks: int | tuple[int, ...] | None
    if looks_raw is None or (isinstance(looks_raw, str) and looks_raw.lower() == "none"):
        looks = None
    elif isinstance(looks_raw, Mapping) and set(looks_raw) == {"every"}:
        looks = _count(looks_raw["every"], "looks.every")
    elif isinstance(looks_raw, (int, np.integer)) and not isinstance(looks_raw, bool):
        looks = _count(looks_raw, "looks")
    elif isinstance(looks_raw, Sequence) and not isinstance(looks_raw, str) and len(looks_raw):
        looks = tuple(sorted({_count(v, "looks") for v in looks_raw}))
    else:
        raise ArgumentError(f"rule: looks must be absent (one look), an integer k (every k items) or a list of "
                            f"item counts, got {looks_raw!r}")
    max_items = None if spec.get("max_items") is None else _count(spec["max_items"], "max_items")
    min_items = _count(spec.get("min_items", 30), "min_items")
    method = str(spec.get("method", "auto"))
    if method not in METHODS:
        raise ArgumentError(f"rule: method must be one of {', '.join(METHODS)}, got {method!r}")
    metrics = spec.get("metrics")
    if not isinstance(metrics, Sequence) or isinstance(metrics, str) or not metrics:
        raise ArgumentError("rule: metrics must be a non-empty list of metric tables")
    parsed = tuple(_metric(m, i, 1.0) for i, m in enumerate(metrics))
    names = [m.name for m in parsed]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ArgumentError(f"rule: metric names must be unique, repeated: {dup}")
    return GateRule(alpha=alpha, looks=looks, max_items=max_items, min_items=min_items, method=method,
                    metrics=parsed)


def look_points(looks: int | tuple[int, ...] | None, n: int) -> np.ndarray:
    """The item counts at which the gate looks, given ``n`` items (the last look is always ``n``)."""
    if looks is None:
        return np.array([n])
    if isinstance(looks, int):
        pts = np.arange(looks, n + 1, looks)
    else:
        pts = np.array([v for v in looks if v <= n], dtype=int)
    return np.unique(np.concatenate([pts, [n]])).astype(int)


# ----------------------------------------------------------------------------------------------
# the sequences, many streams at once (rows), evaluated at the looks


def _kearns_saul(p: float) -> float:
    """The optimal sub-Gaussian variance of a Bernoulli(p) (Kearns & Saul 1998): it bounds every
    [0, 1] variable of mean p."""
    if abs(p - 0.5) < 1e-12:
        return 0.25
    return (1 - 2 * p) / (2 * math.log((1 - p) / p))


# grid of the betting CS shown (decisions test the margins themselves, not grid points)
_GRID = 500
# the bets are truncated at half the largest bet that keeps the capital positive
_TRUNCATION = 0.5


def _log_capital(z: np.ndarray, m: np.ndarray, design: float | None) -> tuple[np.ndarray, np.ndarray]:
    """Log capital of the two one-sided betting tests of the mean ``m`` of observations in [0, 1].

    ``z`` is streams x steps (or one stream), ``m`` a column of means tested (or one).  The upward
    test bets ``lambda_t >= 0`` on ``z_t > m`` and is a nonnegative supermartingale whenever the mean
    is at most ``m`` (so it tests "mean <= m"); the downward test mirrors it.  The bets are
    predictable: ``design / (s2 + design^2)`` with ``s2`` the running variance of the earlier
    observations (one prior observation of variance 1/4), the growth-optimal bet against a mean
    ``design`` away (the pre-registered margin: the rule's alternative); without a margin
    (superiority at 0) the distance is the running mean's (aGRAPA, Waudby-Smith & Ramdas 2023).
    Bets are truncated at half of what keeps the capital positive.
    """
    x = np.atleast_2d(z)
    t = np.arange(1, x.shape[1] + 1)
    mu = (0.5 + np.cumsum(x, axis=1)) / (t + 1)
    s2 = (0.25 + np.cumsum((x - mu) ** 2, axis=1)) / (t + 1)
    mu_b = np.concatenate((np.full((x.shape[0], 1), 0.5), mu[:, :-1]), axis=1)
    s2_b = np.concatenate((np.full((x.shape[0], 1), 0.25), s2[:, :-1]), axis=1)
    if design is not None:
        g_up = g_down = design / (s2_b + design**2)
    else:
        dev = mu_b - m
        g_up = dev / (s2_b + dev**2)
        g_down = -g_up
    if design is None:
        g_up, g_down = np.maximum(g_up, 0.0), np.maximum(g_down, 0.0)
    up = np.minimum(g_up, _TRUNCATION / m)
    down = np.minimum(g_down, _TRUNCATION / (1 - m))
    log_up = np.cumsum(np.log1p(up * (x - m)), axis=1)
    log_down = np.cumsum(np.log1p(down * (m - x)), axis=1)
    return log_up, log_down


def _running(lo: np.ndarray, hi: np.ndarray, usable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Running intersection over the looks that may decide (earlier looks keep the whole line)."""
    lo = np.where(usable, lo, -np.inf)
    hi = np.where(usable, hi, np.inf)
    return np.maximum.accumulate(lo, axis=1), np.minimum.accumulate(hi, axis=1)


def _asymptotic_mean(c: np.ndarray, b: np.ndarray, pts: np.ndarray, alpha: float, n_opt: float,
                     relative: bool) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Estimate, CS ends and sd of the paired items at each look: Gaussian-mixture CS of the mean
    difference, or Fieller's inversion of it for the ratio of means."""
    t = pts.astype(float)
    g = normal_mixture_radius(t, conf_level=1 - alpha, n_opt=n_opt, scale=1.0)
    cs_c, cs_b = np.cumsum(c, axis=1)[:, pts - 1], np.cumsum(b, axis=1)[:, pts - 1]
    m_c, m_b = cs_c / t, cs_b / t
    denom = np.maximum(t - 1, 1)

    def cov(u: np.ndarray, v: np.ndarray, mu: np.ndarray, mv: np.ndarray) -> np.ndarray:
        return (np.cumsum(u * v, axis=1)[:, pts - 1] - t * mu * mv) / denom

    s_cc, s_bb, s_cb = cov(c, c, m_c, m_c), cov(b, b, m_b, m_b), cov(c, b, m_c, m_b)
    if not relative:
        sd = np.sqrt(np.maximum(s_cc + s_bb - 2 * s_cb, 0.0))
        est = m_c - m_b
        return est, est - g * sd, est + g * sd, sd
    k2 = g**2
    a = m_b**2 - k2 * s_bb
    bq = m_c * m_b - k2 * s_cb
    cq = m_c**2 - k2 * s_cc
    disc = bq**2 - a * cq
    ok = (a > 0) & (disc >= 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        root = np.sqrt(np.where(ok, disc, 0.0))
        lo = np.where(ok, (bq - root) / a, -np.inf)
        hi = np.where(ok, (bq + root) / a, np.inf)
        est = m_c / m_b
        ratio = np.where(m_b != 0, est, 1.0)
        sd = np.sqrt(np.maximum(s_cc - 2 * ratio * s_cb + ratio**2 * s_bb, 0.0)) / np.abs(m_b)
    return est, lo, hi, sd


def _weighted_quantile_cs(values: np.ndarray, pts: np.ndarray, p: float, alpha: float,
                          n_opt: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Quantile CS (Howard & Ramdas 2022) of run values (streams x items x runs, NaN-padded; each
    item weighs 1, shared by its runs): estimate and ends at each look."""
    s, _, _ = values.shape
    u = normal_mixture_radius(pts.astype(float), conf_level=1 - alpha, n_opt=n_opt,
                              scale=math.sqrt(_kearns_saul(p)))
    est = np.empty((s, len(pts)))
    lo, hi = np.empty_like(est), np.empty_like(est)
    k = np.sum(~np.isnan(values), axis=2, keepdims=True)
    w_all = np.where(np.isnan(values), 0.0, 1.0 / np.maximum(k, 1))
    for j, t in enumerate(pts):
        v = values[:, :t, :].reshape(s, -1)
        w = w_all[:, :t, :].reshape(s, -1)
        order = np.argsort(np.where(np.isnan(v), np.inf, v), axis=1, kind="stable")
        vs = np.take_along_axis(v, order, axis=1)
        cw = np.cumsum(np.take_along_axis(w, order, axis=1), axis=1) / t  # F_t at each sorted value
        last = np.sum(~np.isnan(v), axis=1) - 1

        def first_at_least(level: np.ndarray | float, strict: bool) -> np.ndarray:
            hit = (cw > level - 1e-12) if not strict else (cw > level + 1e-12)
            idx = np.argmax(hit, axis=1)
            found = hit.any(axis=1)
            out = vs[np.arange(s), np.minimum(idx, last)]
            return np.where(found, out, np.inf)

        est[:, j] = first_at_least(p, False)
        lo_level, hi_level = p - u[j], p + u[j]
        lo[:, j] = -np.inf if lo_level <= 0 else first_at_least(lo_level, False)
        hi[:, j] = np.inf if hi_level >= 1 else first_at_least(hi_level, True)
    return est, lo, hi


@dataclass
class _Paths:
    """One metric's sequence at the looks (streams x looks)."""

    estimate: np.ndarray
    conf_low: np.ndarray
    conf_high: np.ndarray
    passed: np.ndarray
    failed: np.ndarray
    sd: np.ndarray | None = None
    method: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _decide(metric: GateMetric, above: list[np.ndarray], below: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """PASS and FAIL flags from 'the CS lies above / below boundary j' (sticky over looks)."""
    above = [np.logical_or.accumulate(a, axis=1) for a in above]
    below = [np.logical_or.accumulate(b, axis=1) for b in below]
    if metric.test == "equivalence":
        return above[0] & below[1], above[1] | below[0]
    # higher is better: the CS above the boundary passes; lower is better: below it
    good, bad = (above[0], below[0]) if metric.direction == "higher" else (below[0], above[0])
    return good, bad


def _metric_paths(metric: GateMetric, method: str, c: np.ndarray, b: np.ndarray, pts: np.ndarray, alpha: float,
                  n_opt: float, min_items: int, intervals: bool = True) -> _Paths:
    """A metric's sequence and decisions at the looks: ``c`` and ``b`` are item values (streams x
    items) for a mean, run values (streams x items x runs) for a quantile."""
    usable = (pts >= min_items)[None, :]
    bnds = metric.boundaries()
    if metric.quantile is not None:
        p = metric.quantile
        e_c, l_c, h_c = _weighted_quantile_cs(c, pts, p, alpha / 2, n_opt)
        e_b, l_b, h_b = _weighted_quantile_cs(b, pts, p, alpha / 2, n_opt)
        # the quantile CS is non-asymptotic: every look may decide
        l_c, h_c = np.maximum.accumulate(l_c, axis=1), np.minimum.accumulate(h_c, axis=1)
        l_b, h_b = np.maximum.accumulate(l_b, axis=1), np.minimum.accumulate(h_b, axis=1)
        with np.errstate(divide="ignore", invalid="ignore"):
            if metric.relative:
                est = e_c / e_b
                lo = np.where(h_b > 0, l_c / h_b, -np.inf)
                hi = np.where(l_b > 0, h_c / l_b, np.inf)
            else:
                est, lo, hi = e_c - e_b, l_c - h_b, h_c - l_b
        lo, hi = np.where(np.isnan(lo), -np.inf, lo), np.where(np.isnan(hi), np.inf, hi)
        passed, failed = _decide(metric, [lo > v for v in bnds], [hi < v for v in bnds])
        return _Paths(est, lo, hi, passed, failed, method="quantile CS (Howard & Ramdas)",
                      extra={"candidate": e_c, "baseline": e_b})
    bounded = metric.bounds
    use_betting = (method == "betting" or (method == "auto" and bounded is not None)) and not metric.relative
    if use_betting:
        if bounded is None:
            raise DataError(f"metric {metric.name!r}: method betting needs bounds (rule key bounds = [low, high])")
        a, z = bounded[0] - bounded[1], bounded[1] - bounded[0]  # the range of a paired difference
        x = c - b
        scaled = (x - a) / (z - a)
        design = metric.margin / (z - a) if metric.margin > 0 else None
        threshold = math.log(2 / alpha)
        above, below = [], []
        for v in bnds:
            m = (v - a) / (z - a)
            if m <= 0 or m >= 1:  # a boundary outside the range: decided by the range itself
                above.append(np.full((x.shape[0], len(pts)), m <= 0))
                below.append(np.full((x.shape[0], len(pts)), m >= 1))
                continue
            up, down = _log_capital(scaled, np.array([[m]]), design)
            above.append(up[:, pts - 1] >= threshold)
            below.append(down[:, pts - 1] >= threshold)
        passed, failed = _decide(metric, above, below)
        t = pts.astype(float)
        est = np.cumsum(x, axis=1)[:, pts - 1] / t
        mean2 = np.cumsum(x * x, axis=1)[:, pts - 1] / t
        sd = np.sqrt(np.maximum(mean2 - est**2, 0.0) * t / np.maximum(t - 1, 1))
        if intervals:
            lo, hi = np.empty_like(est), np.empty_like(est)
            grid = (np.arange(1, _GRID) / _GRID)[:, None]
            for r in range(x.shape[0]):
                up, down = _log_capital(scaled[r][None, :], grid, design)
                kept = (up[:, pts - 1] < threshold) & (down[:, pts - 1] < threshold)
                kept = np.logical_and.accumulate(kept, axis=1)  # the running intersection
                first = np.argmax(kept, axis=0)
                last = kept.shape[0] - 1 - np.argmax(kept[::-1], axis=0)
                lo_s = np.where(kept.any(axis=0), grid[first, 0] - 1 / _GRID, np.nan)
                hi_s = np.where(kept.any(axis=0), grid[last, 0] + 1 / _GRID, np.nan)
                lo[r] = a + (z - a) * np.maximum(lo_s, 0.0)
                hi[r] = a + (z - a) * np.minimum(hi_s, 1.0)
        else:
            lo = hi = np.full_like(est, np.nan)
        return _Paths(est, lo, hi, passed, failed, sd=sd, method="betting CS (bets tuned to the margin)")
    est, lo, hi, sd = _asymptotic_mean(c, b, pts, alpha, n_opt, metric.relative)
    lo, hi = _running(lo, hi, usable)
    passed, failed = _decide(metric, [lo > v for v in bnds], [hi < v for v in bnds])
    return _Paths(est, lo, hi, passed, failed, sd=sd, method="asymptotic CS (Gaussian mixture)")


def _verdicts(passed: np.ndarray, failed: np.ndarray) -> np.ndarray:
    """Verdict codes per stream and look from metrics x streams x looks flags: 1 PASS, -1 FAIL, 0."""
    fail = failed.any(axis=0)
    ok = passed.all(axis=0)
    return np.where(fail, -1, np.where(ok, 1, 0))


def gate_streams(rule: GateRule | Mapping[str, Any] | str | Path, candidate: Mapping[str, np.ndarray],
                 baseline: Mapping[str, np.ndarray]) -> pd.DataFrame:
    """The gate's verdict on many simulated (or replayed) streams of items at once.

    Parameters
    ----------
    rule : GateRule, dict or path
        The rule (see :func:`read_rule`).
    candidate, baseline : dict
        Per metric name, the item values in arrival order: streams x items for a mean (each item's
        mean over its runs), streams x items x runs for a quantile (NaN pads missing runs).

    Returns
    -------
    DataFrame
        One row per stream: ``verdict``, ``stopped_at`` (items at the first decided look, else the
        last look), ``decided`` and, per metric, ``pass_<name>`` / ``fail_<name>`` (the metric's
        decision at the stop).

    Examples
    --------
    >>> import numpy as np
    >>> rng = np.random.default_rng(1)
    >>> base = rng.binomial(1, 0.7, size=(4, 600)).astype(float)
    >>> rule = {"looks": 50, "metrics": [{"name": "acc", "column": "correct", "bounds": [0, 1], "margin": 0.1}]}
    >>> gate_streams(rule, {"acc": base}, {"acc": base})["verdict"].tolist()
    ['PASS', 'PASS', 'PASS', 'PASS']
    """
    r = read_rule(rule)
    shares = r.shares()
    names = [m.name for m in r.metrics]
    missing = [n for n in names if n not in candidate or n not in baseline]
    if missing:
        raise DataError(f"no streams for metric(s) {missing}")
    n = min(np.asarray(candidate[m]).shape[1] for m in names)
    if r.max_items is not None:
        n = min(n, r.max_items)
    pts = look_points(r.looks, n)
    passed, failed = [], []
    for m, a in zip(r.metrics, shares):
        c, b = np.asarray(candidate[m.name], dtype=float), np.asarray(baseline[m.name], dtype=float)
        paths = _metric_paths(m, r.method, c[:, :n], b[:, :n], pts, float(a), float(n), r.min_items,
                              intervals=False)
        passed.append(paths.passed)
        failed.append(paths.failed)
    pa, fa = np.array(passed), np.array(failed)
    v = _verdicts(pa, fa)
    decided = v != 0
    first = np.where(decided.any(axis=1), np.argmax(decided, axis=1), len(pts) - 1)
    rows = np.arange(v.shape[0])
    out = pd.DataFrame({"verdict": np.array(["FAIL", "INCONCLUSIVE", "PASS"])[v[rows, first] + 1],
                        "stopped_at": pts[first], "decided": decided.any(axis=1)})
    for k, name in enumerate(names):
        out[f"pass_{name}"] = pa[k][rows, first]
        out[f"fail_{name}"] = fa[k][rows, first]
    return out


# ----------------------------------------------------------------------------------------------
# the result


@dataclass(frozen=True, eq=False, repr=False)
class GateResult(Result):
    """The verdict of a release gate.

    ``verdict`` is PASS (every metric passed), FAIL (a metric was decided against) or INCONCLUSIVE;
    ``metrics`` has one row per metric at the stop (estimate: candidate - baseline, or candidate /
    baseline for a relative margin; the anytime-valid ``conf_low``/``conf_high`` at the metric's
    share ``alpha`` of the error; the ``margin`` boundary; ``decision``; ``n_items``); ``path`` one
    row per look and metric; ``mde`` per metric the smallest distance from the margin boundary the
    design detects with 80% power (fixed-n z test for a one-look rule, the CS for sequential looks);
    ``stopped_at`` the items at the decision (sequential looks only); ``rule_hash`` the sha256 of
    the canonical rule.
    """

    verdict: str
    metrics: pd.DataFrame
    path: pd.DataFrame
    mde: dict[str, float]
    stopped_at: int | None
    rule_hash: str
    rule: dict[str, Any]
    baseline: str
    candidate: str
    n_items: int
    shadow: bool

    @property
    def exit_code(self) -> int:
        """The CLI's exit code: 0 PASS, 1 FAIL, 3 INCONCLUSIVE."""
        return VERDICTS[self.verdict]

    def _title(self) -> str:
        return f"Release gate: {self.verdict} ({self.candidate} against {self.baseline})"

    def _header(self) -> list[str]:
        looks = self.rule["looks"]
        where = (f"decided after {self.stopped_at} of {self.n_items} items" if self.stopped_at is not None
                 else f"{self.n_items} items, " + ("one look" if looks is None else "not decided at any look"))
        return [where, f"rule sha256 {self.rule_hash}",
                f"family-wise error <= {self.rule['alpha']:g} over {len(self.rule['metrics'])} metric(s) and every look"]

    def _notes(self) -> list[str]:
        mde = ", ".join(f"{k} {v:.4g}" for k, v in self.mde.items())
        return [f"MDE (80% power, distance from the margin): {mde}"]

    def to_frame(self) -> pd.DataFrame:
        return self.metrics.copy()

    def to_dict(self) -> dict[str, Any]:
        rule = json.loads(json.dumps(object.__getattribute__(self, "rule")))  # plain dicts and lists
        return super().to_dict() | {"verdict": self.verdict, "exit_code": self.exit_code,
                                    "rule_hash": self.rule_hash, "rule": rule, "mde": dict(self.mde),
                                    "stopped_at": self.stopped_at, "n_items": self.n_items,
                                    "baseline": self.baseline, "candidate": self.candidate, "shadow": self.shadow,
                                    "path": self.path.to_dict(orient="records")}


# ----------------------------------------------------------------------------------------------
# from a runs table


def _roles(df: pd.DataFrame, model: str | None, item: str | None, run: str | None) -> tuple[str, str, str | None]:
    schema = df.attrs.get("evalmix") or {}
    model = model or schema.get("model") or "model"
    item = item or schema.get("item") or ("item" if "item" in df.columns else "problem_id")
    if run is None:
        run = schema.get("run") if "run" in schema else ("run" if "run" in df.columns else None)
    for role, col in (("model", model), ("item", item)) + ((("run", run),) if run else ()):
        if col not in df.columns:
            raise DataError(f"{role} column {col!r} is not in the data (columns: {', '.join(map(str, df.columns))})")
    return model, item, run


def _item_values(sub: pd.DataFrame, item: str, metric: GateMetric, items: pd.Index) -> np.ndarray:
    """Per item: the mean over its runs (sum of successes / sum of trials for k-of-n)."""
    if metric.trials is not None:
        g = sub.groupby(item, observed=True, sort=False)[[metric.column, metric.trials]].sum()
        vals = g[metric.column] / g[metric.trials]
    else:
        vals = sub.groupby(item, observed=True, sort=False)[metric.column].mean()
    return vals.reindex(items).to_numpy(dtype=float)


def _run_values(sub: pd.DataFrame, item: str, column: str, items: pd.Index) -> np.ndarray:
    """items x runs values (NaN-padded)."""
    pos = items.get_indexer(pd.Index(sub[item]))
    keep = pos >= 0
    pos = pos[keep]
    values = pd.to_numeric(sub[column]).to_numpy(dtype=float)[keep]
    slot = pd.Series(pos).groupby(pos).cumcount().to_numpy()  # the run's place within its item
    out = np.full((len(items), int(slot.max()) + 1 if slot.size else 1), np.nan)
    out[pos, slot] = values
    return out


def _check_column(df: pd.DataFrame, column: str, metric: str, model_col: str) -> None:
    if column not in df.columns:
        raise DataError(f"metric {metric!r}: column {column!r} is not in the data (columns: "
                        f"{', '.join(map(str, df.columns))})")
    values = pd.to_numeric(df[column], errors="coerce")
    bad = np.flatnonzero(values.isna().to_numpy() | ~np.isfinite(values.to_numpy(dtype=float, na_value=np.nan)))
    if bad.size:
        row = df.index[bad[0]]
        raise DataError(f"metric {metric!r}: column {column!r} has a missing or non-numeric value at row {row} "
                        f"(model {df[model_col].iloc[bad[0]]!r}: {df[column].iloc[bad[0]]!r}; {bad.size} such rows)")


def _mde(metric: GateMetric, paths: _Paths, n: int, alpha: float, sequential: bool, n_opt: float,
         last: int) -> float:
    """Smallest distance from the margin boundary detected with 80% power at ``n`` items."""
    z = NormalDist().inv_cdf(1 - alpha / 2)
    if metric.quantile is None:
        sd = float(paths.sd[0, last]) if paths.sd is not None else math.nan
        mult = (float(normal_mixture_radius(n, conf_level=1 - alpha, n_opt=n_opt, scale=1.0)[()]) * math.sqrt(n)
                if sequential else z)
        return (mult + _POWER_Z) * sd / math.sqrt(n)
    # a quantile: Woodruff's standard errors of the two quantiles, combined as independent; the
    # sequential multiplier is the quantile CS's radius in proportion over the binomial one
    p = metric.quantile
    se = math.sqrt(sum(paths.extra["se2"]))
    mult = (float(normal_mixture_radius(n, conf_level=1 - alpha / 2, n_opt=n_opt,
                                        scale=math.sqrt(_kearns_saul(p)))[()]) * math.sqrt(n) / math.sqrt(p * (1 - p))
            if sequential else z)
    return (mult + _POWER_Z) * se


def _woodruff_se(values: np.ndarray, p: float) -> float:
    """Woodruff's standard error of a quantile of item-weighted run values (items x runs)."""
    n = values.shape[0]
    k = np.sum(~np.isnan(values), axis=1, keepdims=True)
    w = np.where(np.isnan(values), 0.0, 1.0 / np.maximum(k, 1)).ravel()
    v = values.ravel()
    keep = ~np.isnan(v)
    v, w = v[keep], w[keep]
    order = np.argsort(v, kind="stable")
    v, cw = v[order], np.cumsum(w[order]) / n
    half = 1.959963984540054 * math.sqrt(p * (1 - p) / n)

    def q(level: float) -> float:
        level = min(max(level, 0.0), 1.0)
        return float(v[min(np.searchsorted(cw, level - 1e-12), len(v) - 1)])

    return (q(p + half) - q(p - half)) / (2 * 1.959963984540054)


def _boundary_text(metric: GateMetric, bnd: list[float]) -> str:
    """Where the estimate must lie to pass, in words: ``> -0.02``, ``< 1.1``, ``in (-0.1, 0.1)``."""
    if metric.test == "equivalence":
        return f"in ({bnd[0]:g}, {bnd[1]:g})"
    return f"{'>' if metric.direction == 'higher' else '<'} {bnd[0]:g}"


def gate(data: pd.DataFrame | str | Path, baseline: str, candidate: str,
         rule: GateRule | Mapping[str, Any] | str | Path, *, model: str | None = None, item: str | None = None,
         run: str | None = None, order: str | None = None, rng: int | np.random.Generator | None = None,
         shadow: bool = False) -> GateResult:
    """A pre-registered, multi-metric, anytime-valid release verdict: PASS, FAIL or INCONCLUSIVE.

    Items are taken in arrival order (first appearance in ``data``, the ``order`` column, or
    shuffled with ``rng``); at each look of the rule every metric's confidence sequence is updated
    and decided (see the module notes); the gate stops at the first look where the verdict is PASS
    (every metric passed) or FAIL (a metric decided against).  The family-wise error of wrong
    PASS and wrong FAIL decisions over the metrics and looks is at most the rule's ``alpha``.

    Parameters
    ----------
    data : DataFrame or path
        Long table, one row per (model, item[, run]), with the metrics' columns (a runs table of
        :func:`evalmix.read_runs` or :func:`evalmix.read_logs` keeps its roles).
    baseline, candidate : str
        The two models (estimates are candidate - baseline, or candidate / baseline).
    rule : dict, GateRule, TOML path or TOML text
        The pre-registered rule (:func:`read_rule`).
    model, item, run : str, optional
        Column names (default: the table's roles, else ``model``, ``item``, ``run``).
    order : str, optional
        Column giving the arrival order of the items.
    rng : int or Generator, optional
        Shuffle the items into a random order first.
    shadow : bool
        Report every look to the end (the ``path``), as if nothing had been stopped; the verdict
        is still the one at the first decided look.

    Returns
    -------
    GateResult

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(0)
    >>> p = rng.beta(2, 1, 3000)
    >>> df = pd.concat([pd.DataFrame({"model": m, "item": range(3000), "correct": rng.binomial(1, p),
    ...                               "cost": rng.gamma(2, c, 3000)}) for m, c in (("base", 1.0), ("new", 0.8))])
    >>> rule = {"alpha": 0.05, "looks": 250, "metrics": [
    ...     {"name": "accuracy", "column": "correct", "bounds": [0, 1], "margin": 0.05},
    ...     {"name": "cost", "column": "cost", "direction": "lower", "margin": "10%"}]}
    >>> res = gate(df, "base", "new", rule)
    >>> res.verdict, res.stopped_at, res.metrics["decision"].tolist()
    ('PASS', 1250, ['PASS', 'PASS'])
    """
    r = read_rule(rule)
    if isinstance(data, (str, Path)):
        from ..data.runs import load_table

        data = load_table(data)
    data = at_the_door(data)  # polars, Arrow, DuckDB... as pandas
    if not isinstance(data, pd.DataFrame):
        raise ArgumentError(f"data must be a DataFrame or a path, got {type(data).__name__}")
    df = data
    model_col, item_col, run_col = _roles(df, model, item, run)
    labels = df[model_col].astype(str)
    for name in (baseline, candidate):
        if not (labels == str(name)).any():
            known = sorted(pd.unique(labels))
            raise DataError(f"model {name!r} has no rows in column {model_col!r}; models: "
                            f"{', '.join(map(repr, known[:20]))}")
    if str(baseline) == str(candidate):
        raise ArgumentError("baseline and candidate must be two different models")
    sub = df[labels.isin([str(baseline), str(candidate)])]
    for m in r.metrics:
        _check_column(sub, m.column, m.name, model_col)
        if m.trials is not None:
            _check_column(sub, m.trials, m.name, model_col)
    bmask = sub[model_col].astype(str) == str(baseline)
    b_items, c_items = set(sub.loc[bmask, item_col]), set(sub.loc[~bmask, item_col])
    shared = b_items & c_items
    if not shared:
        raise DataError(f"models {baseline!r} and {candidate!r} share no item in column {item_col!r}")
    alone = len(b_items | c_items) - len(shared)
    if alone:
        warnings.warn(f"{alone} item(s) answered by only one of {baseline!r} and {candidate!r} are left out "
                      f"(the comparison is paired by item)", DataWarning, stacklevel=2)
    if order is not None:
        if order not in sub.columns:
            raise DataError(f"order column {order!r} is not in the data")
        seq = list(sub.groupby(item_col, observed=True)[order].min().sort_values(kind="stable").index)
    else:
        seq = list(pd.unique(sub[item_col]))
    items = pd.Index([i for i in seq if i in shared])
    if rng is not None:
        items = items[as_generator(rng).permutation(len(items))]
    n = len(items) if r.max_items is None else min(len(items), r.max_items)
    items = items[:n]
    pts = look_points(r.looks, n)
    sequential = r.looks is not None
    shares = r.shares()
    base_rows, cand_rows = sub[bmask], sub[~bmask]
    rows, path_parts, passed, failed, mdes, all_paths = [], [], [], [], {}, []
    for m, a in zip(r.metrics, shares):
        metric = m
        if m.bounds is None and m.quantile is None and r.method != "asymptotic":
            vals = pd.to_numeric(sub[m.column])
            outcome = m.column == (df.attrs.get("evalmix") or {}).get("outcome") and vals.between(0, 1).all()
            if m.trials is not None or outcome or vals.isin([0, 1]).all():
                metric = GateMetric(**{**m.__dict__, "bounds": (0.0, 1.0)})  # accuracy: bounded by definition
        if m.quantile is None:
            c = _item_values(cand_rows, item_col, metric, items)[None, :]
            b = _item_values(base_rows, item_col, metric, items)[None, :]
        else:
            c = _run_values(cand_rows, item_col, m.column, items)[None, :, :]
            b = _run_values(base_rows, item_col, m.column, items)[None, :, :]
        paths = _metric_paths(metric, r.method, c, b, pts, float(a), float(n), r.min_items)
        if m.quantile is not None:
            paths.extra["se2"] = [_woodruff_se(c[0], m.quantile) ** 2, _woodruff_se(b[0], m.quantile) ** 2]
        all_paths.append((metric, paths, float(a)))
        passed.append(paths.passed)
        failed.append(paths.failed)
    v = _verdicts(np.array(passed), np.array(failed))[0]
    decided = np.flatnonzero(v != 0)
    stop_j = int(decided[0]) if decided.size else len(pts) - 1
    verdict = {1: "PASS", -1: "FAIL", 0: "INCONCLUSIVE"}[int(v[stop_j])]
    shown = len(pts) if shadow else stop_j + 1
    for metric, paths, a in all_paths:
        dec = np.where(paths.failed[0], "FAIL", np.where(paths.passed[0], "PASS", "INCONCLUSIVE"))
        bnd = metric.boundaries()
        rows.append({"metric": metric.name, "column": metric.column,
                     "summary": metric.canonical()["statistic"], "test": metric.test,
                     "direction": metric.direction,
                     "scale": "ratio" if metric.relative else "difference",
                     "estimate": float(paths.estimate[0, stop_j]), "conf_low": float(paths.conf_low[0, stop_j]),
                     "conf_high": float(paths.conf_high[0, stop_j]),
                     "margin": metric.margin, "boundary": _boundary_text(metric, bnd),
                     "alpha": a, "decision": str(dec[stop_j]), "n_items": int(pts[stop_j]),
                     "method": paths.method})
        mdes[metric.name] = _mde(metric, paths, n, a, sequential, float(n), len(pts) - 1)
        path_parts.append(pd.DataFrame({"look": np.arange(1, shown + 1), "metric": metric.name,
                                        "n_items": pts[:shown], "estimate": paths.estimate[0, :shown],
                                        "conf_low": paths.conf_low[0, :shown],
                                        "conf_high": paths.conf_high[0, :shown], "decision": dec[:shown]}))
    path = pd.concat(path_parts, ignore_index=True).sort_values(["look", "metric"], kind="stable")
    verdict_at = np.array(["FAIL", "INCONCLUSIVE", "PASS"])[v[:shown] + 1]
    path["verdict"] = verdict_at[path["look"].to_numpy() - 1]
    return GateResult(verdict=verdict, metrics=pd.DataFrame(rows), path=path.reset_index(drop=True), mde=mdes,
                      stopped_at=int(pts[stop_j]) if sequential and decided.size else None,
                      rule_hash=r.hash, rule=r.canonical(), baseline=str(baseline), candidate=str(candidate),
                      n_items=n, shadow=shadow)
