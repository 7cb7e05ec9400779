"""Seed handling shared by every random procedure.

Every public function that draws random numbers takes ``rng=`` (SPEC 7): None (fresh entropy), an
integer >= 0 or a numpy Generator. An integer gives the same numbers as the old ``seed=`` did with
that integer. ``seed=`` is still accepted for one release, through :func:`accepts_seed`, with a
``DeprecationWarning`` naming ``rng=``.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import numpy as np

from .errors import ArgumentError

__all__ = ["accepts_seed", "as_generator", "rng_argument"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def as_generator(seed: int | np.random.Generator | np.random.SeedSequence | None) -> np.random.Generator:
    """A numpy Generator from an int, a SeedSequence, a Generator (returned as is) or None."""
    if isinstance(seed, np.random.Generator):
        return seed
    return np.random.default_rng(seed)


def rng_argument(where: str, kwargs: dict[str, object]) -> None:
    """Move a deprecated ``seed=`` in ``kwargs`` to ``rng=``, warning; both at once is an error.

    Examples
    --------
    >>> import warnings
    >>> kw = {"seed": 3}
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     rng_argument("f", kw)
    >>> kw, str(caught[0].message)
    ({'rng': 3}, 'seed= is deprecated in f and will be removed in the next release; use rng= (the same integer gives the same results)')
    >>> try:
    ...     rng_argument("f", {"seed": 3, "rng": 4})
    ... except ArgumentError as exc:
    ...     print(exc)
    f: pass rng= only; seed= is its deprecated alias, and both were given (seed=3, rng=4)
    """
    if "seed" not in kwargs:
        return
    seed = kwargs.pop("seed")
    if "rng" in kwargs:
        raise ArgumentError(f"{where}: pass rng= only; seed= is its deprecated alias, and both were given "
                            f"(seed={seed!r}, rng={kwargs['rng']!r})")
    warnings.warn(f"seed= is deprecated in {where} and will be removed in the next release; use rng= "
                  "(the same integer gives the same results)", DeprecationWarning, stacklevel=3)
    kwargs["rng"] = seed


def accepts_seed(func: Callable[_P, _R]) -> Callable[_P, _R]:
    """Let ``func(..., rng=...)`` also be called with its old spelling ``seed=`` for one release.

    The signature seen by ``inspect`` and the docs is ``func``'s own (``rng=`` only).

    Examples
    --------
    >>> @accepts_seed
    ... def draw(n, rng=None):
    ...     return as_generator(rng).integers(0, 100, n)
    >>> import warnings
    >>> with warnings.catch_warnings():
    ...     warnings.simplefilter("ignore", DeprecationWarning)
    ...     old = draw(3, seed=1)
    >>> (draw(3, rng=1) == old).all()
    np.True_
    """
    where = func.__qualname__

    @functools.wraps(func)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        if "seed" in kwargs:
            rng_argument(where, kwargs)
        return func(*args, **kwargs)

    return wrapper
