"""Layer 4, studies: reliability, ranking and leaderboards, repetitions, power and planning, calibration,
judges, PPI, arena ratings, IRT, sequential tests."""
