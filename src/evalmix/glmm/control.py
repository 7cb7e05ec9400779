"""Settings of a GLMM fit: every tolerance, limit and threshold in one place (lme4's ``glmerControl``).

:class:`GlmerControl` is frozen and validated on creation; :func:`evalmix.glmer` takes one as
``control=`` and stores it on the result (``fit.control``) beside the optimiser's report
(``fit.optimizer``), so a fit records the settings it ran with. The defaults are the values evalmix
has always used; where a value is lme4's default it says so.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["GlmerControl", "DEFAULT_CONTROL"]


def _num(default: float, kind: type = float, *, upper: float = math.inf, zero: bool = False) -> Any:
    """A numeric field with the rule its value must meet (checked in ``__post_init__``)."""
    return field(default=default, metadata={"kind": kind, "upper": upper, "zero": zero})


@dataclass(frozen=True)
class GlmerControl:
    """Tolerances, iteration limits and solver thresholds of :func:`evalmix.glmer`.

    Every field is a positive finite number (an integer where a count is meant;
    ``boundary_restarts`` may be 0) and ``log`` a bool. An invalid value raises ``ValueError``
    naming the field.
    Changing a solver threshold changes how the fit is computed, never what it converges to;
    changing a tolerance changes where the optimiser stops.

    Examples
    --------
    >>> from evalmix.glmm import GlmerControl
    >>> ctl = GlmerControl(grad_tol=1e-3, maxiter=1000)
    >>> ctl.grad_tol, ctl.maxiter, ctl.singular_tol
    (0.001, 1000, 0.0001)
    >>> try:
    ...     GlmerControl(pirls_maxit=0)
    ... except ValueError as exc:
    ...     print(exc)
    GlmerControl.pirls_maxit must be a positive integer, got 0
    """

    # -- convergence checks, as lme4's checkConv ------------------------------------------------
    #: a variance parameter below this (on a theta bounded at 0) makes the fit singular: lme4's
    #: ``isSingular(tol = 1e-4)``, the default of ``check.conv.singular``
    singular_tol: float = _num(1e-4)
    #: largest scaled gradient accepted at the optimum: lme4's ``check.conv.grad`` tolerance (2e-3)
    grad_tol: float = _num(0.002)
    #: smallest eigenvalue ratio of the Hessian accepted: lme4's ``check.conv.hess`` tolerance (1e-6)
    hess_tol: float = _num(1e-6)
    #: a theta this close to its lower bound counts as on the bound when the gradient is checked
    #: (the gradient there may point out of the feasible set)
    bound_tol: float = _num(1e-8)

    # -- the outer optimiser: L-BFGS-B over theta (beta profiled) -------------------------------
    #: outer iterations (``glmer(maxiter=)``); the profiled problem has few parameters and
    #: converges in tens of iterations, so 500 only stops a runaway fit
    maxiter: int = _num(500, int)
    #: L-BFGS-B relative reduction of the deviance to stop at: near machine precision, because the
    #: deviance is smooth and an early stop shows in the 4th digit of the SEs
    ftol: float = _num(1e-15)
    #: L-BFGS-B projected-gradient tolerance; the exact theta gradient makes 1e-7 reachable
    gtol: float = _num(1e-7)
    #: L-BFGS-B memory (corrections kept); 20 covers every theta of a realistic model
    maxcor: int = _num(20, int)
    #: L-BFGS-B (with the exact theta gradient) stops at the best point once this many
    #: evaluations in a row have not lowered the best deviance by more than ``stall_tol``
    #: relative: at the optimum the deviance's rounding (1e-15) and the profiled beta's stopping
    #: point (``inner_tol``) keep the gradient above ``gtol``, and the line search would try
    #: steps along that noise until it gives up (31 of 46 evaluations on a 200,000-row fit)
    stall_evals: int = _num(5, int)
    #: ... the relative decrease of the best deviance that counts as progress
    stall_tol: float = _num(1e-13)
    #: relative decrease (Newton decrement) below which the inner Newton steps over beta stop
    inner_tol: float = _num(1e-14)
    #: Newton steps over beta per theta; one or two are typical with warm starts
    inner_maxit: int = _num(100, int)
    #: a Newton decrement over beta above this share of the previous one means slow progress:
    #: the curvature (the Gauss-Newton matrix) is then recomputed at the current point
    inner_refresh: float = _num(0.25, upper=1.0)
    #: restarts of the optimiser from probes off a boundary theta = 0 (the deviance is even in a
    #: scalar theta, so its gradient vanishes there whether or not it is a minimum)
    boundary_restarts: int = _num(3, int, zero=True)
    #: a theta at most this far above 0 is on the boundary for the probes
    boundary_eps: float = _num(1e-6)
    #: largest value a boundary theta is moved to when probing off the boundary
    boundary_probe: float = _num(0.1)
    #: the probes off a boundary theta form a ladder ``boundary_probe / boundary_probe_ratio^k``,
    #: k = 0 .. ``boundary_probe_steps - 1`` (0.1 down to 4.6e-5): the deviance is even in a
    #: scalar theta, so a shallow interior minimum close to 0 (theta = 0.01 with the deviance
    #: 4e-3 below theta = 0) lies far below a single probe at 0.1, where the deviance may be
    #: higher than at 0; the ladder reaches down to half lme4's ``isSingular`` tolerance
    boundary_probe_steps: int = _num(8, int)
    #: ratio of consecutive probes of that ladder
    boundary_probe_ratio: float = _num(3.0)
    #: relative accuracy (of the bracket) of the one-dimensional search between the probes
    #: that bracket such a minimum
    boundary_xtol: float = _num(1e-6)
    #: a probe must lower the deviance by this much to restart from it (less is rounding)
    boundary_gain: float = _num(1e-6)

    # -- PIRLS (conditional modes) ---------------------------------------------------------------
    #: relative Newton decrement at which PIRLS stops: the mode to rounding, so that the Laplace
    #: deviance is a smooth function for the optimiser and the finite differences
    pirls_tol: float = _num(1e-15)
    #: PIRLS iterations; Newton with warm starts needs 2-5, a cold start rarely 20
    pirls_maxit: int = _num(60, int)
    #: lme4's ``tolPwrss`` (1e-7): its second-stage deviance function stops PIRLS there, which
    #: the default ``vcov_method="hessian"`` replays to reproduce lme4's standard errors
    tol_pwrss: float = _num(1e-7)
    #: PIRLS iterations of that replay (lme4's ``pwrssUpdate`` gives up after a bounded count too)
    pwrss_maxit: int = _num(100, int)
    #: halvings of a step of that replay towards the previous modes while the penalised deviance
    #: rises (lme4's ``pwrssUpdate`` halves a bounded number of times too)
    pwrss_halvings: int = _num(20, int)
    #: lme4's iteration count at the optimum stands for its whole Hessian stencil (no replay at
    #: the ``2 P`` points ``+- hessian_step`` along each axis) when every relative change its rule
    #: compared is at least this factor away from ``tol_pwrss`` (above it before the last
    #: iteration, below it at the last): over a step of 1e-4 the changes move by well under 1%
    #: (0.15% on the 1M-row benchmark, whose last change is 1e-3 of ``tol_pwrss``), so no count
    #: along the stencil can differ; closer to the threshold the stencil is replayed
    lme4_count_margin: float = _num(10.0)
    #: lme4's first stage (theta with beta inside PIRLS, ``nAGQ = 0``) is refitted only to find
    #: the linear predictor its second-stage PIRLS restarts from; these loose settings suffice,
    #: as only lme4's PIRLS iteration count from that start matters
    stage1_maxiter: int = _num(200, int)
    stage1_ftol: float = _num(1e-10)
    stage1_gtol: float = _num(1e-5)
    #: L-BFGS-B ``ftol`` of each point of a likelihood profile (``confint(method="profile")``)
    profile_ftol: float = _num(1e-14)
    #: step of the central differences of the deviance over theta where the solver has no exact
    #: theta gradient (NestedSchurSolver): balances truncation and the 1e-15 PIRLS noise
    theta_fd_step: float = _num(1e-5)
    #: step of the differences of the nAGQ > 1 deviance, which has no closed-form gradient
    agq_fd_step: float = _num(1e-6)
    #: PIRLS stopping tolerance for the probit and cloglog links: Fisher scoring converges only
    #: linearly and the log-determinant is not stationary at the mode, so the mode must be tighter
    #: than for the logit for the deviance to be smooth in (theta, beta)
    pirls_tol_nonlogit: float = _num(1e-21)
    #: ... and its iteration limit (linear convergence needs more steps)
    pirls_maxit_nonlogit: int = _num(200, int)
    #: relative Newton decrement at which the joint (u, beta) PIRLS of lme4's first stage
    #: (``nAGQ = 0``) stops
    joint_tol: float = _num(1e-12)
    #: accuracy of an end of a profile-likelihood interval (Brent's method on the signed root)
    profile_xtol: float = _num(1e-7)
    #: relative tolerance below which a fixed-effect column counts as a linear combination of
    #: earlier ones and is dropped: R's ``qr(tol = 1e-07)``, which lme4's rank check uses
    rank_tol: float = _num(1e-7)
    #: tolerance of the separation linear programs: ``detectseparation``'s
    #: ``detect_separation_control(tolerance = 1e-4)``
    separation_tol: float = _num(1e-4)
    #: step of the finite-difference Hessian: lme4 1.1-31's ``deriv12(delta = 1e-4)``
    hessian_step: float = _num(1e-4)
    #: rows per block of the Gauss-Newton term ``J' W J`` of the Hessian (lme4's early-stop
    #: correction): blocks of 65,536 rows bound the temporary to 64k x (theta + beta) doubles
    #: instead of a second n x (theta + beta) copy
    hessian_chunk_rows: int = _num(65536, int)
    #: slack of the step-halving line searches (PIRLS, the joint PIRLS of ``nAGQ = 0``, the
    #: Newton steps over beta): a step is accepted when it raises the objective by at most this
    #: share of it; the objective is summed to about 1e-15 relative, so rounding must not reject
    #: (and halve to nothing) a step taken at the mode
    step_slack: float = _num(1e-12)
    #: halvings of a PIRLS step before giving up on it: 2^-30 (1e-9) of a Newton step that still
    #: does not decrease the objective means the mode is reached to rounding
    pirls_halvings: int = _num(30, int)
    #: halvings of a Newton step over beta (the inner loop of the profiled optimiser): 2^-40,
    #: as the step is combined with the PIRLS modes and may need a finer cut
    inner_halvings: int = _num(40, int)
    #: the inner Newton loop over beta stops when a step gains less than this share of the
    #: deviance (below the 1e-15 summation noise a step only follows rounding)
    inner_gain_tol: float = _num(1e-14)

    # -- solver choice and memory limits ---------------------------------------------------------
    #: random effects (q) up to which ``DenseSolver`` scatters rows straight into a dense q x q
    #: H; above it a sparse product is cheaper than the q^2 bincount table
    dense_h_max: int = _num(1500, int)
    #: columns of the dense remainder of ``SchurSolver`` (its Schur complement is qr x qr, 128 MB
    #: at 4000, factorised at every PIRLS step)
    schur_max_rest: int = _num(4000, int)
    #: share of observed (item, rest level) pairs above which ``SchurSolver`` stores C dense
    #: (a value above 1 never stores it dense)
    schur_dense_fill: float = _num(0.25)
    #: entries of a dense C (480 MB of float64), about 3,000 x 20,000
    schur_max_dense: int = _num(60_000_000, int)
    #: entries of one block of G S^-1 formed when ``SchurSolver`` computes leverages (32 MB)
    schur_chunk: int = _num(4_000_000, int)
    #: columns of the remainder of ``BlockSchurSolver`` (as ``schur_max_rest``)
    block_schur_max_rest: int = _num(4000, int)
    #: entries of ``BlockSchurSolver``'s dense q1 x qr block C (as ``schur_max_dense``)
    block_schur_max_dense: int = _num(60_000_000, int)
    #: columns of the crossed remainder of ``NestedSchurSolver``
    nested_schur_max_rest: int = _num(1000, int)
    #: entries of ``NestedSchurSolver``'s dense blocks (q1 x qr and n x qr, 400 MB each)
    nested_schur_max_cells: float = _num(5e7)
    #: ``CrossedGridSolver`` (two crossed intercepts as a dense grid of cells) from this many cells
    #: (levels of one factor times levels of the other); below it the sparse Schur path is as fast
    grid_min_cells: int = _num(50_000, int)
    #: ... and up to this many (1.6 GB per float64 grid)
    grid_max_cells: int = _num(200_000_000, int)
    #: ... when at least this share of the cells is observed
    grid_fill: float = _num(0.25, upper=1.0)
    #: ... and the smaller factor has at most this many levels (its Schur complement is dense)
    grid_max_small: int = _num(12_000, int)
    #: rows (or trials of a table counted in its engine) from which :func:`evalmix.glmer` fits
    #: ``y ~ 1 + (1|a) + (1|b)`` and ``y ~ 0 + a + (1|b)`` (logit, Laplace, no weights, offset,
    #: prior or start) on a complete a x b grid of 0/1 cells by :func:`evalmix.glmm.gridfit.glmer_grid`
    #: (1.3-1.7 times faster than the rows' path from 5e5 rows, a few bytes a cell); the fit then holds
    #: no rows and its SEs are ``"hessian_exact"`` where ``"hessian"`` was asked. 0: never
    grid_rows: int = _num(1_000_000, int, zero=True)
    #: rows from which the logit deviance, weights and scores are computed by compiled (numba)
    #: loops, when numba is installed
    compiled_rows_min: int = _num(200_000, int)
    #: cells of the (groups x fixed-effect patterns) table of a compressed X product; above it
    #: the product goes through a sparse indicator matrix (400 MB)
    group_table_max: float = _num(5e7)

    # -- records ---------------------------------------------------------------------------------
    #: keep a log of the outer iterations (theta, deviance, gradient norm) in ``fit.optimizer.log``
    log: bool = False

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            if f.name == "log":
                if not isinstance(self.log, bool):
                    raise ValueError(f"GlmerControl.log must be True or False, got {self.log!r}")
                continue
            v = getattr(self, f.name)
            kind, upper = f.metadata["kind"], f.metadata["upper"]
            zero = f.metadata.get("zero", False)
            if kind is int:
                ok = (not isinstance(v, bool) and isinstance(v, int | float)
                      and float(v).is_integer() and (v >= 0 if zero else v > 0))
                if not ok:
                    what = "a non-negative integer" if zero else "a positive integer"
                    raise ValueError(f"GlmerControl.{f.name} must be {what}, got {v!r}")
                object.__setattr__(self, f.name, int(v))
            else:
                ok = (not isinstance(v, bool) and isinstance(v, int | float) and math.isfinite(v)
                      and 0 < v <= upper)
                if not ok:
                    rng = f"in (0, {upper:g}]" if math.isfinite(upper) else "positive and finite"
                    raise ValueError(f"GlmerControl.{f.name} must be {rng}, got {v!r}")
                object.__setattr__(self, f.name, float(v))

    def replace(self, **changes: Any) -> GlmerControl:
        """A copy with some fields changed (validated as a new control).

        Examples
        --------
        >>> GlmerControl().replace(maxiter=50).maxiter
        50
        """
        unknown = set(changes) - {f.name for f in dataclasses.fields(self)}
        if unknown:
            raise ValueError(f"GlmerControl has no field(s) {sorted(unknown)}; fields: "
                             f"{[f.name for f in dataclasses.fields(self)]}")
        return dataclasses.replace(self, **changes)

    @classmethod
    def from_text(cls, settings: Mapping[str, str]) -> GlmerControl:
        """A control from field names and values written as text (the command line's
        ``--control key=value``): each value parsed to its field's type (``log``: true/false,
        yes/no, 1/0; counts: integers, ``1e3`` accepted; the rest: floats), then validated.
        An unknown name or a value that does not parse raises ``ValueError`` naming the field.

        Examples
        --------
        >>> GlmerControl.from_text({"maxiter": "1000", "grad_tol": "1e-3", "log": "true"}).changed()
        {'grad_tol': 0.001, 'maxiter': 1000, 'log': True}
        """
        kinds = {f.name: (bool if f.name == "log" else f.metadata["kind"])
                 for f in dataclasses.fields(cls)}
        values: dict[str, Any] = {}
        for name, text in settings.items():
            if name not in kinds:
                raise ValueError(f"GlmerControl has no field {name!r}; fields: {', '.join(kinds)}")
            raw = str(text).strip()
            if kinds[name] is bool:
                truth = {"true": True, "yes": True, "1": True,
                         "false": False, "no": False, "0": False}.get(raw.lower())
                if truth is None:
                    raise ValueError(f"GlmerControl.{name} must be true or false, got {raw!r}")
                values[name] = truth
                continue
            try:
                number = float(raw)
            except ValueError:
                raise ValueError(f"GlmerControl.{name} must be a number, got {raw!r}") from None
            if kinds[name] is int and number.is_integer():
                values[name] = int(number)
            else:
                values[name] = number  # validation names the field if a count is not whole
        return cls(**values)

    def changed(self) -> dict[str, Any]:
        """The fields that differ from the defaults (what ``summary()`` prints).

        Examples
        --------
        >>> GlmerControl(grad_tol=0.01).changed()
        {'grad_tol': 0.01}
        """
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)
                if getattr(self, f.name) != getattr(DEFAULT_CONTROL, f.name)}

    def to_dict(self) -> dict[str, Any]:
        """Every field by name."""
        return dataclasses.asdict(self)


DEFAULT_CONTROL = GlmerControl()
