"""`tune`: a strategy proposes, the verifier judges, the experiments machinery measures, and every
trial, valid or not, becomes a row of a tidy table (`TuneResult`).

Each valid candidate is measured by `tomii.experiments.sweep` (repeats, warm-ups, the invariant
checks of each trial's trace), on one long-lived child process that also runs the verifier's
twin runs: a crash or hang costs its trial, never the search. Nothing here proposes or judges.
"""

from __future__ import annotations

import csv
import json
import math
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Union

from .._ctrl_c import CtrlC
from ..errors import TomiiError
from ..isolation import refuse_while_importing_parent_script
from ..knobs import GraphInput, load_graph
from .agent import Agent, AgentError
from .space import Candidate, TuneSpace, build_space
from .strategies import STRATEGIES, Strategy, TrialRecord
from .verifier import Verdict, Verifier, verify_run

__all__ = ["COLUMNS", "Objective", "TuneResult", "tune"]

#: The columns of every trial row, in order, with their types.
COLUMNS: dict[str, type] = {
    "trial": int,  # 0, 1, ... in the order proposed
    "strategy": str,
    "graph": str,
    "objective": str,  # its name: throughput, p99, a sweep column, or the callable's name
    "value": float,  # the objective; NaN when the trial is invalid
    "best_so_far": float,  # the best valid value up to this trial; NaN before the first
    "valid": bool,
    "invariant": str,  # what a rejection broke (Verdict.invariant, or "trial": the run failed)
    "reason": str,
    "knobs": str,  # JSON: the complete candidate
    "changed": str,  # the knobs that differ from the baseline, "name=value ..."
    "graph_edit": bool,  # the proposal came with a whole graph
    "checks": str,  # what the verifier ran, ";"-separated
    "throughput_frames_per_s": float,  # medians over the valid repeats
    "latency_p99_us": float,
    "repeats_valid": int,
    "seconds": float,  # the trial's wall time: proposal, verification and measurement
    "note": str,  # the proposer's note (an agent's)
}
#: The objectives by short name: the sweep column each reads, and its direction.
NAMED_OBJECTIVES = {
    "throughput": ("throughput_frames_per_s", "max"),
    "p99": ("latency_p99_us", "min"),
}

ObjectiveSpec = Union[str, Callable[[dict[str, Any]], float]]


@dataclass(frozen=True)
class Objective:
    """What a trial is scored by: a sweep column (median over the valid repeats) or `function`,
    a synthetic objective of the knobs alone that runs nothing; `direction` "max" or "min"."""

    name: str
    direction: str
    column: str | None = None
    function: Callable[[dict[str, Any]], float] | None = None

    def better(self, a: float, b: float) -> bool:
        """Whether `a` beats `b` (NaN never beats, and is always beaten)."""
        if not math.isfinite(a):
            return False
        if not math.isfinite(b):
            return True
        return a > b if self.direction == "max" else a < b


def objective_of(spec: ObjectiveSpec, direction: str | None) -> Objective:
    from ..experiments.table import COLUMNS as SWEEP_COLUMNS

    if direction not in (None, "max", "min"):
        raise ValueError(f"tune: direction must be 'max' or 'min', got {direction!r}")
    if callable(spec):
        return Objective(getattr(spec, "__name__", "objective"), direction or "max", function=spec)
    if spec in NAMED_OBJECTIVES:
        column, default = NAMED_OBJECTIVES[spec]
        return Objective(spec, direction or default, column)
    if isinstance(spec, str) and SWEEP_COLUMNS.get(spec) is float:
        default = "min" if spec.startswith(("latency", "wall_time")) else "max"
        return Objective(spec, direction or default, spec)
    numeric = [c for c, t in SWEEP_COLUMNS.items() if t is float]
    raise ValueError(
        f"tune: objective {spec!r}: give 'throughput', 'p99', a numeric sweep column "
        f"({', '.join(numeric)}) or a callable of the knobs"
    )


# ---------------------------------------------------------------------------------------------
# The result


@dataclass
class TuneResult:
    """What a tuning run produced: `rows` (one dict per trial, keys `COLUMNS`), `best` (the best
    valid trial: trial, value, knobs, changed, run (scheduler, sched_opts and run options), graph;
    None when no trial was valid), the `space` searched (as the agent protocol sends it), the
    `environment` (machine, versions, commit, date, parameters) and whether Ctrl-C cut it short
    (`interrupted`)."""

    rows: list[dict[str, Any]]
    best: dict[str, Any] | None
    space: dict[str, Any]
    environment: dict[str, Any]
    columns: list[str] = field(default_factory=lambda: list(COLUMNS))
    #: Ctrl-C stopped the search: `rows` hold the trials that finished (the one it cut is not).
    interrupted: bool = False

    def to_csv(self, path: str | Path) -> Path:
        """Writes the rows as CSV (`COLUMNS`, in order); returns the path."""
        return write_rows(path, self.rows, self.columns)

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd  # type: ignore[import-untyped,unused-ignore]
        except ImportError:
            raise ImportError("to_pandas() needs pandas: pip install pandas") from None
        return pd.DataFrame(self.rows, columns=self.columns)

    @property
    def valid_trials(self) -> int:
        return sum(1 for row in self.rows if row["valid"])

    def save(self, directory: str | Path, *, plot: bool = True) -> list[Path]:
        """Writes trials.csv, best.json (with the best graph), space.json, environment.json and,
        with `plot`, convergence.png into `directory`; returns the paths."""
        where = Path(directory)
        where.mkdir(parents=True, exist_ok=True)
        written = [self.to_csv(where / "trials.csv")]
        for name, data in (("best", self.best), ("space", self.space)):
            written.append(_write_json(where / f"{name}.json", data))
        written.append(_write_json(where / "environment.json", self.environment))
        if plot and self.rows:
            from .plot import convergence

            written.append(convergence(self.rows, where / "convergence.png"))
        return written


def write_rows(path: str | Path, rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    with target.open("w", newline="", encoding="utf-8") as out:
        writer = csv.DictWriter(out, fieldnames=list(columns), lineterminator="\n")
        writer.writeheader()
        for row in rows:
            writer.writerow({c: row.get(c, "") for c in columns})
    return target


def _write_json(path: Path, data: Any) -> Path:
    path.write_text(json.dumps(data, indent=2, default=str) + "\n", encoding="utf-8")
    return path


# ---------------------------------------------------------------------------------------------
# Measuring: the sweep, on one child process


class _InChild:
    """An executor for `sweep(executor=...)` that runs each call at once on an `Isolated` child:
    a crash or a hang past `timeout_s` fails that call (the sweep's row says so) and the next
    call gets a fresh child."""

    def __init__(self, timeout_s: float | None) -> None:
        from ..isolation import Isolated

        self.child = Isolated()
        self.timeout_s = timeout_s

    def submit(self, fn: Any, /, *args: Any) -> Future[Any]:
        future: Future[Any] = Future()
        try:
            outcome = self.child.call(fn, *args, timeout_s=self.timeout_s)
        except Exception as error:  # noqa: BLE001 (the sweep turns it into the trial's row)
            future.set_exception(error)
            return future
        if isinstance(outcome, dict) and outcome.get("stuck"):
            self.child.close()  # a plugin thread spins in it: the next call gets a fresh child
        future.set_result(outcome)
        return future

    def call(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self.child.call(fn, *args, timeout_s=self.timeout_s)

    def close(self) -> None:
        self.child.close()


@dataclass
class _Measure:
    """How valid candidates are measured."""

    objective: Objective
    frames: int
    repeats: int
    warmup: int
    seed: int
    dylibs: list[str]
    child: _InChild | None

    def __call__(self, space: TuneSpace, knobs: dict[str, Any], graph: Any) -> dict[str, Any]:
        """The candidate's measures: value, problem, throughput, p99, repeats_valid."""
        if self.objective.function is not None:
            value = float(self.objective.function(dict(knobs)))
            return {"value": value, "problem": "" if math.isfinite(value) else "objective is NaN"}
        from ..experiments import Scheduler, sweep

        scheduler, options, run_options = space.run_options(knobs)
        assert self.child is not None
        result = sweep(
            [Scheduler(scheduler, options)],
            [graph],
            {name: [value] for name, value in run_options.items()},
            repeats=self.repeats, warmup=self.warmup, frames=self.frames, seed=self.seed,
            executor=self.child, check=True, progress=False, dylibs=self.dylibs,
        )  # fmt: skip
        if result.interrupted:
            # The sweep kept the Ctrl-C to itself, as a sweep does; here it stops the search.
            raise KeyboardInterrupt
        return self._summary(result.rows)

    def _summary(self, rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
        valid = [row for row in rows if row["valid"]]
        invalid = [row for row in rows if not row["valid"]]

        def median(column: str) -> float:
            values = [float(r[column]) for r in valid if math.isfinite(float(r[column]))]
            return statistics.median(values) if values else math.nan

        assert self.objective.column is not None
        measures: dict[str, Any] = {
            "value": median(self.objective.column),
            "throughput_frames_per_s": median("throughput_frames_per_s"),
            "latency_p99_us": median("latency_p99_us"),
            "repeats_valid": len(valid),
            "problem": f"trial: {invalid[0]['problem']}" if invalid else "",
        }
        if not invalid and not math.isfinite(measures["value"]):
            measures["problem"] = f"trial: no {self.objective.column} measured"
        return measures


# ---------------------------------------------------------------------------------------------
# The search


def _strategy(
    spec: str | Strategy, space: TuneSpace, objective: Objective, budget: int, seed: int,
    agent: str | Sequence[str] | None, agent_timeout_s: float,
) -> Strategy:  # fmt: skip
    if not isinstance(spec, str):
        if not (hasattr(spec, "ask") and hasattr(spec, "tell")):
            raise TypeError(f"tune: a strategy is a name or has ask() and tell(), got {spec!r}")
        return spec
    options = {"seed": seed, "direction": objective.direction, "budget": budget}
    if spec == "agent":
        if agent is None:
            raise ValueError(
                "tune: strategy 'agent' needs agent=COMMAND (python/tomii/tune/README.md)"
            )
        return Agent(space, command=agent, objective=objective.name, timeout_s=agent_timeout_s,
                     **options)  # type: ignore[arg-type]  # fmt: skip
    if spec not in STRATEGIES:
        valid = ", ".join([*STRATEGIES, "agent"])
        raise ValueError(f"tune: unknown strategy {spec!r}; strategies: {valid}")
    return STRATEGIES[spec](space, **options)  # type: ignore[no-any-return]


def _changed(space: TuneSpace, knobs: Mapping[str, Any]) -> str:
    baseline = space.baseline()
    return " ".join(
        f"{name}={json.dumps(value)}"
        for name, value in knobs.items()
        if baseline.get(name) != value
    )


@dataclass
class _Search:
    space: TuneSpace
    strategy: Strategy
    verifier: Verifier
    measure: _Measure
    label: str
    graph_name: str
    history: list[TrialRecord] = field(default_factory=list)
    rows: list[dict[str, Any]] = field(default_factory=list)
    best: dict[str, Any] | None = None
    best_value: float = math.nan

    def step(self, trial: int) -> dict[str, Any] | None:
        """Proposes, judges and measures one trial; None when the strategy has no more."""
        started = time.monotonic()
        candidate = self.strategy.ask(list(self.history))
        if candidate is None:
            return None
        verdict = self.verifier.check(candidate)
        knobs = (
            self.space.complete(candidate.knobs) if not candidate.problem else dict(candidate.knobs)
        )
        measures: dict[str, Any] = {}
        if verdict.valid:
            try:
                measures = self.measure(self.space, knobs, verdict.graph)
            except TomiiError as error:  # the sweep refused the trial's inputs
                measures = {"problem": f"trial: {type(error).__name__}: {error}"}
        invariant, reason = verdict.invariant, verdict.reason
        if measures.get("problem"):
            invariant, reason = "trial", measures["problem"]
        valid = verdict.valid and not reason
        value = float(measures.get("value", math.nan)) if valid else math.nan
        row = self._row(trial, candidate, verdict, knobs, valid, value, invariant, reason, measures)
        row["seconds"] = round(time.monotonic() - started, 3)
        record = TrialRecord(trial, knobs, value, valid, reason, candidate.graph is not None)
        self.strategy.tell(record)
        self.history.append(record)
        self.rows.append(row)
        return row

    def _row(
        self, trial: int, candidate: Candidate, verdict: Verdict, knobs: dict[str, Any],
        valid: bool, value: float, invariant: str, reason: str, measures: Mapping[str, Any],
    ) -> dict[str, Any]:  # fmt: skip
        if valid and self.measure.objective.better(value, self.best_value):
            self.best_value = value
            self.best = self._best(trial, knobs, value, verdict.graph)
        return {
            "trial": trial,
            "strategy": self.label,
            "graph": self.graph_name,
            "objective": self.measure.objective.name,
            "value": value,
            "best_so_far": self.best_value,
            "valid": valid,
            "invariant": invariant,
            "reason": reason,
            "knobs": json.dumps(knobs, sort_keys=True, default=str),
            "changed": _changed(self.space, knobs) if not candidate.problem else "",
            "graph_edit": candidate.graph is not None,
            "checks": ";".join(verdict.checks),
            "throughput_frames_per_s": measures.get("throughput_frames_per_s", math.nan),
            "latency_p99_us": measures.get("latency_p99_us", math.nan),
            "repeats_valid": measures.get("repeats_valid", 0),
            "note": candidate.note,
        }

    def _best(self, trial: int, knobs: dict[str, Any], value: float, graph: Any) -> dict[str, Any]:
        scheduler, options, run_options = self.space.run_options(knobs)
        return {
            "trial": trial,
            "value": value,
            "objective": self.measure.objective.name,
            "direction": self.measure.objective.direction,
            "knobs": knobs,
            "changed": _changed(self.space, knobs),
            "run": {"scheduler": scheduler, "sched_opts": options, **run_options},
            "graph": graph,
        }


def tune(
    graph: GraphInput | None = None,
    *,
    space: Mapping[str, Any] | None = None,
    knobs: Mapping[str, Any] | None = None,
    objective: ObjectiveSpec = "throughput",
    direction: str | None = None,
    strategy: str | Strategy = "random",
    budget: int = 50,
    seed: int = 0,
    frames: int = 100,
    repeats: int = 1,
    warmup: int = 1,
    agent: str | Sequence[str] | None = None,
    agent_timeout_s: float = 60.0,
    trial_timeout_s: float | None = 120.0,
    verify_frames: int = 3,
    dylibs: Sequence[str | Path] | None = None,
    out: str | Path | None = None,
    plot: bool = True,
    progress: bool = True,
    label: str | None = None,
    on_trial: Callable[[dict[str, Any]], None] | None = None,
) -> TuneResult:
    """Searches the knob space of `graph` with `strategy` for `budget` trials; every candidate is
    verified first (tomii.tune.verifier), and a rejected one is a row with its reason that costs
    its trial of the budget.

    `space`: a `tomii.knob_space` dict (default: the graph's). `knobs`: what is searched (None:
    every knob of the space, the scheduler and its options included; else name or glob →
    None: its values, a list: those values, anything else: held at that value; what no entry
    names holds its default). `objective`: "throughput" (max), "p99" (min), a numeric sweep
    column, or a callable of the complete knobs (a synthetic objective: nothing runs);
    `direction` overrides the default. `strategy`: "random", "grid", "bayes" (optuna's TPE),
    "agent" (the program `agent`, python/tomii/tune/README.md) or an object with ask() and
    tell() (tomii.tune.strategies.Strategy).

    Each valid candidate runs through `tomii.experiments.sweep` (`frames`, `repeats`, `warmup`,
    its trace checked), on a child process that is replaced after a crash or a hang past
    `trial_timeout_s`. Returns a `TuneResult`; with `out`, saves it there (and its convergence
    plot with `plot`). `progress` shows a tqdm bar on stderr; `on_trial(row)` sees every row.
    """
    refuse_while_importing_parent_script("tune")
    if isinstance(budget, bool) or not isinstance(budget, int) or budget < 1:
        raise ValueError(f"tune: budget must be a positive integer, got {budget!r}")
    chosen_objective = objective_of(objective, direction)
    original = None if graph is None else load_graph(graph)
    if original is None and chosen_objective.function is None:
        raise ValueError("tune: a graph is needed to measure; give one, or a callable objective")
    tuned = build_space(original, space, knobs)
    from ..plugins import find_plugin

    libraries = [str(Path(d).resolve()) for d in (dylibs or [find_plugin("synthetic")])]
    runs = chosen_objective.function is None
    child = _InChild(trial_timeout_s) if runs else None
    try:
        runner = None
        if child is not None:

            def runner(*arguments: Any) -> Any:
                return child.call(verify_run, *arguments, libraries)

        verifier = Verifier(tuned, runner=runner, frames=verify_frames)
        measure = _Measure(chosen_objective, frames, repeats, warmup, seed, libraries, child)
        chosen = _strategy(strategy, tuned, chosen_objective, budget, seed, agent, agent_timeout_s)
        name = str(label or getattr(chosen, "name", type(chosen).__name__))
        graph_name = str((original or {}).get("name") or "graph")
        search = _Search(tuned, chosen, verifier, measure, name, graph_name)
        interrupted = _run(search, budget, progress, on_trial)
    finally:
        if child is not None:
            child.close()
    parameters = {"strategy": name, "budget": budget, "seed": seed, "frames": frames,
                  "repeats": repeats, "warmup": warmup, "objective": chosen_objective.name,
                  "direction": chosen_objective.direction, "graph": graph_name}  # fmt: skip
    from ..experiments import environment

    result = TuneResult(
        search.rows, search.best, tuned.to_json(), environment(parameters), interrupted=interrupted
    )
    if out is not None:
        result.save(out, plot=plot)
    return result


def _run(
    search: _Search, budget: int, progress: bool, on_trial: Callable[[dict[str, Any]], None] | None
) -> bool:
    """Runs the search's trials; returns whether Ctrl-C stopped it (the trial it cut is dropped,
    the finished ones are kept)."""
    from tqdm import tqdm  # type: ignore[import-untyped,unused-ignore]

    bar = tqdm(total=budget, desc=f"tune {search.label}", unit="trial", file=sys.stderr,
               disable=None if progress else True, dynamic_ncols=True)  # fmt: skip
    try:
        with CtrlC() as ctrl_c:
            for trial in range(budget):
                ctrl_c.stop_if_pressed()  # a Ctrl-C whose KeyboardInterrupt a finalizer swallowed
                try:
                    row = search.step(trial)
                except AgentError as error:
                    error.result = TuneResult(search.rows, search.best, search.space.to_json(), {})
                    raise
                if row is None:
                    break
                valid = sum(1 for r in search.rows if r["valid"])
                bar.set_postfix_str(f"best {search.best_value:.4g}, valid {valid}", refresh=False)
                bar.update(1)
                if on_trial is not None:
                    on_trial(row)
    except KeyboardInterrupt:
        return True
    finally:
        bar.close()
    return False
