"""Compatibility surface for Tomii 1.2's scripts, which import `Node` (and its edge classes) from
its private module `tomii._node`. Its one use there is a handle on a node the graph already has,
chiefly `Node("$network", func="")`, whose `.out(a, b)` reads the network source's packets; the
handle is `tomii.graph.Node`'s, and nodes are added with `Graph.node(...)`.
"""

from __future__ import annotations

from typing import Any

from . import graph as _graph
from .errors import GraphError
from .graph import NodeBarrier, NodeDep, NodeOutput

__all__ = ["Node", "NodeBarrier", "NodeDep", "NodeOutput"]


class Node(_graph.Node):
    """A handle on the node called `name` (`$network`: the network source): its `out()`,
    `dep()` and `wait()` give the edges to it. `func` is accepted and unused, as it was for a
    handle in Tomii 1.2; anything more describes a new node, which `Graph.node(...)` adds."""

    def __init__(self, name: str, *, func: str = "", **node: Any) -> None:
        if node:
            raise GraphError(
                f"Node({name!r}, {', '.join(sorted(node))}=...): tomii._node.Node is only a handle "
                f"on a node of the graph; add a node with Graph.node({name!r}, func=..., args=...)"
            )
        super().__init__(name)
