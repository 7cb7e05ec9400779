"""C callbacks for nutpie: the kernel of :mod:`evalmix.bayes._fused_kernel` behind numba ``cfunc``s.

Importing this module compiles them, or loads them from numba's on-disk cache (``cache=True``).
numba keys that cache on this file alone: a change to the kernel modules (their code or
``TERM_FIELDS``, ``CT_FIELDS``) needs this file touched too, or a stale callback is loaded.
They take their data through one ``user_data`` pointer to an int64 header (sizes and array
addresses, built by :class:`evalmix.bayes.fused.FusedDensity`), and touch no Python object, so
nutpie calls them from its worker threads in parallel.
"""

from __future__ import annotations

import math

import numpy as np
from numba import carray, cfunc, njit, types
from numba.core import cgutils
from numba.extending import intrinsic

from ._fused_kernel import TERM_FIELDS, log_density
from ._fused_terms import CT_FIELDS

HEADER = 41  # int64 entries of the header
# the kernel's revision: raised with each change to _fused_kernel, so that this file changes and
# numba's cache drops the callbacks compiled from the old kernel (2: several terms hold columns;
# 3: correlated terms, or the other families' likelihoods; 4: both, one likelihood dispatch and
# one header; 5: the correlated terms' passes share their layout and state helpers; 6: one helper
# for the log-transformed SDs, sigma and phi)
KERNEL_REVISION = 6


@intrinsic
def _pointer(typingctx, address):
    """An int64 address as a void pointer (for ``numba.carray``)."""

    def codegen(context, builder, signature, args):
        return builder.inttoptr(args[0], cgutils.voidptr_t)

    return types.voidptr(address), codegen


@njit(cache=True, nogil=True, inline="always")
def _unpack(hdr):
    n, p, nt, nu = hdr[0], hdr[1], hdr[2], hdr[7]
    k = carray(_pointer(hdr[8]), (n,), np.float64)
    m = carray(_pointer(hdr[9]), (n,), np.float64)
    mi = carray(_pointer(hdr[10]), (n,), np.int64)
    Xu = carray(_pointer(hdr[11]), (nu, p), np.float64)
    cell = carray(_pointer(hdr[12]), (n,), np.int64)
    T = carray(_pointer(hdr[13]), (p, p), np.float64)
    idx = carray(_pointer(hdr[14]), (nt, n), np.int64)
    Z = carray(_pointer(hdr[15]), (nt, n), np.float64)
    terms = carray(_pointer(hdr[16]), (nt, TERM_FIELDS), np.int64)
    pri = carray(_pointer(hdr[17]), (1 + p + nt, 5), np.float64)
    WT = carray(_pointer(hdr[18]), (hdr[22], p), np.float64)
    sub = carray(_pointer(hdr[19]), (n,), np.int64)
    subkey = carray(_pointer(hdr[20]), (hdr[24], 1 + nt), np.int64)
    mstart = carray(_pointer(hdr[21]), (hdr[25],), np.int64)
    return k, m, mi, Xu, cell, T, idx, Z, terms, pri, WT, sub, subkey, mstart


@njit(cache=True, nogil=True, inline="always")
def _unpack_terms(hdr):
    """The correlated terms' arrays (slots 27-33, sizes in 34-35): see
    :mod:`evalmix.bayes._fused_terms`."""
    n, nct, ncol = hdr[0], hdr[34], hdr[35]
    ct = carray(_pointer(hdr[27]), (nct, CT_FIELDS), np.int64)
    cpri = carray(_pointer(hdr[28]), (ncol, 5), np.float64)
    clkj = carray(_pointer(hdr[29]), (nct,), np.float64)
    cmap = carray(_pointer(hdr[30]), (ncol,), np.int64)
    cxb = carray(_pointer(hdr[31]), (ncol,), np.float64)
    cidx = carray(_pointer(hdr[32]), (nct, n), np.int64)
    cZ = carray(_pointer(hdr[33]), (ncol, n), np.float64)
    return ct, cpri, clkj, cmap, cxb, cidx, cZ


@njit(cache=True, nogil=True, inline="always")
def _unpack_family(hdr):
    """The family slots 36-40: code, offset and number of its parameters, its prior, constants
    (see :mod:`evalmix.bayes._fused_families`)."""
    fpri = carray(_pointer(hdr[39]), (1, 5), np.float64)
    fc = carray(_pointer(hdr[40]), (1 + hdr[1],), np.float64)
    return hdr[36], hdr[37], hdr[38], fpri, fc


_LOGP_SIG = types.int64(types.uint64, types.CPointer(types.double), types.CPointer(types.double),
                        types.CPointer(types.double), types.voidptr)
_EXPAND_SIG = types.int64(types.uint64, types.uint64, types.CPointer(types.double),
                          types.CPointer(types.double), types.voidptr)


@cfunc(_LOGP_SIG, cache=True)
def logp_cfunc(dim, x_, g_, lp_, user_data):
    """nutpie's C log-density callback: 0 on success, 3/4 for a non-finite gradient/density."""
    hdr = carray(user_data, (HEADER,), np.int64)
    if dim != hdr[3]:
        return -1
    x = carray(x_, (dim,))
    g = carray(g_, (dim,))
    lp = log_density(x, g, *_unpack(hdr), hdr[4], hdr[5], hdr[6], hdr[23], hdr[26] == 1,
                     *_unpack_terms(hdr), *_unpack_family(hdr))
    lp_[0] = lp
    for i in range(dim):
        if not math.isfinite(g[i]):
            return 3
    if not math.isfinite(lp):
        return 4
    return 0


@cfunc(_EXPAND_SIG, cache=True)
def expand_cfunc(dim, expanded, x_, out_, user_data):
    """nutpie's C expansion callback: the stored draw is the unconstrained point itself."""
    if dim != expanded:
        return -1
    x = carray(x_, (dim,))
    out = carray(out_, (dim,))
    # element by element: a slice assignment from an array makes numba compile its shape-mismatch
    # error message (string formatting), a few CPU seconds of every cold compile
    for i in range(dim):
        out[i] = x[i]
    return 0
