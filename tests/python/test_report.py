"""The run report from Python carries Tomii 1.2's keys, and every knob it suggests is one of the
search space (`knob_space`): a runtime knob of the catalog or a graph knob of the graph run."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from reference import FIFO, GRAPHS, SYNTHETIC, TARGET

import tomii as tm
from tomii.knobs import knob_space

#: 64 noop instances a stage, two stages and a sink: small tasks a tuner could group.
WIDE: dict[str, Any] = {
    "name": "wide",
    "nodes": [
        {"name": "src", "function": "noop", "factor": 64, "args": [{"type": "u64", "value": 1}]},
        {
            "name": "mid",
            "function": "noop",
            "factor": 64,
            "args": [{"type": "$res", "predecessor": {"name": "src"}}],
        },
        {
            "name": "sink",
            "function": "noop",
            "args": [{"type": "$barrier", "predecessor": {"name": "mid"}}],
        },
    ],
}


def test_the_report_carries_the_1_2_keys_beside_its_own() -> None:
    report = tm.run_graph(WIDE, dylibs=[SYNTHETIC], workers=2, slots=2, frames=50).report
    summary = report["summary"]
    assert summary["total_streams"] == report["frames"] == 50
    assert summary["throughput_frames_per_sec"] == report["throughput_frames_per_s"]
    assert summary["total_tasks_per_stream"] == 129
    assert set(summary["scheduling_overhead_diagnostic"]) == {
        "critical_path_exec_us",
        "overhead_us",
        "overhead_pct",
        "interpretation",
    }
    assert report["critical_path"]["length_nodes"] == 3
    assert report["critical_path"]["max_node_factor"] == 64
    assert len(report["resource_utilization"]["worker_busy_pct"]) == 2
    for entry in report["per_node"]:
        assert {"count", "total_us", "invocations", "p99_exec_us", "on_critical_path"} <= set(entry)
        assert entry["invocations"] == entry["count"] == 50 * entry["factor"]
    totals = [entry["total_exec_us"] for entry in report["per_node"]]
    assert totals == sorted(totals, reverse=True)


def test_every_suggested_knob_is_in_the_search_space() -> None:
    names = {knob["name"] for knob in knob_space(WIDE)["knobs"]}
    suggested = []
    for workers, slots in [(1, 1), (2, 1), (2, 8)]:
        report = tm.run_graph(
            WIDE, dylibs=[SYNTHETIC], workers=workers, slots=slots, frames=200
        ).report
        suggested += report["optimization_suggestions"]
    assert suggested, "no run of 129 noop tasks a frame got a suggestion"
    for suggestion in suggested:
        assert suggestion["knob"] in names, suggestion
        assert suggestion["rule"] and suggestion["estimated_speedup"] >= 1.0


def test_the_summary_line_is_tomii_runs_and_the_result_shows_it(tmp_path: Path) -> None:
    """`Report.summary()` is the line `tomii run` prints for the same report, and a result's repr
    is that line with what else it holds, not the whole report and every output."""
    report = tmp_path / "report.json"
    command = [
        str(TARGET / "tomii"),
        "run",
        str(GRAPHS / "diamond.json"),
        "--dylib",
        str(SYNTHETIC),
    ]
    command += ["--scheduler-plugin", str(FIFO), "--frames", "40", "--warmup-frames", "2"]
    printed = subprocess.run(
        [*command, "--report", str(report)], capture_output=True, text=True, check=True, timeout=60
    )
    line = tm.Report(json.loads(report.read_text())).summary()
    assert printed.stdout.strip() == line
    assert line.endswith("; 2 warm-up frame(s) left out")
    result = tm.run_graph(GRAPHS / "diamond.json", dylibs=[SYNTHETIC], frames=3, trace=True)
    shown = repr(result)
    assert result.trace is not None
    assert shown.startswith(f"RunResult(fifo on diamond: 3 frames ({result.report.tasks} tasks)")
    assert shown.endswith(f"; outputs of 3 frame(s); trace of {len(result.trace)} record(s))")
