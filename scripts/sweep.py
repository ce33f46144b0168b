#!/usr/bin/env python3
"""Scheduler sweep: runs `tomii run` over schedulers x graphs x slots x workers x repeats.

Schedulers are every `libtomii_sched_*.so` beside the release `tomii` binary; graphs are every
`*.json` in examples/graphs. Trials run in a shuffled order (fixed seed) so that drift on the
machine does not favour one configuration. Writes one report JSON per trial, `results.csv`, a
summary table on stdout and two plots. A failed trial is recorded and the sweep goes on; the exit
status is then 1. Standard library plus matplotlib; it never builds anything.
"""

from __future__ import annotations

import argparse
import csv
import json
import random
import statistics
import subprocess
import sys
import time
from collections import defaultdict
from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from matplotlib.axes import Axes

ROOT = Path(__file__).resolve().parent.parent
SCHEDULER_PREFIX = "libtomii_sched_"

# Frames per graph, chosen so one trial takes about 0.1-0.3 s in release on 1-2 workers.
FRAMES = {"pipeline": 600, "fanout": 1000, "stream": 800}
DEFAULT_FRAMES = 1000


@dataclass(frozen=True)
class Trial:
    scheduler: str
    scheduler_path: Path
    graph: str
    graph_path: Path
    slots: int
    workers: int
    repeat: int
    frames: int

    def label(self) -> str:
        return f"{self.scheduler} {self.graph} slots={self.slots} workers={self.workers}"

    def report_name(self) -> str:
        parts = (self.scheduler, self.graph, self.slots, self.workers, self.repeat)
        return "{}_{}_s{}_w{}_r{}.json".format(*parts)


Key = tuple[str, str, int, int]  # scheduler, graph, slots, workers


@dataclass
class Row:
    """One trial's outcome: a line of results.csv (metrics are None when it failed)."""

    scheduler: str
    graph: str
    slots: int
    workers: int
    repeat: int
    frames: int
    wall_time_s: float | None = None
    throughput_frames_per_s: float | None = None
    latency_p50_us: float | None = None
    latency_p95_us: float | None = None
    latency_p99_us: float | None = None
    tasks_per_s: float | None = None
    mean_busy_fraction: float | None = None
    ok: bool = False
    error: str = ""

    def key(self) -> Key:
        return (self.scheduler, self.graph, self.slots, self.workers)


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs per configuration")
    parser.add_argument("--seed", type=int, default=2024, help="seed of the trial order")
    parser.add_argument("--slots", type=int, nargs="+", default=[1, 4, 16])
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument(
        "--frames",
        type=int,
        help="frames per trial for every graph (default: per graph)",
    )
    parser.add_argument("--bin-dir", type=Path, default=ROOT / "target" / "release")
    parser.add_argument("--graphs", type=Path, default=ROOT / "examples" / "graphs")
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "main")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds before a trial fails")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error("--repeats must be at least 1")
    return args


def discover_schedulers(bin_dir: Path) -> dict[str, Path]:
    """Scheduler name -> plugin path, for every `libtomii_sched_NAME.so` in `bin_dir`."""
    plugins = sorted(bin_dir.glob(f"{SCHEDULER_PREFIX}*.so"))
    # The file name has `_` where the scheduler's name has `-` (multi-slot-batch).
    return {p.stem.removeprefix(SCHEDULER_PREFIX).replace("_", "-"): p for p in plugins}


def discover_graphs(graph_dir: Path) -> dict[str, Path]:
    return {p.stem: p for p in sorted(graph_dir.glob("*.json"))}


def plan_trials(
    args: argparse.Namespace, schedulers: dict[str, Path], graphs: dict[str, Path]
) -> list[Trial]:
    """Every configuration `args.repeats` times, shuffled with `args.seed`."""
    trials = [
        Trial(s, s_path, g, g_path, slots, workers, r, frames_for(g, args.frames))
        for s, s_path in schedulers.items()
        for g, g_path in graphs.items()
        for slots in args.slots
        for workers in args.workers
        for r in range(args.repeats)
    ]
    random.Random(args.seed).shuffle(trials)
    return trials


def frames_for(graph: str, override: int | None) -> int:
    return override if override is not None else FRAMES.get(graph, DEFAULT_FRAMES)


def command(trial: Trial, tomii: Path, kernels: Path, report: Path) -> list[str]:
    return [
        str(tomii),
        "run",
        str(trial.graph_path),
        "--dylib",
        str(kernels),
        "--scheduler-plugin",
        str(trial.scheduler_path),
        "--workers",
        str(trial.workers),
        "--slots",
        str(trial.slots),
        "--frames",
        str(trial.frames),
        "--report",
        str(report),
        "--quiet",
    ]


def run_trial(trial: Trial, cmd: list[str], report: Path, timeout: float) -> Row:
    """Runs one trial; a failure becomes a row with ok=False and the error line."""
    report.unlink(missing_ok=True)
    try:
        done = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return failed_row(trial, f"timed out after {timeout:g} s")
    if done.returncode != 0:
        return failed_row(trial, error_line(done.stderr, done.returncode))
    try:
        return report_row(trial, json.loads(report.read_text()))
    except (OSError, ValueError, KeyError, TypeError) as error:
        return failed_row(trial, f"{report}: unreadable report: {error}")


def error_line(stderr: str, returncode: int) -> str:
    """The `error:` line of the CLI's stderr, else its last line, else the exit status."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    errors = [line for line in lines if line.startswith("error:")]
    if errors:
        return errors[-1]
    return lines[-1] if lines else f"exit status {returncode}"


def base_row(trial: Trial) -> Row:
    t = trial
    return Row(t.scheduler, t.graph, t.slots, t.workers, t.repeat, t.frames)


def failed_row(trial: Trial, error: str) -> Row:
    row = base_row(trial)
    row.error = error
    return row


def report_row(trial: Trial, report: dict[str, Any]) -> Row:
    row = base_row(trial)
    latency = report["latency_us"]
    row.frames = int(report["frames"])
    row.wall_time_s = float(report["wall_time_s"])
    row.throughput_frames_per_s = float(report["throughput_frames_per_s"])
    row.latency_p50_us = float(latency["p50"])
    row.latency_p95_us = float(latency["p95"])
    row.latency_p99_us = float(latency["p99"])
    row.tasks_per_s = float(report["tasks_per_s"])
    row.mean_busy_fraction = mean_busy_fraction(report)
    row.ok = True
    return row


def mean_busy_fraction(report: dict[str, Any]) -> float | None:
    """Mean over workers of the time spent in kernels; None without task timing."""
    fractions = [w["busy_fraction"] for w in report["per_worker"]]
    if not fractions or any(f is None for f in fractions):
        return None
    return statistics.fmean(fractions)


def run_sweep(trials: list[Trial], bin_dir: Path, out: Path, timeout: float) -> list[Row]:
    """Runs the trials in order, printing one progress line each."""
    tomii, kernels = bin_dir / "tomii", bin_dir / "libtomii_synthetic.so"
    reports = out / "reports"
    rows = []
    for k, trial in enumerate(trials, start=1):
        report = reports / trial.report_name()
        row = run_trial(trial, command(trial, tomii, kernels, report), report, timeout)
        print(f"[{k}/{len(trials)}] {trial.label()} -> {outcome(row)}", flush=True)
        rows.append(row)
    return rows


def outcome(row: Row) -> str:
    if row.ok:
        return f"{row.throughput_frames_per_s:.0f} frames/s"
    return f"FAILED: {row.error}"


def write_csv(rows: list[Row], path: Path) -> None:
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=[field.name for field in fields(Row)])
        writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if v is None else v for k, v in asdict(row).items()})


def samples(rows: list[Row], field: str) -> dict[Key, list[float]]:
    """The values of `field` over the successful repeats of each configuration."""
    groups: dict[Key, list[float]] = defaultdict(list)
    for row in rows:
        value = getattr(row, field)
        if row.ok and value is not None:
            groups[row.key()].append(float(value))
    return groups


def medians(rows: list[Row], field: str) -> dict[Key, float]:
    """Median of `field` over the successful repeats of each configuration."""
    return {k: statistics.median(v) for k, v in samples(rows, field).items()}


def summary_table(rows: list[Row]) -> str:
    """Median throughput and p99 latency per scheduler x graph x slots x workers."""
    throughput = medians(rows, "throughput_frames_per_s")
    p99 = medians(rows, "latency_p99_us")
    runs: dict[Key, list[bool]] = defaultdict(list)
    for row in rows:
        runs[row.key()].append(row.ok)
    header = ("scheduler", "graph", "slots", "workers", "ok/runs", "frames/s", "p99 us")
    lines = [header]
    for key in sorted(runs):
        ok = f"{sum(runs[key])}/{len(runs[key])}"
        tp = f"{throughput[key]:.0f}" if key in throughput else "-"
        lat = f"{p99[key]:.1f}" if key in p99 else "-"
        lines.append((key[0], key[1], str(key[2]), str(key[3]), ok, tp, lat))
    widths = [max(len(line[i]) for line in lines) for i in range(len(header))]
    return "\n".join(format_line(line, widths) for line in lines)


def format_line(cells: tuple[str, ...], widths: list[int]) -> str:
    """Text columns left-aligned, number columns right-aligned."""
    text = [c.ljust(w) for c, w in zip(cells[:2], widths[:2])]
    numbers = [c.rjust(w) for c, w in zip(cells[2:], widths[2:])]
    return "  ".join(text + numbers)


@dataclass(frozen=True)
class Figure:
    """What one plot shows: a results.csv column against slots."""

    field: str
    ylabel: str
    title: str
    file_name: str
    log_y: bool


FIGURES = [
    Figure(
        "throughput_frames_per_s",
        "throughput (frames/s)",
        "Throughput vs slots",
        "throughput_vs_slots.png",
        log_y=False,
    ),
    Figure(
        "latency_p99_us",
        "p99 frame latency (µs, log scale)",
        "p99 frame latency vs slots",
        "latency_p99_vs_slots.png",
        log_y=True,
    ),
]


def plot(rows: list[Row], figure: Figure, path: Path) -> None:
    """One panel per graph: `figure.field` vs slots, one line per scheduler and workers."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values = samples(rows, figure.field)
    graphs = sorted({key[1] for key in values})
    if not graphs:
        return
    fig, axes = plt.subplots(1, len(graphs), figsize=(4.5 * len(graphs), 4.3), squeeze=False)
    for ax, graph in zip(axes[0], graphs):
        draw_panel(ax, values, graph, figure)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="center left", bbox_to_anchor=(1.0, 0.5), fontsize="small")
    fig.suptitle(f"{figure.title} (median over repeats; bars: min to max)")
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")
    plt.close(fig)


def draw_panel(ax: Axes, values: dict[Key, list[float]], graph: str, figure: Figure) -> None:
    lines = sorted({(k[0], k[3]) for k in values if k[1] == graph})
    schedulers = sorted({scheduler for scheduler, _ in lines})
    worker_counts = sorted({workers for _, workers in lines})
    # One colour per scheduler, one line style per worker count.
    palette = matplotlib_colors(len(schedulers))
    styles = ["-", "--", ":", "-."]
    for i, (scheduler, workers) in enumerate(lines):
        # Nudge each line sideways (on the log-x axis) so error bars do not overlap.
        nudge = 2 ** (0.08 * (i - (len(lines) - 1) / 2))
        points = sorted(
            (k[2], v) for k, v in values.items() if k[:2] == (scheduler, graph) and k[3] == workers
        )
        xs = [slots * nudge for slots, _ in points]
        mid = [statistics.median(v) for _, v in points]
        spread = [[m - min(v) for m, (_, v) in zip(mid, points)]]
        spread.append([max(v) - m for m, (_, v) in zip(mid, points)])
        noun = "worker" if workers == 1 else "workers"
        label = f"{scheduler}, {workers} {noun}"
        ax.errorbar(
            xs,
            mid,
            yerr=spread,
            marker="o",
            capsize=3,
            label=label,
            color=palette[schedulers.index(scheduler)],
            linestyle=styles[worker_counts.index(workers) % len(styles)],
        )
    style_panel(ax, sorted({k[2] for k in values if k[1] == graph}), graph, figure)


def matplotlib_colors(count: int) -> list[tuple[float, float, float, float]]:
    """`count` distinct colours (tab10, or tab20 beyond ten)."""
    import matplotlib

    cmap = matplotlib.colormaps["tab10" if count <= 10 else "tab20"]
    return [cmap(i) for i in range(count)]


def style_panel(ax: Axes, slots: list[int], graph: str, figure: Figure) -> None:
    ax.set_xscale("log", base=2)
    ax.set_xticks(slots, [str(s) for s in slots])
    if figure.log_y:
        from matplotlib.ticker import LogFormatter

        ax.set_yscale("log")
        # Plain numbers (6000, not 6x10^3); minor ticks labelled only on short ranges.
        ax.yaxis.set_major_formatter(LogFormatter())
        ax.yaxis.set_minor_formatter(LogFormatter(labelOnlyBase=False))
    else:
        ax.set_ylim(bottom=0)
    ax.set_title(f"graph: {graph}")
    ax.set_xlabel("slots (frames in flight, log scale)")
    ax.set_ylabel(figure.ylabel)
    ax.grid(True, which="both", alpha=0.3)


def prepare_out(out: Path) -> None:
    """Creates the output folders and drops report JSONs left by an earlier sweep."""
    reports = out / "reports"
    reports.mkdir(parents=True, exist_ok=True)
    for stale in reports.glob("*.json"):
        stale.unlink()


def check_inputs(bin_dir: Path, schedulers: dict[str, Path], graphs: dict[str, Path]) -> str | None:
    """An error message if something the sweep needs is missing, else None."""
    build = "run `cargo build --release --workspace` first"
    for name in ("tomii", "libtomii_synthetic.so"):
        if not (bin_dir / name).is_file():
            return f"{bin_dir / name}: not found; {build}"
    if not schedulers:
        return f"{bin_dir}: no {SCHEDULER_PREFIX}*.so scheduler plugins; {build}"
    if not graphs:
        return "no graphs (*.json) found; pass --graphs DIR"
    return None


def main() -> int:
    args = parse_args()
    schedulers = discover_schedulers(args.bin_dir)
    graphs = discover_graphs(args.graphs)
    problem = check_inputs(args.bin_dir, schedulers, graphs)
    if problem:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    trials = plan_trials(args, schedulers, graphs)
    print(f"schedulers: {', '.join(schedulers)}; graphs: {', '.join(graphs)}")
    print(f"{len(trials)} trials, order shuffled with seed {args.seed}", flush=True)
    prepare_out(args.out)
    start = time.monotonic()
    rows = run_sweep(trials, args.bin_dir, args.out, args.timeout)
    elapsed = time.monotonic() - start
    write_csv(rows, args.out / "results.csv")
    print(f"\nsummary (medians over repeats; sweep took {elapsed:.1f} s):")
    print(summary_table(rows))
    for figure in FIGURES:
        plot(rows, figure, args.out / figure.file_name)
    print(f"\nwrote {args.out / 'results.csv'}, {args.out}/*.png, {args.out / 'reports'}/")
    failed = [row for row in rows if not row.ok]
    if failed:
        print(f"error: {len(failed)} of {len(rows)} trials failed", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
