"""Experiments: sweeps of schedulers over graphs and knobs, and their results as tidy tables.

    from tomii.experiments import sweep

    result = sweep(["fifo", "work-stealing"], knobs={"workers": [1, 2], "slots": [1, 4]},
                   repeats=3, out="out/sweep")
    print(result.to_pandas().groupby("scheduler").throughput_frames_per_s.median())

`sweep` runs the trials (here or on an executor, Dask's included); `SweepResult` holds the rows
(`COLUMNS`), per-frame latencies, traces and environment, and saves and loads them; `plot` (its
own module, needs matplotlib) draws them. `import tomii` never imports this package.
"""

from __future__ import annotations

from .sweep import (
    MeasuredCosts,
    Scheduler,
    SupportsSubmit,
    environment,
    measure_costs,
    run_trial,
    sweep,
)
from .table import COLUMNS, FRAME_COLUMNS, SweepResult, Trace

__all__ = [
    "COLUMNS",
    "FRAME_COLUMNS",
    "MeasuredCosts",
    "Scheduler",
    "SupportsSubmit",
    "SweepResult",
    "Trace",
    "environment",
    "measure_costs",
    "run_trial",
    "sweep",
]
