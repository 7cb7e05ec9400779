"""The printout of ``summary()`` of every maximum-likelihood fit, in lme4's ``print(summary(fit))``
layout: title and family, formula, the fit criteria, scaled residuals, random effects and group
sizes, the coefficient tables, and the optimizer's report.

:meth:`evalmix.MixedResult.summary` assembles a :class:`MixedSummary` from the parts each engine
supplies through its hooks (what differs: the title, the criteria, the coefficient blocks); the
layout is written here once, so the printouts of glmer, lmer, clmm and glmmtmb agree.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..core import tables
from ..core.result import Summary

__all__ = ["CoefBlock", "MixedSummary", "correlation_lines", "named_row", "r_abbreviate", "r_table",
           "scaled_residual_lines", "zapsmall"]

#: lme4 prints the correlation of the fixed effects up to this many (``cor.max``)
COR_MAX = 12


@dataclass(frozen=True)
class CoefBlock:
    """One coefficient table of the printout: its heading (``"Fixed effects:"``), the table
    (``term``, ``estimate``, ``se`` [, ``df``], ``statistic`` [, ``p_value``]) and R's column
    names."""

    title: str
    table: pd.DataFrame = field(repr=False)
    head: tuple[str, ...]


def zapsmall(x: Sequence[float], digits: int) -> np.ndarray:
    """R's ``zapsmall``: round to ``digits`` significant digits of the largest magnitude.

    Examples
    --------
    >>> zapsmall([5.17930123, 0.023101234], 6).tolist()
    [5.1793, 0.0231]
    """
    v = np.asarray(x, dtype=float)
    finite = v[np.isfinite(v)]
    mx = float(np.max(np.abs(finite))) if finite.size else 0.0
    return np.round(v, max(0, digits - math.ceil(math.log10(mx))) if mx > 0 else digits)


def named_row(names: Sequence[str], cells: Sequence[str]) -> list[str]:
    """A named vector as R prints it: every column as wide as the widest name or cell, right
    aligned, each followed by a space.

    Examples
    --------
    >>> named_row(["AIC", "df.resid"], ["194.1", "51"])
    ['     AIC df.resid ', '   194.1       51 ']
    """
    w = max(len(s) for s in [*names, *cells])
    return ["".join(s.rjust(w) + " " for s in names), "".join(s.rjust(w) + " " for s in cells)]


def r_table(names: Sequence[str], cells: Sequence[str]) -> list[str]:
    """A one-row data frame as ordinal's summary prints its fit line: left-aligned columns, each
    as wide as its name or cell.

    Examples
    --------
    >>> r_table(["link", "nobs"], ["logit", "72"])
    [' link  nobs', ' logit 72  ']
    """
    w = [max(len(h), len(c)) for h, c in zip(names, cells)]
    return [" " + " ".join(h.ljust(k) for h, k in zip(names, w)),
            " " + " ".join(c.ljust(k) for c, k in zip(cells, w))]


def scaled_residual_lines(quantiles: Sequence[float]) -> list[str]:
    """lme4's ``Scaled residuals:`` block: the five quantiles, zapped to 5 and printed to 4
    significant digits (its ``digits = max(3, getOption("digits") - 3)``).

    Examples
    --------
    >>> print("\\n".join(scaled_residual_lines([-3.95357, -0.463396, 0.0231, 0.463395, 5.17931])))
    Scaled residuals:
        Min      1Q  Median      3Q     Max
    -3.9536 -0.4634  0.0231  0.4634  5.1793
    """
    cells = tables.r_format(zapsmall(quantiles, 5), 4)
    return ["Scaled residuals:", *(ln.rstrip() for ln in named_row(["Min", "1Q", "Median", "3Q", "Max"], cells))]


def r_abbreviate(name: str, minlength: int) -> str:
    """R's ``abbreviate(name, minlength)``: spaces, then lower-case vowels, then lower-case
    letters dropped from the right (never the first character) until it is short enough.

    Examples
    --------
    >>> [r_abbreviate(n, 6) for n in ["(Intercept)", "period2", "modeljudge-B", "poly(dose, 2)1"]]
    ['(Intr)', 'perid2', 'mdlj-B', 'p(,2)1']
    """
    s = name.strip()
    for drop in (" ", "aeiou", "abcdefghijklmnopqrstuvwxyz"):
        i = len(s) - 1
        while len(s) > minlength and i > 0:
            if s[i] in drop:
                s = s[:i] + s[i + 1:]
            i -= 1
    return s


def correlation_lines(vcov: pd.DataFrame) -> list[str]:
    """lme4's ``Correlation of Fixed Effects:`` block: the lower triangle to 3 decimals, rows
    named by ``abbreviate(, 11)`` and columns by ``abbreviate(, 6)``; empty for one effect, and
    lme4's note instead of the block for more than :data:`COR_MAX` (naming ``vcov`` as the way to it).

    Examples
    --------
    >>> v = pd.DataFrame([[4.0, -0.5], [-0.5, 1.0]], index=["(Intercept)", "Days"],
    ...                  columns=["(Intercept)", "Days"])
    >>> print("\\n".join(correlation_lines(v)))
    Correlation of Fixed Effects:
         (Intr)
    Days -0.250
    """
    names = [str(n) for n in vcov.index]
    p = len(names)
    if p > COR_MAX:  # lme4's words; its remedy, print(..., correlation=TRUE) or vcov(), is fit.vcov here
        return [f"Correlation matrix not shown by default, as p = {p} > {COR_MAX}.",
                "Use fit.vcov if you need it"]
    if p <= 1:
        return []
    V = vcov.to_numpy(dtype=float)
    sd = np.sqrt(np.diag(V))
    with np.errstate(invalid="ignore", divide="ignore"):
        C = np.round(V / np.outer(sd, sd), 3) + 0.0
    if not np.all(np.isfinite(C)):  # no standard errors (a separated fit's limit)
        return []
    cells = [[f"{C[i, j]:.3f}" if j < i else "" for j in range(p - 1)] for i in range(1, p)]
    width = max(len(c) for row in cells for c in row if c)
    cells = [[c.rjust(width) if c else "" for c in row] for row in cells]
    rows = [r_abbreviate(n, 11) for n in names[1:]]
    cols = [r_abbreviate(n, 6) for n in names[:-1]]
    rw = max(len(r) for r in rows)
    cw = [max(len(cols[j]), width) for j in range(p - 1)]
    lines = [" " * rw + " " + " ".join(c.ljust(w) for c, w in zip(cols, cw))]
    lines += [r.ljust(rw) + " " + " ".join(c.ljust(w) for c, w in zip(row, cw)) for r, row in zip(rows, cells)]
    return ["Correlation of Fixed Effects:", *(ln.rstrip() for ln in lines)]


class MixedSummary(Summary):
    """What ``summary()`` of a maximum-likelihood fit returns: the :class:`~evalmix.core.result.Summary`
    tables (``Fixed effects``, ``Random effects``, ...), header and notes, printed in lme4's
    ``print(summary(fit))`` layout (:attr:`text`)."""

    __slots__ = ("_text",)
    _text: str

    def __init__(self, title: str, header: Sequence[str], tables_: Sequence[tuple[str, pd.DataFrame]],
                 notes: Sequence[str], text: str):
        super().__init__(title, header, tables_, notes)
        object.__setattr__(self, "_text", text)

    @property
    def text(self) -> str:
        """The printout, as R prints ``summary(fit)``."""
        return self._text

    def __str__(self) -> str:
        return self._text

    __repr__ = __str__


def layout(*, title: Sequence[str], formula_line: str, criteria: Sequence[str],
           residuals: Sequence[float] | None, random_heading: Sequence[str], varcorr: pd.DataFrame,
           groups_line: str, extra: Sequence[str], blocks: Sequence[CoefBlock],
           correlation: Sequence[str], closing: Sequence[str]) -> str:
    """The lines of the printout, in lme4's order (see the module's docstring)."""
    lines = [*title, formula_line, ""]
    if criteria:
        lines += [*(ln.rstrip() for ln in criteria), ""]
    if residuals is not None:
        lines += [*scaled_residual_lines(residuals), ""]
    lines += [*random_heading, *tables.varcorr_lines(varcorr), groups_line]
    if extra:
        lines += ["", *extra]
    for b in blocks:
        cols = ["term", "estimate", "se"] + (["df"] if "df" in b.head else []) + ["statistic"]
        with_p = any(h.startswith("Pr(") for h in b.head)
        if with_p:
            cols.append("p_value")
        lines += ["", b.title, *tables.coefmat_lines(b.table[cols], list(b.head),
                                                     p="p_value" if with_p else None)]
    if correlation:
        lines += ["", *correlation]
    if closing:
        lines += ["", *tables.wrap_lines(closing)]
    return "\n".join(ln.rstrip() for ln in lines)
