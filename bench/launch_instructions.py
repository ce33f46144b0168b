#!/usr/bin/env python3
"""What a repeated launch costs from Python, in instructions and in microseconds: a `run_graph` of
a 1-task graph (one `noop`, 1 frame, 1 worker) called again and again in one process, and a
`Session` round trip (`submit(x).result()` of a 1-task graph with one input).

Instructions are counted by callgrind, per thread: a process making `--large` calls minus one
making `--small` calls, divided by the difference, so that the interpreter's start, the imports and
the first call's loading cancel; printed for every thread together and for the calling thread
alone (the workers' and the runner's share is the difference: it includes what an idle worker
spins before it parks, which varies with how valgrind schedules the threads). Microseconds are
the median of timed calls in this process, without valgrind (the machine's load shows in them;
the instruction counts do not depend on it).

    python bench/launch_instructions.py [--small N] [--large N] [--calls N] [--what WHAT]
                                        [--synthetic PATH]
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from session_roundtrip import one_task
from synthetic_option import add_synthetic_option, synthetic_plugin

#: The repeated operations measured, by name: `run_graph+report` also reads a figure of each
#: run's report, which makes the report into Python objects (a run that is not asked for its
#: report does not make them).
WHATS = ("run_graph", "run_graph+report", "session")


def repeat(what: str, synthetic: Path, calls: int, timed: list[float] | None = None) -> None:
    """Makes `calls` repeated `what` calls after one untimed first call; appends each call's µs
    to `timed` when given."""
    if what.startswith("run_graph"):
        graph = one_task(False)
        read_report = what.endswith("+report")

        def call() -> None:
            result = graph.run(dylib=synthetic, frames=1, collect_outputs=False)
            if read_report:
                assert result.report.wall_time_s >= 0

        _repeat_calls(call, calls, timed)
        return
    with one_task(True).session(dylib=synthetic, workers=1, task_timing=False) as session:
        counter = iter(range(1 << 62))

        def submit() -> None:
            session.submit(next(counter)).result()

        _repeat_calls(submit, calls, timed)


def _repeat_calls(call: Callable[[], None], calls: int, timed: list[float] | None) -> None:
    call()
    for _ in range(calls):
        start = time.perf_counter_ns()
        call()
        if timed is not None:
            timed.append((time.perf_counter_ns() - start) / 1e3)


def instructions(what: str, synthetic: Path, calls: int) -> tuple[int, int]:
    """The instructions callgrind counts in a process making `calls` repeated `what` calls: in
    every thread, and in the calling (main) thread."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "callgrind.out"
        argv = [
            "valgrind",
            "--tool=callgrind",
            "--separate-threads=yes",
            f"--callgrind-out-file={out}",
            sys.executable,
            __file__,
            "--child",
            what,
            str(calls),
            "--synthetic",
            str(synthetic),
        ]
        subprocess.run(argv, check=True, capture_output=True, env={**os.environ})
        # One file per thread, numbered from 1 in the order the threads started: 1 is the main.
        threads = out.parent.glob(f"{out.name}-*")
        totals = {int(file.name.rsplit("-", 1)[1]): _total(file) for file in threads}
        return sum(totals.values()), totals[1]


def _total(file: Path) -> int:
    """The instruction total of one callgrind output file."""
    found = re.search(r"^(?:summary|totals): (\d+)", file.read_text(), re.MULTILINE)
    if found is None:
        raise RuntimeError(f"no instruction total in {file}")
    return int(found.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", type=int, default=200, help="calls of the small process")
    parser.add_argument("--large", type=int, default=1200, help="calls of the large process")
    parser.add_argument("--calls", type=int, default=5000, help="timed calls, without valgrind")
    parser.add_argument("--what", choices=WHATS, action="append", help="default: both")
    parser.add_argument("--child", nargs=2, metavar=("WHAT", "CALLS"), help=argparse.SUPPRESS)
    add_synthetic_option(parser)
    args = parser.parse_args()
    synthetic = synthetic_plugin(args)
    if args.child is not None:
        repeat(args.child[0], synthetic, int(args.child[1]))
        return 0
    print(f"{synthetic}; load average {os.getloadavg()[0]:.2f} at the start")
    for what in args.what or WHATS:
        small = instructions(what, synthetic, args.small)
        large = instructions(what, synthetic, args.large)
        calls = args.large - args.small
        every, caller = ((big - few) / calls for big, few in zip(large, small))
        timed: list[float] = []
        repeat(what, synthetic, args.calls, timed)
        print(
            f"{what}: {every:,.0f} instructions per call, {caller:,.0f} of them on the calling "
            f"thread ({args.large} calls minus {args.small}); median "
            f"{statistics.median(timed):.1f} µs of {args.calls} calls "
            f"(p10 {_quantile(timed, 0.1):.1f}, p90 {_quantile(timed, 0.9):.1f})"
        )
    return 0


def _quantile(values: list[float], q: float) -> float:
    return sorted(values)[int(q * (len(values) - 1))]


if __name__ == "__main__":
    sys.exit(main())
