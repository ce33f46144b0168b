"""The word count as a sweep's workload (tomii.graphs.workloads): its C kernels built, a seeded
Zipf corpus of `SCALES[scale]` written beside them (in target/, once), and the graph counting
it every frame. run.py takes the kernels' header and the mechanism from here; this module must
never import run.py (run.py imports it)."""

from __future__ import annotations

from pathlib import Path

import corpus
import graph

import tomii
from tomii.build import build

HEADER = Path(__file__).resolve().parent / "include" / "wordcount.h"

#: (words, vocabulary, maps, reduces) per scale.
SCALES = {"quick": (20_000, 2_000, 4, 3), "small": (200_000, 5_000, 16, 8)}
EXPONENT = 1.1
SEED = 1

MECHANISM = (
    "frames in flight: a frame keeps its slot until its last reduce ends, behind a barrier (no "
    "reduce before the last map); serving the oldest frame first (priority, multi-slot-batch) "
    "finishes frames and frees their slots sooner than FIFO's interleaving of every frame's maps"
)


def workload(scale: str) -> tomii.graphs.Workload:
    if scale not in SCALES:
        raise ValueError(f"mapreduce: scale must be one of {', '.join(SCALES)}, got {scale!r}")
    words, vocabulary, maps, reduces = SCALES[scale]
    text = Path(__file__).resolve().parent / "target" / f"corpus-{words}-{vocabulary}-{SEED}.txt"
    if not text.is_file():
        text.parent.mkdir(exist_ok=True)
        text.write_text(corpus.generate(words, vocabulary, EXPONENT, SEED), encoding="ascii")
    made = graph.build(text, maps=maps, reduces=reduces).to_dict()
    made["name"] = f"wordcount_{maps}x{reduces}"
    library = build(func_path=HEADER).path
    return tomii.graphs.Workload(made, dylibs=(str(library),), mechanism=MECHANISM)
