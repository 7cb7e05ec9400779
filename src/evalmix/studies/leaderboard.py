"""Leaderboards with simultaneous rank sets and tie groups.

A leaderboard answers "which model is better than which", for all models at once.  The rank sets
here follow the construction of Mogstad, Romano, Shaikh and Wilhelm (2024, *Review of Economic
Studies*, "Inference for ranks"): take simultaneous confidence intervals for all K (K - 1) / 2
pairwise differences ``theta_j - theta_k`` (a max-type critical value ``c``: with probability
``conf_level`` every studentized difference ``|d_hat - d| / se`` is at most ``c``), call model j
*separated above* model k when ``(d_hat_jk) / se_jk > c``, and give model j the rank set::

    [1 + #{k separated above j},  K - #{k separated below j}]

On the event that all pairwise intervals cover, every separation is a true ordering, so every
model's true rank lies in its set: the sets hold *jointly* with probability at least
``conf_level``.  The marginal rank interval of a single model uses the critical value of its own
K - 1 comparisons only (shorter, but valid for one model at a time).

The critical value comes from one of three sources:

- :func:`rank_sets`: an item-level cluster bootstrap of the runs table (the max over pairs of the
  studentized bootstrap deviations);
- :func:`rank_sets_glmm` and :func:`rank_sets_normal`: a joint normal distribution of the estimates
  (the equicoordinate quantile of the pairwise differences' multivariate normal, as emmeans'
  ``adjust = "mvt"``; with independent, equally precise estimates this is Tukey's
  ``qtukey(conf_level, K) / sqrt(2)``);
- :func:`rank_sets_posterior`: posterior draws (a simultaneous credible band of the differences);
- :func:`rank_sets_draws`: any draws matrix, bootstrap replicates or posterior draws, by the max-t
  method (the quantile of the draws' largest studentized pairwise deviation).

Tie groups are the maximal sets of models that are pairwise *not* separated (the maximal cliques
of the "not separated" graph, as a compact letter display): models sharing a letter cannot be
told apart at the stated level.
"""

from __future__ import annotations

import string
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import special, stats

from ..core.arguments import check_arguments, check_choice
from ..data import slicing as sl
from ..core import tables
from ..stats.multiplicity import mvn_box_probability, mvn_box_quantile
from ..core.result import Result, frame_records
from ..data.pushdown import counts_in_engine
from ..data.runs import RunsData
from ..core.errors import DataError, DataWarning
from ..core.seeds import accepts_seed
from ..mixed.fitted import FittedModel, warn_divergent
from ..mixed.grid import level_means
from .ranking import cell_sums, grid_groups
from ..data.status import scored_rows

if TYPE_CHECKING:
    from ..bayes.result import BayesGlmerResult

__all__ = ["RankSets", "rank_sets", "rank_sets_draws", "rank_sets_glmm", "rank_sets_normal",
           "rank_sets_posterior", "tie_groups"]


# ----------------------------------------------------------------------------------------------
# the result


@dataclass(frozen=True, eq=False, repr=False)
class RankSets(Result):
    """A leaderboard with simultaneous rank sets, marginal rank intervals and tie groups.

    Attributes
    ----------
    table : DataFrame
        One row per model (per slice), best first: slice columns, ``model``, ``estimate``, ``se``,
        ``conf_low``/``conf_high`` (marginal interval of the estimate), ``rank`` (observed, 1 =
        best, ties share the best rank), ``rank_low``/``rank_high`` (the simultaneous rank set:
        all models' true ranks lie in their sets with probability >= ``conf_level``),
        ``marginal_rank_low``/``marginal_rank_high`` (each model's own rank interval) and
        ``tie_group`` (letters of the tie groups the model belongs to; "a" holds the best model).
        GLMM and posterior sets add ``accuracy`` (the inverse logit of ``estimate``).
    pairs : DataFrame
        One row per model pair: slice columns, ``model_a``, ``model_b``, ``estimate`` (a - b),
        ``se``, ``conf_low``/``conf_high`` (simultaneous), ``statistic`` (estimate / se),
        ``p_adjusted`` (single-step max-type adjusted p-value), ``separated`` and
        ``critical_value``.
    groups : DataFrame
        One row per tie group: slice columns, ``group`` (letter), ``models`` (tuple, best first)
        and ``size``.
    by : tuple of str
        Slice columns.
    conf_level : float
        Joint coverage of the rank sets.
    method : str
        ``"bootstrap"``, ``"normal"``, ``"glmm"``, ``"posterior"`` or ``"max-t"`` (draws).
    """

    table: pd.DataFrame
    pairs: pd.DataFrame
    groups: pd.DataFrame
    by: tuple[str, ...]
    conf_level: float
    method: str

    def _title(self) -> str:
        return f"Leaderboard with simultaneous rank sets ({self.method})"

    def _header(self) -> list[str]:
        return [f"rank_low-rank_high: joint {self.conf_level:.0%} rank sets; marginal_rank_*: each model's own "
                f"{self.conf_level:.0%} interval; models sharing a tie_group letter are not separable"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        groups = self.groups.assign(models=self.groups["models"].map(list))
        return super().to_dict() | {"pairs": frame_records(self.pairs), "groups": frame_records(groups),
                                    "conf_level": self.conf_level, "method": self.method}

    def display_frame(self, digits: int = tables.DIGITS) -> pd.DataFrame:
        """The leaderboard as printed in a paper: estimate with its interval (each number to at
        least ``digits`` significant digits, as R's ``format``), rank sets as text."""
        t = self.table
        pct = f"{100 * self.conf_level:g}%"
        value = "accuracy" if "accuracy" in t.columns else "estimate"
        out = t[list(self.by) + ["model"]].copy()
        out[value] = [c.strip() for c in tables.r_format(t[value].to_numpy(dtype=float), digits)]
        if value == "estimate":
            low = tables.r_format(t["conf_low"].to_numpy(dtype=float), digits)
            high = tables.r_format(t["conf_high"].to_numpy(dtype=float), digits)
            out[f"{pct} CI"] = [f"[{lo.strip()}, {hi.strip()}]" for lo, hi in zip(low, high)]
        out["rank"] = t["rank"]
        out["rank set"] = [_span(lo, hi) for lo, hi in zip(t["rank_low"], t["rank_high"])]
        out["marginal"] = [_span(lo, hi) for lo, hi in zip(t["marginal_rank_low"], t["marginal_rank_high"])]
        out["tie group"] = t["tie_group"]
        return out

    def to_latex(self, caption: str | None = None, label: str | None = None,
                 digits: int = tables.LATEX_DIGITS) -> str:
        """The leaderboard as a LaTeX table (rank sets as ``lo-hi``, tie groups as letters)."""
        if caption is None:
            caption = (f"Leaderboard with simultaneous {100 * self.conf_level:g}% rank sets "
                       f"({self.method}); models sharing a letter are not separable.")
        return tables.to_latex(self.display_frame(digits), caption=caption, label=label, digits=digits)

    def to_markdown(self, digits: int = tables.DIGITS) -> str:
        """The leaderboard as a Markdown table."""
        return tables.to_markdown(self.display_frame(digits), digits=digits)


def _span(lo: int, hi: int) -> str:
    return f"{lo}" if lo == hi else f"{lo}-{hi}"


# ----------------------------------------------------------------------------------------------
# tie groups


def _maximal_cliques(adj: np.ndarray, limit: int | None = None) -> list[frozenset[int]] | None:
    """Maximal cliques of an undirected graph (Bron-Kerbosch with pivoting).

    The cliques come out in the order of the recursive algorithm on Python sets (the order tie
    groups with the same best and worst member keep), but the pivot's score, the size of a
    vertex's neighbourhood within P, is counted on integers used as bit sets (one C loop over
    machine words instead of a set intersection per vertex), and the recursion runs on an explicit
    stack, so a clique of thousands of models (a leaderboard nobody can separate) is no deeper than
    Python's recursion limit allows.  With ``limit``, None once more than ``limit`` cliques are
    found (their number can grow exponentially with the vertices).
    """
    k = len(adj)
    nbrs = [{int(v) for v in np.flatnonzero(adj[i])} - {i} for i in range(k)]
    packed = np.packbits(np.asarray(adj, bool), axis=1, bitorder="little")
    bits = [int.from_bytes(packed[i].tobytes(), "little") & ~(1 << i) for i in range(k)]
    out: list[frozenset[int]] = []

    def frame(r: set[int], p: set[int], pbits: int, x: set[int]) -> list:
        # max(p | x, key=|nbrs[u] & p|): the first vertex with the largest score, in set order
        pivot, most = -1, -1
        for u in p | x:
            n = (bits[u] & pbits).bit_count()
            if n > most:
                pivot, most = u, n
        return [r, p, pbits, x, list(p - nbrs[pivot]), 0]

    stack = [frame(set(), set(range(k)), (1 << k) - 1, set())] if k else []
    if not k:
        return [frozenset()]
    while stack:
        f = stack[-1]
        r, p, pbits, x, cand, at = f
        if at == len(cand):
            stack.pop()
            continue
        v = cand[at]
        r2, p2, x2 = r | {v}, p & nbrs[v], x & nbrs[v]
        f[1], f[2], f[3], f[5] = p - {v}, pbits & ~(1 << v), x | {v}, at + 1
        if not p2 and not x2:
            out.append(frozenset(r2))
            if limit is not None and len(out) > limit:
                return None
        elif p2:
            stack.append(frame(r2, p2, pbits & bits[v], x2))
        # p2 empty and x2 not: r2 extends to a clique found before, nothing to do
    return out


def _letter(i: int) -> str:
    alphabet = string.ascii_lowercase + string.ascii_uppercase
    return alphabet[i] if i < len(alphabet) else f"g{i + 1}"


def tie_groups(separated: np.ndarray, order: Sequence[int] | np.ndarray, *,
               max_groups: int | None = None) -> tuple[list[tuple[int, ...]], list[str]]:
    """Tie groups from a matrix of pairwise separations.

    Parameters
    ----------
    separated : (K, K) bool array
        ``separated[j, k]`` is True when models j and k are told apart (in either direction).
    order : sequence of int
        The models from best to worst (positions in the leaderboard).
    max_groups : int, optional
        Refuse (a DataError) when there are more tie groups than this.  Tie groups are the maximal
        cliques of the "not separated" graph; on a leaderboard they are about as many as the
        models, but when many models are weakly separated (many models, few items) their number
        can grow exponentially.

    Returns
    -------
    groups : list of tuples of model indices (best first), ordered by their best member, then their
        worst
    letters : list of str, per model the letters of the groups it belongs to

    Raises
    ------
    DataError
        More than ``max_groups`` tie groups.

    Examples
    --------
    >>> sep = np.array([[0, 0, 1], [0, 0, 1], [1, 1, 0]], bool)
    >>> tie_groups(sep, [0, 1, 2])
    ([(0, 1), (2,)], ['a', 'a', 'b'])
    """
    sep = np.asarray(separated, bool)
    together = ~(sep | sep.T)
    pos = np.empty(len(order), int)
    pos[np.asarray(order, int)] = np.arange(len(order))
    found = _maximal_cliques(together, max_groups)
    if found is None:
        raise DataError(f"more than max_groups={max_groups} tie groups: the models' separations do "
                        f"not form a readable letter display")
    cliques = [tuple(sorted(c, key=lambda i: pos[i])) for c in found]
    cliques.sort(key=lambda c: (pos[c[0]], pos[c[-1]]))
    letters = [""] * len(sep)
    for g, members in enumerate(cliques):
        for i in members:
            letters[i] += _letter(g)
    return cliques, letters


# ----------------------------------------------------------------------------------------------
# the common core: estimates, pairwise SEs and critical values -> table rows


def _max_tie_groups(k: int) -> int:
    """Most tie groups shown for k models: a leaderboard whose separations follow its order has at
    most k; beyond 10 k (at least 100) a letter display is unreadable and slow to find."""
    return max(100, 10 * k)


def _pair_index(k: int) -> tuple[np.ndarray, np.ndarray]:
    return np.triu_indices(k, 1)


def _min_rank(est: np.ndarray) -> np.ndarray:
    return stats.rankdata(-est, method="min").astype(int)


def _z(d: np.ndarray, se: np.ndarray) -> np.ndarray:
    """d / se; a difference with zero SE is infinitely significant unless it is zero itself."""
    with np.errstate(divide="ignore", invalid="ignore"):
        z = np.where(se > 0, d / np.where(se > 0, se, 1.0), np.sign(d) * np.inf)
    return np.nan_to_num(z, nan=0.0, posinf=np.inf, neginf=-np.inf)


def _assemble(labels: list, base: dict, est: np.ndarray, se: np.ndarray, conf_low: np.ndarray,
              conf_high: np.ndarray, d_se: np.ndarray, crit: float, crit_marg: np.ndarray,
              p_adj: np.ndarray, extra: dict[str, np.ndarray] | None = None
              ) -> tuple[list[dict], pd.DataFrame, list[dict]]:
    """Leaderboard rows, the pair table and group rows of one slice.

    Everything is computed on K x K matrices and pair vectors (no loop over pairs), so a
    leaderboard of a thousand models (half a million pairs) takes seconds.
    """
    k = len(labels)
    a, b = _pair_index(k)
    d = est[a] - est[b]
    z = _z(d, d_se)
    # zm[j, m]: studentized difference j minus m (antisymmetric)
    zm = np.zeros((k, k))
    zm[a, b] = z
    zm[b, a] = -z
    above = zm > crit  # above[j, m]: j separated above m (simultaneously)
    # with each model's own critical value: j is above m when either model's interval says so
    above_m = zm > np.minimum(crit_marg[:, None], crit_marg[None, :])
    n_above, n_below = above.sum(0), above.sum(1)
    order = np.argsort(-est, kind="stable")
    try:
        groups, letters = tie_groups(above | above.T, order, max_groups=_max_tie_groups(k))
    except DataError:
        where = ", ".join(f"{b}={v!r}" for b, v in base.items())
        warnings.warn(f"{where + ': ' if where else ''}the {k} models form more than "
                      f"{_max_tie_groups(k)} tie groups (many models are separated from some of "
                      f"their neighbours and not from others); tie groups are left out (tie_group "
                      f"is empty), the rank sets and the pairs table are complete", DataWarning,
                      stacklevel=3)
        groups, letters = [], [""] * k
    obs = _min_rank(est)
    m_low, m_high = 1 + above_m.sum(0), k - above_m.sum(1)
    rows = []
    for j in order:
        row = base | {"model": labels[j], "estimate": est[j], "se": se[j], "conf_low": conf_low[j],
                      "conf_high": conf_high[j]}
        if extra:
            row |= {name: vals[j] for name, vals in extra.items()}
        row |= {"rank": int(obs[j]), "rank_low": int(1 + n_above[j]), "rank_high": int(k - n_below[j]),
                "marginal_rank_low": int(m_low[j]), "marginal_rank_high": int(m_high[j]),
                "tie_group": letters[j]}
        rows.append(row)
    lab = pd.Series(labels)
    pairs = pd.DataFrame({name: [value] * len(a) for name, value in base.items()}
                         | {"model_a": lab.iloc[a].to_numpy(), "model_b": lab.iloc[b].to_numpy(),
                            "estimate": d, "se": d_se, "conf_low": d - crit * d_se,
                            "conf_high": d + crit * d_se, "statistic": z, "p_adjusted": p_adj,
                            "separated": np.abs(z) > crit, "critical_value": np.full(len(a), crit)})
    group_rows = [base | {"group": _letter(g), "models": tuple(labels[i] for i in members),
                          "size": len(members)} for g, members in enumerate(groups)]
    return rows, pairs, group_rows


def _finish(parts: list[tuple[list, pd.DataFrame, list]], by: list[str], conf_level: float,
            method: str) -> RankSets:
    rows = [r for p in parts for r in p[0]]
    pairs = pd.concat([p[1] for p in parts], ignore_index=True)
    groups = [r for p in parts for r in p[2]]
    group_frame = pd.DataFrame(groups) if groups else pd.DataFrame(columns=[*by, "group", "models", "size"])
    return RankSets(table=pd.DataFrame(rows), pairs=pairs, groups=group_frame,
                    by=tuple(by), conf_level=conf_level, method=method)


# ----------------------------------------------------------------------------------------------
# max-type critical values from draws (bootstrap replicates or posterior draws)


#: A pair SE at most this multiple of the draws' magnitude is a rounding residue of a difference
#: that is the same in every draw (e.g. ``(5 * 2) / (5 * 3)`` against ``2 / 3``): it counts as 0.
_SE_RESIDUE = 1e-12


def _pair_maxima(draws: np.ndarray, centre: np.ndarray | None, d_se: np.ndarray | None = None
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per draw, the largest studentized pairwise deviation over all pairs and over each model's pairs.

    The statistic of pair (i, m), i < m, in a draw is ``|(x_i - x_m) - (c_i - c_m)| / se_im``
    (``c`` = ``centre``, or 0).  The pairs are visited one model row at a time, ``i`` against all
    ``m > i`` (the order of :func:`numpy.triu_indices`), so memory is draws x K rather than
    draws x K^2 / 2; every element is computed with the same operations as on the full pair
    matrix (numpy may sum a narrower matrix's columns in another order, so an estimated SE can
    differ in its last bits).  ``d_se`` (the pair SEs in that order) is taken as given, or estimated
    as the SD of the draws' differences; a pair with no spread (its SE at most ``_SE_RESIDUE`` times
    the draws' magnitude) carries no deviation.

    Returns the pair SEs, the overall maxima (n_draws,) and the per-model maxima (n_draws, K).
    """
    n, k = draws.shape
    scale = max(1.0, float(np.abs(draws).max())) if draws.size else 1.0
    own = np.zeros((n, k))
    ses = []
    start = 0
    for i in range(k - 1):
        diff = draws[:, [i]] - draws[:, i + 1:]
        if d_se is None:
            se = diff.std(axis=0, ddof=1)
            se = np.where(se > _SE_RESIDUE * scale, se, 0.0)
        else:
            se = d_se[start:start + k - 1 - i]
        start += k - 1 - i
        # in place, with the operations of |(x_i - x_m) - (c_i - c_m)| / se on the full matrix
        t = diff if centre is None else np.subtract(diff, centre[i] - centre[i + 1:], out=diff)
        np.abs(t, out=t)
        live = se > 0
        if live.all():
            np.divide(t, se, out=t)
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                t[:, live] /= se[live]
            t[:, ~live] = 0.0
        own[:, i] = np.maximum(own[:, i], t.max(axis=1))
        np.maximum(own[:, i + 1:], t, out=own[:, i + 1:])
        ses.append(se)
    pair_se = np.concatenate(ses) if ses else np.zeros(0)
    return pair_se, own.max(axis=1) if k else np.zeros(n), own


def _draw_critical(draws: np.ndarray, centre: np.ndarray, conf_level: float
                   ) -> tuple[np.ndarray, float, np.ndarray, np.ndarray]:
    """Pair SEs, the simultaneous and per-model critical values and adjusted p-values from draws.

    ``draws`` are (n_draws, K) replicates of the K estimates, ``centre`` the K point estimates.
    The statistic of a draw is ``max |(d* - d_hat) / se|`` over the pairs (over the pairs of one
    model for its marginal critical value); its ``conf_level`` quantile (the next order statistic
    up) is the critical value.
    """
    k = draws.shape[1]
    a, b = _pair_index(k)
    d_se, t_max, own = _pair_maxima(draws, centre)
    crit = float(np.quantile(t_max, conf_level, method="higher"))
    crit_marg = np.quantile(own, conf_level, axis=0, method="higher")
    z = np.abs(_z(centre[a] - centre[b], d_se))
    # share of draws whose maximum reaches each pair's statistic (+1 for the observed table)
    reach = len(t_max) - np.searchsorted(np.sort(t_max), z, side="left")
    p_adj = (1 + reach) / (len(t_max) + 1)
    return d_se, crit, crit_marg, p_adj


# ----------------------------------------------------------------------------------------------
# item bootstrap


def _spread(boot: np.ndarray) -> np.ndarray:
    """Bootstrap SD per column, exactly 0 where it is the rounding residue of a constant column."""
    sd = boot.std(axis=0, ddof=1)
    scale = max(1.0, float(np.abs(boot).max())) if boot.size else 1.0
    return np.where(sd > _SE_RESIDUE * scale, sd, 0.0)


def _progress(show: bool, total: int, desc: str) -> Any:
    """A tqdm bar (as :func:`evalmix.core.parallel.parallel_map` shows), or None when not asked for."""
    if not show:
        return None
    import sys

    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, file=sys.stderr)  # stdout keeps the results


@accepts_seed
def rank_sets(data: RunsData, by: str | Sequence[str] | None = None, *, model: str | None = None,
              item: str | None = None, run: str | None = None, outcome: str | None = None,
              status: str | None = None, n_boot: int = 2000, conf_level: float = 0.95,
              rng: int | np.random.Generator | None = None, chunk_size: int = 500, missing: str = "raise",
              progress: bool = False) -> RankSets:
    """Simultaneous rank sets and tie groups of the models of a runs table, by item bootstrap.

    Items are resampled with replacement, keeping all models and runs of a drawn item together
    (the models are compared on the same items, and runs of an item are not independent).  Each
    replicate recomputes every model's accuracy; the critical value is the ``conf_level`` quantile
    of the largest studentized deviation of the pairwise differences over all pairs (over one
    model's pairs for its marginal interval), as in Mogstad et al. (2024).  See the module notes.

    Parameters
    ----------
    data : DataFrame or path
        Long runs table (0/1 outcomes, scores in [0, 1] or k-of-n counts).
    by : str or list of str, optional
        Slice columns; one leaderboard per slice.
    model, item, run, outcome : str, optional
        Column names (defaults from :func:`evalmix.read_runs` roles, else conventional names).
    status : str, optional
        Sample status column (see :func:`evalmix.data.status.scored_rows`); rows that are not ``"ok"``
        are left out (the accuracy is that of the scored samples).  Defaults to ``"status"`` when
        the table has it.
    n_boot : int
        Bootstrap replicates.
    conf_level : float
        Joint coverage of the rank sets (and the level of the marginal intervals).
    rng : int or numpy.random.Generator, optional
        Random numbers: a seed or a numpy Generator.
    chunk_size : int
        Replicates drawn at once (memory: ``chunk_size`` x items).
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).
    progress : bool
        Show a progress bar over chunks of replicates (tqdm, as :func:`evalmix.core.parallel.parallel_map`).

    Returns
    -------
    RankSets

    Raises
    ------
    DataError
        Fewer than two models or two items in a slice, or a model without a scored answer to an
        item.

    Notes
    -----
    The work is linear in the rows (one pass to sum successes per item and model) plus
    ``n_boot`` x items x models for the replicates and ``n_boot`` x K^2 / 2 for the pairs; 1,000
    models x 500 items x 5 runs with 1,000 replicates take well under a minute (see
    ``docs/performance.md``).  A bootstrap SE (of a model or of a pair) that is a rounding residue
    of a value equal in every replicate (at most 1e-12 of the values' magnitude) is exactly 0.

    Examples
    --------
    >>> import evalmix
    >>> df = evalmix.simulate.glmm_runs(4, 80, 2, model_effects=[-1.5, 0, 0.1, 1.5], rng=3)
    >>> rs = rank_sets(df, n_boot=500, rng=1)
    >>> rs.table[["model", "rank_low", "rank_high", "tie_group"]].values.tolist()
    [['M4', 1, 1, 'a'], ['M2', 2, 3, 'b'], ['M3', 2, 3, 'b'], ['M1', 4, 4, 'c']]
    """
    check_arguments(n_boot=n_boot, conf_level=conf_level, rng=rng, chunk_size=chunk_size, missing=missing)
    if status is None:  # a lazy table is reduced to k-of-n counts by its own engine
        pushed = counts_in_engine(data, model=model, item=item, run=run, outcome=outcome)
        data, run, outcome = (pushed, None, None) if pushed is not data else (data, run, outcome)
    if n_boot < 10:
        raise ValueError(f"n_boot must be >= 10, got {n_boot}")
    by_ = sl.as_list(by)
    data = scored_rows(data, status=status)
    # the item bootstrap pools each item's runs: a table of one run (no run column) is fine
    data, cols = sl.resolve(data, item=item, run=run, outcome=outcome, model=model, need_model=True,
                            need_run=False, by=by_, missing=missing)
    models = sl.levels(data[cols.model])
    slices = list(sl.groups(data, by_))
    seeds = sl.rng_of(rng).spawn(len(slices))
    parts = []
    bar = _progress(progress, len(slices) * -(-n_boot // chunk_size), "rank sets")
    try:
        for (key, sub), sseed in zip(slices, seeds):
            where = sl.slice_label(by_, key)
            present = set(pd.unique(sub[cols.model]))  # once per slice, not once per model
            slice_models = [m for m in models if m in present]
            if len(slice_models) < 2:
                raise DataError(f"{where}a leaderboard needs at least two models")
            items = sl.levels(sub[cols.item])
            if len(items) < 2:
                # every replicate would redraw the same item: zero spread, and every difference
                # would look certain
                raise DataError(f"{where}column {cols.item!r} has {len(items)} item; the item "
                                f"bootstrap needs at least two items to say how ranks vary with them")
            succ, tri = cell_sums(sub, cols, cols.role("item"), items, slice_models)
            absent = np.argwhere(tri == 0)
            if len(absent):
                i, m = absent[0]
                bad = items[i]
                bad = bad.item() if hasattr(bad, "item") else bad
                raise DataError(f"{where}model {slice_models[m]!r} has no scored "
                                f"answer to item {bad!r}; the item bootstrap "
                                f"needs every model on every item")
            rng = np.random.default_rng(sseed)
            n_items = succ.shape[0]
            reps = []
            for start in range(0, n_boot, chunk_size):
                w = rng.multinomial(n_items, np.full(n_items, 1.0 / n_items),
                                    size=min(chunk_size, n_boot - start)).astype(float)
                reps.append((w @ succ) / (w @ tri))
                if bar is not None:
                    bar.update(1)
            boot = np.vstack(reps)
            est = succ.sum(0) / tri.sum(0)
            d_se, crit, crit_marg, p_adj = _draw_critical(boot, est, conf_level)
            alpha = 1 - conf_level
            lo, hi = np.quantile(boot, [alpha / 2, 1 - alpha / 2], axis=0)
            parts.append(_assemble(slice_models, dict(zip(by_, key)), est, _spread(boot), lo, hi,
                                   d_se, crit, crit_marg, p_adj))
    finally:
        if bar is not None:
            bar.close()
    return _finish(parts, by_, conf_level, "bootstrap")


# ----------------------------------------------------------------------------------------------
# joint normal estimates (GLMM, published estimates with SEs)


# Up to this many models the critical values are the deterministic multivariate-normal quantiles
# of evalmix.multiplicity (their cost grows with the number of pairs, ~K^2, in ~K^2 dimensions);
# beyond it they come from a fixed, seeded set of draws of the K estimates.
_EXACT_MAX_MODELS = 12
_N_NORMAL_DRAWS = 50_000
_NORMAL_SEED = 20240601


def _abs_pair_maxima(x: np.ndarray, d_se: np.ndarray, block: int = 500) -> np.ndarray:
    """Each model's largest ``|x_i - x_m| / se_im`` over its pairs, per draw: (K, n_draws), float32.

    Blocks of draws are turned models-first (K, block), so that model i against all m > i is one
    contiguous (K - 1 - i, block) array and the maxima over pairs are elementwise maxima of rows;
    the work is memory-bound, and one model's rows of a small block stay in the cache (a
    (K, K, block) broadcast leaves it).  Single precision halves the bytes moved and doubles the
    SIMD width (2.5x here); its relative rounding, ~1e-7, is far below the Monte-Carlo error of
    the critical values (~1e-2).  The reciprocal SEs are multiplied in, one buffer is reused.
    """
    n, k = x.shape
    out = np.empty((k, n), dtype=np.float32)
    inv = (1.0 / d_se).astype(np.float32)
    buf = np.empty((max(k - 1, 1), block), dtype=np.float32)
    for lo in range(0, n, block):
        xt = np.ascontiguousarray(x[lo:lo + block].T, dtype=np.float32)
        m = xt.shape[1]
        own = np.zeros_like(xt)
        start = 0
        for i in range(k - 1):
            t = buf[:k - 1 - i, :m]
            np.subtract(xt[i + 1:], xt[i], out=t)
            np.abs(t, out=t)
            t *= inv[start:start + k - 1 - i, None]
            start += k - 1 - i
            np.maximum(own[i], t.max(axis=0), out=own[i])
            np.maximum(own[i + 1:], t, out=own[i + 1:])
        out[:, lo:lo + m] = own
    return out


def _normal_critical_draws(cov: np.ndarray, d_se: np.ndarray, z: np.ndarray, conf_level: float,
                           chunk: int = 2_000) -> tuple[float, np.ndarray, np.ndarray]:
    """Critical values and adjusted p-values of the pairwise differences from normal draws.

    ``_N_NORMAL_DRAWS`` draws of the K estimates' normal distribution (fixed seed: the result is
    deterministic); the Monte-Carlo error of the 95% critical value is about 0.01.
    """
    k = cov.shape[0]
    vals, vecs = np.linalg.eigh((cov + cov.T) / 2)
    root = vecs * np.sqrt(np.clip(vals, 0, None))
    rng = np.random.default_rng(_NORMAL_SEED)
    tj = np.empty((k, _N_NORMAL_DRAWS), dtype=np.float32)
    for start in range(0, _N_NORMAL_DRAWS, chunk):
        x = rng.standard_normal((min(chunk, _N_NORMAL_DRAWS - start), k)) @ root.T
        tj[:, start:start + len(x)] = _abs_pair_maxima(x, d_se)
    tm = tj.max(axis=0).astype(float)
    crit = float(np.quantile(tm, conf_level, method="higher"))
    crit_marg = np.quantile(tj, conf_level, axis=1, method="higher").astype(float)
    srt = np.sort(tm)
    p_adj = 1.0 - np.searchsorted(srt, z, side="left") / len(srt)
    return crit, crit_marg, p_adj


def _normal_parts(labels: list, base: dict, est: np.ndarray, cov: np.ndarray, conf_level: float,
                  extra_fn: Any = None) -> tuple[list, pd.DataFrame, list]:
    k = len(labels)
    a, b = _pair_index(k)
    d_se = np.sqrt(np.clip(cov[a, a] + cov[b, b] - 2 * cov[a, b], 0, None))
    if np.any(d_se <= 0):
        raise DataError("two estimates have a zero-variance difference; their covariance is degenerate")
    z = np.abs((est[a] - est[b]) / d_se)
    if k <= _EXACT_MAX_MODELS:
        C = np.zeros((len(a), k))
        C[np.arange(len(a)), a] = 1.0
        C[np.arange(len(a)), b] = -1.0
        corr = (C @ cov @ C.T) / np.outer(d_se, d_se)
        crit = mvn_box_quantile(conf_level, corr)
        crit_marg = np.empty(k)
        for j in range(k):
            mask = (a == j) | (b == j)
            crit_marg[j] = mvn_box_quantile(conf_level, corr[np.ix_(mask, mask)])
        p_adj = np.clip(1.0 - mvn_box_probability(z, corr), 0.0, 1.0)
    else:
        crit, crit_marg, p_adj = _normal_critical_draws(cov, d_se, z, conf_level)
    se = np.sqrt(np.diag(cov))
    q = stats.norm.isf((1 - conf_level) / 2)
    extra = extra_fn(est) if extra_fn else None
    return _assemble(labels, base, est, se, est - q * se, est + q * se, d_se, crit, crit_marg, p_adj, extra)


def rank_sets_normal(estimate: Sequence[float] | pd.Series, cov: ArrayLike | None = None, *,
                     se: ArrayLike | None = None, labels: Sequence[Hashable] | None = None, conf_level: float = 0.95) -> RankSets:
    """Rank sets from estimates with a joint normal distribution (e.g. a published leaderboard).

    The critical value is the equicoordinate quantile of the K (K - 1) / 2 pairwise differences'
    multivariate normal distribution (computed as emmeans' ``adjust = "mvt"``); with independent,
    equally precise estimates it equals Tukey's ``qtukey(conf_level, K) / sqrt(2)``.  Beyond 12
    models it is the quantile of 50,000 fixed, seeded draws of the estimates (deterministic;
    Monte-Carlo error about 0.01).

    Parameters
    ----------
    estimate : sequence of float or Series
        One estimate per model (a Series supplies the labels).
    cov : (K, K) array, optional
        Covariance matrix of the estimates.
    se : sequence of float, optional
        Standard errors of independent estimates (instead of ``cov``).
    labels : sequence, optional
        Model names (default: the Series index, else 1..K).
    conf_level : float
        Joint coverage.

    Returns
    -------
    RankSets

    Examples
    --------
    >>> rs = rank_sets_normal([0.80, 0.78, 0.75, 0.70], se=[0.01] * 4, labels=list("ABCD"))
    >>> rs.table[["model", "rank_low", "rank_high", "tie_group"]].values.tolist()
    [['A', 1, 2, 'a'], ['B', 1, 3, 'ab'], ['C', 2, 3, 'b'], ['D', 4, 4, 'c']]
    """
    check_arguments(conf_level=conf_level)
    if isinstance(estimate, pd.Series) and labels is None:
        labels = list(estimate.index)
    est = np.asarray(estimate, dtype=float)
    if est.ndim != 1 or len(est) < 2:
        raise DataError("estimate must be a vector of at least two models' estimates")
    if (cov is None) == (se is None):
        raise ValueError("give exactly one of cov= (covariance matrix) or se= (independent SEs)")
    if cov is None:
        s = np.asarray(se, dtype=float)
        if s.shape != est.shape:
            raise DataError(f"se has {s.size} values for {est.size} estimates")
        cov = np.diag(s**2)
    cov = np.asarray(cov, dtype=float)
    if cov.shape != (len(est), len(est)):
        raise DataError(f"cov must be {len(est)} x {len(est)}, got {cov.shape}")
    if not (np.all(np.isfinite(est)) and np.all(np.isfinite(cov))):
        raise DataError("estimates and their covariance must be finite")
    labels = list(labels) if labels is not None else list(range(1, len(est) + 1))
    if len(labels) != len(est):
        raise DataError(f"{len(labels)} labels for {len(est)} estimates")
    return _finish([_normal_parts(labels, {}, est, cov, conf_level)], [], conf_level, "normal")


def _with_accuracy(est: np.ndarray) -> dict[str, np.ndarray]:
    return {"accuracy": special.expit(est)}


def rank_sets_glmm(fit: FittedModel, term: str = "model", *, by: str | Sequence[str] | None = None,
                   conf_level: float = 0.95) -> RankSets:
    """Rank sets of the levels of ``term`` from a fitted GLMM's marginal means.

    The marginal means (link scale, equal weights over the other factors, as emmeans) and their
    covariance come from the fixed effects; the critical value is the multivariate-normal
    equicoordinate quantile of all pairwise differences, so the separations are exactly those of
    ``contrast(emmeans(fit, term), "pairwise", adjust="mvt")``.  Item (and item:run) random
    effects separate item sampling from run noise, as in :func:`evalmix.rank_uncertainty_glmm`.

    Parameters
    ----------
    fit : GlmerResult
        A fit with ``fixef``, ``vcov`` and ``fixed_design`` (see :func:`evalmix.glmer`).
    term : str
        The factor whose levels are ranked.
    by : str or list of str, optional
        Factors within whose levels separate leaderboards are formed.
    conf_level : float
        Joint coverage.

    Returns
    -------
    RankSets
        ``estimate``, ``conf_low``, ``conf_high`` on the logit scale, ``accuracy`` its inverse logit.
        A level whose marginal mean is not estimable (an empty cell of a rank-deficient fit) is
        left out, with a :class:`~evalmix.core.errors.DataWarning` naming it; on a separated fit a
        level whose mean diverges (``+-inf``) is left out with a
        :class:`~evalmix.core.errors.SeparationWarning` naming it.

    Examples
    --------
    >>> import evalmix
    >>> df = evalmix.simulate.glmm_runs(3, 60, 2, model_effects=[-1, 0, 1], sd_item_run=0.8, rng=5)
    >>> fit = evalmix.glmer("correct ~ model + (1|item) + (1|item:run)", df)
    >>> rank_sets_glmm(fit).table[["model", "rank_low", "rank_high", "tie_group"]].values.tolist()
    [['M3', 1, 1, 'a'], ['M2', 2, 2, 'b'], ['M1', 3, 3, 'c']]
    """
    check_arguments(conf_level=conf_level)
    by_ = sl.as_list(by)
    means = level_means(fit, term, by_)
    grid = means.frame
    # a level whose mean is not estimable (an empty cell of a rank-deficient fit) is not ranked
    ok = means.check_estimable(f"the marginal mean of {term}")
    # the grid evaluates the means (the ML fit's normal approximation); on a separated fit a
    # mean along a divergent direction is +-inf with no variance: it has no place in a normal
    # confidence band, so it is left out, named by a SeparationWarning
    warn_divergent(means.L, means.separation, [f"{term}={v}" for v in grid[term]],
                   "the marginal mean of", stacklevel=2)
    est, cov = means.linear_predictor(), means.covariance()
    ok = ok & np.isfinite(est)
    parts = []
    for key, idx in grid_groups(grid, by_):
        idx = idx[ok[idx]]
        labels = grid[term].iloc[idx].tolist()
        parts.append(_normal_parts(labels, dict(zip(by_, key)), est[idx], cov[np.ix_(idx, idx)],
                                   conf_level, _with_accuracy))
    return _finish(parts, by_, conf_level, "glmm")


# ----------------------------------------------------------------------------------------------
# posterior draws


def rank_sets_posterior(draws: BayesGlmerResult | pd.DataFrame | ArrayLike, term: str = "model", *, labels: Sequence[Hashable] | None = None,
                        conf_level: float = 0.95, logit: bool | None = None) -> RankSets:
    """Rank sets from posterior draws: a simultaneous credible band of all pairwise differences.

    Parameters
    ----------
    draws : BayesGlmerResult, DataFrame or (n_draws, K) array
        A Bayesian fit (its marginal means of ``term`` on the logit scale are used), or draws of
        the K models' values in columns.
    term : str
        The factor ranked, for a fit.
    labels : sequence, optional
        Model names for an array (default: the DataFrame's columns, else 1..K).
    conf_level : float
        Posterior probability that all differences lie in their band.
    logit : bool, optional
        Whether the draws are on the logit scale (adds ``accuracy``); True for a fit.

    Returns
    -------
    RankSets
        ``estimate`` is the posterior mean, ``conf_low``/``conf_high`` the equal-tailed interval.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> d = pd.DataFrame(rng.normal([0.0, 0.1, 2.0], 0.2, size=(4000, 3)), columns=list("ABC"))
    >>> rank_sets_posterior(d).table[["model", "rank_low", "rank_high"]].values.tolist()
    [['C', 1, 1], ['B', 2, 3], ['A', 2, 3]]
    """
    check_arguments(conf_level=conf_level)
    if not isinstance(draws, pd.DataFrame) and hasattr(draws, "ranks") and hasattr(draws, "fixef_draws"):
        res = cast("BayesGlmerResult", draws).ranks(term)  # a Bayesian fit, recognised by duck typing
        mat, labels = np.asarray(res.draws, float), res.table[term].tolist()
        logit = True if logit is None else logit
    elif isinstance(draws, pd.DataFrame):
        mat = draws.to_numpy(float)
        labels = list(draws.columns) if labels is None else list(labels)
    else:
        mat = np.asarray(draws, dtype=float)
        if mat.ndim != 2:
            raise DataError(f"draws must be an (n_draws, K) array, got shape {mat.shape}")
        labels = list(labels) if labels is not None else list(range(1, mat.shape[1] + 1))
    return _finish([_draws_part(mat, list(labels), None, conf_level, logit)], [], conf_level, "posterior")


def _draws_part(mat: np.ndarray, labels: list, estimate: np.ndarray | None, conf_level: float,
                logit: bool | None) -> tuple[list, pd.DataFrame, list]:
    """Checks of a draws matrix, then its leaderboard rows (max-t over the studentized pairs)."""
    if mat.shape[1] < 2 or len(labels) != mat.shape[1]:
        raise DataError(f"draws have {mat.shape[1]} columns for {len(labels)} labels (need >= 2)")
    if mat.shape[0] < 100:
        raise DataError(f"{mat.shape[0]} draws are too few for a {100 * conf_level:g}% band (need >= 100)")
    if not np.all(np.isfinite(mat)):
        bad = np.argwhere(~np.isfinite(mat))[0]
        raise DataError(f"draws must be finite: draw (row) {bad[0]} of column {labels[bad[1]]!r} is "
                        f"{mat[bad[0], bad[1]]}")
    est = mat.mean(0) if estimate is None else estimate
    d_se, crit, crit_marg, p_adj = _draw_critical(mat, est, conf_level)
    alpha = 1 - conf_level
    lo, hi = np.quantile(mat, [alpha / 2, 1 - alpha / 2], axis=0)
    extra = _with_accuracy(est) if logit else None
    return _assemble(labels, {}, est, _spread(mat), lo, hi, d_se, crit, crit_marg, p_adj, extra)


def rank_sets_draws(draws: pd.DataFrame | ArrayLike, conf_level: float = 0.95, method: str = "max-t", *,
                    estimate: ArrayLike | None = None, labels: Sequence[Hashable] | None = None
                    ) -> RankSets:
    """Simultaneous rank sets from a draws matrix: bootstrap replicates or posterior draws.

    The max-t method: in every draw take the largest studentized deviation of the pairwise
    differences from the estimated ones, ``max |(d*_jk - d_jk) / se_jk|`` over all K (K - 1) / 2
    pairs (``se_jk`` is the SD of the draws' difference j - k); its ``conf_level`` quantile over the
    draws (the next order statistic up) is the critical value ``c``, and model j is separated above
    k when ``d_jk / se_jk > c``.  The rank sets then follow as for :func:`rank_sets_normal`, with
    the critical value from the draws instead of a normal approximation, so skewed or correlated
    estimates keep their shape.  Each model's marginal rank interval uses the quantile of the
    maximum over its own K - 1 pairs.

    Parameters
    ----------
    draws : DataFrame or (n_draws, K) array
        One row per draw (bootstrap replicate or posterior draw), one column per model; a
        DataFrame's columns name the models.  At least 100 draws, all finite.
    conf_level : float
        Joint coverage of the rank sets (and of the pairwise intervals).
    method : {"max-t"}
        The simultaneous method; max-t is the one implemented.
    estimate : sequence of float, optional
        The K point estimates the draws scatter around: the full-sample estimates for bootstrap
        replicates.  Default: the draws' column means (right for posterior draws).
    labels : sequence, optional
        Model names (default: the DataFrame's columns, else 1..K).

    Returns
    -------
    RankSets
        ``estimate`` (the model's mean, or the given estimate), ``se`` (the draws' SD),
        ``conf_low``/``conf_high`` (the equal-tailed ``conf_level`` interval of the draws),
        ``rank``, ``rank_low``/``rank_high`` (simultaneous), ``marginal_rank_low``/
        ``marginal_rank_high`` and ``tie_group``; ``pairs`` holds the simultaneous intervals of the
        differences and max-t adjusted p-values; ``method`` is ``"max-t"``.

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> boot = rng.normal([0.70, 0.71, 0.80], 0.01, size=(2000, 3))
    >>> rs = rank_sets_draws(boot, labels=["A", "B", "C"])
    >>> rs.table[["model", "rank_low", "rank_high", "tie_group"]].values.tolist()
    [['C', 1, 1, 'a'], ['B', 2, 3, 'b'], ['A', 2, 3, 'b']]
    """
    check_arguments(conf_level=conf_level)
    check_choice(method, "method", ["max-t"])
    if isinstance(draws, pd.DataFrame):
        mat = draws.to_numpy(float)
        labels = list(draws.columns) if labels is None else list(labels)
    else:
        try:
            mat = np.asarray(draws, dtype=float)
        except (TypeError, ValueError) as exc:
            raise DataError(f"draws must be a numeric (n_draws, K) array: {exc}") from None
        if mat.ndim != 2:
            raise DataError(f"draws must be an (n_draws, K) array, got shape {mat.shape}")
        labels = list(labels) if labels is not None else list(range(1, mat.shape[1] + 1))
    est = None
    if estimate is not None:
        est = np.asarray(estimate, dtype=float)
        if est.shape != (mat.shape[1],):
            raise DataError(f"estimate has {est.size} values for {mat.shape[1]} columns of draws")
        if not np.all(np.isfinite(est)):
            raise DataError("estimate must be finite")
    return _finish([_draws_part(mat, list(labels), est, conf_level, None)], [], conf_level, "max-t")
