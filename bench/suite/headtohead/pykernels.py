"""Python kernels: Tomii's `Graph.py_node` against `dask.delayed` on Dask's threaded scheduler.

`python -m headtohead.pykernels --repeats R --out FILE` runs W2 and W3 at 1,000 tasks each
(fan-out 1 → 1,000 → 1; 10 layers × 100 tasks, 1–4 predecessors, the suite's seed) with the same
Python function as every kernel, on every Tomii scheduler and on Dask, 2 workers each, one
unrecorded warm-up per configuration, then R interleaved rounds, and writes the rows as JSON.
Both sides are timed over the whole call that runs a built graph: `Graph.run(...)` and
`dask.compute(...)`; building the graph is never timed.
"""

from __future__ import annotations

import argparse
import json
import random
import time
from pathlib import Path
from typing import Any

from dask.base import compute
from dask.delayed import delayed

import tomii

from . import workloads
from .plan import PY_KERNEL_US, PY_SHAPES, WORKERS
from .runtimes import DASK, PY_RUNTIMES
from .workloads import Json


@tomii.export(name="headtohead.py_spin")
def py_spin(us: int, *_predecessors: object) -> None:
    """Busy-waits until the monotonic clock has advanced `us` µs (plugins/synthetic's `spin`
    loop); with 0 it returns at once, the empty kernel."""
    if us > 0:
        start = time.monotonic_ns()
        while time.monotonic_ns() - start < us * 1000:
            pass


def tomii_graph(graph: Json, us: int) -> tomii.Graph:
    """`graph` (workloads' form: `$dep` edges selecting offset 0 or "all") with `py_node`s."""
    built = tomii.Graph()
    nodes: dict[str, tomii.Node] = {}
    for spec in graph["nodes"]:
        deps: list[Any] = []
        for edge in (arg for arg in spec["args"] if isinstance(arg, dict)):
            pred = nodes[edge["predecessor"]["name"]]
            deps.append(
                pred.wait(every=True) if edge["predecessor"].get("index") == "all" else pred.dep()
            )
        name = spec["name"]
        nodes[name] = built.py_node(name, fn=py_spin, args=[us, *deps], factor=spec["factor"])
    return built


def dask_graph(graph: Json, us: int) -> list[Any]:
    """The same tasks as `dask.delayed` calls of `py_spin`; returns the sinks to compute."""
    dag = workloads.expand(graph)
    tasks: list[Any] = []
    for t, preds in enumerate(dag.preds):
        call = delayed(py_spin, pure=False)
        tasks.append(call(us, *(tasks[p] for p in preds), dask_key_name=f"t{t}"))
    has_successors = {p for preds in dag.preds for p in preds}
    return [task for t, task in enumerate(tasks) if t not in has_successors]


def measure(runtime: str, built: tomii.Graph | list[Any]) -> float:
    """The wall time of one run of a built graph, in seconds."""
    start = time.perf_counter()
    if isinstance(built, tomii.Graph):
        scheduler = runtime.removeprefix("tomii-")
        built.run(scheduler=scheduler, workers=WORKERS, task_timing=False, collect_outputs=False)
    else:
        compute(*built, scheduler="threads", num_workers=WORKERS)  # type: ignore[no-untyped-call]
    return time.perf_counter() - start


def run(repeats: int, seed: int, keys: list[str]) -> list[dict[str, Any]]:
    runtimes = PY_RUNTIMES
    configs = [(key, us) for key in keys for us in PY_KERNEL_US]
    built: dict[tuple[str, int, str], tomii.Graph | list[Any]] = {}
    tasks: dict[tuple[str, int], int] = {}
    for key, us in configs:
        graph = PY_SHAPES[key].build(us)
        tasks[key, us] = workloads.expand(graph).tasks
        for runtime in runtimes:
            made = dask_graph(graph, us) if runtime == DASK else tomii_graph(graph, us)
            built[key, us, runtime] = made
            measure(runtime, made)  # warm-up, unrecorded
    rows: list[dict[str, Any]] = []
    order = random.Random(seed)
    for round_ in range(repeats):
        for key, us in configs:
            for runtime in order.sample(runtimes, len(runtimes)):
                wall = measure(runtime, built[key, us, runtime])
                rows.append(_row(round_, key, us, runtime, wall, tasks[key, us]))
        print(f"  python kernels: round {round_ + 1}/{repeats} done", flush=True)
    return rows


def _row(round_: int, key: str, us: int, runtime: str, wall: float, tasks: int) -> dict[str, Any]:
    return {
        "round": round_,
        "workload": key,
        "us": us,
        "frames": 1,
        "slots": 1,
        "sweep": False,
        "runtime": runtime,
        "timing": "whole call",
        "tasks": tasks,
        "wall_s": wall,
        "error": "",
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--workloads", default=",".join(PY_SHAPES), help="comma-separated keys")
    args = parser.parse_args()
    keys = [key for key in args.workloads.split(",") if key]
    unknown = sorted(set(keys) - set(PY_SHAPES))
    if unknown:
        parser.error(f"unknown workloads {unknown}; known: {sorted(PY_SHAPES)}")
    rows = run(args.repeats, args.seed, keys)
    args.out.write_text(json.dumps(rows), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
