"""The graph as a Python builder script: `tomii.Graph()` calls (var, input, node, post_node,
network, out/dep/wait, Loop, Condition) that rebuild it, for the graph view's "Export Python".

`builder_script(graph)` writes the script; exec'ing it leaves the rebuilt graph in `graph`, whose
`to_dict()` is `builder_form(graph)`: the same graph, spelled as the builder spells it. It reads a
graph of the current format (`tomii.Graph.from_json` converts a Tomii 1.2 file) and never checks
it: the runtime's parser does that when the script's graph runs.
"""

from __future__ import annotations

import builtins
import copy
import json
import keyword
import re
from typing import Any

from .graph import NETWORK

__all__ = ["builder_form", "builder_script"]

_EDGE_KINDS = {"$res": "out", "$dep": "dep", "$barrier": "wait"}
_INT_TYPES = (
    "i8",
    "i16",
    "i32",
    "i64",
    "isize",
    "i128",
    "u8",
    "u16",
    "u32",
    "u64",
    "usize",
    "u128",
)
#: Names the script itself uses or would shadow, never given to a node or var.
_RESERVED = {"tomii", "graph", *dir(builtins)}
#: A range `a-b` whose bounds are integers or plain names: written `out(a, b)`.
_RANGE = re.compile(r"^(\d+|[A-Za-z_]\w*)-(\d+|[A-Za-z_]\w*)$")
_NODE_FIELDS = ("factor", "priority", "use_workers", "group_size")
_LINE_LENGTH = 99


def builder_script(graph: dict[str, Any]) -> str:
    """The builder script of `graph` (a current-format dict): one statement per var, input and
    node in file order; the graph it builds is in the variable `graph`."""
    names = _Names()
    lines = [
        '"""Builds the graph below with the tomii builder; `graph.run(...)` runs it."""',
        "",
        "import tomii",
        "",
        _statement(
            "graph",
            "tomii.Graph",
            [] if graph.get("name") is None else [f"name={_py(graph['name'])}"],
        ),
    ]
    for init in graph.get("initializations") or []:
        lines.append(_statement(names.var(init["name"]), "graph.var", _var_call(init, names)))
    for spec in graph.get("inputs") or []:
        parts = [_py(spec["name"])]
        if "factor" in spec:
            parts.append(f"factor={_factor(spec['factor'], names)}")
        lines.append(_statement(names.declare(spec["name"]), "graph.input", parts))
    if graph.get("network_config") is not None:
        config = _network_config(graph["network_config"])
        parts = [f"{key}={_py(value)}" for key, value in config.items()]
        lines.append(_statement(names.declare(NETWORK), "graph.network", parts))
    for method, section in (("node", "nodes"), ("post_node", "post_nodes")):
        for spec in graph.get(section) or []:
            call = _node_call(spec, names)
            lines.append(_statement(names.declare(spec["name"]), f"graph.{method}", call))
    lines += ["", 'if __name__ == "__main__":', "    print(graph.to_json())", ""]
    return "\n".join(lines)


def _statement(target: str, call: str, parts: list[str]) -> str:
    """`target = call(parts)`, one argument a line when that is longer than a line may be."""
    line = f"{target} = {call}({', '.join(parts)})"
    if len(line) <= _LINE_LENGTH:
        return line
    return f"{target} = {call}(\n" + "".join(f"    {part},\n" for part in parts) + ")"


def _network_config(config: dict[str, Any]) -> dict[str, Any]:
    """The network block with the builder's key names (`stream_packets` is `frame_packets`)."""
    return {("frame_packets" if k == "stream_packets" else k): v for k, v in config.items()}


def builder_form(graph: dict[str, Any]) -> dict[str, Any]:
    """`graph` as the builder writes it, with the same meaning: plain literals typed as the parser
    infers them, offset 0 of `$res`/`$dep` left implicit, and the fields the builder always
    writes (a computed var's factor and args, a condition's args, a network's buffer_depth) given
    their defaults. It is what `to_dict()` of the graph `builder_script(graph)` builds."""
    form = copy.deepcopy(graph)
    for init in form.get("initializations") or []:
        if "value" in init:
            init["value"] = _typed(init["value"])
        else:
            init.setdefault("factor", 1)
            init["args"] = [_typed_arg(arg) for arg in init.get("args") or []]
    for spec in (form.get("nodes") or []) + (form.get("post_nodes") or []):
        for key in ("args", "loop_args"):
            if key in spec:
                spec[key] = [_typed_arg(arg) for arg in spec[key]]
        condition = spec.get("condition")
        if condition is not None:
            condition["args"] = [_typed_arg(arg) for arg in condition.get("args") or []]
            condition.setdefault("value_type", None)
    if form.get("network_config") is not None:
        form["network_config"] = _network_config(form["network_config"])
        form["network_config"].setdefault("buffer_depth", 128)
    return form


def _typed(literal: Any) -> Any:
    """A plain literal as the typed literal the parser reads it as (the README's table)."""
    if isinstance(literal, dict):
        return literal
    if isinstance(literal, bool):
        return {"type": "bool", "value": literal}
    if isinstance(literal, int):
        return {"type": "usize" if literal >= 0 else "i64", "value": literal}
    if isinstance(literal, float):
        return {"type": "f64", "value": literal}
    if isinstance(literal, str):
        return {"type": "String", "value": literal}
    return literal


def _typed_arg(arg: Any) -> Any:
    if isinstance(arg, dict) and arg.get("type") in _EDGE_KINDS:
        predecessor = arg.get("predecessor")
        if arg["type"] != "$barrier" and isinstance(predecessor, dict):
            index = predecessor.get("index")
            if type(index) is int and index == 0:
                del predecessor["index"]
        return arg
    return _typed(arg)


class _Names:
    """Python variable names for the graph's vars and nodes: identifiers, unique, never a
    keyword or a name the script uses. A node read before it is declared is `tomii.Node(NAME)`."""

    def __init__(self) -> None:
        self._taken = set(_RESERVED)
        self._vars: dict[str, str] = {}
        self._nodes: dict[str, str] = {}

    def _fresh(self, name: str) -> str:
        base = re.sub(r"\W", "_", name.lstrip("$")) or "node"
        if base[0].isdigit():
            base = "n_" + base
        if keyword.iskeyword(base):
            base += "_"
        variable, suffix = base, 2
        while variable in self._taken:
            variable, suffix = f"{base}_{suffix}", suffix + 1
        self._taken.add(variable)
        return variable

    def var(self, name: str) -> str:
        self._vars[name] = self._fresh(name)
        return self._vars[name]

    def declare(self, name: str) -> str:
        self._nodes[name] = self._fresh(name)
        return self._nodes[name]

    def var_ref(self, name: str) -> str:
        """A var by name; one the graph does not declare is still a `tomii.Var`."""
        return self._vars.get(name) or f"tomii.Var({_py(name)})"

    def node_ref(self, name: str) -> str:
        return self._nodes.get(name) or f"tomii.Node({_py(name)})"


def _var_call(init: dict[str, Any], names: _Names) -> list[str]:
    parts = [_py(init["name"])]
    if "value" in init:
        parts.append(_literal(init["value"]))
        return parts
    parts.append(f"func={_py(init.get('function', init.get('func')))}")
    parts.append(f"args={_args(init.get('args') or [], names)}")
    if "factor" in init:
        parts.append(f"factor={_factor(init['factor'], names)}")
    return parts


def _node_call(spec: dict[str, Any], names: _Names) -> list[str]:
    parts = [_py(spec["name"]), f"func={_py(spec['function'])}"]
    if "args" in spec:
        parts.append(f"args={_args(spec['args'], names)}")
    for key in _NODE_FIELDS:
        if key in spec:
            value = spec[key]
            parts.append(f"{key}={_factor(value, names) if key == 'factor' else _py(value)}")
    loop = spec.get("loop")
    if loop is not None:
        factor = _factor(loop["factor"], names)
        parts.append(f"loop=tomii.Loop({_py(loop['name'])}, {factor})")
    if "loop_args" in spec:
        parts.append(f"loop_args={_args(spec['loop_args'], names)}")
    condition = spec.get("condition")
    if condition is not None:
        parts.append(f"condition={_condition(condition, names)}")
    return parts


def _condition(condition: dict[str, Any], names: _Names) -> str:
    fields = [
        _py(condition.get("operation")),
        _py(condition.get("value")),
        _py(condition.get("value_type")),
        _py(condition.get("function", condition.get("func"))),
        _args(condition.get("args") or [], names),
    ]
    return f"tomii.Condition({', '.join(fields)})"


def _factor(factor: Any, names: _Names) -> str:
    """A factor: an int, or the var it names."""
    return names.var_ref(factor) if isinstance(factor, str) else _py(factor)


def _args(args: list[Any], names: _Names) -> str:
    return "[" + ", ".join(_arg(arg, names) for arg in args) + "]"


def _arg(arg: Any, names: _Names) -> str:
    if isinstance(arg, dict):
        kind = arg.get("type")
        if kind == "$ref":
            return names.var_ref(arg["name"])
        if kind == "$index":
            return "tomii.INDEX"
        if kind == "$workers":
            return "tomii.WORKERS"
        if kind in _EDGE_KINDS:
            return _edge(kind, arg["predecessor"], names)
    return _literal(arg)


def _edge(kind: str, predecessor: dict[str, Any], names: _Names) -> str:
    """`node.out(...)`, `.dep(...)` or `.wait(...)` selecting what `predecessor` selects."""
    # Each selection in its explicit spelling, so that the script means what the file means
    # whatever the factors (the builder's plain calls mean what Tomii 1.2 made of them).
    selection = []
    index = predecessor.get("index")
    if "group_by" in predecessor:
        selection.append(f"group_by={_py(predecessor['group_by'])}")
    elif index == "all" or (index is None and kind == "$barrier"):
        selection.append("every=True")
    elif predecessor.get("absolute"):
        selection.append(f"instance={_selection(index, names)[0]}")
    elif predecessor.get("rule") == "tomii-1.2":
        # The builder's own 1.2 call: an int range end is inclusive there.
        bounds = _selection(index, names)
        if len(bounds) == 2 and bounds[1].isdigit():
            bounds[1] = str(int(bounds[1]) - 1)
        selection += bounds
    else:
        if index is not None:
            selection += _selection(index, names)
        selection.append(f"wrap={bool(predecessor.get('wrap'))}")
    method = _EDGE_KINDS[kind]
    return f"{names.node_ref(predecessor['name'])}.{method}({', '.join(selection)})"


def _selection(index: Any, names: _Names) -> list[str]:
    """The positional arguments of a selection: `a, b` for a range of ints or vars, else the
    index itself (an offset, a list of offsets, "all" or a var's name as written)."""
    bounds = _RANGE.match(index) if isinstance(index, str) else None
    if bounds is None or any(b.isdigit() and str(int(b)) != b for b in bounds.groups()):
        return [_py(index)]
    return [bound if bound.isdigit() else names.var_ref(bound) for bound in bounds.groups()]


def _literal(literal: Any) -> str:
    """A literal as the builder takes it: a plain Python value where the builder infers the same
    type (usize, f64, bool, String), else a typed wrapper (`tomii.u8(3)`)."""
    if not isinstance(literal, dict):
        if isinstance(literal, int) and not isinstance(literal, bool) and literal < 0:
            return f"tomii.i64({literal})"
        return _py(literal)
    kind, value = literal["type"], literal["value"]
    if kind == "usize" and isinstance(value, int) and not isinstance(value, bool):
        return _py(value)
    if kind in ("bool", "String"):
        return _py(value)
    if kind == "f64" and isinstance(value, float):
        return _py(value)
    if kind in _INT_TYPES:
        return f"tomii.{kind}({int(value)})"
    if kind in ("f32", "f64"):
        return f"tomii.{kind}({float(value)!r})"
    if kind == "char":
        return f"tomii.char_({_py(value)})"
    if kind in ("Complex32", "Complex64"):
        return f"tomii.{kind}({float(value[0])!r}, {float(value[1])!r})"
    if kind.startswith("Vec<") and kind.endswith(">"):
        return f"tomii.Vec({_py(kind[4:-1])}, {_py(value)})"
    raise ValueError(f"cannot write a literal of type {kind!r} with the builder")


def _py(value: Any) -> str:
    """A JSON value as Python source."""
    if isinstance(value, dict):
        items = ", ".join(f"{_py(key)}: {_py(item)}" for key, item in value.items())
        return "{" + items + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_py(item) for item in value) + "]"
    if isinstance(value, str):
        return json.dumps(value)  # A JSON string is a Python string, in double quotes.
    return repr(value)
