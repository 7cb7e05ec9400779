"""Simulated benchmark waves with known drift, judge leniency and training-data contamination.

:func:`canary_waves` plants a change of every model's accuracy between two waves of the same items
and, optionally, a more lenient judge; :func:`contaminated_runs` plants a per-model advantage on the
items published before each model's training cutoff, with items published later harder or easier
than the earlier ones.  Both return long runs tables in the layout :func:`evalmix.drift` and
:func:`evalmix.contamination_test` read.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import pandas as pd

from ..core.arguments import check_count, check_number, check_probability
from ..core.errors import DataError
from ..core.seeds import as_generator

__all__ = ["canary_waves", "contaminated_runs"]


def canary_waves(n_models: int = 3, n_items: int = 200, n_runs: int = 3, *,
                 change: float | Sequence[float] = 0.0, judge_false_positive: float = 0.05,
                 leniency: float = 0.0, accuracy: tuple[float, float] = (0.2, 0.8),
                 rng: int | np.random.Generator | None = None
                 ) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Two waves of the same items, and the first wave's transcripts re-scored by the new judge.

    Each item has a probability ``p`` (uniform on ``accuracy``) that a model's answer is right in
    the first wave and ``p + change`` in the second, so the true change of the mean over the item
    population is exactly ``change`` before judging.  A judge marks a right answer right and a
    wrong one right with probability ``judge_false_positive`` (the old judge) or
    ``judge_false_positive + leniency`` (the new one).  The judged accuracy is then
    ``p + fp (1 - p)``: the judge's drift on the first wave is ``leniency * E(1 - p)`` and the
    system's change under the new judge is ``change * (1 - fp_new)``.

    Parameters
    ----------
    n_models, n_items, n_runs : int
        Models (``model-1``...), items and runs per wave.
    change : float or sequence of float
        The change of each model's probability of a right answer (one value for all models).
    judge_false_positive, leniency : float
        The old judge's false-positive rate, and how much the new judge adds to it.
    accuracy : (float, float)
        Range of the items' first-wave probabilities; ``p + change`` must stay within [0, 1].
    rng : int or Generator, optional
        Seed or generator.

    Returns
    -------
    (before, after, rejudged) : DataFrames
        Columns ``model``, ``item``, ``run``, ``correct`` (the judge's 0/1 verdict); ``rejudged``
        holds the first wave's answers with the new judge's verdicts.

    Examples
    --------
    >>> before, after, rejudged = canary_waves(2, 50, 2, change=0.05, rng=1)
    >>> before.shape, list(before.columns)
    ((200, 4), ['model', 'item', 'run', 'correct'])
    """
    check_count(n_models, "n_models")
    check_count(n_items, "n_items", minimum=2)
    check_count(n_runs, "n_runs")
    fp_old = check_probability(judge_false_positive, "judge_false_positive", closed=True)
    fp_new = check_probability(fp_old + check_number(leniency, "leniency"), "judge_false_positive + leniency",
                               closed=True)
    changes = np.broadcast_to(np.asarray(change, dtype=float), (n_models,))
    lo, hi = (check_probability(a, "accuracy", closed=True) for a in accuracy)
    if not (hi > lo and lo + changes.min() >= 0 and hi + changes.max() <= 1):
        raise DataError(f"accuracy range {accuracy} shifted by change {changes.tolist()} must stay within [0, 1]")
    gen = as_generator(rng)
    models = [f"model-{m + 1}" for m in range(n_models)]
    items = [f"q{i + 1:04d}" for i in range(n_items)]
    p = gen.uniform(lo, hi, size=(n_models, n_items))
    shape = (n_models, n_items, n_runs)
    right_before = gen.random(shape) < p[..., None]
    right_after = gen.random(shape) < (p + changes[:, None])[..., None]
    u_before, u_after = gen.random(shape), gen.random(shape)
    keys = pd.MultiIndex.from_product([models, items, range(1, n_runs + 1)], names=["model", "item", "run"])

    def table(right: np.ndarray, u: np.ndarray, fp: float) -> pd.DataFrame:
        correct = (right | (u < fp)).astype(int).ravel()
        return pd.DataFrame({"correct": correct}, index=keys).reset_index()

    # the rejudged wave re-scores the first wave's answers: same right/wrong, same uniform draws, so
    # a wrong answer the old judge passed is passed by the more lenient one too
    return table(right_before, u_before, fp_old), table(right_after, u_after, fp_new), \
        table(right_before, u_before, fp_new)


def contaminated_runs(n_items: int = 400, n_runs: int = 2, *, cutoffs: Sequence[float] = (0.0, 0.3, 0.5, 0.7),
                      contamination: Mapping[int, float] | Sequence[float] = (), ability_sd: float = 0.5,
                      difficulty_sd: float = 1.0, late_shift: float = 0.8, run_sd: float = 0.3,
                      rng: int | np.random.Generator | None = None) -> pd.DataFrame:
    """Runs of models with training cutoffs on items with publication dates, some models contaminated.

    Items are published at times uniform on [0, 1]; item ``i`` is pre-cutoff (exposed) for model
    ``m`` when it was published before ``cutoffs[m]``.  On the logit scale a model's answer is
    right with ``ability_m - difficulty_i + contamination_m * exposed + e``, where the difficulty
    of items published after 0.5 is raised by ``late_shift`` (later items are harder: the confound
    a naive pre/post accuracy gap mistakes for contamination) and ``e`` is run-to-run noise of SD
    ``run_sd``.  A model with cutoff 0 saw no item.

    Parameters
    ----------
    n_items, n_runs : int
        Items and runs per model and item.
    cutoffs : sequence of float
        One training cutoff per model (``model-1``...), on the publication-time scale [0, 1].
    contamination : mapping or sequence of float
        Log-odds advantage on exposed items, by model index (0-based) or one value per model.
    ability_sd, difficulty_sd : float
        SDs of the models' abilities and the items' difficulties.
    late_shift : float
        Extra difficulty of the items published after 0.5.
    run_sd : float
        SD of the run-to-run noise on the logit scale.
    rng : int or Generator, optional
        Seed or generator.

    Returns
    -------
    DataFrame
        Columns ``model``, ``item``, ``run``, ``correct``, ``post_cutoff`` (True: the item is a
        control item for that model).

    Examples
    --------
    >>> df = contaminated_runs(100, 1, contamination={2: 1.0}, rng=1)
    >>> df.groupby("model")["post_cutoff"].mean().round(2).tolist()
    [1.0, 0.7, 0.53, 0.33]
    """
    check_count(n_items, "n_items", minimum=2)
    check_count(n_runs, "n_runs")
    cut = np.asarray(cutoffs, dtype=float)
    if cut.ndim != 1 or cut.size < 1 or not np.isfinite(cut).all():
        raise DataError("cutoffs must hold one finite cutoff per model")
    n_models = cut.size
    gamma = np.zeros(n_models)
    if isinstance(contamination, Mapping):
        for m, g in contamination.items():
            if not 0 <= int(m) < n_models:
                raise DataError(f"contamination names model index {m}, but there are {n_models} models")
            gamma[int(m)] = check_number(g, "contamination")
    elif len(contamination):
        gamma = np.broadcast_to(np.asarray(contamination, dtype=float), (n_models,)).copy()
    for name, v in (("ability_sd", ability_sd), ("difficulty_sd", difficulty_sd), ("run_sd", run_sd)):
        check_number(v, name, minimum=0)
    gen = as_generator(rng)
    published = gen.uniform(0, 1, n_items)
    difficulty = gen.normal(0, difficulty_sd, n_items) + late_shift * (published > 0.5)
    ability = gen.normal(0, ability_sd, n_models)
    exposed = published[None, :] < cut[:, None]
    eta = ability[:, None] - difficulty[None, :] + gamma[:, None] * exposed
    noise = gen.normal(0, run_sd, (n_models, n_items, n_runs))
    correct = gen.random(noise.shape) < 1 / (1 + np.exp(-(eta[..., None] + noise)))
    keys = pd.MultiIndex.from_product([[f"model-{m + 1}" for m in range(n_models)],
                                       [f"q{i + 1:04d}" for i in range(n_items)], range(1, n_runs + 1)],
                                      names=["model", "item", "run"])
    out = pd.DataFrame({"correct": correct.astype(int).ravel(),
                        "post_cutoff": np.repeat(~exposed, n_runs, axis=1).ravel()}, index=keys)
    return out.reset_index()
