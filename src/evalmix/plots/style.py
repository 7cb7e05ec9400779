"""One look for every evalmix figure: palette, sizes and matplotlib settings.

- Colours: the Okabe-Ito palette (distinguishable under the common colour-vision deficiencies);
  black is kept for reference lines and averages, so it never doubles as a category colour.  Beyond
  eight categories colours repeat with a different marker (:func:`marker`).
- Sizes: :data:`COLUMN_WIDTH` (one column of a two-column paper) and :data:`PAGE_WIDTH` (full
  width), in inches; heights grow with the number of rows shown.
- Legends go outside the data area (``fig.legend(loc="outside ...")`` under constrained layout) and
  never take more than a narrow strip.

:func:`paper_style` is the context every plotting function draws in; use it for your own figures
to match.
"""

from __future__ import annotations

import contextlib
import functools
import os
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import numpy as np
import pandas as pd

from ..core.files import atomic_path, is_path

__all__ = ["COLUMN_WIDTH", "MIN_CONTRAST", "OKABE_ITO", "PAGE_WIDTH", "RC", "SAVE_RC", "colour", "colours",
           "contrast_on_white", "figure_text", "first_column", "fit_label", "hide_unused", "legend_columns",
           "log_ticks",
           "marker", "p_value_label", "panel_columns", "panel_figure_width",
           "panel_title_width", "paper_style", "shared_xlabel", "styled", "text_width", "wrap"]

#: Okabe & Ito (2008) colour-blind-safe palette without black (reserved for references); its yellow
#: (#F0E442, contrast 1.3:1 on white, a line that cannot be seen on paper) darkened to a mustard
#: (#A89200, 3.1:1) and kept last. Every colour has at least :data:`MIN_CONTRAST` against white.
OKABE_ITO: tuple[str, ...] = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7",
                              "#999999", "#A89200")
#: The least contrast (WCAG ratio against white) of a data series' colour, as drawn (alpha blended).
MIN_CONTRAST = 2.0
_MARKERS = ("o", "s", "^", "D", "v", "P", "X", "*")

#: Width of one column of a two-column paper, inches.
COLUMN_WIDTH = 3.5
#: Width of a full page (both columns), inches.
PAGE_WIDTH = 7.2

#: matplotlib settings of :func:`paper_style`.
RC: dict[str, Any] = {
    "font.size": 8, "axes.titlesize": 8, "axes.labelsize": 8, "xtick.labelsize": 7,
    "ytick.labelsize": 7, "legend.fontsize": 7, "legend.title_fontsize": 7, "legend.frameon": False,
    "axes.spines.top": False, "axes.spines.right": False, "axes.grid": False,
    "axes.titlelocation": "left", "lines.linewidth": 1.2, "lines.markersize": 4,
    "figure.dpi": 100, "figure.constrained_layout.use": True, "savefig.dpi": 300,
    "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none", "image.cmap": "cividis",
}

#: What a figure is saved with wherever it is saved: 300 dpi and TrueType fonts in PDF and PS (a
#: journal's checks refuse the Type 3 fonts of matplotlib's default).
SAVE_RC: dict[str, Any] = {k: RC[k] for k in ("savefig.dpi", "pdf.fonttype", "ps.fonttype", "svg.fonttype")}

if TYPE_CHECKING:
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure

F = TypeVar("F", bound=Callable[..., Any])


def colour(i: int) -> str:
    """The ``i``-th category colour (cycles after eight).

    Examples
    --------
    >>> colour(0), colour(8)
    ('#0072B2', '#0072B2')
    """
    return OKABE_ITO[i % len(OKABE_ITO)]


def marker(i: int) -> str:
    """Marker of the ``i``-th category: circles for the first eight, then a new shape per cycle.

    Examples
    --------
    >>> marker(0), marker(8)
    ('o', 's')
    """
    return _MARKERS[(i // len(OKABE_ITO)) % len(_MARKERS)]


def colours(levels: Sequence[Hashable]) -> dict[Hashable, str]:
    """Colour of each level, in the order given.

    Examples
    --------
    >>> colours(["EN", "ES"])
    {'EN': '#0072B2', 'ES': '#E69F00'}
    """
    return {lv: colour(i) for i, lv in enumerate(levels)}


@contextlib.contextmanager
def paper_style() -> Iterator[None]:
    """Context in which figures are drawn with evalmix's settings (:data:`RC`, the palette).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> with paper_style():
    ...     fig, ax = plt.subplots(figsize=(COLUMN_WIDTH, 2))
    >>> float(fig.get_figwidth())
    3.5
    """
    import matplotlib as mpl
    from cycler import cycler

    # matplotlib types rc keys as a Literal of rcParams names; RC's keys are plain str
    with mpl.rc_context(RC | {"axes.prop_cycle": cycler(color=list(OKABE_ITO))}):  # type: ignore[arg-type]
        yield


def figure_text(value: object) -> str:
    """A data label (model name, level, slice value) as matplotlib draws it literally.

    matplotlib reads text between two ``$`` as mathtext, so a model called ``$x$`` would be typeset
    as math and one called ``$\\bad$`` would make saving the figure fail; every ``$`` is escaped
    (matplotlib shows ``\\$`` as a plain dollar sign).  Labels evalmix writes itself stay as they
    are.

    Examples
    --------
    >>> print(figure_text("$x$ model"))
    \\$x\\$ model
    """
    return str(value).replace("$", r"\$")


class _SaveInStyle:
    """A figure's ``savefig`` that applies :data:`SAVE_RC`: the figure is saved long after the
    plotting function left :func:`paper_style`, under the caller's settings.  A file name is
    written atomically (:func:`evalmix.core.files.atomic_path`): an interrupted save leaves the
    previous file as it was."""

    def __init__(self, save: Callable[..., Any]) -> None:
        self.save = save

    def __call__(self, fname: Any, *args: Any, **kwargs: Any) -> Any:
        import matplotlib as mpl

        with mpl.rc_context(SAVE_RC):  # type: ignore[arg-type]  # rc keys typed as Literal
            if not is_path(fname):  # an open file or buffer: the caller owns it
                return self.save(fname, *args, **kwargs)
            target = os.fspath(fname)
            if kwargs.get("format") is None:
                # as matplotlib names the file: its suffix gives the format, else the default
                # format is appended to the name
                ext = os.path.splitext(target)[1][1:]
                if not ext:
                    ext = str(mpl.rcParams["savefig.format"])
                    target = target.rstrip(".") + "." + ext
                kwargs["format"] = ext
            with atomic_path(target) as tmp:
                return self.save(tmp, *args, **kwargs)


def styled(func: F) -> F:
    """Decorator: run a plotting function inside :func:`paper_style`; the figure it returns saves
    at 300 dpi with TrueType fonts (:data:`SAVE_RC`) wherever it is saved."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with paper_style():
            fig = func(*args, **kwargs)
        save = getattr(fig, "savefig", None)
        if save is not None and not isinstance(save, _SaveInStyle):
            fig.savefig = _SaveInStyle(save)
        return fig

    return wrapper  # type: ignore[return-value]


def contrast_on_white(color: str | tuple[float, float, float] | tuple[float, float, float, float],
                      alpha: float | None = None) -> float:
    """WCAG contrast ratio of ``color`` drawn on white (``alpha`` blended), 1 (invisible) to 21.

    Examples
    --------
    >>> round(contrast_on_white("#F0E442"), 2), round(contrast_on_white("#0072B2"), 2)
    (1.32, 5.19)
    """
    from matplotlib.colors import to_rgba

    r, g, b, a = to_rgba(color)
    a = a if alpha is None else a * alpha
    rgb = [a * c + (1 - a) for c in (r, g, b)]
    lin = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb]
    lum = 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]
    return 1.05 / (lum + 0.05)


def log_ticks(axis: Axis, min_ticks: int = 3) -> None:
    """Label a log-scaled axis with at least ``min_ticks`` plain numbers (``0.2, 0.5, 1, 2``).

    matplotlib labels only the powers of ten, so an axis from 0.3 to 3 shows one label (``1``).
    Ticks are taken from 1-2-5 of each decade, or every digit when that is too few, or evenly
    spaced nice numbers over a range shorter than a factor of two; labels are ``%g``.

    Parameters
    ----------
    axis : matplotlib Axis
        ``ax.xaxis`` or ``ax.yaxis`` of a log-scaled axes.
    min_ticks : int
        The fewest labelled ticks.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots()
    >>> _ = ax.set_xscale("log"), ax.set_xlim(0.3, 3)
    >>> log_ticks(ax.xaxis)
    >>> fig.canvas.draw()
    >>> [t.get_text() for t in ax.get_xticklabels() if 0.3 <= t.get_position()[0] <= 3]
    ['0.5', '1', '2']
    """
    from matplotlib import ticker

    axis.set_major_locator(_LogTicks(min_ticks))
    axis.set_major_formatter(ticker.FuncFormatter(lambda v, _: f"{v:g}"))
    axis.set_minor_formatter(ticker.NullFormatter())


def _log_tick_values(vmin: float, vmax: float, min_ticks: int) -> list[float]:
    import math

    from matplotlib import ticker

    lo, hi = sorted((vmin, vmax))
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= 0:
        return [1.0]
    lo = lo if lo > 0 else hi / 1e3
    e0, e1 = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    subs_choices: tuple[tuple[float, ...], ...] = ((1.0,), (1.0, 2.0, 5.0), tuple(float(k) for k in range(1, 10)))
    for subs in subs_choices:
        ticks = [float(f"{s * 10.0 ** e:.12g}") for e in range(e0, e1 + 1) for s in subs]
        inside = [t for t in ticks if lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)]
        if len(inside) >= min_ticks:
            if subs == (1.0,) and len(inside) > 9:  # many decades: every k-th power of ten
                step = -(-len(inside) // 8)
                inside = inside[::step]
            return inside
    # a range under a factor of about two: evenly spaced nice numbers
    nice = ticker.MaxNLocator(nbins=min_ticks + 1, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi)
    return [float(t) for t in nice if t > 0 and lo * (1 - 1e-9) <= t <= hi * (1 + 1e-9)]


def _make_log_locator() -> Any:
    from matplotlib import ticker

    class LogTicks(ticker.Locator):
        """At least ``min_ticks`` ticks inside the view of a log axis (see :func:`log_ticks`)."""

        def __init__(self, min_ticks: int = 3) -> None:
            self.min_ticks = min_ticks

        def __call__(self) -> list[float]:
            if self.axis is None:
                return []
            vmin, vmax = self.axis.get_view_interval()
            return self.tick_values(vmin, vmax)

        def tick_values(self, vmin: float, vmax: float) -> list[float]:
            return _log_tick_values(vmin, vmax, self.min_ticks)

    return LogTicks


def _LogTicks(min_ticks: int) -> Any:  # noqa: N802 - a class made on first use (matplotlib is lazy)
    global _LOG_TICKS
    if _LOG_TICKS is None:
        _LOG_TICKS = _make_log_locator()
    return _LOG_TICKS(min_ticks)


_LOG_TICKS: Any = None


def fit_label(text: str, length: float, size: float | None = None, short: str | None = None) -> str:
    """An axis label broken into lines at most ``length`` inches long (0.6 at least), so that a y
    label never runs past its axes' height and off the canvas of a short figure; ``short`` is
    used instead when the full text would take more than two lines.

    Examples
    --------
    >>> fit_label("standard error of slice accuracy (proportion)", 1.5)
    'standard error of slice\\naccuracy (proportion)'
    >>> fit_label("rank (1 = best; ties side by side)", 0.8, short="rank (1 = best)")
    'rank (1 =\\nbest)'
    """
    fs = float(size if size is not None else RC["axes.labelsize"])
    out = wrap(text, max(0.6, length), fs)
    if short is not None and out.count("\n") > 1:
        out = wrap(short, max(0.6, length), fs)
    return out


def p_value_label(column: str, alpha: float, below: bool, adjust: str | None = None) -> str:
    """A legend entry for the contrasts that pass (or fail) a p-value threshold, saying whether the
    p-values were adjusted for multiplicity and by which method.

    Parameters
    ----------
    column : str
        The p-value column the threshold is applied to (``p_adjusted`` is adjusted).
    alpha : float
    below : bool
        The entry of ``p < alpha`` (True) or ``p ≥ alpha`` (False).
    adjust : str, optional
        The adjustment method (``holm``, ``tukey``...), when known.

    Examples
    --------
    >>> p_value_label("p_adjusted", 0.05, True, "holm"), p_value_label("p_value", 0.05, False)
    ('holm-adjusted p < 0.05', 'unadjusted p ≥ 0.05')
    """
    sign = "<" if below else "≥"
    if column == "p_adjusted" and adjust not in (None, "", "none"):
        kind = f"{adjust}-adjusted"
    elif column == "p_adjusted" and adjust is None:
        kind = "adjusted"
    else:
        kind = "unadjusted"
    return f"{kind} p {sign} {alpha:g}"


def text_width(labels: Sequence[object], size: float | None = None) -> float:
    """Width in inches of the widest of ``labels`` set in the style's font at ``size`` points
    (default: the tick label size), measured on the glyph outlines.

    Examples
    --------
    >>> text_width(["a much longer label"]) > text_width(["short"]) > 0
    True
    """
    fs = float(size if size is not None else RC["ytick.labelsize"])
    return max((_advance_width(str(t), fs) for t in labels if str(t)), default=0.0) / 72.0


@functools.lru_cache(maxsize=4096)
def _advance_width(text: str, size: float) -> float:
    """Width in points of ``text`` in the style's font: the glyphs' advances as the renderer lays
    them out (what constrained layout and the text's window extent use; a little wider than the
    ink, and 30x cheaper than tracing the outlines)."""
    import matplotlib as mpl
    from matplotlib.font_manager import FontProperties
    from matplotlib.textpath import TextToPath

    with mpl.rc_context(RC):  # type: ignore[arg-type]  # the style's font, whatever the caller's
        prop = FontProperties(size=size)
        # measured as drawn: a data label's '$' is escaped (figure_text), never read as mathtext
        width, _, _ = TextToPath().get_text_width_height_descent(
            figure_text(text), prop, ismath=False)
    return float(width)


def wrap(text: str, width: float, size: float | None = None) -> str:
    r"""``text`` broken into lines of at most ``width`` inches at ``size`` points, at the commas
    and spaces of a slice label ("language = EN, prompt = chain-of-thought-long").

    Examples
    --------
    >>> wrap("language = EN, prompt = chain-of-thought-long", 2.0)
    'language = EN,\nprompt = chain-of-thought-long'
    """
    fs = float(size if size is not None else RC["axes.titlesize"])
    lines: list[str] = []

    def fill(words: list[str]) -> None:  # greedy, onto the last line while it fits
        for w in words:
            if lines and text_width([f"{lines[-1]} {w}"], fs) <= width:
                lines[-1] = f"{lines[-1]} {w}"
            else:
                lines.append(w)

    for group in [g + "," for g in text.split(", ")[:-1]] + [text.split(", ")[-1]]:
        if lines and text_width([f"{lines[-1]} {group}"], fs) <= width:
            lines[-1] = f"{lines[-1]} {group}"
        elif text_width([group], fs) <= width:
            lines.append(group)
        else:
            lines.append("")
            fill(group.split(" "))
            if not lines[-1]:
                lines.pop()
    return "\n".join(line.strip() for line in lines)


def first_column(table: pd.DataFrame, *names: str) -> str:
    """The first of ``names`` that is a column of ``table`` (tables name intervals ``conf_low`` /
    ``conf_high`` and p-values ``p_value``; older ones ``lower`` / ``upper`` / ``p``).

    Examples
    --------
    >>> first_column(pd.DataFrame(columns=["lower"]), "conf_low", "lower")
    'lower'
    """
    for name in names:
        if name in table.columns:
            return name
    raise KeyError(f"none of the columns {names} in the table (it has {list(table.columns)})")


def panel_columns(n_panels: int, labels: Sequence[object], max_cols: int = 4, min_panel: float = 1.5
             ) -> tuple[int, float]:
    """Panels per row on a page for ``labels`` down the left (the widest sets the margin), and that
    margin in inches; the rows are filled evenly.

    Examples
    --------
    >>> panel_columns(4, ["a"])[0], panel_columns(4, ["a label of some forty characters or so, yes"])[0]
    (4, 2)
    """
    label_w = text_width(labels) + 0.15
    fit = max(1, int((PAGE_WIDTH - label_w - 0.2) // min_panel))
    ncol = max(1, min(n_panels, max_cols, fit))
    nrow = -(-n_panels // ncol)
    return -(-n_panels // nrow), label_w  # rows filled evenly: 2 x 2 rather than 3 + 1


def panel_figure_width(ncol: int, label_w: float) -> float:
    """A column wide for one panel with short labels, a page otherwise."""
    return COLUMN_WIDTH if ncol == 1 and label_w < 1.0 else PAGE_WIDTH


def panel_title_width(ncol: int, label_w: float) -> float:
    """Width left to a panel's title, inches (the labels take the first panel's left margin)."""
    return (panel_figure_width(ncol, label_w) - label_w - 0.2) / ncol - 0.1


def hide_unused(axes: np.ndarray, n: int) -> None:
    """Hide the panels of a grid beyond the first ``n`` (the grid is filled row by row)."""
    for ax in axes.ravel()[n:]:
        ax.set_visible(False)


def shared_xlabel(fig: Figure, axes: np.ndarray, n: int, label: str) -> None:
    """One axis label under all panels (a label per panel would run into its neighbour's); the
    lowest panel of each column shows its tick labels."""
    for j in range(axes.shape[1]):
        shown = [ax for ax in axes[:, j] if ax.get_visible()]
        if shown:
            shown[-1].xaxis.set_tick_params(labelbottom=True)
    if n == 1:
        axes[0, 0].set_xlabel(label)
    else:
        fig.supxlabel(label, fontsize=RC["axes.labelsize"])


def legend_columns(labels: Sequence[str], width: float, max_cols: int = 6) -> int:
    """Legend entries per row that fit ``width`` inches (marker, gap and the widest label).

    Examples
    --------
    >>> legend_columns(["EN", "ES"], 3.5)
    2
    """
    per = text_width(labels, RC["legend.fontsize"]) + 0.45
    return max(1, min(len(labels), max_cols, int(width // per)))
