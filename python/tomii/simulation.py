"""`tomii.simulate`: a graph on N virtual workers, driving the same scheduler dylib through the same
vtable as a real run, with task durations from a cost model instead of kernels (tomii-core's
`src/sim/README.md`). The result is a `RunResult` like `run_graph`'s (its report's `source` is
"simulated" and its `simulation` section says how), so sweeps, invariants, plots and the trace
view take it unchanged. Deterministic for a seed.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Union

from ._options import check_run_options, runtime_options
from ._tomii import simulate_json, trace_csv_columns
from .errors import ConfigError, TomiiError
from .graphs import Fixed, LogNormal, Uniform
from .scheduler import PolicyLike

if TYPE_CHECKING:
    from .run import GraphSource, RunResult

__all__ = ["CostModel", "cost_model_json", "simulate"]

#: A cost model as `simulate` takes it: a file (the JSON format, or a trace CSV of a real run), the
#: JSON format as a dict, per-node `tomii.graphs` distributions in µs (the key "default" for the
#: nodes not named), or a RunResult whose trace gives each node's durations as samples.
CostModel = Union[str, Path, Mapping[str, Any], "RunResult", None]

#: The trace CSV's header (`trace=FILE`, `tomii run --trace`).
_TRACE_HEADER = ",".join(trace_csv_columns())


def simulate(
    graph: GraphSource,
    *,
    dylibs: Sequence[str | Path] = (),
    workers: int = 1,
    slots: int = 1,
    frames: int = 100,
    warmup_frames: int = 0,
    pop_batch: int = 0,
    scheduler: PolicyLike = "fifo",
    scheduler_plugin: str | Path | None = None,
    sched_opts: dict[str, str] | None = None,
    cost_model: CostModel = None,
    seed: int = 0,
    arrival_interval_us: float | None = None,
    overhead_pop_ns: int = 0,
    overhead_task_ns: int = 0,
    trace: bool | str | Path | None = None,
    trace_format: str = "csv",
    report: str | Path | None = None,
    record_decisions: str | Path | None = None,
    scheduler_call_timeout_ms: int = 10_000,
    quiet: bool = False,
    verbose: bool = False,
) -> RunResult:
    """Simulates `graph` (JSON text, a dict or a file path) on `workers` virtual workers with the
    scheduler `scheduler` (a name, a path or a Python policy, as `run_graph` takes it;
    `scheduler_plugin`, a path, replaces it).

    No kernel runs: a task lasts what `cost_model` draws for its node (see CostModel; None: what
    the graph says, a `spin` node its µs argument, `noop` nothing). `arrival_interval_us` paces
    frame k at k × that (a packet source); without it a frame starts whenever a slot is free.
    `overhead_pop_ns` and `overhead_task_ns` add the host's cost of a pop and of a task. `trace`,
    `trace_format`, `report` and `record_decisions` are `run_graph`'s (a decisions file records
    the seed, cost model and arrivals too, for `tomii replay`); `quiet` and `verbose` are accepted as
    the CLI's (nothing is printed). A scheduler call that has not returned after
    `scheduler_call_timeout_ms` of real time raises HangError, as in a real run. `dylibs` are kernel libraries, needed only when a count of the
    graph names a computed initialization (computed once before the graph compiles). Raises what `run_graph` raises; a scheduler
    that breaks its contract raises SchedulerFault with the real run's message, carrying the
    partial result."""
    from .run import _prepare, _run_result

    check_run_options(locals())
    text, source, plugin, policy, _kernels = _prepare(graph, (), scheduler, scheduler_plugin)
    trace_path = None if isinstance(trace, bool) or trace is None else str(trace)
    interval = None
    if arrival_interval_us is not None:
        if not arrival_interval_us >= 0:
            raise ConfigError(f"arrival_interval_us {arrival_interval_us}: give µs >= 0")
        interval = round(arrival_interval_us * 1000)
    try:
        given = {**locals(), "scheduler": None, "scheduler_plugin": plugin, "trace": trace_path}
        returned = simulate_json(
            text,
            source=source,
            options=runtime_options("simulate", given),
            keep_trace=trace is True,
            seed=seed,
            cost_json=cost_model_json(cost_model),
            arrival_interval_ns=interval,
            overhead_pop_ns=overhead_pop_ns,
            overhead_task_ns=overhead_task_ns,
            scheduler_policy=policy,
        )
    except TomiiError as error:
        partial = getattr(error, "partial", None)
        if partial is not None:
            error.result = _run_result(partial[:4])  # type: ignore[attr-defined]
            del error.partial  # type: ignore[attr-defined]
        raise
    result = _run_result(returned[:4])
    signal = returned[4]
    if signal is not None:
        # Ctrl-C stopped the simulation, as it stops a run: the exception carries what it did.
        signal.result = result  # type: ignore[attr-defined]
        raise signal
    return result


def cost_model_json(model: CostModel) -> str | None:
    """The cost model's JSON (`{"default": D, "nodes": {NAME: D}}`, durations in ns), or None for
    the graph's own costs. Raises ConfigError naming what is wrong."""
    if model is None:
        return None
    if isinstance(model, (str, Path)):
        path = Path(model)
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as error:
            raise ConfigError(f"{path}: cannot read the cost model: {error}") from None
        if text.startswith(_TRACE_HEADER):
            return json.dumps(_from_rows(list(csv.reader(text.splitlines()))[1:], str(path)))
        return text
    if isinstance(model, Mapping):
        if set(model) <= {"default", "nodes"} and not any(
            isinstance(v, (Fixed, Uniform, LogNormal)) for v in model.values()
        ):
            return json.dumps(model)
        nodes = {name: _dist(name, cost) for name, cost in model.items() if name != "default"}
        spec: dict[str, Any] = {"nodes": nodes}
        if "default" in model:
            spec["default"] = _dist("default", model["default"])
        return json.dumps(spec)
    trace = getattr(model, "trace", None)
    if trace is None:
        raise ConfigError(
            "cost_model: give a file, a dict, per-node tomii.graphs costs or a RunResult with a "
            f"trace (run with trace=True), got {type(model).__name__}"
        )
    names = model.node_names
    rows = [
        (names[r["node"]], int(r["start_ns"]), int(r["end_ns"])) for r in trace
    ]  # fmt: skip
    samples: dict[str, list[int]] = {}
    for name, start, end in rows:
        samples.setdefault(name, []).append(max(0, end - start))
    return json.dumps({"nodes": {n: {"samples": {"ns": ns}} for n, ns in samples.items()}})


def _from_rows(rows: list[list[str]], where: str) -> dict[str, Any]:
    samples: dict[str, list[int]] = {}
    for number, row in enumerate(rows, start=2):
        try:
            samples.setdefault(row[0], []).append(max(0, int(row[7]) - int(row[6])))
        except (IndexError, ValueError):
            raise ConfigError(f"{where}: line {number} is not a trace row") from None
    return {"nodes": {name: {"samples": {"ns": ns}} for name, ns in samples.items()}}


def _dist(name: str, cost: Any) -> dict[str, Any]:
    """A `tomii.graphs` distribution (µs) as the cost model's (ns)."""
    if isinstance(cost, Fixed):
        return {"fixed": {"ns": round(cost.us * 1000)}}
    if isinstance(cost, Uniform):
        return {"uniform": {"lo_ns": round(cost.lo_us * 1000), "hi_ns": round(cost.hi_us * 1000)}}
    if isinstance(cost, LogNormal):
        return {"lognormal": {"median_ns": cost.median_us * 1000, "sigma": cost.sigma}}
    raise ConfigError(
        f"cost_model[{name!r}]: give tomii.graphs.Fixed, Uniform or LogNormal, "
        f"got {type(cost).__name__}"
    )
