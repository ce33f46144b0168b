"""`tomii.check.same_decisions`: the Python twins of `fifo` and `priority` that
PLUGIN_SCHEDULER_API.md shows make exactly the Rust schedulers' decisions in simulation, on graphs
with priorities and worker ranges, for several worker counts and seeds; a policy that differs on
purpose is reported with the first decision where it parts."""

from __future__ import annotations

from typing import Any

import policies
import pytest

import tomii
from tomii.check import same_decisions
from tomii.graphs import LogNormal, fork_join, layered_random, streaming_pipeline


def with_priorities_and_a_range(graph: dict[str, Any]) -> dict[str, Any]:
    """`graph` with node priorities high, normal and low in turn, and its last node allowed on
    worker 0 alone: two worker-range classes on more than one worker."""
    nodes = [
        {**node, "priority": ("high", "normal", "low")[k % 3]}
        for k, node in enumerate(graph["nodes"])
    ]
    nodes[-1]["use_workers"] = 0
    return {**graph, "nodes": nodes}


GRAPHS = [
    with_priorities_and_a_range(fork_join(width=6, depth=2, cost=LogNormal(20, 0.5), seed=1)),
    with_priorities_and_a_range(streaming_pipeline(width=5, cost=LogNormal(10, 0.8), seed=2)),
    layered_random(layers=3, width=4, cost=LogNormal(15, 0.6), seed=3),
]


@pytest.mark.parametrize(
    ("rust", "twin"), [("fifo", policies.Fifo), ("priority", policies.Priority)]
)
def test_each_twin_makes_exactly_the_rust_schedulers_decisions(
    rust: str, twin: type[tomii.Scheduler]
) -> None:
    same = same_decisions(twin, rust, graphs=GRAPHS, workers=(1, 3), slots=2, frames=6, seed=(0, 7))
    assert same, str(same)
    assert same.simulations == len(GRAPHS) * 4
    assert same.decisions > 500
    assert str(same).startswith(f"{twin.name} and {rust} made the same {same.decisions} decisions")


def test_a_different_policy_is_reported_at_its_first_different_decision() -> None:
    same = same_decisions("fifo", policies.Lifo, graphs=GRAPHS[:1], workers=2, frames=3)
    assert not same
    difference = same.difference
    assert difference is not None and difference.a is not None and difference.b is not None
    assert difference.index >= 1 and (difference.workers, difference.slots, difference.seed) == (
        2,
        2,
        0,
    )
    assert (difference.a.frame, difference.a.node, difference.a.instance) != (
        difference.b.frame,
        difference.b.node,
        difference.b.instance,
    )
    printed = str(same)
    assert printed.startswith(f"fifo and lifo part at decision #{difference.index} of graph")
    assert f"  fifo: ran {difference.a}" in printed and f"  lifo: ran {difference.b}" in printed


def test_a_failing_policy_is_reported_where_it_stops_deciding() -> None:
    same = same_decisions(policies.Fifo, policies.Raises, graphs=GRAPHS[:1], workers=2, frames=2)
    assert not same and same.difference is not None
    assert same.difference.b is None and "ValueError: raised on purpose" in same.difference.b_error
    assert "Raises: made no further decision (SchedulerFault" in str(same)
