"""The matrix-compute example (plugins/matrix-compute/README.md) recomputed independently: the
vectors with plain Python integers, the FFTs and outer products with NumPy in double precision.
Also the example's graph, writing to a given file, for any of the three kernel languages."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
from reference import ROOT

PLUGINS = ROOT / "plugins"
RUNNER = PLUGINS / "matrix-compute" / "run.py"
RUST_SOURCE = PLUGINS / "matrix-compute" / "src" / "lib.rs"
C_HEADER = PLUGINS / "matrix-compute-c" / "include" / "matcomp.h"
PYTHON_KERNELS = PLUGINS / "matrix-compute-python"
#: The comparison tolerance across languages (single-precision kernels, different FFTs).
RTOL, ATOL = 1e-3, 1e-5

Complex = npt.NDArray[np.complex128]


def _example_runner() -> Any:
    """plugins/matrix-compute/run.py, the example's own runner, loaded as a module."""
    spec = importlib.util.spec_from_file_location("matrix_compute_run", RUNNER)
    assert spec is not None and spec.loader is not None, RUNNER
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


#: The example graph writing to `out`; with `python`, calling the "matcomp.NAME" kernels (the
#: runner's own function, so that the tests run the graph a user runs).
graph: Callable[..., dict[str, Any]] = _example_runner().graph


def sizes() -> tuple[int, int]:
    """(buf_size, num_nodes) of the example graph."""
    values = {
        i["name"]: i["value"] for i in graph(Path("unused"))["initializations"] if "value" in i
    }
    return int(values["buf_size"]), int(values["num_nodes"])


def vector(length: int, instance: int) -> Complex:
    """generate_vector(length) called by `instance`, element by element."""
    out = []
    for k in range(length):
        position = (instance * 1_000_003 + k) & 0xFFFFFFFF
        hashed = (position * 2_654_435_761) & 0xFFFFFFFF
        hashed ^= hashed >> 16
        out.append(complex((hashed & 0xFFFF) / 65536 - 0.5, (hashed >> 16) / 65536 - 0.5))
    return np.array(out, dtype=np.complex128)


def expected() -> Complex:
    """What write_to_file writes: the spectra of every instance, then their matrices."""
    length, instances = sizes()
    vectors = [vector(length, i) for i in range(instances)]
    spectra = [np.fft.fft(v) for v in vectors]
    matrices = [np.outer(v, np.conj(v)).ravel() for v in vectors]
    return np.concatenate(spectra + matrices)


def written(path: Path) -> Complex:
    """The file write_to_file wrote, as complex numbers."""
    return np.fromfile(path, dtype="<c8").astype(np.complex128)


def checksum(values: Complex) -> float:
    """write_to_file's result for `values`: the sum of |re| + |im|."""
    return float(np.abs(values.real).sum() + np.abs(values.imag).sum())
