"""Generators for a standard set of streaming task graphs, and the per-frame bounds of any graph.

Each generator returns a graph-format dict (tomii-core/src/graph/README.md), JSON-ready, with a
name that repeats the call that made it. Kernels come from plugins/synthetic: a node costs what its
`Cost` distribution drew for it at generation time (seeded), run by `spin` for that many µs
(`noop` when it drew 0), or by `checksum` with `kernel="checksum"` so that outputs can be checked.
`critical_path_us` and `total_work_us` read the spin arguments back. Nothing here runs a graph.

Real workloads join them as `Workload`s: a graph of real kernels with its kernel libraries and,
once measured on this machine, the cost model a simulation of it draws task durations from.
`workloads(directory, ...)` loads them from example directories (examples/cholesky and the like:
each holds a `workload.py`).

Costs are drawn once per node: spin's argument is a literal shared by a node's instances, and no
synthetic kernel can hand each instance its own value. Where tasks differ (layered_random, the
"cell" wavefront) every task is a node of its own, with its own draw.
"""

from __future__ import annotations

import importlib.util
import math
import random
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Literal, Union

from .errors import ConfigError

__all__ = [
    "Cost",
    "CostSpec",
    "Fixed",
    "LogNormal",
    "Uniform",
    "Workload",
    "critical_path_us",
    "fork_join",
    "layered_random",
    "map_reduce",
    "mimo_uplink",
    "standard_set",
    "streaming_pipeline",
    "total_work_us",
    "wavefront",
    "workloads",
]

# ---------------------------------------------------------------------------------------------
# Costs


def _check_us(owner: str, field: str, value: object, *, positive: bool = False) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{owner}: {field} must be a number, got {type(value).__name__}")
    if not math.isfinite(value) or value < 0 or (positive and value == 0):
        bound = "positive" if positive else "non-negative"
        raise ValueError(f"{owner}: {field} must be finite and {bound}, got {value}")


@dataclass(frozen=True)
class Fixed:
    """Every node costs `us` microseconds."""

    us: float

    def __post_init__(self) -> None:
        _check_us("Fixed", "us", self.us)

    @property
    def mean_us(self) -> float:
        return float(self.us)

    def sample(self, rng: random.Random) -> int:
        """One draw, rounded to whole microseconds (the unit of `spin`)."""
        return round(self.us)

    def __str__(self) -> str:
        return f"Fixed({self.us:g})"


@dataclass(frozen=True)
class Uniform:
    """A cost drawn uniformly between `lo_us` and `hi_us` microseconds."""

    lo_us: float
    hi_us: float

    def __post_init__(self) -> None:
        _check_us("Uniform", "lo_us", self.lo_us)
        _check_us("Uniform", "hi_us", self.hi_us)
        if self.hi_us < self.lo_us:
            raise ValueError(f"Uniform: hi_us {self.hi_us} is below lo_us {self.lo_us}")

    @property
    def mean_us(self) -> float:
        return (self.lo_us + self.hi_us) / 2

    def sample(self, rng: random.Random) -> int:
        """One draw, rounded to whole microseconds (the unit of `spin`)."""
        return round(self.lo_us + (self.hi_us - self.lo_us) * rng.random())

    def __str__(self) -> str:
        return f"Uniform({self.lo_us:g},{self.hi_us:g})"


@dataclass(frozen=True)
class LogNormal:
    """A cost whose logarithm is normal: median `median_us` microseconds, log-scale deviation
    `sigma` (the mean is `median_us * exp(sigma**2 / 2)`); heavy-tailed as sigma grows."""

    median_us: float
    sigma: float

    def __post_init__(self) -> None:
        _check_us("LogNormal", "median_us", self.median_us, positive=True)
        _check_us("LogNormal", "sigma", self.sigma)

    @property
    def mean_us(self) -> float:
        return self.median_us * math.exp(self.sigma**2 / 2)

    def sample(self, rng: random.Random) -> int:
        """One draw, rounded to whole microseconds (the unit of `spin`)."""
        # Box-Muller on Random.random(), whose sequence per seed Python keeps stable.
        u1, u2 = rng.random(), rng.random()
        z = math.sqrt(-2.0 * math.log(1.0 - u1)) * math.cos(2.0 * math.pi * u2)
        return round(self.median_us * math.exp(self.sigma * z))

    def __str__(self) -> str:
        return f"LogNormal({self.median_us:g},{self.sigma:g})"


#: A cost distribution.
Cost = Union[Fixed, Uniform, LogNormal]
#: One distribution for every node, or one per role (the roles a generator documents; a role the
#: mapping leaves out costs 0).
CostSpec = Union[Fixed, Uniform, LogNormal, Mapping[str, Union[Fixed, Uniform, LogNormal]]]
#: The kernel of every node: `spin` (`noop` where the cost drew 0) or `checksum`.
Kernel = Literal["spin", "checksum"]

_COSTS = (Fixed, Uniform, LogNormal)
_ZERO = Fixed(0)


def _costs_by_role(cost: CostSpec, roles: Sequence[str], shape: str) -> dict[str, Cost]:
    if isinstance(cost, _COSTS):
        return {role: cost for role in roles}
    if not isinstance(cost, Mapping):
        raise TypeError(
            f"{shape}: cost must be Fixed, Uniform, LogNormal or a mapping of roles to them, "
            f"got {type(cost).__name__}"
        )
    unknown = sorted(set(cost) - set(roles))
    if unknown:
        raise ValueError(f"{shape}: cost names unknown roles {unknown}; its roles: {list(roles)}")
    for role, each in cost.items():
        if not isinstance(each, _COSTS):
            raise TypeError(f"{shape}: cost of role {role!r} must be Fixed, Uniform or LogNormal")
    return {role: cost.get(role, _ZERO) for role in roles}


def _describe(cost: CostSpec) -> str:
    if isinstance(cost, _COSTS):
        return str(cost)
    return "{" + ",".join(f"{role}:{each}" for role, each in cost.items()) + "}"


# ---------------------------------------------------------------------------------------------
# Building graphs


def _edge(pred: str, index: Any = None, *, wrap: bool = False) -> dict[str, Any]:
    """A `$res` argument from `pred`: instance i reads `index` (default: offset 0)."""
    predecessor: dict[str, Any] = {"name": pred}
    if index is not None:
        predecessor["index"] = index
    if wrap:
        predecessor["wrap"] = True
    return {"type": "$res", "predecessor": predecessor}


class _Builder:
    """Collects the nodes of one generated graph, drawing each node's cost as it is added."""

    def __init__(
        self, shape: str, roles: Sequence[str], cost: CostSpec, seed: int, kernel: str
    ) -> None:
        _check_int(shape, "seed", seed, low=None)
        if kernel not in ("spin", "checksum"):
            raise ValueError(f"{shape}: kernel must be 'spin' or 'checksum', got {kernel!r}")
        self.shape = shape
        self.costs = _costs_by_role(cost, roles, shape)
        self.cost = cost
        self.seed = seed
        self.kernel = kernel
        self.rng = random.Random(f"tomii.graphs cost {seed}")
        self.nodes: list[dict[str, Any]] = []

    def node(self, name: str, role: str, factor: int, edges: Sequence[dict[str, Any]]) -> None:
        us = self.costs[role].sample(self.rng)
        function = "noop" if self.kernel == "spin" and us == 0 else self.kernel
        args = list(edges) if function == "noop" else [us, *edges]
        self.nodes.append({"name": name, "function": function, "factor": factor, "args": args})

    def graph(self, params: Mapping[str, object]) -> dict[str, Any]:
        described = [f"{key}={value}" for key, value in params.items()]
        described += [f"cost={_describe(self.cost)}", f"seed={self.seed}"]
        if self.kernel != "spin":
            described.append(f"kernel={self.kernel}")
        return {"name": f"{self.shape}({','.join(described)})", "nodes": self.nodes}


def _check_int(shape: str, name: str, value: object, *, low: int | None = 1) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{shape}: {name} must be an int, got {type(value).__name__}")
    if low is not None and value < low:
        raise ValueError(f"{shape}: {name} must be at least {low}, got {value}")


def _check_fraction(shape: str, name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{shape}: {name} must be a number, got {type(value).__name__}")
    if not 0 <= value <= 1:
        raise ValueError(f"{shape}: {name} must be between 0 and 1, got {value}")


# ---------------------------------------------------------------------------------------------
# Generators


def streaming_pipeline(
    width: int = 256, *, cost: CostSpec = _ZERO, seed: int = 0, kernel: Kernel = "spin"
) -> dict[str, Any]:
    """Tomii 1.2's own benchmark shape: ingest → transform (1:1) → aggregate → emit.

    Nodes: `ingest` (factor `width`, roots), `transform` (factor `width`, instance i reads ingest
    i), `aggregate` (factor 1, reads every transform instance), `emit` (factor 1, reads
    aggregate). 2·width + 2 tasks per frame. Roles for `cost`: the node names.
    """
    _check_int("streaming_pipeline", "width", width)
    build = _Builder(
        "streaming_pipeline", ("ingest", "transform", "aggregate", "emit"), cost, seed, kernel
    )
    build.node("ingest", "ingest", width, [])
    build.node("transform", "transform", width, [_edge("ingest")])
    build.node("aggregate", "aggregate", 1, [_edge("transform", "all")])
    build.node("emit", "emit", 1, [_edge("aggregate")])
    return build.graph({"width": width})


def _diagonal_rows(d: int, rows: int, cols: int) -> tuple[int, int]:
    """The first and last row of the cells (i, d − i) of anti-diagonal d."""
    return max(0, d - cols + 1), min(d, rows - 1)


def wavefront(
    rows: int,
    cols: int,
    *,
    encoding: Literal["diagonal", "cell"] = "diagonal",
    cost: CostSpec = _ZERO,
    seed: int = 0,
    kernel: Kernel = "spin",
) -> dict[str, Any]:
    """A rows × cols wavefront: cell (i, j) reads cells (i − 1, j) and (i, j − 1).

    A selection must stay inside its predecessor for every instance, and `wrap` would close a
    cycle, so neither one node of factor rows·cols reading itself at offsets −cols and −1 nor one
    node per row reading itself at −1 can be written: both fail at row 0 or column 0. Two
    encodings (role for `cost`: `cell`; one cost per node):

    - `"diagonal"` (default): one node `diag{d}` per anti-diagonal d = i + j (rows + cols − 1
      nodes); instance k is the cell of row `max(0, d − cols + 1) + k`. It reads `diag{d-1}` at
      offsets [Δ − 1, Δ] with `wrap` (Δ = 1 once the diagonal's first row moves down, else 0):
      every interior cell reads exactly its two neighbours. A cell on row 0 or column 0 has one
      neighbour, and the wrapped offset adds one extra dependency on the far end of the previous
      diagonal: at most two extra edges per diagonal. Every edge still goes from diagonal d − 1
      to d, so the depth (rows + cols − 1 tasks) and each diagonal's width are exact; with one
      cost per diagonal, so is the critical path.
    - `"cell"`: one node `cell{i}_{j}` of factor 1 per cell (rows·cols nodes), reading exactly
      its neighbours: exact dependencies, one cost draw per cell, but no node has instances.
    """
    for name, value in (("rows", rows), ("cols", cols)):
        _check_int("wavefront", name, value)
    if encoding not in ("diagonal", "cell"):
        raise ValueError(f"wavefront: encoding must be 'diagonal' or 'cell', got {encoding!r}")
    build = _Builder("wavefront", ("cell",), cost, seed, kernel)
    if encoding == "cell":
        for i in range(rows):
            for j in range(cols):
                up = [_edge(f"cell{i - 1}_{j}")] if i > 0 else []
                left = [_edge(f"cell{i}_{j - 1}")] if j > 0 else []
                build.node(f"cell{i}_{j}", "cell", 1, up + left)
    else:
        for d in range(rows + cols - 1):
            first, last = _diagonal_rows(d, rows, cols)
            edges = []
            if d > 0:
                delta = first - _diagonal_rows(d - 1, rows, cols)[0]
                edges = [_edge(f"diag{d - 1}", [delta - 1, delta], wrap=True)]
            build.node(f"diag{d}", "cell", last - first + 1, edges)
    return build.graph({"rows": rows, "cols": cols, "encoding": encoding})


def fork_join(
    width: int, depth: int, *, cost: CostSpec = _ZERO, seed: int = 0, kernel: Kernel = "spin"
) -> dict[str, Any]:
    """`depth` fork-join stages in a row: fork → work0 → join0 → work1 → … → join{depth-1}.

    `fork` and every `join{s}` have factor 1; `work{s}` has factor `width`, every instance reading
    the node before it (`fork` or `join{s-1}`), and `join{s}` reads every `work{s}` instance.
    1 + 2·depth nodes, 1 + depth·(width + 1) tasks. Roles for `cost`: `fork`, `work`, `join`.
    """
    _check_int("fork_join", "width", width)
    _check_int("fork_join", "depth", depth)
    build = _Builder("fork_join", ("fork", "work", "join"), cost, seed, kernel)
    build.node("fork", "fork", 1, [])
    for s in range(depth):
        before = "fork" if s == 0 else f"join{s - 1}"
        build.node(f"work{s}", "work", width, [_edge(before, "all")])
        build.node(f"join{s}", "join", 1, [_edge(f"work{s}", "all")])
    return build.graph({"width": width, "depth": depth})


def layered_random(
    layers: int,
    width: int,
    density: float = 0.5,
    regularity: float = 0.5,
    jumps: int = 0,
    *,
    seed: int = 0,
    cost: CostSpec = _ZERO,
    kernel: Kernel = "spin",
) -> dict[str, Any]:
    """A random layered DAG in the manner of daggen (Suter), the same for the same seed.

    Layer l has `round(width · (1 + (1 − regularity) · u))` tasks, u uniform in [−1, 1], at least
    1 (regularity 1: every layer has `width`). A task of layer l ≥ 1 gets each task of layers
    l − 1 − jumps … l − 1 as a parent with probability `density` (jumps 0: consecutive layers
    only), and one parent of layer l − 1 drawn uniformly if it drew none there, so the DAG has
    exactly `layers` levels. Random edges cannot be written as offsets, so every task is its own
    node `t{l}_{k}` (factor 1, one cost draw each) reading its parents, nearest layer last.
    Role for `cost`: `task`. The structure and the costs use separate streams: the same seed gives
    the same DAG whatever the cost.
    """
    for name, value, low in (("layers", layers, 1), ("width", width, 1), ("jumps", jumps, 0)):
        _check_int("layered_random", name, value, low=low)
    _check_fraction("layered_random", "density", density)
    _check_fraction("layered_random", "regularity", regularity)
    build = _Builder("layered_random", ("task",), cost, seed, kernel)
    rng = random.Random(f"tomii.graphs structure {seed}")
    sizes = [
        max(1, round(width * (1 + (1 - regularity) * (2 * rng.random() - 1))))
        for _ in range(layers)
    ]
    for layer, size in enumerate(sizes):
        for k in range(size):
            parents = _parents(rng, sizes, layer, density, jumps)
            edges = [_edge(f"t{above}_{p}") for above, p in parents]
            build.node(f"t{layer}_{k}", "task", 1, edges)
    params: dict[str, object] = {"layers": layers, "width": width, "density": density}
    return build.graph({**params, "regularity": regularity, "jumps": jumps})


def _parents(
    rng: random.Random, sizes: Sequence[int], layer: int, density: float, jumps: int
) -> list[tuple[int, int]]:
    """The parents (layer, index) of one task of `layer`, drawn as `layered_random` says."""
    parents = [
        (above, k)
        for above in range(max(0, layer - 1 - jumps), layer)
        for k in range(sizes[above])
        if rng.random() < density
    ]
    if layer > 0 and not any(above == layer - 1 for above, _ in parents):
        parents.append((layer - 1, int(rng.random() * sizes[layer - 1])))
    return parents


def mimo_uplink(
    antennas: int,
    subcarrier_groups: int,
    users: int,
    *,
    cost: CostSpec = _ZERO,
    seed: int = 0,
    kernel: Kernel = "spin",
    network: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A massive-MIMO uplink frame: per-antenna FFT → channel estimate → beamform → demodulate.

    `fft` (factor `antennas`, roots); `chest` (factor `subcarrier_groups`): every instance reads
    every FFT instance, the barrier of the shape, since estimating a group's channel needs every
    antenna; `beamform` (factor `subcarrier_groups`, instance g reads chest g); `demod` (factor
    `users`): every instance reads every beamform group, as a user's stream spans all
    subcarriers. antennas + 2·groups + users tasks. Roles for `cost`: the node names.

    With `network` (a `network_config` block without `frame_packets`, e.g.
    `{"start_port": 9500, "packet_length": 1024}`), each frame is made of `antennas` packets, one
    per antenna: `fft` instance i reads packet i (`$network`) and starts when it arrives.
    """
    _check_int("mimo_uplink", "antennas", antennas)
    _check_int("mimo_uplink", "subcarrier_groups", subcarrier_groups)
    _check_int("mimo_uplink", "users", users)
    build = _Builder("mimo_uplink", ("fft", "chest", "beamform", "demod"), cost, seed, kernel)
    build.node("fft", "fft", antennas, [] if network is None else [_edge("$network")])
    build.node("chest", "chest", subcarrier_groups, [_edge("fft", "all")])
    build.node("beamform", "beamform", subcarrier_groups, [_edge("chest")])
    build.node("demod", "demod", users, [_edge("beamform", "all")])
    params = {"antennas": antennas, "subcarrier_groups": subcarrier_groups, "users": users}
    graph = build.graph(params)
    if network is not None:
        if "frame_packets" in network or "stream_packets" in network:
            raise ValueError(
                "mimo_uplink: network sets its own frame_packets (one packet per antenna)"
            )
        graph["network_config"] = {**network, "frame_packets": antennas}
    return graph


def map_reduce(
    mappers: int, reducers: int, *, cost: CostSpec = _ZERO, seed: int = 0, kernel: Kernel = "spin"
) -> dict[str, Any]:
    """Map, then an all-to-all shuffle into reduce.

    `map` (factor `mappers`, roots); `reduce` (factor `reducers`): every instance reads every map
    instance (its partition of each). mappers + reducers tasks, mappers·reducers edges. Roles for
    `cost`: `map`, `reduce`.
    """
    _check_int("map_reduce", "mappers", mappers)
    _check_int("map_reduce", "reducers", reducers)
    build = _Builder("map_reduce", ("map", "reduce"), cost, seed, kernel)
    build.node("map", "map", mappers, [])
    build.node("reduce", "reduce", reducers, [_edge("map", "all")])
    return build.graph({"mappers": mappers, "reducers": reducers})


def standard_set(
    scale: Literal["small", "medium"] = "small",
    *,
    cost: Cost = _ZERO,
    seed: int = 0,
    kernel: Kernel = "spin",
) -> list[dict[str, Any]]:
    """One graph of each generator, sized for a 2-core machine.

    `small` (12 to 66 tasks a frame: 100 frames of each take well under a second with cost 0):
    streaming_pipeline(32), wavefront(8, 8), fork_join(8, 3), layered_random(5, 6, 0.3, 0.5, 1),
    mimo_uplink(8, 4, 4), map_reduce(8, 4). `medium` (80 to 580 tasks a frame):
    streaming_pipeline(256) (Tomii 1.2's benchmark), wavefront(24, 24), fork_join(32, 8),
    layered_random(10, 16, 0.25, 0.5, 1), mimo_uplink(64, 32, 16), map_reduce(64, 16).
    """
    if scale not in ("small", "medium"):
        raise ValueError(f"standard_set: scale must be 'small' or 'medium', got {scale!r}")
    if not isinstance(cost, _COSTS):
        raise TypeError("standard_set: cost must be one Fixed, Uniform or LogNormal")
    small = scale == "small"
    options: dict[str, Any] = {"cost": cost, "seed": seed, "kernel": kernel}
    return [
        streaming_pipeline(32 if small else 256, **options),
        wavefront(*((8, 8) if small else (24, 24)), **options),
        fork_join(*((8, 3) if small else (32, 8)), **options),
        layered_random(*((5, 6, 0.3, 0.5, 1) if small else (10, 16, 0.25, 0.5, 1)), **options),
        mimo_uplink(*((8, 4, 4) if small else (64, 32, 16)), **options),
        map_reduce(*((8, 4) if small else (64, 16)), **options),
    ]


# ---------------------------------------------------------------------------------------------
# Real workloads


@dataclass(frozen=True)
class Workload:
    """A graph of real kernels, as a sweep takes it in its `graphs`.

    `graph`: the graph-format dict (its "name" names the workload in a sweep's rows). `dylibs`:
    the kernel libraries it runs on (a real run uses these instead of the sweep's). `cost_model`:
    what a simulation of it draws each task's duration from (`tomii.simulate`'s cost_model, the
    JSON form); None until measured: a simulating sweep then measures it first, from a traced
    run on one worker of this machine (`tomii.experiments.measure_costs`). `mechanism`: in a
    sentence, what should make schedulers differ on it; a sweep's table prints it under the
    workload's verdict. `run_options`: run_graph options the workload needs in every trial (a
    sweep's knobs override them)."""

    graph: Mapping[str, Any]
    dylibs: tuple[str, ...] = ()
    cost_model: Mapping[str, Any] | None = None
    mechanism: str = ""
    run_options: Mapping[str, Any] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return str(self.graph.get("name") or "workload")


#: The function a workload directory's workload.py defines.
_WORKLOAD_FUNCTION = "workload"


def workloads(*directories: str | Path, scale: str = "small") -> list[Workload]:
    """The workloads of `directories`, in order: each directory's `workload.py` defines
    `workload(scale: str) -> Workload` ("small": sized for a sweep on a 2-core machine; each
    workload documents its other scales), which builds its kernels and its graph. The file runs
    with its directory first on sys.path, so that it imports its siblings (graph.py and the
    like); the modules it imported from there are forgotten afterwards, so that two workloads
    may each have a graph.py. Raises ConfigError naming the directory when it holds no
    workload.py, or when `workload` is missing or returns something else."""
    return [_load_workload(Path(directory), scale) for directory in directories]


def _load_workload(directory: Path, scale: str) -> Workload:
    path = directory.resolve() / "workload.py"
    if not path.is_file():
        raise ConfigError(f"{directory}: no workload.py here; a workload directory defines one")
    before = set(sys.modules)
    sys.path.insert(0, str(path.parent))
    try:
        spec = importlib.util.spec_from_file_location(f"_tomii_workload_{path.parent.name}", path)
        assert spec is not None and spec.loader is not None  # a .py file always has one
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses and the like look their module up
        spec.loader.exec_module(module)
        make = getattr(module, _WORKLOAD_FUNCTION, None)
        if not callable(make):
            raise ConfigError(f"{path}: defines no function {_WORKLOAD_FUNCTION}(scale)")
        made = make(scale)
    finally:
        sys.path.remove(str(path.parent))
        for name in set(sys.modules) - before:
            where = getattr(sys.modules[name], "__file__", None) or ""
            if name == f"_tomii_workload_{path.parent.name}" or Path(where).parent == path.parent:
                del sys.modules[name]
    if not isinstance(made, Workload):
        raise ConfigError(
            f"{path}: {_WORKLOAD_FUNCTION}({scale!r}) returned {type(made).__name__}, "
            "not a tomii.graphs.Workload"
        )
    return made


# ---------------------------------------------------------------------------------------------
# Bounds


def critical_path_us(graph: Mapping[str, Any]) -> float:
    """The longest chain of one frame's tasks, in µs: the sum of the spin arguments along the
    heaviest path of instance-level dependencies (what the graph's selections select).

    A `spin` instance costs its first argument (a literal or a `$ref` to a literal
    initialization) times its loop factor; every other kernel costs 0. A `group_size` group is
    one task costing the sum of its members. Conditions are taken as true and post-nodes, which
    run once after the last frame, are left out. No schedule of a frame finishes sooner.
    """
    units = _units(_tasks(graph), graph)
    finish: dict[int, float] = {}
    for unit in _topological(units):
        cost, preds = units[unit]
        finish[unit] = cost + max((finish[p] for p in preds), default=0.0)
    return max(finish.values(), default=0.0)


def total_work_us(graph: Mapping[str, Any]) -> float:
    """The spin time of one frame's tasks, in µs, counted as `critical_path_us` counts it: no
    schedule on w workers finishes a frame sooner than total_work_us / w."""
    return float(sum(task.cost_us for task in _tasks(graph)))


@dataclass(frozen=True)
class _Task:
    """One instance of a node, as the runtime compiles it (instance id = position in the list)."""

    node: str
    index: int
    cost_us: int
    #: Instances whose results the kernel receives through `$res` in `args`, in argument order.
    results: tuple[int, ...]
    #: Distinct predecessor instances over every edge of the node, ascending.
    preds: tuple[int, ...]


_INT_TYPES = {"i8", "i16", "i32", "i64", "isize", "u8", "u16", "u32", "u64", "usize"}
_EDGES = ("$res", "$dep", "$barrier")


def _tasks(graph: Mapping[str, Any]) -> list[_Task]:
    """Every instance of one frame, in the runtime's order, with its cost and its predecessors."""
    nodes = graph.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        raise ValueError("the graph has no nodes: give a non-empty list 'nodes'")
    inits = _literal_inits(graph)
    factors = {node["name"]: _factor(node, inits) for node in nodes}
    first: dict[str, int] = {}
    total = 0
    for node in nodes:
        first[node["name"]], total = total, total + factors[node["name"]]
    tasks: list[_Task] = []
    for node in nodes:
        name = node["name"]
        # Inputs and the network's packets are given to the frame: no task, no cost.
        edges = [
            _parse_edge(name, edge, inits, factors)
            for edge in _edge_args(node)
            if edge[0]["predecessor"]["name"] in factors
        ]
        cost = _spin_us(node, inits) * _iterations(node, inits)
        for i in range(factors[name]):
            results: list[int] = []
            preds: set[int] = set()
            for pred, selects, is_result in edges:
                chosen = [first[pred] + k for k in selects(i)]
                preds.update(chosen)
                results += chosen if is_result else []
            tasks.append(_Task(name, i, cost, tuple(results), tuple(sorted(preds))))
    return tasks


def _units(tasks: Sequence[_Task], graph: Mapping[str, Any]) -> dict[int, tuple[float, set[int]]]:
    """What runs as one task: each instance, or each group of `group_size` instances (keyed by
    its first instance), with its cost and the units it waits for."""
    sizes = {node["name"]: int(node.get("group_size") or 1) for node in graph["nodes"]}
    leader = [
        id_ - task.index + task.index // sizes[task.node] * sizes[task.node]
        for id_, task in enumerate(tasks)
    ]
    units: dict[int, tuple[float, set[int]]] = {}
    for id_, task in enumerate(tasks):
        cost, preds = units.get(leader[id_], (0.0, set()))
        preds.update(leader[p] for p in task.preds)
        preds.discard(leader[id_])
        units[leader[id_]] = (cost + task.cost_us, preds)
    return units


def _topological(units: Mapping[int, tuple[float, set[int]]]) -> list[int]:
    waiting = {unit: len(preds) for unit, (_, preds) in units.items()}
    succs: dict[int, list[int]] = {unit: [] for unit in units}
    for unit, (_, preds) in units.items():
        for pred in preds:
            succs[pred].append(unit)
    order = [unit for unit, count in waiting.items() if count == 0]
    for unit in order:
        for succ in succs[unit]:
            waiting[succ] -= 1
            if waiting[succ] == 0:
                order.append(succ)
    if len(order) != len(units):
        raise ValueError("the graph has a cycle between instances")
    return order


def _int_literal(value: object) -> int | None:
    """The integer a literal holds, or None when it holds something else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, Mapping) and value.get("type") in _INT_TYPES | {"i128", "u128"}:
        inner = value.get("value")
        if isinstance(inner, str) and re.fullmatch(r"-?\d+", inner):
            return int(inner)
        return inner if isinstance(inner, int) and not isinstance(inner, bool) else None
    return None


def _literal_inits(graph: Mapping[str, Any]) -> dict[str, int | None]:
    """Initializations by name: the integer of a literal one, None for any other (computed ones
    are only known when the run starts)."""
    inits = graph.get("initializations") or []
    return {init["name"]: _int_literal(init.get("value")) for init in inits}


def _named_int(text: str, inits: Mapping[str, int | None], what: str) -> int:
    value = inits.get(text)
    if value is None:
        raise ValueError(f"{what}: {text!r} is not an initialization holding an integer")
    return value


def _factor(node: Mapping[str, Any], inits: Mapping[str, int | None]) -> int:
    factor = node.get("factor", 1)
    if isinstance(factor, str):
        factor = _named_int(factor, inits, f"node {node['name']!r} factor")
    if isinstance(factor, bool) or not isinstance(factor, int) or factor < 1:
        raise ValueError(f"node {node['name']!r}: factor {factor!r} is not a positive integer")
    return factor


def _iterations(node: Mapping[str, Any], inits: Mapping[str, int | None]) -> int:
    loop = node.get("loop")
    if not loop:
        return 1
    count = loop.get("factor")
    if isinstance(count, str):
        return _named_int(count, inits, f"node {node['name']!r} loop factor")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise ValueError(f"node {node['name']!r}: loop factor {count!r} is not a positive integer")
    return count


def _spin_us(node: Mapping[str, Any], inits: Mapping[str, int | None]) -> int:
    """What one call of the node's kernel costs: spin's first argument, else 0."""
    if node.get("function") != "spin":
        return 0
    args = node.get("args") or []
    first = args[0] if args else None
    if isinstance(first, Mapping) and first.get("type") == "$ref":
        return _named_int(str(first.get("name")), inits, f"spin node {node['name']!r} argument 0")
    us = _int_literal(first)
    if us is None or us < 0:
        raise ValueError(f"spin node {node['name']!r}: argument 0 is not a count of microseconds")
    return us


def _edge_args(node: Mapping[str, Any]) -> Iterable[tuple[Mapping[str, Any], bool]]:
    """Every edge argument of the node, and whether the kernel receives its results."""
    condition = node.get("condition") or {}
    groups = ((node.get("args"), True), (node.get("loop_args"), False))
    for args, in_args in (*groups, (condition.get("args"), False)):
        for arg in args or []:
            if isinstance(arg, Mapping) and arg.get("type") in _EDGES:
                yield arg, in_args and arg["type"] == "$res"


Selects = Callable[[int], Sequence[int]]


def _parse_edge(
    node: str,
    edge: tuple[Mapping[str, Any], bool],
    inits: Mapping[str, int | None],
    factors: Mapping[str, int],
) -> tuple[str, Selects, bool]:
    """(predecessor, instance i → the predecessor instances it selects, results passed?)."""
    arg, is_result = edge
    pred = arg["predecessor"]
    name = pred["name"]
    if name not in factors:
        raise ValueError(f"node {node!r}: predecessor {name!r} is not a node of this graph")
    n = factors[name]
    if "group_by" in pred:
        g = int(pred["group_by"])
        return name, lambda i: range(i * g, i * g + g), is_result
    if pred.get("rule") is not None:
        raise ValueError(
            f'node {node!r} reads {name!r} with "rule": {pred["rule"]!r}, decided when the graph '
            "compiles; write the selection out (tomii convert) first"
        )
    found = _offsets(pred, arg["type"], inits)
    if found is None:
        return name, lambda i: range(n), is_result
    offsets, wrap = found, pred.get("wrap") is True
    if pred.get("absolute") is True:
        if any(not 0 <= k < n for k in offsets):
            raise ValueError(f"node {node!r} selects outside {name!r} (0..{n - 1})")
        return name, lambda i: offsets, is_result

    def selects(i: int) -> Sequence[int]:
        chosen = [(i + k) % n if wrap else i + k for k in offsets]
        if any(not 0 <= k < n for k in chosen):
            raise ValueError(f"node {node!r} instance {i} selects outside {name!r} (0..{n - 1})")
        return chosen

    return name, selects, is_result


def _offsets(
    pred: Mapping[str, Any], kind: str, inits: Mapping[str, int | None]
) -> list[int] | None:
    """The offsets an `index` selects, or None for every instance."""
    index = pred.get("index")
    if index is None:
        return None if kind == "$barrier" else [0]
    if isinstance(index, list):
        return [int(k) for k in index]
    if isinstance(index, int) and not isinstance(index, bool):
        return [index]
    text = str(index)
    if text == "all":
        return None
    if re.fullmatch(r"[+-]?\d+", text):
        return [int(text)]
    if text in inits:
        return [_named_int(text, inits, f"index {text!r}")]
    for at in (m.start() for m in re.finditer("-", text)):
        low, high = _bound(text[:at], inits), _bound(text[at + 1 :], inits)
        if low is not None and high is not None:
            if high <= low:
                raise ValueError(f"index {text!r}: the range is empty")
            return list(range(low, high))
    raise ValueError(f"index {text!r} is not an offset, a range, 'all' or an initialization")


def _bound(text: str, inits: Mapping[str, int | None]) -> int | None:
    """A range bound: a non-negative integer or an initialization holding one."""
    text = text.strip()
    value = int(text) if re.fullmatch(r"\d+", text) else inits.get(text)
    return value if value is not None and value >= 0 else None
