"""The `tomii` console command's entry point. It lives outside the tomii package so that it runs
before the package is imported (about half a second): a Ctrl-C or SIGTERM meanwhile ends the
command with status 130 and a line saying that nothing ran, never with a traceback. Once the
package is loaded, `tomii.cli.main` runs the command, and the runtime takes over the signals
(a run stops, writes its files and says how far it got)."""

from __future__ import annotations

import signal
import sys
from types import FrameType

__all__ = ["main"]

#: The signals that end the command while the package loads.
_STOPPING = (signal.SIGINT, signal.SIGTERM)
#: The exit status of a command interrupted before it started (the shell's for SIGINT).
INTERRUPTED = 130


def main() -> int:
    """Loads the package, then runs the command line of this process's arguments."""
    received: list[int] = []

    def note(number: int, frame: FrameType | None) -> None:
        received.append(number)

    previous = {number: signal.signal(number, note) for number in _STOPPING}
    from tomii.cli import main as run_command

    if received:
        name = signal.Signals(received[0]).name
        print(f"tomii: {name} while starting; nothing ran, nothing written", file=sys.stderr)
        return INTERRUPTED
    for number, handler in previous.items():
        signal.signal(number, handler)
    try:
        return run_command()
    except KeyboardInterrupt:  # between here and the command's own handling of Ctrl-C
        print("tomii: interrupted", file=sys.stderr)
        return INTERRUPTED
