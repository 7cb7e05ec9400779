"""Parametric bootstrap of a GLMM (``lme4::bootMer(fit, FUN, type = "parametric")``).

Each replicate draws new random effects ``b* ~ N(0, Lambda Lambda')`` for every level (lme4's
default ``use.u = FALSE``), responses ``y* ~ Binomial(m, expit(X beta + Z b*))`` on the pooled
rows (rows with identical covariates and levels share one probability, so their sum is
binomial), and refits the model from the original estimates. Replicates run through
:func:`evalmix.core.parallel.parallel_map`: each has its own seed stream, so the result depends on
``seed`` only, not on ``n_jobs`` or the backend. A replicate whose simulated data are separated
reports its divergent coefficients as ``+-inf`` (as :func:`evalmix.glmer` does), which the
percentile intervals handle as such.
"""

from __future__ import annotations

import dataclasses
import functools
import warnings
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..core.result import Result
from ..core.errors import FitWarning

if TYPE_CHECKING:
    from .result import GlmerResult

__all__ = ["BootResult", "bootmer", "percentile_interval"]


@dataclass(frozen=True, eq=False, repr=False)
class BootResult(Result):
    """Bootstrap replicates of a fit (``bootMer``'s ``t`` and ``t0``).

    Attributes
    ----------
    replicates : DataFrame
        One row per replicate, one column per parameter (fixed effects, then the random-effect
        standard deviations ``sd_(Intercept)|item``); ``+-inf`` where a replicate's estimate
        diverges (separated simulated data).
    estimate : Series
        The parameters of the fit itself (``t0``).
    nsim, seed : int
    n_separated : int
        Replicates with separated simulated data.
    """

    replicates: pd.DataFrame
    estimate: pd.Series
    nsim: int
    seed: int | None
    n_separated: int = 0
    method: str = field(default="parametric")

    def to_frame(self) -> pd.DataFrame:
        """Per parameter: estimate, bootstrap mean, SD and bias."""
        r = self.replicates.replace([np.inf, -np.inf], np.nan)
        return pd.DataFrame({"term": self.replicates.columns, "estimate": self.estimate.to_numpy(),
                             "boot_mean": r.mean().to_numpy(), "se": r.std(ddof=1).to_numpy(),
                             "bias": (r.mean() - self.estimate).to_numpy()})


def percentile_interval(x: np.ndarray, level: float) -> tuple[float, float]:
    """Type-7 quantiles at ``(1 -+ level) / 2`` that accept ``+-inf`` among the replicates."""
    x = np.sort(np.asarray(x, dtype=float)[~np.isnan(x)])
    if x.size == 0:
        return np.nan, np.nan
    out = []
    for q in ((1 - level) / 2, (1 + level) / 2):
        h = (x.size - 1) * q
        lo, hi = int(np.floor(h)), int(np.ceil(h))
        g = h - lo
        a, b = x[lo], x[hi]
        out.append(float(a if g == 0 or a == b else (1 - g) * a + g * b))
    return out[0], out[1]


def _replicate(spec: dict, task: int, seq: np.random.SeedSequence) -> tuple[np.ndarray, bool]:
    """One parametric-bootstrap replicate: simulate, refit, return (beta, sds), separated."""
    from ..core.parallel import single_thread_blas

    with single_thread_blas():
        return _simulate_and_refit(spec, np.random.default_rng(seq))


def _simulate_and_refit(spec: dict, rng: np.random.Generator) -> tuple[np.ndarray, bool]:
    from ..mixed.links import inverse_link
    from .deviance import LaplaceDeviance
    from .optimize import optimize
    from .prior import PenalizedDeviance
    from .profile import sd_parameters
    from ..mixed.separation import expand_limit, find_separation, limit_problem

    design, ld0 = spec["design"], spec["ld"]
    theta, beta = spec["theta"], spec["beta"]
    ld0._set_theta(theta)
    u = rng.standard_normal(ld0.q)
    eta = spec["eta_fixed"] + ld0.solver.zl(u)
    k = rng.binomial(design.m.astype(np.int64), inverse_link(spec["link"], eta)).astype(float)
    sim = dataclasses.replace(design, k=k, k_rows=k, m_rows=design.m,
                              row_index=np.arange(k.size), data=None)
    p = beta.size
    prior = spec["prior"]
    ctl = spec["ld"].control
    sep = None if prior is not None else find_separation(sim, describe=False,
                                                         tol=ctl.separation_tol, rank_tol=ctl.rank_tol)
    if sep is not None:
        X, kf, mf, terms = limit_problem(sim, sep)
        if kf.size == 0:
            return np.concatenate([expand_limit(sep, p, np.zeros(0), np.zeros((0, 0)))[2],
                                   np.full(len(spec["sd_names"]), np.nan)]), True
        b0 = beta[sep.keep]
    else:
        X, kf, mf, terms = design.X, k, design.m, design.terms
        b0 = beta
    off = spec["offset"]
    if sep is not None and off is not None:
        off = off[~sep.pooled_rows]
    extra = {"offset": off, "link": spec["link"], "control": spec["ld"].control}
    ld = (LaplaceDeviance(X, kf, mf, terms, **extra) if prior is None
          else PenalizedDeviance(X, kf, mf, terms, prior=prior, **extra))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ev, _ = optimize(ld, theta.copy(), spec["lower"], b0.copy(), maxiter=spec["maxiter"])
    b = ev.beta if sep is None else expand_limit(sep, p, ev.beta, np.eye(ev.beta.size))[2]
    sds = [v for *_, v in sd_parameters(design.terms, ev.theta)]
    return np.concatenate([b, sds]), sep is not None


def bootmer(fit: GlmerResult, nsim: int = 200, *, seed: int | None = None, n_jobs: int | None = None,
            progress: bool = False, maxiter: int | None = None) -> BootResult:
    """Parametric bootstrap of a :func:`evalmix.glmer` fit (R: ``lme4::bootMer``).

    Parameters
    ----------
    fit : GlmerResult
    nsim : int
        Number of replicates.
    seed : int, optional
        Seed of the replicates' random streams (results depend on it alone).
    n_jobs : int, optional
        Parallel workers (joblib; see :func:`evalmix.core.parallel.parallel_map`).
    progress : bool
        Show a progress bar as replicates finish.
    maxiter : int, optional
        Iteration limit of each refit (default: the fit's ``control.maxiter``); the refits use
        the fit's control throughout.

    Returns
    -------
    BootResult

    Examples
    --------
    >>> import evalmix
    >>> runs = evalmix.simulate.glmm_runs(2, 30, 2, rng=4)
    >>> fit = evalmix.glmer("correct ~ model + (1|item)", runs)
    >>> boot = bootmer(fit, nsim=20, seed=1)
    >>> boot.replicates.shape
    (20, 3)
    """
    from ..core.parallel import parallel_map
    from .profile import sd_parameters

    if fit.separation is not None:
        raise ValueError("the fit is separated (see fit.separation): its divergent estimates "
                         "cannot seed a parametric bootstrap; refit with "
                         "fixef_prior='normal(0, 2.5)' first")
    if not np.isfinite(fit.theta.to_numpy()).all():
        raise ValueError("the fit has no finite variance parameters to simulate from")
    if fit._model.design is None:
        fit._model.require_data("bootmer()")
    design = fit._model.design
    from .profile import deviance_of

    ld, terms, _, beta = deviance_of(fit)
    if not np.array_equal(design.m, np.round(design.m)) or getattr(design, "weights_rows",
                                                                    None) is not None:
        raise ValueError("the parametric bootstrap simulates binomial counts: it needs integer "
                         "trials and no prior weights")
    theta = fit.theta.to_numpy()
    sd_info = sd_parameters(design.terms, theta)
    spec = {"design": design, "ld": ld, "theta": theta, "beta": beta,
            "eta_fixed": design.X.dot(beta) + (0.0 if design.offset is None else design.offset),
            "lower": design.theta_lower, "offset": design.offset, "link": fit.link,
            "prior": fit.fixef_prior,
            "maxiter": ld.control.maxiter if maxiter is None else maxiter,
            "sd_names": [s[0] for s in sd_info]}
    out = parallel_map(functools.partial(_replicate, spec), range(int(nsim)), n_jobs=n_jobs,
                       seed=seed, desc="bootstrap refits", progress=progress)
    names = list(fit.fixef.index) + spec["sd_names"]
    reps = pd.DataFrame(np.vstack([o[0] for o in out]), columns=names)
    n_sep = int(sum(o[1] for o in out))
    if n_sep:
        warnings.warn(f"{n_sep} of {nsim} bootstrap samples are separated: their divergent "
                      "coefficients are +-inf in the replicates", FitWarning, stacklevel=2)
    t0 = pd.Series(np.concatenate([fit.fixef.to_numpy(), [s[4] for s in sd_info]]), index=names)
    return BootResult(replicates=reps, estimate=t0, nsim=int(nsim), seed=seed, n_separated=n_sep)
