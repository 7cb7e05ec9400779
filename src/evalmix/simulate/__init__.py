"""Simulators of evaluation runs with known truth, for examples, tests and calibration studies."""

from .glmm import glmm_runs
from .mixture import mixture_benchmark

__all__ = ["glmm_runs", "mixture_benchmark"]
