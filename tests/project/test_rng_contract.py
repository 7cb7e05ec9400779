"""One spelling for randomness (SPEC 7): every public function that draws random numbers takes ``rng=``.

The public API is walked (``evalmix.__all__``, the subpackages it exports and the public methods of the
classes they export): no signature may have ``seed`` without ``rng``. The deprecated ``seed=`` alias
gives the same numbers as ``rng=`` with the same integer, warns naming ``rng=``, and refuses both.
"""

from __future__ import annotations

import inspect
import types
import warnings

import numpy as np
import pytest

import evalmix
from evalmix.core.seeds import accepts_seed
from evalmix.core.errors import ArgumentError


def _public_callables() -> dict[str, object]:
    modules = [evalmix]
    modules += [getattr(evalmix, n) for n in evalmix.__all__ if isinstance(getattr(evalmix, n), types.ModuleType)]
    found: dict[str, object] = {}
    for mod in modules:
        for name in getattr(mod, "__all__", []):
            obj = getattr(mod, name)
            if inspect.isclass(obj):
                for attr, member in vars(obj).items():
                    if not attr.startswith("_") and callable(member):
                        found[f"{mod.__name__}.{name}.{attr}"] = member
            elif callable(obj) and not isinstance(obj, types.ModuleType):
                found[f"{mod.__name__}.{name}"] = obj
    return found


def _parameters(obj: object) -> list[str]:
    try:
        return list(inspect.signature(obj).parameters)  # type: ignore[arg-type]
    except (TypeError, ValueError):  # builtins without a signature
        return []


PUBLIC = _public_callables()
RANDOM = {name: obj for name, obj in PUBLIC.items() if "rng" in _parameters(obj)}


def test_the_walk_sees_the_whole_public_api() -> None:
    assert len(PUBLIC) > 300
    # the random procedures of every layer: bootstraps, simulators, studies, Bayesian fits, methods
    for name in ("evalmix.bootstrap_ci", "evalmix.rank_sets", "evalmix.calibrate", "evalmix.report",
                 "evalmix.simulate.glmm_runs", "evalmix.bayes.glmer", "evalmix.GlmerResult.confint",
                 "evalmix.bayes.BayesGlmerResult.posterior_predictive", "evalmix.studies.power.simulated_power"):
        assert name in RANDOM, name
    assert len(RANDOM) >= 32


def test_no_public_signature_has_seed_without_rng() -> None:
    offenders = sorted(name for name, obj in PUBLIC.items()
                       if "seed" in _parameters(obj) and "rng" not in _parameters(obj))
    assert offenders == []


#: Functions new in this release: they never took ``seed=``, so they have no alias to keep.
BORN_WITH_RNG = {"evalmix.gate", "evalmix.simulate.canary_waves", "evalmix.simulate.contaminated_runs",
                 "evalmix.simulate.simulate_dead_items", "evalmix.simulate.simulate_versions"}


def test_every_rng_function_keeps_the_deprecated_seed_alias() -> None:
    """Each takes ``seed=`` for one release: it is wrapped by ``accepts_seed`` (``inspect`` shows rng only)."""
    missing = sorted(name for name, obj in RANDOM.items() if name not in BORN_WITH_RNG
                     and (getattr(obj, "__wrapped__", None) is None or "seed" in _parameters(obj)))
    assert missing == []


def test_seed_alias_gives_the_same_numbers_warns_and_refuses_both() -> None:
    x = np.r_[np.ones(30), np.zeros(20)]
    new = evalmix.bootstrap_ci(x, n_boot=200, rng=7)
    with pytest.warns(DeprecationWarning, match=r"seed= is deprecated in bootstrap_ci .* use rng="):
        old = evalmix.bootstrap_ci(x, n_boot=200, seed=7)
    assert (old.conf_low, old.conf_high) == (new.conf_low, new.conf_high)
    with pytest.raises(ArgumentError, match=r"bootstrap_ci: pass rng= only.*seed=7, rng=7"):
        evalmix.bootstrap_ci(x, n_boot=200, seed=7, rng=7)
    # a Generator works too, and an int equals a Generator seeded with it
    gen = evalmix.bootstrap_ci(x, n_boot=200, rng=np.random.default_rng(7))
    assert (gen.conf_low, gen.conf_high) == (new.conf_low, new.conf_high)


def test_seed_alias_on_a_simulator_and_a_method() -> None:
    with pytest.warns(DeprecationWarning, match="use rng="):
        old = evalmix.simulate.glmm_runs(2, 20, 2, seed=3)
    new = evalmix.simulate.glmm_runs(2, 20, 2, rng=3)
    assert old.equals(new)
    assert new.attrs["truth"]["seed"] == 3  # the simulation still records its integer seed


def test_decorator_passes_positional_calls_and_names_the_bad_rng() -> None:
    @accepts_seed
    def draw(n: int, rng: int | np.random.Generator | None = None) -> np.ndarray:
        return np.random.default_rng(rng).integers(0, 10, n)

    assert (draw(4, 5) == draw(4, rng=5)).all()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        assert (draw(4, seed=5) == draw(4, rng=5)).all()
    with pytest.raises(ArgumentError, match="rng must be None, an integer >= 0"):
        evalmix.rank_sets(evalmix.simulate.glmm_runs(2, 10, 2, rng=1), n_boot=10, rng=-1)
