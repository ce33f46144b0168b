"""The terminal view of a graph: every graph in the repository draws, layers follow the edges,
edges show their kind and selection, and broken graphs are drawn with the problem marked."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from reference import GRAPHS, ROOT

import tomii
from tomii.visualize import render_ascii

#: Graph files that are not JSON on purpose (parser tests); the CLI test covers their error.
NOT_JSON = {"malformed.json"}
ALL_GRAPH_FILES = sorted(
    [*(ROOT / "examples" / "graphs").glob("*.json"), *(ROOT / "examples" / "compat").glob("*.json")]
    + [*GRAPHS.glob("*.json")]
)
GRAPH_FILES = [path for path in ALL_GRAPH_FILES if path.name not in NOT_JSON]

SMALL = {
    "name": "small",
    "initializations": [
        {"name": "n", "value": 4},
        {"name": "k", "value": {"type": "u8", "value": 2}},
    ],
    "nodes": [
        {
            "name": "sink",
            "function": "checksum_list",
            "args": [
                {"type": "$res", "predecessor": {"name": "square", "index": "0-n"}},
                {"type": "$barrier", "predecessor": {"name": "source"}},
            ],
        },
        {
            "name": "square",
            "function": "checksum",
            "factor": "n",
            "priority": "high",
            "use_workers": "0-1",
            "args": [
                {"type": "$res", "predecessor": {"name": "source", "index": -1, "wrap": True}}
            ],
            "condition": {
                "operation": "Gt",
                "value": 1,
                "value_type": "u64",
                "function": "modulo",
                "args": [{"type": "$dep", "predecessor": {"name": "source"}}, {"type": "$index"}],
            },
        },
        {"name": "source", "function": "checksum", "factor": 4, "group_size": 2},
    ],
    "post_nodes": [
        {
            "name": "report",
            "function": "checksum",
            "args": [{"type": "$res", "predecessor": {"name": "sink", "index": "all"}}],
        }
    ],
}


def sections(drawing: str) -> list[str]:
    """The headings of the drawing, in order."""
    return [line.split(" ━")[0][3:] for line in drawing.splitlines() if line.startswith("━━ ")]


def box_of(drawing: str, node: str) -> list[str]:
    """The inner lines of the first box whose first line is `node`."""
    lines = drawing.splitlines()
    for position, line in enumerate(lines):
        if line.startswith("│ ") and line[2:-1].rstrip() == node:
            end = next(i for i in range(position, len(lines)) if lines[i].startswith("└"))
            return [row[2:-1].rstrip() for row in lines[position:end] if row.startswith("│")]
    raise AssertionError(f"no box for {node!r} in:\n{drawing}")


@pytest.mark.parametrize("path", GRAPH_FILES, ids=lambda path: f"{path.parent.name}/{path.name}")
def test_every_graph_in_the_repository_draws(path: Path) -> None:
    graph: dict[str, Any] = json.loads(path.read_text())
    drawing = render_ascii(graph)
    for node in graph["nodes"]:
        assert box_of(drawing, node["name"])
    assert_boxes_are_closed(drawing)


def assert_boxes_are_closed(drawing: str) -> None:
    """Every box row is as wide as the box's top edge, so the right border lines up."""
    width = 0
    for line in drawing.splitlines():
        if line.startswith("┌"):
            width = len(line)
        if line[:1] in ("│", "├", "└"):
            assert len(line) == width and line[-1] in "│┤┘", line


def test_the_repository_graphs_cover_what_the_view_must_survive() -> None:
    names = {path.name for path in GRAPH_FILES}
    assert {"cycle.json", "duplicate_node.json", "unknown_predecessor.json"} <= names
    assert NOT_JSON <= {path.name for path in ALL_GRAPH_FILES}


def test_nodes_sit_in_topological_layers_whatever_the_file_order() -> None:
    drawing = render_ascii(SMALL)
    assert sections(drawing) == [
        "layer 0",
        "layer 1",
        "layer 2",
        "post-nodes (run once, after the last frame)",
    ]
    order = [line[2:-1].strip() for line in drawing.splitlines() if line.startswith("│ ")]
    names = [name for name in order if name in ("source", "square", "sink", "report")]
    assert names == ["source", "square", "sink", "report"]


def test_boxes_show_the_call_markers_and_incoming_edges_by_kind() -> None:
    drawing = render_ascii(SMALL)
    assert box_of(drawing, "source") == ["source", "checksum × 4", "[group_size 2]"]
    assert box_of(drawing, "square") == [
        "square",
        "checksum × n (4)",
        "[priority high]  [workers 0-1]",
        "[if modulo($dep source, $index) Gt 1 u64]",
        "← source  $res  offset -1, wrapping",
        "← source  $dep  same instance  (condition)",
    ]
    assert box_of(drawing, "sink")[-2:] == [
        "← square  $res      offsets [0, n)",
        "← source  $barrier  every instance",
    ]
    assert box_of(drawing, "report")[-1] == "← sink  $res  every instance"


def test_initializations_come_first() -> None:
    lines = render_ascii(SMALL).splitlines()
    assert lines[:4] == [
        "graph 'small': 3 nodes, 1 post-node",
        "initializations",
        "  n = 4",
        "  k = 2 u8",
    ]


def test_a_cycle_is_reported_not_looped_on() -> None:
    graph = {
        "nodes": [
            {"name": "start", "function": "noop"},
            {"name": "a", "function": "noop", "args": [dep("start"), dep("c")]},
            {"name": "b", "function": "noop", "args": [dep("a")]},
            {"name": "c", "function": "noop", "args": [dep("b")]},
        ]
    }
    drawing = render_ascii(graph)
    assert sections(drawing) == ["layer 0", "not layered: these nodes form a cycle: a → b → c → a"]
    assert box_of(drawing, "c")


def test_a_long_cycle_is_cut_in_its_heading() -> None:
    ring = [{"name": f"n{i}", "function": "noop", "args": [dep(f"n{i - 1}")]} for i in range(1, 30)]
    ring.insert(0, {"name": "n0", "function": "noop", "args": [dep("n29")]})
    (heading,) = sections(render_ascii({"nodes": ring}))
    assert heading.endswith("n0 → n1 → n2 → n3 → n4 → n5 → n6 → … (30 nodes) → n0")


def dep(name: str) -> dict[str, Any]:
    return {"type": "$dep", "predecessor": {"name": name}}


def test_problems_are_marked_on_the_boxes() -> None:
    graph = {
        "nodes": [
            {"name": "twin", "function": "noop"},
            {"name": "twin", "function": "noop", "args": [dep("ghost")]},
            "not a node",
        ]
    }
    drawing = render_ascii(graph)
    assert "← ghost  $dep  same instance  (!) no such node" in drawing
    assert "(!) duplicate name: edges bind to the first node so named" in drawing
    assert 'not a node: "not a node"' in drawing


def test_a_node_reading_its_own_earlier_instance_is_no_cycle() -> None:
    graph = {"nodes": [{"name": "scan", "function": "noop", "factor": 4, "args": []}]}
    graph["nodes"][0]["args"] = [{"type": "$dep", "predecessor": {"name": "scan", "index": -1}}]
    drawing = render_ascii(graph)
    assert sections(drawing) == ["layer 0"]
    assert box_of(drawing, "scan")[-1] == "← scan  $dep  offset -1"


def test_a_built_graph_draws_through_its_json() -> None:
    g = tomii.Graph()
    a = g.node("a", func="checksum", factor=2)
    g.node("b", func="checksum", args=[a.out(0, 2, wrap=False)])
    drawing = render_ascii(json.loads(g.to_json()))
    assert box_of(drawing, "b")[-1] == "← a  $res  offsets [0, 2)"


def test_only_a_graph_shaped_value_is_refused() -> None:
    with pytest.raises(tomii.GraphError, match="list of 'nodes'"):
        render_ascii({"name": "no nodes"})
    assert "(no nodes)" in render_ascii({"nodes": []})
