"""Shared by the Python tests: where the built plugins are, and an independent implementation of
the synthetic `checksum` kernel (plugins/synthetic/README.md) to compute expected outputs."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "target" / "debug"
SYNTHETIC = TARGET / "libtomii_synthetic.so"
FIFO = TARGET / "libtomii_sched_fifo.so"
GRAPHS = ROOT / "tomii-core" / "tests" / "graphs"

PRIME = 0x100000001B3
BASIS = 0xCBF29CE484222325
MASK = (1 << 64) - 1


def mix(h: int, w: int) -> int:
    g = ((h ^ w) * PRIME) & MASK
    return g ^ (g >> 29)


def fnv1a(data: bytes) -> int:
    h = BASIS
    for b in data:
        h = ((h ^ b) * PRIME) & MASK
    return h


def checksum(node: str, instance: int, frame: int, words: list[int]) -> int:
    h = mix(mix(fnv1a(node.encode()), instance), frame)
    for w in words:
        h = mix(h, w)
    return h
