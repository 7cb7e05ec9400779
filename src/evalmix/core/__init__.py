"""Layer 0, the core: errors, argument checks, seeds, results and their rendering, parallel execution.

Nothing here knows about formulas, tables of runs or models; every other layer stands on it.
"""
