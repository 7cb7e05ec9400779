"""How many runs (and items) a study needs: standard error against repetitions, and planning.

The accuracy of a slice (one model under one condition) measured on N items with R runs each has
two sources of noise: which items were drawn (between-item variance ``var_between``, the variance of
the items' true success probabilities) and which answers the stochastic decoder produced (within-item
variance ``var_within``, the mean of p_i (1 - p_i)).  For the mean over N x R answers::

    Var(accuracy) = var_between / N + var_within / (N R)

Only the second term shrinks with more runs.  :func:`variance_components` estimates both per slice
by the method of moments, :func:`se_vs_runs` projects the standard error to any R (also for paired
differences between models) next to the AI4Math paper's curves, and :func:`plan` finds the cheapest
(N, R) meeting a precision target.  :func:`slice_se_by_runs` reproduces the statistic behind the
paper's "SE decreases from 0.0288 at R=1 to 0.0285 at R=2 to 0.0273 at R=3".

Scores beyond 0/1: :func:`components_from_fit` reads the same two variances from a fitted glmer,
lmer, clmm or glmmtmb model, on the fit's response scale (:data:`FIT_SCALES`), and
:func:`se_vs_runs` and :func:`plan` take such a fit in place of the runs table.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd
from scipy import special, stats

from ..core.arguments import check_arguments, check_choice, check_number, check_probability
from ..data import slicing as sl
from ..core.result import Result, contrast_label, frame_records
from ..data.runs import RunsData, RunsSchema, ensure_runs
from ..core.errors import ArgumentError, DataError
from ..mixed.fitted import MixedFit
from ..mixed.grid import level_means
from ..core.parallel import parallel_map
from .power import check_pilot_variance

if TYPE_CHECKING:
    from ..ordinal import ClmmResult

__all__ = ["AllocationResult", "FIT_SCALES", "PlanResult", "SEvsRunsResult", "SignFlipResult", "SliceSEResult", "VarianceComponents",
           "accuracy_components", "components_from_fit", "optimal_runs", "plan", "se_vs_runs", "sign_flip_rate",
           "slice_se_by_runs", "variance_components"]


# ----------------------------------------------------------------------------------------------
# the paper's statistic


@dataclass(frozen=True, eq=False, repr=False)
class SliceSEResult(Result):
    """``table``: ``n_runs`` (first R runs pooled), ``n_slices``, ``mean_accuracy``, ``sd_accuracy``
    (SD of the slice accuracies) and ``se`` = sd_accuracy / sqrt(n_slices)."""

    table: pd.DataFrame
    slice_by: tuple[str, ...]

    def _title(self) -> str:
        return "Standard error of slice accuracy by number of runs"

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()


def slice_se_by_runs(data: RunsData, slice_by: str | Sequence[str], *, run: str | None = None,
                     outcome: str | None = None, max_runs: int | None = None, missing: str = "raise") -> SliceSEResult:
    """The "SE against runs" statistic of the AI4Math paper's published R code.

    For R = 1, 2, ... the table is restricted to the first R runs (in run order), the accuracy of
    every slice (e.g. model x language x prompt) is computed, and the statistic is the standard
    deviation of those slice accuracies divided by the square root of the number of slices.  On
    AI4Math with slices model x language x prompt this gives 0.0288, 0.0285 and 0.0273, the numbers
    the paper reports as the SE of slice-level accuracy.

    It is the standard error of the *mean of the slice accuracies* computed as if the slices were a
    random sample: it measures how different the 32 models/conditions are from each other, not how
    precisely any accuracy is known, and it moves with R only because averaging runs shrinks the
    run noise inside the spread of slice means.  Use :func:`se_vs_runs` for the precision of a slice
    accuracy.

    Parameters
    ----------
    data : DataFrame or path
        Long runs table.
    slice_by : str or list of str
        Columns defining a slice (``["model", "language", "prompt"]`` in the paper).
    run, outcome : str, optional
        Column names (defaults from :func:`evalmix.read_runs` roles, else ``run``/``correct``).
    max_runs : int, optional
        Largest R (default: all runs).
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    SliceSEResult

    Examples
    --------
    >>> import evalmix
    >>> df = evalmix.simulate.glmm_runs(4, 30, 3, rng=1)
    >>> slice_se_by_runs(df, "model").table["n_runs"].tolist()
    [1, 2, 3]
    """
    by_ = sl.as_list(slice_by)
    if not by_:
        raise DataError("slice_se_by_runs needs slice columns (slice_by=)")
    data, cols = sl.resolve(data, run=run, outcome=outcome, need_item=False, by=by_, missing=missing)
    runs = sl.levels(data[cols.run])
    top = len(runs) if max_runs is None else int(max_runs)
    if not 1 <= top <= len(runs):
        raise DataError(f"max_runs={max_runs} but the table has {len(runs)} runs")
    y = sl.scores(data, cols)
    w = data[cols.trials].to_numpy(float) if cols.trials else np.ones(len(data))
    rows = []
    for r in range(1, top + 1):
        keep = data[cols.run].isin(runs[:r]).to_numpy()
        frame = data.loc[keep, by_].assign(_s=(y * w)[keep], _w=w[keep])
        g = frame.groupby(by_, observed=True)[["_s", "_w"]].sum()
        acc = g["_s"] / g["_w"]
        sd = acc.std(ddof=1)
        rows.append({"n_runs": r, "n_slices": len(acc), "mean_accuracy": acc.mean(), "sd_accuracy": sd,
                     "se": sd / math.sqrt(len(acc))})
    return SliceSEResult(table=pd.DataFrame(rows), slice_by=tuple(by_))


# ----------------------------------------------------------------------------------------------
# variance components


def _components(mat: np.ndarray) -> dict[str, Any]:
    # numbers, and the per-item means as an array
    """One-way random-effects ANOVA (items) of an items x runs matrix with NaN for missing runs."""
    obs = ~np.isnan(mat)
    n_i = obs.sum(axis=1)
    keep = n_i > 0
    mat, obs, n_i = mat[keep], obs[keep], n_i[keep]
    n_items, total = len(n_i), n_i.sum()
    item_mean = np.nansum(mat, axis=1) / n_i
    grand = np.nansum(mat) / total
    ss_w = np.nansum((mat - item_mean[:, None]) ** 2)
    df_w = total - n_items
    ms_w = ss_w / df_w if df_w > 0 else np.nan
    ss_b = (n_i * (item_mean - grand) ** 2).sum()
    ms_b = ss_b / (n_items - 1) if n_items > 1 else np.nan
    n0 = (total - (n_i**2).sum() / total) / (n_items - 1) if n_items > 1 else np.nan
    var_b = (ms_b - ms_w) / n0
    return {"n_items": int(n_items), "n_runs": float(total / n_items), "accuracy": float(grand),
            "var_between": float(max(var_b, 0.0)), "var_within": float(ms_w),
            "var_between_raw": float(var_b), "item_means": item_mean, "inv_runs": float(np.mean(1 / n_i))}


@dataclass(frozen=True, eq=False, repr=False)
class VarianceComponents(Result):
    """Accuracy-scale variance components per row: what :func:`plan` reads.

    ``table`` has ``var_between`` (item-to-item variance of the per-item accuracy) and
    ``var_within`` (run-to-run variance within an item) on every row, with the row's keys and
    ``accuracy`` (or ``difference`` for pairs of levels).  ``method`` says where they come from:
    ``"moments"`` (:func:`variance_components`, the one-way ANOVA of items x runs), ``"glmm"``
    (:func:`accuracy_components`, :func:`components_from_fit`: implied by a logistic GLMM), or
    ``"lmer"``, ``"clmm"``, ``"glmmtmb"`` (:func:`components_from_fit` of those fits).  ``scale``
    names what the variances are of.
    """

    table: pd.DataFrame
    method: str = "moments"
    paired: bool = False
    scale: str = "accuracy (proportion)"

    def _title(self) -> str:
        what = "of paired differences " if self.paired else ""
        how = {"moments": "method of moments (items x runs ANOVA)", "glmm": "implied by a logistic GLMM",
               "lmer": "implied by a linear mixed model", "clmm": "implied by a cumulative-link mixed model",
               "glmmtmb": "implied by a glmmTMB fit"}.get(self.method, self.method)
        return f"Variance components {what}({how})"

    def _header(self) -> list[str]:
        return [f"scale: {self.scale}; var_between: between items, var_within: between runs of an item"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()


def variance_components(data: RunsData, by: str | Sequence[str] | None = None, *,
                        item: str | None = None, run: str | None = None,
                        outcome: str | None = None, missing: str = "raise") -> VarianceComponents:
    """Between-item and within-item (run-to-run) variance of the outcome, per slice.

    Method of moments from the one-way ANOVA of the items x runs matrix: ``var_within`` is the
    pooled within-item variance (unbiased for the mean of p_i (1 - p_i) with binary outcomes) and
    ``var_between = (MS_items - MS_within) / n0`` (n0 = runs per item, or its ANOVA average when the
    design is unbalanced), truncated at 0 (``var_between_raw`` keeps the untruncated value).
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    VarianceComponents
        ``table``: slice columns, ``n_items``, ``n_runs`` (mean runs per item), ``accuracy``,
        ``var_between``, ``var_within``, ``var_between_raw`` and ``icc`` = var_between /
        (var_between + var_within) (the one-way ICC of single runs).

    Examples
    --------
    >>> import evalmix
    >>> df = evalmix.simulate.glmm_runs(2, 50, 3, rng=1)
    >>> list(variance_components(df, "model").table.columns[:4])
    ['model', 'n_items', 'n_runs', 'accuracy']
    """
    by_ = sl.as_list(by)
    data, cols = sl.resolve(data, item=item, run=run, outcome=outcome, by=by_, missing=missing)
    rows = []
    for key, sub in sl.groups(data, by_):
        mat, _, _ = sl.item_run_matrix(sub, cols, sl.slice_label(by_, key))
        c = _components(mat)
        rows.append(dict(zip(by_, key)) | {k: c[k] for k in (
            "n_items", "n_runs", "accuracy", "var_between", "var_within", "var_between_raw")})
    out = pd.DataFrame(rows)
    tot = out["var_between"] + out["var_within"]
    out["icc"] = np.where(tot > 0, out["var_between"] / tot.where(tot > 0, 1.0), np.nan)
    return VarianceComponents(out, "moments")


def _paired_components(data: pd.DataFrame, by_: list[str], paired: str, cols: RunsSchema) -> pd.DataFrame:
    """Components of the accuracy difference of every pair of ``paired`` levels on shared items."""
    rest = [b for b in by_ if b != paired]
    rows = []
    for key, sub in sl.groups(data, rest):
        levels = sl.levels(sub[paired])
        mats = {}
        for lev in levels:
            part = sub[sub[paired] == lev]
            mats[lev] = part
        items = None
        for lev in levels:
            it = set(mats[lev][cols.item])
            items = it if items is None else items & it
        for a, b in itertools.combinations(levels, 2):
            ca = _components(sl.item_run_matrix(mats[a][mats[a][cols.item].isin(items)], cols)[0])
            cb = _components(sl.item_run_matrix(mats[b][mats[b][cols.item].isin(items)], cols)[0])
            d = ca["item_means"] - cb["item_means"]
            # runs of different models are independent draws: their noise adds
            noise = ca["var_within"] * ca["inv_runs"] + cb["var_within"] * cb["inv_runs"]
            var_b = d.var(ddof=1) - noise
            n_runs = 2 / (ca["inv_runs"] + cb["inv_runs"])  # harmonic mean keeps noise/R exact
            rows.append(dict(zip(rest, key)) | {
                f"{paired}_a": a, f"{paired}_b": b, "n_items": len(d), "n_runs": n_runs,
                "difference": ca["accuracy"] - cb["accuracy"], "var_between": max(var_b, 0.0),
                "var_within": ca["var_within"] + cb["var_within"], "var_between_raw": var_b})
    return pd.DataFrame(rows)


def _se(var_between: np.ndarray | float, var_within: np.ndarray | float, n_items: np.ndarray | float,
        n_runs: np.ndarray | float, items: str) -> np.ndarray:
    between = 0.0 if items == "fixed" else var_between / n_items
    return np.sqrt(between + var_within / (n_items * n_runs))


# ----------------------------------------------------------------------------------------------
# SE against runs


@dataclass(frozen=True, eq=False, repr=False)
class SEvsRunsResult(Result):
    """Standard error of slice accuracies against the number of runs.

    Attributes
    ----------
    paper : DataFrame
        The AI4Math paper's curves: ``curve`` (a level of ``curve_by``, or ``"average"`` for the
        model-averaged line), ``kind`` (``"predicted"`` = sd_all / sqrt(R) with sd_all the across-run
        SD of the slice accuracy; ``"empirical"`` = SD over each subset of R runs / sqrt(R), averaged
        over all subsets), ``n_runs`` and ``se`` (slice SEs averaged with weights = mean items per run).
    components : DataFrame
        :func:`variance_components` per slice.
    projection : DataFrame
        Slice columns, ``n_runs`` and ``se`` (items random: var_between/N + var_within/(N R)),
        ``se_runs`` (items fixed: only the run noise, the quantity the paper's curves estimate).
    pairs, pair_projection : DataFrame or None
        The same for paired differences between the levels of ``paired`` (columns ``<paired>_a``,
        ``<paired>_b``, ``difference``...), when requested.
    curves : str
        What ``to_frame()`` returns and the result prints: ``"corrected"`` (``projection``, the
        default) or ``"paper"`` (``paper``).  Both tables are always here.
    """

    paper: pd.DataFrame
    components: pd.DataFrame
    projection: pd.DataFrame
    by: tuple[str, ...]
    pairs: pd.DataFrame | None = None
    pair_projection: pd.DataFrame | None = None
    curves: str = "corrected"
    scale: str = "accuracy (proportion)"

    def _title(self) -> str:
        return "Standard error vs number of runs" + (
            f" by {', '.join(self.by)}" if self.by else "")

    def _header(self) -> list[str]:
        if self.curves == "paper":
            return ["the AI4Math paper's curves (SD of the run accuracies / sqrt(R)): run noise on "
                    "these items only; the decomposition is in .projection (curves=\"corrected\")"]
        return [f"scale: {self.scale}; se: sqrt(var_between / N + var_within / (N R)) per slice, items random "
                "(a new benchmark of N items); se_runs: run noise only, the quantity the paper's curves "
                "estimate; the paper's curves are in .paper (curves=\"paper\")"]

    def to_frame(self) -> pd.DataFrame:
        return (self.paper if self.curves == "paper" else self.projection).copy()

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict() | {"components": frame_records(self.components),
                                   "projection": frame_records(self.projection),
                                   "paper": frame_records(self.paper), "curves": self.curves}
        if self.pairs is not None:
            out["pairs"] = frame_records(self.pairs)
        return out


def _project(comp: pd.DataFrame, keys: list[str], runs: Sequence[int]) -> pd.DataFrame:
    rows = []
    for _, row in comp.iterrows():
        for r in runs:
            rows.append({k: row[k] for k in keys} | {
                "n_runs": r,
                "se": float(_se(row["var_between"], row["var_within"], row["n_items"], r, "random")),
                "se_runs": float(_se(row["var_between"], row["var_within"], row["n_items"], r, "fixed"))})
    return pd.DataFrame(rows)


def _paper_curves(data: pd.DataFrame, by_: list[str], curve_by: str | None, cols: RunsSchema) -> pd.DataFrame:
    runs = sl.levels(data[cols.run])
    n_r = len(runs)
    pred, emp = [], []
    for key, sub in sl.groups(data, by_):
        mat, _, _ = sl.item_run_matrix(sub, cols, sl.slice_label(by_, key))
        present = ~np.isnan(mat)
        if present.any(axis=0).sum() < n_r:
            continue  # the paper keeps only slices that have every run
        acc = np.nanmean(mat, axis=0)
        weight = present.sum(axis=0).mean()
        curve = dict(zip(by_, key))[curve_by] if curve_by else "all"
        sd_all = acc.std(ddof=1)
        for r in range(1, n_r + 1):
            pred.append({"curve": curve, "n_runs": r, "se": sd_all / math.sqrt(r), "w": weight})
            if r >= 2:
                ses = [acc[list(s)].std(ddof=1) / math.sqrt(r) for s in itertools.combinations(range(n_r), r)]
                emp.append({"curve": curve, "n_runs": r, "se": float(np.mean(ses)), "w": weight})
    out = []
    for kind, rows in (("predicted", pred), ("empirical", emp)):
        if not rows:
            continue
        f = pd.DataFrame(rows)
        g = (f.assign(sw=f["se"] * f["w"]).groupby(["curve", "n_runs"], sort=False)[["sw", "w"]].sum())
        per = (g["sw"] / g["w"]).rename("se").reset_index().assign(kind=kind)
        avg = per.groupby("n_runs", as_index=False)["se"].mean().assign(curve="average", kind=kind)
        out += [per, avg]
    return pd.concat(out, ignore_index=True)[["curve", "kind", "n_runs", "se"]]


def se_vs_runs(data: RunsData | MixedFit | ClmmResult | VarianceComponents, by: str | Sequence[str], *,
               item: str | None = None, run: str | None = None, outcome: str | None = None, max_runs: int = 10,
               curve_by: str | None = "model", paired: str | None = None,
               curves: Literal["corrected", "paper"] = "corrected", missing: str = "raise",
               n_items: int | Sequence[int] | None = None) -> SEvsRunsResult:
    """Standard error of slice accuracies against the number of runs averaged.

    Computes (1) the decomposition that answers the question properly: per slice, ``var_between``
    and ``var_within`` (:func:`variance_components`) and the projected SE for R = 1..max_runs, both
    for the accuracy on the population of items (``se``, items random) and for the accuracy on these
    very items (``se_runs``); and (2) the AI4Math paper's three curves (predicted sd_all / sqrt(R),
    empirical over run subsets, and their model average).  The paper's curves estimate ``se_runs``:
    they ignore that a new benchmark of N items would give a different accuracy, which no number of
    runs fixes.  The result prints and ``to_frame()`` returns the decomposition (``projection``) by
    default; ``curves="paper"`` makes them the paper's curves (``paper``).  Both are attributes
    either way.

    Parameters
    ----------
    data : DataFrame or path
        Long runs table.
    by : str or list of str
        Slice columns (``["model", "language", "prompt"]`` in the paper).
    item, run, outcome : str, optional
        Column names (defaults from :func:`evalmix.read_runs` roles, else conventional names).
    max_runs : int
        Largest R of the projection.
    curve_by : str or None
        Column of ``by`` whose levels get their own paper curve (``"model"``); None for one curve.
    paired : str, optional
        Column of ``by`` whose levels are compared pairwise on shared items (``"model"``) within each
        combination of the other slice columns; adds ``pairs`` and ``pair_projection``.
    curves : {"corrected", "paper"}
        Which table the result prints and ``to_frame()`` returns: the items-random projection
        (default) or the paper's curves.
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).
    n_items : int or list of int, optional
        From a fit or components: the numbers of items of the projection (default: the fit's
        number of items, or the components' ``n_items``); the projection gets an ``n_items``
        column.

    Returns
    -------
    SEvsRunsResult

    Notes
    -----
    ``data`` may also be a fitted :func:`evalmix.glmer`, :func:`evalmix.lmer`,
    :func:`evalmix.clmm` or :func:`evalmix.glmmtmb` model (``by`` then names its factor, e.g.
    ``"model"``; ``paired`` the same factor for pairwise differences), or the
    :class:`VarianceComponents` of :func:`components_from_fit`.  The projection is then of the
    SE of a level's mean (or a difference) on the fit's response scale (``components.scale``:
    the score for lmer, the mean rating for clmm, the proportion for glmmtmb, the accuracy for
    glmer) for ``n_items`` items and 1..``max_runs`` runs; there are no paper curves (they need
    the runs table).

    Examples
    --------
    >>> import evalmix
    >>> df = evalmix.simulate.glmm_runs(2, 60, 3, rng=1)
    >>> r = se_vs_runs(df, "model", max_runs=5)
    >>> sorted(r.paper["kind"].unique()), int(r.projection["n_runs"].max())
    (['empirical', 'predicted'], 5)
    >>> list(r.to_frame().columns), list(se_vs_runs(df, "model", curves="paper").to_frame().columns)
    (['model', 'n_runs', 'se', 'se_runs'], ['curve', 'kind', 'n_runs', 'se'])
    """
    if curves not in ("corrected", "paper"):
        raise ValueError(f"curves must be 'corrected' (the items-random projection) or 'paper', "
                         f"got {curves!r}")
    by_ = sl.as_list(by)
    if not by_:
        raise DataError("se_vs_runs needs slice columns (by=)")
    for name, value in (("curve_by", curve_by), ("paired", paired)):
        if value is not None and value not in by_:
            raise DataError(f"{name}={value!r} must be one of the slice columns {by_}")
    if max_runs < 1:
        raise ValueError(f"max_runs must be >= 1, got {max_runs}")
    if isinstance(data, VarianceComponents) or hasattr(data, "varcorr"):
        return _se_vs_runs_of_fit(data, by_, paired=paired, item=item or "item", max_runs=max_runs,
                                  curves=curves, n_items=n_items)
    if n_items is not None:
        raise ArgumentError("n_items= is for a fit or components; a runs table has its own items")
    data, cols = sl.resolve(data, item=item, run=run, outcome=outcome, by=by_, missing=missing)
    comp = variance_components(data, by_, item=cols.item, run=cols.run, outcome=cols.scores).table
    runs = range(1, int(max_runs) + 1)
    pairs = pair_proj = None
    if paired is not None:
        pairs = _paired_components(data, by_, paired, cols)
        keys = [b for b in by_ if b != paired] + [f"{paired}_a", f"{paired}_b"]
        pair_proj = _project(pairs, keys, runs)
    return SEvsRunsResult(paper=_paper_curves(data, by_, curve_by, cols), components=comp,
                          projection=_project(comp, by_, runs), by=tuple(by_), pairs=pairs,
                          pair_projection=pair_proj, curves=curves)


def _fit_items(fit: Any, item: str) -> int:
    """The number of levels of the item grouping factor of a fit."""
    groups = getattr(fit, "ngrps", None)
    if groups is None:
        groups = getattr(fit, "ngroups", None)
    groups = dict(groups) if groups is not None else {}
    if item not in groups:
        raise DataError(f"the fit has no grouping factor {item!r}; factors: {list(groups)}")
    return int(groups[item])


def _se_vs_runs_of_fit(fit: Any, by_: list[str], *, paired: str | None, item: str, max_runs: int,
                       curves: str, n_items: int | Sequence[int] | None) -> SEvsRunsResult:
    """se_vs_runs of a fitted mixed model (or its components): the projection only."""
    if curves == "paper":
        raise DataError("the paper's curves need the runs table; a fit gives the projection (curves='corrected')")
    if isinstance(fit, VarianceComponents):
        comp = fit
        pairs = None
    else:
        if len(by_) != 1:
            raise DataError(f"from a fit, by= names one factor of its fixed part (e.g. 'model'), got {by_}")
        comp = components_from_fit(fit, by_[0], item=item)
        if paired is not None and paired != by_[0]:
            raise DataError(f"paired={paired!r} must be the factor by={by_[0]!r}")
        pairs = components_from_fit(fit, by_[0], item=item, paired=True) if paired else None
    if n_items is None:
        if isinstance(fit, VarianceComponents):
            if "n_items" not in comp.table.columns:
                raise DataError("the components have no n_items column: pass n_items=")
            sizes: list[int | None] = [None]
        else:
            sizes = [_fit_items(fit, item)]
    else:
        given = [int(n) for n in np.atleast_1d(np.asarray(n_items))]
        if any(n < 1 for n in given):
            raise ArgumentError(f"n_items must be >= 1, got {n_items}")
        sizes = list(given)
    runs = range(1, int(max_runs) + 1)

    def project(table: pd.DataFrame) -> pd.DataFrame:
        keys = [c for c in table.columns if c not in _COMPONENT_VALUES | {"eta", "estimate"}]
        out = []
        for n in sizes:
            sized = table.assign(n_items=table["n_items"] if n is None else n)
            proj = _project(sized, keys, runs)
            proj.insert(len(keys), "n_items", np.repeat(sized["n_items"].to_numpy(), len(runs)))
            out.append(proj)
        return pd.concat(out, ignore_index=True)

    paper = pd.DataFrame({"curve": pd.Series(dtype=object), "kind": pd.Series(dtype=object),
                          "n_runs": pd.Series(dtype="int64"), "se": pd.Series(dtype=float)})
    return SEvsRunsResult(paper=paper, components=comp.table, projection=project(comp.table), by=tuple(by_),
                          pairs=None if pairs is None else pairs.table,
                          pair_projection=None if pairs is None else project(pairs.table), curves="corrected",
                          scale=comp.scale)


# ----------------------------------------------------------------------------------------------
# components implied by a logistic GLMM


def accuracy_components(eta: float | Sequence[float] | np.ndarray, sd_item: float, sd_item_run: float = 0.0,
                        n_nodes: int = 60) -> VarianceComponents:
    """Accuracy-scale variance components implied by a logistic GLMM.

    For ``logit P(y_ir = 1) = eta + a_i + c_ir`` with ``a ~ N(0, sd_item^2)`` and
    ``c ~ N(0, sd_item_run^2)`` independent over runs, the runs of item i are independent Bernoulli
    draws with probability ``p_i = E_c[expit(eta + a_i + c)]``.  Hence ``accuracy = E[p_i]``,
    ``var_between = Var(p_i)`` and ``var_within = E[p_i (1 - p_i)]``, computed by Gauss-Hermite
    quadrature.  Feed the result to :func:`plan` to plan from a fitted model's variance components.

    Parameters
    ----------
    eta : float or sequence of float
        Linear predictor(s) of the fixed part (one row per value).
    sd_item, sd_item_run : float
        Standard deviations of the item and item:run intercepts (logit scale).
    n_nodes : int
        Quadrature nodes per dimension.

    Returns
    -------
    VarianceComponents
        ``table``: ``eta``, ``accuracy``, ``var_between``, ``var_within``, one row per ``eta``.

    Examples
    --------
    >>> c = accuracy_components(0.0, 1.5, 0.5)
    >>> round(float(c.table["accuracy"][0]), 6)
    0.5
    """
    x, w = special.roots_hermitenorm(n_nodes)
    w = w / w.sum()
    rows = []
    for e in np.atleast_1d(np.asarray(eta, dtype=float)):
        inner = special.expit(e + sd_item * x[:, None] + sd_item_run * x[None, :]) @ w
        mean = float(inner @ w)
        second = float(inner**2 @ w)
        rows.append({"eta": e, "accuracy": mean, "var_between": second - mean**2,
                     "var_within": mean - second})
    return VarianceComponents(pd.DataFrame(rows), "glmm")


# ----------------------------------------------------------------------------------------------
# planning


@dataclass(frozen=True, eq=False, repr=False)
class PlanResult(Result):
    """The cheapest design meeting a target, or the most precise one within a budget.

    ``n_items``, ``n_runs``, ``cost`` and ``achieved`` (the target quantity at that design) of the
    chosen design; ``table`` lists, for each number of runs, the fewest items that meet the target
    (or, with a budget and no target, the most items the budget buys) and the cost.  ``target``
    names the criterion (``"se"``, ``"mdd"``, ``"width"`` or ``"inversions"``) and ``value`` its
    bound (NaN when the design minimises the criterion within ``budget``).
    """

    n_items: int
    n_runs: int
    cost: float
    achieved: float
    target: str
    value: float
    table: pd.DataFrame
    budget: float | None = None

    def _title(self) -> str:
        return "Study plan"

    def _header(self) -> list[str]:
        design = f"{self.n_items} items x {self.n_runs} runs, cost {self.cost:g}: {self.target} {self.achieved:.4g}"
        if math.isnan(self.value):
            return [f"{design} (the smallest within the budget {self.budget:g})"]
        within = "" if self.budget is None else f", budget {self.budget:g}"
        return [f"{design} (target {self.value:.4g}{within})"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"n_items": self.n_items, "n_runs": self.n_runs, "cost": self.cost,
                                    "achieved": self.achieved, "target": self.target,
                                    "value": None if math.isnan(self.value) else self.value,
                                    "budget": self.budget}


def _criterion(target: str, vb: np.ndarray, vw: np.ndarray, diff: np.ndarray | None, n: float, r: int,
               items: str, scale: float) -> float:
    """The target quantity at N items and R runs: ``scale * SE`` (the worst row) or inversions."""
    se = _se(vb, vw, n, r, items)
    if target != "inversions":
        return float(np.max(scale * se))
    if diff is None:
        raise ValueError(f"target={target!r} needs the differences to detect")
    return float(np.sum(stats.norm.cdf(-np.abs(diff) / se)))


def plan(components: pd.DataFrame | VarianceComponents | MixedFit | ClmmResult | None = None, *,
         var_between: float | None = None,
         var_within: float | None = None, se: float | None = None, mdd: float | None = None,
         width: float | None = None, inversions: float | None = None, budget: float | None = None,
         power: float = 0.8, alpha: float = 0.05, cost_item: float = 0.0, cost_run: float = 1.0,
         n_items: tuple[int, int] | int = (2, 1_000_000), max_runs: int = 50,
         items: Literal["random", "fixed"] = "random") -> PlanResult:
    """Cheapest (N items, R runs) that meets a precision target, or the most precise one within a budget.

    The cost of a design is ``N * cost_item + N * R * cost_run`` (``cost_item``: making or
    licensing one item; ``cost_run``: one sample, i.e. one answer to one item in one run).  The
    standard error of an accuracy (or of a paired difference, with difference components) is
    ``sqrt((var_between + var_within / R) / N)``; with ``items="fixed"`` the between-item term is
    dropped (the estimand is the accuracy on this very item set).

    At most one target:

    - ``se``: the SE of every slice's accuracy is at most ``se``;
    - ``mdd``: the minimum detectable difference at ``power`` (two-sided level ``alpha``),
      ``(z_{1-alpha/2} + z_power) * SE``, is at most ``mdd`` for every row (pass the components of
      paired differences, ``se_vs_runs(..., paired="model").pairs``);
    - ``width``: the full width of the two-sided ``1 - alpha`` Wald interval,
      ``2 z_{1-alpha/2} SE``, is at most ``width`` for every row;
    - ``inversions``: the expected number of rank inversions, the sum over model pairs of
      ``Phi(-|difference| / SE_pair)``, is at most ``inversions`` (components need a
      ``difference`` column: pass the pairs of one leaderboard).

    With a ``budget`` and a target, the cheapest design meeting the target must cost at most
    ``budget``.  With a ``budget`` and no target, the design is the one that minimises the minimum
    detectable difference (equivalently the SE: every row's SE falls together) among those the
    budget buys: for each R the most items affordable, then the R with the smallest MDD.

    Without a cost per item the continuous optimum is one run per item (more items); with one it
    is ``R* = sqrt(var_within * cost_item / (var_between * cost_run))`` (:func:`optimal_runs`
    gives the best design for a budget).

    Parameters
    ----------
    components : VarianceComponents, DataFrame or fit, optional
        Rows with ``var_between`` and ``var_within`` (and ``difference`` for inversions), e.g. from
        :func:`variance_components`, :func:`se_vs_runs` (``.pairs``), :func:`accuracy_components`
        or :func:`components_from_fit`; the design must meet the target for every row.  A fitted
        glmer, lmer, clmm or glmmtmb model of ``model`` stands for ``components_from_fit(fit)``
        (its pairs with ``mdd``, ``inversions`` or a budget alone): the target is then on the
        fit's response scale (:data:`FIT_SCALES`).
    var_between, var_within : float, optional
        Scalars instead of ``components``.
    se, mdd, width, inversions : float
        The target (exactly one, or none with ``budget``).
    budget : float, optional
        The most the study may cost.
    power, alpha : float
        For ``mdd`` (and ``alpha`` for ``width``).
    cost_item, cost_run : float
        Costs (see above); ``cost_run`` must be positive.
    n_items : int or (int, int)
        Allowed number of items: a fixed value or a (min, max) range.
    max_runs : int
        Largest number of runs considered.
    items : {"random", "fixed"}
        Whether the estimand generalises over items.

    Returns
    -------
    PlanResult

    Raises
    ------
    ArgumentError
        No target and no budget, several targets, or a negative cost, target or budget.
    DataError
        No design within the limits (and the budget) meets the target.

    Examples
    --------
    >>> p = plan(var_between=0.15, var_within=0.05, se=0.03, cost_item=10, cost_run=1)
    >>> p.n_items, p.n_runs
    (195, 2)
    >>> q = plan(var_between=0.15, var_within=0.05, budget=2000, cost_item=10, cost_run=1)
    >>> q.n_items, q.n_runs, round(q.achieved, 4)
    (166, 2, 0.091)
    """
    targets = (("se", se), ("mdd", mdd), ("width", width), ("inversions", inversions))
    chosen = [(k, v) for k, v in targets if v is not None]
    if components is not None and not isinstance(components, (pd.DataFrame, VarianceComponents)):
        # a fitted model: its levels' means, or their pairs for targets about differences
        components = components_from_fit(components, paired=any(k in ("mdd", "inversions") for k, _ in chosen)
                                         or (not chosen and budget is not None))
    if isinstance(components, VarianceComponents):
        components = components.table
    check_pilot_variance({"var_between": var_between, "var_within": var_within} if components is None else components)
    if len(chosen) > 1 or (not chosen and budget is None):
        given = ", ".join(f"{k}=" for k, _ in chosen) or "none"
        raise ArgumentError(f"give exactly one target (se=, mdd=, width= or inversions=), or a budget= "
                            f"to minimise the minimum detectable difference; got {given}")
    target, value = chosen[0] if chosen else ("mdd", math.nan)
    if chosen:
        check_number(value, target, minimum=0, strict=True)
    if budget is not None:
        check_number(budget, "budget", minimum=0, strict=True)
    check_number(cost_run, "cost_run", minimum=0, strict=True)
    check_number(cost_item, "cost_item", minimum=0)
    check_probability(power, "power")
    check_probability(alpha, "alpha")
    check_choice(items, "items", ("random", "fixed"))
    if components is None:
        if var_between is None or var_within is None:
            raise ArgumentError("give components= or both var_between= and var_within=")
        components = pd.DataFrame({"var_between": [var_between], "var_within": [var_within]})
    need = ["var_between", "var_within"] + (["difference"] if target == "inversions" else [])
    missing = [c for c in need if c not in components.columns]
    if missing:
        raise DataError(f"components lack column(s) {missing}")
    vb = components["var_between"].to_numpy(float)
    vw = components["var_within"].to_numpy(float)
    diff = components["difference"].to_numpy(float) if target == "inversions" else None
    n_lo, n_hi = (n_items, n_items) if isinstance(n_items, (int, np.integer)) else n_items
    z_half = stats.norm.ppf(1 - alpha / 2)
    scale = {"se": 1.0, "mdd": z_half + stats.norm.ppf(power), "width": 2 * z_half}.get(target, 1.0)

    def crit(n: int, r: int) -> float:
        return _criterion(target, vb, vw, diff, n, r, items, scale)

    rows = []
    for r in range(1, int(max_runs) + 1):
        if chosen:
            if not crit(n_hi, r) <= value * (1 + 1e-12):
                continue
            lo, hi = n_lo, n_hi  # the criterion falls with N: bisect for the fewest items
            if not crit(lo, r) <= value * (1 + 1e-12):
                while hi - lo > 1:
                    mid = (lo + hi) // 2
                    lo, hi = (lo, mid) if crit(mid, r) <= value * (1 + 1e-12) else (mid, hi)
                lo = hi
        else:  # the most items the budget buys at R runs (the criterion falls with N)
            assert budget is not None
            lo = min(n_hi, int(_items_within(budget, r, cost_item, cost_run)))
            if lo < n_lo:
                continue
        rows.append({"n_runs": r, "n_items": lo, "cost": lo * cost_item + lo * r * cost_run,
                     target: crit(lo, r)})
    if not rows:
        limits = f"{n_lo}..{n_hi} items and at most {max_runs} runs"
        if chosen:
            raise DataError(f"no design with {limits} reaches {target} <= {value}")
        raise DataError(f"the budget {budget:g} buys no design with {limits} (one item with one run costs "
                        f"{cost_item + cost_run:g})")
    table = pd.DataFrame(rows)
    if chosen:
        affordable = table if budget is None else table[table["cost"] <= budget * (1 + 1e-12)]
        if affordable.empty:
            raise DataError(f"no design within the budget {budget:g} reaches {target} <= {value}: the "
                            f"cheapest that does costs {table['cost'].min():g}")
        best = affordable.sort_values(["cost", "n_runs"], kind="stable").iloc[0]
    else:
        best = table.sort_values([target, "cost", "n_runs"], kind="stable").iloc[0]
    return PlanResult(n_items=int(best["n_items"]), n_runs=int(best["n_runs"]), cost=float(best["cost"]),
                      achieved=float(best[target]), target=target, value=float(value), table=table,
                      budget=None if budget is None else float(budget))


def _items_within(budget: float, runs: int | np.ndarray, cost_item: float, cost_run: float) -> np.ndarray:
    """The most items a ``budget`` buys at ``runs`` runs per item (the one rule of :func:`plan`
    and :func:`optimal_runs`); the factor guards budgets that divide exactly."""
    return np.floor(budget / (cost_item + np.asarray(runs) * cost_run) * (1 + 1e-12))


@dataclass(frozen=True, eq=False, repr=False)
class AllocationResult(Result):
    """Runs per item that minimise the standard error at a fixed budget, per row of components.

    ``table``: the components' key columns, ``var_between``, ``var_within``, ``n_runs_continuous``
    (the continuous optimum ``R*``), ``n_runs`` and ``n_items`` (the best whole-number design within
    the budget), ``cost``, ``se`` (of the accuracy at that design, items random) and
    ``se_one_run`` (the SE when the same budget buys one run per item, for comparison).
    """

    table: pd.DataFrame
    budget: float
    cost_item: float
    cost_run: float

    def _title(self) -> str:
        return "Runs per item for a budget"

    def _header(self) -> list[str]:
        return [f"budget {self.budget:g}; a design costs n_items * ({self.cost_item:g} + n_runs * "
                f"{self.cost_run:g}); se = sqrt(var_between / n_items + var_within / (n_items n_runs))"]

    def _notes(self) -> list[str]:
        return ["n_runs_continuous: sqrt(var_within * cost_item / (var_between * cost_run)), the optimum "
                "before rounding"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"budget": self.budget, "cost_item": self.cost_item,
                                    "cost_run": self.cost_run}


_COMPONENT_VALUES = {"n_items", "n_runs", "accuracy", "difference", "var_between", "var_within",
                     "var_between_raw", "icc", "se", "se_runs", "cost"}


def optimal_runs(components: pd.DataFrame | VarianceComponents | None = None, *, budget: float,
                 var_between: float | None = None, var_within: float | None = None,
                 cost_item: float = 0.0, cost_run: float = 1.0, max_runs: int = 50) -> AllocationResult:
    """How many runs per item minimise the SE of an accuracy for a given budget.

    For ``N`` items with ``R`` runs each the variance of the accuracy is ``var_between / N +
    var_within / (N R)`` and the cost ``N (cost_item + R cost_run)``.  Spending the whole budget
    ``B``, the variance is ``(var_between + var_within / R) (cost_item + R cost_run) / B``,
    smallest at the classical two-level optimum (Cochran, *Sampling techniques*, 10.6)::

        R* = sqrt(var_within * cost_item / (var_between * cost_run))

    where the minimal variance is ``(sqrt(var_between cost_item) + sqrt(var_within cost_run))^2 / B``.
    Without a cost per item ``R* = 0``: one run on as many items as possible is best.  The whole
    number design is found exactly (every ``R`` up to ``max_runs``, ``N = floor(B / (cost_item +
    R cost_run))``; ties go to fewer runs).  :func:`plan` answers the converse question, the
    cheapest design that reaches a target.

    Parameters
    ----------
    components : VarianceComponents or DataFrame, optional
        Rows with ``var_between`` and ``var_within``, from :func:`variance_components`,
        :func:`se_vs_runs` (``.pairs`` for paired differences) or :func:`components_from_fit`;
        each row gets its own design.
    budget : float
        What may be spent, in the units of the costs.
    var_between, var_within : float, optional
        Scalars instead of ``components``.
    cost_item, cost_run : float
        Cost of adding an item (writing, licensing, a fixed per-item overhead) and of one answer.
    max_runs : int
        Largest number of runs per item considered.

    Returns
    -------
    AllocationResult

    Raises
    ------
    DataError
        The budget does not buy one item with one run, or the components lack a column.

    Examples
    --------
    >>> r = optimal_runs(var_between=0.02, var_within=0.18, budget=10_000, cost_item=4, cost_run=1)
    >>> row = r.to_frame().iloc[0]
    >>> float(row["n_runs_continuous"]), int(row["n_runs"]), int(row["n_items"]), round(float(row["se"]), 5)
    (6.0, 6, 1000, 0.00707)
    """
    if isinstance(components, VarianceComponents):
        components = components.table
    if components is None:
        if var_between is None or var_within is None:
            raise ValueError("give components= or both var_between= and var_within=")
        components = pd.DataFrame({"var_between": [var_between], "var_within": [var_within]})
    elif var_between is not None or var_within is not None:
        raise ValueError("give components= or var_between= and var_within=, not both")
    missing = [c for c in ("var_between", "var_within") if c not in components.columns]
    if missing:
        raise DataError(f"components lack column(s) {missing}")
    check_pilot_variance(components)
    check_arguments(max_runs=max_runs)
    budget = check_number(budget, "budget", minimum=0, strict=True)
    cost_run = check_number(cost_run, "cost_run", minimum=0, strict=True)
    cost_item = check_number(cost_item, "cost_item", minimum=0)
    if budget < cost_item + cost_run:
        raise DataError(f"budget {budget:g} does not buy one item with one run (cost {cost_item + cost_run:g})")
    runs = np.arange(1, int(max_runs) + 1)
    n = _items_within(budget, runs, cost_item, cost_run)
    keys = [c for c in components.columns if c not in _COMPONENT_VALUES]
    rows = []
    for _, comp in components.iterrows():
        vb, vw = float(comp["var_between"]), float(comp["var_within"])
        if vb < 0 or vw < 0 or not (math.isfinite(vb) and math.isfinite(vw)):
            raise DataError(f"variance components must be finite and >= 0, got var_between={vb:g}, "
                            f"var_within={vw:g}")
        with np.errstate(divide="ignore", invalid="ignore"):
            r_star = math.sqrt(vw * cost_item / (vb * cost_run)) if vb > 0 else (math.inf if vw > 0 else 0.0)
            se = np.where(n >= 1, _se(vb, vw, n, runs, "random"), np.inf)
        best = int(np.argmin(se))  # the first minimum: fewer runs on a tie
        rows.append({k: comp[k] for k in keys} | {
            "var_between": vb, "var_within": vw, "n_runs_continuous": r_star, "n_runs": int(runs[best]),
            "n_items": int(n[best]), "cost": float(n[best] * (cost_item + runs[best] * cost_run)),
            "se": float(se[best]), "se_one_run": float(se[0])})
    return AllocationResult(pd.DataFrame(rows), float(budget), float(cost_item), float(cost_run))


# ----------------------------------------------------------------------------------------------
# components from a fitted mixed model


def _item_groups(fit: MixedFit, term: str, item: str, item_run: str | None
                 ) -> tuple[float, float, str | None, float]:
    """SDs of the item and item:run intercepts (0 without a run term), the run group's name, and
    the SD of a ``term:item`` intercept (an item harder for one model than for another; 0 without)."""
    from .reliability import latent_icc

    res = latent_icc(fit, item=item, item_run=item_run)
    var = dict(zip(map(str, res.table["component"]), res.table["variance"].astype(float)))
    own_names = {f"{term}:{item}", f"{item}:{term}"}
    own = [g for g in var if g in own_names]
    if item_run is None:
        item_run = next((g for g in var if g.startswith(f"{item}:") and g not in own_names), None)
    known = {item, item_run, "residual", "overdispersion", *own}
    other = [g for g in var if g not in known]
    if other:
        raise DataError(f"components_from_fit projects item, item:run and {term}:{item} intercepts; the fit also "
                        f"has random intercepts for {other} (for judges use "
                        "evalmix.judges.judge_components_from_fit and plan_judges)")
    sd_run = math.sqrt(var[item_run]) if item_run else 0.0
    return math.sqrt(var[item]), sd_run, item_run, math.sqrt(var[own[0]]) if own else 0.0


def _kind(fit: object) -> str:
    """Which response scale a fit's components are on: ``glmer`` (binomial GLMM), ``lmer``,
    ``clmm``, or the glmmTMB family (``beta``, ``betabinomial``, ``binomial``)."""
    from ..glmm import GlmerResult
    from ..lmm import LmerResult
    from ..ordinal import ClmmResult
    from ..tmb import GlmmTMBResult

    if isinstance(fit, GlmerResult):
        return "glmer"
    if isinstance(fit, LmerResult):
        return "lmer"
    if isinstance(fit, ClmmResult):
        return "clmm"
    if isinstance(fit, GlmmTMBResult):
        return str(fit.family)
    raise DataError(f"components_from_fit takes a glmer, lmer, clmm or glmmtmb fit, got {type(fit).__name__}")


#: What the components of each kind of fit are the variances of (the scale of the projected SE).
FIT_SCALES = {"glmer": "accuracy (proportion correct)", "lmer": "the score (observed scale)",
              "clmm": "the mean rating (category labels as numbers)",
              "beta": "the mean score (proportion)", "betabinomial": "the mean proportion k/n",
              "binomial": "the mean proportion k/n"}


def _moments(fit: Any, kind: str) -> Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]]:
    """The conditional mean and variance of one observation given its linear predictor."""
    if kind == "glmer":
        return lambda eta: (special.expit(eta), special.expit(eta) * special.expit(-eta))
    if kind == "lmer":
        sigma2 = float(fit.varcorr.loc[fit.varcorr["group"] == "Residual", "variance"].iloc[0])
        return lambda eta: (eta, np.full_like(eta, sigma2))
    if kind == "clmm":
        from ..mixed.links import inverse_link

        try:
            values = np.array([float(v) for v in fit.levels])
        except ValueError:  # labels that are not numbers are scored 1..K
            values = np.arange(1.0, len(fit.levels) + 1)
        # the thresholds centred as the latent reference grid centres eta (emmeans' clmm scale)
        theta = fit.thresholds.to_numpy(float)
        if len(theta) != len(values) - 1:
            raise DataError("components_from_fit needs the flexible thresholds of a clmm fit "
                            f"({len(values) - 1}), got {len(theta)}")
        theta = theta - theta.mean()

        def ordinal(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
            cum = inverse_link(fit.link, theta[None, :] - eta.reshape(-1, 1))  # P(Y <= j)
            probs = np.diff(np.concatenate([np.zeros((len(cum), 1)), cum, np.ones((len(cum), 1))], axis=1), axis=1)
            mean = probs @ values
            return mean.reshape(eta.shape), (probs @ values**2 - mean**2).reshape(eta.shape)
        return ordinal
    phi = float(fit.dispersion)
    n = float(np.median(fit.trials)) if kind != "beta" else 1.0

    def proportion(eta: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        mu = special.expit(eta)
        base = mu * (1 - mu)
        if kind == "beta":
            return mu, base / (1 + phi)
        if kind == "betabinomial":
            return mu, base / n * (1 + (n - 1) / (phi + 1))
        return mu, base / n
    return proportion


def _weights(sd: float, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite nodes (scaled by ``sd``) and weights of a normal effect; one node when sd = 0."""
    if sd == 0:
        return np.zeros(1), np.ones(1)
    x, w = special.roots_hermitenorm(n_nodes)
    return sd * x, w / w.sum()


def _quadrature_rows(moments: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]], etas: Sequence[float],
                     signs: Sequence[float], sd_item: float, sd_run: float, sd_own: float, shared_run: bool,
                     n_nodes: int) -> tuple[float, float, float]:
    """Mean, between-item and within-item (one run) variance of ``sum(sign * y_level)`` over
    the levels ``etas`` (one or two): the item effect is shared, each level has its own
    ``term:item`` effect, the run effect is shared when ``shared_run`` (else each level's own)
    and the residuals are independent.

    Axes: item, the first level's own item effect, the second's, run.  ``between`` is the
    variance over the item effects of the run-averaged sum; ``within`` the variance of one run
    given the item effects (run effect and residual)."""
    if len(etas) == 2 and sd_own > 0:
        n_nodes = min(n_nodes, 24)  # four dimensions: 24^4 points
    (xa, wa), (xd, wd), (xc, wc) = (_weights(sd, n_nodes) for sd in (sd_item, sd_own, sd_run))
    a, c = xa[:, None, None, None], xc[None, None, None, :]
    own = [xd[None, :, None, None], xd[None, None, :, None]]
    m = [moments(e + a + own[k] + c) for k, e in enumerate(etas)]
    if shared_run:
        total = sum(s * mv[0] for s, mv in zip(signs, m))
        g = total @ wc
        within_c = (total * total) @ wc - g * g
    else:
        g = sum(s * (mv[0] @ wc) for s, mv in zip(signs, m))
        within_c = sum((mv[0] * mv[0]) @ wc - (mv[0] @ wc) ** 2 for mv in m)
    noise = sum(mv[1] @ wc for mv in m)
    w3 = wa[:, None, None] * wd[None, :, None] * (wd if len(etas) == 2 else np.ones(1))[None, None, :]
    g = np.broadcast_to(g, w3.shape)
    mean = float((g * w3).sum())
    between = float((g * g * w3).sum()) - mean**2
    within = float((np.broadcast_to(within_c + noise, w3.shape) * w3).sum())
    return mean, between, within


def _clean(between: float, within: float) -> float:
    """A between-item variance that cancels exactly (shared effects of a linear model) is 0, not
    the quadrature's round-off."""
    return 0.0 if between < 1e-12 * (abs(within) + abs(between) + 1e-300) else between


def _fit_grid(fit: Any, kind: str, term: str, by_: list[str]) -> Any:
    if kind != "clmm":
        return level_means(fit, term, by_)
    from ..ordinal.emmeans import clmm_ref_grid

    factors = dict(fit.fixed_design.factors)
    for name in [term, *by_]:
        if name not in factors:
            raise DataError(f"{name!r} is not a factor of the fixed part; factors: {list(factors)}")
    means = clmm_ref_grid(fit).marginal([term], list(reversed(by_)))
    return replace(means, frame=means.frame[by_ + [term]], by=tuple(by_))


def components_from_fit(fit: MixedFit | ClmmResult, term: str = "model", *, by: str | Sequence[str] | None = None,
                        item: str = "item", item_run: str | None = None, paired: bool = False,
                        n_nodes: int = 60) -> VarianceComponents:
    """Response-scale variance components implied by a fitted mixed model, for planning.

    Each level of ``term`` (within ``by``) gets its marginal mean on the link scale ``eta``
    (equal weights over the other factors, as emmeans), and the fit's item and item:run standard
    deviations are integrated by Gauss-Hermite quadrature into the mean of one observation, its
    variance between items (``var_between``) and its variance between runs of an item
    (``var_within``), on the response scale of the fit:

    - :func:`evalmix.glmer` (binomial): accuracy, through :func:`accuracy_components`;
    - :func:`evalmix.lmer`: the score itself, exactly ``var_between = s2_item`` and
      ``var_within = s2_item:run + s2_residual``;
    - :func:`evalmix.clmm`: the mean rating (the category labels read as numbers, else 1..K),
      ``E[Y]`` and ``Var(Y)`` from the thresholds and the link;
    - :func:`evalmix.glmmtmb`: the mean score (beta: variance ``mu (1 - mu) / (1 + phi)``) or the
      proportion ``k / n`` of one observation of ``n`` trials (the fit's median), beta-binomial
      ``mu (1 - mu) / n (1 + (n - 1) / (phi + 1))`` or binomial.

    With ``paired=True`` the rows are the pairs of levels: ``difference`` of the means,
    ``var_between`` of the difference over the shared item effect and ``var_within`` of one run.
    A glmer fit treats the runs of two levels as independent draws (as before); the other fits
    follow their formula: an item:run intercept is shared by the two levels of a pair (the same
    run of an item), so it cancels in differences as far as the link allows.  Pass the result to
    :func:`plan`, :func:`optimal_runs` or :func:`se_vs_runs`.

    Parameters
    ----------
    fit : GlmerResult, LmerResult, ClmmResult or GlmmTMBResult
        A fit of ``... + (1|item)`` or ``... + (1|item) + (1|item:run)``.
    term : str
        Factor whose levels (e.g. models) get a row.
    by : str or list of str, optional
        Factors whose level combinations get separate rows.
    item, item_run : str
        Group names of the random intercepts (see :func:`evalmix.latent_icc`).
    paired : bool
        Rows for pairs of levels of ``term`` rather than for single levels.
    n_nodes : int
        Quadrature nodes per dimension.

    Returns
    -------
    VarianceComponents
        ``table``: the ``by`` columns and ``term`` with ``eta``, the mean (``accuracy`` for glmer,
        else ``estimate``), ``var_between``, ``var_within``; paired, ``<term>_a``, ``<term>_b``,
        ``difference`` and the components.  ``method`` names the fit (``glmm``, ``lmer``,
        ``clmm``, ``glmmtmb``) and ``scale`` the response scale.

    Examples
    --------
    >>> import evalmix
    >>> from evalmix.glmm import glmer
    >>> df = evalmix.simulate.glmm_runs(2, 60, 3, rng=2)
    >>> fit = glmer("correct ~ model + (1|item) + (1|item:run)", df)
    >>> list(components_from_fit(fit).table.columns)
    ['model', 'eta', 'accuracy', 'var_between', 'var_within']
    """
    from .ranking import grid_groups

    kind = _kind(fit)
    by_ = sl.as_list(by)
    sd_item, sd_run, run_group, sd_own = _item_groups(fit, term, item, item_run)
    means = _fit_grid(fit, kind, term, by_)
    grid = means.frame
    # a mean that is not estimable (an empty cell of a rank-deficient fit) is NaN, with a warning
    means.check_estimable(f"the marginal mean of {term}")
    # the grid evaluates eta: NaN where not estimable, and on a separated fit +-inf along a
    # divergent direction (accuracy 1 or 0, no variance) where L @ fixef would give NaN (0 * inf)
    eta = means.linear_predictor()
    if kind == "glmer" and sd_own == 0:
        return _glmer_components(grid, eta, by_, term, sd_item, sd_run, paired, n_nodes)
    moments = _moments(fit, kind)
    # a glmer fit's runs of two levels are independent draws (as accuracy_components has it);
    # elsewhere a run intercept is the same draw for every level unless the term is in its group
    shared = kind != "glmer" and run_group is not None and term not in str(run_group).split(":")
    method = {"glmer": "glmm", "lmer": "lmer", "clmm": "clmm"}.get(kind, "glmmtmb")
    mean_name = "accuracy" if kind == "glmer" else "estimate"
    scale = FIT_SCALES[kind]
    rows = []
    if not paired:
        for k in range(len(grid)):
            mean, vb, vw = _quadrature_rows(moments, [eta[k]], [1.0], sd_item, sd_run, sd_own, shared, n_nodes)
            rows.append({"eta": float(eta[k]), mean_name: mean, "var_between": _clean(vb, vw), "var_within": vw})
        table = pd.concat([grid.reset_index(drop=True), pd.DataFrame(rows)], axis=1)
        return VarianceComponents(table, method, scale=scale)
    for key, idx in grid_groups(grid, by_):
        for i, j in itertools.combinations(idx, 2):
            diff, vb, vw = _quadrature_rows(moments, [eta[i], eta[j]], [1.0, -1.0], sd_item, sd_run, sd_own,
                                            shared, n_nodes)
            rows.append(dict(zip(by_, key)) | {f"{term}_a": grid[term].iloc[i], f"{term}_b": grid[term].iloc[j],
                                               "difference": diff, "var_between": _clean(vb, vw), "var_within": vw})
    return VarianceComponents(pd.DataFrame(rows), method, paired=True, scale=scale)


def _glmer_components(grid: pd.DataFrame, eta: np.ndarray, by_: list[str], term: str, sd_item: float,
                      sd_run: float, paired: bool, n_nodes: int) -> VarianceComponents:
    from .ranking import grid_groups

    comp = accuracy_components(eta, sd_item, sd_run, n_nodes).table
    if not paired:
        return VarianceComponents(pd.concat([grid.reset_index(drop=True), comp.reset_index(drop=True)],
                                            axis=1), "glmm")
    x, w = special.roots_hermitenorm(n_nodes)
    w = w / w.sum()
    rows = []
    for key, idx in grid_groups(grid, by_):
        for i, j in itertools.combinations(idx, 2):
            # p(a) for both levels at the same item effect a, integrating the item:run effect
            pi = special.expit(eta[i] + sd_item * x[:, None] + sd_run * x[None, :]) @ w
            pj = special.expit(eta[j] + sd_item * x[:, None] + sd_run * x[None, :]) @ w
            d = pi - pj
            rows.append(dict(zip(by_, key)) | {
                f"{term}_a": grid[term].iloc[i], f"{term}_b": grid[term].iloc[j],
                "difference": float(d @ w), "var_between": float(d**2 @ w - (d @ w) ** 2),
                "var_within": float((pi * (1 - pi)) @ w + (pj * (1 - pj)) @ w)})
    return VarianceComponents(pd.DataFrame(rows), "glmm", paired=True)


# ----------------------------------------------------------------------------------------------
# significance stability


@dataclass(frozen=True, eq=False, repr=False)
class SignFlipResult(Result):
    """Which contrasts against the reference change significance between single runs and all runs.

    ``details``: ``run`` (``"all"`` or a run label), ``contrast`` (``"level - ref"``), ``estimate``,
    ``se``, ``conf_low``, ``conf_high`` (Wald, log-odds), ``p_value``, ``significant`` and ``flipped`` (the
    decision differs from the all-runs fit).  ``rate``: share of contrasts whose decision flips in
    at least one single run (the paper's definition); ``run_rate``: share of (run, contrast) pairs
    that flip.  ``fits``: one row per fit with ``formula``, ``nobs``, ``converged``, ``singular``.
    """

    details: pd.DataFrame
    fits: pd.DataFrame
    rate: float
    run_rate: float
    term: str
    ref: Hashable

    def _title(self) -> str:
        return f"Significance flips of {self.term} contrasts between single runs and all runs"

    def _header(self) -> list[str]:
        return [f"scale: log-odds (contrast level - reference); rate {self.rate:.3f} of "
                f"contrasts flip in some run, {self.run_rate:.3f} of (run, contrast) pairs"]

    def to_frame(self) -> pd.DataFrame:
        return self.details.copy()

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"rate": self.rate, "run_rate": self.run_rate,
                                    "fits": frame_records(self.fits)}


def _without_run_terms(formula: str, run: str) -> str:
    """The formula without random terms grouped by ``run`` (aliased with the item term in one run)."""
    from ..model import parse_formula

    return parse_formula(formula).without_random(run).text


def _fit_contrasts(data: pd.DataFrame, formula: str, term: str, ref: Hashable, conf_level: float) -> tuple:
    from ..glmm import glmer

    fit = glmer(formula, data)
    tab = fit.coef_table(conf_level).to_frame()
    design = fit.fixed_design
    mask = [t == term for t in design.column_terms]
    tab = tab[mask].copy()
    # R names a treatment contrast by the term and the level: modelGPT-4o
    tab["contrast"] = [contrast_label(c[len(term):] if c.startswith(term) else c, ref)
                       for c in tab["term"]]
    info = {"formula": formula, "nobs": fit.nobs, "converged": fit.converged, "singular": fit.singular}
    return tab, info


def _fit_job(job: tuple, term: str, ref: Hashable, conf_level: float) -> tuple:
    _, formula, data = job
    return _fit_contrasts(data, formula, term, ref, conf_level)


def sign_flip_rate(data: RunsData, formula: str, *, term: str = "model", ref: Hashable | None = None,
                   run: str | None = None, conf_level: float = 0.95, drop_run_terms: bool = True,
                   n_jobs: int | None = None, progress: bool = False,
                   missing: str = "raise") -> SignFlipResult:
    """Refit a GLMM on each single run and report which contrasts change significance.

    The model is fitted on all runs and, separately, on the rows of each run.  For every level of
    ``term`` the treatment contrast against ``ref`` is tested (Wald z, CI excluding 0 at
    ``conf_level``); a contrast *flips* when a single-run decision differs from the all-runs one.

    The AI4Math paper reported a 0% sign-flip rate, but its published helper fits the model on the
    subset and then tidies the full-data fit (``tidy(fit, ...)`` instead of ``tidy(fit5, ...)``), so
    every "single-run" decision was the all-runs decision and 0% was guaranteed.  This function
    refits.

    Parameters
    ----------
    data : DataFrame or path
        Long runs table.
    formula : str
        lme4-style formula, e.g. ``"correct ~ model + language + (1|item) + (1|item:run)"``.
    term : str
        Factor whose levels are contrasted with ``ref``.
    ref : optional
        Reference level (default: the first level).
    run : str, optional
        Run column (default from :func:`evalmix.read_runs` roles, else ``"run"``).
    conf_level : float
        Level of the Wald intervals.
    drop_run_terms : bool
        In single-run fits drop random terms grouped by the run column (``(1|item:run)`` has one
        level per item there and is aliased with ``(1|item)``).
    n_jobs : int, optional
        Fits run in parallel with joblib (default: an enclosing ``joblib.parallel_config``, else 1;
        see :func:`evalmix.core.parallel.parallel_map`).
    progress : bool
        Progress bar over fits.
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    SignFlipResult

    Examples
    --------
    >>> import evalmix
    >>> df = evalmix.simulate.glmm_runs(3, 40, 2, model_effects=[-2, 0, 0.1], rng=3)
    >>> r = sign_flip_rate(df, "correct ~ model + (1|item) + (1|item:run)", ref="M1")
    >>> sorted(r.details["contrast"].unique())
    ['M2 - M1', 'M3 - M1']
    """
    check_arguments(conf_level=conf_level, n_jobs=n_jobs, missing=missing)
    from ..model import check_data

    data = check_data(formula, data, missing=missing)
    run_col = ensure_runs(data, run=run, need_run=True, by=[term], check_outcome=False)[1].run
    levels = sl.levels(data[term])
    ref = levels[0] if ref is None else ref
    if ref not in levels:
        raise DataError(f"reference level {ref!r} is not a level of {term!r}: {levels}")
    d = data.copy()
    # levels are any hashable labels (pandas-stubs declares string categories only)
    categories: list[Any] = [ref] + [v for v in levels if v != ref]
    d[term] = pd.Categorical(d[term].astype(object), categories=categories)
    assert run_col is not None  # need_run=True
    single = _without_run_terms(formula, run_col) if drop_run_terms else formula
    runs = sl.levels(d[run_col])
    jobs = [("all", formula, d)] + [(r, single, d[d[run_col] == r]) for r in runs]
    out = parallel_map(partial(_fit_job, term=term, ref=ref, conf_level=conf_level), jobs, n_jobs=n_jobs,
                       progress=progress, desc="refits")
    alpha = 1 - conf_level
    frames, fits = [], []
    for (label, _, _), (tab, info) in zip(jobs, out):
        frames.append(pd.DataFrame({
            "run": str(label), "contrast": tab["contrast"].to_numpy(), "estimate": tab["estimate"].to_numpy(),
            "se": tab["se"].to_numpy(), "conf_low": tab["conf_low"].to_numpy(),
            "conf_high": tab["conf_high"].to_numpy(), "p_value": tab["p_value"].to_numpy(),
            "significant": (tab["p_value"] < alpha).to_numpy()}))
        fits.append({"run": str(label)} | info)
    details = pd.concat(frames, ignore_index=True)
    ref_sig = details[details["run"] == "all"].set_index("contrast")["significant"]
    details["flipped"] = details["significant"] != details["contrast"].map(ref_sig)
    singles = details[details["run"] != "all"]
    rate = float(singles.groupby("contrast")["flipped"].any().mean())
    return SignFlipResult(details=details, fits=pd.DataFrame(fits), rate=rate,
                          run_rate=float(singles["flipped"].mean()), term=term, ref=ref)
