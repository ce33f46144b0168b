"""Hypothesis strategies for valid graphs of the synthetic kernels and for the knobs of a run.

Every graph drawn here parses and runs on `workers` workers (README of the graph format): edges
only go from earlier to later nodes of a hidden topological order (the file order is shuffled),
every selection stays inside its predecessor, `modulo` conditions read only values that are never
NONE. Each optional part is drawn so that it shrinks away: fewer nodes, factor 1, no arguments,
no condition, loop, group or priority, plain literals, the simplest selection, file order.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from hypothesis import strategies as st

from ..types import _ELEMENT_TYPES

__all__ = [
    "FEATURES",
    "SCHEDULERS",
    "SCHEDULER_OPTIONS",
    "Knobs",
    "graphs",
    "knobs",
    "literals",
    "runs",
]

#: What `graphs` may use; pass a subset as `features=` to leave parts out.
FEATURES = frozenset(
    {
        "literals",  # inline literal arguments of every type
        "refs",  # $ref to literal initializations, and factors and bounds named by them
        "computed",  # computed initializations, read by $ref
        "index",  # $index
        "workers",  # $workers
        "res",  # $res edges
        "deps",  # $dep edges
        "barriers",  # $barrier edges
        "all",  # "all" selections
        "offsets",  # offsets: integers, lists, "k", "VAR"
        "ranges",  # "a-b" ranges
        "wrap",  # wrap-around offsets and ranges
        "group_by",  # group_by fan-ins
        "variadic",  # checksum_list nodes
        "conditions",  # conditions, by modulo or checksum
        "loops",  # loops and loop_args
        "priorities",  # priority words and integers
        "use_workers",  # worker ranges
        "group_size",  # groups of instances
        "post_nodes",  # post-nodes
        "names",  # non-ASCII and punctuated names
    }
)

#: The schedulers shipped with the package.
SCHEDULERS = (
    "fifo",
    "c-fifo",
    "work-stealing",
    "priority",
    "random",
    "critical-path",
    "locality",
    "multi-slot-batch",
)

_BOOL = st.sampled_from(["true", "false"])
#: Each scheduler's options (schedulers/*/README.md, "Parameters") and their valid values.
SCHEDULER_OPTIONS: Mapping[str, Mapping[str, st.SearchStrategy[str]]] = {
    "work-stealing": {"lifo": _BOOL},
    "random": {"seed": st.integers(0, 2**64 - 1).map(str)},
    "critical-path": {"weighted": _BOOL},
    "locality": {"steal_order": st.sampled_from(["nearest", "random"])},
    "multi-slot-batch": {"batch": st.integers(1, 1024).map(str)},
}


@dataclass(frozen=True)
class Knobs:
    """The knobs of one run."""

    scheduler: str = "fifo"
    workers: int = 1
    slots: int = 1
    frames: int = 1
    pop_batch: int = 1
    sched_opts: tuple[tuple[str, str], ...] = field(default=())
    inline_continuation: bool = False

    def run_options(self) -> dict[str, Any]:
        """The keyword arguments of `tomii.run_graph` for these knobs."""
        return {
            "scheduler": self.scheduler,
            "workers": self.workers,
            "slots": self.slots,
            "frames": self.frames,
            "pop_batch": self.pop_batch,
            "sched_opts": dict(self.sched_opts),
            "inline_continuation": self.inline_continuation,
        }


@st.composite
def _knobs(
    draw: st.DrawFn,
    schedulers: Sequence[str],
    workers: tuple[int, int],
    slots: tuple[int, int],
    frames: tuple[int, int],
    pop_batch: tuple[int, int],
) -> Knobs:
    scheduler = draw(st.sampled_from(list(schedulers)))
    options = SCHEDULER_OPTIONS.get(scheduler, {})
    chosen = tuple((key, draw(value)) for key, value in options.items() if draw(st.booleans()))
    return Knobs(
        scheduler=scheduler,
        workers=draw(st.integers(*workers)),
        slots=draw(st.integers(*slots)),
        frames=draw(st.integers(*frames)),
        pop_batch=draw(st.integers(*pop_batch)),
        sched_opts=chosen,
        inline_continuation=draw(st.booleans()),
    )


def knobs(
    *,
    schedulers: Sequence[str] = SCHEDULERS,
    workers: tuple[int, int] = (1, 3),
    slots: tuple[int, int] = (1, 8),
    frames: tuple[int, int] = (1, 6),
    pop_batch: tuple[int, int] = (1, 4),
) -> st.SearchStrategy[Knobs]:
    """Knobs of a run: a scheduler of `schedulers` with some of its options, the counts in the
    given inclusive ranges, and inline continuation on or off."""
    return _knobs(schedulers, workers, slots, frames, pop_batch)


# --- literals -----------------------------------------------------------------------------------

_SIGNED = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "isize": 64, "i128": 128}
_UNSIGNED = {"u8": 8, "u16": 16, "u32": 32, "u64": 64, "usize": 64, "u128": 128}
#: Every element type of the graph format (`tomii.types`), integers first (what shrinking goes to).
_SCALAR_TYPES = (*_UNSIGNED, *_SIGNED, *sorted(_ELEMENT_TYPES - _UNSIGNED.keys() - _SIGNED.keys()))
#: Floats that every JSON reader parses exactly: multiples of 1/16 with few digits (serde_json's
#: default float parsing is not correctly rounded for every long decimal), and exact in f32.
_FLOATS = st.integers(-(10**6), 10**6).map(lambda k: k / 16)
_TEXT = st.text(st.characters(codec="utf-8"), max_size=4)


def _scalar_json(ty: str) -> st.SearchStrategy[Any]:
    """The JSON `value` of a typed literal of scalar type `ty`."""
    if ty in _SIGNED or ty in _UNSIGNED:
        bits = _SIGNED.get(ty) or _UNSIGNED[ty]
        lo, hi = (
            (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if ty in _SIGNED else (0, (1 << bits) - 1)
        )
        values = st.integers(max(lo, 0), min(hi, 9)) | st.integers(lo, hi)
        if bits < 128:
            return values
        # 128-bit values beyond 64 bits must be decimal strings; smaller ones may be too.
        return values.flatmap(
            lambda v: (
                st.just(str(v)) if not -(1 << 63) <= v < (1 << 64) else st.sampled_from([v, str(v)])
            )
        )
    if ty in ("f32", "f64"):
        return _FLOATS
    if ty in ("Complex32", "Complex64"):
        return st.lists(_FLOATS, min_size=2, max_size=2)
    if ty == "bool":
        return st.booleans()
    if ty == "char":
        return st.characters(codec="utf-8")
    return _TEXT


def _typed(ty: str) -> st.SearchStrategy[dict[str, Any]]:
    return _scalar_json(ty).map(lambda value: {"type": ty, "value": value})


def _vector(ty: str) -> st.SearchStrategy[dict[str, Any]]:
    return st.lists(_scalar_json(ty), max_size=3).map(
        lambda items: {"type": f"Vec<{ty}>", "value": items}
    )


def literals() -> st.SearchStrategy[Any]:
    """A literal in JSON: plain (usize, i64, f64, bool, String) or typed, of every scalar type
    and `Vec<T>`; shrinks towards a small plain integer."""
    return st.one_of(
        st.integers(0, 9),
        st.integers(-(1 << 63), (1 << 64) - 1),
        _FLOATS,
        st.booleans(),
        _TEXT,
        st.sampled_from(_SCALAR_TYPES).flatmap(_typed),
        st.sampled_from(_SCALAR_TYPES).flatmap(_vector),
    )


def _count_literal(value: int, *, wide: bool = True) -> st.SearchStrategy[Any]:
    """A non-negative integer literal, plain or of an integer type that holds it (128-bit types
    only if `wide`: kernels reading an unsigned integer take at most 64 bits)."""
    types = [
        t
        for t, bits in {**_UNSIGNED, **_SIGNED}.items()
        if value < (1 << (bits - 1)) and (wide or bits < 128)
    ]
    return st.just(value) | st.sampled_from(types).map(lambda t: {"type": t, "value": value})


# --- graphs -------------------------------------------------------------------------------------

T = TypeVar("T")
_OPERATIONS = ("Eq", "Neq", "Lt", "Le", "Gt", "Ge")
_NAME_SUFFIXES = ("", "-x", " é", "·ß", "/2")


@dataclass(frozen=True)
class _Limits:
    workers: int
    max_nodes: int
    max_factor: int
    max_post_nodes: int
    features: frozenset[str]


class _Builder:
    """Draws one graph. Nodes are made in a topological order (a node reads only nodes made
    before it); initializations are made when an argument first needs them."""

    def __init__(self, draw: st.DrawFn, limits: _Limits) -> None:
        self.draw = draw
        self.limits = limits
        self.has = limits.features.__contains__
        self.inits: list[dict[str, Any]] = []
        #: Computed initializations made so far: name and element count.
        self.computed: list[tuple[str, int]] = []
        self.nodes: list[dict[str, Any]] = []
        self.factors: list[int] = []
        #: Per node: whether it has a condition (its results may be NONE).
        self.conditioned: list[bool] = []

    def span(self, make: Callable[[], T]) -> T:
        """`make()`, its draws grouped into one span that the shrinker may delete whole."""
        outer = self.draw

        @st.composite
        def inner(draw: st.DrawFn) -> T:
            self.draw = draw
            try:
                return make()
            finally:
                self.draw = outer

        return outer(inner())

    def repeat(self, make: Callable[[int], T], low: int, high: int, more: int = 1) -> list[T]:
        """`make(i)` for i = 0, 1, ... between `low` and `high` times, continuing with odds
        `more` : 1, drawn like hypothesis's lists: the shrinker removes any one item by deleting
        its span, and shrinks towards `low` items."""
        items: list[T] = []

        def step() -> bool:
            # Every item's span starts with this draw, even when it is ignored (the first `low`
            # items), so that deleting any item's span leaves the others' draws aligned.
            if self.draw(st.integers(0, more)) == 0 and len(items) >= low:
                return False
            items.append(make(len(items)))
            return True

        while len(items) < high and self.span(step):
            pass
        return items

    def flag(self, feature: str) -> bool:
        """Whether to use `feature` here (shrinks to no)."""
        return self.has(feature) and self.draw(st.booleans())

    # Initializations -------------------------------------------------------------------------

    def var(self, value: Any) -> str:
        """A new literal initialization holding `value` (JSON); returns its name."""
        style = self.draw(st.sampled_from(["v{}", "v-{}"] if self.has("names") else ["v{}"]))
        name = style.format(len(self.inits))
        self.inits.append({"name": name, "value": value})
        return name

    def count(self, value: int) -> Any:
        """A positive count (a factor), written as a number or as a named initialization."""
        if self.flag("refs"):
            return self.var(self.draw(_count_literal(value)))
        return value

    def computed_init(self, readers: int) -> str:
        """A computed initialization a node of `readers` instances may read: an existing one
        or a new one, of one element or of at least `readers`."""
        fits = [name for name, count in self.computed if count == 1 or count >= readers]
        reuse: bool = self.draw(st.booleans())
        if fits and reuse:
            return self.draw(st.sampled_from(fits))
        count = self.draw(st.integers(1, self.limits.max_factor))
        count = 1 if count == 1 else max(count, readers)
        # An element reads element e of a larger initialization: the runtime indexes it without
        # a bounds check, so only initializations of one element or at least `count` are read.
        args = self.repeat(lambda _: self.init_arg(count), 0, 3)
        name = f"c{len(self.inits)}"
        key = self.draw(st.sampled_from(["function", "func"]))
        init: dict[str, Any] = {"name": name, key: "checksum", "args": args}
        if count > 1 or self.draw(st.booleans()):
            init["factor"] = self.count(count)
        self.inits.append(init)
        self.computed.append((name, count))
        return name

    def init_arg(self, count: int) -> Any:
        choice = self.draw(st.integers(0, 3))
        if choice == 1:
            return {"type": "$index"}
        if choice == 2 and self.has("workers"):
            return {"type": "$workers"}
        earlier = [name for name, c in self.computed if c == 1 or c >= count]
        if choice == 3 and earlier:
            return {"type": "$ref", "name": self.draw(st.sampled_from(earlier))}
        return self.draw(literals())

    # Arguments ---------------------------------------------------------------------------------

    def arg(self, preds: int, factor: int) -> Any:
        """One argument of a node with `factor` instances that may read nodes 0..preds-1."""
        choice = self.draw(st.integers(0, 9))
        if choice == 2 and self.has("index"):
            return {"type": "$index"}
        if choice == 3 and self.has("workers"):
            return {"type": "$workers"}
        if choice == 4 and self.has("refs"):
            if self.flag("computed"):
                return {"type": "$ref", "name": self.computed_init(factor)}
            return {"type": "$ref", "name": self.var(self.draw(literals()))}
        kinds = self.edge_kinds()
        if choice >= 5 and preds > 0 and kinds:
            return self.edge(preds, factor, kinds)
        return self.draw(literals()) if self.has("literals") else self.draw(st.integers(0, 9))

    def edge_kinds(self) -> list[str]:
        kinds = (("$res", "res"), ("$dep", "deps"), ("$barrier", "barriers"))
        return [kind for kind, feature in kinds if self.has(feature)]

    def edge(
        self, preds: int, factor: int, kinds: Sequence[str], among: Sequence[int] = ()
    ) -> dict[str, Any]:
        """An edge from one of `among` (default: any of nodes 0..preds-1); one selected
        instance per reader when `kinds` is just "$res" read by a condition."""
        pred = self.draw(st.sampled_from(list(among) or range(preds)))
        kind = self.draw(st.sampled_from(list(kinds)))
        single = bool(among)
        selection = self.selection(factor, self.factors[pred], kind, single)
        return {"type": kind, "predecessor": {"name": self.nodes[pred]["name"], **selection}}

    def selection(self, fs: int, fp: int, kind: str, single: bool) -> dict[str, Any]:
        """A selection of instances of a node of `fp` instances by one of `fs` instances that
        stays inside it (README, "Selections")."""
        options = ["default"] if kind == "$barrier" or fs <= fp else []
        if kind == "$barrier" and single:
            options = []
        wanted = {
            "all": not single,
            "offset": fs <= fp,
            "offsets": fs <= fp and not single,
            "range": fs <= fp and not single,
            "wrap": True,
            "group_by": True,
        }
        features = {"offset": "offsets", "offsets": "offsets", "range": "ranges"}
        options += [o for o, ok in wanted.items() if ok and self.has(features.get(o, o))]
        divisors = [
            g for g in range(1, fp + 1) if fp % g == 0 and fs * g <= fp and (g == 1 or not single)
        ]
        if not divisors and "group_by" in options:
            options.remove("group_by")
        if not options:  # only reachable with features left out
            options = ["all"] if not single else ["wrap"]
        option = self.draw(st.sampled_from(options))
        span = fp - fs  # offsets 0..span stay inside for every reader
        if option == "default":
            return {}
        if option == "all":
            return {"index": "all"}
        if option == "offset":
            return {"index": self.offset_text(self.draw(st.integers(0, span)))}
        if option == "offsets":
            return {"index": self.draw(st.lists(st.integers(0, span), min_size=1, max_size=3))}
        if option == "range":
            a = self.draw(st.integers(0, span))
            return {"index": self.range_text(a, self.draw(st.integers(a + 1, span + 1)))}
        if option == "group_by":
            return {"group_by": self.draw(st.sampled_from(divisors))}
        return {"index": self.wrapped(fp, single), "wrap": True}

    def offset_text(self, k: int) -> Any:
        """Offset k ≥ 0 as an integer, a one-element list, a string or a named initialization."""
        style = self.draw(st.integers(0, 3))
        if style == 3 and self.has("refs"):
            return self.var(self.draw(_count_literal(k)))
        return [k, [k], str(k), k][style]

    def range_text(self, a: int, b: int) -> str:
        bounds = [
            self.var(self.draw(_count_literal(v))) if self.flag("refs") else str(v) for v in (a, b)
        ]
        return self.draw(st.sampled_from(["{}-{}", " {} - {} "])).format(*bounds)

    def wrapped(self, fp: int, single: bool) -> Any:
        """Offsets (any sign) or a range (possibly longer than the node), taken modulo fp."""
        if single or self.draw(st.booleans()):
            offsets = self.draw(
                st.lists(st.integers(-2 * fp, 2 * fp), min_size=1, max_size=1 if single else 3)
            )
            return offsets[0] if len(offsets) == 1 and self.draw(st.booleans()) else offsets
        a = self.draw(st.integers(0, fp))
        return self.range_text(a, self.draw(st.integers(a + 1, a + fp + 1)))

    # Nodes -------------------------------------------------------------------------------------

    def node(self, k: int) -> None:
        """Node k, which may read nodes 0..k-1."""
        factor = self.draw(st.integers(1, self.limits.max_factor))
        suffix = self.draw(st.sampled_from(_NAME_SUFFIXES)) if self.has("names") else ""
        spec: dict[str, Any] = {"name": f"n{k}{suffix}", "function": "checksum"}
        if self.flag("variadic"):
            spec["function"] = "checksum_list"
        if factor > 1 or self.draw(st.booleans()):
            spec["factor"] = self.count(factor)
        args = self.repeat(lambda _: self.arg(k, factor), 0, 4, more=2)
        if args:
            spec["args"] = args
        if self.flag("loops"):
            self.loop(spec, k, factor)
        if self.flag("conditions"):
            spec["condition"] = self.condition(k, factor)
        self.extras(spec, factor)
        self.nodes.append(spec)
        self.factors.append(factor)
        self.conditioned.append("condition" in spec)

    def extras(self, spec: dict[str, Any], factor: int) -> None:
        """group_size, priority, use_workers: they change where and when, never what."""
        if self.flag("group_size"):
            spec["group_size"] = self.draw(st.integers(1, factor + 1))
        if self.flag("priorities"):
            spec["priority"] = self.draw(
                st.sampled_from(["high", "normal", "low"]) | st.integers(-3, 3)
            )
        if self.flag("use_workers"):
            lo = self.draw(st.integers(0, self.limits.workers - 1))
            hi = self.draw(st.integers(lo, self.limits.workers - 1))
            spec["use_workers"] = (
                f"{lo}-{hi}" if lo < hi else self.draw(st.sampled_from([lo, str(lo)]))
            )

    def loop(self, spec: dict[str, Any], k: int, factor: int) -> None:
        iterations = self.draw(st.integers(1, 3))
        spec["loop"] = {"name": f"L{k}", "factor": self.count(iterations)}
        loop_args = self.repeat(lambda _: self.arg(k, factor), 0, 2)
        if loop_args:
            spec["loop_args"] = loop_args

    def condition(self, k: int, factor: int) -> dict[str, Any]:
        """A condition by `modulo` (of $index, $workers, a literal or a never-NONE result) or
        by `checksum` (of any arguments) against a threshold."""
        function = self.draw(st.sampled_from(["modulo", "checksum"]))
        key = self.draw(st.sampled_from(["function", "func"]))
        condition: dict[str, Any] = {
            "operation": self.draw(st.sampled_from(_OPERATIONS)),
            key: function,
        }
        if function == "modulo":
            divisor = self.draw(st.integers(1, 4))
            args = [self.dividend(k, factor), self.draw(_count_literal(divisor, wide=False))]
            args += self.repeat(lambda _: self.order_or_literal(k, factor), 0, 2)
            value: Any = self.draw(st.integers(0, divisor))
            types = [None, "u8", "u64", "usize", "i32", "i64", "f32", "f64"]
            value_type = self.draw(st.sampled_from(types))
            if value_type in ("f32", "f64") and self.draw(st.booleans()):
                value += 0.5
        else:
            args = self.repeat(lambda _: self.arg(k, factor), 0, 2)
            value = self.draw(st.integers(0, 184)) * 10**17
            value_type = self.draw(st.sampled_from([None, "u64", "u128", "i128", "f64"]))
            if value_type == "f64" or (value_type is None and self.draw(st.booleans())):
                value = float(value)
        condition["value"] = value
        if value_type is not None:
            condition["value_type"] = value_type
        condition["args"] = args
        return condition

    def dividend(self, k: int, factor: int) -> Any:
        # A result modulo reads is never NONE (no condition), one per reader.
        never_none = [
            j
            for j in range(k)
            if not self.conditioned[j] and (self.factors[j] >= factor or self.has("wrap"))
        ]
        choice = self.draw(st.integers(0, 3))
        if choice == 1 and self.has("workers"):
            return {"type": "$workers"}
        if choice == 2:
            return self.draw(_count_literal(self.draw(st.integers(0, 20)), wide=False))
        if choice == 3 and never_none and self.has("res"):
            return self.edge(k, factor, ["$res"], among=never_none)
        if self.has("index"):
            return {"type": "$index"}
        return self.draw(_count_literal(self.draw(st.integers(0, 20)), wide=False))

    def order_or_literal(self, k: int, factor: int) -> Any:
        """A further argument `modulo` ignores: an ordering edge or a literal."""
        kinds = [kind for kind in self.edge_kinds() if kind != "$res"]
        if k > 0 and kinds and self.draw(st.booleans()):
            return self.edge(k, factor, kinds)
        return self.draw(literals())

    def post_node(self, p: int) -> dict[str, Any]:
        factor = self.draw(st.integers(1, 3))
        spec: dict[str, Any] = {"name": f"p{p}", "function": "checksum", "factor": factor}
        if self.flag("variadic"):
            spec["function"] = "checksum_list"
        spec["args"] = self.repeat(lambda _: self.arg(len(self.nodes), factor), 0, 3)
        return spec

    def graph(self) -> dict[str, Any]:
        self.repeat(self.node, 1, self.limits.max_nodes, more=9)
        posts = self.limits.max_post_nodes if self.has("post_nodes") else 0
        post_nodes = self.repeat(self.post_node, 0, posts)
        order = self.draw(st.permutations(range(len(self.nodes))))
        graph: dict[str, Any] = {"nodes": [self.nodes[k] for k in order]}
        if self.inits:
            graph["initializations"] = self.inits
        if post_nodes:
            graph["post_nodes"] = post_nodes
        return graph


@st.composite
def _graphs(draw: st.DrawFn, limits: _Limits) -> dict[str, Any]:
    return _Builder(draw, limits).graph()


def graphs(
    *,
    workers: int = 1,
    max_nodes: int = 8,
    max_factor: int = 6,
    max_post_nodes: int = 2,
    features: Collection[str] = FEATURES,
) -> st.SearchStrategy[dict[str, Any]]:
    """Valid graphs (dicts of the graph format) of at most `max_nodes` nodes of at most
    `max_factor` instances, using only `features` (see FEATURES), that run on `workers` workers
    or more, with the synthetic kernels `checksum`, `checksum_list` and `modulo`."""
    unknown = set(features) - FEATURES
    if unknown:
        raise ValueError(f"unknown features {sorted(unknown)}; the features are {sorted(FEATURES)}")
    if workers < 1 or max_nodes < 1 or max_factor < 1 or max_post_nodes < 0:
        raise ValueError("workers, max_nodes and max_factor must be positive")
    return _graphs(_Limits(workers, max_nodes, max_factor, max_post_nodes, frozenset(features)))


@st.composite
def _runs(
    draw: st.DrawFn, knob_strategy: st.SearchStrategy[Knobs], options: dict[str, Any]
) -> tuple[dict[str, Any], Knobs]:
    run = draw(knob_strategy)
    return draw(graphs(workers=run.workers, **options)), run


def runs(
    *, schedulers: Sequence[str] = SCHEDULERS, **graph_options: Any
) -> st.SearchStrategy[tuple[dict[str, Any], Knobs]]:
    """A graph and the knobs to run it with (its worker ranges fit the knobs' workers);
    `graph_options` are those of `graphs` except `workers`."""
    return _runs(knobs(schedulers=schedulers), graph_options)
