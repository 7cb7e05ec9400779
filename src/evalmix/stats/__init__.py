"""Layer 2, classical statistics beside the engines: descriptive accuracy, paired comparisons,
resampling and agreement."""
