"""The model floor every engine stands on (lme4's ``lFormula``/``glFormula`` and the reformulas
package; MixedModels.jl's ``ReMat``).

- :mod:`~evalmix.model.parse`: lme4 formula text -> :class:`ParsedFormula`; the allow-list of what a
  term may evaluate (:func:`check_expression`);
- :mod:`~evalmix.model.functions`: R's functions, factor codings and contrasts, R's names;
- :mod:`~evalmix.model.fixed`: the frozen fixed design (:class:`FixedDesign`);
- :mod:`~evalmix.model.random`: random terms owning their theta/Lambda layout (:class:`RandomTerm`);
- :mod:`~evalmix.model.frame`: formula and data joined with R's lookup order into a design;
- :mod:`~evalmix.model.response`: the checks of a response column (numbers, ordinal ratings).

Only this package parses formulas and builds designs; engines import it, never each other.
"""

from __future__ import annotations

from .fixed import FixedDesign, build_fixed, independent_columns
from .frame import (FixedMatrix, GlmmDesign, build_design, check_data, complete_rows, drop_rank_deficient,
                    fitted_offset, fixed_on_patterns, fixed_patterns, model_columns, read_data, stateful)
from .functions import (CONTRASTS, R_FUNCTIONS, LevelSpec, alias_calls, as_r_factor, factor_columns,
                        fixed_variables, r_context, r_deparse, r_factor, r_formula, r_names,
                        split_term,
                        translate_fixed, translate_terms)
from .parse import (ParsedFormula, RandomSpec, check_expression, formula_functions, make_formula, parse_formula,
                    parse_mixed_formula,
                    parse_specs)
from .response import count_columns, numeric_column, ordinal_codes, rows_text
from .random import (RandomTerm, ThetaLayout, build_random_terms, group_codes_for, lower_triangle, random_columns,
                     split_theta, term_lambdas)

__all__ = ["CONTRASTS", "FixedDesign", "FixedMatrix", "GlmmDesign", "LevelSpec", "ParsedFormula", "lower_triangle",
           "R_FUNCTIONS", "RandomSpec", "RandomTerm", "ThetaLayout", "alias_calls", "as_r_factor", "build_design",
           "build_fixed", "build_random_terms", "check_data", "check_expression", "complete_rows", "count_columns",
           "drop_rank_deficient", "factor_columns", "fitted_offset", "fixed_on_patterns", "fixed_patterns", "fixed_variables",
           "formula_functions", "group_codes_for", "independent_columns", "make_formula", "model_columns", "parse_mixed_formula", "numeric_column", "ordinal_codes", "parse_formula",
           "parse_specs", "split_term",
           "r_context", "r_deparse", "r_factor", "r_formula", "r_names", "random_columns", "read_data", "rows_text", "split_theta",
           "stateful", "term_lambdas", "translate_fixed", "translate_terms"]
