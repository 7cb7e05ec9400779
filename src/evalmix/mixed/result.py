"""One base for every maximum-likelihood mixed-model fit, as lme4's one ``merMod`` class.

:class:`MixedResult` is the base of the results of :func:`evalmix.glmer`, :func:`evalmix.lmer`,
:func:`evalmix.clmm` and :func:`evalmix.glmmtmb`. What is computed the same way for every engine is
written here once: the information criteria, the residual degrees of freedom, the group sizes, Wald
intervals, Wald tests of linear hypotheses and predictions (population-level or with the random
effects). Each engine's result holds its estimates (``fixef``, ``vcov``, ``loglik``, ``df``,
``nobs``, ``varcorr``, ``converged``, ``fixed_design``, ``link``) and its conditional modes
(``ranef()``); an engine overrides a method only where it has more to offer (profile and bootstrap
intervals of glmer, the F tests of lmer).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
from scipy import stats

from ..core.arguments import check_level
from ..core.errors import ArgumentError, DataError, FormulaError
from ..core import tables
from ..core.result import Result
from .convergence import OptimizerReport
from .fitted import LinearHypothesis, linear_hypothesis
from .links import inverse_link
from .summary import CoefBlock, MixedSummary, named_row
from .summary import layout as summary_layout

if TYPE_CHECKING:
    from numpy.typing import ArrayLike

    from ..model import FixedDesign, RandomTerm

__all__ = ["CoefTable", "ConfidenceIntervals", "MixedResult", "ModelRows", "information_criteria",
           "population_level"]


def information_criteria(loglik: float, df: int, nobs: int) -> tuple[float, float]:
    """AIC and BIC of a fit with ``df`` parameters (R's ``AIC`` and ``BIC``:
    ``-2 logLik + k df``, ``k = 2`` and ``k = log(nobs)``).

    Examples
    --------
    >>> [round(v, 3) for v in information_criteria(-10.0, 3, 100)]
    [26.0, 33.816]
    """
    return -2.0 * loglik + 2.0 * df, -2.0 * loglik + math.log(nobs) * df


def population_level(re_form: object) -> bool:
    """Whether ``predict(re_form=...)`` leaves the random effects out.

    As lme4's ``re.form``: ``None`` (R's ``NULL``, the default) includes every random effect;
    ``"NA"``, ``"~0"`` or ``False`` gives population-level predictions; ``True`` is ``None``.

    Examples
    --------
    >>> population_level(None), population_level("NA"), population_level("~0"), population_level(False)
    (False, True, True, True)
    """
    if re_form is None or re_form is True:
        return False
    if re_form is False:
        return True
    if isinstance(re_form, float) and math.isnan(re_form):
        return True
    if isinstance(re_form, str) and re_form.replace(" ", "") in ("NA", "~0", "0"):
        return True
    raise ArgumentError(f"re_form={re_form!r}: use None (every random effect, R's re.form = NULL) or "
                        "'NA', '~0' or False (none: population-level predictions, R's re.form = NA)")


def level_codes(term: RandomTerm, nd: pd.DataFrame, allow_new_levels: bool) -> tuple[np.ndarray, np.ndarray]:
    """The codes of the rows' levels of ``term``'s grouping factor (0 where new) and which rows
    have a level the fit has not seen (an error unless ``allow_new_levels``: they then get no
    random effect, as lme4's ``allow.new.levels``)."""
    from ..model import group_codes_for

    code = group_codes_for(term, nd)
    new = code < 0
    if new.any() and not allow_new_levels:
        raise FormulaError(f"grouping factor {term.group!r} has level(s) not in the fit, e.g. "
                           f"row {nd.index[np.flatnonzero(new)[0]]!r}; "
                           "pass allow_new_levels=True to predict them with zero effect")
    return np.maximum(code, 0), new


@dataclass(frozen=True)
class ModelRows:
    """The rows a fit was made on and its random terms: what ``predict()`` reads for the fitted rows
    and for new ones (lme4 keeps the same in a ``merMod``)."""

    data: pd.DataFrame | None  # None after remove_data()
    terms: Sequence[RandomTerm]
    offset: np.ndarray | None = None  # the fitted rows' offset (None: no offset() term)


@dataclass(frozen=True, eq=False, repr=False)
class ConfidenceIntervals(Result):
    """Intervals for the fixed effects (and, where the method gives them, the random-effect
    standard deviations).

    ``table``: ``term`` (fixed effects by name; standard deviations as lme4 names them with
    ``signames = FALSE``, ``sd_(Intercept)|item``), ``estimate``, ``conf_low``, ``conf_high``,
    ``method``. ``boot`` holds the bootstrap replicates of ``method="boot"`` (glmer).

    Examples
    --------
    >>> import evalmix
    >>> runs = evalmix.simulate.glmm_runs(3, 40, 2, rng=1)
    >>> fit = evalmix.glmer("correct ~ model + (1|item)", runs)
    >>> fit.confint(parm="beta_").to_frame().columns.tolist()
    ['term', 'estimate', 'conf_low', 'conf_high', 'method']
    """

    table: pd.DataFrame
    level: float
    method: str
    boot: object | None = None

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def _title(self) -> str:
        return f"{self.level:.0%} {self.method} confidence intervals"

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update(level=self.level, method=self.method)
        return out


@dataclass(frozen=True, eq=False, repr=False)
class CoefTable(Result):
    """The coefficient table of every fit (``coef(summary(fit))``), printed as R prints it
    (``printCoefmat``).

    It reads like its table: ``ct["se"]``, ``ct.columns``, ``ct.set_index("term")``... are the
    table's (``to_frame()`` gives the table itself).

    Attributes
    ----------
    table : DataFrame
        ``term`` (a clmm's ``kind`` beside it: ``threshold`` or ``location``), ``estimate``,
        ``se``, ``df`` (t tests), ``statistic`` (z or t), ``p_value``, ``conf_low``,
        ``conf_high``.
    test : {"z", "t", "posterior"}
        Wald z tests (glmer, clmm, glmmtmb), t tests with finite df (lmer), or a posterior's
        summaries (the Bayesian fits: no statistic or p-value).
    ddf : str or None
        The denominator-df method of t tests (``"Satterthwaite"``, ``"Kenward-Roger"``).
    conf_level : float

    Examples
    --------
    >>> import evalmix
    >>> fit = evalmix.glmer("correct ~ model + (1|item)", evalmix.simulate.glmm_runs(3, 40, 2, rng=1))
    >>> ct = fit.coef_table()
    >>> ct.test, ct.columns.tolist()[:3], len(ct)
    ('z', ['term', 'estimate', 'se'], 3)
    """

    table: pd.DataFrame
    test: str = "z"
    ddf: str | None = None
    conf_level: float = 0.95

    def to_frame(self) -> pd.DataFrame:
        return self.table

    def __getitem__(self, column: str) -> pd.Series:
        """A column of the table (``fit.coef_table()["se"]``)."""
        return self.table[column]

    def __getattr__(self, name: str) -> Any:
        # what the result does not define, its table does (set_index, loc, itertuples...)
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(object.__getattribute__(self, "table"), name)

    def __len__(self) -> int:
        return len(self.table)

    def _title(self) -> str:
        if self.test == "posterior":
            return "Fixed effects (posterior mean, SD and highest-density interval)"
        if self.test == "t":
            return f"Fixed effects (t tests with {self.ddf}'s df, lmerTest)"
        return "Fixed effects (Wald z tests)"

    def _header(self) -> list[str]:
        if self.test == "posterior":
            return [f"{self.conf_level:g} highest-density intervals: conf_low, conf_high"]
        scale = "t with those df" if self.test == "t" else "Wald z"
        return [f"{self.conf_level:g} confidence intervals: conf_low, conf_high ({scale})"]

    def __repr__(self) -> str:
        """As R prints ``summary(fit)$coefficients`` (``printCoefmat``); a posterior's as brms
        prints its population-level effects."""
        if self.test == "posterior":
            t = self.table[["term", "estimate", "se", "conf_low", "conf_high"]]
            pct = f"{self.conf_level:.0%}"
            head = ["Estimate", "Est.Error", f"l-{pct} CI", f"u-{pct} CI"]
            return "\n".join([f"{self._title()}:", *tables.coefmat_lines(t, head, statistic=None, p=None)])
        if self.test == "t":
            t = self.table[["term", "estimate", "se", "df", "statistic", "p_value"]]
            head = ["Estimate", "Std. Error", "df", "t value", "Pr(>|t|)"]
        else:
            t = self.table[["term", "estimate", "se", "statistic", "p_value"]]
            head = ["Estimate", "Std. Error", "z value", "Pr(>|z|)"]
        return "\n".join([f"{self._title()}:", *tables.coefmat_lines(t, head)])


_PARMS = ("all", "beta_", "theta_")


class MixedResult(Result):
    """The base of every maximum-likelihood mixed-model fit: one vocabulary for glmer, lmer,
    clmm and glmmtmb.

    Every fit answers ``fixef`` (named as R names terms; a clmm's location effects, its
    thresholds beside them), ``vcov``, ``loglik``, ``aic``, ``bic``, ``deviance``, ``df`` (the
    number of parameters), ``df_resid``, ``nobs``, ``ngroups``, ``varcorr`` (lme4's ``group,
    var1, var2, variance, sd``), ``ranef()``, ``converged``, ``confint()``, ``predict()``,
    ``wald_test()``, ``coef_table()`` and ``summary()``; the inference verbs
    (:func:`evalmix.emmeans`, :func:`evalmix.anova`, :func:`evalmix.compare_models`,
    :func:`evalmix.linear_hypothesis`) take any of them.

    Examples
    --------
    >>> import evalmix
    >>> runs = evalmix.simulate.glmm_runs(3, 40, 2, rng=1)
    >>> fit = evalmix.glmer("correct ~ model + (1|item)", runs)
    >>> isinstance(fit, evalmix.MixedResult), dict(fit.ngroups), fit.df_resid == fit.nobs - fit.df
    (True, {'item': 40}, True)
    """

    if TYPE_CHECKING:  # what each engine's result holds (dataclass fields or properties)
        @property
        def formula(self) -> str: ...
        @property
        def fixef(self) -> pd.Series: ...
        @property
        def vcov(self) -> pd.DataFrame: ...
        @property
        def loglik(self) -> float: ...
        @property
        def df(self) -> int: ...
        @property
        def nobs(self) -> int: ...
        @property
        def varcorr(self) -> pd.DataFrame: ...
        @property
        def converged(self) -> bool: ...
        @property
        def fixed_design(self) -> FixedDesign: ...
        @property
        def link(self) -> str: ...
        @property
        def optimizer(self) -> OptimizerReport: ...
        def coef_table(self, *, conf_level: float = 0.95) -> CoefTable: ...

    @property
    def max_grad(self) -> float:
        """Largest absolute gradient at the optimum (``optimizer.max_grad``; ordinal's
        ``max.grad``)."""
        return self.optimizer.max_grad

    @property
    def niter(self) -> int:
        """Iterations of the optimiser (``optimizer.iterations``; ordinal's ``niter``)."""
        return self.optimizer.iterations

    # ------------------------------------------------------------ information criteria
    @property
    def aic(self) -> float:
        """Akaike's information criterion, ``-2 logLik + 2 df`` (R's ``AIC``; of the REML
        criterion for a REML fit, as lme4)."""
        return information_criteria(self.loglik, self.df, self.nobs)[0]

    @property
    def bic(self) -> float:
        """The Bayesian information criterion, ``-2 logLik + log(nobs) df`` (R's ``BIC``)."""
        return information_criteria(self.loglik, self.df, self.nobs)[1]

    @property
    def df_resid(self) -> int:
        """Residual degrees of freedom, ``nobs - df`` (R's ``df.residual``)."""
        return int(self.nobs) - int(self.df)

    # ------------------------------------------------------------------ random effects
    def ranef(self) -> pd.DataFrame:
        """Conditional modes of the random effects (``as.data.frame(ranef(fit))``): ``group``,
        ``term``, ``level``, ``mode`` (and ``sd``, the conditional SD, where the engine gives it)."""
        raise NotImplementedError  # pragma: no cover - every engine has its own

    @property
    def ngroups(self) -> dict[str, int]:
        """Number of levels of each grouping factor (lme4's ``ngrps``)."""
        out: dict[str, int] = {}
        for t in self._model_rows().terms:
            out.setdefault(t.group, t.nl)
        return out

    def _model_rows(self) -> ModelRows:
        raise NotImplementedError  # pragma: no cover - every engine has its own

    # -------------------------------------------------------------------- intervals
    def _wald_parameters(self) -> tuple[list[str], np.ndarray, np.ndarray]:
        """Names, estimates and SEs of the parameters that get Wald intervals (the fixed
        effects; a clmm adds its thresholds)."""
        names = [str(n) for n in self.fixef.index]
        se = np.sqrt(np.diag(self.vcov.loc[names, names].to_numpy(dtype=float)))
        return names, self.fixef.to_numpy(dtype=float), se

    def confint(self, method: str = "wald", level: float = 0.95, parm: str = "all") -> ConfidenceIntervals:
        """Wald confidence intervals of the fixed effects (R's ``confint(fit, method = "Wald")``).

        Parameters
        ----------
        method : {"wald"}
            ``estimate -+ z SE``. :func:`evalmix.glmer` fits also take ``"profile"`` and
            ``"boot"``.
        level : float
        parm : {"all", "beta_", "theta_"}
            All parameters, the fixed effects only, or the random-effect SDs only (which have
            no Wald interval: lme4 gives NA, and so does this).

        Returns
        -------
        ConfidenceIntervals
            ``term``, ``estimate``, ``conf_low``, ``conf_high``, ``method``.

        Examples
        --------
        >>> import evalmix
        >>> runs = evalmix.simulate.glmm_runs(3, 40, 2, rng=1)
        >>> fit = evalmix.glmer("correct ~ model + (1|item)", runs)
        >>> ci = fit.confint(parm="beta_").to_frame()
        >>> bool((ci.conf_low < ci.estimate).all() and (ci.estimate < ci.conf_high).all())
        True
        """
        if str(method).lower() != "wald":
            raise ArgumentError(f"method={method!r}: a {type(self).__name__} has Wald intervals "
                                "(method='wald'); profile and bootstrap intervals are glmer's "
                                "(evalmix.glmer(...).confint('profile'))")
        check_level(level, "level")
        if parm not in _PARMS:
            raise ArgumentError(f"parm={parm!r}: use 'all', 'beta_' (fixed effects) or 'theta_' "
                                "(random-effect standard deviations)")
        rows: list[tuple[str, float, float, float]] = []
        if parm in ("all", "theta_"):
            vc = self.varcorr
            var2 = vc["var2"] if "var2" in vc else pd.Series([None] * len(vc), index=vc.index)
            rows += [(f"sd_{v1}|{g}", float(sd), math.nan, math.nan)
                     for g, v1, v2, sd in zip(vc["group"], vc["var1"], var2, vc["sd"].astype(float))
                     if g != "Residual" and (v2 is None or v2 != v2)]
        if parm in ("all", "beta_"):
            z = stats.norm.isf((1 - level) / 2)
            names, est, se = self._wald_parameters()
            rows += [(n, b, b - z * s, b + z * s) for n, b, s in zip(names, est, se)]
        table = pd.DataFrame(rows, columns=["term", "estimate", "conf_low", "conf_high"])
        table["method"] = "wald"
        return ConfidenceIntervals(table=table, level=level, method="wald")

    def wald_test(self, hypotheses: str | Sequence[str] | ArrayLike | pd.DataFrame,
                  rhs: ArrayLike | None = None) -> LinearHypothesis:
        """Wald chi-square test of linear hypotheses about the fixed effects
        (``car::linearHypothesis``); see :func:`evalmix.linear_hypothesis`.

        Examples
        --------
        >>> import evalmix
        >>> fit = evalmix.glmer("correct ~ model + (1|item)", evalmix.simulate.glmm_runs(3, 60, 3, rng=2))
        >>> res = fit.wald_test("modelM2 = modelM3")
        >>> res.df, res.hypotheses
        (1, ('modelM2 - modelM3 = 0',))
        """
        return linear_hypothesis(self, hypotheses, rhs)

    def to_frame(self) -> pd.DataFrame:
        """The coefficient table (:meth:`coef_table`'s, at its defaults) as a DataFrame."""
        return self.coef_table().to_frame()

    def _title(self) -> str:
        return f"{type(self).__name__}: {self.formula}"

    # ---------------------------------------------------------------------- summary
    def summary(self, conf_level: float = 0.95) -> MixedSummary:
        """The fit as R's ``print(summary(fit))`` shows it, in lme4's layout for every engine:
        title (and family), formula, the fit criteria, scaled residuals (glmer, lmer), random
        effects and group sizes, the coefficient table(s) with R's digits, and the optimizer's
        report (:attr:`optimizer`) with the fit's messages.

        Its tables (``Fixed effects``, ``Random effects``, and what an engine adds) are
        :meth:`coef_table` and :attr:`varcorr`, in evalmix's vocabulary.

        Examples
        --------
        >>> import evalmix
        >>> fit = evalmix.glmer("correct ~ model + (1|item)", evalmix.simulate.glmm_runs(3, 40, 2, rng=1))
        >>> s = fit.summary()
        >>> list(s.tables)[:2], str(s).splitlines()[4]
        (['Fixed effects', 'Random effects'], '     AIC      BIC   logLik deviance df.resid')
        """
        return self._mixed_summary(self.coef_table(conf_level=conf_level))

    def _mixed_summary(self, ct: CoefTable) -> MixedSummary:
        """The summary of coefficient table ``ct``, from the engine's hooks."""
        closing = [self.optimizer.describe(), *self.optimizer.checks]
        closing += [m for m in self._summary_messages() if m not in closing]
        text = summary_layout(
            title=self._summary_title(ct), formula_line=self._summary_formula(),
            criteria=self._summary_criteria(), residuals=self._scaled_residuals(),
            random_heading=self._random_heading(), varcorr=self._varcorr_printed(),
            groups_line=self._groups_line(), extra=self._summary_extra(),
            blocks=self._coef_blocks(ct), correlation=self._summary_correlation(), closing=closing)
        tabs = [("Fixed effects", ct.to_frame()), ("Random effects", self.varcorr),
                *self._summary_tables()]
        return MixedSummary(self._summary_title(ct)[0].strip(), self._header(), tabs, closing, text)

    # the hooks: what an engine's printout says differently
    def _summary_title(self, ct: CoefTable) -> list[str]:
        """The first lines: the kind of fit (and lme4's family line)."""
        return [type(self).__name__]

    def _summary_formula(self) -> str:
        from ..model import r_formula

        return f"Formula: {r_formula(self.formula)}"

    def _summary_criteria(self) -> list[str]:
        """lme4's AIC / BIC / logLik / deviance / df.resid line, rounded to 1 decimal."""
        vals = [round(v, 1) for v in (self.aic, self.bic, self.loglik, self.deviance)]
        cells = [f"{v:.1f}" for v in vals] + [str(self.df_resid)]
        return named_row(["AIC", "BIC", "logLik", "deviance", "df.resid"], cells)

    def _scaled_residuals(self) -> Sequence[float] | None:
        """The quantiles (min, 1Q, median, 3Q, max) of the scaled residuals, where R prints them."""
        return None

    def _random_heading(self) -> list[str]:
        return ["Random effects:"]

    def _varcorr_printed(self) -> pd.DataFrame:
        vc = self.varcorr
        if "var1" not in vc:
            vc = vc.assign(var1="(Intercept)")
        if "var2" not in vc:
            vc = vc.assign(var2="")
        return vc

    def _groups_line(self) -> str:
        groups = "; ".join(f"{g}, {n}" for g, n in self.ngroups.items())
        return f"Number of obs: {self.nobs}, groups:  {groups}"

    def _summary_extra(self) -> list[str]:
        return []

    def _coef_blocks(self, ct: CoefTable) -> list[CoefBlock]:
        head = (("Estimate", "Std. Error", "df", "t value", "Pr(>|t|)") if ct.test == "t"
                else ("Estimate", "Std. Error", "z value", "Pr(>|z|)"))
        return [CoefBlock("Fixed effects:", ct.to_frame(), head)]

    def _summary_tables(self) -> list[tuple[str, pd.DataFrame]]:
        return []

    def _summary_correlation(self) -> list[str]:
        """lme4's correlation of the fixed effects (glmer, lmer; ordinal and glmmTMB print none)."""
        return []

    def _summary_messages(self) -> list[str]:
        return list(getattr(self, "messages", ()))

    # -------------------------------------------------------------------- prediction
    def _response(self, eta: np.ndarray) -> np.ndarray:
        """The response scale of a linear predictor (the inverse link)."""
        return inverse_link(self.link, eta)

    def predict(self, newdata: pd.DataFrame | None = None, re_form: object = None, type: str = "link",
                allow_new_levels: bool = False, *, re: bool | None = None) -> np.ndarray:
        """Predictions on the link or response scale (lme4's ``predict.merMod``).

        Parameters
        ----------
        newdata : DataFrame, optional
            Defaults to the fitted rows.
        re_form : None, "NA", "~0" or False
            ``None`` (R's ``re.form = NULL``): with the conditional modes of every random effect;
            ``"NA"``, ``"~0"`` or ``False``: population level (R's ``re.form = NA``).
        type : {"link", "response"}
            The linear predictor, or its inverse link (a probability, a mean score).
        allow_new_levels : bool
            Levels of a grouping factor not seen in the fit contribute 0 (else an error).
        re : bool, optional
            The earlier spelling of glmer fits: ``re=False`` is ``re_form="NA"``.

        Examples
        --------
        >>> import evalmix
        >>> runs = evalmix.simulate.glmm_runs(3, 40, 2, rng=1)
        >>> fit = evalmix.glmer("correct ~ model + (1|item)", runs)
        >>> p = fit.predict(runs.head(3), type="response")
        >>> bool(((p > 0) & (p < 1)).all()), fit.predict(runs.head(3), re_form="NA").shape
        (True, (3,))
        """
        if type not in ("link", "response"):
            raise ArgumentError(f"type={type!r}: use 'link' or 'response'")
        population = population_level(re_form) if re is None else not re
        rows = self._model_rows()
        nd = rows.data if newdata is None else newdata
        if nd is None:
            raise DataError("predict() without newdata needs the fitted rows, which this fit no longer "
                            "holds (remove_data()): pass newdata=")
        eta = self._fixed_part(np.asarray(self.fixed_design.model_matrix(nd), dtype=float))
        if newdata is None:
            if rows.offset is not None:
                eta = eta + rows.offset
        elif self.fixed_design.offsets:  # new rows: the formula's offset() terms, as lme4
            eta = eta + self.fixed_design.offset(nd)
        if not population:
            eta = eta + self._random_part(nd, allow_new_levels)
        return self._response(eta) if type == "response" else eta

    def _fixed_part(self, X: np.ndarray) -> np.ndarray:
        """``X beta`` of rows, ``X`` in the fixed design's columns (a clmm's fixef leaves out the
        intercept, whose place its thresholds take)."""
        names = [str(n) for n in self.fixef.index]
        columns = [str(c) for c in self.fixed_design.columns]
        return X[:, [columns.index(n) for n in names]] @ self.fixef.to_numpy(dtype=float)

    def _term_modes(self, k: int, term: RandomTerm) -> np.ndarray:
        """The conditional modes of random term ``k``: its levels x its coefficients (read from
        :meth:`ranef`; an engine that holds them as arrays returns those)."""
        modes = self.ranef()
        own = modes[modes["group"] == term.group]
        return np.column_stack([own[own["term"] == c].set_index("level")["mode"]
                                .reindex([str(v) for v in term.levels]).to_numpy(dtype=float)
                                for c in term.cnames])

    def _random_part(self, nd: pd.DataFrame, allow_new_levels: bool) -> np.ndarray:
        """``Z b`` of rows: each term's covariates times the modes of the rows' levels."""
        out = np.zeros(len(nd))
        for k, t in enumerate(self._model_rows().terms):
            code, new = level_codes(t, nd, allow_new_levels)
            B = self._term_modes(k, t)
            contrib = np.einsum("nc,nc->n", t.model_rows(nd), B[code])
            out += np.where(new, 0.0, contrib)
        return out
