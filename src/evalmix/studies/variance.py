"""Sources of noise in an evaluation: items, prompt templates, generation runs and judge passes.

A score ``y`` of item ``i`` under prompt template ``t``, generation run ``g`` and judge pass ``j``
(an LLM judge grading the same generation again) is modelled as::

    y_itgj = mu + a_i + b_t + (ab)_it + c_itg + e_itgj

with independent zero-mean effects: items ``a`` (variance ``item``), templates ``b`` (``prompt``),
the item-by-template interaction (``item:prompt``: a template helps on some items and hurts on
others), generation runs nested in item x template (``run``: sampling noise of the decoder) and
judge passes nested in generations (``judge``: the grader's own noise).  Runs and judge passes are
exchangeable repetitions: run 1 of one item has nothing to do with run 1 of another.

:func:`variance_sources` estimates the five variances from a balanced table by the ANOVA method of
moments (expected mean squares; Searle, Casella & McCulloch 1992, ch. 4).  With ``N`` items, ``T``
templates, ``G`` runs per item and template and ``J`` judge passes per run::

    E[MS_judge]       = s2_judge
    E[MS_run]         = s2_judge + J s2_run
    E[MS_item:prompt] = s2_judge + J s2_run + G J s2_item:prompt
    E[MS_prompt]      = s2_judge + J s2_run + G J s2_item:prompt + N G J s2_prompt
    E[MS_item]        = s2_judge + J s2_run + G J s2_item:prompt + T G J s2_item

so each variance is the difference of its mean square and the next one below, divided by its
coefficient (negative estimates are truncated at 0; ``variance_raw`` keeps them).  A source with a
single level in the data cannot be told apart from the one above it: with one judge pass the
``run`` variance includes the judge's, with one run per item and template the ``item:prompt``
variance includes the run's, with one template the ``item`` variance includes ``item:prompt`` and
``prompt`` is not estimable (the ``includes`` column says so).  With one run and one judge pass on
binary outcomes and one template there is nothing to separate.

The variance of a benchmark mean over ``n_i`` items, ``n_t`` templates, ``n_g`` runs and ``n_j``
judge passes is::

    Var = s2_item / n_i + s2_prompt / n_t + s2_item:prompt / (n_i n_t)
          + s2_run / (n_i n_t n_g) + s2_judge / (n_i n_t n_g n_j)

(the ``s2_prompt / n_t`` term drops when the templates are fixed: the estimand is the mean over
these very templates).  :func:`plan_sources` finds the cheapest design meeting a target SE under
a cost per item, template, generation and judge pass; the continuous optimum of the nested part is
``n_j* = sqrt(s2_judge c_run / (s2_run c_judge))`` (Cochran 1977, sec. 10.6).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np
from numpy.typing import ArrayLike
import pandas as pd

from ..core.arguments import check_arguments
from ..data import slicing as sl
from ..core.result import Result
from ..data.runs import RunsData, schema_of
from ..core.arguments import check_number
from ..core.errors import DataError
from .power import check_pilot_variance
from ..data.status import scored_rows

__all__ = ["SOURCES", "SourcesPlan", "VarianceSources", "mean_se", "plan_sources", "variance_sources"]

SOURCES = ("item", "prompt", "item:prompt", "run", "judge")


@dataclass(frozen=True, eq=False, repr=False)
class VarianceSources(Result):
    """Variance components by source.

    ``table`` columns: the ``by`` columns, ``source`` (item, prompt, item:prompt, run, judge),
    ``includes`` (sources confounded with it in this design, e.g. "judge" for ``run`` with one
    judge pass), ``df``, ``mean_square``, ``variance`` (truncated at 0), ``variance_raw`` and
    ``icc`` (the source's share of the variance of a single score).  ``design``: per group the
    numbers of items, templates, runs and judge passes.
    """

    table: pd.DataFrame
    design: pd.DataFrame
    by: tuple[str, ...]

    def _title(self) -> str:
        return "Variance by source"

    def _header(self) -> list[str]:
        return ["ANOVA estimators (balanced design); icc: share of the variance of a single score"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def components(self) -> pd.DataFrame:
        """One row per group with one column per source (variance; NaN where not estimable)."""
        wide = self.table.pivot_table(index=list(self.by) or None, columns="source", values="variance",
                                      observed=True, sort=False) if self.by else \
            self.table.set_index("source")[["variance"]].T.reset_index(drop=True)
        wide = wide.reindex(columns=[s for s in SOURCES if s in set(self.table["source"])])
        return wide.reset_index() if self.by else wide


def _levels(sub: pd.DataFrame, col: str | None) -> list:
    return sl.levels(sub[col]) if col else [None]


def _anova(y: np.ndarray) -> dict[str, tuple[float, float]]:
    """Mean squares and degrees of freedom of a balanced items x templates x runs x judges array."""
    N, T, G, J = y.shape
    m = y.mean()
    m_i = y.mean(axis=(1, 2, 3))
    m_t = y.mean(axis=(0, 2, 3))
    m_it = y.mean(axis=(2, 3))
    m_itg = y.mean(axis=3)
    out = {"item": (T * G * J * ((m_i - m) ** 2).sum(), N - 1),
           "prompt": (N * G * J * ((m_t - m) ** 2).sum(), T - 1),
           "item:prompt": (G * J * ((m_it - m_i[:, None] - m_t[None, :] + m) ** 2).sum(), (N - 1) * (T - 1)),
           "run": (J * ((m_itg - m_it[:, :, None]) ** 2).sum(), N * T * (G - 1)),
           "judge": (((y - m_itg[..., None]) ** 2).sum(), N * T * G * (J - 1))}
    return {k: (ss / df if df > 0 else np.nan, df) for k, (ss, df) in out.items()}


def _components(ms: dict[str, tuple[float, float]], shape: tuple[int, ...]) -> list[dict[str, Any]]:
    """Variance of each estimable source from the mean squares (see the module notes)."""
    N, T, G, J = shape
    order = ["item", "item:prompt", "run", "judge"]
    present = {"item": True, "item:prompt": T > 1, "run": G > 1, "judge": J > 1}
    # a level without replicates is confounded with the nearest present level above it
    merged: dict[str, list[str]] = {s: [] for s in order}
    for pos, s in enumerate(order):
        if not present[s]:
            up = next(u for u in reversed(order[:pos]) if present[u])
            merged[up].append(s)
    nested = [s for s in order[1:] if present[s]]
    coef = {"item": T * G * J, "prompt": N * G * J, "item:prompt": G * J, "run": J, "judge": 1}
    lower: dict[str, str | None] = {"item": nested[0] if nested else None, "prompt": "item:prompt"}
    lower |= {s: (nested[i + 1] if i + 1 < len(nested) else None) for i, s in enumerate(nested)}
    rows = []
    for s in ["item"] + (["prompt"] if T > 1 else []) + nested:
        mean_sq, df = ms[s]
        below = lower[s]
        raw = (mean_sq - (ms[below][0] if below else 0.0)) / coef[s]
        rows.append({"source": s, "includes": "+".join(merged.get(s, [])), "df": int(df),
                     "mean_square": mean_sq, "variance": max(raw, 0.0), "variance_raw": raw})
    return rows


def variance_sources(data: RunsData, by: str | Sequence[str] | None = None, *, item: str | None = None,
                     prompt: str | None = None, run: str | None = None, judge: str | None = None,
                     outcome: str | None = None, status: str | None = None, missing: str = "raise") -> VarianceSources:
    """Split the variance of scores into item, template, item x template, run and judge parts.

    ANOVA estimators of a balanced design (every item under every template, the same number of
    runs per item and template and of judge passes per run); see the module notes for the model,
    the formulas and what is confounded when a factor has a single level.

    Parameters
    ----------
    data : DataFrame or path
        One row per score.
    by : str or list of str, optional
        Groups analysed separately (e.g. ``"model"``).
    item, outcome : str, optional
        Item and score columns (defaults from :func:`evalmix.read_runs` roles, else ``"item"`` and
        ``"correct"``).
    prompt, run, judge : str, optional
        Template, generation-run and judge-pass columns; leave out the ones the design does not have
        (``run`` defaults to the recorded run role, else a column named ``"run"``; templates and
        judge passes are only used when named, since a ``prompt`` column often holds fixed
        conditions such as zero-shot vs chain-of-thought rather than sampled templates).
    status : str, optional
        Sample status column; unscored rows are left out (which unbalances the design).
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    VarianceSources

    Examples
    --------
    >>> rng = np.random.default_rng(0)
    >>> N, G, J = 400, 3, 2
    >>> a = rng.normal(0, 1.0, N)[:, None, None]
    >>> c = rng.normal(0, 0.5, (N, G))[:, :, None]
    >>> y = 5 + a + c + rng.normal(0, 0.3, (N, G, J))
    >>> i, g, j = np.meshgrid(range(N), range(G), range(J), indexing="ij")
    >>> df = pd.DataFrame({"item": i.ravel(), "run": g.ravel(), "judge": j.ravel(), "score": y.ravel()})
    >>> vs = variance_sources(df, run="run", judge="judge", outcome="score")
    >>> vs.table[["source", "variance"]].round(2).values.tolist()
    [['item', 1.02], ['run', 0.24], ['judge', 0.09]]
    """
    check_arguments(missing=missing)
    by_ = sl.as_list(by)
    data = scored_rows(data, status=status)
    schema = schema_of(data)
    if run is None:
        recorded = schema.run if schema is not None else None
        run = recorded if recorded in data.columns else ("run" if "run" in data.columns else None)
    item_name = item or (schema.item if schema else "item")
    factors = {"prompt": prompt, "run": run, "judge": judge}
    # the run role is optional here; scores may be on any scale
    data, cols = sl.resolve(data, item=item_name, outcome=outcome, run=run, need_run=False,
                            allow_fractional="any", missing=missing,
                            by=by_ + [c for c in factors.values() if c])
    if cols.trials is not None:
        raise DataError("variance_sources needs one row per score, not k-of-n counts")
    rows, design = [], []
    for key, sub in sl.groups(data, by_):
        where = sl.slice_label(by_, key)
        levels = {"item": sl.levels(sub[cols.item])} | {f: _levels(sub, c) for f, c in factors.items()}
        shape = tuple(len(levels[f]) for f in ("item", "prompt", "run", "judge"))
        if shape[0] < 2:
            raise DataError(f"{where}variance_sources needs at least two items")
        keys = [cols.item] + [c for c in factors.values() if c]
        dup = sub.duplicated(keys, keep=False)
        if dup.any():
            raise DataError(f"{where}several rows share an {tuple(keys)} combination; add the columns "
                            f"that tell them apart to by=. First duplicates:\n"
                            f"{sub.loc[dup, keys].head(2).to_string()}")
        if len(sub) != math.prod(shape):
            full = pd.MultiIndex.from_product([levels["item"]] + [levels[f] for f, c in factors.items() if c])
            have = pd.MultiIndex.from_frame(sub[keys])
            gap = full.difference(have)
            raise DataError(f"{where}the design is unbalanced: {len(gap)} combination(s) of {tuple(keys)} "
                            f"are missing (e.g. {gap[0]!r}); the ANOVA estimators need every item under "
                            f"every template with equal numbers of runs and judge passes")
        y = np.empty(shape)
        idx = [pd.Categorical(sub[cols.item], categories=levels["item"]).codes]
        for f in ("prompt", "run", "judge"):
            c = factors[f]
            idx.append(pd.Categorical(sub[c], categories=levels[f]).codes if c else np.zeros(len(sub), int))
        y[tuple(idx)] = sub[cols.scores].to_numpy(float)
        if shape[1] == shape[2] == shape[3] == 1:
            raise DataError(f"{where}one score per item: repeat runs, judge passes or templates to "
                            f"separate sources of noise")
        comps = _components(_anova(y), shape)
        total = sum(r["variance"] for r in comps)
        for r in comps:
            r["icc"] = r["variance"] / total if total > 0 else np.nan
            rows.append(dict(zip(by_, key)) | r)
        design.append(dict(zip(by_, key)) | dict(zip(("n_items", "n_prompts", "n_runs", "n_judges"), shape)))
    return VarianceSources(table=pd.DataFrame(rows), design=pd.DataFrame(design), by=tuple(by_))


# ----------------------------------------------------------------------------------------------
# the SE of a mean and the planner


def _var(comp: Mapping[str, float], s: str) -> float:
    v = comp.get(s, 0.0)
    return 0.0 if v is None or (isinstance(v, float) and math.isnan(v)) else float(v)


@overload
def mean_se(components: Mapping[str, float], n_items: float, n_prompts: float = 1, n_runs: float = 1,
            n_judges: float = 1, prompts: Literal["random", "fixed"] = "random") -> float: ...
@overload
def mean_se(components: Mapping[str, float], n_items: ArrayLike, n_prompts: ArrayLike = 1,
            n_runs: ArrayLike = 1, n_judges: ArrayLike = 1,
            prompts: Literal["random", "fixed"] = "random") -> float | np.ndarray: ...
def mean_se(components: Mapping[str, float], n_items: ArrayLike, n_prompts: ArrayLike = 1,
            n_runs: ArrayLike = 1, n_judges: ArrayLike = 1,
            prompts: Literal["random", "fixed"] = "random") -> float | np.ndarray:
    """SE of a benchmark mean for a design, from per-source variances (see the module notes).

    Scalar design sizes give a float; arrays of them (broadcast together) an array.

    Examples
    --------
    >>> round(mean_se({"item": 0.04, "run": 0.2}, n_items=100, n_runs=4), 4)
    0.03
    """
    n_i, n_t, n_g, n_j = (np.asarray(v, float) for v in (n_items, n_prompts, n_runs, n_judges))
    v = (_var(components, "item") / n_i + _var(components, "item:prompt") / (n_i * n_t)
         + _var(components, "run") / (n_i * n_t * n_g) + _var(components, "judge") / (n_i * n_t * n_g * n_j))
    if prompts == "random":
        v = v + _var(components, "prompt") / n_t
    out = np.sqrt(v)
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True, eq=False, repr=False)
class SourcesPlan(Result):
    """The cheapest (items, templates, runs, judge passes) design meeting a target SE.

    ``n_items``, ``n_prompts``, ``n_runs``, ``n_judges``, ``cost`` and ``se`` of the chosen design;
    ``table``: the cheapest designs found (one row per templates x runs x judges with the fewest
    items meeting the target), cheapest first; ``continuous``: the continuous optimum of runs per
    template and judge passes per run at the chosen number of templates.
    """

    n_items: int
    n_prompts: int
    n_runs: int
    n_judges: int
    cost: float
    se: float
    table: pd.DataFrame
    continuous: dict[str, float]

    def _title(self) -> str:
        return "Cheapest design by source"

    def _header(self) -> list[str]:
        return [f"chosen: {self.n_items} items x {self.n_prompts} templates x {self.n_runs} runs x "
                f"{self.n_judges} judge passes, cost {self.cost:g}, SE {self.se:.4g}"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()


def plan_sources(components: Mapping[str, float] | VarianceSources | pd.Series, *, se: float,
                 cost_item: float = 0.0, cost_prompt: float = 0.0, cost_run: float = 1.0,
                 cost_judge: float = 0.0, max_prompts: int = 10, max_runs: int = 20, max_judges: int = 10,
                 n_items: tuple[int, int] | int = (2, 1_000_000),
                 prompts: Literal["random", "fixed"] = "random") -> SourcesPlan:
    """Cheapest numbers of items, templates, runs and judge passes that reach a target SE.

    The cost of a design is ``n_i cost_item + n_t cost_prompt + n_i n_t n_g cost_run +
    n_i n_t n_g n_j cost_judge`` (an item to write, a template to write, one generation, one judge
    call).  Every combination of templates, runs and judge passes up to the limits is tried with the
    fewest items that reach ``se`` (``mean_se``); the cheapest wins.  With random templates the
    template variance puts a floor ``sqrt(s2_prompt / n_t)`` on the SE that more items cannot lower.

    Parameters
    ----------
    components : mapping, Series or VarianceSources
        Variances per source (a VarianceSources with one group, or ``{"item": ..., "run": ...}``).
    se : float
        Target standard error of the benchmark mean.
    cost_item, cost_prompt, cost_run, cost_judge : float
        Unit costs (see above); ``cost_run`` must be positive.
    max_prompts, max_runs, max_judges : int
        Limits of the search.
    n_items : int or (int, int)
        A fixed number of items or the allowed range.
    prompts : {"random", "fixed"}
        Whether the templates are a sample from a population of templates (the estimand averages
        over all possible templates) or fixed.

    Returns
    -------
    SourcesPlan

    Examples
    --------
    >>> p = plan_sources({"item": 0.03, "run": 0.12, "judge": 0.06}, se=0.02, cost_item=5, cost_run=1,
    ...                  cost_judge=0.2)
    >>> p.n_items, p.n_runs, p.n_judges, p.continuous["n_judges"]
    (169, 4, 2, 1.5811388300841898)
    """
    if isinstance(components, VarianceSources):
        if len(components.design) != 1:
            raise DataError("plan_sources needs the components of one group; select one with "
                            ".table[...] or pass a mapping")
        comp = dict(zip(components.table["source"], components.table["variance"]))
    else:
        comp = dict(components)
    unknown = set(comp) - set(SOURCES)
    if unknown:
        raise DataError(f"unknown source(s) {sorted(unknown)}; sources are {list(SOURCES)}")
    check_pilot_variance(comp)  # all zero: every design would meet the target with SE 0
    check_number(se, "se", minimum=0, strict=True)
    if cost_run <= 0 or min(cost_item, cost_prompt, cost_judge) < 0:
        raise ValueError("cost_run must be > 0 and the other costs >= 0")
    n_lo, n_hi = (n_items, n_items) if isinstance(n_items, (int, np.integer)) else n_items
    tg, gg, jg = np.meshgrid(np.arange(1, max_prompts + 1), np.arange(1, max_runs + 1),
                             np.arange(1, max_judges + 1), indexing="ij")
    t, g, j = tg.ravel().astype(float), gg.ravel().astype(float), jg.ravel().astype(float)
    per_item = (_var(comp, "item") + _var(comp, "item:prompt") / t + _var(comp, "run") / (t * g)
                + _var(comp, "judge") / (t * g * j))
    room = se**2 - (_var(comp, "prompt") / t if prompts == "random" else 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        need = np.where(room > 0, np.ceil(per_item / np.where(room > 0, room, 1.0) * (1 - 1e-12)), np.inf)
    need = np.maximum(need, n_lo)
    ok = need <= n_hi
    if not ok.any():
        floor = math.sqrt(_var(comp, "prompt") / max_prompts) if prompts == "random" else 0.0
        raise DataError(f"no design with {n_lo}..{n_hi} items, <= {max_prompts} templates, <= {max_runs} "
                        f"runs and <= {max_judges} judge passes reaches se <= {se}"
                        + (f" (the template variance alone gives SE >= {floor:.4g} at {max_prompts} "
                           f"templates)" if floor >= se else ""))
    n = need[ok]
    t, g, j = t[ok], g[ok], j[ok]
    cost = n * cost_item + t * cost_prompt + n * t * g * (cost_run + j * cost_judge)
    achieved = mean_se(comp, n, t, g, j, prompts)
    table = pd.DataFrame({"n_items": n.astype("int64"), "n_prompts": t.astype("int64"),
                          "n_runs": g.astype("int64"), "n_judges": j.astype("int64"), "cost": cost,
                          "se": achieved}).sort_values(["cost", "n_prompts", "n_runs", "n_judges"],
                                                       kind="stable").reset_index(drop=True)
    best = table.iloc[0]
    s_run, s_judge = _var(comp, "run"), _var(comp, "judge")
    s_cell = _var(comp, "item") + _var(comp, "item:prompt") / best["n_prompts"]
    j_star = math.sqrt(s_judge * cost_run / (s_run * cost_judge)) if s_run > 0 and cost_judge > 0 else math.inf
    j_use = min(j_star, float(max_judges)) if math.isfinite(j_star) else float(max_judges)
    denom = s_cell * (cost_run + j_use * cost_judge)
    u_star = math.sqrt(cost_item * (s_run + s_judge / j_use) / denom) if denom > 0 else math.inf
    continuous = {"n_judges": j_star, "n_runs": u_star / best["n_prompts"]}
    return SourcesPlan(n_items=int(best["n_items"]), n_prompts=int(best["n_prompts"]),
                       n_runs=int(best["n_runs"]), n_judges=int(best["n_judges"]), cost=float(best["cost"]),
                       se=float(best["se"]), table=table.head(50), continuous=continuous)
