"""Linear mixed models (lme4's ``lmer``) with lmerTest's Satterthwaite and pbkrtest's
Kenward-Roger degrees of freedom.

The pipeline mirrors lme4's ``lFormula`` -> ``mkLmerDevfun`` -> ``optimizeLmer`` -> ``mkMerMod``:

- :func:`build_lmm_design` (formula and data to ``X``, ``y``, the random terms and sparse ``Z``);
- :class:`ProfiledDeviance` (the profiled REML/ML criterion of theta);
- :func:`lmer` (optimisation and the fit, an :class:`LmerResult`);
- :class:`Satterthwaite` and :class:`KenwardRoger` (denominator df of Wald t and F tests).
"""

from .ddf import DDF_METHODS, KenwardRoger, Satterthwaite, normalise_ddf
from .design import LmmDesign, build_lmm_design
from .deviance import PlsState, ProfiledDeviance
from .result import LmerCoefTable, LmerDf, LmerResult, lmer

__all__ = ["DDF_METHODS", "KenwardRoger", "LmerCoefTable", "LmerDf", "LmerResult", "LmmDesign", "PlsState",
           "ProfiledDeviance", "Satterthwaite", "build_lmm_design", "lmer", "normalise_ddf"]
