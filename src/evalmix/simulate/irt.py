"""Simulated responses of a 2PL item response model with run-to-run noise (see :func:`evalmix.fit_irt`)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.seeds import accepts_seed, as_generator
from ..core.arguments import check_count, check_number

__all__ = ["simulate_irt", "simulate_irt_parameters"]


@accepts_seed
def simulate_irt_parameters(n_items: int, n_models: int, *, disc_mean: float = 1.0, disc_sd: float = 0.4,
                            difficulty_sd: float = 1.2,
                            rng: int | np.random.Generator | None = None) -> tuple[pd.DataFrame, np.ndarray]:
    """True item parameters and model abilities: ``a_i ~ N(disc_mean, disc_sd^2)``, ``b_i ~ N(0,
    difficulty_sd^2)``, ``theta_m ~ N(0, 1)``.

    Returns
    -------
    (DataFrame, ndarray)
        Items (``item``, ``discrimination``, ``difficulty``) and abilities.

    Examples
    --------
    >>> items, theta = simulate_irt_parameters(5, 3, rng=1)
    >>> items.columns.tolist(), theta.shape
    (['item', 'discrimination', 'difficulty'], (3,))
    """
    n_items = check_count(n_items, "n_items")
    n_models = check_count(n_models, "n_models")
    disc_sd = check_number(disc_sd, "disc_sd", minimum=0.0)
    difficulty_sd = check_number(difficulty_sd, "difficulty_sd", minimum=0.0)
    rng = as_generator(rng)
    width = len(str(n_items - 1))
    items = pd.DataFrame({"item": [f"i{j:0{width}d}" for j in range(n_items)],
                          "discrimination": rng.normal(disc_mean, disc_sd, n_items),
                          "difficulty": rng.normal(0.0, difficulty_sd, n_items)})
    return items, rng.normal(0.0, 1.0, n_models)


@accepts_seed
def simulate_irt(n_items: int = 100, n_models: int = 8, n_runs: int = 1, *, run_sd: float = 0.5,
                 misfit_sd: float = 0.0, disc_mean: float = 1.0, disc_sd: float = 0.4, difficulty_sd: float = 1.2,
                 items: pd.DataFrame | None = None, theta: np.ndarray | None = None,
                 rng: int | np.random.Generator | None = None) -> pd.DataFrame:
    """Responses ``correct ~ Bernoulli(logistic(a_i (theta_m - b_i) + e_ir))`` with ``e_ir ~ N(0,
    run_sd^2)`` shared by the models in run ``r`` of item ``i`` (no noise with one run), plus, with
    ``misfit_sd``, a model-by-item effect ``delta_mi ~ N(0, misfit_sd^2)`` shared by the runs of
    model ``m`` on item ``i`` (the misfit of the 2PL that :func:`evalmix.fit_irt` estimates).

    Parameters
    ----------
    n_items, n_models, n_runs : int
    run_sd : float
        SD of the item:run effects (used when ``n_runs > 1``).
    misfit_sd : float
        SD of the model-by-item effects on the logit scale (0: the 2PL holds exactly).
    disc_mean, disc_sd, difficulty_sd : float
        Item population of :func:`simulate_irt_parameters`.
    items, theta : optional
        Given item parameters (columns ``item``, ``discrimination``, ``difficulty``) and abilities.
    rng : int or Generator, optional

    Returns
    -------
    DataFrame
        Columns ``item``, ``model`` (``m0``, ``m1``...), ``run`` and ``correct``.

    Examples
    --------
    >>> runs = simulate_irt(n_items=10, n_models=3, n_runs=2, rng=1)
    >>> runs.shape
    (60, 4)
    """
    n_runs = check_count(n_runs, "n_runs")
    run_sd = check_number(run_sd, "run_sd", minimum=0.0)
    misfit_sd = check_number(misfit_sd, "misfit_sd", minimum=0.0)
    rng = as_generator(rng)
    if items is None or theta is None:
        gen_items, gen_theta = simulate_irt_parameters(n_items, n_models, disc_mean=disc_mean, disc_sd=disc_sd,
                                                       difficulty_sd=difficulty_sd, rng=rng)
        items = gen_items if items is None else items
        theta = gen_theta if theta is None else theta
    theta = np.asarray(theta, dtype=float)
    a = items["discrimination"].to_numpy(dtype=float)
    b = items["difficulty"].to_numpy(dtype=float)
    ni, nm = len(a), len(theta)
    e = rng.normal(0.0, run_sd, (ni, n_runs)) if n_runs > 1 else np.zeros((ni, 1))
    eta = a[:, None, None] * (theta[None, None, :] - b[:, None, None]) + e[:, :, None]
    if misfit_sd > 0:   # drawn only then, so that the default keeps its random stream
        eta = eta + rng.normal(0.0, misfit_sd, (ni, 1, nm))
    y = (rng.random(eta.shape) < 1.0 / (1.0 + np.exp(-eta))).astype(np.int64)
    width = len(str(nm - 1))
    labels = np.array([f"m{m:0{width}d}" for m in range(nm)], dtype=object)
    return pd.DataFrame({"item": np.repeat(items["item"].to_numpy(), n_runs * nm),
                         "model": np.tile(labels, ni * n_runs),
                         "run": np.tile(np.repeat(np.arange(1, n_runs + 1), nm), ni),
                         "correct": y.ravel()})
