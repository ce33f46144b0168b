"""`tomii.gym`: a Gymnasium environment over the simulator, for learned schedulers.

An episode is one `tomii.simulate` run of a graph drawn from `tomii.graphs`, on a background thread,
with a bridge policy (`tomii.Scheduler`) whose `pop` hands each choice to the agent and waits for its
action; `step` returns when the simulator asks again or the run ends. The simulator releases the GIL
while it runs, and only one of the two threads ever works at a time. A trained policy becomes a
`tomii.Scheduler` (`policy_scheduler`) that runs on the real engine unchanged. This module never
leaves an episode's thread behind: `close` and `reset` stop it before returning.
Needs the `gymnasium` package (`pip install 'tomii[gym]'`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

import numpy as np

try:
    import gymnasium
    from gymnasium import spaces
except ImportError as missing:  # an optional dependency: say how to get it
    raise ImportError(
        "tomii.gym needs the gymnasium package: pip install 'tomii[gym]' (or gymnasium>=1.0)"
    ) from missing

from . import graphs
from .errors import ConfigError, TomiiError
from .scheduler import Scheduler, SchedulerInit, Task
from .simulation import simulate

__all__ = [
    "ENV_ID",
    "FAMILIES",
    "TASK_FEATURES",
    "WORKER_FEATURES",
    "PolicyScheduler",
    "SchedulingEnv",
    "policy_scheduler",
]

#: The columns of the observation's "tasks" array, one row per ready task the idle worker may run.
#: `cost_us` is the node's cost estimate as a cost-aware scheduler has it: the host's running mean
#: of the node's durations (`task.cost_ns`), before that the largest mean known (an unmeasured node
#: is taken as expensive, as the shipped critical-path does); `waited_us` is how long the task has
#: been ready; `urgency_us` is `rank × cost_us`, the shipped critical-path's key.
TASK_FEATURES = (
    "node",
    "instance",
    "frame",
    "rank",
    "priority",
    "cost_us",
    "waited_us",
    "urgency_us",
)
#: The columns of the observation's "workers" array, one row per worker: 1 while it runs a task,
#: how long it has run it, and that task's `cost_us`.
WORKER_FEATURES = ("busy", "running_us", "cost_us")

#: An observation: "tasks", "mask", "workers" (arrays) and "worker" (an integer).
Observation = dict[str, Any]
#: The reward kinds `SchedulingEnv` takes.
Reward = Literal["makespan", "latency", "deadline"]
#: What the reward kinds mean, for error messages and documentation.
_REWARDS: Mapping[str, str] = {
    "makespan": "minus the simulated ms elapsed since the last decision (an episode sums to minus "
    "its makespan)",
    "latency": "minus the latency in ms of each frame completed since the last decision",
    "deadline": "minus 1 for each frame completed since the last decision later than deadline_us",
}
#: The bound of every feature's magnitude (µs values beyond it, some 17 minutes, are clipped).
FEATURE_BOUND = 1e9
#: A real-time limit on one scheduler call that an agent's thinking never reaches (one day): the
#: bridge's `pop` waits for the agent as long as it takes.
_AGENT_CALL_TIMEOUT_MS = 86_400_000


def _fork_join(rng: np.random.Generator) -> dict[str, Any]:
    work = graphs.LogNormal(float(rng.uniform(10, 40)), 0.8)
    return graphs.fork_join(
        int(rng.integers(3, 7)),
        int(rng.integers(2, 4)),
        cost={"fork": graphs.Fixed(5), "work": work, "join": graphs.Uniform(5, 60)},
        seed=int(rng.integers(2**31)),
    )


def _layered_random(rng: np.random.Generator) -> dict[str, Any]:
    return graphs.layered_random(
        int(rng.integers(5, 9)),
        int(rng.integers(4, 8)),
        float(rng.uniform(0.15, 0.35)),
        0.3,
        1,
        cost=graphs.LogNormal(float(rng.uniform(10, 40)), 1.2),
        seed=int(rng.integers(2**31)),
    )


def _map_reduce(rng: np.random.Generator) -> dict[str, Any]:
    return graphs.map_reduce(
        int(rng.integers(4, 9)),
        int(rng.integers(2, 5)),
        cost={"map": graphs.Uniform(5, 50), "reduce": graphs.Uniform(10, 120)},
        seed=int(rng.integers(2**31)),
    )


def _wavefront(rng: np.random.Generator) -> dict[str, Any]:
    return graphs.wavefront(
        int(rng.integers(3, 6)),
        int(rng.integers(3, 6)),
        encoding="cell",
        cost=graphs.LogNormal(float(rng.uniform(10, 40)), 0.8),
        seed=int(rng.integers(2**31)),
    )


#: The graph families an episode is drawn from, by name: each draws its shape and its seeded
#: per-node costs (µs, unequal between nodes, so that the order of tasks matters) from the
#: episode's generator.
FAMILIES: Mapping[str, Callable[[np.random.Generator], dict[str, Any]]] = {
    "fork_join": _fork_join,
    "layered_random": _layered_random,
    "map_reduce": _map_reduce,
    "wavefront": _wavefront,
}


#: The id under which `gymnasium.make` makes a `SchedulingEnv` (keywords are its options).
ENV_ID = "tomii/Scheduling-v0"
gymnasium.register(id=ENV_ID, entry_point=f"{__name__}:SchedulingEnv")


class _Abandoned(Exception):
    """Raised in the bridge's `pop` when the episode was closed or reset: it ends the simulation."""


class ReadyTasks:
    """What a policy knows at a decision: the ready tasks, the workers' running tasks, and the
    simulated (or real) clock, which is the latest event the host reported (a push's `ready_ns`, or
    a popped task's start plus its duration): the host reports events in time order, so the latest
    is now. Shared by the environment's bridge and the exported policy, so that both observe alike.
    """

    def __init__(self, workers: int, max_ready: int) -> None:
        self.max_ready = max_ready
        self.ready: list[Task] = []
        self.now_ns = 0
        self.largest_cost_ns = 0
        #: Per worker: (the task it runs, when it started), or None when idle.
        self.running: list[tuple[Task, int] | None] = [None] * workers

    def push(self, tasks: Sequence[Task]) -> None:
        for task in tasks:
            self.ready.append(task)
            self.now_ns = max(self.now_ns, task.ready_ns)
            self.largest_cost_ns = max(self.largest_cost_ns, task.cost_ns)

    def candidates(self, worker: int) -> list[int]:
        """Indexes into `ready` of the first `max_ready` tasks `worker` may run, oldest first."""
        allowed = (i for i, task in enumerate(self.ready) if task.allows(worker))
        return [i for _, i in zip(range(self.max_ready), allowed)]

    def take(self, worker: int, index: int) -> Task:
        task = self.ready.pop(index)
        self.running[worker] = (task, self.now_ns)
        return task

    def completed(self, worker: int, duration_ns: int) -> None:
        started = self.running[worker]
        if started is not None:
            self.now_ns = max(self.now_ns, started[1] + duration_ns)
        self.running[worker] = None

    def cost_us(self, task: Task) -> float:
        return (task.cost_ns or self.largest_cost_ns) / 1000

    def observation(self, worker: int, candidates: Sequence[int]) -> Observation:
        """The observation of `worker`'s decision among `candidates` (indexes into `ready`)."""
        tasks = np.zeros((self.max_ready, len(TASK_FEATURES)), dtype=np.float32)
        mask = np.zeros(self.max_ready, dtype=np.int8)
        for row, index in enumerate(candidates):
            task = self.ready[index]
            cost = self.cost_us(task)
            waited = (self.now_ns - task.ready_ns) / 1000
            tasks[row] = (task.node, task.instance, task.frame, task.rank, task.priority, cost,
                          waited, task.rank * cost)  # fmt: skip
            mask[row] = 1
        states = np.zeros((len(self.running), len(WORKER_FEATURES)), dtype=np.float32)
        for w, started in enumerate(self.running):
            if started is not None:
                task, start = started
                states[w] = (1, (self.now_ns - start) / 1000, self.cost_us(task))
        np.clip(tasks, -FEATURE_BOUND, FEATURE_BOUND, out=tasks)
        np.clip(states, -FEATURE_BOUND, FEATURE_BOUND, out=states)
        return {"tasks": tasks, "mask": mask, "workers": states, "worker": np.int64(worker)}


def observation_space(workers: int, max_ready: int) -> spaces.Dict:
    """The space of `ReadyTasks.observation`."""
    bound = FEATURE_BOUND
    return spaces.Dict(
        {
            "tasks": spaces.Box(-bound, bound, (max_ready, len(TASK_FEATURES)), np.float32),
            "mask": spaces.MultiBinary(max_ready),
            "workers": spaces.Box(-bound, bound, (workers, len(WORKER_FEATURES)), np.float32),
            "worker": spaces.Discrete(workers),
        }
    )


@dataclass
class _Decision:
    """What the simulator's thread hands the agent: a choice to make, and the reward since the
    last one."""

    observation: Observation
    reward: float
    choices: int


@dataclass
class _Handover:
    """The rendezvous of the agent's thread and the simulator's: one side works while the other
    waits. The simulator's thread posts a decision and waits for the action; the agent's waits for
    a decision or the episode's end."""

    condition: threading.Condition = field(default_factory=threading.Condition)
    decision: _Decision | None = None
    action: int | None = None
    finished: bool = False
    abandoned: bool = False
    final_reward: float = 0.0
    error: BaseException | None = None

    def ask(self, decision: _Decision) -> int:
        """(Simulator's thread.) Posts `decision`; returns the agent's action. Raises _Abandoned
        when the episode is given up meanwhile."""
        with self.condition:
            if self.abandoned:
                raise _Abandoned
            self.decision, self.action = decision, None
            self.condition.notify_all()
            self.condition.wait_for(lambda: self.action is not None or self.abandoned)
            if self.action is None:
                raise _Abandoned
            return self.action

    def finish(self, final_reward: float, error: BaseException | None) -> None:
        """(Simulator's thread.) The simulation returned."""
        with self.condition:
            self.finished, self.final_reward, self.error = True, final_reward, error
            self.condition.notify_all()

    def next_decision(self) -> _Decision | None:
        """(Agent's thread.) The next decision, or None once the episode has ended."""
        with self.condition:
            self.condition.wait_for(lambda: self.decision is not None or self.finished)
            decision, self.decision = self.decision, None
            return decision

    def answer(self, action: int) -> None:
        with self.condition:
            self.action = action
            self.condition.notify_all()

    def abandon(self) -> None:
        with self.condition:
            self.abandoned = True
            self.condition.notify_all()


class PolicyScheduler(Scheduler):
    """A policy over `SchedulingEnv`'s observations as a `tomii.Scheduler`: each `pop` builds the
    observation of the worker's choice and runs the row `choose` returns (an invalid row: row 0,
    as in the environment). Subclass it and define `choose` to have a class a sweep can import
    (its constructor must then take no argument), or wrap a function with `policy_scheduler`."""

    needs_timing = True
    #: The rows of an observation (the environment's `max_ready`).
    max_ready: ClassVar[int] = 16

    def __init__(self) -> None:
        self.view = ReadyTasks(0, self.max_ready)

    def choose(self, observation: Observation) -> int:
        """The row of `observation["tasks"]` the idle worker runs."""
        raise NotImplementedError(f"{type(self).__name__} must define choose")

    def create(self, init: SchedulerInit) -> None:
        self.view = ReadyTasks(init.workers, self.view.max_ready)

    def push(self, worker: int | None, tasks: list[Task]) -> None:
        self.view.push(tasks)

    def pop(self, worker: int, max_tasks: int) -> Task | None:
        candidates = self.view.candidates(worker)
        if not candidates:
            return None
        chosen = 0
        if len(candidates) > 1:
            row = int(self.choose(self.view.observation(worker, candidates)))
            chosen = row if 0 <= row < len(candidates) else 0
        return self.view.take(worker, candidates[chosen])

    def task_completed(self, worker: int, task: Task, duration_ns: int) -> None:
        self.view.completed(worker, duration_ns)


class _Bridge(PolicyScheduler):
    """The episode's policy inside the simulator: observes as any `PolicyScheduler`, and its
    `choose` asks the agent. Accumulates the reward between decisions."""

    name = "gym-agent"

    def __init__(self, reward: Reward, deadline_us: float | None, max_ready: int) -> None:
        super().__init__()
        self.view.max_ready = max_ready
        self.handover = _Handover()
        self.reward_kind = reward
        self.deadline_ns = None if deadline_us is None else deadline_us * 1000
        self.reward_since = 0.0
        self.clock_at_last_decision = 0

    def pop(self, worker: int, max_tasks: int) -> Task | None:
        if self.handover.abandoned:
            raise _Abandoned
        return super().pop(worker, max_tasks)

    def choose(self, observation: Observation) -> int:
        choices = int(observation["mask"].sum())
        return self.handover.ask(_Decision(observation, self.collect_reward(), choices))

    def frame_completed(self, frame: int, slot: int, latency_ns: int) -> None:
        if self.reward_kind == "latency":
            self.reward_since -= latency_ns / 1e6
        elif self.reward_kind == "deadline":
            assert self.deadline_ns is not None  # SchedulingEnv requires it for this reward
            self.reward_since -= latency_ns > self.deadline_ns

    def collect_reward(self) -> float:
        """The reward since the last decision (or the episode's start), then reset."""
        if self.reward_kind == "makespan":
            self.reward_since -= (self.view.now_ns - self.clock_at_last_decision) / 1e6
        self.clock_at_last_decision = self.view.now_ns
        reward, self.reward_since = self.reward_since, 0.0
        return reward


class SchedulingEnv(gymnasium.Env[Observation, np.int64]):
    """Scheduling a streaming task graph in the simulator, one decision at a time.

    Each `reset` draws a graph from one of `families` (names of `FAMILIES`) and a simulation seed
    from the episode's generator, then simulates `frames` frames of it on `workers` virtual workers
    with `slots` frames in flight (task durations: the graph's spin arguments, drawn per node by
    its family). Whenever a worker is idle and may run two or more ready tasks, the episode stops
    for a decision. The observation (a Dict): "tasks", the first `max_ready` of those tasks in the
    order they became ready, one row of `TASK_FEATURES` each (zeros past the last), "mask" (1 for a
    row that holds a task), "workers" (a row of `WORKER_FEATURES` per worker) and "worker", the
    idle worker. The action is the row of the task it runs. An action whose row holds no task
    runs row 0 and costs `invalid_action_penalty` of reward (`info["invalid_action"]` says so).

    `reward`: "makespan", "latency" or "deadline" (with `deadline_us`); see `_REWARDS`. Rewards
    are in simulated ms or frame counts. The same seed and actions give the same observations and
    rewards. `info` carries "graph" (its name), "choices" and, at the end, "makespan_us".
    """

    metadata: dict[str, Any] = {"render_modes": []}  # noqa: RUF012 - gymnasium declares it so

    def __init__(
        self,
        *,
        families: Sequence[str] = tuple(FAMILIES),
        workers: int = 2,
        slots: int = 1,
        frames: int = 2,
        max_ready: int = 16,
        reward: Reward = "makespan",
        deadline_us: float | None = None,
        invalid_action_penalty: float = 1.0,
    ) -> None:
        unknown = [name for name in families if name not in FAMILIES]
        if unknown or not families:
            raise ConfigError(f"families {list(families)}: give some of {list(FAMILIES)}")
        for what, value in (("workers", workers), ("slots", slots), ("frames", frames)):
            if value < 1:
                raise ConfigError(f"{what} {value}: give at least 1")
        if max_ready < 2:
            raise ConfigError(f"max_ready {max_ready}: give at least 2 (a choice needs two)")
        if reward not in _REWARDS:
            raise ConfigError(f"reward {reward!r}: give one of {list(_REWARDS)}")
        if (reward == "deadline") != (deadline_us is not None):
            raise ConfigError("deadline_us: give it with reward='deadline', and only then")
        self.families = tuple(families)
        self.run_shape = (workers, slots, frames)
        self.max_ready = max_ready
        self.reward_kind: Reward = reward
        self.deadline_us = deadline_us
        self.invalid_action_penalty = invalid_action_penalty
        self.observation_space = observation_space(workers, max_ready)
        self.action_space = spaces.Discrete(max_ready)
        self._episode: _Episode | None = None

    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        """Ends any episode under way and starts the next, on a graph drawn as the class says."""
        super().reset(seed=seed)
        self._stop_episode()
        family = self.families[int(self.np_random.integers(len(self.families)))]
        graph = FAMILIES[family](self.np_random)
        bridge = _Bridge(self.reward_kind, self.deadline_us, self.max_ready)
        sim_seed = int(self.np_random.integers(2**31))
        self._episode = _Episode.start(graph, bridge, sim_seed, self.run_shape)
        observation, reward, done, info = self._episode.wait()
        # Gymnasium's reset returns no reward: the time before the first decision counts in
        # the first step's.
        self._episode.carried_reward = reward
        if done:
            # Nothing to choose in the whole episode: one step with any action ends it.
            self._episode.pending_end = True
        return observation, info

    def step(self, action: np.int64 | int) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        """Runs the idle worker's chosen task; returns at the next decision or the episode's end."""
        episode = self._episode
        if episode is None or episode.ended:
            raise ConfigError("step: the episode has ended (or never started); call reset first")
        if episode.pending_end:
            episode.ended = True
            reward, episode.carried_reward = episode.carried_reward, 0.0
            return episode.last_observation, reward, True, False, episode.info({})
        invalid = not (
            0 <= int(action) < self.max_ready and episode.last_observation["mask"][action]
        )
        episode.bridge.handover.answer(int(action))
        observation, reward, done, info = episode.wait()
        reward += episode.carried_reward
        episode.carried_reward = 0.0
        if invalid:
            reward -= self.invalid_action_penalty
        info["invalid_action"] = invalid
        return observation, reward, done, False, info

    def close(self) -> None:
        """Stops the episode under way, if any: its thread is gone when this returns."""
        self._stop_episode()
        super().close()

    def _stop_episode(self) -> None:
        if self._episode is not None:
            self._episode.stop()
            self._episode = None

    def policy_scheduler(self, choose: Callable[[Observation], int]) -> PolicyScheduler:
        """The policy `choose` (observation → row, as in this environment) as a `tomii.Scheduler`
        for `run_graph`, `simulate` and the like, observing as this environment does."""
        return policy_scheduler(choose, max_ready=self.max_ready)


class _Episode:
    """One simulation on its thread, and what the agent's side knows of it."""

    def __init__(self, bridge: _Bridge, thread: threading.Thread, graph_name: str) -> None:
        self.bridge = bridge
        self.thread = thread
        self.graph_name = graph_name
        self.last_observation: Observation = {}
        self.pending_end = False
        self.ended = False
        #: Reward earned before the first decision, which the first step returns.
        self.carried_reward = 0.0

    @classmethod
    def start(
        cls, graph: dict[str, Any], bridge: _Bridge, seed: int, shape: tuple[int, int, int]
    ) -> _Episode:
        handover = bridge.handover
        workers, slots, frames = shape

        def simulate_episode() -> None:
            try:
                simulate(
                    graph,
                    scheduler=bridge,
                    workers=workers,
                    slots=slots,
                    frames=frames,
                    pop_batch=1,
                    seed=seed,
                    scheduler_call_timeout_ms=_AGENT_CALL_TIMEOUT_MS,
                )
            except Exception as error:  # noqa: BLE001 - handed to the agent's thread, which raises it
                handover.finish(0.0, None if handover.abandoned else error)
            else:
                handover.finish(bridge.collect_reward(), None)

        thread = threading.Thread(target=simulate_episode, name="tomii.gym episode", daemon=True)
        episode = cls(bridge, thread, str(graph.get("name")))
        thread.start()
        return episode

    def wait(self) -> tuple[Observation, float, bool, dict[str, Any]]:
        """Waits for the next decision or the end: (observation, reward, done, info)."""
        handover = self.bridge.handover
        decision = handover.next_decision()
        if decision is not None:
            self.last_observation = decision.observation
            return (
                decision.observation,
                decision.reward,
                False,
                self.info({"choices": decision.choices}),
            )
        self.thread.join()
        if handover.error is not None:
            raise TomiiError(
                f"the episode's simulation failed: {handover.error}"
            ) from handover.error
        self.ended = True
        view = self.bridge.view
        self.last_observation = view.observation(0, [])
        end = {"makespan_us": view.now_ns / 1000}
        return self.last_observation, handover.final_reward, True, self.info(end)

    def info(self, extra: dict[str, Any]) -> dict[str, Any]:
        return {"graph": self.graph_name, **extra}

    def stop(self) -> None:
        """Gives the episode up: the bridge's next (or current) `pop` raises, which ends the
        simulation; returns once its thread has."""
        self.bridge.handover.abandon()
        self.thread.join()


class _FunctionPolicy(PolicyScheduler):
    """`PolicyScheduler` whose `choose` is a function given to it."""

    name = "learned"

    def __init__(self, choose: Callable[[Observation], int], max_ready: int) -> None:
        super().__init__()
        self.view.max_ready = max_ready
        self.function = choose

    def choose(self, observation: Observation) -> int:
        return self.function(observation)


def policy_scheduler(
    choose: Callable[[Observation], int], *, max_ready: int = 16
) -> PolicyScheduler:
    """`choose` (an observation of `SchedulingEnv` → the row to run) as a `tomii.Scheduler`
    instance, for `run_graph`, `simulate` and anything else that runs in this process."""
    if not callable(choose):
        raise TypeError(f"policy_scheduler: choose must be callable, got {type(choose).__name__}")
    return _FunctionPolicy(choose, max_ready)
