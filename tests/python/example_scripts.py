"""The examples' scripts (examples/NAME/run.py, verify.py, ...) run as a user runs them: in a
child process of this interpreter, finding the schedulers of target/debug through the environment
conftest.py sets for the session."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from reference import ROOT

EXAMPLES = ROOT / "examples"


def example_script(
    example: str, name: str, *args: str | Path, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    """examples/`example`/`name` run with `args`; its output captured as text."""
    return subprocess.run(
        [sys.executable, str(EXAMPLES / example / name), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
