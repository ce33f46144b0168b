"""The convergence figure: per graph, the best valid objective so far against the trial number,
one line per strategy, each valid trial a dot and each invalid one a cross along the bottom.

It reads trial rows (tomii.tune.driver.COLUMNS) and draws; it never runs or judges anything.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["convergence"]


def convergence(
    rows: Sequence[Mapping[str, Any]], path: str | Path, *, title: str | None = None
) -> Path:
    """Draws the rows' convergence into `path` (its suffix picks the format); returns it."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.transforms import blended_transform_factory

    graphs = list(dict.fromkeys(str(row["graph"]) for row in rows))
    strategies = list(dict.fromkeys(str(row["strategy"]) for row in rows))
    colours = {s: f"C{i}" for i, s in enumerate(strategies)}
    figure, axes = plt.subplots(
        1, len(graphs), figsize=(4.2 * len(graphs), 3.4), squeeze=False, layout="constrained"
    )
    for ax, graph in zip(axes[0], graphs):
        bottom = blended_transform_factory(ax.transData, ax.transAxes)
        for strategy in strategies:
            mine = [r for r in rows if r["graph"] == graph and r["strategy"] == strategy]
            if not mine:
                continue
            colour = colours[strategy]
            trials = [int(r["trial"]) + 1 for r in mine]
            best = [float(r["best_so_far"]) for r in mine]
            invalid = sum(1 for r in mine if not r["valid"])
            ax.step(trials, best, where="post", color=colour,
                    label=f"{strategy} ({len(mine) - invalid}/{len(mine)} valid)")  # fmt: skip
            valid = [(t, float(r["value"])) for t, r in zip(trials, mine) if r["valid"]]
            valid = [(t, v) for t, v in valid if math.isfinite(v)]
            if valid:
                ax.plot(*zip(*valid), ".", color=colour, alpha=0.35, markersize=4)
            crosses = [t for t, r in zip(trials, mine) if not r["valid"]]
            if crosses:
                ax.plot(crosses, [0.03] * len(crosses), "x", color=colour, markersize=4,
                        transform=bottom, clip_on=False)  # fmt: skip
        objective = str(mine[0]["objective"]) if mine else ""
        ax.set_title(_short(graph), fontsize=9)
        ax.set_xlabel("trial (× along the bottom: invalid)")
        ax.set_ylabel(f"best valid {objective} so far")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    if title:
        figure.suptitle(title, fontsize=10)
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(target, dpi=120)
    plt.close(figure)
    return target


def _short(name: str, most: int = 48) -> str:
    return name if len(name) <= most else name[: most - 1] + "…"
