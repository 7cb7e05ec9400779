"""Run-to-run reliability: flip rates, outcome entropy and intraclass correlations.

When a model answers the same items in several stochastic runs, two questions arise: how often does
its answer to an item change between runs (:func:`flip_rate`), and how much of the variation in its
outcomes is between items rather than between runs of the same item (:func:`icc`).  Both are computed
per slice (e.g. model x language x prompt) on the items x runs matrix of the slice, as the AI4Math
"Do repetitions matter?" study did with ``irr::icc``.  :func:`latent_icc` gives the model-based
counterpart from the variance components of a logistic GLMM with ``(1|item) + (1|item:run)``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, overload

import numpy as np
import pandas as pd
from scipy import stats

from ..core.arguments import check_arguments
from ..data import slicing as sl
from ..core.result import Result
from ..data.runs import RunsData
from ..core.errors import DataError, DataWarning
from ..mixed.fitted import VarCorrFit

__all__ = ["FlipRateResult", "ICCResult", "LatentICCResult", "KOO_LI_BANDS", "flip_rate", "icc",
           "icc_matrix", "latent_icc", "quality_band"]

#: Koo & Li (2016) cut points: poor < 0.5 <= moderate < 0.75 <= good < 0.9 <= excellent.
KOO_LI_BANDS = (0.5, 0.75, 0.9)
_LABELS = ("poor", "moderate", "good", "excellent")
LOGISTIC_VARIANCE = math.pi**2 / 3
#: Variance of the latent residual of each binomial link (Nakagawa & Schielzeth 2010; Nakagawa,
#: Johnson & Schielzeth 2017): the standard logistic, the standard normal, the Gumbel.
LATENT_RESIDUAL = {"logit": LOGISTIC_VARIANCE, "probit": 1.0, "cloglog": math.pi**2 / 6}


# ----------------------------------------------------------------------------------------------
# flip rate and entropy


@dataclass(frozen=True, eq=False, repr=False)
class FlipRateResult(Result):
    """Share of items whose outcome changes across runs, per slice, with the mean outcome entropy.

    ``table`` columns: the slice columns, ``n_items`` (items seen in at least two runs), ``n_runs``
    (most runs of an item), ``n_flip``, ``flip_rate`` (= n_flip / n_items) and ``entropy`` (mean over
    items of the Shannon entropy, in bits, of the item's outcomes across runs).
    """

    table: pd.DataFrame
    by: tuple[str, ...]

    def _title(self) -> str:
        return "Run-to-run flip rate" + (f" by {', '.join(self.by)}" if self.by else "")

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()


def _entropy_bits(row: np.ndarray) -> float:
    vals = row[~np.isnan(row)]
    if len(vals) == 0:
        return float("nan")
    _, counts = np.unique(vals, return_counts=True)
    p = counts / counts.sum()
    return float(-(p * np.log2(p)).sum())


def flip_rate(data: RunsData, by: str | Sequence[str] | None = None, *, item: str | None = None,
              run: str | None = None, outcome: str | None = None, missing: str = "raise") -> FlipRateResult:
    """Share of items whose outcome is not the same in every run, per slice.

    An item *flips* when its outcomes across the runs of a slice are not all equal.  The entropy of
    an item is the plug-in Shannon entropy (bits) of the distribution of its outcomes over runs: 0 for
    a deterministic item, 1 for a 50/50 binary item, 0.918 for a 2-of-3 split.  This is what the
    AI4Math paper computed with ``entropy::entropy(tabulate(correct + 1, nbins = 2), unit = "log2")``
    per (problem, model, language, prompt), flagging a flip when the entropy is positive.

    Parameters
    ----------
    data : DataFrame or path
        Long runs table.
    by : str or list of str, optional
        Slice columns; each combination must identify one items x runs matrix (e.g.
        ``["model", "language", "prompt"]``).  ``None``: the whole table is one slice.
    item, run, outcome : str, optional
        Column names; default to the roles recorded by :func:`evalmix.read_runs`, else ``"item"``,
        ``"run"``, ``"correct"``.  Any numeric outcome works (0/1, scores, k/n proportions).
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    FlipRateResult

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"item": [1, 1, 2, 2, 3, 3], "run": [1, 2] * 3,
    ...                    "correct": [1, 1, 0, 1, 0, 0]})
    >>> r = flip_rate(df)
    >>> float(r.table["flip_rate"][0]), float(r.table["entropy"][0])
    (0.3333333333333333, 0.3333333333333333)
    """
    by_ = sl.as_list(by)
    data, cols = sl.resolve(data, item=item, run=run, outcome=outcome, by=by_, missing=missing)
    rows = []
    for key, sub in sl.groups(data, by_):
        mat, _, _ = sl.item_run_matrix(sub, cols, sl.slice_label(by_, key))
        seen = (~np.isnan(mat)).sum(axis=1)
        usable = mat[seen >= 2]
        if len(usable) < len(mat):
            warnings.warn(f"{sl.slice_label(by_, key)}{len(mat) - len(usable)} item(s) have fewer than "
                          f"two runs and are left out of the flip rate", DataWarning, stacklevel=2)
        flips = np.array([len(np.unique(r[~np.isnan(r)])) > 1 for r in usable], dtype=bool)
        ent = np.array([_entropy_bits(r) for r in usable])
        n = len(usable)
        rows.append(dict(zip(by_, key)) | {
            "n_items": n, "n_runs": int(seen.max()) if len(seen) else 0, "n_flip": int(flips.sum()),
            "flip_rate": flips.mean() if n else float("nan"),
            "entropy": ent.mean() if n else float("nan")})
    return FlipRateResult(table=pd.DataFrame(rows), by=tuple(by_))


# ----------------------------------------------------------------------------------------------
# intraclass correlation

ICCModel = Literal["oneway", "twoway"]
ICCType = Literal["consistency", "agreement"]
ICCUnit = Literal["single", "average"]


@overload
def quality_band(value: float, bands: Sequence[float] = ..., labels: Sequence[str] = ...) -> str | None: ...
@overload
def quality_band(value: np.ndarray, bands: Sequence[float] = ..., labels: Sequence[str] = ...
                 ) -> list[str | None] | str | None: ...  # a 0-d array gives one label
def quality_band(value: float | np.ndarray, bands: Sequence[float] = KOO_LI_BANDS,
                 labels: Sequence[str] = _LABELS) -> str | None | list[str | None]:
    """Qualitative label of an ICC (or array of ICCs).

    Intervals are closed on the right, as R's ``cut(x, c(-Inf, bands, Inf))``: with the Koo & Li
    cut points an ICC of exactly 0.75 is "moderate".  The AI4Math paper used ``bands=(0.6, 0.75,
    0.9)``.  NaN gives None.

    Examples
    --------
    >>> quality_band(0.62), quality_band(0.62, bands=(0.6, 0.75, 0.9))
    ('moderate', 'moderate')
    >>> quality_band(0.55, bands=(0.6, 0.75, 0.9))
    'poor'
    """
    bands = [float(b) for b in bands]
    if list(bands) != sorted(bands):
        raise ValueError(f"bands must be increasing, got {bands}")
    if len(labels) != len(bands) + 1:
        raise ValueError(f"need {len(bands) + 1} labels for {len(bands)} cut points, got {len(labels)}")
    arr = np.atleast_1d(np.asarray(value, dtype=float))
    idx = np.searchsorted(np.asarray(bands), arr, side="left")
    out = [None if np.isnan(v) else labels[i] for v, i in zip(arr, idx)]
    return out[0] if np.ndim(value) == 0 else out


#: A sum of squares at most ``n * (_RESIDUE_ULPS * eps * max|x|)^2`` is the rounding residue of an
#: exact zero (each residual carries a few ulps of the data's magnitude): it is set to 0.
_RESIDUE_ULPS = 64


def _mean_squares(mat: np.ndarray) -> tuple[np.float64, np.float64, np.float64, np.float64]:
    """MSr (items), MSc (runs), MSe (residual) and MSw (within items) of a complete matrix.

    The residual and within-item sums of squares are summed from the residuals themselves rather
    than by subtracting sums of squares, so they are never negative; a sum that is only the
    rounding residue of an exact zero (perfect run-to-run agreement, equal item or run means) is
    exactly 0, so a degenerate matrix gives an exact ICC, F and p instead of +-1e16.
    """
    ns, nr = mat.shape
    grand = mat.mean()
    row_m, col_m = mat.mean(axis=1), mat.mean(axis=0)
    residue = mat.size * (_RESIDUE_ULPS * np.finfo(float).eps * float(np.abs(mat).max())) ** 2

    def exact(ss: float) -> np.float64:  # numpy floats: x / 0 is inf (or NaN), not an exception
        return np.float64(0.0 if ss <= residue else ss)

    ss_r = exact(nr * ((row_m - grand) ** 2).sum())
    ss_c = exact(ns * ((col_m - grand) ** 2).sum())
    ss_e = exact(((mat - row_m[:, None] - col_m[None, :] + grand) ** 2).sum())
    ss_w = exact(((mat - row_m[:, None]) ** 2).sum())
    ms_r = ss_r / (ns - 1)
    ms_c = ss_c / (nr - 1)
    ms_e = ss_e / ((ns - 1) * (nr - 1))
    ms_w = ss_w / (ns * (nr - 1))
    return ms_r, ms_c, ms_e, ms_w


def _form_name(model: str, type: str, unit: str, nr: int) -> str:
    k = "1" if unit == "single" else str(nr)
    if model == "oneway":
        return f"ICC({k})"
    return f"ICC({'C' if type == 'consistency' else 'A'},{k})"


def _agreement_df(coef: float, ms_c: float, ms_e: float, ns: int, nr: int, scale: float) -> float:
    """Satterthwaite df of the agreement F statistic, a*MSc + b*MSe with a, b evaluated at ``coef``."""
    if coef >= 1:
        return float((ns - 1) * (nr - 1))
    a = scale * coef / (ns * (1 - coef))
    b = 1 + scale * coef * (ns - 1) / (ns * (1 - coef))
    num = (a * ms_c + b * ms_e) ** 2
    den = (a * ms_c) ** 2 / (nr - 1) + (b * ms_e) ** 2 / ((ns - 1) * (nr - 1))
    return float(num / den) if den > 0 else float("nan")


def icc_matrix(ratings: np.ndarray, *, model: ICCModel = "twoway", type: ICCType = "consistency",
               unit: ICCUnit = "single", r0: float = 0.0, conf_level: float = 0.95,
               convention: Literal["irr", "psych"] = "irr") -> dict[str, Any]:
    """Intraclass correlation of an items x raters (here: items x runs) matrix.

    Implements the forms of McGraw & Wong (1996) as ``irr::icc`` computes them: one-way ICC(1) /
    ICC(k), two-way consistency ICC(C,1) / ICC(C,k) (Shrout & Fleiss ICC(3,1) / ICC(3,k)) and two-way
    agreement ICC(A,1) / ICC(A,k) (ICC(2,1) / ICC(2,k)); each with the F test of H0: ICC = r0 and the
    confidence interval.  Rows with a missing value are dropped (as ``na.omit`` in irr).

    The two R implementations differ only for the agreement forms, and ``convention`` picks one:

    - ``"irr"`` (default): the F test's denominator df is the Satterthwaite df evaluated at the
      *estimate* (irr 0.84.1 reports it as ``df2`` and bases the p-value on it), and the ICC(A,k)
      interval uses that df computed from ICC(A,k) itself.
    - ``"psych"``: the df is evaluated at ``r0`` as McGraw & Wong's test prescribes, which for
      ``r0 = 0`` is ``(n-1)(k-1)`` as in ``psych::ICC``; the ICC(A,k) interval is the
      Spearman-Brown transform of the ICC(A,1) interval (Shrout & Fleiss, ``psych::ICC``).

    The ICC(A,1) interval and all other forms are identical under both.

    Degenerate matrices give exact answers: with no variation within items (every item has the
    same outcome in every run) and items that differ, the ICC is exactly 1, F is ``inf``, p is 0
    and the interval is [1, 1] (mean squares that are rounding residues of 0 are set to 0); with
    no variation at all the ICC is undefined and every statistic is NaN (:func:`icc` warns).

    Returns
    -------
    dict
        ``form``, ``icc``, ``conf_low``, ``conf_high``, ``statistic`` (F), ``df1``, ``df2``,
        ``p_value``, ``n_items``,
        ``n_runs`` and the mean squares ``ms_rows``, ``ms_cols``, ``ms_error``, ``ms_within``.

    Examples
    --------
    >>> import numpy as np
    >>> sf = np.array([[9, 2, 5, 8], [6, 1, 3, 2], [8, 4, 6, 8], [7, 1, 2, 6], [10, 5, 6, 9],
    ...                [6, 2, 4, 7]])
    >>> round(icc_matrix(sf)["icc"], 4)  # Shrout & Fleiss (1979) ICC(3,1)
    0.7148
    """
    if model not in ("oneway", "twoway"):
        raise ValueError(f"model must be 'oneway' or 'twoway', got {model!r}")
    if type not in ("consistency", "agreement"):
        raise ValueError(f"type must be 'consistency' or 'agreement', got {type!r}")
    if unit not in ("single", "average"):
        raise ValueError(f"unit must be 'single' or 'average', got {unit!r}")
    if convention not in ("irr", "psych"):
        raise ValueError(f"convention must be 'irr' or 'psych', got {convention!r}")
    if not 0 < conf_level < 1:
        raise ValueError(f"conf_level must be in (0, 1), got {conf_level}")
    mat = np.asarray(ratings, dtype=float)
    if mat.ndim != 2:
        raise DataError(f"ratings must be a 2-d items x runs matrix, got shape {mat.shape}")
    mat = mat[~np.isnan(mat).any(axis=1)]
    ns, nr = mat.shape
    if ns < 2 or nr < 2:
        raise DataError(f"an ICC needs at least 2 complete items and 2 runs, got {ns} x {nr}")
    alpha = 1 - conf_level
    ms_r, ms_c, ms_e, ms_w = _mean_squares(mat)
    single = unit == "single"
    with np.errstate(divide="ignore", invalid="ignore"):
        if model == "oneway":
            coef = (ms_r - ms_w) / (ms_r + (nr - 1) * ms_w) if single else (ms_r - ms_w) / ms_r
            f = ms_r / ms_w * ((1 - r0) / (1 + (nr - 1) * r0) if single else (1 - r0))
            df1, df2 = ns - 1, ns * (nr - 1)
            fl = (ms_r / ms_w) / stats.f.ppf(1 - alpha / 2, df1, df2)
            fu = (ms_r / ms_w) * stats.f.ppf(1 - alpha / 2, df2, df1)
        elif type == "consistency":
            coef = (ms_r - ms_e) / (ms_r + (nr - 1) * ms_e) if single else (ms_r - ms_e) / ms_r
            f = ms_r / ms_e * ((1 - r0) / (1 + (nr - 1) * r0) if single else (1 - r0))
            df1, df2 = ns - 1, (ns - 1) * (nr - 1)
            fl = (ms_r / ms_e) / stats.f.ppf(1 - alpha / 2, df1, df2)
            fu = (ms_r / ms_e) * stats.f.ppf(1 - alpha / 2, df2, df1)
        else:
            if single:
                coef = (ms_r - ms_e) / (ms_r + (nr - 1) * ms_e + (nr / ns) * (ms_c - ms_e))
            else:
                coef = (ms_r - ms_e) / (ms_r + (ms_c - ms_e) / ns)
            scale = nr if single else 1.0
            a0 = scale * r0 / (ns * (1 - r0))
            b0 = 1 + scale * r0 * (ns - 1) / (ns * (1 - r0))
            f = ms_r / (a0 * ms_c + b0 * ms_e)
            # irr evaluates the df at the estimate with the single-measure weights for both units
            v = _agreement_df(coef, ms_c, ms_e, ns, nr, nr)
            df1 = ns - 1
            df2 = v if convention == "irr" else _agreement_df(r0, ms_c, ms_e, ns, nr, scale)
            fl = stats.f.ppf(1 - alpha / 2, df1, v)
            fu = stats.f.ppf(1 - alpha / 2, v, df1)
            if single or convention == "psych":
                if not single:  # Shrout & Fleiss: the single-measure interval, stepped up
                    coef1 = (ms_r - ms_e) / (ms_r + (nr - 1) * ms_e + (nr / ns) * (ms_c - ms_e))
                    v1 = _agreement_df(coef1, ms_c, ms_e, ns, nr, nr)
                    fl, fu = stats.f.ppf(1 - alpha / 2, df1, v1), stats.f.ppf(1 - alpha / 2, v1, df1)
                c = nr * ms_c + (nr * ns - nr - ns) * ms_e
                lower = ns * (ms_r - fl * ms_e) / (fl * c + ns * ms_r)
                upper = ns * (fu * ms_r - ms_e) / (c + ns * fu * ms_r)
                if not single:
                    lower, upper = (nr * x / (1 + (nr - 1) * x) for x in (lower, upper))
            else:
                lower = ns * (ms_r - fl * ms_e) / (fl * (ms_c - ms_e) + ns * ms_r)
                upper = ns * (fu * ms_r - ms_e) / (ms_c - ms_e + ns * fu * ms_r)
        if model == "oneway" or type == "consistency":
            if single:
                # an infinite F bound (no error variance) is the limit 1, not inf / inf
                lower = 1.0 if np.isposinf(fl) else (fl - 1) / (fl + nr - 1)
                upper = 1.0 if np.isposinf(fu) else (fu - 1) / (fu + nr - 1)
            else:
                lower, upper = 1 - 1 / fl, 1 - 1 / fu
        p = stats.f.sf(f, df1, df2)  # 0 exactly for F = inf
    return {"form": _form_name(model, type, unit, nr), "icc": float(coef),
            "conf_low": float(lower), "conf_high": float(upper), "statistic": float(f),
            "df1": float(df1), "df2": float(df2), "p_value": float(p),
            "n_items": ns, "n_runs": nr, "ms_rows": ms_r, "ms_cols": ms_c, "ms_error": ms_e,
            "ms_within": ms_w}


@dataclass(frozen=True, eq=False, repr=False)
class ICCResult(Result):
    """ICCs per slice.

    ``table`` columns: the slice columns, ``form`` (e.g. ``ICC(C,1)``), ``n_items``, ``n_runs``,
    ``icc``, ``conf_low``, ``conf_high`` (confidence interval), ``statistic`` (F), ``df1``,
    ``df2``, ``p_value`` (F test of
    H0: ICC = r0) and ``quality`` (band label).
    """

    table: pd.DataFrame
    by: tuple[str, ...]
    model: str
    type: str
    unit: str
    conf_level: float
    bands: tuple[float, ...]

    def _title(self) -> str:
        return "Intraclass correlation of runs" + (f" by {', '.join(self.by)}" if self.by else "")

    def _header(self) -> list[str]:
        return [f"{self.model}, {self.type}, {self.unit}; {self.conf_level:.0%} interval; "
                "statistic: F test of ICC = r0 (df1, df2)"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()


def icc(data: RunsData, by: str | Sequence[str] | None = None, *, item: str | None = None,
        run: str | None = None, outcome: str | None = None, model: ICCModel = "twoway",
        type: ICCType = "consistency", unit: ICCUnit = "single", r0: float = 0.0,
        conf_level: float = 0.95, bands: Sequence[float] = KOO_LI_BANDS,
        labels: Sequence[str] = _LABELS,
        convention: Literal["irr", "psych"] = "irr", missing: str = "raise") -> ICCResult:
    """Run-to-run intraclass correlation per slice, as ``irr::icc`` on each items x runs matrix.

    Items are the subjects and runs the raters.  The default two-way consistency single-measure
    form ICC(C,1) is what the AI4Math paper reported: the share of outcome variance that is between
    items once run means are removed; 1 means every item gets the same outcome in every run.

    Parameters
    ----------
    data : DataFrame or path
        Long runs table.
    by : str or list of str, optional
        Slice columns; each combination must identify one items x runs matrix.
    item, run, outcome : str, optional
        Column names (defaults from :func:`evalmix.read_runs` roles, else ``item``/``run``/``correct``).
    model, type, unit : str
        ``"oneway"`` or ``"twoway"``; ``"consistency"`` or ``"agreement"`` (two-way only);
        ``"single"`` or ``"average"`` (reliability of the mean of the runs), as in ``irr::icc``.
    r0 : float
        ICC under the null hypothesis of the F test.
    conf_level : float
        Confidence level of the interval.
    bands, labels : sequence
        Cut points and labels of the ``quality`` column (Koo & Li by default; the paper used
        ``bands=(0.6, 0.75, 0.9)`` with labels Poor/Moderate/Good/Excellent).
    convention : {"irr", "psych"}
        Which R implementation the agreement forms' test df and ICC(A,k) interval follow (see
        :func:`icc_matrix`); other forms do not depend on it.
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    ICCResult

    Examples
    --------
    >>> import evalmix
    >>> df = evalmix.simulate.glmm_runs(2, 40, 3, rng=1)
    >>> r = icc(df, by="model")
    >>> list(r.table.columns[:4])
    ['model', 'form', 'n_items', 'n_runs']
    """
    check_arguments(conf_level=conf_level, missing=missing)
    by_ = sl.as_list(by)
    data, cols = sl.resolve(data, item=item, run=run, outcome=outcome, by=by_, missing=missing)
    rows = []
    for key, sub in sl.groups(data, by_):
        where = sl.slice_label(by_, key)
        mat, _, _ = sl.item_run_matrix(sub, cols, where)
        complete = ~np.isnan(mat).any(axis=1)
        if not complete.all():
            warnings.warn(f"{where}{int((~complete).sum())} item(s) miss a run and are dropped from the "
                          f"ICC (as na.omit in irr)", DataWarning, stacklevel=2)
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                res = icc_matrix(mat, model=model, type=type, unit=unit, r0=r0, conf_level=conf_level,
                                 convention=convention)
        except DataError as exc:
            raise DataError(f"{where}{exc}") from None
        if not np.isfinite(res["icc"]):
            warnings.warn(f"{where}the ICC is undefined (no variation within or between items)",
                          DataWarning, stacklevel=2)
        rows.append(dict(zip(by_, key)) | {k: res[k] for k in (
            "form", "n_items", "n_runs", "icc", "conf_low", "conf_high", "statistic", "df1", "df2",
            "p_value")})
    table = pd.DataFrame(rows)
    table["quality"] = quality_band(table["icc"].to_numpy(), bands, labels) if len(table) else []
    return ICCResult(table=table, by=tuple(by_), model=model, type=type, unit=unit,
                     conf_level=conf_level, bands=tuple(float(b) for b in bands))


# ----------------------------------------------------------------------------------------------
# model-based (latent-scale) ICC


@dataclass(frozen=True, eq=False, repr=False)
class LatentICCResult(Result):
    """Variance decomposition of a mixed model with item and item:run intercepts, and its ICC.

    ``table``: one row per component (``item``, ``item:run``, any other random intercept of the
    fit, ``overdispersion`` for a beta-binomial fit, ``residual``) with its ``variance`` and
    ``share`` of the total.  ``icc_runs`` is the correlation of two runs of the same item
    (sigma^2_item / total): the model-based counterpart of ICC(C,1).  ``icc_runs_average`` applies
    Spearman-Brown for the mean of ``n_runs`` runs.  ``run_share`` is sigma^2_item:run /
    (sigma^2_item + sigma^2_item:run): the part of the item-level variation that changes from run
    to run.  ``scale`` is ``"latent"`` (binomial, ordinal and beta-binomial fits: the scale of the
    link) or ``"observed"`` (a linear mixed model: the scores themselves); ``residual`` says
    which residual variance was used.
    """

    table: pd.DataFrame
    icc_runs: float
    run_share: float
    n_runs: int
    icc_runs_average: float
    scale: str = "latent"
    residual: str = "logistic (pi^2/3)"

    def _title(self) -> str:
        return f"{self.scale.capitalize()}-scale variance shares of a mixed model"

    def _header(self) -> list[str]:
        return [f"ICC across runs {self.icc_runs:.3f}; average of {self.n_runs} run(s) "
                f"{self.icc_runs_average:.3f}; residual: {self.residual}"]

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def to_dict(self) -> dict[str, Any]:
        return super().to_dict() | {"icc_runs": self.icc_runs, "run_share": self.run_share,
                                    "n_runs": self.n_runs, "icc_runs_average": self.icc_runs_average,
                                    "scale": self.scale, "residual": self.residual}


def _varcorr_frame(fit_or_varcorr: VarCorrFit | pd.DataFrame) -> pd.DataFrame:
    vc = getattr(fit_or_varcorr, "varcorr", fit_or_varcorr)
    if callable(vc):
        vc = vc()
    if not isinstance(vc, pd.DataFrame) or not {"group", "variance"} <= set(vc.columns):
        raise DataError("expected a fitted mixed model with a `varcorr` DataFrame (columns group, var1, var2, "
                        "variance, sd) or such a DataFrame")
    return vc


_LINK_NAMES = {"logit": "logistic (pi^2/3)", "probit": "standard normal (1)", "cloglog": "Gumbel (pi^2/6)"}


def _fit_mean(fit: object) -> float:
    """The mean of a fit on the response scale at the average linear predictor of its reference
    grid (equal weights over the factor levels, as emmeans averages)."""
    from ..mixed.grid import ref_grid
    from ..mixed.links import inverse_link

    eta = ref_grid(fit).linear_predictor()  # type: ignore[arg-type]
    return float(inverse_link(getattr(fit, "link", "logit"), np.array([np.nanmean(eta)]))[0])


def _latent_residual(fit: object, vc: pd.DataFrame, mean: float | None) -> tuple[list[tuple[str, float]], str, str]:
    """The residual rows on the scale of the random effects, the scale's name and what they are.

    A linear mixed model: its residual variance (observed scale).  A binomial GLMM or a
    cumulative-link model (``evalmix.clmm``, which has a link and no family): the latent residual
    of the link.  A beta-binomial fit: a trial is 1 when ``logit(p) + e > 0`` with ``p`` the
    observation's Beta draw and ``e`` logistic, so the latent variance adds ``Var(logit p) =
    trigamma(mu phi) + trigamma((1 - mu) phi)`` (the overdispersion, evaluated at the mean ``mu``
    as Nakagawa, Johnson & Schielzeth 2017 evaluate distribution-specific variances) to pi^2/3.
    A beta fit is refused: its scores are not a thresholded latent variable, so no residual of the
    link's scale exists."""
    from scipy import special

    family = getattr(fit, "family", "binomial")
    if isinstance(vc, pd.DataFrame) and "Residual" in set(vc["group"].astype(str)):
        value = float(vc.loc[vc["group"].astype(str) == "Residual", "variance"].iloc[0])
        return [("residual", value)], "observed", "residual variance of the linear mixed model"
    if family == "cumulative":  # the Bayesian clmm twin: its link is the latent scale's, the CDF its
        # cumulative link; the ML clmm has a link and no family
        link = str(getattr(fit, "cumulative_link", "logit"))
        return [("residual", LATENT_RESIDUAL[link])], "latent", _LINK_NAMES[link]
    if family not in ("binomial", "betabinomial"):
        raise DataError(f"latent_icc needs a binomial, beta-binomial, cumulative-link (clmm) or linear mixed "
                        f"fit; a {family} fit has no fixed latent residual variance (its scores are not a "
                        "thresholded latent variable), so its run-to-run ICC is not defined this way: compare "
                        "the variance components, or the response-scale components of "
                        "evalmix.studies.repetitions.components_from_fit")
    link = getattr(fit, "link", "logit")
    if link not in LATENT_RESIDUAL:
        raise DataError(f"latent_icc knows the latent residual of the links {', '.join(LATENT_RESIDUAL)}, "
                        f"not {link!r}")
    rows = [("residual", LATENT_RESIDUAL[link])]
    if family == "betabinomial":
        phi = float(getattr(fit, "dispersion", math.nan))
        mu = _fit_mean(fit) if mean is None else float(mean)
        if not (0 < mu < 1 and math.isfinite(phi) and phi > 0):
            raise DataError(f"the beta-binomial overdispersion needs a mean in (0, 1) and a precision phi > 0, "
                            f"got mean={mu:g}, phi={phi:g}")
        over = float(special.polygamma(1, mu * phi) + special.polygamma(1, (1 - mu) * phi))
        rows.insert(0, ("overdispersion", over))
        return rows, "latent", (f"logistic (pi^2/3) and the beta-binomial overdispersion at mean {mu:.4g} "
                                f"(phi {phi:.4g})")
    return rows, "latent", _LINK_NAMES[link]


def latent_icc(fit_or_varcorr: VarCorrFit | pd.DataFrame, *, item: str = "item", item_run: str | None = None,
               n_runs: int = 1, mean: float | None = None) -> LatentICCResult:
    """Run-to-run reliability (ICC) from the variance components of a mixed model.

    For ``... + (1|item) + (1|item:run)`` the propensity of item i in run r is ``eta + a_i +
    c_ir + e``, with ``Var(a) = s2_item``, ``Var(c) = s2_item:run`` and a residual ``e``.  Two runs
    of the same item share only ``a_i``, so their correlation is ``s2_item / total``, where the
    total adds every random intercept of the fit (a judge, say) and the residual.  The residual
    depends on the fit:

    - a binomial GLMM (:func:`evalmix.glmer`, or :func:`evalmix.glmmtmb` with the binomial
      family): the latent residual of the link, pi^2/3 (logit), 1 (probit), pi^2/6 (cloglog);
    - a cumulative-link mixed model (:func:`evalmix.clmm`): the same, on the latent scale of the
      ratings (pi^2/3 for logit, 1 for probit);
    - a beta-binomial fit (:func:`evalmix.glmmtmb`): pi^2/3 plus the overdispersion
      ``trigamma(mu phi) + trigamma((1 - mu) phi)``, the variance of the logit of the
      observation's Beta probability, evaluated at the mean ``mu`` (so the ICC is an
      approximation at that mean);
    - a linear mixed model (:func:`evalmix.lmer`): its residual variance, on the observed scale.

    A beta fit is refused: its scores are not a thresholded latent variable and no latent
    residual exists.

    Parameters
    ----------
    fit_or_varcorr : fit or DataFrame
        A fit with a ``varcorr`` DataFrame (columns ``group``, ``var1``, ``var2``, ``variance``,
        ``sd``) or that DataFrame (binomial logit unless it has a ``Residual`` row).  Only
        intercept rows (``var1`` ``(Intercept)`` or missing, no ``var2``) are used.
    item, item_run : str
        Group names of the item and item:run terms (``item_run`` defaults to the one group whose
        name starts with ``item + ":"``; without one, the fit has no run term and ``run_share``
        is 0).
    n_runs : int
        Number of runs averaged for ``icc_runs_average``.
    mean : float, optional
        Beta-binomial fits: the mean proportion at which the overdispersion is evaluated
        (default: the inverse link of the average linear predictor of the reference grid).

    Returns
    -------
    LatentICCResult

    Examples
    --------
    >>> import pandas as pd
    >>> vc = pd.DataFrame({"group": ["item:run", "item"], "var1": ["(Intercept)"] * 2,
    ...                    "var2": [None, None], "variance": [0.25, 2.25], "sd": [0.5, 1.5]})
    >>> round(latent_icc(vc).icc_runs, 4)
    0.3886
    """
    vc = _varcorr_frame(fit_or_varcorr)
    residual, scale, what = _latent_residual(fit_or_varcorr, vc, mean)
    vc = vc[vc["group"].astype(str) != "Residual"]
    if "var2" in vc.columns:  # covariance rows carry a second variable (missing or "" otherwise)
        vc = vc[vc["var2"].isna() | (vc["var2"].astype(str) == "")]
    if "var1" in vc.columns:
        vc = vc[vc["var1"].isna() | (vc["var1"] == "(Intercept)")]
    groups = [str(g) for g in vc["group"]]
    if item not in groups:
        raise DataError(f"no random intercept for group {item!r} in the fit; groups: {groups}")
    if item_run is None:
        cands = [g for g in groups if g.startswith(f"{item}:")]
        if len(cands) > 1:
            raise DataError(f"cannot tell the item:run group among {groups}; pass item_run=")
        item_run = cands[0] if cands else None
    elif item_run not in groups:
        raise DataError(f"no random intercept for group {item_run!r} in the fit; groups: {groups}")
    var = dict(zip(groups, vc["variance"].astype(float)))
    s_i = var[item]
    s_ir = 0.0 if item_run is None else var[item_run]
    names = [item] + ([item_run] if item_run is not None else [])
    rows = [(g, var[g]) for g in names] + [(g, v) for g, v in var.items() if g not in names] + residual
    table = pd.DataFrame({"component": [g for g, _ in rows], "variance": [v for _, v in rows]})
    total = float(table["variance"].sum())
    table["share"] = table["variance"] / total
    rho = s_i / total
    avg = n_runs * rho / (1 + (n_runs - 1) * rho)
    share = s_ir / (s_i + s_ir) if s_i + s_ir > 0 else float("nan")
    return LatentICCResult(table=table, icc_runs=rho, run_share=share, n_runs=int(n_runs),
                           icc_runs_average=avg, scale=scale, residual=what)
