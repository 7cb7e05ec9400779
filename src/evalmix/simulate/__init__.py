"""Simulators of evaluation runs with known truth, for examples, tests and calibration studies."""

from .drift import canary_waves, contaminated_runs
from .glmm import glmm_runs
from .irt import simulate_irt, simulate_irt_parameters
from .health import simulate_dead_items, simulate_versions
from .mixture import mixture_benchmark

__all__ = ["canary_waves", "contaminated_runs", "glmm_runs", "mixture_benchmark", "simulate_dead_items",
           "simulate_irt", "simulate_irt_parameters", "simulate_versions"]
