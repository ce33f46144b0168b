"""`tomii.check.check(scheduler)`: the property suite as one call, for any scheduler dylib.

Each property runs real runs of hypothesis-generated graphs and knobs through the scheduler and
compares them with the reference model (`reference.py`) and the invariants (`invariants.py`). A
failing property is shrunk by hypothesis to a minimal graph and knobs, which the report card
shows, ready to paste into a test. The runs happen in a child process (`tomii.isolation`), so a
scheduler that crashes or hangs fails its example, not the caller: `check` never raises because
of the scheduler under test.
"""

from __future__ import annotations

import dataclasses
import json
import shlex
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import seed as hypothesis_seed
from hypothesis import strategies as st
from hypothesis.errors import Flaky

from .._ctrl_c import CtrlC
from ..errors import HangError
from ..isolation import ChildFailed, Isolated, refuse_while_importing_parent_script
from ..plugins import find_plugin
from ..run import run_graph
from ..scheduler import Scheduler as PythonScheduler
from ..scheduler import importable_policy
from .invariants import Violation, check_trace, fifo_order, priority_order, rows_of
from .reference import ReferenceModel
from .strategies import Knobs, graphs

__all__ = ["ISOLATIONS", "PROFILES", "PropertyResult", "ReportCard", "check"]

#: Examples per property: "fast" for every CI run, "deep" on demand.
PROFILES = {"fast": 30, "deep": 600}
#: How long a higher-priority ready task may wait while lower ones start (the priority property).
PRIORITY_BOUND_NS = 50_000_000
#: What `check(isolation=...)` takes.
ISOLATIONS = ("process", "none")


@dataclass(frozen=True)
class PropertyResult:
    """One property's outcome."""

    name: str
    description: str
    passed: bool
    examples: int
    seconds: float
    #: The problems of the minimal failing example (empty when it passed).
    problems: list[str] = field(default_factory=list)
    #: The minimal failing graph and the knobs it failed with (the checked scheduler's included).
    #: For a `flaky` failure: the first example that failed, with its problems.
    graph: dict[str, Any] | None = None
    knobs: Any = None
    #: The failure did not happen again when hypothesis ran its example again (hypothesis'
    #: Flaky): the scheduler's runs are nondeterministic.
    flaky: bool = False
    #: The `seed` the examples came from (None: derandomized, the same on every call).
    seed: int | None = None
    #: A JSON file with the whole `graph`, written when it is too long for the card (which then
    #: shows its size and this path).
    graph_file: str = ""
    #: A shell command that runs the same check again (empty when it passed).
    reproduce: str = ""
    #: The decisions file of the failing example's run (`record_decisions`), and the command that
    #: replays it (empty when it passed, when the example crashed or hung its run, or when that run
    #: did not fail again). The file ends with how the run ended and what the property found, so
    #: that `tomii replay` names the same violation.
    decisions: str = ""
    replay: str = ""
    #: The failing example, run once more to record its decisions, did not fail.
    rerun_passed: bool = False
    #: Ctrl-C stopped the property after `examples` runs (`passed`: none of them failed).
    interrupted: bool = False
    #: Shrinking the failure lasted SHRINK_BUDGET_S and was stopped: the example shown is the
    #: smallest failing one found by then.
    shrink_stopped: bool = False


@dataclass(frozen=True)
class ReportCard:
    """What `check` found: one result per property checked. A check that Ctrl-C stopped holds
    the properties it got to, the last one marked `interrupted`, and has not passed."""

    scheduler: str
    results: list[PropertyResult]

    @property
    def interrupted(self) -> bool:
        """Whether Ctrl-C stopped the check before every property ran its examples."""
        return any(result.interrupted for result in self.results)

    @property
    def passed(self) -> bool:
        return not self.interrupted and all(result.passed for result in self.results)

    def __str__(self) -> str:
        verdict = "PASSED" if self.passed else "FAILED"
        if self.interrupted and all(result.passed for result in self.results):
            verdict = "INTERRUPTED (Ctrl-C): no failure in the runs it made"
        elif self.interrupted:
            verdict = "FAILED, then INTERRUPTED (Ctrl-C)"
        lines = [f"scheduler {self.scheduler}: {verdict}"]
        for r in self.results:
            mark = "pass" if r.passed else "FAIL"
            if r.interrupted and r.passed:
                mark = "stop"
            lines.append(
                f"  {mark}  {r.name:<22} {r.examples:>4} runs  {r.seconds:6.1f} s  {r.description}"
            )
            if r.passed:
                continue
            if r.flaky:
                lines.append(f"        {DID_NOT_REPEAT}")
                lines.append(f"        {_seed_line(r.seed)}")
            lines += [f"        {problem}" for problem in r.problems[:5]]
            if r.shrink_stopped:
                lines.append(
                    f"        shrinking stopped after {SHRINK_BUDGET_S:g} s: the example is the "
                    "smallest failing one found by then"
                )
            if r.graph is not None:
                lines.append(f"        knobs: {json.dumps(r.knobs)}")
                lines.append(f"        graph: {_graph_line(r.graph, r.graph_file)}")
            lines.append(f"        reproduce: {r.reproduce}")
            if r.replay:
                lines.append(f"        replay the failing run: {r.replay}")
            elif r.rerun_passed:
                lines.append(
                    "        replay: none (the example's run recorded for replay did not fail)"
                )
        return "\n".join(lines)

    def to_dict(self) -> dict[str, Any]:
        return {
            "scheduler": self.scheduler,
            "passed": self.passed,
            "interrupted": self.interrupted,
            "results": [r.__dict__ for r in self.results],
        }


#: What a card says of a failure that did not repeat (hypothesis' Flaky).
DID_NOT_REPEAT = (
    "did not repeat: this example failed, then passed when hypothesis ran it again"
    " (a nondeterministic scheduler, or a race)"
)
#: The longest graph (characters of JSON) a card shows whole; a longer one is summed up, with
#: the path of a file holding it (`PropertyResult.graph_file`).
CARD_GRAPH_CHARS = 400


def _seed_line(seed: int | None) -> str:
    if seed is None:
        return (
            "seed: none (derandomized: `reproduce` draws the same examples again;"
            " pass seed=N to draw others)"
        )
    return f"seed: {seed} (`reproduce` passes it: the same examples again)"


def _graph_line(graph: Mapping[str, Any], graph_file: str) -> str:
    """The graph as the card shows it: whole when short, else its size and where it is whole."""
    text = json.dumps(graph)
    if len(text) <= CARD_GRAPH_CHARS:
        return text
    sizes = [
        f"{len(graph.get(key) or [])} {what}"
        for key, what in (("nodes", "node(s)"), ("post_nodes", "post-node(s)"))
        if graph.get(key)
    ]
    if graph.get("initializations"):
        sizes.append(f"{len(graph['initializations'])} initialization(s)")
    where = f"the whole graph: {graph_file}" if graph_file else f"begins {text[:120]}…"
    return f"{', '.join(sizes)}, {len(text)} characters of JSON; {where}"


@dataclass(frozen=True)
class _Suite:
    dylibs: list[str]
    stall_timeout_ms: int
    scheduler_call_timeout_ms: int
    #: `tomii.run_graph`, or a function that calls it in a child process.
    run_graph: Callable[..., Any]

    def run(self, graph: dict[str, Any], knobs: Knobs, **extra: Any) -> tuple[Any, ReferenceModel]:
        """A run of `graph` with `knobs` (and `extra` options of `run_graph`, such as
        `record_decisions`), and its reference model."""
        model = ReferenceModel(graph)
        result = self.run_graph(
            graph,
            dylibs=self.dylibs,
            trace=True,
            stall_timeout_ms=self.stall_timeout_ms,
            scheduler_call_timeout_ms=self.scheduler_call_timeout_ms,
            **knobs.run_options(),
            **extra,
        )
        return result, model

    def outputs(self, graph: dict[str, Any], knobs: Knobs, **extra: Any) -> list[str]:
        result, model = self.run(graph, knobs, **extra)
        expected = model.run(frames=knobs.frames, workers=knobs.workers)
        problems = []
        for frame, (got, want) in enumerate(zip(result.outputs, expected.outputs)):
            if got != want:
                problems.append(f"frame {frame}: outputs {got} != reference {want}")
        if result.post_outputs != expected.post_outputs:
            problems.append(
                f"post-nodes: {result.post_outputs} != reference {expected.post_outputs}"
            )
        skipped = {n["name"]: n.get("skipped", 0) for n in result.report["per_node"]}
        for node, count in expected.skipped.items():
            if skipped.get(node, 0) != count:
                problems.append(f"node {node}: {skipped.get(node, 0)} skipped, reference {count}")
        return problems

    def trace(self, graph: dict[str, Any], knobs: Knobs, **extra: Any) -> list[str]:
        result, model = self.run(graph, knobs, **extra)
        rows = rows_of(result.trace, result.node_names)
        violations = check_trace(
            rows,
            tasks=model.tasks,
            depends_on=model.deps,
            frames=knobs.frames,
            slots=knobs.slots,
            workers=knobs.workers,
            ranges=model.worker_ranges(),
            report=result.report,
        )
        expected_posts = sum(node.factor for node in model.post_nodes)
        if len(result.post_outputs) != expected_posts:
            violations.append(
                Violation(
                    "post-nodes run once",
                    f"{len(result.post_outputs)} post-node results, {expected_posts} instances",
                )
            )
        # The knobs (`_run_examples`) never turn inline continuation on, which would take tasks
        # out of the scheduler's order.
        name = result.report.scheduler
        if name == "fifo" and knobs.workers == 1:
            violations += fifo_order(rows)
        if name == "priority":
            violations += priority_order(
                rows, model.priorities(), PRIORITY_BOUND_NS, model.worker_ranges()
            )
        return [str(v) for v in violations]


#: A property's check of one run: the problems of a run of the graph with the knobs (and extra
#: options of `run_graph`).
Body = Callable[..., list[str]]


#: How long a property may shrink its first failure, in seconds: past it, the smallest failing
#: example found so far is the one reported (each shrink step is a run, and a slow scheduler's
#: runs can make shrinking last many minutes).
SHRINK_BUDGET_S = 120.0


def _property(
    name: str,
    description: str,
    body: Body,
    strategy: st.SearchStrategy[tuple[dict[str, Any], Knobs]],
    examples: int,
    seed: int | None,
    ctrl_c: CtrlC,
) -> PropertyResult:
    failure: dict[str, Any] = {}
    #: The first failing example: the one shown when the failure did not repeat (Flaky), since
    #: hypothesis' later examples are shrinks of it, some failing, some not.
    first: dict[str, Any] = {}
    ran = 0
    #: The first example that crashed its child or left a call stuck, and what it said: each
    #: further run of such an example costs a child process or a time limit, so it is reported
    #: as found, not shrunk (every other example then passes unrun, and it alone fails again).
    fatal: tuple[tuple[dict[str, Any], Knobs], list[str]] | None = None
    #: When the first failure came, and the last failing example (the smallest so far): once
    #: shrinking has lasted SHRINK_BUDGET_S, every other example passes unrun, so it ends there.
    failed_at: float | None = None
    smallest: tuple[dict[str, Any], Knobs] | None = None
    shrink_stopped = False

    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        derandomize=seed is None,
        suppress_health_check=list(HealthCheck),
        phases=[Phase.generate, Phase.shrink],
        report_multiple_bugs=False,
    )
    @given(strategy)
    def prop(example: tuple[dict[str, Any], Knobs]) -> None:
        nonlocal ran, fatal, failed_at, smallest, shrink_stopped
        ctrl_c.stop_if_pressed()  # a Ctrl-C whose KeyboardInterrupt a finalizer swallowed
        if fatal is not None:
            if example != fatal[0]:
                return
            raise AssertionError(fatal[1][0])
        if failed_at is not None and time.monotonic() - failed_at > SHRINK_BUDGET_S:
            shrink_stopped = True
            if example != smallest:
                return
            raise AssertionError(failure["problems"][0])
        ran += 1
        graph, knobs = example
        try:
            problems = body(graph, knobs)
        except (ChildFailed, HangError) as error:
            problems = [f"{type(error).__name__}: {error}"]
            fatal = (example, problems)
        except Exception as error:  # noqa: BLE001 (a TomiiError, a crash: the example failed)
            problems = [f"{type(error).__name__}: {error}"]
        if problems:
            # The last failing example hypothesis runs is the shrunk one.
            failure.update(graph=graph, knobs=knobs.run_options(), problems=problems)
            if not first:
                first.update(failure)
                failed_at = time.monotonic()
            smallest = example
            raise AssertionError(problems[0])

    if seed is not None:
        prop = hypothesis_seed(seed)(prop)
    started = time.perf_counter()
    stopped = None
    interrupted = False
    try:
        prop()
    except AssertionError:
        pass
    except KeyboardInterrupt:
        interrupted = True  # the runs made so far stand; the caller stops the check here
    except Exception as error:  # noqa: BLE001 (Flaky, or hypothesis gave up: the property failed)
        stopped = error
    interrupted = interrupted or ctrl_c.pressed
    seconds = time.perf_counter() - started
    if not failure and stopped is None:
        return PropertyResult(
            name, description, True, ran, seconds, seed=seed, interrupted=interrupted
        )
    flaky = isinstance(stopped, Flaky)
    if flaky and first:
        # One example, as it failed; the card says it did not repeat (no raw FlakyFailure).
        failure, stopped = first, None
    problems = list(failure.get("problems", []))
    if stopped is not None:
        problems.append(f"{type(stopped).__name__}: {_one_line(stopped)}")
    return PropertyResult(
        name,
        description,
        False,
        ran,
        seconds,
        problems=problems,
        graph=failure.get("graph"),
        knobs=failure.get("knobs"),
        flaky=flaky,
        seed=seed,
        interrupted=interrupted,
        shrink_stopped=shrink_stopped,
    )


def _one_line(error: BaseException, most: int = 600) -> str:
    text = " ".join(str(error).split())
    return text if len(text) <= most else text[: most - 1] + "…"


def check(
    scheduler: str | Path | type[PythonScheduler],
    *,
    sched_opts: Mapping[str, str] | None = None,
    profile: str = "fast",
    max_examples: int | None = None,
    workers: tuple[int, int] = (1, 3),
    seed: int | None = None,
    dylibs: Sequence[str | Path] | None = None,
    stall_timeout_ms: int = 5000,
    scheduler_call_timeout_ms: int = 2000,
    isolation: str = "process",
    run_timeout_s: float | None = 60.0,
) -> ReportCard:
    """Checks a scheduler (a name, the path of any scheduler dylib, or a policy written in
    Python: a `tomii.Scheduler` subclass or its import path `module:Class`, which each run
    instantiates) against every invariant, on hypothesis-generated graphs and knobs, and returns
    a report card.

    Properties: the outputs of every frame and of the post-nodes equal the reference model's (so
    nothing ran twice, out of order or with another frame's data); the trace shows every instance
    exactly once per frame, never before the instances it depends on, frames never overlapping in
    a slot, worker ranges honoured, every frame and every post-node done; for `fifo` on one worker,
    FIFO order; for `priority`, no higher-priority task left waiting. `profile` is "fast" (30 runs
    per property) or "deep" (600); `max_examples` overrides it. A failure comes with the minimal
    graph and knobs hypothesis shrank it to, and a command that runs the check again. `seed`
    makes the examples reproducible (without it, they are derandomized: the same on every call).
    `dylibs` defaults to the synthetic kernels. A run in which no task completes for
    `stall_timeout_ms` fails as a stall, and one with a scheduler call that has not returned
    after `scheduler_call_timeout_ms` fails as stuck (HangError). An example that crashes its
    child or leaves a call stuck is reported as found, not shrunk: each further run of it would
    cost a child process or a time limit.

    `isolation`: "process" (the default) makes the runs in a child process, each within
    `run_timeout_s` seconds (None: no limit): a scheduler that crashes (a segfault, an abort,
    `exit()`) or hangs fails that example, with the signal, exit status or time limit, and a
    fresh child makes the next run. "none" makes them in this process: a little faster, but a
    crash ends the caller. The scheduler cannot make `check` raise: an error of a run fails its
    example, and a failure that does not repeat (hypothesis' Flaky) fails the property, marked
    `flaky`. Ctrl-C stops the check and returns the card so far: the property it stopped is
    marked `interrupted` with the runs it made, and the card has not passed.
    """
    refuse_while_importing_parent_script("check")
    if profile not in PROFILES:
        raise ValueError(f"profile must be one of {', '.join(PROFILES)}, got {profile!r}")
    if isolation not in ISOLATIONS:
        raise ValueError(f"isolation must be one of {', '.join(ISOLATIONS)}, got {isolation!r}")
    examples = max_examples if max_examples is not None else PROFILES[profile]
    libraries = [str(d) for d in dylibs] if dylibs is not None else [str(find_plugin("synthetic"))]
    options = dict(sched_opts or {})
    policy = importable_policy(scheduler, "check")
    # The runs name a Python policy by its import path, which a child process imports.
    target, card_name = policy if policy is not None else (str(scheduler), str(scheduler))
    strategy = _runs(workers, target, options)
    given = {
        "sched_opts": options or None,
        "max_examples": examples,
        "workers": list(workers) if workers != (1, 3) else None,
        "seed": seed,
        "dylibs": libraries if dylibs is not None else None,
        "stall_timeout_ms": stall_timeout_ms if stall_timeout_ms != 5000 else None,
        "scheduler_call_timeout_ms": (
            scheduler_call_timeout_ms if scheduler_call_timeout_ms != 2000 else None
        ),
        "isolation": isolation if isolation != "process" else None,
    }
    reproduce = _reproduce(target, {k: v for k, v in given.items() if v is not None})
    results = []
    with ExitStack() as stack:
        ctrl_c = stack.enter_context(CtrlC())
        runner: Callable[..., Any] = run_graph
        if isolation == "process":
            runner = _in_child(stack.enter_context(Isolated()), run_timeout_s)
        suite = _Suite(libraries, stall_timeout_ms, scheduler_call_timeout_ms, runner)
        properties = [
            ("outputs", "every frame's outputs equal the reference model's", suite.outputs),
            (
                "trace invariants",
                "exactly once, dependency order, slots, worker ranges",
                suite.trace,
            ),
        ]
        for name, description, body in properties:
            result = _property(name, description, body, strategy, examples, seed, ctrl_c)
            if not result.passed:
                result = dataclasses.replace(result, reproduce=reproduce)
                directory = Path(tempfile.mkdtemp(prefix="tomii-check-"))
                result = _keep_graph(result, directory)
                if not result.interrupted:
                    result = _record_decisions(suite, body, result, directory)
                if not any(directory.iterdir()):
                    directory.rmdir()
            results.append(result)
            if result.interrupted:
                break
    return ReportCard(card_name, results)


def _keep_graph(result: PropertyResult, directory: Path) -> PropertyResult:
    """`result` with its graph written to a JSON file in `directory` when the card would show it
    too long (`CARD_GRAPH_CHARS`): the card then shows its size and the file."""
    if result.graph is None or len(json.dumps(result.graph)) <= CARD_GRAPH_CHARS:
        return result
    path = directory / f"{result.name.replace(' ', '-')}.graph.json"
    try:
        path.write_text(json.dumps(result.graph, indent=2) + "\n", encoding="utf-8")
    except OSError:
        return result  # the card shows the graph's beginning instead
    return dataclasses.replace(result, graph_file=str(path))


def _record_decisions(
    suite: _Suite, body: Body, result: PropertyResult, directory: Path
) -> PropertyResult:
    """`result` with the decisions file of its failing example's run, made by running the example
    once more through the property with `record_decisions` (tomii replay runs it again in the same
    order). The file ends with how that run ended (the runtime writes it); when the run ended but
    the property found problems in it, they are appended as its `found` line, so that the replay
    names them. An example without a graph (it crashed or hung its run) is left as it is: running
    it again would cost a child process or a time limit; one whose run does not fail again gets
    no replay (`rerun_passed`)."""
    if result.graph is None or not isinstance(result.knobs, dict):
        return result
    options = result.knobs
    knobs = Knobs(
        scheduler=options["scheduler"],
        workers=options["workers"],
        slots=options["slots"],
        frames=options["frames"],
        pop_batch=options["pop_batch"],
        sched_opts=tuple(sorted(options["sched_opts"].items())),
        inline_continuation=options["inline_continuation"],
    )
    path = directory / f"{result.name.replace(' ', '-')}.decisions"
    raised = False
    try:
        problems = body(result.graph, knobs, record_decisions=str(path))
    except Exception:  # noqa: BLE001 (the example fails again: the file ends with its error)
        problems, raised = ["failed"], True
    if not path.is_file() or path.stat().st_size == 0:
        return result
    if not problems:
        path.unlink()  # the decisions of a run that passed: nothing to replay
        return dataclasses.replace(result, rerun_passed=True)
    if not raised:
        found = {"by": f"tomii.check property {json.dumps(result.name)}", "problems": problems}
        with path.open("a", encoding="utf-8") as file:
            file.write(json.dumps({"found": found}) + "\n")
    return dataclasses.replace(
        result, decisions=str(path), replay=f"tomii replay {shlex.quote(str(path))}"
    )


def _in_child(child: Isolated, timeout_s: float | None) -> Callable[..., Any]:
    """`run_graph`, called in `child` within `timeout_s` seconds."""

    def run(graph: dict[str, Any], **options: Any) -> Any:
        return child.call(run_graph, graph, timeout_s=timeout_s, **options)

    return run


def _reproduce(scheduler: str | Path, arguments: Mapping[str, Any]) -> str:
    """A shell command that runs `check(scheduler, **arguments)` again and prints its card."""
    path = Path(scheduler)
    target = str(path.resolve()) if path.is_file() else str(scheduler)
    passed = "".join(f", {key}={json.dumps(value)}" for key, value in arguments.items())
    code = f"import tomii.check; print(tomii.check.check({json.dumps(target)}{passed}))"
    return f"python -c {shlex.quote(code)}"


@st.composite
def _run_examples(
    draw: st.DrawFn, workers: tuple[int, int], scheduler: str, sched_opts: dict[str, str]
) -> tuple[dict[str, Any], Knobs]:
    # The knobs name the checked scheduler and its options, so that every example shown does,
    # hypothesis' own reports included.
    knobs = Knobs(
        scheduler=scheduler,
        sched_opts=tuple(sorted(sched_opts.items())),
        workers=draw(st.integers(*workers)),
        slots=draw(st.integers(1, 6)),
        frames=draw(st.integers(1, 5)),
        pop_batch=draw(st.integers(1, 3)),
    )
    return draw(graphs(workers=knobs.workers)), knobs


def _runs(
    workers: tuple[int, int], scheduler: str, sched_opts: dict[str, str]
) -> st.SearchStrategy[tuple[dict[str, Any], Knobs]]:
    return _run_examples(workers, scheduler, sched_opts)
