"""The terminal view of a graph: box-drawing art of its nodes in topological layers, each box
listing the node's incoming edges by kind, then the post-nodes.

It draws what the graph file says and judges nothing: a graph the runtime would reject (unknown
predecessors, duplicate names, a cycle) is drawn with the problem marked, never refused, so the
view helps find the problem. It never runs, edits or validates a graph.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from .errors import GraphError

__all__ = ["render_ascii"]

_EDGE_KINDS = ("$res", "$dep", "$barrier")
#: The most names a cycle's heading spells out; a longer cycle is cut in the middle.
_LONGEST_CYCLE_SHOWN = 8


@dataclass
class _Edge:
    """One incoming edge of a node, as drawn under its box."""

    predecessor: str
    kind: str
    selection: str
    #: Where the edge sits when not in `args`: "loop_args" or "condition".
    place: str
    #: The predecessor names no regular node.
    unknown: bool = False


@dataclass
class _Node:
    """What a box shows: the node's header lines and its incoming edges."""

    name: str
    lines: list[str]
    edges: list[_Edge] = field(default_factory=list)


def render_ascii(graph: dict[str, Any]) -> str:
    """`graph` (a graph-format dict) as text: the initializations, the nodes layer by layer (a node
    sits one layer below its deepest predecessor), any nodes caught in a cycle, then the
    post-nodes. Raises `GraphError` only when `graph` is not an object with a list of nodes."""
    if not isinstance(graph, dict) or not isinstance(graph.get("nodes"), list):
        raise GraphError("cannot draw the graph: it must be an object with a list of 'nodes'")
    inits = _initializations(graph)
    nodes = [_node(graph, position, spec) for position, spec in enumerate(graph["nodes"])]
    post_nodes = [_node(graph, position, spec) for position, spec in enumerate(_post_specs(graph))]
    _mark_unknown_and_duplicates(nodes, post_nodes)
    predecessors = _predecessor_positions(nodes)
    layers, cyclic = _layers(predecessors)
    sections = [_title(graph, nodes, post_nodes), *_init_section(inits)]
    if not nodes:
        sections.append("(no nodes)")
    for depth, layer in enumerate(layers):
        sections.append(_rule(f"layer {depth}"))
        sections += [_box(nodes[i]) for i in layer]
    if cyclic:
        sections.append(_rule("not layered: " + _cycle_text(nodes, predecessors, cyclic)))
        sections += [_box(nodes[i]) for i in sorted(cyclic)]
    if post_nodes:
        sections.append(_rule("post-nodes (run once, after the last frame)"))
        sections += [_box(node) for node in post_nodes]
    return "\n".join(sections) + "\n"


def _post_specs(graph: dict[str, Any]) -> list[Any]:
    post_nodes = graph.get("post_nodes")
    return post_nodes if isinstance(post_nodes, list) else []


def _title(graph: dict[str, Any], nodes: list[_Node], post_nodes: list[_Node]) -> str:
    name = graph.get("name")
    label = f"graph {name!r}" if isinstance(name, str) else "graph (unnamed)"
    return f"{label}: {_count(len(nodes), 'node')}, {_count(len(post_nodes), 'post-node')}"


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _rule(label: str) -> str:
    """A section heading: the label on a heavy horizontal line."""
    return f"━━ {label} " + "━" * max(4, 60 - len(label))


# Initializations.


def _initializations(graph: dict[str, Any]) -> list[dict[str, Any]]:
    inits = graph.get("initializations")
    return [i for i in inits if isinstance(i, dict)] if isinstance(inits, list) else []


def _init_section(inits: list[dict[str, Any]]) -> list[str]:
    if not inits:
        return []
    width = max(len(str(init.get("name"))) for init in inits)
    lines = ["initializations"]
    for init in inits:
        name = str(init.get("name"))
        lines.append(f"  {name:<{width}} = {_init_value(init)}")
    return ["\n".join(lines)]


def _init_value(init: dict[str, Any]) -> str:
    if "value" in init:
        return _literal(init["value"])
    function = init.get("function", init.get("func"))
    args = ", ".join(_arg(arg) for arg in init.get("args") or [])
    return f"{function}({args}) × {init.get('factor', 1)}  (computed when the run starts)"


def _literal(value: Any) -> str:
    if isinstance(value, dict) and set(value) == {"type", "value"}:
        return f"{json.dumps(value['value'])} {value['type']}"
    return json.dumps(value)


def _arg(arg: Any) -> str:
    """An argument as a call would show it: literals as JSON, references by name."""
    if not isinstance(arg, dict) or "value" in arg:
        return _literal(arg)
    kind = arg.get("type")
    if kind == "$ref":
        return str(arg.get("name"))
    if kind in _EDGE_KINDS:
        predecessor = arg.get("predecessor")
        name = predecessor.get("name") if isinstance(predecessor, dict) else None
        return f"{kind} {name}"
    return str(kind)


# Nodes.


def _node(graph: dict[str, Any], position: int, spec: Any) -> _Node:
    if not isinstance(spec, dict):
        return _Node(f"#{position}", [f"not a node: {json.dumps(spec)}"])
    name = spec.get("name")
    node = _Node(name if isinstance(name, str) else f"#{position}", [_call_line(graph, spec)])
    markers = _markers(spec)
    if markers:
        node.lines.append("  ".join(markers))
    condition = spec.get("condition")
    if isinstance(condition, dict) and condition:
        node.lines.append(_condition_line(condition))
    node.edges = _edges(spec)
    return node


def _call_line(graph: dict[str, Any], spec: dict[str, Any]) -> str:
    """`function × factor`, the factor's value beside the initialization naming it."""
    factor = spec.get("factor", 1)
    if isinstance(factor, str):
        value = _init_literal(graph, factor)
        factor = factor if value is None else f"{factor} ({value})"
    return f"{spec.get('function', spec.get('func', '?'))} × {factor}"


def _init_literal(graph: dict[str, Any], name: str) -> Any:
    """The literal value of initialization `name`, or None when it is computed or absent."""
    for init in _initializations(graph):
        if init.get("name") == name and "value" in init:
            value = init["value"]
            return value.get("value") if isinstance(value, dict) else value
    return None


def _markers(spec: dict[str, Any]) -> list[str]:
    """The scheduling and control-flow fields of the node, one bracketed tag each."""
    markers = []
    if spec.get("priority") is not None:
        markers.append(f"[priority {spec['priority']}]")
    if spec.get("use_workers") is not None:
        markers.append(f"[workers {spec['use_workers']}]")
    if spec.get("group_size") is not None:
        markers.append(f"[group_size {spec['group_size']}]")
    loop = spec.get("loop")
    if isinstance(loop, dict) and loop:
        extra = len(spec.get("loop_args") or [])
        loop_args = f", {_count(extra, 'loop arg')}" if extra else ""
        markers.append(f"[loop {loop.get('name', '')} × {loop.get('factor', '?')}{loop_args}]")
    return markers


def _condition_line(condition: dict[str, Any]) -> str:
    function = condition.get("function", condition.get("func"))
    args = ", ".join(_arg(arg) for arg in condition.get("args") or [])
    value = _literal(condition.get("value"))
    value_type = condition.get("value_type")
    typed = f" {value_type}" if value_type else ""
    return f"[if {function}({args}) {condition.get('operation')} {value}{typed}]"


def _edges(spec: dict[str, Any]) -> list[_Edge]:
    """The node's edges in call order: args, then loop_args, then the condition's args."""
    condition = spec.get("condition")
    places = [
        ("", spec.get("args")),
        ("loop_args", spec.get("loop_args")),
        ("condition", condition.get("args") if isinstance(condition, dict) else None),
    ]
    edges = []
    for place, args in places:
        for arg in args if isinstance(args, list) else []:
            if isinstance(arg, dict) and arg.get("type") in _EDGE_KINDS:
                predecessor = arg.get("predecessor")
                if not isinstance(predecessor, dict):
                    predecessor = {}
                kind = arg["type"]
                name = str(predecessor.get("name"))
                edges.append(_Edge(name, kind, _selection(kind, predecessor), place))
    return edges


def _selection(kind: str, predecessor: dict[str, Any]) -> str:
    """Which predecessor instances the edge reads, in words (see the graph README's table)."""
    if predecessor.get("group_by") is not None:
        return f"groups of {predecessor['group_by']}"
    index = predecessor.get("index")
    wrap = ", wrapping" if predecessor.get("wrap") else ""
    if predecessor.get("absolute"):
        return f"instances {index}"
    if predecessor.get("rule") is not None:
        return f"Tomii 1.2 indexes {index!r}"
    if index is None:
        words = "every instance" if kind == "$barrier" else "same instance"
    elif index == "all":
        words = "every instance"
    elif isinstance(index, list):
        words = f"offsets {index}"
    elif isinstance(index, str) and "-" in index.strip().lstrip("-"):
        start, end = index.strip().split("-", 1)
        words = f"offsets [{start}, {end})"
    elif index in (0, "0"):
        words = "same instance"
    else:
        words = f"offset {index}"
    return words + wrap


def _mark_unknown_and_duplicates(nodes: list[_Node], post_nodes: list[_Node]) -> None:
    """Notes, on the boxes, names used twice and edges from nodes that do not exist."""
    seen: set[str] = set()
    for node in nodes + post_nodes:
        if node.name in seen:
            node.lines.append("(!) duplicate name: edges bind to the first node so named")
        seen.add(node.name)
    regular = {node.name for node in nodes}
    for node in nodes + post_nodes:
        for edge in node.edges:
            edge.unknown = edge.predecessor not in regular


# Layers.


def _predecessor_positions(nodes: list[_Node]) -> list[set[int]]:
    """Per node, the positions of the nodes it reads from; a name used twice means its first
    node. Unknown names and a node reading its own instances (an offset within itself, no cycle)
    do not count."""
    first: dict[str, int] = {}
    for position, node in enumerate(nodes):
        first.setdefault(node.name, position)
    return [
        {first[e.predecessor] for e in node.edges if first.get(e.predecessor, position) != position}
        for position, node in enumerate(nodes)
    ]


def _layers(predecessors: list[set[int]]) -> tuple[list[list[int]], set[int]]:
    """Node positions by layer (Kahn's algorithm, each node one below its deepest predecessor)
    and the positions left over, which wait on each other in a cycle."""
    successors: list[list[int]] = [[] for _ in predecessors]
    for position, preds in enumerate(predecessors):
        for pred in preds:
            successors[pred].append(position)
    waiting = [len(preds) for preds in predecessors]
    depth = [0] * len(predecessors)
    ready = [position for position, count in enumerate(waiting) if count == 0]
    for position in ready:  # `ready` grows while it is walked: a queue.
        for successor in successors[position]:
            depth[successor] = max(depth[successor], depth[position] + 1)
            waiting[successor] -= 1
            if waiting[successor] == 0:
                ready.append(successor)
    layers: list[list[int]] = [[] for _ in range(max((depth[p] for p in ready), default=-1) + 1)]
    for position in sorted(ready):
        layers[depth[position]].append(position)
    return layers, set(range(len(predecessors))) - set(ready)


def _cycle_text(nodes: list[_Node], predecessors: list[set[int]], cyclic: set[int]) -> str:
    """One cycle among the leftover nodes, as `a → b → a`: every leftover node still waits for a
    leftover predecessor, so walking back from any of them must come round to a node twice."""
    path = [min(cyclic)]
    step_of = {path[0]: 0}
    while True:
        previous = min(predecessors[path[-1]] & cyclic)
        if previous in step_of:
            break
        step_of[previous] = len(path)
        path.append(previous)
    loop = [*path[step_of[previous] :], previous]
    names = [nodes[p].name for p in reversed(loop)]
    if len(names) > _LONGEST_CYCLE_SHOWN:
        names = [*names[: _LONGEST_CYCLE_SHOWN - 1], f"… ({len(loop) - 1} nodes)", names[-1]]
    return "these nodes form a cycle: " + " → ".join(names)


# Boxes.


def _box(node: _Node) -> str:
    """The node in a box: its name, call and markers; below a divider, its incoming edges."""
    header = [node.name, *node.lines]
    edge_rows = _edge_rows(node.edges)
    width = max(len(line) for line in header + edge_rows)
    rows = ["┌" + "─" * (width + 2) + "┐"]
    rows += [f"│ {line:<{width}} │" for line in header]
    if edge_rows:
        rows.append("├" + "─" * (width + 2) + "┤")
        rows += [f"│ {line:<{width}} │" for line in edge_rows]
    rows.append("└" + "─" * (width + 2) + "┘")
    return "\n".join(rows)


def _edge_rows(edges: list[_Edge]) -> list[str]:
    """One aligned row per edge: `← predecessor  kind  selection  (where)`, and a warning when
    the predecessor does not exist."""
    if not edges:
        return []
    name_width = max(len(edge.predecessor) for edge in edges)
    kind_width = max(len(edge.kind) for edge in edges)
    rows = []
    for edge in edges:
        row = f"← {edge.predecessor:<{name_width}}  {edge.kind:<{kind_width}}  {edge.selection}"
        place = f"  ({edge.place})" if edge.place else ""
        unknown = "  (!) no such node" if edge.unknown else ""
        rows.append(row + place + unknown)
    return rows
