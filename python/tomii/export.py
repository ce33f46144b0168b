"""Python kernels: `@export` registers a function under a name graphs use; `@procs()` runs it in a
process pool.

A Python kernel is called in-process, from the runtime's worker threads, holding the GIL only
around the call (tomii-py/src/python_kernels.rs). Its arguments arrive as Python values: numbers,
strings, bytes, NumPy arrays (the very array object when another Python kernel returned it, a copy
when a Rust or C kernel did), lists for a variadic kernel's trailing results, or any object another
Python kernel returned. Treat arguments as read-only: several kernels may read the same array.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import functools
import importlib
import inspect
import os
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from multiprocessing import get_context
from typing import Any, TypeVar, overload

from ._tomii import call_context as _call_context
from .errors import TomiiError

__all__ = [
    "CallContext",
    "ExportedKernel",
    "TomiiExportError",
    "call_context",
    "export",
    "find_exported",
    "procs",
]

F = TypeVar("F", bound=Callable[..., Any])


class TomiiExportError(TomiiError):
    """A Python kernel cannot be registered, found or imported by name."""


@dataclass(frozen=True)
class ExportedKernel:
    """A function registered by `@export` under `name`."""

    name: str
    function: Callable[..., Any]
    variadic: bool


@dataclass(frozen=True)
class CallContext:
    """The call a Python kernel serves."""

    node: str
    #: The instance's index within its node (the element's, for a computed initialization).
    instance: int
    frame: int
    slot: int
    #: The worker running the call; None for initializations and post-nodes.
    worker: int | None


def call_context() -> CallContext:
    """The call the running Python kernel serves (its node, instance, frame, slot and worker).

    Raises RuntimeError outside a kernel call. A `@procs()` body runs in another process: ask in
    the exported function and pass what it needs as arguments.
    """
    current = _call_context()
    if current is None:
        raise RuntimeError("tomii.call_context() is only available inside a kernel call")
    return CallContext(*current)


_REGISTRY: dict[str, ExportedKernel] = {}
_LOCK = threading.Lock()


@overload
def export(fn: F, *, variadic: bool = False, name: str | None = None) -> F: ...
@overload
def export(
    fn: None = None, *, variadic: bool = False, name: str | None = None
) -> Callable[[F], F]: ...
def export(
    fn: F | None = None, *, variadic: bool = False, name: str | None = None
) -> F | Callable[[F], F]:
    """Marks `fn` as a kernel, registered as `name` (default `"{module}.{function}"`).

    Returns `fn` itself: calling it directly from Python is unaffected. With `variadic=True` the
    trailing results arguments arrive as one list, the last positional argument. A function of a
    script's `__main__` works for in-process runs; only where a kernel must be imported by name in
    another process (`procs()`, a graph JSON run from the command line) is that an error.
    """

    def register(function: F) -> F:
        if not callable(function):
            raise TypeError(f"@tomii.export needs a function, got {type(function).__name__}")
        key = name if name is not None else f"{_module_of(function)}.{function.__qualname__}"
        if not isinstance(key, str) or not key:
            raise ValueError("@tomii.export: name must be a non-empty string")
        with _LOCK:
            known = _REGISTRY.get(key)
            if known is not None and _origin(known.function) != _origin(function):
                raise TomiiExportError(
                    f"@tomii.export: {key!r} is already registered by another function "
                    f"({_origin(known.function)}); pass name=... to register this one"
                )
            _REGISTRY[key] = ExportedKernel(key, function, variadic)
        return function

    return register if fn is None else register(fn)


#: How long the interpreter's exit waits for Python kernels told to stop (`_stop_running_kernels`).
EXIT_STOP_S = 1.0
#: The code of functions besides kernels that run on worker threads (a Python scheduling policy's
#: methods), stopped at exit as kernels are.
_ALSO_STOPPED: set[Any] = set()


def stop_at_exit(functions: Iterable[Callable[..., Any]]) -> None:
    """Makes the interpreter's exit stop `functions` as it stops Python kernels, when one still
    runs on a worker thread (`_stop_running_kernels`): a Python policy's methods."""
    codes = {getattr(inspect.unwrap(function), "__code__", None) for function in functions}
    codes.discard(None)
    with _LOCK:
        _ALSO_STOPPED.update(codes)


@atexit.register
def _stop_running_kernels() -> None:
    """At the interpreter's exit: a Python kernel (or policy method, `stop_at_exit`) still
    running on a worker thread (one whose time limit gave up on it, or a stuck session's) would
    ask for the GIL during the interpreter's finalization, which ends the process with SIGABRT.
    Each gets SystemExit raised in its thread, and the exit waits up to EXIT_STOP_S for them to
    return."""
    with _LOCK:
        codes = {inspect.unwrap(kernel.function).__code__ for kernel in _REGISTRY.values()}
        codes |= _ALSO_STOPPED
    codes.discard(None)

    def running() -> list[int]:
        return [
            ident
            for ident, frame in sys._current_frames().items()
            if ident != threading.main_thread().ident and _runs_one_of(frame, codes)
        ]

    stopping = running()
    for ident in stopping:
        ctypes.pythonapi.PyThreadState_SetAsyncExc(
            ctypes.c_ulong(ident), ctypes.py_object(SystemExit)
        )
    deadline = time.monotonic() + EXIT_STOP_S
    while stopping and running() and time.monotonic() < deadline:
        time.sleep(0.01)


def _runs_one_of(frame: Any, codes: set[Any]) -> bool:
    """Whether `frame` or a frame below it runs one of `codes`."""
    while frame is not None:
        if frame.f_code in codes:
            return True
        frame = frame.f_back
    return False


def _module_of(function: Callable[..., Any]) -> str:
    """The module `function` was defined in, by the name its callers know: a script imported
    again by a child process (`__mp_main__`, as `tomii.isolation` and multiprocessing do) is
    `__main__`."""
    module = function.__module__
    return "__main__" if module == "__mp_main__" else module


def _origin(function: Callable[..., Any]) -> str:
    code = getattr(function, "__code__", None)
    where = f"{code.co_filename}:{code.co_firstlineno}" if code is not None else "?"
    return f"{getattr(function, '__qualname__', function)!s} at {where}"


def find_exported(function: Callable[..., Any] | str) -> ExportedKernel:
    """The registration of `function`, given as the function or as its registered name.

    A name `"package.module.fn"` not registered yet imports `package.module` first (which runs its
    `@export` decorators). Raises `TomiiExportError` saying what to do.
    """
    if isinstance(function, str):
        module, _, attr = function.rpartition(".")
        if module == "__main__":
            from .isolation import import_parent_script

            import_parent_script(f"Python kernel {function!r}")  # in a child process
        with _LOCK:
            found = _REGISTRY.get(function)
        if found is not None:
            return found
        if not module:
            raise TomiiExportError(
                f"Python kernel {function!r}: expected 'module.function' or a registered name"
            )
        try:
            importlib.import_module(module)
        except ImportError as error:
            raise TomiiExportError(
                f"Python kernel {function!r}: cannot import module {module!r} ({error}); "
                "check the name and that the module is on sys.path"
            ) from None
        with _LOCK:
            found = _REGISTRY.get(function)
        if found is None:
            raise TomiiExportError(
                f"Python kernel {function!r}: module {module!r} has no @tomii.export "
                f"function registered as that name (is {attr!r} decorated?)"
            )
        return found
    with _LOCK:
        for kernel in _REGISTRY.values():
            if kernel.function is function:
                return kernel
    label = getattr(function, "__qualname__", repr(function))
    raise ValueError(
        f"{label} is not registered as a kernel: decorate it with @tomii.export "
        "(or pass its registered name)"
    )


_POOL: ProcessPoolExecutor | None = None
_POOL_LOCK = threading.Lock()
_MAIN_LOCK = threading.Lock()


def _pool(workers: int | None) -> ProcessPoolExecutor:
    global _POOL
    with _POOL_LOCK:
        if _POOL is None:
            # "spawn": forking a process whose runtime threads hold locks could deadlock the child.
            _POOL = ProcessPoolExecutor(max_workers=workers, mp_context=get_context("spawn"))
        return _POOL


@contextlib.contextmanager
def _main_not_reimported() -> Iterator[None]:
    """Starts pool processes without re-running the caller's script.

    A "spawn" process imports the parent's `__main__` before anything else, which re-runs a
    script without an `if __name__ == "__main__":` guard, graph, run and all. The pool needs only
    the function's own module, so while `submit` may start processes, `__main__` shows no file or
    spec to re-import.
    """
    main = sys.modules.get("__main__")
    if main is None:
        yield
        return
    with _MAIN_LOCK:
        hidden: dict[str, Any] = {
            k: main.__dict__.pop(k) for k in ("__file__", "__spec__") if k in main.__dict__
        }
        try:
            main.__spec__ = None
            yield
        finally:
            del main.__spec__
            main.__dict__.update(hidden)


def _call_by_name(module: str, qualname: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """Runs in a pool process: imports the decorated function and calls the original body."""
    target: Any = importlib.import_module(module)
    for part in qualname.split("."):
        target = getattr(target, part)
    original = getattr(target, "__tomii_procs_body__", target)
    return original(*args, **kwargs)


def procs(workers: int | None = None) -> Callable[[F], F]:
    """Runs the decorated function in a shared process pool (`workers` processes, default the CPU
    count; the first `procs()` to run sizes the pool).

    The caller blocks on the result with the GIL released, so several runtime workers can wait on
    several processes at once: worth it for pure-Python work above roughly half a millisecond per
    call. The function must live in an importable module: the pool process imports it by name and
    runs the undecorated body (kept as `__tomii_procs_body__`), so the decorator's own name binding
    does not matter. Arguments and results cross by pickle.
    """
    if workers is not None and (isinstance(workers, bool) or workers < 1):
        raise ValueError(f"procs(workers=...) must be a positive int, got {workers!r}")

    def decorate(function: F) -> F:
        module, qualname = function.__module__, function.__qualname__
        if "<locals>" in qualname:
            raise TomiiExportError(
                f"@tomii.procs: {qualname} is defined inside a function; pool processes import "
                "functions by name, so define it at module level"
            )

        @functools.wraps(function)
        def dispatch(*args: Any, **kwargs: Any) -> Any:
            if module == "__main__":
                raise TomiiExportError(
                    f"@tomii.procs: {qualname} is defined in a script's __main__, which pool "
                    "processes cannot import: move it to an importable module"
                )
            with _main_not_reimported():
                future = _pool(workers).submit(_call_by_name, module, qualname, args, kwargs)
            return future.result()

        dispatch.__tomii_procs_body__ = function  # type: ignore[attr-defined]
        return dispatch  # type: ignore[return-value]

    return decorate


def shutdown_pool() -> None:
    """Stops the `procs()` pool, if one runs (it restarts on the next call)."""
    global _POOL
    with _POOL_LOCK:
        pool, _POOL = _POOL, None
    if pool is not None:
        pool.shutdown()


os.register_at_fork(after_in_child=lambda: globals().update(_POOL=None))
