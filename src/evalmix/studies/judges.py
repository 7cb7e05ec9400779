"""Judges in one model: LLM-as-judge verdicts with judge beside model, item and run.

Several judges (LLM graders, people) grade the same responses: model ``m`` answers item ``i`` in
run ``r`` once, and every judge ``j`` gives that *response* a verdict ``y_mirj``.  Judges are biased
(one is lenient, another strict) and disagree; items are shared by the models and runs are
repeated.  :func:`judge_study` puts all of it in one logistic mixed model (``evalmix.glmer``)::

    logit P(y_mirj = 1) = mu + model_m + judge_j + a_i + c_mir

with item intercepts ``a_i`` and response intercepts ``c_mir`` (the part of a response's quality
every judge sees).  From it come the judge bias (marginal means of ``judge`` and their contrasts
with the mean judge or a reference judge, on the log-odds and the probability scale), the
judge-by-model interaction (a likelihood-ratio test of ``model:judge``: does a judge favour some
models?), the agreement of the judges on the same responses (Krippendorff's alpha, Fleiss' kappa,
ICC(A,1) and Cohen's kappa of each pair, from :mod:`evalmix.stats.agreement` and
:func:`evalmix.studies.reliability.icc_matrix`) and the judges' share of the variance, from the same model
with ``(1|judge)`` as a random effect.

**Planning** (how many judges, items and runs to buy).  On the accuracy scale a verdict decomposes
into independent parts (a functional ANOVA of ``expit(eta + b_j + a_i + c_ir)`` plus the Bernoulli
noise; Hoeffding 1948), one variance per part: ``judge`` (the judge's bias), ``item``,
``item:judge`` (a judge finds some items easier than others judges do), ``response`` (a run's
response is better or worse than the item's average, for every judge) and ``residual`` (everything
unique to one verdict, the coin flip included).  The mean of ``n_i`` items x ``n_r`` runs x ``n_j``
judges averages each part over its distinct levels, so::

    Var(mean) = judge / n_j + item / n_i + item:judge / (n_i n_j)
                + response / (n_i n_r) + residual / (n_i n_r n_j)

This is :func:`evalmix.studies.variance.mean_se` with judges crossed instead of nested in runs: the judge
layer adds the two terms ``judge / n_j`` and ``item:judge / (n_i n_j)``.  ``judge / n_j`` does not
shrink with more items: a few judges put a floor under the SE when the estimand is "the accuracy a
randomly chosen judge would report" (``judges="random"``); with ``judges="fixed"`` the estimand is
the average over these judges and the term drops.  For a difference between two models the same
judges grade both, so most of the judge bias cancels; the parts are computed for the difference
(responses of different models are independent).  :func:`judge_components` computes the parts by
Gauss-Hermite quadrature, :func:`judge_se` the SE and :func:`plan_judges` the cheapest design.
A seeded simulation in the tests checks the formula against the SD of simulated means.

Ordinal ratings (1-5 or 1-10 scores) go through the same three models as cumulative-link mixed
models (:func:`evalmix.clmm`, logit link): the judge bias is then a contrast of latent-scale means
(``difference``: of mean ratings), the agreement is computed at the ordinal level, and the planning
parts are those of the mean rating (:func:`judge_components` with the fit's ``thresholds``).
:func:`judge_components_from_fit` reads the parts from a fitted lmer, glmer or clmm judge model and
:func:`judge_plan_components` from a long table (one linear mixed model for ratings).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, overload

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import special

from ..core.result import Result, Summary, contrast_label, frame_records
from ..stats.agreement import cohen_kappa, fleiss_kappa, krippendorff_alpha
from ..data.runs import RunsData, load_table, require_columns, show_rows
from ..inference.emmeans import contrast, emmeans, regrid
from ..core.errors import DataError
from ..model import make_formula
from .reliability import icc_matrix
from ..inference.selection import compare_models

if TYPE_CHECKING:
    from ..glmm import GlmerResult
    from ..lmm import LmerResult
    from ..ordinal import ClmmResult

__all__ = ["COMPONENTS", "JudgeAgreement", "JudgeParts", "JudgePlan", "JudgeStudy", "judge_agreement", "judge_components",
           "judge_components_from_fit", "judge_plan_components", "judge_se", "judge_study", "plan_judges"]

#: The accuracy-scale parts of a verdict, in the order of :func:`judge_se`.
COMPONENTS = ("judge", "item", "item:judge", "response", "residual")

Level = Literal["nominal", "ordinal", "interval"]


# ----------------------------------------------------------------------------------------------
# the long table


@dataclass(frozen=True)
class _Long:
    frame: pd.DataFrame  # columns model, item, run, judge, y, response (strings but y)
    cols: dict[str, str]  # role -> the data's column name


def _pick(df: pd.DataFrame, given: str | None, default: str, role: str) -> str | None:
    if given is not None:
        if given not in df.columns:
            require_columns(df, [given], None, f" (the {role} column, {role}=)")
        return given
    return default if default in df.columns else None


def _long(data: RunsData, *, judge: str, outcome: str | None, model: str | None, item: str | None,
          run: str | None) -> _Long:
    if not isinstance(judge, str):
        raise TypeError(f"judge= names a column (str), got {judge!r}")
    df = load_table(data, ids=(judge, model or "model", item or "item", run or "run"))
    require_columns(df, [judge], None, " (the judge column, judge=)")
    y_col = _pick(df, outcome, "correct", "outcome")
    if y_col is None:
        y_col = _pick(df, None, "score", "outcome")
    if y_col is None:
        raise DataError("no verdict column: name it with outcome= (the table has columns "
                        f"{', '.join(map(repr, map(str, df.columns)))})")
    item_col = _pick(df, item, "item", "item")
    if item_col is None:
        raise DataError("no item column: name it with item= (the table has columns "
                        f"{', '.join(map(repr, map(str, df.columns)))})")
    model_col = _pick(df, model, "model", "model")
    run_col = _pick(df, run, "run", "run")
    roles = {"judge": judge, "outcome": y_col, "item": item_col}
    if model_col is not None:
        roles["model"] = model_col
    if run_col is not None:
        roles["run"] = run_col
    if len(set(roles.values())) < len(roles):
        raise DataError(f"one column plays two roles: {roles}")
    keys = [c for c in (model_col, item_col, run_col, judge) if c is not None]
    bad = df[keys].isna().any(axis=1).to_numpy()
    if bad.any():
        raise DataError("missing values in the key columns " + ", ".join(map(repr, keys)) + ": "
                        + show_rows(df, bad, keys))
    values = df[y_col]
    num = values.astype(float) if pd.api.types.is_bool_dtype(values) else pd.to_numeric(values, errors="coerce")
    bad = (num.isna() | ~np.isfinite(num.to_numpy(float, na_value=np.nan))).to_numpy()
    if bad.any():
        raise DataError(f"verdict column {y_col!r} must hold numbers (0/1 verdicts or ratings); offending "
                        "rows: " + show_rows(df, bad, [y_col]))
    dup = df.duplicated(keys, keep=False).to_numpy()
    if dup.any():
        raise DataError(f"several verdicts for one (model, item, run, judge) in columns {keys}: "
                        + show_rows(df, dup, keys + [y_col]))
    out = pd.DataFrame({
        "model": df[model_col].astype(str).to_numpy() if model_col else "all",
        "item": df[item_col].astype(str).to_numpy(),
        "run": df[run_col].astype(str).to_numpy() if run_col else "1",
        "judge": df[judge].astype(str).to_numpy(),
        "y": num.to_numpy(float),
    })
    if out["judge"].nunique() < 2:
        raise DataError(f"judge column {judge!r} has one level ({out['judge'].iloc[0]!r}): judges are "
                        "compared with each other, give two or more")
    # a response is one answer of one model to one item in one run: every judge grades it
    out["response"] = out["model"] + "\x1f" + out["item"] + "\x1f" + out["run"]
    return _Long(out, roles)


def _ratings(long: _Long) -> pd.DataFrame:
    """Responses x judges table of verdicts (NaN where a judge did not grade a response)."""
    return long.frame.pivot(index="response", columns="judge", values="y")


# ----------------------------------------------------------------------------------------------
# agreement


@dataclass(frozen=True, eq=False, repr=False)
class JudgeAgreement(Result):
    """Agreement of judges on the same responses.

    ``table``: one row per coefficient (``coefficient``, ``estimate``, ``se``, ``conf_low``,
    ``conf_high``, ``p_value``, ``band``, ``n_items`` (responses used), ``n_raters`` (judges));
    ``pairs``: Cohen's kappa of every pair of judges (``judge_a``, ``judge_b``, ``estimate``,
    ``se``, ``conf_low``, ``conf_high``, ``p_value``, ``band``, ``n_items``).
    """

    table: pd.DataFrame
    pairs: pd.DataFrame
    level: str
    n_responses: int
    n_judges: int

    def _title(self) -> str:
        return f"Judge agreement ({self.level} scores)"

    def _header(self) -> list[str]:
        return [f"{self.n_judges} judges on {self.n_responses} responses (model x item x run)"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def summary(self) -> Summary:
        return Summary(self._title(), self._header(),
                       [("Agreement", self.table), ("Cohen's kappa of each pair", self.pairs)])

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"pairs": frame_records(self.pairs), "level": self.level}


def _agreement_row(res: Any, name: str) -> dict[str, Any]:
    return {"coefficient": name, "estimate": res.estimate, "se": res.se, "conf_low": res.conf_low,
            "conf_high": res.conf_high, "p_value": res.p_value, "band": res.band,
            "n_items": res.n_items, "n_raters": res.n_raters}


def _require_shared(long: _Long, tab: pd.DataFrame) -> None:
    """Refuse a verdicts table (responses x judges) in which no response has two judges' verdicts."""
    if not (tab.notna().sum(axis=1) >= 2).any():
        raise DataError(f"no response (model, item, run) was graded by two or more judges of "
                        f"{long.cols['judge']!r}: agreement needs judges grading the same responses")


def _agreement(long: _Long, level: Level, conf_level: float) -> JudgeAgreement:
    tab = _ratings(long)
    values = np.unique(long.frame["y"].to_numpy())
    if level not in ("nominal", "ordinal", "interval"):
        raise ValueError(f"level must be 'nominal', 'ordinal' or 'interval', got {level!r}")
    rows = []
    if len(values) < 2:
        raise DataError(f"every verdict in {long.cols['outcome']!r} is {values[0]:g}: agreement is undefined")
    _require_shared(long, tab)
    # alpha takes the incomplete rows; the kappas and the ICC need every judge on a response
    rows.append(_agreement_row(krippendorff_alpha(tab.to_numpy(), level=level), "krippendorff_alpha"))
    complete = tab.dropna()
    if len(complete) >= 2:
        rows.append(_agreement_row(fleiss_kappa(complete.to_numpy()), "fleiss_kappa"))
        ic = icc_matrix(complete.to_numpy(float), model="twoway", type="agreement", unit="single",
                        conf_level=conf_level)
        rows.append({"coefficient": "icc_a1", "estimate": ic["icc"], "se": math.nan,
                     "conf_low": ic["conf_low"], "conf_high": ic["conf_high"], "p_value": ic["p_value"],
                     "band": _icc_band(ic["icc"]), "n_items": int(ic["n_items"]),
                     "n_raters": int(complete.shape[1])})
    pairs = []
    weights = None if level == "nominal" else "quadratic"
    for a, b in itertools.combinations(tab.columns, 2):
        both = tab[[a, b]].dropna()
        if len(both) < 2 or both.nunique().max() < 2:
            continue
        k = cohen_kappa(both[a].to_numpy(), both[b].to_numpy(), weights=weights,
                        categories=sorted(values.tolist()), conf_level=conf_level)
        pairs.append({"judge_a": a, "judge_b": b, "estimate": k.estimate, "se": k.se,
                      "conf_low": k.conf_low, "conf_high": k.conf_high, "p_value": k.p_value,
                      "band": k.band, "n_items": k.n_items})
    cols = ["judge_a", "judge_b", "estimate", "se", "conf_low", "conf_high", "p_value", "band", "n_items"]
    return JudgeAgreement(table=pd.DataFrame(rows), pairs=pd.DataFrame(pairs, columns=cols), level=level,
                          n_responses=int(tab.shape[0]), n_judges=int(tab.shape[1]))


def _icc_band(value: float) -> str:
    # Koo & Li (2016), as evalmix.reliability's ICC results
    from .reliability import quality_band

    return str(quality_band(value)) if math.isfinite(value) else ""


def judge_agreement(data: RunsData, *, judge: str = "judge", outcome: str | None = None,
                    model: str | None = None, item: str | None = None, run: str | None = None,
                    level: Level = "nominal", conf_level: float = 0.95) -> JudgeAgreement:
    """Agreement of several judges grading the same responses (binary verdicts or ordinal scores).

    The long table has one row per (model, item, run, judge); the responses (model x item x run)
    are the rated units and the judges the raters.  Krippendorff's alpha uses every response with
    two or more verdicts; Fleiss' kappa and the two-way agreement ICC(A,1) (McGraw & Wong 1996,
    ``irr::icc(..., "twoway", "agreement")``) use the responses every judge graded; Cohen's kappa
    (quadratic weights for ordinal and interval scores) is given for every pair of judges.

    Parameters
    ----------
    data : DataFrame or path
        Long table of verdicts.
    judge : str
        The judge column.
    outcome : str, optional
        The verdict column (default ``correct``, else ``score``).
    model, item, run : str, optional
        Key columns (default ``model``, ``item``, ``run`` where present; ``item`` is required).
    level : {"nominal", "ordinal", "interval"}
        Measurement level of the verdicts: 0/1 verdicts are nominal, 1-10 ratings ordinal.
    conf_level : float
        Level of the intervals.

    Returns
    -------
    JudgeAgreement

    Examples
    --------
    >>> import pandas as pd
    >>> from evalmix import judge_agreement
    >>> df = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3, 4, 4], "judge": ["a", "b"] * 4,
    ...                    "score": [8, 7, 3, 3, 9, 9, 5, 2]})
    >>> r = judge_agreement(df, level="ordinal")
    >>> round(float(r.table.loc[0, "estimate"]), 3)
    0.787
    """
    long = _long(data, judge=judge, outcome=outcome, model=model, item=item, run=run)
    return _agreement(long, level, conf_level)


# ----------------------------------------------------------------------------------------------
# accuracy-scale parts of a verdict, the SE of a design and the planner


def _nodes(sd: float, n_nodes: int) -> tuple[np.ndarray, np.ndarray]:
    """Gauss-Hermite nodes (scaled by ``sd``) and weights of a normal effect; one node when sd = 0."""
    if sd == 0:
        return np.zeros(1), np.ones(1)
    x, w = special.roots_hermitenorm(n_nodes)
    return sd * x, w / w.sum()


def _binary_moments() -> tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]:
    """Mean and variance of a 0/1 verdict of a logistic model."""
    return special.expit, lambda x: special.expit(x) * special.expit(-x)


def _ordinal_moments(thresholds: Sequence[float], values: Sequence[float] | None
                     ) -> tuple[Callable[[np.ndarray], np.ndarray], Callable[[np.ndarray], np.ndarray]]:
    """Mean and variance of a rating of a cumulative-logit model, ``P(Y <= k) = expit(theta_k - eta)``."""
    theta = np.asarray(thresholds, float)
    if theta.ndim != 1 or len(theta) < 1 or not np.all(np.diff(theta) > 0):
        raise ValueError(f"thresholds must be increasing numbers, got {list(thresholds)}")
    vals = np.arange(1.0, len(theta) + 2) if values is None else np.asarray(values, float)
    if vals.shape != (len(theta) + 1,):
        raise ValueError(f"values must give one number per category ({len(theta) + 1}), got {list(vals)}")

    def probs(eta: np.ndarray) -> np.ndarray:
        cum = special.expit(theta - eta[..., None])
        zeros = np.zeros(eta.shape + (1,))
        return np.diff(np.concatenate([zeros, cum, zeros + 1.0], axis=-1), axis=-1)

    def mean(eta: np.ndarray) -> np.ndarray:
        return probs(eta) @ vals

    def var(eta: np.ndarray) -> np.ndarray:
        pr = probs(eta)
        return pr @ vals**2 - (pr @ vals) ** 2
    return mean, var


def judge_components(eta: float, *, sd_item: float, sd_response: float = 0.0, sd_judge: float = 0.0,
                     sd_model_item: float = 0.0, eta_b: float | None = None, n_nodes: int = 32,
                     thresholds: Sequence[float] | None = None, values: Sequence[float] | None = None
                     ) -> dict[str, float]:
    """Accuracy-scale variance parts of a verdict implied by the logistic judge model.

    For ``logit P(y = 1) = eta + b_j + a_i + d_mi + c_mir`` with normal judge, item, model-by-item
    and response intercepts of the given SDs (log-odds scale), returns the variance of each part
    of the verdict (see the module notes): ``judge``, ``item``, ``item:judge``, ``response`` and
    ``residual`` (Bernoulli noise included), plus ``accuracy`` (the mean).  With ``eta_b`` the
    parts are those of the difference ``y_a - y_b`` of two models graded by the same judges on the
    same items: the item effect ``a_i`` and the judges are shared, the model-by-item effects and
    the responses are each model's own; ``accuracy`` is then the difference of accuracies.

    Parameters
    ----------
    eta : float
        Linear predictor of the model (log-odds at the average judge).
    sd_item, sd_response, sd_judge : float
        Standard deviations of the item, response (one model's answer in one run) and judge
        intercepts.
    sd_model_item : float
        Standard deviation of the model-by-item intercepts (an item is harder for one model than
        for another); it is what keeps the item variance of a difference from cancelling.
    eta_b : float, optional
        Linear predictor of a second model: parts of the difference.
    n_nodes : int
        Gauss-Hermite nodes per dimension.
    thresholds : sequence of float, optional
        Ratings instead of 0/1 verdicts: the cut points of a cumulative-logit model
        ``P(Y <= k) = expit(theta_k - eta - ...)`` (as :func:`evalmix.clmm`), and the parts are
        those of the rating (its mean and its categorical noise in place of the accuracy and the
        Bernoulli noise).
    values : sequence of float, optional
        The numbers the rating categories stand for (default 1, 2, ..., K).

    Returns
    -------
    dict
        ``accuracy`` (the mean rating with ``thresholds``) and the five parts.

    Examples
    --------
    >>> c = judge_components(0.0, sd_item=1.0, sd_response=0.5, sd_judge=0.4)
    >>> round(c["accuracy"], 6), round(sum(c[k] for k in COMPONENTS), 6)
    (0.5, 0.25)
    """
    for name, v in (("sd_item", sd_item), ("sd_response", sd_response), ("sd_judge", sd_judge),
                    ("sd_model_item", sd_model_item)):
        if not (isinstance(v, (int, float)) and math.isfinite(v) and v >= 0):
            raise ValueError(f"{name} must be a finite number >= 0, got {v!r}")
    mean_of, noise_of = _binary_moments() if thresholds is None else _ordinal_moments(thresholds, values)
    xa, wa = _nodes(sd_item, n_nodes)
    xd, wd = _nodes(sd_model_item, n_nodes)
    xc, wc = _nodes(sd_response, n_nodes)
    xb, wb = _nodes(sd_judge, n_nodes)
    models = [(eta, 1.0)] if eta_b is None else [(eta, 1.0), (eta_b, -1.0)]
    # per model: m[a, d, b] = E_c P, its conditional variance over c, and the Bernoulli variance
    mean_c, var_c, bern, resp = [], 0.0, 0.0, 0.0
    wadb = wa[:, None, None] * wd[None, :, None] * wb[None, None, :]
    for e, sign in models:
        x = (e + xa[:, None, None, None] + xd[None, :, None, None] + xc[None, None, :, None]
             + xb[None, None, None, :])  # axes: item, model:item, response, judge
        p = mean_of(x)
        m = np.einsum("adcb,c->adb", p, wc)
        second = np.einsum("adcb,c->adb", p * p, wc)
        var_c += float(((second - m * m) * wadb).sum())
        bern += float((np.einsum("adcb,c->adb", noise_of(x), wc) * wadb).sum())
        # response: variance over c of the judge-averaged verdict, within item (a, d)
        over_b = np.einsum("adcb,b->adc", p, wb)
        g_ad = over_b @ wc
        resp += float((((over_b - g_ad[..., None]) ** 2) @ wc * wa[:, None] * wd[None, :]).sum())
        mean_c.append((sign, m))
    # E over d of each model's m (d is each model's own), and E over d of its square
    e1 = [(s, np.einsum("adb,d->ab", m, wd)) for s, m in mean_c]
    e2 = [np.einsum("adb,d->ab", m * m, wd) for _, m in mean_c]
    mab = sum(s * x for s, x in e1)  # E[diff | a, b]
    acc = float(wa @ mab @ wb)
    # E[diff^2 | a, b] over the independent model:item effects
    sq = sum(e2) + (2 * e1[0][0] * e1[1][0] * e1[0][1] * e1[1][1] if len(e1) == 2 else 0.0)
    var_ab = float((sq * np.outer(wa, wb)).sum()) - acc**2  # Var over (a, d's, b) of E_c diff
    judge = _var(wa @ mab, wb)
    # item: Var over (a, d's) of E_b diff
    g1 = [(s, x @ wb) for s, x in e1]  # E_b, per a (after E over d)
    g2 = [np.einsum("adb,b->ad", m, wb) for _, m in mean_c]
    g2sq = [(g * g) @ wd for g in g2]
    sq_item = sum(g2sq) + (2 * g1[0][0] * g1[1][0] * g1[0][1] * g1[1][1] if len(g1) == 2 else 0.0)
    item = float(sq_item @ wa) - acc**2
    item_judge = max(0.0, var_ab - item - judge)
    total = var_ab + var_c + bern
    residual = total - judge - item - item_judge - resp
    parts = {"judge": judge, "item": item, "item:judge": item_judge, "response": resp, "residual": residual}
    # quadrature round-off of an absent source (an SD of 0) is no variance: report an exact 0
    scale = max(total, 1e-300)
    return {"accuracy": acc, **{k: (0.0 if abs(v) < 1e-12 * scale else v) for k, v in parts.items()}}


@dataclass(frozen=True, eq=False, repr=False)
class JudgeParts(Result):
    """The planning parts of :func:`plan_judges`, one row per model.

    ``table``: ``model``, ``eta`` (the link-scale mean), ``accuracy`` (0/1 verdicts) or
    ``estimate`` (the mean score or rating) and the parts of :data:`COMPONENTS`; ``scale`` says what they are the
    variances of and ``source`` which fit they come from.
    """

    table: pd.DataFrame
    scale: str
    source: str

    def _title(self) -> str:
        return "Variance parts of a verdict for planning judges, items and runs"

    def _header(self) -> list[str]:
        return [f"scale: {self.scale}; from {self.source}; Var(mean) = judge / n_j + item / n_i + item:judge / "
                "(n_i n_j) + response / (n_i n_r) + residual / (n_i n_r n_j)"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"scale": self.scale, "source": self.source}


def _group_variances(fit: LmerResult | GlmerResult | ClmmResult) -> dict[str, float]:
    vc = fit.varcorr
    if "var2" in vc.columns:
        vc = vc[vc["var2"].isna() | (vc["var2"].astype(str) == "")]
    if "var1" in vc.columns:
        vc = vc[vc["var1"].isna() | (vc["var1"].astype(str).isin(["(Intercept)", ""]))]
    return {str(g): float(v) for g, v in zip(vc["group"], vc["variance"])}


def judge_components_from_fit(fit: LmerResult | GlmerResult | ClmmResult, *, term: str = "model", judge: str = "judge", item: str = "item",
                              response: str | None = None, n_nodes: int = 32) -> JudgeParts:
    """The planning parts of :func:`plan_judges` implied by a fitted judge model, one row per model.

    The fit has random intercepts for the judges, the items and the responses (one model's answer
    in one run, graded by every judge: ``(1|response)``, or ``(1|item:run)`` when a run is
    shared by the models), and optionally model-by-item ``(1|model:item)`` and item-by-judge
    ``(1|item:judge)`` intercepts, with ``term`` (the models) as a fixed factor:

    - :func:`evalmix.lmer` (scores, ratings as numbers): the parts are the fitted variances
      themselves, on the scale of the score: ``judge``, ``item`` (with ``model:item``: a model's
      mean sees its own item effects), ``item:judge``, ``response`` and ``residual``;
    - :func:`evalmix.glmer` (0/1 verdicts): :func:`judge_components` at each model's marginal
      log-odds, on the accuracy scale;
    - :func:`evalmix.clmm` (ratings): :func:`judge_components` with the fit's thresholds, on the
      scale of the mean rating (the category labels as numbers, else 1..K).

    Parameters
    ----------
    fit : LmerResult, GlmerResult or ClmmResult
        A fit such as ``rating ~ model + (1|judge) + (1|item) + (1|response)``.
    term : str
        The fixed factor whose levels get a row (the models).
    judge, item : str
        Group names of the judge and item intercepts.
    response : str, optional
        Group name of the response intercepts (default ``response``, else the one group
        ``item:...`` that is neither ``item:judge`` nor ``model:item``; none: no response part).
    n_nodes : int
        Quadrature nodes per dimension (glmer and clmm fits).

    Returns
    -------
    JudgeParts
        ``table``: ``term``, ``eta`` (the link-scale mean), ``accuracy`` (glmer) or ``estimate`` (the mean) and
        the parts of :data:`COMPONENTS`; pass it to :func:`plan_judges`.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import evalmix
    >>> rng = np.random.default_rng(1)
    >>> rows = [(m, i, r, j) for m in "AB" for i in range(40) for r in range(2) for j in ("x", "y", "z")]
    >>> df = pd.DataFrame(rows, columns=["model", "item", "run", "judge"])
    >>> df["response"] = df["model"] + df["item"].astype(str) + df["run"].astype(str)
    >>> df["score"] = (rng.normal(0, 1, 40)[df["item"]] + df["judge"].map({"x": 0, "y": 0.5, "z": -0.5})
    ...                + rng.normal(0, 0.7, len(df)))
    >>> fit = evalmix.lmer("score ~ model + (1|judge) + (1|item) + (1|response)", df)
    >>> parts = judge_components_from_fit(fit)
    >>> parts.table.columns.tolist()
    ['model', 'eta', 'estimate', 'judge', 'item', 'item:judge', 'response', 'residual']
    """
    from ..glmm import GlmerResult
    from ..mixed.grid import level_means
    from ..lmm import LmerResult
    from ..ordinal import ClmmResult

    if not isinstance(fit, (LmerResult, GlmerResult, ClmmResult)):
        raise DataError(f"judge_components_from_fit takes an lmer, glmer or clmm fit, got {type(fit).__name__}")
    var = _group_variances(fit)
    residual = var.pop("Residual", None)
    for name in (judge, item):
        if name not in var:
            raise DataError(f"the fit has no random intercept for {name!r}; groups: {list(var)}")
    model_item = next((g for g in (f"{term}:{item}", f"{item}:{term}", "model_item") if g in var), None)
    item_judge = next((g for g in (f"{item}:{judge}", f"{judge}:{item}") if g in var), None)
    if response is None:
        others = [g for g in var if g not in {judge, item, model_item, item_judge}]
        response = "response" if "response" in var else (others[0] if len(others) == 1 else None)
    elif response not in var:
        raise DataError(f"the fit has no random intercept for {response!r}; groups: {list(var)}")
    unknown = [g for g in var if g not in {judge, item, model_item, item_judge, response}]
    if unknown:
        raise DataError(f"judge_components_from_fit reads judge, item, response, {term}:{item} and {item}:{judge} "
                        f"intercepts; the fit also has {unknown} (name the response group with response=)")
    if isinstance(fit, ClmmResult):
        from ..ordinal.emmeans import clmm_ref_grid

        grid = clmm_ref_grid(fit).marginal([term])
    else:
        grid = level_means(fit, term)
    eta = grid.linear_predictor()
    levels = grid.frame[term].astype(str).tolist()
    sd = {k: math.sqrt(var[g]) if g is not None else 0.0
          for k, g in (("judge", judge), ("item", item), ("model_item", model_item), ("response", response))}
    rows = []
    if isinstance(fit, LmerResult):
        assert residual is not None  # a linear mixed model always has one
        for lev, e in zip(levels, eta):
            rows.append({term: lev, "eta": float(e), "estimate": float(e), "judge": var[judge],
                         "item": var[item] + (var[model_item] if model_item else 0.0),
                         "item:judge": var[item_judge] if item_judge else 0.0,
                         "response": var[response] if response else 0.0, "residual": residual})
        return JudgeParts(pd.DataFrame(rows), "the score (observed scale)", "a linear mixed model (lmer)")
    if item_judge is not None:
        raise DataError(f"the quadrature of a glmer or clmm judge model has no {item_judge!r} part: refit without it")
    extra: dict[str, Any] = {}
    name = "accuracy"
    if isinstance(fit, ClmmResult):
        theta = fit.thresholds.to_numpy(float)
        try:
            values: list[float] | None = [float(v) for v in fit.levels]
        except ValueError:
            values = None
        if fit.link != "logit" or len(theta) != len(fit.levels) - 1:
            raise DataError("judge_components_from_fit reads a clmm with the logit link and flexible thresholds")
        # the reference grid centres eta on the mean threshold (emmeans' latent scale for clmm)
        extra = {"thresholds": theta - theta.mean(), "values": values}
        name = "estimate"
    for lev, e in zip(levels, eta):
        c = judge_components(float(e), sd_item=sd["item"], sd_response=sd["response"], sd_judge=sd["judge"],
                             sd_model_item=sd["model_item"], n_nodes=n_nodes, **extra)
        rows.append({term: lev, "eta": float(e), name: c.pop("accuracy"), **c})
    if isinstance(fit, ClmmResult):
        return JudgeParts(pd.DataFrame(rows), "the mean rating", "a cumulative-link mixed model (clmm)")
    return JudgeParts(pd.DataFrame(rows), "accuracy (proportion)", "a logistic mixed model (glmer)")


#: The judge model of numeric scores for planning: judge, item and response intercepts (fixed text:
#: the long table's columns are always named y, model, judge, item and response).
_SCORE_PLAN_FORMULAS = {True: "y ~ model + (1|judge) + (1|item) + (1|response)",
                        False: "y ~ 1 + (1|judge) + (1|item) + (1|response)"}


def judge_plan_components(data: RunsData, *, judge: str = "judge", outcome: str | None = None,
                          model: str | None = None, item: str | None = None, run: str | None = None
                          ) -> JudgeParts:
    """The planning parts of :func:`plan_judges` from a long table of verdicts or scores.

    0/1 verdicts: the accuracy-scale parts of :func:`judge_study` (its random-judge logistic
    model).  Other numbers (ratings, scores): a linear mixed model (:func:`evalmix.lmer`)
    ``y ~ model + (1|judge) + (1|item) + (1|response)``, whose variances are the parts on the
    scale of the score (:func:`judge_components_from_fit`); a response is one model's answer to
    one item in one run, graded by every judge.  For the parts of the mean rating under a
    cumulative-link model use ``judge_study(...).components`` (slower: three ``clmm`` fits).

    Parameters
    ----------
    data : DataFrame or path
        Long table, one row per model, item, run and judge.
    judge, outcome, model, item, run : str, optional
        Columns, as :func:`judge_study`.

    Returns
    -------
    JudgeParts
        One row per model: ``model``, ``eta``, ``accuracy`` or ``estimate`` (the mean), and the parts.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> rng = np.random.default_rng(2)
    >>> rows = [(m, i, r, j) for m in "AB" for i in range(40) for r in range(2) for j in ("x", "y")]
    >>> df = pd.DataFrame(rows, columns=["model", "item", "run", "judge"])
    >>> df["rating"] = np.clip(np.round(3 + rng.normal(0, 1, 40)[df["item"]] + rng.normal(0, 0.8, len(df))), 1, 5)
    >>> judge_plan_components(df, outcome="rating").table["model"].tolist()
    ['A', 'B']
    """
    from ..lmm import lmer

    long = _long(data, judge=judge, outcome=outcome, model=model, item=item, run=run)
    if np.isin(long.frame["y"].to_numpy(float), (0.0, 1.0)).all():
        study = judge_study(data, judge=judge, outcome=outcome, model=model, item=item, run=run)
        return JudgeParts(study.components, "accuracy (proportion)", "judge_study (its random-judge glmer)")
    several = long.frame["model"].nunique() > 1
    fit = lmer(_SCORE_PLAN_FORMULAS[several], long.frame)
    if several:
        return judge_components_from_fit(fit, response="response")
    var = _group_variances(fit)
    mean = float(np.asarray(fit.fixef, dtype=float)[0])
    return JudgeParts(pd.DataFrame([{"model": "all", "eta": mean, "estimate": mean, "judge": var["judge"],
                                     "item": var["item"], "item:judge": 0.0, "response": var["response"],
                                     "residual": var["Residual"]}]),
                      "the score (observed scale)", "a linear mixed model (lmer)")


def _var(values: np.ndarray, w: np.ndarray) -> float:
    m = float(values @ w)
    return float((values - m) ** 2 @ w)


def _part(comp: Mapping[str, float], name: str) -> float:
    v = comp.get(name, 0.0)
    return 0.0 if v is None or not math.isfinite(float(v)) else float(v)


@overload
def judge_se(components: Mapping[str, float], n_items: float, n_runs: float = 1, n_judges: float = 1,
             judges: Literal["random", "fixed"] = "random") -> float: ...
@overload
def judge_se(components: Mapping[str, float], n_items: ArrayLike, n_runs: ArrayLike = 1,
             n_judges: ArrayLike = 1, judges: Literal["random", "fixed"] = "random") -> float | np.ndarray: ...
def judge_se(components: Mapping[str, float], n_items: ArrayLike, n_runs: ArrayLike = 1,
             n_judges: ArrayLike = 1, judges: Literal["random", "fixed"] = "random") -> float | np.ndarray:
    """SE of a model's accuracy (or a difference) over items x runs x judges (see the module notes).

    Parameters
    ----------
    components : mapping
        The parts of :func:`judge_components` (missing parts count as 0).
    n_items, n_runs, n_judges : int or array_like
        Design sizes (arrays broadcast together).
    judges : {"random", "fixed"}
        Whether the estimand averages over a population of judges (the ``judge / n_j`` term) or
        over these judges only.

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> comp = {"judge": 0.004, "item": 0.05, "item:judge": 0.01, "response": 0.02, "residual": 0.15}
    >>> round(judge_se(comp, n_items=200, n_runs=2, n_judges=3), 4)
    0.0421
    >>> round(judge_se(comp, n_items=200, n_runs=2, n_judges=3, judges="fixed"), 4)
    0.021
    """
    if judges not in ("random", "fixed"):
        raise ValueError(f"judges must be 'random' or 'fixed', got {judges!r}")
    n_i, n_r, n_j = (np.asarray(v, float) for v in (n_items, n_runs, n_judges))
    v = (_part(components, "item") / n_i + _part(components, "item:judge") / (n_i * n_j)
         + _part(components, "response") / (n_i * n_r) + _part(components, "residual") / (n_i * n_r * n_j))
    if judges == "random":
        v = v + _part(components, "judge") / n_j
    out = np.sqrt(v)
    return float(out) if out.ndim == 0 else out


@dataclass(frozen=True, eq=False, repr=False)
class JudgePlan(Result):
    """The cheapest (items, runs, judges) design meeting a target SE.

    ``n_items``, ``n_runs``, ``n_judges``, ``cost`` and ``se`` of the chosen design (the largest SE
    over the rows of components it was asked to meet); ``table``: for every runs x judges
    combination the fewest items that meet the target and the cost, cheapest first.
    """

    n_items: int
    n_runs: int
    n_judges: int
    cost: float
    se: float
    target: float
    judges: str
    table: pd.DataFrame
    budget: float | None = None

    def _title(self) -> str:
        if math.isnan(self.target):
            return "Most precise design of items, runs and judges within a budget"
        return "Cheapest design of items, runs and judges"

    def _header(self) -> list[str]:
        design = (f"chosen: {self.n_items} items x {self.n_runs} runs x {self.n_judges} judges, cost "
                  f"{self.cost:g}, SE {self.se:.4g}")
        if math.isnan(self.target):
            return [f"{design} (the smallest within the budget {self.budget:g}, {self.judges} judges)"]
        within = "" if self.budget is None else f", budget {self.budget:g}"
        return [f"{design} (target {self.target:g}{within}, {self.judges} judges)"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"n_items": self.n_items, "n_runs": self.n_runs, "n_judges": self.n_judges,
                                    "cost": self.cost, "se": self.se,
                                    "target": None if math.isnan(self.target) else self.target,
                                    "budget": self.budget}


def _component_rows(components: Mapping[str, float] | pd.DataFrame | JudgeStudy | JudgeParts
                    ) -> list[dict[str, float]]:
    if isinstance(components, JudgeParts):
        components = components.table
    if isinstance(components, JudgeStudy):
        if components.components.empty:
            raise DataError("this judge study has no planning parts (ratings of one model): pass the parts of "
                            "judge_components_from_fit or judge_components")
        components = components.components
    if isinstance(components, pd.DataFrame):
        missing = [c for c in COMPONENTS if c not in components.columns]
        if missing:
            raise DataError(f"components lack column(s) {missing}; the parts are {list(COMPONENTS)}")
        rows = [{c: float(r[c]) for c in COMPONENTS} for _, r in components.iterrows()]
        if any(not math.isfinite(v) for r in rows for v in r.values()):
            raise DataError("the components hold missing values (a fit that could not estimate a variance, "
                            "e.g. a separated one): refit, or pass the parts as a mapping")
        return rows
    comp = dict(components)
    unknown = set(comp) - set(COMPONENTS) - {"accuracy"}
    if unknown:
        raise DataError(f"unknown part(s) {sorted(unknown)}; the parts are {list(COMPONENTS)}")
    return [{c: _part(comp, c) for c in COMPONENTS}]


def plan_judges(components: Mapping[str, float] | pd.DataFrame | JudgeStudy | JudgeParts, *, se: float | None = None,
                width: float | None = None, budget: float | None = None, alpha: float = 0.05,
                cost_item: float = 0.0, cost_run: float = 1.0, cost_judge: float = 0.0,
                max_runs: int = 20, max_judges: int = 10, n_items: tuple[int, int] | int = (2, 1_000_000),
                judges: Literal["random", "fixed"] = "random") -> JudgePlan:
    """Cheapest numbers of items, runs and judges for which the SE is at most ``se``, or the most
    precise design a ``budget`` buys.

    The cost of a design is ``n_i cost_item + n_i n_r cost_run + n_i n_r n_j cost_judge`` (an
    item to write, one generation, one judge call).  Every runs x judges combination up to the
    limits is tried with the fewest items that reach ``se`` (:func:`judge_se`, the largest over the
    rows of ``components``); the cheapest wins.  With ``judges="random"`` the judge variance puts a
    floor ``sqrt(judge / n_j)`` on the SE that more items cannot lower.  ``width`` is the same
    target as the full width of the two-sided ``1 - alpha`` Wald interval, ``se = width / (2
    z_{1-alpha/2})``.  With a ``budget`` and no target every runs x judges combination gets the most
    items the budget buys and the smallest SE wins; with a target too, the cheapest design must
    cost at most ``budget``.

    Parameters
    ----------
    components : mapping, DataFrame, JudgeParts or JudgeStudy
        The parts of :func:`judge_components`, :func:`judge_components_from_fit` or
        :func:`judge_plan_components`; a DataFrame
        with one row per model (or pair), every row to be met; or a :class:`JudgeStudy` (its
        ``components``: every model).
    se : float, optional
        Target standard error.
    width : float, optional
        Target full width of the ``1 - alpha`` interval (instead of ``se``).
    budget : float, optional
        The most the study may cost.
    alpha : float
        For ``width``.
    cost_item, cost_run, cost_judge : float
        Unit costs; ``cost_run`` must be positive.
    max_runs, max_judges : int
        Limits of the search.
    n_items : int or (int, int)
        A fixed number of items or the allowed range.
    judges : {"random", "fixed"}
        See :func:`judge_se`.

    Returns
    -------
    JudgePlan

    Raises
    ------
    DataError
        No design within the limits reaches the target.

    Examples
    --------
    >>> comp = {"judge": 0.0005, "item": 0.05, "item:judge": 0.01, "response": 0.02, "residual": 0.15}
    >>> p = plan_judges(comp, se=0.03, cost_item=5, cost_run=1, cost_judge=0.5)
    >>> p.n_items, p.n_runs, p.n_judges
    (119, 1, 6)
    >>> q = plan_judges(comp, budget=1000, cost_item=5, cost_run=1, cost_judge=0.5)
    >>> q.n_items, q.n_runs, q.n_judges, round(q.se, 4)
    (111, 1, 6, 0.0309)
    """
    from scipy import stats

    from ..core.arguments import check_number, check_probability

    rows = _component_rows(components)
    if se is not None and width is not None:
        raise ValueError("give one target, se= or width=, not both")
    if se is None and width is None and budget is None:
        raise ValueError("give a target (se= or width=), or a budget= for the most precise design it buys")
    check_probability(alpha, "alpha")
    if width is not None:
        check_number(width, "width", minimum=0, strict=True)
        se = float(width) / (2 * stats.norm.isf(alpha / 2))
    if se is not None and not (isinstance(se, (int, float)) and se > 0):
        raise ValueError(f"se must be a positive number, got {se!r}")
    if budget is not None:
        check_number(budget, "budget", minimum=0, strict=True)
    if cost_run <= 0 or min(cost_item, cost_judge) < 0:
        raise ValueError("cost_run must be > 0 and cost_item, cost_judge >= 0")
    if max_runs < 1 or max_judges < 1:
        raise ValueError("max_runs and max_judges must be >= 1")
    n_lo, n_hi = (n_items, n_items) if isinstance(n_items, (int, np.integer)) else n_items
    rg, jg = np.meshgrid(np.arange(1, max_runs + 1), np.arange(1, max_judges + 1), indexing="ij")
    r, j = rg.ravel().astype(float), jg.ravel().astype(float)
    if se is None:
        assert budget is not None
        return _best_within(rows, float(budget), r, j, n_lo, n_hi, cost_item, cost_run, cost_judge, judges)
    need = np.full(r.shape, float(n_lo))
    for comp in rows:
        # Var = floor + per_item / n_i, solved for the fewest items
        per_item = (comp["item"] + comp["item:judge"] / j + comp["response"] / r + comp["residual"] / (r * j))
        room = se**2 - (comp["judge"] / j if judges == "random" else 0.0)
        with np.errstate(divide="ignore", invalid="ignore"):
            n = np.where(room > 0, np.ceil(per_item / np.where(room > 0, room, 1.0) * (1 - 1e-12)), np.inf)
        need = np.maximum(need, n)
    ok = need <= n_hi
    if not ok.any():
        floor = max(math.sqrt(c["judge"] / max_judges) for c in rows) if judges == "random" else 0.0
        raise DataError(f"no design with {n_lo}..{n_hi} items, <= {max_runs} runs and <= {max_judges} judges "
                        f"reaches se <= {se}" + (f" (the judge variance alone gives SE >= {floor:.4g} with "
                                                 f"{max_judges} judges: raise max_judges or use "
                                                 "judges='fixed')" if floor >= se else ""))
    n, r, j = need[ok], r[ok], j[ok]
    cost = n * cost_item + n * r * cost_run + n * r * j * cost_judge
    achieved = np.max(np.vstack([np.broadcast_to(judge_se(c, n, r, j, judges), n.shape) for c in rows]), axis=0)
    table = pd.DataFrame({"n_items": n.astype("int64"), "n_runs": r.astype("int64"),
                          "n_judges": j.astype("int64"), "cost": cost, "se": achieved}
                         ).sort_values(["cost", "n_judges", "n_runs"], kind="stable").reset_index(drop=True)
    if budget is not None and not (table["cost"] <= budget * (1 + 1e-12)).any():
        raise DataError(f"no design within the budget {budget:g} reaches se <= {se:.4g}: the cheapest that does "
                        f"costs {table['cost'].min():g}")
    best = table.iloc[0]
    return JudgePlan(n_items=int(best["n_items"]), n_runs=int(best["n_runs"]), n_judges=int(best["n_judges"]),
                     cost=float(best["cost"]), se=float(best["se"]), target=float(se), judges=judges,
                     table=table.head(50), budget=None if budget is None else float(budget))


def _best_within(rows: list[dict[str, float]], budget: float, r: np.ndarray, j: np.ndarray, n_lo: int, n_hi: int,
                 cost_item: float, cost_run: float, cost_judge: float, judges: Literal["random", "fixed"]
                 ) -> JudgePlan:
    """The smallest SE among the designs a budget buys: for each runs x judges the most items."""
    per_item = cost_item + r * cost_run + r * j * cost_judge
    # the factor guards budgets that divide exactly (as the runs planner buys items)
    n = np.minimum(np.floor(budget / per_item * (1 + 1e-12)), n_hi)
    ok = n >= n_lo
    if not ok.any():
        raise DataError(f"the budget {budget:g} buys no design with at least {n_lo} items (one item with one run "
                        f"and one judge costs {cost_item + cost_run + cost_judge:g})")
    n, r, j = n[ok], r[ok], j[ok]
    achieved = np.max(np.vstack([np.broadcast_to(judge_se(c, n, r, j, judges), n.shape) for c in rows]), axis=0)
    table = pd.DataFrame({"n_items": n.astype("int64"), "n_runs": r.astype("int64"), "n_judges": j.astype("int64"),
                          "cost": n * per_item[ok], "se": achieved}
                         ).sort_values(["se", "cost", "n_judges", "n_runs"], kind="stable").reset_index(drop=True)
    best = table.iloc[0]
    return JudgePlan(n_items=int(best["n_items"]), n_runs=int(best["n_runs"]), n_judges=int(best["n_judges"]),
                     cost=float(best["cost"]), se=float(best["se"]), target=math.nan, judges=judges,
                     table=table.head(50), budget=budget)


# ----------------------------------------------------------------------------------------------
# the study


@dataclass(frozen=True, eq=False, repr=False)
class JudgeStudy(Result):
    """Judges beside model, item and run in one logistic mixed model.

    Attributes
    ----------
    bias : DataFrame
        Contrasts of each judge with the mean judge (or with the reference judge), log-odds scale:
        ``contrast``, ``estimate``, ``se``, ``conf_low``, ``conf_high``, ``statistic``,
        ``p_value``, ``odds_ratio``, ``or_conf_low``, ``or_conf_high``, and ``difference`` (the same
        contrast of the probability-scale means).
    means : DataFrame
        Marginal mean of each judge on the probability scale (``judge``, ``estimate``, ``se``,
        ``conf_low``, ``conf_high``) and on the log-odds scale (``eta``).  The interval is the
        log-odds interval back-transformed (emmeans' ``type = "response"``), inside (0, 1); ``se``
        is the delta-method SE of the probability.
    by_judge : DataFrame
        Accuracy of every model under every judge from the interaction model (probability scale,
        intervals as for ``means``).
    interaction : dict
        Likelihood-ratio test of ``model:judge``: ``statistic``, ``df``, ``p_value`` (NaN with one
        model).
    agreement : JudgeAgreement
        Agreement of the judges on the same responses.
    variance : DataFrame
        Random-effect variances of the model with ``(1|judge)``: ``group``, ``variance``, ``sd``,
        ``share`` (of the latent variance, the logistic ``pi^2 / 3`` included).
    components : DataFrame
        Accuracy-scale parts per model for the planner (:func:`judge_components` at each model's
        marginal mean), with ``accuracy``.
    formulas : dict
        The formulas of the three fits (``additive``, ``interaction``, ``random_judge``).
    fits : dict
        The fits themselves.
    """

    bias: pd.DataFrame
    means: pd.DataFrame
    by_judge: pd.DataFrame
    interaction: dict[str, float]
    agreement: JudgeAgreement
    variance: pd.DataFrame
    components: pd.DataFrame
    formulas: dict[str, str]
    fits: dict[str, Any]
    columns: dict[str, str]
    reference: str | None
    n_responses: int
    scale: str = "binary"

    def _title(self) -> str:
        what = " of ordinal ratings" if self.scale == "ordinal" else ""
        return f"Judge study{what}: bias, judge-by-model interaction, agreement and variance share"

    def _header(self) -> list[str]:
        it = self.interaction
        lrt = (f"model:judge LRT chi2 = {it['statistic']:.3f}, df = {it['df']:g}, p = {it['p_value']:.4g}"
               if math.isfinite(it["p_value"]) else "model:judge not tested (one model)")
        ref = f"reference judge {self.reference!r}" if self.reference is not None else "the mean judge"
        return [f"model: {self.formulas['additive']}", f"bias: each judge against {ref}", lrt]

    def to_frame(self) -> pd.DataFrame:
        return self.bias.copy()

    def summary(self) -> Summary:
        ordinal = self.scale == "ordinal"
        return Summary(self._title(), self._header(),
                       [("Judge bias (latent scale; difference: mean rating)" if ordinal else
                         "Judge bias (log-odds; difference: probability)", self.bias),
                        ("Judge means (mean rating)" if ordinal else "Judge means (probability)", self.means),
                        ("Mean rating by model and judge" if ordinal else "Accuracy by model and judge",
                         self.by_judge),
                        ("Agreement", self.agreement.table),
                        ("Random effects", self.variance),
                        ("Accuracy-scale parts for planning", self.components)],
                       [f"judge share of the latent variance: {self.judge_share:.3f}"])

    @property
    def judge_share(self) -> float:
        """Share of the judges in the latent variance (random-judge model)."""
        v = self.variance
        row = v.loc[v["group"] == "judge", "share"]
        return float(row.iloc[0]) if len(row) else math.nan

    def pair_components(self, a: Hashable, b: Hashable, n_nodes: int = 32) -> dict[str, float]:
        """Accuracy-scale parts of the difference between models ``a`` and ``b`` (for the planner)."""
        comp = self.components.set_index("model")
        for lev in (a, b):
            if str(lev) not in comp.index:
                raise DataError(f"model {lev!r} is not a level of {self.columns.get('model', 'model')!r}; "
                                f"levels: {list(comp.index)}")
        sd = dict(zip(self.variance["group"], self.variance["sd"].to_numpy(float)))
        eta = comp["eta"].astype(float)
        return judge_components(float(eta[str(a)]), eta_b=float(eta[str(b)]),
                                sd_item=float(sd.get("item", 0.0)), sd_response=float(sd.get("response", 0.0)),
                                sd_judge=float(sd.get("judge", 0.0)),
                                sd_model_item=float(sd.get("model:item", 0.0)), n_nodes=n_nodes)

    def to_dict(self) -> dict[str, Any]:
        it = {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in self.interaction.items()}
        return {"scale": self.scale, "bias": frame_records(self.bias), "means": frame_records(self.means),
                "by_judge": frame_records(self.by_judge), "interaction": it,
                "agreement": frame_records(self.agreement.table),
                "agreement_pairs": frame_records(self.agreement.pairs),
                "variance": frame_records(self.variance), "components": frame_records(self.components),
                "judge_share": None if not math.isfinite(self.judge_share) else self.judge_share,
                "formulas": dict(self.formulas), "columns": dict(self.columns), "reference": self.reference}


def _verdict_scale(long: _Long) -> Literal["binary", "ordinal"]:
    """``"binary"`` for 0/1 verdicts, ``"ordinal"`` for integer ratings with three or more values."""
    y = long.frame["y"].to_numpy(float)
    if np.isin(y, (0.0, 1.0)).all():
        return "binary"
    col = long.cols["outcome"]
    values = np.unique(y)
    if np.all(values == np.round(values)) and len(values) >= 3:
        return "ordinal"
    seen = values[~np.isin(values, (0.0, 1.0))][:5].tolist()
    why = ("holds fractional values" if not np.all(values == np.round(values)) else
           f"has only {len(values)} distinct values, too few for an ordinal model")
    raise DataError(f"verdict column {col!r} {why} (e.g. {seen}): judge_study fits a logistic model of 0/1 "
                    "verdicts or a cumulative-link model of integer ratings with three or more categories. "
                    "For agreement alone use evalmix.judge_agreement(..., level='ordinal'), or dichotomise "
                    f"the score (e.g. {col} >= threshold) first")


def _deviation_weights(levels: list[str], ref: str | None) -> dict[str, list[float]]:
    k = len(levels)
    out = {}
    for i, lev in enumerate(levels):
        if ref is None:
            w = [-1.0 / k] * k
            w[i] += 1.0
            out[contrast_label(lev, "mean")] = w
        elif lev != ref:
            w = [0.0] * k
            w[i], w[levels.index(ref)] = 1.0, -1.0
            out[contrast_label(lev, ref)] = w
    return out


# The ordinal judge model's formulas: the long table's columns are always named y, model, judge, item
# and response, so the formulas are fixed text (the binary path adds (1|model_item) where it can).
_ORDINAL_FORMULAS = {
    "additive": "y ~ model + judge + (1|item) + (1|response)",
    "interaction": "y ~ model * judge + (1|item) + (1|response)",
    "random_judge": "y ~ model + (1|judge) + (1|item) + (1|response)",
}
_ORDINAL_FORMULAS_ONE_MODEL = {
    "additive": "y ~ judge + (1|item) + (1|response)",
    "interaction": "",
    "random_judge": "y ~ 1 + (1|judge) + (1|item) + (1|response)",
}


def _ordinal_study(long: _Long, ref: Hashable | None, conf_level: float) -> JudgeStudy:
    """judge_study of integer ratings: cumulative-link mixed models (``evalmix.clmm``, logit link)."""
    from scipy import stats

    from ..ordinal import clmm, clmm_emmeans
    from ..ordinal.emmeans import clmm_ref_grid

    df = long.frame.assign(y=long.frame["y"].astype(np.int64))
    levels = sorted(df["judge"].unique().tolist())
    ref_s = None if ref is None else str(ref)
    if ref_s is not None and ref_s not in levels:
        raise DataError(f"ref={ref!r} is not a level of judge column {long.cols['judge']!r}; levels: {levels}")
    n_models = df["model"].nunique()
    formulas = dict(_ORDINAL_FORMULAS if n_models > 1 else _ORDINAL_FORMULAS_ONE_MODEL)
    fits: dict[str, Any] = {"additive": clmm(formulas["additive"], df)}
    weights = _deviation_weights(levels, ref_s)
    emm = emmeans(clmm_ref_grid(fits["additive"], conf_level=conf_level), "judge", conf_level=conf_level)
    bias = contrast(emm, weights, adjust="none", conf_level=conf_level).to_frame()
    bias = bias.drop(columns=[c for c in ("judge",) if c in bias.columns])
    means = clmm_emmeans(fits["additive"], "judge", mode="mean.class", conf_level=conf_level).to_frame()
    means["eta"] = emm.to_frame()["estimate"].to_numpy()
    # the same contrasts of the mean ratings (point estimates: the mean rating is not linear in the fit)
    mean_of = dict(zip(means["judge"].astype(str), means["estimate"].to_numpy(float)))
    bias["difference"] = [float(np.dot(w, [mean_of[lev] for lev in levels])) for w in weights.values()]
    if n_models > 1:
        fits["interaction"] = clmm(formulas["interaction"], df)
        stat = max(2.0 * (fits["interaction"].loglik - fits["additive"].loglik), 0.0)
        ddf = float(fits["interaction"].df - fits["additive"].df)
        interaction = {"statistic": stat, "df": ddf, "p_value": float(stats.chi2.sf(stat, ddf))}
        by = clmm_emmeans(fits["interaction"], ["model", "judge"], mode="mean.class",
                          conf_level=conf_level).to_frame()
    else:
        interaction = {"statistic": math.nan, "df": math.nan, "p_value": math.nan}
        by = means.drop(columns="eta")
    fits["random_judge"] = clmm(formulas["random_judge"], df)
    vc = fits["random_judge"].varcorr
    variance = pd.DataFrame({"group": vc["group"].to_numpy(), "variance": vc["variance"].to_numpy(float),
                             "sd": vc["sd"].to_numpy(float)})
    variance = pd.concat([variance, pd.DataFrame({"group": ["residual (logistic)"], "variance": [math.pi**2 / 3],
                                                  "sd": [math.pi / math.sqrt(3)]})], ignore_index=True)
    variance["share"] = variance["variance"] / float(variance["variance"].sum())
    if n_models > 1:
        components = judge_components_from_fit(fits["random_judge"], response="response").table
    else:
        components = pd.DataFrame(columns=["model", "eta", "estimate", *COMPONENTS])
    return JudgeStudy(bias=bias, means=means, by_judge=by, interaction=interaction,
                      agreement=_agreement(long, "ordinal", conf_level), variance=variance,
                      components=components, formulas=formulas, fits=fits, columns=dict(long.cols),
                      reference=ref_s, n_responses=int(df["response"].nunique()), scale="ordinal")


def judge_study(data: RunsData, *, judge: str = "judge", outcome: str | None = None, model: str | None = None,
                item: str | None = None, run: str | None = None, ref: Hashable | None = None,
                conf_level: float = 0.95, model_item: bool | None = None, n_nodes: int = 32) -> JudgeStudy:
    """Judges as a crossed factor beside model, item and run: bias, interaction, agreement, variance.

    Three logistic mixed models are fitted with :func:`evalmix.glmer` to a long table of binary
    verdicts (one row per model, item, run and judge)::

        additive:      y ~ model + judge + (1|item) + (1|response)
        interaction:   y ~ model * judge + (1|item) + (1|response)
        random judge:  y ~ model + (1|judge) + (1|item) + (1|response)

    where a *response* is one model's answer to one item in one run (``model:item:run``), graded
    by every judge.  The judge bias is the contrast of each judge's marginal mean with the mean
    judge (or ``ref``) from the additive model, on the log-odds scale and, in ``difference``, on
    the probability scale; the judge-by-model interaction is the likelihood-ratio test of the
    interaction model against the additive one (:func:`evalmix.compare_models`); the agreement is
    :func:`judge_agreement`; the variance share comes from the random-judge model.

    Parameters
    ----------
    data : DataFrame or path
        Long table of 0/1 verdicts or integer ratings.
    judge : str
        The judge column.
    outcome : str, optional
        The verdict column (default ``correct``, else ``score``): 0/1 verdicts, or integer ratings
        with three or more categories (1-5, 1-10), which are fitted by :func:`evalmix.clmm` with
        the formulas of ``_ORDINAL_FORMULAS`` (no ``(1|model_item)`` term; ``model_item`` must
        then be left unset), ``bias`` on the latent scale with ``difference`` between mean
        ratings, ``means`` and ``by_judge`` as mean ratings, and no planning ``components``.
    model, item, run : str, optional
        Key columns (default ``model``, ``item``, ``run`` where present; ``item`` is required).
    ref : level, optional
        Reference judge for the bias contrasts (default: the mean of all judges).
    conf_level : float
        Level of the intervals.
    model_item : bool, optional
        Whether the random-judge fit has model-by-item intercepts ``(1|model:item)`` (needed to
        plan differences between models; separable from the responses only with repeated runs).
        Default: when there are several models and repeated runs.  The term makes that fit slower
        (about 20 s for 1,800 verdicts, against about 1 s without).
    n_nodes : int
        Quadrature nodes for the planning parts.

    Returns
    -------
    JudgeStudy

    Raises
    ------
    DataError
        Verdicts that are neither 0/1 nor integer ratings with three or more values (use
        :func:`judge_agreement` for their agreement), fewer than two judges,
        duplicate or missing keys.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> from evalmix import judge_study
    >>> rng = np.random.default_rng(0)
    >>> rows = [(m, i, r, j) for m in "AB" for i in range(30) for r in range(2) for j in ("x", "y", "z")]
    >>> df = pd.DataFrame(rows, columns=["model", "item", "run", "judge"])
    >>> df["correct"] = (rng.random(len(df)) < np.where(df["judge"] == "z", 0.4, 0.7)).astype(int)
    >>> s = judge_study(df)
    >>> s.bias["contrast"].tolist()
    ['x - mean', 'y - mean', 'z - mean']
    """
    from ..glmm import glmer

    long = _long(data, judge=judge, outcome=outcome, model=model, item=item, run=run)
    if long.frame["y"].nunique() >= 2 and _verdict_scale(long) == "ordinal":
        if model_item:
            raise DataError("model_item=True is for 0/1 verdicts: the ordinal judge model has item and response "
                            "intercepts only")
        return _ordinal_study(long, ref, conf_level)
    if long.frame["y"].nunique() < 2:
        raise DataError(f"every verdict in {long.cols['outcome']!r} is {long.frame['y'].iloc[0]:g}: there is no "
                        "variation for a logistic model (nor agreement) to describe")
    _require_shared(long, _ratings(long))  # before the fits
    df = long.frame
    levels = sorted(df["judge"].unique().tolist())
    ref_s = None if ref is None else str(ref)
    if ref_s is not None and ref_s not in levels:
        raise DataError(f"ref={ref!r} is not a level of judge column {judge!r}; levels: {levels}")
    n_models = df["model"].nunique()
    fixed = ["model", "judge"] if n_models > 1 else ["judge"]
    formulas = {"additive": make_formula("y", fixed, ["item", "response"]).text,
                "interaction": make_formula("y", "model * judge", ["item", "response"]).text if n_models > 1 else "",
                "random_judge": make_formula("y", fixed[:-1], ["judge", "item", "response"]).text}
    # an item harder for one model than for another: separable from the responses only with
    # repeated runs, and what the planner needs for differences between models
    repeated = bool((df.groupby(["model", "item"], sort=False)["run"].nunique() > 1).any())
    if model_item and not (n_models > 1 and repeated):
        raise DataError("model_item=True needs several models and repeated runs of a model on an item "
                        f"(column {long.cols.get('run', 'run')!r}): otherwise the model-by-item effect is the "
                        "response effect")
    if (n_models > 1 and repeated) if model_item is None else model_item:
        df = df.assign(model_item=df["model"] + "\x1f" + df["item"])
        formulas["random_judge"] = "y ~ model + (1|judge) + (1|item) + (1|model_item) + (1|response)"
    fits: dict[str, Any] = {"additive": glmer(formulas["additive"], df)}
    if n_models > 1:
        fits["interaction"] = glmer(formulas["interaction"], df)
        cmp = compare_models({"additive": fits["additive"], "interaction": fits["interaction"]}).lrt
        last = cmp.iloc[-1]
        interaction = {"statistic": float(last["statistic"]), "df": float(last["df_diff"]),
                       "p_value": float(last["p_value"])}
        # accuracies: logit-scale intervals back-transformed (emmeans' type = "response"), which
        # stay inside (0, 1); regrid's delta-method intervals may not
        by = emmeans(fits["interaction"], "model", by="judge", type="response", conf_level=conf_level).to_frame()
    else:
        interaction = {"statistic": math.nan, "df": math.nan, "p_value": math.nan}
        by = emmeans(fits["additive"], "judge", type="response", conf_level=conf_level).to_frame()
    fits["random_judge"] = glmer(formulas["random_judge"], df)
    emm = emmeans(fits["additive"], "judge", conf_level=conf_level)
    weights = _deviation_weights(levels, ref_s)
    bias = contrast(emm, weights, adjust="none", conf_level=conf_level).to_frame()
    prob = contrast(regrid(emm), weights, adjust="none", conf_level=conf_level).to_frame()
    bias["difference"] = prob["estimate"].to_numpy()
    bias = bias.drop(columns=[c for c in ("judge",) if c in bias.columns])
    means = emmeans(fits["additive"], "judge", type="response", conf_level=conf_level).to_frame()
    means["eta"] = emm.to_frame()["estimate"].to_numpy()
    vc = fits["random_judge"].varcorr
    variance = pd.DataFrame({"group": vc["group"].replace({"model_item": "model:item"}).to_numpy(), "variance": vc["variance"].to_numpy(float),
                             "sd": vc["sd"].to_numpy(float)})
    latent = float(variance["variance"].sum()) + math.pi**2 / 3
    variance = pd.concat([variance, pd.DataFrame({"group": ["residual (logistic)"], "variance": [math.pi**2 / 3],
                                                  "sd": [math.pi / math.sqrt(3)]})], ignore_index=True)
    variance["share"] = variance["variance"] / latent
    sd = dict(zip(variance["group"], variance["sd"]))
    if n_models > 1:
        etas = emmeans(fits["random_judge"], "model").to_frame()[["model", "estimate"]].to_numpy()
    else:
        etas = np.array([["all", float(np.asarray(fits["random_judge"].fixef, dtype=float)[0])]], dtype=object)
    comp_rows = []
    for lev, eta in etas:
        if not all(math.isfinite(float(v)) for v in (eta, *sd.values())):
            # a failed or separated fit: no parts rather than parts computed from NaN
            comp_rows.append({"model": str(lev), "eta": float(eta), "accuracy": math.nan,
                              **{k: math.nan for k in COMPONENTS}})
            continue
        c = judge_components(float(eta), sd_item=float(sd.get("item", 0.0)), sd_response=float(sd.get("response", 0.0)),
                             sd_judge=float(sd.get("judge", 0.0)), sd_model_item=float(sd.get("model:item", 0.0)),
                             n_nodes=n_nodes)
        comp_rows.append({"model": str(lev), "eta": float(eta), **c})
    agreement = _agreement(long, "nominal", conf_level)
    return JudgeStudy(bias=bias, means=means, by_judge=by, interaction=interaction, agreement=agreement,
                      variance=variance, components=pd.DataFrame(comp_rows), formulas=formulas, fits=fits,
                      columns=dict(long.cols), reference=ref_s, n_responses=int(df["response"].nunique()))
