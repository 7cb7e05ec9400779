"""Benchmark health: is the benchmark still measuring, and did a harness version change the scores?

:func:`item_health` asks, item by item, whether an item still separates the strongest models, and,
for the benchmark, how much of it is dead, how many items it is effectively worth, how far the
models' scores stand apart against their own noise, and how noisy each model is between runs.
:func:`version_shift` tests whether scores moved between harness or benchmark versions beyond the
models' own differences: a systematic shift (every item) from a GLMM with model fixed effects, and
item-by-version differential functioning (:func:`evalmix.studies.dif.logistic_dif`, matched on the
models' abilities) with Benjamini-Hochberg over items; the affected items and models are named and
the scores equated to the reference version.

Definitions (item health)
-------------------------
Write ``p_mi`` for model ``m``'s accuracy on item ``i`` (over its runs and conditions) and ``S_m``
for its score (the mean of ``p_mi`` over items).  The top-k models are the k highest scores.

- *discrimination among the top-k* (``top_discrimination``): the correlation, over the top-k
  models, of ``p_mi`` with the model's score on the other items (the corrected item-rest
  correlation, a point-biserial at the level of models).  An item is *dead* when every top-k
  response is correct (``all solve``), none is (``none solve``), or this correlation is below
  ``min_discrimination`` (``flat``: the top models' accuracies on it do not follow their strength).
- *effective number of items*: Kish's effective size ``(sum w)^2 / sum w^2`` of the weights
  ``w_i = max(top_discrimination, 0)`` (0 for dead items): the number of equally discriminating
  items that would carry the same weight.
- *signal-to-noise ratio* (``snr``): the variance of ``S_m`` over the top-k models against the mean
  variance of a model's score relative to the others (``d_mi = p_mi - mean over models``) from
  item sampling, ``K/(K-1) var_i(d_mi) / I``, which holds its run-to-run part
  (``noise_run``, from the runs' binomial spread).  With no true differences among the top-k the
  ratio is about 1; a benchmark that ranks them reliably has a ratio well above it
  (reliability ``1 - 1/snr``).
- *run noise per model*: ``run_sd``, the SD of a response between runs (the square root of the
  mean over items of the within-item variance over runs), and ``score_se_run``, the SD of the
  model's score over a full rerun.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import special, stats

from ..core.arguments import check_choice, check_count, check_level, check_number
from ..core.errors import ArgumentError, DataError
from ..core.result import Result, Summary, frame_records
from ..data.runs import ensure_runs
from ..core.methods import DIF_KINDS, HEALTH_METHODS, DifKind, HealthMethod
from .dif import logistic_dif, reference_level

__all__ = ["ItemHealth", "VersionShift", "item_health", "version_shift"]

# refits of the matching without the flagged items (DIF purification); it stops when the flags repeat
_PURIFY_ROUNDS = 3


# ----------------------------------------------------------------------------------------------
# the table


@dataclass(frozen=True)
class _Grid:
    """Counts per (model, item) and the within-cell run variances behind them."""

    k: np.ndarray          # models x items, correct answers
    n: np.ndarray          # models x items, responses
    run_var: np.ndarray    # models x items, variance of p_mi over reruns (NaN: one response per cell)
    cell_var: np.ndarray   # models x items, mean within-cell variance of a response (NaN likewise)
    models: np.ndarray
    items: np.ndarray


def _read(data: pd.DataFrame | str | Path, item: str | None, model: str | None, outcome: str | None,
          run: str | None,
          successes: str | None, trials: str | None, by: Sequence[str] = ()
          ) -> tuple[pd.DataFrame, object, str, str | None]:
    out: str | None = outcome
    if successes is not None or trials is not None or (
            outcome == "correct" and isinstance(data, pd.DataFrame) and "correct" not in data.columns):
        out = None
    table, schema = ensure_runs(data, item=item, model=model, run=run, outcome=out, successes=successes,
                                trials=trials, need_item=True, need_model=True, by=list(by))
    if schema.counts:
        table = table.assign(_k=table[schema.successes].to_numpy(dtype=float),
                             _n=table[schema.trials].to_numpy(dtype=float))
    else:
        table = table.assign(_k=table[schema.scores].to_numpy(dtype=float), _n=1.0)
    return table, schema, str(schema.model), schema.run


def _grid(table: pd.DataFrame, model: str, item: str, cells: Sequence[str]) -> _Grid:
    keys = [model, item, *cells]
    c = table.groupby(keys, sort=False, observed=True)[["_k", "_n"]].sum().reset_index()
    p = c["_k"] / c["_n"]
    # unbiased within-cell variance of one response over its runs; one response: not identified
    s2 = np.where(c["_n"] >= 2, p * (1 - p) * c["_n"] / np.maximum(c["_n"] - 1, 1), np.nan)
    c = c.assign(_ns2=c["_n"] * s2, _s2=s2, _id=np.isfinite(s2).astype(float),
                 _s2z=np.nan_to_num(s2))
    g = c.groupby([model, item], sort=True, observed=True).agg(
        k=("_k", "sum"), n=("_n", "sum"), ns2=("_ns2", "sum"), s2=("_s2z", "sum"), cells=("_id", "sum"),
        all_cells=("_k", "size"))
    models = np.asarray(sorted(pd.unique(table[model]), key=str), dtype=object)
    items = np.asarray(sorted(pd.unique(table[item]), key=str), dtype=object)
    full = pd.MultiIndex.from_product([models, items], names=[model, item])
    g = g.reindex(full)
    shape = (len(models), len(items))
    k = g["k"].to_numpy(dtype=float).reshape(shape)
    n = g["n"].to_numpy(dtype=float).reshape(shape)
    identified = (g["cells"] == g["all_cells"]).to_numpy().reshape(shape)
    with np.errstate(invalid="ignore", divide="ignore"):
        run_var = np.where(identified, g["ns2"].to_numpy(dtype=float).reshape(shape) / n ** 2, np.nan)
        cell_var = np.where(identified, g["s2"].to_numpy(dtype=float).reshape(shape)
                            / g["all_cells"].to_numpy(dtype=float).reshape(shape), np.nan)
    return _Grid(k=k, n=n, run_var=run_var, cell_var=cell_var, models=models, items=items)


def _rest_correlation(p: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """Per item (column): correlation over the models ``rows`` of ``p_mi`` with the model's mean
    on the other items; NaN where either side is constant."""
    sub = p[rows]
    ok = np.isfinite(sub)
    tot = np.where(ok, sub, 0.0).sum(axis=1, keepdims=True)
    cnt = ok.sum(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        rest = (tot - np.where(ok, sub, 0.0)) / (cnt - ok)
    out = np.full(p.shape[1], np.nan)
    for j in range(p.shape[1]):
        m = ok[:, j] & np.isfinite(rest[:, j])
        if m.sum() < 3:
            continue
        x, y = sub[m, j], rest[m, j]
        sx, sy = x.std(), y.std()
        if sx > 1e-12 and sy > 1e-12:
            out[j] = float(np.mean((x - x.mean()) * (y - y.mean())) / (sx * sy))
    return out


# ----------------------------------------------------------------------------------------------
# item health


@dataclass(frozen=True, eq=False, repr=False)
class ItemHealth(Result):
    """Item and benchmark health (see :func:`item_health`).

    Attributes
    ----------
    items : DataFrame
        One row per item: ``item``, ``n`` (responses), ``accuracy``, ``difficulty`` and
        ``discrimination`` (from ``method``), ``top_accuracy`` and ``top_discrimination`` (among
        the top-k models), ``dead`` and ``reason`` (``"all solve"``, ``"none solve"``, ``"flat"``
        or empty).
    models : DataFrame
        One row per model, best first: ``model``, ``rank``, ``top``, ``accuracy`` (the score,
        items weighted equally), ``n_items``, ``run_sd`` (SD of a response between runs),
        ``score_se_run`` (SD of the score over a rerun) and ``score_se_item`` (item-sampling SE of
        the score relative to the other models; it holds the run part).
    benchmark : DataFrame
        One row: ``n_items``, ``n_models``, ``top_k``, ``dead``, ``dead_share``, ``all_solve``,
        ``none_solve``, ``flat``, ``effective_items``, ``signal_var``, ``noise_item``,
        ``noise_run``, ``snr``, ``reliability``.
    method : str
        ``"2pl"`` (:func:`evalmix.fit_irt` with the run noise layer) or ``"point_biserial"``.
    min_discrimination : float
    """

    items: pd.DataFrame
    models: pd.DataFrame
    benchmark: pd.DataFrame
    method: str
    top_k: int
    min_discrimination: float

    def to_frame(self) -> pd.DataFrame:
        return self.items

    def _title(self) -> str:
        return "Item health"

    def _header(self) -> list[str]:
        b = self.benchmark.iloc[0]
        snr = "NA" if not np.isfinite(b["snr"]) else f"{b['snr']:.3g}"
        return [f"{int(b['n_items'])} items, {int(b['n_models'])} models; top-k = {self.top_k}; "
                f"item parameters: {'2PL with run noise' if self.method == '2pl' else 'point-biserial'}",
                f"dead among the top {self.top_k}: {int(b['dead'])} ({b['dead_share']:.1%}: "
                f"{int(b['all_solve'])} all solve, {int(b['none_solve'])} none solve, {int(b['flat'])} flat, "
                f"top_discrimination < {self.min_discrimination:g}); effective items {b['effective_items']:.1f}",
                f"signal-to-noise ratio {snr} (between-model score variance over item-sampling and run noise)"]

    def summary(self) -> Summary:
        return Summary(self._title(), self._header(),
                       [("items", self.items), ("models", self.models), ("benchmark", self.benchmark)],
                       self._notes())

    def to_dict(self) -> dict[str, object]:
        return {"table": frame_records(self.items), "models": frame_records(self.models),
                "benchmark": frame_records(self.benchmark)[0], "method": self.method, "top_k": self.top_k,
                "min_discrimination": self.min_discrimination}

    def dead_items(self) -> list[str]:
        """The dead items' labels, in table order."""
        t = self.items
        return [str(i) for i in t.loc[t["dead"], "item"]]


def item_health(data: pd.DataFrame | str | Path, top_k: int | None = None, *, item: str | None = None,
                model: str | None = None, outcome: str | None = None, run: str | None = None,
                successes: str | None = None, trials: str | None = None, method: HealthMethod = "auto",
                min_discrimination: float = 0.1, min_models_2pl: int = 10) -> ItemHealth:
    """Which items still separate the top models, and how healthy the benchmark is.

    Parameters
    ----------
    data : DataFrame or path
        A runs table (:func:`evalmix.read_runs`'s rules): item, model, 0/1 outcome (or k-of-n
        counts), optionally a run column and conditions (prompt, language...), whose cells hold the
        repeats that measure run noise.
    top_k : int, optional
        How many of the best models an item must separate (default: all models; at least 3).
    item, model, outcome, run : str, optional
        Columns of the table (default: the roles :func:`evalmix.read_runs` recorded, else
        ``item``, ``model``, ``correct``).
    successes, trials : str, optional
        k-of-n count columns instead of ``outcome``.
    method : {"auto", "2pl", "point_biserial"}
        Item difficulty and discrimination over all models: a 2PL with run noise
        (:func:`evalmix.fit_irt`; ``difficulty`` on the ability scale), or the item-rest
        correlation over models with ``difficulty = logit`` of the item's failure rate.
        ``"auto"``: the 2PL with at least ``min_models_2pl`` models.
    min_discrimination : float
        An item whose ``top_discrimination`` is below this is ``flat`` (dead).
    min_models_2pl : int
        The fewest models for which ``"auto"`` fits the 2PL.

    Returns
    -------
    ItemHealth

    Examples
    --------
    >>> import evalmix
    >>> runs = evalmix.read_runs("data/example_runs.csv")
    >>> h = item_health(runs, top_k=4)
    >>> h.benchmark[["n_items", "top_k"]].iloc[0].tolist()
    [105, 4]
    >>> sorted(set(h.items["reason"]) - {""}) <= ["all solve", "flat", "none solve"]
    True
    """
    method = check_choice(method, "method", HEALTH_METHODS)
    min_discrimination = check_number(min_discrimination, "min_discrimination", minimum=-1.0, maximum=1.0)
    min_models_2pl = check_count(min_models_2pl, "min_models_2pl", minimum=3)
    table, schema, mcol, rcol = _read(data, item, model, outcome, run, successes, trials)
    icol = str(schema.item)  # type: ignore[attr-defined]
    slices = list(schema.slices)  # type: ignore[attr-defined]
    g = _grid(table, mcol, icol, slices)
    M, I = g.k.shape
    if M < 3:
        raise DataError(f"item_health needs at least 3 models in column {mcol!r}, got {M}")
    if I < 3:
        raise DataError(f"item_health needs at least 3 items in column {icol!r}, got {I}")
    if top_k is None:
        top_k = M
    if isinstance(top_k, bool) or not isinstance(top_k, (int, np.integer)) or not 3 <= top_k <= M:
        raise ArgumentError(f"top_k={top_k!r} must be a whole number from 3 to the number of models ({M})")
    top_k = int(top_k)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = g.k / g.n
    score = np.nanmean(p, axis=1)
    order = np.argsort(-score, kind="stable")
    top = order[:top_k]
    # items
    n_item = np.nansum(g.n, axis=0)
    acc_item = np.nansum(g.k, axis=0) / n_item
    kt, nt = np.nansum(g.k[top], axis=0), np.nansum(g.n[top], axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        top_acc = kt / nt
    top_r = _rest_correlation(p, top)
    reason = np.where(nt == 0, "no responses", np.where(kt >= nt, "all solve", np.where(
        kt <= 0, "none solve", np.where(~(top_r >= min_discrimination), "flat", ""))))
    use_2pl = method == "2pl" or (method == "auto" and M >= min_models_2pl)
    if use_2pl:
        from .irt import fit_irt
        run_cols = slices + ([rcol] if rcol else [])
        fit = fit_irt(table, item=icol, model=mcol, correct="_k", run=run_cols or None,
                      successes="_k", trials="_n")
        par = fit.items.set_index("item").reindex(g.items)
        difficulty = par["difficulty"].to_numpy(dtype=float)
        discrimination = par["discrimination"].to_numpy(dtype=float)
    else:
        difficulty = -special.logit((np.nansum(g.k, axis=0) + 0.5) / (n_item + 1.0))
        discrimination = _rest_correlation(p, np.arange(M))
    items = pd.DataFrame({"item": g.items, "n": n_item.astype(np.int64), "accuracy": acc_item,
                          "difficulty": difficulty, "discrimination": discrimination,
                          "top_accuracy": top_acc, "top_discrimination": top_r,
                          "dead": reason != "", "reason": reason})
    # models
    with np.errstate(invalid="ignore", divide="ignore"):
        n_items_m = np.isfinite(p).sum(axis=1)
        run_sd = np.sqrt(np.nanmean(g.cell_var, axis=1))
        score_se_run = np.sqrt(np.nansum(g.run_var, axis=1)) / n_items_m
        run_sd = np.where(np.isfinite(g.cell_var).any(axis=1), run_sd, np.nan)
        score_se_run = np.where(np.isfinite(g.run_var).any(axis=1), score_se_run, np.nan)
        d_all = p - np.nanmean(p, axis=0, keepdims=True)
        se_item = np.sqrt(np.nanvar(d_all, axis=1, ddof=1) * M / (M - 1) / n_items_m)
    rank = np.empty(M, dtype=np.int64)
    rank[order] = np.arange(1, M + 1)
    models = pd.DataFrame({"model": g.models, "rank": rank, "top": np.isin(np.arange(M), top),
                           "accuracy": score, "n_items": n_items_m.astype(np.int64), "run_sd": run_sd,
                           "score_se_run": score_se_run, "score_se_item": se_item}
                          ).sort_values("rank", kind="stable").reset_index(drop=True)
    # benchmark
    d = p[top] - np.nanmean(p[top], axis=0, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        noise_m = np.nanvar(d, axis=1, ddof=1) * top_k / (top_k - 1) / n_items_m[top]
        run_m = np.nansum(g.run_var[top], axis=1) / n_items_m[top] ** 2
    noise = float(np.mean(noise_m))
    noise_run = float(np.mean(run_m)) if np.isfinite(g.run_var[top]).any() else math.nan
    signal = float(np.var(score[top], ddof=1))
    snr = signal / noise if noise > 0 else math.inf
    w = np.where(reason == "", np.clip(np.nan_to_num(top_r), 0.0, None), 0.0)
    n_eff = float(w.sum() ** 2 / np.sum(w ** 2)) if np.sum(w ** 2) > 0 else 0.0
    benchmark = pd.DataFrame([{
        "n_items": I, "n_models": M, "top_k": top_k, "dead": int((reason != "").sum()),
        "dead_share": float((reason != "").mean()), "all_solve": int((reason == "all solve").sum()),
        "none_solve": int((reason == "none solve").sum()), "flat": int((reason == "flat").sum()),
        "effective_items": n_eff, "signal_var": signal,
        "noise_item": max(noise - noise_run, 0.0) if np.isfinite(noise_run) else noise,
        "noise_run": noise_run, "snr": snr,
        "reliability": max(0.0, 1.0 - 1.0 / snr) if snr > 0 else 0.0}])
    return ItemHealth(items=items, models=models, benchmark=benchmark,
                      method="2pl" if use_2pl else "point_biserial", top_k=top_k,
                      min_discrimination=min_discrimination)


# ----------------------------------------------------------------------------------------------
# version shifts


@dataclass(frozen=True, eq=False, repr=False)
class VersionShift(Result):
    """Score shifts between harness or benchmark versions beyond the models' differences (see
    :func:`version_shift`).

    Attributes
    ----------
    overall : DataFrame
        ``test``, ``version``, ``estimate`` (log-odds), ``se``, ``conf_low``, ``conf_high``,
        ``statistic``, ``df``, ``p_value``: the systematic shift of each version against the
        reference (Wald z of the GLMM's version effect; NaN when not identified), the joint Wald
        test of the systematic shifts, and the item-by-version test (the sum of the items'
        chi-squares).
    items : DataFrame
        The per-item DIF table of :func:`evalmix.studies.dif.logistic_dif` (``estimate``: the item's
        shift beyond the systematic one, log-odds), with ``dispersion`` (what each statistic was
        divided by) and ``models`` (the models answering the item under a non-reference version).
    models : DataFrame
        One row per (model, version): ``model``, ``version``, ``n_items``, ``accuracy``,
        ``shift_systematic`` and ``shift_items`` (the accuracy the version's systematic shift, when
        significant, and its flagged items' shifts add at the model's ability), ``equated``
        (``accuracy`` minus both: the score on the reference version's scale) and ``affected``.
    reference : str
    identified : bool
        Whether some models were run under several versions, linking them: only then can a
        systematic shift be told from model strength.
    """

    overall: pd.DataFrame
    items: pd.DataFrame
    models: pd.DataFrame
    version: str
    reference: str
    identified: bool
    dispersion: float
    run_sd: float
    kind: str
    alpha: float

    def to_frame(self) -> pd.DataFrame:
        return self.overall

    def _title(self) -> str:
        return f"Version shift: {self.version!r} against {self.reference!r}"

    def _header(self) -> list[str]:
        link = ("linked: some models ran under several versions" if self.identified else
                "not linked: no model ran under two versions, so a systematic shift cannot be told from "
                "model strength; only item-specific shifts are tested")
        return [f"GLMM with model fixed effects; {link}",
                f"item x version: logistic-regression DIF ({self.kind}, score tests) matched on model ability, "
                f"BH over items at {self.alpha:g}; dispersion {self.dispersion:.3g}, run SD {self.run_sd:.3g}"]

    def _notes(self) -> list[str]:
        flagged = self.affected_items()
        models = sorted({str(m) for m in self.models.loc[self.models["affected"], "model"]})
        shown = ", ".join(flagged[:10]) + (f" and {len(flagged) - 10} more" if len(flagged) > 10 else "")
        return [f"{len(flagged)} of {len(self.items)} items shifted" + (f": {shown}" if flagged else ""),
                f"affected models: {', '.join(models) if models else 'none'}"]

    def summary(self) -> Summary:
        return Summary(self._title(), self._header(),
                       [("overall", self.overall), ("items", self.items), ("models", self.models)], self._notes())

    def to_dict(self) -> dict[str, object]:
        return {"table": frame_records(self.overall), "items": frame_records(self.items),
                "models": frame_records(self.models), "reference": self.reference,
                "identified": self.identified, "dispersion": self.dispersion, "run_sd": self.run_sd}

    def affected_items(self) -> list[str]:
        """The items flagged at the FDR level, in table order."""
        t = self.items
        return [str(i) for i in t.loc[t["flagged"], "item"]]


def _linked(pairs: pd.DataFrame, mcol: str, vcol: str) -> bool:
    """Whether the model-version graph is connected (every version reachable through models run
    under several versions)."""
    parent: dict[object, object] = {}

    def find(x: object) -> object:
        while parent.setdefault(x, x) != x:
            x = parent[x]
        return x

    for m, v in zip(pairs[mcol], pairs[vcol]):
        parent[find(("m", m))] = find(("v", v))
    roots = {find(("v", v)) for v in pairs[vcol]}
    return len(roots) == 1


def version_shift(data: pd.DataFrame | str | Path, version: str = "harness_version", *, item: str | None = None,
                  model: str | None = None, outcome: str | None = None, run: str | None = None,
                  successes: str | None = None, trials: str | None = None, reference: object | None = None,
                  kind: DifKind = "uniform", alpha: float = 0.05, conf_level: float = 0.95) -> VersionShift:
    """Do scores shift between harness or benchmark versions beyond the models' own differences?

    Two parts, both conditional on the model, so that a version used only by stronger (newer)
    models does not read as a shift:

    1. *Systematic shift*: the GLMM ``correct ~ 0 + model + version + (1|item) [+ (1|item:run)]``
       (:func:`evalmix.glmer`).  The model fixed effects absorb every difference between models;
       the version effect is identified by the models run under several versions (a connected
       model-version design), and is reported as not identified otherwise.
    2. *Item by version*: each item's responses, aggregated per (model, version), are regressed on
       the model's ability under that version (its GLMM fixed effect plus the version's systematic
       shift) with a slope of the item's own, and tested for a version shift of the item
       (Swaminathan-Rogers, :func:`evalmix.studies.dif.logistic_dif`, by Rao's score test: the
       likelihood-ratio test runs above its nominal level with a few dozen models per item).  The
       statistics are divided by a dispersion for what the binomial misses: the model-by-item
       spread across a model's repeats (Pearson, pooled over items) and the item:run noise that the
       runs of each version share (the GLMM's run SD).  Per-item p-values are adjusted by
       Benjamini-Hochberg; the overall item-by-version test sums the items' chi-squares.

    Scores are equated to the reference version by removing the expected effect (on each model's
    accuracy, at its ability) of a significant systematic shift and of the flagged items' shifts.

    Parameters
    ----------
    data : DataFrame or path
        A runs table with a version column.
    version : str
        Column naming the harness or benchmark version of each response.
    item, model, outcome, run : str, optional
        Columns (default: the roles :func:`evalmix.read_runs` recorded, else ``item``, ``model``,
        ``correct``); ``run`` adds the item:run noise term.
    successes, trials : str, optional
        k-of-n count columns instead of ``outcome``.
    reference : optional
        Reference version (default: the first in sorted order).
    kind : {"uniform", "both"}
        Item shifts tested: of the log-odds (``"uniform"``), or also of the slope (``"both"``).
    alpha : float
        FDR level of the item flags and level of the systematic-shift test.
    conf_level : float
        Level of the systematic shift's interval.

    Returns
    -------
    VersionShift

    Examples
    --------
    >>> from evalmix.simulate import simulate_versions
    >>> runs, truth = simulate_versions(n_items=20, n_models=6, n_runs=1, rng=1)
    >>> res = version_shift(runs)
    >>> res.identified, res.reference
    (True, 'v1')
    """
    kind = check_choice(kind, "kind", DIF_KINDS)
    alpha = check_level(alpha, "alpha")
    conf_level = check_level(conf_level)
    table, schema, mcol, rcol = _read(data, item, model, outcome, run, successes, trials, by=[version])
    icol = str(schema.item)  # type: ignore[attr-defined]
    if version not in table.columns:
        raise DataError(f"version_shift: no version column {version!r}; the table has {list(table.columns)}")
    ref, others = reference_level(table[version], version, reference, "version_shift", "nothing to compare")
    from ..glmm import glmer
    from ..model import make_formula

    # coded labels: the formula sees plain names whatever the data call their models and versions
    mlev = sorted(pd.unique(table[mcol]), key=str)
    mcode = {m: f"L{j}" for j, m in enumerate(mlev)}
    vcode = {v: f"L{j}" for j, v in enumerate([ref] + others)}
    work = pd.DataFrame({"m_": table[mcol].map(mcode), "i_": table[icol].astype(str).to_numpy(),
                         "v_": pd.Categorical(table[version].map(vcode), categories=list(vcode.values())),
                         "r_": (table[rcol].astype(str) + "|" + table[version].astype(str)).to_numpy()
                         if rcol else "1", "k_": table["_k"].to_numpy(), "n_": table["_n"].to_numpy()})
    work = work.groupby(["m_", "i_", "v_", "r_"], observed=True, as_index=False)[["k_", "n_"]].sum()
    identified = _linked(work[["m_", "v_"]].drop_duplicates(), "m_", "v_")
    runs_per = work.groupby(["i_", "v_"], observed=True)["r_"].nunique()
    use_runs = bool(rcol) and bool((runs_per >= 2).any())
    formula = make_formula("k_", ["0", "m_"] + (["v_"] if identified else []),
                           ["i_"] + (["i_:r_"] if use_runs else []), trials="n_")
    cells = work.groupby(["m_", "i_", "v_"], observed=True, as_index=False)[["k_", "n_"]].sum()
    inv_m = {c: m for m, c in mcode.items()}
    inv_v = {c: v for v, c in vcode.items()}
    cells["model"] = [inv_m[c] for c in cells["m_"]]
    cells["version"] = [inv_v[str(c)] for c in cells["v_"]]
    cells["item"] = cells["i_"]
    r_ref = runs_per.xs(vcode[ref], level="v_") if vcode[ref] in runs_per.index.get_level_values("v_") \
        else pd.Series(dtype=float)
    # purification (as in DIF practice): the abilities and the systematic shift are refitted on the
    # items not flagged, so that shifted items do not bend the matching of the others
    flagged_set: set[str] = set()
    for _ in range(_PURIFY_ROUNDS):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            anchors = work[~work["i_"].isin(flagged_set)]
            fit = glmer(formula.text, anchors if anchors["i_"].nunique() >= 3 else work)
        beta = fit.fixef
        theta = {m: float(beta.get(f"m_{c}", math.nan)) for m, c in mcode.items()}
        gamma = {v: (float(beta.get(f"v_{c}", 0.0)) if identified else 0.0) for v, c in vcode.items()}
        run_sd = 0.0
        if use_runs:
            vc = fit.varcorr
            run_sd = float(vc.loc[vc["group"] == "i_:r_", "sd"].iloc[0])
        # each item matched on the model's ability, the version's systematic shift an offset: the
        # test is of the item's shift beyond it
        cells["ability"] = [theta[m] for m in cells["model"]]
        cells["systematic"] = [gamma[v] for v in cells["version"]]
        first = logistic_dif(cells, group="version", matching="ability", outcome="k_", trials="n_",
                             reference=ref, kind=kind, alpha=alpha, offset="systematic", test="score").to_frame()
        pooled = float(first["pearson"].sum() / max(first["resid_df"].sum(), 1))
        phi = max(1.0, pooled) if bool((cells["n_"] >= 2).any()) else 1.0
        disp = np.full(len(first), phi)
        if use_runs:  # each version's runs share an item:run effect: a shift of the item the binomial misses
            for j, (it, level, se_j) in enumerate(zip(first["item"], first["level"], first["se"])):
                lv = vcode.get(next((v for v in others if str(v) == level), others[0]))
                r_v = float(runs_per.get((it, lv), math.nan))
                r_0 = float(r_ref.get(it, math.nan))
                se2 = float(se_j) ** 2
                if np.isfinite(r_v) and np.isfinite(r_0) and se2 > 0 and np.isfinite(se2):
                    disp[j] = phi + run_sd ** 2 * (1.0 / r_0 + 1.0 / r_v) / se2
        dif = logistic_dif(cells, group="version", matching="ability", outcome="k_", trials="n_", reference=ref,
                           kind=kind, alpha=alpha, dispersion=disp, offset="systematic", test="score")
        now = set(dif.to_frame().query("flagged")["item"].astype(str))
        if now == flagged_set:
            break
        flagged_set = now
    # the systematic shifts: Wald z of the version effects (on the anchor items)
    ct = fit.coef_table()
    zq = stats.norm.ppf(0.5 + conf_level / 2.0)
    rows: list[dict[str, object]] = []
    for v in others:
        term = f"v_{vcode[v]}"
        if identified and term in set(ct["term"]):
            r = ct.loc[ct["term"] == term].iloc[0]
            est, se = float(r["estimate"]), float(r["se"])
            rows.append({"test": "systematic", "version": str(v), "estimate": est, "se": se,
                         "conf_low": est - zq * se, "conf_high": est + zq * se, "statistic": (est / se) ** 2,
                         "df": 1, "p_value": float(stats.chi2.sf((est / se) ** 2, 1))})
        else:
            rows.append({"test": "systematic", "version": str(v), "estimate": math.nan, "se": math.nan,
                         "conf_low": math.nan, "conf_high": math.nan, "statistic": math.nan, "df": 1,
                         "p_value": math.nan})
    if identified and len(others) > 1:
        terms = [f"v_{vcode[v]}" for v in others]
        names = list(beta.index)
        idx = [names.index(t) for t in terms]
        b = beta.to_numpy()[idx]
        V = np.asarray(fit.vcov)[np.ix_(idx, idx)]
        w = float(b @ np.linalg.solve(V, b))
        rows.append({"test": "systematic (joint)", "version": "all", "estimate": math.nan, "se": math.nan,
                     "conf_low": math.nan, "conf_high": math.nan, "statistic": w, "df": len(idx),
                     "p_value": float(stats.chi2.sf(w, len(idx)))})
    items = dif.to_frame().drop(columns=["pearson", "resid_df"])
    items.insert(list(items.columns).index("statistic") + 1, "dispersion", disp)
    tot, tot_df = float(items["statistic"].sum()), int(items["df"].sum())
    rows.append({"test": "item x version", "version": "all", "estimate": math.nan, "se": math.nan,
                 "conf_low": math.nan, "conf_high": math.nan, "statistic": tot, "df": tot_df,
                 "p_value": float(stats.chi2.sf(tot, tot_df)) if tot_df > 0 else math.nan})
    overall = pd.DataFrame(rows)
    # affected models and equated scores
    sys_rows = overall[(overall["test"] == "systematic") & np.isfinite(overall["p_value"].astype(float))]
    sys_sig = {str(v): bool(p < alpha) for v, p in zip(sys_rows["version"], sys_rows["p_value"])}
    flagged = set(items.loc[items["flagged"], "item"])
    sh = dif.shifts
    item_shift = {(r.item, r.level): r.estimate for r in sh.itertuples() if r.item in flagged}
    nonref = cells[cells["version"].astype(str) != str(ref)]
    who = nonref[nonref["item"].isin(flagged)].groupby("item")["model"].agg(
        lambda s: ", ".join(sorted({str(x) for x in s})))
    who_d = {str(k): str(v) for k, v in who.items()}
    items["models"] = [who_d.get(str(i), "") for i in items["item"]]
    with np.errstate(divide="ignore"):
        eta = special.logit((cells["k_"] + 0.5) / (cells["n_"] + 1.0)).to_numpy()
    vs = cells["version"].astype(str).to_numpy()
    g_sys = np.array([gamma[v] if sys_sig.get(str(v), False) else 0.0 for v in cells["version"]])
    g_item = np.array([item_shift.get((i, v), 0.0) for i, v in zip(cells["item"], vs)])
    base = special.expit(eta)
    cells["shift_systematic"] = base - special.expit(eta - g_sys)
    cells["shift_items"] = special.expit(eta - g_sys) - special.expit(eta - g_sys - g_item)
    cells["accuracy"] = cells["k_"] / cells["n_"]
    models = cells.groupby(["model", "version"], as_index=False, sort=True).agg(
        n_items=("item", "size"), accuracy=("accuracy", "mean"), shift_systematic=("shift_systematic", "mean"),
        shift_items=("shift_items", "mean"))
    models["equated"] = models["accuracy"] - models["shift_systematic"] - models["shift_items"]
    models["affected"] = (models["version"].astype(str) != str(ref)) & (
        (models["shift_systematic"].abs() > 0) | (models["shift_items"].abs() > 0))
    return VersionShift(overall=overall, items=items.reset_index(drop=True), models=models, version=version,
                        reference=str(ref), identified=identified, dispersion=phi, run_sd=run_sd, kind=kind,
                        alpha=alpha)
