"""Runs the matrix-compute example (the polyglot example of the Tomii 1.2 documents) on the
kernels of one language:

    python examples/matrix-compute/run.py --quick --out mc.npz && python examples/matrix-compute/verify.py mc.npz
    python examples/matrix-compute/run.py --language c        # plugins/matrix-compute-c
    python examples/matrix-compute/run.py --language python   # plugins/matrix-compute-python

Builds the kernels with tomii.build (Rust: plugins/matrix-compute, C: plugins/matrix-compute-c;
the Python ones of plugins/matrix-compute-python are imported, nothing is built) and runs the
graph of graph.py, the same in every language. Prints the run's report, ms a frame and the
checksum write_to_file returned; `--out` writes the values it wrote (the last frame's spectra and
matrices), the checksum and the graph's sizes to an .npz file for verify.py.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import tempfile
from pathlib import Path
from typing import Any

import graph
import numpy as np

import tomii
from tomii.build import build

PLUGINS = Path(__file__).resolve().parents[2] / "plugins"
#: What tomii.build compiles for each compiled language.
SOURCES = {
    "rust": PLUGINS / "matrix-compute" / "src" / "lib.rs",
    "c": PLUGINS / "matrix-compute-c" / "include" / "matcomp.h",
}
#: The folder of matcomp.py, whose import registers the Python kernels.
PYTHON_KERNELS = PLUGINS / "matrix-compute-python"
LANGUAGES = (*SOURCES, "python")

DEFAULT_FRAMES, QUICK_FRAMES = 100, 5


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
    parser.add_argument("--language", choices=LANGUAGES, default="rust", help="(default rust)")
    parser.add_argument("--frames", type=positive, help=f"frames a run (default {DEFAULT_FRAMES})")
    parser.add_argument("--workers", type=positive, default=2)
    parser.add_argument("--slots", type=positive, default=2, help="frames in flight (default 2)")
    parser.add_argument("--scheduler", default="fifo", help="(default fifo)")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_FRAMES} frames")
    parser.add_argument("--out", type=Path, help="write the values and checksum here (.npz)")
    args = parser.parse_args(argv)
    if args.frames is None:
        args.frames = QUICK_FRAMES if args.quick else DEFAULT_FRAMES
    if args.out is not None and not args.out.resolve().parent.is_dir():
        parser.error(f"argument --out: {args.out.resolve().parent} is not a directory")
    return args


def kernels(language: str) -> list[Path]:
    """The kernel libraries of `language`: built, or none for Python (its kernels imported)."""
    if language == "python":
        sys.path.insert(0, str(PYTHON_KERNELS))
        importlib.import_module("matcomp")  # registers the kernels as "matcomp.NAME"
        return []
    try:
        return [Path(build(func_path=SOURCES[language]).path)]
    except tomii.TomiiError as error:
        sys.exit(f"run.py: building {SOURCES[language]} failed: {error}")


def run_once(args: argparse.Namespace, matrices: Path) -> Any:
    """One run, write_to_file writing to `matrices`; exits with the runtime's message when it
    fails."""
    app = graph.build(matrices, python=args.language == "python")
    libraries = kernels(args.language)
    try:
        return tomii.run_graph(
            app.to_dict(),
            dylibs=libraries,
            workers=args.workers,
            slots=args.slots,
            frames=args.frames,
            scheduler=args.scheduler,
            collect_outputs=False,
        )
    except tomii.TomiiError as error:
        sys.exit(
            f"run.py: the {args.language} run with scheduler {args.scheduler!r} failed: {error}"
        )


def save(out: Path, values: np.ndarray, checksum: float, language: str) -> None:
    """The .npz verify.py reads, at exactly `out`."""
    try:
        with out.open("wb") as file:
            np.savez(
                file,
                values=values,
                checksum=checksum,
                buf_size=graph.BUF_SIZE,
                num_nodes=graph.NUM_NODES,
                language=language,
            )
    except OSError as error:
        sys.exit(f"run.py: cannot write --out {out}: {error.strerror}")


def main(argv: list[str] | None = None) -> int:
    args = options(argv)
    with tempfile.TemporaryDirectory(prefix="matrix-compute-") as scratch:
        matrices = Path(scratch) / "matrix_compute.c64"
        result = run_once(args, matrices)
        values = np.fromfile(matrices, dtype="<c8")
    report = result.report
    [(_, _, checksum)] = result.post_outputs
    print(report.summary())
    print(f"{1000 * report.wall_time_s / report.frames:.3f} ms a frame")
    print(f"{args.language}: checksum {checksum:.6f} of {values.size} values")
    if args.out is not None:
        save(args.out, values, float(checksum), args.language)
        print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
