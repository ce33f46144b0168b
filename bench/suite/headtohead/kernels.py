"""The kernel DAG: a graph of real C kernels expanded to tasks, each with its kernel and its arguments.

The peers read it (bench/peers/README.md, "The kernel DAG file") to call the very kernels Tomii
calls, from the same library, with the same arguments and results; `tomii_sinks` and
`compare_sinks` check that a peer's last frame ends with Tomii's values. Only what the real workloads
W7–W9 use is understood: literals, `$ref` to an initialization, `$res` and `$dep` edges selecting
offsets, ranges, one absolute instance or every instance, and computed initializations of literal
arguments. Anything else is refused with an error naming the node, never approximated.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import tomii
from tomii import graphs

#: The typed literals a kernel argument may be, by the name the file gives them.
_INT_TYPES = ("i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize")
_NODE_KEYS = {"name", "function", "factor", "args", "priority"}
_GRAPH_KEYS = {"name", "nodes", "initializations", "post_nodes"}
#: What a predecessor may say: an offset, a list or range of them, "all" or one absolute instance.
_SELECTION = {"name", "index", "wrap", "absolute"}


@dataclass(frozen=True)
class Call:
    """A kernel call: where it is (node, instance), its kernel, the tasks it waits for and its
    arguments as file tokens (`TYPE=VALUE`, `init=K`, `res=J`)."""

    node: str
    instance: int
    kernel: str
    preds: tuple[int, ...]
    args: tuple[str, ...]


@dataclass(frozen=True)
class KernelDag:
    """One frame's tasks in Tomii's numbering, the initializations they share and their library."""

    library: Path
    inits: list[Call]
    tasks: list[Call]

    def sinks(self) -> list[tuple[str, int]]:
        """(node, instance) of every task no other task waits for, in task order."""
        waited = {p for task in self.tasks for p in task.preds}
        return [(t.node, t.instance) for i, t in enumerate(self.tasks) if i not in waited]

    def edges(self) -> int:
        return sum(len(task.preds) for task in self.tasks)

    def write(self, path: Path) -> None:
        """The peers' input: a header, the library, the initializations, then one line per task
        (bench/peers/README.md, "The kernel DAG file")."""
        lines = [f"tomii-suite-kernels 1 {len(self.tasks)}", f"library {self.library}"]
        lines.append(f"inits {len(self.inits)}")
        lines += [f"{c.node} {c.kernel} {len(c.args)} {' '.join(c.args)}" for c in self.inits]
        for c in self.tasks:
            fields = (c.node, c.instance, c.kernel, len(c.preds), *c.preds, len(c.args), *c.args)
            lines.append(" ".join(map(str, fields)))
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def expand(graph: Mapping[str, Any], library: str | Path) -> KernelDag:
    """The kernel DAG of `graph`, whose kernels all come from `library`. Post-nodes are left out:
    they run once after the last frame, and the suite gives Tomii the graph without them too
    (`without_post_nodes`)."""
    unknown = set(graph) - _GRAPH_KEYS
    if unknown:
        raise ValueError(f"kernel DAG: graph fields {sorted(unknown)} are not supported")
    inits = _initializations(graph.get("initializations") or [])
    nodes = graph["nodes"]
    literal_inits = {name: None for name in inits}
    factors = {node["name"]: graphs._factor(node, literal_inits) for node in nodes}
    first: dict[str, int] = {}
    total = 0
    for node in nodes:
        first[node["name"]], total = total, total + factors[node["name"]]
    tasks: list[Call] = []
    for node in nodes:
        tasks += _instances(node, factors, first, inits)
    calls = [call for _, call in sorted(inits.values())]
    return KernelDag(Path(library).resolve(), calls, tasks)


def without_post_nodes(graph: Mapping[str, Any]) -> dict[str, Any]:
    """`graph` without its post-nodes, as every runtime of the suite runs it."""
    return {key: value for key, value in graph.items() if key != "post_nodes"}


def _initializations(inits: Sequence[Mapping[str, Any]]) -> dict[str, tuple[int, Call]]:
    """Computed initializations by name: (their index in the file, their call)."""
    found: dict[str, tuple[int, Call]] = {}
    for init in inits:
        name = init["name"]
        if set(init) - {"name", "function", "args", "factor"} or init.get("factor", 1) != 1:
            raise ValueError(
                f"kernel DAG: initialization {name!r}: only a computed one of factor 1"
            )
        args = tuple(_literal(f"initialization {name!r}", arg) for arg in init.get("args") or [])
        found[name] = (len(found), Call(name, 0, str(init["function"]), (), args))
    return found


def _instances(
    node: Mapping[str, Any],
    factors: Mapping[str, int],
    first: Mapping[str, int],
    inits: Mapping[str, tuple[int, Call]],
) -> list[Call]:
    name = node["name"]
    unknown = set(node) - _NODE_KEYS
    if unknown:
        raise ValueError(f"kernel DAG: node {name!r}: fields {sorted(unknown)} are not supported")
    if any(c.isspace() for c in name):
        raise ValueError(f"kernel DAG: node {name!r}: a name with white space")
    calls = []
    for i in range(factors[name]):
        preds: set[int] = set()
        args: list[str] = []
        for arg in node.get("args") or []:
            kind = arg.get("type") if isinstance(arg, Mapping) else None
            if kind in ("$res", "$dep"):
                if set(arg) != {"type", "predecessor"} or set(arg["predecessor"]) - _SELECTION:
                    raise ValueError(f"kernel DAG: node {name!r}: edge {arg} is not supported")
                pred, selects, _ = graphs._parse_edge(name, (arg, False), {}, factors)
                chosen = [first[pred] + k for k in selects(i)]
                preds.update(chosen)
                args += [f"res={j}" for j in chosen] if kind == "$res" else []
            elif kind == "$ref":
                if arg["name"] not in inits:
                    raise ValueError(
                        f"kernel DAG: node {name!r}: no initialization {arg['name']!r}"
                    )
                args.append(f"init={inits[arg['name']][0]}")
            else:
                args.append(_literal(f"node {name!r}", arg))
        calls.append(Call(name, i, str(node["function"]), tuple(sorted(preds)), tuple(args)))
    return calls


def _literal(where: str, value: object) -> str:
    """A literal as a file token `TYPE=VALUE`, typed as Tomii types it (graph README, "Literals");
    a string's value is its UTF-8 in hex, so that it holds no white space."""
    if isinstance(value, Mapping) and set(value) == {"type", "value"}:
        kind, inner = value["type"], value["value"]
    elif isinstance(value, bool):
        kind, inner = "bool", value
    elif isinstance(value, int):
        kind, inner = ("usize" if value >= 0 else "i64"), value
    elif isinstance(value, float):
        kind, inner = "f64", value
    elif isinstance(value, str):
        kind, inner = "String", value
    else:
        raise ValueError(f"kernel DAG: {where}: argument {value!r} is not supported")
    if kind in _INT_TYPES and isinstance(inner, int) and not isinstance(inner, bool):
        return f"{kind}={inner}"
    if kind in ("f32", "f64") and isinstance(inner, (int, float)) and not isinstance(inner, bool):
        return f"{kind}={float(inner)!r}"
    if kind == "bool" and isinstance(inner, bool):
        return f"bool={int(inner)}"
    if kind == "String" and isinstance(inner, str):
        return f"str={inner.encode().hex()}"
    raise ValueError(f"kernel DAG: {where}: literal {value!r} is not supported")


def tomii_sinks(
    graph: Mapping[str, Any], library: str | Path, frames: int, slots: int
) -> list[Any]:
    """The last frame's sinks of a Tomii run of `graph` (fifo, 2 workers), as the peers print
    them: `[node, instance, value]` rows in task order, arrays as lists."""
    result = tomii.run_graph(
        dict(graph), dylibs=[str(library)], workers=2, frames=frames, slots=slots, task_timing=False
    )
    return [[node, instance, _plain(value)] for node, instance, value in result.outputs[-1]]


def compare_sinks(found: list[Any] | None, expected: list[Any]) -> str:
    """What differs first between a peer's sink rows and Tomii's; empty when nothing does."""
    if found is None:
        return "the peer printed no sinks"
    if len(found) != len(expected):
        return f"{len(found)} sinks, Tomii has {len(expected)}"
    for got, want in zip(found, expected):
        if got != want:
            return f"{want[0]}[{want[1]}] is {_short(got[2:])}, Tomii's {_short(want[2:])}"
    return ""


def _plain(value: Any) -> Any:
    """A sink value as JSON reads it back: numpy arrays and scalars as lists and numbers."""
    return value.tolist() if hasattr(value, "tolist") else value


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
