"""Mixed models for 0-1 scores and overdispersed k-of-n counts (R's ``glmmTMB``).

``glmmtmb("score ~ model + (1|item)", data, family="beta")`` and
``glmmtmb("cbind(k, n - k) ~ model + (1|item)", data, family="betabinomial")`` fit random-intercept
GLMMs (nested or crossed) by the Laplace approximation with every parameter optimised jointly, as
glmmTMB does; :func:`check_overdispersion` tells when a binomial model understates uncertainty.
The pieces: :mod:`~evalmix.tmb.design` (formula and data to arrays), :mod:`~evalmix.tmb.family`
(the log-densities), :mod:`~evalmix.tmb.model` (the Laplace objective and its optimisation),
:mod:`~evalmix.tmb.result` (the fit).
"""

from __future__ import annotations

from .design import squeeze_scores
from .fit import glmmtmb
from .overdispersion import OverdispersionCheck, check_overdispersion
from .result import GlmmTMBResult

__all__ = ["GlmmTMBResult", "OverdispersionCheck", "check_overdispersion", "glmmtmb", "squeeze_scores"]
