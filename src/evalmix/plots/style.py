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
from collections.abc import Callable, Hashable, Iterator, Sequence
from typing import Any, TypeVar

import pandas as pd

__all__ = ["COLUMN_WIDTH", "OKABE_ITO", "PAGE_WIDTH", "RC", "colour", "colours", "figure_text",
           "first_column", "marker", "paper_style", "styled"]

#: Okabe & Ito (2008) colour-blind-safe palette without black (reserved for references); yellow
#: last, as it is the weakest on white.
OKABE_ITO: tuple[str, ...] = ("#0072B2", "#E69F00", "#009E73", "#D55E00", "#56B4E9", "#CC79A7",
                              "#999999", "#F0E442")
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
    "figure.dpi": 100, "figure.constrained_layout.use": True, "savefig.dpi": 200,
    "pdf.fonttype": 42, "ps.fonttype": 42, "svg.fonttype": "none", "image.cmap": "cividis",
}

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


def styled(func: F) -> F:
    """Decorator: run a plotting function inside :func:`paper_style`."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        with paper_style():
            return func(*args, **kwargs)

    return wrapper  # type: ignore[return-value]


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
