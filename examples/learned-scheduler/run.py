"""Trains a scheduling policy in the simulator (tomii.gym), then runs it on the real engine and in a
sweep beside the shipped schedulers:

    python examples/learned-scheduler/run.py [--quick] [--out DIR] [--seed N]

The policy is linear: at each decision it scores every ready task by a weighted sum of five
features of the task, normalised over the tasks on offer (rank × cost, rank, cost, time waited,
frame age), and runs the best. The cross-entropy method trains the weights, with NumPy only: each
iteration draws a population of weight vectors around the current mean, scores each by the mean
makespan of a fixed set of training episodes, and refits the mean and spread to the best. Then,
on held-out episodes, it compares the trained policy with a random one and with first-come,
first-served (fifo's order), runs it with `tomii.run_graph` on the synthetic spin kernels, and
sweeps it in simulation beside fifo, priority, critical-path and random. Writes weights.json,
results.json, table.txt, training.png and speedup.png into DIR.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

import tomii
from tomii.experiments import sweep
from tomii.experiments.config import summary
from tomii.gym import TASK_FEATURES, PolicyScheduler, SchedulingEnv

#: The environment variable naming the weights file, for the sweep's child processes, which
#: import `Learned` from this script and read its weights there.
WEIGHTS_VARIABLE = "TOMII_LEARNED_SCHEDULER_WEIGHTS"
#: The episodes: random layered DAGs with unequal task costs (tomii.gym.FAMILIES), 3 workers,
#: one frame in flight, 3 frames each.
ENVIRONMENT: dict[str, Any] = {"families": ("layered_random",), "workers": 3, "frames": 3}
#: Training and evaluation budgets: (population, training episodes, iterations, held-out episodes,
#: sweep repeats, sweep frames, real frames).
FULL = {"population": 16, "episodes": 8, "iterations": 12, "held_out": 60, "repeats": 5,
        "frames": 100, "real_frames": 200}  # fmt: skip
QUICK = {"population": 8, "episodes": 3, "iterations": 3, "held_out": 12, "repeats": 2,
         "frames": 10, "real_frames": 20}  # fmt: skip
#: The features' names, in the weights' order.
FEATURES = ("urgency", "rank", "cost", "waited", "frame age")
_COLUMNS = [TASK_FEATURES.index(name) for name in ("urgency_us", "rank", "cost_us", "waited_us")]
_FRAME = TASK_FEATURES.index("frame")

Choose = Callable[[dict[str, Any]], int]


def features(observation: dict[str, Any]) -> np.ndarray[Any, np.dtype[np.float64]]:
    """One row per task on offer: urgency, rank, cost and time waited, each divided by its
    largest value among them (so that a policy is unit-free), and how many frames newer than the
    oldest on offer its frame is."""
    tasks = observation["tasks"][observation["mask"] == 1].astype(np.float64)
    scaled = tasks[:, _COLUMNS]
    largest = scaled.max(axis=0)
    scaled = np.divide(scaled, largest, out=np.zeros_like(scaled), where=largest > 0)
    age = tasks[:, _FRAME] - tasks[:, _FRAME].min()
    return np.column_stack([scaled, age])


def linear(weights: Sequence[float] | np.ndarray[Any, np.dtype[np.float64]]) -> Choose:
    """The policy that runs the task of highest score `features · weights`."""
    vector = np.asarray(weights, dtype=np.float64)
    return lambda observation: int(np.argmax(features(observation) @ vector))


def makespan_us(env: SchedulingEnv, seed: int, choose: Choose) -> float:
    """The simulated makespan of the episode `seed` under `choose`."""
    observation, _ = env.reset(seed=seed)
    done = False
    while not done:
        observation, _, done, _, info = env.step(choose(observation))
    return float(info["makespan_us"])


def mean_makespan(env: SchedulingEnv, seeds: Sequence[int], choose: Choose) -> float:
    return float(np.mean([makespan_us(env, seed, choose) for seed in seeds]))


def train(
    env: SchedulingEnv, seeds: Sequence[int], budget: dict[str, int], rng: np.random.Generator
) -> tuple[np.ndarray[Any, np.dtype[np.float64]], list[float]]:
    """The cross-entropy method over the weights: returns the final mean and, per iteration, the
    mean makespan of its best candidate on the training episodes."""
    mean, spread = np.zeros(len(FEATURES)), np.ones(len(FEATURES))
    elite = max(2, budget["population"] // 4)
    history = []
    for _ in range(budget["iterations"]):
        population = rng.normal(mean, spread, (budget["population"], len(FEATURES)))
        scores = np.array([mean_makespan(env, seeds, linear(w)) for w in population])
        best = population[np.argsort(scores)[:elite]]
        mean, spread = best.mean(axis=0), best.std(axis=0) + 0.05
        history.append(float(scores.min()))
    return mean, history


class Learned(PolicyScheduler):
    """The trained linear policy as a tomii.Scheduler, with the weights of the file that
    $TOMII_LEARNED_SCHEDULER_WEIGHTS names (run.py sets it before it runs or sweeps the policy)."""

    name = "learned"

    def __init__(self) -> None:
        super().__init__()
        path = os.environ.get(WEIGHTS_VARIABLE)
        if path is None:
            raise RuntimeError(f"Learned: set {WEIGHTS_VARIABLE} to the weights.json run.py wrote")
        self.choose_row = linear(json.loads(Path(path).read_text(encoding="utf-8"))["weights"])

    def choose(self, observation: dict[str, Any]) -> int:
        return self.choose_row(observation)


def sweep_graphs(count: int) -> list[dict[str, Any]]:
    """`count` graphs of the training family, not seen in training (seeds from 10,000)."""
    return [
        tomii.graphs.layered_random(
            7, 6, 0.25, 0.3, 1, cost=tomii.graphs.LogNormal(25, 1.2), seed=10_000 + k
        )
        for k in range(count)
    ]


def compare_in_simulation(budget: dict[str, int], out: Path) -> str:
    """Sweeps Learned beside the shipped schedulers in simulation; returns the summary table
    and writes speedup.png."""
    from tomii.experiments.plot import speedup

    result = sweep(
        [Learned, "fifo", "priority", "critical-path", "random"],
        sweep_graphs(2),
        {"workers": [ENVIRONMENT["workers"]], "slots": [1]},
        mode="simulate",
        repeats=budget["repeats"],
        frames=budget["frames"],
        progress=False,
    )
    speedup(result.rows).savefig(out / "speedup.png", dpi=120, bbox_inches="tight")
    return summary(result.rows, environment=result.environment)


def plot_training(history: Sequence[float], baselines: dict[str, float], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(6, 3.5))
    axes.plot(range(1, len(history) + 1), history, marker="o", label="best candidate (training)")
    for (label, value), style in zip(baselines.items(), ("--", ":", "-.")):
        axes.axhline(value, linestyle=style, color="grey", label=f"{label} (held out)")
    axes.set_xlabel("cross-entropy iteration")
    axes.set_ylabel("mean simulated makespan (µs)")
    axes.legend(fontsize=8)
    figure.savefig(out / "training.png", dpi=120, bbox_inches="tight")


def options(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a test-sized run (seconds)")
    parser.add_argument("--out", type=Path, default=Path("learned-scheduler"), help="output dir")
    parser.add_argument("--seed", type=int, default=0, help="of the training (default 0)")
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> None:
    args = options(argv)
    budget = QUICK if args.quick else FULL
    args.out.mkdir(parents=True, exist_ok=True)
    env = SchedulingEnv(**ENVIRONMENT)
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    weights, history = train(env, range(budget["episodes"]), budget, rng)
    training_s = time.perf_counter() - started
    weights_file = (args.out / "weights.json").resolve()
    weights_file.write_text(json.dumps({"features": FEATURES, "weights": weights.tolist()}))
    os.environ[WEIGHTS_VARIABLE] = str(weights_file)

    held_out = range(1_000, 1_000 + budget["held_out"])
    choosing = np.random.default_rng(args.seed + 1)
    policies: dict[str, Choose] = {
        "learned": linear(weights),
        "first come, first served": lambda observation: 0,
        "random": lambda observation: int(choosing.integers(observation["mask"].sum())),
    }
    makespans = {name: mean_makespan(env, held_out, choose) for name, choose in policies.items()}
    env.close()
    print(f"trained in {training_s:.1f} s; weights {dict(zip(FEATURES, weights.round(2)))}")
    print(f"mean simulated makespan over {len(held_out)} held-out episodes:")
    for name, value in makespans.items():
        print(f"  {name:26} {value:8.1f} µs")

    graph = sweep_graphs(1)[0]
    real = tomii.run_graph(graph, scheduler=Learned(), dylibs=[tomii.find_plugin("synthetic")],
                           workers=2, slots=1, frames=budget["real_frames"])  # fmt: skip
    print(f"real engine: {real.report.frames} frames of {graph['name']} with learned, "
          f"{real.report.throughput_frames_per_s:.0f} frames/s, status {real.report['status']}")  # fmt: skip

    table = compare_in_simulation(budget, args.out)
    print(table)
    (args.out / "table.txt").write_text(table + "\n", encoding="utf-8")
    plot_training(history, {k: makespans[k] for k in policies}, args.out)
    results = {
        "training_s": training_s,
        "history_us": history,
        "held_out_makespan_us": makespans,
        "real": {"frames": real.report.frames, "status": real.report["status"]},
    }
    (args.out / "results.json").write_text(json.dumps(results, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
