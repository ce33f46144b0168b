"""`python -m headtohead [--quick]`: the head-to-head suite of bench/README.md "Head-to-head".

Runs every configuration of the plan on every runtime (Tomii with each shipped scheduler, oneTBB,
Rayon), one process per run, interleaved round by round, checking that every peer run of a real
workload ends with Tomii's last-frame sink values; then the Python-kernel comparison with
Dask; then writes results/ (measurements.csv, environment.json, summary.md, one PNG per workload)
and the table into bench/README.md. bench/suite/run.sh builds everything first: call that.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import random
import subprocess
import sys
import time
from collections.abc import Sequence
from importlib.metadata import version
from pathlib import Path
from typing import Any

from tomii import graphs

from . import environment, kernels, plots, report, workloads
from .metrics import Bounds, Measurement, summarize
from .plan import PY_SHAPES, REAL_SHAPES, SHAPES, Config, Plan, make_plan
from .records import Csv
from .runtimes import (
    FIFO_INLINE,
    PY_RUNTIMES,
    RAYON,
    TBB,
    Files,
    Result,
    Runtime,
    peer_runtimes,
    tomii_runtimes,
)

ROOT = Path(__file__).resolve().parents[3]
SUITE = ROOT / "bench" / "suite"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="headtohead", description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick",
        action="store_true",
        help="3 repeats, W5 at 1 µs, 30 W6 frames, 20 W7–W9 frames, sweep to 16 µs",
    )
    parser.add_argument(
        "--repeats", type=int, help="runs of every measurement (default 5, --quick 3)"
    )
    parser.add_argument(
        "--only",
        help="comma-separated workloads, e.g. W1,W4,W2-py (a partial table, not put in bench/README.md)",
    )
    parser.add_argument("--out", type=Path, default=SUITE / "results")
    parser.add_argument("--seed", type=int, default=0, help="the order of runtimes in each round")
    parser.add_argument("--no-readme", action="store_true", help="leave bench/README.md alone")
    parser.add_argument("--no-python", action="store_true", help="skip the Dask comparison")
    return parser.parse_args(argv)


#: Per real configuration: the sink rows of Tomii's last frame, which every peer run must match.
Answers = dict[Config, list[Any]]


def prepare(plan: Plan, work: Path) -> tuple[dict[str, Files], dict[str, Bounds], Answers]:
    """Writes each configuration's graph and DAG once; returns the files, every frame's bounds
    and, for the real workloads, Tomii's answers."""
    work.mkdir(parents=True, exist_ok=True)
    files: dict[str, Files] = {}
    bounds: dict[str, Bounds] = {}
    answers: Answers = {}
    for config in plan.all_configs():
        key = config.graph_key
        if config.workload in REAL_SHAPES:
            answers[config] = prepare_real(config, work, files, bounds)
            continue
        if key in bounds:
            continue
        shapes = PY_SHAPES if config in plan.py_configs else SHAPES
        graph = shapes[config.workload].build(config.us)
        dag = workloads.expand(graph)
        bounds[key] = Bounds(dag.tasks, dag.total_work_us(), dag.critical_path_us())
        if config in plan.py_configs:
            continue
        files[key] = Files(work / f"{key}.json", work / f"{key}.dag", work / "report.json")
        files[key].graph.write_text(json.dumps(graph), encoding="utf-8")
        dag.write(files[key].dag)
    return files, bounds, answers


def prepare_real(
    config: Config, work: Path, files: dict[str, Files], bounds: dict[str, Bounds]
) -> list[Any]:
    """A real workload's graph (without post-nodes) and kernel DAG, written once; returns the
    sinks of the last frame of a Tomii run of `config` (fifo, 2 workers)."""
    key = config.graph_key
    graph, library = _real_workload(config.workload)
    if key not in files:
        dag = kernels.expand(graph, library)
        bounds[key] = Bounds(len(dag.tasks), 0, 0)
        report = work / "report.json"
        files[key] = Files(work / f"{key}.json", work / f"{key}.kdag", report, library)
        files[key].graph.write_text(json.dumps(graph), encoding="utf-8")
        dag.write(files[key].dag)
    return kernels.tomii_sinks(graph, library, config.frames, config.slots)


@functools.cache
def _real_workload(key: str) -> tuple[dict[str, Any], Path]:
    """The graph every runtime runs (without post-nodes) and its kernel library, built once."""
    shape = REAL_SHAPES[key]
    (workload,) = graphs.workloads(ROOT / "examples" / shape.directory, scale=shape.scale)
    (library,) = workload.dylibs
    return kernels.without_post_nodes(workload.graph), Path(library)


def measure(
    runtime: Runtime, config: Config, files: Files, bounds: Bounds, answer: list[Any] | None
) -> Result:
    """One run; a peer's run of a real workload fails unless its sinks are `answer`, Tomii's."""
    files.report.unlink(missing_ok=True)
    timeout = 60 + 30 * bounds.ideal_s(config.frames, config.slots)
    result = runtime.measure(config, files, timeout)
    expected = bounds.tasks * config.frames
    if result.tasks is not None and result.tasks != expected:
        return Result(None, None, f"ran {result.tasks} tasks, expected {expected}")
    if answer is not None and runtime.scheduler is None and result.wall_s is not None:
        wrong = kernels.compare_sinks(result.sinks, answer)
        if wrong:
            return Result(None, None, f"last frame's sinks differ from Tomii's: {wrong}")
    return result


def _brief(runtime: str, config: Config, result: Result, bounds: Bounds) -> str:
    if result.wall_s is None:
        return f"{runtime} failed"
    if config.frames > 1:
        return f"{runtime} {config.frames / result.wall_s:,.0f} frames/s"
    if config.us == 0:
        return f"{runtime} {result.wall_s / bounds.tasks * 1e9:,.0f} ns/task"
    return f"{runtime} eff {bounds.ideal_s(1, 1) / result.wall_s:.2f}"


def run_rounds(
    plan: Plan,
    runtimes: list[Runtime],
    files: dict[str, Files],
    bounds: dict[str, Bounds],
    answers: Answers,
    sink: Csv,
    seed: int,
) -> list[Measurement]:
    order = random.Random(seed)
    done: list[Measurement] = []
    if plan.configs:  # one unrecorded run each, so that no runtime's first run is also its coldest
        first = plan.configs[0]
        for runtime in runtimes:
            measure(runtime, first, files[first.graph_key], bounds[first.graph_key], None)
    for round_ in range(plan.repeats):
        print(f"==> round {round_ + 1}/{plan.repeats}", flush=True)
        for config in plan.configs:
            started = time.monotonic()
            shown = []
            for runtime in order.sample(runtimes, len(runtimes)):
                b = bounds[config.graph_key]
                answer = answers.get(config)
                result = measure(runtime, config, files[config.graph_key], b, answer)
                timing = "engine wall (report)" if runtime.scheduler else "run only"
                m = Measurement(
                    config,
                    runtime.name,
                    round_,
                    timing,
                    result.tasks,
                    result.wall_s,
                    result.error or "",
                )
                done.append(m)
                sink.add(m)
                if runtime.name in ("tomii-fifo", FIFO_INLINE, TBB, RAYON) or result.error:
                    shown.append(_brief(runtime.name, config, result, b))
            took = time.monotonic() - started
            print(f"  {config.label()}: {'; '.join(sorted(shown))} ({took:.1f} s)", flush=True)
    return done


def run_python(plan: Plan, out: Path, seed: int, sink: Csv) -> list[Measurement]:
    """The Dask comparison, in a process of its own (pykernels.py)."""
    keys = sorted({c.workload for c in plan.py_configs})
    if not keys:
        return []
    print("==> Python kernels: Tomii py_node vs dask.delayed", flush=True)
    rows_file = out / "work" / "python_rows.json"
    command = [sys.executable, "-m", "headtohead.pykernels", "--repeats", str(plan.repeats)]
    command += ["--seed", str(seed), "--out", str(rows_file), "--workloads", ",".join(keys)]
    done = subprocess.run(command, cwd=SUITE, check=False)
    if done.returncode != 0:
        reason = f"headtohead.pykernels exited {done.returncode} (its error is printed above)"
        failed = [
            Measurement(c, "tomii-fifo", 0, "whole call", None, None, reason)
            for c in plan.py_configs
        ]
        for m in failed:
            sink.add(m)
        return failed
    measurements = []
    for row in json.loads(rows_file.read_text(encoding="utf-8")):
        config = Config(row["workload"], row["us"])
        m = Measurement(
            config, row["runtime"], row["round"], row["timing"], row["tasks"], row["wall_s"]
        )
        measurements.append(m)
        sink.add(m)
    return measurements


def check_binaries(runtimes: list[Runtime]) -> list[str]:
    missing = [
        r for r in runtimes if not r.binary.is_file() or (r.synthetic and not r.synthetic.is_file())
    ]
    return [
        f"{r.name}: {r.binary} (or its kernels) is missing; build it with bench/suite/run.sh"
        for r in missing
    ]


def versions(env: environment.Environment, runtimes: list[Runtime], work: Path) -> None:
    """The peers' versions: oneTBB's as its binary reports it, Rayon's from Cargo.lock, Dask's."""
    tbb = next(r for r in runtimes if r.name == TBB)
    probe = work / "probe.dag"
    workloads.Dag([0], [[]]).write(probe)
    command = [str(tbb.binary), "--dag", str(probe)]
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    try:
        env.versions["oneTBB"] = str(json.loads(done.stdout)["version"])
    except (ValueError, KeyError):
        env.versions["oneTBB"] = "?"
    env.versions["Rayon"] = environment.cargo_lock_version(ROOT, "rayon")
    env.versions["Dask"] = version("dask")


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    only = set(args.only.split(",")) if args.only else None
    unknown = sorted((only or set()) - set(SHAPES) - set(REAL_SHAPES) - set(PY_SHAPES))
    if unknown:
        known = ", ".join([*SHAPES, *REAL_SHAPES, *PY_SHAPES])
        print(
            f"error: --only: unknown workloads {', '.join(unknown)}; known: {known}",
            file=sys.stderr,
        )
        return 2
    plan = make_plan(args.quick, args.repeats, only)
    runtimes = tomii_runtimes(ROOT) + peer_runtimes(ROOT)
    problems = check_binaries(runtimes)
    if problems:
        print("error: " + "\n       ".join(problems), file=sys.stderr)
        return 2
    command = "bash bench/suite/run.sh" + (" --quick" if args.quick else "")
    env = environment.capture(ROOT, command + (f" --only {args.only}" if args.only else ""))
    args.out.mkdir(parents=True, exist_ok=True)
    sizes = f"{len(plan.configs)} configurations × {len(runtimes)} runtimes × {plan.repeats}"
    then = "" if args.no_python or not plan.py_configs else ", then the Python kernels"
    print(f"==> {sizes} repeat(s){then}", flush=True)
    files, bounds, answers = prepare(plan, args.out / "work")
    versions(env, runtimes, args.out / "work")
    sink = Csv(args.out / "measurements.csv", env.date, env.commit, bounds)
    try:
        measured = run_rounds(plan, runtimes, files, bounds, answers, sink, args.seed)
        if not args.no_python:
            measured += run_python(plan, args.out, args.seed, sink)
    finally:
        sink.close()
    env.load_end = os.getloadavg()[0]
    return write_results(args, plan, env, runtimes, measured, bounds)


def write_results(
    args: argparse.Namespace,
    plan: Plan,
    env: environment.Environment,
    runtimes: list[Runtime],
    measured: list[Measurement],
    bounds: dict[str, Bounds],
) -> int:
    results = report.Results(
        plan, [r.name for r in runtimes], summarize(measured), bounds, PY_RUNTIMES, env
    )
    table = report.markdown(results)
    (args.out / "summary.md").write_text("# Head-to-head\n\n" + table, encoding="utf-8")
    (args.out / "environment.json").write_text(
        json.dumps(env.to_json(), indent=2), encoding="utf-8"
    )
    made = plots.plot_all(results, args.out)
    print(table)
    print(f"==> wrote {args.out / 'measurements.csv'}, summary.md and {len(made)} figures")
    if args.only:
        print("==> bench/README.md left alone: --only makes a partial table")
    elif not args.no_readme:
        report.update_readme(ROOT / "bench" / "README.md", table)
        print("==> updated bench/README.md (Head-to-head)")
    failed = sum(1 for m in measured if m.wall_s is None)
    if failed:
        print(f"warning: {failed} runs failed; see Failures in the table", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
