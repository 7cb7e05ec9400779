"""Log density of the scalar priors of the compiled kernel (:mod:`evalmix.bayes._fused_kernel`,
:mod:`evalmix.bayes._fused_terms`), for numba.

Each prior is one row ``(code, p0, p1, p2, log normalising constant)`` built by
:func:`evalmix.bayes.fused.prior_row`; :func:`log_scale_prior` adds the log transform of the SDs
and of the families' sigma and phi.  Without numba the function runs as plain Python.
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


@njit(cache=True, nogil=True, inline="always")
def log_scale_prior(row, v):
    """A positive parameter sampled as its log ``v`` (PyMC's log transform): the parameter
    ``e^v``, its prior's log density plus the transform's log-Jacobian ``v``, and the prior's
    derivative in the parameter (the gradient in ``v`` is ``e^v`` times it, plus 1)."""
    s = math.exp(v)
    lv, dv = prior_logp(row, s)
    return s, lv + v, dv
