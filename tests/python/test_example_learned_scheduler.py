"""examples/learned-scheduler: run.py --quick trains a linear policy in tomii.gym that beats a
random one on the same held-out episodes, runs it to completion on the real engine, and sweeps it
in simulation beside the shipped schedulers, writing the files its README shows."""

from __future__ import annotations

import json
from pathlib import Path

from example_scripts import SUMMARY_HEADER, example_script


def test_the_quick_form_trains_a_policy_that_beats_random_and_runs_for_real(
    tmp_path: Path,
) -> None:
    run = example_script("learned-scheduler", "run.py", "--quick", "--out", tmp_path)
    assert run.returncode == 0, run.stderr
    results = json.loads((tmp_path / "results.json").read_text())
    makespans = results["held_out_makespan_us"]
    assert makespans["learned"] < makespans["random"]
    assert results["real"] == {"frames": 20, "status": "completed"}
    assert SUMMARY_HEADER.search(run.stdout), run.stdout
    for scheduler in ("learned", "fifo", "critical-path"):
        assert f"  {scheduler} " in run.stdout
    for name in ("weights.json", "table.txt", "training.png", "speedup.png"):
        assert (tmp_path / name).is_file(), name
