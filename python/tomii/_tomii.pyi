"""Type stubs of the compiled module `tomii._tomii` (tomii-py/src/lib.rs)."""

from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

#: What `run_json` and `simulate_json` return: the report's JSON, each frame's outputs, the
#: post-nodes' outputs, the trace (if kept: its records' bytes, laid out as `trace_fields` says,
#: and the node names) and the exception the run ended with (if any).
_Finished: TypeAlias = tuple[
    str,
    list[list[tuple[str, int, Any]]],
    list[tuple[str, int, Any]],
    tuple[bytes, list[str]] | None,
    BaseException | None,
]

class TomiiError(Exception): ...
class GraphError(TomiiError): ...
class PluginError(TomiiError): ...
class KernelError(TomiiError): ...
class SchedulerFault(TomiiError): ...
class HangError(TomiiError): ...
class ConfigError(TomiiError): ...

def knobs_json() -> str: ...
def knobs_table() -> str: ...
def schema_json(dialect: str = ...) -> str: ...
def convert_json(
    graph_json: str, source: str, workers: int | None = None
) -> tuple[str, str, list[str]]: ...
def cli_main(argv: list[str]) -> int: ...
def write_chrome_trace(path: str, data: bytes, names: list[str], report_json: str) -> None: ...
def write_trace_csv(path: str, data: bytes, names: list[str]) -> None: ...
def trace_fields() -> list[tuple[str, str, str | None]]: ...
def trace_csv_columns() -> list[str]: ...
def call_context() -> tuple[str, int, int, int, int | None] | None: ...
def send_packets(
    *,
    socket_type: str,
    address: str,
    start_port: int,
    num_sockets: int,
    packet_length: int | None,
    frame_packets: int | None,
    frames: int,
    first_frame: int,
    rate: float | None,
    path: str | None,
    packets: Iterable[bytes | bytearray | memoryview] | None,
) -> tuple[int, int, float]: ...
def run_json(
    graph_json: str,
    *,
    source: str,
    dylibs: list[str],
    scheduler_plugin: str,
    workers: int,
    slots: int,
    frames: int,
    pop_batch: int,
    inline_continuation: bool,
    task_timing: bool,
    trace: bool,
    trace_path: str | None,
    collect_outputs: bool,
    stall_timeout_ms: int,
    on_scheduler_fault: str,
    sched_opts: list[tuple[str, str]],
    python_kernels: list[tuple[str, Callable[..., Any], bool]],
    network: tuple[int, int, str, str, int, int],
    scheduler_call_timeout_ms: int,
    kernel_timeout_ms: int,
    warmup_frames: int,
    max_runtime_s: int,
    timing_path: str | None,
    record_path: str | None,
    trace_format: str,
    decisions_path: str | None,
) -> _Finished: ...

class SessionBusy(TomiiError): ...
class SessionClosed(TomiiError): ...

class NativeTicket:
    def wait(
        self, timeout: float | None = None
    ) -> tuple[int, float, list[tuple[str, int, Any]]] | None: ...
    def done(self) -> bool: ...

class NativeSession:
    def __init__(
        self,
        graph_json: str,
        *,
        source: str,
        dylibs: list[str],
        scheduler_plugin: str,
        workers: int,
        slots: int,
        pop_batch: int,
        inline_continuation: bool,
        task_timing: bool,
        stall_timeout_ms: int,
        on_scheduler_fault: str,
        sched_opts: list[tuple[str, str]],
        python_kernels: list[tuple[str, Callable[..., Any], bool]],
    ) -> None: ...
    def inputs(self) -> list[tuple[str, int]]: ...
    def submit(self, values: list[Any], timeout: float | None = None) -> NativeTicket: ...
    def in_flight(self) -> int: ...
    def is_open(self) -> bool: ...
    def set_scheduler_option(self, key: str, value: str) -> None: ...
    def close(self) -> str: ...

def simulate_json(
    graph_json: str,
    *,
    source: str,
    scheduler_plugin: str,
    workers: int,
    slots: int,
    frames: int,
    warmup_frames: int,
    pop_batch: int,
    seed: int,
    cost_json: str | None,
    arrival_interval_ns: int | None,
    overhead_pop_ns: int,
    overhead_task_ns: int,
    sched_opts: list[tuple[str, str]],
    trace: bool,
    trace_path: str | None,
    trace_format: str,
) -> _Finished: ...
