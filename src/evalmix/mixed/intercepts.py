"""The Hessian of the Laplace approximation for scalar random intercepts: factorisations, solves,
log-determinant and selected inverse, shared by :mod:`evalmix.tmb` and :mod:`evalmix.ordinal`.

With effects ``b_k = sigma_k u_k`` of each term k and row weights ``w`` (minus the second
derivative of each row's log-density over the linear predictor), the Hessian of the joint
log-density over the spherical effects ``u`` is ``H = Lambda Z' W Z Lambda + I``.  It is factored
by the structure of the terms:

- one term: ``H`` is diagonal;
- two nested terms (``(1|item) + (1|item:run)``: each level of the first in one level of the
  second): the first term's block is diagonal and so is its Schur complement, O(n) whatever the
  number of levels;
- otherwise the first term's block (each row has one level) is diagonal and the others go through
  its Schur complement, a dense Cholesky factor of up to :data:`DENSE_MAX` effects (models x models
  for ``(1|item) + (1|model)``);
- beyond: SciPy's sparse LU of the whole ``H``.

The selected inverse (:attr:`HessianFactor.rows_inv`: the entries of ``H^-1`` at each row's levels)
is what the derivative of ``log det H`` needs; the first three structures give it.  The nested
factorisation, the Schur complement and the sparse LU are those of :mod:`evalmix.mixed.linalg`,
which glmer's and lmer's factorisations share; the loop that finds the modes is
:func:`evalmix.mixed.modes.laplace_modes`.

Examples
--------
Four rows, each its own level of the first term, two per level of the second (each block of
``H`` is ``[[2, 0, 1], [0, 2, 1], [1, 1, 3]]``, determinant 8):

>>> import numpy as np
>>> h = InterceptHessian([np.array([0, 1, 2, 3]), np.array([0, 0, 1, 1])], [4, 2])
>>> f = h.factor(np.ones(6), np.ones(4))
>>> round(f.logdet, 6), f.solve(np.ones(6)).round(4).tolist()
(4.158883, [0.5, 0.5, 0.5, 0.5, 0.0, 0.0])
>>> f.rows_inv()[0].round(4).tolist()
[[0.625, -0.25], [-0.25, 0.5]]
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import NamedTuple, Protocol, TypeVar

import numpy as np
from scipy import sparse

from .linalg import DiagonalSchur, NestedSchur, SparseCholesky, cholesky_inverse

__all__ = ["HasModes", "HessianFactor", "InterceptHessian", "LaplaceAdjoint", "cholesky_inverse", "hessian_at_modes",
           "newton_polish"]

#: the most random effects outside the first term whose Schur complement is factored dense
DENSE_MAX = 2000
#: the largest first-term x other-effects block B stored dense (8 bytes each: 32 MB)
DENSE_B_MAX = 4_000_000
#: two nested terms go through the diagonal Schur complement (off: the dense Schur complement or
#: the sparse LU, as for other designs; the tests compare the three)
NESTED_FAST = True


def newton_polish(par: np.ndarray, value: float, objective: Callable[[np.ndarray], float],
                  gradient: Callable[[np.ndarray], np.ndarray],
                  hessian: Callable[[np.ndarray, np.ndarray], np.ndarray],
                  interior: Callable[[np.ndarray], np.ndarray], *, max_steps: int, gtol: float,
                  keep_step: float | None = None) -> tuple[np.ndarray, float, int, np.ndarray | None]:
    """Newton steps over the interior parameters of a Laplace objective from where L-BFGS-B
    stopped (it stops a little short on flat ridges): the polish of :mod:`evalmix.tmb` and
    :mod:`evalmix.ordinal`.

    A step is taken while the largest interior gradient component is at least ``gtol`` and the
    step lowers the objective; otherwise the objective is evaluated again at the last point (it
    leaves the conditional modes where it was last called).

    Parameters
    ----------
    par, value : ndarray, float
        The optimiser's parameters and ``objective(par)``.
    objective, gradient : callable
        ``objective(par) -> float`` and its exact gradient over every parameter.
    hessian : callable
        ``hessian(par, interior) -> ndarray``: the Hessian over the interior parameters.
    interior : callable
        ``interior(par) -> bool mask`` of the parameters off the boundary.
    max_steps : int
    gtol : float
    keep_step : float, optional
        Keep the Hessian after a step shorter than this (it moved by less than that relative to
        itself) and return the Hessian at the returned point; None: a Hessian at every step, none
        returned.

    Returns
    -------
    (par, value, steps, hessian)

    Examples
    --------
    >>> import numpy as np
    >>> f = lambda x: float((x[0] - 1) ** 2 + 2 * x[1] ** 2)
    >>> grad = lambda x: np.array([2 * (x[0] - 1), 4 * x[1]])
    >>> hess = lambda x, keep: np.diag([2.0, 4.0])[np.ix_(keep, keep)]
    >>> par, value, steps, _ = newton_polish(np.array([0.9, 0.1]), f(np.array([0.9, 0.1])), f, grad,
    ...                                      hess, lambda x: np.ones(2, bool), max_steps=5, gtol=1e-8)
    >>> par.tolist(), value, steps
    ([1.0, 0.0], 0.0, 1)
    """
    H: np.ndarray | None = None
    steps = 0
    for _ in range(max_steps):
        inside = interior(par)
        g = gradient(par)[inside]
        if keep_step is not None and (H is None or H.shape[0] != len(g)):
            H = hessian(par, inside)  # the caller needs it at the returned point anyway
        if np.max(np.abs(g), initial=0.0) < gtol:
            break
        if keep_step is None:
            H = hessian(par, inside)
        assert H is not None
        try:
            step = np.linalg.solve(H, g)
        except np.linalg.LinAlgError:
            break
        trial = par.copy()
        trial[inside] -= step
        v = objective(trial)
        if not v < value:
            objective(par)
            break
        par, value = trial, v
        if keep_step is None or not np.max(np.abs(step)) < keep_step:
            H = None
        steps += 1
    return par, value, steps, H


@dataclass
class HessianFactor:
    """A factorisation of ``H``: its solve, ``log det H`` and, where cheap, the selected inverse
    ``rows_inv()``: for each data row the entries of ``H^-1`` at that row's levels, an
    (n, terms, terms) array (None: not available, the caller differences instead)."""

    solve: Callable[[np.ndarray], np.ndarray]
    logdet: float
    rows_inv: Callable[[], np.ndarray] | None = None


class LaplaceAdjoint(NamedTuple):
    """What :meth:`InterceptHessian.laplace_adjoint` returns: ``r`` (the gradient over each
    row's linear predictor), ``at = Z Lambda H^-1 Lambda Z' c``, the leverages ``lev`` and the
    gradient over each term's log SD, ``g_sd``."""

    r: np.ndarray
    at: np.ndarray
    lev: np.ndarray
    g_sd: np.ndarray


class InterceptHessian:
    """The structure of ``H`` for the random intercepts ``groups`` (each row's level, per term;
    the term with the most levels first, lme4's order, makes the Schur complement smallest) with
    ``nlevels`` levels each.  The structure is read once; :meth:`factor` is called per evaluation.
    """

    def __init__(self, groups: Sequence[np.ndarray], nlevels: Sequence[int]) -> None:
        self.groups = [np.asarray(g, dtype=np.int64) for g in groups]
        self.nlevels = [int(k) for k in nlevels]
        self.nsd = len(self.groups)
        self.n = len(self.groups[0])
        self.offsets = np.concatenate([[0], np.cumsum(self.nlevels)]).astype(np.int64)
        self.q = int(self.offsets[-1])
        self.cols = [g + o for g, o in zip(self.groups, self.offsets[:-1])]
        self._cols = self.cols
        self.Z = sparse.csr_matrix((np.ones(self.n * self.nsd),
                                    (np.tile(np.arange(self.n), self.nsd), np.concatenate(self.cols))),
                                   shape=(self.n, self.q))
        # Several terms: H is factored by blocks.  The first term (the most levels, lme4's
        # order) has a diagonal block D1 (each row has one level); the rest, qr effects, go
        # through the Schur complement S = H_rest - B' D1^-1 B, dense when qr <= DENSE_MAX.
        # For (1|item:run) + (1|item) S is items x items, for (1|item) + (1|model) models x models.
        self.q1 = int(self.nlevels[0])
        self.qr = self.q - self.q1
        self._parent: np.ndarray | None = None
        if self.nsd == 2 and NESTED_FAST:
            # the first term nested in the second: each of its levels meets one level of the second
            parent = np.full(self.q1, -1, dtype=np.int64)
            parent[self.groups[0]] = self.groups[1]
            if np.array_equal(parent[self.groups[0]], self.groups[1]):
                # a level of the first term without rows gets any parent (its effect is 0)
                self._parent = np.where(parent < 0, 0, parent)
        if self._parent is None and self.nsd > 1 and self.qr <= DENSE_MAX:
            rest = [c - self.q1 for c in self._cols[1:]]
            self._b_rows = np.tile(self.groups[0], self.nsd - 1)
            self._b_cols = np.concatenate(rest)
            self._b_flat = self._b_rows * self.qr + self._b_cols
            # flat (row, column) positions in H_rest of the blocks on and below its diagonal
            pairs = [(k, m) for k in range(len(rest)) for m in range(k + 1)]
            self._rest_pairs = len(pairs)
            self._pairs = np.concatenate([rest[k] * self.qr + rest[m] for k, m in pairs])

    def z_times(self, b: np.ndarray) -> np.ndarray:
        """``Z b``: each row's sum of its levels' entries of ``b``."""
        out = np.zeros(self.n)
        for c in self._cols:
            out += b[c]
        return out

    def zt_times(self, r: np.ndarray) -> np.ndarray:
        """``Z' r``: the sums of ``r`` over each level, term after term."""
        return np.concatenate([np.bincount(g, weights=r, minlength=nl)
                               for g, nl in zip(self.groups, self.nlevels)])

    def laplace_adjoint(self, fac: HessianFactor, sd: np.ndarray, sd_cols: np.ndarray, u: np.ndarray,
                        effects: Sequence[np.ndarray], d1: np.ndarray, d2: np.ndarray,
                        d3: np.ndarray) -> LaplaceAdjoint:
        """The pieces of the exact gradient of minus a Laplace log-likelihood at the modes ``u``
        that every family shares (glmmtmb's and clmm's: the rows' log-density enters only through
        its derivatives ``d1``, ``d2``, ``d3`` over the linear predictor).

        With ``P`` the selected inverse scaled by the SDs (``P[i, k, m] = s_k s_m H^-1`` at row
        i's levels of terms k and m), the leverage ``lev_i = sum P[i]``, ``c = -lev d3 / 2``,
        ``a = H^-1 Lambda Z' c`` (the adjoint of the modes' derivative), ``at = Z Lambda a`` and
        ``r = -d1 + c + d2 at``: the gradient over the fixed effects is ``X' r`` and over the log
        SD of term k ``b_k' r + u_k' a_k + sum_i w_i sum_m P[i, k, m]`` (``b_k`` each row's
        effect of term k, ``effects[k]``; ``w = -d2``).

        Parameters
        ----------
        fac : HessianFactor
            The factor of ``H`` at the modes, with its selected inverse.
        sd, sd_cols : ndarray
            The SD of each term and of each effect.
        u : ndarray
            The spherical modes.
        effects : sequence of ndarray
            Each term's effect on each row (``sd[k] * u`` at the row's level).
        d1, d2, d3 : ndarray
            The rows' first three derivatives of the log-density over the linear predictor.

        Returns
        -------
        LaplaceAdjoint
            ``r``, ``at``, ``lev`` and ``g_sd`` (the gradient over each term's log SD).
        """
        assert fac.rows_inv is not None
        P = fac.rows_inv() * (sd[None, :, None] * sd[None, None, :])
        by_term = P.sum(axis=2)  # sum over m of P[i, k, m]
        lev = by_term.sum(axis=1)
        c = -0.5 * lev * d3
        a = fac.solve(sd_cols * self.zt_times(c))
        at = self.z_times(sd_cols * a)
        r = -d1 + c + d2 * at
        w = -d2
        g_sd = np.empty(self.nsd)
        for k in range(self.nsd):
            lo, hi = self.offsets[k], self.offsets[k + 1]
            g_sd[k] = effects[k] @ r + u[lo:hi] @ a[lo:hi] + w @ by_term[:, k]
        return LaplaceAdjoint(r, at, lev, g_sd)

    def factor(self, sd_cols: np.ndarray, w: np.ndarray) -> HessianFactor | None:
        """Factor ``H = Lambda Z' W Z Lambda + I`` at the SD of each effect (``sd_cols``) and the
        row weights ``w``; None when ``H`` is not positive definite."""
        g0 = self.groups[0]
        if self.nsd == 1:
            d = 1.0 + sd_cols**2 * np.bincount(g0, weights=w, minlength=self.q)
            if np.any(d <= 0):
                return None
            return HessianFactor(lambda r: r / d, float(np.sum(np.log(d))),
                                 lambda: (1.0 / d)[g0][:, None, None])
        if self._parent is not None:
            return self._factor_nested(sd_cols, w)
        if self.qr <= DENSE_MAX:
            return self._factor_schur(sd_cols, w)
        zl = self.Z @ sparse.diags(sd_cols)
        Hs = (zl.T @ sparse.diags(w) @ zl + sparse.identity(self.q)).tocsc()
        lu = SparseCholesky.of(Hs)  # None: a pivot not positive, H not positive definite
        return None if lu is None else HessianFactor(lu.solve, lu.logdet)  # no selected inverse

    def _factor_nested(self, sd_cols: np.ndarray, w: np.ndarray) -> HessianFactor | None:
        """Two nested terms: H = [[D1, B], [B', D2]] with D1, D2 diagonal and one entry per row of
        B (a level's parent), so the Schur complement S = D2 - B' D1^-1 B is diagonal
        (:class:`~evalmix.mixed.linalg.NestedSchur`)."""
        parent = self._parent
        assert parent is not None
        q1, q2 = self.q1, self.qr
        s1, s2 = sd_cols[:q1], sd_cols[q1:]
        w1 = np.bincount(self.groups[0], weights=w, minlength=q1)
        try:
            nest = NestedSchur(1.0 + s1**2 * w1, w1 * s1 * s2[parent],  # B[l, parent(l)]
                               1.0 + s2**2 * np.bincount(parent, weights=w1, minlength=q2), parent)
        except np.linalg.LinAlgError:
            return None

        def rows_inv() -> np.ndarray:
            g0, g1 = self.groups
            h11, h12, _ = nest.inverse_blocks()
            out = np.empty((len(g0), 2, 2))
            out[:, 0, 0] = h11[g0]
            out[:, 0, 1] = out[:, 1, 0] = h12[g0]
            out[:, 1, 1] = (1.0 / nest.S)[g1]
            return out

        return HessianFactor(nest.solve, nest.logdet, rows_inv)

    def _factor_schur(self, sd_cols: np.ndarray, w: np.ndarray) -> HessianFactor | None:
        """Several terms, the rest small: the dense Cholesky factor of the Schur complement of the
        first term's diagonal block."""
        q1, qr = self.q1, self.qr
        s1, sr = sd_cols[:q1], sd_cols[q1:]
        d1 = 1.0 + s1**2 * np.bincount(self.groups[0], weights=w, minlength=q1)
        if np.any(d1 <= 0):
            return None
        wr = np.tile(w, self.nsd - 1)
        B: np.ndarray | sparse.csr_matrix
        if q1 * qr <= DENSE_B_MAX:  # B dense: one bincount, products by BLAS
            B = np.bincount(self._b_flat, weights=wr, minlength=q1 * qr).reshape(q1, qr)
            B *= s1[:, None]
            B *= sr[None, :]
        else:
            B = sparse.csr_matrix((wr * s1[self._b_rows] * sr[self._b_cols],
                                   (self._b_rows, self._b_cols)), shape=(q1, qr))
        flat = np.bincount(self._pairs, weights=np.tile(w, self._rest_pairs), minlength=qr * qr)
        low = flat.reshape(qr, qr)  # the blocks on and below the diagonal
        Hr = (low + low.T - np.diag(np.diag(low))) * np.outer(sr, sr) + np.eye(qr)
        try:
            schur = DiagonalSchur(d1, B, Hr)
        except np.linalg.LinAlgError:
            return None

        def rows_inv() -> np.ndarray:
            # H^-1 = [[D1^-1 + M BD', -M], [-M', S^-1]] with M = BD S^-1
            BD = schur.G
            assert isinstance(BD, np.ndarray)
            # S^-1 by solves against I (dpotri's inverse rounds differently and moves the
            # optimiser's path of the exact-gradient fits by about 1e-8)
            Sinv = schur.chol.solve(np.eye(qr))
            M = BD @ Sinv
            diag11 = 1.0 / d1 + np.einsum("ij,ij->i", M, BD)
            g0 = self.groups[0]
            rest = [col - q1 for col in self._cols[1:]]
            out = np.empty((len(g0), self.nsd, self.nsd))
            out[:, 0, 0] = diag11[g0]
            for k, ck in enumerate(rest, start=1):
                out[:, 0, k] = out[:, k, 0] = -M[g0, ck]
                for m, cm in enumerate(rest[:k], start=1):
                    out[:, k, m] = out[:, m, k] = Sinv[ck, cm]
                out[:, k, k] = Sinv[ck, ck]
            return out

        return HessianFactor(schur.solve, schur.logdet, rows_inv if isinstance(B, np.ndarray) else None)


_T = TypeVar("_T")


class HasModes(Protocol):
    """A Laplace objective that keeps its conditional modes ``u`` between evaluations (each
    evaluation's inner Newton solve starts from them)."""

    u: np.ndarray


def hessian_at_modes(model: HasModes, objective: Callable[[np.ndarray], float],
                     gradient: Callable[[np.ndarray], np.ndarray] | None, par: np.ndarray,
                     which: np.ndarray, *, value_step: float, gradient_step: float) -> np.ndarray:
    """Hessian of a Laplace objective over the parameters ``which`` at ``par``, every evaluation
    started from the modes at ``par`` (so that the differences are reproducible): central
    differences of ``gradient`` (step ``gradient_step``, made symmetric: R's ``optimHess``) when
    it is exact, else central second differences of ``objective`` (step ``value_step``).  The
    model is left at ``par``'s modes.

    Examples
    --------
    >>> class Quadratic:
    ...     u = np.zeros(1)
    ...     def value(self, x): return float(x[0] ** 2 + 3 * x[0] * x[1] + 2 * x[1] ** 2)
    ...     def grad(self, x): return np.array([2 * x[0] + 3 * x[1], 3 * x[0] + 4 * x[1]])
    >>> q = Quadratic()
    >>> hessian_at_modes(q, q.value, q.grad, np.ones(2), np.array([True, True]),
    ...                  value_step=1e-4, gradient_step=1e-5).round(6).tolist()
    [[2.0, 3.0], [3.0, 4.0]]
    """
    from .numdiff import central_hessian, gradient_jacobian

    f0 = objective(par)
    u0 = model.u.copy()

    def restarted(fn: Callable[[np.ndarray], _T]) -> Callable[[np.ndarray], _T]:
        def at_modes(x: np.ndarray) -> _T:
            model.u = u0.copy()
            return fn(x)
        return at_modes

    if gradient is None:
        H = central_hessian(restarted(objective), par, which, value_step, f0=f0)
    else:
        H = gradient_jacobian(restarted(gradient), par, which, gradient_step)
    model.u = u0
    objective(par)
    return H
