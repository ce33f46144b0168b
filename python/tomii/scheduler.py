"""Schedulers written in Python: subclass `tomii.Scheduler`, define `push` and `pop`, and pass the
class (or an instance) wherever a scheduler's name goes: `run_graph(scheduler=MyPolicy)`,
`Graph.run`, `Session`, `simulate`, `tomii.check.check(MyPolicy)`, `sweep(schedulers=[MyPolicy])`.

The policy runs behind the same scheduler table as any plugin (the binding's bridge,
tomii-py/src/python_scheduler.rs), serialised as a `SERIAL` scheduler is: the host checks every
decision it makes, and an exception, a call that does not return within
`scheduler_call_timeout_ms`, or a wrong answer (a task dropped, popped twice or never pushed) fails
the run naming the policy. Where a run happens in another process (a sweep's or a check's child),
the policy travels by its import path, `module:qualname` (a string of that form is taken wherever
a scheduler's name is). PLUGIN_SCHEDULER_API.md, "Schedulers in Python", has the contract and the
cost per task.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar, Union

from ._tomii import Task
from .errors import PluginError
from .export import stop_at_exit

__all__ = ["NodeSummary", "Scheduler", "SchedulerInit", "Task", "import_path", "policy_spec"]

#: The optional methods whose callbacks the bridge gives the host only when a policy defines them
#: (each costs a Python call per task or frame).
OPTIONAL_METHODS = (
    "push_keep",
    "task_started",
    "task_completed",
    "frame_started",
    "frame_completed",
    "set_knob",
    "stats",
)

#: A policy's import path: `module:qualname`.
_IMPORT_PATH = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_][\w.]*")


@dataclass(frozen=True)
class NodeSummary:
    """One node of the graph, as the scheduler ABI's create block describes it."""

    name: str
    factor: int
    priority: int
    worker_lo: int
    worker_hi: int


@dataclass(frozen=True)
class SchedulerInit:
    """What a policy learns when a run starts (the ABI's `TomiiSchedInit`)."""

    workers: int
    slots: int
    #: Frames the run executes (0: until stopped).
    frames: int
    tasks_per_frame: int
    #: The most tasks that can be pushed and not yet popped at once.
    max_ready: int
    nodes: tuple[NodeSummary, ...]
    #: The run's `sched_opts`.
    options: Mapping[str, str]


class Scheduler:
    """A scheduling policy in Python. Define `push` and `pop`; the other methods are optional
    hooks, called only when a subclass defines them. Tasks are `tomii.Task` views of the ABI's
    descriptors; `pop` hands back the very objects `push` received.

    A class passed as a scheduler is instantiated (without arguments) for every run; an instance
    is used as it is by every run it is given to, and `create` is the place to reset its state.
    Reports, errors and sweep rows call the policy by the `name` its class sets, or by its class
    name. `needs_timing = True` asks the host to measure `ready_ns` and `cost_ns` even when task
    timing is off.
    """

    name: ClassVar[str] = ""
    needs_timing: ClassVar[bool] = False

    def create(self, init: SchedulerInit) -> None:
        """A run starts: `init` describes it. Called before anything else of the run."""

    def push(self, worker: int | None, tasks: list[Task]) -> None:
        """`tasks` became ready; `worker` made them ready (None: the host, for a frame's roots).
        Keep them: each must come out of `pop` exactly once."""
        raise NotImplementedError(f"{type(self).__name__} must define push")

    def pop(self, worker: int, max_tasks: int) -> Task | Sequence[Task] | None:
        """Work for `worker`: a task it may run (`task.allows(worker)`), a list of at most
        `max_tasks` of them, or None when there is nothing for it now (the host parks it until
        the next push)."""
        raise NotImplementedError(f"{type(self).__name__} must define pop")

    def push_keep(self, worker: int, tasks: list[Task]) -> int | None:
        """Optional: `push`, for the tasks `worker`'s completion made ready just before it asks
        for work; return the index of one of them to run it on `worker` next without queueing
        it, or None to queue them all."""
        raise NotImplementedError

    def task_started(self, worker: int, task: Task) -> None:
        """Optional: `task`, popped, is about to run on `worker`."""

    def task_completed(self, worker: int, task: Task, duration_ns: int) -> None:
        """Optional: `task` ran on `worker` for `duration_ns`."""

    def frame_started(self, frame: int, slot: int) -> None:
        """Optional: `frame` starts in `slot`, before its roots are pushed."""

    def frame_completed(self, frame: int, slot: int, latency_ns: int) -> None:
        """Optional: `frame` in `slot` completed after `latency_ns`."""

    def set_knob(self, key: str, value: str) -> None:
        """Optional: change an option while running (`Session.set_scheduler_option`); raise to
        refuse, with a message the caller gets."""

    def stats(self) -> Any:
        """Optional: figures for the report's `scheduler.stats` (anything `json.dumps` takes)."""
        return None


#: What names a Python policy where a scheduler is expected.
PolicyLike = Union[type[Scheduler], Scheduler, str, Path]


@dataclass(frozen=True)
class _Spec:
    """A policy as the binding takes it (tomii-py/src/python_scheduler.rs reads these fields)."""

    policy: type[Scheduler] | Scheduler
    name: str
    origin: str
    overrides: tuple[str, ...]
    needs_timing: bool

    def start(
        self,
        run: tuple[int, int, int, int, int],
        nodes: list[tuple[str, int, int, int, int]],
        options: list[tuple[str, str]],
    ) -> Scheduler:
        """The policy of a run that starts, created (the bridge's `create` calls this)."""
        policy = self.policy() if isinstance(self.policy, type) else self.policy
        workers, slots, frames, tasks_per_frame, max_ready = run
        init = SchedulerInit(
            workers=workers,
            slots=slots,
            frames=frames,
            tasks_per_frame=tasks_per_frame,
            max_ready=max_ready,
            nodes=tuple(NodeSummary(*node) for node in nodes),
            options=dict(options),
        )
        policy.create(init)
        return policy


def policy_spec(scheduler: object) -> _Spec | None:
    """The Python policy `scheduler` names (a `Scheduler` subclass, an instance of one, or its
    import path `module:qualname`), ready for the binding; None for a scheduler's name or a
    library's path. Raises TypeError for a class that is no `Scheduler` or lacks push or pop,
    and PluginError for an import path that does not lead to one."""
    if isinstance(scheduler, str) and _IMPORT_PATH.fullmatch(scheduler):
        scheduler = load_policy(scheduler)
    if isinstance(scheduler, (str, Path)):
        return None
    kind = scheduler if isinstance(scheduler, type) else type(scheduler)
    if not issubclass(kind, Scheduler):
        raise TypeError(
            f"scheduler {scheduler!r}: give a scheduler's name, a library's path, or a subclass "
            "of tomii.Scheduler (or an instance of one)"
        )
    missing = [m for m in ("push", "pop") if getattr(kind, m) is getattr(Scheduler, m)]
    if missing:
        raise TypeError(f"policy {kind.__qualname__} does not define {' and '.join(missing)}")
    overrides = tuple(m for m in OPTIONAL_METHODS if getattr(kind, m) is not getattr(Scheduler, m))
    stop_at_exit(getattr(kind, method) for method in ("push", "pop", *overrides))
    return _Spec(
        policy=scheduler,  # type: ignore[arg-type]
        name=policy_name(kind),
        origin=f"python:{import_path(kind)}",
        overrides=overrides,
        needs_timing=bool(kind.needs_timing),
    )


def policy_name(kind: type[Scheduler]) -> str:
    """What reports and rows call a policy: the `name` its class sets, else its class name (a
    subclass does not inherit the name of the policy it changes)."""
    return str(vars(kind).get("name") or kind.__name__)


def import_path(kind: type[Any]) -> str:
    """`module:qualname` of a class, the form in which a policy reaches a child process."""
    return f"{kind.__module__}:{kind.__qualname__}"


def importable_policy(scheduler: object, caller: str) -> tuple[str, str] | None:
    """For a caller that runs the policy in other processes (`caller`: "sweep", "check"): the
    import path and name of the policy class `scheduler` (or of its import path); None when it is
    no Python policy. Raises TypeError for an instance, whose state no other process could have,
    and for a class no other process can import."""
    spec = policy_spec(scheduler)
    if spec is None:
        return None
    if not isinstance(spec.policy, type):
        kind = type(spec.policy).__qualname__
        raise TypeError(
            f"{caller} makes the policy in each of its runs: pass the class {kind}, not an instance"
        )
    if "<locals>" in spec.policy.__qualname__:
        raise TypeError(
            f"{caller} runs policy {spec.policy.__qualname__} in other processes, which import it "
            "by module and name: define it at the top level of a module or script"
        )
    return import_path(spec.policy), spec.name


def load_policy(path: str) -> type[Scheduler]:
    """The policy class at the import path `module:qualname`. A class of `__main__` is found in
    the parent's script when this process is one of its children (`tomii.isolation`)."""
    module_name, _, qualname = path.partition(":")
    try:
        if module_name == "__main__":
            from .isolation import import_parent_script

            found: Any = import_parent_script(f"policy {qualname} (defined in the parent's script)")
        else:
            found = importlib.import_module(module_name)
        for part in qualname.split("."):
            found = getattr(found, part)
    except (ImportError, AttributeError) as error:
        raise PluginError(
            f"scheduler {path!r}: cannot import the policy ({error}); give `module:Class` of a "
            "tomii.Scheduler subclass importable from sys.path"
        ) from None
    if not (isinstance(found, type) and issubclass(found, Scheduler)):
        raise PluginError(f"scheduler {path!r}: {found!r} is no subclass of tomii.Scheduler")
    return found
