"""Render result tables for papers: LaTeX and Markdown with consistent number formatting.

Every evalmix result is (or converts to) a tidy :class:`pandas.DataFrame`; the helpers here turn
any such table into text a paper or a README can include.  Formatting rules:

- estimates and other floats: 3 decimals (``digits``);
- p-values (columns named ``p``, ``p_value``, ``p.value``, ``p_adj`` or starting with ``p_``):
  ``<0.001`` below one in a thousand, else 3 decimals;
- integers stay integers; missing values print as an empty cell.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, Protocol

import numpy as np
import pandas as pd

__all__ = ["format_p", "format_table", "to_latex", "to_markdown"]

_P_NAMES = {"p", "p_value", "p.value", "pvalue", "p_adj", "p_adjusted", "pr(>chisq)", "pr(>|z|)"}


class SupportsFrame(Protocol):
    """Anything rendered as a table: every evalmix result (its ``to_frame()``)."""

    def to_frame(self) -> pd.DataFrame: ...


def format_p(p: float, digits: int = 3) -> str:
    """Format a p-value the way papers print it (``<0.001`` for tiny values).

    Examples
    --------
    >>> format_p(0.00002)
    '<0.001'
    >>> format_p(0.0312)
    '0.031'
    """
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return ""
    floor = 10.0**-digits
    if p < floor:
        return f"<{floor:.{digits}f}"
    return f"{p:.{digits}f}"


def _is_p_column(name: str) -> bool:
    low = str(name).lower()
    return low in _P_NAMES or low.startswith("p_")


def _format_cell(value: Any, digits: int) -> str:
    if value is None:
        return ""
    if isinstance(value, (bool, np.bool_)):
        return str(bool(value))
    if isinstance(value, (int, np.integer)):
        return str(int(value))
    if isinstance(value, (float, np.floating)):
        value = float(value)
        if math.isnan(value):
            return ""
        if math.isinf(value):
            return "Inf" if value > 0 else "-Inf"
        if float(value).is_integer() and abs(value) < 1e15 and digits == 0:
            return str(int(value))
        return f"{value:.{digits}f}"
    return str(value)


def format_table(table: pd.DataFrame | SupportsFrame, digits: int = 3) -> pd.DataFrame:
    """Return a copy of ``table`` with every cell formatted as a string.

    ``table`` may be a DataFrame or any evalmix result with a ``to_frame()`` method.
    """
    df = _as_frame(table)
    out = pd.DataFrame(index=df.index)
    for col in df.columns:
        fmt: Callable[[Any], str]
        if _is_p_column(col):
            fmt = lambda v: format_p(float(v), digits) if _is_number(v) else _format_cell(v, digits)  # noqa: E731
        else:
            fmt = lambda v: _format_cell(v, digits)  # noqa: E731
        out[col] = [fmt(v) for v in df[col].tolist()]
    return out


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


def _as_frame(table: pd.DataFrame | SupportsFrame) -> pd.DataFrame:
    if isinstance(table, pd.DataFrame):
        return table
    if hasattr(table, "to_frame"):
        return table.to_frame()
    raise TypeError(f"expected a DataFrame or an evalmix result, got {type(table).__name__}")


def _latex_escape(text: str) -> str:
    repl = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
            "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\^{}", "<": r"$<$", ">": r"$>$"}
    return "".join(repl.get(ch, ch) for ch in text)


def to_latex(table: pd.DataFrame | SupportsFrame, caption: str | None = None, label: str | None = None, digits: int = 3,
             columns: Iterable[str] | None = None) -> str:
    """Render a result table as a LaTeX ``table`` environment (booktabs rules).

    Parameters
    ----------
    table : DataFrame or evalmix result
        The table to render; results are converted with their ``to_frame()``.
    caption, label : str, optional
        Caption and ``\\label`` of the float.
    digits : int
        Decimals for floats (p-values use the same number and print ``<0.001`` when tiny).
    columns : iterable of str, optional
        Subset and order of columns to print.

    Examples
    --------
    >>> import pandas as pd
    >>> print(to_latex(pd.DataFrame({"model": ["a"], "estimate": [0.51234], "p": [1e-5]})))
    ... # doctest: +NORMALIZE_WHITESPACE
    \\begin{table}[ht]
    \\centering
    \\begin{tabular}{lrr}
    \\toprule
    model & estimate & p \\\\
    \\midrule
    a & 0.512 & $<$0.001 \\\\
    \\bottomrule
    \\end{tabular}
    \\end{table}
    """
    df = _as_frame(table)
    if columns is not None:
        df = df[list(columns)]
    raw = df
    df = format_table(df, digits)
    align = "".join("r" if pd.api.types.is_numeric_dtype(raw[c]) else "l" for c in raw.columns)
    lines = [r"\begin{table}[ht]", r"\centering"]
    if caption:
        lines.append(rf"\caption{{{_latex_escape(caption)}}}")
    if label:
        lines.append(rf"\label{{{label}}}")
    lines += [rf"\begin{{tabular}}{{{align}}}", r"\toprule",
              " & ".join(_latex_escape(str(c)) for c in df.columns) + r" \\", r"\midrule"]
    for row in df.itertuples(index=False):
        lines.append(" & ".join(_latex_escape(str(v)) for v in row) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines)


def to_markdown(table: pd.DataFrame | SupportsFrame, digits: int = 3, columns: Iterable[str] | None = None) -> str:
    """Render a result table as a GitHub-flavoured Markdown table.

    Examples
    --------
    >>> import pandas as pd
    >>> print(to_markdown(pd.DataFrame({"model": ["a"], "estimate": [0.51234]})))
    | model | estimate |
    |:------|---------:|
    | a     |    0.512 |
    """
    df = _as_frame(table)
    if columns is not None:
        df = df[list(columns)]
    raw = df
    df = format_table(df, digits)
    heads = [str(c) for c in df.columns]
    cells = [[str(v).replace("|", r"\|") for v in row] for row in df.itertuples(index=False)]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(heads)]
    numeric = [pd.api.types.is_numeric_dtype(raw[c]) for c in raw.columns]

    def fmt_row(vals: list[str]) -> str:
        return "| " + " | ".join(v.rjust(w) if num else v.ljust(w)
                                 for v, w, num in zip(vals, widths, numeric)) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if num else (":" + "-" * (w + 1))
                          for w, num in zip(widths, numeric)) + "|"
    return "\n".join([fmt_row(heads), rule] + [fmt_row(r) for r in cells])
