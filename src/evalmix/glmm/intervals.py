"""Confidence intervals for a GLMM fit: Wald, profile likelihood and parametric bootstrap
(``confint(fit, method = "Wald" | "profile" | "boot")`` in lme4)."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
from scipy import stats

from ..mixed.result import ConfidenceIntervals
from ..core.errors import FitWarning

if TYPE_CHECKING:
    from .result import GlmerResult

__all__ = ["ConfidenceIntervals", "confint"]

METHODS = ("wald", "profile", "boot")


def _which(parm: str) -> str:
    if parm not in ("all", "beta_", "theta_"):
        raise ValueError(f"parm={parm!r}: use 'all', 'beta_' (fixed effects) or 'theta_' "
                         "(random-effect standard deviations)")
    return parm


def confint(fit: GlmerResult, method: str = "wald", level: float = 0.95, parm: str = "all", *,
            nsim: int = 200, seed: int | None = None, n_jobs: int | None = None,
            progress: bool = False) -> ConfidenceIntervals:
    """Confidence intervals of a :func:`evalmix.glmer` fit (see :meth:`GlmerResult.confint`)."""
    from .profile import deviance_of, profile_intervals, sd_parameters

    method = str(method).lower()
    if method not in METHODS:
        raise ValueError(f"method={method!r}: use one of {METHODS}")
    if not 0 < level < 1:
        raise ValueError(f"level={level!r} must be between 0 and 1")
    which = _which(parm)
    names = [str(n) for n in fit.fixef.index]
    beta = fit.fixef.to_numpy()
    se = np.sqrt(np.diag(fit.vcov.to_numpy()))
    terms = fit._model.terms
    theta = fit.theta.to_numpy()
    sd_rows = [(n, v) for n, *_, v in sd_parameters(terms, theta)] if np.isfinite(
        theta).all() else [(n, np.nan) for n, *_ in sd_parameters(terms, np.zeros_like(theta))]
    rows: list[tuple[str, float, float, float]] = []
    boot = None
    if method == "wald":
        z = stats.norm.isf((1 - level) / 2)
        if which in ("all", "theta_"):
            rows += [(n, v, np.nan, np.nan) for n, v in sd_rows]  # lme4: NA for the SDs
        if which in ("all", "beta_"):
            rows += [(n, b, b - z * s, b + z * s) for n, b, s in zip(names, beta, se)]
    elif method == "profile":
        if fit._model.u is None:
            raise ValueError("every row is fitted perfectly (complete separation): there is no "
                             "likelihood to profile")
        ld, terms, keep, bk = deviance_of(fit)
        kept_names = [names[i] for i in keep]
        lower = np.concatenate([t.theta_lower for t in terms])
        got = profile_intervals(ld, terms, lower, theta, bk, kept_names, se[keep],
                                level, which)
        by_name = {r[0]: r for r in got}
        if which in ("all", "theta_"):
            rows += [by_name[n] for n, _ in sd_rows]
        if which in ("all", "beta_"):
            rows += [by_name.get(n, (n, b, np.nan, np.nan)) for n, b in zip(names, beta)]
        if fit.separation is not None and fit.separation.infinite:
            warnings.warn(f"no profile interval for {fit.separation.infinite}: their estimates "
                          "diverge (separation)", FitWarning, stacklevel=3)
    else:
        from .bootstrap import bootmer, percentile_interval

        boot = bootmer(fit, nsim, seed=seed, n_jobs=n_jobs, progress=progress)
        cols = ([n for n, _ in sd_rows] if which in ("all", "theta_") else []) + (
            names if which in ("all", "beta_") else [])
        for n in cols:
            lo, hi = percentile_interval(boot.replicates[n].to_numpy(), level)
            rows.append((n, float(boot.estimate[n]), lo, hi))
    table = pd.DataFrame(rows, columns=["term", "estimate", "conf_low", "conf_high"])
    table["method"] = method
    return ConfidenceIntervals(table=table, level=level, method=method, boot=boot)
