"""Ctrl-C noted, not only raised, for the loops that stop on it (`check`, `sweep`, `tune`).

Python turns Ctrl-C into a KeyboardInterrupt raised wherever the main thread runs Python code
next. When that is a finalizer (an object's `__del__`, a generator closed by the garbage
collector), Python prints "Exception ignored in ..." and the interrupt is gone: a loop of a
thousand runs would go on. While a `CtrlC` is entered, the SIGINT handler also notes the press,
so the loop sees it at its next step (`stop_if_pressed`) even when the exception was lost. The
handler then calls the one it replaced, so everything else happens as before.
"""

from __future__ import annotations

import signal
import threading
from types import FrameType, TracebackType
from typing import Any, final


@final
class CtrlC:
    """Notes Ctrl-C (SIGINT) while entered. Off the main thread, or when SIGINT is ignored or
    left to the system, it notes nothing: Python would raise nothing there either."""

    def __init__(self) -> None:
        self.pressed = False
        self._previous: Any = None

    def __enter__(self) -> CtrlC:
        if threading.current_thread() is not threading.main_thread():
            return self
        previous = signal.getsignal(signal.SIGINT)
        if callable(previous):
            self._previous = previous
            signal.signal(signal.SIGINT, self._note)
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._previous is not None:
            if signal.getsignal(signal.SIGINT) == self._note:  # not one set meanwhile
                signal.signal(signal.SIGINT, self._previous)
            self._previous = None

    def stop_if_pressed(self) -> None:
        """Raises KeyboardInterrupt if Ctrl-C was pressed while entered."""
        if self.pressed:
            raise KeyboardInterrupt

    def _note(self, signum: int, frame: FrameType | None) -> Any:
        self.pressed = True
        return self._previous(signum, frame)
