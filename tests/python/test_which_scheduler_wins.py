"""Which scheduler wins: the intervals (exact order-statistic intervals of a median, checked against
enumeration; bootstrap intervals of a ratio of medians, their coverage on seeded synthetic data),
the speed-up figure (a panel per graph with its own axis, medians not means, every interval drawn,
the verdict in each panel), the verdict lines of the printed table, and that the two agree."""

from __future__ import annotations

import importlib
import itertools
import json
import math
import re
import statistics
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure
from reference import ROOT

from tomii.experiments import plot, stats
from tomii.experiments.config import load_config, summary
from tomii.experiments.verdict import compare, verdict

sweep_module = importlib.import_module("tomii.experiments.sweep")

SCHEDULERS = ("fifo", "work-stealing", "random")
#: Per graph: the factor by which each scheduler's throughput and p99 latency differ from fifo's.
#: "fast" separates, "same" overlaps 1, "slow" has every other scheduler below fifo.
GRAPHS = {
    "fast": {"work-stealing": (1.5, 3.0), "random": (1.2, 1.0)},
    "same": {"work-stealing": (1.0, 1.0), "random": (0.99, 0.5)},
    "slow": {"work-stealing": (0.5, 1.0), "random": (0.6, 1.0)},
}
REPEATS = 9
#: Multipliers of the repeats: skewed, so that the mean (≈ 1.09) is not the median (1.0).
SPREAD = (0.98, 0.985, 0.99, 0.995, 1.0, 1.005, 1.01, 1.3, 1.6)


def row(trial: int, scheduler: str, graph: str, repeat: int) -> dict[str, Any]:
    speed, tail = GRAPHS[graph].get(scheduler, (1.0, 1.0))
    noise = SPREAD[(repeat + trial) % REPEATS]
    throughput = 1000.0 * speed * noise * (9 if graph == "slow" else 1)
    return {
        "trial": trial,
        "order": trial,
        "scheduler": scheduler,
        "scheduler_options": "{}",
        "graph": graph,
        "workers": 2,
        "slots": 4,
        "frames": 100,
        "pop_batch": 1,
        "repeat": repeat,
        "wall_time_s": 100 / throughput,
        "throughput_frames_per_s": throughput,
        "tasks_per_s": 10 * throughput,
        "latency_mean_us": 500.0,
        "latency_p50_us": 400.0,
        "latency_p95_us": 800.0,
        "latency_p99_us": 1000.0 * tail * noise,
        "critical_path_us": 40.0,
        "work_us": 120.0,
        "bound_frames_per_s": 25000.0,
        "efficiency": 0.5,
        "busy_mean": 0.5,
        "busy_per_worker": json.dumps([0.5, 0.5]),
        "valid": True,
        "problem": "",
    }


def make_rows() -> list[dict[str, Any]]:
    plan = itertools.product(SCHEDULERS, GRAPHS, range(REPEATS))
    return [row(trial, s, g, r) for trial, (s, g, r) in enumerate(plan)]


def column(rows: list[dict[str, Any]], scheduler: str, graph: str, name: str) -> list[float]:
    return [r[name] for r in rows if (r["scheduler"], r["graph"]) == (scheduler, graph)]


def speedup_points(ax: Any, labels: list[str]) -> dict[str, tuple[float, float, float]]:
    """Per scheduler drawn in a speed-up panel whose rows are `labels`: (value, low, high) of its
    dot and whisker."""
    points = {}
    for container in ax.containers:
        line, _, (whisker,) = container.lines
        (y,) = line.get_ydata()
        (x,) = line.get_xdata()
        (segment,) = whisker.get_segments()
        points[labels[int(y)]] = (float(x), float(segment[0][0]), float(segment[1][0]))
    return points


# --- the intervals --------------------------------------------------------------------------


def enumerated_coverage(n: int, k: int) -> float:
    """P(x₍ₖ₎ ≤ median ≤ x₍ₙ₋ₖ₊₁₎) by enumeration: each sample falls below the true median or
    above it with probability ½; the interval holds the median when at least k fall below and at
    least k above."""
    below = [sum(signs) for signs in itertools.product((0, 1), repeat=n)]
    return sum(k <= b <= n - k for b in below) / float(2**n)


def test_median_ranks_are_exact() -> None:
    for n in range(2, 15):
        k, coverage = stats.median_ranks(n)
        assert coverage == pytest.approx(enumerated_coverage(n, k)), n
        if n >= 6:  # the largest k that still reaches 95%
            assert coverage >= 0.95 and enumerated_coverage(n, k + 1) < 0.95, n
        else:  # no interval reaches 95%: the range, and how far it falls short
            assert (k, coverage) == (1, 1 - 2 / 2**n), n
    assert stats.median_ranks(10) == (2, 1 - 2 * 11 / 1024)
    assert stats.median_ranks(12, level=0.9) == (3, 1 - 2 * (1 + 12 + 66) / 4096)
    with pytest.raises(ValueError, match="n must be an int ≥ 2"):
        stats.median_ranks(1)


def test_median_ci_on_small_cases() -> None:
    assert plot.median_ci([3.0, 1.0, 2.0]) == plot.Estimate(2.0, 1.0, 3.0, 3, 0.75)
    ten = plot.median_ci([float(v) for v in (9, 1, 8, 2, 7, 3, 6, 4, 5, 10)] + [math.nan])
    assert (ten.value, ten.low, ten.high, ten.n) == (5.5, 2.0, 9.0, 10)
    one = plot.median_ci([4.0])
    assert one.value == 4.0 and math.isnan(one.low) and one.n == 1
    assert plot.median_ci([]).n == 0


def test_median_ci_covers_the_median_as_often_as_it_says() -> None:
    generator = np.random.default_rng(17)
    samples = generator.lognormal(0.0, 0.5, size=(4000, 10))  # true median 1
    hits = [plot.median_ci(sample).low <= 1.0 <= plot.median_ci(sample).high for sample in samples]
    claimed = stats.median_ranks(10)[1]  # 0.9785
    assert abs(statistics.mean(hits) - claimed) < 0.01


def test_ratio_ci_is_the_ratio_of_medians_with_a_seeded_bootstrap() -> None:
    top, bottom = [1.0, 2.0, 30.0], [1.0, 1.0, 4.0]
    ratio = plot.ratio_ci(top, bottom)
    assert ratio.value == 2.0 and ratio.n == 3 and ratio.coverage == 0.95  # not the means' 5.4
    assert ratio.low <= ratio.value <= ratio.high
    assert plot.ratio_ci(top, bottom) == ratio  # the same data, the same interval
    assert plot.ratio_ci(top, bottom, seed=1).low <= ratio.value
    single = plot.ratio_ci([2.0], [1.0, 1.0])
    assert single.value == 2.0 and math.isnan(single.low)
    assert math.isnan(plot.ratio_ci([1.0, 2.0], [0.0, 0.0]).value)
    assert math.isnan(plot.ratio_ci([], [1.0]).value)


@pytest.mark.parametrize("n", [6, 10])
def test_ratio_ci_covers_the_true_ratio(n: int) -> None:
    generator = np.random.default_rng(23)
    hits = []
    for trial in range(300):
        top = 1.25 * generator.lognormal(0.0, 0.1, n)  # true medians 1.25 and 1
        bottom = generator.lognormal(0.0, 0.1, n)
        ratio = plot.ratio_ci(top, bottom, resamples=2000, seed=trial)
        hits.append(ratio.low <= 1.25 <= ratio.high)
    assert 0.90 <= statistics.mean(hits) <= 0.995


# --- the verdict ----------------------------------------------------------------------------


def test_the_verdict_names_the_winner_or_says_there_is_none() -> None:
    rows = make_rows()
    lines = {cell.cell[0]: verdict(cell) for cell in compare(rows)}
    number = r"\d\.\d\d"
    assert re.fullmatch(
        rf"work-stealing 1\.50× fifo \[{number}–{number}\], p99 3× worse", lines["fast"]
    )
    assert re.fullmatch(
        rf"no clear winner: work-stealing 1\.00× fifo \[{number}–{number}\], "
        rf"p99 1\.00× \[{number}–{number}\], not clear",
        lines["same"],
    )
    assert re.fullmatch(
        rf"fifo wins: the next best is random 0\.60× fifo \[{number}–{number}\]; "
        rf"also slower: work-stealing 0\.50× fifo \[{number}–{number}\]",
        lines["slow"],
    )
    (fast,) = [cell for cell in compare(rows) if cell.cell == ("fast",)]
    best = fast.best()
    assert best is not None and 1.1 < best.speedup.low < 1.5 < best.speedup.high < 2
    # Against another baseline, the figures turn around.
    against = {c.cell[0]: verdict(c) for c in compare(rows, baseline="work-stealing")}
    assert against["slow"].startswith("fifo 2.00× work-stealing [")
    with pytest.raises(ValueError, match="baseline 'lifo' is not in the sweep"):
        compare(rows, baseline="lifo")


def test_the_table_prints_medians_their_ratio_and_a_verdict_per_graph() -> None:
    rows = make_rows()
    lines = summary(rows).splitlines()
    assert lines[0].split()[:5] == ["graph", "scheduler", "frames/s", "×", "fifo"]
    fast = column(rows, "work-stealing", "fast", "throughput_frames_per_s")
    (printed,) = [line.split() for line in lines if line.startswith("fast") and "work-st" in line]
    assert printed[2] == f"{statistics.median(fast):.4g}" and printed[3] == "1.50"
    assert statistics.mean(fast) > 1.05 * statistics.median(fast)  # so a mean would show
    start = next(i for i, line in enumerate(lines) if line.startswith("verdict:"))
    assert "against fifo's" in lines[start] and "over 9 repeats" in lines[start]
    verdicts = {cell.cell[0]: verdict(cell) for cell in compare(rows)}
    assert [line.split(maxsplit=1) for line in lines[start + 1 :]] == [
        [graph, verdicts[graph]] for graph in GRAPHS
    ]
    other = summary(rows, baseline="random").splitlines()
    assert "× random" in other[0] and any("against random's" in line for line in other)


# --- the figure -----------------------------------------------------------------------------


def test_the_speedup_figure_has_a_panel_per_graph_with_medians_and_intervals() -> None:
    rows = make_rows()
    figure = plot.speedup(rows)
    panels = [ax for ax in figure.axes if ax.get_visible()]
    assert len(panels) == len(GRAPHS)
    verdicts = {cell.cell[0]: verdict(cell) for cell in compare(rows)}
    for ax, graph in zip(panels, GRAPHS):
        title = ax.get_title().split("\n")
        assert title[0] == graph
        assert " ".join(title[1:]) == verdicts[graph]  # the table's line, word for word
        assert ax.get_xlabel() == "throughput ÷ fifo's (median)"
        points = speedup_points(ax, list(SCHEDULERS))
        assert sorted(points) == ["random", "work-stealing"]
        for name, (value, low, high) in points.items():
            median = statistics.median(column(rows, name, graph, "throughput_frames_per_s"))
            base = statistics.median(column(rows, "fifo", graph, "throughput_frames_per_s"))
            assert value == pytest.approx(median / base)  # medians, as the table prints
            ratio = plot.ratio_ci(
                column(rows, name, graph, "throughput_frames_per_s"),
                column(rows, "fifo", graph, "throughput_frames_per_s"),
            )
            assert (low, high) == pytest.approx((ratio.low, ratio.high))
            assert low < value < high  # an interval is drawn
        left, right = ax.get_xlim()
        assert left < 1 < right and min(p[1] for p in points.values()) >= left
    # Every panel has its own axis, fitted to its own ratios.
    for ax in panels[1:]:
        assert ax not in panels[0].get_shared_x_axes().get_siblings(panels[0])
    assert panels[0].get_xlim() != panels[2].get_xlim()
    assert [t.get_text() for t in panels[0].get_yticklabels()] == list(SCHEDULERS)
    heading = " ".join(figure.get_suptitle().split())
    assert "Speed-up over fifo" in heading and "9 repeats" in heading
    assert "95% bootstrap interval" in heading


def test_the_speedup_figure_takes_a_baseline_and_an_axes() -> None:
    rows = make_rows()
    panels = [ax for ax in plot.speedup(rows, baseline="random").axes if ax.get_visible()]
    labels = [t.get_text() for t in panels[0].get_yticklabels()]
    assert labels == ["random", "fifo", "work-stealing"]  # the baseline first
    assert sorted(speedup_points(panels[0], labels)) == ["fifo", "work-stealing"]
    figure = Figure()
    ax = figure.add_subplot()
    assert plot.speedup(rows, where={"graph": "fast"}, ax=ax) is figure
    assert "fast" in ax.get_title()
    with pytest.raises(ValueError, match="baseline 'lifo'"):
        plot.speedup(rows, baseline="lifo")


def png_size(path: Path) -> tuple[int, int]:
    width, height = struct.unpack(">II", path.read_bytes()[16:24])
    return width, height


def test_the_figures_stay_legible_at_full_size(tmp_path: Path) -> None:
    """Eight schedulers on six graphs, as the main job runs: every PNG fits a screen at 100 %
    zoom, and its panels are wide enough to read."""
    names = [f"scheduler-{i}" for i in range(7)]
    graphs = [f"graph_{g}(width=32,cost=LogNormal(20,0.5),seed=0)" for g in range(6)]
    rows = []
    for trial, (s, g, r) in enumerate(itertools.product(["fifo", *names], graphs, range(5))):
        one = row(trial, "fifo", "fast", r)
        rows.append({**one, "scheduler": s, "graph": g})
    frames = [
        {"trial": r["trial"], "frame": f, "latency_us": 100.0 + f} for r in rows for f in range(5)
    ]
    paths = plot.plot(rows, frames, out_dir=tmp_path)
    names = ["speedup.png", "throughput.png", "latency_p50.png", "latency_cdf.png"]
    assert [p.name for p in paths] == names
    for path in paths:
        width, height = png_size(path)
        assert 900 <= width <= 1600 and 500 <= height <= 1400, (path.name, width, height)


# --- the main job ---------------------------------------------------------------------------


def test_the_main_job_runs_enough_repeats_against_fifo() -> None:
    config = load_config(ROOT / "experiments" / "which-scheduler-wins" / "sweep.toml")
    assert config["repeats"] >= 10  # fewer leave the intervals overlapping where schedulers differ
    assert config["plots"]["baseline"] == "fifo"


def test_the_environment_records_the_commit_of_an_installed_copy(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    source = ROOT / "experiments" / "which-scheduler-wins" / "sweep.toml"
    installed = Path(sys.prefix) / "lib" / "site-packages" / "tomii" / "experiments" / "sweep.py"
    monkeypatch.setattr(sweep_module, "__file__", str(installed))
    alone = sweep_module.environment({})
    assert alone["git_commit"] is None and alone["git_from"] is None
    found = sweep_module.environment({}, source=source)
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert (found["git_from"], found["git_commit"]) == ("source", head)
    assert found["source"] == str(source.resolve()) and isinstance(found["git_dirty"], bool)
    assert len(found["load_average"]) == 3
