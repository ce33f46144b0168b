"""`tomii sweep CONFIG`: a sweep described by a TOML file, run, saved, summarised and plotted.

    schedulers = ["fifo", "work-stealing", { name = "random", options = { seed = "1" } },
                  { path = "libmine.so", label = "mine" }]
    repeats = 3          # recorded runs per combination
    warmup = 1           # unrecorded runs before the first of each combination
    frames = 200
    seed = 0             # of the trial order
    out = "results"      # relative to the config file; --out overrides it
    mode = "run"         # or "simulate": virtual workers (tomii.simulate), knobs as simulate's

    [graphs]
    standard = "small"                     # tomii.graphs.standard_set(scale)
    cost = { fixed = 5 }                   # or { uniform = [1, 10] }, { lognormal = [5, 0.5] }
    files = ["../../examples/graphs/pipeline.json"]        # relative to the config file
    workloads = ["../../examples/cholesky"]  # tomii.graphs.workloads: real kernels, relative too
    scale = "small"                        # the workloads' size
    [[graphs.generate]]                    # any generator of tomii.graphs, with its arguments
    generator = "streaming_pipeline"
    width = 16
    cost = { lognormal = [20, 0.3] }

    [knobs]                                # every combination of these run options
    workers = [1, 2]
    slots = [1, 4, 16]

    [plots]
    formats = ["png"]
    percentile = "p95"
    baseline = "fifo"    # speed-ups and the verdict are against it (default: fifo, else the first)

    [executor]
    dask = "local:2"     # a LocalCluster of 2 single-thread worker processes, or an address

Every key is checked: an unknown one is an error naming the file, the key and the valid keys.
The file is read only when it is a regular file of at most 16 MiB (`tomii tune` reads its own so).
"""

from __future__ import annotations

import argparse
import math
import os
import stat
import statistics
import sys
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from pathlib import Path
from typing import Any

from .. import graphs as generators
from ..errors import ConfigError, TomiiError
from .stats import distinct, is_valid, run_knobs
from .sweep import Scheduler, scheduler_labels, sweep
from .verdict import Comparisons, choose_baseline, compare, verdict

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - depends on the interpreter
    import tomli as tomllib

__all__ = ["load_config", "main", "summary"]

_TOP = {"schedulers", "repeats", "warmup", "frames", "seed", "out", "graphs", "knobs", "plots"}
_TOP |= {"executor", "check", "mode"}
_GRAPHS = {"standard", "cost", "files", "generate", "seed", "workloads", "scale"}
_PLOTS = {"formats", "percentile", "baseline"}
_EXECUTOR = {"dask"}
_GENERATORS = (
    "streaming_pipeline",
    "wavefront",
    "fork_join",
    "layered_random",
    "mimo_uplink",
    "map_reduce",
)


def _fail(path: Path, what: str) -> ConfigError:
    return ConfigError(f"{path}: {what}")


#: The largest configuration file read (`tomii sweep`'s and `tomii tune`'s): a bigger one is
#: refused before it is read.
_MAX_CONFIG_BYTES = 16 << 20

#: What a file that is not a regular one is, as a message says it, by its `stat` test.
_SPECIAL = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


def _refuse_unless_regular(path: Path, what: str, status: os.stat_result) -> None:
    """Refuses `what` at `path` unless `status` is a regular file's of at most _MAX_CONFIG_BYTES."""
    if not stat.S_ISREG(status.st_mode):
        kind = next((k for test, k in _SPECIAL if test(status.st_mode)), "a special file")
        raise _fail(
            path,
            f"{what} is {kind}, not a regular file; give a TOML file",
        )
    if status.st_size > _MAX_CONFIG_BYTES:
        raise _fail(
            path,
            f"{what} has {status.st_size} bytes, more than the {_MAX_CONFIG_BYTES} read at most; "
            "give a smaller file",
        )


def _read_toml(path: Path, what: str) -> dict[str, Any]:
    """The TOML document at `path` (`what` names it in errors: "the sweep configuration"), read
    only when it is a regular file of at most _MAX_CONFIG_BYTES, as the runtime reads its inputs:
    a device is refused before it is opened, and the file opened without blocking and checked
    again through its handle (a FIFO would block the read, a device such as /dev/zero never end
    it)."""
    try:
        _refuse_unless_regular(path, what, os.stat(path))
        with open(os.open(path, os.O_RDONLY | os.O_NONBLOCK), "rb") as file:
            _refuse_unless_regular(path, what, os.fstat(file.fileno()))
            data = file.read(_MAX_CONFIG_BYTES)
        return tomllib.loads(data.decode("utf-8"))
    except OSError as error:
        raise _fail(path, f"cannot read {what}: {error.strerror}") from None
    except UnicodeDecodeError:
        raise _fail(path, f"{what} is not UTF-8 text; give a TOML file") from None
    except tomllib.TOMLDecodeError as error:
        raise _fail(path, f"not valid TOML: {error}") from None


def _overridden(config: dict[str, Any], args: argparse.Namespace, keys: Sequence[str]) -> Path:
    """Gives `config` the command line's `keys` that were given, takes its "out" out and returns
    where the results go: `--out`, else the file's out, else out/ and the file's stem."""
    for key in keys:
        if getattr(args, key) is not None:
            config[key] = getattr(args, key)
    out: Path = args.out or config.pop("out") or Path("out") / args.config.stem
    config.pop("out", None)
    return out


def _check_keys(path: Path, table: Mapping[str, Any], valid: set[str], where: str) -> None:
    unknown = sorted(set(table) - valid)
    if unknown:
        raise _fail(
            path,
            f"unknown key(s) {', '.join(unknown)} in {where}; valid: {', '.join(sorted(valid))}",
        )


def _cost(path: Path, spec: Any, where: str) -> generators.Cost:
    if not isinstance(spec, dict) or len(spec) != 1:
        raise _fail(path, f"{where}: cost is one of {{fixed = US}}, {{uniform = [LO, HI]}}, "
                          "{lognormal = [MEDIAN, SIGMA]}")  # fmt: skip
    [(kind, value)] = spec.items()
    try:
        if kind == "fixed":
            return generators.Fixed(value)
        if kind == "uniform":
            return generators.Uniform(*value)
        if kind == "lognormal":
            return generators.LogNormal(*value)
    except (TypeError, ValueError) as error:
        raise _fail(path, f"{where}: cost {spec}: {error}") from None
    raise _fail(path, f"{where}: unknown cost kind {kind!r}; use fixed, uniform or lognormal")


def _schedulers(path: Path, specs: Any) -> list[str | Scheduler]:
    if not isinstance(specs, list) or not specs:
        raise _fail(path, "schedulers must be a non-empty list of names or tables")
    chosen: list[str | Scheduler] = []
    for spec in specs:
        if isinstance(spec, str):
            chosen.append(spec)
            continue
        if not isinstance(spec, dict):
            raise _fail(
                path, f"scheduler {spec!r}: a name or a table {{name|path, options, label}}"
            )
        _check_keys(path, spec, {"name", "path", "options", "label"}, "a scheduler")
        if ("name" in spec) == ("path" in spec):
            raise _fail(path, f"scheduler {spec}: give exactly one of name and path")
        target: str | Path = spec["name"] if "name" in spec else (path.parent / spec["path"])
        options = {str(k): str(v) for k, v in (spec.get("options") or {}).items()}
        chosen.append(Scheduler(target, options, str(spec.get("label", ""))))
    return chosen


def _graphs(path: Path, table: Any) -> list[Any]:
    if table is None:
        return generators.standard_set("small")
    if not isinstance(table, dict):
        raise _fail(path, "[graphs] must be a table")
    _check_keys(path, table, _GRAPHS, "[graphs]")
    seed = int(table.get("seed", 0))
    chosen: list[Any] = []
    if "standard" in table:
        cost = _cost(path, table["cost"], "[graphs]") if "cost" in table else generators.Fixed(0)
        try:
            chosen += generators.standard_set(table["standard"], cost=cost, seed=seed)
        except (TypeError, ValueError) as error:
            raise _fail(path, f"[graphs] standard: {error}") from None
    for file in table.get("files") or []:
        chosen.append(path.parent / file)
    if "scale" in table and "workloads" not in table:
        raise _fail(path, "[graphs] scale: it sizes workloads, and no workloads are given")
    directories = [path.parent / directory for directory in table.get("workloads") or []]
    try:
        chosen += generators.workloads(*directories, scale=str(table.get("scale", "small")))
    except (TomiiError, ValueError) as error:
        where = "" if str(path) in str(error) else "[graphs] workloads: "
        raise _fail(path, f"{where}{error}") from None
    for k, spec in enumerate(table.get("generate") or []):
        where = f"[[graphs.generate]] #{k + 1}"
        arguments = dict(spec)
        name = arguments.pop("generator", None)
        if name not in _GENERATORS:
            raise _fail(path, f"{where}: generator must be one of {', '.join(_GENERATORS)}")
        if "cost" in arguments:
            arguments["cost"] = _cost(path, arguments["cost"], where)
        try:
            chosen.append(getattr(generators, name)(**arguments))
        except (TypeError, ValueError) as error:
            raise _fail(path, f"{where}: {error}") from None
    if not chosen:
        raise _fail(path, "[graphs] selects no graph: give standard, files, generate or workloads")
    return chosen


def load_config(path: str | Path) -> dict[str, Any]:
    """The keyword arguments of `sweep` (plus "plots" and "executor") that a TOML file describes."""
    path = Path(path)
    document = _read_toml(path, "the sweep configuration")
    _check_keys(path, document, _TOP, "the file")
    plots = document.get("plots") or {}
    _check_keys(path, plots, _PLOTS, "[plots]")
    executor = document.get("executor") or {}
    _check_keys(path, executor, _EXECUTOR, "[executor]")
    knobs = document.get("knobs") or {}
    if not isinstance(knobs, dict):
        raise _fail(path, "[knobs] must be a table of run option = [values]")
    return {
        "schedulers": _schedulers(path, document.get("schedulers")),
        "graphs": _graphs(path, document.get("graphs")),
        "knobs": knobs,
        "repeats": int(document.get("repeats", 3)),
        "warmup": int(document.get("warmup", 1)),
        "frames": int(document.get("frames", 200)),
        "seed": int(document.get("seed", 0)),
        "check": bool(document.get("check", True)),
        "mode": str(document.get("mode", "run")),
        "out": path.parent / document["out"] if "out" in document else None,
        "plots": plots,
        "executor": executor,
    }


def summary(
    rows: Sequence[Mapping[str, Any]],
    *,
    baseline: str | None = None,
    environment: Mapping[str, Any] | None = None,
) -> str:
    """A text table: per graph, varying knobs and scheduler, the medians over the valid repeats of
    throughput (and its ratio to `baseline`'s), latencies and efficiency, and how many repeats
    were valid; then a verdict per graph (`verdict.verdict`), each workload's with its mechanism
    under it, and how busy the machine was during the trials. `baseline`: default fifo when the
    sweep ran it, else its first scheduler. `environment`: the sweep's (SweepResult.environment),
    for the mechanisms and the machine's CPU count."""
    varying = [k for k in run_knobs(rows) if len(distinct(row.get(k) for row in rows)) > 1]
    valid = [row for row in rows if is_valid(row)]
    chosen = choose_baseline(valid or rows, baseline) if rows else ""
    groups: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}
    for row in rows:
        key = (row["graph"], *(row[k] for k in varying), row["scheduler"])
        groups.setdefault(key, []).append(row)
    header = ["graph", *varying, "scheduler", "frames/s", f"× {chosen}", "p50 µs", "p99 µs"]
    lines = [header + ["efficiency", "ok"]]
    cells = compare(valid, baseline=chosen, keys=("graph", *varying)) if valid else []
    speedups = {}
    for comparisons in cells:
        for one in comparisons.schedulers:
            speedups[(*comparisons.cell, one.scheduler)] = one.speedup.value
    for key, members in sorted(groups.items(), key=lambda item: tuple(map(str, item[0]))):
        good = [r for r in members if is_valid(r)]
        lines.append(
            [
                *map(str, key),
                _median([r["throughput_frames_per_s"] for r in good]),
                _figure(speedups.get(key, math.nan), ".2f"),
                _median([r["latency_p50_us"] for r in good]),
                _median([r["latency_p99_us"] for r in good]),
                _median([r["efficiency"] for r in good]),
                f"{len(good)}/{len(members)}",
            ]
        )
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    table = ["  ".join(c.ljust(w) for c, w in zip(line, widths)).rstrip() for line in lines]
    environment = environment or {}
    mechanisms = (environment.get("parameters") or {}).get("mechanisms") or {}
    machine = _machine(rows, environment.get("cpu_count"))
    return "\n".join([*table, *_verdicts(cells, varying, mechanisms), *machine])


#: A trial ran on a busy machine when more than this share of CPU time was stolen (%) ...
LOADED_STEAL_PERCENT = 2.0
#: ... and the sweep did when more than this share of its trials did (or its median load
#: average exceeded the CPUs).
LOADED_TRIALS = 0.05


def _machine(rows: Sequence[Mapping[str, Any]], cpus: int | None) -> list[str]:
    """One line: the load average and steal time over the trials, and whether the machine was
    otherwise idle or LOADED: a median load above its CPUs, or more than LOADED_TRIALS of the
    trials with more than LOADED_STEAL_PERCENT of CPU time stolen."""
    loads = [r.get("load_average_1m", math.nan) for r in rows]
    steals = [r.get("steal_percent", math.nan) for r in rows]
    loads = [float(v) for v in loads if isinstance(v, (int, float)) and math.isfinite(v)]
    steals = [float(v) for v in steals if isinstance(v, (int, float)) and math.isfinite(v)]
    if not loads and not steals:
        return []
    parts = []
    if loads:
        cores = f" on {cpus} CPUs" if cpus else ""
        parts.append(f"load average {min(loads):.2f}–{max(loads):.2f}{cores} as trials started")
    stolen = sum(1 for v in steals if v > LOADED_STEAL_PERCENT)
    if steals:
        parts.append(
            f"CPU time stolen {statistics.median(steals):.1f} % (median), up to "
            f"{max(steals):.1f} %, over {LOADED_STEAL_PERCENT:g} % in {stolen} of "
            f"{len(steals)} trials"
        )
    loaded = (bool(loads) and cpus is not None and statistics.median(loads) > cpus) or (
        bool(steals) and stolen > LOADED_TRIALS * len(steals)
    )
    verdict_of_load = (
        "LOADED: other work shared the CPUs, so these intervals are wider, and the verdicts "
        "weaker, than on an otherwise idle machine"
        if loaded
        else "otherwise idle"
    )
    return ["", f"machine: {', '.join(parts)}: {verdict_of_load}"]


def _median(values: list[float]) -> str:
    finite = [v for v in values if isinstance(v, (int, float)) and math.isfinite(v)]
    return f"{statistics.median(finite):.4g}" if finite else "-"


def _figure(value: float, spec: str) -> str:
    return format(value, spec) if math.isfinite(value) else "-"


def _verdicts(
    cells: Sequence[Comparisons], varying: list[str], mechanisms: Mapping[str, str]
) -> list[str]:
    """The verdict lines: one per graph (and value of each varying knob), each followed by its
    graph's mechanism (a workload's) after its graph's last verdict."""
    if not cells or len(cells[0].schedulers) < 2:
        return []
    baseline = cells[0].baseline
    repeats = sorted({one.speedup.n for cell in cells for one in cell.schedulers})
    counts = str(repeats[0]) if len(repeats) == 1 else f"{repeats[0]}–{repeats[-1]}"
    lines = [
        "",
        (
            f"verdict: median frames/s against {baseline}'s, with its 95% bootstrap interval "
            f"over {counts} repeats; p99: median p99 latency against {baseline}'s"
        ),
    ]
    names = [
        ", ".join([str(cell.cell[0]), *(f"{k}={v}" for k, v in zip(varying, cell.cell[1:]))])
        for cell in cells
    ]
    width = max(len(name) for name in names)
    for k, (name, cell) in enumerate(zip(names, cells)):
        lines.append(f"  {name.ljust(width)}  {verdict(cell)}")
        graph = str(cell.cell[0])
        last = k + 1 == len(cells) or str(cells[k + 1].cell[0]) != graph
        if last and mechanisms.get(graph):
            lines.append(f"  {''.ljust(width)}  why: {mechanisms[graph]}")
    return lines


def _executor(spec: Mapping[str, Any], stack: ExitStack) -> Any:
    address = spec.get("dask")
    if address is None:
        return None
    try:
        from distributed import Client, LocalCluster
    except ImportError:
        raise ConfigError(
            "[executor] dask needs dask.distributed: pip install 'tomii[experiments]'"
        ) from None
    if str(address).startswith("local:"):
        workers = int(str(address).split(":", 1)[1])
        # One single-thread process per trial at a time: trials do not disturb each other's timing.
        cluster = LocalCluster(  # type: ignore[no-untyped-call]
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None
        )
        stack.enter_context(cluster)
        return stack.enter_context(Client(cluster))  # type: ignore[no-untyped-call]
    return stack.enter_context(Client(str(address)))  # type: ignore[no-untyped-call]


def _swept(rows: Sequence[Mapping[str, Any]], baseline: str | None) -> str | None:
    """`baseline` if a valid row ran it (an interrupted sweep may hold none of its trials, or
    all of them failed), else None: the default."""
    ran = any(row["scheduler"] == baseline and is_valid(row) for row in rows)
    return baseline if ran else None


def main(argv: Sequence[str] | None = None) -> int:
    """`tomii sweep CONFIG [--out DIR] [--no-plots] [--frames N] [--repeats N] [--baseline NAME]
    [--in-process] [--trial-timeout S]`."""
    parser = argparse.ArgumentParser(
        prog="tomii sweep", description="Compare schedulers as a TOML file describes."
    )
    parser.add_argument("config", type=Path, help="the sweep's TOML file")
    parser.add_argument(
        "--out", type=Path, help="where results and figures go (default: the file's out)"
    )
    parser.add_argument("--no-plots", action="store_true", help="write the table only")
    parser.add_argument("--frames", type=int, help="override the file's frames")
    parser.add_argument("--repeats", type=int, help="override the file's repeats")
    parser.add_argument(
        "--baseline",
        metavar="NAME",
        help="the scheduler that speed-ups and verdicts compare against (default: the file's "
        "[plots] baseline, else fifo when swept, else the first scheduler)",
    )
    parser.add_argument(
        "--in-process",
        action="store_true",
        help="run the trials in this process: faster to start, but a crashing scheduler ends "
        "the sweep (default: one at a time in a child process, replaced after a crash)",
    )
    parser.add_argument(
        "--trial-timeout",
        type=float,
        default=600.0,
        metavar="S",
        help="kill a trial's child process after S seconds, warm-ups included; 0: no limit "
        "(default: %(default)g)",
    )
    args = parser.parse_args(argv)
    isolation = "none" if args.in_process else "process"
    trial_timeout_s = args.trial_timeout if args.trial_timeout > 0 else None
    try:
        config = load_config(args.config)
        out = _overridden(config, args, ("frames", "repeats"))
        plots, executor_spec = config.pop("plots"), config.pop("executor")
        baseline = args.baseline or plots.get("baseline")
        names = scheduler_labels(config["schedulers"])
        if baseline is not None and baseline not in names:
            raise ConfigError(
                f"{args.config}: baseline {baseline!r} is not one of the schedulers {names}"
            )
        with ExitStack() as stack:
            executor = _executor(executor_spec, stack)
            result = sweep(
                **config,
                out=out,
                executor=executor,
                isolation=isolation,
                trial_timeout_s=trial_timeout_s,
                source=args.config,
                show=False,  # printed below, with the figures' paths
            )
    except (TomiiError, ValueError, TypeError, OSError) as error:
        # What the file or a path it names got wrong (a scheduler, graph or knob value).
        where = "" if str(args.config) in str(error) else f"{args.config}: "
        print(f"error: {where}{error}", file=sys.stderr)
        return 1
    baseline = _swept(result.rows, baseline)
    print(summary(result.rows, baseline=baseline, environment=result.environment))
    written = [out / "results.csv"]
    if not args.no_plots and result.rows:
        from .plot import plot

        try:
            written += plot(
                result.rows,
                result.frames,
                result.traces,
                out_dir=out,
                formats=tuple(plots.get("formats", ("png",))),
                percentile=plots.get("percentile", "p50"),
                baseline=baseline,
            )
        except (ValueError, OSError) as error:
            print(f"error: no figures: {error}; {written[0]} holds the trials", file=sys.stderr)
            return 1
    print(f"\n{len(result.rows)} trials; wrote {', '.join(str(p) for p in written)}")
    if result.interrupted:
        print("interrupted: the table holds the trials that finished", file=sys.stderr)
        return 130
    return 0
