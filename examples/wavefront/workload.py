"""The Smith-Waterman wavefront as a sweep's workload (tomii.graphs.workloads): its C kernels
built, and the block graph aligning two seeded sequences of `SCALES[scale]` letters, for up to
`SLOTS` frames in flight. run.py takes the kernels' header and the mechanism from here; this
module must never import run.py (run.py imports it)."""

from __future__ import annotations

from pathlib import Path

import graph
import sequences

import tomii
from tomii.build import build

HEADER = Path(__file__).resolve().parent / "include" / "wavefront.h"

#: (letters a sequence, letters a block side) per scale; "small" is 16 × 16 blocks.
SCALES = {"quick": (256, 64), "small": (2048, 128), "medium": (4096, 128)}
SLOTS = 8

MECHANISM = (
    "the ready set is one anti-diagonal at a time, and any order of it is as good: only what a "
    "policy costs per task, and which worker a block's neighbours ran on, can separate them"
)


def workload(scale: str) -> tomii.graphs.Workload:
    if scale not in SCALES:
        raise ValueError(f"wavefront: scale must be one of {', '.join(SCALES)}, got {scale!r}")
    length, block = SCALES[scale]
    a, b = sequences.generate(length, length, seed=1)
    blocks = graph.blocks(length, block)
    made = graph.build(a, b, block=block, slots=SLOTS).to_dict()
    made["name"] = f"wavefront_{blocks}x{blocks}"
    library = build(func_path=HEADER).path
    return tomii.graphs.Workload(made, dylibs=(str(library),), mechanism=MECHANISM)
