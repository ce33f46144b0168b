"""A task's start in the trace never precedes the end of a predecessor that ran on another worker.

The cycle counter can be read early, while an earlier load still waits for its cache line; a
start read that way came 10–150 ns before the end of the predecessor whose completion let the
task run, in about one frame in 8,000 of this 2-worker fork-join (a grouped stage and pinned
joins, so that predecessor and successor run on different workers). The engine reads a task's
start after a load fence (`Clock::now_after_loads`). Without it this test finds reversals in
every try on the 2-core machine it was written on (13 in 500 runs of 201 frames); it cannot find
them on one core.
"""

from __future__ import annotations

from collections import defaultdict

from reference import SYNTHETIC

import tomii
from tomii.graphs import Fixed, fork_join

STAGES = ["fork", "work0", "join0", "work1", "join1", "work2", "join2"]
SETTINGS = {
    "fork": {"priority": "high", "use_workers": "1-1"},
    "work0": {"group_size": 2, "priority": "high", "use_workers": "0-0"},
    "join0": {"priority": "low", "use_workers": "0-0"},
    "work1": {"group_size": 4, "priority": "low", "use_workers": "0-1"},
    "join1": {"priority": "low", "use_workers": "1-1"},
    "work2": {"priority": "high", "use_workers": "0-0"},
    "join2": {"use_workers": "1-1"},
}


def test_no_task_starts_before_its_predecessors_end_on_the_other_worker() -> None:
    graph = fork_join(8, 3, cost=Fixed(10))
    for node in graph["nodes"]:
        node.update(SETTINGS[node["name"]])
    reversals: list[str] = []
    for _ in range(300):
        result = tomii.run_graph(
            graph,
            dylibs=[SYNTHETIC],
            scheduler="critical-path",
            sched_opts={"weighted": "true"},
            workers=2,
            slots=2,
            pop_batch=16,
            inline_continuation=True,
            frames=201,
            trace=True,
        )
        names, trace = result.node_names, result.trace
        assert trace is not None
        ends: dict[tuple[str, int], int] = defaultdict(int)
        for row in trace:
            key = (names[int(row["node"])], int(row["frame"]))
            ends[key] = max(ends[key], int(row["end_ns"]))
        for row in trace:
            node, frame = names[int(row["node"])], int(row["frame"])
            if node == "fork":
                continue
            before = STAGES[STAGES.index(node) - 1]
            if int(row["start_ns"]) < ends[(before, frame)]:
                reversals.append(
                    f"{node}[{int(row['instance'])}] of frame {frame} started at "
                    f"{int(row['start_ns'])} ns, {before} ended at {ends[(before, frame)]} ns"
                )
    assert not reversals, f"{len(reversals)} reversals, e.g. {reversals[:3]}"
