"""Marginal means of a cumulative-link mixed model, as emmeans computes them for ``clmm``.

``mode="latent"``: ``x beta - mean(theta)`` (emmeans' latent scale: the linear predictor with the
average threshold as intercept); ``mode="prob"``: each category's probability; ``mode="mean.class"``:
the mean rating ``sum_k k P(Y = k)`` with classes numbered 1..J. Each is computed per cell of the
reference grid (every level combination of the fixed part's factors, covariates at their means,
random effects at zero) and averaged with equal weights over the factors not named, as emmeans
does; SEs by the delta method from ``vcov``.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from .._result import Result
from ..grid import RefGrid
from ..arguments import check_choice, check_level
from ..errors import ArgumentError
from ..links import inverse_link, mu_eta
from .result import ClmmResult

__all__ = ["MODES", "ClmmEMMeans", "clmm_emmeans", "clmm_ref_grid"]

MODES = ("latent", "prob", "mean.class")


@dataclass(frozen=True, eq=False, repr=False)
class ClmmEMMeans(Result):
    """Marginal means of a :class:`~evalmix.ordinal.result.ClmmResult` (R: ``emmeans(fit, ~x,
    mode=)``): the grid's variables (and ``category`` for ``mode="prob"``), ``estimate``,
    ``se``, ``conf_low``, ``conf_high`` (Wald, asymptotic).

    Examples
    --------
    >>> list(clmm_emmeans(fit, "model").to_frame().columns)  # doctest: +SKIP
    ['model', 'estimate', 'se', 'conf_low', 'conf_high']
    """

    table: pd.DataFrame
    mode: str
    conf_level: float
    averaged_over: tuple[str, ...]

    def to_frame(self) -> pd.DataFrame:
        return self.table

    def _title(self) -> str:
        return f"Estimated marginal means of a cumulative-link mixed model ({self.mode} scale)"

    def _header(self) -> list[str]:
        over = f"; averaged over {', '.join(self.averaged_over)}" if self.averaged_over else ""
        return [f"confidence level {self.conf_level:g} (Wald, asymptotic){over}"]


def _grid(fit: ClmmResult) -> pd.DataFrame:
    fd = fit.fixed_design
    names = list(fd.factors)
    rows = list(itertools.product(*(fd.factors[n] for n in names))) or [()]
    grid = pd.DataFrame(rows, columns=names)
    for c, mean in fd.covariates.items():
        grid[c] = mean
    return grid


def clmm_emmeans(fit: ClmmResult, specs: str | list[str], mode: str = "latent",
                 conf_level: float = 0.95) -> ClmmEMMeans:
    """Estimated marginal means of a cumulative-link mixed model (``emmeans(fit, ~specs, mode=)``).

    Parameters
    ----------
    fit : ClmmResult
    specs : str or list of str
        Factors of the fixed part whose levels get a mean; the others are averaged over.
    mode : {"latent", "prob", "mean.class"}
        ``"latent"``: the linear predictor ``x beta`` minus the mean threshold; ``"prob"``: the
        probability of each category (a ``category`` column); ``"mean.class"``: the mean rating
        with categories numbered 1..J.
    conf_level : float

    Returns
    -------
    ClmmEMMeans

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import evalmix
    >>> from evalmix.ordinal import clmm_emmeans
    >>> rng = np.random.default_rng(3)
    >>> item = np.repeat(np.arange(30), 4)
    >>> model = np.tile(["a", "b"], 60)
    >>> latent = (model == "b") * 1.0 + rng.normal(0, 1, 30)[item] + rng.logistic(size=120)
    >>> runs = pd.DataFrame({"item": item, "model": model,
    ...                      "rating": np.digitize(latent, [-1.5, 0, 1.5]) + 1})
    >>> fit = evalmix.clmm("rating ~ model + (1|item)", runs)
    >>> em = clmm_emmeans(fit, "model", mode="mean.class")
    >>> em.to_frame()["model"].tolist(), bool((em.to_frame()["estimate"] > 1).all())
    (['a', 'b'], True)
    """
    check_choice(mode, "mode", MODES)
    check_level(conf_level)
    specs = [specs] if isinstance(specs, str) else list(specs)
    fd = fit.fixed_design
    for s in specs:
        if s not in fd.factors:
            raise ArgumentError(f"specs names {s!r}, which is not a factor of the fixed part "
                                f"(factors: {', '.join(map(str, fd.factors)) or 'none'})")
    grid = _grid(fit)
    X = fd.model_matrix(grid)
    keep = [k for k, c in enumerate(fd.columns) if c != "(Intercept)"]
    X = X[:, keep]
    nt, J = fit.n_thresholds, len(fit.levels)
    coef = fit.coef.to_numpy()
    V = fit.vcov.to_numpy()[: len(coef), : len(coef)]
    theta_par, beta = coef[:nt], coef[nt:]
    # d theta_j / d (threshold parameters)
    T = _threshold_map(fit)
    theta = T @ theta_par
    eta = X @ beta
    n_cells = len(grid)
    # per grid cell: values (cells x outputs) and gradients (cells x outputs x coefficients)
    if mode == "latent":
        vals = (eta - theta.mean())[:, None]
        grads = np.concatenate([np.tile(-T.mean(axis=0), (n_cells, 1)), X], axis=1)[:, None, :]
    else:
        z = theta[None, :] - eta[:, None]  # cells x (J-1)
        F = inverse_link(fit.link, z)
        f = mu_eta(fit.link, z)
        # dF_j/dtheta_par = f_j T[j], dF_j/dbeta = -f_j x
        dF = np.concatenate([f[:, :, None] * T[None, :, :], -f[:, :, None] * X[:, None, :]], axis=2)
        Fz = np.concatenate([np.zeros((n_cells, 1)), F, np.ones((n_cells, 1))], axis=1)
        dFz = np.concatenate([np.zeros((n_cells, 1, len(coef))), dF,
                              np.zeros((n_cells, 1, len(coef)))], axis=1)
        probs, dprobs = np.diff(Fz, axis=1), np.diff(dFz, axis=1)  # cells x J (x coefficients)
        if mode == "prob":
            vals, grads = probs, dprobs
        else:
            k = np.arange(1, J + 1)
            vals = (probs @ k)[:, None]
            grads = np.einsum("cjp,j->cp", dprobs, k)[:, None, :]
    # equal-weight averages over the cells of each level combination of specs
    keys = grid[specs].astype(str).agg("\x1f".join, axis=1) if specs else pd.Series([""] * n_cells)
    order = list(dict.fromkeys(keys))
    q = stats.norm.ppf(0.5 + conf_level / 2)
    records = []
    for key in order:
        cells = (keys == key).to_numpy()
        first = grid.loc[cells, specs].iloc[0]
        v = vals[cells].mean(axis=0)
        g = grads[cells].mean(axis=0)
        se = np.sqrt(np.einsum("op,pq,oq->o", g, V, g))
        for o in range(len(v)):
            rec = {s: first[s] for s in specs}
            if mode == "prob":
                rec["category"] = fit.levels[o]
            rec.update(estimate=v[o], se=se[o], conf_low=v[o] - q * se[o], conf_high=v[o] + q * se[o])
            records.append(rec)
    over = tuple(n for n in fd.factors if n not in specs)
    return ClmmEMMeans(table=pd.DataFrame(records), mode=mode, conf_level=conf_level,
                       averaged_over=over)


def _threshold_map(fit: ClmmResult) -> np.ndarray:
    """d theta_j / d (threshold parameters): the identity, or intercept and spacing (equidistant)."""
    J = len(fit.levels)
    if fit.threshold == "flexible":
        return np.eye(J - 1)
    return np.column_stack([np.ones(J - 1), np.arange(J - 1)])


def clmm_ref_grid(fit: ClmmResult, conf_level: float = 0.95) -> RefGrid:
    """The reference grid of a cumulative-link mixed model on the latent scale (``ref_grid(fit)``).

    Each row is the linear predictor of one grid cell minus the mean threshold (emmeans' latent
    scale for ``clmm``) as a linear function of the thresholds and location effects, with the
    fit's ``vcov``.  :func:`evalmix.emmeans` and :func:`evalmix.contrast` take it as they take a
    GLMM's grid, so latent-scale contrasts get every adjustment (Tukey, Dunnett, Holm...) with
    asymptotic (z) tests, as emmeans gives them for ``clmm``.

    Parameters
    ----------
    fit : ClmmResult
    conf_level : float
        Level of the intervals a summary shows.

    Returns
    -------
    RefGrid

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import evalmix
    >>> rng = np.random.default_rng(3)
    >>> item = np.repeat(np.arange(30), 6)
    >>> model = np.tile(["a", "b", "c"], 60)
    >>> latent = (model == "b") * 1.0 + rng.normal(0, 1, 30)[item] + rng.logistic(size=180)
    >>> runs = pd.DataFrame({"item": item, "model": model,
    ...                      "rating": np.digitize(latent, [-1.5, 0, 1.5]) + 1})
    >>> fit = evalmix.clmm("rating ~ model + (1|item)", runs)
    >>> con = evalmix.contrast(evalmix.emmeans(clmm_ref_grid(fit), "model"), "pairwise", adjust="tukey")
    >>> con.to_frame()["contrast"].tolist()
    ['a - b', 'a - c', 'b - c']
    """
    check_level(conf_level)
    fd = fit.fixed_design
    grid = _grid(fit)
    keep = [k for k, c in enumerate(fd.columns) if c != "(Intercept)"]
    X = fd.model_matrix(grid)[:, keep]
    T = _threshold_map(fit)
    L = np.concatenate([np.tile(-T.mean(axis=0), (len(grid), 1)), X], axis=1)
    coef = fit.coef.to_numpy(float)
    V = fit.vcov.to_numpy(float)[: len(coef), : len(coef)]
    return RefGrid(frame=grid, L=L, coef_names=tuple(map(str, fit.coef.index)), link="identity",
                   beta=coef, vcov=V, conf_level=conf_level)
