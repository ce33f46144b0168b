"""Compatibility surface for Tomii 1.2's scripts, which import `to_json` from its private module
`tomii._serialize` (to write a graph file for the command line). It is `Graph.to_json`.
"""

from __future__ import annotations

from .graph import Graph

__all__ = ["to_json"]


def to_json(graph: Graph, indent: int | None = 4) -> str:
    """The graph in the graph JSON format: `graph.to_json(indent)`."""
    return graph.to_json(indent=indent)
