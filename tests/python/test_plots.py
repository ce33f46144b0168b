"""The sweep's figures (tomii.experiments.plot): the interval arithmetic on known numbers, invalid
trials kept out, the artists each figure holds, the files `plot()` writes, and one end-to-end run of
real trials through the runtime into every figure. The speed-up figure and the verdict:
test_which_scheduler_wins.py."""

from __future__ import annotations

import json
import math
import statistics
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.collections import PolyCollection
from matplotlib.container import BarContainer
from matplotlib.figure import Figure
from matplotlib.image import imread

import tomii
from tomii.experiments import plot

SCHEDULERS = ("fifo", "work-stealing")
GRAPHS = ("chain", "fanout")
SLOTS = (1, 4, 16)
REPEATS = 3
WORKERS = 3
T2 = 4.302652730  # t_{0.975, 2}: three repeats
PNG = b"\x89PNG\r\n\x1a\n"


def base_throughput(scheduler: str, graph: str, slots: int) -> float:
    return (
        1000.0
        * math.sqrt(slots)
        * (2 if scheduler == "work-stealing" else 1)
        * (1 if graph == "chain" else 3)
    )


def row(trial: int, scheduler: str, graph: str, slots: int, repeat: int) -> dict[str, Any]:
    """One trial; the repeats' throughputs are base − 10, base, base + 10 (mean base, s = 10)."""
    throughput = base_throughput(scheduler, graph, slots) + 10.0 * (repeat - 1)
    p50 = 100.0 * slots / (2 if scheduler == "work-stealing" else 1) + repeat
    return {
        "trial": trial,
        "order": trial,
        "scheduler": scheduler,
        "scheduler_options": "{}",
        "graph": graph,
        "workers": WORKERS,
        "slots": slots,
        "frames": 50,
        "pop_batch": 1,
        "repeat": repeat,
        "wall_time_s": 50 / throughput,
        "throughput_frames_per_s": throughput,
        "tasks_per_s": 10 * throughput,
        "latency_mean_us": p50 * 1.1,
        "latency_p50_us": p50,
        "latency_p95_us": p50 * 2,
        "latency_p99_us": p50 * 3,
        "critical_path_us": 40.0,
        "work_us": 120.0,
        "bound_frames_per_s": 25000.0,
        "efficiency": math.nan,
        "busy_mean": 0.5,
        "busy_per_worker": json.dumps([0.5] * WORKERS),
        "valid": True,
        "problem": "",
    }


def invalid(trial: int) -> dict[str, Any]:
    """A failed trial whose figures would dominate every statistic it entered."""
    bad = row(trial, "fifo", "chain", 16, 0)
    bad.update(throughput_frames_per_s=1e9, latency_p50_us=1e9, valid=False, problem="stalled")
    return bad


def make_rows(slots: tuple[int, ...] = SLOTS) -> list[dict[str, Any]]:
    configs = [(s, g, n, r) for s in SCHEDULERS for g in GRAPHS for n in slots for r in range(3)]
    rows = [row(i, *config) for i, config in enumerate(configs)]
    return [*rows, invalid(len(rows))]


def make_frames(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"trial": r["trial"], "frame": f, "latency_us": r["latency_p50_us"] * (1 + f % 5) / 3}
        for r in rows
        for f in range(20)
    ]


def make_trace(seed: int) -> tuple[np.ndarray[Any, Any], list[str]]:
    """12 tasks over 4 frames on workers 0 and 1 of 3 (worker 2 stays idle)."""
    records = np.zeros(12, dtype=np.dtype(tomii.TRACE_DTYPE))
    for i in range(12):
        start = 1_000 * (i + 1) + 100 * seed
        records[i] = (i // 3, start - 50, start, start + 800, i % 3, 0, i // 3 % 2, i % 2)
    return records, ["ingest", "work", "emit"]


def make_traces() -> dict[str, tuple[np.ndarray[Any, Any], list[str]]]:
    return {
        f"{s}|{g}|workers={WORKERS}|slots=4": make_trace(seed)
        for seed, (s, g) in enumerate((s, g) for s in SCHEDULERS for g in GRAPHS)
    }


def legend_texts(figure: Figure) -> list[str]:
    legends = [*figure.legends, *(ax.get_legend() for ax in figure.axes)]
    return [text.get_text() for legend in legends if legend for text in legend.get_texts()]


def bar_containers(ax: Any) -> list[BarContainer]:
    return [c for c in ax.containers if isinstance(c, BarContainer)]


def flat(text: str) -> str:
    """A title without the line breaks that wrapping put in."""
    return " ".join(text.split())


def visible_axes(figure: Figure) -> list[Any]:
    return [ax for ax in figure.axes if ax.get_visible()]


# --- the arithmetic -------------------------------------------------------------------------


def test_t_critical_is_the_table_up_to_30_and_close_above() -> None:
    assert plot.t_critical(1) == pytest.approx(12.706204736)
    assert plot.t_critical(2) == pytest.approx(T2)
    assert plot.t_critical(30) == pytest.approx(2.042272456)
    # Reference values of t_{0.975, df} beyond the table.
    for df, exact in [(31, 2.039513446), (60, 2.000297822), (1000, 1.962339081)]:
        assert plot.t_critical(df) == pytest.approx(exact, abs=5e-6)
    values = [plot.t_critical(df) for df in range(1, 200)]
    assert all(a > b for a, b in zip(values, values[1:]))
    with pytest.raises(ValueError, match="degrees of freedom"):
        plot.t_critical(0)


def test_mean_ci_is_mean_plus_minus_t_s_over_root_n() -> None:
    interval = plot.mean_ci([1.0, 2.0, 3.0])
    assert (interval.mean, interval.n) == (2.0, 3)
    assert interval.half_width == pytest.approx(T2 * 1.0 / math.sqrt(3))
    assert (interval.low, interval.high) == (2 - interval.half_width, 2 + interval.half_width)
    sample = [10.0, 12.0, 9.0, 15.0, 11.0]
    wide = plot.mean_ci([*sample, math.nan])  # not-a-number values are skipped
    expected = 2.776445105 * statistics.stdev(sample) / math.sqrt(5)
    assert wide.n == 5 and wide.mean == pytest.approx(11.4)
    assert wide.half_width == pytest.approx(expected)
    single = plot.mean_ci([7.0])
    assert single.mean == 7.0 and math.isnan(single.half_width)
    assert plot.mean_ci([]).n == 0


def test_summarize_groups_the_repeats_and_leaves_invalid_trials_out() -> None:
    rows = make_rows()
    summary = plot.summarize(rows, "throughput_frames_per_s", where={"slots": 16})
    assert summary.excluded == 1 and summary.config == {
        "workers": 3,
        "slots": 16,
        "frames": 50,
        "pop_batch": 1,
    }
    assert len(summary.cells) == 4 and summary.statistic == "median"
    base = base_throughput("fifo", "chain", 16)
    cell = summary.cells[("fifo", "chain")]
    # Three repeats: the median, and the range, which holds it with probability 3/4.
    assert (cell.value, cell.low, cell.high, cell.n) == (base, base - 10, base + 10, REPEATS)
    assert cell.coverage == 0.75
    means = plot.summarize(rows, "throughput_frames_per_s", where={"slots": 16}, statistic="mean")
    cell = means.cells[("fifo", "chain")]
    assert cell.value == pytest.approx(base) and cell.coverage == 0.95
    assert cell.high - cell.value == pytest.approx(T2 * 10 / math.sqrt(3))
    assert plot.summarize(rows, "throughput_frames_per_s", where={"slots": 4}).excluded == 0
    assert plot.summarize(rows, "efficiency", where={"slots": 4}).missing == 12
    with pytest.raises(ValueError, match="statistic 'mode'"):
        plot.summarize(rows, "efficiency", where={"slots": 4}, statistic="mode")


def test_summarize_refuses_to_mix_configurations() -> None:
    with pytest.raises(ValueError, match=r"several values of slots \(1, 16, 4\).*where=\{'slots'"):
        plot.summarize(make_rows(), "throughput_frames_per_s")
    with pytest.raises(ValueError, match="no row has the key 'colour'"):
        plot.summarize(make_rows(), "throughput_frames_per_s", keys=("colour",))


def test_a_column_beyond_the_measures_is_a_knob_and_never_pooled(tmp_path: Path) -> None:
    rows = [{**r, "stall_timeout_ms": 1000 * (1 + r["repeat"] % 2)} for r in make_rows((4,))]
    with pytest.raises(ValueError, match="several values of stall_timeout_ms"):
        plot.summarize(rows, "throughput_frames_per_s")
    summary = plot.summarize(rows, "throughput_frames_per_s", where={"stall_timeout_ms": 2000})
    assert summary.cells[("fifo", "chain")].n == 1  # repeat 1 alone
    assert summary.config["stall_timeout_ms"] == 2000
    paths = plot.plot(rows, out_dir=tmp_path)  # shows the largest value, and says so
    assert [p.name for p in paths] == [
        "speedup.png",
        "speedup_stall_timeout_ms1000.png",  # the other value's verdicts
        "throughput.png",
        "latency_p50.png",
    ]


# --- the figures ----------------------------------------------------------------------------


def bar_ends(ax: Any) -> list[float]:
    """The low and high end of each bar's whisker in turn, from the bars' error-bar lines."""
    (container,) = bar_containers(ax)
    assert container.errorbar is not None
    (whiskers,) = container.errorbar.lines[2]
    return [float(end) for s in whiskers.get_segments() for end in (s[0][0], s[1][0])]


def test_throughput_draws_a_panel_per_graph_with_a_bar_per_scheduler_and_its_interval() -> None:
    figure = plot.throughput(make_rows(), where={"slots": 16})
    panels = visible_axes(figure)
    assert [ax.get_title() for ax in panels] == list(GRAPHS)  # a panel per graph, not one axis
    for ax, graph in zip(panels, GRAPHS):
        (container,) = bar_containers(ax)
        expected = [base_throughput(s, graph, 16) for s in SCHEDULERS]
        assert [bar.get_width() for bar in container] == pytest.approx(expected)
        assert bar_ends(ax) == pytest.approx([e for v in expected for e in (v - 10, v + 10)])
        assert ax.get_xlabel() == "throughput (frames/s)"
        assert max(bar.get_width() for bar in container) < 1e6  # the invalid 1e9 is out
    assert [t.get_text() for t in panels[0].get_yticklabels()] == list(SCHEDULERS)
    # Each graph has its own axis: throughputs 3× apart do not squash one of them.
    assert panels[1] not in panels[0].get_shared_x_axes().get_siblings(panels[0])
    assert panels[1].get_xlim()[1] > 2 * panels[0].get_xlim()[1]
    title = flat(figure.get_suptitle())
    assert "slots=16" in title and "1 invalid trial excluded" in title
    assert "median, range of the repeats (holds the median with probability 75%)" in title
    assert panels[0].get_xscale() == "linear"
    logged = plot.throughput(make_rows(), where={"slots": 4}, log=True)
    assert visible_axes(logged)[0].get_xscale() == "log"


def test_rows_in_finishing_order_keep_the_plan_order_and_colours() -> None:
    rows = make_rows()
    planned = plot.throughput(rows, where={"slots": 4}).axes[0]
    finished = plot.throughput(rows[::-1], where={"slots": 4}).axes[0]
    assert finished.get_title() == GRAPHS[0]
    assert [t.get_text() for t in finished.get_yticklabels()] == list(SCHEDULERS)
    for mine, theirs in zip(bar_containers(planned)[0], bar_containers(finished)[0]):
        assert mine.get_facecolor() == theirs.get_facecolor()


def test_latency_takes_a_percentile_and_an_axes() -> None:
    figure = Figure()
    ax = figure.add_subplot()
    where = {"slots": 4, "graph": "chain"}
    assert plot.latency(make_rows(), percentile="p99", where=where, ax=ax) is figure
    assert ax.get_xlabel() == "p99 frame latency (µs)"
    assert "0 invalid trials excluded" in flat(ax.get_title())
    assert [t.get_text() for t in ax.get_yticklabels()] == list(SCHEDULERS)
    with pytest.raises(ValueError, match="the data holds 2 panels"):
        plot.latency(make_rows(), where={"slots": 4}, ax=ax)
    with pytest.raises(ValueError, match="percentile 'p90'"):
        plot.latency(make_rows(), percentile="p90")


def test_latency_cdf_draws_a_line_per_scheduler_per_graph() -> None:
    rows = make_rows()
    figure = plot.latency_cdf(rows, make_frames(rows), where={"slots": 16})
    panels = visible_axes(figure)
    assert [ax.get_title() for ax in panels] == list(GRAPHS)
    for ax in panels:
        lines = ax.get_lines()
        assert len(lines) == len(SCHEDULERS)
        assert all(line.get_ydata()[-1] == 1.0 for line in lines)
        assert max(max(line.get_xdata()) for line in lines) < 1e6  # the invalid trial's frames
        assert ax.get_xlabel() == "frame latency (µs)"
    assert "1 invalid trial excluded" in flat(figure.get_suptitle())
    one = plot.latency_cdf(rows, make_frames(rows), graph="chain", where={"slots": 1})
    assert len(visible_axes(one)) == 1


def test_scaling_draws_a_line_and_a_band_per_scheduler_over_the_knob() -> None:
    figure = plot.scaling(make_rows(), x="slots")
    panels = visible_axes(figure)
    assert len(panels) == len(GRAPHS)
    for ax in panels:
        assert [list(line.get_xdata()) for line in ax.get_lines()] == [[1, 4, 16]] * 2
        bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
        assert len(bands) == len(SCHEDULERS)
        assert ax.get_xlabel() == "slots" and ax.get_xscale() == "log"
    assert legend_texts(figure) == list(SCHEDULERS)
    assert flat(figure.get_suptitle()).startswith(
        "Throughput over slots workers=3, frames=50, pop_batch=1"
    )


def test_gantt_has_a_lane_per_worker_and_colours_by_node_for_one_frame() -> None:
    records, names = make_trace(0)
    figure = plot.gantt(records, names, workers=WORKERS)
    (ax,) = figure.axes
    assert len(ax.collections) == WORKERS  # worker 2 is idle but keeps its lane
    assert [t.get_text() for t in ax.get_yticklabels()] == ["0", "1", "2"]
    assert (
        ax.get_ylabel() == "worker" and ax.get_xlabel() == "time since the first task started (µs)"
    )
    assert sum(len(c.get_paths()) for c in ax.collections) == len(records)
    assert len(plot.gantt(records, names).axes[0].collections) == 2  # lanes seen in the trace
    single = plot.gantt(records, names, frame=1)
    assert legend_texts(single) == names
    assert "frame 1" in single.axes[0].get_xlabel()
    with pytest.raises(ValueError, match="frame 9 is not in the trace"):
        plot.gantt(records, names, frame=9)


def test_gantts_draws_a_panel_per_scheduler_for_one_graph() -> None:
    figure = plot.gantts(make_traces(), graph="chain")
    assert [ax.get_title() for ax in figure.axes] == [
        f"{s} (workers={WORKERS}, slots=4)" for s in SCHEDULERS
    ]
    assert all(len(ax.collections) == WORKERS for ax in figure.axes)
    reordered = plot.gantts(make_traces(), graph="chain", schedulers=["work-stealing"])
    assert reordered.axes[0].get_title().startswith("work-stealing")
    assert "chain" in flat(figure.get_suptitle())
    with pytest.raises(ValueError, match="pass graph="):
        plot.gantts(make_traces())


# --- plot() ---------------------------------------------------------------------------------


def assert_images(paths: list[Path]) -> None:
    for path in paths:
        assert path.read_bytes().startswith(PNG), path
        pixels = imread(path)
        assert pixels.shape[0] > 100 and pixels.std() > 0.01, path  # something is drawn


#: What `plot.plot` draws, beside a Gantt chart per graph, from trials over several slot counts
#: (sorted by name, after the Gantt charts): the figures at the largest slot count, and a speed-up
#: figure for each other one.
FIGURES = [
    "latency_cdf.png",
    "latency_p50.png",
    "scaling_slots_latency_p50.png",
    "scaling_slots_throughput.png",
    "speedup.png",
    "speedup_slots1.png",
    "speedup_slots4.png",
    "throughput.png",
]


def test_plot_writes_every_figure_the_data_supports(tmp_path: Path) -> None:
    rows = make_rows()
    paths = plot.plot(rows, make_frames(rows), make_traces(), out_dir=tmp_path)
    assert sorted(p.name for p in paths) == ["gantt_chain.png", "gantt_fanout.png", *FIGURES]
    assert all(p.parent == tmp_path for p in paths)
    assert_images(paths)


def test_the_gantt_charts_show_the_knobs_the_other_figures_show(tmp_path: Path) -> None:
    traces = {
        f"{s}|chain|workers={WORKERS}|slots={n}": make_trace(seed)
        for seed, (s, n) in enumerate((s, n) for s in SCHEDULERS for n in SLOTS)
    }
    plot.plot(make_rows(), traces=traces, out_dir=tmp_path)  # the other figures: slots=16
    shown = plot._shown_traces(traces, {"slots": 16})
    assert sorted(shown) == [f"{s}|chain|workers={WORKERS}|slots=16" for s in SCHEDULERS]
    # No trace at the value shown: the largest the traces hold.
    fewer = {key: trace for key, trace in traces.items() if not key.endswith("=16")}
    assert sorted(plot._shown_traces(fewer, {"slots": 16})) == [
        f"{s}|chain|workers={WORKERS}|slots=4" for s in SCHEDULERS
    ]
    assert imread(tmp_path / "gantt_chain.png").shape[0] < 1000  # two panels, not six


def test_plot_draws_only_what_the_data_supports(tmp_path: Path) -> None:
    paths = plot.plot(make_rows(slots=(4,)), out_dir=tmp_path / "new", formats=("png", "svg"))
    assert sorted(p.name for p in paths) == [
        "latency_p50.png",
        "latency_p50.svg",
        "speedup.png",
        "speedup.svg",
        "throughput.png",
        "throughput.svg",
    ]
    assert_images([p for p in paths if p.suffix == ".png"])
    with pytest.raises(ValueError, match="formats \\['jpgg'\\]"):
        plot.plot(make_rows(), formats=("jpgg",))


# --- end to end -----------------------------------------------------------------------------


def frame_latencies(trace: np.ndarray[Any, Any]) -> list[float]:
    """Per frame: from its first task's ready time to its last task's end, in µs."""
    frames = np.unique(trace["frame"])
    return [
        float(
            trace["end_ns"][trace["frame"] == f].max()
            - trace["ready_ns"][trace["frame"] == f].min()
        )
        / 1e3
        for f in frames
    ]


def test_real_runs_make_every_figure(tmp_path: Path) -> None:
    graph = tomii.graphs.streaming_pipeline(width=4)
    rows: list[dict[str, Any]] = []
    frames: list[dict[str, Any]] = []
    traces: dict[str, tuple[np.ndarray[Any, Any], list[str]]] = {}
    for scheduler in ("fifo", "work-stealing"):
        for slots in (1, 4):
            for repeat in range(2):
                result = tomii.run_graph(
                    graph,
                    dylibs=[tomii.find_plugin("synthetic")],
                    scheduler=scheduler,
                    workers=2,
                    slots=slots,
                    frames=20,
                    trace=True,
                )
                assert result.trace is not None
                trial = len(rows)
                rows.append(real_row(trial, result.report, graph, repeat))
                frames += [
                    {"trial": trial, "frame": f, "latency_us": v}
                    for f, v in enumerate(frame_latencies(result.trace))
                ]
                traces[f"{scheduler}|{graph['name']}|workers=2|slots={slots}"] = (
                    result.trace,
                    result.node_names,
                )
    paths = plot.plot(rows, frames, traces, out_dir=tmp_path)
    gantt = "gantt_streaming_pipeline_width_4_cost_Fixed_0_seed_0.png"
    assert sorted(p.name for p in paths) == [
        gantt,
        *(f for f in FIGURES if f != "speedup_slots4.png"),
    ]
    assert_images(paths)
    figure = plot.gantts(traces)
    assert len(figure.axes) == 4 and all(len(ax.collections) == 2 for ax in figure.axes)


def real_row(
    trial: int, report: tomii.Report, graph: dict[str, Any], repeat: int
) -> dict[str, Any]:
    """A row as the sweep writes it, from a run's report."""
    latency = report.latency_us
    busy = [w["busy_fraction"] for w in report.per_worker]
    return {
        "trial": trial,
        "order": trial,
        "scheduler": report.scheduler,
        "scheduler_options": "{}",
        "graph": graph["name"],
        "workers": report.workers,
        "slots": report.slots,
        "frames": report.frames,
        "pop_batch": 1,
        "repeat": repeat,
        "wall_time_s": report.wall_time_s,
        "throughput_frames_per_s": report.throughput_frames_per_s,
        "tasks_per_s": report.tasks_per_s,
        **{f"latency_{k}_us": latency[k] for k in ("mean", "p50", "p95", "p99")},
        "critical_path_us": tomii.graphs.critical_path_us(graph),
        "work_us": tomii.graphs.total_work_us(graph),
        "bound_frames_per_s": math.nan,
        "efficiency": math.nan,
        "busy_mean": statistics.mean(busy),
        "busy_per_worker": json.dumps(busy),
        "valid": True,
        "problem": "",
    }
