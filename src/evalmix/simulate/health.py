"""Simulated benchmarks with planted dead items and planted version shifts (known truth for
:func:`evalmix.item_health` and :func:`evalmix.version_shift`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.arguments import check_count, check_number
from ..core.seeds import as_generator

__all__ = ["simulate_dead_items", "simulate_versions"]


def _responses(c: np.ndarray, a: np.ndarray, theta: np.ndarray, n_runs: int, run_sd: float,
               misfit: np.ndarray | float, rng: np.random.Generator) -> np.ndarray:
    """0/1 responses items x runs x models of ``logit P = c_i + a_i theta_m + e_ir + d_mi``
    (``misfit``: the model-by-item effects ``d``, items x models, or 0)."""
    ni = len(c)
    e = rng.normal(0.0, run_sd, (ni, n_runs, 1)) if n_runs > 1 else np.zeros((ni, 1, 1))
    d = misfit[:, None, :] if isinstance(misfit, np.ndarray) else 0.0
    eta = c[:, None, None] + a[:, None, None] * theta[None, None, :] + e + d
    return (rng.random(eta.shape) < 1.0 / (1.0 + np.exp(-eta))).astype(np.int64)


def _labels(prefix: str, n: int) -> np.ndarray:
    width = len(str(n - 1))
    return np.array([f"{prefix}{j:0{width}d}" for j in range(n)], dtype=object)


def simulate_dead_items(n_items: int = 100, n_models: int = 12, n_runs: int = 3, *, n_all: int = 5,
                        n_none: int = 5, n_flat: int = 5, run_sd: float = 0.3, misfit_sd: float = 0.0,
                        rng: int | np.random.Generator | None = None) -> tuple[pd.DataFrame, dict[str, list[str]]]:
    """Responses of a 2PL benchmark (``logit P = c_i + a_i theta_m + e_ir``) with planted dead items.

    Live items have ``a_i ~ N(1.2, 0.3^2)`` (at least 0.3) and ``c_i ~ N(0, 1.5^2)``; the first
    ``n_all`` items are solved by every model (``c = 12``), the next ``n_none`` by none
    (``c = -12``), the next ``n_flat`` do not follow ability (``a = 0``, ``c ~ N(0, 1)``).
    Abilities ``theta_m ~ N(0, 1)``, item:run effects ``e_ir ~ N(0, run_sd^2)``.

    Returns
    -------
    (DataFrame, dict)
        The runs table (``item``, ``model``, ``run``, ``correct``) and the planted items by kind
        (``"all solve"``, ``"none solve"``, ``"flat"``).

    Examples
    --------
    >>> runs, truth = simulate_dead_items(n_items=20, n_models=5, n_runs=2, rng=1)
    >>> runs.shape, len(truth["flat"])
    ((200, 4), 5)
    """
    n_items, n_models, n_runs = (check_count(n_items, "n_items"), check_count(n_models, "n_models"),
                                 check_count(n_runs, "n_runs"))
    run_sd = check_number(run_sd, "run_sd", minimum=0.0)
    misfit_sd = check_number(misfit_sd, "misfit_sd", minimum=0.0)
    if n_all + n_none + n_flat > n_items:
        raise ValueError(f"{n_all + n_none + n_flat} planted items do not fit in n_items={n_items}")
    g = as_generator(rng)
    a = np.clip(g.normal(1.2, 0.3, n_items), 0.3, None)
    c = g.normal(0.0, 1.5, n_items)
    c[:n_all], a[:n_all] = 12.0, 0.5
    c[n_all:n_all + n_none], a[n_all:n_all + n_none] = -12.0, 0.5
    s = slice(n_all + n_none, n_all + n_none + n_flat)
    a[s], c[s] = 0.0, g.normal(0.0, 1.0, n_flat)
    theta = g.normal(0.0, 1.0, n_models)
    misfit = g.normal(0.0, misfit_sd, (n_items, n_models)) if misfit_sd > 0 else 0.0
    y = _responses(c, a, theta, n_runs, run_sd, misfit, g)
    items, models = _labels("i", n_items), _labels("m", n_models)
    runs = pd.DataFrame({"item": np.repeat(items, n_runs * n_models), "model": np.tile(models, n_items * n_runs),
                         "run": np.tile(np.repeat(np.arange(1, n_runs + 1), n_models), n_items),
                         "correct": y.ravel()})
    truth = {"all solve": list(items[:n_all]), "none solve": list(items[n_all:n_all + n_none]),
             "flat": list(items[s])}
    return runs, truth


def simulate_versions(n_items: int = 100, n_models: int = 12, n_runs: int = 2, *, shift: float = 0.0,
                      dif_items: int = 0, dif_shift: float = 1.0, confounded: bool = True, n_bridge: int = 2,
                      run_sd: float = 0.3, misfit_sd: float = 0.0,
                      rng: int | np.random.Generator | None = None) -> tuple[pd.DataFrame, dict[str, object]]:
    """Responses under two harness versions, ``v1`` and ``v2``, with planted shifts.

    The 2PL of :func:`simulate_dead_items` (no dead items): under ``v2`` every item's log-odds
    moves by ``shift`` and the first ``dif_items`` items' by ``dif_shift`` more.  With
    ``confounded`` the stronger half of the models ran ``v2`` only and the weaker half ``v1`` only
    (newer submissions are stronger); otherwise the halves are drawn at random.  ``n_bridge``
    models from the middle of the ability order ran both versions, which links them.  Each
    version's runs draw their own item:run effects; ``misfit_sd`` adds model-by-item effects
    ``d_mi ~ N(0, misfit_sd^2)``, the same under both versions.

    Returns
    -------
    (DataFrame, dict)
        The runs table (``item``, ``model``, ``run``, ``harness_version``, ``correct``) and the
        truth: ``dif_items`` (labels), ``shift``, ``dif_shift``, ``theta`` (model -> ability) and
        ``versions`` (model -> list of versions).

    Examples
    --------
    >>> runs, truth = simulate_versions(n_items=10, n_models=6, n_runs=1, rng=1)
    >>> sorted(runs["harness_version"].unique()), len(truth["theta"])
    (['v1', 'v2'], 6)
    """
    n_items, n_models, n_runs = (check_count(n_items, "n_items"), check_count(n_models, "n_models", minimum=2),
                                 check_count(n_runs, "n_runs"))
    shift = check_number(shift, "shift")
    dif_shift = check_number(dif_shift, "dif_shift")
    if not 0 <= dif_items <= n_items:
        raise ValueError(f"dif_items={dif_items} must lie between 0 and n_items={n_items}")
    if not 0 <= n_bridge <= n_models:
        raise ValueError(f"n_bridge={n_bridge} must lie between 0 and n_models={n_models}")
    g = as_generator(rng)
    a = np.clip(g.normal(1.2, 0.3, n_items), 0.3, None)
    c = g.normal(0.0, 1.5, n_items)
    theta = np.sort(g.normal(0.0, 1.0, n_models))
    order = np.arange(n_models) if confounded else g.permutation(n_models)
    newer = np.zeros(n_models, dtype=bool)
    newer[order[n_models // 2:]] = True
    mid = n_models // 2
    lo = max(0, mid - n_bridge // 2)
    bridge = set(order[lo:lo + n_bridge].tolist())
    # a model's misfit on an item is its own, the same under either version
    misfit = g.normal(0.0, misfit_sd, (n_items, n_models)) if misfit_sd > 0 else np.zeros((n_items, n_models))
    items, models = _labels("i", n_items), _labels("m", n_models)
    frames = []
    for v, in_v in (("v1", ~newer), ("v2", newer)):
        use = np.flatnonzero(in_v | np.isin(np.arange(n_models), list(bridge)))
        cv = c + (shift if v == "v2" else 0.0)
        if v == "v2":
            cv[:dif_items] += dif_shift
        y = _responses(cv, a, theta[use], n_runs, run_sd, misfit[:, use], g)
        frames.append(pd.DataFrame({
            "item": np.repeat(items, n_runs * len(use)), "model": np.tile(models[use], n_items * n_runs),
            "run": np.tile(np.repeat(np.arange(1, n_runs + 1), len(use)), n_items), "harness_version": v,
            "correct": y.ravel()}))
    runs = pd.concat(frames, ignore_index=True)
    versions = runs.groupby("model")["harness_version"].agg(lambda s: sorted(set(s))).to_dict()
    truth: dict[str, object] = {"dif_items": list(items[:dif_items]), "shift": shift, "dif_shift": dif_shift,
                                "theta": dict(zip(models, theta)), "versions": versions}
    return runs, truth
