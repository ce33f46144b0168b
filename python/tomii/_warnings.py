"""Warnings that point at the user's line, however deep in the package they are raised."""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

_PACKAGE = str(Path(__file__).resolve().parent)


def user_stacklevel() -> int:
    """The `stacklevel` of the innermost caller outside this package, for `warnings.warn`."""
    level, frame = 1, sys._getframe(1)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE):
        level += 1
        frame = frame.f_back  # type: ignore[assignment]
    return level


class GraphWarning(UserWarning):
    """What a graph file's Tomii 1.2 meaning needed said: one line per node whose meaning the
    current format writes differently (tomii-core/src/graph/README.md, "Warnings")."""


def warn_graph(lines: list[str]) -> None:
    """Raises each of a graph's warnings as a GraphWarning, pointing at the user's line."""
    for line in lines:
        warnings.warn(line, GraphWarning, stacklevel=user_stacklevel())
