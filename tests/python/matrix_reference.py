"""The matrix-compute example (examples/matrix-compute, kernels defined in
plugins/matrix-compute/README.md) for the tests: its graph (graph.py) and its independent
reference (verify.py: the vectors with plain Python integers, the FFTs and outer products with
NumPy in double precision), loaded from the example so that the tests check what a user runs."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import numpy.typing as npt
from reference import ROOT

EXAMPLE = ROOT / "examples" / "matrix-compute"
PLUGINS = ROOT / "plugins"
RUST_SOURCE = PLUGINS / "matrix-compute" / "src" / "lib.rs"
C_HEADER = PLUGINS / "matrix-compute-c" / "include" / "matcomp.h"
PYTHON_KERNELS = PLUGINS / "matrix-compute-python"

Complex = npt.NDArray[np.complex128]


def _example_module(name: str) -> ModuleType:
    """examples/matrix-compute/`name`.py, loaded as a module."""
    path = EXAMPLE / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"matrix_compute_{name}", path)
    assert spec is not None and spec.loader is not None, path
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_graph = _example_module("graph")
_verify = _example_module("verify")

#: The comparison tolerance across languages (single-precision kernels, different FFTs).
RTOL: float = _verify.RTOL
ATOL: float = _verify.ATOL


def graph(out: Path, *, python: bool = False) -> dict[str, Any]:
    """The example graph writing to `out`; with `python`, calling the "matcomp.NAME" kernels."""
    spec: dict[str, Any] = _graph.build(out, python=python).to_dict()
    return spec


def sizes() -> tuple[int, int]:
    """(buf_size, num_nodes) of the example graph."""
    return int(_graph.BUF_SIZE), int(_graph.NUM_NODES)


#: generate_vector(length) called by `instance`: vector(length, instance).
vector: Callable[[int, int], Complex] = _verify.vector
#: write_to_file's result for `values`: the sum of |re| + |im|.
checksum: Callable[[Complex], float] = _verify.checksum
#: verify.py's check of written values and checksum against graph sizes (buf_size, num_nodes):
#: the first difference, or None.
first_difference: Callable[[Complex, float, int, int], str | None] = _verify.first_difference


def expected() -> Complex:
    """What write_to_file writes: the spectra of every instance, then their matrices."""
    values: Complex = _verify.expected(*sizes())
    return values


def written(path: Path) -> Complex:
    """The file write_to_file wrote, as complex numbers."""
    return np.fromfile(path, dtype="<c8").astype(np.complex128)
