"""The real engine, driven one task at a time against the reference model (a hypothesis
RuleBasedStateMachine).

The run uses one worker and the scripted scheduler (tests/plugins/scripted-scheduler), which hands
the worker only the task the test chooses. Before each choice the test sees every task the engine
has made ready, and checks it against the model: exactly the tasks whose dependencies are done, of
exactly the frames that should be in flight, each in the slot its frame should occupy (frames start
in order as slots free up, a new frame taking the slot of the one that completed). Hypothesis
chooses the order, so tasks complete in adversarial orders across frames and slots are recycled;
at the end the outputs must equal the model's.
"""

from __future__ import annotations

import ctypes
import os
import threading
from typing import Any

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule
from reference import SYNTHETIC, TARGET

import tomii
from tomii.check import ReferenceModel, graphs

SCRIPTED = TARGET / "libtomii_test_scripted_scheduler.so"
CAPACITY = 4096


class ScriptedTask(ctypes.Structure):
    _fields_ = [
        ("frame", ctypes.c_uint64),
        ("node", ctypes.c_uint32),
        ("instance", ctypes.c_uint32),
        ("slot", ctypes.c_uint32),
        ("reserved", ctypes.c_uint32),
    ]


# The same file the engine loads: one library in the process, so one controller.
CONTROL = ctypes.CDLL(str(SCRIPTED))
CONTROL.tomii_scripted_wait.restype = ctypes.c_int64
CONTROL.tomii_scripted_wait.argtypes = [
    ctypes.c_uint64,
    ctypes.POINTER(ScriptedTask),
    ctypes.c_size_t,
]
CONTROL.tomii_scripted_choose.restype = ctypes.c_int32
CONTROL.tomii_scripted_choose.argtypes = [ctypes.c_size_t]
CONTROL.tomii_scripted_expect_run.restype = None

#: (frame, node name, instance, slot) of a pending task.
Pending = tuple[int, str, int, int]


class EngineMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.thread: threading.Thread | None = None
        self.outcome: dict[str, Any] = {}
        self.ended = False

    @initialize(
        graph=graphs(workers=1, max_nodes=5, max_factor=4, max_post_nodes=1),
        slots=st.integers(1, 4),
        frames=st.integers(1, 6),
    )
    def start(self, graph: dict[str, Any], slots: int, frames: int) -> None:
        self.graph, self.slots, self.frames = graph, slots, frames
        self.model = ReferenceModel(graph)
        self.names = [node.name for node in self.model.nodes]
        self.leaders = sorted(set(self.model.leader.values()))
        self.done: set[tuple[int, tuple[str, int]]] = set()
        self.completed_frames: list[int] = []
        self.slot_of = {frame: frame for frame in range(min(slots, frames))}
        CONTROL.tomii_scripted_expect_run()
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        try:
            self.outcome["result"] = tomii.run_graph(
                self.graph,
                dylibs=[SYNTHETIC],
                scheduler_plugin=SCRIPTED,
                workers=1,
                slots=self.slots,
                frames=self.frames,
                stall_timeout_ms=0,
            )
        except BaseException as error:  # noqa: BLE001 (teardown reports whatever ended the run)
            self.outcome["error"] = error

    # The model ---------------------------------------------------------------------------------

    def started(self) -> int:
        """Frames started: the first `slots`, then one more for each completed frame."""
        return min(self.slots + len(self.completed_frames), self.frames)

    def expected_pending(self) -> set[Pending]:
        ready = set()
        for frame in range(self.started()):
            if frame in self.completed_frames:
                continue
            for leader in self.leaders:
                if (frame, leader) in self.done:
                    continue
                if all((frame, dep) in self.done for dep in self.model.task_deps[leader]):
                    ready.add((frame, leader[0], leader[1], self.slot_of[frame]))
        return ready

    def complete(self, frame: int, leader: tuple[str, int]) -> None:
        self.done.add((frame, leader))
        if all((frame, other) in self.done for other in self.leaders):
            self.completed_frames.append(frame)
            following = self.slots + len(self.completed_frames) - 1
            if following < self.frames:
                self.slot_of[following] = self.slot_of[frame]

    # The engine --------------------------------------------------------------------------------

    def pending(self) -> list[Pending] | None:
        """The tasks the engine has made ready, once it waits for a choice; None once it ended."""
        tasks = (ScriptedTask * CAPACITY)()
        count = CONTROL.tomii_scripted_wait(20_000, tasks, CAPACITY)
        if count == -1:
            return None
        assert count != -2, "the engine neither asked for a task nor ended within 20 s"
        assert 0 < count <= CAPACITY
        return [(t.frame, self.names[t.node], t.instance, t.slot) for t in tasks[: int(count)]]

    def choose(self, choice: int) -> None:
        pending = self.pending()
        if pending is None:
            self.ended = True
            return
        assert set(pending) == self.expected_pending()
        assert len(pending) == len(set(pending)), f"a task is pending twice: {pending}"
        index = choice % len(pending)
        frame, node, instance, _ = pending[index]
        assert CONTROL.tomii_scripted_choose(index) == 0
        self.complete(frame, (node, instance))

    @rule(choice=st.integers(0, 2**16))
    def run_one_task(self, choice: int) -> None:
        """Lets the engine run the chosen ready task (nothing once the run ended)."""
        if not self.ended:
            self.choose(choice)

    @invariant()
    def frames_in_flight_fit_the_slots(self) -> None:
        if self.thread is not None:
            in_flight = self.started() - len(self.completed_frames)
            assert 0 <= in_flight <= self.slots

    def teardown(self) -> None:
        if self.thread is None:
            return
        try:
            while not self.ended:
                self.choose(0)
        finally:
            # Never leave the engine waiting for a choice: the thread would never end.
            while CONTROL.tomii_scripted_wait(20_000, (ScriptedTask * CAPACITY)(), CAPACITY) >= 0:
                CONTROL.tomii_scripted_choose(0)
            self.thread.join(timeout=30)
        assert not self.thread.is_alive(), "the run did not end"
        assert "error" not in self.outcome, self.outcome.get("error")
        assert sorted(self.completed_frames) == list(range(self.frames))
        expected = self.model.run(frames=self.frames, workers=1)
        result = self.outcome["result"]
        assert result.outputs == expected.outputs
        assert result.post_outputs == expected.post_outputs


EngineMachine.TestCase.settings = settings(
    max_examples=40 if os.environ.get("TOMII_CHECK_PROFILE", "fast") == "fast" else 500,
    stateful_step_count=60,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestEngineStepByStep = EngineMachine.TestCase
