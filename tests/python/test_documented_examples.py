"""The Tomii 1.2 documents' own examples, run as the scripts a user would write from them.

Each test holds one code example of the package guide ("Python API", "Python plugins") or of the
tomii-rt 1.2.0 package readme, copied as written, and runs it as `python example.py` in a fresh
directory, so `__main__`, relative paths and the files an example writes are real. Not even the
plugin paths are edited: the directory lays the plugin out where the example looks for it
(`plugin/` is plugins/matrix-compute, `include/plugin.h` a C header...), and builds go to the
plugin's own target directory, so reruns reuse them. A `sitecustomize` module records what each
`Graph.run()` returned, which the tests check against matrix_reference.py. Where an example needs
more than the document gives (a preamble defining its free names, a module to import, a graph
around a decorated function), a comment says so. Every example runs as documented.
"""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import timing_file
from matrix_reference import ATOL, PLUGINS, PYTHON_KERNELS, RTOL, vector

#: The Rust matrix-compute crate: the plugin of the documents' "src/lib.rs" and "plugin/".
MATRIX_COMPUTE = PLUGINS / "matrix-compute"
#: The same kernels in C, behind an annotated header.
MATCOMP_HEADER = PLUGINS / "matrix-compute-c" / "include" / "matcomp.h"
#: The kernels the documents call that matrix-compute lacks ("process", "filter_fn", "check_fn").
DOC_PLUGIN = Path(__file__).resolve().parent / "fixtures" / "doc_plugin"
#: Generous: the first run compiles the Rust plugin in release mode.
TIMEOUT_S = 900

#: Imported by the example's interpreter at start-up: wraps `Graph.run` to pickle what it returns
#: (in the example's own process, not in `@tomii.procs` pool processes).
RECORDER = """\
import itertools
import multiprocessing
import os
import pickle
from pathlib import Path

import tomii.graph

_run = tomii.graph.Graph.run
_count = itertools.count()


def _portable(value):
    if type(value).__module__ == "__main__":
        return repr(value)
    try:
        pickle.dumps(value)
    except Exception:
        return repr(value)
    return value


def _recording_run(self, *args, **kwargs):
    result = _run(self, *args, **kwargs)
    if multiprocessing.parent_process() is None:
        record = {
            "graph": self.to_dict(),
            "outputs": [[(n, i, _portable(v)) for n, i, v in rows] for rows in result.outputs],
            "post_outputs": [(n, i, _portable(v)) for n, i, v in result.post_outputs],
            "report": dict(result.report),
        }
        path = Path(os.environ["TOMII_DOC_RUNS"]) / f"run-{next(_count):03d}.pkl"
        path.write_bytes(pickle.dumps(record))
    return result


tomii.graph.Graph.run = _recording_run
"""


@dataclass(frozen=True)
class Script:
    """A finished example: its directory, exit status, output, and what its runs returned."""

    directory: Path
    returncode: int
    stdout: str
    stderr: str
    runs: list[dict[str, Any]]

    def only_run(self) -> dict[str, Any]:
        assert self.returncode == 0, f"the example failed:\n{self.stderr}"
        assert len(self.runs) == 1, self.runs
        return self.runs[0]


def run_script(
    tmp_path: Path,
    source: str,
    *,
    layout: Mapping[str, Path] | None = None,
    files: Mapping[str, str] | None = None,
    pythonpath: Sequence[Path] = (),
) -> Script:
    """Runs `source` as example.py in a new directory holding `files` and, as symlinks, `layout`."""
    directory = tmp_path / "example"
    directory.mkdir()
    for name, target in (layout or {}).items():
        link = directory / name
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)
    for name, text in (files or {}).items():
        (directory / name).write_text(text, encoding="utf-8")
    (directory / "example.py").write_text(source, encoding="utf-8")
    recorder, runs = tmp_path / "recorder", tmp_path / "runs"
    recorder.mkdir()
    runs.mkdir()
    (recorder / "sitecustomize.py").write_text(RECORDER, encoding="utf-8")
    paths = [str(recorder), *(str(p) for p in pythonpath), os.environ.get("PYTHONPATH", "")]
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(p for p in paths if p),
        "TOMII_DOC_RUNS": str(runs),
    }
    done = subprocess.run(
        [sys.executable, "example.py"],
        cwd=directory,
        env=env,
        capture_output=True,
        text=True,
        timeout=TIMEOUT_S,
        check=False,
    )
    records = [pickle.loads(p.read_bytes()) for p in sorted(runs.glob("run-*.pkl"))]
    return Script(directory, done.returncode, done.stdout, done.stderr, records)


def instances(rows: list[tuple[str, int, Any]], node: str) -> dict[int, Any]:
    """The values of `node` in one frame's outputs, by instance."""
    return {instance: value for name, instance, value in rows if name == node}


def assert_timing_file(path: Path, factors: Mapping[str, int], frames: int) -> None:
    """`path` is Tomii 1.2's timing file of `frames` frames, in which every node of `factors` ran
    that many times a frame."""
    parsed = timing_file.parse(path)
    assert parsed.streams == frames and parsed.avg_time_per_stream_s > 0
    executions = {name: task.executions for name, task in parsed.tasks.items()}
    assert executions == {name: count * frames for name, count in factors.items()}


def assert_spectra(rows: list[tuple[str, int, Any]], node: str, length: int, count: int) -> None:
    """`node`'s outputs are the FFTs of generate_vector(length) of instances 0..count-1."""
    spectra = instances(rows, node)
    assert sorted(spectra) == list(range(count))
    for instance, spectrum in spectra.items():
        assert spectrum.dtype == np.complex64
        reference = np.fft.fft(vector(length, instance))
        np.testing.assert_allclose(spectrum, reference, rtol=RTOL, atol=ATOL)


def assert_matrices(rows: list[tuple[str, int, Any]], node: str, length: int, count: int) -> None:
    """`node`'s outputs are the flattened outer products v·vᴴ of generate_vector(length)."""
    matrices = instances(rows, node)
    assert sorted(matrices) == list(range(count))
    for instance, matrix in matrices.items():
        v = vector(length, instance)
        reference = np.outer(v, np.conj(v)).ravel()
        np.testing.assert_allclose(matrix, reference, rtol=RTOL, atol=ATOL)


# ------------------------------------------------------------------------------------------------
# The package guide, "Python API"
# ------------------------------------------------------------------------------------------------

#: "The snippet above is the usage example from the package docstring."
PYTHON_API_USAGE = """\
import tomii as tm

app = tm.Graph()

buf_size    = app.var("buf_size", 100)
num_nodes   = app.var("num_nodes", 200)
fft_planner = app.var("fft_planner", func="fft_planner", args=[buf_size])

gen_vec     = app.node("gen_vec",     func="generate_vector", factor=num_nodes, args=[buf_size])
compute_fft = app.node("compute_fft", func="compute_fft",     factor=num_nodes,
                       args=[fft_planner, gen_vec.out(0)])

app.build(func_path="src/lib.rs", plugin_manifest="Cargo.toml")
app.run(workers=4, slots=2, timing="timing.txt")
"""

#: The Rust crate where the usage example expects it: in the current directory.
RUST_CRATE_HERE = {"src": MATRIX_COMPUTE / "src", "Cargo.toml": MATRIX_COMPUTE / "Cargo.toml"}


def test_python_api_usage_example(tmp_path: Path) -> None:
    script = run_script(tmp_path, PYTHON_API_USAGE, layout=RUST_CRATE_HERE)
    [rows] = script.only_run()["outputs"]
    assert_spectra(rows, "compute_fft", 100, 200)
    assert_timing_file(script.directory / "timing.txt", {"gen_vec": 200, "compute_fft": 200}, 1)


#: "Type wrappers": every call form of the table, then the readme's "Type system" lines and its
#: "Python int → usize, float → f64 by default", each passed to a Python kernel that returns it.
TYPE_WRAPPERS = """\
import tomii as tm
import tomii


# Not in the documents: a kernel that returns its argument, to see what each value becomes.
@tomii.export
def echo(value):
    return value


app = tm.Graph()
# "Python API", "Type wrappers"
app.py_node("i32", fn=echo, args=[tm.i32(-5)])
app.py_node("u8", fn=echo, args=[tm.u8(255)])
app.py_node("usize", fn=echo, args=[tm.usize(100)])
app.py_node("f32", fn=echo, args=[tm.f32(1.5)])
app.py_node("String", fn=echo, args=[tm.String("hello")])
app.py_node("bool_", fn=echo, args=[tm.bool_(True)])
app.py_node("char_", fn=echo, args=[tm.char_("x")])
app.py_node("Complex64", fn=echo, args=[tm.Complex64(3.5, 2.5)])
app.py_node("Vec", fn=echo, args=[tm.Vec("usize", [1, 2, 3])])
# the package readme, "Type system"
app.py_node("readme_i32", fn=echo, args=[tm.i32(-5)])
app.py_node("readme_f32", fn=echo, args=[tm.f32(3.14)])
app.py_node("readme_String", fn=echo, args=[tm.String("hello")])
app.py_node("readme_bool_", fn=echo, args=[tm.bool_(True)])
app.py_node("readme_Complex64", fn=echo, args=[tm.Complex64(1.0, -0.5)])
app.py_node("readme_Vec", fn=echo, args=[tm.Vec("f32", [1.0, 2.0, 3.0])])
app.py_node("readme_int", fn=echo, args=[7])
app.py_node("readme_float", fn=echo, args=[2.5])
app.run()
"""

#: Per node of TYPE_WRAPPERS: the typed literal in the graph, and the value the kernel received.
TYPED_VALUES: dict[str, tuple[dict[str, Any], Any]] = {
    "i32": ({"type": "i32", "value": -5}, -5),
    "u8": ({"type": "u8", "value": 255}, 255),
    "usize": ({"type": "usize", "value": 100}, 100),
    "f32": ({"type": "f32", "value": 1.5}, 1.5),
    "String": ({"type": "String", "value": "hello"}, "hello"),
    "bool_": ({"type": "bool", "value": True}, True),
    "char_": ({"type": "char", "value": "x"}, "x"),
    "Complex64": ({"type": "Complex64", "value": [3.5, 2.5]}, 3.5 + 2.5j),
    "Vec": ({"type": "Vec<usize>", "value": [1, 2, 3]}, np.array([1, 2, 3], dtype=np.uint64)),
    "readme_i32": ({"type": "i32", "value": -5}, -5),
    "readme_f32": ({"type": "f32", "value": 3.14}, float(np.float32(3.14))),
    "readme_String": ({"type": "String", "value": "hello"}, "hello"),
    "readme_bool_": ({"type": "bool", "value": True}, True),
    "readme_Complex64": ({"type": "Complex64", "value": [1.0, -0.5]}, 1.0 - 0.5j),
    "readme_Vec": (
        {"type": "Vec<f32>", "value": [1.0, 2.0, 3.0]},
        np.array([1.0, 2.0, 3.0], dtype=np.float32),
    ),
    "readme_int": ({"type": "usize", "value": 7}, 7),
    "readme_float": ({"type": "f64", "value": 2.5}, 2.5),
}


def test_type_wrappers_reach_the_kernel_with_their_types(tmp_path: Path) -> None:
    run = run_script(tmp_path, TYPE_WRAPPERS).only_run()
    literals = {node["name"]: node["args"][0] for node in run["graph"]["nodes"]}
    [rows] = run["outputs"]
    received = instances_by_node(rows)
    assert set(literals) == set(received) == set(TYPED_VALUES)
    for name, (literal, value) in TYPED_VALUES.items():
        assert literals[name] == literal, name
        if isinstance(value, np.ndarray):
            assert received[name].dtype == value.dtype, name
            np.testing.assert_array_equal(received[name], value)
        else:
            assert (type(received[name]), received[name]) == (type(value), value), name


def instances_by_node(rows: list[tuple[str, int, Any]]) -> dict[str, Any]:
    """Instance 0's value of every node in one frame's outputs."""
    return {name: value for name, instance, value in rows if instance == 0}


#: "export": the two decorated functions, as the module a script imports. The document shows them
#: without their imports; "Python plugins" shows the same module with `import numpy as np` and
#: `import tomii`, added here.
PYTHON_API_EXPORTS = """\
import numpy as np
import tomii


@tomii.export
def generate_vector(n: int) -> np.ndarray:
    return np.random.randn(n).astype(np.complex64)

@tomii.export(variadic=True)
def write_to_file(path: str, mats: list) -> None:
    np.savez(path, *mats)
"""

#: Not in the documents, which never wire these two: the usage example's vars, a `py_node` as
#: "Python plugins" wires one, and the variadic writer as a post-node reading every instance.
PYTHON_API_EXPORTS_GRAPH = """\
import tomii as tm
import matcomp

app = tm.Graph()
buf_size = app.var("buf_size", 100)
num_nodes = app.var("num_nodes", 200)
gen_vec = app.py_node("gen_vec", fn=matcomp.generate_vector, factor=num_nodes, args=[buf_size])
app.post_node("write_to_file", func="matcomp.write_to_file",
              args=["mats.npz", gen_vec.out(0, num_nodes)])
app.build(python_plugin=True)
app.run(workers=4, slots=2)
"""


def test_python_api_export_and_variadic_export(tmp_path: Path) -> None:
    script = run_script(
        tmp_path, PYTHON_API_EXPORTS_GRAPH, files={"matcomp.py": PYTHON_API_EXPORTS}
    )
    run = script.only_run()
    assert run["post_outputs"] == [("write_to_file", 0, None)]
    [rows] = run["outputs"]
    vectors = instances(rows, "gen_vec")
    assert sorted(vectors) == list(range(200))
    with np.load(script.directory / "mats.npz") as saved:
        assert saved.files == [f"arr_{i}" for i in range(200)]
        for i in range(200):
            assert saved[f"arr_{i}"].dtype == np.complex64 and saved[f"arr_{i}"].shape == (100,)
            np.testing.assert_array_equal(saved[f"arr_{i}"], vectors[i])


#: "procs" (Python API) and "Pure-Python compute: @tomii.procs()" (Python plugins): the decorated
#: functions must live in an importable module; the documents show them without `import tomii`.
PROCS_MODULE = """\
import tomii


@tomii.export
@tomii.procs()
def heavy_pure_python(data: list) -> list:
    return [x ** 2 for x in data]


@tomii.export
@tomii.procs()   # dispatches to a ProcessPoolExecutor; GIL released during wait
def pure_python_example(data: list) -> list:
    return [x * x for x in data]
"""

#: Not in the documents, which never wire these: both functions as nodes, in the documents'
#: script style (statements at the top level).
PROCS_GRAPH = """\
import tomii as tm
import kernels

app = tm.Graph()
data = tm.Vec("usize", [1, 2, 3])
heavy = app.py_node("heavy", fn=kernels.heavy_pure_python, factor=4, args=[data])
pure = app.py_node("pure", fn=kernels.pure_python_example, factor=4, args=[data])
app.build(python_plugin=True)
app.run(workers=4, slots=2, frames=3)
"""


def guarded(script: str) -> str:
    """`script` with its statements after the imports under `if __name__ == "__main__":`."""
    lines = script.splitlines()
    split = max(i for i, line in enumerate(lines) if line.startswith("import ")) + 1
    body = [f"    {line}" if line else "" for line in lines[split:]]
    return "\n".join([*lines[:split], 'if __name__ == "__main__":', *body]) + "\n"


def assert_squares(run: dict[str, Any]) -> None:
    assert len(run["outputs"]) == 3
    for rows in run["outputs"]:
        assert sorted((name, i) for name, i, _ in rows) == [
            (name, i) for name in ("heavy", "pure") for i in range(4)
        ]
        assert all([int(x) for x in value] == [1, 4, 9] for _, _, value in rows)


def test_procs_examples_in_a_guarded_script(tmp_path: Path) -> None:
    run = run_script(tmp_path, guarded(PROCS_GRAPH), files={"kernels.py": PROCS_MODULE})
    assert_squares(run.only_run())


def test_procs_examples_in_a_script_without_a_main_guard(tmp_path: Path) -> None:
    script = run_script(tmp_path, PROCS_GRAPH, files={"kernels.py": PROCS_MODULE})
    assert_squares(script.only_run())


# ------------------------------------------------------------------------------------------------
# The package guide, "Python plugins"
# ------------------------------------------------------------------------------------------------

#: "Exporting functions": "From examples/matrix-compute-python/matcomp.py".
PYTHON_PLUGINS_MATCOMP = """\
import numpy as np
import tomii

@tomii.export
def generate_vector(n: int) -> np.ndarray:
    return (np.random.randn(n) + 1j * np.random.randn(n)).astype(np.complex64)

@tomii.export
def compute_fft(v: np.ndarray) -> np.ndarray:
    return np.fft.fft(v).astype(np.complex64)

@tomii.export(variadic=True)
def write_to_file(path: str, mats: list) -> None:
    np.savez(path, *[np.asarray(m) for m in mats])
"""

#: "Wiring and building". The document's fragment uses `app`, `num_nodes` and `buf_size` without
#: defining them; the preamble defines them as the "Python API" usage example does.
PYTHON_PLUGINS_WIRING = """\
# Not in the fragment: the names it uses, from the "Python API" usage example.
import tomii as tm

app = tm.Graph()

buf_size    = app.var("buf_size", 100)
num_nodes   = app.var("num_nodes", 200)

# The document's fragment.
import matcomp

gen_vec = app.py_node("gen_vec", fn=matcomp.generate_vector,
                      factor=num_nodes, args=[buf_size])
fft = app.py_node("fft", fn=matcomp.compute_fft,
                  factor=num_nodes, args=[gen_vec.out()])

app.build(python_plugin=True)
app.run(workers=4, slots=2)
"""


def test_python_plugins_wiring_with_the_documented_module(tmp_path: Path) -> None:
    run = run_script(
        tmp_path, PYTHON_PLUGINS_WIRING, files={"matcomp.py": PYTHON_PLUGINS_MATCOMP}
    ).only_run()
    [rows] = run["outputs"]
    spectra = instances(rows, "fft")
    assert sorted(spectra) == list(range(200))
    assert all(s.dtype == np.complex64 and s.shape == (100,) for s in spectra.values())
    counts = {node["name"]: node["count"] for node in run["report"]["per_node"]}
    assert counts == {"gen_vec": 200, "fft": 200}


def test_python_plugins_wiring_with_the_python_plugin(tmp_path: Path) -> None:
    script = run_script(tmp_path, PYTHON_PLUGINS_WIRING, pythonpath=[PYTHON_KERNELS])
    [rows] = script.only_run()["outputs"]
    assert_spectra(rows, "fft", 100, 200)


#: "Free-threaded Python": the wiring, built for another interpreter.
FREE_THREADED = PYTHON_PLUGINS_WIRING.replace(
    "app.build(python_plugin=True)",
    'app.build(python_plugin=True, python_interpreter="python3.13t")',
)


def test_python_plugins_free_threaded_build_is_refused_with_the_way_out(tmp_path: Path) -> None:
    """Python kernels run in the interpreter that calls run(): another one cannot be chosen at
    build time, and build() says to run the script with it instead."""
    script = run_script(tmp_path, FREE_THREADED, files={"matcomp.py": PYTHON_PLUGINS_MATCOMP})
    assert script.returncode != 0 and script.runs == []
    last = script.stderr.strip().splitlines()[-1]
    assert last.startswith("ValueError: python_interpreter: Python kernels run in the interpreter")
    assert "run the script with python3.13t instead" in last


# ------------------------------------------------------------------------------------------------
# The package readme (tomii-rt 1.2.0)
# ------------------------------------------------------------------------------------------------

#: "Python API (recommended)", up to its build.
README_GRAPH = """\
import tomii as tm

app = tm.Graph()

buf_size    = app.var("buf_size", 100)
fft_planner = app.var("fft_planner", func="fft_planner", args=[buf_size])

gen_vec     = app.node("gen_vec",     func="generate_vector", factor=200, args=[buf_size])
compute_fft = app.node("compute_fft", func="compute_fft",     factor=200,
                       args=[fft_planner, gen_vec.out()])
vec_mat     = app.node("vec_mat",     func="vec_to_mat",      factor=200,
                       args=[gen_vec.out(), compute_fft.wait()])
"""

README_PYTHON_API = (
    README_GRAPH
    + """
app.build(func_path="plugin/src/lib.rs", plugin_manifest="plugin/Cargo.toml")
app.run(workers=4, slots=2, timing="timing.csv")
"""
)

#: The readme's graph's tasks per frame.
README_TASKS = {"gen_vec": 200, "compute_fft": 200, "vec_mat": 200}


def test_readme_python_api_example(tmp_path: Path) -> None:
    script = run_script(tmp_path, README_PYTHON_API, layout={"plugin": MATRIX_COMPUTE})
    [rows] = script.only_run()["outputs"]
    assert_matrices(rows, "vec_mat", 100, 200)
    assert_timing_file(script.directory / "timing.csv", README_TASKS, 1)


#: "Build options" and "Run options" on the readme's graph, max_frames=100 lowered to 3: the run
#: keeps every frame's outputs (200 matrices of 100 × 100, 16 MB a frame), 1.6 GB for 100 frames.
README_BUILD_AND_RUN_OPTIONS = (
    README_GRAPH
    + """
app.build(func_path="plugin/src/lib.rs",      # Rust source — auto-generates wrappers
          # or func_path="include/plugin.h",  # C header with // @tomii_export annotations
          plugin_manifest="plugin/Cargo.toml",
          release=True)

app.run(workers=8, system_threads=2, slots=4, max_frames=3,
        timing="timing.csv", report="report.json",
        inline_continuation=True, coalesce_barriers=True)
"""
)

#: What the two Tomii 1.2 options without effect here warn.
NO_EFFECT_WARNINGS = [
    "UserWarning: run option 'system_threads': --system-threads (Tomii 1.2) has no effect here",
    "UserWarning: run option 'coalesce_barriers': --coalesce-barriers (Tomii 1.2) has no effect here",
]


def test_readme_build_and_run_options(tmp_path: Path) -> None:
    script = run_script(tmp_path, README_BUILD_AND_RUN_OPTIONS, layout={"plugin": MATRIX_COMPUTE})
    run = script.only_run()
    for warning in NO_EFFECT_WARNINGS:
        assert warning in script.stderr
    assert "inline_continuation" not in script.stderr
    assert len(run["outputs"]) == 3
    for rows in run["outputs"]:
        assert_matrices(rows, "vec_mat", 100, 200)
    assert_timing_file(script.directory / "timing.csv", README_TASKS, 3)
    written = json.loads((script.directory / "report.json").read_text(encoding="utf-8"))
    assert written == run["report"]
    assert (written["workers"], written["slots"], written["frames"], written["tasks"]) == (
        8,
        4,
        3,
        1800,
    )
    assert written["inline_continuation"] is True


#: "Build options" with its alternative line in place of the Rust one: the readme's C header.
README_C_BUILD_OPTIONS = (
    README_GRAPH
    + """
app.build(# func_path="plugin/src/lib.rs",      # Rust source — auto-generates wrappers
          func_path="include/plugin.h",  # C header with // @tomii_export annotations
          plugin_manifest="plugin/Cargo.toml",
          release=True)
app.run(workers=4, slots=2, timing="timing.csv")
"""
)

#: The C kernels where "Build options" expects its header, and the Rust crate as "plugin/".
C_HEADER_AND_CRATE = {"include/plugin.h": MATCOMP_HEADER, "plugin": MATRIX_COMPUTE}


def test_readme_build_options_with_the_c_header_as_written(tmp_path: Path) -> None:
    script = run_script(tmp_path, README_C_BUILD_OPTIONS, layout=C_HEADER_AND_CRATE)
    [rows] = script.only_run()["outputs"]
    assert_matrices(rows, "vec_mat", 100, 200)


def test_readme_build_options_with_the_c_header_alone(tmp_path: Path) -> None:
    """The same without plugin_manifest: the readme's pipeline with the C kernels."""
    source = README_C_BUILD_OPTIONS.replace('          plugin_manifest="plugin/Cargo.toml",\n', "")
    assert "plugin_manifest" not in source
    script = run_script(tmp_path, source, layout=C_HEADER_AND_CRATE)
    [rows] = script.only_run()["outputs"]
    assert_matrices(rows, "vec_mat", 100, 200)
    assert_timing_file(script.directory / "timing.csv", README_TASKS, 1)


#: "Loops and conditions" uses `app`, `Loop`, `Condition`, `loop_factor` and `some_var` without
#: defining them, and builds and runs nothing: the preamble and the ending are the test's.
LOOPS_PREAMBLE = """\
# Not in the document: the names its lines use.
import tomii as tm
from tomii import Condition, Loop

app = tm.Graph()
loop_factor = app.var("loop_factor", 3)
some_var = app.var("some_var", 3)

"""
#: Not in the document: "Build options" with the kernels of tests/python/fixtures/doc_plugin.
LOOPS_ENDING = """
app.build(func_path="include/plugin.h")
app.run(workers=4, slots=2)
"""
DOC_PLUGIN_HERE = {"include": DOC_PLUGIN / "include", "src": DOC_PLUGIN / "src"}

README_CONDITION = """\
cond_node = app.node("filter", func="filter_fn", factor=200,
                     condition=Condition(operation="Eq", value=1, value_type="usize",
                                        func="check_fn", args=[some_var]))
"""

README_LOOP = """\
loop_node = app.node("proc", func="process", factor=200,
                     loop=Loop("iter", factor=loop_factor))
"""


def test_readme_condition(tmp_path: Path) -> None:
    """filter_fn returns its instance; check_fn(3) its instance modulo 3: the instances i with
    i % 3 == 1 run, the others are skipped (their result is None)."""
    source = LOOPS_PREAMBLE + README_CONDITION + LOOPS_ENDING
    run = run_script(tmp_path, source, layout=DOC_PLUGIN_HERE).only_run()
    [rows] = run["outputs"]
    assert instances(rows, "filter") == {i: i if i % 3 == 1 else None for i in range(200)}
    [node] = run["report"]["per_node"]
    assert (node["name"], node["count"], node["skipped"]) == ("filter", 200, 133)


def test_readme_loop(tmp_path: Path) -> None:
    source = LOOPS_PREAMBLE + README_LOOP + LOOPS_ENDING
    script = run_script(tmp_path, source, layout=DOC_PLUGIN_HERE)
    [rows] = script.only_run()["outputs"]
    assert sorted(instances(rows, "proc")) == list(range(200))


def test_readme_loop_with_loop_args(tmp_path: Path) -> None:
    """The nearest form of the loop that runs: `loop_args=[0]` (a documented parameter of
    Graph.node) is the first iteration's argument, so process counts the iterations."""
    loop = README_LOOP.replace("factor=loop_factor))", "factor=loop_factor), loop_args=[0])")
    run = run_script(
        tmp_path, LOOPS_PREAMBLE + loop + LOOPS_ENDING, layout=DOC_PLUGIN_HERE
    ).only_run()
    [rows] = run["outputs"]
    assert instances(rows, "proc") == {i: 3 for i in range(200)}


#: "Graph API": `('dep', node)`, "Ordering-only dependency, no output ($dep)", in the readme's
#: graph in place of the barrier.
README_DEP_TUPLE = README_PYTHON_API.replace("compute_fft.wait()", "('dep', compute_fft)")


def test_readme_dep_tuple(tmp_path: Path) -> None:
    assert "('dep', compute_fft)" in README_DEP_TUPLE
    script = run_script(tmp_path, README_DEP_TUPLE, layout={"plugin": MATRIX_COMPUTE})
    [rows] = script.only_run()["outputs"]
    assert_matrices(rows, "vec_mat", 100, 200)
