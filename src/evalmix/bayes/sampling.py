"""Running NUTS on a built model: PyMC's sampler, nutpie (Rust) or numpyro (JAX).

``sampler="auto"`` takes the fastest one installed, in the order measured on the AI4Math
benchmark (see ``docs/performance.md``): nutpie, numpyro, then PyMC's own sampler.  nutpie
evaluates the log density with evalmix's compiled numba kernel when numba is installed and the
model has only one-column random terms (:mod:`evalmix.bayes.fused`: no Python per step, chains in
parallel, compiled once per installation); otherwise with a JAX-compiled gradient (compiles in
about a second) or, without JAX, PyTensor's numba backend.
"""

from __future__ import annotations

import importlib.util
import os
import time
import warnings
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    import arviz as az
    import pymc as pm

    from .model import BayesModel

__all__ = ["SAMPLERS", "available_samplers", "choose_sampler", "likelihood_for", "run_sampler"]

SAMPLERS = ("auto", "nutpie", "numpyro", "pymc")


def _installed(name: str) -> bool:
    return importlib.util.find_spec(name) is not None


def available_samplers() -> list[str]:
    """Installed samplers, fastest first.

    Examples
    --------
    >>> "pymc" in available_samplers()
    True
    """
    out = []
    if _installed("nutpie"):
        out.append("nutpie")
    if _installed("numpyro") and _installed("jax"):
        out.append("numpyro")
    out.append("pymc")
    return out


def choose_sampler(sampler: str) -> str:
    """Resolve ``"auto"`` and check that an explicitly requested sampler is installed."""
    if sampler not in SAMPLERS:
        raise ValueError(f"sampler must be one of {SAMPLERS}, got {sampler!r}")
    avail = available_samplers()
    if sampler == "auto":
        return avail[0]
    if sampler not in avail:
        pkg = {"nutpie": "nutpie", "numpyro": "numpyro and jax"}[sampler]
        raise ImportError(f"sampler={sampler!r} needs {pkg} installed (pip install {pkg.replace(' and ', ' ')})")
    return sampler


def likelihood_for(sampler: str) -> str:
    """The likelihood formulation that evaluates fastest on the backend ``sampler`` compiles to.

    With nutpie and numba the model is the float64 ``fused`` form, which the compiled kernel
    reproduces exactly (models it does not cover then use it through JAX or PyTensor's numba).
    """
    if sampler == "nutpie" and _installed("numba"):
        return "fused"
    if sampler == "numpyro" or (sampler == "nutpie" and _installed("jax")):
        return "fused32"
    if sampler == "nutpie":
        return "fused"
    return "softplus"


def stored_variables(model: Any) -> list[str]:
    """Variables the result reads; the sampling-only ones (z, s, b_qr) are not stored."""
    names = [v.name for v in model.free_RVs + model.deterministics]
    return [n for n in names if not n.startswith(("z(", "s(", "b_qr", "chol("))]


def _seed(seed: int | np.random.Generator | None) -> int:
    if isinstance(seed, np.random.Generator):
        return int(seed.integers(2**31 - 1))
    if seed is None:
        return int(np.random.default_rng().integers(2**31 - 1))
    return int(seed)


def _kernel_model(bm: Any) -> tuple[Any, Any] | None:
    """(FusedDensity, nutpie model) for the BayesModel ``bm`` when the compiled kernel covers it."""
    from .fused import FusedDensity, fused_available, fused_reason

    if bm is None or not fused_available() or fused_reason(bm) is not None:
        return None
    density = FusedDensity.from_model(bm)
    try:
        return density, density.compiled()
    except Exception:  # nutpie's internal model interface changed: use its own compilers
        return None


def run_sampler(model: pm.Model, *, sampler: str, draws: int, tune: int, chains: int,
                seed: int | np.random.Generator | None, progressbar: bool,
                target_accept: float = 0.65, cores: int | None = None,
                max_treedepth: int = 10, built: BayesModel | None = None) -> tuple[az.InferenceData, float, str]:
    """Sample ``model`` (a PyMC model); returns (InferenceData, seconds, description).

    ``built`` is the :class:`~evalmix.bayes.model.BayesModel` behind ``model``, when there is
    one: with nutpie its design feeds the compiled kernel of :mod:`evalmix.bayes.fused`.
    """
    import pymc as pm

    name = choose_sampler(sampler)
    seed = _seed(seed)
    cores = int(cores or min(chains, os.cpu_count() or 1))
    t0 = time.perf_counter()
    if name == "nutpie":
        import nutpie

        kernel = _kernel_model(built)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            if kernel is not None:
                density, compiled = kernel
                desc = f"nutpie {nutpie.__version__} (compiled numba kernel)"
            else:
                # the JAX gradient compiles in ~1 s against ~5-15 s for PyTensor's numba backend
                backend = "jax" if _installed("jax") else "numba"
                compiled = nutpie.compile_pymc_model(model, backend=backend, gradient_backend=backend,
                                                     var_names=stored_variables(model))
                desc = f"nutpie {nutpie.__version__} ({backend} gradient)"
            idata = nutpie.sample(compiled, draws=draws, tune=tune, chains=chains, cores=cores,
                                  seed=seed, progress_bar=progressbar, target_accept=target_accept,
                                  save_warmup=False, maxdepth=max_treedepth)
        if kernel is not None:
            idata = density.posterior(idata)
    else:
        kwargs: dict[str, Any] = {}
        if name == "numpyro":
            kwargs["nuts_sampler_kwargs"] = {"chain_method": "vectorized",
                                             "nuts_kwargs": {"max_tree_depth": max_treedepth}}
        else:
            kwargs["max_treedepth"] = max_treedepth
        with model, warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            idata = pm.sample(draws=draws, tune=tune, chains=chains, cores=cores, random_seed=seed,
                              progressbar=progressbar, nuts_sampler=name,
                              target_accept=target_accept, compute_convergence_checks=False,
                              **kwargs)
        desc = f"{name} (PyMC {pm.__version__})" if name == "pymc" else name
    return idata, time.perf_counter() - t0, desc
