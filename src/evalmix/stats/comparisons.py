"""Statistical tests for comparing models evaluated on the same items.

Two models answered the same questions, so every comparison here is *paired*: it works on the
per-item difference, which cancels what the models share (item difficulty) and keeps only what
differs.  Direction convention throughout: ``estimate = mean(b) - mean(a)`` (positive favours ``b``).

- :func:`mcnemar` - one run per model, binary outcomes (discordant pairs).
- :func:`paired_t_runs` - several runs per model: paired t-test on per-item means over runs.
- :func:`permutation_test` - sign-flip permutation test on per-item differences.
- :func:`wilcoxon` - Wilcoxon signed-rank test on per-item differences.
- :func:`cohens_d` - standardised effect size.
- :func:`friedman` - k models on the same items, with the Nemenyi post-hoc test.
- :func:`compare_pair` - any of these (and the paired bootstrap) straight from a runs table.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import warnings
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats

from ..core import tables
from ..core.arguments import check_arguments, check_choice, check_count, check_level
from ..core.seeds import accepts_seed, as_generator
from ..core.result import Result, Summary, contrast_label
from ..data.runs import RunsData, RunsSchema, at_the_door, ensure_runs, schema_of
from ..core.errors import DataError, DataWarning
from .paired import ComparisonResult, item_means
from .resampling import paired_bootstrap

__all__ = ["ComparisonResult", "FriedmanResult", "cohens_d", "compare_pair", "friedman",
           "mcnemar", "nemenyi_critical_difference", "paired_t_runs", "permutation_test",
           "wilcoxon"]


def _binary(x: Any, name: str) -> np.ndarray:
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise DataError(f"`{name}` must be 1-D: McNemar's test compares one run per model "
                        f"(use paired_t_runs for several runs), got shape {arr.shape}")
    vals = arr.astype(float)
    if np.isnan(vals).any() or not np.isin(vals, (0.0, 1.0)).all():
        raise DataError(f"`{name}` must contain only 0/1 (or False/True) outcomes")
    return vals.astype(bool)


def _z(conf_level: float) -> float:
    return float(stats.norm.ppf(0.5 + check_level(conf_level) / 2))


# ----------------------------------------------------------------------------- McNemar

def mcnemar(a: ArrayLike, b: ArrayLike, *, exact: bool = False, correction: bool = False,
            conf_level: float = 0.95) -> ComparisonResult:
    """McNemar's test for two models scored 0/1 on the same items (one run each).

    Parameters
    ----------
    a, b : array_like of 0/1, shape (n_items,)
        Outcomes of model ``a`` and model ``b`` on the same items, in the same order.
    exact : bool
        Report the exact binomial p-value (the statistic is then ``min(n01, n10)``, as in
        statsmodels); otherwise the chi-square p-value.
    correction : bool
        Continuity correction of the chi-square statistic (``(|n01 - n10| - 1)^2 / (n01 + n10)``).
    conf_level : float
        Level of the interval for the difference in accuracy.

    Returns
    -------
    ComparisonResult
        ``estimate = (n01 - n10) / n`` (accuracy of ``b`` minus accuracy of ``a``), with
        ``se = sqrt(n01 + n10) / n`` and the z interval ``estimate +/- z se``.  This is the z form
        of the test: without correction ``(estimate / se)^2`` equals the chi-square statistic, so
        the interval excludes 0 exactly when the chi-square p-value is below ``1 - conf_level``.
        ``details`` holds the four cell counts, both accuracies and the chi-square and exact
        p-values.

    Notes
    -----
    ``n01`` counts items ``a`` got wrong and ``b`` right; ``n10`` the reverse.  Equal to
    ``statsmodels.stats.contingency_tables.mcnemar`` on the table ``[[n00, n01], [n10, n11]]``.
    In R: ``mcnemar.test(table(a, b), correct = FALSE)``.

    Examples
    --------
    >>> from evalmix import mcnemar
    >>> r = mcnemar([1, 1, 0, 0, 1, 0, 1, 1], [1, 1, 1, 1, 1, 0, 1, 0])
    >>> r.details["n01"], r.details["n10"], round(r.estimate, 3)
    (2, 1, 0.125)
    """
    check_arguments(conf_level=conf_level)
    xa, xb = _binary(a, "a"), _binary(b, "b")
    if xa.shape != xb.shape:
        raise DataError(f"`a` and `b` must have the same length: {xa.size} vs {xb.size}")
    n = xa.size
    n11 = int(np.sum(xa & xb))
    n00 = int(np.sum(~xa & ~xb))
    n10 = int(np.sum(xa & ~xb))
    n01 = int(np.sum(~xa & xb))
    disc = n01 + n10
    estimate = (n01 - n10) / n
    se = math.sqrt(disc) / n
    z = _z(conf_level)
    if disc > 0:
        chi2 = (abs(n01 - n10) - int(correction)) ** 2 / disc
        p_chi2 = float(stats.chi2.sf(chi2, 1))
        p_exact = float(min(1.0, 2 * stats.binom.cdf(min(n01, n10), disc, 0.5)))
    else:  # no discordant pair: the data carry no evidence of a difference
        chi2, p_chi2, p_exact = 0.0, 1.0, 1.0
    details = {"n00": n00, "n01": n01, "n10": n10, "n11": n11, "accuracy_a": (n10 + n11) / n,
               "accuracy_b": (n01 + n11) / n, "p_chisq": p_chi2, "p_exact": p_exact,
               "z": estimate / se if se > 0 else 0.0}
    return ComparisonResult(
        method="mcnemar_exact" if exact else "mcnemar", estimate=estimate, se=se,
        conf_low=estimate - z * se, conf_high=estimate + z * se,
        statistic=float(min(n01, n10)) if exact else chi2, df=math.nan if exact else 1.0,
        p_value=p_exact if exact else p_chi2, conf_level=conf_level, n=n, details=details)


# ----------------------------------------------------------------------------- paired t

def cohens_d(a: ArrayLike, b: ArrayLike, *, paired: bool = True) -> float:
    """Cohen's d for the difference ``b - a``.

    Parameters
    ----------
    a, b : array_like
        Scores; 1-D per item, or 2-D (runs x items) which are averaged over runs first.
    paired : bool
        ``True``: ``d_z = mean(d) / sd(d)`` on the per-item differences (the effect size of a
        paired design).  ``False``: the classical ``(mean(b) - mean(a)) / pooled sd``.

    Examples
    --------
    >>> from evalmix import cohens_d
    >>> round(cohens_d([0.1, 0.5, 0.4, 0.8], [0.3, 0.6, 0.6, 0.9]), 3)
    2.598
    """
    ma, mb = item_means(a, b)
    if paired:
        d = mb - ma
        sd = d.std(ddof=1)
        return float(d.mean() / sd) if sd > 0 else math.nan
    na, nb = ma.size, mb.size
    pooled = math.sqrt(((na - 1) * ma.var(ddof=1) + (nb - 1) * mb.var(ddof=1)) / (na + nb - 2))
    return float((mb.mean() - ma.mean()) / pooled) if pooled > 0 else math.nan


def paired_t_runs(a: ArrayLike, b: ArrayLike, *, conf_level: float = 0.95) -> ComparisonResult:
    """Paired t-test on per-item mean scores over runs.

    Each model's runs are averaged within item first (``a`` and ``b`` are ``(runs, items)``
    arrays, NaN for missing runs, or 1-D per-item means); the test is then the one-sample t-test
    of the per-item differences ``d_q = mean_b(q) - mean_a(q)``: ``estimate = mean(d)``,
    ``se = sd(d) / sqrt(n)``, ``df = n - 1``.  Pairing removes the shared item difficulty and the
    run average shrinks the decoding noise, which is why this test is both honest and powerful.

    Parameters
    ----------
    a, b : array_like
        Scores of the two models, ``(n_runs, n_items)`` or ``(n_items,)``.
    conf_level : float
        Level of the t interval.

    Returns
    -------
    ComparisonResult
        ``details`` holds ``cohens_d`` (``d_z``), ``correlation`` (Pearson correlation of the two
        models' per-item means) and the two mean accuracies.

    Notes
    -----
    Equal to ``scipy.stats.ttest_rel`` on the per-item means; in R ``t.test(mb, ma, paired=TRUE)``.

    Examples
    --------
    >>> import numpy as np
    >>> from evalmix import paired_t_runs
    >>> a = np.array([[1, 0, 1, 1, 0], [1, 0, 0, 1, 0]])
    >>> b = np.array([[1, 1, 1, 1, 0], [1, 0, 1, 1, 1]])
    >>> r = paired_t_runs(a, b)
    >>> round(r.estimate, 2), r.df
    (0.3, 4.0)
    """
    check_arguments(conf_level=conf_level)
    ma, mb = item_means(a, b)
    d = mb - ma
    n = d.size
    if n < 2:
        raise DataError("paired_t_runs needs at least 2 items")
    est = float(d.mean())
    sd = float(d.std(ddof=1))
    se = sd / math.sqrt(n)
    df = n - 1
    tq = float(stats.t.ppf(0.5 + conf_level / 2, df)) if 0 < conf_level < 1 else _z(conf_level)
    if se > 0:
        t = est / se
        p = float(2 * stats.t.sf(abs(t), df))
    else:
        t, p = (0.0, 1.0) if est == 0 else (math.copysign(math.inf, est), 0.0)
    corr = float(np.corrcoef(ma, mb)[0, 1]) if ma.std() > 0 and mb.std() > 0 else math.nan
    details = {"cohens_d": est / sd if sd > 0 else math.nan, "correlation": corr,
               "mean_a": float(ma.mean()), "mean_b": float(mb.mean())}
    return ComparisonResult(method="paired_t_runs", estimate=est, se=se, conf_low=est - tq * se,
                            conf_high=est + tq * se, statistic=t, df=float(df), p_value=p,
                            conf_level=conf_level, n=n, details=details)


# ----------------------------------------------------------------------------- permutation

@accepts_seed
def permutation_test(a: ArrayLike, b: ArrayLike, *, n_resamples: int = 10_000, exact: bool | None = None,
                     rng: int | np.random.Generator | None = None) -> ComparisonResult:
    """Paired permutation (sign-flip) test of the mean per-item difference.

    Under "no difference" the label of which model produced which score is exchangeable within
    an item, so each per-item difference ``d_q`` is equally likely to have either sign.  The
    p-value is the share of sign patterns whose ``|mean(d)|`` is at least the observed one.

    Parameters
    ----------
    a, b : array_like
        Scores, 1-D per item or 2-D (runs x items) averaged over runs.
    n_resamples : int
        Random sign patterns when the test is not exact.
    exact : bool, optional
        Enumerate all ``2^m`` patterns of the ``m`` non-zero differences (default: when
        ``2^m <= n_resamples``).  Zero differences do not change under a flip and are left out of
        the enumeration.
    rng : int or Generator, optional
        Random numbers of the Monte-Carlo version.

    Returns
    -------
    ComparisonResult
        ``p_value`` is exact, or the Monte-Carlo estimate ``(1 + hits) / (1 + n_resamples)``
        which never reports 0.

    Notes
    -----
    The exact version equals ``scipy.stats.permutation_test(..., permutation_type="samples")``
    with the mean difference as statistic.

    Examples
    --------
    >>> from evalmix import permutation_test
    >>> r = permutation_test([0.2, 0.4, 0.1, 0.5], [0.5, 0.6, 0.3, 0.9])
    >>> r.p_value  # all four differences positive: 2 of 16 patterns are as extreme
    0.125
    """
    check_arguments(n_resamples=n_resamples, rng=rng)
    ma, mb = item_means(a, b)
    d = mb - ma
    n = d.size
    obs = float(d.mean())
    nz = d[d != 0]
    m = nz.size
    if exact is None:
        exact = m <= 30 and 2 ** m <= n_resamples
    tol = 1e-12 * max(1.0, float(np.abs(d).sum()))
    if m == 0:
        p = 1.0
    elif exact:
        if m > 30:
            raise ValueError(f"exact enumeration of 2^{m} sign patterns is too large; use exact=False")
        signs = 1 - 2 * ((np.arange(2 ** m)[:, None] >> np.arange(m)) & 1)
        sums = np.abs(signs @ nz)
        p = float(np.mean(sums >= abs(nz.sum()) - tol))
    else:
        rng = as_generator(rng)
        hits = 0
        target = abs(nz.sum()) - tol
        chunk = max(1, 2_000_000 // m)
        for start in range(0, n_resamples, chunk):
            size = min(chunk, n_resamples - start)
            signs = rng.integers(0, 2, size=(size, m), dtype=np.int8) * 2 - 1
            hits += int(np.sum(np.abs(signs @ nz) >= target))
        p = (1 + hits) / (1 + n_resamples)
    return ComparisonResult(method="permutation_exact" if exact else "permutation", estimate=obs,
                            se=math.nan, conf_low=math.nan, conf_high=math.nan, statistic=obs,
                            df=math.nan, p_value=p, conf_level=math.nan, n=n,
                            details={"n_nonzero": m, "n_resamples": 2 ** m if exact else n_resamples})


# ----------------------------------------------------------------------------- Wilcoxon

def _signed_rank_exact_sf(n: int) -> np.ndarray:
    """Counts of the signed-rank sum T+ = 0..n(n+1)/2 over all 2^n sign patterns."""
    top = n * (n + 1) // 2
    counts = np.zeros(top + 1)
    counts[0] = 1.0
    for r in range(1, n + 1):
        counts[r:] = counts[r:] + counts[:-r].copy()
    return counts


def wilcoxon(a: ArrayLike, b: ArrayLike, *, correction: bool = False, method: str = "auto") -> ComparisonResult:
    """Wilcoxon signed-rank test on per-item differences ``b - a``.

    Zero differences are dropped (Wilcoxon's convention), tied absolute differences get mid-ranks.

    Parameters
    ----------
    a, b : array_like
        Scores, 1-D per item or 2-D (runs x items) averaged over runs.
    correction : bool
        Continuity correction of the normal approximation.
    method : {"auto", "exact", "approx"}
        ``"exact"`` uses the null distribution of the signed-rank sum (only without ties or
        zeros); ``"auto"`` picks it when there are at most 50 non-zero differences and no ties.

    Returns
    -------
    ComparisonResult
        ``statistic`` is ``min(T+, T-)``; ``estimate`` the mean difference; ``details`` holds
        ``T_plus``, ``T_minus``, ``z`` (normal approximation) and the matched-pairs rank-biserial
        correlation ``rank_biserial = (T+ - T-) / (T+ + T-)``.

    Notes
    -----
    Equal to ``scipy.stats.wilcoxon(b, a, zero_method="wilcox")`` with ``method="exact"`` or
    ``"asymptotic"`` (scipy's ``"auto"`` switches to a permutation test for small tied samples,
    this function to the normal approximation); in R
    ``wilcox.test(b, a, paired = TRUE)``.

    Examples
    --------
    >>> from evalmix import wilcoxon
    >>> r = wilcoxon([1, 2, 3, 4, 5, 6], [2.5, 2.1, 5.2, 4.5, 7, 9])
    >>> r.statistic, round(r.p_value, 4)
    (0.0, 0.0312)
    """
    ma, mb = item_means(a, b)
    d = mb - ma
    nz = d[d != 0]
    m = nz.size
    if m == 0:
        raise DataError("all per-item differences are zero: the signed-rank test is undefined")
    ranks = stats.rankdata(np.abs(nz))
    t_plus = float(ranks[nz > 0].sum())
    t_minus = float(ranks[nz < 0].sum())
    stat = min(t_plus, t_minus)
    _, tie_counts = np.unique(np.abs(nz), return_counts=True)
    has_ties = bool(np.any(tie_counts > 1))
    has_zeros = m < d.size
    if method == "auto":
        method = "exact" if (m <= 50 and not has_ties and not has_zeros) else "approx"
    mean_t = m * (m + 1) / 4
    var_t = m * (m + 1) * (2 * m + 1) / 24 - np.sum(tie_counts ** 3 - tie_counts) / 48
    if method == "exact":
        if has_ties:
            raise DataError("the exact signed-rank distribution needs untied differences; "
                            "use method='approx'")
        counts = _signed_rank_exact_sf(m)
        cdf = np.cumsum(counts) / counts.sum()
        p = float(min(1.0, 2 * cdf[int(stat)]))
    elif method == "approx":
        p = math.nan
    else:
        raise ValueError(f"method must be 'auto', 'exact' or 'approx', got {method!r}")
    num = stat - mean_t
    if correction:
        num = num + 0.5 if num < 0 else num - 0.5  # toward zero
    z = num / math.sqrt(var_t) if var_t > 0 else 0.0
    if method == "approx":
        p = float(min(1.0, 2 * stats.norm.sf(abs(z))))
    details = {"T_plus": t_plus, "T_minus": t_minus, "z": z,
               "rank_biserial": (t_plus - t_minus) / (t_plus + t_minus), "n_nonzero": m}
    return ComparisonResult(method=f"wilcoxon_{method}", estimate=float(d.mean()), se=math.nan,
                            conf_low=math.nan, conf_high=math.nan, statistic=stat, df=math.nan,
                            p_value=p, conf_level=math.nan, n=d.size, details=details)


# ----------------------------------------------------------------------------- Friedman + Nemenyi

def nemenyi_critical_difference(k: int, n: int, alpha: float = 0.05) -> float:
    """Critical difference of mean ranks for the Nemenyi test (Demšar 2006).

    ``CD = q_alpha * sqrt(k (k + 1) / (6 n))`` with ``q_alpha`` the studentized range quantile
    (infinite df) divided by ``sqrt(2)``.

    Examples
    --------
    >>> from evalmix.stats.comparisons import nemenyi_critical_difference
    >>> round(nemenyi_critical_difference(4, 100), 4)  # q_0.05 = 2.569 for k = 4
    0.469
    """
    check_arguments(alpha=alpha)
    k, n = check_count(k, "k", minimum=2), check_count(n, "n")
    from .multiplicity import qtukey

    q = qtukey(1 - alpha, k) / math.sqrt(2)  # R's qtukey(1 - alpha, k, Inf), kept per (level, k)
    return float(q * math.sqrt(k * (k + 1) / (6 * n)))


@dataclass(frozen=True, eq=False, repr=False)
class FriedmanResult(Result):
    """Friedman test of k models on the same items, with Nemenyi pairwise comparisons.

    Attributes
    ----------
    statistic, df, p_value : float
        Friedman chi-square (tie corrected), its degrees of freedom ``k - 1`` and p-value.
    mean_ranks : Series
        Mean rank of each model (rank 1 = best score on an item), sorted best first.
    n_items : int
        Number of items (blocks).
    critical_difference : float
        Nemenyi critical difference at ``alpha``.
    pairwise : DataFrame
        One row per pair: mean ranks, rank difference, Nemenyi p-value, ``significant``.
    alpha : float
        Level of the post-hoc test.
    """

    statistic: float
    df: float
    p_value: float
    mean_ranks: pd.Series
    n_items: int
    critical_difference: float
    pairwise: pd.DataFrame
    alpha: float

    def to_frame(self) -> pd.DataFrame:
        return pd.DataFrame({"model": self.mean_ranks.index.astype(str),
                             "mean_rank": self.mean_ranks.to_numpy()})

    def to_dict(self) -> dict[str, Any]:
        out = super().to_dict()
        out.update({"statistic": self.statistic, "df": self.df, "p_value": self.p_value,
                    "n_items": self.n_items, "critical_difference": self.critical_difference,
                    "alpha": self.alpha})
        return out

    def _title(self) -> str:
        return "Friedman rank test with Nemenyi post-hoc comparisons"

    def _header(self) -> list[str]:
        return [f"statistic (chi-square) = {self.statistic:.3f}, df = {self.df:.0f}, "
                f"p_value = {tables.format_p(self.p_value)}, n_items = {self.n_items}, "
                f"critical difference = {self.critical_difference:.3f} (alpha = {self.alpha})"]

    def summary(self) -> Summary:
        """Mean ranks and the Nemenyi pairwise comparisons."""
        return Summary(self._title(), self._header(),
                       [("Mean ranks", self.to_frame()), ("Nemenyi pairwise", self.pairwise)])


def friedman(scores: RunsData | ArrayLike, *, model: str | None = None, item: str | None = None,
             outcome: str | None = None, alpha: float = 0.05, missing: str = "raise") -> FriedmanResult:
    """Friedman rank test of k models on the same items, with the Nemenyi post-hoc test.

    Parameters
    ----------
    scores : DataFrame, path or array_like
        Either a wide ``(items, models)`` matrix (DataFrame columns name the models) or a long runs
        table (a DataFrame with ``model`` and ``item`` columns or roles recorded by ``read_runs``,
        or a file), validated by :func:`evalmix.ensure_runs` and averaged over runs per item.
    model, item, outcome : str, optional
        Column names of the long table (default: as in :func:`compare_pair`).
    alpha : float
        Level of the Nemenyi comparisons.
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).

    Returns
    -------
    FriedmanResult

    Notes
    -----
    The statistic equals ``scipy.stats.friedmanchisquare`` (with the tie correction); in R
    ``friedman.test(as.matrix(wide))``.  Pairwise p-values use the studentized range
    distribution with ``q = |R_i - R_j| / sqrt(k (k + 1) / (12 n))`` (Nemenyi; Demšar 2006).

    Examples
    --------
    >>> import pandas as pd
    >>> from evalmix import friedman
    >>> wide = pd.DataFrame({"a": [0.2, 0.3, 0.1, 0.4], "b": [0.5, 0.6, 0.4, 0.5],
    ...                      "c": [0.9, 0.8, 0.7, 0.9]})
    >>> r = friedman(wide)
    >>> list(r.mean_ranks.index), round(r.statistic, 3)
    (['c', 'b', 'a'], 8.0)
    """
    check_arguments(alpha=alpha, missing=missing)
    scores = at_the_door(scores)
    long = isinstance(scores, (str, Path)) or isinstance(scores, pd.DataFrame) and (
        schema_of(scores) is not None or any(v is not None for v in (model, item, outcome))
        or {"model", "item"} <= set(scores.columns))
    if long and isinstance(scores, (str, Path, pd.DataFrame)):  # the isinstance only narrows the type
        table, roles = resolve_columns(scores, model, item, None, outcome, missing=missing)
        model, item, outcome = roles.role("model"), roles.role("item"), roles.scores
        wide = (table.groupby([item, model], observed=True)[outcome].mean().unstack(model))
        if wide.isna().any().any():
            incomplete = wide.index[wide.isna().any(axis=1)][:5].tolist()
            raise DataError(f"items {incomplete} are not scored by every model")
    else:
        wide = pd.DataFrame(np.asarray(scores, dtype=float)) if not isinstance(scores, pd.DataFrame) \
            else scores.astype(float)
    x = wide.to_numpy(dtype=float)
    if x.ndim != 2 or x.shape[1] < 2 or x.shape[0] < 2:
        raise DataError(f"friedman needs an (items, models) matrix with >= 2 of each, got {x.shape}")
    if np.isnan(x).any():
        raise DataError("the (items, models) matrix has missing scores")
    n, k = x.shape
    ranks = stats.rankdata(-x, axis=1)  # rank 1 = best
    rank_sums = ranks.sum(axis=0)
    ties = 0.0
    for row in ranks:
        _, c = np.unique(row, return_counts=True)
        ties += float(np.sum(c ** 3 - c))
    corr = 1 - ties / (n * k * (k * k - 1))
    chi2 = (12 / (n * k * (k + 1)) * np.sum(rank_sums ** 2) - 3 * n * (k + 1))
    chi2 = chi2 / corr if corr > 0 else math.nan
    p = float(stats.chi2.sf(chi2, k - 1)) if corr > 0 else math.nan
    names = [str(c) for c in wide.columns]
    mean_ranks = pd.Series(rank_sums / n, index=names).sort_values(kind="stable")
    scale = math.sqrt(k * (k + 1) / (12 * n))
    from .multiplicity import ptukey_upper

    rows = []
    for i, j in itertools.combinations(range(k), 2):
        diff = abs(rank_sums[i] - rank_sums[j]) / n
        rows.append({"model_1": names[i], "model_2": names[j], "mean_rank_1": rank_sums[i] / n,
                     "mean_rank_2": rank_sums[j] / n, "rank_difference": diff})
    pairwise = pd.DataFrame(rows)
    # every pair's p-value in one pass of R's ptukey (PMCMRplus' Nemenyi test), not one SciPy
    # integration per pair
    pairwise["p_value"] = ptukey_upper(pairwise["rank_difference"].to_numpy(dtype=float) / scale, k) \
        if len(pairwise) else np.array([], dtype=float)
    pairwise["significant"] = pairwise["p_value"] < alpha
    return FriedmanResult(statistic=float(chi2), df=float(k - 1), p_value=p, mean_ranks=mean_ranks,
                          n_items=n, critical_difference=nemenyi_critical_difference(k, n, alpha),
                          pairwise=pairwise, alpha=alpha)


# ----------------------------------------------------------------------------- from a runs table

def resolve_columns(data: RunsData, model: str | None = None, item: str | None = None,
                    run: str | None = None, outcome: str | None = None, *,
                    missing: str = "raise") -> tuple[pd.DataFrame, RunsSchema]:
    """Validate a runs table (:func:`evalmix.ensure_runs`) and name its model, item, run and score:
    the table and its roles (one :class:`~evalmix.data.runs.RunsSchema`; model and item always set).

    Roles are the explicit arguments, else those recorded by ``read_runs``, else ``model``,
    ``item``, ``correct`` and ``run`` when such a column exists.  Scores are 0/1 or in [0, 1]; a
    k-of-n table (``successes``/``trials``) is scored as the per-row fraction ``successes / trials``,
    added as the column ``_score`` that the returned roles name as the outcome.
    """
    df, schema = ensure_runs(data, model=model, item=item, run=run, outcome=outcome, need_model=True,
                             need_item=True, allow_fractional=True, missing=missing)
    if schema.counts:
        succ, tri = schema.count_columns
        df = df.assign(_score=df[succ] / df[tri])
        schema = replace(schema, outcome="_score", successes=None, trials=None)
    return df, schema


def sole_model(data: pd.DataFrame, model_col: str, model: object | None) -> str:
    """``model`` as text, or the one model of a table that holds a single one (a table of several
    models needs it named)."""
    if model is not None:
        return str(model)
    models = pd.unique(data[model_col])
    if len(models) > 1:
        raise DataError(f"the table holds {len(models)} models in column {model_col!r}; name one "
                        f"(models: {', '.join(map(repr, sorted(map(str, models))[:20]))})")
    return str(models[0])


def runs_matrices(data: pd.DataFrame, a: str, b: str, *, model: str = "model", item: str = "item",
                  run: str | None = "run", outcome: str = "correct",
                  where: dict[str, Any] | None = None) -> tuple[np.ndarray, np.ndarray, pd.Index]:
    """``(runs, items)`` score matrices of models ``a`` and ``b`` from a long runs table.

    Rows are matched on ``item``; runs are the distinct values of ``run`` (NaN where a model lacks
    a run of an item).  ``where`` filters rows first, e.g. ``{"language": "EN"}``.
    """
    needed = [model, item, outcome] + ([run] if run else [])
    missing = [c for c in needed if c not in data.columns]
    if missing:
        raise DataError(f"column(s) {missing} not found in the data (have {list(data.columns)})")
    df = data
    for col, val in (where or {}).items():
        if col not in df.columns:
            raise DataError(f"filter column {col!r} not found in the data")
        vals = val if isinstance(val, (list, tuple, set)) else [val]
        df = df[df[col].isin(vals)]
    subs = [df[df[model].astype(str) == str(name)] for name in (a, b)]
    mats = []
    for name, sub in zip((a, b), subs):  # an unknown model first, before any other complaint
        if sub.empty:
            known = sorted(map(str, pd.unique(data[model])))
            raise DataError(f"model {name!r} has no rows in column {model!r}"
                            + (f" after filtering {where}" if where else "")
                            + f"; models: {', '.join(map(repr, known[:20]))}")
    for name, sub in zip((a, b), subs):
        keys = [item, run] if run else [item]
        dup = sub.duplicated(keys)
        if dup.any():
            raise DataError(f"model {name!r} has duplicate rows for ({', '.join(keys)}), first at "
                            f"row {sub.index[dup][0]}; filter the slices first (where=...) or "
                            f"aggregate them")
        if run:
            mats.append(sub.set_index([run, item])[outcome].astype(float).unstack(item))
        else:
            mats.append(sub.set_index(item)[outcome].astype(float).to_frame().T)
    ia, ib = mats[0].columns, mats[1].columns
    only_a, only_b = ia.difference(ib), ib.difference(ia)
    if len(only_a) or len(only_b):
        raise DataError(f"items must be scored by both models: only {a!r}: {list(only_a[:5])}, "
                        f"only {b!r}: {list(only_b[:5])}")
    items = ia
    return mats[0][items].to_numpy(), mats[1][items].to_numpy(), items


_PAIR_METHODS = ("paired_t", "mcnemar", "bootstrap", "permutation", "wilcoxon")


def compare_pair(data: RunsData, a: str, b: str, *, method: str = "paired_t",
                 model: str | None = None, item: str | None = None, run: str | None = None,
                 outcome: str | None = None, where: dict[str, Any] | None = None,
                 conf_level: float = 0.95, missing: str = "raise", **options: Any) -> ComparisonResult:
    """Compare two models of a runs table with any paired method.

    Parameters
    ----------
    data : DataFrame or path
        Long runs table: one row per model x item x run.
    a, b : str
        The two models (``estimate = b - a``).
    method : {"paired_t", "mcnemar", "bootstrap", "permutation", "wilcoxon"}
        ``paired_t`` (:func:`paired_t_runs`), ``mcnemar`` (:func:`mcnemar` on one run: option
        ``mcnemar_run``, default the first run label), ``bootstrap``
        (:func:`evalmix.paired_bootstrap`), ``permutation`` (:func:`permutation_test`) or
        ``wilcoxon`` (:func:`wilcoxon`).
    model, item, run, outcome : str, optional
        Column names (default: the roles recorded by :func:`evalmix.read_runs`, else ``model``,
        ``item``, ``run`` when present, ``correct``).  Without a run column there is one row per
        model x item; k-of-n tables are scored as ``successes / trials``.
    where : dict, optional
        Row filter applied first, e.g. ``{"language": "EN"}``.
    conf_level : float
        Level of the interval (where the method has one).
    missing : {"raise", "drop"}
        A missing value in a key, slice or outcome column: a DataError naming the rows (default),
        or the row is dropped with a DataWarning saying how many (see :func:`evalmix.ensure_runs`).
    **options
        Passed to the method (``n_boot``, ``rng``, ``exact``, ``correction``...).

    Examples
    --------
    >>> from evalmix import compare_pair
    >>> from evalmix.simulate import mixture_benchmark
    >>> df = mixture_benchmark(2000, 4, rng=3)
    >>> r = compare_pair(df, "base", "finetune", method="paired_t")
    >>> r.n
    2000
    >>> r.to_frame()["contrast"].item()  # estimate = finetune - base, in accuracy points
    'finetune - base'
    """
    check_arguments(conf_level=conf_level, missing=missing)
    res = _compare_pair(data, a, b, method=method, model=model, item=item, run=run,
                        outcome=outcome, where=where, conf_level=conf_level, missing=missing, **options)
    # the label says what estimate is: model b minus model a, in accuracy points
    details = {"contrast": contrast_label(b, a, scale="accuracy"), **dict(res.details)}
    return dataclasses.replace(res, details=details)


def _compare_pair(data: RunsData, a: str, b: str, *, method: str, model: str | None,
                  item: str | None, run: str | None, outcome: str | None,
                  where: dict[str, Any] | None, conf_level: float, missing: str,
                  **options: Any) -> ComparisonResult:
    check_choice(method, "method", _PAIR_METHODS)
    data, roles = resolve_columns(data, model, item, run, outcome, missing=missing)
    model, item, run, outcome = roles.role("model"), roles.role("item"), roles.run, roles.scores
    if method == "mcnemar":
        runs_value = options.pop("mcnemar_run", None)
        if run:
            labels = sorted(data[run].unique().tolist())
            if runs_value is None:
                runs_value = labels[0]
                if len(labels) > 1:
                    warnings.warn(f"McNemar's test uses one run; using run {runs_value!r} of "
                                  f"{len(labels)} (paired_t uses them all)", DataWarning, stacklevel=2)
            where = dict(where or {})
            where[run] = runs_value
        xa, xb, _ = runs_matrices(data, a, b, model=model, item=item, run=run, outcome=outcome,
                                  where=where)
        return mcnemar(xa[0], xb[0], conf_level=conf_level, **options)
    xa, xb, _ = runs_matrices(data, a, b, model=model, item=item, run=run, outcome=outcome,
                              where=where)
    if method == "paired_t":
        return paired_t_runs(xa, xb, conf_level=conf_level)
    if method == "bootstrap":
        return paired_bootstrap(xa, xb, conf_level=conf_level, **options)
    if method == "permutation":
        return permutation_test(xa, xb, **options)
    return wilcoxon(xa, xb, **options)
