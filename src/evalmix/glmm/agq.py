"""Adaptive Gauss-Hermite quadrature (lme4's ``nAGQ > 1``) for one scalar random-effect term.

With a single scalar term the integral over the random effects factorises by level ``j``. Around
the conditional mode ``u_j`` with spread ``s_j = 1 / sqrt(H_jj)`` (``H = Lambda'Z'WZ Lambda + I``
at the mode, Fisher weights, as the Laplace approximation uses), each level's integral is

    -2 log I_j = d_j(u_j) + log H_jj - 2 log sum_k w_k exp(z_k^2 / 2 - (d_j(u_j + s_j z_k) - d_j(u_j)) / 2)

with ``d_j(v) = v^2 + sum_{i in j} D_i(eta_i(v))`` and ``(z_k, w_k)`` the Gauss-Hermite rule for
the standard normal density (weights summing to 1). One node (``z = 0``) gives the Laplace
deviance. This is lme4's ``glmerAGQ``; like lme4, the value is minimised over theta and beta
together, starting from the Laplace optimum.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
from numpy.polynomial.hermite_e import hermegauss
from scipy.optimize import minimize
from scipy.special import logsumexp

from ..model import RandomTerm
from ..mixed.links import log_probabilities
from .deviance import Evaluation, LaplaceDeviance


class AGQDeviance:
    """The nAGQ-point deviance of a model with one scalar random-effect term."""

    def __init__(self, ld: LaplaceDeviance, term: RandomTerm, nagq: int):
        self.ld = ld
        self.idx = term.index
        self.J = term.nl
        self.z = np.asarray(term.Z[:, 0], dtype=float)
        nodes, weights = hermegauss(nagq)
        self.nodes = nodes
        self.logw = np.log(weights / np.sqrt(2 * np.pi)) + nodes**2 / 2
        self.u: np.ndarray | None = None
        self.evaluations = 0

    def _rowdev(self, eta: np.ndarray) -> np.ndarray:
        """``-2 (k log mu + (m - k) log(1 - mu))`` per pooled row."""
        ld = self.ld
        lmu, l1mu = log_probabilities(ld.link, eta)
        return -2.0 * (ld.k * lmu + (ld.m - ld.k) * l1mu)

    def __call__(self, theta: np.ndarray, beta: np.ndarray) -> float:
        return self.evaluate(theta, beta)[0]

    def evaluate(self, theta: np.ndarray, beta: np.ndarray) -> tuple[float, Evaluation]:
        ld = self.ld
        self.evaluations += 1
        ev = ld.pirls(np.asarray(theta, float), np.asarray(beta, float), self.u)
        self.u = ev.u
        th = float(theta[0])
        zi = th * self.z
        H = 1.0 + np.bincount(self.idx, ev.w * zi**2, self.J)
        s = 1.0 / np.sqrt(H)
        base = ev.eta - zi * ev.u[self.idx]
        d0 = np.bincount(self.idx, self._rowdev(ev.eta), self.J) + ev.u**2
        terms = np.empty((self.nodes.size, self.J))
        for k, zk in enumerate(self.nodes):
            v = ev.u + s * zk
            dk = np.bincount(self.idx, self._rowdev(base + zi * v[self.idx]), self.J) + v**2
            terms[k] = self.logw[k] - (dk - d0) / 2
        acc = logsumexp(terms, axis=0)
        dev = float(d0.sum() + np.log(H).sum() - 2.0 * acc.sum())
        prior = getattr(ld, "prior", None)  # a penalised fit (fixef_prior) keeps its penalty
        if prior is not None:
            dev += float(prior.penalty(ev.beta))
        return dev, ev


def fd_hessian(f: Callable[[np.ndarray], float], x: np.ndarray, h: float = 1e-4) -> np.ndarray:
    """Central second differences of ``f`` at ``x`` (lme4's ``deriv12`` step)."""
    n = x.size
    f0 = f(x)
    E = np.eye(n) * h
    fp = np.array([f(x + E[i]) for i in range(n)])
    fm = np.array([f(x - E[i]) for i in range(n)])
    H = np.empty((n, n))
    for i in range(n):
        H[i, i] = (fp[i] - 2 * f0 + fm[i]) / h**2
        for j in range(i):
            fpp = f(x + E[i] + E[j])
            fmm = f(x - E[i] - E[j])
            H[i, j] = H[j, i] = (fpp - fp[i] - fp[j] + 2 * f0 - fm[i] - fm[j] + fmm) / (2 * h**2)
    return H


def fd_gradient(f: Callable[[np.ndarray], float], x: np.ndarray, lower: np.ndarray, h: float = 1e-6) -> np.ndarray:
    g = np.empty(x.size)
    for i in range(x.size):
        e = np.zeros(x.size)
        e[i] = h
        if x[i] - h < lower[i]:
            g[i] = (f(x + e) - f(x)) / h
        else:
            g[i] = (f(x + e) - f(x - e)) / (2 * h)
    return g


def optimize_agq(agq: AGQDeviance, theta0: np.ndarray, beta0: np.ndarray, lower: np.ndarray,
                 maxiter: int | None = None
                 ) -> tuple[np.ndarray, float, Evaluation, np.ndarray, Any, Callable[[np.ndarray], float]]:
    """Minimise the AGQ deviance over (theta, beta) from the Laplace optimum.

    Returns the final (theta, beta), the deviance, the PIRLS evaluation there, the gradient and
    scipy's result.
    """
    nt = theta0.size
    lo = np.concatenate([lower, np.full(beta0.size, -np.inf)])

    def f(x: np.ndarray) -> float:
        return agq(np.maximum(x[:nt], lower), x[nt:])

    def fg(x: np.ndarray) -> tuple[float, np.ndarray]:
        return f(x), fd_gradient(f, x, lo, ctl.agq_fd_step)

    x0 = np.concatenate([theta0, beta0])
    bounds = [(b if np.isfinite(b) else None, None) for b in lo]
    ctl = agq.ld.control
    res = minimize(fg, x0, jac=True, method="L-BFGS-B", bounds=bounds,
                   options={"maxiter": ctl.maxiter if maxiter is None else maxiter,
                            "ftol": ctl.ftol, "gtol": ctl.gtol, "maxcor": ctl.maxcor})
    x = np.concatenate([np.maximum(res.x[:nt], lower), res.x[nt:]])
    dev, ev = agq.evaluate(x[:nt], x[nt:])
    return x, dev, ev, fd_gradient(f, x, lo, ctl.agq_fd_step), res, f
