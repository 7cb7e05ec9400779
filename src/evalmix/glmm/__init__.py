"""Generalized linear mixed models for binary and k-of-n outcomes (``lme4::glmer`` in Python).

Pipeline, split as in lme4 (``glFormula -> mkGlmerDevfun -> optimizeGlmer -> mkMerMod``), each
step public: :func:`build_design` (formula and data -> pooled arrays), :func:`build_deviance`
(PIRLS and the Laplace deviance on a :class:`Solver`), :func:`optimize` (maximum likelihood),
and :func:`glmer`, which runs them and assembles the :class:`GlmerResult`;
``glmer(..., devfun_only=True)`` returns the objective (:class:`DevianceFunction`). Every setting
lives in :class:`GlmerControl`.
"""

from __future__ import annotations

import dataclasses
import re
import warnings
from typing import Any, Literal, overload

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike

from ..data.pushdown import formula_counts, read_source, scan_columns
from ..data.runs import RunsData
from ..core.errors import (ConvergenceWarning, FitWarning, FormulaError, SeparationWarning)
from ..core.methods import VCOV_METHODS
from ..model import (GlmmDesign, RandomTerm, as_r_factor, build_design, check_data, drop_rank_deficient,
                     model_columns, parse_formula)
from ..core.parallel import single_thread_blas
from .control import DEFAULT_CONTROL, GlmerControl
from .deviance import LINKS, Evaluation, LaplaceDeviance, Solver, make_solver
from .devfun import DevianceFunction, build_deviance
from .optimize import (OptimizerReport, OptimizerStep, boundary_probes, fit_checks, hessian, lme4_start,
                       optimize, optimize_joint)
from .result import FittedModel, GlmerResult, varcorr_table
from .prior import FixefPriorSpec, NormalPrior, parse_fixef_prior
from ..mixed.convergence import hessian_condition
from ..mixed.separation import Separation, expand_limit, find_separation

__all__ = ["DevianceFunction", "GlmerControl", "GlmerResult", "GlmmDesign", "LaplaceDeviance",
           "OptimizerReport", "OptimizerStep", "Solver", "build_design", "build_deviance",
           "drop_rank_deficient", "glmer", "make_solver", "optimize", "varcorr_table"]



@overload
def glmer(formula: str, data: RunsData, *, trials: str | None = ...,
          weights: str | ArrayLike | None = ..., offset: str | ArrayLike | None = ...,
          contrasts: dict[str, Any] | None = ..., family: str = ...,
          link: str = ..., nAGQ: int = ..., vcov_method: str = ..., pool: bool = ...,
          start: dict[str, ArrayLike] | None = ..., maxiter: int | None = ..., fixef_prior: FixefPriorSpec | None = ...,
          missing: str = ..., control: GlmerControl | None = ...,
          devfun_only: Literal[False] = ...) -> GlmerResult: ...


@overload
def glmer(formula: str, data: RunsData, *, trials: str | None = ...,
          weights: str | ArrayLike | None = ..., offset: str | ArrayLike | None = ...,
          contrasts: dict[str, Any] | None = ..., family: str = ...,
          link: str = ..., nAGQ: int = ..., vcov_method: str = ..., pool: bool = ...,
          start: dict[str, ArrayLike] | None = ..., maxiter: int | None = ..., fixef_prior: FixefPriorSpec | None = ...,
          missing: str = ..., control: GlmerControl | None = ...,
          devfun_only: Literal[True]) -> DevianceFunction: ...


def glmer(formula: str, data: RunsData, *, trials: str | None = None,
          weights: str | ArrayLike | None = None, offset: str | ArrayLike | None = None,
          contrasts: dict[str, Any] | None = None, family: str = "binomial",
          link: str = "logit", nAGQ: int = 1, vcov_method: str = "hessian", pool: bool = True,
          start: dict[str, ArrayLike] | None = None, maxiter: int | None = None, fixef_prior: FixefPriorSpec | None = None,
          missing: str = "raise", control: GlmerControl | None = None,
          devfun_only: bool = False) -> GlmerResult | DevianceFunction:
    """Fit a binomial GLMM by maximum likelihood (Laplace or adaptive Gauss-Hermite).

    The objective is ``lme4::glmer``'s deviance (Laplace for ``nAGQ = 1``, its default), so the
    same data give the same likelihood surface; the optimiser usually reaches a slightly lower
    deviance than lme4's bobyqa + Nelder-Mead.

    Parameters
    ----------
    formula : str
        lme4 syntax: ``correct ~ model * language + (1|item) + (1|item:run)``; a k-of-n response is
        written ``cbind(k, n - k)``; random terms ``(1|g)``, ``(1|a:b)``, ``(1|a/b)``,
        ``(1 + x|g)``, ``(x|g)``, ``(1 + x||g)``. The fixed part is read as R reads it:
        ``I(age^2)``, ``log(x)``, ``sqrt(x)``, ``scale(x)``, ``poly(x, 2)`` (orthogonal, as R's),
        ``factor(x)``, ``C(x, contr.sum)``, ``offset(log(n))``. A one-column response may be 0/1,
        boolean, or a factor/string column whose first level is a failure (R's rule).
    data : DataFrame or path
        One row per observation (or per k-of-n count), validated as a runs table (see
        :func:`evalmix.ensure_runs` and :func:`evalmix.model.check_data`): a 0/1 response
        (or valid counts, or a factor), no missing values (see ``missing``), no duplicated
        (model, item, run, slices) key when the table has a run column, no fixed-effect factor
        with a single level. A lazy table (a Parquet file, folder or glob; a DuckDB relation; a
        polars LazyFrame; a Dask or PySpark DataFrame) is counted in its own engine, k-of-n per
        cell of the formula's variables, with the same checks; the fit equals the fit of the rows
        and reports their log-likelihood and number of rows (docs/scale.md). Not with
        ``trials``, ``weights``, ``offset`` or ``missing="drop"``, which read the table whole.
    trials : str, optional
        Column of trials when the response is a count of successes: ``glmer("k ~ model +
        (1|item)", d, trials="n")`` is ``glmer("cbind(k, n - k) ~ model + (1|item)", d)``.
    weights : str or array, optional
        Prior weights (a column or one value per row), as lme4's ``weights``: with a proportion
        response (``y`` in [0, 1]) and ``weights`` = trials this is the k-of-n model.
    offset : str or array, optional
        A known term added to the linear predictor (lme4's ``offset``); ``offset()`` terms in the
        formula add to it. Marginal means add the offset's mean over the fitted rows, as emmeans
        does; predictions on new data add the formula's ``offset()`` terms only, as lme4 does.
    contrasts : dict, optional
        Factor -> coding, R's ``contrasts`` argument: ``"contr.treatment"``, ``"contr.sum"``,
        ``"contr.poly"``, ``"contr.helmert"`` or a levels x k matrix. R's defaults otherwise:
        treatment coding, ``contr.poly`` for ordered categoricals.
    family, link : str
        ``"binomial"`` with link ``"logit"`` (default), ``"probit"`` or ``"cloglog"``
        (``binomial(link = "probit")``).
    nAGQ : int
        Points of adaptive Gauss-Hermite quadrature per random effect (lme4's ``nAGQ``): 1 is the
        Laplace approximation; more is allowed, as in lme4, only for a single scalar random-effect
        term such as ``(1|item)``. 0 is lme4's fast first stage (MixedModels.jl's
        ``fast = true``): beta is estimated with the conditional modes inside PIRLS and only
        theta is optimised, on that deviance; the standard errors then come from the final
        PIRLS step (``vcov_method="rx"``), as lme4 computes them for ``nAGQ = 0``. The cheapest
        fit of a large table; the log-likelihood is a little below the Laplace fit's.
    vcov_method : {"hessian", "hessian_exact", "rx"}
        ``"hessian"`` (default): the standard errors lme4 1.1-31 reports, the fixed-effect block of
        ``2 H^-1`` with ``H`` the finite-difference Hessian over (theta, beta) of lme4's deviance
        function, whose PIRLS restarts from its first-stage fit and stops early (``tolPwrss =
        1e-7``); where it stops one Newton step short of the mode, ``H`` is slightly more curved
        than the exact one and the SEs 0.3-1% smaller (evalmix replays lme4's iteration count;
        docs/glmm.md, "Standard errors"). ``"hessian_exact"``: the same from
        the exact Laplace deviance (lme4 with ``glmerControl(tolPwrss = 1e-12)``). ``"rx"``: the
        inverse of ``X'WX - X'WZL (L'Z'WZL + I)^-1 L'Z'WX`` at the final PIRLS step, which treats
        the variance parameters as known (smaller SEs; lme4 >= 1.1-38's choice for large models).
    pool : bool
        Pool rows with identical covariates and grouping levels into binomial counts (exact; the
        reported likelihood is the one of the rows as given).
    start : dict, optional
        ``{"theta": array, "beta": array}`` starting values (lme4's ``start``).
    maxiter : int, optional
        Iteration limit of the outer optimiser (default ``control.maxiter``, 500); when given it
        replaces the control's.
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
    control : GlmerControl, optional
        Tolerances, iteration limits and solver thresholds (lme4's ``glmerControl``); the
        defaults when not given. The fit stores it as ``fit.control``. Its ``grid_rows``
        (default 1,000,000) routes ``y ~ 1 + (1|a) + (1|b)`` and ``y ~ 0 + a + (1|b)`` (logit,
        ``nAGQ = 1``, no ``weights``, ``offset``, ``contrasts``, ``fixef_prior`` or ``start``) on a
        complete ``a x b`` grid of one 0/1 answer a cell, from that many rows (or trials of a table
        counted in its engine), to :func:`evalmix.glmm.gridfit.glmer_grid`: the same estimates to
        1e-6 in a few bytes a cell, a fit without rows (``has_data`` False, as after
        ``remove_data()``), and ``vcov_method="hessian"`` reported as ``"hessian_exact"`` (the
        messages and summary say so). ``grid_rows=0`` never routes (docs/glmm.md,
        "Leaderboard-size grids").
    devfun_only : bool
        Return the deviance function instead of fitting (lme4's ``devFunOnly = TRUE``): a
        :class:`~evalmix.glmm.devfun.DevianceFunction` of ``x = (theta, beta)`` giving
        ``-2 logLik``, with its design, names, bounds and lme4's starting point.

    Returns
    -------
    GlmerResult
        (a DevianceFunction with ``devfun_only=True``)

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
    ['(Intercept)', 'modelb']
    """
    if vcov_method not in VCOV_METHODS:
        raise ValueError(f"vcov_method must be one of {VCOV_METHODS}, not {vcov_method!r}")
    family, link = _family_link(family, link)
    if isinstance(nAGQ, bool) or not isinstance(nAGQ, (int, np.integer)) or nAGQ < 0:
        raise ValueError(f"nAGQ must be an integer >= 0 (0: lme4's first stage, 1: Laplace, "
                         f"more: adaptive Gauss-Hermite), got {nAGQ!r}")
    if nAGQ == 0 and fixef_prior is not None:
        raise ValueError("nAGQ = 0 is not available with fixef_prior (blme maximises the "
                         "penalised Laplace likelihood); use nAGQ = 1")
    control = _control(control, maxiter)
    build = {"trials": trials, "pool": pool, "weights": weights, "offset": offset,
             "contrasts": contrasts, "missing": missing}
    pushed = None
    if trials is None and weights is None and offset is None and missing == "raise":
        # a lazy table (Parquet, DuckDB, polars, Dask, Spark): k-of-n per cell of the formula's
        # variables, counted by its own engine; the checks of the rows name a broken rule
        pushed = _counted_in_engine(formula, data, missing)
    if pushed is not None:
        data, build["trials"] = pushed, _PUSHED_TRIALS
    else:
        data = read_source(data)  # a folder or glob of Parquet files: the rows, read whole
    if not devfun_only and control.grid_rows > 0 and nAGQ == 1 and link == "logit" and \
            weights is None and offset is None and fixef_prior is None and not start and \
            contrasts is None and missing == "raise" and (trials is None or isinstance(trials, str)):
        routed = _grid_route(formula, data, pushed is not None, vcov_method, control, trials)
        if routed is not None:
            return routed
    if devfun_only:
        # the objective over all rows (separation is not resolved: the function is finite
        # everywhere, its infimum at infinity then)
        design, prior = _prepare(formula, data, build=build, fixef_prior=fixef_prior,
                                 nAGQ=int(nAGQ), control=control)
        design = design if pushed is None else _as_rows(design)
        return DevianceFunction(design, build_deviance(design, link=link, control=control,
                                                       prior=prior), nagq=int(nAGQ))
    with single_thread_blas():
        design, prior = _prepare(formula, data, build=build, fixef_prior=fixef_prior,
                                 nAGQ=int(nAGQ), control=control)
        design = design if pushed is None else _as_rows(design)
        return _fit(formula, design, prior, link=link, nAGQ=int(nAGQ), vcov_method=vcov_method,
                    start=start, control=control)


_PUSHED_TRIALS = "_trials"  # the trials column of a table counted in its engine
_GRID_FILL = 0.5  # the share of non-empty cells from which a counted table's grid is fitted as one


def _grid_route(formula: str, data: Any, pushed: bool, vcov_method: str,
                control: GlmerControl, trials: str | None = None) -> GlmerResult | None:
    """The fit of the grid path (:func:`evalmix.glmm.gridfit.glmer_grid`) when the formula is one
    of its two, the rows (or the trials of engine-counted cells) number ``control.grid_rows`` or
    more, and they fill the grid of the two grouping factors: one 0/1 answer a cell, or, for a
    table counted in its engine, k-of-n cells of which at least half are not empty; with a
    ``trials`` column, one k-of-n row a cell (the ``cbind`` fit: lme4's binomial constant and
    nobs); None otherwise (the rows' path fits)."""
    from .gridfit import count_dtype, glmer_grid, grid_formula

    spec = grid_formula(formula)
    if spec is None or not isinstance(data, pd.DataFrame):
        return None
    counts = _PUSHED_TRIALS if pushed else trials  # the column of trials per row, if any
    need = [spec.response, spec.rows, spec.columns] + ([counts] if counts else [])
    if any(c not in data.columns for c in need):
        return None  # the rows' path names the absent column
    if counts and not pd.api.types.is_integer_dtype(data[counts]):
        return None  # the rows' path checks the trials
    size = int(data[counts].sum()) if counts else len(data)
    if size < control.grid_rows:
        return None
    if not pushed:
        # the same errors as the rows' path
        data = check_data(formula, data, missing="raise", **({"trials": trials} if trials else {}))
    y = data[spec.response]
    if not (pd.api.types.is_bool_dtype(y) or pd.api.types.is_numeric_dtype(y)):
        return None  # a factor response: R's first-level rule is the rows' path's
    a, b = as_r_factor(data[spec.rows]), as_r_factor(data[spec.columns])
    ns, nb = len(a.categories), len(b.categories)
    if ns < 2 or nb < 2:
        return None
    cell = a.codes.astype(np.int64) * nb + b.codes
    yv = y.to_numpy(dtype=np.float64)
    rows = np.bincount(cell, minlength=ns * nb)
    if trials and not pushed and rows.max() > 1:
        return None  # several count rows a cell: the cbind fit's rows are the rows'
    n = (np.bincount(cell, weights=data[counts].to_numpy(dtype=np.float64), minlength=ns * nb)
         if counts else rows.astype(np.float64))
    del rows

    k = np.bincount(cell, weights=yv, minlength=ns * nb)
    del cell
    filled = n.reshape(ns, nb) > 0
    if filled.sum() < _GRID_FILL * ns * nb or not (filled.any(axis=0).all() and filled.any(axis=1).all()):
        return None  # a sparse grid (or an unused level): the rows' path holds only the cells there are
    if spec.kind == "fixed":
        right, total = k.reshape(ns, nb).sum(axis=1), n.reshape(ns, nb).sum(axis=1)
        if ((right == 0) | (right == total)).any():
            return None  # separation: the rows' path reports the divergent estimates
    vm = "hessian_exact" if vcov_method == "hessian" else vcov_method
    kw: dict[str, Any] = {"models": list(a.categories), "items": list(b.categories),
                          "vcov_method": vm, "control": control}
    if (n == 1).all() and not trials:
        fit = glmer_grid(k.astype(np.int8).reshape(ns, nb), formula, **kw)
    elif not counts:
        return None  # several rows a cell: the summary's residuals are the rows' (the rows' path)
    else:
        # k-of-n cells (some may be empty) of 0/1 rows: the rows' log-likelihood and number of
        # rows, as _as_rows reports them on the rows' path
        dt = count_dtype(int(n.max()))
        fit = glmer_grid(k.astype(dt).reshape(ns, nb), formula, trials=n.astype(dt).reshape(ns, nb),
                         as_rows=pushed, **kw)
    note = (f"fitted on the {ns} x {nb} grid of cells ({size} rows >= control.grid_rows = "
            f"{control.grid_rows}; GlmerControl(grid_rows=0) fits the rows): the fit holds no rows")
    if vcov_method == "hessian":
        note += ("; standard errors from the exact deviance's Hessian (vcov_method='hessian_exact'), "
                 "not lme4 1.1-31's early-stopping PIRLS ('hessian')")
    return dataclasses.replace(fit, messages=(*fit.messages, note))


def _counted_in_engine(formula: str, data: RunsData, missing: str) -> pd.DataFrame | None:
    """The k-of-n counts of a lazy table per cell of the formula's variables (None: not lazy, or a
    response of counts already, whose rows' binomial coefficients would be lost)."""
    cols = scan_columns(data)
    if cols is None:
        return None
    parsed = parse_formula(formula)
    if parsed.failures is not None or parsed.trials is not None:
        return None
    try:
        keys = [c for c in model_columns(parsed, pd.DataFrame(columns=cols)) if c != parsed.successes]
    except FormulaError:
        keys = []  # an absent column: the checks name it
    return formula_counts(data, parsed.successes, keys, trials=_PUSHED_TRIALS,
                          check=lambda rows: check_data(formula, rows, missing=missing))


def _as_rows(design: GlmmDesign) -> GlmmDesign:
    """The design of k-of-n counts a lazy table was reduced to, reporting what lme4 reports for the
    rows they count: 0/1 rows carry no binomial coefficient in the log-likelihood, and the
    number of observations is the number of rows, and lme4's PIRLS stopping rule (behind its
    standard errors) measures the deviance of the rows (their saturated model's is 0)."""
    return dataclasses.replace(design, log_binom=0.0, nobs=int(np.sum(design.m_rows)),
                               log_binom_rows=np.zeros(len(design.m_rows)), binary_rows=True)


def _prepare(formula: str, data: RunsData, *, build: dict[str, Any], fixef_prior: Any,
             nAGQ: int, control: GlmerControl) -> tuple[GlmmDesign, NormalPrior | None]:
    """Build: the design (``build`` holds :func:`build_design`'s keyword arguments) with
    rank-deficient columns dropped (lme4's warning) and the parsed prior."""
    design = build_design(formula, data, **build)
    _check_nagq(design, nAGQ)
    design, dropped = drop_rank_deficient(design, control.rank_tol)
    if dropped:
        warnings.warn(f"fixed-effect model matrix is rank deficient so dropping {len(dropped)} "
                      f"column(s): {dropped}", FitWarning, stacklevel=3)
    prior = None if fixef_prior is None else parse_fixef_prior(fixef_prior, design.fixed.columns)
    return design, prior


def _check_nagq(design: GlmmDesign, nAGQ: int) -> None:
    if nAGQ > 1 and (len(design.terms) != 1 or design.terms[0].nc != 1):
        raise FormulaError(f"nAGQ = {nAGQ} needs a single scalar random-effect term such as "
                           f"(1|item); this formula has "
                           f"{' + '.join(str(r) for r in design.parsed.random)} "
                           "(lme4 allows nAGQ > 1 only there too); use nAGQ = 1")


def _control(control: GlmerControl | None, maxiter: int | None) -> GlmerControl:
    if control is None:
        control = DEFAULT_CONTROL
    elif not isinstance(control, GlmerControl):
        raise TypeError(f"control must be a GlmerControl, not {type(control).__name__} "
                        "(build one with evalmix.GlmerControl(...))")
    if maxiter is not None and maxiter != control.maxiter:
        control = control.replace(maxiter=maxiter)
    return control


def _fit_agq(ld: LaplaceDeviance, term: RandomTerm, ev: Evaluation, rep: OptimizerReport,
             lower: np.ndarray, nagq: int
             ) -> tuple[Evaluation, OptimizerReport, float, np.ndarray]:
    """Polish the Laplace optimum on the nAGQ-point deviance; Hessian by central differences."""
    import time

    from .agq import AGQDeviance, fd_hessian, optimize_agq

    t0 = time.perf_counter()
    agq = AGQDeviance(ld, term, nagq)
    x, dev, ev2, grad, res, f = optimize_agq(agq, ev.theta, ev.beta, lower)
    H = fd_hessian(f, x, ld.control.hessian_step)
    agq.evaluate(x[:ev.theta.size], x[ev.theta.size:])  # leave the modes at the optimum
    rep2 = OptimizerReport(
        optimizer=f"{rep.optimizer}, then L-BFGS-B over (theta, beta) on the nAGQ = {nagq} deviance",
        converged=bool(res.success) and rep.converged, message=str(res.message),
        iterations=rep.iterations + int(res.nit),
        feval=ld.evaluations, pirls_iterations=ld.pirls_iterations,
        gradient=grad, max_grad=float(np.max(np.abs(grad))),
        seconds=rep.seconds + time.perf_counter() - t0, log=rep.log)
    return ev2, rep2, dev, H


def _family_link(family: Any, link: str) -> tuple[str, str]:
    """``"binomial"``, ``"binomial(link = 'probit')"`` or ``("binomial", link)``."""
    fam = str(family).replace(" ", "")
    m = re.fullmatch(r"binomial(?:\((?:link=)?[\"']?(\w+)[\"']?\))?", fam)
    if not m:
        raise ValueError(f"family must be 'binomial' (with link= logit, probit or cloglog), "
                         f"not {family!r}")
    if m.group(1):
        link = m.group(1)
    if link not in LINKS:
        raise ValueError(f"link must be one of {LINKS}, not {link!r}")
    return "binomial", link


def _fit(formula: str, design: GlmmDesign, prior: NormalPrior | None, *, link: str, nAGQ: int,
         vcov_method: str, start: dict[str, ArrayLike] | None,
         control: GlmerControl) -> GlmerResult:
    """The steps after the design: deviance -> optimise -> standard errors -> result."""
    # separation: fit the limit (the rows not fitted perfectly), report divergent estimates
    sep = find_separation(design, tol=control.separation_tol, rank_tol=control.rank_tol)
    prior_note = None
    if prior is not None and sep is not None:
        prior_note = (f"{sep.kind} separation in the fixed effects ({'; '.join(sep.slices)}): the "
                      "prior keeps the estimates finite, so they depend on it")
        sep = None
    if sep is not None:
        warnings.warn(sep.message, SeparationWarning, stacklevel=3)
        if not (~sep.pooled_rows).any():
            return _completely_separated(formula, design, sep, link, control)
    ld = build_deviance(design, link=link, control=control, prior=prior, separation=sep)
    theta0, beta0 = _start_values(design, sep, start, ld.p)
    lower = design.theta_lower
    ev, rep, dev_agq, H = _optimize(ld, design, theta0, beta0, nAGQ=nAGQ)
    nt, p = ev.theta.size, ev.beta.size
    singular = bool(np.any(ev.theta[lower == 0] < control.singular_tol))
    # the gradient check skips parameters held at their bound with the gradient pointing out
    at_bound = np.zeros(nt + p, dtype=bool)
    at_bound[:nt] = (ev.theta <= lower + control.bound_tol) & (rep.gradient[:nt] >= 0)
    if nAGQ != 0:  # the nAGQ = 0 report holds the gradient over theta only
        rep = dataclasses.replace(rep, max_grad=float(
            np.max(np.abs(np.where(at_bound, 0.0, rep.gradient)))))
    # lme4 checks convergence on the Hessian of its own deviance function; so does evalmix
    # lme4's deviance function (and blme's) restarts PIRLS from the first-stage linear predictor
    # and stops one step short of the mode (see ``hessian``); on separated data with a prior
    # that start is far from the mode, PIRLS runs to convergence and blme's Hessian is exact
    if nAGQ == 0:
        # lme4 computes no derivatives for nAGQ = 0: SEs from RX, and no gradient or Hessian
        # check (the optimiser's own verdict stands)
        vcov_method = "rx"
    elif dev_agq is None:
        lme4_pirls = vcov_method == "hessian" and prior_note is None
        eta_start = (lme4_start(ld, ev.theta, lower, ev.beta, ev.u)
                     if lme4_pirls else None)
        H = hessian(ld, ev, lme4_pirls=lme4_pirls, eta_start=eta_start, lower=lower)
    messages, conv, converged = fit_checks(
        design.theta_names, ev.theta, singular, rep.gradient, H, at_bound,
        optimizer_converged=rep.converged, max_grad=rep.max_grad, message=rep.message, control=control)
    if prior_note is not None:
        messages.append(prior_note)
    rep = dataclasses.replace(rep, checks=tuple(conv), hessian_cond=hessian_condition(
        None if H is None else H[np.ix_(~at_bound, ~at_bound)]))
    method, V = _vcov(ld, ev, H, vcov_method)
    names = design.fixed.columns
    beta = ev.beta
    if sep is not None:
        bp, Vp, beta, V = expand_limit(sep, len(names), ev.beta, V)
        sep = dataclasses.replace(sep, beta_limit=bp, vcov_limit=Vp)
        messages.append(sep.message)
    if dev_agq is None:
        dev = ev.dev - 2.0 * design.log_binom
    else:
        # lme4's quadrature deviance sums deviance residuals: relative to the saturated model
        dev = dev_agq + ld.saturated
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
        loglik=loglik, deviance=dev,
        df=df, nobs=design.nobs, varcorr=varcorr_table(design, ev.theta), converged=converged,
        singular=singular, messages=tuple(messages), optimizer=rep, vcov_method=method,
        fixed_design=design.fixed, hessian=H, _model=model, separation=sep,
        fixef_prior=prior, prior_deviance=prior_dev, link=link, nagq=nAGQ, control=control)


def _start_values(design: GlmmDesign, sep: Separation | None,
                  start: dict[str, ArrayLike] | None, p: int) -> tuple[np.ndarray, np.ndarray]:
    """lme4's ``start``: theta and beta (beta of the fitted columns under separation)."""
    lower = design.theta_lower
    theta0, beta0 = design.theta_start, np.zeros(p)
    if start:
        if "theta" in start:
            theta0 = np.asarray(start["theta"], dtype=float)
            if theta0.shape != lower.shape:
                raise ValueError(f"start['theta'] needs {lower.size} values {design.theta_names}")
        if "beta" in start:
            beta0 = np.asarray(start["beta"], dtype=float)
            if sep is not None:
                beta0 = beta0[sep.keep]
    return theta0, beta0


def _optimize(ld: LaplaceDeviance, design: GlmmDesign, theta0: np.ndarray, beta0: np.ndarray, *,
              nAGQ: int) -> tuple[Evaluation, OptimizerReport, float | None, np.ndarray | None]:
    """Optimise: the state at the optimum, the report, and for ``nAGQ > 1`` the quadrature
    deviance and its Hessian."""
    lower = design.theta_lower
    if nAGQ == 0:
        ev, rep = optimize_joint(ld, theta0, lower, beta0)
        return ev, rep, None, None
    ev, rep = optimize(ld, theta0, lower, beta0,
                       probes=lambda th: boundary_probes(design.terms, th))
    if nAGQ > 1:
        return _fit_agq(ld, design.terms[0], ev, rep, lower, nAGQ)
    return ev, rep, None, None


def _vcov(ld: LaplaceDeviance, ev: Evaluation, H: np.ndarray | None,
          vcov_method: str) -> tuple[str, np.ndarray]:
    """The fixed-effect covariance: the beta block of ``2 H^-1``, or RX's inverse where the
    method asks for it or the Hessian is not positive definite (with a warning)."""
    nt = ev.theta.size
    if vcov_method.startswith("hessian") and H is not None:
        try:
            Hi = np.linalg.inv(H)
            V = (Hi + Hi.T)[nt:, nt:]
            np.linalg.cholesky(V)
            return vcov_method, V
        except np.linalg.LinAlgError:
            warnings.warn("the finite-difference Hessian is not positive definite; standard errors "
                          "come from the final PIRLS step (RX) instead", ConvergenceWarning,
                          stacklevel=4)
    V = np.linalg.inv(ld.rx(ev))
    return "rx", (V + V.T) / 2


def _completely_separated(formula: str, design: GlmmDesign, sep: Separation, link: str = "logit",
                          control: GlmerControl = DEFAULT_CONTROL) -> GlmerResult:
    """Every row is fitted perfectly in the limit: no finite estimate, log-likelihood 0."""
    names = design.fixed.columns
    p, nt = len(names), design.theta_lower.size
    bp, Vp, beta, V = expand_limit(sep, p, np.zeros(0), np.zeros((0, 0)))
    sep = dataclasses.replace(sep, beta_limit=bp, vcov_limit=Vp)
    theta = np.full(nt, np.nan)
    dev = -2.0 * design.log_binom
    rep = OptimizerReport(optimizer="none (complete separation)", converged=False,
                          message="not run: every row is fitted perfectly in the limit")
    df = nt + p
    return GlmerResult(
        formula=formula, fixef=pd.Series(beta, index=names, name="estimate"),
        vcov=pd.DataFrame(V, index=names, columns=names),
        theta=pd.Series(theta, index=design.theta_names, name="theta"),
        loglik=-dev / 2.0, deviance=dev,
        df=df, nobs=design.nobs, varcorr=varcorr_table(design, theta), converged=False,
        singular=False, messages=(sep.message,), optimizer=rep, vcov_method="none",
        fixed_design=design.fixed, hessian=None,
        _model=FittedModel(design, None, None, design.data, design.row_index, separation=sep),
        separation=sep, link=link, control=control)
