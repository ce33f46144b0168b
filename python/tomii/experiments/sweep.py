"""Sweeps: every scheduler × graph × combination of knobs × repeat, run in a seeded random order,
each run's trace checked against the reference model, gathered into a tidy table (`table.py`).

Trials run one at a time in a child process (`tomii.isolation`), in this process, or on any
executor with `submit(fn, *args)` (`concurrent.futures`, Dask's `distributed.Client`) as calls of
`run_trial` with plain arguments. A trial that fails, breaks an invariant, crashes its process or
hangs becomes an invalid row; it never stops the sweep. Nothing here plots.
"""

from __future__ import annotations

import inspect
import itertools
import json
import math
import os
import platform
import random
import subprocess
import sys
import uuid
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from concurrent.futures import ProcessPoolExecutor
from concurrent.futures import as_completed as std_as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import closing, suppress
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Protocol, Union

import numpy as np
from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]

from .._ctrl_c import CtrlC
from ..errors import ConfigError, GraphError, HangError, PluginError, TomiiError
from ..graph import Graph
from ..graphs import Workload, critical_path_us, standard_set, total_work_us
from ..isolation import (
    ChildFailed,
    Isolated,
    ParentScriptError,
    refuse_while_importing_parent_script,
)
from ..plugins import find_plugin, find_scheduler
from ..run import TRACE_DTYPE, run_graph
from ..scheduler import Scheduler as PythonScheduler
from ..scheduler import importable_policy
from ..simulation import simulate
from .table import (
    COLUMNS,
    FRAME_COLUMNS,
    PID_COLUMN,
    CsvAppender,
    SweepResult,
    write_environment,
)

__all__ = [
    "ISOLATIONS",
    "MODES",
    "MeasuredCosts",
    "Scheduler",
    "SupportsSubmit",
    "measure_costs",
    "run_trial",
    "sweep",
]


@dataclass(frozen=True)
class Scheduler:
    """A scheduler to sweep: `spec` is a name ("fifo", found as `run_graph` finds it), a
    scheduler dylib's path, or a policy written in Python (a `tomii.Scheduler` subclass, or its
    import path `module:Class`; each trial makes its own instance); `options` its `sched_opts`;
    `label` what the rows call it (default: the name, a policy's `name` or class name, followed
    by the options when there are any)."""

    spec: str | Path | type[PythonScheduler]
    options: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""


SchedulerSpec = Union[
    str,
    Path,
    type[PythonScheduler],
    Scheduler,
    tuple[Union[str, Path, type[PythonScheduler]], Mapping[str, Any]],
]
GraphSpec = Union[Mapping[str, Any], Graph, str, Path, Workload]


class SupportsSubmit(Protocol):
    """An executor: `concurrent.futures.Executor`, `distributed.Client` or the like."""

    def submit(self, fn: Any, /, *args: Any) -> Any: ...


#: run_graph options a sweep sets itself, so never knobs.
_RESERVED = {
    "scheduler",
    "scheduler_plugin",
    "sched_opts",
    "dylibs",
    "python_kernels",
    "trace",
    "report",
    "collect_outputs",
}
#: The knobs every row has, with their values when `knobs` leaves them out (frames: `frames=`;
#: pop_batch 0: each scheduler's own choice, `tomii.run_graph`'s default).
_BASE_KNOBS = {"workers": 1, "slots": 1, "frames": None, "pop_batch": 0}
#: Violations quoted in a row's `problem` (the count says how many there were).
_QUOTED = 3


# ---------------------------------------------------------------------------------------------
# The inputs, read eagerly


@dataclass(frozen=True)
class _Scheduler:
    label: str
    path: str
    options: dict[str, str]


def _option_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


def _scheduler(spec: SchedulerSpec) -> _Scheduler:
    if isinstance(spec, tuple):
        if len(spec) != 2:
            raise TypeError(f"sweep: a scheduler tuple is (name_or_path, options), got {spec!r}")
        spec = Scheduler(spec[0], spec[1])
    elif not isinstance(spec, Scheduler):
        spec = Scheduler(spec)
    options = {str(key): _option_text(value) for key, value in spec.options.items()}
    policy = importable_policy(spec.spec, "sweep")
    if policy is not None:
        # Trials find the policy by its import path, in whichever process runs them.
        import_path, name = policy
        return _Scheduler(_label(spec, name, options), import_path, options)
    if not isinstance(spec.spec, (str, Path)):
        raise TypeError(f"sweep: a scheduler is a name or a path, got {spec.spec!r}")
    path = Path(spec.spec)
    if path.suffix == ".so" or path.is_file():
        if not path.is_file():
            raise PluginError(f"scheduler {str(path)!r}: no such file; pass an existing dylib")
        name = path.stem.removeprefix("lib").removeprefix("tomii_sched_").replace("_", "-")
    else:
        name, path = str(spec.spec), find_scheduler(str(spec.spec))
    return _Scheduler(_label(spec, name, options), str(path.resolve()), options)


def _label(spec: Scheduler, name: str, options: Mapping[str, str]) -> str:
    """What the rows call a scheduler: its label, else its name and options."""
    label = spec.label or name
    if options and not spec.label:
        label += "(" + ",".join(f"{key}={value}" for key, value in options.items()) + ")"
    return label


def scheduler_labels(specs: Sequence[SchedulerSpec]) -> list[str]:
    """What the rows of a sweep of `specs` call each scheduler."""
    return [_scheduler(spec).label for spec in specs]


@dataclass(frozen=True)
class _Graph:
    """One graph of the sweep; a workload's brings its own kernel libraries, cost model, run
    options and mechanism (tomii.graphs.Workload)."""

    name: str
    graph: dict[str, Any]
    dylibs: list[str] | None = None
    cost_model: dict[str, Any] | None = None
    run_options: dict[str, Any] = field(default_factory=dict)
    mechanism: str = ""


def _graph(spec: GraphSpec, position: int) -> _Graph:
    if isinstance(spec, Workload):
        return _Graph(
            spec.name,
            dict(spec.graph),
            [str(Path(d).resolve()) for d in spec.dylibs],
            None if spec.cost_model is None else dict(spec.cost_model),
            dict(spec.run_options),
            spec.mechanism,
        )
    if isinstance(spec, Graph):
        return _Graph(f"graph{position}", spec.to_dict())
    if isinstance(spec, Mapping):
        return _Graph(str(spec.get("name") or f"graph{position}"), dict(spec))
    if isinstance(spec, (str, Path)):
        try:
            graph = json.loads(Path(spec).read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError) as error:
            raise GraphError(f"{spec}: cannot read the graph: {error}") from None
        return _Graph(str(graph.get("name") or Path(spec).stem), graph)
    raise TypeError(
        f"sweep: a graph is a dict, a tomii.Graph, a JSON path or a tomii.graphs.Workload, "
        f"got {spec!r}"
    )


def _unique(kind: str, names: Sequence[str]) -> None:
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise ValueError(f"sweep: two {kind}s are called {repeated[0]!r}; give them labels")


#: What `sweep(mode=...)` takes: real runs, or simulations on virtual workers (`tomii.simulate`).
MODES = ("run", "simulate")


def _knob_names(mode: str = "run") -> list[str]:
    runner = simulate if mode == "simulate" else run_graph
    parameters = inspect.signature(runner).parameters.values()
    return [p.name for p in parameters if p.kind is p.KEYWORD_ONLY and p.name not in _RESERVED]


def _knob_values(name: str, values: Any) -> list[Any]:
    if isinstance(values, (str, bytes)) or not isinstance(values, (Sequence, range, set)):
        values = [values]
    listed: list[Any] = list(values)
    if not listed:
        raise ValueError(f"sweep: knob {name!r} has no values")
    if name in _BASE_KNOBS:
        for value in listed:
            least = 0 if name == "pop_batch" else 1  # pop_batch 0: each scheduler's choice
            if isinstance(value, bool) or not isinstance(value, int) or value < least:
                raise ValueError(f"sweep: knob {name!r} takes integers from {least}, got {value!r}")
    return listed


def _combinations(knobs: Mapping[str, Any], frames: int, mode: str) -> list[dict[str, Any]]:
    """Every combination of the knobs' values, each with every base knob."""
    valid = _knob_names(mode)
    for name in knobs:
        if name not in valid:
            raise ConfigError(f"sweep: unknown knob {name!r}; valid knobs: {', '.join(valid)}")
    grid = {name: _knob_values(name, values) for name, values in knobs.items()}
    base = {**_BASE_KNOBS, "frames": frames}
    return [{**base, **dict(zip(grid, chosen))} for chosen in itertools.product(*grid.values())]


def _timeout(value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError(f"sweep: trial_timeout_s must be positive or None, got {value!r}")


def _count(name: str, value: object, low: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ValueError(f"sweep: {name} must be an integer of at least {low}, got {value!r}")
    return value


# ---------------------------------------------------------------------------------------------
# The plan


@dataclass(frozen=True)
class _Trial:
    trial: int
    order: int
    scheduler: int
    graph: int
    combination: int
    repeat: int
    warmup: int


@dataclass
class _Plan:
    schedulers: list[_Scheduler]
    graphs: list[_Graph]
    combinations: list[dict[str, Any]]
    extra_knobs: list[str]
    dylibs: list[str]
    check: bool
    #: Per graph: (critical path, work) per frame in µs, NaN when unknown.
    bounds: list[tuple[float, float]]
    #: One of MODES.
    mode: str = "run"
    trials: list[_Trial] = field(default_factory=list)

    def arrange(self, repeats: int, warmup: int, seed: int) -> None:
        """Numbers every trial (scheduler, graph, combination, repeat), shuffles them with
        `seed`, and gives the first trial of each (scheduler, graph, combination) in the
        shuffled order the warm-ups."""
        ranges = (self.schedulers, self.graphs, self.combinations, range(repeats))
        keys = list(itertools.product(*(range(len(r)) for r in ranges)))
        numbers = list(range(len(keys)))
        random.Random(seed).shuffle(numbers)
        warmed: set[tuple[int, int, int]] = set()
        for order, number in enumerate(numbers):
            s, g, c, r = keys[number]
            first = (s, g, c) not in warmed
            warmed.add((s, g, c))
            self.trials.append(_Trial(number, order, s, g, c, r, warmup if first else 0))

    def trace_key(self, trial: _Trial) -> str:
        """The key of the trial's trace: "scheduler|graph|workers=W|slots=S", then "|name=value"
        for each other knob that takes several values (the form tomii.experiments.plot reads)."""
        knobs = self.combinations[trial.combination]
        varying = [
            name
            for name in knobs
            if name not in ("workers", "slots")
            and len({repr(c[name]) for c in self.combinations}) > 1
        ]
        parts = [self.schedulers[trial.scheduler].label, self.graphs[trial.graph].name]
        parts += [f"{name}={knobs[name]}" for name in ("workers", "slots", *varying)]
        return "|".join(parts)

    def label(self, trial: _Trial) -> str:
        return f"{self.schedulers[trial.scheduler].label} {self.graphs[trial.graph].name}"

    def arguments(self, trial: _Trial) -> tuple[Any, ...]:
        """`run_trial`'s arguments: plain, picklable data."""
        scheduler = self.schedulers[trial.scheduler]
        graph = self.graphs[trial.graph]
        knobs = {**graph.run_options, **self.combinations[trial.combination]}
        if self.mode == "simulate":
            if graph.cost_model is not None and "cost_model" not in knobs:
                knobs["cost_model"] = graph.cost_model
            # Each repeat draws its own durations: the repeats' spread is that of the costs.
            knobs["seed"] = int(knobs.get("seed", 0)) + trial.repeat
        return (
            trial.trial,
            graph.graph,
            scheduler.path,
            scheduler.options,
            self.dylibs if graph.dylibs is None else graph.dylibs,
            knobs,
            trial.warmup,
            self.check,
            trial.repeat == 0,
            self.mode,
        )

    def row(self, trial: _Trial, outcome: Mapping[str, Any]) -> dict[str, Any]:
        knobs = self.combinations[trial.combination]
        scheduler = self.schedulers[trial.scheduler]
        critical, work = self.bounds[trial.graph]
        row: dict[str, Any] = {
            "trial": trial.trial,
            "order": trial.order,
            "scheduler": scheduler.label,
            "scheduler_options": json.dumps(scheduler.options, sort_keys=True),
            "graph": self.graphs[trial.graph].name,
            **{name: knobs[name] for name in _BASE_KNOBS},
            "repeat": trial.repeat,
        }
        row.update(_measures(outcome, knobs["workers"], knobs["slots"], critical, work))
        row["valid"] = not outcome["problem"]
        row["problem"] = outcome["problem"]
        row["retried"] = int(outcome.get("retried", 0))
        row.update({name: knobs[name] for name in self.extra_knobs})
        row[PID_COLUMN] = outcome["worker_pid"]
        return row


def _graph_bounds(graph: Mapping[str, Any]) -> tuple[float, float]:
    try:
        return critical_path_us(graph), total_work_us(graph)
    except (ValueError, KeyError, TypeError):
        return math.nan, math.nan


def _bound(workers: int, slots: int, critical: float, work: float) -> float:
    """No schedule exceeds workers·1e6/work frames/s, nor slots·1e6/critical (NaN: no cost)."""
    if not (work > 0 and critical > 0):
        return math.nan
    return min(workers * 1e6 / work, slots * 1e6 / critical)


def _percentile(ordered: np.ndarray[Any, Any], p: float) -> float:
    """Nearest rank, as the runtime's report computes it."""
    n = len(ordered)
    return float(ordered[min(max(math.ceil(p * n), 1), n) - 1])


def _measures(
    outcome: Mapping[str, Any], workers: int, slots: int, critical: float, work: float
) -> dict[str, Any]:
    """The measured columns of a row, NaN where the run produced nothing."""
    report = outcome["report"] or {}
    latencies = np.sort(np.asarray(outcome["latencies_us"], dtype=float))
    latencies = latencies[~np.isnan(latencies)]
    busy = [float(w["busy_fraction"]) for w in report.get("per_worker", [])]
    throughput = float(report.get("throughput_frames_per_s", math.nan))
    bound = _bound(workers, slots, critical, work)
    have = len(latencies) > 0
    return {
        "wall_time_s": float(report.get("wall_time_s", math.nan)),
        "throughput_frames_per_s": throughput,
        "tasks_per_s": float(report.get("tasks_per_s", math.nan)),
        "latency_mean_us": float(latencies.mean()) if have else math.nan,
        "latency_p50_us": _percentile(latencies, 0.50) if have else math.nan,
        "latency_p95_us": _percentile(latencies, 0.95) if have else math.nan,
        "latency_p99_us": _percentile(latencies, 0.99) if have else math.nan,
        "critical_path_us": critical,
        "work_us": work,
        "bound_frames_per_s": bound,
        "efficiency": throughput / bound if bound > 0 else math.nan,
        "busy_mean": sum(busy) / len(busy) if busy else math.nan,
        "busy_per_worker": json.dumps(busy),
        "load_average_1m": float(outcome.get("load_average_1m", math.nan)),
        "steal_percent": float(outcome.get("steal_percent", math.nan)),
    }


# ---------------------------------------------------------------------------------------------
# One trial, wherever it runs


def run_trial(
    trial: int,
    graph: dict[str, Any],
    scheduler: str,
    sched_opts: dict[str, str],
    dylibs: list[str],
    knobs: dict[str, Any],
    warmup: int,
    check: bool,
    keep_trace: bool,
    mode: str = "run",
) -> dict[str, Any]:
    """One trial, in the process that calls it: `warmup` unrecorded runs, then the recorded run
    with a trace, checked when `check`; with `mode` "simulate", simulations (`tomii.simulate`)
    instead of runs. Returns plain data: `trial`, `worker_pid`, `report`
    (None when the run failed), `latencies_us` (per frame), `trace` and `node_names` (when
    `keep_trace`), `problem` (empty when the run succeeded and kept every invariant), `stuck`
    (a scheduler call or kernel never returned: its thread is left running in this process).

    `trial` also makes every call's arguments distinct: Dask takes a function of equal arguments
    for the same task and would run the repeats of a configuration once."""
    options = {"scheduler": scheduler, "sched_opts": sched_opts, **knobs}
    if mode == "simulate":
        runner = simulate
    else:
        runner, options["dylibs"], options["collect_outputs"] = run_graph, dylibs, False
    outcome: dict[str, Any] = {
        "trial": trial,
        "worker_pid": os.getpid(),
        "report": None,
        "latencies_us": [],
        "trace": None,
        "node_names": [],
        "problem": "",
        "stuck": False,
    }
    try:
        for _ in range(warmup):
            # A failed warm-up is left unrecorded: the recorded run fails the same way and says
            # why. A stuck one ends the trial: its thread spins on.
            try:
                runner(graph, **options)
            except (HangError, ParentScriptError):
                raise
            except Exception:  # noqa: BLE001, S110
                pass
        machine = _MachineLoad()
        result = runner(graph, trace=True, **options)
        outcome.update(machine.since())
    except ParentScriptError:
        raise  # the caller's script is at fault, not the trial: the sweep stops and says so
    except Exception as error:  # noqa: BLE001 (any failure is the row's problem, not the sweep's)
        outcome["problem"] = f"{type(error).__name__}: {error}"
        outcome["stuck"] = isinstance(error, HangError)
        return outcome
    trace = result.trace if result.trace is not None else np.zeros(0, TRACE_DTYPE)
    outcome["report"] = dict(result.report)
    outcome["latencies_us"] = frame_latencies_us(trace, knobs["frames"])
    if check:
        outcome["problem"] = _summary(
            trace_problems(
                graph,
                trace,
                result.node_names,
                result.report,
                frames=knobs["frames"],
                slots=knobs["slots"],
                workers=knobs["workers"],
            )
        )
    if keep_trace:
        outcome["trace"], outcome["node_names"] = trace, list(result.node_names)
    return outcome


class _MachineLoad:
    """How busy the machine was around a trial's recorded run: the 1-minute load average when it
    started, and the share of CPU time the hypervisor stole from this machine while it ran
    (/proc/stat's steal column, over every CPU; NaN where unknown)."""

    def __init__(self) -> None:
        try:
            self.load = round(os.getloadavg()[0], 2)
        except (AttributeError, OSError):
            self.load = math.nan
        self.ticks = _cpu_ticks()

    def since(self) -> dict[str, float]:
        ticks, steal = _cpu_ticks(), math.nan
        if ticks is not None and self.ticks is not None:
            total = sum(ticks) - sum(self.ticks)
            if total > 0 and len(ticks) > 7:
                steal = round(100.0 * (ticks[7] - self.ticks[7]) / total, 2)
        return {"load_average_1m": self.load, "steal_percent": steal}


def _cpu_ticks() -> list[int] | None:
    """/proc/stat's first line (every CPU): user, nice, system, idle, iowait, irq, softirq,
    steal, ... in clock ticks; None where there is no /proc/stat."""
    try:
        with open("/proc/stat", encoding="ascii") as stat:
            fields = stat.readline().split()
    except OSError:
        return None
    if not fields or fields[0] != "cpu":
        return None
    # guest and guest_nice are already counted in user and nice.
    return [int(value) for value in fields[1:9]]


def frame_latencies_us(trace: np.ndarray[Any, Any], frames: int) -> np.ndarray[Any, Any]:
    """Per frame, its latency in µs: its last task's end minus its start, the earliest time one
    of its tasks was ready (its roots, pushed when it entered a slot). NaN for a frame with no
    task in the trace."""
    count = max(frames, int(trace["frame"].max()) + 1 if len(trace) else 0)
    start = np.full(count, np.iinfo(np.int64).max, dtype=np.int64)
    end = np.full(count, -1, dtype=np.int64)
    frame = trace["frame"].astype(np.int64)
    np.minimum.at(start, frame, trace["ready_ns"].astype(np.int64))
    np.maximum.at(end, frame, trace["end_ns"].astype(np.int64))
    latencies = (end - start).astype(float) / 1e3
    latencies[end < 0] = math.nan
    return latencies


def trace_problems(
    graph: Mapping[str, Any],
    trace: np.ndarray[Any, Any],
    node_names: Sequence[str],
    report: Mapping[str, Any],
    *,
    frames: int,
    slots: int,
    workers: int,
) -> list[str]:
    """The invariants (tomii.check.invariants.check_trace) a run's trace broke, as text."""
    from ..check import invariants, reference

    try:
        model = reference.ReferenceModel(graph)
    except reference.ModelError as error:
        return [f"not checked: the reference model cannot read the graph: {error}"]
    violations = invariants.check_trace(
        invariants.rows_of(trace, node_names),
        tasks=model.tasks,
        depends_on=model.deps,
        frames=frames,
        slots=slots,
        workers=workers,
        ranges=model.worker_ranges(),
        report=report,
    )
    return [str(violation) for violation in violations]


def _summary(problems: Sequence[str]) -> str:
    if not problems:
        return ""
    quoted = "; ".join(problems[:_QUOTED])
    more = f"; and {len(problems) - _QUOTED} more" if len(problems) > _QUOTED else ""
    return f"{len(problems)} invariant violation(s): {quoted}{more}"


# ---------------------------------------------------------------------------------------------
# Running the plan


#: Each trial as it finishes, with what `run_trial` returned.
_Outcomes = Generator[tuple[_Trial, dict[str, Any]], None, None]


#: What `sweep(isolation=...)` takes.
ISOLATIONS = ("process", "none")


class _OneByOne:
    """Runs trials one at a time: in a child process ("process": a crash, a hang past
    `timeout_s`, costs that trial's row, and a fresh child runs the next), or here ("none")."""

    def __init__(self, plan: _Plan, isolation: str, timeout_s: float | None) -> None:
        self.plan = plan
        self.timeout_s = timeout_s
        self.child = Isolated() if isolation == "process" else None

    def start(self) -> None:
        if self.child is not None:
            self.child.start()

    def run(self, trial: _Trial) -> dict[str, Any]:
        arguments = self.plan.arguments(trial)
        if self.child is None:
            return run_trial(*arguments)
        try:
            outcome = self.child.call(run_trial, *arguments, timeout_s=self.timeout_s)
        except ChildFailed as error:
            scheduler = self.plan.schedulers[trial.scheduler].label
            problem = f"{type(error).__name__}: scheduler {scheduler}: {error}"
            return _lost(trial, problem, error.pid)
        if outcome["stuck"]:
            self.child.close()  # a thread spins in it: the next trial gets a fresh child
        return outcome

    def close(self) -> None:
        if self.child is not None:
            self.child.close()


def _serially(plan: _Plan, trials: _OneByOne, bar: Any) -> _Outcomes:
    for trial in plan.trials:
        bar.set_postfix_str(plan.label(trial), refresh=False)
        yield trial, trials.run(trial)


def _as_completed(futures: list[Any]) -> Iterator[Any]:
    """Futures as they complete: Dask's own `as_completed` for Dask futures (imported only
    then), `concurrent.futures.as_completed` for any other."""
    if futures and type(futures[0]).__module__.partition(".")[0] == "distributed":
        from distributed import as_completed

        return iter(as_completed(futures))  # type: ignore[no-untyped-call,unused-ignore]
    return std_as_completed(futures)


#: On a Dask cluster, a trial that fails with KilledWorker is submitted again while it has begun
#: fewer than this many times (Dask's own limit by default: 3 deaths allowed, by
#: `distributed.scheduler.allowed-failures`, and the fourth fails the task): one that every
#: worker running it dies of is likely what kills them, and is not run again.
_RUNS = 4


def _dask_trial(topic: str, submission: int, *arguments: Any) -> dict[str, Any]:
    """`run_trial(*arguments)` on a Dask worker, once the scheduler has recorded under `topic`
    that it starts there (`_Starts`). `submission` (how many times the sweep submitted the trial
    before) makes a trial submitted again after KilledWorker a new task for Dask."""
    from distributed import get_client, get_worker

    started = {"trial": arguments[0], "worker": get_worker().address, "pid": os.getpid()}
    get_client().log_event(topic, started)  # returns once the scheduler has it
    return run_trial(*arguments)


class _Starts:
    """Counts where each trial of a sweep on a Dask cluster starts, for its row's `retried`.

    When a worker dies, Dask runs the tasks it held again on the other workers without telling
    the client, until a task has lost `allowed-failures` + 1 workers and fails with KilledWorker;
    the result of a task run again looks like any other (its `worker_pid` is the last run's),
    and the scheduler's own records (its `remove-worker` event, a task's `suspicious` count)
    name every task assigned to the dead worker, those queued there that never began included.
    So each run says it starts: `_dask_trial` logs (trial, worker, pid) to this sweep's topic
    and waits for the scheduler's acknowledgement before it begins the trial: a run that began
    is always counted (one whose worker dies between the scheduler's receipt and the reply is
    counted without having begun; the window is a message's flight). The scheduler sends the
    event to this client, subscribed before the first submission, on the stream that later
    brings the trial's completion, and the client handles that stream in order: when a future
    completes, all of its trial's starts have been counted, and `retried` = starts − 1.

    A trial that fails with KilledWorker is submitted again, as a new task, while it has started
    fewer than _RUNS times (the cluster may allow fewer deaths than Dask's default, or have
    lost it from workers' queues before it began); past that, or after _RUNS submissions, its
    row is invalid and its problem names the workers it was lost with."""

    def __init__(self, client: Any) -> None:
        self.client = client
        # The scheduler keeps a topic's events (one per trial's start) until it stops.
        self.topic = f"tomii-sweep-{uuid.uuid4().hex}"
        #: Per trial, the address of each worker it started on, in order.
        self.workers: dict[int, list[str]] = {}
        #: Per trial, how many times it was submitted again after KilledWorker.
        self.submissions: dict[int, int] = {}
        client.subscribe_topic(self.topic, self._started)

    def _started(self, event: tuple[float, Mapping[str, Any]]) -> None:
        # On the client's event-loop thread: a list's append is atomic.
        message = event[1]
        self.workers.setdefault(int(message["trial"]), []).append(str(message["worker"]))

    def submit(self, plan: _Plan, trial: _Trial) -> Any:
        submission = self.submissions.get(trial.trial, 0)
        return self.client.submit(_dask_trial, self.topic, submission, *plan.arguments(trial))

    def retried(self, trial: _Trial) -> int:
        return max(0, len(self.workers.get(trial.trial, ())) - 1)

    @staticmethod
    def killed(error: BaseException) -> bool:
        """Whether `error` is Dask's KilledWorker: the workers running the trial died."""
        from distributed.scheduler import KilledWorker

        return isinstance(error, KilledWorker)

    def again(self, trial: _Trial) -> bool:
        """Whether a trial that failed with KilledWorker is to be submitted again (counted)."""
        submissions = self.submissions.get(trial.trial, 0)
        if len(self.workers.get(trial.trial, ())) >= _RUNS or submissions >= _RUNS:
            return False
        self.submissions[trial.trial] = submissions + 1
        return True

    def given_up(self, trial: _Trial, error: Any) -> dict[str, Any]:
        """The outcome, invalid, of a trial that failed with KilledWorker and runs no more."""
        started = self.workers.get(trial.trial, [])
        last = str(getattr(error.last_worker, "address", error.last_worker))
        problem = (
            f"KilledWorker: every worker it was given died (it started on {len(started)}: "
            f"{', '.join(started) or 'none'}; the last lost: {last}); not run again: it may be "
            f"what kills them"
        )
        return _lost(trial, problem, -1)

    def close(self) -> None:
        with suppress(Exception):  # a closed client has no subscription left to end
            self.client.unsubscribe_topic(self.topic)


def _on_executor(plan: _Plan, executor: SupportsSubmit, trials: _OneByOne, bar: Any) -> _Outcomes:
    """The trials on `executor`. When it is a process pool that breaks (a trial killed one of its
    processes, and the pool fails every trial it had), the pool is replaced by a new one like
    it, and the lost trials run again: first those the pool may have started, one by one
    (`trials`: the culprit gets the invalid row, with the reason), then the rest on the new pool
    (whether the broken pool had begun them is unknown: their rows say `retried` 0). On a Dask
    cluster (`distributed.Client`), Dask itself runs the trials of a worker that dies on the
    others, and `_Starts` counts each trial's runs into its row's `retried`; a trial that fails
    with KilledWorker is submitted again, up to _RUNS."""
    pending, replacement = list(plan.trials), None
    # A Dask client (duck-typed: its subclasses and wrappers too).
    starts = _Starts(executor) if hasattr(executor, "subscribe_topic") else None
    try:
        while pending:
            lost = yield from _submitted(plan, executor, pending, bar, starts)
            if not lost:
                return
            if starts is not None:
                pending = lost  # killed with their workers: the cluster's others run them
                continue
            workers = getattr(executor, "_max_workers", 1)
            if replacement is not None:
                replacement.shutdown(wait=True)
            executor = replacement = ProcessPoolExecutor(
                max_workers=workers, mp_context=getattr(executor, "_mp_context", None)
            )
            # The pool runs its trials in order, at most workers + 1 of them handed out at once.
            suspects, pending = lost[: workers + 1], lost[workers + 1 :]
            for trial in suspects:
                bar.set_postfix_str(plan.label(trial), refresh=False)
                yield trial, trials.run(trial)
    finally:
        if starts is not None:
            starts.close()
        if replacement is not None:
            replacement.shutdown(wait=True, cancel_futures=True)


def _submitted(
    plan: _Plan, executor: SupportsSubmit, trials: list[_Trial], bar: Any, starts: _Starts | None
) -> Generator[tuple[_Trial, dict[str, Any]], None, list[_Trial]]:
    """Submits `trials` (on a Dask cluster through `starts`) and yields each as it completes;
    returns those to run again, in the order they were submitted: those a broken process pool
    lost, or on a Dask cluster those that failed with KilledWorker and may run again."""
    futures: dict[Any, _Trial] = {}
    lost: list[_Trial] = []
    try:
        for trial in trials:
            if starts is None:
                futures[executor.submit(run_trial, *plan.arguments(trial))] = trial
            else:
                futures[starts.submit(plan, trial)] = trial
    except BrokenProcessPool:
        lost = trials[len(futures) :]
    submitted = {trial.trial: position for position, trial in enumerate(trials)}
    try:
        for future in _as_completed(list(futures)):
            # Once read, a result is let go: Dask would otherwise keep it on its worker, and run
            # its trial again when that worker dies.
            trial = futures.pop(future)
            try:
                outcome = future.result()
            except BrokenProcessPool:
                lost.append(trial)
                continue
            except Exception as error:  # noqa: BLE001 (the executor lost the trial: a row says so)
                if starts is not None and starts.killed(error):
                    if starts.again(trial):
                        lost.append(trial)
                        continue
                    outcome = starts.given_up(trial, error)
                else:
                    outcome = _lost(trial, f"executor: {type(error).__name__}: {error}", -1)
            finally:
                if starts is not None:
                    future.release()
            if starts is not None:
                outcome["retried"] = starts.retried(trial)
            bar.set_postfix_str(plan.label(trial), refresh=False)
            yield trial, outcome
    finally:
        for future in futures:
            if not future.done():
                future.cancel()
    return sorted(lost, key=lambda trial: submitted[trial.trial])


def _lost(trial: _Trial, problem: str, pid: int | None) -> dict[str, Any]:
    """The outcome of a trial that never returned (its process died, say)."""
    return {
        "trial": trial.trial,
        "worker_pid": -1 if pid is None else pid,
        "report": None,
        "latencies_us": [],
        "trace": None,
        "node_names": [],
        "problem": problem,
    }


class _Files:
    """The files of `out` while the sweep runs: environment.json first, then every finished
    trial's row and frames appended as it finishes."""

    def __init__(self, directory: Path, columns: Sequence[str], environment: Mapping[str, Any]):
        directory.mkdir(parents=True, exist_ok=True)
        write_environment(directory, environment, interrupted=None)
        self.rows = CsvAppender(directory / "results.csv", columns)
        self.frames = CsvAppender(directory / "frames.csv", list(FRAME_COLUMNS))

    def append(self, row: Mapping[str, Any], frames: Sequence[Mapping[str, Any]]) -> None:
        self.rows.append([row])
        self.frames.append(frames)

    def close(self) -> None:
        self.rows.close()
        self.frames.close()


def sweep(
    schedulers: Sequence[SchedulerSpec],
    graphs: Sequence[GraphSpec] | None = None,
    knobs: Mapping[str, Any] | None = None,
    *,
    repeats: int = 3,
    warmup: int = 1,
    frames: int = 200,
    seed: int = 0,
    executor: SupportsSubmit | None = None,
    check: bool = True,
    progress: bool = True,
    out: str | Path | None = None,
    dylibs: Sequence[str | Path] | None = None,
    on_trial: Callable[[dict[str, Any]], None] | None = None,
    isolation: str = "process",
    trial_timeout_s: float | None = 600.0,
    mode: str = "run",
    source: str | Path | None = None,
    show: bool | None = None,
) -> SweepResult:
    """Runs every scheduler on every graph for every combination of `knobs`, `repeats` times.

    `schedulers`: names, dylib paths, `(name_or_path, options)` or `Scheduler`s. `graphs`:
    graph dicts, `tomii.Graph`s or JSON paths (default: `tomii.graphs.standard_set("small")`).
    `knobs`: run option → list of values (`{"workers": [1, 2], "slots": [1, 4]}`); each knob
    other than workers, slots, frames and pop_batch adds a column. `dylibs`: kernel plugins
    (default: the synthetic kernels).

    Order: the trials are shuffled with `seed`, so that drift on the machine (heat, other load)
    spreads over every scheduler instead of favouring one. Warm-up: the first trial of each
    (scheduler, graph, knobs) in that order runs `warmup` unrecorded runs just before its own,
    in the same call and so the same process: the costs of a first run (the scheduler's dylib
    loaded and paged in, the graph compiled, memory for these workers and slots first touched,
    caches and predictors trained on this scheduler) belong to a configuration, and a single
    global warm-up would leave them to whichever configuration the shuffle put first.

    Each trial runs `run_graph(..., trace=True)`; with `check`, its trace is checked
    (tomii.check.invariants.check_trace: exactly once, every frame, dependencies, slots, worker
    ranges, against the reference model). A failed run or a broken invariant makes the row
    invalid, with the reason in `problem`; the sweep goes on. Frame latency is computed from
    the trace: a frame's last task end minus the earliest ready time of its tasks.

    `executor`: anything with `submit(fn, *args)` returning a future (a concurrent.futures
    executor, a Dask `distributed.Client`); trials, warm-ups included, are submitted in the
    shuffled order and gathered as they complete. For fair timing let it run one trial per
    core at a time (Dask: `LocalCluster(n_workers=k, threads_per_worker=1)`), and no more
    than the cores the trials' workers leave free. A later repeat may land on a process that
    has not run its configuration yet: the warm-up only warms the process that ran it. A Dask
    worker that dies (killed, its machine down) loses no trial: Dask runs the trials it held on
    the other workers, and the row of one that had begun there says so (`retried`: how many of
    its runs were lost); a trial that fails with KilledWorker is submitted again until it has
    begun on 4 workers, then its row is invalid, naming the workers lost.

    `isolation`: where the sweep runs the trials it runs itself (all of them without `executor`):
    "process" (the default) runs them one at a time in a child process, so that a scheduler
    that crashes (a segfault, an abort, `exit()`) or hangs costs only its trial: the row is
    invalid, its `problem` names the scheduler and the signal, exit status or time limit, and a
    fresh child runs the next trial. "none" runs them in this process: no process start (a
    fraction of a second per sweep and per crash), no pickling of traces, but a crash ends the
    sweep and a hang blocks it. `trial_timeout_s`: how long a trial, its warm-ups included, may
    take in its child before it is killed (None: no limit); the runtime's own watchdogs
    (`stall_timeout_ms`, `scheduler_call_timeout_ms`) catch most hangs well before, so this is
    the last resort: raise it for trials that legitimately run longer (many frames of costly
    kernels). A process pool given as `executor` that breaks (`BrokenProcessPool`: one of its
    processes died) is replaced by a new one with the same `max_workers` and `mp_context`; the
    trials it lost run again, those it may have started one by one as `isolation` says (the
    culprit's row is invalid, the others' are kept), the rest on the new pool.

    `out`: a directory that receives results.csv and frames.csv row by row as trials finish
    (a killed sweep loses nothing that finished), then everything `SweepResult.save` writes.
    Ctrl-C (KeyboardInterrupt) stops the sweep: the finished rows are kept and returned with
    `interrupted=True`. `on_trial(row)` is called with each row once it is recorded.
    `progress` shows a tqdm bar on stderr (only on a terminal).

    `mode="simulate"` simulates every trial instead (`tomii.simulate`: the same scheduler dylibs
    on virtual workers, task durations from the graph's `spin` arguments or a `cost_model` knob),
    so `knobs={"workers": [2, 8, 64, 256]}` sweeps machines this one does not have; the knobs are
    then `tomii.simulate`'s (`cost_model`, `seed`, `arrival_interval_us`, ...), the rows and
    figures the same, and the wall times virtual.

    `source`: the file the sweep comes from (`tomii sweep` passes its TOML file), recorded in the
    environment; when the tomii package is an installed copy, whose checkout is unknown, the git
    commit recorded is that of the checkout holding `source` (`git_from` says which).

    `show`: print, once the sweep ends, the table `tomii sweep` prints (medians, ratios to fifo
    or the first scheduler, a verdict per graph; `tomii.experiments.config.summary`). None (the
    default): when someone watches, that is when `progress` is on and sys.stdout is a terminal
    or the sweep runs in IPython or Jupyter; not when the output goes to a file or a pipe.
    """
    refuse_while_importing_parent_script("sweep")
    if mode not in MODES:
        raise ValueError(f"sweep: mode must be one of {', '.join(MODES)}, got {mode!r}")
    if isolation not in ISOLATIONS:
        raise ValueError(
            f"sweep: isolation must be one of {', '.join(ISOLATIONS)}, got {isolation!r}"
        )
    _timeout(trial_timeout_s)
    plan = _plan(schedulers, graphs, knobs, frames=frames, dylibs=dylibs, check=check, mode=mode)
    plan.arrange(_count("repeats", repeats, 1), _count("warmup", warmup, 0), seed)
    columns = [*COLUMNS, *plan.extra_knobs, PID_COLUMN]
    measured = _measure_workloads(plan, isolation, trial_timeout_s, out)
    parameters = _parameters(plan, repeats, warmup, frames, seed, executor)
    parameters["measured_costs"] = measured
    parameters.update(isolation=isolation, trial_timeout_s=trial_timeout_s, mode=mode)
    result = SweepResult([], [], {}, environment(parameters, source=source), columns)
    with closing(_OneByOne(plan, isolation, trial_timeout_s)) as trials:
        try:
            if executor is None:
                trials.start()  # a child that cannot start fails the sweep now, before any file
        except KeyboardInterrupt:
            result.interrupted = True
            return result
        files = None if out is None else _Files(Path(out), columns, result.environment)
        try:
            _collect(plan, result, executor, trials, files, progress, on_trial)
        finally:
            if files is not None:
                files.close()
    result.environment["load_average_end"] = _load_average()
    if out is not None:
        result.save(out)
    if show is None:
        ipython = sys.modules.get("IPython")
        in_ipython = ipython is not None and ipython.get_ipython() is not None
        show = progress and (sys.stdout.isatty() or in_ipython)
    if show:
        from .config import summary  # config runs sweeps: imported here, not at the top

        print(summary(result.rows, environment=result.environment))
    return result


#: How a simulating sweep measures a workload's costs: frames of a traced run on one worker.
MEASURE_FRAMES = 40
MEASURE_WARMUP = 2
#: A duration beyond its node's third quartile plus this many interquartile ranges (Tukey's
#: "far out"), and beyond FAR_OUT_MEDIANS times its median, is taken for interference (a
#: preemption, a page fault), not the kernel's cost. The second bound keeps the slow variants of
#: a kernel of a few µs (a tile not in cache) whose tight quartiles alone would cut them.
FAR_OUT_IQRS = 3.0
FAR_OUT_MEDIANS = 2.0


@dataclass(frozen=True)
class MeasuredCosts:
    """A workload's cost model as measured on this machine: `model` (`tomii.simulate`'s
    cost_model, JSON form: every node's durations as samples), how many task durations the run
    measured (`tasks`) and how many of them were left out of the model as far out (`far_out`)."""

    model: dict[str, Any]
    tasks: int
    far_out: int


def measure_costs(
    workload: Workload, *, frames: int = MEASURE_FRAMES, warmup_frames: int = MEASURE_WARMUP
) -> MeasuredCosts:
    """The cost model of `workload` on this machine: the duration of every task of `frames`
    frames of a traced run on one worker with fifo, after `warmup_frames` left out, as samples
    per node, without the far-out ones (beyond both the node's Q3 + FAR_OUT_IQRS × IQR and
    FAR_OUT_MEDIANS × its median: another process ran, a page faulted). Raises what run_graph
    raises."""
    options = {**workload.run_options, "workers": 1, "slots": 1}
    options.update(frames=frames + warmup_frames, warmup_frames=warmup_frames)
    result = run_graph(
        dict(workload.graph), dylibs=list(workload.dylibs), trace=True, collect_outputs=False,
        **options,
    )  # fmt: skip
    trace = result.trace if result.trace is not None else np.zeros(0, TRACE_DTYPE)
    kept = trace[trace["frame"] >= warmup_frames]
    durations: dict[str, list[int]] = {}
    for node, start, end in zip(kept["node"], kept["start_ns"], kept["end_ns"]):
        durations.setdefault(result.node_names[node], []).append(max(0, int(end) - int(start)))
    samples = {name: _without_far_out(ns) for name, ns in durations.items()}
    far_out = sum(len(durations[name]) - len(ns) for name, ns in samples.items())
    model = {"nodes": {name: {"samples": {"ns": ns}} for name, ns in samples.items()}}
    return MeasuredCosts(model, len(kept), far_out)


def _without_far_out(durations: list[int]) -> list[int]:
    """`durations` without those beyond both Q3 + FAR_OUT_IQRS × IQR and FAR_OUT_MEDIANS × the
    median (all of them when fewer than 4)."""
    if len(durations) < 4:
        return durations
    q1, median, q3 = np.percentile(durations, [25, 50, 75])
    fence = max(q3 + FAR_OUT_IQRS * (q3 - q1), FAR_OUT_MEDIANS * median)
    return [ns for ns in durations if ns <= fence]


def _measure_workloads(
    plan: _Plan, isolation: str, timeout_s: float | None, out: str | Path | None
) -> dict[str, Any]:
    """In a simulating sweep, measures the cost model of every workload that has none (in a child
    process unless `isolation` is "none"), and writes each to OUT/costs/NAME.json; returns what
    the environment records of them. Raises TomiiError naming the workload when a measurement
    fails: its simulations would have no costs."""
    if plan.mode != "simulate":
        return {}
    measured: dict[str, Any] = {}
    for position, graph in enumerate(plan.graphs):
        if graph.dylibs is None or graph.cost_model is not None:
            continue
        workload = Workload(graph.graph, tuple(graph.dylibs), None, "", graph.run_options)
        print(
            f"sweep: measuring the costs of {graph.name}: {MEASURE_FRAMES} traced frames on 1 worker",
            file=sys.stderr,
        )
        try:
            if isolation == "process":
                with Isolated() as child:
                    costs = child.call(measure_costs, workload, timeout_s=timeout_s)
            else:
                costs = measure_costs(workload)
        except Exception as error:  # noqa: BLE001 (the sweep cannot go on without costs)
            raise TomiiError(
                f"sweep: measuring the costs of workload {graph.name!r} failed: "
                f"{type(error).__name__}: {error}"
            ) from None
        plan.graphs[position] = replace(graph, cost_model=costs.model)
        print(
            f"sweep: {graph.name}: {costs.tasks} task durations, {costs.far_out} far out left out",
            file=sys.stderr,
        )
        record: dict[str, Any] = {
            "frames": MEASURE_FRAMES,
            "workers": 1,
            "tasks": costs.tasks,
            "far_out": costs.far_out,
        }
        if out is not None:
            path = Path(out) / "costs" / f"{graph.name}.json"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(costs.model) + "\n", encoding="utf-8")
            record["file"] = str(path)
        measured[graph.name] = record
    return measured


def _plan(
    schedulers: Sequence[SchedulerSpec],
    graphs: Sequence[GraphSpec] | None,
    knobs: Mapping[str, Any] | None,
    *,
    frames: int,
    dylibs: Sequence[str | Path] | None,
    check: bool,
    mode: str = "run",
) -> _Plan:
    if isinstance(schedulers, (str, Path, type, Scheduler, tuple)) or not schedulers:
        raise ValueError("sweep: schedulers must be a non-empty list")
    chosen = [_scheduler(spec) for spec in schedulers]
    read = [
        _graph(spec, i)
        for i, spec in enumerate(standard_set("small") if graphs is None else graphs)
    ]
    if not read:
        raise ValueError("sweep: graphs must not be empty")
    _unique("scheduler", [s.label for s in chosen])
    _unique("graph", [each.name for each in read])
    libraries = [find_plugin("synthetic")] if dylibs is None else list(dylibs)
    combinations = _combinations(knobs or {}, _count("frames", frames, 1), mode)
    extra = [name for name in (knobs or {}) if name not in _BASE_KNOBS]
    bounds = [_graph_bounds(each.graph) for each in read]
    paths = [str(Path(d).resolve()) for d in libraries]
    return _Plan(chosen, read, combinations, extra, paths, check, bounds, mode)


def _collect(
    plan: _Plan,
    result: SweepResult,
    executor: SupportsSubmit | None,
    trials: _OneByOne,
    files: _Files | None,
    progress: bool,
    on_trial: Callable[[dict[str, Any]], None] | None,
) -> None:
    """Runs the plan into `result`, until done or interrupted."""
    bar = tqdm(
        total=len(plan.trials), desc="sweep", unit="trial", file=sys.stderr,
        disable=None if progress else True, dynamic_ncols=True,
    )  # fmt: skip
    if executor is None:
        outcomes = _serially(plan, trials, bar)
    else:
        outcomes = _on_executor(plan, executor, trials, bar)
    try:
        with closing(outcomes), CtrlC() as ctrl_c:
            for trial, outcome in outcomes:
                row = plan.row(trial, outcome)
                frames = [
                    {"trial": trial.trial, "frame": frame, "latency_us": float(latency)}
                    for frame, latency in enumerate(outcome["latencies_us"])
                ]
                if outcome["trace"] is not None:
                    kept = (outcome["trace"], list(outcome["node_names"]))
                    result.traces[plan.trace_key(trial)] = kept
                result.rows.append(row)
                result.frames += frames
                if files is not None:
                    files.append(row, frames)
                bar.update(1)
                if on_trial is not None:
                    on_trial(row)
                ctrl_c.stop_if_pressed()  # a Ctrl-C whose KeyboardInterrupt a finalizer swallowed
    except KeyboardInterrupt:
        result.interrupted = True
    finally:
        bar.close()


# ---------------------------------------------------------------------------------------------
# The environment


def _parameters(
    plan: _Plan, repeats: int, warmup: int, frames: int, seed: int, executor: Any
) -> dict[str, Any]:
    return {
        "schedulers": [
            {"label": s.label, "path": s.path, "options": s.options} for s in plan.schedulers
        ],
        "graphs": [each.name for each in plan.graphs],
        "mechanisms": {each.name: each.mechanism for each in plan.graphs if each.mechanism},
        "knobs": [dict(c) for c in plan.combinations],
        "repeats": repeats,
        "warmup": warmup,
        "frames": frames,
        "seed": seed,
        "check": plan.check,
        "dylibs": plan.dylibs,
        "executor": None if executor is None else type(executor).__qualname__,
        "trials": len(plan.trials),
    }


def environment(
    parameters: Mapping[str, Any], *, source: str | Path | None = None
) -> dict[str, Any]:
    """Where and with what a sweep ran: versions, machine and its load (`load_average` when the
    sweep starts; `sweep` adds `load_average_end`), git commit, date, its parameters.

    `git_commit` and `git_dirty` are those of the checkout the tomii package runs from, else
    (an installed copy) of the checkout holding `source`; `git_from` says which ("package",
    "source" or None when neither is in a git checkout)."""
    commit, dirty = _git(Path(__file__).resolve().parent)
    origin = "package" if commit else None
    if commit is None and source is not None:
        commit, dirty = _git(Path(source).resolve().parent, installed_ok=True)
        origin = "source" if commit else None
    return {
        "tomii_version": _tomii_version(),
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "numpy_version": np.__version__,
        "platform": platform.platform(),
        "machine": platform.machine(),
        "hostname": platform.node(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "load_average": _load_average(),
        "git_commit": commit,
        "git_dirty": dirty,
        "git_from": origin,
        "source": None if source is None else str(Path(source).resolve()),
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "parameters": dict(parameters),
    }


def _tomii_version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("tomii")
    except PackageNotFoundError:
        return "unknown"


def _load_average() -> list[float] | None:
    """The 1-, 5- and 15-minute load averages when the sweep started (None where unknown): how
    busy the machine already was."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except (AttributeError, OSError):
        return None


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                key, _, value = line.partition(":")
                if key.strip() in ("model name", "Processor", "cpu model"):
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _git(where: Path, *, installed_ok: bool = False) -> tuple[str | None, bool | None]:
    """The commit of the git checkout `where` is in, and whether tracked files differ from it;
    (None, None) outside a checkout, without git, or (unless `installed_ok`) in site-packages."""
    if "site-packages" in where.parts and not installed_ok:
        return None, None  # an installed copy: a checkout around it is not its source
    try:
        commit = _git_output(where, "rev-parse", "HEAD")
        dirty = bool(_git_output(where, "status", "--porcelain", "--untracked-files=no"))
    except (OSError, subprocess.SubprocessError):
        return None, None
    return commit, dirty


def _git_output(where: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-C", str(where), *args], capture_output=True, text=True, timeout=10, check=True
    )
    return done.stdout.strip()
