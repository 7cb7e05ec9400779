"""Estimated marginal means and adjusted contrasts on fitted models, as R's emmeans computes them.

A fitted model (``evalmix.glmer``, a posterior fit, or anything that follows the same interface)
exposes its fixed-effect estimates and covariance (``fixef``, ``vcov``) or posterior draws of them
(``fixef_draws``), its link, and its fixed-effects design (``fixed_design``).  From those:

- :func:`ref_grid` builds every combination of factor levels (numeric covariates at their
  means, or at the values given in ``at``) and its rows of the design matrix, as one
  :class:`~evalmix.mixed.grid.RefGrid` (``reference_grid`` returns its frame and rows);
- :func:`emmeans` averages those link-scale rows over the factors not named, with equal weights by
  default, giving each marginal mean as a linear function ``L beta``;
- :func:`contrast` forms differences of marginal means within each ``by`` group, tests them with
  z statistics (df = Inf, as emmeans does for GLMMs) and adjusts each group as one family; the
  result holds its own grid, so contrasts of contrasts chain;
- :func:`regrid` moves means to the response scale (delta method), where contrasts are
  differences of probabilities.

For a posterior fit, every linear function is evaluated on each draw: estimates are posterior means,
``se`` the posterior standard deviation, intervals highest-density intervals, and contrasts carry
``prob_positive``, the posterior probability that the difference is above zero.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeGuard, overload

import numpy as np
import pandas as pd
from scipy import sparse, stats

from ..core.arguments import check_arguments, check_choice
from ..core.errors import ArgumentError, ArgumentTypeError
from ..stats import multiplicity
from ..core.draws import hdi
from ..mixed.fitted import FittedModel, PosteriorFit, SeparationLimit, warn_divergent
from ..mixed.grid import LOG_ODDS_RATIO, WEIGHTS, RefGrid
from ..mixed.grid import ref_grid as model_grid
from ..mixed.links import LINKS
from ..model import parse_specs
from ..ordinal.emmeans import ClmmEMMeans, CumulativePosterior
from ..ordinal.result import ClmmResult
from ..core.result import Result, level_label

__all__ = ["ContrastFamily", "ContrastRow", "EMMeans", "Contrasts", "RefGrid", "ref_grid", "reference_grid",
           "emmeans", "contrast", "contrast_families", "register_contrast", "regrid", "hdi"]


# --- marginal means -------------------------------------------------------------------------------

def _parse_specs(specs: str | Sequence[str], by: str | Sequence[str] | None
                 ) -> tuple[list[str], list[str]]:
    if isinstance(specs, str):
        spec_list, by_spec = parse_specs(specs)
        if by_spec:
            if by is not None:
                raise ValueError("give `by` either in specs ('~ a | b') or as by=, not both")
            by = by_spec
    else:
        spec_list = [str(s) for s in specs]
    by_list = [] if by is None else ([by] if isinstance(by, str) else [str(b) for b in by])
    if not spec_list:
        raise ValueError("specs names no variable")
    return spec_list, by_list


class _GridView:
    """What :class:`EMMeans` and :class:`Contrasts` read from the grid they hold (``self.grid``)."""

    grid: RefGrid

    @property
    def L(self) -> np.ndarray:
        return self.grid.L

    @property
    def coef_names(self) -> tuple[str, ...]:
        return self.grid.coef_names

    @property
    def by(self) -> tuple[str, ...]:
        return self.grid.by

    @property
    def link(self) -> str:
        return self.grid.link

    @property
    def type(self) -> str:
        return self.grid.type

    @property
    def beta(self) -> np.ndarray | None:
        return self.grid.beta

    @property
    def vcov(self) -> np.ndarray | None:
        return self.grid.vcov

    @property
    def draws(self) -> np.ndarray | None:
        return self.grid.draws

    @property
    def separation(self) -> SeparationLimit | None:
        return self.grid.separation

    @property
    def is_posterior(self) -> bool:
        """Whether the estimates come from posterior draws."""
        return self.grid.is_posterior


@dataclass(frozen=True, eq=False, repr=False)
class EMMeans(_GridView, Result):
    """Estimated marginal means: one row per combination of the ``specs`` and ``by`` levels.

    ``table`` holds the level columns and ``estimate``, ``se``, ``conf_low``, ``conf_high`` on the
    scale requested (``type``; ``scale`` names it: ``"log-odds"`` or ``"probability"``).  ``grid``
    is the :class:`~evalmix.mixed.grid.RefGrid` of the means (each a linear function ``L beta`` of the
    fixed effects, with ``beta`` and ``vcov`` or posterior ``draws``), so that :func:`contrast`
    and :func:`regrid` can work on it; ``L``, ``beta``, ``vcov``, ``draws``, ``coef_names``,
    ``by`` and ``link`` read it.
    """

    table: pd.DataFrame
    grid: RefGrid
    specs: tuple[str, ...]
    conf_level: float
    weights: str = "equal"

    @property
    def levels(self) -> pd.DataFrame:
        """The level columns of the means."""
        return self.grid.frame

    @property
    def scale(self) -> str:
        """Scale of ``estimate``: ``"log-odds"`` (link) or ``"probability"`` (response)."""
        return self.grid.scale

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def _title(self) -> str:
        by = f" | {', '.join(self.by)}" if self.by else ""
        return f"Estimated marginal means of {', '.join(self.specs)}{by}"

    def _header(self) -> list[str]:
        what = self.grid.interval_kind
        regridded = " (regridded: contrasts are differences on this scale)" \
            if self.grid.tran is not None else ""
        return [f"scale: {self.scale}{regridded}; {self.conf_level:.0%} {what}"]

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update(specs=list(self.specs), by=list(self.by), type=self.type, link=self.link,
                   scale=self.scale,
                   conf_level=self.conf_level, weights=self.weights,
                   posterior=self.is_posterior)
        return out


def emmeans(fit: FittedModel | PosteriorFit | RefGrid, specs: str | Sequence[str], by: str | Sequence[str] | None = None, *,
            type: str = "link", at: Mapping[str, Any] | None = None, weights: str = "equal",
            conf_level: float = 0.95, ddf: str | None = None, mode: str | None = None) -> EMMeans:
    """Estimated marginal means of a fitted model (R: ``emmeans::emmeans``).

    Parameters
    ----------
    fit : fitted model or RefGrid
        A maximum-likelihood fit (``fixef``: Series, ``vcov``: DataFrame) or a posterior fit
        (``fixef_draws``: DataFrame with one row per draw and one column per fixed effect), with
        ``link`` (``"logit"`` or ``"identity"``) and ``fixed_design`` (factors, covariates,
        terms, ``model_matrix(newdata)``, and ``weights_data`` for data-based weights); or a
        reference grid from :func:`ref_grid` (R: ``emmeans(ref_grid(fit), ...)``).
    specs : str or list of str
        The factor(s) whose means are wanted: ``"model"``, ``["model", "language"]``, or a
        formula such as ``"~ model | language"``.
    by : str or list of str, optional
        Conditioning factor(s): the means are computed within each of their level combinations.
    type : {"link", "response"}
        ``"response"`` back-transforms estimates and interval ends by the inverse link and gives
        the delta-method SE (``p (1 - p) se`` for the logit), as emmeans does.
    at : dict, optional
        Factor levels or covariate values for the reference grid (see :func:`reference_grid`).
    weights : {"equal", "proportional", "outer", "cells", "flat"}
        How to average over the other factors (emmeans' ``weights``): equal weights (default),
        the observed frequencies of the averaged-over level combinations ("proportional"), the
        product of their marginal frequencies ("outer"), each cell's own frequency ("cells"), or
        equal weights over the non-empty cells ("flat").
    conf_level : float
        Level of the z intervals (df = Inf), of the t intervals of a linear mixed model, or of
        the highest-density intervals.
    mode : str, optional
        For a cumulative-link model (:func:`evalmix.clmm` or its Bayesian twin), emmeans'
        ordinal modes: ``"latent"`` (default), ``"linear.predictor"``, ``"prob"`` (name the
        response or ``category`` in ``specs`` or ``by``, R's ``~ rating | temp``),
        ``"cum.prob"``, ``"exc.prob"`` (a ``cut`` column, averaged over unless named) and
        ``"mean.class"``; see :func:`evalmix.clmm_emmeans`. Other fits refuse it.
    ddf : {"Satterthwaite", "Kenward-Roger"}, optional
        Degrees of freedom of a linear mixed model (:func:`evalmix.lmer`; emmeans' ``lmer.df``):
        Satterthwaite by default; Kenward-Roger also uses pbkrtest's adjusted covariance.  The
        table then has a ``df`` column and t intervals, and :func:`contrast` gives t tests.

    Returns
    -------
    EMMeans
        Tidy table with the spec and by columns and ``estimate``, ``se``, ``conf_low``,
        ``conf_high``.

    Examples
    --------
    >>> import evalmix
    >>> runs = evalmix.simulate.glmm_runs(3, 40, 3, rng=1)
    >>> fit = evalmix.glmer("correct ~ model + (1|item) + (1|item:run)", runs)
    >>> evalmix.emmeans(fit, "model", type="response").to_frame().round(2)
      model  estimate    se  conf_low  conf_high
    0    M1      0.33  0.06      0.22       0.45
    1    M2      0.53  0.07      0.40       0.65
    2    M3      0.70  0.06      0.58       0.80
    """
    check_arguments(conf_level=conf_level)
    check_choice(type, "type", ("link", "response"))
    check_choice(weights, "weights", WEIGHTS)
    spec_list, by_list = _parse_specs(specs, by)
    if isinstance(fit, RefGrid):
        if at is not None or ddf is not None or mode is not None:
            raise ValueError("at=, ddf= and mode= apply to a fit; this reference grid is already built "
                             "(use ref_grid(fit, at=..., ddf=..., mode=...))")
        rg = fit
    else:
        rg = ref_grid(fit, at, ddf=ddf, mode=mode)
        if _is_cumulative(fit):
            spec_list, by_list = _category_names(fit, spec_list), _category_names(fit, by_list)
    means = replace(rg.marginal(spec_list, by_list, weights), type=type, conf_level=conf_level)
    labels = [_label(r) for r in means.frame.itertuples(index=False, name=None)]
    warn_divergent(means.L, means.separation, labels, "the marginal mean of", stacklevel=2)
    table = pd.concat([means.frame, means.estimates()], axis=1)
    return EMMeans(table=table, grid=means, specs=tuple(spec_list), conf_level=conf_level,
                   weights=weights)


def _is_cumulative(fit: object) -> TypeGuard[ClmmResult | CumulativePosterior]:
    """A cumulative-link fit (evalmix.clmm or its Bayesian twin): its grid comes from the ordinal
    engine, as emmeans' ``ordinal`` support builds it."""
    # the family first: a posterior of another family refuses threshold_draws, which the protocol
    # check would read
    return isinstance(fit, ClmmResult) or (getattr(fit, "family", None) == "cumulative"
                                           and isinstance(fit, CumulativePosterior))


def _category_names(fit: object, names: list[str]) -> list[str]:
    """R names the categories of ``mode = "prob"`` by the response (``~ rating | temp``): the grid's
    ``category`` column."""
    from ..model import parse_formula

    formula = getattr(fit, "formula", None)
    response = parse_formula(formula).successes if isinstance(formula, str) else None
    return ["category" if n == response else n for n in names]


def ref_grid(fit: FittedModel | PosteriorFit, at: Mapping[str, Any] | None = None, *, ddf: str | None = None,
             mode: str | None = None, conf_level: float = 0.95) -> RefGrid:
    """The reference grid of any fit, built by the engine that knows it (R: ``ref_grid(fit)``,
    emmeans' ``*-support`` methods): a cumulative-link model's grid in one of emmeans' ordinal
    ``mode`` values (:func:`evalmix.ordinal.clmm_ref_grid`), every other fit's from its fixed
    effects (:func:`evalmix.mixed.grid.ref_grid`).

    Examples
    --------
    >>> import evalmix
    >>> fit = evalmix.glmer("correct ~ model + (1|item)", evalmix.simulate.glmm_runs(3, 40, 2, rng=1))
    >>> ref_grid(fit).frame["model"].tolist()
    ['M1', 'M2', 'M3']
    """
    if _is_cumulative(fit):
        if at is not None or ddf is not None:
            raise ArgumentError("at= and ddf= do not apply to a cumulative-link model: its grid is every "
                                "combination of the factor levels, tested with z statistics")
        from ..ordinal.emmeans import clmm_ref_grid

        return clmm_ref_grid(fit, conf_level=conf_level, mode="latent" if mode is None else mode)
    if mode is not None:
        raise ArgumentError(f"mode={mode!r} applies to cumulative-link models (evalmix.clmm: emmeans' "
                            f"ordinal modes); a {type(fit).__name__} takes type='link' or 'response'")
    return model_grid(fit, at, ddf=ddf, conf_level=conf_level)


# --- contrasts ------------------------------------------------------------------------------------

def _label(values: Sequence[Any]) -> str:
    return " ".join(str(v) for v in values)


def _wrap(label: str) -> str:
    return level_label(label)


# R's as.numeric: decimal (spaces around allowed), hexadecimal, Inf / infinity in any case
_R_NUMBER = re.compile(r"\s*[+-]?(?:(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?|0[xX][0-9a-fA-F]+|(?i:inf|infinity))\s*")


def looks_numeric(levels: Iterable[Any]) -> bool:
    """Whether every level reads as a number, as R's ``as.numeric`` reads it (no ``NA``): then
    emmeans puts the factor's name before the levels in contrast labels (``period1 - period2``,
    ``contrast(enhance.levels = TRUE)``).

    Examples
    --------
    >>> looks_numeric(["1", "2", "10"]), looks_numeric([0.5, 2]), looks_numeric(["1", "a"])
    (True, True, False)
    >>> looks_numeric(["NaN"]), looks_numeric(["Inf", " 3 ", "1e3", "0x1A"])
    (False, True)
    """
    return all(not isinstance(v, bool) and _R_NUMBER.fullmatch(str(v)) is not None for v in levels)


# --- contrast families: an open registry, as emmeans' ``*.emmc`` functions ----------------------

@dataclass(frozen=True)
class ContrastRow:
    """One contrast of a family: ``weights`` over the group's means, and what it compares.

    ``plus`` and ``minus`` are positions of levels; the label is written from them only when the
    table is shown (``A - B``, ``A / B`` on the odds-ratio scale, ``avg(A,B)`` for several), so
    families never format level names.  ``name`` gives a label of the family's own instead.
    """

    weights: np.ndarray
    plus: tuple[int, ...] = ()
    minus: tuple[int, ...] = ()
    name: str | None = None


#: ``family(levels, ref) -> rows``: ``levels`` are the group's levels as tuples (one value per
#: variable contrasted), ``ref`` the positions of the control level(s) (default ``[0]``).
ContrastFunction = Callable[[Sequence[tuple[Any, ...]], Sequence[int]], Sequence[ContrastRow]]


@dataclass(frozen=True)
class ContrastFamily:
    """A registered contrast family: its function, whether Tukey's adjustment applies (a
    family of all pairwise differences) and whether it reads ``ref``."""

    name: str
    function: ContrastFunction
    pairwise: bool = False
    uses_ref: bool = False


_FAMILIES: dict[str, ContrastFamily] = {}


def register_contrast(name: str, function: ContrastFunction, *, pairwise: bool = False,
                      uses_ref: bool = False) -> None:
    """Register a contrast family under ``name`` for :func:`contrast` (R: an ``<name>.emmc``
    function).

    Parameters
    ----------
    name : str
        The ``method`` that selects it (replaces a family registered under the same name).
    function : callable
        ``function(levels, ref) -> list[ContrastRow]``: ``levels`` are the means of one group as
        tuples of level values, in order; ``ref`` the positions of the control level(s).  Each
        :class:`ContrastRow` has weights over the means and the positions it compares (``plus``,
        ``minus``) or its own ``name``.
    pairwise : bool
        Whether the family is every pairwise difference (``adjust="tukey"`` applies).
    uses_ref : bool
        Whether the family reads ``ref`` (then :func:`contrast`'s ``ref=`` must name a level of
        each group); otherwise it gets ``[0]`` and ``ref=`` is not checked against its levels.

    Examples
    --------
    >>> import numpy as np
    >>> import evalmix
    >>> def consecutive(levels, ref):  # each level minus the one before it (emmeans' consec)
    ...     eye = np.eye(len(levels))
    ...     return [ContrastRow(eye[i + 1] - eye[i], (i + 1,), (i,)) for i in range(len(levels) - 1)]
    >>> register_contrast("consecutive", consecutive)
    >>> fit = evalmix.glmer("correct ~ model + (1|item)", evalmix.simulate.glmm_runs(3, 40, 2, rng=1))
    >>> evalmix.contrast(evalmix.emmeans(fit, "model"), "consecutive").to_frame()["contrast"].tolist()
    ['M2 - M1', 'M3 - M2']
    """
    if not isinstance(name, str) or not name:
        raise ArgumentError(f"a contrast family needs a non-empty name, got {name!r}")
    if not callable(function):
        raise ArgumentTypeError(f"the contrast family {name!r} needs a callable, got "
                                f"{type(function).__name__}")
    _FAMILIES[name] = ContrastFamily(name, function, pairwise, uses_ref)


def contrast_families() -> tuple[str, ...]:
    """The names of the registered contrast families (built-in and user-registered).

    Examples
    --------
    >>> contrast_families()[:3]
    ('pairwise', 'revpairwise', 'trt.vs.ctrl')
    """
    return tuple(_FAMILIES)


def _unit(k: int, plus: Sequence[int], minus: Sequence[int]) -> np.ndarray:
    vec = np.zeros(k)
    vec[list(minus)] = -1.0 / max(len(minus), 1)
    vec[list(plus)] = 1.0 / max(len(plus), 1)
    return vec


def _pairwise(levels: Sequence[tuple[Any, ...]], ref: Sequence[int]) -> list[ContrastRow]:
    k = len(levels)
    return [ContrastRow(_unit(k, (i,), (j,)), (i,), (j,)) for i in range(k - 1) for j in range(i + 1, k)]


def _revpairwise(levels: Sequence[tuple[Any, ...]], ref: Sequence[int]) -> list[ContrastRow]:
    k = len(levels)
    return [ContrastRow(_unit(k, (i,), (j,)), (i,), (j,)) for i in range(1, k) for j in range(i)]


def _trt_vs_ctrl(levels: Sequence[tuple[Any, ...]], ref: Sequence[int]) -> list[ContrastRow]:
    k = len(levels)
    return [ContrastRow(_unit(k, (i,), tuple(ref)), (i,), tuple(ref)) for i in range(k) if i not in ref]


register_contrast("pairwise", _pairwise, pairwise=True)
register_contrast("revpairwise", _revpairwise, pairwise=True)
register_contrast("trt.vs.ctrl", _trt_vs_ctrl, uses_ref=True)


def _is_pairwise(method: str) -> bool:
    family = _FAMILIES.get(method)
    return family is not None and family.pairwise


def _contrast_matrix(method: str | Mapping[str, Sequence[float]], levels: list[tuple[Any, ...]],
                     ref: Any, sep: str = " - ", prefixes: Sequence[str] | None = None
                     ) -> tuple[np.ndarray, list[str]]:
    """Contrast coefficients over one group's means and the contrast names (emmeans' order).

    ``levels`` stay tuples until here, where the labels are written; ``prefixes`` go before each
    value of a level in the labels shown (a factor's name where its levels look numeric), while
    ``ref`` is matched against the levels as they are."""
    k = len(levels)
    labels = [_label(lev) for lev in levels]
    if isinstance(method, Mapping):
        names, vecs = [], []
        for name, weights in method.items():
            vec = np.asarray(weights, dtype=float)
            if vec.shape != (k,):
                raise ValueError(f"contrast {name!r} has {vec.size} weights for {k} means "
                                 f"({labels})")
            names.append(str(name))
            vecs.append(vec)
        return np.vstack(vecs), names
    family = _FAMILIES.get(method) if isinstance(method, str) else None
    if family is None:
        raise ValueError(f"method={method!r} is not one of {', '.join(_FAMILIES)} or a dict "
                         "(evalmix.register_contrast adds a family)")
    # ref= is read only by the families that use it (in an interaction, trt.vs.ctrl's control
    # is not a level of the variable a pairwise family contrasts)
    rows = list(family.function(levels, _ref_indices(ref, labels) if family.uses_ref else [0]))
    if not rows:
        raise ValueError(f"method={method!r} needs at least two means; got {labels}")
    shown = [_wrap(lab) for lab in labels] if prefixes is None else \
        [_wrap(_label([f"{p}{v}" for p, v in zip(prefixes, lev)])) for lev in levels]

    def side(pos: tuple[int, ...]) -> str:
        return shown[pos[0]] if len(pos) == 1 else "avg(" + ",".join(shown[p] for p in pos) + ")"

    names = [row.name if row.name is not None else f"{side(row.plus)}{sep}{side(row.minus)}"
             for row in rows]
    K = np.vstack([np.asarray(row.weights, dtype=float) for row in rows])
    if K.shape[1] != k:
        raise ValueError(f"the contrast family {method!r} gave weights over {K.shape[1]} means for "
                         f"{k} ({labels})")
    return K, names


def _ref_indices(ref: Hashable | list[Hashable] | None, labels: list[str]) -> list[int]:
    if ref is None:
        return [0]
    # a list averages several controls; a tuple names one level of several spec factors
    refs = ref if isinstance(ref, list) else [ref]
    out = []
    for r in refs:
        if isinstance(r, (int, np.integer)) and not isinstance(r, bool):
            if not 0 <= r < len(labels):
                raise ValueError(f"ref index {r} is out of range for {len(labels)} levels")
            out.append(int(r))
        else:
            lab = _label(r) if isinstance(r, tuple) else str(r)
            if lab not in labels:
                raise ValueError(f"ref={r!r} is not one of the levels {labels}")
            out.append(labels.index(lab))
    return out


@dataclass(frozen=True, eq=False, repr=False)
class Contrasts(_GridView, Result):
    """Contrasts of marginal means with multiplicity-adjusted p-values and intervals.

    ``scale`` says what the table shows, and the contrast labels follow it:

    - ``"log-odds"`` (means on the link scale): labels ``A - B``; ``estimate``, ``se``,
      ``conf_low``, ``conf_high`` are differences of log-odds; ``odds_ratio``, ``or_conf_low``,
      ``or_conf_high`` their exponentials.
    - ``"odds ratio"`` (means on the response scale of a logit model, as emmeans reports them):
      labels ``A / B``; ``odds_ratio``, its delta-method ``se``, ``or_conf_low``, ``or_conf_high``.
    - ``"probability"`` (means moved to the response scale by :func:`regrid`): labels ``A - B``;
      differences of probabilities.

    Both carry ``statistic`` (Wald z of the log odds ratio), ``p_value`` (unadjusted) and
    ``p_adjusted`` (adjusted within each family).  For posterior fits the tests are replaced by
    ``prob_positive`` and the intervals are highest-density intervals.  ``notes`` say how
    p-values and intervals were adjusted.  ``grid`` is the :class:`~evalmix.mixed.grid.RefGrid` of the
    contrasts (variables ``contrast`` and the ``by`` variables), so contrasts of contrasts chain:
    ``contrast(contrast(emm, "pairwise"), "pairwise", by=None)``.
    """

    table: pd.DataFrame
    grid: RefGrid
    method: str
    adjust: str
    ci_adjust: str
    conf_level: float
    notes: tuple[str, ...] = ()
    scale: str = "log-odds"
    #: the number of means each family compares (the Tukey family size), one per ``by`` group
    family_means: tuple[int, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def _title(self) -> str:
        by = f" | {', '.join(self.by)}" if self.by else ""
        return f"Contrasts ({self.method}){by}"

    def _header(self) -> list[str]:
        if self.scale == "odds ratio" and self.grid.tran == LOG_ODDS_RATIO:
            return ["scale: odds ratio (regridded; contrast A/B: odds of A over odds of B; "
                    "delta-method SEs, Wald intervals and tests of odds ratio = 1 on this scale)"]
        if self.scale == "odds ratio":
            return ["scale: odds ratio (contrast A / B: odds of A over odds of B)"]
        if self.scale == "odds ratio difference":
            return ["scale: odds ratio (contrast A - B: difference of odds ratios, delta method)"]
        if self.scale == "log-odds":
            return ["scale: log-odds (contrast A - B: difference of log-odds; "
                    "odds_ratio = exp(estimate))"]
        if self.scale == "probability":
            return ["scale: probability (contrast A - B: difference of probabilities, "
                    "delta method)"]
        if self.scale == "mean score":
            return ["scale: mean score (contrast A - B: difference of mean scores, delta method)"]
        return [f"scale: {self.scale}"]

    def _notes(self) -> list[str]:
        return list(self.notes)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update(method=self.method, scale=self.scale, adjust=self.adjust,
                   ci_adjust=self.ci_adjust, conf_level=self.conf_level, notes=list(self.notes))
        return out


def _family_note(method: str, k: int, n_means: int, kind: str) -> str | None:
    if method == "none":
        return None
    what = "tests" if kind == "P value" else "estimates"
    size = f"for comparing a family of {n_means} estimates" if method == "tukey" \
        else f"for {k} {what}"
    return f"{kind} adjustment: {method} method {size}"


class _Inherit:
    """The default ``by`` of :func:`contrast`: the grouping of what is contrasted."""

    def __repr__(self) -> str:
        return "<the by variables of the input>"


_INHERIT: Any = _Inherit()


def _as_grid(obj: EMMeans | Contrasts | RefGrid | ClmmEMMeans) -> RefGrid:
    if isinstance(obj, (EMMeans, Contrasts)):
        return obj.grid
    if isinstance(obj, RefGrid):
        return obj
    if isinstance(obj, ClmmEMMeans) and obj.grid is not None:
        return obj.grid
    raise ArgumentTypeError(f"contrast() takes the result of emmeans(), contrast() or ref_grid(), "
                            f"not {type(obj).__name__}")


def contrast(emm: EMMeans | Contrasts | RefGrid | ClmmEMMeans,
             method: str | Mapping[str, Sequence[float]] = "pairwise", *,
             by: str | Sequence[str] | None = _INHERIT, ref: Hashable | list[Hashable] | None = None,
             interaction: str | Sequence[str] | None = None, adjust: str | None = None,
             conf_level: float = 0.95) -> Contrasts:
    """Contrasts among marginal means, each ``by`` group adjusted as one family (R: ``contrast``).

    Parameters
    ----------
    emm : EMMeans, Contrasts or RefGrid
        Result of :func:`emmeans` (on either scale: contrasts are always formed on the link scale,
        as emmeans does, and become odds ratios for a logit link), of :func:`regrid` (contrasts
        are then differences of probabilities), or of :func:`contrast` itself (contrasts of
        contrasts: interaction contrasts, as R's ``contrast(contrast(emm, ...), ...)``).
    method : {"pairwise", "revpairwise", "trt.vs.ctrl"}, a registered family, or dict
        ``pairwise``: every ``A - B`` with A before B; ``revpairwise``: every later level minus
        each earlier one; ``trt.vs.ctrl``: each level minus ``ref``; any family added with
        :func:`register_contrast` (:func:`contrast_families` lists them); a dict maps contrast
        names to weight vectors over the means of a group.  Level names containing ``-``, ``+``, ``/`` or
        ``*`` are written in parentheses.  Means on the response scale of a logit model give
        odds ratios labelled ``A / B`` (``scale == "odds ratio"``), as emmeans reports them;
        means on the link scale give log-odds differences labelled ``A - B``.
    by : str, list of str or None, optional
        The variables within whose levels contrasts are formed and adjusted; default those of
        ``emm``.  ``by=None`` contrasts all rows together (the levels of the other variables are
        then combined, as emmeans labels them: ``A - B D1``).
    ref : str, int or list, optional
        Control level(s) for ``trt.vs.ctrl`` (a level label, a 0-based index, or a list whose
        average is the control); default the first level.
    interaction : str or list of str, optional
        Interaction contrasts (R: ``contrast(emm, interaction = ...)``): the method (one for all,
        or one per variable, in order) applied to each non-``by`` variable in turn, the others
        held as ``by``; the result has one column per variable, named ``<variable>_<method>``
        (e.g. ``model_pairwise``, ``domain_pairwise``: every difference between two models of
        their difference between two domains).  ``method`` is then not used.
    adjust : {"holm", "hochberg", "BH", "BY", "bonferroni", "sidak", "tukey", "dunnettx", "mvt", "none"}
        Multiplicity adjustment within each family (see :mod:`evalmix.stats.multiplicity`); default
        ``"holm"``, and ``"none"`` for interaction contrasts (as emmeans).  Intervals
        are adjusted the emmeans way: the step-wise methods (Holm, Hochberg, BH, BY) cannot adjust
        intervals, so they get Bonferroni intervals (noted in ``notes``); ``tukey`` applies to pairwise families only and otherwise becomes ``sidak``.
        Ignored for posterior fits.
    conf_level : float
        Family-wise level of the intervals (or the HDI probability for posterior fits).

    Returns
    -------
    Contrasts

    Examples
    --------
    >>> import evalmix
    >>> runs = evalmix.simulate.glmm_runs(3, 40, 3, rng=1)
    >>> fit = evalmix.glmer("correct ~ model + (1|item) + (1|item:run)", runs)
    >>> emm = evalmix.emmeans(fit, "model")
    >>> res = evalmix.contrast(emm, "trt.vs.ctrl", ref="M1", adjust="dunnettx")
    >>> res.to_frame()[["contrast", "estimate", "odds_ratio"]].round(2)
      contrast  estimate  odds_ratio
    0  M2 - M1      0.84        2.33
    1  M3 - M1      1.58        4.84
    >>> twice = evalmix.contrast(res, "pairwise", adjust="none")  # a contrast of contrasts
    >>> twice.to_frame()[["contrast", "estimate"]].round(2)
                    contrast  estimate
    0  (M2 - M1) - (M3 - M1)     -0.73
    """
    check_arguments(conf_level=conf_level)
    grid = _as_grid(emm)
    if by is _INHERIT:
        by = list(grid.by)
    by = [] if by is None else ([by] if isinstance(by, str) else [str(b) for b in by])
    grid = grid.with_by(by)
    spec = [v for v in grid.variables if v not in by]
    if not spec:
        raise ValueError(f"nothing to contrast: every variable of the grid ({grid.variables}) is "
                         "a by variable")
    # the label names the scale shown: odds ratios "A / B" for means on the response scale (as
    # emmeans reports them), differences "A - B" otherwise
    ratio = grid.type == "response" and grid.link == "logit"
    sep = " / " if ratio else " - "
    if interaction is None:
        method_name = "custom" if isinstance(method, Mapping) else str(method)
        # the new rows' label column; "contrast1" when "contrast" is already a by variable (as R)
        label_col = "contrast1" if "contrast" in by else "contrast"
        con, families = _contrast_rows(grid, method, spec, by, ref, sep, label_col)
        pairwise = _is_pairwise(method_name)
        adjust = "holm" if adjust is None else adjust
    else:
        methods = [interaction] * len(spec) if isinstance(interaction, str) else list(interaction)
        if not methods or len(methods) > len(spec):
            raise ValueError(f"interaction= names {len(methods)} methods for the variables "
                             f"{spec}: give one method, or one per variable")
        con = grid
        for var, meth in zip(spec, methods):
            others = [v for v in con.variables if v != var]
            con, _ = _contrast_rows(con, meth, [var], others, ref, sep, f"{var}_{meth}", enhance=False)
        # as emmeans orders them: the first variable's contrasts fastest, the by groups slowest
        cols = [f"{v}_{m}" for v, m in zip(spec, methods)] + spec[len(methods):] + by
        frame = con.frame[cols]
        codes = [pd.factorize(frame[c])[0] for c in cols]
        order = np.lexsort(codes)
        con = con.take(order)
        con = replace(con, frame=con.frame[cols].reset_index(drop=True), by=tuple(by))
        frame = con.frame
        families = [(np.asarray(idx), 0) for idx in
                    (frame.groupby(by, sort=False, observed=True).indices.values() if by
                     else [np.arange(len(frame))])]
        method_name = "interaction " + ", ".join(map(str, methods))
        pairwise = False
        adjust = "none" if adjust is None else adjust
    return _test_contrasts(con, families, method_name, multiplicity.normalise_method(adjust),
                           pairwise, conf_level, ratio)


def _contrast_rows(grid: RefGrid, method: str | Mapping[str, Sequence[float]], spec: list[str],
                   by: list[str], ref: Any, sep: str, label_col: str, enhance: bool = True
                   ) -> tuple[RefGrid, list[tuple[np.ndarray, int]]]:
    """The grid of contrasts of ``grid``'s rows over the ``spec`` levels within each ``by`` group:
    the new grid (variables ``label_col`` and ``by``) and, per group, its rows and the number of
    means it compares. ``enhance``: a variable whose levels all look numeric is named before
    them in the labels, as emmeans' ``enhance.levels`` (not in interaction contrasts)."""
    frame = grid.frame
    shown_names = dict(grid.label_names)
    prefixes = [shown_names.get(v, v) if enhance and looks_numeric(pd.unique(frame[v])) else ""
                for v in spec]
    groups = (frame.groupby(by, sort=False, observed=True).indices if by
              else {(): np.arange(len(frame))})
    # K is sparse: each contrast touches only its group's rows, and a chain on a large grid has
    # as many groups as rows to contrast
    k_rows, k_cols, k_vals = [], [], []
    names_all: list[str] = []
    first_rows: list[np.ndarray] = []  # per new row, a row of its group (for the by values)
    families = []
    row_levels = list(frame[spec].itertuples(index=False, name=None))
    start = 0
    for idx in groups.values():
        idx = np.sort(np.asarray(idx))
        levels = [row_levels[i] for i in idx]
        K, names = _contrast_matrix(method, levels, ref, sep, prefixes if any(prefixes) else None)
        r, c = np.nonzero(K)
        k_rows.append(start + r)
        k_cols.append(idx[c])
        k_vals.append(K[r, c])
        names_all.extend(names)
        first_rows.append(np.full(len(names), idx[0]))
        families.append((np.arange(start, start + len(names)), len(levels)))
        start += len(names)
    new_frame = pd.DataFrame({label_col: names_all})
    at = np.concatenate(first_rows)
    for v in by:
        new_frame[v] = list(frame[v].to_numpy()[at])
    Ks = sparse.csr_matrix((np.concatenate(k_vals), (np.concatenate(k_rows),
                                                    np.concatenate(k_cols))),
                           shape=(start, len(frame)))
    con = grid.linear_map(Ks, new_frame, by=by)
    return replace(con, contrasts=True), families


def _test_contrasts(con: RefGrid, families: list[tuple[np.ndarray, int]], method_name: str,
                    adjust: str, pairwise: bool, conf_level: float, ratio: bool,
                    odds_ratios: bool = False) -> Contrasts:
    """z tests and intervals of a grid of contrasts, each family adjusted as one (or posterior
    summaries and P(contrast > 0)).  ``odds_ratios``: the rows are regridded odds ratios, tested
    against 1 on their own scale."""
    null = 1.0 if odds_ratios else 0.0
    if odds_ratios:
        scale = "odds ratio"
    elif con.tran == LOG_ODDS_RATIO:
        scale = "odds ratio difference"
    elif con.tran is not None:
        scale = con.response if con.tran in LINKS else f"{con.tran} response"
    else:
        scale = "odds ratio" if ratio else ("log-odds" if con.link == "logit"
                                            else f"{con.link} link")
    est_all = con.estimates(conf_level, type="link")
    ok_all = con.estimable
    coefs = con.coefficients
    frame = con.frame
    label_col = frame.columns[0]
    notes: list[str] = []
    p_method = ci_method = adjust
    est, se = est_all["estimate"].to_numpy(), est_all["se"].to_numpy()
    dfs = est_all["df"].to_numpy() if "df" in est_all.columns and coefs.draws is None else None
    n = len(frame)
    # the family loop only adjusts: everything else is computed for all rows at once
    stat, p_raw, p_adj, lo, hi, prob = (np.full(n, np.nan) for _ in range(6))
    vals_all = con.linear_predictor() if coefs.draws is not None else None
    for rows, n_means in families:
        if coefs.separation is not None:
            block = frame.iloc[rows]
            names = [_label(r) for r in block.itertuples(index=False, name=None)] \
                if label_col not in ("contrast", "contrast1") else block[label_col].tolist()
            warn_divergent(con.take(rows).L, coefs.separation, names, "the contrast",
                           stacklevel=3)
        if vals_all is not None:
            prob[rows] = np.where(ok_all[rows], (vals_all[:, rows] > null).mean(axis=0), np.nan)
            p_method = ci_method = "none"
            continue
        with np.errstate(invalid="ignore", divide="ignore"):
            z = (est[rows] - null) / se[rows]
        corr = None
        if adjust == "mvt":  # the only adjustment that needs the joint distribution
            cov = con.take(rows).covariance()
            d = np.sqrt(np.diag(cov))
            with np.errstate(invalid="ignore", divide="ignore"):
                corr = cov / np.outer(d, d)
        crit: float | np.ndarray
        if dfs is not None:  # t statistics with each contrast's df (lmer fits)
            p, crit, p_method, ci_method = _adjust_family_t(
                z, dfs[rows], adjust, conf_level=conf_level, n_means=n_means, pairwise=pairwise,
                corr=corr)
            stat[rows], p_raw[rows], p_adj[rows] = z, 2 * stats.t.sf(np.abs(z), dfs[rows]), p
        else:
            p, crit, p_method, ci_method = multiplicity.adjust_family(
                z, adjust, conf_level=conf_level, n_means=n_means, pairwise=pairwise, corr=corr)
            stat[rows], p_raw[rows], p_adj[rows] = z, 2 * stats.norm.sf(np.abs(z)), p
        lo[rows], hi[rows] = est[rows] - crit * se[rows], est[rows] + crit * se[rows]
        for kind, meth in (("P value", p_method), ("Conf-level", ci_method)):
            note = _family_note(meth, len(rows), n_means, kind)
            if note and note not in notes:
                notes.append(note)
    if vals_all is not None:
        summ = est_all.assign(prob_positive=prob)
    else:
        summ = pd.DataFrame({"estimate": est, "se": se, "statistic": stat, "p_value": p_raw,
                             "p_adjusted": p_adj, "conf_low": lo, "conf_high": hi})
        if dfs is not None:
            summ.insert(2, "df", dfs)
    if con.link == "logit":
        summ["odds_ratio"] = np.exp(summ["estimate"])
        summ["or_conf_low"] = np.exp(summ["conf_low"])
        summ["or_conf_high"] = np.exp(summ["conf_high"])
    if ratio:
        # the odds-ratio scale, as emmeans reports it: the ratio, its delta-method SE and the
        # back-transformed interval; no log-odds columns beside an "A / B" label
        summ["se"] = summ["odds_ratio"] * summ["se"]
        summ = summ.drop(columns=["estimate", "conf_low", "conf_high"])
        summ = summ[["odds_ratio", "se"] + [c for c in summ.columns
                                             if c not in ("odds_ratio", "se")]]
    if odds_ratios:  # the estimates are odds ratios: name them so
        summ = summ.rename(columns={"estimate": "odds_ratio", "conf_low": "or_conf_low",
                                    "conf_high": "or_conf_high"})
    order = np.concatenate([rows for rows, _ in families]) if families else np.arange(0)
    table = pd.concat([frame.iloc[order].reset_index(drop=True),
                       summ.iloc[order].reset_index(drop=True)], axis=1)
    if coefs.draws is None and p_method in ("holm", "hochberg", "BH", "BY"):
        notes.append(f"Intervals use Bonferroni critical values: {adjust} adjusts p-values only.")
    if coefs.draws is not None:
        above = "P(odds ratio > 1)" if odds_ratios else "P(contrast > 0)"
        notes.append(f"Posterior means, {conf_level:.0%} highest-density intervals and "
                     f"{above}; no multiplicity adjustment applies.")
    return Contrasts(table=table, grid=replace(con, adjust=p_method, conf_level=conf_level),
                     method=method_name, adjust=p_method, ci_adjust=ci_method,
                     conf_level=conf_level, notes=tuple(notes), scale=scale,
                     family_means=tuple(int(n) for _, n in families))


# --- t families (linear mixed models: each contrast has its own df) --------------------------------

def _bracketed_root(f: Any, lo: np.ndarray, hi: np.ndarray, xtol: float = 1e-10) -> np.ndarray:
    """Roots of ``f(x, at)`` (``at``: the indices of the entries ``x`` is for) in [lo, hi],
    elementwise, by the Illinois method: one call of ``f`` per step for every entry at once."""
    a, b = lo.astype(float).copy(), hi.astype(float).copy()
    everywhere = np.arange(len(a))
    fa, fb = f(a, everywhere), f(b, everywhere)
    x = np.where(np.abs(fa) < np.abs(fb), a, b)
    todo = np.flatnonzero((fa != 0) & (fb != 0) & (np.sign(fa) != np.sign(fb)))
    side = np.zeros(len(a))
    for _ in range(100):
        if not len(todo):
            break
        c = b[todo] - fb[todo] * (b[todo] - a[todo]) / (fb[todo] - fa[todo])
        fc = f(c, todo)
        x[todo] = c
        left = np.sign(fc) == np.sign(fa[todo])
        # keep the bracket: replace the end with the same sign; halve the stale end's value
        a[todo] = np.where(left, c, a[todo])
        fa[todo] = np.where(left, fc, np.where(side[todo] == 1, fa[todo] / 2, fa[todo]))
        b[todo] = np.where(left, b[todo], c)
        fb[todo] = np.where(left, np.where(side[todo] == -1, fb[todo] / 2, fb[todo]), fc)
        side[todo] = np.where(left, -1, 1)
        done = (fc == 0) | (np.abs(b[todo] - a[todo]) < xtol)
        todo = todo[~done]
    return x


def _adjust_family_t(t: np.ndarray, df: np.ndarray, method: str, *, conf_level: float,
                     n_means: int | None, pairwise: bool, corr: np.ndarray | None = None
                     ) -> tuple[np.ndarray, np.ndarray, str, str]:
    """Adjusted p-values and per-row interval critical values of one family of t statistics,
    as emmeans' ``.adj.p.value`` and its confidence intervals with each row's df."""
    t_all = np.asarray(t, dtype=float)
    df_all = np.where(np.isfinite(np.asarray(df, dtype=float)), df, np.inf)
    k = len(t_all)
    method, ci_method = multiplicity.family_methods(method, k, pairwise)
    finite = np.isfinite(t_all)
    abst = np.abs(t_all)
    p_raw = 2 * stats.t.sf(abst, df_all)
    p = np.full(k, np.nan)
    if method in multiplicity.P_ADJUST_METHODS:
        if finite.any():
            p[finite] = multiplicity.adjust_pvalues(p_raw[finite], method, n=k)
        crit = multiplicity.p_adjust_critical(method, conf_level, k, lambda q: stats.t.isf(q, df_all))
    elif method == "tukey":
        if n_means is None:
            raise ValueError("the Tukey adjustment needs the number of means compared")
        # R's ptukey and qtukey, vectorised over the rows (SciPy's integration took a second or
        # more per row); one quantile per distinct df, df equal to 1e-9 sharing theirs
        p[finite] = 1.0 - multiplicity.studentized_range_cdf(np.sqrt(2) * abst[finite], n_means, df_all[finite])
        dfs, where = multiplicity.unique_within(df_all)
        crit = multiplicity.studentized_range_quantile(conf_level, n_means, dfs)[where] / np.sqrt(2)
    elif method == "dunnettx":
        nm = (1 + np.sqrt(1 + 8 * k)) / 2
        twt = (k - 1) / k

        def pdunnx_rows(x: np.ndarray, d: np.ndarray) -> np.ndarray:
            out = np.empty(len(x))
            inf = np.isinf(d)  # the z family's (its Tukey part exact at infinite df)
            out[inf] = multiplicity.pdunnx(x[inf], k) if inf.any() else out[inf]
            fin = ~inf
            out[fin] = (twt * multiplicity.studentized_range_cdf(np.sqrt(2) * x[fin], nm, d[fin])
                        + (1 - twt) * stats.f.cdf(x[fin] ** 2, 1, d[fin]) ** k)
            return out

        p[finite] = 1 - pdunnx_rows(abst[finite], df_all[finite])
        dfs, where = multiplicity.unique_within(df_all)  # one quantile per distinct df
        crit_df = np.empty(len(dfs))
        inf = np.isinf(dfs)
        if inf.any():
            crit_df[inf] = multiplicity.qdunnx(conf_level, k)
        fin = np.flatnonzero(~inf)
        if len(fin):
            # emmeans' .qdunnx: the root of pdunnx between the Tukey and Sidak bounds, solved for
            # every distinct df at once (one vectorised pass of ptukey per step)
            d = dfs[fin]
            xtuk = multiplicity.studentized_range_quantile(conf_level, nm, d) / np.sqrt(2)
            xsid = np.sqrt(stats.f.ppf(conf_level ** (1 / k), 1, d))
            lo_, hi_ = np.minimum(xtuk, xsid), np.maximum(xtuk, xsid)
            crit_df[fin] = np.where(hi_ - lo_ < 5e-4, lo_,
                                    _bracketed_root(lambda x, at: pdunnx_rows(x, d[at]) - conf_level, lo_, hi_))
        crit = crit_df[where]
    else:  # mvt: mvtnorm's multivariate t, df as an integer (emmeans' .my.pmvt)
        if corr is None:
            raise ValueError("the mvt adjustment needs the contrasts' correlation matrix")
        c = np.asarray(corr, dtype=float)[np.ix_(finite, finite)]
        dint = np.floor(df_all)
        crit = np.empty(k)
        for d in np.unique(dint):
            rows = dint == d
            box_p = 1 - multiplicity.mvn_box_probability(abst[rows & finite], c, df=d)
            q = multiplicity.mvn_box_quantile(conf_level, c, df=d)
            p[rows & finite] = box_p
            crit[rows] = q
    p = np.clip(p, 0.0, 1.0)
    return p, np.broadcast_to(np.asarray(crit, dtype=float), (k,)).copy(), method, ci_method


@overload
def regrid(obj: EMMeans) -> EMMeans: ...
@overload
def regrid(obj: Contrasts) -> Contrasts: ...
@overload
def regrid(obj: RefGrid) -> RefGrid: ...
@overload
def regrid(obj: ClmmEMMeans) -> ClmmEMMeans: ...
def regrid(obj: EMMeans | Contrasts | RefGrid | ClmmEMMeans) -> EMMeans | Contrasts | RefGrid | ClmmEMMeans:
    """The means, contrasts or grid on the response scale (R: ``emmeans::regrid``).

    Means: each estimate becomes the inverse link of its linear predictor, with the
    delta-method covariance (or the inverse link of each posterior draw); :func:`contrast` of
    the result forms differences of probabilities with their delta-method standard errors.

    Contrasts of a logit model (log odds ratios, or ratios of odds ratios for contrasts of
    contrasts): each becomes an odds ratio ``exp(estimate)`` with the delta-method SE
    ``odds_ratio * se``; intervals are Wald intervals on the odds-ratio scale (symmetric, as
    emmeans gives them after ``regrid``), adjusted within each family as the contrasts were;
    ``statistic`` and the p-values test odds ratio = 1 on that scale (emmeans'
    ``summary(regrid(con), null = 1)``; its default null of 0 is no hypothesis about an odds
    ratio).  Labels become ``A/B``, as emmeans writes them; :func:`contrast` of the result forms
    differences of odds ratios.  Contrasts of other links have no response scale and raise
    ``ValueError``.

    Rows that are not estimable stay NaN.  What is already on its response scale is returned
    unchanged.

    Parameters
    ----------
    obj : EMMeans, Contrasts or RefGrid

    Returns
    -------
    EMMeans, Contrasts or RefGrid
        The same kind of object, on the response scale.

    Examples
    --------
    >>> import evalmix
    >>> runs = evalmix.simulate.glmm_runs(3, 40, 3, rng=1)
    >>> fit = evalmix.glmer("correct ~ model + (1|item) + (1|item:run)", runs)
    >>> probs = evalmix.regrid(evalmix.emmeans(fit, "model"))
    >>> evalmix.contrast(probs, "trt.vs.ctrl").to_frame()[["contrast", "estimate", "se"]].round(3)
      contrast  estimate     se
    0  M2 - M1     0.203  0.069
    1  M3 - M1     0.375  0.067
    >>> ors = evalmix.regrid(evalmix.contrast(evalmix.emmeans(fit, "model"), "trt.vs.ctrl"))
    >>> ors.to_frame()[["contrast", "odds_ratio", "se"]].round(2)
      contrast  odds_ratio    se
    0    M2/M1        2.33  0.69
    1    M3/M1        4.84  1.50
    """
    if isinstance(obj, RefGrid):
        return obj.regrid()
    if isinstance(obj, Contrasts):
        return _regrid_contrasts(obj)
    if isinstance(obj, EMMeans):
        new = obj.grid.regrid()
        table = pd.concat([new.frame, new.estimates(obj.conf_level)], axis=1)
        return EMMeans(table=table, grid=new, specs=obj.specs, conf_level=obj.conf_level,
                       weights=obj.weights)
    if isinstance(obj, ClmmEMMeans):  # its values are already on their own scale (emmeans' modes)
        return obj
    raise ArgumentTypeError(f"regrid() takes the result of emmeans(), contrast() or ref_grid(), "
                    f"not {type(obj).__name__}")


def _ratio_label(value: Any) -> Any:
    # emmeans' regrid writes "A - B" (and "A / B") as "A/B" once the contrast is a ratio
    return value.replace(" - ", "/").replace(" / ", "/") if isinstance(value, str) else value


def _regrid_contrasts(con: Contrasts) -> Contrasts:
    grid = con.grid
    if grid.link == "identity":
        return con
    new = grid.regrid()
    frame = new.frame
    by = list(new.by)
    # the contrast labels (the columns that are not by variables; a by variable keeps its
    # labels, as in emmeans)
    for c in [c for c in frame.columns if c not in by]:
        frame[c] = frame[c].map(_ratio_label)
    new = replace(new, frame=frame)
    groups = (frame.groupby(by, sort=False, observed=True).indices.values() if by
              else [np.arange(len(frame))])
    sizes = con.family_means or (0,) * len(groups)
    families = [(np.sort(np.asarray(idx)), n) for idx, n in zip(groups, sizes)]
    pairwise = _is_pairwise(con.method)
    return _test_contrasts(new, families, con.method, con.adjust, pairwise, con.conf_level,
                           ratio=False, odds_ratios=True)


def reference_grid(fit: FittedModel | PosteriorFit, at: Mapping[str, Any] | None = None) -> tuple[pd.DataFrame, np.ndarray]:
    """The reference grid of a fit as a frame and its design rows: ``ref_grid(fit, at)``'s
    ``frame`` and ``L`` (see :func:`evalmix.ref_grid`, which returns the grid object).

    Examples
    --------
    >>> import evalmix
    >>> runs = evalmix.simulate.glmm_runs(3, 40, 3, rng=1)
    >>> fit = evalmix.glmer("correct ~ model + (1|item) + (1|item:run)", runs)
    >>> grid, X = evalmix.reference_grid(fit)
    >>> grid["model"].tolist(), X.shape
    (['M1', 'M2', 'M3'], (3, 3))
    """
    rg = ref_grid(fit, at)
    return rg.frame, np.array(rg.L)
