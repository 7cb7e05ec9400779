"""The grouping column's levels and reference level, checked once for logistic_dif and
version_shift (studies.dif.reference_level): the same messages from both."""

from __future__ import annotations

import pandas as pd
import pytest

import evalmix
from evalmix.core.errors import DataError
from evalmix.simulate import simulate_versions
from evalmix.studies.dif import reference_level


def test_levels_sort_by_text_and_the_reference_comes_first():
    values = pd.Series([10, 9, "b", 9])
    assert reference_level(values, "g", None, "f", "why") == (10, [9, "b"])  # "10" < "9" < "b"
    assert reference_level(values, "g", "b", "f", "why") == ("b", [10, 9])
    with pytest.raises(DataError, match=r"^f: column 'g' has one level \('a'\); it needs two$"):
        reference_level(pd.Series(["a", "a"]), "g", None, "f", "it needs two")
    with pytest.raises(DataError, match=r"^f: reference='z' is not a level of 'g': \[10, 9, 'b'\]$"):
        reference_level(values, "g", "z", "f", "why")


def test_dif_and_version_shift_name_the_column_and_the_reference():
    runs, _ = simulate_versions(n_items=8, n_models=3, n_runs=1, rng=1)
    with pytest.raises(DataError, match=r"^version_shift: reference='v9' is not a level of "
                                        r"'harness_version': \['v1', 'v2'\]$"):
        evalmix.version_shift(runs, reference="v9")
    one = runs[runs["harness_version"] == "v1"]
    with pytest.raises(DataError, match=r"^version_shift: column 'harness_version' has one level \('v1'\); "
                                      r"nothing to compare$"):
        evalmix.version_shift(one)
    data = pd.DataFrame({"item": ["q1", "q1", "q2", "q2"], "version": ["a", "b", "a", "b"],
                         "ability": [0.1, 0.2, 0.3, 0.4], "correct": [1, 0, 1, 1]})
    with pytest.raises(DataError, match=r"^logistic_dif: reference='c' is not a level of 'version': "
                                        r"\['a', 'b'\]$"):
        evalmix.logistic_dif(data, group="version", matching="ability", reference="c")
    with pytest.raises(DataError, match=r"^logistic_dif: column 'version' has one level \('a'\); "
                                        r"DIF compares groups$"):
        evalmix.logistic_dif(data.assign(version="a"), group="version", matching="ability")
