"""Fits that follow the fit interface of evalmix.glmer, for testing the inference layer on its own.

- :func:`glm_fit`: a plain logistic regression (statsmodels GLM) on a formulaic design;
- :func:`fit_from_reference`: a fit carrying the coefficients, covariance and likelihood that R
  stored in a reference JSON (glm or glmer), on the same design rebuilt with formulaic.

emmeans, car's type-III tests and lme4's anova() only use beta, V, the design and the likelihood,
so these stand-ins test the inference functions against R exactly.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

import formulaic
import numpy as np
import pandas as pd
import statsmodels.api as sm


def fixed_part(formula: str) -> str:
    """The right-hand side without random-effect terms ``(... | ...)``."""
    rhs = formula.split("~", 1)[1]
    rhs = re.sub(r"\+?\s*\([^()]*\|[^()]*\)", "", rhs)
    return rhs.strip().strip("+").strip() or "1"


class FormulaicDesign:
    """The ``fixed_design`` part of the fit interface, built with formulaic."""

    def __init__(self, rhs: str, data: pd.DataFrame):
        mm = formulaic.model_matrix(rhs, data)
        self._spec = mm.model_spec
        self.columns = list(mm.columns)
        self.X = mm.to_numpy(dtype=float)
        self.terms = [str(t) for t in self._spec.terms if str(t) != "1"]
        self.factors: dict[str, list[Any]] = {}
        self.covariates: dict[str, float] = {}
        for name, (kind, state) in self._spec.encoder_state.items():
            if str(kind).endswith("CATEGORICAL"):
                self.factors[name] = list(state["categories"])
            else:
                self.covariates[name] = float(data[name].mean())
        self.column_terms: list[str] = []
        for term, sl in self._spec.term_slices.items():
            label = "(Intercept)" if str(term) == "1" else str(term)
            self.column_terms += [label] * (sl.stop - sl.start)
        self.weights_data = data[list(self.factors)].copy()

    def model_matrix(self, newdata: pd.DataFrame) -> np.ndarray:
        return self._spec.get_model_matrix(newdata).to_numpy(dtype=float)


@dataclass
class StandInFit:
    fixef: pd.Series
    vcov: pd.DataFrame
    loglik: float
    df: int
    nobs: int
    formula: str
    fixed_design: Any
    aic: float = field(init=False)
    bic: float = field(init=False)
    family: str = "binomial"
    link: str = "logit"

    def __post_init__(self):
        self.aic = -2 * self.loglik + 2 * self.df
        self.bic = -2 * self.loglik + np.log(self.nobs) * self.df

    def coef_table(self, conf_level: float = 0.95) -> pd.DataFrame:
        se = np.sqrt(np.diag(self.vcov.to_numpy()))
        return pd.DataFrame({"term": self.fixef.index, "estimate": self.fixef.to_numpy(),
                             "se": se, "z": self.fixef.to_numpy() / se})


@dataclass
class PosteriorStandIn:
    """A posterior-like fit: draws of the fixed effects (rows) by name (columns)."""

    fixef_draws: pd.DataFrame
    fixed_design: Any
    formula: str
    link: str = "logit"
    family: str = "binomial"


def categorical(data: pd.DataFrame, levels: dict[str, list[str]]) -> pd.DataFrame:
    """Factor columns as pandas categoricals with R's level order."""
    out = data.copy()
    for name, levs in levels.items():
        if name in out:
            out[name] = pd.Categorical(out[name].astype(str), categories=levs)
    return out


def glm_fit(formula: str, data: pd.DataFrame, vcov_method: str = "hessian") -> StandInFit:
    """Logistic regression by IRLS (statsmodels), exposing the fit interface.

    ``vcov_method`` is accepted for the GLMM fitter's signature; a GLM has one covariance.
    """
    response = formula.split("~", 1)[0].strip()
    design = FormulaicDesign(fixed_part(formula), data)
    res = sm.GLM(data[response].to_numpy(float), design.X, family=sm.families.Binomial()).fit(
        tol=1e-12)
    names = design.columns
    return StandInFit(fixef=pd.Series(res.params, index=names),
                      vcov=pd.DataFrame(res.cov_params(), index=names, columns=names),
                      loglik=float(res.llf), df=len(names), nobs=len(data), formula=formula,
                      fixed_design=design)


def r_name(formulaic_name: str) -> str:
    """formulaic column name -> R's (``model[T.b]:lang[T.ES]`` -> ``modelb:langES``)."""
    if formulaic_name == "Intercept":
        return "(Intercept)"
    return re.sub(r"\[T\.(.*?)\]", r"\1", formulaic_name)


def fit_from_reference(info: dict, data: pd.DataFrame) -> StandInFit:
    """A fit with R's beta, V and likelihood on the formulaic design of the same formula."""
    data = categorical(data, info["levels"])
    design = FormulaicDesign(fixed_part(info["formula"]), data)
    names = design.columns
    r_names = [r_name(n) for n in names]
    assert r_names == info["coef_names"], (r_names, info["coef_names"])
    return StandInFit(fixef=pd.Series(info["beta"], index=names),
                      vcov=pd.DataFrame(np.array(info["vcov"]), index=names, columns=names),
                      loglik=info["loglik"], df=int(info["df"]), nobs=int(info["nobs"]),
                      formula=info["formula"], fixed_design=design)
