"""The scalar priors of the compiled kernel (:mod:`evalmix.bayes._fused_kernel`) and numba's ``njit``.

Shared by the binomial kernel and the other families' row passes
(:mod:`evalmix.bayes._fused_families`), which both import it.  Without numba the functions run as
plain Python (the same arithmetic, for the tests).
"""

from __future__ import annotations

import math

import numpy as np

try:
    from numba import njit
except ImportError:  # plain Python: same arithmetic, for the tests

    def njit(*args, **kwargs):
        if args and callable(args[0]):
            return args[0]
        return lambda f: f

# prior family codes; each prior row is (code, p0, p1, p2, log normalising constant)
NORMAL, STUDENT_T, CAUCHY, LAPLACE, HALF_NORMAL, HALF_STUDENT_T, HALF_CAUCHY, EXPONENTIAL = range(8)


# not inlined: called a few times a gradient, and inlining its five branches at three call sites
# cost 0.8 CPU s of every cold compile
@njit(cache=True, nogil=True)
def prior_logp(row, x):
    """Log density of a scalar prior at ``x`` and its derivative (half families: x > 0)."""
    code = int(row[0])
    if code == NORMAL or code == HALF_NORMAL:
        r = (x - row[1]) / row[2]
        return row[4] - 0.5 * r * r, -r / row[2]
    if code == STUDENT_T or code == HALF_STUDENT_T:
        nu, r = row[1], (x - row[2]) / row[3]
        q = r * r / nu
        return row[4] - 0.5 * (nu + 1.0) * math.log1p(q), -(nu + 1.0) * r / (nu * row[3] * (1.0 + q))
    if code == CAUCHY or code == HALF_CAUCHY:
        r = (x - row[1]) / row[2]
        return row[4] - math.log1p(r * r), -2.0 * r / (row[2] * (1.0 + r * r))
    if code == LAPLACE:
        d = x - row[1]
        return row[4] - abs(d) / row[2], -np.sign(d) / row[2]
    # EXPONENTIAL
    return row[4] - row[1] * x, -row[1]
