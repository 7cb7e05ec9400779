"""Seed handling shared by every random procedure."""

from __future__ import annotations

import numpy as np


def as_generator(seed: int | np.random.Generator | np.random.SeedSequence | None) -> np.random.Generator:
    """A numpy Generator from an int, a SeedSequence, a Generator (returned as is) or None."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)
