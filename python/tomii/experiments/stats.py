"""The statistics of a sweep's figures and table: which rows are repeats of one configuration, their
medians with exact order-statistic intervals (or means with Student's t intervals), and ratios of
medians with bootstrap intervals. numpy only: never scipy.

Takes plain rows (see `tomii.experiments.table.COLUMNS`); invalid trials never enter a statistic.
"""

from __future__ import annotations

import json
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any

import numpy as np

__all__ = [
    "MEASURES",
    "PERCENTILES",
    "STATISTICS",
    "Estimate",
    "Interval",
    "Row",
    "Summary",
    "distinct",
    "in_trial_order",
    "is_valid",
    "mean_ci",
    "median_ci",
    "median_ranks",
    "number",
    "ordered",
    "ratio_ci",
    "run_knobs",
    "select",
    "summarize",
    "t_critical",
    "trial_counts",
]

#: One trial of the sweep: trial, scheduler (its label), scheduler_options, graph, the knobs, the
#: figures of its report, `valid` and `problem` (see `plot`).
Row = Mapping[str, Any]

#: The columns of a row that are not knobs: bookkeeping and measurements. Every other column
#: (scheduler, scheduler_options, graph, workers, slots, frames, pop_batch and any further knob)
#: is part of a trial's configuration; the trials of one configuration are its repeats.
MEASURES = frozenset(
    ("trial", "order", "repeat", "wall_time_s", "throughput_frames_per_s", "tasks_per_s",
     "latency_mean_us", "latency_p50_us", "latency_p95_us", "latency_p99_us", "critical_path_us",
     "work_us", "bound_frames_per_s", "efficiency", "busy_mean", "busy_per_worker", "valid",
     "problem", "retried", "worker_pid", "load_average_1m", "steal_percent")
)  # fmt: skip
#: Configuration columns that are not run knobs (titles name the run knobs a figure holds fixed).
_IDENTITY = ("scheduler", "scheduler_options", "graph")
PERCENTILES = ("mean", "p50", "p95", "p99")
#: What `summarize` computes per cell: the median (what `tomii sweep` prints) or the mean.
STATISTICS = ("median", "mean")

# ---------------------------------------------------------------------------------------------
# Confidence intervals

#: t_{0.975, df} for df = 1..30: the two-sided 95% critical values of Student's t.
_T975 = (
    12.706204736, 4.302652730, 3.182446305, 2.776445105, 2.570581836,
    2.446911851, 2.364624252, 2.306004135, 2.262157163, 2.228138852,
    2.200985160, 2.178812830, 2.160368656, 2.144786688, 2.131449546,
    2.119905299, 2.109815578, 2.100922040, 2.093024054, 2.085963447,
    2.079613845, 2.073873068, 2.068657610, 2.063898562, 2.059538553,
    2.055529439, 2.051830516, 2.048407142, 2.045229642, 2.042272456,
)  # fmt: skip
_Z975 = NormalDist().inv_cdf(0.975)


def t_critical(df: int) -> float:
    """The two-sided 95% critical value of Student's t with `df` degrees of freedom: a table for
    df ≤ 30, above it the Cornish-Fisher expansion around the normal quantile (error < 2e-6)."""
    if isinstance(df, bool) or not isinstance(df, int) or df < 1:
        raise ValueError(f"t_critical: degrees of freedom must be an int ≥ 1, got {df!r}")
    if df <= len(_T975):
        return _T975[df - 1]
    z = _Z975
    g1 = (z**3 + z) / 4
    g2 = (5 * z**5 + 16 * z**3 + 3 * z) / 96
    g3 = (3 * z**7 + 19 * z**5 + 17 * z**3 - 15 * z) / 384
    return z + g1 / df + g2 / df**2 + g3 / df**3


@dataclass(frozen=True)
class Interval:
    """The mean of `n` samples and the half-width of its 95% confidence interval (NaN if n < 2)."""

    mean: float
    half_width: float
    n: int

    @property
    def low(self) -> float:
        return self.mean - self.half_width

    @property
    def high(self) -> float:
        return self.mean + self.half_width


def mean_ci(values: Iterable[float]) -> Interval:
    """Mean ± t_{0.975, n−1}·s/√n over the finite values (s: the sample standard deviation)."""
    sample = [v for v in (number(value) for value in values) if math.isfinite(v)]
    n = len(sample)
    if n == 0:
        return Interval(math.nan, math.nan, 0)
    mean = math.fsum(sample) / n
    if n == 1:
        return Interval(mean, math.nan, 1)
    deviation = math.sqrt(math.fsum((v - mean) ** 2 for v in sample) / (n - 1))
    return Interval(mean, t_critical(n - 1) * deviation / math.sqrt(n), n)


@dataclass(frozen=True)
class Estimate:
    """A statistic of `n` samples and its interval [`low`, `high`], which holds the true value
    with probability `coverage` (NaN ends and coverage: fewer than two samples)."""

    value: float
    low: float
    high: float
    n: int
    coverage: float


def median_ranks(n: int, level: float = 0.95) -> tuple[int, float]:
    """The order-statistic interval of the median of `n` samples: the largest rank k such that
    [x₍ₖ₎, x₍ₙ₋ₖ₊₁₎] holds the true median with probability ≥ `level`, and that probability,
    1 − 2·P(B ≤ k − 1) for B ~ Binomial(n, ½) (exact for any continuous distribution). Below six
    samples no interval reaches 95%: k is 1 (the range) and the probability says how far it falls
    short."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 2:
        raise ValueError(f"median_ranks: n must be an int ≥ 2, got {n!r}")

    def coverage(k: int) -> float:
        return 1 - 2 * sum(math.comb(n, i) for i in range(k)) / float(2**n)

    k = 1
    while k + 1 <= (n + 1) // 2 and coverage(k + 1) >= level:
        k += 1
    return k, coverage(k)


def median_ci(values: Iterable[float], *, level: float = 0.95) -> Estimate:
    """The median of the finite values and its exact order-statistic interval (`median_ranks`)."""
    sample = sorted(v for v in (number(value) for value in values) if math.isfinite(v))
    n = len(sample)
    if n == 0:
        return Estimate(math.nan, math.nan, math.nan, 0, math.nan)
    median = statistics.median(sample)
    if n == 1:
        return Estimate(median, math.nan, math.nan, 1, math.nan)
    k, coverage = median_ranks(n, level)
    return Estimate(median, sample[k - 1], sample[n - k], n, coverage)


def ratio_ci(
    values: Iterable[float],
    baseline: Iterable[float],
    *,
    level: float = 0.95,
    resamples: int = 4000,
    seed: int = 0,
) -> Estimate:
    """median(values) / median(baseline), and its percentile-bootstrap interval: both samples
    resampled independently `resamples` times with a generator seeded by `seed` (so the same data
    give the same interval). `n` is the smaller sample; NaN where a sample is empty or the
    baseline's median is not positive, NaN ends where a sample has fewer than two values."""
    top = np.array([v for v in map(number, values) if math.isfinite(v)])
    bottom = np.array([v for v in map(number, baseline) if math.isfinite(v)])
    n = min(top.size, bottom.size)
    if n == 0 or not float(np.median(bottom)) > 0:
        return Estimate(math.nan, math.nan, math.nan, n, math.nan)
    ratio = float(np.median(top)) / float(np.median(bottom))
    if n < 2:
        return Estimate(ratio, math.nan, math.nan, n, math.nan)
    generator = np.random.default_rng(seed)
    tops = np.median(generator.choice(top, size=(resamples, top.size)), axis=1)
    bottoms = np.median(generator.choice(bottom, size=(resamples, bottom.size)), axis=1)
    low, high = np.quantile(tops / bottoms, [(1 - level) / 2, (1 + level) / 2])
    return Estimate(ratio, float(low), float(high), n, level)


def number(value: Any) -> float:
    """`value` as a float; NaN when it is missing or not a number."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return math.nan


# ---------------------------------------------------------------------------------------------
# Selecting and summarizing rows


@dataclass(frozen=True)
class Summary:
    """`statistic` ("median" or "mean") of `metric` per cell (a tuple of the values of `keys`)
    over the valid trials, the repeats of one configuration; `excluded` invalid trials matched and
    were left out, `missing` valid trials had no finite value; `config` holds the run knobs with
    one value over every selected trial."""

    metric: str
    keys: tuple[str, ...]
    cells: dict[tuple[Any, ...], Estimate]
    excluded: int
    missing: int
    config: dict[str, Any]
    statistic: str = "median"


@dataclass(frozen=True)
class _Selection:
    keys: tuple[str, ...]
    cells: dict[tuple[Any, ...], list[Row]]
    excluded: int
    config: dict[str, Any]

    def levels(self, position: int) -> list[Any]:
        return ordered(cell[position] for cell in self.cells)


def ordered(values: Iterable[Any]) -> list[Any]:
    """The distinct values in order of first appearance; numbers sorted."""
    seen = list(dict.fromkeys(values))
    if seen and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in seen):
        return sorted(seen)
    return seen


def summarize(
    rows: Sequence[Row],
    metric: str,
    *,
    keys: Sequence[str] = ("scheduler", "graph"),
    where: Mapping[str, Any] | None = None,
    statistic: str = "median",
) -> Summary:
    """`statistic` of `metric` over the repeats of each cell of `keys`, with its interval: the
    median with its exact order-statistic interval (`median_ci`, what `tomii sweep` prints), or
    the mean with its 95% Student's t interval (`mean_ci`).

    `where` keeps the rows whose columns equal its values. Every cell must hold one
    configuration (every column outside `MEASURES`): a knob that still varies raises ValueError
    naming it."""
    if statistic not in STATISTICS:
        raise ValueError(f"statistic {statistic!r}: choose one of {', '.join(STATISTICS)}")
    selection = select(rows, keys, where)
    values = {
        key: [number(row.get(metric)) for row in group] for key, group in selection.cells.items()
    }
    estimate = median_ci if statistic == "median" else _mean_estimate
    cells = {key: estimate(sample) for key, sample in values.items()}
    missing = sum(not math.isfinite(v) for sample in values.values() for v in sample)
    return Summary(
        metric, selection.keys, cells, selection.excluded, missing, selection.config, statistic
    )


def _mean_estimate(values: Iterable[float]) -> Estimate:
    interval = mean_ci(values)
    coverage = 0.95 if interval.n > 1 else math.nan
    return Estimate(interval.mean, interval.low, interval.high, interval.n, coverage)


def select(rows: Sequence[Row], keys: Sequence[str], where: Mapping[str, Any] | None) -> _Selection:
    keys = tuple(keys)
    conditions = dict(where or {})
    for key in (*keys, *conditions):
        _check_key(rows, key)
    matched = [row for row in rows if all(_matches(row, k, v) for k, v in conditions.items())]
    valid = in_trial_order([row for row in matched if is_valid(row)])
    cells: dict[tuple[Any, ...], list[Row]] = {}
    for row in valid:
        cells.setdefault(tuple(_value(row, key) for key in keys), []).append(row)
    for cell, group in cells.items():
        _check_one_configuration(keys, cell, group)
    config = {}
    for knob in run_knobs(valid):
        values = distinct(row.get(knob) for row in valid)
        if knob not in keys and len(values) == 1 and values[0] is not None:
            config[knob] = values[0]
    return _Selection(keys, cells, len(matched) - len(valid), config)


def trial_counts(
    rows: Sequence[Row], keys: Sequence[str], where: Mapping[str, Any] | None = None
) -> dict[tuple[Any, ...], tuple[int, int]]:
    """Per cell of `keys` among the rows that match `where`, in the sweep's order: how many trials
    it holds and how many of them are valid. A cell with none valid is one that `select` (and so
    every statistic) leaves out whole."""
    conditions = dict(where or {})
    counts: dict[tuple[Any, ...], tuple[int, int]] = {}
    for row in in_trial_order(rows):
        if all(_matches(row, k, v) for k, v in conditions.items()):
            cell = tuple(row.get(key) for key in keys)
            trials, valid = counts.get(cell, (0, 0))
            counts[cell] = (trials + 1, valid + is_valid(row))
    return counts


def in_trial_order(rows: Sequence[Row]) -> list[Row]:
    """The rows by trial number: the sweep's plan order, so schedulers and graphs come in the
    order they were given (the rows themselves come in the order the trials finished)."""
    numbers = [number(row.get("trial")) for row in rows]
    order = sorted(
        range(len(rows)), key=lambda i: numbers[i] if math.isfinite(numbers[i]) else math.inf
    )
    return [rows[i] for i in order]


def run_knobs(rows: Sequence[Row]) -> list[str]:
    """The knob columns of `rows` other than scheduler, its options and graph, in column order."""
    columns = dict.fromkeys(key for row in rows for key in row)
    return [key for key in columns if key not in MEASURES and key not in _IDENTITY]


def distinct(values: Iterable[Any]) -> list[Any]:
    """The distinct values, a dict or list compared by its JSON text."""
    return list(
        dict.fromkeys(
            json.dumps(v, sort_keys=True) if isinstance(v, (dict, list)) else v for v in values
        )
    )


def _check_key(rows: Sequence[Row], key: str) -> None:
    if rows and not any(key in row for row in rows):
        known = ", ".join(sorted(rows[0]))
        raise ValueError(f"no row has the key {key!r}; the rows' keys: {known}")


def _check_one_configuration(
    keys: tuple[str, ...], cell: tuple[Any, ...], group: list[Row]
) -> None:
    knobs = dict.fromkeys(key for row in group for key in row if key not in MEASURES)
    for knob in knobs:
        if knob in keys:
            continue
        values = distinct(row.get(knob) for row in group)
        if len(values) > 1:
            where = ", ".join(f"{k}={v!r}" for k, v in zip(keys, cell))
            shown = ", ".join(str(v) for v in sorted(values, key=str))
            raise ValueError(
                f"the trials of {where} hold several values of {knob} ({shown}): pass "
                f"where={{{knob!r}: ...}} to pick one, or draw it as an axis (scaling(x={knob!r}))"
            )


def _value(row: Row, key: str) -> Any:
    if key not in row:
        raise ValueError(f"trial {row.get('trial', '?')} has no key {key!r}")
    return row[key]


def _matches(row: Row, key: str, wanted: Any) -> bool:
    return key in row and row[key] == wanted


def is_valid(row: Row) -> bool:
    flag = row.get("valid", False)
    if isinstance(flag, str):
        return flag.strip().lower() in ("true", "1", "yes")
    return bool(flag)
