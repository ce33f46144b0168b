"""The matrix-compute graph (plugins/matrix-compute/matrix_compute.json) built with tomii.Graph:
per frame, `num_nodes` vectors of `buf_size` complex numbers, their FFTs, then (after every FFT,
a barrier) their outer products; a post-node writes the last frame's spectra and matrices to a
file. The same graph for the three kernel languages; the Python kernels' names carry "matcomp."."""

from __future__ import annotations

from pathlib import Path

import tomii

#: buf_size and num_nodes of matrix_compute.json.
BUF_SIZE, NUM_NODES = 64, 8
#: The prefix of the kernels of plugins/matrix-compute-python/matcomp.py (`@tomii.export`).
PYTHON_PREFIX = "matcomp."


def build(
    out: str | Path,
    *,
    buf_size: int = BUF_SIZE,
    num_nodes: int = NUM_NODES,
    python: bool = False,
) -> tomii.Graph:
    """The graph, its post-node writing to `out`; with `python`, calling the kernels of
    matcomp.py (registered when that module is imported)."""
    prefix = PYTHON_PREFIX if python else ""
    app = tomii.Graph(name="matrix_compute")
    length = app.var("buf_size", buf_size)
    instances = app.var("num_nodes", num_nodes)
    planner = app.var("fft_planner", func=f"{prefix}fft_planner", args=[length])
    gen_vec = app.node("gen_vec", func=f"{prefix}generate_vector", factor=instances, args=[length])
    compute_fft = app.node(
        "compute_fft",
        func=f"{prefix}compute_fft",
        factor=instances,
        args=[planner, gen_vec.out()],
    )
    vec_mat = app.node(
        "vec_mat",
        func=f"{prefix}vec_to_mat",
        factor=instances,
        args=[gen_vec.out(), compute_fft.wait()],
    )
    app.post_node(
        "write_to_file",
        func=f"{prefix}write_to_file",
        args=[str(out), compute_fft.out(0, instances), vec_mat.out(0, instances)],
    )
    return app
