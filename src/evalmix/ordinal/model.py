"""The cumulative-link mixed model's likelihood: response coding, the Laplace objective and its fit.

The model is ordinal's: ``P(Y <= j) = F(theta_j - x beta - sum_k sigma_k u_k)`` with spherical
random effects ``u ~ N(0, I)`` and one SD ``sigma_k`` per scalar random-intercept term.  The
Laplace log-likelihood at the conditional modes ``u_hat`` is

    sum_i log p_i(u_hat) - ||u_hat||^2 / 2 - log det(D) / 2,   D = Lambda Z' W Z Lambda + I,

``W`` the negative second derivative of ``log p_i`` over the linear predictor (ordinal's
``getNLA``).  The conditional modes come from Newton steps with step halving
(:func:`evalmix.mixed.modes.laplace_modes`, as glmmtmb's; ``D`` factored by
:class:`evalmix.mixed.intercepts.InterceptHessian`: diagonal for one grouping factor, a diagonal Schur
complement for two nested ones, a dense one for a few crossed effects, sparse LU beyond); the outer problem runs L-BFGS-B over
``(thresholds, beta, log sigma)`` with the exact gradient of the Laplace objective
(:meth:`OrdinalModel.nla_grad`; central differences where the factorisation gives no selected
inverse) and ends with Newton steps on the Hessian by differences of that gradient, which is also
the one ``vcov`` inverts.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import optimize, special

from ..mixed.convergence import OptimizerReport, gradient_report
from ..mixed.intercepts import HessianFactor, InterceptHessian, hessian_at_modes, newton_polish
from ..mixed.modes import INNER_MAXIT, INNER_TOL, laplace_modes
from ..mixed.links import dlog_mu_eta, inverse_link, mu_eta
from ..mixed.numdiff import central_gradient

#: inner Newton: stop when the largest gradient component of the conditional modes is below this
#: (tight: the Hessian for the SEs is a second difference of the objective at step 1e-4)
#: ordinal drops a random-effect SD below this from the Hessian (``paratBoundary2``'s tol)
BOUNDARY_SD = 1e-3
#: central-difference step of the gradient and of the Hessian (ordinal's ``deriv12`` uses 1e-4)
GRAD_STEP = 1e-6
HESS_STEP = 1e-4
#: the step of the central differences of the exact gradient (the Hessian for the SEs)
JAC_STEP = 1e-5
#: log SD is kept in [LOG_SD_MIN, LOG_SD_MAX] by the optimiser: exp(-15) is 3e-7, a zero SD for
#: any rating scale, and keeps the objective finite on the boundary
LOG_SD_MIN, LOG_SD_MAX = -15.0, 8.0


@dataclass
class OrdinalModel:
    """The data of one fit and its Laplace objective (not public; :func:`evalmix.clmm` builds it)."""

    y: np.ndarray  # 0..J-1
    X: np.ndarray  # n x p, no intercept
    groups: list[np.ndarray]  # per random term, each row's level
    nlevels: list[int]
    n_cat: int
    link: str
    threshold: str  # "flexible" or "equidistant"
    offset: np.ndarray | None = None  # the formula's offset() terms, added to x beta

    def __post_init__(self) -> None:
        self.p = self.X.shape[1]
        self.off = np.zeros(len(self.y)) if self.offset is None else np.asarray(self.offset, dtype=float)
        self.offsets = np.concatenate([[0], np.cumsum(self.nlevels)]).astype(np.int64)
        self.q = int(self.offsets[-1])
        self.u = np.zeros(self.q)
        self.hess = InterceptHessian(self.groups, self.nlevels)
        self._mode: HessianFactor | None = None  # the factorisation at the last modes found
        self._z_times, self._zt_times = self.hess.z_times, self.hess.zt_times
        self.n_theta = self.n_cat - 1 if self.threshold == "flexible" else 2
        self.n_par = self.n_theta + self.p + len(self.groups)

    # -- parameters: ordinal's (thresholds or threshold.1/spacing, beta, log SD) -----------------
    def cutpoints(self, tpar: np.ndarray) -> np.ndarray:
        if self.threshold == "flexible":
            return tpar
        return tpar[0] + tpar[1] * np.arange(self.n_cat - 1)

    def to_free(self, par: np.ndarray) -> np.ndarray:
        """ordinal's parameters -> unconstrained ones (increments of the thresholds on log scale)."""
        t = par[: self.n_theta]
        free_t = np.concatenate([[t[0]], np.log(np.diff(t))]) if self.threshold == "flexible" \
            else np.array([t[0], np.log(t[1])])
        return np.concatenate([free_t, par[self.n_theta:]])

    def from_free(self, free: np.ndarray) -> np.ndarray:
        f = free[: self.n_theta]
        t = np.concatenate([[f[0]], f[0] + np.cumsum(np.exp(f[1:]))]) \
            if self.threshold == "flexible" else np.array([f[0], np.exp(f[1])])
        return np.concatenate([t, free[self.n_theta:]])

    # -- per-row log probabilities and their derivatives over the linear predictor ---------------
    def _rows(self, cuts: np.ndarray, lp: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        full = np.concatenate([[-np.inf], cuts, [np.inf]])
        a = full[self.y + 1] - lp
        b = full[self.y] - lp
        # P = F(a) - F(b); when both are above the median subtract survivals instead (no cancellation)
        upper = b > 0
        p = np.where(upper, inverse_link(self.link, -b) - inverse_link(self.link, -a),
                     inverse_link(self.link, a) - inverse_link(self.link, b))
        fa, fb = mu_eta(self.link, a), mu_eta(self.link, b)
        with np.errstate(invalid="ignore"):
            dfa = np.where(np.isfinite(a), fa * dlog_mu_eta(self.link, np.where(np.isfinite(a), a, 0.0)), 0.0)
            dfb = np.where(np.isfinite(b), fb * dlog_mu_eta(self.link, np.where(np.isfinite(b), b, 0.0)), 0.0)
        # a probability that underflows to 0 (a separated fit wandering far out) gives -inf and NaN
        # derivatives, which the optimiser rejects as a step: no numpy warning for the user
        with np.errstate(divide="ignore", invalid="ignore"):
            logp = np.log(p)
            g = (fa - fb) / p  # d log p / d(theta - lp)
            d2 = (dfa - dfb) / p - g * g
        d1 = -g
        return logp, d1, d2

    def nla(self, par: np.ndarray) -> float:
        """Minus the Laplace log-likelihood at ordinal's parameters (conditional modes updated)."""
        cuts = self.cutpoints(par[: self.n_theta])
        if np.any(np.diff(cuts) <= 0):
            return np.inf
        beta = par[self.n_theta: self.n_theta + self.p]
        sd = np.exp(np.clip(par[self.n_theta + self.p:], -700, 700))
        sd_cols = np.repeat(sd, self.nlevels)
        fixed = self.X @ beta + self.off
        u = self.u.copy()

        def objective(u: np.ndarray) -> tuple[float, np.ndarray, np.ndarray]:
            lp = fixed + self._z_times(sd_cols * u)
            logp, d1, d2 = self._rows(cuts, lp)
            return float(np.sum(logp) - 0.5 * u @ u), d1, d2

        # W is positive for a cumulative link (its log-probability is concave in the linear
        # predictor), so H is positive definite; a factorisation that fails (NaN weights far out)
        # stops the loop, and the objective is then infinite
        modes = laplace_modes(objective, u, sd_cols, self._zt_times, self.hess.factor,
                              maxit=INNER_MAXIT, tol=INNER_TOL)
        assert modes is not None  # only with clip
        u, h, fac = modes.u, modes.value, modes.factor
        logdet = fac.logdet if fac is not None else np.nan
        if not (np.isfinite(h) and np.isfinite(logdet)):
            self._mode = None
            return np.inf
        self.u = u
        self._mode = fac
        return -(h - 0.5 * logdet)

    def _link_derivatives(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The density of the latent distribution at ``x`` and its first two derivatives (0 at
        the infinite ends)."""
        if self.link == "logit":
            F = special.expit(x)
            f = F * (1.0 - F)
            return f, f * (1.0 - 2.0 * F), f * (1.0 - 6.0 * f)
        z = np.where(np.isfinite(x), x, 0.0)
        f = np.where(np.isfinite(x), np.exp(-0.5 * z * z) / np.sqrt(2.0 * np.pi), 0.0)
        return f, -z * f, (z * z - 1.0) * f

    def nla_grad(self, par: np.ndarray) -> tuple[float, np.ndarray]:
        """``nla`` and its exact gradient over ordinal's parameters (thresholds, beta, log SD);
        central differences where the factorisation has no selected inverse.

        As :meth:`evalmix.tmb.model.LaplaceModel.nll_grad`, with the thresholds in the place of
        the precision: row i's log-probability is ``l(A, B) = log(F(A) - F(B))``, ``A`` its upper
        threshold minus the linear predictor and ``B`` its lower one, so its derivatives over the
        linear predictor (``d1``, ``d2``, ``d3``) and over a threshold are sums of the partial
        derivatives of ``l`` over ``A`` and ``B``, up to the third order (from the link's density
        and its first two derivatives).
        """
        par = np.asarray(par, dtype=float)
        value = self.nla(par)
        fac = self._mode
        if not np.isfinite(value) or fac is None or fac.rows_inv is None:
            u0 = self.u.copy()
            g = central_gradient(self._restarted(u0), par, GRAD_STEP)
            self.u = u0
            self.nla(par)
            return value, g
        nt, p = self.n_theta, self.p
        cuts = self.cutpoints(par[:nt])
        beta = par[nt: nt + p]
        sd = np.exp(np.clip(par[nt + p:], -700, 700))
        sd_cols = np.repeat(sd, self.nlevels)
        u = self.u
        effects = [sd[k] * u[self.hess.cols[k]] for k in range(len(self.groups))]
        lp = self.X @ beta + self.off + np.sum(effects, axis=0)
        full = np.concatenate([[-np.inf], cuts, [np.inf]])
        A, B = full[self.y + 1] - lp, full[self.y] - lp
        upper = B > 0
        # as _rows: survivals when both ends are above the median, no cancellation
        prob = np.where(upper, inverse_link(self.link, -B) - inverse_link(self.link, -A),
                        inverse_link(self.link, A) - inverse_link(self.link, B))
        fA, gA, hA = self._link_derivatives(A)
        fB, gB, hB = self._link_derivatives(B)
        lA, lB = fA / prob, -fB / prob
        rA, rB = gA / prob, gB / prob
        lAA, lBB, lAB = rA - lA * lA, -rB - lB * lB, -lA * lB
        lAAA = hA / prob - lA * rA - 2.0 * lA * lAA
        lAAB = -rA * lB - 2.0 * lA * lAB
        lABB = rB * lA - 2.0 * lB * lAB
        lBBB = -hB / prob + rB * lB - 2.0 * lB * lBB
        d1 = -(lA + lB)
        d2 = lAA + 2.0 * lAB + lBB
        d3 = -(lAAA + 3.0 * lAAB + 3.0 * lABB + lBBB)
        adj = self.hess.laplace_adjoint(fac, sd, sd_cols, u, effects, d1, d2, d3)
        at, lev = adj.at, adj.lev
        g = np.empty(self.n_par)
        g[nt: nt + p] = self.X.T @ adj.r
        g[nt + p:] = adj.g_sd
        # threshold j moves A of the rows in category j and B of those in category j + 1
        vA = -lA - at * (lAA + lAB) - 0.5 * lev * (lAAA + 2.0 * lAAB + lABB)
        vB = -lB - at * (lAB + lBB) - 0.5 * lev * (lAAB + 2.0 * lABB + lBBB)
        J = self.n_cat
        g_cut = (np.bincount(self.y, weights=vA, minlength=J)[: J - 1]
                 + np.bincount(self.y, weights=vB, minlength=J)[1:])
        if self.threshold == "flexible":
            g[:nt] = g_cut
        else:  # cut_j = threshold.1 + spacing j
            g[:nt] = [g_cut.sum(), g_cut @ np.arange(J - 1)]
        return value, g

    def _restarted(self, u0: np.ndarray) -> Callable[[np.ndarray], float]:
        """``nla`` with every evaluation started from the modes ``u0`` (reproducible differences)."""

        def f(x: np.ndarray) -> float:
            self.u = u0.copy()
            return self.nla(x)

        return f

    def _free_objective_grad(self, free: np.ndarray) -> tuple[float, np.ndarray]:
        """``nla`` and its gradient over the unconstrained parameters (:meth:`to_free`)."""
        value, g = self.nla_grad(self.from_free(free))
        out = g.copy()
        nt = self.n_theta
        if self.threshold == "flexible":
            # t_j = f_0 + sum_{m <= j} exp(f_m): dt_j / df_m = exp(f_m) for m <= j (m >= 1)
            tail = np.cumsum(g[:nt][::-1])[::-1]
            out[0] = tail[0]
            out[1:nt] = np.exp(free[1:nt]) * tail[1:]
        else:
            out[1] = np.exp(free[1]) * g[1]
        return value, out

    # -- the outer problem -----------------------------------------------------------------------
    def start(self) -> np.ndarray:
        """ordinal-like start: thresholds at the marginal cumulative proportions, beta 0, SD 1."""
        cum = np.cumsum(np.bincount(self.y, minlength=self.n_cat))[:-1] / len(self.y)
        cuts = special.logit(cum) if self.link == "logit" else special.ndtri(cum)
        t = cuts if self.threshold == "flexible" else \
            np.array([cuts[0], max((cuts[-1] - cuts[0]) / (self.n_cat - 2), 0.1)])
        return np.concatenate([t, np.zeros(self.p), np.zeros(len(self.groups))])

    def _free_objective(self, free: np.ndarray) -> float:
        return self.nla(self.from_free(free))

    def gradient(self, par: np.ndarray) -> np.ndarray:
        """The gradient of ``nla`` over ordinal's parameters at ``par`` (:meth:`nla_grad`)."""
        return self.nla_grad(par)[1]

    def hessian(self, par: np.ndarray, which: np.ndarray, step: float = HESS_STEP) -> np.ndarray:
        """Hessian of ``nla`` over the parameters ``which``: central differences of the exact
        gradient (step :data:`JAC_STEP`, made symmetric), or, where the gradient is itself
        differenced, the central second differences of ``nla`` (step ``step``, ordinal's
        ``deriv12``); every evaluation starts from the modes at ``par``."""
        exact = self._mode is not None and self._mode.rows_inv is not None
        return hessian_at_modes(self, self.nla, self.gradient if exact else None, par, which,
                                value_step=step, gradient_step=JAC_STEP)

    def fit(self, maxiter: int = 1000, grad_tol: float = 1e-3) -> tuple[np.ndarray, float, OptimizerReport]:
        """Minimise ``nla``; returns ordinal's parameters, minus log-lik and the optimiser's report
        (converged when the largest absolute gradient is below ``grad_tol``)."""
        t0 = time.perf_counter()
        free0 = self.to_free(self.start())
        nsd = len(self.groups)
        bounds = [(None, None)] * (len(free0) - nsd) + [(LOG_SD_MIN, LOG_SD_MAX)] * nsd
        res = optimize.minimize(self._free_objective_grad, free0, method="L-BFGS-B", jac=True,
                                bounds=bounds,
                                options={"maxiter": maxiter, "ftol": 1e-14, "gtol": 1e-7})
        par = self.from_free(res.x)
        value = self.nla(par)
        par, value, steps, _ = newton_polish(par, value, self.nla, self.gradient, self.hessian, self.interior,
                                             max_steps=5, gtol=1e-6)
        interior = self.interior(par)
        grad = self.gradient(par)[interior]
        self.nla(par)  # leave the conditional modes at the estimates
        return par, value, gradient_report(res, grad, optimizer="L-BFGS-B + Newton", grad_tol=grad_tol,
                                           extra_iterations=steps, seconds=time.perf_counter() - t0)

    def interior(self, par: np.ndarray) -> np.ndarray:
        """Parameters off the boundary (ordinal leaves an SD below 1e-3 out of the Hessian)."""
        keep = np.ones(self.n_par, dtype=bool)
        keep[self.n_theta + self.p:] = np.exp(par[self.n_theta + self.p:]) >= BOUNDARY_SD
        return keep
