"""Complete and quasi-complete separation in the fixed effects of a binomial GLMM.

The maximum-likelihood estimate of ``beta`` is infinite exactly when some direction ``d != 0``
never lowers the fit of any row: ``x_i'd >= 0`` for every row with a success and ``x_i'd <= 0``
for every row with a failure (Albert & Anderson 1984). Writing each row once per outcome it has,
with its sign flipped for failures (``X_bar``), that is ``X_bar d >= 0``, a linear program. The
random effects are penalised, so they stay finite and cannot create or remove such a direction.

Two linear programs on the distinct rows of X (pooled with their success and failure counts, so
the cost does not grow with the table):

- the one of ``detectseparation::detect_separation`` (Konis 2007): maximise ``1' X_bar d``
  subject to ``X_bar d >= 0`` and ``-1 <= d <= 1``. Its solution gives the verdict
  (``+inf``, ``-inf``, finite) for each coefficient, as ``detect_separation`` reports it;
- the largest set of rows that some direction fits perfectly: maximise ``sum(t)`` subject to
  ``X_bar d >= t``, ``0 <= t <= 1``. Those rows leave the likelihood in the limit (their fitted
  probabilities go to 0 or 1); the rest determine everything that stays finite.

The fit then reports the limit of the likelihood-maximising sequence: the GLMM of the remaining
rows, whose estimable functions (``l'beta`` with ``l`` in the row space of the remaining X) are
finite and keep their standard errors; every other coefficient is ``+-inf`` (or NaN when the
limit does not determine it) with a NaN standard error.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy.optimize import linprog

from ..core.result import Result
from ..model import independent_columns

if TYPE_CHECKING:
    from ..model import GlmmDesign

__all__ = ["Separation", "detect_separation", "find_separation"]

TOLERANCE = 1e-4  # detect_separation_control(tolerance = 1e-4)
REMEDY = ("for finite estimates refit with a weakly informative prior on the fixed effects, "
          "glmer(..., fixef_prior='normal(0, 2.5)') (as blme::bglmer), or fit the Bayesian model "
          "evalmix.bayes.glmer")


@dataclass(frozen=True)
class _LPResult:
    direction: np.ndarray  # detect_separation's solution d (p,)
    separated: np.ndarray  # bool per distinct row: fitted perfectly in the limit


def _separation_lps(Xu: np.ndarray, succ: np.ndarray, fail: np.ndarray,
                    tol: float = TOLERANCE) -> _LPResult:
    """Run both linear programs on distinct rows ``Xu``.

    ``succ``/``fail``: how many of the rows as given with this pattern have a success/failure
    (the weights of ``1' X_bar d`` in ``detect_separation``, which sees the rows as given).
    """
    has1, has0 = succ > 0, fail > 0
    Xbar = np.vstack([Xu[has1], -Xu[has0]])
    weight = np.concatenate([succ[has1], fail[has0]])
    r, p = Xbar.shape
    res = linprog(-(weight @ Xbar), A_ub=-Xbar, b_ub=np.zeros(r), bounds=[(-1, 1)] * p,
                  method="highs")
    d = np.where(np.abs(res.x) > tol, res.x, 0.0) if res.status == 0 else np.zeros(p)
    if not d.any():  # the first program finds a direction whenever one exists
        return _LPResult(d, np.zeros(Xu.shape[0], dtype=bool))
    # largest perfectly fitted set: max sum(t), X_bar d - t >= 0, 0 <= t <= 1, d free
    c = np.concatenate([np.zeros(p), -np.ones(r)])
    A = np.hstack([-Xbar, np.eye(r)])
    res2 = linprog(c, A_ub=A, b_ub=np.zeros(r), bounds=[(None, None)] * p + [(0, 1)] * r,
                   method="highs")
    t = res2.x[p:] if res2.status == 0 else (Xbar @ d > tol).astype(float)
    sep_bar = t > 0.5
    n1 = int(has1.sum())
    separated = np.zeros(Xu.shape[0], dtype=bool)
    separated[np.flatnonzero(has1)] |= sep_bar[:n1]
    separated[np.flatnonzero(has0)] |= sep_bar[n1:]
    # a row with both outcomes is never fitted perfectly (x'd = 0 is forced)
    separated &= ~(has1 & has0)
    return _LPResult(d, separated)


def detect_separation(X: np.ndarray, successes: np.ndarray, trials: np.ndarray,
                      names: list[str] | None = None, tol: float = TOLERANCE) -> pd.Series:
    """Which coefficients of a logistic regression on ``X`` have infinite estimates.

    The verdicts of R's ``detectseparation::detect_separation`` (its default linear program):
    ``inf`` or ``-inf`` for a coefficient whose maximum-likelihood estimate is infinite, ``0``
    for a finite one. Identical rows of ``X`` are pooled first, so the linear program has at
    most two constraints per distinct row.

    Parameters
    ----------
    X : (n, p) array
        Fixed-effects model matrix, full column rank.
    successes, trials : (n,) arrays
        Successes and trials of each row (0/1 rows: ``trials = 1``).
    names : list of str, optional
        Coefficient names (default ``x0, x1, ...``).
    tol : float
        Entries of the solution below ``tol`` in absolute value count as 0.

    Returns
    -------
    Series of float
        ``inf``, ``-inf`` or ``0.0`` by coefficient.

    Examples
    --------
    >>> import numpy as np
    >>> X = np.column_stack([np.ones(6), [0, 0, 0, 1, 1, 1]])
    >>> detect_separation(X, np.array([0, 1, 0, 1, 1, 1]), np.ones(6), ["Intercept", "b"]).tolist()
    [0.0, inf]
    """
    X = np.asarray(X, dtype=float)
    k = np.asarray(successes, dtype=float)
    m = np.asarray(trials, dtype=float)
    Xu, inv = np.unique(X, axis=0, return_inverse=True)
    inv = inv.ravel()
    succ = np.bincount(inv, (k > 0).astype(float), Xu.shape[0])
    fail = np.bincount(inv, (k < m).astype(float), Xu.shape[0])
    lp = _separation_lps(Xu, succ, fail, tol)
    names = names if names is not None else [f"x{j}" for j in range(X.shape[1])]
    return pd.Series(_infinity(np.sign(lp.direction)), index=names)


@dataclass(frozen=True, eq=False, repr=False)
class Separation(Result):
    """Separation found in the fixed effects of a fit (``fit.separation``).

    Attributes
    ----------
    kind : {"complete", "quasi-complete"}
        Complete: every row is fitted perfectly in the limit.
    verdicts : Series
        By coefficient: ``inf``/``-inf`` (the estimate diverges that way), ``0.0`` (finite) or
        NaN (not determined by the data that remain in the limit). The first two as
        ``detectseparation::detect_separation`` reports them.
    slices : tuple of str
        The rows fitted perfectly in the limit, described by the fixed-effect columns.
    n_rows : int
        How many of the given rows are fitted perfectly.
    message : str
        The text of the :class:`~evalmix.core.errors.SeparationWarning`.
    """

    kind: str
    verdicts: pd.Series
    slices: tuple[str, ...]
    n_rows: int
    message: str
    direction: np.ndarray = field(repr=False)
    null_basis: np.ndarray = field(repr=False)  # p x r: directions the remaining rows do not fix
    keep: np.ndarray = field(repr=False)  # columns kept in the limit fit
    pooled_rows: np.ndarray = field(repr=False)  # bool per pooled row: fitted perfectly
    beta_limit: np.ndarray | None = field(repr=False, default=None)  # finite parametrisation
    vcov_limit: np.ndarray | None = field(repr=False, default=None)

    @property
    def infinite(self) -> list[str]:
        """Names of the coefficients whose estimates diverge."""
        return [str(n) for n, v in self.verdicts.items() if np.isinf(v)]

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"term": self.verdicts.index, "verdict": [
            "+inf" if v == np.inf else "-inf" if v == -np.inf else "finite" if v == 0
            else "not identified" for v in self.verdicts]})

    def _title(self) -> str:
        return f"Separation ({self.kind}): {self.n_rows} rows fitted perfectly in the limit"

    def _notes(self) -> list[str]:
        return list(self.slices)

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update({"kind": self.kind, "slices": list(self.slices), "n_rows": self.n_rows,
                    "infinite": self.infinite})
        return out

    # ---------------------------------------------------------------- estimable functions
    def classify(self, L: np.ndarray, tol: float = 1e-7) -> np.ndarray:
        """For rows ``l`` of ``L``: 0 where ``l'beta`` is finite, +1/-1 where it diverges to
        +-inf, NaN where the limit does not determine it."""
        L = np.atleast_2d(np.asarray(L, dtype=float))
        out = np.zeros(L.shape[0])
        if self.null_basis.shape[1] == 0:
            return out
        scale = np.maximum(np.abs(L).max(axis=1), 1.0)
        free = np.abs(L @ self.null_basis).max(axis=1) > tol * scale
        ld = L @ self.direction
        sgn = np.where(np.abs(ld) > tol * scale, np.sign(ld), np.nan)
        return np.where(free, sgn, 0.0)

    def combine(self, L: np.ndarray, beta: np.ndarray | None = None, V: np.ndarray | None = None
                ) -> tuple[np.ndarray, np.ndarray]:
        """``L beta`` and ``L V L'`` in the limit of the fit.

        ``beta``, ``V`` default to the finite parametrisation of the limit fit (the remaining
        rows' estimates, zero on the columns they do not determine); rows of ``L`` whose
        combination diverges get ``+-inf`` (NaN when undetermined) and NaN covariances.
        """
        beta = self.beta_limit if beta is None else beta
        V = self.vcov_limit if V is None else V
        L = np.atleast_2d(np.asarray(L, dtype=float))
        cls = self.classify(L)
        est = L @ beta
        cov = L @ V @ L.T
        bad = cls != 0
        est = np.where(bad, _infinity(cls), est)
        cov[bad, :] = np.nan
        cov[:, bad] = np.nan
        return est, cov


def _describe(data: pd.DataFrame, cols: list[str], mask: np.ndarray, limit: int = 4) -> str:
    """A short description of the rows ``mask`` by the values of ``cols``."""
    if not cols or mask.all():
        return "in every row"
    sub = data.loc[mask, cols]
    for c in cols:  # one column whose values pick exactly these rows
        vals = pd.unique(sub[c])
        if np.array_equal(data[c].isin(vals).to_numpy(), mask):
            return f"{c} {'=' if len(vals) == 1 else 'in'} " + (
                repr(_py(vals[0])) if len(vals) == 1 else repr([_py(v) for v in vals]))
    combos = sub.drop_duplicates()
    parts = [", ".join(f"{c} = {_py(r[c])!r}" for c in cols) for _, r in combos.head(limit).iterrows()]
    more = f" and {len(combos) - limit} more combinations" if len(combos) > limit else ""
    return "(" + "; ".join(parts) + ")" + more


def _infinity(sign: np.ndarray) -> np.ndarray:
    """-1/0/+1/NaN -> -inf/0/+inf/NaN."""
    sign = np.asarray(sign, dtype=float)
    return np.where(sign > 0, np.inf, np.where(sign < 0, -np.inf, sign))


def _py(v: Any) -> Any:
    return v.item() if hasattr(v, "item") else v


def _null_basis(A: np.ndarray, p: int) -> np.ndarray:
    """Orthonormal basis (p x r) of the directions ``A`` does not see (``A n = 0``)."""
    if A.shape[0] == 0:
        return np.eye(p)
    _, s, vt = np.linalg.svd(A, full_matrices=True)
    rank = int((s > s.max() * 1e-10).sum()) if s.size else 0
    return vt[rank:].T


def find_separation(design: GlmmDesign, describe: bool = True, tol: float = TOLERANCE,
                    rank_tol: float = 1e-7) -> Separation | None:
    """Check a :class:`~evalmix.model.GlmmDesign` (full-rank X) for separation.

    Returns None when the maximum-likelihood estimates of the fixed effects are finite.
    ``describe=False`` skips naming the rows (for simulated data without a data frame); ``tol``
    is the linear programs' tolerance and ``rank_tol`` that of the kept columns
    (``GlmerControl.separation_tol`` and ``rank_tol``).
    """
    X = design.X
    Xu_all = X.unique_rows
    pat = X.pat if X.X is None else None
    if pat is None:
        Xu, pat = np.unique(Xu_all, axis=0, return_inverse=True)
        pat = pat.ravel()
    else:
        Xu = Xu_all
    npat = Xu.shape[0]
    given_pat = pat[design.row_index]
    succ = np.bincount(given_pat, (design.k_rows > 0).astype(float), npat)
    fail = np.bincount(given_pat, (design.k_rows < design.m_rows).astype(float), npat)
    lp = _separation_lps(Xu, succ, fail, tol)
    if not lp.separated.any():
        return None
    p = Xu.shape[1]
    remain = ~lp.separated
    N = _null_basis(Xu[remain], p)
    names = list(design.fixed.columns)
    cls = np.zeros(p)
    if N.shape[1]:
        free = np.abs(N).max(axis=1) > 1e-7
        cls = np.where(free, np.where(lp.direction != 0, np.sign(lp.direction), np.nan), 0.0)
    verdicts = pd.Series(_infinity(cls), index=names)
    # columns kept in the limit fit: a maximal independent set on the remaining rows
    keep = independent_columns(Xu[remain], rank_tol) if remain.any() else []
    pooled = lp.separated[pat]
    given = pooled[design.row_index]
    yk, ym = design.k_rows, design.m_rows
    slices = []
    if describe:
        data = design.data.reset_index(drop=True)
        cols = [c for c in list(design.fixed.factors) + list(design.fixed.covariates) if c in data]
    for label, sel in (("a success", given & (yk == ym)), ("a failure", given & (yk == 0))):
        if not describe:
            break
        if sel.any():
            where = _describe(data, cols, sel)
            where = where if where.startswith("in every") else "where " + where
            slices.append(f"every response is {label} {where} "
                          f"({int(sel.sum())} rows)")
    kind = "complete" if not remain.any() else "quasi-complete"
    inf_txt = ", ".join(f"{n!r} ({'+' if v > 0 else '-'}inf)" for n, v in verdicts.items()
                        if np.isinf(v))
    nan_txt = [n for n, v in verdicts.items() if np.isnan(v)]
    parts = [f"{kind} separation in the fixed effects: " + "; ".join(slices) + "."]
    if inf_txt:
        parts.append(f"Maximum-likelihood estimates diverge for {inf_txt}"
                     + (f" and are not determined for {nan_txt}" if nan_txt else "")
                     + "; they are reported as +-inf (NaN when not determined) with NaN standard "
                     "errors.")
    parts.append("The other estimates and the variance parameters are the limit of the fit (the "
                 "model of the remaining rows)." if remain.any() else
                 "No row remains to estimate anything: the variance parameters are NaN.")
    parts.append(REMEDY[0].upper() + REMEDY[1:] + ".")
    msg = " ".join(parts)
    return Separation(kind=kind, verdicts=verdicts, slices=tuple(slices), n_rows=int(given.sum()),
                      message=msg, direction=lp.direction, null_basis=N,
                      keep=np.asarray(keep, dtype=np.int64), pooled_rows=pooled)


def limit_problem(design: GlmmDesign, sep: Separation) -> tuple[Any, np.ndarray, np.ndarray, list]:
    """X (kept columns), k, m and random terms of the rows that remain in the limit."""
    from ..model import FixedMatrix

    rows = ~sep.pooled_rows
    X = design.X
    Xd = X.dense()[rows][:, sep.keep]
    Xu, pat = np.unique(Xd, axis=0, return_inverse=True)
    Xr = FixedMatrix(Xu, pat.ravel())
    terms = [dataclasses.replace(t, index=t.index[rows], Z=t.Z[rows]) for t in design.terms]
    return Xr, design.k[rows], design.m[rows], terms


def expand_limit(sep: Separation, p: int, beta: np.ndarray, V: np.ndarray
                 ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Limit-fit ``beta``/``V`` (kept columns) -> finite parametrisation padded with zeros, and
    the reported coefficients (``+-inf``/NaN where divergent, NaN covariances there)."""
    bp = np.zeros(p)
    Vp = np.zeros((p, p))
    bp[sep.keep] = beta
    Vp[np.ix_(sep.keep, sep.keep)] = V
    est, cov = sep.combine(np.eye(p), bp, Vp)
    return bp, Vp, est, cov
