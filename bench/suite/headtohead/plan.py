"""What the suite measures: the workloads W1–W6 with their kernels, frames and slots, the real
workloads W7–W9 (examples' C kernels), and the METG sweep, for a full or a --quick invocation.

Only the plan lives here: how a configuration is built is workloads.py, how it runs is runtimes.py.
Changing a size here changes the published table: update bench/README.md "Head-to-head" with it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from . import workloads
from .workloads import Json

#: Every runtime runs with this many worker threads.
WORKERS = 2


@dataclass(frozen=True)
class Shape:
    """A workload: its key (W1…W6), what the table calls it, and its graph for a kernel of `us`."""

    key: str
    title: str
    build: Callable[[int], Json]
    multi_frame: bool = False


SHAPES = {
    shape.key: shape
    for shape in (
        Shape("W1", "chain of 10,000 tasks", lambda us: workloads.chain(10_000, us)),
        Shape("W2", "fan-out 1 → 10,000 → 1", lambda us: workloads.fan_out(10_000, us)),
        Shape(
            "W3",
            "layered random DAG, 100 layers × 100 tasks, 1–4 predecessors",
            lambda us: workloads.layered(100, 100, us),
        ),
        Shape(
            "W4",
            "pipeline, 4 stages × 16 instances, 1:1 edges",
            lambda us: workloads.pipeline(4, 16, us),
            multi_frame=True,
        ),
        Shape("W5", "anti-diagonal wavefront 512 × 512", lambda us: workloads.wavefront(512, us)),
        Shape(
            "W6",
            "streaming pipeline 256 → 256 (1:1) → aggregate → emit",
            lambda us: workloads.streaming(256, us),
            multi_frame=True,
        ),
    )
}


@dataclass(frozen=True)
class RealShape:
    """A real workload: the example directory whose workload.py builds its kernels and graph (at
    `scale`), run by every runtime with the example's own C kernels (kernels.py)."""

    key: str
    title: str
    directory: str
    scale: str = "small"


REAL_SHAPES = {
    shape.key: shape
    for shape in (
        RealShape(
            "W7", "streaming pipeline, 256 items × 2,048 sines (examples/pipeline)", "pipeline"
        ),
        RealShape(
            "W8", "Smith-Waterman wavefront, 16 × 16 blocks (examples/wavefront)", "wavefront"
        ),
        RealShape("W9", "tiled Cholesky, 16 × 16 tiles of 32 (examples/cholesky)", "cholesky"),
    )
}


#: The Python-kernel workloads (Tomii's py_node against Dask): smaller, the same on both sides.
PY_SHAPES = {
    shape.key: shape
    for shape in (
        Shape("W2-py", "fan-out 1 → 1,000 → 1", lambda us: workloads.fan_out(1000, us)),
        Shape(
            "W3-py",
            "layered random DAG, 10 layers × 100 tasks, 1–4 predecessors",
            lambda us: workloads.layered(10, 100, us),
        ),
    )
}
PY_KERNEL_US = (0, 10, 100)


@dataclass(frozen=True)
class Config:
    """One measured configuration: a workload, its kernel (µs, 0 = empty), frames and slots.

    `sweep` marks the METG points, which are tabulated apart from the workloads' own rows."""

    workload: str
    us: int
    frames: int = 1
    slots: int = 1
    sweep: bool = False

    @property
    def kernel(self) -> str:
        if self.workload in REAL_SHAPES:
            return "C kernels"
        return "empty" if self.us == 0 else f"{self.us} µs"

    @property
    def graph_key(self) -> str:
        """The file stem of the graph and DAG files (frames and slots do not change them)."""
        return f"{self.workload}_{self.us}us"

    def label(self) -> str:
        extra = f", {self.frames} frames, slots {self.slots}" if self.frames > 1 else ""
        return f"{self.workload} {self.kernel}{extra}{' (METG sweep)' if self.sweep else ''}"


@dataclass(frozen=True)
class Plan:
    repeats: int
    configs: list[Config]
    #: The kernel durations (µs) of the METG sweep on W2 and W3.
    sweep_us: list[int]
    #: The Python-kernel comparison with Dask (pykernels.py), run after `configs`.
    py_configs: list[Config]

    def all_configs(self) -> list[Config]:
        return self.configs + self.py_configs


def make_plan(quick: bool, repeats: int | None, only: set[str] | None) -> Plan:
    """The full plan, or the --quick one: 3 repeats instead of 5, W5 with 1 µs kernels instead of
    10 µs (1.3 s a run on 2 cores), 30 W6 frames instead of 2,000, 20 frames of W7–W9 instead of
    200, sweep points up to 16 µs."""
    sweep_us = [1, 2, 4, 8, 16] if quick else [1, 2, 4, 8, 16, 32, 64]
    w5_us, w6_frames, real_frames = (1, 30, 20) if quick else (10, 2000, 200)
    configs: list[Config] = []
    for key in ("W1", "W2", "W3"):
        configs += [Config(key, 0), Config(key, 10)]
    configs += [Config("W5", 0), Config("W5", w5_us)]
    for slots in (1, 4, 16):
        configs += [Config("W4", 0, 1000, slots), Config("W4", 10, 1000, slots)]
        configs.append(Config("W6", 50, w6_frames, slots))
    for key in REAL_SHAPES:
        configs += [Config(key, 0, real_frames, slots) for slots in (1, 4)]
    for key in ("W2", "W3"):
        configs += [Config(key, us, sweep=True) for us in sweep_us]
    py_configs = [Config(key, us) for key in PY_SHAPES for us in PY_KERNEL_US]
    if only is not None:
        configs = [c for c in configs if c.workload in only]
        py_configs = [c for c in py_configs if c.workload in only]
    return Plan(repeats or (3 if quick else 5), configs, sweep_us, py_configs)
