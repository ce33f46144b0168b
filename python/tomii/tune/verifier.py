"""The verifier: every candidate is judged before it counts, and a rejected one is recorded with
its reason (and costs budget). The checks, in order (README.md beside this file, "The verifier"):

names → domains → structure (the `forbidden` invariants of `knob_space`) → graph knob domains →
same outputs by the reference model (the checksum twin) → same outputs and trace invariants of a
real run of the twin. It never lets a candidate through because a check could not run: a check
that cannot run on a graph (kernels the reference model does not know) is skipped and says so in
`Verdict.checks`; the structure checks alone then decide, and they allow no edit but the knobs'.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .._tomii import GraphError
from ..check.reference import KERNELS, Expected, ModelError, expected_run, fnv1a
from ..knobs import knob_space, load_graph
from .space import GRAPH_FIELDS, SCHEDULER, Candidate, Dimension, TuneSpace

__all__ = [
    "TWIN_KERNELS",
    "Verdict",
    "Verifier",
    "checksum_twin",
    "domain_problem",
    "output_problems",
    "structure_problems",
    "verify_run",
]

#: The kernels the twin replaces by `checksum` (they compute nothing a run can compare).
TWIN_KERNELS = ("spin", "noop", "touch")
#: Frames the reference model computes per comparison (the frame is in every checksum's seed).
REFERENCE_FRAMES = 2
#: A run of the twin that verifies a candidate: its runner, called as
#: runner(graph, scheduler, sched_opts, run_options, frames) → problems (empty: it passed).
Runner = Callable[[dict[str, Any], str, dict[str, str], dict[str, Any], int], list[str]]


@dataclass(frozen=True)
class Verdict:
    """What the verifier decided: `valid`; for a rejection the `invariant` it broke ("names",
    "domain", "fixed_run_knobs", "fixed_structure", "fixed_edges", "fixed_barriers",
    "fixed_factors", "fixed_graph", "same_outputs", "run": the verification run failed,
    "proposal": it could not be read) and the `reason`; `checks`: what
    ran ("reference: skipped (...)" when a check could not); `graph`: the candidate's graph."""

    valid: bool
    invariant: str = ""
    reason: str = ""
    checks: tuple[str, ...] = ()
    graph: dict[str, Any] | None = None


# ---------------------------------------------------------------------------------------------
# Domains


def domain_problem(dimension: Dimension, value: Any, *, workers: int | None) -> str:
    """Why `value` is outside the knob's domain ("" when it is inside); a worker range is also
    checked against `workers` when given. A domain narrowed by the run (a choice of values
    "narrowed_from" the catalog's) holds only those values."""
    domain = dimension.domain
    kind = domain.get("kind")
    wider = domain.get("narrowed_from")
    if isinstance(wider, dict) and wider.get("kind") == "worker_range":
        problem = _range_problem(value, workers)
        if problem:
            return problem
    if kind == "bool":
        return "" if isinstance(value, bool) else f"{value!r} is not true or false"
    if kind == "int":
        if isinstance(value, bool) or not isinstance(value, int):
            return f"{value!r} is not an integer"
        if not domain["min"] <= value <= domain["max"]:
            return f"{value} is outside its domain {domain['min']}..={domain['max']}"
        return ""
    if kind == "choice":
        values = domain["values"]
        if any(value == v and type(value) is type(v) for v in values):
            return ""
        return f"{value!r} is not one of {', '.join(map(repr, values))}"
    if kind == "worker_range":
        return _range_problem(value, workers)
    return f"its domain ({kind}) is not one a candidate can hold"


def _range_problem(value: Any, workers: int | None) -> str:
    if value is None:
        return ""
    bounds = value.split("-") if isinstance(value, str) else []
    if len(bounds) != 2 or not all(b.isdigit() for b in bounds) or int(bounds[0]) > int(bounds[1]):
        return f"{value!r} is not a worker range 'lo-hi' (or None: any worker)"
    if workers is not None and int(bounds[1]) >= workers:
        return (
            f"worker range {value!r} reaches beyond the run's {workers} worker(s) (0-{workers - 1})"
        )
    return ""


# ---------------------------------------------------------------------------------------------
# Structure


def _invariants(graph: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    return {f["invariant"]: f for f in knob_space(dict(graph))["forbidden"]}


def _edge_text(edge: Mapping[str, Any]) -> str:
    where = "" if edge["in"] == "args" else f" (in {edge['in']})"
    return f"the {edge['type']} of node {edge['node']!r} on {edge['predecessor']!r}{where}"


def _edge_problems(was: list[Any], now: list[Any], invariant: str) -> list[tuple[str, str]]:
    problems = []
    for edge in was:
        if edge not in now:
            verb = (
                "dropped or narrowed" if invariant == "fixed_barriers" else "removed or reselected"
            )
            problems.append((invariant, f"{_edge_text(edge)} is {verb}"))
    if invariant == "fixed_edges":
        problems += [(invariant, f"{_edge_text(e)} is added") for e in now if e not in was]
    return problems


def _stripped(node: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in node.items() if k not in GRAPH_FIELDS}


def _field_problems(original: Mapping[str, Any], graph: Mapping[str, Any]) -> list[tuple[str, str]]:
    problems = []
    for was, now in zip(original["nodes"], graph["nodes"]):
        a, b = _stripped(was), _stripped(now)
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                change = f"{json.dumps(a.get(key))} → {json.dumps(b.get(key))}"
                problems.append(("fixed_structure", f"node {was['name']!r}: {key} {change}"))
    if (original.get("post_nodes") or []) != (graph.get("post_nodes") or []):
        problems.append(("fixed_structure", "the post-nodes are edited: they are not tuned"))
    if original.get("initializations") != graph.get("initializations"):
        problems.append(("fixed_factors", "the initializations are edited: they are data sizes"))
    for key in sorted((set(original) | set(graph)) - {"name", "nodes", "post_nodes"}):
        if key != "initializations" and original.get(key) != graph.get(key):
            problems.append(("fixed_structure", f"the graph's field {key!r} is edited"))
    return problems


def structure_problems(
    original: Mapping[str, Any], graph: Mapping[str, Any]
) -> list[tuple[str, str]]:
    """The `forbidden` structure invariants `graph` breaks against `original`, as (invariant,
    reason): nodes and post-nodes, barriers, edges, factors, then every other field of a node
    but its priority, worker range and group size."""
    try:
        was, now = _invariants(original), _invariants(graph)
    except GraphError as error:
        return [("fixed_structure", str(error))]
    names = ("nodes", "post_nodes")
    if any(was["fixed_structure"][k] != now["fixed_structure"][k] for k in names):
        return [("fixed_structure", _renamed(was["fixed_structure"], now["fixed_structure"]))]
    problems = _edge_problems(was["fixed_barriers"]["edges"], now["fixed_barriers"]["edges"],
                              "fixed_barriers")  # fmt: skip
    problems += _edge_problems(was["fixed_edges"]["edges"], now["fixed_edges"]["edges"],
                               "fixed_edges")  # fmt: skip
    for node, factor in was["fixed_factors"]["factors"].items():
        if now["fixed_factors"]["factors"].get(node) != factor:
            changed = now["fixed_factors"]["factors"].get(node)
            problems.append(("fixed_factors", f"node {node!r}: factor {factor!r} → {changed!r}"))
    return problems + _field_problems(original, graph)


def _renamed(was: Mapping[str, Any], now: Mapping[str, Any]) -> str:
    for key in ("nodes", "post_nodes"):
        gone = [n for n in was[key] if n not in now[key]]
        new = [n for n in now[key] if n not in was[key]]
        if gone:
            return f"{key.replace('_', '-')[:-1]} {gone[0]!r} is removed or renamed"
        if new:
            return f"{key.replace('_', '-')[:-1]} {new[0]!r} is added"
        if was[key] != now[key]:
            return f"the {key.replace('_', '-')} are reordered"
    return "the structure changed"


# ---------------------------------------------------------------------------------------------
# Same outputs


def checksum_twin(graph: Mapping[str, Any]) -> dict[str, Any]:
    """`graph` with every spin, noop and touch node computing `checksum` of its arguments,
    preceded by a word naming the kernel it replaces: a twin whose outputs hash everything the
    graph computes from (arguments, edges' results, frame, instance), so that two graphs whose
    twins' outputs agree compute the same. ModelError when a kernel is one the reference model
    does not know (a user's plugin, a Python kernel)."""
    twin = copy.deepcopy(dict(graph))
    for node in [*(twin.get("nodes") or []), *(twin.get("post_nodes") or [])]:
        function = node.get("function")
        if function in TWIN_KERNELS:
            node["function"] = "checksum"
            node["args"] = [fnv1a(str(function).encode()) >> 1, *(node.get("args") or [])]
        elif function not in KERNELS:
            raise ModelError(f"node {node.get('name')!r}: kernel {function!r} is not synthetic")
        condition = node.get("condition")
        if isinstance(condition, dict) and condition.get("function") not in KERNELS:
            raise ModelError(f"node {node.get('name')!r}: its condition's kernel is not synthetic")
    return twin


def output_problems(original: Expected, candidate: Expected, *, most: int = 3) -> list[str]:
    """Where two expected runs differ: the instances (then post-nodes) whose values do."""
    problems = []
    for frame, (was, now) in enumerate(zip(original.values, candidate.values)):
        for task, value in was.items():
            if now.get(task) != value:
                node, instance = task
                problems.append(
                    f"node {node!r}[{instance}] frame {frame} computes {now.get(task)!r} "
                    f"where the original computes {value!r}"
                )
                if len(problems) >= most:
                    return problems
    if original.post_outputs != candidate.post_outputs:
        problems.append("the post-nodes compute other values than the original's")
    return problems


def verify_run(
    graph: dict[str, Any],
    scheduler: str,
    sched_opts: dict[str, str],
    run_options: dict[str, Any],
    frames: int,
    dylibs: Sequence[str],
) -> list[str]:
    """A run of the twin `graph`: its outputs against the reference model's, its trace against
    the invariants (tomii.check.invariants, as the sweep checks every trial). Runs wherever it is
    called: the tuner calls it in its child process."""
    from ..experiments.sweep import trace_problems
    from ..run import run_graph

    result = run_graph(
        graph, dylibs=list(dylibs), scheduler=scheduler, sched_opts=sched_opts, frames=frames,
        trace=True, collect_outputs=True, **run_options,
    )  # fmt: skip
    workers = int(run_options.get("workers", 1))
    expected = expected_run(graph, frames=frames, workers=workers)
    problems = [
        f"frame {frame}: the run's outputs differ from the reference model's"
        for frame, (got, want) in enumerate(zip(result.outputs, expected.outputs))
        if got != want
    ]
    if len(result.outputs) != len(expected.outputs):
        problems.append(
            f"{len(result.outputs)} frames of outputs, {len(expected.outputs)} expected"
        )
    if result.post_outputs != expected.post_outputs:
        problems.append("the post-nodes' outputs differ from the reference model's")
    assert result.trace is not None
    return problems + trace_problems(
        graph,
        result.trace,
        result.node_names,
        result.report,
        frames=frames,
        slots=int(run_options.get("slots", 1)),
        workers=workers,
    )


# ---------------------------------------------------------------------------------------------
# The verifier


class Verifier:
    """Judges the candidates of one space. `runner`: how a run of the twin is made (None: no
    run, as for a synthetic objective); `frames`: the frames of that run."""

    def __init__(self, space: TuneSpace, *, runner: Runner | None = None, frames: int = 3):
        self.space = space
        self.runner = runner
        self.frames = frames
        self.forbidden = {f["invariant"]: f for f in space.space["forbidden"]}
        self._expected: dict[int, Expected | str] = {}
        self._runs: dict[str, tuple[str, list[str]]] = {}

    def check(self, candidate: Candidate) -> Verdict:
        if candidate.problem:
            return Verdict(False, "proposal", candidate.problem)
        found = self._name_problem(candidate.knobs)
        if found:
            return Verdict(False, *found, checks=("names",))
        knobs = self.space.complete(candidate.knobs)
        workers = int(self.space.value(knobs, "workers")) if self._has("workers") else 1
        for dimension in self.space.active(knobs):
            problem = domain_problem(dimension, knobs[dimension.name], workers=workers)
            if problem:
                return Verdict(
                    False, "domain", f"{dimension.name}: {problem}", ("names", "domains")
                )
        if self.space.graph is None:
            if candidate.graph is not None:
                return Verdict(False, "fixed_graph", "the space has no graph to edit")
            return Verdict(True, checks=("names", "domains"))
        return self._check_graph(candidate, knobs, workers)

    def _has(self, name: str) -> bool:
        return name in self.space.by_name or name in self.space.held

    def _name_problem(self, knobs: Mapping[str, Any]) -> tuple[str, str] | None:
        scheduler = self.space.value(knobs, SCHEDULER) if self._has(SCHEDULER) else None
        held = self.forbidden["fixed_run_knobs"]["knobs"]
        excluded = {e["name"]: e["reason"] for e in self.space.space.get("excluded") or []}
        for name in knobs:
            dimension = self.space.by_name.get(name)
            if dimension is not None and dimension.scheduler not in (None, scheduler):
                return "names", (
                    f"{name} is an option of {dimension.scheduler}; the candidate runs {scheduler}"
                )
            if dimension is not None:
                continue
            if name in self.space.held:
                if knobs[name] == self.space.held[name]:
                    continue
                return "names", f"{name} is held at {self.space.held[name]!r} in this run"
            if name in held:
                return "fixed_run_knobs", f"{name} holds one value across trials: it is no knob"
            if name in excluded:
                return "names", f"{name} is excluded from the space: {excluded[name]}"
            return "names", f"{name} is no knob of the space"
        return None

    def _check_graph(self, candidate: Candidate, knobs: dict[str, Any], workers: int) -> Verdict:
        assert self.space.graph is not None
        checks = ["names", "domains", "structure"]
        if candidate.graph is not None:
            if "fixed_graph" in self.forbidden:
                return Verdict(False, "fixed_graph", "the graph is not edited in this space")
            try:
                proposed = load_graph(dict(candidate.graph))
            except GraphError as error:
                return Verdict(False, "fixed_structure", str(error), tuple(checks))
            graph = self.space.apply(candidate.knobs, proposed)
        else:
            graph = self.space.apply(knobs)
        problems = structure_problems(self.space.graph, graph)
        if problems:
            return Verdict(False, *problems[0], tuple(checks), graph)
        problem = self._graph_knob_problem(graph, workers)
        if problem:
            return Verdict(False, "domain", problem, tuple(checks), graph)
        return self._check_outputs(graph, knobs, workers, checks)

    def _graph_knob_problem(self, graph: dict[str, Any], workers: int) -> str:
        """Each graph knob of `graph` within its domain; an unsearched one as the original has it."""
        original = {
            k["name"]: k["default"] for k in self.space.space["knobs"] if k["kind"] == "graph"
        }
        try:
            now = {
                k["name"]: k["default"] for k in knob_space(graph)["knobs"] if k["kind"] == "graph"
            }
        except GraphError as error:
            return str(error)
        for name, value in now.items():
            dimension = self.space.by_name.get(name)
            if dimension is None:
                if value != original.get(name):
                    return f"{name} is not searched in this run: it stays {original.get(name)!r}"
                continue
            problem = domain_problem(dimension, value, workers=workers)
            if problem:
                return f"{name}: {problem}"
        return ""

    def _check_outputs(
        self, graph: dict[str, Any], knobs: dict[str, Any], workers: int, checks: list[str]
    ) -> Verdict:
        assert self.space.graph is not None
        baseline = self.space.baseline()
        base_workers = int(self.space.value(baseline, "workers")) if self._has("workers") else 1
        original = self._original(base_workers)
        if isinstance(original, str):
            checks.append(f"reference: skipped ({original})")
            return Verdict(True, checks=tuple(checks), graph=graph)
        try:
            twin = checksum_twin(graph)
            expected = expected_run(twin, frames=REFERENCE_FRAMES, workers=workers)
        except ModelError as error:
            return Verdict(False, "same_outputs", f"reference model: {error}", tuple(checks), graph)
        checks.append("reference")
        differences = output_problems(original, expected)
        if differences:
            return Verdict(False, "same_outputs", "; ".join(differences), tuple(checks), graph)
        if self.runner is None:
            return Verdict(True, checks=tuple(checks), graph=graph)
        checks.append("run")
        invariant, problems = self._run(twin, knobs)
        if problems:
            quoted = "; ".join(problems[:3])
            return Verdict(False, invariant, f"verification run: {quoted}", tuple(checks), graph)
        return Verdict(True, checks=tuple(checks), graph=graph)

    def _original(self, workers: int) -> Expected | str:
        """The original's twin's expected run, or why the model cannot compute one."""
        if workers not in self._expected:
            assert self.space.graph is not None
            try:
                twin = checksum_twin(self.space.graph)
                self._expected[workers] = expected_run(
                    twin, frames=REFERENCE_FRAMES, workers=workers
                )
            except ModelError as error:
                self._expected[workers] = str(error)
        return self._expected[workers]

    def _run(self, twin: dict[str, Any], knobs: dict[str, Any]) -> tuple[str, list[str]]:
        """The twin's run with the candidate's runtime knobs: "same_outputs" and what it found,
        or "run" and why it failed. Remembered: a candidate seen before is not run again."""
        scheduler, options, run_options = self.space.run_options(knobs)
        key = json.dumps([twin, scheduler, options, run_options], sort_keys=True, default=str)
        if key not in self._runs:
            assert self.runner is not None
            try:
                found = self.runner(twin, scheduler, options, run_options, self.frames)
                self._runs[key] = ("same_outputs", found)
            except Exception as error:  # noqa: BLE001 (a failed run is the candidate's reason)
                self._runs[key] = ("run", [f"{type(error).__name__}: {error}"])
        return self._runs[key]
