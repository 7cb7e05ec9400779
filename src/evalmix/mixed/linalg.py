"""The linear algebra of the random-effects system, shared by every engine.

Each engine's random-effects system is ``H = Lambda' Z' W Z Lambda + I``: lmer's ``A`` (unit
weights), glmer's PIRLS system, glmmtmb's and clmm's Laplace Hessian.  Its factorisations are built
from the pieces here, so that a speed-up or a fix of one of them reaches every engine:

- :class:`DenseCholesky`: LAPACK's Cholesky factor of a dense symmetric positive definite matrix
  with its solve, ``log det`` and inverse (:func:`cholesky_inverse`, R's ``chol2inv``): ``H``
  itself when it is small, and the dense Schur complement of every block factorisation;
- :class:`DiagonalSchur`: ``H = [[diag(D), C], [C', H_rr]]``, a first term with one effect per
  level (its block is diagonal) eliminated into the dense Schur complement
  ``S = H_rr - C' D^-1 C`` of the other terms (``C`` dense or sparse);
- :class:`NestedSchur`: ``H = [[diag(D1), C], [C', diag(D2)]]`` for two nested scalar terms
  (``(1|item:run) + (1|item)``: each inner level in one outer level, so ``C`` has one entry per
  row), whose Schur complement ``S = diag(D2) - C' diag(D1)^-1 C`` is diagonal too: O(levels);
- :class:`BlockCholesky`: a block-diagonal ``H``, one small dense block per level of a term with
  several columns (``(1 + x|g)``), factored level by level in one batched call;
- :class:`SparseCholesky`: SciPy's sparse LU of ``H`` in symmetric mode (no pivoting, so its
  pivots are those of ``L D L'`` and tell whether ``H`` is positive definite), for systems too
  large for either.

The structures built on them are :class:`evalmix.mixed.intercepts.InterceptHessian` (scalar
intercepts: diagonal, nested, Schur and sparse; glmmtmb, clmm and lmer's crossed intercepts),
glmer's solvers (:mod:`evalmix.glmm.deviance`, :mod:`evalmix.glmm.crossed`: the nested ones on
:class:`NestedSchur`, the vector terms' on :class:`BlockCholesky`) and lmer's profiled deviance
(:mod:`evalmix.lmm.deviance`, its nested path on :class:`NestedSchur`); the conditional modes of the Laplace approximations are
found by :func:`evalmix.mixed.modes.laplace_modes`.

Examples
--------
>>> import numpy as np
>>> H = np.array([[4.0, 2.0], [2.0, 3.0]])
>>> f = DenseCholesky(H)
>>> round(f.logdet, 12) == round(float(np.log(8.0)), 12), f.solve(np.array([6.0, 5.0])).round(12).tolist()
(True, [1.0, 1.0])
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy import sparse
from scipy.linalg import lapack
from scipy.sparse import linalg as splinalg

__all__ = ["BlockCholesky", "DenseCholesky", "DiagonalSchur", "NestedSchur", "SparseCholesky", "cholesky_inverse"]


def cholesky_inverse(lower: np.ndarray) -> np.ndarray:
    """The inverse of a symmetric positive definite matrix from its lower Cholesky factor
    (LAPACK's ``dpotri``, R's ``chol2inv``), made symmetric.

    Parameters
    ----------
    lower : ndarray
        The factor ``L`` of ``S = L L'`` in the lower triangle (``scipy.linalg.cho_factor(S,
        lower=True)[0]``; the upper triangle is not read).

    Returns
    -------
    ndarray
        ``S^-1``.

    Raises
    ------
    numpy.linalg.LinAlgError
        A zero on the factor's diagonal (``S`` singular).

    Examples
    --------
    >>> S = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> bool(np.allclose(cholesky_inverse(np.linalg.cholesky(S)) @ S, np.eye(2), atol=1e-14))
    True
    """
    inv, info = lapack.dpotri(lower, lower=1)
    if info != 0:
        raise np.linalg.LinAlgError(f"dpotri failed (info = {info})")
    return np.tril(inv) + np.tril(inv, -1).T


class DenseCholesky:
    """The lower Cholesky factor ``L`` of a dense symmetric positive definite matrix ``M = L L'``
    (LAPACK ``dpotrf``; only the lower triangle of ``M`` is read).

    Parameters
    ----------
    M : ndarray
        The matrix (not changed unless ``overwrite``).
    overwrite : bool
        Factor in place (``M`` must then be a Fortran-contiguous float64 array for LAPACK to
        reuse it).

    Raises
    ------
    numpy.linalg.LinAlgError
        ``M`` is not positive definite.

    Attributes
    ----------
    L : ndarray
        The factor, zero above the diagonal.
    logdet : float
        ``log det M``.

    Examples
    --------
    >>> M = np.array([[4.0, 2.0], [2.0, 3.0]])
    >>> f = DenseCholesky(M)
    >>> bool(np.allclose(f.L @ f.L.T, M)), bool(np.allclose(f.inverse() @ M, np.eye(2)))
    (True, True)
    >>> DenseCholesky(np.array([[1.0, 2.0], [2.0, 1.0]]))
    Traceback (most recent call last):
    ...
    numpy.linalg.LinAlgError: matrix is not positive definite (leading minor 2)
    """

    __slots__ = ("L", "_inv", "logdet")

    def __init__(self, M: np.ndarray, *, overwrite: bool = False) -> None:
        L, info = lapack.dpotrf(M, lower=1, clean=1, overwrite_a=overwrite)
        if info != 0:
            raise np.linalg.LinAlgError(f"matrix is not positive definite (leading minor {info})")
        self.L = L
        self.logdet = 2.0 * float(np.sum(np.log(np.diag(L))))
        self._inv: np.ndarray | None = None

    @property
    def cf(self) -> tuple[np.ndarray, bool]:
        """``(L, True)``, the pair ``scipy.linalg.cho_solve`` takes."""
        return self.L, True

    def solve(self, r: np.ndarray) -> np.ndarray:
        """``M^-1 r`` for a vector or a matrix of right-hand sides (a new array)."""
        x, info = lapack.dpotrs(self.L, r, lower=1)
        if info != 0:
            raise ValueError(f"dpotrs: illegal argument {-info}")
        return x

    def inverse(self) -> np.ndarray:
        """``M^-1`` (:func:`cholesky_inverse`; computed once, then kept: do not change it)."""
        if self._inv is None:
            self._inv = cholesky_inverse(self.L)
        return self._inv


class DiagonalSchur:
    """``H = [[diag(D), C], [C', H_rr]]`` factored by eliminating its diagonal first block: the
    Schur complement ``S = H_rr - C' D^-1 C`` (the size of the other terms) gets a
    :class:`DenseCholesky` factor, and ``log det H = sum(log D) + log det S``.

    The first block is a scalar term whose levels each hold one effect (``(1|item)``, the term
    with the most levels, lme4's order); ``C`` is dense or sparse (SciPy), the other terms'
    effects against it.

    Parameters
    ----------
    D : ndarray
        The first block's diagonal (positive).
    C : ndarray or scipy.sparse matrix
        The off-diagonal block, q1 x qr.
    H_rr : ndarray
        The other terms' block, qr x qr (not changed).

    Raises
    ------
    numpy.linalg.LinAlgError
        ``S`` is not positive definite.

    Attributes
    ----------
    G : ndarray or scipy.sparse matrix
        ``D^-1 C``.
    chol : DenseCholesky
        The factor of ``S``.
    logdet : float
        ``log det H``.

    Examples
    --------
    >>> H = np.array([[2.0, 0.0, 1.0], [0.0, 3.0, 1.0], [1.0, 1.0, 4.0]])
    >>> f = DiagonalSchur(np.diag(H)[:2].copy(), H[:2, 2:], H[2:, 2:])
    >>> bool(np.allclose(f.solve(np.ones(3)), np.linalg.solve(H, np.ones(3))))
    True
    >>> bool(np.isclose(f.logdet, np.linalg.slogdet(H)[1]))
    True
    """

    __slots__ = ("C", "D", "G", "chol", "logdet")

    def __init__(self, D: np.ndarray, C: np.ndarray | sparse.spmatrix, H_rr: np.ndarray) -> None:
        self.D, self.C = D, C
        if isinstance(C, np.ndarray):
            self.G = C / D[:, None]
            S = H_rr - C.T @ self.G
        else:
            self.G = sparse.diags(1.0 / D) @ C
            S = H_rr - (C.T @ self.G).toarray()
        self.chol = DenseCholesky(S, overwrite=True)
        self.logdet = float(np.log(D).sum() + self.chol.logdet)

    def solve(self, r: np.ndarray) -> np.ndarray:
        """``H^-1 r`` for a vector or a q x k matrix."""
        q1 = self.D.size
        r1, rr = r[:q1], r[q1:]
        yr = self.chol.solve(rr - self.G.T @ r1)
        D = self.D if r.ndim == 1 else self.D[:, None]
        x1 = (r1 - self.C @ yr) / D
        return np.concatenate([x1, yr]) if r.ndim == 1 else np.vstack([x1, yr])

    def s_inverse(self) -> np.ndarray:
        """``S^-1``, the other terms' block of ``H^-1`` (computed once)."""
        return self.chol.inverse()


class NestedSchur:
    """``H = [[diag(D1), C], [C', diag(D2)]]`` for two nested scalar terms, factored by
    eliminating the inner term: each inner level ``l`` sits in one outer level ``parent[l]``, so
    ``C`` has one entry per row, ``c[l]`` at ``(l, parent[l])``, and the Schur complement
    ``S = diag(D2) - C' diag(D1)^-1 C`` is diagonal: ``log det H = sum(log D1) + sum(log S)`` in
    O(levels), whatever their number.

    Parameters
    ----------
    D1 : ndarray
        The inner term's diagonal (q1).
    c : ndarray
        ``C[l, parent[l]]`` for each inner level (q1).
    D2 : ndarray
        The outer term's diagonal (q2).
    parent : ndarray
        The outer level of each inner level (integers in ``[0, q2)``).
    pool : scipy.sparse matrix, optional
        The q2 x q1 indicator of ``parent`` (``pool[parent[l], l] = 1``), which sums the inner
        levels of each outer level for a matrix of right-hand sides; built on first use when not
        given (a caller that factors the same structure often passes it once built).

    Raises
    ------
    numpy.linalg.LinAlgError
        ``H`` is not positive definite (a pivot of ``D1`` or ``S`` not positive).

    Attributes
    ----------
    D1, c, S : ndarray
        The inner diagonal, the off-diagonal entries and the Schur complement's diagonal.
    cd : ndarray
        ``c / D1`` (``D1^-1 C``'s entries).
    logdet : float
        ``log det H``.

    Examples
    --------
    Two inner levels in one outer level: ``H = [[2, 0, 1], [0, 2, 1], [1, 1, 3]]``.

    >>> f = NestedSchur(np.array([2.0, 2.0]), np.array([1.0, 1.0]), np.array([3.0]), np.array([0, 0]))
    >>> H = np.array([[2.0, 0.0, 1.0], [0.0, 2.0, 1.0], [1.0, 1.0, 3.0]])
    >>> bool(np.isclose(f.logdet, np.log(8.0))), bool(np.allclose(f.solve(np.ones(3)), np.linalg.solve(H, np.ones(3))))
    (True, True)
    >>> bool(np.allclose(f.diagonal_inverse(), np.diag(np.linalg.inv(H))))
    True
    """

    __slots__ = ("D1", "S", "_blocks", "_pool", "c", "cd", "logdet", "parent")

    def __init__(self, D1: np.ndarray, c: np.ndarray, D2: np.ndarray, parent: np.ndarray,
                 pool: sparse.spmatrix | None = None) -> None:
        self.D1, self.c, self.parent, self._pool = D1, c, parent, pool
        self.cd = c / D1
        self.S = D2 - np.bincount(parent, c * self.cd, D2.size)
        if min(D1.min(), self.S.min()) <= 0:
            raise np.linalg.LinAlgError("matrix is not positive definite (nested pivot)")
        self.logdet = float(np.log(D1).sum() + np.log(self.S).sum())
        self._blocks: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @property
    def pool(self) -> sparse.spmatrix:
        """The q2 x q1 indicator of ``parent`` (sums over the inner levels of each outer one)."""
        if self._pool is None:
            q1 = self.parent.size
            self._pool = sparse.csr_matrix((np.ones(q1), (self.parent, np.arange(q1))),
                                           shape=(self.S.size, q1))
        return self._pool

    def reduce(self, r1: np.ndarray, r2: np.ndarray) -> np.ndarray:
        """``r2 - C' D1^-1 r1`` (vectors or matrices): the right-hand side left for the outer
        levels once the inner ones are eliminated; ``S^-1`` of it is the outer part of
        ``H^-1 r``, and ``r' H^-1 r = r1' D1^-1 r1 + reduce' S^-1 reduce``."""
        if r1.ndim == 1:
            return r2 - np.bincount(self.parent, self.cd * r1, self.S.size)
        return r2 - self.pool @ (self.cd[:, None] * r1)

    def back(self, r1: np.ndarray, x2: np.ndarray) -> np.ndarray:
        """The inner part of ``H^-1 r``, ``D1^-1 (r1 - C x2)``, from its outer part ``x2``."""
        x2p = np.take(x2, self.parent, axis=0)
        if r1.ndim == 1:
            return (r1 - self.c * x2p) / self.D1
        return (r1 - self.c[:, None] * x2p) / self.D1[:, None]

    def solve(self, r: np.ndarray) -> np.ndarray:
        """``H^-1 r`` for a vector or a q x k matrix (a new array; the same roundings in both)."""
        q1 = self.D1.size
        rf, rc = r[:q1], r[q1:]
        if r.ndim == 1:
            xc = self.reduce(rf, rc) / self.S
            return np.concatenate([self.back(rf, xc), xc])
        # in place in one q x k array
        out = np.empty(r.shape)
        xf, xc = out[:q1], out[q1:]
        np.subtract(rc, self.pool @ (self.cd[:, None] * rf), out=xc)
        xc /= self.S[:, None]
        np.multiply(self.c[:, None], np.take(xc, self.parent, axis=0), out=xf)
        np.subtract(rf, xf, out=xf)
        xf /= self.D1[:, None]
        return out

    def inverse_blocks(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The 2 x 2 blocks of ``H^-1`` per inner level ``l`` (computed once): ``H^-1[l, l] =
        1/D1 + cd^2/S_p``, ``H^-1[l, parent] = -cd/S_p`` and ``S_p = S[parent]`` (the outer
        diagonal of ``H^-1`` is ``1/S``)."""
        if self._blocks is None:
            Sp = self.S[self.parent]
            self._blocks = (1.0 / self.D1 + self.cd**2 / Sp, -self.cd / Sp, Sp)
        return self._blocks

    def diagonal_inverse(self) -> np.ndarray:
        """The diagonal of ``H^-1``."""
        return np.concatenate([self.inverse_blocks()[0], 1.0 / self.S])


class BlockCholesky:
    """A block-diagonal symmetric positive definite matrix, one ``b x b`` block per level
    (``H`` of one term with ``b`` columns, ``(1 + x|g)``, or the first block of a blocked
    elimination), factored level by level in one batched call.

    Parameters
    ----------
    B : ndarray
        The blocks, ``levels x b x b`` (kept, not copied: do not change them).

    Raises
    ------
    numpy.linalg.LinAlgError
        A block is not positive definite.

    Attributes
    ----------
    B : ndarray
        The blocks.
    L : ndarray
        Their lower Cholesky factors.
    logdet : float
        ``log det`` of the whole matrix.

    Examples
    --------
    >>> B = np.array([[[4.0, 2.0], [2.0, 3.0]], [[1.0, 0.0], [0.0, 2.0]]])
    >>> f = BlockCholesky(B)
    >>> bool(np.isclose(f.logdet, np.log(8.0 * 2.0))), f.solve(np.array([6.0, 5.0, 1.0, 2.0])).round(12).tolist()
    (True, [1.0, 1.0, 1.0, 1.0])
    >>> f.diagonal_inverse().round(4).tolist()
    [0.375, 0.5, 1.0, 0.5]
    """

    __slots__ = ("B", "L", "_inv", "logdet")

    def __init__(self, B: np.ndarray) -> None:
        self.B = B
        self.L = np.linalg.cholesky(B)
        self.logdet = float(2.0 * np.log(np.diagonal(self.L, axis1=1, axis2=2)).sum())
        self._inv: np.ndarray | None = None

    def solve(self, r: np.ndarray) -> np.ndarray:
        """``H^-1 r`` for a vector or a q x k matrix, rows level-major (a new array)."""
        nl, b = self.B.shape[:2]
        if r.ndim == 1:
            return np.linalg.solve(self.B, r.reshape(nl, b, 1)).ravel()
        p = r.shape[1]
        return np.linalg.solve(self.B, r.reshape(nl, b, p)).reshape(-1, p)

    def inverse(self) -> np.ndarray:
        """The blocks of ``H^-1``, ``levels x b x b`` (computed once, then kept: do not change
        them)."""
        if self._inv is None:
            self._inv = np.linalg.inv(self.B)
        return self._inv

    def diagonal_inverse(self) -> np.ndarray:
        """The diagonal of ``H^-1``, level-major."""
        return np.diagonal(self.inverse(), axis1=1, axis2=2).ravel().copy()


class SparseCholesky:
    """A sparse symmetric positive definite matrix factored by SciPy's LU in symmetric mode:
    without pivoting (``diag_pivot_thresh=0``) the LU of a positive definite matrix is its
    ``L D L'`` with a positive pivot each, so the pivots tell whether it is positive definite.

    Use :meth:`of`, which returns None where the matrix is not positive definite.

    Examples
    --------
    >>> H = sparse.csc_matrix(np.array([[2.0, 1.0], [1.0, 2.0]]))
    >>> f = SparseCholesky.of(H)
    >>> round(f.logdet, 12) == round(float(np.log(3.0)), 12), f.solve(np.array([3.0, 3.0])).tolist()
    (True, [1.0, 1.0])
    >>> SparseCholesky.of(sparse.csc_matrix(np.array([[1.0, 2.0], [2.0, 1.0]]))) is None
    True
    """

    __slots__ = ("logdet", "solve")

    def __init__(self, solve: Callable[[np.ndarray], np.ndarray], logdet: float) -> None:
        self.solve = solve
        self.logdet = logdet

    @classmethod
    def of(cls, H: sparse.spmatrix) -> SparseCholesky | None:
        """Factor ``H`` (CSC); None when a pivot is not positive or the LU fails."""
        try:
            lu = splinalg.splu(H, permc_spec="MMD_AT_PLUS_A", diag_pivot_thresh=0.0,
                               options={"SymmetricMode": True})
        except RuntimeError:
            return None
        diag = lu.U.diagonal()
        if np.any(diag <= 0):
            return None
        return cls(lu.solve, float(np.sum(np.log(diag))))
