"""Python scheduling policies the tests run; a module of its own so that the child processes of
`tomii.check` and sweeps import them by name (`policies:Fifo`). The twins of `fifo` and
`priority` are PLUGIN_SCHEDULER_API.md's own code ("Schedulers in Python"), executed from the
document, so that the tests check what the document shows; the others break the contract on
purpose, each in one way."""

from __future__ import annotations

import threading
from typing import Any

from reference import ROOT

import tomii

#: The document whose Python block holds the twins.
DOCUMENT = ROOT / "PLUGIN_SCHEDULER_API.md"


def twins_code() -> str:
    """The document's Python block that defines the twins."""
    text = DOCUMENT.read_text(encoding="utf-8")
    blocks = [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]
    found = [block for block in blocks if "class Fifo(tomii.Scheduler)" in block]
    assert len(found) == 1, f"{DOCUMENT}: no single Python block defines the twin Fifo"
    return found[0]


_twins: dict[str, Any] = {"__name__": __name__}
exec(compile(twins_code(), str(DOCUMENT), "exec"), _twins)  # noqa: S102 (the document's code)
#: The twins, by class name; also attributes of this module, where children import them.
Fifo: type[tomii.Scheduler] = _twins["Fifo"]
Priority: type[tomii.Scheduler] = _twins["Priority"]


class Lifo(Fifo):  # type: ignore[valid-type,misc]
    """Deliberately not fifo: a worker takes the newest task of its queues, and keeps none."""

    name = "lifo"

    def push_keep(self, worker: int, tasks: list[tomii.Task]) -> int | None:
        self.push(worker, tasks)
        return None

    def pop(self, worker: int, max_tasks: int) -> list[tomii.Task]:
        queues = [queue for queue in self.served[worker] if queue]
        return [queues[-1].pop()] if queues and max_tasks > 0 else []


class Drops(Fifo):  # type: ignore[valid-type,misc]
    """Loses the second task it is given."""

    def create(self, init: tomii.SchedulerInit) -> None:
        super().create(init)
        self.given = 0

    def push(self, worker: int | None, tasks: list[tomii.Task]) -> None:
        kept = []
        for task in tasks:
            self.given += 1
            if self.given != 2:
                kept.append(task)
        super().push(worker, kept)

    def push_keep(self, worker: int, tasks: list[tomii.Task]) -> int | None:
        self.push(worker, tasks)
        return None


class Raises(Fifo):  # type: ignore[valid-type,misc]
    """Raises from its first pop that finds work."""

    def pop(self, worker: int, max_tasks: int) -> list[tomii.Task]:
        if any(self.served[worker]):
            raise ValueError("raised on purpose")
        return []


class HookRaises(Fifo):  # type: ignore[valid-type,misc]
    """Raises from its frame hook, which has no status."""

    def frame_completed(self, frame: int, slot: int, latency_ns: int) -> None:
        raise RuntimeError("the frame hook raised on purpose")


class PopsTwice(Fifo):  # type: ignore[valid-type,misc]
    """Hands out each task and queues it again."""

    def pop(self, worker: int, max_tasks: int) -> list[tomii.Task]:
        popped: list[tomii.Task] = super().pop(worker, max_tasks)
        for task in popped:
            self.queues[task.worker_lo, task.worker_hi].append(task)
        return popped


class PopsText(Fifo):  # type: ignore[valid-type,misc]
    """Answers a pop with something that is no task."""

    def pop(self, worker: int, max_tasks: int) -> Any:
        return ["a task"] if any(self.served[worker]) else None


#: Set to let `Hangs` return (a test sets it once the run has given up on the call).
RELEASE = threading.Event()


class Hangs(Fifo):  # type: ignore[valid-type,misc]
    """Never returns from a pop until RELEASE is set (at most a minute)."""

    def pop(self, worker: int, max_tasks: int) -> list[tomii.Task]:
        RELEASE.wait(60)
        popped: list[tomii.Task] = super().pop(worker, max_tasks)
        return popped
