"""Marginal means of a cumulative-link mixed model, as emmeans computes them for ``clmm``.

``mode="latent"``: ``x beta - mean(theta)`` (emmeans' latent scale: the linear predictor with the
average threshold as intercept); ``mode="prob"``: each category's probability; ``mode="mean.class"``:
the mean rating ``sum_k k P(Y = k)`` with classes numbered 1..J. Each is computed per cell of the
reference grid (every level combination of the fixed part's factors, covariates at their means,
random effects at zero) and averaged with equal weights over the factors not named, as emmeans
does; SEs by the delta method from ``vcov``.

The Bayesian twin (:func:`evalmix.bayes.clmm`) gets the same tables from its posterior draws: each
mode's value is computed per draw (thresholds and location effects of one draw), and ``estimate``
is the posterior mean, ``se`` the posterior SD and ``conf_low``/``conf_high`` the equal-tailed
credible interval (the quantiles ``(1 -+ level) / 2``; equal-tailed rather than highest-density
because it maps onto every monotone transform of a value, a probability's logit or a threshold's
cumulative probability, without moving).  :func:`clmm_ref_grid` gives the grid of any of the three
modes, for :func:`evalmix.inference.emmeans` and :func:`evalmix.contrast` (with posterior draws their
summaries are those of every posterior grid: means, SDs, highest-density intervals and
``prob_positive``).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import pandas as pd
from scipy import stats

from ..core.result import Result
from ..mixed.grid import RefGrid
from ..core.arguments import check_choice, check_level
from ..core.errors import ArgumentError
from ..mixed.links import inverse_link, mu_eta
from .result import ClmmResult

if TYPE_CHECKING:
    from ..model import FixedDesign

__all__ = ["MODES", "ClmmEMMeans", "CumulativePosterior", "clmm_emmeans", "clmm_ref_grid"]

MODES = ("latent", "linear.predictor", "prob", "cum.prob", "exc.prob", "mean.class")
#: modes with one row per grid cell and threshold (a ``cut`` column, as emmeans names it)
CUT_MODES = ("linear.predictor", "cum.prob", "exc.prob")


@runtime_checkable
class CumulativePosterior(Protocol):
    """What the marginal means read from a posterior cumulative-link fit (the result of
    :func:`evalmix.bayes.clmm`): its categories, link, fixed design (with the intercept column,
    whose draws the thresholds replace), the draws of the location effects and of the thresholds."""

    @property
    def family(self) -> str: ...

    @property
    def levels(self) -> tuple[str, ...]: ...

    @property
    def cumulative_link(self) -> str: ...

    @property
    def fixed_design(self) -> FixedDesign: ...

    @property
    def fixef_draws(self) -> pd.DataFrame: ...

    @property
    def threshold_draws(self) -> pd.DataFrame: ...


def _check_fit(fit: object) -> ClmmResult | CumulativePosterior:
    if isinstance(fit, ClmmResult):
        return fit
    if isinstance(fit, CumulativePosterior) and fit.family == "cumulative":
        return fit
    raise ArgumentError(f"fit must be a clmm fit (evalmix.clmm) or its Bayesian twin (evalmix.bayes.clmm), "
                        f"not {type(fit).__name__}")


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
    n_draws: int = 0  # posterior draws the summaries are over (0: a maximum-likelihood fit)
    # the means as a grid, which evalmix.contrast and evalmix.regrid take
    grid: RefGrid | None = field(default=None, repr=False)

    @property
    def is_posterior(self) -> bool:
        """Whether the means are summaries of posterior draws (the Bayesian twin)."""
        return self.n_draws > 0

    def to_frame(self) -> pd.DataFrame:
        return self.table

    def _title(self) -> str:
        return f"Estimated marginal means of a cumulative-link mixed model ({self.mode} scale)"

    def _header(self) -> list[str]:
        over = f"; averaged over {', '.join(self.averaged_over)}" if self.averaged_over else ""
        if self.is_posterior:
            return [f"estimate = posterior mean, se = posterior SD, conf_low/conf_high = equal-tailed "
                    f"{self.conf_level:g} credible interval, over {self.n_draws} draws{over}"]
        return [f"confidence level {self.conf_level:g} (Wald, asymptotic){over}"]


def _grid(fit: ClmmResult | CumulativePosterior) -> pd.DataFrame:
    fd = fit.fixed_design
    names = list(fd.factors)
    # every combination of the levels, the first factor varying fastest (emmeans' ref_grid order)
    rows = [r[::-1] for r in itertools.product(*(fd.factors[n] for n in reversed(names)))] or [()]
    grid = pd.DataFrame(rows, columns=names)
    for c, mean in fd.covariates.items():
        grid[c] = mean
    return grid


def _location(fit: ClmmResult | CumulativePosterior, grid: pd.DataFrame) -> tuple[np.ndarray, list[str], float]:
    """The grid's location design (its rows without the intercept column), the columns' names and
    the offset of every cell: the mean offset over the fitted rows, where :func:`evalmix.mixed.grid.ref_grid`
    puts a GLMM's (R's emmeans reports a clmm with an offset as non-estimable)."""
    fd = fit.fixed_design
    keep = [k for k, c in enumerate(fd.columns) if c != "(Intercept)"]
    return fd.model_matrix(grid)[:, keep], [fd.columns[k] for k in keep], float(fd.offset_mean or 0.0)


def _link(fit: ClmmResult | CumulativePosterior) -> str:
    return fit.link if isinstance(fit, ClmmResult) else fit.cumulative_link


def _probabilities(link: str, theta: np.ndarray, eta: np.ndarray) -> np.ndarray:
    """P(Y = k) of each category, ``theta`` (..., J-1) and ``eta`` (..., cells): (..., cells, J).

    Each difference is taken from the tail where it is accurate (the upper one above the median),
    so that no category's probability cancels to zero far out in a tail.
    """
    z = theta[..., None, :] - eta[..., :, None]
    inf = np.full(z.shape[:-1] + (1,), np.inf)
    z = np.concatenate([-inf, z, inf], axis=-1)
    lo, hi = z[..., :-1], z[..., 1:]
    upper = lo > 0
    return np.where(upper, inverse_link(link, -lo) - inverse_link(link, -hi),
                    inverse_link(link, hi) - inverse_link(link, lo))


def _cell_draws(fit: CumulativePosterior, X: np.ndarray, names: list[str], shift: float, mode: str
                ) -> np.ndarray:
    """The mode's value in each grid cell for each posterior draw: (draws, cells, outputs)."""
    theta = fit.threshold_draws.to_numpy(float)
    beta = fit.fixef_draws[names].to_numpy(float) if names else np.zeros((len(theta), 0))
    eta = beta @ X.T + shift  # draws x cells
    if mode == "latent":
        return (eta - theta.mean(axis=1, keepdims=True))[:, :, None]
    if mode in CUT_MODES:  # draws x cells x cuts
        z = theta[:, None, :] - eta[:, :, None]
        if mode == "linear.predictor":
            return z
        cum = inverse_link(fit.cumulative_link, z)
        return cum if mode == "cum.prob" else 1.0 - cum
    probs = _probabilities(fit.cumulative_link, theta, eta)
    if mode == "prob":
        return probs
    return (probs @ np.arange(1, probs.shape[-1] + 1))[:, :, None]


def _cell_functions(fit: ClmmResult, X: np.ndarray, shift: float, mode: str) -> tuple[np.ndarray, np.ndarray]:
    """The mode's value in each grid cell (cells x outputs) and its gradient over the coefficients
    (cells x outputs x coefficients), for the delta method."""
    nt, J = fit.n_thresholds, len(fit.levels)
    coef = fit.coef.to_numpy()
    theta_par, beta = coef[:nt], coef[nt:]
    T = _threshold_map(fit)  # d theta_j / d (threshold parameters)
    theta = T @ theta_par
    eta = X @ beta + shift
    n_cells = len(X)
    if mode == "latent":
        vals = (eta - theta.mean())[:, None]
        grads = np.concatenate([np.tile(-T.mean(axis=0), (n_cells, 1)), X], axis=1)[:, None, :]
        return vals, grads
    z = theta[None, :] - eta[:, None]  # cells x (J-1)
    f = mu_eta(fit.link, z)
    # dF_j/dtheta_par = f_j T[j], dF_j/dbeta = -f_j x
    dF = np.concatenate([f[:, :, None] * T[None, :, :], -f[:, :, None] * X[:, None, :]], axis=2)
    dFz = np.concatenate([np.zeros((n_cells, 1, len(coef))), dF,
                          np.zeros((n_cells, 1, len(coef)))], axis=1)
    if mode == "linear.predictor":  # theta_j - x beta: cells x cuts, gradient [T_j, -x]
        dz = np.concatenate([np.broadcast_to(T[None, :, :], (n_cells, *T.shape)),
                             np.broadcast_to(-X[:, None, :], (n_cells, len(theta), X.shape[1]))], axis=2)
        return z, dz
    if mode in ("cum.prob", "exc.prob"):
        cum = inverse_link(fit.link, z)
        return (cum, dF) if mode == "cum.prob" else (1.0 - cum, -dF)
    probs, dprobs = _probabilities(fit.link, theta, eta), np.diff(dFz, axis=1)  # cells x J (x coefs)
    if mode == "prob":
        return probs, dprobs
    k = np.arange(1, J + 1)
    return (probs @ k)[:, None], np.einsum("cjp,j->cp", dprobs, k)[:, None, :]


def clmm_emmeans(fit: ClmmResult | CumulativePosterior, specs: str | list[str], mode: str = "latent",
                 conf_level: float = 0.95) -> ClmmEMMeans:
    """Estimated marginal means of a cumulative-link mixed model (``emmeans(fit, ~specs, mode=)``).

    Parameters
    ----------
    fit : ClmmResult or the result of evalmix.bayes.clmm
        A maximum-likelihood fit (Wald intervals, delta-method SEs) or its Bayesian twin
        (posterior mean, posterior SD and equal-tailed credible interval of each value).
    specs : str or list of str
        Factors of the fixed part whose levels get a mean; the others are averaged over.
    mode : {"latent", "linear.predictor", "prob", "cum.prob", "exc.prob", "mean.class"}
        emmeans' modes for ordinal models: ``"latent"``: the linear predictor ``x beta`` minus
        the mean threshold; ``"linear.predictor"``: ``theta_j - x beta`` of each cut point (a
        ``cut`` column: ``1|2``, ``2|3``...); ``"prob"``: the probability of each category (a
        ``category`` column); ``"cum.prob"`` and ``"exc.prob"``: ``P(Y <= j)`` and
        ``P(Y > j)`` at each cut; ``"mean.class"``: the mean rating with categories numbered
        1..J.  A cut column that ``specs`` does not name is averaged over, as emmeans does.
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
    fit = _check_fit(fit)
    check_choice(mode, "mode", MODES)
    check_level(conf_level)
    specs = [specs] if isinstance(specs, str) else list(specs)
    fd = fit.fixed_design
    for s in specs:
        if s not in fd.factors:
            raise ArgumentError(f"specs names {s!r}, which is not a factor of the fixed part "
                                f"(factors: {', '.join(map(str, fd.factors)) or 'none'})")
    grid = _grid(fit)
    X, names, shift = _location(fit, grid)
    n_cells = len(grid)
    draws = vals = grads = V = None
    if isinstance(fit, ClmmResult):
        vals, grads = _cell_functions(fit, X, shift, mode)
        V = fit.vcov.to_numpy()[: len(fit.coef), : len(fit.coef)]
    else:
        draws = _cell_draws(fit, X, names, shift, mode)
    # equal-weight averages over the cells of each level combination of specs
    keys = grid[specs].astype(str).agg("\x1f".join, axis=1) if specs else pd.Series([""] * n_cells)
    order = list(dict.fromkeys(keys))
    q = stats.norm.ppf(0.5 + conf_level / 2)
    a = (1 - conf_level) / 2
    records = []
    for key in order:
        cells = (keys == key).to_numpy()
        first = grid.loc[cells, specs].iloc[0]
        if draws is not None:
            d = draws[:, cells].mean(axis=1)  # draws x outputs
            v, se = d.mean(axis=0), d.std(axis=0, ddof=1)
            lo, hi = np.quantile(d, [a, 1 - a], axis=0)
        else:
            assert vals is not None and grads is not None and V is not None
            v = vals[cells].mean(axis=0)
            g = grads[cells].mean(axis=0)
            se = np.sqrt(np.einsum("op,pq,oq->o", g, V, g))
            lo, hi = v - q * se, v + q * se
        for o in range(len(v)):
            rec = {s: first[s] for s in specs}
            if mode == "prob":
                rec["category"] = fit.levels[o]
            elif mode in CUT_MODES:
                rec["cut"] = _cut_names(fit)[o]
            rec.update(estimate=v[o], se=se[o], conf_low=lo[o], conf_high=hi[o])
            records.append(rec)
    over = tuple(n for n in fd.factors if n not in specs)
    columns = specs + (["category"] if mode == "prob" else ["cut"] if mode in CUT_MODES else [])
    means = clmm_ref_grid(fit, conf_level=conf_level, mode=mode).marginal(columns, [], "equal")
    return ClmmEMMeans(table=pd.DataFrame(records), mode=mode, conf_level=conf_level,
                       averaged_over=over, n_draws=0 if draws is None else len(draws),
                       grid=replace(means, conf_level=conf_level))


def _cut_names(fit: ClmmResult | CumulativePosterior) -> list[str]:
    """The cut points between adjacent categories, as emmeans labels them (``1|2``, ``2|3``...)."""
    return [f"{a}|{b}" for a, b in zip(fit.levels[:-1], fit.levels[1:])]


def _threshold_map(fit: ClmmResult) -> np.ndarray:
    """d theta_j / d (threshold parameters): the identity, or intercept and spacing (equidistant)."""
    J = len(fit.levels)
    if fit.threshold == "flexible":
        return np.eye(J - 1)
    return np.column_stack([np.ones(J - 1), np.arange(J - 1)])


def clmm_ref_grid(fit: ClmmResult | CumulativePosterior, conf_level: float = 0.95, mode: str = "latent"
                  ) -> RefGrid:
    """The reference grid of a cumulative-link mixed model (``ref_grid(fit, mode=)``).

    ``mode="latent"`` (default): each row is the linear predictor of one grid cell minus the mean
    threshold (emmeans' latent scale for ``clmm``) as a linear function of the thresholds and
    location effects, with the fit's ``vcov``.  ``mode="prob"`` (one row per cell and category, a
    ``category`` column) and ``mode="mean.class"`` (the mean rating 1..J of each cell): the rows
    are those values themselves, with their delta-method covariance, as emmeans regrids them.  A
    posterior fit (:func:`evalmix.bayes.clmm`) gives the same rows on its posterior draws.
    :func:`evalmix.inference.emmeans` and :func:`evalmix.contrast` take the grid as they take a GLMM's, so
    contrasts get every adjustment (Tukey, Dunnett, Holm...) with asymptotic (z) tests, as emmeans
    gives them for ``clmm``, or posterior summaries.  Name ``category`` in ``specs`` or ``by`` of
    ``emmeans`` on a ``"prob"`` grid (averaging the probabilities of different categories has no
    meaning).

    Parameters
    ----------
    fit : ClmmResult or the result of evalmix.bayes.clmm
    conf_level : float
        Level of the intervals a summary shows.
    mode : {"latent", "linear.predictor", "prob", "cum.prob", "exc.prob", "mean.class"}
        As :func:`clmm_emmeans`.

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
    >>> means = evalmix.emmeans(clmm_ref_grid(fit, mode="mean.class"), "model")
    >>> evalmix.contrast(means, "trt.vs.ctrl").to_frame()["contrast"].tolist()
    ['b - a', 'c - a']
    """
    fit = _check_fit(fit)
    check_level(conf_level)
    check_choice(mode, "mode", MODES)
    grid = _grid(fit)
    X, names, shift = _location(fit, grid)
    if mode == "latent":
        offset = np.full(len(grid), shift) if shift else None
        if isinstance(fit, ClmmResult):
            T = _threshold_map(fit)
            L = np.concatenate([np.tile(-T.mean(axis=0), (len(grid), 1)), X], axis=1)
            coef = fit.coef.to_numpy(float)
            V = fit.vcov.to_numpy(float)[: len(coef), : len(coef)]
            return RefGrid(frame=grid, L=L, coef_names=tuple(map(str, fit.coef.index)), link="identity",
                           beta=coef, vcov=V, conf_level=conf_level, offset=offset)
        theta = fit.threshold_draws
        J1 = theta.shape[1]
        L = np.concatenate([np.full((len(grid), J1), -1.0 / J1), X], axis=1)
        draws = np.column_stack([theta.to_numpy(float), fit.fixef_draws[names].to_numpy(float)])
        return RefGrid(frame=grid, L=L, coef_names=tuple(map(str, theta.columns)) + tuple(names),
                       link="identity", draws=draws, conf_level=conf_level, offset=offset)
    # the values of each cell (and category) are the grid's coefficients: L is the identity
    if mode == "prob":
        frame = grid.loc[grid.index.repeat(len(fit.levels))].reset_index(drop=True)
        frame["category"] = list(fit.levels) * len(grid)
    elif mode in CUT_MODES:
        cuts = _cut_names(fit)
        frame = grid.loc[grid.index.repeat(len(cuts))].reset_index(drop=True)
        frame["cut"] = cuts * len(grid)
    else:
        frame = grid.reset_index(drop=True)
    cells = [", ".join(f"{c}={v}" for c, v in zip(frame.columns, row)) or "(all)"
             for row in frame.itertuples(index=False, name=None)]
    n = len(frame)
    label_names = _response_label(fit) if mode == "prob" else ()
    if isinstance(fit, ClmmResult):
        vals, grads = _cell_functions(fit, X, shift, mode)
        V = fit.vcov.to_numpy(float)[: len(fit.coef), : len(fit.coef)]
        G = grads.reshape(n, -1)
        return RefGrid(frame=frame, L=np.eye(n), coef_names=tuple(cells), link="identity",
                       beta=vals.reshape(n), vcov=G @ V @ G.T, conf_level=conf_level,
                       label_names=label_names)
    draws = _cell_draws(fit, X, names, shift, mode)
    return RefGrid(frame=frame, L=np.eye(n), coef_names=tuple(cells), link="identity",
                   draws=draws.reshape(len(draws), n), conf_level=conf_level, label_names=label_names)


def _response_label(fit: object) -> tuple[tuple[str, str], ...]:
    """emmeans names the categories by the response (``rating1 - rating2``)."""
    from ..model import parse_formula

    formula = getattr(fit, "formula", None)
    response = parse_formula(formula).successes if isinstance(formula, str) else None
    return (("category", str(response)),) if response else ()
