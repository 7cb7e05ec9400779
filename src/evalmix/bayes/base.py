"""The base of the Bayesian fits: the vocabulary of :class:`evalmix.MixedResult` where its meaning
carries over to a posterior.

``fixef`` (posterior means), ``vcov`` (the posterior covariance), ``nobs``, ``varcorr`` and
``summary()`` are each fit's own; written here once: ``ngroups``, ``confint()`` (highest-density
intervals), ``coef_table()`` (posterior mean, SD and HDI of the fixed effects, as brms prints its
population-level effects) and ``predict()`` (the posterior mean of the linear predictor or of the
response, population-level or with the random effects).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from ..core.arguments import check_level
from ..core.draws import hdi
from ..core.errors import ArgumentError, DataError
from ..core.result import Result
from ..mixed.links import inverse_link
from ..mixed.result import CoefTable, ConfidenceIntervals, level_codes, population_level

if TYPE_CHECKING:
    from ..model import FixedDesign
    from .model import TermPlan

__all__ = ["PosteriorResult"]


class PosteriorResult(Result):
    """What every Bayesian fit answers as a maximum-likelihood fit does (see the module)."""

    if TYPE_CHECKING:  # what each Bayesian result holds
        @property
        def fixef_draws(self) -> pd.DataFrame: ...
        @property
        def fixed_design(self) -> FixedDesign: ...
        @property
        def link(self) -> str: ...
        @property
        def _term_plans(self) -> list[TermPlan]: ...
        def _deviations(self, p: TermPlan) -> np.ndarray: ...

    @property
    def ngroups(self) -> dict[str, int]:
        """Number of levels of each grouping factor (as every maximum-likelihood fit's ``ngroups``)."""
        out: dict[str, int] = {}
        for p in self._term_plans:
            out.setdefault(p.term.group, p.term.nl)
        return out

    def confint(self, level: float = 0.95) -> ConfidenceIntervals:
        """Highest-density intervals of the fixed effects: the posterior's counterpart of every
        maximum-likelihood fit's ``confint()`` (``term``, ``estimate`` the posterior mean,
        ``conf_low``, ``conf_high``, ``method`` ``"hdi"``).

        Examples
        --------
        >>> fit.confint(0.9).to_frame().columns.tolist()  # doctest: +SKIP
        ['term', 'estimate', 'conf_low', 'conf_high', 'method']
        """
        check_level(level, "level")
        draws = self.fixef_draws
        iv = hdi(draws.to_numpy(dtype=float), level)
        table = pd.DataFrame({"term": [str(c) for c in draws.columns], "estimate": draws.mean().to_numpy(),
                              "conf_low": iv[:, 0], "conf_high": iv[:, 1], "method": "hdi"})
        return ConfidenceIntervals(table=table, level=level, method="hdi")

    def coef_table(self, conf_level: float = 0.95) -> CoefTable:
        """The fixed effects' posterior mean (``estimate``), SD (``se``) and highest-density
        interval (``conf_low``, ``conf_high``): the one :class:`~evalmix.mixed.result.CoefTable`
        of every fit, printed as brms prints population-level effects.

        Examples
        --------
        >>> fit.coef_table().test  # doctest: +SKIP
        'posterior'
        """
        check_level(conf_level, "conf_level")
        draws = self.fixef_draws.to_numpy(dtype=float)
        iv = hdi(draws, conf_level)
        table = pd.DataFrame({"term": [str(c) for c in self.fixef_draws.columns], "estimate": draws.mean(0),
                              "se": draws.std(0, ddof=1), "conf_low": iv[:, 0], "conf_high": iv[:, 1]})
        return CoefTable(table=table, test="posterior", conf_level=conf_level)

    def predict(self, newdata: pd.DataFrame | None = None, re_form: object = None,
                type: str = "link", allow_new_levels: bool = False) -> np.ndarray:
        """Posterior means of the predictions, on the link or the response scale (brms'
        ``posterior_linpred`` / ``posterior_epred`` averaged over the draws), with the random
        effects (``re_form=None``) or population-level (``re_form="NA"``), as every
        maximum-likelihood fit's ``predict()``.

        The response-scale mean averages the inverse link over the draws (not the inverse link
        of the mean).

        Examples
        --------
        >>> fit.predict(runs.head(3), type="response")  # doctest: +SKIP
        """
        if type not in ("link", "response"):
            raise ArgumentError(f"type={type!r}: use 'link' or 'response'")
        cumulative = getattr(self, "cumulative_link", None)
        if type == "response" and cumulative:
            raise ArgumentError("a cumulative-link model has no single response-scale prediction: "
                                "predict(type='link') gives the latent location; category "
                                "probabilities are evalmix.emmeans(fit, specs, mode='prob')")
        nd = self._prediction_rows() if newdata is None else newdata
        X = np.asarray(self.fixed_design.model_matrix(nd), dtype=float)
        cols = [str(c) for c in self.fixed_design.columns]
        names = [n for n in map(str, self.fixef_draws.columns) if n in cols]
        eta = self.fixef_draws[names].to_numpy(dtype=float) @ X[:, [cols.index(n) for n in names]].T
        if self.fixed_design.offsets:
            eta = eta + self.fixed_design.offset(nd)
        if not population_level(re_form):
            eta = eta + self._random_draws(nd, allow_new_levels)
        if type == "response":
            return inverse_link(self.link, eta).mean(axis=0)
        return eta.mean(axis=0)

    def _prediction_rows(self) -> pd.DataFrame:
        model = getattr(self, "_bm", None)
        data = None if model is None else getattr(model.design, "data", None)
        if data is None:
            raise DataError("predict() without newdata needs the fitted rows, which this fit no "
                            "longer holds (remove_data()): pass newdata=")
        return data

    def _random_draws(self, nd: pd.DataFrame, allow_new_levels: bool) -> np.ndarray:
        """``Z b`` of rows for every draw: (draws, rows)."""
        out = np.zeros((len(self.fixef_draws), len(nd)))
        for p in self._term_plans:
            t = p.term
            code, new = level_codes(t, nd, allow_new_levels)
            u = self._deviations(p)
            u = u[..., None] if u.ndim == 2 else u
            contrib = np.einsum("nc,dnc->dn", t.model_rows(nd), u[:, code, :])
            out += np.where(new[None, :], 0.0, contrib)
        return out
