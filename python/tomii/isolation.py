"""Calls in a child process, for code that may crash or hang: `Isolated.call(fn, *args,
timeout_s=...)` runs `fn` in a long-lived worker process, one call at a time. When the worker dies
(a signal, an exit code) or the time limit passes, the call raises `ChildFailed` saying what
happened, with the last lines the worker wrote to stderr, and the next call gets a fresh worker.
`tomii.experiments.sweep` and `tomii.check.check` run scheduler plugins through it.

Workers are started with multiprocessing's "spawn" (never fork: the parent may have threads) and
ignore SIGINT: on Ctrl-C the parent decides, and kills the worker of the call it interrupts.
Nothing is left behind: `close()` (or leaving the `with` block) ends the worker.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from types import TracebackType
from typing import Any, BinaryIO, TypeVar, final

import tomii

from .errors import TomiiError

__all__ = ["ChildFailed", "ChildStartFailed", "ChildTimeout", "Isolated"]

T = TypeVar("T")
E = TypeVar("E", bound="_ChildError")

#: How many of the worker's last stderr lines a `ChildFailed` quotes.
QUOTED_LINES = 5
#: How long a worker may take to start (a fresh interpreter importing tomii).
START_TIMEOUT_S = 60.0
#: How long a worker asked to stop may take before it is killed.
STOP_TIMEOUT_S = 2.0


class _ChildError(TomiiError):
    """What happened to a worker process: `reason`, its `stderr` text and `pid`."""

    def __init__(self, reason: str, stderr: str, pid: int | None) -> None:
        super().__init__(self.message(reason, _quoted(stderr), pid))
        self.reason = reason
        self.stderr = stderr
        self.pid = pid

    @staticmethod
    def message(reason: str, quoted: str, pid: int | None) -> str:
        return f"the child process (pid {pid}) {reason}{quoted}"


class ChildFailed(_ChildError):
    """The worker process running a call died, or was killed. `reason` says how ("was killed by
    SIGSEGV (signal 11) during run_trial", "exited with status 3 during run_graph"); `stderr`
    holds what the worker wrote to stderr during the call, `pid` its process id."""


class ChildTimeout(ChildFailed):
    """The call did not finish within its time limit; the worker was killed."""


class ChildStartFailed(_ChildError):
    """A worker process could not start. Nothing of the caller's ran yet, so this is no call's
    failure: callers raise it rather than blame a scheduler."""

    @staticmethod
    def message(reason: str, quoted: str, pid: int | None) -> str:
        return (
            f"a child process (pid {pid}) could not start: it {reason}{quoted}. A script that "
            'calls this at its top level needs `if __name__ == "__main__":` (the child imports '
            'the script again), or isolation="none"'
        )


def _quoted(stderr: str) -> str:
    """The last lines of `stderr`, for a message."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    return f"; its stderr ended with: {' | '.join(lines[-QUOTED_LINES:])}" if lines else ""


@final
class Isolated:
    """A worker process that runs calls one at a time, replaced whenever one kills it.

    `with Isolated() as child: child.call(fn, *args, timeout_s=60, **kwargs)`: `fn`, the arguments
    and the result travel by pickle (`fn` must be importable: a module-level function). An
    exception `fn` raises is raised again here; the worker stays, unless the exception says a
    plugin thread is stuck in it (`tomii.HangError`), and then it is replaced. What the worker writes to stderr is passed on to this process's stderr
    after each call.
    """

    def __init__(self) -> None:
        self._worker: _Worker | None = None

    def __enter__(self) -> Isolated:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    @property
    def pid(self) -> int | None:
        """The current worker's process id (None before the first call, after close)."""
        return None if self._worker is None else self._worker.process.pid

    def start(self) -> None:
        """Starts the worker now rather than at the first call (`with` does): a worker that
        cannot start (a script without `if __name__ == "__main__":`, say) raises
        `ChildStartFailed` here."""
        self._current()

    def call(
        self, fn: Callable[..., T], /, *args: Any, timeout_s: float | None = None, **kwargs: Any
    ) -> T:
        """`fn(*args, **kwargs)` in the worker, within `timeout_s` seconds (None: no limit).
        Raises `ChildTimeout` past the limit and `ChildFailed` when the worker dies."""
        worker = self._current()
        try:
            raised, value = worker.call(fn, args, kwargs, timeout_s)
        except BaseException:  # a dead worker, the time limit, Ctrl-C: this worker is done
            self._discard()
            raise
        if not raised:
            return value  # type: ignore[no-any-return]
        if _leaves_a_thread_running(value):
            self._discard()
        raise value

    def close(self) -> None:
        """Ends the worker (politely, then by SIGKILL); the next call would start another."""
        if self._worker is not None:
            worker, self._worker = self._worker, None
            worker.stop()

    def _current(self) -> _Worker:
        if self._worker is None:
            self._worker = _Worker()
        return self._worker

    def _discard(self) -> None:
        if self._worker is not None:
            worker, self._worker = self._worker, None
            worker.kill()


def _leaves_a_thread_running(error: BaseException) -> bool:
    """Whether `error` reports a plugin call that never returned: its thread still spins."""
    return isinstance(error, tomii.HangError)


@contextmanager
def _main_without_missing_file() -> Iterator[None]:
    """While a child is spawned: a `__main__` whose file does not exist (a script read from stdin,
    `<stdin>`) is left out of what the child imports again, as a `-c` command or a REPL is."""
    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    if main is None or path is None or os.path.isfile(path):
        yield
        return
    del main.__file__
    try:
        yield
    finally:
        main.__file__ = path


class _Worker:
    """One worker process: its connection, and the file its stderr goes to."""

    def __init__(self) -> None:
        fd, path = tempfile.mkstemp(prefix="tomii-worker-", suffix=".stderr")
        self.stderr: BinaryIO = os.fdopen(fd, "rb")
        self.seen = b""  # the stderr text of the current call (and of the start)
        context = multiprocessing.get_context("spawn")
        self.connection, theirs = context.Pipe()
        self.process: BaseProcess = context.Process(
            target=_serve, args=(theirs, path, os.getpid()), name="tomii-worker", daemon=True
        )
        try:
            with _main_without_missing_file():
                self.process.start()
            theirs.close()
            self._wait_until_ready()
        except BaseException:
            self.kill()
            raise
        finally:
            os.unlink(path)  # the worker has it open (or is gone): nothing left on disk

    def _wait_until_ready(self) -> None:
        if not wait([self.connection, self.process.sentinel], START_TIMEOUT_S):
            raise self._killed(f"did not start within {START_TIMEOUT_S:g} s", ChildStartFailed)
        try:
            self.connection.recv()
        except (EOFError, OSError):
            died = self._died("while starting")
            raise ChildStartFailed(died.reason, died.stderr, died.pid) from None

    def call(
        self, fn: Any, args: tuple[Any, ...], kwargs: dict[str, Any], timeout_s: float | None
    ) -> tuple[bool, Any]:
        """(raised, value): what `fn` returned, or the exception it raised."""
        name = getattr(fn, "__qualname__", repr(fn))
        what = f"during {name}"
        self.seen = b""
        try:
            self.connection.send((fn, args, kwargs))
        except (BrokenPipeError, ConnectionResetError):
            raise self._died(what) from None
        if not wait([self.connection, self.process.sentinel], timeout_s):
            raise self._killed(
                f"did not finish {name} within {timeout_s:g} s; killed", ChildTimeout
            )
        try:
            reply: tuple[bool, Any] = self.connection.recv()
        except (EOFError, OSError):
            raise self._died(what) from None
        self._pass_on_stderr()
        return reply

    def _died(self, what: str) -> ChildFailed:
        self.process.join(STOP_TIMEOUT_S)
        code = self.process.exitcode
        if code is None:
            return self._killed(f"closed its connection {what}; killed", ChildFailed)
        if code < 0:
            reason = f"was killed by {_signal_name(-code)} (signal {-code}) {what}"
        else:
            reason = f"exited with status {code} {what}"
        self._pass_on_stderr()
        return ChildFailed(reason, self.seen.decode(errors="replace"), self.process.pid)

    def _killed(self, reason: str, kind: type[E]) -> E:
        self.kill()
        return kind(reason, self.seen.decode(errors="replace"), self.process.pid)

    def _pass_on_stderr(self) -> None:
        """Copies what the worker wrote to stderr since the last look to this process's."""
        if self.stderr.closed:
            return
        text = self.stderr.read()
        if text:
            self.seen += text
            sys.stderr.write(text.decode(errors="replace"))
            sys.stderr.flush()

    def stop(self) -> None:
        self.connection.close()  # the worker's next receive ends its loop
        self.process.join(STOP_TIMEOUT_S)
        self.kill()

    def kill(self) -> None:
        if self.process.is_alive():
            self.process.kill()
        if self.process.pid is not None:
            self.process.join()
        self._pass_on_stderr()
        self.connection.close()
        self.stderr.close()


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


# ---------------------------------------------------------------------------------------------
# In the worker


def _serve(connection: Connection, stderr_path: str, parent: int) -> None:
    """The worker's loop: receive (fn, args, kwargs), send back (raised, value), until the
    parent closes the connection."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _die_with(parent)
    fd = os.open(stderr_path, os.O_WRONLY | os.O_APPEND)
    os.dup2(fd, 2)
    os.close(fd)
    connection.send(os.getpid())
    while True:
        try:
            fn, args, kwargs = connection.recv()
        except EOFError:
            return
        try:
            reply: tuple[bool, Any] = (False, fn(*args, **kwargs))
        except BaseException as error:  # noqa: BLE001 (the caller's to handle)
            reply = (True, error)
        sys.stderr.flush()
        try:
            connection.send(reply)
        except Exception as error:  # noqa: BLE001 (a value that does not pickle)
            unsent = f"{getattr(fn, '__qualname__', fn)}: cannot send back {reply[1]!r}: {error}"
            connection.send((True, TomiiError(unsent)))


def _die_with(parent: int) -> None:
    """On Linux, asks the kernel to kill this worker when its parent dies (a worker stuck in a
    plugin would otherwise outlive a killed parent)."""
    if not sys.platform.startswith("linux"):
        return
    import ctypes

    pr_set_pdeathsig = 1
    ctypes.CDLL(None).prctl(pr_set_pdeathsig, signal.SIGKILL)
    if os.getppid() != parent:  # the parent died before that
        os._exit(1)
