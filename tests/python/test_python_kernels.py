"""Python kernels in-process: values across languages, zero-copy arrays, variadic fan-in,
exceptions with their traceback, kernels found by name, `procs()`, and the GIL released meanwhile."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pykernels
import pytest
from reference import GRAPHS, ROOT, SYNTHETIC, checksum

import tomii


def test_arrays_pass_between_python_kernels_without_copies() -> None:
    g = tomii.Graph()
    n = g.var("n", 1000)
    made = g.py_node("made", fn=pykernels.make_array, factor=4, args=[n, 3])
    g.py_node("seen", fn=pykernels.address, factor=4, args=[made.out()])
    result = g.run(workers=2, slots=3, frames=5)
    seen = [value for frame in result.outputs for (_, _, value) in frame]
    assert len(seen) == 20
    assert set(seen) <= pykernels.MADE


def test_values_cross_between_python_and_rust_kernels() -> None:
    g = tomii.Graph()
    doubled = g.py_node("doubled", fn=pykernels.double, factor=2, args=[21])
    summed = g.node("summed", func="checksum", factor=2, args=[doubled.out()])
    g.py_node("seen", fn=pykernels.describe, factor=2, args=[summed.out()])
    result = g.run(dylib=SYNTHETIC, frames=3, workers=2)
    for frame, outputs in enumerate(result.outputs):
        for name, instance, value in outputs:
            assert name == "seen"
            assert value == f"int {checksum('summed', instance, frame, [42])}"


def test_rust_arrays_lists_and_scalars_arrive_as_python_values() -> None:
    g = tomii.Graph()
    vec = g.var("vec", tomii.Vec("f32", [1.5, 2.5]))
    g.py_node("array", fn=pykernels.describe, args=[vec])
    g.py_node("complex", fn=pykernels.describe, args=[tomii.Complex64(1.0, -2.0)])
    g.py_node("text", fn=pykernels.describe, args=["héllo"])
    g.py_node("flag", fn=pykernels.describe, args=[tomii.bool_(True)])
    g.py_node("wide", fn=pykernels.describe, args=[tomii.u128(2**100)])
    result = g.run()
    assert {n: v for n, _, v in result.outputs[0]} == {
        "array": "ndarray float32 [1.5, 2.5]",
        "complex": "complex (1-2j)",
        "text": "str 'héllo'",
        "flag": "bool True",
        "wide": f"int {2**100}",
    }


def test_sink_outputs_are_the_python_objects() -> None:
    g = tomii.Graph()
    made = g.py_node("made", fn=pykernels.make_array, args=[4, 2])
    g.py_node("twice", fn=pykernels.double, args=[made.out()])
    result = g.run(frames=2)
    value = result.output("twice")
    assert isinstance(value, np.ndarray)
    assert value.tolist() == [0.0, 4.0, 8.0, 12.0]


def test_a_variadic_python_kernel_gets_the_results_as_one_list() -> None:
    g = tomii.Graph()
    made = g.py_node("made", fn=pykernels.make_array, factor=5, args=[3, 1])
    g.py_node("sum", fn=pykernels.total, args=[100, made.out(0, 5, wrap=False)])
    result = g.run(frames=2, workers=2)
    assert result.output("sum") == 100 + 5 * 3.0


def test_an_exception_fails_the_run_with_its_traceback() -> None:
    g = tomii.Graph()
    g.py_node("bad", fn=pykernels.fail_on_frame, factor=2, args=[7])
    with pytest.raises(tomii.KernelError) as caught:
        g.run(workers=2, frames=3)
    message = str(caught.value)
    assert 'node "bad"' in message
    assert "Traceback (most recent call last)" in message
    assert "pykernels.py" in message and "ValueError: refusing marker 7" in message
    assert isinstance(caught.value.__cause__, ValueError)


def test_kernels_are_found_by_registered_name_in_a_graph_json() -> None:
    graph = {
        "nodes": [
            {
                "name": "twice",
                "function": "pykernels.double",
                "args": [{"type": "u64", "value": 5}],
            },
            {"name": "named", "function": "custom.name"},
        ]
    }
    result = tomii.run_graph(graph)
    assert sorted(result.outputs[0]) == [("named", 0, "renamed"), ("twice", 0, 10)]


def test_py_node_names_what_is_wrong() -> None:
    g = tomii.Graph()
    with pytest.raises(ValueError, match=r"not registered as a kernel: decorate it"):
        g.py_node("x", fn=len)
    with pytest.raises(tomii.TomiiExportError, match=r"cannot import module 'no_such_module'"):
        g.py_node("x", fn="no_such_module.f")
    with pytest.raises(tomii.TomiiExportError, match=r"has no @tomii.export function"):
        g.py_node("x", fn="pykernels.np")
    with pytest.raises(RuntimeError, match=r"no kernel library"):
        tomii.Graph().run()


def test_procs_runs_the_body_in_another_process() -> None:
    g = tomii.Graph()
    g.py_node("squares", fn=pykernels.squares_in_a_process, factor=2, args=[5])
    result = g.run(workers=2, frames=2)
    for frame in result.outputs:
        for _, _, value in frame:
            *squares, pid = value
            assert squares == [0, 1, 4, 9, 16]
            assert pid != os.getpid()


def test_a_kernel_of_a_scripts_main_runs_in_process_but_not_in_procs(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(
        textwrap.dedent(
            """
            import tomii

            @tomii.export
            def triple(x):
                return x * 3

            @tomii.export
            @tomii.procs()
            def pooled(x):
                return x

            g = tomii.Graph()
            g.py_node("t", fn=triple, args=[4])
            print(g.run().output("t"))
            g = tomii.Graph()
            g.py_node("p", fn=pooled, args=[4])
            try:
                g.run()
            except tomii.KernelError as error:
                print(str(error).splitlines()[-1])
            """
        )
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120, check=True
    )
    lines = done.stdout.splitlines()
    assert lines[0] == "12"
    assert "defined in a script's __main__" in lines[1]
    assert "move it to an importable module" in lines[1]


def test_the_gil_is_free_while_the_runtime_works() -> None:
    graph = {"nodes": [{"name": "spin", "function": "spin", "factor": 4, "args": [20_000]}]}
    ticks = 0
    stop = threading.Event()

    def count() -> None:
        nonlocal ticks
        while not stop.is_set():
            ticks += 1

    counter = threading.Thread(target=count)
    counter.start()
    try:
        started = ticks
        tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=5)
        progressed = ticks - started
    finally:
        stop.set()
        counter.join()
    # 0.4 s of spinning kernels: a thread that never got the GIL would not have counted at all.
    assert progressed > 1000


def test_the_trace_is_a_structured_array_and_the_report_has_typed_figures() -> None:
    g = tomii.Graph()
    made = g.py_node("made", fn=pykernels.make_array, factor=3, args=[2, 1])
    g.py_node("sum", fn=pykernels.total, args=[0, made.out(0, 3, wrap=False)])
    result = g.run(workers=2, slots=2, frames=4, trace=True)
    trace = result.trace
    assert trace is not None
    assert trace.dtype.names == tuple(name for name, _ in tomii.TRACE_DTYPE)
    assert len(trace) == 4 * 4
    assert result.node_names == ["made", "sum"]
    assert sorted(zip(trace["node"], trace["instance"], trace["frame"])) == sorted(
        [(0, i, f) for i in range(3) for f in range(4)] + [(1, 0, f) for f in range(4)]
    )
    assert (trace["start_ns"] <= trace["end_ns"]).all()
    assert (trace["ready_ns"] <= trace["start_ns"]).all()
    report = result.report
    assert report.frames == 4 and report.tasks == 16 and report.workers == 2
    assert report.throughput_frames_per_s > 0 and report["frames"] == 4
    assert set(report.latency_us) >= {"p50", "p95", "p99"}
    assert g.run(frames=1).trace is None
    frame = result.trace_frame()
    assert list(frame["node_name"][:1]) in (["made"], ["sum"])
    assert len(frame) == 16


def test_tomii_1_2_run_options_still_work(tmp_path: Path) -> None:
    g = tomii.Graph()
    g.py_node("env", fn=pykernels.environment, args=["TOMII_TEST_VALUE"])
    timing = tmp_path / "timing.csv"
    with pytest.warns(UserWarning, match="system_threads.*no effect"):
        result = g.run(
            workers=2, max_frames=3, timing=str(timing), system_threads=2,
            env={"TOMII_TEST_VALUE": "set"},
        )  # fmt: skip
    assert result.report.frames == 3
    assert result.output("env") == "set"
    assert "TOMII_TEST_VALUE" not in os.environ
    # Tomii 1.2's timing file (plain text, whatever its name says), not a trace CSV.
    assert "Total Streams Processed: 3" in timing.read_text(encoding="utf-8")


def test_the_per_call_overhead_figure_is_measurable() -> None:
    """Not a timing assertion: runs the measurement the issue notes quote, so it cannot rot."""
    script = ROOT / "bench" / "python_kernel_overhead.py"
    done = subprocess.run(
        [sys.executable, str(script), "--calls", "2000"],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    assert "µs per call" in done.stdout


def test_a_kernel_knows_the_call_it_serves() -> None:
    g = tomii.Graph()
    g.py_node("here", fn=pykernels.where_am_i, factor=3)
    result = g.run(workers=2, frames=2)
    for frame, outputs in enumerate(result.outputs):
        assert sorted(value for _, _, value in outputs) == [
            ("here", i, frame, True) for i in range(3)
        ]
    with pytest.raises(RuntimeError, match="only available inside a kernel call"):
        tomii.call_context()


def test_pin_workers_runs_each_worker_on_its_own_cpu_for_that_run_only() -> None:
    """`pin_workers=True` pins worker w to the (w mod n)-th CPU the process may use; the pooled
    threads get their CPUs back after the run, so an unpinned run after it runs anywhere."""
    allowed = sorted(os.sched_getaffinity(0))
    g = tomii.Graph()
    g.py_node("where", fn=pykernels.cpus_of_this_worker, factor=8)

    def seen(result: tomii.RunResult) -> dict[int, set[tuple[int, ...]]]:
        cpus: dict[int, set[tuple[int, ...]]] = {}
        for frame in result.outputs:
            for _, _, (worker, on) in frame:
                cpus.setdefault(worker, set()).add(tuple(on))
        return cpus

    pinned = seen(g.run(workers=2, slots=2, frames=20, pin_workers=True))
    assert pinned, "no task reported its worker"
    for worker, cpus in pinned.items():
        assert cpus == {(allowed[worker % len(allowed)],)}, f"worker {worker} ran on {cpus}"
    free = seen(g.run(workers=2, slots=2, frames=20))
    assert all(cpus == {tuple(allowed)} for cpus in free.values()), free


#: A script whose Python kernel spins for ever, run with a kernel time limit: `run_graph` raises
#: HangError and the kernel's thread spins on.
SPINNING_KERNEL = """\
import tomii as tm


@tm.export
def spin(x: int) -> int:
    while True:
        pass


app = tm.Graph()
app.py_node("spin", fn=spin, args=[1])
try:
    app.run(frames=2, kernel_timeout_ms=300)
except tm.HangError as error:
    print("HangError", flush=True)
"""

#: A script whose Python kernel starts a thread that is not a daemon and sleeps an hour.
THREAD_STARTING_KERNEL = """\
import threading, time
import tomii as tm


@tm.export
def start(x: int) -> int:
    threading.Thread(target=time.sleep, args=(3600,)).start()
    return x


app = tm.Graph()
app.py_node("start", fn=start, args=[1])
app.run(frames=2)
print("ran", flush=True)
"""


@pytest.mark.parametrize(
    ("script", "printed"), [(SPINNING_KERNEL, "HangError\n"), (THREAD_STARTING_KERNEL, "ran\n")]
)
def test_the_interpreter_exits_cleanly_after_a_kernel_left_running(
    script: str, printed: str
) -> None:
    """A kernel past its limit still spins on its thread when the script ends: the interpreter's
    exit stops it first (without that, the thread asks for the GIL during finalization and the
    process ends by SIGABRT). A thread a kernel started does not keep the process alive."""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=False
    )
    assert (done.returncode, done.stdout) == (0, printed), done.stderr


def test_runs_from_two_threads_run_side_by_side() -> None:
    """Every in-process run has a runner thread of its own: a run started from one thread does
    not wait for another thread's run to end (here that run waits for this one)."""
    waiting = tomii.Graph()
    waiting.py_node("wait", fn=pykernels.wait_for_release)
    results: list[tomii.RunResult] = []
    thread = threading.Thread(
        target=lambda: results.append(waiting.run(frames=1, collect_outputs=True))
    )
    thread.start()
    try:
        assert pykernels.STARTED.wait(30)
        quick = tomii.run_graph(GRAPHS / "diamond.json", dylibs=[SYNTHETIC], frames=5)
    finally:
        pykernels.RELEASED.set()
        thread.join(60)
    assert quick.report["status"] == "completed"
    [[(_, _, released)]] = results[0].outputs
    assert released is True
