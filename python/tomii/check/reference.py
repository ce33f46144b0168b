"""A reference executor for graphs of the synthetic kernels, in plain Python: what every instance
of every frame must compute, the sink and post-node outputs a run must return, and which instances
each instance waits for (tomii-core/src/graph/README.md, plugins/synthetic/README.md).

It is written from the format's documentation, independently of the runtime's compiler: it must
never call into `tomii._tomii`, or it would share the bugs it exists to find. Where the README is
silent it follows what the runtime does, and says so in a comment.
"""

from __future__ import annotations

import math
import re
import struct
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "Expected",
    "KernelFailure",
    "ModelError",
    "ReferenceModel",
    "Value",
    "checksum",
    "expected_run",
    "fnv1a",
    "mix",
]

PRIME = 0x100000001B3
BASIS = 0xCBF29CE484222325
MASK = (1 << 64) - 1
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1

#: A task instance: (node name, instance index).
Task = tuple[str, int]


class ModelError(ValueError):
    """The graph is not valid for the model, or cannot run; the text names the place."""


class KernelFailure(ModelError):
    """A kernel (or a condition's comparison) fails: the run must fail too."""


# --- the checksum ---------------------------------------------------------------------------


def mix(h: int, w: int) -> int:
    """One step of the checksum: fold word `w` into hash `h`."""
    g = ((h ^ w) * PRIME) & MASK
    return g ^ (g >> 29)


def fnv1a(data: bytes) -> int:
    """64-bit FNV-1a of bytes."""
    h = BASIS
    for b in data:
        h = ((h ^ b) * PRIME) & MASK
    return h


def checksum(node: str, instance: int, frame: int, words: Iterable[int]) -> int:
    """The `checksum` kernel's result for these arguments' words."""
    h = mix(mix(fnv1a(node.encode()), instance), frame)
    for w in words:
        h = mix(h, w)
    return h


# --- values ---------------------------------------------------------------------------------

#: Struct formats of typed-array elements, by element type.
_ELEMENT = {
    "bool": "B", "i8": "b", "i16": "h", "i32": "i", "i64": "q", "isize": "q", "u8": "B",
    "u16": "H", "u32": "I", "u64": "Q", "usize": "Q", "f32": "f", "f64": "d",
    "Complex32": "ff", "Complex64": "dd",
}  # fmt: skip
_SIGNED = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "isize": 64, "i128": 128}
_UNSIGNED = {"u8": 8, "u16": 16, "u32": 32, "u64": 64, "usize": 64, "u128": 128}
_SCALARS = (*_SIGNED, *_UNSIGNED, "f32", "f64", "bool", "char", "String", "Complex32", "Complex64")


@dataclass(frozen=True)
class Value:
    """A kernel value as the checksum sees it. `kind` is one of none, bool, int (signed, up to 64
    bits), uint, i128, u128, f32, f64 (`num` holds the bit pattern), c32, c64 (`num`, `num2` the
    parts' bits), char (code point), str, array (`raw` the element bytes), list (`items`)."""

    kind: str
    num: int = 0
    num2: int = 0
    raw: bytes = b""
    items: tuple[Value, ...] = ()

    def word(self) -> int:
        """The 64-bit word this value contributes to a checksum."""
        if self.kind in ("int", "uint", "bool", "char", "f32", "f64"):
            return self.num & MASK
        if self.kind in ("i128", "u128"):
            return mix(self.num & MASK, (self.num >> 64) & MASK)
        if self.kind in ("c32", "c64"):
            return mix(self.num, self.num2)
        if self.kind in ("str", "array"):
            return fnv1a(self.raw)
        h = BASIS if self.kind == "list" else 0
        for item in self.items:
            h = mix(h, item.word())
        return h

    def integer(self) -> int | None:
        """The value as an integer, if it is one."""
        return self.num if self.kind in ("int", "uint", "i128", "u128") else None

    def python(self) -> Any:
        """The value as a run's outputs hold it (only the kinds the synthetic kernels return)."""
        if self.kind not in ("none", "uint"):
            raise ModelError(f"the model does not convert a {self.kind} output")
        return self.num if self.kind == "uint" else None


NONE = Value("none")


def _uint(v: int) -> Value:
    return Value("uint", v)


# --- literals -------------------------------------------------------------------------------


def _is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def _is_number(x: Any) -> bool:
    return _is_int(x) or isinstance(x, float)


def _f32_bits(x: float) -> int:
    try:
        return int.from_bytes(struct.pack("<f", x), "little")
    except OverflowError:
        raise ModelError(f"{x} does not fit in f32") from None


def _f64_bits(x: float) -> int:
    return int.from_bytes(struct.pack("<d", x), "little")


def plain_literal(json: Any) -> Value:
    """A plain JSON value: non-negative integer → usize, negative → i64, other numbers f64."""
    if isinstance(json, bool):
        return Value("bool", int(json))
    if isinstance(json, str):
        return Value("str", raw=json.encode())
    if _is_int(json):
        if 0 <= json <= MASK:
            return _uint(json)
        if I64_MIN <= json < 0:
            return Value("int", json)
        return Value("f64", _f64_bits(float(json)))  # serde_json reads larger integers as f64
    if isinstance(json, float):
        return Value("f64", _f64_bits(json))
    raise ModelError(f"{json!r} is not a literal")


def literal(json: Any) -> Value:
    """A literal argument or initialization value: plain, or typed `{"type", "value"}`."""
    if isinstance(json, Mapping) and "type" in json:
        if set(json) != {"type", "value"}:
            raise ModelError(f'a typed value has exactly "type" and "value": {json!r}')
        return typed(str(json["type"]).strip(), json["value"])
    return plain_literal(json)


def typed(type_name: str, json: Any) -> Value:
    """`json` read as type `type_name` (a scalar type or `Vec<T>`)."""
    inner = re.fullmatch(r"Vec<(.+)>", type_name)
    if inner is None:
        return _scalar(type_name, json)
    elem = inner.group(1).strip()
    if elem not in _SCALARS or not isinstance(json, list):
        raise ModelError(f"bad {type_name} value {json!r}")
    items = [_scalar(elem, item) for item in json]
    if elem in _ELEMENT:
        return Value("array", raw=b"".join(_element_bytes(elem, item) for item in items))
    return Value("list", items=tuple(items))  # Vec<char|String|i128|u128> is a LIST


def _element_bytes(elem: str, item: Value) -> bytes:
    if elem in ("Complex32", "Complex64"):
        size = 4 if elem == "Complex32" else 8
        return item.num.to_bytes(size, "little") + item.num2.to_bytes(size, "little")
    size = struct.calcsize("<" + _ELEMENT[elem])
    return (item.num & ((1 << (8 * size)) - 1)).to_bytes(size, "little")


def _scalar(ty: str, json: Any) -> Value:
    if ty in _SIGNED or ty in _UNSIGNED:
        return _integer(ty, json)
    if ty in ("f32", "f64"):
        if not _is_number(json):
            raise ModelError(f"expected a number for {ty}, got {json!r}")
        return Value(ty, _f32_bits(float(json)) if ty == "f32" else _f64_bits(float(json)))
    if ty in ("Complex32", "Complex64"):
        if not (isinstance(json, list) and len(json) == 2 and all(map(_is_number, json))):
            raise ModelError(f"expected [re, im] for {ty}, got {json!r}")
        bits = _f32_bits if ty == "Complex32" else _f64_bits
        return Value("c32" if ty == "Complex32" else "c64", bits(json[0]), bits(json[1]))
    if ty == "bool" and isinstance(json, bool):
        return Value("bool", int(json))
    if ty == "char" and isinstance(json, str) and len(json) == 1:
        return Value("char", ord(json))
    if ty == "String" and isinstance(json, str):
        return Value("str", raw=json.encode())
    raise ModelError(f"{json!r} is not a value of type {ty}")


def _integer(ty: str, json: Any) -> Value:
    if ty in ("i128", "u128") and isinstance(json, str):
        text = json.strip()
        if not re.fullmatch(r"[+-]?[0-9]+", text):
            raise ModelError(f"{json!r} is not a decimal integer")
        v = int(text)
    elif _is_int(json) and I64_MIN <= json <= MASK:
        v = json
    else:
        raise ModelError(f"expected an integer for {ty}, got {json!r}")
    if ty in _SIGNED:
        bits = _SIGNED[ty]
        if not -(1 << (bits - 1)) <= v < (1 << (bits - 1)):
            raise ModelError(f"{v} does not fit in {ty}")
        return Value("i128" if bits == 128 else "int", v)
    if not 0 <= v < (1 << _UNSIGNED[ty]):
        raise ModelError(f"{v} does not fit in {ty}")
    return Value("u128" if ty == "u128" else "uint", v)


def _as_count(value: Value) -> int | None:
    """A literal as a non-negative 64-bit integer (factors, loop factors, selection bounds)."""
    v = value.integer()
    return v if v is not None and 0 <= v <= MASK else None


# --- the graph ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Selection:
    """Which predecessor instances instance i selects (README, "Selections")."""

    kind: str  # offsets | range | all | wrap-offsets | wrap-range | absolute | group | groups
    offsets: tuple[int, ...] = ()
    group: int = 1
    #: `groups`: the group_by object's (size, from, shared, take).
    groups: tuple[int, int, int, int] = (1, 0, 1, 1)

    def select(self, i: int, pred_factor: int) -> list[int]:
        if self.kind == "all":
            return list(range(pred_factor))
        if self.kind == "group":
            return list(range(i * self.group, i * self.group + self.group))
        if self.kind == "groups":
            size, first, shared, take = self.groups
            start = first + (i // shared) * size
            return list(range(start, start + take))
        if self.kind == "absolute":
            return list(self.offsets)
        picked = [i + k for k in self.offsets]
        return [j % pred_factor for j in picked] if self.kind.startswith("wrap") else picked


@dataclass(frozen=True)
class Arg:
    """One argument: `const` (a literal or literal initialization), `computed` (an initialization
    computed when the run starts), `index`, `workers`, or an edge `$res`/`$dep`/`$barrier`."""

    kind: str
    value: Value = NONE
    name: str = ""
    selection: Selection = Selection("all")


@dataclass
class Node:
    name: str
    function: str
    factor: int
    args: list[Arg]
    loop_args: list[Arg] = field(default_factory=list)
    iterations: int = 1
    condition: tuple[str, Value, str, list[Arg]] | None = None  # op, value, function, args
    group_size: int = 1
    priority: int = 0
    use_workers: tuple[int, int] | None = None

    def all_args(self) -> list[Arg]:
        return self.args + self.loop_args + (self.condition[3] if self.condition else [])


@dataclass
class Computed:
    name: str
    function: str
    count: int
    args: list[Arg]


EDGES = ("$res", "$dep", "$barrier")


class _Parser:
    """Reads the graph dict into nodes; resolves names and checks what the model relies on."""

    def __init__(self, graph: Mapping[str, Any]) -> None:
        self.literals: dict[str, Value] = {}
        self.computed: list[Computed] = []
        inits = list(graph.get("initializations") or [])
        # Literal initializations may be named from anywhere; computed ones only from below them.
        for init in inits:
            if (init.get("function") or init.get("func")) is None:
                self._init(init)
        for init in inits:
            if (init.get("function") or init.get("func")) is not None:
                self._init(init)
        specs = list(graph.get("nodes") or [])
        if not specs:
            raise ModelError("the graph has no nodes")
        self.factors = {str(spec["name"]): self._factor(spec.get("factor"), spec) for spec in specs}
        self.posts = {str(spec["name"]) for spec in graph.get("post_nodes") or []}
        if len(self.factors) != len(specs) or self.posts & set(self.factors):
            raise ModelError("node names must be unique")
        self.nodes = [self._node(spec) for spec in specs]
        self.post_nodes = [self._node(spec, post=True) for spec in graph.get("post_nodes") or []]

    def _init(self, init: Mapping[str, Any]) -> None:
        name = str(init["name"])
        if name in self.literals or any(c.name == name for c in self.computed):
            raise ModelError(f"initialization {name!r} is defined twice")
        function = init.get("function") or init.get("func")
        if function is None:
            self.literals[name] = literal(init["value"])
            return
        count = self._factor(init.get("factor"), init)
        args = [self._arg(a, name, count) for a in init.get("args") or []]
        if any(a.kind in EDGES for a in args):
            raise ModelError(f"initialization {name!r} cannot read a node")
        self.computed.append(Computed(name, str(function), count, args))

    def _factor(self, spec: Any, owner: Mapping[str, Any]) -> int:
        """A positive count, or the name of a literal initialization holding one."""
        if spec is None:
            return 1
        count: Any = _as_count(self._named(spec)) if isinstance(spec, str) else spec
        if not _is_int(count) or count < 1:
            raise ModelError(f"{owner.get('name')!r}: factor {spec!r} is not a positive integer")
        return int(count)

    def _named(self, name: str) -> Value:
        if name not in self.literals:
            raise ModelError(f"{name!r} is not a literal initialization")
        return self.literals[name]

    def _node(self, spec: Mapping[str, Any], post: bool = False) -> Node:
        name = str(spec["name"])
        factor = self._factor(spec.get("factor"), spec)
        if post and (spec.get("loop") or spec.get("condition") or spec.get("group_size")):
            raise ModelError(f"post-node {name!r}: no loop, condition or group_size")
        node = Node(name, str(spec["function"]), factor, self._args(spec.get("args"), name, factor))
        loop = spec.get("loop") or {}
        node.loop_args = self._args(spec.get("loop_args"), name, factor)
        if node.loop_args and not loop:
            raise ModelError(f"node {name!r}: loop_args without a loop")
        if loop and loop.get("factor") is None:
            raise ModelError(f"node {name!r}: a loop needs a factor")
        node.iterations = self._factor(loop.get("factor"), spec) if loop else 1
        node.condition = self._condition(spec.get("condition"), name, factor)
        group_size = spec.get("group_size")
        if group_size is not None and not (_is_int(group_size) and group_size >= 1):
            raise ModelError(f"node {name!r}: group_size {group_size!r} is not a positive integer")
        node.group_size = group_size or 1
        node.priority = _priority(spec.get("priority"))
        node.use_workers = _worker_range(spec.get("use_workers"))
        return node

    def _condition(
        self, spec: Mapping[str, Any] | None, node: str, factor: int
    ) -> tuple[str, Value, str, list[Arg]] | None:
        if not spec:
            return None
        op = spec.get("operation")
        if op not in _OPERATIONS:
            raise ModelError(f"node {node!r}: condition operation {op!r}")
        value_type = spec.get("value_type")
        value = literal(spec["value"]) if value_type is None else typed(value_type, spec["value"])
        if _key(value) is None:
            raise ModelError(f"node {node!r}: a condition value of this type cannot be compared")
        function = str(spec.get("function") or spec.get("func"))
        return op, value, function, self._args(spec.get("args"), node, factor)

    def _args(self, specs: Sequence[Any] | None, node: str, factor: int) -> list[Arg]:
        return [self._arg(spec, node, factor) for spec in specs or []]

    def _arg(self, spec: Any, owner: str, factor: int) -> Arg:
        kind = spec.get("type") if isinstance(spec, Mapping) else None
        if not (isinstance(kind, str) and kind.startswith("$")):
            return Arg("const", literal(spec))
        if kind in ("$index", "$workers"):
            return Arg(kind[1:])
        if kind == "$ref":
            return self._ref(str(spec["name"]), owner, factor)
        if kind not in EDGES:
            raise ModelError(f"{owner!r}: argument type {kind!r} is not supported")
        pred = spec["predecessor"]
        name = str(pred["name"])
        if name not in self.factors:
            raise ModelError(f"{owner!r}: predecessor {name!r} is not a node")
        selection = self._selection(kind, pred)
        _check_selection(selection, factor, self.factors[name], f"{owner!r} ({kind} from {name!r})")
        return Arg(kind, name=name, selection=selection)

    def _ref(self, name: str, owner: str, factor: int) -> Arg:
        if name in self.literals:
            return Arg("const", self.literals[name])
        for init in self.computed:
            if init.name == name:
                # README: a node, post-node or initialization reads element i of a computed
                # initialization with several elements, so it may have at most that many.
                if init.count > 1 and factor > init.count:
                    raise ModelError(
                        f"{owner!r}: {name!r} has {init.count} elements, {owner!r} {factor}"
                    )
                return Arg("computed", name=name)
        raise ModelError(f"{owner!r}: $ref {name!r} is not an initialization above it")

    def _selection(self, kind: str, pred: Mapping[str, Any]) -> Selection:
        index, group_by, wrap = pred.get("index"), pred.get("group_by"), pred.get("wrap") or False
        if group_by is not None:
            if index is not None or wrap:
                raise ModelError(f"bad group_by {group_by!r}")
            if isinstance(group_by, Mapping):
                return Selection("groups", groups=_groups(group_by))
            if not _is_int(group_by) or group_by < 1:
                raise ModelError(f"bad group_by {group_by!r}")
            return Selection("group", group=group_by)
        if index is None:
            selection = Selection("all") if kind == "$barrier" else Selection("offsets", (0,))
        elif _is_int(index):
            selection = Selection("offsets", (index,))
        elif isinstance(index, list) and index and all(map(_is_int, index)):
            selection = Selection("offsets", tuple(index))
        elif isinstance(index, str):
            selection = self._text_selection(index.strip())
        else:
            raise ModelError(f"index {index!r} is not a selection")
        if pred.get("absolute") is True:
            if wrap or selection.kind not in ("offsets", "range") or len(selection.offsets) < 1:
                raise ModelError("absolute applies to one instance or a range, without wrap")
            if selection.kind == "offsets" and len(selection.offsets) > 1:
                raise ModelError("absolute applies to one instance or a range, not a list")
            return Selection("absolute", selection.offsets)
        if not wrap:
            return selection
        if selection.kind not in ("offsets", "range"):
            raise ModelError("wrap applies to offsets and ranges")
        return Selection("wrap-" + selection.kind, selection.offsets)

    def _text_selection(self, text: str) -> Selection:
        """ "all", "k", "VAR", "a-b" (bounds are integers or names), tried in this order; a name
        may contain '-': the first split where both sides are bounds wins."""
        if text == "all":
            return Selection("all")
        if re.fullmatch(r"[+-]?[0-9]+", text) and I64_MIN <= int(text) <= I64_MAX:
            return Selection("offsets", (int(text),))
        if text in self.literals:
            return Selection("offsets", (self._bound(text),))
        for at in (m.start() for m in re.finditer("-", text)):
            left, right = text[:at].strip(), text[at + 1 :].strip()
            try:
                a, b = self._bound(left), self._bound(right)
            except ModelError:
                continue
            if b <= a:
                raise ModelError(f"the range {a}-{b} is empty")
            return Selection("range", tuple(range(a, b)))
        raise ModelError(f"index {text!r} is not a selection")

    def _bound(self, text: str) -> int:
        if re.fullmatch(r"\+?[0-9]+", text) and int(text) <= MASK:
            value: int | None = int(text)
        elif text:
            value = _as_count(self._named(text))
        else:
            value = None
        if value is None or value > I64_MAX:
            raise ModelError(f"{text!r} is not a bound")
        return value


_OPERATIONS: dict[str, Callable[[int], bool]] = {
    "Eq": lambda c: c == 0,
    "Neq": lambda c: c != 0,
    "Gt": lambda c: c > 0,
    "Ge": lambda c: c >= 0,
    "Lt": lambda c: c < 0,
    "Le": lambda c: c <= 0,
}


def _priority(spec: Any) -> int:
    words = {None: 0, "high": 1, "normal": 0, "low": -1}
    if _is_int(spec) and -(1 << 31) <= spec < (1 << 31):
        return int(spec)
    if (isinstance(spec, str) or spec is None) and spec in words:
        return words[spec]
    raise ModelError(f"priority {spec!r} is not valid")


def _worker_range(spec: Any) -> tuple[int, int] | None:
    """`"lo-hi"` (inclusive), `"k"` or k, as a half-open range."""
    if spec is None:
        return None
    text = str(spec).strip() if isinstance(spec, str) or _is_int(spec) else ""
    lo, _, hi = text.partition("-") if "-" in text else (text, "", text)
    number = r"\s*\+?[0-9]+\s*"
    if not (re.fullmatch(number, lo) and re.fullmatch(number, hi)) or int(lo) > int(hi):
        raise ModelError(f"use_workers {spec!r} is not a worker range")
    return int(lo), int(hi) + 1


def _groups(spec: Mapping[str, Any]) -> tuple[int, int, int, int]:
    """The group_by object `{"size", "from", "shared", "take"}` (README, "Selections")."""
    if set(spec) - {"size", "from", "shared", "take"} or not _is_int(spec.get("size")):
        raise ModelError(f"bad group_by {dict(spec)!r}")
    size = int(spec["size"])
    first, shared, take = (spec.get(k, d) for k, d in (("from", 0), ("shared", 1), ("take", size)))
    if not all(map(_is_int, (first, shared, take))) or size < 1 or first < 0 or shared < 1:
        raise ModelError(f"bad group_by {dict(spec)!r}")
    if not 1 <= take <= size:
        raise ModelError(f"bad group_by {dict(spec)!r}")
    return size, int(first), int(shared), int(take)


def _check_selection(selection: Selection, factor: int, pred_factor: int, where: str) -> None:
    if selection.kind == "group" and pred_factor % selection.group:
        raise ModelError(f"{where}: group_by {selection.group} does not divide {pred_factor}")
    for i in range(factor):
        for j in selection.select(i, pred_factor):
            if not 0 <= j < pred_factor:
                raise ModelError(f"{where}: instance {i} selects {j} of {pred_factor}")


# --- comparisons (README, "Conditions") ------------------------------------------------------


def _key(value: Value) -> tuple[str, Any] | None:
    """What a condition compares: integers exactly, floats, strings, bools, chars."""
    if value.kind in ("int", "uint", "i128", "u128"):
        # Exactly, as the README says.
        return "int", value.num
    if value.kind == "f32":
        return "float", struct.unpack("<f", value.num.to_bytes(4, "little"))[0]
    if value.kind == "f64":
        return "float", struct.unpack("<d", value.num.to_bytes(8, "little"))[0]
    if value.kind == "str":
        return "text", value.raw.decode()
    if value.kind in ("bool", "char"):
        return value.kind, value.num
    return None


def compare(got: Value, want: Value) -> int:
    """-1, 0 or 1 as `got` is below, equal to or above `want`; KernelFailure if they cannot be
    compared (different kinds, NaN)."""
    a, b = _key(got), _key(want)
    if a is None or b is None:
        raise KernelFailure(f"a {got.kind} cannot be compared with a {want.kind}")
    kinds = {a[0], b[0]}
    if kinds <= {"int", "float"} and "float" in kinds:
        x, y = float(a[1]), float(b[1])
        if math.isnan(x) or math.isnan(y):
            raise KernelFailure("NaN compares with nothing")
    elif a[0] != b[0]:
        raise KernelFailure(f"a {got.kind} cannot be compared with a {want.kind}")
    else:
        x, y = a[1], b[1]
    return (x > y) - (x < y)


# --- kernels ----------------------------------------------------------------------------------

#: (node or initialization name, instance or element, frame).
Context = tuple[str, int, int]
Kernel = Callable[[Context, list[Value]], Value]


def _checksum(ctx: Context, args: list[Value]) -> Value:
    return _uint(checksum(ctx[0], ctx[1], ctx[2], (a.word() for a in args)))


def _unsigned(args: list[Value], k: int) -> int:
    v = args[k].integer() if k < len(args) else None
    if v is None or args[k].kind not in ("int", "uint") or v < 0:
        raise KernelFailure(f"argument {k}: expected an unsigned integer")
    return v


def _modulo(ctx: Context, args: list[Value]) -> Value:
    value, divisor = _unsigned(args, 0), _unsigned(args, 1)
    if divisor == 0:
        raise KernelFailure("modulo: the divisor is 0")
    return _uint(value % divisor)


def _fail(ctx: Context, args: list[Value]) -> Value:
    raise KernelFailure(f"kernel failed in {ctx[0]}[{ctx[1]}] of frame {ctx[2]}")


#: The synthetic kernels the model knows: function and whether it is variadic.
KERNELS: dict[str, tuple[Kernel, bool]] = {
    "checksum": (_checksum, False),
    "checksum_list": (_checksum, True),
    "modulo": (_modulo, False),
    "noop": (lambda ctx, args: NONE, False),
    "fail": (_fail, False),
    "panic": (_fail, False),
}


def _kernel(name: str) -> tuple[Kernel, bool]:
    if name not in KERNELS:
        raise ModelError(f"kernel {name!r} is not a synthetic kernel the model knows")
    return KERNELS[name]


# --- the model --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Expected:
    """What a run of `frames` frames on `workers` workers must produce."""

    #: Per frame: the value of every instance ((node, instance) → value; None when skipped).
    values: list[dict[Task, Any]]
    #: Per frame: (node, instance, value) for every sink instance, in the runtime's order.
    outputs: list[list[tuple[str, int, Any]]]
    #: (post-node, instance, value), in file order.
    post_outputs: list[tuple[str, int, Any]]
    #: Per node: instances skipped over the run (their condition did not hold).
    skipped: dict[str, int]


class ReferenceModel:
    """A graph, read once: its instances, their dependencies and tasks; `run` computes values.

    Instances are numbered node by node in file order. An instance depends on the distinct
    instances its `$res`, `$dep` and `$barrier` selections name, in `args`, `loop_args` and the
    condition's `args`. With `group_size`, a task runs a group of consecutive instances; a sink
    is a task no other task depends on, and its instances' results are a frame's outputs."""

    def __init__(self, graph: Mapping[str, Any]) -> None:
        parsed = _Parser(graph)
        self.nodes = parsed.nodes
        self.post_nodes = parsed.post_nodes
        self.computed = parsed.computed
        self._by_name = {node.name: node for node in self.nodes}
        #: Instances per node.
        self.factors = {node.name: node.factor for node in self.nodes}
        #: Every instance, in the runtime's id order.
        self.tasks: list[Task] = [(n.name, i) for n in self.nodes for i in range(n.factor)]
        #: (node, instance) → the instances it waits for, in the same frame.
        self.deps: dict[Task, frozenset[Task]] = {
            (n.name, i): frozenset(self._selected(n.all_args(), i))
            for n in self.nodes
            for i in range(n.factor)
        }
        self.order = self._topological_order()
        #: (node, instance) → the first instance of its task's group.
        self.leader: dict[Task, Task] = {
            (n.name, i): (n.name, i - i % n.group_size) for n in self.nodes for i in range(n.factor)
        }
        self.task_deps = self._task_deps()
        self.sinks = self._sinks()

    # Structure -------------------------------------------------------------------------------

    def _selected(self, args: Iterable[Arg], i: int) -> list[Task]:
        """The instances the edges among `args` select for instance i."""
        edges = [arg for arg in args if arg.kind in EDGES]
        return [(a.name, j) for a in edges for j in a.selection.select(i, self.factors[a.name])]

    def _topological_order(self) -> list[Task]:
        waiting = {task: len(deps) for task, deps in self.deps.items()}
        successors: dict[Task, list[Task]] = {task: [] for task in self.tasks}
        for task, deps in self.deps.items():
            for dep in deps:
                successors[dep].append(task)
        order = [task for task in self.tasks if waiting[task] == 0]
        for task in order:
            for succ in successors[task]:
                waiting[succ] -= 1
                if waiting[succ] == 0:
                    order.append(succ)
        if len(order) < len(self.tasks):
            stuck = sorted(set(self.tasks) - set(order), key=self.tasks.index)
            raise ModelError(f"the graph has a cycle through {stuck[0][0]}[{stuck[0][1]}]")
        return order

    def _task_deps(self) -> dict[Task, frozenset[Task]]:
        """Per leader: the leaders of the tasks its group waits for. No instance reads its own
        node (every instance selects at least one instance of each edge, in range, so a node
        reading itself always has a cycle), so tasks are acyclic when instances are."""
        found: dict[Task, set[Task]] = {}
        for task in self.tasks:
            found.setdefault(self.leader[task], set()).update(
                self.leader[d] for d in self.deps[task]
            )
        return {leader: frozenset(deps) for leader, deps in found.items()}

    def _sinks(self) -> list[Task]:
        """Instances whose task no task depends on, in instance id order."""
        needed = {dep for deps in self.task_deps.values() for dep in deps}
        return [task for task in self.tasks if self.leader[task] not in needed]

    def worker_ranges(self) -> dict[str, tuple[int, int]]:
        """Per node with `use_workers`: its half-open worker range."""
        return {n.name: n.use_workers for n in self.nodes if n.use_workers is not None}

    def priorities(self) -> dict[str, int]:
        return {n.name: n.priority for n in self.nodes}

    # Values ----------------------------------------------------------------------------------

    def run(self, *, frames: int, workers: int) -> Expected:
        """What a run must produce; KernelFailure if it must fail."""
        if frames < 1 or workers < 1:
            raise ModelError("a run has at least one frame and one worker")
        for node in self.nodes:
            if node.use_workers is not None and node.use_workers[1] > workers:
                raise ModelError(f"node {node.name!r}: use_workers beyond {workers} workers")
        computed = self._compute_initializations(workers)
        skipped = {node.name: 0 for node in self.nodes}
        values: list[dict[Task, Value]] = []
        for frame in range(frames):
            frame_values: dict[Task, Value] = {}
            for name, i in self.order:
                node = self._by_name[name]
                env = _Env(frame_values, computed, workers, frame, self.factors)
                value = self._instance(node, i, env)
                skipped[name] += value is None
                frame_values[(name, i)] = NONE if value is None else value
            values.append(frame_values)
        last = _Env(values[-1], computed, workers, frames - 1, self.factors)
        return Expected(
            values=[{task: v[task].python() for task in self.tasks} for v in values],
            outputs=[[(n, i, v[(n, i)].python()) for n, i in self.sinks] for v in values],
            post_outputs=[
                (post.name, i, self._call(post, i, post.args, last).python())
                for post in self.post_nodes
                for i in range(post.factor)
            ],
            skipped=skipped,
        )

    def _compute_initializations(self, workers: int) -> dict[str, list[Value]]:
        """Every computed initialization, in file order: element e is its kernel called with
        `$index` = e, on frame 0, named after the initialization."""
        computed: dict[str, list[Value]] = {}
        for init in self.computed:
            function, _ = _kernel(init.function)
            elements = []
            for element in range(init.count):
                env = _Env({}, computed, workers, 0)
                args = [v for arg in init.args for v in env.value(arg, element)[0]]
                # A variadic initialization gets no LIST: it has no results to gather (what the
                # runtime does; the README is silent).
                elements.append(function((init.name, element, 0), args))
            computed[init.name] = elements
        return computed

    def _instance(self, node: Node, i: int, env: _Env) -> Value | None:
        """One instance's body: its condition, then its kernel (and loop); None when skipped."""
        if node.condition is not None:
            op, want, function_name, cond_args = node.condition
            function, _ = _kernel(function_name)
            # The condition's function gets its arguments as they are, never as a LIST: only the
            # node's own kernel is variadic (what the runtime does; the README is silent).
            args = [v for arg in cond_args for v in env.value(arg, i)[0]]
            if not _OPERATIONS[op](compare(function((node.name, i, env.frame), args), want)):
                return None
        return self._call(node, i, node.args, env, node.loop_args, node.iterations)

    def _call(
        self,
        node: Node,
        i: int,
        args: list[Arg],
        env: _Env,
        loop_args: Sequence[Arg] = (),
        iterations: int = 1,
    ) -> Value:
        """The kernel's calls: `args` (trailing results as one LIST when variadic), then in the
        first call `loop_args`, in each later one the previous call's result (README, "Loops":
        also with a loop of one iteration)."""
        function, variadic = _kernel(node.function)
        parts = [env.value(arg, i) for arg in args]
        values = [v for part, _ in parts for v in part]
        if variadic:
            values = _gather_trailing(values, parts)
        loop_values = [v for arg in loop_args for v in env.value(arg, i)[0]]
        ctx = (node.name, i, env.frame)
        result = function(ctx, values + loop_values)
        for _ in range(iterations - 1):
            result = function(ctx, [*values, result])
        return result


def _gather_trailing(values: list[Value], parts: Sequence[tuple[list[Value], str]]) -> list[Value]:
    """A variadic kernel's arguments: the trailing run of results (`$dep` and `$barrier` pass
    nothing, so they do not end the run) becomes one LIST, empty when there is no such run."""
    trailing = 0
    for part, source in reversed(parts):
        if source == "result":
            trailing += len(part)
        elif source != "order":
            break
    cut = len(values) - trailing
    return [*values[:cut], Value("list", items=tuple(values[cut:]))]


@dataclass(frozen=True)
class _Env:
    """Where argument values come from: this frame's results so far, the computed
    initializations, the run's worker count and the frame number."""

    results: Mapping[Task, Value]
    computed: Mapping[str, list[Value]]
    workers: int
    frame: int
    factors: Mapping[str, int] = field(default_factory=dict)

    def value(self, arg: Arg, i: int) -> tuple[list[Value], str]:
        """The values `arg` passes to instance i, and their source: result, order (an edge that
        passes nothing) or other."""
        if arg.kind == "$res":
            picked = arg.selection.select(i, self.factors[arg.name])
            return [self.results[(arg.name, j)] for j in picked], "result"
        if arg.kind in EDGES:
            return [], "order"
        if arg.kind == "computed":
            elements = self.computed[arg.name]
            if len(elements) > 1 and i >= len(elements):
                raise ModelError(f"{arg.name!r} has no element {i}")
            return [elements[i if len(elements) > 1 else 0]], "other"
        if arg.kind in ("index", "workers"):
            return [_uint(i if arg.kind == "index" else self.workers)], "other"
        return [arg.value], "other"


def expected_run(graph: Mapping[str, Any], *, frames: int, workers: int) -> Expected:
    """What running `graph` for `frames` frames on `workers` workers must produce."""
    return ReferenceModel(graph).run(frames=frames, workers=workers)
