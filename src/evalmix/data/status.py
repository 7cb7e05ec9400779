"""The status of a sample: scored, errored, cancelled or unscored.

Harness logs hold samples that were attempted but not scored: the model call failed, the sample
was cancelled, or the scorer could not grade the answer.  Dropping them silently inflates accuracy
whenever failures cluster on hard items.  evalmix reads them as rows with a ``status`` column
(``"ok"`` for scored samples; ``"error"``, ``"cancelled"``, ``"unscored"`` or any other value
otherwise) and a missing outcome where the status is not ``"ok"``.  Analyses that need scores use
the scored rows (:func:`scored_rows`); :func:`evalmix.accuracy` reports the coverage and
:func:`evalmix.accuracy_bounds` the bounds and estimates under stated assumptions.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from .runs import load_table
from ..core.errors import DataError

__all__ = ["OK", "is_scored", "scored_rows", "status_column"]

OK = "ok"


def status_column(data: pd.DataFrame, status: str | None = None) -> str | None:
    """The status column of ``data``: ``status`` if given (it must exist), else ``"status"`` if present."""
    if status is not None:
        if status not in data.columns:
            raise DataError(f"status column {status!r} not found; the table has columns: "
                            f"{', '.join(map(repr, map(str, data.columns)))}")
        return status
    return "status" if "status" in data.columns else None


def is_scored(values: pd.Series) -> np.ndarray:
    """Boolean mask of the status values that mean "scored" (``"ok"``, case-insensitive)."""
    return values.astype("string").str.strip().str.lower().eq(OK).fillna(False).to_numpy(bool)


def scored_rows(data: pd.DataFrame | str | Path, status: str | None = None) -> pd.DataFrame:
    """The scored rows of a runs table (status ``"ok"``); the table itself when it has no status.

    Parameters
    ----------
    data : DataFrame or path
        Runs table (a path is read with :func:`evalmix.load_table`).
    status : str, optional
        Status column (default ``"status"`` when present).

    Returns
    -------
    DataFrame
        The rows whose status is ``"ok"`` (case-insensitive), with the table's recorded column roles.

    Examples
    --------
    >>> df = pd.DataFrame({"correct": [1, None, 0], "status": ["ok", "error", "ok"]})
    >>> scored_rows(df)["correct"].tolist()
    [1.0, 0.0]
    """
    if isinstance(data, (str, Path)):
        data = load_table(data)
    col = status_column(data, status)
    if col is None:
        return data
    ok = is_scored(data[col])
    out = data.loc[ok]
    out.attrs = dict(data.attrs)
    return out


