"""Sensor stream analytics with C kernels on Tomii:

    python examples/stream-analytics/run.py [--quick] [--sensors S] [--window W] [--group G] [--out result.json]
    python examples/stream-analytics/run.py --schedulers fifo,priority,work-stealing,locality

Builds the kernels (include/streamstats.h, src/streamstats.c) with tomii.build and runs the graph
of graph.py for --frames frames: every frame, S sensors generate W readings each, get their
statistics, the high ones are checked for a spike, groups of G are summarized, and the frame's
anomalies and report come out. With --out, writes the parameters, every frame's report and
anomalies, the detect instances skipped and the post-node's totals, for verify.py. With
--schedulers, compares the schedulers with tomii.experiments.sweep instead (--repeats runs each,
after a warm-up run) and prints its summary and verdict.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import graph
import readings
from workload import HEADER, MECHANISM

import tomii
from tomii.build import build
from tomii.experiments import sweep
from tomii.experiments.config import summary
from tomii.graphs import Workload

DEFAULTS = {"sensors": 64, "window": 4096, "group": 4, "frames": 100}
QUICK = {"sensors": 16, "window": 256, "group": 4, "frames": 4}


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
    for name, what in (
        ("sensors", "sensors S"),
        ("window", "readings per window W"),
        ("group", "sensors per group G (divides S)"),
        ("frames", "frames to run"),
    ):
        parser.add_argument(f"--{name}", type=positive, help=f"{what} (default {DEFAULTS[name]})")
    parser.add_argument("--seed", type=int, default=1, help="seed of the readings (default 1)")
    parser.add_argument("--workers", type=positive, default=2)
    parser.add_argument("--slots", type=positive, default=2)
    parser.add_argument("--scheduler", default="fifo")
    parser.add_argument("--schedulers", help="comma-separated schedulers to compare")
    parser.add_argument("--repeats", type=positive, default=3, help="runs per scheduler compared")
    parser.add_argument("--quick", action="store_true", help="defaults for a test: 16 x 256")
    parser.add_argument("--out", type=Path, help="the JSON file verify.py reads")
    args = parser.parse_args(argv)
    # Options given explicitly win over --quick's defaults.
    for name, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.window < 3:
        parser.error(f"--window {args.window}: a window needs at least 3 readings")
    if args.sensors % args.group != 0:
        parser.error(f"--group {args.group}: must divide --sensors {args.sensors}")
    if not 0 <= args.seed < 2**64:
        parser.error(f"--seed {args.seed}: give an integer in [0, 2^64)")
    if args.schedulers is not None:
        args.schedulers = [name for name in args.schedulers.split(",") if name]
        if not args.schedulers:
            parser.error("--schedulers: give at least one scheduler name")
    if args.out is not None and args.out.is_dir():
        parser.error(f"--out {args.out}: is a directory; give a file path")
    if args.out is not None and args.schedulers is not None:
        parser.error("--out: a comparison keeps no outputs; give one --scheduler")
    return args


def params_of(args: argparse.Namespace) -> readings.Params:
    return readings.Params(
        sensors=args.sensors,
        window=args.window,
        group=args.group,
        seed=args.seed,
        period=4.0 * args.window,
        **readings.SIGNAL,
    )


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


def parse_report(text: str) -> dict[str, Any]:
    """report's text as numbers: per sensor, per group and for the frame."""
    frame: dict[str, Any] = {"sensors": [], "status": [], "groups": []}
    for line in text.splitlines():
        kind, number, *values = line.split()
        if kind == "sensor":
            frame["sensors"].append([float(v) for v in values[:4]])
            frame["status"].append(int(values[4]))
        elif kind == "group":
            stats, counts = values[:4], values[4:]
            frame["groups"].append([float(v) for v in stats] + [int(v) for v in counts])
        else:
            frame["frame"] = int(number)
            frame["summary"] = [float(v) for v in values[:4]] + [int(v) for v in values[4:]]
    return frame


def parse_alert(text: str) -> list[list[float]]:
    """alert's text: [sensor, index, z] per anomaly."""
    rows = (line.split() for line in text.splitlines())
    return [[int(sensor), int(index), float(z)] for sensor, index, z in rows]


def frames_of(result: Any) -> list[dict[str, Any]]:
    frames = []
    for rows in result.outputs:
        values = {node: value for node, _, value in rows}
        frame = parse_report(values["report"])
        frame["anomalies"] = parse_alert(values["alert"])
        frames.append(frame)
    return frames


def totals_of(result: Any) -> dict[str, int]:
    [text] = [value for node, _, value in result.post_outputs if node == "totals"]
    return {name: int(value) for name, value in (line.split() for line in text.splitlines())}


def skipped_of(result: Any) -> int:
    [detect] = [row for row in result.report.per_node if row["name"] == "detect"]
    return int(detect["skipped"])


def main(argv: list[str] | None = None) -> int:
    args = options(argv)
    p = params_of(args)
    app = graph.build(p)
    try:
        library = Path(build(func_path=HEADER).path)
    except tomii.TomiiError as error:
        sys.exit(f"run.py: building {HEADER} failed: {error}")
    print(f"{p.sensors} sensors x {p.window} readings, groups of {p.group}, {args.frames} frames")
    if args.schedulers:
        return compare(args, app, library)
    result = run_once(args, app, library, args.scheduler)
    print(result.report.summary())
    frames = frames_of(result)
    totals = totals_of(result)
    skipped = skipped_of(result)
    print(
        f"detect ran {totals['checked']} times and was skipped {skipped} times; "
        f"{totals['anomalies']} anomalies in {totals['frames']} frames"
    )
    if args.out is not None:
        document = {
            "params": vars(p),
            "frames": frames,
            "detect_skipped": skipped,
            "totals": totals,
        }
        try:
            args.out.write_text(json.dumps(document, indent=0) + "\n", encoding="utf-8")
        except OSError as error:
            sys.exit(f"run.py: cannot write --out {args.out}: {error.strerror}")
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
