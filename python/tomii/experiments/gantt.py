"""Gantt charts of traces: a lane per worker, a bar per task, coloured by frame (or, for one
frame, by node); one trace, or the traces of one graph stacked on a shared time axis.

Takes `tomii.TRACE_DTYPE` records and node names; never runs a graph.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from ._canvas import _axes, _figure, _legend, _titles, _wrap
from .stats import number

if TYPE_CHECKING:
    from matplotlib.artist import Artist
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

__all__ = ["gantt", "gantts", "parse_key"]


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


def parse_key(key: str) -> _TraceKey:
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
    parsed = [(parse_key(key), value) for key, value in traces.items()]
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
