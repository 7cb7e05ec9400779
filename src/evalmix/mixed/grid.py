"""The reference grid: one object for every marginal mean and contrast of a fit (emmeans' emmGrid).

A :class:`RefGrid` holds rows of linear functions of a fit's fixed effects and what is needed to
evaluate them:

- ``frame``: the level (and covariate) columns naming each row;
- ``L``: one row per grid row, one column per coefficient;
- the coefficients: ``beta`` and ``vcov`` (maximum likelihood) or ``draws`` (posterior draws,
  one row per draw), and the ``separation`` of a separated fit;
- the estimability basis: ``L_full`` (the rows over the full, unreduced design) and
  ``null_basis`` (the null space of the fitted design) when the fit dropped aliased columns;
- ``link`` (of ``L beta``; ``"identity"`` after :meth:`RefGrid.regrid`), ``type`` (the scale a
  summary shows: ``"link"`` or ``"response"``), ``by`` (the grouping variables) and ``adjust``
  (the multiplicity family adjustment the rows were made with).

:func:`ref_grid` builds the grid of a fit; :meth:`RefGrid.marginal` averages it into marginal
means; :meth:`RefGrid.linear_map` forms contrasts (rows ``K L``); :meth:`RefGrid.regrid` moves it
to the response scale by the delta method.  :func:`evalmix.inference.emmeans`, :func:`evalmix.contrast`,
the rank studies and the Bayesian fit's ranks all go through it.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import sparse, stats

from ..core.arguments import check_level
from ..core.result import Result
from ..core.draws import hdi
from ..core.errors import DataError, DataWarning, FormulaError
from .fitted import (Coefficients, DfMethod, FittedModel, PosteriorFit, SeparationLimit, coefficients,
                     df_method, linear_functions)
from .links import LINKS, inverse_link, mu_eta
from ..model import split_term

if TYPE_CHECKING:
    from ..model import FixedDesign

__all__ = ["RefGrid", "ref_grid", "level_means", "WEIGHTS", "LOG_ODDS_RATIO"]

#: ``RefGrid.tran`` of regridded contrasts of a logit model: their log odds ratios were
#: exponentiated (emmeans' ``log.o.r.`` transformation).
LOG_ODDS_RATIO = "log odds ratio"

#: How :meth:`RefGrid.marginal` may weight the grid rows it averages (emmeans' ``weights``).
WEIGHTS = ("equal", "proportional", "outer", "cells", "flat")


def fit_link(fit: FittedModel | PosteriorFit) -> str:
    """The link of a fit (``"identity"`` when it names none), checked against the known links."""
    link = str(getattr(fit, "link", "identity"))
    if link not in (*LINKS, "identity"):
        raise ValueError(f"link {link!r} is not supported ({', '.join(LINKS)} or identity)")
    return link


# --- the grid's variables -------------------------------------------------------------------------

def _grid_variables(design: Any) -> list[str]:
    """Factors and covariates in their order of appearance in the formula's terms."""
    known = list(design.factors) + list(design.covariates)
    order: list[str] = []
    for term in design.terms:
        for var in split_term(str(term)):
            if var in known and var not in order:
                order.append(var)
    return order + [v for v in known if v not in order]


def expand_levels(levels: Mapping[str, Sequence[Any]]) -> pd.DataFrame:
    """All combinations of ``levels``, the first variable varying fastest (R's ``expand.grid``).

    Examples
    --------
    >>> expand_levels({"a": [1, 2], "b": ["x", "y"]}).values.tolist()
    [[1, 'x'], [2, 'x'], [1, 'y'], [2, 'y']]
    """
    names = list(levels)
    if not names:
        return pd.DataFrame(index=[0])
    combos = itertools.product(*[levels[n] for n in reversed(names)])
    rows = [tuple(reversed(c)) for c in combos]
    return pd.DataFrame(rows, columns=names)


def _grid_frame(design: Any, at: Mapping[str, Any] | None) -> pd.DataFrame:
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
    return expand_levels(levels)


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


def _estimable(L_full: np.ndarray | None, basis: np.ndarray | None) -> np.ndarray:
    if L_full is None or basis is None or basis.shape[1] == 0:
        return np.ones(0 if L_full is None else len(L_full), dtype=bool)
    with np.errstate(invalid="ignore"):
        off = ((L_full @ basis) ** 2).sum(axis=1)
        return off <= 1e-8 * (L_full**2).sum(axis=1)


# --- weights for averaging ------------------------------------------------------------------------

def _cell_counts(data: pd.DataFrame | None, grid: pd.DataFrame, names: list[str]) -> np.ndarray:
    """For each grid row, the number of fitted rows sharing its levels of ``names``."""
    if data is None:
        raise ValueError("weights other than 'equal' need the fit's factor data "
                         "(fixed_design.weights_data)")
    if not names:
        return np.full(len(grid), float(len(data)))
    counts = data.groupby(names, observed=True).size()
    keys = grid[names].itertuples(index=False, name=None)
    return np.array([float(counts.get(k if len(names) > 1 else k[0], 0)) for k in keys])


# --- the grid -------------------------------------------------------------------------------------

@dataclass(frozen=True, eq=False, repr=False)
class RefGrid(Result):
    """Linear functions of a fit's fixed effects over a grid of levels (emmeans' ``emmGrid``).

    Printing shows each row's estimate on the grid's ``type`` scale with ``conf_level`` intervals
    (Wald or, for posterior draws, highest-density).  Build one with :func:`ref_grid`; ``emmeans``,
    ``contrast`` and ``regrid`` results hold one in their ``grid`` attribute.

    Attributes
    ----------
    frame : DataFrame
        The variables naming each row (factor levels, covariate values, or ``contrast``).
    L : ndarray
        Rows of linear functions of the coefficients (grid rows x coefficients).
    coef_names : tuple of str
        The coefficients ``L`` multiplies.
    link : str
        Link of ``L beta``: the fit's link, or ``"identity"`` once regridded.
    beta, vcov, draws : ndarray or None
        Estimates and covariance (maximum likelihood) or posterior draws (one row per draw).
    L_full, null_basis : ndarray or None
        Rows over the full design and the null space of the fitted design, when the fit dropped
        aliased columns: a row is estimable when ``L_full`` is orthogonal to ``null_basis``.
    offset : ndarray
        Added to each row's linear predictor (the fit's mean offset for means; combined by the
        contrast weights for contrasts).
    by : tuple of str
        Grouping variables: contrasts are formed and adjusted within each of their level sets.
    type : {"link", "response"}
        Scale of the summaries: the linear predictor, or back-transformed by the inverse link.
    tran : str or None
        The link undone by :meth:`regrid` (the estimates are then on its response scale).
    adjust : str
        The multiplicity adjustment the rows were tested with (``"none"`` for means).
    contrasts : bool
        Whether the rows are contrasts (differences of link-scale values): :meth:`regrid` then
        exponentiates log-odds differences into odds ratios instead of applying the inverse link.
    conf_level : float
        Level of the intervals a printed summary (and ``to_frame``) shows.
    dfm : DfMethod or None
        The fit's finite denominator df (linear mixed models): estimates then carry a ``df``
        column and t intervals; None for asymptotic (z, df = Inf) inference.
    """

    frame: pd.DataFrame
    L: np.ndarray
    coef_names: tuple[str, ...]
    link: str
    beta: np.ndarray | None = field(default=None, repr=False)
    vcov: np.ndarray | None = field(default=None, repr=False)
    draws: np.ndarray | None = field(default=None, repr=False)
    L_full: np.ndarray | None = field(default=None, repr=False)
    null_basis: np.ndarray | None = field(default=None, repr=False)
    offset: np.ndarray | None = field(default=None, repr=False)
    by: tuple[str, ...] = ()
    type: str = "link"
    tran: str | None = None
    adjust: str = "none"
    separation: SeparationLimit | None = field(default=None, repr=False)  # of a separated fit (fit.separation)
    design: FixedDesign | None = field(default=None, repr=False)  # the fit's fixed design (data for weights)
    contrasts: bool = False
    conf_level: float = 0.95
    response: str = "probability"  # what the inverse link gives: a probability, or a beta fit's mean score
    dfm: DfMethod | None = field(default=None, repr=False)  # finite df (lmer fits)
    # the name emmeans writes before a variable's numeric-looking levels in contrast labels where it
    # is not the column's: a cumulative-link model's ``category`` carries the response's name
    label_names: tuple[tuple[str, str], ...] = ()

    # ---- what it holds
    @property
    def is_posterior(self) -> bool:
        """Whether the rows are evaluated on posterior draws."""
        return self.draws is not None

    @property
    def variables(self) -> list[str]:
        """The variables naming the rows (the columns of ``frame``)."""
        return [str(c) for c in object.__getattribute__(self, "frame").columns]

    @property
    def coefficients(self) -> Coefficients:
        """The coefficients the rows are linear functions of."""
        return Coefficients(self.coef_names, self._raw("beta"), self._raw("vcov"),
                            self._raw("draws"), self.separation)

    @property
    def estimable(self) -> np.ndarray:
        """Whether each row is estimable (False where it involves an empty cell of a
        rank-deficient fit)."""
        L = self._raw("L")
        if self._raw("L_full") is None or self._raw("null_basis") is None:
            return np.ones(len(L), dtype=bool)
        return _estimable(self._raw("L_full"), self._raw("null_basis"))

    @property
    def offsets(self) -> np.ndarray:
        """The offset of each row (zeros when the fit has none)."""
        off = self._raw("offset")
        return np.zeros(len(self._raw("L"))) if off is None else np.array(off, dtype=float)

    @property
    def scale(self) -> str:
        """Scale of the estimates a summary shows, in words."""
        if self.tran == LOG_ODDS_RATIO:
            return "odds ratio"
        if self.tran is not None:
            return self.response if self.tran in LINKS else f"{self.tran} response"
        if self.type == "response" and self.link == "logit":
            return self.response
        return "log-odds" if self.link == "logit" else f"{self.link} link"

    def _raw(self, name: str) -> Any:
        # the stored (read-only) value without a defensive copy, for internal algebra
        return object.__getattribute__(self, name)

    # ---- evaluation
    def linear_predictor(self, masked: bool = True) -> np.ndarray:
        """``L beta + offset`` (posterior: one row per draw); NaN for rows that are not
        estimable unless ``masked=False``."""
        L = self._masked_L() if masked else np.array(self._raw("L"))
        coefs = self.coefficients
        if coefs.draws is not None:
            return coefs.draws @ L.T + self.offsets
        if coefs.separation is None:
            return L @ coefs.normal[0] + self.offsets
        return linear_functions(L, *coefs.normal, coefs.separation)[0] + self.offsets

    def _masked_L(self) -> np.ndarray:
        L = np.array(self._raw("L"), dtype=float)
        ok = self.estimable
        if not ok.all():
            L[~ok] = np.nan
        return L

    def estimates(self, conf_level: float | None = None, type: str | None = None) -> pd.DataFrame:
        """``estimate``, ``se``, ``conf_low``, ``conf_high`` of each row, rows that are not
        estimable NaN; intervals at ``conf_level`` (default the grid's).

        On the link scale the intervals are Wald (z, df = Inf); ``type="response"`` back-transforms
        estimate and interval ends by the inverse link with the delta-method SE, as emmeans does.
        Posterior grids give posterior means and SDs with highest-density intervals.
        """
        type = self.type if type is None else type
        conf_level = self.conf_level if conf_level is None else conf_level
        back = self.link if (type == "response" and self.link != "identity") else None
        L = self._masked_L()
        coefs = self.coefficients
        shift = self.offsets
        if coefs.draws is not None:
            vals = coefs.draws @ L.T + shift
            if back is not None:
                vals = inverse_link(back, vals)
            iv = hdi(np.nan_to_num(vals), conf_level)
            iv[~np.isfinite(vals).all(axis=0)] = np.nan
            return pd.DataFrame({"estimate": vals.mean(axis=0), "se": vals.std(axis=0, ddof=1),
                                 "conf_low": iv[:, 0], "conf_high": iv[:, 1]})
        if coefs.separation is not None:
            est, se, _ = linear_functions(L, *coefs.normal, coefs.separation)
        else:  # the diagonal of L V L' only: a chain of contrasts can have many rows
            beta, V = coefs.normal
            est = L @ beta
            se = np.sqrt(np.clip(np.einsum("ij,ij->i", L @ V, L), 0.0, None))
        est = est + shift
        dfm = self._raw("dfm")
        # t intervals with each row's df where the fit has finite df (lmer; glmmTMB's df.residual),
        # as emmeans gives them; z intervals otherwise
        dfs = dfm.df(L) if dfm is not None else None
        crit = stats.t.isf((1 - conf_level) / 2, dfs) if dfs is not None else stats.norm.isf((1 - conf_level) / 2)
        lo, hi = est - crit * se, est + crit * se
        if back is not None:
            # back-transform estimate and interval ends; delta-method SE, as emmeans does
            out = pd.DataFrame({"estimate": inverse_link(back, est), "se": mu_eta(back, est) * se,
                                "conf_low": inverse_link(back, lo), "conf_high": inverse_link(back, hi)})
        else:
            out = pd.DataFrame({"estimate": est, "se": se, "conf_low": lo, "conf_high": hi})
        if dfs is not None:
            out.insert(2, "df", dfs)
        return out

    def check_estimable(self, what: str, stacklevel: int = 3) -> np.ndarray:
        """Whether each row is estimable; warns (:class:`~evalmix.core.errors.DataWarning`) naming
        the rows that are not, as ``what`` (e.g. "the marginal mean of model")."""
        ok = self.estimable
        if not ok.all():
            import warnings

            frame = self._raw("frame")
            names = [", ".join(f"{k}={v}" for k, v in row.items())
                     for row in frame.loc[~ok].to_dict(orient="records")]
            warnings.warn(f"{what} is not estimable for {'; '.join(names)}: the fit dropped an "
                          "aliased column (a combination of levels with no observations), so no "
                          "value is reported there (NaN)", DataWarning, stacklevel=stacklevel)
        return ok

    def covariance(self) -> np.ndarray:
        """Covariance of the rows' linear predictors (``L V L'``, or of the draws)."""
        L = self._masked_L()
        coefs = self.coefficients
        if coefs.draws is not None:
            return np.atleast_2d(np.cov(coefs.draws @ L.T, rowvar=False))
        return linear_functions(L, *coefs.normal, coefs.separation)[2]

    # ---- new grids from this one
    def take(self, rows: Sequence[int] | np.ndarray) -> RefGrid:
        """The grid restricted to (or reordered by) the row positions ``rows``."""
        idx = np.asarray(rows, dtype=int)
        L_full, off = self._raw("L_full"), self._raw("offset")
        return replace(self, frame=self._raw("frame").iloc[idx].reset_index(drop=True),
                       L=self._raw("L")[idx], L_full=None if L_full is None else L_full[idx],
                       offset=None if off is None else off[idx])

    def linear_map(self, K: np.ndarray | sparse.spmatrix | sparse.sparray, frame: pd.DataFrame, *, by: Sequence[str] | None = None,
                   adjust: str | None = None) -> RefGrid:
        """A grid whose rows are ``K`` times this grid's rows (contrasts, averages, subsets).

        ``frame`` names the new rows; ``by`` and ``adjust`` default to this grid's.
        """
        # a sparse K (contrasts within groups of a large grid) stays sparse: K L is dense and
        # small, K itself would be rows x grid rows
        K = (sparse.csr_matrix(K) if sparse.issparse(K)
             else np.atleast_2d(np.asarray(K, dtype=float)))
        if K.shape[1] != len(self._raw("L")):
            raise ValueError(f"K has {K.shape[1]} columns for a grid of {len(self._raw('L'))} rows")
        L_full = self._raw("L_full")
        return replace(self, frame=frame.reset_index(drop=True),
                       L=np.asarray(K @ self._raw("L")),
                       L_full=None if L_full is None else np.asarray(K @ L_full),
                       offset=np.asarray(K @ self.offsets).ravel(),
                       by=self.by if by is None else tuple(by),
                       adjust=self.adjust if adjust is None else adjust)

    def with_by(self, by: Sequence[str]) -> RefGrid:
        """The same rows grouped by ``by``."""
        unknown = [b for b in by if b not in self.variables]
        if unknown:
            raise FormulaError(f"by names {unknown}, which are not variables of the grid "
                               f"(variables: {self.variables})")
        return replace(self, by=tuple(by))

    def marginal(self, specs: Sequence[str], by: Sequence[str] = (), weights: str = "equal"
                 ) -> RefGrid:
        """Marginal means: the rows averaged over the variables not in ``specs`` or ``by``.

        One row per combination of the ``specs`` then ``by`` levels (the first varying fastest,
        as emmeans orders them).  ``weights`` as in :func:`evalmix.inference.emmeans`.
        """
        if weights not in WEIGHTS:
            raise ValueError(f"weights={weights!r} is not one of {', '.join(WEIGHTS)}")
        keep = list(specs) + list(by)
        grid = self._raw("frame")
        unknown = [v for v in keep if v not in grid.columns]
        if unknown:
            raise FormulaError(f"{unknown} are not variables of the fixed effects "
                               f"(variables: {list(grid.columns)})")
        if len(set(keep)) != len(keep):
            raise ValueError(f"a variable appears twice in specs/by: {keep}")
        w = self._weights(keep, weights)
        levels = expand_levels({v: list(pd.unique(grid[v])) for v in keep})
        W = np.zeros((len(levels), len(grid)))
        for r, combo in enumerate(levels.itertuples(index=False, name=None)):
            mask = np.logical_and.reduce([grid[v].to_numpy() == c for v, c in zip(keep, combo)])
            W[r] = np.where(mask, w, 0.0)
        return self._average(W, levels, tuple(by))

    def _average(self, W: np.ndarray, frame: pd.DataFrame, by: tuple[str, ...]) -> RefGrid:
        """Rows ``W L / W 1``: weighted averages of this grid's rows (NaN where a row of ``W``
        has no weight)."""
        totals = W.sum(axis=1)

        def apply(M: np.ndarray) -> np.ndarray:
            # summed over the rows used, then divided: the same floating-point sums as a direct
            # weighted average of the grid rows
            out = np.full((len(W), M.shape[1]), np.nan)
            for r, (wr, total) in enumerate(zip(W, totals)):
                if total > 0:
                    used = wr != 0
                    out[r] = wr[used] @ M[used] / total
            return out
        off = self._raw("offset")
        L_full = self._raw("L_full")
        return replace(self, frame=frame.reset_index(drop=True), L=apply(self._raw("L")),
                       L_full=None if L_full is None else apply(L_full),
                       offset=None if off is None else apply(off[:, None])[:, 0], by=by)

    def _weights(self, keep: list[str], weights: str) -> np.ndarray:
        """Weight of each grid row when averaging over the variables not in ``keep``."""
        grid = self._raw("frame")
        if weights == "equal":
            return np.ones(len(grid))
        data = getattr(self.design, "weights_data", None)
        factors = [v for v in grid.columns if data is not None and v in data.columns]
        averaged = [v for v in factors if v not in keep]
        if weights == "proportional":
            return _cell_counts(data, grid, averaged)
        if weights == "outer":
            w = np.ones(len(grid))
            for v in averaged:
                w *= _cell_counts(data, grid, [v])
            return w
        cells = _cell_counts(data, grid, factors)
        return cells if weights == "cells" else (cells > 0).astype(float)

    def regrid(self) -> RefGrid:
        """The grid on the response scale (emmeans' ``regrid``).

        Each row becomes a new coefficient: its inverse-link estimate, with the delta-method
        covariance ``D L V L' D`` (``D`` the derivative of the inverse link), or the inverse link
        of each posterior draw.  Contrasts of the result are differences of probabilities.
        Rows that are contrasts of a logit model (log odds ratios) become odds ratios, ``exp``
        taking the place of the inverse link; contrasts of the result are differences of odds
        ratios.  Rows that are not estimable stay flagged.  A grid already on its response scale
        is returned unchanged.
        """
        if self.link == "identity":
            return self
        tran: str = self.link
        if self.contrasts:
            if self.link != "logit":
                raise ValueError(
                    f"regrid(): these rows are differences of {self.link} values, which have no "
                    "response scale (only log odds ratios do: they become odds ratios); regrid "
                    "the means, then contrast them")
            tran = LOG_ODDS_RATIO

        def f(eta: np.ndarray) -> np.ndarray:
            return np.exp(eta) if tran == LOG_ODDS_RATIO else inverse_link(self.link, eta)

        def df(eta: np.ndarray) -> np.ndarray:
            return np.exp(eta) if tran == LOG_ODDS_RATIO else mu_eta(self.link, eta)

        ok = self.estimable
        n = len(ok)
        names = tuple(f"row{i}" for i in range(n))
        coefs = self.coefficients
        frame = self._raw("frame")
        basis = np.eye(n)[:, ~ok] if not ok.all() else None
        common: dict[str, Any] = dict(
            frame=frame, L=np.eye(n), coef_names=names, link="identity", L_full=np.eye(n),
            null_basis=basis, offset=None, type="response", tran=tran, separation=None)
        if coefs.draws is not None:
            with np.errstate(over="ignore"):
                vals = f(self.linear_predictor())
            vals[:, ~ok] = 0.0  # never read: those rows are flagged as not estimable
            return replace(self, draws=vals, beta=None, vcov=None, **common)
        est = self.linear_predictor()
        cov = self.covariance()
        d = df(est)
        mu = f(est)
        V = cov * np.outer(d, d)
        mu[~ok] = 0.0
        V[~ok, :] = 0.0
        V[:, ~ok] = 0.0
        return replace(self, beta=mu, vcov=V, draws=None, **common)

    # ---- Result
    def to_frame(self) -> pd.DataFrame:
        return pd.concat([self._raw("frame").reset_index(drop=True),
                          self.estimates(self.conf_level)], axis=1)

    def _title(self) -> str:
        by = f" | {', '.join(self.by)}" if self.by else ""
        return f"Reference grid of {', '.join(self.variables) or '(intercept)'}{by}"

    @property
    def interval_kind(self) -> str:
        """What the intervals are: highest-density (posterior), t with the df method's df, or
        Wald."""
        dfm = self._raw("dfm")
        return ("highest-density intervals" if self.is_posterior else
                f"t intervals ({dfm.name} df)" if dfm is not None else "Wald intervals")

    def _header(self) -> list[str]:
        return [f"scale: {self.scale}; {self.conf_level:.0%} {self.interval_kind}"]


def ref_grid(fit: FittedModel | PosteriorFit, at: Mapping[str, Any] | None = None, *,
             conf_level: float = 0.95, ddf: str | None = None) -> RefGrid:
    """The reference grid of a fit (R: ``emmeans::ref_grid``).

    Every combination of the factor levels of the fixed part (the first variable varying
    fastest, as in R), numeric covariates at their means or at the values given in ``at``; each
    row is the fixed-effects design row of that combination.

    Parameters
    ----------
    fit : fitted model
        A fit satisfying :class:`evalmix.mixed.fitted.FittedModel` or
        :class:`evalmix.mixed.fitted.PosteriorFit`.
    at : dict, optional
        A factor name -> a subset of its levels, or a covariate name -> one value or several
        (several values make the covariate a grid dimension).
    conf_level : float
        Level of the intervals its summary shows (emmeans' ``level``).
    ddf : {"Satterthwaite", "Kenward-Roger"}, optional
        Denominator df of a linear mixed model's tests (emmeans' ``lmer.df``; default
        Satterthwaite); Kenward-Roger also uses its adjusted covariance.  Fits tested
        asymptotically (binomial GLMMs) take none.

    Returns
    -------
    RefGrid

    Examples
    --------
    >>> import evalmix
    >>> runs = evalmix.simulate.glmm_runs(3, 40, 3, rng=1)
    >>> fit = evalmix.glmer("correct ~ model + (1|item) + (1|item:run)", runs)
    >>> rg = evalmix.ref_grid(fit)
    >>> rg.frame["model"].tolist(), rg.L.shape
    (['M1', 'M2', 'M3'], (3, 3))
    """
    coefs = coefficients(fit)  # first: it names what is not a fitted model
    if coefs.is_posterior and ddf is not None:
        raise ValueError(f"ddf={ddf!r} applies to linear mixed models fitted by REML or ML; a "
                         "posterior fit is summarised by its draws")
    dfm = None if coefs.is_posterior else df_method(fit, ddf)
    if getattr(dfm, "emmeans", None) is not None:  # emmeans' tests where they differ from the fit's
        dfm = dfm.emmeans  # type: ignore[union-attr]
    emmeans_df = getattr(fit, "emmeans_df", None)  # the df emmeans gives this fit (glmmTMB: df.residual)
    if dfm is None and not coefs.is_posterior and callable(emmeans_df):
        dfm = emmeans_df()
    if dfm is not None:
        coefs = replace(coefs, vcov=np.asarray(dfm.vcov, dtype=float))
    design = fit.fixed_design
    frame = _grid_frame(design, at)
    X = np.asarray(design.model_matrix(frame), dtype=float)
    if X.shape[1] != len(coefs.names):
        raise ValueError(f"the design has {X.shape[1]} columns but the fit has "
                         f"{len(coefs.names)} fixed effects")
    basis = _null_basis(design)
    X_full = _full_rows(design, frame) if basis is not None else None
    # offsets enter each row at their average over the fitted rows, as emmeans puts them in its
    # reference grid
    shift = float(getattr(design, "offset_mean", 0.0) or 0.0)
    return RefGrid(frame=frame, L=X, coef_names=coefs.names, link=fit_link(fit), beta=coefs.beta,
                   vcov=coefs.vcov, draws=coefs.draws, L_full=X_full, null_basis=basis,
                   offset=np.full(len(frame), shift) if shift else None,
                   separation=coefs.separation, design=design,
                   conf_level=check_level(conf_level), dfm=dfm,
                   response=str(getattr(fit, "response_scale", "probability")))


def level_means(fit: FittedModel | PosteriorFit, term: str, by: Sequence[str] = ()) -> RefGrid:
    """The marginal mean of each level of the factor ``term`` within each combination of the
    factors ``by``: ``emmeans(fit, term, by=by)``'s grid (equal weights over the other factors,
    covariates at their means), rows ordered by the ``by`` levels (the first slowest), then by
    the levels of ``term``; columns ``by`` then ``term``.

    The one source of per-level means for rankings and study planning; rows that are not
    estimable in a rank-deficient fit are flagged by ``estimable``.

    Examples
    --------
    >>> import evalmix
    >>> runs = evalmix.simulate.glmm_runs(3, 40, 3, rng=1)
    >>> fit = evalmix.glmer("correct ~ model + (1|item) + (1|item:run)", runs)
    >>> level_means(fit, "model").frame["model"].tolist()
    ['M1', 'M2', 'M3']
    """
    grid = ref_grid(fit)  # first: it names what is not a fitted model
    factors = dict(fit.fixed_design.factors)
    by = list(by)
    for name in [term, *by]:
        if name not in factors:
            raise DataError(f"{name!r} is not a factor of the fixed part; factors: {list(factors)}")
    # expand.grid order with the last by variable slowest: reversed, the first by is slowest
    means = grid.marginal([term], list(reversed(by)))
    frame = means._raw("frame")[by + [term]]
    return replace(means, frame=frame, by=tuple(by))
