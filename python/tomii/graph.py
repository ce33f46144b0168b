"""The graph builder of the Tomii 1.2 Python API: `Graph`, its vars, nodes and dependency handles.

`Graph.to_json()` emits the graph format of tomii-core/src/graph/README.md; `Graph.run()` runs it
in-process through `tomii.run_graph`, with the Python kernels of its `py_node`s. A bad graph (a
name, factor, argument, edge or range) raises `tomii.GraphError` where it is defined, naming it.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from ._warnings import warn_graph
from .errors import GraphError, PluginError
from .export import ExportedKernel, TomiiExportError, find_exported
from .types import String, TypedValue, infer_type

if TYPE_CHECKING:
    from .build import BuildResult
    from .run import RunResult
    from .session import Session

__all__ = [
    "INDEX",
    "WORKERS",
    "Condition",
    "Graph",
    "IndexFunc",
    "Loop",
    "Node",
    "NodeBarrier",
    "NodeDep",
    "NodeOutput",
    "Var",
]

_PRIORITIES = ("high", "normal", "low")


@dataclass(frozen=True)
class Var:
    """An initialization variable; passed as an argument it serializes as a `$ref`."""

    name: str

    def to_json(self) -> dict[str, Any]:
        return {"type": "$ref", "name": self.name}


@dataclass(frozen=True)
class _Builtin:
    """An argument the runtime supplies per call: `INDEX` or `WORKERS`."""

    kind: str

    def to_json(self) -> dict[str, Any]:
        return {"type": self.kind}


#: The argument `{"type": "$index"}`: each instance's own index within its node (a usize).
INDEX = _Builtin("$index")
#: The argument `{"type": "$workers"}`: the run's number of workers (a usize).
WORKERS = _Builtin("$workers")


#: A selection start: an offset, a list of offsets, a named reference or a var.
Start = Union[int, str, list[int], Var]
#: A range end.
End = Union[int, str, Var]


def _bound(value: int | str | Var, what: str) -> str:
    if isinstance(value, Var):
        return value.name
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise GraphError(f"{what} must be an int, a str or a Var, got {type(value).__name__}")
    return str(value)


#: Factors known when an edge is written: (successor's, predecessor's); None when a factor is
#: given by a computed var, whose value is known only when the graph compiles.
_Factors = tuple[Union[int, None], Union[int, None]]


def _v12_meaning(kind: str, offsets: list[int], factor: int, pred_factor: int) -> tuple[Any, ...]:
    """What Tomii 1.2's runtime selected with `offsets` (tomii-core/src/graph/v12/rule.rs, the
    same rule): ("as_written", wrap), ("offset", k, wrap), ("all",) or ("absolute", lo, hi)."""
    f, p, n = factor, pred_factor, len(offsets)
    lo, hi = min(offsets), max(offsets)
    if lo < 0:
        raise GraphError(
            f"offset {lo} is negative, which Tomii 1.2 refused or crashed on; "
            "give wrap=True (a ring) or instance=k"
        )
    contiguous = hi - lo + 1 == n
    filtered = n < p and contiguous and n == f
    past_end = (
        f"Tomii 1.2 waited for instances {lo}..={hi} of a predecessor of {p} instance(s), "
        f"some of which never exist, and hung; select instances below {p}"
    )
    if kind == "$barrier":
        if filtered and hi >= p:
            raise GraphError(past_end)
        if filtered:
            return ("offset", lo, False) if f == 1 else ("absolute", lo, hi + 1)
        return ("all",)
    if n == 1:
        if f == 1 and p > 1 and lo >= p:
            raise GraphError(past_end)
        return ("offset", lo, f - 1 + lo >= p)
    if n == f:
        if not contiguous:
            raise GraphError(
                f"Tomii 1.2 gave each of the {f} instances one of the {n} listed predecessor "
                "instances, in the order they completed; select each instance's own with an "
                "offset and wrap=True"
            )
        return ("offset", lo, f - 1 + lo >= p)
    if kind == "$dep" and f == 1:
        return ("all",)
    return ("as_written", f - 1 + hi >= p)


@dataclass(frozen=True)
class _Edge:
    KIND = ""

    node: str
    start: Start | None = None
    end: End | None = None
    group_by: int | Var | dict[str, int] | None = None
    wrap: bool | None = None
    instance: int | Var | None = None
    every: bool = False

    def __post_init__(self) -> None:
        if self.wrap is not None and not isinstance(self.wrap, bool):
            raise GraphError(f"wrap must be a bool, got {type(self.wrap).__name__}")
        if not isinstance(self.every, bool):
            raise GraphError(f"every must be a bool, got {type(self.every).__name__}")
        explicit = [k for k, v in (("every", self.every), ("instance", self.instance)) if v]
        if self.instance is not None and "instance" not in explicit:
            explicit.append("instance")
        if explicit:
            given = self.start not in (None, 0) or self.end is not None
            if given or self.group_by is not None or self.wrap is not None or len(explicit) > 1:
                raise GraphError(
                    f"{explicit[0]}= is a selection of its own: give no start, end, group_by, "
                    "wrap or other selection with it"
                )
        if self.instance is not None and not isinstance(self.instance, Var):
            if isinstance(self.instance, bool) or not isinstance(self.instance, int):
                raise GraphError(
                    f"instance must be an int or a Var, got {type(self.instance).__name__}"
                )
            if self.instance < 0:
                raise GraphError(f"instance must be 0 or more, got {self.instance}")
        if self.wrap and self.group_by is not None:
            raise GraphError("wrap does not apply to group_by, which is absolute")
        if isinstance(self.group_by, dict):
            # The current format's group_by object, as `tomii convert` writes Tomii 1.2's groups.
            fields = {"size", "from", "shared", "take"}
            if "size" not in self.group_by or not set(self.group_by) <= fields:
                raise GraphError(
                    f"group_by {self.group_by!r}: an object has a size and may have from, "
                    "shared and take (the graph README's group_by object)"
                )
            if any(isinstance(v, bool) or not isinstance(v, int) for v in self.group_by.values()):
                raise GraphError(f"group_by {self.group_by!r}: its fields are ints")
        elif self.group_by is not None:
            if not isinstance(self.group_by, Var) and (
                isinstance(self.group_by, bool) or not isinstance(self.group_by, int)
            ):
                raise GraphError(
                    f"group_by must be an int, a Var or a group_by object, "
                    f"got {type(self.group_by).__name__}"
                )
            if isinstance(self.group_by, int) and self.group_by < 1:
                raise GraphError(f"group_by must be positive, got {self.group_by}")
            ranged = self.start not in (None, 0) or self.end is not None
            if ranged and (self.KIND == "$res" or isinstance(self.start, list)):
                raise GraphError(
                    "group_by with a range groups a barrier or a dep (Tomii 1.2's wait(0, n, "
                    "group_by=g)); for results give group_by alone, or the range alone"
                )
        if isinstance(self.start, list):
            if self.end is not None:
                raise GraphError("a list of offsets cannot have an end")
            if not self.start:
                raise GraphError("a list of offsets cannot be empty")
            if any(isinstance(k, bool) or not isinstance(k, int) for k in self.start):
                raise GraphError("a list of offsets must hold ints")

    def _index(self, tomii12: bool) -> Any:
        """The index in the current format; a 1.2 call's int end was inclusive."""
        if self.end is not None:
            start = 0 if self.start is None else self.start
            if isinstance(start, list):
                raise GraphError("a list of offsets cannot have an end")
            end = self.end
            if tomii12 and isinstance(end, int) and not isinstance(end, bool):
                end = end + 1
            return f"{_bound(start, 'start')}-{_bound(end, 'end')}"
        if self.start is None:
            return None
        if isinstance(self.start, Var):
            return self.start.name
        if isinstance(self.start, list):
            return list(self.start)
        if isinstance(self.start, bool) or not isinstance(self.start, (int, str)):
            raise GraphError(
                f"start must be an int, a str, a list of ints or a Var, "
                f"got {type(self.start).__name__}"
            )
        return self.start

    def _offsets(self, value: Callable[[str], int | None]) -> list[int] | None:
        """The offsets of a 1.2 call, or None when a var's value is not known yet."""

        def number(bound: int | str | Var) -> int | None:
            if isinstance(bound, int) and not isinstance(bound, bool):
                return bound
            name = bound.name if isinstance(bound, Var) else str(bound)
            return value(name)

        start = 0 if self.start is None else self.start
        if isinstance(start, list):
            return list(start)
        lo = number(start)
        if self.end is None:
            return None if lo is None else [lo]
        hi = number(self.end)
        if lo is None or hi is None:
            return None
        hi = hi + 1 if isinstance(self.end, int) else hi
        if hi <= lo:
            raise GraphError(
                f"the range {self._index(True)!r} selects nothing; give an end above the start"
            )
        return list(range(lo, hi))

    def to_json(
        self,
        factors: _Factors = (None, None),
        value: Callable[[str], int | None] = lambda name: None,
    ) -> dict[str, Any]:
        """The argument in the current format. A call without wrap=, instance= or every= means
        what Tomii 1.2 made of it, decided with `factors` (or, where one is not known, by the
        compiler: "rule": "tomii-1.2")."""
        predecessor: dict[str, Any] = {"name": self.node}
        if self.every:
            if self.KIND != "$barrier":  # A barrier without an index waits for every instance.
                predecessor["index"] = "all"
        elif self.instance is not None:
            instance = self.instance.name if isinstance(self.instance, Var) else self.instance
            predecessor.update(index=instance, absolute=True)
        elif self.group_by is not None:
            predecessor.update(self._grouped(factors[0], value))
        elif self.wrap is not None:
            index = _start_index(self._index(False), self.KIND)
            if index is not None:
                predecessor["index"] = index
            if self.wrap:
                predecessor["wrap"] = True
        elif self.start == "all":
            predecessor["index"] = "all"
        else:
            predecessor.update(self._tomii12(factors, value))
        return {"type": self.KIND, "predecessor": predecessor}

    def _grouped(self, factor: int | None, value: Callable[[str], int | None]) -> dict[str, Any]:
        """The predecessor's fields of a call with group_by. A count the graph computes (a var
        with a function) is written by name, and the compiler applies Tomii 1.2's groups once it
        is known (`"rule": "tomii-1.2"` beside the range, graph README's "Computed counts")."""
        group_by = self.group_by
        if isinstance(group_by, dict):
            return {"group_by": dict(group_by)}
        size: int | str | None = group_by if isinstance(group_by, int) else None
        if isinstance(group_by, Var):
            size = value(group_by.name)
            if size is None:
                size = group_by.name
            elif size < 1:
                raise GraphError(f"group_by={group_by!r}: the var must hold a positive int")
        assert size is not None
        if self.start in (None, 0) and self.end is None:
            return {"group_by": size}
        if isinstance(size, int) and factor is not None and self._offsets(value) is not None:
            return {"group_by": self._groups(size, factor, value)}
        return {"index": self._index(True), "group_by": size, "rule": "tomii-1.2"}

    def _groups(self, size: int, factor: int, value: Callable[[str], int | None]) -> dict[str, int]:
        """Tomii 1.2's `wait(start, end, group_by=G)`: the range L splits into B = |L| / G groups
        of G instances; successor instance i waits for group i / E, E = F / B (the current
        format's group_by object; tomii-core/src/graph/v12/grouped.rs reads 1.2 files the same)."""
        call = f"{self.node}.{_METHODS[self.KIND]}({self._index(True)!r}, group_by={size})"
        offsets = self._offsets(value)
        assert offsets is not None
        groups = len(offsets) // size
        if groups == 0:
            raise GraphError(
                f"{call} selects {len(offsets)} instance(s), fewer than one group, so Tomii 1.2 "
                "never released the node (it hung); give a range over whole groups"
            )
        if factor < groups or factor % groups:
            raise GraphError(
                f"{call} makes {groups} group(s) for a node of {factor} instance(s); Tomii 1.2 "
                "released no instance or hung: give the node a multiple of that many instances"
            )
        return {"size": size, "from": min(offsets), "shared": factor // groups, "take": size}

    def _tomii12(self, factors: _Factors, value: Callable[[str], int | None]) -> dict[str, Any]:
        index = self._index(True)
        index = 0 if index is None else index
        offsets = self._offsets(value)
        factor, pred_factor = factors
        if offsets is None or factor is None or pred_factor is None:
            return {"index": index, "rule": "tomii-1.2"}
        try:
            meaning = _v12_meaning(self.KIND, offsets, factor, pred_factor)
        except GraphError as error:
            raise GraphError(
                f"{self.node}.{_METHODS[self.KIND]}(...) ({self.KIND}): {error}"
            ) from None
        if meaning[0] == "all":
            return {} if self.KIND == "$barrier" else {"index": "all"}
        if meaning[0] == "absolute":
            lo, hi = meaning[1], meaning[2]
            return {"index": lo if hi == lo + 1 else f"{lo}-{hi}", "absolute": True}
        written: dict[str, Any] = {}
        if meaning[0] == "offset":
            if len(offsets) > 1 or meaning[1] != 0 or self.KIND == "$barrier":
                written["index"] = meaning[1] if len(offsets) > 1 else index
        elif not (index == 0 and self.KIND != "$barrier"):
            written["index"] = index
        if meaning[-1]:
            written["wrap"] = True
        return written


_METHODS = {"$res": "out", "$dep": "dep", "$barrier": "wait"}


def _start_index(index: Any, kind: str) -> Any:
    # With wrap= given, a selection means what the current format says; offset 0 is written so
    # that a barrier's does not read as "every instance".
    if index is None or (type(index) is int and index == 0):
        return 0 if kind == "$barrier" else None
    return index


class NodeOutput(_Edge):
    """A data dependency (`$res`): the successor receives the selected results."""

    KIND = "$res"


class NodeDep(_Edge):
    """An ordering-only dependency (`$dep`): tracked for scheduling, no value passed."""

    KIND = "$dep"


class NodeBarrier(_Edge):
    """A barrier (`$barrier`): the successor waits for the selected predecessor instances."""

    KIND = "$barrier"


@dataclass(frozen=True)
class Node:
    """A node of a graph; its methods give the dependency handles to pass downstream.

    `out`, `dep` and `wait` take Tomii 1.2's `(start=0, end=None, *, group_by=None)` and mean what
    Tomii 1.2 made of them, which depends on the factors (python/README.md, "Edges"): offsets are
    taken modulo the predecessor's factor, an int `end` is inclusive and a Var `end` exclusive,
    and `wait()` waits for every instance, or for instance 0 when a node of one instance waits on
    one of several. Each meaning also has a spelling of its own that does not depend on the
    factors: `wait(every=True)` (every instance), `instance=k` (instance k, for every successor
    instance), and `wrap=False` / `wrap=True` (offsets from the successor's own instance, a range
    `a, b` half-open, never wrapped / taken modulo the predecessor's factor)."""

    name: str

    def out(
        self,
        start: Start | None = 0,
        end: End | None = None,
        *,
        group_by: int | Var | dict[str, int] | None = None,
        wrap: bool | None = None,
        instance: int | Var | None = None,
        every: bool = False,
    ) -> NodeOutput:
        """Data dependency (`$res`): the successor receives the selected results, in order."""
        return NodeOutput(self.name, start, end, group_by, wrap, instance, every)

    def dep(
        self,
        start: Start | None = 0,
        end: End | None = None,
        *,
        group_by: int | Var | dict[str, int] | None = None,
        wrap: bool | None = None,
        instance: int | Var | None = None,
        every: bool = False,
    ) -> NodeDep:
        """Ordering-only dependency (`$dep`), with the same selections as `out`."""
        return NodeDep(self.name, start, end, group_by, wrap, instance, every)

    def wait(
        self,
        start: Start | None = 0,
        end: End | None = None,
        *,
        group_by: int | Var | dict[str, int] | None = None,
        wrap: bool | None = None,
        instance: int | Var | None = None,
        every: bool = False,
    ) -> NodeBarrier:
        """Barrier (`$barrier`): orders only, with the same selections as `out`;
        `wait(every=True)` waits for every instance."""
        return NodeBarrier(self.name, start, end, group_by, wrap, instance, every)


@dataclass
class Loop:
    """A node's loop: `name` is the loop key, `factor` the number of iterations."""

    name: str
    factor: int | Var

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "factor": _factor(self.factor, "loop factor")}


@dataclass
class Condition:
    """Run an instance only if `func(*args) <operation> value` holds (value typed `value_type`)."""

    operation: str
    value: Any
    value_type: str
    func: str
    args: list[Any] = field(default_factory=list)

    def to_json(self, edge: _EdgeWriter | None = None) -> dict[str, Any]:
        value = self.value
        if isinstance(value, TypedValue):
            value = value.to_json()["value"]
        elif isinstance(value, complex):
            value = [value.real, value.imag]
        return {
            "operation": self.operation,
            "value": value,
            "value_type": self.value_type,
            "function": self.func,
            "args": [_arg(a, edge) for a in self.args],
        }


@dataclass
class IndexFunc:
    """Index-mapping function of a network source (`Graph.network(index_function=...)`)."""

    function: str
    args: list[Any] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"function": self.function, "args": [_arg(a) for a in self.args]}


#: The input a network source adds: nodes read its packets (`Graph.network()` returns it).
NETWORK = "$network"

#: The keys of `Graph.network()`, as the graph format's `network_config` block names them.
_NETWORK_KEYS = (
    "socket_type",
    "num_sockets",
    "packet_length",
    "frame_packets",
    "stream_packets",
    "buffer_depth",
    "address",
    "start_port",
    "extract_packet_func",
    "id_function",
    "index_function",
)


def _factor(factor: int | Var, what: str = "factor") -> int | str:
    if isinstance(factor, Var):
        return factor.name
    if isinstance(factor, bool) or not isinstance(factor, int):
        raise GraphError(f"{what} must be an int or a Var, got {type(factor).__name__}")
    if factor < 1:
        raise GraphError(f"{what} must be positive, got {factor}")
    return factor


def _literal(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return String(value).to_json()
    try:
        return infer_type(value).to_json()
    except (TypeError, ValueError) as error:
        raise GraphError(str(error)) from None


#: Writes an edge with what the graph knows of the factors (`Graph._edge_writer`).
_EdgeWriter = Callable[[_Edge], dict[str, Any]]


def _arg(value: Any, edge: _EdgeWriter | None = None) -> dict[str, Any]:
    if isinstance(value, tuple) and len(value) == 2 and value[0] == "dep":
        # The Tomii 1.2 spelling of an ordering-only dependency: ("dep", node) is node.dep().
        if not isinstance(value[1], Node):
            raise GraphError(f"('dep', x) needs a node, got {type(value[1]).__name__}")
        value = value[1].dep()
    if isinstance(value, _Edge):
        return value.to_json() if edge is None else edge(value)
    if isinstance(value, (Var, _Builtin)):
        return value.to_json()
    if isinstance(value, Node):
        raise GraphError(
            f"node {value.name!r} passed as an argument: use {value.name}.out(), .dep() or .wait()"
        )
    return _literal(value)


class Graph:
    """Top-level graph container: initialization vars, nodes and post-nodes."""

    def __init__(self, *, name: str | None = None) -> None:
        """An empty graph; `name` is the graph's (default: a file's stem, or "graph")."""
        if name is not None and not isinstance(name, str):
            raise GraphError(f"name must be a str, got {type(name).__name__}")
        self._name: str | None = name
        self._vars: list[dict[str, Any]] = []
        self._var_names: set[str] = set()
        self._nodes: list[dict[str, Any]] = []
        self._inputs: list[dict[str, Any]] = []
        self._post_nodes: list[dict[str, Any]] = []
        self._node_names: set[str] = set()
        self._python: dict[str, ExportedKernel] = {}
        self._network: dict[str, Any] | None = None
        self._built: BuildResult | None = None
        #: `to_dict()` when it was last written as run text (a copy no edit reaches), and that text.
        self._written: tuple[dict[str, Any], str] | None = None

    @classmethod
    def from_json(
        cls,
        source: str | Path | dict[str, Any],
        *,
        workers: int | None = None,
        dylibs: Sequence[str | Path] = (),
    ) -> Graph:
        """A builder holding the graph `source` (a file path, JSON text or a dict), in either
        dialect: a Tomii 1.2 file is rewritten in the current format as `tomii convert` does,
        with the same meaning, its warnings raised as `tomii.GraphWarning`. `workers` is what a
        Tomii 1.2 factor of `"$workers"` becomes (without it such a factor is a GraphError).
        A count naming a computed initialization is computed with the kernels of `dylibs` and
        the Python kernels the graph names (a Tomii 1.2 file's then holds the value).

        The graph is checked as a run would check it. Its nodes, inputs and vars are looked up by
        name (`graph["stage"]` is a Node, `graph["n"]` a Var), to add nodes that read them."""
        from ._tomii import convert_json
        from .run import _graph_text, _kernels_of

        text, shown = _graph_text(source)
        kernels = _kernels_of(text, source, (), missing_ok=True)
        libraries = [str(Path(d)) for d in dylibs]
        _dialect, current, notes = convert_json(text, shown, workers, libraries, kernels)
        warn_graph(notes)
        spec = json.loads(current)
        graph = cls()
        graph._name = spec.get("name")
        graph._vars = list(spec.get("initializations", []))
        graph._inputs = list(spec.get("inputs", []))
        graph._nodes = list(spec.get("nodes", []))
        graph._post_nodes = list(spec.get("post_nodes", []))
        graph._network = spec.get("network_config")
        graph._var_names = {v["name"] for v in graph._vars}
        graph._node_names = {n["name"] for n in graph._inputs + graph._nodes + graph._post_nodes}
        if graph._network is not None:
            graph._node_names.add(NETWORK)
        for node in graph._nodes + graph._post_nodes:
            function = node.get("function", "")
            if "." in function:
                # A Python kernel registered by `@tomii.export` (its module imported); one that is
                # not found is reported by the run, naming the node.
                with contextlib.suppress(TomiiExportError):
                    graph._python[function] = find_exported(function)
        return graph

    def __getitem__(self, name: str) -> Node | Var:
        """The node, input or post-node called `name` (a Node), else the var (a Var)."""
        if name in self._node_names:
            return Node(name)
        if name in self._var_names:
            return Var(name)
        raise KeyError(f"the graph has no node, input or var called {name!r}")

    def var(
        self,
        name: str,
        value: Any = None,
        *,
        func: str | None = None,
        args: list[Any] | None = None,
        factor: int | Var | None = None,
    ) -> Var:
        """An initialization variable: a literal `value` or computed by `func(*args)` at init."""
        _check_name(name, "var")
        if name in self._var_names:
            raise GraphError(f"duplicate var name {name!r}")
        if (value is None) == (func is None):
            raise GraphError(f"var {name!r}: give exactly one of value or func")
        if value is not None:
            if args is not None or factor is not None:
                raise GraphError(f"var {name!r}: args and factor need func, not value")
            if isinstance(value, (Var, _Edge, Node)):
                raise GraphError(f"var {name!r}: the value must be a literal")
            spec: dict[str, Any] = {"name": name, "value": _literal(value)}
        else:
            spec_args = []
            for a in args or []:
                if isinstance(a, (_Edge, Node)):
                    raise GraphError(
                        f"var {name!r}: a computed var cannot depend on a node (nothing has run)"
                    )
                spec_args.append(_arg(a))
            spec = {
                "name": name,
                "function": func,
                "args": spec_args,
                "factor": 1 if factor is None else _factor(factor),
            }
        self._var_names.add(name)
        self._vars.append(spec)
        return Var(name)

    def input(self, name: str, *, factor: int | Var | None = None) -> Node:
        """An input: `factor` values (default 1) each frame is given by its source, a
        `Session.submit(...)`, instead of a kernel. Nodes read it like any node
        (`samples.out(0, 4)`, `samples.dep()`)."""
        _check_name(name, "input")
        if name in self._node_names:
            raise GraphError(f"input {name!r}: a node or input has that name already")
        spec: dict[str, Any] = {"name": name}
        if factor is not None:
            spec["factor"] = _factor(factor)
        self._inputs.append(spec)
        self._node_names.add(name)
        return Node(name)

    def node(
        self,
        name: str,
        *,
        func: str,
        args: list[Any] | None = None,
        factor: int | Var | None = None,
        priority: str | int | None = None,
        use_workers: str | int | None = None,
        group_size: int | Var | None = None,
        loop: Loop | None = None,
        loop_args: list[Any] | None = None,
        condition: Condition | None = None,
    ) -> Node:
        """A computation node with `factor` instances calling plugin function `func`."""
        spec = self._node_spec(
            name, func, args, factor, priority, use_workers, group_size, loop, loop_args, condition
        )
        self._nodes.append(spec)
        return Node(name)

    def post_node(
        self,
        name: str,
        *,
        func: str,
        args: list[Any] | None = None,
        factor: int | Var | None = None,
        priority: str | int | None = None,
        use_workers: str | int | None = None,
        group_size: int | Var | None = None,
        loop: Loop | None = None,
        loop_args: list[Any] | None = None,
        condition: Condition | None = None,
    ) -> Node:
        """A post-computation node, run once after the last frame (the `post_nodes` section)."""
        spec = self._node_spec(
            name, func, args, factor, priority, use_workers, group_size, loop, loop_args, condition
        )
        self._post_nodes.append(spec)
        return Node(name)

    def py_node(
        self,
        name: str,
        *,
        fn: Callable[..., Any] | str,
        args: list[Any] | None = None,
        factor: int | Var | None = None,
        priority: str | int | None = None,
        use_workers: str | int | None = None,
        group_size: int | Var | None = None,
    ) -> Node:
        """A node whose body is a Python function decorated with `@tomii.export`.

        `fn` is the function or its registered name (`"module.fn"`, imported if needed). Raises
        ValueError if the function is not registered. Barrier and ordering arguments
        (`pred.wait()`, `pred.dep()`) only order: the function never receives them.
        """
        kernel = find_exported(fn)
        spec = self._node_spec(
            name, kernel.name, args, factor, priority, use_workers, group_size, None, None, None
        )
        self._python[kernel.name] = kernel
        self._nodes.append(spec)
        return Node(name)

    def network(self, **config: Any) -> Node:
        """Makes each frame out of packets from UDP or TCP sockets: the graph format's
        `network_config` block (tomii-core/src/graph/README.md, "Network sources").

        Keys: socket_type ("udp" or "tcp"), num_sockets, packet_length, frame_packets,
        buffer_depth (default 128), address, start_port, extract_packet_func, id_function and
        index_function (an IndexFunc or a dict). Without id_function and index_function, each
        packet's frame id and index come from its 16-byte header (`tomii.network.header`). Values
        that are Var objects serialize as their names. Returns the packets, the input `$network`
        with `frame_packets` instances: nodes read them with `packets.out(...)`.
        """
        unknown = sorted(set(config) - set(_NETWORK_KEYS))
        if unknown:
            raise GraphError(
                f"network(): unknown key(s) {', '.join(unknown)}; valid keys: "
                f"{', '.join(_NETWORK_KEYS)}"
            )
        if "frame_packets" in config and "stream_packets" in config:
            raise GraphError(
                "network(): give frame_packets or stream_packets (its Tomii 1.2 name), not both"
            )
        for key in ("start_port", "packet_length", "frame_packets"):
            if key not in config and not (key == "frame_packets" and "stream_packets" in config):
                raise GraphError(f"network(): {key} is required (frame_packets: or stream_packets)")
        block: dict[str, Any] = {"buffer_depth": 128}
        for key, value in config.items():
            if isinstance(value, Var):
                value = value.name
            elif isinstance(value, IndexFunc):
                value = value.to_json()
            block[key] = value
        self._network = block
        return Node(NETWORK)

    def _node_spec(
        self,
        name: str,
        func: str,
        args: list[Any] | None,
        factor: int | Var | None,
        priority: str | int | None,
        use_workers: str | int | None,
        group_size: int | Var | None,
        loop: Loop | None,
        loop_args: list[Any] | None,
        condition: Condition | None,
    ) -> dict[str, Any]:
        _check_name(name, "node")
        if name in self._node_names:
            raise GraphError(f"duplicate node name {name!r}")
        if not isinstance(func, str) or not func:
            raise GraphError(f"node {name!r}: func must be a non-empty string")
        spec: dict[str, Any] = {"name": name, "function": func}
        if factor is not None:
            spec["factor"] = _factor(factor)
        edge = self._edge_writer(spec.get("factor", 1))
        if args is not None:
            spec["args"] = [_arg(a, edge) for a in args]
        if priority is not None:
            spec["priority"] = _priority(name, priority)
        if use_workers is not None:
            spec["use_workers"] = _use_workers(name, use_workers)
        if group_size is not None:
            spec["group_size"] = self._group_size(name, group_size)
        if loop is not None:
            spec["loop"] = loop.to_json()
        if loop_args is not None:
            if loop is None:
                raise GraphError(f"node {name!r}: loop_args needs a loop")
            spec["loop_args"] = [_arg(a, edge) for a in loop_args]
        if condition is not None:
            spec["condition"] = condition.to_json(edge)
        self._node_names.add(name)
        return spec

    def _group_size(self, node: str, group_size: int | Var) -> int | str:
        """A var's value, or a computed var's name (computed before the graph compiles)."""
        if isinstance(group_size, Var):
            known = self._value(group_size.name)
            if known is None:
                return group_size.name
            group_size = known
        if isinstance(group_size, bool) or not isinstance(group_size, int) or group_size < 1:
            raise GraphError(f"node {node!r}: group_size must be a positive int or a Var")
        return group_size

    def _value(self, name: str) -> int | None:
        """The int a var holds, if it has a value (not a computed one)."""
        for var in self._vars:
            if var.get("name") == name and "value" in var:
                value = var["value"]
                if isinstance(value, dict):
                    value = value.get("value")
                if isinstance(value, int) and not isinstance(value, bool):
                    return value
        return None

    def _factor_of(self, factor: Any) -> int | None:
        if isinstance(factor, int) and not isinstance(factor, bool):
            return factor
        return self._value(factor) if isinstance(factor, str) else None

    def _edge_writer(self, factor: Any) -> _EdgeWriter:
        """Writes the edges of a node of `factor` with the factors known now."""
        succ = self._factor_of(factor)

        def write(edge: _Edge) -> dict[str, Any]:
            pred: int | None = None
            if edge.node == NETWORK and self._network is not None:
                packets = self._network.get("frame_packets", self._network.get("stream_packets"))
                pred = self._factor_of(packets)
            else:
                for spec in self._inputs + self._nodes + self._post_nodes:
                    if spec.get("name") == edge.node:
                        pred = self._factor_of(spec.get("factor", 1))
            return edge.to_json((succ, pred), self._value)

        return write

    def to_dict(self) -> dict[str, Any]:
        """The graph as a JSON-ready dict."""
        graph: dict[str, Any] = {}
        if self._name is not None:
            graph["name"] = self._name
        if self._vars:
            graph["initializations"] = [dict(v) for v in self._vars]
        if self._inputs:
            graph["inputs"] = [dict(i) for i in self._inputs]
        graph["nodes"] = [dict(n) for n in self._nodes]
        if self._post_nodes:
            graph["post_nodes"] = [dict(n) for n in self._post_nodes]
        if self._network is not None:
            graph["network_config"] = dict(self._network)
        return graph

    def to_json(self, indent: int | None = 4) -> str:
        """The graph in the graph JSON format."""
        return json.dumps(self.to_dict(), indent=indent)

    def _run_text(self) -> str:
        """The graph's JSON text for a run, written again only when the graph changed since (its
        dict differs from the copy kept), so that a repeated run hands `run_graph` the same text,
        which finds the run it made ready for it."""
        spec = self.to_dict()
        if self._written is None or self._written[0] != spec:
            self._written = (copy.deepcopy(spec), json.dumps(spec))
        return self._written[1]

    def save_json(self, path: str | Path) -> None:
        """Writes `to_json()` to `path`."""
        Path(path).write_text(self.to_json() + "\n", encoding="utf-8")

    def python_kernels(self) -> list[ExportedKernel]:
        """The Python functions the graph's `py_node`s call."""
        return list(self._python.values())

    def build(
        self,
        *,
        func_path: str | Path | None = None,
        wrap_path: str | Path | None = None,
        reg_path: str | Path | None = None,
        plugin_manifest: str | Path | None = None,
        release: bool = True,
        clean: bool = False,
        env: dict[str, str] | None = None,
        python_plugin: bool = False,
        python_interpreter: str | None = None,
    ) -> BuildResult | None:
        """Compiles the kernel plugin of `func_path` (Rust source or annotated C header) and
        remembers it for `run()`; the runtime itself is never rebuilt.

        `python_plugin=True` builds nothing: Python kernels run in-process, through the binding
        this package already has; it is accepted so that Tomii 1.2 scripts run unchanged.
        """
        if python_plugin:
            if python_interpreter is not None and python_interpreter != sys.executable:
                raise ValueError(
                    "python_interpreter: Python kernels run in the interpreter that calls run(); "
                    f"run the script with {python_interpreter} instead"
                )
            if func_path is None:
                return None
        from .build import build

        self._built = build(
            func_path=func_path,
            wrap_path=wrap_path,
            reg_path=reg_path,
            plugin_manifest=plugin_manifest,
            release=release,
            clean=clean,
            env=env,
        )
        return self._built

    def build_and_run(
        self,
        *,
        func_path: str | Path | None = None,
        wrap_path: str | Path | None = None,
        reg_path: str | Path | None = None,
        plugin_manifest: str | Path | None = None,
        release: bool = True,
        clean: bool = False,
        env: dict[str, str] | None = None,
        python_plugin: bool = False,
        python_interpreter: str | None = None,
        **run_knobs: Any,
    ) -> RunResult:
        """`build()`, then `run(env=env, **run_knobs)`: `env` holds for the run too (a kernel or
        an initialization may read it), as in Tomii 1.2."""
        self.build(
            func_path=func_path,
            wrap_path=wrap_path,
            reg_path=reg_path,
            plugin_manifest=plugin_manifest,
            release=release,
            clean=clean,
            env=env,
            python_plugin=python_plugin,
            python_interpreter=python_interpreter,
        )
        return self.run(env=env, **run_knobs)

    def run(
        self,
        *,
        dylib: str | Path | Sequence[str | Path] | None = None,
        env: dict[str, str] | None = None,
        **knobs: Any,
    ) -> RunResult:
        """Runs the graph in-process (see `tomii.run_graph` for the knobs and the result).

        `dylib` is a kernel library or a list of them; without it, the library of `build()` is
        used, if any. `env` sets environment variables for the duration of the run (kernels may
        read them). Python kernels of `py_node`s need no library.
        """
        from .run import _run_given

        with _environment(env) if env else contextlib.nullcontext():
            return _run_given(
                self._run_text(), self._libraries(dylib, knobs), self.python_kernels(), knobs
            )

    def session(
        self, *, dylib: str | Path | Sequence[str | Path] | None = None, **knobs: Any
    ) -> Session:
        """Starts the graph once and returns a `Session` that takes frames from this program
        (`submit(inputs)`); `dylib` is `run()`'s, and the knobs are `Session`'s."""
        from .session import Session

        return Session(
            self._run_text(),
            dylibs=self._libraries(dylib, knobs),
            python_kernels=self.python_kernels(),
            **knobs,
        )

    def _libraries(
        self, dylib: str | Path | Sequence[str | Path] | None, knobs: dict[str, Any]
    ) -> list[str | Path]:
        """The kernel libraries of a run: `dylib`, else the one `build()` made; plus `dylibs`
        from the knobs (taken out of them)."""
        libraries: list[str | Path]
        if dylib is None:
            libraries = [] if self._built is None else [self._built.path]
        elif isinstance(dylib, (str, Path)):
            libraries = [dylib]
        else:
            libraries = list(dylib)
        if "dylibs" in knobs:
            libraries += list(knobs.pop("dylibs"))
        if self._built is not None and self._built.wrappers is not None:
            libraries = self._c_libraries(libraries, self._built)
        if not libraries and not self._python:
            raise RuntimeError(
                "no kernel library: pass dylib=PATH, call build() first, or use py_node"
            )
        return libraries

    @staticmethod
    def _c_libraries(libraries: list[str | Path], built: BuildResult) -> list[str | Path]:
        """After `build(func_path=header)`: a plain C library (no registry, as `make` builds it)
        is loaded through the glue that links the header's wrappers to it (tomii.build.glue_for);
        the wrappers alone are not a library."""
        from .build import glue_for

        if built.path == built.wrappers and built.path in [Path(p) for p in libraries]:
            raise PluginError(
                f"{built.source.name} was built without its C sources (its own build, e.g. make, "
                "makes the library): pass that library, run(dylib=...)"
            )
        return [glue_for(built, p) for p in libraries]

    def visualize(
        self,
        mode: str = "ascii",
        *,
        editable: bool = False,
        save_path: str | Path | None = None,
        port: int | None = None,
        html_path: str | Path | None = None,
    ) -> Path | None:
        """Shows the graph. `mode="ascii"` prints it as terminal box-drawing art and returns None.

        `mode="web"` opens the browser view: one self-contained page (its scripts inlined, no
        network needed) drawing the graph in layers, node kinds (nodes, conditional nodes,
        post-nodes, inputs, `$network`) and edge kinds (`$res`, `$dep`, `$barrier`) styled apart,
        factors and priorities on the nodes, a node's details on click, and "Export Python" (a
        builder script that rebuilds the graph). It is written to a temporary file, kept a day
        for the browser (a later page removes it), whose path is returned; with `html_path`, the page is written there instead, no browser is opened, and
        `html_path` is returned.

        `editable=True` (with `mode="web"`) serves the page from 127.0.0.1:`port` (default 0: any
        free port) until its Done button or Ctrl-C: the page adds, removes and rewires nodes and
        edges, and its Save writes the graph to `save_path` (required) once the runtime's parser
        accepts it, else shows the parser's message. Returns `save_path` if the graph was saved,
        else None; `Graph.from_json(save_path)` loads the edit.
        """
        _check_visualize(mode, editable, save_path, port, html_path)
        if mode == "ascii":
            from .visualize import render_ascii

            print(render_ascii(self.to_dict()))
            return None
        if html_path is not None:
            from .graph_view import write_graph_page

            return write_graph_page(self.to_dict(), html_path)
        if editable:
            from .graph_editor import edit

            assert save_path is not None  # Checked above.
            saved = edit(self.to_dict(), save_path, port=port or 0)
            return Path(save_path) if saved else None
        from .graph_view import open_page

        path, opened = open_page(self.to_dict())
        if not opened:
            print(f"note: no browser could be started; the page is {path}", file=sys.stderr)
        return path


def _check_visualize(
    mode: str,
    editable: bool,
    save_path: str | Path | None,
    port: int | None,
    html_path: str | Path | None,
) -> None:
    """Refuses a combination of `visualize` options that would not do what it says."""
    if mode not in ("ascii", "web"):
        raise ValueError(f"visualize(): mode must be 'ascii' or 'web', got {mode!r}")
    if mode == "ascii" and (editable or save_path is not None or port is not None or html_path):
        raise ValueError("visualize(): editable, save_path, port and html_path need mode='web'")
    if editable and save_path is None:
        raise ValueError("visualize(editable=True) needs save_path, the file the edit is saved to")
    if not editable and (save_path is not None or port is not None):
        raise ValueError("visualize(): save_path and port go with editable=True")
    if editable and html_path is not None:
        raise ValueError(
            "visualize(): html_path writes a read-only page; an editable one is served (port)"
        )
    if port is not None and (isinstance(port, bool) or not isinstance(port, int)):
        raise TypeError(f"visualize(): port must be an int, got {type(port).__name__}")


@contextlib.contextmanager
def _environment(env: dict[str, str] | None) -> Iterator[None]:
    """Sets `env` in os.environ for the block, restoring what was there."""
    if not env:
        yield
        return
    saved = {key: os.environ.get(key) for key in env}
    os.environ.update({key: str(value) for key, value in env.items()})
    try:
        yield
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


def _priority(node: str, priority: str | int) -> str | int:
    """A node's priority as the format writes it: a name or any i32."""
    if isinstance(priority, int) and not isinstance(priority, bool):
        if not -(2**31) <= priority < 2**31:
            raise GraphError(f"node {node!r}: priority {priority} does not fit in an i32")
        return priority
    if priority not in _PRIORITIES:
        raise GraphError(
            f"node {node!r}: priority must be one of {', '.join(_PRIORITIES)} or an int, "
            f"got {priority!r}"
        )
    return priority


def _use_workers(node: str, workers: str | int) -> str | int:
    """A node's worker range as the format writes it ("lo-hi" inclusive, or one worker), checked
    as the runtime's parser checks it, so that a bad one is named where the node is defined."""
    if isinstance(workers, bool) or not isinstance(workers, (str, int)):
        raise GraphError(
            f"node {node!r}: use_workers must be a string like '0-3' or a worker number"
        )
    lo, dash, hi = str(workers).strip().partition("-")
    bounds = (lo.strip(), (hi if dash else lo).strip())
    numbers = [int(b) for b in bounds if b.isascii() and b.isdigit()]
    if len(numbers) != 2 or not numbers[0] <= numbers[1] < 2**32 - 1:
        raise GraphError(
            f"node {node!r}: use_workers {workers!r} is not a worker range; write 'lo-hi' with "
            "lo <= hi (inclusive, e.g. '0-3') or one worker number"
        )
    return workers


def _check_name(name: str, what: str) -> None:
    if not isinstance(name, str) or not name:
        raise GraphError(f"a {what} name must be a non-empty string, got {name!r}")
