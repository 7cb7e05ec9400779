"""The common base of evalmix results: small immutable objects that render as tidy tables.

Every result speaks one vocabulary (``estimate``, ``se``, ``conf_low``, ``conf_high``,
``statistic``, ``df``, ``p_value``, ``p_adjusted``; odds ratios ``odds_ratio``, ``or_conf_low``,
``or_conf_high``), prints as a short table, and returns one :class:`Summary` type from
``summary()``.  Results are immutable: arrays come back read-only and pandas objects as copies, so
nothing a caller does to an attribute changes what the result reports afterwards.
"""

from __future__ import annotations

import math
import re
import types
from dataclasses import dataclass, fields
from typing import TYPE_CHECKING, Any, Iterable, Sequence

import numpy as np
import pandas as pd

from . import tables

if TYPE_CHECKING:
    from great_tables import GT

#: Column names with one meaning across every result table.
VOCABULARY = ("estimate", "se", "conf_low", "conf_high", "statistic", "df", "p_value",
              "p_adjusted", "odds_ratio", "or_conf_low", "or_conf_high")

#: Rows shown by ``repr`` before the table is elided (``to_frame()`` has them all).
REPR_MAX_ROWS = 20
#: The widest line of a printed result (wider tables print in blocks of columns, as R's).
REPR_WIDTH = tables.REPR_WIDTH
#: Significant digits of printed and Markdown tables (R's), and of LaTeX tables (papers).
DIGITS, LATEX_DIGITS = tables.DIGITS, tables.LATEX_DIGITS


_PARENS = re.compile(r"-|\+|/|\*")


def level_label(level: object) -> str:
    """A factor level as written inside a contrast label: in parentheses when it contains
    ``-``, ``+``, ``/`` or ``*``, as emmeans writes it.

    Examples
    --------
    >>> level_label("model-A"), level_label("EN")
    ('(model-A)', 'EN')
    """
    text = str(level)
    return f"({text})" if _PARENS.search(text) else text


def contrast_label(a: object, b: object, scale: str = "log-odds") -> str:
    """The one contrast-label convention: ``a - b`` for a difference (log-odds, probability,
    accuracy), ``a / b`` for a ratio (odds ratio); the label names the scale of ``estimate``.

    Examples
    --------
    >>> contrast_label("model-B", "model-A"), contrast_label("B", "A", scale="odds ratio")
    ('(model-B) - (model-A)', 'B / A')
    """
    sep = " / " if scale == "odds ratio" else " - "
    return f"{level_label(a)}{sep}{level_label(b)}"


def _protect(value: Any) -> Any:
    """A caller's handle on a stored value that cannot change the stored value."""
    if isinstance(value, (pd.DataFrame, pd.Series)):
        return value.copy()
    if isinstance(value, np.ndarray) and value.flags.writeable:
        view = value.view()
        view.flags.writeable = False
        return view
    if isinstance(value, dict):
        return types.MappingProxyType({k: _protect(v) for k, v in value.items()})
    return value


def _table_text(df: pd.DataFrame, max_rows: int | None = None) -> str:
    """A table as ``repr`` prints it: the package's number formats, long tables elided."""
    if df.empty:
        return "(no rows)"
    if max_rows is None or len(df) <= max_rows:
        return tables.to_text(df, width=REPR_WIDTH)
    shown = pd.concat([df.head(max_rows // 2), df.tail(max_rows // 2)])
    lines = tables.to_text(shown, width=None).split("\n")
    if max(map(len, lines)) > REPR_WIDTH:  # blocks of columns, each elided in its middle
        n_blocks = len(tables.to_text(shown, width=REPR_WIDTH).split("\n\n"))
        half = max(3, max_rows // (2 * n_blocks))  # as many lines in all as one block would take
        shown = pd.concat([df.head(half), df.tail(half)])
        out: list[str] = []
        for b, block in enumerate(tables.to_text(shown, width=REPR_WIDTH).split("\n\n")):
            rows = block.split("\n")
            rows.insert(1 + half, f"... ({len(df) - 2 * half} more rows; to_frame() has them all)")
            out += ([""] if b else []) + rows
        return "\n".join(out)
    lines.insert(1 + max_rows // 2, f"... ({len(df) - max_rows} more rows; to_frame() has them all)")
    return "\n".join(lines)


class Summary:
    """What ``summary()`` returns for every result: a title, header lines, tables and notes.

    Parameters
    ----------
    title : str
    header : sequence of str
        Lines printed under the title (formula, scale, number of observations...).
    tables : DataFrame or sequence of (name, DataFrame)
        The first table is the main one (:meth:`to_frame` returns it by default).
    notes : sequence of str
        Lines printed after the tables (adjustment methods, warnings of the fit).

    Examples
    --------
    >>> import pandas as pd
    >>> s = Summary("Accuracy", ["scale: probability"], pd.DataFrame({"estimate": [0.5]}))
    >>> print(s)
    Accuracy
    scale: probability
    <BLANKLINE>
    estimate
         0.5
    >>> s.to_frame().columns.tolist()
    ['estimate']
    """

    __slots__ = ("_title", "_header", "_tables", "_notes")
    _title: str
    _header: tuple[str, ...]
    _tables: tuple[tuple[str, pd.DataFrame], ...]
    _notes: tuple[str, ...]

    def __init__(self, title: str, header: Iterable[str] = (),
                 tables: pd.DataFrame | Sequence[tuple[str, pd.DataFrame]] = (),
                 notes: Iterable[str] = ()):
        if isinstance(tables, pd.DataFrame):
            tables = [("", tables)]
        object.__setattr__(self, "_title", str(title))
        object.__setattr__(self, "_header", tuple(str(h) for h in header))
        object.__setattr__(self, "_tables",
                           tuple((str(n), t.copy()) for n, t in tables))
        object.__setattr__(self, "_notes", tuple(str(n) for n in notes))

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("Summary is immutable")

    @property
    def title(self) -> str:
        return self._title

    @property
    def header(self) -> tuple[str, ...]:
        return self._header

    @property
    def notes(self) -> tuple[str, ...]:
        return self._notes

    @property
    def tables(self) -> dict[str, pd.DataFrame]:
        """Every table by name (copies)."""
        return {n: t.copy() for n, t in self._tables}

    def to_frame(self, table: str | None = None) -> pd.DataFrame:
        """The main table, or the one named ``table`` (a copy)."""
        if not self._tables:
            return pd.DataFrame()
        if table is None:
            return self._tables[0][1].copy()
        for n, t in self._tables:
            if n == table:
                return t.copy()
        raise KeyError(f"no table {table!r}; tables: {[n for n, _ in self._tables]}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: title, header, notes and every table as records."""
        return {"title": self._title, "header": list(self._header), "notes": list(self._notes),
                "tables": {n or "table": frame_records(t) for n, t in self._tables}}

    def to_latex(self, digits: int = LATEX_DIGITS, label: str | None = None) -> str:
        """Each table as a LaTeX table captioned with the title and the table's name."""
        out = []
        for i, (n, t) in enumerate(self._tables):
            cap = f"{self._title}: {n}" if n else self._title
            lab = f"{label}-{i + 1}" if (label and len(self._tables) > 1) else label
            out.append(tables.to_latex(t, caption=cap, label=lab, digits=digits))
        return "\n".join(out)

    def to_markdown(self, digits: int = DIGITS) -> str:
        """Title, header lines, each table in Markdown, and the notes."""
        esc = tables.markdown_text
        parts = [f"**{esc(self._title)}**", ""] + [f"{esc(h)}  " for h in self._header]
        for n, t in self._tables:
            if n:
                parts += ["", f"*{esc(n)}*"]
            parts += ["", tables.to_markdown(t, digits=digits)]
        if self._notes:
            parts += [""] + [f"{esc(n)}  " for n in self._notes]
        return "\n".join(parts)

    def __str__(self) -> str:
        lines = tables.wrap_lines([self._title, *self._header])
        for n, t in self._tables:
            lines.append("")
            if n:
                lines.append(f"{n}:")
            lines.append(_table_text(t))
        if self._notes:
            lines += ["", *tables.wrap_lines(self._notes)]
        return "\n".join(lines)

    __repr__ = __str__

    def to_gt(self, table: str | None = None, digits: int = DIGITS) -> GT:
        """The main table, or the one named ``table``, as a great_tables ``GT`` titled with the
        summary's title and header (needs great_tables; see :func:`evalmix.core.tables.to_gt`)."""
        return tables.to_gt(self.to_frame(table), digits=digits, title=self._title, subtitle=self._header,
                            notes=self._notes)

    def _repr_html_(self) -> str:
        esc = tables.html_text
        parts = [f"<p><b>{esc(self._title)}</b>" + "".join(f"<br>{esc(h)}" for h in self._header) + "</p>"]
        for n, t in self._tables:
            if n:
                parts.append(f"<p><i>{esc(n)}</i></p>")
            parts.append(tables.to_html(t))
        if self._notes:
            parts.append("<p>" + "<br>".join(esc(n) for n in self._notes) + "</p>")
        return "\n".join(parts)


@dataclass(frozen=True, eq=False, repr=False)
class Result:
    """Base class of result objects.

    Subclasses are frozen dataclasses declared with ``eq=False, repr=False`` (identity equality
    and hash: a result holds arrays and frames, which have no single truth value) and implement
    :meth:`to_frame`; they may add a :meth:`_title`, :meth:`_header` lines and :meth:`_notes`.
    Printing, ``summary()``, ``to_latex``, ``to_markdown``, notebook display and ``to_dict`` (for
    ``--json``) come from here.  Attributes holding pandas objects are returned as copies and
    arrays as read-only views.
    """

    def __post_init__(self) -> None:
        # own what was passed in: later edits of the caller's arrays and frames do not reach us
        for f in fields(self):
            if f.name[:1] == "_":
                continue
            value = object.__getattribute__(self, f.name)
            if isinstance(value, np.ndarray):
                value = value.copy()
                value.flags.writeable = False
                object.__setattr__(self, f.name, value)
            elif isinstance(value, (pd.DataFrame, pd.Series)):
                object.__setattr__(self, f.name, value.copy())

    def __getattribute__(self, name: str) -> Any:
        value = object.__getattribute__(self, name)
        if name[:1] == "_":
            return value
        return _protect(value)

    def to_frame(self) -> pd.DataFrame:  # pragma: no cover - abstract
        raise NotImplementedError

    # ---- what the printed forms say besides the table
    def _title(self) -> str:
        return type(self).__name__

    def _header(self) -> list[str]:
        return []

    def _notes(self) -> list[str]:
        return []

    def summary(self) -> Summary:
        """Title, header lines, the result table and notes, as one :class:`Summary`."""
        return Summary(self._title(), self._header(), self.to_frame(), self._notes())

    def to_latex(self, caption: str | None = None, label: str | None = None,
                 digits: int = LATEX_DIGITS) -> str:
        """The result table as a LaTeX table (see :func:`evalmix.core.tables.to_latex`)."""
        return tables.to_latex(self.to_frame(), caption=caption, label=label, digits=digits)

    def to_markdown(self, digits: int = DIGITS) -> str:
        """The result table as a Markdown table (see :func:`evalmix.core.tables.to_markdown`)."""
        return tables.to_markdown(self.to_frame(), digits=digits)

    def to_gt(self, digits: int = DIGITS) -> GT:
        """The result table as a great_tables ``GT``, titled and noted as the result prints, for
        notebooks and HTML beside the result's own display (needs great_tables: ``pip install
        great_tables`` or the ``gt`` extra; see :func:`evalmix.core.tables.to_gt`).

        Examples
        --------
        >>> import evalmix
        >>> gt = evalmix.accuracy(evalmix.load_example("runs"), "model").to_gt()  # doctest: +SKIP
        """
        return tables.to_gt(self.to_frame(), digits=digits, title=self._title(), subtitle=self._header(),
                            notes=self._notes())

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form: ``{"table": [records...]}`` plus subclass extras."""
        return {"table": frame_records(self.to_frame())}

    def __repr__(self) -> str:
        lines = [*tables.wrap_lines([self._title(), *self._header()]), _table_text(self.to_frame(), REPR_MAX_ROWS)]
        lines += tables.wrap_lines(self._notes())
        return "\n".join(lines)

    def _repr_html_(self) -> str:
        esc = tables.html_text
        head = [esc(h) for h in (self._title(), *self._header())]
        html = "<p>" + "<br>".join(f"<b>{h}</b>" if i == 0 else h for i, h in enumerate(head))
        html += "</p>\n" + tables.to_html(self.to_frame(), max_rows=2 * REPR_MAX_ROWS)
        notes = self._notes()
        if notes:
            html += "\n<p>" + "<br>".join(esc(n) for n in notes) + "</p>"
        return html


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
