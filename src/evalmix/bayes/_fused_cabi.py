"""C callbacks for nutpie: the kernel of :mod:`evalmix.bayes._fused_kernel` behind numba ``cfunc``s.

Importing this module compiles them, or loads them from numba's on-disk cache (``cache=True``).
numba keys that cache on this file alone: a change to the kernel module (its code or
``TERM_FIELDS``) needs this file touched too, or a stale callback is loaded.
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

HEADER = 32  # int64 entries of the header
# the kernel's revision: raised with each change to _fused_kernel, so that this file changes and
# numba's cache drops the callbacks compiled from the old kernel (2: several terms hold columns;
# 3: the other families' likelihoods, _fused_families)
KERNEL_REVISION = 3


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
def _unpack_family(hdr):
    """The family slots 27-31: code, offset and number of its parameters, its prior, constants."""
    fpri = carray(_pointer(hdr[30]), (1, 5), np.float64)
    fc = carray(_pointer(hdr[31]), (1 + hdr[1],), np.float64)
    return hdr[27], hdr[28], hdr[29], fpri, fc


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
                     *_unpack_family(hdr))
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
