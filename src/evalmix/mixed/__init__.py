"""Layer 1, the shared mixed-model base every engine stands on: what inference reads from a fit
(:mod:`~evalmix.mixed.fitted`), the reference grid (:mod:`~evalmix.mixed.grid`), link functions, and the
linear algebra of the random-effects system (:mod:`~evalmix.mixed.intercepts`, :mod:`~evalmix.mixed.numdiff`).
"""
