"""Tomii 1.2 Rust plugin crates, as their authors left them (tests/fixtures/v12-plugin: a dylib
crate depending on 1.2's tomii-types and tomii-macro by paths that lead nowhere, no registration
line), built by `Graph.build(func_path=, plugin_manifest=)` against the compat SDK and run with
1.2's meanings: `Vec<Complex32>` results, `&mut Vec<Complex32>` mutated in place and read by
another node after a barrier, `&Vec<f64>` written through its pointer by a wavefront and read
back (the same buffer, no copy), variadic lists of objects and of numbers, `bulk`, an init
object (`&Arc<dyn Fft<f32>>`), `CmTypes` and a hand-written `#[no_mangle]` bridge. A library
built against 1.2's own crates is refused with the command that builds it."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
from reference import ROOT

import tomii
from tomii.build import BuildResult, build

CRATE = ROOT / "tests" / "fixtures" / "v12-plugin"
MANIFEST = CRATE / "Cargo.toml"
LIB = CRATE / "src" / "lib.rs"
#: Shared with test_build.py's crates, so reruns reuse dependencies.
CARGO_ENV = {"CARGO_TARGET_DIR": str(ROOT / "target" / "plugin-tests")}


def fingerprint() -> dict[str, str]:
    return {
        str(p.relative_to(CRATE)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(CRATE.rglob("*"))
        if p.is_file() and "target" not in p.parts
    }


@pytest.fixture(scope="module")
def library() -> BuildResult:
    before = fingerprint()
    built = build(func_path=LIB, plugin_manifest=MANIFEST, release=False, env=CARGO_ENV)
    assert fingerprint() == before, "the build changed the 1.2 crate's files"
    assert not (CRATE / "target").exists(), "the build wrote into the crate"
    return built


def matrix_graph(buf_size: int, num_nodes: int) -> tomii.Graph:
    """matrix-compute's graph, as 1.2's builder writes it."""
    app = tomii.Graph()
    n = app.var("buf_size", tomii.usize(buf_size))
    width = app.var("num_nodes", tomii.usize(num_nodes))
    planner = app.var("fft_planner", func="fft_planner", args=[n])
    gen = app.node("gen_vec", func="generate_vector", factor=width, args=[n])
    fft = app.node("compute_fft", func="compute_fft", factor=width, args=[planner, gen.out()])
    mat = app.node("vec_mat", func="vec_to_mat", factor=width, args=[gen.out(), fft.wait()])
    app.node(
        "checksum",
        func="mat_checksum",
        args=[tomii.f64(0.5), mat.out(0, width)],
    )
    return app


def test_a_1_2_crate_builds_unchanged_and_runs_without_a_dylib_argument(
    library: BuildResult,
) -> None:
    assert library.language == "rust" and library.source == MANIFEST
    assert library.path.name == "libv12_fixture.so" and library.path.is_file()
    app = matrix_graph(16, 3)
    app.build(func_path=LIB, plugin_manifest=MANIFEST, release=False, env=CARGO_ENV)
    result = app.run(workers=2, slots=2, frames=3)
    samples = np.arange(1, 17, dtype=np.float64) * (1 + 1j)
    transformed = np.fft.fft(samples)
    # vec_mat reads gen_vec's vector after compute_fft changed it in place.
    expected = 0.5 * 3 * float(np.sum(transformed.real + transformed.imag))
    for frame in range(3):
        [(name, _, total)] = [row for row in result.outputs[frame] if row[0] == "checksum"]
        assert name == "checksum"
        assert total == pytest.approx(expected, rel=1e-5)
        assert total != pytest.approx(0.5 * 3 * float(np.sum(samples.real + samples.imag)))


def wavefront(n: int, func: str) -> tomii.Graph:
    """1.2's anti-diagonal bench: every diagonal writes the shared grid through its pointer."""
    app = tomii.Graph()
    size = app.var("n", tomii.usize(n))
    grid = app.var("grid", func="init_grid", args=[size])
    previous = None
    for d in range(2 * n - 1):
        width = min(d + 1, n, 2 * n - 1 - d)
        args = [grid, size, tomii.usize(d), tomii.INDEX]
        if previous is not None:
            args.append(previous.wait())
        previous = app.node(f"diag_{d}", func=func, factor=width, args=args)
    assert previous is not None
    app.node(
        "corner",
        func="grid_at",
        args=[grid, size, tomii.usize(n - 1), tomii.usize(n - 1), previous.wait()],
    )
    app.node("where", func="grid_addr", args=[grid, previous.wait()])
    app.node("where_first", func="grid_addr", args=[grid])
    return app


def expected_corner(n: int) -> float:
    grid = np.zeros((n, n))
    grid[0, :] = np.arange(1, n + 1)
    grid[:, 0] = np.arange(1, n + 1)
    for i in range(1, n):
        for j in range(1, n):
            grid[i, j] = 0.5 * (grid[i - 1, j] + grid[i, j - 1])
    return float(grid[n - 1, n - 1])


@pytest.mark.parametrize("func", ["wf_cell", "wf_cell_bulk"])
def test_a_borrowed_vec_is_the_shared_buffer_and_its_writes_are_seen(
    library: BuildResult, func: str
) -> None:
    n = 12
    result = tomii.run_graph(
        wavefront(n, func).to_dict(), dylibs=[library.path], workers=2, frames=1
    )
    row = {name: value for name, _, value in result.outputs[0]}
    assert row["corner"] == pytest.approx(expected_corner(n))
    # Every task borrowed the one buffer: no copy per call.
    assert row["where"] == row["where_first"]


def run_one(library: BuildResult, app: tomii.Graph) -> dict[str, object]:
    result = tomii.run_graph(app.to_dict(), dylibs=[library.path], workers=1, frames=1)
    return {name: value for name, _, value in result.outputs[0]}


def test_values_variadic_numbers_complex_owned_and_slices(library: BuildResult) -> None:
    app = tomii.Graph()
    vec = app.node("vec", func="generate_vector", factor=3, args=[tomii.usize(4)])
    parts = app.node("part", func="first_re", factor=3, args=[vec.out()])
    app.node("mean", func="mean", args=[parts.out(0, 3)])
    app.node("owned", func="owned_len", args=[vec.out(2)])
    app.node("rotated", func="rotate", args=[tomii.Complex32(1.0, 2.0)])
    row = run_one(library, app)
    assert row["mean"] == pytest.approx(1.0)
    assert row["owned"] == 4
    assert row["rotated"] == pytest.approx(complex(-2.0, 1.0))


def test_cmtypes_kernels_and_a_hand_written_bridge(library: BuildResult) -> None:
    app = tomii.Graph()
    packet = app.node("packet", func="make_packet", args=[tomii.usize(7), "hello"])
    app.node("size", func="packet_size", args=[packet.out()])
    app.node("bridge", func="scaled", args=[tomii.f64(1.5), tomii.usize(4)])
    row = run_one(library, app)
    assert row["size"] == 12
    assert row["bridge"] == pytest.approx(6.0)


def test_mut_of_a_value_that_is_no_shared_object_is_an_error_not_a_lost_write(
    library: BuildResult,
) -> None:
    app = tomii.Graph()
    planner = app.var("fft_planner", func="fft_planner", args=[tomii.usize(4)])
    app.node("fft", func="compute_fft", args=[planner, tomii.Vec("Complex32", [1, 2, 3, 4])])
    with pytest.raises(tomii.TomiiError, match=r"kernel compute_fft, argument 1 \(buffer\)"):
        run_one(library, app)


def test_a_1_2_object_where_a_number_is_expected_names_the_kernel_and_argument(
    library: BuildResult,
) -> None:
    app = tomii.Graph()
    vec = app.node("vec", func="generate_vector", args=[tomii.usize(4)])
    app.node("wrong", func="generate_vector", args=[vec.out()])
    with pytest.raises(tomii.TomiiError, match=r"kernel generate_vector, argument 0 \(n\)"):
        run_one(library, app)


def test_a_library_built_against_1_2s_own_crates_is_refused_with_the_command_to_build_it(
    tmp_path: Path,
) -> None:
    """A 1.2 library exports `tomii_abi_version` and `_cm` functions, not the registry."""
    source = tmp_path / "fake.c"
    source.write_text(
        "unsigned tomii_abi_version(void) { return 3; }\nvoid generate_vector_cm(void) {}\n"
    )
    so = tmp_path / "target" / "release" / "libv12_fixture.so"
    so.parent.mkdir(parents=True)
    compiler = shutil.which("cc") or "gcc"
    subprocess.run([compiler, "-shared", "-fPIC", str(source), "-o", str(so)], check=True)
    app = tomii.Graph()
    app.node("vec", func="generate_vector", args=[tomii.usize(4)])
    with pytest.raises(tomii.PluginError, match=r"Tomii 1\.2.*tomii build"):
        tomii.run_graph(app.to_dict(), dylibs=[so], frames=1)
