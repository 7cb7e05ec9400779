"""The conditional modes of a Laplace approximation: one penalised Newton loop for every engine
whose inner problem is an optimisation over the spherical random effects.

:func:`find_modes` is the loop: at each iteration the problem linearises at its point (the
weights and the factor of ``H = Lambda Z' W Z Lambda + I``) and proposes a step, which is taken,
and halved while the problem's acceptance rule refuses it. The problem (a :class:`ModeProblem`)
owns the point, its per-row buffers, the objective and the rules: where to stop, what a step
is, when it is accepted, how it is halved and what to do when no halving is accepted. So one
loop runs

- :func:`laplace_modes`: glmmtmb's families and clmm's cumulative links, where the family enters
  only through each row's first and second derivatives over the linear predictor (``d1``,
  ``d2``: the working residuals and minus the working weights); each Newton step solves
  ``H step = Lambda Z' d1 - u`` with ``W = -d2``, factored by the caller's structure
  (:class:`evalmix.mixed.intercepts.InterceptHessian` on :mod:`evalmix.mixed.linalg`), and is
  halved until the joint log-density does not fall;
- glmer's PIRLS (:meth:`evalmix.glmm.deviance.LaplaceDeviance.run_pirls`): Newton steps on the
  penalised deviance over ``u`` or jointly over ``(u, beta)`` (lme4's ``nAGQ = 0``), with its
  row passes in place (compiled for large designs), or lme4's ``pwrssUpdate`` with its stopping
  rule (the relative change of the penalised deviance) and its halving towards the previous
  ``u``.

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
from typing import Protocol

import numpy as np

from .intercepts import HessianFactor

__all__ = ["INNER_MAXIT", "INNER_TOL", "ModeProblem", "Modes", "find_modes", "laplace_modes"]


class ModeProblem(Protocol):
    """A conditional-mode problem as :func:`find_modes` steps it. The problem keeps its point
    (``u``, and what follows it: the linear predictor, per-row buffers, ``beta`` when it joins
    the modes), the objective there and the step being tried; the loop only orders the calls.

    Attributes
    ----------
    halvings : int
        Halvings of a refused full step at most.
    """

    halvings: int

    def direction(self, it: int) -> bool:
        """Linearise at the point (weights, the factor of ``H``) and compute the step of
        iteration ``it`` (from 1); True when the problem stops here, before any step (its
        stopping rule holds, or there is no step to take)."""

    def take(self) -> float:
        """Move to the full step (the point and its buffers follow); the objective there."""

    def stops(self, value: float) -> bool:
        """A stopping rule on the full step just taken (True keeps it and ends the loop)."""

    def accepts(self, value: float) -> bool:
        """Whether the step that gave ``value`` is kept (else it is halved)."""

    def halve(self) -> float:
        """Halve the step once more; the objective there (a trial: the point may stay)."""

    def exhausted(self) -> bool:
        """No halving was accepted: True ends the loop (at the point before the step)."""

    def settle(self, value: float) -> float:
        """Move to the last halved step, if the trial did not; the objective there."""

    def commit(self, value: float) -> None:
        """Make the accepted step the point, with objective ``value``."""


def find_modes(problem: ModeProblem, maxit: int) -> int:
    """The mode-finding loop of every engine: Newton steps, each halved while refused.

    Parameters
    ----------
    problem : ModeProblem
        The point, the objective and the rules (see :class:`ModeProblem`).
    maxit : int
        Iterations at most.

    Returns
    -------
    int
        The iterations run (the last one may have stopped before its step; 0 when ``maxit`` is
        0).

    Examples
    --------
    Newton steps on ``f(u) = u^4`` (minimised) from 1, a step kept when ``f`` does not rise:

    >>> class Quartic:
    ...     halvings = 10
    ...     def __init__(self):
    ...         self.u, self.f = 1.0, 1.0
    ...     def direction(self, it):
    ...         self.d = -self.u / 3.0  # f' / f''
    ...         return abs(self.d) < 1e-3
    ...     def take(self):
    ...         return (self.u + self.d) ** 4
    ...     def stops(self, value):
    ...         return False
    ...     def accepts(self, value):
    ...         return value <= self.f
    ...     def halve(self):
    ...         self.d /= 2
    ...         return (self.u + self.d) ** 4
    ...     def exhausted(self):
    ...         return True
    ...     def settle(self, value):
    ...         return value
    ...     def commit(self, value):
    ...         self.u, self.f = self.u + self.d, value
    >>> q = Quartic()
    >>> find_modes(q, 50), round(q.u, 4)
    (16, 0.0023)
    """
    it = 0
    for it in range(1, maxit + 1):
        if problem.direction(it):
            break
        value = problem.take()
        if problem.stops(value):
            break
        if not problem.accepts(value):
            for _ in range(problem.halvings):
                value = problem.halve()
                if problem.accepts(value):
                    break
            else:
                if problem.exhausted():
                    break
            value = problem.settle(value)
        problem.commit(value)
    return it


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


# a step may lower the joint log-density by this share of it (the rounding of the sum over rows),
# so that a step taken at the mode is not halved to nothing; 2^-29 of a Newton step that still
# lowers it means the mode is reached to rounding
_SLACK = 1e-12
_HALVINGS = 29
# the inner maximisation of glmmtmb and clmm: Newton steps until the largest change of the
# effects is below INNER_TOL, at most INNER_MAXIT of them
INNER_TOL = 1e-10
INNER_MAXIT = 100


class _Ascent:
    """:class:`ModeProblem` of :func:`laplace_modes`: maximise ``joint`` by Newton steps."""

    halvings = _HALVINGS

    def __init__(self, joint: Callable[[np.ndarray], tuple[float, np.ndarray, np.ndarray]],
                 u: np.ndarray, sd_cols: np.ndarray, zt_times: Callable[[np.ndarray], np.ndarray],
                 factor: Callable[[np.ndarray, np.ndarray], HessianFactor | None], tol: float,
                 clip: bool):
        self.joint, self.sd_cols, self.zt_times, self.factor_at = joint, sd_cols, zt_times, factor
        self.tol, self.clip = tol, clip
        value, d1, d2 = joint(u)
        if not np.isfinite(value):
            u = np.zeros_like(u)
            value, d1, d2 = joint(u)
        self.u, self.value, self.d1, self.d2 = u, value, d1, d2
        self.fac: HessianFactor | None = None
        self.failed = False  # with clip: not even the clipped H has a factor

    def direction(self, it: int) -> bool:
        grad = self.sd_cols * self.zt_times(self.d1) - self.u
        self.fac = fac = self.factor_at(self.sd_cols, -self.d2)
        if np.max(np.abs(grad)) < self.tol:
            return True
        if fac is None:
            if not self.clip:
                return True
            # away from the mode a row's observed information can be negative: the weights
            # clipped at 0 keep the step uphill
            fac = self.factor_at(self.sd_cols, np.maximum(-self.d2, 0.0))
            if fac is None:
                self.failed = True
                return True
        self.step = fac.solve(grad)
        return False

    def _trial(self) -> float:
        self.trial_u = self.u + self.step
        self.trial = self.joint(self.trial_u)
        return self.trial[0]

    take = _trial

    def stops(self, value: float) -> bool:
        return False

    def accepts(self, value: float) -> bool:
        return bool(np.isfinite(value) and value >= self.value - _SLACK * abs(self.value))

    def halve(self) -> float:
        self.step = self.step / 2
        return self._trial()

    def exhausted(self) -> bool:
        return True

    def settle(self, value: float) -> float:
        return value

    def commit(self, value: float) -> None:
        self.u = self.trial_u
        self.value, self.d1, self.d2 = self.trial
        self.fac = None


def laplace_modes(joint: Callable[[np.ndarray], tuple[float, np.ndarray, np.ndarray]], u: np.ndarray,
                  sd_cols: np.ndarray, zt_times: Callable[[np.ndarray], np.ndarray],
                  factor: Callable[[np.ndarray, np.ndarray], HessianFactor | None], *, maxit: int = INNER_MAXIT,
                  tol: float = INNER_TOL, clip: bool = False) -> Modes | None:
    """Maximise ``joint`` over the spherical effects by Newton steps halved until it does not fall
    (:func:`find_modes`).

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
    a = _Ascent(joint, u, sd_cols, zt_times, factor, tol, clip)
    find_modes(a, maxit)
    if a.failed:
        return None
    fac = a.fac
    if fac is None:
        fac = factor(sd_cols, -a.d2)
    return Modes(a.u, a.value, a.d1, a.d2, fac)
