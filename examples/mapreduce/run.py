"""Counts the words of a generated corpus with map-reduce C kernels on Tomii:

    python examples/mapreduce/run.py [--quick] [--words N] [--maps M] [--reduces R] [--out counts.json]
    python examples/mapreduce/run.py --schedulers fifo,priority,work-stealing,locality

Writes the corpus of corpus.py to a file (--corpus, default a temporary one), builds the kernels
(include/wordcount.h, src/wordcount.c) with tomii.build, and runs the graph of graph.py for
--frames frames, each counting the whole corpus again. With --out, writes the corpus parameters,
every frame's digest and the last frame's word -> count table for verify.py. With --schedulers,
compares the schedulers with tomii.experiments.sweep instead (--repeats runs each, after a
warm-up run) and prints its summary and verdict.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import corpus
import graph
from workload import HEADER, MECHANISM

import tomii
from tomii.build import build
from tomii.experiments import sweep
from tomii.experiments.config import summary
from tomii.graphs import Workload

DEFAULTS = {"words": 1_000_000, "vocabulary": 50_000, "maps": 8, "reduces": 4, "frames": 10}
QUICK = {"words": 20_000, "vocabulary": 2_000, "maps": 4, "reduces": 3, "frames": 3}


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
        ("words", "words in the corpus"),
        ("vocabulary", "distinct words it may use"),
        ("maps", "map tasks M"),
        ("reduces", "reduce tasks R"),
        ("frames", "frames to run"),
    ):
        parser.add_argument(f"--{name}", type=positive, help=f"{what} (default {DEFAULTS[name]:_})")
    parser.add_argument("--exponent", type=float, default=1.1, help="of the Zipf law (default 1.1)")
    parser.add_argument("--seed", type=int, default=1, help="seed of the corpus")
    parser.add_argument("--workers", type=positive, default=2)
    parser.add_argument("--slots", type=positive, default=2)
    parser.add_argument("--scheduler", default="fifo")
    parser.add_argument("--schedulers", help="comma-separated schedulers to compare")
    parser.add_argument("--repeats", type=positive, default=3, help="runs per scheduler compared")
    parser.add_argument("--quick", action="store_true", help="defaults for a test: 20,000 words")
    parser.add_argument(
        "--corpus", type=Path, help="where to write the corpus (default: a temp file)"
    )
    parser.add_argument("--out", type=Path, help="the JSON file verify.py reads")
    args = parser.parse_args(argv)
    # Options given explicitly win over --quick's defaults.
    for name, value in (QUICK if args.quick else DEFAULTS).items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if not 0 < args.exponent <= 10:
        parser.error(f"--exponent {args.exponent}: give a number in (0, 10]")
    if args.schedulers is not None:
        args.schedulers = [name for name in args.schedulers.split(",") if name]
        if not args.schedulers:
            parser.error("--schedulers: give at least one scheduler name")
    for name in ("out", "corpus"):
        path = getattr(args, name)
        if path is not None and path.is_dir():
            parser.error(f"--{name} {path}: is a directory; give a file path")
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


def counts_of(text: str) -> dict[str, int]:
    """The word -> count table of collect's text."""
    pairs = (line.split("\t") for line in text.splitlines())
    return {word: int(count) for word, count in pairs}


def frames_of(result: Any) -> list[dict[str, Any]]:
    """Each frame's digest (SHA-256 of collect's text), total and distinct words."""
    frames = []
    for number, rows in enumerate(result.outputs):
        [text] = [value for node, _, value in rows if node == "collect"]
        counts = counts_of(text)
        frames.append(
            {
                "frame": number,
                "sha256": hashlib.sha256(text.encode("ascii")).hexdigest(),
                "words": sum(counts.values()),
                "distinct": len(counts),
            }
        )
    return frames


def write(path: Path, args: argparse.Namespace, frames: list[Any], last: str) -> None:
    params = {name: getattr(args, name) for name in ("words", "vocabulary", "exponent", "seed")}
    params |= {"maps": args.maps, "reduces": args.reduces}
    document = {"params": params, "frames": frames, "counts": counts_of(last)}
    try:
        path.write_text(json.dumps(document, indent=0) + "\n", encoding="utf-8")
    except OSError as error:
        sys.exit(f"run.py: cannot write --out {path}: {error.strerror}")


def main(argv: list[str] | None = None) -> int:
    args = options(argv)
    text = corpus.generate(args.words, args.vocabulary, args.exponent, args.seed)
    with tempfile.TemporaryDirectory(prefix="wordcount-") as scratch:
        path = (args.corpus or Path(scratch) / "corpus.txt").resolve()
        try:
            path.write_text(text, encoding="ascii")
        except OSError as error:
            sys.exit(f"run.py: cannot write --corpus {path}: {error.strerror}")
        app = graph.build(path, maps=args.maps, reduces=args.reduces)
        try:
            library = Path(build(func_path=HEADER).path)
        except tomii.TomiiError as error:
            sys.exit(f"run.py: building {HEADER} failed: {error}")
        print(
            f"{args.words:_} words ({len(text):_} bytes), {args.maps} maps, {args.reduces} reduces"
        )
        if args.schedulers:
            return compare(args, app, library)  # in here: the trials read the corpus file
        result = run_once(args, app, library, args.scheduler)
        print(result.report.summary())
    frames = frames_of(result)
    last = result.outputs[-1]
    [last_text] = [value for node, _, value in last if node == "collect"]
    top = sorted(counts_of(last_text).items(), key=lambda pair: -pair[1])[:5]
    print(f"{frames[-1]['distinct']:_} distinct words; most frequent: {top}")
    if len({frame["sha256"] for frame in frames}) != 1:
        print("run.py: the frames counted differently (verify.py says which are wrong)")
    if args.out is not None:
        write(args.out, args, frames, last_text)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
