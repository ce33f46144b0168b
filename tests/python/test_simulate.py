"""`tomii.simulate`: every shipped scheduler on virtual workers passes the trace invariants the
sweeps check on real runs; one seed, one run; cost models as files (JSON and a real run's trace),
dicts, `tomii.graphs` distributions and a traced RunResult; a broken scheduler caught with a
partial result; the same trace files and report a real run writes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from reference import GRAPHS, SYNTHETIC, TARGET

import tomii
from tomii.check import SCHEDULERS
from tomii.experiments.sweep import trace_problems
from tomii.graphs import Fixed, LogNormal, Uniform, fork_join, streaming_pipeline

#: The package's `tomii` command, run by `python -c`.
CLI = "import sys; from tomii.cli import main; sys.exit(main(sys.argv[1:]))"


@pytest.mark.parametrize("scheduler", SCHEDULERS)
def test_every_shipped_scheduler_keeps_the_invariants(scheduler: str) -> None:
    graph = fork_join(width=8, depth=2, cost=Uniform(5, 50), seed=1)
    knobs: dict[str, Any] = {"workers": 16, "slots": 3, "frames": 12}
    result = tomii.simulate(graph, scheduler=scheduler, trace=True, **knobs)
    assert result.report["source"] == "simulated"
    assert result.report["simulation"]["virtual_workers"] == 16
    assert result.report.frames == 12
    assert result.trace is not None
    problems = trace_problems(graph, result.trace, result.node_names, result.report, **knobs)
    assert problems == [], problems


def test_one_seed_one_run() -> None:
    graph = streaming_pipeline(width=8, cost=Fixed(1), seed=0)
    model = {"default": LogNormal(20, 0.7)}
    runs = [
        tomii.simulate(
            graph, workers=4, slots=2, frames=20, seed=seed, cost_model=model, trace=True
        )
        for seed in (3, 3, 4)
    ]
    assert runs[0].trace is not None and runs[1].trace is not None and runs[2].trace is not None
    assert (runs[0].trace == runs[1].trace).all()
    assert not (runs[0].trace["end_ns"] == runs[2].trace["end_ns"]).all()


def test_cost_models_in_every_form(tmp_path: Path) -> None:
    graph = json.loads(
        (GRAPHS / "diamond.json").read_text()
    )  # checksum kernels: no cost of its own
    with pytest.raises(tomii.ConfigError, match='node "src": its kernel "checksum" has no cost'):
        tomii.simulate(graph, frames=2)
    fixed = tomii.simulate(graph, frames=3, cost_model={"src": Fixed(10), "sink": Fixed(5)})
    assert fixed.report.latency_us["p50"] == pytest.approx(25, rel=1e-3)
    spec = {"default": {"fixed": {"ns": 2000}}}
    (tmp_path / "model.json").write_text(json.dumps(spec))
    from_file = tomii.simulate(graph, frames=3, cost_model=tmp_path / "model.json")
    # One worker: both src tasks, then the sink, 2 µs each.
    assert from_file.report.latency_us["p50"] == pytest.approx(6, rel=1e-3)
    in_memory = tomii.simulate(graph, frames=3, cost_model=spec)
    assert in_memory.report.latency_us["p50"] == pytest.approx(6, rel=1e-3)
    real = tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=5, trace=tmp_path / "trace.csv")
    assert real.report.frames == 5
    sampled = tomii.simulate(graph, frames=5, cost_model=tmp_path / "trace.csv")
    assert "samples" in sampled.report["simulation"]["cost_model"]["src"]
    traced = tomii.run_graph(graph, dylibs=[SYNTHETIC], frames=5, trace=True)
    from_result = tomii.simulate(graph, frames=5, cost_model=traced)
    assert "samples" in from_result.report["simulation"]["cost_model"]["sink"]
    with pytest.raises(tomii.ConfigError, match=r"cost_model\['src'\]: give tomii.graphs.Fixed"):
        tomii.simulate(graph, cost_model={"src": 3})
    with pytest.raises(tomii.ConfigError, match="not a cost model"):
        tomii.simulate(graph, cost_model={"default": {"fixed": {"ns": "ten"}}})


def test_a_broken_scheduler_is_caught_with_what_ran() -> None:
    broken = TARGET / "libtomii_test_broken_scheduler.so"
    graph = fork_join(width=4, depth=1, cost=Fixed(3), seed=0)
    with pytest.raises(tomii.SchedulerFault, match="returned the same task twice") as caught:
        tomii.simulate(
            graph, scheduler_plugin=broken, workers=2, frames=4, sched_opts={"fault": "duplicate"}
        )
    result = caught.value.result  # type: ignore[attr-defined]
    assert result.report["status"] == "failed"


def test_the_trace_files_and_the_report(tmp_path: Path) -> None:
    graph = streaming_pipeline(width=4, cost=Fixed(7), seed=0)
    report, chrome = tmp_path / "r.json", tmp_path / "t.json"
    tomii.simulate(graph, workers=3, frames=4, report=report, trace=chrome, trace_format="chrome")
    written = json.loads(report.read_text())
    assert written["source"] == "simulated"
    events = json.loads(chrome.read_text())["traceEvents"]
    tasks = [e for e in events if e.get("cat") == "task"]
    assert len(tasks) == written["tasks"]
    page = tomii.view_trace(chrome, html_path=tmp_path / "page.html")
    assert page.exists()


def test_a_recorded_run_replays_from_the_command(tmp_path: Path) -> None:
    decisions = tmp_path / "run.decisions"
    graph = GRAPHS / "diamond.json"
    result = tomii.run_graph(
        graph,
        dylibs=[SYNTHETIC],
        workers=2,
        slots=2,
        frames=8,
        scheduler="work-stealing",
        record_decisions=decisions,
    )
    lines = decisions.read_text().splitlines()
    assert json.loads(lines[0])["scheduler"]["name"] == "work-stealing"
    # The header, a line per task, and how the run ended.
    assert len(lines) == 1 + result.report.tasks + 1
    assert json.loads(lines[-1]) == {
        "end": {"status": "completed", "error": None, "frames": 8, "tasks": result.report.tasks}
    }
    for extra in ([], ["--simulate"]):
        assert_replays(decisions, *extra)


def assert_replays(decisions: Path, *extra: str) -> None:
    """`tomii replay DECISIONS` (the package's command, as its console script runs it) makes every
    worker's recorded order again."""
    env = {**os.environ, "TOMII_SCHEDULER_PATH": str(TARGET)}
    done = subprocess.run(
        [sys.executable, "-c", CLI, "replay", str(decisions), *extra],
        capture_output=True,
        text=True,
        env=env,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert "every worker ran the recorded tasks in the recorded order" in done.stdout


def test_a_recorded_simulation_replays_with_its_seed_and_costs(tmp_path: Path) -> None:
    """`simulate(record_decisions=...)` records the simulation's seed and cost model with the
    decisions, and `tomii replay` makes the same order again in simulation."""
    decisions = tmp_path / "sim.decisions"
    result = tomii.simulate(
        GRAPHS / "diamond.json",
        workers=3,
        slots=2,
        frames=12,
        scheduler="random",
        seed=11,
        cost_model={"default": LogNormal(20.0, 0.5)},
        record_decisions=decisions,
    )
    header, *rows, end = decisions.read_text().splitlines()
    recorded = json.loads(header)
    assert (recorded["mode"], recorded["seed"], recorded["workers"]) == ("simulate", 11, 3)
    assert recorded["cost_model"]["default"]["lognormal"]["median_ns"] == 20_000.0
    assert len(rows) == result.report.tasks
    assert json.loads(end)["end"]["status"] == "completed"
    assert_replays(decisions)


def test_a_sweep_in_simulation_spans_virtual_machines() -> None:
    from tomii.experiments import sweep

    graph = fork_join(width=16, depth=2, cost=Uniform(10, 100), seed=0)
    result = sweep(
        ["fifo", "work-stealing"],
        [graph],
        {"workers": [2, 64]},
        repeats=1,
        warmup=0,
        frames=10,
        mode="simulate",
        progress=False,
        isolation="none",
    )
    assert len(result.rows) == 4
    assert all(row["problem"] == "" for row in result.rows), result.rows
    by_workers = {row["workers"]: row["throughput_frames_per_s"] for row in result.rows}
    assert by_workers[64] > 4 * by_workers[2]
    assert result.environment["parameters"]["mode"] == "simulate"
    with pytest.raises(tomii.ConfigError, match="unknown knob 'dylibs'|unknown knob 'task_timing'"):
        sweep(["fifo"], [graph], {"task_timing": [True]}, mode="simulate", progress=False)
    with pytest.raises(ValueError, match="mode must be one of run, simulate"):
        sweep(["fifo"], [graph], mode="emulate", progress=False)


def test_the_guides_example_runs(tmp_path: Path) -> None:
    from reference import run_documented_example

    guide = Path(__file__).resolve().parents[2] / "python" / "README.md"
    done = run_documented_example(guide, "## Simulating", tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[1] == "256"
    assert (tmp_path / "run.decisions").read_text().startswith('{"format":"tomii-decisions"')


#: Simulates far more frames than the test waits for, streaming the trace; a thread sends the
#: process a Ctrl-C once the trace has rows (the simulation is then under way).
INTERRUPTED_SIMULATION = """\
import json, os, signal, sys, threading, time
import tomii
from tomii.graphs import Fixed, fork_join

trace = sys.argv[1]

def interrupt():
    while not (os.path.exists(trace) and os.path.getsize(trace) > 0):
        time.sleep(0.01)
    os.kill(os.getpid(), signal.SIGINT)

threading.Thread(target=interrupt, daemon=True).start()
try:
    tomii.simulate(fork_join(width=4, depth=1, cost=Fixed(10)), workers=2, slots=2,
                   frames=10**12, trace=trace)
except KeyboardInterrupt as stop:
    report = stop.result.report
    print(json.dumps({"interrupted": report["interrupted"], "frames": report["frames"],
                      "tasks": report["tasks"]}))
"""


def test_ctrl_c_stops_a_simulation_and_raises_with_what_it_did(tmp_path: Path) -> None:
    """As a run: the frames in flight complete and KeyboardInterrupt carries the result."""
    script = tmp_path / "simulate_then_interrupt.py"
    script.write_text(INTERRUPTED_SIMULATION, encoding="utf-8")
    trace = tmp_path / "trace.csv"
    done = subprocess.run(
        [sys.executable, str(script), str(trace)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    printed = json.loads(done.stdout.strip().splitlines()[-1])
    assert printed["interrupted"] is True and printed["frames"] > 0
    rows = len(trace.read_text().splitlines()) - 1
    assert printed["tasks"] == rows and rows % printed["frames"] == 0, "whole frames only"
