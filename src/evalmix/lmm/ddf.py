"""Denominator degrees of freedom of a linear mixed model: Satterthwaite and Kenward-Roger.

Satterthwaite follows lmerTest (Kuznetsova, Brockhoff & Christensen 2017): the asymptotic
covariance of the variance parameters ``(theta, sigma)`` is twice the inverse Hessian of the
deviance (``devfun_vp``), and the gradient of ``L V(theta, sigma) L'`` comes from the Jacobian of
``vcov(beta)``; both by Richardson-extrapolated central differences, as numDeriv computes them.
F tests follow lmerTest's ``contestMD`` (one Satterthwaite df per eigen-direction of ``L V L'``,
combined by ``get_Fstat_ddf``).

Kenward-Roger follows pbkrtest (Halekoh & Hojsgaard 2014): ``vcovAdj`` (the adjusted covariance
``Phi + 2 Phi U Phi``) and ``Lb_ddf``/``.KR_adjust`` (the df and F scaling), with every ``n x n``
product of pbkrtest rewritten through the random-effects space (``Sigma^-1 = (I - Z M Z') /
sigma^2``, ``M = Lambda (Lambda' Z'Z Lambda + I)^-1 Lambda'``), so it costs O(q^3) instead of
O(n^3).
"""

from __future__ import annotations

import copy
from collections.abc import Callable

import numpy as np
from scipy import sparse, stats

from ..mixed.linalg import DenseCholesky
from .deviance import ProfiledDeviance

__all__ = ["Satterthwaite", "KenwardRoger", "DDF_METHODS", "normalise_ddf"]

DDF_METHODS = ("Satterthwaite", "Kenward-Roger")
#: Largest number of random effects for the dense Kenward-Roger algebra (q x q matrices).
KR_Q_MAX = 4000


def normalise_ddf(ddf: str | None) -> str:
    """``"Satterthwaite"`` or ``"Kenward-Roger"`` from any spelling lmerTest or emmeans accepts."""
    if ddf is None:
        return "Satterthwaite"
    key = str(ddf).lower().replace("_", "-").replace(" ", "-")
    if key in ("satterthwaite", "satterth", "s"):
        return "Satterthwaite"
    if key in ("kenward-roger", "kenwardroger", "kr", "k-r"):
        return "Kenward-Roger"
    raise ValueError(f"ddf={ddf!r} is not one of 'Satterthwaite' or 'Kenward-Roger'")


# -- numDeriv's Richardson extrapolation ------------------------------------------------------------
_D, _EPS, _R = 1e-4, 1e-4, 4


def _steps(x: np.ndarray) -> np.ndarray:
    return np.abs(_D * x) + _EPS * (np.abs(x) < 1.8e-5)


def _richardson(values: list[np.ndarray]) -> np.ndarray:
    """Extrapolate central differences at h, h/2, h/4... (error O(h^2) per level)."""
    a = [np.asarray(v, dtype=float) for v in values]
    for m in range(1, len(a)):
        a = [(4.0 ** m * a[i + 1] - a[i]) / (4.0 ** m - 1.0) for i in range(len(a) - 1)]
    return a[0]


def jacobian(f: Callable[[np.ndarray], np.ndarray], x: np.ndarray) -> np.ndarray:
    """Jacobian of a vector function (numDeriv's ``jacobian``, method Richardson)."""
    x = np.asarray(x, dtype=float)
    h0 = _steps(x)
    cols = []
    for i in range(x.size):
        diffs = []
        for r in range(_R):
            h = h0[i] / 2.0 ** r
            e = np.zeros_like(x)
            e[i] = h
            diffs.append((np.asarray(f(x + e)) - np.asarray(f(x - e))) / (2 * h))
        cols.append(_richardson(diffs))
    return np.column_stack(cols)


def hessian(f: Callable[[np.ndarray], float], x: np.ndarray) -> np.ndarray:
    """Hessian of a scalar function as numDeriv's ``hessian`` (``genD``: relative steps of 0.1
    halved four times, Richardson-extrapolated), which lmerTest uses for ``vcov_varpar``."""
    x = np.asarray(x, dtype=float)
    n = x.size
    h0 = np.abs(0.1 * x) + _EPS * (np.abs(x) < 1.8e-5)
    f0 = f(x)
    Hd = np.zeros(n)
    for i in range(n):
        vals = []
        for k in range(_R):
            h = h0 / 2.0 ** k
            e = np.zeros(n)
            e[i] = h[i]
            vals.append((f(x + e) - 2 * f0 + f(x - e)) / h[i] ** 2)
        Hd[i] = float(_richardson(vals))
    H = np.diag(Hd)
    for i in range(n):
        for j in range(i):
            vals = []
            for k in range(_R):
                h = h0 / 2.0 ** k
                e = np.zeros(n)
                e[i], e[j] = h[i], h[j]
                vals.append((f(x + e) - 2 * f0 + f(x - e) - Hd[i] * h[i] ** 2 - Hd[j] * h[j] ** 2)
                            / (2 * h[i] * h[j]))
            H[i, j] = H[j, i] = float(_richardson(vals))
    return H


def _fstat_ddf(nu: np.ndarray, tol: float = 1e-8) -> float:
    """lmerTest's ``get_Fstat_ddf``: one df for an F test from the df of its directions."""
    if nu.size == 1:
        return float(nu[0])
    if np.all(np.abs(nu - nu[0]) < tol):
        return float(nu[0])
    if np.any(nu <= 2):
        return 2.0
    E = float(np.sum(nu / (nu - 2)))
    return 2 * E / (E - nu.size)


class Satterthwaite:
    """lmerTest's Satterthwaite approximation at a fit's variance parameters."""

    name = "Satterthwaite"

    def __init__(self, dev: ProfiledDeviance, theta: np.ndarray, sigma: float, reml: bool,
                 vcov: np.ndarray):
        self.varpar = np.append(np.asarray(theta, dtype=float), sigma)
        self.vcov = np.asarray(vcov, dtype=float)
        p = self.vcov.shape[0]
        H = hessian(lambda v: dev.devfun_vp(v, reml), self.varpar)
        w = np.linalg.eigvalsh((H + H.T) / 2)
        # lmerTest warns and carries on when the Hessian is not positive definite
        self.hessian_ok = bool(np.all(w > 1e-6))
        self.vcov_varpar = 2 * np.linalg.pinv(H) if not self.hessian_ok else 2 * np.linalg.inv(H)
        J = jacobian(lambda v: dev.vcov_beta(v).ravel(), self.varpar)
        self.jac = [J[:, k].reshape(p, p) for k in range(J.shape[1])]

    def df(self, L: np.ndarray) -> np.ndarray:
        """Satterthwaite df of each row of ``L`` (lmerTest's ``contest1D``)."""
        L = np.atleast_2d(np.asarray(L, dtype=float))
        out = np.full(len(L), np.nan)
        for r, row in enumerate(L):
            if not np.all(np.isfinite(row)):
                continue
            var = float(row @ self.vcov @ row)
            g = np.array([row @ J @ row for J in self.jac])
            denom = float(g @ self.vcov_varpar @ g)
            out[r] = 2 * var ** 2 / denom if denom > 0 else np.inf
        return out

    def f_test(self, L: np.ndarray, beta: np.ndarray) -> tuple[float, int, float, float]:
        """F, numerator df, denominator df and p of ``L beta = 0`` (lmerTest's ``contestMD``)."""
        L = np.atleast_2d(np.asarray(L, dtype=float))
        VL = L @ self.vcov @ L.T
        d, P = np.linalg.eigh((VL + VL.T) / 2)
        order = np.argsort(d)[::-1]
        d, P = d[order], P[:, order]
        tol = max(np.sqrt(np.finfo(float).eps) * d[0], 0.0)
        q = int(np.sum(d > tol))
        if q == 0:
            return float("nan"), 0, float("nan"), float("nan")
        PtL = (P.T @ L)[:q]
        t2 = (PtL @ beta) ** 2 / d[:q]
        F = float(np.sum(t2) / q)
        nu = self.df(PtL)
        ddf = _fstat_ddf(nu)
        return F, q, ddf, float(stats.f.sf(F, q, ddf))


class KenwardRoger:
    """pbkrtest's Kenward-Roger adjustment (REML fits)."""

    name = "Kenward-Roger"

    def __init__(self, dev: ProfiledDeviance, theta: np.ndarray, sigma: float, vcov: np.ndarray):
        design = dev.design
        q = dev.q
        if q > KR_Q_MAX:
            raise ValueError(f"Kenward-Roger needs dense {q} x {q} matrices of the random effects "
                             f"(limit {KR_Q_MAX}); use ddf='Satterthwaite' for a model this size")
        Phi = np.asarray(vcov, dtype=float)
        s2 = float(sigma) ** 2
        X = design.X
        Z = design.Z
        K = dev.ZtZ.toarray()
        Lam = design.lambda_(theta).toarray()
        A = Lam.T @ K @ Lam + np.eye(q)
        M0 = Lam @ DenseCholesky(A).solve(Lam.T)  # q x q

        def S(V: np.ndarray) -> np.ndarray:  # Sigma^-1 V for an n x k matrix V
            return (V - Z @ (M0 @ np.asarray(Z.T @ V))) / s2

        # the variance parameters: each covariance element of each term, then the residual
        offsets = design.term_offsets()
        E_list: list[sparse.csr_matrix] = []
        for t, off in zip(design.terms, offsets):
            base = off + np.arange(t.nl) * t.nc
            for a in range(t.nc):
                for b in range(a, t.nc):
                    rows = np.concatenate([base + a, base + b]) if a != b else base + a
                    cols = np.concatenate([base + b, base + a]) if a != b else base + a
                    E_list.append(sparse.csr_matrix((np.ones(rows.size), (rows, cols)),
                                                    shape=(q, q)))
        ng = len(E_list) + 1
        TT = S(X)  # Sigma^-1 X
        ZtTT = np.asarray(Z.T @ TT)
        # OO_i = G_i Sigma^-1 X: Z E_i Z' TT for the random parameters, TT for the residual
        OO = [np.asarray(Z @ (E @ ZtTT)) for E in E_list] + [TT]
        SOO = [S(O) for O in OO]
        PP = [-(O.T @ TT) for O in OO]
        PP = [(P + P.T) / 2 for P in PP]
        QQ = {(i, j): OO[i].T @ SOO[j] for i in range(ng) for j in range(i, ng)}
        # traces tr(G_i S G_j S) through W = Z'SZ (q x q); residual: F = Z'S^2Z, tr(S^2)
        W = (K - K @ M0 @ K) / s2
        KM = K @ M0
        F2 = (K - 2 * KM @ K + KM @ KM @ K) / s2 ** 2
        trS2 = (X.shape[0] - 2 * np.trace(KM) + np.sum(KM * KM.T)) / s2 ** 2
        EW = [np.asarray(E @ W) for E in E_list]
        Kt = np.zeros((ng, ng))
        for i in range(ng - 1):
            for j in range(i, ng - 1):
                Kt[i, j] = Kt[j, i] = float(np.sum(EW[i] * EW[j].T))
            Kt[i, ng - 1] = Kt[ng - 1, i] = float(np.sum(E_list[i].multiply(F2)))
        Kt[ng - 1, ng - 1] = trS2
        IE2 = np.zeros((ng, ng))
        for i in range(ng):
            PhiPi = Phi @ PP[i]
            for j in range(i, ng):
                IE2[i, j] = IE2[j, i] = (Kt[i, j] - 2 * np.sum(Phi * QQ[(i, j)])
                                         + np.sum(PhiPi * (PP[j] @ Phi)))
        cond = float(np.min(np.abs(np.linalg.eigvalsh(IE2))))
        WW = 2 * (np.linalg.inv(IE2) if cond > 1e-10 else np.linalg.pinv(IE2))
        WW = (WW + WW.T) / 2
        p = Phi.shape[0]
        UU = np.zeros((p, p))
        for i in range(ng - 1):
            for j in range(i + 1, ng):
                UU += WW[i, j] * (QQ[(i, j)] - PP[i] @ Phi @ PP[j])
        UU = UU + UU.T
        for i in range(ng):
            UU += WW[i, i] * (QQ[(i, i)] - PP[i] @ Phi @ PP[i])
        self.phi = Phi
        self.vcov = Phi + 2 * Phi @ UU @ Phi
        self.P = PP
        self.W = WW
        self.condition = cond

    def with_unadjusted(self, phi: np.ndarray) -> KenwardRoger:
        """The same adjustment with ``phi`` as the unadjusted covariance of its df (pbkrtest's
        ``Lb_ddf(L, V0 = phi, Vadj)``): emmeans gives an ML fit the df of the ML covariance with
        the ``P`` and ``W`` of the REML refit that ``vcovAdj`` makes."""
        out = copy.copy(self)
        out.phi = np.asarray(phi, dtype=float)
        return out

    def _adjust(self, L: np.ndarray) -> tuple[float, float, float]:
        """``.KR_adjust``'s df2, F scaling and rank for the rows of ``L``."""
        Phi = self.phi
        VL = L @ Phi @ L.T
        Theta = L.T @ np.linalg.solve(VL, L)
        TP = Theta @ Phi
        U = [TP @ P @ Phi for P in self.P]
        A1 = A2 = 0.0
        ng = len(U)
        for i in range(ng):
            for j in range(i, ng):
                e = 1.0 if i == j else 2.0
                A1 += e * self.W[i, j] * np.trace(U[i]) * np.trace(U[j])
                A2 += e * self.W[i, j] * float(np.sum(U[i] * U[j].T))
        q = float(np.linalg.matrix_rank(L))
        B = (A1 + 6 * A2) / (2 * q)
        g = ((q + 1) * A1 - (q + 4) * A2) / ((q + 2) * A2)
        den = 3 * q + 2 * (1 - g)
        c1, c2, c3 = g / den, (q - g) / den, (q + 2 - g) / den
        V0 = 1 + c1 * B
        V1 = 1 - c2 * B
        V2 = 1 - c3 * B
        V0 = 0.0 if abs(V0) < 1e-10 else V0
        ratio = (1 - A2 / q) / V1 if abs(V1) > 1e-10 else 0.0  # pbkrtest's .divZero
        rho = ratio ** 2 * V0 / V2 / q
        df2 = 4 + (q + 2) / (q * rho - 1)
        scaling = 1.0 if abs(df2 - 2) < 0.01 else df2 * (1 - A2 / q) / (df2 - 2)
        return float(df2), float(scaling), q

    def df(self, L: np.ndarray) -> np.ndarray:
        """Kenward-Roger df of each row of ``L`` (pbkrtest's ``Lb_ddf``)."""
        L = np.atleast_2d(np.asarray(L, dtype=float))
        out = np.full(len(L), np.nan)
        for r, row in enumerate(L):
            if np.all(np.isfinite(row)) and np.any(row != 0):
                out[r] = self._adjust(row[None, :])[0]
        return out

    def f_test(self, L: np.ndarray, beta: np.ndarray) -> tuple[float, int, float, float]:
        """Scaled F, numerator df, denominator df and p (pbkrtest's ``KRmodcomp``, as
        lmerTest's ``anova(ddf = "Kenward-Roger")`` reports it)."""
        L = np.atleast_2d(np.asarray(L, dtype=float))
        df2, scaling, q = self._adjust(L)
        Lb = L @ beta
        FU = float(Lb @ np.linalg.solve(L @ self.vcov @ L.T, Lb)) / q
        F = scaling * FU
        return F, int(q), df2, float(stats.f.sf(F, q, df2))
