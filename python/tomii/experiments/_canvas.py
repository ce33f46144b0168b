"""The plumbing of the sweep's figures: matplotlib figures made with the object API (never
pyplot), grids of panels, headings, legends, colours and the notes that say what a figure's
statistic is. Draws no data of its own.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .stats import Row, Summary, distinct, in_trial_order

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

#: The width of a panel in inches, and the resolution of the PNG files: at 100 % zoom a figure of
#: three panels a row is about 1,300 pixels wide, its 10-point text 15 pixels high.
_PANEL_WIDTH = 3.8
_DPI = 110


def _figure(width: float, height: float) -> Figure:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise ImportError(
            "tomii.experiments.plot needs matplotlib: pip install matplotlib"
        ) from None
    return Figure(figsize=(width, height), layout="constrained")


def _root(ax: Axes) -> Figure:
    from matplotlib.figure import Figure

    figure = ax.figure
    return figure if isinstance(figure, Figure) else figure.figure


def _axes(ax: Axes | None, size: tuple[float, float]) -> tuple[Figure, Axes, bool]:
    """The figure and axes to draw on, and whether this module made them."""
    if ax is not None:
        return _root(ax), ax, False
    fig = _figure(*size)
    return fig, fig.add_subplot(), True


def _panels(
    count: int, ax: Axes | None, *, height: float = 3.0, sharey: bool = False
) -> tuple[Figure, list[Axes], bool]:
    """`count` panels of `height` inches, at most three a row, each with its own x axis
    (`sharey`: one y axis, labelled on the left column only); a given `ax` serves as the only
    one."""
    if ax is not None:
        if count != 1:
            raise ValueError(f"the data holds {count} panels (graphs): pass graph=/where= for one")
        return _root(ax), [ax], False
    columns = min(count, 3)
    rows = math.ceil(count / columns)
    fig = _figure(max(5.0, 0.4 + _PANEL_WIDTH * columns), 1.4 + height * rows)
    grid = fig.subplots(rows, columns, squeeze=False, sharey=sharey)
    panels: list[Axes] = list(grid.ravel())
    for spare in panels[count:]:
        spare.set_visible(False)
    return fig, panels[:count], True


def _titles(fig: Figure, axes: list[Axes], owned: bool, text: str) -> None:
    """The heading: the figure's when it is ours, else prefixed to the one panel's title."""
    if owned:
        fig.suptitle(_wrap(text, int(fig.get_figwidth() * 10)))
    else:
        title = axes[0].get_title()
        axes[0].set_title(_wrap(text, 60) + ("\n" + title if title else ""))


def _wrap(text: str, width: int) -> str:
    """`text` with each line broken after spaces or commas to at most `width` characters."""
    lines = []
    for line in text.split("\n"):
        current = ""
        for token in re.split(r"(?<=[ ,])", line):
            if current and len(current) + len(token) > width:
                lines.append(current.rstrip())
                current = ""
            current += token
        lines.append(current)
    return "\n".join(lines)


def _legend(fig: Figure, ax: Axes, owned: bool, handles: list[Artist], title: str) -> None:
    if owned:
        columns = min(len(handles), 4)
        fig.legend(handles=handles, title=title, loc="outside lower center", ncols=columns)
    else:
        ax.legend(handles=handles, title=title, fontsize="small")


def _palette(rows: Sequence[Row], by: str, shown: list[Any]) -> dict[Any, Any]:
    """A colour for each of the values `shown`: the same in every figure of the same rows."""
    import matplotlib

    names = distinct(row.get(by) for row in in_trial_order(rows))
    cycle = matplotlib.colormaps["tab10" if len(names) <= 10 else "tab20"]
    return {name: cycle(names.index(name) % cycle.N) for name in shown}


def _patches(colours: Mapping[Any, Any]) -> list[Artist]:
    from matplotlib.patches import Patch

    return [Patch(color=colour, label=str(name)) for name, colour in colours.items()]


def _lines(colours: Mapping[Any, Any]) -> list[Artist]:
    from matplotlib.lines import Line2D

    return [
        Line2D([], [], color=colour, marker="o", label=str(name))
        for name, colour in colours.items()
    ]


def _log_scale(log: bool | None, values: Iterable[float]) -> bool:
    """`log`, or when None: whether the positive finite values span more than two decades."""
    if log is not None:
        return log
    positive = [v for v in values if math.isfinite(v) and v > 0]
    return bool(positive) and max(positive) / min(positive) > 100


def _heading(text: str, config: Mapping[str, Any]) -> str:
    knobs = ", ".join(f"{k}={v}" for k, v in config.items())
    return f"{text}\n{knobs}" if knobs else text


def _note(summary: Summary) -> str:
    counts = sorted({cell.n for cell in summary.cells.values() if cell.n})
    repeats = "no" if not counts else str(counts[0])
    if len(counts) > 1:
        repeats = f"{counts[0]}–{counts[-1]}"
    note = f"{repeats} repeats, {_interval_text(summary)}; {_excluded_text(summary.excluded)}"
    if summary.missing:
        note += f"; {summary.missing} without a value"
    return note


def _interval_text(summary: Summary) -> str:
    """What the bars and whiskers are: the statistic and how often its interval holds."""
    if summary.statistic == "mean":
        return "mean ± 95% CI (Student's t)"
    coverages = [cell.coverage for cell in summary.cells.values() if math.isfinite(cell.coverage)]
    if not coverages or min(coverages) >= 0.95:
        return "median, 95% order-statistic interval"
    return f"median, range of the repeats (holds the median with probability {min(coverages):.0%})"


def _excluded_text(count: int) -> str:
    return f"{count} invalid trial{'' if count == 1 else 's'} excluded"
