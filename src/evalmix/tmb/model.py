"""The Laplace objective of :func:`evalmix.glmmtmb` and its joint optimisation, as glmmTMB does it.

With scalar random intercepts ``b_k = sigma_k u_k`` (``u ~ N(0, I)``) and the linear predictor
``eta = X beta + offset + sum_k sigma_k Z_k u_k``, minus the Laplace log-likelihood is

    -sum_i log f(y_i | eta_i(u_hat)) + ||u_hat||^2 / 2 + log det(H) / 2,
    H = Lambda Z' W Z Lambda + I,

``W`` the observed negative second derivative of each row's log-density over ``eta`` (TMB's
Hessian of the joint density; the spherical parametrisation leaves the value unchanged).  All
parameters, ``beta``, ``log sigma_k`` (glmmTMB's ``theta``) and ``log phi`` (glmmTMB's
``betadisp``), are optimised jointly, ``beta`` is not profiled out: L-BFGS-B on the exact gradient
of the Laplace objective, then Newton steps on the Hessian by central differences of that gradient,
which is also the Hessian whose inverse gives the standard errors (glmmTMB's ``sdreport``
differences TMB's exact gradient the same way).

The exact gradient (:meth:`LaplaceModel.nll_grad`): the joint log-density is stationary in ``u`` at
the mode, so its part is the partial derivative at fixed ``u_hat`` (envelope theorem); the part of
``log det(H) / 2`` is ``tr(H^-1 dH) / 2``, which needs the entries of ``H^-1`` at each row's
levels (the selected inverse of the factorisation) and, through ``W``'s dependence on the mode,
the third derivative of each row's log-density and one more solve with ``H`` (the implicit
derivative of ``u_hat``, taken in adjoint form).  Where the factorisation gives no selected inverse
(the sparse LU, or a Schur block too large to store dense) the gradient is central differences.

The conditional modes ``u_hat`` come from Newton steps with step halving (the loop every Laplace
engine shares, :func:`evalmix.mixed.modes.laplace_modes`); ``H`` is factored by
:class:`evalmix.mixed.intercepts.InterceptHessian` (diagonal for one term, a diagonal Schur complement for
two nested ones, a dense one for a few crossed effects, SciPy's sparse LU beyond).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np
from scipy import optimize

from ..mixed.convergence import OptimizerReport, gradient_report
from ..mixed.intercepts import HessianFactor, InterceptHessian, hessian_at_modes, newton_polish
from ..mixed.modes import INNER_MAXIT, INNER_TOL, laplace_modes
from ..mixed.numdiff import central_gradient
from .family import FAMILIES, Response, row_derivatives, row_terms

__all__ = ["LaplaceModel"]

#: inner Newton stops when the largest gradient component over u is below this (tight: the
#: Hessian for the SEs is a second difference of the objective with step 1e-4)
#: central-difference steps of the gradient (optimiser) and of the Hessian (SEs); the Hessian's
#: 1e-3 balances truncation (h^2 ~ 1e-6) against rounding of an objective in the thousands
#: (1e-12 / h^2 ~ 1e-6): 1e-4 left SEs of the nested AI4Math fit 6e-4 from glmmTMB's
GRAD_STEP = 1e-6
HESS_STEP = 1e-3
#: the step of the central differences of the exact gradient (the Hessian for the Newton polish
#: and the SEs): truncation ~ h^2 and rounding ~ 1e-16 |g| / h both well below 1e-6
JAC_STEP = 1e-5
#: a Newton step of the polish shorter than this keeps the Hessian (see :meth:`LaplaceModel.fit`)
HESS_KEEP_STEP = 1e-5
#: log SD kept in this box: exp(-12) is 6e-6, a zero SD on the logit scale, and keeps the
#: objective finite on the boundary; an SD below BOUNDARY_SD is on the boundary (no SE)
LOG_SD_MIN, LOG_SD_MAX = -12.0, 8.0
BOUNDARY_SD = 1e-4
#: log phi kept in this box (phi = e^20 is a binomial for any count; e^-10 a U-shaped beta)
LOG_PHI_MIN, LOG_PHI_MAX = -10.0, 20.0


@dataclass
class LaplaceModel:
    """The data of one fit and its Laplace objective (built by :func:`evalmix.glmmtmb`)."""

    response: Response
    X: np.ndarray
    offset: np.ndarray
    groups: list[np.ndarray]  # per random term, each row's level
    nlevels: list[int]
    u: np.ndarray = field(init=False, repr=False)
    #: the parameters and factorisation of the last mode found (None: no mode there)
    _mode: tuple[np.ndarray, HessianFactor] | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        self.family = self.response.family
        self.p = self.X.shape[1]
        self.nsd = len(self.groups)
        self.has_phi = FAMILIES[self.family]
        self.n_par = self.p + self.nsd + int(self.has_phi)
        self.offsets = np.concatenate([[0], np.cumsum(self.nlevels)]).astype(np.int64)
        self.q = int(self.offsets[-1])
        self.u = np.zeros(self.q)
        self.hess = InterceptHessian(self.groups, self.nlevels)
        self._cols = self.hess.cols
        self.q1, self.qr = self.hess.q1, self.hess.qr
        self._factor = self.hess.factor
        self._z_times, self._zt_times = self.hess.z_times, self.hess.zt_times

    # -- parameters: (beta, log SD per term, log phi) ----------------------------------------------
    def split(self, par: np.ndarray) -> tuple[np.ndarray, np.ndarray, float]:
        beta = par[: self.p]
        log_sd = par[self.p: self.p + self.nsd]
        log_phi = float(par[-1]) if self.has_phi else 0.0
        return beta, log_sd, log_phi

    def linear_predictor(self, par: np.ndarray, u: np.ndarray | None = None) -> np.ndarray:
        beta, log_sd, _ = self.split(par)
        sd_cols = np.repeat(np.exp(log_sd), self.nlevels)
        return self.X @ beta + self.offset + self._z_times(sd_cols * (self.u if u is None else u))

    def nll(self, par: np.ndarray) -> float:
        """Minus the Laplace log-likelihood at ``par`` (the conditional modes are updated)."""
        beta, log_sd, log_phi = self.split(par)
        sd_cols = np.repeat(np.exp(log_sd), self.nlevels)
        fixed = self.X @ beta + self.offset

        def joint(u: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
            ll, d1, d2 = row_terms(self.response, fixed + self._z_times(sd_cols * u), log_phi)
            return float(np.sum(ll) - 0.5 * u @ u), d1, d2

        # away from the mode the observed information of a row can be negative (a beta-binomial
        # with a small phi) and H indefinite: the loop then steps along the clipped one (clip)
        modes = laplace_modes(joint, self.u.copy(), sd_cols, self._zt_times, self._factor,
                              maxit=INNER_MAXIT, tol=INNER_TOL, clip=True)
        if modes is None:
            return np.inf
        u, h, fac = modes.u, modes.value, modes.factor
        if fac is None or not np.isfinite(h):
            self._mode = None
            return np.inf  # no mode here: H at the last point is not positive definite
        self.u = u
        self._mode = (np.array(par, dtype=float), fac)
        return -(h - 0.5 * fac.logdet)

    def nll_grad(self, par: np.ndarray) -> tuple[float, np.ndarray]:
        """:meth:`nll` and its exact gradient (central differences where the factorisation has no
        selected inverse, or where there is no mode)."""
        par = np.asarray(par, dtype=float)
        u0 = self.u.copy()
        value = self.nll(par)
        mode = self._mode
        if mode is None or mode[1].rows_inv is None:
            self.u = u0
            g = self.gradient_fd(par)
            self.nll(par)
            return value, g
        return value, self._exact_gradient(par, mode[1])

    def _exact_gradient(self, par: np.ndarray, fac: HessianFactor) -> np.ndarray:
        """The gradient of minus the Laplace log-likelihood at the mode ``self.u`` (module
        docstring).  With ``P`` the selected inverse scaled by the SDs (``P[i, k, m] = s_k s_m
        H^-1`` at row i's levels of terms k and m), the leverage ``lev_i = sum P[i]``,
        ``c = -lev d3 / 2`` and ``a = H^-1 Lambda Z' c`` (the adjoint of the mode's derivative),
        ``at = Z Lambda a`` and ``r = -d1 + c + d2 at``:

        - beta: ``X' r``;
        - log SD of term k: ``b_k' r + u_k' a_k + sum_i w_i sum_m P[i, k, m]`` (``b_k`` each row's
          effect of term k, ``w = -d2``);
        - log phi: ``-sum ll_phi + at' d1_phi - sum lev d2_phi / 2``.
        """
        beta, log_sd, log_phi = self.split(par)
        sd = np.exp(log_sd)
        sd_cols = np.repeat(sd, self.nlevels)
        u = self.u
        effects = [sd[k] * u[self._cols[k]] for k in range(self.nsd)]  # b_k per row
        eta = self.X @ beta + self.offset + np.sum(effects, axis=0)
        rd = row_derivatives(self.response, eta, log_phi)
        adj = self.hess.laplace_adjoint(fac, sd, sd_cols, u, effects, rd.d1, rd.d2, rd.d3)
        g = np.empty(self.n_par)
        g[: self.p] = self.X.T @ adj.r
        g[self.p: self.p + self.nsd] = adj.g_sd
        if self.has_phi:
            g[-1] = -np.sum(rd.ll_phi) + adj.at @ rd.d1_phi - 0.5 * adj.lev @ rd.d2_phi
        return g

    # -- the outer problem -------------------------------------------------------------------------
    def start(self) -> np.ndarray:
        """Intercept-like start: beta from the pooled logit of the mean response (on the first
        column, zero elsewhere), SD 1 and phi 1 (glmmTMB's start for theta and betadisp)."""
        r = self.response
        mean = float(np.clip(np.sum(r.y * r.n) / max(np.sum(r.n), 1e-12), 1e-3, 1 - 1e-3))
        beta, *_ = np.linalg.lstsq(self.X, np.full(len(r.y), np.log(mean / (1 - mean))) - self.offset,
                                   rcond=None)
        return np.concatenate([beta, np.zeros(self.nsd), np.zeros(int(self.has_phi))])

    def bounds(self) -> list[tuple[float | None, float | None]]:
        free: list[tuple[float | None, float | None]] = [(None, None)]
        return (free * self.p + [(LOG_SD_MIN, LOG_SD_MAX)] * self.nsd
                + [(LOG_PHI_MIN, LOG_PHI_MAX)] * int(self.has_phi))

    def gradient(self, x: np.ndarray) -> np.ndarray:
        """The gradient of :meth:`nll` at ``x`` (exact where the factorisation allows); the modes
        are left at ``x``'s."""
        return self.nll_grad(x)[1]

    def gradient_fd(self, x: np.ndarray, step: float = GRAD_STEP) -> np.ndarray:
        """Central-difference gradient of :meth:`nll`, every evaluation from the same modes."""
        u0 = self.u.copy()

        def f(y: np.ndarray) -> float:
            self.u = u0.copy()
            return self.nll(y)

        g = central_gradient(f, x, step)
        self.u = u0
        return g

    def hessian(self, par: np.ndarray, which: np.ndarray, step: float = JAC_STEP) -> np.ndarray:
        """Hessian of :meth:`nll` over the parameters ``which`` (a boolean mask): central differences
        of :meth:`gradient`, made symmetric (R's ``optimHess``, which glmmTMB's ``sdreport`` uses),
        every evaluation from the modes at ``par``.  Where the gradient itself is central
        differences, the Hessian is the central second difference of :meth:`nll` (step
        :data:`HESS_STEP`) instead: differencing a differenced gradient would leave too little."""
        exact = self._mode is not None and self._mode[1].rows_inv is not None
        return hessian_at_modes(self, self.nll, self.gradient if exact else None, par, which,
                                value_step=HESS_STEP, gradient_step=step)

    def interior(self, par: np.ndarray) -> np.ndarray:
        """Parameters off the boundary: an SD below :data:`BOUNDARY_SD`, and a precision at its
        upper bound (the binomial limit), have no SE."""
        keep = np.ones(self.n_par, dtype=bool)
        keep[self.p: self.p + self.nsd] = np.exp(par[self.p: self.p + self.nsd]) >= BOUNDARY_SD
        if self.has_phi:
            keep[-1] = par[-1] < LOG_PHI_MAX - 1e-3
        return keep

    def fit(self, start: np.ndarray | None = None, maxiter: int = 1000, grad_tol: float = 1e-3
            ) -> tuple[np.ndarray, float, OptimizerReport, np.ndarray]:
        """Minimise :meth:`nll`; returns the parameters, minus the log-likelihood, the
        optimiser's report (converged when the largest absolute gradient over the interior
        parameters, :meth:`interior`, is below ``grad_tol``) and the Hessian over them."""
        t0 = time.perf_counter()
        x0 = self.start() if start is None else np.asarray(start, dtype=float)
        res = optimize.minimize(self.nll_grad, x0, method="L-BFGS-B", jac=True, bounds=self.bounds(),
                                options={"maxiter": maxiter, "ftol": 1e-15, "gtol": 1e-8})
        par = np.asarray(res.x, dtype=float)
        value = self.nll(par)
        # Newton polish (L-BFGS-B stops a little short on flat ridges); the Hessian at the last
        # point is the one the SEs need, but a step shorter than HESS_KEEP_STEP moves it by less
        # than that relative to itself, far below the SEs' accuracy, so it is kept rather than
        # differenced again
        par, value, steps, H = newton_polish(par, value, self.nll, self.gradient, self.hessian, self.interior,
                                             max_steps=8, gtol=1e-7, keep_step=HESS_KEEP_STEP)
        interior = self.interior(par)
        grad = self.gradient(par)[interior]
        if H is None or H.shape[0] != int(interior.sum()):
            H = self.hessian(par, interior)
        if not np.isfinite(value):
            grad = np.full_like(grad, np.nan)  # a non-finite optimum has not converged
        self.nll(par)  # leave the conditional modes at the estimates
        report = gradient_report(res, grad, optimizer="L-BFGS-B + Newton", grad_tol=grad_tol,
                                 extra_iterations=steps, seconds=time.perf_counter() - t0)
        return par, float(value), report, H
