"""Builds the matrix-compute kernels of one language and runs the example graph with them:

    python plugins/matrix-compute/run.py --language rust     # this folder's crate
    python plugins/matrix-compute/run.py --language c        # plugins/matrix-compute-c
    python plugins/matrix-compute/run.py --language python   # plugins/matrix-compute-python

The three languages share matrix_compute.json (Python kernels are registered as "matcomp.NAME",
so their graph is the same with that prefix). Prints the checksum that write_to_file returned and
the file it wrote; the same options give the same numbers in every language.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import tomii
from tomii.build import build

HERE = Path(__file__).resolve().parent
GRAPH = HERE / "matrix_compute.json"
PYTHON_KERNELS = HERE.parent / "matrix-compute-python"
SOURCES = {
    "rust": HERE / "src" / "lib.rs",
    "c": HERE.parent / "matrix-compute-c" / "include" / "matcomp.h",
}


def graph(out: Path, *, python: bool = False) -> dict[str, Any]:
    """The example graph, writing its matrices to `out`; with `python`, calling the kernels of
    matcomp.py."""
    spec: dict[str, Any] = json.loads(GRAPH.read_text(encoding="utf-8"))
    spec["post_nodes"][0]["args"][0] = str(out)
    if python:
        for section in ("initializations", "nodes", "post_nodes"):
            for entry in spec[section]:
                if "function" in entry:
                    entry["function"] = f"matcomp.{entry['function']}"
    return spec


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--language", choices=["rust", "c", "python"], default="rust")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--slots", type=int, default=2)
    parser.add_argument("--frames", type=int, default=10)
    parser.add_argument("--out", type=Path, default=Path("matrix_compute.c64"))
    args = parser.parse_args(argv)
    dylibs: list[str | Path] = []
    if args.language == "python":
        sys.path.insert(0, str(PYTHON_KERNELS))
        import matcomp  # noqa: F401  (registers the kernels)
    else:
        dylibs.append(build(func_path=SOURCES[args.language]).path)
    result = tomii.run_graph(
        graph(args.out.resolve(), python=args.language == "python"),
        dylibs=dylibs,
        workers=args.workers,
        slots=args.slots,
        frames=args.frames,
        collect_outputs=False,
    )
    (_, _, checksum), *_ = result.post_outputs
    print(f"{args.language}: checksum {checksum:.6f}; matrices in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
