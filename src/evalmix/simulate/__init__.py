"""Simulators of evaluation runs with known truth, for examples, tests and calibration studies."""

from .glmm import glmm_runs

__all__ = ["glmm_runs"]
