"""Estimated marginal means and adjusted contrasts on fitted models, as R's emmeans computes them.

A fitted model (``evalmix.glmer``, a posterior fit, or anything that follows the same interface)
exposes its fixed-effect estimates and covariance (``fixef``, ``vcov``) or posterior draws of them
(``fixef_draws``), its link, and its fixed-effects design (``fixed_design``).  From those:

- :func:`reference_grid` builds every combination of factor levels (numeric covariates at their
  means, or at the values given in ``at``) and its rows of the design matrix;
- :func:`emmeans` averages those link-scale rows over the factors not named, with equal weights by
  default, giving each marginal mean as a linear function ``L beta``;
- :func:`contrast` forms differences of marginal means within each ``by`` group, tests them with
  z statistics (df = Inf, as emmeans does for GLMMs) and adjusts each group as one family.

For a posterior fit, every linear function is evaluated on each draw: estimates are posterior means,
``se`` the posterior standard deviation, intervals highest-density intervals, and contrasts carry
``prob_positive``, the posterior probability that the difference is above zero.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from . import multiplicity
from .draws import hdi
from .fitted import Coefficients, coefficients, linear_functions, warn_divergent
from .links import LINKS, inverse_link, mu_eta
from ._result import Result, level_label
from .errors import FormulaError

__all__ = ["EMMeans", "Contrasts", "reference_grid", "emmeans", "contrast", "hdi"]

_WEIGHTS = ("equal", "proportional", "outer", "cells", "flat")
_METHODS = ("pairwise", "revpairwise", "trt.vs.ctrl")


# --- coefficients of a fit ------------------------------------------------------------------------

def _link(fit: Any) -> str:
    link = str(getattr(fit, "link", "identity"))
    if link not in (*LINKS, "identity"):
        raise ValueError(f"link {link!r} is not supported ({', '.join(LINKS)} or identity)")
    return link


# --- reference grid -------------------------------------------------------------------------------

def _grid_variables(design: Any) -> list[str]:
    """Factors and covariates in their order of appearance in the formula's terms."""
    known = list(design.factors) + list(design.covariates)
    order: list[str] = []
    for term in design.terms:
        for var in str(term).split(":"):
            if var in known and var not in order:
                order.append(var)
    return order + [v for v in known if v not in order]


def _expand(levels: Mapping[str, Sequence[Any]]) -> pd.DataFrame:
    """All combinations, the first variable varying fastest (R's expand.grid)."""
    names = list(levels)
    if not names:
        return pd.DataFrame(index=[0])
    combos = itertools.product(*[levels[n] for n in reversed(names)])
    rows = [tuple(reversed(c)) for c in combos]
    return pd.DataFrame(rows, columns=names)


def reference_grid(fit: Any, at: Mapping[str, Any] | None = None) -> tuple[pd.DataFrame, np.ndarray]:
    """The reference grid of a fit and its design matrix.

    Parameters
    ----------
    fit : fitted model
        Any object with a ``fixed_design`` (see :func:`emmeans`).
    at : dict, optional
        Values to use instead of the defaults: a factor name -> a subset of its levels, or a
        covariate name -> one value or several (several values make the covariate a grid
        dimension).

    Returns
    -------
    grid : DataFrame
        One row per combination of levels (first variable varying fastest, as in R).
    X : ndarray
        The fixed-effects design rows of the grid.

    Examples
    --------
    >>> import evalmix
    >>> runs = evalmix.simulate.glmm_runs(3, 40, 3, seed=1)
    >>> fit = evalmix.glmer("correct ~ model + (1|item) + (1|item:run)", runs)
    >>> grid, X = evalmix.reference_grid(fit)
    >>> grid["model"].tolist(), X.shape
    (['M1', 'M2', 'M3'], (3, 3))
    """
    design = fit.fixed_design
    at = dict(at or {})
    levels: dict[str, list[Any]] = {}
    for var in _grid_variables(design):
        if var in design.factors:
            fitted = list(design.factors[var])
            if var in at:
                wanted = list(np.atleast_1d(at.pop(var)))
                bad = [w for w in wanted if w not in fitted]
                if bad:
                    raise FormulaError(f"at[{var!r}]: levels {bad} are not levels of {var!r} "
                                       f"(levels: {fitted})")
                fitted = wanted
            levels[var] = fitted
        else:
            value = at.pop(var, design.covariates[var])
            levels[var] = [float(v) for v in np.atleast_1d(value)]
    if at:
        raise FormulaError(f"at names {sorted(at)}, which are not variables of the fixed effects "
                           f"(variables: {list(levels)})")
    grid = _expand(levels)
    return grid, np.asarray(design.model_matrix(grid), dtype=float)


# --- estimability ---------------------------------------------------------------------------------
# When the fit dropped aliased columns (a missing cell under an interaction), a mean that involves
# an unobserved combination is not estimable: emmeans reports it as NA.  A linear function l of the
# full design's coefficients is estimable when l is orthogonal to the null space of the fitted
# rows' design matrix.  The design signals dropped columns with ``keep`` and exposes its formulaic
# ``spec`` for the full matrix.

def _full_rows(design: Any, frame: pd.DataFrame) -> np.ndarray:
    if hasattr(design, "full_model_matrix"):  # knows the formula's functions and contrasts
        return np.asarray(design.full_model_matrix(frame), dtype=float)
    nd = frame.copy()
    for name, levels in design.factors.items():
        nd[name] = pd.Categorical(nd[name], categories=levels)
    return np.asarray(design.spec.get_model_matrix(nd, na_action="ignore"), dtype=float)


def _null_basis(design: Any) -> np.ndarray | None:
    """Null-space basis of the full design over the fitted level combinations, or None when the
    fit kept every column (then every linear function is estimable)."""
    if (getattr(design, "keep", None) is None or getattr(design, "spec", None) is None
            or getattr(design, "weights_data", None) is None):
        return None
    combos = design.weights_data.drop_duplicates().reset_index(drop=True)
    frames = []
    # covariates at their means and at a few shifted values, alone and together, so that
    # polynomial, log and product terms of covariates are spanned too
    covs = list(design.covariates)
    steps = [{}] + [{c: k} for c in covs for k in (1, 2, 3)] + \
        [{c: k * (-1) ** j for j, c in enumerate(covs)} for k in (1, 2)]
    for step in steps:
        f = combos.copy()
        for cov, mean in design.covariates.items():
            f[cov] = mean + 0.1 * step.get(cov, 0) * max(abs(mean), 1.0)
        frames.append(f)
    X = _full_rows(design, pd.concat(frames, ignore_index=True))
    _, sv, vt = np.linalg.svd(X, full_matrices=True)
    rank = int((sv > 1e-9 * sv[0]).sum())
    return vt[rank:].T


def _estimable(L_full: np.ndarray, basis: np.ndarray | None) -> np.ndarray:
    if basis is None or basis.shape[1] == 0:
        return np.ones(len(L_full), dtype=bool)
    off = ((L_full @ basis) ** 2).sum(axis=1)
    return off <= 1e-8 * (L_full**2).sum(axis=1)


# --- marginal means -------------------------------------------------------------------------------

def _parse_specs(specs: str | Sequence[str], by: str | Sequence[str] | None
                 ) -> tuple[list[str], list[str]]:
    if isinstance(specs, str):
        text = specs.strip().lstrip("~").strip()
        if "|" in text:
            if by is not None:
                raise ValueError("give `by` either in specs ('~ a | b') or as by=, not both")
            text, by_text = text.split("|", 1)
            by = [b.strip() for b in re.split(r"[*+:]", by_text) if b.strip()]
        spec_list = [s.strip() for s in re.split(r"[*+:]", text) if s.strip()]
    else:
        spec_list = [str(s) for s in specs]
    by_list = [] if by is None else ([by] if isinstance(by, str) else [str(b) for b in by])
    if not spec_list:
        raise ValueError("specs names no variable")
    return spec_list, by_list


def _cell_counts(design: Any, grid: pd.DataFrame, names: list[str]) -> np.ndarray:
    """For each grid row, the number of fitted rows sharing its levels of ``names``."""
    data = getattr(design, "weights_data", None)
    if data is None:
        raise ValueError("weights other than 'equal' need the fit's factor data "
                         "(fixed_design.weights_data)")
    if not names:
        return np.full(len(grid), float(len(data)))
    counts = data.groupby(names, observed=True).size()
    keys = grid[names].itertuples(index=False, name=None)
    return np.array([float(counts.get(k if len(names) > 1 else k[0], 0)) for k in keys])


def _grid_weights(design: Any, grid: pd.DataFrame, keep: list[str], weights: str) -> np.ndarray:
    """Weight of each grid row when averaging over the variables not in ``keep``."""
    if weights == "equal":
        return np.ones(len(grid))
    factors = [v for v in grid.columns if v in design.factors]
    averaged = [v for v in factors if v not in keep]
    if weights == "proportional":
        return _cell_counts(design, grid, averaged)
    if weights == "outer":
        w = np.ones(len(grid))
        for v in averaged:
            w *= _cell_counts(design, grid, [v])
        return w
    cells = _cell_counts(design, grid, factors)
    return cells if weights == "cells" else (cells > 0).astype(float)


@dataclass(frozen=True, eq=False, repr=False)
class EMMeans(Result):
    """Estimated marginal means: one row per combination of the ``specs`` and ``by`` levels.

    ``table`` holds the level columns and ``estimate``, ``se``, ``conf_low``, ``conf_high`` on the
    scale requested (``type``; ``scale`` names it: ``"log-odds"`` or ``"probability"``); ``L`` holds each mean as a linear function of the fixed effects, with
    either ``beta`` and ``vcov`` (maximum likelihood) or ``draws`` (posterior draws of the fixed
    effects, one row per draw) so that :func:`contrast` can work on it.
    """

    table: pd.DataFrame
    levels: pd.DataFrame
    L: np.ndarray
    coef_names: tuple[str, ...]
    specs: tuple[str, ...]
    by: tuple[str, ...]
    link: str
    type: str
    conf_level: float
    weights: str = "equal"
    beta: np.ndarray | None = field(default=None, repr=False)
    vcov: np.ndarray | None = field(default=None, repr=False)
    draws: np.ndarray | None = field(default=None, repr=False)
    # the means over the full (unreduced) design and its null space, for estimability checks when
    # the fit dropped aliased columns
    L_full: np.ndarray | None = field(default=None, repr=False)
    null_basis: np.ndarray | None = field(default=None, repr=False)
    separation: Any = field(default=None, repr=False)  # of a separated fit (fit.separation)

    @property
    def is_posterior(self) -> bool:
        """Whether the means come from posterior draws."""
        return self.draws is not None

    @property
    def scale(self) -> str:
        """Scale of ``estimate``: ``"log-odds"`` (link) or ``"probability"`` (response)."""
        if self.type == "response" and self.link == "logit":
            return "probability"
        return "log-odds" if self.link == "logit" else f"{self.link} link"

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def _title(self) -> str:
        by = f" | {', '.join(self.by)}" if self.by else ""
        return f"Estimated marginal means of {', '.join(self.specs)}{by}"

    def _header(self) -> list[str]:
        what = "highest-density intervals" if self.is_posterior else "Wald intervals"
        return [f"scale: {self.scale}; {self.conf_level:.0%} {what}"]

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update(specs=list(self.specs), by=list(self.by), type=self.type, link=self.link,
                   scale=self.scale,
                   conf_level=self.conf_level, weights=self.weights,
                   posterior=self.is_posterior)
        return out


def _summarise(L: np.ndarray, coefs: Coefficients, conf_level: float,
               link: str | None = None, estimable: np.ndarray | None = None,
               shift: np.ndarray | float = 0.0) -> pd.DataFrame:
    """estimate, se, conf_low, conf_high of ``L beta + shift`` (delta method / Wald) or of its
    draws, back-transformed by the inverse ``link`` when one is given; rows that are not
    estimable are NaN. ``shift`` is the offset of each row."""
    if estimable is not None and not estimable.all():
        L = np.where(estimable[:, None], L, np.nan)
    if coefs.draws is not None:
        vals = coefs.draws @ L.T + shift
        if link is not None:
            vals = inverse_link(link, vals)
        iv = hdi(np.nan_to_num(vals), conf_level)
        iv[~np.isfinite(vals).all(axis=0)] = np.nan
        return pd.DataFrame({"estimate": vals.mean(axis=0), "se": vals.std(axis=0, ddof=1),
                             "conf_low": iv[:, 0], "conf_high": iv[:, 1]})
    est, se, _ = linear_functions(L, *coefs.normal, coefs.separation)
    est = est + shift
    crit = stats.norm.isf((1 - conf_level) / 2)
    lo, hi = est - crit * se, est + crit * se
    if link is not None:
        # back-transform estimate and interval ends; delta-method SE, as emmeans does
        return pd.DataFrame({"estimate": inverse_link(link, est), "se": mu_eta(link, est) * se,
                             "conf_low": inverse_link(link, lo),
                             "conf_high": inverse_link(link, hi)})
    return pd.DataFrame({"estimate": est, "se": se, "conf_low": lo, "conf_high": hi})


def emmeans(fit: Any, specs: str | Sequence[str], by: str | Sequence[str] | None = None, *,
            type: str = "link", at: Mapping[str, Any] | None = None, weights: str = "equal",
            conf_level: float = 0.95) -> EMMeans:
    """Estimated marginal means of a fitted model (R: ``emmeans::emmeans``).

    Parameters
    ----------
    fit : fitted model
        A maximum-likelihood fit (``fixef``: Series, ``vcov``: DataFrame) or a posterior fit
        (``fixef_draws``: DataFrame with one row per draw and one column per fixed effect), with
        ``link`` (``"logit"`` or ``"identity"``) and ``fixed_design`` (factors, covariates,
        terms, ``model_matrix(newdata)``, and ``weights_data`` for data-based weights).
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
        Level of the z intervals (df = Inf) or of the highest-density intervals.

    Returns
    -------
    EMMeans
        Tidy table with the spec and by columns and ``estimate``, ``se``, ``conf_low``,
        ``conf_high``.

    Examples
    --------
    >>> import evalmix
    >>> runs = evalmix.simulate.glmm_runs(3, 40, 3, seed=1)
    >>> fit = evalmix.glmer("correct ~ model + (1|item) + (1|item:run)", runs)
    >>> evalmix.emmeans(fit, "model", type="response").to_frame().round(2)
      model  estimate    se  conf_low  conf_high
    0    M1      0.33  0.06      0.22       0.45
    1    M2      0.53  0.07      0.40       0.65
    2    M3      0.70  0.06      0.58       0.80
    """
    if type not in ("link", "response"):
        raise ValueError(f"type={type!r}: use 'link' or 'response'")
    if weights not in _WEIGHTS:
        raise ValueError(f"weights={weights!r} is not one of {', '.join(_WEIGHTS)}")
    spec_list, by_list = _parse_specs(specs, by)
    coefs = coefficients(fit)
    link = _link(fit)
    grid, X = reference_grid(fit, at)
    keep = spec_list + by_list
    unknown = [v for v in keep if v not in grid.columns]
    if unknown:
        raise FormulaError(f"{unknown} are not variables of the fixed effects "
                           f"(variables: {list(grid.columns)})")
    if len(set(keep)) != len(keep):
        raise ValueError(f"a variable appears twice in specs/by: {keep}")
    if X.shape[1] != len(coefs.names):
        raise ValueError(f"the design has {X.shape[1]} columns but the fit has "
                         f"{len(coefs.names)} fixed effects")
    w = _grid_weights(fit.fixed_design, grid, keep, weights)
    basis = _null_basis(fit.fixed_design)
    X_full = _full_rows(fit.fixed_design, grid) if basis is not None else None
    levels = _expand({v: list(pd.unique(grid[v])) for v in keep})
    rows, rows_full = [], []
    for combo in levels.itertuples(index=False, name=None):
        mask = np.logical_and.reduce([grid[v].to_numpy() == c for v, c in zip(keep, combo)])
        wk = w[mask]
        total = wk.sum()
        rows.append(wk @ X[mask] / total if total > 0 else np.full(X.shape[1], np.nan))
        if X_full is not None:
            rows_full.append(wk @ X_full[mask] / total if total > 0
                             else np.full(X_full.shape[1], np.nan))
    L = np.vstack(rows)
    L_full = np.vstack(rows_full) if X_full is not None else None
    ok = _estimable(L_full, basis) if L_full is not None else None
    back = link if (type == "response" and link != "identity") else None
    # the offsets enter each mean at their average over the fitted rows, as emmeans puts them in
    # its reference grid
    shift = float(getattr(fit.fixed_design, "offset_mean", 0.0) or 0.0)
    summary = _summarise(L, coefs, conf_level, back, ok, shift)
    warn_divergent(L, coefs.separation,
                   [_label(r) for r in levels.itertuples(index=False, name=None)],
                   "the marginal mean of", stacklevel=2)
    table = pd.concat([levels.reset_index(drop=True), summary], axis=1)
    return EMMeans(table=table, levels=levels, L=L, coef_names=coefs.names,
                   specs=tuple(spec_list), by=tuple(by_list), link=link, type=type,
                   conf_level=conf_level, weights=weights, beta=coefs.beta, vcov=coefs.vcov,
                   draws=coefs.draws, L_full=L_full, null_basis=basis,
                   separation=coefs.separation)


# --- contrasts ------------------------------------------------------------------------------------

def _label(values: Sequence[Any]) -> str:
    return " ".join(str(v) for v in values)


def _wrap(label: str) -> str:
    return level_label(label)


def _contrast_matrix(method: str | Mapping[str, Sequence[float]], labels: list[str],
                     ref: Any, sep: str = " - ") -> tuple[np.ndarray, list[str]]:
    """Contrast coefficients over one group's means and the contrast names (emmeans' order)."""
    k = len(labels)
    shown = [_wrap(lab) for lab in labels]
    if isinstance(method, Mapping):
        names, rows = [], []
        for name, weights in method.items():
            vec = np.asarray(weights, dtype=float)
            if vec.shape != (k,):
                raise ValueError(f"contrast {name!r} has {vec.size} weights for {k} means "
                                 f"({labels})")
            names.append(str(name))
            rows.append(vec)
        return np.vstack(rows), names
    rows, names = [], []
    if method in ("pairwise", "revpairwise"):
        pairs = ([(i, j) for i in range(k - 1) for j in range(i + 1, k)] if method == "pairwise"
                 else [(i, j) for i in range(1, k) for j in range(i)])
        for i, j in pairs:
            vec = np.zeros(k)
            vec[i], vec[j] = 1.0, -1.0
            rows.append(vec)
            names.append(f"{shown[i]}{sep}{shown[j]}")
    elif method == "trt.vs.ctrl":
        refs = _ref_indices(ref, labels)
        ctrl = shown[refs[0]] if len(refs) == 1 else \
            "avg(" + ",".join(shown[r] for r in refs) + ")"
        for i in range(k):
            if i in refs:
                continue
            vec = np.zeros(k)
            vec[refs] = -1.0 / len(refs)
            vec[i] = 1.0
            rows.append(vec)
            names.append(f"{shown[i]}{sep}{ctrl}")
    else:
        raise ValueError(f"method={method!r} is not one of {', '.join(_METHODS)} or a dict")
    if not rows:
        raise ValueError(f"method={method!r} needs at least two means; got {labels}")
    return np.vstack(rows), names


def _ref_indices(ref: Any, labels: list[str]) -> list[int]:
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
class Contrasts(Result):
    """Contrasts of marginal means with multiplicity-adjusted p-values and intervals.

    ``scale`` says what the table shows, and the contrast labels follow it:

    - ``"log-odds"`` (means on the link scale): labels ``A - B``; ``estimate``, ``se``,
      ``conf_low``, ``conf_high`` are differences of log-odds; ``odds_ratio``, ``or_conf_low``,
      ``or_conf_high`` their exponentials.
    - ``"odds ratio"`` (means on the response scale of a logit model, as emmeans reports them):
      labels ``A / B``; ``odds_ratio``, its delta-method ``se``, ``or_conf_low``, ``or_conf_high``.

    Both carry ``statistic`` (Wald z of the log odds ratio), ``p_value`` (unadjusted) and
    ``p_adjusted`` (adjusted within each family).  For posterior fits the tests are replaced by
    ``prob_positive`` and the intervals are highest-density intervals.  ``notes`` say how
    p-values and intervals were adjusted.
    """

    table: pd.DataFrame
    L: np.ndarray
    coef_names: tuple[str, ...]
    by: tuple[str, ...]
    method: str
    adjust: str
    ci_adjust: str
    conf_level: float
    link: str
    notes: tuple[str, ...] = ()
    scale: str = "log-odds"

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def _title(self) -> str:
        by = f" | {', '.join(self.by)}" if self.by else ""
        return f"Contrasts ({self.method}){by}"

    def _header(self) -> list[str]:
        if self.scale == "odds ratio":
            return ["scale: odds ratio (contrast A / B: odds of A over odds of B)"]
        if self.scale == "log-odds":
            return ["scale: log-odds (contrast A - B: difference of log-odds; "
                    "odds_ratio = exp(estimate))"]
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


def contrast(emm: EMMeans, method: str | Mapping[str, Sequence[float]] = "pairwise", *,
             ref: Any = None, adjust: str = "holm", conf_level: float = 0.95) -> Contrasts:
    """Contrasts among marginal means, each ``by`` group adjusted as one family (R: ``contrast``).

    Parameters
    ----------
    emm : EMMeans
        Result of :func:`emmeans` (on either scale: contrasts are always formed on the link scale,
        as emmeans does, and become odds ratios for a logit link).
    method : {"pairwise", "revpairwise", "trt.vs.ctrl"} or dict
        ``pairwise``: every ``A - B`` with A before B; ``revpairwise``: every later level minus
        each earlier one; ``trt.vs.ctrl``: each level minus ``ref``; a dict maps contrast names to
        weight vectors over the means of a group.  Level names containing ``-``, ``+``, ``/`` or
        ``*`` are written in parentheses.  Means on the response scale of a logit model give
        odds ratios labelled ``A / B`` (``scale == "odds ratio"``), as emmeans reports them;
        means on the link scale give log-odds differences labelled ``A - B``.
    ref : str, int or list, optional
        Control level(s) for ``trt.vs.ctrl`` (a level label, a 0-based index, or a list whose
        average is the control); default the first level.
    adjust : {"holm", "hochberg", "BH", "BY", "bonferroni", "sidak", "tukey", "dunnettx", "mvt", "none"}
        Multiplicity adjustment within each family (see :mod:`evalmix.multiplicity`).  Intervals
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
    >>> runs = evalmix.simulate.glmm_runs(3, 40, 3, seed=1)
    >>> fit = evalmix.glmer("correct ~ model + (1|item) + (1|item:run)", runs)
    >>> emm = evalmix.emmeans(fit, "model")
    >>> res = evalmix.contrast(emm, "trt.vs.ctrl", ref="M1", adjust="dunnettx")
    >>> res.to_frame()[["contrast", "estimate", "odds_ratio"]].round(2)
      contrast  estimate  odds_ratio
    0  M2 - M1      0.84        2.33
    1  M3 - M1      1.58        4.84
    """
    method_name = "custom" if isinstance(method, Mapping) else str(method)
    adjust = multiplicity.normalise_method(adjust)
    coefs = Coefficients(emm.coef_names, emm.beta, emm.vcov, emm.draws, emm.separation)
    by = list(emm.by)
    spec = list(emm.specs)
    groups = (emm.levels.groupby(by, sort=False, observed=True).indices if by
              else {(): np.arange(len(emm.levels))})
    blocks, notes = [], []
    L_all = []
    # the label names the scale shown: odds ratios "A / B" for means on the response scale (as
    # emmeans reports them), differences "A - B" otherwise
    ratio = emm.type == "response" and emm.link == "logit"
    scale = "odds ratio" if ratio else ("log-odds" if emm.link == "logit" else f"{emm.link} link")
    sep = " / " if ratio else " - "
    p_method = ci_method = adjust
    for key, idx in groups.items():
        idx = np.sort(np.asarray(idx))
        labels = [_label(r) for r in emm.levels.iloc[idx][spec].itertuples(index=False, name=None)]
        K, names = _contrast_matrix(method, labels, ref, sep)
        Lc = K @ emm.L[idx]
        ok = (_estimable(K @ emm.L_full[idx], emm.null_basis)
              if emm.L_full is not None else np.ones(len(Lc), dtype=bool))
        L_all.append(Lc)
        block = pd.DataFrame({"contrast": names})
        key = key if isinstance(key, tuple) else (key,)
        for v, val in zip(by, key):
            block[v] = val
        summ = _summarise(Lc, coefs, conf_level, estimable=ok)
        warn_divergent(Lc, coefs.separation, names, "the contrast", stacklevel=2)
        if coefs.draws is not None:
            vals = coefs.draws @ Lc.T
            summ["prob_positive"] = np.where(ok, (vals > 0).mean(axis=0), np.nan)
            p_method = ci_method = "none"
        else:
            with np.errstate(invalid="ignore"):
                z = summ["estimate"].to_numpy() / summ["se"].to_numpy()
            cov = linear_functions(Lc, *coefs.normal, coefs.separation)[2]
            d = np.sqrt(np.diag(cov))
            pairwise = method_name in ("pairwise", "revpairwise")
            with np.errstate(invalid="ignore", divide="ignore"):
                corr = cov / np.outer(d, d)
            p, crit, p_method, ci_method = multiplicity.adjust_family(
                z, adjust, conf_level=conf_level, n_means=len(labels), pairwise=pairwise,
                corr=corr)
            est, se = summ["estimate"].to_numpy(), summ["se"].to_numpy()
            summ = pd.DataFrame({"estimate": est, "se": se, "statistic": z,
                                 "p_value": 2 * stats.norm.sf(np.abs(z)), "p_adjusted": p,
                                 "conf_low": est - crit * se, "conf_high": est + crit * se})
            for kind, meth in (("P value", p_method), ("Conf-level", ci_method)):
                note = _family_note(meth, len(names), len(labels), kind)
                if note and note not in notes:
                    notes.append(note)
        if emm.link == "logit":
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
        blocks.append(pd.concat([block, summ], axis=1))
    if coefs.draws is None and p_method in ("holm", "hochberg", "BH", "BY"):
        notes.append(f"Intervals use Bonferroni critical values: {adjust} adjusts p-values only.")
    if coefs.draws is not None:
        notes.append(f"Posterior means, {conf_level:.0%} highest-density intervals and "
                     "P(contrast > 0); no multiplicity adjustment applies.")
    table = pd.concat(blocks, ignore_index=True)
    return Contrasts(table=table, L=np.vstack(L_all), coef_names=emm.coef_names, by=tuple(by),
                     method=method_name, adjust=p_method, ci_adjust=ci_method,
                     conf_level=conf_level, link=emm.link, notes=tuple(notes), scale=scale)
