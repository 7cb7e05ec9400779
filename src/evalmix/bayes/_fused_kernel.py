"""Log density and gradient of the twins' GLMMs (binomial-logit here; the other families in
:mod:`evalmix.bayes._fused_families`, correlated terms in :mod:`evalmix.bayes._fused_terms`), for numba.

With numba installed the functions are compiled (and cached on disk, so the compilation is paid
once per installation); without it they run as plain Python, which is slow but lets the tests
check the arithmetic against PyMC's log density anywhere.  :mod:`evalmix.bayes._fused_cabi` wraps
them as C callbacks for nutpie.
"""

from __future__ import annotations

import math

import numpy as np

# correlated terms; the likelihoods of the other families (and of any family row by row); numba's
# njit (or its plain-Python stand-in) and the scalar priors, shared by all three
from . import _fused_terms
from ._fused_families import family_loglik
from ._fused_priors import log_scale_prior, njit, prior_logp

TERM_FIELDS = 7  # centred, holds the intercept, levels, offset of the scale, offset of the effects, unit Z,
# 1 + the first row of its levels in WT when it holds fixed columns (else 0)
_HALF_LOG_2PI = 0.5 * math.log(2.0 * math.pi)


@njit(cache=True, nogil=True)
def log_density(x, g, k, m, mi, Xu, cell, T, idx, Z, terms, pri, WT, sub, subkey, mstart, i_int, add_int,
                o_th, major, blocked, ct, cpri, clkj, cmap, cxb, cidx, cZ, fam, o_f, nf, fpri, fc):
    """Log density at ``x`` (unconstrained point); writes its gradient into ``g``.

    ``eta = c + Xu[cell] theta + sum_t u_t[idx_t] Z_t`` with ``c`` the intercept when no term holds
    it (``Xu``: the distinct rows of the fixed-effects matrix in the sampled basis); the fixed
    effects ``b = T theta`` carry the priors ``pri[1:1 + p]``; a centred term samples ``log sigma``
    and ``u ~ Normal(mu, sigma)``, a non-centred one a signed scale ``s`` and ``z ~ Normal(0, 1)``
    with ``u = s z``.  The binomial constants are left out, as in the model.  ``mi`` holds the
    trials as integers when all are small integers (else ``mi[0] = -1``).  The term that holds the
    intercept has the mean ``Intercept_c`` and each term that holds fixed columns adds
    ``WT[w0 + l] theta`` at its level ``l`` (its levels' values of those columns, in the sampled
    basis; its rows of WT start at ``w0 = terms[t, 6] - 1``).  ``ct`` ... ``cZ``: the correlated
    terms (:mod:`evalmix.bayes._fused_terms`), whose effects add to every row's linear predictor.
    ``fam``: the likelihood, 0 the binomial-logit passes here (or row by row with correlated terms),
    ``fam > 0`` another family's (:func:`evalmix.bayes._fused_families.family_loglik`, its
    parameters at ``x[o_f:o_f + nf]``, ``k`` its response).
    """
    nu, p = Xu.shape
    nt = terms.shape[0]
    g[:] = 0.0
    lp = 0.0
    c0 = 0.0
    if i_int >= 0:
        lv, dv = prior_logp(pri[0], x[i_int])
        lp += lv
        g[i_int] += dv
        if add_int:
            c0 = x[i_int]
    theta = x[o_th:o_th + p]
    for i in range(p):
        bi = 0.0
        for j in range(p):
            bi += T[i, j] * theta[j]
        lv, dv = prior_logp(pri[1 + i], bi)
        lp += lv
        for j in range(p):
            g[o_th + j] += T[i, j] * dv
    fx = np.empty(nu)
    for c in range(nu):
        v = c0
        for j in range(p):
            v += Xu[c, j] * theta[j]
        fx[c] = v
    bound = _max_abs(fx)  # bound on |eta| over all rows
    # effects of every term, in one array of levels
    nlev = 0
    unit = True
    for t in range(nt):
        nlev += terms[t, 2]
        unit = unit and terms[t, 5] == 1
    u = np.empty(nlev)
    start = np.empty(nt, np.int64)
    pos = 0
    for t in range(nt):
        centred, holds, nl, o_s, o_v = terms[t, 0], terms[t, 1], terms[t, 2], terms[t, 3], terms[t, 4]
        start[t] = pos
        if centred:
            v = x[o_s]
            sig, lv, dv = log_scale_prior(pri[1 + p + t], v)  # with the log-Jacobian of sigma = exp(v)
            lp += lv
            gs = dv * sig + 1.0
            mu0 = x[i_int] if holds else 0.0
            shifted = terms[t, 6] > 0
            w0 = terms[t, 6] - 1
            gmu = 0.0
            for l in range(nl):
                a = x[o_v + l]
                mu = mu0
                if shifted:
                    for j in range(p):
                        mu += WT[w0 + l, j] * theta[j]
                r = (a - mu) / sig
                lp -= 0.5 * r * r + v + _HALF_LOG_2PI
                g[o_v + l] -= r / sig
                gmu += r / sig
                if shifted:
                    for j in range(p):
                        g[o_th + j] += WT[w0 + l, j] * r / sig
                gs += r * r - 1.0
                u[pos + l] = a
            g[o_s] += gs
            if holds:
                g[i_int] += gmu
        else:
            s = x[o_s]
            lv, dv = prior_logp(pri[1 + p + t], s)
            lp += lv
            g[o_s] += dv
            for l in range(nl):
                zl = x[o_v + l]
                lp -= 0.5 * zl * zl + _HALF_LOG_2PI
                g[o_v + l] -= zl
                u[pos + l] = s * zl
        # a unit column needs no pass over the rows (one per term and gradient otherwise)
        bound += _max_abs(u[pos:pos + nl]) * (1.0 if terms[t, 5] == 1 else _max_abs(Z[t]))
        pos += nl
    gu = np.zeros(nlev)
    gcell = np.zeros(nu)
    if ct.shape[0] > 0:  # correlated terms: their prior, then the family's row pass with their effects
        lp += _fused_terms.terms_log_density(x, g, k, m, cell, idx, Z, fx, u, start, gcell, gu, T, o_th,
                                             i_int, ct, cpri, clkj, cmap, cxb, cidx, cZ, fam, o_f, nf, fpri,
                                             fc)
    elif fam > 0:  # the other twins' likelihoods (evalmix.bayes._fused_families)
        lp += family_loglik(fam, x, g, o_f, nf, fpri, fc, o_th, p, k, m, cell, idx, Z, fx, u, start, gcell,
                            gu, np.empty(0), np.empty(0))  # no correlated terms' part of eta
    elif unit and mi[0] >= 0 and bound < 600.0:  # the exp-free passes, fastest the rows allow
        if blocked:
            lp += _loglik_blocked(k, m, sub, subkey, mstart, major, fx, u, start, gcell, gu)
        elif major >= 0:
            lp += _loglik_grouped(k, m, mi, sub, subkey, mstart, major, fx, u, start, gcell, gu)
        else:
            lp += _loglik_factored(k, m, mi, cell, idx, fx, u, start, gcell, gu)
    else:
        lp += _loglik_rows(k, m, cell, idx, Z, fx, u, start, gcell, gu)
    gc = 0.0
    for c in range(nu):
        gc += gcell[c]
        for j in range(p):
            g[o_th + j] += Xu[c, j] * gcell[c]
    if add_int:
        g[i_int] += gc
    for t in range(nt):
        centred, nl, o_s, o_v = terms[t, 0], terms[t, 2], terms[t, 3], terms[t, 4]
        if centred:
            for l in range(nl):
                g[o_v + l] += gu[start[t] + l]
        else:
            s = x[o_s]
            gs = 0.0
            for l in range(nl):
                gs += gu[start[t] + l] * x[o_v + l]
                g[o_v + l] += gu[start[t] + l] * s
            g[o_s] += gs
    return lp


@njit(cache=True, nogil=True, inline="always")
def _max_abs(a):
    out = 0.0
    for v in a:
        out = max(out, abs(v))
    return out


@njit(cache=True, nogil=True)
def _loglik_rows(k, m, cell, idx, Z, fx, u, start, gcell, gu):
    """``sum k eta - m log(1 + e^eta)`` row by row, stable for any eta; adds its derivative in
    eta to the cells (``gcell``) and levels (``gu``)."""
    nt = start.shape[0]
    lp = 0.0
    for i in range(k.shape[0]):
        eta = fx[cell[i]]
        for t in range(nt):
            eta += u[start[t] + idx[t, i]] * Z[t, i]
        e = math.exp(-abs(eta))
        q = 1.0 / (1.0 + e)
        lp += k[i] * eta - m[i] * (max(eta, 0.0) + math.log1p(e))
        r = k[i] - m[i] * (q if eta > 0.0 else e * q)
        gcell[cell[i]] += r
        for t in range(nt):
            gu[start[t] + idx[t, i]] += r * Z[t, i]
    return lp


@njit(cache=True, nogil=True, inline="always")
def _row_step(k, m, mi, eta, e_eta, lp, prod):
    """One row of the exp-free sum (see :func:`_loglik_factored`): ``k eta - m max(eta, 0)`` added
    to ``lp``, ``max(p, q)^mi`` multiplied into ``prod`` (its log taken into ``lp`` before it could
    underflow), and the row's derivative ``k - m p`` returned."""
    q = 1.0 / (1.0 + e_eta)
    prob = e_eta * q
    lp += k * eta - m * max(eta, 0.0)
    w = max(prob, q)  # in [1/2, 1]
    f = w
    for _ in range(mi - 1):
        f *= w
    prod *= f
    if prod < 1e-250:  # w^m >= 2^-64 for m <= 64: no underflow before the next check
        lp += math.log(prod)
        prod = 1.0
    return lp, prod, k - m * prob


@njit(cache=True, nogil=True)
def _loglik_factored(k, m, mi, cell, idx, fx, u, start, gcell, gu):
    """The same sum when every term has unit Z and |eta| < 600 in every row.

    ``e^eta`` is the product of the exponentials of its parts (one exp per cell and level instead
    of one per row).  With ``p = e^eta / (1 + e^eta)`` and ``q = 1 - p``,
    ``log(1 + e^-|eta|) = -log(max(p, q))``, so the ``m log(1 + e^-|eta|)`` terms are summed as the
    log of a running product of ``max(p, q)^m`` (one log per few hundred rows): a row costs one
    division and no transcendental function.  Rounding moves the sum by ~1e-16 per row.
    """
    nt = start.shape[0]
    ef = np.exp(fx)
    eu = np.exp(u)
    lp = 0.0
    prod = 1.0
    for i in range(k.shape[0]):
        c = cell[i]
        eta = fx[c]
        e_eta = ef[c]
        for t in range(nt):
            j = start[t] + idx[t, i]
            eta += u[j]
            e_eta *= eu[j]
        lp, prod, r = _row_step(k[i], m[i], mi[i], eta, e_eta, lp, prod)
        gcell[c] += r
        for t in range(nt):
            gu[start[t] + idx[t, i]] += r
    return lp + math.log(prod)



@njit(cache=True, nogil=True, inline="always")
def _combinations(subkey, major, fx, u, start):
    """The linear predictor of each combination of cell and levels of the terms other than
    ``major`` (``subkey`` row: those levels, then the cell) and its exponential."""
    nt = start.shape[0]
    ns = subkey.shape[0]
    etas = np.empty(ns)
    es = np.empty(ns)
    for s in range(ns):
        v = fx[subkey[s, nt]]
        for t in range(nt):
            if t != major:
                v += u[start[t] + subkey[s, t]]
        etas[s] = v
        es[s] = math.exp(v)
    return etas, es


@njit(cache=True, nogil=True, inline="always")
def _scatter_combinations(subkey, major, gs, start, gcell, gu):
    """Add each combination's derivative to its cell and to its levels of the other terms."""
    nt = start.shape[0]
    for s in range(subkey.shape[0]):
        gcell[subkey[s, nt]] += gs[s]
        for t in range(nt):
            if t != major:
                gu[start[t] + subkey[s, t]] += gs[s]


@njit(cache=True, nogil=True)
def _loglik_grouped(k, m, mi, sub, subkey, mstart, major, fx, u, start, gcell, gu):
    """:func:`_loglik_factored` with the rows sorted by the levels of the term ``major``.

    ``eta = eta_s + u_l``: the part ``eta_s`` of the row's combination ``s`` of cell and the other
    terms' levels (few in a crossed design: models x prompts) is summed once per combination, so
    a row gathers one combination and the level's effect and sum stay in registers.
    """
    etas, es = _combinations(subkey, major, fx, u, start)
    gs = np.zeros(subkey.shape[0])
    lp = 0.0
    prod = 1.0
    base = start[major]
    for lev in range(mstart.shape[0] - 1):
        ul = u[base + lev]
        el = math.exp(ul)
        gl = 0.0
        for i in range(mstart[lev], mstart[lev + 1]):
            s = sub[i]
            eta = etas[s] + ul
            e_eta = es[s] * el
            lp, prod, r = _row_step(k[i], m[i], mi[i], eta, e_eta, lp, prod)
            gs[s] += r
            gl += r
        gu[base + lev] += gl
    _scatter_combinations(subkey, major, gs, start, gcell, gu)
    return lp + math.log(prod)


# numpy's error model: no ZeroDivisionError branch (1 + e^eta > 0), so the loop can use SIMD lanes
@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"}, error_model="numpy")
def _loglik_blocked(k, m, sub, subkey, mstart, major, fx, u, start, gcell, gu):
    """:func:`_loglik_grouped` when each level's rows are consecutive combinations and every row
    has the same number of trials (a complete design: items crossed with models x prompts, or runs
    nested in items).

    The inner loop then reads every array in order and gathers nothing, so it runs on SIMD lanes
    (hence the reassociated sums: the order of a sum moves it by rounding only).  ``max(p, q)`` is
    at least 1/2, so the product of ``max(p, q)`` over one level's at most 1000 rows stays above
    2^-1000 (no underflow) and needs one log per level, times the common trials.
    """
    mc = m[0]
    etas, es = _combinations(subkey, major, fx, u, start)
    gs = np.zeros(subkey.shape[0])
    lp = 0.0
    base = start[major]
    for lev in range(mstart.shape[0] - 1):
        ul = u[base + lev]
        el = math.exp(ul)
        i0, nr = mstart[lev], mstart[lev + 1] - mstart[lev]
        s0 = sub[i0]
        # views indexed from 0: loads the vectoriser sees as consecutive
        kl, esl, etal, gsl = k[i0:i0 + nr], es[s0:s0 + nr], etas[s0:s0 + nr], gs[s0:s0 + nr]
        gl = 0.0
        lin = 0.0
        prod = 1.0
        for j in range(nr):
            e_eta = esl[j] * el
            q = 1.0 / (1.0 + e_eta)
            prob = e_eta * q
            eta = etal[j] + ul
            lin += kl[j] * eta - mc * (eta if eta > 0.0 else 0.0)
            r = kl[j] - mc * prob
            gl += r
            gsl[j] += r
            prod *= prob if prob > q else q
        lp += lin + mc * math.log(prod)
        gu[base + lev] += gl
    _scatter_combinations(subkey, major, gs, start, gcell, gu)
    return lp
