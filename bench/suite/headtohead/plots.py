"""One PNG per workload (results/W1.png … W9.png, metg.png, python.png), from the summaries.

Bars are medians with min–max whiskers; Tomii's schedulers in blue, the peers in their own colours.
Plotting only: every number comes from report.Results, and nothing here writes anything else.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes
from matplotlib.patches import Patch

from .plan import REAL_SHAPES, SHAPES, Config
from .report import Metric, Results, metric_of
from .runtimes import RAYON, TBB

COLOURS = {TBB: "tab:orange", RAYON: "tab:green", "Dask": "tab:red"}


def _colour(runtime: str) -> str:
    return COLOURS.get(runtime, "tab:blue")


def _bars(
    ax: Axes,
    r: Results,
    configs: Sequence[Config],
    runtimes: Sequence[str],
    metric: Metric | None = None,
) -> None:
    """Grouped bars: one group per runtime, one bar per configuration (`metric`, or the table's),
    the configurations shaded light to dark."""
    width = 0.8 / max(1, len(configs))
    heights: list[float] = []
    for j, config in enumerate(configs):
        shown = metric or metric_of(r, config)
        for i, runtime in enumerate(runtimes):
            summary = r.get(config, runtime)
            if summary is None or not summary.ok:
                continue
            median, low, high = shown(summary)
            heights.append(median)
            x = i + (j - (len(configs) - 1) / 2) * width
            shade = _alpha(j, len(configs))
            ax.bar(x, median, width * 0.9, color=_colour(runtime), alpha=shade)
            ax.errorbar(x, median, [[median - low], [high - median]], color="black", lw=0.8)
        ax.set_ylabel(shown.name)
    if heights and min(heights) > 0 and max(heights) > 20 * min(heights):
        ax.set_yscale("log")  # so that the fast runtimes stay visible
    names = [x.removeprefix("tomii-") for x in runtimes]
    ax.set_xticks(range(len(runtimes)), names, rotation=45, ha="right")
    same_kernel = len({c.us for c in configs}) == 1
    ax.set_title(configs[0].kernel if same_kernel else "", fontsize=9)
    if len(configs) > 1:
        labels = [f"slots {c.slots}" if same_kernel else c.kernel for c in configs]
        n = len(configs)
        shades = [Patch(color="grey", alpha=_alpha(j, n), label=x) for j, x in enumerate(labels)]
        ax.legend(handles=shades, fontsize=7)


def _alpha(j: int, n: int) -> float:
    return 0.45 + 0.55 * (j + 1) / n


def _panel(ax: Axes, r: Results, configs: Sequence[Config]) -> None:
    _bars(ax, r, configs, r.runtimes)


def _figure(path: Path, panels: Sequence[Callable[[Axes], None]], title: str) -> None:
    fig, axes = plt.subplots(1, len(panels), figsize=(6 * len(panels), 4.2), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        panel(ax)
        ax.grid(axis="y", alpha=0.3)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def _workload(r: Results, key: str, out: Path) -> Path | None:
    configs = r.of(key)
    if not configs:
        return None
    title = SHAPES[key].title if key in SHAPES else REAL_SHAPES[key].title
    groups: list[list[Config]] = [[c] for c in configs]
    if key in REAL_SHAPES or SHAPES[key].multi_frame:
        groups = [[c for c in configs if c.us == us] for us in sorted({c.us for c in configs})]
    panels = [partial(_panel, r=r, configs=group) for group in groups]
    path = out / f"{key}.png"
    _figure(path, panels, f"{key}: {title} (2 workers; median, min–max)")
    return path


def _metg(r: Results, out: Path) -> Path | None:
    workloads = sorted({c.workload for c in r.plan.configs if c.sweep})
    if not workloads:
        return None

    def panel(ax: Axes, workload: str) -> None:
        tomii = plt.get_cmap("tab20b")
        for i, runtime in enumerate(r.runtimes):
            found, points = r.metg_of(runtime, workload)
            if not points:
                continue
            xs, ys = zip(*points)
            label = f"{runtime} ({found})"
            if runtime.startswith("tomii-"):
                ax.plot(xs, ys, "-", marker="o", ms=3, color=tomii(i * 2), label=label)
            else:
                ax.plot(xs, ys, "--", marker="s", lw=2, color=_colour(runtime), label=label)
        ax.axhline(0.5, color="grey", lw=0.8)
        ax.set_xscale("log", base=2)
        ax.set_xlabel("kernel µs")
        ax.set_ylabel("efficiency")
        ax.set_title(f"{workload}: efficiency against kernel duration")
        ax.legend(fontsize=6)

    path = out / "metg.png"
    _figure(path, [partial(panel, workload=w) for w in workloads], "METG(50%) sweep")
    return path


def _python(r: Results, out: Path) -> Path | None:
    keys = sorted({c.workload for c in r.plan.py_configs})
    if not keys:
        return None

    def panel(ax: Axes, key: str) -> None:
        configs = r.of(key)
        _bars(
            ax, r, configs, r.py_runtimes, Metric("µs/task", r.bounds[configs[0].graph_key].tasks)
        )
        ax.set_yscale("log")
        ax.set_ylabel("µs/task (log)")
        ax.set_title(f"{key}: " + " · ".join(c.kernel for c in configs), fontsize=8)

    path = out / "python.png"
    _figure(path, [partial(panel, key=k) for k in keys], "Python kernels: Tomii py_node vs Dask")
    return path


def plot_all(r: Results, out: Path) -> list[Path]:
    made = [_workload(r, key, out) for key in [*SHAPES, *REAL_SHAPES]]
    made += [_metg(r, out), _python(r, out)]
    return [path for path in made if path is not None]
