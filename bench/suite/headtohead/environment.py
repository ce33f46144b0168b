"""Where and when the suite ran: date, CPU model and cores (/proc/cpuinfo), commit, load, versions.

Read-only: it inspects the machine and the repository and never changes either.
"""

from __future__ import annotations

import datetime
import os
import platform
import re
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Environment:
    date: str
    cpu_model: str
    cores: int
    commit: str
    uncommitted: bool
    command: str
    load_start: float
    load_end: float | None = None
    versions: dict[str, str] = field(default_factory=dict)

    def describe(self) -> str:
        """One paragraph for the table's header."""
        commit = f"`{self.commit}`" + (" with uncommitted changes" if self.uncommitted else "")
        load = f"1-minute load average {self.load_start:.1f} at the start"
        if self.load_end is not None:
            load += f", {self.load_end:.1f} at the end"
        versions = ", ".join(f"{name} {v}" for name, v in self.versions.items())
        return (
            f"`{self.command}`, {self.date}; machine: {self.cpu_model}, {self.cores} cores "
            f"(/proc/cpuinfo), {load}; commit {commit}; {versions}."
        )

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def capture(root: Path, command: str) -> Environment:
    now = datetime.datetime.now(datetime.timezone.utc)
    model, cores = _cpu()
    return Environment(
        date=now.strftime("%Y-%m-%d %H:%M UTC"),
        cpu_model=model,
        cores=cores,
        commit=_git(root, "rev-parse", "--short", "HEAD") or "unknown",
        uncommitted=bool(_git(root, "status", "--porcelain", "--untracked-files=no")),
        command=command,
        load_start=os.getloadavg()[0],
        versions={"Python": platform.python_version()},
    )


def _cpu() -> tuple[str, int]:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8")
    except OSError:
        return platform.processor() or "unknown CPU", os.cpu_count() or 0
    models = re.findall(r"^model name\s*:\s*(.+)$", text, re.MULTILINE)
    cores = len(re.findall(r"^processor\s*:", text, re.MULTILINE))
    return (models[0].strip() if models else "unknown CPU"), cores


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(
            ["git", "-C", str(root), *args], capture_output=True, text=True, check=False
        )
    except OSError:
        return ""
    return done.stdout.strip() if done.returncode == 0 else ""


def cargo_lock_version(root: Path, crate: str) -> str:
    """The version of `crate` that Cargo.lock pins, or "?"."""
    try:
        text = (root / "Cargo.lock").read_text(encoding="utf-8")
    except OSError:
        return "?"
    found = re.search(rf'name = "{re.escape(crate)}"\nversion = "([^"]+)"', text)
    return found.group(1) if found else "?"
