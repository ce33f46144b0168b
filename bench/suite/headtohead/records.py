"""results/measurements.csv: one row per run of every runtime, with the figures derived from it.

Rows are appended as runs finish, so an interrupted invocation keeps what it measured. Columns
are fixed (COLUMNS); a run that failed has an empty wall time and its reason in `error`;
`load_1min` is the machine's load average when the row was written (other work running).
"""

from __future__ import annotations

import csv
import os
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from .metrics import Bounds, Measurement

COLUMNS = (
    "date",
    "commit",
    "round",
    "workload",
    "kernel_us",
    "frames",
    "slots",
    "metg_sweep",
    "runtime",
    "timing",
    "tasks",
    "wall_s",
    "ns_per_task",
    "frames_per_s",
    "ideal_s",
    "efficiency",
    "load_1min",
    "error",
)


class Csv:
    """The CSV file of one invocation, opened for the whole run."""

    def __init__(self, path: Path, date: str, commit: str, bounds: Mapping[str, Bounds]) -> None:
        self._file: TextIO = path.open("w", newline="", encoding="utf-8")
        self._writer = csv.writer(self._file)
        self._writer.writerow(COLUMNS)
        self._stamp = (date, commit)
        self._bounds = bounds

    def add(self, m: Measurement) -> None:
        c = m.config
        ideal = self._bounds[c.graph_key].ideal_s(c.frames, c.slots)
        derived: list[object] = ["", "", f"{ideal:.9f}", ""]
        if m.wall_s is not None and m.tasks:
            derived = [
                f"{m.wall_s / m.tasks * 1e9:.3f}",
                f"{c.frames / m.wall_s:.3f}",
                f"{ideal:.9f}",
                f"{ideal / m.wall_s:.4f}" if ideal > 0 else "",
            ]
        wall = "" if m.wall_s is None else f"{m.wall_s:.9f}"
        fields = [c.workload, c.us, c.frames, c.slots, int(c.sweep), m.runtime, m.timing, m.tasks]
        load = f"{os.getloadavg()[0]:.2f}"
        self._writer.writerow([*self._stamp, m.round, *fields, wall, *derived, load, m.error])
        self._file.flush()

    def close(self) -> None:
        self._file.close()
