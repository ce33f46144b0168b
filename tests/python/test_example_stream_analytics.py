"""examples/stream-analytics: run.py --quick runs the sensor pipeline with its C kernels, and
verify.py confirms every frame's statistics, detect statuses, anomalies, group summaries and the
post-node's totals against NumPy; the condition skips some detect instances and runs others; a
corrupted result and bad options are refused with a message; --schedulers prints a sweep's
summary and verdict."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
from example_scripts import assert_compared, example_script

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "stream-analytics"


def script(name: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return example_script("stream-analytics", name, *args)


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("stream") / "result.json"
    run = script("run.py", "--quick", "--slots", "3", "--frames", "6", "--out", out)
    assert run.returncode == 0, run.stderr
    assert "detect ran" in run.stdout
    return out


def test_verify_accepts_the_run(result: Path) -> None:
    check = script("verify.py", result)
    assert check.returncode == 0, check.stderr
    assert "all equal to NumPy's" in check.stdout
    document = json.loads(result.read_text())
    assert [frame["frame"] for frame in document["frames"]] == list(range(6))
    assert document["totals"]["frames"] == 6


def test_the_condition_skips_some_detects_and_runs_others(result: Path) -> None:
    document = json.loads(result.read_text())
    statuses = [s for frame in document["frames"] for s in frame["status"]]
    skipped, normal, anomalous = (statuses.count(s) for s in (-1, 0, 1))
    assert skipped > 0 and normal > 0 and anomalous > 0
    # The runtime's own count of skipped instances (report per_node) agrees with the output.
    assert document["detect_skipped"] == skipped
    assert document["totals"]["checked"] == normal + anomalous
    # A skipped sensor's maximum is at most the threshold; a checked one's above it.
    threshold = document["params"]["threshold"]
    for frame in document["frames"]:
        for status, stats in zip(frame["status"], frame["sensors"], strict=True):
            assert (stats[3] > threshold) == (status >= 0)


def corrupt(document: dict[str, Any], how: str) -> str:
    """Breaks one thing in the result; returns what verify's message says about it."""
    frame = document["frames"][1]
    if how == "stats":
        frame["sensors"][3][1] *= 1 + 1e-6
        return "frame 1 sensor 3: stats"
    if how == "anomaly":
        first = next(f for f in document["frames"] if f["anomalies"])
        first["anomalies"].pop()
        return f"frame {first['frame']}: anomalies"
    if how == "status":
        frame["status"][frame["status"].index(-1)] = 0
        return "frame 1: detect's status"
    if how == "group":
        frame["groups"][2][4] += 1
        return "frame 1 group 2:"
    document["totals"]["anomalies"] += 1
    return "totals"


@pytest.mark.parametrize("how", ["stats", "anomaly", "status", "group", "totals"])
def test_verify_refuses_a_corrupted_result(result: Path, tmp_path: Path, how: str) -> None:
    document = json.loads(result.read_text())
    said = corrupt(document, how)
    corrupted = tmp_path / f"{how}.json"
    corrupted.write_text(json.dumps(document))
    check = script("verify.py", corrupted)
    assert check.returncode == 1
    assert "WRONG" in check.stderr and said in check.stderr, check.stderr


def test_a_comparison_prints_the_sweeps_summary() -> None:
    run = script("run.py", "--quick", "--schedulers", "fifo,priority", "--repeats", "2")
    assert_compared(run, "stream-analytics", ["fifo", "priority"], 2)


def test_bad_options_are_refused_without_a_traceback(tmp_path: Path) -> None:
    run = script("run.py", "--sensors", "10", "--group", "4")
    assert run.returncode == 2 and "--group 4: must divide" in run.stderr
    assert "Traceback" not in run.stderr
    run = script("run.py", "--window", "0")
    assert run.returncode == 2 and "--window" in run.stderr
    run = script("run.py", "--quick", "--schedulers", "fifo", "--out", tmp_path / "x.json")
    assert run.returncode == 2 and "a comparison keeps no outputs" in run.stderr
    missing = script("verify.py", tmp_path / "absent.json")
    assert missing.returncode == 1 and "cannot read" in missing.stderr
    (tmp_path / "other.json").write_text('{"frames": []}')
    other = script("verify.py", tmp_path / "other.json")
    assert other.returncode == 1 and "not a result of run.py" in other.stderr
