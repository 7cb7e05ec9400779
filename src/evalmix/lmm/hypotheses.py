"""lmerTest's hypothesis matrices of the type III F tests of an lmer fit's terms.

Every basis of a term's hypothesis gives the same F and Kenward-Roger df, but not the same
Satterthwaite df: lmerTest's ``contestMD`` takes one df per eigen-direction of ``L V L'`` and
combines them, and the directions depend on the rows of ``L``.  So the rows are lmerTest's own
(``lmerTest:::get_contrasts_type3``):

- a model with one term: the term's rows of the Doolittle factor of ``X'X`` (type I rows,
  ``get_contrasts_type1``);
- otherwise, on the treatment-coded design ``Xt`` of the same formula, ``L = (Xt^+ rdX)'`` with
  ``rdX`` each term's full dummy coding (``model.matrix(~ 0 + term)``), each term's columns made
  orthogonal to those of the terms that contain it (``extract_contrasts_type3``); the rows are
  mapped to the fit's own coding by ``Xt^+ X`` where that is not treatment.

Terms that are not plain factors, numeric variables and their products (``I(x^2)``,
``poly(x, 2)``), a rank-deficient design or one without intercept get no rows here: their tests
select the term's coefficients, as car does.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..model import FixedDesign
from ..model.fixed import build_fixed

__all__ = ["doolittle_rows", "type3_hypotheses"]


def zapsmall(x: np.ndarray, digits: int = 7) -> np.ndarray:
    """R's ``zapsmall``: round to ``digits`` significant digits of the largest entry."""
    mx = float(np.max(np.abs(x))) if x.size else 0.0
    if not mx > 0:
        return x
    return np.round(x, max(0, digits - int(np.ceil(np.log10(mx)))))


def doolittle_rows(xtx: np.ndarray, columns: list[int]) -> np.ndarray:
    """Rows ``columns`` of the unit upper-triangular ``U`` of ``X'X = U' D U`` (the transposed
    Doolittle factor lmerTest's ``get_contrasts_type1`` takes).

    Examples
    --------
    >>> doolittle_rows(np.array([[4.0, 2.0], [2.0, 3.0]]), [0]).tolist()
    [[1.0, 0.5]]
    """
    C = np.linalg.cholesky(xtx)
    return (C.T / np.diag(C)[:, None])[columns]


def _dummies(design: FixedDesign, data: pd.DataFrame, term: str) -> dict[str, np.ndarray] | None:
    """``model.matrix(~ 0 + term)``: every level combination of the term's factors (the first
    varying fastest) times its numeric variables, by R's column names; None for a term that is
    not a product of plain variables."""
    cols: dict[str, np.ndarray] = {"": np.ones(len(data))}
    for var in term.split(":"):
        if var in design.factors:
            values = data[var].astype(str).to_numpy()
            cols = {f"{name}:{var}{lev}" if name else f"{var}{lev}": col * (values == str(lev))
                    for lev in design.factors[var] for name, col in cols.items()}
        elif var in design.covariates and var in data.columns:
            x = pd.to_numeric(data[var], errors="coerce").to_numpy(dtype=float)
            cols = {f"{name}:{var}" if name else var: col * x for name, col in cols.items()}
        else:
            return None
    return cols


def type3_hypotheses(design: FixedDesign, data: pd.DataFrame, X: np.ndarray
                     ) -> dict[str, np.ndarray] | None:
    """lmerTest's hypothesis rows of each term of the fixed part (see the module's notes), or
    None where the design is not one it covers.

    ``data`` holds the fitted rows and ``X`` their fixed-effects matrix in the fit's coding.

    Examples
    --------
    >>> d = pd.DataFrame({"a": list("xyzxyzxy"), "v": [1.0, 2.0, 0.0, 1.0, 3.0, 2.0, 5.0, 1.0]})
    >>> fd, X = build_fixed("a", d)
    >>> type3_hypotheses(fd, d, X)["a"].round(3).tolist()
    [[0.0, 1.0, -0.4], [0.0, 0.0, 1.0]]
    """
    terms = list(dict.fromkeys(t for t in design.column_terms if t != "(Intercept)"))
    if "(Intercept)" not in design.column_terms or design.keep is not None or not terms:
        return None
    X = np.asarray(X, dtype=float)
    if len(terms) == 1:
        rows = doolittle_rows(X.T @ X, [j for j, t in enumerate(design.column_terms) if t == terms[0]])
        return {terms[0]: rows}
    parts = {t: _dummies(design, data, t) for t in terms}
    if any(p is None for p in parts.values()) or set(terms) != set(design.terms):
        return None
    treatment = {f: "treatment" for f in design.factors}
    if all(design.contrasts.get(f, "treatment") == "treatment" for f in design.factors):
        Xt, t_design = X, design
    else:
        t_design, Xt = build_fixed(design.formula, data, contrasts=treatment)
        if list(t_design.column_terms) != list(design.column_terms):
            return None
    Xt = np.asarray(Xt, dtype=float)
    if np.linalg.matrix_rank(Xt) < Xt.shape[1]:
        return None
    names = ["(Intercept)"] + [n for t in terms for n in parts[t]]  # type: ignore[union-attr]
    rdX = np.column_stack([np.ones(len(data))] + [c for t in terms for c in parts[t].values()])  # type: ignore[union-attr]
    Xt_pinv = np.linalg.pinv(Xt)
    L = zapsmall((Xt_pinv @ rdX).T)  # rdX columns x Xt columns
    idx = {t: [j for j, c in enumerate(t_design.column_terms) if c == t] for t in terms}
    variables = {t: set(t.split(":")) for t in terms}
    numeric = {t: {v for v in variables[t] if v not in design.factors} for t in terms}
    order = sorted(terms, key=lambda t: -len(variables[t]))  # highest order first, stable
    for t in order:
        holders = [u for u in terms if variables[t] < variables[u] and numeric[t] == numeric[u]]
        if holders:
            A = L[:, [j for u in holders for j in idx[u]]]
            B = L[:, idx[t]]
            L[:, idx[t]] = zapsmall(B - A @ np.linalg.lstsq(A, B, rcond=None)[0])
    where = {n: i for i, n in enumerate(names)}
    if any(c not in where for c in t_design.columns):
        return None
    L = L[[where[c] for c in t_design.columns]]  # square: one row per column of Xt
    mapping = None if Xt is X else zapsmall(Xt_pinv @ X)
    out = {}
    for t in terms:
        rows = L[:, idx[t]].T
        rows = rows[np.abs(rows).sum(axis=1) > 1e-8]
        out[t] = rows if mapping is None else rows @ mapping
    return out
