"""examples/wavefront: run.py --quick aligns the generated pair in blocks with its C kernels, and
verify.py confirms every frame against its own NumPy DP; a corrupted result, a run whose frames
outnumber the problem's slot buffers and a bad option are refused with a message; --schedulers
prints a sweep's summary and verdict."""

from __future__ import annotations

import importlib.util
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from example_scripts import assert_compared, example_script

import tomii
from tomii.build import build

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "wavefront"


def script(name: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return example_script("wavefront", name, *args)


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wavefront") / "result.json"
    run = script("run.py", "--quick", "--slots", "3", "--frames", "6", "--out", out)
    assert run.returncode == 0, run.stderr
    assert "score" in run.stdout
    return out


def test_verify_accepts_the_run(result: Path) -> None:
    check = script("verify.py", result)
    assert check.returncode == 0, check.stderr
    document = json.loads(result.read_text())
    assert len(document["frames"]) == 6 and "table" in document["frames"][-1]
    assert document["frames"][-1]["score"] > 100  # the planted region, not a random pair's


def test_the_diagonal_encoding_computes_the_same(tmp_path: Path) -> None:
    out = tmp_path / "diagonal.json"
    run = script("run.py", "--quick", "--encoding", "diagonal", "--block", "48", "--out", out)
    assert run.returncode == 0, run.stderr
    assert script("verify.py", out).returncode == 0


@pytest.mark.parametrize(
    ("field", "change"),
    [
        ("score", lambda frame: frame.__setitem__("score", frame["score"] + 1)),
        ("last_row", lambda frame: frame["last_row"].__setitem__(7, frame["last_row"][7] + 2)),
        ("table", lambda frame: frame["table"].__setitem__(400, frame["table"][400] - 1)),
    ],
)
def test_verify_refuses_a_corrupted_result(
    result: Path, tmp_path: Path, field: str, change: Any
) -> None:
    document = json.loads(result.read_text())
    change(document["frames"][0] if field != "table" else document["frames"][-1])
    corrupted = tmp_path / "corrupted.json"
    corrupted.write_text(json.dumps(document))
    check = script("verify.py", corrupted)
    assert check.returncode == 1
    assert "WRONG" in check.stderr and field in check.stderr


def test_verify_refuses_other_sequences(result: Path, tmp_path: Path) -> None:
    document = json.loads(result.read_text())
    document["b"] = "A" + document["b"][1:] if document["b"][0] != "A" else "C" + document["b"][1:]
    corrupted = tmp_path / "sequences.json"
    corrupted.write_text(json.dumps(document))
    check = script("verify.py", corrupted)
    assert check.returncode == 1 and "sequences" in check.stderr


def test_a_frame_in_a_slot_without_buffers_fails() -> None:
    spec = importlib.util.spec_from_file_location("wavefront_graph", EXAMPLE / "graph.py")
    assert spec is not None and spec.loader is not None
    graph = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(graph)
    app = graph.build("ACGTACGT", "ACGGTACG", block=4, slots=1)
    library = build(func_path=EXAMPLE / "include" / "wavefront.h").path
    with pytest.raises(tomii.KernelError, match="slot 1 but the problem has borders for 1 slot"):
        tomii.run_graph(app.to_dict(), dylibs=[library], workers=2, slots=2, frames=4)


def test_a_comparison_prints_the_sweeps_summary() -> None:
    run = script("run.py", "--quick", "--schedulers", "fifo,priority", "--repeats", "2")
    assert_compared(run, "wavefront", ["fifo", "priority"], 2)


def test_bad_options_are_refused_without_a_traceback(tmp_path: Path) -> None:
    run = script("run.py", "--block", "0")
    assert run.returncode == 2 and "--block" in run.stderr and "Traceback" not in run.stderr
    run = script("run.py", "--quick", "--schedulers", "fifo", "--out", tmp_path / "x.json")
    assert run.returncode == 2 and "a comparison keeps no outputs" in run.stderr
    missing = script("verify.py", tmp_path / "absent.json")
    assert missing.returncode == 1 and "cannot read" in missing.stderr
