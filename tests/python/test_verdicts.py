"""Verdicts and figures that read right: a p99 ratio whose interval holds 1 is quoted with that
interval, never as "no different"; every scheduler clearly slower than the baseline is named in its
verdict; a scheduler whose trials were all invalid keeps its place, marked so, in every figure; and
the tick labels of a panel never run into each other. The statistics behind them:
test_which_scheduler_wins.py."""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

from matplotlib.axes import Axes
from matplotlib.figure import Figure

from tomii.experiments import plot
from tomii.experiments.config import summary
from tomii.experiments.stats import Estimate
from tomii.experiments.verdict import Comparison, Comparisons, verdict

#: Multipliers of the repeats: a spread of ±3 %.
SPREAD = (0.97, 0.98, 0.99, 1.0, 1.01, 1.02, 1.03)


def row(trial: int, scheduler: str, graph: str, **changes: Any) -> dict[str, Any]:
    """One trial of `scheduler` on `graph`: throughput 1000 frames/s and p99 latency 1000 µs
    (times the repeat's spread), unless `changes` say otherwise."""
    noise = SPREAD[trial % len(SPREAD)]
    one = {
        "trial": trial,
        "order": trial,
        "scheduler": scheduler,
        "scheduler_options": "{}",
        "graph": graph,
        "workers": 2,
        "slots": 4,
        "frames": 100,
        "pop_batch": 1,
        "repeat": trial,
        "wall_time_s": 0.1,
        "throughput_frames_per_s": 1000.0 * noise,
        "tasks_per_s": 10000.0,
        "latency_mean_us": 500.0,
        "latency_p50_us": 400.0 * noise,
        "latency_p95_us": 800.0,
        "latency_p99_us": 1000.0 * noise,
        "critical_path_us": 40.0,
        "work_us": 120.0,
        "bound_frames_per_s": 25000.0,
        "efficiency": 0.5,
        "busy_mean": 0.5,
        "busy_per_worker": json.dumps([0.5, 0.5]),
        "valid": True,
        "problem": "",
    }
    return {**one, **changes}


def visible_axes(figure: Figure) -> list[Axes]:
    return [ax for ax in figure.axes if ax.get_visible()]


def labels(ax: Axes) -> list[str]:
    return [t.get_text() for t in ax.get_yticklabels()]


def flat(text: str) -> str:
    """A title without the line breaks that wrapping put in."""
    return " ".join(text.split())


def texts(ax: Axes) -> list[tuple[str, float]]:
    """The words drawn inside a panel, each with its height: the row of its category."""
    return sorted((text.get_text(), float(text.get_position()[1])) for text in ax.texts)


#: What a panel says in the row of a scheduler whose three trials there were invalid.
INVALID = "no valid trial: 3 invalid"


# --- the verdict ----------------------------------------------------------------------------


def estimate(value: float, low: float, high: float) -> Estimate:
    return Estimate(value, low, high, 10, 0.95)


def one_graph(*others: tuple[str, Estimate, Estimate]) -> Comparisons:
    """A graph's comparisons: fifo, the baseline, then `others` as (name, speed-up, p99 ratio)."""
    itself = Comparison("fifo", estimate(1.0, 0.97, 1.03), estimate(1.0, 0.95, 1.05))
    return Comparisons(("g",), "fifo", [itself, *(Comparison(*one) for one in others)], 0)


WINNER = ("work-stealing", estimate(1.31, 1.22, 1.40), estimate(3.1, 2.8, 3.4))
LOSER = ("random", estimate(0.71, 0.66, 0.75), estimate(1.0, 0.9, 1.1))
SLOWEST = ("priority", estimate(0.5, 0.45, 0.55), estimate(1.0, 0.9, 1.1))
#: Its speed-up's interval holds 1: neither a winner nor a loser.
TIED = ("lifo", estimate(0.95, 0.80, 1.10), estimate(1.0, 0.9, 1.1))


def test_a_p99_ratio_whose_interval_holds_1_is_quoted_with_its_interval() -> None:
    far = ("work-stealing", estimate(1.31, 1.22, 1.40), estimate(0.54, 0.31, 1.20))
    assert verdict(one_graph(far)) == (
        "work-stealing 1.31× fifo [1.22–1.40], p99 0.54× [0.31–1.20], not clear"
    )
    unclear = ("locality", estimate(0.92, 0.76, 1.04), estimate(1.18, 0.93, 1.51))
    assert verdict(one_graph(unclear)) == (
        "no clear winner: locality 0.92× fifo [0.76–1.04], p99 1.18× [0.93–1.51], not clear"
    )
    few = Estimate(0.54, math.nan, math.nan, 1, math.nan)
    assert verdict(one_graph((*far[:2], few))).endswith(
        "p99 0.54×, too few repeats for an interval"
    )
    # Where the interval excludes 1, the words the READMEs quote.
    better = ("critical-path", estimate(1.24, 1.235, 1.25), estimate(1 / 1.21, 0.8, 0.85))
    assert verdict(one_graph(better)) == "critical-path 1.24× fifo [1.24–1.25], p99 1.21× better"
    assert verdict(one_graph(WINNER)) == "work-stealing 1.31× fifo [1.22–1.40], p99 3.1× worse"


def test_every_scheduler_clearly_slower_than_the_baseline_is_named() -> None:
    assert verdict(one_graph(WINNER, LOSER, TIED, SLOWEST)) == (
        "work-stealing 1.31× fifo [1.22–1.40], p99 3.1× worse; "
        "slower: random 0.71× fifo [0.66–0.75], priority 0.50× fifo [0.45–0.55]"
    )
    assert verdict(one_graph(TIED, LOSER)) == (
        "no clear winner: lifo 0.95× fifo [0.80–1.10], p99 1.00× [0.90–1.10], not clear; "
        "slower: random 0.71× fifo [0.66–0.75]"
    )
    assert verdict(one_graph(LOSER, SLOWEST)) == (
        "fifo wins: the next best is random 0.71× fifo [0.66–0.75]; "
        "also slower: priority 0.50× fifo [0.45–0.55]"
    )
    assert verdict(one_graph(WINNER, TIED)).endswith("p99 3.1× worse")  # no one slower


def test_the_printed_table_names_the_clear_loser() -> None:
    speeds = {"fifo": 1.0, "work-stealing": 1.3, "random": 0.7}
    plan = itertools.product(speeds, range(len(SPREAD)))
    rows = [
        row(trial, name, "g", throughput_frames_per_s=1000.0 * speeds[name] * SPREAD[repeat])
        for trial, (name, repeat) in enumerate(plan)
    ]
    (line,) = [line for line in summary(rows).splitlines() if line.startswith("  g  ")]
    number = r"\d\.\d\d"
    assert re.fullmatch(
        rf"  g  work-stealing 1\.30× fifo \[{number}–{number}\], p99 .*; "
        rf"slower: random 0\.70× fifo \[0\.\d\d–0\.\d\d\]",
        line,
    ), line


# --- a scheduler with no valid trial --------------------------------------------------------

SCHEDULERS = ["fifo", "work-stealing", "random"]


def rows_with_invalid_trials() -> list[dict[str, Any]]:
    """fifo, work-stealing and random on graphs a and b at 1 and 4 slots, three repeats each:
    every trial of random stalled, and on graph b every trial of fifo as well."""
    plan = itertools.product(SCHEDULERS, ("a", "b"), (1, 4), range(3))
    rows = []
    for trial, (name, graph, slots, _) in enumerate(plan):
        failed = name == "random" or (name == "fifo" and graph == "b")
        changes = {"valid": False, "problem": "stalled"} if failed else {}
        speed = 1.5 if name == "work-stealing" else 1.0
        throughput = 1000.0 * speed * slots * SPREAD[trial % len(SPREAD)]
        rows.append(
            row(trial, name, graph, slots=slots, throughput_frames_per_s=throughput, **changes)
        )
    return rows


def test_the_speedup_figure_keeps_a_scheduler_with_no_valid_trial() -> None:
    figure = plot.speedup(rows_with_invalid_trials(), where={"slots": 4})
    a, b = visible_axes(figure)
    assert [ax.get_title().split("\n")[0] for ax in (a, b)] == ["a", "b"]
    assert labels(a) == SCHEDULERS  # and b's, which shares a's rows
    assert texts(a) == [(INVALID, SCHEDULERS.index("random"))]
    # On b, fifo, the baseline, has no valid trial either: the panel stays, without a verdict.
    assert b.get_title() == "b\nno valid trial of fifo: no verdict"
    assert texts(b) == [(INVALID, 0), (INVALID, SCHEDULERS.index("random"))]


def test_the_bars_keep_a_scheduler_with_no_valid_trial() -> None:
    rows = rows_with_invalid_trials()
    for figure in (
        plot.throughput(rows, where={"slots": 4}),
        plot.latency(rows, percentile="p95", where={"slots": 4}),
    ):
        a, b = visible_axes(figure)
        assert labels(a) == SCHEDULERS
        assert texts(a) == [(INVALID, SCHEDULERS.index("random"))]
        assert texts(b) == [(INVALID, 0), (INVALID, SCHEDULERS.index("random"))]


def test_the_line_figures_name_a_scheduler_with_no_valid_trial() -> None:
    rows = rows_with_invalid_trials()
    frames = [{"trial": r["trial"], "frame": 0, "latency_us": 500.0} for r in rows]
    cdf = visible_axes(plot.latency_cdf(rows, frames, where={"slots": 4}))
    scaling = visible_axes(plot.scaling(rows, x="slots"))  # over both slot counts: 6 trials
    for (a, b), trials in ((cdf, 3), (scaling, 6)):
        assert a.get_title() == f"a\nno valid trial: random ({trials} invalid)"
        assert flat(b.get_title()) == (
            f"b no valid trial: fifo ({trials} invalid), random ({trials} invalid)"
        )


def test_plot_draws_the_speedup_figure_when_one_scheduler_alone_is_valid(tmp_path: Path) -> None:
    rows = [r for r in rows_with_invalid_trials() if r["scheduler"] != "work-stealing"]
    rows = [r for r in rows if r["graph"] == "a" and r["slots"] == 4]
    paths = plot.plot(rows, out_dir=tmp_path)
    assert [p.name for p in paths] == ["speedup.png", "throughput.png", "latency_p50.png"]
    (panel,) = visible_axes(plot.speedup(rows))
    assert labels(panel) == ["fifo", "random"]
    assert texts(panel) == [(INVALID, 1)]


# --- legible axes ---------------------------------------------------------------------------


def overlapping_labels(figure: Figure) -> list[tuple[str, str]]:
    """Laid out as drawn: the pairs of tick labels of one axis whose boxes overlap."""
    figure.draw_without_rendering()
    pairs = []
    for ax in visible_axes(figure):
        for axis in (ax.xaxis, ax.yaxis):
            shown = [label for label in axis.get_ticklabels() if label.get_text()]
            for one, other in itertools.combinations(shown, 2):
                if one.get_window_extent().overlaps(other.get_window_extent()):
                    pairs.append((one.get_text(), other.get_text()))
    return pairs


def latency_rows(scale: float) -> list[dict[str, Any]]:
    """Four schedulers on three graphs, five repeats: p95 latencies of up to 21 × `scale` µs."""
    names = ["fifo", "work-stealing", "random", "critical-path"]
    plan = itertools.product(names, ("fast", "same", "slow"), range(5))
    return [
        row(
            trial,
            name,
            graph,
            latency_p95_us=scale * (1 + trial % 7) * (3 if name == "random" else 1),
        )
        for trial, (name, graph, _) in enumerate(plan)
    ]


def test_latency_panels_have_tick_labels_that_never_run_together() -> None:
    # Six-digit labels, which ran together; seven, which matplotlib wrote with 1e6 over the axis.
    for scale, units in ((12345.6, {"100k", "200k"}), (98765.4, {"1M", "2M"})):
        figure = plot.latency(latency_rows(scale), percentile="p95")
        assert overlapping_labels(figure) == [], scale
        shown = set()
        for ax in visible_axes(figure):
            assert ax.xaxis.get_offset_text().get_text() == ""  # nothing to multiply by
            shown |= {label.get_text() for label in ax.get_xticklabels() if label.get_text()}
        assert units <= shown and all(len(text) <= 5 for text in shown), shown


def test_scaling_turns_crowded_knob_values_upright() -> None:
    workers = [1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 16, 20, 24, 32]
    plan = itertools.product(("fifo", "work-stealing"), ("fast", "slow"), workers, range(2))
    rows = [
        row(trial, name, graph, workers=count, latency_p95_us=1234.5 * count * (1 + trial % 3))
        for trial, (name, graph, count, _) in enumerate(plan)
    ]
    figure = plot.scaling(rows, x="workers", y="latency_p95_us", log=False)
    assert overlapping_labels(figure) == []
    assert all(ax.get_xticklabels()[0].get_rotation() == 90 for ax in visible_axes(figure))
    few = plot.scaling([r for r in rows if r["workers"] in (1, 8, 32)], x="workers")
    assert all(ax.get_xticklabels()[0].get_rotation() == 0 for ax in visible_axes(few))
