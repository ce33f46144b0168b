"""The browser view of a trace: a self-contained page (`webpage.assemble`, template
`_web/trace.html`) with each worker a lane of task bars and each slot a lane of frame bars over
time, bars coloured by frame, zoom and pan, a bar's details on click. `RunResult.view_trace()`,
`tomii.view_trace(FILE)` and `python -m tomii --view-trace FILE` open it; it reads a trace kept in
memory, a trace CSV (`trace=FILE`, `tomii run --trace`) or a Chrome trace (`trace_format="chrome"`).
Nothing outside the package is needed to look at a trace.
"""

from __future__ import annotations

import csv
import json
import webbrowser
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ._tomii import trace_csv_columns
from .errors import TomiiError
from .webpage import assemble, temporary_page

if TYPE_CHECKING:
    from .run import RunResult

__all__ = [
    "MAX_TASKS",
    "load_trace",
    "trace_page",
    "trace_payload",
    "view_trace",
    "write_trace_page",
]

#: The most task bars a page draws (the first ones in time); the Chrome trace shows all of them.
MAX_TASKS = 50_000

#: A task as the page reads it: worker, start, end, node, instance, frame, slot, ready (ns).
Task = tuple[int, int, int, int, int, int, int, int]


def trace_payload(
    tasks: Iterable[Task], nodes: Sequence[str], *, title: str, workers: int = 0, slots: int = 0
) -> dict[str, Any]:
    """What `_web/trace.js` reads: the first MAX_TASKS tasks in time, every frame's span (its
    earliest ready time to its last end, on its slot), and the lanes (at least as many workers
    and slots as the tasks name)."""
    ordered = sorted(tasks, key=lambda t: (t[1], t[0]))
    spans: dict[int, list[int]] = {}
    for worker, start, end, _node, _instance, frame, slot, ready in ordered:
        span = spans.setdefault(frame, [frame, slot, ready, end])
        span[2], span[3] = min(span[2], ready), max(span[3], end)
        workers, slots = max(workers, worker + 1), max(slots, slot + 1)
    return {
        "title": title,
        "workers": workers,
        "slots": slots,
        "nodes": list(nodes),
        "tasks": [list(t) for t in ordered[:MAX_TASKS]],
        "total_tasks": len(ordered),
        "frames": sorted(spans.values()),
    }


def trace_page(payload: dict[str, Any]) -> str:
    """The HTML of the trace view of `payload` (`trace_payload`)."""
    return assemble(
        "trace.html",
        title=payload["title"],
        payload=payload,
        libraries=("d3",),
        styles=("page.css", "trace.css"),
        scripts=("trace.js",),
    )


def load_trace(path: str | Path) -> dict[str, Any]:
    """The payload of a trace file: a Chrome trace (JSON, as `trace_format="chrome"` writes it)
    or a trace CSV (`node,instance,frame,slot,worker,ready_ns,start_ns,end_ns`). A file that is
    neither raises TomiiError naming it."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise TomiiError(f"{path}: cannot read the trace: {error}") from None
    if text.lstrip().startswith("{"):
        return _from_chrome(path, text)
    return _from_csv(path, text)


def _from_chrome(path: Path, text: str) -> dict[str, Any]:
    try:
        trace = json.loads(text)
        events = trace["traceEvents"]
    except (json.JSONDecodeError, KeyError, TypeError):
        raise TomiiError(f"{path}: not a Chrome trace (a JSON object with traceEvents)") from None
    described = trace.get("otherData") or {}
    nodes: dict[str, int] = {}
    tasks: list[Task] = []
    for event in events:
        if event.get("ph") != "X" or event.get("cat") != "task":
            continue
        args = event.get("args") or {}
        start = round(float(event["ts"]) * 1000)
        end = start + round(float(event["dur"]) * 1000)
        ready = start - round(float(args.get("queued_us", 0)) * 1000)
        node = nodes.setdefault(str(event["name"]), len(nodes))
        tasks.append(
            (
                int(event["tid"]),
                start,
                end,
                node,
                args["instance"],
                args["frame"],
                args["slot"],
                ready,
            )
        )
    title = f"trace of {described.get('scheduler', '?')} on {described.get('graph', path.name)}"
    return trace_payload(
        tasks,
        list(nodes),
        title=title,
        workers=int(described.get("workers") or 0),
        slots=int(described.get("slots") or 0),
    )


def _from_csv(path: Path, text: str) -> dict[str, Any]:
    rows = list(csv.reader(text.splitlines()))
    header = trace_csv_columns()
    if not rows or rows[0] != header:
        raise TomiiError(
            f"{path}: not a trace (a Chrome trace, or a CSV with the header {','.join(header)})"
        )
    nodes: dict[str, int] = {}
    tasks: list[Task] = []
    for number, row in enumerate(rows[1:], start=2):
        try:
            name, instance, frame, slot, worker, ready, start, end = row
            node = nodes.setdefault(name, len(nodes))
            tasks.append(
                (int(worker), int(start), int(end), node, int(instance), int(frame), int(slot),
                 int(ready))
            )  # fmt: skip
        except ValueError:
            raise TomiiError(f"{path}: line {number} is not a trace row") from None
    return trace_payload(tasks, list(nodes), title=f"trace {path.name}")


def result_payload(result: RunResult) -> dict[str, Any]:
    """The payload of a run's trace kept in memory (`trace=True`)."""
    if result.trace is None:
        raise LookupError("no trace: run with trace=True to keep it in memory")
    report = result.report
    fields = ("worker", "start_ns", "end_ns", "node", "instance", "frame", "slot", "ready_ns")
    tasks: list[Task] = [
        (worker, start, end, node, instance, frame, slot, ready)
        for worker, start, end, node, instance, frame, slot, ready in zip(
            *(result.trace[name].tolist() for name in fields)
        )
    ]
    return trace_payload(
        tasks,
        result.node_names,
        title=f"trace of {report.get('scheduler', {}).get('name', '?')} on {report.get('graph')}",
        workers=int(report.get("workers", 0)),
        slots=int(report.get("slots", 0)),
    )


def write_trace_page(payload: dict[str, Any], path: str | Path) -> Path:
    """Writes the trace view of `payload` to `path` and returns the path."""
    path = Path(path)
    path.write_text(trace_page(payload), encoding="utf-8")
    return path


def view_trace(source: str | Path | RunResult, *, html_path: str | Path | None = None) -> Path:
    """Opens the trace view of `source` (a trace file, or a RunResult with its trace in memory)
    in the browser, or, with `html_path`, writes the page there without opening it. Returns the
    page's path (a temporary file, kept a day for the browser to read, when none is given)."""
    payload = load_trace(source) if isinstance(source, (str, Path)) else result_payload(source)
    if html_path is not None:
        return write_trace_page(payload, html_path)
    path = temporary_page("tomii-trace-", trace_page(payload))
    webbrowser.open(path.resolve().as_uri())
    return path
