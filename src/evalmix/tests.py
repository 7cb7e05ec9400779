"""Deprecated alias of :mod:`evalmix.comparisons` (the paired tests), kept for old imports."""

from __future__ import annotations

import warnings

from .comparisons import *  # noqa: F401,F403
from .comparisons import __all__  # noqa: F401

warnings.warn("evalmix.tests is renamed evalmix.comparisons; import from there", DeprecationWarning,
              stacklevel=2)
