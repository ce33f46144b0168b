"""The Python package runs graphs in-process: values, errors and options, against the built plugins."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from reference import GRAPHS, SYNTHETIC, checksum

import tomii


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


def test_inline_continuation_runs_chains_past_the_scheduler_with_the_same_outputs() -> None:
    # A chain of 4 on one worker: each task but the first is its predecessor's continuation.
    graph = {
        "nodes": [{"name": "n0", "function": "checksum", "args": [{"type": "u64", "value": 1}]}]
        + [
            {
                "name": f"n{k}",
                "function": "checksum",
                "args": [{"type": "$res", "predecessor": {"name": f"n{k - 1}"}}],
            }
            for k in range(1, 4)
        ]
    }
    off = tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=5, slots=2)
    on = tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=5, slots=2, inline_continuation=True)
    assert on.outputs == off.outputs
    assert (off.report.tasks_inlined, on.report.tasks_inlined) == (0, 15)
    assert on.report["inline_continuation"] is True


def test_special_files_and_the_graph_itself_are_refused_as_paths(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(tomii.GraphError, match="is not a regular file"):
        tomii.run_graph(fifo, dylibs=[SYNTHETIC])
    graph = tmp_path / "graph.json"
    graph.write_text(json.dumps({"nodes": [{"name": "a", "function": "noop"}]}))
    with pytest.raises(tomii.ConfigError, match="is a FIFO"):
        tomii.run_graph(graph, dylibs=[SYNTHETIC], report=fifo)
    with pytest.raises(tomii.ConfigError, match="is the graph file itself"):
        tomii.run_graph(graph, dylibs=[SYNTHETIC], report=graph)
    assert json.loads(graph.read_text())["nodes"][0]["name"] == "a"
