"""examples/mapreduce: run.py --quick counts the generated corpus with its C map, reduce and
collect kernels, and verify.py confirms it against collections.Counter; a corrupted count, a
missing word and a bad option are refused with a message; --schedulers prints a sweep's summary
and verdict."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from example_scripts import assert_compared, example_script

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "mapreduce"


def script(name: str, *args: str | Path) -> subprocess.CompletedProcess[str]:
    return example_script("mapreduce", name, *args)


@pytest.fixture(scope="module")
def result(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("mapreduce") / "counts.json"
    run = script("run.py", "--quick", "--slots", "3", "--frames", "5", "--out", out)
    assert run.returncode == 0, run.stderr
    assert "distinct words" in run.stdout and "counted differently" not in run.stdout
    return out


def test_verify_accepts_the_run(result: Path) -> None:
    check = script("verify.py", result)
    assert check.returncode == 0, check.stderr
    document = json.loads(result.read_text())
    assert len(document["frames"]) == 5
    assert sum(document["counts"].values()) == 20_000
    # Zipf-like: the most frequent word is far above the median one.
    counts = sorted(document["counts"].values())
    assert counts[-1] > 50 * counts[len(counts) // 2]


def test_one_map_and_one_reduce_count_the_same(tmp_path: Path) -> None:
    out = tmp_path / "serial.json"
    run = script("run.py", "--quick", "--maps", "1", "--reduces", "1", "--out", out)
    assert run.returncode == 0, run.stderr
    assert script("verify.py", out).returncode == 0


def corrupt(result: Path, tmp_path: Path, how: str) -> subprocess.CompletedProcess[str]:
    document = json.loads(result.read_text())
    if how == "count":
        document["counts"]["b"] += 1
    elif how == "missing":
        del document["counts"]["a"]
    else:
        document["frames"][1]["sha256"] = "0" * 64
    corrupted = tmp_path / f"{how}.json"
    corrupted.write_text(json.dumps(document))
    return script("verify.py", corrupted)


@pytest.mark.parametrize(
    ("how", "said"),
    [("count", "'b': counted"), ("missing", "'a': counted 0"), ("digest", "frame 1:")],
)
def test_verify_refuses_a_corrupted_result(
    result: Path, tmp_path: Path, how: str, said: str
) -> None:
    check = corrupt(result, tmp_path, how)
    assert check.returncode == 1
    assert "WRONG" in check.stderr and said in check.stderr


def test_a_comparison_prints_the_sweeps_summary() -> None:
    run = script("run.py", "--quick", "--schedulers", "fifo,priority", "--repeats", "2")
    assert_compared(run, "wordcount", ["fifo", "priority"], 2)


def test_bad_options_are_refused_without_a_traceback(tmp_path: Path) -> None:
    run = script("run.py", "--maps", "0")
    assert run.returncode == 2 and "--maps" in run.stderr and "Traceback" not in run.stderr
    run = script("run.py", "--quick", "--corpus", tmp_path)
    assert run.returncode == 2 and "--corpus" in run.stderr
    run = script("run.py", "--quick", "--schedulers", "fifo", "--out", tmp_path / "x.json")
    assert run.returncode == 2 and "a comparison keeps no outputs" in run.stderr
    missing = script("verify.py", tmp_path / "absent.json")
    assert missing.returncode == 1 and "cannot read" in missing.stderr
