"""The Laplace deviance of a binomial GLMM, as lme4 defines it, and its pieces.

With ``eta = X beta + Z Lambda(theta) u`` and ``A = Z Lambda``, penalised iteratively reweighted
least squares (PIRLS) finds the conditional mode ``u~`` of ``u`` for fixed ``(theta, beta)``; the
Laplace deviance is ``log det(A' W A + I) + ||u~||^2 + D(y, eta)``, ``D`` being minus twice the
binomial log-likelihood without the binomial coefficients (lme4 adds them for k-of-n data; the fit
object adds them back).

The random-effects system ``H = A' W A + I`` is handled by a solver satisfying the
:class:`Solver` protocol, which :func:`make_solver` picks from the structure of the terms:
:class:`NestedSolver` (scalar intercepts each nested in the next, O(n) with no fill-in),
:class:`NestedSchurSolver`, :class:`SchurSolver`, :class:`BlockSchurSolver` (blocked Cholesky
eliminating the largest factor first), :class:`BlockDiagSolver` (one vector-valued term),
``CrossedGridSolver`` (:mod:`evalmix.glmm.crossed`) and :class:`DenseSolver` (the general case,
a dense Cholesky factor of ``H``). Their size limits are fields of
:class:`~evalmix.glmm.control.GlmerControl`. Their dense factors and the diagonal-block Schur
complement are those of :mod:`evalmix.mixed.linalg`, which every engine shares.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, Protocol, runtime_checkable

import numpy as np
import scipy.sparse as sp
import scipy.special as sp_special

from ..model import RandomTerm, term_lambdas
from ..mixed.linalg import BlockCholesky, NestedSchur
from ..mixed.links import (LINKS, binomial_variance, dlog_mu_eta, inverse_link, log_probabilities,
                     mu_eta)
from ..mixed.linalg import DenseCholesky, DiagonalSchur
from ..mixed.modes import find_modes
from .control import DEFAULT_CONTROL, GlmerControl
from .crossed import CrossedGridSolver

if TYPE_CHECKING:
    from ..model import FixedMatrix


@runtime_checkable
class Solver(Protocol):
    """The sparse algebra of ``H = A' W A + I`` (``A = Z Lambda(theta)``) the deviance delegates.

    :func:`make_solver` picks the class for the structure of the random terms; every solver
    class of this module satisfies this protocol (checked by the tests and by mypy through
    ``make_solver``'s return type). A solver is stateful: ``set_theta`` fixes Lambda,
    ``factor(w)`` factors H at weights ``w``, and the other methods use the last factor.

    Attributes
    ----------
    q : int
        Number of random effects (columns of Z), in lme4's order: term by term, level-major
        inside a term.
    control : GlmerControl
        The limits the solver was chosen and sized with.
    """

    q: int
    control: GlmerControl

    def set_theta(self, theta: np.ndarray) -> None:
        """Use ``Lambda(theta)`` (theta in lme4's layout, see ``RandomTerm.lambda_``)."""

    def zl(self, u: np.ndarray) -> np.ndarray:
        """``A u`` (one value per pooled row; a new array the caller may overwrite)."""

    def zlt(self, r: np.ndarray) -> np.ndarray:
        """``A' r`` (length q)."""

    def zlt_wx(self, X: FixedMatrix, w: np.ndarray) -> np.ndarray:
        """``A' W X`` (q x p)."""

    def factor(self, w: np.ndarray) -> float:
        """Factor ``H`` at row weights ``w``; returns ``log det H``."""

    def solve(self, r: np.ndarray) -> np.ndarray:
        """``H^-1 r`` for a vector or a q x k matrix."""

    def leverage(self) -> np.ndarray:
        """``a_i' H^-1 a_i`` for every row (``a_i`` the row of A; a new array the caller may
        overwrite)."""

    def cond_var(self) -> np.ndarray:
        """Diagonal of ``H^-1`` (conditional variances of the spherical modes)."""

    def hinv_blocks(self, idx: np.ndarray) -> np.ndarray:
        """Blocks ``H^-1[idx_g, idx_g]`` for a (levels x nc) index array of one term."""

    def grad_theta(self, rho: np.ndarray, r: np.ndarray, u: np.ndarray,
                   v: np.ndarray) -> np.ndarray | None:
        """Exact gradient of the Laplace deviance over theta at fixed beta (see
        :func:`exact_theta_gradient`), or None where the solver has no closed form (the
        optimiser then differences the deviance)."""


def _indicator(idx: np.ndarray, nl: int) -> sp.csr_matrix:
    n = idx.size
    return sp.csr_matrix((np.ones(n), (idx, np.arange(n))), shape=(nl, n))


class NestedSolver:
    """Scalar intercept terms, each nested in the next: fine (``f``) and optional coarse (``c``).

    ``H = [[Df, C], [C', Dc]]`` with ``Df``, ``Dc`` diagonal and one non-zero per row of ``C``
    (each fine level sits in one coarse level), so the Schur complement
    ``Dc - C' Df^-1 C`` is diagonal (:class:`evalmix.mixed.linalg.NestedSchur`).
    """

    def __init__(self, terms: list[RandomTerm], control: GlmerControl = DEFAULT_CONTROL):
        self.control = control
        self.fi = terms[0].index
        self.J = terms[0].nl
        self.two = len(terms) == 2
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

    def level_values(self, u: np.ndarray) -> np.ndarray:
        """``A u`` per fine level (``A u`` is this gathered by each row's fine level ``fi``)."""
        if not self.two:
            return self.tf * u[: self.J]
        return self.tf * u[: self.J] + self.tc * u[self.J:][self.parent]

    def zl(self, u: np.ndarray) -> np.ndarray:
        # the coarse level of a row is its fine level's parent: the sum is formed per fine level
        # (the same two products and one addition as per row) and gathered once
        return self.level_values(u)[self.fi]

    def jacobian_gram(self, X: FixedMatrix, c: np.ndarray, D: np.ndarray,
                      E: np.ndarray) -> np.ndarray:
        """``J' diag(c) J`` for the n x P matrix ``J = X D + E[fi]`` (``D`` p x P, ``E`` one row
        per fine level), from sums per pattern and per fine level instead of the n x P matrix:
        ``D' X'CX D + D' X'C Z E + E' Z'CX D + E' Z'CZ E`` (``Z`` the fine-level indicator)."""
        B = X.group_wsum(self.fi, self.J, c, self.control.group_table_max) @ D
        cross = E.T @ B
        return (D.T @ X.gram(c) @ D + cross + cross.T
                + E.T @ (np.bincount(self.fi, c, self.J)[:, None] * E))

    def zlt(self, r: np.ndarray) -> np.ndarray:
        return self.zlt_levels(np.bincount(self.fi, r, self.J))

    def zlt_levels(self, sf: np.ndarray) -> np.ndarray:
        """``A' r`` from ``sf``, the sums of ``r`` per fine level (``bincount(fi, r)``)."""
        if not self.two:
            return self.tf * sf
        return np.concatenate([self.tf * sf, self.tc * np.bincount(self.parent, sf, self.K)])

    def zlt_wx(self, X: FixedMatrix, w: np.ndarray) -> np.ndarray:
        """``A' W X`` (q x p) for a :class:`FixedMatrix` X."""
        return self._zlt_wx_fine(X.group_wsum(self.fi, self.J, w, self.control.group_table_max))

    def zlt_wx_table(self, Xu: np.ndarray, tab: np.ndarray) -> np.ndarray:
        """``A' W X`` from the weights summed per fine level and pattern (``tab``, levels x
        patterns) and X's distinct rows ``Xu``."""
        return self._zlt_wx_fine(tab @ Xu)

    def _zlt_wx_fine(self, sf: np.ndarray) -> np.ndarray:
        if not self.two:
            return self.tf * sf
        # written into one q x p array (a stack of two would copy both halves again)
        out = np.empty((self.q, sf.shape[1]))
        np.multiply(self.tf, sf, out=out[: self.J])
        np.multiply(self.tc, self.Pc @ sf, out=out[self.J:])
        return out

    def factor(self, w: np.ndarray) -> float:
        return self.factor_levels(np.bincount(self.fi, w, self.J))

    def factor_levels(self, sf: np.ndarray) -> float:
        """:meth:`factor` from ``sf``, the weights summed per fine level (``bincount(fi, w)``)."""
        self.sf = sf
        Df = 1.0 + self.tf**2 * sf
        if not self.two:
            self.Df = Df
            return float(np.log(Df).sum())
        self.nest = NestedSchur(Df, self.tf * self.tc * sf,
                                1.0 + self.tc**2 * np.bincount(self.parent, sf, self.K), self.parent, self.Pc)
        return self.nest.logdet

    def solve(self, r: np.ndarray) -> np.ndarray:
        if not self.two:
            return r / (self.Df if r.ndim == 1 else self.Df[:, None])
        return self.nest.solve(r)

    def leverage(self) -> np.ndarray:
        """``h_i = a_i' H^-1 a_i`` for each row (``a_i`` the row of ``Z Lambda``)."""
        return self.level_leverage()[self.fi]

    def level_leverage(self) -> np.ndarray:
        """The leverages per fine level (the rows of a fine level share theirs)."""
        if not self.two:
            return self.tf**2 / self.Df
        hff, hfc, Sp = self.nest.inverse_blocks()
        return self.tf**2 * hff + 2 * self.tf * self.tc * hfc + self.tc**2 / Sp

    def grad_theta(self, rho: np.ndarray, r: np.ndarray, u: np.ndarray,
                   v: np.ndarray) -> np.ndarray:
        """Exact gradient of the Laplace deviance over theta at fixed beta.

        ``d dev/d theta_t = rho' E_t u + r' E_t v + 2 tr(H^-1 A'W E_t)`` with ``E_t = dA/d theta_t``
        (the indicator of term t), ``v = H^-1 A' g`` and ``rho = g - 2 r - W A v``; the last two
        terms carry the change of ``u~`` and of ``W`` with theta.
        """
        return self.grad_theta_levels(np.bincount(self.fi, rho, self.J),
                                      np.bincount(self.fi, r, self.J), u, v)

    def grad_theta_levels(self, pf: np.ndarray, qf: np.ndarray, u: np.ndarray,
                          v: np.ndarray) -> np.ndarray:
        """:meth:`grad_theta` from the sums of ``rho`` and ``r`` per fine level."""
        J = self.J
        rf = pf * u[:J] + qf * v[:J]
        if not self.two:
            return np.array([rf.sum() + 2.0 * np.sum(self.sf * self.tf / self.Df)])
        hff, hfc, Sp = self.nest.inverse_blocks()
        # the coarse indicator sums are the fine sums pooled by parent
        rc = np.bincount(self.parent, pf, self.K) * u[J:] + np.bincount(self.parent, qf, self.K) * v[J:]
        tr_f = 2.0 * np.sum(self.sf * (self.tf * hff + self.tc * hfc))
        tr_c = 2.0 * np.sum(self.sf * (self.tf * hfc + self.tc / Sp))
        return np.array([rf.sum() + tr_f, rc.sum() + tr_c])

    def hinv_blocks(self, idx: np.ndarray) -> np.ndarray:
        """Blocks ``H^-1[idx_g, idx_g]`` for an (levels x nc) index array (here nc = 1)."""
        return self.cond_var()[idx][:, :, None]

    def cond_var(self) -> np.ndarray:
        """Diagonal of ``H^-1`` (the conditional variances of the spherical modes)."""
        if not self.two:
            return 1.0 / self.Df
        return self.nest.diagonal_inverse()


def exact_theta_gradient(solver: DenseSolver, hav: np.ndarray, rho: np.ndarray, r: np.ndarray,
                         u: np.ndarray, v: np.ndarray) -> np.ndarray:
    """Exact gradient of the Laplace deviance over theta at fixed beta, for any random terms.

    The formula of :meth:`NestedSolver.grad_theta`, ``rho' E_p u + r' E_p v + 2 tr(H^-1 A'W E_p)``,
    with ``E_p = dA/d theta_p``: theta_p = Lambda_t[i, j] puts ``Z_t[:, i]`` in each row's column
    (t, j) of A, so every term reduces to sums over rows. ``hav[i, b]`` is ``(H^-1 a_i)`` at row
    i's column b (``a_i`` the row of A): ``sum_a V[i, a] H^-1[cols_i[a], cols_i[b]]``, made of the
    same blocks as the leverages.
    """
    w, cols = solver.weights, solver.cols
    out: list[float] = []
    pos = 0
    for t, _ in solver.blocks:
        base = {}  # per column j of Lambda: the row sums every theta of that column shares
        for i, j in t.theta_pairs:  # theta's own order (the term owns the layout)
            if j not in base:
                c = cols[:, pos + j]
                base[j] = rho * u[c] + r * v[c] + 2.0 * w * hav[:, pos + j]
            out.append(float(t.Z[:, i] @ base[j]))
        pos += t.nc
    return np.array(out)


class DenseSolver:
    """General terms: ``A = Z Lambda`` as a sparse matrix with a fixed pattern, ``H`` dense."""

    def __init__(self, terms: list[RandomTerm], control: GlmerControl = DEFAULT_CONTROL):
        self.control = control
        n = terms[0].index.size
        cols, self.blocks = [], []
        off, toff = 0, 0
        for t in terms:
            for c in range(t.nc):
                cols.append(off + t.index * t.nc + c)
            self.blocks.append((t, toff))
            off += t.nl * t.nc
            toff += t.theta_size
        self.q = off
        self.k = len(cols)
        self.cols = np.stack(cols, axis=1)  # n x k
        self.n = n
        self.A = sp.csr_matrix((np.ones(n * self.k), self.cols.ravel(),
                                np.arange(0, n * self.k + 1, self.k)), shape=(n, self.q))
        self.AT = None

    def set_theta(self, theta: np.ndarray) -> None:
        vals = []
        for (t, _), L in zip(self.blocks, term_lambdas([t for t, _ in self.blocks], theta)):
            vals.append(t.Z @ L)  # row entries (z_i' Lambda_t)_c
        self.V = np.concatenate(vals, axis=1)
        self.A.data = self.V.ravel().copy()
        self.AT = self.A.T.tocsr()

    def zl(self, u: np.ndarray) -> np.ndarray:
        return self.A @ u

    def zlt(self, r: np.ndarray) -> np.ndarray:
        return self.AT @ r

    def zlt_wx(self, X: FixedMatrix, w: np.ndarray) -> np.ndarray:
        return np.asarray(self.AT @ (w[:, None] * X.dense()))

    def factor(self, w: np.ndarray) -> float:
        self.weights = w  # the W of this factorisation (the exact theta gradient reads it)
        if self.q <= self.control.dense_h_max:  # scatter-add the k x k outer products of each row into dense H
            if not hasattr(self, "_flat"):
                self._flat = (self.cols[:, :, None] * self.q + self.cols[:, None, :]).reshape(self.n, -1)
            wv = (w[:, None] * self.V)[:, :, None] * self.V[:, None, :]
            # weighted bincount returns floats (numpy's stubs say integers)
            H: np.ndarray = np.bincount(self._flat.ravel(), wv.ravel(), self.q * self.q).reshape(self.q, self.q)
        else:
            H = (self.AT @ self.A.multiply(w[:, None]).tocsr()).toarray()
        H[np.diag_indices_from(H)] += 1.0
        self.chol = DenseCholesky(H, overwrite=True)
        return self.chol.logdet

    def solve(self, r: np.ndarray) -> np.ndarray:
        return self.chol.solve(r)

    def hinv(self) -> np.ndarray:
        return self.chol.solve(np.eye(self.q))

    def row_hinv(self) -> np.ndarray:
        """``H^-1[cols_i, cols_i]`` for every row (n x k x k)."""
        Hi = self.hinv()
        return Hi[self.cols[:, :, None], self.cols[:, None, :]]

    def leverage(self) -> np.ndarray:
        return np.einsum("na,nab,nb->n", self.V, self.row_hinv(), self.V)

    def grad_theta(self, rho: np.ndarray, r: np.ndarray, u: np.ndarray,
                   v: np.ndarray) -> np.ndarray | None:
        """Exact gradient of the Laplace deviance over theta (see :func:`exact_theta_gradient`)."""
        hav = np.einsum("nab,na->nb", self.row_hinv(), self.V)
        return exact_theta_gradient(self, hav, rho, r, u, v)

    def cond_var(self) -> np.ndarray:
        return np.diag(self.hinv()).copy()

    def hinv_blocks(self, idx: np.ndarray) -> np.ndarray:
        return self.hinv()[idx[:, :, None], idx[:, None, :]]


class BlockDiagSolver(DenseSolver):
    """A single term with correlated effects, ``(1 + x|g)``: H is block diagonal (one nc x nc
    block per level), factorised level by level in one batched call
    (:class:`evalmix.mixed.linalg.BlockCholesky`)."""

    def __init__(self, terms: list[RandomTerm], control: GlmerControl = DEFAULT_CONTROL):
        super().__init__(terms, control)
        t = terms[0]
        self.nl, self.nc = t.nl, t.nc
        nc = self.nc
        a = np.arange(nc)
        self._bflat = ((t.index[:, None, None] * nc + a[None, :, None]) * nc
                       + a[None, None, :]).reshape(self.n, nc * nc)

    @staticmethod
    def applies(terms: list[RandomTerm], control: GlmerControl = DEFAULT_CONTROL) -> bool:
        return len(terms) == 1 and terms[0].nc > 1

    def factor(self, w: np.ndarray) -> float:
        self.weights = w
        nl, nc = self.nl, self.nc
        wv = (w[:, None] * self.V)[:, :, None] * self.V[:, None, :]
        B: np.ndarray = np.bincount(self._bflat.ravel(), wv.ravel(), nl * nc * nc).reshape(nl, nc, nc)
        B += np.eye(nc)
        self.bchol = BlockCholesky(B)
        return self.bchol.logdet

    def solve(self, r: np.ndarray) -> np.ndarray:
        return self.bchol.solve(r)

    def row_hinv(self) -> np.ndarray:
        return self.bchol.inverse()[self.cols[:, 0] // self.nc]

    def cond_var(self) -> np.ndarray:
        return self.bchol.diagonal_inverse()

    def hinv_blocks(self, idx: np.ndarray) -> np.ndarray:
        return self.bchol.inverse()[idx[:, 0] // self.nc]


class SchurSolver(DenseSolver):
    """One scalar term with many levels (diagonal block) plus a smaller dense remainder.

    Typical of crossed evaluation designs, ``(1|item) + (1|template)``: eliminating the item
    block, which is diagonal, leaves a dense Schur complement of the size of the other terms (the
    blocked Cholesky of MixedModels.jl). The item-by-rest block ``C`` is sparse with a fixed
    pattern (the observed item/level pairs), so memory is O(n + qr^2), not O(q1 qr), and a
    factorisation costs O(n k^2 + nnz(C) qr + qr^3) instead of O(q^3).
    """

    # limits (see GlmerControl): schur_max_rest, schur_dense_fill, schur_max_dense, schur_chunk
    CHUNK: int | None = None  # a smaller leverage block than schur_chunk, to exercise the blocking

    def __init__(self, terms: list[RandomTerm], control: GlmerControl = DEFAULT_CONTROL):
        super().__init__(terms, control)
        self.q1 = terms[0].nl
        self.qr = self.q - self.q1
        self.j1 = self.cols[:, 0]
        self.rc = self.cols[:, 1:] - self.q1
        kr = self.k - 1
        # fixed CSR pattern of C: one slot per distinct (item, rest column) pair
        key = (np.repeat(self.j1, kr) * self.qr + self.rc.ravel())
        pairs, self._slot = np.unique(key, return_inverse=True)
        self.C = sp.csr_matrix((np.zeros(pairs.size), (pairs // self.qr, pairs % self.qr)),
                               shape=(self.q1, self.qr))
        self.C.sort_indices()
        assert self.C.nnz == pairs.size  # explicit zeros kept: data slots follow ``pairs``
        # A (nearly) fully crossed design, e.g. every model answering every item, makes C dense:
        # then a dense C and one matrix product for C' D^-1 C beat the sparse product by far.
        self._pairs = pairs
        self.dense = pairs.size >= control.schur_dense_fill * self.q1 * self.qr and \
            self.q1 * self.qr <= control.schur_max_dense
        self._rflat = (self.rc[:, :, None] * self.qr + self.rc[:, None, :]).reshape(self.n, kr * kr)
        order = np.argsort(self.j1, kind="stable")
        self._rows_by_item = order
        self._item_start = np.searchsorted(self.j1[order], np.arange(self.q1 + 1))

    @staticmethod
    def applies(terms: list[RandomTerm], control: GlmerControl = DEFAULT_CONTROL) -> bool:
        if len(terms) < 2 or terms[0].nc != 1:
            return False
        qr = sum(t.nl * t.nc for t in terms[1:])
        return qr <= control.schur_max_rest and terms[0].nl > qr

    def factor(self, w: np.ndarray) -> float:
        self.weights = w
        V0, Vr = self.V[:, 0], self.V[:, 1:]
        wv0 = w * V0
        self.D = 1.0 + np.bincount(self.j1, wv0 * V0, self.q1)
        # pairs were sorted by item then column, the order of the CSR data
        data = np.bincount(self._slot, (wv0[:, None] * Vr).ravel(), self._pairs.size)
        wr = (w[:, None] * Vr)[:, :, None] * Vr[:, None, :]
        Hrr: np.ndarray = np.bincount(self._rflat.ravel(), wr.ravel(), self.qr * self.qr).reshape(self.qr, self.qr)
        Hrr[np.diag_indices_from(Hrr)] += 1.0
        if self.dense:
            C = np.zeros(self.q1 * self.qr)
            C[self._pairs] = data  # pairs are flat (item, rest column) indices
            self.C = C.reshape(self.q1, self.qr)
        else:
            self.C.data = data
        self.schur = DiagonalSchur(self.D, self.C, Hrr)
        self.G, self.chol = self.schur.G, self.schur.chol
        self._Sinv: np.ndarray | None = None
        return self.schur.logdet

    def solve(self, r: np.ndarray) -> np.ndarray:
        return self.schur.solve(r)

    def _parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``S^-1``, ``(G S^-1)[item_i, rest cols_i]`` per row, and ``m_j = g_j' S^-1 g_j``.

        ``G S^-1`` is dense (items x qr), so it is formed a block of items at a time and only
        the entries the rows use are kept.
        """
        if self._Sinv is None:
            Sinv = self.chol.inverse()
            m = np.empty(self.q1)
            gs_rows = np.empty(self.rc.shape)
            chunk = self.control.schur_chunk if self.CHUNK is None else self.CHUNK
            step = max(1, chunk // max(self.qr, 1))
            for j0 in range(0, self.q1, step):
                j1 = min(j0 + step, self.q1)
                Gb = self.G[j0:j1]
                GSb = np.asarray(Gb @ Sinv)
                prod = Gb.multiply(GSb) if sp.issparse(Gb) else Gb * GSb
                m[j0:j1] = np.asarray(prod.sum(axis=1)).ravel()
                rows = self._rows_by_item[self._item_start[j0]:self._item_start[j1]]
                gs_rows[rows] = GSb[self.j1[rows, None] - j0, self.rc[rows]]
            self._Sinv, self._gs_rows, self._m = Sinv, gs_rows, m
        return self._Sinv, self._gs_rows, self._m

    def leverage(self) -> np.ndarray:
        Sinv, gs_rows, m = self._parts()
        V0, Vr = self.V[:, 0], self.V[:, 1:]
        h = V0**2 * (1.0 / self.D[self.j1] + m[self.j1])
        h -= 2.0 * V0 * np.einsum("nk,nk->n", gs_rows, Vr)
        sub = Sinv[self.rc[:, :, None], self.rc[:, None, :]]
        return h + np.einsum("na,nab,nb->n", Vr, sub, Vr)

    def grad_theta(self, rho: np.ndarray, r: np.ndarray, u: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Exact gradient (:func:`exact_theta_gradient`) without forming the n x k x k blocks."""
        Sinv, gs_rows, m = self._parts()
        V0, Vr = self.V[:, 0], self.V[:, 1:]
        hav = np.empty((self.n, self.k))
        hav[:, 0] = V0 * (1.0 / self.D[self.j1] + m[self.j1]) - np.einsum("nk,nk->n", gs_rows, Vr)
        sub = Sinv[self.rc[:, :, None], self.rc[:, None, :]]
        hav[:, 1:] = np.einsum("nab,na->nb", sub, Vr) - V0[:, None] * gs_rows
        return exact_theta_gradient(self, hav, rho, r, u, v)

    def cond_var(self) -> np.ndarray:
        Sinv, _, m = self._parts()
        return np.concatenate([1.0 / self.D + m, np.diag(Sinv)])

    def hinv_blocks(self, idx: np.ndarray) -> np.ndarray:
        if idx.max() < self.q1:
            return self.cond_var()[idx][:, :, None]
        Sinv = self._parts()[0]
        r = idx - self.q1
        return Sinv[r[:, :, None], r[:, None, :]]


class BlockSchurSolver(DenseSolver):
    """Vector-valued effects of one large grouping factor crossed with smaller terms,
    ``(1|item) + (1 + x|subject)`` or ``(1 + x || subject)``: the blocked Cholesky of
    MixedModels.jl.

    Every term of the grouping factor with the most levels forms block A, one b x b block per level
    (b = their columns together; separate ``||`` terms give blocks with a diagonal Lambda). Its
    Schur complement ``S = H_rr - C' A^-1 C`` has the size of the other terms, so a factorisation
    costs O(n b^2 + q1 qr b + qr^3) instead of O((q1 + qr)^3). Internally the q columns are
    permuted level-major inside block A; every method takes and returns the usual order.
    """

    # limits (see GlmerControl): block_schur_max_rest, block_schur_max_dense

    def __init__(self, terms: list[RandomTerm], control: GlmerControl = DEFAULT_CONTROL):
        super().__init__(terms, control)
        first = [i for i, t in enumerate(terms) if self._same_factor(t, terms[0])]
        nl = terms[0].nl
        b = sum(terms[i].nc for i in first)
        self.nl, self.b = nl, b
        self.q1 = nl * b
        self.qr = self.q - self.q1
        # permutation: position in (block A level-major, then rest) -> original column of H
        offsets, off = [], 0
        for t in terms:
            offsets.append(off)
            off += t.nl * t.nc
        perm1 = np.empty(self.q1, dtype=np.int64)
        c0 = 0
        for i in first:
            t = terms[i]
            for c in range(t.nc):
                perm1[np.arange(nl) * b + c0 + c] = offsets[i] + np.arange(nl) * t.nc + c
            c0 += t.nc
        rest = np.setdiff1d(np.arange(self.q), perm1)
        self.perm = np.concatenate([perm1, rest])
        self.iperm = np.empty_like(self.perm)
        self.iperm[self.perm] = np.arange(self.q)
        pc = self.iperm[self.cols]  # each row's columns in the permuted order
        in_a = pc < self.q1
        # rows touch b columns of block A (one level) and k - b columns of the rest
        # which of a row's k columns belong to block A depends on the term only, not on the row
        order = np.argsort(~in_a[0], kind="stable")
        self._order, self._iorder = order, np.argsort(order)
        pc = pc[:, order]
        self.level = pc[:, 0] // b
        self.ka = pc[:, :b] - self.level[:, None] * b  # position inside the level's block
        self.rc = pc[:, b:] - self.q1
        kr = self.k - b
        n = self.n
        self._aflat = ((self.level[:, None, None] * b + self.ka[:, :, None]) * b
                       + self.ka[:, None, :]).reshape(n, b * b)
        self._cflat = ((self.level[:, None, None] * b + self.ka[:, :, None]) * self.qr
                       + self.rc[:, None, :]).reshape(n, b * kr)
        self._rflat = (self.rc[:, :, None] * self.qr + self.rc[:, None, :]).reshape(n, kr * kr)
        self._parts_cache: tuple | None = None

    @staticmethod
    def _same_factor(t: RandomTerm, t0: RandomTerm) -> bool:
        return t.group == t0.group and t.nl == t0.nl and np.array_equal(t.index, t0.index)

    @classmethod
    def applies(cls, terms: list[RandomTerm], control: GlmerControl = DEFAULT_CONTROL) -> bool:
        if len(terms) < 2:
            return False
        first = [t for t in terms if cls._same_factor(t, terms[0])]
        if len(first) == len(terms) or (len(first) == 1 and first[0].nc == 1):
            return False  # one factor only, or a scalar term (SchurSolver's case)
        q1 = terms[0].nl * sum(t.nc for t in first)
        qr = sum(t.nl * t.nc for t in terms) - q1
        return (qr <= control.block_schur_max_rest and q1 > qr
                and q1 * qr <= control.block_schur_max_dense)

    def set_theta(self, theta: np.ndarray) -> None:
        super().set_theta(theta)
        V = self.V[:, self._order]
        self._Va, self._Vr = np.ascontiguousarray(V[:, : self.b]), np.ascontiguousarray(V[:, self.b:])

    def _rows(self) -> tuple[np.ndarray, np.ndarray]:
        return self._Va, self._Vr

    def factor(self, w: np.ndarray) -> float:
        nl, b, qr = self.nl, self.b, self.qr
        Va, Vr = self._rows()
        self.weights = w  # the W of this factorisation (the exact theta gradient reads it)
        wa = w[:, None] * Va
        Ab: np.ndarray = np.bincount(self._aflat.ravel(), (wa[:, :, None] * Va[:, None, :]).ravel(),
                                     nl * b * b).reshape(nl, b, b)
        Ab += np.eye(b)
        C = np.bincount(self._cflat.ravel(), (wa[:, :, None] * Vr[:, None, :]).ravel(),
                        self.q1 * qr).reshape(self.q1, qr)
        Hrr: np.ndarray = np.bincount(self._rflat.ravel(),
                                      ((w[:, None] * Vr)[:, :, None] * Vr[:, None, :]).ravel(),
                                      qr * qr).reshape(qr, qr)
        Hrr[np.diag_indices_from(Hrr)] += 1.0
        self.bchol = BlockCholesky(Ab)
        self.C = C
        self.G = self.bchol.solve(C)  # A^-1 C
        self.chol = DenseCholesky(Hrr - C.T @ self.G, overwrite=True)
        self._parts_cache = None
        return self.bchol.logdet + self.chol.logdet

    def solve(self, r: np.ndarray) -> np.ndarray:
        rp = r[self.perm]
        r1, rr = rp[: self.q1], rp[self.q1:]
        yr = self.chol.solve(rr - self.G.T @ r1)
        x1 = self.bchol.solve(r1 - self.C @ yr)
        xp = np.concatenate([x1, yr]) if r.ndim == 1 else np.vstack([x1, yr])
        return xp[self.iperm]

    def _parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``S^-1``, ``G S^-1`` and the blocks ``A_l^-1 + (G S^-1 G')_ll`` of H^-1 on block A."""
        if self._parts_cache is None:
            Sinv = self.chol.inverse()
            GS = self.G @ Sinv
            nl, b, qr = self.nl, self.b, self.qr
            blocks = self.bchol.inverse() + np.einsum("lar,lcr->lac", GS.reshape(nl, b, qr),
                                                       self.G.reshape(nl, b, qr))
            self._parts_cache = (Sinv, GS, blocks)
        return self._parts_cache

    def row_hinv(self) -> np.ndarray:
        """``H^-1[cols_i, cols_i]`` for every row (n x k x k, columns in the row's usual order)."""
        Sinv, GS, blocks = self._parts()
        b = self.b
        own = blocks[self.level[:, None, None], self.ka[:, :, None], self.ka[:, None, :]]  # n x b x b
        gs = GS.reshape(self.nl, b, self.qr)[self.level[:, None, None], self.ka[:, :, None],
                                             self.rc[:, None, :]]  # n x b x kr
        sub = Sinv[self.rc[:, :, None], self.rc[:, None, :]]
        K = np.empty((self.n, self.k, self.k))
        K[:, :b, :b], K[:, :b, b:], K[:, b:, :b], K[:, b:, b:] = own, -gs, -gs.transpose(0, 2, 1), sub
        io = self._iorder
        return K[:, io][:, :, io]

    def cond_var(self) -> np.ndarray:
        Sinv, _, blocks = self._parts()
        d = np.concatenate([np.diagonal(blocks, axis1=1, axis2=2).ravel(), np.diag(Sinv)])
        return d[self.iperm]

    def hinv_blocks(self, idx: np.ndarray) -> np.ndarray:
        Sinv, _, blocks = self._parts()
        pidx = self.iperm[idx]
        if pidx.max() < self.q1:
            lev, pos = pidx // self.b, pidx % self.b
            return blocks[lev[:, :, None], pos[:, :, None], pos[:, None, :]]
        r = pidx - self.q1
        return Sinv[r[:, :, None], r[:, None, :]]


class NestedSchurSolver(DenseSolver):
    """A nested pair of intercepts plus small crossed terms, ``(1|item) + (1|item:run) +
    (1|template)``: the nested block is eliminated in O(n) (:class:`NestedSolver`), leaving a dense
    Schur complement of the size of the crossed terms."""

    def grad_theta(self, rho: np.ndarray, r: np.ndarray, u: np.ndarray,
                   v: np.ndarray) -> np.ndarray | None:
        """None: no per-row blocks of H^-1 here, so the optimiser differences the deviance."""
        return None

    def __init__(self, terms: list[RandomTerm], pair: tuple[int, int],
                 control: GlmerControl = DEFAULT_CONTROL):
        super().__init__(terms, control)
        f, c = pair
        self.pair = pair
        self.inner = NestedSolver([terms[f], terms[c]], control)
        # positions of each term in the (n, k) arrays, theta offsets and u offsets
        pos, tpos, upos = [], [], []
        kp = tp = up = 0
        for t in terms:
            pos.append(list(range(kp, kp + t.nc)))
            tpos.append(tp)
            upos.append(np.arange(up, up + t.nl * t.nc))
            kp += t.nc
            tp += t.theta_size
            up += t.nl * t.nc
        rest = [i for i in range(len(terms)) if i not in pair]
        self.tpair = [tpos[f], tpos[c]]
        self.pf, self.pc = pos[f][0], pos[c][0]
        self.rpos = [p for i in rest for p in pos[i]]
        self.q1 = self.inner.q
        self.qr = self.q - self.q1
        # internal order: fine levels, coarse levels, then the other terms; perm maps to lme4 order
        self.perm = np.concatenate([upos[f], upos[c]] + [upos[i] for i in rest])
        loc = np.empty(self.q, dtype=np.int64)
        loc[self.perm] = np.arange(self.q)
        self.rc = loc[self.cols[:, self.rpos]] - self.q1  # n x kr, rest columns (internal)
        kr = len(self.rpos)
        self.fi = terms[f].index
        self.ci = terms[c].index + self.inner.J
        self._ff = (self.fi[:, None] * self.qr + self.rc).ravel()
        self._cf = (self.ci[:, None] * self.qr + self.rc).ravel()
        self._rflat = (self.rc[:, :, None] * self.qr + self.rc[:, None, :]).reshape(self.n, kr * kr)

    @staticmethod
    def find(terms: list[RandomTerm], control: GlmerControl = DEFAULT_CONTROL
             ) -> tuple[int, int] | None:
        if len(terms) < 3 or terms[0].nc != 1 or terms[0].expr.strip() != "1":
            return None
        for j in range(1, len(terms)):
            if NestedSolver.applies([terms[0], terms[j]]):
                q1 = terms[0].nl + terms[j].nl
                qr = sum(t.nl * t.nc for i, t in enumerate(terms) if i not in (0, j))
                n = terms[0].index.size
                cells = control.nested_schur_max_cells
                if qr <= control.nested_schur_max_rest and q1 * qr <= cells and n * qr <= cells:
                    return (0, j)
                return None
        return None

    def set_theta(self, theta: np.ndarray) -> None:
        super().set_theta(theta)
        self.inner.set_theta(np.array([theta[self.tpair[0]], theta[self.tpair[1]]]))

    def factor(self, w: np.ndarray) -> float:
        inn = self.inner
        ld1 = inn.factor(w)
        Vr = self.V[:, self.rpos]
        wr = w[:, None] * Vr
        size = self.q1 * self.qr
        C = (np.bincount(self._ff, (inn.tf * wr).ravel(), size)
             + np.bincount(self._cf, (inn.tc * wr).ravel(), size)).reshape(self.q1, self.qr)
        ww = wr[:, :, None] * Vr[:, None, :]
        Hrr: np.ndarray = np.bincount(self._rflat.ravel(), ww.ravel(), self.qr**2).reshape(self.qr, self.qr)
        Hrr[np.diag_indices_from(Hrr)] += 1.0
        self.C = C
        self.G = inn.solve(C)
        self.chol = DenseCholesky(Hrr - C.T @ self.G, overwrite=True)
        self._Sinv: np.ndarray | None = None
        return float(ld1 + self.chol.logdet)

    def solve(self, r: np.ndarray) -> np.ndarray:
        ri = r[self.perm]
        r1, rr = ri[: self.q1], ri[self.q1:]
        x1a = self.inner.solve(r1)
        yr = self.chol.solve(rr - self.C.T @ x1a)
        x1 = x1a - self.G @ yr
        out = np.empty_like(ri)
        out[self.perm] = np.concatenate([x1, yr]) if r.ndim == 1 else np.vstack([x1, yr])
        return out

    def _sinv(self) -> np.ndarray:
        if self._Sinv is None:
            self._Sinv = self.chol.solve(np.eye(self.qr))
        return self._Sinv

    def leverage(self) -> np.ndarray:
        inn = self.inner
        d = inn.tf * self.G[self.fi] + inn.tc * self.G[self.ci]  # G' a1_i, n x qr
        np.subtract.at(d, (np.arange(self.n)[:, None], self.rc), self.V[:, self.rpos])
        return inn.leverage() + np.einsum("nr,rs,ns->n", d, self._sinv(), d)

    def cond_var(self) -> np.ndarray:
        Si = self._sinv()
        d1 = self.inner.cond_var() + np.einsum("jr,rs,js->j", self.G, Si, self.G)
        out = np.empty(self.q)
        out[self.perm] = np.concatenate([d1, np.diag(Si)])
        return out

    def hinv_blocks(self, idx: np.ndarray) -> np.ndarray:
        loc = np.empty(self.q, dtype=np.int64)
        loc[self.perm] = np.arange(self.q)
        li = loc[idx]
        if li.min() < self.q1:  # nested (scalar) terms
            return self.cond_var()[idx][:, :, None]
        r = li - self.q1
        return self._sinv()[r[:, :, None], r[:, None, :]]


def saturated_deviance(k: np.ndarray, m: np.ndarray) -> float:
    """``2 sum(k log(k/m) + (m - k) log(1 - k/m))`` over rows of ``k`` successes in ``m`` trials:
    the binomial residual deviance minus ``-2 log L`` (0 for 0/1 rows)."""
    k, m = np.asarray(k, float), np.asarray(m, float)
    ok = m > 0
    k, m = k[ok], m[ok]
    return 2.0 * float(np.sum(sp_special.xlogy(k, k / m) + sp_special.xlogy(m - k, (m - k) / m)))


def make_solver(terms: list[RandomTerm], control: GlmerControl = DEFAULT_CONTROL) -> Solver:
    """The fastest exact solver for this random-effects structure (limits from ``control``).

    Examples
    --------
    >>> from evalmix.glmm import GlmerControl, build_design
    >>> from evalmix.simulate import glmm_runs
    >>> design = build_design("correct ~ model + (1|item) + (1|item:run)",
    ...                       glmm_runs(3, 50, 2, rng=1))
    >>> s = make_solver(design.terms)
    >>> type(s).__name__, s.q, isinstance(s, Solver)
    ('NestedSolver', 150, True)
    """
    if NestedSolver.applies(terms):
        return NestedSolver(terms, control)
    pair = NestedSchurSolver.find(terms, control)
    if pair is not None:
        return NestedSchurSolver(terms, pair, control)
    if CrossedGridSolver.applies(terms, control):
        return CrossedGridSolver(terms, control)
    if SchurSolver.applies(terms, control):
        return SchurSolver(terms, control)
    if BlockSchurSolver.applies(terms, control):
        return BlockSchurSolver(terms, control)
    if BlockDiagSolver.applies(terms, control):
        return BlockDiagSolver(terms, control)
    return DenseSolver(terms, control)


@runtime_checkable
class RowKernel(Protocol):
    """The row-wise passes of PIRLS over the binomial rows (``k`` successes of ``m``), bound to
    those rows and a link: :class:`NumpyRows` for every link, the compiled logit passes of
    :mod:`evalmix.glmm._logit_rows` for large designs (see :func:`row_kernel`). Each writes into
    buffers that PIRLS allocates once per call; the two give the same values to rounding.

    Attributes
    ----------
    compiled : bool
        Whether the passes are compiled loops (numba).
    """

    compiled: bool

    def deviance_mu_into(self, eta: np.ndarray, mu: np.ndarray) -> float:
        """``D(y, eta) = -2 sum(k log mu + (m - k) log(1 - mu))``, writing ``mu``."""

    def score_weights_into(self, eta: np.ndarray, mu: np.ndarray, score: np.ndarray,
                           w: np.ndarray) -> None:
        """The score ``d loglik / d eta`` and the Fisher weight of each row, into buffers."""

    def trial_deviance(self, eta: np.ndarray, zd: np.ndarray, step: float) -> float:
        """``D(y, eta + step zd)`` (a step-halving trial; ``eta`` is left as it is)."""

    def advance(self, eta: np.ndarray, zd: np.ndarray, step: float, mu: np.ndarray,
                score: np.ndarray, w: np.ndarray) -> float:
        """``eta += step zd`` in place, ``mu``, the score and the weight written (the next
        iteration's, in the same pass over the rows); returns ``D(y, eta)``."""


class NumpyRows:
    """:class:`RowKernel` in NumPy, for every link (the logit shares one exp per row)."""

    compiled = False

    def __init__(self, k: np.ndarray, m: np.ndarray, link: str = "logit"):
        self.k, self.m, self.link = k, m, link

    def deviance_mu_into(self, eta: np.ndarray, mu: np.ndarray) -> float:
        if self.link == "logit":
            # 2 sum(m log(1 + e^eta) - k eta), stable for either sign of eta
            e = np.exp(-np.abs(eta))
            sp_ = np.maximum(eta, 0.0) + np.log1p(e)
            inv = 1.0 / (1.0 + e)
            mu[...] = np.where(eta >= 0, inv, e * inv)
            return 2.0 * float(np.dot(self.m, sp_) - np.dot(self.k, eta))
        lmu, l1mu = log_probabilities(self.link, eta)
        mu[...] = inverse_link(self.link, eta)
        return -2.0 * float(np.dot(self.k, lmu) + np.dot(self.m - self.k, l1mu))

    def score_weights_into(self, eta: np.ndarray, mu: np.ndarray, score: np.ndarray,
                           w: np.ndarray) -> None:
        if self.link == "logit":
            score[...] = self.k - self.m * mu
            w[...] = self.m * mu * (1.0 - mu)
            return
        d = mu_eta(self.link, eta)
        var = binomial_variance_floor(self.link, eta)
        score[...] = (self.k - self.m * mu) * d / var
        w[...] = self.m * d**2 / var

    def trial_deviance(self, eta: np.ndarray, zd: np.ndarray, step: float) -> float:
        return self.deviance_mu_into(eta + step * zd, np.empty_like(eta))

    def advance(self, eta: np.ndarray, zd: np.ndarray, step: float, mu: np.ndarray,
                score: np.ndarray, w: np.ndarray) -> float:
        eta += step * zd
        dev = self.deviance_mu_into(eta, mu)
        self.score_weights_into(eta, mu, score, w)
        return dev


def binomial_variance_floor(link: str, eta: np.ndarray) -> np.ndarray:
    """``mu (1 - mu)`` kept above 1e-300, so that the score and weights of a row whose ``mu``
    rounds to 0 or 1 stay finite (non-canonical links)."""
    return np.maximum(binomial_variance(link, eta), 1e-300)


def row_kernel(k: np.ndarray, m: np.ndarray, link: str = "logit",
               control: GlmerControl = DEFAULT_CONTROL) -> RowKernel:
    """The row passes for these rows: compiled (numba) for the logit link from the control's
    ``compiled_rows_min`` rows when numba is installed, else :class:`NumpyRows`.

    Examples
    --------
    >>> import numpy as np
    >>> rows = row_kernel(np.array([1.0, 0.0]), np.array([1.0, 1.0]))
    >>> mu = np.empty(2)
    >>> round(rows.deviance_mu_into(np.zeros(2), mu), 6), mu.tolist()
    (2.772589, [0.5, 0.5])
    """
    if link == "logit" and k.size >= control.compiled_rows_min:
        # imported here so that small fits never load numba
        from . import _logit_rows

        if _logit_rows.available():
            return _logit_rows.CompiledLogitRows(k, m)
    return NumpyRows(k, m, link)


@dataclass
class PirlsState:
    """Where :meth:`LaplaceDeviance.run_pirls` stopped: modes ``u``, linear predictor, ``mu``,
    weights, ``log det H`` (at the weights of the last factorisation), the penalised deviance
    ``||u||^2 + D(y, eta)``, iterations, whether its stopping rule was met, and ``beta`` (the
    joint mode when the fixed effects joined the modes, else None); with lme4's rule, the
    relative change of the penalised deviance at each iteration (what it stops on)."""

    u: np.ndarray
    eta: np.ndarray
    mu: np.ndarray
    w: np.ndarray
    logdet: float
    pdev: float
    iterations: int
    converged: bool
    beta: np.ndarray | None = None
    changes: list[float] = field(default_factory=list)


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
    """lme4's Laplace deviance of a binomial GLMM on pooled k-of-m rows (lme4's ``devfun``).

    Usually made by :func:`evalmix.glmm.build_deviance` from a design. ``pirls(theta, beta)``
    returns the :class:`Evaluation` at the conditional modes (``dev`` is the deviance);
    ``grads`` the exact gradients, ``rx`` the Gauss-Newton curvature over beta. The settings
    (PIRLS tolerances, solver limits) are ``control``'s.

    Parameters
    ----------
    X : FixedMatrix (n x p)
    k, m : (n,) arrays of successes and trials
    terms : random-effects terms (lme4 order)
    offset : (n,) array, optional
        Added to the linear predictor.
    link : {"logit", "probit", "cloglog"}
        For the non-canonical links the weights are the Fisher (IRLS) weights
        ``m mu'^2 / (mu (1 - mu))``, as in lme4's PIRLS and log-determinant; the exact gradient
        over beta follows the modes with the observed information.
    control : GlmerControl, optional
        Tolerances and solver limits (the defaults when not given).

    Examples
    --------
    >>> from evalmix.glmm import build_design
    >>> from evalmix.simulate import glmm_runs
    >>> design = build_design("correct ~ model + (1|item) + (1|item:run)",
    ...                       glmm_runs(3, 50, 2, rng=1))
    >>> ld = LaplaceDeviance(design.X, design.k, design.m, design.terms)
    >>> ev = ld.pirls(np.array([0.5, 1.0]), np.zeros(3))
    >>> round(ev.dev, 3), ev.u.size
    (393.392, 150)
    """

    def __init__(self, X: FixedMatrix, k: np.ndarray, m: np.ndarray, terms: list[RandomTerm],
                 solver: Solver | None = None,
                 offset: np.ndarray | None = None, link: str = "logit",
                 control: GlmerControl | None = None):
        if link not in LINKS:
            raise ValueError(f"link must be one of {LINKS}, not {link!r}")
        self.X = X
        self.k = np.ascontiguousarray(k, dtype=float)
        self.m = np.ascontiguousarray(m, dtype=float)
        self.offset = offset
        self.link = link
        self.control = DEFAULT_CONTROL if control is None else control
        self.solver = solver if solver is not None else make_solver(terms, self.control)
        self.q = self.solver.q
        self.p = X.shape[1]
        self.evaluations = 0
        self.pirls_iterations = 0
        self._theta: np.ndarray | None = None
        self.rows = row_kernel(self.k, self.m, link, self.control)

    def _set_theta(self, theta: np.ndarray) -> None:
        if self._theta is None or not np.array_equal(theta, self._theta):
            self.solver.set_theta(theta)
            self._theta = np.array(theta, dtype=float)

    def kernel_mu(self, eta: np.ndarray) -> tuple[float, np.ndarray]:
        """``D(y, eta) = -2 sum(k log mu + (m - k) log(1 - mu))`` and ``mu`` (the row kernel's)."""
        eta = np.ascontiguousarray(eta, dtype=float)
        mu = np.empty_like(eta)
        return self.rows.deviance_mu_into(eta, mu), mu

    def working(self, eta: np.ndarray, mu: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Score ``d loglik / d eta`` and Fisher weight of each row (the row kernel's)."""
        eta = np.ascontiguousarray(eta, dtype=float)
        score, w = np.empty_like(eta), np.empty_like(eta)
        self.rows.score_weights_into(eta, np.ascontiguousarray(mu, dtype=float), score, w)
        return score, w

    def _xb(self, beta: np.ndarray) -> np.ndarray:
        """``X beta + offset`` as a new contiguous array (PIRLS writes into it)."""
        xb = np.ascontiguousarray(self.X.dot(beta), dtype=float)
        if self.offset is not None:
            xb += self.offset
        return xb

    def _linear(self, beta: np.ndarray, u: np.ndarray) -> np.ndarray:
        """``X beta + offset + A u`` as a new contiguous array (at the solver's theta)."""
        s, X = self.solver, self.X
        if (self.offset is None and isinstance(s, NestedSolver) and X.pat is not None
                and X.Xu is not None and X.npat > 1 and hasattr(self.rows, "linear_levels")):
            # compiled rows: one pass instead of two gathers and a sum (the same sums)
            return getattr(self.rows, "linear_levels")(X.Xu @ beta, X.pat, s.level_values(u),
                                                       s.fi)
        eta = self._xb(beta)
        eta += s.zl(u)
        return eta

    def pirls(self, theta: np.ndarray, beta: np.ndarray, u0: np.ndarray | None = None,
              tol: float | None = None, maxit: int | None = None) -> Evaluation:
        """Conditional mode of ``u`` at ``(theta, beta)`` by Newton steps with step halving
        (:meth:`run_pirls` with ``rule="newton"``; ``tol`` and ``maxit`` default to the control's
        ``pirls_tol`` and ``pirls_maxit``, tightened to ``pirls_tol_nonlogit`` and
        ``pirls_maxit_nonlogit`` for the probit and cloglog links)."""
        ctl = self.control
        tol = ctl.pirls_tol if tol is None else tol
        maxit = ctl.pirls_maxit if maxit is None else maxit
        if self.link != "logit":
            # Fisher scoring converges linearly; the log-determinant is not stationary at the
            # mode, so the mode must be tight for the deviance to be smooth in (theta, beta)
            tol = min(tol, ctl.pirls_tol_nonlogit)
            maxit = max(maxit, ctl.pirls_maxit_nonlogit)
        self._set_theta(theta)
        self.evaluations += 1
        u = np.zeros(self.q) if u0 is None else u0
        st = self.run_pirls(None, u, self._linear(beta, u), rule="newton", tol=tol, maxit=maxit)
        self.pirls_iterations += st.iterations
        ev = Evaluation(np.array(theta, float), np.array(beta, float), st.u, st.eta, st.mu, st.w,
                        st.logdet, st.pdev, st.iterations)
        self._last = ev
        return ev

    def run_pirls(self, xb: np.ndarray | None, u: np.ndarray, eta: np.ndarray, *,
                  rule: Literal["newton", "lme4"], tol: float, maxit: int,
                  beta: np.ndarray | None = None) -> PirlsState:
        """PIRLS (MixedModels.jl's ``pirls!``) on the mode-finding loop every engine shares
        (:func:`evalmix.mixed.modes.find_modes`): the conditional modes at the solver's current
        theta, with the rows' deviance, scores and weights from :attr:`rows` (NumPy or compiled,
        see :func:`row_kernel`) and every limit from the control.

        ``eta`` is the starting linear predictor and is updated in place (it becomes the
        state's, as do the ``mu`` and ``w`` buffers made once per call).

        - ``rule="newton"`` (the Laplace deviance, ``eta = xb + A u`` on entry): Newton steps
          on the penalised deviance, each halved (``pirls_halvings`` times at most) until it
          does not raise it by more than ``step_slack`` relative; stops when the Newton
          decrement is below ``tol * (1 + |pdev|)``. With ``beta`` the fixed effects join the
          modes (lme4's ``nAGQ = 0`` first stage); the state's ``beta`` is the joint mode.
        - ``rule="lme4"`` (lme4 1.1-31's ``pwrssUpdate``, the deviance function its Hessian
          differentiates; ``xb = X beta + offset`` and any start ``eta``): each iteration solves
          the weighted least squares of the working response for ``u``, stops when the
          penalised deviance changes by less than ``tol`` relative to the residual deviance
          (never at the first iteration), and halves towards the previous ``u``
          (``pwrss_halvings`` times at most) while it rises. ``log det`` is then taken at the
          weights of the iteration before the last, as lme4 does.
        """
        self._grad_parts = None  # two per-row arrays no longer needed (see grads)
        eta = np.ascontiguousarray(eta, dtype=float)
        problem: _Lme4Pirls | _NewtonPirls
        if rule == "lme4":
            assert xb is not None
            problem = _Lme4Pirls(self, xb, u, eta, tol)
        else:
            problem = _NewtonPirls(self, u, eta, tol, beta)
        return problem.state(find_modes(problem, maxit))

    def _move(self, lstep: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None,
              eta: np.ndarray,
              zd: np.ndarray, step: float, bufs: tuple[np.ndarray, ...] | None) -> float:
        """``D(y, eta + step zd)``: with ``bufs`` (``mu``, score, weight, and with ``lstep``
        their sums) the step is taken into ``eta`` and the buffers written, without it only the
        trial's deviance is summed. With ``lstep = (fi, pat, cell, xd)`` (a nested solver, compiled
        rows) the step of a row is ``zd[fi] + xd[pat]`` (``zd`` one value per fine level, ``xd``
        one per pattern or empty)."""
        rows = self.rows
        if lstep is None:
            if bufs is None:
                return rows.trial_deviance(eta, zd, step)
            return rows.advance(eta, zd, step, *bufs)
        fi, pat, cell, xd = lstep
        if bufs is None:
            return float(getattr(rows, "trial_levels")(eta, zd, xd, fi, pat, step))
        return float(getattr(rows, "advance_levels")(eta, zd, xd, fi, pat, cell, step, bufs))

    _cell: tuple[np.ndarray, bool] | None = None

    def _cells(self, s: NestedSolver) -> np.ndarray:
        """A number per (fine level, pattern) pair of each row, for the table of weights the
        joint mode sums in its passes over the rows: pattern-major where the rows change
        pattern less often than fine level (as a table sorted by model), else level-major, so
        that consecutive rows add into nearby cells."""
        if self._cell is None:
            pat = self.X.pat
            assert pat is not None
            by_pattern = np.count_nonzero(np.diff(pat)) < np.count_nonzero(np.diff(s.fi))
            cell = pat * s.J + s.fi if by_pattern else s.fi * self.X.npat + pat
            self._cell = (np.ascontiguousarray(cell, dtype=np.int64), bool(by_pattern))
        return self._cell[0]

    def _table(self, s: NestedSolver, tab: np.ndarray) -> np.ndarray:
        """The weights summed per :meth:`_cells` number as a levels x patterns array."""
        assert self._cell is not None
        npat = self.X.npat
        return tab.reshape(npat, s.J).T if self._cell[1] else tab.reshape(s.J, npat)

    def dev(self, theta: np.ndarray, beta: np.ndarray, u0: np.ndarray | None = None) -> float:
        return self.pirls(theta, beta, u0).dev

    def rx(self, ev: Evaluation) -> np.ndarray:
        """``X'WX - X'WA H^-1 A'WX`` at the mode: half the Gauss-Newton Hessian over beta."""
        self._refresh(ev)
        B = self.solver.zlt_wx(self.X, ev.w)
        return self.X.gram(ev.w) - B.T @ self.solver.solve(B)

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
        return self.grads(ev, theta=False)[1]

    def grads(self, ev: Evaluation, theta: bool = True) -> tuple[np.ndarray | None, np.ndarray]:
        """Gradients over theta (None when the solver has no closed form) and beta."""
        if self.link != "logit":
            return None, self._grad_beta_noncanonical(ev)
        self._refresh(ev)
        s = self.solver
        cached = self._grad_parts
        if cached is not None and cached[0] is ev:
            # the optimiser asks for beta's gradient, then theta's at the same point: the row
            # sums both are made of are computed once
            _, rho, r, v, gb, levels = cached
            if not theta:
                return None, gb.copy()
            if levels:  # rho and r summed per fine level (below)
                assert isinstance(s, NestedSolver)
                return s.grad_theta_levels(rho, r, ev.u, v), gb.copy()
            return s.grad_theta(rho, r, ev.u, v), gb.copy()
        # compiled rows (evalmix.glmm._logit_rows) and nested intercepts: the dozen NumPy passes
        # below in two loops, and only sums per fine level and per pattern kept (the same
        # roundings, summed in row order as bincount does)
        score_sums = getattr(self.rows, "level_score_sums", None)
        fused = getattr(self.rows, "level_gradient_sums", None)
        if score_sums is not None and fused is not None and isinstance(s, NestedSolver):
            hj = s.level_leverage()
            v = s.solve(s.zlt_levels(score_sums(s.fi, hj, ev.w, ev.mu, s.J)))
            X = self.X
            pat = X.pat if X.pat is not None and X.npat > 1 else None
            pf, qf, ps, rho_rows = fused(s.fi, hj, s.level_values(v), ev.w, ev.mu, pat, X.npat)
            if ps is not None:
                assert X.Xu is not None
                gb = X.Xu.T @ ps
            else:
                assert rho_rows is not None
                gb = X.tdot(rho_rows)
            self._grad_parts = (ev, pf, qf, v, gb.copy(), True)
            return (s.grad_theta_levels(pf, qf, ev.u, v) if theta else None), gb
        # in place, with the rounding of ``r = k - m mu``, ``g = h w (1 - 2 mu)`` and
        # ``rho = g - 2 r - w A v``: four per-row arrays instead of eleven (large fits)
        r = np.multiply(self.m, ev.mu)
        np.subtract(self.k, r, out=r)
        g = np.asarray(s.leverage(), dtype=float)  # new arrays (see Solver)
        g *= ev.w
        tmp = np.multiply(ev.mu, 2.0)
        np.subtract(1.0, tmp, out=tmp)
        g *= tmp
        v = s.solve(s.zlt(g))
        rho = g  # g is not needed past A'g
        np.multiply(r, 2.0, out=tmp)
        rho -= tmp
        zv = np.asarray(s.zl(v), dtype=float)
        zv *= ev.w
        rho -= zv
        del tmp, zv
        gt = None
        if theta:
            gt = s.grad_theta(rho, r, ev.u, v)
        gb = self.X.tdot(rho)
        self._grad_parts = (ev, rho, r, v, gb.copy(), False)
        return gt, gb

    # (ev, rho, r, v, beta's gradient, whether rho and r are sums per fine level)
    _grad_parts: tuple[Evaluation, np.ndarray, np.ndarray, np.ndarray, np.ndarray,
                       bool] | None = None

    def _grad_beta_noncanonical(self, ev: Evaluation) -> np.ndarray:
        """Exact gradient over beta for a non-canonical link.

        As for the logit, ``d dev/d beta = X'(-2 s + g) + (d u~/d beta)' A' g`` with ``s`` the
        score, ``g_i = h_i w'_i`` (leverages times the derivative of the Fisher weights); but the
        mode moves with the observed information ``W_o = W - s c`` (``c = mu''/mu' -
        mu'(1 - 2 mu) / (mu (1 - mu))``), which differs from the Fisher weights ``W`` in ``H``:
        ``d u~/d beta = -(A'W_o A + I)^-1 A'W_o X``. The system with ``W_o`` is factored once
        and the factor of ``H`` restored.
        """
        self._refresh(ev)
        sv = self.solver
        eta, mu = ev.eta, ev.mu
        d = mu_eta(self.link, eta)
        var = binomial_variance_floor(self.link, eta)
        score = (self.k - self.m * mu) * d / var
        c = dlog_mu_eta(self.link, eta) - d * (1.0 - 2.0 * mu) / var
        w = ev.w
        g = sv.leverage() * w * (dlog_mu_eta(self.link, eta) + c)
        wo = np.maximum(w - score * c, 0.0)  # log-concave links: W_o >= 0
        sv.factor(wo)
        v = sv.solve(sv.zlt(g))
        rho = g - 2.0 * score - wo * sv.zl(v)
        sv.factor(w)  # the solver holds H at ev again
        return self.X.tdot(rho)

    def one_step_weights(self, ev: Evaluation) -> np.ndarray:
        """Row weights ``c`` of the curvature lme4's deviance function adds to the exact one.

        lme4's ``devfun`` restarts PIRLS from a fixed linear predictor and stops after the second
        iteration (``tolPwrss = 1e-7``), so ``log det`` is taken at the weights of ``eta1``, one
        Newton step from the start, rather than at the mode. A Newton step from a point ``d``
        away errs by ``eta1 - eta~ = A H^-1 A' (w' d^2) / 2`` (``w' = dw/deta``), so the deviance
        it differentiates exceeds the exact one by ``sum(c * d^2) / 2`` with
        ``c = w' * (A H^-1 A' (h w'))`` (``h`` the leverages: ``d log det / d eta = h w'``), and
        its Hessian exceeds the exact one by ``J' diag(c) J``, ``J = d eta~ / d(theta, beta)``.
        """
        self._refresh(ev)
        s = self.solver
        wp = ev.w * (1.0 - 2.0 * ev.mu)
        return wp * s.zl(s.solve(s.zlt(s.leverage() * wp)))

    # lme4's residual deviance minus D(y, eta): the saturated model's term of the rows lme4 sees
    # (0 for 0/1 rows); its PIRLS stopping rule is relative to the residual deviance
    saturated: float = 0.0

    def lme4_pirls_iterations(self, theta: np.ndarray, beta: np.ndarray, eta_start: np.ndarray,
                              tol: float | None = None, maxit: int | None = None) -> int:
        """Iterations lme4 1.1-31's ``pwrssUpdate`` (u only) takes at ``(theta, beta)``."""
        return self.lme4_pirls(theta, beta, eta_start, tol, maxit)[1]

    def lme4_pirls(self, theta: np.ndarray, beta: np.ndarray, eta_start: np.ndarray,
                   tol: float | None = None, maxit: int | None = None) -> tuple[float, int]:
        """lme4 1.1-31's second-stage deviance function at ``(theta, beta)`` and its PIRLS
        iterations (:meth:`run_pirls` with ``rule="lme4"`` from ``eta_start``; the deviance
        without the constant).

        Each iteration factors at the weights of the previous linear predictor, so after ``k``
        iterations ``log det`` is taken ``k - 1`` Newton steps from the start. ``tol`` and
        ``maxit`` default to the control's ``tol_pwrss`` and ``pwrss_maxit``.
        """
        st = self.lme4_pirls_state(theta, beta, eta_start, tol, maxit)
        return st.pdev + st.logdet, st.iterations

    def lme4_pirls_state(self, theta: np.ndarray, beta: np.ndarray, eta_start: np.ndarray,
                         tol: float | None = None, maxit: int | None = None) -> PirlsState:
        """Where :meth:`lme4_pirls` stops: its :class:`PirlsState`, whose ``changes`` are the
        relative changes lme4's rule compared with ``tol``."""
        tol = self.control.tol_pwrss if tol is None else tol
        maxit = self.control.pwrss_maxit if maxit is None else maxit
        self._set_theta(theta)
        self._last = None  # the factor below replaces the one of the last PIRLS call
        eta = np.array(eta_start, dtype=float)  # the caller's start is not overwritten
        return self.run_pirls(self._xb(beta), np.zeros(self.q), eta, rule="lme4", tol=tol,
                              maxit=maxit)

    def joint_mode(self, theta: np.ndarray, beta: np.ndarray, u: np.ndarray | None = None,
                   tol: float | None = None, maxit: int | None = None
                   ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
        """lme4's ``nAGQ = 0`` deviance: PIRLS over ``(u, beta)`` jointly at fixed theta
        (:meth:`run_pirls` with ``beta``).

        Returns the deviance ``||u||^2 + D(y, eta) + log det(A'WA + I)`` at the joint mode of the
        penalised deviance, and ``beta``, ``u`` and ``eta`` there (``tol`` and ``maxit`` default
        to the control's ``joint_tol`` and ``pirls_maxit``).
        """
        tol = self.control.joint_tol if tol is None else tol
        maxit = self.control.pirls_maxit if maxit is None else maxit
        self._set_theta(theta)
        self._last = None
        u = np.zeros(self.q) if u is None else np.array(u, dtype=float)
        beta = np.array(beta, dtype=float)
        st = self.run_pirls(None, u, self._linear(beta, u), rule="newton", tol=tol, maxit=maxit,
                            beta=beta)
        assert st.beta is not None
        self._joint = (st.u, st.beta, st.eta, st.mu)
        return st.pdev + st.logdet, st.beta, st.u, st.eta

    _joint: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = None

    def joint_grad_theta(self) -> np.ndarray | None:
        """Exact gradient over theta of the ``nAGQ = 0`` deviance at the last :meth:`joint_mode`
        (logit link; None where the solver has no closed-form theta gradient).

        As :meth:`grads` with beta joining u: by the envelope theorem only the change of
        ``log det H`` through the weights needs the path of the joint mode, which the adjoint
        ``(a_u, a_beta)`` of the joint Newton system at ``g = h w'`` carries:
        ``d/d theta_t = rho' E_t u + r' E_t a_u + 2 tr(H^-1 A'W E_t)`` with
        ``rho = g - 2 r - W (A a_u + X a_beta)``.
        """
        s = self.solver
        if self.link != "logit" or self._joint is None or getattr(s, "grad_theta", None) is None:
            return None
        u, _, _, mu = self._joint
        X = self.X
        sums = getattr(self.rows, "joint_gradient_sums", None)
        if (sums is not None and isinstance(s, NestedSolver) and X.Xu is not None
                and X.pat is not None and X.npat > 1
                and s.J * X.npat <= self.control.group_table_max):
            # compiled rows and nested intercepts: the row passes below in two fused loops
            # (sums per fine level and per pattern; the same products, summed in row order)
            Xu, pat = X.Xu, X.pat
            hj = s.level_leverage()
            gs, gp, tab, spw = sums(s.fi, pat, self._cells(s), X.npat, hj, mu)
            B = s.zlt_wx_table(Xu, self._table(s, tab))
            HiB = s.solve(B)
            Hag = s.solve(s.zlt_levels(gs))
            ab = np.linalg.lstsq(Xu.T @ (spw[:, None] * Xu) - B.T @ HiB, Xu.T @ gp - B.T @ Hag,
                                 rcond=None)[0]
            au = Hag - HiB @ ab
            pf, qf = getattr(self.rows, "joint_rho_sums")(s.fi, pat, hj, s.level_values(au),
                                                          Xu @ ab, mu)
            return s.grad_theta_levels(pf, qf, u, au)
        w = self.m * mu * (1.0 - mu)
        r = self.k - self.m * mu
        g = s.leverage() * w * (1.0 - 2.0 * mu)
        B = s.zlt_wx(self.X, w)
        HiB = s.solve(B)
        Hag = s.solve(s.zlt(g))
        ab = np.linalg.lstsq(self.X.gram(w) - B.T @ HiB, self.X.tdot(g) - B.T @ Hag, rcond=None)[0]
        au = Hag - HiB @ ab
        rho = g - 2.0 * r - w * (s.zl(au) + self.X.dot(ab))
        return s.grad_theta(rho, r, u, au)

    def du_dbeta_columns(self, ev: Evaluation) -> np.ndarray:
        """``d u~ / d beta = -H^-1 A'WX`` (q x p) at ``ev``: :meth:`du_dbeta` of every column at
        once, from ``A'WX`` instead of a pass over the rows per column."""
        self._refresh(ev)
        s = self.solver
        return -s.solve(s.zlt_wx(self.X, ev.w))

    def du_dbeta(self, ev: Evaluation, dbeta: np.ndarray) -> np.ndarray:
        """First-order change of ``u~`` for a step ``dbeta`` (warm start of the next PIRLS)."""
        self._refresh(ev)
        s = self.solver
        return -s.solve(s.zlt(ev.w * self.X.dot(dbeta)))


class _Pirls:
    """The point of one PIRLS run (:meth:`LaplaceDeviance.run_pirls`) that
    :func:`evalmix.mixed.modes.find_modes` steps: the modes ``u``, the linear predictor ``eta``
    (updated in place) and the per-row buffers ``mu``, score and weight, made once per run."""

    def __init__(self, ld: LaplaceDeviance, u: np.ndarray, eta: np.ndarray):
        self.ld, self.s, self.rows, self.ctl = ld, ld.solver, ld.rows, ld.control
        self.u, self.eta = u, eta
        self.mu, self.score, self.w = np.empty_like(eta), np.empty_like(eta), np.empty_like(eta)
        self.logdet, self.converged = np.inf, False
        self.beta: np.ndarray | None = None
        self.changes: list[float] = []  # lme4's relative change of the penalised deviance
        self.fresh = False  # whether score and w are those of the current eta (a step writes them)
        self.pdev = np.inf

    def stops(self, value: float) -> bool:
        return False

    def state(self, it: int) -> PirlsState:
        logdet = self.logdet
        if not (np.isfinite(logdet) and np.isfinite(self.pdev)):
            logdet = np.inf  # no mode found: never a minimum for the optimiser
        return PirlsState(self.u, self.eta, self.mu, self.w, logdet, self.pdev, it, self.converged,
                          self.beta, self.changes)


class _Lme4Pirls(_Pirls):
    """lme4 1.1-31's ``pwrssUpdate`` (see :meth:`LaplaceDeviance.run_pirls`): each iteration
    solves the weighted least squares of the working response for ``u``, stops when the
    penalised deviance changes by less than ``tol`` relative to the residual deviance, and
    halves towards the previous ``u`` while it rises (never at the first iteration)."""

    def __init__(self, ld: LaplaceDeviance, xb: np.ndarray, u: np.ndarray, eta: np.ndarray,
                 tol: float):
        super().__init__(ld, u, eta)
        self.xb, self.tol, self.halvings = xb, tol, self.ctl.pwrss_halvings
        self.pdev = self.rows.deviance_mu_into(eta, self.mu) + float(u @ u)
        self.old = np.inf

    def direction(self, it: int) -> bool:
        self.it = it
        s, w = self.s, self.w
        self.rows.score_weights_into(self.eta, self.mu, self.score, w)
        self.logdet = s.factor(w)
        t = np.subtract(self.eta, self.xb)  # the working response, as w * (eta - xb) + score
        t *= w
        t += self.score
        self.un = s.solve(s.zlt(t))
        return False

    def _at_un(self) -> float:
        np.add(self.xb, self.s.zl(self.un), out=self.eta)
        return self.rows.deviance_mu_into(self.eta, self.mu) + float(self.un @ self.un)

    def take(self) -> float:
        pn = self._at_un()
        self.changes.append(abs((self.old - pn) / (pn + self.ld.saturated)))
        return pn

    def stops(self, value: float) -> bool:
        if self.changes[-1] < self.tol:
            self.u, self.pdev, self.converged = self.un, value, True
            return True
        return False

    def accepts(self, value: float) -> bool:
        return self.it == 1 or bool(np.isfinite(value) and value <= self.old)

    def halve(self) -> float:
        self.un = (self.u + self.un) / 2.0
        return self._at_un()

    def exhausted(self) -> bool:
        return False  # the last halving is kept

    def settle(self, value: float) -> float:
        return value

    def commit(self, value: float) -> None:
        self.u, self.pdev, self.old = self.un, value, value


class _NewtonPirls(_Pirls):
    """Newton steps on the penalised deviance (see :meth:`LaplaceDeviance.run_pirls`), over
    ``u`` or, with ``beta``, over ``(u, beta)`` jointly: the full step is taken straight into
    ``eta`` (one pass over the rows where it is accepted, as it nearly always is), the halvings
    only sum trial deviances, and the loop stops when the Newton decrement is below
    ``tol * (1 + |pdev|)``."""

    def __init__(self, ld: LaplaceDeviance, u: np.ndarray, eta: np.ndarray, tol: float,
                 beta: np.ndarray | None):
        super().__init__(ld, u, eta)
        s, rows, ctl, X = self.s, self.rows, self.ctl, ld.X
        self.tol, self.beta, self.halvings = tol, beta, ctl.pirls_halvings - 1
        self.prev = np.empty_like(eta)  # eta before a step
        self.moved = False  # whether eta holds a refused full step
        # compiled rows (evalmix.glmm._logit_rows) and nested intercepts: each pass over the rows
        # also sums the weights and scores per fine level (sw, ss), which is all the solver
        # factors and solves with, and a step is one value per fine level (no n-row step
        # vector); with beta (a compressed X) also the sums per pattern that X'WX, A'WX and X's
        # score are made of, and the step of beta one value per pattern. The same roundings as
        # bincount and the gathered step.
        lv = s if isinstance(s, NestedSolver) and hasattr(rows, "advance_levels") else None
        Xu, pat = X.Xu, X.pat
        if lv is not None and beta is not None and (
                Xu is None or pat is None or X.npat < 2
                or lv.J * X.npat > ctl.group_table_max):
            lv = None  # a dense X, one pattern, or a table past the limit: NumPy's passes
        self.lv, self.Xu = lv, Xu
        if lv is not None:
            npat = X.npat if beta is not None else 0
            lpat = pat if beta is not None and pat is not None else np.zeros(0, dtype=np.int64)
            cell = ld._cells(lv) if beta is not None else lpat
            self.sw, self.ss, self.tab, self.sp, self.spw = (
                np.zeros(lv.J), np.zeros(lv.J), np.zeros(lv.J * npat), np.zeros(npat), np.zeros(npat))
            self.lbufs: tuple[np.ndarray, ...] = (self.mu, self.score, self.w, self.sw, self.ss,
                                                  self.tab, self.sp, self.spw)
            self.lpat, self.cell = lpat, cell
            self.pdev = getattr(rows, "start_levels")(eta, lv.fi, lpat, cell, self.lbufs) + float(u @ u)
        else:
            self.pdev = rows.deviance_mu_into(eta, self.mu) + float(u @ u)
        self.fresh = lv is not None

    def _factor(self) -> float:
        lv = self.lv
        return self.s.factor(self.w) if lv is None else lv.factor_levels(self.sw.copy())

    def direction(self, it: int) -> bool:
        s, lv, X, u = self.s, self.lv, self.ld.X, self.u
        if not self.fresh:
            self.rows.score_weights_into(self.eta, self.mu, self.score, self.w)
        self.fresh = True
        self.logdet = self._factor()
        gu = (s.zlt(self.score) if lv is None else lv.zlt_levels(self.ss)) - u
        if self.beta is None:
            du, db = s.solve(gu), None
            dec = float(gu @ du)
        else:
            if lv is not None:
                Xu = self.Xu
                assert Xu is not None
                gb = Xu.T @ self.sp
                B = lv.zlt_wx_table(Xu, self.ld._table(lv, self.tab))
                G = Xu.T @ (self.spw[:, None] * Xu)
            else:
                gb, B, G = X.tdot(self.score), s.zlt_wx(X, self.w), X.gram(self.w)
            HiB = s.solve(B)
            Hig = s.solve(gu)
            db = np.linalg.lstsq(G - B.T @ HiB, gb - B.T @ Hig, rcond=None)[0]
            du = Hig - HiB @ db
            dec = float(gu @ du + gb @ db)
        if dec < self.tol * (1.0 + abs(self.pdev)):
            self.converged = True
            return True
        if not np.isfinite(dec):  # diverged (extreme linear predictor): no mode here
            return True
        if lv is not None:
            # per fine level and per pattern
            zd = np.ascontiguousarray(lv.level_values(du), dtype=float)
            xd = np.zeros(0)
            if db is not None:
                assert self.Xu is not None
                xd = np.ascontiguousarray(self.Xu @ db, dtype=float)
            self.lstep: tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None = (
                lv.fi, self.lpat, self.cell, xd)
            self.bufs = self.lbufs
        else:
            zd = np.ascontiguousarray(s.zl(du), dtype=float)
            if db is not None:
                zd += X.dot(db)
            self.lstep = None
            self.bufs = (self.mu, self.score, self.w)
        self.zd: np.ndarray | None = zd
        self.du, self.db = du, db
        return False

    def _move(self, bufs: tuple[np.ndarray, ...] | None) -> float:
        """The penalised deviance at ``u + step du`` (into ``eta`` and the buffers with ``bufs``)."""
        assert self.zd is not None
        self.un = self.u + self.du if self.step == 1.0 else self.u + self.step * self.du
        return self.ld._move(self.lstep, self.eta, self.zd, self.step, bufs) + float(self.un @ self.un)

    def take(self) -> float:
        np.copyto(self.prev, self.eta)
        self.step, self.moved = 1.0, True
        return self._move(self.bufs)

    def accepts(self, value: float) -> bool:
        return value <= self.pdev + self.ctl.step_slack * abs(self.pdev)

    def _restore(self) -> None:
        if self.moved:
            np.copyto(self.eta, self.prev)
            self.moved = False

    def halve(self) -> float:
        self._restore()
        self.step *= 0.5
        return self._move(None)

    def exhausted(self) -> bool:
        self._restore()
        if self.ld.link != "logit":  # no decrease left: at the mode to rounding
            self.rows.deviance_mu_into(self.eta, self.mu)  # mu, score and w of this eta again
            self.rows.score_weights_into(self.eta, self.mu, self.score, self.w)
            self.converged = True
            return True
        return False

    def settle(self, value: float) -> float:
        self._restore()
        return self._move(self.bufs)

    def commit(self, value: float) -> None:
        self.pdev, self.u, self.moved = value, self.un, False
        if self.beta is not None:
            assert self.db is not None
            self.beta = self.beta + self.step * self.db
        self.zd = None

    def state(self, it: int) -> PirlsState:
        if not self.converged:  # factor at the final u
            if not self.fresh:
                self.rows.score_weights_into(self.eta, self.mu, self.score, self.w)
            self.logdet = self._factor()
        return super().state(it)
