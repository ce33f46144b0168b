"""The invariants every run must keep, checked on what a real run produced: its trace, outputs and
report, against a graph's expectations (the reference model's).

Each check returns the violations it found, as `Violation`s whose text names the task, frame and
times involved, so that a failure explains itself. They hold for every correct scheduler; the
scheduler-specific ones (`fifo_order`, `priority_order`) only for the scheduler they describe.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Task",
    "Violation",
    "check_trace",
    "dependency_order",
    "every_frame_completes",
    "exactly_once",
    "fifo_order",
    "priority_order",
    "slot_isolation",
    "worker_ranges",
]

#: A task instance: (node name, instance index).
Task = tuple[str, int]
#: The trace as plain rows: (node, instance, frame, slot, worker, ready_ns, start_ns, end_ns).
Row = tuple[str, int, int, int, int, int, int, int]


@dataclass(frozen=True)
class Violation:
    """One broken invariant, explained."""

    invariant: str
    detail: str

    def __str__(self) -> str:
        return f"{self.invariant}: {self.detail}"


def rows_of(trace: Any, node_names: Sequence[str]) -> list[Row]:
    """The rows of a `RunResult.trace` structured array, with node names."""
    return [
        (
            node_names[int(r["node"])],
            int(r["instance"]),
            int(r["frame"]),
            int(r["slot"]),
            int(r["worker"]),
            int(r["ready_ns"]),
            int(r["start_ns"]),
            int(r["end_ns"]),
        )
        for r in trace
    ]


def exactly_once(rows: Sequence[Row], tasks: Iterable[Task], frames: int) -> list[Violation]:
    """Every instance of every frame ran exactly once, and nothing else ran."""
    expected = {(node, instance, frame) for node, instance in tasks for frame in range(frames)}
    seen: dict[tuple[str, int, int], int] = defaultdict(int)
    for node, instance, frame, *_ in rows:
        seen[(node, instance, frame)] += 1
    found = []
    for key in sorted(expected):
        if seen.get(key, 0) != 1:
            found.append(Violation("exactly once", f"{_name(key)} ran {seen.get(key, 0)} times"))
    for key in sorted(set(seen) - expected):
        found.append(Violation("exactly once", f"{_name(key)} ran but is not a task of the run"))
    return found


def every_frame_completes(
    rows: Sequence[Row], frames: int, report: Mapping[str, Any]
) -> list[Violation]:
    """The report counts every frame, and every frame has tasks in the trace."""
    found = []
    if report.get("frames") != frames:
        found.append(
            Violation("every frame completes", f"report counts {report.get('frames')} of {frames}")
        )
    missing = sorted(set(range(frames)) - {row[2] for row in rows})
    if missing:
        found.append(Violation("every frame completes", f"no task ran in frames {missing[:10]}"))
    return found


def dependency_order(
    rows: Sequence[Row], depends_on: Mapping[Task, Iterable[Task]]
) -> list[Violation]:
    """No task started before every instance it depends on, in its frame, had ended."""
    ends = {(node, instance, frame): end for node, instance, frame, *_, end in rows}
    found = []
    for node, instance, frame, _, _, _, start, _ in rows:
        for before in depends_on.get((node, instance), ()):
            end = ends.get((before[0], before[1], frame))
            if end is None or end > start:
                when = "never ran" if end is None else f"ended at {end} ns"
                found.append(
                    Violation(
                        "dependency order",
                        f"{_name((node, instance, frame))} started at {start} ns but "
                        f"{_name((before[0], before[1], frame))} {when}",
                    )
                )
    return found


def slot_isolation(rows: Sequence[Row], slots: int) -> list[Violation]:
    """At most `slots` frames are in flight at once, each in a slot no other in-flight frame
    uses: the spans (first start to last end) of frames that share a slot never overlap."""
    spans: dict[int, list[int]] = {}
    slot_of: dict[int, int] = {}
    found = []
    for _, _, frame, slot, _, _, start, end in rows:
        span = spans.setdefault(frame, [start, end])
        span[0], span[1] = min(span[0], start), max(span[1], end)
        if slot_of.setdefault(frame, slot) != slot:
            found.append(
                Violation(
                    "slot isolation", f"frame {frame} ran in slots {slot_of[frame]} and {slot}"
                )
            )
        if not 0 <= slot < slots:
            found.append(
                Violation("slot isolation", f"frame {frame} ran in slot {slot} of {slots}")
            )
    by_slot: dict[int, list[tuple[int, int, int]]] = defaultdict(list)
    for frame, (start, end) in spans.items():
        by_slot[slot_of[frame]].append((start, end, frame))
    for slot, frames in by_slot.items():
        frames.sort()
        for (_, end, frame), (start, _, later) in zip(frames, frames[1:]):
            if start < end:
                found.append(
                    Violation(
                        "slot isolation",
                        f"frames {frame} and {later} overlap in slot {slot} "
                        f"({later} started at {start} ns, {frame} ended at {end} ns)",
                    )
                )
    return found


def worker_ranges(
    rows: Sequence[Row], ranges: Mapping[str, tuple[int, int]], workers: int
) -> list[Violation]:
    """Every task ran on a worker of its node's range (half-open `(lo, hi)`; all by default)."""
    found = []
    for node, instance, frame, _, worker, *_ in rows:
        lo, hi = ranges.get(node, (0, workers))
        if not lo <= worker < min(hi, workers):
            found.append(
                Violation(
                    "worker ranges",
                    f"{_name((node, instance, frame))} ran on worker {worker}, outside {lo}..{hi - 1}",
                )
            )
    return found


def fifo_order(rows: Sequence[Row]) -> list[Violation]:
    """On one worker, tasks start in the order they became ready (the fifo scheduler's promise)."""
    by_start = sorted(rows, key=lambda r: r[6])
    found = []
    for earlier, later in zip(by_start, by_start[1:]):
        if later[5] < earlier[5]:
            found.append(
                Violation(
                    "fifo order",
                    f"{_name(later[:3])} (ready at {later[5]} ns) started after "
                    f"{_name(earlier[:3])} (ready at {earlier[5]} ns)",
                )
            )
    return found


def priority_order(
    rows: Sequence[Row],
    priorities: Mapping[str, int],
    bound_ns: int,
    ranges: Mapping[str, tuple[int, int]] | None = None,
) -> list[Violation]:
    """No task starts while a task of higher priority, of the same or an older frame, that its
    worker could have run, had been ready for longer than `bound_ns` and was still waiting (the
    priority scheduler's promise)."""
    found = []
    waiting = sorted(rows, key=lambda r: r[5])
    for row in rows:
        node, _, frame, _, _, _, start, _ = row
        mine = priorities.get(node, 0)
        for other in waiting:
            if other[5] + bound_ns >= start:
                break
            lo, hi = (ranges or {}).get(other[0], (0, row[4] + 1))
            runnable_here = lo <= row[4] < hi
            higher = priorities.get(other[0], 0) > mine
            if other[6] > start and higher and other[2] <= frame and runnable_here:
                found.append(
                    Violation(
                        "priority order",
                        f"{_name(row[:3])} (priority {mine}) started at {start} ns while "
                        f"{_name(other[:3])} (priority {priorities.get(other[0], 0)}) had been "
                        f"ready since {other[5]} ns",
                    )
                )
                break
    return found


def check_trace(
    rows: Sequence[Row],
    *,
    tasks: Iterable[Task],
    depends_on: Mapping[Task, Iterable[Task]],
    frames: int,
    slots: int,
    workers: int,
    ranges: Mapping[str, tuple[int, int]],
    report: Mapping[str, Any],
) -> list[Violation]:
    """Every scheduler-independent trace invariant."""
    checks: list[Callable[[], list[Violation]]] = [
        lambda: exactly_once(rows, tasks, frames),
        lambda: every_frame_completes(rows, frames, report),
        lambda: dependency_order(rows, depends_on),
        lambda: slot_isolation(rows, slots),
        lambda: worker_ranges(rows, ranges, workers),
    ]
    return [violation for check in checks for violation in check()]


def _name(key: tuple[Any, ...]) -> str:
    node, instance, frame = key[:3]
    return f"{node}[{instance}] of frame {frame}"
