#!/usr/bin/env python3
"""The per-call overhead of a Python kernel: what a call through the runtime costs beyond the
function's own body.

It runs the same chain graph twice in one invocation, once with a Python kernel that does nothing
and once with the Rust `noop` kernel of plugins/synthetic, and reports per task the difference of
the two (the Python call: GIL, argument and result conversion, the call itself). The figure is a
difference within one run, so machine drift cancels out; repeat with `--repeats` for its spread.

    python bench/python_kernel_overhead.py [--calls N] [--repeats R] [--workers W]
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

from synthetic_option import add_synthetic_option, synthetic_plugin

import tomii

ROOT = Path(__file__).resolve().parents[1]


@tomii.export(name="bench.py_noop")
def py_noop(*args: Any) -> None:
    return None


def per_task_us(function: str, nodes: int, frames: int, workers: int, dylibs: list[Path]) -> float:
    g = tomii.Graph()
    previous = g.node("n0", func=function) if dylibs else g.py_node("n0", fn=py_noop)
    for i in range(1, nodes):
        if dylibs:
            previous = g.node(f"n{i}", func=function, args=[previous.out()])
        else:
            previous = g.py_node(f"n{i}", fn=py_noop, args=[previous.out()])
    result = g.run(
        dylib=dylibs or None, workers=workers, frames=frames, task_timing=False, scheduler="fifo"
    )
    return result.report.wall_time_s / (nodes * frames) * 1e6


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=100_000, help="kernel calls per measurement")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, default=1)
    add_synthetic_option(parser)
    args = parser.parse_args()
    synthetic = synthetic_plugin(args)
    nodes = 100
    frames = max(1, args.calls // nodes)
    python, rust = [], []
    for _ in range(args.repeats):
        python.append(per_task_us("bench.py_noop", nodes, frames, args.workers, []))
        rust.append(per_task_us("noop", nodes, frames, args.workers, [synthetic]))
    overhead = [p - r for p, r in zip(python, rust)]
    print(f"{nodes * frames} calls, {args.workers} worker(s), {args.repeats} repeats")
    print(f"python kernel task: median {statistics.median(python):.3f} µs")
    print(f"rust noop task:     median {statistics.median(rust):.3f} µs")
    print(
        f"python kernel overhead: median {statistics.median(overhead):.3f} µs per call "
        f"(min {min(overhead):.3f}, max {max(overhead):.3f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
