"""Which scheduler wins: per graph, every scheduler's median throughput and p99 latency as ratios
to a baseline scheduler's, with bootstrap intervals, and a one-line verdict.

The same numbers feed the printed table (`config.summary`) and the speed-up figure
(`plot.speedup`), so the two always agree. Takes plain rows; invalid trials never enter a ratio.
Never draws and never runs a graph.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from .stats import (
    Estimate,
    Row,
    distinct,
    in_trial_order,
    is_valid,
    median_ci,
    number,
    ratio_ci,
    select,
)

__all__ = ["Comparison", "Comparisons", "choose_baseline", "compare", "verdict"]

#: What the verdict ranks the schedulers by (higher is better), and the tail it quotes beside.
METRIC = "throughput_frames_per_s"
TAIL = "latency_p99_us"


@dataclass(frozen=True)
class Comparison:
    """One scheduler on one graph against the baseline: `speedup` is its median `metric` over the
    baseline's, `tail` its median p99 latency over the baseline's (both with 95% bootstrap
    intervals). For the baseline itself both are 1, with the baseline's own median interval
    divided by its median: how far the baseline alone spreads."""

    scheduler: str
    speedup: Estimate
    tail: Estimate


@dataclass(frozen=True)
class Comparisons:
    """Every scheduler of one cell (a graph, with any knobs that vary) against `baseline`, in the
    sweep's order, the baseline first; `excluded` invalid trials were left out."""

    cell: tuple[Any, ...]
    baseline: str
    schedulers: list[Comparison]
    excluded: int

    def best(self) -> Comparison | None:
        """The scheduler other than the baseline with the highest median speed-up."""
        others = [c for c in self.schedulers[1:] if math.isfinite(c.speedup.value)]
        return max(others, key=lambda c: c.speedup.value, default=None)

    def slower(self) -> list[Comparison]:
        """The schedulers other than the baseline that are clearly slower than it: their
        speed-up's interval lies below 1. In the sweep's order."""
        return [c for c in self.schedulers[1:] if c.speedup.high < 1]


def choose_baseline(rows: Sequence[Row], baseline: str | None, *, by: str = "scheduler") -> str:
    """`baseline`, checked to be one of the rows' schedulers; None: fifo when the sweep ran it,
    else its first scheduler."""
    names = [str(name) for name in distinct(row.get(by) for row in in_trial_order(rows))]
    if baseline is None:
        if not names:
            raise ValueError("no trial to compare schedulers with")
        return "fifo" if "fifo" in names else names[0]
    if baseline not in names:
        raise ValueError(f"baseline {baseline!r} is not in the sweep; its schedulers: {names}")
    return baseline


def compare(
    rows: Sequence[Row],
    *,
    baseline: str | None = None,
    metric: str = METRIC,
    keys: Sequence[str] = ("graph",),
    by: str = "scheduler",
    where: Mapping[str, Any] | None = None,
) -> list[Comparisons]:
    """Per cell of `keys` (default: per graph), every `by` value against `baseline` (see
    `choose_baseline`). A cell where the baseline has no valid trial is left out."""
    chosen = choose_baseline([r for r in rows if is_valid(r)] or rows, baseline, by=by)
    selection = select(rows, (*keys, by), where)
    cells = distinct(cell[:-1] for cell in selection.cells)
    names = distinct(cell[-1] for cell in selection.cells)
    results = []
    for cell in cells:
        groups = {name: selection.cells.get((*cell, name), []) for name in names}
        if not groups.get(chosen):
            continue
        base = groups[chosen]
        compared = [_itself(chosen, base, metric)]
        compared += [
            _against(str(name), group, base, metric)
            for name, group in groups.items()
            if name != chosen and group
        ]
        results.append(Comparisons(tuple(cell), chosen, compared, selection.excluded))
    return results


def _values(group: Sequence[Row], column: str) -> list[float]:
    return [number(row.get(column)) for row in group]


def _against(name: str, group: Sequence[Row], base: Sequence[Row], metric: str) -> Comparison:
    speedup = ratio_ci(_values(group, metric), _values(base, metric))
    tail = ratio_ci(_values(group, TAIL), _values(base, TAIL))
    return Comparison(name, speedup, tail)


def _itself(name: str, base: Sequence[Row], metric: str) -> Comparison:
    def relative(column: str) -> Estimate:
        own = median_ci(_values(base, column))
        scale = own.value if own.value > 0 else math.nan
        return Estimate(1.0, own.low / scale, own.high / scale, own.n, own.coverage)

    return Comparison(name, relative(metric), relative(TAIL))


def verdict(comparisons: Comparisons) -> str:
    """One line: the best scheduler against the baseline with its interval, and its p99 latency
    against the baseline's ("work-stealing 1.31× fifo [1.22–1.40], p99 3.1× worse"); "no clear
    winner: ..." when the interval holds 1, "BASELINE wins: the next best is ..." when it lies
    below 1. Then every other scheduler clearly slower than the baseline, by name
    ("; slower: random 0.71× fifo [0.66–0.75]")."""
    baseline = comparisons.baseline
    best = comparisons.best()
    if best is None:
        return f"{baseline} alone: nothing to compare"
    ratio = best.speedup
    if not (math.isfinite(ratio.low) and math.isfinite(ratio.high)):
        return f"too few repeats for an interval: {best.scheduler} {ratio.value:.2f}× {baseline}"
    quoted = _quoted(best, baseline)
    if ratio.low > 1:
        line = f"{quoted}, {_tail(best.tail)}"
    elif ratio.high < 1:
        line = f"{baseline} wins: the next best is {quoted}"
    else:
        line = f"no clear winner: {quoted}, {_tail(best.tail)}"
    slower = [_quoted(one, baseline) for one in comparisons.slower() if one is not best]
    if slower:
        line += f"; {'also slower' if ratio.high < 1 else 'slower'}: {', '.join(slower)}"
    return line


def _quoted(one: Comparison, baseline: str) -> str:
    """A scheduler's speed-up with its interval: "random 0.71× fifo [0.66–0.75]"."""
    ratio = one.speedup
    return f"{one.scheduler} {ratio.value:.2f}× {baseline} [{ratio.low:.2f}–{ratio.high:.2f}]"


def _tail(ratio: Estimate) -> str:
    """The p99 ratio in words: worse or better by a factor when its interval excludes 1; else the
    ratio with the interval that holds 1 ("p99 0.54× [0.31–1.20], not clear"), so that a ratio
    far from 1 never reads as no difference."""
    if not math.isfinite(ratio.value):
        return "p99 unknown"
    if ratio.low > 1:
        return f"p99 {ratio.value:.3g}× worse"
    if ratio.high < 1:
        return f"p99 {1 / ratio.value:.3g}× better"
    if not (math.isfinite(ratio.low) and math.isfinite(ratio.high)):
        return f"p99 {ratio.value:.2f}×, too few repeats for an interval"
    return f"p99 {ratio.value:.2f}× [{ratio.low:.2f}–{ratio.high:.2f}], not clear"
