"""Crashes are contained (`tomii.isolation`): real C schedulers that segfault, abort, `exit(3)` or
hang, compiled here against the real header, through a sweep (rows invalid with the signal, exit
status or time limit named; fifo's rows valid; a broken process pool replaced) and through
`check()` (a failing report card, never an exception); the worker replaced after a crash, a time
limit, a stuck plugin thread and `tomii.HangError`; Ctrl-C; no child process left behind."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from reference import ROOT

import tomii
from tomii import graphs
from tomii.check import check
from tomii.experiments import sweep
from tomii.isolation import ChildFailed, ChildTimeout, Isolated

C_DIR = ROOT / "tomii-core" / "tests" / "c"
INCLUDE = ROOT / "tomii-types" / "include"

#: A scheduler that behaves as tests/c/fifo_sched.c until its pop number CRASH_AFTER (counting
#: from 0, per process), which runs CRASH instead.
CRASHING = """\
#define tomii_scheduler_v1 fifo_table /* the included scheduler's entry, renamed */
#include "fifo_sched.c"
#undef tomii_scheduler_v1
#include <signal.h>

static int32_t crashing_pop(void *state, uint32_t worker, TomiiTask *out, size_t max, size_t *n) {
    static _Atomic unsigned long pops;
    if (pops++ >= CRASH_AFTER) {
        CRASH;
    }
    return fifo_pop(state, worker, out, max, n);
}

const TomiiSchedulerVtable *tomii_scheduler_v1(void) {
    static TomiiSchedulerVtable table;
    table = *fifo_table();
    table.header.name = "crashing";
    table.pop = crashing_pop;
    return &table;
}
"""
#: Each broken scheduler: its source and compiler arguments.
VARIANTS = {
    "segv": (CRASHING, ["-DCRASH_AFTER=0", "-DCRASH=*(volatile int *)0 = 1"]),
    "exit3": (CRASHING, ["-DCRASH_AFTER=0", "-DCRASH=exit(3)"]),
    "abort": (
        CRASHING,
        ["-DCRASH_AFTER=0", '-DCRASH=fprintf(stderr, "crashing: about to abort\\n"); abort()'],
    ),
    "spin": (CRASHING, ["-DCRASH_AFTER=0", "-DCRASH=for (;;) {}"]),
    "hang": (None, ["-DHANG_POP_AFTER=50"]),
}
FRAMES = 20


@pytest.fixture(scope="module")
def broken(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """The broken schedulers, compiled: name → dylib."""
    directory = tmp_path_factory.mktemp("broken")
    built = {}
    for name, (source, arguments) in VARIANTS.items():
        path = C_DIR / "fifo_sched.c"
        if source is not None:
            path = directory / f"{name}.c"
            path.write_text(source, encoding="utf-8")
        library = directory / f"lib{name}.so"
        command = [os.environ.get("CC", "cc"), "-shared", "-fPIC", "-O1", "-std=c11"]
        command += [f"-I{INCLUDE}", f"-I{C_DIR}", *arguments, str(path), "-o", str(library)]
        subprocess.run(command, check=True, capture_output=True, timeout=60)
        built[name] = library
    return built


@pytest.fixture(autouse=True)
def no_child_left() -> Iterator[None]:
    yield
    assert multiprocessing.active_children() == []


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
        trial_timeout_s=1.5,
    )
    assert len(result.rows) == 9 and not result.interrupted
    for row in result.rows:
        assert row["valid"] == (row["scheduler"] == "fifo"), row["problem"]
    for problem in problems(result, "segv"):
        assert "scheduler segv" in problem and "killed by SIGSEGV (signal 11)" in problem
    for problem in problems(result, "hang"):
        assert problem.startswith("ChildTimeout: scheduler hang"), problem
        assert "did not finish run_trial within 1.5 s; killed" in problem
    assert all(gone(row["worker_pid"]) for row in result.rows)


def test_a_plugin_call_that_never_returns_costs_its_child(broken: dict[str, Path]) -> None:
    """The runtime's watchdog stops the run (`scheduler_call_timeout_ms`, a knob) while the
    stuck thread spins on, or, where the run cannot end without that thread, the time limit
    does: either way the row says so and the next trial gets a fresh child."""
    result = sweep(
        [broken["hang"]],
        one_graph(),
        {"scheduler_call_timeout_ms": [200]},
        repeats=2,
        warmup=0,
        frames=FRAMES,
        progress=False,
        trial_timeout_s=1.5,
    )
    for row in result.rows:
        assert not row["valid"]
        assert any(
            words in row["problem"]
            for words in ("did not return from pop", "did not finish run_trial within 1.5 s")
        ), row["problem"]
    assert len({row["worker_pid"] for row in result.rows}) == 2


def test_the_stderr_of_a_crash_is_quoted(broken: dict[str, Path]) -> None:
    result = sweep([broken["abort"]], one_graph(), repeats=1, frames=FRAMES, progress=False)
    (problem,) = problems(result, "abort")
    assert "killed by SIGABRT (signal 6)" in problem
    assert "its stderr ended with: crashing: about to abort" in problem


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


def test_a_hang_error_replaces_the_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever `tomii.HangError` is (here: ValueError), a call that raises it ends its worker."""
    monkeypatch.setattr(tomii, "HangError", ValueError, raising=False)
    with Isolated() as child:
        first = child.call(os.getpid)
        with pytest.raises(ValueError):
            child.call(int, "x")
        assert child.call(os.getpid) != first


def test_ctrl_c_in_the_parent_kills_the_worker() -> None:
    previous = signal.signal(signal.SIGALRM, lambda *_: signal.raise_signal(signal.SIGINT))
    signal.setitimer(signal.ITIMER_REAL, 0.3)
    try:
        with Isolated() as child:
            pid = child.call(os.getpid)
            with pytest.raises(KeyboardInterrupt):
                child.call(time.sleep, 30)
            assert child.pid is None and gone(pid)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def test_in_process_checks_stay_available() -> None:
    card = check("fifo", max_examples=3, isolation="none")
    assert card.passed, str(card)
