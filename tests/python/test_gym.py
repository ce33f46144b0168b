"""tomii.gym: the Gymnasium environment over the simulator passes Gymnasium's checker, is
deterministic for a seed and actions, pays each reward kind as documented, handles an invalid
action as documented, leaves no thread behind when an episode is given up, and its policies run on
the real engine."""

from __future__ import annotations

import threading
import warnings
from collections.abc import Callable
from typing import Any

import gymnasium
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from reference import SYNTHETIC

import tomii
from tomii.errors import ConfigError
from tomii.gym import TASK_FEATURES, SchedulingEnv, policy_scheduler

#: A policy over observations: picks a row.
Choose = Callable[[dict[str, Any]], int]

URGENCY = TASK_FEATURES.index("urgency_us")


def most_urgent(observation: dict[str, Any]) -> int:
    """The row of the ready task with the largest rank × cost (the critical-path key)."""
    urgency = np.where(observation["mask"] == 1, observation["tasks"][:, URGENCY], -np.inf)
    return int(np.argmax(urgency))


def episode(env: SchedulingEnv, seed: int, choose: Choose) -> list[tuple[Any, ...]]:
    """One episode from `reset(seed=seed)`: each step's (observation, reward, done, info)."""
    observation, info = env.reset(seed=seed)
    steps: list[tuple[Any, ...]] = [(observation, 0.0, False, info)]
    done = False
    while not done:
        observation, reward, done, _, info = env.step(choose(observation))
        steps.append((observation, reward, done, info))
    return steps


def total_reward(env: SchedulingEnv, seed: int, choose: Choose = most_urgent) -> float:
    return float(sum(step[1] for step in episode(env, seed, choose)))


def episode_threads() -> list[threading.Thread]:
    return [thread for thread in threading.enumerate() if thread.name == "tomii.gym episode"]


def test_the_environment_passes_gymnasiums_checker() -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # the checker's warnings too
        env = gymnasium.make("tomii/Scheduling-v0", workers=3, slots=2)
        check_env(env.unwrapped)
        env.close()
    assert not episode_threads()


def test_the_same_seed_and_actions_give_the_same_trajectory() -> None:
    def trajectory() -> list[tuple[Any, ...]]:
        env = SchedulingEnv(slots=2)
        actions = np.random.default_rng(7)
        steps = [
            step
            for seed in (1, 2, 3)
            for step in episode(env, seed, lambda _: int(actions.integers(env.max_ready)))
        ]
        env.close()
        return steps

    first, second = trajectory(), trajectory()
    assert len(first) == len(second) > 10
    for (obs_a, reward_a, done_a, info_a), (obs_b, reward_b, done_b, info_b) in zip(first, second):
        assert (reward_a, done_a, info_a) == (reward_b, done_b, info_b)
        assert obs_a.keys() == obs_b.keys()
        assert all(np.array_equal(obs_a[key], obs_b[key]) for key in obs_a)


def test_makespan_rewards_sum_to_minus_the_makespan_and_match_latency_with_one_slot() -> None:
    for seed in (0, 4):
        steps = episode(SchedulingEnv(slots=1, frames=3), seed, most_urgent)
        makespan_ms = steps[-1][3]["makespan_us"] / 1000
        assert sum(step[1] for step in steps) == pytest.approx(-makespan_ms)
        # One frame in flight: frames run back to back, so their latencies add up to the makespan.
        latency = total_reward(SchedulingEnv(slots=1, frames=3, reward="latency"), seed)
        assert latency == pytest.approx(-makespan_ms)


def test_deadline_rewards_count_the_frames_that_miss_it() -> None:
    missed_all = SchedulingEnv(frames=3, reward="deadline", deadline_us=1)
    met_all = SchedulingEnv(frames=3, reward="deadline", deadline_us=1e9)
    assert total_reward(missed_all, 5) == -3
    assert total_reward(met_all, 5) == 0
    with pytest.raises(ConfigError, match="deadline_us"):
        SchedulingEnv(reward="deadline")
    with pytest.raises(ConfigError, match="reward"):
        SchedulingEnv(reward="throughput")  # type: ignore[arg-type]


def test_an_invalid_action_runs_row_zero_and_costs_the_penalty() -> None:
    penalised, plain = SchedulingEnv(invalid_action_penalty=2.5), SchedulingEnv()
    observation, _ = penalised.reset(seed=11)
    plain.reset(seed=11)
    empty_row = int(np.flatnonzero(observation["mask"] == 0)[0])
    after_invalid = penalised.step(empty_row)
    after_zero = plain.step(0)
    assert after_invalid[4]["invalid_action"] and not after_zero[4]["invalid_action"]
    assert after_invalid[1] == pytest.approx(after_zero[1] - 2.5)
    assert all(np.array_equal(after_invalid[0][k], after_zero[0][k]) for k in after_zero[0])
    penalised.close()
    plain.close()


def test_giving_an_episode_up_leaves_no_thread() -> None:
    env = SchedulingEnv(frames=4)
    env.reset(seed=0)
    env.step(0)
    assert len(episode_threads()) == 1
    env.reset(seed=1)  # mid-episode: the first episode's thread is gone
    assert len(episode_threads()) == 1
    env.step(0)
    env.close()
    assert not episode_threads()
    with pytest.raises(ConfigError, match="call reset first"):
        env.step(0)


def test_an_exported_policy_runs_on_the_real_engine() -> None:
    env = SchedulingEnv()
    graph = tomii.graphs.layered_random(4, 4, 0.4, 0.5, 1, cost=tomii.graphs.Uniform(1, 20), seed=2)
    result = tomii.run_graph(
        graph,
        scheduler=env.policy_scheduler(most_urgent),
        dylibs=[SYNTHETIC],
        workers=2,
        slots=2,
        frames=6,
    )
    assert (result.report.scheduler, result.report.frames) == ("learned", 6)
    assert result.report.tasks == 6 * len(graph["nodes"])
    with pytest.raises(TypeError, match="callable"):
        policy_scheduler(3)  # type: ignore[arg-type]
