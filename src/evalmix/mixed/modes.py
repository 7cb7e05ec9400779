"""The conditional modes of a Laplace approximation: one penalised Newton loop for every engine
whose inner problem is a maximisation over the spherical random effects.

At fixed outer parameters the joint log-density ``h(u) = sum_i l_i(eta_i) - u'u / 2`` with
``eta = X beta + Z Lambda u`` is maximised over ``u``.  The family enters only through each row's
first and second derivatives over the linear predictor (``d1``, ``d2``: the working residuals and
minus the working weights), so the loop serves glmmtmb's families and clmm's cumulative links
alike.  Each Newton step solves ``H step = Lambda Z' d1 - u`` with ``H = Lambda Z' W Z Lambda + I``
(``W = -d2``), factored by the caller's structure (:class:`evalmix.mixed.intercepts.InterceptHessian`
on :mod:`evalmix.mixed.linalg`), and is halved until ``h`` does not fall
(:func:`evalmix.mixed.intercepts.ascent_step`).

Examples
--------
One level, a normal row with mean ``u`` and observation 1 (``l = -(1 - u)^2 / 2``): the mode of
``l - u^2 / 2`` is 1/2 and ``H = 2``.

>>> import numpy as np
>>> from evalmix.mixed.intercepts import InterceptHessian
>>> h = InterceptHessian([np.array([0])], [1])
>>> def joint(u):
...     r = 1.0 - h.z_times(u)
...     return float(-0.5 * r @ r - 0.5 * u @ u), r, -np.ones(1)
>>> m = laplace_modes(joint, np.zeros(1), np.ones(1), h.zt_times, h.factor, maxit=20, tol=1e-10)
>>> m.u.tolist(), round(m.factor.logdet, 12) == round(float(np.log(2.0)), 12)
([0.5], True)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from .intercepts import HessianFactor, ascent_step

__all__ = ["Modes", "laplace_modes"]


@dataclass(frozen=True)
class Modes:
    """The end of :func:`laplace_modes`: the modes ``u``, the joint log-density there
    (``value``), the rows' derivatives ``d1`` and ``d2`` there, and the factor of ``H`` there
    (None: ``H`` is not positive definite at ``u``)."""

    u: np.ndarray
    value: float
    d1: np.ndarray
    d2: np.ndarray
    factor: HessianFactor | None


def laplace_modes(joint: Callable[[np.ndarray], tuple[float, np.ndarray, np.ndarray]], u: np.ndarray,
                  sd_cols: np.ndarray, zt_times: Callable[[np.ndarray], np.ndarray],
                  factor: Callable[[np.ndarray, np.ndarray], HessianFactor | None], *, maxit: int,
                  tol: float, clip: bool = False) -> Modes | None:
    """Maximise ``joint`` over the spherical effects by Newton steps halved until it does not fall.

    Parameters
    ----------
    joint : callable
        ``joint(u) -> (value, d1, d2)``: the joint log-density at ``u`` and each row's first and
        second derivatives over the linear predictor.
    u : ndarray
        The start (the previous evaluation's modes: warm starts make the loop short); zeros are
        used instead where ``joint`` is not finite there.  Not changed.
    sd_cols : ndarray
        The scale of each effect (``Lambda``'s diagonal).
    zt_times : callable
        ``r -> Z' r``.
    factor : callable
        ``factor(sd_cols, w) -> HessianFactor | None``: ``H`` at row weights ``w`` (None: not
        positive definite).
    maxit : int
        Newton steps at most.
    tol : float
        Stop when the largest entry of the gradient ``Lambda Z' d1 - u`` is below it.
    clip : bool
        Where ``H`` is not positive definite away from the mode (a row's observed information
        can be negative: a beta-binomial with a small precision), step with the weights clipped
        at 0, which keeps the step uphill; False stops the loop there.

    Returns
    -------
    Modes or None
        None only with ``clip`` when even the clipped ``H`` has no factor.

    Examples
    --------
    >>> from evalmix.mixed.intercepts import InterceptHessian
    >>> h = InterceptHessian([np.array([0, 0, 1])], [2])
    >>> y = np.array([1.0, 3.0, -2.0])
    >>> def joint(u):
    ...     r = y - h.z_times(u)
    ...     return float(-0.5 * r @ r - 0.5 * u @ u), r, -np.ones(3)
    >>> laplace_modes(joint, np.zeros(2), np.ones(2), h.zt_times, h.factor, maxit=20, tol=1e-10).u.tolist()
    [1.3333333333333333, -1.0]
    """
    value, d1, d2 = joint(u)
    if not np.isfinite(value):
        u = np.zeros_like(u)
        value, d1, d2 = joint(u)
    fac = None
    for _ in range(maxit):
        grad = sd_cols * zt_times(d1) - u
        fac = factor(sd_cols, -d2)
        if np.max(np.abs(grad)) < tol:
            break
        step_fac = fac
        if step_fac is None:
            if not clip:
                break
            step_fac = factor(sd_cols, np.maximum(-d2, 0.0))
            if step_fac is None:
                return None
        moved = ascent_step(joint, u, step_fac.solve(grad), value)
        if moved is None:
            break
        u, (value, d1, d2) = moved
        fac = None
    if fac is None:
        fac = factor(sd_cols, -d2)
    return Modes(u, value, d1, d2, fac)
