"""The Laplace deviance of a binomial-logit GLMM, as lme4 defines it, and its pieces.

With ``eta = X beta + Z Lambda(theta) u`` and ``A = Z Lambda``, penalised iteratively reweighted
least squares (PIRLS) finds the conditional mode ``u~`` of ``u`` for fixed ``(theta, beta)``; the
Laplace deviance is ``log det(A' W A + I) + ||u~||^2 + D(y, eta)``, ``D`` being minus twice the
binomial log-likelihood without the binomial coefficients (lme4 adds them for k-of-n data; the fit
object adds them back).

Two solvers for the random-effects system ``H = A' W A + I``:

- :class:`NestedSolver` for scalar random intercepts where each grouping factor is nested in the
  next (``(1|item) + (1|item:run)``, ``(1|g)``). Eliminating the finest factor first leaves a
  diagonal Schur complement, so every operation is O(n) with no fill-in.
- :class:`DenseSolver` for the general case (crossed factors, random slopes), a dense Cholesky
  factor of ``H`` (q x q).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.linalg as sla
import scipy.sparse as sp
from scipy.special import expit

from ..formula import RandomTerm


def _indicator(idx: np.ndarray, nl: int) -> sp.csr_matrix:
    n = idx.size
    return sp.csr_matrix((np.ones(n), (idx, np.arange(n))), shape=(nl, n))


class NestedSolver:
    """Scalar intercept terms, each nested in the next: fine (``f``) and optional coarse (``c``).

    ``H = [[Df, C], [C', Dc]]`` with ``Df``, ``Dc`` diagonal and one non-zero per row of ``C``
    (each fine level sits in one coarse level), so the Schur complement
    ``Dc - C' Df^-1 C`` is diagonal.
    """

    def __init__(self, terms: list[RandomTerm]):
        self.fi = terms[0].index
        self.J = terms[0].nl
        self.two = len(terms) == 2
        self.Ef = _indicator(self.fi, self.J)
        if self.two:
            self.ci = terms[1].index
            self.K = terms[1].nl
            parent = np.zeros(self.J, dtype=np.int64)
            parent[self.fi] = self.ci
            self.parent = parent
            self.Pc = _indicator(parent, self.K)
        else:
            self.K = 0
        self.q = self.J + self.K

    @staticmethod
    def applies(terms: list[RandomTerm]) -> bool:
        if not 1 <= len(terms) <= 2 or any(t.nc != 1 or t.expr.strip() != "1" for t in terms):
            return False
        if len(terms) == 1:
            return True
        f, c = terms[0].index, terms[1].index
        parent = np.full(terms[0].nl, -1, dtype=np.int64)
        parent[f] = c
        return bool((parent[f] == c).all())

    def set_theta(self, theta: np.ndarray) -> None:
        self.tf = float(theta[0])
        self.tc = float(theta[1]) if self.two else 0.0

    def zl(self, u: np.ndarray) -> np.ndarray:
        out = self.tf * u[: self.J][self.fi]
        if self.two:
            out += self.tc * u[self.J:][self.ci]
        return out

    def zlt(self, r: np.ndarray) -> np.ndarray:
        sf = np.bincount(self.fi, r, self.J)
        if not self.two:
            return self.tf * sf
        return np.concatenate([self.tf * sf, self.tc * np.bincount(self.parent, sf, self.K)])

    def zlt_mat(self, R: np.ndarray) -> np.ndarray:
        sf = self.Ef @ R
        if not self.two:
            return self.tf * sf
        return np.vstack([self.tf * sf, self.tc * (self.Pc @ sf)])

    def factor(self, w: np.ndarray) -> float:
        sf = np.bincount(self.fi, w, self.J)
        self.Df = 1.0 + self.tf**2 * sf
        if not self.two:
            return float(np.log(self.Df).sum())
        self.C = self.tf * self.tc * sf
        self.CD = self.C / self.Df
        sc = np.bincount(self.parent, sf, self.K)
        self.S = 1.0 + self.tc**2 * sc - np.bincount(self.parent, self.C * self.CD, self.K)
        return float(np.log(self.Df).sum() + np.log(self.S).sum())

    def solve(self, r: np.ndarray) -> np.ndarray:
        if not self.two:
            return r / (self.Df if r.ndim == 1 else self.Df[:, None])
        rf, rc = r[: self.J], r[self.J:]
        if r.ndim == 1:
            xc = (rc - np.bincount(self.parent, self.CD * rf, self.K)) / self.S
            xf = (rf - self.C * xc[self.parent]) / self.Df
            return np.concatenate([xf, xc])
        xc = (rc - self.Pc @ (self.CD[:, None] * rf)) / self.S[:, None]
        xf = (rf - self.C[:, None] * xc[self.parent]) / self.Df[:, None]
        return np.vstack([xf, xc])

    def leverage(self) -> np.ndarray:
        """``h_i = a_i' H^-1 a_i`` for each row (``a_i`` the row of ``Z Lambda``)."""
        if not self.two:
            return (self.tf**2 / self.Df)[self.fi]
        Sp = self.S[self.parent]
        hff = 1.0 / self.Df + self.CD**2 / Sp
        hfc = -self.CD / Sp
        hj = self.tf**2 * hff + 2 * self.tf * self.tc * hfc + self.tc**2 / Sp
        return hj[self.fi]

    def cond_var(self) -> np.ndarray:
        """Diagonal of ``H^-1`` (the conditional variances of the spherical modes)."""
        if not self.two:
            return 1.0 / self.Df
        Sp = self.S[self.parent]
        return np.concatenate([1.0 / self.Df + self.CD**2 / Sp, 1.0 / self.S])


class DenseSolver:
    """General terms: ``A = Z Lambda`` as a sparse matrix with a fixed pattern, ``H`` dense."""

    def __init__(self, terms: list[RandomTerm]):
        n = terms[0].index.size
        cols, self.blocks = [], []
        off, toff = 0, 0
        for t in terms:
            for c in range(t.nc):
                cols.append(off + t.index * t.nc + c)
            self.blocks.append((t, toff))
            off += t.nl * t.nc
            toff += t.ntheta
        self.q = off
        self.k = len(cols)
        self.cols = np.stack(cols, axis=1)  # n x k
        self.n = n
        self.A = sp.csr_matrix((np.ones(n * self.k), self.cols.ravel(),
                                np.arange(0, n * self.k + 1, self.k)), shape=(n, self.q))
        self.AT = None

    @staticmethod
    def lambdas_for(terms: list[RandomTerm], theta: np.ndarray) -> list[np.ndarray]:
        """Lower-triangular Lambda block of each term (theta column-major, as lme4)."""
        out, pos = [], 0
        for t in terms:
            L = np.zeros((t.nc, t.nc))
            for j in range(t.nc):
                for i in range(j, t.nc):
                    L[i, j] = theta[pos]
                    pos += 1
            out.append(L)
        return out

    def lambdas(self, theta: np.ndarray) -> list[np.ndarray]:
        return self.lambdas_for([t for t, _ in self.blocks], theta)

    def set_theta(self, theta: np.ndarray) -> None:
        vals = []
        for (t, _), L in zip(self.blocks, self.lambdas(theta)):
            vals.append(t.Z @ L)  # row entries (z_i' Lambda_t)_c
        self.V = np.concatenate(vals, axis=1)
        self.A.data = self.V.ravel().copy()
        self.AT = self.A.T.tocsr()

    def zl(self, u: np.ndarray) -> np.ndarray:
        return self.A @ u

    def zlt(self, r: np.ndarray) -> np.ndarray:
        return self.AT @ r

    def zlt_mat(self, R: np.ndarray) -> np.ndarray:
        return np.asarray(self.AT @ R)

    def factor(self, w: np.ndarray) -> float:
        H = (self.AT @ self.A.multiply(w[:, None]).tocsr()).toarray()
        H[np.diag_indices_from(H)] += 1.0
        self.cf = sla.cho_factor(H, lower=True, check_finite=False)
        return float(2.0 * np.log(np.diag(self.cf[0])).sum())

    def solve(self, r: np.ndarray) -> np.ndarray:
        return sla.cho_solve(self.cf, r, check_finite=False)

    def hinv(self) -> np.ndarray:
        return sla.cho_solve(self.cf, np.eye(self.q), check_finite=False)

    def leverage(self) -> np.ndarray:
        Hi = self.hinv()
        sub = Hi[self.cols[:, :, None], self.cols[:, None, :]]  # n x k x k
        return np.einsum("na,nab,nb->n", self.V, sub, self.V)

    def cond_var(self) -> np.ndarray:
        return np.diag(self.hinv()).copy()


def make_solver(terms: list[RandomTerm]) -> NestedSolver | DenseSolver:
    """The fastest exact solver for this random-effects structure."""
    return NestedSolver(terms) if NestedSolver.applies(terms) else DenseSolver(terms)


def softplus(x: np.ndarray) -> np.ndarray:
    return np.logaddexp(0.0, x)


@dataclass
class Evaluation:
    """State at the conditional mode for one ``(theta, beta)``."""

    theta: np.ndarray
    beta: np.ndarray
    u: np.ndarray
    eta: np.ndarray
    mu: np.ndarray
    w: np.ndarray
    logdet: float
    pdev: float  # ||u||^2 + D(y, eta)
    iterations: int

    @property
    def dev(self) -> float:
        return self.logdet + self.pdev


class LaplaceDeviance:
    """lme4's Laplace deviance of a binomial-logit GLMM on pooled k-of-m rows.

    Parameters
    ----------
    X : (n, p) array
    k, m : (n,) arrays of successes and trials
    terms : random-effects terms (lme4 order)
    """

    def __init__(self, X: np.ndarray, k: np.ndarray, m: np.ndarray, terms: list[RandomTerm],
                 solver: NestedSolver | DenseSolver | None = None):
        self.X, self.k, self.m = X, k, m
        self.solver = solver if solver is not None else make_solver(terms)
        self.q = self.solver.q
        self.p = X.shape[1]
        self.evaluations = 0
        self.pirls_iterations = 0
        self._theta = None

    def _set_theta(self, theta: np.ndarray) -> None:
        if self._theta is None or not np.array_equal(theta, self._theta):
            self.solver.set_theta(theta)
            self._theta = np.array(theta, dtype=float)

    def kernel(self, eta: np.ndarray) -> float:
        return 2.0 * float(np.dot(self.m, softplus(eta)) - np.dot(self.k, eta))

    def pirls(self, theta: np.ndarray, beta: np.ndarray, u0: np.ndarray | None = None,
              tol: float = 1e-15, maxit: int = 60) -> Evaluation:
        """Conditional mode of ``u`` at ``(theta, beta)`` by Newton steps with step halving."""
        self._set_theta(theta)
        s = self.solver
        self.evaluations += 1
        eta0 = self.X @ beta
        u = np.zeros(self.q) if u0 is None else u0
        eta = eta0 + s.zl(u)
        pdev = self.kernel(eta) + float(u @ u)
        it, converged = 0, False
        for it in range(1, maxit + 1):
            mu = expit(eta)
            w = self.m * mu * (1.0 - mu)
            logdet = s.factor(w)
            grad = s.zlt(self.k - self.m * mu) - u
            delta = s.solve(grad)
            dec = float(grad @ delta)
            if dec < tol * (1.0 + abs(pdev)):
                converged = True
                break
            zd = s.zl(delta)
            step = 1.0
            for _ in range(30):
                un = u + step * delta
                etan = eta + step * zd
                pn = self.kernel(etan) + float(un @ un)
                if pn <= pdev + 1e-12 * abs(pdev):
                    break
                step *= 0.5
            u, eta, pdev = un, etan, pn
        self.pirls_iterations += it
        if not converged:  # factor at the final u
            mu = expit(eta)
            w = self.m * mu * (1.0 - mu)
            logdet = s.factor(w)
        ev = Evaluation(np.array(theta, float), np.array(beta, float), u, eta, mu, w, logdet,
                        pdev, it)
        self._last = ev
        return ev

    def dev(self, theta: np.ndarray, beta: np.ndarray, u0: np.ndarray | None = None) -> float:
        return self.pirls(theta, beta, u0).dev

    def rx(self, ev: Evaluation) -> np.ndarray:
        """``X'WX - X'WA H^-1 A'WX`` at the mode: half the Gauss-Newton Hessian over beta."""
        self._refresh(ev)
        WX = ev.w[:, None] * self.X
        B = self.solver.zlt_mat(WX)
        return self.X.T @ WX - B.T @ self.solver.solve(B)

    def _refresh(self, ev: Evaluation) -> None:
        # the solver holds the factor of the last PIRLS call; refactor if ev is older
        if self._last is not ev:
            self._set_theta(ev.theta)
            self.solver.factor(ev.w)
            self._last = ev

    _last: Evaluation | None = None

    def grad_beta(self, ev: Evaluation) -> np.ndarray:
        """Exact gradient of the Laplace deviance over beta (u~ follows beta).

        ``d dev/d beta = X'(-2 r + g - W A H^-1 A' g)``, ``g_i = h_i dw_i/deta_i``, ``h`` the
        leverages ``a_i' H^-1 a_i`` (from differentiating ``log det H`` through ``W`` and ``u~``).
        """
        self._refresh(ev)
        s = self.solver
        r = self.k - self.m * ev.mu
        g = s.leverage() * ev.w * (1.0 - 2.0 * ev.mu)
        v = s.zl(s.solve(s.zlt(g)))
        return self.X.T @ (-2.0 * r + g - ev.w * v)

    def du_dbeta(self, ev: Evaluation, dbeta: np.ndarray) -> np.ndarray:
        """First-order change of ``u~`` for a step ``dbeta`` (warm start of the next PIRLS)."""
        self._refresh(ev)
        s = self.solver
        return -s.solve(s.zlt(ev.w * (self.X @ dbeta)))
