"""Type-III Wald tests and information-criterion model selection for fitted models.

- :func:`anova`: one Wald chi-square test per term (intercept included), as
  ``car::Anova(fit, type = 3)`` computes them for a GLMM;
- :func:`compare_models`: AIC/BIC table with differences and weights, and the likelihood-ratio tests
  lme4's ``anova(fit1, fit2, ...)`` prints;
- :func:`bic_evidence`: Kass & Raftery's (1995) verbal scale for a BIC difference.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, cast

import numpy as np
import pandas as pd
from scipy import stats

from ..core.result import Result
from ..core.errors import ArgumentError, FormulaError
from ..mixed.fitted import FittedModel, PosteriorFit, coefficients, df_method, wald_test
from ..model import parse_formula

__all__ = ["AnovaTable", "ModelComparison", "anova", "compare_models", "bic_evidence"]


# --- type-III Wald tests --------------------------------------------------------------------------

@dataclass(frozen=True, eq=False, repr=False)
class AnovaTable(Result):
    """Wald tests, one row per term: ``term``, ``statistic`` (the Wald chi-square), ``df``,
    ``p_value``; for a linear mixed model F tests (``statistic`` the F value, ``df1`` and
    ``df2`` its numerator and denominator df, ``ddf`` naming the method)."""

    table: pd.DataFrame
    type: int = 3
    ddf: str | None = None  # F tests with this denominator df (lmer fits); None: chi-square

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def _title(self) -> str:
        if self.ddf is not None:
            return f"Type III F tests with {self.ddf}'s denominator df (lmerTest::anova)"
        return "Type-III Wald chi-square tests (car::Anova)"

    def _header(self) -> list[str]:
        return ["statistic: F" if self.ddf is not None else "statistic: Wald chi-square"]


def anova(fit: FittedModel, type: int | str = 3, *, ddf: str | None = None,
          test: str | None = None) -> AnovaTable:
    """Type-III Wald chi-square tests of each fixed-effect term (R: ``car::Anova(fit, type = 3)``).

    For each term (the intercept included), ``L`` selects that term's coefficients and
    ``chisq = (L b)' (L V L')^-1 (L b)`` with ``df = rank(L V L')``.  With treatment coding, the
    test of a main effect is its effect at the reference levels of the factors it interacts with,
    exactly as car reports it.

    Parameters
    ----------
    fit : fitted model
        Needs ``fixef``, ``vcov`` and ``fixed_design.column_terms`` (the term of each column).
    type : 3 or "III"
        Only type-III tests are provided.
    ddf : {"Satterthwaite", "Kenward-Roger"}, optional
        For a linear mixed model (:func:`evalmix.lmer`): F tests of each term except the
        intercept with these denominator df, as ``lmerTest::anova(fit, ddf=)`` (Satterthwaite by
        default), along lmerTest's own hypothesis rows (``fit.type3_hypotheses()``; the
        Satterthwaite df depend on the rows), whatever the coding.  Where a term is no plain
        variable or product of variables (``I(x^2)``), each term's hypothesis sets its
        coefficients to zero, which is lmerTest's for models without interactions or with
        sum-to-zero contrasts.  An ML fit's Kenward-Roger tests are those of its REML refit, as
        pbkrtest's ``KRmodcomp``.
    test : {"F", "Chisq"}, optional
        ``"Chisq"``: Wald chi-square tests of every term, the intercept included, for any fit
        (``car::Anova(fit, type = 3, test.statistic = "Chisq")``, lmer fits included);
        ``"F"``: the F tests of a linear mixed model (the default for lmer fits; other fits
        have no finite denominator df).

    Returns
    -------
    AnovaTable

    Examples
    --------
    >>> import evalmix
    >>> runs = evalmix.simulate.glmm_runs(3, 40, 3, rng=1)
    >>> fit = evalmix.glmer("correct ~ model + (1|item) + (1|item:run)", runs)
    >>> evalmix.anova(fit).to_frame().round(3)
              term  statistic  df  p_value
    0  (Intercept)      7.132   1    0.008
    1        model     25.952   2    0.000
    """
    if str(type).upper() not in ("3", "III"):
        raise ValueError(f"type={type!r}: only type-III Wald tests (type=3) are provided")
    if getattr(fit, "fixef_draws", None) is not None:
        raise TypeError("Wald tests need a maximum-likelihood fit (fixef and vcov); "
                        "for a posterior fit, look at contrasts with evalmix.contrast")
    if test is not None and test not in ("F", "Chisq"):
        raise ArgumentError(f"test={test!r}: use 'F' (lmer fits: F tests with Satterthwaite or "
                            "Kenward-Roger df) or 'Chisq' (Wald chi-square tests, car::Anova)")
    if test == "Chisq" and ddf is not None:
        raise ArgumentError(f"ddf={ddf!r} goes with F tests: Wald chi-square tests (test='Chisq') "
                            "have no denominator df; use test='F' with ddf=")
    if test == "F" and getattr(fit, "df_method", None) is None:
        raise ArgumentError(f"test='F': a {_type_name(fit)} has no finite denominator df (its tests "
                            "are asymptotic); use test='Chisq' (Wald chi-square, car::Anova), or fit "
                            "a linear mixed model with evalmix.lmer")
    coefs = coefficients(fit)
    names = coefs.names
    beta, vcov = coefs.normal
    column_terms = list(fit.fixed_design.column_terms)
    term_of = dict(zip(map(str, fit.fixed_design.columns), column_terms))
    if len(column_terms) != len(names) and all(n in term_of for n in names):
        # the fixed effects are some of the design's columns: a clmm's thresholds take the
        # intercept's place, so its location effects are tested without it
        column_terms = [term_of[n] for n in names]
    if len(column_terms) != len(names):
        raise ValueError(f"fixed_design.column_terms has {len(column_terms)} entries for "
                         f"{len(names)} fixed effects")
    dfm = None if test == "Chisq" else df_method(fit, ddf)
    if dfm is not None:  # lmerTest: F tests with finite denominator df, no intercept row
        if getattr(dfm, "beta", None) is not None:  # an ML fit's Kenward-Roger tests: its REML refit's
            beta = np.asarray(dfm.beta, dtype=float)  # type: ignore[attr-defined]
        hypotheses = getattr(fit, "type3_hypotheses", None)
        rows_of = hypotheses() if callable(hypotheses) else None  # lmerTest's rows of each term
        coding = dict(getattr(fit.fixed_design, "contrasts", {}) or {})
        treated = [f for f, kind in coding.items() if isinstance(kind, str) and kind == "treatment"]
        inter = [t for t in dict.fromkeys(column_terms) if ":" in t
                 and any(f in t.split(":") for f in treated)]
        if inter and rows_of is None:
            import warnings

            from ..core.errors import DataWarning

            warnings.warn(f"the fit has interaction term(s) {inter} of treatment-coded factors "
                          f"{treated}: each F test sets that term's coefficients to zero (main "
                          "effects at the reference levels, as car::Anova), which is not "
                          "lmerTest's type III hypothesis; refit with contrasts="
                          f"{ {f: 'sum' for f in treated} } for lmerTest's tests",
                          DataWarning, stacklevel=2)
        f_rows = []
        for term in dict.fromkeys(column_terms):
            if term == "(Intercept)":
                continue
            L = np.eye(len(names))[[i for i, t in enumerate(column_terms) if t == term]]
            if rows_of is not None and term in rows_of:
                L = rows_of[term]
            F, ndf, ddf_, p = dfm.f_test(L, beta)
            # the term as R prints it (`lang name`, I(age^2)), as the Wald rows below
            f_rows.append((getattr(fit.fixed_design, "term_label", lambda t: t)(term), F, ndf, ddf_, p))
        return AnovaTable(pd.DataFrame(f_rows, columns=["term", "statistic", "df1", "df2",
                                                        "p_value"]), ddf=dfm.name)
    rows = []
    for term in dict.fromkeys(column_terms):  # unique, in column order
        L = np.eye(len(names))[[i for i, t in enumerate(column_terms) if t == term]]
        # the term as R prints it (I(age^2), factor(site)) where the design knows it
        label = getattr(fit.fixed_design, "term_label", lambda t: t)(term)
        rows.append((label, *wald_test(L, beta, vcov, separation=coefs.separation)))
    divergent = [r[0] for r in rows if np.isnan(r[1])]
    if coefs.separation is not None and divergent:
        import warnings

        from ..core.errors import SeparationWarning

        warnings.warn(f"no Wald test for {divergent}: their estimates diverge (separation, see "
                      "fit.separation); refit with fixef_prior='normal(0, 2.5)' or compare "
                      "likelihoods of nested fits", SeparationWarning, stacklevel=2)
    return AnovaTable(pd.DataFrame(rows, columns=["term", "statistic", "df", "p_value"]))


def _type_name(fit: object) -> str:
    return type(fit).__name__


# --- model comparison -----------------------------------------------------------------------------

_BANDS = ((2.0, "weak"), (6.0, "positive"), (10.0, "strong"), (np.inf, "very strong"))


def bic_evidence(delta_bic: float) -> str:
    """Kass & Raftery's (1995) category for a BIC difference (about 2 log Bayes factor).

    0-2: "weak" (not worth more than a bare mention), 2-6: "positive", 6-10: "strong",
    above 10: "very strong".

    Examples
    --------
    >>> bic_evidence(9.05)
    'strong'
    """
    d = abs(float(delta_bic))
    for bound, label in _BANDS:
        if d <= bound:
            return label
    return "very strong"  # pragma: no cover - inf bound always matches


def _random_terms(formula: str) -> frozenset[tuple[str, tuple[str, ...]]]:
    """The random terms of an lme4 formula (read by :func:`evalmix.model.parse_formula`), spaces
    removed from each left side and ``a:b`` grouping factors sorted, so that ``(1 | item:run)`` and
    ``(1|run:item)`` are one term."""
    return frozenset((re.sub(r"\s+", "", r.expr), tuple(sorted(r.group)))
                     for r in parse_formula(formula).random)


def _response(formula: str) -> str:
    return parse_formula(formula).response


def _nested(small: Any, large: Any) -> bool | None:
    """Whether ``small`` is a special case of ``large``: the same response, and its fixed terms and
    its random terms each a subset of ``large``'s (both are fitted to the same rows, which
    :func:`compare_models` checks).  None when the fits do not say their terms."""
    try:
        fs, fl = set(small.fixed_design.terms), set(large.fixed_design.terms)
        f_small, f_large = str(small.formula), str(large.formula)
    except AttributeError:
        return None
    try:
        if _response(f_small) != _response(f_large):
            return False
        return fs <= fl and _random_terms(f_small) <= _random_terms(f_large)
    except FormulaError:  # a formula the parser does not read says nothing of nesting
        return None


class LikelihoodFit(Protocol):
    """A maximum-likelihood fit as :func:`compare_models` reads it (:class:`evalmix.GlmerResult`);
    ``formula`` and ``fixed_design.terms``, when present, name it and check nesting."""

    @property
    def loglik(self) -> float: ...

    @property
    def df(self) -> int: ...

    @property
    def nobs(self) -> int: ...

    @property
    def aic(self) -> float: ...

    @property
    def bic(self) -> float: ...


@dataclass(frozen=True, eq=False, repr=False)
class ModelComparison(Result):
    """Information criteria of several fits, sorted by BIC, with lme4-style likelihood-ratio tests.

    ``table`` columns: ``name``, ``df``, ``loglik``, ``aic``, ``bic``, ``delta_bic``,
    ``bic_weight``, ``delta_aic``, ``aic_weight``, and, for each model compared with the next
    smaller one in lme4's order (by number of parameters), ``lrt_vs``, ``nested``, ``statistic``
    (the likelihood-ratio chi-square), ``df_diff``, ``p_value``.  ``lrt`` holds the table in
    lme4's ``anova()`` layout.
    """

    table: pd.DataFrame
    lrt: pd.DataFrame
    criterion: str = "bic"

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        from ..core.result import frame_records

        out = super().to_dict()
        out["lrt"] = frame_records(self.lrt)
        out["verdict"] = self.verdict()
        return out

    def _title(self) -> str:
        return "Model comparison" + (" (likelihood-ratio tests: lrt_vs, statistic, df_diff, "
                                     "p_value)" if self.criterion == "bic" else f" by {self.criterion}")

    def _notes(self) -> list[str]:
        return [self.verdict()]

    def verdict(self) -> str:
        """Plain-language reading of the BIC difference between the best two models.

        On AI4Math: ``'strong evidence for model + language over model + language + prompt
        (ΔBIC = 9.0, BIC weight 0.99; Kass & Raftery 1995)'``.
        """
        t = self.table
        if len(t) < 2:
            return f"only one model: {t['name'].iloc[0]}"
        best, second = t.iloc[0], t.iloc[1]
        if self.criterion != "bic":
            ic = self.criterion
            return (f"{best['name']} has the higher expected log predictive density "
                    f"(ELPD-{ic.upper()} difference {second['elpd_diff']:.1f}, "
                    f"SE {second['dse']:.1f}) over {second['name']}")
        delta = float(second["delta_bic"])
        return (f"{bic_evidence(delta)} evidence for {best['name']} over {second['name']} "
                f"(ΔBIC = {delta:.1f}, BIC weight {best['bic_weight']:.2f}; "
                "Kass & Raftery 1995)")


def _weights(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    delta = values - values.min()
    w = np.exp(-delta / 2)
    return delta, w / w.sum()


def compare_models(fits: Mapping[str, LikelihoodFit | PosteriorFit] | Sequence[LikelihoodFit | PosteriorFit],
                   *, ic: str = "loo") -> ModelComparison:
    """Compare fits by AIC, BIC and likelihood-ratio tests (R: lme4's ``anova(fit1, fit2, ...)``).

    Parameters
    ----------
    fits : dict name -> fit, or list of fits
        Maximum-likelihood fits of the same rows (``loglik``, ``df``, ``nobs``, ``aic``,
        ``bic``; ``formula`` and ``fixed_design.terms`` to name them and check nesting).  REML
        fits of :func:`evalmix.lmer` are refitted by maximum likelihood first, as lme4's
        ``anova()`` does; fits of different families (lmer and glmer) are refused.  A list
        is named by each fit's formula.  Posterior fits (``fixef_draws`` and ``idata`` with a
        log-likelihood group) are compared by expected log predictive density instead
        (``arviz.compare``): the table then has ArviZ's columns (``elpd_loo``, ``p_loo``,
        ``elpd_diff``, ``weight``, ``se``, ``dse``, ``warning``...) with ``name``, best first.
    ic : {"loo", "waic"}
        The ELPD estimate for posterior fits.

    Returns
    -------
    ModelComparison
        Sorted by BIC.  ``delta_bic`` and ``delta_aic`` are differences from the best model,
        ``bic_weight`` and ``aic_weight`` are ``exp(-delta/2)`` normalised to sum to one.  As in
        lme4, models are ordered by their number of parameters and each is tested against the
        one before it: ``statistic = 2 * max(0, loglik - loglik_prev)``, ``df_diff`` the difference
        in parameters, ``p`` from the chi-square distribution (none when ``df_diff`` is 0).
        lme4 does not check that the pair is nested; ``nested`` says whether it is (same response,
        the smaller model's fixed terms and random terms each a subset of the larger's); the test is
        only meaningful when it is.

    Examples
    --------
    >>> import evalmix
    >>> runs = evalmix.simulate.glmm_runs(3, 40, 3, rng=1)
    >>> fit = evalmix.glmer("correct ~ model + (1|item) + (1|item:run)", runs)
    >>> null = evalmix.glmer("correct ~ 1 + (1|item) + (1|item:run)", runs)
    >>> cmp = evalmix.compare_models({"null": null, "model": fit})
    >>> cmp.to_frame()[["name", "df", "delta_bic"]].round(1)
        name  df  delta_bic
    0  model   5        0.0
    1   null   3       16.5
    >>> cmp.verdict()
    'very strong evidence for model over null (ΔBIC = 16.5, BIC weight 1.00; Kass & Raftery 1995)'
    """
    if isinstance(fits, Mapping):
        items = [(str(k), v) for k, v in fits.items()]
    else:
        items = [(str(getattr(f, "formula", f"model{i + 1}")), f) for i, f in enumerate(fits)]
    if not items:
        raise ValueError("no fits to compare")
    names = [n for n, _ in items]
    if len(set(names)) != len(names):
        raise ValueError(f"model names must be unique: {names}")
    posterior = [getattr(f, "fixef_draws", None) is not None for _, f in items]
    if all(posterior):
        return _compare_posterior(items, ic)
    for (name, f), post in zip(items, posterior):
        if post or not hasattr(f, "loglik"):
            raise TypeError(f"{name!r} is not a maximum-likelihood fit (it needs loglik, df, "
                            "nobs); compare posterior fits among themselves")
    families = {str(fam) for _, f in items if (fam := getattr(f, "family", None)) is not None}
    if len(families) > 1:
        raise ValueError(f"the fits have different likelihoods ({', '.join(sorted(families))}): a "
                         "linear mixed model (lmer) and a binomial GLMM (glmer) cannot be compared "
                         "by likelihood; compare fits of one family")
    # lme4's anova(): REML fits are refitted by maximum likelihood before the comparison
    items = [(name, getattr(f, "refit_ml")() if getattr(f, "reml", False) else f)
             for name, f in items]
    ml = [(name, cast(LikelihoodFit, f)) for name, f in items]  # every fit passed the check above
    nobs = {int(f.nobs) for _, f in ml}
    if len(nobs) > 1:
        raise ValueError(f"models were not all fitted to the same number of rows: {sorted(nobs)}")
    ll = np.array([float(f.loglik) for _, f in ml])
    df = np.array([int(f.df) for _, f in ml])
    aic = np.array([float(f.aic) for _, f in ml])
    bic = np.array([float(f.bic) for _, f in ml])
    d_bic, w_bic = _weights(bic)
    d_aic, w_aic = _weights(aic)
    table = pd.DataFrame({"name": names, "df": df, "loglik": ll, "aic": aic, "bic": bic,
                          "delta_bic": d_bic, "bic_weight": w_bic, "delta_aic": d_aic,
                          "aic_weight": w_aic})

    # lme4: stable order by number of parameters, each model against the previous one
    order = np.argsort(df, kind="stable")
    lrt_rows = []
    for pos, i in enumerate(order):
        row = {"name": names[i], "npar": int(df[i]), "aic": aic[i], "bic": bic[i],
               "loglik": ll[i], "deviance": -2 * ll[i], "statistic": np.nan, "df_diff": np.nan,
               "p_value": np.nan, "lrt_vs": None, "nested": None}
        if pos > 0:
            j = order[pos - 1]
            chisq = 2 * max(0.0, ll[i] - ll[j])
            ddf = int(df[i] - df[j])
            row.update(statistic=chisq, df_diff=ddf, lrt_vs=names[j],
                       p_value=float(stats.chi2.sf(chisq, ddf)) if ddf > 0 else np.nan,
                       nested=_nested(items[j][1], items[i][1]))
        lrt_rows.append(row)
    lrt = pd.DataFrame(lrt_rows)
    table = table.merge(lrt[["name", "lrt_vs", "nested", "statistic", "df_diff", "p_value"]],
                        on="name")
    table = table.sort_values("bic", kind="stable").reset_index(drop=True)
    return ModelComparison(table=table, lrt=lrt)


def _compare_posterior(items: list[tuple[str, Any]], ic: str) -> ModelComparison:
    """ELPD comparison (PSIS-LOO or WAIC) of posterior fits through ArviZ."""
    import inspect
    import warnings

    import arviz as az

    if ic not in ("loo", "waic"):
        raise ValueError(f"ic={ic!r}: use 'loo' or 'waic'")
    criterion: Literal["loo", "waic"] = "waic" if ic == "waic" else "loo"
    nobs = {int(f.nobs) for _, f in items if hasattr(f, "nobs")}
    if len(nobs) > 1:
        raise ValueError(f"models were not all fitted to the same number of rows: {sorted(nobs)}")
    with warnings.catch_warnings():
        # arviz's notes on scale and deprecations; unreliable PSIS tails show in "warning"
        warnings.simplefilter("ignore")
        if "ic" in inspect.signature(az.compare).parameters:  # ArviZ 0.x: LOO or WAIC
            tab = az.compare({n: f.idata for n, f in items}, ic=criterion)
        elif criterion == "waic":
            raise ArgumentError("ic='waic' needs ArviZ 0.x: ArviZ 1 compares posterior fits by PSIS-LOO "
                                "(ic='loo')")
        else:  # ArviZ 1 compares by PSIS-LOO only; its columns take ArviZ 0.x's names, one table on both
            tab = az.compare({n: f.idata for n, f in items}).rename(columns={"elpd": "elpd_loo", "p": "p_loo"})
    table = tab.rename_axis("name").reset_index()
    if "elpd_diff" in table and (table["elpd_diff"] <= 0).all():
        # ArviZ 1 reports each model's ELPD minus the best one's; ArviZ 0.x (and this table) the
        # best one's minus each model's
        table["elpd_diff"] = -table["elpd_diff"]
    return ModelComparison(table=table, lrt=pd.DataFrame(), criterion=ic)
