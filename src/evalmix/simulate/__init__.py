"""Simulators of evaluation runs with known truth, for examples, tests and calibration studies."""

from .glmm import glmm_runs
from .irt import simulate_irt, simulate_irt_parameters
from .health import simulate_dead_items, simulate_versions
from .mixture import mixture_benchmark

__all__ = ["glmm_runs", "mixture_benchmark", "simulate_irt", "simulate_irt_parameters",
           "simulate_dead_items", "simulate_versions"]
