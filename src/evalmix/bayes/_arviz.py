"""The two containers of posterior draws: ArviZ 0.x's InferenceData and ArviZ 1's xarray DataTree.

PyMC 5 and ArviZ 0.x (Python 3.11) return InferenceData; PyMC 6, nutpie on ArviZ 1 and ArviZ 1
itself return an ``xarray.DataTree`` whose children are the groups (``posterior``,
``sample_stats``...).  Both read the same way (``obj.posterior["b"]``, ``obj.sample_stats``);
these helpers cover what differs: listing, replacing and adding groups, and building one.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["elpd", "group", "group_names", "is_datatree", "make", "plain_numpy", "with_groups"]


def is_datatree(obj: Any) -> bool:
    """Whether ``obj`` is an xarray DataTree (ArviZ 1) rather than InferenceData."""
    import xarray as xr

    return isinstance(obj, getattr(xr, "DataTree", ()))


def group_names(obj: Any) -> list[str]:
    """The groups of ``obj`` (``posterior``, ``sample_stats``, ...)."""
    return list(obj.children) if is_datatree(obj) else list(obj.groups())


def group(obj: Any, name: str) -> Any:
    """Group ``name`` of ``obj`` as an xarray Dataset."""
    return obj[name].to_dataset() if is_datatree(obj) else getattr(obj, name)


def make(groups: dict[str, Any], like: Any) -> Any:
    """A container of the kind of ``like`` holding the Datasets ``groups``."""
    if is_datatree(like):
        import xarray as xr

        return xr.DataTree.from_dict(dict(groups))
    import arviz as az

    return az.InferenceData(**groups)


def with_groups(obj: Any, **groups: Any) -> Any:
    """``obj`` with the Datasets ``groups`` added or replacing its groups of those names (a new
    container; ``obj`` is not changed)."""
    out = {g: group(obj, g) for g in group_names(obj)}
    out.update(groups)
    return make(out, obj)


def elpd(result: Any) -> float:
    """The expected log predictive density of an ``arviz.loo`` result: ``elpd_loo`` in ArviZ 0.x,
    ``elpd`` in ArviZ 1."""
    return float(result.elpd_loo if hasattr(result, "elpd_loo") else result.elpd)


@contextmanager
def plain_numpy() -> Iterator[None]:
    """ArviZ 0.x's diagnostics without its numba kernels while the block runs.

    With numba installed ArviZ 0.x compiles its variance kernel in every process on the first
    r_hat (1.5-2.5 s of a fit's wall time, more than the NumPy code needs for a fit's few dozen
    parameters); ArviZ 1 has no such switch, and the block then changes nothing.
    """
    import arviz as az

    switch = getattr(az, "Numba", None)
    if switch is None or not getattr(switch, "numba_flag", False):
        yield
        return
    switch.disable_numba()
    try:
        yield
    finally:
        switch.enable_numba()
