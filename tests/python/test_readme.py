"""The Python example of README.md runs as written (with the plugins of target/debug)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from reference import ROOT, TARGET


def test_the_readme_python_example_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme[readme.index("## From Python") :]
    example = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert example is not None, "README.md's From Python section has no python example"
    script = tmp_path / "example.py"
    script.write_text(example.group(1), encoding="utf-8")
    env = {**os.environ, "TOMII_SCHEDULER_PATH": str(TARGET), "TOMII_PLUGIN_PATH": str(TARGET)}
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    throughput, digest, *_ = done.stdout.split()
    assert float(throughput) > 0 and int(digest) > 0
