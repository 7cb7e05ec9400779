"""Compiled passes over a block of columns of a models x items grid of k-of-n answers.

Each pass forms ``eta = a_s + c_b`` of a cell, its mean, weight ``n mu (1 - mu)`` and residual
``k - n mu``, and adds them into sums per model and per item at once, instead of the ten NumPy
passes (and temporaries) of a block. The answers are ``y`` (successes ``k``, 0/1 when every cell is
one trial) and the trials either an array ``n`` of the grid's shape or, with ``n`` None, the
constant ``nconst`` (None for 0/1 answers): numba compiles the ``is None`` branches away, so a grid
of 0/1 answers reads one byte a cell and runs the one-trial arithmetic alone, as fast as before
k-of-n cells. :func:`_cell` is the arithmetic of one cell, inlined in every pass.
``log(1 + e^-|eta|)`` of a one-trial cell is summed as the log of a running product of the
``1 + e^-|eta|`` (each in [1, 2], so 1,000 of them stay far below the float64 limit): one ``exp`` a
cell, a ``log`` per thousand (as in :mod:`evalmix.glmm._logit_rows`); cells of several trials add
``n log1p(e^-|eta|)``, and empty cells (``n = 0``) nothing. The deviance of a model's row is summed
first and then added to the total, so the sum over 10^8 cells keeps its precision. One thread (BLAS
runs the large products on every core); numba is optional and without it :mod:`evalmix.glmm.gridfit`
runs the same arithmetic as NumPy blocks.
"""

from __future__ import annotations

import math

import numpy as np

try:
    from numba import njit
except ImportError:  # pragma: no cover - numba is optional
    njit = None

_PROD = 1000
_POW = 64.0


def _mean(x: float) -> tuple[float, float]:
    """``e = exp(-|x|)`` and ``mu = 1 / (1 + e^-x)``, which overflows on neither side."""
    e = math.exp(-abs(x))
    inv = 1.0 / (1.0 + e)
    return e, (inv if x >= 0 else e * inv)


def _cell(x: float, ki: float, mi: float, row: float, logs: float, prod: float, cnt: int
          ) -> tuple[float, float, float, float, float, float, int]:
    """One cell at ``eta = x`` with ``ki`` successes of ``mi`` trials: ``mu``, the residual
    ``k - n mu``, the weight ``n mu (1 - mu)`` and the deviance sums carried along the row (half
    the deviance is ``row + logs + log(prod)``)."""
    e, mu = _mean(x)
    row += mi * max(x, 0.0) - ki * x
    if mi == 1.0:
        prod *= 1.0 + e
        cnt += 1
        if cnt >= _PROD:
            logs += math.log(prod)
            prod = 1.0
            cnt = 0
    elif 0.0 < mi <= _POW:
        # (1 + e)^n by squaring into the same product, which is logged before its exponent
        # passes _PROD + 1 (each factor is at most 2: below 2^1001, under the float64 limit)
        m = int(mi)
        if cnt + m > _PROD:
            logs += math.log(prod)
            prod = 1.0
            cnt = 0
        cnt += m
        base = 1.0 + e
        while m:
            if m & 1:
                prod *= base
            base *= base
            m >>= 1
    elif mi != 0.0:
        row += mi * math.log1p(e)
    return mu, ki - mi * mu, mi * mu * (1.0 - mu), row, logs, prod, cnt


def _trials(nconst: float | None) -> float:
    """The trials of every cell when there is no array of them: 1.0 for ``None``, which numba
    compiles as a constant (so a grid of 0/1 answers runs the one-trial arithmetic alone)."""
    if nconst is None:
        return 1.0
    return nconst


def stats_block(y: np.ndarray, n: np.ndarray | None, nconst: float | None, a: np.ndarray, c: np.ndarray,
                j0: int, j1: int, rr: np.ndarray, wr: np.ndarray, rc: np.ndarray, wc: np.ndarray,
                store: bool, W32: np.ndarray, wblk: np.ndarray) -> float:
    """Deviance of the columns ``j0:j1``; adds the residuals and weights into the row sums
    ``rr, wr`` and sets the column sums ``rc, wc``; with ``store`` writes the weights into
    ``W32`` (float32) and ``wblk`` (float64, ``ns x (j1 - j0)``)."""
    ns = y.shape[0]
    one = _trials(nconst)
    dev = 0.0
    for b in range(j0, j1):
        rc[b] = 0.0
        wc[b] = 0.0
    for s in range(ns):
        row = 0.0
        logs = 0.0
        prod = 1.0
        cnt = 0
        rs = 0.0
        ws = 0.0
        asv = a[s]
        for b in range(j0, j1):
            mi = one if n is None else float(n[s, b])
            mu, r, w, row, logs, prod, cnt = _cell(asv + c[b], float(y[s, b]), mi, row, logs, prod,
                                                   cnt)
            rs += r
            ws += w
            rc[b] += r
            wc[b] += w
            if store:
                W32[s, b] = w
                wblk[s, b - j0] = w
        dev += row + logs + math.log(prod)
        rr[s] += rs
        wr[s] += ws
    return 2.0 * dev


def weights_block(y: np.ndarray, n: np.ndarray | None, nconst: float | None, a: np.ndarray, c: np.ndarray,
                  j0: int, j1: int, wblk: np.ndarray, pblk: np.ndarray) -> None:
    """Weights ``w = n mu (1 - mu)`` and ``w (1 - 2 mu)`` of the columns ``j0:j1`` into two float64
    blocks."""
    ns = y.shape[0]
    one = _trials(nconst)
    for s in range(ns):
        asv = a[s]
        for b in range(j0, j1):
            mi = one if n is None else float(n[s, b])
            _, mu = _mean(asv + c[b])
            w = mi * mu * (1.0 - mu)
            wblk[s, b - j0] = w
            pblk[s, b - j0] = w * (1.0 - 2.0 * mu)


def leverage_block(wblk: np.ndarray, pblk: np.ndarray, P: np.ndarray, scale: np.ndarray,
                   Db: np.ndarray, dS: np.ndarray, ts: float, tb: float, j0: int,
                   m: np.ndarray, gr: np.ndarray, gc: np.ndarray) -> float:
    """From ``P = S^-1 W`` of a block: ``m_b``, the sums of ``g = h w (1 - 2 mu)`` per row and
    column (``h`` the leverages) and the block's ``sum W (G S^-1)'``, which is returned."""
    ns, nbk = wblk.shape
    wg = 0.0
    for j in range(nbk):
        m[j0 + j] = 0.0
        gc[j0 + j] = 0.0
    for s in range(ns):
        for j in range(nbk):
            m[j0 + j] += wblk[s, j] * P[s, j]
    for j in range(nbk):
        sc = scale[j0 + j]
        wg += m[j0 + j] * sc
        m[j0 + j] *= sc * sc
    for s in range(ns):
        base = ts * ts * dS[s]
        acc = 0.0
        for j in range(nbk):
            b = j0 + j
            h = -2.0 * tb * ts * scale[b] * P[s, j] + tb * tb * (1.0 / Db[b] + m[b]) + base
            g = h * pblk[s, j]
            acc += g
            gc[b] += g
        gr[s] += acc
    return wg


def wdot(W: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """``out = W x`` for float32 ``W``, accumulated in float64."""
    ns, nb = W.shape
    for s in range(ns):
        acc = 0.0
        for b in range(nb):
            acc += W[s, b] * x[b]
        out[s] = acc


def wtdot(W: np.ndarray, x: np.ndarray, out: np.ndarray) -> None:
    """``out = W' x`` for float32 ``W``, accumulated in float64."""
    ns, nb = W.shape
    for b in range(nb):
        out[b] = 0.0
    for s in range(ns):
        xs = x[s]
        for b in range(nb):
            out[b] += W[s, b] * xs


def fixed_block(y: np.ndarray, n: np.ndarray | None, nconst: float | None, beta: np.ndarray, c: np.ndarray,
                t: float, j0: int, j1: int,
                rr: np.ndarray, wr: np.ndarray, rc: np.ndarray, wc: np.ndarray, gc: np.ndarray,
                gr: np.ndarray, wvr: np.ndarray, wblk: np.ndarray, pblk: np.ndarray) -> float:
    """The pass of ``0 + model + (1|item)`` over columns ``j0:j1``: deviance, sums of residuals
    and weights, and of ``g = h w (1 - 2 mu)`` (``h_b = t^2 / D_b``) and ``w t v_b`` per model."""
    ns = y.shape[0]
    one = _trials(nconst)
    nbk = j1 - j0
    dev = 0.0
    for b in range(j0, j1):
        rc[b] = 0.0
        wc[b] = 0.0
        gc[b] = 0.0
    for s in range(ns):
        row = 0.0
        logs = 0.0
        prod = 1.0
        cnt = 0
        rs = 0.0
        ws = 0.0
        asv = beta[s]
        for b in range(j0, j1):
            mi = one if n is None else float(n[s, b])
            mu, r, w, row, logs, prod, cnt = _cell(asv + c[b], float(y[s, b]), mi, row, logs, prod,
                                                   cnt)
            wp = w * (1.0 - 2.0 * mu)
            rs += r
            ws += w
            rc[b] += r
            wc[b] += w
            gc[b] += wp
            wblk[s, b - j0] = w
            pblk[s, b - j0] = wp
        dev += row + logs + math.log(prod)
        rr[s] += rs
        wr[s] += ws
    for j in range(nbk):
        b = j0 + j
        D = 1.0 + t * t * wc[b]
        hb = t * t / D
        gc[b] *= hb
    for s in range(ns):
        ga = 0.0
        va = 0.0
        for j in range(nbk):
            b = j0 + j
            D = 1.0 + t * t * wc[b]
            ga += pblk[s, j] * (t * t / D)
            va += wblk[s, j] * (t * t * gc[b] / D)
        gr[s] += ga
        wvr[s] += va
    return 2.0 * dev


if njit is not None:
    _mean = njit(cache=True, nogil=True, inline="always")(_mean)
    _cell = njit(cache=True, nogil=True, inline="always")(_cell)
    _trials = njit(cache=True, nogil=True, inline="always")(_trials)
    stats_block = njit(cache=True, nogil=True)(stats_block)
    weights_block = njit(cache=True, nogil=True)(weights_block)
    leverage_block = njit(cache=True, nogil=True)(leverage_block)
    wdot = njit(cache=True, nogil=True, fastmath=True)(wdot)
    wtdot = njit(cache=True, nogil=True)(wtdot)
    fixed_block = njit(cache=True, nogil=True)(fixed_block)
    HAVE = True
else:  # pragma: no cover
    HAVE = False
