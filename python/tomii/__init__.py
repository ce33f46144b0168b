"""Tomii: build streaming task graphs and run them in-process with pluggable schedulers.

    import tomii as tm

    app = tm.Graph()
    buf_size = app.var("buf_size", 100)
    gen_vec = app.node("gen_vec", func="generate_vector", factor=8, args=[buf_size])
    fft = app.node("compute_fft", func="compute_fft", factor=8, args=[gen_vec.out()])
    app.build(func_path="plugin/src/lib.rs", plugin_manifest="plugin/Cargo.toml")
    result = app.run(workers=4, slots=2, trace=True)
    print(result.report.throughput_frames_per_s, result.trace[:5])

Runs happen in this process with the GIL released; kernels are Rust, C (built by `build()` into a
plugin, never into the runtime) or Python (`@tomii.export` + `Graph.py_node`).
"""

from __future__ import annotations

from . import graphs, knobs, network
from ._warnings import GraphWarning
from .build import BuildFunction, BuildResult
from .errors import (
    ConfigError,
    GraphError,
    HangError,
    KernelError,
    NetworkIdleError,
    PluginError,
    SchedulerFault,
    SessionBusy,
    SessionClosed,
    TomiiError,
)
from .export import (
    CallContext,
    TomiiExportError,
    call_context,
    export,
    procs,
)
from .graph import INDEX, WORKERS, Condition, Graph, IndexFunc, Loop, Node, NodeDep, NodeOutput, Var
from .knobs import knob_space, list_knobs
from .network import SendStats, send
from .plugins import find_plugin, find_scheduler, installed_schedulers
from .run import TRACE_DTYPE, Report, RunResult, run_graph, validate
from .scaffold import new_scheduler
from .scheduler import Scheduler, SchedulerInit, Task
from .session import Frame, FrameResult, Session
from .simulation import simulate
from .trace_view import view_trace
from .tune import tune
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

#: `build(func_path=...)` compiles a kernel plugin; `build.sdk_dir()`, `build.glue_for(...)` and
#: `build.build(...)` are the functions of the module tomii.build, which this name would hide.
build = BuildFunction()

__all__ = [
    "INDEX",
    "TRACE_DTYPE",
    "WORKERS",
    "BuildResult",
    "CallContext",
    "Complex32",
    "Complex64",
    "Condition",
    "ConfigError",
    "Frame",
    "FrameResult",
    "Graph",
    "GraphError",
    "GraphWarning",
    "HangError",
    "IndexFunc",
    "KernelError",
    "Loop",
    "NetworkIdleError",
    "Node",
    "NodeDep",
    "NodeOutput",
    "PluginError",
    "Report",
    "RunResult",
    "Scheduler",
    "SchedulerFault",
    "SchedulerInit",
    "SendStats",
    "Session",
    "SessionBusy",
    "SessionClosed",
    "String",
    "Task",
    "TomiiError",
    "TomiiExportError",
    "Var",
    "Vec",
    "bool_",
    "build",
    "call_context",
    "char_",
    "export",
    "f32",
    "f64",
    "find_plugin",
    "find_scheduler",
    "graphs",
    "i8",
    "i16",
    "i32",
    "i64",
    "i128",
    "infer_type",
    "installed_schedulers",
    "isize",
    "knob_space",
    "knobs",
    "list_knobs",
    "network",
    "new_scheduler",
    "procs",
    "run_graph",
    "send",
    "simulate",
    "tune",
    "u8",
    "u16",
    "u32",
    "u64",
    "u128",
    "usize",
    "validate",
    "view_trace",
]
