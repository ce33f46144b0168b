"""Python kernels the tests run; a module of its own so that they can be imported by name (a graph
JSON naming "pykernels.double", and the processes of `@tomii.procs`)."""

from __future__ import annotations

import os
import threading
from typing import Any

import numpy as np

import tomii

#: Data addresses of the arrays `make_array` returned, to prove the next kernel got the same memory.
MADE: set[int] = set()
_MADE_LOCK = threading.Lock()


@tomii.export
def make_array(n: int, scale: int) -> np.ndarray[Any, Any]:
    array = np.arange(n, dtype=np.float64) * scale
    with _MADE_LOCK:
        MADE.add(array.__array_interface__["data"][0])
    return array


@tomii.export
def address(array: np.ndarray[Any, Any]) -> int:
    """The address of the array it was given (a Python int, read natively by Rust kernels)."""
    return int(array.__array_interface__["data"][0])


@tomii.export
def double(value: Any) -> Any:
    return value * 2


@tomii.export(variadic=True)
def total(offset: int, values: list[Any]) -> float:
    return float(offset + sum(float(np.sum(v)) for v in values))


@tomii.export
def describe(value: Any) -> str:
    """The type and value of its argument, to check how Rust values arrive in Python."""
    if isinstance(value, np.ndarray):
        return f"ndarray {value.dtype} {value.tolist()}"
    return f"{type(value).__name__} {value!r}"


@tomii.export(name="custom.name")
def renamed() -> str:
    return "renamed"


@tomii.export
def fail_on_frame(frame_marker: int) -> int:
    raise ValueError(f"refusing marker {frame_marker}")


@tomii.export
def environment(name: str) -> str:
    return os.environ.get(name, "")


@tomii.export
@tomii.procs(workers=2)
def squares_in_a_process(n: int) -> list[int]:
    """Pure-Python work sent to the pool; returns its results and the pid that computed them."""
    return [x * x for x in range(n)] + [os.getpid()]


@tomii.export
def where_am_i() -> tuple[str, int, int, bool]:
    """The call it serves, as `tomii.call_context()` reports it."""
    context = tomii.call_context()
    return (context.node, context.instance, context.frame, context.worker is not None)


@tomii.export
def cpus_of_this_worker() -> tuple[int | None, list[int]]:
    """The worker running this call and the CPUs its thread may run on."""
    context = tomii.call_context()
    worker = None if context is None else context.worker
    return worker, sorted(os.sched_getaffinity(0))


#: `wait_for_release` sets STARTED when it runs, then waits (30 s at most) for RELEASED.
STARTED = threading.Event()
RELEASED = threading.Event()


@tomii.export
def wait_for_release() -> bool:
    STARTED.set()
    return RELEASED.wait(30)
