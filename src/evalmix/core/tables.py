"""Render result tables as text: one number-formatting policy and one encoder per output format.

Every evalmix result is (or converts to) a tidy :class:`pandas.DataFrame`; the helpers here turn any
such table into text for a terminal, a paper (LaTeX), a README (Markdown) or a web page (HTML).

This module is the one owner of number formatting as R prints it. :func:`format_table` is the
policy of every result table (``repr``, the command line, Markdown, HTML; LaTeX with its own default,
below); :func:`r_format` is R's ``format(x, digits)`` of a vector, :func:`format_coefmat` R's
``printCoefmat`` (the coefficient tables of the lmer, glmer, clmm and glmmtmb printouts) and
:func:`varcorr_lines` lme4's print of ``VarCorr``.

- p-values (columns ``p_value``, ``p_adjusted``, ``p``, ``p_exact``, ``p_chisq`` ...) as R's
  ``format.pval(p, digits = 3, eps = 0.001)`` applied value by value: ``<0.001`` below one in a
  thousand, else three significant digits (``0.0312``, ``0.5``, ``1``);
- integer columns, and float columns whose every value is a whole number (counts such as ``n``,
  ``df1``, ``cost``, ``n_runs``), as integers;
- estimates beside their standard errors (columns ``estimate`` and ``se``) as ``printCoefmat``
  formats them, together (:func:`format_coefmat`);
- Bayesian convergence diagnostics as the posterior package prints them: ``r_hat`` to three
  decimals (``1.000``, ``1.012``), effective sample sizes (``ess_bulk``, ``ess_tail``) as whole
  numbers;
- test statistics (column ``statistic``) rounded to ``digits - 1`` decimals first, as
  ``printCoefmat`` rounds them;
- other numbers as R's ``format(x, digits = 4)`` does a column (:data:`DIGITS`, the digits
  ``summary()`` of lme4 and ``printCoefmat`` print with): every value to at least four significant
  digits, with one number of decimals per column, or scientific notation for the whole column when
  that is narrower (``2.03e-150`` never prints as ``0.000``); so sleepstudy's ``Days`` slope prints
  ``10.467`` beside its SE ``1.546``, never ``10.5`` and ``1.55``;
- LaTeX tables (:func:`to_latex`, papers) print three significant digits by default
  (:data:`LATEX_DIGITS`); ``digits=4`` gives R's;
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
import textwrap
import unicodedata
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    from great_tables import GT

__all__ = ["DIGITS", "HEADERS", "LATEX_DIGITS", "SupportsFrame", "aligned_columns", "coefmat_lines",
           "format_coefmat", "format_p", "format_table", "html_text", "is_p_column", "latex_header",
           "latex_text", "markdown_text", "named_values", "r_format", "REPR_WIDTH", "wrap_lines", "significance_stars", "to_gt", "to_html", "to_latex",
           "to_markdown", "to_text", "varcorr_lines"]

#: Significant digits of estimates, SEs and statistics in every printout: R's
#: ``max(3, getOption("digits") - 3)``, what ``summary()`` of lme4, lmerTest and ordinal print with.
DIGITS = 4
#: Significant digits of LaTeX tables (papers): three, unless ``digits=`` says otherwise.
LATEX_DIGITS = 3
#: Significant digits of p-values (R's ``format.pval(p, digits = 3)``).
P_DIGITS = 3
#: The line printCoefmat writes under a table with stars.
SIGNIF_LEGEND = "Signif. codes:  0 '***' 0.001 '**' 0.01 '*' 0.05 '.' 0.1 ' ' 1"

_P_NAMES = {"p", "p_value", "p.value", "pvalue", "p_adj", "p_adjusted", "p_exact", "p_chisq",
            "pr(>chisq)", "pr(>|z|)", "pr(>|t|)"}

_RHAT_NAMES = {"r_hat", "rhat", "r-hat"}
_ESS_NAMES = {"ess_bulk", "ess_tail", "ess"}

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


def _format_numbers(values: Sequence[float], digits: int, nan: str = "") -> list[str]:
    """R's ``format(x, digits)`` of one column: shared decimals, or scientific when narrower."""
    finite = [v for v in values if math.isfinite(v)]
    if finite and all(float(v).is_integer() and abs(v) < 1e15 for v in finite):
        return [_special(v, nan) if not math.isfinite(v) else str(int(v)) for v in values]
    nonzero = [v for v in finite if v != 0]
    if not nonzero:
        return [_special(v, nan) if not math.isfinite(v) else "0" for v in values]
    parts = [_mantissa(v, digits) for v in nonzero]
    rgt = max(max(0, sig - 1 - exp) for sig, exp in parts)
    # R's formatReal: the sign counts in the fixed width of the value that has it, in the
    # scientific width of the column
    left = max((v < 0) + max(1, exp + 1) for v, (_, exp) in zip(nonzero, parts))
    neg = any(v < 0 for v in nonzero)
    sig_max = max(sig for sig, _ in parts)
    fixed_width = left + (rgt > 0) + rgt
    sci_width = neg + sig_max + (sig_max > 1) + (5 if any(abs(e) >= 100 for _, e in parts) else 4)
    # R writes a signed zero as 0
    if fixed_width <= sci_width:
        return [f"{v + 0.0:.{rgt}f}" if math.isfinite(v) else _special(v, nan) for v in values]
    return [f"{v + 0.0:.{sig_max - 1}e}" if math.isfinite(v) else _special(v, nan) for v in values]


def r_format(values: Iterable[float] | np.ndarray, digits: int = DIGITS) -> list[str]:
    """Numbers as R's ``format(x, digits = digits)`` writes a vector: every value to at least
    ``digits`` significant digits with the decimals the most demanding one needs (trailing zeros
    of each left out first), or all in scientific notation when that is narrower; ``NaN``, ``NA``
    (None), ``Inf`` and ``-Inf`` as R writes them.

    Parameters
    ----------
    values : iterable of float
    digits : int
        R's ``digits`` (default :data:`DIGITS`).

    Returns
    -------
    list of str

    Examples
    --------
    >>> r_format([10.467, 251.405]), r_format([1.62875, 0.16998]), r_format([0.0, 1.5])
    (['10.47', '251.41'], ['1.629', '0.170'], ['0.0', '1.5'])
    >>> r_format([2.03e-150, 0.5], digits=3), r_format([float("nan"), 2.0])
    (['2.03e-150', '5.00e-01'], ['NaN', '2'])
    """
    x = [math.nan if v is None else float(v) for v in values]
    return _format_numbers(x, digits, nan="NaN")


def _format_matrix(columns: Sequence[Sequence[float]], digits: int) -> list[list[str]]:
    """R's ``format`` of a matrix: one format for all its cells, cut back into columns."""
    flat = [v for col in columns for v in col]
    cells = _padded(_format_numbers(flat, digits, nan="NaN"))
    out, k = [], 0
    for col in columns:
        out.append(cells[k:k + len(col)])
        k += len(col)
    return out


def _r_round(x: float, d: int) -> float:
    """R's ``round(x, d)`` (to even only on exact ties of the decimal expansion)."""
    if not math.isfinite(x):
        return x
    return float(np.round(x, d)) + 0.0  # no signed zero


def _format_pval_r(pv: Sequence[float], digits: int, eps: float = 2.220446049250313e-16) -> list[str]:
    """R's ``format.pval(pv, digits, eps)`` (printCoefmat's p-value column: ``< 2e-16``)."""
    out = ["NA" if math.isnan(v) else "" for v in pv]
    keep = [i for i, v in enumerate(pv) if not math.isnan(v)]
    small = [i for i in keep if pv[i] < eps]
    rest = [i for i in keep if pv[i] >= eps]
    expo = {i: math.floor(math.log10(pv[i] if pv[i] > 0 else 1e-50)) for i in rest}
    fixp = [i for i in rest if expo[i] >= -3 or (expo[i] == -4 and digits > 1)]
    sci = [i for i in rest if i not in fixp]
    for group in (fixp, sci):
        for i, text in zip(group, _format_numbers([pv[i] for i in group], digits, nan="NaN")):
            out[i] = text
    if small:
        d = max(1, digits - 2)
        if rest:
            nc = max(len(out[i]) for i in rest)
            if d > 1 and d + 6 > nc:
                d = max(1, nc - 7)
            sep = "" if d == 1 and nc <= 6 else " "
        else:
            sep = "" if d == 1 else " "
        for i in small:
            out[i] = "<" + sep + _format_numbers([eps], d)[0]
    return out


def format_coefmat(table: pd.DataFrame, digits: int = DIGITS, cs: Sequence[str] | None = None,
                   statistic: str | None = "statistic", p: str | None = "p_value") -> pd.DataFrame:
    """A coefficient table's cells as R's ``printCoefmat(x, digits)`` formats them.

    The estimates and their standard errors are rounded and formatted together (as one matrix)
    so that every one keeps at least ``digits`` significant digits, the statistic is rounded to
    ``digits - 1`` decimals, every other numeric column (such as ``df``) is formatted on its own
    with ``digits``, and p-values as ``format.pval(p, digits - 1)`` (``< 2e-16`` below R's machine
    epsilon). This is what ``summary()`` of lme4, lmerTest, ordinal and glmmTMB print.

    Parameters
    ----------
    table : DataFrame
        The coefficient table, one row a coefficient.
    digits : int
        R's ``digits`` (lme4's summary prints with 4, :data:`DIGITS`).
    cs : sequence of str, optional
        The columns of estimates and SEs (printCoefmat's ``cs.ind``); by default, as R's, every
        numeric column before the statistic (lmerTest's ``df`` is one of them, so it prints
        ``17.000`` beside ``10.467``).
    statistic, p : str or None
        The column of the test statistic (``tst.ind``) and of the p-values, if any.

    Returns
    -------
    DataFrame
        The numeric columns of ``table`` (non-numeric ones left out), every cell a string.

    Examples
    --------
    >>> t = pd.DataFrame({"estimate": [251.4051, 10.46729], "se": [6.824597, 1.545790],
    ...                   "statistic": [36.838, 6.771], "p_value": [1e-20, 3.26e-6]})
    >>> format_coefmat(t).values.tolist()  # estimates and SEs padded to one width, as R's matrix
    [['251.405', '  6.825', '36.838', '< 2e-16'], [' 10.467', '  1.546', '6.771', '3.26e-06']]
    """
    num = [c for c in table.columns if pd.api.types.is_numeric_dtype(table[c])
           and not pd.api.types.is_bool_dtype(table[c])]
    x = {c: table[c].to_numpy(dtype=float) for c in num}
    dig_tst = max(1, min(5, digits - 1))
    cells: dict[str, list[str]] = {}
    if cs is None:
        cs = num[:num.index(statistic)] if statistic in x else [c for c in num if c != p]
    cs = [c for c in cs if c in x]
    acs = [abs(v) for c in cs for v in x[c] if math.isfinite(v) and v != 0]
    if cs:
        digmin = [1 + math.floor(math.log10(min(acs))), 1 + math.floor(math.log10(max(acs)))] if acs else [1, 1]
        dec = max(1, digits - digmin[0], digits - digmin[1])
        for c, col in zip(cs, _format_matrix([[_r_round(v, dec) for v in x[c]] for c in cs], digits)):
            cells[c] = col
    if statistic in x:
        cells[statistic] = _format_numbers([_r_round(v, dig_tst) for v in x[statistic]], digits, nan="NaN")
    for c in num:
        if c not in cells and c != p:
            cells[c] = _format_numbers(list(x[c]), digits, nan="NaN")
    # a non-zero value printed as zero (or the reverse) is printed again with one digit fewer
    redo = [(c, i) for c in num if c not in (statistic, p) for i, v in enumerate(x[c])
            if math.isfinite(v) and (v == 0) != (_as_float(cells[c][i]) == 0)]
    if redo:
        for (c, i), text in zip(redo, _format_numbers([x[c][i] for c, i in redo], max(1, digits - 1))):
            cells[c][i] = text
    if p in x:
        cells[p] = _format_pval_r(list(x[p]), dig_tst)
    for c in num:  # a missing value prints as R's na.print
        cells[c] = ["NA" if math.isnan(v) else cells[c][i] for i, v in enumerate(x[c])]
    return pd.DataFrame({c: cells[c] for c in num}, index=table.index, dtype=object)


def named_values(names: list[str], cells: list[str], width: int = 80, gap: int = 2) -> list[str]:
    """A named vector as R prints it: one common column width, names over values, right-aligned,
    ``gap`` spaces after each column, as many columns per line as fit in ``width`` (lme4's
    ``Fixed Effects:`` block of ``print(fit)``).

    Examples
    --------
    >>> named_values(["(Intercept)", "Days"], r_format([251.4051, 10.46729]))
    ['(Intercept)         Days  ', '     251.41        10.47  ']
    """
    if not names:
        return ["numeric(0)"]
    w = max(max(map(len, names)), max(map(len, cells)))
    per = max(1, width // (w + gap))
    out: list[str] = []
    for start in range(0, len(names), per):
        part = range(start, min(start + per, len(names)))
        out.append("".join(names[k].rjust(w) + " " * gap for k in part))
        out.append("".join(cells[k].rjust(w) + " " * gap for k in part))
    return out


def _padded(cells: list[str]) -> list[str]:
    """Cells padded on the left to one width, as R's ``format`` returns them."""
    width = max((len(c) for c in cells), default=0)
    return [c.rjust(width) for c in cells]


def _as_float(text: str) -> float:
    try:
        return float(text)
    except ValueError:
        return math.nan


def coefmat_lines(table: pd.DataFrame, head: Sequence[str], label: str = "term", digits: int = DIGITS,
                  stars: bool = True, **columns: str | None) -> list[str]:
    """The lines R prints for a coefficient table: printCoefmat's cells (:func:`format_coefmat`)
    under R's column names, the row names left-aligned, the significance stars and their legend.

    Parameters
    ----------
    table : DataFrame
        The coefficient table; ``label`` names its column of row names.
    head : sequence of str
        R's names of the numeric columns, in their order (``"Estimate", "Std. Error", ...``).
    label : str
        The column of row names.
    digits : int
        R's ``digits``.
    stars : bool
        Whether to add the stars (when the table has p-values) and the legend.
    **columns
        ``cs``, ``statistic`` and ``p`` of :func:`format_coefmat`.

    Returns
    -------
    list of str

    Examples
    --------
    >>> t = pd.DataFrame({"term": ["(Intercept)", "Days"], "estimate": [251.4051, 10.46729],
    ...                   "se": [6.824597, 1.545790], "statistic": [36.838, 6.771]})
    >>> print("\\n".join(coefmat_lines(t, ["Estimate", "Std. Error", "t value"], p=None)))
                Estimate Std. Error t value
    (Intercept)  251.405      6.825  36.838
    Days          10.467      1.546   6.771
    """
    cells = format_coefmat(table, digits=digits, **columns)
    rows = [[str(t), *row] for t, row in zip(table[label], cells.itertuples(index=False, name=None))]
    p = columns.get("p", "p_value")
    with_stars = stars and p is not None and p in cells.columns
    if with_stars:
        pv = table[p].to_numpy(dtype=float)
        marks = [significance_stars(v) for v in pv]
        with_stars = any(m for m in marks)
        rows = [r + [m] for r, m in zip(rows, marks)]
    lines = aligned_columns(rows, ["", *head] + ([""] if with_stars else []),
                            left=(0, len(head) + 1) if with_stars else 1)
    if with_stars:
        lines += ["---", SIGNIF_LEGEND]
    return lines


def varcorr_lines(varcorr: pd.DataFrame, digits: int = DIGITS,
                  comp: Sequence[str] = ("Variance", "Std.Dev."), indent: str = " ") -> list[str]:
    """lme4's print of ``VarCorr`` (``formatVC``): Groups, Name, the variances and standard
    deviations each formatted as one column with ``digits``, and the correlations of each term's
    effects rounded to ``max(2, digits - 2)`` decimals, lower triangle, columns left-aligned.

    Parameters
    ----------
    varcorr : DataFrame
        lme4's ``as.data.frame(VarCorr(fit))`` layout: ``group, var1, var2, variance, sd`` (rows
        with ``var2`` hold a covariance in ``variance`` and the correlation in ``sd``).
    digits : int
        R's ``digits``: 4 in ``summary()`` and ``print(fit)`` (:data:`DIGITS`), 5 in
        ``print(VarCorr(fit))``.
    comp : sequence of str
        The columns to show, ``"Variance"`` and/or ``"Std.Dev."``.
    indent : str
        Text before each line (lme4 prints one space).

    Returns
    -------
    list of str

    Examples
    --------
    >>> vc = pd.DataFrame({"group": ["herd"], "var1": ["(Intercept)"], "var2": [""],
    ...                    "variance": [0.41225], "sd": [0.64207]})
    >>> print("\\n".join(line.rstrip() for line in varcorr_lines(vc)))
     Groups Name        Variance Std.Dev.
     herd   (Intercept) 0.4123   0.6421
    """
    var2 = varcorr["var2"].fillna("").astype(str) if "var2" in varcorr else pd.Series([""] * len(varcorr))
    var_rows = varcorr[(var2 == "").to_numpy()]
    variances = _padded(r_format(var_rows["variance"].to_numpy(dtype=float), digits))
    sds = _padded(r_format(var_rows["sd"].to_numpy(dtype=float), digits))
    dig = max(2, digits - 2)
    rows: list[list[str]] = []
    ncorr, k = 0, 0
    for group, vc in varcorr.groupby("group", sort=False):
        v2 = vc["var2"].fillna("").astype(str) if "var2" in vc else pd.Series([""] * len(vc), index=vc.index)
        var = vc[(v2 == "").to_numpy()]
        cor = vc[(v2 != "").to_numpy()]
        names = list(var["var1"])
        for i, name in enumerate(names):
            cors = []
            for j in range(i):
                hit = cor[(cor["var1"] == names[j]) & (cor["var2"] == name)]
                cors.append(f"{_r_round(float(hit['sd'].iloc[0]), dig):.{dig}f}" if len(hit) else "")
            ncorr = max(ncorr, len(cors))
            shown = [variances[k]] * ("Variance" in comp) + [sds[k]] * ("Std.Dev." in comp)
            rows.append([str(group) if i == 0 else "", str(name), *shown, *cors])
            k += 1
    head = ["Groups", "Name", *(c for c in ("Variance", "Std.Dev.") if c in comp)]
    ncol = len(head) + ncorr
    if ncorr:
        head += ["Corr"]
    rows = [r + [""] * (ncol - len(r)) for r in rows]
    ncomp = len(head) - 2 - bool(ncorr)
    corr_width = max([len(r[c]) for r in rows for c in range(2 + ncomp, ncol)] or [0])
    rows = [r[:2 + ncomp] + [v.rjust(corr_width) if v else v for v in r[2 + ncomp:]] for r in rows]
    widths = [max([len(head[c]) if c < len(head) else 0] + [len(r[c]) for r in rows]) for c in range(ncol)]
    # numbers are right-justified among themselves, as format() pads them, then left-aligned
    out = [indent + " ".join((head[c] if c < len(head) else "").ljust(widths[c]) for c in range(ncol))]
    out += [indent + " ".join(r[c].ljust(widths[c]) for c in range(ncol)) for r in rows]
    return out  # every column padded to its width, trailing spaces too, as R prints a matrix


def _special(v: float, nan: str = "") -> str:
    if math.isnan(v):
        return nan
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
            return [format_p(v, P_DIGITS) for v in floats]
        if str(name).lower() in _RHAT_NAMES:  # posterior's summarise_draws: r-hat to 3 decimals
            return ["" if math.isnan(v) else _special(v) if math.isinf(v) else f"{v:.3f}" for v in floats]
        if str(name).lower() in _ESS_NAMES:  # effective sample sizes as whole numbers
            return ["" if math.isnan(v) else _special(v) if math.isinf(v) else f"{v:.0f}" for v in floats]
        if str(name) == "statistic":  # printCoefmat: rounded to digits - 1 decimals first
            floats = [_r_round(v, max(1, min(5, digits - 1))) for v in floats]
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


def format_table(table: pd.DataFrame | SupportsFrame, digits: int = DIGITS) -> pd.DataFrame:
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
    ['104', '3080', '0.5123', '<0.001', '4e-04']

    Estimates print beside their SEs as ``printCoefmat`` prints them (sleepstudy's slope):

    >>> format_table(pd.DataFrame({"estimate": [251.4051, 10.46729], "se": [6.824597, 1.54579]})).values.tolist()
    [['251.405', '6.825'], ['10.467', '1.546']]
    """
    df = _as_frame(table)
    # by position: a table may repeat a column name
    out = pd.DataFrame({i: _format_column(col, df.iloc[:, i].tolist(), digits) for i, col in enumerate(df.columns)},
                       index=df.index, columns=range(df.shape[1]), dtype=object)
    names = [str(c) for c in df.columns]
    if "estimate" in names and "se" in names and names.count("estimate") == names.count("se") == 1:
        pair = df.iloc[:, [names.index("estimate"), names.index("se")]]
        if all(pd.api.types.is_float_dtype(pair.iloc[:, k]) for k in (0, 1)):
            cells = format_coefmat(pair.set_axis(["estimate", "se"], axis=1), digits=digits, cs=("estimate", "se"),
                                   statistic=None, p=None)
            for k, name in enumerate(("estimate", "se")):
                out.iloc[:, names.index(name)] = [c.strip() if c != "NA" else "" for c in cells.iloc[:, k]]
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


_MD_TAG = re.compile(r"<(?=[A-Za-z/!?])")  # what could open an HTML tag, comment or declaration
_MD_ENTITY = re.compile(r"&(?=#[0-9]+;|#[xX][0-9A-Fa-f]+;|[A-Za-z][A-Za-z0-9]*;)")  # what could be an entity


def markdown_text(text: object) -> str:
    """Text as one cell of a GitHub-flavoured Markdown table, escaped only where Markdown needs it.

    Backslash escapes (CommonMark's escaped punctuation, shown as the character itself) keep
    every cell literal: ``|`` (no column break), ``\\``, backticks, ``*``, ``_`` at a word
    boundary, ``[``, ``]`` and ``$`` (no code span, emphasis, link or math), a ``<`` that could open
    an HTML tag or comment (``<script>``, ``</b>``, ``<!--``) and an ``&`` that could start an entity
    (``&amp;``); every line break becomes ``<br>`` (no row is injected). A ``<`` before a number
    or a space stays as it is, so p-values read ``<0.001``, never ``&lt;0.001``.

    Examples
    --------
    >>> print(markdown_text("<script>a|b\\nc"))
    \\<script>a\\|b<br>c
    >>> markdown_text("<0.001"), markdown_text("x < 3 & y")
    ('<0.001', 'x < 3 & y')
    """
    s = re.sub(r"([\\|`*\[\]$])", r"\\\1", str(text))
    s = re.sub(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])", r"\\_", s)
    s = _MD_TAG.sub(r"\\<", s)
    s = _MD_ENTITY.sub(r"\\&", s)
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


def to_latex(table: pd.DataFrame | SupportsFrame, caption: str | None = None, label: str | None = None,
             digits: int = LATEX_DIGITS,
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


def to_markdown(table: pd.DataFrame | SupportsFrame, digits: int = DIGITS, columns: Iterable[str] | None = None) -> str:
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
    | a\\|b  |   0.5123 |
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


def to_gt(table: pd.DataFrame | SupportsFrame, digits: int = DIGITS, title: str | None = None,
          subtitle: Sequence[str] = (), notes: Sequence[str] = ()) -> GT:
    """Render a result table as a great_tables ``GT`` table (notebooks, HTML, images).

    Cells are formatted by :func:`format_table`, so the numbers read as in every other form of the
    result (R's significant digits, p-values as ``<0.001``); number columns are right-aligned.
    great_tables is optional (``pip install great_tables``, or the ``gt`` extra).

    Parameters
    ----------
    table : DataFrame or evalmix result
    digits : int
        Significant digits.
    title : str, optional
        The table's title.
    subtitle : sequence of str
        Lines under the title (a result's scale and interval).
    notes : sequence of str
        Source notes under the table.

    Returns
    -------
    great_tables.GT

    Raises
    ------
    ImportError
        great_tables is not installed (the message says how to install it).

    Examples
    --------
    >>> import pandas as pd
    >>> gt = to_gt(pd.DataFrame({"model": ["a"], "estimate": [0.51234], "p_value": [1e-9]}),
    ...            title="Accuracy")  # doctest: +SKIP
    >>> gt._tbl_data.iloc[0].tolist()  # doctest: +SKIP
    ['a', '0.5123', '<0.001']
    """
    try:
        import great_tables
    except ImportError as exc:
        raise ImportError("to_gt() needs great_tables: pip install great_tables "
                          "(or pip install 'evalmix[gt]')") from exc
    frame = table if isinstance(table, pd.DataFrame) else table.to_frame()
    numeric = [str(c) for c in frame.columns if pd.api.types.is_numeric_dtype(frame[c])]
    shown = format_table(frame, digits=digits).reset_index(drop=True)
    shown.columns = [str(c) for c in shown.columns]
    gt = great_tables.GT(shown)
    if title is not None or subtitle:
        gt = gt.tab_header(title=title or "", subtitle="; ".join(subtitle) or None)
    if numeric:
        gt = gt.cols_align("right", columns=numeric)
    for note in notes:
        gt = gt.tab_source_note(note)
    return gt


def to_html(table: pd.DataFrame | SupportsFrame, digits: int = DIGITS, caption: str | None = None,
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


#: The widest line a result prints (``repr``, ``summary()``): longer lines are wrapped, wider
#: tables are split into blocks of columns.
REPR_WIDTH = 100


def wrap_lines(lines: Iterable[str], width: int = REPR_WIDTH) -> list[str]:
    """Lines of prose at most ``width`` characters wide: a longer line is broken between words,
    its continuation indented by two spaces (tables are split by :func:`to_text` instead).

    Examples
    --------
    >>> wrap_lines(["short", "a " * 30], width=20)
    ['short', 'a a a a a a a a a a', '  a a a a a a a a a', '  a a a a a a a a a', '  a a']
    """
    out: list[str] = []
    for line in lines:
        if len(line) <= width:
            out.append(line)
            continue
        indent = line[:len(line) - len(line.lstrip())]
        out += textwrap.wrap(line, width=width, initial_indent="", subsequent_indent=indent + "  ",
                             break_on_hyphens=False, break_long_words=True) or [""]
    return out


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def _terminal_text(text: str) -> str:
    """A cell for a terminal: control characters (escape sequences, line breaks) as ``\\n``, ``\\x1b``."""
    return _CONTROL.sub(lambda m: {"\n": "\\n", "\t": "\\t", "\r": "\\r"}.get(m.group(),
                                                                              f"\\x{ord(m.group()):02x}"),
                        text)


def to_text(table: pd.DataFrame | SupportsFrame, digits: int = DIGITS, width: int | None = 100,
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

