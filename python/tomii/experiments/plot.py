"""Figures of a scheduler sweep: throughput and latency per scheduler with 95% confidence intervals,
per-frame latency CDFs, scaling over a knob, and task timelines (Gantt charts) of traces.

Takes plain data (the sweep's rows, frames and traces; see `plot`) and draws with matplotlib's
object API, never pyplot, so no window opens and no figure outlives its caller. Invalid trials never
enter a statistic, and every figure says how many were left out. Never imports pandas.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = [
    "MEASURES",
    "PERCENTILES",
    "Interval",
    "Summary",
    "bars",
    "gantt",
    "gantts",
    "latency",
    "latency_cdf",
    "mean_ci",
    "plot",
    "scaling",
    "summarize",
    "t_critical",
    "throughput",
]

from .stats import (
    MEASURES,
    PERCENTILES,
    Interval,
    Row,
    Summary,
    distinct,
    in_trial_order,
    is_valid,
    mean_ci,
    number,
    ordered,
    run_knobs,
    select,
    summarize,
    t_critical,
)

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
) -> Figure:
    """Grouped bars of the mean of `metric` (one group per `per` value, one bar per `by` value)
    with 95% confidence intervals over the repeats. `log`: a log y axis (None: when the means span
    more than two decades)."""
    summary = summarize(rows, metric, keys=(per, by), where=where)
    selection_groups = _levels(summary, 0)
    series = _levels(summary, 1)
    if not series:
        raise ValueError(f"no valid trial to plot {metric} ({_excluded_text(summary.excluded)})")
    width = max(6.4, 1.5 + 0.45 * len(selection_groups) * (len(series) + 1))
    fig, ax, owned = _axes(ax, (width, 4.5))
    colours = _palette(rows, by, series)
    step = 0.8 / len(series)
    for i, name in enumerate(series):
        cells = [summary.cells.get((group, name), _EMPTY) for group in selection_groups]
        positions = np.arange(len(selection_groups)) + (i - (len(series) - 1) / 2) * step
        heights = [cell.mean for cell in cells]
        errors = [[cell.mean - _floor(cell) for cell in cells], [c.half_width for c in cells]]
        ax.bar(positions, heights, step, yerr=errors, capsize=3, color=colours[name], label=name)
    ax.set_xticks(
        range(len(selection_groups)), labels=[_wrap(str(g), 30) for g in selection_groups]
    )
    ax.set_xlabel(per)
    ax.set_ylabel(_describe(metric)[1])
    if _log_scale(log, [cell.mean for cell in summary.cells.values()]):
        ax.set_yscale("log")
    ax.grid(axis="y", alpha=0.3)
    heading = title or f"{_describe(metric)[0]} per {by}"
    _titles(fig, [ax], owned, _heading(heading, summary.config) + "\n" + _note(summary))
    _legend(fig, ax, owned, _patches(colours), by)
    return fig


def throughput(
    rows: Sequence[Row],
    *,
    by: str = "scheduler",
    per: str = "graph",
    where: Mapping[str, Any] | None = None,
    log: bool | None = None,
    ax: Axes | None = None,
) -> Figure:
    """Mean throughput (frames/s) per `by` per `per`, with 95% confidence intervals (see `bars`)."""
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
    """Mean frame latency (µs) at `percentile` ("mean", "p50", "p95" or "p99") per `by` per
    `per`, with 95% confidence intervals over the repeats (see `bars`)."""
    metric = _latency_metric(percentile)
    return bars(rows, metric, by=by, per=per, where=where, log=log, ax=ax)


def _latency_metric(percentile: str) -> str:
    if percentile not in PERCENTILES:
        raise ValueError(f"percentile {percentile!r}: choose one of {', '.join(PERCENTILES)}")
    return f"latency_{percentile}_us"


_EMPTY = Interval(math.nan, math.nan, 0)


def _floor(cell: Interval) -> float:
    """The interval's lower end as drawn: cut at zero under a non-negative mean (every figure of
    a run is non-negative; an interval below zero only says the repeats were few or spread)."""
    return max(cell.low, 0.0) if cell.mean >= 0 else cell.low


def _levels(summary: Summary, position: int) -> list[Any]:
    return ordered(cell[position] for cell in summary.cells)


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
    valid repeats; one panel per graph (or only `graph`). `frames` holds dicts with trial, frame,
    latency_us. `log`: a log x axis (None: when the latencies span more than two decades)."""
    conditions = dict(where or {})
    if graph is not None:
        conditions["graph"] = graph
    selection = select(rows, ("graph", by), conditions)
    graphs, series = selection.levels(0), selection.levels(1)
    if not graphs:
        raise ValueError(
            f"no valid trial to plot latency for ({_excluded_text(selection.excluded)})"
        )
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
        panel.set_title(_wrap(str(name), 45))
        panel.set_xlabel("frame latency (µs)")
        panel.set_ylabel("fraction of frames")
        panel.set_ylim(0, 1.02)
        panel.grid(alpha=0.3)
    if _log_scale(log, extremes):
        for panel in axes:
            panel.set_xscale("log")
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
    value with its 95% confidence band over the repeats, one panel per `per` value. `log`/`log_x`:
    log axes (None: when the values span more than two decades / the knob a factor of 8)."""
    summary = summarize(rows, y, keys=(per, by, x), where=where)
    panels, series, knob = _levels(summary, 0), _levels(summary, 1), _levels(summary, 2)
    if not panels:
        raise ValueError(f"no valid trial to plot {y} ({_excluded_text(summary.excluded)})")
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
                xs, [c.mean for _, c in points], marker="o", color=colours[label], label=label
            )
            lows, highs = [_floor(c) for _, c in points], [c.high for _, c in points]
            panel.fill_between(xs, lows, highs, color=colours[label], alpha=0.2, linewidth=0)
        _style_scaling(panel, str(name), x, y, knob, log_x)
    if _log_scale(log, [cell.mean for cell in summary.cells.values()]):
        for panel in axes:
            panel.set_yscale("log")
    heading = _heading(f"{_describe(y)[0]} over {x}", summary.config)
    _titles(fig, axes, owned, heading + "\n" + _note(summary))
    _legend(fig, axes[0], owned, _lines(colours), by)
    return fig


def _style_scaling(
    panel: Axes, name: str, x: str, y: str, knob: list[Any], log_x: bool | None
) -> None:
    from matplotlib.ticker import NullFormatter

    values = [float(v) for v in knob]
    wide = min(values) > 0 and max(values) / min(values) >= 8
    if (log_x is None and wide) or log_x:
        panel.set_xscale("log", base=2)
    panel.set_xticks(values, labels=[str(v) for v in knob])
    panel.xaxis.set_minor_formatter(NullFormatter())
    panel.set_title(_wrap(name, 45))
    panel.set_xlabel(x)
    panel.set_ylabel(_describe(y)[1])
    panel.grid(alpha=0.3)


# ---------------------------------------------------------------------------------------------
# Gantt charts of traces


@dataclass(frozen=True)
class _TraceKey:
    scheduler: str
    graph: str
    knobs: dict[str, str]

    @property
    def workers(self) -> int | None:
        text = self.knobs.get("workers", "")
        return int(text) if text.isdigit() else None

    def label(self) -> str:
        knobs = ", ".join(f"{k}={v}" for k, v in self.knobs.items())
        return f"{self.scheduler} ({knobs})" if knobs else self.scheduler

    def order(self) -> tuple[tuple[int, float, str], ...]:
        """Sorts the keys of one scheduler by their knobs, numbers as numbers."""
        return tuple((0, number(v), "") if math.isfinite(number(v)) else (1, 0.0, v)
                     for v in self.knobs.values())  # fmt: skip


_KNOB = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=[^|]*$")


def _parse_key(key: str) -> _TraceKey:
    """Splits "scheduler|graph|workers=2|slots=4": trailing name=value parts are knobs."""
    parts = key.split("|")
    tail = len(parts)
    while tail > 2 and _KNOB.match(parts[tail - 1]):
        tail -= 1
    if tail < 2 or not parts[0] or not parts[1]:
        raise ValueError(
            f"trace key {key!r} is not of the form 'scheduler|graph|workers=N|slots=N'"
        )
    knobs = dict(part.split("=", 1) for part in parts[tail:])
    return _TraceKey(parts[0], "|".join(parts[1:tail]), knobs)


def gantt(
    trace: np.ndarray[Any, Any],
    node_names: Sequence[str],
    *,
    frame: int | None = None,
    workers: int | None = None,
    ax: Axes | None = None,
    title: str | None = None,
) -> Figure:
    """One trace as a timeline: a lane per worker (`workers` lanes, default: the trace's highest
    worker + 1), a bar per task from start to end, coloured by frame; with `frame`, only that
    frame's tasks, coloured by node with a legend."""
    records = _frame_records(_check_trace(trace, node_names), frame)
    unit = _time_unit([records], frame)
    lanes = workers if workers is not None else _lanes(trace)
    fig, ax, owned = _axes(ax, (9.0, 1.6 + 0.4 * lanes))
    handles = _draw_gantt(ax, records, node_names, frame=frame, lanes=lanes, unit=unit)
    _titles(fig, [ax], owned, title or _gantt_heading(frame))
    if handles:
        _legend(fig, ax, owned, handles, "node")
    return fig


def gantts(
    traces: Mapping[str, tuple[np.ndarray[Any, Any], Sequence[str]]],
    *,
    graph: str | None = None,
    frame: int | None = None,
    schedulers: Sequence[str] = (),
) -> Figure:
    """The traces of one graph (`graph`, needed when the keys name several), one panel per
    trace key "scheduler|graph|workers=N|slots=N", stacked on a shared time axis (see `gantt`);
    the panels go by scheduler (in the order of `schedulers`, then of the keys), then knobs."""
    parsed = [(_parse_key(key), value) for key, value in traces.items()]
    graphs = list(dict.fromkeys(key.graph for key, _ in parsed))
    if graph is None and len(graphs) != 1:
        raise ValueError(f"gantts: the traces hold graphs {graphs}; pass graph=... to pick one")
    graph = graphs[0] if graph is None else graph
    chosen = [(key, value) for key, value in parsed if key.graph == graph]
    if not chosen:
        raise ValueError(f"gantts: no trace of graph {graph!r}; the traces hold {graphs}")
    schedulers = list(dict.fromkeys([*schedulers, *(key.scheduler for key, _ in chosen)]))
    chosen.sort(key=lambda item: (schedulers.index(item[0].scheduler), item[0].order()))
    records = [_frame_records(_check_trace(t, names), frame) for _, (t, names) in chosen]
    lanes = [key.workers or _lanes(trace) for key, (trace, _) in chosen]
    unit = _time_unit(records, frame)
    fig = _figure(9.0, 1.2 + sum(0.6 + 0.35 * n for n in lanes))
    axes = list(fig.subplots(len(chosen), 1, sharex=True, squeeze=False)[:, 0])
    handles: list[Artist] = []
    for panel, (key, (_, names)), mine, count in zip(axes, chosen, records, lanes):
        handles = _draw_gantt(panel, mine, names, frame=frame, lanes=count, unit=unit) or handles
        panel.set_title(_wrap(key.label(), 90), fontsize="medium")
    for panel in axes[:-1]:
        panel.set_xlabel("")
    _titles(fig, axes, True, _gantt_heading(frame, graph))
    if handles:
        _legend(fig, axes[0], True, handles, "node")
    return fig


def _check_trace(trace: np.ndarray[Any, Any], node_names: Sequence[str]) -> np.ndarray[Any, Any]:
    fields = ("frame", "start_ns", "end_ns", "node", "worker")
    names = trace.dtype.names or ()
    missing = [f for f in fields if f not in names]
    if missing:
        raise ValueError(
            f"the trace has no field {', '.join(missing)}: pass tomii.TRACE_DTYPE records"
        )
    if trace.size and int(trace["node"].max()) >= len(node_names):
        raise ValueError(
            f"the trace names node {int(trace['node'].max())} but node_names has {len(node_names)}"
        )
    return trace


def _frame_records(trace: np.ndarray[Any, Any], frame: int | None) -> np.ndarray[Any, Any]:
    if frame is None:
        return trace
    records: np.ndarray[Any, Any] = trace[trace["frame"] == frame]
    if not records.size:
        seen = f"{int(trace['frame'].min())}..{int(trace['frame'].max())}" if trace.size else "none"
        raise ValueError(f"frame {frame} is not in the trace (its frames: {seen})")
    return records


def _lanes(records: np.ndarray[Any, Any]) -> int:
    return int(records["worker"].max()) + 1 if records.size else 1


def _time_unit(traces: list[np.ndarray[Any, Any]], frame: int | None) -> tuple[str, float]:
    span = max((_span_ns(records, frame) for records in traces), default=0.0)
    if span < 2e6:
        return "µs", 1e3
    return ("ms", 1e6) if span < 2e10 else ("s", 1e9)


def _origin_ns(records: np.ndarray[Any, Any], frame: int | None) -> float:
    """Time zero of the axis: when the frame's first task became ready, or when the first task
    started (workers start a varying while after the run does)."""
    if not records.size:
        return 0.0
    return float(records["ready_ns" if frame is not None else "start_ns"].min())


def _span_ns(records: np.ndarray[Any, Any], frame: int | None) -> float:
    return float(records["end_ns"].max()) - _origin_ns(records, frame) if records.size else 0.0


def _draw_gantt(
    ax: Axes,
    records: np.ndarray[Any, Any],
    node_names: Sequence[str],
    *,
    frame: int | None,
    lanes: int,
    unit: tuple[str, float],
) -> list[Artist]:
    """Draws the lanes; returns the legend handles (the nodes, when one frame is shown)."""
    if records.size and int(records["worker"].max()) >= lanes:
        raise ValueError(f"the trace has worker {int(records['worker'].max())} but {lanes} lanes")
    colours = _cycle20(records["node"] if frame is not None else records["frame"])
    origin = _origin_ns(records, frame)
    start = (records["start_ns"].astype(np.float64) - origin) / unit[1]
    end = (records["end_ns"].astype(np.float64) - origin) / unit[1]
    length = end - start
    for worker in range(lanes):
        mine = records["worker"] == worker
        spans = list(zip(start[mine].tolist(), length[mine].tolist()))
        ax.broken_barh(
            spans,
            (worker - 0.4, 0.8),
            facecolors=colours[mine],
            edgecolors=colours[mine],
            linewidths=0.3,
        )
    ax.set_yticks(range(lanes), labels=[str(w) for w in range(lanes)])
    ax.set_ylim(lanes - 0.5, -0.5)
    ax.set_ylabel("worker")
    since = "the first task started" if frame is None else f"frame {frame} became ready"
    ax.set_xlabel(f"time since {since} ({unit[0]})")
    ax.grid(axis="x", alpha=0.3)
    if frame is None:
        return []
    from matplotlib.patches import Patch

    nodes = np.unique(records["node"])
    return [Patch(color=c, label=node_names[n]) for n, c in zip(nodes, _cycle20(nodes))]


def _cycle20(values: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """An RGBA colour per value from 20 colours, neighbours in distinct hues (tab20's dark
    shades, then its light ones)."""
    import matplotlib

    order = np.array([*range(0, 20, 2), *range(1, 20, 2)])
    colours: np.ndarray[Any, Any] = matplotlib.colormaps["tab20"](
        order[values.astype(np.int64) % 20]
    )
    return colours.reshape(-1, 4)


def _gantt_heading(frame: int | None, graph: str | None = None) -> str:
    what = f"Tasks of {graph}" if graph else "Tasks"
    if frame is None:
        return f"{what} on each worker, coloured by frame (20-colour cycle)"
    return f"{what} of frame {frame} on each worker, coloured by node"


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
) -> list[Path]:
    """Writes every figure the data supports into `out_dir` (default: the current directory), in
    each of `formats`, and returns the paths:

    - throughput.EXT, latency_PCT.EXT: per scheduler per graph, 95% confidence intervals;
    - latency_cdf.EXT: when `frames` (dicts: trial, frame, latency_us) are given;
    - scaling_KNOB_throughput.EXT, scaling_KNOB_latency_PCT.EXT: for KNOB workers and slots, when
      the knob varies between the repeats' configurations;
    - gantt_GRAPH.EXT: per graph of `traces` ({"scheduler|graph|workers=N|slots=N": (records,
      node_names)}), a panel per key.

    `rows` are the sweep's trials (dicts: trial, scheduler, scheduler_options, graph, workers,
    slots, frames, pop_batch, repeat, the report's figures, valid, problem); invalid ones are left
    out and counted in each title. Where a run knob other than the plotted one varies, the
    figures show its largest value that every scheduler and graph ran, and say so in the title.
    """
    kinds = _check_formats(formats)
    metric = _latency_metric(percentile)
    out = Path.cwd() if out_dir is None else Path(out_dir)
    where = _representative(rows)
    figures = [
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
    for graph in dict.fromkeys(_parse_key(key).graph for key in traces or {}):
        timeline = gantts(traces or {}, graph=graph, schedulers=order)
        figures.append((f"gantt_{_slug(graph)}", timeline))
    out.mkdir(parents=True, exist_ok=True)
    return [path for stem, figure in _unique(figures) for path in _save(figure, out, stem, kinds)]


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
        figure.savefig(path, dpi=120)
    return paths


# ---------------------------------------------------------------------------------------------
# Figure plumbing


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


def _panels(count: int, ax: Axes | None) -> tuple[Figure, list[Axes], bool]:
    """`count` panels, at most three a row; a given `ax` serves as the only one."""
    if ax is not None:
        if count != 1:
            raise ValueError(f"the data holds {count} panels (graphs): pass graph=/where= for one")
        return _root(ax), [ax], False
    columns = min(count, 3)
    rows = math.ceil(count / columns)
    fig = _figure(max(6.4, 0.6 + 4.6 * columns), 1.6 + 3.6 * rows)
    grid = fig.subplots(rows, columns, squeeze=False)
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
    note = f"{repeats} repeats, mean ± 95% CI (Student's t); {_excluded_text(summary.excluded)}"
    if summary.missing:
        note += f"; {summary.missing} without a value"
    return note


def _excluded_text(count: int) -> str:
    return f"{count} invalid trial{'' if count == 1 else 's'} excluded"
