"""Runs tables drawn from a logistic GLMM with item and item:run random intercepts."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from typing import Any

import numpy as np
import pandas as pd

from ..core.arguments import check_arguments
from ..core.seeds import accepts_seed
from ..model import make_formula

__all__ = ["glmm_runs"]


class _Effects(dict[str, float]):
    """Read-only {level: effect} of ``attrs["truth"]``, its own deep copy.

    pandas deep-copies ``attrs`` on every operation on a table (a column read, a copy, a filter):
    with 25,000 item:run effects as a plain dict that was seconds of a 1M-row fit. Being
    immutable, this one is shared by the copies instead. A dict, so that ``json`` (Parquet
    metadata) and ``pickle`` take it as one.
    """

    def __deepcopy__(self, memo: dict[int, Any]) -> _Effects:
        return self

    def __copy__(self) -> _Effects:
        return self

    def __reduce__(self) -> tuple[type[_Effects], tuple[dict[str, float]]]:
        return (_Effects, (dict(self),))

    def _read_only(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("the simulated truth is read-only; copy it with dict(...) to change it")

    __setitem__ = __delitem__ = update = setdefault = pop = popitem = clear = _read_only  # type: ignore[assignment]
    __ior__ = _read_only  # type: ignore[assignment]


def _slice_spec(slices: Mapping[str, Sequence[str] | Mapping[str, float]] | None) -> dict[str, dict[str, float]]:
    """Normalise ``slices`` to {factor: {level: logit effect}}; the first level is the reference (0)."""
    spec: dict[str, dict[str, float]] = {}
    for name, levels in (slices or {}).items():
        if isinstance(levels, Mapping):
            effects = {str(k): float(v) for k, v in levels.items()}
        else:
            effects = {str(k): 0.0 for k in levels}
        if len(effects) < 2:
            raise ValueError(f"slice factor {name!r} needs at least two levels")
        spec[str(name)] = effects
    return spec


@accepts_seed
def glmm_runs(
    n_models: int,
    n_items: int,
    n_runs: int,
    *,
    slices: Mapping[str, Sequence[str] | Mapping[str, float]] | None = None,
    model_effects: Sequence[float] | Mapping[str, float] | None = None,
    sd_item: float = 1.5,
    sd_item_run: float = 0.5,
    sd_slope: float = 0.0,
    rng: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """Simulate a long runs table from a logistic GLMM with known parameters.

    The linear predictor of model ``m`` on item ``i``, run ``r`` and slice levels ``s`` is::

        eta = model_effects[m] + sum_f slice_effect[f, s_f] + a_i + c_{i,r} + b_i * [s_1 != ref]

    with item intercepts ``a_i ~ N(0, sd_item^2)``, item:run intercepts
    ``c_{i,r} ~ N(0, sd_item_run^2)`` (shared by the models and slices, as in
    ``(1|item) + (1|item:run)``) and an item slope ``b_i ~ N(0, sd_slope^2)`` on the non-reference
    levels of the first slice factor (uncorrelated with ``a_i``).  ``correct ~ Bernoulli(logit^-1(eta))``.

    Parameters
    ----------
    n_models, n_items, n_runs : int
        Design size; every model answers every item in every run and slice.
    slices : dict, optional
        ``{factor: [levels]}`` (no effect) or ``{factor: {level: logit effect}}``; the first level is
        the reference and its effect is taken relative to it.
    model_effects : sequence or dict, optional
        Logit of each model at the reference slice levels (default: evenly spaced from -1 to 1).
        A dict gives the model names too.
    sd_item, sd_item_run, sd_slope : float
        Standard deviations of the random effects (logit scale).
    rng : int or numpy.random.Generator, optional
        Random numbers: a seed or a numpy Generator.

    Returns
    -------
    DataFrame
        Columns ``model``, ``item``, ``run``, one per slice factor, and ``correct`` (0/1), sorted by
        model, slices, run and item.  ``df.attrs["truth"]`` holds the parameters, the drawn random
        effects and the lme4 formula of the intercept-only random part (the optional slope is described
        under ``"slope"``).

    Examples
    --------
    >>> df = glmm_runs(3, 50, 2, slices={"language": ["EN", "ES"]}, rng=1)
    >>> df.shape, sorted(df.attrs["truth"])[:3]
    ((600, 5), ['formula', 'item_effects', 'item_run_effects'])
    """
    for name, value in (("n_models", n_models), ("n_items", n_items), ("n_runs", n_runs)):
        if int(value) != value or value < 1:
            raise ValueError(f"{name} must be a positive integer, got {value!r}")
    for name, sd in (("sd_item", sd_item), ("sd_item_run", sd_item_run), ("sd_slope", sd_slope)):
        if sd < 0:
            raise ValueError(f"{name} must be >= 0, got {sd}")
    check_arguments(rng=rng)
    seed = rng if isinstance(rng, int) else None
    rng = np.random.default_rng(rng)
    if model_effects is None:
        effects = dict(zip([f"M{j + 1}" for j in range(n_models)],
                           np.linspace(-1.0, 1.0, n_models) if n_models > 1 else [0.0]))
    elif isinstance(model_effects, Mapping):
        effects = {str(k): float(v) for k, v in model_effects.items()}
    else:
        effects = {f"M{j + 1}": float(v) for j, v in enumerate(model_effects)}
    if len(effects) != n_models:
        raise ValueError(f"model_effects has {len(effects)} entries for n_models={n_models}")
    spec = _slice_spec(slices)

    width = len(str(n_items))
    items = [f"q{i + 1:0{width}d}" for i in range(n_items)]
    a = rng.normal(0.0, sd_item, n_items)
    c = rng.normal(0.0, sd_item_run, (n_items, n_runs))
    b = rng.normal(0.0, sd_slope, n_items)

    # Full factorial grid, item fastest so that items line up within each (model, slices, run) block.
    factors: dict[str, list[Any]] = {"model": list(effects)} | {f: list(levels) for f, levels in spec.items()}
    factors |= {"run": list(range(1, n_runs + 1)), "item": items}
    grid = pd.MultiIndex.from_product(list(factors.values()), names=list(factors)).to_frame(index=False)
    item_idx = np.tile(np.arange(n_items), len(grid) // n_items)
    run_idx = grid["run"].to_numpy() - 1
    eta = grid["model"].map(effects).to_numpy(dtype=float)
    for f, levels in spec.items():
        ref = next(iter(levels.values()))
        eta = eta + grid[f].map(levels).to_numpy(dtype=float) - ref
    eta = eta + a[item_idx] + c[item_idx, run_idx]
    if spec:
        first, levels = next(iter(spec.items()))
        eta = eta + b[item_idx] * (grid[first].to_numpy() != next(iter(levels))).astype(float)
    prob = 1.0 / (1.0 + np.exp(-eta))
    grid["correct"] = (rng.random(len(grid)) < prob).astype("int8")

    grid = grid[["model", "item", "run"] + list(spec) + ["correct"]]
    grid.attrs["truth"] = {
        "formula": make_formula("correct", ["model", *spec], ["item", "item:run"]).text,
        "model_effects": effects,
        "slice_effects": {f: {k: v - next(iter(lv.values())) for k, v in lv.items()} for f, lv in spec.items()},
        "sd_item": float(sd_item),
        "sd_item_run": float(sd_item_run),
        "sd_slope": float(sd_slope),
        "item_effects": _Effects(zip(items, a.tolist())),
        "item_run_effects": _Effects({f"{items[i]}:{r + 1}": float(c[i, r])
                                      for i in range(n_items) for r in range(n_runs)}),
        # the slope multiplies the indicator of the first slice factor's non-reference levels
        "slope": ({"factor": next(iter(spec)), "reference": next(iter(next(iter(spec.values())))),
                   "sd": float(sd_slope), "effects": _Effects(zip(items, b.tolist()))}
                  if sd_slope > 0 and spec else None),
        "seed": seed,
    }
    return grid
