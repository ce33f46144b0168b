"""Type stubs of the compiled module `tomii._tomii` (tomii-py/src/lib.rs). The exceptions it raises
are defined in `tomii.errors`, not here.
"""

from collections.abc import Callable, Iterable
from typing import Any, TypeAlias

class RunReport:
    """A run's report as the runtime made it; `to_dict()` makes the dict of its JSON."""

    graph_warnings: list[str]
    def to_dict(self) -> dict[str, Any]: ...

#: What `PreparedRun.run` and `simulate_json` return: the report (a `RunReport`), each
#: frame's outputs, the post-nodes' outputs, the trace (if kept: its records' bytes, laid out as
#: `trace_fields` says, and the node names) and the exception the run ended with (if any).
_Finished: TypeAlias = tuple[
    RunReport,
    list[list[tuple[str, int, Any]]],
    list[tuple[str, int, Any]],
    tuple[bytes, list[str]] | None,
    BaseException | None,
]

def knobs_json() -> str: ...
def knobs_table() -> str: ...
def schema_json(dialect: str = ...) -> str: ...
def convert_json(
    graph_json: str,
    source: str,
    workers: int | None = None,
    dylibs: list[str] = ...,
    python_kernels: list[tuple[str, Any, bool]] = ...,
) -> tuple[str, str, list[str]]: ...
def summarise_warnings(lines: list[str]) -> list[str]: ...
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

#: Run options as the binding takes them: `(knob, value)` by the knob catalog's names.
_Options: TypeAlias = list[tuple[str, Any]]

def knobs_taken(entry: str) -> list[tuple[str, str]]: ...
def prepare_run(
    graph_json: str,
    *,
    source: str,
    options: _Options,
    python_kernels: list[tuple[str, Callable[..., Any], bool]],
    collect_outputs: bool,
    keep_trace: bool,
) -> PreparedRun: ...

class PreparedRun:
    def is_current(self) -> bool: ...
    def run(self) -> _Finished: ...

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
        options: _Options,
        python_kernels: list[tuple[str, Callable[..., Any], bool]],
    ) -> None: ...
    def inputs(self) -> list[tuple[str, int]]: ...
    def submit(self, values: list[Any], timeout: float | None = None) -> NativeTicket: ...
    def in_flight(self) -> int: ...
    def is_open(self) -> bool: ...
    def set_scheduler_option(self, key: str, value: str) -> None: ...
    def close(self) -> str: ...
    def abandon(self) -> None: ...

def simulate_json(
    graph_json: str,
    *,
    source: str,
    options: _Options,
    keep_trace: bool,
    seed: int,
    cost_json: str | None,
    arrival_interval_ns: int | None,
    overhead_pop_ns: int,
    overhead_task_ns: int,
) -> _Finished: ...
def tomii_1_2_spellings() -> str: ...
def tomii_1_2_without_effect(name: str, value: str | None = None) -> str | None: ...
def inits_listing(graph_json: str, source: str, workers: int) -> str: ...
