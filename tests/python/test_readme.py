"""The Python example of README.md runs as written (with the plugins of target/debug)."""

from __future__ import annotations

from pathlib import Path

from reference import ROOT, run_documented_example


def test_the_readme_python_example_runs(tmp_path: Path) -> None:
    done = run_documented_example(ROOT / "README.md", "## From Python", tmp_path)
    assert done.returncode == 0, done.stderr
    throughput, digest, *_ = done.stdout.split()
    assert float(throughput) > 0 and int(digest) > 0
