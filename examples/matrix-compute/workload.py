"""The matrix-compute example as a sweep's workload (tomii.graphs.workloads): its Rust kernels
built, and the graph of `SCALES[scale]`, its post-node writing to the system's temporary
directory (one file a scale; every run writes the same numbers)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import graph
from run import SOURCES

import tomii
from tomii.build import build

#: (buf_size, num_nodes) per scale; "quick" is matrix_compute.json's.
SCALES = {"quick": (graph.BUF_SIZE, graph.NUM_NODES), "small": (256, 16)}

MECHANISM = (
    "a barrier between two wide stages of equal instances: no outer product of a frame starts "
    "before all its FFTs end, and the outer products (buf_size² each) are most of the work, so "
    "what separates schedulers is how well the next frame's vectors and FFTs fill that wait"
)


def workload(scale: str) -> tomii.graphs.Workload:
    if scale not in SCALES:
        raise ValueError(f"matrix-compute: scale must be one of {', '.join(SCALES)}, got {scale!r}")
    buf_size, num_nodes = SCALES[scale]
    name = f"matrix_compute_{num_nodes}x{buf_size}"
    matrices = Path(tempfile.gettempdir()) / f"{name}.c64"
    made = graph.build(matrices, buf_size=buf_size, num_nodes=num_nodes).to_dict()
    made["name"] = name
    library = build(func_path=SOURCES["rust"]).path
    return tomii.graphs.Workload(made, dylibs=(str(library),), mechanism=MECHANISM)
