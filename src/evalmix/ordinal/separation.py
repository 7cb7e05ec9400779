"""Separation in a cumulative-link model: fixed effects or thresholds whose maximum-likelihood
estimates are infinite.

A rating ``y_i = j`` has likelihood ``F(theta_j - eta_i) - F(theta_{j-1} - eta_i)``. Along a
direction ``(t, d)`` of the thresholds and the coefficients, that likelihood never falls in the
limit when ``t_j - x_i'd >= 0`` (for ``j`` below the top category) and ``t_{j-1} - x_i'd <= 0``
(above the bottom one), the thresholds staying ordered (``t_{j+1} >= t_j``).  A direction that
meets every such constraint with one of them strict makes the likelihood rise without bound: the
ordinal analogue of Albert and Anderson's separation, found by the linear program of Konis (2007)
(maximise the sum of the constraints' slacks, ``-1 <= (t, d) <= 1``), as in
:mod:`evalmix.mixed.separation`.  Random intercepts are penalised and cannot create or remove it.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
from scipy.optimize import linprog

__all__ = ["ordinal_separation"]


def ordinal_separation(X: np.ndarray, y: np.ndarray, n_cat: int, tol: float = 1e-4
                       ) -> tuple[np.ndarray, np.ndarray] | None:
    """The rows fitted perfectly in the limit and the direction of the coefficients, or None.

    Parameters
    ----------
    X : (n, p) array
        The fixed effects without the intercept (the thresholds take its place).
    y : (n,) int array
        Categories coded 0 .. n_cat - 1.
    n_cat : int
        Number of categories.

    Returns
    -------
    (rows, direction) or None
        ``rows``: bool (n,), the ratings whose probability goes to 1 in the limit;
        ``direction``: (p,) the coefficients' direction (0 where they stay finite).

    Examples
    --------
    >>> X = np.array([[0.0], [0.0], [0.0], [1.0], [1.0]])
    >>> rows, d = ordinal_separation(X, np.array([0, 1, 2, 2, 2]), 3)
    >>> rows.tolist(), bool(d[0] > 0)
    ([False, False, False, True, True], True)
    """
    X = np.asarray(X, dtype=float)
    n, p = X.shape
    nt = n_cat - 1
    if p == 0 or nt < 1:
        return None
    # distinct (x, category) patterns: the constraints do not grow with repeated rows
    keyed = np.column_stack([X, y])
    uniq, inv, cnt = np.unique(keyed, axis=0, return_inverse=True, return_counts=True)
    inv = inv.ravel()
    Xu, yu = uniq[:, :p], uniq[:, p].astype(np.int64)
    rows_a, rows_b = [], []          # "t_j - x'd >= 0", "x'd - t_{j-1} >= 0"
    owner_a, owner_b = [], []
    for r in range(len(yu)):
        j = yu[r]
        if j < nt:
            row = np.zeros(nt + p)
            row[j], row[nt:] = 1.0, -Xu[r]
            rows_a.append(row)
            owner_a.append(r)
        if j > 0:
            row = np.zeros(nt + p)
            row[j - 1], row[nt:] = -1.0, Xu[r]
            rows_b.append(row)
            owner_b.append(r)
    A = np.array(rows_a + rows_b).reshape(-1, nt + p)
    owner = np.array(owner_a + owner_b, dtype=np.int64)
    weight = cnt[owner].astype(float)
    order = np.zeros((max(nt - 1, 0), nt + p))      # t_{j+1} - t_j >= 0
    for j in range(nt - 1):
        order[j, j], order[j, j + 1] = -1.0, 1.0
    G = np.vstack([A, order])
    res = linprog(-(weight @ A), A_ub=-G, b_ub=np.zeros(len(G)), bounds=[(-1, 1)] * (nt + p), method="highs")
    if res.status != 0:
        return None
    slack = A @ res.x
    if not (slack > tol).any():
        return None
    d = res.x[nt:]
    # the largest set of constraints some direction meets strictly: max sum(s), A x >= s, 0 <= s <= 1
    r, q = A.shape
    c = np.concatenate([np.zeros(q), -np.ones(r)])
    A2 = np.vstack([np.hstack([-A, np.eye(r)]), np.hstack([-order, np.zeros((len(order), r))])])
    res2 = linprog(c, A_ub=A2, b_ub=np.zeros(len(A2)), bounds=[(None, None)] * q + [(0, 1)] * r, method="highs")
    strict = res2.x[q:] > 0.5 if res2.status == 0 else slack > tol
    hit = np.zeros(len(yu), dtype=bool)
    hit[owner[strict | (slack > tol)]] = True
    return hit[inv], np.where(np.abs(d) > tol, d, 0.0)


def describe_separation(data: pd.DataFrame, cols: list[str], response: str, levels: list, y: np.ndarray,
                        rows: np.ndarray, limit: int = 6) -> str:
    """The separated ratings by their predictor values: "model = 'b': every rating is '4' (30 rows)"."""
    parts = []
    # every row of the predictor values that hold a separated rating: the categories they keep to
    if cols:
        hit = pd.MultiIndex.from_frame(data[cols]).isin(pd.MultiIndex.from_frame(data.loc[rows, cols]))
        sub = data.loc[hit, cols].assign(__y=y[hit])
    else:
        sub = pd.DataFrame({"__y": y})
    groups = sub.groupby(cols, sort=True, dropna=False) if cols else [((), sub)]
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        cats = sorted(set(g["__y"].tolist()))
        where = ", ".join(f"{c} = {_py(v)!r}" for c, v in zip(cols, key))
        got = (f"every {response} is {levels[cats[0]]!r}" if len(cats) == 1
               else f"every {response} is in {[levels[c] for c in cats]!r}")
        parts.append(f"{where or 'all rows'}: {got} ({len(g)} rows)")
    more = f"; and {len(parts) - limit} more" if len(parts) > limit else ""
    return "; ".join(parts[:limit]) + more


def _py(v: object) -> object:
    return v.item() if hasattr(v, "item") else v
