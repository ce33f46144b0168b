"""Builds the tiled Cholesky kernels (C on OpenBLAS) and factors an SPD matrix every frame:

    python examples/cholesky/run.py --quick                    # nt = 4, T = 32, a few frames
    python examples/cholesky/run.py --tiles 8 --tile 64 --schedulers fifo,priority --repeats 5
    python examples/cholesky/run.py --quick --out chol.npz && python examples/cholesky/verify.py chol.npz

One run of one scheduler prints its frames/s, milliseconds per factorisation and GFLOP/s (n³/3
flops a factorisation); `--out` writes A, its L and every frame's digest, for verify.py.
`--schedulers` compares them with tomii.experiments.sweep instead (`--simulate`: on virtual
workers) and prints its summary and verdict, then each one's GFLOP/s. OpenBLAS runs one thread
per call: the workers are the parallelism.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from graph import PRIORITIES, cholesky_graph, tasks_per_frame
from workload import HEADER, MECHANISM, build_kernels

import tomii
from tomii.experiments import sweep
from tomii.experiments.config import summary
from tomii.graphs import Fixed, Workload

QUICK = {"tiles": 4, "tile": 32, "frames": 5, "warmup": 0}


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
    parser.add_argument(
        "--warmup",
        type=int,
        help="warm-up frames one run leaves out of its timing (2); a comparison warms each "
        "scheduler up with a whole unrecorded run instead",
    )
    parser.add_argument("--workers", type=positive, default=2)
    parser.add_argument("--slots", type=positive, default=1, help="frames in flight (default 1)")
    schedulers = parser.add_mutually_exclusive_group()
    schedulers.add_argument("--scheduler", default="fifo", help="one scheduler (default fifo)")
    schedulers.add_argument("--schedulers", help="a comma-separated list to compare")
    parser.add_argument(
        "--repeats", type=positive, default=3, help="recorded runs per scheduler compared (3)"
    )
    parser.add_argument("--priorities", choices=sorted(PRIORITIES), default="panel")
    parser.add_argument("--seed", type=int, default=1, help="the matrix's seed (default 1)")
    parser.add_argument("--quick", action="store_true", help="nt = 4, T = 32, 5 frames")
    parser.add_argument("--out", type=Path, help="write A, L and the digests to this .npz")
    parser.add_argument(
        "--simulate",
        action="store_true",
        help="simulate the schedulers on --workers virtual workers (tomii.simulate), each task "
        "lasting what it took in a traced run on one worker: no noise, any worker count",
    )
    parser.add_argument(
        "--costs",
        type=costs,
        help="with --simulate: each kernel's µs instead of measuring them, e.g. "
        "potrf=16,trsm=16,syrk=12,gemm=18 (the digest costs nothing unless given)",
    )
    args = parser.parse_args(argv)
    defaults = QUICK if args.quick else {"tiles": 8, "tile": 64, "frames": 20, "warmup": 2}
    for name, value in defaults.items():
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
    if args.schedulers is not None and args.out is not None:
        parser.error("argument --out: a comparison keeps no outputs; give one --scheduler")
    names = args.schedulers.split(",") if args.schedulers else [args.scheduler]
    args.names = [name.strip() for name in names if name.strip()]
    if not args.names:
        parser.error("argument --schedulers: no scheduler named")
    return args


def kernels() -> Path:
    """Builds the kernel library, or exits saying what is missing."""
    try:
        return build_kernels()
    except tomii.TomiiError as error:
        sys.exit(
            f"run.py: cannot build {HEADER}: {error}\n"
            "run.py: the kernels need OpenBLAS and LAPACKE: apt-get install libopenblas-dev "
            "liblapacke-dev"
        )


def graph_of(args: argparse.Namespace) -> tomii.Graph:
    return cholesky_graph(
        args.tiles, args.tile, slots=args.slots, seed=args.seed, priorities=args.priorities
    )


def run_once(library: Path, args: argparse.Namespace, scheduler: str) -> Trial:
    try:
        result = graph_of(args).run(
            dylib=library,
            scheduler=scheduler,
            workers=args.workers,
            slots=args.slots,
            frames=args.frames + args.warmup,
            warmup_frames=args.warmup,
        )
    except tomii.TomiiError as error:
        sys.exit(f"run.py: scheduler {scheduler!r}: {error}")
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


def cost_model(graph: Mapping[str, Any], given: Mapping[str, float]) -> dict[str, Fixed]:
    """`--costs` as a simulation's cost model: every node costs its kernel's µs, the kernel being
    the node's name up to its first "_" (potrf_3, gemm_1_2, digest)."""
    return {node["name"]: Fixed(given[node["name"].split("_")[0]]) for node in graph["nodes"]}


def compare(library: Path, args: argparse.Namespace) -> list[dict[str, Any]]:
    """The rows of a sweep of `args.names` over this graph (tomii.experiments.sweep: trials in a
    shuffled order, a warm-up run each, every trace checked), after printing its summary; exits
    when the sweep cannot start."""
    graph = graph_of(args).to_dict()
    graph["name"] = f"cholesky_{args.tiles}x{args.tiles}"
    model = None if args.costs is None else cost_model(graph, args.costs)
    try:
        result = sweep(
            args.names,
            [Workload(graph, dylibs=(str(library),), cost_model=model, mechanism=MECHANISM)],
            {"workers": [args.workers], "slots": [args.slots]},
            repeats=args.repeats,
            frames=args.frames,
            warmup=1,
            progress=True,
            show=False,  # the table is printed below
            mode="simulate" if args.simulate else "run",
        )
    except (tomii.TomiiError, ValueError) as error:
        sys.exit(f"run.py: {error}")
    print(summary(result.rows, environment=result.environment))
    return result.rows


def gflops(args: argparse.Namespace, rows: Sequence[Mapping[str, Any]]) -> str:
    """Each scheduler's median frames/s over its valid rows as GFLOP/s ("-": none valid), in
    the order given (the rows' trial numbers follow it)."""
    flops = (args.tiles * args.tile) ** 3 / 3
    rates: dict[str, list[float]] = {}
    for row in sorted(rows, key=lambda row: int(row["trial"])):
        rate = rates.setdefault(row["scheduler"], [])
        if row["valid"]:
            rate.append(row["throughput_frames_per_s"] * flops / 1e9)
    return ", ".join(
        f"{name} {statistics.median(r):.2f}" if r else f"{name} -" for name, r in rates.items()
    )


def failures(rows: Sequence[Mapping[str, Any]]) -> int:
    """Says on stderr why each invalid trial failed; 1 when one did, else 0."""
    failed = [row for row in rows if not row["valid"]]
    for row in failed:
        print(
            f"run.py: {row['scheduler']}, trial {row['trial']}: {row['problem']}", file=sys.stderr
        )
    return 1 if failed else 0


def main(argv: list[str] | None = None) -> int:
    args = parse(argv)
    library = kernels()  # which sets OPENBLAS_NUM_THREADS=1 before OpenBLAS is loaded
    n = args.tiles * args.tile
    shape = (
        f"nt = {args.tiles}, T = {args.tile} (n = {n}), {args.workers} workers, "
        f"{args.slots} slot(s), priorities {args.priorities}; {tasks_per_frame(args.tiles)} "
        "tasks a frame"
    )
    if args.simulate or args.schedulers is not None:
        print(("simulated: " if args.simulate else "") + shape)
        rows = compare(library, args)
        print(
            f"\nGFLOP/s at the median frames/s (n³/3 flops a factorisation): {gflops(args, rows)}"
        )
        return failures(rows)
    print(f"{shape}; {args.frames} frames after {args.warmup} warm-up")
    trial = run_once(library, args, args.scheduler)
    rate = trial.frames_per_s
    print(
        f"{trial.scheduler}: {rate:.1f} frames/s, {1e3 / rate:.2f} ms / factorisation, "
        f"{rate * n**3 / 3 / 1e9:.2f} GFLOP/s"
    )
    if args.out is not None:
        np.savez(
            args.out,
            matrix=trial.matrix,
            factor=trial.factor,
            digests=np.array(trial.digests),
            tasks_per_frame=np.array([trial.tasks_per_frame]),
            tiles=args.tiles,
            tile=args.tile,
        )
        print(f"A, L and the digests of every frame in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
