"""Power and sample size for comparing two models: independent, paired and clustered designs.

- Two independent proportions via Cohen's h (statsmodels' ``NormalIndPower``; R ``pwr.2p2n.test``).
- Paired proportions (McNemar) from the discordance rates.
- The clustered design of Miller (2024), "Adding error bars to evals": K runs per item,
  ``n = (z_{a/2} + z_b)^2 (omega^2 + sigma_A^2 / K_A + sigma_B^2 / K_B) / delta^2``.
- Simulation-based power of any method of the calibration harness (:func:`simulated_power`).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import optimize, stats

from ..core.arguments import check_choice, check_number, check_probability
from ..stats.comparisons import item_means
from ..core.errors import DataError, DataWarning
from ..core.seeds import accepts_seed

__all__ = ["check_pilot_variance", "cohens_h", "clustered_variance_components", "mde_clustered", "mde_paired_proportions",
           "mde_two_proportions", "power_clustered", "power_paired_proportions",
           "power_two_proportions", "sample_size_clustered", "sample_size_paired_proportions",
           "sample_size_two_proportions", "simulated_power"]


#: Below this a pilot's variance is a rounding residue of zero (0/1 outcomes have variances <= 0.25).
_ZERO_VARIANCE = 1e-12
_ALTERNATIVES = ("two-sided", "larger", "smaller")


def _check_p(**ps: float) -> None:
    for name, p in ps.items():
        check_probability(p, name, closed=True)


def _check_design(n: float | None = None, alpha: float | None = None, power: float | None = None,
                  ratio: float | None = None) -> None:
    """The shared arguments of the closed forms: items > 0, alpha and power in (0, 1), ratio > 0."""
    if n is not None:
        check_number(n, "n", minimum=0, strict=True)
    if alpha is not None:
        check_probability(alpha, "alpha")
    if power is not None:
        check_probability(power, "power")
    if ratio is not None:
        check_number(ratio, "ratio", minimum=0, strict=True)


def _crit(alpha: float, alternative: str) -> float:
    check_probability(alpha, "alpha")
    check_choice(alternative, "alternative", _ALTERNATIVES)
    if alternative == "two-sided":
        return float(stats.norm.isf(alpha / 2))
    return float(stats.norm.isf(alpha))


def check_pilot_variance(variances: pd.DataFrame | Mapping[str, ArrayLike | None],
                         names: Sequence[str] | None = None) -> None:
    """Refuse to plan a study from a pilot that shows no variance at all.

    A pilot in which every item got the same outcome in every run (all correct, say) has variance
    components of 0, so every design reaches any standard-error target and a planner would
    recommend its smallest design with an SE of 0: a number that looks computed but is not.

    Parameters
    ----------
    variances : DataFrame or mapping
        Variance components: a table with one row per slice (``var_between``, ``var_within``
        columns, as :func:`evalmix.studies.repetitions.variance_components` returns) or a mapping of
        component name to value(s).  None values and absent names are skipped (the planner
        reports those itself).
    names : sequence of str, optional
        The components to add up (default: ``var_between`` and ``var_within`` of a table, every
        entry of a mapping).

    Raises
    ------
    DataError
        Every slice has a total variance of 0 (up to 1e-12); the message names the components.

    Warns
    -----
    DataWarning
        Some slices (named) have no variance: any design meets the target there.

    Examples
    --------
    >>> check_pilot_variance({"var_between": 0.02, "var_within": 0.05})
    >>> try:
    ...     check_pilot_variance({"var_between": 0.0, "var_within": 0.0})
    ... except DataError as exc:
    ...     print(exc)  # doctest: +ELLIPSIS
    the pilot shows no variance to plan from: var_between + var_within = 0 ...
    """
    frame = isinstance(variances, pd.DataFrame)
    keys = [str(k) for k in (names if names is not None else
                             ["var_between", "var_within"] if frame else list(variances))]
    present = [k for k in keys if k in variances and variances[k] is not None]
    if not present:
        return
    try:
        parts = [np.atleast_1d(np.asarray(variances[k], dtype=float)) for k in present]
        total = np.sum(np.broadcast_arrays(*parts), axis=0)
    except (TypeError, ValueError):  # not numbers: the planner's own checks name them
        return
    known = ~np.isnan(total)
    zero = known & (np.abs(total) <= _ZERO_VARIANCE)
    if not zero.any():
        return
    what = " + ".join(present)
    if zero.sum() == known.sum():
        raise DataError(
            f"the pilot shows no variance to plan from: {what} = 0 (every item got the same outcome "
            "in every run, e.g. all correct), so any design would report a standard error of 0; "
            "pilot on items the models sometimes fail, or give the variances of a comparable study")
    labels: list[str] = [str(i) for i in np.flatnonzero(zero)]
    if isinstance(variances, pd.DataFrame):
        label_cols = [c for c in variances.columns if not pd.api.types.is_numeric_dtype(variances[c])]
        rows = variances.loc[zero]
        if label_cols:
            labels = [", ".join(f"{c}={v!r}" for c, v in zip(label_cols, vals))
                      for vals in rows[label_cols].itertuples(index=False)]
    warnings.warn(f"{int(zero.sum())} slice(s) of the pilot show no variance ({what} = 0: "
                  f"{'; '.join(labels[:5])}); any design meets the target there, so the plan rests on "
                  "the other slices", DataWarning, stacklevel=3)


def _normal_power(effect: float, crit: float, alternative: str) -> float:
    """Power of a z-test whose statistic is N(effect, 1) under the alternative."""
    if alternative == "two-sided":
        return float(stats.norm.sf(crit - effect) + stats.norm.cdf(-crit - effect))
    if alternative == "larger":
        return float(stats.norm.sf(crit - effect))
    return float(stats.norm.cdf(-crit - effect))


def _solve(f: Callable[[float], float], lo: float, hi: float) -> float:
    while f(hi) < 0:
        hi *= 2
        if hi > 1e12:
            raise ValueError("the requested power cannot be reached")
    return float(optimize.brentq(f, lo, hi, xtol=1e-12, rtol=1e-12))


def _solve_effect(f: Callable[[float], float], upper: float) -> float:
    """Smallest effect in (0, upper] where ``f`` (power minus target) crosses zero."""
    if f(upper) < 0:
        raise ValueError(f"no difference up to {upper:g} reaches the requested power")
    return float(optimize.brentq(f, 1e-12, upper, xtol=1e-12))


def cohens_h(p1: float, p2: float) -> float:
    """Cohen's h effect size ``2 asin(sqrt(p1)) - 2 asin(sqrt(p2))``.

    Examples
    --------
    >>> from evalmix.studies.power import cohens_h
    >>> round(cohens_h(0.75, 0.70), 4)
    0.1121
    """
    _check_p(p1=p1, p2=p2)
    return 2 * math.asin(math.sqrt(p1)) - 2 * math.asin(math.sqrt(p2))


def power_two_proportions(p1: float, p2: float, n: float, *, alpha: float = 0.05,
                          ratio: float = 1.0, alternative: str = "two-sided") -> float:
    """Power of the two-sample test of proportions (independent samples), via Cohen's h.

    Parameters
    ----------
    p1, p2 : float
        Accuracies of the two models.
    n : float
        Items in the first sample; the second has ``ratio * n``.
    alpha : float
        Significance level.
    ratio : float
        ``n2 / n1``.
    alternative : {"two-sided", "larger", "smaller"}
        Direction (``larger``: ``p2 > p1``).

    Examples
    --------
    >>> from evalmix.studies.power import power_two_proportions
    >>> round(power_two_proportions(0.70, 0.75, 1250), 3)
    0.8
    """
    _check_p(p1=p1, p2=p2)  # in the signature's order: cohens_h(p2, p1) would blame p2 for p1
    _check_design(n=n, ratio=ratio)
    h = cohens_h(p2, p1)
    effect = h * math.sqrt(n / (1 + 1 / ratio))
    return _normal_power(effect, _crit(alpha, alternative), alternative)


def sample_size_two_proportions(p1: float, p2: float, alpha: float = 0.05, power: float = 0.8, *,
                                ratio: float = 1.0, alternative: str = "two-sided") -> float:
    """Items needed in the first sample to detect ``p1`` vs ``p2`` with two independent samples.

    Returns the exact (unrounded) solution; round up for a design.  Equal to
    ``NormalIndPower().solve_power(proportion_effectsize(p2, p1), alpha=alpha, power=power,
    ratio=ratio)``; in R ``pwr::pwr.2p.test(ES.h(p2, p1), sig.level = alpha, power = power)``.

    Examples
    --------
    >>> from evalmix import sample_size_two_proportions
    >>> round(sample_size_two_proportions(0.70, 0.75), 1)
    1249.6
    """
    _check_p(p1=p1, p2=p2)
    _check_design(alpha=alpha, power=power, ratio=ratio)
    if p1 == p2:
        raise ValueError("p1 and p2 are equal: no sample size detects a zero difference")
    return _solve(lambda n: power_two_proportions(p1, p2, n, alpha=alpha, ratio=ratio,
                                                  alternative=alternative) - power, 1e-6, 1e3)


def mde_two_proportions(p1: float, n: float, *, alpha: float = 0.05, power: float = 0.8,
                        ratio: float = 1.0) -> float:
    """Minimum detectable (upward) difference ``p2 - p1`` with ``n`` independent items per model.

    Examples
    --------
    >>> from evalmix.studies.power import mde_two_proportions
    >>> round(mde_two_proportions(0.70, 1250), 3)
    0.05
    """
    _check_p(p1=p1)
    _check_design(n=n, alpha=alpha, power=power, ratio=ratio)
    return _solve_effect(lambda d: power_two_proportions(p1, p1 + d, n, alpha=alpha, ratio=ratio)
                         - power, 1 - p1)


def power_paired_proportions(p01: float, p10: float, n: float, *, alpha: float = 0.05,
                             method: str = "normal") -> float:
    """Power of McNemar's test with ``n`` paired items.

    Parameters
    ----------
    p01, p10 : float
        Probabilities that an item is right for ``b`` only and for ``a`` only; the difference in
        accuracy is ``delta = p01 - p10`` and the discordance rate ``pi_D = p01 + p10``.
    n : float
        Number of items.
    alpha : float
        Significance level (two-sided).
    method : {"normal", "connor"}
        ``normal``: ``z = delta sqrt(n / pi_D)`` and ``Phi(z - z_a) + Phi(-z - z_a)`` (the
        approximation of the method document); ``connor``: Connor (1987), which uses the variance
        ``pi_D - delta^2`` under the alternative.

    Examples
    --------
    >>> from evalmix.studies.power import power_paired_proportions
    >>> round(power_paired_proportions(0.076, 0.066, 4000), 3)
    0.389
    """
    _check_p(p01=p01, p10=p10)
    _check_design(n=n, alpha=alpha)
    check_choice(method, "method", ("normal", "connor"))
    pi_d, delta = p01 + p10, abs(p01 - p10)
    if pi_d <= 0:
        return 0.0
    z_a = _crit(alpha, "two-sided")
    if method == "normal":
        return _normal_power(delta * math.sqrt(n / pi_d), z_a, "two-sided")
    if method == "connor":
        sd1 = math.sqrt(pi_d - delta ** 2)
        return float(stats.norm.cdf((delta * math.sqrt(n) - z_a * math.sqrt(pi_d)) / sd1)
                     + stats.norm.cdf((-delta * math.sqrt(n) - z_a * math.sqrt(pi_d)) / sd1))
    raise ValueError(f"method must be 'normal' or 'connor', got {method!r}")


def sample_size_paired_proportions(p01: float, p10: float, *, alpha: float = 0.05,
                                   power: float = 0.8, method: str = "normal") -> float:
    """Paired items needed for McNemar's test to reach ``power`` (see :func:`power_paired_proportions`).

    Examples
    --------
    >>> from evalmix.studies.power import sample_size_paired_proportions
    >>> round(sample_size_paired_proportions(0.076, 0.066, power=0.8))
    11145
    """
    _check_p(p01=p01, p10=p10)
    _check_design(alpha=alpha, power=power)
    check_choice(method, "method", ("normal", "connor"))
    if p01 == p10:
        raise ValueError("p01 == p10: no sample size detects a zero difference")
    return _solve(lambda n: power_paired_proportions(p01, p10, n, alpha=alpha, method=method) - power,
                  1e-6, 1e3)


def mde_paired_proportions(discordance: float, n: float, *, alpha: float = 0.05,
                           power: float = 0.8, method: str = "normal") -> float:
    """Minimum detectable accuracy difference for McNemar's test at a discordance rate ``pi_D``.

    Examples
    --------
    >>> from evalmix.studies.power import mde_paired_proportions
    >>> round(mde_paired_proportions(0.142, 4000), 4)
    0.0167
    """
    _check_p(discordance=discordance)
    _check_design(n=n, alpha=alpha, power=power)
    check_choice(method, "method", ("normal", "connor"))
    return _solve_effect(lambda d: power_paired_proportions((discordance + d) / 2, (discordance - d) / 2,
                                                            n, alpha=alpha, method=method) - power,
                         discordance)


def _clustered_var(omega2: float, sigma2_a: float, sigma2_b: float, k_a: float, k_b: float) -> float:
    for name, v in (("omega2", omega2), ("sigma2_a", sigma2_a), ("sigma2_b", sigma2_b)):
        check_number(v, name, minimum=0)
    for name, k in (("k_a", k_a), ("k_b", k_b)):
        check_number(k, name, minimum=1)
    var = omega2 + sigma2_a / k_a + sigma2_b / k_b
    if var <= _ZERO_VARIANCE:
        raise DataError("omega2, sigma2_a and sigma2_b are all 0: with no variance between or within "
                        "items any number of items gives a standard error of 0, so no design can be "
                        "planned; estimate them from a pilot that has some errors")
    return var


def sample_size_clustered(delta: float, *, omega2: float, sigma2_a: float, sigma2_b: float,
                          k_a: float = 1, k_b: float | None = None, alpha: float = 0.05,
                          power: float = 0.8) -> float:
    """Items needed to detect ``delta`` with ``K`` runs per item (Miller 2024, paired design).

    ``n = (z_{alpha/2} + z_power)^2 (omega^2 + sigma_A^2 / K_A + sigma_B^2 / K_B) / delta^2``.

    Parameters
    ----------
    delta : float
        Difference in accuracy to detect.
    omega2 : float
        Variance over items of the true per-item difference (what pairing cannot remove).
    sigma2_a, sigma2_b : float
        Mean within-item (run-to-run) variance of each model, ``E[p_q (1 - p_q)]`` for 0/1
        outcomes.
    k_a, k_b : float
        Runs per item of each model (``k_b`` defaults to ``k_a``).
    alpha, power : float
        Two-sided level and target power.

    Examples
    --------
    >>> from evalmix.studies.power import sample_size_clustered
    >>> round(sample_size_clustered(0.01, omega2=0.0099, sigma2_a=0.066, sigma2_b=0.066, k_a=8))
    2072
    """
    check_number(delta, "delta")
    if delta == 0:
        raise ValueError("delta is 0: no sample size detects a zero difference")
    _check_design(alpha=alpha, power=power)
    var = _clustered_var(omega2, sigma2_a, sigma2_b, k_a, k_a if k_b is None else k_b)
    z = stats.norm.isf(alpha / 2) + stats.norm.ppf(power)
    return float(z ** 2 * var / delta ** 2)


def power_clustered(delta: float, n: float, *, omega2: float, sigma2_a: float, sigma2_b: float,
                    k_a: float = 1, k_b: float | None = None, alpha: float = 0.05) -> float:
    """Power of the paired test on per-item run means with ``n`` items and ``K`` runs per item.

    Both tails are counted (``Phi(z - z_a) + Phi(-z - z_a)``), so this is a hair above the power
    implied by :func:`sample_size_clustered`, which keeps Miller's one-tail closed form.

    Examples
    --------
    >>> from evalmix.studies.power import power_clustered
    >>> round(power_clustered(0.01, 4000, omega2=0.0099, sigma2_a=0.066, sigma2_b=0.066, k_a=8), 3)
    0.973
    """
    check_number(delta, "delta")
    _check_design(n=n, alpha=alpha)
    var = _clustered_var(omega2, sigma2_a, sigma2_b, k_a, k_a if k_b is None else k_b)
    return _normal_power(abs(delta) / math.sqrt(var / n), _crit(alpha, "two-sided"), "two-sided")


def mde_clustered(n: float, *, omega2: float, sigma2_a: float, sigma2_b: float, k_a: float = 1,
                  k_b: float | None = None, alpha: float = 0.05, power: float = 0.8) -> float:
    """Minimum detectable difference of the clustered design (Miller's closed form).

    Examples
    --------
    >>> from evalmix.studies.power import mde_clustered
    >>> round(mde_clustered(4000, omega2=0.0099, sigma2_a=0.066, sigma2_b=0.066, k_a=8), 4)
    0.0072
    """
    _check_design(n=n, alpha=alpha, power=power)
    var = _clustered_var(omega2, sigma2_a, sigma2_b, k_a, k_a if k_b is None else k_b)
    z = stats.norm.isf(alpha / 2) + stats.norm.ppf(power)
    return float(z * math.sqrt(var / n))


def clustered_variance_components(a: ArrayLike, b: ArrayLike) -> dict[str, float]:
    """Estimate ``omega^2``, ``sigma_A^2`` and ``sigma_B^2`` from pilot runs of two models.

    Parameters
    ----------
    a, b : array_like, shape (n_runs, n_items)
        0/1 (or fractional) scores of each model, at least two runs each (NaN for missing runs).

    Returns
    -------
    dict
        ``sigma2_a``, ``sigma2_b``: mean within-item variance over runs (unbiased, ``ddof=1``);
        ``omega2``: variance of per-item mean differences minus their run-noise share
        ``sigma_A^2 / K_A + sigma_B^2 / K_B`` (floored at 0); ``k_a``, ``k_b``: runs per item.

    Examples
    --------
    >>> from evalmix.studies.power import clustered_variance_components
    >>> from evalmix.simulate.mixture import mixture_arrays
    >>> import numpy as np
    >>> s, _ = mixture_arrays(4000, 8, rng=np.random.default_rng(0))
    >>> vc = clustered_variance_components(s["base"], s["finetune"])
    >>> round(vc["sigma2_a"], 3)  # true E[p(1 - p)] = 0.3 * 0.22 = 0.066
    0.065
    """
    xa, xb = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if xa.ndim != 2 or xb.ndim != 2 or xa.shape[0] < 2 or xb.shape[0] < 2:
        raise DataError("variance components need (runs, items) arrays with at least 2 runs each")
    for name, x in (("a", xa), ("b", xb)):
        bad = np.argwhere((x < 0) | (x > 1))
        if bad.size:
            r, i = bad[0]
            raise DataError(f"`{name}` holds scores outside [0, 1] (run {r}, item {i}: {float(x[r, i])!r}); "
                            "give 0/1 outcomes or fractional scores")
    ma, mb = item_means(xa, xb)
    s2a = float(np.nanmean(np.nanvar(xa, axis=0, ddof=1)))
    s2b = float(np.nanmean(np.nanvar(xb, axis=0, ddof=1)))
    k_a = float(np.mean(np.sum(~np.isnan(xa), axis=0)))
    k_b = float(np.mean(np.sum(~np.isnan(xb), axis=0)))
    omega2 = max(float(np.var(mb - ma, ddof=1)) - s2a / k_a - s2b / k_b, 0.0)
    return {"omega2": omega2, "sigma2_a": s2a, "sigma2_b": s2b, "k_a": k_a, "k_b": k_b}


@accepts_seed
def simulated_power(method: str, *, scenario: str = "mixture", n_sims: int = 200,
                    rng: int | np.random.Generator | None = None, n_jobs: int | None = None,
                    progress: bool = False, **design: Any) -> float:
    """Power of any calibration-harness method, by simulation (share of rejections under the uplift).

    Parameters
    ----------
    method : str
        A method name registered in :mod:`evalmix.studies.calibration` (e.g. ``"paired_t_runs"``).
    scenario : str
        Simulation scenario (``"mixture"`` or ``"glmm"``).
    n_sims : int
        Simulated benchmarks.
    rng, n_jobs, progress
        As in :func:`evalmix.calibrate`.
    **design
        Scenario arguments (``n_questions``, ``n_runs``, ``uplift``...).

    Examples
    --------
    >>> from evalmix.studies.power import simulated_power
    >>> p = simulated_power("paired_t_runs", n_sims=20, rng=1, n_questions=2000, n_runs=4,
    ...                     uplift=0.03)
    >>> p > 0.8
    True
    """
    from .calibration import calibrate  # which checks n_sims, rng and n_jobs
    res = calibrate(scenario, methods=[method], n_sims=n_sims, rng=rng, n_jobs=n_jobs,
                    progress=progress, **design)
    return float(res.table.loc[res.table["method"] == method, "power"].iloc[0])
