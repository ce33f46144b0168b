"""Sweeps on a Dask cluster of separate processes: a `dask scheduler` and two `dask worker`s on
loopback, started here and torn down after, even on failure, with no process of theirs left.

The rows' validity equals a local run's (`isolation="process"`) per configuration, and no row
says `retried`. A worker SIGKILLed mid-sweep loses no trial: Dask runs the trial it was running
again on the other worker, and that row says `retried` 1; so does it when the scheduler allows
no worker death (`allowed-failures` 0), where the trial fails with KilledWorker and the sweep
submits it again itself. A trial every worker dies running is given up: its row is invalid and
names the workers lost (a stand-in for Dask there: a real one would lose every worker).
Behaviour only, never timing.

The workers run without a nanny (`--no-nanny`): the `dask worker` process is the worker itself,
so the pid a row reports is the process to kill, and once killed it stays dead, like a machine
that goes down (with a nanny, the nanny would start a new worker in its place, and the trial
could run again there rather than elsewhere)."""

from __future__ import annotations

import _thread
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from tomii import graphs
from tomii.experiments import SweepResult, sweep
from tomii.experiments.sweep import run_trial

distributed = pytest.importorskip("distributed")

#: A trial lasts about 0.5 s (40 frames of 6 tasks of 2 ms on one worker); a worker is killed
#: KILL_AFTER_S after it reported a trial, in the middle of the next one it began right then.
SETTINGS: dict[str, Any] = {
    "schedulers": ["fifo", "work-stealing"],
    "graphs": [graphs.map_reduce(4, 2, cost=graphs.Fixed(2000))],
    "knobs": {"slots": [1, 2]},
    "repeats": 2,
    "warmup": 0,
    "frames": 40,
    "progress": False,
    "show": False,
}
TRIALS = 2 * 2 * 2
KILL_AFTER_S = 0.15
#: How long the cluster may take to come up, and a sweep on it to end (then it is interrupted).
START_TIMEOUT_S = 60.0
SWEEP_TIMEOUT_S = 60.0


def dask(*arguments: str) -> list[str]:
    """The `dask` command of this interpreter's environment (`python -m dask`)."""
    return [sys.executable, "-m", "dask", *arguments]


def start(command: list[str], log: Path) -> subprocess.Popen[bytes]:
    """`command` in a session of its own (so that its whole process group can be ended), its
    output to `log`."""
    with log.open("wb") as out:
        return subprocess.Popen(
            command, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip


@dataclass
class Cluster:
    directory: Path
    scheduler: subprocess.Popen[bytes]
    workers: list[subprocess.Popen[bytes]]

    @property
    def scheduler_file(self) -> Path:
        return self.directory / "scheduler.json"

    def add_worker(self) -> None:
        """Another single-thread worker without a nanny, on 127.0.0.1."""
        name = f"w{len(self.workers)}"
        command = dask(
            "worker", "--scheduler-file", str(self.scheduler_file), "--host", "127.0.0.1",
            "--nworkers", "1", "--nthreads", "1", "--no-nanny", "--no-dashboard",
            "--memory-limit", "0", "--death-timeout", "30s", "--name", name,
            "--local-directory", str(self.directory / name),
        )  # fmt: skip
        self.workers.append(start(command, self.directory / f"{name}.log"))

    def log_text(self) -> str:
        return "\n".join(
            f"--- {log.name}\n{log.read_text(errors='replace')}"
            for log in sorted(self.directory.glob("*.log"))
        )

    def wait_for(self, condition: Callable[[], Any], what: str) -> Any:
        """`condition()` once true, polled for up to START_TIMEOUT_S; fails at once when a
        process exits that should not have."""
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            value = condition()
            if value:
                return value
            if self.scheduler.poll() is not None or all(w.poll() is not None for w in self.workers):
                pytest.fail(f"the cluster stopped while waiting for {what}:\n{self.log_text()}")
            time.sleep(0.05)
        pytest.fail(f"no {what} after {START_TIMEOUT_S} s:\n{self.log_text()}")


def stop(*stages: list[subprocess.Popen[bytes]]) -> None:
    """Stage by stage (the workers, then the scheduler, whom they would otherwise try to reach
    while they close), SIGTERM to each process group, SIGKILL to what is left after 15 s; then
    no process of those groups may remain."""
    for processes in stages:
        for process in processes:
            if process.poll() is None:
                os.killpg(process.pid, signal.SIGTERM)
        for process in processes:
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait(timeout=15)
    for process in (process for processes in stages for process in processes):
        for _ in range(100):  # a descendant may take a moment to go once its parent is gone
            try:
                os.killpg(process.pid, 0)
            except ProcessLookupError:
                break
            time.sleep(0.05)
        else:
            os.killpg(process.pid, signal.SIGKILL)
            pytest.fail(f"a process of {process.args!r} outlived it")


def read_json(path: Path) -> dict[str, Any] | None:
    try:
        document: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None  # not there yet, or half written
    return document


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    """A scheduler and two workers on 127.0.0.1, each port chosen by the system, without
    dashboards. Should this test process die, the scheduler ends after 120 s without a task and
    the workers 30 s after losing it."""
    directory = tmp_path_factory.mktemp("dask")
    scheduler = start(
        dask("scheduler", "--host", "127.0.0.1", "--port", "0", "--no-dashboard",
             "--scheduler-file", str(directory / "scheduler.json"), "--idle-timeout", "120s"),
        directory / "scheduler.log",
    )  # fmt: skip
    started = Cluster(directory, scheduler, [])
    try:
        started.add_worker()
        started.add_worker()
        started.wait_for(lambda: read_json(started.scheduler_file), "scheduler file")
        yield started
    finally:
        stop(started.workers, [scheduler])


def client_of(cluster: Cluster, workers: int = 2) -> Any:
    """A client of `cluster` once `workers` workers are in."""
    client = distributed.Client(scheduler_file=str(cluster.scheduler_file), timeout="30s")
    try:
        cluster.wait_for(
            lambda: len(client.scheduler_info()["workers"]) >= workers, f"{workers} workers"
        )
    except BaseException:
        client.close()
        raise
    return client


@pytest.fixture(scope="module")
def local() -> SweepResult:
    """The same sweep on this machine, each trial in a child process."""
    return sweep(**SETTINGS, isolation="process")


def validity(result: SweepResult) -> dict[tuple[Any, ...], list[bool]]:
    """Per (scheduler, graph, knobs), the validity of its repeats."""
    cells: dict[tuple[Any, ...], list[bool]] = {}
    for row in sorted(result.rows, key=lambda row: row["repeat"]):
        key = (row["scheduler"], row["graph"], row["workers"], row["slots"], row["frames"])
        cells.setdefault(key, []).append(row["valid"])
    return cells


def on_cluster(client: Any, **options: Any) -> SweepResult:
    """The sweep on `client`, interrupted (Ctrl-C as sweep takes it) past SWEEP_TIMEOUT_S."""
    timer = threading.Timer(SWEEP_TIMEOUT_S, _thread.interrupt_main)
    timer.start()
    try:
        result = sweep(**SETTINGS, executor=client, **options)
    finally:
        timer.cancel()
    assert not result.interrupted, f"the sweep did not end within {SWEEP_TIMEOUT_S} s"
    return result


def assert_every_trial_once(result: SweepResult, local: SweepResult) -> None:
    assert sorted(row["trial"] for row in result.rows) == list(range(TRIALS))
    assert all(row["valid"] for row in result.rows), [row["problem"] for row in result.rows]
    assert validity(result) == validity(local)


def killed_mid_sweep(cluster: Cluster, client: Any, local: SweepResult) -> SweepResult:
    """The sweep, during which the worker that reports the first trial is SIGKILLed
    KILL_AFTER_S into the trial it began as it sent that one; every trial has its valid row,
    and those of the trial the worker was running say `retried` 1, run by another worker."""
    pids = set(client.run(os.getpid).values())
    killed: list[int] = []

    def kill_the_first_reporter(row: Mapping[str, Any]) -> None:
        if not killed:
            time.sleep(KILL_AFTER_S)
            os.kill(row["worker_pid"], signal.SIGKILL)
            killed.append(row["worker_pid"])

    result = on_cluster(client, on_trial=kill_the_first_reporter)
    [victim] = killed
    [worker] = [w for w in cluster.workers if w.pid == victim]
    assert worker.wait(timeout=10) == -signal.SIGKILL
    assert_every_trial_once(result, local)
    retried = [row for row in result.rows if row["retried"]]
    assert retried, "no row says it ran again, though a worker died in the middle of a trial"
    assert all(row["retried"] == 1 for row in retried), retried
    assert {row["worker_pid"] for row in retried} <= pids - {victim}, (victim, retried)
    assert {row["worker_pid"] for row in result.rows} <= pids
    return result


def test_a_sweep_on_the_cluster_is_as_valid_as_a_local_one(
    cluster: Cluster, local: SweepResult
) -> None:
    with client_of(cluster) as client:
        pids = set(client.run(os.getpid).values())
        result = on_cluster(client)
    assert pids == {worker.pid for worker in cluster.workers if worker.poll() is None}
    assert_every_trial_once(result, local)
    assert {row["worker_pid"] for row in result.rows} <= pids
    assert [row["retried"] for row in result.rows] == [0] * TRIALS
    assert result.environment["parameters"]["executor"] == "Client"


def test_a_worker_killed_mid_sweep_loses_no_trial(cluster: Cluster, local: SweepResult) -> None:
    """Dask's default: the trials of a dead worker run on the others, unbeknownst to the
    client (but for the starts the sweep counts)."""
    with client_of(cluster) as client:
        killed_mid_sweep(cluster, client, local)


def test_a_trial_failed_with_killed_worker_is_submitted_again(
    cluster: Cluster, local: SweepResult
) -> None:
    """A scheduler that allows no worker death fails the trials of a dead worker with
    KilledWorker at once: the sweep submits them again."""
    cluster.add_worker()  # the previous test killed one
    with client_of(cluster) as client:

        def allow_failures(dask_scheduler: Any, count: int) -> int:
            previous: int = dask_scheduler.allowed_failures
            dask_scheduler.allowed_failures = count
            return previous

        previous = client.run_on_scheduler(allow_failures, count=0)
        try:
            killed_mid_sweep(cluster, client, local)
        finally:
            client.run_on_scheduler(allow_failures, count=previous)
    log = (cluster.directory / "scheduler.log").read_text(errors="replace")
    assert "marked as failed because 1 workers died" in log, log[-3000:]


class _Future(Future[Any]):
    def release(self) -> None:
        """What a Dask future has, and sweep calls once it has read the result."""


class DyingCluster:
    """Stands for a `distributed.Client` whose workers die whenever they run trial `doomed`,
    and its worker for the first run of trial `lost_once`: each submission first reports the
    trial's start, as `_dask_trial` would, from worker tcp://127.0.0.1:<the submission's
    number>, then fails with KilledWorker or runs the trial here."""

    def __init__(self, doomed: int, lost_once: int) -> None:
        self.handlers: dict[str, Callable[[Any], None]] = {}
        self.doomed, self.lost_once = doomed, lost_once
        self.submissions: list[int] = []

    def subscribe_topic(self, topic: str, handler: Callable[[Any], None]) -> None:
        self.handlers[topic] = handler

    def unsubscribe_topic(self, topic: str) -> None:
        del self.handlers[topic]

    def submit(self, fn: Any, topic: str, submission: int, *arguments: Any) -> _Future:
        from distributed.scheduler import KilledWorker

        trial, worker = arguments[0], f"tcp://127.0.0.1:{submission + 1}"
        self.submissions.append(trial)
        self.handlers[topic]((time.time(), {"trial": trial, "worker": worker, "pid": 0}))
        future = _Future()
        if trial == self.doomed or (trial == self.lost_once and submission == 0):
            last: Any = SimpleNamespace(address=worker)  # a WorkerState has it too
            future.set_exception(KilledWorker(f"run_trial-{trial}", last, 0))
        else:
            future.set_result(run_trial(*arguments))
        return future


def test_a_trial_every_worker_dies_running_is_given_up() -> None:
    cluster = DyingCluster(doomed=1, lost_once=2)
    quick = {**SETTINGS, "schedulers": ["fifo"], "repeats": 3, "frames": 3, "knobs": {}}
    quick["graphs"] = [graphs.map_reduce(2, 1, cost=graphs.Fixed(2))]
    result = sweep(**quick, executor=cluster)
    rows = {row["trial"]: row for row in result.rows}
    assert sorted(rows) == [0, 1, 2] and not cluster.handlers
    assert [cluster.submissions.count(trial) for trial in range(3)] == [1, 4, 2]
    doomed = rows[1]
    assert not doomed["valid"] and doomed["retried"] == 3 and doomed["worker_pid"] == -1
    assert doomed["problem"].startswith("KilledWorker: every worker it was given died")
    for port in range(1, 5):
        assert f"tcp://127.0.0.1:{port}" in doomed["problem"], doomed["problem"]
    assert rows[0]["valid"] and rows[0]["retried"] == 0, rows[0]
    assert rows[2]["valid"] and rows[2]["retried"] == 1, rows[2]
