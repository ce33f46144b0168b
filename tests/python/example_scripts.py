"""The examples' scripts (examples/NAME/run.py, verify.py, ...) run as a user runs them: in a
child process of this interpreter, finding the schedulers of target/debug through the environment
conftest.py sets for the session; and what a comparison (run.py --schedulers) must print."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Sequence
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


#: The header of a sweep's summary table against fifo (tomii.experiments.config.summary).
SUMMARY_HEADER = re.compile(
    r"^graph +scheduler +frames/s +× fifo +p50 µs +p99 µs +efficiency +ok$", re.MULTILINE
)


def assert_compared(
    done: subprocess.CompletedProcess[str], graph: str, schedulers: Sequence[str], repeats: int
) -> None:
    """`done`, a run.py --schedulers, exited 0 and printed a sweep's summary of `graph`: the
    table's header, a row per scheduler with all `repeats` trials valid, the verdict, and the
    workload's mechanism under it."""
    assert done.returncode == 0, done.stderr
    out = done.stdout
    assert SUMMARY_HEADER.search(out), out
    for name in schedulers:
        row = rf"^{re.escape(graph)} +{re.escape(name)} +\S.* {repeats}/{repeats}$"
        assert re.search(row, out, re.MULTILINE), (name, out)
    assert re.search(r"^verdict: median frames/s against fifo's", out, re.MULTILINE), out
    assert re.search(rf"^  {re.escape(graph)} +\S", out, re.MULTILINE), out
    assert re.search(r"^ +why: \S", out, re.MULTILINE), out
