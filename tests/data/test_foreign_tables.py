"""Arrow (and polars) tables are accepted wherever a pandas runs table is: converted at the door."""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pytest

import evalmix
from evalmix import DataError
from evalmix.data.runs import as_pandas, is_foreign_table, load_table

ROWS = {"model": ["a", "a", "a", "a", "b", "b", "b", "b"], "item": [1, 2, 1, 2, 1, 2, 1, 2],
        "run": [1, 1, 2, 2, 1, 1, 2, 2], "correct": [1, 0, 1, 1, 0, 0, 1, 0]}


def test_arrow_table_and_record_batch_give_the_pandas_results():
    frame = pd.DataFrame(ROWS)
    table = pa.table(ROWS)
    want = evalmix.accuracy(frame, by="model")
    for t in (table, table.to_batches()[0]):
        assert is_foreign_table(t)
        got = evalmix.accuracy(t, by="model")
        pd.testing.assert_frame_equal(got.table, want.table)
    runs = evalmix.read_runs(table)
    assert runs["correct"].tolist() == ROWS["correct"]
    assert runs.attrs["evalmix"]["outcome"] == "correct"
    assert load_table(table).columns.tolist() == list(ROWS)


def test_arrow_nulls_are_reported_by_row_as_for_pandas():
    rows = dict(ROWS, correct=[1, 0, None, 1, 0, 0, 1, 0])
    with pytest.raises(DataError, match=r"missing value.*row 2"):
        evalmix.read_runs(pa.table(rows))


def test_other_objects_are_refused_by_name():
    assert not is_foreign_table([1, 2]) and not is_foreign_table(pd.DataFrame(ROWS))
    with pytest.raises(DataError, match=r"expected a pandas, polars, Arrow or DuckDB table .*got list"):
        as_pandas([1, 2])
    with pytest.raises(DataError, match=r"a pyarrow ChunkedArray converted to Series, not a table"):
        as_pandas(pa.chunked_array([[1, 2]]))  # an Arrow column converts to a Series, not a table
    with pytest.raises(DataError, match=r"expected a DataFrame or a path to a table file, got dict"):
        load_table({"model": ["a"]})


def test_polars_frame_and_lazy_frame_give_the_pandas_results():
    pl = pytest.importorskip("polars")  # in the test extra; skipped only outside it
    want = evalmix.accuracy(pd.DataFrame(ROWS), by="model").table
    frame = pl.DataFrame(ROWS)
    for t in (frame, frame.lazy()):
        assert is_foreign_table(t)
        pd.testing.assert_frame_equal(evalmix.accuracy(t, by="model").table, want)
    fit = evalmix.glmer("correct ~ model + (1|item)", pl.DataFrame(ROWS))
    assert fit.nobs == len(ROWS["model"])
    with pytest.raises(DataError, match=r"missing value.*row 2"):
        evalmix.read_runs(pl.DataFrame(dict(ROWS, correct=[1, 0, None, 1, 0, 0, 1, 0])))
