"""Checks of the arguments of public functions: one validator per kind of argument.

Every public function that takes a level, a probability, a count, a seed, a number of workers or
a choice among names checks it here first, so a bad value stops with an
:class:`~evalmix.core.errors.ArgumentError` naming the argument and the value (a wrong type with an
:class:`~evalmix.core.errors.ArgumentTypeError`, which is also a ``TypeError``) instead of a NaN
interval, a silently truncated integer or an error from deep inside numpy.
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any, TypeVar

import numpy as np

from .errors import ArgumentError, ArgumentTypeError
from .methods import MISSING_POLICIES

__all__ = ["MISSING_POLICIES", "check_arguments", "check_choice", "check_count", "check_counts", "check_level",
           "check_n_jobs", "check_number", "check_probability", "check_seed"]

_C = TypeVar("_C")

_MAX_SHOWN = 60


def _shown(value: object) -> str:
    """The value as the message shows it: its repr, cut short, with the type when it is not a number."""
    text = repr(value.item() if isinstance(value, np.generic) else value)
    if len(text) > _MAX_SHOWN:
        text = text[:_MAX_SHOWN - 3] + "..."
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        text += f" (a {type(value).__name__})"
    return text


def _real(value: object, name: str, what: str) -> float:
    """``value`` as a float when it is a real number (not a bool, a string or an array)."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, float, np.integer, np.floating)):
        raise ArgumentTypeError(f"{name} must be {what}, got {_shown(value)}")
    return float(value)


def check_number(value: float, name: str, *, minimum: float | None = None, maximum: float | None = None,
                 strict: bool = False) -> float:
    """A finite real number, optionally within ``[minimum, maximum]`` (open bounds with ``strict``).

    Parameters
    ----------
    value : float
        The argument.
    name : str
        Its name, for the message.
    minimum, maximum : float, optional
        Bounds.
    strict : bool
        Exclude the bounds themselves.

    Returns
    -------
    float

    Raises
    ------
    ArgumentTypeError
        Not a number (a string, a bool, None, an array).
    ArgumentError
        NaN, infinite or out of bounds.

    Examples
    --------
    >>> check_number(0.3, "delta", minimum=0, strict=True)
    0.3
    >>> try:
    ...     check_number(float("nan"), "delta")
    ... except ArgumentError as exc:
    ...     print(exc)
    delta must be a finite number, got nan
    """
    what = "a finite number"
    if minimum is not None and maximum is not None:
        what += f" in {'(' if strict else '['}{minimum:g}, {maximum:g}{')' if strict else ']'}"
    elif minimum is not None:
        what += f" {'>' if strict else '>='} {minimum:g}"
    elif maximum is not None:
        what += f" {'<' if strict else '<='} {maximum:g}"
    x = _real(value, name, what)
    if not math.isfinite(x):
        raise ArgumentError(f"{name} must be {what}, got {_shown(value)}")
    below = minimum is not None and (x <= minimum if strict else x < minimum)
    above = maximum is not None and (x >= maximum if strict else x > maximum)
    if below or above:
        raise ArgumentError(f"{name} must be {what}, got {_shown(value)}")
    return x


def check_probability(value: float, name: str, *, closed: bool = False) -> float:
    """A probability: strictly between 0 and 1 (``alpha``, ``power``), or in [0, 1] with ``closed``.

    Examples
    --------
    >>> check_probability(0.05, "alpha")
    0.05
    >>> try:
    ...     check_probability(1.2, "p1", closed=True)
    ... except ArgumentError as exc:
    ...     print(exc)
    p1 must be a probability in [0, 1], got 1.2
    """
    what = "a probability in [0, 1]" if closed else "a probability strictly between 0 and 1"
    x = _real(value, name, what)
    inside = 0 <= x <= 1 if closed else 0 < x < 1
    if not inside:  # NaN fails both comparisons
        raise ArgumentError(f"{name} must be {what}, got {_shown(value)}")
    return x


def check_level(value: float, name: str = "conf_level") -> float:
    """A confidence level strictly between 0 and 1; ``95`` is refused with a hint that it means 0.95.

    Examples
    --------
    >>> check_level(0.9)
    0.9
    >>> try:
    ...     check_level(95)
    ... except ArgumentError as exc:
    ...     print(exc)
    conf_level must be a number strictly between 0 and 1 (e.g. 0.95), got 95 (for 95% write 0.95)
    """
    what = "a number strictly between 0 and 1 (e.g. 0.95)"
    x = _real(value, name, what)
    if not 0 < x < 1:
        hint = f" (for {x:g}% write {x / 100:g})" if 50 <= x < 100 else ""
        raise ArgumentError(f"{name} must be {what}, got {_shown(value)}{hint}")
    return x


def check_count(value: int, name: str, *, minimum: int = 1) -> int:
    """A whole number ``>= minimum``: ``n_boot``, ``n_sims``, ``k``, a number of items or runs.

    Python and numpy integers are accepted; a float is refused, also a whole one (``1e4``), so
    that ``2.5`` is never truncated and what the function receives is what it counts with.

    Raises
    ------
    ArgumentTypeError
        Not an integer: a float (``2.5``, ``1e4``, NaN), a string (``"1000"``), a bool, None.
    ArgumentError
        An integer below ``minimum``.

    Examples
    --------
    >>> check_count(10_000, "n_boot")
    10000
    >>> try:
    ...     check_count(2.5, "k")
    ... except ArgumentError as exc:
    ...     print(exc)
    k must be a whole number >= 1, got 2.5 (a float)
    >>> try:
    ...     check_count(1e4, "n_boot")
    ... except ArgumentError as exc:
    ...     print(exc)
    n_boot must be a whole number >= 1, got 10000.0 (a float; write 10000)
    """
    what = f"a whole number >= {minimum}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        shown = _shown(value)
        if isinstance(value, (float, np.floating)):
            whole = math.isfinite(value) and value == math.floor(value)
            shown += f" (a float; write {int(value)})" if whole else " (a float)"
        raise ArgumentTypeError(f"{name} must be {what}, got {shown}")
    if value < minimum:
        raise ArgumentError(f"{name} must be {what}, got {_shown(value)}")
    return int(value)


def check_counts(values: int | Iterable[int], name: str, *, minimum: int = 1) -> list[int]:
    """One count or a sequence of them (``k=[1, 5, 10]``), each checked by :func:`check_count`.

    Examples
    --------
    >>> check_counts([1, 5], "k")
    [1, 5]
    >>> try:
    ...     check_counts([1, "5"], "k")
    ... except ArgumentError as exc:
    ...     print(exc)
    k must be a whole number >= 1, got '5' (a str)
    """
    if isinstance(values, (str, bytes)) or not isinstance(values, Iterable):
        return [check_count(values, name, minimum=minimum)]  # type: ignore[arg-type]
    out = [check_count(v, name, minimum=minimum) for v in values]
    if not out:
        raise ArgumentError(f"{name} must hold at least one whole number >= {minimum}, got an empty sequence")
    return out


def check_seed(seed: _C, name: str = "seed") -> _C:
    """A seed as the random procedures take it: None, an integer >= 0, a numpy Generator or SeedSequence.

    Returns the seed unchanged; numpy itself refuses a negative seed only when it draws.

    Examples
    --------
    >>> check_seed(42)
    42
    >>> try:
    ...     check_seed(-1)
    ... except ArgumentError as exc:
    ...     print(exc)
    seed must be None, an integer >= 0, a numpy Generator or a SeedSequence, got -1
    """
    what = "None, an integer >= 0, a numpy Generator or a SeedSequence"
    if seed is None or isinstance(seed, (np.random.Generator, np.random.SeedSequence)):
        return seed
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ArgumentTypeError(f"{name} must be {what}, got {_shown(seed)}")
    if seed < 0:
        raise ArgumentError(f"{name} must be {what}, got {_shown(seed)}")
    return seed


def check_n_jobs(n_jobs: int | None, name: str = "n_jobs") -> int | None:
    """Workers as joblib counts them: None (the enclosing ``parallel_config``), 1, 2, ... or -1 for
    every core (-2 all but one...); 0 is refused.

    Examples
    --------
    >>> check_n_jobs(-1)
    -1
    >>> try:
    ...     check_n_jobs(0)
    ... except ArgumentError as exc:
    ...     print(exc)
    n_jobs must be None or a nonzero whole number (-1: every core), got 0
    """
    what = "None or a nonzero whole number (-1: every core)"
    if n_jobs is None:
        return None
    if isinstance(n_jobs, (bool, np.bool_)) or not isinstance(n_jobs, (int, np.integer)):
        raise ArgumentTypeError(f"{name} must be {what}, got {_shown(n_jobs)}")
    if n_jobs == 0:
        raise ArgumentError(f"{name} must be {what}, got {_shown(n_jobs)}")
    return int(n_jobs)


def check_choice(value: _C, name: str, choices: Sequence[_C]) -> _C:
    """One of ``choices``; otherwise an error listing them, with the closest one suggested.

    Examples
    --------
    >>> check_choice("wilson", "ci", ["wilson", "exact", "wald"])
    'wilson'
    >>> try:
    ...     check_choice("wilsn", "ci", ["wilson", "exact", "wald"])
    ... except ArgumentError as exc:
    ...     print(exc)
    ci must be one of 'wilson', 'exact', 'wald', got 'wilsn' (did you mean 'wilson'?)
    """
    try:
        if value in choices:
            return value
    except TypeError:  # an unhashable or incomparable value is simply not a choice
        pass
    listed = ", ".join(repr(c) for c in choices)
    close = difflib.get_close_matches(str(value), [str(c) for c in choices], n=1, cutoff=0.6)
    hint = f" (did you mean {close[0]!r}?)" if close else ""
    cls = ArgumentError if isinstance(value, str) or value is None else ArgumentTypeError
    raise cls(f"{name} must be one of {listed}, got {_shown(value) if not isinstance(value, str) else repr(value)}"
              f"{hint}")


#: Arguments with one meaning across the package, and their check (see :func:`check_arguments`).
_BY_NAME: dict[str, Callable[[Any, str], Any]] = {
    "conf_level": check_level,
    "alpha": check_probability, "power": check_probability,
    "seed": check_seed, "rng": check_seed, "n_jobs": check_n_jobs, "cores": check_n_jobs,
    "missing": lambda v, name: check_choice(v, name, MISSING_POLICIES),
    **{name: check_count for name in ("n_boot", "n_sims", "n_draws", "n_resamples", "n_plausible",
                                      "chunk_size", "max_runs", "draws", "tune", "chains")},
}


def check_arguments(**arguments: object) -> None:
    """Check arguments by their name, the one-line guard at the top of a public function.

    Each argument is checked as it is everywhere in evalmix: ``conf_level`` strictly between 0
    and 1; ``alpha`` and ``power`` probabilities in (0, 1); ``n_boot``, ``n_sims``, ``n_draws``,
    ``n_resamples``, ``n_plausible``, ``chunk_size``, ``max_runs``, ``draws``, ``tune`` and
    ``chains`` whole numbers >= 1; ``rng`` (``seed``) None, an integer >= 0, a Generator or a SeedSequence;
    ``n_jobs`` (``cores``) None or a nonzero integer; ``missing`` "raise" or "drop".

    Raises
    ------
    ArgumentError
        The first bad argument, named with its value (an :class:`ArgumentTypeError` for a wrong
        type).

    Examples
    --------
    >>> check_arguments(n_boot=2000, conf_level=0.95, seed=None)
    >>> try:
    ...     check_arguments(n_boot="1000")
    ... except ArgumentError as exc:
    ...     print(exc)
    n_boot must be a whole number >= 1, got '1000' (a str)
    """
    for name, value in arguments.items():
        check = _BY_NAME.get(name)
        if check is None:
            raise TypeError(f"check_arguments has no rule for an argument named {name!r}")
        check(value, name)
