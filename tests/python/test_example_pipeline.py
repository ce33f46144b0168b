"""examples/pipeline: run.py --quick runs the transform pipeline on its C kernels and verify.py
confirms every frame's mean; a corrupted mean, a result of the wrong frame and a bad option are
refused with a message; --schedulers compares in a sweep."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from example_scripts import example_script


def script(name: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return example_script("pipeline", name, *args)


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("pipeline") / "pipeline.json"
    run = script("run.py", "--quick", "--frames", "20", "--out", out)
    assert run.returncode == 0, run.stderr
    assert "ms a frame" in run.stdout
    return out


def test_verify_accepts_the_run(result: Path) -> None:
    check = script("verify.py", result)
    assert check.returncode == 0, check.stderr
    assert "all 20 frames agree" in check.stdout
    means = json.loads(result.read_text())["means"]
    assert (
        len(set(means[:16])) == 16
    )  # frames differ, so a frame's result cannot pass for another's


@pytest.mark.parametrize("how", ["nudged", "swapped"])
def test_verify_refuses_a_wrong_mean(result: Path, tmp_path: Path, how: str) -> None:
    document = json.loads(result.read_text())
    means = document["means"]
    if how == "nudged":
        means[3] += 1e-9
    else:
        means[3], means[4] = means[4], means[3]
    corrupted = tmp_path / f"{how}.json"
    corrupted.write_text(json.dumps(document))
    check = script("verify.py", corrupted)
    assert check.returncode == 1
    assert "frame 3: mean" in check.stderr


def test_bad_options_are_refused() -> None:
    run = script("run.py", "--items", "0")
    assert run.returncode == 2 and "--items: 0 must be at least 1" in run.stderr
    run = script("run.py", "--schedulers", "fifo", "--out", "x.json")
    assert run.returncode == 2 and "a comparison writes no means" in run.stderr


def test_schedulers_compare_in_a_sweep() -> None:
    run = script("run.py", "--quick", "--schedulers", "fifo,priority", "--repeats", "2")
    assert run.returncode == 0, run.stderr
    assert "verdict:" in run.stdout and "why: one wide stage" in run.stdout
