"""Running NUTS on a built model: PyMC's sampler, nutpie (Rust) or numpyro (JAX).

``sampler="auto"`` takes the fastest one installed, in the order measured on the AI4Math
benchmark (see ``docs/performance.md``): nutpie, numpyro, then PyMC's own sampler.  nutpie
evaluates the log density with evalmix's compiled numba kernel when numba is installed and the
model has no offset and a logit link where it is binomial (:mod:`evalmix.bayes.fused`: no Python
per step, chains in parallel, compiled once per installation); otherwise with a JAX-compiled
gradient (compiles in about a second) or, without JAX, PyTensor's numba backend.

Each chain is one task of :func:`evalmix.core.parallel.parallel_map` with its own seed stream, the child
``i`` of ``np.random.SeedSequence(seed)``, and the chains are joined into one InferenceData as a
multi-chain run would return it.  Locally the chains run in threads of this process (nutpie's
Rust sampler and the numba kernel run without the GIL); inside
``joblib.parallel_config(backend="dask")`` (or ``"ray"``, ``"loky"``) they run on that backend's
workers, which rebuild the model from the fit's recipe.  The draws for a seed are the same
whatever the backend, the number of workers or ``cores``.
"""

from __future__ import annotations

import importlib.util
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from ..core.parallel import parallel_map, record_warnings

if TYPE_CHECKING:
    import arviz as az

    from .model import BayesModel

__all__ = ["SAMPLERS", "ChainJob", "available_samplers", "choose_sampler", "combine_chains",
           "likelihood_for", "run_sampler"]

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
    """Variables the result reads; the sampling-only ones (z, s, b_qr, cpc) are not stored."""
    names = [v.name for v in model.free_RVs + model.deterministics]
    return [n for n in names if not n.startswith(("z(", "s(", "b_qr", "cpc("))]


def _kernel_density(bm: Any) -> Any:
    """The FusedDensity of the BayesModel ``bm`` when the compiled kernel covers it, else None."""
    from .fused import FusedDensity, fused_available, fused_reason

    if bm is None or not fused_available() or fused_reason(bm) is not None:
        return None
    density = FusedDensity.from_model(bm)
    try:
        density.compiled()
    except Exception:  # nutpie's internal model interface changed: use its own compilers
        return None
    return density


# Models rebuilt in this process from a job's recipe (a worker process or a cluster worker), so the
# chains of one fit that land on the same worker build and compile it once.
_BUILT: OrderedDict[str, dict[str, Any]] = OrderedDict()
_BUILT_LOCK = threading.Lock()
_BUILT_KEEP = 4


# PyMC's and numpyro's samplers compile and reseed state shared within a process; run from
# several threads at once (a cluster's threaded workers) their draws stop being reproducible, so
# one chain at a time per process.  Their local default is worker processes.
_PYMC_LOCK = threading.Lock()


class ChainJob:
    """What every chain of one fit needs: the model's recipe and the sampler settings.

    Pickled to other processes or machines without its built model; there the model is rebuilt
    from ``recipe`` (a picklable callable returning the :class:`~evalmix.bayes.model.BayesModel`,
    e.g. a :func:`functools.partial` of :func:`~evalmix.bayes.model.build_model`) once per process
    and shared by the chains that run there.
    """

    def __init__(self, recipe: Callable[[], BayesModel], *, sampler: str, draws: int, tune: int,
                 target_accept: float, max_treedepth: int, built: BayesModel | None = None) -> None:
        self.recipe = recipe
        self.sampler = sampler
        self.draws = int(draws)
        self.tune = int(tune)
        self.target_accept = float(target_accept)
        self.max_treedepth = int(max_treedepth)
        self.token = uuid.uuid4().hex
        self._local: dict[str, Any] = {"bm": built} if built is not None else {}
        self._lock = threading.RLock()

    def __getstate__(self) -> dict[str, Any]:
        state = self.__dict__.copy()
        state["_local"] = {}
        del state["_lock"]
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        with _BUILT_LOCK:  # share one build (and its lock) among the copies of this job in a process
            self._local = _BUILT.setdefault(self.token, {"lock": threading.RLock()})
            self._lock = self._local["lock"]
            _BUILT.move_to_end(self.token)
            while len(_BUILT) > _BUILT_KEEP:
                _BUILT.popitem(last=False)

    def _get(self, key: str, make: Callable[[], Any]) -> Any:
        with self._lock:
            if key not in self._local:
                self._local[key] = make()
            return self._local[key]

    @property
    def model(self) -> BayesModel:
        """The built BayesModel (rebuilt from the recipe on first use in a new process)."""
        return self._get("bm", self.recipe)

    def description(self) -> str:
        """The sampler as reported in the result (``fit.sampler``)."""
        if self.sampler == "nutpie":
            import nutpie

            density = self._get("density", lambda: _kernel_density(self.model))
            if density is not None:
                return f"nutpie {nutpie.__version__} (compiled numba kernel, {density.row_pass} row pass)"
            return f"nutpie {nutpie.__version__} ({self._nutpie_backend()} gradient)"
        if self.sampler == "pymc":
            import pymc as pm

            return f"pymc (PyMC {pm.__version__})"
        return self.sampler

    @staticmethod
    def _nutpie_backend() -> str:
        # PyTensor 3's numba backend compiles sleepstudy's (Days|Subject) in ~14 s and samples it
        # in ~2 s (wine's clmm: 13 s, then 1.8 s with the compiled model kept), against ~26 s
        # (17 s) for every fit through the JAX gradient, whose Python callback serialises the
        # chains; with PyTensor 2 the JAX gradient compiles in ~1 s against 5-40 s
        import pytensor

        if int(pytensor.__version__.split(".")[0]) >= 3:
            return "numba"
        return "jax" if _installed("jax") else "numba"

    def sample_chain(self, seed: int) -> az.InferenceData:
        """One chain (InferenceData with chain coordinate 0), warmup discarded."""
        bm = self.model
        with record_warnings():  # the samplers' own chatter; convergence is checked on the result
            if self.sampler == "nutpie":
                return self._nutpie_chain(bm, seed)
            import pymc as pm

            kwargs: dict[str, Any] = {}
            if self.sampler == "numpyro":
                kwargs["nuts_sampler_kwargs"] = {"nuts_kwargs": {"max_tree_depth": self.max_treedepth}}
            else:
                kwargs["max_treedepth"] = self.max_treedepth
            with _PYMC_LOCK, bm.model:
                return pm.sample(draws=self.draws, tune=self.tune, chains=1, cores=1, random_seed=seed,
                                 progressbar=False, nuts_sampler=self.sampler,
                                 target_accept=self.target_accept, compute_convergence_checks=False,
                                 initvals=bm.initial_points() or None, **kwargs)

    def _nutpie_chain(self, bm: Any, seed: int) -> Any:
        import nutpie

        density = self._get("density", lambda: _kernel_density(bm))
        if density is not None:
            compiled = density.compiled()  # cheap; a KernelModel serves one sampler run
        else:
            backend = self._nutpie_backend()
            compiled = self._get("nutpie", lambda: _compiled_pymc_model(
                self.recipe, bm, lambda: nutpie.compile_pymc_model(
                    bm.model, backend=backend, gradient_backend=backend,
                    var_names=stored_variables(bm.model), initial_points=bm.initial_points() or None)))
        return nutpie.sample(compiled, draws=self.draws, tune=self.tune, chains=1, cores=1, seed=seed,
                             progress_bar=False, target_accept=self.target_accept, save_warmup=False,
                             maxdepth=self.max_treedepth, **_mass_matrix(bm))


def _mass_matrix(bm: Any) -> dict[str, Any]:
    """nutpie's low-rank mass matrix adaptation for models with a correlated term, else its default
    (diagonal).

    A non-centred correlated term leaves the intercept on a ridge with the mean of the levels'
    standardised intercepts, which a diagonal mass matrix follows slowly: on lme4-style
    ``correct ~ x + (1 + x|g)`` (40 groups) the intercept's bulk ESS was 330-480 of 4,000 draws over
    six seeds, 2,900-3,300 with the low-rank update; on sleepstudy's ``(Days|Subject)``, 0-4
    divergent transitions a fit with the diagonal one, none in six seeds with the low-rank update,
    for about 1.4 times the CPU time of sampling.  The keyword is ``adaptation="low_rank"`` from
    nutpie 0.16.11, ``low_rank_modified_mass_matrix=True`` before.
    """
    import inspect

    import nutpie

    if not any(p.term.nc > 1 for p in getattr(bm, "plans", [])):
        return {}
    params = inspect.signature(nutpie.sample).parameters
    if "adaptation" in params:
        return {"adaptation": "low_rank"}
    return {"low_rank_modified_mass_matrix": True} if "low_rank_modified_mass_matrix" in params else {}


# nutpie's compiled PyMC models by the recipe that built them: a model the kernel does not cover
# costs 20-40 s of PyTensor and numba compilation (sleepstudy's (Days|Subject)), and the data are
# constants of the compiled graph, so refitting the same model on the same data (another seed,
# more draws) reuses it instead.
_COMPILED: OrderedDict[str, Any] = OrderedDict()
_COMPILED_KEEP = 4


def _recipe_key(recipe: Callable[[], Any]) -> str | None:
    """A fingerprint of a model recipe (a functools.partial of a model builder and its data and
    arguments), or None when the recipe is something else."""
    from functools import partial

    if not isinstance(recipe, partial):
        return None
    import joblib

    try:
        return joblib.hash((getattr(recipe.func, "__module__", ""), getattr(recipe.func, "__qualname__", ""),
                            recipe.args, sorted(recipe.keywords.items())))
    except Exception:  # an argument joblib cannot hash: compile afresh
        return None


def _compiled_pymc_model(recipe: Callable[[], Any], bm: Any, compile_model: Callable[[], Any]) -> Any:
    key = _recipe_key(recipe)
    if key is not None:
        key = f"{key}:{len(bm.model.free_RVs)}"
    with _BUILT_LOCK:
        if key is not None and key in _COMPILED:
            _COMPILED.move_to_end(key)
            return _COMPILED[key]
    compiled = compile_model()
    if key is not None:
        with _BUILT_LOCK:
            _COMPILED[key] = compiled
            while len(_COMPILED) > _COMPILED_KEEP:
                _COMPILED.popitem(last=False)
    return compiled


def _run_chain(job: ChainJob, seq: np.random.SeedSequence) -> Any:
    """The task of one chain: its seed is the first word of its own seed stream."""
    return job.sample_chain(int(seq.generate_state(1)[0]))


def combine_chains(parts: list[Any]) -> Any:
    """Join one-chain results (InferenceData, or ArviZ 1's DataTree) into one, as a multi-chain
    run returns it.

    Groups with a ``chain`` dimension are concatenated along it and renumbered 0..k-1; the
    others (observed data) are taken from the first chain.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from evalmix.bayes._arviz import make
    >>> import arviz as az
    >>> like = az.InferenceData() if hasattr(az.InferenceData, "groups") else xr.DataTree()
    >>> one = [make({"posterior": xr.Dataset({"mu": (("chain", "draw"), np.full((1, 3), float(i)))})},
    ...             like) for i in range(2)]
    >>> both = combine_chains(one)
    >>> both.posterior["chain"].values.tolist(), both.posterior["mu"].values[:, 0].tolist()
    ([0, 1], [0.0, 1.0])
    """
    import xarray as xr

    from ._arviz import group, group_names, make

    if len(parts) == 1:
        return parts[0]
    groups: dict[str, Any] = {}
    for g in group_names(parts[0]):
        first = group(parts[0], g)
        if "chain" in first.dims:
            ds = xr.concat([group(p, g) for p in parts], dim="chain", combine_attrs="override")
            groups[g] = ds.assign_coords(chain=np.arange(len(parts)))
        else:
            groups[g] = first
    return make(groups, parts[0])


def run_sampler(recipe: Callable[[], BayesModel], *, sampler: str, draws: int, tune: int, chains: int,
                seed: int | np.random.Generator | np.random.SeedSequence | None, progressbar: bool,
                target_accept: float = 0.65, cores: int | None = None,
                max_treedepth: int = 10, built: BayesModel | None = None
                ) -> tuple[az.InferenceData, float, str]:
    """Sample the model that ``recipe()`` builds; returns (InferenceData, seconds, description).

    Chain ``i`` is one task of :func:`evalmix.core.parallel.parallel_map` seeded from
    ``np.random.SeedSequence(seed).spawn(chains)[i]``.  ``built`` is the model ``recipe()``
    returns, when the caller has it already (the chains that run in this process use it).
    ``cores`` is the number of chains run at once locally; an enclosing
    ``joblib.parallel_config`` choosing a backend (dask, ray, loky) takes the chains instead.
    """
    name = choose_sampler(sampler)
    job = ChainJob(recipe, sampler=name, draws=draws, tune=tune, target_accept=target_accept,
                   max_treedepth=max_treedepth, built=built)
    n_jobs = int(cores or min(chains, os.cpu_count() or 1))
    seq = seed if isinstance(seed, np.random.SeedSequence) else np.random.SeedSequence(
        int(seed.integers(2**63 - 1)) if isinstance(seed, np.random.Generator) else seed)
    t0 = time.perf_counter()
    # nutpie: threads locally, as nutpie's sampler and the compiled kernel release the GIL and the
    # chains share the model built here (on AI4Math as fast as nutpie's own chain threads).  PyMC's
    # and numpyro's samplers hold the GIL and share compiled state between threads: processes.
    prefer = "threads" if name == "nutpie" else "processes"
    parts = parallel_map(_run_chain, [job] * int(chains), n_jobs=n_jobs, seed=seq, prefer=prefer,
                         progress=progressbar, desc="chains")
    idata = combine_chains(parts)
    if name == "nutpie":
        density = job._get("density", lambda: _kernel_density(job.model))
        if density is not None:
            idata = density.posterior(idata)
    return idata, time.perf_counter() - t0, job.description()
