"""nutpie's model interface for a log density given as C function pointers (numba ``cfunc``).

The interface (``nutpie._lib``) is the one nutpie's own numba backend uses; it is not public, so
:func:`evalmix.bayes.sampling.run_sampler` falls back to nutpie's PyMC compiler if it changes.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np
import pandas as pd
from nutpie import _lib
from nutpie.sample import CompiledModel


@dataclasses.dataclass(frozen=True)
class KernelModel(CompiledModel):
    density: Any  # evalmix.bayes.fused.FusedDensity (holds the arrays the pointers refer to)
    logp_cfunc: Any
    expand_cfunc: Any
    _coords: dict[str, Any]
    dims: dict[str, tuple[str, ...]]

    @classmethod
    def build(cls, density: Any, logp_cfunc: Any, expand_cfunc: Any) -> KernelModel:
        model = density.bm.model
        coords = {k: pd.Index(v) for k, v in model.coords.items() if v is not None}
        dims = {vname: tuple(model.named_vars_to_dims[name])
                for name, vname, _, _ in density.blocks if name in model.named_vars_to_dims}
        for name, vname, _, size in density.blocks:  # a vector without named dims (thresholds)
            if vname not in dims and vname not in density.shapes and model[name].ndim:
                dims[vname] = (f"{vname}_dim_0",)
                coords[f"{vname}_dim_0"] = pd.Index(np.arange(size))
        coords["unconstrained_parameter"] = pd.Index(
            [vname if size == 1 and vname not in dims else f"{vname}_{i}"
             for _, vname, _, size in density.blocks for i in range(size)])
        return cls(dims=dims, density=density, logp_cfunc=logp_cfunc, expand_cfunc=expand_cfunc,
                   _coords=coords)

    @property
    def n_dim(self) -> int:
        return self.density.n_dim

    @property
    def shapes(self) -> dict[str, tuple[int, ...]]:
        return {vname: self._shape(vname, size) for _, vname, _, size in self.density.blocks}

    @property
    def coords(self) -> dict[str, Any]:
        return self._coords

    def _shape(self, vname: str, size: int) -> tuple[int, ...]:
        if vname in self.density.shapes:  # a correlated term's effects (levels x columns)
            return self.density.shapes[vname]
        return (size,) if vname in self.dims else ()

    def _make_model(self, init_mean: Any) -> Any:
        header = self.density.header
        logp = _lib.LogpFunc(self.logp_cfunc.address, header.ctypes.data, self)
        expand = _lib.ExpandFunc(self.n_dim, self.n_dim, self.expand_cfunc.address,
                                 header.ctypes.data, self)
        blocks = self.density.blocks
        dim_sizes = {k: len(v) for k, v in self._coords.items()}
        variables = _lib.PyVariable.new_variables(
            [vname for _, vname, _, _ in blocks], ["float64"] * len(blocks),
            [self._shape(vname, size) for _, vname, _, size in blocks], dim_sizes, self.dims)
        return _lib.PyMcModel(logp, expand, variables, self.n_dim, dim_sizes, self._coords,
                              lambda seed: np.ascontiguousarray(self.density.initial_point(int(seed))),
                              None)

    def _make_sampler(self, settings: Any, init_mean: Any, cores: int, progress_type: Any,
                      *rest: Any) -> Any:
        # ``rest`` is the store (nutpie 0.16.8), or a sampling callback, its rate and the store
        # (0.16.11): what nutpie's own ``from_pymc`` of that release takes after the progress type
        return _lib.PySampler.from_pymc(settings, cores, self._make_model(init_mean), progress_type,
                                        *rest)
