"""The pipeline transform bench as a sweep's workload (tomii.graphs.workloads): its C kernels built,
and the graph of `SCALES[scale]`. run.py takes the kernels' header and the mechanism from here;
this module must never import run.py (run.py imports it)."""

from __future__ import annotations

from pathlib import Path

import graph

import tomii
from tomii.build import build

HEADER = Path(__file__).resolve().parent / "include" / "pipeline.h"

#: (items a frame, sines an item) per scale; "small" and "bench" are 256 items as in Tomii 1.2's
#: bench, "bench" with its 8192 sines (about 64 µs an item here).
SCALES = {"quick": (16, 256), "small": (256, 2048), "bench": (256, 8192)}

MECHANISM = (
    "one wide stage of equal items between a serial head and tail: with frames in flight, the "
    "next frame's items fill the workers while one frame's aggregate and emit run, whatever the "
    "order, so only the policies' cost per task separates them"
)


def workload(scale: str) -> tomii.graphs.Workload:
    if scale not in SCALES:
        raise ValueError(f"pipeline: scale must be one of {', '.join(SCALES)}, got {scale!r}")
    items, iterations = SCALES[scale]
    made = graph.build(items, iterations).to_dict()
    made["name"] = f"pipeline_{items}x{iterations}"
    library = build(func_path=HEADER).path
    return tomii.graphs.Workload(made, dylibs=(str(library),), mechanism=MECHANISM)
