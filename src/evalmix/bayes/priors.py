"""Default priors of the Bayesian GLMM and the ``priors=`` overrides.

All priors live on the logit scale.  The defaults are weakly informative: they rule out
implausible values (an odds ratio of e^10 between two models) without pulling estimates that the
data determine.

============================  =====================================================================
parameter                     default
============================  =====================================================================
``Intercept``                 Normal(0, 5): log-odds of a correct answer at the reference levels
fixed effect of a factor      Normal(0, 2.5): a log odds ratio; 95% of the mass within OR 1/135..135
fixed effect of a covariate   Normal(0, 2.5 / sd(x)): 2.5 per standard deviation of ``x``
random-effect SD              HalfNormal(2.5): item SDs of 0.5-3 on the logit scale are common
correlation of random terms   LKJ(eta=2): mild preference for small correlations
============================  =====================================================================

Keys of ``priors=``: ``"Intercept"``, ``"fixed"`` (every non-intercept fixed effect), a fixed-effect
column name as R names it (``"modelGPT-4o"``; formulaic's ``"model[T.GPT-4o]"`` also) or term label (``"model"``), ``"sd"`` (every random-effect SD), a
grouping factor (``"item"``, ``"item:run"``) for that term's SDs, and ``"cor"`` (LKJ ``eta``).
Values are :class:`Prior` objects or tuples such as ``("normal", 0, 1)``, ``("half_normal", 1)``,
``("student_t", 3, 0, 2.5)``, ``("half_student_t", 3, 1)``, ``("exponential", 1)``; ``"cor"`` takes
a number (``eta``) or ``("lkj", eta)``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
import pandas as pd

from ..core.result import Result

if TYPE_CHECKING:
    from pytensor.tensor.variable import TensorVariable

    from ..model import GlmmDesign
    from .families import FamilyDesign

__all__ = ["Prior", "PriorTable", "DEFAULT_PRIORS", "resolve_priors"]

# name -> (PyMC distribution name, parameter names, allowed for an SD?)
FAMILIES: dict[str, tuple[str, tuple[str, ...], bool]] = {
    "normal": ("Normal", ("mu", "sigma"), False),
    "student_t": ("StudentT", ("nu", "mu", "sigma"), False),
    "cauchy": ("Cauchy", ("alpha", "beta"), False),
    "laplace": ("Laplace", ("mu", "b"), False),
    "half_normal": ("HalfNormal", ("sigma",), True),
    "half_student_t": ("HalfStudentT", ("nu", "sigma"), True),
    "half_cauchy": ("HalfCauchy", ("beta",), True),
    "exponential": ("Exponential", ("lam",), True),
    "lkj": ("LKJ", ("eta",), False),
}


@dataclass(frozen=True)
class Prior:
    """A prior distribution on the logit scale.

    Parameters
    ----------
    family : str
        One of ``normal``, ``student_t``, ``cauchy`` (fixed effects), ``half_normal``,
        ``half_student_t``, ``half_cauchy``, ``exponential`` (SDs), ``lkj`` (correlations).
    params : tuple of float
        In the order of the PyMC distribution: ``normal(mu, sigma)``, ``student_t(nu, mu, sigma)``,
        ``cauchy(alpha, beta)``, ``half_normal(sigma)``, ``half_student_t(nu, sigma)``,
        ``half_cauchy(beta)``, ``exponential(lam)``, ``lkj(eta)``.

    Examples
    --------
    >>> str(Prior("normal", (0, 2.5)))
    'Normal(mu=0, sigma=2.5)'
    >>> Prior.coerce(("half_normal", 1)).positive
    True
    """

    family: str
    params: tuple[float, ...]

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"unknown prior family {self.family!r}; use one of {sorted(FAMILIES)}")
        names = FAMILIES[self.family][1]
        if len(self.params) != len(names):
            raise ValueError(f"prior {self.family!r} takes {len(names)} parameter(s) {names}, "
                             f"got {self.params!r}")
        object.__setattr__(self, "params", tuple(float(p) for p in self.params))

    @property
    def positive(self) -> bool:
        """Whether the prior has support on the positive half-line only (usable for an SD)."""
        return FAMILIES[self.family][2]

    @property
    def kwargs(self) -> dict[str, float]:
        return dict(zip(FAMILIES[self.family][1], self.params))

    def scaled(self, factor: float) -> Prior:
        """The same prior with its scale divided by ``factor`` (a coefficient of ``x`` with SD ``factor``)."""
        kw = self.kwargs
        for key in ("sigma", "beta", "b"):
            if key in kw:
                kw[key] = kw[key] / factor
        return Prior(self.family, tuple(kw.values()))

    def symmetric(self) -> Prior:
        """The symmetric distribution on the real line whose absolute value has this prior."""
        p = self.params
        if self.family == "half_normal":
            return Prior("normal", (0.0, p[0]))
        if self.family == "half_student_t":
            return Prior("student_t", (p[0], 0.0, p[1]))
        if self.family == "half_cauchy":
            return Prior("cauchy", (0.0, p[0]))
        if self.family == "exponential":
            return Prior("laplace", (0.0, 1.0 / p[0]))
        raise ValueError(f"prior {self} has no symmetric extension")

    def dist(self, name: str, **kwargs: Any) -> TensorVariable:  # a PyMC random variable
        """The PyMC random variable ``name`` with this prior (inside a model context)."""
        import pymc as pm

        cls = getattr(pm, FAMILIES[self.family][0])
        return cls(name, **self.kwargs, **kwargs)

    def __str__(self) -> str:
        args = ", ".join(f"{k}={v:g}" for k, v in self.kwargs.items())
        return f"{FAMILIES[self.family][0]}({args})"

    @classmethod
    def coerce(cls, value: PriorSpec) -> Prior:
        """A :class:`Prior` from a Prior, a tuple ``(family, *params)`` or a dict."""
        if isinstance(value, Prior):
            return value
        if isinstance(value, Mapping):
            value = dict(value)
            fam = value.pop("family")
            names = FAMILIES[fam][1] if fam in FAMILIES else ()
            missing = [n for n in names if n not in value]
            if fam in FAMILIES and missing:
                raise ValueError(f"prior {fam!r} lacks parameter(s) {missing}")
            return cls(fam, tuple(value[n] for n in names))
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return cls("lkj", (float(value),))
        if isinstance(value, (tuple, list)) and value and isinstance(value[0], str):
            return cls(value[0], tuple(value[1:]))
        raise ValueError(f"cannot read {value!r} as a prior; give e.g. ('normal', 0, 2.5)")


# how a prior is written: a Prior, ("normal", 0, 2.5), {"family": "normal", "mu": 0, "sigma": 2.5}, or
# a number (the eta of an LKJ prior)
PriorSpec: TypeAlias = "Prior | tuple[str, *tuple[float, ...]] | list[Any] | Mapping[str, Any] | float"

DEFAULT_PRIORS: dict[str, Prior] = {
    "Intercept": Prior("normal", (0.0, 5.0)),
    "fixed": Prior("normal", (0.0, 2.5)),
    "sd": Prior("half_normal", (2.5,)),
    "cor": Prior("lkj", (2.0,)),
}


def resolve_priors(design: GlmmDesign | FamilyDesign, priors: Mapping[str, PriorSpec] | None, *,
                   defaults: Mapping[str, Prior] | None = None) -> tuple[dict[str, Prior], pd.DataFrame]:
    """The prior of every parameter of ``design`` (a GLMM design) after applying ``priors``.

    ``defaults`` replaces :data:`DEFAULT_PRIORS` (keys ``Intercept``, ``fixed``, ``sd``, ``cor``:
    the response-scaled defaults of the Gaussian model).

    Returns a dict parameter -> Prior (keys: fixed-effect column names, ``"sd|<group>|<column>"``
    and ``"cor|<group>"``) and a printable table (``parameter``, ``prior``, ``source``).
    """
    user = {str(k): Prior.coerce(v) for k, v in (priors or {}).items()}
    base = DEFAULT_PRIORS if defaults is None else defaults
    fixed = design.fixed
    groups = {t.group for t in design.terms}
    # a column is named as R names it (modelGPT-4o) or as formulaic does (model[T.GPT-4o])
    alias = dict(zip(getattr(fixed, "formulaic_columns", None) or [], fixed.columns))
    user = {alias.get(k, k): v for k, v in user.items()}
    known = {"Intercept", "fixed", "sd", "cor"} | set(fixed.columns) | set(fixed.terms) | groups
    unknown = sorted(set(user) - known)
    if unknown:
        raise ValueError(f"priors= names unknown parameter(s) {unknown}; known: {sorted(known)}")
    out: dict[str, Prior] = {}
    rows = []
    X = design.X.dense() if hasattr(design.X, "dense") else np.asarray(design.X)
    for j, (col, term) in enumerate(zip(fixed.columns, fixed.column_terms)):
        if term == "(Intercept)":
            key = "Intercept"
            p, src = user.get(key, base[key]), "user" if key in user else "default"
        elif col in user or term in user:
            p, src = (user[col] if col in user else user[term]), "user"
        else:
            p, src = user.get("fixed", base["fixed"]), "user" if "fixed" in user else "default"
            x = X[:, j]
            # autoscale numeric covariates (not 0/1 indicator columns) by their SD, as rstanarm does
            if src == "default" and not np.isin(x, (0.0, 1.0)).all():
                w = design.m
                sd = float(np.sqrt(np.average((x - np.average(x, weights=w)) ** 2, weights=w)))
                if sd > 0:
                    p, src = p.scaled(sd), "default (scaled by 1/sd)"
        if p.positive or p.family == "lkj":
            raise ValueError(f"prior {p} for fixed effect {col!r} must be defined on the real line")
        out[col] = p
        rows.append((col, str(p), src))
    for t in design.terms:
        for c in t.cnames:
            key = f"sd|{t.group}|{c}"
            if t.group in user:
                p, src = user[t.group], "user"
            else:
                p, src = user.get("sd", base["sd"]), "user" if "sd" in user else "default"
            if not p.positive:
                raise ValueError(f"prior {p} for the SD of {c!r} in group {t.group!r} must be positive")
            out[key] = p
            rows.append((f"sd({c}|{t.group})", str(p), src))
        if t.nc > 1:
            p, src = user.get("cor", base["cor"]), "user" if "cor" in user else "default"
            if p.family != "lkj":
                raise ValueError(f"the correlation prior must be ('lkj', eta), got {p}")
            out[f"cor|{t.group}"] = p
            rows.append((f"cor({'+'.join(t.cnames)}|{t.group})", str(p), src))
    table = pd.DataFrame(rows, columns=["parameter", "prior", "source"])
    return out, table


@dataclass(frozen=True, eq=False, repr=False)
class PriorTable(Result):
    """The prior of every parameter of a model (:func:`evalmix.bayes.default_priors`).

    ``table`` columns: ``parameter`` (as the fit names it), ``prior`` (the distribution),
    ``source`` (``"default"`` or ``"user"``) and the other columns of ``fit.priors``.
    """

    table: pd.DataFrame
    formula: str

    def _title(self) -> str:
        return "Priors"

    def _header(self) -> list[str]:
        return [f"formula: {self.formula}"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()
