"""lme4's profiled deviance of a linear mixed model (Bates et al. 2015, JSS 67(1), section 3).

For relative covariance factors theta, with ``Lambda`` from the random terms, the penalised least
squares problem is solved through ``A = Lambda' Z' Z Lambda + I`` (``L L'`` in the paper):

- ``b = Lambda' Z' y``, ``B = Lambda' Z' X``; ``cu' cu = b' A^-1 b``, ``RZX' RZX = B' A^-1 B``;
- ``RX' RX = X' X - B' A^-1 B``; ``beta = (RX' RX)^-1 (X' y - B' A^-1 b)``;
- the penalised residual sum of squares ``r2 = y' y - cu' cu - (X' y - B' A^-1 b)' beta``;
- ML: ``log|A| + n (1 + log(2 pi r2 / n))``; REML: ``log|A| + log|RX' RX| + (n - p)(1 + log(2 pi r2 / (n - p)))``.

Only products with ``A^-1`` and ``log|A|`` are needed, so ``A`` is factored by its structure:
``(1|item)`` alone is a diagonal; ``(1|item) + (1|item:run)`` goes through the diagonal Schur
complement over ``item:run`` (O(q)); other scalar intercepts (``(1|item) + (1|model)``) through
:class:`evalmix.mixed.intercepts.InterceptHessian` (the first term's diagonal block and a dense Schur
complement of the others); other designs densely (Cholesky) when ``q`` is moderate and otherwise
by SuperLU with a minimum-degree ordering.

The gradient in theta is exact (:meth:`ProfiledDeviance.value_and_gradient`).  With ``V = I +
Z Lambda Lambda' Z'`` (the marginal covariance over sigma^2), ``P = V^-1 - V^-1 X (X' V^-1 X)^-1
X' V^-1`` (REML; ``V^-1`` for ML) and ``dV = Z (dLambda Lambda' + Lambda dLambda') Z'``, the
criterion's derivative is ``tr(P dV) - (dof / r2) r' Z (dLambda Lambda' + Lambda dLambda') Z' r``
(``dof = n - p`` or ``n``; ``r = P y`` the residual ``y - X beta - Z Lambda u``).  Everything
reduces to the random-effects space: ``Lambda' Z' r = u``, ``Lambda' Z' V^-1 Z = A^-1 Lambda'
Z'Z`` and ``Lambda' Z' V^-1 X = A^-1 B``, so the derivative along the entries of ``Lambda``
holding ``theta_k`` is

    ``2 sum M[c, r] - 2 (dof / r2) sum (Z' r)[r] u[c]``, with
    ``M = A^-1 (Lambda' Z'Z - B (RX' RX)^-1 G')`` and ``G = Z' V^-1 X = Z'X - Z'Z Lambda A^-1 B``

(the second term of ``M`` only for REML), summed over the stored entries ``(r, c)``.  Only the
entries of ``M`` on Lambda's block diagonal are formed: from the explicit inverse of the dense
Cholesky factor, in O(q) from the 2 x 2 diagonal blocks of the nested factorisation, or from the
entries of ``A^-1`` at each row's levels (scalar intercepts: the sum of ``M[c, c]`` over term k
is the sum over rows of ``A^-1[k, l] theta_l`` at the row's levels).  The sparse-LU path has no
cheap selected inverse and keeps finite differences (``None``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy import linalg, sparse

from ..mixed import intercepts
from ..mixed.linalg import DenseCholesky, NestedSchur, SparseCholesky
from .design import LmmDesign

__all__ = ["PlsState", "ProfiledDeviance"]

#: Largest q factored densely: beyond it a sparse LU is faster (measured on nested designs).
DENSE_Q_MAX = 600
#: Scalar intercepts that are not nested go through :mod:`evalmix.mixed.intercepts` (off: the dense or
#: sparse factorisation, as other designs; the tests compare them).
SCALAR_INTERCEPTS = True


@dataclass(frozen=True)
class PlsState:
    """The solution of the penalised least squares problem at one theta."""

    theta: np.ndarray
    ldL2: float  # log |Lambda' Z' Z Lambda + I|
    ldRX2: float  # log |RX' RX|
    pwrss: float  # penalised residual sum of squares
    beta: np.ndarray
    u: np.ndarray  # spherical random effects
    XtVX: np.ndarray  # RX' RX: vcov(beta) = sigma^2 XtVX^-1


@dataclass(frozen=True)
class _Nested:
    """One solve of the nested path, for ``R = Lambda' [Z'y Z'X]``: ``y1 = A11^-1 R1`` (its
    inner rows), the outer rows ``x2`` of ``A^-1 R`` (its inner rows are
    ``y1 - A11^-1 A12 x2``) and the factorisation of ``A``."""

    y1: np.ndarray
    x2: np.ndarray
    factor: NestedSchur


@dataclass(frozen=True)
class _Factor:
    """What the gradient reads from one solve: ``A^-1 B`` and the Cholesky factor of ``A``
    (dense path), or the nested path's pieces."""

    AB: np.ndarray | None = None
    chol: np.ndarray | None = None
    LtW: np.ndarray | None = None  # Lambda' Z'Z (dense path)
    nested: _Nested | None = None
    rows_inv: Callable[[], np.ndarray] | None = None  # A^-1 at each row's levels (scalar intercepts)
    single: np.ndarray | None = None  # A^-1's diagonal (one scalar intercept)


def _nested_intercepts(design: LmmDesign) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """For ``(1|outer:inner) + (1|outer)`` (intercepts only, every inner level inside one outer
    level): the rows per inner level, per outer level and the outer level of each inner level."""
    terms = design.terms
    if len(terms) != 2 or any(t.nc != 1 or t.spec is not None for t in terms):
        return None
    inner, outer = terms
    n1, n2 = inner.nl, outer.nl
    m = np.zeros(n1, dtype=np.int64)
    m[inner.index] = outer.index  # the outer level of some row of each inner level
    if not np.array_equal(m[inner.index], outer.index):
        return None  # an inner level meets several outer levels: crossed, not nested
    d1 = np.bincount(inner.index, minlength=n1).astype(float)
    d2 = np.bincount(outer.index, minlength=n2).astype(float)
    return d1, d2, m


class ProfiledDeviance:
    """The deviance of a linear mixed model as a function of theta, beta and sigma profiled out.

    Examples
    --------
    >>> import pandas as pd
    >>> from evalmix.lmm.design import build_lmm_design
    >>> d = pd.DataFrame({"y": [1.0, 2.0, 3.0, 2.5, 4.0, 3.5], "g": list("aabbcc")})
    >>> dev = ProfiledDeviance(build_lmm_design("y ~ 1 + (1|g)", d))
    >>> st = dev.solve([1.0])  # theta = 1: the item SD equals the residual SD
    >>> round(dev.sigma(st, reml=True), 4), st.beta.round(4).tolist()
    (0.6992, [2.6667])
    >>> dev([1.0], reml=True) == dev.deviance(st, reml=True)
    True
    """

    def __init__(self, design: LmmDesign):
        self.design = design
        X, y, Z = design.X, design.y, design.Z
        self.n, self.p = X.shape
        self.q = design.q
        self.ZtX = np.asarray(Z.T @ X)
        self.Zty = np.asarray(Z.T @ y).ravel()
        self.XtX = X.T @ X
        self.Xty = X.T @ y
        self.yty = float(y @ y)
        self.dense = self.q <= DENSE_Q_MAX
        self._lam_structure: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None
        self.nested = _nested_intercepts(design)
        # one scalar intercept, (1|item): A is diagonal, the rows of each level plus one
        self.single: np.ndarray | None = None
        if len(design.terms) == 1 and design.terms[0].nc == 1 and design.terms[0].spec is None:
            self.single = np.bincount(design.terms[0].index, minlength=self.q).astype(float)
        # other scalar intercepts ((1|item) + (1|model)) go through the Schur complement of the
        # first term's diagonal block (evalmix.intercepts): O(rows) plus a dense factor of the
        # smaller terms' effects, and A^-1 at each row's levels, hence the exact gradient
        self.intercepts: intercepts.InterceptHessian | None = None
        if SCALAR_INTERCEPTS and self.nested is None and self.single is None and all(
                t.nc == 1 and t.spec is None for t in design.terms):
            # A depends on the rows only through the cells (combinations of levels) and their
            # counts: the structure is built on the cells, weighted by their numbers of rows
            groups, nlevels = [t.index for t in design.terms], [t.nl for t in design.terms]
            self._cell_rows = np.ones(self.n)
            if float(np.prod(nlevels, dtype=float)) < 2.0 ** 62:
                code = np.zeros(self.n, dtype=np.int64)
                for g, k in zip(groups, nlevels):
                    code = code * k + g
                _, first, counts = np.unique(code, return_index=True, return_counts=True)
                groups = [g[first] for g in groups]
                self._cell_rows = counts.astype(float)
            ih = intercepts.InterceptHessian(groups, nlevels)
            # a dense Schur complement of more than DENSE_Q_MAX effects loses to the sparse LU
            # (item + model:item + item:run with 300 items: 0.2 s against 0.02 s an evaluation)
            if ih.nsd == 1 or (ih.qr <= min(intercepts.DENSE_MAX, DENSE_Q_MAX)
                               and ih.q1 * ih.qr <= intercepts.DENSE_B_MAX):
                self.intercepts = ih
        if self.nested is not None:
            q1 = design.terms[0].nl
            self._rhs = (np.column_stack([self.Zty[:q1], self.ZtX[:q1]]),
                         np.column_stack([self.Zty[q1:], self.ZtX[q1:]]))
            m = self.nested[2]
            # sums over the inner levels of each outer level, as one sparse product
            self._outer = sparse.csr_matrix((np.ones(q1), (m, np.arange(q1))),
                                            shape=(design.terms[1].nl, q1))
            self._osum: Callable[[np.ndarray], np.ndarray] = lambda v: self._outer @ v
        self.evaluations = 0

    # the general paths' matrices, formed on first use (the nested path needs none of them)
    @functools.cached_property
    def ZtZ(self) -> sparse.csc_matrix:
        """``Z'Z`` (sparse)."""
        Z = self.design.Z
        return sparse.csc_matrix(Z.T @ Z)

    @functools.cached_property
    def ZtZ_dense(self) -> np.ndarray:
        return self.ZtZ.toarray()

    @functools.cached_property
    def _term_of_column(self) -> np.ndarray:
        """The theta of each column of Z (scalar terms: theta k scales term k's columns)."""
        return np.repeat(np.arange(len(self.design.terms)), [t.nl for t in self.design.terms])

    @functools.cached_property
    def _eye(self) -> sparse.csc_matrix:
        return sparse.identity(self.q, format="csc")

    def lambda_(self, theta: np.ndarray) -> sparse.csc_matrix:
        """``Lambda`` at ``theta`` (the design's layout, built from the stored structure)."""
        if self._lam_structure is None:
            # Lambda's sparsity never changes: keep its structure and which theta fills each entry
            d = self.design
            template = sparse.csc_matrix((d.lambda_index + 1.0, (d.lambda_rows, d.lambda_cols)),
                                         shape=(self.q, self.q))
            template.sort_indices()
            self._lam_structure = (template.indices, template.indptr,
                                   template.data.astype(np.int64) - 1)
        indices, indptr, which = self._lam_structure
        return sparse.csc_matrix((np.asarray(theta, dtype=float)[which], indices, indptr),
                                 shape=(self.q, self.q))

    # -- the factorisation of A = Lambda' Z'Z Lambda + I
    def _pieces(self, theta: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray, float, np.ndarray, np.ndarray, _Factor | None]:
        """``b``, ``B``, ``log|A|``, ``A^-1 b``, ``A^-1 B`` and the factor (None: sparse LU)."""
        if self.single is not None:
            t = float(theta[0])
            ia = 1.0 / (t * t * self.single + 1.0)  # A^-1, diagonal
            b, B = t * self.Zty, t * self.ZtX
            AB = ia[:, None] * B
            return b, B, -float(np.sum(np.log(ia))), ia * b, AB, _Factor(AB, single=ia)
        if self.intercepts is not None:
            lam = np.asarray(theta, dtype=float)[self._term_of_column]
            f = self.intercepts.factor(lam, self._cell_rows)
            if f is None or f.rows_inv is None:
                raise np.linalg.LinAlgError("A is not positive definite")
            b, B = lam * self.Zty, lam[:, None] * self.ZtX
            sol = np.column_stack([f.solve(col) for col in np.column_stack([b, B]).T])
            # A^-1 at the rows' levels is formed by the gradient only (not for Satterthwaite's solves)
            return b, B, f.logdet, sol[:, 0], sol[:, 1:], _Factor(sol[:, 1:], rows_inv=f.rows_inv)
        Lam = self.lambda_(theta)
        if self.dense:
            # small q: dense Z'Z and LAPACK; Lambda stays sparse, so Lambda' Z'Z Lambda costs
            # O(q^2) per column of a term, not the O(q^3) of dense products
            b = np.asarray(Lam.T @ self.Zty).ravel()
            B = np.asarray(Lam.T @ self.ZtX)
            LtW = np.asarray(Lam.T @ self.ZtZ_dense)  # Lambda' Z'Z
            A = np.asarray(Lam.T @ LtW.T)
            A[np.diag_indices_from(A)] += 1.0
            chol = DenseCholesky(A, overwrite=True)
            sol = chol.solve(np.column_stack([b, B]))
            return b, B, chol.logdet, sol[:, 0], sol[:, 1:], _Factor(sol[:, 1:], chol=chol.L, LtW=LtW)
        b = np.asarray(Lam.T @ self.Zty).ravel()
        B = np.asarray(Lam.T @ self.ZtX)
        A = sparse.csc_matrix(Lam.T @ self.ZtZ @ Lam + self._eye)
        lu = SparseCholesky.of(A)
        if lu is None:
            raise np.linalg.LinAlgError("A is not positive definite")
        sol = lu.solve(np.column_stack([b, B]))
        return b, B, lu.logdet, sol[:, 0], sol[:, 1:], None

    def _nested_solve(self, theta: np.ndarray) -> tuple[np.ndarray, float, _Nested]:
        """(1|a:b) + (1|a): A is 2 x 2 blocks of diagonals, and so is its Schur complement over
        the inner factor (each inner level sits in one outer level,
        :class:`~evalmix.mixed.linalg.NestedSchur`): O(q) per evaluation.
        Returns ``R' A^-1 R`` (``R = Lambda' [Z'y Z'X]``), ``log|A|`` and the solve's pieces."""
        assert self.nested is not None
        d1, d2, m = self.nested
        t1, t2 = float(theta[0]), float(theta[1])
        rhs1, rhs2 = self._rhs
        # A12: inner level i meets outer level m[i] in d1[i] rows
        nest = NestedSchur(t1 * t1 * d1 + 1.0, t1 * t2 * d1, t2 * t2 * d2 + 1.0, m, self._outer)
        R1, R2 = t1 * rhs1, t2 * rhs2
        F = nest.reduce(R1, R2)
        x2 = F / nest.S[:, None]
        # R' A^-1 R = R1' A11^-1 R1 + F' S^-1 F, the inner rows of A^-1 R not formed
        y1 = R1 / nest.D1[:, None]
        return R1.T @ y1 + F.T @ x2, nest.logdet, _Nested(y1, x2, nest)

    def solve(self, theta: np.ndarray) -> PlsState:
        """Penalised least squares at ``theta``: beta, u, the log determinants and r2."""
        return self._solve(np.asarray(theta, dtype=float))[0]

    def _solve(self, theta: np.ndarray) -> tuple[PlsState, _Factor | None]:
        self.evaluations += 1
        if self.nested is not None:
            Q, ldL2, nest = self._nested_solve(theta)
            bAb, BAb, BAB = float(Q[0, 0]), Q[1:, 0], Q[1:, 1:]
        else:
            b, B, ldL2, Ab, AB, factor = self._pieces(theta)
            bAb, BAb, BAB = float(b @ Ab), B.T @ Ab, B.T @ AB
        XtVX = self.XtX - BAB
        XtVX = (XtVX + XtVX.T) / 2
        rhs = self.Xty - BAb
        cx = DenseCholesky(XtVX)
        beta = cx.solve(rhs)
        ldRX2 = cx.logdet
        pwrss = self.yty - bAb - float(rhs @ beta)
        if self.nested is not None:
            w = np.concatenate([[1.0], -beta])
            u2 = nest.x2 @ w
            u1 = nest.y1 @ w - nest.factor.cd * np.take(u2, self.nested[2])
            u, factor = np.concatenate([u1, u2]), _Factor(nested=nest)
        else:
            u = Ab - AB @ beta
        return PlsState(theta, ldL2, ldRX2, max(pwrss, 0.0), beta, u, XtVX), factor

    def deviance(self, st: PlsState, reml: bool) -> float:
        """The profiled criterion at a solved state: -2 log-likelihood (ML) or REMLcrit."""
        n, p = self.n, self.p
        if reml:
            nmp = n - p
            return float(st.ldL2 + st.ldRX2 + nmp * (1.0 + np.log(2.0 * np.pi * st.pwrss / nmp)))
        return float(st.ldL2 + n * (1.0 + np.log(2.0 * np.pi * st.pwrss / n)))

    def __call__(self, theta: np.ndarray, reml: bool = True) -> float:
        try:
            return float(self.deviance(self.solve(theta), reml))
        except (np.linalg.LinAlgError, linalg.LinAlgError, RuntimeError, ValueError):
            return np.inf

    @property
    def has_gradient(self) -> bool:
        """Whether :meth:`value_and_gradient` gives the exact gradient (the nested, dense and
        scalar-intercept factorisations; not the sparse LU)."""
        return (self.nested is not None or self.single is not None or self.dense
                or self.intercepts is not None)

    def value_and_gradient(self, theta: np.ndarray, reml: bool = True
                           ) -> tuple[float, np.ndarray | None]:
        """The criterion and its exact gradient in theta from one factorisation (the module's
        docstring has the algebra); the gradient is None on the sparse-LU path, and the value
        inf (gradient zero) where the criterion is undefined."""
        theta = np.asarray(theta, dtype=float)
        try:
            st, factor = self._solve(theta)
            value = self.deviance(st, reml)
        except (np.linalg.LinAlgError, linalg.LinAlgError, RuntimeError, ValueError):
            return np.inf, np.zeros_like(theta)
        if factor is None:
            return value, None
        return value, self._gradient(st, factor, reml)

    def _gradient(self, st: PlsState, factor: _Factor, reml: bool) -> np.ndarray:
        if factor.nested is not None:
            return self._nested_gradient(st, factor.nested, reml)
        if factor.rows_inv is not None:
            return self._intercepts_gradient(st, factor, reml)
        if factor.single is not None:
            return self._single_gradient(st, factor, reml)
        assert factor.chol is not None and factor.AB is not None and factor.LtW is not None
        d = self.design
        rows, cols, idx = d.lambda_rows, d.lambda_cols, d.lambda_index
        Lam = self.lambda_(st.theta)
        Zr = self.Zty - self.ZtX @ st.beta - self.ZtZ_dense @ (Lam @ st.u)  # Z' r
        Ainv = intercepts.cholesky_inverse(factor.chol)
        # (A^-1 Lambda' Z'Z)[c, r] at Lambda's entries (r, c)
        m_diag = np.einsum("ij,ji->i", Ainv[cols], factor.LtW[:, rows])
        if reml:
            G = self.ZtX - self.ZtZ_dense @ np.asarray(Lam @ factor.AB)
            H = factor.AB @ np.linalg.inv(st.XtVX)
            m_diag = m_diag - np.einsum("ij,ij->i", H[cols], G[rows])
        dof = self.n - self.p if reml else self.n
        terms = 2.0 * m_diag - (2.0 * dof / st.pwrss) * Zr[rows] * st.u[cols]
        return np.bincount(idx, terms, st.theta.size)

    def _single_gradient(self, st: PlsState, factor: _Factor, reml: bool) -> np.ndarray:
        """One scalar intercept: ``Z'Z`` is the diagonal of the level counts ``d``, so the sum of
        ``M[c, c]`` is ``theta sum(d / A)`` less, for REML, ``sum((RX'RX)^-1 * (A^-1 B)' G)``."""
        assert self.single is not None and factor.single is not None and factor.AB is not None
        d, t = self.single, float(st.theta[0])
        Zr = self.Zty - self.ZtX @ st.beta - t * d * st.u  # Z' r
        tr = t * float(d @ factor.single)
        if reml:
            G = self.ZtX - (t * d)[:, None] * factor.AB
            tr -= float(np.sum(np.linalg.inv(st.XtVX) * (factor.AB.T @ G)))
        k = 2.0 * (self.n - self.p if reml else self.n) / st.pwrss
        return np.array([2.0 * tr - k * float(Zr @ st.u)])

    def _intercepts_gradient(self, st: PlsState, factor: _Factor, reml: bool) -> np.ndarray:
        """The gradient for scalar intercepts (Lambda diagonal, theta k on term k): term k's sum
        of ``(A^-1 Lambda' Z'Z)[c, c]`` is the sum over rows of ``A^-1[k, l] theta_l`` at the
        row's levels (``rows_inv`` of each cell, times its rows); the REML term's is ``sum((RX'RX)^-1 * (A^-1 B)' G)`` over
        the term's rows of ``A^-1 B`` and ``G``."""
        assert factor.rows_inv is not None and factor.AB is not None
        theta = st.theta
        lam = theta[self._term_of_column]
        Zr = self.Zty - self.ZtX @ st.beta - self.ZtZ @ (lam * st.u)  # Z' r
        ri = factor.rows_inv()  # cells x terms x terms
        tr = self._cell_rows @ (ri.reshape(-1, theta.size) @ theta).reshape(ri.shape[:2])
        edges = np.cumsum([0] + [t.nl for t in self.design.terms])
        if reml:
            G = self.ZtX - self.ZtZ @ (lam[:, None] * factor.AB)
            Cinv = np.linalg.inv(st.XtVX)
            tr -= [float(np.sum(Cinv * (factor.AB[a:b].T @ G[a:b])))
                   for a, b in zip(edges[:-1], edges[1:])]
        zu = np.add.reduceat(Zr * st.u, edges[:-1])
        k = 2.0 * (self.n - self.p if reml else self.n) / st.pwrss
        return 2.0 * tr - k * zu

    def _nested_gradient(self, st: PlsState, nest: _Nested, reml: bool) -> np.ndarray:
        """The gradient on the nested path, each theta's sum over its block in closed form:
        ``A^-1``'s inner diagonal is ``1/A11 + A12^2 / (A11^2 S)``, its inner-outer entries
        ``-A12 / (A11 S)`` and its outer diagonal ``1/S``; column i of Z'Z holds ``d1[i]`` at
        rows i and m[i], column j ``d2[j]`` at row j and ``d1[i]`` at the rows of its inner
        levels; the REML term's block sum is ``sum((RX'RX)^-1 * (A^-1 B)' G)`` over the block's
        rows."""
        assert self.nested is not None
        d1, d2, m = self.nested
        t1, t2 = float(st.theta[0]), float(st.theta[1])
        rhs1, rhs2 = self._rhs
        q1 = rhs1.shape[0]
        x2 = nest.x2
        x2m = np.take(x2, m, axis=0)
        x1 = nest.y1 - nest.factor.cd[:, None] * x2m  # A^-1 R, inner rows
        # T = [Z'y Z'X] - Z'Z Lambda A^-1 R: T w is Z' r (w = (1, -beta)), its X columns G
        d1x1 = (t1 * d1)[:, None] * x1
        T1 = rhs1 - d1x1 - (t2 * d1)[:, None] * x2m
        T2 = rhs2 - (t2 * d2)[:, None] * x2 - self._osum(d1x1)
        h11, h12, _ = nest.factor.inverse_blocks()  # A^-1[i, i] and A^-1[i, m[i]]
        tr1 = t1 * float(d1 @ h11) + t2 * float(d1 @ h12)
        tr2 = t2 * float(d2 @ (1.0 / nest.factor.S)) + t1 * float(d1 @ h12)
        if reml:
            Cinv = np.linalg.inv(st.XtVX)
            tr1 -= float(np.sum(Cinv * (x1[:, 1:].T @ T1[:, 1:])))
            tr2 -= float(np.sum(Cinv * (x2[:, 1:].T @ T2[:, 1:])))
        w = np.concatenate([[1.0], -st.beta])
        k = 2.0 * (self.n - self.p if reml else self.n) / st.pwrss
        return np.array([2.0 * tr1 - k * float((T1 @ w) @ st.u[:q1]),
                         2.0 * tr2 - k * float((T2 @ w) @ st.u[q1:])])

    def sigma(self, st: PlsState, reml: bool) -> float:
        """The residual standard deviation at a solved state."""
        return float(np.sqrt(st.pwrss / (self.n - self.p if reml else self.n)))

    # -- lmerTest's functions of the variance parameters (theta, sigma), nothing profiled
    def devfun_vp(self, varpar: np.ndarray, reml: bool) -> float:
        """lmerTest's ``devfun_vp``: the deviance at ``varpar = (theta, sigma)``."""
        varpar = np.asarray(varpar, dtype=float)
        st = self.solve(varpar[:-1])
        s2 = float(varpar[-1]) ** 2
        dev = st.ldL2 + st.pwrss / s2 + self.n * np.log(2 * np.pi * s2)
        if reml:
            dev += st.ldRX2 - self.p * np.log(2 * np.pi * s2)
        return float(dev)

    def vcov_beta(self, varpar: np.ndarray) -> np.ndarray:
        """lmerTest's ``get_covbeta``: ``sigma^2 (RX' RX)^-1`` at ``varpar = (theta, sigma)``."""
        varpar = np.asarray(varpar, dtype=float)
        st = self.solve(varpar[:-1])
        return float(varpar[-1]) ** 2 * np.linalg.inv(st.XtVX)
