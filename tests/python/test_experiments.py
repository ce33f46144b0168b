"""tomii.experiments: a sweep's rows (schema, one per trial, valid, bounds), its randomised order,
frame latencies from the trace, invalid rows from a broken scheduler and from a doctored trace,
Ctrl-C keeping finished rows on disk, save/load, the environment, the table printed when someone
watches, and the same sweep on a thread pool and on a real Dask LocalCluster of worker processes.
Behaviour only, never timing."""

from __future__ import annotations

import json
import math
import os
import random
import sys
import types
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from reference import SYNTHETIC, TARGET

import tomii
from tomii import graphs
from tomii.experiments import COLUMNS, FRAME_COLUMNS, Scheduler, SweepResult, sweep
from tomii.experiments.config import summary
from tomii.experiments.sweep import frame_latencies_us, trace_problems

BROKEN = TARGET / "libtomii_test_broken_scheduler.so"
FRAMES = 20


def small_graphs() -> list[dict[str, Any]]:
    cost = graphs.Fixed(2)
    return [graphs.map_reduce(4, 2, cost=cost), graphs.fork_join(3, 2, cost=cost)]


def small_sweep(**options: Any) -> SweepResult:
    """2 schedulers × 2 graphs × 2 worker counts × 2 repeats: 16 trials."""
    settings: dict[str, Any] = {
        "knobs": {"workers": [1, 2], "slots": [2]},
        "repeats": 2,
        "frames": FRAMES,
        "progress": False,
        **options,
    }
    return sweep(["fifo", "work-stealing"], small_graphs(), **settings)


@pytest.fixture(scope="module")
def serial() -> Iterator[SweepResult]:
    """The sweep several tests read (module-scoped, so conftest's fixture is not there yet)."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("TOMII_SCHEDULER_PATH", str(TARGET))
        patch.setenv("TOMII_PLUGIN_PATH", str(TARGET))
        yield small_sweep()


def same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN."""
    return a == b or (isinstance(a, float) and isinstance(b, float) and math.isnan(a + b))


def trial_sequence(result: SweepResult) -> list[int]:
    return [row["trial"] for row in sorted(result.rows, key=lambda row: row["order"])]


# ---------------------------------------------------------------------------------------------
# Rows


def test_rows_follow_the_schema_one_per_trial(serial: SweepResult) -> None:
    assert serial.columns == [*COLUMNS, "worker_pid"]
    assert len(serial.rows) == 16 and not serial.interrupted
    for row in serial.rows:
        assert list(row) == serial.columns
        assert row["valid"] and row["problem"] == "", row["problem"]
        assert row["frames"] == FRAMES and row["slots"] == 2 and row["pop_batch"] == 0
        assert row["throughput_frames_per_s"] > 0 and row["wall_time_s"] > 0
        assert len(json.loads(row["busy_per_worker"])) == row["workers"]
        assert json.loads(row["scheduler_options"]) == {}
    assert sorted(row["trial"] for row in serial.rows) == list(range(16))
    combos = {(r["scheduler"], r["graph"], r["workers"]) for r in serial.rows}
    assert len(combos) == 8
    assert {r["repeat"] for r in serial.rows} == {0, 1}
    # One child process ran every trial.
    assert len({row["worker_pid"] for row in serial.rows}) == 1
    assert serial.rows[0]["worker_pid"] != os.getpid()


def test_in_process_trials_run_here() -> None:
    result = sweep(
        ["fifo"], small_graphs()[:1], repeats=2, frames=3, progress=False, isolation="none"
    )
    assert [row["worker_pid"] for row in result.rows] == [os.getpid()] * 2
    assert all(row["valid"] for row in result.rows)
    assert result.environment["parameters"]["isolation"] == "none"


@pytest.mark.parametrize(
    ("terminal", "ipython", "options", "printed"),
    [
        (True, False, {}, True),  # run by hand in a terminal
        (False, True, {}, True),  # in IPython or a Jupyter notebook
        (False, False, {}, False),  # output piped or captured
        (False, False, {"show": True}, True),
        (True, False, {"show": False}, False),
        (True, False, {"progress": False}, False),  # a program that hides the bar prints its own
    ],
)
def test_the_table_is_printed_when_someone_watches(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    terminal: bool,
    ipython: bool,
    options: dict[str, Any],
    printed: bool,
) -> None:
    monkeypatch.setattr(sys.stdout, "isatty", lambda: terminal)
    shell = types.SimpleNamespace(get_ipython=lambda: object() if ipython else None)
    monkeypatch.setitem(sys.modules, "IPython", shell)
    settings: dict[str, Any] = {"repeats": 1, "frames": 3, "isolation": "none", **options}
    result = sweep(["fifo", "work-stealing"], small_graphs()[:1], **settings)
    out = capsys.readouterr().out
    table = summary(result.rows, environment=result.environment)  # what `tomii sweep` prints
    assert table.startswith("graph") and "work-stealing" in table
    assert out == (table + "\n" if printed else "")


def test_bounds_come_from_the_graph(serial: SweepResult) -> None:
    for row in serial.rows:
        graph = next(g for g in small_graphs() if g["name"] == row["graph"])
        critical, work = graphs.critical_path_us(graph), graphs.total_work_us(graph)
        assert row["critical_path_us"] == critical and row["work_us"] == work
        bound = min(row["workers"] * 1e6 / work, row["slots"] * 1e6 / critical)
        assert row["bound_frames_per_s"] == pytest.approx(bound)
        expected = row["throughput_frames_per_s"] / bound
        assert row["efficiency"] == pytest.approx(expected)


def test_a_graph_without_cost_has_no_bound() -> None:
    result = sweep(
        ["fifo"], [graphs.map_reduce(3, 2)], repeats=1, warmup=0, frames=5, progress=False
    )
    (row,) = result.rows
    assert row["valid"] and row["work_us"] == 0
    assert math.isnan(row["bound_frames_per_s"]) and math.isnan(row["efficiency"])


def test_the_order_is_a_seeded_permutation(serial: SweepResult) -> None:
    assert sorted(row["order"] for row in serial.rows) == list(range(16))
    again = small_sweep(check=False, warmup=0)
    assert trial_sequence(again) == trial_sequence(serial)
    other = small_sweep(check=False, warmup=0, seed=1)
    assert sorted(trial_sequence(other)) == list(range(16))
    assert trial_sequence(other) != trial_sequence(serial)
    assert trial_sequence(serial) != list(range(16))


def test_extra_knobs_become_columns() -> None:
    result = sweep(
        [Scheduler("fifo", label="plain")],
        small_graphs()[:1],
        {"stall_timeout_ms": [1500, 2500], "pop_batch": [2]},
        repeats=1,
        warmup=0,
        frames=5,
        progress=False,
    )
    assert result.columns[-2:] == ["stall_timeout_ms", "worker_pid"]
    assert sorted(row["stall_timeout_ms"] for row in result.rows) == [1500, 2500]
    assert {(row["scheduler"], row["pop_batch"]) for row in result.rows} == {("plain", 2)}


def test_graphs_from_files_and_builders(tmp_path: Path) -> None:
    path = tmp_path / "pipe.json"
    path.write_text(json.dumps({"nodes": small_graphs()[1]["nodes"]}), encoding="utf-8")
    app = tomii.Graph()
    app.node("only", func="noop", factor=3)
    result = sweep(["fifo"], [path, app], repeats=1, warmup=0, frames=3, progress=False)
    assert sorted(row["graph"] for row in result.rows) == ["graph1", "pipe"]
    assert all(row["valid"] for row in result.rows)


# ---------------------------------------------------------------------------------------------
# Frames and traces


def trace_key(row: dict[str, Any]) -> str:
    return f"{row['scheduler']}|{row['graph']}|workers={row['workers']}|slots={row['slots']}"


def test_frame_latency_is_last_end_minus_first_ready(serial: SweepResult) -> None:
    assert len(serial.frames) == 16 * FRAMES
    assert all(list(record) == list(FRAME_COLUMNS) for record in serial.frames)
    for row in (r for r in serial.rows if r["repeat"] == 0):
        trace, _ = serial.traces[trace_key(row)]
        ours = [f for f in serial.frames if f["trial"] == row["trial"]]
        assert [f["frame"] for f in ours] == list(range(FRAMES))
        for record in ours:
            tasks = trace[trace["frame"] == record["frame"]]
            want = (int(tasks["end_ns"].max()) - int(tasks["ready_ns"].min())) / 1e3
            assert record["latency_us"] == pytest.approx(want)
        ordered = sorted(f["latency_us"] for f in ours)
        assert row["latency_p50_us"] == ordered[FRAMES // 2 - 1]  # nearest rank
        assert row["latency_mean_us"] == pytest.approx(float(np.mean(ordered)))


def test_traces_keep_the_first_repeat_of_each_configuration(serial: SweepResult) -> None:
    first = {trace_key(r) for r in serial.rows if r["repeat"] == 0}
    assert set(serial.traces) == first and len(first) == 8
    for trace, names in serial.traces.values():
        assert trace.dtype == np.dtype(tomii.TRACE_DTYPE) and len(trace) > 0
        assert int(trace["node"].max()) < len(names)


def test_trace_keys_name_every_knob_that_varies() -> None:
    result = sweep(
        ["fifo"],
        small_graphs()[:1],
        {"pop_batch": [1, 2], "stall_timeout_ms": [1500]},
        repeats=1,
        warmup=0,
        frames=3,
        progress=False,
    )
    name = small_graphs()[0]["name"]
    assert sorted(result.traces) == [f"fifo|{name}|workers=1|slots=1|pop_batch={n}" for n in (1, 2)]


def test_a_frame_without_tasks_has_no_latency() -> None:
    trace = np.zeros(2, dtype=tomii.TRACE_DTYPE)
    trace["frame"], trace["ready_ns"], trace["end_ns"] = [0, 2], [10, 50], [1010, 2050]
    latencies = frame_latencies_us(trace, 3)
    assert latencies[0] == 1.0 and math.isnan(latencies[1]) and latencies[2] == 2.0


# ---------------------------------------------------------------------------------------------
# Invalid rows


def test_a_broken_scheduler_gives_invalid_rows_and_the_sweep_goes_on() -> None:
    broken = (BROKEN, {"fault": "duplicate", "after": 0})
    result = sweep(["fifo", broken], small_graphs(), repeats=2, warmup=1, frames=5, progress=False)
    assert len(result.rows) == 8
    for row in result.rows:
        if row["scheduler"] == "fifo":
            assert row["valid"], row["problem"]
            continue
        assert json.loads(row["scheduler_options"]) == {"fault": "duplicate", "after": "0"}
        assert not row["valid"] and math.isnan(row["throughput_frames_per_s"])
        assert "SchedulerFault" in row["problem"] and "same task twice" in row["problem"]


def test_a_broken_invariant_is_named() -> None:
    graph = small_graphs()[0]
    result = tomii.run_graph(graph, dylibs=[SYNTHETIC], workers=2, slots=2, frames=3, trace=True)
    assert result.trace is not None
    knobs = {"frames": 3, "slots": 2, "workers": 2}
    assert trace_problems(graph, result.trace, result.node_names, result.report, **knobs) == []
    doubled = np.concatenate([result.trace, result.trace[:1]])
    problems = trace_problems(graph, doubled, result.node_names, result.report, **knobs)
    assert problems and all(p.startswith("exactly once") for p in problems)
    assert "ran 2 times" in problems[0]


# ---------------------------------------------------------------------------------------------
# Interruption, files


def stop_after(count: int, out: Path | None = None) -> Any:
    seen: list[dict[str, Any]] = []

    def on_trial(row: dict[str, Any]) -> None:
        seen.append(row)
        if out is not None:  # the row is on disk before anyone hears of it
            with (out / "results.csv").open(encoding="utf-8") as written:
                assert sum(1 for _ in written) == len(seen) + 1
        if len(seen) == count:
            raise KeyboardInterrupt

    return on_trial


def test_ctrl_c_keeps_the_finished_rows_on_disk(tmp_path: Path) -> None:
    out = tmp_path / "sweep"
    result = small_sweep(out=out, on_trial=stop_after(3, out))
    assert result.interrupted and len(result.rows) == 3
    loaded = SweepResult.load(out)
    assert loaded.interrupted
    assert [row["trial"] for row in loaded.rows] == [row["trial"] for row in result.rows]
    assert len(loaded.frames) == 3 * FRAMES
    assert loaded.frames == result.frames


def test_ctrl_c_on_an_executor() -> None:
    with ThreadPoolExecutor(max_workers=1) as pool:
        result = small_sweep(executor=pool, on_trial=stop_after(2))
    assert result.interrupted and len(result.rows) == 2


def test_a_killed_sweep_leaves_readable_files(tmp_path: Path) -> None:
    out = tmp_path / "sweep"

    def kill(row: dict[str, Any]) -> None:
        raise SystemExit  # not a Ctrl-C: nothing more is written after it

    with pytest.raises(SystemExit):
        small_sweep(out=out, on_trial=kill)
    loaded = SweepResult.load(out)
    assert loaded.interrupted and len(loaded.rows) == 1
    assert loaded.environment["parameters"]["trials"] == 16


def test_save_and_load_round_trip(serial: SweepResult, tmp_path: Path) -> None:
    serial.save(tmp_path, format="csv")
    assert {p.name for p in tmp_path.iterdir()} == {
        "results.csv",
        "frames.csv",
        "environment.json",
        "traces.npz",
    }
    loaded = SweepResult.load(tmp_path)
    assert loaded.columns == serial.columns and not loaded.interrupted
    for mine, theirs in zip(serial.rows, loaded.rows):
        assert all(same(mine[k], theirs[k]) for k in serial.columns), (mine, theirs)
        assert all(type(mine[k]) is type(theirs[k]) for k in serial.columns)
    assert loaded.frames == serial.frames
    assert loaded.environment == json.loads(json.dumps(serial.environment))
    assert list(loaded.traces) == list(serial.traces)
    for key, (trace, names) in serial.traces.items():
        assert np.array_equal(loaded.traces[key][0], trace)
        assert loaded.traces[key][1] == names


def test_parquet_holds_the_table_and_needs_pyarrow(
    serial: SweepResult, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pyarrow.parquet as pq  # type: ignore[import-not-found,import-untyped,unused-ignore]

    serial.save(tmp_path / "with", format="parquet")
    table = pq.read_table(tmp_path / "with" / "results.parquet")
    assert table.column_names == serial.columns and table.num_rows == len(serial.rows)
    monkeypatch.setitem(sys.modules, "pyarrow", None)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)
    with pytest.raises(ImportError, match="pyarrow"):
        serial.save(tmp_path / "without", format="parquet")
    serial.save(tmp_path / "auto")  # "auto": CSV only when pyarrow is missing
    assert not (tmp_path / "auto" / "results.parquet").exists()


def test_to_pandas(serial: SweepResult) -> None:
    frame = serial.to_pandas()
    assert list(frame.columns) == serial.columns and len(frame) == 16
    assert frame["valid"].all()


def test_the_environment_is_recorded() -> None:
    result = sweep(["fifo"], repeats=1, warmup=0, frames=3, progress=False)  # standard set
    assert len(result.rows) == len(graphs.standard_set("small"))
    env = result.environment
    for key in ("tomii_version", "python_version", "platform", "cpu_model", "date"):
        assert isinstance(env[key], str) and env[key], key
    assert env["cpu_count"] == os.cpu_count()
    assert "git_commit" in env and "git_dirty" in env
    assert len(env["load_average"]) == 3 and len(env["load_average_end"]) == 3
    parameters = env["parameters"]
    assert parameters["seed"] == 0 and parameters["frames"] == 3 and parameters["repeats"] == 1
    assert [s["label"] for s in parameters["schedulers"]] == ["fifo"]


# ---------------------------------------------------------------------------------------------
# Arguments


@pytest.mark.parametrize(
    ("arguments", "error", "text"),
    [
        ({"knobs": {"wokers": [1]}}, tomii.ConfigError, "unknown knob 'wokers'"),
        ({"knobs": {"trace": [True]}}, tomii.ConfigError, "unknown knob 'trace'"),
        ({"knobs": {"workers": [0]}}, ValueError, "integers from 1"),
        ({"knobs": {"slots": []}}, ValueError, "no values"),
        ({"repeats": 0}, ValueError, "repeats"),
        ({"graphs": [graphs.map_reduce(2, 2)] * 2}, ValueError, "two graphs"),
        ({"schedulers": ["fifo", "fifo"]}, ValueError, "two schedulers"),
        ({"schedulers": "fifo"}, ValueError, "non-empty list"),
        ({"schedulers": ["no-such"]}, tomii.PluginError, "no-such"),
        ({"schedulers": [TARGET / "missing.so"]}, tomii.PluginError, "no such file"),
        ({"graphs": [TARGET / "missing.json"]}, tomii.GraphError, "missing.json"),
        ({"schedulers": [("fifo",)]}, TypeError, "name_or_path, options"),
        ({"isolation": "thread"}, ValueError, "isolation must be one of process, none"),
        ({"trial_timeout_s": 0}, ValueError, "trial_timeout_s must be positive"),
    ],
)
def test_bad_arguments_fail_before_any_trial(
    arguments: dict[str, Any], error: type[Exception], text: str
) -> None:
    settings: dict[str, Any] = {"schedulers": ["fifo"], "graphs": small_graphs(), **arguments}
    with pytest.raises(error, match=text):
        sweep(**settings, progress=False)


# ---------------------------------------------------------------------------------------------
# Executors


def test_a_thread_pool_runs_the_same_trials(serial: SweepResult) -> None:
    with ThreadPoolExecutor(max_workers=2) as pool:
        result = small_sweep(executor=pool)
    assert len(result.rows) == len(serial.rows) and not result.interrupted
    assert sorted(r["trial"] for r in result.rows) == sorted(r["trial"] for r in serial.rows)
    assert all(row["valid"] for row in result.rows)
    assert set(result.traces) == set(serial.traces)
    assert result.environment["parameters"]["executor"] == "ThreadPoolExecutor"


def test_a_dask_cluster_runs_every_trial_on_its_worker_processes(serial: SweepResult) -> None:
    from distributed import Client, LocalCluster

    cluster = LocalCluster(  # type: ignore[no-untyped-call,unused-ignore]
        n_workers=2, processes=True, threads_per_worker=1, dashboard_address=None
    )
    with cluster, Client(cluster) as client:  # type: ignore[no-untyped-call,unused-ignore]
        pids = set(client.run(os.getpid).values())
        result = small_sweep(executor=client)
    assert len(pids) == 2 and os.getpid() not in pids
    assert len(result.rows) == len(serial.rows) and not result.interrupted
    assert {row["worker_pid"] for row in result.rows} <= pids
    assert sorted(r["trial"] for r in result.rows) == list(range(16))
    assert all(row["valid"] for row in result.rows), [r["problem"] for r in result.rows]
    assert len(result.frames) == 16 * FRAMES and len(result.traces) == 8


def test_random_is_not_used_globally() -> None:
    state = random.getstate()
    sweep(["fifo"], small_graphs()[:1], repeats=2, warmup=0, frames=2, progress=False)
    assert random.getstate() == state
