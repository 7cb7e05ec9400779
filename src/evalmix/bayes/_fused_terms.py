"""Correlated random terms ``(1 + x|g)`` in the compiled kernel.

The parameters, priors and transforms are those of :func:`evalmix.bayes.model.correlated_term`,
so the kernel's log density is PyMC's up to rounding (``tests/bayes/test_fused_correlated.py``
compares both and their gradients):

- the SDs ``sd_c`` of the ``K`` columns, sampled as ``log sd_c`` (PyMC's log transform: the prior
  plus the log-Jacobian ``log sd_c``);
- the canonical partial correlations ``tanh(y)`` of the ``K (K - 1) / 2`` free values ``y``
  (Stan's ``cholesky_factor_corr``), the Cholesky factor ``L`` of the correlation matrix built from
  them row by row, with the map's log-Jacobian and the LKJ(``eta``) density of ``L``;
- centred: the effects ``u_l ~ MvNormal(mean, S L L' S)`` themselves (``S`` the diagonal of SDs;
  the density by forward substitution, ``w = L^-1 S^-1 (u_l - mean)``); non-centred: standard
  normal ``z_l`` and ``u_l = mean + S L z_l``.  ``mean`` is zero, or, for a centred term that holds
  the intercept, ``Intercept_c - xbar b_x`` in the intercept's column and ``b_x`` in the columns of
  the fixed slopes it holds.

The rows then add ``sum_c u[l_i, c] Z[i, c]`` of every correlated term to the linear predictor of
the kernel's scalar terms, and the family's row pass
(:func:`evalmix.bayes._fused_families.family_loglik`: binomial-logit, Gaussian, beta,
beta-binomial, cumulative) takes it from there; the gradient flows back by hand-written reverse
passes.

Division by zero gives inf or nan here (numpy's error model), as in PyMC's graph: at the edge of
the support (a correlation of exactly +-1, an SD that underflows) the callback then reports a
non-finite density and nutpie rejects the step, instead of an exception inside its thread.  numba
caches the callbacks under :mod:`evalmix.bayes._fused_cabi`'s file: a change here needs its
``KERNEL_REVISION`` raised.

Layout (built by :class:`evalmix.bayes.fused.FusedDensity`): one row of ``ct`` per correlated
term (:data:`CT_FIELDS`); ``cpri`` the prior rows of every column's SD, stacked in term order;
``clkj`` the LKJ ``eta`` of each term; ``cmap``
the coefficient each column holds as its mean (-1: none) and ``cxb`` that coefficient's centring
value; ``cidx`` each term's level of every row and ``cZ`` every column's values in the rows.
"""

from __future__ import annotations

import math

import numpy as np

from ._fused_families import family_loglik
from ._fused_priors import njit, prior_logp

# per correlated term: columns K, levels, centred, the column of the intercept it holds (-1: none),
# offset of its log SDs, of its partial correlations, of its effects (u or z, levels x columns),
# its first column in cpri/cmap/cxb/cZ, its first effect in the kernel's array of effects (read by
# _layout, _mean and _mean_grad)
CT_FIELDS = 9
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@njit(cache=True, nogil=True, error_model="numpy")
def _cholesky(x, o_y, K, L, S):
    """The Cholesky factor ``L`` of the correlation matrix from ``tanh(x[o_y:])``; ``S[i, j]`` is
    ``1 - sum_{j' < j} L[i, j']^2`` (``S[i, i] = L[i, i]^2``).  Returns the map's log-Jacobian."""
    for i in range(K):
        for j in range(K):
            L[i, j] = 0.0
    L[0, 0] = 1.0
    S[0, 0] = 1.0
    lj = 0.0
    k = o_y
    for i in range(1, K):
        rem = 1.0
        for j in range(i):
            z = math.tanh(x[k])
            k += 1
            lj += math.log1p(-z * z)
            if j > 0:
                lj += 0.5 * math.log(rem)
            S[i, j] = rem
            L[i, j] = z * math.sqrt(rem)
            rem -= L[i, j] * L[i, j]
        S[i, i] = rem
        L[i, i] = math.sqrt(rem)
    return lj


@njit(cache=True, nogil=True, error_model="numpy")
def _cholesky_grad(x, o_y, K, L, S, gL, g):
    """Add to ``g[o_y:]`` the derivative of ``F(L) + log-Jacobian`` in the free values, given
    ``gL = dF/dL`` (the reverse of :func:`_cholesky`, one row of ``L`` at a time)."""
    for i in range(1, K):
        a = gL[i, i] * 0.5 / L[i, i]  # d/d S[i, i] of L[i, i] = sqrt(S[i, i])
        for j in range(i - 1, -1, -1):
            k = o_y + i * (i - 1) // 2 + j
            z = math.tanh(x[k])
            r = math.sqrt(S[i, j])
            glij = gL[i, j] - 2.0 * L[i, j] * a  # S[i, j + 1] = S[i, j] - L[i, j]^2
            g[k] += glij * r * (1.0 - z * z) - 2.0 * z  # tanh' and log1p(-z^2)'
            a += glij * z * 0.5 / r
            if j > 0:
                a += 0.5 / S[i, j]


@njit(cache=True, nogil=True, error_model="numpy")
def _mean(x, ct, cmap, cxb, T, o_th, i_int, t, mean):
    """The mean of term ``t``'s effects (see the module notes)."""
    K, ic, c0 = ct[t, 0], ct[t, 3], ct[t, 7]
    p = T.shape[0]
    for c in range(K):
        mean[c] = 0.0
    for c in range(K):
        j = cmap[c0 + c]
        if j >= 0:
            bj = 0.0
            for jj in range(p):
                bj += T[j, jj] * x[o_th + jj]
            mean[c] = bj
            if ic >= 0:
                mean[ic] -= cxb[c0 + c] * bj
    if ic >= 0:
        mean[ic] += x[i_int]


@njit(cache=True, nogil=True, error_model="numpy")
def _mean_grad(ct, cmap, cxb, T, o_th, i_int, t, gmean, g):
    """Add the derivative through :func:`_mean` of ``gmean`` to the intercept and coefficients."""
    K, ic, c0 = ct[t, 0], ct[t, 3], ct[t, 7]
    p = T.shape[0]
    if ic >= 0:
        g[i_int] += gmean[ic]
    for c in range(K):
        j = cmap[c0 + c]
        if j >= 0:
            gb = gmean[c] - (cxb[c0 + c] * gmean[ic] if ic >= 0 else 0.0)
            for jj in range(p):
                g[o_th + jj] += T[j, jj] * gb


@njit(cache=True, nogil=True, error_model="numpy")
def _sds(x, ct, t, sd):
    K, o_sd = ct[t, 0], ct[t, 4]
    for c in range(K):
        sd[c] = math.exp(x[o_sd + c])


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _layout(ct, t):
    """Term ``t``'s row of ``ct`` (:data:`CT_FIELDS`): columns ``K``, levels, centred, the offsets
    of its log SDs, partial correlations and effects, its first column and its first effect."""
    return ct[t, 0], ct[t, 1], ct[t, 2], ct[t, 4], ct[t, 5], ct[t, 6], ct[t, 7], ct[t, 8]


@njit(cache=True, nogil=True, error_model="numpy", inline="always")
def _state(x, ct, cmap, cxb, T, o_th, i_int, t):
    """Term ``t``'s SDs, Cholesky factor ``L`` (and ``S``, see :func:`_cholesky`) and the mean of
    its effects at ``x``, with the Cholesky map's log-Jacobian: what the forward and the reverse
    pass both start from."""
    K = ct[t, 0]
    sd = np.empty(K)
    mean = np.empty(K)
    L = np.empty((K, K))
    S = np.empty((K, K))
    _sds(x, ct, t, sd)
    lj = _cholesky(x, ct[t, 5], K, L, S)
    _mean(x, ct, cmap, cxb, T, o_th, i_int, t, mean)
    return sd, mean, L, S, lj


@njit(cache=True, nogil=True, error_model="numpy")
def corr_forward(x, ct, cpri, clkj, cmap, cxb, T, o_th, i_int, U):
    """Prior log density of every correlated term's parameters; writes their effects into ``U``
    (term ``t``'s level ``l``, column ``c`` at ``ct[t, 8] + l K + c``)."""
    lp = 0.0
    for t in range(ct.shape[0]):
        K, nl, centred, o_sd, o_y, o_v, c0, u0 = _layout(ct, t)
        sd, mean, L, S, lj = _state(x, ct, cmap, cxb, T, o_th, i_int, t)
        for c in range(K):
            lv, _ = prior_logp(cpri[c0 + c], sd[c])
            lp += lv + x[o_sd + c]
        lp += lj
        ldl = 0.0  # log det L
        for i in range(1, K):
            ll = math.log(L[i, i])
            ldl += ll
            lp += ((K - i - 1) + 2.0 * (clkj[t] - 1.0)) * ll
        w = np.empty(K)
        if centred:
            lds = 0.0
            for c in range(K):
                lds += math.log(sd[c])
            quad = 0.0
            for l in range(nl):
                for i in range(K):
                    ui = x[o_v + l * K + i]
                    U[u0 + l * K + i] = ui
                    acc = (ui - mean[i]) / sd[i]
                    for j in range(i):
                        acc -= L[i, j] * w[j]
                    w[i] = acc / L[i, i]
                    quad += w[i] * w[i]
            lp -= nl * (lds + ldl) + 0.5 * quad + nl * K * _HALF_LOG_2PI
        else:
            for l in range(nl):
                for i in range(K):
                    zi = x[o_v + l * K + i]
                    lp -= 0.5 * zi * zi + _HALF_LOG_2PI
                    v = 0.0
                    for j in range(i + 1):
                        v += L[i, j] * x[o_v + l * K + j]
                    U[u0 + l * K + i] = mean[i] + sd[i] * v
    return lp


@njit(cache=True, nogil=True, error_model="numpy")
def corr_backward(x, g, ct, cpri, clkj, cmap, cxb, T, o_th, i_int, gU):
    """Add to ``g`` the gradient of the correlated terms' prior (:func:`corr_forward`) and of the
    likelihood through their effects (``gU``: its derivative in each effect)."""
    for t in range(ct.shape[0]):
        K, nl, centred, o_sd, o_y, o_v, c0, u0 = _layout(ct, t)
        sd, mean, L, S, _ = _state(x, ct, cmap, cxb, T, o_th, i_int, t)
        gL = np.zeros((K, K))
        gsd = np.zeros(K)
        gmean = np.zeros(K)
        for i in range(1, K):
            gL[i, i] += ((K - i - 1) + 2.0 * (clkj[t] - 1.0)) / L[i, i]
        if centred:
            e = np.empty(K)
            w = np.empty(K)
            gw = np.empty(K)
            for i in range(1, K):
                gL[i, i] -= nl / L[i, i]  # the log determinant
            for c in range(K):
                gsd[c] -= nl / sd[c]
            for l in range(nl):
                for i in range(K):
                    e[i] = (x[o_v + l * K + i] - mean[i]) / sd[i]
                    acc = e[i]
                    for j in range(i):
                        acc -= L[i, j] * w[j]
                    w[i] = acc / L[i, i]
                for i in range(K):
                    gw[i] = -w[i]
                for i in range(K - 1, -1, -1):  # reverse of the forward substitution
                    gi = gw[i] / L[i, i]
                    gL[i, i] -= gi * w[i]
                    for j in range(i):
                        gL[i, j] -= gi * w[j]
                        gw[j] -= gi * L[i, j]
                    ge = gi  # d w_i / d e_i = 1 / L_ii
                    k = o_v + l * K + i
                    g[k] += ge / sd[i] + gU[u0 + l * K + i]
                    gmean[i] -= ge / sd[i]
                    gsd[i] -= ge * e[i] / sd[i]
        else:
            for l in range(nl):
                for i in range(K):
                    k = o_v + l * K + i
                    g[k] -= x[k]
                    gu = gU[u0 + l * K + i]
                    if gu == 0.0:
                        continue
                    gmean[i] += gu
                    v = 0.0
                    gv = gu * sd[i]
                    for j in range(i + 1):
                        zj = x[o_v + l * K + j]
                        v += L[i, j] * zj
                        g[o_v + l * K + j] += gv * L[i, j]
                        gL[i, j] += gv * zj
                    gsd[i] += gu * v
        for c in range(K):
            _, dv = prior_logp(cpri[c0 + c], sd[c])
            g[o_sd + c] += (dv + gsd[c]) * sd[c] + 1.0
        _cholesky_grad(x, o_y, K, L, S, gL, g)
        _mean_grad(ct, cmap, cxb, T, o_th, i_int, t, gmean, g)


@njit(cache=True, nogil=True, error_model="numpy")
def terms_log_density(x, g, k, m, cell, idx, Z, fx, u, start, gcell, gu, T, o_th, i_int,
                      ct, cpri, clkj, cmap, cxb, cidx, cZ, fam, o_f, nf, fpri, fc):
    """The correlated terms' prior plus the family's likelihood
    (:func:`evalmix.bayes._fused_families.family_loglik`, code ``fam``, its parameters at
    ``x[o_f:o_f + nf]``) with their effects added to each row's linear predictor.  Adds the
    derivative in the cells' and scalar levels' predictors to ``gcell`` and ``gu`` (as the kernel's
    row passes do) and every other derivative to ``g``."""
    nu_ = 0
    for t in range(ct.shape[0]):
        nu_ += ct[t, 0] * ct[t, 1]
    U = np.empty(nu_)
    gU = np.zeros(nu_)
    lp = corr_forward(x, ct, cpri, clkj, cmap, cxb, T, o_th, i_int, U)
    n = k.shape[0]
    nct = ct.shape[0]
    ce = np.zeros(n)  # each row's part of eta from the correlated terms
    for i in range(n):
        v = 0.0
        for t in range(nct):
            K, c0 = ct[t, 0], ct[t, 7]
            b = ct[t, 8] + cidx[t, i] * K
            for col in range(K):
                v += U[b + col] * cZ[c0 + col, i]
        ce[i] = v
    gce = np.zeros(n)
    lp += family_loglik(fam, x, g, o_f, nf, fpri, fc, o_th, T.shape[0], k, m, cell, idx, Z, fx, u, start,
                        gcell, gu, ce, gce)
    for i in range(n):
        r = gce[i]
        for t in range(nct):
            K, c0 = ct[t, 0], ct[t, 7]
            b = ct[t, 8] + cidx[t, i] * K
            for col in range(K):
                gU[b + col] += r * cZ[c0 + col, i]
    corr_backward(x, g, ct, cpri, clkj, cmap, cxb, T, o_th, i_int, gU)
    return lp
