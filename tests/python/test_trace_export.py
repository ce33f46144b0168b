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
