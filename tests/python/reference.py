"""Shared by the Python tests: where the built plugins are, and the synthetic `checksum` kernel
recomputed in Python (the reference model's, plugins/synthetic/README.md) for expected outputs."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

# The synthetic `checksum` kernel recomputed in Python (plugins/synthetic/README.md): the reference
# model's, independent of the runtime.
from tomii.check.reference import BASIS, MASK, checksum, fnv1a, mix

ROOT = Path(__file__).resolve().parents[2]
TARGET = ROOT / "target" / "debug"
SYNTHETIC = TARGET / "libtomii_synthetic.so"
FIFO = TARGET / "libtomii_sched_fifo.so"
GRAPHS = ROOT / "tomii-core" / "tests" / "graphs"
#: The C schedulers written to test the host (tomii-core/tests/c/).
C_FIXTURES = ROOT / "tomii-core" / "tests" / "c"

__all__ = [
    "BASIS",
    "FIFO",
    "GRAPHS",
    "MASK",
    "ROOT",
    "SYNTHETIC",
    "TARGET",
    "checksum",
    "compile_c_scheduler",
    "fnv1a",
    "mix",
    "run_documented_example",
    "tomii_cli",
]


def run_documented_example(
    document: Path, heading: str, directory: Path
) -> subprocess.CompletedProcess[str]:
    """Runs the first python code block after `heading` in `document` as `python example.py` in
    `directory`, with the plugins of target/debug found by name; fails if there is none."""
    text = document.read_text(encoding="utf-8")
    section = text[text.index(heading) :]
    example = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert example is not None, f"{document.name}: section {heading!r} has no python example"
    script = directory / "example.py"
    script.write_text(example.group(1), encoding="utf-8")
    env = {**os.environ, "TOMII_SCHEDULER_PATH": str(TARGET), "TOMII_PLUGIN_PATH": str(TARGET)}
    return subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        env=env,
        cwd=directory,
        timeout=120,
        check=False,
    )


def tomii_cli(*args: str | Path) -> subprocess.CompletedProcess[str]:
    """`python -m tomii ARGS...` in a child process, its output captured as text."""
    return subprocess.run(
        [sys.executable, "-m", "tomii", *map(str, args)],
        capture_output=True,
        text=True,
        encoding="utf-8",
        timeout=60,
        check=False,
    )


def compile_c_scheduler(source: str, library: Path, *defines: str) -> Path:
    """Compiles the C fixture `source` (a file of tomii-core/tests/c/) with `defines` (such as
    "-DHANG_POP_AFTER=50") against the real header into `library`."""
    include = ROOT / "tomii-types" / "include"
    command = ["cc", "-shared", "-fPIC", "-O1", f"-I{include}", *defines]
    subprocess.run(
        [*command, "-o", str(library), str(C_FIXTURES / source), "-lpthread"], check=True
    )
    return library
