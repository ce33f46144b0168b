"""The result of a sweep as tidy tables: the row schema, `SweepResult`, and its files on disk
(`results.csv`, `results.parquet`, `frames.csv`, `environment.json`, `traces.npz`).

Only data lives here: this module never runs a graph. `results.csv` is written with the csv module
and is always the source of truth; parquet is an optional copy for tools that prefer it.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, TextIO

import numpy as np

__all__ = [
    "COLUMNS",
    "FRAME_COLUMNS",
    "CsvAppender",
    "SweepResult",
    "Trace",
]

#: The columns of every row, in order, with their types (the plot module relies on these names).
#: Knobs beyond workers, slots, frames and pop_batch follow them, then `worker_pid`.
COLUMNS: dict[str, type] = {
    "trial": int,  # the trial's number in the plan: scheduler, graph, knobs, repeat
    "order": int,  # its position in the randomised order the trials were submitted in
    "scheduler": str,  # the scheduler's label
    "scheduler_options": str,  # JSON object
    "graph": str,
    "workers": int,
    "slots": int,
    "frames": int,
    "pop_batch": int,
    "repeat": int,
    "wall_time_s": float,
    "throughput_frames_per_s": float,
    "tasks_per_s": float,
    "latency_mean_us": float,
    "latency_p50_us": float,
    "latency_p95_us": float,
    "latency_p99_us": float,
    "critical_path_us": float,  # per frame
    "work_us": float,  # per frame
    "bound_frames_per_s": float,
    "efficiency": float,
    "busy_mean": float,
    "busy_per_worker": str,  # JSON list
    "load_average_1m": float,  # the machine's, when the recorded run started
    "steal_percent": float,  # of the machine's CPU time, stolen by its hypervisor during the run
    "valid": bool,
    "problem": str,
    # How many times the trial began again on a Dask cluster because the worker running it died
    # (every run that began counts; the row is the last run's). 0 elsewhere, and on a broken
    # process pool, which cannot say which of its trials had begun.
    "retried": int,
}
#: The last column: the process that ran the trial (the sweep's child process, an executor's
#: worker, or this process; -1 when an executor lost the trial).
PID_COLUMN = "worker_pid"

#: The keys of `SweepResult.frames` (one dict per frame of every trial that produced a trace).
FRAME_COLUMNS: dict[str, type] = {"trial": int, "frame": int, "latency_us": float}

Format = Literal["auto", "csv", "parquet"]


#: A trace (a `RunResult.trace` array, dtype `tomii.TRACE_DTYPE`) and the node names it indexes.
Trace = tuple[np.ndarray[Any, Any], list[str]]


@dataclass
class SweepResult:
    """What a sweep produced.

    `rows`: one dict per finished trial, keys `columns` (`COLUMNS`, the extra knobs,
    `worker_pid`), in the order the trials finished. `frames`: one dict per frame of each trial
    that ran (`FRAME_COLUMNS`: trial, frame, latency_us). `traces`: the trace of the first repeat
    (repeat 0) of each (scheduler, graph, knobs), for Gantt charts, keyed
    "scheduler|graph|workers=W|slots=S", followed by "|name=value" for each other knob that takes
    several values in the sweep. `environment`: the machine, versions and sweep parameters.
    `interrupted`: the sweep stopped before every trial ran (Ctrl-C), or the files are those of a
    sweep that never ended. `tomii.experiments.plot.plot(rows, frames, traces)` draws them.
    """

    rows: list[dict[str, Any]]
    frames: list[dict[str, Any]]
    traces: dict[str, Trace]
    environment: dict[str, Any]
    columns: list[str]
    interrupted: bool = False

    def to_pandas(self) -> Any:
        """The rows as a pandas DataFrame (needs pandas)."""
        try:
            import pandas as pd  # type: ignore[import-untyped,unused-ignore]
        except ImportError:
            raise ImportError("to_pandas() needs pandas: pip install pandas") from None
        return pd.DataFrame(self.rows, columns=self.columns)

    def save(self, directory: str | Path, *, format: Format = "auto") -> Path:
        """Writes the result into `directory` (created if needed) and returns it: results.csv,
        frames.csv, environment.json, traces.npz, and results.parquet with `format="parquet"`
        (needs pyarrow) or `"auto"` when pyarrow is installed. Each file is replaced whole."""
        if format not in ("auto", "csv", "parquet"):
            raise ValueError(f"save: format must be 'auto', 'csv' or 'parquet', got {format!r}")
        path = Path(directory)
        path.mkdir(parents=True, exist_ok=True)
        with _replacing(path / "results.csv") as out:
            write_csv(out, self.columns, self.rows)
        with _replacing(path / "frames.csv") as out:
            write_csv(out, list(FRAME_COLUMNS), self.frames)
        write_environment(path, self.environment, interrupted=self.interrupted)
        _save_traces(path / "traces.npz", self.traces)
        if format != "csv":
            _save_parquet(path / "results.parquet", self.columns, self.rows, required=format)
        return path

    @classmethod
    def load(cls, directory: str | Path) -> SweepResult:
        """A result saved by `save()`, or the files a running (or killed) sweep left in `out`."""
        path = Path(directory)
        columns, rows = read_csv(path / "results.csv", {**COLUMNS, PID_COLUMN: int})
        frames = read_csv(path / "frames.csv", FRAME_COLUMNS)[1]
        document = json.loads((path / "environment.json").read_text(encoding="utf-8"))
        # null: the sweep was still running when the file was read, or it was killed.
        interrupted = document.pop("interrupted", None) is not False
        traces = _load_traces(path / "traces.npz")
        return cls(rows, frames, traces, document, columns, interrupted=interrupted)


# ---------------------------------------------------------------------------------------------
# CSV


def _cell(value: Any) -> Any:
    return repr(value) if isinstance(value, float) else value


def write_csv(out: TextIO, columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> None:
    writer = csv.writer(out)
    writer.writerow(columns)
    for row in rows:
        writer.writerow([_cell(row[name]) for name in columns])


class CsvAppender:
    """A CSV file that grows one row at a time, each row flushed as it is written, so that a
    killed sweep leaves every finished row on disk."""

    def __init__(self, path: Path, columns: Sequence[str]) -> None:
        self.columns = list(columns)
        self._file = path.open("w", newline="", encoding="utf-8")
        self._writer = csv.writer(self._file)
        self._writer.writerow(self.columns)
        self._file.flush()

    def append(self, rows: Iterable[Mapping[str, Any]]) -> None:
        for row in rows:
            self._writer.writerow([_cell(row[name]) for name in self.columns])
        self._file.flush()

    def close(self) -> None:
        self._file.close()


def _parse(text: str, kind: type | None) -> Any:
    """A CSV cell as its column's type; a column outside `COLUMNS` as int, float or text."""
    if kind is bool:
        return text == "True"
    if kind is not None:
        return kind(text)
    for guess in (int, float):
        try:
            return guess(text)
        except ValueError:
            pass
    return {"True": True, "False": False}.get(text, text)


def read_csv(path: Path, kinds: Mapping[str, type]) -> tuple[list[str], list[dict[str, Any]]]:
    """The columns and rows of a CSV file, each cell of a column of `kinds` of that type."""
    if not path.is_file():
        return list(kinds), []
    with path.open(newline="", encoding="utf-8") as file:
        reader = csv.reader(file)
        columns = next(reader, [])
        rows = [
            {name: _parse(text, kinds.get(name)) for name, text in zip(columns, line)}
            for line in reader
            if len(line) == len(columns)  # a line cut short by a hard kill is left out
        ]
    return columns, rows


@contextmanager
def _replacing(path: Path) -> Iterator[TextIO]:
    """Writes `path` whole or not at all: into a temporary file, then renamed over it."""
    temporary = path.with_name(path.name + ".tmp")
    with temporary.open("w", newline="", encoding="utf-8") as out:
        yield out
    os.replace(temporary, path)


# ---------------------------------------------------------------------------------------------
# The other files


def write_environment(
    path: Path, environment: Mapping[str, Any], *, interrupted: bool | None
) -> None:
    """environment.json: the environment, and whether the sweep was interrupted (null while it
    runs, so that the file a killed sweep leaves says it did not finish)."""
    document = {**environment, "interrupted": interrupted}
    with _replacing(path / "environment.json") as out:
        json.dump(document, out, indent=2, default=str)
        out.write("\n")


def _save_traces(path: Path, traces: Mapping[str, Trace]) -> None:
    """traces.npz: `keys`, and per key at position i `trace_i` and `names_i`."""
    arrays: dict[str, np.ndarray[Any, Any]] = {"keys": np.array(list(traces), dtype=str)}
    for i, (trace, names) in enumerate(traces.values()):
        arrays[f"trace_{i}"] = trace
        arrays[f"names_{i}"] = np.array(names, dtype=str)
    temporary = path.with_name(path.name + ".tmp.npz")
    np.savez_compressed(temporary, **arrays)  # type: ignore[arg-type,unused-ignore]
    os.replace(temporary, path)


def _load_traces(path: Path) -> dict[str, Trace]:
    if not path.is_file():
        return {}
    with np.load(path, allow_pickle=False) as archive:
        return {
            str(key): (archive[f"trace_{i}"], [str(name) for name in archive[f"names_{i}"]])
            for i, key in enumerate(archive["keys"])
        }


def _save_parquet(
    path: Path, columns: Sequence[str], rows: Sequence[Mapping[str, Any]], *, required: str
) -> None:
    try:
        import pyarrow as pa  # type: ignore[import-not-found,import-untyped,unused-ignore]
        import pyarrow.parquet as pq  # type: ignore[import-not-found,import-untyped,unused-ignore]
    except ImportError:
        if required == "parquet":
            raise ImportError("save(format='parquet') needs pyarrow: pip install pyarrow") from None
        return
    table = pa.table({name: [row[name] for row in rows] for name in columns})
    temporary = path.with_name(path.name + ".tmp")
    pq.write_table(table, temporary)
    os.replace(temporary, path)
