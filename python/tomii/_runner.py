"""Compatibility surface for Tomii 1.2's scripts, which import `build_command`, `_find_binary` and
`run` from its private module `tomii._runner`: the command line of a run for the same keywords
(this runtime's `tomii run`, which takes 1.2's flags), the installed `tomii` command, and a run
(in this process, as `Graph.run`). The spellings come from the runtime's tables, as
`run_graph`'s do; no flag is named here.
"""

from __future__ import annotations

import shutil
import sys
from pathlib import Path
from typing import Any

from ._builder import BuildError
from ._options import PYTHON_NAMES, catalog_knobs
from .errors import ConfigError
from .graph import Graph
from .run import RunResult, _tomii_1_2

__all__ = ["_find_binary", "build_command", "run"]


def build_command(binary: str, json_path: str, dylib: str, **options: Any) -> list[str]:
    """The argv of `tomii run` for the graph file `json_path`, the kernels of `dylib` and
    `options`: Tomii 1.2's keywords (`max_streams=`, `custom=True`, `record=True`...) as its flags,
    which `tomii run` takes, and the knob catalog's by their flags. An option that is None or False
    is left out, as 1.2 left it out; an unknown keyword raises ConfigError (1.2 dropped it)."""
    argv = [str(binary), "run", "--json", str(json_path), "--dylib", str(dylib)]
    for name, value in options.items():
        argv += _flag(name, value)
    return argv


def _flag(name: str, value: Any) -> list[str]:
    """The command-line words of option `name` given `value`."""
    knobs = {PYTHON_NAMES.get(k["name"], k["name"]): k for k in catalog_knobs()}
    spellings = _tomii_1_2()
    legacy = set(spellings["renamed"]) | set(spellings["own"]) | set(spellings["without_effect"])
    if name in knobs:
        knob = knobs[name]
        if knob["default"] is True:
            return [knob["cli"]] if value is False else []
        if name == "dylibs":
            return [word for path in value for word in ("--dylib", str(path))]
        if name == "sched_opts":
            return [word for k, v in dict(value).items() for word in ("--sched-opt", f"{k}={v}")]
        flag = knob["cli"]
    elif name in legacy - {"json"}:
        flag = "--" + name.replace("_", "-")
    else:
        valid = sorted(set(knobs) | legacy - {"json"})
        raise ConfigError(f"unknown run option {name!r}; valid options: {', '.join(valid)}")
    if value is None or value is False:
        return []
    if value is True:
        return [flag]
    return [flag, str(value)]


def _find_binary(release: bool = True) -> str:
    """The installed `tomii` command (this package's, which takes Tomii 1.2's flags and runs
    Python kernels too); `release` is accepted as 1.2 took it: there is one build of the runtime.
    Raises BuildError when the command is not installed."""
    del release
    beside = Path(sys.executable).with_name("tomii")
    if beside.is_file():
        return str(beside)
    found = shutil.which("tomii")
    if found is not None:
        return found
    raise BuildError(
        f"no `tomii` command beside {sys.executable} or on PATH; install the package "
        "(`pip install .` in the repository) to get it"
    )


def run(
    graph: Graph,
    *,
    dylib: str | Path | None = None,
    binary: str | None = None,
    release: bool = True,
    env: dict[str, str] | None = None,
    **options: Any,
) -> RunResult:
    """Runs `graph` in this process with `options`, as `graph.run(dylib=, env=, **options)` does,
    and returns its RunResult (Tomii 1.2 returned the finished process: the figures are in the
    result here). `binary` has no effect (a warning says so); so has `release=False`."""
    if binary is not None:
        options["binary"] = binary
    if release is not True:
        options["release"] = release
    return graph.run(dylib=dylib, env=env, **options)
