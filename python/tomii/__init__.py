"""Tomii: build streaming task graphs and run them in-process with pluggable schedulers.

This is the first slice of the package: running a graph (JSON text, a dict or a file) through the
compiled runtime, with the GIL released while it runs. The graph builder of the Tomii 1.2 API
comes next.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from ._tomii import (
    ConfigError,
    GraphError,
    KernelError,
    PluginError,
    SchedulerFault,
    TomiiError,
    knobs_table,
    run_json,
)
from .graph import Condition, Graph, Loop, Node, NodeDep, NodeOutput, Var
from .types import (
    Complex32,
    Complex64,
    String,
    Vec,
    bool_,
    char_,
    f32,
    f64,
    i8,
    i16,
    i32,
    i64,
    i128,
    infer_type,
    isize,
    u8,
    u16,
    u32,
    u64,
    u128,
    usize,
)

__all__ = [
    "Complex32",
    "Complex64",
    "Condition",
    "ConfigError",
    "Graph",
    "GraphError",
    "KernelError",
    "Loop",
    "Node",
    "NodeDep",
    "NodeOutput",
    "PluginError",
    "RunResult",
    "SchedulerFault",
    "String",
    "TomiiError",
    "Var",
    "Vec",
    "bool_",
    "char_",
    "f32",
    "f64",
    "find_scheduler",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "infer_type",
    "isize",
    "list_knobs",
    "run_graph",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
]

GraphSource = Union[str, Path, dict[str, Any]]


@dataclass(frozen=True)
class RunResult:
    """What a run produced."""

    report: dict[str, Any]
    #: Per frame: (node, instance, value) for every sink instance.
    outputs: list[list[tuple[str, int, Any]]] = field(default_factory=list)
    #: (post-node, instance, value) for every post-node instance.
    post_outputs: list[tuple[str, int, Any]] = field(default_factory=list)


def find_scheduler(name: str) -> Path:
    """The scheduler library `name`: `libtomii_sched_NAME.so` on `$TOMII_SCHEDULER_PATH`."""
    file = f"libtomii_sched_{name.replace('-', '_')}.so"
    dirs = [Path(d) for d in os.environ.get("TOMII_SCHEDULER_PATH", "").split(os.pathsep) if d]
    for directory in dirs:
        if (directory / file).is_file():
            return directory / file
    searched = ", ".join(str(d) for d in dirs) or "nothing ($TOMII_SCHEDULER_PATH is empty)"
    raise PluginError(f"scheduler {name!r} not found: looked for {file} in {searched}")


def _graph_text(graph: GraphSource) -> tuple[str, str]:
    if isinstance(graph, dict):
        return json.dumps(graph), "graph"
    if isinstance(graph, Path) or not graph.lstrip().startswith("{"):
        path = Path(graph)
        try:
            return path.read_text(encoding="utf-8"), str(path)
        except OSError as error:
            raise GraphError(f"{path}: cannot read the graph: {error.strerror}") from None
    return graph, "graph"


def run_graph(
    graph: GraphSource,
    *,
    dylibs: list[str | Path],
    scheduler: str | Path = "fifo",
    scheduler_plugin: str | Path | None = None,
    workers: int = 1,
    slots: int = 1,
    frames: int = 1,
    pop_batch: int = 1,
    task_timing: bool = True,
    trace: str | Path | None = None,
    report: str | Path | None = None,
    collect_outputs: bool = True,
    stall_timeout_ms: int = 2000,
    on_scheduler_fault: str = "stop",
    sched_opts: dict[str, str] | None = None,
    quiet: bool = False,
) -> RunResult:
    """Runs `graph` (JSON text, a dict or a file path) in-process; the GIL is released meanwhile.

    The options are the knob catalog's (`tomii knobs`), by the same names; list knobs take the
    plural (`dylibs`, `sched_opts`). `scheduler` is a name (found on `$TOMII_SCHEDULER_PATH`) or a
    path to a scheduler library; `scheduler_plugin`, a path, replaces it. `trace` and `report` are
    file paths written after the run, as the CLI writes them. `quiet` is accepted for parity with
    the CLI: this function prints nothing either way. Raises a `TomiiError` subclass naming what
    failed.
    """
    text, source = _graph_text(graph)
    path = Path(scheduler_plugin if scheduler_plugin is not None else scheduler)
    if scheduler_plugin is not None or path.suffix == ".so" or path.is_file():
        plugin = path
    else:
        plugin = find_scheduler(str(scheduler))
    report_json, outputs, post = run_json(
        text,
        source=source,
        dylibs=[str(d) for d in dylibs],
        scheduler_plugin=str(plugin),
        workers=workers,
        slots=slots,
        frames=frames,
        pop_batch=pop_batch,
        task_timing=task_timing,
        trace=False,
        trace_path=None if trace is None else str(trace),
        collect_outputs=collect_outputs,
        stall_timeout_ms=stall_timeout_ms,
        on_scheduler_fault=on_scheduler_fault,
        sched_opts=sorted((sched_opts or {}).items()),
    )
    if report is not None:
        try:
            Path(report).write_text(
                json.dumps(json.loads(report_json), indent=2) + "\n", encoding="utf-8"
            )
        except OSError as error:
            raise TomiiError(f"{report}: cannot write the report: {error.strerror}") from None
    return RunResult(report=json.loads(report_json), outputs=outputs, post_outputs=post)


def list_knobs() -> str:
    """Every runtime option (`run_graph`, `Graph.run` and `tomii run`), as a table."""
    return knobs_table()
