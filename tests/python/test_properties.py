"""The property suite (`tomii.check`) against every shipped scheduler, against schedulers that
break the contract on purpose (each must be caught), and against a scheduler built outside the
repository.

`TOMII_CHECK_PROFILE=deep` runs many more examples (on demand; CI runs the fast profile).
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import ROOT, SYNTHETIC, TARGET

import tomii
from tomii.check import SCHEDULERS, ReferenceModel, check, graphs
from tomii.check.invariants import check_trace, rows_of

PROFILE = os.environ.get("TOMII_CHECK_PROFILE", "fast")
BROKEN = TARGET / "libtomii_test_broken_scheduler.so"
CARGO_ENV = {"CARGO_TARGET_DIR": str(ROOT / "target" / "plugin-tests")}


def test_the_suite_knows_every_shipped_scheduler() -> None:
    # The policies: every crate of schedulers/ whose library is a libtomii_sched_* (replay's is
    # not: it is tomii replay's, loaded by its own name).
    shipped = {
        p.name
        for p in (ROOT / "schedulers").iterdir()
        if 'name = "tomii_sched_'
        in ((p / "Cargo.toml").read_text() if (p / "Cargo.toml").is_file() else "")
    }
    assert set(SCHEDULERS) == shipped


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_every_shipped_scheduler_keeps_every_invariant(scheduler: str) -> None:
    card = check(scheduler, profile=PROFILE)
    assert card.passed, str(card)
    assert all(result.examples > 0 for result in card.results)


@pytest.mark.parametrize("fault", ["duplicate", "drop", "garbage", "panic", "error"])
def test_check_fails_a_broken_scheduler_with_a_minimal_graph(fault: str) -> None:
    card = check(
        BROKEN,
        sched_opts={"fault": fault, "after": "0"},
        max_examples=15,
        stall_timeout_ms=200,
    )
    assert not card.passed
    for result in card.results:
        assert not result.passed and result.graph is not None
        assert "SchedulerFault" in result.problems[0], str(card)
        # Shrunk: a couple of nodes at most (duplicate needs a task with a successor).
        assert len(result.graph["nodes"]) <= 2, str(card)
        # The failing example's run, recorded for `tomii replay`.
        assert result.replay == f"tomii replay {result.decisions}", str(card)
        assert Path(result.decisions).read_text().startswith('{"format":"tomii-decisions"')
        assert "replay the failing run: tomii replay" in str(card)


FAULT_RUNS = settings(
    max_examples=25 if PROFILE == "fast" else 300,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much],
)


@FAULT_RUNS
@given(
    fault=st.sampled_from(["duplicate", "drop", "garbage", "wrong-worker", "panic", "error"]),
    after=st.integers(0, 6),
    workers=st.integers(1, 3),
    data=st.data(),
)
def test_a_broken_scheduler_is_caught_every_time(
    fault: str, after: int, workers: int, data: st.DataObject
) -> None:
    """Whatever the graph: the run stops with a SchedulerFault, or the fault never happened and
    the run is exactly right. Never a wrong result, a hang or a crash."""
    graph = data.draw(graphs(workers=workers, max_nodes=5, max_factor=4))
    model = ReferenceModel(graph)
    frames = data.draw(st.integers(1, 3))
    try:
        result = tomii.run_graph(
            graph,
            dylibs=[SYNTHETIC],
            scheduler_plugin=BROKEN,
            sched_opts={"fault": fault, "after": str(after)},
            workers=workers,
            slots=2,
            frames=frames,
            trace=True,
            stall_timeout_ms=200,
        )
    except tomii.SchedulerFault as error:
        assert 'scheduler "broken"' in str(error)
        return
    expected = model.run(frames=frames, workers=workers)
    assert result.outputs == expected.outputs
    rows = rows_of(result.trace, result.node_names)
    violations = check_trace(
        rows,
        tasks=model.tasks,
        depends_on=model.deps,
        frames=frames,
        slots=2,
        workers=workers,
        ranges=model.worker_ranges(),
        report=result.report,
    )
    assert violations == []
    # Faults of `pop` fire on the first pop after `after` tasks: with more tasks, they must have.
    # (Those of `push` need a push after that point; test_check_fails_a_broken_scheduler... has
    # them with after=0.)
    # The scheduler sees tasks, not instances: a group of `group_size` instances is one task.
    tasks = len(set(model.leader.values())) * frames
    if fault in ("garbage", "panic") and tasks > after:
        raise AssertionError(f"fault {fault} after {after} of {tasks} tasks went unnoticed")


OUTSIDE_FIFO = """\
    //! A FIFO scheduler written outside the Tomii repository, against the shipped SDK.
    use std::collections::VecDeque;
    use std::ffi::CStr;
    use std::sync::Mutex;

    use tomii_types::abi::TomiiKnobDesc;
    use tomii_types::scheduler::{InitInfo, Scheduler, Task};

    pub struct Outside {
        queue: Mutex<VecDeque<Task>>,
        %(state)s
    }

    impl Scheduler for Outside {
        const NAME: &'static CStr = c"outside";
        const KNOBS: &'static [TomiiKnobDesc] = &[];

        fn create(_init: &InitInfo) -> Result<Self, String> {
            Ok(Outside { queue: Mutex::new(VecDeque::new()), %(init)s })
        }

        fn push(&self, _worker: Option<u32>, tasks: &[Task]) -> Result<(), String> {
            self.queue.lock().unwrap().extend(tasks.iter().copied());
            Ok(())
        }

        fn pop(&self, worker: u32, out: &mut [Task]) -> Result<usize, String> {
            let mut queue = self.queue.lock().unwrap();
            let Some(at) = queue.iter().position(|t| (t.worker_lo..t.worker_hi).contains(&worker)) else {
                return Ok(0);
            };
            %(pop)s
        }
    }

    tomii_types::export_scheduler!(Outside);
"""

CORRECT = {"state": "", "init": "", "pop": "out[0] = queue.remove(at).unwrap(); Ok(1)"}
#: Loses every 50th task it is given: a subtle bug the suite must find.
LOSSY = {
    "state": "popped: std::sync::atomic::AtomicU64,",
    "init": "popped: std::sync::atomic::AtomicU64::new(0)",
    "pop": (
        "let task = queue.remove(at).unwrap();"
        " if self.popped.fetch_add(1, std::sync::atomic::Ordering::Relaxed) % 50 == 49 {"
        " return Ok(0); }"
        " out[0] = task; Ok(1)"
    ),
}


def build_outside(root: Path, parts: dict[str, str]) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "Cargo.toml").write_text(
        textwrap.dedent(
            f"""\
            [package]
            name = "outside-{root.name}"
            version = "0.1.0"
            edition = "2021"

            [lib]
            crate-type = ["cdylib"]

            [dependencies]
            tomii-types = "0.1"
            """
        ),
        encoding="utf-8",
    )
    (root / "src" / "lib.rs").write_text(textwrap.dedent(OUTSIDE_FIFO) % parts, encoding="utf-8")
    return tomii.build(plugin_manifest=root / "Cargo.toml", release=False, env=CARGO_ENV).path


def test_check_passes_and_fails_schedulers_built_outside_the_repository(tmp_path: Path) -> None:
    correct = build_outside(tmp_path / "correct", CORRECT)
    card = check(correct, profile=PROFILE)
    assert card.passed, str(card)
    lossy = build_outside(tmp_path / "lossy", LOSSY)
    card = check(lossy, max_examples=40, stall_timeout_ms=200)
    assert not card.passed
    failed: Any = card.results[0]
    assert "SchedulerFault" in failed.problems[0] and "stall" in failed.problems[0].lower(), str(
        card
    )
    assert "FAIL" in str(card) and "graph:" in str(card)
