"""The matrix-compute example in its three languages computes the same numbers: the Rust and C
plugins built by `tomii.build`, the Python kernels of plugins/matrix-compute-python/matcomp.py run
in-process (`Graph.py_node`), each against the NumPy reference and against each other."""

from __future__ import annotations

import importlib
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
from matrix_reference import (
    ATOL,
    C_HEADER,
    PYTHON_KERNELS,
    RTOL,
    RUST_SOURCE,
    checksum,
    expected,
    graph,
    sizes,
    vector,
    written,
)

import tomii
from tomii.build import build

#: The run options of every language's run.
RUN: dict[str, Any] = {"workers": 2, "slots": 3, "frames": 5, "collect_outputs": False}


@pytest.fixture
def matcomp(monkeypatch: pytest.MonkeyPatch) -> Iterator[ModuleType]:
    """The Python kernels, imported from their folder (registering them as "matcomp.NAME")."""
    monkeypatch.syspath_prepend(str(PYTHON_KERNELS))
    yield importlib.import_module("matcomp")
    sys.modules.pop("matcomp", None)


def run_compiled(source: Path, out: Path) -> float:
    library = build(func_path=source, release=False)
    [(_, _, total)] = tomii.run_graph(graph(out), dylibs=[library.path], **RUN).post_outputs
    return float(total)


def run_python(matcomp: ModuleType, out: Path) -> float:
    """The same pipeline built with the graph builder and `py_node`: the shape of the JSON graph,
    each node calling the function of matcomp.py."""
    length, instances = sizes()
    app = tomii.Graph()
    buf_size = app.var("buf_size", length)
    num_nodes = app.var("num_nodes", instances)
    planner = app.var("fft_planner", func="matcomp.fft_planner", args=[buf_size])
    gen_vec = app.py_node("gen_vec", fn=matcomp.generate_vector, factor=num_nodes, args=[buf_size])
    compute_fft = app.py_node(
        "compute_fft", fn=matcomp.compute_fft, factor=num_nodes, args=[planner, gen_vec.out()]
    )
    vec_mat = app.py_node(
        "vec_mat",
        fn=matcomp.vec_to_mat,
        factor=num_nodes,
        args=[gen_vec.out(), compute_fft.wait()],
    )
    app.post_node(
        "write_to_file",
        func="matcomp.write_to_file",
        args=[str(out), compute_fft.out(0, num_nodes), vec_mat.out(0, num_nodes)],
    )
    assert shape(app.to_dict()) == shape(graph(out, python=True))
    [(_, _, total)] = app.run(**RUN).post_outputs
    return float(total)


def shape(spec: dict[str, Any]) -> dict[str, list[tuple[str, str | None]]]:
    """The names and functions of a graph's initializations, nodes and post-nodes, in order."""
    sections = ("initializations", "nodes", "post_nodes")
    return {s: [(e["name"], e.get("function")) for e in spec.get(s, [])] for s in sections}


def test_the_python_vectors_are_the_reference_when_computed_directly(matcomp: ModuleType) -> None:
    length, _ = sizes()
    for instance in (0, 1, 7):
        v = matcomp.instance_vector(length, instance)
        assert v.dtype == np.complex64
        np.testing.assert_array_equal(v, vector(length, instance).astype(np.complex64))


def test_generate_vector_reads_its_instance_from_the_call_context(matcomp: ModuleType) -> None:
    with pytest.raises(RuntimeError, match="only available inside a kernel call"):
        matcomp.generate_vector(4)
    app = tomii.Graph()
    app.py_node("gen_vec", fn=matcomp.generate_vector, factor=3, args=[5])
    outputs = {i: v for _, i, v in app.run(workers=2, frames=2).outputs[-1]}
    assert sorted(outputs) == [0, 1, 2]
    for instance, v in outputs.items():
        np.testing.assert_array_equal(v, vector(5, instance).astype(np.complex64))


def test_rust_c_and_python_kernels_write_the_same_numbers(
    tmp_path: Path, matcomp: ModuleType
) -> None:
    totals = {
        "rust": run_compiled(RUST_SOURCE, tmp_path / "rust.c64"),
        "c": run_compiled(C_HEADER, tmp_path / "c.c64"),
        "python": run_python(matcomp, tmp_path / "python.c64"),
    }
    reference = expected()
    for language, total in totals.items():
        values = written(tmp_path / f"{language}.c64")
        np.testing.assert_allclose(values, reference, rtol=RTOL, atol=ATOL, err_msg=language)
        assert math.isclose(total, checksum(reference), rel_tol=RTOL), (language, total)
    rust = written(tmp_path / "rust.c64")
    for other in ("c", "python"):
        np.testing.assert_allclose(written(tmp_path / f"{other}.c64"), rust, rtol=RTOL, atol=ATOL)
