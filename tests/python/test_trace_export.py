"""The trace from Python in the two formats: `run_graph(trace=FILE, trace_format=...)` streams it,
`RunResult.save_trace(FILE, format=...)` writes the one kept in memory; the Chrome trace-event
JSON has a lane per worker and per slot, an event per task and per frame, and the run's
instants; the CSV has the CLI's columns and one row per record."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest
from reference import GRAPHS, SYNTHETIC

import tomii

DIAMOND = GRAPHS / "diamond.json"
RUN: dict[str, Any] = {"dylibs": [SYNTHETIC], "workers": 2, "slots": 2, "frames": 6}


def events(trace: dict[str, Any], ph: str, cat: str | None = None) -> list[dict[str, Any]]:
    return [e for e in trace["traceEvents"] if e["ph"] == ph and (cat is None or e["cat"] == cat)]


def tasks(trace: dict[str, Any]) -> set[tuple[str, int, int]]:
    return {
        (e["name"], e["args"]["instance"], e["args"]["frame"]) for e in events(trace, "X", "task")
    }


def test_save_trace_writes_chrome_and_csv_from_memory(tmp_path: Path) -> None:
    result = tomii.run_graph(DIAMOND, trace=True, warmup_frames=2, **RUN)
    assert result.trace is not None
    result.save_trace(tmp_path / "t.json", format="chrome")
    trace = json.loads((tmp_path / "t.json").read_text())
    assert trace["otherData"]["scheduler"] == "fifo"
    assert len(events(trace, "X", "task")) == len(result.trace) == 18
    recorded = {
        (result.node_names[r["node"]], int(r["instance"]), int(r["frame"])) for r in result.trace
    }
    assert tasks(trace) == recorded
    assert sorted(e["args"]["frame"] for e in events(trace, "X", "frame")) == list(range(6))
    assert [e["name"] for e in events(trace, "i")] == ["warm-up ends", "run ends"]
    by_worker = {e["tid"] for e in events(trace, "X", "task")}
    assert by_worker <= {0, 1}
    for task in events(trace, "X", "task"):
        record = next(
            r
            for r in result.trace
            if result.node_names[r["node"]] == task["name"]
            and r["instance"] == task["args"]["instance"]
            and r["frame"] == task["args"]["frame"]
        )
        assert task["ts"] == pytest.approx(record["start_ns"] / 1e3)
        assert task["tid"] == record["worker"]

    result.save_trace(tmp_path / "t.csv")
    with (tmp_path / "t.csv").open(newline="", encoding="utf-8") as file:
        header, *rows = list(csv.reader(file))
    assert header == [
        "node",
        "instance",
        "frame",
        "slot",
        "worker",
        "ready_ns",
        "start_ns",
        "end_ns",
    ]
    assert len(rows) == 18
    assert {(r[0], int(r[1]), int(r[2])) for r in rows} == recorded


def test_a_run_streams_the_chrome_trace(tmp_path: Path) -> None:
    path = tmp_path / "streamed.json"
    result = tomii.run_graph(DIAMOND, trace=path, trace_format="chrome", **RUN)
    trace = json.loads(path.read_text())
    assert len(events(trace, "X", "task")) == result.report.tasks == 18
    lanes = {e["args"]["name"] for e in events(trace, "M") if e["name"] == "thread_name"}
    assert lanes == {"worker 0", "worker 1", "slot 0", "slot 1"}


def test_bad_formats_and_a_missing_trace_are_named(tmp_path: Path) -> None:
    with pytest.raises(
        tomii.ConfigError, match="trace_format is 'svg': it must be one of 'csv', 'chrome'"
    ):
        tomii.run_graph(DIAMOND, trace=tmp_path / "t", trace_format="svg", **RUN)
    result = tomii.run_graph(DIAMOND, **RUN)
    with pytest.raises(LookupError, match="run with trace=True"):
        result.save_trace(tmp_path / "t.json", format="chrome")
    traced = tomii.run_graph(DIAMOND, trace=True, **RUN)
    with pytest.raises(tomii.ConfigError, match="format 'svg'"):
        traced.save_trace(tmp_path / "t.svg", format="svg")


def test_the_trace_saved_from_memory_is_the_streamed_one(tmp_path: Path) -> None:
    # A simulation runs the same twice: the CSV kept in memory and saved holds the streamed rows
    # (in start order, where the stream has the order chunks came in).
    model = {"default": {"lognormal": {"median_ns": 1000, "sigma": 0.5}}}
    knobs: dict[str, Any] = {"workers": 3, "slots": 2, "frames": 20, "seed": 4}
    kept = tomii.simulate(DIAMOND, trace=True, cost_model=model, **knobs)
    tomii.simulate(DIAMOND, trace=tmp_path / "streamed.csv", cost_model=model, **knobs)
    kept.save_trace(tmp_path / "saved.csv")
    saved = (tmp_path / "saved.csv").read_text(encoding="utf-8").splitlines()
    streamed = (tmp_path / "streamed.csv").read_text(encoding="utf-8").splitlines()
    assert saved[0] == streamed[0] == "node,instance,frame,slot,worker,ready_ns,start_ns,end_ns"
    assert sorted(saved[1:]) == sorted(streamed[1:]) and len(saved) == 61
    assert kept.trace is not None and kept.trace.dtype.itemsize == 48
    assert [name for name, _ in tomii.TRACE_DTYPE] == [
        "frame",
        "ready_ns",
        "start_ns",
        "end_ns",
        "node",
        "instance",
        "slot",
        "worker",
    ]


def test_a_trace_that_cannot_be_saved_names_the_file(tmp_path: Path) -> None:
    traced = tomii.run_graph(DIAMOND, trace=True, **RUN)
    path = tmp_path / "missing" / "t.csv"
    with pytest.raises(tomii.TomiiError, match=r"t.csv: cannot write the trace: No such file or d"):
        traced.save_trace(path)
