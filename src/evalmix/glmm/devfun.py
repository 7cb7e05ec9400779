"""The deviance objective of a GLMM as a function users can optimise (lme4's ``devFunOnly``).

lme4 splits ``glmer`` into ``glFormula`` (formula and data to a design), ``mkGlmerDevfun`` (the
deviance function), ``optimizeGlmer`` and ``mkMerMod``; ``glmer(..., devFunOnly = TRUE)`` stops
after the second step and returns the objective. evalmix's steps are
:func:`~evalmix.model.build_design`, :func:`build_deviance`,
:func:`~evalmix.glmm.optimize.optimize` and :func:`evalmix.glmer`'s assembly of the result;
``glmer(..., devfun_only=True)`` returns a :class:`DevianceFunction`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .control import DEFAULT_CONTROL, GlmerControl
from .deviance import Evaluation, LaplaceDeviance, saturated_deviance
from ..model import GlmmDesign
from .optimize import ProfiledFit
from .prior import NormalPrior, PenalizedDeviance
from ..mixed.separation import Separation, limit_problem

__all__ = ["DevianceFunction", "build_deviance"]


def build_deviance(design: GlmmDesign, *, link: str = "logit", control: GlmerControl | None = None,
                   prior: NormalPrior | None = None,
                   separation: Separation | None = None) -> LaplaceDeviance:
    """The Laplace deviance of a design (lme4's ``mkGlmerDevfun``): PIRLS and the solver.

    ``ld.pirls(theta, beta)`` returns the conditional modes and ``dev``, lme4's Laplace deviance
    without the binomial coefficients (subtract ``2 * design.log_binom`` for ``-2 logLik``). The
    solver is the fastest exact one for the random terms within the limits of ``control``
    (:func:`~evalmix.glmm.deviance.make_solver`); ``prior`` adds a normal penalty on beta
    (:class:`~evalmix.glmm.prior.PenalizedDeviance`, ``blme``'s ``fixef.prior``). With a
    ``separation`` (:func:`~evalmix.mixed.separation.find_separation`) the deviance is the one of
    its limit: the rows not fitted perfectly and the coefficients that stay finite. Its
    ``saturated`` is the saturated model's deviance of the design's rows as given
    (:func:`~evalmix.glmm.deviance.saturated_deviance`), which lme4's PIRLS stopping rule and its
    quadrature deviance are relative to.

    Examples
    --------
    >>> from evalmix.glmm import build_design, build_deviance
    >>> from evalmix.simulate import glmm_runs
    >>> design = build_design("correct ~ model + (1|item)", glmm_runs(2, 40, 2, rng=1))
    >>> ld = build_deviance(design)
    >>> type(ld.solver).__name__
    'NestedSolver'
    >>> ev = ld.pirls(np.array([1.0]), np.zeros(2))
    >>> round(ev.dev - 2 * design.log_binom, 3)
    219.917
    """
    ctl = DEFAULT_CONTROL if control is None else control
    X, k, m, terms, offset = design.X, design.k, design.m, design.terms, design.offset
    if separation is not None:
        X, k, m, terms = limit_problem(design, separation)
        offset = None if offset is None else offset[~separation.pooled_rows]
    ld = (LaplaceDeviance(X, k, m, terms, offset=offset, link=link, control=ctl)
          if prior is None else PenalizedDeviance(X, k, m, terms, prior=prior, offset=offset,
                                                  link=link, control=ctl))
    # 0/1 rows are their own saturated model: counts that stand for such rows keep lme4's rule of the rows
    ld.saturated = 0.0 if design.binary_rows else saturated_deviance(design.k_rows, design.m_rows)
    return ld


class DevianceFunction:
    """``-2 log L`` of a GLMM as a function of its parameters (``glmer(..., devfun_only=True)``).

    Calling it with one vector ``x = (theta, beta)`` is lme4's second-stage deviance function
    (``devFunOnly = TRUE`` with ``nAGQ >= 1``): the conditional modes are found by PIRLS at
    ``(theta, beta)`` and the Laplace (or nAGQ-point) deviance is returned, with the binomial
    coefficients of k-of-n rows included so that at the fit's estimates it equals
    ``fit.deviance`` (``-2 * fit.loglik``). With a ``fixef_prior`` the prior's penalty
    (``prior_deviance`` without its constant) is added: that is the objective the fit minimises.
    :meth:`profiled` is the same over theta alone, beta minimised out (the function evalmix's
    optimiser works on); :meth:`joint` is lme4's first stage (``nAGQ = 0``: beta estimated with
    the modes inside PIRLS).

    Attributes
    ----------
    design : GlmmDesign
        The pooled design (:func:`~evalmix.model.build_design`), rank-deficient columns
        already dropped as :func:`evalmix.glmer` drops them.
    deviance : LaplaceDeviance
        The underlying objective (:func:`build_deviance`).
    theta_names, beta_names : list of str
        The parameters, in the order of ``x``.
    lower, upper : ndarray
        Bounds of ``x`` as lme4 sets them (0 for a diagonal element of a Lambda block, else
        unbounded). The deviance is even in each column of Lambda, so an unbounded optimiser
        also works: the sign of a diagonal theta is then arbitrary.
    start : ndarray
        lme4's starting point: theta 1 on the diagonal and 0 elsewhere, beta 0.
    nagq : int
        1 for the Laplace approximation, more for adaptive Gauss-Hermite quadrature, 0 for
        lme4's first stage: then ``f(theta)`` is :meth:`joint` and the bounds and start cover
        theta only.

    Examples
    --------
    >>> import numpy as np
    >>> from scipy.optimize import minimize
    >>> from evalmix import glmer
    >>> from evalmix.simulate import glmm_runs
    >>> runs = glmm_runs(2, 40, 2, rng=1)
    >>> f = glmer("correct ~ model + (1|item)", runs, devfun_only=True)
    >>> f.theta_names + f.beta_names
    ['item.(Intercept)', '(Intercept)', 'modelM2']
    >>> res = minimize(f, f.start, method="Nelder-Mead",
    ...                options={"xatol": 1e-6, "fatol": 1e-9})
    >>> fit = glmer("correct ~ model + (1|item)", runs)
    >>> bool(abs(res.fun - fit.deviance) < 1e-6), bool(abs(f(res.x) - f.profiled(res.x[:1])) < 1e-6)
    (True, True)
    """

    def __init__(self, design: GlmmDesign, deviance: LaplaceDeviance, nagq: int = 1):
        self.design = design
        self.deviance = deviance
        self.nagq = int(nagq)
        self.theta_names = list(design.theta_names)
        self.beta_names = list(design.fixed.columns)
        self.nt, self.p = len(self.theta_names), len(self.beta_names)
        tl = design.theta_lower
        self.lower = np.concatenate([tl, np.full(self.p, -np.inf)])
        self.upper = np.full(self.nt + self.p, np.inf)
        self.start = np.concatenate([design.theta_start, np.zeros(self.p)])
        if self.nagq == 0:  # a function of theta alone
            self.lower, self.upper = self.lower[:self.nt], self.upper[:self.nt]
            self.start = self.start[:self.nt]
        for a in (self.lower, self.upper, self.start):
            a.flags.writeable = False
        self._const = -2.0 * design.log_binom
        self._u: np.ndarray | None = None
        self._agq: Any = None
        if self.nagq > 1:
            from .agq import AGQDeviance

            self._agq = AGQDeviance(deviance, design.terms[0], self.nagq)
            # lme4's quadrature deviance sums deviance residuals: adding the saturated model's
            # 2 log L (the deviance's ``saturated``) gives -2 log L, as in evalmix.glmer
            self._const = deviance.saturated
        self._profile: ProfiledFit | None = None

    def _split(self, x: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        x = np.asarray(x, dtype=float).ravel()
        if x.size != self.nt + self.p:
            raise ValueError(f"the deviance function takes {self.nt + self.p} values "
                             f"(theta {self.theta_names}, then beta {self.beta_names}), got {x.size}")
        return x[: self.nt], x[self.nt:]

    def __call__(self, x: ArrayLike) -> float:
        """Deviance at ``x = (theta, beta)``: ``-2 log L`` (plus the prior's penalty); with
        ``nagq = 0``, at ``x = theta``: the first-stage deviance (:meth:`joint`), as lme4's
        ``devFunOnly`` function of ``nAGQ = 0`` is a function of theta."""
        if self.nagq == 0:
            return self.joint(x)
        theta, beta = self._split(x)
        if self._agq is not None:
            return float(self._agq(theta, beta) + self._const)
        ev = self.evaluate(theta, beta)
        return float(ev.dev + self._const)

    def evaluate(self, theta: ArrayLike, beta: ArrayLike) -> Evaluation:
        """The PIRLS state at ``(theta, beta)``: modes ``u``, linear predictor, weights and
        lme4's ``dev`` (without the binomial coefficients), warm-started from the last call."""
        ev = self.deviance.pirls(np.asarray(theta, float), np.asarray(beta, float), self._u)
        self._u = ev.u if np.isfinite(ev.dev) else None
        return ev

    def profiled(self, theta: ArrayLike) -> float:
        """Deviance at ``theta`` with beta minimised out (Laplace only), the objective of
        :func:`~evalmix.glmm.optimize.optimize`; the minimising beta is in ``last_beta``."""
        if self.nagq != 1:
            raise ValueError("the profiled deviance is the Laplace one; this function has "
                             f"nAGQ = {self.nagq}")
        theta = np.asarray(theta, dtype=float)
        self._split(np.concatenate([theta, np.zeros(self.p)]))
        if self._profile is None:
            self._profile = ProfiledFit(self.deviance, np.zeros(self.p), self.design.theta_lower)
        ev = self._profile.inner(theta)
        self.last_beta = ev.beta.copy()
        return float(ev.dev + self._const)

    def joint(self, theta: ArrayLike) -> float:
        """lme4's first-stage deviance (``nAGQ = 0``): PIRLS over the modes and beta together
        at ``theta`` (:meth:`~evalmix.glmm.deviance.LaplaceDeviance.joint_mode`)."""
        theta = np.atleast_1d(np.asarray(theta, dtype=float)).ravel()
        self._split(np.concatenate([theta, np.zeros(self.p)]))
        dev = self.deviance.joint_mode(theta, np.zeros(self.p))[0]
        return float(dev + (-2.0 * self.design.log_binom))

    def __repr__(self) -> str:
        approx = "Laplace" if self.nagq == 1 else f"nAGQ = {self.nagq}"
        of = f"theta {self.theta_names}" + ("" if self.nagq == 0 else f", beta {self.beta_names}")
        return f"DevianceFunction({self.design.parsed.formula!r}, {approx}: {of})"
