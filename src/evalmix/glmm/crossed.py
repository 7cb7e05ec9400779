"""Two crossed random intercepts on a (nearly) complete grid: ``(1|model) + (1|item)``.

A leaderboard where every model answers every item is a dense models x items grid. With two
scalar intercepts the random-effects system is

    H = [[D_b, C'], [C, D_s]],   D_b = 1 + t_b^2 colsum(W),  D_s = 1 + t_s^2 rowsum(W),
                                  C = t_s t_b W,

``W`` the small-by-big grid of the summed PIRLS weights of each cell (``s`` the factor with fewer
levels, ``b`` the one with more). Eliminating the diagonal block of the larger factor leaves the
Schur complement ``S = D_s - C D_b^-1 C'``, one symmetric rank-k product (BLAS ``syrk``) of the
grid scaled by ``D_b^-1/2``; its Cholesky factor gives ``log det H``, every solve and the blocks of
``H^-1`` the leverages and the exact theta gradient need. Row sums and column sums of the grid
replace the scatter-adds (``bincount``) and the index arrays of the general sparse Schur solver.

When the rows are the cells in grid order (one row per (model, item) pair, sorted by either
factor, the usual layout of an aggregated leaderboard) every per-row vector *is* the grid: no
gather or scatter at all. Otherwise each row's cell is looked up once and cells are summed
(several rows may share a cell, e.g. when a fixed covariate varies within it).
"""

from __future__ import annotations

import contextlib
import os
from typing import TYPE_CHECKING, Any

import numpy as np
import scipy.linalg as sla

from ..model import RandomTerm
from ..mixed.linalg import DenseCholesky
from .control import DEFAULT_CONTROL, GlmerControl

if TYPE_CHECKING:
    from ..model import FixedMatrix


_SYRK_BLOCK = 1 << 21  # cells of the grid scaled at a time (16 MB: glibc reuses such blocks)
_dsyrk = sla.blas.dsyrk


def _all_cores(flops: float) -> contextlib.AbstractContextManager[Any]:
    """Let BLAS use every core for one large product (fits otherwise hold it to one thread,
    which is faster for the many small products of a fit)."""
    if flops < 2e9:
        return contextlib.nullcontext()
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        return contextlib.nullcontext()
    return threadpool_limits(limits=os.cpu_count(), user_api="blas")


class CrossedGridSolver:
    """Exact solver for ``(1|a) + (1|b)`` on a dense grid of cells (see the module docstring).

    The methods are those of the other solvers of :mod:`evalmix.glmm.deviance` (``factor``,
    ``solve``, ``zl``, ``zlt``, ``leverage``, ``grad_theta``, ``cond_var``, ``hinv_blocks``),
    with the random effects in lme4's order (all levels of the first term, then the second).
    """

    def __init__(self, terms: list[RandomTerm], control: GlmerControl = DEFAULT_CONTROL):
        self.control = control
        t0, t1 = terms
        self.terms = terms
        self.n = t0.index.size
        self.nl = (t0.nl, t1.nl)
        self.q = t0.nl + t1.nl
        # s: the factor with fewer levels (the Schur complement is s x s), b: the other
        self.ib = 0 if t0.nl >= t1.nl else 1
        self.is_ = 1 - self.ib
        self.bidx, self.sidx = terms[self.ib].index, terms[self.is_].index
        self.nb, self.ns = terms[self.ib].nl, terms[self.is_].nl
        ncell = self.nb * self.ns
        # rows already the cells in grid order: by small factor then big, or the transpose
        self.layout = "cells"
        if self.n == ncell:
            ar = np.arange(self.n)
            if np.array_equal(self.sidx * self.nb + self.bidx, ar):
                self.layout = "sb"
            elif np.array_equal(self.bidx * self.ns + self.sidx, ar):
                self.layout = "bs"
        if self.layout == "cells":
            self.cell = self.sidx.astype(np.int64) * self.nb + self.bidx
        self.weights: np.ndarray | None = None
        self._parts_cache: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None

    @staticmethod
    def applies(terms: list[RandomTerm], control: GlmerControl = DEFAULT_CONTROL) -> bool:
        """Two scalar intercepts, a grid within ``control``'s limits, enough cells observed."""
        if len(terms) != 2 or any(t.nc != 1 or t.expr.strip() != "1" for t in terms):
            return False
        ncell = terms[0].nl * terms[1].nl
        if not control.grid_min_cells <= ncell <= control.grid_max_cells \
                or min(terms[0].nl, terms[1].nl) > control.grid_max_small:
            return False
        if terms[0].group == terms[1].group:
            return False
        cells = terms[0].index.astype(np.int64) * terms[1].nl + terms[1].index
        if cells.size < control.grid_fill * ncell:
            return False
        # nested factors (each level of one inside one level of the other) are the nested
        # solver's case; a grid needs the crossing to be nearly complete
        seen = np.zeros(ncell, dtype=bool)
        seen[cells] = True
        return bool(seen.sum() >= control.grid_fill * ncell)

    # -- per-row <-> grid -------------------------------------------------------------------
    def _grid(self, r: np.ndarray) -> np.ndarray:
        """Cell sums of a per-row vector as an (ns x nb) array (a view when rows are cells)."""
        if self.layout == "sb":
            return r.reshape(self.ns, self.nb)
        if self.layout == "bs":
            return r.reshape(self.nb, self.ns).T
        return np.bincount(self.cell, r, self.ns * self.nb).reshape(self.ns, self.nb)

    def _rows(self, g: np.ndarray) -> np.ndarray:
        """Per-row values of an (ns x nb) grid."""
        if self.layout == "sb":
            return np.ascontiguousarray(g).ravel()
        if self.layout == "bs":
            return np.ascontiguousarray(g.T).ravel()
        return g[self.sidx, self.bidx]

    def _split(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(big, small) parts of a vector (or rows of a matrix) in lme4 order."""
        n0 = self.nl[0]
        a, b = u[:n0], u[n0:]
        return (a, b) if self.ib == 0 else (b, a)

    def _join(self, xb: np.ndarray, xs: np.ndarray) -> np.ndarray:
        parts = [xb, xs] if self.ib == 0 else [xs, xb]
        return np.concatenate(parts) if xb.ndim == 1 else np.vstack(parts)

    # -- the solver interface ---------------------------------------------------------------
    def set_theta(self, theta: np.ndarray) -> None:
        self.tb, self.ts = float(theta[self.ib]), float(theta[self.is_])

    def zl(self, u: np.ndarray) -> np.ndarray:
        ub, us = self._split(u)
        if self.layout == "sb":
            return (self.ts * us[:, None] + self.tb * ub[None, :]).ravel()
        if self.layout == "bs":
            return (self.tb * ub[:, None] + self.ts * us[None, :]).ravel()
        return self.tb * ub[self.bidx] + self.ts * us[self.sidx]

    def zlt(self, r: np.ndarray) -> np.ndarray:
        if self.layout == "cells":
            rb = np.bincount(self.bidx, r, self.nb)
            rs = np.bincount(self.sidx, r, self.ns)
        else:
            g = self._grid(r)
            rb, rs = g.sum(axis=0), g.sum(axis=1)
        return self._join(self.tb * rb, self.ts * rs)

    def zlt_wx(self, X: FixedMatrix, w: np.ndarray) -> np.ndarray:
        """``A' W X`` (q x p)."""
        if X.X is None and X.npat == 1 and self.layout != "cells":
            # one fixed-effect pattern (an intercept-only model): grid sums times that row
            g = self._grid(w)
            x = X.unique_rows[0]
            return self._join(self.tb * np.outer(g.sum(axis=0), x),
                              self.ts * np.outer(g.sum(axis=1), x))
        cap = self.control.group_table_max
        sb = self.tb * X.group_wsum(self.bidx, self.nb, w, cap)
        ss = self.ts * X.group_wsum(self.sidx, self.ns, w, cap)
        return self._join(sb, ss)

    def factor(self, w: np.ndarray) -> float:
        self.weights = w
        W = self._grid(w)
        self.W = W
        self.Db = 1.0 + self.tb**2 * W.sum(axis=0)
        Ds = 1.0 + self.ts**2 * W.sum(axis=1)
        c = self.ts * self.tb
        # S = D_s - C D_b^-1 C' = D_s - c^2 (W D_b^-1/2)(W D_b^-1/2)', one syrk per block of
        # columns: a block of the scaled grid (at most _SYRK_BLOCK cells) rather than a copy of
        # the whole grid, which at 40M cells is 320 MB for the kernel to zero at each factor
        scale = c / np.sqrt(self.Db)
        S = np.zeros((self.ns, self.ns), order="F")
        cols = max(1, _SYRK_BLOCK // self.ns)
        with _all_cores(self.ns**2 * self.nb):
            for j in range(0, self.nb, cols):
                Xs = W[:, j:j + cols] * scale[None, j:j + cols]
                # Xs' is Fortran-ordered: syrk on it (trans=1) forms Xs Xs' without a copy
                S = _dsyrk(alpha=-1.0, a=Xs.T, beta=1.0, c=S, trans=1, lower=1, overwrite_c=1)
        del Xs
        S[np.diag_indices_from(S)] += Ds
        # S is Fortran-ordered: factored in place, without a copy of ns x ns
        self.chol = DenseCholesky(S, overwrite=True)
        self._parts_cache = None
        return float(np.log(self.Db).sum() + self.chol.logdet)

    def _ct(self, x: np.ndarray) -> np.ndarray:
        """``C' x`` (big levels) for x over the small levels (vector or matrix)."""
        return (self.ts * self.tb) * (self.W.T @ x)

    def solve(self, r: np.ndarray) -> np.ndarray:
        rb, rs = self._split(r)
        Db = self.Db if r.ndim == 1 else self.Db[:, None]
        # C D_b^-1 r_b, C = c W (small x big)
        ys = self.chol.solve(rs - (self.ts * self.tb) * (self.W @ (rb / Db)))
        xb = (rb - self._ct(ys)) / Db
        return self._join(xb, ys)

    def _parts(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``S^-1``, ``(G S^-1)'`` as an (ns x nb) grid (``G = D_b^-1 C'``) and
        ``m_b = g_b' S^-1 g_b``, the pieces of ``H^-1`` the leverages and gradients read."""
        if self._parts_cache is None:
            Sinv = self.chol.inverse()
            scale = (self.ts * self.tb) / self.Db  # G' = W diag(scale)
            with _all_cores(2 * self.ns**2 * self.nb):
                GSt = Sinv @ self.W
            GSt *= scale[None, :]
            m = np.einsum("sb,sb->b", self.W, GSt) * scale
            self._parts_cache = (Sinv, GSt, m)
        return self._parts_cache

    def leverage(self) -> np.ndarray:
        """``h_i = a_i' H^-1 a_i`` for each row: ``t_b^2 H^-1_bb + t_s^2 H^-1_ss + 2 t_b t_s
        H^-1_bs`` with ``H^-1_bb = 1/D_b + m_b``, ``H^-1_ss = S^-1_ss``, ``H^-1_bs = -(G S^-1)_bs``."""
        Sinv, GSt, m = self._parts()
        h = GSt * (-2.0 * self.tb * self.ts)
        h += (self.tb**2 * (1.0 / self.Db + m))[None, :]
        h += (self.ts**2 * np.diag(Sinv))[:, None]
        return self._rows(h)

    def grad_theta(self, rho: np.ndarray, r: np.ndarray, u: np.ndarray,
                   v: np.ndarray) -> np.ndarray:
        """Exact gradient of the Laplace deviance over theta at fixed beta.

        As :meth:`NestedSolver.grad_theta`: ``rho' E_t u + r' E_t v + 2 tr(H^-1 A'W E_t)``; the
        trace is ``sum_i w_i (H^-1 a_i)_t``, a weighted sum over the grid.
        """
        P, R = self._grid(rho), self._grid(r)
        ub, us = self._split(u)
        vb, vs = self._split(v)
        Sinv, GSt, m = self._parts()
        W = self.W
        # (H^-1 a_i) at the big column: t_b (1/D_b + m_b) - t_s (G S^-1)_bs; at the small one:
        # t_s S^-1_ss - t_b (G S^-1)_bs; weighted by W and summed over the cells
        wg = float(np.einsum("sb,sb->", W, GSt))
        tr_b = self.tb * float(W.sum(axis=0) @ (1.0 / self.Db + m)) - self.ts * wg
        tr_s = self.ts * float(W.sum(axis=1) @ np.diag(Sinv)) - self.tb * wg
        gb = P.sum(axis=0) @ ub + R.sum(axis=0) @ vb + 2.0 * tr_b
        gs = P.sum(axis=1) @ us + R.sum(axis=1) @ vs + 2.0 * tr_s
        return np.array([gb, gs]) if self.ib == 0 else np.array([gs, gb])

    def cond_var(self) -> np.ndarray:
        """Diagonal of ``H^-1`` (the conditional variances of the spherical modes)."""
        Sinv, _, m = self._parts()
        return self._join(1.0 / self.Db + m, np.diag(Sinv).copy())

    def hinv_blocks(self, idx: np.ndarray) -> np.ndarray:
        """Blocks ``H^-1[idx_g, idx_g]`` for an (levels x 1) index array."""
        return self.cond_var()[idx][:, :, None]
