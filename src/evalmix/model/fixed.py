"""The fixed-effects design: X with R's codings and names, rebuilt on new data (lme4's ``X``).

A :class:`FixedDesign` is frozen: operations (:meth:`FixedDesign.with_columns`,
:meth:`FixedDesign.fitted_on`) return new designs, so a fit's design never changes after it is built.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from ..core.errors import FormulaError
from .functions import (alias_calls, apply_contrasts, contrast_kind, fixed_variables, formula_factor_parts,
                        formulaic_message, level_test, level_where, r_context, r_factor, r_names,
                        strip_contrasts, translate_fixed, translate_terms, unalias)

if TYPE_CHECKING:
    from formulaic import ModelSpec

__all__ = ["FixedDesign", "build_fixed", "independent_columns"]


@dataclass(frozen=True)
class FixedDesign:
    """The fixed-effects design of a fit, able to rebuild X for new data with the same coding.

    Attributes
    ----------
    terms : list of str
        Term labels of the fixed part in R order, without the intercept (a factor coded with
        non-default contrasts is labelled by its name: ``g``, ``g:x``).
    factors : dict
        Factor name -> levels in coding order (reference level first).
    covariates : dict
        Numeric variable name -> its mean in the fitted data (the variable itself, ``age``, also
        when the formula uses ``I(age^2)`` or ``poly(age, 2)``: grids hold the variable at its
        mean and evaluate the transformation there, as emmeans does).
    column_terms : list of str
        For each column of X, the term it belongs to (``"(Intercept)"`` for the intercept).
    columns : list of str
        Column names of X as R names the coefficients (``(Intercept)``, ``modelGPT-4o``,
        ``C(g, contr.sum)1``, ``o.L``, ``poly(age, 2)1``, ``I(age^2)``, ``factor(site)2:age``).
    contrasts : dict
        Factor name -> its coding (``"treatment"``, ``"sum"``, ``"poly"``, ``"helmert"`` or
        the matrix given).
    offsets : list of str
        Expressions of the formula's ``offset()`` terms.
    weights_data : DataFrame or None
        The factor columns of the fitted rows.
    """

    formula: str
    terms: list[str]
    factors: dict[str, list[Any]]
    covariates: dict[str, float]
    column_terms: list[str]
    columns: list[str]
    spec: ModelSpec = field(repr=False)
    weights_data: pd.DataFrame | None = field(default=None, repr=False)
    keep: list[int] | None = field(default=None, repr=False)  # columns kept (rank deficiency)
    contrasts: dict[str, Any] = field(default_factory=dict)
    offsets: list[str] = field(default_factory=list)
    context: dict[str, Any] = field(default_factory=dict, repr=False)
    offset_spec: ModelSpec | None = field(default=None, repr=False)
    offset_mean: float = 0.0  # mean of the offset (formula and argument) over the fitted rows
    #: each term's label as R prints it (``I(age^2)``, ``factor(site, levels = c(3, 1, 2))``),
    #: by the term's name in ``terms`` / ``column_terms``
    term_labels: dict[str, str] = field(default_factory=dict)
    #: formulaic's names of the columns (``model[T.b]``, ``I(age ** 2)``), parallel to ``columns``
    formulaic_columns: list[str] = field(default_factory=list)

    def term_label(self, term: str) -> str:
        """The label R prints for ``term`` (an entry of ``terms`` or ``column_terms``)."""
        return self.term_labels.get(term, term)

    def with_columns(self, keep: list[int]) -> FixedDesign:
        """The design restricted to the columns ``keep`` of X (aliased columns dropped); this one
        is left as it is.

        Examples
        --------
        >>> d = pd.DataFrame({"m": ["a", "b", "a", "b"], "x": [1.0, 2.0, 1.0, 2.0]})
        >>> fd = build_fixed("m + x", d)[0]
        >>> fd.with_columns([0, 1]).columns, fd.columns
        (['(Intercept)', 'mb'], ['(Intercept)', 'mb', 'x'])
        """
        base = self.keep if self.keep is not None else list(range(len(self.spec.column_names)))
        return dataclasses.replace(
            self, columns=[self.columns[j] for j in keep],
            column_terms=[self.column_terms[j] for j in keep],
            formulaic_columns=[self.formulaic_columns[j] for j in keep] if self.formulaic_columns else [],
            keep=[base[j] for j in keep])

    def fitted_on(self, rows: pd.DataFrame, offset_mean: float | None = None) -> FixedDesign:
        """The design with the covariate means and factor data of ``rows``, the fitted rows (a
        design built once per distinct pattern of the fixed-part columns is given the statistics
        of the rows it stands for); ``offset_mean`` the mean offset over them.

        Examples
        --------
        >>> d = pd.DataFrame({"m": ["a", "b"], "x": [1.0, 3.0]})
        >>> fd = build_fixed("m + x", d)[0]
        >>> rows = pd.DataFrame({"m": ["a", "b", "b"], "x": [1.0, 3.0, 3.0]})
        >>> fd.fitted_on(rows).covariates, fd.covariates
        ({'x': 2.3333333333333335}, {'x': 2.0})
        """
        return dataclasses.replace(
            self, covariates={c: float(rows[c].mean()) for c in self.covariates},
            weights_data=rows[list(self.factors)].reset_index(drop=True) if self.factors else None,
            offset_mean=self.offset_mean if offset_mean is None else float(offset_mean))

    def _coerce(self, newdata: pd.DataFrame) -> pd.DataFrame:
        nd = newdata.copy()
        needed = list(self.factors) + list(self.covariates)
        missing = [c for c in needed if c not in nd.columns]
        if missing:
            raise FormulaError(f"new data lacks column(s) {missing} used by the fixed part")
        for name, levels in self.factors.items():
            vals = nd[name]
            if isinstance(vals.dtype, pd.CategoricalDtype):
                vals = vals.astype(object)
            bad = ~pd.Series(vals).isin(levels).to_numpy()
            if bad.any():
                raise FormulaError(f"column {name!r} has level {pd.Series(vals)[bad].iloc[0]!r} "
                                   f"not seen in the fitted data (levels: {levels})")
            nd[name] = pd.Categorical(vals, categories=levels)
        return nd

    def _matrix(self, spec: ModelSpec, nd: pd.DataFrame) -> np.ndarray:
        try:
            return np.asarray(spec.get_model_matrix(nd, na_action="ignore", context=self.context),
                              dtype=float)
        except Exception as exc:
            raise FormulaError(f"cannot evaluate the fixed part {self.formula!r} on new data: "
                               f"{exc}") from exc

    def full_model_matrix(self, newdata: pd.DataFrame) -> np.ndarray:
        """Rows of X for ``newdata`` with every column, before any aliased one was dropped."""
        return self._matrix(self.spec, self._coerce(newdata))

    def model_matrix(self, newdata: pd.DataFrame) -> np.ndarray:
        """Rows of X for ``newdata`` with the fitted coding.

        Examples
        --------
        >>> import pandas as pd
        >>> d = pd.DataFrame({"m": ["a", "b", "a", "b"], "y": [0, 1, 1, 1]})
        >>> fd = build_fixed("m", d)[0]
        >>> fd.model_matrix(pd.DataFrame({"m": ["b"]})).tolist()
        [[1.0, 1.0]]
        """
        X = self.full_model_matrix(newdata)
        return X if self.keep is None else X[:, self.keep]

    def offset(self, newdata: pd.DataFrame) -> np.ndarray:
        """The formula's ``offset()`` terms evaluated on ``newdata`` (zeros without any)."""
        if self.offset_spec is None:
            return np.zeros(len(newdata))
        return self._matrix(self.offset_spec, self._coerce(newdata)).sum(axis=1)


def build_fixed(fixed: str, data: pd.DataFrame, contrasts: dict[str, Any] | None = None,
                offsets: tuple[str, ...] = ()) -> tuple[FixedDesign, np.ndarray]:
    """Build the fixed-effects matrix of an R formula's fixed part with R's codings.

    String, boolean and categorical columns, and columns wrapped in ``factor()``, are factors
    (levels as R's ``factor()`` sorts them; a categorical keeps its order); every other numeric
    column is a covariate, as in R. Factors get treatment contrasts, ordered categoricals
    ``contr.poly``, unless ``contrasts`` (``{"x": "contr.sum"}``, or a levels x k matrix) or
    ``C(x, ...)`` in the formula says otherwise.

    Returns the :class:`FixedDesign` and X (float array, rows of ``data``).
    """
    from formulaic import model_matrix

    labels: dict[str, str] = {}
    text, coded, specs = translate_terms(fixed, labels)
    parts = formula_factor_parts(text)
    variables = fixed_variables(fixed, offsets)
    missing = [c for c in variables if c not in data.columns]
    if missing:
        raise FormulaError(f"fixed-effect term(s) name column(s) {missing} absent from the data "
                           f"(columns: {list(data.columns)})")
    contrasts = {k: contrast_kind(v, f"contrasts[{k!r}]") for k, v in (contrasts or {}).items()}
    for c in contrasts:
        if c not in variables:
            raise FormulaError(f"contrasts names {c!r}, which is not a variable of the fixed part "
                               f"(variables: {variables})")
    d = data[variables].copy()
    factors: dict[str, list[Any]] = {}
    covariates: dict[str, float] = {}
    coding: dict[str, Any] = {}
    context: dict[str, Any] = r_context()
    for c in variables:
        s = d[c]
        categorical = isinstance(s.dtype, pd.CategoricalDtype)
        numeric = pd.api.types.is_numeric_dtype(s) and not pd.api.types.is_bool_dtype(s) \
            and not categorical
        if c in coded or c in contrasts or not numeric:
            if c not in coded and numeric:
                raise FormulaError(f"contrasts given for numeric column {c!r}; write factor({c}) "
                                   "in the formula to code it as a factor")
            inside = [f for v, f in parts if v == c and f != c and not level_test(f, c)]
            if inside:
                raise FormulaError(f"{c!r} is a factor but the term {inside[0]!r} uses it as a "
                                   "number; a factor can only appear on its own, in C() or "
                                   f"compared with a level (I({c} == 'b'))")
            cat = r_factor(s, specs.get(c), level_where(fixed, c))
            d[c] = cat
            factors[c] = list(cat.categories)
            ordered = isinstance(s.dtype, pd.CategoricalDtype) and bool(s.dtype.ordered)
            kind = contrasts.get(c, coded.get(c))
            if kind is None:
                kind = "poly" if ordered else "treatment"
            coding[c] = kind
        else:
            covariates[c] = float(s.mean())
    text = apply_contrasts(text, coding, factors, context)
    text, aliases = alias_calls(text, context)
    try:
        mm = model_matrix(text, d, na_action="raise", context=context)
    except Exception as exc:  # formulaic's errors name the failing factor
        raise FormulaError(f"cannot build the fixed part {fixed!r}: {formulaic_message(exc)}") from exc
    spec = mm.model_spec
    column_terms: list[str] = []
    terms: list[str] = []
    for st in spec.structure:
        label = strip_contrasts(unalias(str(st.term), aliases))
        lab = "(Intercept)" if label == "1" else label
        if label != "1":
            terms.append(label)
        column_terms += [lab] * len(st.columns)
    X = np.ascontiguousarray(np.asarray(mm, dtype=float))
    columns, term_labels = r_names(spec, factors, labels, aliases)
    formulaic_columns = [strip_contrasts(unalias(str(c), aliases)) for c in spec.column_names]
    wd = d[list(factors)].reset_index(drop=True) if factors else None
    offset_spec = None
    if offsets:
        otext = " + ".join(f"I({translate_fixed(o)[0]})" for o in offsets)
        otext = alias_calls(otext, context)[0]
        try:
            om = model_matrix(f"0 + {otext}", d, na_action="raise", context=context)
        except Exception as exc:
            raise FormulaError(f"cannot evaluate offset({', '.join(offsets)}): {exc}") from exc
        if om.shape[1] != len(offsets):
            raise FormulaError(f"offset({', '.join(offsets)}) must be numeric, one value per row")
        offset_spec = om.model_spec
    fd = FixedDesign(fixed, terms, factors, covariates, column_terms, columns, spec, wd,
                     contrasts=coding, offsets=list(offsets), context=context, offset_spec=offset_spec,
                     term_labels=term_labels, formulaic_columns=formulaic_columns)
    return fd, X


def independent_columns(A: np.ndarray, rtol: float = 1e-7) -> list[int]:
    """Indices of a maximal set of linearly independent columns of ``A``, earliest first (the
    columns lme4 keeps of a rank-deficient X, ``chkRank.drop.cols``): Gram-Schmidt with one
    re-orthogonalisation, a column kept when its residual exceeds ``rtol`` times its norm.

    Examples
    --------
    >>> independent_columns(np.array([[1.0, 2.0, 0.0], [1.0, 2.0, 1.0]]))
    [0, 2]
    """
    keep: list[int] = []
    Q = np.zeros((A.shape[0], 0))
    for j in range(A.shape[1]):
        x = A[:, j]
        nrm = np.linalg.norm(x)
        r = x - Q @ (Q.T @ x) if Q.shape[1] else x.copy()
        r = r - Q @ (Q.T @ r) if Q.shape[1] else r
        rn = np.linalg.norm(r)
        if nrm > 0 and rn > rtol * nrm:
            keep.append(j)
            Q = np.column_stack([Q, r / rn])
    return keep
