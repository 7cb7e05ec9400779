"""The common base of evalmix results: small immutable objects that render as tidy DataFrames."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from . import tables


@dataclass(frozen=True)
class Result:
    """Base class of result objects.

    Subclasses are frozen dataclasses and implement :meth:`to_frame`; rendering
    (``to_latex``, ``to_markdown``, notebook display, ``to_dict`` for ``--json``) comes from here.
    """

    def to_frame(self) -> pd.DataFrame:  # pragma: no cover - abstract
        raise NotImplementedError

    def to_latex(self, caption: str | None = None, label: str | None = None, digits: int = 3) -> str:
        """The result table as a LaTeX table (see :func:`evalmix.tables.to_latex`)."""
        return tables.to_latex(self.to_frame(), caption=caption, label=label, digits=digits)

    def to_markdown(self, digits: int = 3) -> str:
        """The result table as a Markdown table (see :func:`evalmix.tables.to_markdown`)."""
        return tables.to_markdown(self.to_frame(), digits=digits)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``{"table": [records...]}`` plus subclass extras."""
        return {"table": frame_records(self.to_frame())}

    def __repr__(self) -> str:
        return f"{type(self).__name__}\n{self.to_frame().to_string(index=False)}"

    def _repr_html_(self) -> str:
        return self.to_frame().to_html(index=False)


def frame_records(df: pd.DataFrame) -> list[dict[str, Any]]:
    """DataFrame -> list of JSON-safe records (NaN and +-inf -> None, numpy scalars -> Python)."""
    out = []
    for rec in df.to_dict(orient="records"):
        clean = {}
        for k, v in rec.items():
            if hasattr(v, "item"):
                v = v.item()
            if isinstance(v, float) and not math.isfinite(v):  # NaN, +-inf -> null (strict JSON)
                v = None
            clean[str(k)] = v
        out.append(clean)
    return out
