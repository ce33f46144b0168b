"""A graph started once and fed frames by this program: `tomii.Session`.

The runtime compiles the graph, loads and checks the plugins and starts its workers once; each
`submit(inputs)` then hands one frame's input values in (NumPy arrays are passed without a copy)
and returns a `Frame` whose `result()` gives that frame's sink outputs. The GIL is released while
the session starts, while `submit` waits for a free slot, while `result()` waits and while
`close()` drains, so Python kernels and other threads run meanwhile.

    with tomii.Session(graph, dylibs=[lib], workers=2, slots=4) as session:
        frame = session.submit({"samples": array})
        print(frame.result().output("digest"))
        for result in session.map(arrays):      # keeps the slots full, yields in order
            ...
    print(session.report.latency_us)
"""

from __future__ import annotations

import atexit
import contextlib
import json
import sys
import threading
import time
import weakref
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ._options import check_run_options, runtime_options
from ._tomii import NativeSession, NativeTicket
from .errors import ConfigError, SessionBusy, SessionClosed, TomiiError

# Imported first, so that its exit handler (stopping Python kernels still running) is registered
# before this module's (closing unclosed sessions), and runs after it.
from .export import ExportedKernel
from .scheduler import PolicyLike

if TYPE_CHECKING:
    from typing_extensions import Self

    from .run import GraphSource, Report

__all__ = ["Frame", "FrameResult", "Session", "SessionBusy", "SessionClosed"]


class _SessionTimeout:
    """The default of `submit(timeout=...)`: the session's own."""


_SESSION_TIMEOUT = _SessionTimeout()

#: What `busy=` accepts: wait for a free slot, or raise `SessionBusy` at once.
_BUSY = ("wait", "raise")


@dataclass(frozen=True)
class FrameResult:
    """What one frame produced."""

    #: The runtime's number of the frame (frames are numbered in the order they start).
    frame: int
    #: From the frame's start to its last task's completion, in microseconds.
    latency_us: float
    #: (sink node, instance, value) for every sink instance.
    outputs: list[tuple[str, int, Any]] = field(default_factory=list)

    def output(self, node: str, instance: int = 0) -> Any:
        """The value sink `node` (instance `instance`) produced."""
        for name, index, value in self.outputs:
            if name == node and index == instance:
                return value
        sinks = sorted({name for name, _, _ in self.outputs})
        raise LookupError(
            f"no output of node {node!r} instance {instance}; sinks: {', '.join(sinks)}"
        )


class Frame:
    """One frame handed in; `result()` waits for it. Any thread may call `result()`: the first
    to get the outputs keeps them for the others."""

    def __init__(self, ticket: NativeTicket, index: int) -> None:
        self._ticket = ticket
        self._result: FrameResult | None = None
        self._waiting = threading.Lock()  # one thread at a time takes the ticket's outputs
        #: The position of the frame among this session's submissions, from 0.
        self.index = index

    def result(self, timeout: float | None = None) -> FrameResult:
        """The frame's outputs, once it completed: waits up to `timeout` seconds (None: without
        limit; TimeoutError after it). Raises the run's error if the frame could not complete."""
        if self._result is not None:
            return self._result
        deadline = None if timeout is None else time.monotonic() + timeout
        if not self._waiting.acquire(timeout=-1 if timeout is None else max(timeout, 0.0)):
            raise TimeoutError(f"frame {self.index} has not completed within {timeout} s")
        try:
            if self._result is None:
                left = None if deadline is None else max(deadline - time.monotonic(), 0.0)
                got = self._ticket.wait(left)
                if got is None:
                    raise TimeoutError(f"frame {self.index} has not completed within {timeout} s")
                frame, latency_us, outputs = got
                self._result = FrameResult(frame, latency_us, list(outputs))
        finally:
            self._waiting.release()
        return self._result

    @property
    def taken(self) -> bool:
        """Whether `result()` has returned the frame's outputs."""
        return self._result is not None

    def done(self) -> bool:
        """Whether the frame has completed (or failed)."""
        return self._result is not None or self._ticket.done()

    def __repr__(self) -> str:
        return f"Frame(index={self.index}, done={self.done()})"


class Session:
    """A graph started once, fed frames by this program (see the module's documentation).

    `graph` is JSON text, a dict or a path (as for `tomii.run_graph`), and the knobs are those of
    `run_graph`'s that shape the engine and the scheduler (the signature lists them): the program
    decides the frames and takes every output, and nothing is written to files. `busy` says what
    `submit` does when every slot is busy: `"wait"` (up to `timeout` seconds, or without limit)
    or `"raise"` (`SessionBusy` at once).
    """

    def __init__(
        self,
        graph: GraphSource,
        *,
        dylibs: Sequence[str | Path] = (),
        python_kernels: Sequence[ExportedKernel] = (),
        scheduler: PolicyLike = "fifo",
        scheduler_plugin: str | Path | None = None,
        workers: int = 1,
        slots: int = 1,
        pop_batch: int = 0,
        inline_continuation: bool = False,
        idle_spin: str = "adaptive",
        pin_workers: bool = False,
        task_timing: bool = True,
        stall_timeout_ms: int = 2000,
        scheduler_call_timeout_ms: int = 10_000,
        kernel_timeout_ms: int = 0,
        on_scheduler_fault: str = "stop",
        sched_opts: dict[str, str] | None = None,
        busy: str = "wait",
        timeout: float | None = None,
    ) -> None:
        from .run import _prepare

        check_run_options(locals())
        if busy not in _BUSY:
            raise ConfigError(f"busy={busy!r}: use one of {', '.join(map(repr, _BUSY))}")
        self._timeout = 0.0 if busy == "raise" else timeout
        text, source, plugin, policy, kernels = _prepare(
            graph, python_kernels, scheduler, scheduler_plugin
        )
        given = {**locals(), "scheduler": None, "scheduler_plugin": plugin}
        self._native: NativeSession = NativeSession(
            text,
            source=source,
            options=runtime_options("session", given),
            python_kernels=kernels,
            scheduler_policy=policy,
        )
        self._slots = slots
        #: The graph's inputs in the order `submit` flattens them: (name, factor).
        self.inputs: list[tuple[str, int]] = list(self._native.inputs())
        self._submitted = 0
        self._books = threading.Lock()  # guards the count and the deque below, for any thread
        #: Frames `submit` handed in whose outputs no one has taken yet, oldest first; one taken
        #: by `result()` leaves it when it reaches the front, so that a program which takes every
        #: result never makes it grow.
        self._unyielded: deque[Frame] = deque()
        #: The run's report, once the session is closed.
        self.report: Report | None = None
        _UNCLOSED.add(self)

    def submit(
        self, inputs: Any = None, *, timeout: float | None | _SessionTimeout = _SESSION_TIMEOUT
    ) -> Frame:
        """Hands in one frame and returns its `Frame`. `inputs`: a dict from input name to its
        value (a list or tuple of `factor` values for an input of several instances); for a graph
        with one input, the value (or values) alone; nothing for a graph without inputs.
        `timeout` overrides the session's for this call."""
        wait = self._timeout if isinstance(timeout, _SessionTimeout) else timeout
        frame = self._handed_in(inputs, wait)
        with self._books:
            while self._unyielded and self._unyielded[0].taken:
                self._unyielded.popleft()
            self._unyielded.append(frame)
        return frame

    def _handed_in(self, inputs: Any, wait: float | None) -> Frame:
        values = self._values(inputs)
        with self._books:
            index = self._submitted
            self._submitted += 1
        return Frame(self._native.submit(values, wait), index)

    def map(self, inputs: Iterable[Any]) -> Iterator[FrameResult]:
        """Submits one frame per item of `inputs`, keeping every slot busy, and yields their
        results in submission order. These frames are `map`'s own: iterating over the session
        never yields them."""
        pending: deque[Frame] = deque()
        for item in inputs:
            if len(pending) >= self._slots:
                yield pending.popleft().result()
            pending.append(self._handed_in(item, None))
        while pending:
            yield pending.popleft().result()

    def __iter__(self) -> Iterator[FrameResult]:
        """The results of the frames `submit` handed in whose outputs no one has taken yet (by
        iterating or by `Frame.result()`), in submission order, each once it completed."""
        while True:
            with self._books:
                if not self._unyielded:
                    return
                frame = self._unyielded.popleft()
            if not frame.taken:
                yield frame.result()

    @property
    def in_flight(self) -> int:
        """Frames handed in and not yet done."""
        return int(self._native.in_flight())

    @property
    def is_open(self) -> bool:
        """Whether the session still takes frames."""
        return bool(self._native.is_open())

    def set_scheduler_option(self, key: str, value: object) -> None:
        """Changes one of the scheduler's options while the session runs (its `set_knob`, called
        between tasks); raises ConfigError with the scheduler's message when it refuses, or
        when its options are fixed at the start."""
        self._native.set_scheduler_option(str(key), str(value))

    def close(self) -> Report:
        """Takes no more frames, waits for those in flight and returns the run's report; raises
        the run's error if it failed. Closing a closed session returns its report again."""
        from .run import Report

        if self.report is None:
            self.report = Report(json.loads(self._native.close()))
            _UNCLOSED.discard(self)
        return self.report

    def _close_at_exit(self) -> None:
        """Closes the session as the interpreter exits: waits for the frames in flight, saying so
        (a Ctrl-C abandons them to the exit); a failed run's error is printed, not raised."""
        try:
            waiting = self.in_flight
            if waiting:
                print(
                    f"tomii: a Session was left open: waiting for its {waiting} frame(s) in flight "
                    "before exiting (Ctrl-C abandons them)",
                    file=sys.stderr,
                    flush=True,
                )
            self.close()
        except KeyboardInterrupt:
            self._native.abandon()
            print("tomii: the Session's frames in flight were abandoned", file=sys.stderr)
        except SessionClosed:
            pass  # abandoned already
        except TomiiError as error:
            print(f"tomii: a Session left open ended with an error: {error}", file=sys.stderr)
        finally:
            _UNCLOSED.discard(self)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if kind is None:
            self.close()
            return
        # The body's own exception is the one to see; the run's error, if any, is its cause.
        with contextlib.suppress(TomiiError):
            self.close()

    def _values(self, inputs: Any) -> list[Any]:
        """`inputs` as one value per input instance, in `self.inputs` order."""
        if not self.inputs:
            if inputs not in (None, {}, [], ()):
                raise ConfigError("the graph has no inputs: submit() takes none")
            return []
        if not isinstance(inputs, Mapping):
            if len(self.inputs) != 1:
                names = ", ".join(name for name, _ in self.inputs)
                raise ConfigError(
                    f"the graph has inputs {names}: pass a dict from input name to value"
                )
            name, factor = self.inputs[0]
            return _instances(name, factor, inputs)
        unknown = sorted(set(inputs) - {name for name, _ in self.inputs})
        if unknown:
            valid = ", ".join(name for name, _ in self.inputs)
            raise ConfigError(
                f"unknown input(s) {', '.join(map(repr, unknown))}; the graph's inputs: {valid}"
            )
        values: list[Any] = []
        for name, factor in self.inputs:
            if name not in inputs:
                raise ConfigError(f"input {name!r} has no value")
            values += _instances(name, factor, inputs[name])
        return values


#: The sessions not closed yet, closed when the interpreter exits (`_close_unclosed`): a session
#: dropped at exit would otherwise wait for its frames without a word, or leave kernels running
#: into the interpreter's finalization.
_UNCLOSED: weakref.WeakSet[Session] = weakref.WeakSet()


@atexit.register
def _close_unclosed() -> None:
    for session in list(_UNCLOSED):
        session._close_at_exit()


def _instances(name: str, factor: int, given: Any) -> list[Any]:
    """The values of input `name`'s `factor` instances, from what `submit` was given for it."""
    if factor == 1:
        return [given]
    if isinstance(given, (list, tuple)) and len(given) == factor:
        return list(given)
    raise ConfigError(
        f"input {name!r} has {factor} instances: give a list or tuple of {factor} values"
    )
