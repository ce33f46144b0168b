"""The matrix-compute kernels in Python and NumPy, registered with `@tomii.export` as
"matcomp.NAME". They compute the numbers of the Rust and C versions (defined in
plugins/matrix-compute/README.md); the Python tests compare the three.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

import tomii

Complex64Array = npt.NDArray[np.complex64]


@dataclass(frozen=True)
class FftPlanner:
    """The planned length; NumPy plans its FFTs itself."""

    len: int


@tomii.export
def fft_planner(length: int) -> FftPlanner:
    """Plans the `length`-point forward DFT, unnormalised (NumPy's convention)."""
    return FftPlanner(int(length))


@tomii.export
def generate_vector(length: int) -> Complex64Array:
    """The deterministic test vector of the calling instance (`tomii.call_context().instance`):
    `length` complex numbers from an integer hash, each part a multiple of 1/65536 in [-0.5, 0.5)."""
    return instance_vector(length, tomii.call_context().instance)


def instance_vector(length: int, instance: int) -> Complex64Array:
    """The vector `generate_vector` returns for `instance` (callable outside a kernel call)."""
    k = np.arange(length, dtype=np.uint64)
    # Only the low 32 bits of the position enter the hash, as in the Rust and C versions.
    position = (np.uint64(instance % 2**32) * np.uint64(1_000_003) + k) & np.uint64(0xFFFFFFFF)
    hashed = (position * np.uint64(2_654_435_761)) & np.uint64(0xFFFFFFFF)
    hashed ^= hashed >> np.uint64(16)
    re = (hashed & np.uint64(0xFFFF)).astype(np.float32) / np.float32(65536) - np.float32(0.5)
    im = (hashed >> np.uint64(16)).astype(np.float32) / np.float32(65536) - np.float32(0.5)
    return (re + 1j * im).astype(np.complex64)


@tomii.export
def compute_fft(
    planner_or_v: FftPlanner | Complex64Array, v: Complex64Array | None = None
) -> Complex64Array:
    """The spectrum of `v`. Called `(planner, v)` like the Rust and C kernels, `v` must have the
    planned length; called `(v)`, as the Python-plugins document wires it, NumPy plans alone."""
    if v is None:
        if isinstance(planner_or_v, FftPlanner):
            raise TypeError("compute_fft: call it (planner, v) or (v)")
        return np.fft.fft(planner_or_v).astype(np.complex64)
    if not isinstance(planner_or_v, FftPlanner):
        raise TypeError("compute_fft: call it (planner, v) or (v)")
    if len(v) != planner_or_v.len:
        raise ValueError(
            f"compute_fft: the vector has {len(v)} elements, the plan {planner_or_v.len}"
        )
    return np.fft.fft(v).astype(np.complex64)


@tomii.export
def vec_to_mat(v: Complex64Array) -> Complex64Array:
    """The outer product v·vᴴ as a flat len × len row-major array: M[r][c] = v[r]·conj(v[c])."""
    return np.outer(v, np.conj(v)).astype(np.complex64).ravel()


@tomii.export(variadic=True)
def write_to_file(path: str, arrays: list[Complex64Array]) -> float:
    """Writes every array, in order, to `path` as little-endian (re, im) float32 pairs; returns
    the sum of |re| + |im| over all elements."""
    data = np.concatenate([np.asarray(a, dtype=np.complex64).ravel() for a in arrays])
    Path(path).write_bytes(data.astype("<c8").tobytes())
    return float(np.abs(data.view(np.float32)).sum(dtype=np.float64))
