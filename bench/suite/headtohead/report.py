"""The suite's markdown: the targets, one table per workload (W7–W9: real C kernels), METG and the
Python-kernel table,
written to results/summary.md and between the markers of bench/README.md.

Every figure comes from the measurements of this invocation; nothing here may type a number in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from .environment import Environment
from .metrics import Bounds, Metg, Summary, metg, time_ratio
from .plan import PY_SHAPES, REAL_SHAPES, SHAPES, Config, Plan
from .runtimes import DASK, RAYON, TBB

BEGIN, END = "<!-- suite:begin -->", "<!-- suite:end -->"
FIFO = "tomii-fifo"
PEERS = (TBB, RAYON)
Summaries = Mapping[tuple[Config, str], Summary]


@dataclass(frozen=True)
class Results:
    """Everything the report reads: the plan, the runtimes in table order and the summaries."""

    plan: Plan
    runtimes: list[str]
    summaries: Summaries
    bounds: Mapping[str, Bounds]
    py_runtimes: list[str]
    env: Environment

    def get(self, config: Config, runtime: str) -> Summary | None:
        return self.summaries.get((config, runtime))

    def of(self, workload: str, sweep: bool = False) -> list[Config]:
        """The configurations of `workload` (its METG sweep points with `sweep`), in plan order."""
        return [c for c in self.plan.all_configs() if c.workload == workload and c.sweep == sweep]

    def ideal_s(self, config: Config) -> float:
        return self.bounds[config.graph_key].ideal_s(config.frames, config.slots)

    def metg_of(self, runtime: str, workload: str) -> tuple[Metg, list[tuple[int, float]]]:
        points = []
        for config in self.of(workload, sweep=True):
            summary = self.get(config, runtime)
            if summary is not None and summary.ok:
                points.append((config.us, summary.efficiency(self.ideal_s(config))[0]))
        return metg(points), points


# ---------------------------------------------------------------------------------------------
# Cells


def _num(value: float) -> str:
    if value >= 100:
        return f"{value:,.0f}"
    return f"{value:.3g}" if value >= 1 else f"{value:.2f}"


def _spread(values: tuple[float, float, float]) -> str:
    median, low, high = values
    return f"{_num(median)} ({_num(low)}–{_num(high)})"


def _failed(summary: Summary | None) -> str | None:
    """The cell of a configuration with no successful run, or None when there is one."""
    if summary is None:
        return "not run"
    if not summary.ok:
        return f"failed ({len(summary.errors)}×, see Failures)"
    return None


def _value(summary: Summary | None, metric: Metric) -> str:
    failed = _failed(summary)
    if failed is not None or summary is None:
        return failed or ""
    extra = f" [{len(summary.errors)} failed]" if summary.errors else ""
    return _spread(metric(summary)) + extra


def _ratio(value: float | None, digits: int = 2) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _mark(ok: bool) -> str:
    return "✓" if ok else "✗"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    aligns = ["---"] + ["---:"] * (len(header) - 1)
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(aligns) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


# ---------------------------------------------------------------------------------------------
# Tables


@dataclass(frozen=True)
class Metric:
    """What a cell shows: "ns/task" or "µs/task" (per `scale` tasks), "efficiency" (against an
    ideal of `scale` s) or "frames/s"; called on a summary, its median, min and max."""

    name: str
    scale: float = 1.0

    def __call__(self, s: Summary) -> tuple[float, float, float]:
        if self.name == "frames/s":
            return s.frames_per_s()
        if self.name == "efficiency":
            return s.efficiency(self.scale)
        median, low, high = s.ns_per_task(round(self.scale))
        factor = 1e-3 if self.name == "µs/task" else 1.0
        return median * factor, low * factor, high * factor


def metric_of(r: Results, config: Config) -> Metric:
    """ns/task for empty kernels, efficiency for spinning ones, frames/s for several frames."""
    if config.frames > 1:
        return Metric("frames/s")
    if config.us == 0:
        return Metric("ns/task", r.bounds[config.graph_key].tasks)
    return Metric("efficiency", r.ideal_s(config))


def _workload_table(r: Results, configs: Sequence[Config], heads: Sequence[str]) -> list[str]:
    header = ["runtime"]
    for config, head in zip(configs, heads):
        header += [f"{head}: {metric_of(r, config).name}", f"time ÷ {TBB}", f"time ÷ {RAYON}"]
    rows = []
    for runtime in r.runtimes:
        row = [runtime]
        for config in configs:
            row.append(_value(r.get(config, runtime), metric_of(r, config)))
            row += [_ratio(time_ratio(r.summaries, config, runtime, peer)) for peer in PEERS]
        rows.append(row)
    return _table(header, rows)


def _workload_sections(r: Results) -> list[str]:
    lines: list[str] = []
    for key, shape in SHAPES.items():
        configs = r.of(key)
        if not configs:
            continue
        title = f"**{key}: {shape.title}**"
        if not shape.multi_frame:
            lines += ["", title, "", *_workload_table(r, configs, [c.kernel for c in configs])]
            continue
        lines += ["", f"{title}, {configs[0].frames} frames"]
        for us in sorted({c.us for c in configs}):
            chosen = [c for c in configs if c.us == us]
            label = "empty kernels" if us == 0 else f"{us} µs kernels"
            heads = [f"slots {c.slots}" for c in chosen]
            lines += ["", f"{key}, {label}:", "", *_workload_table(r, chosen, heads)]
    return lines


def _real_sections(r: Results) -> list[str]:
    lines: list[str] = []
    for key, shape in REAL_SHAPES.items():
        configs = r.of(key)
        if not configs:
            continue
        heads = [f"slots {c.slots}" for c in configs]
        title = f"**{key}: {shape.title}**, {configs[0].frames} frames"
        lines += ["", title, "", *_workload_table(r, configs, heads)]
    if lines:
        note = (
            "W7–W9 run the examples' own C kernels in every runtime: the peers call them from the "
            'same library through the kernel ABI (bench/peers/README.md, "The kernel DAG file"), '
            "and a peer run counts only if its last frame's sink values equal a Tomii run's."
        )
        lines = ["", note, *lines]
    return lines


def _metg_section(r: Results) -> list[str]:
    workloads = sorted({c.workload for c in r.plan.configs if c.sweep})
    if not workloads:
        return []
    header = ["runtime"] + [f"{w} METG(50%)" for w in workloads]
    header += [f"{w} efficiency at {', '.join(map(str, r.plan.sweep_us))} µs" for w in workloads]
    rows = []
    for runtime in r.runtimes:
        found = [r.metg_of(runtime, w) for w in workloads]
        curves = [" / ".join(f"{eff:.2f}" for _, eff in points) or "–" for _, points in found]
        rows.append([runtime, *(str(m) for m, _ in found), *curves])
    sweep = ", ".join(map(str, r.plan.sweep_us))
    intro = (
        f"**METG(50%)** on {' and '.join(workloads)} (kernels of {sweep} µs; median efficiency "
        "per duration; `< 1 µs`: still at 50% or more at the shortest kernel `spin` can run):"
    )
    return ["", intro, "", *_table(header, rows)]


def _python_section(r: Results) -> list[str]:
    if not r.plan.py_configs:
        return []
    lines = [
        "",
        (
            "**Python kernels**: the same Python busy-spin on both sides, the whole call timed "
            "(`Graph.run` / `dask.compute`), 2 workers; the GIL runs one Python kernel at a "
            "time, so a run takes at least the total kernel time."
        ),
    ]
    for key, shape in PY_SHAPES.items():
        configs = r.of(key)
        if not configs:
            continue
        header = ["runtime"]
        for config in configs:
            header += [f"{config.kernel}: µs/task", f"time ÷ {DASK}"]
        rows = []
        for runtime in r.py_runtimes:
            row = [runtime]
            for config in configs:
                metric = Metric("µs/task", r.bounds[config.graph_key].tasks)
                row.append(_value(r.get(config, runtime), metric))
                row.append(_ratio(time_ratio(r.summaries, config, runtime, DASK)))
            rows.append(row)
        lines += ["", f"{key}: {shape.title}:", "", *_table(header, rows)]
    return lines


def _failures(r: Results) -> list[str]:
    lines = []
    for (config, runtime), summary in r.summaries.items():
        for error in sorted(set(summary.errors)):
            count = summary.errors.count(error)
            lines.append(f"- {config.label()}, {runtime} ({count}×): {error}")
    return ["", "**Failures**", "", *lines] if lines else []


# ---------------------------------------------------------------------------------------------
# Targets


def _best(values: Mapping[str, float], higher: bool = False) -> str:
    """The Tomii scheduler with the best value, and that value."""
    if not values:
        return "–"
    best = (max if higher else min)(values, key=lambda runtime: values[runtime])
    return f"{best} {values[best]:.3f}"


def _tomii(r: Results, config: Config) -> list[Summary]:
    found = (r.get(config, x) for x in r.runtimes if x.startswith("tomii-"))
    return [s for s in found if s is not None and s.ok]


def _empty_targets(r: Results) -> list[list[str]]:
    rows = []
    for key in ("W1", "W2", "W3"):
        config = _find(r, key, 0)
        tbb = r.get(config, TBB) if config else None
        if config is None or tbb is None or not tbb.ok:
            continue
        ratio = time_ratio(r.summaries, config, FIFO, TBB)
        best = _best({s.runtime: s.median_s / tbb.median_s for s in _tomii(r, config)})
        met = _mark(ratio is not None and ratio <= 1)
        rows.append([f"{key} empty: time ÷ {TBB} ≤ 1", _ratio(ratio, 3), met, best])
    return rows


def _efficiency_targets(r: Results) -> list[list[str]]:
    rows = []
    for key in ("W2", "W3"):
        config = _find(r, key, 10)
        fifo = r.get(config, FIFO) if config else None
        if config is None or fifo is None or not fifo.ok:
            continue
        ideal = r.ideal_s(config)
        eff = fifo.efficiency(ideal)[0]
        best = _best({s.runtime: s.efficiency(ideal)[0] for s in _tomii(r, config)}, higher=True)
        rows.append([f"{key} 10 µs: efficiency ≥ 0.96", f"{eff:.3f}", _mark(eff >= 0.96), best])
    for key in sorted({c.workload for c in r.plan.configs if c.sweep}):
        found, _ = r.metg_of(FIFO, key)
        bound = found.us if found.us is not None else found.below
        rows.append(
            [f"{key}: METG(50%) ≤ 1 µs", str(found), _mark(bound is not None and bound <= 1), ""]
        )
    return rows


def _frames_targets(r: Results) -> list[list[str]]:
    rows = []
    frames = (c for c in r.plan.configs if c.workload in SHAPES and c.frames > 1)
    for config in (c for c in frames if c.slots in (4, 16)):
        peers = [r.get(config, peer) for peer in PEERS]
        fastest = min((p.median_s for p in peers if p is not None and p.ok), default=None)
        ratios = [time_ratio(r.summaries, config, FIFO, peer) for peer in PEERS]
        met = _mark(all(x is not None and x < 1 for x in ratios))
        best = "–"
        if fastest is not None:
            best = _best({s.runtime: s.median_s / fastest for s in _tomii(r, config)})
        label = f"{config.workload} {config.kernel}, slots {config.slots}: time ÷ each peer < 1"
        rows.append([label, " / ".join(_ratio(x, 3) for x in ratios), met, best])
    return rows


def _targets(r: Results) -> list[str]:
    rows = _empty_targets(r) + _efficiency_targets(r) + _frames_targets(r)
    header = ["target (Tomii-fifo)", "measured", "met", "best Tomii scheduler"]
    note = (
        f"Ratios are time ÷ {TBB} (and ÷ {RAYON} after the slash); the best scheduler's figure is "
        f"its time ÷ {TBB} (empty), its efficiency (10 µs) or its time ÷ the faster peer (frames)."
    )
    return ["", "**Targets**", "", *_table(header, rows), "", note]


def _find(r: Results, workload: str, us: int) -> Config | None:
    found = [c for c in r.of(workload) if c.us == us]
    return found[0] if found else None


# ---------------------------------------------------------------------------------------------
# Output


def markdown(r: Results) -> str:
    intro = [
        (
            f"Measured by {r.env.describe()} {r.plan.repeats} run(s) of every measurement, "
            "interleaved across runtimes; cells give the median (min–max); ratios are median "
            "wall time over the peer's median in this invocation (< 1: faster than the peer)."
        )
    ]
    body = _targets(r) + _workload_sections(r) + _real_sections(r) + _metg_section(r)
    body += _python_section(r)
    return "\n".join(intro + body + _failures(r)) + "\n"


def update_readme(readme: Path, table: str) -> None:
    """Replaces what lies between the suite's markers in `readme`."""
    text = readme.read_text(encoding="utf-8")
    start, end = text.find(BEGIN), text.find(END)
    if start < 0 or end < start:
        raise ValueError(
            f"{readme}: no {BEGIN} … {END} markers; add them to its Head-to-head section"
        )
    updated = text[: start + len(BEGIN)] + "\n" + table + text[end:]
    readme.write_text(updated, encoding="utf-8")
