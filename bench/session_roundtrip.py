#!/usr/bin/env python3
"""The programmatic source's cost from Python: how long one frame takes from `submit` to its
result, against a fresh `run_graph` per frame, and how many frames per second a pipeline sustains
when the program keeps every slot busy.

In one invocation, interleaved round by round (so machine drift hits all alike):
- round trip: a 1-task graph (one input, one `noop`); `submit(x).result()` one frame at a time on
  a session started once, against `run_graph(frames=1)` of the same graph without its input;
- throughput: a 64-task pipeline (an input, 4 stages of 16 instances, `noop`), fed by
  `Session.map` at slots 4 on 2 workers, in frames per second.

    python bench/session_roundtrip.py [--frames N] [--rounds R]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

from synthetic_option import add_synthetic_option, synthetic_plugin

import tomii


def one_task(with_input: bool) -> tomii.Graph:
    """A graph of one `noop` task, reading an input when `with_input`."""
    app = tomii.Graph()
    if with_input:
        x = app.input("x")
        app.node("task", func="noop", args=[x.dep()])
    else:
        app.node("task", func="noop")
    return app


def pipeline(width: int = 16, stages: int = 4) -> tomii.Graph:
    app = tomii.Graph()
    previous = app.input("x")
    for stage in range(stages):
        args = [previous.dep()] if stage else [previous.wait()]
        node = app.node(f"s{stage}", func="noop", factor=width, args=args)
        previous = node
    return app


def round_trip_us(session: tomii.Session, frames: int) -> list[float]:
    times = []
    for k in range(frames):
        start = time.perf_counter_ns()
        session.submit(k).result()
        times.append((time.perf_counter_ns() - start) / 1e3)
    return times


def run_graph_us(graph: tomii.Graph, synthetic: Path, calls: int) -> list[float]:
    times = []
    for _ in range(calls):
        start = time.perf_counter_ns()
        graph.run(dylib=synthetic, frames=1, collect_outputs=False)
        times.append((time.perf_counter_ns() - start) / 1e3)
    return times


def pipeline_frames_per_s(session: tomii.Session, frames: int) -> float:
    start = time.perf_counter()
    for _ in session.map(range(frames)):
        pass
    return frames / (time.perf_counter() - start)


def quantile(values: list[float], q: float) -> float:
    return sorted(values)[int(q * (len(values) - 1))]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, default=2000, help="frames per measurement")
    parser.add_argument("--rounds", type=int, default=5)
    add_synthetic_option(parser)
    args = parser.parse_args()
    synthetic = synthetic_plugin(args)
    session_rt: list[float] = []
    fresh_rt: list[float] = []
    rates: list[float] = []
    with (
        one_task(True).session(dylib=synthetic, workers=1, task_timing=False) as small,
        pipeline().session(dylib=synthetic, workers=2, slots=4, task_timing=False) as wide,
    ):
        for _ in range(args.rounds):
            session_rt += round_trip_us(small, args.frames)
            fresh_rt += run_graph_us(one_task(False), synthetic, max(1, args.frames // 10))
            rates.append(pipeline_frames_per_s(wide, args.frames))
    print(f"{args.rounds} rounds of {args.frames} frames, {synthetic}")
    print(
        f"1-task frame, session round trip: median {statistics.median(session_rt):.1f} µs "
        f"(p10 {quantile(session_rt, 0.1):.1f}, p90 {quantile(session_rt, 0.9):.1f})"
    )
    print(
        f"1-task frame, run_graph per frame: median {statistics.median(fresh_rt):.1f} µs "
        f"(p10 {quantile(fresh_rt, 0.1):.1f}, p90 {quantile(fresh_rt, 0.9):.1f})"
    )
    print(
        f"ratio run_graph / session: {statistics.median(fresh_rt) / statistics.median(session_rt):.1f}×"
    )
    print(
        f"64-task pipeline, slots 4, 2 workers, Session.map: median {statistics.median(rates):.0f} frames/s "
        f"(min {min(rates):.0f}, max {max(rates):.0f})"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
