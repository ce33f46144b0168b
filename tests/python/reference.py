"""Shared by the Python tests: where the built plugins are, and the synthetic `checksum` kernel
recomputed in Python (the reference model's, plugins/synthetic/README.md) for expected outputs."""

from __future__ import annotations

from pathlib import Path

# The synthetic `checksum` kernel recomputed in Python (plugins/synthetic/README.md): the reference
# model's, independent of the runtime.
from tomii.check.reference import BASIS, MASK, checksum, fnv1a, mix

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "target" / "debug"
SYNTHETIC = TARGET / "libtomii_synthetic.so"
FIFO = TARGET / "libtomii_sched_fifo.so"
GRAPHS = ROOT / "tomii-core" / "tests" / "graphs"

__all__ = [
    "BASIS",
    "FIFO",
    "GRAPHS",
    "MASK",
    "ROOT",
    "SYNTHETIC",
    "TARGET",
    "checksum",
    "fnv1a",
    "mix",
]
