"""Checks a result of run.py --out against the same numbers computed independently with NumPy:

    python examples/matrix-compute/verify.py matrix_compute.npz

Recomputes what write_to_file writes (plugins/matrix-compute/README.md, "The kernels, exactly"):
each instance's vector from its integer hash with plain Python integers, then its FFT and its
outer product v·vᴴ with NumPy in double precision; the spectra of instances 0 .. num_nodes-1 come
first, then their matrices. Every value must agree within RTOL 1e-3 / ATOL 1e-5 (|got − want| ≤
ATOL + RTOL·|want|: single-precision kernels and different FFTs), and the checksum write_to_file
returned must be the sum of |re| + |im| over the values it wrote (to 1e-6). Exits 0 when all
hold, 1 naming the first difference. tests/python/matrix_reference.py imports this reference.
"""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

import numpy as np
import numpy.typing as npt

#: The comparison tolerance (single-precision kernels, different FFTs): np.isclose's.
RTOL, ATOL = 1e-3, 1e-5
#: How close the returned checksum is to the sum over the written values (both in f64).
CHECKSUM_RTOL = 1e-6

Complex = npt.NDArray[np.complex128]


def vector(length: int, instance: int) -> Complex:
    """generate_vector(length) called by `instance`, element by element."""
    out = []
    for k in range(length):
        position = (instance * 1_000_003 + k) & 0xFFFFFFFF
        hashed = (position * 2_654_435_761) & 0xFFFFFFFF
        hashed ^= hashed >> 16
        out.append(complex((hashed & 0xFFFF) / 65536 - 0.5, (hashed >> 16) / 65536 - 0.5))
    return np.array(out, dtype=np.complex128)


def expected(buf_size: int, num_nodes: int) -> Complex:
    """What write_to_file writes: the spectra of every instance, then their matrices."""
    vectors = [vector(buf_size, i) for i in range(num_nodes)]
    spectra = [np.fft.fft(v) for v in vectors]
    matrices = [np.outer(v, np.conj(v)).ravel() for v in vectors]
    return np.concatenate(spectra + matrices)


def checksum(values: Complex) -> float:
    """write_to_file's result for `values`: the sum of |re| + |im|."""
    return float(np.abs(values.real).sum() + np.abs(values.imag).sum())


def where(index: int, buf_size: int, num_nodes: int) -> str:
    """Which value of the file `index` is: a bin of a spectrum or an entry of a matrix."""
    if index < num_nodes * buf_size:
        return f"spectrum of instance {index // buf_size}, bin {index % buf_size}"
    instance, entry = divmod(index - num_nodes * buf_size, buf_size * buf_size)
    row, column = divmod(entry, buf_size)
    return f"matrix of instance {instance}, row {row}, column {column}"


def first_difference(values: Complex, total: float, buf_size: int, num_nodes: int) -> str | None:
    """What is wrong with the run's values and checksum, or None."""
    want = expected(buf_size, num_nodes)
    if values.shape != want.shape:
        return (
            f"{values.size} values, expected {want.size} "
            f"(num_nodes {num_nodes} × (buf_size {buf_size} + buf_size²))"
        )
    wrong = np.flatnonzero(~np.isclose(values, want, rtol=RTOL, atol=ATOL))
    if wrong.size:
        k = int(wrong[0])
        return (
            f"{where(k, buf_size, num_nodes)}: {values[k]:.6g}, NumPy {want[k]:.6g} "
            f"({wrong.size} of {want.size} values differ beyond RTOL {RTOL:g}, ATOL {ATOL:g})"
        )
    if not math.isclose(total, checksum(values), rel_tol=CHECKSUM_RTOL):
        return f"checksum {total!r}, but the values written sum to {checksum(values)!r}"
    return None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("result", type=Path, help="the .npz file run.py --out wrote")
    args = parser.parse_args(argv)
    try:
        with np.load(args.result) as data:
            values = data["values"].astype(np.complex128)
            total = float(data["checksum"])
            buf_size, num_nodes = int(data["buf_size"]), int(data["num_nodes"])
            language = str(data["language"])
    except OSError as error:
        sys.exit(f"verify.py: cannot read {args.result}: {error}")
    except (ValueError, KeyError, TypeError) as error:
        sys.exit(f"verify.py: {args.result} is not a result of run.py --out ({error})")
    problem = first_difference(values, total, buf_size, num_nodes)
    if problem is not None:
        print(f"verify.py: {args.result}: {problem}", file=sys.stderr)
        return 1
    print(
        f"verify.py: all {values.size} values of the {language} run agree with NumPy "
        f"({num_nodes} spectra of {buf_size} and their {buf_size}×{buf_size} matrices); "
        f"checksum {total:.6f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
