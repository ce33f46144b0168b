"""The candidates of a tuning run: the dimensions a strategy searches (the knobs of `knob_space`,
plus the scheduler and each installed scheduler's declared options), the knobs it holds, and how a
candidate becomes a graph and the options of a run.

Nothing here runs a graph or judges a candidate: the verifier (verifier.py) does that, and a value
this module produces is only a proposal until it has.
"""

from __future__ import annotations

import copy
import fnmatch
import functools
import json
import os
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ..errors import ConfigError
from ..knobs import SPACE_VERSION, enumerate_domain, knob_space
from ..scheduler import importable_policy

__all__ = ["Candidate", "Dimension", "TuneSpace", "build_space", "scheduler_catalog"]

#: The name of the scheduler dimension, and the prefix of its options' ("sched_opts.NAME.OPTION").
SCHEDULER = "scheduler"
SCHED_OPTS = "sched_opts"
#: The graph fields that knobs edit: everything else of a node is what the graph computes.
GRAPH_FIELDS = ("priority", "use_workers", "group_size")
#: The highest power of two an int scheduler option is searched up to (its domain may go further).
OPTION_SEARCH_MAX = 1024


@dataclass(frozen=True)
class Dimension:
    """One searched knob. `values`: the points a strategy picks from; `domain`: what a candidate
    may legally hold (wider than `values` for a narrowed int knob); `scheduler`: for a scheduler
    option, the scheduler it belongs to (it exists only when that scheduler runs)."""

    name: str
    kind: str  # "cli", "graph", "scheduler" or "sched_opt"
    default: Any
    values: tuple[Any, ...]
    domain: dict[str, Any]
    description: str = ""
    search_hint: str = ""
    scheduler: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "kind": self.kind,
            "default": self.default,
            "values": list(self.values),
            "domain": self.domain,
            "description": self.description,
            "search_hint": self.search_hint,
            "when": None if self.scheduler is None else {SCHEDULER: self.scheduler},
        }


@dataclass(frozen=True)
class Candidate:
    """A proposal: knob values (those left out hold the baseline's), optionally a whole new graph
    (an agent's edit), a note from whoever proposed it, and `problem`: why the proposal could
    not even be read (an agent that crashed or answered garbage); the verifier rejects it."""

    knobs: Mapping[str, Any] = field(default_factory=dict)
    graph: Mapping[str, Any] | None = None
    note: str = ""
    problem: str = ""


@dataclass
class TuneSpace:
    """What a tuning run searches: `dimensions`, the `held` knobs (name → the value every trial
    uses), the versioned `space` of `knob_space`, and the original `graph` (None: runtime knobs
    only)."""

    dimensions: list[Dimension]
    held: dict[str, Any]
    space: dict[str, Any]
    graph: dict[str, Any] | None
    by_name: dict[str, Dimension] = field(init=False)

    def __post_init__(self) -> None:
        self.by_name = {d.name: d for d in self.dimensions}

    def value(self, knobs: Mapping[str, Any], name: str) -> Any:
        """The value of `name` in the complete candidate `knobs`, held or searched."""
        if name in knobs:
            return knobs[name]
        if name in self.held:
            return self.held[name]
        return self.by_name[name].default

    def active(self, knobs: Mapping[str, Any]) -> list[Dimension]:
        """The dimensions that exist for `knobs`: all but the options of other schedulers."""
        scheduler = self.value(knobs, SCHEDULER)
        return [d for d in self.dimensions if d.scheduler in (None, scheduler)]

    def complete(self, proposal: Mapping[str, Any]) -> dict[str, Any]:
        """`proposal` with every active dimension it leaves out at its default."""
        knobs = dict(proposal)
        for dimension in self.active(knobs):
            knobs.setdefault(dimension.name, dimension.default)
        return knobs

    def baseline(self) -> dict[str, Any]:
        return self.complete({})

    def key(self, knobs: Mapping[str, Any], graph: Mapping[str, Any] | None = None) -> str:
        """A text that two candidates share exactly when they are the same."""
        return json.dumps([self.complete(knobs), graph], sort_keys=True, default=str)

    def run_options(self, knobs: Mapping[str, Any]) -> tuple[str, dict[str, str], dict[str, Any]]:
        """The scheduler, its options (as text) and the other run options of `knobs`."""
        scheduler = str(self.value(knobs, SCHEDULER))
        prefix = f"{SCHED_OPTS}.{scheduler}."
        named = [n for n in self.held if n.startswith(prefix)]
        named += [d.name for d in self.dimensions if d.scheduler == scheduler]
        options = {n.removeprefix(prefix): _option_text(self.value(knobs, n)) for n in named}
        cli = [k["name"] for k in self.space["knobs"] if k["kind"] == "cli"]
        return scheduler, options, {name: self.value(knobs, name) for name in cli}

    def apply(self, knobs: Mapping[str, Any], graph: Mapping[str, Any] | None = None) -> Any:
        """The graph `knobs` describe: `graph` (default: the original) with its graph knobs
        set. A value equal to the node's current one leaves the field as it is written."""
        base = self.graph if graph is None else graph
        if base is None:
            return None
        edited = copy.deepcopy(dict(base))
        nodes = {node["name"]: node for node in edited.get("nodes") or [] if isinstance(node, dict)}
        for dimension in self.dimensions:
            if dimension.kind != "graph" or dimension.name not in knobs:
                continue
            node_name, field_name = dimension.name.rsplit(".", 1)
            node = nodes.get(node_name)
            if node is None:
                continue
            _set_field(node, field_name, knobs[dimension.name])
        return edited

    def to_json(self) -> dict[str, Any]:
        """The space as the agent protocol sends it (python/tomii/tune/README.md)."""
        return {
            "dimensions": [d.to_json() for d in self.dimensions],
            "held": self.held,
            "baseline": self.baseline(),
            "knob_space": self.space,
        }


def _set_field(node: dict[str, Any], name: str, value: Any) -> None:
    current = {
        "priority": node.get("priority", "normal"),
        "use_workers": node.get("use_workers"),
        "group_size": node.get("group_size", 1),
    }[name]
    if _same(current, value, name):
        return
    if value is None:
        node.pop(name, None)
    else:
        node[name] = value


def _same(current: Any, value: Any, name: str) -> bool:
    if name == "priority":
        words = {"low": -1, "normal": 0, "high": 1}
        return bool(words.get(current, current) == words.get(value, value))
    if name == "use_workers" and isinstance(current, int) and not isinstance(current, bool):
        current = f"{current}-{current}"
    return bool(current == value)


def _option_text(value: Any) -> str:
    return str(value).lower() if isinstance(value, bool) else str(value)


# ---------------------------------------------------------------------------------------------
# The schedulers and their options


@functools.lru_cache(maxsize=8)
def _catalog(
    search_path: str,
) -> tuple[tuple[str, tuple[tuple[str, str, str, str, str], ...]], ...]:
    # The runtime prints the list to its own stdout: a child process's is the one to read.
    script = "import sys; from tomii.cli import main; sys.exit(main(['schedulers', '--json']))"
    command = [sys.executable, "-c", script]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=True)
        listed = json.loads(done.stdout)
    except (OSError, subprocess.SubprocessError, json.JSONDecodeError) as error:
        raise ConfigError(f"cannot list the installed schedulers (`tomii schedulers`): {error}")
    return tuple(
        (
            entry["name"],
            tuple(
                (o["name"], o["kind"], o["default"], o["domain"], o.get("description", ""))
                for o in entry.get("options") or []
            ),
        )
        for entry in listed
    )


def scheduler_catalog() -> dict[str, list[dict[str, str]]]:
    """Every installed scheduler (`tomii schedulers --json`) → its declared options (name, kind,
    default, domain, description). Read once per `$TOMII_SCHEDULER_PATH`."""
    listed = _catalog(os.environ.get("TOMII_SCHEDULER_PATH", ""))
    keys = ("name", "kind", "default", "domain", "description")
    return {name: [dict(zip(keys, option)) for option in options] for name, options in listed}


def _option_dimension(scheduler: str, option: Mapping[str, str]) -> Dimension:
    """A scheduler option as a dimension: bool → False/True; choice → its words; int "lo..hi" →
    lo and the powers of two above it up to OPTION_SEARCH_MAX (the domain stays lo..hi)."""
    kind, text = option["kind"], option["domain"]
    name = f"{SCHED_OPTS}.{scheduler}.{option['name']}"
    common = {"description": option["description"], "scheduler": scheduler}
    hint = f"an option of {scheduler}; only exists when scheduler = {scheduler!r}"
    if kind == "bool":
        default = option["default"].strip().lower() == "true"
        domain: dict[str, Any] = {"kind": "bool"}
        return Dimension(
            name, "sched_opt", default, (False, True), domain, search_hint=hint, **common
        )
    if kind == "int" and ".." in text:
        low, high = (int(bound) for bound in text.split(".."))
        points = [low] + [2**k for k in range(64) if low < 2**k <= min(high, OPTION_SEARCH_MAX)]
        domain = {"kind": "int", "min": low, "max": high, "scale": "pow2"}
        default_int = int(option["default"])
        return Dimension(name, "sched_opt", default_int, tuple(points), domain, search_hint=hint,
                         **common)  # fmt: skip
    words = tuple(text.split("|"))
    domain = {"kind": "choice", "values": list(words)}
    return Dimension(
        name, "sched_opt", option["default"], words, domain, search_hint=hint, **common
    )


def _scheduler_dimensions() -> list[Dimension]:
    catalog = scheduler_catalog()
    if not catalog:
        raise ConfigError(
            "no scheduler is installed to search: build them (cargo build --workspace) or add "
            "their directory to $TOMII_SCHEDULER_PATH"
        )
    names = tuple(sorted(catalog))
    default = "fifo" if "fifo" in catalog else names[0]
    dimensions = [
        Dimension(
            SCHEDULER,
            "scheduler",
            default,
            names,
            {"kind": "choice", "values": list(names)},
            "The scheduler, by name (tomii schedulers)",
            "categorical: try each installed scheduler first, then tune its options",
        )
    ]
    for name in names:
        dimensions += [_option_dimension(name, option) for option in catalog[name]]
    return dimensions


# ---------------------------------------------------------------------------------------------
# The space of one run


def _machine_values(name: str, domain: Mapping[str, Any]) -> tuple[Any, ...] | None:
    """The search points of the knobs whose sensible range is the machine's: workers 1..cores,
    slots the powers of two up to 4 × cores (their domains stay the catalog's)."""
    cores = os.cpu_count() or 1
    if name == "workers":
        return tuple(range(max(1, domain["min"]), min(domain["max"], cores) + 1))
    if name == "slots":
        return tuple(v for v in enumerate_domain(dict(domain)) if v <= 4 * cores)
    return None


def _knob_dimension(knob: Mapping[str, Any], max_workers: int) -> Dimension:
    domain = dict(knob["domain"])
    values = _machine_values(knob["name"], domain) if knob["kind"] == "cli" else None
    if values is None:
        if domain["kind"] == "worker_range":
            values = tuple(enumerate_domain({**domain, "workers": max_workers}))
        else:
            values = tuple(enumerate_domain(domain))
    return Dimension(
        knob["name"],
        knob["kind"],
        knob["default"],
        values,
        domain,
        knob.get("description", ""),
        knob.get("search_hint", ""),
    )


def _narrowed(dimension: Dimension, values: Sequence[Any]) -> Dimension:
    from .verifier import domain_problem

    listed = tuple(values)
    if not listed:
        raise ConfigError(f"tune: knob {dimension.name!r} is given no values to search")
    for value in listed:
        problem = domain_problem(dimension, value, workers=None)
        if problem:
            raise ConfigError(f"tune: knob {dimension.name!r}: {problem}")
    default = dimension.default if dimension.default in listed else listed[0]
    # The run's domain is what it searches: a candidate outside the list is rejected too.
    domain = {"kind": "choice", "values": list(listed), "narrowed_from": dimension.domain}
    return Dimension(
        dimension.name,
        dimension.kind,
        default,
        listed,
        domain,
        dimension.description,
        dimension.search_hint,
        dimension.scheduler,
    )


def _most_workers(space: Mapping[str, Any], knobs: Mapping[str, Any] | None) -> int:
    """The most workers a candidate can have: what worker ranges are enumerated for."""
    knob = next((k for k in space["knobs"] if k["name"] == "workers"), None)
    if knob is None:
        return 1
    wanted = None if knobs is None else knobs.get("workers", knob["default"])
    if isinstance(wanted, (list, tuple)) and wanted:
        return int(max(wanted))
    if isinstance(wanted, int) and not isinstance(wanted, bool):
        return wanted
    return int(max(_machine_values("workers", knob["domain"]) or (1,)))


def build_space(
    graph: dict[str, Any] | None,
    space: Mapping[str, Any] | None,
    knobs: Mapping[str, Any] | None,
) -> TuneSpace:
    """The space of a tuning run: `space` (default: `knob_space(graph)`) and the scheduler
    dimensions, selected by `knobs` (None: search everything; else name or glob pattern → None
    to search its values, a list to search those, any other value to hold it there; what no
    entry names is held at its default)."""
    chosen = dict(space) if space is not None else knob_space(graph)
    if chosen.get("version") != SPACE_VERSION:
        raise ConfigError(
            f"tune: the space has version {chosen.get('version')!r}; this tuner reads version "
            f"{SPACE_VERSION} (tomii.knob_space)"
        )
    wants_schedulers = knobs is None or any(
        fnmatch.fnmatchcase(name, pattern)
        for pattern in knobs
        for name in (SCHEDULER, f"{SCHED_OPTS}.x.y")
    )
    every = [_knob_dimension(k, _most_workers(chosen, knobs)) for k in chosen["knobs"]]
    if wants_schedulers:
        every += _scheduler_dimensions()
    names = [d.name for d in every]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ConfigError(f"tune: two knobs are called {repeated[0]!r}")
    return _select(every, chosen, graph, knobs)


def _select(
    every: list[Dimension],
    space: dict[str, Any],
    graph: dict[str, Any] | None,
    knobs: Mapping[str, Any] | None,
) -> TuneSpace:
    if knobs is None:
        return TuneSpace(every, {}, space, graph)
    # Unselected runtime knobs and the scheduler hold their defaults; graph knobs stay as the
    # graph writes them, scheduler options as the scheduler defaults them.
    held: dict[str, Any] = {
        d.name: d.default
        for d in every
        if d.kind in ("cli", "scheduler") and not any(fnmatch.fnmatchcase(d.name, p) for p in knobs)
    }
    if not any(d.name == SCHEDULER for d in every):
        held[SCHEDULER] = "fifo"
    searched: list[Dimension] = []
    matched: set[str] = set()
    for dimension in every:
        patterns = [p for p in knobs if fnmatch.fnmatchcase(dimension.name, p)]
        if not patterns:
            continue
        pattern = patterns[0] if dimension.name not in knobs else dimension.name
        matched.add(pattern)
        wanted = knobs[pattern]
        if wanted is None:
            searched.append(dimension)
        elif isinstance(wanted, (list, tuple)):
            searched.append(_narrowed(dimension, wanted))
        elif dimension.name == SCHEDULER and (policy := importable_policy(wanted, "tune")):
            # A Python policy, held: its trials run it by its import path, as a sweep does.
            held[SCHEDULER] = policy[0]
        else:
            from .verifier import domain_problem

            problem = domain_problem(dimension, wanted, workers=None)
            if problem:
                raise ConfigError(f"tune: knob {dimension.name!r} held at {wanted!r}: {problem}")
            held[dimension.name] = wanted
    unknown = sorted(set(knobs) - matched)
    if unknown:
        valid = ", ".join(d.name for d in every)
        raise ConfigError(f"tune: no knob of the space matches {unknown[0]!r}; knobs: {valid}")
    searched = [d for d in searched if d.scheduler is None or _option_live(d, searched, held)]
    return TuneSpace(searched, held, space, graph)


def _option_live(option: Dimension, searched: list[Dimension], held: Mapping[str, Any]) -> bool:
    """Whether a scheduler option can ever be active: its scheduler is searched or held."""
    if SCHEDULER in held:
        return bool(held[SCHEDULER] == option.scheduler)
    schedulers = [d for d in searched if d.name == SCHEDULER]
    return bool(schedulers) and option.scheduler in schedulers[0].values
