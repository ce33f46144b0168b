"""Tomii 1.2's run options as `run_graph` keywords, with the CLI's meaning: renamed knobs, the
schedulers `fifo`/`custom` name, warnings for options without effect, warm-up frames left out of
every figure, `max_runtime`, and the timing file and scheduler record made from the trace."""

from __future__ import annotations

import csv
import os
import time
from pathlib import Path
from typing import Any

import pytest
import timing_file
from reference import GRAPHS, SYNTHETIC

import tomii

DIAMOND = GRAPHS / "diamond.json"

#: A warm-up frame sleeps this long in `slow_warm_up`, a measured one not at all.
WARM_UP_SLEEP_S = 0.2
WARM_UP = 2


@tomii.export
def slow_warm_up(value: int) -> int:
    if tomii.call_context().frame < WARM_UP:
        time.sleep(WARM_UP_SLEEP_S)
    return value


def test_renamed_options_and_schedulers() -> None:
    cases: list[tuple[dict[str, Any], int, str]] = [
        ({"max_frames": 4}, 4, "fifo"),
        ({"max_streams": 5}, 5, "fifo"),
        ({"frames": 2, "fifo": True}, 2, "fifo"),
        ({"frames": 2, "custom": True}, 2, "priority"),
        ({"frames": 2, "custom": "work-stealing"}, 2, "work-stealing"),
    ]
    for options, frames, scheduler in cases:
        report = tomii.run_graph(DIAMOND, dylibs=[SYNTHETIC], **options).report
        assert (report.frames, report.scheduler) == (frames, scheduler), options
    report = tomii.run_graph(DIAMOND, dylibs=[SYNTHETIC], frames=6, exclude_streams=2).report
    assert (report.frames, report["frames_excluded"]) == (4, 2)
    with pytest.raises(tomii.ConfigError, match="custom=3"):
        tomii.run_graph(DIAMOND, dylibs=[SYNTHETIC], custom=3)


#: Every Tomii 1.2 run keyword without effect here, with a value 1.2's scripts pass.
WITHOUT_EFFECT: list[tuple[str, Any]] = [
    ("system_threads", 2),
    ("coalesce_barriers", True),
    ("batching_size", 8),
    ("batching_limit", 10),
    ("core_offset", 1),
    ("use_rdtsc", True),
    ("debug", True),
    ("no_fanout_bulk", True),
    ("batch_queue_capacity", 65536),
    ("spin_iterations", 32),
    ("sched_flush_threshold", 32),
    ("recv_pool_size", 1024),
    ("spin_wait_spin_iters", 64),
    ("spin_wait_yield_iters", 256),
    ("spin_wait_park_ns", 100),
    ("resolution_strategy", "multi-slot-batch"),
    ("binary", "/opt/tomii-1.2/target/release/main"),
    ("release", False),
]


@pytest.mark.parametrize(("option", "value"), WITHOUT_EFFECT)
def test_options_without_effect_warn_once(option: str, value: Any) -> None:
    with pytest.warns(UserWarning, match=f"'{option}'.*no effect") as caught:
        report = tomii.run_graph(DIAMOND, dylibs=[SYNTHETIC], frames=2, **{option: value}).report
    assert len(caught) == 1
    assert report.frames == 2


def test_flags_left_off_say_nothing(recwarn: pytest.WarningsRecorder) -> None:
    """1.2's scripts pass every keyword, most of them False or None: those warn of nothing."""
    report = tomii.run_graph(
        DIAMOND,
        dylibs=[SYNTHETIC],
        frames=2,
        debug=False,
        inits=False,
        slot_priority=False,
        use_rdtsc=False,
        batching_limit=None,
        record_stream=None,
    ).report
    assert report.frames == 2
    assert not [w for w in recwarn if issubclass(w.category, UserWarning)]


def test_values_1_2_refused_are_refused() -> None:
    with pytest.raises(tomii.ConfigError, match="batch_queue_capacity must be > 0"):
        tomii.run_graph(DIAMOND, dylibs=[SYNTHETIC], batch_queue_capacity=0)
    with pytest.raises(tomii.ConfigError, match="Unknown resolution strategy 'greedy'"):
        tomii.run_graph(DIAMOND, dylibs=[SYNTHETIC], resolution_strategy="greedy")
    with pytest.raises(tomii.ConfigError, match="unknown run option 'max_frame'"):
        tomii.run_graph(DIAMOND, dylibs=[SYNTHETIC], max_frame=2)


def test_fifo_wins_over_custom_with_one_warning() -> None:
    with pytest.warns(UserWarning, match="fifo wins") as caught:
        report = tomii.run_graph(DIAMOND, dylibs=[SYNTHETIC], custom=True, fifo=True).report
    assert len(caught) == 1 and report.scheduler == "fifo"


def test_record_stream_keeps_one_frame(tmp_path: Path) -> None:
    record = tmp_path / "r.csv"
    tomii.run_graph(DIAMOND, dylibs=[SYNTHETIC], slots=2, frames=4, record=record, record_stream=2)
    with record.open(newline="", encoding="utf-8") as file:
        _header, *rows = list(csv.reader(file))
    assert rows and {row[1] for row in rows} == {"2"}


def test_inits_prints_the_compiled_graph(capfd: pytest.CaptureFixture[str]) -> None:
    tomii.run_graph(DIAMOND, dylibs=[SYNTHETIC], workers=2, inits=True)
    printed = capfd.readouterr().out
    assert printed.startswith("\nGraph:\n  0: ")
    assert "Initial Nodes: [0]" in printed and "  1: [Usize(2)] $workers" in printed


@tomii.export
def print_fd(value: int) -> int:
    os.write(1, f"kernel says {value}\n".encode())
    return value


def test_output_takes_the_runs_stdout(tmp_path: Path, capfd: pytest.CaptureFixture[str]) -> None:
    """1.2 sent the process's stdout (the kernels' prints, the inits listing) to `output`: here,
    file descriptor 1 for the duration of the run."""
    graph = tomii.Graph()
    graph.py_node("say", fn=print_fd, args=[7])
    out = tmp_path / "out.txt"
    out.write_text("old\n", encoding="utf-8")
    graph.run(frames=2, output=str(out), inits=True)
    written = out.read_text(encoding="utf-8")
    assert "Initialized Objects:" in written and written.count("kernel says 7") == 2
    assert "old" not in written
    assert "kernel says" not in capfd.readouterr().out
    graph.run(frames=1, output="stdout")
    assert "kernel says 7" in capfd.readouterr().out
    with pytest.raises(tomii.ConfigError, match="is a directory"):
        graph.run(output=str(tmp_path))


@tomii.export
def read_env(name: str) -> str:
    return os.environ.get(name, "<unset>")


def test_env_holds_for_the_run_and_its_initializations() -> None:
    graph = tomii.Graph()
    where = graph.var("where", func=f"{__name__}.read_env", args=[tomii.String("SCRIPT_DIR")])
    graph.py_node("use", fn=read_env, args=[tomii.String("SCRIPT_DIR")])
    graph.py_node("init", fn=_echo, args=[where])
    os.environ.pop("SCRIPT_DIR", None)
    result = graph.run(env={"SCRIPT_DIR": "/data/run"})
    assert result.output("use") == "/data/run" and result.output("init") == "/data/run"
    assert "SCRIPT_DIR" not in os.environ
    result = tomii.run_graph(
        graph.to_dict(), python_kernels=graph.python_kernels(), env={"SCRIPT_DIR": "/x"}
    )
    assert result.output("use") == "/x" and "SCRIPT_DIR" not in os.environ


@tomii.export
def _echo(value: str) -> str:
    return value


def test_slot_priority_without_a_network_source_warns() -> None:
    with pytest.warns(UserWarning, match="slot_priority.*without a network source") as caught:
        report = tomii.run_graph(DIAMOND, dylibs=[SYNTHETIC], frames=3, slot_priority=True).report
    assert len(caught) == 1 and report.frames == 3


def test_warm_up_frames_are_left_out_of_every_figure() -> None:
    graph = tomii.Graph()
    graph.py_node("slow", fn=slow_warm_up, args=[1])
    every = graph.run(frames=6, trace=True).report
    measured = graph.run(frames=6, warmup_frames=WARM_UP, trace=True)
    report = measured.report
    assert (every.frames, report.frames, report["frames_excluded"]) == (6, 4, WARM_UP)
    assert report.tasks == 4 and report.per_node[0]["count"] == 4
    assert sum(worker["tasks"] for worker in report.per_worker) == 4
    # The warm-up frames slept; the measured ones did not.
    assert every.latency_us["max"] >= WARM_UP_SLEEP_S * 1e6
    assert report.latency_us["max"] < WARM_UP_SLEEP_S * 1e6
    assert report.per_node[0]["max_us"] < WARM_UP_SLEEP_S * 1e6
    assert report.wall_time_s < every.wall_time_s
    assert measured.trace is not None and len(measured.trace) == 6, "the trace keeps every frame"
    steady = measured.trace[measured.trace["frame"] >= WARM_UP]
    total_us = float((steady["end_ns"] - steady["start_ns"]).sum()) / 1e3
    assert report.per_node[0]["total_us"] == pytest.approx(total_us, rel=1e-6, abs=0.01)


def test_max_runtime_stops_the_run_without_raising() -> None:
    graph = {
        "nodes": [{"name": "wait", "function": "spin", "args": [{"type": "u64", "value": 100}]}]
    }
    started = time.monotonic()
    report = tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=0, max_runtime=1).report
    assert time.monotonic() - started < 30
    assert report["status"] == "interrupted" and report["interrupted"] is True
    assert report.frames > 0 and report.tasks == report.frames


def test_timing_file_and_record_from_python(tmp_path: Path) -> None:
    timing = tmp_path / "run.txt"
    result = tomii.run_graph(
        DIAMOND,
        dylibs=[SYNTHETIC],
        workers=2,
        slots=2,
        frames=10,
        exclude_streams=2,
        timing=timing,
        record=True,
        trace=True,
    )
    parsed = timing_file.parse(timing)
    report = result.report
    assert parsed.streams == 10 and parsed.excluded == (2, 8)
    assert sum(parsed.streams_per_slot) == 10
    assert parsed.avg_time_per_stream_s == pytest.approx(
        report.latency_us["mean"] / 1e6, rel=1e-3, abs=1e-9
    )
    assert parsed.std_time_per_stream_s == pytest.approx(
        report.latency_us["stdev"] / 1e6, rel=1e-3, abs=1e-9
    )
    counts = {node["name"]: node["count"] for node in report.per_node}
    assert {name: task.executions for name, task in parsed.tasks.items()} == counts
    with (tmp_path / "run_sched.csv").open(newline="", encoding="utf-8") as file:
        header, *rows = list(csv.reader(file))
    assert header == ["slot", "job_id", "start_ns", "end_ns", "worker", "task_id", "index"]
    assert result.trace is not None
    traced = sorted(
        (int(r["slot"]), int(r["frame"]), int(r["start_ns"]), int(r["end_ns"]), int(r["worker"]))
        + (int(r["node"]), int(r["instance"]))
        for r in result.trace
    )
    # The task rows are those of the task slots (0, 1) with a node's id (the record's other
    # rows, in slots 2 and up or with ids 65535 - 3k, are latencies, resolutions and dispatches).
    tasks = [tuple(int(field) for field in row) for row in rows]
    tasks = [row for row in tasks if row[0] < 2 and row[5] < 2]
    assert sorted(tasks) == traced
    assert {row[5] for row in rows if int(row[0]) >= 2} >= {"65535", "65534"}
