"""`tomii.check.check(scheduler)`: the property suite as one call, for any scheduler dylib.

Each property runs real runs of hypothesis-generated graphs and knobs through the scheduler and
compares them with the reference model (`reference.py`) and the invariants (`invariants.py`). A
failing property is shrunk by hypothesis to a minimal graph and knobs, which the report card
shows, ready to paste into a test.
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st

from .. import TomiiError, run_graph
from ..plugins import find_plugin
from .invariants import Violation, check_trace, fifo_order, priority_order, rows_of
from .reference import ReferenceModel
from .strategies import Knobs, graphs

__all__ = ["PROFILES", "PropertyResult", "ReportCard", "check"]

#: Examples per property: "fast" for every CI run, "deep" on demand.
PROFILES = {"fast": 30, "deep": 600}
#: How long a higher-priority ready task may wait while lower ones start (the priority property).
PRIORITY_BOUND_NS = 50_000_000


@dataclass(frozen=True)
class PropertyResult:
    """One property's outcome."""

    name: str
    description: str
    passed: bool
    examples: int
    seconds: float
    #: The problems of the minimal failing example (empty when it passed).
    problems: list[str] = field(default_factory=list)
    #: The minimal failing graph and the knobs it failed with.
    graph: dict[str, Any] | None = None
    knobs: Any = None


@dataclass(frozen=True)
class ReportCard:
    """What `check` found: one result per property."""

    scheduler: str
    results: list[PropertyResult]

    @property
    def passed(self) -> bool:
        return all(result.passed for result in self.results)

    def __str__(self) -> str:
        lines = [f"scheduler {self.scheduler}: {'PASSED' if self.passed else 'FAILED'}"]
        for r in self.results:
            mark = "pass" if r.passed else "FAIL"
            lines.append(
                f"  {mark}  {r.name:<22} {r.examples:>4} runs  {r.seconds:6.1f} s  {r.description}"
            )
            if not r.passed:
                lines += [f"        {problem}" for problem in r.problems[:5]]
                lines.append(f"        knobs: {json.dumps(r.knobs)}")
                lines.append(f"        graph: {json.dumps(r.graph)}")
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scheduler": self.scheduler,
            "passed": self.passed,
            "results": [r.__dict__ for r in self.results],
        }


@dataclass(frozen=True)
class _Suite:
    scheduler: str
    sched_opts: dict[str, str]
    dylibs: list[str]
    stall_timeout_ms: int

    def run(self, graph: dict[str, Any], knobs: Knobs) -> tuple[Any, ReferenceModel]:
        model = ReferenceModel(graph)
        options = {
            **knobs.run_options(),
            "scheduler": self.scheduler,
            "sched_opts": self.sched_opts,
        }
        result = run_graph(
            graph,
            dylibs=self.dylibs,
            trace=True,
            stall_timeout_ms=self.stall_timeout_ms,
            **options,
        )
        return result, model

    def outputs(self, graph: dict[str, Any], knobs: Knobs) -> list[str]:
        result, model = self.run(graph, knobs)
        expected = model.run(frames=knobs.frames, workers=knobs.workers)
        problems = []
        for frame, (got, want) in enumerate(zip(result.outputs, expected.outputs)):
            if got != want:
                problems.append(f"frame {frame}: outputs {got} != reference {want}")
        if result.post_outputs != expected.post_outputs:
            problems.append(
                f"post-nodes: {result.post_outputs} != reference {expected.post_outputs}"
            )
        skipped = {n["name"]: n.get("skipped", 0) for n in result.report["per_node"]}
        for node, count in expected.skipped.items():
            if skipped.get(node, 0) != count:
                problems.append(f"node {node}: {skipped.get(node, 0)} skipped, reference {count}")
        return problems

    def trace(self, graph: dict[str, Any], knobs: Knobs) -> list[str]:
        result, model = self.run(graph, knobs)
        rows = rows_of(result.trace, result.node_names)
        violations = check_trace(
            rows,
            tasks=model.tasks,
            depends_on=model.deps,
            frames=knobs.frames,
            slots=knobs.slots,
            workers=knobs.workers,
            ranges=model.worker_ranges(),
            report=result.report,
        )
        expected_posts = sum(node.factor for node in model.post_nodes)
        if len(result.post_outputs) != expected_posts:
            violations.append(
                Violation(
                    "post-nodes run once",
                    f"{len(result.post_outputs)} post-node results, {expected_posts} instances",
                )
            )
        # The knobs (`_run_examples`) never turn inline continuation on, which would take tasks
        # out of the scheduler's order.
        name = result.report.scheduler
        if name == "fifo" and knobs.workers == 1:
            violations += fifo_order(rows)
        if name == "priority":
            violations += priority_order(
                rows, model.priorities(), PRIORITY_BOUND_NS, model.worker_ranges()
            )
        return [str(v) for v in violations]


def _property(
    name: str,
    description: str,
    body: Callable[[dict[str, Any], Knobs], list[str]],
    strategy: st.SearchStrategy[tuple[dict[str, Any], Knobs]],
    examples: int,
    seed: int | None,
) -> PropertyResult:
    failure: dict[str, Any] = {}
    ran = 0

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=seed is None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink],
    )
    @given(strategy)
    def prop(example: tuple[dict[str, Any], Knobs]) -> None:
        nonlocal ran
        ran += 1
        graph, knobs = example
        try:
            problems = body(graph, knobs)
        except TomiiError as error:
            problems = [f"{type(error).__name__}: {error}"]
        if problems:
            # The last failing example hypothesis runs is the shrunk one.
            failure.update(graph=graph, knobs=knobs, problems=problems)
            raise AssertionError(problems[0])

    if seed is not None:
        prop = hypothesis_seed(seed)(prop)
    started = time.perf_counter()
    try:
        prop()
    except AssertionError:
        pass
    seconds = time.perf_counter() - started
    if not failure:
        return PropertyResult(name, description, True, ran, seconds)
    return PropertyResult(
        name,
        description,
        False,
        ran,
        seconds,
        problems=list(failure["problems"]),
        graph=failure["graph"],
        knobs=failure["knobs"],
    )


def _knobs_of(suite: _Suite, knobs: Knobs) -> dict[str, Any]:
    """The run options of a failing example, with the checked scheduler's."""
    options = knobs.run_options()
    options.update(scheduler=suite.scheduler, sched_opts=suite.sched_opts)
    return options


def check(
    scheduler: str | Path,
    *,
    sched_opts: Mapping[str, str] | None = None,
    profile: str = "fast",
    max_examples: int | None = None,
    workers: tuple[int, int] = (1, 3),
    seed: int | None = None,
    dylibs: Sequence[str | Path] | None = None,
    stall_timeout_ms: int = 5000,
) -> ReportCard:
    """Checks a scheduler (a name, or the path of any scheduler dylib) against every invariant,
    on hypothesis-generated graphs and knobs, and returns a report card.

    Properties: the outputs of every frame and of the post-nodes equal the reference model's (so
    nothing ran twice, out of order or with another frame's data); the trace shows every instance
    exactly once per frame, never before the instances it depends on, frames never overlapping in
    a slot, worker ranges honoured, every frame and every post-node done; for `fifo` on one worker,
    FIFO order; for `priority`, no higher-priority task left waiting. `profile` is "fast" (30 runs
    per property) or "deep" (600); `max_examples` overrides it. A failure comes with the minimal
    graph and knobs hypothesis shrank it to. `seed` makes the examples reproducible (without it,
    they are derandomized: the same on every call). `dylibs` defaults to the synthetic kernels.
    A run in which no task completes for `stall_timeout_ms` fails as a stall.
    """
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
    examples = max_examples if max_examples is not None else PROFILES[profile]
    libraries = [str(d) for d in dylibs] if dylibs is not None else [str(find_plugin("synthetic"))]
    suite = _Suite(str(scheduler), dict(sched_opts or {}), libraries, stall_timeout_ms)
    strategy = _runs(workers)
    properties = [
        ("outputs", "every frame's outputs equal the reference model's", suite.outputs),
        ("trace invariants", "exactly once, dependency order, slots, worker ranges", suite.trace),
    ]
    results = []
    for name, description, body in properties:
        result = _property(name, description, body, strategy, examples, seed)
        if isinstance(result.knobs, Knobs):
            result = dataclasses.replace(result, knobs=_knobs_of(suite, result.knobs))
        results.append(result)
    return ReportCard(str(scheduler), results)


@st.composite
def _run_examples(draw: st.DrawFn, workers: tuple[int, int]) -> tuple[dict[str, Any], Knobs]:
    knobs = Knobs(
        workers=draw(st.integers(*workers)),
        slots=draw(st.integers(1, 6)),
        frames=draw(st.integers(1, 5)),
        pop_batch=draw(st.integers(1, 3)),
    )
    return draw(graphs(workers=knobs.workers)), knobs


def _runs(workers: tuple[int, int]) -> st.SearchStrategy[tuple[dict[str, Any], Knobs]]:
    return _run_examples(workers)
