"""The tuning search space: which knobs an optimizer may turn, over which values, and what it must
never touch.

Runtime knobs come from the knob catalog (`tomii knobs --json`, tomii-core/src/knobs.rs), so a
name, default and domain have one source; graph knobs are the fields of a graph that change where
and in which order work runs but never what it computes. This module reads graphs; it never runs
or edits one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Union

from ._tomii import convert_json, knobs_json, knobs_table
from .errors import GraphError
from .graph import Graph

__all__ = ["GraphInput", "enumerate_domain", "knob_space", "list_knobs", "load_graph"]

#: The version of the dict `knob_space` returns; bumped when a field changes meaning.
SPACE_VERSION = 1
#: The most points `enumerate_domain` materializes; larger domains are for samplers, not lists.
MAX_POINTS = 10_000
#: The domain kinds whose points the space itself defines (no installed file or scheduler needed).
_SELF_CONTAINED_KINDS = ("int", "bool", "choice")
#: The priority words of the graph format, lowest first, and the integers they stand for.
_PRIORITY_WORDS = {"low": -1, "normal": 0, "high": 1}

#: A graph as `knob_space` accepts it: a builder, a graph-format dict, or a JSON file's path.
GraphInput = Union[Graph, dict[str, Any], str, Path]


def load_graph(graph: GraphInput) -> dict[str, Any]:
    """The graph-format dict of `graph`, in the current format (a Tomii 1.2 file or dict is
    rewritten as `tomii convert` does); a file that cannot be read or parsed raises `GraphError`
    naming the file, and anything but an object with a list of named nodes raises one naming the
    field. Only the shape is checked here: the runtime's parser is the final word on validity."""
    if isinstance(graph, Graph):
        return _checked_graph(json.loads(graph.to_json()), "the Graph")
    if isinstance(graph, dict):
        return _checked_graph(_current_format(graph, "the graph dict"), "the graph dict")
    if isinstance(graph, (str, Path)):
        path = Path(graph)
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as error:
            raise GraphError(f"{path}: cannot read the graph: {error.strerror}") from None
        except UnicodeDecodeError:
            raise GraphError(f"{path}: cannot read the graph: not UTF-8 text") from None
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError as error:
            raise GraphError(f"{path}: not valid JSON: {error}") from None
        return _checked_graph(_current_format(parsed, str(path)), str(path))
    raise TypeError(
        f"graph must be a tomii.Graph, a dict or a path to a JSON file, got {type(graph).__name__}"
    )


def _current_format(graph: Any, source: str) -> Any:
    """`graph` in the current format: a Tomii 1.2 graph rewritten with its meaning (its warnings
    are the runtime's to raise when it runs), anything else as it is (a graph the parser rejects
    is left for the shape checks and the run to report)."""
    if not isinstance(graph, dict):
        return graph
    try:
        dialect, current, _warnings = convert_json(json.dumps(graph), source, None)
    except GraphError:
        return graph
    return json.loads(current) if dialect == "tomii-1.2" else graph


def _checked_graph(graph: Any, source: str) -> dict[str, Any]:
    if not isinstance(graph, dict):
        raise GraphError(f"{source}: a graph is a JSON object, got {type(graph).__name__}")
    for section in ("nodes", "post_nodes"):
        nodes = graph.get(section)
        if nodes is None and section == "post_nodes":
            continue
        if not isinstance(nodes, list):
            raise GraphError(f"{source}: field {section!r} must be a list of nodes")
        for position, node in enumerate(nodes):
            if not isinstance(node, dict) or not isinstance(node.get("name"), str):
                raise GraphError(f"{source}: {section}[{position}] must be an object with a name")
    return graph


def _source_name(graph: GraphInput, graph_dict: dict[str, Any]) -> str:
    """How error messages name the graph: its file, else its name."""
    if isinstance(graph, (str, Path)):
        return str(graph)
    name = _graph_name(graph_dict)
    return "the graph" if name is None else f"graph {name!r}"


#: Perf knobs of the network source: in the space only for graphs with a `network_config`.
_NETWORK_KNOBS = frozenset({"receiver_threads", "socket_recv_buf_bytes", "network_dispatch"})


def knob_space(
    graph: GraphInput | None = None,
    *,
    workload: str | None = None,
    include_graph_knobs: bool = True,
) -> dict[str, Any]:
    """The versioned search space for tuning one workload.

    Returns `version`, `workload` (the label given), `graph` (its name, or None), `knobs` (each with
    `kind` "cli" or "graph", `type`, `default`, `domain`, `description`, `search_hint` and
    `provenance`), `excluded` (perf knobs left out, with why) and `forbidden` (the invariants no
    optimizer may violate). Only catalog knobs with role "perf" and an int, bool or choice domain
    enter the space; with a graph, and unless `include_graph_knobs` is False, so do its per-node
    priority, worker range and group size. The network source's knobs (receiver_threads,
    socket_recv_buf_bytes, network_dispatch) are excluded for a graph without a network_config.
    """
    catalog = json.loads(knobs_json())
    knobs, excluded = _cli_knobs(catalog)
    graph_dict = None if graph is None else load_graph(graph)
    if graph_dict is not None and not graph_dict.get("network_config"):
        excluded += [
            {
                "name": k["name"],
                "reason": "it tunes the network source; the graph has no network_config",
            }
            for k in knobs
            if k["name"] in _NETWORK_KNOBS
        ]
        knobs = [k for k in knobs if k["name"] not in _NETWORK_KNOBS]
    if graph is not None and graph_dict is not None and include_graph_knobs:
        knobs += _graph_knobs(graph_dict, _source_name(graph, graph_dict))
    return {
        "version": SPACE_VERSION,
        "workload": workload,
        "graph": None if graph_dict is None else _graph_name(graph_dict),
        "knobs": knobs,
        "excluded": excluded,
        "forbidden": _forbidden(catalog, graph_dict, include_graph_knobs),
    }


def _cli_knobs(catalog: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, str]]]:
    knobs: list[dict[str, Any]] = []
    excluded: list[dict[str, str]] = []
    for knob in catalog["knobs"]:
        if knob["role"] != "perf":
            continue
        kind = knob["domain"]["kind"]
        if kind not in _SELF_CONTAINED_KINDS:
            listed_by = knob["domain"].get("listed_by")
            where = f"; its values are listed by `{listed_by}`" if listed_by else ""
            reason = f"its domain ({kind}) is not a set of values the catalog defines{where}"
            excluded.append({"name": knob["name"], "reason": reason})
            continue
        knobs.append(
            {
                "name": knob["name"],
                "kind": "cli",
                "type": knob["type"],
                "default": knob["default"],
                "domain": knob["domain"],
                "description": knob["description"],
                "search_hint": knob["search_hint"],
                "provenance": {
                    "source": "catalog",
                    "catalog_version": catalog["version"],
                    "cli": knob["cli"],
                },
            }
        )
    return knobs, excluded


def _graph_name(graph: dict[str, Any]) -> str | None:
    name = graph.get("name")
    return name if isinstance(name, str) else None


def _graph_knobs(graph: dict[str, Any], source: str) -> list[dict[str, Any]]:
    """The knobs of every regular node; a field they cannot be read from raises `GraphError`
    naming `source`, the node and the field. Post-nodes have none: they run once, on the calling
    thread, where priorities, worker ranges and groups change nothing."""
    knobs: list[dict[str, Any]] = []
    for position, node in enumerate(graph["nodes"]):
        try:
            knobs += _node_knobs(graph, position, node)
        except ValueError as error:
            raise GraphError(f"{source}: node {node['name']!r}: {error}") from None
    return knobs


def _node_knobs(graph: dict[str, Any], position: int, node: dict[str, Any]) -> list[dict[str, Any]]:
    """The node's priority and worker range, and its group size when it has several instances. A
    node reading its own instances gets no group size: a member may not read a later member of
    its group, and telling which offsets stay legal is the parser's job, not the space's."""
    knobs = [_priority_knob(graph, position, node), _use_workers_knob(graph, position, node)]
    factor = _resolved_factor(graph, node)
    if factor is not None and factor > 1 and node["name"] not in _predecessors(node):
        knobs.append(_group_size_knob(graph, position, node, factor))
    return knobs


def _graph_knob(
    graph: dict[str, Any],
    position: int,
    node: dict[str, Any],
    field: str,
    **entry: Any,
) -> dict[str, Any]:
    provenance = {
        "source": "graph",
        "graph": _graph_name(graph),
        "node": node["name"],
        "field": field,
        "pointer": f"/nodes/{position}/{field}",
    }
    return {"name": f"{node['name']}.{field}", "kind": "graph", **entry, "provenance": provenance}


def _priority_knob(graph: dict[str, Any], position: int, node: dict[str, Any]) -> dict[str, Any]:
    current = _priority_word(node)
    values: list[Any] = list(_PRIORITY_WORDS)
    if current not in values:
        values.append(current)
    return _graph_knob(
        graph,
        position,
        node,
        "priority",
        type="priority",
        default=current,
        domain={"kind": "choice", "values": values},
        description="The node's priority, read by priority-aware schedulers",
        search_hint="raise the nodes on the critical path; only matters with a scheduler that "
        "reads priorities (the priority scheduler)",
    )


def _priority_word(node: dict[str, Any]) -> Any:
    """The node's priority as the word the format names it by, or the integer when it has none."""
    priority = node.get("priority")
    if priority is None:
        return "normal"
    if isinstance(priority, str) and priority in _PRIORITY_WORDS:
        return priority
    if isinstance(priority, int) and not isinstance(priority, bool):
        words = {number: word for word, number in _PRIORITY_WORDS.items()}
        return words.get(priority, priority)
    raise ValueError(f"field 'priority' must be high, normal, low or an integer, got {priority!r}")


def _use_workers_knob(graph: dict[str, Any], position: int, node: dict[str, Any]) -> dict[str, Any]:
    return _graph_knob(
        graph,
        position,
        node,
        "use_workers",
        type="worker_range",
        default=_worker_range(node),
        domain={"kind": "worker_range", "depends_on": "workers"},
        description="The workers allowed to run the node, 'lo-hi' inclusive; None: any worker "
        "(the field absent)",
        search_hint="pin a node to the workers that produce its inputs to keep them in cache; "
        "every range must lie within 0..workers-1",
    )


def _worker_range(node: dict[str, Any]) -> str | None:
    """The node's `use_workers` as "lo-hi", or None when it has none."""
    workers = node.get("use_workers")
    if workers is None:
        return None
    if isinstance(workers, int) and not isinstance(workers, bool):
        return f"{workers}-{workers}"
    if isinstance(workers, str):
        bounds = [bound.strip() for bound in workers.split("-")]
        if 1 <= len(bounds) <= 2 and all(bound.isdigit() for bound in bounds):
            return f"{bounds[0]}-{bounds[-1]}"
    raise ValueError(f"field 'use_workers' must be 'lo-hi', 'k' or an integer, got {workers!r}")


def _group_size_knob(
    graph: dict[str, Any], position: int, node: dict[str, Any], factor: int
) -> dict[str, Any]:
    return _graph_knob(
        graph,
        position,
        node,
        "group_size",
        type="int",
        default=node.get("group_size") or 1,
        domain={"kind": "int", "min": 1, "max": factor, "scale": "pow2"},
        description="Instances of the node run by one task, in index order",
        search_hint="raise it when the node's tasks are short and scheduling overhead dominates; "
        "keep factor / group_size at least the number of workers",
    )


def _resolved_factor(graph: dict[str, Any], node: dict[str, Any]) -> int | None:
    """The node's instance count: its factor, or the integer initialization the factor names;
    None when neither is a known integer."""
    factor = node.get("factor", 1)
    if isinstance(factor, str):
        inits = [i for i in graph.get("initializations") or [] if isinstance(i, dict)]
        values = [i.get("value") for i in inits if i.get("name") == factor]
        factor = values[0] if values else None
        if isinstance(factor, dict):
            factor = factor.get("value")
    if isinstance(factor, bool) or not isinstance(factor, int):
        return None
    return factor


def _edges(node: dict[str, Any]) -> list[dict[str, Any]]:
    """Every edge of the node, from its args, loop_args and condition args, with where it sits."""
    condition = node.get("condition")
    places = {
        "args": node.get("args"),
        "loop_args": node.get("loop_args"),
        "condition": condition.get("args") if isinstance(condition, dict) else None,
    }
    edges = []
    for place, args in places.items():
        for arg in args or []:
            if isinstance(arg, dict) and arg.get("type") in ("$res", "$dep", "$barrier"):
                predecessor = arg.get("predecessor")
                if not isinstance(predecessor, dict):
                    predecessor = {}
                selection = {k: v for k, v in predecessor.items() if k != "name"}
                edges.append(
                    {
                        "node": node["name"],
                        "predecessor": predecessor.get("name"),
                        "type": arg["type"],
                        "selection": selection,
                        "in": place,
                    }
                )
    return edges


def _predecessors(node: dict[str, Any]) -> set[Any]:
    return {edge["predecessor"] for edge in _edges(node)}


def _forbidden(
    catalog: dict[str, Any], graph: dict[str, Any] | None, include_graph_knobs: bool
) -> list[dict[str, Any]]:
    held = [k["name"] for k in catalog["knobs"] if k["role"] != "perf"]
    forbidden: list[dict[str, Any]] = [
        {
            "invariant": "same_outputs",
            "description": "every trial computes the baseline's results (sink and post-node "
            "outputs); a change that alters one is invalid, however fast",
        },
        {
            "invariant": "fixed_run_knobs",
            "description": "knobs that are not perf knobs hold one value across trials "
            "(frames in particular: throughputs over different frame counts do not compare)",
            "knobs": held,
        },
    ]
    if graph is None:
        return forbidden
    forbidden += _graph_invariants(graph)
    if not include_graph_knobs:
        forbidden.append(
            {
                "invariant": "fixed_graph",
                "description": "the graph is not edited: the space holds runtime knobs only",
            }
        )
    return forbidden


def _graph_invariants(graph: dict[str, Any]) -> list[dict[str, Any]]:
    nodes = graph["nodes"]
    post_nodes = graph.get("post_nodes") or []
    edges = [edge for node in nodes + post_nodes for edge in _edges(node)]
    return [
        {
            "invariant": "fixed_structure",
            "description": "nodes, post-nodes and initializations are not added, removed, renamed "
            "or reordered; functions, arguments, loops and conditions stay as they are, and "
            "post-nodes are not tuned",
            "nodes": [node["name"] for node in nodes],
            "post_nodes": [node["name"] for node in post_nodes],
        },
        {
            "invariant": "fixed_factors",
            "description": "factors and initializations are data sizes, not knobs",
            "factors": {node["name"]: node.get("factor", 1) for node in nodes + post_nodes},
        },
        {
            "invariant": "fixed_edges",
            "description": "no $res, $dep or $barrier edge is added, removed or reselected "
            "(index, group_by, wrap): edges are what the graph computes and in which order",
            "edges": edges,
        },
        {
            "invariant": "fixed_barriers",
            "description": "no $barrier is dropped or narrowed: a barrier orders work whose "
            "dependency the data edges do not show",
            "edges": [edge for edge in edges if edge["type"] == "$barrier"],
        },
    ]


def enumerate_domain(domain: dict[str, Any]) -> list[Any]:
    """The concrete points of a knob domain, for grid search and for checking a candidate.

    bool → [False, True]; choice → its values; int → by its scale: pow2 the powers of two within
    [min, max], log the powers of ten within it, linear every integer of it; worker_range → None
    (any worker) and every "lo-hi" with 0 <= lo <= hi < workers, once the domain carries the
    run's `workers` (`enumerate_domain({**domain, "workers": 4})`). Raises ValueError for a domain
    with more than MAX_POINTS points or whose values live outside it (scheduler, path).
    """
    if not isinstance(domain, dict):
        raise TypeError(f"a domain is a dict with a 'kind', got {type(domain).__name__}")
    kind = domain.get("kind")
    if kind == "bool":
        return [False, True]
    if kind == "choice":
        return list(domain["values"])
    if kind == "int":
        return _int_points(domain)
    if kind == "worker_range":
        return _worker_ranges(domain)
    listed_by = domain.get("listed_by")
    if listed_by:
        raise ValueError(
            f"cannot enumerate a {kind!r} domain: its values are listed by `{listed_by}`"
        )
    raise ValueError(
        f"cannot enumerate a domain of kind {kind!r}: expected bool, choice, int or worker_range"
    )


def _int_points(domain: dict[str, Any]) -> list[int]:
    low, high, scale = domain["min"], domain["max"], domain["scale"]
    if low > high:
        raise ValueError(f"int domain is empty: min {low} > max {high}")
    if scale in ("pow2", "log"):
        base = 2 if scale == "pow2" else 10
        points, power = [], 1
        while power <= high:
            if power >= low:
                points.append(power)
            power *= base
        return points
    if scale != "linear":
        raise ValueError(f"unknown int scale {scale!r}: expected linear, pow2 or log")
    _check_size(high - low + 1, f"int domain {low}..={high}")
    return list(range(low, high + 1))


def _worker_ranges(domain: dict[str, Any]) -> list[str | None]:
    workers = domain.get("workers")
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise ValueError(
            "a worker_range domain depends on the run's workers: "
            "enumerate_domain({**domain, 'workers': N}) with N >= 1"
        )
    _check_size(1 + workers * (workers + 1) // 2, f"worker ranges of {workers} workers")
    ranges = [f"{lo}-{hi}" for lo in range(workers) for hi in range(lo, workers)]
    return [None, *ranges]


def _check_size(points: int, what: str) -> None:
    if points > MAX_POINTS:
        raise ValueError(
            f"{what} has {points} points, more than {MAX_POINTS} to enumerate: "
            "sample it, or narrow it as its search hint says"
        )


def list_knobs() -> str:
    """Every runtime option (`run_graph`, `Graph.run` and `tomii run`), as a table."""
    return knobs_table()
