"""How the optimiser of a mixed-model fit ran, and whether the optimum passes the checks.

:class:`OptimizerReport` is ``fit.optimizer`` of every maximum-likelihood fit (glmer, lmer,
clmm, glmmtmb): the same fields, printed the same way in every summary. The convergence checks
are written here once, with their tolerances as arguments:

- :func:`check_convergence`, lme4's ``checkConv``: the gradient scaled by the Cholesky factor of
  the Hessian, and the Hessian's eigenvalue ratio (glmer, lmer, glmmtmb);
- :func:`convergence_check`, ordinal's ``conv.check``: its codes and messages (clmm).

Every message names the check and the value that failed it.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.optimize import OptimizeResult

__all__ = ["GRAD_TOL", "HESS_TOL", "OptimizerReport", "check_convergence", "convergence_check",
           "gradient_report", "hessian_condition"]

#: lme4's ``check.conv.grad`` tolerance of the scaled gradient
GRAD_TOL = 2e-3
#: lme4's ``check.conv.hess`` tolerance of the Hessian's smallest eigenvalue ratio
HESS_TOL = 1e-6

# the earlier spellings: glmer's report attributes and lmer's dict keys
_OLD_NAMES = {"method": "optimizer", "outer_iterations": "iterations", "deviance_evaluations": "feval",
              "evaluations": "feval", "max_abs_gradient": "max_grad"}


@dataclass(frozen=True)
class OptimizerReport:
    """How the optimiser ran and where it stopped (lme4's ``optinfo``, ordinal's ``niter``,
    ``max.grad`` and ``cond.H``), the same fields for every engine.

    Attributes
    ----------
    optimizer : str
        The optimiser(s) that ran (``"L-BFGS-B"``, ``"L-BFGS-B + Nelder-Mead"``...).
    converged : bool
        The optimiser's own verdict (the fit's ``converged`` adds the checks of :attr:`checks`).
    message : str
        How it ended, as the optimiser says it.
    iterations : int
        Iterations of the (outer) optimiser.
    feval : int
        Evaluations of the objective (the deviance or minus the log-likelihood).
    max_grad : float
        Largest absolute gradient at the optimum, leaving out parameters held at a bound with
        the gradient pointing out of the feasible set (NaN where the engine has none).
    hessian_cond : float
        Condition number of the Hessian at the optimum, largest over smallest eigenvalue
        (ordinal's ``cond.H``); infinite when it is not positive definite, NaN where none is
        computed.
    checks : tuple of str
        Messages of the failed convergence checks (empty: all passed).
    seconds : float
        Wall-clock time of the optimisation.
    gradient : ndarray
        The gradient at the optimum (read-only; empty where the engine keeps none).
    pirls_iterations : int
        PIRLS iterations over all evaluations (glmer).
    log : tuple
        One entry per outer evaluation when glmer's control asks for a log.

    The earlier spellings ``method``, ``outer_iterations``, ``deviance_evaluations``,
    ``max_abs_gradient`` (and ``report["evaluations"]``...) still answer, with a
    ``DeprecationWarning``.

    Examples
    --------
    >>> rep = OptimizerReport("L-BFGS-B", True, "CONVERGENCE", iterations=12, feval=15,
    ...                       max_grad=2.1e-7, hessian_cond=28.4)
    >>> rep.describe()
    'optimizer: L-BFGS-B; CONVERGENCE after 12 iterations, 15 function evaluations; max|grad| = 2.1e-07; cond.H = 28.4'
    """

    optimizer: str
    converged: bool
    message: str = ""
    iterations: int = 0
    feval: int = 0
    max_grad: float = math.nan
    hessian_cond: float = math.nan
    checks: tuple[str, ...] = ()
    seconds: float = 0.0
    gradient: np.ndarray = field(default_factory=lambda: np.zeros(0), repr=False)
    pirls_iterations: int = 0
    log: tuple[Any, ...] = field(default=(), repr=False)

    def __post_init__(self) -> None:
        g = np.array(self.gradient, dtype=float).ravel()
        g.flags.writeable = False
        object.__setattr__(self, "gradient", g)
        object.__setattr__(self, "checks", tuple(self.checks))

    def __getattr__(self, name: str) -> Any:
        new = _OLD_NAMES.get(name)
        if new is None:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        warnings.warn(f"OptimizerReport.{name} is now .{new}", DeprecationWarning, stacklevel=2)
        return getattr(self, new)

    def __getitem__(self, key: str) -> Any:
        """The earlier dict spelling of lmer fits (``fit.optimizer["converged"]``)."""
        new = _OLD_NAMES.get(key, key)
        if new not in self.__dataclass_fields__:
            raise KeyError(key)
        warnings.warn(f"fit.optimizer[{key!r}] is now fit.optimizer.{new}", DeprecationWarning,
                      stacklevel=2)
        return getattr(self, new)

    def to_dict(self) -> dict[str, Any]:
        def num(v: float) -> float | None:
            return float(v) if math.isfinite(v) else None

        return {"optimizer": self.optimizer, "converged": self.converged, "message": self.message,
                "iterations": self.iterations, "feval": self.feval, "max_grad": num(self.max_grad),
                "hessian_cond": num(self.hessian_cond), "checks": list(self.checks),
                "seconds": self.seconds, "pirls_iterations": self.pirls_iterations,
                "gradient": [float(v) for v in self.gradient],
                "log": [st.to_dict() for st in self.log]}

    def describe(self) -> str:
        """One line for every engine's ``summary()``: how it ended, iterations, evaluations, the
        final gradient and the Hessian's condition number."""
        if self.feval == 0 and self.iterations == 0:
            return f"optimizer: {self.optimizer}; not run"
        out = (f"optimizer: {self.optimizer}; {self.message.strip() or 'stopped'} after "
               f"{self.iterations} iterations, {self.feval} function evaluations")
        if math.isfinite(self.max_grad):
            out += f"; max|grad| = {self.max_grad:.3g}"
        if not math.isnan(self.hessian_cond):
            out += f"; cond.H = {self.hessian_cond:.3g}"
        return out

    def __str__(self) -> str:
        return "\n".join([self.describe(), *self.checks])


def hessian_condition(hessian: np.ndarray | None) -> float:
    """Largest over smallest eigenvalue of a Hessian (ordinal's ``cond.H``): infinite when it is
    not positive definite (or not finite), NaN without one.

    Examples
    --------
    >>> hessian_condition(np.diag([4.0, 2.0])), hessian_condition(np.diag([1.0, -1.0]))
    (2.0, inf)
    """
    if hessian is None:
        return math.nan
    H = np.asarray(hessian, dtype=float)
    if H.size == 0:
        return 1.0
    if not np.all(np.isfinite(H)):
        return math.inf
    ev = np.linalg.eigvalsh((H + H.T) / 2)
    return float(ev.max() / ev.min()) if ev.min() > 0 else math.inf


def check_convergence(gradient: np.ndarray, hessian: np.ndarray | None, free: np.ndarray | None = None,
                      *, grad_tol: float = GRAD_TOL, hess_tol: float = HESS_TOL) -> tuple[str, ...]:
    """lme4's ``checkConv``: the gradient scaled by the Hessian's Cholesky factor, and the
    Hessian's eigenvalue ratio, over the free parameters; the messages of the failed checks.

    Parameters
    ----------
    gradient : (p,) array
        Gradient of the objective (deviance) at the optimum.
    hessian : (p, p) array or None
        Its Hessian (None: no check, as lme4 without derivatives).
    free : (p,) bool array, optional
        The parameters to check (default all): lme4 leaves out those held at a bound.
    grad_tol : float
        Largest accepted ``min(|scaled gradient|, |gradient|)`` (lme4's ``check.conv.grad``).
    hess_tol : float
        Smallest accepted ratio of the smallest to the largest eigenvalue (``check.conv.hess``).

    Returns
    -------
    tuple of str
        lme4's messages, each naming the check and the value (empty: converged).

    Examples
    --------
    >>> check_convergence(np.array([1e-5, 0.0]), np.diag([4.0, 2.0]))
    ()
    >>> check_convergence(np.array([0.05, 0.0]), np.diag([1.0, 2.0]))
    ('Model failed to converge with max|grad| = 0.05 (tol = 0.002, component 1)',)
    >>> check_convergence(np.zeros(2), np.diag([1.0, 1e-9]))
    ('Model is nearly unidentifiable: large eigenvalue ratio - Rescale variables? (eigenvalue ratio 1e-09, tol = 1e-06)',)
    """
    if hessian is None:
        return ()
    g = np.asarray(gradient, dtype=float)
    keep = np.ones(g.size, dtype=bool) if free is None else np.asarray(free, dtype=bool)
    g = g[keep]
    Hf = np.asarray(hessian, dtype=float)[np.ix_(keep, keep)]
    if g.size == 0:
        return ()
    msgs: list[str] = []
    try:
        R = np.linalg.cholesky(Hf).T  # upper, H = R'R
        scgrad = np.linalg.solve(R, g)
    except np.linalg.LinAlgError:
        ev = np.linalg.eigvalsh(Hf) if np.all(np.isfinite(Hf)) else np.array([math.nan])
        neg = int((ev < -hess_tol).sum())
        return (f"Model failed to converge: degenerate Hessian with {neg} negative eigenvalues"
                if neg else "unable to evaluate scaled gradient (the Hessian is not positive definite)",)
    mingrad = np.minimum(np.abs(scgrad), np.abs(g))
    if mingrad.max() > grad_tol:
        w = int(np.flatnonzero(keep)[np.argmax(mingrad)]) + 1
        msgs.append(f"Model failed to converge with max|grad| = {mingrad.max():.6g} "
                    f"(tol = {grad_tol:g}, component {w})")
    ev = np.linalg.eigvalsh(Hf)
    if ev.max() > 0 and ev.min() / ev.max() < hess_tol:
        msgs.append("Model is nearly unidentifiable: large eigenvalue ratio - Rescale variables? "
                    f"(eigenvalue ratio {ev.min() / ev.max():.3g}, tol = {hess_tol:g})")
    return tuple(msgs)


#: ordinal's numerical tolerance of ``conv.check`` (``sqrt(.Machine$double.eps)``)
CHECK_TOL = float(np.sqrt(np.finfo(float).eps))
#: the largest |gradient| of a converged clmm fit (the optimiser stops far below it)
ORDINAL_GRAD_TOL = 1e-3
#: ordinal's ``relTol``: a Newton step larger than this leaves parameters with fewer correct decimals
REL_TOL = 1e-6


def convergence_check(hessian: np.ndarray, gradient: np.ndarray, thresholds_increasing: bool = True,
                      *, grad_tol: float = ORDINAL_GRAD_TOL, check_tol: float = CHECK_TOL,
                      rel_tol: float = REL_TOL) -> tuple[tuple[int, ...], tuple[str, ...]]:
    """ordinal's ``conv.check`` of a fit: its codes and messages, in its order of tests.

    ``-2``: a Hessian with negative eigenvalues (or not finite); ``-1``: a gradient above
    ``grad_tol``; ``-3``: thresholds not increasing; ``1``: a numerically singular Hessian
    (parameters not uniquely determined, as a rating category that one level never receives makes
    them); otherwise ``1`` when the Newton step from the estimates exceeds ``rel_tol`` (some
    parameters have few correct decimals), ``2`` a very large eigenvalue, ``3`` a large eigenvalue
    ratio (nearly unidentifiable), and ``0``, ``"successful convergence"``, when none applies.

    Parameters
    ----------
    hessian : (p, p) array
        Hessian of minus the log-likelihood at the estimates.
    gradient : (p,) array
        Gradient of minus the log-likelihood at the estimates.
    thresholds_increasing : bool
        Whether the fitted thresholds increase.
    grad_tol, check_tol, rel_tol : float
        The largest accepted |gradient|; ordinal's eigenvalue tolerance
        (``sqrt(.Machine$double.eps)``) and ``relTol``.

    Returns
    -------
    tuple of (codes, messages)

    Examples
    --------
    >>> convergence_check(np.diag([4.0, 2.0]), np.zeros(2))
    ((0,), ('successful convergence',))
    >>> convergence_check(np.diag([4.0, -2.0]), np.zeros(2))[1]
    ('Model failed to converge: degenerate Hessian with 1 negative eigenvalues',)
    """
    H = np.asarray(hessian, dtype=float)
    g = np.asarray(gradient, dtype=float)
    if not np.all(np.isfinite(H)):
        return (-2,), ("Model failed to converge: the Hessian is not finite",)
    evd = np.linalg.eigvalsh((H + H.T) / 2)
    negative = int(np.sum(evd < -check_tol))
    if negative:
        return (-2,), (f"Model failed to converge: degenerate Hessian with {negative} negative eigenvalues",)
    max_grad = float(np.max(np.abs(g))) if g.size else 0.0
    if not max_grad <= grad_tol:
        return (-1,), (f"Model failed to converge with max|grad| = {max_grad:g} (tol = {grad_tol:g})",)
    if not thresholds_increasing:
        return (-3,), ("not all thresholds are increasing: fit is invalid",)
    try:
        chol = np.linalg.cholesky(H)
    except np.linalg.LinAlgError:
        chol = None
    if chol is None or np.any(np.abs(evd) < check_tol):
        return (1,), ("Hessian is numerically singular: parameters are not uniquely determined",)
    step = np.linalg.solve(H, g)
    codes: list[int] = []
    messages: list[str] = []
    if step.size and np.max(np.abs(step)) > rel_tol:
        decimals = int(np.floor(-np.log10(np.max(np.abs(step)))))
        codes.append(1)
        messages.append(f"some parameters may have only {decimals} correct decimals "
                        f"(Newton step {np.max(np.abs(step)):.2g}, tol = {rel_tol:g})")
    if evd.max() * check_tol > 1:
        codes.append(2)
        messages.append("Model is nearly unidentifiable: very large eigenvalue - Rescale variables? "
                        f"(largest eigenvalue {evd.max():.3g})")
    if evd.min() / evd.max() < check_tol:
        codes.append(3)
        messages.append("Model is nearly unidentifiable: large eigenvalue ratio - Rescale variables? "
                        f"(eigenvalue ratio {evd.min() / evd.max():.3g}, tol = {check_tol:.3g})")
    if not codes:
        return (0,), ("successful convergence",)
    return tuple(codes), tuple(messages)


def gradient_report(res: OptimizeResult, gradient: np.ndarray, *, optimizer: str, grad_tol: float,
                    extra_iterations: int = 0, seconds: float = 0.0) -> OptimizerReport:
    """The report of a scipy optimiser run (``res``) whose optimum is judged by the largest
    absolute ``gradient`` there: converged when it is finite and below ``grad_tol`` (the check of
    the engines that difference minus the log-likelihood, clmm and glmmtmb). ``extra_iterations``
    counts steps taken after the run (a Newton polish), each one evaluation.

    Examples
    --------
    >>> from scipy.optimize import OptimizeResult
    >>> res = OptimizeResult(nit=7, nfev=9, message="CONVERGENCE")
    >>> rep = gradient_report(res, np.array([1e-6, -3e-3]), optimizer="L-BFGS-B", grad_tol=1e-3)
    >>> rep.converged, rep.max_grad, rep.checks
    (False, 0.003, ('Model failed to converge with max|grad| = 0.003 (tol = 0.001)',))
    """
    g = np.asarray(gradient, dtype=float)
    max_grad = float(np.max(np.abs(g), initial=0.0))
    converged = bool(np.isfinite(max_grad) and max_grad < grad_tol)
    checks = () if converged else (f"Model failed to converge with max|grad| = {max_grad:g} (tol = {grad_tol:g})",)
    message = res.message.decode() if isinstance(res.message, bytes) else str(res.message)
    return OptimizerReport(optimizer, converged, message, iterations=int(res.nit) + extra_iterations,
                           feval=int(res.nfev) + extra_iterations, max_grad=max_grad, checks=checks,
                           seconds=seconds, gradient=g)
