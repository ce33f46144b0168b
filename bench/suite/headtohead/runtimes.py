"""How each runtime runs one configuration: one process per measurement, its wall time back.

Tomii runs through `target/release/tomii run` with one scheduler and `--report` JSON (its engine
wall time); the peers (bench/peers/) read the expanded DAG file, or the kernel DAG file of a real
workload, and print one JSON line (for a kernel DAG, with the last frame's sink values). Every
runtime gets 2 workers. A failure is returned as a `Result` with the reason, never raised: the
table says what failed and why.
"""

from __future__ import annotations

import json
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .plan import WORKERS, Config

SCHEDULERS = (
    "fifo",
    "c-fifo",
    "random",
    "priority",
    "critical-path",
    "locality",
    "work-stealing",
    "multi-slot-batch",
)
#: Tomii with fifo and the inline-continuation fast path.
FIFO_INLINE = "tomii-fifo-inline"
#: The peers, by the name the table gives them.
TBB, RAYON, DASK = "oneTBB", "Rayon", "Dask"
#: Who runs the Python-kernel workloads (pykernels.py), in table order.
PY_RUNTIMES = [f"tomii-{s}" for s in SCHEDULERS] + [DASK]


@dataclass(frozen=True)
class Result:
    """A measurement: the run's wall time and the tasks it ran, or why there is none; a peer
    running a kernel DAG also gives its last frame's sinks ([node, instance, value] rows)."""

    wall_s: float | None
    tasks: int | None
    error: str | None = None
    sinks: list[Any] | None = None


@dataclass(frozen=True)
class Files:
    """The inputs of one configuration: the Tomii graph and the peers' DAG file; for a real
    workload, `dag` is its kernel DAG file and `dylib` the kernel library Tomii loads."""

    graph: Path
    dag: Path
    report: Path
    dylib: Path | None = None


@dataclass(frozen=True)
class Runtime:
    """A runtime under test: Tomii with a scheduler (`scheduler` set) or a peer binary."""

    name: str
    binary: Path
    synthetic: Path | None = None
    scheduler: str | None = None
    #: Further `tomii run` options (Tomii only).
    options: tuple[str, ...] = ()

    def command(self, config: Config, files: Files) -> list[str]:
        counts = ["--workers", str(WORKERS), "--frames", str(config.frames)]
        counts += ["--slots", str(config.slots)]
        if self.scheduler is None:
            form = "--dag" if files.dylib is None else "--kernels"
            return [str(self.binary), form, str(files.dag), *counts]
        dylib = files.dylib or self.synthetic
        assert dylib is not None
        return [
            *(str(self.binary), "run", str(files.graph), "--dylib", str(dylib)),
            *(*counts, "--scheduler", self.scheduler, "--no-task-timing", *self.options),
            *("--report", str(files.report), "--quiet"),
        ]

    def measure(self, config: Config, files: Files, timeout_s: float) -> Result:
        try:
            done = subprocess.run(
                self.command(config, files),
                capture_output=True,
                text=True,
                timeout=timeout_s,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return Result(None, None, f"timed out after {timeout_s:.0f} s")
        if done.returncode != 0:
            lines = (done.stderr or done.stdout).strip().splitlines() or ["(no output)"]
            return Result(None, None, f"exit {done.returncode}: {lines[-1][:200]}")
        try:
            if self.scheduler:  # Tomii: the --report file
                report = json.loads(files.report.read_text(encoding="utf-8"))
            else:  # a peer: its last line of output
                report = json.loads(done.stdout.strip().splitlines()[-1])
            threads = int(report["workers"] if self.scheduler else report["threads"])
            if threads != WORKERS:
                return Result(None, None, f"ran on {threads} threads, not {WORKERS}")
            sinks = report.get("sinks")
            return Result(float(report["wall_time_s"]), int(report["tasks"]), sinks=sinks)
        except (OSError, ValueError, KeyError, IndexError) as error:
            return Result(None, None, f"unreadable output: {error}")


def tomii_runtimes(root: Path) -> list[Runtime]:
    """Every shipped scheduler, then fifo with `--inline-continuation` (a worker runs one task its
    completion made ready itself, past the scheduler): the runtime's fast path, shown apart."""
    release = root / "target" / "release"
    synthetic = release / "libtomii_synthetic.so"
    binary = release / "tomii"
    return [Runtime(f"tomii-{s}", binary, synthetic, s) for s in SCHEDULERS] + [
        Runtime(FIFO_INLINE, binary, synthetic, "fifo", ("--inline-continuation",))
    ]


def peer_runtimes(root: Path) -> list[Runtime]:
    return [
        Runtime(TBB, root / "target" / "peers" / "tomii-peer-tbb"),
        Runtime(RAYON, root / "target" / "release" / "tomii-peer-rayon"),
    ]
