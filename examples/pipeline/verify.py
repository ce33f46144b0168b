"""Checks a result of run.py --out against the same arithmetic in Python:

    python examples/pipeline/verify.py pipeline.json

Recomputes every frame's mean as the kernels define it (include/pipeline.h): item i of frame f is
(i + 1) / N + (f mod 16) / 64, its transform the mean of sin(k x) for k = 1 .. iterations summed
in that order with math.sin (the C library's sin, as the kernel's), the frame's mean that of its
items in instance order. Every frame must agree to 1e-12 (the same operations in the same order;
the margin is for a libm that rounds differently). Exits 0 when every frame agrees, 1 naming the
first that does not.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

TOLERANCE = 1e-12


def transform(x: float, iterations: int) -> float:
    total = 0.0
    for k in range(1, iterations + 1):
        total += math.sin(k * x)
    return total / iterations


def expected(frame: int, items: int, iterations: int) -> float:
    values = [transform((i + 1) / items + (frame % 16) / 64, iterations) for i in range(items)]
    return sum(values) / items


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("result", type=Path, help="the file run.py --out wrote")
    args = parser.parse_args(argv)
    try:
        document = json.loads(args.result.read_text(encoding="utf-8"))
        items, iterations = int(document["items"]), int(document["iterations"])
        means = [float(mean) for mean in document["means"]]
    except (OSError, ValueError, KeyError, TypeError) as error:
        sys.exit(f"verify.py: {args.result}: not a run.py --out file: {error}")
    if not means:
        print(f"verify.py: {args.result}: no frame to check", file=sys.stderr)
        return 1
    # Frames repeat every 16: compute each distinct one once.
    want = {f % 16: expected(f % 16, items, iterations) for f in range(min(16, len(means)))}
    for frame, mean in enumerate(means):
        if not abs(mean - want[frame % 16]) <= TOLERANCE:
            print(
                f"verify.py: frame {frame}: mean {mean!r}, expected {want[frame % 16]!r}",
                file=sys.stderr,
            )
            return 1
    print(f"verify.py: all {len(means)} frames agree ({items} items of {iterations} sines)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
