"""Whatever a name contains, every writer escapes it: the output parses back to the same table.

Names (models, slice values, column headers) are arbitrary Unicode, with the characters that break
each format mixed in: ``<script>``, ``|``, line breaks and blank lines, ``$x$``, backslashes, ``%``,
emoji.  Markdown and HTML output is parsed back and compared cell by cell; LaTeX output is checked
for structure here (rows, columns, nothing unescaped, pure ASCII) and compiled with pdflatex in
``tests/reporting/test_latex_compile.py``.  A study report on such names runs and escapes them everywhere.
"""

from __future__ import annotations

import html
import re
import warnings
from html.parser import HTMLParser

import matplotlib
import pandas as pd
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

import evalmix
from evalmix import tables
from evalmix.core.result import Summary
from evalmix.plots.style import figure_text

HOSTILE = ["<script>alert(1)</script>", "<img src=x onerror=alert(1)>", "a|b", "a\nb", "a\n\nb", "$x$",
           "\\", "\\|", "50%", "#1", "a_b", "{x}", "~^", "&amp;", "`code`", "*em*", "[l](u)", "😀",
           "χ² Δ ≤ × ± √", "café", "<br>", "\r\n", "a\\nb", "\x1b[31mred"]

# Characters of every kind a writer must encode: printable ASCII, C0 and C1 controls and DEL,
# Latin-1, Greek, Cyrillic and CJK letters, a combining mark, zero-width, bidi and BOM characters,
# NBSP, the line and paragraph separators, a private-use and an astral character, an emoji and the
# last code point.  An explicit alphabet: st.characters() builds hypothesis' Unicode table first
# (about 3 CPU s in a fresh clone, where .hypothesis/ is empty).
CHARS = ([chr(c) for c in range(0, 128)] + list("\x85\x9b\xa0\xadéßøþχΔЖж中文한\u0301\u200b\u200d\u200e"
                                                "\u200f\u202a\u202e\u2028\u2029\ufeff\ue000\U0001d400😀")
         + [chr(0x10FFFF)])
names = st.one_of(st.sampled_from(HOSTILE),
                  st.text(st.sampled_from(CHARS), min_size=1, max_size=10),
                  st.lists(st.sampled_from(HOSTILE), min_size=2, max_size=3).map("".join))


def _table(models: list[str], header: str) -> pd.DataFrame:
    return pd.DataFrame({"model": models, header: [0.5 + i / 7 for i in range(len(models))],
                         "n": [10 * (i + 1) for i in range(len(models))],
                         "p_value": [10.0 ** -(3 * i) for i in range(len(models))]})


def _normal(text: str) -> str:
    return text.replace("\r\n", "\n").replace("\r", "\n")


# ---- Markdown -------------------------------------------------------------------------------------


def _markdown_cells(line: str) -> list[str]:
    """Cells of one GFM table row: split at unescaped pipes, then undo the escapes."""
    assert line.startswith("| ") and line.endswith(" |"), line
    body = line[2:-2]
    cells, cur, i = [], "", 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            cur += body[i:i + 2]
            i += 2
            continue
        if ch == "|":
            cells.append(cur)
            cur = ""
        else:
            cur += ch
        i += 1
    cells.append(cur)
    out = []
    for cell in cells:  # as CommonMark reads a cell: an escaped character is literal, <br> and entities are not
        cell = cell.strip(" ")
        out.append(re.sub(r"\\(.)|<br>|&(?:#[0-9]+|#[xX][0-9A-Fa-f]+|[A-Za-z][A-Za-z0-9]*);",
                          lambda m: m.group(1) if m.group(1) is not None else "\n" if m.group() == "<br>"
                          else html.unescape(m.group()), cell, flags=re.S))
    return out


def _parse_markdown(text: str) -> list[list[str]]:
    lines = text.split("\n")
    assert re.fullmatch(r"\|(:?-+:?\|)+", lines[1]), lines[1]
    return [_markdown_cells(ln) for i, ln in enumerate(lines) if i != 1]


# ---- HTML -----------------------------------------------------------------------------------------


class _Cells(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self.cell: str | None = None
        self.tags: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self.cell = ""
        elif tag == "br" and self.cell is not None:
            self.cell += "\n"

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self.cell is not None:
            self.rows[-1].append(self.cell)
            self.cell = None

    def handle_data(self, data: str) -> None:
        if self.cell is not None:
            self.cell += data


def _parse_html(text: str) -> _Cells:
    parser = _Cells()
    parser.feed(text)
    parser.close()
    return parser


# ---- LaTeX ----------------------------------------------------------------------------------------

_MATH = re.compile(r"\\ensuremath\{(?:[^{}]|\{[^{}]*\})*\}")
_ESCAPED = re.compile(r"\\[#$%&_{}]")
_COMMAND = re.compile(r"\\[A-Za-z]+(\{\})?|\\['`^\"~=.](?=\{)")


def _latex_rows(tex: str) -> list[list[str]]:
    lines = tex.split("\n")
    head = lines.index(r"\toprule") + 1
    body = lines[lines.index(r"\midrule") + 1:lines.index(r"\bottomrule")]
    rows = []
    for line in [lines[head], *body]:
        assert line.endswith(r" \\"), line
        rows.append(re.split(r"(?<!\\)&", line[:-3]))
    return rows


def _assert_latex_cell_safe(cell: str) -> None:
    assert cell.isascii(), cell
    rest = _COMMAND.sub("", _ESCAPED.sub("", _MATH.sub("", cell)))
    rest = re.sub(r"\$[-<]\$", "", rest)  # minus signs and "<" of formatted numbers
    assert not set(rest) & set("#$%&~^_\\"), (cell, rest)
    depth = 0
    for ch in rest:
        depth += {"{": 1, "}": -1}.get(ch, 0)
        assert depth >= 0, cell
    assert depth == 0, cell


# ---- the property ----------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(models=st.lists(names, min_size=1, max_size=4, unique=True), header=names)
def test_every_writer_round_trips_arbitrary_names(models, header):
    # evalmix's own headers (p_chisq, df1 ...) are written in LaTeX markup on purpose
    assume(header not in ("model", "n") and header not in tables.HEADERS)
    df = _table(models, header)
    shown = tables.format_table(df)
    columns = [str(c) for c in df.columns]

    parsed = _parse_markdown(tables.to_markdown(df))
    assert parsed[0] == [_normal(c).strip(" ") for c in columns]
    assert parsed[1:] == [[_normal(v).strip(" ") for v in row] for row in shown.itertuples(index=False)]

    cells = _parse_html(tables.to_html(df))
    assert set(cells.tags) <= {"table", "thead", "tbody", "tr", "th", "td", "br"}, cells.tags
    assert cells.rows[0] == [_normal(c) for c in columns]
    assert cells.rows[1:] == [[_normal(v) for v in row] for row in shown.itertuples(index=False)]

    rows = _latex_rows(tables.to_latex(df, caption=" ".join(models)))
    assert len(rows) == 1 + len(df) and all(len(r) == df.shape[1] for r in rows)
    _assert_latex_cell_safe(rows[0][1].strip())  # the other headers are evalmix's own markup
    for row in rows[1:]:
        for cell in row:
            _assert_latex_cell_safe(cell.strip())

    text = tables.to_text(df, width=None)
    assert len(text.split("\n")) == 1 + len(df)  # no cell breaks a line
    assert "\x1b" not in text


@settings(max_examples=60, deadline=None)
@given(name=names)
def test_result_renderings_escape_names(name):
    """A result's own renderings (Summary with title and notes, ``_repr_html_``) escape too."""
    s = Summary(name, [name], pd.DataFrame({"model": [name], "estimate": [0.5]}), [name])
    cells = _parse_html(s._repr_html_())
    assert set(cells.tags) <= {"p", "b", "i", "br", "table", "thead", "tbody", "tr", "th", "td"}
    assert cells.rows[1] == [_normal(name), "0.5"]
    md = s.to_markdown()
    assert not re.search(r"(?<!\\)<(script|img)", md), md  # a tag only as escaped, literal text
    for line in s.to_latex().split("\n"):
        assert line.isascii()


def test_markdown_escapes_exactly():
    df = pd.DataFrame({"model": ["<script>x</script>", "a|b", "a\n\nb", "$x$"], "n": [1, 2, 3, 4]})
    assert tables.to_markdown(df).split("\n")[2:] == [
        "| \\<script>x\\</script> | 1 |",
        "| a\\|b                 | 2 |",
        "| a<br><br>b           | 3 |",
        "| \\$x\\$                | 4 |"]


def test_latex_escapes_exactly():
    assert tables.latex_text("a\n\nb") == "a b"
    assert tables.latex_text("# $ % & ~ _ ^ \\ { }") == (
        r"\# \$ \% \& \textasciitilde{} \_ \textasciicircum{} \textbackslash{} \{ \}")
    assert tables.latex_text("√ χ² Δ × ≤ ≥ ± α β") == (
        r"\ensuremath{\surd} \ensuremath{\chi}\ensuremath{^{2}} \ensuremath{\Delta} \ensuremath{\times} "
        r"\ensuremath{\leq} \ensuremath{\geq} \ensuremath{\pm} \ensuremath{\alpha} \ensuremath{\beta}")
    assert tables.latex_text("Müller ñ 😀 中") == r'M\"{u}ller \~{n} {[}U+1F600{]} {[}U+4E2D{]}'


def test_latex_headers_are_human():
    df = pd.DataFrame({"contrast": ["b - a"], "estimate": [0.1], "se": [0.2], "p_adjusted": [0.5],
                       "odds_ratio": [1.1], "or_conf_low": [0.9], "or_conf_high": [1.3], "n_items": [3]})
    lines = tables.to_latex(df).split("\n")
    head = lines[lines.index(r"\toprule") + 1]
    assert head == (r"Contrast & Estimate & SE & $p_{\mathrm{adj}}$ & OR & OR CI low & OR CI high & Items \\")


def test_figure_text_is_never_mathtext():
    matplotlib.use("Agg")
    import io

    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.set_yticks([0, 1], [figure_text("$x$"), figure_text(r"$\notacommand{$")])
    buf = io.BytesIO()
    fig.savefig(buf, format="png")  # raw, the second label fails to parse as mathtext
    plt.close(fig)
    assert [t.get_text() for t in ax.get_yticklabels()] == [r"\$x\$", r"\$\notacommand{\$"]
    assert not ax.get_yticklabels()[0]._preprocess_math(ax.get_yticklabels()[0].get_text())[1]


@pytest.fixture(scope="module")
def hostile_report(tmp_path_factory):
    matplotlib.use("Agg")
    runs = evalmix.simulate.glmm_runs(3, 30, 3, slices={"language": ["EN", "ES"]}, rng=1)
    rename = dict(zip(sorted(runs["model"].unique()), ["$x$", "<script>alert(1)</script>", "a\nb|c"]))
    runs["model"] = runs["model"].map(rename)
    runs["language"] = runs["language"].map({"EN": "<img src=x onerror=alert(1)>", "ES": "$\\bad{$"})
    out = tmp_path_factory.mktemp("report")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        rep = evalmix.report(runs, out, n_boot=50)
    return rep, out


def test_report_with_hostile_names_escapes_every_output(hostile_report):
    rep, out = hostile_report
    page = (out / "index.html").read_text(encoding="utf-8")
    assert "<script" not in page and "<img src=x" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    for md in (out / "tables").glob("*.md"):
        text = md.read_text(encoding="utf-8")
        assert not re.search(r"(?<!\\)<(script|img)", text), md.name  # only escaped: literal text
        rows = text.rstrip("\n").split("\n")
        assert len({ln.count(" | ") - ln.count("\\| ") for ln in rows[:1]}) == 1
        assert len(rows) == 2 + len(rep.tables[md.stem]), md.name  # no injected rows
    for tex in (out / "tables").glob("*.tex"):
        text = tex.read_text(encoding="utf-8")
        assert text.isascii() and "\n\n" not in text, tex.name
        for i, row in enumerate(_latex_rows(text)):
            assert len(row) == rep.tables[tex.stem].shape[1], tex.name
            for cell in row if i else ():  # data rows; headers are evalmix's markup
                _assert_latex_cell_safe(cell.strip())
    assert all((out / "figures" / f"{n}.png").stat().st_size > 1000 for n in rep.figures)
