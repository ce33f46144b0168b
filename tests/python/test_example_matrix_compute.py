"""examples/matrix-compute: graph.py builds the graph of plugins/matrix-compute/matrix_compute.json;
run.py --quick runs it on the Rust, C and Python kernels and verify.py accepts each run; a
corrupted value, swapped instances, a wrong checksum, a short file and bad options are refused
with a message; workload.py's graph computes the right numbers at its "small" scale."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from example_scripts import example_script
from matrix_reference import EXAMPLE, PLUGINS, first_difference, graph, sizes, written

import tomii
from tomii.graphs import workloads

GRAPH_FILE = PLUGINS / "matrix-compute" / "matrix_compute.json"


def script(name: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    # The first Rust run builds the crate in release mode: give it time.
    return example_script("matrix-compute", name, *args, timeout=900)


def typed(value: Any) -> Any:
    """A plain literal of the graph format as the typed value it means (tomii-core/src/graph/
    README.md, "Literals": a non-negative integer is a usize, a string a String)."""
    if isinstance(value, str):
        return {"type": "String", "value": value}
    if isinstance(value, int) and not isinstance(value, bool) and value >= 0:
        return {"type": "usize", "value": value}
    return value


def spelled_out(spec: dict[str, Any], *, prefix: str) -> dict[str, Any]:
    """A graph with its defaults written out as the builder writes them: literals typed, a
    computed initialization's factor of 1; every function name prefixed with `prefix`."""
    spec = json.loads(json.dumps(spec))
    for section in ("initializations", "nodes", "post_nodes"):
        for entry in spec[section]:
            if "value" in entry:
                entry["value"] = typed(entry["value"])
            if "function" in entry:
                entry["function"] = prefix + entry["function"]
                entry["args"] = [typed(arg) for arg in entry.get("args", [])]
                if section == "initializations":
                    entry.setdefault("factor", 1)
    return spec


@pytest.mark.parametrize("python", [False, True])
def test_the_builder_makes_the_graph_of_the_json_file(python: bool) -> None:
    document = json.loads(GRAPH_FILE.read_text(encoding="utf-8"))
    out = document["post_nodes"][0]["args"][0]
    want = spelled_out(document, prefix="matcomp." if python else "")
    assert graph(Path(out), python=python) == want


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], Path]:
    """The .npz of run.py --quick in a language, run once for the module."""
    folder = tmp_path_factory.mktemp("matrix-compute")
    made: dict[str, Path] = {}

    def run(language: str) -> Path:
        if language not in made:
            out = folder / f"{language}.npz"
            done = script("run.py", "--quick", "--language", language, "--out", out)
            assert done.returncode == 0, done.stderr
            assert "ms a frame" in done.stdout and f"{language}: checksum" in done.stdout
            made[language] = out
        return made[language]

    return run


@pytest.mark.parametrize("language", ["rust", "c", "python"])
def test_verify_accepts_each_language(result: Callable[[str], Path], language: str) -> None:
    out = result(language)
    check = script("verify.py", out)
    assert check.returncode == 0, check.stderr
    buf_size, num_nodes = sizes()
    count = num_nodes * (buf_size + buf_size**2)
    assert f"all {count} values of the {language} run agree with NumPy" in check.stdout
    with np.load(out) as data:
        assert str(data["language"]) == language
        # The vectors differ between instances, so a result of the wrong instance shows.
        spectra = data["values"][: num_nodes * buf_size].reshape(num_nodes, buf_size)
        assert len({row.tobytes() for row in spectra}) == num_nodes


def corrupted(source: Path, target: Path, **changes: Any) -> Path:
    with np.load(source) as data:
        arrays = {key: data[key] for key in data.files}
    with target.open("wb") as file:
        np.savez(file, **{**arrays, **changes})
    return target


@pytest.mark.parametrize(
    ("how", "message"),
    [
        ("nudged", "matrix of instance 2, row 3, column 5: "),
        ("swapped", "spectrum of instance 0, bin 0: "),
        ("checksum", "checksum "),
        ("short", "33279 values, expected 33280"),
    ],
)
def test_verify_refuses_a_wrong_result(
    result: Callable[[str], Path], tmp_path: Path, how: str, message: str
) -> None:
    buf_size, num_nodes = sizes()
    source = result("rust")
    with np.load(source) as data:
        values, total = data["values"].copy(), float(data["checksum"])
    changes: dict[str, Any] = {}
    if how == "nudged":
        values[num_nodes * buf_size + (2 * buf_size + 3) * buf_size + 5] += 1e-2
        changes["values"] = values
    elif how == "swapped":
        first, second = values[:buf_size].copy(), values[buf_size : 2 * buf_size].copy()
        values[:buf_size], values[buf_size : 2 * buf_size] = second, first
        changes["values"] = values
    elif how == "checksum":
        changes["checksum"] = total * (1 + 1e-4)
    else:
        changes["values"] = values[:-1]
    check = script("verify.py", corrupted(source, tmp_path / f"{how}.npz", **changes))
    assert check.returncode == 1
    assert message in check.stderr, check.stderr


def test_bad_input_is_an_error_without_a_traceback(tmp_path: Path) -> None:
    cases: list[tuple[str, list[str | Path], int, str]] = [
        ("run.py", ["--language", "fortran"], 2, "--language: invalid choice: 'fortran'"),
        ("run.py", ["--frames", "0"], 2, "--frames: 0 must be at least 1"),
        ("run.py", ["--out", tmp_path / "missing" / "x.npz"], 2, "is not a directory"),
        ("verify.py", [tmp_path / "absent.npz"], 1, "cannot read"),
        ("verify.py", [GRAPH_FILE], 1, "is not a result of run.py --out"),
    ]
    for name, args, status, message in cases:
        done = script(name, *args)
        assert done.returncode == status and message in done.stderr, (args, done.stderr)
        assert "Traceback" not in done.stderr


def test_the_small_workload_computes_the_right_numbers(tmp_path: Path) -> None:
    [work] = workloads(EXAMPLE, scale="small")
    assert work.name == "matrix_compute_16x256" and "barrier" in work.mechanism
    spec = json.loads(json.dumps(work.graph))
    out = tmp_path / "small.c64"
    spec["post_nodes"][0]["args"][0] = {"type": "String", "value": str(out)}
    run = tomii.run_graph(
        spec, dylibs=list(work.dylibs), workers=2, slots=2, frames=3, collect_outputs=False
    )
    [(_, _, total)] = run.post_outputs
    assert first_difference(written(out), float(total), 256, 16) is None
