"""Layer 3, inference on fits of every engine: marginal means and contrasts (:mod:`~evalmix.inference.emmeans`),
model selection and type-III tests (:mod:`~evalmix.inference.selection`), multiplicity."""
