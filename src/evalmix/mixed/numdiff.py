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

__all__ = ["central_gradient", "central_hessian", "gradient_jacobian"]


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


def gradient_jacobian(grad: Callable[[np.ndarray], np.ndarray], x: np.ndarray, which: np.ndarray,
                      step: float) -> np.ndarray:
    """Hessian over the coordinates ``which`` as central differences of an exact gradient ``grad``
    (step ``step * max(1, |x_k|)``), made symmetric: R's ``optimHess``, which glmmTMB's
    ``sdreport`` uses.

    Examples
    --------
    >>> g = lambda x: np.array([2 * x[0] + 3 * x[1], 3 * x[0]])
    >>> gradient_jacobian(g, np.array([1.0, 2.0]), np.array([True, True]), 1e-5).round(6).tolist()
    [[2.0, 3.0], [3.0, 0.0]]
    """
    idx = np.flatnonzero(which)
    J = np.empty((len(idx), len(idx)))
    for col, i in enumerate(idx):
        e = np.zeros_like(x, dtype=float)
        e[i] = step * max(1.0, abs(x[i]))
        J[:, col] = (grad(x + e) - grad(x - e))[idx] / (2 * e[i])
    return (J + J.T) / 2
