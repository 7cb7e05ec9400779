""":func:`glmmtmb`: from formula and data to a :class:`~evalmix.tmb.result.GlmmTMBResult`."""

from __future__ import annotations

import dataclasses
import warnings
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..core.arguments import check_choice
from ..data.runs import RunsData
from ..core.errors import ConvergenceWarning, FitWarning, SeparationError
from ..mixed.convergence import hessian_condition
from ..mixed.separation import detect_separation
from ..core.parallel import single_thread_blas
from .design import build_tmb_design
from .family import FAMILIES, variance
from .model import LaplaceModel
from ..mixed.result import ModelRows
from .result import GlmmTMBResult

__all__ = ["glmmtmb"]


def glmmtmb(formula: str, data: RunsData, family: str = "beta", *,
            weights: str | ArrayLike | None = None, contrasts: dict[str, Any] | None = None,
            squeeze: bool = False) -> GlmmTMBResult:
    """Fit a GLMM for 0-1 scores or overdispersed k-of-n counts by the Laplace approximation,
    as R's ``glmmTMB`` (its ``beta_family()``, ``betabinomial()`` and ``binomial()`` families).

    All parameters, the fixed effects, the log SD of each random intercept and the log precision
    ``phi``, are optimised jointly; the standard errors come from the inverse Hessian of minus the
    Laplace log-likelihood over all of them (glmmTMB's ``sdreport``).

    Parameters
    ----------
    formula : str
        lme4 syntax with random intercepts, nested or crossed: ``"score ~ model + (1|item)"``,
        ``"cbind(k, n - k) ~ model + (1|item) + (1|item:run)"``,
        ``"cbind(k, n - k) ~ 1 + (1|model) + (1|item)"``.
    data : DataFrame or path
    family : {"beta", "betabinomial", "binomial"}
        ``"beta"``: one column of scores strictly between 0 and 1 (judge scores rescaled,
        partial credit, F1...), mean ``mu`` and precision ``phi``.  ``"betabinomial"``: k of n
        correct with more spread than a binomial allows (``p ~ Beta(mu phi, (1 - mu) phi)``).
        ``"binomial"``: k of n or 0/1.  The response of the binomial families is written as
        ``glmer`` takes it: ``cbind(k, n - k)``, ``cbind(k, failures)``, or a proportion with
        ``weights=`` the trials.
    weights : str or array, optional
        The trials of a proportion response (binomial families only).
    contrasts : dict, optional
        Codings of the fixed-effect factors, as :func:`evalmix.glmer`.
    squeeze : bool
        Beta family: map the scores into (0, 1) with Smithson and Verkuilen's
        ``(y (N - 1) + 1/2) / N`` (N the number of rows) so that scores of exactly 0 or 1 can be
        fitted.  Without it such scores are a :class:`~evalmix.core.errors.DataError`.

    Returns
    -------
    GlmmTMBResult

    Raises
    ------
    DataError
        Beta scores outside (0, 1) (naming the column and rows), counts that are not
        ``0 <= k <= n`` integers, a beta-binomial of 0/1 outcomes, aliased fixed effects.
    FormulaError
        No random term, a random slope, a ``cbind`` response for the beta family, an absent column.
    ArgumentError
        An unknown family; ``weights`` or ``squeeze`` where the family takes none.

    Warns
    -----
    ConvergenceWarning
        The largest gradient at the estimates is above 1e-3.
    FitWarning
        A random-effect SD on the boundary (no SE for it), or a Hessian that is not positive
        definite (the SEs are NaN).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import evalmix
    >>> rng = np.random.default_rng(7)
    >>> item = np.repeat(np.arange(40), 2)
    >>> model = np.tile(["a", "b"], 40)
    >>> mu = 1 / (1 + np.exp(-(0.8 * (model == "b") + rng.normal(0, 1, 40)[item])))
    >>> runs = pd.DataFrame({"item": item, "model": model, "n": 10})
    >>> runs["k"] = rng.binomial(10, rng.beta(mu * 4, (1 - mu) * 4))
    >>> fit = evalmix.glmmtmb("cbind(k, n - k) ~ model + (1|item)", runs, family="betabinomial")
    >>> fit.varcorr["group"].tolist(), fit.df
    (['item'], 4)
    >>> bool(fit.dispersion > 0)
    True
    """
    check_choice(family, "family", tuple(FAMILIES))
    design = build_tmb_design(formula, data, family=family, weights=weights, contrasts=contrasts,
                              squeeze=squeeze)
    if family != "beta":   # k of n: a direction of beta that fits some rows perfectly diverges
        X = np.asarray(design.X, dtype=float)
        verdicts = detect_separation(X, design.response.k, design.response.n, list(design.fixed.columns))
        if np.isinf(verdicts).any():
            named = ", ".join(f"{n!r} ({'+' if v > 0 else '-'}inf)" for n, v in verdicts.items() if np.isinf(v))
            raise SeparationError(
                f"glmmtmb({formula!r}): separation: every response is a success (or a failure) in the rows "
                f"that {named} pick out, so their maximum-likelihood estimates are infinite; glmer reports the "
                "limit of such a fit (infinite coefficients named, the rest estimated), or leave those rows out")
    terms = design.terms
    model = LaplaceModel(design.response, design.X, design.offset,
                         [np.asarray(t.index, dtype=np.int64) for t in terms], [t.nl for t in terms])
    with single_thread_blas():
        par, value, report, H = model.fit()
    report = dataclasses.replace(report, hessian_cond=hessian_condition(H))
    converged = report.converged
    interior = model.interior(par)
    p, nsd = model.p, model.nsd
    cols = list(design.fixed.columns)
    par_names = cols + [f"log_sd({t.group})" for t in terms] + (["log_phi"] if model.has_phi else [])
    kept = [n for n, k in zip(par_names, interior) if k]
    eig = np.linalg.eigvalsh(H) if np.all(np.isfinite(H)) else np.array([np.nan])
    if not np.all(np.isfinite(eig)) or eig.min() <= 0:
        warnings.warn(f"glmmtmb({formula!r}): the Hessian is not positive definite (the model may "
                      "be over-parametrised); the standard errors are NaN", FitWarning, stacklevel=2)
        V = np.full_like(H, np.nan)
    else:
        V = np.linalg.inv(H)
    sd = np.exp(par[p: p + nsd])
    boundary = [t.group for t, k in zip(terms, interior[p: p + nsd]) if not k]
    if boundary:
        warnings.warn(f"glmmtmb({formula!r}): the SD of {boundary} is on the boundary (near 0); its "
                      "log SD has no standard error and is left out of vcov_full", FitWarning,
                      stacklevel=2)
    if model.has_phi and not interior[-1]:
        warnings.warn(f"glmmtmb({formula!r}): the precision phi is at its upper bound (e^20): the "
                      "data show no overdispersion, the binomial limit; its log has no standard "
                      "error and is left out of vcov_full", FitWarning, stacklevel=2)
    if not converged:
        warnings.warn(f"glmmtmb({formula!r}) did not converge: " + "; ".join(report.checks),
                      ConvergenceWarning, stacklevel=2)
    phi = float(np.exp(par[-1])) if model.has_phi else 1.0
    resp = design.response
    mu = 1.0 / (1.0 + np.exp(-model.linear_predictor(par)))
    pearson = (resp.y - mu) / np.sqrt(variance(family, mu, phi, resp.n))
    loglik = -value
    npar = len(par)
    nobs = len(resp.y)
    u = model.u
    ranef = pd.concat([pd.DataFrame({"group": t.group, "term": "(Intercept)", "level": list(map(str, t.levels)),
                                     "mode": sd[k] * u[model.offsets[k]:model.offsets[k + 1]]})
                       for k, t in enumerate(terms)], ignore_index=True)
    vfull = pd.DataFrame(V, index=kept, columns=kept)
    return GlmmTMBResult(
        formula=formula, family=family,
        fixef=pd.Series(par[:p], index=cols, dtype=float),
        vcov=vfull.loc[cols, cols].copy(), vcov_full=vfull,
        varcorr=pd.DataFrame({"group": [t.group for t in terms], "var1": "(Intercept)",
                              "var2": None, "variance": sd**2, "sd": sd}),
        dispersion=phi, loglik=loglik, df=npar, nobs=nobs,
        ngrps=pd.Series({t.group: t.nl for t in terms}, dtype=int), converged=converged,
        optimizer=report, random_effects=ranef, fitted=mu, pearson_residuals=pearson,
        observed=resp.y.copy(), trials=resp.n.copy(), fixed_design=design.fixed,
        # the rows fitted, not the caller's frame: a refit must not see later edits of it
        call={"formula": formula, "data": design.data.reset_index(drop=True),
              "weights": weights if isinstance(weights, str) or design.weights is None
              else design.weights.copy(), "contrasts": contrasts},
        _rows=ModelRows(data=design.data, terms=terms, offset=design.offset))
