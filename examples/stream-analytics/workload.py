"""The stream analytics as a sweep's workload (tomii.graphs.workloads): its C kernels built, and
the graph of `SCALES[scale]` sensors with their grouped barriers, condition, priorities and
post-node. run.py takes the kernels' header and the mechanism from here; this module must never
import run.py (run.py imports it)."""

from __future__ import annotations

from pathlib import Path

import graph
import readings

import tomii
from tomii.build import build

HEADER = Path(__file__).resolve().parent / "include" / "streamstats.h"

#: (sensors, readings a window, sensors a group) per scale; "small" is 210 tasks a frame.
SCALES = {"quick": (16, 256, 4), "small": (64, 4096, 4)}

MECHANISM = (
    "frames in flight, and windows in cache: a wide stage (read, stats, detect: one task a "
    "sensor) narrows to groups and a serial tail; a frame keeps its slot until its tail ends, and "
    "serving the oldest frame first (multi-slot-batch) frees slots sooner than FIFO, while on "
    "few real workers, running stats and detect where read ran (work-stealing: last in, first "
    "out) finds the sensor's 32 KB window still in cache"
)


def workload(scale: str) -> tomii.graphs.Workload:
    if scale not in SCALES:
        raise ValueError(
            f"stream-analytics: scale must be one of {', '.join(SCALES)}, got {scale!r}"
        )
    sensors, window, group = SCALES[scale]
    params = readings.Params(
        sensors=sensors, window=window, group=group, seed=1, period=4.0 * window, **readings.SIGNAL
    )
    made = graph.build(params).to_dict()
    made["name"] = f"stream_{sensors}"
    library = build(func_path=HEADER).path
    return tomii.graphs.Workload(made, dylibs=(str(library),), mechanism=MECHANISM)
