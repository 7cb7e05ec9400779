"""Random-effects terms after meeting the data, each owning its theta/Lambda layout (lme4's
``reTrms``, MixedModels.jl's ``ReMat``).

The random-effects design follows lme4's ``mkReTrms``: terms sorted by decreasing number of levels,
columns level-major within a term, one lower-triangular relative covariance factor per term.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..core.errors import DataError, FormulaError
from .functions import (alias_calls, apply_contrasts, as_r_factor, formula_factor_parts, formula_factors,
                        level_where, r_context, r_factor, r_names, translate_terms)
from .parse import RandomSpec

if TYPE_CHECKING:
    from formulaic import ModelSpec
    from numpy.typing import ArrayLike

__all__ = ["RandomTerm", "ThetaLayout", "build_random_terms", "group_codes_for", "lower_triangle", "random_columns",
           "random_expression", "split_theta", "term_lambdas"]


@dataclass(frozen=True)
class RandomTerm:
    """One random-effects term after meeting the data (lme4's ``reTrms`` piece).

    ``index`` holds each row's level (0-based), ``Z`` the row covariates (n x nc), ``levels`` the
    level labels, ``cnames`` the column names (``(Intercept)``, ``x``...).

    A value, as :class:`evalmix.model.FixedDesign` is: attributes cannot be reassigned
    (``dataclasses.replace`` makes a changed copy) and ``index`` and ``Z`` are read-only views, so
    a fit's terms cannot drift from the data they were built from (the arrays given stay the
    caller's to change).

    Examples
    --------
    >>> import dataclasses
    >>> t = RandomTerm("g", "1", ["(Intercept)"], ["a", "b"], np.array([0, 1, 1]), np.ones((3, 1)))
    >>> t.nl, t.index.flags.writeable
    (2, False)
    >>> dataclasses.replace(t, levels=["x", "y"]).levels
    ['x', 'y']
    """

    group: str
    expr: str
    cnames: list[str]
    levels: list[str]
    index: np.ndarray
    Z: np.ndarray
    columns: tuple[str, ...] = ()
    spec: ModelSpec | None = None  # formulaic spec of ``expr`` (None for an intercept)
    factors: dict[str, list[Any]] = field(default_factory=dict)  # factor() columns -> levels
    context: dict[str, Any] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for name in ("index", "Z"):
            view = np.asarray(getattr(self, name)).view()
            view.flags.writeable = False
            object.__setattr__(self, name, view)

    def model_rows(self, newdata: pd.DataFrame) -> np.ndarray:
        """Random-effect covariates of new rows (ones for an intercept-only term)."""
        if self.spec is None:
            return np.ones((len(newdata), 1))
        nd = newdata
        if self.factors:
            nd = newdata.copy()
            for name, levels in self.factors.items():
                vals = nd[name].astype(object) if isinstance(nd[name].dtype, pd.CategoricalDtype) \
                    else nd[name]
                nd[name] = pd.Categorical(vals, categories=levels)
        return np.asarray(self.spec.get_model_matrix(nd, context=self.context or r_context()),
                          dtype=float)

    @property
    def nc(self) -> int:
        return self.Z.shape[1]

    @property
    def nl(self) -> int:
        return len(self.levels)

    # -- the theta layout (lme4's ``Lind``; MixedModels.jl's ``ReMat``): this term owns it ---------
    # theta holds the lower triangle of the term's Cholesky factor Lambda (nc x nc) column by
    # column, as lme4 does; every user (deviance, solvers, profiles, variance components, the
    # boundary probes) reads the layout from here.

    @property
    def theta_pairs(self) -> list[tuple[int, int]]:
        """``(row, column)`` of Lambda for each theta of this term, in theta's order.

        Examples
        --------
        >>> t = RandomTerm("g", "1 + x", ["(Intercept)", "x"], ["a", "b"], np.zeros(2, int),
        ...                np.ones((2, 2)))
        >>> t.theta_pairs, t.theta_size
        ([(0, 0), (1, 0), (1, 1)], 3)
        """
        return [(i, j) for j in range(self.nc) for i in range(j, self.nc)]

    @property
    def cor_pairs(self) -> list[tuple[int, int]]:
        """``(i, j)``, ``i > j``, of each correlation of the term, in lme4's ``VarCorr`` order."""
        return [(i, j) for j in range(self.nc) for i in range(j + 1, self.nc)]

    @property
    def theta_size(self) -> int:
        """Number of theta of this term: ``nc (nc + 1) / 2``."""
        return self.nc * (self.nc + 1) // 2

    @property
    def ntheta(self) -> int:
        return self.theta_size

    @property
    def theta_lower(self) -> np.ndarray:
        """lme4's lower bounds: 0 for a diagonal element of Lambda, ``-inf`` below it."""
        return np.array([0.0 if i == j else -np.inf for i, j in self.theta_pairs])

    @property
    def theta_start(self) -> np.ndarray:
        """lme4's starting theta: Lambda = I."""
        return np.array([1.0 if i == j else 0.0 for i, j in self.theta_pairs])

    def lambda_(self, theta: ArrayLike) -> np.ndarray:
        """Lambda (nc x nc, lower triangular) from this term's ``theta_size`` values.

        Examples
        --------
        >>> t = RandomTerm("g", "1 + x", ["(Intercept)", "x"], ["a", "b"], np.zeros(2, int),
        ...                np.ones((2, 2)))
        >>> t.lambda_([1.0, 0.5, 2.0]).tolist()
        [[1.0, 0.0], [0.5, 2.0]]
        >>> t.theta_from_cov(t.lambda_([1.0, 0.5, 2.0]) @ t.lambda_([1.0, 0.5, 2.0]).T).tolist()
        [1.0, 0.5, 2.0]
        """
        th = np.asarray(theta, dtype=float).ravel()
        if th.size != self.theta_size:
            raise ValueError(f"term ({self.expr} | {self.group}) takes {self.theta_size} theta "
                             f"values, got {th.size}")
        L = np.zeros((self.nc, self.nc))
        rows, cols = zip(*self.theta_pairs)
        L[list(rows), list(cols)] = th
        return L

    def theta_from_lambda(self, L: np.ndarray) -> np.ndarray:
        """This term's theta from a lower-triangular Lambda (the inverse of :meth:`lambda_`)."""
        L = np.asarray(L, dtype=float)
        return np.array([L[i, j] for i, j in self.theta_pairs])

    def theta_from_cov(self, cov: ArrayLike) -> np.ndarray:
        """Theta of a covariance matrix of the random effects (binomial: no residual scale):
        its Cholesky factor, diagonal made non-negative; a singular matrix gives the factor of
        the nearest positive semi-definite one along its zero directions."""
        S = np.atleast_2d(np.asarray(cov, dtype=float))
        if S.shape != (self.nc, self.nc):
            raise ValueError(f"term ({self.expr} | {self.group}) has a {self.nc} x {self.nc} "
                             f"covariance, got shape {S.shape}")
        try:
            L = np.linalg.cholesky(S)
        except np.linalg.LinAlgError:
            w, V = np.linalg.eigh((S + S.T) / 2)
            _, R = np.linalg.qr((V * np.sqrt(np.clip(w, 0, None))).T)
            L = R.T
            L = L * np.where(np.diag(L) < 0, -1.0, 1.0)  # flip columns to a non-negative diagonal
        return self.theta_from_lambda(L)

    def lambda_row_slots(self, row: int) -> list[int]:
        """Positions (in this term's theta) of row ``row`` of Lambda: the row whose length is
        the standard deviation of random effect ``row``."""
        return [k for k, (i, _) in enumerate(self.theta_pairs) if i == row]

    @property
    def theta_names(self) -> list[str]:
        return [f"{self.group}.{self.cnames[i]}" if i == j
                else f"{self.group}.{self.cnames[i]}.{self.cnames[j]}"
                for i, j in self.theta_pairs]


class ThetaLayout:
    """θ of a model, term by term (a design with a ``terms`` list of :class:`RandomTerm` inherits
    it: the GLMM's and the linear mixed model's designs)."""

    terms: list[RandomTerm]

    @property
    def theta_lower(self) -> np.ndarray:
        """Lower bounds of θ, term by term (:attr:`RandomTerm.theta_lower`)."""
        return np.concatenate([t.theta_lower for t in self.terms])

    @property
    def theta_start(self) -> np.ndarray:
        """lme4's starting θ (each term's Λ = I)."""
        return np.concatenate([t.theta_start for t in self.terms])

    @property
    def theta_names(self) -> list[str]:
        return [n for t in self.terms for n in t.theta_names]


def lower_triangle(size: int) -> tuple[np.ndarray, np.ndarray]:
    """Row and column indices of the lower triangle of a ``size`` x ``size`` matrix, row by row:
    the packing of a covariance by its Cholesky factor (or its ``vech``) outside a random term,
    e.g. the item-parameter population of :func:`evalmix.fit_irt`.  A random term's own θ layout
    is :attr:`RandomTerm.theta_pairs` (column by column, as lme4's ``Lind``).

    Examples
    --------
    >>> rows, cols = lower_triangle(2)
    >>> list(zip(rows.tolist(), cols.tolist()))
    [(0, 0), (1, 0), (1, 1)]
    """
    return np.tril_indices(size)


def split_theta(terms: list[RandomTerm], theta: ArrayLike) -> list[np.ndarray]:
    """Each term's slice of the model's theta (terms in lme4's order)."""
    th = np.asarray(theta, dtype=float).ravel()
    want = sum(t.theta_size for t in terms)
    if th.size != want:
        raise ValueError(f"the random terms take {want} theta values, got {th.size}")
    out, pos = [], 0
    for t in terms:
        out.append(th[pos:pos + t.theta_size])
        pos += t.theta_size
    return out


def term_lambdas(terms: list[RandomTerm], theta: ArrayLike) -> list[np.ndarray]:
    """Lambda of each term from the model's theta (:meth:`RandomTerm.lambda_`)."""
    return [t.lambda_(th) for t, th in zip(terms, split_theta(terms, theta))]


def _group_index(cols: tuple[str, ...], data: pd.DataFrame, label: str) -> tuple[np.ndarray, list[str]]:
    codes = []
    labels = []
    for c in cols:
        s = data[c]
        # a categorical's own codes and levels: its unused levels drop out below with the unused
        # combinations (as_r_factor would first remove them, one more pass over the rows)
        cat = s.array if isinstance(s.dtype, pd.CategoricalDtype) else as_r_factor(s)
        codes.append(np.asarray(cat.codes, dtype=np.int64))
        # tolist() converts the categories at once (iterating an Arrow-backed index is per element)
        labels.append([str(v) for v in cat.categories.tolist()])
    if len(cols) == 1:
        code = codes[0]
    else:
        # interaction a:b: levels ordered with the first factor slowest, unused combinations dropped
        code = np.zeros(len(data), dtype=np.int64)
        for cd, lab in zip(codes, labels):
            code = code * len(lab) + cd
    size = int(np.prod([len(lab) for lab in labels], dtype=float))
    if len(code) and code.min() >= 0 and size <= 4 * len(code) + 1024:
        # the used codes by counting (O(rows + levels), no sort): the same as np.unique's
        used = np.bincount(code, minlength=size) > 0
        uniq = np.flatnonzero(used)
        inv = (np.cumsum(used) - 1)[code]
    else:
        uniq, inv = np.unique(code, return_inverse=True)
    if len(cols) == 1:
        names = [labels[0][u] for u in uniq]
    else:
        # each used combination's code per factor, the last factor fastest, as it was coded
        rest = uniq.copy()
        parts = []
        for lab in reversed(labels):
            parts.append(np.asarray(lab, dtype=object)[rest % len(lab)])
            rest //= len(lab)
        names = [":".join(t) for t in zip(*reversed(parts))]
    return inv.astype(np.int64), names


def group_codes_for(term: RandomTerm, newdata: pd.DataFrame) -> np.ndarray:
    """Index of each new row's level of ``term``'s grouping factor (-1 when unseen)."""
    for c in term.columns:
        if c not in newdata.columns:
            raise FormulaError(f"new data lacks grouping column {c!r} of {term.group!r}")
    labels = newdata[list(term.columns)].astype(str).agg(":".join, axis=1) \
        if len(term.columns) > 1 else newdata[term.columns[0]].astype(str)
    lookup = pd.Series(np.arange(term.nl), index=pd.Index(term.levels))
    return lookup.reindex(labels.to_numpy()).fillna(-1).to_numpy(dtype=np.int64)


def build_random_terms(specs: tuple[RandomSpec, ...], data: pd.DataFrame,
                       nobs: int | None = None) -> list[RandomTerm]:
    """Random-effects terms in lme4 order (decreasing number of levels, as ``mkReTrms``).

    ``nobs`` is the number of observations (rows before pooling; defaults to ``len(data)``).
    """
    nobs = len(data) if nobs is None else nobs
    from formulaic import model_matrix

    terms = []
    for sp in specs:
        _check_group_columns(sp, data)
        idx, levels = _group_index(sp.group, data, sp.group_label)
        if len(levels) < 2:
            raise DataError(f"grouping factor {sp.group_label!r} of random term ({sp.expr} | "
                            f"{sp.group_label}) has only one level; it must have > 1 sampled level")
        if len(levels) > nobs:  # glmer allows one level per observation (checkNlevels, allow.n)
            raise DataError(f"grouping factor {sp.group_label!r} has {len(levels)} levels for "
                            f"{nobs} observations; it must have at most one level per observation")
        spec = None
        rfactors: dict[str, list[Any]] = {}
        context: dict[str, Any] = {}
        if sp.expr.strip() == "1":
            # a column of ones; on large designs a read-only view of one value (8 bytes, not 8
            # per row: 320 MB at 40M rows)
            Z = np.ones((len(data), 1)) if len(data) < 1_000_000 else \
                np.broadcast_to(np.ones((1, 1)), (len(data), 1))
            cn = ["(Intercept)"]
        else:
            labels: dict[str, str] = {}
            text, frame, rfactors, context = _random_design(sp, data, labels)
            # the factors R names by level: those coded in the term and the other non-numeric
            # columns it reads (formulaic codes them with R's sorted levels)
            named = dict(rfactors)
            for v in formula_factors(text):  # also refuses what a formula may not evaluate
                if v in frame.columns and v not in named and (
                        not pd.api.types.is_numeric_dtype(frame[v])
                        or pd.api.types.is_bool_dtype(frame[v])):
                    named[v] = list(as_r_factor(frame[v]).categories)
            text, aliases = alias_calls(text, context)
            try:
                mm = model_matrix(text, frame, na_action="raise", context=context)
            except Exception as exc:
                raise FormulaError(f"cannot build random term ({sp.expr} | {sp.group_label}): "
                                   f"{exc}") from exc
            Z = np.asarray(mm, dtype=float)
            spec = mm.model_spec
            cn = r_names(spec, named, labels, aliases)[0]
            if Z.shape[1] == 0:
                raise FormulaError(f"random term ({sp.expr} | {sp.group_label}) has no columns")
        terms.append(RandomTerm(sp.group_label, sp.expr, cn, levels, idx, Z, sp.group, spec,
                                rfactors, context))
    nl = [t.nl for t in terms]
    if any(b > a for a, b in zip(nl, nl[1:])):
        # lme4: ord <- rev(order(nl)) (stable ascending order, reversed)
        order = list(reversed(sorted(range(len(nl)), key=lambda i: nl[i])))
        terms = [terms[i] for i in order]
    return terms


def random_expression(sp: RandomSpec) -> str:
    """The left side of a random term in formulaic syntax (``I(x^2)`` -> ``I(x**2)``, factor
    calls replaced by their column, which :func:`build_random_terms` codes as a factor)."""
    return translate_terms(sp.expr)[0]


def _random_design(sp: RandomSpec, data: pd.DataFrame, labels: dict[str, str] | None = None
                   ) -> tuple[str, pd.DataFrame, dict[str, list[Any]], dict[str, Any]]:
    """Formulaic text, data frame, factor levels and context of a random term's left side:
    ``factor(x)``, ``relevel()``, ``ordered()`` and ``C(x, ...)`` code ``x`` as R does
    (``labels`` receives the R call coding each variable, see :func:`translate_terms`)."""
    text, coded, specs = translate_terms(sp.expr, labels)
    context: dict[str, Any] = r_context()
    if not coded:
        return text, data, {}, context
    where = f"({sp.expr} | {sp.group_label})"
    parts = formula_factor_parts(text)
    frame = data.copy()
    factors: dict[str, list[Any]] = {}
    coding: dict[str, Any] = {}
    for c, kind in coded.items():
        if c not in data.columns:
            raise FormulaError(f"random term {where} names column {c!r} absent from the data")
        inside = [f for v, f in parts if v == c and f != c]
        if inside:
            raise FormulaError(f"{c!r} is a factor but the term {inside[0]!r} of {where} uses it "
                               "as a number")
        cat = r_factor(data[c], specs.get(c), level_where(sp.expr, c))
        frame[c] = cat
        factors[c] = list(cat.categories)
        coding[c] = "treatment" if kind is None else kind
    return apply_contrasts(text, coding, factors, context), frame, factors, context


def _check_group_columns(sp: RandomSpec, data: pd.DataFrame) -> None:
    """Every grouping factor of a random term is a column of the data (a FormulaError naming it)."""
    for c in sp.group:
        if c not in data.columns:
            raise FormulaError(f"grouping factor {c!r} of random term ({sp.expr} | "
                               f"{sp.group_label}) is not a column of the data")


def random_columns(specs: tuple[RandomSpec, ...], data: pd.DataFrame) -> list[str]:
    """Data columns a set of random terms reads (grouping factors and slope covariates)."""
    cols: list[str] = []
    for sp in specs:
        _check_group_columns(sp, data)
        for c in sp.group:
            if c not in cols:
                cols.append(c)
        if sp.expr.strip() not in ("1", "0", "-1"):
            for s in formula_factors(random_expression(sp)):
                if s not in cols:
                    if s not in data.columns:
                        raise FormulaError(f"random term ({sp.expr} | {sp.group_label}) names "
                                           f"column {s!r} absent from the data")
                    cols.append(s)
    return cols
