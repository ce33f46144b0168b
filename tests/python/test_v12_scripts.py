"""Scripts in the shapes of Tomii 1.2's own, on the synthetic kernels: an example's run script
(the keywords every `run_bench.py` passes to `Graph.run`, `env` read by an initialization as
`get_out_file(SCRIPT_DIR)` read it) and a bench script's imports of 1.2's private modules
(`TypedValue`, `build_command`, `_find_binary`, `to_json`, `Node`, `find_workspace_root`)."""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
import timing_file
from reference import SYNTHETIC

import tomii as tm
from tomii._builder import BuildError, find_workspace_root
from tomii._node import Node as _Node
from tomii._runner import _find_binary, build_command
from tomii._serialize import to_json
from tomii._types import String, TypedValue


@tm.export
def get_out_file(variable: str, name: str) -> str:
    """As 1.2's example plugins do: the result file in the directory env `variable` names."""
    path = Path(os.environ[variable]) / name
    path.write_text("", encoding="utf-8")
    return str(path)


def example_graph() -> tm.Graph:
    """A graph in the shape of 1.2's stream-analytics builder, on the synthetic kernels."""
    app = tm.Graph()
    total = app.var("total_readings", 8)
    app.var(
        "result_file", func=f"{__name__}.get_out_file", args=[String("SCRIPT_DIR"), String("r.txt")]
    )
    generate = app.node(
        "generate", func="checksum", factor=total, args=[TypedValue("$ref", "$index")]
    )
    classify = app.node("classify", func="checksum", factor=total, args=[generate.out()])
    app.node("report", func="checksum_list", args=[classify.out(0, total)])
    app.post_node("cleanup", func="noop", args=[])
    return app


def test_an_example_run_script_runs_unchanged(tmp_path: Path) -> None:
    out_file, timing, report_file = (
        tmp_path / "out.txt",
        tmp_path / "timing.txt",
        tmp_path / "report.txt",
    )
    app = example_graph()
    env = {"SCRIPT_DIR": str(tmp_path)}
    with pytest.warns(UserWarning) as caught:
        app.run(
            dylib=str(SYNTHETIC),
            env=env,
            workers=2,
            system_threads=3,
            slots=2,
            max_streams=3,
            max_runtime=60,
            batching_size=1,
            batching_limit=10,
            exclude_streams=0,
            output=str(out_file),
            timing=str(timing),
            record=True,
            inits=True,
            slot_priority=False,
            debug=False,
            report=str(report_file),
        )
    said = [str(w.message) for w in caught]
    assert len(said) == 3 and all("no effect" in line for line in said), said
    assert (tmp_path / "r.txt").is_file(), "the initialization read SCRIPT_DIR"
    assert "SCRIPT_DIR" not in os.environ
    assert "Initialized Objects:" in out_file.read_text(encoding="utf-8")
    assert timing_file.parse(timing).streams == 3
    assert (tmp_path / "timing_sched.csv").is_file()
    assert json.loads(report_file.read_text(encoding="utf-8"))["frames"] == 3


def pipeline(n: int) -> tm.Graph:
    """A graph in the shape of 1.2's pipeline bench: `$index` as a raw TypedValue."""
    app = tm.Graph()
    _index = TypedValue("$ref", "$index")
    ingest = app.node("ingest", func="checksum", factor=n, args=[_index, tm.usize(n)])
    transform = app.node("transform", func="checksum", factor=n, args=[ingest.out()])
    aggregate = app.node("aggregate", func="checksum_list", args=[transform.out(0, n)])
    app.node("emit", func="checksum", args=[aggregate.out(), tm.usize(0)])
    return app


def test_a_bench_script_with_1_2_private_imports(tmp_path: Path) -> None:
    graph = pipeline(16)
    spec = json.loads(to_json(graph))
    assert spec["nodes"][0]["args"][0] == {"type": "$index"}
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False, dir=tmp_path) as tmp:
        tmp.write(to_json(graph))
    timing = tmp_path / "probe.timing.txt"
    command = build_command(
        _find_binary(),
        tmp.name,
        str(SYNTHETIC),
        workers=2,
        core_offset=1,
        system_threads=1,
        slots=2,
        max_streams=12,
        batching_size=1,
        exclude_streams=2,
        custom=True,
        use_rdtsc=True,
        coalesce_barriers=True,
        inline_continuation=True,
        timing=str(timing),
    )
    assert command[1:6] == ["run", "--json", tmp.name, "--dylib", str(SYNTHETIC)]
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stderr.count("has no effect here") == 5, result.stderr
    parsed = timing_file.parse(timing)
    assert parsed.streams == 12 and parsed.excluded == (2, 10)
    with pytest.raises(tm.ConfigError, match="unknown run option 'max_frame'"):
        build_command("tomii", tmp.name, str(SYNTHETIC), max_frame=3)
    with pytest.warns(UserWarning, match="'binary' has no effect"):
        report = graph.run(
            dylib=str(SYNTHETIC),
            binary=str(tmp_path / "target" / "release" / "main"),
            workers=2,
            slots=2,
            max_streams=4,
            inline_continuation=True,
        ).report
    assert report.frames == 4 and report.tasks == 4 * 34


def test_a_network_handle_and_the_workspace_root(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = tm.Graph()
    app.network(
        socket_type="udp",
        num_sockets=1,
        packet_length=64,
        frame_packets=4,
        address="127.0.0.1",
        start_port=0,
    )
    _net = _Node("$network", func="")
    app.node("decode", func="checksum", factor=4, args=[_net.out()])
    app.node("combine", func="checksum_list", args=[_net.out(0, 4)])
    edges = [n["args"][0]["predecessor"] for n in app.to_dict()["nodes"]]
    assert [e["name"] for e in edges] == ["$network", "$network"]
    with pytest.raises(tm.GraphError, match="only a handle"):
        _Node("x", func="f", args=[])
    root = tmp_path / "ws"
    (root / "crate").mkdir(parents=True)
    (root / "Cargo.toml").write_text('[workspace]\nmembers = ["crate"]\n', encoding="utf-8")
    monkeypatch.chdir(root / "crate")
    assert find_workspace_root() == root.resolve()
    assert issubclass(BuildError, tm.PluginError)
