"""Aligns two generated DNA sequences (Smith-Waterman, local) block by block on Tomii:

    python examples/wavefront/run.py [--quick] [--length N] [--block B] [--out result.json]
    python examples/wavefront/run.py --schedulers fifo,priority,work-stealing,locality

Builds the C kernels (include/wavefront.h, src/wavefront.c) with tomii.build, runs the graph of
graph.py for --frames frames (each frame aligns the same pair again, in its own slot's buffers),
prints the score, and with --out writes the sequences, every frame's score, last row and last
column (and the whole table when it is small) for verify.py. With --schedulers, compares the
schedulers with tomii.experiments.sweep instead (--repeats runs each, after a warm-up run) and
prints its summary and verdict.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import graph
import sequences
from workload import HEADER, MECHANISM

import tomii
from tomii.build import build
from tomii.experiments import sweep
from tomii.experiments.config import summary
from tomii.graphs import Workload

#: Tables of at most this many cells are kept whole and written to --out.
TABLE_CELLS = 250_000

DEFAULTS = {"length": 2048, "block": 128, "frames": 20}
QUICK = {"length": 300, "length_b": 280, "block": 32, "frames": 4}


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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=positive, help="length of sequence a (default 2048)")
    parser.add_argument("--length-b", type=positive, help="length of sequence b (default: a's)")
    parser.add_argument("--block", type=positive, help="rows and columns a block (default 128)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the sequences")
    parser.add_argument("--frames", type=positive, help="frames to run (default 20)")
    parser.add_argument("--workers", type=positive, default=2)
    parser.add_argument("--slots", type=positive, default=2)
    parser.add_argument("--scheduler", default="fifo")
    parser.add_argument("--schedulers", help="comma-separated schedulers to compare")
    parser.add_argument("--repeats", type=positive, default=3, help="runs per scheduler compared")
    parser.add_argument("--encoding", choices=graph.ENCODINGS, default="block")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="defaults for a test: 300 x 280 letters, B 32, 4 frames",
    )
    parser.add_argument("--out", type=Path, help="the JSON file verify.py reads")
    args = parser.parse_args(argv)
    # Options given explicitly win over --quick's defaults.
    defaults = QUICK if args.quick else DEFAULTS
    for name, value in defaults.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    args.length_b = args.length_b or args.length
    if args.schedulers is not None:
        args.schedulers = [name for name in args.schedulers.split(",") if name]
        if not args.schedulers:
            parser.error("--schedulers: give at least one scheduler name")
    if args.out is not None and args.out.is_dir():
        parser.error(f"--out {args.out}: is a directory; give a file path")
    if args.out is not None and args.schedulers is not None:
        parser.error("--out: a comparison keeps no outputs; give one --scheduler")
    return args


def run_once(args: argparse.Namespace, app: tomii.Graph, library: Path, scheduler: str) -> Any:
    """One run; exits with the runtime's message when it fails."""
    try:
        return tomii.run_graph(
            app.to_dict(),
            dylibs=[library],
            workers=args.workers,
            slots=args.slots,
            frames=args.frames,
            scheduler=scheduler,
        )
    except tomii.TomiiError as error:
        sys.exit(f"run.py: the run with scheduler {scheduler!r} failed: {error}")


def frames_of(result: Any) -> list[dict[str, Any]]:
    """Each frame's score, last row and last column (and the table), from the sink outputs."""
    frames = []
    for number, rows in enumerate(result.outputs):
        values = {node: value for node, _, value in rows}
        frame: dict[str, Any] = {
            "frame": number,
            "score": int(values["score"]),
            "last_row": [int(x) for x in values["last_row"]],
            "last_col": [int(x) for x in values["last_col"]],
        }
        if "table" in values:
            frame["table"] = [int(x) for x in values["table"]]
        frames.append(frame)
    return frames


def write(path: Path, args: argparse.Namespace, a: str, b: str, frames: list[Any]) -> None:
    params = {
        "length": args.length,
        "length_b": args.length_b,
        "seed": args.seed,
        "block": args.block,
        "encoding": args.encoding,
        **graph.SCORES,
    }
    # Only the last frame keeps its table: every frame's rows and columns are checked.
    for frame in frames[:-1]:
        frame.pop("table", None)
    document = {"params": params, "a": a, "b": b, "frames": frames}
    try:
        path.write_text(json.dumps(document) + "\n", encoding="utf-8")
    except OSError as error:
        sys.exit(f"run.py: cannot write --out {path}: {error.strerror}")


def compare(args: argparse.Namespace, app: tomii.Graph, library: Path) -> int:
    """Sweeps the schedulers over this graph (tomii.experiments.sweep: trials in a shuffled
    order, a warm-up run each, every trace checked) and prints its summary; 1 when a trial
    failed, saying why on stderr."""
    workload = Workload(app.to_dict(), dylibs=(str(library),), mechanism=MECHANISM)
    try:
        result = sweep(
            args.schedulers,
            [workload],
            {"workers": [args.workers], "slots": [args.slots]},
            repeats=args.repeats,
            frames=args.frames,
            warmup=1,
            progress=True,
            show=False,  # the table is printed below
        )
    except (tomii.TomiiError, ValueError) as error:
        sys.exit(f"run.py: {error}")
    print(summary(result.rows, environment=result.environment))
    failed = [row for row in result.rows if not row["valid"]]
    for row in failed:
        print(
            f"run.py: {row['scheduler']}, trial {row['trial']}: {row['problem']}", file=sys.stderr
        )
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    args = options(argv)
    a, b = sequences.generate(args.length, args.length_b, args.seed)
    keep_table = (len(a) + 1) * (len(b) + 1) <= TABLE_CELLS
    app = graph.build(
        a, b, block=args.block, slots=args.slots, keep_table=keep_table, encoding=args.encoding
    )
    try:
        library = Path(build(func_path=HEADER).path)
    except tomii.TomiiError as error:
        sys.exit(f"run.py: building {HEADER} failed: {error}")
    rows, cols = graph.blocks(len(a), args.block), graph.blocks(len(b), args.block)
    print(
        f"{len(a)} x {len(b)} letters, {rows} x {cols} blocks of {args.block}, {args.encoding} graph"
    )
    if args.schedulers:
        return compare(args, app, library)
    result = run_once(args, app, library, args.scheduler)
    print(result.report.summary())
    frames = frames_of(result)
    print(f"score {frames[-1]['score']} (every frame: {sorted({f['score'] for f in frames})})")
    if args.out is not None:
        write(args.out, args, a, b, frames)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
