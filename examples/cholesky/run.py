"""Builds the tiled Cholesky kernels (C on OpenBLAS) and factors an SPD matrix every frame:

    python examples/cholesky/run.py --quick                    # nt = 4, T = 32, a few frames
    python examples/cholesky/run.py --tiles 8 --tile 64 --schedulers fifo,priority --repeats 5
    python examples/cholesky/run.py --quick --out chol.npz && python examples/cholesky/verify.py chol.npz

Prints, per scheduler, the median over the repeats of frames/s, milliseconds per factorisation and
GFLOP/s (n³/3 flops a factorisation). `--out` writes A, the last run's L and every frame's digest
of every run, for verify.py. OpenBLAS runs one thread per call: the workers are the parallelism.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from graph import PRIORITIES, cholesky_graph, tasks_per_frame

import tomii
from tomii.build import build

HEADER = HERE / "include" / "cholesky.h"
#: What the kernels link: OpenBLAS (CBLAS) and LAPACKE (Debian: libopenblas-dev, liblapacke-dev).
LDFLAGS = "-llapacke -lopenblas"
QUICK = {"tiles": 4, "tile": 32, "frames": 5, "warmup": 0, "repeats": 1}


@dataclass(frozen=True)
class Trial:
    """One run of one scheduler."""

    scheduler: str
    frames_per_s: float
    tasks_per_frame: float
    digests: list[float]
    factor: np.ndarray
    matrix: np.ndarray


def positive(text: str) -> int:
    """An argparse type: an integer of at least 1."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not positive")
    return value


def costs(text: str) -> dict[str, float]:
    """An argparse type: `kernel=µs,...` for the four tile kernels (and optionally the digest)."""
    found: dict[str, float] = {"digest": 0.0}
    for item in text.split(","):
        kernel, _, value = item.partition("=")
        try:
            found[kernel.strip()] = float(value)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{item!r} is not kernel=µs") from None
    missing = {"potrf", "trsm", "syrk", "gemm"} - set(found)
    unknown = set(found) - {"potrf", "trsm", "syrk", "gemm", "digest"}
    if missing or unknown:
        raise argparse.ArgumentTypeError(
            f"give µs for potrf, trsm, syrk and gemm only (missing: {', '.join(sorted(missing))}"
            f"; unknown: {', '.join(sorted(unknown))})"
        )
    if any(not value >= 0 for value in found.values()):
        raise argparse.ArgumentTypeError(f"{text!r}: a cost is negative")
    return found


def parse(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=(__doc__ or "").splitlines()[0],
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--tiles", type=positive, help="tiles per side, nt (default 8)")
    parser.add_argument("--tile", type=positive, help="order of a tile, T (default 64)")
    parser.add_argument("--frames", type=positive, help="factorisations per run (default 20)")
    parser.add_argument("--warmup", type=int, help="warm-up frames left out of the timing (2)")
    parser.add_argument("--workers", type=positive, default=2)
    parser.add_argument("--slots", type=positive, default=1, help="frames in flight (default 1)")
    schedulers = parser.add_mutually_exclusive_group()
    schedulers.add_argument("--scheduler", default="fifo", help="one scheduler (default fifo)")
    schedulers.add_argument("--schedulers", help="a comma-separated list to compare")
    parser.add_argument("--repeats", type=positive, help="runs per scheduler (default 1)")
    parser.add_argument("--priorities", choices=sorted(PRIORITIES), default="panel")
    parser.add_argument("--seed", type=int, default=1, help="the matrix's seed (default 1)")
    parser.add_argument("--quick", action="store_true", help="nt = 4, T = 32, 5 frames, 1 run")
    parser.add_argument("--out", type=Path, help="write A, L and the digests to this .npz")
    parser.add_argument(
        "--simulate",
        action="store_true",
        help="measure each kernel's median time on one worker, then simulate the schedulers on "
        "--workers virtual workers with those times (tomii.simulate): no noise, any worker count",
    )
    parser.add_argument(
        "--costs",
        type=costs,
        help="with --simulate: each kernel's µs instead of measuring them, e.g. "
        "potrf=16,trsm=16,syrk=12,gemm=18 (the digest costs nothing unless given)",
    )
    args = parser.parse_args(argv)
    defaults = QUICK if args.quick else {"tiles": 8, "tile": 64, "frames": 20, "warmup": 2}
    for name, value in {"repeats": 1, **defaults}.items():
        if getattr(args, name) is None:
            setattr(args, name, value)
    if args.warmup < 0:
        parser.error(f"argument --warmup: {args.warmup} is negative")
    if args.tiles * args.tile > 16384:
        parser.error(f"n = tiles · tile = {args.tiles * args.tile}: at most 16384 here")
    if args.out is not None and not args.out.resolve().parent.is_dir():
        parser.error(f"argument --out: {args.out.resolve().parent} is not a directory")
    if args.costs is not None and not args.simulate:
        parser.error("argument --costs: give it with --simulate")
    if args.simulate and args.out is not None:
        parser.error("argument --out: a simulation computes no factor; run without --simulate")
    names = args.schedulers.split(",") if args.schedulers else [args.scheduler]
    args.names = [name.strip() for name in names if name.strip()]
    if not args.names:
        parser.error("argument --schedulers: no scheduler named")
    return args


def kernels() -> Path:
    """Builds the kernel library, or exits saying what is missing."""
    try:
        return build(func_path=HEADER, env={"LDFLAGS": LDFLAGS}).path
    except tomii.TomiiError as error:
        sys.exit(
            f"run.py: cannot build {HEADER}: {error}\n"
            "run.py: the kernels need OpenBLAS and LAPACKE: apt-get install libopenblas-dev "
            "liblapacke-dev"
        )


def run_once(library: Path, args: argparse.Namespace, scheduler: str) -> Trial:
    graph = cholesky_graph(
        args.tiles, args.tile, slots=args.slots, seed=args.seed, priorities=args.priorities
    )
    result = graph.run(
        dylib=library,
        scheduler=scheduler,
        workers=args.workers,
        slots=args.slots,
        frames=args.frames + args.warmup,
        warmup_frames=args.warmup,
    )
    n = args.tiles * args.tile
    post: dict[str, Any] = {name: value for name, _, value in result.post_outputs}
    report = result.report
    return Trial(
        scheduler=scheduler,
        frames_per_s=float(report.throughput_frames_per_s),
        tasks_per_frame=report.tasks / report.frames,
        digests=[float(value) for frame in result.outputs for _, _, value in frame],
        factor=np.asarray(post["factor"], dtype=np.float64).reshape(n, n),
        matrix=np.asarray(post["input"], dtype=np.float64).reshape(n, n),
    )


def kernel_costs(library: Path, args: argparse.Namespace) -> dict[str, float]:
    """Each kernel's median time in µs, from a traced run on one worker."""
    graph = cholesky_graph(args.tiles, args.tile, seed=args.seed)
    result = graph.run(
        dylib=library,
        workers=1,
        frames=args.frames + args.warmup,
        warmup_frames=args.warmup,
        trace=True,
    )
    trace = result.trace
    assert trace is not None  # trace=True
    kinds = np.array([name.split("_")[0] for name in result.node_names])[trace["node"]]
    durations = (trace["end_ns"] - trace["start_ns"]) / 1e3
    return {kind: float(np.median(durations[kinds == kind])) for kind in sorted(set(kinds))}


def simulate_once(args: argparse.Namespace, costs: dict[str, float], scheduler: str) -> float:
    """Frames/s of `scheduler` on `args.workers` virtual workers, each task lasting its kernel's
    median."""
    graph = cholesky_graph(
        args.tiles, args.tile, slots=args.slots, seed=args.seed, priorities=args.priorities
    ).to_dict()
    model = {
        node["name"]: tomii.graphs.Fixed(costs[node["name"].split("_")[0]])
        for node in graph["nodes"]
    }
    result = tomii.simulate(
        graph,
        scheduler=scheduler,
        workers=args.workers,
        slots=args.slots,
        frames=args.frames + args.warmup,
        warmup_frames=args.warmup,
        cost_model=model,
    )
    return float(result.report.throughput_frames_per_s)


def simulated(library: Path, args: argparse.Namespace) -> dict[str, list[float]]:
    costs = args.costs if args.costs is not None else kernel_costs(library, args)
    print(
        "µs per task (given):" if args.costs else "µs per task, the median on one worker:",
        ", ".join(f"{k} {v:.1f}" for k, v in costs.items()),
    )
    return {name: [simulate_once(args, costs, name)] for name in args.names}


def table(args: argparse.Namespace, rates: dict[str, list[float]]) -> str:
    n = args.tiles * args.tile
    flops = n**3 / 3
    lines = [
        (
            ("simulated: " if args.simulate else "")
            + f"nt = {args.tiles}, T = {args.tile} (n = {n}), {args.workers} workers, "
            f"{args.slots} slot(s), {args.frames} frames after {args.warmup} warm-up, "
            f"priorities {args.priorities}, median of {args.repeats}; "
            f"{tasks_per_frame(args.tiles)} tasks a frame"
        ),
        "| scheduler | frames/s | ms / factorisation | GFLOP/s | runs (frames/s) |",
        "|---|---:|---:|---:|---|",
    ]
    for name, runs in rates.items():
        rate = statistics.median(runs)
        spread = ", ".join(f"{r:.1f}" for r in runs)
        lines.append(
            f"| {name} | {rate:.1f} | {1e3 / rate:.2f} | {rate * flops / 1e9:.2f} | {spread} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    os.environ["OPENBLAS_NUM_THREADS"] = "1"  # before the kernels' OpenBLAS is loaded
    library = kernels()
    if args.simulate:
        print(table(args, simulated(library, args)))
        return 0
    trials: dict[str, list[Trial]] = {name: [] for name in args.names}
    # Round-robin over the schedulers, so that drift on the machine spreads over all of them.
    for _ in range(args.repeats):
        for name in args.names:
            try:
                trials[name].append(run_once(library, args, name))
            except tomii.TomiiError as error:
                sys.exit(f"run.py: scheduler {name!r}: {error}")
    print(table(args, {name: [t.frames_per_s for t in runs] for name, runs in trials.items()}))
    last = trials[args.names[-1]][-1]
    if args.out is not None:
        np.savez(
            args.out,
            matrix=last.matrix,
            factor=last.factor,
            digests=np.array([d for runs in trials.values() for t in runs for d in t.digests]),
            tasks_per_frame=np.array([t.tasks_per_frame for runs in trials.values() for t in runs]),
            tiles=args.tiles,
            tile=args.tile,
        )
        print(f"A, L and the digests of every frame in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
