"""Tomii 1.2 graph files from Python: run unchanged by `run_graph` (their warnings raised as
`tomii.GraphWarning`), to the outputs the reference model computes from their conversion;
`Graph.from_json` loads either dialect into a builder that can be extended and run; `validate`
names the dialect; a factor of `"$workers"` is the run's worker count."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from reference import SYNTHETIC

import tomii
from tomii.check import expected_run

ROOT = Path(__file__).resolve().parents[2]
#: Every Tomii 1.2 graph of the repository without a network source.
V12_FILES = sorted(
    [
        *(ROOT / "tomii-core/tests/graphs/v12").glob("*.json"),
        *(ROOT / "examples/compat/v12").glob("*.json"),
    ]
)
LOCAL_FILES = [path for path in V12_FILES if "network_config" not in path.read_text()]
FRAMES = 3
WORKERS = 2


def graph_warnings(record: list[warnings.WarningMessage]) -> list[str]:
    return [str(w.message) for w in record if issubclass(w.category, tomii.GraphWarning)]


def test_the_fixtures_are_there() -> None:
    names = {path.name for path in LOCAL_FILES}
    assert {"every_construct.json", "pipeline.json", "stream_analytics.json"} <= names


@pytest.mark.parametrize("path", LOCAL_FILES, ids=lambda path: path.name)
def test_a_1_2_file_runs_unchanged_to_the_reference_models_outputs(path: Path) -> None:
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        result = tomii.run_graph(path, dylibs=[SYNTHETIC], frames=FRAMES, workers=WORKERS)
        builder = tomii.Graph.from_json(path)
    run_warnings = graph_warnings(record)
    assert result.report["graph_dialect"] == "tomii-1.2"
    # Each warning twice, once by the run and once by the load, each pointing at this file.
    assert run_warnings == result.report["graph_warnings"] * 2
    assert all(w.filename == __file__ for w in record if issubclass(w.category, tomii.GraphWarning))
    current = builder.to_dict()
    expected = expected_run(current, frames=FRAMES, workers=WORKERS)
    assert result.outputs == expected.outputs
    assert result.post_outputs == expected.post_outputs
    again = tomii.run_graph(current, dylibs=[SYNTHETIC], frames=FRAMES, workers=WORKERS)
    assert again.report["graph_dialect"] == "tomii"
    assert again.report["graph_warnings"] == []
    assert again.outputs == result.outputs


def test_the_warnings_say_what_a_node_selects() -> None:
    with pytest.warns(tomii.GraphWarning, match=r'node "aggregate".*inclusively') as record:
        dialect = tomii.validate(ROOT / "tomii-core/tests/graphs/v12/pipeline.json")
    assert dialect == "tomii-1.2"
    assert len(record) == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert tomii.validate(ROOT / "examples/compat/stream_analytics.json") == "tomii"


def test_from_json_gives_a_builder_to_extend() -> None:
    path = ROOT / "examples/compat/v12/stream_analytics.json"
    graph = tomii.Graph.from_json(path)
    sinks = [n["name"] for n in graph.to_dict()["nodes"]]
    last = graph[sinks[-1]]
    assert isinstance(last, tomii.Node)
    graph.node("extra", func="checksum", args=[last.dep(), 7])
    with pytest.raises(ValueError, match="duplicate node name"):
        graph.node(sinks[0], func="checksum")
    with pytest.raises(KeyError, match="no node, input or var called 'nope'"):
        graph["nope"]
    result = graph.run(dylib=SYNTHETIC, frames=2)
    assert any(name == "extra" for name, _, _ in result.outputs[0])
    # Text and dicts load too, and the current format comes back as it was.
    current = tomii.Graph.from_json(path).to_dict()
    assert tomii.Graph.from_json(json.dumps(current)).to_dict() == current
    assert tomii.Graph.from_json(current).to_dict() == current


def test_a_factor_of_workers_is_the_runs_worker_count() -> None:
    graph: dict[str, Any] = {
        "initializations": [],
        "nodes": [
            {
                "name": "spread",
                "function": "checksum",
                "factor": "$workers",
                "args": [{"type": "$ref", "value": "$index"}],
            }
        ],
    }
    for workers in (1, 3):
        with pytest.warns(tomii.GraphWarning, match=f"this run's {workers} worker"):
            result = tomii.run_graph(graph, dylibs=[SYNTHETIC], workers=workers)
        assert [instance for _, instance, _ in result.outputs[0]] == list(range(workers))
    with pytest.raises(tomii.GraphError, match=r"tomii convert --workers N"):
        tomii.Graph.from_json(graph)
    with pytest.warns(tomii.GraphWarning):
        builder = tomii.Graph.from_json(graph, workers=4)
    assert builder.to_dict()["nodes"][0]["factor"] == 4


def test_errors_name_the_node_and_the_1_2_field() -> None:
    graph = {
        "initializations": [],
        "nodes": [{"name": "gen", "function": "f", "args": [{"type": "u8", "value": "300"}]}],
    }
    with pytest.raises(tomii.GraphError, match=r'node "gen" args\[0\] value.*does not fit in u8'):
        tomii.Graph.from_json(graph)
    with pytest.raises(tomii.GraphError, match=r'node "gen" args\[0\] value'):
        tomii.run_graph(graph, dylibs=[SYNTHETIC])


def test_the_knob_space_of_a_1_2_file_is_its_conversions() -> None:
    path = ROOT / "examples/compat/v12/stream_analytics.json"
    knobs = tomii.knob_space(path)["knobs"]
    assert knobs == tomii.knob_space(tomii.Graph.from_json(path).to_dict())["knobs"]
    # Its group_by and factors are names of initializations, which only the conversion resolves.
    assert any(k["name"].endswith(".group_size") for k in knobs)


def _wavefront(width: int) -> dict[str, Any]:
    """A 1.2 chain whose every node after the first reads its predecessor with the literal range
    "0-0" (1.2: offset 0 inclusive), so each needs the same warning."""
    nodes: list[dict[str, Any]] = [
        {"name": "diag_0", "function": "checksum", "args": [{"type": "u64", "value": "1"}]}
    ]
    for k in range(1, width):
        pred = {"name": f"diag_{k - 1}", "indexes": "0-0"}
        nodes.append(
            {
                "name": f"diag_{k}",
                "function": "checksum",
                "args": [{"type": "$res", "predecessor": pred}],
            }
        )
    return {"nodes": nodes}


def test_warnings_are_one_per_kind_and_every_line_with_verbose() -> None:
    graph = _wavefront(64)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        result = tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=1, workers=1)
    summary = graph_warnings(record)
    assert len(result.report["graph_warnings"]) == 63
    assert len(summary) == 1, summary
    assert "63 nodes: " in summary[0] and '(e.g. node "diag_1"); --verbose lists each' in summary[0]
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=1, workers=1, verbose=True)
    assert graph_warnings(record) == result.report["graph_warnings"]
