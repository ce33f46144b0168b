"""`tomii.check.same_decisions(a, b, graphs=...)`: whether two schedulers (a Python prototype and
its Rust port, say) make the same decisions. Each is simulated (`tomii.simulate`) on the same
graphs, knobs and seeds, recording its decisions (`record_decisions`, the files `tomii replay`
reads: tomii-core/src/replay.rs); the decisions are put in the order the simulated time made them
(start, then worker) and compared one by one, and the first where the two part is reported: the
graph and knobs, when, which worker, and what each scheduler ran there.

Never reads a trace: the decisions files alone, so that what is compared is what a replay would
make again.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Union

from ..errors import TomiiError
from ..scheduler import PolicyLike, policy_spec
from ..simulation import CostModel, simulate

__all__ = ["Decision", "Difference", "SameDecisions", "same_decisions"]

#: One or several values of a knob.
Several = Union[int, Sequence[int]]


@dataclass(frozen=True)
class Decision:
    """A worker started a task: `node` (its name) instance `instance` of `frame`, at `start_ns`
    of simulated time."""

    worker: int
    frame: int
    node: str
    instance: int
    start_ns: int

    def __str__(self) -> str:
        return f"{self.node}[{self.instance}] of frame {self.frame} on worker {self.worker}"


@dataclass(frozen=True)
class Difference:
    """Where two schedulers' decisions part: in the simulation of `graph` with `workers`,
    `slots` and `seed`, decision number `index` (from 1) is `a` for the first scheduler and `b`
    for the second (None: it made no further decision, and `a_error`/`b_error` may say why)."""

    graph: str
    workers: int
    slots: int
    seed: int
    index: int
    a: Decision | None
    b: Decision | None
    a_error: str = ""
    b_error: str = ""


@dataclass(frozen=True)
class SameDecisions:
    """The outcome of `same_decisions`: truthy when every decision was the same."""

    a: str
    b: str
    simulations: int
    #: Decisions compared (the first difference's included).
    decisions: int
    difference: Difference | None

    def __bool__(self) -> bool:
        return self.difference is None

    def __str__(self) -> str:
        if self.difference is None:
            return (
                f"{self.a} and {self.b} made the same {self.decisions} decisions "
                f"in {self.simulations} simulations"
            )
        d = self.difference
        at = d.a.start_ns if d.a is not None else d.b.start_ns if d.b is not None else 0
        where = f"(workers {d.workers}, slots {d.slots}, seed {d.seed}), at {at / 1000:g} µs:"
        lines = [
            f"{self.a} and {self.b} part at decision #{d.index} of graph {d.graph} {where}",
            f"  {self.a}: {_chose(d.a, d.a_error)}",
            f"  {self.b}: {_chose(d.b, d.b_error)}",
        ]
        return "\n".join(lines)


def _chose(decision: Decision | None, error: str) -> str:
    if decision is not None:
        return f"ran {decision}"
    return f"made no further decision ({error})" if error else "made no further decision"


def same_decisions(
    a: PolicyLike,
    b: PolicyLike,
    *,
    graphs: Sequence[Any],
    workers: Several = (1, 2, 4),
    slots: Several = 2,
    frames: int = 8,
    seed: Several = 0,
    cost_model: CostModel = None,
    pop_batch: int = 1,
) -> SameDecisions:
    """Simulates schedulers `a` and `b` (each a name, a library's path or a Python policy, as
    `tomii.simulate` takes them) on every graph of `graphs` for every combination of `workers`,
    `slots` and `seed`, `frames` frames each, and compares their decisions until the first that
    differs. A simulation that fails (a broken contract, an exception in a Python policy) makes
    no decision past its failure, and the result says why. Both run with the same `pop_batch`
    (default 1: one task a pop, so a scheduler that batches its pops when left to choose,
    `TOMII_SCHED_BATCH_POPS`, is compared with its prototype decision by decision)."""
    names = (_name(a), _name(b))
    combinations = list(itertools.product(_several(workers), _several(slots), _several(seed)))
    compared = simulations = 0
    with tempfile.TemporaryDirectory(prefix="tomii-same-decisions-") as directory:
        for number, graph in enumerate(graphs):
            for count, slot_count, draw in combinations:
                knobs = _Knobs(count, slot_count, frames, draw, pop_batch)
                recorded = [
                    _decisions(scheduler, graph, knobs, cost_model, Path(directory) / f"{side}.txt")
                    for side, scheduler in enumerate((a, b))
                ]
                simulations += 1
                (first, a_error), (second, b_error) = recorded
                index = _first_difference(first, second)
                compared += len(first) if index is None else index + 1
                if index is None:
                    continue
                difference = Difference(
                    graph=_graph_name(graph, number),
                    workers=count,
                    slots=slot_count,
                    seed=draw,
                    index=index + 1,
                    a=first[index] if index < len(first) else None,
                    b=second[index] if index < len(second) else None,
                    a_error=a_error,
                    b_error=b_error,
                )
                return SameDecisions(*names, simulations, compared, difference)
    return SameDecisions(*names, simulations, compared, None)


@dataclass(frozen=True)
class _Knobs:
    """The knobs of one simulation."""

    workers: int
    slots: int
    frames: int
    seed: int
    pop_batch: int


def _decisions(
    scheduler: PolicyLike,
    graph: Any,
    knobs: _Knobs,
    cost_model: CostModel,
    path: Path,
) -> tuple[list[Decision], str]:
    """The decisions of one simulation, in time order, and its error ("" when it completed)."""
    error = ""
    try:
        simulate(
            graph,
            scheduler=scheduler,
            record_decisions=path,
            cost_model=cost_model,
            workers=knobs.workers,
            slots=knobs.slots,
            frames=knobs.frames,
            seed=knobs.seed,
            pop_batch=knobs.pop_batch,
        )
    except TomiiError as failed:
        error = f"{type(failed).__name__}: {failed}"
        if not path.is_file():
            return [], error
    return read_decisions(path), error


def read_decisions(path: Path) -> list[Decision]:
    """The decisions of a decisions file, ordered by start time, then worker."""
    with path.open(encoding="utf-8") as file:
        header = json.loads(file.readline())
        names = [node["name"] for node in header["graph"]["nodes"]]
        decisions = []
        for line in file:
            if not line.strip() or line.startswith("{"):
                continue  # the run's ending, a checker's finding
            worker, frame, node, instance, start_ns, _end_ns = map(int, line.split(","))
            decisions.append(Decision(worker, frame, names[node], instance, start_ns))
    decisions.sort(key=lambda d: (d.start_ns, d.worker))
    return decisions


def _first_difference(first: list[Decision], second: list[Decision]) -> int | None:
    """The index of the first decision that differs (one list ending before the other
    included); None when they are the same."""
    for index, (one, other) in enumerate(zip(first, second)):
        if one != other:
            return index
    if len(first) != len(second):
        return min(len(first), len(second))
    return None


def _several(value: Several) -> list[int]:
    return [value] if isinstance(value, int) else list(value)


def _name(scheduler: PolicyLike) -> str:
    """What the result calls a scheduler: a policy's name, a library's file name, or the name."""
    spec = policy_spec(scheduler)
    if spec is not None:
        return spec.name
    return Path(scheduler).name if isinstance(scheduler, Path) else str(scheduler)


def _graph_name(graph: Any, number: int) -> str:
    if isinstance(graph, dict) and isinstance(graph.get("name"), str):
        return repr(graph["name"])
    if isinstance(graph, (str, Path)) and Path(graph).suffix == ".json":
        return str(graph)
    return f"#{number + 1}"
