"""How many repeats the sweep needs: from a finished sweep's results, the 95% bootstrap interval of
every scheduler's speed-up over fifo computed from only the first n repeats of each configuration,
for growing n. Prints, per n, how many intervals exclude 1 and the median and largest half-width
(in % of the speed-up), then the median coefficient of variation of throughput over the repeats.

    python experiments/which-scheduler-wins/widths.py out/main [--baseline fifo]
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

from tomii.experiments import SweepResult
from tomii.experiments.stats import ratio_ci

METRIC = "throughput_frames_per_s"


def values(rows: list[dict[str, Any]], scheduler: str, graph: str, n: int) -> list[float]:
    return [
        r[METRIC]
        for r in rows
        if (r["scheduler"], r["graph"]) == (scheduler, graph) and r["repeat"] < n
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results", help="a sweep's output directory")
    parser.add_argument("--baseline", default="fifo")
    args = parser.parse_args()
    rows = [r for r in SweepResult.load(args.results).rows if r["valid"]]
    graphs = list(dict.fromkeys(r["graph"] for r in rows))
    others = [s for s in dict.fromkeys(r["scheduler"] for r in rows) if s != args.baseline]
    repeats = max(r["repeat"] for r in rows) + 1
    print("repeats  intervals excluding 1  median half-width %  largest half-width %")
    for n in range(3, repeats + 1):
        ratios = [
            ratio_ci(values(rows, s, g, n), values(rows, args.baseline, g, n))
            for g in graphs
            for s in others
        ]
        separated = sum(e.low > 1 or e.high < 1 for e in ratios)
        widths = [50 * (e.high - e.low) / e.value for e in ratios]
        print(
            f"{n:7}  {separated:>10}/{len(ratios):<10}  {statistics.median(widths):19.1f}"
            f"  {max(widths):20.1f}"
        )
    spread = [
        statistics.stdev(v) / statistics.mean(v)
        for g in graphs
        for s in [args.baseline, *others]
        if len(v := values(rows, s, g, repeats)) > 1
    ]
    print(
        f"throughput: median coefficient of variation over the repeats {statistics.median(spread):.3f}"
    )


if __name__ == "__main__":
    main()
