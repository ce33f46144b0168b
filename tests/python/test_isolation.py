"""Crashes are contained (`tomii.isolation`): real C schedulers that segfault, abort, `exit(3)` or
hang, compiled here against the real header, through a sweep (rows invalid with the signal, exit
status or time limit named; fifo's rows valid; a broken process pool replaced) and through
`check()` (a failing report card, never an exception); the worker replaced after a crash, a time
limit, a stuck plugin thread and `tomii.HangError`; Ctrl-C; no child process left behind."""

from __future__ import annotations

import _thread
import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import resource_tracker
from pathlib import Path
from typing import Any

import pytest
from reference import GRAPHS, SYNTHETIC, compile_c_scheduler

import tomii
from tomii import graphs
from tomii.check import check
from tomii.check import suite as check_suite
from tomii.experiments import sweep
from tomii.isolation import ChildFailed, ChildTimeout, Isolated

#: Each broken scheduler: a fixture of tomii-core/tests/c and its `-D` macro. crash_sched.c misbehaves
#: after 5 tasks (AFTER), fifo_sched.c with HANG_POP_AFTER after 50 pops.
VARIANTS = {
    "segv": ("crash_sched.c", "-DCRASH_SEGFAULT"),
    "exit3": ("crash_sched.c", "-DCRASH_EXIT"),
    "abort": ("crash_sched.c", "-DCRASH_ABORT"),
    "spin": ("crash_sched.c", "-DHANG_POP", "-DAFTER=0"),
    "hang": ("fifo_sched.c", "-DHANG_POP_AFTER=50"),
}
FRAMES = 20


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The broken schedulers, compiled: name → dylib (named so that a sweep labels it `name`)."""
    directory = tmp_path_factory.mktemp("broken")
    return {
        name: compile_c_scheduler(source, directory / f"lib{name}.so", *defines)
        for name, (source, *defines) in VARIANTS.items()
    }


def children() -> set[int]:
    """The process ids of this process's living (or unreaped) children, but multiprocessing's
    resource tracker (started with the first "spawn" pool, kept until exit)."""
    found = set()
    for task in Path("/proc/self/task").iterdir():
        found |= {int(pid) for pid in (task / "children").read_text().split()}
    return found - {getattr(resource_tracker._resource_tracker, "_pid", None)}


@pytest.fixture(autouse=True)
def no_child_left() -> Iterator[None]:
    before = children()  # a process pool another test left running, say
    yield
    assert children() <= before


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    return False


def one_graph() -> list[dict[str, Any]]:
    return [graphs.map_reduce(4, 2, cost=graphs.Fixed(2))]


def problems(result: Any, scheduler: str) -> list[str]:
    return [row["problem"] for row in result.rows if row["scheduler"] == scheduler]


# ---------------------------------------------------------------------------------------------
# Sweeps


def test_a_sweep_survives_a_segfault_and_a_hang(broken: dict[str, Path]) -> None:
    result = sweep(
        [broken["segv"], broken["hang"], "fifo"],
        one_graph(),
        repeats=3,
        frames=FRAMES,
        progress=False,
        # The hanging trials wait all of it; the fifo ones, in a fresh child after each crash,
        # must finish within it even on a loaded machine.
        trial_timeout_s=5,
    )
    assert len(result.rows) == 9 and not result.interrupted
    for row in result.rows:
        assert row["valid"] == (row["scheduler"] == "fifo"), row["problem"]
    for problem in problems(result, "segv"):
        assert "scheduler segv" in problem and "killed by SIGSEGV (signal 11)" in problem
    for problem in problems(result, "hang"):
        assert problem.startswith("ChildTimeout: scheduler hang"), problem
        assert "did not finish run_trial within 5 s; killed" in problem
    assert all(gone(row["worker_pid"]) for row in result.rows)


def test_a_plugin_call_that_never_returns_costs_its_child(broken: dict[str, Path]) -> None:
    """The runtime's watchdog stops the run (`scheduler_call_timeout_ms`, a knob) while the
    stuck thread spins on: the row says so, and the next trial gets a fresh child."""
    result = sweep(
        [broken["hang"]],
        one_graph(),
        {"scheduler_call_timeout_ms": [200]},
        repeats=2,
        warmup=0,
        frames=FRAMES,
        progress=False,
        # Only a bound on a broken watchdog: the trial ends 200 ms into the stuck call, and a
        # limit this long never takes the place of the HangError on a slow machine.
        trial_timeout_s=30,
    )
    for row in result.rows:
        assert not row["valid"]
        assert row["problem"].startswith("HangError:"), row["problem"]
        assert "did not return from pop" in row["problem"], row["problem"]
    assert len({row["worker_pid"] for row in result.rows}) == 2


def test_the_stderr_of_a_crash_is_quoted(broken: dict[str, Path]) -> None:
    result = sweep([broken["abort"]], one_graph(), repeats=1, frames=FRAMES, progress=False)
    (problem,) = problems(result, "abort")
    assert "killed by SIGABRT (signal 6)" in problem
    assert "its stderr ended with: c-crash: calling abort() on purpose" in problem


def test_a_broken_process_pool_is_replaced(broken: dict[str, Path]) -> None:
    spawn = multiprocessing.get_context("spawn")
    with ProcessPoolExecutor(1, mp_context=spawn) as pool:
        result = sweep(
            [broken["segv"], "fifo"], one_graph(), repeats=3, frames=FRAMES, progress=False,
            executor=pool,
        )  # fmt: skip
    assert sorted(row["trial"] for row in result.rows) == list(range(6))
    for row in result.rows:
        assert row["valid"] == (row["scheduler"] == "fifo"), row["problem"]
    for problem in problems(result, "segv"):
        assert "scheduler segv" in problem and "SIGSEGV" in problem, problem


def test_ctrl_c_during_a_trial_kills_its_child(broken: dict[str, Path]) -> None:
    """A real SIGINT while a child hangs: the sweep returns what finished, interrupted."""
    previous = signal.signal(signal.SIGALRM, lambda *_: signal.raise_signal(signal.SIGINT))
    signal.setitimer(signal.ITIMER_REAL, 1.0)
    try:
        started = time.monotonic()
        result = sweep(
            ["fifo", broken["hang"]], one_graph(), repeats=1, frames=FRAMES, progress=False,
            seed=1, trial_timeout_s=60,
        )  # fmt: skip
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert result.interrupted and time.monotonic() - started < 30
    assert [row["scheduler"] for row in result.rows] in ([], ["fifo"])


# ---------------------------------------------------------------------------------------------
# check()


@pytest.mark.parametrize(
    ("name", "cause"),
    [("segv", "was killed by SIGSEGV (signal 11)"), ("exit3", "exited with status 3")],
)
def test_check_fails_a_crashing_scheduler_without_raising(
    broken: dict[str, Path], name: str, cause: str
) -> None:
    card = check(broken[name], max_examples=5, seed=0)
    assert not card.passed
    for result in card.results:
        assert not result.passed and result.graph is not None
        assert result.problems[0].startswith("ChildFailed: the child process"), str(card)
        assert cause in result.problems[0] and "during run_graph" in result.problems[0]
        assert result.knobs["scheduler"] == str(broken[name])
        assert f"check({str(broken[name])!r}".replace("'", '"') in result.reproduce
    assert str(broken[name]) in str(card) and "fifo" not in str(card)


def test_check_reports_a_hang_past_its_time_limit(broken: dict[str, Path]) -> None:
    card = check(broken["spin"], max_examples=1, run_timeout_s=0.5)
    assert not card.passed
    for result in card.results:
        assert "ChildTimeout" in result.problems[0]
        assert "did not finish run_graph within 0.5 s; killed" in result.problems[0]


# ---------------------------------------------------------------------------------------------
# The isolation layer itself


def test_a_worker_returns_raises_and_stays() -> None:
    with Isolated() as child:
        pid = child.pid
        assert child.call(os.getpid) == pid != os.getpid()
        with pytest.raises(ValueError, match="invalid literal"):
            child.call(int, "x")
        assert child.call(divmod, 7, 2) == (3, 1)
        os.kill(pid or 0, signal.SIGINT)  # ignored: the parent decides about Ctrl-C
        assert child.call(os.getpid, timeout_s=10) == pid
    assert pid is not None and gone(pid)


def test_a_dead_or_late_worker_is_replaced() -> None:
    with Isolated() as child:
        first = child.call(os.getpid)
        with pytest.raises(ChildFailed, match=r"exited with status 3 during _exit") as died:
            child.call(os._exit, 3)
        assert died.value.pid == first and died.value.reason == "exited with status 3 during _exit"
        second = child.call(os.getpid)
        with pytest.raises(ChildTimeout, match=r"did not finish sleep within 0.2 s; killed"):
            child.call(time.sleep, 30, timeout_s=0.2)
        third = child.call(os.getpid)
    assert len({first, second, third}) == 3 and all(map(gone, (first, second, third)))


def test_a_stopped_worker_is_killed_at_the_time_limit() -> None:
    """SIGSTOP holds a worker without ending it: the time limit still ends the call."""
    with Isolated() as child:
        pid = child.call(os.getpid)
        os.kill(pid, signal.SIGSTOP)
        started = time.monotonic()
        with pytest.raises(ChildTimeout, match=r"did not finish getpid within 1 s; killed"):
            child.call(os.getpid, timeout_s=1)
        assert time.monotonic() - started < 30  # the limit, not a stuck wait for the stopped pid
        assert gone(pid)


def test_a_hang_error_replaces_the_worker(broken: dict[str, Path]) -> None:
    """A run whose scheduler call never returned raises HangError, and its thread spins on in the
    worker: the worker is replaced."""
    with Isolated() as child:
        first = child.call(os.getpid)
        with pytest.raises(tomii.HangError, match="did not return from pop") as raised:
            child.call(
                tomii.run_graph, GRAPHS / "diamond.json", dylibs=[SYNTHETIC], workers=2,
                frames=1000, scheduler_plugin=broken["hang"], scheduler_call_timeout_ms=200,
            )  # fmt: skip
        assert raised.value.result.report["status"] == "failed"  # type: ignore[attr-defined]
        assert child.call(os.getpid) != first


def test_ctrl_c_in_the_parent_kills_the_worker() -> None:
    previous = signal.signal(signal.SIGALRM, lambda *_: signal.raise_signal(signal.SIGINT))
    try:
        with Isolated() as child:
            pid = child.call(os.getpid)
            # Armed only now: starting the worker takes about a second on a loaded machine, and
            # the interrupt must come during the call below, not before it.
            signal.setitimer(signal.ITIMER_REAL, 1.0)
            with pytest.raises(KeyboardInterrupt):
                child.call(time.sleep, 30)
            assert child.pid is None and gone(pid)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_in_process_checks_stay_available() -> None:
    card = check("fifo", max_examples=3, isolation="none")
    assert card.passed, str(card)


def test_a_script_read_from_stdin_can_start_a_worker() -> None:
    """A `__main__` without a file (`python -` reading stdin) is not imported again by the child."""
    script = (
        "from tomii.isolation import Isolated\n"
        "with Isolated() as child:\n"
        "    print(child.call(abs, -3))\n"
    )
    done = subprocess.run(
        [sys.executable, "-"],
        input=script,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "3"


@pytest.mark.parametrize("isolation", ["process", "none"])
def test_ctrl_c_during_a_check_returns_what_it_had(isolation: str) -> None:
    """Ctrl-C (KeyboardInterrupt in the calling thread) stops the check and returns its card:
    the runs made so far, marked interrupted, never passed, and no child process left."""
    done = threading.Event()
    presses = 0

    def press_ctrl_c() -> None:
        # Once after 3 s. One press must do; if the check went on, the test presses again every
        # 30 s so that it ends, and fails on the count.
        nonlocal presses
        wait = 3.0
        while not done.wait(wait):
            presses += 1
            _thread.interrupt_main()
            wait = 30.0

    presser = threading.Thread(target=press_ctrl_c, daemon=True)
    presser.start()
    try:
        card = check("fifo", max_examples=100_000, isolation=isolation)
    finally:
        done.set()
        presser.join()
    assert presses == 1, "the check went on after the first Ctrl-C"
    assert card.interrupted and not card.passed
    [result] = card.results  # the first property, stopped; the second never started
    assert result.interrupted and result.passed and result.examples >= 0
    assert str(card).startswith("scheduler fifo: INTERRUPTED (Ctrl-C): no failure in the runs")


def test_a_ctrl_c_a_finalizer_swallowed_still_stops_the_check(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Python raises Ctrl-C's KeyboardInterrupt wherever the main thread runs Python code next;
    in a finalizer (an object's `__del__`) it is printed as ignored and lost. The check notes the
    press itself, so it stops at its next example all the same."""
    ignored: list[type[BaseException] | None] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda raised: ignored.append(raised.exc_type))

    class Finalized:
        def __del__(self) -> None:
            _thread.interrupt_main()
            for _ in range(100):  # the handler runs here, and its exception is ignored
                pass

    runs = 0

    def run_graph(*args: Any, **kwargs: Any) -> Any:
        nonlocal runs
        runs += 1
        if runs == 3:
            Finalized()  # dropped at once: its __del__ runs
        return tomii.run_graph(*args, **kwargs)

    monkeypatch.setattr(check_suite, "run_graph", run_graph)
    card = check("fifo", max_examples=200, isolation="none")
    assert ignored == [KeyboardInterrupt]  # the exception was lost, as a finalizer loses it
    assert card.interrupted and not card.passed
    [result] = card.results
    assert result.interrupted and result.examples == 3


def test_a_run_finished_after_an_ejection_keeps_its_outputs(tmp_path: Path) -> None:
    """Under fallback, a scheduler stuck in one pop is ejected and the run finishes on the host's
    FIFO without the stuck worker: its result holds every frame's outputs, the same as a run
    that never faulted."""
    once = compile_c_scheduler("crash_sched.c", tmp_path / "libonce.so", "-DHANG_POP_ONCE")
    common: dict[str, Any] = {"dylibs": [SYNTHETIC], "workers": 2, "frames": 100}
    expected = tomii.run_graph(GRAPHS / "diamond.json", collect_outputs=True, **common)
    with Isolated() as child:  # the stuck thread spins on in the child, not here
        result = child.call(
            tomii.run_graph, GRAPHS / "diamond.json", collect_outputs=True,
            scheduler_plugin=once, on_scheduler_fault="fallback",
            scheduler_call_timeout_ms=300, **common,
        )  # fmt: skip
    assert result.report["status"] == "completed"
    assert result.report["scheduler"]["ejected"]
    assert result.outputs == expected.outputs and len(result.outputs) == 100
