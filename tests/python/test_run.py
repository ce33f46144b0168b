"""The Python package runs graphs in-process: values, errors and options, against the built plugins."""

from __future__ import annotations

import _thread
import dataclasses
import json
import os
import pickle
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from reference import GRAPHS, SYNTHETIC, checksum, compile_c_scheduler

import tomii
from tomii.export import ExportedKernel


def test_checksums_match_for_every_frame_and_scheduler() -> None:
    graph = {
        "nodes": [
            {"name": "each", "function": "checksum", "factor": 3, "args": [{"type": "$index"}]},
            {
                "name": "sink",
                "function": "checksum",
                "args": [{"type": "$res", "predecessor": {"name": "each", "index": "all"}}],
            },
        ]
    }
    for scheduler in ["fifo", "c-fifo", "work-stealing", "priority"]:
        result = tomii.run_graph(
            graph, dylibs=[SYNTHETIC], scheduler=scheduler, workers=2, slots=3, frames=8
        )
        assert result.report["frames"] == 8
        assert result.report["scheduler"]["name"] == scheduler
        for frame, outputs in enumerate(result.outputs):
            each = [checksum("each", i, frame, [i]) for i in range(3)]
            assert outputs == [("sink", 0, checksum("sink", 0, frame, each))]


def test_a_graph_file_and_post_outputs() -> None:
    result = tomii.run_graph(GRAPHS / "post_node.json", dylibs=[SYNTHETIC], frames=3)
    assert [name for name, _, _ in result.post_outputs] == ["summary", "summary"]


def test_a_result_is_read_only_and_its_report_made_when_read_equals_the_report_file(
    tmp_path: Path,
) -> None:
    graph = {"nodes": [{"name": "x", "function": "noop", "factor": 2}]}
    path = tmp_path / "report.json"
    result = tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=3, report=path)
    written = json.loads(path.read_text())
    for key in ("wall_time_s", "throughput_frames_per_s", "tasks_per_s", "latency_us", "summary"):
        written.pop(key)
    report = result.report
    assert isinstance(report, tomii.Report) and report is result.report, "made once"
    assert {key: report[key] for key in written} == written
    assert report.tasks == 6
    with pytest.raises(dataclasses.FrozenInstanceError):
        result.outputs = []
    copy = pickle.loads(pickle.dumps(tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=2)))
    assert copy.report.frames == 2 and copy.outputs == result.outputs[:2]


def test_errors_are_specific_exceptions() -> None:
    with pytest.raises(tomii.GraphError, match="no nodes"):
        tomii.run_graph({"nodes": []}, dylibs=[SYNTHETIC])
    with pytest.raises(tomii.KernelError, match="boom"):
        tomii.run_graph(
            {"nodes": [{"name": "x", "function": "fail", "args": ["boom"]}]}, dylibs=[SYNTHETIC]
        )
    with pytest.raises(tomii.PluginError, match="nosuch"):
        tomii.run_graph(
            {"nodes": [{"name": "x", "function": "noop"}]}, dylibs=[SYNTHETIC], scheduler="nosuch"
        )
    with pytest.raises(tomii.ConfigError, match="workers is 0"):
        tomii.run_graph(
            {"nodes": [{"name": "x", "function": "noop"}]}, dylibs=[SYNTHETIC], workers=0
        )
    with pytest.raises(tomii.PluginError, match="unknown option"):
        tomii.run_graph(
            {"nodes": [{"name": "x", "function": "noop"}]},
            dylibs=[SYNTHETIC],
            scheduler="random",
            sched_opts={"sed": "1"},
        )
    assert issubclass(tomii.SchedulerFault, tomii.TomiiError)


def test_scheduler_options_from_python() -> None:
    graph = {"nodes": [{"name": "x", "function": "noop", "factor": 4}]}
    result = tomii.run_graph(
        graph, dylibs=[SYNTHETIC], scheduler="random", sched_opts={"seed": "7"}
    )
    assert result.report["tasks"] == 4


def test_inline_continuation_runs_chains_past_the_scheduler_with_the_same_outputs() -> None:
    # A chain of 4 on one worker: each task but the first is its predecessor's continuation.
    graph = {
        "nodes": [{"name": "n0", "function": "checksum", "args": [{"type": "u64", "value": 1}]}]
        + [
            {
                "name": f"n{k}",
                "function": "checksum",
                "args": [{"type": "$res", "predecessor": {"name": f"n{k - 1}"}}],
            }
            for k in range(1, 4)
        ]
    }
    off = tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=5, slots=2)
    on = tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=5, slots=2, inline_continuation=True)
    assert on.outputs == off.outputs
    assert (off.report.tasks_inlined, on.report.tasks_inlined) == (0, 15)
    assert on.report["inline_continuation"] is True


def test_special_files_and_the_graph_itself_are_refused_as_paths(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(tomii.GraphError, match="is not a regular file"):
        tomii.run_graph(fifo, dylibs=[SYNTHETIC])
    graph = tmp_path / "graph.json"
    graph.write_text(json.dumps({"nodes": [{"name": "a", "function": "noop"}]}))
    with pytest.raises(tomii.ConfigError, match="is a FIFO"):
        tomii.run_graph(graph, dylibs=[SYNTHETIC], report=fifo)
    with pytest.raises(tomii.ConfigError, match="is the graph file itself"):
        tomii.run_graph(graph, dylibs=[SYNTHETIC], report=graph)
    assert json.loads(graph.read_text())["nodes"][0]["name"] == "a"


def test_a_failed_run_raises_with_what_it_did_and_writes_its_files(tmp_path: Path) -> None:
    """A kernel failing in frame 499 of 1,000: the exception carries the partial result (status
    "failed", the error, 499 frames, the trace of every task that ran), and the report and trace
    files are written all the same."""
    calls = 0

    def breaks_at_500(value: int) -> int:
        nonlocal calls
        calls += 1
        if calls == 500:
            raise RuntimeError("broke at call 500")
        return value

    kernel = ExportedKernel("tests.breaks_at_500", breaks_at_500, variadic=False)
    graph = {
        "nodes": [
            {"name": "a", "function": "noop"},
            {
                "name": "b",
                "function": "tests.breaks_at_500",
                "args": [{"type": "$res", "predecessor": {"name": "a"}}],
            },
        ]
    }
    report, trace = tmp_path / "report.json", tmp_path / "trace.csv"
    with pytest.raises(tomii.KernelError, match="broke at call 500") as raised:
        tomii.run_graph(
            graph,
            dylibs=[SYNTHETIC],
            python_kernels=[kernel],
            frames=1000,
            trace=trace,
            report=report,
        )
    result = raised.value.result  # type: ignore[attr-defined]
    assert result.report["status"] == "failed"
    assert "broke at call 500" in result.report["error"]
    assert result.report["frames"] == 499
    # Every `a` of frames 0..499 and every `b` before the failing one.
    assert result.report["tasks"] == 500 + 499
    assert json.loads(report.read_text())["frames"] == 499
    assert len(trace.read_text().splitlines()) == 1 + 500 + 499


def test_a_forked_child_runs_graphs_with_its_own_threads() -> None:
    """A process forked after runs (multiprocessing's default on Linux) inherits the kept runner
    and worker threads' records but not the threads: its runs start their own, and finish."""
    graph = {"nodes": [{"name": "a", "function": "checksum", "args": [{"type": "$index"}]}]}
    for workers in (1, 2):
        tomii.run_graph(graph, dylibs=[SYNTHETIC], workers=workers)
    child = os.fork()
    if child == 0:  # pragma: no cover - the child reports through its exit status
        code = 1
        try:
            result = tomii.run_graph(graph, dylibs=[SYNTHETIC], workers=2, frames=3)
            code = 0 if result.report["frames"] == 3 else 2
        finally:
            os._exit(code)
    deadline = time.monotonic() + 30
    while (finished := os.waitpid(child, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
        time.sleep(0.02)
    if finished[0] == 0:
        os.kill(child, signal.SIGKILL)
        os.waitpid(child, 0)
        pytest.fail("the forked child's run did not finish within 30 s")
    assert os.waitstatus_to_exitcode(finished[1]) == 0
    assert tomii.run_graph(graph, dylibs=[SYNTHETIC], workers=2).report["frames"] == 1


def test_a_scheduler_stuck_in_pop_raises_hang_error_and_the_next_run_works(tmp_path: Path) -> None:
    """A pop that never returns: HangError within the limit, naming the scheduler and the call,
    with the partial result; the stuck thread stays behind and the next run is unaffected."""
    stuck = compile_c_scheduler("fifo_sched.c", tmp_path / "libhang.so", "-DHANG_POP_AFTER=50")
    started = time.monotonic()
    with pytest.raises(tomii.HangError, match=r'"c-fifo" did not return from pop') as raised:
        tomii.run_graph(
            GRAPHS / "diamond.json",
            dylibs=[SYNTHETIC],
            scheduler_plugin=stuck,
            workers=2,
            frames=10_000,
            scheduler_call_timeout_ms=300,
            report=tmp_path / "report.json",
        )
    assert time.monotonic() - started < 10
    report = raised.value.result.report  # type: ignore[attr-defined]
    assert report["status"] == "failed" and "did not return" in report["error"]
    assert 0 < report["frames"] < 10_000
    assert json.loads((tmp_path / "report.json").read_text())["status"] == "failed"
    again = tomii.run_graph(GRAPHS / "diamond.json", dylibs=[SYNTHETIC], workers=2, frames=20)
    assert again.report["status"] == "completed" and again.report["frames"] == 20


def test_python_s_own_ctrl_c_stops_a_run() -> None:
    """Ctrl-C reaches a run through Python's SIGINT handler, so `_thread.interrupt_main()` (which
    raises no real signal) stops an endless run as a real SIGINT does: the frames in flight
    complete and KeyboardInterrupt carries the result."""
    timer = threading.Timer(0.5, _thread.interrupt_main)
    timer.start()
    try:
        with pytest.raises(KeyboardInterrupt) as raised:
            tomii.run_graph(
                GRAPHS / "diamond.json", dylibs=[SYNTHETIC], workers=2, frames=0, max_runtime_s=60
            )
    finally:
        timer.cancel()
    report = raised.value.result.report  # type: ignore[attr-defined]
    assert report["interrupted"] and report["frames"] > 0


def test_a_sigint_handler_that_raises_nothing_leaves_a_run_going() -> None:
    """A program's own SIGINT handler decides, as it does for Python code: one that only notes
    the signal lets an endless run go on to its time limit."""
    noted: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda number, frame: noted.append(number))
    timer = threading.Timer(0.2, _thread.interrupt_main)
    try:
        timer.start()
        done = tomii.run_graph(
            GRAPHS / "diamond.json", dylibs=[SYNTHETIC], workers=2, frames=0, max_runtime_s=1
        )
    finally:
        timer.cancel()
        signal.signal(signal.SIGINT, previous)
    assert noted == [signal.SIGINT]
    assert done.report["wall_time_s"] >= 0.9  # stopped by its limit, not at the signal (0.2 s)


def test_a_second_ctrl_c_stops_waiting_for_a_stuck_run(tmp_path: Path) -> None:
    """With a stuck pop and a long limit, the first Ctrl-C asks the run to stop (it cannot), the
    second raises KeyboardInterrupt at once."""
    mark = tmp_path / "stuck"
    stuck = compile_c_scheduler(
        "fifo_sched.c", tmp_path / "libhang.so", "-DHANG_POP_AFTER=50", f'-DHANG_MARK="{mark}"'
    )
    child = _running_script(
        tmp_path,
        f"tomii.run_graph({str(GRAPHS / 'diamond.json')!r}, dylibs=[{str(SYNTHETIC)!r}],\n"
        f"    scheduler_plugin={str(stuck)!r}, workers=2, frames=0,\n"
        "    scheduler_call_timeout_ms=600_000)",
        "print('interrupted', flush=True)",
    )
    _wait_for(child, lambda: mark.exists(), "the scheduler's pop to get stuck")
    child.send_signal(signal.SIGINT)
    time.sleep(0.3)
    assert child.poll() is None, "the first Ctrl-C cannot end a stuck run"
    child.send_signal(signal.SIGINT)
    try:
        out, err = child.communicate(timeout=10)
    finally:
        child.kill()
    assert child.returncode == 0, err
    assert out.strip() == "interrupted"


def _running_script(directory: Path, run: str, on_interrupt: str) -> subprocess.Popen[str]:
    """A child Python running `run` (statements) that, on KeyboardInterrupt (bound as `stop`),
    runs `on_interrupt` and exits 0 (3 if the run ended by itself); returned once it started."""
    indent = "\n    ".join
    script = directory / "child.py"
    script.write_text(
        "import sys\nimport tomii\nprint('running', flush=True)\n"
        f"try:\n    {indent(run.splitlines())}\n"
        f"except KeyboardInterrupt as stop:\n    {indent(on_interrupt.splitlines())}\n"
        "    sys.exit(0)\nsys.exit(3)\n",
        encoding="utf-8",
    )
    child = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout is not None
    assert child.stdout.readline().strip() == "running"
    return child


def _wait_for(child: subprocess.Popen[str], condition: Callable[[], bool], what: str) -> None:
    """Waits up to 30 s for `condition`; fails, killing `child`, if it does not hold by then."""
    deadline = time.monotonic() + 30
    while not condition():
        if time.monotonic() > deadline or child.poll() is not None:
            child.kill()
            _, err = child.communicate()
            pytest.fail(f"no sign of {what} within 30 s (exit status {child.returncode}): {err}")
        time.sleep(0.02)


def test_ctrl_c_stops_an_in_process_run_and_raises_with_what_it_did(tmp_path: Path) -> None:
    """`run_graph(frames=0)` in a child Python; SIGINT after it started: KeyboardInterrupt within
    a second, carrying the run's result (interrupted, frames done)."""
    trace = tmp_path / "trace.csv"
    child = _running_script(
        tmp_path,
        "graph = {'nodes': [{'name': 'a', 'function': 'noop'}]}\n"
        f"tomii.run_graph(graph, dylibs=[{str(SYNTHETIC)!r}], frames=0, collect_outputs=False,\n"
        f"    trace={str(trace)!r})",
        "report = stop.result.report\n"
        "print('interrupted', report['interrupted'], report['frames'] > 0, flush=True)",
    )
    # The streamed trace reaches the file in large blocks: once it has any, frames have run (a
    # signal before the run started would raise a KeyboardInterrupt without a result).
    _wait_for(child, lambda: trace.exists() and trace.stat().st_size > 0, "frames running")
    child.send_signal(signal.SIGINT)
    sent = time.monotonic()
    out, err = child.communicate(timeout=30)
    assert child.returncode == 0, err
    assert out.strip() == "interrupted True True", out
    assert time.monotonic() - sent < 5, "Ctrl-C took effect only after the run"


def test_a_graph_object_runs_as_its_json_does_and_another_type_is_named() -> None:
    """`run_graph`, `Session` and `simulate` take a `tomii.Graph` itself; a value of another type
    is refused with a message naming its type and what a graph may be."""
    graph = tomii.Graph()
    graph.node("a", func="noop", factor=2)
    ran = tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=3)
    assert ran.report["status"] == "completed" and ran.report["tasks"] == 6
    with tomii.Session(graph, dylibs=[SYNTHETIC]) as session:
        assert len(session.submit().result().outputs) == 2
    assert tomii.simulate(graph, dylibs=[SYNTHETIC], frames=3).report["tasks"] == 6
    with pytest.raises(TypeError, match="the graph is of type int: give a tomii.Graph"):
        tomii.run_graph(42)  # type: ignore[arg-type]


def test_a_kept_task_does_not_run_before_the_rest_of_its_workers_pop() -> None:
    """One worker pops both roots at once (pop_batch 2); the first root's successor is ready
    while fifo's queue is empty, and fifo would keep it, but the second root, handed out earlier,
    runs first: no push is offered as a keep while the worker holds popped tasks. A real run and
    a simulation agree."""
    graph = {
        "nodes": [
            {"name": "root", "function": "noop", "factor": 2},
            {
                "name": "next",
                "function": "noop",
                "factor": 2,
                "args": [{"type": "$dep", "predecessor": {"name": "root"}}],
            },
        ]
    }
    common: dict[str, Any] = {"dylibs": [SYNTHETIC], "workers": 1, "frames": 1, "pop_batch": 2}
    for run in (tomii.run_graph, tomii.simulate):
        result = run(graph, trace=True, **common)
        assert result.trace is not None
        order = [
            (result.node_names[record["node"]], int(record["instance"]))
            for record in sorted(result.trace, key=lambda r: int(r["start_ns"]))
        ]
        assert order[:2] == [("root", 0), ("root", 1)], (run.__name__, order)
