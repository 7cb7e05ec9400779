"""Render result tables as text: one number-formatting policy and one encoder per output format.

Every evalmix result is (or converts to) a tidy :class:`pandas.DataFrame`; the helpers here turn any
such table into text for a terminal, a paper (LaTeX), a README (Markdown) or a web page (HTML).

Number formatting (:func:`format_table`, the same in ``repr``, the command line, the report and
LaTeX):

- p-values (columns ``p_value``, ``p_adjusted``, ``p``, ``p_exact``, ``p_chisq`` ...) as R's
  ``format.pval(p, digits = 3, eps = 0.001)`` applied value by value: ``<0.001`` below one in a
  thousand, else three significant digits (``0.0312``, ``0.5``, ``1``);
- integer columns, and float columns whose every value is a whole number (counts such as ``n``,
  ``df1``, ``cost``, ``n_runs``), as integers;
- other numbers as R's ``format(x, digits = 3)`` does a column: every value to at least three
  significant digits with one number of decimals per column, or scientific notation for the whole
  column when that is narrower (``2.03e-150`` never prints as ``0.000``);
- probabilities that are not p-values (``p_best``, ``rank_1``) are ordinary numbers, so one quantity
  prints one way; missing values print as an empty cell, infinities as ``Inf`` / ``-Inf``.

Encoders (each escapes everything a cell or a header may contain, so no name can inject markup,
break a row or fail to compile): :func:`markdown_text`, :func:`latex_text`, :func:`html_text`;
figure text (matplotlib) is :func:`evalmix.plots.style.figure_text`.
"""

from __future__ import annotations

import html
import math
import re
import unicodedata
from collections.abc import Iterable, Sequence
from typing import Protocol

import numpy as np
import pandas as pd

__all__ = ["HEADERS", "SupportsFrame", "aligned_columns", "format_p", "format_table", "html_text",
           "is_p_column", "latex_header", "latex_text", "markdown_text", "significance_stars", "to_html",
           "to_latex", "to_markdown", "to_text"]

_P_NAMES = {"p", "p_value", "p.value", "pvalue", "p_adj", "p_adjusted", "p_exact", "p_chisq",
            "pr(>chisq)", "pr(>|z|)", "pr(>|t|)"}

#: Human LaTeX headers of the shared column vocabulary and common domain columns (LaTeX markup).
#: Other identifiers print with spaces for underscores and a capital first letter.
HEADERS: dict[str, str] = {
    "estimate": "Estimate", "se": "SE", "conf_low": "CI low", "conf_high": "CI high",
    "statistic": "Statistic", "df": "df", "df1": "df$_1$", "df2": "df$_2$", "df_diff": r"$\Delta$df",
    "p_value": "$p$", "p_adjusted": r"$p_{\mathrm{adj}}$", "p": "$p$", "p_exact": r"$p_{\mathrm{exact}}$",
    "p_chisq": r"$p_{\chi^2}$", "odds_ratio": "OR", "or_conf_low": "OR CI low",
    "or_conf_high": "OR CI high", "n": "$n$", "k": "$k$", "nobs": "Observations", "npar": "Parameters",
    "loglik": r"$\log L$", "deviance": "Deviance", "aic": "AIC", "bic": "BIC", "delta_bic": r"$\Delta$BIC",
    "delta_aic": r"$\Delta$AIC", "bic_weight": "BIC weight", "aic_weight": "AIC weight",
    "lrt_vs": "LRT against", "icc": "ICC", "sd": "SD", "sd_acc": "SD", "iqr_acc": "IQR",
    "mean_acc": "Mean", "min_acc": "Min", "max_acc": "Max", "n_items": "Items", "n_runs": "Runs",
    "se_runs": "SE (items fixed)", "p_best": r"P(best)", "kendall_tau": r"Kendall's $\tau$",
    "paper_se": "Paper's SE", "se_items_random": "SE (items random)", "se_items_fixed": "SE (items fixed)",
}


class SupportsFrame(Protocol):
    """Anything rendered as a table: every evalmix result (its ``to_frame()``)."""

    def to_frame(self) -> pd.DataFrame: ...


# ----------------------------------------------------------------------------------------------
# numbers


def format_p(p: float | None, digits: int = 3, eps: float = 0.001) -> str:
    """Format a p-value as R's ``format.pval(p, digits, eps)``: ``<0.001`` below ``eps``, else
    ``digits`` significant digits without trailing zeros.

    Parameters
    ----------
    p : float or None
        The p-value; None or NaN gives an empty string.
    digits : int
        Significant digits (R's ``digits``).
    eps : float
        Values below it print as ``<eps`` (R's ``eps``).

    Examples
    --------
    >>> format_p(0.00002), format_p(0.0312), format_p(0.98765), format_p(1.0)
    ('<0.001', '0.0312', '0.988', '1')
    """
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return ""
    p = float(p)
    if math.isnan(p):
        return ""
    if p < eps:
        return f"<{_plain_number(eps)}"
    return _plain_number(float(f"{p:.{max(1, digits) - 1}e}"))


def significance_stars(p: float) -> str:
    """R's significance stars of a p-value (``printCoefmat``'s ``signif.stars``).

    Parameters
    ----------
    p : float
        A p-value.

    Returns
    -------
    str
        ``"***"`` below 0.001, ``"**"`` below 0.01, ``"*"`` below 0.05, ``"."`` below 0.1, else
        (and for a missing p-value) ``""``.

    Examples
    --------
    >>> [significance_stars(p) for p in (1e-5, 0.004, 0.03, 0.07, 0.5, float("nan"))]
    ['***', '**', '*', '.', '', '']
    """
    if not math.isfinite(p):
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else "." if p < 0.1 else ""


def aligned_columns(rows: Sequence[Sequence[str]], head: Sequence[str],
                    left: int | Iterable[int] = 1) -> list[str]:
    """Lines of a table of text cells in aligned columns, as R prints a coefficient table.

    Parameters
    ----------
    rows : sequence of sequences of str
        The cells, one sequence a row, each as long as ``head``.
    head : sequence of str
        The header cells.
    left : int or iterable of int
        The left-justified columns (labels): the first ``left`` columns, or those indices; the
        others are right-justified (numbers).

    Returns
    -------
    list of str
        The header line, then a line a row, trailing spaces removed.

    Examples
    --------
    >>> aligned_columns([["a", "1.5"], ["bb", "10"]], ["term", "x"])
    ['term    x', 'a     1.5', 'bb     10']
    """
    table = [list(head), *map(list, rows)]
    lefts = set(range(left)) if isinstance(left, int) else set(left)
    width = [max(len(r[k]) for r in table) for k in range(len(head))]
    return [" ".join(r[k].ljust(width[k]) if k in lefts else r[k].rjust(width[k])
                     for k in range(len(head))).rstrip() for r in table]


def _plain_number(x: float) -> str:
    """A float in positional notation with no trailing zeros (``0.001``, ``0.5``, ``1``)."""
    text = np.format_float_positional(x, trim="-")
    return text


def is_p_column(name: object) -> bool:
    """Whether a column holds p-values (``p_value``, ``p_adjusted``, ``p``, ``p_exact`` ...).

    Probabilities that are not p-values (``p_best``) are not p-value columns.

    Examples
    --------
    >>> is_p_column("p_adjusted"), is_p_column("p_best")
    (True, False)
    """
    low = str(name).lower()
    return low in _P_NAMES or low.startswith(("p_value", "p_adjusted"))


def _mantissa(x: float, digits: int) -> tuple[int, int]:
    """(significant digits needed, <= digits; decimal exponent) of ``x`` rounded to ``digits``."""
    mant, _, exp = f"{abs(x):.{digits - 1}e}".partition("e")
    sig = len(mant.replace(".", "").rstrip("0")) or 1
    return sig, int(exp)


def _format_numbers(values: Sequence[float], digits: int) -> list[str]:
    """R's ``format(x, digits)`` of one column: shared decimals, or scientific when narrower."""
    finite = [v for v in values if math.isfinite(v)]
    if finite and all(float(v).is_integer() and abs(v) < 1e15 for v in finite):
        return [_special(v) if not math.isfinite(v) else str(int(v)) for v in values]
    nonzero = [v for v in finite if v != 0]
    if not nonzero:
        return [_special(v) if not math.isfinite(v) else "0" for v in values]
    parts = [_mantissa(v, digits) for v in nonzero]
    rgt = max(max(0, sig - 1 - exp) for sig, exp in parts)
    left = max(max(1, exp + 1) for _, exp in parts)
    neg = any(v < 0 for v in nonzero)
    sig_max = max(sig for sig, _ in parts)
    fixed_width = neg + left + (rgt > 0) + rgt
    sci_width = neg + sig_max + (sig_max > 1) + (5 if any(abs(e) >= 100 for _, e in parts) else 4)
    if fixed_width <= sci_width:
        return [f"{v:.{rgt}f}" if math.isfinite(v) else _special(v) for v in values]
    return [f"{v:.{sig_max - 1}e}" if math.isfinite(v) else _special(v) for v in values]


def _special(v: float) -> str:
    if math.isnan(v):
        return ""
    return "Inf" if v > 0 else "-Inf"


def _is_number(v: object) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))


def _missing(v: object) -> bool:
    """None, NaN, pandas' NA and NaT (a missing cell of any dtype)."""
    try:
        return bool(pd.isna(v))  # type: ignore[call-overload]
    except (TypeError, ValueError):  # containers: not a missing scalar
        return False


def _format_column(name: object, values: list[object], digits: int) -> list[str]:
    values = [None if _missing(v) else v for v in values]
    numbers = [v for v in values if v is not None]
    if numbers and all(_is_number(v) for v in numbers) or not numbers:
        floats = [float(v) if _is_number(v) else math.nan for v in values]  # type: ignore[arg-type]
        if is_p_column(name):
            return [format_p(v, digits) for v in floats]
        return _format_numbers(floats, digits)
    out = []
    for v in values:
        if v is None:
            out.append("")
        elif isinstance(v, (bool, np.bool_)):
            out.append(str(bool(v)))
        elif _is_number(v):
            out.append(_format_numbers([float(v)], digits)[0])  # type: ignore[arg-type]
        else:
            out.append(str(v))
    return out


def format_table(table: pd.DataFrame | SupportsFrame, digits: int = 3) -> pd.DataFrame:
    """Return a copy of ``table`` with every cell formatted as a string by the package's policy.

    Parameters
    ----------
    table : DataFrame or evalmix result
        Results are converted with their ``to_frame()``.
    digits : int
        Significant digits (as R's ``digits``; p-values as ``format.pval(digits = 3)``).

    Returns
    -------
    DataFrame
        Same columns and rows, every cell a ``str`` (missing values are ``""``).

    Examples
    --------
    >>> df = pd.DataFrame({"df1": [104.0], "cost": [3080.0], "estimate": [0.51234],
    ...                    "p_value": [2.03e-150], "p_best": [0.0004]})
    >>> format_table(df).iloc[0].tolist()
    ['104', '3080', '0.512', '<0.001', '4e-04']
    """
    df = _as_frame(table)
    # by position: a table may repeat a column name
    out = pd.DataFrame({i: _format_column(col, df.iloc[:, i].tolist(), digits) for i, col in enumerate(df.columns)},
                       index=df.index, columns=range(df.shape[1]), dtype=object)
    out.columns = df.columns
    return out


def _head_formatted(raw: pd.DataFrame, max_rows: int | None, digits: int) -> tuple[pd.DataFrame, int]:
    """The first ``max_rows`` rows formatted (only the rows printed are, as R formats what it
    prints) and the number of rows left out."""
    more = len(raw) - max_rows if max_rows is not None and len(raw) > max_rows else 0
    return format_table(raw.iloc[:max_rows] if more else raw, digits), more


def _numeric_columns(df: pd.DataFrame) -> list[bool]:
    return [pd.api.types.is_numeric_dtype(df.iloc[:, i]) and not pd.api.types.is_bool_dtype(df.iloc[:, i])
            for i in range(df.shape[1])]


def _as_frame(table: pd.DataFrame | SupportsFrame) -> pd.DataFrame:
    if isinstance(table, pd.DataFrame):
        return table
    if hasattr(table, "to_frame"):
        return table.to_frame()
    raise TypeError(f"expected a DataFrame or an evalmix result, got {type(table).__name__}")


def _select(df: pd.DataFrame, columns: Iterable[str] | None) -> pd.DataFrame:
    if columns is None:
        return df
    wanted = list(columns)
    missing = [c for c in wanted if c not in df.columns]
    if missing:
        raise KeyError(f"no column(s) {missing} in the table; it has {[str(c) for c in df.columns]}")
    return df[wanted]


# ----------------------------------------------------------------------------------------------
# encoders


def markdown_text(text: object) -> str:
    """Text as one cell of a GitHub-flavoured Markdown table.

    ``<``, ``>`` and ``&`` become HTML entities (no tag or script survives), ``|``, ``\\``,
    backticks, ``*``, ``[``, ``]`` and ``$`` are backslash-escaped (no column break, code span,
    emphasis, link or math), and every line break becomes ``<br>`` (no row is injected).

    Examples
    --------
    >>> markdown_text("<script>a|b\\nc")
    '&lt;script&gt;a\\\\|b<br>c'
    """
    s = html.escape(str(text), quote=False)
    s = re.sub(r"([\\|`*\[\]$])", r"\\\1", s)
    s = s.replace("\r\n", "\n").replace("\r", "\n")
    return s.replace("\n", "<br>")


def html_text(text: object) -> str:
    """Text as HTML element content or attribute value: ``<>&"'`` escaped, line breaks as ``<br>``.

    Examples
    --------
    >>> html_text('<img src=x onerror="alert(1)">')
    '&lt;img src=x onerror=&quot;alert(1)&quot;&gt;'
    """
    s = html.escape(str(text), quote=True).replace("\r\n", "\n").replace("\r", "\n")
    return s.replace("\n", "<br>")


_LATEX_SPECIAL = {"\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
                  "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
                  "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", '"': r'\texttt{"}',
                  # a cell that starts with '[' right after '\\' would be read as the row's spacing argument
                  "[": "{[}", "]": "{]}"}

# symbols that appear in statistics text, as math (pdflatex with the default fonts has them all)
_LATEX_UNICODE = {
    "√": r"\ensuremath{\surd}", "χ": r"\ensuremath{\chi}", "Δ": r"\ensuremath{\Delta}", "δ": r"\ensuremath{\delta}", "×": r"\ensuremath{\times}",
    "≤": r"\ensuremath{\leq}", "≥": r"\ensuremath{\geq}", "±": r"\ensuremath{\pm}", "α": r"\ensuremath{\alpha}", "β": r"\ensuremath{\beta}",
    "γ": r"\ensuremath{\gamma}", "ε": r"\ensuremath{\varepsilon}", "θ": r"\ensuremath{\theta}", "λ": r"\ensuremath{\lambda}", "μ": r"\ensuremath{\mu}",
    "π": r"\ensuremath{\pi}", "ρ": r"\ensuremath{\rho}", "σ": r"\ensuremath{\sigma}", "Σ": r"\ensuremath{\Sigma}", "τ": r"\ensuremath{\tau}", "φ": r"\ensuremath{\phi}",
    "ω": r"\ensuremath{\omega}", "η": r"\ensuremath{\eta}", "κ": r"\ensuremath{\kappa}", "ν": r"\ensuremath{\nu}", "ψ": r"\ensuremath{\psi}", "Ω": r"\ensuremath{\Omega}",
    "²": r"\ensuremath{^{2}}", "³": r"\ensuremath{^{3}}", "¹": r"\ensuremath{^{1}}", "⁰": r"\ensuremath{^{0}}", "₀": r"\ensuremath{_{0}}", "₁": r"\ensuremath{_{1}}",
    "₂": r"\ensuremath{_{2}}", "≈": r"\ensuremath{\approx}", "≠": r"\ensuremath{\neq}", "→": r"\ensuremath{\rightarrow}", "←": r"\ensuremath{\leftarrow}",
    "↔": r"\ensuremath{\leftrightarrow}", "⇒": r"\ensuremath{\Rightarrow}", "∞": r"\ensuremath{\infty}", "·": r"\ensuremath{\cdot}",
    "−": r"\ensuremath{-}", "∑": r"\ensuremath{\sum}", "∈": r"\ensuremath{\in}", "∝": r"\ensuremath{\propto}", "÷": r"\ensuremath{\div}", "°": r"\ensuremath{^{\circ}}",
    "–": "--", "—": "---", "‘": "`", "’": "'", "“": "``", "”": "''", "…": r"\ldots{}",
    "\u00a0": r"\nobreakspace{}", "ß": r"\ss{}", "ø": r"\o{}", "Ø": r"\O{}", "æ": r"\ae{}", "Æ": r"\AE{}",
    "œ": r"\oe{}", "Œ": r"\OE{}", "ł": r"\l{}", "Ł": r"\L{}", "å": r"\aa{}", "Å": r"\AA{}",
    "¡": r"\textexclamdown{}", "¿": r"\textquestiondown{}", "§": r"\S{}", "¶": r"\P{}",
    "€": "EUR", "£": r"\pounds{}", "©": r"\copyright{}", "•": r"\ensuremath{\bullet}", "†": r"\dag{}",
}

# combining accents (after NFD decomposition) -> LaTeX accent commands
_ACCENTS = {"\u0300": "`", "\u0301": "'", "\u0302": "^", "\u0303": "~", "\u0304": "=", "\u0306": "u",
            "\u0307": ".", "\u0308": '"', "\u030a": "r", "\u030b": "H", "\u030c": "v", "\u0327": "c",
            "\u0328": "k"}


def _latex_char(ch: str) -> str:
    if ch in _LATEX_SPECIAL:
        return _LATEX_SPECIAL[ch]
    if ch in _LATEX_UNICODE:
        return _LATEX_UNICODE[ch]
    if ch < "\x80":
        return ch if ch.isprintable() else " "
    decomposed = unicodedata.normalize("NFD", ch)
    base, marks = decomposed[0], decomposed[1:]
    if marks and base < "\x80" and base.isalpha() and all(m in _ACCENTS for m in marks):
        out = base if base not in "ij" else "\\" + base  # dotless i and j under an accent
        for m in marks:
            out = f"\\{_ACCENTS[m]}{{{out}}}"
        return out
    # anything else (CJK, emoji, other scripts) has no glyph in pdflatex's fonts: its code point
    return f"{{[}}U+{ord(ch):04X}{{]}}"


def latex_text(text: object) -> str:
    """Text as LaTeX (text mode) that pdflatex compiles: every special character escaped.

    ``# $ % & ~ _ ^ \\ { }`` (and ``< > | "``, which the OT1 font lacks) are escaped; line breaks and
    blank lines become one space (a blank line would end the paragraph inside a table); statistics
    symbols (√ χ² Δ × ≤ ≥ ± Greek letters ...) become math, accented Latin letters accent commands,
    and any other non-ASCII character its code point (``[U+1F600]``, the brackets braced so that a
    cell may start with one).

    Examples
    --------
    >>> print(latex_text("50% of $x_1$ & χ² ≤ 3"))
    50\\% of \\$x\\_1\\$ \\& \\ensuremath{\\chi}\\ensuremath{^{2}} \\ensuremath{\\leq} 3
    >>> print(latex_text("café\\n\\nbar"))
    caf\\'{e} bar
    """
    s = re.sub(r"\s*[\r\n]+\s*", " ", str(text))
    return "".join(_latex_char(ch) for ch in s)


def latex_header(name: object) -> str:
    """The LaTeX header of a column: from :data:`HEADERS`, else the escaped name with spaces for
    underscores and a capital first letter (``n_items`` -> ``Items``, ``rank_low`` -> ``Rank low``).

    Examples
    --------
    >>> latex_header("p_adjusted"), latex_header("or_conf_low"), latex_header("rank_low")
    ('$p_{\\\\mathrm{adj}}$', 'OR CI low', 'Rank low')
    """
    key = str(name)
    if key in HEADERS:
        return HEADERS[key]
    if re.fullmatch(r"[a-z][a-z0-9_]*", key):
        key = key.replace("_", " ")
        key = key[:1].upper() + key[1:]
    return latex_text(key)


# ----------------------------------------------------------------------------------------------
# writers


def _latex_number(cell: str) -> str:
    """A formatted number in LaTeX: a true minus sign, ``<`` as math."""
    if cell.startswith("-"):
        return "$-$" + cell[1:]
    if cell.startswith("<"):
        return "$<$" + cell[1:]
    return latex_text(cell)


# width of a character and of a column's padding, in \linewidth of an article, by font size
_LATEX_SIZES = (("normalsize", 0.0145), ("small", 0.0133), ("footnotesize", 0.0118), ("scriptsize", 0.0098))


def _latex_layout(raw: pd.DataFrame, shown: pd.DataFrame, numeric: list[bool]) -> tuple[str, str]:
    """Font size and column types: the widest text columns become ``p{}`` paragraph columns
    sharing what the other columns leave of the line, so that most tables fit the page."""
    n = len(numeric)
    chars = [max([len(_plain_header(c))] + [len(v) for v in shown.iloc[:, i]]) for i, c in enumerate(raw.columns)]
    size, char_w = _LATEX_SIZES[min(3, 0 if n <= 5 else 1 if n <= 7 else 2 if n <= 10 else 3)]
    pad = (0.035 if n <= 6 else 0.023) * n  # 2 \tabcolsep per column (6pt, or 4pt when wide)
    natural = [c * char_w for c in chars]
    if any(not num and c > 24 for num, c in zip(numeric, chars)) and size == "normalsize":
        size, char_w = _LATEX_SIZES[1]  # sentences read better a size down
        natural = [c * char_w for c in chars]
    text = sorted((w, i) for i, (w, num) in enumerate(zip(natural, numeric)) if not num)
    room = 0.98 - pad - sum(w for w, num in zip(natural, numeric) if num)
    widths: dict[int, float] = {}
    if sum(w for w, _ in text) > room:  # water-filling: narrow text columns keep their width
        left = list(text)
        while left and (left[0][0] <= room / len(left) or left[0][0] <= 0.15):  # labels never wrap
            room -= left.pop(0)[0]
        for _, i in left:
            widths[i] = max(0.12, room / len(left))
    align = "".join("r" if num else f"p{{{widths[i]:.2f}\\linewidth}}" if i in widths else "l"
                    for i, num in enumerate(numeric))
    return size, align


def _plain_header(name: object) -> str:
    """Roughly the printed width of a header (math markup does not print)."""
    return re.sub(r"\\[A-Za-z]+|[${}_^]", "", latex_header(name))


def to_latex(table: pd.DataFrame | SupportsFrame, caption: str | None = None, label: str | None = None, digits: int = 3,
             columns: Iterable[str] | None = None) -> str:
    """Render a result table as a LaTeX ``table`` float with booktabs rules.

    Headers are human (:func:`latex_header`), numbers right-aligned and formatted by
    :func:`format_table`, text columns with long cells set as ``p{}`` paragraph columns sharing the
    line, and every cell escaped by :func:`latex_text`, so the output compiles with pdflatex whatever
    the names contain.  The preamble needs ``\\usepackage{booktabs}``.  A table with many numeric
    columns can still be wider than the text: choose the ones to print with ``columns``.

    Parameters
    ----------
    table : DataFrame or evalmix result
        The table to render; results are converted with their ``to_frame()``.
    caption, label : str, optional
        Caption (escaped) and ``\\label`` (characters other than letters, digits and ``:-_.`` are
        replaced) of the float.
    digits : int
        Significant digits (p-values: ``<0.001`` when tiny, see :func:`format_p`).
    columns : iterable of str, optional
        Subset and order of columns to print.

    Returns
    -------
    str

    Examples
    --------
    >>> import pandas as pd
    >>> print(to_latex(pd.DataFrame({"model": ["a_b"], "estimate": [0.51234], "p_value": [1e-5]})))
    ... # doctest: +NORMALIZE_WHITESPACE
    \\begin{table}[ht]
    \\centering
    \\begin{tabular}{lrr}
    \\toprule
    Model & Estimate & $p$ \\\\
    \\midrule
    a\\_b & 0.512 & $<$0.001 \\\\
    \\bottomrule
    \\end{tabular}
    \\end{table}
    """
    raw = _select(_as_frame(table), columns)
    shown = format_table(raw, digits)
    numeric = _numeric_columns(raw)
    cells = [[_latex_number(v) if num else latex_text(v) for v, num in zip(row, numeric)]
             for row in shown.itertuples(index=False, name=None)]
    # long text (sentences of the corrections table) wraps in paragraph columns
    size, align = _latex_layout(raw, shown, numeric)
    lines = [r"\begin{table}[ht]", r"\centering"]
    if size != "normalsize":
        lines.append(f"\\{size}")
    if len(raw.columns) > 6:
        lines.append(r"\setlength{\tabcolsep}{4pt}")
    if caption:
        lines.append(rf"\caption{{{latex_text(caption)}}}")
    if label:
        lines.append(rf"\label{{{re.sub(r'[^A-Za-z0-9:._-]', '-', str(label))}}}")
    lines += [rf"\begin{{tabular}}{{{align}}}", r"\toprule",
              " & ".join(latex_header(c) for c in raw.columns) + r" \\", r"\midrule"]
    lines += [" & ".join(row) + r" \\" for row in cells]
    lines += [r"\bottomrule", r"\end{tabular}", r"\end{table}"]
    return "\n".join(lines)


def to_markdown(table: pd.DataFrame | SupportsFrame, digits: int = 3, columns: Iterable[str] | None = None) -> str:
    """Render a result table as a GitHub-flavoured Markdown table.

    Numbers are formatted by :func:`format_table`; every header and cell is escaped by
    :func:`markdown_text` (HTML entities, escaped pipes, line breaks as ``<br>``), so a name cannot
    inject markup or rows.

    Parameters
    ----------
    table : DataFrame or evalmix result
    digits : int
        Significant digits.
    columns : iterable of str, optional
        Subset and order of columns to print.

    Returns
    -------
    str

    Examples
    --------
    >>> import pandas as pd
    >>> print(to_markdown(pd.DataFrame({"model": ["a|b"], "estimate": [0.51234]})))
    | model | estimate |
    |:------|---------:|
    | a\\|b  |    0.512 |
    """
    raw = _select(_as_frame(table), columns)
    shown = format_table(raw, digits)
    heads = [markdown_text(c) for c in raw.columns]
    cells = [[markdown_text(v) for v in row] for row in shown.itertuples(index=False, name=None)]
    widths = [max([len(h), 1] + [len(r[i]) for r in cells]) for i, h in enumerate(heads)]
    numeric = _numeric_columns(raw)

    def fmt_row(vals: list[str]) -> str:
        return "| " + " | ".join(v.rjust(w) if num else v.ljust(w)
                                 for v, w, num in zip(vals, widths, numeric)) + " |"

    rule = "|" + "|".join(("-" * (w + 1) + ":") if num else (":" + "-" * (w + 1))
                          for w, num in zip(widths, numeric)) + "|"
    return "\n".join([fmt_row(heads), rule] + [fmt_row(r) for r in cells])


def to_html(table: pd.DataFrame | SupportsFrame, digits: int = 3, caption: str | None = None,
            columns: Iterable[str] | None = None, max_rows: int | None = None,
            attrs: str = "") -> str:
    """Render a result table as an HTML ``<table>`` (numbers right-aligned, every text escaped).

    Parameters
    ----------
    table : DataFrame or evalmix result
    digits : int
        Significant digits.
    caption : str, optional
    columns : iterable of str, optional
    max_rows : int, optional
        Rows shown before a last row says how many more there are.
    attrs : str
        Attributes written into the ``<table>`` tag as given (e.g. ``'id="tab-x"'``); not escaped.

    Returns
    -------
    str

    Examples
    --------
    >>> import pandas as pd
    >>> print(to_html(pd.DataFrame({"model": ["<b>"], "n": [3.0]})))
    <table><thead><tr><th class="l">model</th><th>n</th></tr></thead><tbody><tr><td class="l">&lt;b&gt;</td><td>3</td></tr></tbody></table>
    """
    raw = _select(_as_frame(table), columns)
    shown, more = _head_formatted(raw, max_rows, digits)
    numeric = _numeric_columns(raw)
    left = ' class="l"'
    head = "".join(f"<th{'' if n else left}>{html_text(c)}</th>" for c, n in zip(raw.columns, numeric))
    body = "".join("<tr>" + "".join(f"<td{'' if n else left}>{html_text(v)}</td>"
                                    for v, n in zip(row, numeric)) + "</tr>"
                   for row in shown.itertuples(index=False, name=None))
    if more:
        body += f'<tr><td class="l" colspan="{max(1, len(numeric))}">... {more} more rows</td></tr>'
    cap = f"<caption>{html_text(caption)}</caption>" if caption else ""
    open_tag = f"<table {attrs}>" if attrs else "<table>"
    return f"{open_tag}{cap}<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _terminal_text(text: str) -> str:
    """A cell for a terminal: control characters (escape sequences, line breaks) as ``\\n``, ``\\x1b``."""
    return _CONTROL.sub(lambda m: {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(m.group(),
                                                                              f"\\x{ord(m.group()):02x}"),
                        text)


def to_text(table: pd.DataFrame | SupportsFrame, digits: int = 3, width: int | None = 100,
            max_rows: int | None = None, more: str = "") -> str:
    """Render a table for a terminal: aligned columns at most ``width`` characters wide.

    A table wider than ``width`` is split into blocks of columns, each repeating the leading text
    columns (the row labels), as R prints a wide data frame; a table longer than ``max_rows`` shows
    its first ``max_rows`` rows and a line ``... N more rows`` (followed by ``more``, e.g. how to see
    them all).  Control characters in cells are shown escaped.

    Parameters
    ----------
    table : DataFrame or evalmix result
    digits : int
        Significant digits (see :func:`format_table`).
    width : int or None
        Maximum line width (None: no limit).
    max_rows : int or None
        Rows shown (None: all).
    more : str
        Text after the count of rows left out.

    Returns
    -------
    str

    Examples
    --------
    >>> import pandas as pd
    >>> print(to_text(pd.DataFrame({"model": ["a", "b", "c"], "n": [10.0, 20.0, 30.0]}), max_rows=2))
    model   n
    a      10
    b      20
    ... 1 more row
    """
    raw = _as_frame(table)
    if raw.shape[1] == 0:
        return "(no columns)"
    shown, n_more = _head_formatted(raw, max_rows, digits)
    numeric = _numeric_columns(raw)
    heads = [_terminal_text(str(c)) for c in raw.columns]
    cols = [[_terminal_text(v) for v in shown.iloc[:, i]] for i in range(shown.shape[1])]
    widths = [max([len(h)] + [len(v) for v in col]) for h, col in zip(heads, cols)]
    keys: list[int] = []
    for i, num in enumerate(numeric):  # leading text columns label the rows
        if num or (width is not None and sum(widths[j] + 2 for j in keys) + widths[i] > width // 2):
            break
        keys.append(i)
    blocks: list[list[int]] = []
    current = list(keys)
    for i in range(len(heads)):
        if i in keys:
            continue
        line = sum(widths[j] + 2 for j in current) + widths[i]
        if width is not None and current != keys and line > width:
            blocks.append(current)
            current = list(keys)
        current.append(i)
    if current != keys or not blocks:
        blocks.append(current)

    def cell(j: int, text: str) -> str:
        return text.rjust(widths[j]) if numeric[j] else text.ljust(widths[j])

    out: list[str] = []
    for b, block in enumerate(blocks):
        if b:
            out.append("")
        out.append("  ".join(cell(j, heads[j]) for j in block).rstrip())
        for r in range(len(shown)):
            out.append("  ".join(cell(j, cols[j][r]) for j in block).rstrip())
    if len(raw) == 0:
        out.append("(no rows)")
    if n_more:
        out.append(f"... {n_more} more row{'s' if n_more > 1 else ''}{more}")
    return "\n".join(out)

