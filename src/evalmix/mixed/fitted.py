"""What inference needs from a fitted model, declared once: the fitted-model protocol and the Wald
algebra of linear functions of the coefficients.

Every engine (:func:`evalmix.glmer`, :func:`evalmix.bayes.glmer`, and any future one) satisfies
:class:`FittedModel`; marginal means, contrasts, type-III tests and rank intervals read a fit only
through it.  :func:`linear_functions` and :func:`wald_test` are the one place where ``L beta``,
``L V L'`` and the Wald chi-square are computed; :func:`linear_hypothesis` (and every fit's
``wald_test`` method) tests hypotheses written over the coefficient names through them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import pandas as pd

from ..core.result import Result, Summary
from ..core.errors import ArgumentError

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..model import FixedDesign

__all__ = ["Coefficients", "DfMethod", "FittedModel", "LinearHypothesis", "MixedFit", "PosteriorFit",
           "SeparationLimit", "VarCorrFit", "coefficients", "df_method", "hypothesis_matrix",
           "linear_functions", "linear_hypothesis", "wald_test", "wald_z_table", "warn_divergent"]


@runtime_checkable
class FittedModel(Protocol):
    """A fit by maximum likelihood, as inference reads it.

    Attributes
    ----------
    fixef : pandas.Series
        Fixed-effect estimates, indexed by coefficient name (the columns of the fixed design).
    vcov : pandas.DataFrame
        Their covariance matrix, rows and columns named as ``fixef``.
    link : str
        The link function (``"logit"``, ``"probit"``, ``"cloglog"`` or ``"identity"``).
    fixed_design : object
        The fixed-effects design: ``columns``, ``column_terms``, ``factors``, ``covariates`` and
        ``model_matrix(frame)`` rebuilding X for a reference grid
        (:class:`evalmix.model.FixedDesign`).
    """

    @property
    def fixef(self) -> pd.Series: ...

    @property
    def vcov(self) -> pd.DataFrame: ...

    @property
    def link(self) -> str: ...

    @property
    def fixed_design(self) -> FixedDesign: ...


@runtime_checkable
class PosteriorFit(Protocol):
    """A Bayesian fit: posterior draws of the fixed effects instead of ``vcov``."""

    @property
    def fixef_draws(self) -> pd.DataFrame: ...

    @property
    def link(self) -> str: ...

    @property
    def fixed_design(self) -> FixedDesign: ...


@runtime_checkable
class VarCorrFit(Protocol):
    """A fit that reports its variance components (``group``, ``var1``, ``var2``, ``variance``,
    ``sd``): :class:`evalmix.GlmerResult`, :class:`evalmix.bayes.BayesGlmerResult`."""

    @property
    def varcorr(self) -> pd.DataFrame: ...


@runtime_checkable
class MixedFit(FittedModel, VarCorrFit, Protocol):
    """A mixed model as the study functions read it: fixed effects and variance components."""


class SeparationLimit(Protocol):
    """The limit of a separated fit, as inference reads it (:class:`evalmix.mixed.separation.Separation`):
    the finite parametrisation of the limit and which linear functions diverge."""

    @property
    def beta_limit(self) -> np.ndarray | None: ...

    @property
    def vcov_limit(self) -> np.ndarray | None: ...

    def classify(self, L: np.ndarray, tol: float = ...) -> np.ndarray: ...

    def combine(self, L: np.ndarray, beta: np.ndarray | None = ..., V: np.ndarray | None = ...
                ) -> tuple[np.ndarray, np.ndarray]: ...


class DfMethod(Protocol):
    """Finite denominator degrees of freedom of a fit's Wald tests (linear mixed models:
    Satterthwaite, Kenward-Roger), as inference reads them.

    ``vcov`` is the covariance the tests use (Kenward-Roger adjusts it); ``df(L)`` gives the df
    of each row of ``L`` (a t test of ``L beta``); ``f_test(L, beta)`` the F statistic, numerator
    and denominator df and p-value of ``L beta = 0``.
    """

    @property
    def name(self) -> str: ...

    @property
    def vcov(self) -> np.ndarray: ...

    def df(self, L: np.ndarray) -> np.ndarray: ...

    def f_test(self, L: np.ndarray, beta: np.ndarray) -> tuple[float, int, float, float]: ...


@dataclass(frozen=True)
class ResidualDf:
    """One finite df for every test of a fit: the residual df (``nobs - df``), which emmeans gives
    the means and contrasts of a glmmTMB fit (its ``df.residual``), where car's type-III tests stay
    chi-square.

    Examples
    --------
    >>> rd = ResidualDf(50, np.eye(2))
    >>> rd.df(np.eye(2)).tolist(), rd.name
    ([50.0, 50.0], 'df.residual')
    """

    residual_df: float
    vcov: np.ndarray
    name: str = "df.residual"

    def df(self, L: np.ndarray) -> np.ndarray:
        return np.full(np.atleast_2d(L).shape[0], float(self.residual_df))

    def f_test(self, L: np.ndarray, beta: np.ndarray) -> tuple[float, int, float, float]:
        from scipy import stats

        L = np.atleast_2d(L)
        chisq, q, _ = wald_test(L, beta, self.vcov)
        F = chisq / q
        return float(F), int(q), float(self.residual_df), float(stats.f.sf(F, q, self.residual_df))


def df_method(fit: object, ddf: str | None = None) -> DfMethod | None:
    """The denominator-df method of a fit (its ``df_method(ddf)``), or None for a fit whose tests
    are asymptotic (z and chi-square, df = Inf: binomial GLMMs).

    ``ddf`` names the method (``"Satterthwaite"``, the default, or ``"Kenward-Roger"``); giving it
    for a fit without finite df is a ValueError.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> df_method(SimpleNamespace(fixef=None)) is None
    True
    """
    getter = getattr(fit, "df_method", None)
    if getter is None:
        if ddf is not None:
            raise ValueError(f"ddf={ddf!r} applies to linear mixed models (evalmix.lmer); this "
                             f"{type(fit).__name__} is tested with asymptotic z statistics "
                             "(df = Inf)")
        return None
    return getter(ddf)


@dataclass(frozen=True, repr=False)
class Coefficients:
    """The coefficients of a fit: ``beta`` and ``vcov`` (maximum likelihood) or ``draws``."""

    names: tuple[str, ...]
    beta: np.ndarray | None
    vcov: np.ndarray | None
    draws: np.ndarray | None
    # a separated fit (its ``separation``): beta and vcov are then the finite parametrisation of
    # its limit, and ``separation.combine`` maps a linear function to +-inf where it diverges
    separation: SeparationLimit | None = None

    @property
    def is_posterior(self) -> bool:
        return self.draws is not None

    @property
    def normal(self) -> tuple[np.ndarray, np.ndarray]:
        """``(beta, vcov)``; a TypeError for coefficients read as posterior draws only."""
        if self.beta is None or self.vcov is None:
            raise TypeError("these coefficients are posterior draws: no beta and vcov; read the fit "
                            "with coefficients(fit, posterior=False)")
        return self.beta, self.vcov


def coefficients(fit: FittedModel | PosteriorFit, posterior: bool = True) -> Coefficients:
    """The coefficients of any fit that satisfies :class:`FittedModel` or :class:`PosteriorFit`.

    ``posterior=False`` reads ``fixef`` and ``vcov`` even from a fit that has draws (its normal
    approximation: posterior means and covariance).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> fit = SimpleNamespace(fixef=pd.Series([0.5, 1.0], index=["(Intercept)", "x"]),
    ...                       vcov=pd.DataFrame(np.eye(2), index=["(Intercept)", "x"],
    ...                                         columns=["(Intercept)", "x"]))
    >>> coefficients(fit).names
    ('(Intercept)', 'x')
    """
    draws = getattr(fit, "fixef_draws", None) if posterior else None
    if draws is not None:
        draws = pd.DataFrame(draws)
        return Coefficients(tuple(map(str, draws.columns)), None, None, draws.to_numpy(dtype=float))
    fixef = getattr(fit, "fixef", None)
    vcov = getattr(fit, "vcov", None)
    if fixef is None or vcov is None:
        raise TypeError(f"{type(fit).__name__} is not a fitted model: it has neither fixef and vcov "
                        "(maximum likelihood) nor fixef_draws (posterior)")
    names = tuple(map(str, fixef.index))
    sep = getattr(fit, "separation", None)
    if sep is not None and getattr(sep, "beta_limit", None) is not None:
        return Coefficients(names, sep.beta_limit, sep.vcov_limit, None, sep)
    v = pd.DataFrame(vcov).loc[list(names), list(names)].to_numpy(dtype=float)
    return Coefficients(names, fixef.to_numpy(dtype=float), v, None)


def linear_functions(L: np.ndarray, beta: np.ndarray, vcov: np.ndarray, separation: SeparationLimit | None = None
                     ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Estimates ``L beta``, their standard errors and covariance ``L V L'``.

    With the ``separation`` of a separated fit (``beta``, ``vcov`` its finite limit), rows of
    ``L`` along a divergent direction are ``+-inf`` (NaN when undetermined) with NaN covariances.

    Examples
    --------
    >>> est, se, cov = linear_functions(np.array([[1.0, 1.0]]), np.array([0.5, 1.0]), np.eye(2))
    >>> est.tolist(), se.round(4).tolist()
    ([1.5], [1.4142])
    """
    L = np.atleast_2d(np.asarray(L, dtype=float))
    if separation is not None:
        missing = np.isnan(L).any(axis=1)
        est, cov = separation.combine(np.nan_to_num(L), beta, vcov)
        est = np.where(missing, np.nan, est)
        cov[missing, :] = np.nan
        cov[:, missing] = np.nan
    else:
        est = L @ beta
        cov = L @ vcov @ L.T
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    return est, se, cov


def warn_divergent(L: np.ndarray, separation: SeparationLimit | None, labels: Sequence[str], what: str,
                   stacklevel: int = 3) -> list[str]:
    """Warn (:class:`~evalmix.core.errors.SeparationWarning`) naming the rows of ``L`` that diverge in
    a separated fit; returns their labels."""
    if separation is None:
        return []
    cls = separation.classify(np.nan_to_num(np.atleast_2d(L)))
    bad = [f"{lab} ({'+inf' if c > 0 else '-inf' if c < 0 else 'not determined'})"
           for lab, c in zip(labels, cls) if c != 0]
    if bad:
        import warnings

        from ..core.errors import SeparationWarning

        warnings.warn(f"{what} {', '.join(bad)} diverge{'s' if len(bad) == 1 else ''} in this "
                      "separated fit (see fit.separation): reported as +-inf or NaN with NaN "
                      "standard errors; refit with fixef_prior='normal(0, 2.5)' for finite values",
                      SeparationWarning, stacklevel=stacklevel)
    return bad


def wald_test(L: np.ndarray, beta: np.ndarray, vcov: np.ndarray,
              rhs: Sequence[float] | np.ndarray | None = None, separation: SeparationLimit | None = None
              ) -> tuple[float, int, float]:
    """Joint Wald test of ``L beta = rhs``: chi-square, degrees of freedom and p-value.

    With the ``separation`` of a separated fit, a hypothesis involving a divergent direction
    has no Wald test: chi-square and p are NaN.

    The degrees of freedom are the rank of ``L V L'`` and its pseudo-inverse is used, so aliased
    rows do not inflate the test (as ``car::linearHypothesis``).

    Examples
    --------
    >>> chisq, df, p = wald_test(np.eye(2), np.array([1.0, 2.0]), np.eye(2))
    >>> round(chisq, 3), df, round(p, 4)
    (5.0, 2, 0.0821)
    """
    from scipy import stats

    if separation is not None and np.any(separation.classify(np.atleast_2d(L)) != 0):
        return float("nan"), int(np.atleast_2d(L).shape[0]), float("nan")
    est, _, cov = linear_functions(L, beta, vcov, separation)
    d = est - (np.zeros_like(est) if rhs is None else np.asarray(rhs, dtype=float))
    df = int(np.linalg.matrix_rank(cov))
    chisq = float(d @ np.linalg.pinv(cov) @ d)
    return chisq, df, float(stats.chi2.sf(chisq, df)) if df > 0 else float("nan")


def wald_z_table(terms: Iterable[object], estimate: np.ndarray, se: np.ndarray,
                 conf_level: float = 0.95) -> pd.DataFrame:
    """Wald z tests and intervals of coefficients (R's ``summary(fit)$coefficients`` of a fit
    with asymptotic, normal inference).

    Parameters
    ----------
    terms : iterable
        The coefficients' names.
    estimate, se : ndarray
        Their estimates and standard errors.
    conf_level : float
        Level of the intervals (checked by the caller).

    Returns
    -------
    DataFrame
        ``term``, ``estimate``, ``se``, ``statistic`` (``estimate / se``), ``p_value`` (two-sided
        normal), ``conf_low``, ``conf_high``.

    Examples
    --------
    >>> tab = wald_z_table(["a", "b"], np.array([1.0, 0.0]), np.array([0.5, 1.0]))
    >>> tab["statistic"].tolist(), tab["p_value"].round(4).tolist(), tab["conf_low"].round(3).tolist()
    ([2.0, 0.0], [0.0455, 1.0], [0.02, -1.96])
    """
    from scipy import stats

    est, se = np.asarray(estimate, dtype=float), np.asarray(se, dtype=float)
    z = est / se
    q = stats.norm.ppf(0.5 + conf_level / 2)
    return pd.DataFrame({"term": list(terms), "estimate": est, "se": se, "statistic": z,
                         "p_value": 2 * stats.norm.sf(np.abs(z)),
                         "conf_low": est - q * se, "conf_high": est + q * se})


# ---------------------------------------------------------------- hypotheses over coefficient names
# A hypothesis is a linear equation in the coefficients, written with the names R prints
# ("modelB - modelC = 0.5"); `odd name` in backticks for a name the plain reading would split.

_NUMBER = re.compile(r"(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")
_WORD = re.compile(r"[A-Za-z_.][A-Za-z0-9_.:]*(?:\([^()]*\))?")
_WORD_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.")
_OPERATORS = frozenset("+-*/=()")


def _unknown_name(name: str, names: Sequence[str], hypothesis: str) -> ArgumentError:
    """The error for a name that is no coefficient, with the nearest names."""
    import difflib

    close = difflib.get_close_matches(name, names, n=3, cutoff=0.5)
    close += [n for n in names if n != name and n.endswith(name) and n not in close][:2]
    hint = (f"; did you mean {' or '.join(repr(c) for c in close)}?" if close
            else f"; the coefficients are {list(names)}")
    return ArgumentError(f"hypothesis {hypothesis!r} names {name!r}, which is not a coefficient of "
                         f"the fit{hint} (write a name with spaces or operators in backticks: "
                         "`name`)")


def _tokens(text: str, names: Sequence[str]) -> list[tuple[str, object]]:
    """The tokens of one hypothesis: ("name", index), ("number", value) or ("op", char).

    A plain name is the longest coefficient name that starts at the position and does not run on
    into more name characters, as car reads names (longest first)."""
    by_length = sorted(range(len(names)), key=lambda i: -len(names[i]))
    out: list[tuple[str, object]] = []
    i = 0
    while i < len(text):
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch == "`":
            end = text.find("`", i + 1)
            if end < 0:
                raise ArgumentError(f"hypothesis {text!r}: a backtick at position {i} is not closed")
            name = text[i + 1:end]
            if name not in names:
                raise _unknown_name(name, names, text)
            out.append(("name", list(names).index(name)))
            i = end + 1
            continue
        for k in by_length:
            name = names[k]
            stop = i + len(name)
            if name and text.startswith(name, i) and not (
                    name[-1] in _WORD_CHARS and stop < len(text) and text[stop] in _WORD_CHARS):
                out.append(("name", k))
                i = stop
                break
        else:
            number = _NUMBER.match(text, i)
            if number and not (number.end() < len(text) and text[number.end()] in _WORD_CHARS):
                out.append(("number", float(number.group())))
                i = number.end()
            elif ch in _OPERATORS:
                out.append(("op", ch))
                i += 1
            else:
                word = _WORD.match(text, i)
                if word is None:
                    raise ArgumentError(f"hypothesis {text!r}: unexpected {ch!r} at position {i} "
                                        "(write a name with spaces or operators in backticks: "
                                        "`name`)")
                raise _unknown_name(word.group(), names, text)
    return out


class _Linear:
    """A linear form ``coef . beta + const`` while a hypothesis is read."""

    __slots__ = ("coef", "const")

    def __init__(self, coef: np.ndarray, const: float):
        self.coef, self.const = coef, const

    @property
    def is_constant(self) -> bool:
        return not np.any(self.coef)


class _HypothesisReader:
    """Recursive descent over the tokens of one side: sums of products of names and numbers."""

    def __init__(self, tokens: list[tuple[str, object]], p: int, text: str):
        self.tokens, self.p, self.text, self.i = tokens, p, text, 0

    def fail(self, why: str) -> ArgumentError:
        return ArgumentError(f"hypothesis {self.text!r} is not a linear equation in the "
                             f"coefficients: {why}")

    def peek(self) -> tuple[str, object] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def side(self) -> _Linear:
        if self.peek() is None:
            raise self.fail("a side of '=' is empty")
        out = self.term()
        while (tok := self.peek()) is not None and tok[0] == "op" and tok[1] in ("+", "-"):
            self.i += 1
            rhs = self.term()
            sign = 1.0 if tok[1] == "+" else -1.0
            out = _Linear(out.coef + sign * rhs.coef, out.const + sign * rhs.const)
        return out

    def term(self) -> _Linear:
        out = self.unary()
        while (tok := self.peek()) is not None and tok[0] == "op" and tok[1] in ("*", "/"):
            self.i += 1
            rhs = self.unary()
            if tok[1] == "/":
                if not rhs.is_constant or rhs.const == 0:
                    raise self.fail("divide only by a non-zero number")
                out = _Linear(out.coef / rhs.const, out.const / rhs.const)
            elif out.is_constant:
                out = _Linear(rhs.coef * out.const, rhs.const * out.const)
            elif rhs.is_constant:
                out = _Linear(out.coef * rhs.const, out.const * rhs.const)
            else:
                raise self.fail("a product of two coefficients")
        return out

    def unary(self) -> _Linear:
        tok = self.peek()
        if tok is not None and tok[0] == "op" and tok[1] in ("+", "-"):
            self.i += 1
            inner = self.unary()
            return inner if tok[1] == "+" else _Linear(-inner.coef, -inner.const)
        return self.primary()

    def primary(self) -> _Linear:
        tok = self.peek()
        if tok is None:
            raise self.fail("it ends where a name or a number should follow")
        self.i += 1
        kind, value = tok
        if kind == "name":
            coef = np.zeros(self.p)
            coef[int(value)] = 1.0  # type: ignore[call-overload]
            return _Linear(coef, 0.0)
        if kind == "number":
            return _Linear(np.zeros(self.p), float(value))  # type: ignore[arg-type]
        if value == "(":
            inner = self.side()
            if self.peek() != ("op", ")"):
                raise self.fail("a '(' is not closed")
            self.i += 1
            return inner
        raise self.fail(f"unexpected {value!r}")


def _format_row(coef: np.ndarray, rhs: float, names: Sequence[str]) -> str:
    """One hypothesis row as text, as car prints it: ``modelB - modelC = 0``."""
    parts: list[str] = []
    for c, name in zip(coef, names):
        if c == 0:
            continue
        size = "" if abs(c) == 1 else f"{abs(c):g}*"
        sign = "-" if c < 0 else "+"
        parts.append(f"{sign} {size}{name}" if parts else f"{'-' if c < 0 else ''}{size}{name}")
    return f"{' '.join(parts)} = {rhs:g}"


def hypothesis_matrix(names: Sequence[str], hypotheses: str | Sequence[str] | ArrayLike | pd.DataFrame,
                      rhs: ArrayLike | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """The hypothesis matrix ``L``, right-hand side and row labels of hypotheses over coefficients.

    As ``car::makeHypothesis``: each hypothesis is a linear equation in the coefficient ``names``
    (``"modelB = modelC"``, ``"modelB - modelC = 0.5"``, ``"2*modelB + modelC = 1"``; no ``=`` means
    ``= 0``).  A chain ``"a = b = c"`` is the joint hypothesis ``a = b`` and ``b = c``.  A name with
    spaces or operators that the plain reading would split is written in backticks.  ``hypotheses``
    may also be a matrix (one column per coefficient, or a DataFrame with coefficient columns) with
    ``rhs``.

    Parameters
    ----------
    names : sequence of str
        The coefficient names, in the order of ``beta``.
    hypotheses : str, sequence of str, array or DataFrame
        One hypothesis, several (tested jointly), or the matrix ``L``.
    rhs : array-like, optional
        The right-hand side of a matrix ``L`` (default zeros); text hypotheses carry theirs.

    Returns
    -------
    L : numpy.ndarray
        One row per hypothesis, one column per coefficient.
    rhs : numpy.ndarray
    labels : list of str
        Each row as text (``"modelB - modelC = 0"``).

    Raises
    ------
    evalmix.ArgumentError
        A name that is no coefficient (with the nearest names), or text that is no linear equation.

    Examples
    --------
    >>> L, rhs, labels = hypothesis_matrix(["(Intercept)", "b", "c", "d"], "b = c = d")
    >>> L.tolist(), rhs.tolist(), labels
    ([[0.0, 1.0, -1.0, 0.0], [0.0, 0.0, 1.0, -1.0]], [0.0, 0.0], ['b - c = 0', 'c - d = 0'])
    >>> hypothesis_matrix(["(Intercept)", "model-B"], "2*`model-B` = 1")[2]
    ['2*model-B = 1']
    """
    names = [str(n) for n in names]
    p = len(names)
    if isinstance(hypotheses, str) or (isinstance(hypotheses, Sequence)
                                       and hypotheses and all(isinstance(h, str) for h in hypotheses)):
        if rhs is not None:
            raise ArgumentError("rhs goes with a hypothesis matrix; text hypotheses carry their "
                                "right-hand side after '=' (\"modelB - modelC = 0.5\")")
        texts = [hypotheses] if isinstance(hypotheses, str) else list(hypotheses)
        rows: list[np.ndarray] = []
        values: list[float] = []
        for text in texts:
            sides: list[list[tuple[str, object]]] = [[]]
            for tok in _tokens(text, names):
                if tok == ("op", "="):
                    sides.append([])
                else:
                    sides[-1].append(tok)
            forms = []
            for toks in sides:
                reader = _HypothesisReader(toks, p, text)
                form = reader.side()
                if reader.i < len(toks):
                    raise reader.fail(f"unexpected {toks[reader.i][1]!r}")
                forms.append(form)
            if len(forms) == 1:
                forms.append(_Linear(np.zeros(p), 0.0))
            for a, b in zip(forms[:-1], forms[1:]):
                coef = a.coef - b.coef
                if not np.any(coef):
                    raise ArgumentError(f"hypothesis {text!r} involves no coefficient (its "
                                        "coefficients cancel)")
                rows.append(coef)
                values.append(b.const - a.const)
        L = np.vstack(rows)
        r = np.asarray(values, dtype=float)
    else:
        if isinstance(hypotheses, pd.DataFrame):
            unknown = [str(c) for c in hypotheses.columns if str(c) not in names]
            if unknown:
                raise _unknown_name(unknown[0], names, "hypothesis matrix")
            L = hypotheses.reindex(columns=names, fill_value=0.0).to_numpy(dtype=float)
        else:
            try:
                L = np.atleast_2d(np.asarray(hypotheses, dtype=float))
            except (TypeError, ValueError):
                raise ArgumentError("hypotheses must be text (\"modelB = modelC\"), a list of texts "
                                    f"or a matrix with one column per coefficient, got "
                                    f"{type(hypotheses).__name__}") from None
        if L.ndim != 2 or L.shape[1] != p or L.shape[0] == 0:
            raise ArgumentError(f"the hypothesis matrix has shape {L.shape}; it needs one column per "
                                f"coefficient ({p}: {names})")
        if not np.all(np.isfinite(L)):
            raise ArgumentError("the hypothesis matrix has a missing or infinite entry")
        r = np.zeros(L.shape[0]) if rhs is None else np.broadcast_to(
            np.asarray(rhs, dtype=float), (L.shape[0],)).copy()
    L = L + 0.0  # no negative zeros in the matrix shown
    return L, r, [_format_row(row, v, names) for row, v in zip(L, r)]


@dataclass(frozen=True, eq=False, repr=False)
class LinearHypothesis(Result):
    """A joint Wald test of linear hypotheses about the fixed effects (``car::linearHypothesis``).

    Attributes
    ----------
    hypotheses : tuple of str
        Each row of the hypothesis as text (``"modelB - modelC = 0"``).
    hypothesis_matrix : pandas.DataFrame
        ``L``: one row per hypothesis, one column per coefficient.
    rhs : numpy.ndarray
        The right-hand side.
    estimate, se : numpy.ndarray
        ``L beta`` and its standard errors, one per row.
    statistic : float
        The Wald chi-square (``test="chisq"``) or F statistic (``test="F"``).
    df : int
        Its (numerator) degrees of freedom: the rank of ``L V L'``.
    df_denominator : float
        The denominator df of an F test (``inf`` for a chi-square test).
    p_value : float
    test : str
        ``"chisq"`` or ``"F"``; ``ddf`` names the denominator-df method of an F test.
    """

    hypotheses: tuple[str, ...]
    hypothesis_matrix: pd.DataFrame
    rhs: np.ndarray
    estimate: np.ndarray
    se: np.ndarray
    statistic: float
    df: int
    p_value: float
    test: str = "chisq"
    df_denominator: float = float("inf")
    ddf: str = ""
    posterior: bool = False

    def to_frame(self) -> pd.DataFrame:
        """The joint test: ``statistic``, ``df`` and ``p_value`` (F tests: ``df1`` and ``df2``)."""
        if self.test == "F":
            return pd.DataFrame({"statistic": [self.statistic], "df1": [self.df],
                                 "df2": [self.df_denominator], "p_value": [self.p_value]})
        return pd.DataFrame({"statistic": [self.statistic], "df": [self.df],
                             "p_value": [self.p_value]})

    def rows(self) -> pd.DataFrame:
        """Each hypothesis row: ``term`` (its text), ``estimate`` (``L beta``), ``rhs`` and ``se``."""
        return pd.DataFrame({"term": list(self.hypotheses), "estimate": self.estimate,
                             "rhs": self.rhs, "se": self.se})

    def _title(self) -> str:
        kind = "Wald chi-square" if self.test == "chisq" else f"F ({self.ddf} denominator df)"
        return f"Linear hypothesis test: {kind}"

    def _header(self) -> list[str]:
        return [f"hypothesis: {h}" for h in self.hypotheses]

    def _notes(self) -> list[str]:
        if self.posterior:
            return ["tested on the posterior's normal approximation (posterior means and covariance)"]
        return []

    def summary(self) -> Summary:
        return Summary(self._title(), self._header(),
                       [("Test", self.to_frame()), ("Hypotheses", self.rows())], self._notes())


def linear_hypothesis(fit: FittedModel | PosteriorFit,
                      hypotheses: str | Sequence[str] | ArrayLike | pd.DataFrame,
                      rhs: ArrayLike | None = None, test: str = "chisq", ddf: str | None = None
                      ) -> LinearHypothesis:
    """Wald test of linear hypotheses about a fit's fixed effects, as ``car::linearHypothesis``.

    Hypotheses are written over the coefficient names exactly as the fit prints them (``fixef``):
    ``"modelB = modelC"``, ``"modelB - modelC = 0.5"``, ``"2*modelB + modelC = 1"``, a chain
    ``"modelB = modelC = modelD"`` (every pair of neighbours equal) or a list tested jointly; a name
    that the plain reading would split goes in backticks (``"`model-B` = `model-C`"``).  The
    chi-square uses the pseudo-inverse of ``L V L'`` with df its rank, as car does.

    Parameters
    ----------
    fit : FittedModel or PosteriorFit
        A :func:`evalmix.glmer`, :func:`evalmix.lmer` or :func:`evalmix.bayes.glmer` fit.  A
        posterior fit is tested on its normal approximation (posterior means and covariance).
    hypotheses : str, sequence of str, array or DataFrame
        The hypotheses (see :func:`hypothesis_matrix`), jointly tested.
    rhs : array-like, optional
        Right-hand side of a matrix of hypotheses.
    test : {"chisq", "F"}
        ``"F"``: the F test with finite denominator df of a linear mixed model (lmerTest's
        ``contest``; ``ddf`` ``"Satterthwaite"`` or ``"Kenward-Roger"``).
    ddf : str, optional
        The denominator-df method of an F test.

    Returns
    -------
    LinearHypothesis
        ``statistic``, ``df``, ``p_value`` and the hypothesis matrix.

    Raises
    ------
    evalmix.ArgumentError
        A name that is no coefficient (with the nearest names), text that is no linear equation, or
        ``test="F"`` on a fit without finite denominator df.

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> names = ["(Intercept)", "modelB", "modelC"]
    >>> fit = SimpleNamespace(fixef=pd.Series([0.2, 0.9, 0.4], index=names),
    ...                       vcov=pd.DataFrame(np.diag([0.04, 0.09, 0.09]), index=names, columns=names))
    >>> res = linear_hypothesis(fit, "modelB = modelC")
    >>> round(res.statistic, 4), res.df, round(res.p_value, 4)
    (1.3889, 1, 0.2386)
    >>> linear_hypothesis(fit, "modelD = 0")
    Traceback (most recent call last):
    ...
    evalmix.ArgumentError: hypothesis 'modelD = 0' names 'modelD', which is not a coefficient of the fit; did you mean 'modelC' or 'modelB'? (write a name with spaces or operators in backticks: `name`)
    """
    from ..core.arguments import check_choice

    check_choice(test, "test", ["chisq", "F"])
    posterior = getattr(fit, "fixef_draws", None) is not None
    coefs = coefficients(fit, posterior=False)
    beta, vcov = coefs.normal
    L, r, labels = hypothesis_matrix(coefs.names, hypotheses, rhs)
    est, se, _ = linear_functions(L, beta, vcov, coefs.separation)
    frame = pd.DataFrame(L, index=labels, columns=list(coefs.names))
    if test == "F":
        method = df_method(fit, ddf) if getattr(fit, "df_method", None) is not None else None
        if method is None:
            raise ArgumentError(f"test='F' needs finite denominator df (an lmer fit); this "
                                f"{type(fit).__name__} is tested with test='chisq'")
        # lmerTest's contest tests L beta = 0: move the right-hand side into beta along L
        shift = np.linalg.lstsq(L, r, rcond=None)[0]
        # an ML fit's Kenward-Roger test is its REML refit's (pbkrtest's KRmodcomp), as anova's
        tested = getattr(method, "beta", None)
        F, ndf, ddf_, p = method.f_test(L, (beta if tested is None else np.asarray(tested)) - shift)
        return LinearHypothesis(tuple(labels), frame, r, est, se, float(F), int(ndf), float(p),
                                test="F", df_denominator=float(ddf_), ddf=method.name)
    if ddf is not None:
        raise ArgumentError("ddf applies to test='F' (finite denominator df); a chi-square test has "
                            "none")
    chisq, df, p = wald_test(L, beta, vcov, r, coefs.separation)
    return LinearHypothesis(tuple(labels), frame, r, est, se, chisq, df, p, posterior=posterior)
