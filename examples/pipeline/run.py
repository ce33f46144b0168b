"""Runs the streaming-pipeline transform bench (Tomii 1.2's pipeline shape, with C kernels):

    python examples/pipeline/run.py --quick --out pipeline.json && python examples/pipeline/verify.py pipeline.json
    python examples/pipeline/run.py --items 256 --iterations 8192 --frames 500 --slots 4
    python examples/pipeline/run.py --schedulers fifo,priority,work-stealing --repeats 5

Builds the kernels (include/pipeline.h, src/pipeline.c) with tomii.build and runs the graph of
graph.py: per frame, ingest makes `--items` items, transform runs `--iterations` sines on each,
aggregate takes their mean and emit gives it as the frame's output. Prints the run's report and ms
a frame (Tomii 1.2's ms/stream: wall time over frames); `--out` writes every frame's mean for
verify.py. With `--schedulers`, compares them in a sweep (tomii.experiments.sweep: shuffled
repeats, checked traces, the table and a verdict).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import graph
from workload import HEADER, MECHANISM

import tomii
from tomii.build import build
from tomii.experiments import sweep
from tomii.experiments.config import summary

DEFAULTS = {"items": 256, "iterations": 2048, "frames": 200}
QUICK = {"items": 16, "iterations": 256, "frames": 8}


def positive(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def options(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--items", type=positive, help="items a frame (default 256)")
    parser.add_argument("--iterations", type=positive, help="sines an item (default 2048)")
    parser.add_argument("--frames", type=positive, help="frames a run (default 200)")
    parser.add_argument("--workers", type=positive, default=2)
    parser.add_argument("--slots", type=positive, default=4, help="frames in flight (default 4)")
    parser.add_argument("--scheduler", default="fifo", help="the plain run's (default fifo)")
    parser.add_argument("--schedulers", help="a comma-separated list to compare in a sweep")
    parser.add_argument("--repeats", type=positive, default=3, help="runs per scheduler compared")
    parser.add_argument("--quick", action="store_true", help="16 items of 256 sines, 8 frames")
    parser.add_argument("--out", type=Path, help="write every frame's mean here, for verify.py")
    args = parser.parse_args(argv)
    for name, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.schedulers is not None:
        args.schedulers = [name.strip() for name in args.schedulers.split(",") if name.strip()]
        if not args.schedulers:
            parser.error("argument --schedulers: no scheduler named")
        if args.out is not None:
            parser.error("argument --out: a comparison writes no means; run one scheduler")
    return args


def compare(args: argparse.Namespace, app: tomii.Graph, library: Path) -> None:
    """The schedulers of --schedulers on the pipeline, in a sweep, printed as its table."""
    work = tomii.graphs.Workload(app.to_dict(), dylibs=(str(library),), mechanism=MECHANISM)
    knobs = {"workers": [args.workers], "slots": [args.slots]}
    result = sweep(
        args.schedulers, [work], knobs, repeats=args.repeats, frames=args.frames, show=False
    )
    print(summary(result.rows, environment=result.environment))


def run_once(args: argparse.Namespace, app: tomii.Graph, library: Path) -> Any:
    """One run; exits with the runtime's message when it fails."""
    try:
        return tomii.run_graph(
            app.to_dict(),
            dylibs=[library],
            workers=args.workers,
            slots=args.slots,
            frames=args.frames,
            scheduler=args.scheduler,
        )
    except tomii.TomiiError as error:
        sys.exit(f"run.py: the run with scheduler {args.scheduler!r} failed: {error}")


def main(argv: list[str] | None = None) -> int:
    args = options(argv)
    app = graph.build(args.items, args.iterations)
    try:
        library = Path(build(func_path=HEADER).path)
    except tomii.TomiiError as error:
        sys.exit(f"run.py: building {HEADER} failed: {error}")
    print(f"{args.items} items of {args.iterations} sines, {args.frames} frames")
    if args.schedulers:
        compare(args, app, library)
        return 0
    result = run_once(args, app, library)
    report = result.report
    print(report.summary())
    print(f"{1000 * report.wall_time_s / report.frames:.3f} ms a frame")
    means = [float(value) for rows in result.outputs for node, _, value in rows if node == "emit"]
    if args.out is not None:
        document = {"items": args.items, "iterations": args.iterations, "means": means}
        try:
            args.out.write_text(json.dumps(document) + "\n", encoding="utf-8")
        except OSError as error:
            sys.exit(f"run.py: cannot write --out {args.out}: {error.strerror}")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
