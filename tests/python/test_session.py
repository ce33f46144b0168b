"""The programmatic source from Python: `tomii.Session` starts a graph once and takes frames from
the program; outputs equal the reference model's with three schedulers; NumPy inputs reach
kernels without a copy; a full session waits or raises as chosen; a failing kernel fails its
frame and ends the session with its error."""

from __future__ import annotations

import inspect
import re
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pykernels
import pytest
from reference import ROOT, SYNTHETIC, checksum, mix, run_documented_example

import tomii as tm


def pipeline() -> tm.Graph:
    """Two input values per frame, read by a node of two instances and, with it, by a sink."""
    app = tm.Graph()
    samples = app.input("samples", factor=2)
    scale = app.node("scale", func="checksum", factor=2, args=[samples.out()])
    app.node(
        "sum", func="checksum", args=[samples.out(0, 2, wrap=False), scale.out(0, 2, wrap=False)]
    )
    return app


def reference(frame: int, words: tuple[int, int]) -> int:
    scale = [checksum("scale", i, frame, [words[i]]) for i in range(2)]
    return checksum("sum", 0, frame, [*words, *scale])


def words(k: int) -> tuple[int, int]:
    # Below 2**63: Python ints cross as i64, whose word is the value itself.
    return mix(k, 1) >> 1, mix(k, 2) >> 1


@pytest.mark.parametrize("scheduler", ["fifo", "work-stealing", "priority"])
def test_frames_fed_by_the_program_match_the_reference(scheduler: str) -> None:
    with pipeline().session(dylib=SYNTHETIC, scheduler=scheduler, workers=2, slots=3) as session:
        assert session.inputs == [("samples", 2)]
        frames = [session.submit({"samples": list(words(k))}) for k in range(100)]
        for k, frame in enumerate(frames):
            result = frame.result(timeout=60)
            assert result.output("sum") == reference(result.frame, words(k)), f"frame {k}"
        assert sorted(f.result().frame for f in frames) == list(range(100))
    assert session.report is not None
    assert (session.report.frames, session.report.tasks, session.report["source"]) == (
        100,
        300,
        "session",
    )


def test_map_keeps_the_slots_busy_and_yields_in_order() -> None:
    with pipeline().session(dylib=SYNTHETIC, workers=2, slots=4) as session:
        results = list(session.map(words(k) for k in range(50)))
        assert [r.output("sum") for r in results] == [
            reference(r.frame, words(k)) for k, r in enumerate(results)
        ]
        session.submit([1, 2])
        taken = session.submit([3, 4]).result(timeout=60)
        session.submit([5, 6])
        # Iterating yields submit's frames whose outputs no one took: map's are its own.
        assert [r.output("sum") for r in session] == [
            reference(taken.frame - 1, (1, 2)),
            reference(taken.frame + 1, (5, 6)),
        ]
        assert list(session) == []


def test_taking_each_result_keeps_no_frame_alive() -> None:
    """`session.submit(x).result()` again and again: the session keeps no taken frame."""
    with pipeline().session(dylib=SYNTHETIC, workers=2, slots=2) as session:
        for k in range(200):
            session.submit(words(k)).result(timeout=60)
            assert len(session._unyielded) <= 1
        assert list(session) == []


def test_map_in_one_thread_while_another_submits_and_iterates() -> None:
    """Each thread gets its own frames, all of them, and none waits for ever."""
    with pipeline().session(dylib=SYNTHETIC, workers=2, slots=3) as session:
        mapped: list[Any] = []
        mapper = threading.Thread(
            target=lambda: mapped.extend(session.map(words(k) for k in range(60))), daemon=True
        )
        mapper.start()
        submitted = [session.submit(words(1000 + k)) for k in range(40)]
        iterated = list(session)
        mapper.join(timeout=120)
        assert not mapper.is_alive()
    assert [r.output("sum") for r in mapped] == [
        reference(r.frame, words(k)) for k, r in enumerate(mapped)
    ]
    assert [r.frame for r in iterated] == [f.result().frame for f in submitted]
    assert {r.frame for r in mapped}.isdisjoint(r.frame for r in iterated)


def test_one_frame_waited_for_by_two_threads() -> None:
    with pipeline().session(dylib=SYNTHETIC, workers=1, slots=1) as session:
        frame = session.submit(words(3))
        seen: list[Any] = []
        other = threading.Thread(target=lambda: seen.append(frame.result(timeout=60)))
        other.start()
        mine = frame.result(timeout=60)
        other.join(timeout=60)
        assert seen == [mine]


def test_numpy_inputs_reach_the_kernel_without_a_copy() -> None:
    app = tm.Graph()
    array = app.input("array")
    app.py_node("where", fn=pykernels.address, args=[array.out()])
    data = np.arange(1000, dtype=np.float64)
    with app.session(workers=2) as session:
        assert (
            session.submit(data).result(timeout=60).output("where")
            == data.__array_interface__["data"][0]
        )


def slow_graph() -> tm.Graph:
    app = tm.Graph()
    x = app.input("x")
    # Half a second of work keeps the one slot busy until the next submit, however late the
    # test's thread runs on a loaded machine.
    app.node("slow", func="spin", args=[tm.u64(500_000), x.dep()])
    return app


def test_a_full_session_raises_or_waits_as_chosen() -> None:
    with slow_graph().session(dylib=SYNTHETIC, slots=1, busy="raise") as session:
        first = session.submit(1)
        with pytest.raises(tm.SessionBusy, match="every slot is busy"):
            session.submit(2)
        second = session.submit(3, timeout=None)  # this call waits
        assert first.result(timeout=60).frame != second.result(timeout=60).frame
    with pytest.raises(tm.SessionClosed):
        session.submit(4)
    with pytest.raises(tm.ConfigError, match="unknown input"):
        slow_graph().session(dylib=SYNTHETIC).submit({"y": 1})


def test_a_failing_kernel_fails_its_frame_and_ends_the_session() -> None:
    app = tm.Graph()
    x = app.input("x")
    app.node("bad", func="fail", args=[x.out()])
    session = app.session(dylib=SYNTHETIC, slots=2)
    frame = session.submit("boom")
    with pytest.raises(tm.TomiiError, match="boom"):
        frame.result(timeout=60)
    with pytest.raises(tm.SessionClosed, match="boom"):
        session.submit("again")
    with pytest.raises(tm.KernelError, match="boom"):
        session.close()


def test_a_graph_with_post_nodes_is_refused_with_what_to_do() -> None:
    app = pipeline()
    app.post_node("after", func="checksum", args=[])
    with pytest.raises(tm.ConfigError, match='post-node "after".*a session has none'):
        app.session(dylib=SYNTHETIC)


def test_the_guide_example_runs(tmp_path: Path) -> None:
    guide = ROOT / "python" / "README.md"
    done = run_documented_example(guide, "## Feeding frames from a program", tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert len(lines) == 1 + 100 + 1, done.stdout
    assert "p99" in lines[-1]


def test_the_guide_lists_the_knobs_a_session_takes() -> None:
    """python/README.md names every run knob `Session` takes (its signature, `busy` and `timeout`
    being the session's own), so that a reader knows which `run_graph` knobs have no session form."""
    guide = (ROOT / "python" / "README.md").read_text(encoding="utf-8")
    start = guide.index("- `tomii.Session(graph, **knobs)`")
    listed = guide[start : guide.index("have no session form", start)].split("(`Graph.session`")[0]
    named = set(re.findall(r"`(\w+)`", listed))
    knobs = set(inspect.signature(tm.Session).parameters) - {"graph", "busy", "timeout"}
    assert named - {"run_graph"} == knobs


def test_a_running_session_changes_its_schedulers_options() -> None:
    with pipeline().session(dylib=SYNTHETIC, scheduler="random", slots=2) as session:
        session.set_scheduler_option("seed", 7)
        with pytest.raises(tm.ConfigError, match='unknown option "speed"'):
            session.set_scheduler_option("speed", 1)
        result = session.submit({"samples": list(words(0))}).result(timeout=60)
        assert result.output("sum") == reference(result.frame, words(0))


# ---------------------------------------------------------------------------------------------
# Limits, Ctrl-C and the interpreter's exit


def a_session_whose_scheduler_hangs(library: str) -> tuple[str, str]:
    """Feeds a session whose scheduler never returns from a pop after its 20th: what the waiting
    frame raised, and what close raised (type and message of each)."""
    session = pipeline().session(
        dylib=SYNTHETIC, scheduler_plugin=library, workers=2, slots=2,
        scheduler_call_timeout_ms=300,
    )  # fmt: skip
    said = []
    for stage in ("frames", "close"):
        try:
            if stage == "frames":
                for k in range(100):
                    session.submit(words(k)).result(timeout=60)
            else:
                session.close()
            said.append(f"{stage}: returned")
        except Exception as error:  # noqa: BLE001 (what the test reads)
            said.append(f"{type(error).__name__}: {error}")
    return said[0], said[1]


def test_a_scheduler_call_that_never_returns_ends_the_session(tmp_path: Path) -> None:
    """`scheduler_call_timeout_ms` applies to a session: the waiting frame fails with the
    reason, and close raises HangError, instead of both waiting for ever. In a child process,
    where the stuck thread spins on, within a time limit."""
    from reference import compile_c_scheduler

    from tomii.isolation import Isolated

    hangs = compile_c_scheduler("fifo_sched.c", tmp_path / "libhang.so", "-DHANG_POP_AFTER=20")
    with Isolated() as child:
        frames, close = child.call(a_session_whose_scheduler_hangs, str(hangs), timeout_s=120)
    assert frames.startswith("TomiiError: ") and "did not return from pop" in frames, frames
    assert close.startswith("HangError: ") and "within 300 ms" in close, close


#: A script whose session runs a Python kernel that takes SECONDS (or spins, "busy") with a
#: kernel time limit of LIMIT ms (0: none), prints `waiting` and then waits for the frame
#: (WAIT = "result") or leaves the session open for the interpreter's exit (WAIT = "exit").
KERNEL_SCRIPT = """\
import sys, time
import tomii as tm

SECONDS, LIMIT, WAIT = sys.argv[1], int(sys.argv[2]), sys.argv[3]


@tm.export
def slow(x: int) -> int:
    if SECONDS == "busy":
        while True:
            pass
    time.sleep(float(SECONDS))
    return x


app = tm.Graph()
value = app.input("value")
app.py_node("slow", fn=slow, args=[value.out()])
session = app.session(workers=1, slots=1, kernel_timeout_ms=LIMIT)
frame = session.submit(1)
if WAIT == "result":
    try:  # a Ctrl-C right after the line below is still inside the `try`
        print("waiting", flush=True)
        frame.result()
    except KeyboardInterrupt:
        print("interrupted", flush=True)
else:
    print("waiting", flush=True)
"""


def kernel_script(tmp_path: Path, *args: str) -> subprocess.Popen[str]:
    script = tmp_path / "kernel_session.py"
    script.write_text(KERNEL_SCRIPT, encoding="utf-8")
    return subprocess.Popen(
        [sys.executable, str(script), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


def test_ctrl_c_while_waiting_for_a_frame_raises_keyboard_interrupt(tmp_path: Path) -> None:
    """The first Ctrl-C interrupts `result()`; the script then ends with the session open, its
    exit waits for the frame, and a second Ctrl-C abandons it (the kernel's 60 s would fail the
    test's time limit)."""
    child = kernel_script(tmp_path, "60", "0", "result")
    assert child.stdout is not None and child.stderr is not None
    assert child.stdout.readline() == "waiting\n"
    child.send_signal(signal.SIGINT)
    assert child.stdout.readline() == "interrupted\n"
    assert "waiting for its 1 frame(s) in flight" in child.stderr.readline()
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)
    assert child.returncode == 0 and "the Session's frames in flight were abandoned" in err, err


def test_a_session_left_open_is_closed_at_exit_saying_so(tmp_path: Path) -> None:
    child = kernel_script(tmp_path, "1", "0", "exit")
    out, err = child.communicate(timeout=60)
    assert (child.returncode, out) == (0, "waiting\n"), err
    assert "tomii: a Session was left open: waiting for its 1 frame(s) in flight" in err


def test_ctrl_c_at_exit_abandons_the_frames_of_a_session_left_open(tmp_path: Path) -> None:
    child = kernel_script(tmp_path, "busy", "0", "exit")
    assert child.stderr is not None
    assert "waiting for its 1 frame(s) in flight" in child.stderr.readline()
    child.send_signal(signal.SIGINT)
    _, err = child.communicate(timeout=30)  # the kernel spins for ever
    assert child.returncode == 0, err
    assert "the Session's frames in flight were abandoned" in err


def test_a_kernel_past_its_limit_ends_the_session_and_the_exit_is_clean(tmp_path: Path) -> None:
    """The spinning kernel stays on its thread; the interpreter's exit stops it first, instead of
    aborting (SIGABRT) when the thread asks for the GIL during finalization."""
    child = kernel_script(tmp_path, "busy", "300", "exit")
    _, err = child.communicate(timeout=60)
    assert child.returncode == 0, err
    assert 'kernel "__main__.slow" did not return within 300 ms' in err
