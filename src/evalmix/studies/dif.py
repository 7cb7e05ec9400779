"""Differential item functioning by logistic regression (Swaminathan and Rogers, 1990).

For each item, the responses are regressed on a matching variable (the examinee's ability; here the
model's) and a group (a harness version, a judge, an exposure group)::

    null:      logit P(correct) = b0 + b1 * matching
    uniform:   ... + d_g                        (the group shifts the item's log-odds)
    both:      ... + d_g + e_g * matching       (uniform and non-uniform: the slope changes too)

and the two are compared by a likelihood-ratio test (R: ``anova(glm(...), test = "Chisq")`` item by
item; the 2-df test of ``kind="both"`` is Swaminathan and Rogers' simultaneous test).  The per-item
p-values are adjusted over the items (Benjamini-Hochberg by default: a false discovery rate).
Because the matching variable enters every item's regression with a slope of its own, a group that
is simply stronger (or weaker) does not read as differential functioning, even when items differ
in discrimination.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pandas as pd
from scipy import special, stats

from ..core.arguments import check_choice, check_level
from ..core.errors import DataError
from ..core.methods import DIF_KINDS, DifKind
from ..core.result import Result
from ..data.runs import at_the_door
from ..stats.multiplicity import adjust_pvalues

__all__ = ["DifResult", "logistic_dif"]

def reference_level(values: pd.Series, column: str, reference: Any, caller: str, why: str
                    ) -> tuple[Any, list[Any]]:
    """The reference level of a grouping column and its other levels, in sorted order.

    The levels sort by their text; ``reference=None`` takes the first.  A column with one level is
    a DataError that ends with ``why`` (what needs two), and so is a reference that is not a level.

    Examples
    --------
    >>> reference_level(pd.Series(["b", "a", "c", "a"]), "group", None, "f", "it compares groups")
    ('a', ['b', 'c'])
    >>> reference_level(pd.Series(["b", "a"]), "group", "b", "f", "it compares groups")
    ('b', ['a'])
    """
    levels = sorted(pd.unique(values), key=str)
    if len(levels) < 2:
        raise DataError(f"{caller}: column {column!r} has one level ({levels[0]!r}); {why}")
    ref = levels[0] if reference is None else reference
    if ref not in levels:
        raise DataError(f"{caller}: reference={reference!r} is not a level of {column!r}: {levels}")
    return ref, [lv for lv in levels if lv != ref]


# Newton iterations of each item's logistic regression; a separated item (all correct in a group)
# drifts towards its limit, where the deviance, and so the likelihood-ratio statistic, settles
_MAX_NEWTON = 60


@dataclass(frozen=True, eq=False, repr=False)
class DifResult(Result):
    """Per-item logistic-regression DIF tests (see :func:`logistic_dif`).

    ``table`` columns: ``item``, ``n`` (responses), ``level`` (the group level whose uniform shift
    has the largest absolute z), ``estimate`` (that shift, log-odds, against the reference level),
    ``se``, ``statistic`` (likelihood-ratio chi-square, divided by ``dispersion`` when given),
    ``df``, ``p_value``, ``p_adjusted``, ``flagged`` (``p_adjusted < alpha``), and the fit of the
    item's full regression: ``pearson`` (Pearson chi-square) on ``resid_df`` degrees of freedom
    (their sums over items give a quasi-likelihood dispersion when rows are k-of-n counts).
    ``shifts`` has every level's uniform shift: ``item``, ``level``, ``estimate``, ``se``.
    """

    table: pd.DataFrame
    shifts: pd.DataFrame
    group: str
    reference: str
    kind: str
    adjust: str
    alpha: float

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def _title(self) -> str:
        return "Differential item functioning (logistic regression, Swaminathan-Rogers)"

    def _header(self) -> list[str]:
        what = "uniform" if self.kind == "uniform" else "uniform and non-uniform"
        return [f"group {self.group!r}, reference level {self.reference!r}; {what} DIF, likelihood-ratio tests",
                f"estimate: shift of the item's log-odds in 'level' at equal matching; "
                f"p_adjusted: {self.adjust} over items; flagged at {self.alpha:g}"]

    def _notes(self) -> list[str]:
        n = int(self.table["flagged"].sum()) if len(self.table) else 0
        return [f"{n} of {len(self.table)} items flagged"]


def _logit_fit(X: np.ndarray, k: np.ndarray, n: np.ndarray, off: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, float, float]:
    """Binomial logistic regression by Newton's method: coefficients, covariance, deviance.

    The deviance is ``-2 logLik`` without the binomial coefficients (they cancel in a
    likelihood-ratio statistic); the last value is the Pearson chi-square."""
    beta = np.zeros(X.shape[1])
    dev_old = math.inf
    cov = np.full((X.shape[1], X.shape[1]), np.nan)
    dev = math.inf
    for _ in range(_MAX_NEWTON):
        eta = X @ beta + off
        p = special.expit(eta)
        w = n * p * (1.0 - p)
        H = X.T @ (X * w[:, None])
        g = X.T @ (k - n * p)
        try:
            cov = np.linalg.pinv(H, hermitian=True)
        except np.linalg.LinAlgError:  # pragma: no cover - pinv converges on symmetric input
            break
        step = cov @ g
        t = 1.0
        while True:  # halve the step until the deviance does not rise
            cand = beta + t * step
            e2 = X @ cand + off
            dev = float(-2.0 * np.sum(k * -np.logaddexp(0.0, -e2) + (n - k) * -np.logaddexp(0.0, e2)))
            if dev <= dev_old + 1e-10 or t < 1e-8:
                break
            t /= 2.0
        beta = cand
        if abs(dev_old - dev) < 1e-10 * (1.0 + abs(dev)):
            break
        dev_old = dev
    eta = X @ beta + off
    p = special.expit(eta)
    H = X.T @ (X * (n * p * (1.0 - p))[:, None])
    cov = np.linalg.pinv(H, hermitian=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        pearson = float(np.sum(np.where(n * p * (1 - p) > 0, (k - n * p) ** 2 / (n * p * (1 - p)), 0.0)))
    return beta, cov, dev, pearson


def logistic_dif(data: pd.DataFrame, *, group: str, matching: str, item: str = "item",
                 outcome: str = "correct", trials: str | None = None, reference: object | None = None,
                 kind: DifKind = "uniform", adjust: str = "BH", alpha: float = 0.05,
                 dispersion: pd.Series | npt.ArrayLike | None = None, offset: str | None = None,
                 test: str = "lr") -> DifResult:
    """Swaminathan-Rogers logistic-regression DIF test of every item, adjusted over items.

    Parameters
    ----------
    data : DataFrame
        One row per response (or per k-of-n count with ``trials``): the item, the outcome, the
        group and the matching variable.
    group : str
        Column of the groups compared (e.g. a harness version); at least two levels.
    matching : str
        Numeric column of the matching variable: the examinee's ability (for evaluation runs, the
        model's ability estimated from every item, e.g. its fixed effect in a GLMM).
    item, outcome : str
        Columns of the item and of the 0/1 outcome (or the successes, with ``trials``).
    trials : str, optional
        Column of the attempts when ``outcome`` holds k-of-n successes.
    reference : optional
        Reference level of ``group`` (default: the first in sorted order).
    kind : {"uniform", "both"}
        ``"uniform"``: a shift of the item's log-odds per group (``df = levels - 1``); ``"both"``:
        Swaminathan and Rogers' simultaneous test of the shift and a change of slope (twice the df).
    adjust : str
        Adjustment of the per-item p-values over items (:func:`evalmix.adjust_pvalues`; BH default).
    alpha : float
        Items with ``p_adjusted < alpha`` are flagged.
    dispersion : Series or array, optional
        Per-item factor (>= 1) dividing each likelihood-ratio statistic: the variance of the
        group shift that the binomial model misses (shared run noise), as a quasi-likelihood test.
        A Series is matched on the item labels; an array follows the sorted items.
    offset : str, optional
        Numeric column added to every linear predictor with coefficient 1 (e.g. a group shift
        common to all items, so that the test is of the item's shift beyond it).
    test : {"lr", "score"}
        The likelihood-ratio test (R: ``anova(m0, m1, test = "Chisq")``) or Rao's score test
        (``test = "Rao"``), computed at the null fit: it needs no fit of the group terms, so an
        item that one group always solves gives a finite statistic, and it is closer to its
        nominal level with few examinees per group.

    Returns
    -------
    DifResult

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(1)
    >>> theta = rng.normal(size=40)
    >>> df = pd.DataFrame({"item": np.repeat(["q1", "q2", "q3"], 40), "ability": np.tile(theta, 3),
    ...                    "version": np.tile(np.repeat(["v1", "v2"], 20), 3)})
    >>> shift = np.where((df["item"] == "q3") & (df["version"] == "v2"), 3.0, 0.0)
    >>> df["correct"] = (rng.random(len(df)) < 1 / (1 + np.exp(-(df["ability"] + shift)))).astype(int)
    >>> res = logistic_dif(df, group="version", matching="ability")
    >>> res.to_frame()[["item", "df"]].to_dict("list")
    {'item': ['q1', 'q2', 'q3'], 'df': [1, 1, 1]}
    """
    kind = check_choice(kind, "kind", DIF_KINDS)
    test = check_choice(test, "test", ("lr", "score"))
    alpha = check_level(alpha, "alpha")
    data = at_the_door(data)  # polars, Arrow, DuckDB... as pandas
    need = [item, outcome, group, matching] + [c for c in (trials, offset) if c is not None]
    missing = [c for c in need if c not in data.columns]
    if missing:
        raise DataError(f"logistic_dif: column(s) {missing} not in the table; it has {list(data.columns)}")
    for c in need:
        if data[c].isna().any():
            row = data.index[np.flatnonzero(data[c].isna().to_numpy())[0]]
            raise DataError(f"logistic_dif: column {c!r} has a missing value in row {row}")
    x = pd.to_numeric(data[matching], errors="coerce").to_numpy(dtype=float)
    if not np.all(np.isfinite(x)):
        row = data.index[np.flatnonzero(~np.isfinite(x))[0]]
        raise DataError(f"logistic_dif: matching column {matching!r} is not a finite number in row {row}")
    off = data[offset].to_numpy(dtype=float) if offset is not None else np.zeros(len(data))
    k = data[outcome].to_numpy(dtype=float)
    n = data[trials].to_numpy(dtype=float) if trials is not None else np.ones(len(data))
    if np.any(k < 0) or np.any(k > n):
        raise DataError(f"logistic_dif: outcome column {outcome!r} must lie between 0 and "
                        f"{'the trials' if trials else '1'}")
    ref, others = reference_level(data[group], group, reference, "logistic_dif", "DIF compares groups")
    gcol = data[group].to_numpy()
    G = np.column_stack([(gcol == lv).astype(float) for lv in others])
    icodes, items = pd.factorize(data[item], sort=True)
    if dispersion is None:
        disp = np.ones(len(items))
    elif isinstance(dispersion, pd.Series):
        disp = dispersion.reindex(items).fillna(1.0).to_numpy(dtype=float)
    else:
        disp = np.asarray(dispersion, dtype=float)
        if disp.shape != (len(items),):
            raise DataError(f"logistic_dif: dispersion has {disp.size} values for {len(items)} items")
    if np.any(~np.isfinite(disp)) or np.any(disp <= 0):
        raise DataError("logistic_dif: dispersion must be positive and finite")
    order = np.argsort(icodes, kind="stable")
    bounds = np.searchsorted(icodes[order], np.arange(len(items) + 1))
    rows, shifts = [], []
    for j, label in enumerate(items):
        idx = order[bounds[j]:bounds[j + 1]]
        xj, gj = x[idx], G[idx]
        X0 = np.column_stack([np.ones(len(idx)), xj])
        X1 = np.column_stack([X0, gj] + ([gj * xj[:, None]] if kind == "both" else []))
        b0, _, d0, _ = _logit_fit(X0, k[idx], n[idx], off[idx])
        b1, c1, d1, pearson = _logit_fit(X1, k[idx], n[idx], off[idx])
        present = gj.sum(axis=0) > 0
        if test == "score":  # Rao: the score of the group terms at the null fit, its efficient information
            p0 = special.expit(X0 @ b0 + off[idx])
            Z = X1[:, 2:]
            w = n[idx] * p0 * (1 - p0)
            u = Z.T @ (k[idx] - n[idx] * p0)
            i00, i0z, izz = X0.T @ (X0 * w[:, None]), X0.T @ (Z * w[:, None]), Z.T @ (Z * w[:, None])
            eff = izz - i0z.T @ np.linalg.pinv(i00, hermitian=True) @ i0z
            raw = float(u @ np.linalg.pinv(eff, hermitian=True) @ u)
        else:
            raw = d0 - d1
        stat = max(raw, 0.0) / disp[j]
        df_j = int(present.sum()) * (2 if kind == "both" else 1)
        shift = b1[2:2 + len(others)]
        se = np.sqrt(np.clip(np.diag(c1)[2:2 + len(others)], 0.0, None))
        with np.errstate(divide="ignore", invalid="ignore"):
            z = np.where(present & (se > 0), np.abs(shift) / se, -1.0)
        best = int(np.argmax(z))
        shifts += [{"item": label, "level": str(lv), "estimate": float(shift[q]),
                    "se": float(se[q]) * math.sqrt(disp[j])} for q, lv in enumerate(others) if present[q]]
        rows.append({"item": label, "n": int(n[idx].sum()), "level": str(others[best]) if present.any() else "",
                     "estimate": float(shift[best]) if present.any() else math.nan,
                     "se": float(se[best]) * math.sqrt(disp[j]) if present.any() else math.nan,
                     "statistic": stat, "df": df_j,
                     "p_value": float(stats.chi2.sf(stat, df_j)) if df_j > 0 else math.nan,
                     "pearson": pearson, "resid_df": len(idx) - X1.shape[1]})
    table = pd.DataFrame(rows)
    table["p_adjusted"] = adjust_pvalues(table["p_value"].to_numpy(), adjust)
    table["flagged"] = table["p_adjusted"] < alpha
    table = table[["item", "n", "level", "estimate", "se", "statistic", "df", "p_value", "p_adjusted", "flagged",
                   "pearson", "resid_df"]]
    return DifResult(table=table, shifts=pd.DataFrame(shifts, columns=["item", "level", "estimate", "se"]),
                     group=group, reference=str(ref), kind=kind, adjust=adjust, alpha=alpha)

