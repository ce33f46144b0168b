"""Figures of a scheduler sweep: speed-ups over a baseline scheduler with the verdict per graph,
throughput and latency per scheduler, per-frame latency CDFs, scaling over a knob, and task
timelines of traces (`gantt.py`, re-exported here). A figure of several graphs has a panel per
graph with its own axis, and shows the medians the printed table shows, with their intervals.

Takes plain data (the sweep's rows, frames and traces; see `plot`) and draws with matplotlib's
object API, never pyplot, so no window opens and no figure outlives its caller. Invalid trials never
enter a statistic, and every figure says how many were left out; a scheduler (or graph) whose
trials were all invalid keeps its place in every figure, marked "no valid trial". Never imports
pandas.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.axis import Axis
    from matplotlib.figure import Figure

__all__ = [
    "MEASURES",
    "PERCENTILES",
    "Estimate",
    "Interval",
    "Summary",
    "bars",
    "gantt",
    "gantts",
    "latency",
    "latency_cdf",
    "mean_ci",
    "median_ci",
    "plot",
    "ratio_ci",
    "scaling",
    "speedup",
    "summarize",
    "t_critical",
    "throughput",
]

from ._canvas import (
    _DPI,
    _excluded_text,
    _figure,
    _heading,
    _legend,
    _lines,
    _log_scale,
    _note,
    _palette,
    _panels,
    _titles,
    _wrap,
)
from .gantt import gantt, gantts, parse_key
from .stats import (
    MEASURES,
    PERCENTILES,
    Estimate,
    Interval,
    Row,
    Summary,
    distinct,
    in_trial_order,
    is_valid,
    mean_ci,
    median_ci,
    number,
    ordered,
    ratio_ci,
    run_knobs,
    select,
    summarize,
    t_critical,
    trial_counts,
)
from .verdict import Comparisons, compare, verdict

# ---------------------------------------------------------------------------------------------
# Bars: one metric per scheduler per graph

#: metric → (title, axis label with unit)
_METRICS = {
    "throughput_frames_per_s": ("Throughput", "throughput (frames/s)"),
    "tasks_per_s": ("Task rate", "tasks per second (tasks/s)"),
    "wall_time_s": ("Wall time", "wall time (s)"),
    "latency_mean_us": ("Mean frame latency", "mean frame latency (µs)"),
    "latency_p50_us": ("Median frame latency", "median frame latency (µs)"),
    "latency_p95_us": ("95th-percentile frame latency", "p95 frame latency (µs)"),
    "latency_p99_us": ("99th-percentile frame latency", "p99 frame latency (µs)"),
    "critical_path_us": ("Critical path", "critical path per frame (µs)"),
    "work_us": ("Work", "work per frame (µs)"),
    "bound_frames_per_s": ("Throughput bound", "throughput bound (frames/s)"),
    "efficiency": ("Efficiency", "efficiency (throughput / bound)"),
    "busy_mean": ("Worker utilisation", "mean busy fraction of a worker"),
}


def _describe(metric: str) -> tuple[str, str]:
    return _METRICS.get(metric, (metric, metric))


def bars(
    rows: Sequence[Row],
    metric: str,
    *,
    by: str = "scheduler",
    per: str = "graph",
    where: Mapping[str, Any] | None = None,
    log: bool | None = None,
    ax: Axes | None = None,
    title: str | None = None,
    statistic: str = "median",
) -> Figure:
    """A panel per `per` value (default: per graph), each with its own axis, holding a horizontal
    bar per `by` value: the median of `metric` over the repeats (what `tomii sweep` prints) with
    its exact order-statistic interval (`statistic="mean"`: the mean with its 95% Student's t
    interval). A `by` value with no valid trial in a panel keeps its row, marked "no valid trial".
    `log`: a log axis (None: per panel, when its values span more than two decades).
    `ax`: draw there (the data must then hold a single `per` value)."""
    summary = summarize(rows, metric, keys=(per, by), where=where, statistic=statistic)
    if not summary.cells:
        raise ValueError(f"no valid trial to plot {metric} ({_excluded_text(summary.excluded)})")
    counts = trial_counts(rows, (per, by), where)
    panels, series, invalid = _levels(counts, 0), _levels(counts, 1), _all_invalid(counts)
    fig, axes, owned = _panels(len(panels), ax, height=_row_height(len(series)), sharey=True)
    colours = _palette(rows, by, series)
    positions = np.arange(len(series))
    for panel, name in zip(axes, panels):
        cells = [summary.cells.get((name, label), _EMPTY) for label in series]
        values = [cell.value for cell in cells]
        errors = [[v - _floor(c) for v, c in zip(values, cells)], [c.high - c.value for c in cells]]
        panel.barh(
            positions, values, 0.7, xerr=errors, capsize=3, color=[colours[s] for s in series]
        )
        _style_categories(panel, series)
        _mark_invalid(panel, series, _invalid_in(invalid, name))
        panel.set_title(_wrap(str(name), 40))
        panel.set_xlabel(_describe(metric)[1])
        if _log_scale(log, values):
            panel.set_xscale("log")
        else:
            _readable_numbers(panel.xaxis)
    heading = title or f"{_describe(metric)[0]} per {by}"
    _titles(fig, axes, owned, _heading(heading, summary.config) + "\n" + _note(summary))
    return fig


def speedup(
    rows: Sequence[Row],
    *,
    baseline: str | None = None,
    metric: str = "throughput_frames_per_s",
    by: str = "scheduler",
    per: str = "graph",
    where: Mapping[str, Any] | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Which scheduler wins: a panel per `per` value (default: per graph), each with its own axis,
    holding each `by` value's median `metric` divided by `baseline`'s (default: fifo when the
    sweep ran it, else its first scheduler), a dot with its 95% bootstrap interval; a grey band
    around 1 shows how far the baseline's own repeats spread (its median's order-statistic
    interval), and under the panel's title is the verdict `tomii sweep` prints for that graph.
    A `by` value with no valid trial in a panel keeps its row, marked "no valid trial"; a `per`
    value with no valid trial of the baseline keeps its panel, with no verdict.
    `ax`: draw there (the data must then hold a single `per` value)."""
    cells = compare(rows, baseline=baseline, metric=metric, keys=(per,), by=by, where=where)
    if not cells:
        raise ValueError(f"no valid trial of the baseline to compare with ({_excluded(rows)})")
    chosen = cells[0].baseline
    compared = {cell.cell[0]: cell for cell in cells}
    counts = trial_counts(rows, (per, by), where)
    panels, invalid = _levels(counts, 0), _all_invalid(counts)
    series = [chosen, *(n for n in _levels(counts, 1) if n != chosen)]
    fig, axes, owned = _panels(len(panels), ax, height=_row_height(len(series)), sharey=True)
    colours = _palette(rows, by, series)
    for panel, name in zip(axes, panels):
        cell = compared.get(name)
        if cell is None:
            _draw_without_baseline(panel, series)
            said = f"no valid trial of {chosen}: no verdict"
        else:
            _draw_speedups(panel, cell, series, colours)
            said = verdict(cell)
        _mark_invalid(panel, series, _invalid_in(invalid, name))
        panel.set_title(_wrap(str(name), 40) + "\n" + _wrap(said, 44), fontsize="medium")
        panel.set_xlabel(f"{_describe(metric)[0].lower()} ÷ {chosen}'s (median)")
    config = select(rows, (per, by), where).config
    _titles(
        fig, axes, owned, _heading(f"Speed-up over {chosen}", config) + "\n" + _ratio_note(cells)
    )
    return fig


def _draw_speedups(
    panel: Axes, cell: Comparisons, series: list[str], colours: Mapping[Any, Any]
) -> None:
    """One panel of `speedup`: the baseline's band, the line at 1, a dot and interval per
    scheduler; the axis spans every interval and 1."""
    found = {one.scheduler: one.speedup for one in cell.schedulers}
    own = found[cell.baseline]
    ends = [1.0]
    if math.isfinite(own.low) and math.isfinite(own.high):
        panel.axvspan(own.low, own.high, color="0.88", zorder=0, linewidth=0)
        ends += [own.low, own.high]
    panel.axvline(1.0, color="0.35", linewidth=1, zorder=1)
    for position, name in enumerate(series):
        ratio = found.get(name)
        if ratio is None or name == cell.baseline or not math.isfinite(ratio.value):
            continue
        # A bootstrap interval may, rarely, leave out the ratio of the medians themselves.
        low = max(ratio.value - ratio.low, 0.0) if math.isfinite(ratio.low) else 0.0
        high = max(ratio.high - ratio.value, 0.0) if math.isfinite(ratio.high) else 0.0
        panel.errorbar(
            [ratio.value], [position], xerr=[[low], [high]], fmt="o", capsize=3,
            color=colours[name], zorder=2,
        )  # fmt: skip
        ends += [ratio.value - low, ratio.value + high]
    panel.plot([1.0], [0], marker="D", color=colours[cell.baseline], zorder=2)
    spread = max(max(ends) - min(ends), 0.02)
    panel.set_xlim(min(ends) - 0.08 * spread, max(ends) + 0.08 * spread)
    _style_categories(panel, series)
    _times_axis(panel)


def _draw_without_baseline(panel: Axes, series: list[str]) -> None:
    """A panel of `speedup` for a graph with no valid trial of the baseline: the line at 1 in the
    middle and a row per scheduler, with no dot, since there is nothing to divide by."""
    panel.axvline(1.0, color="0.35", linewidth=1, zorder=1)
    panel.set_xlim(0.5, 1.5)
    _style_categories(panel, series)
    _times_axis(panel)


#: The steps between ticks, as multiples of a power of ten (matplotlib's default).
_TICK_STEPS = [1, 2, 2.5, 5, 10]


def _times_axis(panel: Axes) -> None:
    """The x axis of ratios: at most six ticks, each labelled with its factor (0.9×, 1×)."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    panel.xaxis.set_major_locator(MaxNLocator(nbins=5, steps=_TICK_STEPS))
    panel.xaxis.set_major_formatter(FuncFormatter(lambda value, _: f"{value:g}×"))


def _readable_numbers(axis: Axis) -> None:
    """A linear axis of figures: at most six ticks, labelled in a few characters with no offset or
    exponent over the axis (see `_compact`), so that the labels of a panel never run together."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    axis.set_major_locator(MaxNLocator(nbins=5, steps=_TICK_STEPS))
    axis.set_major_formatter(
        FuncFormatter(lambda value, _: _compact(value, axis.get_view_interval()))
    )


def _compact(value: float, ends: Sequence[float]) -> str:
    """`value` as a tick label on an axis from `ends[0]` to `ends[1]`: in thousands (250k) when
    the axis reaches 10,000, in millions (1.5M) when it reaches 1,000,000, so that every label of
    the axis has the same unit; else as it is (0.25, 7500)."""
    largest = max(abs(float(end)) for end in ends)
    for reach, scale, unit in ((1e6, 1e6, "M"), (1e4, 1e3, "k")):
        if largest >= reach:
            return "0" if value == 0 else f"{value / scale:g}{unit}"
    return f"{value:g}"


def _all_invalid(counts: Mapping[tuple[Any, ...], tuple[int, int]]) -> dict[tuple[Any, ...], int]:
    """The cells of `counts` (see `trial_counts`) with no valid trial, each with its trials."""
    return {cell: trials for cell, (trials, valid) in counts.items() if not valid}


def _invalid_in(invalid: Mapping[tuple[Any, ...], int], panel: Any) -> dict[Any, int]:
    """The series with no valid trial in `panel`, each with its invalid trials."""
    return {cell[1]: trials for cell, trials in invalid.items() if cell[0] == panel}


def _mark_invalid(panel: Axes, series: Sequence[Any], invalid: Mapping[Any, int]) -> None:
    """In the row of each of `series` that is `invalid` in this panel, where its bar or dot would
    be: "no valid trial: 3 invalid"."""
    for position, name in enumerate(series):
        if name in invalid:
            panel.text(
                0.03, position, f"no valid trial: {invalid[name]} invalid",
                transform=panel.get_yaxis_transform(), ha="left", va="center", color="0.3",
                fontsize="small", fontstyle="italic", zorder=3,
                bbox={"facecolor": "white", "edgecolor": "none", "alpha": 0.8, "pad": 1},
            )  # fmt: skip


def _panel_title(name: Any, invalid: Mapping[Any, int], width: int) -> str:
    """A panel's title: its name and, when some of its series are `invalid` there, which ("no
    valid trial: random (3 invalid)")."""
    title = _wrap(str(name), width)
    if invalid:
        listed = ", ".join(f"{label} ({trials} invalid)" for label, trials in invalid.items())
        title += "\n" + _wrap(f"no valid trial: {listed}", width)
    return title


def _style_categories(panel: Axes, series: Sequence[Any]) -> None:
    """A category per row, the first at the top, with a vertical grid."""
    panel.set_yticks(range(len(series)), labels=[str(s) for s in series])
    panel.set_ylim(len(series) - 0.5, -0.5)
    panel.grid(axis="x", alpha=0.3)


def _row_height(count: int) -> float:
    """The height of a panel with `count` categories (inches): legible, never sprawling."""
    return 1.3 + 0.27 * count


def _ratio_note(cells: Sequence[Comparisons]) -> str:
    counts = sorted({one.speedup.n for cell in cells for one in cell.schedulers})
    repeats = str(counts[0]) if len(counts) == 1 else f"{counts[0]}–{counts[-1]}"
    baseline = cells[0].baseline
    return (
        f"{repeats} repeats: median ÷ {baseline}'s median, 95% bootstrap interval; grey: "
        f"{baseline}'s own spread; {_excluded_text(cells[0].excluded)}"
    )


def _excluded(rows: Sequence[Row]) -> str:
    return _excluded_text(sum(not is_valid(row) for row in rows))


def throughput(
    rows: Sequence[Row],
    *,
    by: str = "scheduler",
    per: str = "graph",
    where: Mapping[str, Any] | None = None,
    log: bool | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Median throughput (frames/s) per `by`, a panel per `per`, with intervals (see `bars`)."""
    return bars(rows, "throughput_frames_per_s", by=by, per=per, where=where, log=log, ax=ax)


def latency(
    rows: Sequence[Row],
    *,
    percentile: str = "p50",
    by: str = "scheduler",
    per: str = "graph",
    where: Mapping[str, Any] | None = None,
    log: bool | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Median over the repeats of the frame latency (µs) at `percentile` ("mean", "p50", "p95"
    or "p99") per `by`, a panel per `per`, with intervals (see `bars`)."""
    metric = _latency_metric(percentile)
    return bars(rows, metric, by=by, per=per, where=where, log=log, ax=ax)


def _latency_metric(percentile: str) -> str:
    if percentile not in PERCENTILES:
        raise ValueError(f"percentile {percentile!r}: choose one of {', '.join(PERCENTILES)}")
    return f"latency_{percentile}_us"


_EMPTY = Estimate(math.nan, math.nan, math.nan, 0, math.nan)


def _floor(cell: Estimate) -> float:
    """The interval's lower end as drawn: cut at zero under a non-negative value (every figure of
    a run is non-negative; a mean's interval below zero only says the repeats were few or
    spread)."""
    return max(cell.low, 0.0) if cell.value >= 0 else cell.low


def _levels(cells: Iterable[tuple[Any, ...]], position: int) -> list[Any]:
    """The distinct values at `position` of the `cells`' keys (see `ordered`)."""
    return ordered(cell[position] for cell in cells)


# ---------------------------------------------------------------------------------------------
# Per-frame latency CDF


def latency_cdf(
    rows: Sequence[Row],
    frames: Sequence[Row],
    *,
    graph: str | None = None,
    by: str = "scheduler",
    where: Mapping[str, Any] | None = None,
    log: bool | None = None,
    ax: Axes | None = None,
) -> Figure:
    """The empirical CDF of per-frame latency, one line per `by` value over every frame of its
    valid repeats; one panel per graph (or only `graph`), whose title names the `by` values with
    no valid trial there. `frames` holds dicts with trial, frame, latency_us. `log`: a log x axis
    (None: when the latencies span more than two decades)."""
    conditions = dict(where or {})
    if graph is not None:
        conditions["graph"] = graph
    selection = select(rows, ("graph", by), conditions)
    if not selection.cells:
        raise ValueError(
            f"no valid trial to plot latency for ({_excluded_text(selection.excluded)})"
        )
    counts = trial_counts(rows, ("graph", by), conditions)
    graphs, series, invalid = _levels(counts, 0), _levels(counts, 1), _all_invalid(counts)
    by_trial = _frame_latencies(frames)
    fig, axes, owned = _panels(len(graphs), ax)
    colours = _palette(rows, by, series)
    extremes: list[float] = []
    for panel, name in zip(axes, graphs):
        for label in series:
            trials = selection.cells.get((name, label), [])
            values = np.sort([v for row in trials for v in by_trial.get(row.get("trial"), [])])
            if values.size:
                levels = np.arange(1, values.size + 1) / values.size
                panel.step(values, levels, where="post", color=colours[label], label=label)
                extremes += [float(values[0]), float(values[-1])]
        panel.set_title(_panel_title(name, _invalid_in(invalid, name), 45))
        panel.set_xlabel("frame latency (µs)")
        panel.set_ylabel("fraction of frames")
        panel.set_ylim(0, 1.02)
        panel.grid(alpha=0.3)
    logged = _log_scale(log, extremes)
    for panel in axes:
        if logged:
            panel.set_xscale("log")
        else:
            _readable_numbers(panel.xaxis)
    heading = _heading("Frame latency CDF", selection.config)
    note = "every frame of every repeat; " + _excluded_text(selection.excluded)
    _titles(fig, axes, owned, heading + "\n" + note)
    _legend(fig, axes[0], owned, _lines(colours), by)
    return fig


def _frame_latencies(frames: Sequence[Row]) -> dict[Any, list[float]]:
    by_trial: dict[Any, list[float]] = {}
    for record in frames:
        for key in ("trial", "latency_us"):
            if key not in record:
                raise ValueError(f"a frame record has no {key!r}: {dict(record)}")
        value = number(record["latency_us"])
        if math.isfinite(value):
            by_trial.setdefault(record["trial"], []).append(value)
    return by_trial


# ---------------------------------------------------------------------------------------------
# Scaling over a knob


def scaling(
    rows: Sequence[Row],
    *,
    x: str = "slots",
    y: str = "throughput_frames_per_s",
    by: str = "scheduler",
    per: str = "graph",
    where: Mapping[str, Any] | None = None,
    log: bool | None = None,
    log_x: bool | None = None,
    ax: Axes | None = None,
) -> Figure:
    """`y` over the knob `x` ("slots", "workers" or another numeric knob): one line per `by`
    value, the median over the repeats with its order-statistic band (see `bars`), one panel per
    `per` value, whose title names the `by` values with no valid trial there. `log`/`log_x`:
    log axes (None: when the values span more than two decades / the knob a factor of 8); the
    knob's values stand upright under the axis when side by side they would run together."""
    summary = summarize(rows, y, keys=(per, by, x), where=where)
    if not summary.cells:
        raise ValueError(f"no valid trial to plot {y} ({_excluded_text(summary.excluded)})")
    knob = _levels(summary.cells, 2)
    counts = trial_counts(rows, (per, by), where)
    panels, series, invalid = _levels(counts, 0), _levels(counts, 1), _all_invalid(counts)
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in knob):
        raise ValueError(f"scaling: the knob {x!r} must be numeric, got {knob}")
    fig, axes, owned = _panels(len(panels), ax)
    colours = _palette(rows, by, series)
    for panel, name in zip(axes, panels):
        for label in series:
            points = [
                (v, summary.cells[(name, label, v)])
                for v in knob
                if (name, label, v) in summary.cells
            ]
            xs = [float(v) for v, _ in points]
            panel.plot(
                xs, [c.value for _, c in points], marker="o", color=colours[label], label=label
            )
            lows, highs = [_floor(c) for _, c in points], [c.high for _, c in points]
            panel.fill_between(xs, lows, highs, color=colours[label], alpha=0.2, linewidth=0)
        _style_scaling(panel, _panel_title(name, _invalid_in(invalid, name), 45), x, y, knob, log_x)
    logged = _log_scale(log, [cell.value for cell in summary.cells.values()])
    for panel in axes:
        if logged:
            panel.set_yscale("log")
        else:
            _readable_numbers(panel.yaxis)
    heading = _heading(f"{_describe(y)[0]} over {x}", summary.config)
    _titles(fig, axes, owned, heading + "\n" + _note(summary))
    _legend(fig, axes[0], owned, _lines(colours), by)
    _upright_if_crowded(fig, axes)
    return fig


def _upright_if_crowded(fig: Figure, axes: list[Axes]) -> None:
    """Lays the figure out and, in each panel where two x tick labels side by side overlap, turns
    its labels upright, leaving out those that would still overlap the last label kept."""
    fig.draw_without_rendering()
    for panel in axes:
        labels = [label for label in panel.get_xticklabels() if label.get_text()]
        boxes = [label.get_window_extent() for label in labels]
        if not any(left.overlaps(right) for left, right in zip(boxes, boxes[1:])):
            continue
        kept: dict[float, str] = {}
        last = -math.inf
        for label, box in zip(labels, boxes):
            middle = (box.x0 + box.x1) / 2
            if middle - last >= 1.2 * box.height:  # upright, a label is as wide as it was high
                kept[label.get_position()[0]] = label.get_text()
                last = middle
        ticks = panel.get_xticks()
        panel.set_xticks(ticks, labels=[kept.get(float(tick), "") for tick in ticks])
        panel.tick_params(axis="x", labelrotation=90)


def _style_scaling(
    panel: Axes, title: str, x: str, y: str, knob: list[Any], log_x: bool | None
) -> None:
    from matplotlib.ticker import NullFormatter

    values = [float(v) for v in knob]
    wide = min(values) > 0 and max(values) / min(values) >= 8
    if (log_x is None and wide) or log_x:
        panel.set_xscale("log", base=2)
    panel.set_xticks(values, labels=[str(v) for v in knob])
    panel.xaxis.set_minor_formatter(NullFormatter())
    panel.set_title(title)
    panel.set_xlabel(x)
    panel.set_ylabel(_describe(y)[1])
    panel.grid(alpha=0.3)


# ---------------------------------------------------------------------------------------------
# Every figure the data supports


def plot(
    rows: Sequence[Row],
    frames: Sequence[Row] | None = None,
    traces: Mapping[str, tuple[np.ndarray[Any, Any], Sequence[str]]] | None = None,
    out_dir: str | Path | None = None,
    formats: Sequence[str] = ("png",),
    *,
    percentile: str = "p50",
    baseline: str | None = None,
) -> list[Path]:
    """Writes every figure the data supports into `out_dir` (default: the current directory), in
    each of `formats`, and returns the paths:

    - speedup.EXT: which scheduler wins, a panel per graph: each scheduler's median throughput
      over `baseline`'s with its interval and the verdict (see `speedup`), when the rows hold
      several schedulers (one whose every trial is invalid among them, shown as such); where
      run knobs vary, speedup_KNOBVALUE....EXT too for each of their other combinations
      (speedup_workers8_slots1.png), so that every verdict has its figure;
    - throughput.EXT, latency_PCT.EXT: a panel per graph, a bar per scheduler, medians with
      their intervals (see `bars`);
    - latency_cdf.EXT: when `frames` (dicts: trial, frame, latency_us) are given;
    - scaling_KNOB_throughput.EXT, scaling_KNOB_latency_PCT.EXT: for KNOB workers and slots, when
      the knob varies between the repeats' configurations;
    - gantt_GRAPH.EXT: per graph of `traces` ({"scheduler|graph|workers=N|slots=N": (records,
      node_names)}), a panel per scheduler at the knobs the other figures show.

    `rows` are the sweep's trials (dicts: trial, scheduler, scheduler_options, graph, workers,
    slots, frames, pop_batch, repeat, the report's figures, valid, problem); invalid ones are left
    out and counted in each title. Where a run knob other than the plotted one varies, the
    figures show its largest value that every scheduler and graph ran, and say so in the title.
    """
    kinds = _check_formats(formats)
    metric = _latency_metric(percentile)
    out = Path.cwd() if out_dir is None else Path(out_dir)
    where = _representative(rows)
    figures = []
    if len(distinct(row.get("scheduler") for row in rows)) > 1:
        figures.append(("speedup", speedup(rows, baseline=baseline, where=where)))
        for combination in _combinations_of(rows, list(where)):
            if combination != where:
                stem = "speedup_" + "_".join(f"{k}{v}" for k, v in combination.items())
                figures.append((_slug(stem), speedup(rows, baseline=baseline, where=combination)))
    figures += [
        ("throughput", throughput(rows, where=where)),
        (f"latency_{percentile}", latency(rows, percentile=percentile, where=where)),
    ]
    if frames:
        figures.append(("latency_cdf", latency_cdf(rows, frames, where=where)))
    for knob in ("workers", "slots"):
        if knob in where:
            others = {k: v for k, v in where.items() if k != knob}
            figures.append((f"scaling_{knob}_throughput", scaling(rows, x=knob, where=others)))
            latency_figure = scaling(rows, x=knob, y=metric, where=others)
            figures.append((f"scaling_{knob}_latency_{percentile}", latency_figure))
    order = distinct(row.get("scheduler") for row in in_trial_order(rows))
    shown = _shown_traces(traces or {}, where)
    for graph in dict.fromkeys(parse_key(key).graph for key in shown):
        timeline = gantts(shown, graph=graph, schedulers=order)
        figures.append((f"gantt_{_slug(graph)}", timeline))
    out.mkdir(parents=True, exist_ok=True)
    return [path for stem, figure in _unique(figures) for path in _save(figure, out, stem, kinds)]


def _shown_traces(
    traces: Mapping[str, tuple[np.ndarray[Any, Any], Sequence[str]]], where: Mapping[str, Any]
) -> dict[str, tuple[np.ndarray[Any, Any], Sequence[str]]]:
    """The traces the Gantt charts show: where a knob varies among the keys, those at the value
    the other figures show (`where`), or at the largest the traces hold, so that a chart has a
    panel per scheduler, not one per combination of knobs."""
    parsed = {key: parse_key(key) for key in traces}
    chosen = dict(traces)
    for knob in dict.fromkeys(name for key in parsed.values() for name in key.knobs):
        values = {parsed[key].knobs.get(knob, "") for key in chosen}
        if len(values) < 2:
            continue
        wanted = str(where.get(knob, ""))
        if wanted not in values:
            wanted = max(values, key=_knob_order)
        chosen = {
            key: trace for key, trace in chosen.items() if parsed[key].knobs.get(knob) == wanted
        }
    return chosen


def _knob_order(text: str) -> tuple[int, float, str]:
    """Sorts a knob's values as the trace keys spell them: numbers as numbers, above text."""
    value = number(text)
    return (1, value, "") if math.isfinite(value) else (0, 0.0, text)


def _representative(rows: Sequence[Row]) -> dict[str, Any]:
    """The run knobs that vary among the valid trials of one scheduler and graph, each with the
    value the other figures show: the largest that every scheduler and graph ran (else the
    largest)."""
    valid = [row for row in rows if is_valid(row)]
    groups: dict[tuple[Any, Any], list[Row]] = {}
    for row in valid:
        groups.setdefault((row.get("scheduler"), row.get("graph")), []).append(row)
    chosen: dict[str, Any] = {}
    for knob in run_knobs(valid):
        ran = [set(distinct(row.get(knob) for row in group)) for group in groups.values()]
        if any(len(values) > 1 for values in ran):
            chosen[knob] = _largest(set.intersection(*ran) or set.union(*ran))
    return chosen


def _combinations_of(rows: Sequence[Row], knobs: Sequence[str]) -> list[dict[str, Any]]:
    """Every combination of the values of `knobs` that a valid trial ran, in sorted order."""
    if not knobs:
        return []
    ran = distinct(tuple(row.get(k) for k in knobs) for row in rows if is_valid(row))
    ordered = sorted(ran, key=lambda values: tuple(_knob_order(str(v)) for v in values))
    return [dict(zip(knobs, values)) for values in ordered]


def _largest(values: set[Any]) -> Any:
    """The largest value: numerically when they are all numbers, else by text."""
    if all(isinstance(v, (int, float)) for v in values):
        return max(values)
    return max(values, key=str)


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9.-]+", "_", name).strip("_.") or "graph"


def _unique(figures: list[tuple[str, Figure]]) -> list[tuple[str, Figure]]:
    """The figures with distinct file stems (a suffix _2, _3, … where slugs collide)."""
    seen: dict[str, int] = {}
    named = []
    for stem, figure in figures:
        seen[stem] = seen.get(stem, 0) + 1
        named.append((stem if seen[stem] == 1 else f"{stem}_{seen[stem]}", figure))
    return named


def _check_formats(formats: Sequence[str]) -> list[str]:
    kinds = [formats] if isinstance(formats, str) else list(formats)
    supported = _figure(1, 1).canvas.get_supported_filetypes()
    unknown = [kind for kind in kinds if kind not in supported]
    if not kinds or unknown:
        raise ValueError(
            f"formats {kinds}: choose among {', '.join(sorted(supported))}"
            if unknown
            else "formats: name at least one, e.g. ('png',)"
        )
    return kinds


def _save(figure: Figure, out: Path, stem: str, kinds: list[str]) -> list[Path]:
    paths = [out / f"{stem}.{kind}" for kind in kinds]
    for path in paths:
        figure.savefig(path, dpi=_DPI)
    return paths
