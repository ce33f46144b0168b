"""The Python package runs graphs in-process: values, errors and options, against the built plugins."""

from __future__ import annotations

from pathlib import Path

import pytest

import tomii

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "target" / "debug"
SYNTHETIC = TARGET / "libtomii_synthetic.so"
GRAPHS = ROOT / "tomii-core" / "tests" / "graphs"

PRIME = 0x100000001B3
BASIS = 0xCBF29CE484222325
MASK = (1 << 64) - 1


def mix(h: int, w: int) -> int:
    g = ((h ^ w) * PRIME) & MASK
    return g ^ (g >> 29)


def fnv1a(data: bytes) -> int:
    h = BASIS
    for b in data:
        h = ((h ^ b) * PRIME) & MASK
    return h


def checksum(node: str, instance: int, frame: int, words: list[int]) -> int:
    h = mix(mix(fnv1a(node.encode()), instance), frame)
    for w in words:
        h = mix(h, w)
    return h


@pytest.fixture(autouse=True)
def scheduler_path(monkeypatch: pytest.MonkeyPatch) -> None:
    if not SYNTHETIC.is_file():
        pytest.fail(f"{SYNTHETIC} is missing: run `cargo build --workspace` first")
    monkeypatch.setenv("TOMII_SCHEDULER_PATH", str(TARGET))


def test_checksums_match_for_every_frame_and_scheduler() -> None:
    graph = {
        "nodes": [
            {"name": "each", "function": "checksum", "factor": 3, "args": [{"type": "$index"}]},
            {
                "name": "sink",
                "function": "checksum",
                "args": [{"type": "$res", "predecessor": {"name": "each", "index": "all"}}],
            },
        ]
    }
    for scheduler in ["fifo", "c-fifo", "work-stealing", "priority"]:
        result = tomii.run_graph(
            graph, dylibs=[SYNTHETIC], scheduler=scheduler, workers=2, slots=3, frames=8
        )
        assert result.report["frames"] == 8
        assert result.report["scheduler"]["name"] == scheduler
        for frame, outputs in enumerate(result.outputs):
            each = [checksum("each", i, frame, [i]) for i in range(3)]
            assert outputs == [("sink", 0, checksum("sink", 0, frame, each))]


def test_a_graph_file_and_post_outputs() -> None:
    result = tomii.run_graph(GRAPHS / "post_node.json", dylibs=[SYNTHETIC], frames=3)
    assert [name for name, _, _ in result.post_outputs] == ["summary", "summary"]


def test_errors_are_specific_exceptions() -> None:
    with pytest.raises(tomii.GraphError, match="no nodes"):
        tomii.run_graph({"nodes": []}, dylibs=[SYNTHETIC])
    with pytest.raises(tomii.KernelError, match="boom"):
        tomii.run_graph(
            {"nodes": [{"name": "x", "function": "fail", "args": ["boom"]}]}, dylibs=[SYNTHETIC]
        )
    with pytest.raises(tomii.PluginError, match="nosuch"):
        tomii.run_graph(
            {"nodes": [{"name": "x", "function": "noop"}]}, dylibs=[SYNTHETIC], scheduler="nosuch"
        )
    with pytest.raises(tomii.ConfigError, match="workers is 0"):
        tomii.run_graph(
            {"nodes": [{"name": "x", "function": "noop"}]}, dylibs=[SYNTHETIC], workers=0
        )
    with pytest.raises(tomii.PluginError, match="unknown option"):
        tomii.run_graph(
            {"nodes": [{"name": "x", "function": "noop"}]},
            dylibs=[SYNTHETIC],
            scheduler="random",
            sched_opts={"sed": "1"},
        )
    assert issubclass(tomii.SchedulerFault, tomii.TomiiError)


def test_scheduler_options_from_python() -> None:
    graph = {"nodes": [{"name": "x", "function": "noop", "factor": 4}]}
    result = tomii.run_graph(
        graph, dylibs=[SYNTHETIC], scheduler="random", sched_opts={"seed": "7"}
    )
    assert result.report["tasks"] == 4
