"""Crossed logit GLMMs on a models x items grid of 0/1 or k-of-n answers, in a few bytes a cell.

:func:`glmer_grid` fits ``correct ~ 1 + (1|model) + (1|item)`` and ``correct ~ 0 + model +
(1|item)`` (Laplace, lme4's ``nAGQ = 1`` objective with beta in the outer optimisation) from the
answers alone: an ``int8`` array with one row per model and one column per item. Nothing per cell
is kept but the answers (1 byte) and, for the first formula, the float32 PIRLS weights (4 bytes)
of the last factorisation; every other per-cell quantity (``eta``, ``mu``, the weights in float64,
the residuals, the leverages) is formed for a block of columns at a time and reduced at once to
sums per model and per item, so the peak is about 5 bytes a cell plus the blocks.

k-of-n grids (``trials=``: ``k`` successes of ``n`` runs a cell, the fit of ``glmer("cbind(k, n -
k) ~ ...")``) use the same passes with binomial cells: deviance ``2 (n log(1 + e^eta) - k eta)``,
residual ``k - n mu``, weight ``n mu (1 - mu)``, and ``n = 0`` for an empty cell, which adds
nothing (so incomplete grids fit too). ``k`` and ``n`` are kept in the smallest unsigned dtype that
holds the largest ``n``: up to 255 runs a cell, 2 bytes a cell for both (1 when ``n`` is one number
for every cell), so about 6 bytes a cell with the float32 weights; 8 up to 65,535 runs. The
log-likelihood includes lme4's binomial constant ``sum log C(n, k)``, so it equals lme4's.

Why it is exact (the same objective and the same optimum as the general path):

- the mode ``u~`` is found by Newton's method on the penalised deviance with its gradient in float64
  (sums of float64 residuals); the Hessian that gives each step may be the one of an earlier point
  (a chord step, solved with the float32 weights of that point), which changes how fast the
  iteration converges, never where it stops;
- ``log det H`` is ``sum log D_b + log det S``, ``S`` the Schur complement onto the smaller factor
  accumulated by ``syrk`` in float64 from float64 weights at the mode itself;
- the gradient over ``(theta, beta)`` is the exact one of the Laplace deviance (leverages from
  ``S^-1`` by one GEMM per block of columns), so L-BFGS-B stops at the optimum of the deviance;
- the standard errors are lme4's: for the first formula the inverse of the Hessian of the deviance
  over ``(theta, beta)`` (``vcov_method="hessian_exact"`` of :func:`evalmix.glmer`), here by central
  differences of the exact gradient; for the second, with 2,000 fixed effects, lme4's
  ``use.hessian = FALSE`` matrix (``vcov_method="rx"``): ``S^-1``, ``S`` the Schur complement of the
  items' block in the joint system at the optimum. Either formula takes either method: RX of the
  first is ``X'WX - v' H^-1 v`` with one solve with the factorisation at the mode, and the Hessian
  of the second has its beta block in closed form (:func:`_fixed_hessian`).

The fit is a :class:`~evalmix.glmm.GlmerResult` built as :func:`evalmix.glmer` builds its own
(terms, names and levels from :func:`~evalmix.model.build_design` on a few rows holding every level;
the conditional SDs of ``ranef()`` from the leverages the gradient forms; the summary's residual
quantiles from one float32 pass), without rows. :func:`evalmix.glmer` routes tables of the two
formulas here from ``GlmerControl.grid_rows`` rows.

For ``0 + model + (1|item)`` the items' block of ``H`` is diagonal, so the Laplace deviance is a
sum over items given beta: the modes are one-dimensional Newton steps and ``log det H`` a sum of
logs; the 2,000 fixed effects are found by Newton steps with ``S`` (the Gauss-Newton part of the
deviance's Hessian over beta) and the exact gradient, and theta by L-BFGS-B on the profile.
"""

from __future__ import annotations

from collections.abc import Sequence

import contextlib
import dataclasses
import os
import re
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import scipy.linalg as sla
from scipy import optimize, special

from ..core.errors import ArgumentError, DataError
from ..core.parallel import single_thread_blas
from ..core.seeds import as_generator
from ..mixed.convergence import OptimizerReport, hessian_condition
from ..core.errors import FormulaError
from ..model import GlmmDesign, build_design, parse_formula
from . import _grid_kernels as K
from .control import DEFAULT_CONTROL, GlmerControl
from .optimize import fit_checks
from .result import FittedModel, GlmerResult, varcorr_table

__all__ = ["GridFormula", "count_dtype", "glmer_grid", "grid_formula", "simulate_grid"]

_BLOCK = 1 << 20  # cells formed at a time (8 MB a float64 block; glibc reuses such blocks)
_dsyrk = sla.blas.dsyrk
_COMPILED_MIN = 200_000  # cells from which the compiled passes are used by default


def _blas_threads(flops: float) -> contextlib.AbstractContextManager[Any]:
    """BLAS threads for the ``syrk``/GEMM of a block: one unless ``EVALMIX_GRID_BLAS_THREADS``
    asks for more. Between two blocks' products the compiled pass runs on one thread, and
    OpenBLAS's idle workers spin (``sched_yield``) through it, so a second thread roughly
    doubles the CPU time of the passes for a shorter wall time on an idle machine only."""
    n = int(os.environ.get("EVALMIX_GRID_BLAS_THREADS", "1"))
    if n <= 1 or flops < 2e9:
        return contextlib.nullcontext()
    from threadpoolctl import threadpool_limits

    return threadpool_limits(limits=n, user_api="blas")
_FORMULAS = {"correct ~ 1 + (1|model) + (1|item)": "crossed",
             "correct ~ 0 + model + (1|item)": "fixed"}
_FORMULA_OF = {v: k for k, v in _FORMULAS.items()}
_NAME = re.compile(r"[A-Za-z_.][A-Za-z0-9_.]*")


@dataclass(frozen=True)
class GridFormula:
    """A formula the grid path fits: ``kind`` ``"crossed"`` (``y ~ 1 + (1|rows) + (1|columns)``)
    or ``"fixed"`` (``y ~ 0 + rows + (1|columns)``), with its response and the grouping columns
    of the grid's rows and columns."""

    kind: str
    response: str
    rows: str
    columns: str


def grid_formula(formula: str) -> GridFormula | None:
    """The grid form of ``formula``, or None when the grid path does not fit it.

    Any response and grouping names: ``y ~ 1 + (1|a) + (1|b)`` (or ``y ~ (1|a) + (1|b)``) and
    ``y ~ 0 + a + (1|b)`` (or ``y ~ a - 1 + (1|b)``); ``a`` labels the rows of the grid.

    Examples
    --------
    >>> grid_formula("score ~ 0 + llm + (1 | question)")
    GridFormula(kind='fixed', response='score', rows='llm', columns='question')
    >>> grid_formula("correct ~ model + (1|item)") is None
    True
    """
    try:
        parsed = parse_formula(str(formula))
    except FormulaError:
        return None
    if parsed.failures is not None or parsed.trials is not None or parsed.offsets:
        return None
    groups = [r.group[0] for r in parsed.random if r.expr.strip() == "1" and len(r.group) == 1]
    if len(groups) != len(parsed.random):
        return None
    zero, names = False, []
    for term in parsed.fixed_terms:
        if term in ("0", "-1"):
            zero = True
        elif term.endswith("- 1") and term != "- 1":
            zero, name = True, term[:-3].strip()
            names.append(name)
        elif term != "1":
            names.append(term)
    y = parsed.successes
    if not zero and not names and len(groups) == 2:
        kind, rows, cols = "crossed", groups[0], groups[1]
    elif zero and len(names) == 1 and len(groups) == 1:
        kind, rows, cols = "fixed", names[0], groups[0]
    else:
        return None
    if not all(_NAME.fullmatch(n) for n in (y, rows, cols)) or len({y, rows, cols}) < 3:
        return None
    return GridFormula(kind, y, rows, cols)


def simulate_grid(n_models: int, n_items: int, *, model_sd: float = 1.0, item_sd: float = 1.5,
                  intercept: float = 0.0, rng: int | np.random.Generator | None = None, block_rows: int = 64,
                  trials: np.ndarray | int | None = None) -> tuple[np.ndarray, dict[str, Any]]:
    """A seeded models x items grid of 0/1 answers, ``logit p = intercept + ability + easiness``.

    Generated a block of models at a time (float32 probabilities of ``block_rows`` models), so a
    10^8-cell grid needs its 100 MB of answers and little more. With ``trials`` (one number for
    every cell, or an integer array of shape ``(n_models, n_items)``, 0 for an empty cell) each
    cell holds the successes ``k ~ Binomial(n, p)`` of its ``n`` runs instead (float64 ``p``).

    Returns
    -------
    y : numpy.ndarray
        ``int8``, shape ``(n_models, n_items)``; with ``trials``, the successes in the smallest
        unsigned dtype that holds the largest ``n`` (``uint8`` up to 255).
    truth : dict
        ``ability`` and ``easiness`` (the simulated effects), their sample SDs ``model_sd`` and
        ``item_sd``, and ``intercept``.

    Examples
    --------
    >>> y, truth = simulate_grid(3, 4, rng=1)
    >>> y.shape, y.dtype.name
    ((3, 4), 'int8')
    """
    g = as_generator(rng)
    ability = g.normal(0.0, model_sd, n_models)
    easiness = g.normal(0.0, item_sd, n_items)
    truth = {"ability": ability, "easiness": easiness, "intercept": intercept,
             "model_sd": float(np.std(ability, ddof=1)), "item_sd": float(np.std(easiness, ddof=1))}
    if trials is not None:
        n = np.asarray(trials)
        if n.ndim and n.shape != (n_models, n_items):
            raise ArgumentError(f"simulate_grid: trials must be one number or of shape "
                                f"{(n_models, n_items)}; got shape {n.shape}")
        if not np.issubdtype(n.dtype, np.integer) or int(n.min(initial=0)) < 0:
            raise ArgumentError("simulate_grid: trials must be non-negative integers")
        top = int(n.max(initial=0))
        k = np.empty((n_models, n_items), dtype=count_dtype(top))
        for i in range(0, n_models, block_rows):
            sl = slice(i, min(i + block_rows, n_models))
            p = special.expit((intercept + ability[sl])[:, None] + easiness[None, :])
            k[sl] = g.binomial(n if n.ndim == 0 else n[sl], p)
        return k, truth
    y = np.empty((n_models, n_items), dtype=np.int8)
    e32 = easiness.astype(np.float32)
    for i in range(0, n_models, block_rows):
        sl = slice(i, min(i + block_rows, n_models))
        lin = (intercept + ability[sl]).astype(np.float32)[:, None] + e32[None, :]
        np.negative(lin, out=lin)
        np.exp(lin, out=lin)
        lin += 1.0
        u = g.random((lin.shape[0], n_items), dtype=np.float32)
        np.multiply(u, lin, out=u)  # u < p  <=>  u (1 + exp(-eta)) < 1
        np.less(u, 1.0, out=y[sl])
    return y, truth


def count_dtype(top: int) -> np.dtype:
    """The smallest unsigned integer dtype that holds counts up to ``top``: how a k-of-n grid keeps
    its successes and trials (one byte a cell up to 255 trials).

    Examples
    --------
    >>> count_dtype(100).name, count_dtype(300).name
    ('uint8', 'uint16')
    """
    return next(np.dtype(t) for t in (np.uint8, np.uint16, np.uint32, np.uint64) if top <= np.iinfo(t).max)


def _row_blocks(ns: int, nb: int) -> Any:
    """Slices of whole rows of about ``_BLOCK`` cells, for checks and sums over a grid."""
    rows = max(1, _BLOCK // max(nb, 1))
    for i in range(0, ns, rows):
        yield slice(i, min(i + rows, ns))


def _transpose(trials: Any) -> Any:
    return trials if trials is None or np.ndim(trials) == 0 else np.ascontiguousarray(trials.T)


class _Grid:
    """The answers and the block passes over them (``eta = a_s + c_b`` for model s, item b).

    ``y`` holds the successes ``k`` of each cell and ``trials`` the trials ``n``: None (one trial a
    cell, 0/1 answers), one number for every cell, or an array of the grid's shape (0 for an empty
    cell). Only an array costs memory; the passes read the constant otherwise."""

    def __init__(self, y: np.ndarray, compiled: bool | None = None, trials: Any = None,
                 as_rows: bool = False):
        self.y = y
        self.ns, self.nb = y.shape
        self.n: np.ndarray | None = None if trials is None or np.ndim(trials) == 0 else trials
        self.nconst = 1.0 if trials is None or self.n is not None else float(trials)
        # what the compiled passes get: None for one trial a cell, compiled as the constant 1
        self.kconst = None if self.n is None and self.nconst == 1.0 else self.nconst
        self.cols = max(1, _BLOCK // self.ns)
        self.W32: np.ndarray | None = None
        self.factorizations = 0
        self.compiled = K.HAVE if compiled is None else bool(compiled and K.HAVE)
        k_rows, n_rows = self.row_sums()
        # lme4's nobs of a cbind() fit counts the non-empty cells; rows count the runs
        self.nobs = int(n_rows.sum()) if as_rows or self.n is None and self.nconst == 1.0 else (
            self.ns * self.nb if self.n is None else int(np.count_nonzero(self.n)))
        # -2 sum log C(n, k): the binomial constant of lme4's log-likelihood (0 for 0/1 answers and
        # for cells that count 0/1 rows)
        self.dconst = 0.0 if as_rows or self.n is None and self.nconst == 1.0 else -2.0 * self._log_choose()

    def trials_block(self, sl: slice) -> Any:
        """The trials of the columns ``sl``: an array, or the constant."""
        return self.nconst if self.n is None else self.n[:, sl]

    def row_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """Successes and trials per model (row), as int64."""
        k = self.y.sum(axis=1, dtype=np.int64)
        if self.n is None:
            return k, np.full(self.ns, int(self.nconst) * self.nb, dtype=np.int64)
        return k, self.n.sum(axis=1, dtype=np.int64)

    def _log_choose(self) -> float:
        top = int(self.nconst) if self.n is None else int(self.n.max(initial=0))
        table = special.gammaln(np.arange(top + 1, dtype=np.float64) + 1.0) if top <= 1 << 20 else None
        total = 0.0
        for sl in _row_blocks(self.ns, self.nb):
            k = self.y[sl].astype(np.int64)
            n = np.full_like(k, int(self.nconst)) if self.n is None else self.n[sl].astype(np.int64)
            if table is not None:
                total += float((table[n] - table[k] - table[n - k]).sum())
            else:
                total += float((special.gammaln(n + 1.0) - special.gammaln(k + 1.0)
                                - special.gammaln(n - k + 1.0)).sum())
        return total

    def blocks(self) -> Any:
        for j in range(0, self.nb, self.cols):
            yield slice(j, min(j + self.cols, self.nb))

    def cell_block(self, sl: slice, a: np.ndarray, c: np.ndarray
                   ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, float]:
        """eta, mu, w = n mu(1-mu), r = k - n mu for the columns ``sl``, and the block's deviance
        (NumPy; the compiled passes below do the same a cell at a time)."""
        yb = self.y[:, sl]
        eta = np.add(a[:, None], c[None, sl])
        mu = special.expit(eta)
        w = np.multiply(mu, mu)
        np.subtract(mu, w, out=w)
        if self.n is None and self.nconst == 1.0:
            dev = 2.0 * (float(np.logaddexp(0.0, eta).sum()) - float(np.einsum("sb,sb->", yb, eta)))
            r = np.subtract(yb, mu)
            return eta, mu, w, r, dev
        nb_ = self.nconst if self.n is None else self.n[:, sl]
        dev = 2.0 * (float((nb_ * np.logaddexp(0.0, eta)).sum()) - float(np.einsum("sb,sb->", yb, eta)))
        w *= nb_
        r = np.subtract(yb, mu * nb_)
        return eta, mu, w, r, dev

    def sweep(self, a: np.ndarray, c: np.ndarray, schur: tuple[float, float] | None = None
              ) -> dict[str, Any]:
        """Deviance and sums of residuals and weights per model and per item; with ``schur =
        (kappa, tau)`` also ``sum_b kappa^2 / (1 + tau^2 W_+b) W_.b W_.b'`` (lower triangle, by
        ``syrk`` per block) and the float32 weights kept in ``W32``."""
        ns, nb = self.ns, self.nb
        rr, wr = np.zeros(ns), np.zeros(ns)
        rc, wc = np.empty(nb), np.empty(nb)
        dev = 0.0
        S = None
        store = schur is not None
        if store:
            S = np.zeros((ns, ns), order="F")
            if self.W32 is None:
                self.W32 = np.empty((ns, nb), dtype=np.float32)
        W32 = self.W32 if store and self.W32 is not None else np.empty((1, 1), dtype=np.float32)
        with _blas_threads(ns**2 * nb if store else 0):
            for sl in self.blocks():
                m = sl.stop - sl.start
                if self.compiled:
                    wblk = np.empty((ns, m)) if store else np.empty((1, 1))
                    dev += K.stats_block(self.y, self.n, self.kconst, a, c, sl.start, sl.stop, rr, wr,
                                         rc, wc, store, W32, wblk)
                else:
                    _, _, wblk, r, d = self.cell_block(sl, a, c)
                    dev += d
                    rr += r.sum(axis=1)
                    rc[sl] = r.sum(axis=0)
                    wr += wblk.sum(axis=1)
                    wc[sl] = wblk.sum(axis=0)
                    if store:
                        assert self.W32 is not None
                        self.W32[:, sl] = wblk
                if schur is not None:
                    kappa, tau = schur
                    wblk *= (kappa / np.sqrt(1.0 + tau**2 * wc[sl]))[None, :]
                    S = _dsyrk(alpha=-1.0, a=wblk.T, beta=1.0, c=S, trans=1, lower=1,
                               overwrite_c=1)
        if store:
            self.factorizations += 1
        return {"dev": dev, "rr": rr, "rc": rc, "wr": wr, "wc": wc, "S": S}

    def wdot(self, x: np.ndarray) -> np.ndarray:
        """``W x`` (per model) with the stored float32 weights, accumulated in float64."""
        assert self.W32 is not None
        out = np.zeros(self.ns)
        if self.compiled:
            K.wdot(self.W32, np.ascontiguousarray(x, dtype=np.float64), out)
            return out
        for sl in self.blocks():
            out += self.W32[:, sl].astype(np.float64) @ x[sl]
        return out

    def wtdot(self, x: np.ndarray) -> np.ndarray:
        """``W' x`` (per item) with the stored float32 weights."""
        assert self.W32 is not None
        out = np.empty(self.nb)
        if self.compiled:
            K.wtdot(self.W32, np.ascontiguousarray(x, dtype=np.float64), out)
            return out
        for sl in self.blocks():
            out[sl] = x @ self.W32[:, sl].astype(np.float64)
        return out


class _Crossed:
    """Laplace deviance of ``1 + (1|model) + (1|item)``; s = models (rows), b = items (columns)."""

    tol = 1e-10  # largest Newton step of the modes at convergence
    maxit = 300  # steps of the modes' iteration
    chord = True  # reuse an earlier factorisation for the Newton directions (False: refactor each step)

    def __init__(self, grid: _Grid):
        self.g = grid
        self.us = np.zeros(grid.ns)
        self.ub = np.zeros(grid.nb)
        self.fac: dict[str, Any] | None = None  # the last factorisation (may be of an earlier point)
        self.evaluations = 0
        self._theta_prev: tuple[float, float] | None = None

    # -- passes -----------------------------------------------------------------------------------
    def _stats(self, a: np.ndarray, c: np.ndarray) -> dict[str, Any]:
        return self.g.sweep(a, c)

    def _factor(self, a: np.ndarray, c: np.ndarray, ts: float, tb: float) -> dict[str, Any]:
        """Stats and the Schur complement at one point (stores the float32 weights)."""
        st = self.g.sweep(a, c, schur=(ts * tb, tb))
        S = st.pop("S")
        S[np.diag_indices_from(S)] += 1.0 + ts**2 * st["wr"]
        chol = sla.cho_factor(S, lower=True, overwrite_a=True, check_finite=False)
        Db = 1.0 + tb**2 * st["wc"]
        logdet = float(np.log(Db).sum() + 2.0 * np.log(np.diag(chol[0])).sum())
        st.update(chol=chol, Db=Db, ts=ts, tb=tb, logdet=logdet)
        return st

    def _solve(self, fac: dict[str, Any], rs: np.ndarray, rb: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray]:
        """``H^-1 (r_s, r_b)`` with a factorisation (and the float32 weights stored with it)."""
        c = fac["ts"] * fac["tb"]
        Db = fac["Db"]
        ys = sla.cho_solve(fac["chol"], rs - c * self.g.wdot(rb / Db), check_finite=False)
        xb = (rb - c * self.g.wtdot(ys)) / Db
        return ys, xb

    # -- the deviance -----------------------------------------------------------------------------
    def deviance(self, ts: float, tb: float, beta: float) -> float:
        self.evaluations += 1
        if self._theta_prev is not None:  # keep the random effects on the logit scale
            ps, pb = self._theta_prev
            self.us = self.us * (ps / ts) if ts > 0 and ps > 0 else self.us
            self.ub = self.ub * (pb / tb) if tb > 0 and pb > 0 else self.ub
        self._theta_prev = (ts, tb)
        us, ub = self.us, self.ub
        fac = self.fac  # may be of an earlier point: its steps are chord steps
        prev_step = np.inf
        pdev_prev = np.inf
        since = 0
        old: tuple[np.ndarray, np.ndarray] | None = None
        chord_step = False  # whether the step that led here was solved with an earlier point's H
        self.mode_converged = False
        for _ in range(self.maxit):
            a, c = beta + ts * us, tb * ub
            fresh = fac is None
            st = fac = self._factor(a, c, ts, tb) if fac is None else fac
            if not fresh:
                st = self._stats(a, c)
            pdev = st["dev"] + us @ us + ub @ ub
            if old is not None and pdev > pdev_prev + 1e-12 * abs(pdev_prev):
                if chord_step:
                    # a chord step overshot (the Hessian of another theta, or of weights far
                    # from these: stiff with many trials a cell): back to where it started, and
                    # a Newton step from a factorisation there
                    (us, ub), fac, old, since, prev_step = old, None, None, 0, np.inf
                    continue
                # a Newton step overshot: halve it (a descent direction: H is positive definite)
                us, ub = (old[0] + us) / 2, (old[1] + ub) / 2
                continue
            gs = ts * st["rr"] - us
            gb = tb * st["rc"] - ub
            ds, db = self._solve(fac, gs, gb)
            step = max(float(np.abs(ds).max(initial=0.0)), float(np.abs(db).max(initial=0.0)))
            if step < self.tol:
                if fresh:
                    self.mode_converged = True
                    break
                fac, old = None, None  # converged on an earlier Hessian: factor here
                continue
            chord_step = not fresh
            if not self.chord or not fresh and (step > 0.3 * prev_step or since > 8):
                fac = None  # the chord iteration contracts slowly: refactor at the next point
                since = 0
            old = (us, ub)
            us, ub = us + ds, ub + db
            prev_step, pdev_prev = step, pdev
            since += 1
        if not self.mode_converged:
            # no mode within maxit steps: the deviance of where the iteration stopped, with the
            # log-determinant of that point (never of an earlier one); the fit reports it
            a, c = beta + ts * us, tb * ub
            st = fac = self._factor(a, c, ts, tb)
            pdev = st["dev"] + us @ us + ub @ ub
        self.us, self.ub, self.fac = us, ub, fac
        self.state = st
        self.point = (ts, tb, beta)
        assert fac is not None
        return float(pdev + fac["logdet"] + self.g.dconst)

    def gradient(self) -> np.ndarray:
        """Exact gradient of the Laplace deviance over ``(ts, tb, beta)`` at the last point."""
        g, st, fac = self.g, self.state, self.fac
        assert fac is not None
        ts, tb, beta = self.point
        us, ub = self.us, self.ub
        a, c = beta + ts * us, tb * ub
        Db = fac["Db"]
        Sinv = sla.cho_solve(fac["chol"], np.eye(g.ns), check_finite=False)
        dS = np.diag(Sinv).copy()
        scale = ts * tb / Db
        gr = np.zeros(g.ns)
        gc = np.empty(g.nb)
        m = np.empty(g.nb)
        wg = 0.0
        with _blas_threads(2 * g.ns**2 * g.nb):
            for sl in g.blocks():
                if g.compiled:
                    w, p = np.empty((g.ns, sl.stop - sl.start)), np.empty((g.ns, sl.stop - sl.start))
                    K.weights_block(g.y, g.n, g.kconst, a, c, sl.start, sl.stop, w, p)
                    P = Sinv @ w
                    wg += K.leverage_block(w, p, P, scale, Db, dS, ts, tb, sl.start, m, gr, gc)
                    continue
                _, mu, w, _, _ = g.cell_block(sl, a, c)
                G = Sinv @ w
                G *= scale[None, sl]
                m[sl] = np.einsum("sb,sb->b", w, G) * scale[sl]
                wg += float(np.einsum("sb,sb->", w, G))
                h = G
                h *= -2.0 * tb * ts
                h += (tb**2 * (1.0 / Db[sl] + m[sl]))[None, :]
                h += (ts**2 * dS)[:, None]
                # g = h w (1 - 2 mu)
                np.multiply(mu, -2.0, out=mu)
                mu += 1.0
                h *= w
                h *= mu
                gr += h.sum(axis=1)
                gc[sl] = h.sum(axis=0)
        self.hinv_diag = (dS, 1.0 / Db + m)  # diag of H^-1 at the modes (the conditional variances)
        vs, vb = self._solve(fac, ts * gr, tb * gc)
        wr, wc, rr, rc = st["wr"], st["wc"], st["rr"], st["rc"]
        rho_r = gr - 2.0 * rr - (ts * vs * wr + tb * g.wdot(vb))
        rho_c = gc - 2.0 * rc - (ts * g.wtdot(vs) + tb * vb * wc)
        tr_s = ts * float(wr @ dS) - tb * wg
        tr_b = tb * float(wc @ (1.0 / Db + m)) - ts * wg
        return np.array([us @ rho_r + vs @ rr + 2.0 * tr_s,
                         ub @ rho_c + vb @ rc + 2.0 * tr_b,
                         float(rho_r.sum())])

    def fun(self, x: np.ndarray) -> tuple[float, np.ndarray]:
        f = self.deviance(float(x[0]), float(x[1]), float(x[2]))
        return f, self.gradient()


class _Fixed:
    """Laplace deviance of ``0 + model + (1|item)``: separable over items given beta."""

    tol = 1e-10
    maxit = 100  # Newton steps of the items' modes

    def __init__(self, grid: _Grid):
        self.g = grid
        self.ub = np.zeros(grid.nb)
        self.evaluations = 0
        self.chol: Any = None
        self._t_prev: float | None = None

    def evaluate(self, t: float, beta: np.ndarray) -> tuple[float, np.ndarray, float]:
        """Deviance, its exact gradient over beta and over t (modes by Newton per item)."""
        self.evaluations += 1
        g = self.g
        if self._t_prev is not None and self._t_prev > 0 and t > 0:
            self.ub = self.ub * (self._t_prev / t)
        self._t_prev = t
        ub = self.ub
        self.mode_converged = False
        for _ in range(self.maxit):
            c = t * ub
            dev = 0.0
            rr, gr, wvr, wr = (np.zeros(g.ns) for _ in range(4))
            rc, wc, gc = np.empty(g.nb), np.empty(g.nb), np.empty(g.nb)
            for sl in g.blocks():
                if g.compiled:
                    w, p = np.empty((g.ns, sl.stop - sl.start)), np.empty((g.ns, sl.stop - sl.start))
                    dev += K.fixed_block(g.y, g.n, g.kconst, beta, c, t, sl.start, sl.stop, rr, wr, rc,
                                         wc, gc, gr, wvr, w, p)
                    continue
                _, mu, w, r, d = g.cell_block(sl, beta, c)
                dev += d
                rr += r.sum(axis=1)
                wr += w.sum(axis=1)
                rc[sl] = r.sum(axis=0)
                wc[sl] = colw = w.sum(axis=0)
                Db = 1.0 + t**2 * colw
                hb = t**2 / Db
                np.multiply(mu, -2.0, out=mu)
                mu += 1.0
                mu *= w  # w' = w (1 - 2 mu)
                gc[sl] = hb * mu.sum(axis=0)
                gr += mu @ hb
                vb = t * gc[sl] / Db
                wvr += w @ (t * vb)
            Db = 1.0 + t**2 * wc
            step = (t * rc - ub) / Db
            if float(np.abs(step).max(initial=0.0)) < self.tol:
                self.mode_converged = True
                break
            ub = ub + np.clip(step, -3.0, 3.0)
        self.ub = ub
        vb = t * gc / Db
        rho_c = gc - 2.0 * rc - t * vb * wc
        grad_beta = gr - 2.0 * rr - wvr
        grad_t = float(ub @ rho_c + vb @ rc + 2.0 * t * float((wc / Db).sum()))
        f = dev + float(ub @ ub) + float(np.log(Db).sum()) + g.dconst
        self.wr = wr
        return f, grad_beta, grad_t

    def schur(self, t: float, beta: np.ndarray) -> Any:
        """Cholesky factor of ``S = diag(W 1) - t^2 W D^-1 W'`` at the current modes."""
        st = self.g.sweep(beta, t * self.ub, schur=(t, t))
        S, wr = st["S"], st["wr"]
        S[np.diag_indices_from(S)] += wr
        return sla.cho_factor(S, lower=True, overwrite_a=True, check_finite=False)

    def profile(self, t: float, beta: np.ndarray) -> tuple[float, float, np.ndarray]:
        """min over beta at fixed t (Newton steps with ``S``, refactored when they slow down)."""
        f, gb, gt = self.evaluate(t, beta)
        prev = np.inf
        for _ in range(100):
            if self.chol is None:
                self.chol = self.schur(t, beta)
            # the deviance is -2 loglik: its Hessian over beta is about 2 S
            step = -0.5 * sla.cho_solve(self.chol, gb, check_finite=False)
            size = float(np.abs(step).max(initial=0.0))
            if size < 1e-9:
                break
            lam = 1.0
            while True:
                nb_ = beta + lam * step
                f2, gb2, gt2 = self.evaluate(t, nb_)
                if f2 <= f + 1e-10 * abs(f) or lam < 1e-3:
                    break
                lam /= 2.0
            if lam < 1.0 or size > 0.3 * prev:
                self.chol = None
            beta, f, gb, gt, prev = nb_, f2, gb2, gt2, size
        return f, gt, beta


def _counts(y: np.ndarray, trials: Any) -> tuple[np.ndarray, Any]:
    """Checked successes and trials, both in the smallest unsigned dtype that holds the trials
    (a scalar ``trials`` stays a Python int)."""
    if not (np.issubdtype(y.dtype, np.integer) or y.dtype == bool):
        raise DataError(f"glmer_grid: y must hold integer counts of successes; got dtype {y.dtype}")
    n: Any
    if np.ndim(trials) == 0:
        if isinstance(trials, (bool, np.bool_)) or not isinstance(trials, (int, np.integer)) or trials < 1:
            raise ArgumentError(f"glmer_grid: trials must be an integer array of y's shape or a "
                                f"positive integer (trials per cell); got {trials!r}")
        n = top = int(trials)
    else:
        n = np.asarray(trials)
        if n.shape != y.shape:
            raise DataError(f"glmer_grid: trials must have y's shape {y.shape}; got shape {n.shape}")
        if not (np.issubdtype(n.dtype, np.integer) or n.dtype == bool):
            raise DataError(f"glmer_grid: trials must hold integer counts; got dtype {n.dtype}")
        top = 0
    ns, nb = y.shape
    for sl in _row_blocks(ns, nb):  # a block of rows at a time: no grid-sized temporaries
        kb = y[sl]
        nb_ = n if np.ndim(n) == 0 else n[sl]
        bad = (kb < 0) | (kb > nb_)
        if np.ndim(n):
            bad |= nb_ < 0
            top = max(top, int(nb_.max(initial=0)))
        if bad.any():
            s, b = np.unravel_index(int(np.flatnonzero(bad)[0]), bad.shape)
            nv = n if np.ndim(n) == 0 else nb_[s, b]
            raise DataError(f"glmer_grid: each cell needs 0 <= k <= n successes of n trials; model row "
                            f"{sl.start + s}, item column {b} holds k = {kb[s, b]} of n = {nv}")
    dt = count_dtype(top)
    y = np.ascontiguousarray(y, dtype=dt)
    if np.ndim(n):
        n = np.ascontiguousarray(n, dtype=dt)
    return y, n


def glmer_grid(y: np.ndarray, formula: str = "correct ~ 1 + (1|model) + (1|item)", *,
               trials: np.ndarray | int | None = None, as_rows: bool = False,
               models: Sequence[object] | None = None, items: Sequence[object] | None = None,
               vcov_method: str | None = None, control: GlmerControl | None = None,
               compiled: bool | None = None) -> GlmerResult:
    """Fit a crossed logit GLMM on a models x items grid of 0/1 or k-of-n answers.

    The low-memory path for leaderboards of up to 10^8 cells (see the module docstring and
    docs/performance.md, "10^8 rows"): the answers are an ``int8`` array, one row per model and
    one column per item, no data frame is formed, and the fit is the one :func:`evalmix.glmer`
    gives on the same rows, as the same :class:`~evalmix.glmm.GlmerResult` (``vcov_method=
    "hessian_exact"`` or ``"rx"``). It holds no rows (``has_data`` is False, as after
    ``remove_data()``): estimates, ``vcov``, ``varcorr``, ``ranef()`` with conditional SDs,
    ``summary()``, ``emmeans``, ``anova``, ``predict(newdata)`` and Wald intervals work; what needs
    the rows raises the DataError ``remove_data`` documents. :func:`evalmix.glmer` routes large
    tables of these two formulas here (``GlmerControl.grid_rows``). With ``trials`` each cell
    holds ``k`` successes of ``n`` runs, and the fit is ``glmer("cbind(k, n - k) ~ ...")``'s
    (binomial cells, the log-likelihood with lme4's binomial constant); ``n = 0`` leaves a cell
    out, so incomplete grids fit too.

    Parameters
    ----------
    y : numpy.ndarray
        Successes per cell, shape ``(n_models, n_items)``: 0/1 answers without ``trials`` (any
        integer or boolean dtype; ``int8`` is used as is, others are converted once), counts
        ``0 <= k <= n`` with them (kept as the smallest unsigned dtype that holds the largest
        ``n``: one byte a cell up to 255 trials).
    trials : numpy.ndarray or int, optional
        Trials ``n`` per cell: an integer array of ``y``'s shape (kept in the same dtype as ``y``;
        0 marks an empty cell) or one number for every cell. None: one trial a cell.
    as_rows : bool
        The cells count 0/1 rows (``k`` of ``n`` runs right): report what :func:`evalmix.glmer`
        reports for those rows, the log-likelihood without the binomial constant and ``nobs`` the
        number of rows (the sum of ``n``), as for a table counted in its engine. Default: the
        ``cbind`` fit's (lme4's ``nobs`` counts the non-empty cells).
    formula : str
        ``"correct ~ 1 + (1|model) + (1|item)"`` or ``"correct ~ 0 + model + (1|item)"``, with
        any response and grouping names (``y ~ 1 + (1|a) + (1|b)``, ``y ~ 0 + a + (1|b)``):
        the first grouping name labels the rows of ``y``, the second its columns.
    models, items : sequence, optional
        Level names of the rows and columns (default ``0..n-1``), in the order that becomes the
        factors' level order (R's ``factor(levels = ...)``).
    vcov_method : {"hessian_exact", "rx"}, optional
        As :func:`evalmix.glmer`'s. Default: ``"hessian_exact"`` for the first formula (lme4's
        default, from the exact deviance), ``"rx"`` for the second (lme4's choice for many fixed
        effects). ``"hessian_exact"`` of the second formula has its beta block in closed form
        (three GEMMs a block of columns, about the cost of RX; see :func:`_fixed_hessian`).
    control : GlmerControl, optional
        Stored on the fit; its ``singular_tol``, ``grad_tol`` and ``hess_tol`` are used.
    compiled : bool, optional
        Run the passes over the cells as compiled loops (numba, when installed; the same
        arithmetic as the NumPy blocks otherwise used). Default: from 200,000 cells, where they
        pay for loading the compiled kernels.

    Returns
    -------
    GlmerResult

    Examples
    --------
    >>> y, truth = simulate_grid(20, 200, rng=3)
    >>> fit = glmer_grid(y)
    >>> round(float(fit.theta["item.(Intercept)"]), 2), round(truth["item_sd"], 2)
    (1.47, 1.48)
    >>> round(float(fit.theta["model.(Intercept)"]), 2), round(truth["model_sd"], 2)
    (1.18, 1.26)
    >>> fit.has_data, fit.vcov_method, fit.nobs
    (False, 'hessian_exact', 4000)

    Five runs of every model on every item, as successes out of five:

    >>> k, truth = simulate_grid(20, 200, trials=5, rng=3)
    >>> fit = glmer_grid(k, trials=5)
    >>> fit.nobs, k.dtype.name
    (4000, 'uint8')
    """
    spec = grid_formula(formula)
    kind = None if spec is None else spec.kind
    if spec is None:
        raise ArgumentError(f"glmer_grid: formula {formula!r} is not one of "
                            + ", ".join(repr(f) for f in _FORMULAS)
                            + " (any response and grouping names)")
    y = np.asarray(y)
    if y.ndim != 2 or min(y.shape) < 2:
        raise DataError(f"glmer_grid: y must be a (models x items) grid with at least 2 of each; "
                        f"got shape {y.shape}")
    if trials is None:
        if y.dtype != np.int8:
            if not (np.issubdtype(y.dtype, np.integer) or y.dtype == bool):
                raise DataError(f"glmer_grid: y must hold 0/1 integers; got dtype {y.dtype}")
            y = y.astype(np.int8)
        y = np.ascontiguousarray(y)
        bad = np.flatnonzero((y != 0) & (y != 1))
        if bad.size:
            s, b = np.unravel_index(int(bad[0]), y.shape)
            raise DataError(f"glmer_grid: y must be 0/1; model row {s}, item column {b} holds {y[s, b]}")
    else:
        y, trials = _counts(y, trials)
    ns, nb = y.shape
    models = list(range(ns)) if models is None else list(models)
    items = list(range(nb)) if items is None else list(items)
    if len(models) != ns or len(items) != nb:
        raise ArgumentError(f"glmer_grid: {len(models)} model and {len(items)} item names for a "
                            f"{ns} x {nb} grid")
    if isinstance(trials, np.ndarray):
        for axis, what, names in ((1, "model", models), (0, "item", items)):
            empty = np.flatnonzero(trials.sum(axis=axis, dtype=np.int64) == 0)
            if empty.size:
                named = ", ".join(f"{names[i]!s}" for i in empty[:5])
                more = f" and {empty.size - 5} more" if empty.size > 5 else ""
                raise DataError(f"glmer_grid: {what}(s) {named}{more} have no trials at all (n = 0 in "
                                f"every cell of the {what}'s {'row' if axis == 1 else 'column'}); "
                                "leave them out of the grid")
    if kind == "fixed":
        # a model at 0% or 100% has no finite fixed effect (complete separation): the Newton
        # system over the betas is singular there, so name those models before fitting
        right = y.sum(axis=1, dtype=np.int64)
        tot = (np.full(ns, nb * (1 if trials is None else int(trials)), dtype=np.int64)
               if not isinstance(trials, np.ndarray) else trials.sum(axis=1, dtype=np.int64))
        sep = np.flatnonzero((right == 0) | (right == tot))
        if sep.size:
            named = ", ".join(f"{models[i]!s} ({100 * right[i] // tot[i]}%)" for i in sep[:5])
            more = f" and {sep.size - 5} more" if sep.size > 5 else ""
            raise DataError(f"glmer_grid: {formula!r}: model(s) {named}{more} answered every item the "
                            "same way, so their fixed effects have no finite estimate (complete "
                            "separation); leave them out, or use '1 + (1|model) + (1|item)'")
    if compiled is None:
        compiled = ns * nb >= _COMPILED_MIN
    vm = _grid_vcov_method(spec.kind, vcov_method)
    control = DEFAULT_CONTROL if control is None else control
    # names, terms and levels as the general path builds them, from a few rows holding every level
    design = _skeleton_design(formula, spec, models, items)
    with single_thread_blas():  # see _blas_threads
        if kind == "crossed" and ns > nb:
            # the Schur complement goes onto the smaller factor: items x items here
            est = _fit(_Grid(np.ascontiguousarray(y.T), compiled, _transpose(trials), as_rows), spec.kind,
                       vm).transposed()
        else:
            est = _fit(_Grid(y, compiled, trials, as_rows), spec.kind, vm)
    return _result(formula, design, spec, est, control)


def _grid_vcov_method(kind: str, vcov_method: str | None) -> str:
    if vcov_method is None:
        return "hessian_exact" if kind == "crossed" else "rx"
    if vcov_method not in ("hessian_exact", "rx"):
        raise ArgumentError(f"glmer_grid: vcov_method must be 'hessian_exact' or 'rx', not "
                            f"{vcov_method!r} (lme4 1.1-31's early-stopping 'hessian' is the general "
                            "path's: evalmix.glmer with control=GlmerControl(grid_rows=0))")
    return vcov_method


def _skeleton_design(formula: str, spec: GridFormula, models: list[Any], items: list[Any]) -> GlmmDesign:
    """The design :func:`evalmix.glmm.build_design` makes for the grid's formula, from
    ``max(n_models, n_items)`` rows that hold every level once or more (term order, theta and
    coefficient names, factor levels and coding: what the result needs, never the cells)."""
    for what, names in ((spec.rows, models), (spec.columns, items)):
        seen = pd.Index(names)
        if seen.has_duplicates:
            dup = seen[seen.duplicated()].unique()[:5].tolist()
            raise DataError(f"glmer_grid: the {what} names repeat {dup}; each row and column of the "
                            "grid needs its own level")
    ns, nb = len(models), len(items)
    i = np.arange(max(ns, nb))
    rows = pd.DataFrame({spec.rows: pd.Categorical.from_codes(i % ns, categories=pd.Index(models)),
                         spec.columns: pd.Categorical.from_codes(i % nb, categories=pd.Index(items)),
                         spec.response: (i % 2).astype(np.int8)})
    return build_design(formula, rows)


@dataclass
class _Estimates:
    """What a grid fit found, by the grid's axes (rows, columns)."""

    kind: str
    theta: dict[str, float]  # "rows" (crossed only), "cols": SD of the intercepts
    u: dict[str, np.ndarray]  # spherical modes
    hinv: dict[str, np.ndarray]  # diagonal of H^-1 for them (conditional variance over theta^2)
    beta: np.ndarray
    vcov: np.ndarray
    order: list[str]  # the parameters of gradient and hessian: "rows", "cols", "beta"
    gradient: np.ndarray
    hessian: np.ndarray | None
    deviance: float
    residual_quantiles: tuple[float, ...]
    nobs: int
    evaluations: int
    factorizations: int
    iterations: int
    converged: bool
    message: str
    vcov_method: str
    seconds: float

    def transposed(self) -> _Estimates:
        swap = {"rows": "cols", "cols": "rows"}
        return dataclasses.replace(
            self, theta={swap[k]: v for k, v in self.theta.items()},
            u={swap[k]: v for k, v in self.u.items()}, hinv={swap[k]: v for k, v in self.hinv.items()},
            order=[swap.get(k, k) for k in self.order])


def _cells(grid: _Grid, a: np.ndarray, c: np.ndarray, xb: np.ndarray | None = None
           ) -> tuple[tuple[float, ...], np.ndarray, np.ndarray, np.ndarray]:
    """One float64 pass over the cells at ``eta = a_s + c_b``: the quantiles of the Pearson
    residuals (min, quartiles, max, as ``summary()`` prints them; the residuals are kept in
    float32, 4 bytes a cell, and partitioned in place), the weights' sums per row and column, and
    ``W xb`` (when ``xb`` is given)."""
    ns, nb = grid.ns, grid.nb
    r32 = np.empty((ns, nb), dtype=np.float32)
    wr, wc, wx = np.zeros(ns), np.empty(nb), np.zeros(ns)
    for sl in grid.blocks():
        mu = special.expit(np.add(a[:, None], c[None, sl]))
        n = grid.trials_block(sl)
        w = mu * (1.0 - mu) * n
        wr += w.sum(axis=1)
        wc[sl] = w.sum(axis=0)
        if xb is not None:
            wx += w @ xb[sl]
        np.multiply(mu, n, out=mu)
        np.subtract(grid.y[:, sl], mu, out=mu)
        np.sqrt(w, out=w)
        with np.errstate(invalid="ignore", divide="ignore"):
            np.divide(mu, w, out=mu)  # an empty cell (n = 0) gives NaN, left out below
        r32[:, sl] = mu
    flat = r32.reshape(-1)
    if grid.n is not None:
        flat = flat[~np.isnan(flat)]
    h = (flat.size - 1) * np.array([0.0, 0.25, 0.5, 0.75, 1.0])
    lo, hi = np.floor(h).astype(np.int64), np.ceil(h).astype(np.int64)
    flat.partition(np.unique(np.concatenate([lo, hi])))
    xl, xh = flat[lo].astype(np.float64), flat[hi].astype(np.float64)
    q = tuple(float(v) for v in xl + (h - lo) * (xh - xl))  # numpy's "linear" quantiles
    del r32, flat
    return q, wr, wc, wx


def _fd_hessian(grad: Any, x: np.ndarray) -> np.ndarray:
    """Central differences of an exact gradient (step 1e-4 relative), symmetrised."""
    Hm = np.empty((x.size, x.size))
    for i in range(x.size):
        hstep = 1e-4 * max(1.0, abs(x[i]))
        xp, xm = x.copy(), x.copy()
        xp[i] += hstep
        xm[i] -= hstep
        Hm[:, i] = (grad(xp) - grad(xm)) / (2 * hstep)
    return (Hm + Hm.T) / 2


def _fixed_hessian(fx: _Fixed, t: float, beta: np.ndarray, ub: np.ndarray) -> np.ndarray:
    """The Hessian of the Laplace deviance of ``0 + model + (1|item)`` over ``(theta, beta)`` at
    the modes ``ub``: the beta block in closed form, the theta column by central differences of
    the exact gradient (two evaluations).

    Given beta, the deviance is a sum over items ``b`` of ``f_b = sum_s dev_sb + u_b^2 +
    log D_b``, ``D_b = 1 + t^2 W_b``, ``W_b = sum_s w_sb``, at the mode ``u_b`` (``du_b/dbeta_j =
    -t w_jb / D_b``, so ``d eta_sb / d beta_j = delta_sj - A_b w_jb`` with ``A_b = t^2 / D_b``).
    Differentiating the exact gradient ``-2 r_s + A_b (w'_s - A_b B_b w_s)`` once more (``w' =
    w (1 - 2 mu)``, ``w'' = w (1 - 6 w)``, ``B_b = sum_s w'_sb``, ``C_b = sum_s w''_sb``) gives,
    per item, ``diag(2 w + A w'' - A^2 B w') + V M V'`` (``w = n mu (1 - mu)`` of a k-of-n cell) with ``V = [w, w', w'']`` and ``M =
    [[-2A + A^3 C - 2 A^4 B^2, 2 A^3 B, -A^2], [2 A^3 B, -A^2, 0], [-A^2, 0, 0]]``: three GEMMs a
    block of columns instead of ``2 (p + 1)`` evaluations of the gradient."""
    g = fx.g
    ns = g.ns
    c = t * ub
    diag = np.zeros(ns)
    Hbb = np.zeros((ns, ns))
    for sl in g.blocks():
        mu = special.expit(np.add(beta[:, None], c[None, sl]))
        v = mu * (1.0 - mu)
        w = v * g.trials_block(sl)  # n mu (1 - mu), and its derivatives over eta
        w1 = w * (1.0 - 2.0 * mu)
        w2 = w * (1.0 - 6.0 * v)
        A = t**2 / (1.0 + t**2 * w.sum(axis=0))
        B, C = w1.sum(axis=0), w2.sum(axis=0)
        diag += 2.0 * w.sum(axis=1) + w2 @ A - w1 @ (A**2 * B)
        m11 = -2.0 * A + A**3 * C - 2.0 * A**4 * B**2
        m12, m22, m13 = 2.0 * A**3 * B, -(A**2), -(A**2)
        P = w * m11 + w1 * m12 + w2 * m13
        Q = w * m12 + w1 * m22
        Hbb += P @ w.T + Q @ w1.T + (w * m13) @ w2.T
    Hbb = (Hbb + Hbb.T) / 2
    Hbb[np.diag_indices(ns)] += diag
    h = 1e-4 * max(1.0, t)
    cols = []
    for tt in (t + h, t - h):
        fx.ub = ub.copy()
        fx._t_prev = t
        _, g_b, g_t = fx.evaluate(tt, beta)
        cols.append(np.concatenate([[g_t], g_b]))
    fx.ub = ub
    col = (cols[0] - cols[1]) / (2 * h)
    H = np.empty((ns + 1, ns + 1))
    H[1:, 1:] = Hbb
    H[:, 0] = col
    H[0, 1:] = col[1:]
    return H


_NO_MODES = ("unable to find the conditional modes at the optimum (their Newton iteration did not "
             "converge): the deviance there is not the Laplace one")


def _fit(grid: _Grid, kind: str, vcov_method: str) -> _Estimates:
    import time

    t0 = time.perf_counter()
    y = grid.y
    ns, nb = y.shape
    k_rows, n_rows = grid.row_sums()
    p0 = float(np.clip(k_rows.sum() / n_rows.sum(), 1e-6, 1 - 1e-6))
    H: np.ndarray | None = None
    if kind == "crossed":
        dv = _Crossed(grid)
        x0 = np.array([1.0, 1.0, np.log(p0 / (1 - p0))])
        res = optimize.minimize(dv.fun, x0, jac=True, method="L-BFGS-B",
                                bounds=[(0.0, None), (0.0, None), (None, None)],
                                options={"ftol": 1e-15, "gtol": 1e-7, "maxiter": 500})
        x = res.x

        def grad(z: np.ndarray) -> np.ndarray:
            dv.deviance(float(z[0]), float(z[1]), float(z[2]))
            return dv.gradient()

        if vcov_method == "hessian_exact":
            H = _fd_hessian(grad, x)
            # one Newton step on it: at 10^7 cells L-BFGS-B stops when a step lowers the deviance
            # by less than 1e-15 of it, where the gradient can still be 1e-3 (the intercept then
            # 1e-5 from the optimum, along the flat direction it shares with the random effects)
            # (kept where the exact gradient shrinks and the deviance does not rise beyond rounding)
            g1 = np.asarray(res.jac, dtype=float)
            x2 = x - np.linalg.solve(H, g1)
            if np.all(x2[:2] >= 0.0):
                f1 = dv.deviance(*x)
                g2 = grad(x2)
                if np.abs(g2).max() < np.abs(g1).max() and dv.deviance(*x2) <= f1 + 1e-12 * abs(f1):
                    x = x2
        ts, tb, b0 = (float(v) for v in x)
        fopt = dv.deviance(ts, tb, b0)
        gradient = dv.gradient()  # also the leverages: the diagonal of H^-1 (condVar)
        modes_ok = dv.mode_converged
        hs, hb = dv.hinv_diag
        us, ub = dv.us.copy(), dv.ub.copy()
        fac = dv.fac  # the factorisation at the mode
        assert fac is not None
        # the cells at the mode: residuals, weights, and W x for RX's Schur complement
        wxb = None
        if vcov_method == "rx":
            wxb = tb * dv.state["wc"] / fac["Db"]  # v_b / D_b, v = Lambda' Z' W X = (ts W 1, tb W' 1)
        quant, wr, wc, wx = _cells(grid, b0 + ts * us, tb * ub, wxb)
        if vcov_method == "rx":
            # X'WX - v' H^-1 v, H^-1 v through the Schur complement S of the factorisation at the mode
            vs = ts * wr
            ys = sla.cho_solve(fac["chol"], vs - ts * tb * wx, check_finite=False)
            q = float(vs @ ys + np.sum((tb * wc) ** 2 / fac["Db"]) - ts * tb * float(ys @ wx))
            V = np.array([[1.0 / (float(wr.sum()) - q)]])
        else:
            assert H is not None
            V = 2.0 * np.linalg.inv(H)[2:, 2:]
        return _Estimates(
            kind, {"rows": ts, "cols": tb}, {"rows": us, "cols": ub}, {"rows": hs, "cols": hb},
            np.array([b0]), V, ["rows", "cols", "beta"], gradient, H, float(fopt), quant, grid.nobs,
            dv.evaluations, grid.factorizations, int(res.nit), bool(res.success) and modes_ok,
            str(res.message) if modes_ok else _NO_MODES, vcov_method, time.perf_counter() - t0)
    fx = _Fixed(grid)
    # start: each model's logit accuracy
    pm = np.clip(k_rows / n_rows, 0.5 / n_rows, 1 - 0.5 / n_rows)
    state = {"beta": np.log(pm / (1 - pm))}

    def prof(tt: np.ndarray) -> tuple[float, np.ndarray]:
        f, gt, b = fx.profile(float(tt[0]), state["beta"])
        state["beta"] = b
        return f, np.array([gt])

    res = optimize.minimize(prof, np.array([1.0]), jac=True, method="L-BFGS-B",
                            bounds=[(0.0, None)],
                            options={"ftol": 1e-15, "gtol": 1e-7, "maxiter": 200})
    t = float(res.x[0])
    fopt, _, beta = fx.profile(t, state["beta"])
    fopt, gb, gt = fx.evaluate(t, beta)  # the gradient over (theta, beta) at the optimum
    modes_ok = fx.mode_converged
    ub = fx.ub.copy()
    quant, wr, wc, _ = _cells(grid, beta, t * ub)
    hb = 1.0 / (1.0 + t**2 * wc)  # the items' block of H is diagonal
    if vcov_method == "rx":
        chol = fx.schur(t, beta)
        V = sla.cho_solve(chol, np.eye(ns), check_finite=False)
    else:
        H = _fixed_hessian(fx, t, beta, ub)
        V = 2.0 * np.linalg.inv(H)[1:, 1:]
    V = (V + V.T) / 2
    return _Estimates(
        kind, {"cols": t}, {"cols": ub}, {"cols": hb}, beta, V, ["cols", "beta"],
        np.concatenate([[gt], gb]), H, float(fopt), quant, grid.nobs, fx.evaluations,
        grid.factorizations, int(res.nit), bool(res.success) and modes_ok,
        str(res.message) if modes_ok else _NO_MODES, vcov_method, time.perf_counter() - t0)


def _result(formula: str, design: GlmmDesign, spec: GridFormula, est: _Estimates,
            control: GlmerControl) -> GlmerResult:
    """The :class:`GlmerResult` of a grid fit, assembled as :func:`evalmix.glmer` assembles its own
    (terms, names and checks from the design), in the state ``remove_data()`` leaves."""
    axis = {spec.rows: "rows", spec.columns: "cols"}
    keys = [axis[t.group] for t in design.terms]
    theta = np.array([est.theta[k] for k in keys])
    u = np.concatenate([est.u[k] for k in keys])
    hinv = np.concatenate([est.hinv[k] for k in keys])
    # gradient and Hessian in the design's order of the parameters: theta (terms), then beta
    nt, p = len(keys), est.beta.size
    pos = {k: i for i, k in enumerate(est.order)}
    perm = [pos[k] for k in keys] + list(range(len(est.order) - 1, len(est.order) - 1 + p))
    gradient = est.gradient[perm]
    H = None if est.hessian is None else est.hessian[np.ix_(perm, perm)]
    lower = design.theta_lower
    singular = bool(np.any(theta[lower == 0] < control.singular_tol))
    at_bound = np.zeros(nt + p, dtype=bool)
    at_bound[:nt] = (theta <= lower + control.bound_tol) & (gradient[:nt] >= 0)
    max_grad = float(np.max(np.abs(np.where(at_bound, 0.0, gradient))))
    messages, conv, converged = fit_checks(
        design.theta_names, theta, singular, gradient, H, at_bound, optimizer_converged=est.converged,
        max_grad=max_grad, message=est.message, control=control,
        failures=[est.message] if est.message == _NO_MODES else [])
    optimizer = ("L-BFGS-B over (theta, beta)" if est.kind == "crossed"
                 else "L-BFGS-B over theta, Newton over beta")
    rep = OptimizerReport(
        optimizer=f"{optimizer} on the grid of cells", converged=est.converged,
        message=f"{est.message} ({est.factorizations} factorisations)", iterations=est.iterations,
        feval=est.evaluations, max_grad=max_grad, checks=tuple(conv),
        hessian_cond=hessian_condition(None if H is None else H[np.ix_(~at_bound, ~at_bound)]),
        seconds=est.seconds, gradient=gradient)
    names = design.fixed.columns
    model = FittedModel.from_modes(design.terms, theta, u, hinv, est.residual_quantiles)
    fixed = dataclasses.replace(design.fixed, weights_data=None)  # the skeleton's rows are not data
    return GlmerResult(
        formula=formula, fixef=pd.Series(est.beta, index=names, name="estimate"),
        vcov=pd.DataFrame(est.vcov, index=names, columns=names),
        theta=pd.Series(theta, index=design.theta_names, name="theta"),
        loglik=-est.deviance / 2.0, deviance=est.deviance, df=nt + p, nobs=est.nobs,
        varcorr=varcorr_table(design, theta), converged=converged, singular=singular,
        messages=tuple(messages), optimizer=rep, vcov_method=est.vcov_method, fixed_design=fixed,
        hessian=H, _model=model, link="logit", nagq=1, control=control)
