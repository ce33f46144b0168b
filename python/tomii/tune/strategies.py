"""Search strategies: each proposes the next candidate from the history of the trials so far.
Random, grid and Bayesian (optuna's TPE) live here; the external agent in agent.py.

A strategy only proposes: the verifier judges, the driver runs and records. A strategy never
sees a candidate's graph or runs anything, and one that is out of points returns None.
"""

from __future__ import annotations

import itertools
import math
import random
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from .space import SCHEDULER, Candidate, Dimension, TuneSpace

__all__ = ["STRATEGIES", "Bayesian", "Grid", "RandomSearch", "Strategy", "TrialRecord"]

#: Proposals a strategy may redraw when it drew a candidate it already tried.
REDRAWS = 50


@dataclass(frozen=True)
class TrialRecord:
    """One finished trial as strategies see it: `value` is the objective (NaN when invalid)."""

    trial: int
    knobs: dict[str, Any]
    value: float
    valid: bool
    reason: str
    graph_edit: bool = False

    def to_json(self) -> dict[str, Any]:
        return {
            "trial": self.trial,
            "knobs": self.knobs,
            "graph_edit": self.graph_edit,
            "value": self.value if math.isfinite(self.value) else None,
            "valid": self.valid,
            "reason": self.reason,
        }


class Strategy(Protocol):
    """What the driver asks of a strategy (a class of your own that has these plugs in too)."""

    name: str

    def ask(self, history: Sequence[TrialRecord]) -> Candidate | None: ...

    def tell(self, record: TrialRecord) -> None: ...


class RandomSearch:
    """Every active dimension drawn uniformly from its values (the scheduler first, then its
    options), seeded; a candidate already tried is drawn again (up to REDRAWS times)."""

    name = "random"

    def __init__(self, space: TuneSpace, *, seed: int = 0, **_: Any) -> None:
        self.space = space
        self.rng = random.Random(seed)
        self.seen: set[str] = set()

    def ask(self, history: Sequence[TrialRecord]) -> Candidate | None:
        knobs: dict[str, Any] = {}
        for _ in range(REDRAWS):
            knobs = self._draw()
            if self.space.key(knobs) not in self.seen:
                break
        self.seen.add(self.space.key(knobs))
        return Candidate(knobs)

    def _draw(self) -> dict[str, Any]:
        knobs: dict[str, Any] = {}
        for dimension in self.space.dimensions:
            if dimension.name == SCHEDULER:
                knobs[SCHEDULER] = self.rng.choice(dimension.values)
        for dimension in self.space.active(knobs):
            if dimension.name != SCHEDULER:
                knobs[dimension.name] = self.rng.choice(dimension.values)
        return knobs

    def tell(self, record: TrialRecord) -> None:
        pass


class Grid:
    """An evenly spaced grid of at most `budget` points, walked in order. Each dimension gets
    levels in turn (one more per round, while the product stays within the budget): a dimension
    of one level holds its default, one of l levels the l values evenly spaced over its list,
    ends included. Scheduler options hold their defaults. With budget ≥ the space's size the
    grid is the whole space."""

    name = "grid"

    def __init__(self, space: TuneSpace, *, budget: int = 50, **_: Any) -> None:
        self.space = space
        self.points = iter(self._points(budget))

    def _points(self, budget: int) -> Iterator[dict[str, Any]]:
        dimensions = [d for d in self.space.dimensions if d.scheduler is None]
        levels = [1] * len(dimensions)
        grew = True
        while grew:
            grew = False
            for i, dimension in enumerate(dimensions):
                if levels[i] < len(dimension.values):
                    trial = levels[:i] + [levels[i] + 1] + levels[i + 1 :]
                    if math.prod(trial) <= budget:
                        levels, grew = trial, True
        axes = [_spaced(d, n) for d, n in zip(dimensions, levels)]
        for chosen in itertools.product(*axes):
            yield dict(zip((d.name for d in dimensions), chosen))

    def ask(self, history: Sequence[TrialRecord]) -> Candidate | None:
        knobs = next(self.points, None)
        return None if knobs is None else Candidate(knobs)

    def tell(self, record: TrialRecord) -> None:
        pass


def _spaced(dimension: Dimension, levels: int) -> list[Any]:
    values = list(dimension.values)
    if levels == 1:
        return [dimension.default]
    picked = [values[round(k * (len(values) - 1) / (levels - 1))] for k in range(levels)]
    return list(dict.fromkeys(picked))


class Bayesian:
    """Optuna's TPE sampler, seeded, asked and told one trial at a time: every active dimension a
    categorical over its values (scheduler options only when their scheduler is drawn). Invalid
    trials are told as infeasible (TPE's constraints) with the worst value seen, so it learns to
    avoid them; a candidate it already tried is told its earlier result and drawn again (up to
    REDRAWS times) without costing budget."""

    name = "bayes"

    def __init__(
        self, space: TuneSpace, *, seed: int = 0, direction: str = "max", budget: int = 50, **_: Any
    ) -> None:
        try:
            import optuna
        except ImportError:
            raise ImportError("the bayes strategy needs optuna: pip install optuna") from None
        optuna.logging.set_verbosity(optuna.logging.WARNING)
        # Optuna 5 reads the constraints a trial sets; older versions call constraints_func.
        self.set_constraint = hasattr(optuna.trial.Trial, "set_constraint")
        options: dict[str, Any] = {} if self.set_constraint else {"constraints_func": _constraints}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", optuna.exceptions.ExperimentalWarning)
            sampler = optuna.samplers.TPESampler(
                seed=seed, n_startup_trials=max(3, min(10, budget // 4)), **options
            )
        self.optuna = optuna
        self.space = space
        self.direction = direction
        self.study = optuna.create_study(
            sampler=sampler, direction="maximize" if direction == "max" else "minimize"
        )
        self.results: dict[str, TrialRecord] = {}
        self.pending: Any = None
        self.pending_key = ""

    def ask(self, history: Sequence[TrialRecord]) -> Candidate | None:
        for _ in range(REDRAWS):
            trial = self.study.ask()
            knobs = self._suggest(trial)
            key = self.space.key(knobs)
            earlier = self.results.get(key)
            if earlier is None:
                self.pending, self.pending_key = trial, key
                return Candidate(knobs)
            self._tell(trial, earlier)
        self.pending, self.pending_key = trial, key
        return Candidate(knobs)

    def _suggest(self, trial: Any) -> dict[str, Any]:
        knobs: dict[str, Any] = {}
        for dimension in self.space.dimensions:
            if dimension.name == SCHEDULER:
                knobs[SCHEDULER] = trial.suggest_categorical(SCHEDULER, list(dimension.values))
        for dimension in self.space.active(knobs):
            if dimension.name != SCHEDULER:
                knobs[dimension.name] = trial.suggest_categorical(
                    dimension.name, list(dimension.values)
                )
        return knobs

    def tell(self, record: TrialRecord) -> None:
        if self.pending is None:
            return
        self.results[self.pending_key] = record
        self._tell(self.pending, record)
        self.pending = None

    def _tell(self, trial: Any, record: TrialRecord) -> None:
        value = record.value if record.valid and math.isfinite(record.value) else self._worst()
        if self.set_constraint:
            trial.set_constraint("valid", 0.0 if record.valid else 1.0)
        else:
            trial.set_user_attr("constraints", [0.0 if record.valid else 1.0])
        self.study.tell(trial, value)

    def _worst(self) -> float:
        values = [r.value for r in self.results.values() if r.valid and math.isfinite(r.value)]
        if not values:
            return 0.0
        return min(values) if self.direction == "max" else max(values)


def _constraints(trial: Any) -> list[float]:
    return list(trial.user_attrs.get("constraints", [0.0]))


#: The strategies by name (the agent's is made by the driver, from a command line).
STRATEGIES: dict[str, Any] = {"random": RandomSearch, "grid": Grid, "bayes": Bayesian}
