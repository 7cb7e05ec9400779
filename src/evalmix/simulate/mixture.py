"""The three-component mixture benchmark: always right, always wrong, and a noisy middle.

Each question has a latent probability ``p_q`` of being answered correctly: 1 for "easy"
questions, 0 for "hard" ones and ``Uniform(0.2, 0.8)`` for the rest.  Runs are independent
Bernoulli draws given ``p_q``.  A clone shares ``p_q`` exactly (no true difference); a finetune
promotes a fraction of the hard questions to easy (a clean uplift of that many accuracy points).
The draw order follows the reference simulation of the method document, so a given seed
reproduces its published numbers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.seeds import accepts_seed, as_generator
from ..core.arguments import check_arguments

__all__ = ["mixture_arrays", "mixture_benchmark", "mixture_predictions", "sample_difficulty",
           "promote_hard"]

_MIDDLE = (0.2, 0.8)


def sample_difficulty(n: int, easy: float, hard: float, rng: np.random.Generator) -> np.ndarray:
    """Latent per-question success probabilities from the three-component mixture."""
    if not (0 <= easy and 0 <= hard and easy + hard <= 1):
        raise ValueError(f"need easy >= 0, hard >= 0 and easy + hard <= 1, got easy={easy}, hard={hard}")
    u = rng.random(n)
    return np.where(u < easy, 1.0, np.where(u < easy + hard, 0.0, rng.uniform(*_MIDDLE, size=n)))


def promote_hard(p_base: np.ndarray, uplift: float, rng: np.random.Generator) -> np.ndarray:
    """Promote ``round(uplift * n)`` randomly chosen hard questions (p = 0) to easy (p = 1)."""
    p = p_base.copy()
    hard_idx = np.flatnonzero(p_base == 0.0)
    n_promote = int(round(uplift * len(p_base)))
    if n_promote < 0:
        raise ValueError(f"uplift must be >= 0, got {uplift}")
    if n_promote > len(hard_idx):
        raise ValueError(f"uplift={uplift} needs {n_promote} hard questions to promote, "
                         f"only {len(hard_idx)} are hard")
    p[rng.choice(hard_idx, size=n_promote, replace=False)] = 1.0
    return p


def mixture_arrays(n_questions: int, n_runs: int, *, easy: float = 0.42, hard: float = 0.28,
                   uplift: float = 0.01, rng: np.random.Generator) -> tuple[dict, dict]:
    """Scores and truth as arrays: ``({"base","clone","finetune"}: (n_runs, n_questions) 0/1, truth p)``.

    This is the array form behind :func:`mixture_benchmark` and the calibration harness.
    """
    p_base = sample_difficulty(n_questions, easy, hard, rng)
    p = {"base": p_base, "clone": p_base.copy(), "finetune": promote_hard(p_base, uplift, rng)}
    scores = {name: (rng.random((n_runs, n_questions)) < pq).astype(np.int8) for name, pq in p.items()}
    return scores, p


@accepts_seed
def mixture_benchmark(n_questions: int = 4000, n_runs: int = 8, *, easy: float = 0.42,
                      hard: float = 0.28, uplift: float = 0.01,
                      rng: int | np.random.Generator | None = None) -> pd.DataFrame:
    """Simulate a benchmark from the three-component mixture: base model, clone and finetune.

    Parameters
    ----------
    n_questions, n_runs : int
        Benchmark size and number of independent runs per model.
    easy, hard : float
        Shares of questions always answered right (``p_q = 1``) and always wrong (``p_q = 0``);
        the rest have ``p_q ~ Uniform(0.2, 0.8)``.
    uplift : float
        Share of all questions that the finetune moves from hard to easy: its true accuracy gain.
    rng : int or Generator, optional
        Random numbers: a seed or a numpy Generator.

    Returns
    -------
    DataFrame
        Long table with columns ``model`` (``base``, ``clone``, ``finetune``), ``item``, ``run``,
        ``correct`` (0/1).  ``df.attrs["truth"]`` holds ``p`` (per-model lists of ``p_q`` in item order),
        ``accuracy`` (true accuracy per model) and the design arguments.

    Examples
    --------
    >>> from evalmix.simulate import mixture_benchmark
    >>> df = mixture_benchmark(400, 4, rng=1)
    >>> sorted(df["model"].unique())
    ['base', 'clone', 'finetune']
    >>> round(df.attrs["truth"]["accuracy"]["finetune"] - df.attrs["truth"]["accuracy"]["base"], 3)
    0.01
    """
    check_arguments(rng=rng)
    rng = as_generator(rng)
    scores, p = mixture_arrays(n_questions, n_runs, easy=easy, hard=hard, uplift=uplift, rng=rng)
    frames = []
    for name, s in scores.items():
        frames.append(pd.DataFrame({
            "model": name,
            "item": np.tile(np.arange(n_questions), n_runs),
            "run": np.repeat(np.arange(n_runs), n_questions),
            "correct": s.ravel().astype(np.int64),
        }))
    df = pd.concat(frames, ignore_index=True)
    df["model"] = pd.Categorical(df["model"], categories=list(scores))
    df.attrs["truth"] = {
        # lists, not arrays: pandas compares attrs when combining frames
        "p": {name: pq.tolist() for name, pq in p.items()},
        "accuracy": {name: float(pq.mean()) for name, pq in p.items()},
        "n_questions": n_questions, "n_runs": n_runs, "easy": easy, "hard": hard, "uplift": uplift,
    }
    return df


@accepts_seed
def mixture_predictions(n_instances: int = 800, n_runs: int = 30, *, prevalence: float = 0.15,
                        easy: float = 0.55, hard: float = 0.15,
                        rng: int | np.random.Generator | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Binary-classification runs whose per-instance correctness follows the mixture.

    Gold labels are Bernoulli(``prevalence``); each instance's probability of being classified
    correctly comes from the three-component mixture and a wrong answer flips the label.

    Returns
    -------
    preds : ndarray, shape (n_runs, n_instances)
        Predicted labels (0/1) of each run.
    gold : ndarray, shape (n_instances,)
        Gold labels.

    Examples
    --------
    >>> preds, gold = mixture_predictions(100, 3, rng=0)
    >>> preds.shape, gold.shape
    ((3, 100), (100,))
    """
    rng = as_generator(rng)
    gold = (rng.random(n_instances) < prevalence).astype(np.int8)
    p_right = sample_difficulty(n_instances, easy, hard, rng)
    right = rng.random((n_runs, n_instances)) < p_right
    preds = np.where(right, gold, 1 - gold).astype(np.int8)
    return preds, gold
