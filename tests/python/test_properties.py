"""The property suite (`tomii.check`) against every shipped scheduler, against schedulers that
break the contract on purpose (each must be caught, and `tomii replay` of the failing run must name
the same failure), against C schedulers whose failure does not repeat (the card: one example, its
seed, "did not repeat") or that only the check catches, and against a scheduler built outside the
repository.

`TOMII_CHECK_PROFILE=deep` runs many more examples (on demand; CI runs the fast profile).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from reference import ROOT, SYNTHETIC, TARGET, compile_c_scheduler

import tomii
from tomii.check import SCHEDULERS, PropertyResult, ReferenceModel, ReportCard, check, graphs
from tomii.check.invariants import check_trace, rows_of
from tomii.check.suite import CARD_GRAPH_CHARS, DID_NOT_REPEAT

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


def tomii_replay(decisions: str) -> subprocess.CompletedProcess[str]:
    """`tomii replay DECISIONS`, the package's command (as its console script runs it)."""
    code = "import sys; from tomii.cli import main; sys.exit(main(sys.argv[1:]))"
    return subprocess.run(
        [sys.executable, "-c", code, "replay", decisions],
        capture_output=True,
        text=True,
        env={**os.environ, "TOMII_SCHEDULER_PATH": str(TARGET)},
        timeout=60,
        check=False,
    )


def replayed(decisions: str) -> str:
    """What `tomii replay DECISIONS` printed, once it exited 0."""
    done = tomii_replay(decisions)
    assert done.returncode == 0, done.stderr
    return done.stdout


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
        # Its replay names the failure the card shows and reproduces it (not a stall of its own).
        said = replayed(result.decisions).splitlines()
        problem = result.problems[0].removeprefix("SchedulerFault: ")
        assert said[0] == f"the recording ends with its run failing: {problem}", said
        how = "(a lost task)" if fault == "drop" else "reproduced the run up to it: every worker"
        assert how in said[1] and 'scheduler "replay"' not in said[1], said


def test_replaying_a_checks_finding_in_a_run_that_completed_names_it(tmp_path: Path) -> None:
    """A violation only the check sees (a scheduler named fifo that runs the newest task first: every
    run completes, right but for FIFO order) is appended to the decisions file, and the replay
    names it; the scheduler's library gone, the replay says it is missing, not changed."""
    lifo = compile_c_scheduler("fifo_sched.c", tmp_path / "liblifo.so", "-DLIFO_AS_FIFO")
    card = check(lifo, max_examples=5, workers=(1, 1), isolation="none")
    [outputs, invariants] = card.results
    assert outputs.passed and not invariants.passed, str(card)
    assert invariants.problems[0].startswith("fifo order: "), str(card)
    end, found = Path(invariants.decisions).read_text().splitlines()[-2:]
    assert json.loads(end)["end"]["status"] == "completed"
    found_by = json.loads(found)["found"]
    assert found_by["by"] == 'tomii.check property "trace invariants"'
    assert found_by["problems"][0].startswith("fifo order: ")
    said = replayed(invariants.decisions).splitlines()
    assert said[0].startswith(
        'the recording ends with what tomii.check property "trace invariants" found in its run: '
        "fifo order: "
    ), said
    assert said[1].startswith("the replay on the engine reproduced the run it was found in"), said
    lifo.unlink()
    done = tomii_replay(invariants.decisions)
    assert done.returncode == 0, done.stderr
    assert f"note: the recorded scheduler's library {lifo} is missing" in done.stderr
    assert "changed" not in done.stderr


def test_a_failure_that_does_not_repeat_shows_one_example_with_its_seed(tmp_path: Path) -> None:
    """A scheduler that loses a task once (the first pop with 6 tasks ready, in any process), then
    never again: hypothesis' Flaky. The card shows the first failing example alone (its problem,
    knobs and graph, a long graph by its size and file), the seed, and that it did not repeat: no
    raw FlakyFailure, no replay of a run that passed."""
    mark = tmp_path / "dropped"
    once = compile_c_scheduler(
        "fifo_sched.c", tmp_path / "libonce.so", f'-DDROP_ONCE_MARK="{mark}"', "-DDROP_WHEN_READY=6"
    )
    card = check(once, max_examples=10, stall_timeout_ms=200)
    assert mark.exists()
    result = card.results[0]
    assert result.flaky and not result.passed and result.seed is None, str(card)
    [problem] = result.problems
    assert problem.startswith('SchedulerFault: scheduler "c-fifo" stalled'), str(card)
    assert result.rerun_passed and not result.replay and not result.decisions
    text = str(card)
    block = text.split("  FAIL  outputs")[1].split("\n  pass  trace invariants")[0]
    assert "FlakyFailure" not in text and "Flaky" not in block
    assert f"        {DID_NOT_REPEAT}\n" in block
    assert "did not repeat: this example failed, then passed when hypothesis ran it again" in block
    assert "        seed: none (derandomized: `reproduce` draws the same examples again;" in block
    assert block.count("\n        knobs: ") == block.count("\n        graph: ") == 1
    assert f"        knobs: {json.dumps(result.knobs)}\n" in block
    assert "replay: none (the example's run recorded for replay did not fail)" in block
    whole = json.dumps(result.graph)
    if len(whole) > CARD_GRAPH_CHARS:
        assert whole not in text
        assert f"characters of JSON; the whole graph: {result.graph_file}\n" in block
        assert json.loads(Path(result.graph_file).read_text()) == result.graph
    else:
        assert f"        graph: {whole}\n" in block
    assert card.to_dict()["results"][0]["graph"] == result.graph
    assert card.results[1].passed  # the task was lost once: never again


def test_a_card_sums_up_a_long_graph_and_names_the_seed() -> None:
    nodes = [{"name": f"node{i}", "function": "checksum", "factor": 3} for i in range(30)]
    graph: dict[str, Any] = {"nodes": nodes, "post_nodes": [{"name": "p", "function": "checksum"}]}
    size = len(json.dumps(graph))
    failed = PropertyResult(
        "outputs", "d", False, 3, 0.1, ["boom"], graph, {"workers": 1}, flaky=True, seed=7
    )
    text = str(ReportCard("s", [failed]))
    assert "        seed: 7 (`reproduce` passes it: the same examples again)" in text
    assert f"        graph: 30 node(s), 1 post-node(s), {size} characters of JSON; begins " in text
    assert json.dumps(graph)[:120] + "…" in text and json.dumps(graph) not in text
    kept = PropertyResult(
        "outputs", "d", False, 3, 0.1, ["boom"], graph, {}, graph_file="/tmp/g.json"
    )
    assert (
        f"        graph: 30 node(s), 1 post-node(s), {size} characters of JSON; the whole graph: "
        "/tmp/g.json\n" in str(ReportCard("s", [kept]))
    )
    assert ReportCard("s", [kept]).to_dict()["results"][0]["graph"] == graph


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


def test_shrinking_stops_at_its_budget_with_the_smallest_example_so_far(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With no time left to shrink (the budget 0 s), the first failing example is the one
    reported, at once, and the card says shrinking was stopped."""
    from tomii.check import suite

    monkeypatch.setattr(suite, "SHRINK_BUDGET_S", 0.0)
    card = check(
        BROKEN, sched_opts={"fault": "drop", "after": "0"}, max_examples=15, stall_timeout_ms=200
    )
    assert not card.passed
    for result in card.results:
        assert result.shrink_stopped and result.examples == 1, str(card)
        assert "SchedulerFault" in result.problems[0], str(card)
    assert "shrinking stopped after 0 s: the example is the smallest failing one" in str(card)
