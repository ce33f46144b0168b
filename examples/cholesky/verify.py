"""Checks a factorisation written by run.py --out, with NumPy alone:

    python examples/cholesky/verify.py chol.npz

A must be symmetric, L lower triangular with a positive diagonal, ‖A − L Lᵀ‖_F / ‖A‖_F below
1e-10, L within 1e-10 (relative to max |L|) of numpy.linalg.cholesky(A), every frame's digest
(the sum of its L, computed by the kernels) within 1e-9 · Σ|L| of the sum of this L, and every
run must have had nt + 2·C(nt, 2) + C(nt, 3) + 1 tasks a frame. Prints the residual; exits 0 when
all hold, else 1, saying which failed.
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from math import comb
from pathlib import Path

import numpy as np

RESIDUAL = 1e-10
REFERENCE = 1e-10
DIGEST = 1e-9
KEYS = ("matrix", "factor", "digests", "tasks_per_frame", "tiles", "tile")


def load(path: Path) -> dict[str, np.ndarray]:
    """The arrays of run.py's file, or exits naming what is wrong with it."""
    try:
        with np.load(path) as data:
            arrays = {key: data[key] for key in data.files}
    except (OSError, ValueError, zipfile.BadZipFile) as error:
        sys.exit(f"verify.py: cannot read {path}: {error}")
    missing = [key for key in KEYS if key not in arrays]
    if missing:
        sys.exit(f"verify.py: {path} lacks {', '.join(missing)}: write it with run.py --out")
    return arrays


def problems(data: dict[str, np.ndarray]) -> tuple[float, list[str]]:
    """The relative residual and what is wrong (nothing: an empty list)."""
    a, factor = data["matrix"], data["factor"]
    tiles, tile = int(data["tiles"]), int(data["tile"])
    n = tiles * tile
    if a.shape != (n, n) or factor.shape != (n, n):
        return float("nan"), [f"A is {a.shape} and L {factor.shape}; both should be {(n, n)}"]
    found = []
    if not np.array_equal(a, a.T):
        found.append(f"A is not symmetric: max |A - Aᵀ| = {np.abs(a - a.T).max():.3e}")
    upper = np.abs(np.triu(factor, 1)).max() if n > 1 else 0.0
    if upper != 0.0:
        found.append(f"L is not lower triangular: max |L| above the diagonal = {upper:.3e}")
    if not (np.diag(factor) > 0).all():
        found.append(f"L has a diagonal entry <= 0 (min {np.diag(factor).min():.3e})")
    residual = float(np.linalg.norm(a - factor @ factor.T) / np.linalg.norm(a))
    if not residual < RESIDUAL:
        found.append(f"‖A − L Lᵀ‖_F / ‖A‖_F = {residual:.3e}, not below {RESIDUAL:g}")
    reference = np.linalg.cholesky(a)
    distance = float(np.abs(factor - reference).max() / np.abs(reference).max())
    if not distance < REFERENCE:
        found.append(f"L is {distance:.3e} (relative) from numpy.linalg.cholesky(A)")
    total, scale = float(factor.sum()), float(np.abs(factor).sum())
    digests = np.asarray(data["digests"], dtype=np.float64)
    off = np.abs(digests - total) > DIGEST * scale
    if digests.size == 0:
        found.append("no frame digests: run at least one frame")
    elif off.any():
        first = int(np.argmax(off))
        found.append(
            f"{int(off.sum())} of {digests.size} frame digests differ from Σ L = {total!r}, "
            f"the first (#{first}) by {digests[first] - total:.3e}: those frames computed another L"
        )
    expected = tiles + 2 * comb(tiles, 2) + comb(tiles, 3) + 1
    counts = np.asarray(data["tasks_per_frame"], dtype=np.float64)
    if (counts != expected).any():
        found.append(f"tasks a frame {sorted(set(counts.tolist()))}, expected {expected}")
    return residual, found


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("path", type=Path, help="the .npz of run.py --out")
    args = parser.parse_args(argv)
    residual, found = problems(load(args.path))
    print(f"{args.path}: ‖A − L Lᵀ‖_F / ‖A‖_F = {residual:.3e}")
    for problem in found:
        print(f"verify.py: {args.path}: {problem}", file=sys.stderr)
    if found:
        return 1
    print(f"{args.path}: L is the Cholesky factor of A")
    return 0


if __name__ == "__main__":
    sys.exit(main())
