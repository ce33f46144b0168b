"""Where schedulers and kernel plugins are found by name.

A wheel built from this repository carries every shipped scheduler and the synthetic kernels in
`tomii/_plugins/` (scripts/wheel_backend.py puts them there). `$TOMII_SCHEDULER_PATH` (schedulers)
and `$TOMII_PLUGIN_PATH` (kernel plugins), lists of directories, are searched first.
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import PluginError

__all__ = ["PACKAGED_PLUGINS", "find_plugin", "find_scheduler", "installed_schedulers"]

#: The directory of the plugins shipped inside the package.
PACKAGED_PLUGINS = Path(__file__).resolve().parent / "_plugins"


def _search_path(variable: str) -> list[Path]:
    dirs = [Path(d) for d in os.environ.get(variable, "").split(os.pathsep) if d]
    return [*dirs, PACKAGED_PLUGINS]


def _find(file: str, variable: str, what: str) -> Path:
    dirs = _search_path(variable)
    for directory in dirs:
        if (directory / file).is_file():
            return directory / file
    searched = ", ".join(str(d) for d in dirs)
    raise PluginError(
        f"{what} not found: looked for {file} in {searched}; "
        f"add its directory to ${variable} or pass its path"
    )


def find_scheduler(name: str) -> Path:
    """The scheduler library `name`: `libtomii_sched_NAME.so`."""
    file = f"libtomii_sched_{name.replace('-', '_')}.so"
    return _find(file, "TOMII_SCHEDULER_PATH", f"scheduler {name!r}")


def find_plugin(name: str) -> Path:
    """The kernel plugin `name` (e.g. "synthetic"): `libtomii_NAME.so`."""
    file = f"libtomii_{name.replace('-', '_')}.so"
    return _find(file, "TOMII_PLUGIN_PATH", f"kernel plugin {name!r}")


def installed_schedulers() -> dict[str, Path]:
    """Every scheduler found by name, each from the first directory that has it."""
    found: dict[str, Path] = {}
    for directory in _search_path("TOMII_SCHEDULER_PATH"):
        for file in sorted(directory.glob("libtomii_sched_*.so")):
            name = file.name.removeprefix("libtomii_sched_").removesuffix(".so").replace("_", "-")
            found.setdefault(name, file)
    return found
