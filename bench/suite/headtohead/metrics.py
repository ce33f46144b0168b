"""From measurements to figures: ideal times, medians with their spread, ratios and METG(50%).

Pure functions over `Measurement`s; nothing here runs or prints anything. The definitions are
those of bench/README.md "Head-to-head": efficiency = ideal / measured, ideal = the larger of total
work / workers and the critical path (per frame in flight), METG(50%) = the smallest kernel
duration from which a runtime stays at 50% efficiency or more, interpolated log-linearly.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from .plan import WORKERS, Config


@dataclass(frozen=True)
class Bounds:
    """One frame's size: tasks, total kernel µs and critical path µs."""

    tasks: int
    work_us: int
    critical_path_us: int

    def ideal_s(self, frames: int, slots: int) -> float:
        """No schedule on WORKERS workers runs `frames` frames, `slots` at once, sooner."""
        by_work = frames * self.work_us / WORKERS
        by_path = math.ceil(frames / slots) * self.critical_path_us
        return max(by_work, by_path) / 1e6


@dataclass(frozen=True)
class Measurement:
    """One run of one configuration on one runtime (wall_s None: it failed, `error` says why)."""

    config: Config
    runtime: str
    round: int
    timing: str
    tasks: int | None
    wall_s: float | None
    error: str = ""


@dataclass(frozen=True)
class Summary:
    """Every run of one configuration on one runtime: the spread of the wall time."""

    config: Config
    runtime: str
    walls: tuple[float, ...]
    errors: tuple[str, ...]

    @property
    def ok(self) -> bool:
        return bool(self.walls)

    @property
    def median_s(self) -> float:
        return statistics.median(self.walls)

    def ns_per_task(self, tasks: int) -> tuple[float, float, float]:
        """Median, min and max ns per task (`tasks` per run)."""
        return self._scaled(lambda wall: wall / tasks * 1e9)

    def frames_per_s(self) -> tuple[float, float, float]:
        return self._scaled(lambda wall: self.config.frames / wall)

    def efficiency(self, ideal_s: float) -> tuple[float, float, float]:
        return self._scaled(lambda wall: ideal_s / wall)

    def _scaled(self, f: Callable[[float], float]) -> tuple[float, float, float]:
        values = sorted(f(wall) for wall in self.walls)
        return f(self.median_s), values[0], values[-1]


def summarize(measurements: Iterable[Measurement]) -> dict[tuple[Config, str], Summary]:
    walls: dict[tuple[Config, str], list[float]] = defaultdict(list)
    errors: dict[tuple[Config, str], list[str]] = defaultdict(list)
    for m in measurements:
        key = (m.config, m.runtime)
        if m.wall_s is None:
            errors[key].append(m.error)
        else:
            walls[key].append(m.wall_s)
    keys = sorted(set(walls) | set(errors), key=lambda k: (k[0].workload, k[0].us, k[1]))
    return {k: Summary(k[0], k[1], tuple(walls[k]), tuple(errors[k])) for k in keys}


def time_ratio(
    summaries: Mapping[tuple[Config, str], Summary], config: Config, a: str, b: str
) -> float | None:
    """Median wall time of runtime `a` over that of `b` on `config` (< 1: `a` is faster)."""
    first, second = summaries.get((config, a)), summaries.get((config, b))
    if first is None or second is None or not first.ok or not second.ok:
        return None
    return first.median_s / second.median_s


@dataclass(frozen=True)
class Metg:
    """METG(50%): `us` when bracketed by the sweep; else `below` / `above` its range."""

    us: float | None
    below: float | None = None
    above: float | None = None

    def __str__(self) -> str:
        if self.us is not None:
            return f"{self.us:.3g} µs" if self.us < 10 else f"{self.us:.0f} µs"
        if self.below is not None:
            return f"< {self.below:g} µs"
        return f"> {self.above:g} µs" if self.above is not None else "n/a"


def metg(points: Sequence[tuple[int, float]], target: float = 0.5) -> Metg:
    """METG from (kernel µs, median efficiency) points: scanning down from the longest kernel,
    the first duration below `target` and the one above it are interpolated on log(µs)."""
    if not points:
        return Metg(None)
    points = sorted(points)
    if points[-1][1] < target:
        return Metg(None, above=points[-1][0])
    for (lo_us, lo_eff), (hi_us, hi_eff) in zip(points[-2::-1], points[:0:-1]):
        if lo_eff < target:
            share = (target - lo_eff) / (hi_eff - lo_eff)
            return Metg(math.exp(math.log(lo_us) + share * (math.log(hi_us) - math.log(lo_us))))
    return Metg(None, below=points[0][0])
