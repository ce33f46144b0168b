"""`tomii sweep CONFIG` (and `python -m tomii.experiments CONFIG`): a TOML file to a table, saved
results and figures, and a verdict per graph against the baseline; a bad file is one error line
naming the file and the key; `--baseline`, `--in-process` and `--trial-timeout` reach the sweep."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path

from reference import ROOT, TARGET

from tomii.experiments.config import load_config

ENV = {**os.environ, "TOMII_SCHEDULER_PATH": str(TARGET), "TOMII_PLUGIN_PATH": str(TARGET)}


def sweep(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "tomii.cli", "sweep", *args]
    return subprocess.run(
        command, capture_output=True, text=True, env=ENV, cwd=cwd, timeout=300, check=False
    )


def test_a_sweep_file_gives_a_table_results_and_figures(tmp_path: Path) -> None:
    config = tmp_path / "sweep.toml"
    config.write_text(
        """
schedulers = ["fifo", { name = "random", options = { seed = "3" }, label = "random-3" }]
repeats = 2
warmup = 0
frames = 10
out = "results"

[[graphs.generate]]
generator = "fork_join"
width = 4
depth = 2
cost = { fixed = 2 }

[knobs]
slots = [1, 2]
""",
        encoding="utf-8",
    )
    done = sweep(str(config), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].split()[:3] == ["graph", "slots", "scheduler"]
    assert sum("random-3" in line for line in lines) == 4  # one per slots value, and verdicts
    verdicts = lines[lines.index("") + 1 :]
    assert verdicts[0].startswith("verdict: median frames/s against fifo's")
    assert [line.split()[:2] for line in verdicts[1:3]] == [
        ["fork_join(width=4,depth=2,cost=Fixed(2),seed=0),", f"slots={n}"] for n in (1, 2)
    ]
    assert "8 trials; wrote" in done.stdout
    out = tmp_path / "results"
    with (out / "results.csv").open(encoding="utf-8") as file:
        rows = list(csv.DictReader(file))
    assert len(rows) == 8 and {row["valid"] for row in rows} == {"True"}
    assert {row["scheduler"] for row in rows} == {"fifo", "random-3"}
    for figure in ("speedup.png", "throughput.png", "latency_p50.png", "latency_cdf.png"):
        assert (out / figure).stat().st_size > 1000
    assert (out / "scaling_slots_throughput.png").is_file()


def test_a_bad_sweep_file_is_one_error_line(tmp_path: Path) -> None:
    config = tmp_path / "bad.toml"
    config.write_text('schedulers = ["fifo"]\nrepeat = 3\n', encoding="utf-8")
    done = sweep(str(config), cwd=tmp_path)
    assert done.returncode == 1
    valid = "check, executor, frames, graphs, knobs, mode, out, plots, repeats, schedulers, seed, warmup"
    assert done.stderr.strip().splitlines() == [
        f"error: {config}: unknown key(s) repeat in the file; valid: {valid}"
    ]
    config.write_text("schedulers = [", encoding="utf-8")
    done = sweep(str(config), cwd=tmp_path)
    assert done.returncode == 1 and "not valid TOML" in done.stderr
    assert "Traceback" not in done.stderr
    # What the file names is checked too: a scheduler, a graph file, a knob's values.
    for body, says in [
        ('schedulers = ["fifo", "lifo"]\n', "scheduler 'lifo' not found"),
        ('schedulers = ["fifo"]\n[graphs]\nfiles = ["missing.json"]\n', "cannot read the graph"),
        ('schedulers = ["fifo"]\n[knobs]\nworkers = [0]\n', "takes integers from 1, got 0"),
    ]:
        config.write_text(body, encoding="utf-8")
        done = sweep(str(config), cwd=tmp_path)
        [line] = done.stderr.strip().splitlines()
        assert done.returncode == 1 and line.startswith(f"error: {config}: ") and says in line


def test_a_config_that_is_a_fifo_or_a_device_is_refused_not_read(tmp_path: Path) -> None:
    """`tomii sweep` and `tomii tune` read their file only when it is a regular one: a FIFO would
    block them, /dev/zero never end (subprocess's timeout fails the test instead of hanging)."""
    fifo = tmp_path / "config.toml"
    os.mkfifo(fifo)
    for command, what in [
        ("sweep", "the sweep configuration"),
        ("tune", "the tuning configuration"),
    ]:
        for path, kind in [(fifo, "a FIFO"), (Path("/dev/zero"), "a character device")]:
            done = subprocess.run(
                [sys.executable, "-m", "tomii.cli", command, str(path)],
                capture_output=True, text=True, env=ENV, cwd=tmp_path, timeout=60, check=False,
            )  # fmt: skip
            assert done.returncode == 1, done.stderr
            assert done.stderr.strip().splitlines() == [
                f"error: {path}: {what} is {kind}, not a regular file; give a TOML file"
            ]


def test_the_baseline_is_a_swept_scheduler(tmp_path: Path) -> None:
    config = tmp_path / "sweep.toml"
    config.write_text(
        'schedulers = ["fifo", "random"]\nrepeats = 2\nwarmup = 0\nframes = 4\n'
        '[[graphs.generate]]\ngenerator = "fork_join"\nwidth = 2\ndepth = 1\n'
        '[plots]\nbaseline = "random"\n',
        encoding="utf-8",
    )
    done = sweep(str(config), "--no-plots", "--out", "out", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert "× random" in done.stdout.splitlines()[0] and "against random's" in done.stdout
    done = sweep(str(config), "--no-plots", "--out", "out", "--baseline", "fifo", cwd=tmp_path)
    assert done.returncode == 0 and "against fifo's" in done.stdout
    done = sweep(str(config), "--baseline", "lifo", cwd=tmp_path)
    assert done.returncode == 1 and done.stderr.strip().splitlines() == [
        f"error: {config}: baseline 'lifo' is not one of the schedulers ['fifo', 'random']"
    ]


def test_the_experiments_files_load() -> None:
    for path in sorted((ROOT / "experiments").glob("*/sweep.toml")):
        config = load_config(path)
        assert config["schedulers"] and config["graphs"], path


def test_isolation_flags_reach_the_sweep(tmp_path: Path) -> None:
    config = tmp_path / "sweep.toml"
    config.write_text(
        'schedulers = ["fifo"]\nrepeats = 1\nwarmup = 0\nframes = 2\n'
        '[[graphs.generate]]\ngenerator = "fork_join"\nwidth = 2\ndepth = 1\n',
        encoding="utf-8",
    )
    for flags, isolation, timeout in [
        ([], "process", 600.0),
        (["--in-process", "--trial-timeout", "0"], "none", None),
        (["--trial-timeout", "30"], "process", 30.0),
    ]:
        done = sweep(str(config), "--no-plots", "--out", "out", *flags, cwd=tmp_path)
        assert done.returncode == 0, done.stderr
        environment = json.loads((tmp_path / "out" / "environment.json").read_text("utf-8"))
        parameters = environment["parameters"]
        assert (parameters["isolation"], parameters["trial_timeout_s"]) == (isolation, timeout)
