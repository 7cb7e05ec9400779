"""Cumulative-link mixed models for ordinal ratings (R's ``ordinal::clmm``).

``clmm("rating ~ model + (1|item)", data)`` fits ``P(Y <= j) = F(theta_j - x beta - u)`` with
scalar random intercepts (one term, several crossed, or nested as ``(1|item) + (1|item:run)``) by
the Laplace approximation; see :mod:`evalmix.ordinal.model` for the algorithm and
:class:`~evalmix.ordinal.result.ClmmResult` for the fit.
"""

from __future__ import annotations

import dataclasses
import math
import warnings

import numpy as np
import pandas as pd

from ..core.arguments import check_choice
from ..core.errors import ConvergenceWarning, DataError, FitWarning, FormulaError, SeparationError
from ..model import (build_fixed, build_random_terms, fitted_offset, model_columns, ordinal_codes,
                     parse_mixed_formula, read_data)
from ..core.parallel import single_thread_blas
from .emmeans import ClmmEMMeans, clmm_emmeans, clmm_ref_grid
from .model import OrdinalModel
from ..mixed.result import ModelRows
from .result import ClmmResult, convergence_check
from .separation import describe_separation, ordinal_separation

__all__ = ["ClmmEMMeans", "ClmmResult", "clmm", "clmm_emmeans", "clmm_ref_grid", "convergence_check"]


def clmm(formula: str, data: pd.DataFrame | str, *, link: str = "logit",
         threshold: str = "flexible") -> ClmmResult:
    """Fit a cumulative-link mixed model by the Laplace approximation (``ordinal::clmm``).

    Parameters
    ----------
    formula : str
        lme4 syntax with scalar random intercepts: ``"rating ~ model + (1|item)"``,
        ``"rating ~ model + (1|item) + (1|item:run)"``, ``"rating ~ model + (1|judge) + (1|item)"``.
        The response is an ordered categorical or integer scores (sorted numerically, no gaps),
        with at least three categories.  ``offset()`` terms are added to ``x beta``, as ordinal
        adds them.
    data : DataFrame or path
        One row per rating; a path is read with :func:`evalmix.data.runs.load_table`.
    link : {"logit", "probit"}
    threshold : {"flexible", "equidistant"}
        ``"flexible"``: one free threshold per adjacent pair of categories (``1|2``, ``2|3``...);
        ``"equidistant"``: ``threshold.1`` and a common ``spacing``.

    Returns
    -------
    ClmmResult
        Thresholds and location effects (with R's names), their covariance (``vcov(clmm)``),
        random-effect variances, log-likelihood, AIC, BIC, the Hessian's condition number.

    Raises
    ------
    DataError
        A missing value (naming column and row), a response that is not ordinal scores, fewer
        than three categories, a gap in integer scores, aliased fixed-effect columns.
    FormulaError
        No random term, a random term other than an intercept, a ``cbind`` response.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import evalmix
    >>> rng = np.random.default_rng(3)
    >>> item = np.repeat(np.arange(30), 4)
    >>> model = np.tile(["a", "b"], 60)
    >>> latent = (model == "b") * 1.0 + rng.normal(0, 1, 30)[item] + rng.logistic(size=120)
    >>> runs = pd.DataFrame({"item": item, "model": model,
    ...                      "rating": np.digitize(latent, [-1.5, 0, 1.5]) + 1})
    >>> fit = evalmix.clmm("rating ~ model + (1|item)", runs)
    >>> fit.coef.index.tolist()
    ['1|2', '2|3', '3|4', 'modelb']
    >>> fit.varcorr["group"].tolist(), fit.nobs
    (['item'], 120)
    """
    check_choice(link, "link", ("logit", "probit"))
    check_choice(threshold, "threshold", ("flexible", "equidistant"))
    parsed = parse_mixed_formula(formula, "clmm")
    data = read_data(data, parsed.random)
    if parsed.failures is not None or parsed.trials is not None:
        raise FormulaError(f"the response of a cumulative-link model is one column of ratings, "
                           f"not {parsed.successes!r} with failures or trials")
    for sp in parsed.random:
        if sp.expr.strip() != "1":
            raise FormulaError(f"random term {sp} is not supported: "
                               "clmm fits scalar random intercepts (1|group)")
    response = parsed.successes
    if response not in data.columns:
        raise DataError(f"response column {response!r} is not in the data")
    used = model_columns(parsed, data)
    for c in used:
        miss = data[c].isna().to_numpy()
        if miss.any():
            raise DataError(f"column {c!r} has a missing value in row {data.index[miss][0]}")
    d = data[list(dict.fromkeys(used))].reset_index(drop=True)
    y, levels = ordinal_codes(data[response], response)
    fixed, X = build_fixed(parsed.fixed, d, None, tuple(parsed.offsets))
    offset = None
    if parsed.offsets:  # ordinal's offset(): added to x beta, so subtracted from every threshold
        offset, fixed = fitted_offset(fixed, d, data.index)
    names = list(fixed.columns)
    keep = [k for k, n in enumerate(names) if n != "(Intercept)"]
    X = np.asarray(X, dtype=float)
    # the thresholds take the intercept's place; a fixed part must not be aliased with them
    full = np.column_stack([np.ones(len(d)), X[:, keep]]) if keep else np.ones((len(d), 1))
    if np.linalg.matrix_rank(full) < full.shape[1]:
        raise DataError(f"fixed-effect columns of {formula!r} are aliased (linearly dependent, with "
                        f"the thresholds too): {', '.join(names[k] for k in keep)}")
    sep = ordinal_separation(X[:, keep], np.asarray(y, dtype=np.int64), len(levels))
    if sep is not None:
        rows, direction = sep
        cols = [c for c in list(fixed.factors) + list(fixed.covariates) if c in d.columns]
        diverge = ", ".join(f"{names[k]!r} ({'+' if v > 0 else '-'}inf)" for k, v in zip(keep, direction) if v)
        raise SeparationError(
            f"clmm({formula!r}): separation: " + describe_separation(d, cols, response, list(levels),
                                                                      np.asarray(y), rows)
            + f", so the maximum-likelihood estimates of {diverge or 'the thresholds'} are infinite; merge the "
            "rating categories that a level never leaves, or leave that level out")
    terms = build_random_terms(parsed.random, d)
    model = OrdinalModel(y=np.asarray(y, dtype=np.int64), X=X[:, keep],
                         groups=[np.asarray(t.index, dtype=np.int64) for t in terms],
                         nlevels=[t.nl for t in terms], n_cat=len(levels), link=link,
                         threshold=threshold, offset=offset)
    # thousands of small Cholesky factorisations: a threaded BLAS only spins on them
    with single_thread_blas():
        par, value, report = model.fit()
        converged = report.converged
        nt, p, nsd = model.n_theta, model.p, len(terms)
        interior = model.interior(par)
        if nsd == 1:
            interior[:] = True  # ordinal keeps the log SD of a single term, also near zero
        H = model.hessian(par, interior)
        grad = model.gradient(par)[interior]
        model.nla(par)
    sd = np.exp(par[nt + p:])
    if nsd > 1:  # ordinal's random-effect parameters: log SD for one term, SD for several
        jac = np.concatenate([np.ones(nt + p), sd])[interior]
        H = H / np.outer(jac, jac)
    finite = bool(np.all(np.isfinite(H)))
    eig = np.linalg.eigvalsh(H) if finite else np.full(len(H), np.nan)
    if nsd > 1:  # the gradient in ordinal's parameters (SDs, not log SDs), as the Hessian
        grad = grad / jac
    cuts = model.cutpoints(par[:nt])
    code, messages = convergence_check(H, grad, bool(np.all(np.diff(cuts) > 0)))
    singular = code == (1,) and messages[0].startswith("Hessian is numerically singular")
    if not finite or eig.min() <= 0 or singular:
        # as ordinal: no standard errors from a Hessian that is not positive definite, or that
        # conv.check finds numerically singular (ordinal's vcov comes only after its Cholesky)
        warnings.warn(f"clmm({formula!r}): {'; '.join(messages)} (the model may be over-parametrised, "
                      "a rating category empty for a level (separation), or an SD on the boundary); "
                      "the SEs are NaN", FitWarning, stacklevel=2)
        vcov = np.full_like(H, np.nan)
    else:
        vcov = np.linalg.inv(H)
        if code != (0,) and converged:
            # ordinal's conv.check codes: 1 singular or imprecise, 2-3 nearly unidentifiable
            warnings.warn(f"clmm({formula!r}): " + "; ".join(f"({c}) {m}" for c, m in zip(code, messages)),
                          FitWarning, stacklevel=2)
    tnames = [f"{levels[j]}|{levels[j + 1]}" for j in range(len(levels) - 1)] \
        if threshold == "flexible" else ["threshold.1", "spacing"]
    cnames = tnames + [names[k] for k in keep]
    st_names = [f"ST{k + 1}" for k in range(nsd)]
    all_names = np.array(cnames + st_names)[interior]
    # ordinal's niter, max.grad and cond.H (the gradient and Hessian in ordinal's parameters)
    report = dataclasses.replace(
        report, max_grad=float(np.max(np.abs(grad), initial=0.0)), gradient=grad,
        hessian_cond=float(eig.max() / eig.min()) if eig.min() > 0 and not singular else math.inf,
        checks=() if code == (0,) else tuple(messages))
    if not converged:
        warnings.warn(f"clmm({formula!r}) did not converge: the largest gradient of minus the "
                      f"log-likelihood is {report.max_grad:.2g} (tol = 0.001)", ConvergenceWarning, stacklevel=2)
    ranef = pd.concat([pd.DataFrame({"group": t.group, "term": "(Intercept)", "level": list(map(str, t.levels)),
                                     "mode": sd[k] * model.u[model.offsets[k]:model.offsets[k + 1]]})
                       for k, t in enumerate(terms)], ignore_index=True)
    df = len(par)
    loglik = -value
    return ClmmResult(
        formula=formula, link=link, threshold=threshold,
        coef=pd.Series(par[: nt + p], index=cnames, dtype=float),
        vcov=pd.DataFrame(vcov, index=all_names, columns=all_names),
        n_thresholds=nt,
        varcorr=pd.DataFrame({"group": [t.group for t in terms], "var1": "(Intercept)", "var2": None,
                              "variance": sd**2, "sd": sd}),
        ngrps=pd.Series({t.group: t.nl for t in terms}, dtype=int),
        loglik=loglik, df=df,
        nobs=len(y), optimizer=report, converged=converged, levels=tuple(levels), random_effects=ranef,
        fixed_design=fixed, convergence={"code": code, "messages": messages},
        _rows=ModelRows(data=d, terms=terms, offset=offset))
