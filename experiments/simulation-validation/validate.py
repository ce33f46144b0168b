"""Does the simulator agree with real runs? Every shipped scheduler runs three graphs whose
kernels `spin` for 100 µs to 1 ms, on 1 and 2 real workers, and the same configurations are
simulated (`tomii.simulate`, the spin arguments as the cost model); the table gives the makespan
(wall time) and median frame latency of both and their ratio, the figure plots simulated against
real. Run from a checkout with the package installed:

    python experiments/simulation-validation/validate.py [--frames 60] [--repeats 3]

It writes results/validation.csv, results/validation.md and results/validation.png here.
"""

from __future__ import annotations

import argparse
import csv
import platform
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any

import tomii
from tomii.check import SCHEDULERS
from tomii.graphs import LogNormal, fork_join, map_reduce, streaming_pipeline

HERE = Path(__file__).resolve().parent
#: Kernels of 100 µs to 1 ms: a lognormal of median 300 µs, clipped by the draws' spread.
COST = LogNormal(300, 0.6)
TOLERANCE = 0.10


def graphs() -> list[dict[str, Any]]:
    return [
        streaming_pipeline(width=4, cost=COST, seed=1),
        fork_join(width=4, depth=2, cost=COST, seed=2),
        map_reduce(mappers=4, reducers=2, cost=COST, seed=3),
    ]


def measure(frames: int, repeats: int) -> list[dict[str, Any]]:
    synthetic = tomii.find_plugin("synthetic")
    rows = []
    for graph in graphs():
        name = graph["name"].split("(")[0]
        for workers in (1, 2):
            for scheduler in SCHEDULERS:
                knobs = {"workers": workers, "slots": 2, "frames": frames, "warmup_frames": 2}
                real = [
                    tomii.run_graph(graph, dylibs=[synthetic], scheduler=scheduler, **knobs).report
                    for _ in range(repeats)
                ]
                simulated = tomii.simulate(graph, scheduler=scheduler, **knobs).report
                wall = statistics.median(r.wall_time_s for r in real)
                p50 = statistics.median(r.latency_us["p50"] for r in real)
                rows.append(
                    {
                        "graph": name,
                        "workers": workers,
                        "scheduler": scheduler,
                        "real_wall_s": wall,
                        "sim_wall_s": simulated.wall_time_s,
                        "wall_ratio": simulated.wall_time_s / wall,
                        "real_p50_us": p50,
                        "sim_p50_us": simulated.latency_us["p50"],
                        "p50_ratio": simulated.latency_us["p50"] / p50,
                    }
                )
                print(
                    f"{name:<20} {workers} {scheduler:<17} makespan sim/real "
                    f"{rows[-1]['wall_ratio']:.3f}, p50 sim/real {rows[-1]['p50_ratio']:.3f}",
                    file=sys.stderr,
                )
    return rows


def write(rows: list[dict[str, Any]], out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with (out / "validation.csv").open("w", newline="", encoding="utf-8") as file:
        writer = csv.DictWriter(file, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    within = [r for r in rows if abs(r["wall_ratio"] - 1) <= TOLERANCE]
    lines = [
        "| graph | workers | scheduler | makespan real (s) | simulated (s) | sim ÷ real | p50 real (µs) "
        "| simulated (µs) | sim ÷ real |",
        "|---|---:|---|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['graph']} | {r['workers']} | {r['scheduler']} | {r['real_wall_s']:.4f} | "
            f"{r['sim_wall_s']:.4f} | {r['wall_ratio']:.3f} | {r['real_p50_us']:.0f} | "
            f"{r['sim_p50_us']:.0f} | {r['p50_ratio']:.3f} |"
        )
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True, check=False
    ).stdout.strip()
    load = " ".join(f"{x:.1f}" for x in __import__("os").getloadavg())
    lines += [
        "",
        f"{len(within)} of {len(rows)} makespans within ±{TOLERANCE:.0%}; commit {commit}, "
        f"{platform.node()}, load average {load}.",
    ]
    (out / "validation.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(1, 2, figsize=(10, 4.5), dpi=110)
    for axis, (real, sim, what) in zip(
        axes,
        [("real_wall_s", "sim_wall_s", "makespan (s)"), ("real_p50_us", "sim_p50_us", "p50 (µs)")],
    ):
        for workers, marker in ((1, "o"), (2, "s")):
            chosen = [r for r in rows if r["workers"] == workers]
            axis.scatter(
                [r[real] for r in chosen],
                [r[sim] for r in chosen],
                marker=marker,
                label=f"{workers} worker(s)",
                alpha=0.7,
            )
        top = max(max(r[real] for r in rows), max(r[sim] for r in rows)) * 1.05
        axis.plot([0, top], [0, top], color="grey", linewidth=1)
        axis.fill_between(
            [0, top], [0, top * (1 - TOLERANCE)], [0, top * (1 + TOLERANCE)], color="grey", alpha=0.15
        )
        axis.set_xlabel(f"real {what}")
        axis.set_ylabel(f"simulated {what}")
        axis.legend()
    figure.suptitle(f"Simulated against real, every shipped scheduler (band: ±{TOLERANCE:.0%})")
    figure.tight_layout()
    figure.savefig(out / "validation.png")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--frames", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    write(measure(args.frames, args.repeats), HERE / "results")
    print((HERE / "results" / "validation.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
