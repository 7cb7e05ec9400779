"""Plotting helpers, one module per method area (imported on demand: matplotlib stays optional)."""
