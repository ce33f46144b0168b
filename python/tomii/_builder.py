"""Compatibility surface for Tomii 1.2's scripts, which import `find_workspace_root` and
`BuildError` from its private module `tomii._builder` (to point `CARGO_TARGET_DIR` at a
workspace's `target/`). Plugins are built by `tomii.build`; nothing is built here.
"""

from __future__ import annotations

from pathlib import Path

from .errors import PluginError

__all__ = ["BuildError", "find_workspace_root"]


class BuildError(PluginError):
    """No Cargo workspace where one was looked for (a `tomii.PluginError`)."""


def find_workspace_root() -> Path:
    """The nearest directory holding a Cargo.toml with a `[workspace]` table, above the current
    directory (where a script runs inside its checkout), else above this package (an in-place
    install); raises BuildError when neither has one."""
    starts = [Path.cwd().resolve(), Path(__file__).resolve().parent]
    for start in starts:
        for directory in (start, *start.parents):
            manifest = directory / "Cargo.toml"
            if manifest.is_file() and _is_workspace(manifest):
                return directory
    raise BuildError(
        f"no Cargo workspace (a Cargo.toml with [workspace]) above {starts[0]} or {starts[1]}; "
        "run from inside the workspace, or give the paths to build() yourself"
    )


def _is_workspace(manifest: Path) -> bool:
    try:
        text = manifest.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return False
    return any(line.strip() == "[workspace]" for line in text.splitlines())
