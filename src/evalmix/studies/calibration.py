"""Calibration harness: measure how honest a comparison method is on simulated benchmarks.

:func:`calibrate` simulates many benchmarks twice, once under the null (two identical models) and
once under an alternative (a true uplift), applies every method to both, and reports per method:

- ``false_positive_rate``: share of null benchmarks where the method declares a difference;
- ``power``: share of uplift benchmarks where it does;
- ``median_ci_halfwidth``: median half-width of its interval for the difference (uplift runs);
- ``coverage_null`` / ``coverage_alt``: share of intervals that contain the true difference.

Methods and scenarios are registries (:func:`register_method`, :func:`register_scenario`), so
any procedure can be put on trial.  Built-in methods are the honest ones (single-run McNemar,
paired t on run means, paired item bootstrap, more independent runs) and three bootstrap
recipes kept *as teaching anti-patterns*: the unpaired question bootstrap, the run bootstrap and
the run bootstrap whose SE is divided by ``sqrt(B)``.

:func:`coverage_study` is the companion for single-model intervals: how often do run-level and
instance-level intervals contain the score of a plausible new run?
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any, NamedTuple, overload

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike
from scipy import stats

from ..core.seeds import accepts_seed, as_generator
from ..core.arguments import check_choice, check_count, check_counts, check_level, check_n_jobs, check_seed
from ..core.result import Result
from ..core.parallel import parallel_map
from ..stats.resampling import (encode_labels, instance_bootstrap, metric_from_cells, preds_gold,
                         paired_bootstrap, plausible_run_scores, run_level_ci)
from ..simulate.mixture import mixture_arrays
from ..stats.comparisons import mcnemar, paired_t_runs

__all__ = ["CalibrationResult", "CoverageResult", "METHODS", "MethodOutput", "MethodSpec",
           "SCENARIOS", "SimPair", "calibrate", "coverage_study", "register_method",
           "register_scenario"]


# ----------------------------------------------------------------------------- data structures

class MethodOutput(NamedTuple):
    """What a method returns for one simulated comparison (difference ``b - a``)."""

    estimate: float
    se: float
    p_value: float
    conf_low: float
    conf_high: float


@dataclass
class SimPair:
    """One simulated comparison: scores of models ``a`` and ``b`` on the same items.

    Attributes
    ----------
    a, b : ndarray, shape (n_runs, n_items)
        0/1 scores.
    true_diff : float
        True accuracy difference ``b - a`` (0 under the null).
    p_a, p_b : ndarray, optional
        True per-item success probabilities, when the scenario knows them (oracle methods).
    true_log_odds : float
        True model effect on the logit scale, when the scenario defines one (else NaN).
    frame : DataFrame, optional
        The long table (``model``, ``item``, ``run``, ``correct``), for model-based methods; built
        from ``a`` and ``b`` on demand by :meth:`long_table`.
    """

    a: np.ndarray
    b: np.ndarray
    true_diff: float
    p_a: np.ndarray | None = None
    p_b: np.ndarray | None = None
    true_log_odds: float = math.nan
    frame: pd.DataFrame | None = None

    def long_table(self) -> pd.DataFrame:
        """Long runs table of the pair (models ``a`` and ``b``)."""
        if self.frame is None:
            parts = []
            for name, s in (("a", self.a), ("b", self.b)):
                r, n = s.shape
                parts.append(pd.DataFrame({"model": name, "item": np.tile(np.arange(n), r),
                                           "run": np.repeat(np.arange(r), n),
                                           "correct": s.ravel().astype(np.int64)}))
            self.frame = pd.concat(parts, ignore_index=True)
        return self.frame


@dataclass(frozen=True)
class MethodSpec:
    """A registered comparison method.

    Attributes
    ----------
    name : str
        Registry key.
    fn : callable
        ``fn(pair: SimPair, rng: Generator, conf_level: float, **options) -> MethodOutput``.
    honest : bool
        ``False`` for the anti-patterns kept for teaching.
    description : str
        One line for tables and docs.
    scale : {"accuracy", "logit"}
        Scale of the estimate; coverage is judged against the truth on that scale.
    """

    name: str
    fn: Callable[..., MethodOutput]
    honest: bool = True
    description: str = ""
    scale: str = "accuracy"


METHODS: dict[str, MethodSpec] = {}
SCENARIOS: dict[str, Callable[..., tuple[SimPair, SimPair]]] = {}


MethodFn = Callable[..., MethodOutput]
ScenarioFn = Callable[..., tuple[SimPair, SimPair]]


@overload
def register_method(name: str, fn: None = None, *, honest: bool = True, description: str = "",
                    scale: str = "accuracy") -> Callable[[MethodFn], MethodFn]: ...
@overload
def register_method(name: str, fn: MethodFn, *, honest: bool = True, description: str = "",
                    scale: str = "accuracy") -> MethodFn: ...
def register_method(name: str, fn: MethodFn | None = None, *, honest: bool = True,
                    description: str = "", scale: str = "accuracy") -> MethodFn | Callable[[MethodFn], MethodFn]:
    """Register a comparison method for :func:`calibrate` (usable as a decorator).

    Parameters
    ----------
    name : str
        Registry key.
    fn : callable
        ``fn(pair, rng, conf_level, **options) -> MethodOutput`` where ``pair`` is a
        :class:`SimPair` and the output describes the difference ``b - a``.
    honest : bool
        Whether the method is a legitimate analysis (``False`` marks a teaching anti-pattern).
    description : str
        One-line description.
    scale : {"accuracy", "logit"}
        Scale of the estimate and interval.

    Examples
    --------
    >>> from evalmix.studies.calibration import register_method, MethodOutput
    >>> @register_method("diff_of_run0", honest=False, description="difference of run 0, no SE")
    ... def _run0(pair, rng, conf_level):
    ...     d = pair.b[0].mean() - pair.a[0].mean()
    ...     return MethodOutput(d, float("nan"), 1.0, float("nan"), float("nan"))
    >>> from evalmix.studies.calibration import METHODS
    >>> _ = METHODS.pop("diff_of_run0")  # tidy up the example
    """
    if scale not in ("accuracy", "logit"):
        raise ValueError(f"scale must be 'accuracy' or 'logit', got {scale!r}")

    def deco(f: MethodFn) -> MethodFn:
        METHODS[name] = MethodSpec(name=name, fn=f, honest=honest, description=description, scale=scale)
        return f

    return deco(fn) if fn is not None else deco


@overload
def register_scenario(name: str, fn: None = None) -> Callable[[ScenarioFn], ScenarioFn]: ...
@overload
def register_scenario(name: str, fn: ScenarioFn) -> ScenarioFn: ...
def register_scenario(name: str, fn: ScenarioFn | None = None) -> ScenarioFn | Callable[[ScenarioFn], ScenarioFn]:
    """Register a simulation scenario: ``fn(rng, **design) -> (null_pair, alt_pair)``.

    Examples
    --------
    >>> import numpy as np
    >>> from evalmix.studies.calibration import register_scenario, SimPair
    >>> @register_scenario("coin")
    ... def _coin(rng, n_items=100, n_runs=2, uplift=0.1):
    ...     a = (rng.random((n_runs, n_items)) < 0.5).astype(np.int8)
    ...     b0 = (rng.random((n_runs, n_items)) < 0.5).astype(np.int8)
    ...     b1 = (rng.random((n_runs, n_items)) < 0.5 + uplift).astype(np.int8)
    ...     return SimPair(a, b0, 0.0), SimPair(a, b1, uplift)
    >>> from evalmix.studies.calibration import SCENARIOS
    >>> _ = SCENARIOS.pop("coin")  # tidy up the example
    """
    def deco(f: ScenarioFn) -> ScenarioFn:
        SCENARIOS[name] = f
        return f

    return deco(fn) if fn is not None else deco


def _z_output(estimate: float, se: float, conf_level: float) -> MethodOutput:
    """Wald z test and interval from an estimate and a standard error."""
    z = stats.norm.ppf(0.5 + conf_level / 2)
    if se > 0:
        p = float(2 * stats.norm.sf(abs(estimate) / se))
    else:
        p = 1.0 if estimate == 0 else 0.0
    return MethodOutput(float(estimate), float(se), p, float(estimate - z * se), float(estimate + z * se))


# ----------------------------------------------------------------------------- built-in methods

@register_method("mcnemar_single_run", description="McNemar's test on one run per model (z form)")
def _mcnemar_single_run(pair: SimPair, rng: np.random.Generator, conf_level: float,
                        run: int = 0) -> MethodOutput:
    r = mcnemar(pair.a[run], pair.b[run], conf_level=conf_level)
    return MethodOutput(r.estimate, r.se, r.p_value, r.conf_low, r.conf_high)


@register_method("paired_t_runs", description="paired t-test on per-item means over runs")
def _paired_t(pair: SimPair, rng: np.random.Generator, conf_level: float) -> MethodOutput:
    r = paired_t_runs(pair.a, pair.b, conf_level=conf_level)
    return MethodOutput(r.estimate, r.se, r.p_value, r.conf_low, r.conf_high)


@register_method("paired_bootstrap", description="paired item bootstrap of per-item mean differences")
def _paired_bootstrap(pair: SimPair, rng: np.random.Generator, conf_level: float,
                      n_boot: int = 2000, method: str = "percentile") -> MethodOutput:
    r = paired_bootstrap(pair.a, pair.b, method=method, n_boot=n_boot, conf_level=conf_level, rng=rng)
    return MethodOutput(r.estimate, r.se, r.p_value, r.conf_low, r.conf_high)


@register_method("independent_runs",
                 description="oracle: n fresh independent runs per model, SE of the mean run difference")
def _independent_runs(pair: SimPair, rng: np.random.Generator, conf_level: float,
                      n_runs: int = 30) -> MethodOutput:
    if pair.p_a is None or pair.p_b is None:
        raise ValueError("independent_runs needs the true per-item probabilities (mixture scenario)")
    ex = (rng.random((n_runs, pair.p_a.size)) < pair.p_a).mean(axis=1)
    ey = (rng.random((n_runs, pair.p_b.size)) < pair.p_b).mean(axis=1)
    d = ey - ex
    return _z_output(d.mean(), d.std(ddof=1) / math.sqrt(n_runs), conf_level)


@register_method("question_bootstrap", honest=False,
                 description="ANTI-PATTERN: unpaired question bootstrap (independent item draws per model)")
def _question_bootstrap(pair: SimPair, rng: np.random.Generator, conf_level: float,
                        n_boot: int = 30) -> MethodOutput:
    qa, qb = pair.a.mean(axis=0), pair.b.mean(axis=0)
    n = qa.size
    ia = rng.integers(0, n, size=(n_boot, n))
    ib = rng.integers(0, n, size=(n_boot, n))
    d_b = qb[ib].mean(axis=1) - qa[ia].mean(axis=1)
    return _z_output(qb.mean() - qa.mean(), d_b.std(ddof=1), conf_level)


def _run_resample_diffs(pair: SimPair, rng: np.random.Generator, n_boot: int) -> np.ndarray:
    """'Frankenstein runs': every item picks one of its observed runs at random, per model."""
    n_runs, n = pair.a.shape
    cols = np.arange(n)
    ia = rng.integers(0, n_runs, size=(n_boot, n))
    ib = rng.integers(0, pair.b.shape[0], size=(n_boot, n))
    return pair.b[ib, cols].mean(axis=1) - pair.a[ia, cols].mean(axis=1)


@register_method("run_bootstrap", honest=False,
                 description="ANTI-PATTERN: run bootstrap (decoding noise only, items held fixed)")
def _run_bootstrap(pair: SimPair, rng: np.random.Generator, conf_level: float,
                   n_boot: int = 30) -> MethodOutput:
    d_b = _run_resample_diffs(pair, rng, n_boot)
    return _z_output(d_b.mean(), d_b.std(ddof=1), conf_level)


@register_method("run_bootstrap_sqrt_b", honest=False,
                 description="ANTI-PATTERN: run bootstrap with SE divided by sqrt(B)")
def _run_bootstrap_sqrt_b(pair: SimPair, rng: np.random.Generator, conf_level: float,
                          n_boot: int = 30) -> MethodOutput:
    d_b = _run_resample_diffs(pair, rng, n_boot)
    return _z_output(d_b.mean(), d_b.std(ddof=1) / math.sqrt(n_boot), conf_level)


def _glmer_function() -> Callable[..., Any]:
    """The GLMM engine's ``glmer`` (imported on first use: the engine is heavy)."""
    from ..glmm import glmer

    return glmer


def _glmm_contrast(pair: SimPair, rng: np.random.Generator, conf_level: float,
                   formula: str = "correct ~ model + (1|item) + (1|item:run)") -> MethodOutput:
    """Model contrast (b vs a, log-odds) of a binomial GLMM with item and item:run intercepts."""
    import warnings

    from ..core.errors import FitWarning
    with warnings.catch_warnings():
        # hundreds of fits: boundary fits are expected (e.g. no item:run variance in the mixture)
        # and the calibration table itself is the judge of the contrast's behaviour
        warnings.simplefilter("ignore", FitWarning)
        fit = _glmer_function()(formula, pair.long_table())
    names = [n for n in fit.fixef.index if str(n).startswith("model")]
    if len(names) != 1:
        raise ValueError(f"expected one model coefficient, got {names}")
    est = float(fit.fixef[names[0]])
    se = float(math.sqrt(fit.vcov.loc[names[0], names[0]]))
    return _z_output(est, se, conf_level)


def _register_glmm_contrast() -> None:
    """Register ``glmm_contrast`` once the mixed-model engine (``evalmix.glmer``) is importable."""
    if "glmm_contrast" not in METHODS and _glmer_function() is not None:
        register_method("glmm_contrast", _glmm_contrast, scale="logit",
                        description="model contrast of a binomial GLMM with item and item:run intercepts")

DEFAULT_METHODS = ("mcnemar_single_run", "paired_t_runs", "paired_bootstrap", "independent_runs",
                   "question_bootstrap", "run_bootstrap", "run_bootstrap_sqrt_b")


# ----------------------------------------------------------------------------- scenarios

@register_scenario("mixture")
def _mixture_scenario(rng: np.random.Generator, n_questions: int = 4000, n_runs: int = 8,
                      easy: float = 0.42, hard: float = 0.28,
                      uplift: float = 0.01) -> tuple[SimPair, SimPair]:
    scores, p = mixture_arrays(n_questions, n_runs, easy=easy, hard=hard, uplift=uplift, rng=rng)
    base = scores["base"]
    null = SimPair(base, scores["clone"], 0.0, p["base"], p["clone"])
    alt = SimPair(base, scores["finetune"], float(p["finetune"].mean() - p["base"].mean()),
                  p["base"], p["finetune"])
    return null, alt


def _glmm_pair(df: pd.DataFrame, true_diff: float, log_odds: float) -> SimPair:
    models = list(pd.unique(df["model"]))
    if len(models) != 2:
        raise ValueError(f"the glmm scenario needs 2 models, got {models}")
    item_codes, items = pd.factorize(df["item"])
    run_codes, runs = pd.factorize(df["run"])
    is_b = (df["model"] == models[1]).to_numpy()
    y = df["correct"].to_numpy(dtype=float)
    mats = []
    for sel in (~is_b, is_b):
        m = np.full((len(runs), len(items)), np.nan)
        m[run_codes[sel], item_codes[sel]] = y[sel]
        mats.append(m)
    frame = pd.DataFrame({"model": np.where(is_b, "b", "a"), "item": df["item"].to_numpy(),
                          "run": df["run"].to_numpy(), "correct": y.astype(np.int64)})
    return SimPair(mats[0], mats[1], true_diff, true_log_odds=log_odds, frame=frame)


def _plain(df: pd.DataFrame) -> pd.DataFrame:
    """Drop ``attrs`` (the simulator's truth): pandas deep-copies them on every operation."""
    df.attrs = {}
    return df


@register_scenario("glmm")
def _glmm_scenario(rng: np.random.Generator, n_items: int = 200, n_runs: int = 3,
                   effect: float = 0.3, sd_item: float = 1.5, sd_item_run: float = 0.5,
                   true_diff: float | None = None, **options: Any) -> tuple[SimPair, SimPair]:
    from ..simulate import glmm_runs  # provided by the simulation module

    def draw(effects: list[float]) -> pd.DataFrame:
        return _plain(glmm_runs(2, n_items, n_runs, model_effects=effects, sd_item=sd_item,
                                sd_item_run=sd_item_run, rng=int(rng.integers(2**31 - 1)), **options))

    if true_diff is None:
        raise ValueError("internal: calibrate computes the glmm scenario's true difference first")
    null = _glmm_pair(draw([0.0, 0.0]), 0.0, 0.0)
    alt = _glmm_pair(draw([0.0, effect]), true_diff, effect)
    return null, alt


def _glmm_true_diff(design: dict, seed: int) -> float:
    """True marginal accuracy difference of the glmm scenario, from one very large benchmark."""
    from ..simulate import glmm_runs
    opts = {k: v for k, v in design.items() if k not in ("n_items", "n_runs", "effect", "true_diff")}
    df = _plain(glmm_runs(2, 200_000, 1, model_effects=[0.0, design.get("effect", 0.3)], rng=seed,
                          **opts))
    models = list(pd.unique(df["model"]))
    y = df["correct"].to_numpy(dtype=float)
    is_b = (df["model"] == models[1]).to_numpy()
    return float(y[is_b].mean() - y[~is_b].mean())


# ----------------------------------------------------------------------------- harness

@dataclass(frozen=True, eq=False, repr=False)
class CalibrationResult(Result):
    """Calibration table of several methods on one scenario.

    Attributes
    ----------
    table : DataFrame
        One row per method: ``method``, ``honest``, ``false_positive_rate``, ``power``,
        ``median_ci_halfwidth`` (under the uplift), ``coverage_null``, ``coverage_alt``, the
        Monte-Carlo standard errors ``fpr_mc_se`` and ``power_mc_se``, ``n_sims``, ``n_failed``
        (method calls that raised, with ``on_error="record"``) and ``scale``.
    sims : DataFrame
        One row per simulation x method x hypothesis (``null``/``alt``): estimate, se, p-value,
        interval, truth, rejection.
    scenario : str
    design : dict
        Scenario arguments used.
    alpha : float
        Rejection level (``1 - conf_level``).
    """

    table: pd.DataFrame
    sims: pd.DataFrame = field(repr=False)
    scenario: str = "mixture"
    design: dict[str, Any] = field(default_factory=dict)
    alpha: float = 0.05

    def _title(self) -> str:
        return f"Calibration of comparison methods ({self.scenario} scenario)"

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()


def _one_simulation(i: int, seed_seq: np.random.SeedSequence, scenario_fn: Callable,
                    specs: list[MethodSpec], design: dict, conf_level: float,
                    method_options: dict[str, dict[str, Any]], on_error: str = "raise") -> list[dict[str, Any]]:
    data_seq, method_seq = seed_seq.spawn(2)
    null, alt = scenario_fn(np.random.default_rng(data_seq), **design)
    rng = np.random.default_rng(method_seq)
    alpha = 1 - conf_level
    rows = []
    for spec in specs:
        for hyp, pair in (("alt", alt), ("null", null)):
            error = ""
            try:
                out = spec.fn(pair, rng, conf_level, **method_options.get(spec.name, {}))
            except Exception as exc:  # noqa: BLE001 - recorded per simulation on request
                if on_error == "raise":
                    raise
                out, error = MethodOutput(*([math.nan] * 5)), f"{type(exc).__name__}: {exc}"
            truth = pair.true_diff if spec.scale == "accuracy" else pair.true_log_odds
            ok = not error
            rows.append({"sim": i, "method": spec.name, "hypothesis": hyp,
                         "estimate": out.estimate, "se": out.se, "p_value": out.p_value,
                         "conf_low": out.conf_low, "conf_high": out.conf_high, "truth": truth,
                         "reject": bool(out.p_value < alpha) if ok else np.nan,
                         "covers": bool(out.conf_low <= truth <= out.conf_high)
                         if ok and np.isfinite(truth) and np.isfinite(out.conf_low) else np.nan,
                         "error": error})
    return rows


def _one_simulation_task(i: int, seq: np.random.SeedSequence, args: tuple) -> list[dict]:
    return _one_simulation(i, seq, *args)


@accepts_seed
def calibrate(scenario: str = "mixture", methods: list[str] | None = None, n_sims: int = 500,
              rng: int | np.random.Generator | np.random.SeedSequence | None = None, *, conf_level: float = 0.95,
              n_jobs: int | None = None, progress: bool = False,
              method_options: dict[str, dict[str, Any]] | None = None,
              on_error: str = "raise", **design: Any) -> CalibrationResult:
    """False-positive rate, power, interval width and coverage of comparison methods, by simulation.

    Parameters
    ----------
    scenario : {"mixture", "glmm"} or a registered name
        ``"mixture"``: the three-component generator (:func:`evalmix.simulate.mixture_benchmark`;
        design ``n_questions``, ``n_runs``, ``easy``, ``hard``, ``uplift``); the null compares the
        base model with its clone, the alternative with the finetune.  ``"glmm"``: two models from
        :func:`evalmix.simulate.glmm_runs` (design ``n_items``, ``n_runs``, ``effect`` on the logit
        scale, ``sd_item``, ``sd_item_run``); its true accuracy difference is measured once on a
        200,000-item benchmark unless ``true_diff`` is given.
    methods : list of str, optional
        Registered method names (default: the built-in methods except ``glmm_contrast``, and
        without the ``independent_runs`` oracle outside the mixture scenario; see :data:`METHODS`).
    n_sims : int
        Simulated benchmarks per hypothesis.
    rng : int, Generator or SeedSequence, optional
        Master seed; each simulation gets its own independent stream, so results do not depend
        on ``n_jobs``.
    conf_level : float
        Interval level; a method "rejects" when its p-value is below ``1 - conf_level``.
    n_jobs : int, optional
        Parallel workers (joblib; ``-1`` for all cores; default: an enclosing
        ``joblib.parallel_config``, else 1).  Inside ``joblib.parallel_config(backend="dask")``
        the simulations run on the Dask cluster (see :func:`evalmix.core.parallel.parallel_map`).
    progress : bool
        Show a progress bar.
    method_options : dict, optional
        Per-method keyword arguments, e.g. ``{"paired_bootstrap": {"n_boot": 1000}}``.
    on_error : {"raise", "record"}
        What to do when a method fails on a simulated benchmark (e.g. a model fit that does not
        converge): stop, or record the message in ``sims["error"]``, leave that simulation out of
        the method's rates and count it in ``n_failed``.
    **design
        Scenario arguments.

    Returns
    -------
    CalibrationResult

    Examples
    --------
    >>> from evalmix import calibrate
    >>> res = calibrate("mixture", ["paired_t_runs", "run_bootstrap_sqrt_b"], n_sims=20, rng=1,
    ...                 n_questions=1000, n_runs=4, uplift=0.02)
    >>> list(res.table["method"])
    ['paired_t_runs', 'run_bootstrap_sqrt_b']
    """
    _register_glmm_contrast()
    check_choice(scenario, "scenario", sorted(SCENARIOS))
    n_sims, conf_level = check_count(n_sims, "n_sims"), check_level(conf_level)
    rng, n_jobs = check_seed(rng, "rng"), check_n_jobs(n_jobs)
    check_choice(on_error, "on_error", ("raise", "record"))
    if methods is None:
        # the oracle needs the true per-item probabilities, which only the mixture scenario keeps
        names = [m for m in DEFAULT_METHODS if scenario == "mixture" or m != "independent_runs"]
    else:
        names = [methods] if isinstance(methods, str) else list(methods)  # not its letters
    unknown = [m for m in names if m not in METHODS]
    if unknown:
        raise ValueError(f"unknown method(s) {unknown}; registered: {sorted(METHODS)}")
    specs = [METHODS[m] for m in names]
    method_options = dict(method_options or {})
    if isinstance(rng, np.random.Generator):
        rng = np.random.SeedSequence(rng.integers(2**63, size=4).tolist())
    root = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(rng)
    truth_seq, sims_seq = root.spawn(2)
    design = dict(design)
    if scenario == "glmm" and design.get("true_diff") is None:
        design["true_diff"] = _glmm_true_diff(design, int(truth_seq.generate_state(1)[0]))
    args = (SCENARIOS[scenario], specs, design, conf_level, method_options, on_error)
    parts = parallel_map(partial(_one_simulation_task, args=args), range(n_sims), n_jobs=n_jobs,
                         seed=sims_seq, progress=progress, desc=f"calibrate[{scenario}]")
    rows = [row for part in parts for row in part]
    sims = pd.DataFrame(rows)
    return CalibrationResult(table=_summarise(sims, specs, n_sims), sims=sims, scenario=scenario,
                             design=design, alpha=1 - conf_level)


def _summarise(sims: pd.DataFrame, specs: list[MethodSpec], n_sims: int) -> pd.DataFrame:
    out = []
    for spec in specs:
        s = sims[sims["method"] == spec.name]
        failed = s["error"] != ""
        s = s[~failed]
        null, alt = s[s["hypothesis"] == "null"], s[s["hypothesis"] == "alt"]
        fpr = float(pd.to_numeric(null["reject"]).mean()) if len(null) else math.nan
        pw = float(pd.to_numeric(alt["reject"]).mean()) if len(alt) else math.nan
        half = (alt["conf_high"] - alt["conf_low"]) / 2
        out.append({"method": spec.name, "honest": spec.honest, "false_positive_rate": fpr,
                    "power": pw,
                    "median_ci_halfwidth": float(np.nanmedian(half)) if half.notna().any() else math.nan,
                    "coverage_null": float(pd.to_numeric(null["covers"]).mean()),
                    "coverage_alt": float(pd.to_numeric(alt["covers"]).mean()),
                    "fpr_mc_se": math.sqrt(fpr * (1 - fpr) / max(len(null), 1)),
                    "power_mc_se": math.sqrt(pw * (1 - pw) / max(len(alt), 1)), "n_sims": n_sims,
                    "n_failed": int(failed.sum()), "scale": spec.scale})
    return pd.DataFrame(out)


# ----------------------------------------------------------------------------- coverage study

@dataclass(frozen=True, eq=False, repr=False)
class CoverageResult(Result):
    """Coverage of single-model intervals against the scores of plausible new runs.

    Attributes
    ----------
    table : DataFrame
        One row per number of runs x method: ``n_runs``, ``method``, ``conf_low``, ``conf_high``,
        ``width`` and ``coverage`` (share of plausible run scores inside the interval).
    plausible : ndarray
        The plausible single-run scores used as reference.
    """

    table: pd.DataFrame
    plausible: np.ndarray = field(repr=False)

    def _title(self) -> str:
        return "Coverage of interval methods"

    def to_frame(self) -> pd.DataFrame:
        return self.table.copy()

    def wide(self, value: str = "coverage") -> pd.DataFrame:
        """``n_runs`` x ``method`` table of one column (``coverage`` by default)."""
        return self.table.pivot(index="n_runs", columns="method", values=value)


_COVERAGE_METHODS = ("instance", "t", "percentile", "bca", "t_boot")


@accepts_seed
def coverage_study(preds: ArrayLike, gold: ArrayLike, *, metric: str = "f1", runs: Iterable[int] | None = None,
                   methods: tuple[str, ...] = _COVERAGE_METHODS, n_plausible: int = 25_000,
                   n_boot: int = 5000, conf_level: float = 0.95, pos_label: str | int | float = 1,
                   rng: int | np.random.Generator | None = None,
                   progress: bool = False) -> CoverageResult:
    """Coverage of run-level and instance-level intervals for a single model's score.

    The reference is the distribution of plausible single-run scores on this test set
    (:func:`evalmix.stats.resampling.plausible_run_scores`: every instance takes the answer of a
    randomly chosen observed run).  For ``m`` = each value of ``runs``, the first ``m`` runs give
    an interval per method, and its coverage is the share of plausible scores inside it.

    Parameters
    ----------
    preds : array_like, shape (n_runs, n_instances)
        Predictions of every available run.
    gold : array_like, shape (n_instances,)
        Gold labels.
    metric : {"f1", "accuracy", "precision", "recall", "macro_f1"}
        Score of a run.
    runs : iterable of int, optional
        Numbers of runs to use (default ``1..n_runs``).  Run-level methods need ``m >= 2``.
    methods : tuple of str
        ``"instance"`` (:func:`evalmix.instance_bootstrap`) and the run-level methods of
        :func:`evalmix.run_level_ci` (``"t"``, ``"percentile"``, ``"bca"``, ``"t_boot"``).
    n_plausible : int
        Plausible runs drawn for the reference distribution.
    n_boot, conf_level, pos_label
        Passed to the interval methods.
    rng : int or Generator, optional
        Random numbers: a seed or a numpy Generator.
    progress : bool
        Show a progress bar over ``runs``.

    Returns
    -------
    CoverageResult

    Examples
    --------
    >>> from evalmix.studies.calibration import coverage_study
    >>> from evalmix.simulate.mixture import mixture_predictions
    >>> preds, gold = mixture_predictions(300, 6, rng=0)
    >>> res = coverage_study(preds, gold, runs=[3, 6], n_plausible=2000, n_boot=500, rng=1)
    >>> bool(res.wide().loc[6, "instance"] > res.wide().loc[6, "t"])
    True
    """
    n_plausible, n_boot = check_count(n_plausible, "n_plausible"), check_count(n_boot, "n_boot")
    conf_level, rng = check_level(conf_level), check_seed(rng, "rng")
    p, g = preds_gold(preds, gold)
    n_runs = p.shape[0]
    runs = list(range(1, n_runs + 1)) if runs is None else check_counts(runs, "runs")
    if any(m < 1 or m > n_runs for m in runs):
        raise ValueError(f"runs must lie in 1..{n_runs}")
    rng = as_generator(rng)
    plausible = plausible_run_scores(p, g, metric=metric, n_sims=n_plausible, pos_label=pos_label,
                                     rng=rng)
    codes, k, pos = encode_labels(p, np.broadcast_to(g, p.shape), pos_label)
    cells = np.stack([np.bincount(row, minlength=k * k) for row in codes])
    run_scores = metric_from_cells(cells, k, metric, pos)
    it = runs
    if progress:
        import sys

        from tqdm import tqdm
        it = tqdm(runs, desc="coverage", file=sys.stderr)  # stdout keeps the results
    rows = []
    for m in it:
        for meth in methods:
            if meth == "instance":
                r = instance_bootstrap(p[:m], g, metric=metric, n_boot=n_boot, conf_level=conf_level,
                                       pos_label=pos_label, rng=rng)
            elif m < 2:
                continue
            else:
                r = run_level_ci(run_scores[:m], method=meth, conf_level=conf_level, n_boot=n_boot,
                                 rng=rng)
            lo, hi = r.conf_low, r.conf_high
            cov = float(np.mean((plausible >= lo) & (plausible <= hi))) if np.isfinite(lo) else math.nan
            rows.append({"n_runs": m, "method": meth, "estimate": r.estimate, "conf_low": lo,
                         "conf_high": hi, "width": hi - lo, "coverage": cov})
    return CoverageResult(table=pd.DataFrame(rows), plausible=plausible)
