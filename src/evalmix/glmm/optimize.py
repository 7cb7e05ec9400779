"""Maximum-likelihood optimisation of the Laplace deviance over (theta, beta).

lme4 minimises over theta with beta inside PIRLS (bobyqa), then over (theta, beta) jointly with
Nelder-Mead, hundreds to thousands of deviance evaluations for ~36 parameters.  Here the same
objective is minimised as a profile:

- inner: for fixed theta, Newton steps over beta using the exact gradient of the Laplace deviance
  (:meth:`LaplaceDeviance.grad_beta`) and the Gauss-Newton matrix ``2 RX'RX`` as curvature,
  with the conditional modes warm-started along their first-order path ``du/dbeta``;
- outer: L-BFGS-B over the few theta (lower bound 0 on the diagonal), the gradient by central
  differences of the deviance at the profiled beta (the envelope theorem: the beta path does not
  enter the derivative at the inner optimum).

Every inner and outer problem starts from the previous solution, so most PIRLS calls take one or
two Newton steps.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import scipy.linalg as sla
from scipy.optimize import OptimizeResult, minimize

from ..model import RandomTerm, term_lambdas
from ..core.errors import ConvergenceWarning, SingularFitWarning
from ..mixed.convergence import OptimizerReport, check_convergence
from .control import GlmerControl
from .deviance import Evaluation, LaplaceDeviance, NestedSolver


@dataclass(frozen=True)
class OptimizerStep:
    """One outer evaluation of the objective: theta tried, deviance there (beta profiled),
    and the largest absolute component of its gradient over theta."""

    evaluation: int
    theta: tuple[float, ...]
    deviance: float
    max_abs_gradient: float

    def to_dict(self) -> dict[str, Any]:
        return {"evaluation": self.evaluation, "theta": list(self.theta),
                "deviance": self.deviance, "max_abs_gradient": self.max_abs_gradient}


def _chol_or_pinv(M: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
    try:
        cf = sla.cho_factor(M, lower=True, check_finite=False)
        return lambda g: sla.cho_solve(cf, g, check_finite=False)
    except np.linalg.LinAlgError:
        P = np.linalg.pinv(M)
        return lambda g: P @ g


class _Stalled(Exception):
    """The objective stopped decreasing (see :func:`lbfgsb`)."""


def lbfgsb(fun: Callable[[np.ndarray], tuple[float, np.ndarray]], x0: np.ndarray, *,
           bounds: Sequence[tuple[float | None, float | None]], options: dict[str, Any],
           control: GlmerControl) -> OptimizeResult:
    """scipy's L-BFGS-B on ``fun`` (value and exact gradient), stopped at the best point seen
    once ``control.stall_evals`` evaluations in a row have not lowered the best value by more
    than ``control.stall_tol`` relative.

    The deviance is summed to about 1e-15 relative and the profiled beta stops at a relative
    Newton decrement of 1e-14, so close to the optimum the gradient cannot reach a tight
    ``gtol`` and L-BFGS-B's line search tries steps along the noise until it gives up: on the
    200,000-row nested benchmark 31 of its 46 evaluations, none lowering the deviance by more
    than 2e-14 relative. The result (``x``, ``fun``, ``nit``, ``success``, ``message``) is then the
    best point's, with ``success`` True.

    Examples
    --------
    >>> from evalmix.glmm import GlmerControl
    >>> res = lbfgsb(lambda x: (float((x[0] - 2.0) ** 2), 2.0 * (x - 2.0)), np.array([0.0]),
    ...              bounds=[(0.0, None)], options={"gtol": 1e-10}, control=GlmerControl())
    >>> bool(res.success), round(float(res.x[0]), 6)
    (True, 2.0)
    """
    best: list[Any] = [np.inf, None]
    stalled, nit = [0], [0]

    def watched(x: np.ndarray) -> tuple[float, np.ndarray]:
        f, g = fun(x)
        if np.isfinite(best[0]) and not f < best[0] - control.stall_tol * abs(best[0]):
            stalled[0] += 1
        else:
            stalled[0] = 0
        if f < best[0]:
            best[0], best[1] = float(f), np.array(x, dtype=float)
        if stalled[0] >= control.stall_evals:
            raise _Stalled
        return f, g

    def count(xk: np.ndarray) -> None:
        nit[0] += 1

    try:
        return minimize(watched, np.asarray(x0, float), jac=True, method="L-BFGS-B",
                        bounds=bounds, options=options, callback=count)
    except _Stalled:
        return OptimizeResult(
            x=best[1], fun=best[0], nit=nit[0], success=True,
            message=f"the objective stopped decreasing ({control.stall_evals} evaluations "
                    f"within {control.stall_tol:g} relative of the best)")


class ProfiledFit:
    """Holds the warm starts shared by the inner and outer problems."""

    def __init__(self, ld: LaplaceDeviance, beta0: np.ndarray, lower: np.ndarray):
        self.ld = ld
        self.beta = np.array(beta0, dtype=float)
        self.u: np.ndarray | None = None
        self.lower = lower
        self.ev: Evaluation | None = None
        self.inner_tol = ld.control.inner_tol
        self.inner_maxit = ld.control.inner_maxit
        self.step_slack = ld.control.step_slack
        self.inner_halvings = ld.control.inner_halvings
        self.inner_gain_tol = ld.control.inner_gain_tol
        self.inner_refresh = ld.control.inner_refresh
        # coefficients the inner Newton steps may move (None: all); a profile holds one fixed
        self.free: np.ndarray | None = None
        # outer evaluations, recorded when the control asks for a log
        self.log: list[OptimizerStep] | None = [] if ld.control.log else None

    def _newton_solver(self, ev: Evaluation) -> Callable[[np.ndarray], np.ndarray]:
        M = 2.0 * self.ld.rx(ev)
        if self.free is None:
            return _chol_or_pinv(M)
        f = self.free
        sub = _chol_or_pinv(M[np.ix_(f, f)])

        def restricted(g: np.ndarray) -> np.ndarray:
            out = np.zeros_like(g)
            out[f] = sub(g[f])
            return out
        return restricted

    def inner(self, theta: np.ndarray, maxit: int | None = None) -> Evaluation:
        """Minimise the deviance over beta at fixed theta (Newton with Gauss-Newton curvature)."""
        ld = self.ld
        maxit = self.inner_maxit if maxit is None else maxit
        ev = ld.pirls(theta, self.beta, self.u)
        solve = self._newton_solver(ev)
        prev = np.inf
        for _ in range(maxit):
            g = ld.grad_beta(ev)
            step = solve(g)
            dec = float(g @ step)
            if not np.isfinite(dec) or dec < self.inner_tol * (1.0 + abs(ev.dev)):
                break
            if dec > self.inner_refresh * prev:  # slow progress: refresh the curvature here
                solve = self._newton_solver(ev)
                step = solve(g)
                dec = float(g @ step)
            prev = dec
            du = ld.du_dbeta(ev, -step)
            t = 1.0
            for _ in range(self.inner_halvings):
                evn = ld.pirls(theta, ev.beta - t * step, ev.u + t * du)
                if evn.dev <= ev.dev + self.step_slack * abs(ev.dev):
                    break
                t *= 0.5
            else:
                break
            improved = ev.dev - evn.dev
            ev = evn
            if improved < self.inner_gain_tol * abs(ev.dev):
                break
        self.beta, self.u, self.ev = ev.beta, ev.u, ev
        return ev

    def theta_grad(self, ev: Evaluation, h: float | None = None) -> np.ndarray:
        """Gradient of the deviance over theta at fixed beta: exact for the nested solver, else
        central differences (forward at a bound)."""
        ld = self.ld
        gt = ld.grads(ev)[0]
        if gt is not None:
            return gt
        h = ld.control.theta_fd_step if h is None else h
        g = np.empty(ev.theta.size)
        for i in range(ev.theta.size):
            e = np.zeros_like(ev.theta)
            e[i] = h
            fp = ld.pirls(ev.theta + e, ev.beta, ev.u).dev
            if ev.theta[i] - h < self.lower[i]:
                g[i] = (fp - ev.dev) / h
            else:
                g[i] = (fp - ld.pirls(ev.theta - e, ev.beta, ev.u).dev) / (2 * h)
        return g

    def objective(self, theta: np.ndarray) -> tuple[float, np.ndarray]:
        ev = self.inner(np.asarray(theta, dtype=float))
        g = self.theta_grad(ev)
        if self.log is not None:
            self.log.append(OptimizerStep(len(self.log) + 1, tuple(float(v) for v in ev.theta),
                                          float(ev.dev),
                                          float(np.max(np.abs(g))) if g.size else 0.0))
        return ev.dev, g


def optimize(ld: LaplaceDeviance, theta0: np.ndarray, lower: np.ndarray, beta0: np.ndarray,
             maxiter: int | None = None,
             probes: Callable[[np.ndarray], list[np.ndarray]] | None = None
             ) -> tuple[Evaluation, OptimizerReport]:
    """Minimise the Laplace deviance over (theta, beta) (lme4's ``optimizeGlmer``).

    Theta is optimised by L-BFGS-B within its bounds ``lower``, beta profiled out by Newton steps
    at every theta (see :class:`ProfiledFit`); the settings (tolerances, ``maxiter`` unless
    given, boundary probes, the optional log) are the deviance's ``ld.control``
    (:class:`~evalmix.glmm.control.GlmerControl`). ``probes(theta)`` may give extra starting
    points off a boundary (see :func:`boundary_probes`).

    Parameters
    ----------
    ld : LaplaceDeviance
        The objective (see :func:`evalmix.glmm.build_deviance`).
    theta0, lower : ndarray
        Starting theta and its lower bounds (``design.theta_start``, ``design.theta_lower``).
    beta0 : ndarray
        Starting fixed effects.
    maxiter : int, optional
        Outer iterations (default ``ld.control.maxiter``).
    probes : callable, optional

    Returns
    -------
    (Evaluation, OptimizerReport)
        The state at the optimum (``theta``, ``beta``, modes ``u``, ``dev``) and how the
        optimiser ran.

    Examples
    --------
    >>> from evalmix.glmm import build_design, build_deviance, optimize
    >>> from evalmix.simulate import glmm_runs
    >>> design = build_design("correct ~ model + (1|item)", glmm_runs(2, 40, 2, rng=1))
    >>> ld = build_deviance(design)
    >>> ev, rep = optimize(ld, design.theta_start, design.theta_lower, np.zeros(2))
    >>> rep.converged, round(ev.dev - 2 * design.log_binom, 4) > 0
    (True, True)
    """
    import time

    ctl = ld.control
    maxiter = ctl.maxiter if maxiter is None else maxiter
    t0 = time.perf_counter()
    pf = ProfiledFit(ld, beta0, lower)
    bounds = [(lo if np.isfinite(lo) else None, None) for lo in lower]
    opts = {"maxiter": maxiter, "ftol": ctl.ftol, "gtol": ctl.gtol, "maxcor": ctl.maxcor}
    res = lbfgsb(pf.objective, np.asarray(theta0, float), bounds=bounds, options=opts,
                 control=ctl)
    nit = int(res.nit)
    theta = np.maximum(res.x, lower)
    ev = pf.inner(theta)
    # The deviance is even in a scalar theta, so its gradient vanishes on the boundary theta = 0
    # whether or not that is a minimum (and L-BFGS-B, whose first steps are long, can step over a
    # shallow minimum close to 0 onto the bound and stop there); with a zero diagonal in a vector
    # term the boundary is a whole family of equivalent points. Probe away from the boundary
    # along a ladder of values (see :func:`boundary_line_search`) and restart from the best point.
    for _ in range(ctl.boundary_restarts):
        restart = None
        best = ev
        on_bound = np.flatnonzero((lower == 0) & (theta <= ctl.boundary_eps))
        for i in on_bound:
            found = boundary_line_search(pf, theta, int(i), ev.dev)
            if found is not None and found.dev < best.dev:
                best = found
        if best is not ev:
            restart = best.theta.copy()
        elif probes is not None and on_bound.size:
            for trial in probes(theta):
                et = pf.inner(trial)
                if et.dev < ev.dev - ctl.boundary_gain:
                    restart, best = trial, et
                    break
        if restart is None or nit >= maxiter:
            break
        res = lbfgsb(pf.objective, restart, bounds=bounds,
                     options={**opts, "maxiter": max(1, maxiter - nit)}, control=ctl)
        nit += int(res.nit)
        theta = np.maximum(res.x, lower)
        ev = pf.inner(theta)
        if ev.dev > best.dev:
            # the restart fell back onto the bound past the minimum the search found: keep that
            theta = best.theta.copy()
            ev = pf.inner(theta)
    g = np.concatenate([pf.theta_grad(ev), ld.grad_beta(ev)])
    rep = OptimizerReport(
        optimizer="profiled L-BFGS-B (theta) + Newton (beta)", converged=bool(res.success),
        message=str(res.message), iterations=nit,
        feval=ld.evaluations, pirls_iterations=ld.pirls_iterations, gradient=g,
        max_grad=float(np.max(np.abs(g))) if g.size else 0.0,
        seconds=time.perf_counter() - t0, log=tuple(pf.log or ()))
    return ev, rep


def boundary_line_search(pf: ProfiledFit, theta: np.ndarray, i: int, dev0: float
                         ) -> Evaluation | None:
    """The lowest profiled deviance along ``theta[i]`` off its bound 0, or None if no probe is
    lower than ``dev0`` (the deviance at the bound) by the control's ``boundary_gain``.

    The probes form a ladder from ``boundary_probe`` down by ``boundary_probe_ratio``; when the
    lowest is not the largest probe, the minimum lies between its neighbours on the ladder (0
    below the smallest) and a bounded Brent search finds it to ``boundary_xtol`` relative.
    """
    from scipy.optimize import minimize_scalar

    ctl = pf.ld.control
    ladder = ctl.boundary_probe / ctl.boundary_probe_ratio ** np.arange(ctl.boundary_probe_steps)

    def at(t: float) -> Evaluation:
        trial = theta.copy()
        trial[i] = t
        return pf.inner(trial)

    evs = [at(float(t)) for t in ladder]
    j = int(np.argmin([e.dev for e in evs]))
    best = evs[j]
    if best.dev >= dev0 - ctl.boundary_gain:
        return None
    if j == 0:  # the minimum may lie above the largest probe: the optimiser goes on from there
        return best
    lo = float(ladder[j + 1]) if j + 1 < ladder.size else 0.0
    hi = float(ladder[j - 1])
    res = minimize_scalar(lambda t: at(float(t)).dev, bounds=(lo, hi), method="bounded",
                          options={"xatol": ctl.boundary_xtol * hi})
    ev = at(float(res.x))
    return ev if ev.dev < best.dev else at(float(ladder[j]))


def boundary_probes(terms: list[RandomTerm], theta: np.ndarray) -> list[np.ndarray]:
    """Starting points off a zero diagonal of a vector term's Lambda with the same variances.

    For a column ``c`` of ``Lambda`` with ``L[c, c] = 0``, move the entries below the diagonal
    into the diagonal of their rows (keeping each row's norm, i.e. each variance) and give column
    ``c`` a small diagonal: the correlations restart from 0.

    Then, for such a column with entries below the diagonal, the same column with those entries
    negated and a small diagonal. ``Lambda Lambda'`` is unchanged by negating a whole column, so
    on the boundary ``L[c, c] = 0`` the column and its mirror image are the same fit, but the
    derivative over ``L[c, c]`` changes sign between them: where it points out of the feasible
    set at one (a stop on the face ``L[c, c] = 0`` with the correlations of the wrong sign), it
    points into it at the other. A rank-one Lambda whose first row should be nonzero is reached
    only through this mirror image (bound-constrained optimisers cannot cross ``L[c, c] = 0``).
    """
    out, mirrored, pos = [], [], 0
    for t, L in zip(terms, term_lambdas(terms, theta)):
        if t.nc > 1:
            for c in range(t.nc):
                if L[c, c] <= 1e-6:
                    M = L.copy()
                    for r in range(c + 1, t.nc):
                        M[r, r] = np.sqrt(M[r, r] ** 2 + M[r, c] ** 2)
                        M[r, c] = 0.0
                    M[c, c] = 0.1
                    new = theta.copy()
                    new[pos:pos + t.theta_size] = t.theta_from_lambda(M)
                    out.append(new)
                    if np.any(np.abs(L[c + 1:, c]) > 1e-6):
                        for step in (0.1, 0.01):  # the descent along the mirror may be short
                            M = L.copy()
                            M[c + 1:, c] *= -1.0
                            M[c, c] = step
                            new = theta.copy()
                            new[pos:pos + t.theta_size] = t.theta_from_lambda(M)
                            mirrored.append(new)
        pos += t.theta_size
    # the mirrored starts come last, so that a fit the other probes already restarted is unchanged
    return out + mirrored


def lme4_start(ld: LaplaceDeviance, theta0: np.ndarray, lower: np.ndarray,
               beta0: np.ndarray, u0: np.ndarray | None = None) -> np.ndarray:
    """The linear predictor lme4's second-stage deviance function restarts PIRLS from.

    lme4 first fits with ``nAGQ = 0`` (theta only; beta joins u in PIRLS, see
    :meth:`LaplaceDeviance.joint_mode`) and keeps the linear predictor of that fit as ``lp0``.
    Only the number of PIRLS iterations lme4 takes from it matters (see :func:`hessian`); starting
    from the Laplace optimum (``theta0, beta0, u0``), which lies close, keeps this cheap.
    """
    beta0 = np.array(beta0, dtype=float)
    bounds = [(lo if np.isfinite(lo) else None, None) for lo in lower]
    ctl = ld.control
    opts = {"maxiter": ctl.stage1_maxiter, "ftol": ctl.stage1_ftol, "gtol": ctl.stage1_gtol}
    start = np.maximum(theta0, lower)
    dev0, beta_0, u_0, _ = ld.joint_mode(start, beta0, u0)
    grad0 = ld.joint_grad_theta()
    if grad0 is not None:
        # exact gradient (LaplaceDeviance.joint_grad_theta): each point warm-starts from the
        # last joint mode, which the tight mode makes as good as a fixed start
        warm_beta, warm_u = [beta0], [u0]
        # the optimiser's first point is the one just solved, from the same start
        first: list[tuple[float, np.ndarray, np.ndarray, np.ndarray]] = [(dev0, beta_0, u_0, grad0)]

        def fg(theta: np.ndarray) -> tuple[float, np.ndarray]:
            point = np.maximum(theta, lower)
            if first and np.array_equal(point, start):
                dev, beta, u, grad = first.pop()
            else:
                first.clear()
                dev, beta, u, _ = ld.joint_mode(point, warm_beta[0], warm_u[0])
                g = ld.joint_grad_theta()
                assert g is not None
                grad = g
            if np.isfinite(dev):
                warm_beta[0], warm_u[0] = beta, u
            return dev, grad

        res = lbfgsb(fg, np.asarray(theta0, float), bounds=bounds, options=opts, control=ctl)
    else:
        def f(theta: np.ndarray) -> float:
            # always from the same start: a warm start would make f noisy for the differences
            return ld.joint_mode(np.maximum(theta, lower), beta0, u0)[0]

        res = minimize(f, np.asarray(theta0, float), method="L-BFGS-B", bounds=bounds,
                       options=opts)
    return ld.joint_mode(np.maximum(res.x, lower), beta0, u0)[3]


def optimize_joint(ld: LaplaceDeviance, theta0: np.ndarray, lower: np.ndarray, beta0: np.ndarray,
                   maxiter: int | None = None) -> tuple[Evaluation, OptimizerReport]:
    """Minimise lme4's ``nAGQ = 0`` deviance over theta (lme4's first stage, ``optimizeGlmer``
    with ``stage = 1``): beta joins the modes in PIRLS at every theta
    (:meth:`LaplaceDeviance.joint_mode`), so the result is lme4's ``glmer(..., nAGQ = 0)``.

    L-BFGS-B over theta within ``lower``, with the exact gradient where the solver has one
    (:meth:`LaplaceDeviance.joint_grad_theta`), else central differences from a fixed start; a
    theta ending on its bound 0 is probed off it along the ladder of the control's
    ``boundary_probe`` settings, as in :func:`optimize`.

    Returns the PIRLS state at the optimum (``beta`` and ``u`` the joint mode) and the report.

    Examples
    --------
    >>> from evalmix.glmm import build_design, build_deviance
    >>> from evalmix.simulate import glmm_runs
    >>> design = build_design("correct ~ model + (1|item)", glmm_runs(2, 40, 2, rng=1))
    >>> ev, rep = optimize_joint(build_deviance(design), design.theta_start, design.theta_lower,
    ...                          np.zeros(2))
    >>> rep.converged
    True
    """
    import time

    ctl = ld.control
    maxiter = ctl.maxiter if maxiter is None else maxiter
    t0 = time.perf_counter()
    beta0 = np.array(beta0, dtype=float)
    bounds = [(lo if np.isfinite(lo) else None, None) for lo in lower]
    opts = {"maxiter": maxiter, "ftol": ctl.ftol, "gtol": ctl.gtol, "maxcor": ctl.maxcor}
    ld.joint_mode(np.maximum(theta0, lower), beta0)
    exact = ld.joint_grad_theta() is not None
    warm: list[Any] = [beta0, None]
    calls = [0]

    def dev(theta: np.ndarray) -> float:
        calls[0] += 1
        # always from the same start where the gradient is differenced: a warm start would make
        # the function noisy at the scale of the differences
        d, beta, u, _ = ld.joint_mode(np.maximum(theta, lower), *(warm if exact else (beta0, None)))
        if exact and np.isfinite(d):
            warm[0], warm[1] = beta, u
        return float(d)

    def fg(theta: np.ndarray) -> tuple[float, np.ndarray]:
        d = dev(theta)
        grad = ld.joint_grad_theta()
        assert grad is not None
        return d, grad

    def run(start: np.ndarray, iters: int) -> Any:
        o = {**opts, "maxiter": max(1, iters)}
        if exact:
            return lbfgsb(fg, start, bounds=bounds, options=o, control=ctl)
        return minimize(dev, start, method="L-BFGS-B", bounds=bounds, options=o)

    res = run(np.asarray(theta0, float), maxiter)
    nit = int(res.nit)
    theta, best = np.maximum(res.x, lower), float(res.fun)
    for _ in range(ctl.boundary_restarts):
        on_bound = np.flatnonzero((lower == 0) & (theta <= ctl.boundary_eps))
        ladder = ctl.boundary_probe / ctl.boundary_probe_ratio ** np.arange(ctl.boundary_probe_steps)
        trials = []
        for i in on_bound:
            for t in ladder:
                trial = theta.copy()
                trial[i] = t
                trials.append((dev(trial), trial))
        if not trials or nit >= maxiter:
            break
        d0, start = min(trials, key=lambda dt: dt[0])
        if d0 >= best - ctl.boundary_gain:
            break
        res = run(start, maxiter - nit)
        nit += int(res.nit)
        if float(res.fun) < d0:
            theta, best = np.maximum(res.x, lower), float(res.fun)
        else:  # the restart fell back past the probe's minimum: keep the probe
            theta, best = start, d0
    if exact:
        g = fg(theta)[1]
    else:
        g = np.empty(theta.size)
        h = ctl.theta_fd_step
        for j in range(theta.size):
            e = np.zeros(theta.size)
            e[j] = h
            fp = dev(theta + e)
            g[j] = (fp - dev(theta)) / h if theta[j] - h < lower[j] else \
                (fp - dev(theta - e)) / (2 * h)
    _, beta, u, _ = ld.joint_mode(theta, warm[0] if exact else beta0, warm[1] if exact else None)
    ev = ld.pirls(theta, beta, u)  # the modes given the joint beta are the joint modes
    free = ~((theta <= lower + ctl.bound_tol) & (g >= 0))
    rep = OptimizerReport(
        optimizer="L-BFGS-B (theta), beta inside PIRLS (nAGQ = 0)", converged=bool(res.success),
        message=str(res.message), iterations=nit, feval=calls[0],
        pirls_iterations=ld.pirls_iterations, gradient=g,
        max_grad=float(np.max(np.abs(g[free]))) if free.any() else 0.0,
        seconds=time.perf_counter() - t0)
    return ev, rep


def deriv12(f: Callable[[np.ndarray], float], x: np.ndarray, h: float = 1e-4, lower: np.ndarray | None = None) -> np.ndarray:
    """lme4 1.1-31's ``deriv12`` Hessian: central second differences of ``f`` at ``x``, the
    off-diagonal ones from the four points ``x +- h e_i +- h e_j``, steps shortened at ``lower``."""
    n = x.size
    lo = np.full(n, -np.inf) if lower is None else np.asarray(lower, float)
    ud = np.full(n, h)
    ld_ = np.minimum(h, x - lo)  # the step below x, cut at the bound
    xa, xs = x + ud, x - ld_
    f0 = f(x)
    H = np.empty((n, n))
    for j in range(n):
        pa, ps = x.copy(), x.copy()
        pa[j], ps[j] = xa[j], xs[j]
        H[j, j] = f(pa) / ud[j] ** 2 - 2 * f0 / (ud[j] * ld_[j]) + f(ps) / ld_[j] ** 2
        for i in range(j):
            pts = []
            for vi, vj in ((xa[i], xa[j]), (xa[i], xs[j]), (xs[i], xa[j]), (xs[i], xs[j])):
                y = x.copy()
                y[i], y[j] = vi, vj
                pts.append(f(y))
            H[i, j] = H[j, i] = (pts[0] / (ud[i] + ud[j]) ** 2 - pts[1] / (ud[i] + ld_[j]) ** 2
                                 - pts[2] / (ld_[i] + ud[j]) ** 2 + pts[3] / (ld_[i] + ld_[j]) ** 2)
    return H


def lme4_hessian(ld: LaplaceDeviance, ev: Evaluation, eta_start: np.ndarray,
                 h: float | None = None, lower: np.ndarray | None = None) -> np.ndarray:
    """lme4's Hessian replayed: :func:`deriv12` of lme4's deviance function
    (:meth:`LaplaceDeviance.lme4_pirls` from ``eta_start``) at ``ev``; ``(P + 1) P / 2 * 4``
    PIRLS runs of two or three iterations each."""
    h = ld.control.hessian_step if h is None else h
    nt = ev.theta.size
    lo = None if lower is None else np.concatenate([lower, np.full(ev.beta.size, -np.inf)])
    H = deriv12(lambda x: ld.lme4_pirls(x[:nt], x[nt:], eta_start)[0],
                np.concatenate([ev.theta, ev.beta]), h, lo)
    ld._refresh(ev)
    return H


def stencil_iterations(ld: LaplaceDeviance, ev: Evaluation, eta_start: np.ndarray,
                       h: float | None = None, lower: np.ndarray | None = None) -> list[int]:
    """lme4's PIRLS iterations at ``ev`` and at ``ev +- h`` along each parameter."""
    h = ld.control.hessian_step if h is None else h
    nt = ev.theta.size
    x = np.concatenate([ev.theta, ev.beta])
    lo = (np.full(x.size, -np.inf) if lower is None
          else np.concatenate([lower, np.full(ev.beta.size, -np.inf)]))
    out = [ld.lme4_pirls_iterations(ev.theta, ev.beta, eta_start)]
    for j in range(x.size):
        for s in (-h, h):
            y = x.copy()
            y[j] = max(y[j] + s, lo[j])
            out.append(ld.lme4_pirls_iterations(y[:nt], y[nt:], eta_start))
    return out


def lme4_counts(ld: LaplaceDeviance, ev: Evaluation, eta_start: np.ndarray,
                h: float | None = None, lower: np.ndarray | None = None) -> set[int]:
    """The PIRLS iteration counts lme4's deviance function takes over its Hessian stencil.

    The count at ``ev`` stands for the whole stencil when every relative change lme4's rule
    compared there is at least the control's ``lme4_count_margin`` away from ``tol_pwrss``;
    otherwise the count is replayed at ``ev +- h`` along each axis (:func:`stencil_iterations`).
    """
    ctl = ld.control
    st = ld.lme4_pirls_state(ev.theta, ev.beta, eta_start)
    tol, margin = ctl.tol_pwrss, ctl.lme4_count_margin
    ch = st.changes
    if (st.converged and ch[-1] * margin < tol
            and all(c > tol * margin for c in ch[:-1])):
        return {st.iterations}
    return set(stencil_iterations(ld, ev, eta_start, h, lower))


def hessian(ld: LaplaceDeviance, ev: Evaluation, h: float | None = None,
            lme4_pirls: bool = True, eta_start: np.ndarray | None = None,
            lower: np.ndarray | None = None) -> np.ndarray:
    """Finite-difference Hessian of the deviance over (theta, beta) at ``ev``.

    Step ``h`` as lme4 1.1-31's ``deriv12`` (default: the control's ``hessian_step``). Columns are forward differences of the exact gradient
    (theta and beta for the nested solver, beta only otherwise: the theta-theta block then comes
    from central second differences of the deviance).

    With ``lme4_pirls`` (default) the result is the Hessian of the deviance function lme4
    differentiates, whose PIRLS stops one Newton step short of the mode (see
    :meth:`LaplaceDeviance.one_step_weights`); it reproduces lme4's reported standard errors, which
    are 0.3-1% smaller than those of the exact Laplace deviance (``lme4_pirls=False``, what lme4
    gives with ``glmerControl(tolPwrss = 1e-12)``).

    lme4 stops one step short only where its PIRLS from ``eta_start`` (:func:`lme4_start`) takes
    two iterations at ``ev``; where it takes three or more, ``log det`` is at most ``O(d^4)`` from
    the mode and lme4's Hessian is the exact one, so the early-stop term is left out
    (:meth:`LaplaceDeviance.lme4_pirls_iterations`). Without ``eta_start`` two are assumed. Where
    the count differs between points of lme4's stencil (checked along each axis unless the
    count at ``ev`` is far from lme4's threshold, see :func:`lme4_counts`), lme4's Hessian
    mixes the two functions and is replayed instead (:func:`lme4_hessian`), as it is for the
    non-canonical links, for which the early-stop term is not derived.
    """
    h = ld.control.hessian_step if h is None else h
    nt, p = ev.theta.size, ev.beta.size
    H = np.zeros((nt + p, nt + p))
    # d eta~ / d(theta, beta) by forward differences, for lme4's early-stop term only
    # (logit only: the correction is derived for the canonical link)
    if lme4_pirls and eta_start is not None and ld.link != "logit":
        # the early-stop term is derived for the canonical link; replay lme4 for the others
        return lme4_hessian(ld, ev, eta_start, h, lower)
    if lme4_pirls and eta_start is not None:
        counts = lme4_counts(ld, ev, eta_start, h, lower)
        if len(counts) > 1:
            return lme4_hessian(ld, ev, eta_start, h, lower)
        lme4_pirls = counts.pop() <= 2
    track = lme4_pirls and ld.link == "logit"
    # d eta~ / d(theta, beta) = X D + A-part: for nested intercepts the A-part is one value per
    # fine level, so J' diag(c) J comes from sums per level and per pattern (no n x P matrix)
    nested = ld.solver if track and isinstance(ld.solver, NestedSolver) else None
    # column-major: each column is written in one contiguous pass (row-major, every element of a
    # column lands on its own cache line)
    J = (np.zeros((ev.eta.size, nt + p), order="F") if track and nested is None else None)
    g0t, g0b = ld.grads(ev)
    exact_theta = g0t is not None
    g0 = np.concatenate([g0t, g0b]) if exact_theta else g0b
    if nested is not None:
        D = np.zeros((p, nt + p))
        base = nested.level_values(ev.u)  # the solver is at ev's theta after grads(ev)
        E = np.empty((base.size, nt + p), order="F")
    # the modes' first-order move along each beta column, the warm start of its PIRLS (where
    # that PIRLS usually stops at once): one A'WX for all columns
    dU = ld.du_dbeta_columns(ev) if p else None
    for j in range(nt + p):
        th, be, u0 = ev.theta.copy(), ev.beta.copy(), ev.u
        if j < nt:
            th[j] += h
        else:
            assert dU is not None
            e = np.zeros(p)
            e[j - nt] = h
            be = be + e
            u0 = ev.u + dU[:, j - nt] * h
        evj = ld.pirls(th, be, u0)
        if nested is not None:
            # what (evj.eta - ev.eta) / h is made of, read while the solver is at evj's theta
            np.subtract(be, ev.beta, out=D[:, j])
            D[:, j] /= h
            np.subtract(nested.level_values(evj.u), base, out=E[:, j])
            E[:, j] /= h
        if J is not None:
            jc = J[:, j]  # in place: no n-row temporaries
            np.subtract(evj.eta, ev.eta, out=jc)
            jc /= h
        gt, gb = ld.grads(evj, theta=exact_theta)
        col = ((np.concatenate([gt, gb]) if exact_theta else gb) - g0) / h
        if exact_theta:
            H[:, j] = col
        else:
            H[nt:, j] = col
    if exact_theta:
        H = (H + H.T) / 2
    else:
        _theta_block(ld, ev, H, h)
    if nested is not None:
        H += nested.jacobian_gram(ld.X, ld.one_step_weights(ev), D, E)
    if J is not None:
        c = ld.one_step_weights(ev)
        rows = ld.control.hessian_chunk_rows  # row chunks: no second n x P temporary
        for s in range(0, c.size, rows):
            Js = J[s:s + rows]
            H += Js.T @ (c[s:s + rows, None] * Js)
    ld._refresh(ev)
    return H


def _theta_block(ld: LaplaceDeviance, ev: Evaluation, H: np.ndarray, h: float) -> None:
    """Fill the theta rows of ``H`` (beta columns already set) by central differences."""
    nt = ev.theta.size
    H[:nt, nt:] = H[nt:, :nt].T
    f0 = ev.dev

    def f(d: np.ndarray) -> float:
        return ld.pirls(ev.theta + d, ev.beta, ev.u).dev

    E = np.eye(nt) * h
    fp = [f(E[i]) for i in range(nt)]
    fm = [f(-E[i]) for i in range(nt)]
    for i in range(nt):
        H[i, i] = (fp[i] - 2 * f0 + fm[i]) / h**2
        for j in range(i):
            fpp = f(E[i] + E[j])
            fmm = f(-E[i] - E[j])
            H[i, j] = H[j, i] = (fpp - fp[i] - fp[j] + 2 * f0 - fm[i] - fm[j] + fmm) / (2 * h**2)
    bb = H[nt:, nt:]
    H[nt:, nt:] = (bb + bb.T) / 2


def fit_checks(theta_names: Sequence[str], theta: np.ndarray, singular: bool, gradient: np.ndarray,
               H: np.ndarray | None, at_bound: np.ndarray, *, optimizer_converged: bool,
               max_grad: float, message: str, control: GlmerControl, failures: Sequence[str] = ()
               ) -> tuple[list[str], list[str], bool]:
    """lme4's checks at the end of a fit (the boundary message, then ``checkConv``'s gradient and
    Hessian checks, and the optimiser's own verdict where they pass but the gradient is large) and
    the ``failures`` a path found itself (messages starting "unable"), each raised as a warning
    from the caller's caller: ``(messages, convergence checks, converged)``."""
    import warnings

    messages: list[str] = []
    if singular:
        messages.append("boundary (singular) fit: see help('isSingular')")
        warnings.warn("boundary (singular) fit: a variance parameter is estimated at 0 "
                      f"(theta = {dict(zip(theta_names, [round(float(v), 6) for v in theta]))})",
                      SingularFitWarning, stacklevel=4)
    conv = list(check_convergence(gradient, H, ~at_bound, grad_tol=control.grad_tol,
                                  hess_tol=control.hess_tol))
    conv += list(failures)
    if not optimizer_converged and not conv and max_grad > control.grad_tol:
        conv.append(f"optimizer stopped: {message}")
    for msg in conv:
        warnings.warn(msg, ConvergenceWarning, stacklevel=4)
    converged = not any(m.startswith(("Model failed", "optimizer", "unable")) for m in conv)
    return messages + conv, conv, converged
