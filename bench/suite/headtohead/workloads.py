"""The suite's workloads: each one a Tomii graph, and the same graph expanded into tasks for the peers.

A workload is built once as a graph-format dict (tomii-core/src/graph/README.md) whose edges are
all `$dep` (nothing passes data, in any runtime) and whose kernels are `spin` (µs as argument 0) or
`noop`; `expand` turns that dict into the task-level DAG the peers read, so every runtime runs the
DAG Tomii compiles. Never change a shape here without re-reading bench/README.md "Head-to-head".
"""

from __future__ import annotations

import random
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tomii import graphs

Json = dict[str, Any]

#: W3's fixed seed: the same random DAG in every invocation and every runtime.
W3_SEED = 2026


@dataclass(frozen=True)
class Dag:
    """A graph expanded to tasks: per task its kernel µs (0 = empty) and its distinct predecessors."""

    costs: list[int]
    preds: list[list[int]]

    @property
    def tasks(self) -> int:
        return len(self.costs)

    def total_work_us(self) -> int:
        return sum(self.costs)

    def critical_path_us(self) -> int:
        """The heaviest chain of kernel µs (tasks are numbered so that predecessors come first)."""
        finish: list[int] = []
        for cost, preds in zip(self.costs, self.preds):
            finish.append(cost + max((finish[p] for p in preds), default=0))
        return max(finish, default=0)

    def write(self, path: Path) -> None:
        """The peers' input (bench/peers/README.md): a header, then one line per task:
        `cost_us npreds pred...`."""
        lines = [f"tomii-suite-dag 1 {self.tasks}"]
        lines += [" ".join(map(str, (cost, len(p), *p))) for cost, p in zip(self.costs, self.preds)]
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# ---------------------------------------------------------------------------------------------
# Graph builders (all edges `$dep`; `us` = 0 gives `noop` kernels)


def _node(name: str, factor: int, us: int, edges: Sequence[Json]) -> Json:
    function, head = ("spin", [us]) if us > 0 else ("noop", [])
    return {"name": name, "function": function, "factor": factor, "args": [*head, *edges]}


def _dep(pred: str, index: object = None) -> Json:
    predecessor: Json = {"name": pred}
    if index is not None:
        predecessor["index"] = index
    return {"type": "$dep", "predecessor": predecessor}


def chain(length: int, us: int) -> Json:
    """W1: `length` tasks in a row, each a node of factor 1 waiting for the previous one."""
    nodes = [_node("n0", 1, us, [])]
    nodes += [_node(f"n{i}", 1, us, [_dep(f"n{i - 1}")]) for i in range(1, length)]
    return {"name": f"chain({length},{us}us)", "nodes": nodes}


def fan_out(width: int, us: int) -> Json:
    """W2: a(1) → b(width), every instance waiting for a → c(1), waiting for every b."""
    nodes = [
        _node("a", 1, us, []),
        _node("b", width, us, [_dep("a", "all")]),
        _node("c", 1, us, [_dep("b", "all")]),
    ]
    return {"name": f"fan_out({width},{us}us)", "nodes": nodes}


def layered(layers: int, width: int, us: int, seed: int = W3_SEED) -> Json:
    """W3: `layers` layers of `width` tasks; a task of layer l > 0 waits for 1 to 4 distinct
    tasks of layer l − 1, drawn uniformly with `seed`. One node of factor 1 per task."""
    rng = random.Random(seed)
    nodes = [_node(f"t0_{k}", 1, us, []) for k in range(width)]
    for layer in range(1, layers):
        for k in range(width):
            parents = sorted(rng.sample(range(width), rng.randint(1, 4)))
            nodes.append(
                _node(f"t{layer}_{k}", 1, us, [_dep(f"t{layer - 1}_{p}") for p in parents])
            )
    return {"name": f"layered({layers}x{width},1-4 preds,seed={seed},{us}us)", "nodes": nodes}


def pipeline(stages: int, width: int, us: int) -> Json:
    """W4: `stages` nodes of factor `width`, instance i waiting for instance i of the previous."""
    nodes = [_node("stage0", width, us, [])]
    nodes += [_node(f"stage{s}", width, us, [_dep(f"stage{s - 1}")]) for s in range(1, stages)]
    return {"name": f"pipeline({stages}x{width},{us}us)", "nodes": nodes}


def _results_to_deps(graph: Json) -> Json:
    """tomii.graphs passes results (`$res`); the suite only orders (`$dep`), as the peers do."""
    for node in graph["nodes"]:
        for arg in node["args"]:
            if isinstance(arg, dict) and arg.get("type") == "$res":
                arg["type"] = "$dep"
    return graph


def wavefront(size: int, us: int) -> Json:
    """W5: tomii.graphs.wavefront(size, size), one node per anti-diagonal."""
    return _results_to_deps(graphs.wavefront(size, size, cost=graphs.Fixed(us)))


def streaming(width: int, us: int) -> Json:
    """W6: tomii.graphs.streaming_pipeline(width): ingest → transform (1:1) → aggregate → emit."""
    return _results_to_deps(graphs.streaming_pipeline(width, cost=graphs.Fixed(us)))


# ---------------------------------------------------------------------------------------------
# Expansion to tasks


def expand(graph: Mapping[str, Any]) -> Dag:
    """The task DAG of `graph`, instances numbered node by node as Tomii numbers them.

    Understands what the builders above write: integer factors, `spin`'s µs as argument 0, and
    `$dep` edges selecting offset 0 (no index), a list of offsets (with or without `wrap`), or
    "all". Anything else is an error, so a new shape cannot silently diverge from Tomii's.
    """
    nodes = graph["nodes"]
    first: dict[str, int] = {}
    factors: dict[str, int] = {}
    total = 0
    for node in nodes:
        first[node["name"]], factors[node["name"]] = total, int(node["factor"])
        total += factors[node["name"]]
    costs: list[int] = []
    preds: list[list[int]] = []
    for node in nodes:
        us = int(node["args"][0]) if node["function"] == "spin" else 0
        edges = [arg for arg in node["args"] if isinstance(arg, dict)]
        for i in range(factors[node["name"]]):
            chosen: set[int] = set()
            for edge in edges:
                chosen.update(_selected(edge, i, first, factors))
            costs.append(us)
            preds.append(sorted(chosen))
    if any(p >= t for t, ps in enumerate(preds) for p in ps):
        raise ValueError(f"{graph['name']}: a node waits for a later node; reorder the builder")
    return Dag(costs, preds)


def _selected(
    edge: Json, i: int, first: Mapping[str, int], factors: Mapping[str, int]
) -> Iterator[int]:
    if edge.get("type") != "$dep" or not set(edge["predecessor"]) <= {"name", "index", "wrap"}:
        raise ValueError(f"expand: unsupported argument {edge}")
    pred = edge["predecessor"]
    base, n = first[pred["name"]], factors[pred["name"]]
    index = pred.get("index")
    if index == "all":
        yield from range(base, base + n)
        return
    offsets = [0] if index is None else index
    if not isinstance(offsets, list):
        raise TypeError(f"expand: unsupported index {index!r}")
    for k in offsets:
        j = (i + k) % n if pred.get("wrap") else i + k
        if not 0 <= j < n:
            raise ValueError(f"expand: {pred['name']} offset {k} leaves the node at instance {i}")
        yield base + j
