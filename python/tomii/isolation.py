"""Calls in a child process, for code that may crash or hang: `Isolated.call(fn, *args,
timeout_s=...)` runs `fn` in a long-lived worker process, one call at a time. When the worker dies
(a signal, an exit code) or the time limit passes, the call raises `ChildFailed` saying what
happened, with the last lines the worker wrote to stderr, and the next call gets a fresh worker.
`tomii.experiments.sweep`, `tomii.check.check` and `tomii.tune` run plugins through it.

A worker is a fresh interpreter started from this module (never a fork: the parent may have
threads), with the parent's `sys.path`. It does not import the parent's script: a plain script
that calls `sweep` at its top level, a notebook, a script read from stdin and a test all work as
they are. The one exception is a Python kernel defined in the script itself (`__main__`): to find
it, the worker imports the script once, under the name `__mp_main__`, as multiprocessing does,
and then the script's top-level work must sit under `if __name__ == "__main__":`. A script that
starts a sweep, check or tune while a worker imports it gets `ParentScriptError` saying so, as
does a kernel defined where no child can import it (a notebook, stdin).

Workers ignore SIGINT: on Ctrl-C the parent decides, and kills the worker of the call it
interrupts. Nothing is left behind: `close()` (or leaving the `with` block) ends the worker, and
on Linux a worker dies with its parent.
"""

from __future__ import annotations

import io
import os
import pickle
import runpy
import signal
import socket
import subprocess
import sys
import tempfile
import types
from collections.abc import Callable
from multiprocessing.connection import Connection, wait
from types import TracebackType
from typing import Any, BinaryIO, TypeVar, final

import tomii

from .errors import TomiiError

__all__ = [
    "ChildFailed",
    "ChildStartFailed",
    "ChildTimeout",
    "Isolated",
    "ParentScriptError",
    "import_parent_script",
    "refuse_while_importing_parent_script",
]

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
        return f"a child process (pid {pid}) could not start: it {reason}{quoted}"


class ParentScriptError(TomiiError):
    """A worker needs a Python kernel the parent's script defines and cannot have it: the parent
    has no script file (a notebook, stdin), or the script, imported to find the kernel, starts a
    sweep, check or tune again at its top level. The caller's code is at fault, not a trial's."""


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


class _Worker:
    """One worker process: its connection, the file its stderr goes to, and a file descriptor
    that becomes readable when the process ends (a pidfd, where Linux has them)."""

    def __init__(self) -> None:
        self.stderr: BinaryIO | None = None
        self.seen = b""  # the stderr text of the current call (and of the start)
        mine, theirs = socket.socketpair()
        self.connection = Connection(mine.detach())
        fd, path = tempfile.mkstemp(prefix="tomii-worker-", suffix=".stderr")
        try:
            # Its own open file, not a copy of the worker's: reading does not move where the
            # worker writes.
            self.stderr = os.fdopen(fd, "rb")
            with open(path, "ab") as written:
                self.process = subprocess.Popen(
                    _worker_command(theirs.fileno()),
                    stdin=subprocess.DEVNULL,
                    stderr=written,
                    pass_fds=(theirs.fileno(),),
                )
        except BaseException:
            self.connection.close()
            if self.stderr is not None:
                self.stderr.close()
            raise
        finally:
            theirs.close()
            os.unlink(path)  # the worker has it open (or is gone): nothing left on disk
        self.ended = _end_of(self.process.pid)
        try:
            self._wait_until_ready()
        except BaseException:
            self.kill()
            raise

    @property
    def sentinels(self) -> list[Any]:
        """What `wait` watches besides the connection: the process's end, when it can be."""
        return [] if self.ended is None else [self.ended]

    def _wait_until_ready(self) -> None:
        if not wait([self.connection, *self.sentinels], START_TIMEOUT_S):
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
        if not wait([self.connection, *self.sentinels], timeout_s):
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
        code = self._exit_code(STOP_TIMEOUT_S)
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

    def _exit_code(self, timeout_s: float) -> int | None:
        """The worker's exit status (negative: the signal that killed it), waiting at most
        `timeout_s` for it to end; None if it is still running."""
        try:
            return self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            return None

    def _pass_on_stderr(self) -> None:
        """Copies what the worker wrote to stderr since the last look to this process's."""
        if self.stderr is None or self.stderr.closed:
            return
        text = self.stderr.read()
        if text:
            self.seen += text
            sys.stderr.write(text.decode(errors="replace"))
            sys.stderr.flush()

    def stop(self) -> None:
        self.connection.close()  # the worker's next receive ends its loop
        self._exit_code(STOP_TIMEOUT_S)
        self.kill()

    def kill(self) -> None:
        if self.process.poll() is None:
            self.process.kill()  # SIGKILL: ends a stopped (SIGSTOP) worker too
        self.process.wait()
        self._pass_on_stderr()
        self.connection.close()
        if self.stderr is not None:
            self.stderr.close()
        if self.ended is not None:
            os.close(self.ended)
            self.ended = None


def _worker_command(fd: int) -> list[str]:
    """The worker's command line: this interpreter, the parent's `sys.path`, and this module's
    `_serve` on the connection `fd`."""
    main = sys.modules.get("__main__")
    script = getattr(main, "__file__", None)
    script = os.path.abspath(script) if script and os.path.isfile(script) else None
    code = (
        "import signal; signal.signal(signal.SIGINT, signal.SIG_IGN); "
        f"import sys; sys.path[:] = {sys.path!r}; "
        f"from tomii.isolation import _serve; _serve({fd}, {os.getpid()}, {script!r})"
    )
    return [sys.executable, "-c", code]


def _end_of(pid: int) -> int | None:
    """A descriptor readable once process `pid` has ended (Linux's pidfd); None where there are
    none, and then a dead worker shows as its connection's end."""
    try:
        return os.pidfd_open(pid)  # type: ignore[attr-defined,unused-ignore]
    except (AttributeError, OSError):
        return None


def _signal_name(number: int) -> str:
    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


# ---------------------------------------------------------------------------------------------
# In the worker


#: In a worker: set, with the parent's script's path (None: the parent has no script file, as
#: a notebook, `python -c` or a script read from stdin), and whether that is being imported now.
_serving = False
_parent_script: str | None = None
_importing_parent_script = False
#: Why importing the parent's script failed, raised again at every later attempt (what the failed
#: import defined before it stopped is not to be used).
_parent_script_error: BaseException | None = None


def _serve(fd: int, parent: int, script: str | None) -> None:
    """The worker's loop: receive (fn, args, kwargs), send back (raised, value), until the
    parent closes the connection."""
    global _serving, _parent_script
    _serving, _parent_script = True, script
    _die_with(parent)
    connection = Connection(fd)
    connection.send(os.getpid())
    while True:
        try:
            message = connection.recv_bytes()
        except EOFError:
            return
        fn: Any = "the call"
        try:
            fn, args, kwargs = _Unpickler(io.BytesIO(message)).load()
            reply: tuple[bool, Any] = (False, fn(*args, **kwargs))
        except BaseException as error:  # noqa: BLE001 (the caller's to handle)
            reply = (True, error)
        sys.stderr.flush()
        try:
            connection.send(reply)
        except Exception as error:  # noqa: BLE001 (a value that does not pickle)
            unsent = f"{getattr(fn, '__qualname__', fn)}: cannot send back {reply[1]!r}: {error}"
            connection.send((True, TomiiError(unsent)))


class _Unpickler(pickle.Unpickler):
    """Finds what the parent's `__main__` defines in the parent's script."""

    def find_class(self, module: str, name: str) -> Any:
        if module == "__main__":
            return getattr(import_parent_script(f"{name} (defined in the parent's script)"), name)
        return super().find_class(module, name)


def import_parent_script(wanted: str) -> types.ModuleType:
    """In a worker: the parent's script, imported once as `__mp_main__` and installed as
    `__main__`, so that what it defines (a Python kernel, `wanted` names it) can be found.
    Anywhere else: `__main__` itself. Raises `ParentScriptError` when the script starts a
    sweep, check or tune at its top level, or when the parent has no script file."""
    global _importing_parent_script, _parent_script_error
    main = sys.modules["__main__"]
    if not _serving or main.__name__ == "__mp_main__":
        return main
    if _parent_script_error is not None:
        raise _parent_script_error
    if _parent_script is None:
        raise ParentScriptError(
            f"{wanted} lives in the parent's __main__, which has no script file (a notebook, "
            "`python -c` or stdin): a child process cannot import it. Define it in a module, or "
            'pass isolation="none"'
        )
    module = types.ModuleType("__mp_main__")
    module.__file__ = _parent_script
    sys.modules["__mp_main__"] = module
    _importing_parent_script = True
    try:
        module.__dict__.update(runpy.run_path(_parent_script, run_name="__mp_main__"))
    except BaseException as error:
        del sys.modules["__mp_main__"]
        _parent_script_error = error
        raise
    finally:
        _importing_parent_script = False
    sys.modules["__main__"] = module
    return module


def refuse_while_importing_parent_script(what: str) -> None:
    """Raises `ParentScriptError` when called while a worker imports the parent's script:
    `what` ("sweep", "check", "tune") would otherwise run again inside the worker."""
    if _importing_parent_script:
        raise ParentScriptError(
            f"{_parent_script} calls {what} at its top level, and a child process imported it "
            "to find a Python kernel the script defines: put the script's work under "
            '`if __name__ == "__main__":`, or move the kernel to a module of its own'
        )


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
