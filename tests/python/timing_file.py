"""A reader of Tomii 1.2's timing file (`--timing FILE`, `timing=`), written from its layout in the
README ("Tomii 1.2's timing file and scheduler record"), reading the lines 1.2's scripts read."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

#: A duration as the file writes it: Rust's `{:.4?}` of a Duration.
_DURATION = re.compile(r"^([\d.]+)(ns|µs|ms|s)$")
_SCALE = {"ns": 1e-9, "µs": 1e-6, "ms": 1e-3, "s": 1.0}


def seconds(text: str) -> float:
    """A duration of the file, in seconds."""
    match = _DURATION.match(text.strip())
    assert match, f"{text!r} is not a duration"
    return float(match.group(1)) * _SCALE[match.group(2)]


@dataclass
class Task:
    workers: int
    executions: int
    #: Avg/Stream, Avg/Task, Std, Min, Max, Total, in seconds.
    timing: dict[str, float] = field(default_factory=dict)
    #: Per worker: executions and their total time in seconds.
    per_worker: dict[int, tuple[int, float]] = field(default_factory=dict)


@dataclass
class TimingFile:
    #: "Key: value" lines of the header and the aggregated statistics, as written.
    summary: dict[str, str] = field(default_factory=dict)
    streams_per_slot: list[int] = field(default_factory=list)
    #: (warm-up streams, steady-state streams), when some were excluded.
    excluded: tuple[int, int] | None = None
    tasks: dict[str, Task] = field(default_factory=dict)

    @property
    def streams(self) -> int:
        return int(self.summary["Total Streams Processed"])

    @property
    def avg_time_per_stream_s(self) -> float:
        return seconds(self._avg_time_per_stream.group(1))

    @property
    def std_time_per_stream_s(self) -> float:
        return seconds(self._avg_time_per_stream.group(2))

    @property
    def _avg_time_per_stream(self) -> re.Match[str]:
        """The line "Avg Time Per Stream: D (std: D)"."""
        text = self.summary["Avg Time Per Stream"]
        match = re.match(r"^(\S+) \(std: (\S+)\)$", text)
        assert match, f"Avg Time Per Stream: {text!r} is not 'D (std: D)'"
        return match


def parse(path: Path) -> TimingFile:
    parsed = TimingFile()
    task: Task | None = None
    for line in path.read_text(encoding="utf-8").splitlines():
        text = line.strip()
        if text.startswith("Streams per Slot: "):
            slots = text.removeprefix("Streams per Slot: ").split(", ")
            parsed.streams_per_slot = [int(slot.split(": ")[1]) for slot in slots]
        elif match := re.match(
            r"Excluded Streams \(warm-up\): (\d+) \(Steady-state: (\d+) streams\)", text
        ):
            parsed.excluded = (int(match.group(1)), int(match.group(2)))
        elif match := re.match(r"Task '(.*)' - Workers: (\d+), Total Executions: (\d+)$", text):
            task = Task(int(match.group(2)), int(match.group(3)))
            parsed.tasks[match.group(1)] = task
        elif text.startswith("Timing - ") and task is not None:
            for part in text.removeprefix("Timing - ").split(", "):
                key, value = part.split(": ")
                task.timing[key] = seconds(value)
        elif text.startswith("Worker Summary: ") and task is not None:
            for part in text.removeprefix("Worker Summary: ").split(", "):
                match = re.match(r"W-(\d+): (\d+) \([\d.]+%\) - (\S+)$", part)
                assert match, f"{part!r} is not a worker's summary"
                task.per_worker[int(match.group(1))] = (
                    int(match.group(2)),
                    seconds(match.group(3)),
                )
        elif ": " in text:
            key, value = text.split(": ", 1)
            parsed.summary[key] = value
    return parsed
