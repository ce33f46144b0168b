"""Real workloads in sweeps (tomii.graphs.Workload, tomii.graphs.workloads): loaded from their
directories (two of which may each have a graph.py), run on their own kernel libraries, measured
on this machine before a simulating sweep draws their tasks' durations from what was measured,
each repeat with its own draws; the machine's load and steal time in every row; the mechanism
and the machine's state under the verdicts; the examples' workloads end to end at their quick
scale, as the main job (experiments/real-workloads) runs them."""

from __future__ import annotations

import json
import math
import textwrap
from pathlib import Path

import pytest
from reference import ROOT, SYNTHETIC

import tomii
from tomii.experiments import measure_costs, sweep
from tomii.experiments.config import load_config, summary
from tomii.graphs import Fixed, Workload, fork_join, workloads

EXAMPLES = ROOT / "examples"
#: The examples that are workloads, as experiments/real-workloads lists them.
EXAMPLE_WORKLOADS = ("cholesky", "wavefront", "mapreduce", "stream-analytics")


def workload_dir(root: Path, name: str, width: int) -> Path:
    """A workload directory whose workload.py imports its sibling graph.py (every directory has
    one, each building a different fork-join on the synthetic kernels)."""
    directory = root / name
    directory.mkdir()
    (directory / "graph.py").write_text(
        textwrap.dedent(f"""\
            from tomii.graphs import Fixed, fork_join

            def make():
                graph = fork_join({width}, 2, cost=Fixed(20))
                graph["name"] = "{name}"
                return graph
            """)
    )
    (directory / "workload.py").write_text(
        textwrap.dedent(f"""\
            import graph
            import tomii

            def workload(scale):
                return tomii.graphs.Workload(
                    graph.make(), dylibs=({str(SYNTHETIC)!r},), mechanism="{name}'s mechanism"
                )
            """)
    )
    return directory


def test_workloads_load_from_directories_each_with_its_own_graph_module(tmp_path: Path) -> None:
    first, second = workload_dir(tmp_path, "wide", 8), workload_dir(tmp_path, "narrow", 2)
    loaded = workloads(first, second)
    assert [w.name for w in loaded] == ["wide", "narrow"]
    assert [len(w.graph["nodes"]) for w in loaded] == [5, 5]
    widths = [w.graph["nodes"][1]["factor"] for w in loaded]
    assert widths == [8, 2]  # each workload.py imported its own graph.py
    assert loaded[0].dylibs == (str(SYNTHETIC),) and loaded[1].mechanism == "narrow's mechanism"


def test_a_directory_that_is_no_workload_is_named(tmp_path: Path) -> None:
    with pytest.raises(tomii.ConfigError, match=f"{tmp_path}: no workload.py here"):
        workloads(tmp_path)
    (tmp_path / "workload.py").write_text("def other(scale):\n    return 1\n")
    with pytest.raises(tomii.ConfigError, match=r"workload.py: defines no function workload"):
        workloads(tmp_path)
    (tmp_path / "workload.py").write_text("def workload(scale):\n    return {}\n")
    with pytest.raises(tomii.ConfigError, match=r"workload\('small'\) returned dict, not a"):
        workloads(tmp_path)


def test_a_workload_runs_on_its_own_kernels_and_rows_say_how_busy_the_machine_was() -> None:
    # 100 frames of 3 × 200 µs: long enough for the kernel's clock ticks to count steal time.
    work = Workload(fork_join(4, 2, cost=Fixed(200)), dylibs=(str(SYNTHETIC),))
    # The sweep's own dylibs would fail every trial: the workload's replace them.
    result = sweep(
        ["fifo"], [work], repeats=2, warmup=0, frames=100, dylibs=["/nonexistent.so"],
        progress=False, isolation="none",
    )  # fmt: skip
    assert [row["problem"] for row in result.rows] == ["", ""]
    for row in result.rows:
        assert row["load_average_1m"] >= 0
        assert 0 <= row["steal_percent"] <= 100


def test_a_simulating_sweep_measures_a_workload_first_and_each_repeat_draws_anew(
    tmp_path: Path,
) -> None:
    graph = fork_join(8, 3, cost=Fixed(30))
    work = Workload(graph, dylibs=(str(SYNTHETIC),), mechanism="forks and joins")
    out = tmp_path / "out"
    result = sweep(
        ["fifo"], [work], {"workers": [4]}, repeats=3, warmup=0, frames=10, mode="simulate",
        progress=False, out=out,
    )  # fmt: skip
    assert all(row["problem"] == "" for row in result.rows), result.rows
    measured = result.environment["parameters"]["measured_costs"]
    assert list(measured) == [graph["name"]]
    model = json.loads((out / "costs" / f"{graph['name']}.json").read_text())
    assert measured[graph["name"]]["tasks"] == 40 * sum(n["factor"] for n in graph["nodes"])
    spins = [n["name"] for n in graph["nodes"] if n["function"] == "spin"]
    assert sorted(model["nodes"]) == sorted(n["name"] for n in graph["nodes"])
    # Measured: a spin(30 µs) lasts at least 30 µs, and not exactly the same every time.
    durations = [ns for name in spins for ns in model["nodes"][name]["samples"]["ns"]]
    assert min(durations) >= 30_000 and len(set(durations)) > 1
    throughputs = [row["throughput_frames_per_s"] for row in result.rows]
    assert len(set(throughputs)) == 3, throughputs  # the repeats drew their own durations
    again = sweep(
        ["fifo"], [Workload(graph, cost_model=model)], {"workers": [4]}, repeats=3, warmup=0,
        frames=10, mode="simulate", progress=False, isolation="none",
    )  # fmt: skip
    assert sorted(r["throughput_frames_per_s"] for r in again.rows) == sorted(throughputs)
    text = summary(result.rows, environment=result.environment)
    assert "why: forks and joins" not in text  # one scheduler: no verdict, so no mechanism


def test_measure_costs_gives_every_task_of_every_frame_but_the_far_out() -> None:
    graph = fork_join(4, 2, cost=Fixed(5))
    costs = measure_costs(Workload(graph, dylibs=(str(SYNTHETIC),)), frames=6, warmup_frames=1)
    tasks = sum(node["factor"] for node in graph["nodes"])
    kept = sum(len(n["samples"]["ns"]) for n in costs.model["nodes"].values())
    assert costs.tasks == 6 * tasks and kept == costs.tasks - costs.far_out


def test_far_out_durations_are_left_out_of_a_measured_model() -> None:
    from tomii.experiments.sweep import _without_far_out

    durations = [100, 101, 102, 103, 104, 105, 106, 107, 5_000]
    assert _without_far_out(durations) == durations[:-1]  # beyond 2 × median = 208 and 118
    # Beyond Q3 + 3 IQR (118) but within 2 × the median: a slow variant of the kernel, kept.
    assert _without_far_out([*durations[:-1], 190]) == [*durations[:-1], 190]
    assert _without_far_out([1, 1_000]) == [1, 1_000]  # too few to tell


def test_the_table_says_why_under_a_workloads_verdict_and_how_busy_the_machine_was() -> None:
    work = Workload(fork_join(8, 2, cost=Fixed(20)), dylibs=(str(SYNTHETIC),), mechanism="joins")
    result = sweep(
        ["fifo", "random"], [work], {"workers": [2]}, repeats=3, warmup=0, frames=5,
        progress=False, isolation="none",
    )  # fmt: skip
    lines = summary(result.rows, environment=result.environment).splitlines()
    verdict = next(k for k, line in enumerate(lines) if line.startswith(f"  {work.name}"))
    assert lines[verdict + 1].strip() == "why: joins"
    assert lines[-1].startswith("machine: load average ")
    assert lines[-1].endswith(("otherwise idle", "than on an otherwise idle machine"))
    # One trial in six with CPU time stolen: the sweep shared the machine. (The load average is
    # set low, so that only the stolen time decides, however busy the machine running this is.)
    rows = [
        {**row, "steal_percent": 30.0 if k == 0 else 0.0, "load_average_1m": 0.5}
        for k, row in enumerate(result.rows)
    ]
    last = summary(rows, environment=result.environment).splitlines()[-1]
    assert "up to 30.0 %, over 2 % in 1 of 6 trials" in last and "LOADED" in last
    many = [
        {**row, "steal_percent": 0.0, "load_average_1m": 0.5}
        for row in result.rows
        for _ in range(4)
    ]
    many[0]["steal_percent"] = 30.0  # one in 24: a blip, not a loaded machine
    assert summary(many, environment=result.environment).endswith("otherwise idle")


def test_a_config_names_workloads_relative_to_itself(tmp_path: Path) -> None:
    workload_dir(tmp_path, "wide", 4)
    config = tmp_path / "sweep.toml"
    config.write_text('schedulers = ["fifo"]\n[graphs]\nworkloads = ["wide"]\nscale = "small"\n')
    [work] = load_config(config)["graphs"]
    assert isinstance(work, Workload) and work.name == "wide"
    config.write_text('schedulers = ["fifo"]\n[graphs]\nstandard = "small"\nscale = "small"\n')
    with pytest.raises(tomii.ConfigError, match="scale: it sizes workloads"):
        load_config(config)
    config.write_text('schedulers = ["fifo"]\n[graphs]\nworkloads = ["missing"]\n')
    with pytest.raises(tomii.ConfigError, match="missing: no workload.py here"):
        load_config(config)


@pytest.fixture(scope="module")
def example_workloads() -> list[Workload]:
    return workloads(*(EXAMPLES / name for name in EXAMPLE_WORKLOADS), scale="quick")


def test_the_main_jobs_configs_name_the_example_workloads() -> None:
    for name in ("run", "simulate"):
        text = (ROOT / "experiments" / "real-workloads" / f"{name}.toml").read_text()
        for example in EXAMPLE_WORKLOADS:
            assert f'"../../examples/{example}"' in text


@pytest.mark.parametrize("mode", ["run", "simulate"])
def test_the_example_workloads_sweep_valid_in_both_modes(
    example_workloads: list[Workload], mode: str
) -> None:
    result = sweep(
        ["fifo", "critical-path"], example_workloads, {"workers": [2], "slots": [2]},
        repeats=1, warmup=0, frames=3, mode=mode, progress=False,
    )  # fmt: skip
    assert len(result.rows) == 2 * len(EXAMPLE_WORKLOADS)
    problems = {(r["graph"], r["scheduler"]): r["problem"] for r in result.rows if r["problem"]}
    assert not problems
    assert all(math.isfinite(r["throughput_frames_per_s"]) for r in result.rows)
