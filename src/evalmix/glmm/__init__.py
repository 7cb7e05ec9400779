"""Generalized linear mixed models for binary and k-of-n outcomes (``lme4::glmer`` in Python).

Pipeline, split as in lme4: :mod:`.design` (formula -> pooled arrays), :mod:`.deviance` (PIRLS and
the Laplace deviance), :mod:`.optimize` (maximum likelihood), :mod:`.result` (:class:`GlmerResult`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import warnings
from typing import Any

import numpy as np
import pandas as pd

from ..data import RunsData
from ..errors import ConvergenceWarning, FitWarning, SeparationWarning, SingularFitWarning
from .deviance import DenseSolver, LaplaceDeviance
from .design import GlmmDesign, build_design, check_data
from .optimize import OptimizerReport, boundary_probes, hessian, optimize
from .result import FittedModel, GlmerResult
from .prior import PenalizedDeviance, parse_fixef_prior
from .separation import expand_limit, find_separation, independent_columns, limit_problem

__all__ = ["GlmerResult", "OptimizerReport", "glmer"]

SINGULAR_TOL = 1e-4  # lme4's isSingular(tol = 1e-4)
GRAD_TOL = 0.002  # lme4's check.conv.grad tolerance
HESS_TOL = 1e-6  # lme4's check.conv.hess tolerance
VCOV_METHODS = ("hessian", "hessian_exact", "rx")


def _blas_single_thread():
    """Small dense products run faster single-threaded, and much faster on a busy machine."""
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # pragma: no cover - optional
        return contextlib.nullcontext()
    return threadpool_limits(limits=1, user_api="blas")


def drop_rank_deficient(design: GlmmDesign) -> list[str]:
    """Drop columns of X that are linear combinations of earlier ones (lme4 drops them too)."""
    Xu = design.X.unique_rows  # same column space as X, usually far fewer rows
    keep = independent_columns(Xu)
    dropped = [design.fixed.columns[j] for j in range(Xu.shape[1]) if j not in keep]
    if dropped:
        design.X.take_columns(keep)
        design.fixed.drop_columns(keep)
    return dropped


def _varcorr(design: GlmmDesign, theta: np.ndarray) -> pd.DataFrame:
    rows = []
    seen: dict[str, int] = {}
    for t, L in zip(design.terms, DenseSolver.lambdas_for(design.terms, theta)):
        # a factor named twice (from ``||``) is labelled g, g.1, ... as R's make.unique does
        n = seen.get(t.group, 0)
        seen[t.group] = n + 1
        group = t.group if n == 0 else f"{t.group}.{n}"
        S = L @ L.T
        sd = np.sqrt(np.diag(S))
        for i in range(t.nc):
            rows.append((group, t.cnames[i], "", S[i, i], sd[i]))
        for j in range(t.nc):
            for i in range(j + 1, t.nc):
                cor = S[i, j] / (sd[i] * sd[j]) if sd[i] > 0 and sd[j] > 0 else np.nan
                rows.append((group, t.cnames[j], t.cnames[i], S[i, j], cor))
    return pd.DataFrame(rows, columns=["group", "var1", "var2", "variance", "sd"])


def _check_convergence(grad: np.ndarray, H: np.ndarray | None, free: np.ndarray) -> list[str]:
    """lme4's checkConv: scaled gradient and Hessian eigenvalues over the free parameters."""
    msgs: list[str] = []
    if H is None:
        return msgs
    g = grad[free]
    Hf = H[np.ix_(free, free)]
    try:
        R = np.linalg.cholesky(Hf).T  # upper, H = R'R
        scgrad = np.linalg.solve(R, g)
    except np.linalg.LinAlgError:
        ev = np.linalg.eigvalsh(Hf)
        neg = int((ev < -HESS_TOL).sum())
        msgs.append(f"Model failed to converge: degenerate Hessian with {neg} negative eigenvalues"
                    if neg else "unable to evaluate scaled gradient")
        return msgs
    mingrad = np.minimum(np.abs(scgrad), np.abs(g))
    if mingrad.size and mingrad.max() > GRAD_TOL:
        w = int(np.flatnonzero(free)[np.argmax(mingrad)]) + 1
        msgs.append(f"Model failed to converge with max|grad| = {mingrad.max():.6g} "
                    f"(tol = {GRAD_TOL}, component {w})")
    ev = np.linalg.eigvalsh(Hf)
    if ev.size and ev.max() > 0 and ev.min() / ev.max() < HESS_TOL:
        msgs.append("Model is nearly unidentifiable: large eigenvalue ratio - Rescale variables?")
    return msgs


def glmer(formula: str, data: RunsData, *, trials: str | None = None,
          vcov_method: str = "hessian", pool: bool = True, start: dict | None = None,
          maxiter: int = 500, fixef_prior: Any = None, missing: str = "raise") -> GlmerResult:
    """Fit a binomial-logit GLMM by maximum likelihood with the Laplace approximation.

    The objective is ``lme4::glmer``'s default (``nAGQ = 1``) Laplace deviance, so the same data
    give the same likelihood surface; the optimiser usually reaches a slightly lower deviance than
    lme4's bobyqa + Nelder-Mead.

    Parameters
    ----------
    formula : str
        lme4 syntax: ``correct ~ model * language + (1|item) + (1|item:run)``; a k-of-n response is
        written ``cbind(k, n - k)``; random terms ``(1|g)``, ``(1|a:b)``, ``(1|a/b)``,
        ``(1 + x|g)``, ``(x|g)``, ``(1 + x||g)``.
    data : DataFrame or path
        One row per observation (or per k-of-n count), validated as a runs table (see
        :func:`evalmix.ensure_runs`): a 0/1 response (or valid counts), no missing values (see
        ``missing``), no duplicated (model, item, run, slices) key when the table has a run
        column, no fixed-effect factor with a single level.
    trials : str, optional
        Column of trials when the response is a count of successes: ``glmer("k ~ model +
        (1|item)", d, trials="n")`` is ``glmer("cbind(k, n - k) ~ model + (1|item)", d)``.
    vcov_method : {"hessian", "hessian_exact", "rx"}
        ``"hessian"`` (default): the standard errors lme4 1.1-31 reports, the fixed-effect block of
        ``2 H^-1`` with ``H`` the finite-difference Hessian over (theta, beta) of lme4's deviance
        function, whose PIRLS stops early (``tolPwrss = 1e-7``); that makes ``H`` slightly more
        curved than the exact one and the SEs 0.3-1% smaller. ``"hessian_exact"``: the same from
        the exact Laplace deviance (lme4 with ``glmerControl(tolPwrss = 1e-12)``). ``"rx"``: the
        inverse of ``X'WX - X'WZL (L'Z'WZL + I)^-1 L'Z'WX`` at the final PIRLS step, which treats
        the variance parameters as known (smaller SEs; lme4 >= 1.1-38's choice for large models).
    pool : bool
        Pool rows with identical covariates and grouping levels into binomial counts (exact; the
        reported likelihood is the one of the rows as given).
    start : dict, optional
        ``{"theta": array, "beta": array}`` starting values (lme4's ``start``).
    maxiter : int
        Iteration limit of the outer optimiser.
    fixef_prior : str, float, list or dict, optional
        A normal prior on the fixed effects, maximised with the likelihood as
        ``blme::bglmer(..., fixef.prior = normal(sd = ...), cov.prior = NULL)`` does:
        ``"normal(0, 2.5)"`` (sd 2.5 for every coefficient), ``"normal"`` (blme's default, sd 10
        for the intercept and 2.5 for the rest), ``"normal(sd = c(10, 2.5))"``, a list of sds or
        ``{"Intercept": 10, "": 2.5}`` (see :func:`evalmix.glmm.prior.parse_fixef_prior`). It
        keeps the estimates finite under separation. ``loglik`` is then the likelihood at the
        penalised estimates and ``prior_deviance`` blme's "Prior dev".
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    GlmerResult

    Warns
    -----
    SingularFitWarning
        A variance parameter is on its boundary (lme4's "boundary (singular) fit").
    ConvergenceWarning
        The convergence checks of lme4 fail (scaled gradient > 0.002, degenerate Hessian).
    SeparationWarning
        Some fixed-effect estimates are infinite (complete or quasi-complete separation, found
        by a linear program as ``detectseparation``): they are reported as ``+-inf`` with NaN
        standard errors and recorded in ``fit.separation``; the warning names the coefficients
        and the rows fitted perfectly.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> item = np.repeat(np.arange(30), 8)
    >>> model = np.tile(["a", "b"], 120)
    >>> eta = rng.normal(0, 1, 30)[item] + (model == "b") * 0.8
    >>> d = pd.DataFrame({"item": item, "model": model,
    ...                   "correct": (rng.random(240) < 1 / (1 + np.exp(-eta))).astype(int)})
    >>> fit = glmer("correct ~ model + (1|item)", d)
    >>> fit.fixef.index.tolist()
    ['Intercept', 'model[T.b]']
    """
    if vcov_method not in VCOV_METHODS:
        raise ValueError(f"vcov_method must be one of {VCOV_METHODS}, not {vcov_method!r}")
    with _blas_single_thread():
        return _glmer(formula, data, trials, vcov_method, pool, start, maxiter, fixef_prior, missing)


def _glmer(formula, data, trials, vcov_method, pool, start, maxiter, fixef_prior=None,
           missing="raise") -> GlmerResult:
    if not isinstance(data, pd.DataFrame):
        data = check_data(formula, data, trials=trials, missing=missing)
    design = build_design(formula, data, pool=pool, trials=trials, missing=missing)
    dropped = drop_rank_deficient(design)
    if dropped:
        warnings.warn(f"fixed-effect model matrix is rank deficient so dropping {len(dropped)} "
                      f"column(s): {dropped}", FitWarning, stacklevel=3)
    prior = None if fixef_prior is None else parse_fixef_prior(fixef_prior, design.fixed.columns)
    # separation: fit the limit (the rows not fitted perfectly), report divergent estimates
    sep = find_separation(design)
    prior_note = None
    if prior is not None and sep is not None:
        prior_note = (f"{sep.kind} separation in the fixed effects ({'; '.join(sep.slices)}): the "
                      "prior keeps the estimates finite, so they depend on it")
        sep = None
    if sep is not None:
        warnings.warn(sep.message, SeparationWarning, stacklevel=3)
        Xf, kf, mf, termsf = limit_problem(design, sep)
        if kf.size == 0:
            return _completely_separated(formula, design, sep)
    else:
        Xf, kf, mf, termsf = design.X, design.k, design.m, design.terms
    ld = (LaplaceDeviance(Xf, kf, mf, termsf) if prior is None
          else PenalizedDeviance(Xf, kf, mf, termsf, prior=prior))
    lower = design.theta_lower
    theta0 = design.theta_start
    beta0 = np.zeros(Xf.shape[1])
    if start:
        if "theta" in start:
            theta0 = np.asarray(start["theta"], dtype=float)
            if theta0.shape != lower.shape:
                raise ValueError(f"start['theta'] needs {lower.size} values {design.theta_names}")
        if "beta" in start:
            beta0 = np.asarray(start["beta"], dtype=float)
            if sep is not None:
                beta0 = beta0[sep.keep]
    ev, rep = optimize(ld, theta0, lower, beta0, maxiter=maxiter,
                       probes=lambda th: boundary_probes(design.terms, th))
    nt, p = ev.theta.size, ev.beta.size
    singular = bool(np.any(ev.theta[lower == 0] < SINGULAR_TOL))
    # the gradient check skips parameters held at their bound with the gradient pointing out
    at_bound = np.zeros(nt + p, dtype=bool)
    at_bound[:nt] = (ev.theta <= lower + 1e-8) & (rep.gradient[:nt] >= 0)
    rep.max_abs_gradient = float(np.max(np.abs(np.where(at_bound, 0.0, rep.gradient))))
    # lme4 checks convergence on the Hessian of its own deviance function; so does evalmix
    # lme4's deviance function (and blme's) restarts PIRLS from the first-stage linear predictor
    # and stops one step short of the mode (see ``hessian``); on separated data with a prior
    # that start is far from the mode, PIRLS runs to convergence and blme's Hessian is exact
    H = hessian(ld, ev, lme4_pirls=vcov_method == "hessian" and prior_note is None)
    messages: list[str] = []
    if singular:
        messages.append("boundary (singular) fit: see help('isSingular')")
        warnings.warn("boundary (singular) fit: a variance parameter is estimated at 0 "
                      f"(theta = {dict(zip(design.theta_names, [round(float(v), 6) for v in ev.theta]))})",
                      SingularFitWarning, stacklevel=3)
    conv = _check_convergence(rep.gradient, H, ~at_bound)
    if not rep.converged and not conv and rep.max_abs_gradient > GRAD_TOL:
        conv.append(f"optimizer stopped: {rep.message}")
    for msg in conv:
        warnings.warn(msg, ConvergenceWarning, stacklevel=3)
    messages += conv
    if prior_note is not None:
        messages.append(prior_note)
    converged = not any(m.startswith(("Model failed", "optimizer", "unable")) for m in conv)

    method = vcov_method
    V = None
    if method.startswith("hessian"):
        try:
            Hi = np.linalg.inv(H)
            V = (Hi + Hi.T)[nt:, nt:]
            np.linalg.cholesky(V)
        except np.linalg.LinAlgError:
            warnings.warn("the finite-difference Hessian is not positive definite; standard errors "
                          "come from the final PIRLS step (RX) instead", ConvergenceWarning,
                          stacklevel=3)
            method, V = "rx", None
    if V is None:
        V = np.linalg.inv(ld.rx(ev))
        V = (V + V.T) / 2
    names = design.fixed.columns
    beta = ev.beta
    if sep is not None:
        bp, Vp, beta, V = expand_limit(sep, len(names), ev.beta, V)
        sep = dataclasses.replace(sep, beta_limit=bp, vcov_limit=Vp)
        messages.append(sep.message)
    dev = ev.dev - 2.0 * design.log_binom
    prior_dev = None
    if prior is not None:  # blme reports the likelihood without the prior
        pen = prior.penalty(ev.beta)
        dev -= pen
        prior_dev = pen + prior.constant
    loglik = -dev / 2.0
    df = nt + p
    model = FittedModel(design, ld, ev, design.data, design.row_index, separation=sep)
    return GlmerResult(
        formula=formula, fixef=pd.Series(beta, index=names, name="estimate"),
        vcov=pd.DataFrame(V, index=names, columns=names),
        theta=pd.Series(ev.theta, index=design.theta_names, name="theta"),
        loglik=loglik, aic=dev + 2 * df, bic=dev + df * np.log(design.nobs), deviance=dev,
        df=df, nobs=design.nobs, varcorr=_varcorr(design, ev.theta), converged=converged,
        singular=singular, messages=tuple(messages), optimizer=rep, vcov_method=method,
        fixed_design=design.fixed, hessian=H, _model=model, separation=sep,
        fixef_prior=prior, prior_deviance=prior_dev)


def _completely_separated(formula: str, design: GlmmDesign, sep) -> GlmerResult:
    """Every row is fitted perfectly in the limit: no finite estimate, log-likelihood 0."""
    names = design.fixed.columns
    p, nt = len(names), design.theta_lower.size
    bp, Vp, beta, V = expand_limit(sep, p, np.zeros(0), np.zeros((0, 0)))
    sep = dataclasses.replace(sep, beta_limit=bp, vcov_limit=Vp)
    theta = np.full(nt, np.nan)
    dev = -2.0 * design.log_binom
    rep = OptimizerReport(method="none (complete separation)", converged=False,
                          message=sep.message, outer_iterations=0, deviance_evaluations=0,
                          pirls_iterations=0, gradient=np.zeros(0))
    df = nt + p
    return GlmerResult(
        formula=formula, fixef=pd.Series(beta, index=names, name="estimate"),
        vcov=pd.DataFrame(V, index=names, columns=names),
        theta=pd.Series(theta, index=design.theta_names, name="theta"),
        loglik=-dev / 2.0, aic=dev + 2 * df, bic=dev + df * np.log(design.nobs), deviance=dev,
        df=df, nobs=design.nobs, varcorr=_varcorr(design, theta), converged=False,
        singular=False, messages=(sep.message,), optimizer=rep, vcov_method="none",
        fixed_design=design.fixed, hessian=None,
        _model=FittedModel(design, None, None, design.data, design.row_index, separation=sep),
        separation=sep)
