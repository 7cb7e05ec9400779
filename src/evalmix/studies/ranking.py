"""Leaderboard stability: how often single runs reorder models, and how uncertain ranks are.

:func:`rank_instability` compares the leaderboard of every run (or every subset of R runs) with the
leaderboard of all runs pooled, slice by slice, under the AI4Math paper's definition (any model at a
different position) and under pairwise measures (discordant model pairs, Kendall's tau).
:func:`rank_uncertainty` gives each model's rank distribution, expected rank and rank interval from
an item-level cluster bootstrap, :func:`rank_uncertainty_glmm` from a fitted GLMM.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal, cast

import numpy as np
import pandas as pd
from scipy import special, stats

from ..core.arguments import check_arguments
from ..data import slicing as sl
from ..core.result import Result, frame_records
from ..data.runs import RunsData, RunsSchema
from ..core.errors import DataError
from ..mixed.fitted import FittedModel, warn_divergent
from ..mixed.grid import level_means
from ..core.parallel import parallel_map
from ..core.seeds import accepts_seed

__all__ = ["RankInstabilityResult", "RankUncertaintyResult", "cell_sums", "grid_groups",
           "rank_instability", "rank_uncertainty", "rank_uncertainty_glmm"]


# ----------------------------------------------------------------------------------------------
# rank instability


@dataclass(frozen=True, eq=False, repr=False)
class RankInstabilityResult(Result):
    """Leaderboards from run subsets against the all-runs leaderboard.

    Attributes
    ----------
    table : DataFrame
        One row per leaderboard: slice columns, ``n_runs`` (runs pooled), ``runs`` (which ones, e.g.
        ``"1+3"``), ``n_models``, ``n_moved`` (models at a different position than in the reference
        order, the paper's count), ``unstable`` (``n_moved > 0``), ``n_discordant`` (model pairs
        strictly ordered one way here and the other way in the reference), ``n_pairs`` and
        ``kendall_tau`` (tau-b between the two accuracy vectors).  ``unstable`` follows ``ties``:
        ``n_discordant > 0`` (strict) or ``n_moved > 0`` (the paper's).
    by_n_runs : DataFrame
        One row per number of pooled runs (also ``to_frame()``): ``n_leaderboards``, ``n_unstable``, ``rate``,
        ``n_unstable_paper`` and ``rate_paper`` (the paper's count), ``n_discordant`` (total), ``mean_discordant`` and ``inversions_removed`` (share of the
        single-run discordant pairs that disappear, when single runs are included).
    ranks : DataFrame
        Long table for bump charts: slice columns, ``leaderboard`` ("all" or the runs), ``n_runs``,
        ``model``, ``accuracy``, ``rank`` (1 = best, ties share the best rank) and ``position``
        (place in the tie-broken order).
    n_unstable, n_leaderboards, rate
        Unstable leaderboards (under ``ties``) for the smallest number of pooled runs analysed
        (single runs by default).
    ties : str
        ``"strict"`` (a leaderboard is unstable when a model pair is strictly inverted; ties are not
        inversions) or ``"paper"`` (any model at another position, ties broken by level order).
    n_unstable_paper : int
        The paper's count for the same leaderboards, whichever ``ties`` is.
    """

    table: pd.DataFrame
    by_n_runs: pd.DataFrame
    ranks: pd.DataFrame
    by: tuple[str, ...]
    n_unstable: int
    n_leaderboards: int
    rate: float
    ties: str = "strict"
    n_unstable_paper: int = 0

    def _title(self) -> str:
        return "Leaderboard instability across runs" + (
            f" by {', '.join(self.by)}" if self.by else "")

    def _header(self) -> list[str]:
        if self.ties == "paper":
            return [f"{self.n_unstable} of {self.n_leaderboards} leaderboards have a model at another "
                    f"position than in the all-runs order, ties broken by level order (the paper's "
                    f"count; rate {self.rate:.3f})"]
        return [f"{self.n_unstable} of {self.n_leaderboards} leaderboards invert at least one model "
                f"pair against the all-runs order (ties are not inversions; rate {self.rate:.3f})",
                f"the paper's count (any model at another position, ties broken by level order): "
                f"{self.n_unstable_paper} of {self.n_leaderboards}; ties=\"paper\" uses it"]

    def to_frame(self) -> pd.DataFrame:
        return self.by_n_runs.copy()

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"leaderboards": frame_records(self.table),
                                    "n_unstable": self.n_unstable,
                                    "n_leaderboards": self.n_leaderboards, "rate": self.rate,
                                    "ties": self.ties, "n_unstable_paper": self.n_unstable_paper}


def _order(acc: np.ndarray) -> np.ndarray:
    """Indices from best to worst; ties keep the models' level order (a stable sort).

    This is what the AI4Math R code does: ``arrange(desc(acc))`` on rows sorted by model level.
    """
    return np.argsort(-acc, kind="stable")


def _min_rank(acc: np.ndarray) -> np.ndarray:
    return stats.rankdata(-acc, method="min").astype(int)


def _discordant(a: np.ndarray, b: np.ndarray) -> tuple[int, int]:
    iu = np.triu_indices(len(a), 1)
    da = np.sign(a[:, None] - a[None, :])[iu]
    db = np.sign(b[:, None] - b[None, :])[iu]
    return int((da * db < 0).sum()), len(da)


def cell_sums(sub: pd.DataFrame, cols: RunsSchema, rows: str, row_levels: list[Any],
               models: list[Any]) -> tuple[np.ndarray, np.ndarray]:
    """Success sums and trial counts of one slice as arrays ``rows`` levels x models.

    Every value of ``sub[rows]`` and ``sub[model]`` must be among ``row_levels`` and ``models``.

    Examples
    --------
    >>> df = pd.DataFrame({"item": [1, 1, 2], "model": ["a", "b", "a"], "correct": [1, 0, 1]})
    >>> from evalmix.data.runs import RunsSchema
    >>> cols = RunsSchema(item="item", model="model", run="run", outcome="correct")
    >>> succ, tri = cell_sums(df, cols, "item", [1, 2], ["a", "b"])
    >>> succ.tolist(), tri.tolist()
    ([[1.0, 0.0], [1.0, 0.0]], [[1.0, 1.0], [1.0, 0.0]])
    """
    y = sl.scores(sub, cols)
    w = sub[cols.trials].to_numpy(float) if cols.trials else np.ones(len(sub))
    r = pd.Categorical(sub[rows], categories=row_levels).codes.astype(np.int64)
    m = pd.Categorical(sub[cols.model], categories=models).codes.astype(np.int64)
    # one flat integer code per cell and two bincounts: linear in the rows (the sums are taken in
    # row order, as np.add.at takes them)
    shape = (len(row_levels), len(models))
    cell = r * len(models) + m
    size = shape[0] * shape[1]
    succ = np.bincount(cell, weights=y * w, minlength=size).reshape(shape)
    tri = np.bincount(cell, weights=w, minlength=size).reshape(shape)
    return succ, tri


Ties = Literal["strict", "paper"]


def rank_instability(data: RunsData, slice_by: str | Sequence[str] | None = None, *,
                     model: str | None = None, item: str | None = None, run: str | None = None,
                     outcome: str | None = None,
                     runs_per_leaderboard: int | Sequence[int] = 1, ties: Ties = "strict",
                     missing: str = "raise") -> RankInstabilityResult:
    """Compare leaderboards built from single runs (or run subsets) with the all-runs leaderboard.

    Within each slice (e.g. language x prompt) models are ordered by accuracy over all runs (the
    reference, which the AI4Math paper calls the "three-run majority") and by accuracy over each
    subset of ``R`` runs.  By default (``ties="strict"``) a leaderboard is unstable when at least one
    model pair is strictly ordered one way in it and the other way in the reference: a tie is not an
    inversion.  The paper (``ties="paper"``) counts a leaderboard as unstable when any model sits at
    a different position, with ties broken by keeping the models' level order (its R code sorts with
    ``arrange(desc(acc))``, which is stable), so two models that tie in one run and not in the
    reference "move".  On AI4Math the strict count is 5 of 12 single-run leaderboards, the paper's
    10 of 12.  Both are in the table (``n_discordant`` and ``n_moved``) whichever is chosen.

    Parameters
    ----------
    data : DataFrame or path
        Long runs table.
    slice_by : str or list of str, optional
        Columns defining separate leaderboards (e.g. ``["language", "prompt"]``).
    model, item, run, outcome : str, optional
        Column names (defaults from :func:`evalmix.read_runs` roles, else conventional names).
        Items are not needed: accuracies pool every row of a model in a run.
    runs_per_leaderboard : int or sequence of int
        Numbers of runs pooled per leaderboard; every subset of that size is used (with R of the
        available runs the leaderboard equals the reference).
    ties : {"strict", "paper"}
        What makes a leaderboard unstable (``unstable``, ``n_unstable``, ``rate``): a strictly
        inverted model pair (default), or the paper's any model at another position after breaking
        ties by level order.  ``by_n_runs`` has the paper's count as ``n_unstable_paper`` and
        ``rate_paper`` either way.
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    RankInstabilityResult

    Examples
    --------
    >>> import evalmix
    >>> df = evalmix.simulate.glmm_runs(4, 30, 3, slices={"language": ["EN", "ES"]}, rng=2)
    >>> r = rank_instability(df, "language")
    >>> r.n_leaderboards, r.ties
    (6, 'strict')
    """
    if ties not in ("strict", "paper"):
        raise ValueError(f"ties must be 'strict' (a tie is not an inversion) or 'paper' (ties broken "
                         f"by level order), got {ties!r}")
    by_ = sl.as_list(slice_by)
    data, cols = sl.resolve(data, item=item, run=run, outcome=outcome, model=model, need_model=True,
                            need_item=False, by=by_, missing=missing)
    sizes = sorted({int(s) for s in np.atleast_1d(runs_per_leaderboard)})
    models = sl.levels(data[cols.model])
    rows, rank_parts = [], []
    for key, sub in sl.groups(data, by_):
        runs = sl.levels(sub[cols.run])
        present = set(pd.unique(sub[cols.model]))  # once per slice, not once per model
        slice_models = [m for m in models if m in present]
        succ, tri = cell_sums(sub, cols, cols.role("run"), runs, slice_models)
        if (tri == 0).any():
            r_, m_ = np.argwhere(tri == 0)[0]
            raise DataError(f"{sl.slice_label(by_, key)}model {slice_models[m_]!r} has no rows in run "
                            f"{runs[r_]!r}; rank instability needs every model in every run")
        ref = succ.sum(0) / tri.sum(0)
        ref_order = _order(ref)
        base = dict(zip(by_, key))
        boards = [("all", len(runs), ref)]
        for size in sizes:
            if size < 1 or size > len(runs):
                raise DataError(f"runs_per_leaderboard={size} but the slice has {len(runs)} runs")
            for subset in itertools.combinations(range(len(runs)), size):
                idx = list(subset)
                acc = succ[idx].sum(0) / tri[idx].sum(0)
                label = "+".join(str(runs[i]) for i in idx)
                order = _order(acc)
                n_disc, n_pairs = _discordant(acc, ref)
                moved = int((order != ref_order).sum())
                tau = stats.kendalltau(acc, ref).statistic if len(acc) > 1 else np.nan
                rows.append(base | {"n_runs": size, "runs": label, "n_models": len(acc),
                                    "n_moved": moved,
                                    "unstable": (n_disc > 0) if ties == "strict" else (moved > 0),
                                    "n_discordant": n_disc, "n_pairs": n_pairs,
                                    "kendall_tau": float(tau)})
                boards.append((label, size, acc))
        k = len(slice_models)
        for label, size, acc in boards:
            pos = np.empty(k, int)
            pos[_order(acc)] = np.arange(1, k + 1)
            part = pd.DataFrame({"leaderboard": [label] * k, "n_runs": size,
                                 "model": pd.Series(slice_models, dtype=object).to_numpy(),
                                 "accuracy": acc, "rank": _min_rank(acc), "position": pos})
            for name, value in reversed(base.items()):
                part.insert(0, name, [value] * k)
            rank_parts.append(part)
    table = pd.DataFrame(rows)
    summ = table.assign(moved=table["n_moved"] > 0).groupby("n_runs").agg(
        n_leaderboards=("unstable", "size"), n_unstable=("unstable", "sum"),
        n_unstable_paper=("moved", "sum"), n_discordant=("n_discordant", "sum"),
        mean_discordant=("n_discordant", "mean")).reset_index()
    summ["rate"] = summ["n_unstable"] / summ["n_leaderboards"]
    summ["rate_paper"] = summ["n_unstable_paper"] / summ["n_leaderboards"]
    if 1 in sizes:
        single = float(summ.loc[summ["n_runs"] == 1, "mean_discordant"].iloc[0])
        summ["inversions_removed"] = 1 - summ["mean_discordant"] / single if single > 0 else np.nan
    summ = summ[["n_runs", "n_leaderboards", "n_unstable", "rate", "n_unstable_paper", "rate_paper",
                 "n_discordant", "mean_discordant"] + (["inversions_removed"] if 1 in sizes else [])]
    first = summ.iloc[0]
    ranks = pd.concat(rank_parts, ignore_index=True)
    return RankInstabilityResult(table=table, by_n_runs=summ, ranks=ranks, by=tuple(by_),
                                 n_unstable=int(first["n_unstable"]),
                                 n_leaderboards=int(first["n_leaderboards"]), rate=float(first["rate"]),
                                 ties=ties, n_unstable_paper=int(first["n_unstable_paper"]))


# ----------------------------------------------------------------------------------------------
# rank uncertainty by item-level bootstrap


@dataclass(frozen=True, eq=False, repr=False)
class RankUncertaintyResult(Result):
    """Rank distributions of models from a cluster bootstrap over items.

    ``table``: slice columns, ``model``, ``accuracy``, ``rank`` (observed, 1 = best, ties share the
    best rank), ``mean_rank``, ``rank_low``/``rank_high`` (equal-tailed rank interval), ``p_best`` and
    ``se`` (bootstrap SE of the accuracy).  ``distribution``: slice columns, ``model`` and one column
    per rank with its bootstrap probability.
    """

    table: pd.DataFrame
    distribution: pd.DataFrame
    by: tuple[str, ...]
    n_boot: int
    conf_level: float
    method: str = "bootstrap"

    def _title(self) -> str:
        return f"Rank uncertainty ({self.method})"

    def _header(self) -> list[str]:
        return [f"rank_low/rank_high: {self.conf_level:.0%} equal-tailed rank interval "
                "(rank 1 = best)"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()


def _boot_chunk(n_boot: int, seed: np.random.SeedSequence, succ: np.ndarray,
                tri: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bootstrap accuracies (n_boot x models) and min-ranks for one chunk of replicates."""
    rng = np.random.default_rng(seed)
    n_items = succ.shape[0]
    w = rng.multinomial(n_items, np.full(n_items, 1.0 / n_items), size=n_boot).astype(float)
    acc = (w @ succ) / (w @ tri)
    ranks = stats.rankdata(-acc, method="min", axis=1).astype(int)
    return acc, ranks


@accepts_seed
def rank_uncertainty(data: RunsData, by: str | Sequence[str] | None = None, *,
                     model: str | None = None, item: str | None = None, run: str | None = None,
                     outcome: str | None = None, n_boot: int = 2000, conf_level: float = 0.95,
                     rng: int | np.random.Generator | None = None, n_jobs: int | None = None,
                     progress: bool = False, chunk_size: int = 250,
                     method: Literal["bootstrap"] = "bootstrap", missing: str = "raise") -> RankUncertaintyResult:
    """Each model's rank distribution, expected rank and rank interval from an item bootstrap.

    Items are resampled with replacement, keeping all runs and all models of a drawn item together
    (a cluster bootstrap: the models are compared on the same items, and the runs of an item are not
    treated as independent).  Each replicate recomputes every model's accuracy and its rank (1 =
    best, ties share the best rank).

    Parameters
    ----------
    data : DataFrame or path
        Long runs table.
    by : str or list of str, optional
        Slice columns; one leaderboard per slice.
    model, item, run, outcome : str, optional
        Column names (defaults from :func:`evalmix.read_runs` roles, else conventional names).
    n_boot : int
        Bootstrap replicates.
    conf_level : float
        Coverage of the equal-tailed rank interval (lower and upper quantiles of the ranks).
    rng : int or numpy.random.Generator, optional
        Random numbers; results do not depend on ``n_jobs``.
    n_jobs : int, optional
        Parallel workers (joblib) over chunks of ``chunk_size`` replicates; default: an enclosing
        ``joblib.parallel_config``, else 1 (see :func:`evalmix.core.parallel.parallel_map`).
    progress : bool
        Show a progress bar over chunks.
    method : {"bootstrap"}
        Resampling scheme.
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    RankUncertaintyResult

    Examples
    --------
    >>> import evalmix
    >>> df = evalmix.simulate.glmm_runs(3, 40, 2, model_effects=[-1, 0, 1], rng=4)
    >>> r = rank_uncertainty(df, n_boot=200, rng=1)
    >>> r.table[["model", "rank"]].to_dict("list")
    {'model': ['M1', 'M2', 'M3'], 'rank': [3, 2, 1]}
    """
    check_arguments(n_boot=n_boot, conf_level=conf_level, rng=rng, n_jobs=n_jobs, chunk_size=chunk_size, missing=missing)
    if method != "bootstrap":
        raise ValueError(f"method must be 'bootstrap', got {method!r}")
    if n_boot < 1:
        raise ValueError(f"n_boot must be >= 1, got {n_boot}")
    if not 0 < conf_level < 1:
        raise ValueError(f"conf_level must be in (0, 1), got {conf_level}")
    by_ = sl.as_list(by)
    data, cols = sl.resolve(data, item=item, run=run, outcome=outcome, model=model, need_model=True,
                            by=by_, missing=missing,
                            need_run=False)  # items are resampled; runs pool into k of n per cell
    models = sl.levels(data[cols.model])
    alpha = 1 - conf_level
    n_chunks = -(-n_boot // chunk_size)
    sizes = [min(chunk_size, n_boot - c * chunk_size) for c in range(n_chunks)]
    root = sl.rng_of(rng)
    slices = list(sl.groups(data, by_))
    seeds = root.spawn(len(slices))
    rows, dist_rows = [], []
    for (key, sub), sseed in zip(slices, seeds):
        present = set(pd.unique(sub[cols.model]))  # once per slice, not once per model
        slice_models = [m for m in models if m in present]
        items = sl.levels(sub[cols.item])
        if len(items) < 2:
            raise DataError(f"{sl.slice_label(by_, key)}column {cols.item!r} has {len(items)} item; "
                            f"the item bootstrap needs at least two items to say how ranks vary "
                            f"with them")
        succ, tri = cell_sums(sub, cols, cols.role("item"), items, slice_models)
        if (tri == 0).any():
            raise DataError(f"{sl.slice_label(by_, key)}some model did not answer some item; the item "
                            f"bootstrap needs every model on every item")
        out = parallel_map(partial(_boot_chunk, succ=succ, tri=tri), sizes, n_jobs=n_jobs, seed=sseed,
                           progress=progress,
                           desc=f"bootstrap {sl.slice_label(by_, key) or 'ranks'}".strip(": "))
        acc_b = np.vstack([o[0] for o in out])
        rank_b = np.vstack([o[1] for o in out])
        acc = succ.sum(0) / tri.sum(0)
        obs = _min_rank(acc)
        base = dict(zip(by_, key))
        k = len(slice_models)
        for j, m in enumerate(slice_models):
            r = rank_b[:, j]
            rows.append(base | {"model": m, "accuracy": acc[j], "rank": int(obs[j]),
                                "mean_rank": r.mean(),
                                "rank_low": int(np.quantile(r, alpha / 2, method="inverted_cdf")),
                                "rank_high": int(np.quantile(r, 1 - alpha / 2, method="inverted_cdf")),
                                "p_best": float((r == 1).mean()), "se": acc_b[:, j].std(ddof=1)})
            counts = np.bincount(r, minlength=k + 1)[1:] / len(r)
            dist_rows.append(base | {"model": m} | {f"rank_{i + 1}": counts[i] for i in range(k)})
    return RankUncertaintyResult(table=pd.DataFrame(rows), distribution=pd.DataFrame(dist_rows).fillna(0.0),
                                 by=tuple(by_), n_boot=n_boot, conf_level=conf_level)


# ----------------------------------------------------------------------------------------------
# rank uncertainty from a fitted GLMM


def grid_groups(grid: pd.DataFrame, by: Sequence[str]) -> list[tuple[tuple, np.ndarray]]:
    """Row positions of ``grid`` per combination of ``by`` (one group of all rows without ``by``)."""
    if not by:
        return [((), np.arange(len(grid)))]
    # pandas gives integer arrays here; pandas-stubs also allows an Index or a list
    return [(k if isinstance(k, tuple) else (k,), cast(np.ndarray, idx))
            for k, idx in grid.groupby(list(by), sort=False).indices.items()]


@accepts_seed
def rank_uncertainty_glmm(fit: FittedModel, term: str = "model", *, by: str | Sequence[str] | None = None,
                          n_draws: int = 4000, conf_level: float = 0.95,
                          rng: int | np.random.Generator | None = None) -> RankUncertaintyResult:
    """Rank distribution of each level of ``term`` from a fitted GLMM's fixed effects.

    The fixed effects are drawn from their asymptotic normal distribution N(beta_hat, V); each draw
    gives every level's marginal mean on the logit scale (equal weights over the other factors, as
    emmeans) and its rank (1 = highest).  Unlike the item bootstrap this uses the model's item and
    item:run random effects to separate item sampling from run noise.

    Parameters
    ----------
    fit : GlmerResult
        A fit with ``fixef``, ``vcov`` and ``fixed_design`` (see :func:`evalmix.glmm.glmer`).
    term : str
        The factor whose levels are ranked.
    by : str or list of str, optional
        Factors within whose levels separate leaderboards are formed (needs an interaction with
        ``term`` in the model to differ between them).
    n_draws : int
        Draws of the fixed effects.
    conf_level : float
        Coverage of the equal-tailed rank interval.
    rng : int or numpy.random.Generator, optional
        Random numbers: a seed or a numpy Generator.

    Returns
    -------
    RankUncertaintyResult
        ``table`` columns: the ``by`` columns, ``model`` (the level), ``estimate`` (logit marginal
        mean), ``accuracy`` (its inverse logit), ``rank``, ``mean_rank``, ``rank_low``, ``rank_high`` (the rank interval),
        ``p_best``, ``se`` (of the logit marginal mean).  A level whose marginal mean is not
        estimable (an empty cell of a rank-deficient fit) is NaN throughout and left out of the
        ranking of its group, with a :class:`~evalmix.core.errors.DataWarning` naming it.  On a
        separated fit a level whose mean diverges is ``+-inf`` in every draw (``se`` NaN), with a
        :class:`~evalmix.core.errors.SeparationWarning` naming it.

    Examples
    --------
    >>> import evalmix
    >>> from evalmix.glmm import glmer
    >>> df = evalmix.simulate.glmm_runs(3, 40, 2, model_effects=[-1, 0, 1], rng=4)
    >>> fit = glmer("correct ~ model + (1|item) + (1|item:run)", df)
    >>> rank_uncertainty_glmm(fit, rng=1).table["rank"].tolist()
    [3, 2, 1]
    """
    check_arguments(n_draws=n_draws, conf_level=conf_level, rng=rng)
    if n_draws < 1:
        raise ValueError(f"n_draws must be >= 1, got {n_draws}")
    by_ = sl.as_list(by)
    means = level_means(fit, term, by_)
    grid = means.frame
    # a level whose mean is not estimable (an empty cell of a rank-deficient fit) is not ranked
    means.check_estimable(f"the marginal mean of {term}")
    # the grid evaluates the means: NaN where not estimable and, on a separated fit, +-inf along
    # a divergent direction (fixef holds +-inf there, and L @ fixef would give NaN or a finite
    # number for the wrong reason); a diverging level takes its limit in every draw
    warn_divergent(means.L, means.separation, [f"{term}={v}" for v in grid[term]],
                   "the marginal mean of", stacklevel=2)
    est = means.linear_predictor()
    cov = means.covariance()
    se = np.where(np.isfinite(est), np.sqrt(np.clip(np.diag(cov), 0.0, None)), np.nan)
    rng = np.random.default_rng(rng)
    eta_draws = np.repeat(est[None, :], n_draws, axis=0)
    fin = np.flatnonzero(np.isfinite(est))
    if fin.size:  # the normal approximation of the finite means, drawn jointly
        eta_draws[:, fin] = rng.multivariate_normal(est[fin], cov[np.ix_(fin, fin)], size=n_draws,
                                                    method="eigh")
    ok = ~np.isnan(est)
    alpha = 1 - conf_level
    rows, dist_rows = [], []
    for key, idx in grid_groups(grid, by_):
        ranked = idx[ok[idx]]
        ranks = stats.rankdata(-eta_draws[:, ranked], method="min", axis=1).astype(int)
        obs = _min_rank(est[ranked])
        pos = {i: j for j, i in enumerate(ranked)}
        base = dict(zip(by_, key))
        k = len(ranked)
        for i in idx:
            level = grid[term].iloc[i]
            if i not in pos:
                rows.append(base | {"model": level, "estimate": np.nan, "accuracy": np.nan,
                                    "rank": np.nan, "mean_rank": np.nan, "rank_low": np.nan,
                                    "rank_high": np.nan, "p_best": np.nan, "se": np.nan})
                dist_rows.append(base | {"model": level} |
                                 {f"rank_{r + 1}": np.nan for r in range(k)})
                continue
            j = pos[i]
            r = ranks[:, j]
            rows.append(base | {"model": level, "estimate": est[i],
                                "accuracy": float(special.expit(est[i])), "rank": int(obs[j]),
                                "mean_rank": r.mean(),
                                "rank_low": int(np.quantile(r, alpha / 2, method="inverted_cdf")),
                                "rank_high": int(np.quantile(r, 1 - alpha / 2, method="inverted_cdf")),
                                "p_best": float((r == 1).mean()), "se": se[i]})
            counts = np.bincount(r, minlength=k + 1)[1:] / len(r)
            dist_rows.append(base | {"model": level} |
                             {f"rank_{c + 1}": counts[c] for c in range(k)})
    return RankUncertaintyResult(table=pd.DataFrame(rows), distribution=pd.DataFrame(dist_rows),
                                 by=tuple(by_), n_boot=n_draws, conf_level=conf_level, method="glmm")
