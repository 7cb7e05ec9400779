"""Central finite differences of a scalar objective: the gradient and Hessian that the engines
without analytic derivatives (:mod:`evalmix.tmb`, :mod:`evalmix.ordinal`) use for their
convergence checks and standard errors, as glmmTMB's and ordinal's numerical derivatives do.

Examples
--------
>>> import numpy as np
>>> f = lambda x: float(x[0] ** 2 + 3 * x[0] * x[1])
>>> central_gradient(f, np.array([1.0, 2.0]), 1e-5).round(6).tolist()
[8.0, 3.0]
>>> central_hessian(f, np.array([1.0, 2.0]), np.array([True, True]), 1e-4).round(6).tolist()
[[2.0, 3.0], [3.0, 0.0]]
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

__all__ = ["central_gradient", "central_hessian"]


def central_gradient(f: Callable[[np.ndarray], float], x: np.ndarray, step: float) -> np.ndarray:
    """Central-difference gradient of ``f`` at ``x``, step ``step * max(1, |x_k|)`` per coordinate."""
    g = np.empty_like(x, dtype=float)
    for k in range(len(x)):
        e = np.zeros_like(x, dtype=float)
        e[k] = step * max(1.0, abs(x[k]))
        g[k] = (f(x + e) - f(x - e)) / (2 * e[k])
    return g


def central_hessian(f: Callable[[np.ndarray], float], x: np.ndarray, which: np.ndarray, step: float,
                    f0: float | None = None) -> np.ndarray:
    """Central-difference Hessian of ``f`` at ``x`` over the coordinates ``which`` (a boolean mask),
    with the absolute step ``step``; ``f0`` is ``f(x)`` when the caller has it."""
    idx = np.flatnonzero(which)
    k = len(idx)
    H = np.empty((k, k))
    base = f(x) if f0 is None else f0

    def at(shift: dict[int, float]) -> float:
        y = x.copy()
        for i, s in shift.items():
            y[idx[i]] += s
        return f(y)

    for i in range(k):
        H[i, i] = (at({i: step}) - 2 * base + at({i: -step})) / step**2
        for j in range(i):
            H[i, j] = H[j, i] = (at({i: step, j: step}) - at({i: step, j: -step})
                                 - at({i: -step, j: step}) + at({i: -step, j: -step})) / (4 * step**2)
    return H
