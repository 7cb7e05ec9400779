"""Pairwise-preference leaderboards: Bradley-Terry ratings of arena battles.

An arena battle shows one prompt to two models (``model_a`` shown first, ``model_b`` second) and
records which answer won, or a tie.  :func:`bradley_terry` fits the Bradley-Terry model

    P(a beats b) = exp(theta_a + h) / (exp(theta_a + h) + exp(theta_b))

by maximum likelihood (Newton's method on the battle counts of each ordered pair), with

- ties by Davidson's (1970) model: ``P(tie) = nu * sqrt(pi_a pi_b) / (pi_a + pi_b + nu * sqrt(pi_a
  pi_b))`` with ``pi = exp(theta)``; or as half a win for each side (``ties="half"``, the
  convention of FastChat's ``compute_mle_elo``); or left out (``ties="drop"``, as BradleyTerry2's
  ``BTm`` on wins and losses);
- a position effect ``h``: the advantage of being shown first (``position=True``);
- intervals from the sandwich covariance clustered by prompt (or by battle), the inverse Fisher
  information, or a bootstrap of battles or of clusters;
- ratings on the Elo scale of the Chatbot Arena: ``400 / ln(10)`` (about 173.7) points per logit,
  so that 400 points are 10:1 odds, anchored at a mean of ``anchor`` (1000) over the models, or
  with the ``reference`` model at ``anchor``;
- simultaneous rank sets and tie groups from the fitted covariance, through
  :func:`evalmix.studies.leaderboard.rank_sets_normal`.

The Davidson model is a log-linear model for the three outcomes of a battle (log-odds ``d/2``,
``-d/2`` and ``log nu`` with ``d = theta_a - theta_b + h``), so its log-likelihood is concave and
Newton's method with the exact Hessian converges from zero in a handful of steps.  Battles are
pooled into counts per (first model, second model, outcome) with ``np.bincount`` before fitting:
the cost grows with the number of rows only through that one pass.
"""

from __future__ import annotations

import html
import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import MappingProxyType
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import sparse, special, stats
from scipy.sparse.csgraph import connected_components
from threadpoolctl import threadpool_limits

from ..core import tables
from ..core.result import Result, Summary, frame_records
from ..data.slicing import rng_of
from ..data.runs import load_table
from ..core.errors import DataError, SamplingWarning, SeparationError
from .leaderboard import RankSets, rank_sets_normal
from ..core.parallel import parallel_map
from ..core.seeds import accepts_seed

__all__ = ["ELO_PER_LOGIT", "WINNERS", "BradleyTerryResult", "bradley_terry", "read_battles"]

#: Elo points per logit: 400 points are odds of 10 to 1 (FastChat's ``SCALE / ln(BASE)``).
ELO_PER_LOGIT = 400.0 / math.log(10.0)

_OUTCOME_NAMES = ("model_a", "model_b", "tie")
#: The spellings of a battle's outcome (compared in lower case, trimmed) and the outcome each means:
#: FastChat's clean_battle values (``"tie (bothbad)"``: a tie in which both answers were bad),
#: lmarena's ``"both_bad"`` (the same, in its human-preference tables), and ``"a"``/``"b"``.
WINNERS: Mapping[str, str] = MappingProxyType({
    "model_a": "model_a", "a": "model_a", "model_b": "model_b", "b": "model_b", "tie": "tie",
    "tie (bothbad)": "tie", "both_bad": "tie"})
# winner spellings -> outcome code (0: first model wins, 1: second model wins, 2: tie)
_WINNERS = {spelling: _OUTCOME_NAMES.index(meaning) for spelling, meaning in WINNERS.items()}
_TIES = ("davidson", "half", "drop")
_CIS = ("sandwich", "hessian", "bootstrap")
# Newton's method: stop when no parameter moves more than this (logits), or after this many steps
_NEWTON_TOL = 1e-10
_NEWTON_MAXIT = 100
# a ratings difference beyond this many logits (odds of e^30) means a model never loses (or never
# wins): the maximum-likelihood rating is infinite
_DIVERGED = 30.0
# up to this many ordered pairs (about 4,000 models) battles are pooled by a dense bincount
_DENSE_PAIRS_MAX = 2**24


# ----------------------------------------------------------------------------------------------
# reading battles


def read_battles(source: str | Path | pd.DataFrame, *, model_a: str = "model_a", model_b: str = "model_b",
                 winner: str = "winner", prompt: str | None = None, judge: str | None = None,
                 turn: str | None = None) -> pd.DataFrame:
    """Read and check a table of arena battles.

    Parameters
    ----------
    source : path or DataFrame
        A battle table (``.csv``, ``.tsv``, ``.parquet``, ``.jsonl`` or ``.json``, as
        :func:`evalmix.load_table` reads; FastChat's ``clean_battle`` JSON is a list of records).
    model_a, model_b : str
        Columns of the model shown first and the model shown second.
    winner : str
        Column of the outcome: ``"model_a"``, ``"model_b"``, ``"tie"`` or ``"tie (bothbad)"``
        (FastChat's values), ``"both_bad"`` (lmarena's tables; a tie), or ``"a"``, ``"b"``; case and
        surrounding spaces are ignored (:data:`WINNERS`).
    prompt, judge, turn : str, optional
        Optional columns kept under these names (``prompt`` is the usual cluster of the sandwich).

    Returns
    -------
    DataFrame
        Columns ``model_a``, ``model_b`` (strings), ``winner`` (``"model_a"``, ``"model_b"`` or
        ``"tie"``) and whichever of ``prompt``, ``judge``, ``turn`` were named, in the file's row
        order.

    Raises
    ------
    DataError
        A column is missing; a value is missing (naming the column and row); a winner value is
        unknown (naming it and its row); a model battles itself (naming the row); fewer than two
        models.

    Examples
    --------
    >>> raw = pd.DataFrame({"model_a": ["x", "y"], "model_b": ["y", "x"], "winner": ["A", "tie"]})
    >>> read_battles(raw)["winner"].tolist()
    ['model_a', 'tie']
    """
    table = load_table(source, ids=(model_a, model_b, prompt, judge))
    where = f"{source}: " if isinstance(source, (str, Path)) else ""
    coded = _code_battles(table, where, model_a, model_b, winner, {"prompt": prompt, "judge": judge, "turn": turn})
    out = pd.DataFrame({"model_a": coded.labels[coded.a], "model_b": coded.labels[coded.b],
                        "winner": np.asarray(_OUTCOME_NAMES, dtype=object)[coded.outcome]})
    for role, col in (("prompt", prompt), ("judge", judge), ("turn", turn)):
        if col is not None:
            out[role] = table[col].to_numpy()
    return out


@dataclass(frozen=True)
class _Coded:
    """Battles as integer codes: model labels (sorted), first and second model, outcome, clusters."""

    labels: np.ndarray
    a: np.ndarray
    b: np.ndarray
    outcome: np.ndarray
    cluster: np.ndarray | None


def _factor(table: pd.DataFrame, col: str, where: str, strip: bool = True) -> tuple[np.ndarray, np.ndarray]:
    """Codes and distinct values of a column (hashing once per row; checks run on the distinct
    values); a missing or blank value is an error naming the row."""
    codes, uniq = pd.factorize(table[col], use_na_sentinel=True)
    bad = codes < 0
    if strip and len(uniq):
        text = pd.Index(uniq).astype(str).str.strip()
        blank = np.flatnonzero(np.asarray(text == ""))
        if len(blank):
            bad |= np.isin(codes, blank)
        recode, uniq = pd.factorize(text)  # "x" and " x" are one model
        codes = np.where(codes < 0, -1, recode[np.maximum(codes, 0)])
    if bad.any():
        raise DataError(f"{where}column {col!r} has a missing value in row {_row(table, bad)}"
                        f" ({int(bad.sum())} such rows)")
    return codes.astype(np.int64), np.asarray(uniq, dtype=object)


def _code_battles(table: pd.DataFrame, where: str, model_a: str, model_b: str, winner: str,
                  extra: dict[str, str | None]) -> _Coded:
    roles = {"model_a": model_a, "model_b": model_b, "winner": winner} | {r: c for r, c in extra.items() if c}
    for role, col in roles.items():
        if col not in table.columns:
            raise DataError(f"{where}no column {col!r} (the {role} column); columns: {list(table.columns)[:20]}")
    ca, ua = _factor(table, model_a, where)
    cb, ub = _factor(table, model_b, where)
    cw, uw = _factor(table, winner, where)
    wcode = np.array([_WINNERS.get(str(v).lower(), -1) for v in uw], dtype=np.int64)
    if (wcode < 0).any():
        unknown = wcode[cw] < 0
        bad = uw[cw[np.flatnonzero(unknown)[0]]]
        raise DataError(f"{where}column {winner!r} has the unknown winner value {bad!r} in row "
                        f"{_row(table, unknown)}; expected 'model_a', 'model_b', 'tie', 'tie (bothbad)' or "
                        "'both_bad' (or 'a', 'b')")
    labels = np.asarray(sorted(set(ua.tolist()) | set(ub.tolist())), dtype=object)
    ia = np.searchsorted(labels, ua)[ca] if len(ca) else ca
    ib = np.searchsorted(labels, ub)[cb] if len(cb) else cb
    same = ia == ib
    if same.any():
        raise DataError(f"{where}row {_row(table, same)} has model {labels[ia[same][0]]!r} battling itself "
                        f"(columns {model_a!r} and {model_b!r})")
    if len(labels) < 2:
        raise DataError(f"{where}a leaderboard needs battles between at least two models")
    cluster = None
    for role, name in extra.items():
        if name is not None:
            codes, _ = _factor(table, name, where, strip=role != "turn")
            if role == "prompt":
                cluster = codes
    return _Coded(labels=labels, a=ia.astype(np.int64), b=ib.astype(np.int64), outcome=wcode[cw], cluster=cluster)


def _whole_counts(table: pd.DataFrame, col: str, where: str, role: str) -> np.ndarray:
    """A column of battle counts: whole numbers >= 0 (an error names the column and the row)."""
    if col not in table.columns:
        raise DataError(f"{where}no column {col!r} (the {role} column); columns: {list(table.columns)[:20]}")
    values = pd.to_numeric(table[col], errors="coerce").to_numpy(dtype=float)
    bad = ~np.isfinite(values) | (values < 0) | (values != np.round(values))
    if bad.any():
        raise DataError(f"{where}column {col!r} ({role}) must hold whole numbers >= 0, got "
                        f"{table[col].iloc[int(np.flatnonzero(bad)[0])]!r} in row {_row(table, bad)}")
    return values.astype(np.int64)


def _code_aggregated(table: pd.DataFrame, where: str, model_a: str, model_b: str, winner: str,
                     counts: tuple[str, ...] | None, weights: str | None, cluster: str | None
                     ) -> tuple[_Coded, float]:
    """Battles given as counts: per row, the first model's wins, the second's and optionally the
    ties (BradleyTerry2's ``cbind(win1, win2)``), or a battle row repeated ``weights`` times.
    Expanded to one battle per count, so that every later step (the sandwich, the bootstrap)
    sees the battles as if listed one per row.  Also returns the log multinomial coefficients of
    the count rows (0 for weights), which a log-likelihood of counts includes (BTm's, glm's)."""
    if counts is not None and weights is not None:
        raise DataError("give either counts= (wins per pair) or weights= (a count per battle row), not both")
    if counts is not None:
        names = (counts,) if isinstance(counts, str) else tuple(counts)
        if len(names) not in (2, 3):
            raise DataError(f"counts must name 2 or 3 columns (wins of {model_a!r}, wins of {model_b!r}"
                            f"[, ties]), got {names!r}")
        coded = _code_battles(table.assign(**{"\0winner": "tie"}), where, model_a, model_b, "\0winner",
                              {"prompt": cluster})
        roles = (f"wins of {model_a!r}", f"wins of {model_b!r}", "ties")
        per = np.column_stack([_whole_counts(table, c, where, r) for c, r in zip(names, roles)])
        rows = np.repeat(np.arange(len(table)), per.sum(axis=1))
        outcome = np.concatenate([np.repeat(np.arange(per.shape[1]), r) for r in per]) if len(per) else rows
        log_coef = float((special.gammaln(per.sum(axis=1) + 1.0) - special.gammaln(per + 1.0).sum(axis=1)).sum())
    else:
        assert weights is not None
        coded = _code_battles(table, where, model_a, model_b, winner, {"prompt": cluster})
        w = _whole_counts(table, weights, where, "weights")
        rows = np.repeat(np.arange(len(table)), w)
        outcome = coded.outcome[rows]
        log_coef = 0.0
    if len(rows) == 0:
        raise DataError(f"{where}the counts add up to no battle")
    return _Coded(labels=coded.labels, a=coded.a[rows], b=coded.b[rows], outcome=outcome.astype(np.int64),
                  cluster=None if coded.cluster is None else coded.cluster[rows]), log_coef


def _row(table: pd.DataFrame, mask: np.ndarray) -> object:
    label = table.index[np.flatnonzero(mask)[0]]
    return label.item() if hasattr(label, "item") else label


# ----------------------------------------------------------------------------------------------
# the likelihood on pooled counts


@dataclass(frozen=True)
class _Pairs:
    """Battle counts per ordered pair: ``a`` shown first, ``b`` second; ``counts[:, o]`` per outcome."""

    a: np.ndarray
    b: np.ndarray
    counts: np.ndarray  # (n_pairs, 3) float: first wins, second wins, ties
    k: int


def _pair_terms(d: np.ndarray, tau: float, counts: np.ndarray, ties: str, want_scores: bool = False
                ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray | None]:
    """Per pair: log-likelihood (summed), the score and information in ``d`` and ``tau``, and (with
    ``want_scores``) the per-outcome scores, shape (2, n_pairs, 3): in ``d`` and in ``tau``."""
    w, lo, t = counts[:, 0], counts[:, 1], counts[:, 2]
    if ties == "davidson":
        s = np.stack([d / 2, -d / 2, np.full_like(d, tau)], axis=1)  # log-linear: three outcomes
        lse = np.logaddexp.reduce(s, axis=1)
        p = np.exp(s - lse[:, None])
        n = w + lo + t
        ll = float(np.sum(w * s[:, 0] + lo * s[:, 1] + t * tau - n * lse))
        mean_d = (p[:, 0] - p[:, 1]) / 2  # E of the sufficient statistic (1/2, -1/2, 0) for d
        g_d = (w - lo) / 2 - n * mean_d
        g_t = t - n * p[:, 2]
        i_dd = n * ((p[:, 0] + p[:, 1]) / 4 - mean_d**2)
        i_dt = -n * p[:, 2] * mean_d
        i_tt = n * p[:, 2] * (1 - p[:, 2])
        scores = None
        if want_scores:
            score_d = np.array([0.5, -0.5, 0.0])[None, :] - mean_d[:, None]
            score_t = np.array([0.0, 0.0, 1.0])[None, :] - p[:, 2:3]
            scores = np.stack([score_d, score_t])
        return ll, g_d, g_t, i_dd, i_dt, i_tt, scores
    # binomial: a tie is half a win for each side ("half") or no battle at all ("drop")
    half = 0.5 if ties == "half" else 0.0
    succ = w + half * t
    trials = w + lo + (t if ties == "half" else 0.0)
    log_p = -np.logaddexp(0.0, -d)
    prob = np.exp(log_p)
    ll = float(np.sum(succ * log_p + (trials - succ) * (log_p - d)))
    zero = np.zeros_like(d)
    scores = None
    if want_scores:
        score_d = np.array([1.0, 0.0, half])[None, :] - prob[:, None]
        if ties == "drop":
            score_d[:, 2] = 0.0
        scores = np.stack([score_d, np.zeros_like(score_d)])
    return ll, succ - trials * prob, zero, trials * prob * (1 - prob), zero, zero, scores


class _Model:
    """The parameter layout: free ratings (all but ``fixed``), then ``h`` and ``log nu`` when fitted."""

    def __init__(self, k: int, fixed: int, position: bool, ties: str) -> None:
        self.k, self.fixed, self.position, self.davidson = k, fixed, position, ties == "davidson"
        self.ties = ties
        self.free = np.delete(np.arange(k), fixed)
        self.n_par = k - 1 + int(position) + int(self.davidson)

    def unpack(self, x: np.ndarray) -> tuple[np.ndarray, float, float]:
        theta = np.zeros(self.k)
        theta[self.free] = x[: self.k - 1]
        h = float(x[self.k - 1]) if self.position else 0.0
        tau = float(x[-1]) if self.davidson else -np.inf
        return theta, h, tau

    def evaluate(self, x: np.ndarray, pairs: _Pairs, info: bool = True
                 ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray | None]:
        """Log-likelihood, gradient, information (negative Hessian); without ``info``, the
        per-outcome scores instead."""
        theta, h, tau = self.unpack(x)
        d = theta[pairs.a] - theta[pairs.b] + h
        ll, g_d, g_t, i_dd, i_dt, i_tt, scores = _pair_terms(d, tau, pairs.counts, self.ties, want_scores=not info)
        k = self.k
        grad_theta = np.bincount(pairs.a, g_d, k) - np.bincount(pairs.b, g_d, k)
        parts: list[np.ndarray] = [grad_theta[self.free]]
        if self.position:
            parts.append(np.array([g_d.sum()]))
        if self.davidson:
            parts.append(np.array([g_t.sum()]))
        grad = np.concatenate(parts)
        if not info:
            return ll, grad, np.empty((0, 0)), scores
        m = np.bincount(pairs.a * k + pairs.b, i_dd, k * k).reshape(k, k)
        full = np.zeros((k + 2, k + 2))
        full[:k, :k] = np.diag(m.sum(0) + m.sum(1)) - m - m.T
        cross_h = np.bincount(pairs.a, i_dd, k) - np.bincount(pairs.b, i_dd, k)
        cross_t = np.bincount(pairs.a, i_dt, k) - np.bincount(pairs.b, i_dt, k)
        full[:k, k] = full[k, :k] = cross_h
        full[:k, k + 1] = full[k + 1, :k] = cross_t
        full[k, k] = i_dd.sum()
        full[k, k + 1] = full[k + 1, k] = i_dt.sum()
        full[k + 1, k + 1] = i_tt.sum()
        keep = self.layout()
        return ll, grad, full[np.ix_(keep, keep)], scores

    def layout(self) -> np.ndarray:
        """Indices of the free parameters in the full vector (theta_1..theta_K, h, log nu)."""
        extra = ([self.k] if self.position else []) + ([self.k + 1] if self.davidson else [])
        return np.concatenate([self.free, np.asarray(extra, int)])


def _newton(model: _Model, pairs: _Pairs, x0: np.ndarray, tol: float = _NEWTON_TOL, final: bool = True
            ) -> tuple[np.ndarray, float, np.ndarray, int, bool]:
    """Maximise the (concave) log-likelihood by Newton's method with step halving.

    Stops when no parameter moves more than ``tol``; with ``final=False`` (bootstrap replicates)
    a step that small is taken without evaluating the likelihood at its end once more."""
    x = x0.copy()
    ll, grad, info, _ = model.evaluate(x, pairs)
    for it in range(1, _NEWTON_MAXIT + 1):
        try:
            step = np.linalg.solve(info, grad)
        except np.linalg.LinAlgError:
            return x, ll, info, it, False
        if not final and np.max(np.abs(step)) < tol:
            return x + step, ll, info, it, bool(np.all(np.isfinite(step)))
        t = 1.0
        while True:
            x_new = x + t * step
            ll_new, grad_new, info_new, _ = model.evaluate(x_new, pairs)
            if ll_new >= ll - 1e-9 * abs(ll) or t < 1e-8:
                break
            t /= 2
        x, ll, grad, info = x_new, ll_new, grad_new, info_new
        if np.max(np.abs(t * step)) < tol:
            return x, ll, info, it, True
    return x, ll, info, _NEWTON_MAXIT, False


# ----------------------------------------------------------------------------------------------
# the result


@dataclass(frozen=True, eq=False, repr=False)
class BradleyTerryResult(Result):
    """Bradley-Terry ratings of arena battles with intervals, the tie and position parameters,
    and rank sets.

    Attributes
    ----------
    table : DataFrame
        One row per model, best first: ``model``, ``estimate`` (the rating on ``scale``), ``se``,
        ``conf_low``/``conf_high``, ``n_battles``, ``wins``, ``losses``, ``ties``, ``rank``
        (observed, 1 = best) and, when rank sets were computed, ``rank_low``/``rank_high`` (joint
        rank sets), ``marginal_rank_low``/``marginal_rank_high`` and ``tie_group``.
    params : DataFrame
        ``term``, ``estimate``, ``se``, ``conf_low``, ``conf_high`` of the position effect
        (``"first_position"``: the rating points, or logits, gained by being shown first) and
        Davidson's tie parameter (``"tie_nu"``, ``nu``: its interval is that of ``log nu``
        transformed back, its SE by the delta method).
    vcov : ndarray
        Covariance of the ratings (rows and columns in the order of ``table``), on ``scale``.
    rank_sets : RankSets or None
        The leaderboard's simultaneous rank sets and tie groups (None with ``rank_sets=False``).
    loglik : float
        Maximised log-likelihood (with ``ties="half"`` that of the half-win pseudo-data).
    n_battles, n_clusters : int
        Battles used (ties included unless dropped); clusters of the sandwich or bootstrap.
    ties, ci, scale : str
    position : bool
    cluster, reference : str or None
    anchor, conf_level : float
    n_boot, iterations : int
        Bootstrap replicates that were fitted (0 without bootstrap); Newton steps of the fit.
    boot : ndarray or None
        The bootstrap replicates of the ratings (``n_boot`` x models, ``table`` order).
    """

    table: pd.DataFrame
    params: pd.DataFrame
    vcov: np.ndarray
    rank_sets: RankSets | None
    loglik: float
    n_battles: int
    n_clusters: int
    ties: str
    position: bool
    ci: str
    cluster: str | None
    scale: str
    reference: str | None
    anchor: float
    conf_level: float
    n_boot: int
    iterations: int
    boot: np.ndarray | None

    def _title(self) -> str:
        return "Bradley-Terry ratings of pairwise battles"

    def _header(self) -> list[str]:
        unit = "Elo points (400 per factor 10 in odds)" if self.scale == "elo" else "logits"
        where = f"reference model {self.reference!r}" if self.reference is not None else "mean rating"
        ci = {"sandwich": "sandwich" + (f" clustered by {self.cluster}" if self.cluster else " (per battle)"),
              "hessian": "inverse information", "bootstrap": f"percentile bootstrap ({self.n_boot} replicates"
              + (f" of {self.cluster} clusters)" if self.cluster else " of battles)")}[self.ci]
        return [f"scale: {unit}, {where} at {self.anchor:g}; ties: {self.ties}; position effect: "
                f"{'fitted' if self.position else 'none'}",
                f"{self.n_battles} battles; {100 * self.conf_level:g}% intervals: {ci}; log-likelihood "
                f"{self.loglik:.3f}"]

    def _notes(self) -> list[str]:
        return [f"{r.term}: {r.estimate:.4g} (se {r.se:.4g}) [{r.conf_low:.4g}, {r.conf_high:.4g}]"
                for r in self.params.itertuples()]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def _repr_html_(self) -> str:
        # the header names user columns and models: escaped like the table cells
        head = [html.escape(line) for line in (self._title(), *self._header())]
        out = "<p><b>" + head[0] + "</b>" + "".join(f"<br>{h}" for h in head[1:]) + "</p>\n"
        out += self.to_frame().to_html(index=False, max_rows=40)
        return out + "\n<p>" + "<br>".join(html.escape(n) for n in self._notes()) + "</p>"

    def to_dict(self) -> dict[str, Any]:
        doc = super().to_dict() | {
            "params": frame_records(self.params), "loglik": self.loglik, "n_battles": self.n_battles,
            "n_clusters": self.n_clusters, "ties": self.ties, "position": self.position, "ci": self.ci,
            "cluster": self.cluster, "scale": self.scale, "reference": self.reference, "anchor": self.anchor,
            "conf_level": self.conf_level, "n_boot": self.n_boot}
        if self.rank_sets is not None:
            groups = self.rank_sets.groups
            doc["tie_groups"] = {g: list(m) for g, m in zip(groups["group"], groups["models"])}
        return doc

    def summary(self) -> Summary:
        """Title, header, the ratings and the position and tie parameters."""
        return Summary(self._title(), self._header(), [("ratings", self.to_frame()), ("parameters", self.params)])

    def display_frame(self, digits: int = 1) -> pd.DataFrame:
        """The leaderboard as printed in a paper: rating with its interval, rank set, tie group."""
        t = self.table
        pct = f"{100 * self.conf_level:g}%"
        out = pd.DataFrame({"model": t["model"], "rating": t["estimate"].map(lambda v: f"{v:.{digits}f}"),
                            f"{pct} CI": [f"[{lo:.{digits}f}, {hi:.{digits}f}]"
                                          for lo, hi in zip(t["conf_low"], t["conf_high"])],
                            "battles": t["n_battles"]})
        if "rank_low" in t.columns:
            out["rank set"] = [f"{lo}" if lo == hi else f"{lo}-{hi}" for lo, hi in zip(t["rank_low"], t["rank_high"])]
            out["tie group"] = t["tie_group"]
        else:
            out["rank"] = t["rank"]
        return out

    def to_latex(self, caption: str | None = None, label: str | None = None, digits: int = 1) -> str:
        """The leaderboard as a LaTeX table (ratings with intervals, rank sets, tie groups)."""
        if caption is None:
            caption = (f"Bradley-Terry ratings ({'Elo scale' if self.scale == 'elo' else 'logits'}) with "
                       f"{100 * self.conf_level:g}% intervals ({self.ci}); models sharing a letter are not "
                       "separable.")
        return tables.to_latex(self.display_frame(digits), caption=caption, label=label, digits=digits)

    def to_markdown(self, digits: int = 1) -> str:
        """The leaderboard as a Markdown table."""
        return tables.to_markdown(self.display_frame(digits), digits=digits)


# ----------------------------------------------------------------------------------------------
# the fit


@accepts_seed
def bradley_terry(battles: pd.DataFrame | str | Path, *, model_a: str = "model_a", model_b: str = "model_b",
                  winner: str = "winner", ties: Literal["davidson", "half", "drop"] = "davidson",
                  position: bool = True, cluster: str | None = None,
                  ci: Literal["sandwich", "hessian", "bootstrap"] = "sandwich", n_boot: int = 1000,
                  rng: int | np.random.Generator | None = None, conf_level: float = 0.95,
                  reference: str | None = None, scale: Literal["elo", "logit"] = "elo",
                  anchor: float | None = None, rank_sets: bool = True, n_jobs: int | None = None,
                  counts: Sequence[str] | None = None, weights: str | None = None) -> BradleyTerryResult:
    """Bradley-Terry ratings of arena battles (model A vs model B: a winner or a tie).

    Maximum likelihood by Newton's method on the battle counts of each ordered pair.  Ratings
    are identified by their mean (``anchor``) or by a ``reference`` model (at ``anchor``); on the
    Elo scale a difference of 400 points is odds of 10 to 1 (``ELO_PER_LOGIT`` = 400 / ln 10
    points per logit), as in the Chatbot Arena leaderboard and FastChat's ``compute_mle_elo``.

    Parameters
    ----------
    battles : DataFrame or path
        Battle table, read and checked by :func:`read_battles`.
    model_a, model_b, winner : str
        Columns of the model shown first, the model shown second and the outcome.
    ties : {"davidson", "half", "drop"}
        Davidson's tie model (a parameter ``nu`` estimated with the ratings), a tie as half a
        win for each model (FastChat's convention), or ties left out (as ``BTm`` on wins).
    position : bool
        Fit the advantage of being shown first (``h``, added to the first model's rating).
    cluster : str, optional
        Column of the cluster (usually the prompt) for the sandwich and the bootstrap: battles on
        one prompt are not independent.  Without it every battle is its own cluster.
    ci : {"sandwich", "hessian", "bootstrap"}
        Interval of the ratings: the sandwich covariance ``H^-1 B H^-1 G / (G - 1)`` with ``B``
        the outer products of per-cluster score sums (R's ``sandwich::vcovCL``, HC0 with the
        cluster adjustment); the inverse information ``H^-1`` (model-based, BTm's SEs); or the
        percentile bootstrap of battles (of clusters with ``cluster=``), each replicate refitted.
    n_boot : int
        Bootstrap replicates (``ci="bootstrap"``).
    rng : int or Generator, optional
        Seed of the bootstrap; each chunk of replicates gets its own stream (see
        :func:`evalmix.core.parallel.parallel_map`), so the replicates do not depend on ``n_jobs``.
    conf_level : float
        Level of the intervals and joint coverage of the rank sets.
    reference : str, optional
        Model whose rating is fixed at ``anchor`` (its SE is 0); default: the mean rating is.
    scale : {"elo", "logit"}
        Ratings in Elo points or in logits.
    anchor : float, optional
        Rating of the reference model or mean rating (default 1000 on the Elo scale, 0 in logits).
    rank_sets : bool
        Compute the simultaneous rank sets and tie groups (:func:`evalmix.rank_sets_normal` on the
        ratings' covariance).  Their critical value for many models (beyond 12) comes from 50,000
        normal draws, which takes long for hundreds of models.
    n_jobs : int, optional
        Workers of the bootstrap (joblib; ``-1``: all cores).
    counts : sequence of str, optional
        Aggregated battles, BradleyTerry2's format (``BTm(cbind(win1, win2), player1, player2)``):
        the columns of the first model's wins and the second model's wins (and optionally the
        ties) per row of (``model_a``, ``model_b``); ``winner`` is not read.  With
        ``ties="drop"``, ``position=False``, ``ci="hessian"``, ``scale="logit"`` and ``reference``
        the first model, the ratings and SEs are ``BTabilities(BTm(...))``; ``position=True`` is
        BTm's home advantage (``~ player + at.home`` with the first model at home).
    weights : str, optional
        A column of whole numbers: each battle row counts that many times (a count per
        (model_a, model_b, winner) row).

    Returns
    -------
    BradleyTerryResult

    Raises
    ------
    DataError
        Bad battle table (see :func:`read_battles`); models that cannot be rated because the
        battles do not connect them, or because a group of models never loses (or never wins)
        against the rest (the maximum-likelihood ratings are infinite: a
        :class:`~evalmix.core.errors.SeparationError` naming both groups); no ties with
        ``ties="davidson"``; an unknown ``reference``; a position effect that the battles cannot
        tell from the ratings.

    Examples
    --------
    >>> rng = np.random.default_rng(1)
    >>> a = rng.integers(0, 3, 600); b = (a + rng.integers(1, 3, 600)) % 3
    >>> strength = np.array([0.0, 0.5, 1.0])
    >>> p_a = 1 / (1 + np.exp(strength[b] - strength[a]))
    >>> u = rng.random(600)
    >>> won = np.where(u < p_a - 0.1, "model_a", np.where(u < p_a + 0.1, "tie", "model_b"))
    >>> names = np.array(["small", "medium", "large"])
    >>> fit = bradley_terry(pd.DataFrame({"model_a": names[a], "model_b": names[b], "winner": won}))
    >>> fit.table["model"].tolist()
    ['large', 'medium', 'small']
    >>> bool(fit.table["estimate"].mean().round(6) == 1000)
    True
    """
    if ties not in _TIES:
        raise ValueError(f"ties must be one of {_TIES}, got {ties!r}")
    if ci not in _CIS:
        raise ValueError(f"ci must be one of {_CIS}, got {ci!r}")
    if scale not in ("elo", "logit"):
        raise ValueError(f"scale must be 'elo' or 'logit', got {scale!r}")
    if not 0 < conf_level < 1:
        raise ValueError(f"conf_level must be in (0, 1), got {conf_level}")
    if ci == "bootstrap" and (isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < 100):
        raise ValueError(f"n_boot must be a whole number >= 100 for bootstrap intervals, got {n_boot!r}")
    table = load_table(battles, ids=(model_a, model_b, cluster))
    where = f"{battles}: " if isinstance(battles, (str, Path)) else ""
    if cluster is not None and cluster not in table.columns:
        raise DataError(f"{where}no cluster column {cluster!r}; columns: {list(table.columns)[:20]}")
    log_coef = 0.0
    if counts is not None or weights is not None:
        coded, log_coef = _code_aggregated(table, where, model_a, model_b, winner,
                                 None if counts is None else tuple([counts] if isinstance(counts, str) else counts),
                                 weights, cluster)
    else:
        coded = _code_battles(table, where, model_a, model_b, winner, {"prompt": cluster})
    del table
    keep = coded.outcome != 2 if ties == "drop" else None
    ia, ib, outcome = coded.a, coded.b, coded.outcome
    clusters = coded.cluster
    if keep is not None:
        ia, ib, outcome = ia[keep], ib[keep], outcome[keep]
        clusters = None if clusters is None else np.unique(clusters[keep], return_inverse=True)[1]
    seen = np.zeros(len(coded.labels), bool)
    seen[ia] = seen[ib] = True
    if not seen.all():
        only_ties = coded.labels[~seen].tolist()
        raise DataError(f"model(s) {only_ties[:5]} have only ties, so with ties='drop' they cannot be rated; "
                        "use ties='davidson' or 'half', or leave them out")
    labels = coded.labels
    k, n = len(labels), len(ia)
    if k < 2:
        raise DataError("a leaderboard needs decisive battles between at least two models")
    if ties == "davidson" and not (outcome == 2).any():
        source = "the counts have" if counts is not None else f"column {winner!r} has"
        raise DataError(f"{source} no ties, so Davidson's tie parameter cannot be estimated; "
                        "use ties='drop'")
    if reference is not None and reference not in set(labels):
        raise DataError(f"reference model {reference!r} does not battle in column {model_a!r} or {model_b!r}")

    # many small solves and products: a multi-threaded BLAS only adds contention (as in the GLMM fit)
    with threadpool_limits(limits=1, user_api="blas"):
        # pool battles into counts per (ordered pair, outcome): one pass over the rows
        pair_code = ia * k + ib
        if k * k <= _DENSE_PAIRS_MAX:
            present = np.bincount(pair_code, minlength=k * k) > 0
            uniq = np.flatnonzero(present)
            lookup = np.cumsum(present) - 1
            pair_of = lookup[pair_code]
        else:
            uniq, pair_of = np.unique(pair_code, return_inverse=True)
        pair_counts = np.bincount(pair_of * 3 + outcome, minlength=3 * len(uniq)).reshape(-1, 3).astype(float)
        pairs = _Pairs(a=uniq // k, b=uniq % k, counts=pair_counts, k=k)
        _check_connected(labels, pairs, ties)
        if position:
            _check_position(pairs, k)
        fixed = int(np.searchsorted(labels, reference)) if reference is not None else 0
        model = _Model(k, fixed, position, ties)
        x0 = np.zeros(model.n_par)
        if model.davidson:
            x0[-1] = math.log(max(pair_counts[:, 2].sum(), 0.5) / n)
        x, ll, info, iterations, converged = _newton(model, pairs, x0)
        ll += log_coef
        theta, h, tau = model.unpack(x)
        if not converged or np.ptp(theta) > _DIVERGED:
            far = labels[np.argsort(theta)[[0, -1]]]
            raise SeparationError("the ratings did not converge to finite values: some models win (or lose) nearly "
                                  f"every battle against the others (the extremes: {far[1]!r} and {far[0]!r}); "
                                  "more battles are needed")

        # the anchored ratings as a linear map of the free parameters: ratings = A x (+ anchor)
        unit = ELO_PER_LOGIT if scale == "elo" else 1.0
        anchor_ = float(anchor) if anchor is not None else (1000.0 if scale == "elo" else 0.0)
        embed = np.zeros((k, model.n_par))
        embed[model.free, np.arange(k - 1)] = 1.0
        centre = np.eye(k) if reference is not None else np.eye(k) - 1.0 / k
        amap = unit * centre @ embed
        ratings = anchor_ + amap @ x

        inv = np.linalg.inv(info)
        groups: np.ndarray | None = None
        n_clusters = n
        if clusters is not None:
            groups = clusters
            n_clusters = int(groups.max()) + 1
            if n_clusters < 2:
                raise DataError(f"column {cluster!r} has a single cluster; the sandwich needs at least two")
        if ci == "hessian":
            cov_x = inv
        else:
            _, _, _, scores = model.evaluate(x, pairs, info=False)
            meat = _meat(model, pairs, scores, pair_of, outcome, groups)
            cov_x = inv @ meat @ inv * (n_clusters / (n_clusters - 1))
        vcov = amap @ cov_x @ amap.T
        z = stats.norm.isf((1 - conf_level) / 2)
        boot = None
        if ci == "bootstrap":
            reps = _bootstrap(model, pairs, x, pair_of, outcome, groups, int(n_boot), rng, n_jobs)
            ok = np.all(np.isfinite(reps), axis=1)
            if not ok.all():
                warnings.warn(f"{int((~ok).sum())} of {n_boot} bootstrap replicates had infinite ratings (a model "
                              "winning or losing all its resampled battles) and were left out", SamplingWarning,
                              stacklevel=2)
            reps = reps[ok]
            if len(reps) < 100:
                raise DataError(f"only {len(reps)} bootstrap replicates have finite ratings; more battles are needed")
            boot = anchor_ + reps @ amap.T
            vcov = np.cov(boot, rowvar=False)
            alpha = 1 - conf_level
            lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2], axis=0)
            se = boot.std(axis=0, ddof=1)
            extra_reps = reps[:, k - 1:]
        else:
            se = np.sqrt(np.clip(np.diag(vcov), 0, None))
            lo, hi = ratings - z * se, ratings + z * se
            extra_reps = None

    per_model = _model_counts(pairs, k)
    order = np.lexsort((labels, -ratings))
    table = pd.DataFrame({"model": labels[order], "estimate": ratings[order], "se": se[order],
                          "conf_low": lo[order], "conf_high": hi[order]})
    for name, col in per_model.items():
        table[name] = col[order].astype(np.int64)
    table["rank"] = stats.rankdata(-np.round(ratings[order], 9), method="min").astype(np.int64)
    vcov = vcov[np.ix_(order, order)]
    sets = None
    if rank_sets:
        sets = rank_sets_normal(table["estimate"], vcov, labels=table["model"].tolist(),
                                conf_level=conf_level)
        cols = ["model", "rank_low", "rank_high", "marginal_rank_low", "marginal_rank_high", "tie_group"]
        table = table.merge(sets.table[cols], on="model", how="left")
    params = _params(model, x, cov_x, extra_reps, unit, h, tau, conf_level)
    return BradleyTerryResult(
        table=table, params=params, vcov=vcov, rank_sets=sets, loglik=ll, n_battles=n, n_clusters=n_clusters,
        ties=ties, position=position, ci=ci, cluster=cluster, scale=scale, reference=reference, anchor=anchor_,
        conf_level=conf_level, n_boot=0 if boot is None else len(boot), iterations=iterations,
        boot=None if boot is None else boot[:, order])


def _check_connected(labels: np.ndarray, pairs: _Pairs, ties: str) -> None:
    """Finite ratings need every model reachable from every other along 'beat or tied' edges (Ford, 1957)."""
    k = len(labels)
    undirected = sparse.coo_matrix((np.ones(len(pairs.a)), (pairs.a, pairs.b)), shape=(k, k))
    n_weak, comp = connected_components(undirected, directed=False)
    if n_weak > 1:
        other = labels[comp != comp[0]][0]
        raise DataError(f"the battles fall into {n_weak} groups of models that never meet (e.g. {labels[0]!r} "
                        f"and {other!r}); ratings across groups are not comparable")
    win_a, win_b, tie = (pairs.counts > 0).T
    ia, ib = pairs.a, pairs.b
    src = np.concatenate([ia[win_a], ib[win_b], ia[tie], ib[tie]])  # winner; ties count both ways
    dst = np.concatenate([ib[win_a], ia[win_b], ib[tie], ia[tie]])  # loser
    beat = sparse.coo_matrix((np.ones(len(src)), (dst, src)), shape=(k, k))
    n_strong, comp = connected_components(beat, directed=True, connection="strong")
    if n_strong > 1:
        # a strongly connected component with no loser -> winner edge out of it never loses to the rest
        cond = sparse.coo_matrix((np.ones(len(src)), (comp[dst], comp[src])), shape=(n_strong, n_strong)).tocsr()
        cond.setdiag(0)
        cond.eliminate_zeros()
        top = int(np.flatnonzero(np.asarray(cond.sum(axis=1)).ravel() == 0)[0])
        bottom = int(np.flatnonzero(np.asarray(cond.sum(axis=0)).ravel() == 0)[0])
        members = labels[comp == top].tolist()
        losers = labels[comp == bottom].tolist()
        what = "wins or ties" if ties != "drop" else "wins"
        raise SeparationError(
            f"separation: model(s) {members[:5]} never lose a battle to the other models ({what} only) and "
            f"model(s) {losers[:5]} never win one against them, so their maximum-likelihood ratings are "
            "infinite; more battles are needed"
            + (" (or keep ties: ties='davidson' or 'half')" if ties == "drop" else ""))


def _check_position(pairs: _Pairs, k: int) -> None:
    """The position effect is not identified when ratings alone can shift every battle towards its
    first model by the same amount: ratings ``c`` with ``c_a - c_b = 1`` for every pair that battled
    (e.g. every pair shown in one order only, along a chain).  Least squares over the ratings on the
    pairs' design tells: a zero residual means ``h`` is aliased."""
    m = np.bincount(pairs.a * k + pairs.b, minlength=k * k).reshape(k, k).astype(float)
    lap = np.diag(m.sum(0) + m.sum(1)) - m - m.T  # B'B of the pairs' difference design B
    rhs = np.bincount(pairs.a, minlength=k) - np.bincount(pairs.b, minlength=k)  # B'1
    c = np.linalg.lstsq(lap, rhs.astype(float), rcond=None)[0]
    resid = c[pairs.a] - c[pairs.b] - 1.0
    if np.sum(resid**2) < 1e-8 * len(pairs.a):
        raise DataError("the first-shown advantage cannot be told apart from the ratings in these battles (the "
                        "pairs are shown in one order only); use position=False")


def _meat(model: _Model, pairs: _Pairs, scores: np.ndarray | None, pair_of: np.ndarray, outcome: np.ndarray,
          groups: np.ndarray | None) -> np.ndarray:
    """Sum over clusters of the outer products of their score sums (the sandwich's B)."""
    k = model.k
    assert scores is not None  # evaluate(info=False) returns them
    score_d, score_t = scores  # (n_pairs, 3) each
    if groups is None:  # every battle its own cluster: battles of one (pair, outcome) share a score
        n_g = pairs.counts.ravel()
        live = n_g > 0
        rows = np.flatnonzero(live)
        weight = np.sqrt(n_g[live])
        sd, st = score_d.ravel()[live] * weight, score_t.ravel()[live] * weight
        pa, pb = pairs.a[rows // 3], pairs.b[rows // 3]
        n_rows = len(rows)
        r = np.arange(n_rows)
    else:
        sd, st = score_d[pair_of, outcome], score_t[pair_of, outcome]
        pa, pb = pairs.a[pair_of], pairs.b[pair_of]
        r = groups
        n_rows = int(groups.max()) + 1
    return _outer_sums(r, n_rows, pa, pb, sd, st, k)[np.ix_(model.layout(), model.layout())]


# score sums of this many (cluster, parameter) cells are formed at once (16 MB)
_MEAT_BLOCK = 2**21


def _outer_sums(rows: np.ndarray, n_rows: int, pa: np.ndarray, pb: np.ndarray, sd: np.ndarray, st: np.ndarray,
                k: int) -> np.ndarray:
    """``sum_r s_r s_r'`` over rows r (clusters) of the score sums ``s_r`` in the full layout
    (theta_1..theta_K, h, log nu): each battle adds ``sd`` to its first model and to ``h``,
    ``-sd`` to its second model and ``st`` to ``log nu``.  Dense blocks of clusters, filled by
    ``np.bincount`` and multiplied by BLAS, keep the memory bounded."""
    width = k + 2
    block = max(1, _MEAT_BLOCK // width)
    order = np.argsort(rows, kind="stable")
    sorted_rows = rows[order]
    meat = np.zeros((width, width))
    for start in range(0, n_rows, block):
        m = min(block, n_rows - start)
        lo, hi = np.searchsorted(sorted_rows, [start, start + m])
        idx = order[lo:hi]
        r = sorted_rows[lo:hi] - start
        s_d, s_t = sd[idx], st[idx]
        dense = (np.bincount(r * width + pa[idx], s_d, m * width)
                 - np.bincount(r * width + pb[idx], s_d, m * width)).reshape(m, width)
        dense[:, k] = np.bincount(r, s_d, m)
        dense[:, k + 1] = np.bincount(r, s_t, m)
        meat += dense.T @ dense
    return meat


def _model_counts(pairs: _Pairs, k: int) -> dict[str, np.ndarray]:
    w, lo, t = pairs.counts[:, 0], pairs.counts[:, 1], pairs.counts[:, 2]
    wins = np.bincount(pairs.a, w, k) + np.bincount(pairs.b, lo, k)
    losses = np.bincount(pairs.a, lo, k) + np.bincount(pairs.b, w, k)
    tied = np.bincount(pairs.a, t, k) + np.bincount(pairs.b, t, k)
    return {"n_battles": wins + losses + tied, "wins": wins, "losses": losses, "ties": tied}


def _params(model: _Model, x: np.ndarray, cov_x: np.ndarray, reps: np.ndarray | None, unit: float, h: float,
            tau: float, conf_level: float) -> pd.DataFrame:
    z = stats.norm.isf((1 - conf_level) / 2)
    alpha = 1 - conf_level
    rows = []
    j = model.k - 1
    if model.position:
        se = math.sqrt(cov_x[j, j]) * unit
        if reps is not None:
            lo, hi = np.quantile(reps[:, 0] * unit, [alpha / 2, 1 - alpha / 2])
            se = float(np.std(reps[:, 0] * unit, ddof=1))
        else:
            lo, hi = h * unit - z * se, h * unit + z * se
        rows.append({"term": "first_position", "estimate": h * unit, "se": se, "conf_low": lo, "conf_high": hi})
        j += 1
    if model.davidson:
        nu = math.exp(tau)
        se_log = math.sqrt(cov_x[j, j])
        if reps is not None:
            lo, hi = np.exp(np.quantile(reps[:, -1], [alpha / 2, 1 - alpha / 2]))
            se_log = float(np.std(reps[:, -1], ddof=1))
        else:
            lo, hi = math.exp(tau - z * se_log), math.exp(tau + z * se_log)
        rows.append({"term": "tie_nu", "estimate": nu, "se": nu * se_log, "conf_low": lo, "conf_high": hi})
    return pd.DataFrame(rows, columns=["term", "estimate", "se", "conf_low", "conf_high"])


# ----------------------------------------------------------------------------------------------
# the bootstrap: resampled counts, each replicate refitted from the estimate

_BOOT_CHUNK = 50
# replicates are refitted to 1e-7 logits (2e-5 Elo points), far below their spread
_BOOT_TOL = 1e-7


def _bootstrap(model: _Model, pairs: _Pairs, x: np.ndarray, pair_of: np.ndarray, outcome: np.ndarray,
               groups: np.ndarray | None, n_boot: int, seed: int | np.random.Generator | None,
               n_jobs: int | None) -> np.ndarray:
    n_cells = 3 * len(pairs.a)
    cell = pair_of * 3 + outcome
    if groups is None:
        # resampling n battles = a multinomial draw of the (pair, outcome) counts
        incidence = None
    else:
        n_clusters = int(groups.max()) + 1
        incidence = sparse.csr_matrix((np.ones(len(cell)), (groups, cell)), shape=(n_clusters, n_cells))
    sizes = [min(_BOOT_CHUNK, n_boot - s) for s in range(0, n_boot, _BOOT_CHUNK)]
    task = partial(_boot_chunk, model=model, pairs=pairs, x=x, incidence=incidence)
    parts = parallel_map(task, sizes, seed=rng_of(seed), n_jobs=n_jobs)
    return np.vstack(parts)


def _boot_chunk(size: int, seq: np.random.SeedSequence, *, model: _Model, pairs: _Pairs, x: np.ndarray,
                incidence: sparse.csr_matrix | None) -> np.ndarray:
    with threadpool_limits(limits=1, user_api="blas"):
        return _boot_fits(size, np.random.default_rng(seq), model, pairs, x, incidence)


def _boot_fits(size: int, rng: np.random.Generator, model: _Model, pairs: _Pairs, x: np.ndarray,
               incidence: sparse.csr_matrix | None) -> np.ndarray:
    flat = pairs.counts.ravel()
    total = int(flat.sum())
    out = np.full((size, len(x)), np.nan)
    for r in range(size):
        if incidence is None:
            counts = rng.multinomial(total, flat / total).astype(float)
        else:
            m = incidence.shape[0]
            counts = incidence.T @ rng.multinomial(m, np.full(m, 1.0 / m)).astype(float)
        rep = _Pairs(a=pairs.a, b=pairs.b, counts=np.asarray(counts, float).reshape(-1, 3), k=pairs.k)
        xr, _, _, _, converged = _newton(model, rep, x, tol=_BOOT_TOL, final=False)
        theta, _, _ = model.unpack(xr)
        if converged and np.ptp(theta) <= _DIVERGED and np.all(np.isfinite(xr)):
            out[r] = xr
    return out

