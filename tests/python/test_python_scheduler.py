"""Schedulers written in Python (`tomii.Scheduler`): accepted wherever a scheduler's name is
(run_graph, Graph.run, simulate, Session, check, sweep, a script's own class in a sweep), checked
by the property suite like a dylib, and contained like one: an exception, a hang, a task dropped
or popped twice fails cleanly, naming the policy."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any, ClassVar

import policies
import pytest
from reference import SYNTHETIC, TARGET

import tomii
from tomii.check import check
from tomii.check import suite as check_suite
from tomii.experiments import sweep
from tomii.graphs import Fixed, fork_join

#: The scheduler that breaks its contract on purpose (tests/plugins), as option `fault` says.
BROKEN_SCHEDULER = TARGET / "libtomii_test_broken_scheduler.so"
#: A small graph of spin kernels: two roots' worth of work per frame.
GRAPH = fork_join(width=4, depth=1, cost=Fixed(5), seed=0)
RUN: dict[str, Any] = {"dylibs": [SYNTHETIC], "workers": 2, "slots": 2, "frames": 4}


def test_run_graph_and_simulate_take_a_class_an_instance_and_an_import_path() -> None:
    expected = tomii.run_graph(GRAPH, scheduler="fifo", **RUN).outputs
    for scheduler in (policies.Fifo, policies.Fifo(), "policies:Fifo"):
        result = tomii.run_graph(GRAPH, scheduler=scheduler, **RUN)
        assert result.report.scheduler == "py-fifo"
        assert result.report["scheduler"]["path"] == "python:policies:Fifo"
        assert result.outputs == expected
    simulated = tomii.simulate(GRAPH, scheduler=policies.Priority, workers=3, slots=2, frames=5)
    assert (simulated.report.scheduler, simulated.report.frames) == ("py-priority", 5)


def test_graph_run_and_a_session_take_a_policy() -> None:
    graph = tomii.Graph()
    words = graph.input("words", factor=2)
    graph.node("sum", func="checksum", args=[words.out(0, 2, wrap=False)])
    alone = tomii.Graph()
    alone.node("sum", func="checksum", factor=2, args=[7])
    ran = alone.run(dylib=SYNTHETIC, scheduler=policies.Fifo, frames=3)
    assert (ran.report.scheduler, ran.report.tasks) == ("py-fifo", 6)
    with graph.session(dylib=SYNTHETIC, scheduler=policies.Priority, workers=2) as session:
        frames = [session.submit({"words": [k, k + 1]}) for k in range(5)]
        assert all(frame.result(timeout=60).output("sum") is not None for frame in frames)
    assert session.report is not None
    assert (session.report.scheduler, session.report.frames) == ("py-priority", 5)


def test_a_policy_sees_the_descriptors_and_the_hooks() -> None:
    class Watching(policies.Fifo):  # type: ignore[valid-type,misc]
        """Records what the host tells it."""

        seen: ClassVar[list[Any]] = []

        def task_completed(self, worker: int, task: tomii.Task, duration_ns: int) -> None:
            self.seen.append((task.frame, task.node, task.instance, task.allows(worker)))

        def frame_started(self, frame: int, slot: int) -> None:
            self.seen.append(("frame", frame))

        def stats(self) -> dict[str, int]:
            return {"seen": len(self.seen)}

    result = tomii.run_graph(GRAPH, scheduler=Watching, **RUN)
    tasks = [entry for entry in Watching.seen if entry[0] != "frame"]
    assert len(tasks) == result.report.tasks and all(entry[3] for entry in tasks)
    assert [entry for entry in Watching.seen if entry[0] == "frame"] == [
        ("frame", k) for k in range(4)
    ]
    assert result.report["scheduler"]["stats"] == {"seen": len(Watching.seen)}


@pytest.mark.parametrize(
    ("policy", "message"),
    [
        (policies.Raises, 'scheduler "Raises" broke its contract: pop failed: Traceback'),
        (policies.HookRaises, "frame_completed failed: Traceback"),
        (policies.PopsTwice, 'scheduler "PopsTwice" broke its contract: returned the same task'),
        (policies.PopsText, "pop returned a str: return a tomii.Task"),
        (policies.Drops, 'scheduler "Drops" stalled'),
    ],
)
def test_a_broken_policy_fails_cleanly_naming_it(
    policy: type[tomii.Scheduler], message: str
) -> None:
    simulation = {"workers": 2, "slots": 2, "frames": 4}
    for run, options in (
        (tomii.run_graph, {**RUN, "stall_timeout_ms": 200}),
        (tomii.simulate, simulation),
    ):
        with pytest.raises(tomii.SchedulerFault) as raised:
            run(GRAPH, scheduler=policy, **options)
        assert message in str(raised.value)
        assert raised.value.result.report["status"] == "failed"  # type: ignore[attr-defined]
    if policy is policies.Raises:
        assert "ValueError: raised on purpose" in str(raised.value)


@pytest.fixture
def released() -> Iterator[None]:
    """Lets `Hangs` return once the test is done with it."""
    policies.RELEASE.clear()
    yield
    policies.RELEASE.set()


@pytest.mark.usefixtures("released")
def test_a_hanging_policy_is_a_hang_error_naming_it() -> None:
    with pytest.raises(tomii.HangError) as raised:
        tomii.run_graph(GRAPH, scheduler=policies.Hangs, scheduler_call_timeout_ms=200, **RUN)
    assert 'scheduler "Hangs" did not return from pop' in str(raised.value)


def test_a_python_fifo_passes_the_property_suite() -> None:
    card = check(policies.Fifo, max_examples=8)
    assert card.passed, str(card)
    assert card.scheduler == "py-fifo"


def test_a_policy_that_drops_a_task_fails_the_card_a_rust_one_fails(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(check_suite, "SHRINK_BUDGET_S", 0.0)  # the first failing example
    python = check(policies.Drops, max_examples=5, stall_timeout_ms=200)
    rust = check(
        BROKEN_SCHEDULER,
        sched_opts={"fault": "drop", "after": "0"},
        max_examples=5,
        stall_timeout_ms=200,
    )
    failed = [
        [result.name for result in card.results if not result.passed] for card in (python, rust)
    ]
    assert failed[0] == failed[1] == ["outputs", "trace invariants"], (str(python), str(rust))
    problem = python.results[0].problems[0]
    assert problem.startswith('SchedulerFault: scheduler "Drops" stalled'), str(python)
    assert "stalled" in rust.results[0].problems[0], str(rust)


def test_a_sweep_takes_a_policy_class_beside_a_name() -> None:
    result = sweep(
        [policies.Fifo, "fifo"],
        [GRAPH],
        knobs={"workers": [2]},
        repeats=1,
        frames=5,
        progress=False,
    )
    assert sorted(row["scheduler"] for row in result.rows) == ["fifo", "py-fifo"]
    assert all(row["valid"] for row in result.rows), result.rows
    with pytest.raises(TypeError, match="pass the class Fifo, not an instance"):
        sweep([policies.Fifo()], [GRAPH], repeats=1, frames=5, progress=False)  # type: ignore[list-item]


#: A script that defines its policy and sweeps it, guarded as a script's Python kernel must be.
SCRIPT = """\
from collections import deque

import tomii
from tomii.experiments import sweep


class Mine(tomii.Scheduler):
    def create(self, init):
        self.queue = deque()

    def push(self, worker, tasks):
        self.queue.extend(tasks)

    def pop(self, worker, max_tasks):
        return self.queue.popleft() if self.queue else None


if __name__ == "__main__":
    graph = tomii.graphs.map_reduce(4, 2, cost=tomii.graphs.Fixed(2))
    result = sweep([Mine, "fifo"], [graph], repeats=1, frames=5, progress=False)
    print(sorted((row["scheduler"], row["valid"]) for row in result.rows))
"""


def test_a_policy_defined_in_a_scripts_main_runs_in_a_sweep(tmp_path: Path) -> None:
    (tmp_path / "script.py").write_text(textwrap.dedent(SCRIPT), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "script.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[('Mine', True), ('fifo', True)]"], done.stderr


def test_tune_holds_a_policy_class_and_tunes_the_run_around_it(tmp_path: Path) -> None:
    result = tomii.tune(
        GRAPH,
        knobs={"scheduler": policies.Fifo, "slots": [1, 2]},
        strategy="grid", budget=2, frames=5, warmup=0, out=tmp_path / "out", progress=False,
    )  # fmt: skip
    assert [row["valid"] for row in result.rows] == [True, True], result.rows
    assert result.best is not None
    assert result.best["run"]["scheduler"] == "policies:Fifo"
