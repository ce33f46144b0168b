"""The tiled Cholesky factorisation as a sweep's workload (tomii.graphs.workloads): its OpenBLAS
kernels built, and the graph of `SCALES[scale]` tiles, with work copies for up to `SLOTS` frames
in flight. run.py takes the kernels' build and the mechanism from here; this module must never
import run.py (run.py imports it)."""

from __future__ import annotations

import os
from pathlib import Path

from graph import cholesky_graph

import tomii
from tomii.build import build

HEADER = Path(__file__).resolve().parent / "include" / "cholesky.h"
#: What the kernels link: OpenBLAS (CBLAS) and LAPACKE (Debian: libopenblas-dev, liblapacke-dev).
LDFLAGS = "-llapacke -lopenblas"

#: (tiles per side, order of a tile) per scale; "small" is 817 tasks a frame.
SCALES = {"quick": (4, 16), "small": (16, 32), "medium": (24, 64)}
#: The most frames in flight a sweep may give the workload (its matrix holds a copy for each).
SLOTS = 8

MECHANISM = (
    "critical path, and tiles in cache: each step's POTRF → TRSM → SYRK chain gates the next "
    "panel, so with more workers than ready updates, serving that chain first (critical-path, "
    "priority) keeps busy the workers FIFO order leaves idle; on few real workers, running a "
    "task's successor where it ran (work-stealing's own deque is last in, first out) finds the "
    "tiles it just wrote in cache"
)


def build_kernels() -> Path:
    """The kernel library (tomii.build compiles it into target/); raises tomii.PluginError
    when it cannot, as where OpenBLAS or LAPACKE is missing. Also sets OPENBLAS_NUM_THREADS=1
    (unless set) for this process and the trial processes it starts, before any of them loads
    OpenBLAS: so OpenBLAS starts no thread pool, and the workers are the only parallelism."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    return Path(build(func_path=HEADER, env={"LDFLAGS": LDFLAGS}).path)


def workload(scale: str) -> tomii.graphs.Workload:
    if scale not in SCALES:
        raise ValueError(f"cholesky: scale must be one of {', '.join(SCALES)}, got {scale!r}")
    tiles, tile = SCALES[scale]
    graph = cholesky_graph(tiles, tile, slots=SLOTS).to_dict()
    graph["name"] = f"cholesky_{tiles}x{tiles}"
    return tomii.graphs.Workload(graph, dylibs=(str(build_kernels()),), mechanism=MECHANISM)
