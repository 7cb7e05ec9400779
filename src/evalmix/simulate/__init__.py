"""Simulated evaluation runs with known truth."""

from __future__ import annotations

from .mixture import mixture_benchmark

__all__ = ["mixture_benchmark"]
