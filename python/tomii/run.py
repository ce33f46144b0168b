"""Runs of a graph in this process: `run_graph`, what it returns (`RunResult` with its `Report` and
a trace of dtype `TRACE_DTYPE`) and `validate`, which loads a graph as a run would. `Graph.run`,
`Session` and `simulate` share its helpers; this module never builds or edits a graph.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import inspect
import json
import os
import sys
import warnings
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import FrozenInstanceError, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from ._options import PYTHON_NAMES, catalog_knobs, check_run_options, runtime_options
from ._tomii import (
    PreparedRun,
    RunReport,
    convert_json,
    inits_listing,
    prepare_run,
    tomii_1_2_spellings,
    tomii_1_2_without_effect,
    trace_fields,
    write_chrome_trace,
    write_trace_csv,
)
from ._warnings import user_stacklevel, warn_graph
from .errors import ConfigError, GraphError, TomiiError
from .export import ExportedKernel, TomiiExportError, find_exported
from .graph import Graph, _environment
from .plugins import find_scheduler
from .scheduler import PolicyLike, _Spec, policy_spec

if TYPE_CHECKING:
    import numpy as np

__all__ = ["TRACE_DTYPE", "GraphSource", "Report", "RunResult", "run_graph", "validate"]

#: The fields of a trace record (one task execution), as `RunResult.trace` holds them: times in
#: nanoseconds since the run started; `node` indexes `RunResult.node_names`. The runtime declares
#: them (tomii-core's `TaskRecord`); this is its NumPy dtype, `(name, type)` per field.
TRACE_DTYPE: list[tuple[str, str]] = [(name, dtype) for name, dtype, _unit in trace_fields()]


class Report(dict[str, Any]):
    """The run report (the JSON of `--report`), as a dict, with typed attributes for its figures."""

    @property
    def throughput_frames_per_s(self) -> float:
        return float(self["throughput_frames_per_s"])

    @property
    def tasks_per_s(self) -> float:
        return float(self["tasks_per_s"])

    @property
    def wall_time_s(self) -> float:
        return float(self["wall_time_s"])

    @property
    def frames(self) -> int:
        return int(self["frames"])

    @property
    def tasks(self) -> int:
        return int(self["tasks"])

    @property
    def tasks_inlined(self) -> int:
        """Tasks run as inline continuations, past the scheduler (`inline_continuation=True`)."""
        return int(self["tasks_inlined"])

    @property
    def tasks_kept(self) -> int:
        """Tasks the scheduler kept for the worker whose completion made them ready (`push_keep`)."""
        return int(self["tasks_kept"])

    @property
    def workers(self) -> int:
        return int(self["workers"])

    @property
    def slots(self) -> int:
        return int(self["slots"])

    @property
    def scheduler(self) -> str:
        """The scheduler's name."""
        return str(self["scheduler"]["name"])

    @property
    def latency_us(self) -> dict[str, float]:
        """Frame latency in microseconds: mean, p50, p95, p99, min, max."""
        return {key: float(value) for key, value in self["latency_us"].items()}

    @property
    def per_node(self) -> list[dict[str, Any]]:
        return list(self["per_node"])

    @property
    def per_worker(self) -> list[dict[str, Any]]:
        return list(self["per_worker"])

    def summary(self) -> str:
        """The run in one line, as `tomii run` prints it at the end (a failed or interrupted run
        says so first)."""
        latency = self.latency_us
        line = (
            f"{self.scheduler} on {self['graph'] or 'graph'}: {self.frames} frames "
            f"({self.tasks} tasks) in {self.wall_time_s:.3f} s: "
            f"{self.throughput_frames_per_s:.0f} frames/s, {self.tasks_per_s:.0f} tasks/s; "
            f"frame latency p50 {latency['p50']:.1f} µs, p95 {latency['p95']:.1f} µs, "
            f"p99 {latency['p99']:.1f} µs"
        )
        if self.get("frames_excluded"):
            line += f"; {self['frames_excluded']} warm-up frame(s) left out"
        if self.get("status", "completed") != "completed":
            return f"{self['status']} ({self.get('error')}): {line}"
        if self.get("interrupted"):
            return f"interrupted: {line}"
        return line


class RunResult:
    """What a run produced: its `report`, each frame's `outputs`, the post-nodes' `post_outputs`,
    the `trace` and the graph's `node_names`. Read-only.

    The report is made into a `Report` (a dict of about a hundred values) when first read, so that
    a graph run again and again for its outputs does not pay for a report nobody reads."""

    __slots__ = ("_report", "node_names", "outputs", "post_outputs", "trace")

    _report: Report | RunReport
    #: Per frame: (node, instance, value) for every sink instance.
    outputs: list[list[tuple[str, int, Any]]]
    #: (post-node, instance, value) for every post-node instance.
    post_outputs: list[tuple[str, int, Any]]
    #: One record per task execution (dtype `TRACE_DTYPE`), sorted by start; None unless traced.
    trace: np.ndarray[Any, Any] | None
    #: The graph's node names; a trace record's `node` indexes them.
    node_names: list[str]

    def __init__(
        self,
        report: Report | RunReport,
        outputs: list[list[tuple[str, int, Any]]] | None = None,
        post_outputs: list[tuple[str, int, Any]] | None = None,
        trace: np.ndarray[Any, Any] | None = None,
        node_names: list[str] | None = None,
    ) -> None:
        given = {
            "_report": report,
            "outputs": outputs or [],
            "post_outputs": post_outputs or [],
            "trace": trace,
            "node_names": node_names or [],
        }
        for name, value in given.items():
            object.__setattr__(self, name, value)

    @property
    def report(self) -> Report:
        """The run report (the JSON of `--report`)."""
        report = self._report
        if not isinstance(report, Report):
            report = Report(report.to_dict())
            object.__setattr__(self, "_report", report)
        return report

    def __setattr__(self, name: str, value: Any) -> None:
        raise FrozenInstanceError(f"cannot assign to field {name!r}")

    def __delattr__(self, name: str) -> None:
        raise FrozenInstanceError(f"cannot delete field {name!r}")

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RunResult):
            return NotImplemented
        return self._fields() == other._fields()

    __hash__ = None  # type: ignore[assignment]

    def __reduce__(self) -> tuple[type[RunResult], tuple[Any, ...]]:
        return RunResult, self._fields()

    def _fields(self) -> tuple[Any, ...]:
        return (self.report, self.outputs, self.post_outputs, self.trace, self.node_names)

    def __repr__(self) -> str:
        """The report's one line and what else the result holds: the whole report and every
        output would bury a notebook's cell (`result.report` shows the report)."""
        held = [f"outputs of {len(self.outputs)} frame(s)"] if self.outputs else []
        held += [f"{len(self.post_outputs)} post-node output(s)"] if self.post_outputs else []
        held += [f"trace of {len(self.trace)} record(s)"] if self.trace is not None else []
        return f"RunResult({'; '.join([self.report.summary(), *held])})"

    def output(self, node: str, instance: int = 0, frame: int = -1) -> Any:
        """The value sink `node` (instance `instance`) produced in `frame` (default: the last)."""
        if not self.outputs:
            raise LookupError("no outputs: the run had collect_outputs=False or no frame")
        rows = self.outputs[frame]
        for name, index, value in rows:
            if name == node and index == instance:
                return value
        sinks = sorted({name for name, _, _ in rows})
        raise LookupError(
            f"no output of node {node!r} instance {instance}; sinks: {', '.join(sinks)}"
        )

    def save_trace(self, path: str | Path, format: str = "csv") -> None:
        """Writes the trace kept in memory (a run with `trace=True`) to `path`: `format="csv"` as
        `trace=FILE` writes it (node,instance,frame,slot,worker,ready_ns,start_ns,end_ns), or
        `"chrome"`, the trace-event JSON that Perfetto (ui.perfetto.dev) and chrome://tracing
        open: workers as threads, frames by slot, the run's events (warm-up end, an ejected
        scheduler, drops, the run's end) as instants."""
        if self.trace is None:
            raise LookupError("no trace: run with trace=True to keep it in memory")
        if format == "chrome":
            write_chrome_trace(
                str(path), self.trace.tobytes(), list(self.node_names), json.dumps(self.report)
            )
            return
        if format != "csv":
            raise ConfigError(f"format {format!r}: give 'csv' or 'chrome'")
        write_trace_csv(str(path), self.trace.tobytes(), list(self.node_names))

    def view_trace(self, html_path: str | Path | None = None) -> Path:
        """Opens the trace kept in memory (a run with `trace=True`) in the browser as a timeline:
        a self-contained page, each worker a lane of task bars coloured by frame, each slot a
        lane of frames, zoom and pan, a bar's details on click. With `html_path`, writes the
        page there instead of opening it. Returns the page's path."""
        from .trace_view import view_trace

        return view_trace(self, html_path=html_path)

    def trace_frame(self) -> Any:
        """The trace as a pandas DataFrame with a `node_name` column (needs pandas)."""
        if self.trace is None:
            raise LookupError("no trace: run with trace=True (or a trace file path)")
        try:
            import pandas as pd  # type: ignore[import-untyped,unused-ignore]
        except ImportError:
            raise ImportError("trace_frame() needs pandas: pip install pandas") from None
        frame = pd.DataFrame(self.trace)
        frame.insert(0, "node_name", [self.node_names[i] for i in self.trace["node"]])
        return frame


#: What a run takes as its graph: JSON text, a file's path, a graph dict or a `Graph`.
GraphSource = Union[str, Path, dict[str, Any], Graph]


#: The largest graph file read (the runtime's `graph::MAX_FILE_BYTES`).
_MAX_GRAPH_BYTES = 256 << 20


def _graph_text(graph: GraphSource) -> tuple[str, str]:
    if isinstance(graph, Graph):
        return graph._run_text(), "graph"
    if isinstance(graph, dict):
        return json.dumps(graph), "graph"
    if not isinstance(graph, (str, Path)):
        raise TypeError(
            f"the graph is of type {type(graph).__name__}: give a tomii.Graph, a graph dict, the graph's "
            "JSON text or the path of its file"
        )
    if isinstance(graph, Path) or not graph.lstrip().startswith("{"):
        path = Path(graph)
        # A name with control characters is shown escaped, so a message stays one line.
        shown = str(path).encode("unicode_escape").decode("ascii")
        try:
            if path.exists() and not path.is_file():
                # A FIFO would block the read, a device never end it.
                raise GraphError(f"{shown}: is not a regular file; give a graph JSON file")
            if path.exists() and path.stat().st_size > _MAX_GRAPH_BYTES:
                raise GraphError(
                    f"{shown}: the file has {path.stat().st_size} bytes, more than the "
                    f"{_MAX_GRAPH_BYTES} a graph may have"
                )
            return path.read_text(encoding="utf-8"), str(path)
        except OSError as error:
            raise GraphError(f"{shown}: cannot read the graph: {error.strerror}") from None
    return graph, "graph"


@functools.cache
def _tomii_1_2() -> dict[str, Any]:
    """Tomii 1.2's spellings of the run options, from the runtime's tables (the CLI's): `renamed`
    (keyword → knob, the catalog's aliases), `own` and `without_effect` (keyword → takes, why)."""
    return dict(json.loads(tomii_1_2_spellings()))


#: Tomii 1.2 keywords Python's run takes besides the CLI's flags: what its runner consumed.
_RUNNER_KEYWORDS = ("env", "binary", "release", "dylib")
#: Why `binary` and `release` mean nothing here.
_IN_PROCESS = "the runtime runs in this process, so no binary is chosen or started"


def _legacy_scheduler(name: str, value: Any) -> str | None:
    """The scheduler Tomii 1.2's `fifo=True` or `custom=True|NAME` names (None: not asked for)."""
    if name == "fifo":
        return "fifo" if value else None
    if value is True:
        return "priority"  # 1.2's custom scheduler was its priority scheduler
    if isinstance(value, str) and value:
        return value
    if value is False or value is None:
        return None
    raise ConfigError(f"custom={value!r}: give True (the priority scheduler) or a scheduler's name")


@dataclass
class _Legacy:
    """What Tomii 1.2's keywords of a run ask for beyond the catalog's knobs."""

    options: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] | None = None
    output: str | Path | None = None
    inits: bool = False
    slot_priority: bool = False


def _read_legacy(given: dict[str, Any]) -> _Legacy:
    """Tomii 1.2's keywords of `given`: renamed knobs, the schedulers `fifo`/`custom` name (fifo
    wins, as in 1.2), the options with a meaning of their own, and one warning for each option
    without effect; any other name raises ConfigError listing the valid ones."""
    spellings = _tomii_1_2()
    plural = {single: many for single, many in PYTHON_NAMES.items()}
    legacy = _Legacy()
    schedulers = {}
    for name, value in given.items():
        if name in ("fifo", "custom"):
            named = _legacy_scheduler(name, value)
            if named is not None:
                schedulers[name] = named
        elif name in spellings["renamed"]:
            legacy.options[spellings["renamed"][name]] = value
        elif name in plural:
            legacy.options[plural[name]] = value
        elif name == "env":
            legacy.env = None if value is None else {str(k): str(v) for k, v in dict(value).items()}
        elif name == "output":
            legacy.output = value
        elif name in ("inits", "slot_priority"):
            setattr(legacy, name, bool(value))
        elif name in ("binary", "release"):
            _warn(f"run option {name!r} has no effect here: {_IN_PROCESS}")
        elif name in spellings["without_effect"]:
            takes = spellings["without_effect"][name]["takes"]
            if value is None or value is False:
                continue
            text = None if takes == "flag" else str(value)
            warning = tomii_1_2_without_effect(name, text)
            if warning is not None:
                _warn(f"run option {name!r}: {warning}")
        else:
            valid = sorted(
                _knob_names()
                | set(spellings["renamed"])
                | set(spellings["own"]) - {"json"}
                | set(spellings["without_effect"])
                | set(_RUNNER_KEYWORDS)
            )
            raise ConfigError(f"unknown run option {name!r}; valid options: {', '.join(valid)}")
    if len(schedulers) == 2:
        _warn(
            f"fifo=True and custom={given['custom']!r} (Tomii 1.2) both name a scheduler: "
            "fifo wins, as it did in Tomii 1.2"
        )
    if schedulers:
        legacy.options["scheduler"] = schedulers.get("fifo", schedulers.get("custom"))
    return legacy


def _warn(message: str) -> None:
    warnings.warn(message, stacklevel=user_stacklevel())


@contextlib.contextmanager
def _stdout_to(output: str | Path | None, graph: GraphSource) -> Iterator[None]:
    """Tomii 1.2's `output=FILE`: the run's standard output (file descriptor 1: the kernels'
    prints, the `inits` listing) goes to FILE, created or truncated, for the duration of the
    run; `"stdout"` or None leaves it where it is."""
    if output is None or str(output) == "stdout":
        yield
        return
    target = Path(output)
    shown = str(target).encode("unicode_escape").decode("ascii")
    if target.is_dir():
        raise ConfigError(
            f"output={shown}: is a directory; give a file for the run's printed lines"
        )
    graph_file: Path | None = None
    if isinstance(graph, Path) or (isinstance(graph, str) and not graph.lstrip().startswith("{")):
        graph_file = Path(graph)
    if graph_file is not None and target.exists() and target.resolve() == graph_file.resolve():
        raise ConfigError(f"output={shown}: is the graph file; give another file")
    try:
        fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    except OSError as error:
        raise ConfigError(f"output={shown}: cannot write here: {error.strerror}") from None
    _flush_stdout()
    saved = os.dup(1)
    try:
        os.dup2(fd, 1)
        yield
    finally:
        _flush_stdout()
        os.dup2(saved, 1)
        os.close(saved)
        os.close(fd)


def _flush_stdout() -> None:
    """Flushes Python's and the C library's buffers of standard output (a C kernel's printf)."""
    sys.stdout.flush()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).fflush(None)


def _is_network(text: str, spec: Any) -> bool:
    """Whether the graph has a network source (its JSON has a `network_config`)."""
    if spec is None:
        try:
            spec = json.loads(text)
        except json.JSONDecodeError:
            return False
    return isinstance(spec, dict) and spec.get("network_config") is not None


def run_graph(
    graph: GraphSource,
    *,
    dylibs: Sequence[str | Path] = (),
    python_kernels: Sequence[ExportedKernel] = (),
    scheduler: PolicyLike = "fifo",
    scheduler_plugin: str | Path | None = None,
    workers: int = 1,
    slots: int = 1,
    frames: int = 1,
    warmup_frames: int = 0,
    max_runtime_s: int = 0,
    pop_batch: int = 0,
    inline_continuation: bool = False,
    idle_spin: str = "adaptive",
    pin_workers: bool = False,
    task_timing: bool = True,
    trace: bool | str | Path | None = None,
    trace_format: str = "csv",
    record_decisions: str | Path | None = None,
    report: str | Path | None = None,
    timing: str | Path | None = None,
    record: bool | str | Path | None = None,
    record_stream: int | None = None,
    collect_outputs: bool = True,
    stall_timeout_ms: int = 2000,
    scheduler_call_timeout_ms: int = 10_000,
    kernel_timeout_ms: int = 0,
    on_scheduler_fault: str = "stop",
    sched_opts: dict[str, str] | None = None,
    receiver_threads: int = 1,
    socket_recv_buf_bytes: int = 16 << 20,
    network_dispatch: str = "packet",
    on_slots_busy: str = "drop",
    frame_timeout_ms: int = 1000,
    frame_window: int = 64,
    network_idle_timeout_ms: int = 10_000,
    quiet: bool = False,
    verbose: bool = False,
    **legacy: Any,
) -> RunResult:
    """Runs `graph` (a `Graph`, JSON text, a dict or a file path) in this process; the GIL is released while
    the runtime works and taken by Python kernels only around their calls.

    The options are the knob catalog's (`tomii.list_knobs()`), by the same names; list knobs take
    the plural (`dylibs`, `sched_opts`). `scheduler` is a name (a scheduler shipped with the
    package, or one on `$TOMII_SCHEDULER_PATH`), a path, or a policy written in Python (a
    `tomii.Scheduler` subclass, an instance of one, or its import path `module:Class`);
    `scheduler_plugin`, a path, replaces it.
    `trace=True` keeps the trace in `RunResult.trace`; a path writes it there instead, as CSV or,
    with `trace_format="chrome"`, as the trace-event JSON Perfetto opens (see
    `RunResult.save_trace`). `record_decisions` is a file that records every scheduling decision
    (which task each worker ran, in order) with the graph, knobs and scheduler, for `tomii replay
    FILE`. A graph's warnings are raised as one `GraphWarning` per kind (with a count and an
    example node); `verbose=True` raises one per line, as `report["graph_warnings"]` keeps them.
    `report` is a path the report JSON is written to; `timing` and `record` paths get Tomii 1.2's
    timing file and scheduler record (`record=True`: where 1.2 put it). `warmup_frames` leaves the
    first frames out of every figure; `max_runtime_s` stops the run after that many seconds (the
    frames in flight complete; the report says interrupted). Python kernels come from
    `python_kernels`
    and from the graph's function names of the form "module.function" registered by
    `@tomii.export` (their module is imported if needed). Tomii 1.2's run keywords are accepted
    with the meaning its command line gives them (python/README.md, "Running": `max_streams`,
    `exclude_streams`, `max_runtime`, `fifo`, `custom`, `dylib`, `inits`, `slot_priority`,
    `output`, `env`; those without effect here with one warning each); any other name raises
    ConfigError listing the valid ones. Failures raise a `TomiiError` subclass: GraphError,
    PluginError, KernelError (from a Python kernel's own exception), SchedulerFault, ConfigError,
    HangError (a scheduler call or kernel that did not return within its limit: its thread stays
    stuck in the process), NetworkIdleError (a network source heard no packet for
    `network_idle_timeout_ms` while frames were still expected). A run that fails after it
    started keeps what it did: the exception's `result` is a RunResult whose report has `status`
    "failed", the error and the frames done, with the trace of every task that ran; `report` and
    `trace` files are written all the same.
    Ctrl-C stops the run (the frames in flight complete) and raises KeyboardInterrupt carrying
    the `result`; a second Ctrl-C stops waiting for a run that does not end.
    """
    arguments = locals()
    reuse = _reuse_key(arguments)
    if reuse is not None:
        kept = _PREPARED.get(reuse)
        if kept is not None and kept.is_current():
            _PREPARED.move_to_end(reuse)
            return _launched(kept, verbose)
    check_run_options(arguments)
    given_legacy = _read_legacy(legacy)
    options = given_legacy.options
    check_run_options(options)
    frames = options.get("frames", frames)
    warmup_frames = options.get("warmup_frames", warmup_frames)
    max_runtime_s = options.get("max_runtime_s", max_runtime_s)
    scheduler = options.get("scheduler", scheduler)
    trace = options.get("trace", trace)
    sched_opts = options.get("sched_opts", sched_opts)
    if "dylibs" in options:
        extra = options["dylibs"]
        dylibs = [*dylibs, *([extra] if isinstance(extra, (str, Path)) else extra)]
    text, source, plugin, policy, kernels = _prepare(
        graph, python_kernels, scheduler, scheduler_plugin
    )
    if given_legacy.slot_priority:
        if _is_network(text, graph if isinstance(graph, dict) else None):
            on_slots_busy = "wait"
        else:
            _warn(f"run option 'slot_priority' {_tomii_1_2()['slot_priority_without_network']}")
    # The runtime checks every output path before the run (a FIFO, a directory, the graph file).
    trace_path = None if isinstance(trace, bool) or trace is None else str(trace)
    given = {**locals(), "scheduler": None, "scheduler_plugin": plugin, "trace": trace_path}
    with _environment(given_legacy.env), _stdout_to(given_legacy.output, graph):
        if given_legacy.inits:
            listing = inits_listing(text, source, int(workers))
            if given_legacy.output is None or str(given_legacy.output) == "stdout":
                sys.stdout.write(listing)
                sys.stdout.flush()
            else:
                os.write(1, listing.encode("utf-8"))
        prepared = prepare_run(
            text,
            source=source,
            options=runtime_options("run", given),
            python_kernels=kernels,
            collect_outputs=collect_outputs,
            keep_trace=trace is True,
            scheduler_policy=policy,
        )
        # Python kernels found by name in `@tomii.export`'s registry are found again next time:
        # the registry may have changed.
        given_kernels = {kernel.name for kernel in python_kernels}
        if reuse is not None and all(name in given_kernels for name, _, _ in kernels):
            _keep_prepared(reuse, prepared)
        return _launched(prepared, verbose)


#: Runs made ready, by what made them (`_reuse_key`): a repeated `run_graph` of the same graph
#: with the same options launches the run made ready before, its options checked, its kernel
#: libraries loaded and its graph compiled once, while those libraries are the files they were.
#: The most recently used `_PREPARED_KEPT` are kept.
_PREPARED: OrderedDict[tuple[Any, ...], PreparedRun] = OrderedDict()
_PREPARED_KEPT = 8


def _keep_prepared(key: tuple[Any, ...], prepared: PreparedRun) -> None:
    _PREPARED[key] = prepared
    _PREPARED.move_to_end(key)
    while len(_PREPARED) > _PREPARED_KEPT:
        _PREPARED.popitem(last=False)


def _run_given(
    text: str,
    dylibs: list[str | Path],
    python_kernels: list[ExportedKernel],
    knobs: dict[str, Any],
) -> RunResult:
    """`run_graph(text, dylibs=dylibs, python_kernels=python_kernels, **knobs)` (what `Graph.run`
    calls), which finds the run made ready for the same call by what the caller gave alone: a
    repeated call does not go through `run_graph`'s forty keyword arguments and their key."""
    given = _given_key(text, dylibs, python_kernels, knobs)
    reuse = _GIVEN.get(given) if given is not None else None
    if reuse is not None and (kept := _PREPARED.get(reuse)) is not None and kept.is_current():
        _PREPARED.move_to_end(reuse)
        return _launched(kept, bool(knobs.get("verbose", False)))
    result = run_graph(text, dylibs=dylibs, python_kernels=python_kernels, **knobs)
    if given is not None:
        # The key `run_graph` kept its run under: the same arguments with every default.
        arguments = _RUN_GRAPH.bind(text, dylibs=dylibs, python_kernels=python_kernels, **knobs)
        arguments.apply_defaults()
        reuse = _reuse_key(arguments.arguments)
        if reuse is not None and reuse in _PREPARED:
            _GIVEN[given] = reuse
            while len(_GIVEN) > _PREPARED_KEPT:
                _GIVEN.pop(next(iter(_GIVEN)), None)
    return result


#: The key of a kept run (`_PREPARED`) by the key of the `_run_given` call that made it.
_GIVEN: dict[tuple[Any, ...], tuple[Any, ...]] = {}
_RUN_GRAPH = inspect.signature(run_graph)
#: The keywords `_run_given` passes on: `run_graph`'s, but those it gives itself.
_RUN_GRAPH_KEYWORDS = frozenset(
    p.name for p in _RUN_GRAPH.parameters.values() if p.kind is p.KEYWORD_ONLY
) - {"dylibs", "python_kernels"}


def _given_key(
    text: str, dylibs: list[str | Path], python_kernels: list[ExportedKernel], knobs: dict[str, Any]
) -> tuple[Any, ...] | None:
    """What decides the run of a `_run_given` call, as `_reuse_key` says of `run_graph`'s: the
    given values with their types (the others are `run_graph`'s defaults); None for a call whose
    run must be made ready anew (a Tomii 1.2 keyword, a value that cannot be part of a key)."""
    if not _RUN_GRAPH_KEYWORDS.issuperset(knobs):
        return None
    given = tuple(
        sorted(
            (name, type(value), _frozen(value) if type(value) in _CONTAINERS else value)
            for name, value in knobs.items()
        )
    )
    key = (
        text,
        _frozen(dylibs),
        _frozen(python_kernels),
        given,
        os.environ.get("TOMII_SCHEDULER_PATH"),
    )
    try:
        hash(key)
    except TypeError:
        return None
    return key


def _reuse_key(arguments: dict[str, Any]) -> tuple[Any, ...] | None:
    """What decides the run `run_graph` makes ready from its `arguments`: the graph's JSON text,
    each option's value and type, and the scheduler search path (a scheduler's name is looked up
    on it). None when the run must be made ready anew: the graph is a file (which may change), a
    Tomii 1.2 keyword is given (its warnings and effects belong to each call), or a value cannot
    be part of a key."""
    *values, legacy = arguments.values()
    if legacy:
        return None
    graph = values[0]
    if isinstance(graph, Graph):
        values[0] = graph._run_text()
    elif isinstance(graph, dict):
        values[0] = json.dumps(graph)
    elif not (isinstance(graph, str) and graph.lstrip().startswith("{")):
        return None
    for i, value in enumerate(values):
        if type(value) in _CONTAINERS:
            values[i] = _frozen(value)
    # With each value's type: 1, 1.0 and True are equal, and different options.
    key = (tuple(values), tuple(map(type, values)), os.environ.get("TOMII_SCHEDULER_PATH"))
    try:
        hash(key)
    except TypeError:
        return None
    return key


#: The types of option values made into tuples for a key.
_CONTAINERS = (list, tuple, dict)


def _frozen(value: Any) -> Any:
    """A list, tuple or dict as a tuple of its items, each with its type."""
    items = value.items() if isinstance(value, dict) else value
    return tuple(
        (type(item), _frozen(item) if type(item) in _CONTAINERS else item) for item in items
    )


def _launched(prepared: PreparedRun, verbose: bool) -> RunResult:
    """Launches `prepared` and returns its RunResult; its graph's warnings are raised as
    `run_graph` says."""
    try:
        returned = prepared.run()
    except TomiiError as error:
        partial = getattr(error, "partial", None)
        if partial is not None:
            error.result = _run_result(partial[:4])  # type: ignore[attr-defined]
            del error.partial  # type: ignore[attr-defined]
            warn_graph(partial[0].graph_warnings, verbose)
        raise
    result = _run_result(returned[:4])
    warn_graph(returned[0].graph_warnings, verbose)
    signal = returned[4]
    if signal is not None:
        # Ctrl-C (or another signal's handler) raised during the run: the run stopped, completing
        # the frames in flight; the exception carries what it did.
        signal.result = result  # type: ignore[attr-defined]
        raise signal
    return result


def _run_result(returned: tuple[RunReport, Any, Any, Any]) -> RunResult:
    """The RunResult of what `PreparedRun.run` returned (the runtime wrote the files the run named)."""
    report, outputs, post, packed = returned
    records, names = (None, []) if packed is None else _trace_array(packed)
    return RunResult(
        report=report,
        outputs=outputs,
        post_outputs=post,
        trace=records,
        node_names=names,
    )


def _prepare(
    graph: GraphSource,
    python_kernels: Sequence[ExportedKernel],
    scheduler: PolicyLike,
    scheduler_plugin: str | Path | None,
) -> tuple[str, str, Path | None, _Spec | None, list[tuple[str, Any, bool]]]:
    """What the binding needs to start a run: the graph's text and source name, the scheduler:
    its library's path (a name is looked up; `scheduler_plugin`, a path, replaces it) or the
    Python policy's spec, and the Python kernels as `(name, function, variadic)`:
    `python_kernels` and those the graph names ("module.function") that `@tomii.export`
    registered."""
    text, source = _graph_text(graph)
    kernels = _kernels_of(text, graph, python_kernels)
    policy = policy_spec(scheduler) if scheduler_plugin is None else None
    if policy is not None:
        return text, source, None, policy, kernels
    path = Path(scheduler_plugin if scheduler_plugin is not None else scheduler)  # type: ignore[arg-type]
    if scheduler_plugin is not None or path.suffix == ".so" or path.is_file():
        plugin = path
    else:
        plugin = find_scheduler(str(scheduler))
    return text, source, plugin, None, kernels


def _kernels_of(
    text: str,
    graph: GraphSource,
    python_kernels: Sequence[ExportedKernel],
    *,
    missing_ok: bool = False,
) -> list[tuple[str, Any, bool]]:
    """`python_kernels` and those the graph names ("module.function") that `@tomii.export`
    registered, as `(name, function, variadic)`; with `missing_ok`, a name not registered is
    left for the run to report."""
    kernels = {k.name: k for k in python_kernels}
    for name in _python_names(text, graph if isinstance(graph, dict) else None):
        if name not in kernels:
            try:
                kernels[name] = find_exported(name)
            except TomiiExportError:
                if not missing_ok:
                    raise
    return [(k.name, k.function, k.variadic) for k in kernels.values()]


def _trace_array(packed: tuple[bytes, list[str]]) -> tuple[np.ndarray[Any, Any], list[str]]:
    import numpy as np

    data, names = packed
    return np.frombuffer(data, dtype=np.dtype(TRACE_DTYPE)).copy(), list(names)


def _knob_names() -> set[str]:
    return {knob["name"] for knob in catalog_knobs()} | {"dylibs", "sched_opts", "collect_outputs"}


def _python_names(text: str, spec: Any = None) -> list[str]:
    """The function names of the graph `text` (or of `spec`, the dict it was made from) that name
    Python kernels ("module.function")."""
    if spec is None:
        if "." not in text:
            return []  # no name of a Python kernel, and no need to read the text again
        try:
            spec = json.loads(text)
        except json.JSONDecodeError:
            return []  # the runtime's parser reports it, naming the line and column
    if not isinstance(spec, dict):
        return []
    names: list[str] = []
    # Anything malformed is skipped here: the runtime's parser reports it, naming the field.
    for section in ("initializations", "nodes", "post_nodes"):
        items = spec.get(section)
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            condition = item.get("condition")
            functions = [item.get("function")]
            if isinstance(condition, dict):
                functions.append(condition.get("function"))
            names += [f for f in functions if isinstance(f, str) and "." in f]
    return names


def validate(
    graph: GraphSource,
    *,
    workers: int | None = None,
    dylibs: Sequence[str | Path] = (),
) -> str:
    """Loads `graph` (JSON text, a dict, a file path or a `Graph`) as a run would, without running
    it: raises GraphError naming the node, argument or field at fault, and returns the graph's
    dialect ("tomii", or "tomii-1.2" with its warnings raised as GraphWarning). `workers` is what
    a Tomii 1.2 factor of "$workers" becomes. A count naming a computed initialization is
    computed, as a run computes it, with the kernels of `dylibs` and the Python kernels the graph
    names. A graph with a `network_config` is checked without binding its sockets."""
    if isinstance(graph, Graph):
        graph = graph.to_dict()
    text, source = _graph_text(graph)
    kernels = _kernels_of(text, graph, (), missing_ok=True)
    libraries = [str(Path(d)) for d in dylibs]
    dialect, _current, notes = convert_json(text, source, workers, libraries, kernels)
    warn_graph(notes)
    return dialect
